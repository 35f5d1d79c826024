//! Code-intelligence tools over the shared index: `search_code`, `repo_map`, `find_symbol`,
//! `find_references`. Index queries are blocking, so they run on the blocking pool.

use std::path::PathBuf;
use std::sync::Arc;

use serde::Deserialize;
use serde_json::json;

use super::args::{blocking, failed, invalid, parse_args, peek_str};
use super::output::{DEFAULT_OUTPUT_CAP, cap_output};
use super::paths::resolve_path;
use super::{PermissionTarget, Tool, ToolContext, ToolError, ToolOutput, ToolPresentation};
use crate::event::{Location, ToolKind};
use lode_llm::ToolSpec;

/// The one place the agent's code search calls the index: hybrid (lexical + semantic + symbol
/// names) when the workspace has vectors, lexical BM25 otherwise or when the vectors cannot
/// answer (embedder changed, not built yet).
pub fn run_code_search(
    index: &lode_index::Workspace,
    request: &lode_index::SearchRequest,
) -> Result<Vec<lode_index::SearchHit>, lode_index::IndexError> {
    if index.has_vectors() {
        match index.search_hybrid(request) {
            Err(lode_index::IndexError::NoVectors(_)) => {}
            other => return other,
        }
    }
    index.search(request)
}

fn index_error(error: lode_index::IndexError) -> ToolError {
    match error {
        lode_index::IndexError::InvalidQuery(message) => invalid(message),
        lode_index::IndexError::Glob { glob, message } => {
            invalid(format!("invalid glob `{glob}`: {message}"))
        }
        other => failed(format!("the code index failed: {other}")),
    }
}

fn location(root: &std::path::Path, path: &str, line: u32) -> Location {
    Location {
        path: root.join(path),
        line: Some(line),
    }
}

#[derive(Deserialize)]
struct SearchArgs {
    query: String,
    #[serde(default)]
    limit: Option<usize>,
    #[serde(default)]
    path_glob: Option<String>,
    #[serde(default)]
    language: Option<String>,
}

/// `search_code`: ranked code chunks for a query.
pub struct SearchCodeTool;

