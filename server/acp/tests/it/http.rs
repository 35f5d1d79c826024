//! The HTTP/WebSocket transport with real clients: the SDK's own `HttpClient` over HTTP + SSE and
//! over WebSocket against `serve_http` on 127.0.0.1, plus the bearer token, `/health` and the
//! size limit checked with plain HTTP requests. (The Host and Origin checks, case by case, are
//! in the repository's `tests/e2e/acp_http_security.rs`, against the real binary.)

use crate::support;

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

/// The bearer token of every server here.
const TOKEN: &str = "s3cret";

fn options() -> HttpOptions {
    HttpOptions::new(TOKEN)
}

/// An SDK client of `url` that sends the token.
fn client(url: String) -> HttpClient {
    HttpClient::builder(url)
        .configure_http(|http| {
            let mut headers = reqwest::header::HeaderMap::new();
            headers.insert(
                reqwest::header::AUTHORIZATION,
                reqwest::header::HeaderValue::from_static("Bearer s3cret"),
            );
            http.default_headers(headers)
        })
        .build()
        .unwrap()
}

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
    let (addr, backend) = start(options()).await;
    let (reasons, updates) = drive(client(format!("http://{addr}"))).await;
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
    let (addr, backend) = start(options()).await;
    let (reasons, updates) = drive(client(format!("ws://{addr}"))).await;
    assert_eq!(reasons, [StopReason::EndTurn, StopReason::EndTurn]);
    assert_eq!(message_text(&updates), "Hello worldanswer: reject_once");
    assert_eq!(*backend.answers.lock().unwrap(), ["reject_once"]);
}

#[tokio::test]
async fn a_token_guards_the_endpoint_but_not_health() {
    let (addr, _backend) = start(options()).await;
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

    let (reasons, _) = drive(client(format!("http://{addr}"))).await;
    assert_eq!(reasons, [StopReason::EndTurn, StopReason::EndTurn]);
}

#[tokio::test]
async fn host_and_origin_are_checked_on_every_route_before_the_token() {
    let (addr, backend) = start(HttpOptions {
        allow_origins: vec!["http://localhost:5173".into()],
        ..options()
    })
    .await;
    let port = addr.rsplit_once(':').unwrap().1.to_string();
    let http = reqwest::Client::new();
    let upgrade = |host: &str, origin: Option<&str>| {
        let mut request = http
            .get(format!("http://{addr}/acp"))
            .header("host", host)
            .header("connection", "upgrade")
            .header("upgrade", "websocket")
            .header("sec-websocket-version", "13")
            .header("sec-websocket-key", "dGhlIHNhbXBsZSBub25jZQ==")
            .bearer_auth(TOKEN);
        if let Some(origin) = origin {
            request = request.header("origin", origin);
        }
        request.send()
    };
    let local = format!("localhost:{port}");
    let cases = [
        (
            upgrade(&local, Some("http://evil.example")).await.unwrap(),
            403,
        ),
        (upgrade("evil.example", None).await.unwrap(), 421),
        (
            upgrade(&local, Some("http://localhost:5173"))
                .await
                .unwrap(),
            101,
        ),
        (upgrade(&local, None).await.unwrap(), 101),
        (
            http.get(format!("http://{addr}/health"))
                .header("host", "evil.example")
                .send()
                .await
                .unwrap(),
            421,
        ),
        (
            http.get(format!("http://{addr}/health"))
                .send()
                .await
                .unwrap(),
            200,
        ),
    ];
    let statuses: Vec<u16> = cases.iter().map(|(r, _)| r.status().as_u16()).collect();
    let expected: Vec<u16> = cases.iter().map(|(_, s)| *s).collect();
    assert_eq!(statuses, expected);
    assert!(backend.answers.lock().unwrap().is_empty());
}

#[tokio::test]
async fn bodies_over_one_mebibyte_are_refused() {
    let (addr, _backend) = start(options()).await;
    let body = format!(
        r#"{{"jsonrpc":"2.0","id":1,"method":"initialize","params":{{"pad":"{}"}}}}"#,
        "x".repeat(lode_acp::MAX_MESSAGE_BYTES)
    );
    let response = reqwest::Client::new()
        .post(format!("http://{addr}/acp"))
        .bearer_auth(TOKEN)
        .header("content-type", "application/json")
        .body(body)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 413);
}

#[tokio::test]
async fn streamed_bodies_over_one_mebibyte_are_refused_too() {
    let (addr, _backend) = start(options()).await;
    // No Content-Length: the body arrives in chunks and is counted as it comes.
    let chunk = bytes_of(64 * 1024);
    let chunks = (0..20).map(move |_| Ok::<_, std::io::Error>(chunk.clone()));
    let response = reqwest::Client::new()
        .post(format!("http://{addr}/acp"))
        .bearer_auth(TOKEN)
        .header("content-type", "application/json")
        .body(reqwest::Body::wrap_stream(futures::stream::iter(chunks)))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 413);
    let health = reqwest::get(format!("http://{addr}/health")).await.unwrap();
    assert!(health.status().is_success());
}

