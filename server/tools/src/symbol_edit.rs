//! Edits by symbol: `replace_symbol_body`, `insert_before_symbol`, `insert_after_symbol`.
//!
//! A symbol is named `FILE:NAME/PATH` or `FILE:LINE:COLUMN` and resolved on the file's current
//! text (read like `edit_file` reads it: through the editor when it offers a file system, so
//! unsaved buffers and this turn's edits count) by `lode_index::locate`, with the same
//! tree-sitter tags the index uses. The new text is written by `edit::apply_change`, the path
//! `edit_file` takes: same confinement, same write (editor or atomic), same index update, same
//! diff; the policy judges the call as an edit of FILE.

use lode_index::{Language, SymbolEdit, SymbolError, SymbolName, locate, splice};
use serde::Deserialize;
use serde_json::json;

use super::args::{blocking, parse_args, peek_str};
use super::edit::apply_change;
use super::files::read_text;
use super::paths::resolve_path;
use super::{
    PermissionTarget, Tool, ToolContext, ToolError, ToolErrorCategory, ToolOutput, ToolPresentation,
};
use crate::event::{Location, ToolKind};
use lode_llm::ToolSpec;

/// The tools that name the file they change inside a `symbol` argument.
pub const SYMBOL_EDIT_TOOLS: [&str; 3] = [
    "replace_symbol_body",
    "insert_before_symbol",
    "insert_after_symbol",
];

const NAMING: &str = "Name it as FILE:NAME/PATH, the enclosing definitions' names joined by \
    `/` (`src/shapes.py:Circle/area`; an impl block by its label, `src/lib.rs:impl Display for \
    Registry/fmt`), or FILE:LINE:COLUMN inside it. An unknown or ambiguous name fails and lists \
    the candidates.";

/// The file a symbol edit's (possibly malformed) arguments name.
pub fn symbol_file(arguments: &serde_json::Value) -> Option<&str> {
    peek_str(arguments, "symbol")
        .map(SymbolName::file_part)
        .filter(|file| !file.is_empty())
}

/// A symbol resolution error in the tools' categories.
pub(crate) fn symbol_error(error: SymbolError) -> ToolError {
    let category = match &error {
        SymbolError::TooLong { .. }
        | SymbolError::Malformed { .. }
        | SymbolError::Unsupported { .. }
        | SymbolError::InvalidText(_) => ToolErrorCategory::InvalidArguments,
        SymbolError::NotFound { .. }
        | SymbolError::NoDefinitionAt { .. }
        | SymbolError::OutOfRange { .. } => ToolErrorCategory::NotFound,
        SymbolError::Ambiguous { .. } => ToolErrorCategory::NoUniqueMatch,
        SymbolError::Parse { .. } => ToolErrorCategory::Failed,
    };
    let retryable = category != ToolErrorCategory::Failed;
    ToolError::new(category, error.to_string(), retryable)
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct SymbolEditArgs {
    symbol: String,
    text: String,
}

/// One of the three edits by symbol.
pub struct SymbolEditTool {
    edit: SymbolEdit,
}

impl SymbolEditTool {
    pub fn replace_body() -> Self {
        SymbolEditTool {
            edit: SymbolEdit::ReplaceDefinition,
        }
    }

    pub fn insert_before() -> Self {
        SymbolEditTool {
            edit: SymbolEdit::InsertBefore,
        }
    }

    pub fn insert_after() -> Self {
        SymbolEditTool {
            edit: SymbolEdit::InsertAfter,
        }
    }

    fn name(&self) -> &'static str {
        match self.edit {
            SymbolEdit::ReplaceDefinition => SYMBOL_EDIT_TOOLS[0],
            SymbolEdit::InsertBefore => SYMBOL_EDIT_TOOLS[1],
            SymbolEdit::InsertAfter => SYMBOL_EDIT_TOOLS[2],
        }
    }

    fn description(&self) -> String {
        let what = match self.edit {
            SymbolEdit::ReplaceDefinition => {
                "Replace a whole definition (function, method, class, struct, impl, constant) \
                 by naming it instead of quoting it. The replaced text runs from the first token \
                 of the signature (`pub fn`, `def`, `export class`, `func (r *T)`) to the end of \
                 the definition: `text` must hold the complete new definition, signature \
                 included. The doc comments, attributes (`#[...]`) and decorators directly above \
                 it are kept; if `text` begins with such lines, they replace the ones above \
                 (from the line equal to its first line, else all of them) instead of doubling."
            }
            SymbolEdit::InsertBefore => {
                "Insert a new definition (or an import, a constant) just before a symbol, above \
                 its doc comments, attributes and decorators, at the symbol's indentation, with \
                 the blank lines the language uses between definitions."
            }
            SymbolEdit::InsertAfter => {
                "Insert a new definition just after a symbol's end (e.g. a new method after an \
                 existing one), at the symbol's indentation, with the blank lines the language \
                 uses between definitions."
            }
        };
        format!(
            "{what} {NAMING} `text` is re-indented to the symbol's indentation, so write it \
             flush left or as it appears in the file. Returns a unified diff and the new lines."
        )
    }

    fn verb(&self) -> &'static str {
        match self.edit {
            SymbolEdit::ReplaceDefinition => "Replace",
            SymbolEdit::InsertBefore => "Insert before",
            SymbolEdit::InsertAfter => "Insert after",
        }
    }
}

