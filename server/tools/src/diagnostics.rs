//! Compiler diagnostics fed back to the model while it edits code.
//!
//! A front end plugs a [`DiagnosticsSource`] into [`crate::AgentOptions::diagnostics`] (the CLI
//! wires the LSP crate's downstream language servers and checker commands). With one present:
//! - after every successful file edit (`edit_file`, `write_file`, the edits by symbol), the
//!   tool's result text gets a compact block of the diagnostics that are *new* in the touched
//!   file compared with a snapshot taken just before the edit (errors first, then warnings;
//!   capped per file and in total);
//! - before a turn that edited files ends, the edited files are checked once more, and if they
//!   have errors that were not there before the turn's first edit to them, the model gets them
//!   as a note and one more round to fix or explain them ([`TurnDiagnostics`]);
//! - the `diagnostics` tool asks the source for single files ([`SourceDiagnosticsTool`]).
//!
//! Without a source nothing here runs. The types are the agent's own plain data, so this crate
//! does not depend on any protocol crate.

use std::collections::{BTreeSet, HashMap};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde_json::json;

use crate::cargo_check::DiagnosticsTool;
use crate::event::{Location, ToolKind};
use crate::paths::{display_path, resolve_path};
use crate::{PermissionTarget, Tool, ToolContext, ToolError, ToolOutput, ToolPresentation};
use lode_llm::{ToolCall, ToolResult, ToolSpec};

/// Most diagnostics shown for one file in an injected block.
pub const MAX_PER_FILE: usize = 10;
/// Most characters of one injected block (about 500 tokens).
pub const MAX_BLOCK_CHARS: usize = 2_000;
/// The tools whose successful calls trigger a diagnostics block.
pub const EDITING_TOOLS: [&str; 5] = crate::FILE_EDIT_TOOLS;

/// How serious a diagnostic is; the order is the display order.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Severity {
    Error,
    Warning,
    Information,
    Hint,
}

impl Severity {
    pub fn as_str(self) -> &'static str {
        match self {
            Severity::Error => "error",
            Severity::Warning => "warning",
            Severity::Information => "info",
            Severity::Hint => "hint",
        }
    }
}

/// One finding of a checker.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Diagnostic {
    pub severity: Severity,
    /// 1-based.
    pub line: u32,
    /// 1-based.
    pub column: u32,
    pub message: String,
    /// The checker's code (`E0308`), if any.
    pub code: Option<String>,
    /// Who reported it (`rustc`, `Pyright`), if known.
    pub source: Option<String>,
}

impl Diagnostic {
    /// What identifies "the same problem" across an edit: lines shift, messages do not.
    fn identity(&self) -> (Severity, &str, Option<&str>) {
        (self.severity, self.message.as_str(), self.code.as_deref())
    }

    /// `path:line:col severity[code]: message (source)`.
    pub fn line_text(&self, path: &str) -> String {
        let code = self
            .code
            .as_ref()
            .map(|code| format!("[{code}]"))
            .unwrap_or_default();
        let source = self
            .source
            .as_ref()
            .map(|source| format!(" ({source})"))
            .unwrap_or_default();
        format!(
            "{path}:{}:{} {}{code}: {}{source}",
            self.line,
            self.column,
            self.severity.as_str(),
            first_line(&self.message)
        )
    }
}

fn first_line(text: &str) -> &str {
    text.lines().next().unwrap_or("").trim()
}

/// The diagnostics of one file.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct FileDiagnostics {
    /// Absolute.
    pub path: PathBuf,
    pub diagnostics: Vec<Diagnostic>,
    /// What checked the file (`rust-analyzer`, `cargo check`), if anything did.
    pub checked_by: Option<String>,
    /// Why nothing could check the file, when nothing could.
    pub error: Option<String>,
}