fn bytes_of(len: usize) -> Vec<u8> {
    vec![b' '; len]
}

/// A bare WebSocket client: the upgrade by hand, then frames with a zero mask (a mask of zeros
/// leaves the payload as it is, which RFC 6455 allows).
struct RawSocket {
    stream: tokio::net::TcpStream,
}

impl RawSocket {
    async fn connect(addr: &str) -> RawSocket {
        use tokio::io::{AsyncBufReadExt, AsyncWriteExt};
        let mut stream = tokio::net::TcpStream::connect(addr).await.unwrap();
        let request = format!(
            "GET /acp HTTP/1.1\r\nHost: {addr}\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\
             Sec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\
             Authorization: Bearer {TOKEN}\r\n\r\n"
        );
        stream.write_all(request.as_bytes()).await.unwrap();
        let mut reader = tokio::io::BufReader::new(&mut stream);
        let mut status = String::new();
        reader.read_line(&mut status).await.unwrap();
        assert!(status.contains(" 101 "), "{status}");
        loop {
            let mut line = String::new();
            reader.read_line(&mut line).await.unwrap();
            if line == "\r\n" {
                break;
            }
        }
        assert!(reader.buffer().is_empty());
        RawSocket { stream }
    }

    async fn send_text(&mut self, text: &[u8]) {
        use tokio::io::AsyncWriteExt;
        let mut frame = vec![0x81u8];
        match text.len() {
            len @ 0..=125 => frame.push(0x80 | len as u8),
            len @ 126..=65535 => {
                frame.push(0x80 | 126);
                frame.extend_from_slice(&(len as u16).to_be_bytes());
            }
            len => {
                frame.push(0x80 | 127);
                frame.extend_from_slice(&(len as u64).to_be_bytes());
            }
        }
        frame.extend_from_slice(&[0, 0, 0, 0]);
        frame.extend_from_slice(text);
        // The server may close before taking the whole of an oversized frame.
        let _ = self.stream.write_all(&frame).await;
    }

    /// The next frame from the server: opcode and payload.
    async fn next_frame(&mut self) -> (u8, Vec<u8>) {
        use tokio::io::AsyncReadExt;
        let mut head = [0u8; 2];
        self.stream.read_exact(&mut head).await.unwrap();
        let len = match head[1] & 0x7f {
            126 => u64::from(self.stream.read_u16().await.unwrap()),
            127 => self.stream.read_u64().await.unwrap(),
            len => u64::from(len),
        };
        let mut payload = vec![0u8; len as usize];
        self.stream.read_exact(&mut payload).await.unwrap();
        (head[0] & 0x0f, payload)
    }

    /// Reads frames until a text frame or a close arrives.
    async fn next_message(&mut self) -> (u8, Vec<u8>) {
        loop {
            let (opcode, payload) =
                tokio::time::timeout(std::time::Duration::from_secs(20), self.next_frame())
                    .await
                    .expect("the server answered in time");
            if opcode == 0x1 || opcode == 0x8 {
                return (opcode, payload);
            }
        }
    }
}

#[tokio::test]
async fn a_websocket_message_over_one_mebibyte_closes_that_socket_with_1009_only() {
    let (addr, _backend) = start(options()).await;
    let mut bystander = RawSocket::connect(&addr).await;
    let mut sender = RawSocket::connect(&addr).await;

    // A message of exactly the limit is read (and answered: it is not JSON-RPC).
    let mut exact = bytes_of(lode_acp::MAX_MESSAGE_BYTES);
    exact[0] = b'x';
    sender.send_text(&exact).await;
    let (opcode, answer) = sender.next_message().await;
    assert_eq!(opcode, 0x1);
    let answer: serde_json::Value = serde_json::from_slice(&answer).unwrap();
    assert_eq!(answer["error"]["code"], -32700, "{answer}");

    // One byte more closes the socket: 1009, with the limit as the reason.
    sender
        .send_text(&bytes_of(lode_acp::MAX_MESSAGE_BYTES + 1))
        .await;
    let (opcode, close) = sender.next_message().await;
    assert_eq!(opcode, 0x8, "a close frame");
    assert_eq!(u16::from_be_bytes([close[0], close[1]]), 1009);
    let reason = String::from_utf8_lossy(&close[2..]);
    assert!(reason.contains("1 MiB"), "{reason}");

    // The other socket, and the server, carry on.
    bystander
        .send_text(
            br#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1}}"#,
        )
        .await;
    let (opcode, answer) = bystander.next_message().await;
    assert_eq!(opcode, 0x1);
    let answer: serde_json::Value = serde_json::from_slice(&answer).unwrap();
    assert_eq!(answer["result"]["protocolVersion"], 1, "{answer}");
    let (stop, _) = drive(client(format!("ws://{addr}"))).await;
    assert_eq!(stop, [StopReason::EndTurn, StopReason::EndTurn]);
}
