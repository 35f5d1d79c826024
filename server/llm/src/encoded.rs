//! Request bodies written from each message's JSON, remembered by content.
//!
//! Every request of a session carries the whole conversation so far; encoding it afresh each
//! time (a `serde_json::Value` tree per message, then the text) costs in proportion to the
//! session's length. A provider instead keeps each message's encoded JSON by the message's
//! content and writes the body from those pieces, so only the messages new since the previous
//! request are encoded. The body is the same JSON (as a value) as the one `encode_request` makes;
//! the providers' tests hold them equal.

use parking_lot::Mutex;
use std::collections::HashMap;
use std::sync::Arc;

use serde_json::Value;
use xxhash_rust::xxh3::Xxh3;

use super::{ContentPart, Message, Role};

/// Bytes of encoded messages remembered per generation; two generations are kept (as the token
/// memo does): when the current one is full it becomes the previous one, and a hit there is
/// carried over.
const GENERATION_BYTES: usize = 16 * 1024 * 1024;

/// Each message's encoded JSON, by the message's content.
#[derive(Default)]
pub(crate) struct EncodedMessages {
    memo: Mutex<Generations>,
}

#[derive(Default)]
struct Generations {
    current: HashMap<u128, Arc<str>>,
    current_bytes: usize,
    previous: HashMap<u128, Arc<str>>,
}

impl Generations {
    fn get(&mut self, key: u128) -> Option<Arc<str>> {
        if let Some(found) = self.current.get(&key) {
            return Some(found.clone());
        }
        let found = self.previous.get(&key)?.clone();
        self.insert(key, found.clone());
        Some(found)
    }

    fn insert(&mut self, key: u128, encoded: Arc<str>) {
        if self.current_bytes + encoded.len() > GENERATION_BYTES {
            self.previous = std::mem::take(&mut self.current);
            self.current_bytes = 0;
        }
        self.current_bytes += encoded.len();
        self.current.insert(key, encoded);
    }
}

impl std::fmt::Debug for EncodedMessages {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EncodedMessages").finish_non_exhaustive()
    }
}

impl EncodedMessages {
    /// `message` encoded by `encode` (JSON text, possibly empty: a message that sends nothing),
    /// remembered by the message's content.
    pub fn get(&self, message: &Message, encode: impl FnOnce(&Message) -> String) -> Arc<str> {
        let key = content_key(message);
        // The memo holds finished texts only; one left behind by a panic is still correct.
        if let Some(found) = self.memo.lock().get(key) {
            return found;
        }
        let encoded: Arc<str> = Arc::from(encode(message));
        self.memo.lock().insert(key, encoded.clone());
        encoded
    }
}

/// The 128-bit xxh3 hash of everything a message is encoded from.
fn content_key(message: &Message) -> u128 {
    let mut hasher = Xxh3::new();
    let mut text = |tag: u8, value: &str| {
        hasher.update(&[tag]);
        hasher.update(&(value.len() as u64).to_le_bytes());
        hasher.update(value.as_bytes());
    };
    text(
        0,
        match message.role {
            Role::User => "user",
            Role::Assistant => "assistant",
        },
    );
    for part in &message.content {
        match part {
            ContentPart::Text { text: value } => text(1, value),
            ContentPart::Context { text: value } => text(14, value),
            ContentPart::Thinking {
                text: value,
                signature,
            } => {
                text(2, value);
                match signature {
                    Some(signature) => text(3, signature),
                    None => text(4, ""),
                }
            }
            ContentPart::Image { mime_type, data } => {
                text(5, mime_type);
                text(6, data);
            }
            ContentPart::ToolCall(call) => {
                text(7, &call.id);
                text(8, &call.name);
                // A string argument (text that was not JSON) and the same text as JSON differ.
                match &call.arguments {
                    Value::String(raw) => text(9, raw),
                    other => text(10, &other.to_string()),
                }
            }
            ContentPart::ToolResult(result) => {
                text(11, &result.call_id);
                text(12, &result.content);
                text(13, if result.is_error { "error" } else { "ok" });
            }
        }
    }
    hasher.digest128()
}

