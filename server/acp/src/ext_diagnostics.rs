//! `_lode/diagnostics`: the extension notification through which an editor pushes the
//! diagnostics its own language servers computed for a file (ACP has no standard message for
//! this yet). This module owns the message type and turns its LSP-shaped params into the agent's
//! diagnostics; `docs/acp.md` documents the shape.
//!
//! Params: `{ "sessionId"?: string, "uri": "file:///abs/path", "diagnostics": [ { "range":
//! {"start": {"line", "character"}, "end": {...}}, "severity"?: 1-4, "message", "code"?,
//! "source"? } ] }`, positions 0-based as in LSP.

use std::path::PathBuf;

use agent_client_protocol::{JsonRpcMessage, JsonRpcNotification, UntypedMessage};
use lode_tools::diagnostics::{Diagnostic, Severity};
use serde_json::Value;

/// The method name.
pub const METHOD: &str = "_lode/diagnostics";
/// Most diagnostics taken from one notification; the rest are dropped.
pub const MAX_DIAGNOSTICS: usize = 1_000;
/// Most characters kept of one message.
pub const MAX_MESSAGE_CHARS: usize = 2_000;

/// A `_lode/diagnostics` notification with its params still raw, so malformed params reach our
/// own validation (and a log line) instead of failing inside the protocol library.
#[derive(Debug, Clone)]
pub struct DiagnosticsNotification {
    pub params: Value,
}

impl JsonRpcMessage for DiagnosticsNotification {
    fn matches_method(method: &str) -> bool {
        method == METHOD
    }

    fn method(&self) -> &str {
        METHOD
    }

    fn to_untyped_message(&self) -> Result<UntypedMessage, agent_client_protocol::Error> {
        UntypedMessage::new(METHOD, &self.params)
    }

    fn parse_message(method: &str, params: &Value) -> Result<Self, agent_client_protocol::Error> {
        if method != METHOD {
            return Err(agent_client_protocol::Error::method_not_found());
        }
        Ok(DiagnosticsNotification {
            params: params.clone(),
        })
    }
}

impl JsonRpcNotification for DiagnosticsNotification {}

/// The params of one notification, validated.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PushedFile {
    pub session_id: Option<String>,
    /// Absolute.
    pub path: PathBuf,
    /// 1-based positions; at most [`MAX_DIAGNOSTICS`].
    pub diagnostics: Vec<Diagnostic>,
}

/// Validates the params; the error says what is wrong, for the log.
pub fn parse_params(params: &Value) -> Result<PushedFile, String> {
    let object = params.as_object().ok_or("params must be an object")?;
    let session_id = match object.get("sessionId") {
        None | Some(Value::Null) => None,
        Some(Value::String(id)) => Some(id.clone()),
        Some(_) => return Err("sessionId must be a string".into()),
    };
    let uri = object
        .get("uri")
        .and_then(Value::as_str)
        .ok_or("uri must be a string")?;
    let path = lode_tools::paths::file_uri_to_path(uri).map_err(|error| error.to_string())?;
    let list = object
        .get("diagnostics")
        .and_then(Value::as_array)
        .ok_or("diagnostics must be an array")?;
    let diagnostics = list
        .iter()
        .take(MAX_DIAGNOSTICS)
        .enumerate()
        .map(|(index, item)| {
            parse_diagnostic(item).map_err(|why| format!("diagnostics[{index}]: {why}"))
        })
        .collect::<Result<Vec<_>, _>>()?;
    Ok(PushedFile {
        session_id,
        path,
        diagnostics,
    })
}

