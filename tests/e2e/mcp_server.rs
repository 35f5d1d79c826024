//! `lode mcp` driven by real MCP clients: rmcp's client over a child process (the real
//! binary) lists the tools and calls each one on a copy of `fixtures/repos/tools-sample`, and a
//! raw JSON-RPC client sends malformed, oversized and out-of-order frames over stdio.

use crate::support;

use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use rmcp::model::{CallToolRequestParams, CallToolResponse, CallToolResult, ErrorCode};
use rmcp::service::{RunningService, ServiceError};
use rmcp::transport::TokioChildProcess;
use rmcp::{RoleClient, ServiceExt};
use serde_json::{Value, json};

fn sample_workspace() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    support::copy_tree(&support::fixtures().join("repos/tools-sample"), dir.path());
    dir
}

async fn connect(root: &Path) -> RunningService<RoleClient, ()> {
    let mut command = tokio::process::Command::new(support::lode_bin());
    command
        .arg("--root")
        .arg(root)
        .arg("mcp")
        .current_dir(root)
        .env_remove("LODE_INDEX_DIR");
    let transport = TokioChildProcess::new(command).expect("start lode mcp");
    ().serve(transport)
        .await
        .expect("MCP handshake with lode mcp")
}

async fn call(
    client: &RunningService<RoleClient, ()>,
    tool: &str,
    arguments: Value,
) -> Result<CallToolResult, ServiceError> {
    let Value::Object(arguments) = arguments else {
        panic!("arguments must be an object");
    };
    let params = CallToolRequestParams::new(tool.to_owned()).with_arguments(arguments);
    match client.peer().call_tool_once(params).await? {
        CallToolResponse::Complete(result) => Ok(result),
        _ => panic!("lode answers every call at once"),
    }
}

fn text_of(result: &CallToolResult) -> String {
    result
        .content
        .iter()
        .filter_map(|block| block.as_text().map(|text| text.text.clone()))
        .collect::<Vec<_>>()
        .join("\n")
}

fn error_code(error: ServiceError) -> ErrorCode {
    match error {
        ServiceError::McpError(data) => data.code,
        other => panic!("expected a JSON-RPC error, got {other}"),
    }
}

