//! Shared parts of the ACP end-to-end tests: a workspace whose only model is the scripted LLM
//! server (`lode llm-script`), the real `lode acp` as a child process, and an ACP client built
//! with the `agent-client-protocol` SDK that records every update and answers permission
//! questions as told.

#![allow(dead_code)]

use std::io::BufRead;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use agent_client_protocol::v1::schema::{
    RequestPermissionOutcome, RequestPermissionRequest, RequestPermissionResponse,
    SelectedPermissionOutcome, SessionNotification, SessionUpdate,
};
use agent_client_protocol::v1::{ConnectionTo, Responder};
use agent_client_protocol::{Agent, ByteStreams, Client, ConnectTo};
use tokio_util::compat::{TokioAsyncReadCompatExt, TokioAsyncWriteCompatExt};

/// Safety net against hangs only; no test asserts on time.
pub const PATIENCE: Duration = Duration::from_secs(60);

pub fn lode() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_lode"))
}

/// The binary `lode` runs for everything but served queries: the one that names itself as
/// the sandbox launcher.
pub fn lode_full() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_lode-full"))
}

pub fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// A finished client process, for failure messages: its exit status, stdout and stderr.
pub fn explain(output: &std::process::Output) -> String {
    format!(
        "exit {:?}\nstdout:\n{}\nstderr:\n{}",
        output.status.code(),
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    )
}

/// `lode acp` on the raw wire: hand-written JSON-RPC lines in, and every line it writes checked
/// to be one JSON-RPC message.
pub struct Wire {
    pub child: tokio::process::Child,
    pub stdin: tokio::process::ChildStdin,
    lines: tokio::io::Lines<tokio::io::BufReader<tokio::process::ChildStdout>>,
}

impl Wire {
    /// `lode acp` on stdio in `workspace`.
    pub fn start(workspace: &Workspace) -> Wire {
        Wire::new(workspace.spawn_acp(&[]))
    }

    /// A `lode acp` child started with piped stdin and stdout.
    pub fn new(mut child: tokio::process::Child) -> Wire {
        use tokio::io::AsyncBufReadExt;
        let stdin = child.stdin.take().expect("piped stdin");
        let lines = tokio::io::BufReader::new(child.stdout.take().expect("piped stdout")).lines();
        Wire {
            child,
            stdin,
            lines,
        }
    }

    pub async fn send_raw(&mut self, line: &str) {
        use tokio::io::AsyncWriteExt;
        self.stdin.write_all(line.as_bytes()).await.unwrap();
        self.stdin.write_all(b"\n").await.unwrap();
        self.stdin.flush().await.unwrap();
    }

    /// The next line lode writes; every line must be one JSON-RPC message.
    pub async fn next(&mut self) -> serde_json::Value {
        let line = tokio::time::timeout(PATIENCE, self.lines.next_line())
            .await
            .expect("lode answered in time")
            .unwrap()
            .expect("lode still running");
        let message: serde_json::Value = serde_json::from_str(&line)
            .unwrap_or_else(|e| panic!("stdout carried non-JSON {line:?}: {e}"));
        assert_eq!(message["jsonrpc"], "2.0", "{line}");
        message
    }

    /// `initialize` with no client capabilities, checked to be answered with protocol 1.
    pub async fn initialize(&mut self, id: u64) -> serde_json::Value {
        let init = self
            .request(
                id,
                "initialize",
                serde_json::json!({"protocolVersion": 1, "clientCapabilities": {}}),
            )
            .await;
        assert_eq!(init["result"]["protocolVersion"], 1, "{init}");
        init
    }

    /// Sends a request and returns its response, skipping what comes before it.
    pub async fn request(
        &mut self,
        id: u64,
        method: &str,
        params: serde_json::Value,
    ) -> serde_json::Value {
        let request =
            serde_json::json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        self.send_raw(&request.to_string()).await;
        loop {
            let message = self.next().await;
            if message.get("method").is_none() && message["id"] == serde_json::json!(id) {
                return message;
            }
        }
    }
}

/// A scripted LLM server; killed when dropped.
pub struct LlmServer {
    child: std::process::Child,
    pub base_url: String,
}

