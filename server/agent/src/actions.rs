//! The editor's agent actions — "fix this diagnostic", "explain", "write a test", "document" and
//! "review": the mode each turn runs in, the prompt it sends, its progress title, and how a
//! review's answer becomes findings. A front end (the LSP code actions) translates its protocol
//! into an [`ActionRequest`] and the [`Finding`]s back; the text and rules live here.

use std::path::{Path, PathBuf};

use lode_policy::Mode;
use lode_policy::paths::{PathDoor, PathUse};

/// At most this many selected lines are quoted in a prompt.
pub const MAX_SELECTED_LINES: u32 = 200;

/// Which action.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ActionKind {
    Fix,
    Explain,
    WriteTest,
    Document,
    Review,
}

/// The diagnostic a fix is about.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ActionDiagnostic {
    /// 0-based.
    pub line: u32,
    pub message: String,
    /// What reported it (a compiler, a linter), when known.
    pub source: Option<String>,
}

/// What an action works on.
#[derive(Debug, Clone, Copy)]
pub struct ActionRequest<'a> {
    /// The file, workspace-relative.
    pub relative: &'a str,
    /// The file's text as the editor has it.
    pub text: &'a str,
    /// The selected lines, 0-based, inclusive; an end before the start covers the start line.
    pub start_line: u32,
    pub end_line: u32,
    /// The definition enclosing the selection, when there is one.
    pub symbol: Option<&'a str>,
    /// The diagnostic to fix.
    pub diagnostic: Option<&'a ActionDiagnostic>,
}

/// The turn an action runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ActionPrompt {
    pub mode: Mode,
    pub prompt: String,
    /// What the editor shows while it runs.
    pub title: String,
}

/// The mode, prompt and progress title of an action.
pub fn prompt_for(kind: ActionKind, request: &ActionRequest<'_>) -> ActionPrompt {
    let relative = request.relative;
    let start = request.start_line.saturating_add(1);
    // A range that ends before it starts (a confused client) covers its first line.
    let end = request.end_line.saturating_add(1).max(start);
    let selection: String = request
        .text
        .lines()
        .skip(request.start_line as usize)
        .take((end - start).saturating_add(1).min(MAX_SELECTED_LINES) as usize)
        .collect::<Vec<_>>()
        .join("\n");
    let about = match request.symbol {
        Some(symbol) => format!("`{symbol}` in {relative} (lines {start}-{end})"),
        None => format!("lines {start}-{end} of {relative}"),
    };
    let code = format!("```\n{selection}\n```");
    let (mode, prompt, title) = match kind {
        ActionKind::Fix => {
            let diagnostic = request
                .diagnostic
                .map(|d| {
                    format!(
                        "{}:{}: {}{}",
                        relative,
                        d.line + 1,
                        d.message,
                        d.source
                            .as_ref()
                            .map(|s| format!(" ({s})"))
                            .unwrap_or_default()
                    )
                })
                .unwrap_or_default();
            (
                Mode::Code,
                format!(
                    "Fix this diagnostic with the smallest correct edit to {relative}:\n\
                     {diagnostic}\n\nThe code around it:\n{code}\n\
                     Edit the file, then say in one sentence what you changed."
                ),
                "lode: fixing the diagnostic",
            )
        }
        ActionKind::Explain => (
            Mode::Ask,
            format!("Explain what {about} does, briefly:\n{code}"),
            "lode: explaining",
        ),
        ActionKind::WriteTest => (
            Mode::Code,
            format!(
                "Write a unit test for {about}, following the tests already in the project, \
                 and add it to the right file:\n{code}"
            ),
            "lode: writing a test",
        ),
        ActionKind::Document => (
            Mode::Code,
            format!(
                "Add or improve the documentation comment of {about}, in the language's doc \
                 comment style. Change nothing else:\n{code}"
            ),
            "lode: documenting",
        ),
        ActionKind::Review => (
            Mode::Ask,
            format!(
                "Review {relative} for bugs, risky code and unclear names. Report each finding \
                 on its own line in exactly this format and nothing else:\n\
                 `{relative}:LINE: SEVERITY: MESSAGE`\n\
                 where SEVERITY is error, warning, info or hint. If there is nothing to \
                 report, answer `no findings`."
            ),
            "lode: reviewing",
        ),
    };
    ActionPrompt {
        mode,
        prompt,
        title: title.to_owned(),
    }
}

/// How serious a review finding is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FindingSeverity {
    Error,
    Warning,
    Information,
    Hint,
}

/// One review finding.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Finding {
    /// Absolute.
    pub path: PathBuf,
    /// 1-based.
    pub line: u32,
    pub severity: FindingSeverity,
    pub message: String,
}

