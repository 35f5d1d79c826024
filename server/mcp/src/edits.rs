//! The edit tools `lode mcp --allow-edits` adds: `replace_symbol_body`, `insert_before_symbol`,
//! `insert_after_symbol`. The symbol is resolved and the text spliced by `lode_index::{locate, splice}`,
//! as the agent's tools of the same names do; the file is confined by the one path door
//! (`lode_policy::paths`, as the agent's tools and the LSP code actions are): canonical, inside
//! the workspace root, never under `.git/` or `.lode/` at any depth nor in lode's index; and
//! written atomically. The answer is the diff and the new line range.

use std::fmt::Write as _;

use lode_index::{Language, SymbolEdit, SymbolError, SymbolName, Workspace, locate, splice};
use rmcp::model::CallToolResult;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::json;
use similar::TextDiff;

use lode_policy::paths::PathUse;

use crate::tools::{CallError, answer, confined};

/// The names of the edit tools, in the order `tools/list` gives them.
pub const EDIT_TOOLS: [&str; 3] = [
    "replace_symbol_body",
    "insert_before_symbol",
    "insert_after_symbol",
];

/// The largest file the edit tools change.
const MAX_FILE_BYTES: u64 = 8 * 1024 * 1024;
/// The most diff text one answer carries.
const MAX_DIFF_CHARS: usize = 30_000;

/// Arguments of the edit tools.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SymbolEditArgs {
    /// The symbol: `FILE:NAME/PATH`, the names of the enclosing definitions from the top of
    /// the file separated by `/` (`src/shapes.py:Circle/area`, `src/lib.rs:add`, an impl block
    /// by its label: `src/lib.rs:impl Display for Registry/fmt`), or `FILE:LINE:COLUMN`
    /// (1-based) of a character inside the definition. FILE is relative to the workspace root.
    /// A `symbols` hit `src/lib.rs:4-9  method impl Registry > greet_all` is
    /// `src/lib.rs:impl Registry/greet_all`.
    pub symbol: String,
    /// The new text. It is re-indented to the symbol's indentation, so write it flush left or
    /// as it appears in the file.
    pub text: String,
}

/// What the edit tool `name` does, or `None` when it is not one.
pub fn edit_of(name: &str) -> Option<SymbolEdit> {
    match name {
        "replace_symbol_body" => Some(SymbolEdit::ReplaceDefinition),
        "insert_before_symbol" => Some(SymbolEdit::InsertBefore),
        "insert_after_symbol" => Some(SymbolEdit::InsertAfter),
        _ => None,
    }
}

/// (name, title, description) of each edit tool.
pub fn descriptions() -> [(&'static str, &'static str, &'static str); 3] {
    [
        (
            EDIT_TOOLS[0],
            "Replace a definition",
            "Replace a whole definition (function, method, class, struct, impl, constant) \
             named by `symbol`. The replaced text runs from the first token of the signature \
             (`pub fn`, `def`, `export class`) to the end of the definition, so `text` is the \
             complete new definition, signature included; the doc comments, attributes and \
             decorators above it are kept, unless `text` begins with such lines, which then \
             replace them. An unknown or ambiguous name fails and lists the candidates. \
             Returns the diff and the new line range.",
        ),
        (
            EDIT_TOOLS[1],
            "Insert before a definition",
            "Insert a new definition just before the one `symbol` names (above its doc \
             comments and decorators), at its indentation and with the usual blank lines. \
             Returns the diff and the new line range.",
        ),
        (
            EDIT_TOOLS[2],
            "Insert after a definition",
            "Insert a new definition just after the end of the one `symbol` names, at its \
             indentation and with the usual blank lines. Returns the diff and the new line \
             range.",
        ),
    ]
}

/// Runs one edit tool.
pub fn run(
    workspace: &Workspace,
    edit: SymbolEdit,
    args: SymbolEditArgs,
) -> Result<CallToolResult, CallError> {
    let name = SymbolName::parse(&args.symbol).map_err(arguments)?;
    let root = workspace.root();
    let file = confined(workspace, &name.file, PathUse::EditFile)?;
    let shown = lode_index::relative_path(root, &file).unwrap_or(name.file.clone());
    let language = Language::from_path(&file)
        .filter(|language| language.is_code())
        .ok_or_else(|| {
            arguments(SymbolError::Unsupported {
                file: shown.clone(),
            })
        })?;
    let size = std::fs::metadata(&file)
        .map_err(|error| CallError::Failed(format!("cannot read {shown}: {error}")))?
        .len();
    if size > MAX_FILE_BYTES {
        return Err(CallError::Arguments(format!(
            "{shown} is {size} bytes, more than the {MAX_FILE_BYTES} the edit tools change"
        )));
    }
    let old = std::fs::read_to_string(&file)
        .map_err(|error| CallError::Arguments(format!("cannot read {shown} as text: {error}")))?;
    let span = locate(language, &old, &shown, &name.target).map_err(failed)?;
    let spliced = splice(language, &old, &span, edit, &args.text).map_err(arguments)?;
    let (start, end) = (spliced.lines.start, spliced.lines.end);
    if spliced.text == old {
        return Ok(answer(
            format!(
                "{shown}:{} already has exactly this text; nothing changed.\n",
                span.path
            ),
            json!({"path": shown, "symbol": span.path, "changed": false}),
        ));
    }
    lode_index::write_atomic(&file, spliced.text.as_bytes())
        .map_err(|error| CallError::Failed(format!("cannot write {shown}: {error}")))?;
    // The next call's refresh (or the lease holder's watcher) sees the file anyway; updating
    // now only saves it the work, and another writer holding the index is no failure.
    let _ = workspace.update_file(&file, &spliced.text);
    let was = span.definition_lines;
    let mut text = match edit {
        SymbolEdit::ReplaceDefinition => format!(
            "Replaced {shown}:{} (lines {}-{}); the new definition is at lines {start}-{end}.\n",
            span.path, was.start, was.end
        ),
        SymbolEdit::InsertBefore => format!(
            "Inserted lines {start}-{end} of {shown} before {}.\n",
            span.path
        ),
        SymbolEdit::InsertAfter => format!(
            "Inserted lines {start}-{end} of {shown} after {}.\n",
            span.path
        ),
    };
    if let Some(line) = spliced.syntax_error {
        let _ = writeln!(
            text,
            "Note: {shown} no longer parses cleanly (tree-sitter finds a syntax error at line \
             {line}); check the edit."
        );
    }
    let diff = TextDiff::from_lines(&old, &spliced.text)
        .unified_diff()
        .context_radius(3)
        .header(&format!("a/{shown}"), &format!("b/{shown}"))
        .to_string();
    match diff.char_indices().nth(MAX_DIFF_CHARS) {
        Some((cut, _)) => {
            let _ = write!(
                text,
                "{}\n[diff cut at {MAX_DIFF_CHARS} characters]\n",
                &diff[..cut]
            );
        }
        None => text.push_str(&diff),
    }
    Ok(answer(
        text,
        json!({
            "path": shown,
            "symbol": span.path,
            "changed": true,
            "lines": [start, end],
            "syntax_error_line": spliced.syntax_error,
        }),
    ))
}

/// A name or text the caller can correct.
fn arguments(error: SymbolError) -> CallError {
    CallError::Arguments(error.to_string())
}

/// A name that matched no or several definitions: an error result listing the candidates, for
/// the model to pick from.
fn failed(error: SymbolError) -> CallError {
    match error {
        SymbolError::Malformed { .. } | SymbolError::TooLong { .. } => arguments(error),
        other => CallError::Failed(other.to_string()),
    }
}
