//! The wire format between a query process and the lease holder: one request, one answer, each
//! a frame of `LODE`, the protocol version (u32, little endian), the body's length (u32, little
//! endian) and a JSON body. The magic and version come first so a foreign or older process on
//! the socket is recognised before any body is read, and the length bounds what is read.

use std::io::{Read, Write};

use serde::{Deserialize, Serialize};

use crate::query::{Answer, Query};

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
    /// The request was not acceptable: other settings, a malformed frame, a stop sent to a
    /// holder that is not a daemon.
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
}
