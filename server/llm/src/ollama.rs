//! Ollama's native chat API (`POST {base_url}/api/chat`, `kind = "ollama"`): request encoding
//! from a [`ChatRequest`] and decoding of the streamed newline-delimited JSON.
//!
//! Why not Ollama's OpenAI-compatible endpoint: it ignores the context length a request asks
//! for and runs the model with the server's default (4096 tokens, 2048 before Ollama 0.6),
//! cutting a longer prompt from the front, where the system prompt and the tools are. The native
//! API takes `options.num_ctx`: every request asks for the window lode budgets (the provider's
//! `context_window`), so what lode fits is what the model sees.

use std::collections::{HashMap, VecDeque};

use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use super::http::{self, Connection, Decoded, SseDecoder, mentions_context_length};
use super::sse::SseEvent;
use super::{
    ChatRequest, ContentPart, EventStream, FinishReason, LlmError, Message, ModelInfo, Provider,
    Role, StreamEvent, Usage,
};

/// Where Ollama listens by default (its native API; no `/v1`).
pub const DEFAULT_BASE_URL: &str = "http://127.0.0.1:11434";

/// A chat model served by Ollama's native API.
#[derive(Debug)]
pub struct OllamaProvider {
    connection: Connection,
    info: ModelInfo,
}

impl OllamaProvider {
    pub(crate) fn new(connection: Connection, info: ModelInfo) -> Self {
        Self { connection, info }
    }
}

#[async_trait::async_trait]
impl Provider for OllamaProvider {
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
        let body = encode_request(request, &self.info).to_string().into_bytes();
        let mut builder = self.connection.post(body);
        let key = self.connection.key.as_ref();
        if let Some(key) = key {
            builder = builder.bearer_auth(key.expose());
        }
        http::open_stream(
            builder,
            LineDecoder::default(),
            key,
            self.connection.timeouts,
            cancel,
        )
        .await
    }
}

/// The request body: the messages, the tools, and the options that make Ollama keep the whole
/// window lode budgets (`num_ctx`) and cap the answer (`num_predict`).
pub(crate) fn encode_request(request: &ChatRequest, info: &ModelInfo) -> Value {
    let mut messages = Vec::new();
    if !request.system.is_empty() {
        messages.push(json!({"role": "system", "content": request.system}));
    }
    // Ollama names a tool result by its tool, not by the call's id.
    let names: HashMap<&str, &str> = request
        .messages
        .iter()
        .flat_map(|message| message.tool_calls())
        .map(|call| (call.id.as_str(), call.name.as_str()))
        .collect();
    for message in &request.messages {
        match message.role {
            Role::User => encode_user(message, &names, &mut messages),
            Role::Assistant => encode_assistant(message, &mut messages),
        }
    }
    let mut options = json!({
        "num_ctx": info.context_window,
        "num_predict": request.max_tokens.unwrap_or(info.max_output_tokens),
    });
    if let Some(temperature) = request.temperature {
        options["temperature"] = http::temperature_json(temperature);
    }
    let mut body = json!({
        "model": info.model,
        "messages": messages,
        "stream": true,
        "options": options,
    });
    if !request.tools.is_empty() {
        let tools: Vec<Value> = request
            .tools
            .iter()
            .map(|tool| {
                json!({"type": "function", "function": {
                    "name": tool.name,
                    "description": tool.description,
                    "parameters": tool.parameters,
                }})
            })
            .collect();
        body["tools"] = json!(tools);
    }
    body
}

/// Tool results first (`role: "tool"`, named by their tool), then the text and images as one
/// user message.
fn encode_user(message: &Message, names: &HashMap<&str, &str>, out: &mut Vec<Value>) {
    let mut text = String::new();
    let mut images = Vec::new();
    for part in &message.content {
        match part {
            ContentPart::ToolResult(result) => {
                let content = if result.is_error {
                    format!("Error: {}", result.content)
                } else {
                    result.content.clone()
                };
                let mut entry = json!({"role": "tool", "content": content});
                if let Some(name) = names.get(result.call_id.as_str()) {
                    entry["tool_name"] = json!(name);
                }
                out.push(entry);
            }
            ContentPart::Text { text: piece } | ContentPart::Context { text: piece } => {
                text.push_str(piece);
            }
            ContentPart::Image { data, .. } => images.push(json!(data)),
            ContentPart::Thinking { .. } | ContentPart::ToolCall(_) => {}
        }
    }
    if text.is_empty() && images.is_empty() {
        return;
    }
    let mut entry = json!({"role": "user", "content": text});
    if !images.is_empty() {
        entry["images"] = json!(images);
    }
    out.push(entry);
}

