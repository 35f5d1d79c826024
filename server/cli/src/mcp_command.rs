//! `lode mcp`: lode's code intelligence (search, map, symbols, references, read_file; hover,
//! definition, call_hierarchy and references by symbol through the language servers, see
//! `mcp_navigation`; with `--allow-edits` the edits by symbol and rename) as an MCP server on
//! stdio, for other agents (Claude Code, Codex, Zed, ...). Opens the workspace like the query
//! commands and hands it to `lode_mcp`; stdout is the protocol.

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
    /// insert_after_symbol, rename). They change files inside the workspace only, never under
    /// .git/ or .lode/, and ask nobody: allow them only for a client you trust to edit.
    #[arg(long)]
    pub allow_edits: bool,
}

pub fn run_mcp(workspace: &WorkspaceArgs, args: McpArgs) -> anyhow::Result<ExitCode> {
    let opened = Arc::new(crate::commands::open(workspace, None)?);
    let root = opened.root().to_path_buf();
    tracing::info!("serving {} on stdio", root.display());
    // The language servers of `[lsp.diagnostics]`, started when a file of their language is
    // first asked about; a section that cannot be read leaves the index to answer.
    let source = match crate::diagnostics_adapter::sources_for(&root, workspace.config.as_deref()) {
        Ok(sources) => sources.map(|sources| sources.navigation),
        Err(error) => {
            tracing::warn!("navigation answers from the index only: {error:#}");
            None
        }
    };
    let navigator = crate::mcp_navigation::McpNavigator::new(opened.clone(), source);
    let options = lode_mcp::ServerOptions {
        refresh: !args.no_refresh,
        max_message_bytes: args.max_message_bytes.max(1024),
        allow_edits: args.allow_edits,
        navigator: Some(Arc::new(navigator)),
    };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .thread_name("lode-mcp")
        .build()
        .context("cannot start the async runtime")?;
    let outcome = runtime.block_on(lode_mcp::serve_stdio(opened, options));
    // A read of stdin may still be parked on a blocking thread, and a background refresh may
    // still run (the index is crash-safe): do not wait for either.
    runtime.shutdown_timeout(Duration::from_millis(200));
    outcome?;
    Ok(ExitCode::SUCCESS)
}
