//! stdio for `lode mcp`: the MCP half of `lode_wire`'s guard in front of rmcp. It reads
//! newline-delimited JSON-RPC with a size cap and answers what rmcp would drop silently or die
//! on — lines that are not JSON (`-32700`), oversized lines, batches and other invalid requests
//! (`-32600`), requests before the lifecycle started (`-32600`); `lode_wire` interleaves rmcp's
//! messages and these answers whole on one writer, so stdout only ever carries complete MCP
//! frames.

use std::collections::HashMap;
use std::ops::ControlFlow;

use lode_wire::{Doors, Frame, Framing, Gate, GuardedPipes};
use parking_lot::Mutex;
use serde_json::{Value, json};
use tokio::io::AsyncWrite;
use tokio::sync::watch;

/// Methods rmcp answers before a lifecycle is chosen.
const OPENING_METHODS: [&str; 3] = ["initialize", "ping", "server/discover"];

/// What the guard does with one line.
#[derive(Debug, PartialEq)]
pub enum Verdict {
    /// Pass it to rmcp. `request` is the id and method when it is a request.
    Forward { request: Option<(Value, String)> },
    /// Answer it here with this error response.
    Answer(Value),
    /// Drop it (a notification or response that rmcp cannot take yet, an empty line).
    Drop(String),
}

/// JSON-RPC error response with `id` (null when it cannot be known).
pub fn error_response(id: Value, code: i64, message: &str) -> Value {
    json!({ "jsonrpc": "2.0", "id": id, "error": { "code": code, "message": message } })
}

/// Judges one line. `started` says whether rmcp has begun a lifecycle (answered an
/// `initialize` or an inline-metadata request with a result).
pub fn judge(line: &[u8], started: bool) -> Verdict {
    if line.iter().all(u8::is_ascii_whitespace) {
        return Verdict::Drop("empty line".into());
    }
    let value: Value = match serde_json::from_slice(line) {
        Ok(value) => value,
        Err(error) => {
            return Verdict::Answer(error_response(
                Value::Null,
                -32700,
                &format!("parse error: the message is not JSON ({error})"),
            ));
        }
    };
    let invalid = |id: Value, why: &str| {
        Verdict::Answer(error_response(
            id,
            -32600,
            &format!("invalid request: {why}"),
        ))
    };
    let Value::Object(message) = value else {
        return if value.is_array() {
            invalid(
                Value::Null,
                "batches are not supported; send one message per line",
            )
        } else {
            invalid(Value::Null, "a message must be a JSON object")
        };
    };
    let id = message.get("id").cloned();
    let id_or_null = id.clone().unwrap_or(Value::Null);
    if message.get("jsonrpc").and_then(Value::as_str) != Some("2.0") {
        return invalid(id_or_null, "`jsonrpc` must be \"2.0\"");
    }
    if let Some(id) = &id
        && !(id.is_string() || id.is_i64() || id.is_u64())
    {
        return invalid(Value::Null, "`id` must be a string or an integer");
    }
    let method = match message.get("method") {
        Some(Value::String(method)) => Some(method.clone()),
        Some(_) => return invalid(id_or_null, "`method` must be a string"),
        None => None,
    };
    if let Some(params) = message.get("params")
        && !params.is_object()
    {
        return Verdict::Answer(error_response(
            id_or_null,
            -32602,
            "invalid params: `params` must be an object",
        ));
    }
    match (method, id) {
        // A request.
        (Some(method), Some(id)) => {
            let inline_lifecycle = message
                .get("params")
                .and_then(|params| params.get("_meta"))
                .is_some();
            if !started && !OPENING_METHODS.contains(&method.as_str()) && !inline_lifecycle {
                return invalid(
                    id,
                    &format!("{method:?} before initialize: send `initialize` first"),
                );
            }
            Verdict::Forward {
                request: Some((id, method)),
            }
        }
        // A notification: rmcp ends the session on one before initialize.
        (Some(method), None) => {
            if started {
                Verdict::Forward { request: None }
            } else {
                Verdict::Drop(format!("notification {method:?} before initialize"))
            }
        }
        // A response (to a request lode sent) or an error object.
        (None, Some(_)) => {
            if started && (message.contains_key("result") || message.contains_key("error")) {
                Verdict::Forward { request: None }
            } else if message.contains_key("result") || message.contains_key("error") {
                Verdict::Drop("response before initialize".into())
            } else {
                invalid(id_or_null, "a message needs `method`, `result` or `error`")
            }
        }
        (None, None) => {
            if message.contains_key("error") || message.contains_key("result") {
                Verdict::Drop("response without an id".into())
            } else {
                invalid(Value::Null, "a message needs `method`, `result` or `error`")
            }
        }
    }
}

/// State the input and output sides share: which forwarded requests may start the
/// lifecycle, and whether one has.
#[derive(Default)]
struct Lifecycle {
    started: bool,
    /// id (as JSON text) → method, for requests forwarded before the lifecycle started.
    opening: HashMap<String, String>,
}

