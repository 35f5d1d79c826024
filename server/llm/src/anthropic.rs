//! The Anthropic Messages client (`POST {base_url}/v1/messages`): request encoding from a
//! [`ChatRequest`] (text, image, tool_use, tool_result and signed thinking blocks) and decoding
//! of the streamed `message_start` … `message_stop` events.

use std::collections::{HashMap, VecDeque};
use std::sync::Arc;

use reqwest::header::HeaderValue;
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use super::encoded::{EncodedMessages, body_with_messages};
use super::http::{self, Connection, Decoded, SseDecoder, mentions_context_length};
use super::sse::SseEvent;
use super::{
    ChatRequest, ContentPart, EventStream, FinishReason, LlmError, Message, ModelInfo, Provider,
    Role, StreamEvent, Usage,
};

/// The API version lode speaks.
pub const ANTHROPIC_VERSION: &str = "2023-06-01";

#[derive(Debug, Clone, Default)]
pub(crate) struct AnthropicOptions {
    /// Extended thinking with this budget of tokens, when set.
    pub thinking_budget_tokens: Option<u32>,
}

/// A Claude model behind the Anthropic Messages API (or a server that imitates it).
#[derive(Debug)]
pub struct AnthropicProvider {
    connection: Connection,
    info: ModelInfo,
    options: AnthropicOptions,
    /// The messages' JSON of earlier requests.
    encoded: EncodedMessages,
}

impl AnthropicProvider {
    pub(crate) fn new(connection: Connection, info: ModelInfo, options: AnthropicOptions) -> Self {
        Self {
            connection,
            info,
            options,
            encoded: EncodedMessages::default(),
        }
    }
}

#[async_trait::async_trait]
impl Provider for AnthropicProvider {
    fn info(&self) -> &ModelInfo {
        &self.info
    }

    async fn stream(
        &self,
        request: &ChatRequest,
        cancel: CancellationToken,
    ) -> Result<EventStream, LlmError> {
        if cancel.is_cancelled() {
            return Err(LlmError::Cancelled);
        }
        let body = encode_request_body(request, &self.info, &self.options, &self.encoded);
        let mut builder = self
            .connection
            .post(body)
            .header("anthropic-version", ANTHROPIC_VERSION);
        let key = self.connection.key.as_ref();
        if let Some(key) = key {
            match HeaderValue::from_str(key.expose()) {
                Ok(mut value) => {
                    value.set_sensitive(true);
                    builder = builder.header("x-api-key", value);
                }
                Err(_) => {
                    return Err(LlmError::Auth {
                        status: 0,
                        message: "the API key contains characters a header cannot carry"
                            .to_string(),
                    });
                }
            }
        }
        http::open_stream(
            builder,
            MessageDecoder::default(),
            key,
            self.connection.timeouts,
            cancel,
        )
        .await
    }
}

/// The request body for `request` (the value [`encode_request_body`] writes as text). Three
/// cache breakpoints (`cache_control`): the last tool (the tools, which come first in the
/// prompt), the system prompt (tools and system), and the newest message (the whole
/// conversation, which the next request extends), so each request reuses the cached prefix of
/// the one before; the API reads a cached prefix up to each breakpoint.
#[cfg(test)]
pub(crate) fn encode_request(
    request: &ChatRequest,
    info: &ModelInfo,
    options: &AnthropicOptions,
) -> Value {
    let mut messages: Vec<Value> = request.messages.iter().filter_map(encode_message).collect();
    if let Some(last) = messages.last_mut() {
        mark_cache_breakpoint(last);
    }
    let mut body = request_fields(request, info, options);
    body["messages"] = Value::Array(messages);
    body
}