#[tokio::test]
async fn an_mcp_client_lists_and_calls_every_tool() {
    let workspace = sample_workspace();
    let root = workspace.path();
    let client = connect(root).await;
    let info = client.peer().peer_info().expect("server info");
    assert_eq!(info.server_info.as_ref().unwrap().name, "lode");
    assert!(info.capabilities.tools.is_some());

    let tools = client.peer().list_all_tools().await.unwrap();
    let names: Vec<&str> = tools.iter().map(|tool| tool.name.as_ref()).collect();
    assert_eq!(
        names,
        [
            "search",
            "map",
            "symbols",
            "references",
            "read_file",
            "hover",
            "definition",
            "call_hierarchy"
        ]
    );
    for tool in &tools {
        assert!(
            tool.description.as_deref().is_some_and(|d| d.len() > 40),
            "{} explains itself",
            tool.name
        );
        assert_eq!(tool.input_schema.get("type"), Some(&json!("object")));
        assert!(
            tool.input_schema.contains_key("properties"),
            "{}",
            tool.name
        );
        assert_eq!(
            tool.annotations.as_ref().and_then(|a| a.read_only_hint),
            Some(true)
        );
    }
    let search_schema = &tools[0].input_schema;
    assert_eq!(search_schema["required"], json!(["query"]));
    assert_eq!(search_schema["additionalProperties"], json!(false));

    // search: hybrid by default, with filters like `lode search`.
    let result = call(&client, "search", json!({"query": "session store"}))
        .await
        .unwrap();
    assert_eq!(result.is_error, Some(false));
    let structured = result.structured_content.clone().unwrap();
    assert_eq!(structured["mode"], "hybrid");
    assert_eq!(
        structured["hits"][0]["path"], "src/store.rs",
        "{structured}"
    );
    assert!(
        text_of(&result).starts_with("src/store.rs:"),
        "{}",
        text_of(&result)
    );
    let result = call(
        &client,
        "search",
        json!({"query": "report rows", "lang": "python", "mode": "lexical", "limit": 3}),
    )
    .await
    .unwrap();
    let structured = result.structured_content.unwrap();
    assert_eq!(structured["mode"], "lexical");
    let hits = structured["hits"].as_array().unwrap();
    assert!(!hits.is_empty() && hits.len() <= 3);
    assert!(hits.iter().all(|hit| hit["path"] == "scripts/report.py"));
    let result = call(
        &client,
        "search",
        json!({"query": "session", "path": "*.py"}),
    )
    .await
    .unwrap();
    let hits = result.structured_content.unwrap()["hits"].clone();
    assert!(
        hits.as_array()
            .unwrap()
            .iter()
            .all(|hit| hit["path"].as_str().unwrap().ends_with(".py")),
        "{hits}"
    );

    // symbols and references.
    let result = call(&client, "symbols", json!({"name": "SessionStore"}))
        .await
        .unwrap();
    let symbols = result.structured_content.clone().unwrap()["symbols"].clone();
    assert_eq!(symbols[0]["path"], "src/store.rs");
    assert_eq!(symbols[0]["kind"], "struct");
    assert_eq!(symbols[0]["match"], "exact");
    assert!(text_of(&result).contains("pub struct SessionStore"));
    let result = call(&client, "references", json!({"name": "SessionStore"}))
        .await
        .unwrap();
    let references = result.structured_content.unwrap()["references"].clone();
    assert!(
        references
            .as_array()
            .unwrap()
            .iter()
            .any(|r| r["path"] == "src/lib.rs"),
        "{references}"
    );

    // map: favours what the task mentions, within the budget.
    let result = call(
        &client,
        "map",
        json!({"tokens": 256, "mentions": ["summarize"], "focus": ["src/lib.rs"]}),
    )
    .await
    .unwrap();
    let map = result.structured_content.clone().unwrap();
    assert!(map["tokens"].as_u64().unwrap() <= 256);
    assert!(
        text_of(&result).contains("summarize"),
        "{}",
        text_of(&result)
    );

    // read_file: a line range with numbers, confined to the workspace.
    let result = call(
        &client,
        "read_file",
        json!({"path": "src/store.rs", "start_line": 3, "end_line": 5}),
    )
    .await
    .unwrap();
    let text = text_of(&result);
    assert!(text.starts_with("src/store.rs (lines 3-5 of "), "{text}");
    assert!(text.contains("     4  pub struct SessionStore {"), "{text}");
    assert!(!text.contains("impl SessionStore"));
    let structured = result.structured_content.unwrap();
    assert_eq!(structured["end_line"], 5);

    let outside = tempfile::tempdir().unwrap();
    std::fs::write(outside.path().join("secret.txt"), "do not read").unwrap();
    std::os::unix::fs::symlink(outside.path().join("secret.txt"), root.join("link.txt")).unwrap();
    for path in [
        "../secret.txt".to_owned(),
        outside.path().join("secret.txt").display().to_string(),
        "link.txt".to_owned(),
        ".lode/index/catalog.sqlite".to_owned(),
        "no/such/file.rs".to_owned(),
    ] {
        let error = call(&client, "read_file", json!({ "path": path }))
            .await
            .unwrap_err();
        assert_eq!(error_code(error), ErrorCode::INVALID_PARAMS, "{path}");
    }

    // Bad arguments and unknown tools are JSON-RPC errors; the session goes on.
    for (tool, arguments) in [
        ("search", json!({})),
        ("search", json!({"query": "x", "limit": "ten"})),
        ("search", json!({"query": "x", "limit": 0})),
        ("search", json!({"query": "x", "mode": "psychic"})),
        ("search", json!({"query": "x", "lang": "cobol"})),
        ("search", json!({"query": "x", "path": "src/[unclosed"})),
        ("search", json!({"query": "x", "colour": "blue"})),
        ("symbols", json!({"name": ""})),
        ("map", json!({"tokens": 1})),
        ("map", json!({"focus": ["/etc/passwd"]})),
        ("no_such_tool", json!({})),
    ] {
        let error = call(&client, tool, arguments.clone()).await.unwrap_err();
        assert_eq!(
            error_code(error),
            ErrorCode::INVALID_PARAMS,
            "{tool} {arguments}"
        );
    }

    // Every call sees the files as they are now: added, changed, removed.
    support::write(
        root,
        "src/fresh.rs",
        "/// Added while the server runs.\npub fn freshly_added_helper() -> u32 { 7 }\n",
    );
    let result = call(&client, "symbols", json!({"name": "freshly_added_helper"}))
        .await
        .unwrap();
    let symbols = result.structured_content.unwrap()["symbols"].clone();
    assert_eq!(symbols[0]["path"], "src/fresh.rs", "{symbols}");
    std::fs::remove_file(root.join("src/fresh.rs")).unwrap();
    let result = call(&client, "symbols", json!({"name": "freshly_added_helper"}))
        .await
        .unwrap();
    let symbols = result.structured_content.unwrap()["symbols"].clone();
    assert!(
        symbols
            .as_array()
            .unwrap()
            .iter()
            .all(|s| s["path"] != "src/fresh.rs"),
        "{symbols}"
    );

    client.cancel().await.unwrap();
}

