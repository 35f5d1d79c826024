//! lode's MCP client against the reference MCP servers from npm
//! (`@modelcontextprotocol/server-everything` and `server-filesystem`, installed by
//! `scripts/install-test-tools.sh` into target/test-tools/mcp-servers), driven through a real
//! `Agent` by the scripted LLM server (`fixtures/llm/mcp_reference.json`): the remote tools are
//! offered under `mcp__<server>__<tool>`, the permission policy asks before each call (and a
//! declined call does not reach the server), output is capped and marked untrusted, and the
//! same works over streamable HTTP. One server comes from `[[mcp.servers]]` in the config, the
//! other as an ACP client would pass it in `session/new`.
//! Without the servers (or Node) the tests say so and pass, except under CI, where they fail.

use crate::common;

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use lode_agent::event::{AgentEvent, StopReason};
use lode_agent::host::{PermissionAnswer, PermissionRequest, SessionHost};
use lode_agent::mcp::McpServerConfig;
use lode_agent::{Agent, UserInput};
use lode_llm_script::{RecordedRequest, Script, ScriptedServer, ScriptedServerHandle};
use serde_json::Value;
use tokio_util::sync::CancellationToken;

fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// Node (acpx's Node 22 when installed, else the one on PATH) and the servers' directory.
fn reference_servers() -> Option<(PathBuf, PathBuf)> {
    let tools = std::env::var_os("LODE_TEST_TOOLS")
        .map(PathBuf::from)
        .unwrap_or_else(|| repo_root().join("target/test-tools"));
    let servers = tools.join("mcp-servers/node_modules/@modelcontextprotocol");
    let node22 = tools.join("acpx/node_modules/.bin/node");
    let node = if node22.exists() {
        Some(node22)
    } else {
        std::env::var_os("PATH").and_then(|path| {
            std::env::split_paths(&path)
                .map(|dir| dir.join("node"))
                .find(|candidate| candidate.exists())
        })
    };
    match node {
        Some(node) if servers.join("server-everything/dist/index.js").exists() => {
            Some((node, servers))
        }
        _ => {
            assert!(
                std::env::var_os("CI").is_none(),
                "the MCP reference servers or Node are missing under {}; run scripts/install-test-tools.sh",
                tools.display()
            );
            eprintln!(
                "skipping: the MCP reference servers are not installed (run scripts/install-test-tools.sh)"
            );
            None
        }
    }
}

/// A workspace whose config names the scripted LLM and, when given, extra config text.
fn workspace(server: &ScriptedServerHandle, extra_config: &str) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join(".lode")).unwrap();
    std::fs::write(
        dir.path().join(".lode/config.toml"),
        format!(
            r#"[[llm.providers]]
name = "scripted"
kind = "openai"
base_url = "{}"
model = "scripted-model"
context_window = 64000
max_tokens = 2000

[memory]
path = "{}"

{extra_config}
"#,
            server.openai_base_url(),
            dir.path().join(".lode/test-memory.sqlite").display()
        ),
    )
    .unwrap();
    dir
}

async fn scripted() -> ScriptedServerHandle {
    let script = Script::load(&repo_root().join("fixtures/llm/mcp_reference.json")).unwrap();
    ScriptedServer::start(script).await.unwrap()
}

/// Records events and permission questions; answers every question with `answer`.
struct Host {
    events: Mutex<Vec<AgentEvent>>,
    questions: Mutex<Vec<PermissionRequest>>,
    answer: PermissionAnswer,
}

impl Host {
    fn answering(answer: PermissionAnswer) -> Arc<Host> {
        Arc::new(Host {
            events: Mutex::new(Vec::new()),
            questions: Mutex::new(Vec::new()),
            answer,
        })
    }

    fn asked_about(&self) -> Vec<String> {
        let questions = self.questions.lock().unwrap();
        questions.iter().map(|q| q.tool.clone()).collect()
    }

    fn notices(&self) -> Vec<String> {
        let events = self.events.lock().unwrap();
        events
            .iter()
            .filter_map(|event| match event {
                AgentEvent::Notice { message } => Some(message.clone()),
                _ => None,
            })
            .collect()
    }
}

#[async_trait::async_trait]
impl SessionHost for Host {
    fn emit(&self, event: AgentEvent) {
        self.events.lock().unwrap().push(event);
    }

    async fn request_permission(&self, request: PermissionRequest) -> PermissionAnswer {
        self.questions.lock().unwrap().push(request);
        self.answer
    }
}

/// The text of the tool result for `call_id` in the last request that carried it.
fn tool_result(requests: &[RecordedRequest], call_id: &str) -> String {
    requests
        .iter()
        .rev()
        .flat_map(|request| {
            request.body["messages"]
                .as_array()
                .cloned()
                .unwrap_or_default()
        })
        .find(|message| message["role"] == "tool" && message["tool_call_id"] == call_id)
        .map(|message| match &message["content"] {
            Value::String(text) => text.clone(),
            other => other.to_string(),
        })
        .unwrap_or_else(|| panic!("no tool result for {call_id} was sent to the model"))
}

