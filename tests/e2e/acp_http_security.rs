//! The locked-down `lode acp --http`, end to end: the real binary on 127.0.0.1 with its home,
//! runtime and config directories in temp dirs, probed with real HTTP requests, one table row per
//! case. Every request needs the bearer token (generated when none is given), a browser `Origin`
//! is refused unless allow-listed, and a `Host` other than the bound address is refused (DNS
//! rebinding). Each refused case also shows that nothing happened: no connection id handed out,
//! no session created (an authenticated `session/list` still shows none), the connection a
//! refused DELETE named still alive, and one `refused` line in the server's log.
//!
//! The second test covers the token file: 0600, outside the workspace, reused by the next start,
//! shown only on stderr with `--print-token`, and never on stdout.

use crate::acp_support as support;

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::{Arc, Mutex};

use agent_client_protocol::schema::ProtocolVersion;
use agent_client_protocol::v1::schema::{
    InitializeRequest, ListSessionsRequest, NewSessionRequest,
};
use support::{PATIENCE, Seen, Workspace, authorized_client, with_client};
use tokio::io::{AsyncBufReadExt, AsyncReadExt};

const INITIALIZE: &str =
    r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1}}"#;
const ALLOWED_ORIGIN: &str = "http://allowed.example";

/// Home, runtime and config directories of the spawned lode, all outside the workspace.
struct Dirs {
    home: tempfile::TempDir,
    runtime: tempfile::TempDir,
    config: tempfile::TempDir,
}

impl Dirs {
    fn new() -> Dirs {
        Dirs {
            home: tempfile::tempdir().unwrap(),
            runtime: support::runtime_dir(),
            config: tempfile::tempdir().unwrap(),
        }
    }
}

/// A running `lode acp --http`; killed when dropped.
struct Server {
    child: tokio::process::Child,
    /// `127.0.0.1:PORT`.
    addr: String,
    port: u16,
    stderr: Arc<Mutex<Vec<String>>>,
    stdout: tokio::task::JoinHandle<Vec<u8>>,
}

/// Starts `lode acp --http 127.0.0.1:0 EXTRA` in `workspace`, with `dirs` as its HOME,
/// XDG_CONFIG_HOME and (when `runtime_dir`) XDG_RUNTIME_DIR.
async fn start(workspace: &Workspace, dirs: &Dirs, runtime_dir: bool, extra: &[&str]) -> Server {
    let mut command = tokio::process::Command::new(support::lode());
    command
        .arg("--root")
        .arg(workspace.root())
        .args(["acp", "--no-watch", "--http", "127.0.0.1:0"])
        .args(extra)
        .env(
            "LODE_CONFIG",
            support::workspace_config_env(&workspace.root()),
        )
        .env_remove("LODE_ACP_TOKEN")
        .env("HOME", dirs.home.path())
        .env("XDG_CONFIG_HOME", dirs.config.path())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    if runtime_dir {
        command.env("XDG_RUNTIME_DIR", dirs.runtime.path());
    } else {
        command.env_remove("XDG_RUNTIME_DIR");
    }
    let mut child = command.spawn().unwrap();
    let mut stdout_pipe = child.stdout.take().unwrap();
    let stdout = tokio::spawn(async move {
        let mut bytes = Vec::new();
        let _ = stdout_pipe.read_to_end(&mut bytes).await;
        bytes
    });
    let mut lines = tokio::io::BufReader::new(child.stderr.take().unwrap()).lines();
    let stderr = Arc::new(Mutex::new(Vec::new()));
    let (addr_tx, addr_rx) = tokio::sync::oneshot::channel();
    let collected = stderr.clone();
    tokio::spawn(async move {
        let mut addr_tx = Some(addr_tx);
        while let Ok(Some(line)) = lines.next_line().await {
            eprintln!("[lode acp --http] {line}");
            if let Some(rest) = line.strip_prefix("lode acp: listening on http://")
                && let Some(tx) = addr_tx.take()
            {
                let _ = tx.send(rest.split('/').next().unwrap().to_string());
            }
            collected.lock().unwrap().push(line);
        }
    });
    let addr: String = tokio::time::timeout(PATIENCE, addr_rx)
        .await
        .expect("lode acp --http printed its address in time")
        .expect("lode acp --http exited without printing its address");
    let port = addr.rsplit_once(':').unwrap().1.parse().unwrap();
    Server {
        child,
        addr,
        port,
        stderr,
        stdout,
    }
}

