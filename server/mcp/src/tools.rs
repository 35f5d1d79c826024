//! The MCP tools: their argument types (which also give the JSON Schemas clients see), their
//! descriptions, and how each one turns into a query on the [`Workspace`]. Every call is sent to
//! the process holding the index's lease when one answers (it applies what it has seen and
//! answers from memory), else brings the index up to date with a quick refresh and answers here,
//! as the CLI's query commands do; either way the answer is readable text plus the same data as
//! structured content.

use parking_lot::Mutex;
use std::fmt::Write as _;
use std::path::Path;
use std::sync::Arc;

use lode_index::{
    Answer, DEFAULT_QUERY_TIMEOUT, Freshness, IndexError, Language, Query, SearchMode, Workspace,
    query_lease,
};
use lode_policy::paths::{PathDoor, PathUse};
use rmcp::ErrorData;
use rmcp::handler::server::common::schema_for_type;
use rmcp::model::{CallToolResult, ContentBlock, JsonObject, Tool, ToolAnnotations};
use schemars::JsonSchema;
use serde::Deserialize;
use serde::de::DeserializeOwned;
use serde_json::{Value, json};

/// Search hits: default and largest `limit`.
const SEARCH_LIMITS: (u32, u32) = (10, 100);
/// Symbols: default and largest `limit`.
const SYMBOL_LIMITS: (u32, u32) = (20, 500);
/// References: default and largest `limit`.
const REFERENCE_LIMITS: (u32, u32) = (100, 2000);
/// Repo map: default, smallest and largest token budget.
const MAP_TOKENS: (u32, u32, u32) = (1024, 64, 32_768);
/// `read_file`: lines shown when no end is given, and the most one call returns.
const READ_DEFAULT_LINES: u32 = 400;
const READ_MAX_LINES: u32 = 2000;
/// `read_file`: the largest file it opens, and the most text one call returns.
const READ_MAX_FILE_BYTES: u64 = 8 * 1024 * 1024;
const READ_MAX_CHARS: usize = 200_000;

/// Arguments of `search`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SearchArgs {
    /// What to look for: natural-language words ("where are retries handled"), identifiers
    /// (`open_store`, `HttpClient.send`) or both.
    pub query: String,
    /// How to rank: `hybrid` (BM25, vectors and symbol names fused; the default when the
    /// index has vectors), `lexical` (BM25 only) or `semantic` (vectors only).
    #[serde(default)]
    pub mode: Option<ModeArg>,
    /// At most this many hits (default 10, at most 100).
    #[serde(default)]
    #[schemars(range(min = 1, max = 100))]
    pub limit: Option<u32>,
    /// Only files whose workspace-relative path matches this glob: `*.rs` matches file names
    /// at any depth, `src/**/*.py` matches from the root.
    #[serde(default)]
    pub path: Option<String>,
    /// Only files in this language: rust, python, javascript, typescript, tsx, go or text.
    #[serde(default)]
    pub lang: Option<String>,
}

/// How `search` ranks chunks.
#[derive(Debug, Clone, Copy, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum ModeArg {
    Hybrid,
    Lexical,
    Semantic,
}

/// Arguments of `map`.
#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct MapArgs {
    /// Token budget of the map (cl100k tokens; default 1024, 64 to 32768).
    #[serde(default)]
    #[schemars(range(min = 64, max = 32768))]
    pub tokens: Option<u32>,
    /// Workspace-relative paths of files the task is about. Their own definitions are left
    /// out (you have those files) and the map favours what they use.
    #[serde(default)]
    pub focus: Vec<String>,
    /// Identifiers the task mentions; the map favours their definitions.
    #[serde(default)]
    pub mentions: Vec<String>,
}

/// Arguments of `symbols` and `references`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct NameArgs {
    /// The identifier, e.g. `parse_config` or `UserService` (no scope prefix).
    pub name: String,
    /// At most this many results (symbols: default 20, at most 500; references: default
    /// 100, at most 2000).
    #[serde(default)]
    #[schemars(range(min = 1))]
    pub limit: Option<u32>,
}

