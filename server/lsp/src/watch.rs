//! Files changed outside the editor (git checkout, formatters, generators): a debounced
//! `notify` watcher on the workspace root that tells the live index which paths changed.

use std::path::Path;
use std::time::Duration;

use notify_debouncer_full::notify::{RecommendedWatcher, RecursiveMode};
use notify_debouncer_full::{DebounceEventResult, Debouncer, RecommendedCache, new_debouncer};

use crate::live::LiveIndex;

/// How long the disk must be quiet before a burst of changes is indexed.
pub const DISK_DEBOUNCE: Duration = Duration::from_millis(500);

/// Keeps the watcher running while held.
pub struct DiskWatcher {
    _debouncer: Debouncer<RecommendedWatcher, RecommendedCache>,
}

/// Watches `root` recursively; changes under the index directory and `.git` are ignored by
/// the live index.
pub fn watch_disk(
    root: &Path,
    index: LiveIndex,
) -> Result<DiskWatcher, notify_debouncer_full::notify::Error> {
    let index_dir = index.reader().index_dir().to_path_buf();
    let git_dir = root.join(".git");
    let mut debouncer =
        new_debouncer(
            DISK_DEBOUNCE,
            None,
            move |result: DebounceEventResult| match result {
                Ok(events) => {
                    let paths: Vec<_> = events
                        .into_iter()
                        .flat_map(|event| event.event.paths)
                        .filter(|path| !path.starts_with(&index_dir) && !path.starts_with(&git_dir))
                        .collect();
                    if !paths.is_empty() {
                        index.disk_changed(paths);
                    }
                }
                Err(errors) => {
                    for error in errors {
                        eprintln!("lode lsp: file watcher: {error}");
                    }
                }
            },
        )?;
    debouncer.watch(root, RecursiveMode::Recursive)?;
    Ok(DiskWatcher {
        _debouncer: debouncer,
    })
}
