//! Reading tools: `read_file` (numbered lines, paged) and `list_files` (glob over the workspace,
//! honouring .gitignore).

use serde::Deserialize;
use serde_json::json;

use super::args::{blocking, invalid, parse_args, peek_str};
use super::files::read_text;
use super::output::DEFAULT_OUTPUT_CAP;
use super::paths::{display_path, resolve_path};
use super::{
    PermissionTarget, Tool, ToolContext, ToolError, ToolErrorCategory, ToolOutput, ToolPresentation,
};
use crate::event::{Location, ToolKind};
use lode_llm::ToolSpec;

/// Lines `read_file` returns when no limit is given.
pub const DEFAULT_READ_LINES: usize = 2000;
/// Longest line shown whole; longer ones are cut with a marker.
const MAX_LINE_CHARS: usize = 2000;

#[derive(Deserialize)]
struct ReadArgs {
    path: String,
    #[serde(default)]
    offset: Option<usize>,
    #[serde(default)]
    limit: Option<usize>,
}

/// `read_file`: a file's lines, numbered, from `offset` for `limit` lines.
pub struct ReadFileTool;

#[async_trait::async_trait]
impl Tool for ReadFileTool {
    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: "read_file".into(),
            description: "Read a text file from the workspace. Returns numbered lines \
                (`  12\\tcode`); the numbers are not part of the file. Reads up to 2000 lines \
                from `offset` (1-based line, default 1); when the file is longer the result \
                says which offset to read next. Sees unsaved editor changes. Read a file \
                before editing it."
                .into(),
            parameters: json!({
                "type": "object",
                "properties": {
                    "path": {"type": "string", "description": "File path relative to the workspace root (or absolute inside it)."},
                    "offset": {"type": "integer", "minimum": 1, "description": "1-based line to start at. Default 1."},
                    "limit": {"type": "integer", "minimum": 1, "description": "Number of lines to read. Default 2000."}
                },
                "required": ["path"],
                "additionalProperties": false
            }),
        }
    }

    fn kind(&self) -> ToolKind {
        ToolKind::Read
    }

    fn read_only(&self) -> bool {
        true
    }

    fn present(&self, arguments: &serde_json::Value, context: &ToolContext) -> ToolPresentation {
        let path = peek_str(arguments, "path").unwrap_or("a file");
        let line = arguments
            .get("offset")
            .and_then(serde_json::Value::as_u64)
            .map(|line| line as u32);
        ToolPresentation {
            title: format!("Read {path}"),
            locations: resolve_path(&context.roots, path)
                .map(|resolved| {
                    vec![Location {
                        path: resolved.absolute,
                        line,
                    }]
                })
                .unwrap_or_default(),
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
        let args: ReadArgs = parse_args("read_file", &arguments)?;
        let resolved = resolve_path(&context.roots, &args.path)?;
        let shown = resolved.display(&context.roots);
        let Some(text) = read_text(context, &resolved.absolute).await? else {
            return Err(ToolError::new(
                ToolErrorCategory::NotFound,
                format!("{shown} does not exist; use list_files or search_code to find the file"),
                true,
            ));
        };
        let offset = args.offset.unwrap_or(1).max(1);
        let limit = args.limit.unwrap_or(DEFAULT_READ_LINES).max(1);
        let lines: Vec<&str> = text.lines().collect();
        let total = lines.len();
        if total == 0 {
            return Ok(ToolOutput {
                model_text: format!("{shown} is empty."),
                locations: vec![Location {
                    path: resolved.absolute,
                    line: None,
                }],
                raw_output: Some(json!({"path": shown, "total_lines": 0})),
                ..ToolOutput::default()
            });
        }
        if offset > total {
            return Err(invalid(format!(
                "offset {offset} is past the end of {shown}, which has {total} lines"
            )));
        }
        let mut out = String::new();
        let mut last = offset - 1;
        for (index, line) in lines.iter().enumerate().skip(offset - 1).take(limit) {
            let line = if line.chars().count() > MAX_LINE_CHARS {
                let cut: String = line.chars().take(MAX_LINE_CHARS).collect();
                format!("{cut}… [line cut at {MAX_LINE_CHARS} characters]")
            } else {
                (*line).to_owned()
            };
            let numbered = format!("{:>6}\t{line}\n", index + 1);
            if out.len() + numbered.len() > DEFAULT_OUTPUT_CAP && index + 1 > offset {
                break;
            }
            out.push_str(&numbered);
            last = index + 1;
        }
        if last < total {
            out.push_str(&format!(
                "[showing lines {offset}-{last} of {total}; read on with offset={}]\n",
                last + 1
            ));
        }
        Ok(ToolOutput {
            model_text: out,
            display: Vec::new(),
            locations: vec![Location {
                path: resolved.absolute,
                line: Some(offset as u32),
            }],
            raw_output: Some(json!({
                "path": shown,
                "start_line": offset,
                "end_line": last,
                "total_lines": total,
            })),
        })
    }
}

