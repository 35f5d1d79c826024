//! The lease holder's side of the socket: one thread accepts connections, each connection gets
//! a thread that reads one request frame, answers it and closes. Flushes go through the
//! watcher's event loop (so they see every earlier file-system event); queries then run on the
//! holder's own workspace, which stays open and warm between them. An `index` request runs in
//! the event loop too, in turn with the batches it applies, while its connection's thread sends
//! progress frames. A peer of another user is refused whatever it asks (the socket file is the
//! user's alone; this is the second lock on the door).

use parking_lot::Mutex;
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, mpsc};
use std::time::{Duration, Instant};

use super::Message;
use super::protocol::{
    self, HolderStatus, IndexPhase, MAX_REQUEST_BYTES, PROGRESS_INTERVAL, Request, RequestKind,
    Response,
};
use crate::workspace::{RefreshPhase, RefreshProgress, Workspace};

/// How long a connection may take to send its request.
const REQUEST_PATIENCE: Duration = Duration::from_secs(2);

/// How long a frame may take to be written (a client that stopped reading is dropped).
const WRITE_PATIENCE: Duration = Duration::from_secs(5);

/// Progress frames of an `index` request are sent at most this often.
const PROGRESS_TICK: Duration = Duration::from_millis(200);

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
    if stream.set_read_timeout(Some(REQUEST_PATIENCE)).is_err()
        || stream.set_write_timeout(Some(WRITE_PATIENCE)).is_err()
    {
        return;
    }
    // The request is read (bounded) even from a peer that is refused, so that the refusal is
    // not lost to a connection reset over unread bytes.
    let request: Result<Request, _> = protocol::read_frame(&mut stream, MAX_REQUEST_BYTES);
    if !super::lease::peer_is_this_user(&stream) {
        let reason = "the connecting process belongs to another user".to_owned();
        let _ = protocol::write_frame(&mut stream, &Response::Refused { reason });
        return;
    }
    let request = match request {
        Ok(request) => request,
        Err(error) => {
            let reason = format!("malformed request: {error}");
            let _ = protocol::write_frame(&mut stream, &Response::Refused { reason });
            return;
        }
    };
    holder.touch(&request.kind);
    if request.kind == RequestKind::Index {
        if let Some(refused) = refuse_other_settings(&request, holder) {
            let _ = protocol::write_frame(&mut stream, &refused);
        } else {
            index(stream, messages, holder);
        }
        return;
    }
    let Some(response) = respond(request, messages, holder) else {
        // The watcher is stopping: closing without an answer says so.
        return;
    };
    let _ = protocol::write_frame(&mut stream, &response);
}

/// A refusal when `request` needs the holder's settings and names others.
fn refuse_other_settings(request: &Request, holder: &HolderState) -> Option<Response> {
    let needs_settings = matches!(
        request.kind,
        RequestKind::Flush | RequestKind::Query { .. } | RequestKind::Index
    );
    (needs_settings && request.settings != holder.settings).then(|| Response::Refused {
        reason: "this index is kept with other settings (exclusions, size cap, embedder, vector store or lode version)".to_owned(),
    })
}

fn respond(
    request: Request,
    messages: &mpsc::Sender<Message>,
    holder: &HolderState,
) -> Option<Response> {
    let pid = std::process::id();
    if let Some(refused) = refuse_other_settings(&request, holder) {
        return Some(refused);
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
        // Answered by `index`, with its progress frames.
        RequestKind::Index => return None,
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

/// Has the event loop refresh the whole index, sending a progress frame at least every
/// [`PROGRESS_INTERVAL`] until the last frame. A client that goes away does not stop the
/// refresh; a holder that stops meanwhile closes the connection without a last frame.
fn index(mut stream: UnixStream, messages: &mpsc::Sender<Message>, holder: &HolderState) {
    let pid = std::process::id();
    let (progress_sender, progress) = mpsc::channel::<RefreshProgress>();
    let (reply, outcome) = mpsc::channel();
    let report = move |step: RefreshProgress| {
        let _ = progress_sender.send(step);
    };
    let request = Message::Index {
        progress: Box::new(report),
        reply,
    };
    if messages.send(request).is_err() {
        return; // stopping
    }
    let mut latest = (IndexPhase::Waiting, 0, 0);
    let mut sent: Option<((IndexPhase, usize, usize), Instant)> = None;
    let mut listening = true;
    let finished = loop {
        match outcome.recv_timeout(PROGRESS_TICK) {
            Ok(finished) => break finished,
            Err(mpsc::RecvTimeoutError::Disconnected) => return,
            Err(mpsc::RecvTimeoutError::Timeout) => {}
        }
        for step in progress.try_iter() {
            let phase = match step.phase {
                RefreshPhase::Parse => IndexPhase::Parse,
                RefreshPhase::Embed => IndexPhase::Embed,
            };
            latest = (phase, step.done, step.total);
        }
        let due = sent.is_none_or(|(last, at)| last != latest || at.elapsed() >= PROGRESS_INTERVAL);
        if listening && due {
            let (phase, done, total) = latest;
            let frame = Response::Progress {
                pid,
                phase,
                done,
                total,
            };
            // A client that went away: the refresh goes on, nothing more is sent.
            listening = protocol::write_frame(&mut stream, &frame).is_ok();
            sent = Some((latest, Instant::now()));
        }
    };
    if !listening {
        return;
    }
    let last = match finished {
        Ok(stats) => {
            let lexical_segments = holder.queries.as_ref().and_then(|workspace| {
                workspace.reload().ok()?;
                Some(workspace.lexical_segment_count())
            });
            Response::Indexed {
                pid,
                stats: Box::new(stats),
                lexical_segments,
            }
        }
        Err(message) => Response::Failed { message },
    };
    let _ = protocol::write_frame(&mut stream, &last);
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
