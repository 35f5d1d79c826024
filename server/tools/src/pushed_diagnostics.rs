//! Diagnostics the editor pushes (over ACP's `_lode/diagnostics`), and the source that prefers
//! them over lode's own checkers.
//!
//! The editor already runs the project's language servers on the buffers the user sees, so its
//! diagnostics are the best ones there are — as long as they describe the file as it is now.
//! [`PushedDiagnostics`] keeps the last set pushed for each absolute path with a monotonic
//! sequence number, and the sequence number of the agent's last change to each file
//! ([`crate::diagnostics::DiagnosticsSource::file_changing`]). A pushed set is *fresh* when it
//! arrived after that change.
//!
//! [`PushedFirst`] answers with fresh pushed sets; for a file the editor tracks but whose set is
//! stale (the agent just edited it), it waits a bounded time for the editor to push again —
//! woken by each push, no polling — and otherwise asks the fallback source (lode's own language
//! servers and checker commands), or, without one, returns the stale set marked as such. Files
//! the editor never pushed anything for go straight to the fallback.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use parking_lot::Mutex;
use tokio::sync::Notify;

use crate::diagnostics::{Diagnostic, DiagnosticsSource, FileDiagnostics};

/// How long [`PushedFirst`] waits, after an agent edit, for the editor to push fresh diagnostics.
pub const DEFAULT_PUSH_WAIT: Duration = Duration::from_millis(1_500);
/// Most files whose pushed diagnostics are kept; the least recently pushed go first.
pub const MAX_TRACKED_FILES: usize = 10_000;
/// Most diagnostics kept for one file (the rest of a larger push is dropped).
pub const MAX_PUSHED_PER_FILE: usize = 1_000;
/// Most diagnostics kept over all files by default; the least recently pushed files go first.
pub const MAX_PUSHED_TOTAL: usize = 100_000;
/// What `checked_by` says for diagnostics that came from the editor.
pub const EDITOR_CHECKER: &str = "editor";

/// The last diagnostics the editor pushed for one file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PushedSnapshot {
    pub diagnostics: Vec<Diagnostic>,
    /// Where this push sits in the order of pushes and agent changes.
    pub sequence: u64,
    pub received_at: Instant,
    /// Whether it arrived after the agent last changed the file.
    pub fresh: bool,
}

/// How much [`PushedDiagnostics`] keeps (`[acp.lsp]` sets them for `lode acp`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PushedLimits {
    /// Most diagnostics kept for one file; the rest of a larger push is dropped.
    pub per_file: usize,
    /// Most diagnostics kept over all files; the least recently pushed files are evicted.
    pub total: usize,
    /// Most files tracked; the least recently pushed are evicted.
    pub files: usize,
}

impl Default for PushedLimits {
    fn default() -> PushedLimits {
        PushedLimits {
            per_file: MAX_PUSHED_PER_FILE,
            total: MAX_PUSHED_TOTAL,
            files: MAX_TRACKED_FILES,
        }
    }
}

#[derive(Default)]
struct StoreState {
    limits: PushedLimits,
    /// The sum of the kept diagnostics of every file.
    kept: usize,
    next_sequence: u64,
    pushed: HashMap<PathBuf, PushedFile>,
    /// The sequence number of the agent's last change to each file.
    changed: HashMap<PathBuf, u64>,
}

struct PushedFile {
    diagnostics: Vec<Diagnostic>,
    sequence: u64,
    received_at: Instant,
}

impl StoreState {
    fn take_sequence(&mut self) -> u64 {
        self.next_sequence += 1;
        self.next_sequence
    }

    fn snapshot(&self, path: &Path) -> Option<PushedSnapshot> {
        let file = self.pushed.get(path)?;
        let changed = self.changed.get(path).copied().unwrap_or(0);
        Some(PushedSnapshot {
            diagnostics: file.diagnostics.clone(),
            sequence: file.sequence,
            received_at: file.received_at,
            fresh: file.sequence > changed,
        })
    }
}

/// The editor's pushed diagnostics, per absolute path. Shared by every session of an agent.
#[derive(Default)]
pub struct PushedDiagnostics {
    state: Mutex<StoreState>,
    arrived: Notify,
}

impl PushedDiagnostics {
    pub fn new() -> PushedDiagnostics {
        PushedDiagnostics::default()
    }

