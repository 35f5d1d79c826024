//! The workspace's first index build, run behind the agent's turns instead of before them.
//!
//! The first prompt starts the build on a thread of its own (one per agent, that is per
//! workspace, shared by its sessions) and waits for it at most [`TURN_PATIENCE`]: a small
//! workspace is indexed by then and its first turn has the repo map and retrieval as before; a
//! large one's turn starts without them (the model is told why, `crate::turn`), and the index's
//! tools answer that it is still being built (`lode_tools::index_wait`). Meanwhile each session
//! that prompted while the build had run longer than [`SHOW_AFTER`] sees its progress
//! ([`AgentEvent::IndexProgress`]: a card in the editor, a line on stderr in the terminal), at
//! most once per [`REPORT_EVERY`], until it ends.
//!
//! Who builds does not matter here: a watcher holding the index's lease in this process
//! (`lode acp`) or the agent's own refresh both count in [`lode_index::Workspace::build_progress`].

use std::collections::HashSet;
use std::sync::Arc;
use std::time::Duration;

use lode_index::{BuildProgress, Workspace};
use parking_lot::Mutex;

use crate::event::{AgentEvent, IndexStage};
use crate::host::SessionHost;

/// The longest a turn waits for the index before it starts without it.
pub const TURN_PATIENCE: Duration = Duration::from_millis(1000);

/// A build still running after this long is shown to the session (a shorter one is not).
pub const SHOW_AFTER: Duration = Duration::from_millis(250);

/// Progress is reported at most this often.
pub const REPORT_EVERY: Duration = Duration::from_secs(1);

/// How often the build is looked at.
const POLL: Duration = Duration::from_millis(50);

/// Starts bringing `index` up to date on a thread of its own, counted as a build in progress
/// from now until it is done.
pub(crate) fn start_build(index: Arc<Workspace>) {
    let counted = index.build_activity().begin();
    let spawned = std::thread::Builder::new()
        .name("lode-index-build".into())
        .spawn(move || {
            let _counted = counted;
            // A watcher holding the index's lease (`lode watch`, or this process's own in
            // `lode acp`) knows what changed; without one, a quick refresh; when another
            // process is writing, the index as it stands.
            if let Err(error) = index.bring_up_to_date(&|_| {}) {
                tracing::error!(%error, "indexing failed");
            }
        });
    if let Err(error) = spawned {
        tracing::error!(%error, "cannot start indexing");
    }
}

/// Waits until `index` is not being built, at most `patience` (`None`: as long as it takes).
/// Returns whether it is built.
pub(crate) async fn wait_until_built(index: &Workspace, patience: Option<Duration>) -> bool {
    let deadline = patience.map(|patience| tokio::time::Instant::now() + patience);
    loop {
        if index.build_progress().is_none() {
            return true;
        }
        if deadline.is_some_and(|deadline| tokio::time::Instant::now() >= deadline) {
            return false;
        }
        tokio::time::sleep(POLL).await;
    }
}

/// The sessions being shown a build's progress now (one card per session).
#[derive(Default)]
pub(crate) struct ProgressShown {
    sessions: Mutex<HashSet<String>>,
}

impl ProgressShown {
    /// Shows the build of `index` in progress to `session_id` through `host`, until it ends,
    /// unless that session is already being shown it. Reports go out from a task of their own,
    /// which outlives the turn when the build does.
    pub(crate) fn show(
        self: &Arc<Self>,
        index: &Arc<Workspace>,
        session_id: &str,
        host: Arc<dyn SessionHost>,
    ) {
        let Some(first) = index.build_progress() else {
            return;
        };
        if !self.sessions.lock().insert(session_id.to_owned()) {
            return;
        }
        let id = format!("lode-indexing-{}", uuid::Uuid::now_v7().simple());
        let report = move |stage, progress: BuildProgress| {
            host.emit(AgentEvent::IndexProgress {
                id: id.clone(),
                stage,
                done: progress.done,
                total: progress.total,
            })
        };
        report(IndexStage::Started, first);
        let shown = self.clone();
        let index = index.clone();
        let session_id = session_id.to_owned();
        tokio::spawn(async move {
            let (mut reported, mut latest) = (first, first);
            let mut reported_at = tokio::time::Instant::now();
            loop {
                tokio::time::sleep(POLL).await;
                let Some(progress) = index.build_progress() else {
                    // The final count: what the build last said it had found.
                    let total = latest.total.max(latest.done);
                    report(IndexStage::Finished, BuildProgress { done: total, total });
                    break;
                };
                latest = progress;
                if progress != reported && reported_at.elapsed() >= REPORT_EVERY {
                    report(IndexStage::Progress, progress);
                    reported = progress;
                    reported_at = tokio::time::Instant::now();
                }
            }
            shown.sessions.lock().remove(&session_id);
        });
    }
}