/// Arguments of `references`: a `name` (matched by name in the index) or a `symbol`
/// (resolved by type through the language server).
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ReferencesArgs {
    /// An identifier, e.g. `parse_config` (no scope prefix): every use of the name, matched
    /// by name. Give `name` or `symbol`, not both.
    #[serde(default)]
    pub name: Option<String>,
    /// A symbol, `FILE:NAME/PATH` (`src/shapes.py:Circle/area`) or `FILE:LINE:COLUMN` of an
    /// identifier: its uses as the language server resolves them by type (another class's
    /// `area` is not one), grouped by file with the enclosing symbol; from the index by name
    /// when no server answers. The answer says `resolved_by`.
    #[serde(default)]
    pub symbol: Option<String>,
    /// At most this many results (default 100, at most 2000; by symbol: default 50, at most
    /// 500).
    #[serde(default)]
    #[schemars(range(min = 1))]
    pub limit: Option<u32>,
}

/// Arguments of `read_file`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ReadArgs {
    /// Path of the file, relative to the workspace root (as the other tools print it).
    pub path: String,
    /// First line to show, 1-based (default 1).
    #[serde(default)]
    #[schemars(range(min = 1))]
    pub start_line: Option<u32>,
    /// Last line to show, inclusive (default: 400 lines from the start; at most 2000 lines
    /// per call).
    #[serde(default)]
    #[schemars(range(min = 1))]
    pub end_line: Option<u32>,
}

/// The tools `lode mcp` offers, in the order `tools/list` gives them; the navigation tools
/// with a navigator; the edit tools only with `allow_edits` (`lode mcp --allow-edits`).
pub fn tool_list(allow_edits: bool, navigation: bool) -> Vec<Tool> {
    let mut tools = read_tools();
    if navigation {
        tools.extend(crate::navigation::read_tools());
    }
    if allow_edits {
        for (name, title, description) in crate::edits::descriptions() {
            let destructive = name == crate::edits::EDIT_TOOLS[0];
            tools.push(
                tool::<crate::edits::SymbolEditArgs>(name, title, description).with_annotations(
                    ToolAnnotations::with_title(title)
                        .read_only(false)
                        .destructive(destructive)
                        .idempotent(false)
                        .open_world(false),
                ),
            );
        }
        if navigation {
            tools.push(crate::navigation::rename_tool());
        }
    }
    tools
}

fn read_tools() -> Vec<Tool> {
    vec![
        tool::<SearchArgs>(
            "search",
            "Search code",
            "Search the workspace's code and return the best-matching chunks (functions, \
             classes, blocks) with their file, line range, enclosing symbol and a snippet. \
             Accepts natural language and identifiers; hybrid ranking by default. Use it to \
             find where something is implemented before reading files.",
        ),
        tool::<MapArgs>(
            "map",
            "Repository map",
            "A compact map of the repository: its most important definitions (signatures, \
             grouped by file), ranked by how much the rest of the code uses them and fitted to \
             a token budget. Give `focus` files and `mentions` to centre it on a task. Use it \
             to get oriented in an unfamiliar codebase.",
        ),
        tool::<NameArgs>(
            "symbols",
            "Find definitions",
            "Find definitions (functions, methods, classes, structs, traits, constants, ...) \
             by name: exact matches first, then case-insensitive, prefix, substring and fuzzy \
             ones. Returns each definition's kind, file, line range, scope and signature.",
        ),
        tool::<ReferencesArgs>(
            "references",
            "Find references",
            "Find uses across the workspace. With `name`: every use of the identifier (calls, \
             method calls, type uses, imports, macro invocations) with file, line, column and \
             the enclosing scope, matched by name. With `symbol` (`src/shapes.py:Circle/area` \
             or FILE:LINE:COLUMN): the uses the language server resolves by type, grouped by \
             file, saying `resolved_by` (the index by name when no server answers).",
        ),
        tool::<ReadArgs>(
            "read_file",
            "Read file lines",
            "Read a line range of a text file inside the workspace, with line numbers. \
             Paths are relative to the workspace root; nothing outside it can be read.",
        ),
    ]
}

pub(crate) fn tool<T: JsonSchema + 'static>(
    name: &'static str,
    title: &str,
    description: &'static str,
) -> Tool {
    let mut schema: JsonObject = (*schema_for_type::<T>()).clone();
    // The `$schema` and `title` keys say nothing a client needs and some reject them.
    schema.remove("$schema");
    schema.remove("title");
    Tool::new(name, description, Arc::new(schema))
        .with_title(title)
        .with_annotations(
            ToolAnnotations::with_title(title)
                .read_only(true)
                .open_world(false),
        )
}

