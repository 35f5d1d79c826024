//! One model step: stream a response from a provider, forward text and thinking to the front end
//! as they arrive, and assemble the complete assistant message (text, thinking, tool calls).

use std::collections::BTreeMap;

use futures::StreamExt;
use tokio_util::sync::CancellationToken;

use crate::event::AgentEvent;
use crate::host::SessionHost;
use lode_llm::{
    ContentPart, EventStream, FinishReason, LlmError, Message, Role, StreamEvent, ToolCall, Usage,
};

/// The assembled result of one streamed model response.
#[derive(Debug, Clone, PartialEq)]
pub struct StepResponse {
    pub message: Message,
    pub finish: FinishReason,
    pub usage: Option<Usage>,
}

/// Whether a step failed before or after it showed the user anything; only a failure before any
/// output may be retried silently.
#[derive(Debug, Clone, PartialEq)]
pub struct StepError {
    pub error: LlmError,
    pub emitted_output: bool,
}

#[derive(Default)]
struct PendingToolCall {
    id: String,
    name: String,
    arguments: String,
}

/// Drains `stream`, emitting deltas through `host`, until the provider finishes, fails or `cancel`
/// fires.
pub async fn collect_step(
    mut stream: EventStream,
    host: &dyn SessionHost,
    cancel: &CancellationToken,
) -> Result<StepResponse, StepError> {
    let mut text = String::new();
    let mut thinking = String::new();
    let mut signature: Option<String> = None;
    let mut calls: BTreeMap<usize, PendingToolCall> = BTreeMap::new();
    let mut usage: Option<Usage> = None;
    let mut emitted_output = false;
    let fail = |error: LlmError, emitted_output: bool| StepError {
        error,
        emitted_output,
    };

    let finish = loop {
        let next = tokio::select! {
            biased;
            _ = cancel.cancelled() => return Err(fail(LlmError::Cancelled, emitted_output)),
            next = stream.next() => next,
        };
        let event = match next {
            Some(Ok(event)) => event,
            Some(Err(error)) => return Err(fail(error, emitted_output)),
            None => return Err(fail(LlmError::Truncated, emitted_output)),
        };
        match event {
            StreamEvent::TextDelta(delta) => {
                if !delta.is_empty() {
                    emitted_output = true;
                    text.push_str(&delta);
                    host.emit(AgentEvent::TextDelta { text: delta });
                }
            }
            StreamEvent::ThinkingDelta(delta) => {
                if !delta.is_empty() {
                    emitted_output = true;
                    thinking.push_str(&delta);
                    host.emit(AgentEvent::ThoughtDelta { text: delta });
                }
            }
            StreamEvent::ThinkingSignature(value) => signature = Some(value),
            StreamEvent::ToolCallStart { index, id, name } => {
                let call = calls.entry(index).or_default();
                call.id = id;
                call.name = name;
            }
            StreamEvent::ToolCallArgumentsDelta { index, fragment } => {
                calls
                    .entry(index)
                    .or_default()
                    .arguments
                    .push_str(&fragment);
            }
            StreamEvent::Usage(reported) => {
                // Providers report usage in pieces (input first, output at the end): keep the
                // largest figure of each.
                let merged = usage.get_or_insert_with(Usage::default);
                merged.input_tokens = merged.input_tokens.max(reported.input_tokens);
                merged.output_tokens = merged.output_tokens.max(reported.output_tokens);
                merged.cache_read_tokens = merged.cache_read_tokens.max(reported.cache_read_tokens);
            }
            StreamEvent::Finished(reason) => break reason,
        }
    };

    let mut content = Vec::new();
    if !thinking.is_empty() || signature.is_some() {
        content.push(ContentPart::Thinking {
            text: thinking,
            signature,
        });
    }
    if !text.is_empty() {
        content.push(ContentPart::Text { text });
    }
    for (index, call) in calls {
        content.push(ContentPart::ToolCall(ToolCall {
            id: if call.id.is_empty() {
                format!("call_{index}")
            } else {
                call.id
            },
            name: call.name,
            arguments: parse_arguments(&call.arguments),
        }));
    }
    // Some OpenAI-compatible servers say "stop" while sending tool calls: the calls decide.
    let has_calls = content
        .iter()
        .any(|part| matches!(part, ContentPart::ToolCall(_)));
    let finish = match finish {
        FinishReason::EndTurn if has_calls => FinishReason::ToolUse,
        other => other,
    };
    Ok(StepResponse {
        message: Message {
            role: Role::Assistant,
            content,
        },
        finish,
        usage,
    })
}

