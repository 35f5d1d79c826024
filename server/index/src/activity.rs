//! Whether a handle's index is being built right now, and how far it has come, without taking
//! any lock a refresh holds: a front end that must not wait for a build (the agent's first turn,
//! its tools) asks here before it reads, and shows the counts meanwhile.
//!
//! A refresh through a [`crate::Workspace`] counts itself while it holds the writer lock; a
//! caller that is about to bring the index up to date in the background (and so may wait for a
//! watcher first) counts itself from before it starts with [`BuildActivity::begin`], so that no
//! reader slips into the gap before the refresh takes the lock.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

/// How far a build in progress has come: files read and parsed, of those it found to (re)index.
/// `total` is 0 until the walk has found them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BuildProgress {
    pub done: usize,
    pub total: usize,
}

impl std::fmt::Display for BuildProgress {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.total == 0 {
            write!(formatter, "looking for files")
        } else {
            write!(formatter, "{} of {} files", self.done, self.total)
        }
    }
}

/// The builds of one index handle in progress (shared by clones of its `Arc`).
#[derive(Debug, Default)]
pub struct BuildActivity {
    running: AtomicUsize,
    done: AtomicUsize,
    total: AtomicUsize,
}

impl BuildActivity {
    /// Counts a build from now until the guard is dropped.
    pub fn begin(self: &Arc<Self>) -> BuildGuard {
        if self.running.fetch_add(1, Ordering::SeqCst) == 0 {
            self.done.store(0, Ordering::SeqCst);
            self.total.store(0, Ordering::SeqCst);
        }
        BuildGuard {
            activity: self.clone(),
        }
    }

    /// Records the parse phase's counts of the build in progress.
    pub(crate) fn record(&self, done: usize, total: usize) {
        self.total.store(total, Ordering::SeqCst);
        self.done.store(done, Ordering::SeqCst);
    }

    /// `Some` while a build is in progress.
    pub fn progress(&self) -> Option<BuildProgress> {
        (self.running.load(Ordering::SeqCst) > 0).then(|| BuildProgress {
            done: self.done.load(Ordering::SeqCst),
            total: self.total.load(Ordering::SeqCst),
        })
    }
}

/// A build counted by [`BuildActivity::begin`]; the count ends when it is dropped.
#[derive(Debug)]
pub struct BuildGuard {
    activity: Arc<BuildActivity>,
}

impl Drop for BuildGuard {
    fn drop(&mut self) {
        self.activity.running.fetch_sub(1, Ordering::SeqCst);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_build_is_seen_until_every_guard_is_dropped() {
        let activity = Arc::new(BuildActivity::default());
        assert_eq!(activity.progress(), None);
        let outer = activity.begin();
        assert_eq!(
            activity.progress(),
            Some(BuildProgress { done: 0, total: 0 })
        );
        assert_eq!(
            activity.progress().unwrap().to_string(),
            "looking for files"
        );
        let inner = activity.begin();
        activity.record(3, 10);
        assert_eq!(activity.progress().unwrap().to_string(), "3 of 10 files");
        drop(inner);
        assert_eq!(
            activity.progress(),
            Some(BuildProgress { done: 3, total: 10 })
        );
        drop(outer);
        assert_eq!(activity.progress(), None);
        // A new build starts its counts over.
        let _again = activity.begin();
        assert_eq!(
            activity.progress(),
            Some(BuildProgress { done: 0, total: 0 })
        );
    }
}
