//! Reading newline-delimited JSON-RPC (ACP over stdio, MCP over stdio) without trusting the
//! peer: a line longer than the cap is skipped to its end without being held in memory.
//!
//! This crate owns only the byte-level framing. It knows nothing about JSON, JSON-RPC or any
//! protocol's messages; the servers decide what to answer for an oversized or malformed line.

use tokio::io::{AsyncBufRead, AsyncBufReadExt};

/// One line of input, without its `\n` (and without a `\r` before it).
#[derive(Debug, PartialEq, Eq)]
pub enum Line {
    Text(Vec<u8>),
    /// Longer than the cap; its bytes were skipped, not kept.
    Oversized,
}

/// Reads one `\n`-terminated line of at most `limit` bytes without holding more than that in
/// memory. `None` at the end of input (a last line without a newline still counts).
pub async fn read_capped_line<R: AsyncBufRead + Unpin>(
    reader: &mut R,
    limit: usize,
) -> std::io::Result<Option<Line>> {
    let mut line = Vec::new();
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
        if !oversized {
            if line.len() + chunk.len() > limit {
                oversized = true;
                line = Vec::new();
            } else {
                line.extend_from_slice(chunk);
            }
        }
        let consumed = chunk.len() + usize::from(newline);
        reader.consume(consumed);
        if newline {
            break;
        }
    }
    if oversized {
        return Ok(Some(Line::Oversized));
    }
    if line.last() == Some(&b'\r') {
        line.pop();
    }
    Ok(Some(Line::Text(line)))
}

#[cfg(test)]
mod tests {
    use tokio::io::BufReader;

    use super::*;

    #[tokio::test]
    async fn oversized_lines_are_skipped_and_the_next_line_survives() {
        let input: &[u8] = b"0123456789abcdef\nshort\nlast";
        let mut reader = BufReader::with_capacity(4, input);
        assert_eq!(
            read_capped_line(&mut reader, 8).await.unwrap(),
            Some(Line::Oversized)
        );
        assert_eq!(
            read_capped_line(&mut reader, 8).await.unwrap(),
            Some(Line::Text(b"short".to_vec()))
        );
        assert_eq!(
            read_capped_line(&mut reader, 8).await.unwrap(),
            Some(Line::Text(b"last".to_vec()))
        );
        assert_eq!(read_capped_line(&mut reader, 8).await.unwrap(), None);
    }

    #[tokio::test]
    async fn carriage_returns_and_empty_lines() {
        let input: &[u8] = b"a\r\n\n01234567\n";
        let mut reader = BufReader::with_capacity(4, input);
        let mut lines = Vec::new();
        while let Some(line) = read_capped_line(&mut reader, 8).await.unwrap() {
            lines.push(line);
        }
        assert_eq!(
            lines,
            [
                Line::Text(b"a".to_vec()),
                Line::Text(Vec::new()),
                Line::Text(b"01234567".to_vec()),
            ],
            "a line of exactly the cap is kept"
        );
    }
}
