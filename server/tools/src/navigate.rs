//! `hover`, `definition`, `references`: navigation by symbol, type-resolved when a language
//! server answers ([`crate::navigation::NavigationSource`]), else from lode's own index
//! (tree-sitter definitions and references by name). Every answer says `resolved_by`.
//!
//! The symbol is named as for the edits by symbol (`FILE:NAME/PATH`, resolved by
//! `lode_index::locate` to the definition's name; or `FILE:LINE:COLUMN`, the identifier at that
//! position, e.g. a call site) and its file is confined like every path. Results are short:
//! `references` groups by file, one line per use (position, enclosing symbol, the line's text
//! trimmed), capped with the count of what is left out.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use lode_index::{Language, SymbolName, SymbolSpan, SymbolTarget, file_symbols, locate};
use serde::Deserialize;
use serde_json::json;

use super::args::{blocking, failed, invalid, parse_args, peek_str};
use super::files::read_text;
use super::output::{DEFAULT_OUTPUT_CAP, cap_output};
use super::paths::{display_path, resolve_path};
use super::symbol_edit::symbol_error;
use super::{
    PermissionTarget, Tool, ToolContext, ToolError, ToolErrorCategory, ToolOutput, ToolPresentation,
};
use crate::event::{Location, ToolKind};
use crate::navigation::{INDEX, NavLocation, NavPoint, NavigationSource, Resolved};
use lode_llm::ToolSpec;

/// The navigation tools' names.
pub const NAVIGATION_TOOLS: [&str; 3] = ["hover", "definition", "references"];

/// Most references listed by default, and at most.
const DEFAULT_REFERENCES: usize = 50;
const MAX_REFERENCES: usize = 500;
/// Most definitions listed.
const MAX_DEFINITIONS: usize = 20;
/// Most characters of a hover text or a shown line.
const MAX_HOVER_CHARS: usize = 4_000;
const MAX_LINE_CHARS: usize = 160;

/// Which question a tool asks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Question {
    Hover,
    Definition,
    References,
}

