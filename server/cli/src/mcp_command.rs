//! `lode mcp`: lode's code intelligence (search, map, symbols, references, read_file; with
//! `--allow-edits` the edits by symbol) as an MCP server on stdio, for other agents (Claude
//! Code, Codex, Zed, ...). Opens the workspace
//! like the query commands and hands it to `lode_mcp`; stdout is the protocol.

use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use clap::Args;

use crate::commands::WorkspaceArgs;

/// Options of `lode mcp`.
#[derive(Debug, Args)]
pub struct McpArgs {
    /// Answer from the index as it is, without bringing it up to date before each call.
    #[arg(long)]
    pub no_refresh: bool,
    /// Largest accepted message in bytes; larger ones are answered with an error and dropped.
    #[arg(long, value_name = "BYTES", default_value_t = lode_mcp::DEFAULT_MAX_MESSAGE_BYTES)]
    pub max_message_bytes: usize,
    /// Also offer the edit tools (replace_symbol_body, insert_before_symbol,
    /// insert_after_symbol). They change files inside the workspace only, never under .git/ or
    /// .lode/, and ask nobody: allow them only for a client you trust to edit.
    #[arg(long)]
    pub allow_edits: bool,
}

pub fn run_mcp(workspace: &WorkspaceArgs, args: McpArgs) -> anyhow::Result<ExitCode> {
    let opened = crate::commands::open(workspace, None)?;
    eprintln!("lode mcp: serving {} on stdio", opened.root().display());
    let options = lode_mcp::ServerOptions {
        refresh: !args.no_refresh,
        max_message_bytes: args.max_message_bytes.max(1024),
        allow_edits: args.allow_edits,
    };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .thread_name("lode-mcp")
        .build()
        .context("cannot start the async runtime")?;
    let outcome = runtime.block_on(lode_mcp::serve_stdio(Arc::new(opened), options));
    // A read of stdin may still be parked on a blocking thread, and a background refresh may
    // still run (the index is crash-safe): do not wait for either.
    runtime.shutdown_timeout(Duration::from_millis(200));
    outcome?;
    Ok(ExitCode::SUCCESS)
}
