//! What the agent and a turn share, so that a turn (`crate::turn`) and the slash commands
//! (`crate::turn_commands`) never reach back into the [`crate::Agent`] that runs them: the types of
//! the agent's API that a turn takes and returns ([`SessionInfo`], [`UserInput`], [`AgentError`],
//! [`SlashCommand`]) and the configuration-dependent state one workspace's sessions share
//! ([`Shared`]).

use parking_lot::Mutex;
use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;

use chrono::{DateTime, Utc};
use lode_index::Workspace;
use lode_llm::Provider;
use lode_policy::{Mode, PermissionPolicy};
use lode_tools::ToolRegistry;
use serde::{Deserialize, Serialize};

use crate::audit::AuditLog;
use crate::config::{Config, ConfigError};
use crate::mcp::McpServerConfig;
use crate::store::{SessionStore, StoreError};

/// Why an agent operation failed. Tool failures are not errors: they go back to the model.
#[derive(Debug, thiserror::Error)]
pub enum AgentError {
    #[error(transparent)]
    Config(#[from] ConfigError),
    #[error("cannot open the code index: {0}")]
    Index(#[from] lode_index::IndexError),
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error("{0}")]
    Provider(String),
    /// No LLM provider is configured (an agent opened with
    /// [`crate::AgentOptions::allow_no_provider`]); the message says where and how to add one.
    #[error("{0}")]
    NoProvider(String),
    /// The model's context window cannot hold even lode's smallest request; the message says
    /// what it needs and what to change.
    #[error("{0}")]
    ContextTooSmall(String),
    #[error("no session with id {0}")]
    NoSuchSession(String),
    #[error("session {0} is already running a turn; cancel it or wait")]
    Busy(String),
    #[error("unknown model {name:?}; configured: {available}")]
    UnknownModel { name: String, available: String },
    #[error("{0}")]
    Other(String),
}

/// A session as front ends list it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SessionInfo {
    pub id: String,
    pub title: Option<String>,
    pub cwd: PathBuf,
    pub mode: Mode,
    /// The configured provider name the session uses.
    pub model: String,
    pub updated_at: DateTime<Utc>,
}

/// One piece of what the user sent.
#[derive(Debug, Clone, PartialEq)]
pub enum UserInput {
    Text(String),
    Image {
        mime_type: String,
        data: String,
    },
    /// A link to a file or resource; `file://` links inside the workspace are read and included.
    ResourceLink {
        uri: String,
        name: String,
    },
    /// Content the client embedded (an editor selection, an open buffer).
    Resource {
        uri: String,
        text: Option<String>,
        mime_type: Option<String>,
    },
}

/// A command lode handles itself when a prompt starts with `/name`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SlashCommand {
    pub name: String,
    pub description: String,
    pub input_hint: Option<String>,
}

/// Everything one workspace's sessions share.
pub(crate) struct Shared {
    pub root: PathBuf,
    pub config: Config,
    pub config_files: Vec<PathBuf>,
    pub providers: NamedProviders,
    /// Why `providers` is empty (only with [`crate::AgentOptions::allow_no_provider`]).
    pub no_provider: Option<String>,
    /// The provider taken from the environment because none is configured.
    pub detected: Option<lode_llm::DetectedProvider>,
    pub index: Arc<Workspace>,
    /// The repo maps and retrievals of the index's current generation (`crate::code_cache`).
    pub code_cache: Arc<crate::code_cache::CodeCache>,
    pub store: Arc<SessionStore>,
    pub policy: PermissionPolicy,
    pub audit: Arc<AuditLog>,
    pub tools: Arc<ToolRegistry>,
    /// Where edits' diagnostics come from: the editor's pushed ones first, then the configured
    /// source (`lode_tools::pushed_diagnostics::PushedFirst`).
    pub diagnostics: Option<Arc<dyn lode_tools::diagnostics::DiagnosticsSource>>,
    /// Skills, long-term memory and MCP servers.
    pub extensions: crate::extensions::Extensions,
    /// MCP servers a client passed for a session (`session/new`), connected on its first turn.
    pub mcp_servers: Arc<Mutex<HashMap<String, Vec<McpServerConfig>>>>,
    /// How commands run: confined through the launcher, or (unavailable, off) asked about.
    pub sandbox: Arc<lode_sandbox::Sandbox>,
    /// Sessions already told that commands run unconfined.
    pub told_unconfined: Arc<Mutex<std::collections::HashSet<String>>>,
    /// Settings of the untrusted workspace config that are not applied (see `crate::trust`).
    pub untrusted_ignored: Vec<String>,
}

impl Shared {
    /// The session's prune mark, kept in the store from turn to turn (and process to process)
    /// so the pruned history stays the same until the next block is pruned. A store that cannot
    /// say starts from nothing pruned (one request's cache is lost, nothing else).
    pub fn prune_mark(&self, session_id: &str) -> crate::compaction::PruneMark {
        match self.store.prune_mark(session_id) {
            Ok((results_before, contexts_before)) => crate::compaction::PruneMark {
                results_before,
                contexts_before,
            },
            Err(error) => {
                tracing::warn!(%error, "could not read where the session's history is pruned");
                crate::compaction::PruneMark::default()
            }
        }
    }

    pub fn set_prune_mark(&self, session_id: &str, mark: crate::compaction::PruneMark) {
        if let Err(error) =
            self.store
                .set_prune_mark(session_id, mark.results_before, mark.contexts_before)
        {
            tracing::warn!(%error, "could not record where the session's history is pruned");
        }
    }
}

/// The configured providers by name, the default first.
pub(crate) type NamedProviders = Vec<(String, Arc<dyn Provider>)>;

/// A mode by its exact name (`ask`, `code`, `architect`), surrounding whitespace ignored.
pub(crate) fn parse_mode(text: &str) -> Option<Mode> {
    Mode::ALL
        .into_iter()
        .find(|mode| mode.as_str() == text.trim())
}
