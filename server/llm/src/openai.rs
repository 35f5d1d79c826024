//! The OpenAI-compatible chat-completions client (`POST {base_url}/chat/completions`), which also
//! serves Ollama, vLLM, llama.cpp's server, LM Studio and OpenRouter: request encoding from a
//! [`ChatRequest`] and decoding of the streamed `chat.completion.chunk`s.

use std::collections::VecDeque;
use std::sync::Arc;

use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use super::encoded::{EncodedMessages, body_with_messages, join_values};
use super::http::{self, Connection, Decoded, SseDecoder, mentions_context_length};
use super::sse::SseEvent;
use super::{
    ChatRequest, ContentPart, EventStream, FinishReason, LlmError, Message, ModelInfo, Provider,
    Role, StreamEvent, Usage,
};

/// Which request field caps the output. OpenAI's own API wants `max_completion_tokens` (its
/// reasoning models refuse `max_tokens`); most compatible servers only know `max_tokens`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum MaxTokensField {
    MaxTokens,
    MaxCompletionTokens,
}

#[derive(Debug, Clone)]
pub(crate) struct OpenAiOptions {
    pub max_tokens_field: MaxTokensField,
    /// `reasoning_effort` for models that take it ("low", "medium", "high").
    pub reasoning_effort: Option<String>,
    /// Whether a request's [`ChatRequest::cache_key`] is sent as `prompt_cache_key` (OpenAI's
    /// own API takes it; some compatible servers refuse fields they do not know).
    pub prompt_cache_key: bool,
}

/// A chat model behind an OpenAI-compatible endpoint.
#[derive(Debug)]
pub struct OpenAiProvider {
    connection: Connection,
    info: ModelInfo,
    options: OpenAiOptions,
    /// The messages' JSON of earlier requests.
    encoded: EncodedMessages,
}

impl OpenAiProvider {
    pub(crate) fn new(connection: Connection, info: ModelInfo, options: OpenAiOptions) -> Self {
        Self {
            connection,
            info,
            options,
            encoded: EncodedMessages::default(),
        }
    }
}

#[async_trait::async_trait]
impl Provider for OpenAiProvider {
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
        let mut builder = self.connection.post(body);
        let key = self.connection.key.as_ref();
        if let Some(key) = key {
            builder = builder.bearer_auth(key.expose());
        }
        http::open_stream(
            builder,
            ChunkDecoder::default(),
            key,
            self.connection.timeouts,
            cancel,
        )
        .await
    }
}

/// The request body for `request` (the value [`encode_request_body`] writes as text).
#[cfg(test)]
pub(crate) fn encode_request(
    request: &ChatRequest,
    info: &ModelInfo,
    options: &OpenAiOptions,
) -> Value {
    let mut messages = Vec::new();
    if !request.system.is_empty() {
        messages.push(json!({"role": "system", "content": request.system}));
    }
    for message in &request.messages {
        encode_message(message, &mut messages);
    }
    let mut body = request_fields(request, info, options);
    body["messages"] = Value::Array(messages);
    body
}

/// [`encode_request`]'s body as text, each message's JSON taken from `encoded` (so only
/// messages new to it are encoded).
pub(crate) fn encode_request_body(
    request: &ChatRequest,
    info: &ModelInfo,
    options: &OpenAiOptions,
    encoded: &EncodedMessages,
) -> Vec<u8> {
    let mut pieces: Vec<Arc<str>> = Vec::with_capacity(request.messages.len() + 1);
    if !request.system.is_empty() {
        pieces.push(Arc::from(
            json!({"role": "system", "content": request.system}).to_string(),
        ));
    }
    for message in &request.messages {
        pieces.push(encoded.get(message, |message| {
            let mut values = Vec::new();
            encode_message(message, &mut values);
            join_values(&values)
        }));
    }
    body_with_messages(&pieces, &request_fields(request, info, options))
}

fn encode_message(message: &Message, out: &mut Vec<Value>) {
    match message.role {
        Role::User => encode_user(message, out),
        Role::Assistant => encode_assistant(message, out),
    }
}

