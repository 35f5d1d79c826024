//! The `load_skill` tool: the model fetches any skill's body on demand, or one of its resource
//! files (`scripts/`, `references/`, `assets/`), rendered with the skill's trust.

use std::sync::Arc;

use serde_json::json;

use super::{SkillSet, render_skill, render_skill_file};
use crate::event::ToolKind;
use lode_llm::ToolSpec;
use lode_tools::{
    PermissionTarget, Tool, ToolContext, ToolError, ToolErrorCategory, ToolOutput, ToolPresentation,
};

/// Largest resource file returned, in bytes.
const MAX_RESOURCE_BYTES: usize = 50_000;

/// `load_skill(name, file?)`.
pub struct LoadSkillTool {
    skills: Arc<SkillSet>,
}

impl LoadSkillTool {
    pub const NAME: &'static str = "load_skill";

    pub fn new(skills: Arc<SkillSet>) -> Self {
        Self { skills }
    }
}

fn invalid(message: impl Into<String>) -> ToolError {
    ToolError::new(ToolErrorCategory::InvalidArguments, message, true)
}

#[async_trait::async_trait]
impl Tool for LoadSkillTool {
    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: Self::NAME.to_owned(),
            description: "Read a skill's full instructions by name (see the skills catalogue), or \
                          one of its files under scripts/, references/ or assets/."
                .to_owned(),
            parameters: json!({
                "type": "object",
                "properties": {
                    "name": {"type": "string", "description": "The skill's name."},
                    "file": {
                        "type": "string",
                        "description": "Optional: a file of the skill, e.g. references/guide.md."
                    }
                },
                "required": ["name"],
                "additionalProperties": false
            }),
        }
    }

    fn kind(&self) -> ToolKind {
        ToolKind::Read
    }

    fn read_only(&self) -> bool {
        true
    }

    fn present(&self, arguments: &serde_json::Value, _context: &ToolContext) -> ToolPresentation {
        let name = arguments
            .get("name")
            .and_then(|v| v.as_str())
            .unwrap_or("?");
        let title = match arguments.get("file").and_then(|v| v.as_str()) {
            Some(file) => format!("Load skill {name}: {file}"),
            None => format!("Load skill {name}"),
        };
        ToolPresentation {
            title,
            locations: Vec::new(),
        }
    }

    fn permission_target(&self, _arguments: &serde_json::Value) -> PermissionTarget {
        PermissionTarget::Read
    }

    /// Untrusted skill text is wrapped when rendered; a trusted skill is the user's.
    fn marks_own_output(&self) -> bool {
        true
    }

    async fn run(
        &self,
        arguments: serde_json::Value,
        _context: &ToolContext,
    ) -> Result<ToolOutput, ToolError> {
        let name = arguments
            .get("name")
            .and_then(|v| v.as_str())
            .ok_or_else(|| invalid("`name` (a string) is required"))?;
        let file = match arguments.get("file") {
            None | Some(serde_json::Value::Null) => None,
            Some(serde_json::Value::String(file)) => Some(file.as_str()),
            Some(_) => return Err(invalid("`file` must be a string")),
        };
        let skill = self.skills.get(name).ok_or_else(|| {
            let known: Vec<String> = self
                .skills
                .skills()
                .iter()
                .map(|s| s.name.clone())
                .collect();
            ToolError::new(
                ToolErrorCategory::NotFound,
                format!(
                    "no skill named {name:?}; known skills: {}",
                    known.join(", ")
                ),
                true,
            )
        })?;
        let raw_output = json!({
            "skill": skill.name,
            "source": skill.source.label(),
            "trust": skill.trust.label(),
            "granted_tools": skill.granted_tools(),
        });
        let Some(file) = file else {
            let mut text = render_skill(&skill);
            if !skill.resources.is_empty() {
                text.push_str("\n\nFiles of this skill (read with load_skill name + file):\n");
                for resource in &skill.resources {
                    text.push_str(&format!("- {resource}\n"));
                }
            }
            return Ok(ToolOutput {
                model_text: text,
                raw_output: Some(raw_output),
                ..ToolOutput::default()
            });
        };
        // Only files the scan listed (regular files inside the folder, no symlinks) are readable.
        let normalised = file.trim_start_matches("./");
        if !skill.resources.iter().any(|r| r == normalised) {
            return Err(ToolError::new(
                ToolErrorCategory::NotFound,
                format!(
                    "skill {name:?} has no file {file:?}; its files: {}",
                    if skill.resources.is_empty() {
                        "none".to_owned()
                    } else {
                        skill.resources.join(", ")
                    }
                ),
                true,
            ));
        }
        let dir = skill.dir.as_ref().ok_or_else(|| {
            ToolError::new(
                ToolErrorCategory::NotFound,
                "bundled skills have no files",
                false,
            )
        })?;
        let bytes = tokio::fs::read(dir.join(normalised))
            .await
            .map_err(|error| {
                ToolError::new(
                    ToolErrorCategory::Failed,
                    format!("cannot read {file}: {error}"),
                    false,
                )
            })?;
        let truncated = bytes.len() > MAX_RESOURCE_BYTES;
        let mut content =
            String::from_utf8_lossy(&bytes[..bytes.len().min(MAX_RESOURCE_BYTES)]).into_owned();
        if truncated {
            content.push_str(&format!(
                "\n[truncated: the file has {} bytes, {MAX_RESOURCE_BYTES} shown]",
                bytes.len()
            ));
        }
        Ok(ToolOutput {
            model_text: render_skill_file(&skill, normalised, &content),
            raw_output: Some(raw_output),
            ..ToolOutput::default()
        })
    }
}
