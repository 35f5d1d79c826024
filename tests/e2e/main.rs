//! The `lode` binary end to end: one test binary (`cargo test -p lode --test e2e`), one module per
//! suite. A suite was once a test binary of its own, each linking the whole workspace; one
//! binary links it once. Run one suite with its module path: `cargo test -p lode --test e2e --
//! acp_stdio::`.
//!
//! The suites share one process: a suite never changes process-wide state (environment
//! variables, the current directory, signal handlers); what a child process needs it gets on its
//! command line or in its own environment.

// What the suites share.
mod acp_support;
mod canary;
mod lsp_support;
#[path = "../../server/qdrant/tests/it/real_server/mod.rs"]
mod real_server;
mod support;

// The suites, one per former test binary.
mod acp_acpx;
mod acp_ask;
mod acp_diagnostics;
mod acp_first_prompt;
mod acp_http;
mod acp_http_security;
mod acp_idle;
mod acp_lsp;
mod acp_registry;
mod acp_rename;
mod acp_stdio;
mod acp_ts_sdk;
mod acp_wire;
mod acp_workspaces;
mod agent_chat;
mod agent_diagnostics_cli;
mod agent_navigation;
mod agent_run;
mod cli_commands;
mod crash_safety;
mod daemon;
mod doctor;
mod languages;
mod llm_script_command;
mod local_model;
mod logging;
mod lsp_actions;
mod lsp_live;
mod lsp_navigation;
mod lsp_neovim;
mod lsp_server;
mod mcp_edits;
mod mcp_navigation;
mod mcp_server;
mod qdrant_cli;
mod readme;
mod redteam;
mod sandbox_agent;
mod sandbox_escape;
mod watch;
mod workspace_trust;
mod zero_config;

/// Nothing in tests/e2e/ is discovered by cargo: a suite file this file does not name as a
/// module would never be compiled nor run.
#[test]
fn every_suite_is_a_module() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/e2e");
    let main = include_str!("main.rs");
    let mut missing = Vec::new();
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        let name = if path.extension().is_some_and(|ext| ext == "rs") {
            path.file_stem().unwrap().to_string_lossy().into_owned()
        } else if path.join("mod.rs").is_file() {
            path.file_name().unwrap().to_string_lossy().into_owned()
        } else {
            continue;
        };
        if name != "main" && !main.lines().any(|line| line == format!("mod {name};")) {
            missing.push(name);
        }
    }
    assert!(
        missing.is_empty(),
        "not modules of tests/e2e/main.rs: {missing:?}"
    );
}
