//! The tools' door to the front end of a turn ([`ToolHost`]): a sink for what a running tool
//! shows, and optionally the editor's own file system, terminals and language servers (ACP
//! `fs/*`, `terminal/*`, `lsp/*`). The agent adapts its session host to it; tools never ask for
//! permission and never know which protocol is on the other side.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde::{Deserialize, Serialize};

use crate::editor_lsp::EditorLanguageServer;
use crate::event::{PlanEntry, ToolCallUpdate};

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

/// What a running tool shows before it returns.
#[derive(Debug, Clone, PartialEq)]
pub enum ToolEvent {
    /// Progress of the running call (e.g. the client terminal its output lives in).
    Updated(ToolCallUpdate),
    /// The full current plan (replaces any earlier one).
    Plan(Vec<PlanEntry>),
}

/// The front end as a running tool sees it.
pub trait ToolHost: Send + Sync {
    /// Delivers an event. Must not block.
    fn emit(&self, event: ToolEvent);

    /// The editor's file system, when the client offers one; `None` means the local disk.
    fn client_fs(&self) -> Option<Arc<dyn ClientFs>> {
        None
    }

    /// The client's terminals, when offered; `None` means commands run as local processes.
    fn client_terminals(&self) -> Option<Arc<dyn ClientTerminals>> {
        None
    }

    /// The editor's own language servers, when the client offers them: navigation asks them
    /// first (`crate::editor_lsp`).
    fn editor_language_server(&self) -> Option<Arc<dyn EditorLanguageServer>> {
        None
    }
}
