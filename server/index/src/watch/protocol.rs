//! The wire format between a query process and the lease holder: one request, one answer, each
//! a frame of `LODE`, the protocol version (u32, little endian), the body's length (u32, little
//! endian) and a JSON body. The magic and version come first so a foreign or older process on
//! the socket is recognised before any body is read, and the length bounds what is read.
//!
//! One request has a longer answer: `index` (what `lode index` sends) is answered by
//! [`Response::Progress`] frames, at least one every [`PROGRESS_INTERVAL`] while the holder
//! works (or waits to start), then one final frame (`indexed`, `failed` or `refused`). A client
//! that hears nothing for longer than it is willing to wait knows the holder is hung.

use std::io::{Read, Write};
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::query::{Answer, Query};
use crate::workspace::RefreshStats;

/// A holder answering `index` sends a progress frame at least this often.
pub const PROGRESS_INTERVAL: Duration = Duration::from_secs(1);

/// Version of the lease file and the socket protocol; both sides must agree.
pub const PROTOCOL: u32 = 2;

/// First bytes of every frame.
pub const MAGIC: &[u8; 4] = b"LODE";

/// Largest request body a holder reads (a query is a few hundred bytes).
pub const MAX_REQUEST_BYTES: u32 = 1 << 20;

/// Largest answer body a query process reads (a big repo map or 10k hits fit).
pub const MAX_ANSWER_BYTES: u32 = 256 << 20;

/// What a query process asks for.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Request {
    /// The asker's [`crate::Workspace::watch_settings`]: a holder indexing with other settings
    /// refuses (the lease file says the same, but the holder checks again).
    pub settings: String,
    #[serde(flatten)]
    pub kind: RequestKind,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "request", rename_all = "snake_case")]
pub enum RequestKind {
    /// Apply every change seen so far, then answer.
    Flush,
    /// Run a read query; after a flush when `fresh`.
    Query { fresh: bool, query: Query },
    /// Who holds the lease and how busy it is.
    Status,
    /// Stop (honoured only by a background daemon).
    Stop,
    /// Bring the index up to date as `lode index` does (a full walk of the tree, then the
    /// vectors), after any update already under way. Answered by progress frames, then
    /// [`Response::Indexed`].
    Index,
}

/// What a holder answering `index` is doing.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum IndexPhase {
    /// Finishing an update already under way (the request is queued behind it).
    Waiting,
    /// Reading and parsing files: `done` of `total` files.
    Parse,
    /// Embedding chunks: `done` of `total` chunks.
    Embed,
}

/// What the holder answers.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "response", rename_all = "snake_case")]
pub enum Response {
    Flushed {
        pid: u32,
        applied: usize,
    },
    Answer {
        pid: u32,
        /// Paths applied by the flush before the query (`None`: no flush was asked for).
        applied: Option<usize>,
        flush_micros: u64,
        query_micros: u64,
        answer: Answer,
    },
    Status(HolderStatus),
    Stopping {
        pid: u32,
    },
    /// Progress of an `index` request; more frames follow.
    Progress {
        pid: u32,
        phase: IndexPhase,
        done: usize,
        total: usize,
    },
    /// The last frame of an `index` request: what the refresh did.
    Indexed {
        pid: u32,
        stats: Box<RefreshStats>,
        /// Segments of the lexical index afterwards (`None`: the holder keeps no query handle).
        lexical_segments: Option<usize>,
    },
    /// The request was not acceptable: other settings, a malformed frame, a stop sent to a
    /// holder that is not a daemon, a peer of another user.
    Refused {
        reason: String,
    },
    /// The holder could not do it (the flush or the query failed).
    Failed {
        message: String,
    },
}

/// A lease holder's description of itself.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct HolderStatus {
    pub pid: u32,
    /// `daemon`, `watch`, `lsp` or `acp`.
    pub holder: String,
    /// The lode version of the holder.
    pub lode: String,
    pub root: String,
    pub uptime_secs: u64,
    /// Queries and flushes answered.
    pub requests: u64,
    /// Seconds since the last flush or query (or the start).
    pub idle_secs: u64,
    /// When a daemon exits by itself once idle.
    pub idle_timeout_secs: Option<u64>,
}

