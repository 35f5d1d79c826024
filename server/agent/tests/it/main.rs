//! lode-agent's integration tests: the turn loop against scripted providers, context and
//! compaction, sessions and their store, permissions, trust, skills, memory, MCP, diagnostics.
//! One test binary (`cargo test -p lode-agent --test it`), one module per suite; `common` is
//! what the suites share.

mod common;

mod agent_loop;
mod agent_scenarios;
mod config;
mod context;
mod context_reuse;
mod detect_provider;
mod diagnostics;
mod embedding_floor;
mod history_in_memory;
mod mcp;
mod mcp_reference;
mod memory;
mod no_provider;
mod permissions;
mod pushed_diagnostics;
mod requests;
mod secrets_at_rest;
mod skill_grants;
mod skills;
mod store;
mod untrusted;