#[derive(Deserialize)]
struct ListArgs {
    #[serde(default)]
    pattern: Option<String>,
    #[serde(default)]
    path: Option<String>,
    #[serde(default)]
    limit: Option<usize>,
}

/// Files listed when no limit is given.
pub const DEFAULT_LIST_LIMIT: usize = 500;

/// `list_files`: files under a directory matching a glob, honouring .gitignore.
pub struct ListFilesTool;

#[async_trait::async_trait]
impl Tool for ListFilesTool {
    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: "list_files".into(),
            description: "List files in the workspace whose path matches a glob, skipping \
                files ignored by .gitignore. A pattern without `/` matches file names at any \
                depth (`*.rs`); one with `/` matches paths relative to `path` (`src/**/*.ts`). \
                Returns workspace-relative paths, sorted, at most `limit` (default 500)."
                .into(),
            parameters: json!({
                "type": "object",
                "properties": {
                    "pattern": {"type": "string", "description": "Glob, e.g. `*.py` or `src/**/mod.rs`. Default: every file."},
                    "path": {"type": "string", "description": "Directory to list, relative to the workspace root. Default: the root."},
                    "limit": {"type": "integer", "minimum": 1, "maximum": 5000, "description": "Most paths to return. Default 500."}
                },
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
        let pattern = peek_str(arguments, "pattern").unwrap_or("*");
        let title = match peek_str(arguments, "path") {
            Some(dir) => format!("List {pattern} in {dir}"),
            None => format!("List {pattern}"),
        };
        ToolPresentation {
            title,
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
        let args: ListArgs = parse_args("list_files", &arguments)?;
        let dir = resolve_path(&context.roots, args.path.as_deref().unwrap_or("."))?;
        if !dir.absolute.is_dir() {
            return Err(ToolError::new(
                ToolErrorCategory::NotFound,
                format!("{} is not a directory", dir.display(&context.roots)),
                true,
            ));
        }
        let matcher = match args.pattern.as_deref().map(str::trim) {
            None | Some("") | Some("*") | Some("**") | Some("**/*") => None,
            Some(pattern) => Some(
                lode_index::path_matcher(pattern)
                    .map_err(|error| invalid(format!("invalid glob `{pattern}`: {error}")))?,
            ),
        };
        let limit = args.limit.unwrap_or(DEFAULT_LIST_LIMIT).clamp(1, 5000);
        let roots = context.roots.clone();
        let base = dir.absolute.clone();
        let (paths, total) = blocking(move || {
            let mut found = Vec::new();
            let walker = ignore::WalkBuilder::new(&base)
                .hidden(false)
                .require_git(false)
                .follow_links(false)
                .filter_entry(|entry| {
                    let name = entry.file_name();
                    !(entry.file_type().is_some_and(|t| t.is_dir())
                        && (name == ".git" || name == ".lode"))
                })
                .build();
            let mut total = 0usize;
            for entry in walker.flatten() {
                if !entry
                    .file_type()
                    .is_some_and(|t| t.is_file() || t.is_symlink())
                {
                    continue;
                }
                let Ok(relative) = entry.path().strip_prefix(&base) else {
                    continue;
                };
                let relative = relative.to_string_lossy().replace('\\', "/");
                if matcher.as_ref().is_some_and(|m| !m.is_match(&relative)) {
                    continue;
                }
                total += 1;
                found.push(display_path(&roots, entry.path()));
            }
            found.sort();
            found.truncate(limit);
            Ok((found, total))
        })
        .await?;
        let mut text = paths.join("\n");
        if paths.is_empty() {
            text = "No files match.".to_owned();
        } else if total > paths.len() {
            text.push_str(&format!(
                "\n[{} of {total} files shown; narrow the pattern or raise limit]",
                paths.len()
            ));
        }
        Ok(ToolOutput {
            model_text: text,
            raw_output: Some(json!({"count": total, "shown": paths.len()})),
            ..ToolOutput::default()
        })
    }
}
