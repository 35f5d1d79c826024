//! What a script matches on: an incoming OpenAI or Anthropic request read into one neutral shape
//! (system prompt, messages with text, tool calls and tool results, offered tools), and the
//! matching of a turn's conditions against it, with a reason when they fail.

use serde_json::Value;

use crate::script::Matcher;

/// Which API a request came through.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Api {
    OpenAi,
    Anthropic,
    /// Ollama's native `/api/chat`: OpenAI-like messages, but calls carry no ids and a tool
    /// result names its tool (`tool_name`).
    Ollama,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Speaker {
    User,
    Assistant,
    /// An OpenAI `role: "tool"` message, or an Anthropic user message of tool results.
    Tool,
}

#[derive(Debug, Clone)]
pub struct NeutralMessage {
    pub speaker: Speaker,
    pub text: String,
    /// (call id, tool name)
    pub tool_calls: Vec<(String, String)>,
    /// (call id, content)
    pub tool_results: Vec<(String, String)>,
}

#[derive(Debug, Clone, Default)]
pub struct Conversation {
    pub system: String,
    pub messages: Vec<NeutralMessage>,
    pub tools: Vec<String>,
}

impl Conversation {
    /// Reads a request body; the error says what is missing.
    pub fn read(api: Api, body: &Value) -> Result<Self, String> {
        let messages = body
            .get("messages")
            .and_then(Value::as_array)
            .ok_or("the request has no \"messages\" array")?;
        let tools = body
            .get("tools")
            .and_then(Value::as_array)
            .map(|tools| {
                tools
                    .iter()
                    .filter_map(|tool| {
                        tool.pointer("/function/name")
                            .or_else(|| tool.get("name"))
                            .and_then(Value::as_str)
                            .map(str::to_string)
                    })
                    .collect()
            })
            .unwrap_or_default();
        let mut conversation = Conversation {
            tools,
            ..Conversation::default()
        };
        match api {
            Api::OpenAi => conversation.read_openai(messages)?,
            Api::Ollama => {
                conversation.read_openai(messages)?;
                conversation.name_ollama_calls(messages);
            }
            Api::Anthropic => {
                conversation.system = text_of(body.get("system").unwrap_or(&Value::Null));
                conversation.read_anthropic(messages)?;
            }
        }
        Ok(conversation)
    }

    fn read_openai(&mut self, messages: &[Value]) -> Result<(), String> {
        for (index, message) in messages.iter().enumerate() {
            let role = message
                .get("role")
                .and_then(Value::as_str)
                .ok_or_else(|| format!("message {index} has no role"))?;
            let text = text_of(message.get("content").unwrap_or(&Value::Null));
            let speaker = match role {
                "system" | "developer" => {
                    self.system.push_str(&text);
                    continue;
                }
                "user" => Speaker::User,
                "assistant" => Speaker::Assistant,
                "tool" => Speaker::Tool,
                other => return Err(format!("message {index} has an unknown role {other:?}")),
            };
            let tool_calls = message
                .get("tool_calls")
                .and_then(Value::as_array)
                .map(|calls| {
                    calls
                        .iter()
                        .map(|call| (string_at(call, "/id"), string_at(call, "/function/name")))
                        .collect()
                })
                .unwrap_or_default();
            let (text, tool_results) = if speaker == Speaker::Tool {
                (
                    String::new(),
                    vec![(string_at(message, "/tool_call_id"), text)],
                )
            } else {
                (text, Vec::new())
            };
            self.messages.push(NeutralMessage {
                speaker,
                text,
                tool_calls,
                tool_results,
            });
        }
        Ok(())
    }

    /// Ollama's calls have no ids: each call and each result is keyed by its tool's name, so
    /// a result is matched to the newest call of its tool.
    fn name_ollama_calls(&mut self, raw: &[Value]) {
        let raw: Vec<&Value> = raw
            .iter()
            .filter(|message| {
                !matches!(
                    message.get("role").and_then(Value::as_str),
                    Some("system" | "developer")
                )
            })
            .collect();
        for (message, original) in self.messages.iter_mut().zip(raw) {
            for (id, name) in &mut message.tool_calls {
                if id.is_empty() {
                    *id = format!("ollama:{name}");
                }
            }
            if message.speaker == Speaker::Tool
                && let Some(name) = original.get("tool_name").and_then(Value::as_str)
            {
                for (id, _) in &mut message.tool_results {
                    if id.is_empty() {
                        *id = format!("ollama:{name}");
                    }
                }
            }
        }
    }

