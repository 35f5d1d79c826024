//! The ACP adapter on the wire: raw newline-delimited JSON-RPC against `serve_lines` over an
//! in-memory pipe, with a scripted backend standing in for the agent (the real agent is driven
//! end to end by the top-level `tests/e2e/acp_*.rs`). Covers the method surface, the order of
//! updates, permission round trips, cancellation, panics, and malformed or out-of-order input.

use crate::support;

use std::sync::Arc;
use std::time::Duration;

use serde_json::{Value, json};
use support::ScriptedBackend;
use tokio::io::{
    AsyncBufReadExt, AsyncWriteExt, BufReader, DuplexStream, Lines, ReadHalf, WriteHalf,
};

struct Wire {
    lines: Lines<BufReader<ReadHalf<DuplexStream>>>,
    writer: WriteHalf<DuplexStream>,
    next_id: u64,
    /// Notifications and agent requests seen while waiting for responses.
    seen: Vec<Value>,
}

impl Wire {
    fn start(backend: Arc<ScriptedBackend>) -> Wire {
        Wire::start_with(backend, lode_acp::ConnectionOptions::default())
    }

    fn start_with(backend: Arc<ScriptedBackend>, options: lode_acp::ConnectionOptions) -> Wire {
        let (client, server) = tokio::io::duplex(4 * 1024 * 1024);
        let (server_read, server_write) = tokio::io::split(server);
        tokio::spawn(lode_acp::serve_lines(
            backend,
            options,
            BufReader::new(server_read),
            server_write,
        ));
        let (client_read, writer) = tokio::io::split(client);
        Wire {
            lines: BufReader::new(client_read).lines(),
            writer,
            next_id: 0,
            seen: Vec::new(),
        }
    }

    async fn send_raw(&mut self, line: &str) {
        self.writer.write_all(line.as_bytes()).await.unwrap();
        self.writer.write_all(b"\n").await.unwrap();
    }

    async fn send(&mut self, message: Value) {
        self.send_raw(&message.to_string()).await;
    }

    /// The next message from the agent. The timeout only turns a hang into a failure.
    async fn next(&mut self) -> Value {
        let line = tokio::time::timeout(Duration::from_secs(20), self.lines.next_line())
            .await
            .expect("agent answered in time")
            .unwrap()
            .expect("agent still connected");
        serde_json::from_str(&line)
            .unwrap_or_else(|error| panic!("agent wrote non-JSON {line:?}: {error}"))
    }

    /// Sends a request and returns its response, keeping what came before it in `seen`.
    async fn request(&mut self, method: &str, params: Value) -> Value {
        let id = self.start_request(method, params).await;
        self.response(id).await
    }

    async fn start_request(&mut self, method: &str, params: Value) -> u64 {
        self.next_id += 1;
        let id = self.next_id;
        self.send(json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}))
            .await;
        id
    }

    async fn response(&mut self, id: u64) -> Value {
        loop {
            let message = self.next().await;
            if message.get("method").is_none() && message["id"] == json!(id) {
                return message;
            }
            self.seen.push(message);
        }
    }

    /// Waits for the agent's next request of `method`, keeping what came before it in `seen`.
    async fn agent_request(&mut self, method: &str) -> Value {
        loop {
            let message = self.next().await;
            if message["method"] == method && message.get("id").is_some() {
                return message;
            }
            self.seen.push(message);
        }
    }

    fn updates(&mut self) -> Vec<Value> {
        self.seen
            .drain(..)
            .filter(|m| m["method"] == "session/update")
            .map(|m| m["params"]["update"].clone())
            .collect()
    }

    async fn initialize(&mut self, capabilities: Value) -> Value {
        self.request(
            "initialize",
            json!({"protocolVersion": 1, "clientCapabilities": capabilities}),
        )
        .await
    }

    async fn new_session(&mut self) -> String {
        let response = self
            .request(
                "session/new",
                json!({"cwd": "/work/project", "mcpServers": []}),
            )
            .await;
        response["result"]["sessionId"]
            .as_str()
            .expect("a session id")
            .to_string()
    }

    async fn prompt(&mut self, session: &str, text: &str) -> Value {
        self.request(
            "session/prompt",
            json!({"sessionId": session, "prompt": [{"type": "text", "text": text}]}),
        )
        .await
    }
}