/// Something that can tell the current diagnostics of files as they are on disk.
#[async_trait::async_trait]
pub trait DiagnosticsSource: Send + Sync {
    /// One entry per requested path (absolute paths), in any order.
    async fn diagnostics_for(&self, paths: &[PathBuf]) -> Vec<FileDiagnostics>;

    /// Told just before the agent writes `path` (absolute), so what was known about the file
    /// before can be treated as stale (see `crate::pushed_diagnostics`).
    fn file_changing(&self, path: &Path) {
        let _ = path;
    }
}

/// The diagnostics in `after` that `before` did not have, counted as a multiset by severity,
/// message and code (so a moved error is not new, a second copy of it is). Errors first.
pub fn new_diagnostics(before: &[Diagnostic], after: &[Diagnostic]) -> Vec<Diagnostic> {
    let mut remaining: HashMap<(Severity, &str, Option<&str>), usize> = HashMap::new();
    for diagnostic in before {
        *remaining.entry(diagnostic.identity()).or_default() += 1;
    }
    let mut fresh: Vec<Diagnostic> = after
        .iter()
        .filter(
            |diagnostic| match remaining.get_mut(&diagnostic.identity()) {
                Some(count) if *count > 0 => {
                    *count -= 1;
                    false
                }
                _ => true,
            },
        )
        .cloned()
        .collect();
    fresh.sort_by_key(|diagnostic| (diagnostic.severity, diagnostic.line, diagnostic.column));
    fresh
}

/// The compact text block for new diagnostics of some files, errors before warnings,
/// informational ones left out, at most [`MAX_PER_FILE`] per file and [`MAX_BLOCK_CHARS`] in all.
/// lode's `heading`, then the checkers' lines (which quote the code) inside an
/// `<untrusted_content source="diagnostics">` block.
pub fn render_block(heading: &str, root: &Path, files: &[(PathBuf, Vec<Diagnostic>)]) -> String {
    let mut text = String::new();
    let mut omitted = 0usize;
    for (path, diagnostics) in files {
        let shown_path = display_path(&[root.to_path_buf()], path);
        let relevant: Vec<&Diagnostic> = diagnostics
            .iter()
            .filter(|diagnostic| diagnostic.severity <= Severity::Warning)
            .collect();
        for (position, diagnostic) in relevant.iter().enumerate() {
            let line = diagnostic.line_text(&shown_path);
            if position >= MAX_PER_FILE
                || heading.len() + text.len() + line.len() + 1 > MAX_BLOCK_CHARS
            {
                omitted += relevant.len() - position;
                break;
            }
            text.push_str(&line);
            text.push('\n');
        }
    }
    if omitted > 0 {
        text.push_str(&format!(
            "[{omitted} more not shown; call the diagnostics tool for the full list]\n"
        ));
    }
    format!(
        "{heading}\n{}\n",
        crate::untrusted::wrap("diagnostics", &[], &text)
    )
}

fn count(diagnostics: &[Diagnostic], severity: Severity) -> usize {
    diagnostics
        .iter()
        .filter(|diagnostic| diagnostic.severity == severity)
        .count()
}

/// The file an editing tool call touches, absolute, when the call is one.
fn edited_path(root: &Path, call: &ToolCall) -> Option<PathBuf> {
    let raw = crate::edited_file(&call.name, &call.arguments)?;
    resolve_path(&[root.to_path_buf()], raw)
        .ok()
        .map(|resolved| resolved.absolute)
}

/// A file's diagnostics; `None` when nothing could check it (no checker for the language, the
/// checker failed), so that silence is not mistaken for a clean file.
async fn diagnostics_of(source: &dyn DiagnosticsSource, path: &Path) -> Option<Vec<Diagnostic>> {
    let files: Vec<FileDiagnostics> = source
        .diagnostics_for(&[path.to_path_buf()])
        .await
        .into_iter()
        .filter(|file| file.path == path && file.checked_by.is_some())
        .collect();
    if files.is_empty() {
        return None;
    }
    Some(
        files
            .into_iter()
            .flat_map(|file| file.diagnostics)
            .collect(),
    )
}

