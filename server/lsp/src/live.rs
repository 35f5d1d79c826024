//! The live index: one workspace index kept current with the editor's unsaved buffers and the
//! files on disk, shared by every request the server answers.
//!
//! All writes go through one writer thread, in order: buffer syncs (debounced per document),
//! refreshes, and changes seen on disk. Queries read through a second handle on the same index,
//! so a long refresh never blocks them: they see whatever the index has committed so far.
//! Language-server requests never wait for the writer: open buffers answer from their own
//! analysis (`crate::buffers`), and the index follows a buffer once it has been quiet for the
//! debounce interval, or when it is saved. [`LiveIndex::flush`] (at shutdown) pushes pending
//! buffer syncs through and waits for them.

use std::collections::HashMap;
use std::fs;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Weak, mpsc};
use std::time::Duration;

use lode_index::{
    ChangeReport, IndexError, RefreshMode, RefreshProgress, RefreshStats, Workspace,
    WorkspaceOptions, retry_locked,
};
use parking_lot::Mutex;
use tokio::sync::{Notify, oneshot, watch};
use tokio::time::Instant;

/// How long a buffer must be quiet before its text is re-indexed.
pub const DEFAULT_DEBOUNCE: Duration = Duration::from_millis(300);

/// How long a query waits for pending edits while a refresh holds the writer.
pub const FLUSH_PATIENCE_WHILE_REFRESHING: Duration = Duration::from_secs(2);

/// How often a write waits for another lode process holding the writer lock.
const LOCK_RETRIES: u32 = 100;
const LOCK_RETRY_PAUSE: Duration = Duration::from_millis(50);

type ProgressFn = Box<dyn Fn(RefreshProgress) + Send + Sync>;

enum Command {
    /// Index the open buffer's text, or the file on disk when no buffer is open.
    Sync(PathBuf),
    Refresh {
        mode: RefreshMode,
        progress: ProgressFn,
        done: oneshot::Sender<Result<RefreshStats, IndexError>>,
    },
    /// Files changed outside the editor (watcher events, already debounced); `rescan` when
    /// the watcher lost events. `done` hears when the index shows them.
    DiskChanged {
        paths: Vec<PathBuf>,
        rescan: bool,
        done: Option<oneshot::Sender<Result<ChangeReport, IndexError>>>,
    },
    /// Answered once every command sent before it is done.
    Barrier(oneshot::Sender<()>),
}

/// Text of the open buffers by canonical path: what the index should show instead of disk.
/// Shared with the editor's documents: an update copies nothing.
type Overlays = Arc<Mutex<HashMap<PathBuf, Arc<String>>>>;

struct Inner {
    root: PathBuf,
    reader: Arc<Workspace>,
    commands: mpsc::Sender<Command>,
    overlays: Overlays,
    /// Buffers changed but not yet re-indexed, with when they may be.
    pending: Mutex<HashMap<PathBuf, Instant>>,
    wake_debouncer: Arc<Notify>,
    closed: Arc<AtomicBool>,
    refreshing: watch::Receiver<bool>,
    debounce: Duration,
}

impl Drop for Inner {
    fn drop(&mut self) {
        self.closed.store(true, Ordering::SeqCst);
        self.wake_debouncer.notify_one();
    }
}

/// A workspace index fed by editor buffers and disk changes. Cheap to clone; must be created
/// inside a tokio runtime (it spawns the per-document debouncer there).
#[derive(Clone)]
pub struct LiveIndex {
    inner: Arc<Inner>,
}