fn kinds(updates: &[Value]) -> Vec<&str> {
    updates
        .iter()
        .map(|u| u["sessionUpdate"].as_str().unwrap())
        .collect()
}

#[tokio::test]
async fn initialize_advertises_lode_and_its_capabilities() {
    let mut wire = Wire::start(Arc::default());
    let response = wire.initialize(json!({})).await;
    let result = &response["result"];
    assert_eq!(result["protocolVersion"], 1);
    assert_eq!(result["agentInfo"]["name"], "lode");
    let caps = &result["agentCapabilities"];
    assert_eq!(caps["loadSession"], true);
    assert_eq!(caps["promptCapabilities"]["embeddedContext"], true);
    assert_eq!(
        caps["promptCapabilities"]["image"], false,
        "no configured model sees images"
    );
    assert_eq!(caps["mcpCapabilities"]["http"], true);
    for capability in ["list", "resume", "close", "delete"] {
        assert!(
            caps["sessionCapabilities"][capability].is_object(),
            "{capability} in {caps}"
        );
    }
}

#[tokio::test]
async fn a_new_session_has_modes_options_and_commands_then_a_prompt_streams_in_order() {
    let backend = Arc::new(ScriptedBackend::default());
    let mut wire = Wire::start(backend.clone());
    wire.initialize(json!({})).await;
    let response = wire
        .request("session/new", json!({"cwd": "/work/project", "mcpServers": [{"name": "files", "command": "/bin/mcp", "args": [], "env": []}]}))
        .await;
    let result = &response["result"];
    assert_eq!(result["modes"]["currentModeId"], "code");
    assert_eq!(result["configOptions"][1]["category"], "model");
    assert_eq!(
        backend.mcp.lock().unwrap().len(),
        1,
        "MCP servers reach the agent"
    );
    let session = result["sessionId"].as_str().unwrap().to_string();

    let response = wire.prompt(&session, "stream").await;
    assert_eq!(response["result"]["stopReason"], "end_turn");
    let updates = wire.updates();
    assert_eq!(
        kinds(&updates),
        [
            "available_commands_update",
            "agent_message_chunk",
            "agent_message_chunk",
            "tool_call",
            "tool_call_update",
            "session_info_update"
        ]
    );
    assert_eq!(updates[1]["content"]["text"], "Hello");
    assert_eq!(updates[3]["kind"], "read");
    assert_eq!(updates[4]["status"], "completed");
    assert_eq!(updates[5]["title"], "Streaming");
}

#[tokio::test]
async fn a_rejected_permission_reaches_the_agent_as_reject() {
    let backend = Arc::new(ScriptedBackend::default());
    let mut wire = Wire::start(backend.clone());
    wire.initialize(json!({})).await;
    let session = wire.new_session().await;
    let prompt = wire
        .start_request(
            "session/prompt",
            json!({"sessionId": session, "prompt": [{"type": "text", "text": "permission"}]}),
        )
        .await;
    let question = wire.agent_request("session/request_permission").await;
    assert_eq!(question["params"]["toolCall"]["toolCallId"], "c2");
    let offered: Vec<&str> = question["params"]["options"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| o["optionId"].as_str().unwrap())
        .collect();
    assert_eq!(
        offered,
        ["allow_once", "allow_always", "reject_once", "reject_always"]
    );
    wire.send(json!({"jsonrpc": "2.0", "id": question["id"], "result": {"outcome": {"outcome": "selected", "optionId": "reject_once"}}})).await;
    let response = wire.response(prompt).await;
    assert_eq!(response["result"]["stopReason"], "end_turn");
    assert_eq!(*backend.answers.lock().unwrap(), ["reject_once"]);
}

