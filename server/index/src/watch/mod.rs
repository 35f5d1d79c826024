//! Keeping an index current from file-system events, so queries need no freshness check.
//!
//! A [`Watcher`] holds the index's watch lease ([`lease`]) for as long as it lives, watches the
//! workspace with `notify`, and hands debounced batches of changed paths to a [`ChangeSink`]
//! (a [`Workspace`] itself, or a host that serialises writes, like the LSP's live index).
//!
//! A query process calls [`Workspace::flush_watcher`]: the watcher creates a *cookie* file in
//! the index directory and waits until its own event stream reports it. File-system events
//! arrive in order, so by then every change made before the query asked has been seen; the
//! watcher applies them, commits, and answers. No stat of the tree happens in either process.
//! If anything is odd the query gets a [`NotWatched`] reason and checks freshness itself.

mod apply;
pub mod lease;
pub mod protocol;
mod serve;

use std::collections::BTreeSet;
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, mpsc};
use std::time::{Duration, Instant};

use notify::event::{AccessKind, EventKind};
use notify::{Config, EventKindMask, RecommendedWatcher, RecursiveMode, Watcher as _};

pub use apply::ChangeReport;
pub use lease::{
    Flushed, IndexProgress, Indexed, Lease, LeaseError, LeaseInfo, NotIndexed, NotWatched, Served,
};
pub use protocol::{HolderStatus, IndexPhase};

use crate::embed::Embedder;
use crate::error::IndexError;
use crate::workspace::{RefreshMode, RefreshPhase, RefreshProgress, RefreshStats, Workspace};

/// How long the disk must be quiet before a batch is applied without a query asking.
pub const DEFAULT_DEBOUNCE: Duration = Duration::from_millis(200);

/// The [`crate::vectors::VectorStore::location`] of the index's own (embedded) store.
pub const EMBEDDED_STORE: &str = "embedded";

/// A batch is applied at the latest this long after its first event, however busy the disk.
const MAX_DELAY: Duration = Duration::from_secs(2);

/// How long the watcher waits to see its own cookie before telling the query to check itself.
const COOKIE_PATIENCE: Duration = Duration::from_secs(2);

/// Cookie files are named `<prefix><pid>-<n>` inside the index directory.
const COOKIE_PREFIX: &str = "watch-cookie-";

/// Writes lost to another process holding the writer lock are retried this often.
const LOCK_RETRIES: u32 = 40;
const LOCK_RETRY_PAUSE: Duration = Duration::from_millis(50);

/// A refresh asked for by `lode index` waits longer for another writer (30 s): its client is
/// waiting for it, and hears that it is alive meanwhile.
const INDEX_LOCK_RETRIES: u32 = 600;

/// Progress of a refresh, called from whichever thread does the work.
pub type ProgressFn = Box<dyn Fn(RefreshProgress) + Send + Sync>;

/// Where changes seen on disk go.
pub trait ChangeSink: Send + 'static {
    /// Applies changed `paths` (or a full quick refresh when `rescan`), returning once the
    /// index shows them.
    fn apply(&mut self, paths: Vec<PathBuf>, rescan: bool) -> Result<ChangeReport, IndexError>;

    /// Refreshes the whole index (`lode index`, asked for over the socket), returning once the
    /// index shows it.
    fn refresh(
        &mut self,
        mode: RefreshMode,
        progress: ProgressFn,
    ) -> Result<RefreshStats, IndexError>;
}

/// The sink that writes straight to a workspace (what `lode watch` and `lode acp` use).
pub struct WorkspaceSink(pub Arc<Workspace>);

impl ChangeSink for WorkspaceSink {
    fn apply(&mut self, paths: Vec<PathBuf>, rescan: bool) -> Result<ChangeReport, IndexError> {
        retry_locked(LOCK_RETRIES, LOCK_RETRY_PAUSE, || {
            self.0.apply_disk_changes(&paths, rescan)
        })
    }

    fn refresh(
        &mut self,
        mode: RefreshMode,
        progress: ProgressFn,
    ) -> Result<RefreshStats, IndexError> {
        retry_locked(INDEX_LOCK_RETRIES, LOCK_RETRY_PAUSE, || {
            self.0.refresh_with(mode, &*progress)
        })
    }
}