fn parse_diagnostic(item: &Value) -> Result<Diagnostic, String> {
    let start = item
        .get("range")
        .and_then(|range| range.get("start"))
        .ok_or("range.start is missing")?;
    let position = |key: &str| -> Result<u32, String> {
        let value = start
            .get(key)
            .and_then(Value::as_u64)
            .ok_or_else(|| format!("range.start.{key} must be a non-negative integer"))?;
        u32::try_from(value)
            .ok()
            .and_then(|zero_based| zero_based.checked_add(1))
            .ok_or_else(|| format!("range.start.{key} is too large"))
    };
    let severity = match item.get("severity") {
        // LSP leaves a missing severity to the client; editors show it as an error.
        None | Some(Value::Null) => Severity::Error,
        Some(value) => match value.as_u64() {
            Some(1) => Severity::Error,
            Some(2) => Severity::Warning,
            Some(3) => Severity::Information,
            Some(4) => Severity::Hint,
            _ => return Err(format!("severity must be 1-4, got {value}")),
        },
    };
    let message = item
        .get("message")
        .and_then(Value::as_str)
        .ok_or("message must be a string")?;
    let code = match item.get("code") {
        None | Some(Value::Null) => None,
        Some(Value::String(code)) => Some(code.clone()),
        Some(Value::Number(code)) => Some(code.to_string()),
        Some(_) => return Err("code must be a string or a number".into()),
    };
    let source = match item.get("source") {
        None | Some(Value::Null) => None,
        Some(Value::String(source)) => Some(source.clone()),
        Some(_) => return Err("source must be a string".into()),
    };
    Ok(Diagnostic {
        severity,
        line: position("line")?,
        column: position("character")?,
        message: message.chars().take(MAX_MESSAGE_CHARS).collect(),
        code,
        source,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn lsp_shaped_params_become_one_based_diagnostics() {
        let file = parse_params(&json!({
            "sessionId": "s1",
            "uri": "file:///work/my%20crate/src/lib.rs",
            "diagnostics": [
                {"range": {"start": {"line": 0, "character": 4}, "end": {"line": 0, "character": 9}},
                 "severity": 2, "message": "unused variable", "code": 26, "source": "rustc"},
                {"range": {"start": {"line": 9, "character": 0}, "end": {"line": 9, "character": 1}},
                 "message": "expected `;`"}
            ]
        }))
        .unwrap();
        assert_eq!(file.session_id.as_deref(), Some("s1"));
        assert_eq!(file.path, PathBuf::from("/work/my crate/src/lib.rs"));
        assert_eq!(file.diagnostics.len(), 2);
        let first = &file.diagnostics[0];
        assert_eq!((first.line, first.column), (1, 5));
        assert_eq!(first.severity, Severity::Warning);
        assert_eq!(first.code.as_deref(), Some("26"));
        assert_eq!(first.source.as_deref(), Some("rustc"));
        assert_eq!(file.diagnostics[1].severity, Severity::Error);
        assert_eq!(file.diagnostics[1].line, 10);
    }

    #[test]
    fn malformed_params_are_refused_with_a_reason() {
        let range =
            json!({"start": {"line": 0, "character": 0}, "end": {"line": 0, "character": 0}});
        for (params, why) in [
            (json!([]), "params must be an object"),
            (json!({"uri": 5, "diagnostics": []}), "uri"),
            (
                json!({"uri": "https://x/a.rs", "diagnostics": []}),
                "file://",
            ),
            (
                json!({"uri": "file://relative.rs", "diagnostics": []}),
                "absolute",
            ),
            (
                json!({"uri": "file:///a.rs"}),
                "diagnostics must be an array",
            ),
            (
                json!({"uri": "file:///a.rs", "diagnostics": [{"range": range, "severity": 9, "message": "m"}]}),
                "severity",
            ),
            (
                json!({"uri": "file:///a.rs", "diagnostics": [{"range": range}]}),
                "message",
            ),
            (
                json!({"uri": "file:///a.rs", "diagnostics": [{"message": "m"}]}),
                "range",
            ),
            (
                json!({"uri": "file:///a.rs", "diagnostics": [{"range": {"start": {"line": -1, "character": 0}}, "message": "m"}]}),
                "line",
            ),
            (
                json!({"uri": "file:///a.rs", "diagnostics": [{"range": {"start": {"line": 4294967295u64, "character": 0}}, "message": "m"}]}),
                "too large",
            ),
            (json!({"uri": "file:///%FF.rs", "diagnostics": []}), "UTF-8"),
        ] {
            let error = parse_params(&params).unwrap_err();
            assert!(error.contains(why), "{params}: {error}");
        }
    }

    #[test]
    fn oversized_lists_and_messages_are_capped() {
        let item = json!({"range": {"start": {"line": 0, "character": 0}}, "message": "m".repeat(MAX_MESSAGE_CHARS * 2)});
        let list: Vec<Value> = (0..MAX_DIAGNOSTICS + 10).map(|_| item.clone()).collect();
        let file = parse_params(&json!({"uri": "file:///a.rs", "diagnostics": list})).unwrap();
        assert_eq!(file.diagnostics.len(), MAX_DIAGNOSTICS);
        assert_eq!(
            file.diagnostics[0].message.chars().count(),
            MAX_MESSAGE_CHARS
        );
    }
}