impl LiveIndex {
    /// Opens the index (two handles: the writer's and the readers'), starts the writer thread
    /// and the debouncer. Does not refresh: call [`LiveIndex::refresh`].
    pub fn open(options: WorkspaceOptions, debounce: Duration) -> Result<LiveIndex, IndexError> {
        let max_file_bytes = options.scan.max_file_bytes;
        let writer = Workspace::open(options.clone())?;
        report_repairs(&writer);
        let mut reader_options = options;
        reader_options.index_dir = Some(writer.index_dir().to_path_buf());
        let reader = Arc::new(Workspace::open(reader_options)?);
        let root = writer.root().to_path_buf();
        let overlays: Overlays = Arc::default();
        let (commands, receiver) = mpsc::channel();
        let (refreshing_sender, refreshing) = watch::channel(false);
        let thread_overlays = overlays.clone();
        let thread_reader = reader.clone();
        std::thread::Builder::new()
            .name("lode-index-writer".into())
            .spawn(move || {
                WriterThread {
                    workspace: writer,
                    max_file_bytes,
                    reader: thread_reader,
                    overlays: thread_overlays,
                    refreshing: refreshing_sender,
                }
                .run(receiver)
            })
            .map_err(|source| IndexError::Write {
                path: root.clone(),
                source,
            })?;
        let inner = Arc::new(Inner {
            root,
            reader,
            commands,
            overlays,
            pending: Mutex::default(),
            wake_debouncer: Arc::new(Notify::new()),
            closed: Arc::new(AtomicBool::new(false)),
            refreshing,
            debounce,
        });
        tokio::spawn(debounce_loop(
            Arc::downgrade(&inner),
            inner.wake_debouncer.clone(),
            inner.closed.clone(),
        ));
        Ok(LiveIndex { inner })
    }

    /// The canonical workspace root.
    pub fn root(&self) -> &Path {
        &self.inner.root
    }

    /// The handle queries read through (searches, symbols, references, repo maps).
    pub fn reader(&self) -> Arc<Workspace> {
        self.inner.reader.clone()
    }

    /// Brings the index up to date with the disk (open buffers keep their text), reporting
    /// progress from the writer thread.
    pub async fn refresh(
        &self,
        mode: RefreshMode,
        progress: impl Fn(RefreshProgress) + Send + Sync + 'static,
    ) -> Result<RefreshStats, IndexError> {
        let (done, answer) = oneshot::channel();
        self.send(Command::Refresh {
            mode,
            progress: Box::new(progress),
            done,
        });
        answer.await.unwrap_or_else(|_| Err(writer_gone()))
    }

    /// [`LiveIndex::refresh`] for a plain thread (the file watcher's, answering `lode index`):
    /// blocks until the refresh is done. Never call it from the async runtime.
    pub fn refresh_blocking(
        &self,
        mode: RefreshMode,
        progress: ProgressFn,
    ) -> Result<RefreshStats, IndexError> {
        let (done, answer) = oneshot::channel();
        self.send(Command::Refresh {
            mode,
            progress,
            done,
        });
        answer
            .blocking_recv()
            .unwrap_or_else(|_| Err(writer_gone()))
    }

    /// The editor opened a buffer: its text is indexed at once. A buffer larger than the
    /// index's file-size limit is left out of the index, as such a file on disk is.
    pub fn open_buffer(&self, path: &Path, text: Arc<String>) {
        let path = canonical(path);
        self.inner.overlays.lock().insert(path.clone(), text);
        self.inner.pending.lock().remove(&path);
        self.send(Command::Sync(path));
    }

    /// The buffer's text changed: it is re-indexed once the buffer has been quiet for the
    /// debounce interval, or at the next [`LiveIndex::flush`].
    pub fn change_buffer(&self, path: &Path, text: Arc<String>) {
        let path = canonical(path);
        self.inner.overlays.lock().insert(path.clone(), text);
        self.inner
            .pending
            .lock()
            .insert(path, Instant::now() + self.inner.debounce);
        self.inner.wake_debouncer.notify_one();
    }

    /// The buffer was saved: the index takes its text now.
    pub fn save_buffer(&self, path: &Path) {
        let path = canonical(path);
        self.inner.pending.lock().remove(&path);
        self.send(Command::Sync(path));
    }

    /// The editor closed the buffer: the index goes back to the file on disk (or drops it).
    pub fn close_buffer(&self, path: &Path) {
        let path = canonical(path);
        self.inner.overlays.lock().remove(&path);
        self.inner.pending.lock().remove(&path);
        self.send(Command::Sync(path));
    }

    /// Whether a buffer is open for this path.
    pub fn is_open(&self, path: &Path) -> bool {
        self.inner.overlays.lock().contains_key(&canonical(path))
    }

