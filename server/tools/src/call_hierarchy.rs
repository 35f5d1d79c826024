//! `call_hierarchy`: who calls a function (`incoming`) or what it calls (`outgoing`),
//! type-resolved through the language server's call hierarchy
//! ([`crate::navigation::NavigationSource::call_hierarchy`]) when one answers, else from lode's
//! own index: callers are the calls of the name inside enclosing definitions, callees the calls
//! inside the function's body in a fresh tree-sitter parse, each named to its definitions by
//! name. Every answer says `resolved_by`.
//!
//! Output is token-lean: grouped by file, one line per caller or callee (its name path, where it
//! is defined, the call sites' line:column), capped with the count of what is left out.

use std::collections::BTreeMap;
use std::sync::Arc;

use lode_index::{RefKind, SymbolSpan, file_symbols};
use serde::Deserialize;
use serde_json::json;

use super::args::{blocking, failed, parse_args, peek_str};
use super::navigate::{
    NAMING, Target, exact_symbols, fallback_note, resolve_target, shorten, views,
};
use super::output::{DEFAULT_OUTPUT_CAP, cap_output};
use super::paths::{display_path, resolve_path};
use super::symbol_edit::symbol_file;
use super::{
    PermissionTarget, Tool, ToolContext, ToolError, ToolErrorCategory, ToolOutput, ToolPresentation,
};
use crate::event::{Location, ToolKind};
use crate::navigation::{CallDirection, CallItem, INDEX, NavLocation, NavigationSource};
use lode_llm::ToolSpec;

/// The tool's name.
pub const CALL_HIERARCHY_TOOL: &str = "call_hierarchy";

/// Most callers or callees listed by default, and at most.
const DEFAULT_ITEMS: usize = 50;
const MAX_ITEMS: usize = 500;
/// Most call sites shown per caller or callee.
const MAX_SITES: usize = 8;
/// Most definitions named for a callee the index found by name.
const MAX_CANDIDATES: usize = 3;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct CallHierarchyArgs {
    symbol: String,
    #[serde(default)]
    direction: Option<String>,
    #[serde(default)]
    limit: Option<usize>,
}

/// `call_hierarchy`.
pub struct CallHierarchyTool {
    source: Option<Arc<dyn NavigationSource>>,
}

impl CallHierarchyTool {
    /// The tool answering from `source` when it can, else from the index.
    pub fn new(source: Option<Arc<dyn NavigationSource>>) -> Self {
        CallHierarchyTool { source }
    }
}

fn direction_of(raw: Option<&str>) -> Result<CallDirection, ToolError> {
    match raw.unwrap_or("incoming") {
        "incoming" | "callers" => Ok(CallDirection::Incoming),
        "outgoing" | "callees" => Ok(CallDirection::Outgoing),
        other => Err(super::args::invalid(format!(
            "call_hierarchy: `direction` is \"incoming\" (who calls it) or \"outgoing\" (what \
             it calls), not {other:?}"
        ))),
    }
}

