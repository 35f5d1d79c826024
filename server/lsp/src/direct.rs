//! `textDocument/documentSymbol` for open buffers, answered at the transport and written
//! straight to the wire.
//!
//! The protocol library turns every result into a `serde_json::Value` tree before writing it:
//! for the outline of a generated 1 MiB file (8,000 symbols, seven maps each) that conversion
//! and its teardown were half of the CPU spent per keystroke. The outline is already computed
//! once per buffer version ([`crate::buffers`]); here it is serialized once, borrowed, with
//! nothing in between. The transport sees every message in order, so it knows the version
//! the editor sent last for each buffer and waits for exactly that version's analysis, as
//! the server's own handler does. Anything it cannot answer (a buffer not open or not yet
//! registered, a server not initialized or shut down) goes to the server as usual.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};

use parking_lot::Mutex;
use serde::Serialize;
use serde_json::Value;
use tower_lsp_server::lsp_types::{DocumentSymbol, Uri};

use crate::buffers::Buffers;

/// What the transport needs to answer outlines itself. Shared by the transport and the server.
pub struct DirectAnswers {
    /// Set by `initialize`; until then nothing is answered here.
    buffers: OnceLock<Buffers>,
    /// Set by `shutdown`: from then on the server answers (with its errors).
    shut_down: Arc<AtomicBool>,
    /// The version the editor last sent for each open buffer, by URI.
    versions: Mutex<HashMap<String, i32>>,
}

/// A `documentSymbol` request the transport will try to answer.
pub struct OutlineRequest {
    id: Value,
    uri: Uri,
    version: i32,
}

#[derive(Serialize)]
struct Reply<'a> {
    jsonrpc: &'static str,
    result: &'a [DocumentSymbol],
    id: &'a Value,
}

impl DirectAnswers {
    pub fn new(shut_down: Arc<AtomicBool>) -> DirectAnswers {
        DirectAnswers {
            buffers: OnceLock::new(),
            shut_down,
            versions: Mutex::default(),
        }
    }

    /// The server is initialized: its buffers can answer.
    pub fn set_buffers(&self, buffers: Buffers) {
        let _ = self.buffers.set(buffers);
    }

    /// Notes what a message from the client does to the open buffers (in arrival order).
    pub fn observe(&self, message: &Value) {
        let method = message.get("method").and_then(Value::as_str);
        let document = &message["params"]["textDocument"];
        let (Some(method), Some(uri)) = (method, document["uri"].as_str()) else {
            return;
        };
        match method {
            "textDocument/didOpen" | "textDocument/didChange" => {
                if let Some(version) = document["version"]
                    .as_i64()
                    .and_then(|version| i32::try_from(version).ok())
                {
                    self.versions.lock().insert(uri.to_string(), version);
                }
            }
            "textDocument/didClose" => {
                self.versions.lock().remove(uri);
            }
            _ => {}
        }
    }

    /// The request, when it asks for the outline of an open buffer this side can answer.
    pub fn outline_request(&self, message: &Value) -> Option<OutlineRequest> {
        if message.get("method").and_then(Value::as_str) != Some("textDocument/documentSymbol")
            || self.buffers.get().is_none()
            || self.shut_down.load(Ordering::SeqCst)
        {
            return None;
        }
        let id = message
            .get("id")
            .filter(|id| id.is_number() || id.is_string())?;
        let uri_text = message["params"]["textDocument"]["uri"].as_str()?;
        let version = *self.versions.lock().get(uri_text)?;
        let uri = uri_text.parse::<Uri>().ok()?;
        Some(OutlineRequest {
            id: id.clone(),
            uri,
            version,
        })
    }

    /// The response's bytes, or `None` when the server must answer after all.
    pub async fn answer(&self, request: &OutlineRequest) -> Option<Vec<u8>> {
        let analysis = self
            .buffers
            .get()?
            .analysis(&request.uri, request.version)
            .await?;
        if analysis.skipped.is_some() {
            // The server tells the user why (once); let it answer.
            return None;
        }
        serde_json::to_vec(&Reply {
            jsonrpc: "2.0",
            result: analysis.outline(),
            id: &request.id,
        })
        .ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn change(uri: &str, version: i64) -> Value {
        json!({ "jsonrpc": "2.0", "method": "textDocument/didChange",
                "params": { "textDocument": { "uri": uri, "version": version }, "contentChanges": [] } })
    }

    fn outline(id: Value, uri: &str) -> Value {
        json!({ "jsonrpc": "2.0", "id": id, "method": "textDocument/documentSymbol",
                "params": { "textDocument": { "uri": uri } } })
    }

    #[test]
    fn only_outlines_of_open_buffers_of_a_running_server_are_taken() {
        let shut_down = Arc::new(AtomicBool::new(false));
        let direct = DirectAnswers::new(shut_down.clone());
        let uri = "file:///w/src/lib.rs";
        direct.observe(&change(uri, 3));
        // Not initialized yet.
        assert!(direct.outline_request(&outline(json!(1), uri)).is_none());
        direct.set_buffers(Buffers::start(1 << 20).unwrap());
        let taken = direct.outline_request(&outline(json!(1), uri)).unwrap();
        assert_eq!(taken.version, 3);
        direct.observe(&change(uri, 4));
        assert_eq!(
            direct
                .outline_request(&outline(json!("a"), uri))
                .unwrap()
                .version,
            4
        );
        // A buffer not open, a notification, another method, a bad id: the server's.
        assert!(
            direct
                .outline_request(&outline(json!(2), "file:///w/other.rs"))
                .is_none()
        );
        let mut no_id = outline(json!(1), uri);
        no_id.as_object_mut().unwrap().remove("id");
        assert!(direct.outline_request(&no_id).is_none());
        assert!(
            direct
                .outline_request(&outline(json!({"x": 1}), uri))
                .is_none()
        );
        let mut other = outline(json!(5), uri);
        other["method"] = json!("textDocument/hover");
        assert!(direct.outline_request(&other).is_none());
        // Closed, or after shutdown: the server's.
        direct.observe(
            &json!({ "jsonrpc": "2.0", "method": "textDocument/didClose",
                                "params": { "textDocument": { "uri": uri } } }),
        );
        assert!(direct.outline_request(&outline(json!(6), uri)).is_none());
        direct.observe(&change(uri, 7));
        shut_down.store(true, Ordering::SeqCst);
        assert!(direct.outline_request(&outline(json!(8), uri)).is_none());
    }
}