/// A snapshot taken before an editing tool call ran.
pub struct PendingEdit {
    path: PathBuf,
    before: Vec<Diagnostic>,
}

/// The diagnostics bookkeeping of one turn.
pub struct TurnDiagnostics {
    source: Arc<dyn DiagnosticsSource>,
    root: PathBuf,
    /// Each edited file's diagnostics before the turn's first edit to it.
    baseline: HashMap<PathBuf, Vec<Diagnostic>>,
    /// Edited files in the order first edited.
    edited: Vec<PathBuf>,
    extra_round_used: bool,
}

impl TurnDiagnostics {
    pub fn new(source: Arc<dyn DiagnosticsSource>, root: PathBuf) -> TurnDiagnostics {
        TurnDiagnostics {
            source,
            root,
            baseline: HashMap::new(),
            edited: Vec::new(),
            extra_round_used: false,
        }
    }

    /// Takes the snapshot for an editing call; `None` for any other call.
    pub async fn before_call(&mut self, call: &ToolCall) -> Option<PendingEdit> {
        let path = edited_path(&self.root, call)?;
        // Files nothing can check get no block (and cost no second check).
        let before = diagnostics_of(self.source.as_ref(), &path).await?;
        self.baseline
            .entry(path.clone())
            .or_insert_with(|| before.clone());
        self.source.file_changing(&path);
        Some(PendingEdit { path, before })
    }

    /// Appends the block of new diagnostics to a successful editing call's result.
    pub async fn after_call(&mut self, pending: PendingEdit, result: &mut ToolResult) {
        if result.is_error {
            return;
        }
        if !self.edited.contains(&pending.path) {
            self.edited.push(pending.path.clone());
        }
        let Some(after) = diagnostics_of(self.source.as_ref(), &pending.path).await else {
            return;
        };
        let fresh = new_diagnostics(&pending.before, &after);
        let shown = display_path(std::slice::from_ref(&self.root), &pending.path);
        let relevant = fresh
            .iter()
            .filter(|diagnostic| diagnostic.severity <= Severity::Warning)
            .count();
        let block = if relevant == 0 {
            let remaining = count(&after, Severity::Error);
            if remaining == 0 {
                format!("lode diagnostics: no new errors or warnings in {shown}.\n")
            } else {
                format!(
                    "lode diagnostics: no new errors or warnings in {shown} \
                     ({remaining} error(s) were already there before this edit).\n"
                )
            }
        } else {
            let heading = format!(
                "lode diagnostics after this edit ({} new error(s), {} new warning(s)):",
                count(&fresh, Severity::Error),
                count(&fresh, Severity::Warning)
            );
            render_block(&heading, &self.root, &[(pending.path, fresh)])
        };
        if !result.content.ends_with('\n') {
            result.content.push('\n');
        }
        result.content.push('\n');
        result.content.push_str(&block);
    }

    /// Called when the model is about to finish: the note to send back when the turn's edits
    /// left errors that were not there before, at most once per turn.
    pub async fn before_turn_ends(&mut self) -> Option<String> {
        if self.extra_round_used || self.edited.is_empty() {
            return None;
        }
        let checked = self.source.diagnostics_for(&self.edited).await;
        let mut introduced = Vec::new();
        for path in &self.edited {
            let after: Vec<Diagnostic> = checked
                .iter()
                .filter(|file| &file.path == path)
                .flat_map(|file| file.diagnostics.iter().cloned())
                .collect();
            let before = self.baseline.get(path).map(Vec::as_slice).unwrap_or(&[]);
            let errors: Vec<Diagnostic> = new_diagnostics(before, &after)
                .into_iter()
                .filter(|diagnostic| diagnostic.severity == Severity::Error)
                .collect();
            if !errors.is_empty() {
                introduced.push((path.clone(), errors));
            }
        }
        if introduced.is_empty() {
            return None;
        }
        self.extra_round_used = true;
        let total: usize = introduced.iter().map(|(_, errors)| errors.len()).sum();
        let heading = format!(
            "lode: your edits in this turn left {total} error(s) that were not there before. \
             Fix them now, or explain why they should stay:"
        );
        Some(render_block(&heading, &self.root, &introduced))
    }
}