/// Why a call could not be answered: bad arguments become a JSON-RPC error (`-32602`), an
/// index failure a tool result marked as an error.
#[derive(Debug)]
pub enum CallError {
    Arguments(String),
    Failed(String),
}

impl From<IndexError> for CallError {
    fn from(error: IndexError) -> Self {
        match error {
            IndexError::InvalidQuery(_)
            | IndexError::Glob { .. }
            | IndexError::OutsideRoot { .. } => CallError::Arguments(error.to_string()),
            other => CallError::Failed(other.to_string()),
        }
    }
}

impl CallError {
    /// The answer to the client: an error for bad arguments, an error result otherwise.
    pub fn into_response(self) -> Result<CallToolResult, ErrorData> {
        match self {
            CallError::Arguments(message) => Err(ErrorData::invalid_params(message, None)),
            CallError::Failed(message) => {
                Ok(CallToolResult::error(vec![ContentBlock::text(message)]))
            }
        }
    }
}

/// lode's code intelligence over one workspace: the state behind the MCP tools.
pub struct CodeTools {
    workspace: Arc<Workspace>,
    /// The workspace's watch settings: a lease holder indexing with others is not asked.
    settings: String,
    /// Refreshes take the index's writer lock, which another handle in this process would
    /// find taken: calls refresh one at a time.
    refreshing: Mutex<()>,
    /// Whether calls bring the index up to date first.
    refresh: bool,
    /// Whether the edit tools are offered (`lode mcp --allow-edits`).
    allow_edits: bool,
    /// Type-resolved navigation (`hover`, `definition`, `call_hierarchy`, `references` by
    /// symbol, `rename`), when the binary plugs it in.
    navigator: Option<Arc<dyn crate::navigation::Navigator>>,
}

impl CodeTools {
    pub fn new(workspace: Arc<Workspace>, refresh: bool) -> Self {
        CodeTools {
            settings: workspace.watch_settings(),
            workspace,
            refreshing: Mutex::new(()),
            refresh,
            allow_edits: false,
            navigator: None,
        }
    }

    /// Offers the navigation tools, answered by `navigator`.
    pub fn with_navigator(
        mut self,
        navigator: Option<Arc<dyn crate::navigation::Navigator>>,
    ) -> Self {
        self.navigator = navigator;
        self
    }

    /// The tools `tools/list` gives.
    pub fn tool_list(&self) -> Vec<Tool> {
        tool_list(self.allow_edits, self.navigator.is_some())
    }

    /// When `name` with `arguments` is a navigation call: the navigator, the agent tool's name
    /// and its checked arguments (or why they are wrong). `None` for the index's own tools.
    #[allow(clippy::type_complexity)]
    pub fn navigation_call(
        &self,
        name: &str,
        arguments: Option<&JsonObject>,
    ) -> Option<Result<(Arc<dyn crate::navigation::Navigator>, &'static str, Value), CallError>>
    {
        use crate::navigation::{READ_TOOLS, RENAME_TOOL, checked, references_arguments};
        let arguments = Value::Object(arguments.cloned().unwrap_or_default());
        let tool: &'static str = match name {
            "references"
                if arguments
                    .get("symbol")
                    .is_some_and(|symbol| !symbol.is_null()) =>
            {
                "references"
            }
            _ => READ_TOOLS
                .into_iter()
                .chain([RENAME_TOOL])
                .find(|tool| *tool == name)?,
        };
        let Some(navigator) = self.navigator.clone() else {
            return Some(Err(CallError::Arguments(format!(
                "{name} is not offered by this server"
            ))));
        };
        if tool == RENAME_TOOL && !self.allow_edits {
            return Some(Err(CallError::Arguments(format!(
                "{name} is offered only when lode mcp runs with --allow-edits"
            ))));
        }
        let arguments = if tool == "references" {
            parse::<ReferencesArgs>(arguments).and_then(|args| match (args.name, args.symbol) {
                (Some(_), Some(_)) => Err(CallError::Arguments(
                    "give `name` (by name) or `symbol` (by type), not both".into(),
                )),
                (_, Some(symbol)) if symbol.trim().is_empty() => {
                    Err(CallError::Arguments("`symbol` is empty".into()))
                }
                (_, Some(symbol)) => match args.limit {
                    Some(0) => Err(CallError::Arguments("`limit` must be at least 1".into())),
                    limit => Ok(references_arguments(&symbol, limit)),
                },
                (_, None) => Err(CallError::Arguments("`symbol` is missing".into())),
            })
        } else {
            checked(tool, arguments)
        };
        Some(arguments.map(|arguments| (navigator, tool, arguments)))
    }

