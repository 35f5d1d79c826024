//! The lease holder's side of the socket: one thread accepts connections, each connection gets
//! a thread that reads one request frame, answers it and closes. Flushes go through the
//! watcher's event loop (so they see every earlier file-system event); queries then run on the
//! holder's own workspace, which stays open and warm between them.

use parking_lot::Mutex;
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, mpsc};
use std::time::{Duration, Instant};

use super::Message;
use super::protocol::{self, HolderStatus, MAX_REQUEST_BYTES, Request, RequestKind, Response};
use crate::workspace::Workspace;

/// How long a connection may take to send its request.
const REQUEST_PATIENCE: Duration = Duration::from_secs(2);

/// What the socket threads share about the holder.
pub(crate) struct HolderState {
    pub holder: &'static str,
    pub root: PathBuf,
    pub settings: String,
    pub started: Instant,
    pub requests: AtomicU64,
    pub last_request: Mutex<Instant>,
    pub idle_timeout: Option<Duration>,
    pub queries: Option<Arc<Workspace>>,
    pub on_stop: Option<Box<dyn Fn() + Send + Sync>>,
}

impl HolderState {
    pub fn idle_for(&self) -> Duration {
        self.last_request.lock().elapsed()
    }

    /// Counts a request; flushes and queries (not status checks) also reset the idle clock.
    fn touch(&self, kind: &RequestKind) {
        self.requests.fetch_add(1, Ordering::Relaxed);
        if matches!(kind, RequestKind::Status | RequestKind::Stop) {
            return;
        }
        *self.last_request.lock() = Instant::now();
    }

    fn status(&self) -> HolderStatus {
        HolderStatus {
            pid: std::process::id(),
            holder: self.holder.to_owned(),
            lode: env!("CARGO_PKG_VERSION").to_owned(),
            root: self.root.display().to_string(),
            uptime_secs: self.started.elapsed().as_secs(),
            requests: self.requests.load(Ordering::Relaxed),
            idle_secs: self.idle_for().as_secs(),
            idle_timeout_secs: self.idle_timeout.map(|timeout| timeout.as_secs()),
        }
    }
}

/// Accepts connections until the watcher stops; each is answered on its own thread.
pub(crate) fn serve(
    listener: UnixListener,
    messages: mpsc::Sender<Message>,
    stopping: Arc<AtomicBool>,
    holder: Arc<HolderState>,
) {
    for stream in listener.incoming() {
        if stopping.load(Ordering::SeqCst) {
            return;
        }
        let Ok(stream) = stream else { continue };
        let messages = messages.clone();
        let holder = holder.clone();
        let _ = std::thread::Builder::new()
            .name("lode-watch-answer".into())
            .spawn(move || answer(stream, &messages, &holder));
    }
}

fn answer(mut stream: UnixStream, messages: &mpsc::Sender<Message>, holder: &HolderState) {
    if stream.set_read_timeout(Some(REQUEST_PATIENCE)).is_err() {
        return;
    }
    let request: Request = match protocol::read_frame(&mut stream, MAX_REQUEST_BYTES) {
        Ok(request) => request,
        Err(error) => {
            let reason = format!("malformed request: {error}");
            let _ = protocol::write_frame(&mut stream, &Response::Refused { reason });
            return;
        }
    };
    holder.touch(&request.kind);
    let Some(response) = respond(request, messages, holder) else {
        // The watcher is stopping: closing without an answer says so.
        return;
    };
    let _ = protocol::write_frame(&mut stream, &response);
}

fn respond(
    request: Request,
    messages: &mpsc::Sender<Message>,
    holder: &HolderState,
) -> Option<Response> {
    let pid = std::process::id();
    let needs_settings = matches!(request.kind, RequestKind::Flush | RequestKind::Query { .. });
    if needs_settings && request.settings != holder.settings {
        return Some(Response::Refused {
            reason: "this index is kept with other settings (exclusions, size cap, embedder, vector store or lode version)".to_owned(),
        });
    }
    Some(match request.kind {
        RequestKind::Flush => match flush(messages)? {
            Ok(applied) => Response::Flushed { pid, applied },
            Err(message) => Response::Failed { message },
        },
        RequestKind::Query { fresh, query } => {
            let Some(workspace) = &holder.queries else {
                return Some(Response::Refused {
                    reason: format!(
                        "the {} holding this index does not answer queries",
                        holder.holder
                    ),
                });
            };
            let flush_started = Instant::now();
            let applied = if fresh {
                match flush(messages)? {
                    Ok(applied) => Some(applied),
                    Err(message) => return Some(Response::Failed { message }),
                }
            } else {
                None
            };
            let flush_time = flush_started.elapsed();
            let query_started = Instant::now();
            // Another handle (an editor's live writer, another process) may have committed.
            if let Err(error) = workspace.reload() {
                return Some(Response::Failed {
                    message: error.to_string(),
                });
            }
            match workspace.answer(&query) {
                Ok(answer) => Response::Answer {
                    pid,
                    applied,
                    flush_micros: micros(flush_time),
                    query_micros: micros(query_started.elapsed()),
                    answer,
                },
                Err(error) => Response::Failed {
                    message: error.to_string(),
                },
            }
        }
        RequestKind::Status => Response::Status(holder.status()),
        RequestKind::Stop => match &holder.on_stop {
            Some(stop) => {
                stop();
                Response::Stopping { pid }
            }
            None => Response::Refused {
                reason: format!(
                    "process {pid} is `lode {}`, not a background daemon: stop it where it runs",
                    holder.holder
                ),
            },
        },
    })
}

/// Has the event loop apply what it has seen; `None` when it is stopping.
fn flush(messages: &mpsc::Sender<Message>) -> Option<Result<usize, String>> {
    let (done, outcome) = mpsc::channel();
    messages.send(Message::Flush(done)).ok()?;
    outcome.recv().ok()
}

fn micros(duration: Duration) -> u64 {
    u64::try_from(duration.as_micros()).unwrap_or(u64::MAX)
}
