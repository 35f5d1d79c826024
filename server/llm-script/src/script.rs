//! The script format: an ordered list of turns, each with an optional `match` on the request, a
//! `respond` describing the streamed answer, and an optional `fault` to inject. Loaded from JSON
//! (`fixtures/llm/*.json`) and validated before the server starts. See docs/providers.md.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

/// A whole script.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Script {
    /// What the script is for (free text, not used).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    pub turns: Vec<Turn>,
}

/// One scripted answer.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Turn {
    /// A label used in error messages and by [`crate::ScriptedServerHandle::unused_turns`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// When this turn answers a request; an absent match accepts any request.
    #[serde(default, rename = "match")]
    pub matcher: Matcher,
    pub respond: Respond,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fault: Option<Fault>,
    /// Serve this turn for every matching request instead of once.
    #[serde(default)]
    pub repeat: bool,
}

/// Conditions on the request; all that are given must hold.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Matcher {
    /// The newest user message with text contains this.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_user_text_contains: Option<String>,
    /// The conversation ends with a result of a call to this tool.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_tool_result_of: Option<String>,
    /// The conversation ends with a tool result containing this.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_tool_result_contains: Option<String>,
    /// The system prompt contains this.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub system_contains: Option<String>,
    /// The request offers a tool of this name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub has_tool: Option<String>,
    /// The request is the server's n-th (1-based, counting every request received).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub nth_request: Option<u64>,
}

/// Text given whole (split every `chunk_chars` characters) or as explicit pieces.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum Chunks {
    Whole(String),
    Pieces(Vec<String>),
}

impl Chunks {
    pub fn full_text(&self) -> String {
        match self {
            Chunks::Whole(text) => text.clone(),
            Chunks::Pieces(pieces) => pieces.concat(),
        }
    }

    /// The pieces streamed, never empty ones.
    pub fn pieces(&self, chunk_chars: usize) -> Vec<String> {
        match self {
            Chunks::Whole(text) => split_chars(text, chunk_chars),
            Chunks::Pieces(pieces) => pieces.iter().filter(|p| !p.is_empty()).cloned().collect(),
        }
    }
}

/// `text` in pieces of at most `size` characters.
pub fn split_chars(text: &str, size: usize) -> Vec<String> {
    let chars: Vec<char> = text.chars().collect();
    chars
        .chunks(size.max(1))
        .map(|piece| piece.iter().collect())
        .collect()
}

/// The streamed answer.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Respond {
    /// Reasoning, sent before the text (`reasoning_content` / a `thinking` block).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub thinking: Option<Chunks>,
    /// The thinking block's signature (Anthropic); a fixed one when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub signature: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub text: Option<Chunks>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tool_calls: Vec<ScriptToolCall>,
    /// Defaults to `tool_calls` when there are calls, else `stop`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub finish: Option<Finish>,
    /// Defaults to an estimate (4 bytes a token) from the request and the answer.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usage: Option<ScriptUsage>,
    /// Characters per streamed piece of text, thinking and tool arguments (default 8).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub chunk_chars: Option<usize>,
}

pub const DEFAULT_CHUNK_CHARS: usize = 8;

impl Respond {
    pub fn chunk_chars(&self) -> usize {
        self.chunk_chars.unwrap_or(DEFAULT_CHUNK_CHARS)
    }

    pub fn finish(&self) -> Finish {
        self.finish.unwrap_or(if self.tool_calls.is_empty() {
            Finish::Stop
        } else {
            Finish::ToolCalls
        })
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ScriptToolCall {
    /// Defaults to `call_<turn>_<n>` (OpenAI) or `toolu_<turn>_<n>` (Anthropic).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    pub name: String,
    /// Usually an object. A string is sent verbatim as the argument text, which lets a script
    /// send arguments that are not JSON.
    #[serde(default)]
    pub arguments: serde_json::Value,
}

impl ScriptToolCall {
    /// The argument text as streamed.
    pub fn argument_text(&self) -> String {
        match &self.arguments {
            serde_json::Value::String(raw) => raw.clone(),
            serde_json::Value::Null => "{}".to_string(),
            other => other.to_string(),
        }
    }
}

/// Why the answer stopped, in either API's words.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Finish {
    #[serde(alias = "end_turn")]
    Stop,
    #[serde(alias = "tool_use")]
    ToolCalls,
    #[serde(alias = "max_tokens")]
    Length,
    #[serde(alias = "refusal")]
    ContentFilter,
}

impl Finish {
    pub fn openai(self) -> &'static str {
        match self {
            Finish::Stop => "stop",
            Finish::ToolCalls => "tool_calls",
            Finish::Length => "length",
            Finish::ContentFilter => "content_filter",
        }
    }

    pub fn anthropic(self) -> &'static str {
        match self {
            Finish::Stop => "end_turn",
            Finish::ToolCalls => "tool_use",
            Finish::Length => "max_tokens",
            Finish::ContentFilter => "refusal",
        }
    }
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ScriptUsage {
    #[serde(default)]
    pub input_tokens: u64,
    #[serde(default)]
    pub output_tokens: u64,
    #[serde(default)]
    pub cache_read_tokens: u64,
}

/// Something to go wrong. A faulted answer never uses up its turn, so after `times` faulted
/// answers (default 1) the same turn is served normally — which is how retries are tested.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Fault {
    /// Answer with this HTTP status and an error body in the API's format.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<u16>,
    /// With `status`: a `retry-after` header, in seconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retry_after: Option<u64>,
    /// With `status`: the error message (default: a message fitting the status).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    /// With `status`: the error code (OpenAI `code`) or type (Anthropic `error.type`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub code: Option<String>,
    /// Wait this long before sending the response headers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub slow_first_byte_ms: Option<u64>,
    /// End the body cleanly after this many events, before the end marker.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub truncate_after_events: Option<usize>,
    /// Send an in-stream error event of this type (`overloaded_error`, `rate_limit_error`, …)
    /// after `truncate_after_events` events (default 0), and end the stream.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error_event: Option<String>,
    /// Replace the first event's data with text that is not JSON.
    #[serde(default)]
    pub malformed_json: bool,
    /// Wait this long between events.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub delay_between_events_ms: Option<u64>,
    /// How many answers get the fault before the turn is served normally (default 1).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub times: Option<u32>,
}