/// Parses streamed tool arguments. Empty means no arguments; text that is not JSON is kept as a
/// JSON string so the tool can report it instead of the call vanishing.
fn parse_arguments(raw: &str) -> serde_json::Value {
    let trimmed = raw.trim();
    if trimmed.is_empty() {
        return serde_json::Value::Object(serde_json::Map::new());
    }
    serde_json::from_str(trimmed).unwrap_or_else(|_| serde_json::Value::String(raw.to_owned()))
}

#[cfg(test)]
mod tests {
    use std::sync::Mutex;

    use super::*;

    #[derive(Default)]
    struct RecordingHost {
        events: Mutex<Vec<AgentEvent>>,
    }

    impl SessionHost for RecordingHost {
        fn emit(&self, event: AgentEvent) {
            self.events.lock().unwrap().push(event);
        }
    }

    fn stream_of(events: Vec<Result<StreamEvent, LlmError>>) -> EventStream {
        Box::pin(futures::stream::iter(events))
    }

    #[tokio::test]
    async fn assembles_text_thinking_and_fragmented_tool_calls() {
        let host = RecordingHost::default();
        let stream = stream_of(vec![
            Ok(StreamEvent::ThinkingDelta("hmm".into())),
            Ok(StreamEvent::TextDelta("Let me ".into())),
            Ok(StreamEvent::TextDelta("look.".into())),
            Ok(StreamEvent::ToolCallStart {
                index: 0,
                id: "c1".into(),
                name: "read_file".into(),
            }),
            Ok(StreamEvent::ToolCallArgumentsDelta {
                index: 0,
                fragment: "{\"path\":".into(),
            }),
            Ok(StreamEvent::ToolCallArgumentsDelta {
                index: 0,
                fragment: "\"a.rs\"}".into(),
            }),
            Ok(StreamEvent::Usage(Usage {
                input_tokens: 10,
                output_tokens: 0,
                cache_read_tokens: 0,
                cache_write_tokens: 0,
            })),
            Ok(StreamEvent::Usage(Usage {
                input_tokens: 0,
                output_tokens: 7,
                cache_read_tokens: 0,
                cache_write_tokens: 0,
            })),
            Ok(StreamEvent::Finished(FinishReason::EndTurn)),
        ]);
        let response = collect_step(stream, &host, &CancellationToken::new())
            .await
            .unwrap();
        assert_eq!(
            response.finish,
            FinishReason::ToolUse,
            "tool calls override a plain stop"
        );
        assert_eq!(response.message.text(), "Let me look.");
        let calls: Vec<_> = response.message.tool_calls().collect();
        assert_eq!(calls.len(), 1);
        assert_eq!(calls[0].arguments, serde_json::json!({"path": "a.rs"}));
        assert_eq!(response.usage.unwrap().output_tokens, 7);
        assert_eq!(response.usage.unwrap().input_tokens, 10);
        let events = host.events.lock().unwrap();
        assert_eq!(
            events.len(),
            3,
            "one thought and two text deltas: {events:?}"
        );
    }

    #[tokio::test]
    async fn a_stream_that_stops_early_is_truncated_and_says_output_was_shown() {
        let host = RecordingHost::default();
        let stream = stream_of(vec![Ok(StreamEvent::TextDelta("partial".into()))]);
        let error = collect_step(stream, &host, &CancellationToken::new())
            .await
            .unwrap_err();
        assert_eq!(error.error, LlmError::Truncated);
        assert!(error.emitted_output);
    }

    #[tokio::test]
    async fn cancellation_wins_over_a_silent_stream() {
        let host = RecordingHost::default();
        let cancel = CancellationToken::new();
        cancel.cancel();
        let stream: EventStream = Box::pin(futures::stream::pending());
        let error = collect_step(stream, &host, &cancel).await.unwrap_err();
        assert_eq!(error.error, LlmError::Cancelled);
        assert!(!error.emitted_output);
    }

    #[test]
    fn arguments_that_are_not_json_are_kept_as_text() {
        assert_eq!(
            parse_arguments("{oops"),
            serde_json::Value::String("{oops".into())
        );
        assert_eq!(parse_arguments("  "), serde_json::json!({}));
    }
}
