//! lode as a language server (`lode lsp`): live buffers into the shared index, symbols,
//! definitions and references from it, and agent actions as code actions.
//!
//! An adapter: it translates LSP into calls on the index and the agent and holds no business logic.