    /// Files changed outside the editor; paths inside the index or `.git` are ignored.
    pub fn disk_changed(&self, paths: Vec<PathBuf>) {
        self.send(Command::DiskChanged {
            paths,
            rescan: false,
            done: None,
        });
    }

    /// [`LiveIndex::disk_changed`], waiting until the index shows the changes. Blocks: call it
    /// from a plain thread (the file watcher's), never from the async runtime.
    pub fn apply_disk_changes(
        &self,
        paths: Vec<PathBuf>,
        rescan: bool,
    ) -> Result<ChangeReport, IndexError> {
        let (done, answer) = oneshot::channel();
        self.send(Command::DiskChanged {
            paths,
            rescan,
            done: Some(done),
        });
        answer
            .blocking_recv()
            .unwrap_or_else(|_| Err(writer_gone()))
    }

    /// Indexes every pending buffer now and waits until the index shows it, so a query sees
    /// what the editor sent before it. While a refresh runs (the first index build of a large
    /// workspace can take minutes) it waits at most [`FLUSH_PATIENCE_WHILE_REFRESHING`] once
    /// the refresh is seen: queries then answer from what the index has committed.
    pub async fn flush(&self) {
        let due: Vec<PathBuf> = self
            .inner
            .pending
            .lock()
            .drain()
            .map(|(path, _)| path)
            .collect();
        for path in due {
            self.send(Command::Sync(path));
        }
        let (reached, barrier) = oneshot::channel();
        self.send(Command::Barrier(reached));
        let mut refreshing = self.inner.refreshing.clone();
        let patience = async {
            let _ = refreshing.wait_for(|running| *running).await;
            tokio::time::sleep(FLUSH_PATIENCE_WHILE_REFRESHING).await;
        };
        tokio::select! {
            _ = barrier => {}
            _ = patience => {}
        }
    }

    fn send(&self, command: Command) {
        if self.inner.commands.send(command).is_err() {
            tracing::error!("the index writer stopped; the index no longer follows edits");
        }
    }
}

/// Logs what the writer's handle repaired since the last call.
fn report_repairs(workspace: &Workspace) {
    for repair in workspace.take_repairs() {
        tracing::warn!("repaired the index: {repair}");
    }
}

fn writer_gone() -> IndexError {
    IndexError::Write {
        path: PathBuf::from("<index writer>"),
        source: std::io::Error::other("the index writer thread stopped"),
    }
}

/// The canonical form of a path when it exists (symlinks resolved), else the path itself.
fn canonical(path: &Path) -> PathBuf {
    fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf())
}

/// Sends each changed buffer to the writer once it has been quiet for the debounce interval.
async fn debounce_loop(inner: Weak<Inner>, wake: Arc<Notify>, closed: Arc<AtomicBool>) {
    loop {
        if closed.load(Ordering::SeqCst) {
            return;
        }
        let next_deadline = {
            let Some(inner) = inner.upgrade() else { return };
            let now = Instant::now();
            let mut pending = inner.pending.lock();
            let due: Vec<PathBuf> = pending
                .iter()
                .filter(|(_, deadline)| **deadline <= now)
                .map(|(path, _)| path.clone())
                .collect();
            for path in due {
                pending.remove(&path);
                let _ = inner.commands.send(Command::Sync(path));
            }
            pending.values().min().copied()
        };
        match next_deadline {
            Some(deadline) => {
                tokio::select! {
                    _ = tokio::time::sleep_until(deadline) => {}
                    _ = wake.notified() => {}
                }
            }
            None => wake.notified().await,
        }
    }
}

struct WriterThread {
    workspace: Workspace,
    /// Buffers larger than this are not indexed (the scan's limit for files on disk).
    max_file_bytes: u64,
    reader: Arc<Workspace>,
    overlays: Overlays,
    refreshing: watch::Sender<bool>,
}

