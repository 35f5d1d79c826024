//! `diagnostics`: compiler errors and warnings for the workspace. For Rust it runs
//! `cargo check --message-format=json` and condenses the messages to one line each, errors first.
//! Other languages have no source yet (the LSP client will provide one) and the tool says so.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::Deserialize;
use serde_json::json;

use super::args::{parse_args, peek_str};
use super::command::{ProcessEnding, run_shell};
use super::output::{DEFAULT_OUTPUT_CAP, cap_output};
use super::paths::{display_path, resolve_path};
use super::{
    PermissionTarget, Tool, ToolContext, ToolError, ToolErrorCategory, ToolOutput, ToolPresentation,
};
use crate::event::{Location, ToolKind};
use lode_llm::ToolSpec;

/// The command the Rust source runs (also what the permission policy judges).
pub const CARGO_CHECK: &str = "cargo check --message-format=json --all-targets";
/// How long `cargo check` may take.
const CHECK_TIMEOUT: Duration = Duration::from_secs(600);
/// Most diagnostics listed.
const MAX_DIAGNOSTICS: usize = 200;

#[derive(Deserialize)]
struct DiagnosticsArgs {
    #[serde(default)]
    path: Option<String>,
}

/// One condensed compiler message.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Diagnostic {
    /// 0 for errors, 1 for warnings, 2 for anything else (sorting key).
    pub rank: u8,
    pub path: String,
    pub line: u32,
    pub column: u32,
    pub severity: String,
    pub code: Option<String>,
    pub message: String,
}

impl Diagnostic {
    pub fn line_text(&self) -> String {
        let code = self
            .code
            .as_ref()
            .map(|code| format!("[{code}]"))
            .unwrap_or_default();
        format!(
            "{}:{}:{} {}{code}: {}",
            self.path, self.line, self.column, self.severity, self.message
        )
    }
}

/// Parses `cargo check --message-format=json` output. `package_dir` is where cargo ran; relative
/// file names are resolved against it and its ancestors (cargo names them from the workspace
/// root), then shown relative to `roots`.
pub fn parse_cargo_messages(
    stdout: &str,
    package_dir: &Path,
    roots: &[PathBuf],
) -> Vec<Diagnostic> {
    let mut seen = BTreeSet::new();
    for line in stdout.lines() {
        let Ok(value) = serde_json::from_str::<serde_json::Value>(line) else {
            continue;
        };
        if value["reason"] != "compiler-message" {
            continue;
        }
        let message = &value["message"];
        let level = message["level"].as_str().unwrap_or("note");
        let rank = match level {
            "error" | "error: internal compiler error" => 0,
            "warning" => 1,
            _ => 2,
        };
        let text = message["message"].as_str().unwrap_or("").trim().to_owned();
        if text.is_empty() || text.starts_with("aborting due to") {
            continue;
        }
        // Summary lines ("3 warnings emitted") have no spans.
        let spans = message["spans"].as_array().cloned().unwrap_or_default();
        let Some(span) = spans
            .iter()
            .find(|span| span["is_primary"].as_bool() == Some(true))
            .or(spans.first())
        else {
            continue;
        };
        let file = span["file_name"].as_str().unwrap_or("");
        let path = resolve_cargo_file(file, package_dir)
            .map(|absolute| display_path(roots, &absolute))
            .unwrap_or_else(|| file.to_owned());
        seen.insert(Diagnostic {
            rank,
            path,
            line: span["line_start"].as_u64().unwrap_or(0) as u32,
            column: span["column_start"].as_u64().unwrap_or(0) as u32,
            severity: level.to_owned(),
            code: message["code"]["code"].as_str().map(str::to_owned),
            message: text,
        });
    }
    seen.into_iter().collect()
}

fn resolve_cargo_file(file: &str, package_dir: &Path) -> Option<PathBuf> {
    let file = Path::new(file);
    if file.is_absolute() {
        return Some(file.to_path_buf());
    }
    package_dir
        .ancestors()
        .map(|dir| dir.join(file))
        .find(|candidate| candidate.exists())
}

/// The directory of the nearest `Cargo.toml` at or above `start`, inside `root`.
fn find_cargo_dir(start: &Path, root: &Path) -> Option<PathBuf> {
    let start = if start.is_file() {
        start.parent()?
    } else {
        start
    };
    start
        .ancestors()
        .take_while(|dir| dir.starts_with(root))
        .find(|dir| dir.join("Cargo.toml").is_file())
        .map(Path::to_path_buf)
}

/// `diagnostics`.
pub struct DiagnosticsTool;

