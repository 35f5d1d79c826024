//! `lode index`: brings the index up to date with a full walk of the tree.
//!
//! Only one process writes an index at a time. When a process keeps the index — the lease
//! holder: a `lode daemon` a query started, `lode watch`, `lode lsp`, `lode acp` — it is the one
//! writing it, so it is asked to do the walk (the lease protocol's `index` request) and this
//! command waits for it, showing its progress on a terminal, then prints the summary it prints
//! when it indexes itself. Otherwise it indexes here, waiting for another writer to finish.
//! It fails only when the holder says nothing, or the other writer does not finish, within
//! [`DEFAULT_WAIT`] (`LODE_INDEX_WAIT_SECS`), naming the process and how to stop it.

use std::path::Path;
use std::process::ExitCode;
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use indicatif::ProgressBar;
use lode_index::{
    IndexError, IndexPhase, IndexProgress, Indexed, LeaseInfo, NotIndexed, NotWatched, RefreshMode,
    RefreshStats, Workspace, index_through_lease, read_lease, stop_lease,
};

use crate::commands::{Needs, WorkspaceArgs};
use crate::output::spinner;
use crate::render::say;

/// How long `lode index` waits for a lease holder that reports nothing (it reports at least
/// every second while it works), or for another process writing the index to finish.
pub const DEFAULT_WAIT: Duration = Duration::from_secs(30);

/// The variable that sets that wait, in whole seconds.
pub const WAIT_VARIABLE: &str = "LODE_INDEX_WAIT_SECS";

/// Pause between two attempts while another process writes the index.
const RETRY_PAUSE: Duration = Duration::from_millis(100);

pub fn run_index(
    args: &WorkspaceArgs,
    path: Option<&Path>,
    verbose: bool,
) -> anyhow::Result<ExitCode> {
    let root = crate::commands::resolve_root(args, path)?;
    let root = std::fs::canonicalize(&root)
        .with_context(|| format!("cannot resolve {}", root.display()))?;
    let index_dir = crate::served::index_dir_of(args, &root);
    let (settings, embedder) = crate::served::settings_of(args)?;
    let patience = wait_bound()?;
    let started = Instant::now();
    let deadline = started + patience;
    let mut said_other_settings = false;
    let mut workspace: Option<Workspace> = None;
    loop {
        if let Some(indexed) = through_holder(
            &index_dir,
            &settings,
            patience,
            verbose,
            &mut said_other_settings,
        )? {
            report(&indexed, started.elapsed(), verbose);
            return Ok(ExitCode::SUCCESS);
        }
        // Nobody keeps the index (or not with these settings): index here.
        let outcome = match &workspace {
            Some(open) => refresh_here(open),
            None => match crate::commands::open_for(
                args,
                Some(&root),
                Needs::Everything,
                Some(embedder.clone()),
            ) {
                Ok(opened) => refresh_here(workspace.insert(opened)),
                Err(error) => match locked_by(&error) {
                    Some(holder) => Err(IndexError::Locked {
                        path: index_dir.clone(),
                        holder,
                    }),
                    None => return Err(error),
                },
            },
        };
        match outcome {
            Ok(stats) => {
                let segments = workspace.as_ref().map(Workspace::lexical_segment_count);
                say!("{}", summary(&stats, started.elapsed().as_secs_f64()));
                if verbose {
                    print_details(&stats, segments);
                }
                return Ok(ExitCode::SUCCESS);
            }
            // Another process is writing; it may also be a holder that just started (a query
            // started a daemon): ask again, until the wait is over.
            Err(IndexError::Locked { .. }) if Instant::now() < deadline => {
                std::thread::sleep(RETRY_PAUSE);
            }
            Err(error @ IndexError::Locked { .. }) => bail!(
                "cannot index {}: {error}; waited {} s (set {WAIT_VARIABLE} to wait longer)",
                root.display(),
                patience.as_secs()
            ),
            Err(error) => {
                return Err(error).with_context(|| format!("cannot index {}", root.display()));
            }
        }
    }
}