impl Server {
    fn stderr(&self) -> Vec<String> {
        self.stderr.lock().unwrap().clone()
    }

    fn refusals(&self) -> usize {
        self.stderr()
            .iter()
            .filter(|line| line.starts_with("lode acp: refused "))
            .count()
    }

    /// Waits (bounded) until the log holds `count` refusals; returns the last one.
    async fn wait_for_refusals(&self, count: usize) -> String {
        let reached = tokio::time::timeout(PATIENCE, async {
            while self.refusals() < count {
                tokio::time::sleep(std::time::Duration::from_millis(20)).await;
            }
        })
        .await;
        assert!(
            reached.is_ok(),
            "expected {count} refusals in the log; stderr:\n{}",
            self.stderr().join("\n")
        );
        self.stderr()
            .into_iter()
            .rfind(|line| line.starts_with("lode acp: refused "))
            .unwrap_or_default()
    }

    /// Stops the server; returns everything it wrote to stdout.
    async fn stop(mut self) -> Vec<u8> {
        self.child.kill().await.unwrap();
        tokio::time::timeout(PATIENCE, self.stdout)
            .await
            .expect("stdout closed")
            .unwrap()
    }
}

/// The sessions the agent knows, asked over an authenticated WebSocket.
async fn session_count(server: &Server, token: &str) -> usize {
    let client = authorized_client(&format!("ws://{}", server.addr), token);
    with_client(client, "reject_once", Seen::default(), async |cx| {
        cx.send_request(InitializeRequest::new(ProtocolVersion::V1))
            .block_task()
            .await?;
        let listed = cx
            .send_request(ListSessionsRequest::new())
            .block_task()
            .await?;
        Ok(listed.sessions.len())
    })
    .await
}

/// What a case sends.
#[derive(Clone, Copy, Debug)]
enum Kind {
    /// `POST /acp` with `initialize`.
    Initialize,
    /// `POST /acp` with `session/new` on a live connection.
    NewSession,
    /// `GET /acp` for the connection's SSE stream.
    Sse,
    /// `DELETE /acp` of the live connection.
    Delete,
    /// `GET /acp` as a WebSocket upgrade.
    WebSocket,
    /// `GET /health`.
    Health,
    /// A CORS preflight, `OPTIONS /acp`.
    Preflight,
}

struct Case {
    name: &'static str,
    kind: Kind,
    /// Appended to the path (`?token=...`); `{token}` is replaced.
    query: &'static str,
    /// `Authorization` values; `{token}` is the token, `{short}` it less its last character,
    /// `{flipped}` it with its last character changed.
    auth: &'static [&'static str],
    /// `Host` (`{port}` is replaced); `None`: the bound address.
    host: Option<&'static str>,
    /// `Origin` (`{port}` is replaced).
    origin: Option<&'static str>,
    status: u16,
    /// What the body says (refusals) or must hold.
    says: &'static str,
}

const BEARER: &[&str] = &["Bearer {token}"];