#[async_trait::async_trait]
impl Tool for DiagnosticsTool {
    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: "diagnostics".into(),
            description: "Compiler errors and warnings for the workspace, one per line as \
                `path:line:col severity[code]: message`, errors first. For Rust it runs \
                `cargo check` (this builds dependencies and runs build scripts, so it can take \
                a while the first time). Other languages are not supported yet: run their \
                checker with run_command instead. Call it after editing to verify your change."
                .into(),
            parameters: json!({
                "type": "object",
                "properties": {
                    "path": {"type": "string", "description": "A file or directory; the nearest Cargo package containing it is checked. Default: the workspace root."}
                },
                "additionalProperties": false
            }),
        }
    }

    fn kind(&self) -> ToolKind {
        ToolKind::Execute
    }

    /// `cargo check` runs build scripts and proc macros: arbitrary code, so not read-only.
    fn read_only(&self) -> bool {
        false
    }

    fn present(&self, arguments: &serde_json::Value, _context: &ToolContext) -> ToolPresentation {
        ToolPresentation {
            title: match peek_str(arguments, "path") {
                Some(path) => format!("Diagnostics for {path}"),
                None => "Diagnostics".into(),
            },
            locations: Vec::new(),
        }
    }

    fn permission_target(&self, _arguments: &serde_json::Value) -> PermissionTarget {
        PermissionTarget::Command {
            command: CARGO_CHECK.into(),
        }
    }

    async fn run(
        &self,
        arguments: serde_json::Value,
        context: &ToolContext,
    ) -> Result<ToolOutput, ToolError> {
        let args: DiagnosticsArgs = parse_args("diagnostics", &arguments)?;
        let target = resolve_path(&context.roots, args.path.as_deref().unwrap_or("."))?;
        let Some(package_dir) = find_cargo_dir(&target.absolute, &target.root) else {
            return Ok(ToolOutput {
                model_text: format!(
                    "No diagnostics source is available for {} yet: lode currently checks Rust \
                     (Cargo) projects only. Run the project's own checker or tests with \
                     run_command (e.g. `pyright`, `tsc --noEmit`, `go vet ./...`).",
                    target.display(&context.roots)
                ),
                raw_output: Some(json!({"source": null})),
                ..ToolOutput::default()
            });
        };
        // stderr (progress lines) is silenced: only the JSON messages on stdout are parsed.
        let line = format!("{CARGO_CHECK} 2>/dev/null");
        let result = run_shell(
            &line,
            &package_dir,
            CHECK_TIMEOUT,
            &context.cancel,
            64 * 1024 * 1024,
            super::command::Confinement::of(context),
        )
        .await?;
        match result.ending {
            ProcessEnding::Cancelled => {
                return Err(ToolError::new(
                    ToolErrorCategory::Cancelled,
                    "cargo check was cancelled",
                    false,
                ));
            }
            ProcessEnding::TimedOut => {
                return Err(ToolError::new(
                    ToolErrorCategory::Timeout,
                    format!(
                        "cargo check did not finish within {} s",
                        CHECK_TIMEOUT.as_secs()
                    ),
                    true,
                ));
            }
            ProcessEnding::Exited => {}
        }
        let diagnostics = parse_cargo_messages(&result.output, &package_dir, &context.roots);
        let errors = diagnostics.iter().filter(|d| d.rank == 0).count();
        let warnings = diagnostics.iter().filter(|d| d.rank == 1).count();
        let mut text = String::new();
        let package = display_path(&context.roots, &package_dir);
        if diagnostics.is_empty() {
            if result.exit_code == Some(0) {
                text.push_str(&format!(
                    "cargo check in {package}: no errors or warnings.\n"
                ));
            } else {
                text.push_str(&format!(
                    "cargo check in {package} failed (exit code {:?}) without compiler \
                     messages; run `cargo check` with run_command to see why.\n",
                    result.exit_code
                ));
            }
        } else {
            text.push_str(&format!(
                "cargo check in {package}: {errors} error(s), {warnings} warning(s)\n"
            ));
            for diagnostic in diagnostics.iter().take(MAX_DIAGNOSTICS) {
                text.push_str(&diagnostic.line_text());
                text.push('\n');
            }
            if diagnostics.len() > MAX_DIAGNOSTICS {
                text.push_str(&format!(
                    "[{} more not shown]\n",
                    diagnostics.len() - MAX_DIAGNOSTICS
                ));
            }
        }
        let root = target.root.clone();
        Ok(ToolOutput {
            model_text: cap_output(&text, DEFAULT_OUTPUT_CAP).text,
            display: Vec::new(),
            locations: diagnostics
                .iter()
                .filter(|d| d.rank == 0)
                .take(20)
                .map(|d| Location {
                    path: root.join(&d.path),
                    line: Some(d.line),
                })
                .collect(),
            raw_output: Some(json!({
                "source": "cargo check",
                "errors": errors,
                "warnings": warnings,
                "exit_code": result.exit_code,
            })),
        })
    }
}
