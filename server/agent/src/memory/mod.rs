//! Long-term memory: what the agent keeps across sessions. This module owns the per-user store
//! (`store`: SQLite with exact hybrid search, secrets redacted before anything is written), how
//! recalled memories are shown to the model ([`render_memories`]), and the `memory_save` /
//! `memory_search` tools (`tools`).
//!
//! The loop calls [`MemoryStore::recall`] with the user's message each turn and puts
//! [`memory_texts`] of the result into the context, and calls
//! [`MemoryStore::save_session_summary`] when a session ends.

mod render;
pub mod store;
pub mod tools;

pub use render::{memory_texts, render_memories, render_memory};
pub use store::{
    MAX_MEMORY_CHARS, MAX_SUMMARY_CHARS, Memory, MemoryError, MemoryKind, MemoryScope,
    MemorySettings, MemorySource, MemoryStore, NewMemory, ScoredMemory, default_memory_path,
    estimate_tokens,
};
pub use tools::{MemorySaveTool, MemorySearchTool};
