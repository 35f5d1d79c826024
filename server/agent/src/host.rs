//! What a front end offers the agent during a turn: a sink for events, someone to ask for
//! permission, and optionally the editor's own file system and terminals (ACP `fs/*`,
//! `terminal/*`). The agent never knows which protocol is on the other side.

use std::sync::Arc;

use serde::{Deserialize, Serialize};

use lode_tools::editor_lsp::EditorLanguageServer;
use lode_tools::host::{ClientFs, ClientTerminals, ToolEvent, ToolHost};

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
    pub subject_kind: lode_policy::SubjectKind,
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
    /// them: navigation asks them first (`lode_tools::editor_lsp`).
    fn editor_language_server(&self) -> Option<Arc<dyn EditorLanguageServer>> {
        None
    }
}

/// What the tools see of a session's host ([`ToolHost`]): its events, file system, terminals and
/// language servers, never its permission questions.
pub fn tool_host(host: Arc<dyn SessionHost>) -> Arc<dyn ToolHost> {
    Arc::new(SessionToolHost(host))
}

struct SessionToolHost(Arc<dyn SessionHost>);

impl ToolHost for SessionToolHost {
    fn emit(&self, event: ToolEvent) {
        self.0.emit(match event {
            ToolEvent::Updated(update) => AgentEvent::ToolCallUpdated(update),
            ToolEvent::Plan(entries) => AgentEvent::Plan { entries },
        });
    }

    fn client_fs(&self) -> Option<Arc<dyn ClientFs>> {
        self.0.client_fs()
    }

    fn client_terminals(&self) -> Option<Arc<dyn ClientTerminals>> {
        self.0.client_terminals()
    }

    fn editor_language_server(&self) -> Option<Arc<dyn EditorLanguageServer>> {
        self.0.editor_language_server()
    }
}
