//! The tools that read lode's own index (code search, symbols, references, the map, navigation
//! by index) while that index is being built: a read would wait for the whole build, so they
//! wait a short, bounded time for it to end and otherwise answer at once that the index is
//! still being built, with how far it has come and what works meanwhile.

use std::time::Duration;

use lode_index::{BuildProgress, Workspace};
use tokio_util::sync::CancellationToken;

use crate::{ToolError, ToolErrorCategory};

/// The longest a tool waits for a build in progress before answering without the index.
pub const INDEX_PATIENCE: Duration = Duration::from_millis(1500);

/// How often a waiting tool looks again.
const POLL: Duration = Duration::from_millis(50);

/// Returns once `index` is not being built, waiting at most `patience`; else the answer that
/// the index is still being built. A cancelled call stops waiting at once.
pub async fn wait_for_index(
    index: &Workspace,
    patience: Duration,
    cancel: &CancellationToken,
) -> Result<(), ToolError> {
    let deadline = tokio::time::Instant::now() + patience;
    loop {
        let Some(progress) = index.build_progress() else {
            return Ok(());
        };
        if tokio::time::Instant::now() >= deadline {
            return Err(still_building(progress));
        }
        tokio::select! {
            () = cancel.cancelled() => {
                return Err(ToolError::new(ToolErrorCategory::Cancelled, "cancelled", false));
            }
            () = tokio::time::sleep(POLL) => {}
        }
    }
}

/// What a tool answers while the index is being built: retryable, since it will be ready.
pub fn still_building(progress: BuildProgress) -> ToolError {
    ToolError::new(
        ToolErrorCategory::Failed,
        format!(
            "the code index is still being built ({progress} indexed); this tool answers once \
             it is ready. Meanwhile use grep, list_files and read_file, or try again shortly."
        ),
        true,
    )
}