#[tokio::test]
async fn cancel_stops_the_turn_and_an_open_permission_question() {
    let backend = Arc::new(ScriptedBackend::default());
    let mut wire = Wire::start(backend.clone());
    wire.initialize(json!({})).await;
    let session = wire.new_session().await;

    let prompt = wire
        .start_request(
            "session/prompt",
            json!({"sessionId": session, "prompt": [{"type": "text", "text": "wait"}]}),
        )
        .await;
    loop {
        let message = wire.next().await;
        if message["params"]["update"]["content"]["text"] == "waiting" {
            break;
        }
    }
    wire.send(
        json!({"jsonrpc": "2.0", "method": "session/cancel", "params": {"sessionId": session}}),
    )
    .await;
    assert_eq!(
        wire.response(prompt).await["result"]["stopReason"],
        "cancelled"
    );

    let prompt = wire
        .start_request(
            "session/prompt",
            json!({"sessionId": session, "prompt": [{"type": "text", "text": "permission"}]}),
        )
        .await;
    wire.agent_request("session/request_permission").await;
    wire.send(
        json!({"jsonrpc": "2.0", "method": "session/cancel", "params": {"sessionId": session}}),
    )
    .await;
    assert_eq!(
        wire.response(prompt).await["result"]["stopReason"],
        "cancelled"
    );
    assert_eq!(
        *backend.answers.lock().unwrap(),
        ["wait cancelled", "cancelled"]
    );
}