/// Runs a write, waiting for another writer to finish: a write that finds the writer lock
/// taken is tried again up to `retries` times, `pause` apart.
pub fn retry_locked<T>(
    retries: u32,
    pause: Duration,
    mut write: impl FnMut() -> Result<T, IndexError>,
) -> Result<T, IndexError> {
    let mut attempts = 0;
    loop {
        match write() {
            Err(IndexError::Locked { .. }) if attempts < retries => {
                attempts += 1;
                std::thread::sleep(pause);
            }
            other => return other,
        }
    }
}

/// What a watcher did, for the host to log (the index crate prints nothing).
#[derive(Debug)]
pub enum WatchEvent {
    /// A batch was applied (the first one is the start-up refresh, when asked for).
    Applied {
        paths: usize,
        report: Box<ChangeReport>,
        elapsed: Duration,
    },
    /// A query's flush was answered.
    Flushed { applied: usize, elapsed: Duration },
    /// The index was refreshed for `lode index`.
    Indexed {
        stats: Box<RefreshStats>,
        elapsed: Duration,
    },
    /// Something went wrong; the watcher keeps going.
    Error(String),
}

/// How to run a watcher.
pub struct WatchOptions {
    pub root: PathBuf,
    pub index_dir: PathBuf,
    /// [`Workspace::watch_settings`] of the index being kept current.
    pub settings: String,
    /// Apply a quick refresh first (catches what changed while nobody watched).
    pub initial_rescan: bool,
    /// Fail when another watcher holds the lease (`lode watch`); otherwise watch without it
    /// (an editor's server still follows the disk) and say so in the log.
    pub require_lease: bool,
    pub debounce: Duration,
    pub log: Box<dyn Fn(WatchEvent) + Send>,
    /// What kind of process holds the lease (`daemon`, `watch`, `lsp`, `acp`), for
    /// `lode daemon status`.
    pub holder: &'static str,
    /// The workspace that answers queries sent over the socket (after a flush); without one
    /// the holder only flushes and query processes answer themselves.
    pub queries: Option<Arc<Workspace>>,
    /// Called when a `stop` request arrives; without it stop requests are refused (only a
    /// background daemon may be stopped from outside).
    pub on_stop: Option<Box<dyn Fn() + Send + Sync>>,
    /// Reported by `status` (a daemon exits by itself after this long without a request).
    pub idle_timeout: Option<Duration>,
}

impl WatchOptions {
    /// Options for keeping `workspace` current.
    pub fn for_workspace(workspace: &Workspace) -> WatchOptions {
        WatchOptions {
            root: workspace.root().to_path_buf(),
            index_dir: workspace.index_dir().to_path_buf(),
            settings: workspace.watch_settings(),
            initial_rescan: true,
            require_lease: true,
            debounce: DEFAULT_DEBOUNCE,
            log: Box::new(|_| {}),
            holder: "watch",
            queries: None,
            on_stop: None,
            idle_timeout: None,
        }
    }
}