/// The wait bound: [`WAIT_VARIABLE`] when set, else [`DEFAULT_WAIT`].
fn wait_bound() -> anyhow::Result<Duration> {
    match std::env::var(WAIT_VARIABLE) {
        Ok(value) if !value.is_empty() => value
            .parse::<u64>()
            .ok()
            .filter(|seconds| *seconds > 0)
            .map(Duration::from_secs)
            .with_context(|| format!("{WAIT_VARIABLE} must be a positive number of seconds")),
        _ => Ok(DEFAULT_WAIT),
    }
}

/// The writer named by an [`IndexError::Locked`] somewhere in `error`'s chain, if that is the
/// error (opening the index repairs under the writer lock too).
fn locked_by(error: &anyhow::Error) -> Option<Option<u32>> {
    error
        .chain()
        .find_map(|cause| match cause.downcast_ref::<IndexError>() {
            Some(IndexError::Locked { holder, .. }) => Some(*holder),
            _ => None,
        })
}

/// Asks the lease holder to index, showing its progress. `None`: nobody can be asked (no
/// holder, a dead one, a lease lode does not trust, or a holder with other settings — a
/// background daemon then is stopped, as it would undo this command's work), so the caller
/// indexes itself.
fn through_holder(
    index_dir: &Path,
    settings: &str,
    patience: Duration,
    verbose: bool,
    said_other_settings: &mut bool,
) -> anyhow::Result<Option<Indexed>> {
    let bar = spinner("asking the process that keeps this index");
    let lease = read_lease(index_dir).ok();
    let asked = index_through_lease(index_dir, settings, patience, &mut |step| {
        show(&bar, lease.as_ref(), step)
    });
    bar.finish_and_clear();
    let NotIndexed { lease, reason } = match asked {
        Ok(indexed) => return Ok(Some(indexed)),
        Err(not_indexed) => not_indexed,
    };
    let lease = lease.map(|lease| *lease);
    let who = describe(lease.as_ref());
    match reason {
        NotWatched::NoWatcher => Ok(None),
        NotWatched::Gone(_)
        | NotWatched::Untrusted(_)
        | NotWatched::Unreadable { .. }
        | NotWatched::Version { .. } => {
            if verbose {
                say!("lode: not indexed by a lease holder ({reason}); indexing here");
            }
            Ok(None)
        }
        NotWatched::Settings => {
            match lease.filter(|lease| lease.holder == "daemon") {
                Some(daemon) => stop_daemon(index_dir, &daemon),
                None if !*said_other_settings => {
                    *said_other_settings = true;
                    say!(
                        "lode: {who} keeps this index with other settings (exclusions, size cap, embedder or vector store); indexing here with yours"
                    );
                }
                None => {}
            }
            Ok(None)
        }
        NotWatched::Timeout(_) => bail!(
            "{who} keeps this index but said nothing for {} s (hung, or stopped?); {}, then run `lode index` again (set {WAIT_VARIABLE} to wait longer)",
            patience.as_secs(),
            how_to_stop(lease.as_ref())
        ),
        NotWatched::Failed(message) => {
            bail!("{who} keeps this index and could not bring it up to date: {message}")
        }
        NotWatched::Refused(reason) => {
            bail!("{who} keeps this index and refused to index it: {reason}")
        }
    }
}

/// A background daemon indexing with other settings would undo this command's work with its
/// next update: it is stopped (a query starts another, with its own settings, when needed).
fn stop_daemon(index_dir: &Path, daemon: &LeaseInfo) {
    let stopped = stop_lease(index_dir)
        .map_err(anyhow::Error::from)
        .and_then(|pid| crate::daemon_command::wait_until_released(index_dir, pid).map(|()| pid));
    match stopped {
        Ok(pid) => say!(
            "lode: stopped the background daemon (pid {pid}), which kept this index with other settings (exclusions, size cap, embedder or vector store); indexing here with yours"
        ),
        // Gone meanwhile, or hung: indexing here finds out (and waits for its writes).
        Err(error) => say!(
            "lode: could not stop the background daemon (pid {}), which keeps this index with other settings: {error:#}",
            daemon.pid
        ),
    }
}

