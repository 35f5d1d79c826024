//! The bridge between lode-index's synchronous `VectorStore` calls and the async Qdrant client.
//!
//! A [`Bridge`] owns a small multi-thread tokio runtime of its own. A call spawns the future on
//! that runtime and waits for its result on a plain channel, so it never nests `block_on` in the
//! caller's runtime: calling from a plain thread and from inside another tokio runtime both
//! work (from async code, the wait blocks that worker thread, as any synchronous store does).

use std::future::Future;
use std::sync::mpsc;

use tokio::runtime::Runtime;

/// A private runtime that runs futures to completion for synchronous callers.
pub(crate) struct Bridge {
    /// `None` only during drop.
    runtime: Option<Runtime>,
}

impl Bridge {
    pub(crate) fn new() -> std::io::Result<Bridge> {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .thread_name("lode-qdrant")
            .enable_all()
            .build()?;
        Ok(Bridge {
            runtime: Some(runtime),
        })
    }

    /// Runs `future` on the private runtime and returns its output, or `None` if the runtime
    /// dropped the task (it panicked).
    pub(crate) fn run<F>(&self, future: F) -> Option<F::Output>
    where
        F: Future + Send + 'static,
        F::Output: Send + 'static,
    {
        let runtime = self.runtime.as_ref()?;
        let (sender, receiver) = mpsc::sync_channel(1);
        runtime.spawn(async move {
            // The receiver only goes away if the caller is gone; nothing to report then.
            let _ = sender.send(future.await);
        });
        receiver.recv().ok()
    }
}

impl Drop for Bridge {
    fn drop(&mut self) {
        // Dropping a runtime blocks, which panics inside another runtime; this does not.
        if let Some(runtime) = self.runtime.take() {
            runtime.shutdown_background();
        }
    }
}
