//! `grep`: a regular-expression search over the workspace's files (honouring .gitignore), for
//! exact text the index's ranked search is not meant for: string literals, log messages, TODOs.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};

use serde::Deserialize;
use serde_json::json;
use tokio_util::sync::CancellationToken;

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
        let search = checked_search(&args, context)?;
        let limit = search.limit;
        let roots = context.roots.clone();
        let cancel = context.cancel.clone();
        let (hits, more) = blocking(move || Ok(search.run(&roots, &cancel))).await?;
        Ok(output(&args.pattern, limit, &hits, more))
    }
}

/// One matching line.
struct Hit {
    path: PathBuf,
    /// The path as the model is shown it.
    shown: String,
    line: u32,
    /// The line, cut at [`MAX_LINE_CHARS`].
    text: String,
}

/// A search, its arguments checked, to run on the blocking pool.
struct Search<F> {
    regex: regex::Regex,
    /// The file or directory searched.
    base: PathBuf,
    /// Whether a file (by its path relative to `base`) is searched: the glob's filter.
    wanted: F,
    limit: usize,
}

/// The search `args` ask for: a valid regular expression and glob, a path in the workspace.
fn checked_search(
    args: &GrepArgs,
    context: &ToolContext,
) -> Result<Search<impl Fn(&str) -> bool + Send + 'static>, ToolError> {
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
    let wanted = move |relative_to_base: &str| match &matcher {
        None => true,
        Some(matcher) => relative_to_base.is_empty() || matcher.is_match(relative_to_base),
    };
    Ok(Search {
        regex,
        base: base.absolute,
        wanted,
        limit: args.limit.unwrap_or(DEFAULT_MATCHES).clamp(1, 1000),
    })
}

impl<F: Fn(&str) -> bool> Search<F> {
    /// The matching lines in path order, at most `limit`, and whether there were more.
    fn run(&self, roots: &[PathBuf], cancel: &CancellationToken) -> (Vec<Hit>, bool) {
        let mut hits = Vec::new();
        for entry in walk(&self.base).flatten() {
            if cancel.is_cancelled() {
                break;
            }
            if !self.searches(&entry) {
                continue;
            }
            let Ok(file) = std::fs::File::open(entry.path()) else {
                continue;
            };
            let shown = display_path(roots, entry.path());
            if self.search_file(file, entry.path(), &shown, &mut hits) {
                return (hits, true);
            }
        }
        (hits, false)
    }

    /// Whether `entry` is a file to search: not too large, and wanted by the glob.
    fn searches(&self, entry: &ignore::DirEntry) -> bool {
        if !entry.file_type().is_some_and(|t| t.is_file()) {
            return false;
        }
        if entry.metadata().is_ok_and(|m| m.len() > MAX_FILE_BYTES) {
            return false;
        }
        let relative_to_base = entry
            .path()
            .strip_prefix(&self.base)
            .map(|p| p.to_string_lossy().replace('\\', "/"))
            .unwrap_or_default();
        (self.wanted)(&relative_to_base)
    }

    /// Adds the file's matching lines to `hits`, up to the limit; true when a match was found
    /// past it. A file stops at its first NUL byte (binary).
    fn search_file(
        &self,
        file: std::fs::File,
        path: &Path,
        shown: &str,
        hits: &mut Vec<Hit>,
    ) -> bool {
        let mut reader = BufReader::new(file);
        let mut bytes = Vec::new();
        let mut line_number = 0u32;
        loop {
            bytes.clear();
            match reader.read_until(b'\n', &mut bytes) {
                Ok(0) | Err(_) => return false,
                Ok(_) => {}
            }
            line_number += 1;
            if bytes.contains(&0) {
                return false; // binary
            }
            let line = String::from_utf8_lossy(&bytes);
            let line = line.trim_end_matches(['\n', '\r']);
            if self.regex.is_match(line) {
                if hits.len() == self.limit {
                    return true;
                }
                hits.push(Hit {
                    path: path.to_path_buf(),
                    shown: shown.to_owned(),
                    line: line_number,
                    text: line.chars().take(MAX_LINE_CHARS).collect(),
                });
            }
        }
    }
}

/// The files under `base` in path order, honouring .gitignore, without .git and .lode.
fn walk(base: &Path) -> ignore::Walk {
    ignore::WalkBuilder::new(base)
        .hidden(false)
        .require_git(false)
        .follow_links(false)
        .filter_entry(|entry| {
            let name = entry.file_name();
            !(entry.file_type().is_some_and(|t| t.is_dir()) && (name == ".git" || name == ".lode"))
        })
        .sort_by_file_path(|a, b| a.cmp(b))
        .build()
}

/// `path:line: text` a hit, or why there are none, and whether the limit stopped the search.
fn output(pattern: &str, limit: usize, hits: &[Hit], more: bool) -> ToolOutput {
    let mut text = String::new();
    for hit in hits {
        text.push_str(&format!("{}:{}: {}\n", hit.shown, hit.line, hit.text));
    }
    if hits.is_empty() {
        text = format!("No line matches `{pattern}`.");
    } else if more {
        text.push_str(&format!(
            "[stopped at {limit} matching lines; narrow the pattern or path, or raise limit]\n"
        ));
    }
    ToolOutput {
        model_text: cap_output(&text, DEFAULT_OUTPUT_CAP).text,
        locations: hits
            .iter()
            .take(50)
            .map(|hit| Location {
                path: hit.path.clone(),
                line: Some(hit.line),
            })
            .collect(),
        raw_output: Some(json!({"matches": hits.len(), "more": more})),
        ..ToolOutput::default()
    }
}
