//! Reading and writing protocol messages without trusting the peer, for every stdio server in
//! lode: newline-delimited JSON-RPC (ACP, MCP) and the LSP base protocol's `Content-Length`
//! frames, one shared cap (a frame longer than the limit is skipped without being held in
//! memory, and reported with its length and first bytes), and the stdio [`guard`] that `lode
//! lsp` and `lode mcp` put in front of their protocol libraries.
//!
//! This crate owns only the byte-level framing and the plumbing. It knows nothing about JSON,
//! JSON-RPC or any protocol's messages; each server decides what to answer for an oversized or
//! malformed frame (through its [`Gate`]).

mod content_length;
mod guard;
mod lines;

use tokio::io::{AsyncBufRead, AsyncWrite};

pub use guard::{Doors, Gate, GuardedPipes, Stopped, guard};

/// Bytes of an oversized frame kept (to find its request id, say).
pub const OVERSIZED_HEAD: usize = 4 * 1024;

/// One unit read from a framed stream.
#[derive(Debug, PartialEq, Eq)]
pub enum Frame {
    /// A complete message body (a line without its `\n` and a `\r` before it, or the body
    /// after the headers). Bytes as they came: nothing checks that they are UTF-8.
    Message(Vec<u8>),
    /// A message longer than allowed: `length` bytes were read and thrown away, except the
    /// first [`OVERSIZED_HEAD`] of them (`head`).
    Oversized { length: usize, head: Vec<u8> },
    /// A header block without a usable `Content-Length` (LSP framing only); nothing of a body
    /// was read.
    BadHeader(String),
}

/// How messages are delimited on a stream.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Framing {
    /// One message per `\n`-terminated line (ACP and MCP over stdio). The end of input ends a
    /// last line without a newline.
    Lines,
    /// `Content-Length: N\r\n\r\n` headers and N bytes (the LSP base protocol). The end of
    /// input inside a header or a body is an error.
    ContentLength,
}

impl Framing {
    /// Reads the next frame of at most `limit` bytes of body; `None` at the end of input
    /// between frames.
    pub async fn read<R: AsyncBufRead + Unpin>(
        self,
        reader: &mut R,
        limit: usize,
    ) -> std::io::Result<Option<Frame>> {
        match self {
            Framing::Lines => lines::read(reader, limit).await,
            Framing::ContentLength => content_length::read(reader, limit).await,
        }
    }

    /// Writes one message body, framed, and flushes.
    pub async fn write<W: AsyncWrite + Unpin>(
        self,
        writer: &mut W,
        body: &[u8],
    ) -> std::io::Result<()> {
        match self {
            Framing::Lines => lines::write(writer, body).await,
            Framing::ContentLength => content_length::write(writer, body).await,
        }
    }
}

#[cfg(test)]
mod tests;