    /// Replaces the diagnostics of `path` (absolute) with what the editor just sent (an empty
    /// list means the file is clean) and wakes anyone waiting for it.
    pub fn push(&self, path: PathBuf, mut diagnostics: Vec<Diagnostic>) {
        {
            let mut state = self.state.lock();
            let limits = state.limits;
            diagnostics.truncate(limits.per_file.min(limits.total));
            let sequence = state.take_sequence();
            if let Some(old) = state.pushed.remove(&path) {
                state.kept -= old.diagnostics.len();
            }
            // The least recently pushed files go until this one fits.
            while state.pushed.len() >= limits.files.max(1)
                || state.kept + diagnostics.len() > limits.total
            {
                let oldest = state
                    .pushed
                    .iter()
                    .min_by_key(|(_, file)| file.sequence)
                    .map(|(path, _)| path.clone());
                let Some(oldest) = oldest else { break };
                if let Some(evicted) = state.pushed.remove(&oldest) {
                    state.kept -= evicted.diagnostics.len();
                }
                state.changed.remove(&oldest);
            }
            state.kept += diagnostics.len();
            state.pushed.insert(
                path,
                PushedFile {
                    diagnostics,
                    sequence,
                    received_at: Instant::now(),
                },
            );
        }
        self.arrived.notify_waiters();
    }

    /// Changes what is kept from the next push on (what is kept now stays until pushed again
    /// or evicted).
    pub fn set_limits(&self, limits: PushedLimits) {
        self.state.lock().limits = limits;
    }

    /// How many files and diagnostics are kept now.
    pub fn kept(&self) -> (usize, usize) {
        let state = self.state.lock();
        (state.pushed.len(), state.kept)
    }

    /// Records that the agent is changing `path` now: what was pushed for it before is stale.
    pub fn file_changing(&self, path: &Path) {
        let mut state = self.state.lock();
        let sequence = state.take_sequence();
        state.changed.insert(path.to_path_buf(), sequence);
    }

    /// The last pushed set for `path`, if the editor ever pushed one.
    pub fn snapshot(&self, path: &Path) -> Option<PushedSnapshot> {
        self.state.lock().snapshot(path)
    }

    /// Waits up to `patience` for a fresh set for `path`; `None` when none arrived in time.
    pub async fn wait_for_fresh(&self, path: &Path, patience: Duration) -> Option<PushedSnapshot> {
        let deadline = tokio::time::Instant::now() + patience;
        loop {
            // Registered before the check so a push between the check and the await still wakes us.
            let arrived = self.arrived.notified();
            tokio::pin!(arrived);
            arrived.as_mut().enable();
            if let Some(snapshot) = self.snapshot(path).filter(|snapshot| snapshot.fresh) {
                return Some(snapshot);
            }
            if tokio::time::timeout_at(deadline, arrived).await.is_err() {
                return None;
            }
        }
    }
}

/// A [`DiagnosticsSource`] that answers with the editor's pushed diagnostics when they are
/// fresh, waits briefly for fresh ones after an agent edit, and otherwise asks `fallback`.
pub struct PushedFirst {
    pub pushed: Arc<PushedDiagnostics>,
    pub fallback: Option<Arc<dyn DiagnosticsSource>>,
    /// How long to wait for the editor after an agent edit ([`DEFAULT_PUSH_WAIT`]).
    pub patience: Duration,
}

impl PushedFirst {
    pub fn new(
        pushed: Arc<PushedDiagnostics>,
        fallback: Option<Arc<dyn DiagnosticsSource>>,
    ) -> PushedFirst {
        PushedFirst {
            pushed,
            fallback,
            patience: DEFAULT_PUSH_WAIT,
        }
    }

    pub fn with_patience(mut self, patience: Duration) -> PushedFirst {
        self.patience = patience;
        self
    }

    /// The fresh pushed set for `path`, waiting for one if the editor tracks the file but its
    /// set predates the agent's last change; otherwise the stale set (or nothing).
    async fn pushed_for(&self, path: &Path) -> Result<PushedSnapshot, Option<PushedSnapshot>> {
        match self.pushed.snapshot(path) {
            None => Err(None),
            Some(snapshot) if snapshot.fresh => Ok(snapshot),
            Some(stale) => match self.pushed.wait_for_fresh(path, self.patience).await {
                Some(fresh) => Ok(fresh),
                None => Err(Some(self.pushed.snapshot(path).unwrap_or(stale))),
            },
        }
    }
}

fn from_editor(path: PathBuf, snapshot: PushedSnapshot) -> FileDiagnostics {
    FileDiagnostics {
        path,
        diagnostics: snapshot.diagnostics,
        checked_by: Some(EDITOR_CHECKER.to_owned()),
        error: None,
    }
}