/// Parses `path:line: severity: message` lines (optionally in backticks or as list items);
/// anything else is ignored. Paths are relative to `root`; an absolute one, one with `..`, and
/// one the path door refuses (through a link out of the workspace) are dropped.
pub fn parse_findings(text: &str, root: &Path) -> Vec<Finding> {
    let door = PathDoor::new(vec![root.to_path_buf()]);
    let mut findings = Vec::new();
    for raw in text.lines() {
        let line = raw
            .trim()
            .trim_start_matches(['-', '*', ' '])
            .trim_matches('`')
            .trim();
        let mut parts = line.splitn(4, ':');
        let (Some(path), Some(number), Some(severity), Some(message)) =
            (parts.next(), parts.next(), parts.next(), parts.next())
        else {
            continue;
        };
        let Ok(number) = number.trim().parse::<u32>() else {
            continue;
        };
        let severity = match severity.trim().to_ascii_lowercase().as_str() {
            "error" => FindingSeverity::Error,
            "warning" => FindingSeverity::Warning,
            "info" | "information" => FindingSeverity::Information,
            "hint" => FindingSeverity::Hint,
            _ => continue,
        };
        let message = message.trim();
        let given = path.trim();
        let path = Path::new(given);
        if message.is_empty()
            || number == 0
            || path.is_absolute()
            || path
                .components()
                .any(|c| matches!(c, std::path::Component::ParentDir))
            || door.resolve(given, PathUse::Any).is_err()
        {
            continue;
        }
        findings.push(Finding {
            path: root.join(path),
            line: number,
            severity,
            message: message.to_owned(),
        });
    }
    findings
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn findings_are_parsed_from_strict_lines_only() {
        let root = Path::new("/w");
        let text = "src/a.rs:3: error: boom\n\
                    - `src/b.rs:7: Warning: careful`\n\
                    src/a.rs:x: error: no line number\n\
                    src/a.rs:0: error: line zero\n\
                    src/a.rs:4: fatal: unknown severity\n\
                    src/a.rs:5: error:   \n\
                    ../escape.rs:1: error: outside\n\
                    /etc/passwd:1: error: absolute\n\
                    src/c.rs:9: info: colons: in: the message\n\
                    no findings";
        let findings = parse_findings(text, root);
        let summary: Vec<(String, u32, FindingSeverity, &str)> = findings
            .iter()
            .map(|f| {
                (
                    f.path.display().to_string(),
                    f.line,
                    f.severity,
                    f.message.as_str(),
                )
            })
            .collect();
        assert_eq!(
            summary,
            vec![
                ("/w/src/a.rs".into(), 3, FindingSeverity::Error, "boom"),
                ("/w/src/b.rs".into(), 7, FindingSeverity::Warning, "careful"),
                (
                    "/w/src/c.rs".into(),
                    9,
                    FindingSeverity::Information,
                    "colons: in: the message"
                ),
            ]
        );
    }

    #[test]
    fn findings_through_a_link_out_of_the_workspace_are_dropped() {
        let dir = tempfile::tempdir().unwrap();
        let base = std::fs::canonicalize(dir.path()).unwrap();
        let root = base.join("repo");
        std::fs::create_dir_all(root.join("src")).unwrap();
        std::fs::create_dir_all(base.join("outside")).unwrap();
        std::fs::write(base.join("outside/secret.rs"), "x").unwrap();
        std::os::unix::fs::symlink(base.join("outside"), root.join("out")).unwrap();
        std::os::unix::fs::symlink(base.join("outside/secret.rs"), root.join("src/link.rs"))
            .unwrap();
        let text = "src/a.rs:1: hint: kept\n\
                    out/secret.rs:1: error: through a linked directory\n\
                    src/link.rs:1: error: a linked file\n\
                    out/new.rs:1: error: a new file under a linked directory";
        let findings = parse_findings(text, &root);
        assert_eq!(findings.len(), 1, "{findings:?}");
        assert_eq!(findings[0].path, root.join("src/a.rs"));
        assert_eq!(findings[0].severity, FindingSeverity::Hint);
    }

    #[test]
    fn a_backwards_or_huge_range_quotes_a_bounded_selection() {
        let text: String = (1..=500).map(|n| format!("line {n}\n")).collect();
        let backwards = ActionRequest {
            relative: "a.rs",
            text: &text,
            start_line: 9,
            end_line: 2,
            symbol: None,
            diagnostic: None,
        };
        let action = prompt_for(ActionKind::Explain, &backwards);
        assert_eq!(action.mode, Mode::Ask);
        let prompt = action.prompt;
        assert!(prompt.contains("lines 10-10 of a.rs") && prompt.contains("line 10\n"));
        assert!(!prompt.contains("line 11"), "{prompt}");
        let huge = ActionRequest {
            start_line: 0,
            end_line: u32::MAX,
            ..backwards
        };
        let prompt = prompt_for(ActionKind::Explain, &huge).prompt;
        assert!(prompt.contains("line 200\n") && !prompt.contains("line 201"));
    }

    #[test]
    fn each_action_has_its_mode_and_asks_for_what_it_does() {
        let diagnostic = ActionDiagnostic {
            line: 1,
            message: "mismatched types".into(),
            source: Some("rustc".into()),
        };
        let request = ActionRequest {
            relative: "src/lib.rs",
            text: "fn a() {}\nfn b() -> u32 { \"x\" }\n",
            start_line: 1,
            end_line: 1,
            symbol: Some("b"),
            diagnostic: Some(&diagnostic),
        };
        let fix = prompt_for(ActionKind::Fix, &request);
        assert_eq!(fix.mode, Mode::Code);
        assert!(
            fix.prompt
                .contains("src/lib.rs:2: mismatched types (rustc)"),
            "{}",
            fix.prompt
        );
        assert_eq!(fix.title, "lode: fixing the diagnostic");
        let test = prompt_for(ActionKind::WriteTest, &request);
        assert_eq!(test.mode, Mode::Code);
        assert!(test.prompt.contains("`b` in src/lib.rs (lines 2-2)"));
        assert_eq!(prompt_for(ActionKind::Document, &request).mode, Mode::Code);
        let review = prompt_for(ActionKind::Review, &request);
        assert_eq!(review.mode, Mode::Ask);
        assert!(
            review
                .prompt
                .contains("`src/lib.rs:LINE: SEVERITY: MESSAGE`")
        );
    }
}