/// `lode daemon (pid 4242)`, or `the process keeping this index` when the lease is unknown.
fn describe(lease: Option<&LeaseInfo>) -> String {
    match lease {
        Some(lease) => format!("lode {} (pid {})", lease.holder, lease.pid),
        None => "the process keeping this index".to_owned(),
    }
}

fn how_to_stop(lease: Option<&LeaseInfo>) -> String {
    match lease {
        Some(lease) if lease.holder == "daemon" => {
            format!("stop it with `lode daemon stop` or `kill {}`", lease.pid)
        }
        Some(lease) => format!("stop it where it runs, or with `kill {}`", lease.pid),
        None => "stop it".to_owned(),
    }
}

/// The holder's progress on the bar (hidden when stderr is not a terminal).
fn show(bar: &ProgressBar, lease: Option<&LeaseInfo>, step: IndexProgress) {
    let who = describe(lease);
    match (step.phase, step.total) {
        (IndexPhase::Waiting, _) => spin(bar, format!("waiting for {who} to finish an update")),
        // Started, nothing counted yet: the walk.
        (IndexPhase::Parse, 0) => spin(bar, format!("{who} is finding what changed")),
        (IndexPhase::Parse, _) => {
            if bar.message() != "indexing" {
                bar.set_style(crate::output::files_style());
                bar.set_message("indexing");
            }
        }
        (IndexPhase::Embed, _) => crate::semantic_cli::show_embedding(bar),
    }
    if step.total > 0 {
        bar.set_length(step.total as u64);
        bar.set_position(step.done as u64);
    }
}

/// A message with a spinner, for a wait with nothing to count.
fn spin(bar: &ProgressBar, message: String) {
    if bar.message() != message {
        bar.set_style(crate::output::waiting_style());
        bar.set_message(message);
    }
    bar.tick();
}

/// A full refresh in this process, with a progress bar.
fn refresh_here(workspace: &Workspace) -> Result<RefreshStats, IndexError> {
    crate::commands::with_progress_bar(workspace, |progress| {
        workspace.refresh_with(RefreshMode::Full, progress)
    })
}

/// What the holder did, as this command prints what it does itself.
fn report(indexed: &Indexed, elapsed: Duration, verbose: bool) {
    say!("{}", summary(&indexed.stats, elapsed.as_secs_f64()));
    if verbose {
        say!(
            "lode: indexed by lode {} (pid {}), which keeps this index",
            indexed.holder,
            indexed.holder_pid
        );
        print_details(&indexed.stats, indexed.lexical_segments);
    }
}

/// `--verbose`: where the time went, the lexical segments and the vectors.
fn print_details(stats: &RefreshStats, lexical_segments: Option<usize>) {
    for file in &stats.read_as_text {
        say!("read as plain text: {file}");
    }
    let t = stats.timings;
    say!(
        "phases: scan {:.3}s, parse and write {:.3}s, commit {:.3}s, embed {:.3}s, close {:.3}s",
        t.scan.as_secs_f64(),
        t.parse_and_write.as_secs_f64(),
        t.commit.as_secs_f64(),
        t.embed.as_secs_f64(),
        t.close.as_secs_f64()
    );
    if let Some(segments) = lexical_segments {
        say!("lexical index: {segments} segment(s)");
    }
    let v = stats.vectors;
    say!(
        "vectors: {} in the index; {} embedded, {} reused, {} dropped{}",
        stats.total_vectors,
        v.embedded,
        v.reused,
        v.deleted,
        if v.reset {
            " (every chunk: new index or new embedder)"
        } else {
            ""
        }
    );
}

/// The one summary line `lode index` ends with.
fn summary(stats: &RefreshStats, seconds: f64) -> String {
    let megabytes = stats.parsed_bytes as f64 / 1_000_000.0;
    format!(
        "indexed {} files ({} parsed, {} unchanged, {} removed, {} skipped): {} chunks, {} symbols, {} references; parsed {megabytes:.1} MB in {seconds:.2}s",
        stats.files,
        stats.parsed,
        stats.unchanged,
        stats.removed,
        stats.skipped_binary + stats.skipped_too_large + stats.unreadable,
        stats.total_chunks,
        stats.total_definitions,
        stats.total_references,
    )
}
