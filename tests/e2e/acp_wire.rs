//! `lode acp` on the raw wire: hand-written JSON-RPC lines to the real binary, checking that
//! malformed, oversized and out-of-order messages get JSON-RPC errors while the process keeps
//! serving, and that nothing but protocol ever reaches stdout.

use crate::acp_support as support;

use serde_json::{Value, json};
use support::{PATIENCE, Wire, Workspace};

#[tokio::test]
async fn bad_and_out_of_order_input_gets_errors_and_lode_keeps_serving() {
    let workspace = Workspace::new("hello.json");
    let mut wire = Wire::start(&workspace);
    let root = workspace.root();

    let early = wire
        .request(1, "session/new", json!({"cwd": root, "mcpServers": []}))
        .await;
    assert!(
        early["error"]["code"].is_i64(),
        "a call before initialize is refused: {early}"
    );
    let early_prompt = wire
        .request(
            2,
            "session/prompt",
            json!({"sessionId": "x", "prompt": [{"type": "text", "text": "hi"}]}),
        )
        .await;
    assert!(early_prompt["error"].is_object(), "{early_prompt}");

    wire.send_raw("{\"jsonrpc\": \"2.0\", \"id\": 3, \"method\": ")
        .await;
    let parse = wire.next().await;
    assert_eq!(parse["error"]["code"], -32700, "{parse}");

    let huge = format!(
        "{{\"jsonrpc\":\"2.0\",\"id\":4,\"method\":\"initialize\",\"params\":{{\"protocolVersion\":1,\"pad\":\"{}\"}}}}",
        "x".repeat(2 * 1024 * 1024)
    );
    wire.send_raw(&huge).await;
    let refused = wire.next().await;
    assert_eq!(refused["error"]["code"], -32700, "{refused}");
    assert!(refused.to_string().contains("1 MiB"), "{refused}");

    wire.initialize(5).await;
    let unknown = wire.request(6, "session/teleport", json!({})).await;
    assert_eq!(unknown["error"]["code"], -32601);
    let missing = wire
        .request(
            7,
            "session/prompt",
            json!({"sessionId": "no-such-session", "prompt": [{"type": "text", "text": "hi"}]}),
        )
        .await;
    assert_eq!(missing["error"]["code"], -32002, "{missing}");
    let bad_params = wire.request(8, "session/new", json!({"cwd": 42})).await;
    assert_eq!(bad_params["error"]["code"], -32602, "{bad_params}");

    let session = wire
        .request(9, "session/new", json!({"cwd": root, "mcpServers": []}))
        .await;
    let session_id = session["result"]["sessionId"]
        .as_str()
        .expect("a session after all that")
        .to_string();
    let answer = wire
        .request(
            10,
            "session/prompt",
            json!({"sessionId": session_id, "prompt": [{"type": "text", "text": "hello?"}]}),
        )
        .await;
    assert_eq!(answer["result"]["stopReason"], "end_turn", "{answer}");

    drop(wire.stdin);
    let exit = tokio::time::timeout(PATIENCE, wire.child.wait())
        .await
        .expect("lode exits on EOF")
        .unwrap();
    assert!(exit.success(), "{exit:?}");
}

/// Answers the agent's requests to the client as an editor with a terminal would, recording every
/// message lode sends until the prompt `id` is answered.
async fn run_with_terminal(wire: &mut Wire, id: u64) -> (Value, Vec<Value>) {
    let mut sent = Vec::new();
    loop {
        let message = wire.next().await;
        sent.push(message.clone());
        if message.get("method").is_none() && message["id"] == json!(id) {
            return (message, sent);
        }
        let Some(request_id) = message
            .get("id")
            .filter(|_| message.get("method").is_some())
        else {
            continue;
        };
        let result = match message["method"].as_str().unwrap() {
            "session/request_permission" => {
                json!({"outcome": {"outcome": "selected", "optionId": "allow_once"}})
            }
            "terminal/create" => json!({"terminalId": "term-7"}),
            "terminal/wait_for_exit" => json!({"exitCode": 0}),
            "terminal/output" => json!({
                "output": "test result: ok. 3 passed", "truncated": false,
                "exitStatus": {"exitCode": 0}
            }),
            "terminal/release" | "terminal/kill" => json!({}),
            other => panic!("unexpected request {other}: {message}"),
        };
        wire.send_raw(&json!({"jsonrpc": "2.0", "id": request_id, "result": result}).to_string())
            .await;
    }
}

#[tokio::test]
async fn a_client_terminal_is_released_only_after_the_final_update_that_shows_it() {
    let workspace = Workspace::new("acp_terminal.json");
    let mut wire = Wire::start(&workspace);
    let root = workspace.root();
    wire.request(
        1,
        "initialize",
        json!({"protocolVersion": 1, "clientCapabilities": {"terminal": true}}),
    )
    .await;
    let session = wire
        .request(2, "session/new", json!({"cwd": root, "mcpServers": []}))
        .await;
    let session_id = session["result"]["sessionId"].as_str().unwrap().to_string();
    wire.send_raw(
        &json!({"jsonrpc": "2.0", "id": 3, "method": "session/prompt", "params": {
            "sessionId": session_id, "prompt": [{"type": "text", "text": "Please run the tests"}]
        }})
        .to_string(),
    )
    .await;
    let (answer, sent) = run_with_terminal(&mut wire, 3).await;
    assert_eq!(answer["result"]["stopReason"], "end_turn", "{answer}");

    let position = |wanted: &dyn Fn(&Value) -> bool, what: &str| {
        sent.iter()
            .position(wanted)
            .unwrap_or_else(|| panic!("no {what} in {sent:#?}"))
    };
    let created = position(&|m| m["method"] == "terminal/create", "terminal/create");
    let create = &sent[created]["params"];
    // The editor's terminal runs the command through lode's sandbox launcher (the running
    // binary, `lode-full`), confined to the session's workspace, exactly as a local spawn would.
    assert_eq!(
        create["command"],
        json!(support::lode_full().display().to_string()),
        "{create}"
    );
    let args: Vec<&str> = create["args"]
        .as_array()
        .unwrap()
        .iter()
        .map(|arg| arg.as_str().unwrap())
        .collect();
    assert_eq!(args[0], "sandbox-exec", "{create}");
    let root_text = root.display().to_string();
    assert!(
        args.windows(2)
            .any(|pair| pair == ["--root", root_text.as_str()]),
        "{create}"
    );
    assert_eq!(
        args[args.len() - 4..],
        ["--", "sh", "-c", "cargo test --offline"],
        "{create}"
    );
    let shown = position(
        &|m| {
            let update = &m["params"]["update"];
            update["sessionUpdate"] == "tool_call_update"
                && update["status"] == "completed"
                && update["content"][0]["type"] == "terminal"
                && update["content"][0]["terminalId"] == "term-7"
        },
        "a final tool_call_update showing the terminal",
    );
    let released = position(&|m| m["method"] == "terminal/release", "terminal/release");
    assert_eq!(sent[released]["params"]["terminalId"], "term-7");
    assert!(created < shown && shown < released, "{sent:#?}");
    assert!(
        !sent[released + 1..]
            .iter()
            .any(|m| m["params"]["update"]["toolCallId"] == "call_run_1"),
        "no update names the tool call after its terminal is released: {sent:#?}"
    );
}