/// Errors reading or writing a frame.
#[derive(Debug, thiserror::Error)]
pub enum FrameError {
    #[error("{0}")]
    Io(#[from] std::io::Error),
    #[error("not a lode frame (the peer speaks another protocol)")]
    Magic,
    #[error("protocol {found} (this lode speaks {PROTOCOL})")]
    Version { found: u32 },
    #[error("a frame of {length} bytes exceeds the limit of {limit}")]
    TooLarge { length: u32, limit: u32 },
    #[error("malformed body: {0}")]
    Body(#[from] serde_json::Error),
}

/// Writes `body` as one frame.
pub fn write_frame(writer: &mut impl Write, body: &impl Serialize) -> Result<(), FrameError> {
    let json = serde_json::to_vec(body)?;
    let length = u32::try_from(json.len()).map_err(|_| FrameError::TooLarge {
        length: u32::MAX,
        limit: u32::MAX,
    })?;
    let mut frame = Vec::with_capacity(12 + json.len());
    frame.extend_from_slice(MAGIC);
    frame.extend_from_slice(&PROTOCOL.to_le_bytes());
    frame.extend_from_slice(&length.to_le_bytes());
    frame.extend_from_slice(&json);
    writer.write_all(&frame)?;
    writer.flush()?;
    Ok(())
}

/// Reads one frame whose body is at most `limit` bytes.
pub fn read_frame<T: for<'de> Deserialize<'de>>(
    reader: &mut impl Read,
    limit: u32,
) -> Result<T, FrameError> {
    // The magic alone first: a peer speaking another protocol may send fewer bytes than a
    // whole header and wait.
    let mut magic = [0u8; 4];
    reader.read_exact(&mut magic)?;
    if &magic != MAGIC {
        return Err(FrameError::Magic);
    }
    let mut header = [0u8; 8];
    reader.read_exact(&mut header)?;
    let version = u32::from_le_bytes([header[0], header[1], header[2], header[3]]);
    if version != PROTOCOL {
        return Err(FrameError::Version { found: version });
    }
    let length = u32::from_le_bytes([header[4], header[5], header[6], header[7]]);
    if length > limit {
        return Err(FrameError::TooLarge { length, limit });
    }
    let mut body = vec![0u8; length as usize];
    reader.read_exact(&mut body)?;
    Ok(serde_json::from_slice(&body)?)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn frame_of(body: &[u8], version: u32) -> Vec<u8> {
        let mut frame = MAGIC.to_vec();
        frame.extend_from_slice(&version.to_le_bytes());
        frame.extend_from_slice(&(body.len() as u32).to_le_bytes());
        frame.extend_from_slice(body);
        frame
    }

    #[test]
    fn a_request_round_trips() {
        let request = Request {
            settings: "abc".into(),
            kind: RequestKind::Query {
                fresh: true,
                query: Query::Symbols {
                    name: "parse".into(),
                    limit: 3,
                },
            },
        };
        let mut bytes = Vec::new();
        write_frame(&mut bytes, &request).unwrap();
        let back: Request = read_frame(&mut bytes.as_slice(), MAX_REQUEST_BYTES).unwrap();
        assert_eq!(back, request);
    }

    #[test]
    fn foreign_old_oversized_truncated_and_malformed_frames_are_rejected() {
        let read = |bytes: &[u8]| read_frame::<Request>(&mut &bytes[..], 64);
        assert!(matches!(read(b"flush 1\n\0\0\0\0"), Err(FrameError::Magic)));
        assert!(matches!(
            read(&frame_of(b"{}", 1)),
            Err(FrameError::Version { found: 1 })
        ));
        assert!(matches!(
            read(&frame_of(&[b' '; 65], PROTOCOL)),
            Err(FrameError::TooLarge { length: 65, .. })
        ));
        let mut truncated = frame_of(br#"{"settings":"x","request":"flush"}"#, PROTOCOL);
        truncated.truncate(20);
        assert!(matches!(read(&truncated), Err(FrameError::Io(_))));
        assert!(matches!(
            read(&frame_of(br#"{"settings":"x","request":"drop"}"#, PROTOCOL)),
            Err(FrameError::Body(_))
        ));
        assert!(matches!(read(b"LO"), Err(FrameError::Io(_))));
    }

    /// One raw exchange with a holder's socket: the bytes sent, the answer frame's JSON body
    /// (`None`: no answer).
    fn exchange(socket: &std::path::Path, bytes: &[u8]) -> Option<serde_json::Value> {
        let mut stream = std::os::unix::net::UnixStream::connect(socket).unwrap();
        stream
            .set_read_timeout(Some(std::time::Duration::from_secs(30)))
            .unwrap();
        let _ = stream.write_all(bytes);
        let _ = stream.shutdown(std::net::Shutdown::Write);
        let mut answer = Vec::new();
        let _ = stream.read_to_end(&mut answer);
        if answer.len() < 12 {
            return None;
        }
        assert_eq!(&answer[..4], MAGIC);
        Some(serde_json::from_slice(&answer[12..]).unwrap())
    }

    fn refusal(answer: Option<serde_json::Value>) -> String {
        let answer = answer.expect("an answer");
        assert_eq!(answer["response"], "refused", "{answer}");
        answer["reason"].as_str().unwrap().to_owned()
    }

    /// A real watcher on a real index, its socket fed malformed, oversized and out-of-order
    /// input by hand.
    #[test]
    fn the_flush_socket_answers_bad_input_with_an_error_and_keeps_serving() {
        use std::sync::Arc;

        use crate::watch::lease::{DEFAULT_FLUSH_TIMEOUT, NotWatched};
        use crate::watch::{WatchOptions, Watcher, WorkspaceSink};
        use crate::workspace::{Workspace, WorkspaceOptions};

        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("src")).unwrap();
        std::fs::write(dir.path().join("src/lib.rs"), "pub fn alpha() {}\n").unwrap();
        let workspace = Workspace::open(WorkspaceOptions::new(dir.path())).unwrap();
        workspace.refresh(&|_| {}).unwrap();
        let workspace = Arc::new(workspace);
        let watcher = Watcher::start(
            WatchOptions::for_workspace(&workspace),
            Box::new(WorkspaceSink(workspace.clone())),
        )
        .unwrap();
        let socket = watcher.socket().unwrap().to_path_buf();
        let frame = |body: &[u8]| frame_of(body, PROTOCOL);

        assert!(refusal(exchange(&socket, b"hello\n")).contains("not a lode frame"));
        assert!(refusal(exchange(&socket, b"flush 1\n")).contains("not a lode frame"));
        assert!(refusal(exchange(&socket, &frame_of(b"{}", 99))).contains("protocol 99"));
        let huge = frame(&vec![b' '; 2 << 20]);
        assert!(refusal(exchange(&socket, &huge)).contains("exceeds the limit"));
        // Connected and gone without a word, or a request cut short.
        drop(std::os::unix::net::UnixStream::connect(&socket).unwrap());
        assert!(refusal(exchange(&socket, &frame(b"{}")[..13])).contains("malformed"));
        // A query: this watcher was given no workspace to answer with.
        let settings = workspace.watch_settings();
        let query = format!(
            r#"{{"settings":"{settings}","request":"query","fresh":false,"query":{{"kind":"symbols","name":"alpha","limit":1}}}}"#
        );
        assert!(refusal(exchange(&socket, &frame(query.as_bytes()))).contains("does not answer"));
        // A stop: only a daemon may be stopped from outside.
        let stop = br#"{"settings":"","request":"stop"}"#;
        assert!(refusal(exchange(&socket, &frame(stop))).contains("not a background daemon"));

        // Still serving: a well-formed flush through the library, and one by hand.
        let flushed = workspace.flush_watcher(DEFAULT_FLUSH_TIMEOUT).unwrap();
        assert_eq!(flushed.watcher_pid, std::process::id());
        let flush = format!(r#"{{"settings":"{settings}","request":"flush"}}"#);
        let answer = exchange(&socket, &frame(flush.as_bytes())).unwrap();
        assert_eq!(answer["response"], "flushed", "{answer}");
        assert_eq!(answer["pid"], std::process::id());

        // Stopped: the lease is gone and a flush says so.
        drop(watcher);
        assert!(!socket.exists());
        assert_eq!(
            workspace.flush_watcher(DEFAULT_FLUSH_TIMEOUT),
            Err(NotWatched::NoWatcher)
        );
    }

    /// Every frame of a raw exchange: the bytes sent, then everything read until the holder
    /// closed (`index` answers with several frames).
    fn frames(socket: &std::path::Path, bytes: &[u8], close_write: bool) -> Vec<serde_json::Value> {
        let mut stream = std::os::unix::net::UnixStream::connect(socket).unwrap();
        stream
            .set_read_timeout(Some(std::time::Duration::from_secs(60)))
            .unwrap();
        let _ = stream.write_all(bytes);
        if close_write {
            let _ = stream.shutdown(std::net::Shutdown::Write);
        }
        let mut answer = Vec::new();
        let _ = stream.read_to_end(&mut answer);
        let mut found = Vec::new();
        let mut rest = answer.as_slice();
        while !rest.is_empty() {
            assert!(rest.len() >= 12, "a cut frame: {rest:?}");
            assert_eq!(&rest[..4], MAGIC);
            let length = u32::from_le_bytes([rest[8], rest[9], rest[10], rest[11]]) as usize;
            found.push(serde_json::from_slice(&rest[12..12 + length]).unwrap());
            rest = &rest[12 + length..];
        }
        found
    }

    /// A real watcher on a real index (three files), its workspace and its socket.
    fn watched_workspace() -> (
        tempfile::TempDir,
        std::sync::Arc<crate::workspace::Workspace>,
        crate::watch::Watcher,
        std::path::PathBuf,
    ) {
        use crate::watch::{WatchOptions, Watcher, WorkspaceSink};
        use crate::workspace::{Workspace, WorkspaceOptions};

        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("src")).unwrap();
        for name in ["a", "b", "c"] {
            std::fs::write(
                dir.path().join(format!("src/{name}.rs")),
                format!("pub fn {name}_one() {{}}\n"),
            )
            .unwrap();
        }
        let workspace = Workspace::open(WorkspaceOptions::new(dir.path())).unwrap();
        workspace.refresh(&|_| {}).unwrap();
        let workspace = std::sync::Arc::new(workspace);
        let mut options = WatchOptions::for_workspace(&workspace);
        options.queries = Some(workspace.clone());
        let watcher = Watcher::start(options, Box::new(WorkspaceSink(workspace.clone()))).unwrap();
        let socket = watcher.socket().unwrap().to_path_buf();
        (dir, workspace, watcher, socket)
    }

    /// `index`: the request `lode index` sends. Well-formed, it is answered by progress frames
    /// (none when it is quick) and the refresh's statistics; malformed, oversized, cut short,
    /// with other settings or sent out of order, it is refused or ignored, and the holder
    /// keeps serving.
    #[test]
    fn the_index_request_refreshes_and_bad_or_out_of_order_ones_are_refused() {
        use crate::watch::lease::{self, DEFAULT_FLUSH_TIMEOUT};

        let (dir, workspace, watcher, socket) = watched_workspace();
        let settings = workspace.watch_settings();
        let frame = |body: &[u8]| frame_of(body, PROTOCOL);
        let index = format!(r#"{{"settings":"{settings}","request":"index"}}"#);

        // Through the client: a new file is in the statistics and in the index afterwards.
        std::fs::write(dir.path().join("src/d.rs"), "pub fn d_new() {}\n").unwrap();
        let mut reports = Vec::new();
        let indexed = lease::index(
            workspace.index_dir(),
            &settings,
            std::time::Duration::from_secs(30),
            &mut |step| reports.push(step),
        )
        .unwrap();
        assert_eq!(indexed.holder_pid, std::process::id());
        assert_eq!(indexed.holder, "watch");
        assert_eq!((indexed.stats.files, indexed.stats.parsed), (4, 1));
        assert!(indexed.stats.walked);
        assert!(indexed.lexical_segments.is_some());
        assert!(
            reports
                .iter()
                .all(|step| step.holder_pid == std::process::id())
        );
        workspace.reload().unwrap();
        let found = workspace
            .answer(&Query::Symbols {
                name: "d_new".into(),
                limit: 1,
            })
            .unwrap();
        assert!(format!("{found:?}").contains("src/d.rs"), "{found:?}");

        // By hand: progress frames (if any) then one `indexed`, each naming this process.
        let answer = frames(&socket, &frame(index.as_bytes()), true);
        let (last, progress) = answer.split_last().unwrap();
        assert_eq!(last["response"], "indexed", "{answer:?}");
        assert_eq!(last["stats"]["files"], 4);
        assert_eq!(last["pid"], std::process::id());
        assert!(progress.iter().all(|frame| frame["response"] == "progress"));

        let refusal_of = |answer: Vec<serde_json::Value>| {
            assert_eq!(answer.len(), 1, "{answer:?}");
            refusal(answer.into_iter().next())
        };
        // Other settings.
        let other = r#"{"settings":"0000000000000000","request":"index"}"#;
        assert!(
            refusal_of(frames(&socket, &frame(other.as_bytes()), true)).contains("other settings")
        );
        // Malformed: a field of the wrong type, a response sent as a request, a frame cut short.
        let wrong_type = br#"{"settings":5,"request":"index"}"#;
        assert!(refusal_of(frames(&socket, &frame(wrong_type), true)).contains("malformed"));
        let a_response = br#"{"response":"indexed","pid":1,"stats":{},"lexical_segments":null}"#;
        assert!(refusal_of(frames(&socket, &frame(a_response), true)).contains("malformed"));
        let cut = frame(index.as_bytes());
        assert!(refusal_of(frames(&socket, &cut[..cut.len() - 3], true)).contains("malformed"));
        // Oversized: a length over the limit is refused before any body is read.
        let mut oversized = MAGIC.to_vec();
        oversized.extend_from_slice(&PROTOCOL.to_le_bytes());
        oversized.extend_from_slice(&(MAX_REQUEST_BYTES + 1).to_le_bytes());
        oversized.extend_from_slice(index.as_bytes());
        assert!(refusal_of(frames(&socket, &oversized, true)).contains("exceeds the limit"));

        // Out of order: two requests on one connection (the second is never read), and a
        // client that leaves before the answer (the refresh still happens).
        let mut twice = frame(index.as_bytes());
        twice.extend_from_slice(&frame(br#"{"settings":"","request":"stop"}"#));
        let answer = frames(&socket, &twice, false);
        assert_eq!(answer.last().unwrap()["response"], "indexed", "{answer:?}");
        std::fs::write(dir.path().join("src/e.rs"), "pub fn e_left_early() {}\n").unwrap();
        {
            let mut stream = std::os::unix::net::UnixStream::connect(&socket).unwrap();
            stream.write_all(&frame(index.as_bytes())).unwrap();
        }

        // Still serving after a client left mid-request.
        workspace.flush_watcher(DEFAULT_FLUSH_TIMEOUT).unwrap();
        let indexed = lease::index(
            workspace.index_dir(),
            &settings,
            std::time::Duration::from_secs(30),
            &mut |_| {},
        )
        .unwrap();
        assert_eq!(indexed.stats.files, 5);
        drop(watcher);
    }

    /// A holder that accepts and then says nothing (hung, or stopped with SIGSTOP) is reported
    /// as such once the patience given is over, with the lease that names it; one that closes
    /// mid-answer is gone.
    #[test]
    fn an_index_request_to_a_silent_or_dying_holder_fails_naming_it() {
        use crate::watch::lease::{self, LEASE_FILE, NotWatched, SOCKET_FILE};

        let dir = tempfile::tempdir().unwrap();
        let socket = dir.path().join(SOCKET_FILE);
        let listener = std::os::unix::net::UnixListener::bind(&socket).unwrap();
        let lease_text = format!(
            "lode-watch {PROTOCOL}\npid 4242\nholder daemon\nlode 0.1.0\nsocket {}\nsettings s\n",
            socket.display()
        );
        std::fs::write(dir.path().join(LEASE_FILE), lease_text).unwrap();
        // Silent: accepts (the kernel does, for a stopped process) and never answers.
        let silent = std::thread::spawn(move || {
            let (mut first, _) = listener.accept().unwrap();
            let (mut second, _) = listener.accept().unwrap();
            // The second one gets a progress frame, then the connection closes.
            let progress = Response::Progress {
                pid: 4242,
                phase: IndexPhase::Waiting,
                done: 0,
                total: 0,
            };
            let _: Result<Request, _> = read_frame(&mut second, MAX_REQUEST_BYTES);
            write_frame(&mut second, &progress).unwrap();
            drop(second);
            let _ = first.read(&mut [0u8; 1]);
        });
        let patience = std::time::Duration::from_millis(300);
        let error = lease::index(dir.path(), "s", patience, &mut |_| {}).unwrap_err();
        assert_eq!(error.reason, NotWatched::Timeout(patience));
        assert_eq!(error.lease.unwrap().pid, "4242");
        let mut heard = Vec::new();
        let error = lease::index(
            dir.path(),
            "s",
            std::time::Duration::from_secs(30),
            &mut |step| heard.push(step.phase),
        )
        .unwrap_err();
        assert!(matches!(error.reason, NotWatched::Gone(_)), "{error:?}");
        assert_eq!(heard, vec![IndexPhase::Waiting]);
        silent.join().unwrap();
    }
}
