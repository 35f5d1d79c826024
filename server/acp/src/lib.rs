//! lode over the Agent Client Protocol: maps ACP sessions onto agent sessions and agent events onto
//! `session/update`s, over stdio and over HTTP/WebSocket.
//!
//! An adapter only: no business logic lives here, and it must not reach into the index directly.
//!
//! - [`backend`] — the narrow trait the adapter needs from the agent ([`AgentBackend`]);
//!   `agent_backend` implements it for `lode_agent::Agent`.
//! - [`mapping`] — pure translations between agent and ACP shapes.
//! - `client_host` — the agent's `SessionHost` for a turn: updates, permissions, client fs and
//!   terminals.
//! - `connection` — one ACP v1 connection and its method handlers.
//! - [`auth`] — the `authMethods` of `initialize` (API keys in environment variables) and the
//!   `authenticate` check.
//! - [`ext_diagnostics`] — the `_lode/diagnostics` extension notification (editor-pushed
//!   diagnostics).
//! - [`ext_lsp`] — the ACP LSP extension (`lsp/*`): the editor's language servers as the
//!   agent's first navigation provider, and its pushed diagnostics and saves.
//! - [`workspaces`] — sessions in the workspaces their `cwd`s name: one backend routing to a
//!   set of open workspaces, each its own agent.
//! - [`transport`] — stdio and HTTP/WebSocket; `http_guard` — the Host, Origin and bearer-token
//!   checks of every HTTP request; [`token_file`] — the generated token and where it is kept.

mod agent_backend;
pub mod auth;
pub mod backend;
mod client_host;
mod connection;
pub mod ext_diagnostics;
pub mod ext_lsp;
mod ext_lsp_handlers;
mod http_guard;
pub mod mapping;
pub mod token_file;
pub mod transport;
pub mod workspaces;

pub use backend::{
    AgentBackend, BackendError, MODES, McpServerSpec, ModeInfo, PromptInput, SessionSummary,
    SlashCommandInfo,
};
pub use connection::{ConnectionOptions, agent_connection};
pub use transport::{
    HttpOptions, MAX_MESSAGE_BYTES, TransportError, bind_http, http_router, serve_http,
    serve_lines, serve_stdio,
};
pub use workspaces::{OpenWorkspace, WorkspaceOpener, Workspaces};
