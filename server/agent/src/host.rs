//! What a front end offers the agent during a turn: a sink for events, someone to ask for
//! permission, and optionally the editor's own file system and terminals (ACP `fs/*`,
//! `terminal/*`). The agent never knows which protocol is on the other side.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde::{Deserialize, Serialize};

use crate::event::{AgentEvent, ToolKind};

/// A question to the user before a tool runs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PermissionRequest {
    pub tool_call_id: String,
    pub tool: String,
    /// What will happen, in words ("Edit src/lib.rs", "Run `cargo test`").
    pub title: String,
    pub kind: ToolKind,
    pub raw_input: serde_json::Value,
    /// The pattern an "always" answer would be remembered under (e.g. `cargo test*`, `src/**`).
    pub always_pattern: String,
    /// The command needs the network, which the sandbox refuses: offer
    /// [`PermissionAnswer::AllowOnceWithNetwork`].
    #[serde(default)]
    pub offer_network: bool,
    /// Only a person may answer: headless answerers (`--yes-to`) refuse it, and "allow always"
    /// is not offered (a remembered allow never lifts a must-ask).
    #[serde(default)]
    pub must_ask: bool,
    /// Why the policy asks, in words.
    #[serde(default)]
    pub reason: String,
    /// What the policy judged: the resolved, workspace-relative paths of an edit, each simple
    /// command of a command line as the policy parsed it, or the tool's name. Patterns that
    /// approve questions match these, never the title.
    #[serde(default)]
    pub subjects: Vec<String>,
    #[serde(default)]
    pub subject_kind: crate::permission::SubjectKind,
}

impl PermissionRequest {
    /// Whether the "always" answers are offered. Not for a must-ask about a tool call: a
    /// remembered allow never lifts it. A question whose "always" is kept by its asker rather
    /// than remembered by the policy under a pattern (it has no `always_pattern`, as the question
    /// that trusts a workspace) still offers them.
    pub fn offers_always(&self) -> bool {
        !self.must_ask || self.always_pattern.is_empty()
    }
}

/// The user's answer to a permission question (owned by the policy crate).
pub use lode_policy::PermissionAnswer;

/// A failure of the client side of a host operation.
#[derive(Debug, Clone, thiserror::Error, PartialEq, Eq)]
#[error("{0}")]
pub struct HostError(pub String);

/// The editor's view of files, including unsaved buffers (ACP `fs/read_text_file`,
/// `fs/write_text_file`). Paths are absolute and already confined to the workspace.
#[async_trait::async_trait]
pub trait ClientFs: Send + Sync {
    /// Reads a whole file, or `limit` lines from 1-based `line`.
    async fn read_text_file(
        &self,
        path: &Path,
        line: Option<u32>,
        limit: Option<u32>,
    ) -> Result<String, HostError>;
    async fn write_text_file(&self, path: &Path, content: &str) -> Result<(), HostError>;
}

/// A command for a client terminal.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TerminalCommand {
    pub command: String,
    pub args: Vec<String>,
    pub cwd: PathBuf,
    pub env: Vec<(String, String)>,
    pub output_byte_limit: Option<u64>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TerminalExit {
    pub exit_code: Option<i32>,
    pub signal: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TerminalOutput {
    pub output: String,
    pub truncated: bool,
    pub exit: Option<TerminalExit>,
}

/// Terminals the client runs and shows live (ACP `terminal/*`). A terminal id is what
/// [`crate::event::ToolContent::Terminal`] refers to.
#[async_trait::async_trait]
pub trait ClientTerminals: Send + Sync {
    async fn create(&self, command: &TerminalCommand) -> Result<String, HostError>;
    async fn output(&self, terminal_id: &str) -> Result<TerminalOutput, HostError>;
    async fn wait_for_exit(&self, terminal_id: &str) -> Result<TerminalExit, HostError>;
    async fn kill(&self, terminal_id: &str) -> Result<(), HostError>;
    async fn release(&self, terminal_id: &str) -> Result<(), HostError>;
}

/// The front end of one turn.
#[async_trait::async_trait]
pub trait SessionHost: Send + Sync {
    /// Delivers an event. Must not block: queue it if the transport is slow.
    fn emit(&self, event: AgentEvent);

    /// Asks the user. A host that cannot ask (non-interactive, disconnected) answers
    /// [`PermissionAnswer::RejectOnce`]; that is also the default.
    async fn request_permission(&self, request: PermissionRequest) -> PermissionAnswer {
        let _ = request;
        PermissionAnswer::RejectOnce
    }

    /// The editor's file system, when the client offers one; `None` means the local disk.
    fn client_fs(&self) -> Option<Arc<dyn ClientFs>> {
        None
    }

    /// The client's terminals, when offered; `None` means commands run as local processes.
    fn client_terminals(&self) -> Option<Arc<dyn ClientTerminals>> {
        None
    }

    /// The editor's own language servers (ACP's `lsp/*` extension), when the client offers
    /// them: navigation asks them first (`crate::editor_lsp`).
    fn editor_language_server(&self) -> Option<Arc<dyn crate::editor_lsp::EditorLanguageServer>> {
        None
    }
}
