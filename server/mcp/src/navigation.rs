//! Type-resolved navigation in `lode mcp`: `hover`, `definition`, `call_hierarchy`,
//! `references` by `symbol`, and (only with `--allow-edits`) `rename`.
//!
//! This crate knows nothing about language servers or the agent: the answers come from a
//! [`Navigator`] the binary plugs in (the agent's tools of the same names over the language
//! servers lode runs, started lazily and shared by every call, with lode's index as the
//! fallback). Here the arguments are checked against their schemas before the navigator sees
//! them, and its answers become MCP results.

use std::future::Future;
use std::pin::Pin;

use rmcp::model::{CallToolResult, Tool, ToolAnnotations};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use crate::tools::{CallError, answer, tool};

/// A navigator's answer: text for the model and the same facts as structured content.
#[derive(Debug, Clone)]
pub struct NavigatorAnswer {
    pub text: String,
    pub structured: Value,
}

/// Why a navigator could not answer.
#[derive(Debug, Clone, thiserror::Error)]
pub enum NavigatorError {
    /// The arguments were wrong (a malformed symbol, a file outside the workspace).
    #[error("{0}")]
    Arguments(String),
    /// The question could not be answered (an ambiguous name with its candidates, no server
    /// for a rename, a refused edit).
    #[error("{0}")]
    Failed(String),
}

impl From<NavigatorError> for CallError {
    fn from(error: NavigatorError) -> CallError {
        match error {
            NavigatorError::Arguments(message) => CallError::Arguments(message),
            NavigatorError::Failed(message) => CallError::Failed(message),
        }
    }
}

/// The future a navigator answers with.
pub type NavigatorFuture<'a> =
    Pin<Box<dyn Future<Output = Result<NavigatorAnswer, NavigatorError>> + Send + 'a>>;

/// Answers the navigation tools: `hover`, `definition`, `references` (by symbol),
/// `call_hierarchy` and `rename`, each called with the JSON arguments of the agent's tool of
/// that name (already checked here).
pub trait Navigator: Send + Sync {
    fn call<'a>(&'a self, tool: &'a str, arguments: Value) -> NavigatorFuture<'a>;
}

/// The read-only navigation tools.
pub const READ_TOOLS: [&str; 3] = ["hover", "definition", "call_hierarchy"];
/// The navigation edit (only with `--allow-edits`).
pub const RENAME_TOOL: &str = "rename";

/// Arguments of `hover` and `definition`.
#[derive(Debug, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SymbolArgs {
    /// The symbol: `FILE:NAME/PATH`, the names of the enclosing definitions from the top of the
    /// file separated by `/` (`src/shapes.py:Circle/area`), or `FILE:LINE:COLUMN` (1-based) of
    /// an identifier, e.g. a call site (`src/main.py:12:9`). FILE is relative to the workspace
    /// root. An ambiguous or unknown name fails and lists the candidates.
    pub symbol: String,
}

/// Which way `call_hierarchy` goes.
#[derive(Debug, Clone, Copy, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum DirectionArg {
    /// Who calls the function.
    Incoming,
    /// What the function calls.
    Outgoing,
}

/// Arguments of `call_hierarchy`.
#[derive(Debug, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CallHierarchyArgs {
    /// The function or method, named as for `hover`.
    pub symbol: String,
    /// `incoming` (the callers; the default) or `outgoing` (the callees).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub direction: Option<DirectionArg>,
    /// At most this many callers or callees (default 50, at most 500).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1, max = 500))]
    pub limit: Option<u32>,
}

/// Arguments of `rename`.
#[derive(Debug, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RenameArgs {
    /// The symbol to rename, named as for `hover` (its definition or any use of it).
    pub symbol: String,
    /// The new identifier, bare (`surface`, not `Circle.surface`).
    pub new_name: String,
}

