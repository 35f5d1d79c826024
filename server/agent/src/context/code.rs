//! The code-intelligence inputs of context assembly, behind a small trait so the loop can pass
//! precomputed values ([`PrecomputedCode`]), tests and the loop can use a real index
//! ([`WorkspaceCode`]), and a session without an index can pass [`NoCode`].

use std::collections::HashSet;
use std::sync::Arc;

use lode_index::{MapRequest, SearchRequest, Workspace};

use super::tokens::count_tokens;

/// A chunk of code retrieved for the user's message.
#[derive(Debug, Clone, PartialEq)]
pub struct RetrievedChunk {
    /// Workspace-relative, `/`-separated.
    pub path: String,
    /// 1-based, inclusive.
    pub start_line: u32,
    pub end_line: u32,
    pub symbol: Option<String>,
    /// The chunk's lines.
    pub text: String,
}

impl RetrievedChunk {
    /// The chunk as the model sees it: inside an `<untrusted_content source="code">` block (it is
    /// the workspace's text, not the user's).
    pub fn render(&self) -> String {
        let lines = format!("{}-{}", self.start_line, self.end_line);
        let mut attributes = vec![("path", self.path.as_str()), ("lines", lines.as_str())];
        if let Some(symbol) = &self.symbol {
            attributes.push(("symbol", symbol.as_str()));
        }
        let mut out = lode_tools::untrusted::wrap("code", &attributes, self.text.trim_end());
        out.push('\n');
        out
    }
}

/// Why a code input could not be produced. Assembly leaves the piece out and reports the error in
/// [`super::AssembledContext::warnings`]; it never fails the turn for it.
#[derive(Debug, Clone, thiserror::Error, PartialEq, Eq)]
#[error("{0}")]
pub struct CodeContextError(pub String);

/// The repo map and retrieval for one turn.
pub trait CodeContext: Send + Sync {
    /// A repo map of at most `max_tokens`, personalised to `focus_files` (workspace-relative)
    /// and `mentions` (identifiers). An empty string when there is nothing to map.
    fn repo_map(
        &self,
        focus_files: &[String],
        mentions: &[String],
        max_tokens: usize,
    ) -> Result<String, CodeContextError>;

    /// The best chunks for `query`, skipping files in `exclude_paths` (already read in the
    /// conversation) and duplicates, whose rendered size fits `max_tokens` in all.
    fn retrieve(
        &self,
        query: &str,
        exclude_paths: &HashSet<String>,
        max_tokens: usize,
    ) -> Result<Vec<RetrievedChunk>, CodeContextError>;

    /// Why there is no map or retrieved code now, when the model should be told (the index is
    /// still being built); `None` when the code context is what the index holds.
    fn missing(&self) -> Option<String> {
        None
    }
}

/// No code intelligence: an empty map and no retrieval.
#[derive(Debug, Clone, Copy, Default)]
pub struct NoCode;

impl CodeContext for NoCode {
    fn repo_map(&self, _: &[String], _: &[String], _: usize) -> Result<String, CodeContextError> {
        Ok(String::new())
    }

    fn retrieve(
        &self,
        _: &str,
        _: &HashSet<String>,
        _: usize,
    ) -> Result<Vec<RetrievedChunk>, CodeContextError> {
        Ok(Vec::new())
    }
}

/// Values the caller computed already (e.g. once per user message rather than once per model
/// step). They are still fitted to the budget: a map over budget is cut, chunks are taken in
/// order while they fit and skipped when excluded.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct PrecomputedCode {
    pub repo_map: String,
    pub chunks: Vec<RetrievedChunk>,
    /// Set instead of the two when the index could not be read yet ([`CodeContext::missing`]).
    pub missing: Option<String>,
}

impl CodeContext for PrecomputedCode {
    fn repo_map(
        &self,
        _: &[String],
        _: &[String],
        max_tokens: usize,
    ) -> Result<String, CodeContextError> {
        Ok(super::tokens::truncate_to_tokens(
            &self.repo_map,
            max_tokens,
        ))
    }

    fn retrieve(
        &self,
        _: &str,
        exclude_paths: &HashSet<String>,
        max_tokens: usize,
    ) -> Result<Vec<RetrievedChunk>, CodeContextError> {
        Ok(fit_chunks(
            self.chunks.iter().cloned(),
            exclude_paths,
            max_tokens,
        ))
    }