/// `diagnostics` backed by a [`DiagnosticsSource`] for single files; directories (and the
/// default, the whole workspace) still go to the built-in `cargo check` tool.
pub struct SourceDiagnosticsTool {
    source: Arc<dyn DiagnosticsSource>,
    fallback: DiagnosticsTool,
}

impl SourceDiagnosticsTool {
    pub fn new(source: Arc<dyn DiagnosticsSource>) -> SourceDiagnosticsTool {
        SourceDiagnosticsTool {
            source,
            fallback: DiagnosticsTool,
        }
    }
}

#[async_trait::async_trait]
impl Tool for SourceDiagnosticsTool {
    fn spec(&self) -> ToolSpec {
        let mut spec = self.fallback.spec();
        spec.description = "Compiler errors and warnings, one per line as \
            `path:line:col severity[code]: message (source)`, errors first. Give a file path to \
            check that file with its language's server or checker (Rust, Python, TypeScript, \
            Go); give a directory, or nothing, to run `cargo check` on the enclosing Cargo \
            package. Call it after editing to verify your change."
            .into();
        spec
    }

    fn kind(&self) -> ToolKind {
        ToolKind::Execute
    }

    /// Checkers run build scripts and plugins: not read-only.
    fn read_only(&self) -> bool {
        false
    }

    fn present(&self, arguments: &serde_json::Value, context: &ToolContext) -> ToolPresentation {
        self.fallback.present(arguments, context)
    }

    fn permission_target(&self, arguments: &serde_json::Value) -> PermissionTarget {
        self.fallback.permission_target(arguments)
    }

