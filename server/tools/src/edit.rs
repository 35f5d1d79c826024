//! Editing tools: `edit_file` (exact string replacement) and `write_file` (create or overwrite).
//! Both return a unified diff to the model and a [`ToolContent::Diff`] to the front end, write
//! through the editor when it offers a file system, and update the code index.

use serde::Deserialize;
use serde_json::json;
use similar::TextDiff;

use super::args::{invalid, parse_args, peek_str};
use super::files::{read_text, update_index, write_text};
use super::output::{DEFAULT_OUTPUT_CAP, cap_output};
use super::paths::{ResolvedPath, resolve_path};
use super::{
    PermissionTarget, Tool, ToolContext, ToolError, ToolErrorCategory, ToolOutput, ToolPresentation,
};
use crate::event::{Location, ToolContent, ToolKind};
use lode_llm::ToolSpec;

/// A unified diff of `old` → `new` with three lines of context, headed `a/path` / `b/path`.
pub fn unified_diff(path: &str, old: &str, new: &str) -> String {
    TextDiff::from_lines(old, new)
        .unified_diff()
        .context_radius(3)
        .header(&format!("a/{path}"), &format!("b/{path}"))
        .to_string()
}

/// The 1-based line of the first difference between `old` and `new`.
fn first_changed_line(old: &str, new: &str) -> u32 {
    let mut line = 1u32;
    for (a, b) in old.lines().zip(new.lines()) {
        if a != b {
            return line;
        }
        line += 1;
    }
    line
}

fn edit_target(arguments: &serde_json::Value) -> PermissionTarget {
    PermissionTarget::Edit {
        paths: peek_str(arguments, "path")
            .map(|path| vec![path.trim().trim_start_matches("./").to_owned()])
            .unwrap_or_default(),
    }
}

pub(super) fn edit_presentation(
    verb: &str,
    arguments: &serde_json::Value,
    context: &ToolContext,
) -> ToolPresentation {
    let path = peek_str(arguments, "path").unwrap_or("a file");
    ToolPresentation {
        title: format!("{verb} {path}"),
        locations: resolve_path(&context.roots, path)
            .map(|resolved| {
                vec![Location {
                    path: resolved.absolute,
                    line: None,
                }]
            })
            .unwrap_or_default(),
    }
}

/// Writes `new` over `old` (None: a new file) and builds the result: the one way every editing
/// tool changes a file (through the editor when it offers a file system, else atomically on
/// disk; the index updated; a unified diff for the model and the front end).
pub(super) async fn apply_change(
    context: &ToolContext,
    resolved: &ResolvedPath,
    old: Option<String>,
    new: String,
    summary: String,
    raw_output: serde_json::Value,
) -> Result<ToolOutput, ToolError> {
    let shown = resolved.display(&context.roots);
    write_text(context, &resolved.absolute, &new).await?;
    let index_note = if resolved.in_primary_root {
        update_index(context, &resolved.absolute, &new).await
    } else {
        None
    };
    let old_text = old.as_deref().unwrap_or("");
    let diff = unified_diff(&shown, old_text, &new);
    let mut model_text = format!("{summary}\n{}", cap_output(&diff, DEFAULT_OUTPUT_CAP).text);
    if let Some(note) = index_note {
        model_text.push('\n');
        model_text.push_str(&note);
    }
    let line = first_changed_line(old_text, &new);
    Ok(ToolOutput {
        model_text,
        display: vec![ToolContent::Diff {
            path: resolved.absolute.clone(),
            old_text: old,
            new_text: new,
        }],
        locations: vec![Location {
            path: resolved.absolute.clone(),
            line: Some(line),
        }],
        raw_output: Some(raw_output),
    })
}

#[derive(Deserialize)]
struct EditArgs {
    path: String,
    old_string: String,
    new_string: String,
    #[serde(default)]
    replace_all: bool,
}

/// `edit_file`: replaces an exact string in a file.
pub struct EditFileTool;