impl Fault {
    pub fn times(&self) -> u32 {
        self.times.unwrap_or(1)
    }
}

/// Why a script cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum ScriptError {
    // The underlying errors are part of the message rather than `source()`s, so a front end
    // that prints the cause chain does not say them twice.
    #[error("cannot read script {path}: {error}")]
    Read {
        path: PathBuf,
        error: std::io::Error,
    },
    #[error("script{} is not valid: {error}", location(.path))]
    Parse {
        path: Option<PathBuf>,
        error: serde_json::Error,
    },
    #[error("script{}: turn {turn}: {message}", location(.path))]
    Invalid {
        path: Option<PathBuf>,
        turn: usize,
        message: String,
    },
    #[error("cannot start the scripted server: {0}")]
    Io(#[from] std::io::Error),
}

fn location(path: &Option<PathBuf>) -> String {
    path.as_ref()
        .map(|path| format!(" {}", path.display()))
        .unwrap_or_default()
}

impl Script {
    /// Parses and validates a script.
    pub fn from_json(text: &str) -> Result<Self, ScriptError> {
        Self::parse(text, None)
    }

    /// Reads, parses and validates a script file.
    pub fn load(path: &Path) -> Result<Self, ScriptError> {
        let text = std::fs::read_to_string(path).map_err(|error| ScriptError::Read {
            path: path.to_path_buf(),
            error,
        })?;
        Self::parse(&text, Some(path.to_path_buf()))
    }

    fn parse(text: &str, path: Option<PathBuf>) -> Result<Self, ScriptError> {
        let script: Script = serde_json::from_str(text).map_err(|error| ScriptError::Parse {
            path: path.clone(),
            error,
        })?;
        script
            .validate()
            .map_err(|(turn, message)| ScriptError::Invalid {
                path,
                turn,
                message,
            })?;
        Ok(script)
    }

    /// The first problem found, as (1-based turn, message).
    fn validate(&self) -> Result<(), (usize, String)> {
        for (index, turn) in self.turns.iter().enumerate() {
            let number = index + 1;
            if turn.respond.chunk_chars == Some(0) {
                return Err((number, "chunk_chars must be at least 1".to_string()));
            }
            if turn.matcher.nth_request == Some(0) {
                return Err((number, "nth_request counts from 1".to_string()));
            }
            for call in &turn.respond.tool_calls {
                if call.name.is_empty() {
                    return Err((number, "a tool call needs a name".to_string()));
                }
            }
            if let Some(fault) = &turn.fault {
                if let Some(status) = fault.status
                    && !(400..=599).contains(&status)
                {
                    return Err((
                        number,
                        format!("fault status {status} is not an error status"),
                    ));
                }
                if fault.times == Some(0) {
                    return Err((number, "fault times must be at least 1".to_string()));
                }
                if fault.status.is_none() && fault.retry_after.is_some() {
                    return Err((number, "retry_after needs a status".to_string()));
                }
                if fault.status.is_none() && fault.error_event.is_none() && fault.message.is_some()
                {
                    return Err((
                        number,
                        "message needs a status or an error_event".to_string(),
                    ));
                }
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_a_full_turn() {
        let script = Script::from_json(
            r#"{"turns": [{
                "name": "read",
                "match": {"last_user_text_contains": "hi", "nth_request": 1},
                "respond": {"thinking": ["a", "b"], "text": "hello", "tool_calls": [{"name": "read_file", "arguments": {"path": "x"}}], "finish": "tool_use", "usage": {"input_tokens": 3}, "chunk_chars": 2},
                "fault": {"status": 429, "retry_after": 1, "times": 2}
            }]}"#,
        )
        .unwrap();
        let turn = &script.turns[0];
        assert_eq!(turn.respond.finish(), Finish::ToolCalls);
        assert_eq!(
            turn.respond.text.as_ref().unwrap().pieces(2),
            ["he", "ll", "o"]
        );
        assert_eq!(turn.respond.thinking.as_ref().unwrap().full_text(), "ab");
        assert_eq!(turn.fault.as_ref().unwrap().times(), 2);
    }

    #[test]
    fn invalid_scripts_name_the_problem() {
        let error = Script::from_json(r#"{"turns": [{"respond": {"txt": "x"}}]}"#).unwrap_err();
        assert!(error.to_string().contains("txt"), "{error}");
        let error =
            Script::from_json(r#"{"turns": [{"respond": {}}, {"respond": {"chunk_chars": 0}}]}"#)
                .unwrap_err();
        assert_eq!(
            error.to_string(),
            "script: turn 2: chunk_chars must be at least 1"
        );
        let error = Script::from_json(r#"{"turns": [{"respond": {}, "fault": {"status": 200}}]}"#)
            .unwrap_err();
        assert!(error.to_string().contains("200"), "{error}");
        let error = Script::load(Path::new("/nonexistent/script.json")).unwrap_err();
        assert!(
            error.to_string().contains("/nonexistent/script.json"),
            "{error}"
        );
    }

    #[test]
    fn split_respects_characters() {
        assert_eq!(split_chars("héllo wörld", 3), ["hél", "lo ", "wör", "ld"]);
        assert!(split_chars("", 3).is_empty());
    }
}