    /// Offers the edit tools too (`lode mcp --allow-edits`).
    pub fn with_edits(mut self, allow_edits: bool) -> Self {
        self.allow_edits = allow_edits;
        self
    }

    pub fn allows_edits(&self) -> bool {
        self.allow_edits
    }

    pub fn workspace(&self) -> &Workspace {
        &self.workspace
    }

    /// Brings the index up to date: through the watcher holding the index's lease (`lode
    /// watch`, `lode lsp`, `lode acp`) when one answers, which checks no file; else a quick
    /// refresh (stat what the last walk saw, re-parse what changed). When another process
    /// holds the writer lock, its published commits are loaded and the call answers from the
    /// index as it stands.
    pub fn refresh(&self) -> Result<(), IndexError> {
        self.refresh_changed().map(|_| ())
    }

    /// [`Self::refresh`], saying whether the index may have changed: files applied by the
    /// lease holder's flush or re-parsed or removed here, or another writer's commits loaded.
    pub fn refresh_changed(&self) -> Result<bool, IndexError> {
        if !self.refresh {
            return Ok(false);
        }
        let _one_at_a_time = self.refreshing.lock();
        Ok(match self.workspace.bring_up_to_date(&|_| {})? {
            Freshness::Watched(flushed) => flushed.applied > 0,
            Freshness::Checked { stats, .. } => stats.parsed + stats.removed > 0,
            Freshness::Locked { .. } => {
                tracing::info!("another process is updating the index; answering from it as it is");
                true
            }
        })
    }

    /// Answers a read query: sent to the process holding the index's lease (`lode daemon`,
    /// `lode watch`, `lode lsp`, `lode acp`) when one answers, which applies what it has seen
    /// and answers from its open index; else brought up to date and answered here. Both run
    /// `Workspace::answer`.
    fn answer(&self, query: Query) -> Result<Answer, CallError> {
        if let Ok(served) = query_lease(
            self.workspace.index_dir(),
            &self.settings,
            &query,
            self.refresh,
            DEFAULT_QUERY_TIMEOUT,
        ) {
            return Ok(served.answer);
        }
        self.refresh()?;
        Ok(self.workspace.answer(&query)?)
    }

    /// Runs the tool `name` with `arguments` (blocking: call it off the async runtime).
    pub fn call(
        &self,
        name: &str,
        arguments: Option<JsonObject>,
    ) -> Result<CallToolResult, CallError> {
        let arguments = Value::Object(arguments.unwrap_or_default());
        if let Some(edit) = crate::edits::edit_of(name) {
            if !self.allow_edits {
                return Err(CallError::Arguments(format!(
                    "{name} is offered only when lode mcp runs with --allow-edits"
                )));
            }
            return crate::edits::run(&self.workspace, edit, parse(arguments)?);
        }
        let run = match name {
            "search" => Self::search as fn(&Self, Value) -> Result<CallToolResult, CallError>,
            "map" => Self::map,
            "symbols" => Self::symbols,
            "references" => Self::references,
            "read_file" => Self::read_file,
            other => {
                return Err(CallError::Arguments(format!(
                    "unknown tool {other:?} (search, map, symbols, references, read_file)"
                )));
            }
        };
        run(self, arguments)
    }