impl Drop for LlmServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

pub fn llm_server(script: &str) -> LlmServer {
    let script = repo_root().join("fixtures/llm").join(script);
    let mut child = std::process::Command::new(lode())
        .args(["llm-script", "--script"])
        .arg(&script)
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("lode llm-script starts");
    let stdout = child.stdout.take().expect("piped stdout");
    let mut first = String::new();
    std::io::BufReader::new(stdout)
        .read_line(&mut first)
        .expect("lode llm-script prints its address");
    let url = first
        .trim()
        .strip_prefix("listening on ")
        .unwrap_or_else(|| panic!("unexpected first line from llm-script: {first:?}"))
        .to_string();
    LlmServer {
        child,
        base_url: format!("{url}/v1"),
    }
}

/// A workspace with a tiny Rust program and a config whose one provider is the scripted server.
pub struct Workspace {
    pub dir: tempfile::TempDir,
    pub llm: LlmServer,
}

impl Workspace {
    pub fn new(script: &str) -> Workspace {
        let llm = llm_server(script);
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        std::fs::create_dir_all(root.join(".git")).unwrap();
        std::fs::create_dir_all(root.join("src")).unwrap();
        std::fs::write(
            root.join("src/main.rs"),
            "fn main() {\n    println!(\"hello\");\n}\n",
        )
        .unwrap();
        std::fs::create_dir_all(root.join(".lode")).unwrap();
        std::fs::write(
            root.join(".lode/config.toml"),
            format!(
                "[[llm.providers]]\nname = \"scripted\"\nkind = \"openai\"\nbase_url = \"{}\"\nmodel = \"scripted-1\"\ncontext_window = 32000\n\n[[llm.providers]]\nname = \"backup\"\nkind = \"openai\"\nbase_url = \"{}\"\nmodel = \"scripted-2\"\n",
                llm.base_url, llm.base_url
            ),
        )
        .unwrap();
        Workspace { dir, llm }
    }

    pub fn root(&self) -> PathBuf {
        std::fs::canonicalize(self.dir.path()).unwrap()
    }

    /// `lode acp` on stdio, its config the workspace's (see [`workspace_config_env`]).
    pub fn spawn_acp(&self, extra: &[&str]) -> tokio::process::Child {
        acp_command(&self.root(), workspace_config_env(&self.root()))
            .args(extra)
            .spawn()
            .expect("lode acp starts")
    }
}

/// `lode acp` on stdio in `root`, with `config` as `$LODE_CONFIG` (empty: none) and no user
/// config, ready for more arguments and variables before it is spawned.
pub fn acp_command(root: &Path, config: std::ffi::OsString) -> tokio::process::Command {
    let mut command = tokio::process::Command::new(lode());
    command
        .arg("--root")
        .arg(root)
        .arg("acp")
        .env("LODE_CONFIG", config)
        .env("XDG_CONFIG_HOME", root.join(".no-user-config"))
        // No provider from the test machine's environment (zero-config models).
        .env_remove("ANTHROPIC_API_KEY")
        .env_remove("OPENAI_API_KEY")
        .env_remove("OPENROUTER_API_KEY")
        .env("OLLAMA_HOST", "127.0.0.1:9")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .kill_on_drop(true);
    command
}

/// A running `lode acp --http`: its address, its bearer token and what it has written to stderr
/// so far (read by a background task, so the pipe never fills); killed when dropped.
pub struct HttpServer {
    pub child: tokio::process::Child,
    /// `host:port`.
    pub addr: String,
    /// The token clients must send: the `--token` given, else the one lode generated.
    pub token: String,
    /// The server's `$XDG_RUNTIME_DIR`, where a generated token is kept (`lode/acp-token`).
    pub runtime_dir: tempfile::TempDir,
    pub stderr: Arc<Mutex<Vec<String>>>,
}

/// A fresh directory to serve as `$XDG_RUNTIME_DIR` (mode 0700, like the real one).
pub fn runtime_dir() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o700)).unwrap();
    }
    dir
}

