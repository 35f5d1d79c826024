//! `lode acp --http` driven by the official TypeScript SDK, `@agentclientprotocol/sdk`
//! (`scripts/install-test-tools.sh` installs a pinned version into target/test-tools/acp-sdk; it
//! runs on acpx's Node 22). The client is `tests/e2e/acp_ts_sdk.mjs`: the SDK's
//! `experimental/http-client` (POST + SSE) and `experimental/ws-client` (over Node's built-in
//! WebSocket) carry initialize, session/new and a prompt whose scripted model edits a file after
//! a `session/request_permission` the script answers; the tests check the messages it printed
//! and the file on disk. Without the token the SDK gets 401.
//! Without Node or the SDK the tests say so and pass, except under CI, where they fail.

use crate::acp_support as support;

use std::path::PathBuf;
use std::process::Output;

use serde_json::Value;
use support::{HttpServer, Workspace, explain, repo_root};

/// Node 22 and the SDK's npm prefix, or `None` (skipping) when they are not installed.
fn tools() -> Option<(PathBuf, PathBuf)> {
    let tools = repo_root().join("target/test-tools");
    let node = std::env::var_os("LODE_NODE")
        .map(PathBuf::from)
        .unwrap_or_else(|| tools.join("acpx/node_modules/.bin/node"));
    let sdk = std::env::var_os("LODE_ACP_SDK")
        .map(PathBuf::from)
        .unwrap_or_else(|| tools.join("acp-sdk"));
    let installed = sdk.join("node_modules/@agentclientprotocol/sdk/package.json");
    if node.exists() && installed.exists() {
        return Some((node, sdk));
    }
    assert!(
        std::env::var_os("CI").is_none(),
        "Node 22 ({}) or @agentclientprotocol/sdk ({}) is missing; run scripts/install-test-tools.sh",
        node.display(),
        installed.display()
    );
    eprintln!(
        "skipping: Node 22 or @agentclientprotocol/sdk not installed (run scripts/install-test-tools.sh)"
    );
    None
}

/// Runs the SDK client script; returns its output and the JSON lines it printed.
async fn run_client(
    (node, sdk): &(PathBuf, PathBuf),
    transport: &str,
    url: &str,
    workspace: &Workspace,
    token: Option<&str>,
) -> (Output, Vec<Value>) {
    let mut command = tokio::process::Command::new(node);
    command
        .arg(repo_root().join("tests/e2e/acp_ts_sdk.mjs"))
        .arg(sdk)
        .arg(transport)
        .arg(url)
        .arg(workspace.root())
        .arg("Please say goodbye instead")
        .env("ACP_EXPECT_TEXT", "The greeting now says goodbye.")
        .env_remove("LODE_ACP_TOKEN")
        .kill_on_drop(true);
    if let Some(token) = token {
        command.env("LODE_ACP_TOKEN", token);
    }
    let output = tokio::time::timeout(support::PATIENCE, command.output())
        .await
        .expect("the SDK client finished in time")
        .expect("node runs");
    let lines = String::from_utf8_lossy(&output.stdout)
        .lines()
        .map(|line| {
            serde_json::from_str(line)
                .unwrap_or_else(|e| panic!("the client printed non-JSON {line:?}: {e}"))
        })
        .collect();
    (output, lines)
}

fn step<'a>(lines: &'a [Value], name: &str, output: &Output) -> &'a Value {
    lines
        .iter()
        .find(|line| line["step"] == name)
        .unwrap_or_else(|| panic!("no {name} step; {}", explain(output)))
}