    fn read_anthropic(&mut self, messages: &[Value]) -> Result<(), String> {
        for (index, message) in messages.iter().enumerate() {
            let role = message
                .get("role")
                .and_then(Value::as_str)
                .ok_or_else(|| format!("message {index} has no role"))?;
            let mut neutral = NeutralMessage {
                speaker: match role {
                    "user" => Speaker::User,
                    "assistant" => Speaker::Assistant,
                    other => return Err(format!("message {index} has an unknown role {other:?}")),
                },
                text: String::new(),
                tool_calls: Vec::new(),
                tool_results: Vec::new(),
            };
            match message.get("content") {
                Some(Value::String(text)) => neutral.text = text.clone(),
                Some(Value::Array(blocks)) => {
                    for block in blocks {
                        match block.get("type").and_then(Value::as_str) {
                            Some("text") => neutral.text.push_str(&string_at(block, "/text")),
                            Some("tool_use") => neutral
                                .tool_calls
                                .push((string_at(block, "/id"), string_at(block, "/name"))),
                            Some("tool_result") => neutral.tool_results.push((
                                string_at(block, "/tool_use_id"),
                                text_of(block.get("content").unwrap_or(&Value::Null)),
                            )),
                            _ => {}
                        }
                    }
                }
                _ => return Err(format!("message {index} has no content")),
            }
            if neutral.speaker == Speaker::User && !neutral.tool_results.is_empty() {
                // Results and text share a user message; matching treats the results as the
                // message's point, as the agent loop sends them.
                if neutral.text.is_empty() {
                    neutral.speaker = Speaker::Tool;
                } else {
                    let text = std::mem::take(&mut neutral.text);
                    let results = std::mem::take(&mut neutral.tool_results);
                    self.messages.push(NeutralMessage {
                        speaker: Speaker::User,
                        text,
                        tool_calls: Vec::new(),
                        tool_results: Vec::new(),
                    });
                    neutral.speaker = Speaker::Tool;
                    neutral.tool_results = results;
                }
            }
            self.messages.push(neutral);
        }
        Ok(())
    }

    /// The newest user text.
    pub fn last_user_text(&self) -> Option<&str> {
        self.messages
            .iter()
            .rev()
            .find(|message| message.speaker == Speaker::User && !message.text.is_empty())
            .map(|message| message.text.as_str())
    }

    /// The tool results the conversation ends with, as (tool name, content).
    pub fn trailing_tool_results(&self) -> Vec<(String, &str)> {
        let mut results = Vec::new();
        for message in self.messages.iter().rev() {
            if message.speaker != Speaker::Tool {
                break;
            }
            for (call_id, content) in &message.tool_results {
                results.push((self.tool_name_of(call_id), content.as_str()));
            }
        }
        results.reverse();
        results
    }

    fn tool_name_of(&self, call_id: &str) -> String {
        self.messages
            .iter()
            .flat_map(|message| &message.tool_calls)
            .find(|(id, _)| id == call_id)
            .map(|(_, name)| name.clone())
            .unwrap_or_default()
    }

    /// `None` when every condition holds, else the first that does not.
    pub fn mismatch(&self, matcher: &Matcher, request_number: u64) -> Option<String> {
        if let Some(n) = matcher.nth_request
            && n != request_number
        {
            return Some(format!(
                "nth_request {n} (this is request {request_number})"
            ));
        }
        if let Some(needle) = &matcher.last_user_text_contains
            && !self
                .last_user_text()
                .is_some_and(|text| text.contains(needle.as_str()))
        {
            return Some(format!("last_user_text_contains {needle:?}"));
        }
        let results = self.trailing_tool_results();
        if let Some(tool) = &matcher.last_tool_result_of
            && !results.iter().any(|(name, _)| name == tool)
        {
            return Some(format!("last_tool_result_of {tool:?}"));
        }
        if let Some(needle) = &matcher.last_tool_result_contains
            && !results
                .iter()
                .any(|(_, content)| content.contains(needle.as_str()))
        {
            return Some(format!("last_tool_result_contains {needle:?}"));
        }
        if let Some(needle) = &matcher.system_contains
            && !self.system.contains(needle.as_str())
        {
            return Some(format!("system_contains {needle:?}"));
        }
        if let Some(tool) = &matcher.has_tool
            && !self.tools.contains(tool)
        {
            return Some(format!("has_tool {tool:?}"));
        }
        None
    }

