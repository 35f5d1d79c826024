//! `lode daemon`: a background process that holds a workspace's lease, keeps its index current
//! from file-system events and answers `lode search`, `symbols`, `refs` and `map` from memory.
//!
//! The first query in a workspace over a size threshold starts one (after answering itself);
//! it exits after an idle timeout, when its workspace disappears, or on `lode daemon stop`.
//! `[index] daemon = "never"` (or `LODE_DAEMON=never`) keeps queries in their own process.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::{ExitCode, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use clap::{Args, Subcommand};
use lode_index::{
    LEASE_FILE, LeaseError, NotWatched, WatchError, WatchOptions, Watcher, WorkspaceSink,
    lease_status, read_lease, stop_lease,
};

use crate::commands::WorkspaceArgs;
use crate::render::say;
use lode_agent::config::DaemonMode;

/// The index's catalog: a daemon whose catalog is deleted has nothing left to serve.
const CATALOG_FILE: &str = "catalog.sqlite";

/// The daemon's log, in the index directory.
const LOG_FILE: &str = "daemon.log";

/// A log larger than this is started afresh when a daemon starts.
const MAX_LOG_BYTES: u64 = 1 << 20;

/// Present once the one-line notice about background daemons was shown for an index.
const NOTICE_MARKER: &str = "daemon-notice-shown";

/// How long `lode daemon start` waits for the new daemon to answer.
const START_PATIENCE: Duration = Duration::from_secs(30);

#[derive(Debug, Args)]
pub struct DaemonArgs {
    #[command(subcommand)]
    pub action: DaemonAction,
}

#[derive(Debug, Subcommand)]
pub enum DaemonAction {
    /// Start a background daemon for the workspace (a no-op when a process holds its index).
    Start,
    /// Which process holds the workspace's index (daemon, watch, lsp, acp) and how busy it is.
    Status {
        /// Print one JSON object.
        #[arg(long)]
        json: bool,
    },
    /// Stop the workspace's background daemon.
    Stop,
    /// Run the daemon in the foreground (what `start` runs in the background).
    #[command(hide = true)]
    Serve,
}

/// `[index]` settings about the daemon, with the environment's overrides applied.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DaemonSettings {
    /// Whether a query may start a daemon.
    pub auto: bool,
    pub min_files: usize,
    pub idle: Duration,
}

impl DaemonSettings {
    /// Reads `[index] daemon`, `daemon_min_files` and `daemon_idle_minutes` from the layered
    /// config, then `LODE_DAEMON`, `LODE_DAEMON_MIN_FILES` and `LODE_DAEMON_IDLE_SECS`.
    pub fn load(args: &WorkspaceArgs, root: &Path) -> anyhow::Result<DaemonSettings> {
        let loaded = lode_agent::config::Config::load(args.config.as_deref(), root)?;
        let index = &loaded.config.index;
        let mut settings = DaemonSettings {
            auto: index.daemon == DaemonMode::Auto,
            min_files: index.daemon_min_files,
            idle: Duration::from_secs(index.daemon_idle_minutes.saturating_mul(60)),
        };
        if let Some(mode) = env_value("LODE_DAEMON") {
            settings.auto = parse_mode(&mode).context("LODE_DAEMON")?;
        }
        if let Some(files) = env_value("LODE_DAEMON_MIN_FILES") {
            settings.min_files = files
                .parse()
                .context("LODE_DAEMON_MIN_FILES must be a non-negative integer")?;
        }
        if let Some(seconds) = env_value("LODE_DAEMON_IDLE_SECS") {
            let seconds: u64 = seconds
                .parse()
                .ok()
                .filter(|n| *n > 0)
                .context("LODE_DAEMON_IDLE_SECS must be a positive integer")?;
            settings.idle = Duration::from_secs(seconds);
        }
        Ok(settings)
    }
}

fn env_value(name: &str) -> Option<String> {
    std::env::var(name).ok().filter(|value| !value.is_empty())
}

fn parse_mode(text: &str) -> anyhow::Result<bool> {
    Ok(DaemonMode::parse(text).map_err(anyhow::Error::msg)? == DaemonMode::Auto)
}