/// [`encode_request`]'s body as text, each message's JSON but the newest (which carries the
/// cache breakpoint) taken from `encoded` (so only messages new to it are encoded).
pub(crate) fn encode_request_body(
    request: &ChatRequest,
    info: &ModelInfo,
    options: &AnthropicOptions,
    encoded: &EncodedMessages,
) -> Vec<u8> {
    let encode = |message: &Message| {
        encode_message(message)
            .map(|value| value.to_string())
            .unwrap_or_default()
    };
    let mut pieces: Vec<Arc<str>> = request
        .messages
        .iter()
        .map(|message| encoded.get(message, encode))
        .collect();
    // The newest message that sends anything carries the breakpoint: encoded afresh.
    if let Some((index, message)) = request
        .messages
        .iter()
        .enumerate()
        .rev()
        .find(|(index, _)| !pieces[*index].is_empty())
        && let Some(mut value) = encode_message(message)
    {
        mark_cache_breakpoint(&mut value);
        pieces[index] = Arc::from(value.to_string());
    }
    body_with_messages(&pieces, &request_fields(request, info, options))
}

/// Marks the last block of `message` (an encoded message) as the end of the cached prefix.
fn mark_cache_breakpoint(message: &mut Value) {
    if let Some(last_block) = message["content"]
        .as_array_mut()
        .and_then(|blocks| blocks.last_mut())
        && matches!(
            last_block["type"].as_str(),
            Some("text" | "image" | "tool_result" | "tool_use")
        )
    {
        last_block["cache_control"] = json!({"type": "ephemeral"});
    }
}

/// Everything in the body but the messages.
fn request_fields(request: &ChatRequest, info: &ModelInfo, options: &AnthropicOptions) -> Value {
    let mut body = json!({
        "model": info.model,
        "max_tokens": request.max_tokens.unwrap_or(info.max_output_tokens),
        "stream": true,
    });
    if !request.system.is_empty() {
        body["system"] = json!([{
            "type": "text",
            "text": request.system,
            "cache_control": {"type": "ephemeral"},
        }]);
    }
    match options.thinking_budget_tokens {
        // Extended thinking refuses a temperature other than the default.
        Some(budget) => body["thinking"] = json!({"type": "enabled", "budget_tokens": budget}),
        None => {
            if let Some(temperature) = request.temperature {
                body["temperature"] = http::temperature_json(temperature);
            }
        }
    }
    if !request.tools.is_empty() {
        let tools: Vec<Value> = request
            .tools
            .iter()
            .map(|tool| {
                json!({
                    "name": tool.name,
                    "description": tool.description,
                    "input_schema": tool.parameters,
                })
            })
            .collect();
        body["tools"] = json!(tools);
        if let Some(last) = body["tools"]
            .as_array_mut()
            .and_then(|tools| tools.last_mut())
        {
            last["cache_control"] = json!({"type": "ephemeral"});
        }
    }
    body
}