/// Errors starting a watcher.
#[derive(Debug, thiserror::Error)]
pub enum WatchError {
    #[error(transparent)]
    Lease(#[from] LeaseError),
    #[error("cannot watch {path}: {source}")]
    Notify {
        path: PathBuf,
        source: notify::Error,
    },
    #[error("cannot start the watcher thread: {0}")]
    Thread(std::io::Error),
}

pub(crate) enum Message {
    Event(notify::Result<notify::Event>),
    Flush(mpsc::Sender<Result<usize, String>>),
    /// Refresh the whole index (`lode index`); progress goes to `progress` as it is made.
    Index {
        progress: ProgressFn,
        reply: mpsc::Sender<Result<RefreshStats, String>>,
    },
    Stop,
}

/// A running watcher; stops, and releases the lease, when dropped.
pub struct Watcher {
    messages: mpsc::Sender<Message>,
    stopping: Arc<AtomicBool>,
    holder: Arc<serve::HolderState>,
    // Dropped in this order: events stop, then the threads are joined, then the lease goes.
    notify: Option<RecommendedWatcher>,
    event_loop: Option<std::thread::JoinHandle<()>>,
    server: Option<std::thread::JoinHandle<()>>,
    lease: Option<Lease>,
}

impl Watcher {
    /// Takes the lease, starts watching `options.root` and answering flushes; changes go to
    /// `sink`. When another watcher holds the lease: [`LeaseError::AlreadyWatched`] if
    /// `options.require_lease`, else a watcher without one (see [`Watcher::holds_lease`]).
    pub fn start(
        mut options: WatchOptions,
        sink: Box<dyn ChangeSink>,
    ) -> Result<Watcher, WatchError> {
        let lease = match Lease::acquire(&options.index_dir, &options.settings, options.holder) {
            Ok(lease) => Some(lease),
            Err(error @ LeaseError::AlreadyWatched { .. }) if !options.require_lease => {
                (options.log)(WatchEvent::Error(format!(
                    "{error}; watching without the lease (queries elsewhere check files themselves)"
                )));
                None
            }
            Err(error) => return Err(error.into()),
        };
        let (messages, receiver) = mpsc::channel();
        let events = messages.clone();
        let notify_error = |path: &Path, source| WatchError::Notify {
            path: path.to_path_buf(),
            source,
        };
        // Changes only: notify's default also subscribes to opens, so a watched tree woke this
        // thread for every file any tool opened in it (a build, the editor, `rg`: rg ran 1.5x
        // slower over a watched tree). Closing a file written to still counts.
        let config =
            Config::default().with_event_kinds(EventKindMask::CORE | EventKindMask::ACCESS_CLOSE);
        let mut notify = RecommendedWatcher::new(
            move |event| {
                let _ = events.send(Message::Event(event));
            },
            config,
        )
        .map_err(|source| notify_error(&options.root, source))?;
        notify
            .watch(&options.root, RecursiveMode::Recursive)
            .map_err(|source| notify_error(&options.root, source))?;
        if !options.index_dir.starts_with(&options.root) {
            // Cookies are created there: their events must come through the same stream.
            notify
                .watch(&options.index_dir, RecursiveMode::NonRecursive)
                .map_err(|source| notify_error(&options.index_dir, source))?;
        }
        let stopping = Arc::new(AtomicBool::new(false));
        let holder = Arc::new(serve::HolderState {
            holder: options.holder,
            root: options.root.clone(),
            settings: options.settings.clone(),
            started: Instant::now(),
            requests: std::sync::atomic::AtomicU64::new(0),
            last_request: parking_lot::Mutex::new(Instant::now()),
            idle_timeout: options.idle_timeout,
            queries: options.queries.take(),
            on_stop: options.on_stop.take(),
        });
        if let (Some(_), Some(workspace)) = (&lease, holder.queries.clone()) {
            // The queries' vector store is opened and mapped into memory beside the watcher;
            // until it is, they fault its pages in as they read them. A store that cannot be
            // opened now is reported by the first query that needs it.
            let _ = std::thread::Builder::new()
                .name("lode-watch-resident".into())
                .spawn(move || {
                    let _ = workspace.keep_resident();
                });
        }
        let server = match &lease {
            Some(lease) => {
                let listener = lease.listener.try_clone().map_err(WatchError::Thread)?;
                let server_messages = messages.clone();
                let server_stopping = stopping.clone();
                let server_holder = holder.clone();
                Some(
                    std::thread::Builder::new()
                        .name("lode-watch-socket".into())
                        .spawn(move || {
                            serve::serve(listener, server_messages, server_stopping, server_holder)
                        })
                        .map_err(WatchError::Thread)?,
                )
            }
            None => None,
        };
        let state = EventLoop {
            root: options.root,
            index_dir: options.index_dir,
            debounce: options.debounce,
            log: options.log,
            sink,
            pending: BTreeSet::new(),
            rescan: options.initial_rescan,
            first_pending: options.initial_rescan.then(Instant::now),
            last_event: Instant::now(),
            waiting: Vec::new(),
            cookies: 0,
        };
        let event_loop = std::thread::Builder::new()
            .name("lode-watch".into())
            .spawn(move || state.run(receiver))
            .map_err(WatchError::Thread)?;
        Ok(Watcher {
            messages,
            stopping,
            holder,
            notify: Some(notify),
            event_loop: Some(event_loop),
            server,
            lease,
        })
    }

    /// Whether this watcher holds the lease (answers queries' flushes).
    pub fn holds_lease(&self) -> bool {
        self.lease.is_some()
    }

    /// The socket queries connect to, when this watcher holds the lease.
    pub fn socket(&self) -> Option<&Path> {
        self.lease.as_ref().map(Lease::socket)
    }