/// Everything in the body but the messages.
fn request_fields(request: &ChatRequest, info: &ModelInfo, options: &OpenAiOptions) -> Value {
    let mut body = json!({
        "model": info.model,
        "stream": true,
        "stream_options": {"include_usage": true},
    });
    let max_tokens = request.max_tokens.unwrap_or(info.max_output_tokens);
    let field = match options.max_tokens_field {
        MaxTokensField::MaxTokens => "max_tokens",
        MaxTokensField::MaxCompletionTokens => "max_completion_tokens",
    };
    body[field] = json!(max_tokens);
    if let Some(temperature) = request.temperature {
        body["temperature"] = http::temperature_json(temperature);
    }
    if let Some(effort) = &options.reasoning_effort {
        body["reasoning_effort"] = json!(effort);
    }
    if options.prompt_cache_key
        && let Some(key) = &request.cache_key
    {
        body["prompt_cache_key"] = json!(key);
    }
    if !request.tools.is_empty() {
        let tools: Vec<Value> = request
            .tools
            .iter()
            .map(|tool| {
                json!({
                    "type": "function",
                    "function": {
                        "name": tool.name,
                        "description": tool.description,
                        "parameters": tool.parameters,
                    }
                })
            })
            .collect();
        body["tools"] = json!(tools);
    }
    body
}

/// Tool results become `role: "tool"` messages, which must directly follow the assistant's
/// calls, so they go first; the rest is one user message (plain text when there is no image,
/// which every compatible server understands).
fn encode_user(message: &Message, out: &mut Vec<Value>) {
    let mut parts = Vec::new();
    let mut has_image = false;
    // The attached context and the user's words, in order, as one text.
    let mut text = String::new();
    for part in &message.content {
        match part {
            ContentPart::ToolResult(result) => {
                let content = if result.is_error {
                    format!("Error: {}", result.content)
                } else {
                    result.content.clone()
                };
                out.push(json!({
                    "role": "tool",
                    "tool_call_id": result.call_id,
                    "content": content,
                }));
            }
            ContentPart::Text { text: piece } | ContentPart::Context { text: piece } => {
                text.push_str(piece);
                parts.push(json!({"type": "text", "text": piece}));
            }
            ContentPart::Image { mime_type, data } => {
                has_image = true;
                parts.push(json!({
                    "type": "image_url",
                    "image_url": {"url": format!("data:{mime_type};base64,{data}")},
                }));
            }
            // A user message carries neither; nothing to send if one slipped in.
            ContentPart::Thinking { .. } | ContentPart::ToolCall(_) => {}
        }
    }
    if parts.is_empty() {
        return;
    }
    let content = if has_image { json!(parts) } else { json!(text) };
    out.push(json!({"role": "user", "content": content}));
}

/// Thinking is not sent back: compatible servers either ignore it or refuse it.
fn encode_assistant(message: &Message, out: &mut Vec<Value>) {
    let text = message.text();
    let calls: Vec<Value> = message
        .tool_calls()
        .map(|call| {
            // Arguments that were not JSON were kept as a string: send back what the model sent.
            let arguments = match &call.arguments {
                Value::String(raw) => raw.clone(),
                other => other.to_string(),
            };
            json!({
                "id": call.id,
                "type": "function",
                "function": {"name": call.name, "arguments": arguments},
            })
        })
        .collect();
    if text.is_empty() && calls.is_empty() {
        return;
    }
    let mut entry = json!({"role": "assistant", "content": if text.is_empty() { Value::Null } else { json!(text) }});
    if !calls.is_empty() {
        entry["tool_calls"] = json!(calls);
    }
    out.push(entry);
}

/// One tool call being streamed, keyed by the provider's `index`.
#[derive(Debug)]
struct ToolSlot {
    provider_index: u64,
    id: Option<String>,
    name: Option<String>,
    started: bool,
    /// Argument text that arrived before the call's name.
    held_arguments: String,
    sent_arguments: bool,
}

/// Reads `chat.completion.chunk` events.
#[derive(Debug, Default)]
struct ChunkDecoder {
    tools: Vec<ToolSlot>,
    finish: Option<FinishReason>,
    usage: Option<Usage>,
}