    /// A short description of the request for error messages.
    pub fn describe(&self) -> String {
        let clip = |text: &str| {
            let mut clipped: String = text.chars().take(80).collect();
            if clipped.len() < text.len() {
                clipped.push('…');
            }
            clipped
        };
        let user = self
            .last_user_text()
            .map(|text| format!("last user text {:?}", clip(text)))
            .unwrap_or_else(|| "no user text".to_string());
        let results = self.trailing_tool_results();
        if results.is_empty() {
            user
        } else {
            let names: Vec<&str> = results.iter().map(|(name, _)| name.as_str()).collect();
            format!("{user}, ends with results of {names:?}")
        }
    }
}

/// The text of a `content` value: a string, or the text parts of an array of blocks.
fn text_of(content: &Value) -> String {
    match content {
        Value::String(text) => text.clone(),
        Value::Array(parts) => parts
            .iter()
            .filter_map(|part| part.get("text").and_then(Value::as_str))
            .collect::<Vec<_>>()
            .join(""),
        _ => String::new(),
    }
}

fn string_at(value: &Value, pointer: &str) -> String {
    value
        .pointer(pointer)
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn matcher(text: &str) -> Matcher {
        serde_json::from_str(text).unwrap()
    }

    #[test]
    fn ollama_tool_results_are_named_by_their_tool() {
        let body = json!({"messages": [
            {"role": "system", "content": "You are lode."},
            {"role": "user", "content": "fix the bug"},
            {"role": "assistant", "content": "", "tool_calls": [{"function": {"name": "grep", "arguments": {"pattern": "bug"}}}]},
            {"role": "tool", "tool_name": "grep", "content": "src/lib.rs:3: bug"},
        ], "tools": [{"type": "function", "function": {"name": "grep"}}]});
        let conversation = Conversation::read(Api::Ollama, &body).unwrap();
        assert_eq!(conversation.system, "You are lode.");
        assert_eq!(
            conversation.trailing_tool_results(),
            vec![("grep".to_string(), "src/lib.rs:3: bug")]
        );
        assert_eq!(
            conversation.mismatch(&matcher(r#"{"last_tool_result_of": "grep"}"#), 2),
            None
        );
    }

    #[test]
    fn openai_tool_results_are_named_by_their_calls() {
        let body = json!({"messages": [
            {"role": "system", "content": "You are lode."},
            {"role": "user", "content": "fix the bug"},
            {"role": "assistant", "content": null, "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "grep", "arguments": "{}"}}]},
            {"role": "tool", "tool_call_id": "c1", "content": "src/lib.rs:3: bug"},
        ], "tools": [{"type": "function", "function": {"name": "grep"}}]});
        let conversation = Conversation::read(Api::OpenAi, &body).unwrap();
        assert_eq!(conversation.last_user_text(), Some("fix the bug"));
        assert_eq!(
            conversation.trailing_tool_results(),
            vec![("grep".to_string(), "src/lib.rs:3: bug")]
        );
        assert_eq!(conversation.mismatch(&matcher(r#"{"last_tool_result_of": "grep", "system_contains": "lode", "has_tool": "grep", "last_tool_result_contains": "bug"}"#), 1), None);
        assert_eq!(
            conversation.mismatch(&matcher(r#"{"last_tool_result_of": "read_file"}"#), 1),
            Some("last_tool_result_of \"read_file\"".to_string())
        );
        assert_eq!(
            conversation.mismatch(&matcher(r#"{"nth_request": 2}"#), 1),
            Some("nth_request 2 (this is request 1)".to_string())
        );
    }

    #[test]
    fn anthropic_blocks_are_read() {
        let body = json!({"system": [{"type": "text", "text": "sys"}], "messages": [
            {"role": "user", "content": "hello"},
            {"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "read_file", "input": {}}]},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": [{"type": "text", "text": "contents"}]}, {"type": "text", "text": "thanks"}]},
        ]});
        let conversation = Conversation::read(Api::Anthropic, &body).unwrap();
        assert_eq!(conversation.system, "sys");
        assert_eq!(conversation.last_user_text(), Some("thanks"));
        assert_eq!(
            conversation.trailing_tool_results(),
            vec![("read_file".to_string(), "contents")]
        );
    }

    #[test]
    fn bad_shapes_are_explained() {
        assert!(
            Conversation::read(Api::OpenAi, &json!({}))
                .unwrap_err()
                .contains("messages")
        );
        assert!(
            Conversation::read(Api::OpenAi, &json!({"messages": [{"content": "x"}]}))
                .unwrap_err()
                .contains("no role")
        );
        assert!(
            Conversation::read(
                Api::Anthropic,
                &json!({"messages": [{"role": "system", "content": "x"}]})
            )
            .unwrap_err()
            .contains("unknown role")
        );
    }
}