#[async_trait::async_trait]
impl DiagnosticsSource for PushedFirst {
    async fn diagnostics_for(&self, paths: &[PathBuf]) -> Vec<FileDiagnostics> {
        let answers =
            futures::future::join_all(paths.iter().map(|path| self.pushed_for(path))).await;
        let mut files = Vec::with_capacity(paths.len());
        let mut unanswered = Vec::new();
        let mut stale = HashMap::new();
        for (path, answer) in paths.iter().zip(answers) {
            match answer {
                Ok(fresh) => files.push(from_editor(path.clone(), fresh)),
                Err(old) => {
                    unanswered.push(path.clone());
                    if let Some(old) = old {
                        stale.insert(path.clone(), old);
                    }
                }
            }
        }
        if unanswered.is_empty() {
            return files;
        }
        if let Some(fallback) = &self.fallback {
            files.extend(fallback.diagnostics_for(&unanswered).await);
            return files;
        }
        for path in unanswered {
            let file = match stale.remove(&path) {
                // Not `checked_by`: stale findings must not read as "no new errors".
                Some(old) => FileDiagnostics {
                    path,
                    error: Some(format!(
                        "the editor has not pushed diagnostics for this file since lode changed \
                         it; the {} finding(s) below were pushed before that and may be stale",
                        old.diagnostics.len()
                    )),
                    diagnostics: old.diagnostics,
                    checked_by: None,
                },
                None => FileDiagnostics {
                    path,
                    diagnostics: Vec::new(),
                    checked_by: None,
                    error: Some(
                        "the editor pushed no diagnostics for this file and no checker is \
                         configured"
                            .to_owned(),
                    ),
                },
            };
            files.push(file);
        }
        files
    }