#[async_trait::async_trait]
impl Tool for CallHierarchyTool {
    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: CALL_HIERARCHY_TOOL.into(),
            description: format!(
                "Who calls a function or method (`direction: \"incoming\"`, the default) or what \
                 it calls (`\"outgoing\"`), resolved by type through the language server \
                 (pyright, rust-analyzer, …), grouped by file: each caller or callee with where \
                 it is defined and the call sites' line:column. From the index (calls matched \
                 by name) when no server answers. {NAMING} The answer says `resolved_by`."
            ),
            parameters: json!({
                "type": "object",
                "properties": {
                    "symbol": {"type": "string", "description": "FILE:NAME/PATH (src/shapes.py:Circle/area) or FILE:LINE:COLUMN (src/main.py:12:9); FILE is relative to the workspace root."},
                    "direction": {"type": "string", "enum": ["incoming", "outgoing"], "description": "incoming: the callers (default); outgoing: the callees."},
                    "limit": {"type": "integer", "minimum": 1, "maximum": MAX_ITEMS, "description": "Most callers or callees listed. Default 50."}
                },
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
        let verb = match direction_of(peek_str(arguments, "direction")) {
            Ok(CallDirection::Outgoing) => "Calls made by",
            _ => "Callers of",
        };
        ToolPresentation {
            title: format!("{verb} {shown}"),
            locations: symbol_file(arguments)
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
        let args: CallHierarchyArgs = parse_args(CALL_HIERARCHY_TOOL, &arguments)?;
        let direction = direction_of(args.direction.as_deref())?;
        let limit = args.limit.unwrap_or(DEFAULT_ITEMS).clamp(1, MAX_ITEMS);
        let target = resolve_target(&args.symbol, context).await?;
        let mut fallback_reason = None;
        if let Some(source) = &self.source {
            let asked = tokio::select! {
                answer = source.call_hierarchy(&target.point, direction) => answer,
                _ = context.cancel.cancelled() => {
                    return Err(ToolError::new(ToolErrorCategory::Cancelled, "cancelled", false));
                }
            };
            match asked {
                Ok(resolved) => {
                    let report = Report {
                        symbol: &args.symbol,
                        direction,
                        resolved_by: &resolved.resolved_by,
                        limit,
                        fallback_reason: None,
                    };
                    return Ok(server_output(report, resolved.value, context).await);
                }
                Err(error) => fallback_reason = Some(error.to_string()),
            }
        }
        let report = Report {
            symbol: &args.symbol,
            direction,
            resolved_by: INDEX,
            limit,
            fallback_reason: fallback_reason.as_deref(),
        };
        match direction {
            CallDirection::Incoming => callers_from_index(report, &target, context).await,
            CallDirection::Outgoing => callees_from_index(report, target, context).await,
        }
    }
}

/// What every answer's first line says.
struct Report<'a> {
    symbol: &'a str,
    direction: CallDirection,
    resolved_by: &'a str,
    limit: usize,
    fallback_reason: Option<&'a str>,
}

impl Report<'_> {
    fn head(&self, count: usize, files: usize) -> String {
        let (what, noun) = match self.direction {
            CallDirection::Incoming => ("callers of", "caller"),
            CallDirection::Outgoing => ("calls made by", "callee"),
        };
        format!(
            "{what} {}: {count} {noun}{} in {files} file{} (resolved_by: {}){}\n",
            self.symbol,
            if count == 1 { "" } else { "s" },
            if files == 1 { "" } else { "s" },
            self.resolved_by,
            fallback_note(self.fallback_reason)
        )
    }
}

/// One line of the answer, filed under `file`.
struct Entry {
    file: String,
    line: String,
    location: Location,
}

/// The answer's text: the head, then the entries grouped by file in first-seen order.
fn render(report: &Report<'_>, entries: Vec<Entry>, extra: Option<String>) -> ToolOutput {
    let total = entries.len();
    let shown: Vec<Entry> = entries.into_iter().take(report.limit).collect();
    let mut order: Vec<String> = Vec::new();
    let mut by_file: BTreeMap<String, Vec<&str>> = BTreeMap::new();
    for entry in &shown {
        if !by_file.contains_key(&entry.file) {
            order.push(entry.file.clone());
        }
        by_file
            .entry(entry.file.clone())
            .or_default()
            .push(&entry.line);
    }
    let mut text = report.head(total, order.len());
    if total == 0 {
        text.push_str(match report.direction {
            CallDirection::Incoming => "No calls found.\n",
            CallDirection::Outgoing => "No calls found in its body.\n",
        });
    }
    for file in &order {
        text.push_str(file);
        text.push('\n');
        for line in &by_file[file] {
            text.push_str("  ");
            text.push_str(line);
            text.push('\n');
        }
    }
    let more = total - shown.len();
    if more > 0 {
        text.push_str(&format!(
            "[{more} more not shown; raise limit to see them]\n"
        ));
    }
    if let Some(extra) = extra {
        text.push_str(&extra);
    }
    ToolOutput {
        model_text: cap_output(&text, DEFAULT_OUTPUT_CAP).text,
        locations: shown.iter().map(|entry| entry.location.clone()).collect(),
        raw_output: Some(json!({
            "resolved_by": report.resolved_by,
            "symbol": report.symbol,
            "direction": match report.direction {
                CallDirection::Incoming => "incoming",
                CallDirection::Outgoing => "outgoing",
            },
            "count": total,
            "more": more,
            "files": order.len(),
        })),
        ..ToolOutput::default()
    }
}