pub fn run(args: &WorkspaceArgs, daemon: DaemonArgs) -> anyhow::Result<ExitCode> {
    let root = crate::commands::canonical_root(args)?;
    let index_dir = crate::served::index_dir_of(args, &root);
    match daemon.action {
        DaemonAction::Start => start(args, &root, &index_dir),
        DaemonAction::Status { json } => status(&root, &index_dir, json),
        DaemonAction::Stop => stop(&root, &index_dir),
        DaemonAction::Serve => serve(args, &root),
    }
}

fn start(args: &WorkspaceArgs, root: &Path, index_dir: &Path) -> anyhow::Result<ExitCode> {
    if let Ok((_, holder)) = lease_status(index_dir) {
        say!(
            "lode daemon: the index of {} is already kept by `lode {}` (pid {})",
            root.display(),
            holder.holder,
            holder.pid
        );
        return Ok(ExitCode::SUCCESS);
    }
    let idle = DaemonSettings::load(args, root)?.idle;
    let child = spawn(args, root, index_dir)?;
    let started = Instant::now();
    loop {
        match lease_status(index_dir) {
            Ok((_, holder)) => {
                say!(
                    "lode daemon: started (pid {}) for {}; it exits after {} idle (`lode daemon stop` stops it; log: {})",
                    holder.pid,
                    root.display(),
                    describe(idle),
                    index_dir.join(LOG_FILE).display()
                );
                return Ok(ExitCode::SUCCESS);
            }
            Err(_) if started.elapsed() > START_PATIENCE => bail!(
                "the daemon (pid {child}) did not answer within {START_PATIENCE:?}; see {}",
                index_dir.join(LOG_FILE).display()
            ),
            Err(_) => std::thread::sleep(Duration::from_millis(20)),
        }
    }
}

fn describe(duration: Duration) -> String {
    let seconds = duration.as_secs();
    if seconds.is_multiple_of(60) {
        format!("{} min", seconds / 60)
    } else {
        format!("{seconds} s")
    }
}

fn status(root: &Path, index_dir: &Path, json: bool) -> anyhow::Result<ExitCode> {
    match lease_status(index_dir) {
        Ok((_, holder)) => {
            if json {
                println!("{}", serde_json::to_string(&holder)?);
            } else {
                let idle = match holder.idle_timeout_secs {
                    Some(timeout) => format!(
                        "; idle {} s of {}",
                        holder.idle_secs,
                        describe(Duration::from_secs(timeout))
                    ),
                    None => format!("; idle {} s", holder.idle_secs),
                };
                println!(
                    "lode {} (pid {}, lode {}) keeps the index of {}: up {} s, {} requests answered{idle}",
                    holder.holder,
                    holder.pid,
                    holder.lode,
                    holder.root,
                    holder.uptime_secs,
                    holder.requests
                );
            }
            Ok(ExitCode::SUCCESS)
        }
        Err(reason) => {
            if json {
                println!(
                    "{}",
                    serde_json::json!({ "holder": null, "reason": reason.to_string() })
                );
            } else {
                println!(
                    "no process keeps the index of {} ({reason})",
                    root.display()
                );
            }
            Ok(ExitCode::from(crate::EXIT_NO_RESULTS))
        }
    }
}

fn stop(root: &Path, index_dir: &Path) -> anyhow::Result<ExitCode> {
    let pid = match stop_lease(index_dir) {
        Ok(pid) => pid,
        Err(NotWatched::NoWatcher | NotWatched::Gone(_)) => {
            say!("lode daemon: no daemon runs for {}", root.display());
            return Ok(ExitCode::from(crate::EXIT_NO_RESULTS));
        }
        Err(reason) => bail!("cannot stop the daemon of {}: {reason}", root.display()),
    };
    // Wait until it let go of the lease, so a `start` right after finds the place free.
    wait_until_released(index_dir, pid)?;
    say!("lode daemon: stopped (pid {pid})");
    Ok(ExitCode::SUCCESS)
}

