//! lode-tools: what a tool is and the tools lode ships.
//!
//! Owns the [`Tool`] trait (a spec the model sees, a presentation (title, kind, locations) the
//! front end shows, a permission target the policy judges, and `run`), the built-in tools, the
//! path door that confines them to the workspace ([`paths`]), the doors they reach the editor
//! through ([`host::ToolHost`], [`navigation`], [`editor_lsp`], [`diagnostics`]), and the
//! `<untrusted_content>` frame their output reaches the model in ([`untrusted`]).
//!
//! It must not know about the agent: turns, sessions, the store, providers' clients, permission
//! questions or protocols. Tools never ask for permission themselves: the loop checks the policy
//! before `run`, and tools reach the front end only through [`ToolContext::host`].

pub mod args;
pub mod call_hierarchy;
pub mod cargo_check;
pub mod code;
pub mod command;
pub mod diagnostics;
pub mod edit;
pub mod editor_lsp;
pub mod event;
pub mod files;
pub mod grep;
pub mod host;
pub mod index_wait;
pub mod lean;
pub mod navigate;
pub mod navigation;
pub mod output;
pub mod paths;
pub mod plan;
pub mod pushed_diagnostics;
pub mod read;
pub mod registry;
pub mod rename;
pub mod symbol_edit;
pub mod untrusted;

pub use output::{CappedText, DEFAULT_OUTPUT_CAP, cap_output};
pub use paths::{ResolvedPath, display_path, resolve_path};
pub use registry::{ToolRegistry, default_tools, default_tools_with};

use std::path::PathBuf;
use std::sync::Arc;

use serde::{Deserialize, Serialize};
use tokio_util::sync::CancellationToken;

use crate::event::{Location, ToolContent, ToolKind};
use crate::host::ToolHost;
use lode_llm::ToolSpec;

/// The built-in tools that change one file: the diagnostics after an edit, the LSP code actions'
/// capture and anything else that follows edits know them by these names.
pub const FILE_EDIT_TOOLS: [&str; 5] = [
    "edit_file",
    "write_file",
    symbol_edit::SYMBOL_EDIT_TOOLS[0],
    symbol_edit::SYMBOL_EDIT_TOOLS[1],
    symbol_edit::SYMBOL_EDIT_TOOLS[2],
];

/// The file a call of one of [`FILE_EDIT_TOOLS`] changes, as the model wrote it (`path`, or the
/// FILE of `symbol`); `None` for other tools and arguments without it.
pub fn edited_file<'a>(tool: &str, arguments: &'a serde_json::Value) -> Option<&'a str> {
    match tool {
        "edit_file" | "write_file" => args::peek_str(arguments, "path"),
        _ if symbol_edit::SYMBOL_EDIT_TOOLS.contains(&tool) => symbol_edit::symbol_file(arguments),
        _ => None,
    }
}

/// What a tool call will touch, for the permission policy (owned by the policy crate).
pub use lode_policy::PermissionTarget;

/// How a call will be presented before it runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolPresentation {
    pub title: String,
    pub locations: Vec<Location>,
}

/// Why a tool call failed, in a form the model can act on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ToolErrorCategory {
    /// The arguments were missing, of the wrong type, or not JSON.
    InvalidArguments,
    NotFound,
    /// A path resolved outside the workspace roots.
    OutsideWorkspace,
    /// The user or the policy said no.
    PermissionDenied,
    /// `edit_file`'s `old_string` matched zero or several times.
    NoUniqueMatch,
    Timeout,
    Cancelled,
    /// The tool ran and failed (I/O error, index error, command could not start).
    Failed,
}

/// A tool failure. It goes back to the model as a short structured block, never a stack trace.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error, Serialize, Deserialize)]
#[error("{message}")]
pub struct ToolError {
    pub category: ToolErrorCategory,
    pub message: String,
    /// Whether calling again (perhaps with corrected arguments) may succeed.
    pub retryable: bool,
}

impl ToolError {
    pub fn new(category: ToolErrorCategory, message: impl Into<String>, retryable: bool) -> Self {
        Self {
            category,
            message: message.into(),
            retryable,
        }
    }

    /// The block the model sees.
    pub fn to_model_text(&self) -> String {
        self.frame(&self.message)
    }

    /// The `<tool_error>` block around `body` (the message, or the message wrapped as untrusted
    /// content, see `crate::untrusted::wrap_tool_error`).
    pub fn frame(&self, body: &str) -> String {
        let category = serde_json::to_value(self.category)
            .ok()
            .and_then(|value| value.as_str().map(str::to_owned))
            .unwrap_or_else(|| "failed".to_owned());
        format!(
            "<tool_error category=\"{category}\" retryable=\"{}\">\n{body}\n</tool_error>",
            self.retryable
        )
    }
}

/// A successful tool result.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ToolOutput {
    /// What the model sees (already capped by the tool, see `cap_output`).
    pub model_text: String,
    /// What a front end shows (diffs, terminal, text). Empty means "show `model_text`".
    pub display: Vec<ToolContent>,
    pub locations: Vec<Location>,
    /// Structured output for `rawOutput` (exit code, match counts, …).
    pub raw_output: Option<serde_json::Value>,
}

/// Everything a running tool may use.
#[derive(Clone)]
pub struct ToolContext {
    /// Canonical workspace roots; the first is the primary root. File tools are confined to them.
    pub roots: Vec<PathBuf>,
    /// The shared code index of the primary root.
    pub index: Arc<lode_index::Workspace>,
    pub host: Arc<dyn ToolHost>,
    pub call_id: String,
    pub cancel: CancellationToken,
    /// Confines the commands tools run (`run_command`, checkers).
    pub sandbox: Arc<lode_sandbox::Sandbox>,
    /// The user granted this call network access ("allow once with network").
    pub network: bool,
    /// What untrusted content lode has seen enter the model's context in this turn (provenance
    /// for `memory_save`; set by the loop, never by the model).
    pub sources: Arc<crate::untrusted::TurnSources>,
}

/// One tool the model can call.
#[async_trait::async_trait]
pub trait Tool: Send + Sync {
    fn spec(&self) -> ToolSpec;
    fn kind(&self) -> ToolKind;
    /// Read-only tools are the only ones offered in the `ask` and `architect` modes.
    fn read_only(&self) -> bool;
    /// Title and locations shown when the call starts (arguments may be malformed: never fail).
    fn present(&self, arguments: &serde_json::Value, context: &ToolContext) -> ToolPresentation;
    /// What the policy judges. Errors for malformed arguments are reported by `run`.
    fn permission_target(&self, arguments: &serde_json::Value) -> PermissionTarget;
    /// Whether the tool wraps the untrusted parts of its output itself (MCP output, memories,
    /// skills), so the loop passes its result on as is. Every other tool's result (and error)
    /// reaches the model inside an `<untrusted_content source="tool">` block (see
    /// [`crate::untrusted`]).
    fn marks_own_output(&self) -> bool {
        false
    }
    async fn run(
        &self,
        arguments: serde_json::Value,
        context: &ToolContext,
    ) -> Result<ToolOutput, ToolError>;
}