    /// How long since the last request over the socket (or since the start).
    pub fn idle_for(&self) -> Duration {
        self.holder.idle_for()
    }
}

impl Drop for Watcher {
    fn drop(&mut self) {
        self.stopping.store(true, Ordering::SeqCst);
        drop(self.notify.take());
        let _ = self.messages.send(Message::Stop);
        if let Some(lease) = &self.lease {
            // Wake the accept loop so it sees `stopping`. Connecting would not do when the
            // socket file is gone (the workspace was deleted); shutting the listening socket
            // down makes a blocked accept return on Linux, and the connection covers the rest.
            use std::os::fd::AsRawFd;
            // SAFETY: the descriptor belongs to the lease's listener, which outlives this call.
            unsafe {
                libc::shutdown(lease.listener.as_raw_fd(), libc::SHUT_RDWR);
            }
            let _ = UnixStream::connect(lease.socket());
        }
        if let Some(server) = self.server.take() {
            let _ = server.join();
        }
        if let Some(event_loop) = self.event_loop.take() {
            let _ = event_loop.join();
        }
        drop(self.lease.take());
    }
}

struct EventLoop {
    root: PathBuf,
    index_dir: PathBuf,
    debounce: Duration,
    log: Box<dyn Fn(WatchEvent) + Send>,
    sink: Box<dyn ChangeSink>,
    pending: BTreeSet<PathBuf>,
    rescan: bool,
    first_pending: Option<Instant>,
    last_event: Instant,
    /// Flushes waiting for their cookie: (cookie, seen, deadline, reply).
    waiting: Vec<Waiting>,
    cookies: u64,
}

struct Waiting {
    cookie: PathBuf,
    requested: Instant,
    seen: bool,
    deadline: Instant,
    reply: mpsc::Sender<Result<usize, String>>,
}

impl EventLoop {
    fn run(mut self, receiver: mpsc::Receiver<Message>) {
        loop {
            let timeout = self.next_wake().saturating_duration_since(Instant::now());
            let mut next = receiver.recv_timeout(timeout);
            // Take in everything already queued before deciding: a cookie may be waiting
            // behind events that arrived while a batch was being applied.
            loop {
                match next {
                    Ok(Message::Event(Ok(event))) => self.event(event),
                    Ok(Message::Event(Err(error))) => {
                        (self.log)(WatchEvent::Error(format!(
                            "file watcher: {error}; rescanning"
                        )));
                        self.mark_pending(true);
                    }
                    Ok(Message::Flush(reply)) => self.flush_requested(reply),
                    Ok(Message::Index { progress, reply }) => self.index(progress, reply),
                    Ok(Message::Stop) | Err(mpsc::RecvTimeoutError::Disconnected) => {
                        self.stop();
                        return;
                    }
                    Err(mpsc::RecvTimeoutError::Timeout) => break,
                }
                next = receiver.try_recv().map_err(|error| match error {
                    mpsc::TryRecvError::Empty => mpsc::RecvTimeoutError::Timeout,
                    mpsc::TryRecvError::Disconnected => mpsc::RecvTimeoutError::Disconnected,
                });
            }
            self.step();
        }
    }

    fn stop(&mut self) {
        for waiting in self.waiting.drain(..) {
            let _ = std::fs::remove_file(&waiting.cookie);
        }
    }

    /// When something is due: a debounced batch or a flush's deadline.
    fn next_wake(&self) -> Instant {
        let mut wake = Instant::now() + Duration::from_secs(3600);
        if let Some(first) = self.first_pending {
            wake = wake
                .min(self.last_event + self.debounce)
                .min(first + MAX_DELAY);
        }
        for waiting in &self.waiting {
            wake = wake.min(waiting.deadline);
        }
        wake
    }

    fn mark_pending(&mut self, rescan: bool) {
        self.rescan |= rescan;
        self.last_event = Instant::now();
        self.first_pending.get_or_insert(self.last_event);
    }

    fn event(&mut self, event: notify::Event) {
        if matches!(
            event.kind,
            EventKind::Access(AccessKind::Open(_) | AccessKind::Read | AccessKind::Any)
                | EventKind::Access(AccessKind::Close(notify::event::AccessMode::Read))
        ) {
            return;
        }
        if event.need_rescan() {
            self.mark_pending(true);
        }
        for path in event.paths {
            if self.is_cookie(&path) {
                for waiting in &mut self.waiting {
                    if waiting.cookie == path {
                        waiting.seen = true;
                    }
                }
                continue;
            }
            if path.starts_with(&self.index_dir) || path.starts_with(self.root.join(".git")) {
                continue;
            }
            self.pending.insert(path);
            self.mark_pending(false);
        }
    }

