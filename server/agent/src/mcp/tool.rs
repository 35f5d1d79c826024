//! An MCP server's tool as one of lode's [`Tool`]s: exposed as `mcp__<server>__<tool>`
//! (sanitised to `[A-Za-z0-9_-]`, at most 64 characters), kind `other`, never read-only (the
//! permission policy judges it as `Other`, default ask), and its output capped and wrapped as
//! untrusted content (`source="mcp"`) by the tool itself, so the loop does not wrap it again.

use std::sync::Arc;

use rmcp::model::{CallToolResult, ContentBlock};
use serde_json::json;

use super::connection::McpConnection;
use crate::event::ToolKind;
use lode_llm::ToolSpec;
use lode_tools::{
    PermissionTarget, Tool, ToolContext, ToolError, ToolErrorCategory, ToolOutput, ToolPresentation,
};

/// Longest tool output handed to the model, in characters.
pub const MAX_OUTPUT_CHARS: usize = 30_000;
/// Longest exposed tool name (OpenAI's function-name limit).
pub const MAX_TOOL_NAME_CHARS: usize = 64;
/// Longest tool description passed on to the model, in characters.
const MAX_DESCRIPTION_CHARS: usize = 2_000;

/// Replaces every character outside `[A-Za-z0-9_-]` with `_`.
pub fn sanitise_name_part(part: &str) -> String {
    let cleaned: String = part
        .chars()
        .map(|ch| {
            if ch.is_ascii_alphanumeric() || ch == '_' || ch == '-' {
                ch
            } else {
                '_'
            }
        })
        .collect();
    if cleaned.is_empty() {
        "_".to_owned()
    } else {
        cleaned
    }
}

/// `mcp__<server>__<tool>`, sanitised; names over [`MAX_TOOL_NAME_CHARS`] are cut and given a
/// short hash of the full name so distinct tools stay distinct.
pub fn exposed_tool_name(server: &str, tool: &str) -> String {
    let full = format!(
        "mcp__{}__{}",
        sanitise_name_part(server),
        sanitise_name_part(tool)
    );
    if full.len() <= MAX_TOOL_NAME_CHARS {
        return full;
    }
    let hash = xxhash_suffix(&full);
    let keep = MAX_TOOL_NAME_CHARS - hash.len() - 1;
    format!("{}_{hash}", &full[..keep])
}

fn xxhash_suffix(text: &str) -> String {
    use sha2::{Digest, Sha256};
    let digest = Sha256::digest(text.as_bytes());
    digest[..4].iter().map(|b| format!("{b:02x}")).collect()
}

/// Wraps external output so the model treats it as data (see [`lode_tools::untrusted`]).
pub fn wrap_untrusted(server: &str, tool: &str, text: &str) -> String {
    lode_tools::untrusted::wrap_mcp_output(server, tool, text)
}

/// Cuts `text` to `max` characters, saying how much was left out.
pub fn cap_chars(text: &str, max: usize) -> String {
    let total = text.chars().count();
    if total <= max {
        return text.to_owned();
    }
    let mut out: String = text.chars().take(max).collect();
    out.push_str(&format!(
        "\n[output truncated: {total} characters, the first {max} shown]"
    ));
    out
}

/// The text of a tool result: text blocks verbatim, embedded text resources by content, other
/// blocks as a short placeholder; structured content when there is no text.
pub fn result_text(result: &CallToolResult) -> String {
    let mut parts: Vec<String> = Vec::new();
    for block in &result.content {
        match block {
            ContentBlock::Text(text) => parts.push(text.text.clone()),
            ContentBlock::Image(image) => {
                parts.push(format!("[image omitted: {}]", image.mime_type))
            }
            ContentBlock::Audio(audio) => {
                parts.push(format!("[audio omitted: {}]", audio.mime_type))
            }
            ContentBlock::Resource(resource) => {
                let value = serde_json::to_value(&resource.resource).unwrap_or_default();
                match value.get("text").and_then(|t| t.as_str()) {
                    Some(text) => parts.push(text.to_owned()),
                    None => parts.push(format!(
                        "[binary resource omitted: {}]",
                        value.get("uri").and_then(|u| u.as_str()).unwrap_or("?")
                    )),
                }
            }
            ContentBlock::ResourceLink(link) => {
                parts.push(format!("[resource link: {}]", link.uri))
            }
            _ => parts.push("[unsupported content omitted]".to_owned()),
        }
    }
    if parts.is_empty()
        && let Some(structured) = &result.structured_content
    {
        parts.push(structured.to_string());
    }
    parts.join("\n")
}

