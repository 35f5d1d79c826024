//! Tool calls a model wrote as text. Many local models (Qwen2.5-Coder under its own chat
//! template, under Ollama or llama.cpp) answer with a fenced JSON object, or a `<tool_call>`
//! block, instead of a native tool call. When an answer has no native call, [`read`] looks at
//! the model's own text for such blocks and reads them as calls:
//!
//! - the answer must end with the blocks: any text (the model's remarks) may come before the
//!   first, only white space between and after them;
//! - each block is one JSON object `{"name": …, "arguments": {…}}` (`parameters` or `input`
//!   for the arguments, which may also be a JSON string of an object);
//! - every block must name a tool offered in that request; otherwise the whole answer stays
//!   text (a call of a tool not offered is not a call);
//! - arguments are checked against the tool's schema: a call whose arguments do not fit is still
//!   a call (its name is clear), but it is not run: the model gets an error saying what is wrong.
//!
//! Only the model's own answer is read, never tool output or files (which reach the model as
//! untrusted content and may contain anything); a call read from text then goes through the
//! permission policy like any other, and the audit log says it was written as text.

use serde_json::{Map, Value};

use lode_llm::ToolSpec;

/// A call read from text.
#[derive(Debug, Clone, PartialEq)]
pub struct TextCall {
    pub name: String,
    pub arguments: Value,
    /// What is wrong with the arguments, per the tool's schema; `None` when they fit.
    pub problem: Option<String>,
}

/// An answer read as calls: the text before them, and the calls in order.
#[derive(Debug, Clone, PartialEq)]
pub struct TextCalls {
    pub prose: String,
    pub calls: Vec<TextCall>,
}

/// The calls `text` (a whole answer of the model) ends with, when it is made of call blocks as
/// the module says, each naming a tool of `offered`; `None` when the answer is plain text.
pub fn read(text: &str, offered: &[ToolSpec]) -> Option<TextCalls> {
    let starts = block_starts(text);
    let (start, bodies) = starts
        .into_iter()
        .find_map(|start| blocks_from(&text[start..]).map(|bodies| (start, bodies)))?;
    let mut calls = Vec::with_capacity(bodies.len());
    for body in bodies {
        let (name, arguments) = parse_call(body)?;
        let spec = offered.iter().find(|spec| spec.name == name)?;
        let problem = schema::check(&arguments, &spec.parameters).err();
        calls.push(TextCall {
            name,
            arguments,
            problem,
        });
    }
    Some(TextCalls {
        prose: text[..start].trim_end().to_owned(),
        calls,
    })
}

const OPEN_TAG: &str = "<tool_call>";
const CLOSE_TAG: &str = "</tool_call>";
const FENCE: &str = "```";

/// Where a block may start: every fence and every opening tag, in order.
fn block_starts(text: &str) -> Vec<usize> {
    let mut starts: Vec<usize> = text
        .match_indices(FENCE)
        .map(|(index, _)| index)
        .chain(text.match_indices(OPEN_TAG).map(|(index, _)| index))
        .collect();
    starts.sort_unstable();
    starts
}

/// The bodies of the blocks `text` consists of (with white space between and after them), or
/// `None` when anything else is in it. A `<tool_call>` left open at the very end (a model that
/// stopped at its end-of-call token) counts as closed.
fn blocks_from(text: &str) -> Option<Vec<&str>> {
    let mut rest = text;
    let mut bodies = Vec::new();
    loop {
        rest = rest.trim_start();
        if rest.is_empty() {
            return (!bodies.is_empty()).then_some(bodies);
        }
        if let Some(after) = rest.strip_prefix(OPEN_TAG) {
            match after.find(CLOSE_TAG) {
                Some(end) => {
                    bodies.push(&after[..end]);
                    rest = &after[end + CLOSE_TAG.len()..];
                }
                None => {
                    bodies.push(after);
                    rest = "";
                }
            }
        } else if let Some(after) = rest.strip_prefix(FENCE) {
            // The info string: `json`, `tool_call`, or none.
            let (info, body) = after.split_once('\n')?;
            let info = info.trim().to_ascii_lowercase();
            if !matches!(
                info.as_str(),
                "" | "json" | "tool_call" | "tool-call" | "jsonc"
            ) {
                return None;
            }
            let end = body.find(FENCE)?;
            bodies.push(&body[..end]);
            rest = &body[end + FENCE.len()..];
        } else {
            return None;
        }
    }
}

/// A block's JSON as a call: its tool's name and its arguments (an object).
fn parse_call(body: &str) -> Option<(String, Value)> {
    let value: Value = serde_json::from_str(body.trim()).ok()?;
    let object = value.as_object()?;
    let name = object.get("name")?.as_str()?.trim().to_owned();
    if name.is_empty() {
        return None;
    }
    let arguments = match ["arguments", "parameters", "input"]
        .iter()
        .find_map(|key| object.get(*key))
    {
        None | Some(Value::Null) => Value::Object(Map::new()),
        Some(Value::String(text)) => match serde_json::from_str::<Value>(text) {
            Ok(value @ Value::Object(_)) => value,
            _ => Value::String(text.clone()),
        },
        Some(other) => other.clone(),
    };
    Some((name, arguments))
}