impl SseDecoder for ChunkDecoder {
    fn decode(
        &mut self,
        event: SseEvent,
        out: &mut VecDeque<StreamEvent>,
    ) -> Result<Decoded, LlmError> {
        if event.data.trim() == "[DONE]" {
            self.finish_stream(out);
            return Ok(Decoded::Done);
        }
        let chunk = http::parse_json(&event)?;
        if let Some(error) = chunk.get("error").filter(|error| !error.is_null()) {
            return Err(stream_error(error, &event.data));
        }
        if let Some(usage) = chunk.get("usage").filter(|usage| usage.is_object()) {
            self.usage = Some(parse_usage(usage, chunk.get("timings")));
        }
        let choices = chunk.get("choices").and_then(Value::as_array);
        // Only the first choice: lode never asks for more than one.
        let Some(choice) = choices.and_then(|choices| {
            choices
                .iter()
                .find(|choice| choice.get("index").and_then(Value::as_u64).unwrap_or(0) == 0)
        }) else {
            return Ok(Decoded::Continue);
        };
        if let Some(delta) = choice.get("delta") {
            self.decode_delta(delta, out)?;
        }
        if let Some(reason) = choice.get("finish_reason").and_then(Value::as_str) {
            self.finish = Some(match reason {
                "tool_calls" | "function_call" => FinishReason::ToolUse,
                "length" => FinishReason::MaxTokens,
                "content_filter" => FinishReason::Refusal,
                _ => FinishReason::EndTurn,
            });
        }
        Ok(Decoded::Continue)
    }
}

impl ChunkDecoder {
    fn decode_delta(
        &mut self,
        delta: &Value,
        out: &mut VecDeque<StreamEvent>,
    ) -> Result<(), LlmError> {
        let text_of = |key: &str| {
            delta
                .get(key)
                .and_then(Value::as_str)
                .filter(|text| !text.is_empty())
        };
        if let Some(thinking) = text_of("reasoning_content").or_else(|| text_of("reasoning")) {
            out.push_back(StreamEvent::ThinkingDelta(thinking.to_string()));
        }
        if let Some(text) = text_of("content") {
            out.push_back(StreamEvent::TextDelta(text.to_string()));
        }
        if let Some(refusal) = text_of("refusal") {
            out.push_back(StreamEvent::TextDelta(refusal.to_string()));
        }
        let Some(calls) = delta.get("tool_calls").and_then(Value::as_array) else {
            return Ok(());
        };
        for call in calls {
            let slot = self.slot_for(call)?;
            let function = call.get("function");
            let slot_state = &mut self.tools[slot];
            if slot_state.id.is_none() {
                slot_state.id = call.get("id").and_then(Value::as_str).map(str::to_string);
            }
            if slot_state.name.is_none() {
                slot_state.name = function
                    .and_then(|function| function.get("name"))
                    .and_then(Value::as_str)
                    .filter(|name| !name.is_empty())
                    .map(str::to_string);
            }
            let fragment = function
                .and_then(|function| function.get("arguments"))
                .and_then(Value::as_str)
                .unwrap_or_default();
            slot_state.held_arguments.push_str(fragment);
            if slot_state.name.is_some() {
                self.start_and_flush(slot, out);
            }
        }
        Ok(())
    }

    /// The slot a tool-call fragment belongs to: by `index`, or, for servers that omit it, a
    /// new slot when the fragment carries a new id and the latest slot otherwise.
    fn slot_for(&mut self, call: &Value) -> Result<usize, LlmError> {
        let index = match call.get("index") {
            Some(Value::Number(number)) => number.as_u64(),
            Some(Value::Null) | None => None,
            Some(other) => {
                return Err(LlmError::Malformed(format!(
                    "a tool call's index is not a number: {other}"
                )));
            }
        };
        let known = match index {
            Some(index) => self
                .tools
                .iter()
                .position(|slot| slot.provider_index == index),
            None => {
                let id = call.get("id").and_then(Value::as_str);
                match (id, self.tools.last()) {
                    (Some(id), Some(last)) if last.id.as_deref() != Some(id) => None,
                    (_, Some(_)) => Some(self.tools.len() - 1),
                    (_, None) => None,
                }
            }
        };
        if let Some(slot) = known {
            return Ok(slot);
        }
        let provider_index = index.unwrap_or(self.tools.len() as u64);
        self.tools.push(ToolSlot {
            provider_index,
            id: None,
            name: None,
            started: false,
            held_arguments: String::new(),
            sent_arguments: false,
        });
        Ok(self.tools.len() - 1)
    }

