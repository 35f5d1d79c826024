//! lode's agent: the loop that runs behind every editor session.
//!
//! This crate owns LLM providers (`llm`), the tools the model calls (`tools`), the permission
//! policy (`permission`), context assembly, sessions and their storage, and the events a turn
//! emits (`event`). It reaches the code index through `lode_index::Workspace` and the front end
//! through `host::SessionHost`.
//!
//! It must not know about ACP, LSP, JSON-RPC or terminals: the `acp`, `lsp` and `cli` crates adapt
//! [`event::AgentEvent`]s and [`host::SessionHost`] to their protocol.

pub mod actions;
pub mod agent;
pub mod audit;
mod code_cache;
pub mod compaction;
pub mod config;
pub mod context;
pub mod diagnostics;
pub mod doom_loop;
pub mod editor_lsp;
pub mod event;
pub mod extensions;
pub mod host;
pub mod llm;
pub mod mcp;
pub mod memory;
pub mod navigation;
pub mod permission;
pub mod pushed_diagnostics;
pub mod redact;
pub mod skills;
pub mod slash;
pub mod step;
pub mod store;
pub mod tools;
pub mod trust;
mod turn;
mod turn_commands;
pub mod untrusted;

pub use agent::{
    Agent, AgentError, AgentOptions, ProviderEnv, SessionInfo, SlashCommand, UserInput,
    configured_models, sandbox_for,
};