/// Puts the guard between `input`/`output` and rmcp.
pub fn guard<I, O>(input: I, output: O, max_message_bytes: usize) -> GuardedPipes
where
    I: tokio::io::AsyncRead + Unpin + Send + 'static,
    O: AsyncWrite + Unpin + Send + 'static,
{
    let gate = McpGate {
        max_message_bytes,
        lifecycle: Mutex::new(Lifecycle::default()),
        answered: watch::channel(0).0,
    };
    lode_wire::guard(input, output, Framing::Lines, max_message_bytes, gate)
}

/// What `lode mcp` does with each line from the client.
struct McpGate {
    max_message_bytes: usize,
    lifecycle: Mutex<Lifecycle>,
    /// Bumped by the output side each time rmcp answers an opening request.
    answered: watch::Sender<u64>,
}

impl Gate for McpGate {
    async fn incoming(&self, frame: Frame, doors: &Doors) -> ControlFlow<()> {
        let line = match frame {
            Frame::Message(line) => line,
            // Lines have no headers: anything else is an oversized line.
            Frame::Oversized { .. } | Frame::BadHeader(_) => {
                let message = format!(
                    "invalid request: the message is larger than {} bytes; it was discarded",
                    self.max_message_bytes
                );
                tracing::warn!("{message}");
                doors.answer(
                    error_response(Value::Null, -32600, &message)
                        .to_string()
                        .into_bytes(),
                );
                return ControlFlow::Continue(());
            }
        };
        let started = self.lifecycle.lock().started;
        tracing::trace!(bytes = line.len(), started, "a message from the client");
        match judge(&line, started) {
            Verdict::Forward { request } => {
                let opening = match (request, started) {
                    (Some((id, method)), false) => {
                        let key = id.to_string();
                        self.lifecycle.lock().opening.insert(key.clone(), method);
                        Some(key)
                    }
                    _ => None,
                };
                let mut answered = self.answered.subscribe();
                if doors.forward(line).await.is_err() {
                    return ControlFlow::Break(()); // rmcp has stopped
                }
                // Until the lifecycle has started, wait for each opening request's answer
                // so the next line is judged knowing whether it did (clients may pipeline
                // `notifications/initialized` and requests behind `initialize`).
                if let Some(key) = opening {
                    while self.lifecycle.lock().opening.contains_key(&key) {
                        if answered.changed().await.is_err() {
                            break;
                        }
                    }
                }
            }
            Verdict::Answer(response) => {
                if let Some(message) = response.pointer("/error/message").and_then(Value::as_str) {
                    tracing::warn!("{message}");
                }
                doors.answer(response.to_string().into_bytes());
            }
            Verdict::Drop(why) => {
                if why != "empty line" {
                    tracing::warn!("ignored a message: {why}");
                }
            }
        }
        ControlFlow::Continue(())
    }

    fn outgoing(&self, message: &[u8]) {
        if note_lifecycle(&self.lifecycle, message) {
            self.answered.send_modify(|count| *count += 1);
        }
    }

    fn input_failed(&self, error: &std::io::Error) {
        tracing::warn!(%error, "input ended");
    }
}

/// Notes rmcp's answer to an opening request (true when `line` is one), and marks the
/// lifecycle started when the answer to one other than `ping` and `server/discover` is a result.
fn note_lifecycle(lifecycle: &Mutex<Lifecycle>, line: &[u8]) -> bool {
    let mut state = lifecycle.lock();
    if state.opening.is_empty() {
        return false;
    }
    let Ok(Value::Object(message)) = serde_json::from_slice::<Value>(line) else {
        return false;
    };
    let Some(id) = message.get("id") else {
        return false;
    };
    if id.is_null() && message.contains_key("error") {
        // rmcp answers a request it cannot decode with a null id: that was the opening one.
        state.opening.clear();
        return true;
    }
    let Some(method) = state.opening.remove(&id.to_string()) else {
        return false;
    };
    if message.contains_key("result") && method != "ping" && method != "server/discover" {
        state.started = true;
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    fn code(verdict: &Verdict) -> Option<i64> {
        match verdict {
            Verdict::Answer(response) => response.pointer("/error/code").and_then(Value::as_i64),
            _ => None,
        }
    }

    #[test]
    fn lines_are_judged() {
        assert_eq!(code(&judge(b"not json", true)), Some(-32700));
        assert_eq!(code(&judge(b"[1,2]", true)), Some(-32600));
        assert_eq!(code(&judge(b"42", true)), Some(-32600));
        assert_eq!(
            code(&judge(br#"{"jsonrpc":"1.0","id":1,"method":"ping"}"#, true)),
            Some(-32600)
        );
        assert_eq!(
            code(&judge(
                br#"{"jsonrpc":"2.0","id":{"x":1},"method":"ping"}"#,
                true
            )),
            Some(-32600)
        );
        assert_eq!(
            code(&judge(
                br#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#,
                false
            )),
            Some(-32600)
        );
        assert_eq!(
            judge(br#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#, true),
            Verdict::Forward {
                request: Some((json!(1), "tools/list".into()))
            }
        );
        assert!(matches!(
            judge(
                br#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
                false
            ),
            Verdict::Drop(_)
        ));
        assert!(matches!(
            judge(
                br#"{"jsonrpc":"2.0","id":7,"method":"initialize","params":{}}"#,
                false
            ),
            Verdict::Forward { .. }
        ));
        assert!(matches!(judge(b"   ", false), Verdict::Drop(_)));
    }
}
