//! What the ACP adapter needs from the agent, as one narrow trait. The protocol side is written
//! against [`AgentBackend`]; `lode_agent::Agent` implements it in [`crate::agent_backend`]. Keeping
//! the seam here lets the adapter follow the agent's facade without reaching into it.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use lode_agent::event::{AgentEvent, StopReason};
use lode_agent::host::SessionHost;
use lode_llm::ModelInfo;
use tokio_util::sync::CancellationToken;

/// A stored session as the client sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SessionSummary {
    pub id: String,
    pub title: Option<String>,
    pub cwd: PathBuf,
    /// One of [`MODES`]' ids.
    pub mode: String,
    /// The configured provider name the session talks to.
    pub model: String,
    /// RFC 3339.
    pub updated_at: String,
}

/// A permission mode the agent offers: id, display name, description.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ModeInfo {
    pub id: &'static str,
    pub name: &'static str,
    pub description: &'static str,
}

/// lode's modes, in the order a picker shows them.
pub const MODES: [ModeInfo; 3] = [
    ModeInfo {
        id: "ask",
        name: "Ask",
        description: "Read-only: answers questions, searches and reads code, changes nothing",
    },
    ModeInfo {
        id: "code",
        name: "Code",
        description: "Reads, edits files and runs commands, asking before anything risky",
    },
    ModeInfo {
        id: "architect",
        name: "Architect",
        description: "Plans changes step by step without editing files",
    },
];

/// A slash command lode handles itself.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SlashCommandInfo {
    pub name: String,
    pub description: String,
    pub input_hint: Option<String>,
}

/// One part of a user prompt, already out of ACP's shapes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PromptInput {
    Text(String),
    Image {
        mime_type: String,
        data: String,
    },
    /// A link the agent resolves itself (a workspace file, read inside the workspace only).
    ResourceLink {
        uri: String,
        name: String,
    },
    /// Context the client embedded; `text` is `None` for binary contents.
    Resource {
        uri: String,
        text: Option<String>,
        mime_type: Option<String>,
    },
}

/// An MCP server the client asked the session to use.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum McpServerSpec {
    Stdio {
        name: String,
        command: PathBuf,
        args: Vec<String>,
        env: Vec<(String, String)>,
    },
    Http {
        name: String,
        url: String,
        headers: Vec<(String, String)>,
    },
}

/// Why the agent refused a call.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum BackendError {
    #[error("unknown session {0}")]
    SessionNotFound(String),
    #[error("{0}")]
    InvalidInput(String),
    /// The agent cannot work until the user sets it up (no LLM provider is configured); the
    /// message says how.
    #[error("{0}")]
    AuthRequired(String),
    #[error("{0}")]
    Internal(String),
}

/// The agent as the ACP adapter uses it. Every method but [`AgentBackend::prompt`] is quick.
#[async_trait::async_trait]
pub trait AgentBackend: Send + Sync + 'static {
    /// The models the user configured, for the `model` config option: those of the session's
    /// workspace, or with no session those of the workspace lode started in.
    fn models(&self, session_id: Option<&str>) -> Vec<ModelInfo>;
    /// Slash commands for `available_commands_update`.
    fn slash_commands(&self) -> Vec<SlashCommandInfo>;
    fn new_session(
        &self,
        cwd: PathBuf,
        mcp_servers: Vec<McpServerSpec>,
    ) -> Result<SessionSummary, BackendError>;
    /// The stored sessions; `cwd`, when the client names one, is where it is looking (a backend
    /// serving several workspaces includes that one's sessions). The caller filters by `cwd`.
    fn list_sessions(&self, cwd: Option<&Path>) -> Result<Vec<SessionSummary>, BackendError>;
    /// The session and its history, to replay as `session/update`s. `cwd` is the client's
    /// working directory for it (`session/load`'s).
    fn load_session(
        &self,
        id: &str,
        cwd: &Path,
    ) -> Result<(SessionSummary, Vec<AgentEvent>), BackendError>;
    /// The stored session, picked up again without a replay; `cwd` as for `load_session`.
    fn resume_session(&self, id: &str, cwd: &Path) -> Result<SessionSummary, BackendError>;
    /// Whether the user trusts the workspace of `cwd` (`lode trust`): remote clients may then
    /// pass MCP servers that run commands. Backends that cannot tell answer no; a `cwd` that
    /// cannot be a session's is an error.
    fn workspace_trusted(&self, cwd: &Path) -> Result<bool, BackendError> {
        let _ = cwd;
        Ok(false)
    }
    /// The MCP servers a client passes with `session/load` or `session/resume`: they join the
    /// session's tools from its next turn. Backends without MCP support have nothing to attach.
    fn attach_mcp_servers(
        &self,
        id: &str,
        servers: Vec<McpServerSpec>,
    ) -> Result<(), BackendError> {
        let _ = (id, servers);
        Ok(())
    }
    /// Lets go of what an idle session holds in memory (MCP server connections) without
    /// forgetting it: it stays stored and loadable, and picks up again on its next request.
    /// Refused (`false`) while a turn runs in it. Backends holding nothing have nothing to do.
    fn release_session(&self, id: &str) -> bool {
        let _ = id;
        true
    }
    fn close_session(&self, id: &str) -> Result<(), BackendError>;
    fn delete_session(&self, id: &str) -> Result<(), BackendError>;
    /// `mode` is one of [`MODES`]' ids.
    fn set_mode(&self, id: &str, mode: &str) -> Result<(), BackendError>;
    /// `provider` is a [`ModelInfo::provider`] name.
    fn set_model(&self, id: &str, provider: &str) -> Result<(), BackendError>;
    /// Diagnostics the editor pushed for one file (`_lode/diagnostics`), replacing what it
    /// pushed before for that file. `path` is absolute, positions 1-based; a file outside the
    /// workspace is ignored. Returns whether the file was accepted. Backends that cannot use
    /// them ignore them.
    fn push_diagnostics(
        &self,
        session_id: Option<&str>,
        path: PathBuf,
        diagnostics: Vec<lode_tools::diagnostics::Diagnostic>,
    ) -> bool {
        let _ = (session_id, path, diagnostics);
        false
    }
    /// The editor saved `path` (`_lsp/didSave`): the workspace holding it indexes it now.
    /// Returns whether a workspace took it. Blocking (it parses the file): call it off the
    /// handlers. Backends without an index ignore it.
    fn file_saved(&self, path: &Path) -> bool {
        let _ = path;
        false
    }

    /// Runs one turn; events go to `host`; returns when the turn ends or `cancel` fires.
    async fn prompt(
        &self,
        id: &str,
        input: Vec<PromptInput>,
        host: Arc<dyn SessionHost>,
        cancel: CancellationToken,
    ) -> Result<StopReason, BackendError>;
}