#[async_trait::async_trait]
impl Tool for SearchCodeTool {
    fn spec(&self) -> ToolSpec {
        let languages: Vec<&str> = lode_index::Language::ALL.iter().map(|l| l.name()).collect();
        ToolSpec {
            name: "search_code".into(),
            description: "Search the workspace's code index for a description or identifiers \
                (e.g. `open the session store`, `parse_config`). Returns the best-matching code \
                chunks with path, line range, enclosing symbol and a snippet. Use it to find \
                where something is implemented before reading files."
                .into(),
            parameters: json!({
                "type": "object",
                "properties": {
                    "query": {"type": "string", "description": "Words or identifiers to look for."},
                    "limit": {"type": "integer", "minimum": 1, "maximum": 50, "description": "Most results. Default 10."},
                    "path_glob": {"type": "string", "description": "Only paths matching this glob, e.g. `src/**/*.rs` or `*.py`."},
                    "language": {"type": "string", "enum": languages, "description": "Only files of this language."}
                },
                "required": ["query"],
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
            title: format!(
                "Search code for `{}`",
                peek_str(arguments, "query").unwrap_or("")
            ),
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
        let args: SearchArgs = parse_args("search_code", &arguments)?;
        if args.query.trim().is_empty() {
            return Err(invalid("search_code: the query is empty"));
        }
        crate::index_wait::wait_for_index(
            &context.index,
            crate::index_wait::INDEX_PATIENCE,
            &context.cancel,
        )
        .await?;
        let language = match args.language.as_deref() {
            None => None,
            Some(name) => Some(
                lode_index::Language::from_name(name)
                    .ok_or_else(|| invalid(format!("unknown language `{name}`")))?,
            ),
        };
        let mut request = lode_index::SearchRequest::new(args.query.clone());
        request.limit = args.limit.unwrap_or(10).clamp(1, 50);
        request.path_glob = args.path_glob.filter(|glob| !glob.trim().is_empty());
        request.language = language;
        let index = Arc::clone(&context.index);
        let hits = blocking(move || run_code_search(&index, &request).map_err(index_error)).await?;
        let root = context.index.root().to_path_buf();
        let mut text = String::new();
        for hit in &hits {
            let symbol = match (&hit.symbol, &hit.kind) {
                (Some(symbol), Some(kind)) => format!("  {kind} {symbol}"),
                (Some(symbol), None) => format!("  {symbol}"),
                _ => String::new(),
            };
            text.push_str(&format!(
                "{}:{}-{}{symbol}\n",
                hit.path, hit.start_line, hit.end_line
            ));
            for line in hit.snippet.lines() {
                text.push_str("    ");
                text.push_str(line);
                text.push('\n');
            }
        }
        if hits.is_empty() {
            text = format!("No code matches `{}`.", args.query);
        }
        Ok(ToolOutput {
            model_text: cap_output(&text, DEFAULT_OUTPUT_CAP).text,
            locations: hits
                .iter()
                .map(|hit| location(&root, &hit.path, hit.start_line))
                .collect(),
            raw_output: Some(json!({"hits": hits.len()})),
            ..ToolOutput::default()
        })
    }
}

#[derive(Deserialize)]
struct MapArgs {
    #[serde(default)]
    focus_files: Vec<String>,
    #[serde(default)]
    mentions: Vec<String>,
    #[serde(default)]
    max_tokens: Option<usize>,
}

/// `repo_map`: the ranked outline of the workspace's definitions.
pub struct RepoMapTool;

#[async_trait::async_trait]
impl Tool for RepoMapTool {
    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: "repo_map".into(),
            description: "Outline of the workspace's most important definitions (signatures \
                grouped by file), ranked by how much the code uses them and biased toward \
                `focus_files` and `mentions`. Use it to get oriented in unfamiliar code. \
                Definitions of the focus files themselves are left out."
                .into(),
            parameters: json!({
                "type": "object",
                "properties": {
                    "focus_files": {"type": "array", "items": {"type": "string"}, "description": "Workspace-relative files the task is about."},
                    "mentions": {"type": "array", "items": {"type": "string"}, "description": "Identifiers the task is about."},
                    "max_tokens": {"type": "integer", "minimum": 128, "maximum": 8192, "description": "Size of the map in tokens. Default 1024."}
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

    fn present(&self, _arguments: &serde_json::Value, _context: &ToolContext) -> ToolPresentation {
        ToolPresentation {
            title: "Map the repository".into(),
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
        let args: MapArgs = parse_args("repo_map", &arguments)?;
        crate::index_wait::wait_for_index(
            &context.index,
            crate::index_wait::INDEX_PATIENCE,
            &context.cancel,
        )
        .await?;
        let mut focus_files = Vec::new();
        for file in &args.focus_files {
            let resolved = resolve_path(&context.roots, file)?;
            let relative = context
                .index
                .relative(&resolved.absolute)
                .map_err(index_error)?;
            focus_files.push(relative);
        }
        let request = lode_index::MapRequest {
            max_tokens: args.max_tokens.unwrap_or(1024).clamp(128, 8192),
            focus_files,
            mentions: args.mentions,
        };
        let index = Arc::clone(&context.index);
        let map = blocking(move || index.repo_map(&request).map_err(index_error)).await?;
        let text = if map.text.trim().is_empty() {
            "The index has no definitions to map (is the workspace indexed?).".to_owned()
        } else {
            map.text.clone()
        };
        Ok(ToolOutput {
            model_text: cap_output(&text, DEFAULT_OUTPUT_CAP).text,
            raw_output: Some(json!({
                "files": map.files.len(),
                "tokens": map.tokens,
                "candidates": map.candidates,
            })),
            ..ToolOutput::default()
        })
    }
}

#[derive(Deserialize)]
struct NameArgs {
    name: String,
    #[serde(default)]
    limit: Option<usize>,
}

/// What the look-ups by name (`find_symbol`, `find_references`) share: their arguments (a
/// name and a bounded limit), their title, and that they only read the index.
struct ByName {
    tool: &'static str,
    description: &'static str,
    /// How `name` is described to the model.
    name_description: &'static str,
    /// The title's words before the name, e.g. `Find symbol`.
    title: &'static str,
    default_limit: usize,
    max_limit: usize,
}

impl ByName {
    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: self.tool.into(),
            description: self.description.into(),
            parameters: json!({
                "type": "object",
                "properties": {
                    "name": {"type": "string", "description": self.name_description},
                    "limit": {"type": "integer", "minimum": 1, "maximum": self.max_limit, "description": format!("Most results. Default {}.", self.default_limit)}
                },
                "required": ["name"],
                "additionalProperties": false
            }),
        }
    }

    fn present(&self, arguments: &serde_json::Value) -> ToolPresentation {
        ToolPresentation {
            title: format!(
                "{} `{}`",
                self.title,
                peek_str(arguments, "name").unwrap_or("")
            ),
            locations: Vec::new(),
        }
    }

    /// The name asked for and the limit, defaulted and clamped.
    fn parse(&self, arguments: &serde_json::Value) -> Result<(String, usize), ToolError> {
        let args: NameArgs = parse_args(self.tool, arguments)?;
        let limit = args
            .limit
            .unwrap_or(self.default_limit)
            .clamp(1, self.max_limit);
        Ok((args.name, limit))
    }
}

/// A look-up by name in the index: what it is called, and how it answers; the rest of
/// [`Tool`] is the same for each (see the impl below).
#[async_trait::async_trait]
trait NameLookup: Send + Sync {
    const BY_NAME: ByName;

    /// The answer for `name`, at most `limit` results.
    async fn answer(
        &self,
        name: String,
        limit: usize,
        context: &ToolContext,
    ) -> Result<ToolOutput, ToolError>;
}

#[async_trait::async_trait]
impl<T: NameLookup> Tool for T {
    fn spec(&self) -> ToolSpec {
        T::BY_NAME.spec()
    }

    fn kind(&self) -> ToolKind {
        ToolKind::Search
    }

    fn read_only(&self) -> bool {
        true
    }

    fn present(&self, arguments: &serde_json::Value, _context: &ToolContext) -> ToolPresentation {
        T::BY_NAME.present(arguments)
    }

    fn permission_target(&self, _arguments: &serde_json::Value) -> PermissionTarget {
        PermissionTarget::Read
    }

    async fn run(
        &self,
        arguments: serde_json::Value,
        context: &ToolContext,
    ) -> Result<ToolOutput, ToolError> {
        let (name, limit) = T::BY_NAME.parse(&arguments)?;
        crate::index_wait::wait_for_index(
            &context.index,
            crate::index_wait::INDEX_PATIENCE,
            &context.cancel,
        )
        .await?;
        self.answer(name, limit, context).await
    }
}

/// `find_symbol`: definitions by name.
pub struct FindSymbolTool;

#[async_trait::async_trait]
impl NameLookup for FindSymbolTool {
    const BY_NAME: ByName = ByName {
        tool: "find_symbol",
        description: "Find definitions (functions, types, methods, constants, …) by name: \
            exact matches first, then case-insensitive, prefix, substring and fuzzy ones. \
            Returns path, line range, kind, the name with its enclosing scope \
            (`Circle/area`; `path:Circle/area` names it for replace_symbol_body and the \
            insert tools) and signature.",
        name_description: "The symbol name, e.g. `Workspace` or `parse_config`.",
        title: "Find symbol",
        default_limit: 20,
        max_limit: 200,
    };

    async fn answer(
        &self,
        name: String,
        limit: usize,
        context: &ToolContext,
    ) -> Result<ToolOutput, ToolError> {
        let index = Arc::clone(&context.index);
        let hits = {
            let name = name.clone();
            blocking(move || index.symbols(&name, limit).map_err(index_error)).await?
        };
        let root = context.index.root().to_path_buf();
        let mut text = String::new();
        for hit in &hits {
            let mut qualified = hit.scope.clone();
            qualified.push(hit.name.clone());
            text.push_str(&format!(
                "{}:{}-{}  {} {}  [{}]\n",
                hit.path,
                hit.start_line,
                hit.end_line,
                hit.kind,
                // The `FILE:NAME/PATH` form the edits by symbol take after `path:`.
                qualified.join("/"),
                serde_json::to_value(hit.name_match)
                    .ok()
                    .and_then(|v| v.as_str().map(str::to_owned))
                    .unwrap_or_default()
            ));
            let signature = hit.signature.trim();
            if !signature.is_empty() {
                text.push_str(&format!("    {signature}\n"));
            }
        }
        if hits.is_empty() {
            text = format!("No definition named like `{name}`.");
        }
        Ok(ToolOutput {
            model_text: cap_output(&text, DEFAULT_OUTPUT_CAP).text,
            locations: hits
                .iter()
                .map(|hit| location(&root, &hit.path, hit.start_line))
                .collect(),
            raw_output: Some(json!({"hits": hits.len()})),
            ..ToolOutput::default()
        })
    }
}

/// `find_references`: where a name is used.
pub struct FindReferencesTool;

#[async_trait::async_trait]
impl NameLookup for FindReferencesTool {
    const BY_NAME: ByName = ByName {
        tool: "find_references",
        description: "Find places that use a name (calls, type uses, imports), by exact \
            name, in path and line order. Returns path:line:column, the kind of use and \
            the enclosing definition. Use it before changing a function's signature. It \
            matches names only (every `area` method); `references` resolves by type.",
        name_description: "The exact identifier, e.g. `update_file`.",
        title: "Find references to",
        default_limit: 50,
        max_limit: 500,
    };

    async fn answer(
        &self,
        name: String,
        limit: usize,
        context: &ToolContext,
    ) -> Result<ToolOutput, ToolError> {
        let index = Arc::clone(&context.index);
        // One more than asked tells whether there are more.
        let mut hits = {
            let name = name.clone();
            blocking(move || index.references(&name, limit + 1).map_err(index_error)).await?
        };
        let more = hits.len() > limit;
        hits.truncate(limit);
        let root: PathBuf = context.index.root().to_path_buf();
        let mut text = String::new();
        for hit in &hits {
            let scope = if hit.scope.is_empty() {
                String::new()
            } else {
                format!("  in {}", hit.scope.join("::"))
            };
            text.push_str(&format!(
                "{}:{}:{}  {}{scope}\n",
                hit.path, hit.line, hit.column, hit.kind
            ));
        }
        if hits.is_empty() {
            text = format!("No references to `{name}` in the index.");
        } else if more {
            text.push_str(&format!(
                "[more than {limit} references; raise limit to see more]\n"
            ));
        }
        Ok(ToolOutput {
            model_text: cap_output(&text, DEFAULT_OUTPUT_CAP).text,
            locations: hits
                .iter()
                .map(|hit| location(&root, &hit.path, hit.line))
                .collect(),
            raw_output: Some(json!({"hits": hits.len(), "more": more})),
            ..ToolOutput::default()
        })
    }
}
