//! The HTTP/WebSocket transport with real clients: the SDK's own `HttpClient` over HTTP + SSE and
//! over WebSocket against `http_router` on 127.0.0.1, plus the bearer token, `/health` and the
//! size limit checked with plain HTTP requests.

mod support;

use std::sync::Arc;

use agent_client_protocol::schema::ProtocolVersion;
use agent_client_protocol::v1::Responder;
use agent_client_protocol::v1::schema::{
    InitializeRequest, NewSessionRequest, PromptRequest, RequestPermissionOutcome,
    RequestPermissionRequest, RequestPermissionResponse, SelectedPermissionOutcome,
    SessionNotification, SessionUpdate, StopReason,
};
use agent_client_protocol::{Client, ConnectTo};
use agent_client_protocol_http::HttpClient;
use lode_acp::HttpOptions;
use support::ScriptedBackend;

async fn start(options: HttpOptions) -> (String, Arc<ScriptedBackend>) {
    let backend = Arc::new(ScriptedBackend::default());
    let listener = lode_acp::bind_http("127.0.0.1:0".parse().unwrap(), &options)
        .await
        .unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(lode_acp::serve_http(backend.clone(), listener, options));
    (format!("{addr}"), backend)
}

/// Runs `stream` then `permission` turns through `transport`, answering the question with
/// `reject_once`; returns the stop reasons and the updates seen.
async fn drive(
    transport: impl ConnectTo<Client> + 'static,
) -> (Vec<StopReason>, Vec<SessionUpdate>) {
    let (updates_tx, mut updates_rx) = tokio::sync::mpsc::unbounded_channel();
    let stop_reasons = Client
        .v1()
        .on_receive_notification(
            async move |notification: SessionNotification, _cx| {
                let _ = updates_tx.send(notification.update);
                Ok(())
            },
            agent_client_protocol::on_receive_notification!(),
        )
        .on_receive_request(
            async |_question: RequestPermissionRequest,
                   responder: Responder<RequestPermissionResponse>,
                   _cx| {
                responder.respond(RequestPermissionResponse::new(
                    RequestPermissionOutcome::Selected(SelectedPermissionOutcome::new(
                        "reject_once",
                    )),
                ))
            },
            agent_client_protocol::on_receive_request!(),
        )
        .connect_with(transport, async |cx| {
            cx.send_request(InitializeRequest::new(ProtocolVersion::V1))
                .block_task()
                .await?;
            let session = cx
                .send_request(NewSessionRequest::new("/work/project"))
                .block_task()
                .await?;
            let mut reasons = Vec::new();
            for text in ["stream", "permission"] {
                let response = cx
                    .send_request(PromptRequest::new(
                        session.session_id.clone(),
                        vec![text.into()],
                    ))
                    .block_task()
                    .await?;
                reasons.push(response.stop_reason);
            }
            Ok(reasons)
        })
        .await
        .expect("the ACP exchange succeeds");
    let mut updates = Vec::new();
    while let Ok(update) = updates_rx.try_recv() {
        updates.push(update);
    }
    (stop_reasons, updates)
}

fn message_text(updates: &[SessionUpdate]) -> String {
    updates
        .iter()
        .filter_map(|update| match update {
            SessionUpdate::AgentMessageChunk(chunk) => match &chunk.content {
                agent_client_protocol::v1::schema::ContentBlock::Text(text) => {
                    Some(text.text.clone())
                }
                _ => None,
            },
            _ => None,
        })
        .collect()
}

#[tokio::test]
async fn http_and_sse_carry_a_full_turn_and_a_permission_round_trip() {
    let (addr, backend) = start(HttpOptions::default()).await;
    let client = HttpClient::new(format!("http://{addr}")).unwrap();
    let (reasons, updates) = drive(client).await;
    assert_eq!(reasons, [StopReason::EndTurn, StopReason::EndTurn]);
    assert_eq!(message_text(&updates), "Hello worldanswer: reject_once");
    assert!(
        updates
            .iter()
            .any(|u| matches!(u, SessionUpdate::ToolCall(call) if &*call.tool_call_id.0 == "c1"))
    );
    assert_eq!(*backend.answers.lock().unwrap(), ["reject_once"]);
}

#[tokio::test]
async fn websocket_carries_the_same_exchange() {
    let (addr, backend) = start(HttpOptions::default()).await;
    let client = HttpClient::new(format!("ws://{addr}")).unwrap();
    let (reasons, updates) = drive(client).await;
    assert_eq!(reasons, [StopReason::EndTurn, StopReason::EndTurn]);
    assert_eq!(message_text(&updates), "Hello worldanswer: reject_once");
    assert_eq!(*backend.answers.lock().unwrap(), ["reject_once"]);
}

#[tokio::test]
async fn a_token_guards_the_endpoint_but_not_health() {
    let options = HttpOptions {
        token: Some("s3cret".into()),
    };
    let (addr, _backend) = start(options).await;
    let http = reqwest::Client::new();
    let initialize =
        r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1}}"#;
    let refused = http
        .post(format!("http://{addr}/acp"))
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .body(initialize)
        .send()
        .await
        .unwrap();
    assert_eq!(refused.status(), 401);
    let wrong = http
        .post(format!("http://{addr}/acp"))
        .bearer_auth("guess")
        .body(initialize)
        .send()
        .await
        .unwrap();
    assert_eq!(wrong.status(), 401);
    let health = http
        .get(format!("http://{addr}/health"))
        .send()
        .await
        .unwrap();
    assert!(health.status().is_success());

    let client = HttpClient::builder(format!("http://{addr}"))
        .configure_http(|http| {
            let mut headers = reqwest::header::HeaderMap::new();
            headers.insert(
                reqwest::header::AUTHORIZATION,
                reqwest::header::HeaderValue::from_static("Bearer s3cret"),
            );
            http.default_headers(headers)
        })
        .build()
        .unwrap();
    let (reasons, _) = drive(client).await;
    assert_eq!(reasons, [StopReason::EndTurn, StopReason::EndTurn]);
}

#[tokio::test]
async fn bodies_over_one_mebibyte_are_refused() {
    let (addr, _backend) = start(HttpOptions::default()).await;
    let body = format!(
        r#"{{"jsonrpc":"2.0","id":1,"method":"initialize","params":{{"pad":"{}"}}}}"#,
        "x".repeat(lode_acp::MAX_MESSAGE_BYTES)
    );
    let response = reqwest::Client::new()
        .post(format!("http://{addr}/acp"))
        .header("content-type", "application/json")
        .body(body)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 413);
}