    fn start_and_flush(&mut self, slot: usize, out: &mut VecDeque<StreamEvent>) {
        let state = &mut self.tools[slot];
        if !state.started {
            state.started = true;
            out.push_back(StreamEvent::ToolCallStart {
                index: slot,
                id: state.id.clone().unwrap_or_else(|| format!("call_{slot}")),
                name: state.name.clone().unwrap_or_default(),
            });
        }
        if !state.held_arguments.is_empty() {
            state.sent_arguments = true;
            out.push_back(StreamEvent::ToolCallArgumentsDelta {
                index: slot,
                fragment: std::mem::take(&mut state.held_arguments),
            });
        }
    }

    /// At `[DONE]`: every call started and its arguments complete (`{}` when none came), then
    /// the usage and the finish reason.
    fn finish_stream(&mut self, out: &mut VecDeque<StreamEvent>) {
        for slot in 0..self.tools.len() {
            self.start_and_flush(slot, out);
            if !self.tools[slot].sent_arguments {
                out.push_back(StreamEvent::ToolCallArgumentsDelta {
                    index: slot,
                    fragment: "{}".to_string(),
                });
            }
        }
        if let Some(usage) = self.usage {
            out.push_back(StreamEvent::Usage(usage));
        }
        let mut reason = self.finish.unwrap_or(FinishReason::EndTurn);
        // Some servers say "stop" after calling tools; the calls still want answers.
        if reason == FinishReason::EndTurn && !self.tools.is_empty() {
            reason = FinishReason::ToolUse;
        }
        out.push_back(StreamEvent::Finished(reason));
    }
}

/// A chunk's `usage` block; `timings` is llama.cpp's own block beside it, whose `cache_n` (the
/// prompt tokens taken from its cache) stands in when the usage does not say what was cached.
fn parse_usage(usage: &Value, timings: Option<&Value>) -> Usage {
    let number = |value: Option<&Value>| value.and_then(Value::as_u64);
    let cached = number(usage.pointer("/prompt_tokens_details/cached_tokens"))
        .or_else(|| number(timings.and_then(|timings| timings.get("cache_n"))))
        .unwrap_or(0);
    let prompt = number(usage.get("prompt_tokens")).unwrap_or(0);
    Usage {
        // llama.cpp counts only the tokens it processed in `prompt_tokens` when `timings` says
        // how many came from its cache; everyone else counts them all.
        input_tokens: match (
            number(usage.pointer("/prompt_tokens_details/cached_tokens")),
            timings,
        ) {
            (None, Some(timings)) if number(timings.get("prompt_n")) == Some(prompt) => {
                prompt + cached
            }
            _ => prompt,
        },
        output_tokens: number(usage.get("completion_tokens")).unwrap_or(0),
        cache_read_tokens: cached,
        cache_write_tokens: 0,
    }
}