/// The read-only navigation tools' definitions.
pub fn read_tools() -> Vec<Tool> {
    vec![
        tool::<SymbolArgs>(
            "hover",
            "Type and docs of a symbol",
            "The type, signature and documentation of a symbol as the workspace's language \
             server (pyright, rust-analyzer, …) resolves it; from lode's index (the \
             definition's signature and doc comments) when no server answers. The answer \
             says `resolved_by`: the server's name, or `index`.",
        ),
        tool::<SymbolArgs>(
            "definition",
            "Go to definition",
            "Where the symbol at a position (e.g. a call site, `src/main.py:12:9`) is defined, \
             resolved by type through the language server; from the index (definitions with \
             that name) when no server answers. The answer says `resolved_by`.",
        ),
        tool::<CallHierarchyArgs>(
            "call_hierarchy",
            "Callers and callees",
            "Who calls a function or method (`direction: incoming`, the default) or what it \
             calls (`outgoing`), resolved by type through the language server, grouped by \
             file with where each caller or callee is defined and the call sites' \
             line:column. From the index (calls matched by name) when no server answers. The \
             answer says `resolved_by`.",
        ),
    ]
}

/// `rename`'s definition.
pub fn rename_tool() -> Tool {
    tool::<RenameArgs>(
        RENAME_TOOL,
        "Rename a symbol everywhere",
        "Rename a symbol and every use of it across the workspace as the language server \
         resolves them by type (`src/shapes.py:Circle/area` leaves another class's `area` \
         alone). Every file changes or none does; files outside the workspace, under .git/ or \
         .lode/ are refused. Needs a language server for the file's language: there is no \
         text-based fallback. Returns one diff.",
    )
    .with_annotations(
        ToolAnnotations::with_title("Rename a symbol everywhere")
            .read_only(false)
            .destructive(false)
            .idempotent(false)
            .open_world(false),
    )
}

/// Checks `arguments` against the tool's schema type and hands them on as the agent's tool
/// takes them.
pub fn checked(tool: &str, arguments: Value) -> Result<Value, CallError> {
    fn parse<T: for<'de> Deserialize<'de> + Serialize>(
        arguments: Value,
    ) -> Result<Value, CallError> {
        let parsed: T = serde_json::from_value(arguments)
            .map_err(|error| CallError::Arguments(format!("invalid arguments: {error}")))?;
        Ok(serde_json::to_value(parsed).unwrap_or(Value::Null))
    }
    let value = match tool {
        "hover" | "definition" => parse::<SymbolArgs>(arguments)?,
        "call_hierarchy" => {
            let value = parse::<CallHierarchyArgs>(arguments)?;
            if value.get("limit").and_then(Value::as_u64) == Some(0) {
                return Err(CallError::Arguments("`limit` must be at least 1".into()));
            }
            value
        }
        RENAME_TOOL => parse::<RenameArgs>(arguments)?,
        other => return Err(CallError::Arguments(format!("unknown tool {other:?}"))),
    };
    let symbol = value.get("symbol").and_then(Value::as_str).unwrap_or("");
    if symbol.trim().is_empty() {
        return Err(CallError::Arguments("`symbol` is empty".into()));
    }
    Ok(value)
}

/// Asks the navigator and shapes its answer as an MCP result.
///
/// A language server reads the files itself; only an answer from lode's index needs the index
/// current. So the question goes first, and `refresh` (which says whether it changed the
/// index) runs only when the index answered; when it changed something, the question is asked
/// again. A server's answer no longer waits for a stat of every file.
pub async fn call<R>(
    navigator: &dyn Navigator,
    tool: &str,
    arguments: Value,
    refresh: R,
) -> Result<CallToolResult, CallError>
where
    R: Future<Output = bool>,
{
    let mut answered = navigator.call(tool, arguments.clone()).await?;
    if answered_by_index(&answered) && refresh.await {
        answered = navigator.call(tool, arguments).await?;
    }
    Ok(answer(answered.text, answered.structured))
}

/// Whether lode's own index answered (`resolved_by: "index"`), not a language server.
fn answered_by_index(answered: &NavigatorAnswer) -> bool {
    answered
        .structured
        .get("resolved_by")
        .and_then(Value::as_str)
        == Some("index")
}

/// `references` by `symbol`: the navigator's `references`, its limit kept within the agent
/// tool's.
pub fn references_arguments(symbol: &str, limit: Option<u32>) -> Value {
    let mut arguments = json!({ "symbol": symbol });
    if let Some(limit) = limit {
        arguments["limit"] = json!(limit.min(500));
    }
    arguments
}