#[tokio::test]
async fn with_lode_watch_running_a_call_sees_an_edit_that_only_a_file_event_reveals() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    std::fs::create_dir_all(root.join(".git")).unwrap();
    support::write(
        root,
        "src/lib.rs",
        "pub fn alpha_one() -> u32 {\n    1\n}\n",
    );
    let indexed = support::run(root, &["index"]);
    assert!(indexed.status.success(), "{}", support::stderr(&indexed));
    let _watch = support::spawn_watch(root);
    support::wait_until_watched(root, "alpha_one");
    let client = connect(root).await;

    // Same size, old mtime: the quick check cannot see this edit; only the watcher can.
    support::edit_behind_the_stat_check(
        &root.join("src/lib.rs"),
        "pub fn gamma_six() -> u32 {\n    1\n}\n",
    );
    let result = call(&client, "symbols", json!({"name": "gamma_six"}))
        .await
        .unwrap();
    assert!(
        text_of(&result).contains("src/lib.rs"),
        "{}",
        text_of(&result)
    );

    client.cancel().await.unwrap();
}

/// A raw JSON-RPC client on `lode mcp`'s stdio: stdout lines are collected by a thread.
struct RawClient {
    child: Child,
    stdin: Option<ChildStdin>,
    lines: mpsc::Receiver<String>,
    seen: Vec<Value>,
}

impl RawClient {
    fn start(root: &Path, extra: &[&str]) -> RawClient {
        let mut child = Command::new(support::lode_bin())
            .arg("--root")
            .arg(root)
            .arg("mcp")
            .args(extra)
            .current_dir(root)
            .env_remove("LODE_INDEX_DIR")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("start lode mcp");
        let stdout = child.stdout.take().unwrap();
        let (sender, lines) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if sender.send(line).is_err() {
                    break;
                }
            }
        });
        let stdin = child.stdin.take();
        RawClient {
            child,
            stdin,
            lines,
            seen: Vec::new(),
        }
    }

    fn send_raw(&mut self, bytes: &[u8]) {
        let stdin = self.stdin.as_mut().unwrap();
        stdin.write_all(bytes).unwrap();
        stdin.flush().unwrap();
    }

    fn send(&mut self, message: Value) {
        self.send_raw(format!("{message}\n").as_bytes());
    }

    /// The next message matching `wanted`, keeping the others for later.
    fn expect(&mut self, what: &str, wanted: impl Fn(&Value) -> bool) -> Value {
        if let Some(position) = self.seen.iter().position(&wanted) {
            return self.seen.remove(position);
        }
        loop {
            let line = self
                .lines
                .recv_timeout(Duration::from_secs(120))
                .unwrap_or_else(|_| panic!("no {what} from lode mcp; saw {:?}", self.seen));
            let message: Value = serde_json::from_str(&line)
                .unwrap_or_else(|_| panic!("stdout carried a line that is not JSON: {line}"));
            if wanted(&message) {
                return message;
            }
            self.seen.push(message);
        }
    }

    fn response(&mut self, id: i64) -> Value {
        self.expect(&format!("response {id}"), |m| m["id"] == json!(id))
    }

    fn null_id_error(&mut self, code: i64) -> Value {
        self.expect(&format!("error {code}"), |m| {
            m["id"].is_null() && m["error"]["code"] == json!(code)
        })
    }
}

fn initialize(id: i64) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "raw-test", "version": "0"}
    }})
}