/// A JSON object's text with `"messages": [pieces…]` first and then `rest`'s members (`rest`
/// must be an object without a `messages` member). Empty pieces (messages that send nothing)
/// are left out.
pub(crate) fn body_with_messages(pieces: &[Arc<str>], rest: &Value) -> Vec<u8> {
    let rest = rest.to_string();
    let members = rest
        .strip_prefix('{')
        .and_then(|inner| inner.strip_suffix('}'))
        .unwrap_or("");
    let size: usize = pieces.iter().map(|piece| piece.len() + 1).sum();
    let mut body = Vec::with_capacity(size + rest.len() + 16);
    body.extend_from_slice(b"{\"messages\":[");
    let mut first = true;
    for piece in pieces.iter().filter(|piece| !piece.is_empty()) {
        if !first {
            body.push(b',');
        }
        first = false;
        body.extend_from_slice(piece.as_bytes());
    }
    body.push(b']');
    if !members.is_empty() {
        body.push(b',');
        body.extend_from_slice(members.as_bytes());
    }
    body.push(b'}');
    body
}

/// JSON values as the comma-separated members of an array.
pub(crate) fn join_values(values: &[Value]) -> String {
    let mut out = String::new();
    for (index, value) in values.iter().enumerate() {
        if index > 0 {
            out.push(',');
        }
        out.push_str(&value.to_string());
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{ToolCall, ToolResult};

    #[test]
    fn different_contents_have_different_keys() {
        let call = |arguments: Value| Message {
            role: Role::Assistant,
            content: vec![ContentPart::ToolCall(ToolCall {
                id: "c1".into(),
                name: "read_file".into(),
                arguments,
            })],
        };
        let keys = [
            content_key(&Message::user_text("ab")),
            content_key(&Message {
                role: Role::Assistant,
                content: vec![ContentPart::Text { text: "ab".into() }],
            }),
            content_key(&Message {
                role: Role::User,
                content: vec![
                    ContentPart::Text { text: "a".into() },
                    ContentPart::Text { text: "b".into() },
                ],
            }),
            content_key(&call(serde_json::json!({"path": "a"}))),
            content_key(&call(Value::String("{\"path\":\"a\"}".into()))),
            content_key(&Message {
                role: Role::User,
                content: vec![ContentPart::ToolResult(ToolResult {
                    call_id: "c1".into(),
                    content: "x".into(),
                    is_error: false,
                })],
            }),
            content_key(&Message {
                role: Role::User,
                content: vec![ContentPart::ToolResult(ToolResult {
                    call_id: "c1".into(),
                    content: "x".into(),
                    is_error: true,
                })],
            }),
        ];
        for (index, key) in keys.iter().enumerate() {
            assert!(!keys[..index].contains(key), "{index}");
        }
        assert_eq!(
            content_key(&Message::user_text("ab")),
            content_key(&Message::user_text("ab"))
        );
    }

    #[test]
    fn the_body_is_the_messages_then_the_rest() {
        let pieces: Vec<Arc<str>> = vec![
            Arc::from("{\"a\":1}"),
            Arc::from(""),
            Arc::from("{\"b\":2},{\"c\":3}"),
        ];
        let rest = serde_json::json!({"model": "m", "stream": true});
        let body: Value = serde_json::from_slice(&body_with_messages(&pieces, &rest)).unwrap();
        assert_eq!(
            body,
            serde_json::json!({"messages": [{"a": 1}, {"b": 2}, {"c": 3}], "model": "m", "stream": true})
        );
        let body: Value =
            serde_json::from_slice(&body_with_messages(&[], &serde_json::json!({}))).unwrap();
        assert_eq!(body, serde_json::json!({"messages": []}));
    }
}