impl Question {
    fn name(self) -> &'static str {
        match self {
            Question::Hover => NAVIGATION_TOOLS[0],
            Question::Definition => NAVIGATION_TOOLS[1],
            Question::References => NAVIGATION_TOOLS[2],
        }
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct NavigateArgs {
    symbol: String,
    #[serde(default)]
    limit: Option<usize>,
}

/// One of `hover`, `definition`, `references`.
pub struct NavigateTool {
    question: Question,
    source: Option<Arc<dyn NavigationSource>>,
}

impl NavigateTool {
    /// The tool answering from `source` when it can, else from the index.
    pub fn new(question: Question, source: Option<Arc<dyn NavigationSource>>) -> Self {
        NavigateTool { question, source }
    }
}

/// What a symbol argument resolved to.
pub(super) struct Target {
    pub(super) point: NavPoint,
    /// The identifier at the point (the definition's own name for `FILE:NAME/PATH`).
    pub(super) identifier: String,
    /// The definition a `FILE:NAME/PATH` named.
    pub(super) span: Option<SymbolSpan>,
    /// The file as shown, and its text.
    pub(super) shown: String,
    pub(super) text: String,
    pub(super) language: Language,
}

pub(super) const NAMING: &str = "`symbol` is FILE:NAME/PATH (`src/shapes.py:Circle/area`, the names of the \
    enclosing definitions separated by `/`; an ambiguous or unknown name fails and lists the \
    candidates) or FILE:LINE:COLUMN (1-based, the identifier at that position, e.g. a call \
    site).";

#[async_trait::async_trait]
impl Tool for NavigateTool {
    fn spec(&self) -> ToolSpec {
        let what = match self.question {
            Question::Hover => {
                "The type, signature and documentation of a symbol, as the language server \
                 (pyright, rust-analyzer, …) resolves it; from the index (the definition's \
                 signature and doc comments) when no server answers."
            }
            Question::Definition => {
                "Where the symbol at a position (e.g. a call site) is defined, resolved by type \
                 through the language server; from the index (definitions with that name) when \
                 no server answers."
            }
            Question::References => {
                "Every use of a symbol, resolved by type through the language server (so \
                 `Circle/area` excludes calls of another class's `area`), grouped by file: \
                 line:column, the enclosing symbol and the line's text. From the index (uses of \
                 the same name) when no server answers."
            }
        };
        let mut properties = json!({
            "symbol": {"type": "string", "description": "FILE:NAME/PATH (src/shapes.py:Circle/area) or FILE:LINE:COLUMN (src/main.py:12:9); FILE is relative to the workspace root."}
        });
        if self.question == Question::References {
            properties["limit"] = json!({"type": "integer", "minimum": 1, "maximum": MAX_REFERENCES, "description": "Most references listed. Default 50."});
        }
        ToolSpec {
            name: self.question.name().into(),
            description: format!(
                "{what} {NAMING} The answer says `resolved_by`: the server's name, or `index` \
                 (matched by name only, so other symbols with the same name may be included)."
            ),
            parameters: json!({
                "type": "object",
                "properties": properties,
                "required": ["symbol"],
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

    fn present(&self, arguments: &serde_json::Value, context: &ToolContext) -> ToolPresentation {
        let symbol = peek_str(arguments, "symbol").unwrap_or("a symbol");
        let shown: String = symbol.chars().take(200).collect();
        let verb = match self.question {
            Question::Hover => "Hover",
            Question::Definition => "Go to definition of",
            Question::References => "Find references to",
        };
        ToolPresentation {
            title: format!("{verb} {shown}"),
            locations: peek_str(arguments, "symbol")
                .map(SymbolName::file_part)
                .filter(|file| !file.is_empty())
                .and_then(|file| resolve_path(&context.roots, file).ok())
                .map(|resolved| {
                    vec![Location {
                        path: resolved.absolute,
                        line: None,
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
        let args: NavigateArgs = parse_args(self.question.name(), &arguments)?;
        let limit = args
            .limit
            .unwrap_or(DEFAULT_REFERENCES)
            .clamp(1, MAX_REFERENCES);
        let target = resolve_target(&args.symbol, context).await?;
        let mut fallback_reason = None;
        // The editor's servers first, when the front end offers them (`crate::editor_lsp`).
        let source = crate::editor_lsp::preferred(
            context.host.editor_language_server(),
            self.source.as_ref(),
        );
        if let Some(source) = &source {
            let asked = tokio::select! {
                answer = ask(source.as_ref(), self.question, &target.point) => answer,
                _ = context.cancel.cancelled() => {
                    return Err(ToolError::new(ToolErrorCategory::Cancelled, "cancelled", false));
                }
            };
            match asked {
                Ok(Answer::Hover(Resolved {
                    value: Some(text),
                    resolved_by,
                })) if !text.trim().is_empty() => {
                    return Ok(hover_output(&args.symbol, &resolved_by, &text, None));
                }
                Ok(Answer::Locations(Resolved { value, resolved_by })) if !value.is_empty() => {
                    return locations_output(
                        self.question,
                        &args.symbol,
                        &resolved_by,
                        value,
                        limit,
                        context,
                        None,
                    )
                    .await;
                }
                Ok(Answer::Hover(resolved)) => {
                    fallback_reason = Some(format!("{} had no answer", resolved.resolved_by));
                }
                Ok(Answer::Locations(resolved)) => {
                    fallback_reason = Some(format!("{} had no answer", resolved.resolved_by));
                }
                Err(error) => fallback_reason = Some(error.to_string()),
            }
        }
        from_index(
            self.question,
            &args.symbol,
            target,
            limit,
            context,
            fallback_reason,
        )
        .await
    }
}

enum Answer {
    Hover(Resolved<Option<String>>),
    Locations(Resolved<Vec<NavLocation>>),
}

async fn ask(
    source: &dyn NavigationSource,
    question: Question,
    at: &NavPoint,
) -> Result<Answer, crate::navigation::NavigationError> {
    Ok(match question {
        Question::Hover => Answer::Hover(source.hover(at).await?),
        Question::Definition => Answer::Locations(source.definition(at).await?),
        Question::References => Answer::Locations(source.references(at).await?),
    })
}

/// Parses, confines and resolves a symbol argument on the file's current text.
pub(super) async fn resolve_target(
    symbol: &str,
    context: &ToolContext,
) -> Result<Target, ToolError> {
    let name = SymbolName::parse(symbol).map_err(symbol_error)?;
    let resolved = resolve_path(&context.roots, &name.file)?;
    let shown = resolved.display(&context.roots);
    let language = Language::from_path(&resolved.absolute)
        .filter(|language| language.is_code())
        .ok_or_else(|| {
            symbol_error(lode_index::SymbolError::Unsupported {
                file: shown.clone(),
            })
        })?;
    let Some(text) = read_text(context, &resolved.absolute).await? else {
        return Err(ToolError::new(
            ToolErrorCategory::NotFound,
            format!("{shown} does not exist"),
            true,
        ));
    };
    let path = resolved.absolute.clone();
    let (source, file) = (text.clone(), shown.clone());
    let (line, column, identifier, span) = blocking(move || match &name.target {
        SymbolTarget::Path { .. } => {
            let span = locate(language, &source, &file, &name.target).map_err(symbol_error)?;
            let (line, column, identifier) = name_position(&source, &span);
            Ok((line, column, identifier, Some(span)))
        }
        SymbolTarget::Position { line, column } => {
            let identifier = identifier_at(&source, *line, *column).map_err(|reason| {
                ToolError::new(
                    ToolErrorCategory::NotFound,
                    format!("{file}:{line}:{column}: {reason}"),
                    true,
                )
            })?;
            Ok((*line, *column, identifier, None))
        }
    })
    .await?;
    Ok(Target {
        point: NavPoint { path, line, column },
        identifier,
        span,
        shown,
        text,
        language,
    })
}

fn is_identifier_char(c: char) -> bool {
    c.is_alphanumeric() || c == '_' || c == '$'
}

/// The position (1-based line and column in characters) of a definition's own name: the first
/// whole-word occurrence of the path's last name in the definition's text, else its start.
fn name_position(source: &str, span: &SymbolSpan) -> (u32, u32, String) {
    let last = span.path.rsplit('/').next().unwrap_or(&span.path);
    // An impl block is named by its label (`impl Display for Registry`): its type is last.
    let name = last.rsplit(' ').next().unwrap_or(last).to_owned();
    let definition = source.get(span.definition.clone()).unwrap_or("");
    let found = definition.match_indices(name.as_str()).find(|(at, _)| {
        let before = definition[..*at].chars().next_back();
        let after = definition[at + name.len()..].chars().next();
        !before.is_some_and(is_identifier_char) && !after.is_some_and(is_identifier_char)
    });
    let offset = span.definition.start + found.map_or(0, |(at, _)| at);
    let before = &source[..offset];
    let line = before.matches('\n').count() as u32 + 1;
    let line_start = before.rfind('\n').map_or(0, |at| at + 1);
    let column = source[line_start..offset].chars().count() as u32 + 1;
    (line, column, name)
}

/// The identifier at a 1-based line and column (in characters), or why there is none.
fn identifier_at(source: &str, line: u32, column: u32) -> Result<String, String> {
    let count = source.lines().count().max(1) as u32;
    let text = source
        .lines()
        .nth(line.saturating_sub(1) as usize)
        .ok_or_else(|| format!("line {line} is past the end of the file ({count} lines)"))?;
    let chars: Vec<char> = text.chars().collect();
    let at = column.saturating_sub(1) as usize;
    if at >= chars.len() || !is_identifier_char(chars[at]) {
        return Err(format!(
            "no identifier at column {column}; the line reads `{}`",
            shorten(text.trim())
        ));
    }
    let start = (0..=at)
        .rev()
        .take_while(|&i| is_identifier_char(chars[i]))
        .last()
        .unwrap_or(at);
    let end = (at..chars.len())
        .take_while(|&i| is_identifier_char(chars[i]))
        .last()
        .unwrap_or(at);
    Ok(chars[start..=end].iter().collect())
}

pub(super) fn shorten(text: &str) -> String {
    match text.char_indices().nth(MAX_LINE_CHARS) {
        Some((cut, _)) => format!("{}…", &text[..cut]),
        None => text.to_owned(),
    }
}

fn hover_output(
    symbol: &str,
    resolved_by: &str,
    text: &str,
    fallback_reason: Option<&str>,
) -> ToolOutput {
    let note = fallback_note(fallback_reason);
    let body = cap_output(text.trim(), MAX_HOVER_CHARS).text;
    ToolOutput {
        model_text: format!("hover {symbol} (resolved_by: {resolved_by}){note}\n{body}\n"),
        raw_output: Some(json!({"resolved_by": resolved_by, "symbol": symbol})),
        ..ToolOutput::default()
    }
}

pub(super) fn fallback_note(reason: Option<&str>) -> String {
    reason
        .map(|reason| {
            format!(
                "; no language server answer ({}), so matched by name",
                reason
            )
        })
        .unwrap_or_default()
}

/// A file's lines and definitions, for showing locations in it.
pub(super) struct FileView {
    lines: Vec<String>,
    symbols: Vec<SymbolSpan>,
}

impl FileView {
    pub(super) fn new(path: &Path, text: &str) -> FileView {
        let symbols = Language::from_path(path)
            .filter(|language| language.is_code())
            .and_then(|language| file_symbols(language, text).ok())
            .unwrap_or_default();
        FileView {
            lines: text.lines().map(str::to_owned).collect(),
            symbols,
        }
    }

    pub(super) fn line(&self, line: u32) -> String {
        self.lines
            .get(line.saturating_sub(1) as usize)
            .map(|text| shorten(text.trim()))
            .unwrap_or_default()
    }

    /// The name path of the innermost definition whose lines contain `line`.
    pub(super) fn enclosing(&self, line: u32) -> Option<&str> {
        self.symbols
            .iter()
            .filter(|span| span.full_lines.start <= line && line <= span.full_lines.end)
            .min_by_key(|span| span.full_lines.end - span.full_lines.start)
            .map(|span| span.path.as_str())
    }
}

/// Reads the files of `locations` that are inside the workspace (never others: a server may
/// point at a library's files, which the model did not ask to read).
pub(super) async fn views(
    locations: &[NavLocation],
    context: &ToolContext,
) -> BTreeMap<PathBuf, Option<FileView>> {
    let mut views = BTreeMap::new();
    for location in locations {
        if views.contains_key(&location.path) {
            continue;
        }
        let inside = location
            .path
            .to_str()
            .and_then(|raw| resolve_path(&context.roots, raw).ok())
            .is_some_and(|resolved| resolved.absolute == location.path);
        let view = if inside {
            match read_text(context, &location.path).await {
                Ok(Some(text)) => Some(FileView::new(&location.path, &text)),
                _ => None,
            }
        } else {
            None
        };
        views.insert(location.path.clone(), view);
    }
    views
}

/// `definition` or `references` answered with locations.
async fn locations_output(
    question: Question,
    symbol: &str,
    resolved_by: &str,
    mut locations: Vec<NavLocation>,
    limit: usize,
    context: &ToolContext,
    fallback_reason: Option<&str>,
) -> Result<ToolOutput, ToolError> {
    locations.sort();
    locations.dedup();
    let total = locations.len();
    let cap = match question {
        Question::References => limit,
        _ => MAX_DEFINITIONS,
    };
    locations.truncate(cap);
    let views = views(&locations, context).await;
    let mut by_file: BTreeMap<String, Vec<String>> = BTreeMap::new();
    let mut order: Vec<String> = Vec::new();
    for location in &locations {
        let shown = display_path(&context.roots, &location.path);
        let view = views.get(&location.path).and_then(Option::as_ref);
        let mut entry = format!("  {}:{}", location.line, location.column);
        if let Some(view) = view {
            if let Some(enclosing) = view.enclosing(location.line) {
                entry.push_str("  ");
                entry.push_str(enclosing);
            }
            entry.push_str("  ");
            entry.push_str(&view.line(location.line));
        }
        if !by_file.contains_key(&shown) {
            order.push(shown.clone());
        }
        by_file.entry(shown).or_default().push(entry);
    }
    let note = fallback_note(fallback_reason);
    let what = match question {
        Question::References => "references to",
        _ => "definition of",
    };
    let mut text = format!(
        "{what} {symbol}: {total} in {} file{} (resolved_by: {resolved_by}){note}\n",
        order.len(),
        if order.len() == 1 { "" } else { "s" }
    );
    for file in &order {
        text.push_str(file);
        text.push('\n');
        for entry in &by_file[file] {
            text.push_str(entry);
            text.push('\n');
        }
    }
    let more = total - locations.len();
    if more > 0 {
        text.push_str(&format!(
            "[{more} more not shown; raise limit to see them]\n"
        ));
    }
    Ok(ToolOutput {
        model_text: cap_output(&text, DEFAULT_OUTPUT_CAP).text,
        locations: locations
            .iter()
            .map(|location| Location {
                path: location.path.clone(),
                line: Some(location.line),
            })
            .collect(),
        raw_output: Some(json!({
            "resolved_by": resolved_by,
            "symbol": symbol,
            "count": total,
            "more": more,
            "files": order.len(),
        })),
        ..ToolOutput::default()
    })
}

/// The answer from lode's own index: the definition's signature and comments (`hover`),
/// definitions with the identifier's name (`definition`), uses of the name (`references`).
async fn from_index(
    question: Question,
    symbol: &str,
    target: Target,
    limit: usize,
    context: &ToolContext,
    fallback_reason: Option<String>,
) -> Result<ToolOutput, ToolError> {
    crate::index_wait::wait_for_index(
        &context.index,
        crate::index_wait::INDEX_PATIENCE,
        &context.cancel,
    )
    .await?;
    let reason = fallback_reason.as_deref();
    let root = context.index.root().to_path_buf();
    match question {
        Question::Hover => {
            let text = match &target.span {
                Some(span) => span_hover(&target, span),
                None => {
                    let hits = exact_symbols(context, &target.identifier).await?;
                    if hits.is_empty() {
                        format!("No definition named `{}` in the index.", target.identifier)
                    } else {
                        hits.iter()
                            .take(MAX_DEFINITIONS)
                            .map(|hit| {
                                let mut qualified = hit.scope.clone();
                                qualified.push(hit.name.clone());
                                format!(
                                    "{}:{}  {} {}\n    {}",
                                    hit.path,
                                    hit.start_line,
                                    hit.kind,
                                    qualified.join("/"),
                                    hit.signature.trim()
                                )
                            })
                            .collect::<Vec<_>>()
                            .join("\n")
                    }
                }
            };
            Ok(hover_output(symbol, INDEX, &text, reason))
        }
        Question::Definition => {
            let locations = match &target.span {
                Some(span) => vec![NavLocation {
                    path: target.point.path.clone(),
                    line: span.line,
                    column: span.column,
                }],
                None => exact_symbols(context, &target.identifier)
                    .await?
                    .into_iter()
                    .map(|hit| NavLocation {
                        path: root.join(&hit.path),
                        line: hit.start_line,
                        column: 1,
                    })
                    .collect(),
            };
            if locations.is_empty() {
                return Ok(ToolOutput {
                    model_text: format!(
                        "No definition named `{}` in the index (resolved_by: index){}.",
                        target.identifier,
                        fallback_note(reason)
                    ),
                    raw_output: Some(json!({"resolved_by": INDEX, "symbol": symbol, "count": 0})),
                    ..ToolOutput::default()
                });
            }
            locations_output(question, symbol, INDEX, locations, limit, context, reason).await
        }
        Question::References => {
            let index = Arc::clone(&context.index);
            let name = target.identifier.clone();
            let cap = MAX_REFERENCES + 1;
            let hits = blocking(move || {
                index
                    .references(&name, cap)
                    .map_err(|error| failed(format!("the code index failed: {error}")))
            })
            .await?;
            let locations: Vec<NavLocation> = hits
                .into_iter()
                .map(|hit| NavLocation {
                    path: root.join(&hit.path),
                    line: hit.line,
                    column: hit.column,
                })
                .collect();
            if locations.is_empty() {
                return Ok(ToolOutput {
                    model_text: format!(
                        "No references to `{}` in the index (resolved_by: index){}.",
                        target.identifier,
                        fallback_note(reason)
                    ),
                    raw_output: Some(json!({"resolved_by": INDEX, "symbol": symbol, "count": 0})),
                    ..ToolOutput::default()
                });
            }
            locations_output(question, symbol, INDEX, locations, limit, context, reason).await
        }
    }
}

/// Definitions named exactly `name` in the index.
pub(super) async fn exact_symbols(
    context: &ToolContext,
    name: &str,
) -> Result<Vec<lode_index::SymbolHit>, ToolError> {
    if name.is_empty() {
        return Err(invalid("no identifier to look up"));
    }
    crate::index_wait::wait_for_index(
        &context.index,
        crate::index_wait::INDEX_PATIENCE,
        &context.cancel,
    )
    .await?;
    let index = Arc::clone(&context.index);
    let name = name.to_owned();
    let hits = blocking(move || {
        index
            .symbols(&name, 200)
            .map_err(|error| failed(format!("the code index failed: {error}")))
    })
    .await?;
    Ok(hits
        .into_iter()
        .filter(|hit| hit.name_match == lode_index::NameMatch::Exact)
        .collect())
}

/// The doc comments, attributes and decorators of a definition and its first line.
fn span_hover(target: &Target, span: &SymbolSpan) -> String {
    let lines: Vec<&str> = target.text.lines().collect();
    let from = span.full_lines.start.saturating_sub(1) as usize;
    let to = (span.definition_lines.start as usize).min(lines.len());
    let mut text = format!(
        "{}:{}  {} {}\n",
        target.shown,
        span.definition_lines.start,
        span.kind.name(),
        span.path
    );
    for line in lines.get(from..to).unwrap_or_default().iter().take(40) {
        text.push_str(line);
        text.push('\n');
    }
    // Python documents a definition in the first statement of its body.
    if target.language == Language::Python
        && let Some(docstring) = lines
            .get(to..(to + 1).min(lines.len()))
            .and_then(|next| next.first())
            .filter(|next| {
                let trimmed = next.trim_start();
                trimmed.starts_with("\"\"\"") || trimmed.starts_with("'''")
            })
    {
        text.push_str(docstring);
        text.push('\n');
    }
    text
}