/// One approved edit through `transport`: the whole exchange as the SDK saw it, and the file.
/// Without `token`, the server uses the token it generated.
async fn approved_edit(transport: &str, token: Option<&str>) {
    let Some(tools) = tools() else { return };
    let workspace = Workspace::new("acp_edit.json");
    let server: HttpServer = match token {
        Some(token) => workspace.serve_http(&["--token", token]).await,
        None => workspace.serve_http(&[]).await,
    };
    let url = format!("{transport}://{}/acp", server.addr);
    let (output, lines) =
        run_client(&tools, transport, &url, &workspace, Some(&server.token)).await;
    assert!(output.status.success(), "{}", explain(&output));
    let steps: Vec<&str> = lines.iter().filter_map(|l| l["step"].as_str()).collect();
    assert_eq!(
        steps,
        [
            "initialize",
            "session/new",
            "session/request_permission",
            "session/prompt",
            "updates"
        ],
        "{}",
        explain(&output)
    );

    let init = step(&lines, "initialize", &output);
    assert_eq!(init["protocolVersion"], 1);
    assert_eq!(init["agentInfo"]["name"], "lode");
    let session = step(&lines, "session/new", &output);
    let session_id = session["sessionId"].as_str().unwrap();
    assert_eq!(session["modes"]["currentModeId"], "code");

    let question = step(&lines, "session/request_permission", &output);
    assert_eq!(question["sessionId"], session_id);
    assert_eq!(question["toolCall"]["kind"], "edit");
    assert_eq!(question["toolCall"]["rawInput"]["path"], "src/main.rs");
    assert_eq!(
        question["options"],
        serde_json::json!(["allow_once", "allow_always", "reject_once", "reject_always"])
    );

    assert_eq!(
        step(&lines, "session/prompt", &output)["stopReason"],
        "end_turn"
    );
    let updates = step(&lines, "updates", &output);
    assert_eq!(
        updates["text"],
        "Changing the greeting.The greeting now says goodbye."
    );
    let finished = updates["toolCalls"]
        .as_array()
        .unwrap()
        .iter()
        .find(|u| u["status"] == "completed")
        .unwrap_or_else(|| panic!("no completed tool call; {}", explain(&output)));
    let diff = &finished["content"][0];
    assert_eq!(diff["type"], "diff");
    assert!(diff["newText"].as_str().unwrap().contains("goodbye"));

    let source = std::fs::read_to_string(workspace.root().join("src/main.rs")).unwrap();
    assert!(
        source.contains("goodbye") && !source.contains("hello"),
        "{source}"
    );
}

#[tokio::test]
async fn the_http_client_edits_a_file_after_a_permission_round_trip_with_the_generated_token() {
    approved_edit("http", None).await;
}

#[tokio::test]
async fn the_websocket_client_does_the_same_with_the_token() {
    approved_edit("ws", Some("open-sesame")).await;
}

#[tokio::test]
async fn without_the_token_the_sdk_gets_401_and_nothing_runs() {
    let Some(tools) = tools() else { return };
    let workspace = Workspace::new("acp_edit.json");
    let server = workspace.serve_http(&["--token", "open-sesame"]).await;
    let http = format!("http://{}/acp", server.addr);
    for token in [None, Some("wrong")] {
        let (output, lines) = run_client(&tools, "http", &http, &workspace, token).await;
        assert_eq!(output.status.code(), Some(2), "{}", explain(&output));
        let error = step(&lines, "error", &output);
        assert!(
            error["message"].as_str().unwrap().contains("401"),
            "{}",
            explain(&output)
        );
        assert!(!lines.iter().any(|l| l["step"] == "initialize"));
    }

    // Node's WebSocket hides the status of a refused upgrade, so the SDK only learns that the
    // socket failed; the same upgrade request shows the 401 itself.
    let ws = format!("ws://{}/acp", server.addr);
    let (output, lines) = run_client(&tools, "ws", &ws, &workspace, Some("wrong")).await;
    assert_eq!(output.status.code(), Some(2), "{}", explain(&output));
    assert!(!lines.iter().any(|l| l["step"] == "initialize"));
    let upgrade = reqwest::Client::new()
        .get(&http)
        .header("connection", "upgrade")
        .header("upgrade", "websocket")
        .header("sec-websocket-version", "13")
        .header("sec-websocket-key", "dGhlIHNhbXBsZSBub25jZQ==")
        .header("authorization", "Bearer wrong")
        .send()
        .await
        .unwrap();
    assert_eq!(upgrade.status(), 401);

    let source = std::fs::read_to_string(workspace.root().join("src/main.rs")).unwrap();
    assert!(source.contains("hello"), "{source}");
}
