//! stdio for `lode lsp`: a guard in front of the protocol library that refuses oversized
//! messages and broken headers with a JSON-RPC error (instead of buffering without bound),
//! and one writer that interleaves the server's messages and the guard's errors whole.

use std::sync::Arc;

use serde::Deserialize;
use tokio::io::{AsyncRead, AsyncWrite, BufReader, DuplexStream};
use tokio::sync::mpsc;
use tower_lsp_server::jsonrpc::{Request, Response};

use crate::direct::DirectAnswers;
use crate::framing::{Frame, read_frame, request_id_in, write_frame};

/// Size of the in-process pipes between the guard and the protocol library.
const PIPE_BYTES: usize = 256 * 1024;

/// The two ends the protocol library reads and writes, and the tasks that connect them to
/// the real input and output.
pub struct GuardedPipes {
    pub server_input: DuplexStream,
    pub server_output: DuplexStream,
    pub input_task: tokio::task::JoinHandle<()>,
    pub output_task: tokio::task::JoinHandle<()>,
}

/// Messages queued between the guard and the protocol library (the guard waits beyond this,
/// so a flooding client is slowed down rather than buffered without bound).
const FORWARD_QUEUE: usize = 64;

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
    let (mut to_server, server_input) = tokio::io::duplex(PIPE_BYTES);
    let (server_output, from_server) = tokio::io::duplex(PIPE_BYTES);
    // Answers written by the guard itself: its errors, and the outlines it answers.
    let (errors, error_queue) = mpsc::unbounded_channel::<Vec<u8>>();
    let (forward, mut forwarded) = mpsc::channel::<Vec<u8>>(FORWARD_QUEUE);

    let forward_task = tokio::spawn(async move {
        while let Some(body) = forwarded.recv().await {
            if write_frame(&mut to_server, &body).await.is_err() {
                break; // the server has stopped
            }
        }
        // Dropping `to_server` tells the server its input ended.
    });

    let input_task = tokio::spawn(async move {
        let mut input = BufReader::new(input);
        loop {
            let frame = match read_frame(&mut input, max_message_bytes).await {
                Ok(Some(frame)) => frame,
                Ok(None) => break,
                Err(error) => {
                    eprintln!("lode lsp: input ended: {error}");
                    break;
                }
            };
            match frame {
                Frame::Message(body) => match check_message(&body) {
                    Ok(message) => {
                        direct.observe(&message);
                        if let Some(request) = direct.outline_request(&message) {
                            let (direct, replies, forward) =
                                (direct.clone(), errors.clone(), forward.clone());
                            tokio::spawn(async move {
                                match direct.answer(&request).await {
                                    Some(reply) => {
                                        let _ = replies.send(reply);
                                    }
                                    None => {
                                        let _ = forward.send(body).await;
                                    }
                                }
                            });
                            continue;
                        }
                        if forward.send(body).await.is_err() {
                            break; // the server has stopped
                        }
                    }
                    // The protocol library stops reading after a message it cannot decode:
                    // answer those here and keep the connection.
                    Err((id, code, message)) => {
                        eprintln!("lode lsp: {message}");
                        let _ = errors.send(error_response(id, code, &message));
                    }
                },
                Frame::Oversized { length, head } => {
                    let message = format!(
                        "message of {length} bytes is larger than the limit of {max_message_bytes} bytes; it was discarded"
                    );
                    eprintln!("lode lsp: {message}");
                    let id = request_id_in(&head).unwrap_or(serde_json::Value::Null);
                    let _ = errors.send(error_response(id, -32600, &message));
                }
                Frame::BadHeader(problem) => {
                    eprintln!("lode lsp: unreadable message header: {problem}");
                    let message = format!("unreadable message header: {problem}");
                    let _ = errors.send(error_response(serde_json::Value::Null, -32700, &message));
                }
            }
        }
        // The forwarder ends once every sender (this loop's and any pending answer's) is gone.
        drop(forward);
        let _ = forward_task.await;
    });

    let output_task = tokio::spawn(async move {
        let mut output = output;
        let mut from_server = BufReader::new(from_server);
        let mut error_queue = error_queue;
        let mut errors_open = true;
        loop {
            tokio::select! {
                frame = read_frame(&mut from_server, usize::MAX) => {
                    match frame {
                        Ok(Some(Frame::Message(body))) => {
                            if write_frame(&mut output, &body).await.is_err() {
                                break;
                            }
                        }
                        Ok(Some(_)) => {}
                        Ok(None) | Err(_) => break,
                    }
                }
                error = error_queue.recv(), if errors_open => {
                    match error {
                        Some(body) => {
                            if write_frame(&mut output, &body).await.is_err() {
                                break;
                            }
                        }
                        None => errors_open = false,
                    }
                }
            }
        }
    });

    GuardedPipes {
        server_input,
        server_output,
        input_task,
        output_task,
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