/// Call sites as `L:C, L:C`, capped.
fn sites(calls: &[(u32, u32)]) -> String {
    let mut shown: Vec<String> = calls
        .iter()
        .take(MAX_SITES)
        .map(|(line, column)| format!("{line}:{column}"))
        .collect();
    if calls.len() > MAX_SITES {
        shown.push(format!("+{} more", calls.len() - MAX_SITES));
    }
    shown.join(", ")
}

/// The language server's answer, each caller or callee under the file it is defined in and
/// named by its name path there when the file is inside the workspace.
async fn server_output(
    report: Report<'_>,
    items: Vec<CallItem>,
    context: &ToolContext,
) -> ToolOutput {
    let places: Vec<NavLocation> = items.iter().map(|item| item.defined_at.clone()).collect();
    let views = views(&places, context).await;
    let entries = items
        .iter()
        .map(|item| {
            let at = &item.defined_at;
            let view = views.get(&at.path).and_then(Option::as_ref);
            let name = view
                .and_then(|view| view.enclosing(at.line))
                .map(str::to_owned)
                .unwrap_or_else(|| item.name.clone());
            let mut calls: Vec<(u32, u32)> = item
                .calls
                .iter()
                .map(|call| (call.line, call.column))
                .collect();
            calls.sort_unstable();
            calls.dedup();
            let mut line = format!("{name}  {}:{}", at.line, at.column);
            if !item.detail.is_empty() && view.is_none() {
                line.push_str("  ");
                line.push_str(&shorten(&item.detail));
            }
            let sites_file = match report.direction {
                CallDirection::Incoming => String::new(),
                CallDirection::Outgoing => item
                    .calls
                    .first()
                    .map(|call| format!("{} ", display_path(&context.roots, &call.path)))
                    .unwrap_or_default(),
            };
            if !calls.is_empty() {
                line.push_str(&format!("  calls at {sites_file}{}", sites(&calls)));
            }
            let first = item.calls.first().unwrap_or(at);
            Entry {
                file: display_path(&context.roots, &at.path),
                line,
                location: Location {
                    path: first.path.clone(),
                    line: Some(first.line),
                },
            }
        })
        .collect();
    render(&report, entries, None)
}

/// A caller from the index: its file as shown and its name path.
type CallerKey = (String, String);

/// Callers from the index: the calls of the identifier's name, each filed under the innermost
/// definition that contains it (`<top level>` outside any).
async fn callers_from_index(
    report: Report<'_>,
    target: &Target,
    context: &ToolContext,
) -> Result<ToolOutput, ToolError> {
    crate::index_wait::wait_for_index(
        &context.index,
        crate::index_wait::INDEX_PATIENCE,
        &context.cancel,
    )
    .await?;
    let index = Arc::clone(&context.index);
    let name = target.identifier.clone();
    let hits = blocking(move || {
        index
            .references(&name, MAX_ITEMS * MAX_SITES)
            .map_err(|error| failed(format!("the code index failed: {error}")))
    })
    .await?;
    let root = context.index.root().to_path_buf();
    // (file, caller) → call sites, in the index's order.
    let mut callers: Vec<(CallerKey, Vec<(u32, u32)>)> = Vec::new();
    for hit in hits {
        if hit.kind != RefKind::Call.name() && hit.kind != RefKind::MethodCall.name() {
            continue;
        }
        let caller = if hit.scope.is_empty() {
            "<top level>".to_owned()
        } else {
            hit.scope.join("/")
        };
        let key = (display_path(&context.roots, &root.join(&hit.path)), caller);
        match callers.iter_mut().find(|(existing, _)| *existing == key) {
            Some((_, calls)) => calls.push((hit.line, hit.column)),
            None => callers.push((key, vec![(hit.line, hit.column)])),
        }
    }
    let entries = callers
        .into_iter()
        .map(|((file, caller), calls)| Entry {
            line: format!("{caller}  calls at {}", sites(&calls)),
            location: Location {
                path: root.join(&file),
                line: calls.first().map(|(line, _)| *line),
            },
            file,
        })
        .collect();
    Ok(render(&report, entries, None))
}