/// Ollama takes a call's arguments as an object; arguments kept as text (the model sent
/// something that was not JSON) go back as the object they parse to, or an empty one.
fn encode_assistant(message: &Message, out: &mut Vec<Value>) {
    let text = message.text();
    let calls: Vec<Value> = message
        .tool_calls()
        .map(|call| {
            let arguments = match &call.arguments {
                Value::Object(_) => call.arguments.clone(),
                Value::String(raw) => serde_json::from_str::<Value>(raw)
                    .ok()
                    .filter(Value::is_object)
                    .unwrap_or_else(|| json!({})),
                _ => json!({}),
            };
            json!({"function": {"name": call.name, "arguments": arguments}})
        })
        .collect();
    if text.is_empty() && calls.is_empty() {
        return;
    }
    let mut entry = json!({"role": "assistant", "content": text});
    if !calls.is_empty() {
        entry["tool_calls"] = json!(calls);
    }
    out.push(entry);
}

/// Reads Ollama's stream: one JSON object a line, the last with `"done": true` and the counts.
#[derive(Debug, Default)]
struct LineDecoder {
    calls: usize,
    /// Ids unique to this answer (Ollama's calls carry none, or ids a later answer repeats).
    stamp: Option<u128>,
}

impl SseDecoder for LineDecoder {
    const NDJSON: bool = true;

    fn decode(
        &mut self,
        event: SseEvent,
        out: &mut VecDeque<StreamEvent>,
    ) -> Result<Decoded, LlmError> {
        let line = http::parse_json(&event)?;
        if let Some(error) = line.get("error").filter(|error| !error.is_null()) {
            let message = error
                .as_str()
                .map(str::to_owned)
                .unwrap_or_else(|| error.to_string());
            return Err(if mentions_context_length(&message) {
                LlmError::ContextLength { message }
            } else {
                LlmError::Server {
                    status: 500,
                    message,
                }
            });
        }
        let message = line.get("message");
        let text_of = |key: &str| {
            message
                .and_then(|message| message.get(key))
                .and_then(Value::as_str)
                .filter(|text| !text.is_empty())
        };
        if let Some(thinking) = text_of("thinking") {
            out.push_back(StreamEvent::ThinkingDelta(thinking.to_owned()));
        }
        if let Some(text) = text_of("content") {
            out.push_back(StreamEvent::TextDelta(text.to_owned()));
        }
        if let Some(calls) = message
            .and_then(|message| message.get("tool_calls"))
            .and_then(Value::as_array)
        {
            for call in calls {
                self.decode_call(call, out)?;
            }
        }
        if line.get("done").and_then(Value::as_bool) != Some(true) {
            return Ok(Decoded::Continue);
        }
        let number = |key: &str| line.get(key).and_then(Value::as_u64).unwrap_or(0);
        out.push_back(StreamEvent::Usage(Usage {
            input_tokens: number("prompt_eval_count"),
            output_tokens: number("eval_count"),
            cache_read_tokens: 0,
            cache_write_tokens: 0,
        }));
        let reason = match line.get("done_reason").and_then(Value::as_str) {
            _ if self.calls > 0 => FinishReason::ToolUse,
            Some("length") => FinishReason::MaxTokens,
            _ => FinishReason::EndTurn,
        };
        out.push_back(StreamEvent::Finished(reason));
        Ok(Decoded::Done)
    }
}

impl LineDecoder {
    /// A call arrives whole in one line: its start, then all of its arguments.
    fn decode_call(
        &mut self,
        call: &Value,
        out: &mut VecDeque<StreamEvent>,
    ) -> Result<(), LlmError> {
        let function = call.get("function").unwrap_or(&Value::Null);
        let name = function
            .get("name")
            .and_then(Value::as_str)
            .filter(|name| !name.is_empty())
            .ok_or_else(|| LlmError::Malformed(format!("a tool call without a name: {call}")))?;
        let arguments = match function.get("arguments") {
            None | Some(Value::Null) => "{}".to_owned(),
            Some(Value::String(text)) => text.clone(),
            Some(other) => other.to_string(),
        };
        let stamp = *self.stamp.get_or_insert_with(|| {
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |elapsed| elapsed.as_nanos())
        });
        let index = self.calls;
        self.calls += 1;
        out.push_back(StreamEvent::ToolCallStart {
            index,
            id: format!("ollama_{stamp:x}_{index}"),
            name: name.to_owned(),
        });
        out.push_back(StreamEvent::ToolCallArgumentsDelta {
            index,
            fragment: arguments,
        });
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{ToolCall, ToolResult, ToolSpec};

    fn info() -> ModelInfo {
        ModelInfo {
            provider: "ollama".to_owned(),
            model: "qwen2.5-coder:1.5b".to_owned(),
            context_window: 8192,
            max_output_tokens: 1024,
            supports_images: false,
        }
    }