const CASES: &[Case] = &[
    // The bearer token.
    Case {
        name: "no token",
        kind: Kind::NewSession,
        query: "",
        auth: &[],
        host: None,
        origin: None,
        status: 401,
        says: "missing or wrong bearer token",
    },
    Case {
        name: "initialize without a token",
        kind: Kind::Initialize,
        query: "",
        auth: &[],
        host: None,
        origin: None,
        status: 401,
        says: "missing or wrong bearer token",
    },
    Case {
        name: "wrong token of the same length",
        kind: Kind::NewSession,
        query: "",
        auth: &["Bearer {flipped}"],
        host: None,
        origin: None,
        status: 401,
        says: "missing or wrong bearer token",
    },
    Case {
        name: "token one character short",
        kind: Kind::NewSession,
        query: "",
        auth: &["Bearer {short}"],
        host: None,
        origin: None,
        status: 401,
        says: "missing or wrong bearer token",
    },
    Case {
        name: "token with one character more",
        kind: Kind::NewSession,
        query: "",
        auth: &["Bearer {token}0"],
        host: None,
        origin: None,
        status: 401,
        says: "missing or wrong bearer token",
    },
    Case {
        name: "token in the query string instead of the header",
        kind: Kind::NewSession,
        query: "?token={token}",
        auth: &[],
        host: None,
        origin: None,
        status: 401,
        says: "missing or wrong bearer token",
    },
    Case {
        name: "token as access_token in the query string",
        kind: Kind::Initialize,
        query: "?access_token={token}",
        auth: &[],
        host: None,
        origin: None,
        status: 401,
        says: "missing or wrong bearer token",
    },
    Case {
        name: "token without the Bearer scheme",
        kind: Kind::NewSession,
        query: "",
        auth: &["{token}"],
        host: None,
        origin: None,
        status: 401,
        says: "missing or wrong bearer token",
    },
    Case {
        name: "token as Basic credentials",
        kind: Kind::NewSession,
        query: "",
        auth: &["Basic {token}"],
        host: None,
        origin: None,
        status: 401,
        says: "missing or wrong bearer token",
    },
    Case {
        name: "a wrong and the right Authorization header",
        kind: Kind::NewSession,
        query: "",
        auth: &["Bearer {flipped}", "Bearer {token}"],
        host: None,
        origin: None,
        status: 401,
        says: "missing or wrong bearer token",
    },
    Case {
        name: "lowercase bearer (the scheme is case-insensitive, RFC 9110 §11.1)",
        kind: Kind::Initialize,
        query: "",
        auth: &["bearer {token}"],
        host: None,
        origin: None,
        status: 200,
        says: "\"protocolVersion\":1",
    },
    // Browser origins.
    Case {
        name: "Origin http://evil.example",
        kind: Kind::NewSession,
        query: "",
        auth: BEARER,
        host: None,
        origin: Some("http://evil.example"),
        status: 403,
        says: "requests from browser origins are refused",
    },
    Case {
        name: "Origin null",
        kind: Kind::NewSession,
        query: "",
        auth: BEARER,
        host: None,
        origin: Some("null"),
        status: 403,
        says: "requests from browser origins are refused",
    },
    Case {
        name: "Origin http://127.0.0.1:PORT (lode's own address, not listed)",
        kind: Kind::NewSession,
        query: "",
        auth: BEARER,
        host: None,
        origin: Some("http://127.0.0.1:{port}"),
        status: 403,
        says: "requests from browser origins are refused",
    },
    Case {
        name: "Origin http://localhost:PORT (not listed)",
        kind: Kind::Initialize,
        query: "",
        auth: BEARER,
        host: None,
        origin: Some("http://localhost:{port}"),
        status: 403,
        says: "requests from browser origins are refused",
    },
    Case {
        name: "allow-listed Origin with the token",
        kind: Kind::Initialize,
        query: "",
        auth: BEARER,
        host: None,
        origin: Some(ALLOWED_ORIGIN),
        status: 200,
        says: "\"protocolVersion\":1",
    },
    Case {
        name: "allow-listed Origin without the token",
        kind: Kind::NewSession,
        query: "",
        auth: &[],
        host: None,
        origin: Some(ALLOWED_ORIGIN),
        status: 401,
        says: "missing or wrong bearer token",
    },
    Case {
        name: "CORS preflight from the allow-listed Origin",
        kind: Kind::Preflight,
        query: "",
        auth: &[],
        host: None,
        origin: Some(ALLOWED_ORIGIN),
        status: 204,
        says: "",
    },
    Case {
        name: "CORS preflight from http://evil.example",
        kind: Kind::Preflight,
        query: "",
        auth: &[],
        host: None,
        origin: Some("http://evil.example"),
        status: 403,
        says: "requests from browser origins are refused",
    },
    // Host (DNS rebinding).
    Case {
        name: "Host evil.example",
        kind: Kind::NewSession,
        query: "",
        auth: BEARER,
        host: Some("evil.example"),
        origin: None,
        status: 421,
        says: "unexpected Host header \"evil.example\"",
    },
    Case {
        name: "Host evil.example:PORT",
        kind: Kind::Initialize,
        query: "",
        auth: BEARER,
        host: Some("evil.example:{port}"),
        origin: None,
        status: 421,
        says: "(DNS rebinding protection",
    },
    Case {
        name: "Host 127.0.0.1.nip.io:PORT",
        kind: Kind::NewSession,
        query: "",
        auth: BEARER,
        host: Some("127.0.0.1.nip.io:{port}"),
        origin: None,
        status: 421,
        says: "(DNS rebinding protection",
    },
    Case {
        name: "Host 127.0.0.1 with another port",
        kind: Kind::NewSession,
        query: "",
        auth: BEARER,
        host: Some("127.0.0.1:1"),
        origin: None,
        status: 421,
        says: "unexpected Host header \"127.0.0.1:1\"",
    },
    Case {
        name: "Host localhost without the port",
        kind: Kind::Initialize,
        query: "",
        auth: BEARER,
        host: Some("localhost"),
        origin: None,
        status: 421,
        says: "(DNS rebinding protection",
    },
    Case {
        name: "Host localhost:PORT",
        kind: Kind::Initialize,
        query: "",
        auth: BEARER,
        host: Some("localhost:{port}"),
        origin: None,
        status: 200,
        says: "\"protocolVersion\":1",
    },
    Case {
        name: "Host [::1]:PORT",
        kind: Kind::Initialize,
        query: "",
        auth: BEARER,
        host: Some("[::1]:{port}"),
        origin: None,
        status: 200,
        says: "\"protocolVersion\":1",
    },
    // WebSocket upgrades.
    Case {
        name: "WebSocket upgrade without a token",
        kind: Kind::WebSocket,
        query: "",
        auth: &[],
        host: None,
        origin: None,
        status: 401,
        says: "missing or wrong bearer token",
    },
    Case {
        name: "WebSocket upgrade with the token in the query string",
        kind: Kind::WebSocket,
        query: "?token={token}",
        auth: &[],
        host: None,
        origin: None,
        status: 401,
        says: "missing or wrong bearer token",
    },
    Case {
        name: "WebSocket upgrade from a browser Origin",
        kind: Kind::WebSocket,
        query: "",
        auth: BEARER,
        host: None,
        origin: Some("http://evil.example"),
        status: 403,
        says: "requests from browser origins are refused",
    },
    Case {
        name: "WebSocket upgrade with a bad Host",
        kind: Kind::WebSocket,
        query: "",
        auth: BEARER,
        host: Some("evil.example"),
        origin: None,
        status: 421,
        says: "(DNS rebinding protection",
    },
    Case {
        name: "WebSocket upgrade with the token",
        kind: Kind::WebSocket,
        query: "",
        auth: BEARER,
        host: None,
        origin: None,
        status: 101,
        says: "",
    },
    // SSE and DELETE.
    Case {
        name: "SSE GET without a token",
        kind: Kind::Sse,
        query: "",
        auth: &[],
        host: None,
        origin: None,
        status: 401,
        says: "missing or wrong bearer token",
    },
    Case {
        name: "SSE GET from a browser Origin",
        kind: Kind::Sse,
        query: "",
        auth: BEARER,
        host: None,
        origin: Some("http://evil.example"),
        status: 403,
        says: "requests from browser origins are refused",
    },
    Case {
        name: "DELETE without a token",
        kind: Kind::Delete,
        query: "",
        auth: &[],
        host: None,
        origin: None,
        status: 401,
        says: "missing or wrong bearer token",
    },
    Case {
        name: "DELETE with a bad Host",
        kind: Kind::Delete,
        query: "",
        auth: BEARER,
        host: Some("evil.example"),
        origin: None,
        status: 421,
        says: "(DNS rebinding protection",
    },
    // /health: no token, but the same Host and Origin checks.
    Case {
        name: "/health without a token",
        kind: Kind::Health,
        query: "",
        auth: &[],
        host: None,
        origin: None,
        status: 200,
        says: "ok",
    },
    Case {
        name: "/health with a bad Host",
        kind: Kind::Health,
        query: "",
        auth: &[],
        host: Some("evil.example"),
        origin: None,
        status: 421,
        says: "(DNS rebinding protection",
    },
    Case {
        name: "/health from a browser Origin",
        kind: Kind::Health,
        query: "",
        auth: &[],
        host: None,
        origin: Some("http://evil.example"),
        status: 403,
        says: "requests from browser origins are refused",
    },
    // The happy path.
    Case {
        name: "initialize with the token",
        kind: Kind::Initialize,
        query: "",
        auth: BEARER,
        host: None,
        origin: None,
        status: 200,
        says: "\"protocolVersion\":1",
    },
];

