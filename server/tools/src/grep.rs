//! `grep`: a regular-expression search over the workspace's files (honouring .gitignore), for
//! exact text the index's ranked search is not meant for: string literals, log messages, TODOs.

use std::io::{BufRead, BufReader};

use serde::Deserialize;
use serde_json::json;

use super::args::{blocking, invalid, parse_args, peek_str};
use super::output::{DEFAULT_OUTPUT_CAP, cap_output};
use super::paths::{display_path, resolve_path};
use super::{PermissionTarget, Tool, ToolContext, ToolError, ToolOutput, ToolPresentation};
use crate::event::{Location, ToolKind};
use lode_llm::ToolSpec;

/// Matching lines returned when no limit is given.
const DEFAULT_MATCHES: usize = 100;
/// Longest line shown; longer ones are cut around nothing fancy, just at the start.
const MAX_LINE_CHARS: usize = 300;
/// Files larger than this are skipped (generated or data files).
const MAX_FILE_BYTES: u64 = 4 * 1024 * 1024;

#[derive(Deserialize)]
struct GrepArgs {
    pattern: String,
    #[serde(default)]
    path: Option<String>,
    #[serde(default)]
    glob: Option<String>,
    #[serde(default)]
    case_insensitive: bool,
    #[serde(default)]
    limit: Option<usize>,
}

/// `grep`.
pub struct GrepTool;

#[async_trait::async_trait]
impl Tool for GrepTool {
    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: "grep".into(),
            description: "Search file contents with a regular expression (Rust regex syntax), \
                skipping files ignored by .gitignore and binary files. Returns \
                `path:line: text` for each matching line, at most `limit` (default 100). Use \
                it for exact strings (messages, literals, TODOs); use search_code to find code \
                by meaning and find_symbol for definitions."
                .into(),
            parameters: json!({
                "type": "object",
                "properties": {
                    "pattern": {"type": "string", "description": "Regular expression, e.g. `fn\\s+open_` or `TODO`."},
                    "path": {"type": "string", "description": "File or directory to search, relative to the workspace root. Default: the root."},
                    "glob": {"type": "string", "description": "Only files matching this glob, e.g. `*.rs` or `src/**/*.py`."},
                    "case_insensitive": {"type": "boolean", "description": "Ignore case. Default false."},
                    "limit": {"type": "integer", "minimum": 1, "maximum": 1000, "description": "Most matching lines. Default 100."}
                },
                "required": ["pattern"],
                "additionalProperties": false
            }),
        }
    }

    fn kind(&self) -> ToolKind {
        ToolKind::Search
    }

    fn read_only(&self) -> bool {
        true
    }

    fn present(&self, arguments: &serde_json::Value, _context: &ToolContext) -> ToolPresentation {
        ToolPresentation {
            title: format!("Grep `{}`", peek_str(arguments, "pattern").unwrap_or("")),
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
        let args: GrepArgs = parse_args("grep", &arguments)?;
        if args.pattern.is_empty() {
            return Err(invalid("grep: the pattern is empty"));
        }
        let regex = regex::RegexBuilder::new(&args.pattern)
            .case_insensitive(args.case_insensitive)
            .size_limit(1 << 20)
            .build()
            .map_err(|error| invalid(format!("invalid regular expression: {error}")))?;
        let base = resolve_path(&context.roots, args.path.as_deref().unwrap_or("."))?;
        let matcher = match args.glob.as_deref().map(str::trim) {
            None | Some("") => None,
            Some(glob) => Some(
                lode_index::path_matcher(glob)
                    .map_err(|error| invalid(format!("invalid glob `{glob}`: {error}")))?,
            ),
        };
        let limit = args.limit.unwrap_or(DEFAULT_MATCHES).clamp(1, 1000);
        let roots = context.roots.clone();
        let cancel = context.cancel.clone();
        let base_path = base.absolute.clone();
        let (hits, more) = blocking(move || {
            let mut hits: Vec<(std::path::PathBuf, String, u32, String)> = Vec::new();
            let walker = ignore::WalkBuilder::new(&base_path)
                .hidden(false)
                .require_git(false)
                .follow_links(false)
                .filter_entry(|entry| {
                    let name = entry.file_name();
                    !(entry.file_type().is_some_and(|t| t.is_dir())
                        && (name == ".git" || name == ".lode"))
                })
                .sort_by_file_path(|a, b| a.cmp(b))
                .build();
            for entry in walker.flatten() {
                if cancel.is_cancelled() {
                    break;
                }
                if !entry.file_type().is_some_and(|t| t.is_file()) {
                    continue;
                }
                if entry.metadata().is_ok_and(|m| m.len() > MAX_FILE_BYTES) {
                    continue;
                }
                let relative_to_base = entry
                    .path()
                    .strip_prefix(&base_path)
                    .map(|p| p.to_string_lossy().replace('\\', "/"))
                    .unwrap_or_default();
                if let Some(matcher) = &matcher
                    && !relative_to_base.is_empty()
                    && !matcher.is_match(&relative_to_base)
                {
                    continue;
                }
                let Ok(file) = std::fs::File::open(entry.path()) else {
                    continue;
                };
                let shown = display_path(&roots, entry.path());
                let mut reader = BufReader::new(file);
                let mut bytes = Vec::new();
                let mut line_number = 0u32;
                loop {
                    bytes.clear();
                    match reader.read_until(b'\n', &mut bytes) {
                        Ok(0) | Err(_) => break,
                        Ok(_) => {}
                    }
                    line_number += 1;
                    if bytes.contains(&0) {
                        break; // binary
                    }
                    let line = String::from_utf8_lossy(&bytes);
                    let line = line.trim_end_matches(['\n', '\r']);
                    if regex.is_match(line) {
                        if hits.len() == limit {
                            return Ok((hits, true));
                        }
                        let text: String = line.chars().take(MAX_LINE_CHARS).collect();
                        hits.push((entry.path().to_path_buf(), shown.clone(), line_number, text));
                    }
                }
            }
            Ok((hits, false))
        })
        .await?;
        let mut text = String::new();
        for (_, shown, line, content) in &hits {
            text.push_str(&format!("{shown}:{line}: {content}\n"));
        }
        if hits.is_empty() {
            text = format!("No line matches `{}`.", args.pattern);
        } else if more {
            text.push_str(&format!(
                "[stopped at {limit} matching lines; narrow the pattern or path, or raise limit]\n"
            ));
        }
        Ok(ToolOutput {
            model_text: cap_output(&text, DEFAULT_OUTPUT_CAP).text,
            locations: hits
                .iter()
                .take(50)
                .map(|(path, _, line, _)| Location {
                    path: path.clone(),
                    line: Some(*line),
                })
                .collect(),
            raw_output: Some(json!({"matches": hits.len(), "more": more})),
            ..ToolOutput::default()
        })
    }
}