    #[test]
    fn the_request_asks_for_the_budgeted_window_and_names_results_by_tool() {
        let request = ChatRequest {
            system: "be brief".to_owned(),
            messages: vec![
                Message::user_text("look"),
                Message {
                    role: Role::Assistant,
                    content: vec![
                        ContentPart::Text {
                            text: "reading".to_owned(),
                        },
                        ContentPart::ToolCall(ToolCall {
                            id: "c1".to_owned(),
                            name: "read_file".to_owned(),
                            arguments: json!({"path": "a.rs"}),
                        }),
                        ContentPart::ToolCall(ToolCall {
                            id: "c2".to_owned(),
                            name: "grep".to_owned(),
                            arguments: json!("{not json"),
                        }),
                    ],
                },
                Message {
                    role: Role::User,
                    content: vec![
                        ContentPart::ToolResult(ToolResult {
                            call_id: "c1".to_owned(),
                            content: "fn a() {}".to_owned(),
                            is_error: false,
                        }),
                        ContentPart::ToolResult(ToolResult {
                            call_id: "c2".to_owned(),
                            content: "bad arguments".to_owned(),
                            is_error: true,
                        }),
                    ],
                },
            ],
            tools: vec![ToolSpec {
                name: "read_file".to_owned(),
                description: "Reads a file".to_owned(),
                parameters: json!({"type": "object"}),
            }],
            max_tokens: None,
            temperature: Some(0.2),
            cache_key: Some("session".to_owned()),
        };
        assert_eq!(
            encode_request(&request, &info()),
            json!({
                "model": "qwen2.5-coder:1.5b",
                "stream": true,
                "options": {"num_ctx": 8192, "num_predict": 1024, "temperature": 0.2},
                "messages": [
                    {"role": "system", "content": "be brief"},
                    {"role": "user", "content": "look"},
                    {"role": "assistant", "content": "reading", "tool_calls": [
                        {"function": {"name": "read_file", "arguments": {"path": "a.rs"}}},
                        {"function": {"name": "grep", "arguments": {}}},
                    ]},
                    {"role": "tool", "content": "fn a() {}", "tool_name": "read_file"},
                    {"role": "tool", "content": "Error: bad arguments", "tool_name": "grep"},
                ],
                "tools": [{"type": "function", "function": {"name": "read_file", "description": "Reads a file", "parameters": {"type": "object"}}}],
            })
        );
    }

    fn decode_lines(lines: &[&str]) -> Result<Vec<StreamEvent>, LlmError> {
        let mut decoder = LineDecoder::default();
        let mut out = VecDeque::new();
        for line in lines {
            let done = decoder.decode(
                SseEvent {
                    event: None,
                    data: (*line).to_owned(),
                },
                &mut out,
            )?;
            if done == Decoded::Done {
                break;
            }
        }
        Ok(out.into_iter().collect())
    }

    #[test]
    fn text_calls_and_the_counts_are_decoded() {
        let events = decode_lines(&[
            r#"{"message":{"role":"assistant","content":"Hel"},"done":false}"#,
            r#"{"message":{"role":"assistant","content":"lo","thinking":"hm"},"done":false}"#,
            r#"{"message":{"role":"assistant","content":"","tool_calls":[{"function":{"name":"read_file","arguments":{"path":"a.rs"}}}]},"done":false}"#,
            r#"{"message":{"role":"assistant","content":""},"done":true,"done_reason":"stop","prompt_eval_count":812,"eval_count":31}"#,
        ])
        .unwrap();
        assert_eq!(events[0], StreamEvent::TextDelta("Hel".to_owned()));
        assert_eq!(events[1], StreamEvent::ThinkingDelta("hm".to_owned()));
        assert_eq!(events[2], StreamEvent::TextDelta("lo".to_owned()));
        assert!(
            matches!(&events[3], StreamEvent::ToolCallStart { index: 0, name, .. } if name == "read_file")
        );
        assert_eq!(
            events[4],
            StreamEvent::ToolCallArgumentsDelta {
                index: 0,
                fragment: r#"{"path":"a.rs"}"#.to_owned()
            }
        );
        assert_eq!(
            events[5],
            StreamEvent::Usage(Usage {
                input_tokens: 812,
                output_tokens: 31,
                cache_read_tokens: 0,
                cache_write_tokens: 0
            })
        );
        // Ollama says "stop" after calls; the calls still want answers.
        assert_eq!(events[6], StreamEvent::Finished(FinishReason::ToolUse));
    }

    #[test]
    fn errors_in_the_stream_and_bad_lines_are_clear() {
        let overflow = decode_lines(&[r#"{"error":"input length exceeds the context length"}"#]);
        assert!(
            matches!(overflow, Err(LlmError::ContextLength { .. })),
            "{overflow:?}"
        );
        let other = decode_lines(&[r#"{"error":"model crashed"}"#]);
        assert!(
            matches!(&other, Err(LlmError::Server { message, .. }) if message == "model crashed"),
            "{other:?}"
        );
        assert!(matches!(
            decode_lines(&["not json"]),
            Err(LlmError::Malformed(_))
        ));
        assert!(matches!(
            decode_lines(&[r#"{"message":{"tool_calls":[{"function":{}}]},"done":false}"#]),
            Err(LlmError::Malformed(_))
        ));
        let cut =
            decode_lines(&[r#"{"message":{"content":"x"},"done":true,"done_reason":"length"}"#])
                .unwrap();
        assert_eq!(
            cut.last(),
            Some(&StreamEvent::Finished(FinishReason::MaxTokens))
        );
    }
}