    fn missing(&self) -> Option<String> {
        self.missing.clone()
    }
}

/// How many search hits are considered before the budget picks among them.
pub const RETRIEVAL_CANDIDATES: usize = 20;
/// A chunk longer than this many lines is cut (head kept) before it is budgeted.
pub const MAX_CHUNK_LINES: usize = 120;

/// The repo map and search of a real index.
#[derive(Clone)]
pub struct WorkspaceCode {
    workspace: Arc<Workspace>,
}

impl WorkspaceCode {
    pub fn new(workspace: Arc<Workspace>) -> Self {
        WorkspaceCode { workspace }
    }
}

impl CodeContext for WorkspaceCode {
    fn repo_map(
        &self,
        focus_files: &[String],
        mentions: &[String],
        max_tokens: usize,
    ) -> Result<String, CodeContextError> {
        if max_tokens == 0 {
            return Ok(String::new());
        }
        let map = self
            .workspace
            .repo_map(&MapRequest {
                max_tokens,
                focus_files: focus_files.to_vec(),
                mentions: mentions.to_vec(),
            })
            .map_err(|error| CodeContextError(format!("repo map: {error}")))?;
        Ok(map.text)
    }

    fn retrieve(
        &self,
        query: &str,
        exclude_paths: &HashSet<String>,
        max_tokens: usize,
    ) -> Result<Vec<RetrievedChunk>, CodeContextError> {
        if max_tokens == 0 || query.trim().is_empty() {
            return Ok(Vec::new());
        }
        let mut request = SearchRequest::new(query);
        request.limit = RETRIEVAL_CANDIDATES;
        let hits = self
            .workspace
            .search(&request)
            .map_err(|error| CodeContextError(format!("search: {error}")))?;
        let root = self.workspace.root().to_path_buf();
        let chunks = hits.into_iter().map(|hit| {
            // The chunk's full lines from disk; the hit's snippet when the file cannot be read
            // (deleted or changed since it was indexed).
            let text = std::fs::read_to_string(root.join(&hit.path))
                .ok()
                .and_then(|content| chunk_lines(&content, hit.start_line, hit.end_line))
                .unwrap_or_else(|| hit.snippet.clone());
            RetrievedChunk {
                path: hit.path,
                start_line: hit.start_line,
                end_line: hit.end_line,
                symbol: hit.symbol,
                text,
            }
        });
        Ok(fit_chunks(chunks, exclude_paths, max_tokens))
    }
}

fn chunk_lines(content: &str, start_line: u32, end_line: u32) -> Option<String> {
    let start = (start_line.max(1) - 1) as usize;
    let count = (end_line.saturating_sub(start_line) as usize + 1).min(MAX_CHUNK_LINES);
    let lines: Vec<&str> = content.lines().skip(start).take(count).collect();
    if lines.is_empty() {
        return None;
    }
    let mut text = lines.join("\n");
    if (end_line.saturating_sub(start_line) as usize + 1) > MAX_CHUNK_LINES {
        text.push_str(&format!(
            "\n[… lines {}-{end_line} left out]",
            start_line as usize + MAX_CHUNK_LINES
        ));
    }
    Some(text)
}

/// Takes chunks in rank order while they fit, skipping excluded files and chunks overlapping one
/// already taken.
pub fn fit_chunks(
    chunks: impl IntoIterator<Item = RetrievedChunk>,
    exclude_paths: &HashSet<String>,
    max_tokens: usize,
) -> Vec<RetrievedChunk> {
    let mut taken: Vec<RetrievedChunk> = Vec::new();
    let mut used = 0usize;
    for chunk in chunks {
        if exclude_paths.contains(&chunk.path) {
            continue;
        }
        let overlaps = taken.iter().any(|other| {
            other.path == chunk.path
                && other.start_line <= chunk.end_line
                && chunk.start_line <= other.end_line
        });
        if overlaps {
            continue;
        }
        let tokens = count_tokens(&chunk.render());
        if used + tokens > max_tokens {
            continue;
        }
        used += tokens;
        taken.push(chunk);
    }
    taken
}
