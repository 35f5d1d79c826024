//! Folding a stream of [`StreamEvent`]s into the assistant [`Message`] it describes, keeping the
//! order of its parts (thinking, text, tool calls) as the model produced them.

use futures::StreamExt;

use super::{
    ContentPart, EventStream, FinishReason, LlmError, Message, Role, StreamEvent, ToolCall, Usage,
};

/// A whole model response.
#[derive(Debug, Clone, PartialEq)]
pub struct CollectedResponse {
    pub message: Message,
    pub usage: Option<Usage>,
    /// `None` when the stream never said why it stopped.
    pub finish_reason: Option<FinishReason>,
}

#[derive(Debug)]
enum Part {
    Text(String),
    Thinking {
        text: String,
        signature: Option<String>,
    },
    Call {
        index: usize,
        id: String,
        name: String,
        arguments: String,
    },
}

/// Accumulates events; [`ResponseCollector::finish`] yields the response.
#[derive(Debug, Default)]
pub struct ResponseCollector {
    parts: Vec<Part>,
    usage: Option<Usage>,
    finish_reason: Option<FinishReason>,
}

impl ResponseCollector {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn push(&mut self, event: &StreamEvent) {
        match event {
            StreamEvent::TextDelta(delta) => match self.parts.last_mut() {
                Some(Part::Text(text)) => text.push_str(delta),
                _ => self.parts.push(Part::Text(delta.clone())),
            },
            StreamEvent::ThinkingDelta(delta) => match self.parts.last_mut() {
                Some(Part::Thinking {
                    text,
                    signature: None,
                }) => text.push_str(delta),
                _ => self.parts.push(Part::Thinking {
                    text: delta.clone(),
                    signature: None,
                }),
            },
            StreamEvent::ThinkingSignature(value) => {
                let open = self.parts.iter_mut().rev().find_map(|part| match part {
                    Part::Thinking { signature, .. } => Some(signature),
                    _ => None,
                });
                match open {
                    Some(signature) => signature.get_or_insert_default().push_str(value),
                    // A signature for thinking that showed no text (it can happen when the
                    // thinking was empty): keep it, the API wants it back.
                    None => self.parts.push(Part::Thinking {
                        text: String::new(),
                        signature: Some(value.clone()),
                    }),
                }
            }
            StreamEvent::ToolCallStart { index, id, name } => self.parts.push(Part::Call {
                index: *index,
                id: id.clone(),
                name: name.clone(),
                arguments: String::new(),
            }),
            StreamEvent::ToolCallArgumentsDelta { index, fragment } => {
                let call = self.parts.iter_mut().rev().find_map(|part| match part {
                    Part::Call {
                        index: call_index,
                        arguments,
                        ..
                    } if call_index == index => Some(arguments),
                    _ => None,
                });
                if let Some(arguments) = call {
                    arguments.push_str(fragment);
                }
            }
            StreamEvent::Usage(usage) => self.usage = Some(*usage),
            StreamEvent::Finished(reason) => self.finish_reason = Some(*reason),
        }
    }

    pub fn finish(self) -> CollectedResponse {
        let content = self
            .parts
            .into_iter()
            .map(|part| match part {
                Part::Text(text) => ContentPart::Text { text },
                Part::Thinking { text, signature } => ContentPart::Thinking { text, signature },
                Part::Call {
                    id,
                    name,
                    arguments,
                    ..
                } => ContentPart::ToolCall(ToolCall {
                    id,
                    name,
                    arguments: parse_arguments(arguments),
                }),
            })
            .collect();
        CollectedResponse {
            message: Message {
                role: Role::Assistant,
                content,
            },
            usage: self.usage,
            finish_reason: self.finish_reason,
        }
    }
}

/// Arguments as JSON; empty means no arguments; text that is not JSON is kept as a string.
fn parse_arguments(raw: String) -> serde_json::Value {
    if raw.trim().is_empty() {
        return serde_json::json!({});
    }
    serde_json::from_str(&raw).unwrap_or(serde_json::Value::String(raw))
}

/// Reads `stream` to its end. The first error ends the collection and is returned.
pub async fn collect(mut stream: EventStream) -> Result<CollectedResponse, LlmError> {
    let mut collector = ResponseCollector::new();
    while let Some(event) = stream.next().await {
        collector.push(&event?);
    }
    Ok(collector.finish())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn parts_keep_their_order_and_arguments_join() {
        let mut collector = ResponseCollector::new();
        for event in [
            StreamEvent::ThinkingDelta("a".into()),
            StreamEvent::ThinkingDelta("b".into()),
            StreamEvent::ThinkingSignature("sig".into()),
            StreamEvent::TextDelta("hel".into()),
            StreamEvent::TextDelta("lo".into()),
            StreamEvent::ToolCallStart {
                index: 0,
                id: "c0".into(),
                name: "grep".into(),
            },
            StreamEvent::ToolCallStart {
                index: 1,
                id: "c1".into(),
                name: "ls".into(),
            },
            StreamEvent::ToolCallArgumentsDelta {
                index: 0,
                fragment: "{\"q\":".into(),
            },
            StreamEvent::ToolCallArgumentsDelta {
                index: 1,
                fragment: "{oops".into(),
            },
            StreamEvent::ToolCallArgumentsDelta {
                index: 0,
                fragment: "\"x\"}".into(),
            },
            StreamEvent::Usage(Usage {
                input_tokens: 1,
                output_tokens: 2,
                cache_read_tokens: 0,
                cache_write_tokens: 0,
            }),
            StreamEvent::Finished(FinishReason::ToolUse),
        ] {
            collector.push(&event);
        }
        let response = collector.finish();
        assert_eq!(response.finish_reason, Some(FinishReason::ToolUse));
        assert_eq!(response.usage.unwrap().output_tokens, 2);
        assert_eq!(
            response.message.content,
            vec![
                ContentPart::Thinking {
                    text: "ab".into(),
                    signature: Some("sig".into())
                },
                ContentPart::Text {
                    text: "hello".into()
                },
                ContentPart::ToolCall(ToolCall {
                    id: "c0".into(),
                    name: "grep".into(),
                    arguments: json!({"q": "x"})
                }),
                ContentPart::ToolCall(ToolCall {
                    id: "c1".into(),
                    name: "ls".into(),
                    arguments: json!("{oops")
                }),
            ]
        );
    }
}