/// The token `lode acp --http` generated and keeps under `runtime_dir`.
pub fn generated_token(runtime_dir: &Path) -> String {
    std::fs::read_to_string(runtime_dir.join("lode/acp-token"))
        .expect("lode acp --http wrote its token file")
        .trim()
        .to_string()
}

/// An SDK client of `url` (`http://` or `ws://`) that sends `Authorization: Bearer TOKEN`.
pub fn authorized_client(url: &str, token: &str) -> agent_client_protocol_http::HttpClient {
    let value = reqwest::header::HeaderValue::from_str(&format!("Bearer {token}")).unwrap();
    agent_client_protocol_http::HttpClient::builder(url)
        .configure_http(move |http| {
            let mut headers = reqwest::header::HeaderMap::new();
            headers.insert(reqwest::header::AUTHORIZATION, value);
            http.default_headers(headers)
        })
        .build()
        .unwrap()
}

impl HttpServer {
    /// Waits (bounded) until a stderr line satisfies `wanted`, and returns it.
    pub async fn wait_for_stderr(&self, what: &str, wanted: impl Fn(&str) -> bool) -> String {
        let found = tokio::time::timeout(PATIENCE, async {
            loop {
                if let Some(line) = self.stderr.lock().unwrap().iter().find(|l| wanted(l)) {
                    return line.clone();
                }
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
        })
        .await;
        found.unwrap_or_else(|_| {
            panic!(
                "lode acp --http never printed {what}; stderr:\n{}",
                self.stderr.lock().unwrap().join("\n")
            )
        })
    }
}

impl Workspace {
    /// Starts `lode acp --http` (plus `extra` arguments) on a free loopback port, with its own
    /// `$XDG_RUNTIME_DIR` (where it keeps the token it generates without `--token`).
    pub async fn serve_http(&self, extra: &[&str]) -> HttpServer {
        use tokio::io::AsyncBufReadExt;
        let runtime_dir = runtime_dir();
        let mut child = tokio::process::Command::new(lode())
            .arg("--root")
            .arg(self.root())
            .args(["acp", "--http"])
            .args(extra)
            .env("LODE_CONFIG", workspace_config_env(&self.root()))
            .env_remove("LODE_ACP_TOKEN")
            .env("XDG_CONFIG_HOME", self.root().join(".no-user-config"))
            .env("XDG_RUNTIME_DIR", runtime_dir.path())
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .unwrap();
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
        let addr = tokio::time::timeout(PATIENCE, addr_rx)
            .await
            .expect("lode acp --http printed its address in time")
            .expect("lode acp --http exited without printing its address");
        let token = match extra.iter().position(|arg| *arg == "--token") {
            Some(at) => extra[at + 1].to_string(),
            None => generated_token(runtime_dir.path()),
        };
        HttpServer {
            child,
            addr,
            token,
            runtime_dir,
            stderr,
        }
    }
}

/// The stdio of a `lode acp` child as an ACP transport.
pub fn stdio_transport(child: &mut tokio::process::Child) -> impl ConnectTo<Client> + 'static {
    let stdin = child.stdin.take().expect("piped stdin");
    let stdout = child.stdout.take().expect("piped stdout");
    ByteStreams::new(stdin.compat_write(), stdout.compat())
}

/// What the client saw: every `session/update` and every permission question.
#[derive(Clone, Default)]
pub struct Seen {
    updates: Arc<Mutex<Vec<SessionNotification>>>,
    questions: Arc<Mutex<Vec<RequestPermissionRequest>>>,
    changed: Arc<tokio::sync::Notify>,
}

/// Whether `update` belongs to the card of an index build (`lode-indexing-…`). It is shown only
/// when the build outlasts a moment, which for these tests' tiny workspaces depends on how busy
/// the machine is; `tests/e2e/acp_first_prompt.rs` tests it.
pub fn is_index_card(update: &SessionUpdate) -> bool {
    let id = match update {
        SessionUpdate::ToolCall(call) => &call.tool_call_id,
        SessionUpdate::ToolCallUpdate(update) => &update.tool_call_id,
        _ => return false,
    };
    id.0.starts_with("lode-indexing-")
}

