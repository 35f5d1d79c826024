//! The bytes on the wire: a scripted answer rendered as OpenAI `chat.completion.chunk` events or
//! Anthropic Messages events, and error bodies and in-stream error events in each API's shape.

use serde_json::{Value, json};

use crate::conversation::Api;
use crate::script::{Respond, ScriptUsage, split_chars};

/// One server-sent event.
#[derive(Debug, Clone, PartialEq)]
pub struct Frame {
    pub event: Option<String>,
    pub data: String,
}

impl Frame {
    fn json(event: Option<&str>, data: Value) -> Self {
        Self {
            event: event.map(str::to_string),
            data: data.to_string(),
        }
    }

    /// The event as the API streams it: one JSON line for Ollama, else `text/event-stream`.
    pub fn encode_for(&self, api: Api) -> String {
        match api {
            Api::Ollama => format!("{}\n", self.data),
            Api::OpenAi | Api::Anthropic => self.encode(),
        }
    }

    /// The event as `text/event-stream` text.
    pub fn encode(&self) -> String {
        let mut out = String::new();
        if let Some(event) = &self.event {
            out.push_str("event: ");
            out.push_str(event);
            out.push('\n');
        }
        for line in self.data.split('\n') {
            out.push_str("data: ");
            out.push_str(line);
            out.push('\n');
        }
        out.push('\n');
        out
    }
}

/// The answer as OpenAI chunks, ending with the usage chunk and `[DONE]`.
pub fn openai_frames(
    respond: &Respond,
    model: &str,
    turn: usize,
    usage: ScriptUsage,
) -> Vec<Frame> {
    let id = format!("chatcmpl-script-{turn}");
    let chunk = |delta: Value, finish: Option<&str>| {
        Frame::json(
            None,
            json!({
                "id": id,
                "object": "chat.completion.chunk",
                "created": 0,
                "model": model,
                "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
            }),
        )
    };
    let size = respond.chunk_chars();
    let mut frames = vec![chunk(json!({"role": "assistant", "content": ""}), None)];
    if let Some(thinking) = &respond.thinking {
        for piece in thinking.pieces(size) {
            frames.push(chunk(json!({"reasoning_content": piece}), None));
        }
    }
    if let Some(text) = &respond.text {
        for piece in text.pieces(size) {
            frames.push(chunk(json!({"content": piece}), None));
        }
    }
    for (index, call) in respond.tool_calls.iter().enumerate() {
        let call_id = call
            .id
            .clone()
            .unwrap_or_else(|| format!("call_{turn}_{index}"));
        frames.push(chunk(
            json!({"tool_calls": [{"index": index, "id": call_id, "type": "function", "function": {"name": call.name, "arguments": ""}}]}),
            None,
        ));
        for piece in split_chars(&call.argument_text(), size) {
            frames.push(chunk(
                json!({"tool_calls": [{"index": index, "function": {"arguments": piece}}]}),
                None,
            ));
        }
    }
    frames.push(chunk(json!({}), Some(respond.finish().openai())));
    frames.push(Frame::json(
        None,
        json!({
            "id": id,
            "object": "chat.completion.chunk",
            "created": 0,
            "model": model,
            "choices": [],
            "usage": {
                "prompt_tokens": usage.input_tokens,
                "completion_tokens": usage.output_tokens,
                "total_tokens": usage.input_tokens + usage.output_tokens,
                "prompt_tokens_details": {"cached_tokens": usage.cache_read_tokens},
            },
        }),
    ));
    frames.push(Frame {
        event: None,
        data: "[DONE]".to_string(),
    });
    frames
}