    fn search(&self, arguments: Value) -> Result<CallToolResult, CallError> {
        let args: SearchArgs = parse(arguments)?;
        if args.query.trim().is_empty() {
            return Err(CallError::Arguments("`query` is empty".into()));
        }
        let limit = limit(args.limit, SEARCH_LIMITS)?;
        let language = match &args.lang {
            Some(name) => Some(Language::from_name(name).ok_or_else(|| {
                CallError::Arguments(format!(
                    "unknown language {name:?} (rust, python, javascript, typescript, tsx, go, text)"
                ))
            })?),
            None => None,
        };
        let query = Query::Search {
            query: args.query.clone(),
            limit,
            path_glob: args.path.clone(),
            language: language.map(|language| language.name().to_owned()),
            mode: args.mode.map(|mode| {
                match mode {
                    ModeArg::Hybrid => SearchMode::Hybrid,
                    ModeArg::Lexical => SearchMode::Lexical,
                    ModeArg::Semantic => SearchMode::Semantic,
                }
                .name()
                .to_owned()
            }),
        };
        let Answer::Search { mode, hits, .. } = self.answer(query)? else {
            return Err(CallError::Failed(
                "the index answered another kind of query".into(),
            ));
        };
        let mut text = String::new();
        if hits.is_empty() {
            let _ = writeln!(text, "No code matches {:?}.", args.query);
        }
        for hit in &hits {
            let _ = writeln!(text, "{hit}");
        }
        Ok(answer(text, json!({ "mode": mode, "hits": hits })))
    }

    fn map(&self, arguments: Value) -> Result<CallToolResult, CallError> {
        let args: MapArgs = parse(arguments)?;
        let (default, min, max) = MAP_TOKENS;
        let tokens = args.tokens.unwrap_or(default);
        if !(min..=max).contains(&tokens) {
            return Err(CallError::Arguments(format!(
                "`tokens` must be between {min} and {max}"
            )));
        }
        let focus_files = args
            .focus
            .iter()
            .map(|file| self.workspace.relative(Path::new(file)))
            .collect::<Result<Vec<_>, _>>()?;
        let query = Query::Map {
            max_tokens: tokens as usize,
            focus_files,
            mentions: args.mentions,
        };
        let Answer::Map { map } = self.answer(query)? else {
            return Err(CallError::Failed(
                "the index answered another kind of query".into(),
            ));
        };
        let text = if map.text.is_empty() {
            "The index has no definitions to map.".to_owned()
        } else {
            map.text.clone()
        };
        Ok(answer(text, to_value(&map)))
    }

    fn symbols(&self, arguments: Value) -> Result<CallToolResult, CallError> {
        let args: NameArgs = parse(arguments)?;
        let limit = limit(args.limit, SYMBOL_LIMITS)?;
        let query = Query::Symbols {
            name: args.name.clone(),
            limit,
        };
        let Answer::Symbols { hits } = self.answer(query)? else {
            return Err(CallError::Failed(
                "the index answered another kind of query".into(),
            ));
        };
        let text = one_per_line(&hits, || {
            format!("No definition named like {:?}.", args.name)
        });
        Ok(answer(text, json!({ "symbols": hits })))
    }

    fn references(&self, arguments: Value) -> Result<CallToolResult, CallError> {
        let args: ReferencesArgs = parse(arguments)?;
        let name = match (args.name, args.symbol) {
            (Some(name), None) => name,
            (None, Some(_)) => {
                return Err(CallError::Arguments(
                    "`symbol` needs type-resolved navigation, which this server does not offer; \
                     give `name`"
                        .into(),
                ));
            }
            (Some(_), Some(_)) => {
                return Err(CallError::Arguments(
                    "give `name` (by name) or `symbol` (by type), not both".into(),
                ));
            }
            (None, None) => {
                return Err(CallError::Arguments(
                    "give `name` (an identifier) or `symbol` (FILE:NAME/PATH)".into(),
                ));
            }
        };
        let limit = limit(args.limit, REFERENCE_LIMITS)?;
        let query = Query::References {
            name: name.clone(),
            limit,
        };
        let Answer::References { hits } = self.answer(query)? else {
            return Err(CallError::Failed(
                "the index answered another kind of query".into(),
            ));
        };
        let text = one_per_line(&hits, || format!("No references to {name:?}."));
        Ok(answer(text, json!({ "references": hits })))
    }