/// `initialize` with the token; the connection id it hands out.
async fn connect(http: &reqwest::Client, server: &Server, token: &str) -> String {
    let response = http
        .post(format!("http://{}/acp", server.addr))
        .bearer_auth(token)
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .body(INITIALIZE)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    response.headers()["acp-connection-id"]
        .to_str()
        .unwrap()
        .to_string()
}

/// Whether the connection still exists: an authenticated POST on it is accepted (202), not 404.
async fn connection_alive(
    http: &reqwest::Client,
    server: &Server,
    token: &str,
    connection: &str,
) -> bool {
    let response = http
        .post(format!("http://{}/acp", server.addr))
        .bearer_auth(token)
        .header("content-type", "application/json")
        .header("acp-connection-id", connection)
        .body(r#"{"jsonrpc":"2.0","id":90,"method":"session/list","params":{}}"#)
        .send()
        .await
        .unwrap();
    match response.status().as_u16() {
        202 => true,
        404 => false,
        other => panic!("unexpected {other} probing connection {connection}"),
    }
}

fn fill(template: &str, token: &str, port: u16) -> String {
    let short = &token[..token.len() - 1];
    let last = if token.ends_with('0') { "1" } else { "0" };
    let flipped = format!("{short}{last}");
    template
        .replace("{token}", token)
        .replace("{short}", short)
        .replace("{flipped}", &flipped)
        .replace("{port}", &port.to_string())
}

fn request(
    http: &reqwest::Client,
    case: &Case,
    server: &Server,
    token: &str,
    connection: &str,
    workspace: &Path,
) -> reqwest::RequestBuilder {
    let fill = |template: &str| fill(template, token, server.port);
    let path = match case.kind {
        Kind::Health => "/health".to_string(),
        _ => format!("/acp{}", fill(case.query)),
    };
    let url = format!("http://{}{path}", server.addr);
    let new_session = serde_json::json!({
        "jsonrpc": "2.0", "id": 2, "method": "session/new",
        "params": {"cwd": workspace, "mcpServers": []}
    })
    .to_string();
    let mut builder = match case.kind {
        Kind::Initialize => http
            .post(&url)
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .body(INITIALIZE),
        Kind::NewSession => http
            .post(&url)
            .header("content-type", "application/json")
            .header("acp-connection-id", connection)
            .body(new_session),
        Kind::Sse => http
            .get(&url)
            .header("accept", "text/event-stream")
            .header("acp-connection-id", connection),
        Kind::Delete => http.delete(&url).header("acp-connection-id", connection),
        Kind::WebSocket => http
            .get(&url)
            .header("connection", "upgrade")
            .header("upgrade", "websocket")
            .header("sec-websocket-version", "13")
            .header("sec-websocket-key", "dGhlIHNhbXBsZSBub25jZQ=="),
        Kind::Health => http.get(&url),
        Kind::Preflight => http
            .request(reqwest::Method::OPTIONS, &url)
            .header("access-control-request-method", "POST")
            .header(
                "access-control-request-headers",
                "authorization, content-type",
            ),
    };
    for value in case.auth {
        builder = builder.header("authorization", fill(value));
    }
    if let Some(host) = case.host {
        builder = builder.header("host", fill(host));
    }
    if let Some(origin) = case.origin {
        builder = builder.header("origin", fill(origin));
    }
    builder
}

#[tokio::test]
async fn every_request_needs_the_token_a_local_origin_and_the_bound_host() {
    let workspace = Workspace::new("hello.json");
    let dirs = Dirs::new();
    let server = start(&workspace, &dirs, true, &["--allow-origin", ALLOWED_ORIGIN]).await;
    let token = support::generated_token(dirs.runtime.path());
    let http = reqwest::Client::new();
    let root = workspace.root();
    // One live connection, for the cases that act on one.
    let connection = connect(&http, &server, &token).await;

    let mut refused = 0;
    let mut table = Vec::new();
    for case in CASES {
        let response = request(&http, case, &server, &token, &connection, &root)
            .send()
            .await
            .unwrap_or_else(|error| panic!("{}: {error}", case.name));
        let status = response.status().as_u16();
        let headers = response.headers().clone();
        // A 101 leaves the socket open; there is no body to read.
        let body = if status == 101 {
            String::new()
        } else {
            response.text().await.unwrap()
        };
        table.push(format!("{} -> {status}", case.name));
        assert_eq!(status, case.status, "{}: {body}", case.name);
        assert!(body.contains(case.says), "{}: {body}", case.name);

        let accepted = status < 400;
        if accepted {
            if matches!(case.kind, Kind::Initialize) {
                assert!(
                    headers.contains_key("acp-connection-id"),
                    "{}: no Acp-Connection-Id",
                    case.name
                );
            }
            if case.origin == Some(ALLOWED_ORIGIN) {
                assert_eq!(
                    headers["access-control-allow-origin"], ALLOWED_ORIGIN,
                    "{}",
                    case.name
                );
            }
            if matches!(case.kind, Kind::Preflight) {
                let allowed = headers["access-control-allow-headers"].to_str().unwrap();
                assert!(allowed.contains("authorization"), "{allowed}");
            }
        } else {
            refused += 1;
            // Nothing happened: no connection handed out, no CORS grant, one line in the log
            // naming the reason, no session, and the connection a DELETE named still there.
            assert!(
                !headers.contains_key("acp-connection-id"),
                "{}: a refused request got a connection",
                case.name
            );
            assert!(
                !headers.contains_key("access-control-allow-origin")
                    || case.origin == Some(ALLOWED_ORIGIN),
                "{}",
                case.name
            );
            let logged = server.wait_for_refusals(refused).await;
            assert!(
                logged.contains(case.says) && !logged.contains(&token),
                "{}: logged {logged:?}",
                case.name
            );
            assert_eq!(
                session_count(&server, &token).await,
                0,
                "{}: a session was created",
                case.name
            );
            assert!(
                connection_alive(&http, &server, &token, &connection).await,
                "{}: the connection is gone",
                case.name
            );
        }
    }
    eprintln!("cases:\n{}", table.join("\n"));
    assert!(CASES.len() >= 25, "{} cases", CASES.len());
    assert_eq!(server.refusals(), refused, "only refused cases are logged");

    // The control: the same check sees a session once an authenticated client makes one, and
    // an authenticated DELETE does end a connection.
    let client = authorized_client(&format!("ws://{}", server.addr), &token);
    with_client(client, "reject_once", Seen::default(), async |cx| {
        cx.send_request(InitializeRequest::new(ProtocolVersion::V1))
            .block_task()
            .await?;
        cx.send_request(NewSessionRequest::new(root.clone()))
            .block_task()
            .await?;
        Ok(())
    })
    .await;
    assert_eq!(session_count(&server, &token).await, 1);
    let deleted = http
        .delete(format!("http://{}/acp", server.addr))
        .bearer_auth(&token)
        .header("acp-connection-id", &connection)
        .send()
        .await
        .unwrap();
    assert_eq!(deleted.status(), 202);
    assert!(!connection_alive(&http, &server, &token, &connection).await);
    assert!(server.stop().await.is_empty(), "nothing on stdout");
}

fn mode(path: &Path) -> u32 {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(path).unwrap().permissions().mode() & 0o777
}

async fn initialize_status(server: &Server, token: &str) -> u16 {
    reqwest::Client::new()
        .post(format!("http://{}/acp", server.addr))
        .bearer_auth(token)
        .header("content-type", "application/json")
        .body(INITIALIZE)
        .send()
        .await
        .unwrap()
        .status()
        .as_u16()
}

#[tokio::test]
async fn the_generated_token_is_private_kept_outside_the_workspace_and_reused() {
    let workspace = Workspace::new("hello.json");
    let dirs = Dirs::new();
    let file: PathBuf = dirs.runtime.path().join("lode/acp-token");

    // First start: the token is made, kept 0600 in $XDG_RUNTIME_DIR/lode, and not shown.
    let first = start(&workspace, &dirs, true, &[]).await;
    let token = support::generated_token(dirs.runtime.path());
    assert_eq!(token.len(), 64, "{token}");
    assert!(token.bytes().all(|b| b.is_ascii_hexdigit()), "{token}");
    assert_eq!(mode(&file), 0o600);
    assert_eq!(mode(file.parent().unwrap()), 0o700);
    assert!(!file.starts_with(workspace.root()));
    assert!(!file.starts_with(workspace.dir.path()));
    let stderr = first.stderr().join("\n");
    assert!(!stderr.contains(&token), "{stderr}");
    assert!(
        stderr.contains(&format!("bearer token saved in {}", file.display())),
        "{stderr}"
    );
    assert_eq!(initialize_status(&first, &token).await, 200);
    assert_eq!(initialize_status(&first, "not-it").await, 401);
    assert!(first.stop().await.is_empty(), "nothing on stdout");

    // Second start, with --print-token: the same token, on stderr and nowhere else.
    let second = start(&workspace, &dirs, true, &["--print-token"]).await;
    assert_eq!(support::generated_token(dirs.runtime.path()), token);
    let stderr = second.stderr();
    assert!(
        stderr
            .iter()
            .any(|line| line == &format!("lode acp: bearer token: {token}")),
        "{stderr:?}"
    );
    assert!(
        stderr
            .iter()
            .any(|line| line.contains(&format!("bearer token read from {}", file.display()))),
        "{stderr:?}"
    );
    assert_eq!(
        stderr.iter().filter(|line| line.contains(&token)).count(),
        1,
        "printed once: {stderr:?}"
    );
    assert_eq!(initialize_status(&second, &token).await, 200);
    assert!(second.stop().await.is_empty(), "nothing on stdout");
    assert_eq!(mode(&file), 0o600);

    // Without a runtime directory: the user config directory, again 0600.
    let third = start(&workspace, &dirs, false, &[]).await;
    let fallback = dirs.config.path().join("lode/acp-token");
    assert_eq!(mode(&fallback), 0o600);
    let other = std::fs::read_to_string(&fallback)
        .unwrap()
        .trim()
        .to_string();
    assert_ne!(other, token);
    assert_eq!(initialize_status(&third, &other).await, 200);
    assert_eq!(initialize_status(&third, &token).await, 401);
    drop(third);

    // A config directory inside the workspace is refused rather than hold the token there.
    let output = tokio::process::Command::new(support::lode())
        .arg("--root")
        .arg(workspace.root())
        .args(["acp", "--no-watch", "--http", "127.0.0.1:0"])
        .env(
            "LODE_CONFIG",
            support::workspace_config_env(&workspace.root()),
        )
        .env_remove("LODE_ACP_TOKEN")
        .env_remove("XDG_RUNTIME_DIR")
        .env("HOME", dirs.home.path())
        .env("XDG_CONFIG_HOME", workspace.root().join(".config"))
        .output()
        .await
        .unwrap();
    assert!(!output.status.success(), "{}", support::explain(&output));
    assert!(
        String::from_utf8_lossy(&output.stderr).contains("inside the workspace"),
        "{}",
        support::explain(&output)
    );
    assert!(output.stdout.is_empty());
    assert!(!workspace.root().join(".config/lode/acp-token").exists());

    // A token file others can read is refused, with the fix.
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o644)).unwrap();
    }
    let output = tokio::process::Command::new(support::lode())
        .arg("--root")
        .arg(workspace.root())
        .args(["acp", "--no-watch", "--http", "127.0.0.1:0"])
        .env(
            "LODE_CONFIG",
            support::workspace_config_env(&workspace.root()),
        )
        .env_remove("LODE_ACP_TOKEN")
        .env("XDG_RUNTIME_DIR", dirs.runtime.path())
        .env("HOME", dirs.home.path())
        .env("XDG_CONFIG_HOME", dirs.config.path())
        .output()
        .await
        .unwrap();
    assert!(!output.status.success(), "{}", support::explain(&output));
    assert!(
        String::from_utf8_lossy(&output.stderr).contains("chmod 600"),
        "{}",
        support::explain(&output)
    );
    assert!(!String::from_utf8_lossy(&output.stderr).contains(&token));
}