impl WriterThread {
    fn run(self, commands: mpsc::Receiver<Command>) {
        while let Ok(command) = commands.recv() {
            match command {
                Command::Sync(path) => {
                    // A burst of syncs (typing in several buffers) indexes each buffer once:
                    // the overlay already holds its newest text.
                    let mut paths = vec![path];
                    let mut next_command = None;
                    while let Ok(next) = commands.try_recv() {
                        match next {
                            Command::Sync(more) => {
                                if !paths.contains(&more) {
                                    paths.push(more);
                                }
                            }
                            other => {
                                next_command = Some(other);
                                break;
                            }
                        }
                    }
                    for path in paths {
                        self.sync(&path);
                    }
                    if let Some(command) = next_command {
                        self.run_one(command);
                    }
                }
                Command::Refresh {
                    mode,
                    progress,
                    done,
                } => {
                    let result = self.refresh(mode, &*progress);
                    let _ = done.send(result);
                }
                Command::DiskChanged {
                    mut paths,
                    mut rescan,
                    done,
                } => {
                    // Coalesce a burst (a checkout) into one update.
                    let mut waiting: Vec<_> = done.into_iter().collect();
                    let mut deferred = Vec::new();
                    while let Ok(next) = commands.try_recv() {
                        match next {
                            Command::DiskChanged {
                                paths: more,
                                rescan: again,
                                done,
                            } => {
                                paths.extend(more);
                                rescan |= again;
                                waiting.extend(done);
                            }
                            other => deferred.push(other),
                        }
                    }
                    let result = self.disk_changed(&paths, rescan);
                    for done in waiting {
                        let _ = done.send(match &result {
                            Ok(report) => Ok(report.clone()),
                            Err(error) => Err(IndexError::Write {
                                path: self.workspace.index_dir().to_path_buf(),
                                source: std::io::Error::other(error.to_string()),
                            }),
                        });
                    }
                    if let Err(error) = result {
                        tracing::warn!(%error, "cannot update the index after changes on disk");
                    }
                    for command in deferred {
                        self.run_one(command);
                    }
                }
                Command::Barrier(reached) => {
                    let _ = reached.send(());
                }
            }
        }
    }

    fn run_one(&self, command: Command) {
        match command {
            Command::Sync(path) => self.sync(&path),
            Command::Refresh {
                mode,
                progress,
                done,
            } => {
                let _ = done.send(self.refresh(mode, &*progress));
            }
            Command::DiskChanged {
                paths,
                rescan,
                done,
            } => {
                let result = self.disk_changed(&paths, rescan);
                match done {
                    Some(done) => {
                        let _ = done.send(result);
                    }
                    None => {
                        if let Err(error) = result {
                            tracing::warn!(
                                %error,
                                "cannot update the index after changes on disk"
                            );
                        }
                    }
                }
            }
            Command::Barrier(reached) => {
                let _ = reached.send(());
            }
        }
    }

    fn refresh(
        &self,
        mode: RefreshMode,
        progress: &(dyn Fn(RefreshProgress) + Sync),
    ) -> Result<RefreshStats, IndexError> {
        self.refreshing.send_replace(true);
        let result = retry_locked(LOCK_RETRIES, LOCK_RETRY_PAUSE, || {
            self.workspace.refresh_with(mode, progress)
        });
        self.refreshing.send_replace(false);
        // The first refresh opens the vector store, which repairs one it cannot read.
        report_repairs(&self.workspace);
        // A refresh re-reads files whose buffers are open: put the buffers back.
        self.reapply_overlays();
        self.reload_reader();
        result
    }

    /// Applies changes seen on disk, file by file where it can (buffers open in the editor
    /// keep their text), with a quick refresh when the tree's shape changed.
    fn disk_changed(&self, paths: &[PathBuf], rescan: bool) -> Result<ChangeReport, IndexError> {
        let index_dir = self.workspace.index_dir();
        let root = self.workspace.root();
        let relevant: Vec<PathBuf> = paths
            .iter()
            .filter(|path| {
                may_affect_index(path, root, index_dir) && !self.overlays.lock().contains_key(*path)
            })
            .cloned()
            .collect();
        if relevant.is_empty() && !rescan {
            return Ok(ChangeReport::default());
        }
        if rescan {
            self.refreshing.send_replace(true);
        }
        let result = retry_locked(LOCK_RETRIES, LOCK_RETRY_PAUSE, || {
            self.workspace.apply_disk_changes(&relevant, rescan)
        });
        self.refreshing.send_replace(false);
        if result.as_ref().is_ok_and(|report| report.rescanned) {
            // A refresh re-reads files whose buffers are open: put the buffers back.
            self.reapply_overlays();
        }
        self.reload_reader();
        result
    }

