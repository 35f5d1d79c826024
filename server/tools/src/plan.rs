//! `update_plan`: the model publishes its plan (a checklist) to the front end. Read-only, so the
//! `architect` mode can use it.

use serde::Deserialize;
use serde_json::json;

use super::args::{invalid, parse_args};
use super::{PermissionTarget, Tool, ToolContext, ToolError, ToolOutput, ToolPresentation};
use crate::event::{PlanEntry, PlanPriority, PlanStatus, ToolKind};
use crate::host::ToolEvent;
use lode_llm::ToolSpec;

/// Most entries a plan may have.
const MAX_ENTRIES: usize = 50;

#[derive(Deserialize)]
struct PlanArgs {
    entries: Vec<EntryArgs>,
}

#[derive(Deserialize)]
struct EntryArgs {
    content: String,
    #[serde(default)]
    priority: Option<PlanPriority>,
    #[serde(default)]
    status: Option<PlanStatus>,
}

/// `update_plan`.
pub struct UpdatePlanTool;

#[async_trait::async_trait]
impl Tool for UpdatePlanTool {
    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: "update_plan".into(),
            description: "Publish your plan for the task as a checklist the user sees. Send the \
                complete list every time (it replaces the previous one), and update statuses \
                as you work: at most one entry `in_progress`. Use it for tasks with several \
                steps."
                .into(),
            parameters: json!({
                "type": "object",
                "properties": {
                    "entries": {
                        "type": "array",
                        "maxItems": MAX_ENTRIES,
                        "items": {
                            "type": "object",
                            "properties": {
                                "content": {"type": "string", "description": "One step, in a short sentence."},
                                "priority": {"type": "string", "enum": ["high", "medium", "low"], "description": "Default medium."},
                                "status": {"type": "string", "enum": ["pending", "in_progress", "completed"], "description": "Default pending."}
                            },
                            "required": ["content"],
                            "additionalProperties": false
                        }
                    }
                },
                "required": ["entries"],
                "additionalProperties": false
            }),
        }
    }

    fn kind(&self) -> ToolKind {
        ToolKind::Think
    }

    fn read_only(&self) -> bool {
        true
    }

    fn present(&self, _arguments: &serde_json::Value, _context: &ToolContext) -> ToolPresentation {
        ToolPresentation {
            title: "Update plan".into(),
            locations: Vec::new(),
        }
    }

    fn permission_target(&self, _arguments: &serde_json::Value) -> PermissionTarget {
        PermissionTarget::Read
    }

    async fn run(
        &self,
        arguments: serde_json::Value,
        context: &ToolContext,
    ) -> Result<ToolOutput, ToolError> {
        let args: PlanArgs = parse_args("update_plan", &arguments)?;
        if args.entries.len() > MAX_ENTRIES {
            return Err(invalid(format!(
                "a plan has at most {MAX_ENTRIES} entries; merge steps"
            )));
        }
        let mut entries = Vec::with_capacity(args.entries.len());
        for entry in args.entries {
            let content = entry.content.trim().to_owned();
            if content.is_empty() {
                return Err(invalid("a plan entry has empty content"));
            }
            entries.push(PlanEntry {
                content,
                priority: entry.priority.unwrap_or(PlanPriority::Medium),
                status: entry.status.unwrap_or(PlanStatus::Pending),
            });
        }
        let done = entries
            .iter()
            .filter(|e| e.status == PlanStatus::Completed)
            .count();
        let total = entries.len();
        context.host.emit(ToolEvent::Plan(entries));
        Ok(ToolOutput {
            model_text: format!("Plan updated: {done} of {total} steps completed."),
            raw_output: Some(json!({"entries": total, "completed": done})),
            ..ToolOutput::default()
        })
    }
}