#[async_trait::async_trait]
impl Tool for SymbolEditTool {
    fn spec(&self) -> ToolSpec {
        let text = match self.edit {
            SymbolEdit::ReplaceDefinition => {
                "The complete new definition, signature included; doc comments or decorators \
                 at its start replace those above the definition."
            }
            _ => "The new definition(s) to insert.",
        };
        ToolSpec {
            name: self.name().into(),
            description: self.description(),
            parameters: json!({
                "type": "object",
                "properties": {
                    "symbol": {"type": "string", "description": "FILE:NAME/PATH (src/shapes.py:Circle/area) or FILE:LINE:COLUMN (src/shapes.py:12:5); FILE is relative to the workspace root."},
                    "text": {"type": "string", "description": text}
                },
                "required": ["symbol", "text"],
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
        let symbol = peek_str(arguments, "symbol").unwrap_or("a symbol");
        let shown: String = symbol.chars().take(200).collect();
        ToolPresentation {
            title: format!("{} {shown}", self.verb()),
            locations: symbol_file(arguments)
                .and_then(|file| resolve_path(&context.roots, file).ok())
                .map(|resolved| {
                    vec![Location {
                        path: resolved.absolute,
                        line: None,
                    }]
                })
                .unwrap_or_default(),
        }
    }

    fn permission_target(&self, arguments: &serde_json::Value) -> PermissionTarget {
        PermissionTarget::Edit {
            paths: symbol_file(arguments)
                .map(|file| vec![file.trim_start_matches("./").to_owned()])
                .unwrap_or_default(),
        }
    }

    async fn run(
        &self,
        arguments: serde_json::Value,
        context: &ToolContext,
    ) -> Result<ToolOutput, ToolError> {
        let args: SymbolEditArgs = parse_args(self.name(), &arguments)?;
        let name = SymbolName::parse(&args.symbol).map_err(symbol_error)?;
        let resolved = resolve_path(&context.roots, &name.file)?;
        let shown = resolved.display(&context.roots);
        let language = Language::from_path(&resolved.absolute)
            .filter(|language| language.is_code())
            .ok_or_else(|| {
                symbol_error(SymbolError::Unsupported {
                    file: shown.clone(),
                })
            })?;
        let Some(old) = read_text(context, &resolved.absolute).await? else {
            return Err(ToolError::new(
                ToolErrorCategory::NotFound,
                format!("{shown} does not exist"),
                true,
            ));
        };
        let edit = self.edit;
        let (source, file) = (old.clone(), shown.clone());
        let (span, spliced) = blocking(move || {
            let span = locate(language, &source, &file, &name.target).map_err(symbol_error)?;
            let spliced =
                splice(language, &source, &span, edit, &args.text).map_err(symbol_error)?;
            Ok((span, spliced))
        })
        .await?;
        let (new, start, end) = (spliced.text, spliced.lines.start, spliced.lines.end);
        let broken = spliced.syntax_error.map(|line| {
            format!(
                " Note: {shown} no longer parses cleanly (tree-sitter finds a syntax error at \
                 line {line}); check the edit."
            )
        });
        if new == old {
            return Ok(ToolOutput {
                model_text: format!(
                    "{shown}:{} already has exactly this text; nothing changed.",
                    span.path
                ),
                raw_output: Some(json!({"path": shown, "symbol": span.path, "changed": false})),
                ..ToolOutput::default()
            });
        }
        let was = span.definition_lines;
        let summary = match edit {
            SymbolEdit::ReplaceDefinition => format!(
                "Replaced {shown}:{} (lines {}-{}); the new definition is at lines {start}-{end}.",
                span.path, was.start, was.end
            ),
            SymbolEdit::InsertBefore => format!(
                "Inserted lines {start}-{end} of {shown} before {}.",
                span.path
            ),
            SymbolEdit::InsertAfter => format!(
                "Inserted lines {start}-{end} of {shown} after {}.",
                span.path
            ),
        };
        let summary = summary + broken.as_deref().unwrap_or("");
        let raw = json!({
            "path": shown,
            "symbol": span.path,
            "changed": true,
            "lines": [start, end],
            "syntax_error_line": spliced.syntax_error,
        });
        apply_change(context, &resolved, Some(old), new, summary, raw).await
    }
}