fn offered_tools(request: &RecordedRequest) -> Vec<String> {
    request.body["tools"]
        .as_array()
        .cloned()
        .unwrap_or_default()
        .iter()
        .filter_map(|tool| tool["function"]["name"].as_str().map(str::to_owned))
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reference_stdio_servers_are_offered_asked_about_capped_and_marked_untrusted() {
    let Some((node, servers)) = reference_servers() else {
        return;
    };
    let llm = scripted().await;
    // server-filesystem from the config, confined to the workspace it runs in.
    let files_server = format!(
        "[[mcp.servers]]\nname = \"files\"\ncommand = {:?}\nargs = [{:?}, \".\"]\n",
        node.display().to_string(),
        servers
            .join("server-filesystem/dist/index.js")
            .display()
            .to_string()
    );
    let dir = workspace(&llm, &files_server);
    std::fs::write(dir.path().join("big.txt"), "0123456789".repeat(10_000)).unwrap();
    let agent = Agent::open(dir.path(), common::test_options(dir.path())).unwrap();
    // server-everything as an ACP client passes it in session/new.
    let everything = McpServerConfig::stdio(
        "everything",
        node.display().to_string(),
        vec![
            servers
                .join("server-everything/dist/index.js")
                .display()
                .to_string(),
            "stdio".to_owned(),
        ],
    );
    let session = agent
        .new_session(dir.path().to_path_buf(), vec![everything])
        .unwrap();

    let host = Host::answering(PermissionAnswer::AllowOnce);
    let stop = agent
        .prompt(
            &session.id,
            vec![UserInput::Text(
                "Use the reference MCP servers, please.".into(),
            )],
            host.clone(),
            CancellationToken::new(),
        )
        .await
        .unwrap();
    assert_eq!(stop, StopReason::EndTurn, "notices: {:?}", host.notices());
    let requests = llm.requests();
    let offered = offered_tools(&requests[0]);
    for expected in [
        "mcp__everything__echo",
        "mcp__everything__get-sum",
        "mcp__files__read_text_file",
        "mcp__files__write_file",
    ] {
        assert!(offered.contains(&expected.to_owned()), "{offered:?}");
    }
    // The default policy asks before every remote call.
    assert_eq!(
        host.asked_about(),
        ["mcp__everything__echo", "mcp__files__read_text_file"]
    );
    let echo = tool_result(&requests, "call_echo");
    assert!(
        echo.contains("<untrusted_content source=\"mcp\" server=\"everything\" tool=\"echo\">"),
        "{echo}"
    );
    assert!(echo.contains("Echo: hello from the script"), "{echo}");
    let read = tool_result(&requests, "call_read");
    assert!(
        read.contains(
            "<untrusted_content source=\"mcp\" server=\"files\" tool=\"read_text_file\">"
        ),
        "{}",
        &read[..200.min(read.len())]
    );
    assert!(
        read.contains("[output truncated: 100000 characters, the first 30000 shown]"),
        "the 100,000-character file is capped"
    );
    assert!(read.len() < 31_000, "{}", read.len());

    // A declined call never reaches the server, and the model is told so.
    let host = Host::answering(PermissionAnswer::RejectOnce);
    let stop = agent
        .prompt(
            &session.id,
            vec![UserInput::Text("Echo once more.".into())],
            host.clone(),
            CancellationToken::new(),
        )
        .await
        .unwrap();
    assert_eq!(stop, StopReason::EndTurn);
    assert_eq!(host.asked_about(), ["mcp__everything__echo"]);
    let declined = tool_result(&llm.requests(), "call_echo_2");
    assert!(!declined.contains("Echo: declined"), "{declined}");
    assert!(
        declined.to_lowercase().contains("denied") || declined.to_lowercase().contains("declined"),
        "{declined}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reference_server_over_streamable_http() {
    let Some((node, servers)) = reference_servers() else {
        return;
    };
    let port = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        listener.local_addr().unwrap().port()
    };
    let mut child = tokio::process::Command::new(&node)
        .arg(servers.join("server-everything/dist/index.js"))
        .arg("streamableHttp")
        .env("PORT", port.to_string())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .expect("start server-everything over HTTP");
    // Wait (generously) until it accepts connections.
    let mut up = false;
    for _ in 0..300 {
        if tokio::net::TcpStream::connect(("127.0.0.1", port))
            .await
            .is_ok()
        {
            up = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(up, "server-everything did not listen on port {port}");

    let llm = scripted().await;
    let remote =
        format!("[[mcp.servers]]\nname = \"remote\"\nurl = \"http://127.0.0.1:{port}/mcp\"\n");
    let dir = workspace(&llm, &remote);
    let agent = Agent::open(dir.path(), common::test_options(dir.path())).unwrap();
    let session = agent
        .new_session(dir.path().to_path_buf(), Vec::new())
        .unwrap();
    let host = Host::answering(PermissionAnswer::AllowOnce);
    let stop = agent
        .prompt(
            &session.id,
            vec![UserInput::Text("Add over HTTP: 2 and 40.".into())],
            host.clone(),
            CancellationToken::new(),
        )
        .await
        .unwrap();
    assert_eq!(stop, StopReason::EndTurn, "notices: {:?}", host.notices());
    assert_eq!(host.asked_about(), ["mcp__remote__get-sum"]);
    let sum = tool_result(&llm.requests(), "call_sum");
    assert!(
        sum.contains("<untrusted_content source=\"mcp\" server=\"remote\" tool=\"get-sum\">"),
        "{sum}"
    );
    assert!(sum.contains("42"), "{sum}");
    drop(agent);
    let _ = child.kill().await;
}