/// One message, or `None` when nothing in it can be sent (the API refuses empty content).
/// Tool results lead a user message, as the API requires; thinking without a signature cannot
/// be sent back and is dropped; blank text blocks are refused by the API and skipped.
fn encode_message(message: &Message) -> Option<Value> {
    let mut results = Vec::new();
    let mut blocks = Vec::new();
    for part in &message.content {
        match part {
            ContentPart::Text { text } | ContentPart::Context { text }
                if !text.trim().is_empty() =>
            {
                blocks.push(json!({"type": "text", "text": text}));
            }
            ContentPart::Text { .. } | ContentPart::Context { .. } => {}
            ContentPart::Thinking {
                text,
                signature: Some(signature),
            } if message.role == Role::Assistant => {
                blocks.push(json!({"type": "thinking", "thinking": text, "signature": signature}));
            }
            ContentPart::Thinking { .. } => {}
            ContentPart::Image { mime_type, data } => blocks.push(json!({
                "type": "image",
                "source": {"type": "base64", "media_type": mime_type, "data": data},
            })),
            ContentPart::ToolCall(call) => {
                let input = match &call.arguments {
                    Value::Object(_) => call.arguments.clone(),
                    // The API takes only objects; keep what the model sent where it can see it.
                    other => json!({"raw_arguments": other}),
                };
                blocks.push(
                    json!({"type": "tool_use", "id": call.id, "name": call.name, "input": input}),
                );
            }
            ContentPart::ToolResult(result) => {
                let mut block = json!({"type": "tool_result", "tool_use_id": result.call_id});
                // The API refuses empty text; a result without content is said by leaving it out.
                if !result.content.trim().is_empty() {
                    block["content"] = json!(result.content);
                }
                if result.is_error {
                    block["is_error"] = json!(true);
                }
                results.push(block);
            }
        }
    }
    results.extend(blocks);
    if results.is_empty() {
        return None;
    }
    let role = match message.role {
        Role::User => "user",
        Role::Assistant => "assistant",
    };
    Some(json!({"role": role, "content": results}))
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum BlockKind {
    Text,
    Thinking,
    ToolUse {
        ordinal: usize,
        sent_input: bool,
    },
    /// Blocks lode does not represent (`redacted_thinking`, server tools).
    Other,
}

/// Reads the Messages stream.
#[derive(Debug, Default)]
struct MessageDecoder {
    blocks: HashMap<u64, BlockKind>,
    tool_count: usize,
    input_tokens: u64,
    cache_read_tokens: u64,
    cache_creation_tokens: u64,
    output_tokens: u64,
    saw_usage: bool,
    stop_reason: Option<FinishReason>,
}

impl SseDecoder for MessageDecoder {
    fn decode(
        &mut self,
        event: SseEvent,
        out: &mut VecDeque<StreamEvent>,
    ) -> Result<Decoded, LlmError> {
        let data = http::parse_json(&event)?;
        let kind = data
            .get("type")
            .and_then(Value::as_str)
            .or(event.event.as_deref())
            .unwrap_or_default();
        match kind {
            "message_start" => {
                if let Some(usage) = data.pointer("/message/usage") {
                    self.read_usage(usage);
                }
            }
            "content_block_start" => self.block_start(&data, out)?,
            "content_block_delta" => self.block_delta(&data, out)?,
            "content_block_stop" => {
                let index = block_index(&data)?;
                if let Some(BlockKind::ToolUse {
                    ordinal,
                    sent_input: false,
                }) = self.blocks.get(&index).copied()
                {
                    out.push_back(StreamEvent::ToolCallArgumentsDelta {
                        index: ordinal,
                        fragment: "{}".to_string(),
                    });
                }
            }
            "message_delta" => {
                if let Some(reason) = data.pointer("/delta/stop_reason").and_then(Value::as_str) {
                    self.stop_reason = Some(match reason {
                        "tool_use" => FinishReason::ToolUse,
                        "max_tokens" | "model_context_window_exceeded" => FinishReason::MaxTokens,
                        "refusal" => FinishReason::Refusal,
                        _ => FinishReason::EndTurn,
                    });
                }
                if let Some(usage) = data.get("usage") {
                    self.read_usage(usage);
                }
            }
            "message_stop" => {
                if self.saw_usage {
                    out.push_back(StreamEvent::Usage(Usage {
                        input_tokens: self.input_tokens
                            + self.cache_read_tokens
                            + self.cache_creation_tokens,
                        output_tokens: self.output_tokens,
                        cache_read_tokens: self.cache_read_tokens,
                        cache_write_tokens: self.cache_creation_tokens,
                    }));
                }
                let fallback = if self.tool_count > 0 {
                    FinishReason::ToolUse
                } else {
                    FinishReason::EndTurn
                };
                out.push_back(StreamEvent::Finished(self.stop_reason.unwrap_or(fallback)));
                return Ok(Decoded::Done);
            }
            "error" => return Err(stream_error(&data)),
            // `ping` and whatever the API adds later.
            _ => {}
        }
        Ok(Decoded::Continue)
    }
}

impl MessageDecoder {
    /// Usage arrives in `message_start` and (cumulatively) in `message_delta`; later counts win.
    fn read_usage(&mut self, usage: &Value) {
        let mut take = |key: &str, slot: &mut u64| {
            if let Some(value) = usage.get(key).and_then(Value::as_u64) {
                *slot = value;
                self.saw_usage = true;
            }
        };
        let (mut input, mut read, mut creation, mut output) = (
            self.input_tokens,
            self.cache_read_tokens,
            self.cache_creation_tokens,
            self.output_tokens,
        );
        take("input_tokens", &mut input);
        take("cache_read_input_tokens", &mut read);
        take("cache_creation_input_tokens", &mut creation);
        take("output_tokens", &mut output);
        (
            self.input_tokens,
            self.cache_read_tokens,
            self.cache_creation_tokens,
            self.output_tokens,
        ) = (input, read, creation, output);
    }

    fn block_start(
        &mut self,
        data: &Value,
        out: &mut VecDeque<StreamEvent>,
    ) -> Result<(), LlmError> {
        let index = block_index(data)?;
        let block = data.get("content_block").ok_or_else(|| {
            LlmError::Malformed("content_block_start without a content_block".to_string())
        })?;
        let text_of = |key: &str| block.get(key).and_then(Value::as_str).unwrap_or_default();
        let kind = match block.get("type").and_then(Value::as_str) {
            Some("text") => {
                push_text(out, StreamEvent::TextDelta, text_of("text"));
                BlockKind::Text
            }
            Some("thinking") => {
                push_text(out, StreamEvent::ThinkingDelta, text_of("thinking"));
                BlockKind::Thinking
            }
            Some("tool_use") => {
                let ordinal = self.tool_count;
                self.tool_count += 1;
                out.push_back(StreamEvent::ToolCallStart {
                    index: ordinal,
                    id: text_of("id").to_string(),
                    name: text_of("name").to_string(),
                });
                // The input usually streams as JSON fragments after an empty `{}`; a proxy that
                // sends it whole in the start event is served too.
                let sent_input = match block.get("input") {
                    Some(Value::Object(input)) if !input.is_empty() => {
                        out.push_back(StreamEvent::ToolCallArgumentsDelta {
                            index: ordinal,
                            fragment: Value::Object(input.clone()).to_string(),
                        });
                        true
                    }
                    _ => false,
                };
                BlockKind::ToolUse {
                    ordinal,
                    sent_input,
                }
            }
            _ => BlockKind::Other,
        };
        self.blocks.insert(index, kind);
        Ok(())
    }

    fn block_delta(
        &mut self,
        data: &Value,
        out: &mut VecDeque<StreamEvent>,
    ) -> Result<(), LlmError> {
        let index = block_index(data)?;
        let delta = data.get("delta").ok_or_else(|| {
            LlmError::Malformed("content_block_delta without a delta".to_string())
        })?;
        let text_of = |key: &str| delta.get(key).and_then(Value::as_str).unwrap_or_default();
        match delta.get("type").and_then(Value::as_str) {
            Some("text_delta") => push_text(out, StreamEvent::TextDelta, text_of("text")),
            Some("thinking_delta") => {
                push_text(out, StreamEvent::ThinkingDelta, text_of("thinking"));
            }
            Some("signature_delta") => {
                push_text(out, StreamEvent::ThinkingSignature, text_of("signature"));
            }
            Some("input_json_delta") => {
                let Some(BlockKind::ToolUse {
                    ordinal,
                    sent_input,
                }) = self.blocks.get_mut(&index)
                else {
                    return Err(LlmError::Malformed(format!(
                        "input_json_delta for block {index}, which is not a tool_use block"
                    )));
                };
                let fragment = text_of("partial_json");
                if !fragment.is_empty() {
                    *sent_input = true;
                    out.push_back(StreamEvent::ToolCallArgumentsDelta {
                        index: *ordinal,
                        fragment: fragment.to_string(),
                    });
                }
            }
            // `citations_delta` and future kinds carry nothing lode shows.
            _ => {}
        }
        Ok(())
    }
}

fn push_text(out: &mut VecDeque<StreamEvent>, make: fn(String) -> StreamEvent, text: &str) {
    if !text.is_empty() {
        out.push_back(make(text.to_string()));
    }
}

fn block_index(data: &Value) -> Result<u64, LlmError> {
    data.get("index").and_then(Value::as_u64).ok_or_else(|| {
        LlmError::Malformed(format!("a content block event without an index: {data}"))
    })
}

/// An `error` event in the middle of the stream.
fn stream_error(data: &Value) -> LlmError {
    let kind = data
        .pointer("/error/type")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let message = data
        .pointer("/error/message")
        .and_then(Value::as_str)
        .unwrap_or(kind)
        .to_string();
    match kind {
        "overloaded_error" => LlmError::Server {
            status: 529,
            message,
        },
        "rate_limit_error" => LlmError::RateLimited { retry_after: None },
        "request_too_large" => LlmError::ContextLength { message },
        "authentication_error" => LlmError::Auth {
            status: 401,
            message,
        },
        "permission_error" => LlmError::Auth {
            status: 403,
            message,
        },
        "invalid_request_error" if mentions_context_length(&message) => {
            LlmError::ContextLength { message }
        }
        "invalid_request_error" | "not_found_error" => LlmError::BadRequest {
            status: 400,
            message,
        },
        _ => LlmError::Server {
            status: 500,
            message,
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{ToolCall, ToolResult, ToolSpec};

    fn info() -> ModelInfo {
        ModelInfo {
            provider: "claude".to_string(),
            model: "claude-test".to_string(),
            context_window: 200_000,
            max_output_tokens: 1024,
            supports_images: true,
        }
    }

    #[test]
    fn request_encoding_covers_every_block() {
        let request = ChatRequest {
            system: "be brief".to_string(),
            messages: vec![
                Message {
                    role: Role::User,
                    content: vec![
                        ContentPart::Text {
                            text: "look".to_string(),
                        },
                        ContentPart::Image {
                            mime_type: "image/png".to_string(),
                            data: "AAAA".to_string(),
                        },
                    ],
                },
                Message {
                    role: Role::Assistant,
                    content: vec![
                        ContentPart::Thinking {
                            text: "hmm".to_string(),
                            signature: Some("sig".to_string()),
                        },
                        ContentPart::Thinking {
                            text: "unsigned".to_string(),
                            signature: None,
                        },
                        ContentPart::Text {
                            text: String::new(),
                        },
                        ContentPart::ToolCall(ToolCall {
                            id: "toolu_1".to_string(),
                            name: "read_file".to_string(),
                            arguments: json!({"path": "a.rs"}),
                        }),
                    ],
                },
                Message {
                    role: Role::User,
                    content: vec![
                        ContentPart::Text {
                            text: "and?".to_string(),
                        },
                        ContentPart::ToolResult(ToolResult {
                            call_id: "toolu_1".to_string(),
                            content: "no such file".to_string(),
                            is_error: true,
                        }),
                        ContentPart::ToolResult(ToolResult {
                            call_id: "toolu_2".to_string(),
                            content: String::new(),
                            is_error: false,
                        }),
                        ContentPart::Text {
                            text: " \n".to_string(),
                        },
                    ],
                },
                Message {
                    role: Role::Assistant,
                    content: vec![],
                },
            ],
            tools: vec![ToolSpec {
                name: "read_file".to_string(),
                description: "Reads a file".to_string(),
                parameters: json!({"type": "object"}),
            }],
            max_tokens: None,
            temperature: Some(0.2),
            cache_key: Some("session-1".to_string()),
        };
        let body = encode_request(&request, &info(), &AnthropicOptions::default());
        assert_eq!(
            body,
            json!({
                "model": "claude-test",
                "max_tokens": 1024,
                "stream": true,
                "temperature": 0.2,
                "system": [{"type": "text", "text": "be brief", "cache_control": {"type": "ephemeral"}}],
                "messages": [
                    {"role": "user", "content": [
                        {"type": "text", "text": "look"},
                        {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "AAAA"}},
                    ]},
                    {"role": "assistant", "content": [
                        {"type": "thinking", "thinking": "hmm", "signature": "sig"},
                        {"type": "tool_use", "id": "toolu_1", "name": "read_file", "input": {"path": "a.rs"}},
                    ]},
                    {"role": "user", "content": [
                        {"type": "tool_result", "tool_use_id": "toolu_1", "content": "no such file", "is_error": true},
                        {"type": "tool_result", "tool_use_id": "toolu_2"},
                        {"type": "text", "text": "and?", "cache_control": {"type": "ephemeral"}},
                    ]},
                ],
                "tools": [{"name": "read_file", "description": "Reads a file", "input_schema": {"type": "object"}, "cache_control": {"type": "ephemeral"}}],
            })
        );
        // The text body, written from remembered messages' JSON, is the same value, whatever
        // was remembered before (the newest message's breakpoint moves as messages are added).
        let encoded = EncodedMessages::default();
        for count in 0..=request.messages.len() {
            let partial = ChatRequest {
                messages: request.messages[..count].to_vec(),
                ..request.clone()
            };
            for _ in 0..2 {
                let text =
                    encode_request_body(&partial, &info(), &AnthropicOptions::default(), &encoded);
                assert_eq!(
                    serde_json::from_slice::<Value>(&text).unwrap(),
                    encode_request(&partial, &info(), &AnthropicOptions::default()),
                    "{count} messages"
                );
            }
        }
    }

    #[test]
    fn thinking_budget_replaces_temperature() {
        let request = ChatRequest {
            temperature: Some(0.3),
            ..ChatRequest::default()
        };
        let options = AnthropicOptions {
            thinking_budget_tokens: Some(2048),
        };
        let body = encode_request(&request, &info(), &options);
        assert_eq!(
            body["thinking"],
            json!({"type": "enabled", "budget_tokens": 2048})
        );
        assert!(body.get("temperature").is_none());
        assert!(body.get("system").is_none());
    }

    fn decode_all(events: &[Value]) -> (Vec<StreamEvent>, Result<Decoded, LlmError>) {
        let mut decoder = MessageDecoder::default();
        let mut out = VecDeque::new();
        let mut last = Ok(Decoded::Continue);
        for data in events {
            last = decoder.decode(
                SseEvent {
                    event: data["type"].as_str().map(str::to_string),
                    data: data.to_string(),
                },
                &mut out,
            );
            if last.is_err() {
                break;
            }
        }
        (out.into_iter().collect(), last)
    }

    #[test]
    fn tool_use_without_input_deltas_gets_empty_object_and_usage_sums_cache() {
        let (events, last) = decode_all(&[
            json!({"type": "message_start", "message": {"usage": {"input_tokens": 5, "cache_read_input_tokens": 100, "cache_creation_input_tokens": 10, "output_tokens": 1}}}),
            json!({"type": "content_block_start", "index": 0, "content_block": {"type": "redacted_thinking", "data": "xx"}}),
            json!({"type": "content_block_stop", "index": 0}),
            json!({"type": "content_block_start", "index": 1, "content_block": {"type": "tool_use", "id": "t1", "name": "list_dir", "input": {}}}),
            json!({"type": "ping"}),
            json!({"type": "content_block_stop", "index": 1}),
            json!({"type": "message_delta", "delta": {"stop_reason": "tool_use"}, "usage": {"output_tokens": 12}}),
            json!({"type": "message_stop"}),
        ]);
        assert_eq!(last, Ok(Decoded::Done));
        assert_eq!(
            events,
            vec![
                StreamEvent::ToolCallStart {
                    index: 0,
                    id: "t1".into(),
                    name: "list_dir".into()
                },
                StreamEvent::ToolCallArgumentsDelta {
                    index: 0,
                    fragment: "{}".into()
                },
                StreamEvent::Usage(Usage {
                    input_tokens: 115,
                    output_tokens: 12,
                    cache_read_tokens: 100,
                    cache_write_tokens: 10,
                }),
                StreamEvent::Finished(FinishReason::ToolUse),
            ]
        );
    }

    #[test]
    fn error_events_map_to_errors() {
        let error = |kind: &str, message: &str| {
            decode_all(&[json!({"type": "error", "error": {"type": kind, "message": message}})]).1
        };
        let overloaded = error("overloaded_error", "Overloaded").unwrap_err();
        assert_eq!(
            overloaded,
            LlmError::Server {
                status: 529,
                message: "Overloaded".into()
            }
        );
        assert!(overloaded.is_retryable());
        assert!(matches!(
            error("rate_limit_error", "slow down"),
            Err(LlmError::RateLimited { .. })
        ));
        assert!(matches!(
            error(
                "invalid_request_error",
                "prompt is too long: 201000 tokens > 200000 maximum"
            ),
            Err(LlmError::ContextLength { .. })
        ));
        assert!(matches!(
            error("invalid_request_error", "bad"),
            Err(LlmError::BadRequest { status: 400, .. })
        ));
        let (_, last) = decode_all(&[
            json!({"type": "content_block_delta", "index": 3, "delta": {"type": "input_json_delta", "partial_json": "{"}}),
        ]);
        assert!(matches!(last, Err(LlmError::Malformed(_))));
    }
}
