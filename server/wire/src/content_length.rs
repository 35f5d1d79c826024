//! The LSP base protocol's framing: `Content-Length: N\r\n\r\n` and N bytes of body.

use tokio::io::{AsyncBufRead, AsyncBufReadExt, AsyncReadExt, AsyncWrite, AsyncWriteExt};

use crate::{Frame, OVERSIZED_HEAD};

/// Longest header line read before the header counts as garbage.
const MAX_HEADER_LINE: usize = 8 * 1024;

/// Reads the next frame; `None` at a clean end of stream (between messages). A body of more
/// than `limit` bytes is read and thrown away except its first [`OVERSIZED_HEAD`] bytes. The
/// stream ending inside a header or a body is an error.
pub(crate) async fn read<R: AsyncBufRead + Unpin>(
    reader: &mut R,
    limit: usize,
) -> std::io::Result<Option<Frame>> {
    let mut content_length: Option<Result<usize, String>> = None;
    let mut saw_header = false;
    let mut line = Vec::new();
    loop {
        line.clear();
        let read = (&mut *reader)
            .take(MAX_HEADER_LINE as u64)
            .read_until(b'\n', &mut line)
            .await?;
        if read == 0 {
            return if saw_header {
                Err(std::io::Error::new(
                    std::io::ErrorKind::UnexpectedEof,
                    "the stream ended inside a message header",
                ))
            } else {
                Ok(None)
            };
        }
        if !line.ends_with(b"\n") && read == MAX_HEADER_LINE {
            // Skip the rest of an overlong line.
            let mut rest = Vec::new();
            reader.read_until(b'\n', &mut rest).await?;
            content_length = Some(Err(format!(
                "a header line is longer than {MAX_HEADER_LINE} bytes"
            )));
            saw_header = true;
            continue;
        }
        let text = String::from_utf8_lossy(&line);
        let text = text.trim_end_matches(['\r', '\n']);
        if text.is_empty() {
            if !saw_header {
                continue; // stray blank lines between messages
            }
            break;
        }
        saw_header = true;
        let Some((name, value)) = text.split_once(':') else {
            content_length.get_or_insert(Err(format!("malformed header line {text:?}")));
            continue;
        };
        if name.trim().eq_ignore_ascii_case("content-length") {
            content_length = Some(
                value
                    .trim()
                    .parse::<usize>()
                    .map_err(|_| format!("invalid Content-Length {:?}", value.trim())),
            );
        }
    }
    let length = match content_length {
        Some(Ok(length)) => length,
        Some(Err(message)) => return Ok(Some(Frame::BadHeader(message))),
        None => {
            return Ok(Some(Frame::BadHeader(
                "the message has no Content-Length header".into(),
            )));
        }
    };
    if length > limit {
        let mut head = vec![0; length.min(OVERSIZED_HEAD)];
        reader.read_exact(&mut head).await?;
        let rest = (length - head.len()) as u64;
        let skipped =
            tokio::io::copy(&mut (&mut *reader).take(rest), &mut tokio::io::sink()).await?;
        if skipped < rest {
            return Err(std::io::Error::new(
                std::io::ErrorKind::UnexpectedEof,
                "the stream ended inside a message body",
            ));
        }
        return Ok(Some(Frame::Oversized { length, head }));
    }
    let mut body = vec![0; length];
    reader.read_exact(&mut body).await?;
    Ok(Some(Frame::Message(body)))
}

/// Writes one message with its header, and flushes.
pub(crate) async fn write<W: AsyncWrite + Unpin>(
    writer: &mut W,
    body: &[u8],
) -> std::io::Result<()> {
    let header = format!("Content-Length: {}\r\n\r\n", body.len());
    writer.write_all(header.as_bytes()).await?;
    writer.write_all(body).await?;
    writer.flush().await
}