    async fn run(
        &self,
        arguments: serde_json::Value,
        context: &ToolContext,
    ) -> Result<ToolOutput, ToolError> {
        let Some(raw) = arguments.get("path").and_then(|path| path.as_str()) else {
            return self.fallback.run(arguments, context).await;
        };
        let target = resolve_path(&context.roots, raw)?;
        if !target.absolute.is_file() {
            return self.fallback.run(arguments, context).await;
        }
        let files = self
            .source
            .diagnostics_for(std::slice::from_ref(&target.absolute))
            .await;
        let shown = target.display(&context.roots);
        let mut diagnostics: Vec<Diagnostic> = files
            .iter()
            .flat_map(|file| file.diagnostics.iter().cloned())
            .collect();
        diagnostics.sort_by_key(|diagnostic| (diagnostic.severity, diagnostic.line));
        let checked_by: BTreeSet<&str> = files
            .iter()
            .filter_map(|file| file.checked_by.as_deref())
            .collect();
        let failure = files.iter().find_map(|file| file.error.clone());
        let errors = count(&diagnostics, Severity::Error);
        let warnings = count(&diagnostics, Severity::Warning);
        let mut text = if checked_by.is_empty() {
            format!(
                "Nothing could check {shown}: {}\n",
                failure.as_deref().unwrap_or("no checker for this language")
            )
        } else {
            format!(
                "{shown} ({}): {errors} error(s), {warnings} warning(s)\n",
                checked_by.into_iter().collect::<Vec<_>>().join(", ")
            )
        };
        for diagnostic in diagnostics.iter().take(200) {
            text.push_str(&diagnostic.line_text(&shown));
            text.push('\n');
        }
        Ok(ToolOutput {
            model_text: text,
            display: Vec::new(),
            locations: diagnostics
                .iter()
                .filter(|diagnostic| diagnostic.severity == Severity::Error)
                .take(20)
                .map(|diagnostic| Location {
                    path: target.absolute.clone(),
                    line: Some(diagnostic.line),
                })
                .collect(),
            raw_output: Some(json!({"errors": errors, "warnings": warnings})),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn diagnostic(severity: Severity, line: u32, message: &str) -> Diagnostic {
        Diagnostic {
            severity,
            line,
            column: 1,
            message: message.into(),
            code: None,
            source: None,
        }
    }

    #[test]
    fn moved_diagnostics_are_not_new_but_extra_copies_are() {
        let before = vec![diagnostic(Severity::Error, 3, "mismatched types")];
        let after = vec![
            diagnostic(Severity::Warning, 1, "unused variable"),
            diagnostic(Severity::Error, 9, "mismatched types"),
            diagnostic(Severity::Error, 12, "mismatched types"),
        ];
        let fresh = new_diagnostics(&before, &after);
        assert_eq!(fresh.len(), 2);
        assert_eq!(fresh[0].severity, Severity::Error, "errors come first");
        assert_eq!(fresh[1].message, "unused variable");
    }

    /// A canned source (the trait is ours, so a fixed answer is a fair double): `checked` says
    /// whether anything could check the files.
    struct CannedSource {
        checked: bool,
        diagnostics: Vec<Diagnostic>,
    }

    #[async_trait::async_trait]
    impl DiagnosticsSource for CannedSource {
        async fn diagnostics_for(&self, paths: &[PathBuf]) -> Vec<FileDiagnostics> {
            paths
                .iter()
                .map(|path| FileDiagnostics {
                    path: path.clone(),
                    diagnostics: self.diagnostics.clone(),
                    checked_by: self.checked.then(|| "canned".to_owned()),
                    error: (!self.checked).then(|| "no checker".to_owned()),
                })
                .collect()
        }
    }

    fn edit_call() -> ToolCall {
        ToolCall {
            id: "c".into(),
            name: "write_file".into(),
            arguments: json!({"path": "notes.md", "content": "x"}),
        }
    }

    #[tokio::test]
    async fn files_nothing_can_check_get_no_block_and_no_extra_round() {
        let root = std::env::temp_dir();
        let source = Arc::new(CannedSource {
            checked: false,
            diagnostics: Vec::new(),
        });
        let mut tracker = TurnDiagnostics::new(source, root);
        assert!(tracker.before_call(&edit_call()).await.is_none());
        assert!(tracker.before_turn_ends().await.is_none());
    }

    #[tokio::test]
    async fn a_checked_file_gets_a_block_even_when_clean() {
        let root = std::env::temp_dir();
        let source = Arc::new(CannedSource {
            checked: true,
            diagnostics: vec![diagnostic(Severity::Error, 1, "old problem")],
        });
        let mut tracker = TurnDiagnostics::new(source, root);
        let pending = tracker.before_call(&edit_call()).await.unwrap();
        let mut result = ToolResult {
            call_id: "c".into(),
            content: "Wrote notes.md".into(),
            is_error: false,
        };
        tracker.after_call(pending, &mut result).await;
        assert!(
            result.content.ends_with(
                "no new errors or warnings in notes.md (1 error(s) were already there before this edit).\n"
            ),
            "{}",
            result.content
        );
        // The error predates the turn: no extra round.
        assert!(tracker.before_turn_ends().await.is_none());
    }

    #[test]
    fn block_is_capped_per_file_and_says_what_it_left_out() {
        let many: Vec<Diagnostic> = (1..=25)
            .map(|line| diagnostic(Severity::Error, line, "boom"))
            .collect();
        let root = PathBuf::from("/w");
        let block = render_block("h:", &root, &[(root.join("a.rs"), many)]);
        assert_eq!(
            block.lines().filter(|l| l.contains("boom")).count(),
            MAX_PER_FILE
        );
        assert!(block.contains("[15 more not shown"), "{block}");
        assert!(block.contains("a.rs:1:1 error: boom"), "{block}");
    }
}