/// A check of a value against the parts of JSON Schema tools use: `type`, `properties`,
/// `required`, `additionalProperties`, `enum`, `items`, `minimum`/`maximum`, `minItems`/`maxItems`,
/// `anyOf`/`oneOf`. Keywords it does not know are not checked (a schema it cannot read fully
/// never refuses what the tool might take).
pub mod schema {
    use serde_json::Value;

    /// `Ok` when `value` fits `schema`, else what does not, naming where (`path`, `entries[0]`).
    pub fn check(value: &Value, schema: &Value) -> Result<(), String> {
        check_at(value, schema, "")
    }

    fn describe(path: &str) -> String {
        if path.is_empty() {
            "the arguments".to_owned()
        } else {
            format!("`{path}`")
        }
    }

    fn check_at(value: &Value, schema: &Value, path: &str) -> Result<(), String> {
        let Some(schema) = schema.as_object() else {
            return Ok(());
        };
        for key in ["anyOf", "oneOf"] {
            if let Some(choices) = schema.get(key).and_then(Value::as_array)
                && !choices
                    .iter()
                    .any(|choice| check_at(value, choice, path).is_ok())
            {
                return Err(format!(
                    "{} match none of the allowed forms",
                    describe(path)
                ));
            }
        }
        if let Some(expected) = schema.get("type") {
            let types: Vec<&str> = match expected {
                Value::String(one) => vec![one.as_str()],
                Value::Array(many) => many.iter().filter_map(Value::as_str).collect(),
                _ => Vec::new(),
            };
            if !types.is_empty() && !types.iter().any(|kind| is_type(value, kind)) {
                return Err(format!(
                    "{} must be {}, not {}",
                    describe(path),
                    types.join(" or "),
                    type_name(value)
                ));
            }
        }
        if let Some(allowed) = schema.get("enum").and_then(Value::as_array)
            && !allowed.contains(value)
        {
            let names: Vec<String> = allowed.iter().map(Value::to_string).collect();
            return Err(format!(
                "{} must be one of {}, not {value}",
                describe(path),
                names.join(", ")
            ));
        }
        if let Some(number) = value.as_f64() {
            if let Some(minimum) = schema.get("minimum").and_then(Value::as_f64)
                && number < minimum
            {
                return Err(format!("{} must be at least {minimum}", describe(path)));
            }
            if let Some(maximum) = schema.get("maximum").and_then(Value::as_f64)
                && number > maximum
            {
                return Err(format!("{} must be at most {maximum}", describe(path)));
            }
        }
        if let Some(object) = value.as_object() {
            let properties = schema.get("properties").and_then(Value::as_object);
            for required in schema
                .get("required")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .filter_map(Value::as_str)
            {
                if !object.contains_key(required) {
                    return Err(if path.is_empty() {
                        format!("`{required}` is missing")
                    } else {
                        format!("`{required}` is missing in `{path}`")
                    });
                }
            }
            for (key, item) in object {
                let at = if path.is_empty() {
                    key.clone()
                } else {
                    format!("{path}.{key}")
                };
                match properties.and_then(|properties| properties.get(key)) {
                    Some(property) => check_at(item, property, &at)?,
                    None => match schema.get("additionalProperties") {
                        Some(Value::Bool(false)) => {
                            let known: Vec<&String> =
                                properties.map(|p| p.keys().collect()).unwrap_or_default();
                            return Err(format!(
                                "{} has no `{key}` (it takes {})",
                                describe(path),
                                if known.is_empty() {
                                    "nothing".to_owned()
                                } else {
                                    known
                                        .iter()
                                        .map(|key| format!("`{key}`"))
                                        .collect::<Vec<_>>()
                                        .join(", ")
                                }
                            ));
                        }
                        Some(extra @ Value::Object(_)) => check_at(item, extra, &at)?,
                        _ => {}
                    },
                }
            }
        }
        if let Some(items) = value.as_array() {
            if let Some(min) = schema.get("minItems").and_then(Value::as_u64)
                && (items.len() as u64) < min
            {
                return Err(format!("{} needs at least {min} items", describe(path)));
            }
            if let Some(max) = schema.get("maxItems").and_then(Value::as_u64)
                && (items.len() as u64) > max
            {
                return Err(format!("{} takes at most {max} items", describe(path)));
            }
            if let Some(item_schema) = schema.get("items") {
                for (index, item) in items.iter().enumerate() {
                    check_at(item, item_schema, &format!("{path}[{index}]"))?;
                }
            }
        }
        Ok(())
    }

    fn is_type(value: &Value, kind: &str) -> bool {
        match kind {
            "object" => value.is_object(),
            "array" => value.is_array(),
            "string" => value.is_string(),
            "boolean" => value.is_boolean(),
            "null" => value.is_null(),
            "number" => value.is_number(),
            "integer" => {
                value.is_i64()
                    || value.is_u64()
                    || value.as_f64().is_some_and(|number| number.fract() == 0.0)
            }
            // A type this check does not know is not refused.
            _ => true,
        }
    }