/// An `{"error": …}` object sent inside the stream (OpenRouter, vLLM do this mid-response).
fn stream_error(error: &Value, data: &str) -> LlmError {
    let (message, code) = http::provider_message(500, data);
    let code = code.unwrap_or_default();
    let status = error
        .get("code")
        .and_then(Value::as_u64)
        .and_then(|code| u16::try_from(code).ok())
        .filter(|code| (400..600).contains(code))
        .unwrap_or(500);
    if status == 429 || code.contains("rate_limit") {
        LlmError::RateLimited { retry_after: None }
    } else if mentions_context_length(&message) || mentions_context_length(&code) {
        LlmError::ContextLength { message }
    } else {
        LlmError::Server { status, message }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{ToolCall, ToolResult, ToolSpec};

    fn info() -> ModelInfo {
        ModelInfo {
            provider: "test".to_string(),
            model: "gpt-test".to_string(),
            context_window: 1000,
            max_output_tokens: 100,
            supports_images: true,
        }
    }

    fn options() -> OpenAiOptions {
        OpenAiOptions {
            max_tokens_field: MaxTokensField::MaxTokens,
            reasoning_effort: None,
            prompt_cache_key: false,
        }
    }

    #[test]
    fn request_encoding_covers_every_part() {
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
                            signature: None,
                        },
                        ContentPart::Text {
                            text: "reading".to_string(),
                        },
                        ContentPart::ToolCall(ToolCall {
                            id: "call_1".to_string(),
                            name: "read_file".to_string(),
                            arguments: json!({"path": "a.rs"}),
                        }),
                        ContentPart::ToolCall(ToolCall {
                            id: "call_2".to_string(),
                            name: "grep".to_string(),
                            arguments: json!("{not json"),
                        }),
                    ],
                },
                Message {
                    role: Role::User,
                    content: vec![
                        ContentPart::ToolResult(ToolResult {
                            call_id: "call_1".to_string(),
                            content: "fn a() {}".to_string(),
                            is_error: false,
                        }),
                        ContentPart::ToolResult(ToolResult {
                            call_id: "call_2".to_string(),
                            content: "bad arguments".to_string(),
                            is_error: true,
                        }),
                        ContentPart::Text {
                            text: "go on".to_string(),
                        },
                    ],
                },
            ],
            tools: vec![ToolSpec {
                name: "read_file".to_string(),
                description: "Reads a file".to_string(),
                parameters: json!({"type": "object"}),
            }],
            max_tokens: None,
            temperature: Some(0.5),
            cache_key: Some("session-1".to_string()),
        };
        let body = encode_request(&request, &info(), &options());
        assert_eq!(
            body,
            json!({
                "model": "gpt-test",
                "stream": true,
                "stream_options": {"include_usage": true},
                "max_tokens": 100,
                "temperature": 0.5,
                "messages": [
                    {"role": "system", "content": "be brief"},
                    {"role": "user", "content": [
                        {"type": "text", "text": "look"},
                        {"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA"}},
                    ]},
                    {"role": "assistant", "content": "reading", "tool_calls": [
                        {"id": "call_1", "type": "function", "function": {"name": "read_file", "arguments": "{\"path\":\"a.rs\"}"}},
                        {"id": "call_2", "type": "function", "function": {"name": "grep", "arguments": "{not json"}},
                    ]},
                    {"role": "tool", "tool_call_id": "call_1", "content": "fn a() {}"},
                    {"role": "tool", "tool_call_id": "call_2", "content": "Error: bad arguments"},
                    {"role": "user", "content": "go on"},
                ],
                "tools": [{"type": "function", "function": {"name": "read_file", "description": "Reads a file", "parameters": {"type": "object"}}}],
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
                let text = encode_request_body(&partial, &info(), &options(), &encoded);
                assert_eq!(
                    serde_json::from_slice::<Value>(&text).unwrap(),
                    encode_request(&partial, &info(), &options()),
                    "{count} messages"
                );
            }
        }
    }

    #[test]
    fn max_completion_tokens_and_reasoning_effort() {
        let options = OpenAiOptions {
            max_tokens_field: MaxTokensField::MaxCompletionTokens,
            reasoning_effort: Some("high".to_string()),
            prompt_cache_key: true,
        };
        let request = ChatRequest {
            max_tokens: Some(7),
            cache_key: Some("0199-session".to_string()),
            ..ChatRequest::default()
        };
        let body = encode_request(&request, &info(), &options);
        assert_eq!(body["max_completion_tokens"], 7);
        assert_eq!(body["reasoning_effort"], "high");
        assert_eq!(body["prompt_cache_key"], "0199-session");
        assert!(body.get("max_tokens").is_none());
        assert!(body.get("tools").is_none());
        let without = OpenAiOptions {
            prompt_cache_key: false,
            ..options
        };
        let body = encode_request(&request, &info(), &without);
        assert!(body.get("prompt_cache_key").is_none(), "{body}");
    }

    #[test]
    fn attached_context_is_sent_before_the_users_words() {
        let request = ChatRequest {
            messages: vec![Message {
                role: Role::User,
                content: vec![
                    ContentPart::Context {
                        text: "<context>git: clean</context>\n\n".to_string(),
                    },
                    ContentPart::Text {
                        text: "fix the test".to_string(),
                    },
                ],
            }],
            ..ChatRequest::default()
        };
        let body = encode_request(&request, &info(), &options());
        assert_eq!(
            body["messages"],
            json!([{"role": "user", "content": "<context>git: clean</context>\n\nfix the test"}])
        );
        assert_eq!(request.messages[0].text(), "fix the test");
    }

    #[test]
    fn llama_cpp_timings_say_what_came_from_its_cache() {
        // llama.cpp without `prompt_tokens_details`: `prompt_tokens` is what it processed,
        // `timings.cache_n` what it reused.
        let usage = parse_usage(
            &json!({"prompt_tokens": 40, "completion_tokens": 5}),
            Some(&json!({"cache_n": 960, "prompt_n": 40})),
        );
        assert_eq!(
            (
                usage.input_tokens,
                usage.cache_read_tokens,
                usage.uncached_input_tokens()
            ),
            (1000, 960, 40)
        );
        // OpenAI: the cached tokens are part of `prompt_tokens`.
        let usage = parse_usage(
            &json!({"prompt_tokens": 1000, "completion_tokens": 5, "prompt_tokens_details": {"cached_tokens": 960}}),
            None,
        );
        assert_eq!((usage.input_tokens, usage.cache_read_tokens), (1000, 960));
    }

    fn decode_all(datas: &[&str]) -> (Vec<StreamEvent>, Result<Decoded, LlmError>) {
        let mut decoder = ChunkDecoder::default();
        let mut out = VecDeque::new();
        let mut last = Ok(Decoded::Continue);
        for data in datas {
            last = decoder.decode(
                SseEvent {
                    event: None,
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
    fn tool_calls_without_index_and_with_late_names() {
        let (events, last) = decode_all(&[
            r#"{"choices":[{"index":0,"delta":{"tool_calls":[{"id":"a","function":{"name":"grep","arguments":"{\"q\":"}}]}}]}"#,
            r#"{"choices":[{"index":0,"delta":{"tool_calls":[{"function":{"arguments":"1}"}}]}}]}"#,
            r#"{"choices":[{"index":0,"delta":{"tool_calls":[{"id":"b","function":{"name":"ls"}}]},"finish_reason":"stop"}]}"#,
            "[DONE]",
        ]);
        assert_eq!(last, Ok(Decoded::Done));
        assert_eq!(
            events,
            vec![
                StreamEvent::ToolCallStart {
                    index: 0,
                    id: "a".into(),
                    name: "grep".into()
                },
                StreamEvent::ToolCallArgumentsDelta {
                    index: 0,
                    fragment: "{\"q\":".into()
                },
                StreamEvent::ToolCallArgumentsDelta {
                    index: 0,
                    fragment: "1}".into()
                },
                StreamEvent::ToolCallStart {
                    index: 1,
                    id: "b".into(),
                    name: "ls".into()
                },
                StreamEvent::ToolCallArgumentsDelta {
                    index: 1,
                    fragment: "{}".into()
                },
                StreamEvent::Finished(FinishReason::ToolUse),
            ]
        );
    }

    #[test]
    fn reasoning_field_variants_and_refusal() {
        let (events, _) = decode_all(&[
            r#"{"choices":[{"index":0,"delta":{"role":"assistant","content":""}}]}"#,
            r#"{"choices":[{"index":0,"delta":{"reasoning":"think"}}]}"#,
            r#"{"choices":[{"index":0,"delta":{"reasoning_content":"more"}}]}"#,
            r#"{"choices":[{"index":0,"delta":{"refusal":"no"},"finish_reason":"content_filter"}]}"#,
            r#"{"choices":[],"usage":{"prompt_tokens":9,"completion_tokens":3,"prompt_tokens_details":{"cached_tokens":4}}}"#,
            "[DONE]",
        ]);
        assert_eq!(
            events,
            vec![
                StreamEvent::ThinkingDelta("think".into()),
                StreamEvent::ThinkingDelta("more".into()),
                StreamEvent::TextDelta("no".into()),
                StreamEvent::Usage(Usage {
                    input_tokens: 9,
                    output_tokens: 3,
                    cache_read_tokens: 4,
                    cache_write_tokens: 0,
                }),
                StreamEvent::Finished(FinishReason::Refusal),
            ]
        );
    }

    #[test]
    fn errors_inside_the_stream() {
        let (_, last) = decode_all(&[r#"{"error":{"message":"overloaded","code":503}}"#]);
        assert_eq!(
            last,
            Err(LlmError::Server {
                status: 503,
                message: "overloaded".into()
            })
        );
        let (_, last) = decode_all(&[
            r#"{"error":{"message":"maximum context length is 10","code":"context_length_exceeded"}}"#,
        ]);
        assert!(matches!(last, Err(LlmError::ContextLength { .. })));
        let (_, last) = decode_all(&[r#"{"choices": ["#]);
        assert!(matches!(last, Err(LlmError::Malformed(_))));
        let (_, last) = decode_all(&[r#"{"choices":[{"delta":{"tool_calls":[{"index":"x"}]}}]}"#]);
        assert!(matches!(last, Err(LlmError::Malformed(_))));
    }
}