impl Seen {
    /// Every update but the index build's card ([`is_index_card`]), in order.
    pub fn updates(&self) -> Vec<SessionUpdate> {
        self.updates
            .lock()
            .unwrap()
            .iter()
            .map(|n| n.update.clone())
            .filter(|update| !is_index_card(update))
            .collect()
    }

    /// The updates of one session, in order (without the index build's card).
    pub fn updates_of(&self, session_id: &str) -> Vec<SessionUpdate> {
        self.updates
            .lock()
            .unwrap()
            .iter()
            .filter(|n| &*n.session_id.0 == session_id)
            .map(|n| n.update.clone())
            .filter(|update| !is_index_card(update))
            .collect()
    }

    pub fn questions(&self) -> Vec<RequestPermissionRequest> {
        self.questions.lock().unwrap().clone()
    }

    pub fn clear(&self) {
        self.updates.lock().unwrap().clear();
    }

    /// Waits until an update satisfies `wanted`.
    pub async fn wait_for(&self, what: &str, wanted: impl Fn(&SessionUpdate) -> bool) {
        let found = tokio::time::timeout(PATIENCE, async {
            loop {
                let notified = self.changed.notified();
                if self.updates().iter().any(&wanted) {
                    return;
                }
                notified.await;
            }
        })
        .await;
        assert!(found.is_ok(), "never saw {what}; saw {:?}", self.updates());
    }
}

/// The kind names (`agent_message_chunk`, `tool_call`, ...) of updates, in order.
pub fn kinds(updates: &[SessionUpdate]) -> Vec<String> {
    updates
        .iter()
        .map(|update| {
            serde_json::to_value(update).unwrap()["sessionUpdate"]
                .as_str()
                .unwrap()
                .to_string()
        })
        .collect()
}

/// The text of the agent's message chunks, joined.
pub fn agent_text(updates: &[SessionUpdate]) -> String {
    updates
        .iter()
        .filter_map(|update| match update {
            SessionUpdate::AgentMessageChunk(chunk) => serde_json::to_value(&chunk.content)
                .unwrap()["text"]
                .as_str()
                .map(str::to_string),
            _ => None,
        })
        .collect()
}

/// Runs `body` as an ACP client over `transport`, answering every permission question with the
/// option `answer` (`allow_once`, `reject_once`, ...).
pub async fn with_client<R: Send + 'static>(
    transport: impl ConnectTo<Client> + 'static,
    answer: &'static str,
    seen: Seen,
    body: impl AsyncFnOnce(ConnectionTo<Agent>) -> Result<R, agent_client_protocol::Error> + Send,
) -> R {
    let on_update = seen.clone();
    let on_question = seen.clone();
    let run = Client
        .v1()
        .name("lode-e2e")
        .on_receive_notification(
            async move |notification: SessionNotification, _cx| {
                on_update.updates.lock().unwrap().push(notification);
                on_update.changed.notify_waiters();
                Ok(())
            },
            agent_client_protocol::on_receive_notification!(),
        )
        .on_receive_request(
            async move |question: RequestPermissionRequest,
                        responder: Responder<RequestPermissionResponse>,
                        _cx| {
                on_question.questions.lock().unwrap().push(question);
                responder.respond(RequestPermissionResponse::new(
                    RequestPermissionOutcome::Selected(SelectedPermissionOutcome::new(answer)),
                ))
            },
            agent_client_protocol::on_receive_request!(),
        )
        .connect_with(transport, body);
    tokio::time::timeout(PATIENCE, run)
        .await
        .expect("the ACP exchange finished in time")
        .expect("the ACP exchange succeeded")
}

/// `$LODE_CONFIG` for a test workspace: its `.lode/config.toml` when there is one (the tests'
/// scripted providers live there), else empty, which lode treats as unset. lode applies a
/// workspace's own file in full only once the user trusts it (`lode trust`; covered by
/// `tests/e2e/workspace_trust.rs`); a file the user names in `$LODE_CONFIG` is theirs, so it applies.
pub fn workspace_config_env(root: &std::path::Path) -> std::ffi::OsString {
    let file = root.join(".lode/config.toml");
    if file.exists() {
        file.into_os_string()
    } else {
        std::ffi::OsString::new()
    }
}