    fn type_name(value: &Value) -> &'static str {
        match value {
            Value::Null => "null",
            Value::Bool(_) => "a boolean",
            Value::Number(_) => "a number",
            Value::String(_) => "a string",
            Value::Array(_) => "an array",
            Value::Object(_) => "an object",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn offered() -> Vec<ToolSpec> {
        vec![
            ToolSpec {
                name: "read_file".into(),
                description: "Read a file.".into(),
                parameters: json!({"type": "object", "properties": {
                    "path": {"type": "string"},
                    "offset": {"type": "integer", "minimum": 1}
                }, "required": ["path"], "additionalProperties": false}),
            },
            ToolSpec {
                name: "run_command".into(),
                description: "Run a command.".into(),
                parameters: json!({"type": "object", "properties": {
                    "command": {"type": "string"}
                }, "required": ["command"]}),
            },
        ]
    }

    #[test]
    fn a_fenced_json_call_is_read_with_the_text_before_it() {
        let text = "I will read the file.\n```json\n{\"name\": \"read_file\", \"arguments\": {\"path\": \"src/lib.rs\"}}\n```\n";
        let read = read(text, &offered()).unwrap();
        assert_eq!(read.prose, "I will read the file.");
        assert_eq!(
            read.calls,
            vec![TextCall {
                name: "read_file".into(),
                arguments: json!({"path": "src/lib.rs"}),
                problem: None
            }]
        );
    }

    #[test]
    fn tool_call_tags_several_and_an_unclosed_last_one() {
        let text = "<tool_call>\n{\"name\": \"read_file\", \"arguments\": \"{\\\"path\\\": \\\"a.rs\\\"}\"}\n</tool_call>\n<tool_call>\n{\"name\": \"run_command\", \"parameters\": {\"command\": \"cargo test\"}}";
        let read = read(text, &offered()).unwrap();
        assert_eq!(read.prose, "");
        assert_eq!(read.calls.len(), 2);
        assert_eq!(read.calls[0].arguments, json!({"path": "a.rs"}));
        assert_eq!(read.calls[1].arguments, json!({"command": "cargo test"}));
    }

    #[test]
    fn anything_else_stays_text() {
        let offered = offered();
        for text in [
            // Plain prose, or JSON that names no offered tool.
            "The answer is 42.",
            "```json\n{\"name\": \"delete_everything\", \"arguments\": {}}\n```",
            // Text after the block: the model is talking about a call, not making one.
            "```json\n{\"name\": \"read_file\", \"arguments\": {\"path\": \"a\"}}\n```\nThis is what a call looks like.",
            // A fence of another language, or JSON that is not a call.
            "```rust\nfn main() {}\n```",
            "```json\n{\"path\": \"a.rs\"}\n```",
            "```json\n[1, 2]\n```",
            "```json\n{not json\n```",
            // One block naming an offered tool and one not: all stays text.
            "```json\n{\"name\": \"read_file\", \"arguments\": {\"path\": \"a\"}}\n```\n```json\n{\"name\": \"rm\", \"arguments\": {}}\n```",
        ] {
            assert_eq!(read(text, &offered), None, "{text}");
        }
    }

    #[test]
    fn arguments_that_do_not_fit_the_schema_say_why() {
        let offered = offered();
        let problem = |arguments: Value| {
            let text = format!(
                "```json\n{}\n```",
                json!({"name": "read_file", "arguments": arguments})
            );
            read(&text, &offered).unwrap().calls[0].problem.clone()
        };
        assert_eq!(problem(json!({"path": "a.rs", "offset": 3})), None);
        assert_eq!(problem(json!({})), Some("`path` is missing".to_owned()));
        assert_eq!(
            problem(json!({"path": 7})),
            Some("`path` must be string, not a number".to_owned())
        );
        assert_eq!(
            problem(json!({"path": "a", "offset": 0})),
            Some("`offset` must be at least 1".to_owned())
        );
        assert!(
            problem(json!({"path": "a", "mode": "x"}))
                .unwrap()
                .contains("has no `mode`")
        );
        assert!(
            problem(json!("just a string"))
                .unwrap()
                .contains("must be object")
        );
    }

    #[test]
    fn schema_checks_items_enums_and_alternatives() {
        let schema = json!({"type": "object", "properties": {"entries": {"type": "array", "maxItems": 2, "items": {
            "type": "object", "properties": {"status": {"enum": ["pending", "completed"]}}, "required": ["status"]}}}});
        assert!(schema::check(&json!({"entries": [{"status": "pending"}]}), &schema).is_ok());
        let error = schema::check(&json!({"entries": [{"status": "done"}]}), &schema).unwrap_err();
        assert!(
            error.contains("`entries[0].status` must be one of"),
            "{error}"
        );
        assert!(schema::check(&json!({"entries": [{}, {}, {}]}), &schema).is_err());
        let either = json!({"anyOf": [{"type": "string"}, {"type": "integer"}]});
        assert!(schema::check(&json!(3), &either).is_ok());
        assert!(schema::check(&json!(true), &either).is_err());
    }
}
