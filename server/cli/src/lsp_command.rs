//! `lode lsp`: lode as a language server over stdio. Wires the command-line options into
//! `lode_lsp` and maps how the session ended to the exit code (0 after `shutdown`, 1 otherwise).

use std::process::ExitCode;
use std::time::Duration;

use anyhow::Context;
use clap::Args;
use lode_lsp::{ServerOptions, SessionEnd};

use crate::commands::{WorkspaceArgs, scan_options};

/// Options of `lode lsp`.
#[derive(Debug, Args)]
pub struct LspArgs {
    /// Accepted for editors that pass it; stdio is the only transport.
    #[arg(long)]
    pub stdio: bool,
    /// Do not watch the workspace for files changed outside the editor.
    #[arg(long)]
    pub no_watch: bool,
    /// Milliseconds a buffer must be quiet before its unsaved text is re-indexed.
    #[arg(long, value_name = "MS", default_value_t = 300)]
    pub debounce_ms: u64,
    /// Largest accepted message in bytes; larger ones are answered with an error and dropped.
    #[arg(long, value_name = "BYTES", default_value_t = lode_lsp::framing::DEFAULT_MAX_MESSAGE_BYTES)]
    pub max_message_bytes: usize,
    /// Milliseconds definition and references wait for the file's language server (pyright,
    /// rust-analyzer, … as `[lsp.diagnostics]` configures) before answering by name from the
    /// index; 0: always by name.
    #[arg(long, value_name = "MS", default_value_t = lode_lsp::server::DEFAULT_NAVIGATION_DEADLINE.as_millis() as u64)]
    pub navigation_timeout_ms: u64,
}

/// `[lsp.diagnostics]` for the code actions' agent, read once the workspace root is known.
fn diagnostics_settings(config_file: Option<std::path::PathBuf>) -> lode_lsp::DiagnosticsSettings {
    lode_lsp::DiagnosticsSettings(std::sync::Arc::new(move |root: &std::path::Path| {
        crate::diagnostics_adapter::config_for(root, config_file.as_deref())
            .map_err(|error| error.to_string())
    }))
}

pub fn run_lsp(workspace: &WorkspaceArgs, args: LspArgs) -> anyhow::Result<ExitCode> {
    let root = match &workspace.root {
        Some(root) => Some(
            std::fs::canonicalize(root)
                .with_context(|| format!("workspace root {}", root.display()))?,
        ),
        None => None,
    };
    let options = ServerOptions {
        root,
        index_dir: workspace.index_dir.clone(),
        scan: scan_options(workspace),
        debounce: Duration::from_millis(args.debounce_ms),
        watch: !args.no_watch,
        max_message_bytes: args.max_message_bytes,
        embedder: crate::semantic_cli::embedder(&workspace.embedding)?,
        config_file: workspace.config.clone(),
        diagnostics: Some(diagnostics_settings(workspace.config.clone())),
        sandbox_launcher: crate::sandbox_command::launcher(),
        navigation_deadline: (args.navigation_timeout_ms > 0)
            .then(|| Duration::from_millis(args.navigation_timeout_ms)),
    };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .thread_name("lode-lsp")
        .build()
        .context("cannot start the async runtime")?;
    let end = runtime.block_on(lode_lsp::serve_stdio(options));
    // A read of stdin may still be parked on a blocking thread: do not wait for it.
    runtime.shutdown_timeout(Duration::from_millis(200));
    Ok(match end {
        SessionEnd::Clean => ExitCode::SUCCESS,
        SessionEnd::Abrupt => ExitCode::from(1),
    })
}