/// Polls (bounded) until the backend has released `count` sessions.
async fn released(backend: &ScriptedBackend, count: usize) -> Vec<String> {
    for _ in 0..400 {
        let released = backend.released.lock().unwrap().clone();
        if released.len() >= count {
            return released;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!(
        "only {:?} released",
        backend.released.lock().unwrap().clone()
    );
}

#[tokio::test]
async fn idle_sessions_are_released_but_never_mid_turn_and_come_back_on_use() {
    let backend = Arc::new(ScriptedBackend::default());
    let options = lode_acp::ConnectionOptions {
        idle_session_timeout: Some(Duration::from_millis(200)),
        ..lode_acp::ConnectionOptions::default()
    };
    let mut wire = Wire::start_with(backend.clone(), options);
    wire.initialize(json!({})).await;
    let idle = wire.new_session().await;
    let busy = wire.new_session().await;
    let turn = wire
        .start_request(
            "session/prompt",
            json!({"sessionId": busy, "prompt": [{"type": "text", "text": "wait"}]}),
        )
        .await;

    // The idle session goes; the one with a running turn stays, however long it runs.
    assert_eq!(released(&backend, 1).await, std::slice::from_ref(&idle));
    tokio::time::sleep(Duration::from_millis(600)).await;
    assert_eq!(
        *backend.released.lock().unwrap(),
        std::slice::from_ref(&idle)
    );

    // A released session is picked up again by its next request, as if it never went away.
    let answer = wire.prompt(&idle, "stream").await;
    assert_eq!(answer["result"]["stopReason"], "end_turn", "{answer}");
    let mode = wire
        .request(
            "session/set_mode",
            json!({"sessionId": idle, "modeId": "ask"}),
        )
        .await;
    assert!(mode.get("result").is_some(), "{mode}");

    // Once its turn ends, the busy session is idle too and goes the same way.
    wire.send(json!({"jsonrpc": "2.0", "method": "session/cancel", "params": {"sessionId": busy}}))
        .await;
    assert_eq!(
        wire.response(turn).await["result"]["stopReason"],
        "cancelled"
    );
    let released = released(&backend, 3).await;
    assert!(released[1..].contains(&busy), "{released:?}");
    assert!(released[1..].contains(&idle), "{released:?}");

    // A released session deleted meanwhile (by another connection) is gone for good.
    lode_acp::AgentBackend::delete_session(&*backend, &idle).unwrap();
    let gone = wire.prompt(&idle, "stream").await;
    assert_eq!(gone["error"]["code"], -32002, "{gone}");
}

#[tokio::test]
async fn modes_and_config_options_change_and_are_announced() {
    let mut wire = Wire::start(Arc::default());
    wire.initialize(json!({})).await;
    let session = wire.new_session().await;
    // The commands update follows the session/new response.
    let commands = wire.next().await;
    assert_eq!(
        commands["params"]["update"]["sessionUpdate"],
        "available_commands_update"
    );
    wire.seen.clear();

    let response = wire
        .request(
            "session/set_mode",
            json!({"sessionId": session, "modeId": "ask"}),
        )
        .await;
    assert!(response["result"].is_object(), "{response}");
    let updates = wire.updates();
    assert_eq!(
        kinds(&updates),
        ["current_mode_update", "config_option_update"]
    );
    assert_eq!(updates[0]["currentModeId"], "ask");
    assert_eq!(updates[1]["configOptions"][0]["currentValue"], "ask");

    let response = wire
        .request(
            "session/set_config_option",
            json!({"sessionId": session, "configId": "model", "value": "cloud"}),
        )
        .await;
    assert_eq!(
        response["result"]["configOptions"][1]["currentValue"],
        "cloud"
    );
    assert_eq!(kinds(&wire.updates()), ["config_option_update"]);

    let response = wire
        .request(
            "session/set_config_option",
            json!({"sessionId": session, "configId": "mode", "value": "architect"}),
        )
        .await;
    assert_eq!(
        response["result"]["configOptions"][0]["currentValue"],
        "architect"
    );
    assert_eq!(
        kinds(&wire.updates()),
        ["current_mode_update", "config_option_update"]
    );

    for (method, params) in [
        (
            "session/set_mode",
            json!({"sessionId": session, "modeId": "yolo"}),
        ),
        (
            "session/set_config_option",
            json!({"sessionId": session, "configId": "model", "value": "nope"}),
        ),
        (
            "session/set_config_option",
            json!({"sessionId": session, "configId": "colour", "value": "red"}),
        ),
    ] {
        let response = wire.request(method, params).await;
        assert_eq!(response["error"]["code"], -32602, "{method}: {response}");
    }
}

#[tokio::test]
async fn list_load_resume_close_and_delete() {
    let backend = Arc::new(ScriptedBackend::default());
    let mut wire = Wire::start(backend.clone());
    wire.initialize(json!({})).await;
    let session = wire.new_session().await;

    // A second connection (a restarted editor) sees the session and gets its history replayed.
    let mut other = Wire::start(backend);
    other.initialize(json!({})).await;
    let listed = other.request("session/list", json!({})).await;
    assert_eq!(
        listed["result"]["sessions"][0]["sessionId"],
        session.as_str()
    );
    assert_eq!(listed["result"]["sessions"][0]["cwd"], "/work/project");
    let elsewhere = other
        .request("session/list", json!({"cwd": "/elsewhere"}))
        .await;
    assert_eq!(elsewhere["result"]["sessions"], json!([]));

    let loaded = other
        .request(
            "session/load",
            json!({"sessionId": session, "cwd": "/work/project", "mcpServers": []}),
        )
        .await;
    assert_eq!(loaded["result"]["modes"]["currentModeId"], "code");
    let replay = other.updates();
    assert_eq!(
        kinds(&replay)[..2],
        ["user_message_chunk", "agent_message_chunk"]
    );
    assert_eq!(replay[0]["content"]["text"], "earlier question");

    let resumed = other
        .request(
            "session/resume",
            json!({"sessionId": session, "cwd": "/work/project"}),
        )
        .await;
    assert!(resumed["result"].is_object(), "{resumed}");
    assert!(
        !kinds(&other.updates()).contains(&"user_message_chunk"),
        "resume does not replay"
    );

    assert!(
        other
            .request("session/close", json!({"sessionId": session}))
            .await["result"]
            .is_object()
    );
    let after_close = other.prompt(&session, "stream").await;
    assert_eq!(
        after_close["error"]["code"], -32002,
        "a closed session is not active: {after_close}"
    );
    assert!(
        other
            .request("session/delete", json!({"sessionId": session}))
            .await["result"]
            .is_object()
    );
    assert_eq!(
        other.request("session/list", json!({})).await["result"]["sessions"],
        json!([])
    );
    assert_eq!(
        other
            .request(
                "session/load",
                json!({"sessionId": session, "cwd": "/w", "mcpServers": []})
            )
            .await["error"]["code"],
        -32002
    );
}

#[tokio::test]
async fn out_of_order_and_malformed_input_gets_errors_and_the_connection_keeps_serving() {
    let mut wire = Wire::start(Arc::default());
    let early = wire
        .request(
            "session/new",
            json!({"cwd": "/work/project", "mcpServers": []}),
        )
        .await;
    assert!(
        early["error"].is_object(),
        "session/new before initialize: {early}"
    );

    wire.send_raw("{this is not json").await;
    let parse_error = wire.next().await;
    assert_eq!(parse_error["error"]["code"], -32700);
    assert_eq!(parse_error["id"], Value::Null);

    wire.send_raw(&format!(
        "{{\"jsonrpc\":\"2.0\",\"id\":99,\"method\":\"initialize\",\"params\":{{\"pad\":\"{}\"}}}}",
        "x".repeat(lode_acp::MAX_MESSAGE_BYTES)
    ))
    .await;
    let refused = wire.next().await;
    assert_eq!(refused["error"]["code"], -32700);
    assert!(
        refused.to_string().contains("larger than 1 MiB"),
        "{refused}"
    );

    wire.initialize(json!({})).await;
    let unknown = wire.request("session/frobnicate", json!({})).await;
    assert_eq!(unknown["error"]["code"], -32601);
    let no_session = wire.prompt("missing", "stream").await;
    assert_eq!(no_session["error"]["code"], -32002);
    let bad_cwd = wire
        .request(
            "session/new",
            json!({"cwd": "relative/dir", "mcpServers": []}),
        )
        .await;
    assert_eq!(bad_cwd["error"]["code"], -32602);
    let bad_params = wire
        .request("session/prompt", json!({"sessionId": 5}))
        .await;
    assert_eq!(bad_params["error"]["code"], -32602);

    let session = wire.new_session().await;
    let empty = wire
        .request(
            "session/prompt",
            json!({"sessionId": session, "prompt": []}),
        )
        .await;
    assert_eq!(empty["error"]["code"], -32602);
    let audio = wire.request("session/prompt", json!({"sessionId": session, "prompt": [{"type": "audio", "data": "AA", "mimeType": "audio/wav"}]})).await;
    assert_eq!(audio["error"]["code"], -32602);
    assert_eq!(
        wire.prompt(&session, "stream").await["result"]["stopReason"],
        "end_turn"
    );
}

#[tokio::test]
async fn more_mcp_servers_than_the_cap_are_refused_on_new_load_and_resume() {
    let backend = Arc::new(ScriptedBackend::default());
    let mut wire = Wire::start(backend.clone());
    wire.initialize(json!({})).await;
    let servers = |count: usize| -> Vec<Value> {
        (0..count)
            .map(|n| json!({"type": "http", "name": format!("s{n}"), "url": "http://127.0.0.1:9/", "headers": []}))
            .collect()
    };
    let cap = lode_acp::mapping::MAX_MCP_SERVERS;
    let too_many = wire
        .request(
            "session/new",
            json!({"cwd": "/work/project", "mcpServers": servers(cap + 1)}),
        )
        .await;
    assert_eq!(too_many["error"]["code"], -32602, "{too_many}");
    assert_eq!(
        too_many["error"]["message"],
        "65 MCP servers were passed; a session takes at most 64"
    );
    assert!(
        lode_acp::AgentBackend::list_sessions(&*backend, None)
            .unwrap()
            .is_empty(),
        "no session made"
    );
    let at_cap = wire
        .request(
            "session/new",
            json!({"cwd": "/work/project", "mcpServers": servers(cap)}),
        )
        .await;
    let session = at_cap["result"]["sessionId"].clone();
    assert!(session.is_string(), "{at_cap}");
    assert_eq!(backend.mcp.lock().unwrap().len(), cap);
    for method in ["session/load", "session/resume"] {
        let refused = wire
            .request(
                method,
                json!({"sessionId": session, "cwd": "/work/project", "mcpServers": servers(cap + 1)}),
            )
            .await;
        assert_eq!(refused["error"]["code"], -32602, "{method}: {refused}");
    }
}

#[tokio::test]
async fn a_prompt_without_a_provider_is_refused_with_auth_required_and_the_fix() {
    let mut wire = Wire::start(Arc::default());
    wire.initialize(json!({})).await;
    let session = wire.new_session().await;
    let refused = wire.prompt(&session, "no provider").await;
    assert_eq!(refused["error"]["code"], -32000, "{refused}");
    assert!(
        refused["error"]["message"]
            .as_str()
            .unwrap()
            .contains("[[llm.providers]]"),
        "{refused}"
    );
    assert_eq!(
        wire.prompt(&session, "stream").await["result"]["stopReason"],
        "end_turn"
    );
}

#[tokio::test]
async fn a_panicking_turn_fails_only_its_prompt_and_a_second_prompt_waits_its_turn() {
    let mut wire = Wire::start(Arc::default());
    wire.initialize(json!({})).await;
    let session = wire.new_session().await;
    let failed = wire.prompt(&session, "panic").await;
    assert_eq!(failed["error"]["code"], -32603, "{failed}");
    assert_eq!(
        wire.prompt(&session, "stream").await["result"]["stopReason"],
        "end_turn"
    );

    let first = wire
        .start_request(
            "session/prompt",
            json!({"sessionId": session, "prompt": [{"type": "text", "text": "wait"}]}),
        )
        .await;
    loop {
        if wire.next().await["params"]["update"]["content"]["text"] == "waiting" {
            break;
        }
    }
    let second = wire.prompt(&session, "stream").await;
    assert_eq!(
        second["error"]["code"], -32600,
        "one turn at a time: {second}"
    );
    wire.send(
        json!({"jsonrpc": "2.0", "method": "session/cancel", "params": {"sessionId": session}}),
    )
    .await;
    assert_eq!(
        wire.response(first).await["result"]["stopReason"],
        "cancelled"
    );
}

#[tokio::test]
async fn commands_run_in_the_clients_terminal_and_reads_use_its_buffers() {
    let mut wire = Wire::start(Arc::default());
    wire.initialize(json!({"terminal": true, "fs": {"readTextFile": true, "writeTextFile": true}}))
        .await;
    let session = wire.new_session().await;

    let prompt = wire
        .start_request(
            "session/prompt",
            json!({"sessionId": session, "prompt": [{"type": "text", "text": "terminal"}]}),
        )
        .await;
    let create = wire.agent_request("terminal/create").await;
    assert_eq!(create["params"]["command"], "cargo");
    assert_eq!(create["params"]["args"], json!(["test"]));
    assert_eq!(create["params"]["cwd"], "/work/project");
    assert_eq!(
        create["params"]["env"],
        json!([{"name": "RUST_LOG", "value": "info"}])
    );
    assert_eq!(create["params"]["outputByteLimit"], 4096);
    wire.send(json!({"jsonrpc": "2.0", "id": create["id"], "result": {"terminalId": "term-7"}}))
        .await;
    let wait = wire.agent_request("terminal/wait_for_exit").await;
    assert_eq!(wait["params"]["terminalId"], "term-7");
    wire.send(json!({"jsonrpc": "2.0", "id": wait["id"], "result": {"exitCode": 0}}))
        .await;
    let output = wire.agent_request("terminal/output").await;
    wire.send(json!({"jsonrpc": "2.0", "id": output["id"], "result": {"output": "ok", "truncated": false}}))
        .await;
    let release = wire.agent_request("terminal/release").await;
    wire.send(json!({"jsonrpc": "2.0", "id": release["id"], "result": {}}))
        .await;
    assert_eq!(
        wire.response(prompt).await["result"]["stopReason"],
        "end_turn"
    );
    let text = wire
        .updates()
        .iter()
        .filter_map(|u| u["content"]["text"].as_str().map(str::to_string))
        .collect::<String>();
    assert_eq!(text, "term-7 exited Some(0): ok");

    let prompt = wire
        .start_request(
            "session/prompt",
            json!({"sessionId": session, "prompt": [{"type": "text", "text": "read"}]}),
        )
        .await;
    let read = wire.agent_request("fs/read_text_file").await;
    assert_eq!(read["params"]["path"], "/work/project/a.rs");
    assert_eq!(read["params"]["line"], 2);
    assert_eq!(read["params"]["limit"], 1);
    wire.send(json!({"jsonrpc": "2.0", "id": read["id"], "result": {"content": "unsaved line"}}))
        .await;
    assert_eq!(
        wire.response(prompt).await["result"]["stopReason"],
        "end_turn"
    );
    let text = wire
        .updates()
        .iter()
        .filter_map(|u| u["content"]["text"].as_str().map(str::to_string))
        .collect::<String>();
    assert_eq!(text, "unsaved line");
}

#[tokio::test]
async fn without_terminal_or_fs_capabilities_the_agent_gets_neither() {
    let mut wire = Wire::start(Arc::default());
    wire.initialize(json!({})).await;
    let session = wire.new_session().await;
    let response = wire.prompt(&session, "terminal").await;
    assert_eq!(
        response["error"]["code"], -32602,
        "no client terminals offered: {response}"
    );
    let response = wire.prompt(&session, "read").await;
    assert_eq!(
        response["error"]["code"], -32602,
        "no client fs offered: {response}"
    );
}

/// Valid frames to mutate: every method lode serves, some notifications and a stray response.
fn fuzz_templates(session: &str) -> Vec<String> {
    [
        json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": 1, "clientCapabilities": {}}}),
        json!({"jsonrpc": "2.0", "id": 2, "method": "session/new", "params": {"cwd": "/work/project", "mcpServers": []}}),
        json!({"jsonrpc": "2.0", "id": 3, "method": "session/prompt", "params": {"sessionId": session, "prompt": [{"type": "text", "text": "stream"}]}}),
        json!({"jsonrpc": "2.0", "id": 4, "method": "session/set_mode", "params": {"sessionId": session, "modeId": "ask"}}),
        json!({"jsonrpc": "2.0", "id": 5, "method": "session/set_config_option", "params": {"sessionId": session, "configId": "model", "value": "cloud"}}),
        json!({"jsonrpc": "2.0", "id": 6, "method": "session/list", "params": {}}),
        json!({"jsonrpc": "2.0", "id": 7, "method": "session/load", "params": {"sessionId": session, "cwd": "/work/project", "mcpServers": []}}),
        json!({"jsonrpc": "2.0", "id": 8, "method": "session/resume", "params": {"sessionId": session, "cwd": "/work/project"}}),
        json!({"jsonrpc": "2.0", "method": "session/cancel", "params": {"sessionId": session}}),
        json!({"jsonrpc": "2.0", "id": 9, "result": {"outcome": {"outcome": "cancelled"}}}),
    ]
    .iter()
    .map(Value::to_string)
    .collect()
}

/// One mutation of `frame`: truncated, a byte replaced, a value retyped, or doubled.
fn mutate(rng: &mut fastrand::Rng, frame: &str) -> String {
    let bytes = frame.as_bytes();
    match rng.u8(0..5) {
        0 => String::from_utf8_lossy(&bytes[..rng.usize(0..bytes.len())]).into_owned(),
        1 => {
            let mut bytes = bytes.to_vec();
            for _ in 0..rng.usize(1..4) {
                let at = rng.usize(0..bytes.len());
                bytes[at] = b"{}[]\":,0\"x \\"[rng.usize(0..12)];
            }
            String::from_utf8_lossy(&bytes).into_owned()
        }
        2 => frame.replacen("\"session", "\"sessoin", 1),
        3 => {
            let mut value: Value = serde_json::from_str(frame).unwrap();
            let junk = [
                json!(null),
                json!(7),
                json!("x"),
                json!([]),
                json!({"a": 1}),
                json!(true),
            ];
            if let Some(object) = value.get_mut("params").and_then(Value::as_object_mut) {
                let keys: Vec<String> = object.keys().cloned().collect();
                if !keys.is_empty() {
                    let key = &keys[rng.usize(0..keys.len())];
                    object.insert(key.clone(), junk[rng.usize(0..junk.len())].clone());
                }
            } else {
                value["params"] = junk[rng.usize(0..junk.len())].clone();
            }
            value.to_string()
        }
        _ => format!("{frame}{frame}"),
    }
}

#[tokio::test]
async fn thousands_of_mutated_frames_never_stop_the_connection() {
    let mut wire = Wire::start(Arc::default());
    wire.initialize(json!({})).await;
    let session = wire.new_session().await;
    let templates = fuzz_templates(&session);
    let mut rng = fastrand::Rng::with_seed(0x10de);
    for round in 0..2000 {
        let template = &templates[rng.usize(0..templates.len())];
        let frame = mutate(&mut rng, template);
        wire.send_raw(&frame).await;
        // A request lode does not know, sent after every frame: its answer proves the
        // connection is still serving, and every line before it must be JSON-RPC.
        let sentinel = format!("sentinel-{round}");
        wire.send(json!({"jsonrpc": "2.0", "id": sentinel, "method": "lode/ping", "params": {}}))
            .await;
        loop {
            let message = wire.next().await;
            assert_eq!(message["jsonrpc"], "2.0", "after {frame:?}: {message}");
            if message["id"] == json!(sentinel) && message.get("method").is_none() {
                assert_eq!(message["error"]["code"], -32601, "{message}");
                break;
            }
            // Permission questions cannot come from these frames; anything else is an answer or
            // an update, and a request from lode would be a bug.
            assert!(
                message.get("method").is_none() || message.get("id").is_none(),
                "lode asked something after {frame:?}: {message}"
            );
        }
    }
    // Still a working agent after all that.
    let session = wire.new_session().await;
    assert_eq!(
        wire.prompt(&session, "stream").await["result"]["stopReason"],
        "end_turn"
    );
}

#[tokio::test]
async fn a_client_that_vanishes_mid_turn_leaves_nothing_running() {
    let backend = Arc::new(ScriptedBackend::default());
    let mut wire = Wire::start(backend.clone());
    wire.initialize(json!({})).await;
    let session = wire.new_session().await;
    wire.start_request(
        "session/prompt",
        json!({"sessionId": session, "prompt": [{"type": "text", "text": "wait"}]}),
    )
    .await;
    loop {
        if wire.next().await["params"]["update"]["content"]["text"] == "waiting" {
            break;
        }
    }
    drop(wire);
    // The turn only ends when its token fires; nobody else is left to fire it.
    let ended = tokio::time::timeout(Duration::from_secs(20), async {
        while backend.answers.lock().unwrap().is_empty() {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await;
    assert!(ended.is_ok(), "the turn kept running after the client left");
    assert_eq!(*backend.answers.lock().unwrap(), ["wait cancelled"]);
}

#[tokio::test]
async fn a_client_that_closes_its_end_before_the_answer_ends_the_connection_cleanly() {
    let backend = Arc::new(ScriptedBackend::default());
    let (writer, read_end) = tokio::io::duplex(1024);
    drop(read_end);
    let input: &'static [u8] =
        b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\",\"params\":{\"protocolVersion\":1}}\n";
    let outcome = tokio::time::timeout(
        Duration::from_secs(20),
        lode_acp::serve_lines(
            backend,
            lode_acp::ConnectionOptions::default(),
            BufReader::new(input),
            writer,
        ),
    )
    .await
    .expect("the connection ends with its input");
    assert!(outcome.is_ok(), "{outcome:?}");
}