    fn is_cookie(&self, path: &Path) -> bool {
        path.parent() == Some(self.index_dir.as_path())
            && path
                .file_name()
                .and_then(|name| name.to_str())
                .is_some_and(|name| name.starts_with(COOKIE_PREFIX))
    }

    fn flush_requested(&mut self, reply: mpsc::Sender<Result<usize, String>>) {
        self.cookies += 1;
        let cookie = self.index_dir.join(format!(
            "{COOKIE_PREFIX}{}-{}",
            std::process::id(),
            self.cookies
        ));
        if let Err(error) = std::fs::write(&cookie, b"") {
            let _ = reply.send(Err(format!("cannot create {}: {error}", cookie.display())));
            return;
        }
        self.waiting.push(Waiting {
            cookie,
            seen: false,
            requested: Instant::now(),
            deadline: Instant::now() + COOKIE_PATIENCE,
            reply,
        });
    }

    /// Applies a due batch and answers flushes whose cookie came through (or timed out).
    fn step(&mut self) {
        let now = Instant::now();
        let any_seen = self.waiting.iter().any(|w| w.seen);
        let due = self.first_pending.is_some_and(|first| {
            now >= self.last_event + self.debounce || now >= first + MAX_DELAY
        });
        let mut outcome: Result<usize, String> = Ok(0);
        if any_seen || due {
            outcome = self.apply();
        }
        let mut still_waiting = Vec::new();
        for waiting in self.waiting.drain(..) {
            if waiting.seen {
                let _ = std::fs::remove_file(&waiting.cookie);
                (self.log)(WatchEvent::Flushed {
                    applied: *outcome.as_ref().unwrap_or(&0),
                    elapsed: now.saturating_duration_since(waiting.requested),
                });
                let _ = waiting.reply.send(outcome.clone());
            } else if now >= waiting.deadline {
                let _ = std::fs::remove_file(&waiting.cookie);
                let _ = waiting.reply.send(Err(format!(
                    "the watcher did not see its own change within {COOKIE_PATIENCE:?}"
                )));
            } else {
                still_waiting.push(waiting);
            }
        }
        self.waiting = still_waiting;
    }

    /// Refreshes the whole index for `lode index`. The walk reads the disk as it is now, so it
    /// covers every change seen so far: the pending batch is dropped (kept if the refresh
    /// fails, for the next round).
    fn index(&mut self, progress: ProgressFn, reply: mpsc::Sender<Result<RefreshStats, String>>) {
        let pending = std::mem::take(&mut self.pending);
        let rescan = std::mem::take(&mut self.rescan);
        let first_pending = self.first_pending.take();
        let started = Instant::now();
        // Started: the client stops reporting that it waits behind another update.
        progress(RefreshProgress {
            done: 0,
            total: 0,
            phase: RefreshPhase::Parse,
        });
        let result = self.sink.refresh(RefreshMode::Full, progress);
        // Events could not be read meanwhile: flushes get that time back.
        for waiting in &mut self.waiting {
            waiting.deadline += started.elapsed();
        }
        let outcome = match result {
            Ok(stats) => {
                (self.log)(WatchEvent::Indexed {
                    stats: Box::new(stats.clone()),
                    elapsed: started.elapsed(),
                });
                Ok(stats)
            }
            Err(error) => {
                self.pending.extend(pending);
                self.rescan |= rescan;
                self.first_pending = self.first_pending.or(first_pending);
                let message = error.to_string();
                (self.log)(WatchEvent::Error(format!(
                    "cannot index for `lode index`: {message}"
                )));
                Err(message)
            }
        };
        let _ = reply.send(outcome);
    }

    /// Hands the pending batch to the sink; returns how many paths it applied.
    fn apply(&mut self) -> Result<usize, String> {
        if self.first_pending.is_none() {
            return Ok(0);
        }
        let paths: Vec<PathBuf> = std::mem::take(&mut self.pending).into_iter().collect();
        let rescan = std::mem::take(&mut self.rescan);
        self.first_pending = None;
        let count = paths.len();
        let started = Instant::now();
        let result = self.sink.apply(paths.clone(), rescan);
        // Events could not be read meanwhile: flushes get that time back.
        for waiting in &mut self.waiting {
            waiting.deadline += started.elapsed();
        }
        match result {
            Ok(report) => {
                (self.log)(WatchEvent::Applied {
                    paths: count,
                    report: Box::new(report),
                    elapsed: started.elapsed(),
                });
                Ok(count)
            }
            Err(error) => {
                // Keep the batch for the next round; the query checks for itself meanwhile.
                self.pending.extend(paths);
                self.rescan |= rescan;
                self.first_pending = Some(Instant::now());
                self.last_event = Instant::now();
                let message = error.to_string();
                (self.log)(WatchEvent::Error(format!(
                    "cannot update the index: {message}"
                )));
                Err(message)
            }
        }
    }
}

impl Workspace {
    /// Identifies what a watcher of this index must index with for a query to trust it: the
    /// scan settings, the lode version, the embedder and the vector store.
    pub fn watch_settings(&self) -> String {
        watch_settings(
            &self.scan_options,
            self.embedder().map(|e| e.as_ref()),
            &self.vector_store_location(),
        )
    }

