//! stdio for `lode lsp`: the LSP half of `lode_wire`'s guard in front of the protocol library.
//! It refuses oversized messages and broken headers with a JSON-RPC error (instead of
//! buffering without bound), answers what the library cannot decode, and answers outlines of
//! open buffers itself ([`crate::direct`]); `lode_wire` interleaves the server's messages and
//! these answers whole on one writer.

use std::ops::ControlFlow;
use std::sync::Arc;

use lode_wire::{Doors, Frame, Gate, GuardedPipes};
use serde::Deserialize;
use tokio::io::{AsyncRead, AsyncWrite};
use tower_lsp_server::jsonrpc::{Request, Response};

use crate::direct::DirectAnswers;
use crate::framing::{FRAMING, request_id_in};

/// Puts the guard between `input`/`output` and a server. Outlines of open buffers are answered
/// here when `direct` can ([`crate::direct`]).
pub fn guard<I, O>(
    input: I,
    output: O,
    max_message_bytes: usize,
    direct: Arc<DirectAnswers>,
) -> GuardedPipes
where
    I: AsyncRead + Unpin + Send + 'static,
    O: AsyncWrite + Unpin + Send + 'static,
{
    let gate = LspGate {
        max_message_bytes,
        direct,
    };
    lode_wire::guard(input, output, FRAMING, max_message_bytes, gate)
}

/// What `lode lsp` does with each frame from the client.
struct LspGate {
    max_message_bytes: usize,
    direct: Arc<DirectAnswers>,
}

impl Gate for LspGate {
    async fn incoming(&self, frame: Frame, doors: &Doors) -> ControlFlow<()> {
        if let Frame::Message(body) = &frame {
            tracing::trace!(bytes = body.len(), "a message from the client");
        }
        match frame {
            Frame::Message(body) => match check_message(&body) {
                Ok(message) => {
                    self.direct.observe(&message);
                    if let Some(request) = self.direct.outline_request(&message) {
                        let (direct, doors) = (self.direct.clone(), doors.clone());
                        tokio::spawn(async move {
                            match direct.answer(&request).await {
                                Some(reply) => doors.answer(reply),
                                None => {
                                    let _ = doors.forward(body).await;
                                }
                            }
                        });
                        return ControlFlow::Continue(());
                    }
                    if doors.forward(body).await.is_err() {
                        return ControlFlow::Break(()); // the server has stopped
                    }
                }
                // The protocol library stops reading after a message it cannot decode:
                // answer those here and keep the connection.
                Err((id, code, message)) => {
                    tracing::warn!("{message}");
                    doors.answer(error_response(id, code, &message));
                }
            },
            Frame::Oversized { length, head } => {
                let message = format!(
                    "message of {length} bytes is larger than the limit of {} bytes; it was discarded",
                    self.max_message_bytes
                );
                tracing::warn!("{message}");
                let id = request_id_in(&head).unwrap_or(serde_json::Value::Null);
                doors.answer(error_response(id, -32600, &message));
            }
            Frame::BadHeader(problem) => {
                tracing::warn!("unreadable message header: {problem}");
                let message = format!("unreadable message header: {problem}");
                doors.answer(error_response(serde_json::Value::Null, -32700, &message));
            }
        }
        ControlFlow::Continue(())
    }

    fn input_failed(&self, error: &std::io::Error) {
        tracing::warn!(%error, "input ended");
    }
}

/// The message, when a body is a JSON-RPC request, notification or response; otherwise the
/// error to answer with: (id, code, message).
fn check_message(body: &[u8]) -> Result<serde_json::Value, (serde_json::Value, i64, String)> {
    let value: serde_json::Value = serde_json::from_slice(body).map_err(|error| {
        (
            serde_json::Value::Null,
            -32700,
            format!("message is not valid JSON: {error}"),
        )
    })?;
    // Checked on the parsed value in place (a `didOpen` of a large file is not copied).
    if Request::deserialize(&value).is_ok() || Response::deserialize(&value).is_ok() {
        return Ok(value);
    }
    let id = value
        .get("id")
        .filter(|id| id.is_number() || id.is_string())
        .cloned()
        .unwrap_or(serde_json::Value::Null);
    Err((
        id,
        -32600,
        "message is not a JSON-RPC 2.0 request, notification or response".into(),
    ))
}

fn error_response(id: serde_json::Value, code: i64, message: &str) -> Vec<u8> {
    serde_json::json!({
        "jsonrpc": "2.0",
        "id": id,
        "error": { "code": code, "message": message },
    })
    .to_string()
    .into_bytes()
}
