//! `lode acp --http` end to end: the real binary serving the HTTP/WebSocket transport, driven by
//! the SDK's `HttpClient` (HTTP + SSE, and WebSocket) through a full turn, and the bearer token
//! guarding it. The Host, Origin and token checks case by case are in `acp_http_security.rs`.

use crate::acp_support as support;

use agent_client_protocol::schema::ProtocolVersion;
use agent_client_protocol::v1::schema::{
    InitializeRequest, NewSessionRequest, PromptRequest, StopReason,
};
use support::{Seen, Workspace, agent_text, authorized_client, with_client};

async fn one_turn(
    client: agent_client_protocol_http::HttpClient,
    workspace: &Workspace,
) -> (StopReason, String) {
    let seen = Seen::default();
    let root = workspace.root();
    let stop = with_client(client, "reject_once", seen.clone(), async |cx| {
        cx.send_request(InitializeRequest::new(ProtocolVersion::V1))
            .block_task()
            .await?;
        let session = cx
            .send_request(NewSessionRequest::new(root))
            .block_task()
            .await?;
        let response = cx
            .send_request(PromptRequest::new(
                session.session_id,
                vec!["Say hello".into()],
            ))
            .block_task()
            .await?;
        Ok(response.stop_reason)
    })
    .await;
    let expected = "Hello from the scripted server. I stream in small pieces.";
    // Updates travel on the session's SSE stream, the response on the POST: wait for all text.
    seen.wait_for("the whole answer", |_| {
        agent_text(&seen.updates()) == expected
    })
    .await;
    (stop, agent_text(&seen.updates()))
}

#[tokio::test]
async fn http_and_websocket_clients_run_turns_against_one_server() {
    let workspace = Workspace::new("hello.json");
    let server = workspace.serve_http(&[]).await;
    let addr = &server.addr;
    let health = reqwest::get(format!("http://{addr}/health")).await.unwrap();
    assert!(health.status().is_success());

    // No --token: lode generated one (kept in its runtime directory), and clients send it.
    let client = authorized_client(&format!("http://{addr}"), &server.token);
    let (stop, text) = one_turn(client, &workspace).await;
    assert_eq!(stop, StopReason::EndTurn);
    assert_eq!(
        text,
        "Hello from the scripted server. I stream in small pieces."
    );
}

#[tokio::test]
async fn a_token_is_required_when_set() {
    let workspace = Workspace::new("hello.json");
    let server = workspace.serve_http(&["--token", "open-sesame"]).await;
    let addr = &server.addr;
    let refused = reqwest::Client::new()
        .post(format!("http://{addr}/acp"))
        .header("content-type", "application/json")
        .body(r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1}}"#)
        .send()
        .await
        .unwrap();
    assert_eq!(refused.status(), 401);

    assert_eq!(
        refused.text().await.unwrap(),
        "missing or wrong bearer token: send `Authorization: Bearer TOKEN` with the --token lode \
         was started with, or else the token in the acp-token file it named at start"
    );
    // An explicit token is used as is: no token file is made.
    assert!(!server.runtime_dir.path().join("lode/acp-token").exists());

    let client = authorized_client(&format!("ws://{addr}"), "open-sesame");
    let (stop, _) = one_turn(client, &workspace).await;
    assert_eq!(stop, StopReason::EndTurn);
}

#[tokio::test]
async fn a_public_address_without_a_token_is_refused() {
    let workspace = Workspace::new("hello.json");
    let runtime = support::runtime_dir();
    let output = tokio::process::Command::new(support::lode())
        .arg("--root")
        .arg(workspace.root())
        .args(["acp", "--http", "0.0.0.0:0"])
        .env_remove("LODE_ACP_TOKEN")
        .env("XDG_RUNTIME_DIR", runtime.path())
        .env("XDG_CONFIG_HOME", runtime.path().join("config"))
        .output()
        .await
        .unwrap();
    assert!(!output.status.success());
    assert!(
        String::from_utf8_lossy(&output.stderr).contains("bearer token"),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(output.stdout.is_empty());
    // A generated token does not count, and none is made.
    assert!(!runtime.path().join("lode").exists());
}
