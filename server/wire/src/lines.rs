//! Newline-delimited messages (ACP and MCP over stdio): one message per `\n`-terminated line.

use tokio::io::{AsyncBufRead, AsyncBufReadExt, AsyncWrite, AsyncWriteExt};

use crate::{Frame, OVERSIZED_HEAD};

/// Reads one `\n`-terminated line of at most `limit` bytes (without its `\n`, and without a
/// `\r` before it) without holding more than that in memory: a longer line is skipped to its
/// end, keeping only its first [`OVERSIZED_HEAD`] bytes. `None` at the end of input; a last
/// line without a newline still counts.
pub(crate) async fn read<R: AsyncBufRead + Unpin>(
    reader: &mut R,
    limit: usize,
) -> std::io::Result<Option<Frame>> {
    let mut line = Vec::new();
    let mut length = 0usize;
    let mut oversized = false;
    let mut seen_any = false;
    loop {
        let buffer = reader.fill_buf().await?;
        if buffer.is_empty() {
            if !seen_any {
                return Ok(None);
            }
            break;
        }
        seen_any = true;
        let (chunk, newline) = match buffer.iter().position(|&byte| byte == b'\n') {
            Some(end) => (&buffer[..end], true),
            None => (buffer, false),
        };
        length = length.saturating_add(chunk.len());
        if !oversized && length > limit {
            oversized = true;
            line.truncate(OVERSIZED_HEAD);
            line.shrink_to_fit();
        }
        let keep = if oversized {
            OVERSIZED_HEAD.saturating_sub(line.len()).min(chunk.len())
        } else {
            chunk.len()
        };
        line.extend_from_slice(&chunk[..keep]);
        let consumed = chunk.len() + usize::from(newline);
        reader.consume(consumed);
        if newline {
            break;
        }
    }
    if oversized {
        return Ok(Some(Frame::Oversized { length, head: line }));
    }
    if line.last() == Some(&b'\r') {
        line.pop();
    }
    Ok(Some(Frame::Message(line)))
}

/// Writes one message and its newline, and flushes.
pub(crate) async fn write<W: AsyncWrite + Unpin>(
    writer: &mut W,
    body: &[u8],
) -> std::io::Result<()> {
    writer.write_all(body).await?;
    writer.write_all(b"\n").await?;
    writer.flush().await
}