#[async_trait::async_trait]
impl Tool for EditFileTool {
    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: "edit_file".into(),
            description: "Edit a file by replacing an exact string. `old_string` must match the \
                file's current text exactly (whitespace and indentation included, without the \
                line numbers read_file shows) and occur exactly once, unless `replace_all` is \
                true. Include enough surrounding lines to make it unique. Returns a unified \
                diff. To create a file use write_file."
                .into(),
            parameters: json!({
                "type": "object",
                "properties": {
                    "path": {"type": "string", "description": "File path relative to the workspace root."},
                    "old_string": {"type": "string", "description": "The exact text to replace."},
                    "new_string": {"type": "string", "description": "The text to put in its place (must differ)."},
                    "replace_all": {"type": "boolean", "description": "Replace every occurrence instead of requiring one. Default false."}
                },
                "required": ["path", "old_string", "new_string"],
                "additionalProperties": false
            }),
        }
    }

    fn kind(&self) -> ToolKind {
        ToolKind::Edit
    }

    fn read_only(&self) -> bool {
        false
    }

    fn present(&self, arguments: &serde_json::Value, context: &ToolContext) -> ToolPresentation {
        edit_presentation("Edit", arguments, context)
    }

    fn permission_target(&self, arguments: &serde_json::Value) -> PermissionTarget {
        edit_target(arguments)
    }

    async fn run(
        &self,
        arguments: serde_json::Value,
        context: &ToolContext,
    ) -> Result<ToolOutput, ToolError> {
        let args: EditArgs = parse_args("edit_file", &arguments)?;
        if args.old_string.is_empty() {
            return Err(invalid(
                "old_string is empty; to create or overwrite a whole file use write_file",
            ));
        }
        if args.old_string == args.new_string {
            return Err(invalid(
                "old_string and new_string are identical; nothing to change",
            ));
        }
        let resolved = resolve_path(&context.roots, &args.path)?;
        let shown = resolved.display(&context.roots);
        let Some(old) = read_text(context, &resolved.absolute).await? else {
            return Err(ToolError::new(
                ToolErrorCategory::NotFound,
                format!("{shown} does not exist; use write_file to create it"),
                true,
            ));
        };
        let (mut needle, mut replacement) = (args.old_string.clone(), args.new_string.clone());
        let mut count = old.matches(needle.as_str()).count();
        // A file with CRLF line endings, and a model that wrote LF: match with the file's endings.
        if count == 0 && old.contains("\r\n") && needle.contains('\n') && !needle.contains("\r\n") {
            needle = needle.replace('\n', "\r\n");
            replacement = replacement.replace('\n', "\r\n");
            count = old.matches(needle.as_str()).count();
        }
        if count == 0 {
            let trimmed = args.old_string.trim();
            let hint = if !trimmed.is_empty() && old.contains(trimmed) {
                "It does occur with different leading or trailing whitespace: copy the exact \
                 indentation from read_file (without the line numbers)."
            } else {
                "Read the file again (it may have changed) and copy old_string exactly."
            };
            return Err(ToolError::new(
                ToolErrorCategory::NoUniqueMatch,
                format!("old_string was not found in {shown} (0 matches). {hint}"),
                true,
            ));
        }
        if count > 1 && !args.replace_all {
            return Err(ToolError::new(
                ToolErrorCategory::NoUniqueMatch,
                format!(
                    "old_string occurs {count} times in {shown}; include more surrounding lines \
                     so it matches exactly once, or set replace_all to change all {count}"
                ),
                true,
            ));
        }
        let new = if args.replace_all {
            old.replace(needle.as_str(), &replacement)
        } else {
            old.replacen(needle.as_str(), &replacement, 1)
        };
        let summary = format!(
            "Edited {shown}: {count} replacement{}.",
            if count == 1 { "" } else { "s" }
        );
        let raw = json!({"path": shown, "replacements": count});
        apply_change(context, &resolved, Some(old), new, summary, raw).await
    }
}

#[derive(Deserialize)]
struct WriteArgs {
    path: String,
    content: String,
}

/// `write_file`: creates or overwrites a whole file.
pub struct WriteFileTool;

#[async_trait::async_trait]
impl Tool for WriteFileTool {
    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: "write_file".into(),
            description: "Create a file, or replace a file's whole content, inside the \
                workspace. Missing parent directories are created. Prefer edit_file for \
                changes to an existing file. Returns a unified diff."
                .into(),
            parameters: json!({
                "type": "object",
                "properties": {
                    "path": {"type": "string", "description": "File path relative to the workspace root."},
                    "content": {"type": "string", "description": "The complete new content of the file."}
                },
                "required": ["path", "content"],
                "additionalProperties": false
            }),
        }
    }

    fn kind(&self) -> ToolKind {
        ToolKind::Edit
    }

    fn read_only(&self) -> bool {
        false
    }

    fn present(&self, arguments: &serde_json::Value, context: &ToolContext) -> ToolPresentation {
        edit_presentation("Write", arguments, context)
    }

    fn permission_target(&self, arguments: &serde_json::Value) -> PermissionTarget {
        edit_target(arguments)
    }

    async fn run(
        &self,
        arguments: serde_json::Value,
        context: &ToolContext,
    ) -> Result<ToolOutput, ToolError> {
        let args: WriteArgs = parse_args("write_file", &arguments)?;
        let resolved = resolve_path(&context.roots, &args.path)?;
        let shown = resolved.display(&context.roots);
        let old = if resolved.exists {
            read_text(context, &resolved.absolute).await?
        } else {
            None
        };
        if old.as_deref() == Some(args.content.as_str()) {
            return Ok(ToolOutput {
                model_text: format!("{shown} already has exactly this content; nothing changed."),
                raw_output: Some(json!({"path": shown, "created": false, "changed": false})),
                ..ToolOutput::default()
            });
        }
        let created = old.is_none();
        let summary = if created {
            format!("Created {shown} ({} lines).", args.content.lines().count())
        } else {
            format!(
                "Overwrote {shown} ({} lines).",
                args.content.lines().count()
            )
        };
        let raw = json!({"path": shown, "created": created, "changed": true});
        apply_change(context, &resolved, old, args.content, summary, raw).await
    }
}