    /// Indexes the buffer's text, or the file on disk, or drops a file that is gone (or a
    /// buffer over the size limit).
    fn sync(&self, path: &Path) {
        let overlay = self.overlays.lock().get(path).cloned();
        let result = match overlay {
            Some(text) if text.len() as u64 > self.max_file_bytes => {
                retry_locked(LOCK_RETRIES, LOCK_RETRY_PAUSE, || {
                    self.workspace.remove_file(path)
                })
                .map(|_| ())
            }
            Some(text) => retry_locked(LOCK_RETRIES, LOCK_RETRY_PAUSE, || {
                self.workspace.update_file(path, &text)
            })
            .map(|_| ()),
            None => match fs::read(path) {
                Ok(bytes) => {
                    let text = String::from_utf8_lossy(&bytes);
                    retry_locked(LOCK_RETRIES, LOCK_RETRY_PAUSE, || {
                        self.workspace.update_file(path, &text)
                    })
                    .map(|_| ())
                }
                Err(error) if error.kind() == std::io::ErrorKind::NotFound => {
                    retry_locked(LOCK_RETRIES, LOCK_RETRY_PAUSE, || {
                        self.workspace.remove_file(path)
                    })
                    .map(|_| ())
                }
                Err(source) => Err(IndexError::Read {
                    path: path.to_path_buf(),
                    source,
                }),
            },
        };
        match result {
            Ok(()) => self.reload_reader(),
            // Files outside the workspace (a library the editor jumped into) are not indexed.
            Err(IndexError::OutsideRoot { .. }) => {}
            Err(error) => tracing::warn!(%error, "cannot index {}", path.display()),
        }
    }

    fn reapply_overlays(&self) {
        let open: Vec<(PathBuf, Arc<String>)> = self
            .overlays
            .lock()
            .iter()
            .map(|(path, text)| (path.clone(), text.clone()))
            .collect();
        for (path, text) in open {
            let on_disk = fs::read(&path).ok();
            if on_disk.as_deref() != Some(text.as_bytes()) {
                self.sync(&path);
            }
        }
    }

    fn reload_reader(&self) {
        if let Err(error) = self.reader.reload() {
            tracing::warn!(%error, "cannot reload the index for searches");
        }
    }
}

/// Whether a change on disk at `path` can change what the index holds: a file lode indexes,
/// an ignore file, or something without an extension (a directory, perhaps deleted). Build
/// output (`.o`, `.rlib`, `.pyc`, ...) and lode's own and git's directories cannot.
fn may_affect_index(path: &Path, root: &Path, index_dir: &Path) -> bool {
    if path.starts_with(index_dir)
        || path.starts_with(root.join(".lode"))
        || path.starts_with(root.join(".git"))
    {
        return false;
    }
    let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
    name == ".gitignore"
        || name == ".ignore"
        || path.extension().is_none()
        || lode_index::Language::from_path(path).is_some()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_changes_that_can_reach_the_index_count() {
        let root = Path::new("/repo");
        let index = Path::new("/repo/.lode/index");
        assert!(may_affect_index(
            Path::new("/repo/src/main.rs"),
            root,
            index
        ));
        assert!(may_affect_index(
            Path::new("/repo/src/new_dir"),
            root,
            index
        ));
        assert!(may_affect_index(
            Path::new("/repo/sub/.gitignore"),
            root,
            index
        ));
        assert!(!may_affect_index(
            Path::new("/repo/target/debug/deps/x.rlib"),
            root,
            index
        ));
        assert!(!may_affect_index(
            Path::new("/repo/.lode/index/catalog.sqlite"),
            root,
            index
        ));
        assert!(!may_affect_index(
            Path::new("/repo/.git/index"),
            root,
            index
        ));
    }
}