#[test]
fn malformed_oversized_and_out_of_order_frames_get_errors_not_a_crash() {
    let workspace = sample_workspace();
    let mut client = RawClient::start(workspace.path(), &["--max-message-bytes", "4096"]);

    // Before initialize: a request is refused, a notification ignored, ping answered.
    client.send(json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}));
    let refused = client.response(1);
    assert_eq!(refused["error"]["code"], -32600, "{refused}");
    assert!(
        refused["error"]["message"]
            .as_str()
            .unwrap()
            .contains("initialize")
    );
    client.send(json!({"jsonrpc": "2.0", "method": "notifications/progress", "params": {}}));
    client.send(json!({"jsonrpc": "2.0", "id": 2, "method": "ping"}));
    assert_eq!(client.response(2)["result"], json!({}));

    // Garbage, half messages, batches and oversized lines.
    client.send_raw(b"this is not json\n");
    client.null_id_error(-32700);
    client.send_raw(b"{\"jsonrpc\": \"2.0\", \"id\": 3, \"method\": \n");
    client.null_id_error(-32700);
    client.send(json!([{"jsonrpc": "2.0", "id": 4, "method": "ping"}]));
    client.null_id_error(-32600);
    let huge = format!(
        "{{\"jsonrpc\":\"2.0\",\"id\":5,\"method\":\"ping\",\"params\":{{\"pad\":\"{}\"}}}}\n",
        "x".repeat(20_000)
    );
    client.send_raw(huge.as_bytes());
    let oversized = client.null_id_error(-32600);
    assert!(
        oversized["error"]["message"]
            .as_str()
            .unwrap()
            .contains("larger than 4096 bytes")
    );
    client.send(json!({"jsonrpc": "1.0", "id": 6, "method": "ping"}));
    assert_eq!(client.response(6)["error"]["code"], -32600);

    // The session starts normally after all that.
    client.send(initialize(7));
    let initialized = client.response(7);
    assert_eq!(
        initialized["result"]["serverInfo"]["name"], "lode",
        "{initialized}"
    );
    client.send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
    client.send(json!({"jsonrpc": "2.0", "id": 8, "method": "tools/list"}));
    let listed = client.response(8);
    assert_eq!(listed["result"]["tools"].as_array().unwrap().len(), 8);

    // Unknown methods and tools, bad arguments: errors with the request's id.
    client.send(json!({"jsonrpc": "2.0", "id": 9, "method": "no/such/method"}));
    assert_eq!(client.response(9)["error"]["code"], -32601);
    client.send(json!({"jsonrpc": "2.0", "id": 10, "method": "tools/call",
        "params": {"name": "teleport", "arguments": {}}}));
    assert_eq!(client.response(10)["error"]["code"], -32602);
    client.send(json!({"jsonrpc": "2.0", "id": 11, "method": "tools/call",
        "params": {"name": "symbols", "arguments": {"name": 42}}}));
    let bad = client.response(11);
    assert_eq!(bad["error"]["code"], -32602, "{bad}");
    client.send(json!({"jsonrpc": "2.0", "id": 12, "method": "tools/call", "params": "oops"}));
    assert_eq!(client.response(12)["error"]["code"], -32602);
    client.send_raw(b"\n\n   \n");
    client.send(json!({"jsonrpc": "2.0", "id": 13, "method": "tools/call",
        "params": {"name": "symbols", "arguments": {"name": "greet"}}}));
    let answered = client.response(13);
    assert_eq!(
        answered["result"]["structuredContent"]["symbols"][0]["path"], "src/lib.rs",
        "{answered}"
    );
    // A second initialize does not derail the session.
    client.send(initialize(14));
    client.response(14);
    client.send(json!({"jsonrpc": "2.0", "id": 15, "method": "ping"}));
    assert_eq!(client.response(15)["result"], json!({}));

    // Closing stdin ends the server cleanly.
    drop(client.stdin.take());
    let mut status = None;
    for _ in 0..600 {
        if let Some(exit) = client.child.try_wait().unwrap() {
            status = Some(exit);
            break;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    let status = status.expect("lode mcp exits when stdin closes");
    assert!(status.success(), "{status}");
    // Whatever is left on stdout is still JSON-RPC.
    while let Ok(line) = client.lines.recv_timeout(Duration::from_secs(5)) {
        let message: Value = serde_json::from_str(&line).expect("only MCP frames on stdout");
        assert_eq!(message["jsonrpc"], "2.0");
    }
}
