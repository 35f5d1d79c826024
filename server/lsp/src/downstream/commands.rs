//! Checkers run as commands when no language server is available: `cargo check
//! --message-format=json`, `pyright --outputjson`, `tsc --noEmit --pretty false`. Each runs
//! in the project directory of the files asked about and reports those files' diagnostics.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use serde_json::Value;

use super::{Confinement, Diagnostic, DiagnosticsError, Severity, sort_diagnostics};

/// The longest a checker command may run.
const COMMAND_TIMEOUT: Duration = Duration::from_secs(600);

/// Diagnostics per canonical path.
pub type ByFile = HashMap<PathBuf, Vec<Diagnostic>>;

/// The nearest ancestor of `start` (inclusive) holding `marker`, not above `root`.
pub fn project_dir(start: &Path, root: &Path, marker: &str) -> Option<PathBuf> {
    let mut dir = if start.is_dir() {
        start
    } else {
        start.parent()?
    };
    loop {
        if dir.join(marker).is_file() {
            return Some(dir.to_path_buf());
        }
        if dir == root {
            return None;
        }
        dir = dir.parent()?;
    }
}

async fn run(
    program: &str,
    args: &[&str],
    dir: &Path,
    confinement: Confinement<'_>,
) -> Result<(String, String), DiagnosticsError> {
    let command = std::iter::once(program)
        .chain(args.iter().copied())
        .collect::<Vec<_>>()
        .join(" ");
    let child = confinement
        .command(program, args)
        .current_dir(dir)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .map_err(|source| DiagnosticsError::Spawn {
            command: command.clone(),
            source,
        })?;
    let output = tokio::time::timeout(COMMAND_TIMEOUT, child.wait_with_output())
        .await
        .map_err(|_| DiagnosticsError::Command {
            command: command.clone(),
            message: format!("still running after {}s", COMMAND_TIMEOUT.as_secs()),
        })?
        .map_err(|source| DiagnosticsError::Spawn {
            command: command.clone(),
            source,
        })?;
    Ok((
        String::from_utf8_lossy(&output.stdout).into_owned(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    ))
}

/// `cargo check --message-format=json` in the crate (or workspace) containing the files.
/// It runs the crate's build scripts and proc macros: without the sandbox it is refused.
pub async fn cargo_check(
    crate_dir: &Path,
    confinement: Confinement<'_>,
) -> Result<ByFile, DiagnosticsError> {
    if let Some(reason) = super::refuse_unconfined(confinement.sandbox, "cargo check") {
        return Err(DiagnosticsError::Command {
            command: "cargo check".into(),
            message: reason,
        });
    }
    let (stdout, stderr) = run(
        "cargo",
        &["check", "--message-format=json", "--quiet", "--all-targets"],
        crate_dir,
        confinement,
    )
    .await?;
    let found = parse_cargo_messages(&stdout, crate_dir);
    if found.is_empty() && stdout.trim().is_empty() && !stderr.trim().is_empty() {
        // Cargo itself failed (a broken manifest): say why rather than "no diagnostics".
        return Err(DiagnosticsError::Command {
            command: "cargo check".into(),
            message: stderr.lines().take(5).collect::<Vec<_>>().join(" "),
        });
    }
    Ok(found)
}

/// Compiler messages of `cargo check --message-format=json` output, by file. Span paths are
/// relative to the directory cargo ran rustc in (the workspace root); they are resolved
/// against `crate_dir` and its ancestors.
pub fn parse_cargo_messages(stdout: &str, crate_dir: &Path) -> ByFile {
    let mut found: ByFile = HashMap::new();
    for line in stdout.lines() {
        let Ok(value) = serde_json::from_str::<Value>(line) else {
            continue;
        };
        if value.get("reason").and_then(Value::as_str) != Some("compiler-message") {
            continue;
        }
        let Some(message) = value.get("message") else {
            continue;
        };
        let severity = match message.get("level").and_then(Value::as_str) {
            Some(level) if level.starts_with("error") => Severity::Error,
            Some("warning") => Severity::Warning,
            Some("note") | Some("help") => Severity::Information,
            _ => continue,
        };
        let text = message
            .get("message")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string();
        let code = message
            .get("code")
            .and_then(|c| c.get("code"))
            .and_then(Value::as_str)
            .map(str::to_string);
        let spans = message
            .get("spans")
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default();
        for span in spans
            .iter()
            .filter(|s| s.get("is_primary").and_then(Value::as_bool) == Some(true))
        {
            let Some(file) = span.get("file_name").and_then(Value::as_str) else {
                continue;
            };
            let Some(path) = resolve_from(crate_dir, file) else {
                continue;
            };
            let number = |key: &str| span.get(key).and_then(Value::as_u64).unwrap_or(1) as u32;
            let diagnostic = Diagnostic {
                severity,
                line: number("line_start"),
                column: number("column_start"),
                end_line: number("line_end"),
                end_column: number("column_end"),
                message: text.clone(),
                code: code.clone(),
                source: Some("rustc".into()),
            };
            // The library and its test build report the same error once each.
            let file = found.entry(path).or_default();
            if !file.contains(&diagnostic) {
                file.push(diagnostic);
            }
        }
    }
    for diagnostics in found.values_mut() {
        sort_diagnostics(diagnostics);
    }
    found
}

fn resolve_from(dir: &Path, file: &str) -> Option<PathBuf> {
    let file = Path::new(file);
    if file.is_absolute() {
        return std::fs::canonicalize(file).ok();
    }
    dir.ancestors()
        .map(|ancestor| ancestor.join(file))
        .find(|candidate| candidate.is_file())
        .and_then(|found| std::fs::canonicalize(found).ok())
}

/// `pyright --outputjson FILES` in `dir`.
pub async fn pyright(
    program: &str,
    dir: &Path,
    files: &[PathBuf],
    confinement: Confinement<'_>,
) -> Result<ByFile, DiagnosticsError> {
    let names: Vec<String> = files
        .iter()
        .map(|f| f.to_string_lossy().into_owned())
        .collect();
    let mut args = vec!["--outputjson"];
    args.extend(names.iter().map(String::as_str));
    let (stdout, stderr) = run(program, &args, dir, confinement).await?;
    parse_pyright_json(&stdout).ok_or_else(|| DiagnosticsError::Command {
        command: format!("{program} --outputjson"),
        message: format!("unreadable output: {}", stderr.lines().next().unwrap_or("")),
    })
}

/// The diagnostics of `pyright --outputjson` output; `None` when it is not that JSON.
pub fn parse_pyright_json(stdout: &str) -> Option<ByFile> {
    let value: Value = serde_json::from_str(stdout).ok()?;
    let mut found: ByFile = HashMap::new();
    for item in value.get("generalDiagnostics")?.as_array()? {
        let Some(file) = item.get("file").and_then(Value::as_str) else {
            continue;
        };
        let severity = match item.get("severity").and_then(Value::as_str) {
            Some("error") => Severity::Error,
            Some("warning") => Severity::Warning,
            _ => Severity::Information,
        };
        let position = |end: &str, key: &str| {
            item.pointer(&format!("/range/{end}/{key}"))
                .and_then(Value::as_u64)
                .unwrap_or(0) as u32
                + 1
        };
        let path = std::fs::canonicalize(file).unwrap_or_else(|_| PathBuf::from(file));
        found.entry(path).or_default().push(Diagnostic {
            severity,
            line: position("start", "line"),
            column: position("start", "character"),
            end_line: position("end", "line"),
            end_column: position("end", "character"),
            message: item
                .get("message")
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_string(),
            code: item.get("rule").and_then(Value::as_str).map(str::to_string),
            source: Some("Pyright".into()),
        });
    }
    for diagnostics in found.values_mut() {
        sort_diagnostics(diagnostics);
    }
    Some(found)
}

/// `tsc --noEmit --pretty false` in the project directory (with its tsconfig.json), or on
/// the files themselves when there is none.
pub async fn tsc(
    program: &str,
    dir: &Path,
    files: &[PathBuf],
    has_config: bool,
    confinement: Confinement<'_>,
) -> Result<ByFile, DiagnosticsError> {
    let names: Vec<String> = files
        .iter()
        .map(|f| f.to_string_lossy().into_owned())
        .collect();
    let mut args = vec!["--noEmit", "--pretty", "false"];
    if !has_config {
        args.extend(names.iter().map(String::as_str));
    }
    let (stdout, _) = run(program, &args, dir, confinement).await?;
    Ok(parse_tsc_output(&stdout, dir))
}

/// Diagnostics from `tsc --pretty false` lines: `file(line,col): error TS2322: message`.
pub fn parse_tsc_output(stdout: &str, dir: &Path) -> ByFile {
    let mut found: ByFile = HashMap::new();
    let Ok(pattern) =
        regex::Regex::new(r"^(.+?)\((\d+),(\d+)\): (error|warning|message) (TS\d+): (.*)$")
    else {
        return found;
    };
    for line in stdout.lines() {
        let Some(captures) = pattern.captures(line) else {
            continue;
        };
        let file = dir.join(&captures[1]);
        let path = std::fs::canonicalize(&file).unwrap_or(file);
        let line_number: u32 = captures[2].parse().unwrap_or(1);
        let column: u32 = captures[3].parse().unwrap_or(1);
        found.entry(path).or_default().push(Diagnostic {
            severity: match &captures[4] {
                "error" => Severity::Error,
                "warning" => Severity::Warning,
                _ => Severity::Information,
            },
            line: line_number,
            column,
            end_line: line_number,
            end_column: column,
            message: captures[6].to_string(),
            code: Some(captures[5].to_string()),
            source: Some("ts".into()),
        });
    }
    for diagnostics in found.values_mut() {
        sort_diagnostics(diagnostics);
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tsc_lines_become_diagnostics() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("a.ts"), "let x: number = 'a';\n").unwrap();
        let out = "a.ts(1,5): error TS2322: Type 'string' is not assignable to type 'number'.\nFound 1 error.\n";
        let found = parse_tsc_output(out, dir.path());
        let path = std::fs::canonicalize(dir.path().join("a.ts")).unwrap();
        let diagnostics = &found[&path];
        assert_eq!(diagnostics.len(), 1);
        assert_eq!(diagnostics[0].code.as_deref(), Some("TS2322"));
        assert_eq!((diagnostics[0].line, diagnostics[0].column), (1, 5));
        assert_eq!(diagnostics[0].severity, Severity::Error);
    }

    #[test]
    fn pyright_json_becomes_diagnostics() {
        let out = r#"{"generalDiagnostics":[{"file":"/nowhere/m.py","severity":"error","message":"bad","range":{"start":{"line":2,"character":4},"end":{"line":2,"character":9}},"rule":"reportGeneralTypeIssues"}]}"#;
        let found = parse_pyright_json(out).unwrap();
        let diagnostics = &found[Path::new("/nowhere/m.py")];
        assert_eq!(
            (
                diagnostics[0].line,
                diagnostics[0].column,
                diagnostics[0].end_column
            ),
            (3, 5, 10)
        );
        assert_eq!(
            diagnostics[0].code.as_deref(),
            Some("reportGeneralTypeIssues")
        );
        assert!(parse_pyright_json("not json").is_none());
    }
}
