//! `lode watch`: keeps a workspace's index current from file-system events, in the foreground,
//! and holds the index's watch lease so query commands skip their freshness check (they ask
//! the watcher to flush instead). Also the shared wiring `lode acp` uses for its own watcher.

use std::process::ExitCode;
use std::sync::Arc;

use anyhow::Context;
use lode_index::{
    LeaseError, WatchError, WatchEvent, WatchOptions, Watcher, Workspace, WorkspaceSink,
};

use crate::commands::WorkspaceArgs;
use crate::render::say;

/// Starts a watcher keeping `workspace` current, holding the lease as `who` and logging what
/// it does (verbose: every batch and flush at `info`, else at `debug`).
pub fn start_watcher(
    workspace: Arc<Workspace>,
    who: &'static str,
    verbose: bool,
    require_lease: bool,
) -> Result<Watcher, WatchError> {
    let mut options = WatchOptions::for_workspace(&workspace);
    options.require_lease = require_lease;
    options.holder = who.strip_prefix("lode ").unwrap_or(who);
    options.queries = Some(workspace.clone());
    options.log = Box::new(move |event| log_event(verbose, event));
    Watcher::start(options, Box::new(WorkspaceSink(workspace)))
}

pub(crate) fn log_event(verbose: bool, event: WatchEvent) {
    match event {
        WatchEvent::Applied {
            paths,
            report,
            elapsed,
        } => {
            let stats = &report.stats;
            let how = if report.rescanned {
                if stats.walked {
                    "refreshed (walked the tree)"
                } else {
                    "refreshed (checked every known file)"
                }
            } else {
                "updated"
            };
            let line = format!(
                "{how}: {paths} changed paths, {} parsed, {} removed, {} unchanged, {} ignored in {:.1} ms",
                stats.parsed,
                stats.removed,
                stats.unchanged,
                report.ignored,
                elapsed.as_secs_f64() * 1000.0
            );
            if verbose || stats.parsed + stats.removed > 0 || report.rescanned {
                tracing::info!("{line}");
            } else {
                tracing::debug!("{line}");
            }
        }
        WatchEvent::Flushed { applied, elapsed } => {
            let line = format!(
                "answered a flush ({applied} paths applied) in {:.1} ms",
                elapsed.as_secs_f64() * 1000.0
            );
            if verbose {
                tracing::info!("{line}");
            } else {
                tracing::debug!("{line}");
            }
        }
        WatchEvent::Indexed { stats, elapsed } => tracing::info!(
            "indexed for `lode index`: {} files, {} parsed, {} removed, {} unchanged in {:.1} ms",
            stats.files,
            stats.parsed,
            stats.removed,
            stats.unchanged,
            elapsed.as_secs_f64() * 1000.0
        ),
        WatchEvent::Error(message) => tracing::warn!("{message}"),
    }
}

pub fn run_watch(
    args: &WorkspaceArgs,
    path: Option<&std::path::Path>,
    verbose: bool,
) -> anyhow::Result<ExitCode> {
    let workspace = Arc::new(crate::commands::open(args, path)?);
    let root = workspace.root().display().to_string();
    let watcher = match start_watcher(workspace.clone(), "lode watch", verbose, true) {
        Ok(watcher) => watcher,
        Err(WatchError::Lease(error @ LeaseError::AlreadyWatched { .. })) => {
            anyhow::bail!("{error}")
        }
        Err(error) => return Err(error).context(format!("cannot watch {root}")),
    };
    say!(
        "lode watch: keeping the index of {root} current (socket {}); Ctrl-C to stop",
        watcher
            .socket()
            .map_or_else(|| "none".into(), |socket| socket.display().to_string())
    );
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("cannot start the async runtime")?;
    runtime.block_on(async {
        let mut terminate =
            tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
                .context("cannot listen for SIGTERM")?;
        tokio::select! {
            result = tokio::signal::ctrl_c() => result.context("cannot listen for Ctrl-C")?,
            _ = terminate.recv() => {}
        }
        anyhow::Ok(())
    })?;
    drop(watcher);
    say!("lode watch: stopped");
    Ok(ExitCode::SUCCESS)
}
