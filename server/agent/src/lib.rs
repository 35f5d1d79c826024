//! lode's agent: the loop that runs behind every editor session.
//!
//! This crate owns the turn loop, context assembly and compaction, sessions and their storage,
//! skills, memories, MCP wiring, workspace trust, and the events a turn emits (`event`). It drives
//! language models through `lode-llm`, runs the tools of `lode-tools` after the permission policy
//! of `lode-policy` allowed them, reaches the code index through `lode_index::Workspace` and the
//! front end through `host::SessionHost`.
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
pub mod doom_loop;
pub mod event;
pub mod extensions;
pub mod host;
mod indexing;
pub mod mcp;
pub mod memory;
pub mod redact;
mod session;
pub mod skills;
pub mod slash;
pub mod step;
pub mod store;
pub mod text_calls;
pub mod trust;
mod turn;
mod turn_commands;

pub use agent::{Agent, AgentOptions, ProviderEnv, configured_models, sandbox_for};
pub use session::{AgentError, SessionInfo, SlashCommand, UserInput};
