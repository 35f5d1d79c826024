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
}