    fn read_file(&self, arguments: Value) -> Result<CallToolResult, CallError> {
        let args: ReadArgs = parse(arguments)?;
        let root = self.workspace.root();
        let file = confined(&self.workspace, &args.path, PathUse::ReadFile)?;
        let relative = lode_index::relative_path(root, &file).unwrap_or(args.path.clone());
        let text = lode_index::read_source(&file, READ_MAX_FILE_BYTES)?.ok_or_else(|| {
            CallError::Arguments(format!(
                "{relative} is binary or larger than {READ_MAX_FILE_BYTES} bytes"
            ))
        })?;
        let lines: Vec<&str> = text.lines().collect();
        let total = lines.len() as u32;
        let start = args.start_line.unwrap_or(1);
        if start == 0 {
            return Err(CallError::Arguments("`start_line` is 1-based".into()));
        }
        if start > total.max(1) {
            return Err(CallError::Arguments(format!(
                "`start_line` {start} is past the end of {relative} ({total} lines)"
            )));
        }
        let wanted_end = args
            .end_line
            .unwrap_or(start.saturating_add(READ_DEFAULT_LINES - 1));
        if wanted_end < start {
            return Err(CallError::Arguments(format!(
                "`end_line` {wanted_end} is before `start_line` {start}"
            )));
        }
        let end = wanted_end
            .min(start.saturating_add(READ_MAX_LINES - 1))
            .min(total);
        let mut body = String::new();
        let mut shown_end = start.saturating_sub(1);
        for (number, line) in (start..=end).zip(lines.iter().skip(start as usize - 1)) {
            if body.len() + line.len() > READ_MAX_CHARS {
                break;
            }
            let _ = writeln!(body, "{number:>6}  {line}");
            shown_end = number;
        }
        let mut text = format!("{relative} (lines {start}-{shown_end} of {total})\n{body}");
        if shown_end < total {
            let _ = writeln!(
                text,
                "[more: call read_file with start_line {}]",
                shown_end + 1
            );
        }
        let contents: Vec<&str> = lines
            .get(start as usize - 1..shown_end as usize)
            .unwrap_or_default()
            .to_vec();
        Ok(answer(
            text,
            json!({
                "path": relative,
                "start_line": start,
                "end_line": shown_end,
                "total_lines": total,
                "text": contents.join("\n"),
            }),
        ))
    }
}

/// The existing file `path` names, through the one path door (`lode_policy::paths`): canonical
/// (symlinks resolved), inside the workspace root, of `usage`, never in lode's own index.
pub(crate) fn confined(
    workspace: &Workspace,
    path: &str,
    usage: PathUse,
) -> Result<std::path::PathBuf, CallError> {
    PathDoor::new(vec![workspace.root().to_path_buf()])
        .sealing(workspace.index_dir())
        .resolve(path, usage)
        .map(|resolved| resolved.absolute)
        // Every refusal is an argument the client can correct or must not send.
        .map_err(|error| CallError::Arguments(error.message))
}

fn parse<T: DeserializeOwned>(arguments: Value) -> Result<T, CallError> {
    serde_json::from_value(arguments)
        .map_err(|error| CallError::Arguments(format!("invalid arguments: {error}")))
}

fn limit(given: Option<u32>, (default, max): (u32, u32)) -> Result<usize, CallError> {
    match given.unwrap_or(default) {
        0 => Err(CallError::Arguments("`limit` must be at least 1".into())),
        n if n > max => Err(CallError::Arguments(format!(
            "`limit` must be at most {max}"
        ))),
        n => Ok(n as usize),
    }
}

fn to_value(value: &impl serde::Serialize) -> Value {
    // Plain data (strings, numbers, lists) always serialises.
    serde_json::to_value(value).unwrap_or(Value::Null)
}

/// Each item on its own line, or `when_empty()` as the one line when there are none.
fn one_per_line<T: std::fmt::Display>(items: &[T], when_empty: impl FnOnce() -> String) -> String {
    if items.is_empty() {
        return format!("{}\n", when_empty());
    }
    let mut text = String::new();
    for item in items {
        let _ = writeln!(text, "{item}");
    }
    text
}

/// A successful result: readable text for the model, the same data as structured content.
pub(crate) fn answer(text: String, structured: Value) -> CallToolResult {
    let mut result = CallToolResult::success(vec![ContentBlock::text(text)]);
    result.structured_content = Some(structured);
    result
}