    fn file_changing(&self, path: &Path) {
        self.pushed.file_changing(path);
        if let Some(fallback) = &self.fallback {
            fallback.file_changing(path);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::diagnostics::Severity;

    fn error(message: &str) -> Diagnostic {
        Diagnostic {
            severity: Severity::Error,
            line: 1,
            column: 1,
            message: message.into(),
            code: None,
            source: None,
        }
    }

    /// A checker that counts its calls and reports one fixed finding.
    struct CountingChecker {
        calls: Mutex<usize>,
    }

    #[async_trait::async_trait]
    impl DiagnosticsSource for CountingChecker {
        async fn diagnostics_for(&self, paths: &[PathBuf]) -> Vec<FileDiagnostics> {
            *self.calls.lock() += 1;
            paths
                .iter()
                .map(|path| FileDiagnostics {
                    path: path.clone(),
                    diagnostics: vec![error("from the checker")],
                    checked_by: Some("checker".into()),
                    error: None,
                })
                .collect()
        }
    }

    fn setup(patience: Duration) -> (Arc<PushedDiagnostics>, Arc<CountingChecker>, PushedFirst) {
        let pushed = Arc::new(PushedDiagnostics::new());
        let checker = Arc::new(CountingChecker {
            calls: Mutex::new(0),
        });
        let source =
            PushedFirst::new(pushed.clone(), Some(checker.clone())).with_patience(patience);
        (pushed, checker, source)
    }

    fn messages(files: &[FileDiagnostics]) -> Vec<String> {
        files
            .iter()
            .flat_map(|file| file.diagnostics.iter().map(|d| d.message.clone()))
            .collect()
    }

    #[tokio::test]
    async fn fresh_pushed_diagnostics_win_over_the_checker() {
        let (pushed, checker, source) = setup(Duration::from_secs(30));
        let path = PathBuf::from("/w/src/lib.rs");
        pushed.push(path.clone(), vec![error("from the editor")]);
        let files = source.diagnostics_for(std::slice::from_ref(&path)).await;
        assert_eq!(messages(&files), ["from the editor"]);
        assert_eq!(files[0].checked_by.as_deref(), Some(EDITOR_CHECKER));
        assert_eq!(*checker.calls.lock(), 0);
    }

    #[tokio::test]
    async fn files_the_editor_never_pushed_go_to_the_checker() {
        let (pushed, checker, source) = setup(Duration::from_secs(30));
        pushed.push(PathBuf::from("/w/other.rs"), vec![error("elsewhere")]);
        let path = PathBuf::from("/w/src/lib.rs");
        source.file_changing(&path);
        let files = source.diagnostics_for(std::slice::from_ref(&path)).await;
        assert_eq!(messages(&files), ["from the checker"]);
        assert_eq!(*checker.calls.lock(), 1);
    }

    #[tokio::test]
    async fn after_an_edit_it_waits_for_the_editors_next_push() {
        // Patience far beyond the test's run time: only the push can end the wait.
        let (pushed, checker, source) = setup(Duration::from_secs(600));
        let path = PathBuf::from("/w/src/lib.rs");
        pushed.push(path.clone(), vec![error("before the edit")]);
        source.file_changing(&path);
        assert!(!pushed.snapshot(&path).unwrap().fresh);
        let pusher = {
            let pushed = pushed.clone();
            let path = path.clone();
            tokio::spawn(async move {
                tokio::task::yield_now().await;
                pushed.push(path, vec![error("after the edit")]);
            })
        };
        let files = source.diagnostics_for(std::slice::from_ref(&path)).await;
        pusher.await.unwrap();
        assert_eq!(messages(&files), ["after the edit"]);
        assert_eq!(*checker.calls.lock(), 0);
    }

    #[tokio::test]
    async fn pushes_for_other_files_do_not_end_the_wait() {
        let (pushed, _checker, source) = setup(Duration::from_millis(200));
        let path = PathBuf::from("/w/src/lib.rs");
        pushed.push(path.clone(), vec![error("before the edit")]);
        source.file_changing(&path);
        pushed.push(PathBuf::from("/w/src/other.rs"), vec![error("other file")]);
        let files = source.diagnostics_for(std::slice::from_ref(&path)).await;
        assert_eq!(messages(&files), ["from the checker"]);
    }

    #[tokio::test]
    async fn without_a_push_after_the_edit_it_falls_back_to_the_checker() {
        let (pushed, checker, source) = setup(Duration::from_millis(50));
        let path = PathBuf::from("/w/src/lib.rs");
        pushed.push(path.clone(), vec![error("before the edit")]);
        source.file_changing(&path);
        let files = source.diagnostics_for(std::slice::from_ref(&path)).await;
        assert_eq!(messages(&files), ["from the checker"]);
        assert_eq!(*checker.calls.lock(), 1);
    }

    #[tokio::test]
    async fn without_a_fallback_a_stale_set_is_returned_marked_stale() {
        let pushed = Arc::new(PushedDiagnostics::new());
        let source =
            PushedFirst::new(pushed.clone(), None).with_patience(Duration::from_millis(50));
        let path = PathBuf::from("/w/src/lib.rs");
        pushed.push(path.clone(), vec![error("before the edit")]);
        source.file_changing(&path);
        let files = source.diagnostics_for(std::slice::from_ref(&path)).await;
        assert_eq!(messages(&files), ["before the edit"]);
        assert_eq!(
            files[0].checked_by, None,
            "stale sets do not count as checked"
        );
        assert!(
            files[0].error.as_deref().unwrap().contains("may be stale"),
            "{:?}",
            files[0].error
        );
        let never = PathBuf::from("/w/src/never.rs");
        let files = source.diagnostics_for(std::slice::from_ref(&never)).await;
        assert!(files[0].checked_by.is_none() && files[0].error.is_some());
    }

    #[test]
    fn oversized_pushes_are_capped_and_the_oldest_files_evicted() {
        let pushed = PushedDiagnostics::new();
        let many: Vec<Diagnostic> = (0..MAX_PUSHED_PER_FILE + 5).map(|_| error("x")).collect();
        pushed.push(PathBuf::from("/w/first.rs"), many);
        assert_eq!(
            pushed
                .snapshot(Path::new("/w/first.rs"))
                .unwrap()
                .diagnostics
                .len(),
            MAX_PUSHED_PER_FILE
        );
        for n in 0..MAX_TRACKED_FILES {
            pushed.push(PathBuf::from(format!("/w/f{n}.rs")), Vec::new());
        }
        assert!(pushed.snapshot(Path::new("/w/first.rs")).is_none());
        assert!(pushed.snapshot(Path::new("/w/f0.rs")).is_some());
    }

    #[test]
    fn configured_limits_cap_each_file_and_the_total_oldest_first() {
        let pushed = PushedDiagnostics::new();
        pushed.set_limits(PushedLimits {
            per_file: 3,
            total: 5,
            files: 100,
        });
        let five: Vec<Diagnostic> = (0..5).map(|_| error("x")).collect();
        pushed.push(PathBuf::from("/w/a.rs"), five.clone());
        assert_eq!(pushed.kept(), (1, 3), "the per-file cap applies");
        pushed.push(PathBuf::from("/w/b.rs"), vec![error("b")]);
        assert_eq!(pushed.kept(), (2, 4));
        // Three more would make 7 > 5: the oldest file (a.rs) goes.
        pushed.push(PathBuf::from("/w/c.rs"), five);
        assert!(pushed.snapshot(Path::new("/w/a.rs")).is_none());
        assert_eq!(pushed.kept(), (2, 4));
        // Pushing a file again replaces its count rather than adding to it.
        pushed.push(PathBuf::from("/w/b.rs"), vec![error("b"), error("b2")]);
        assert_eq!(pushed.kept(), (2, 5));
        assert!(pushed.snapshot(Path::new("/w/c.rs")).is_some());
    }
}