/// One remote tool.
pub struct McpTool {
    connection: Arc<McpConnection>,
    remote_name: String,
    exposed_name: String,
    description: String,
    parameters: serde_json::Value,
}

impl McpTool {
    /// Wraps the tool `remote` of `connection` under `exposed_name` (see [`exposed_tool_name`]).
    pub fn new(
        connection: Arc<McpConnection>,
        remote: &rmcp::model::Tool,
        exposed_name: String,
    ) -> Self {
        let description = remote
            .description
            .as_deref()
            .or(remote.title.as_deref())
            .unwrap_or("")
            .to_owned();
        let description = format!(
            "[MCP server {}] {}",
            connection.name,
            cap_chars(&description, MAX_DESCRIPTION_CHARS)
        );
        let mut parameters = serde_json::Value::Object((*remote.input_schema).clone());
        if parameters.get("type").is_none() {
            parameters["type"] = json!("object");
        }
        Self {
            connection,
            remote_name: remote.name.to_string(),
            exposed_name,
            description,
            parameters,
        }
    }

    pub fn server(&self) -> &str {
        &self.connection.name
    }

    pub fn remote_name(&self) -> &str {
        &self.remote_name
    }
}

#[async_trait::async_trait]
impl Tool for McpTool {
    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: self.exposed_name.clone(),
            description: self.description.clone(),
            parameters: self.parameters.clone(),
        }
    }

    fn kind(&self) -> ToolKind {
        ToolKind::Other
    }

    fn read_only(&self) -> bool {
        false
    }

    fn present(&self, _arguments: &serde_json::Value, _context: &ToolContext) -> ToolPresentation {
        ToolPresentation {
            title: format!("{} ({} MCP)", self.remote_name, self.connection.name),
            locations: Vec::new(),
        }
    }

    fn permission_target(&self, _arguments: &serde_json::Value) -> PermissionTarget {
        PermissionTarget::Other
    }

    fn marks_own_output(&self) -> bool {
        true
    }

    async fn run(
        &self,
        arguments: serde_json::Value,
        context: &ToolContext,
    ) -> Result<ToolOutput, ToolError> {
        let arguments = match arguments {
            serde_json::Value::Object(map) => map,
            serde_json::Value::Null => serde_json::Map::new(),
            _ => {
                return Err(ToolError::new(
                    ToolErrorCategory::InvalidArguments,
                    "arguments must be a JSON object",
                    true,
                ));
            }
        };
        let call = self.connection.call_tool(&self.remote_name, arguments);
        let result = tokio::select! {
            result = call => result,
            () = context.cancel.cancelled() => {
                return Err(ToolError::new(ToolErrorCategory::Cancelled, "cancelled", false));
            }
        };
        let result = result.map_err(|error| {
            let category = match error {
                super::connection::McpError::Timeout(_) => ToolErrorCategory::Timeout,
                _ => ToolErrorCategory::Failed,
            };
            ToolError::new(
                category,
                format!("MCP server {}: {error}", self.connection.name),
                false,
            )
        })?;
        let text = cap_chars(&result_text(&result), MAX_OUTPUT_CHARS);
        let wrapped = wrap_untrusted(&self.connection.name, &self.remote_name, &text);
        if result.is_error == Some(true) {
            return Err(ToolError::new(ToolErrorCategory::Failed, wrapped, true));
        }
        Ok(ToolOutput {
            model_text: wrapped,
            display: vec![crate::event::ToolContent::Text { text }],
            locations: Vec::new(),
            raw_output: Some(json!({
                "server": self.connection.name,
                "tool": self.remote_name,
            })),
        })
    }
}