/// Callees from the index: the calls inside the function's definition (a fresh parse of its
/// file), each callee's name looked up among the index's definitions.
async fn callees_from_index(
    report: Report<'_>,
    target: Target,
    context: &ToolContext,
) -> Result<ToolOutput, ToolError> {
    let (language, text) = (target.language, target.text.clone());
    let span = target.span.clone();
    let point = target.point.clone();
    let (function, calls) = blocking(move || {
        let span = match span {
            Some(span) => span,
            None => enclosing_function(language, &text, point.line)?,
        };
        let tree = lode_index::parse_tree(language, &text)
            .map_err(|error| failed(format!("cannot parse the file: {error}")))?
            .ok_or_else(|| failed("no grammar for this file"))?;
        let tags = lode_index::extract_tags(language, &tree, &text)
            .map_err(|error| failed(format!("cannot read the file's calls: {error}")))?;
        let lines = span.definition_lines;
        // Calls by name, in the order they first appear.
        let mut calls: Vec<(String, Vec<(u32, u32)>)> = Vec::new();
        for reference in tags.references {
            let is_call = matches!(reference.kind, RefKind::Call | RefKind::MethodCall);
            if !is_call || reference.line < lines.start || reference.line > lines.end {
                continue;
            }
            // The tags' columns are in bytes; the answers' are in characters.
            let column = text
                .lines()
                .nth(reference.line as usize - 1)
                .and_then(|line| line.get(..reference.column.saturating_sub(1) as usize))
                .map_or(reference.column, |before| before.chars().count() as u32 + 1);
            let site = (reference.line, column);
            match calls.iter_mut().find(|(name, _)| *name == reference.name) {
                Some((_, sites)) => sites.push(site),
                None => calls.push((reference.name, vec![site])),
            }
        }
        Ok((span.path, calls))
    })
    .await?;
    let mut entries = Vec::new();
    for (name, calls) in calls {
        let definitions = exact_symbols(context, &name).await.unwrap_or_default();
        let (file, defined) = match definitions.as_slice() {
            [] => ("(not defined in the workspace)".to_owned(), String::new()),
            [only] => (only.path.clone(), qualified(only)),
            several => (
                "(several definitions share the name)".to_owned(),
                several
                    .iter()
                    .take(MAX_CANDIDATES)
                    .map(|hit| format!("{}:{}", hit.path, qualified(hit)))
                    .collect::<Vec<_>>()
                    .join(" | ")
                    + if several.len() > MAX_CANDIDATES {
                        " | …"
                    } else {
                        ""
                    },
            ),
        };
        let label = if defined.is_empty() {
            name.clone()
        } else {
            defined
        };
        entries.push(Entry {
            line: format!("{label}  calls at {} {}", target.shown, sites(&calls)),
            location: Location {
                path: target.point.path.clone(),
                line: calls.first().map(|(line, _)| *line),
            },
            file,
        });
    }
    let note = format!("(the body of {}:{function})\n", target.shown);
    Ok(render(&report, entries, Some(note)))
}

/// `Scope/name  line` of an index definition.
fn qualified(hit: &lode_index::SymbolHit) -> String {
    let mut names = hit.scope.clone();
    names.push(hit.name.clone());
    format!("{}  {}", names.join("/"), hit.start_line)
}

/// The innermost function-like definition containing a 1-based position.
fn enclosing_function(
    language: lode_index::Language,
    text: &str,
    line: u32,
) -> Result<SymbolSpan, ToolError> {
    let spans = file_symbols(language, text).map_err(super::symbol_edit::symbol_error)?;
    spans
        .into_iter()
        .filter(|span| span.definition_lines.start <= line && line <= span.definition_lines.end)
        .min_by_key(|span| span.definition_lines.end - span.definition_lines.start)
        .ok_or_else(|| {
            ToolError::new(
                ToolErrorCategory::NotFound,
                format!("no definition contains line {line}"),
                true,
            )
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn directions_parse_and_bad_ones_say_what_is_accepted() {
        assert_eq!(direction_of(None).unwrap(), CallDirection::Incoming);
        assert_eq!(
            direction_of(Some("outgoing")).unwrap(),
            CallDirection::Outgoing
        );
        let error = direction_of(Some("sideways")).unwrap_err();
        assert_eq!(error.category, ToolErrorCategory::InvalidArguments);
        assert!(error.message.contains("incoming"), "{}", error.message);
    }

    #[test]
    fn call_sites_are_capped_with_a_count() {
        let calls: Vec<(u32, u32)> = (1..=10).map(|line| (line, 5)).collect();
        let shown = sites(&calls);
        assert!(shown.starts_with("1:5, 2:5"), "{shown}");
        assert!(shown.ends_with("+2 more"), "{shown}");
    }
}