/// The answer as Ollama's native stream: one JSON object a line (the first without content),
/// calls whole (Ollama sends them so), the last line `done` with the counts.
pub fn ollama_frames(respond: &Respond, model: &str, usage: ScriptUsage) -> Vec<Frame> {
    let line = |message: Value| {
        Frame::json(
            None,
            json!({"model": model, "created_at": "2026-01-01T00:00:00Z", "message": message, "done": false}),
        )
    };
    let size = respond.chunk_chars();
    // A first line without content (Ollama sends such lines, e.g. around calls), so that "the
    // first event" of a fault means the same in every API: the answer's start, nothing of it.
    let mut frames = vec![line(json!({"role": "assistant", "content": ""}))];
    if let Some(thinking) = &respond.thinking {
        for piece in thinking.pieces(size) {
            frames.push(line(
                json!({"role": "assistant", "content": "", "thinking": piece}),
            ));
        }
    }
    if let Some(text) = &respond.text {
        for piece in text.pieces(size) {
            frames.push(line(json!({"role": "assistant", "content": piece})));
        }
    }
    if !respond.tool_calls.is_empty() {
        let calls: Vec<Value> = respond
            .tool_calls
            .iter()
            .map(|call| {
                let arguments: Value =
                    serde_json::from_str(&call.argument_text()).unwrap_or_else(|_| json!({}));
                json!({"function": {"name": call.name, "arguments": arguments}})
            })
            .collect();
        frames.push(line(
            json!({"role": "assistant", "content": "", "tool_calls": calls}),
        ));
    }
    let done_reason = match respond.finish().openai() {
        "length" => "length",
        _ => "stop",
    };
    frames.push(Frame::json(
        None,
        json!({"model": model, "created_at": "2026-01-01T00:00:00Z",
               "message": {"role": "assistant", "content": ""},
               "done": true, "done_reason": done_reason,
               "prompt_eval_count": usage.input_tokens.saturating_sub(usage.cache_read_tokens),
               "eval_count": usage.output_tokens}),
    ));
    frames
}

/// The answer as Anthropic Messages events, `message_start` to `message_stop`.
pub fn anthropic_frames(
    respond: &Respond,
    model: &str,
    turn: usize,
    usage: ScriptUsage,
) -> Vec<Frame> {
    let size = respond.chunk_chars();
    let event = |name: &str, data: Value| Frame::json(Some(name), data);
    let mut frames = vec![event(
        "message_start",
        json!({"type": "message_start", "message": {
            "id": format!("msg_script_{turn}"),
            "type": "message",
            "role": "assistant",
            "content": [],
            "model": model,
            "stop_reason": null,
            "stop_sequence": null,
            "usage": {
                "input_tokens": usage.input_tokens.saturating_sub(usage.cache_read_tokens),
                "cache_read_input_tokens": usage.cache_read_tokens,
                "cache_creation_input_tokens": 0,
                "output_tokens": 1,
            },
        }}),
    )];
    let mut index = 0;
    let mut block = |frames: &mut Vec<Frame>, start: Value, deltas: Vec<Value>| {
        frames.push(event(
            "content_block_start",
            json!({"type": "content_block_start", "index": index, "content_block": start}),
        ));
        for delta in deltas {
            frames.push(event(
                "content_block_delta",
                json!({"type": "content_block_delta", "index": index, "delta": delta}),
            ));
        }
        frames.push(event(
            "content_block_stop",
            json!({"type": "content_block_stop", "index": index}),
        ));
        index += 1;
    };
    if let Some(thinking) = &respond.thinking {
        let mut deltas: Vec<Value> = thinking
            .pieces(size)
            .into_iter()
            .map(|piece| json!({"type": "thinking_delta", "thinking": piece}))
            .collect();
        let signature = respond
            .signature
            .clone()
            .unwrap_or_else(|| format!("script-signature-{turn}"));
        deltas.push(json!({"type": "signature_delta", "signature": signature}));
        block(
            &mut frames,
            json!({"type": "thinking", "thinking": ""}),
            deltas,
        );
    }
    if let Some(text) = &respond.text {
        let deltas = text
            .pieces(size)
            .into_iter()
            .map(|piece| json!({"type": "text_delta", "text": piece}))
            .collect();
        block(&mut frames, json!({"type": "text", "text": ""}), deltas);
    }
    for (number, call) in respond.tool_calls.iter().enumerate() {
        let call_id = call
            .id
            .clone()
            .unwrap_or_else(|| format!("toolu_{turn}_{number}"));
        let deltas = split_chars(&call.argument_text(), size)
            .into_iter()
            .map(|piece| json!({"type": "input_json_delta", "partial_json": piece}))
            .collect();
        block(
            &mut frames,
            json!({"type": "tool_use", "id": call_id, "name": call.name, "input": {}}),
            deltas,
        );
    }
    frames.push(event(
        "message_delta",
        json!({"type": "message_delta",
               "delta": {"stop_reason": respond.finish().anthropic(), "stop_sequence": null},
               "usage": {"output_tokens": usage.output_tokens}}),
    ));
    frames.push(event("message_stop", json!({"type": "message_stop"})));
    frames
}

