//! Files changed outside the editor (git checkout, formatters, generators): lode's index
//! watcher on the workspace root, feeding the live index. It holds the index's watch lease
//! when it can, so `lode search` and friends in a terminal ask this server to flush instead of
//! checking every file.

use std::path::{Path, PathBuf};

use lode_index::{
    ChangeReport, ChangeSink, IndexError, ProgressFn, RefreshMode, RefreshStats, WatchError,
    WatchEvent, WatchOptions, Watcher,
};

use crate::live::LiveIndex;

/// Keeps the watcher running while held.
pub struct DiskWatcher {
    _watcher: Watcher,
}

/// Changes seen on disk go through the live index's writer, in order with buffer syncs.
struct LiveSink(LiveIndex);

impl ChangeSink for LiveSink {
    fn apply(&mut self, paths: Vec<PathBuf>, rescan: bool) -> Result<ChangeReport, IndexError> {
        self.0.apply_disk_changes(paths, rescan)
    }

    /// `lode index` in a terminal: the same refresh the editor's index does (open buffers keep
    /// their text).
    fn refresh(
        &mut self,
        mode: RefreshMode,
        progress: ProgressFn,
    ) -> Result<RefreshStats, IndexError> {
        self.0.refresh_blocking(mode, progress)
    }
}

/// Watches `root` recursively; changes under the index directory and `.git` are ignored.
pub fn watch_disk(root: &Path, index: LiveIndex) -> Result<DiskWatcher, WatchError> {
    let reader = index.reader();
    let mut options = WatchOptions::for_workspace(&reader);
    options.root = root.to_path_buf();
    // The server refreshed just before starting the watcher, but a file saved between the end
    // of that walk and the watches being in place sends no event: one quick refresh once the
    // watches exist catches it (the lsp_server watcher test lost such a file about every
    // second run without it).
    options.initial_rescan = true;
    options.require_lease = false;
    options.holder = "lsp";
    options.queries = Some(reader.clone());
    options.log = Box::new(|event| {
        if let WatchEvent::Error(message) = event {
            tracing::warn!("{message}");
        }
    });
    let watcher = Watcher::start(options, Box::new(LiveSink(index)))?;
    Ok(DiskWatcher { _watcher: watcher })
}