/// Waits until the daemon `pid`, asked to stop, has let go of the lease of `index_dir`.
pub(crate) fn wait_until_released(index_dir: &Path, pid: u32) -> anyhow::Result<()> {
    let started = Instant::now();
    while read_lease(index_dir).is_ok_and(|info| info.pid == pid.to_string()) {
        if started.elapsed() > Duration::from_secs(10) {
            bail!("the daemon (pid {pid}) did not stop within 10 s");
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    Ok(())
}

/// Called by a query that answered itself because no process holds the index: starts a daemon
/// for the next queries when the workspace is large enough and the settings allow it. Never
/// fails the query; problems are reported on stderr.
pub fn maybe_start_for_queries(args: &WorkspaceArgs, root: &Path, index_dir: &Path, files: usize) {
    let settings = match DaemonSettings::load(args, root) {
        Ok(settings) => settings,
        Err(error) => {
            say!("lode: not starting a background daemon: {error:#}");
            return;
        }
    };
    if !settings.auto || files < settings.min_files {
        return;
    }
    match spawn(args, root, index_dir) {
        Ok(pid) => {
            let marker = index_dir.join(NOTICE_MARKER);
            if !marker.exists() {
                let _ = std::fs::write(&marker, b"");
                say!(
                    "lode: started a background daemon (pid {pid}) that keeps this index current and answers the next queries in milliseconds; it exits after {} idle. `lode daemon stop` stops it; [index] daemon = \"never\" or LODE_DAEMON=never turns this off.",
                    describe(settings.idle)
                );
            }
        }
        Err(error) => say!("lode: could not start a background daemon: {error:#}"),
    }
}

/// Starts `lode daemon serve` for `root` in the background: its own session (no terminal
/// signals reach it), stdin and stdout closed, stderr appended to the log in the index
/// directory. Returns its pid. Two of these racing is fine: the second finds the lease taken
/// and exits.
fn spawn(args: &WorkspaceArgs, root: &Path, index_dir: &Path) -> anyhow::Result<u32> {
    use std::os::unix::process::CommandExt;
    std::fs::create_dir_all(index_dir)
        .with_context(|| format!("cannot create {}", index_dir.display()))?;
    let log_path = index_dir.join(LOG_FILE);
    if std::fs::metadata(&log_path).is_ok_and(|m| m.len() > MAX_LOG_BYTES) {
        let _ = std::fs::remove_file(&log_path);
    }
    let log = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(&log_path)
        .with_context(|| format!("cannot open {}", log_path.display()))?;
    let exe = std::env::current_exe().context("cannot find the lode executable")?;
    let mut command = std::process::Command::new(exe);
    command
        .args(global_args(args, root))
        .args(["daemon", "serve"])
        .current_dir(root)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::from(log));
    // SAFETY: setsid is async-signal-safe and touches nothing of the parent; it runs in the
    // child between fork and exec.
    unsafe {
        command.pre_exec(|| {
            if libc::setsid() == -1 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    let child = command.spawn().context("cannot start lode daemon")?;
    Ok(child.id())
}

/// The global options that decide what the daemon indexes and how, as flags.
fn global_args(args: &WorkspaceArgs, root: &Path) -> Vec<OsString> {
    let mut out: Vec<OsString> = vec!["--root".into(), root.into()];
    let mut flag = |name: &str, value: OsString| {
        out.push(name.into());
        out.push(value);
    };
    if let Some(config) = &args.config {
        flag("--config", absolute(config).into());
    }
    if let Some(index_dir) = &args.index_dir {
        flag("--index-dir", absolute(index_dir).into());
    }
    for pattern in &args.exclude {
        flag("--exclude", pattern.into());
    }
    flag("--max-file-size", args.max_file_size.to_string().into());
    let embedding = &args.embedding;
    flag("--embedder", embedding.embedder.clone().into());
    if let Some(url) = &embedding.embed_url {
        flag("--embed-url", url.into());
    }
    if let Some(model) = &embedding.embed_model {
        flag("--embed-model", model.into());
    }
    if let Some(variable) = &embedding.embed_api_key_env {
        flag("--embed-api-key-env", variable.into());
    }
    if let Some(dimensions) = embedding.embed_dimensions {
        flag("--embed-dimensions", dimensions.to_string().into());
    }
    flag("--embed-batch", embedding.embed_batch.to_string().into());
    flag(
        "--embed-timeout",
        embedding.embed_timeout.to_string().into(),
    );
    if let Some(dir) = &embedding.minilm_dir {
        flag("--minilm-dir", absolute(dir).into());
    }
    let store = &args.vector_store;
    flag("--vectors", store.vectors.clone().into());
    flag("--qdrant-url", store.qdrant_url.clone().into());
    flag(
        "--qdrant-api-key-env",
        store.qdrant_api_key_env.clone().into(),
    );
    out
}

fn absolute(path: &Path) -> PathBuf {
    std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf())
}

/// The daemon itself: holds the lease (or exits quietly when another process does), keeps the
/// index current, answers queries, and exits when idle, stopped, signalled or orphaned.
fn serve(args: &WorkspaceArgs, root: &Path) -> anyhow::Result<ExitCode> {
    // Started by a query, which turned huge pages off for its short life.
    crate::startup::allow_huge_pages();
    let settings = DaemonSettings::load(args, root)?;
    let workspace = Arc::new(crate::commands::open(args, Some(root))?);
    let (stop_sender, stop_receiver) = std::sync::mpsc::channel::<&'static str>();
    let mut options = WatchOptions::for_workspace(&workspace);
    options.holder = "daemon";
    options.queries = Some(workspace.clone());
    options.idle_timeout = Some(settings.idle);
    let on_stop = parking_lot::Mutex::new(stop_sender.clone());
    options.on_stop = Some(Box::new(move || {
        let _ = on_stop.lock().send("lode daemon stop");
    }));
    options.log = Box::new(|event| crate::watch_command::log_event(false, event));
    let watcher = match Watcher::start(options, Box::new(WorkspaceSink(workspace.clone()))) {
        Ok(watcher) => watcher,
        Err(WatchError::Lease(LeaseError::AlreadyWatched { pid, .. })) => {
            log(&format!("process {pid} already keeps this index; exiting"));
            return Ok(ExitCode::SUCCESS);
        }
        Err(error) => return Err(error).context(format!("cannot watch {}", root.display())),
    };
    log(&format!(
        "serving {} (pid {}; exits after {} idle)",
        root.display(),
        std::process::id(),
        describe(settings.idle)
    ));
    spawn_signal_listener(stop_sender)?;
    let reason = loop {
        match stop_receiver.recv_timeout(Duration::from_secs(1)) {
            Ok(reason) => break reason.to_owned(),
            Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => break "no stopper".to_owned(),
            Err(std::sync::mpsc::RecvTimeoutError::Timeout) => {}
        }
        if watcher.idle_for() >= settings.idle {
            break format!("idle for {}", describe(settings.idle));
        }
        if !root.is_dir() {
            break "the workspace was removed".to_owned();
        }
        // A deleted workspace may leave directories behind (this daemon may have written into
        // them while they were being deleted), but never its catalog or lease file.
        let index_dir = workspace.index_dir();
        if !index_dir.join(CATALOG_FILE).exists() || !index_dir.join(LEASE_FILE).exists() {
            break "the index was removed".to_owned();
        }
    };
    drop(watcher);
    log(&format!("stopped: {reason}"));
    Ok(ExitCode::SUCCESS)
}

/// SIGTERM, SIGINT and SIGHUP stop the daemon cleanly (its lease is released on the way out).
fn spawn_signal_listener(stop: std::sync::mpsc::Sender<&'static str>) -> anyhow::Result<()> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("cannot start the async runtime")?;
    std::thread::Builder::new()
        .name("lode-daemon-signals".into())
        .spawn(move || {
            runtime.block_on(async move {
                use tokio::signal::unix::{SignalKind, signal};
                let (Ok(mut terminate), Ok(mut interrupt), Ok(mut hangup)) = (
                    signal(SignalKind::terminate()),
                    signal(SignalKind::interrupt()),
                    signal(SignalKind::hangup()),
                ) else {
                    return;
                };
                let reason = tokio::select! {
                    _ = terminate.recv() => "SIGTERM",
                    _ = interrupt.recv() => "SIGINT",
                    _ = hangup.recv() => "SIGHUP",
                };
                let _ = stop.send(reason);
            });
        })
        .context("cannot start the signal thread")?;
    Ok(())
}

/// One line of the daemon's log (its stderr is the log file, see `spawn`).
fn log(message: &str) {
    tracing::info!("{message}");
}