/// An HTTP error body in the API's shape.
pub fn error_body(api: Api, status: u16, message: &str, code: Option<&str>) -> Value {
    match api {
        Api::OpenAi => json!({"error": {
            "message": message,
            "type": openai_error_type(status),
            "code": code,
        }}),
        Api::Anthropic => json!({"type": "error", "error": {
            "type": code.unwrap_or(anthropic_error_type(status)),
            "message": message,
        }}),
        Api::Ollama => json!({"error": message}),
    }
}

/// An error in the middle of a stream.
pub fn error_frame(api: Api, kind: &str, message: &str) -> Frame {
    match api {
        Api::OpenAi => Frame::json(
            None,
            json!({"error": {"message": message, "type": kind, "code": kind}}),
        ),
        Api::Anthropic => Frame::json(
            Some("error"),
            json!({"type": "error", "error": {"type": kind, "message": message}}),
        ),
        Api::Ollama => Frame::json(None, json!({"error": message})),
    }
}

/// The default message for a faulted status.
pub fn default_message(status: u16) -> &'static str {
    match status {
        400 => "Bad request",
        401 => "Invalid API key",
        403 => "Permission denied",
        404 => "Not found",
        413 => "Request too large",
        429 => "Rate limit reached, please retry later",
        529 => "Overloaded",
        500..=599 => "The server had an error while processing your request",
        _ => "Request failed",
    }
}

fn openai_error_type(status: u16) -> &'static str {
    match status {
        401 | 403 => "authentication_error",
        429 => "rate_limit_error",
        400..=499 => "invalid_request_error",
        _ => "server_error",
    }
}

fn anthropic_error_type(status: u16) -> &'static str {
    match status {
        401 => "authentication_error",
        403 => "permission_error",
        404 => "not_found_error",
        413 => "request_too_large",
        429 => "rate_limit_error",
        529 => "overloaded_error",
        400..=499 => "invalid_request_error",
        _ => "api_error",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn multi_line_data_is_split_into_data_lines() {
        let frame = Frame {
            event: Some("x".to_string()),
            data: "a\nb".to_string(),
        };
        assert_eq!(frame.encode(), "event: x\ndata: a\ndata: b\n\n");
    }

    #[test]
    fn openai_frames_end_with_usage_and_done() {
        let respond: Respond =
            serde_json::from_str(r#"{"text": "hello world", "chunk_chars": 5}"#).unwrap();
        let frames = openai_frames(&respond, "m", 1, ScriptUsage::default());
        let datas: Vec<&str> = frames.iter().map(|frame| frame.data.as_str()).collect();
        assert_eq!(datas.len(), 1 + 3 + 1 + 1 + 1);
        assert!(datas[1].contains("\"content\":\"hello\""));
        assert!(datas[4].contains("\"finish_reason\":\"stop\""));
        assert!(datas[5].contains("\"usage\""));
        assert_eq!(datas[6], "[DONE]");
    }
}