    /// Asks the watcher holding this index's lease (if any) to apply what it has seen, then
    /// makes its commits visible here. On `Err` the caller checks freshness itself.
    pub fn flush_watcher(&self, timeout: Duration) -> Result<Flushed, NotWatched> {
        let flushed = lease::flush(self.index_dir(), &self.watch_settings(), timeout)?;
        self.reload()
            .map_err(|error| NotWatched::Failed(error.to_string()))?;
        Ok(flushed)
    }

    /// Brings the index up to date before a query, the one policy every front end (CLI,
    /// agent, MCP) follows: through the watcher holding the lease when one answers, which
    /// checks no file; else a quick refresh; and when another process is writing, the index
    /// as it stands with that process's latest commits loaded.
    pub fn bring_up_to_date(
        &self,
        progress: &(dyn Fn(RefreshProgress) + Sync),
    ) -> Result<Freshness, IndexError> {
        let not_watched = match self.flush_watcher(lease::DEFAULT_FLUSH_TIMEOUT) {
            Ok(flushed) => return Ok(Freshness::Watched(flushed)),
            Err(reason) => reason,
        };
        match self.refresh_with(RefreshMode::Quick, progress) {
            Ok(stats) => Ok(Freshness::Checked {
                not_watched,
                stats: Box::new(stats),
            }),
            Err(IndexError::Locked { .. }) => {
                self.reload()?;
                Ok(Freshness::Locked { not_watched })
            }
            Err(error) => Err(error),
        }
    }
}

/// [`Workspace::watch_settings`] without opening the index: what a query process compares
/// with the lease before sending its query. `vectors` is the store's
/// [`crate::vectors::VectorStore::location`] ([`EMBEDDED_STORE`] for the index's own), so that a
/// query for another store is not answered from this one.
pub fn watch_settings(
    scan: &crate::scan::ScanOptions,
    embedder: Option<&dyn Embedder>,
    vectors: &str,
) -> String {
    settings_of(scan, embedder.map(|embedder| embedder.identity()), vectors)
}

/// The settings of a query process that gives no option and no environment: the default scan
/// options, the built-in static table and the index's own vector store. A small client that
/// does not open the index or the table (the `lode` query front end) sends these.
pub fn default_settings() -> String {
    let scan = crate::scan::ScanOptions {
        max_file_bytes: crate::scan::DEFAULT_MAX_FILE_BYTES,
        exclude: Vec::new(),
    };
    let identity = crate::embed::StaticEmbedder::builtin_identity();
    settings_of(&scan, Some(&identity), EMBEDDED_STORE)
}

fn settings_of(
    scan: &crate::scan::ScanOptions,
    identity: Option<&crate::embed::EmbedderIdentity>,
    vectors: &str,
) -> String {
    let embedder = identity.map_or_else(
        || "none".to_owned(),
        |identity| {
            format!(
                "{}:{}:{}",
                identity.backend, identity.model, identity.dimension
            )
        },
    );
    let text = format!(
        "{}|{embedder}|{vectors}",
        crate::workspace::scan_fingerprint(scan)
    );
    format!("{:016x}", xxhash_rust::xxh3::xxh3_64(text.as_bytes()))
}

/// How [`Workspace::bring_up_to_date`] brought the index up to date.
#[derive(Debug)]
pub enum Freshness {
    /// The watcher holding the lease applied what it had seen; no file was checked.
    Watched(Flushed),
    /// No watcher answered (`not_watched` says why): files were checked by a quick refresh.
    Checked {
        not_watched: NotWatched,
        stats: Box<RefreshStats>,
    },
    /// No watcher answered and another process is writing the index: it is as it stands.
    Locked { not_watched: NotWatched },
}
