//! LSP base-protocol framing (`Content-Length: N\r\n\r\n` + N bytes of JSON), for both sides:
//! lode's own server guards its stdin with it, and the downstream client talks to other
//! language servers with it.

use tokio::io::{AsyncBufRead, AsyncBufReadExt, AsyncReadExt, AsyncWrite, AsyncWriteExt};

/// The largest message `lode lsp` accepts by default (a whole-file `didChange` of a huge file
/// still fits; a runaway client does not exhaust memory).
pub const DEFAULT_MAX_MESSAGE_BYTES: usize = 64 * 1024 * 1024;

/// Longest header line read before the header counts as garbage.
const MAX_HEADER_LINE: usize = 8 * 1024;

/// Bytes of an oversized body kept, to find its request id.
const OVERSIZED_HEAD: usize = 4 * 1024;

/// One unit read from a framed stream.
#[derive(Debug, PartialEq, Eq)]
pub enum Frame {
    /// A complete message body.
    Message(Vec<u8>),
    /// A message longer than allowed: its body was read and thrown away, except its start.
    Oversized { length: usize, head: Vec<u8> },
    /// A header block without a usable `Content-Length`; nothing of a body was read.
    BadHeader(String),
}

/// Reads the next frame; `None` at a clean end of stream.
pub async fn read_frame<R: AsyncBufRead + Unpin>(
    reader: &mut R,
    max_message_bytes: usize,
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
    if length > max_message_bytes {
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

/// Writes one message with its header and flushes.
pub async fn write_frame<W: AsyncWrite + Unpin>(
    writer: &mut W,
    body: &[u8],
) -> std::io::Result<()> {
    let header = format!("Content-Length: {}\r\n\r\n", body.len());
    writer.write_all(header.as_bytes()).await?;
    writer.write_all(body).await?;
    writer.flush().await
}

/// The `id` of a request from the start of its body, when it is there (for answering a message
/// too large to parse).
pub fn request_id_in(head: &[u8]) -> Option<serde_json::Value> {
    let text = String::from_utf8_lossy(head);
    let pattern = regex::Regex::new(r#""id"\s*:\s*(-?\d+|"(?:[^"\\]|\\.)*")"#).ok()?;
    let found = pattern.captures(&text)?;
    serde_json::from_str(found.get(1)?.as_str()).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    async fn frames(input: &[u8], max: usize) -> Vec<Frame> {
        let mut reader = tokio::io::BufReader::new(input);
        let mut found = Vec::new();
        while let Some(frame) = read_frame(&mut reader, max).await.unwrap() {
            found.push(frame);
        }
        found
    }

    #[tokio::test]
    async fn messages_oversized_bodies_and_bad_headers() {
        let mut input = Vec::new();
        input.extend_from_slice(b"Content-Length: 2\r\nContent-Type: application/vscode-jsonrpc; charset=utf-8\r\n\r\n{}");
        input.extend_from_slice(
            b"Content-Length: 30\r\n\r\n{\"id\":7,\"method\":\"x\",\"p\":\"aa\"}",
        );
        input.extend_from_slice(b"X-Nothing: 1\r\n\r\n");
        input.extend_from_slice(b"content-length: 4\r\n\r\nnull");
        let found = frames(&input, 10).await;
        assert_eq!(found[0], Frame::Message(b"{}".to_vec()));
        match &found[1] {
            Frame::Oversized { length, head } => {
                assert_eq!(*length, 30);
                assert_eq!(request_id_in(head), Some(serde_json::json!(7)));
            }
            other => panic!("expected an oversized frame, got {other:?}"),
        }
        assert!(
            matches!(&found[2], Frame::BadHeader(message) if message.contains("Content-Length"))
        );
        assert_eq!(found[3], Frame::Message(b"null".to_vec()));
        assert_eq!(found.len(), 4);
    }

    #[tokio::test]
    async fn a_truncated_body_is_an_error() {
        let mut reader = tokio::io::BufReader::new(&b"Content-Length: 10\r\n\r\n{}"[..]);
        assert!(read_frame(&mut reader, 100).await.is_err());
    }

    #[test]
    fn string_ids_are_found() {
        assert_eq!(
            request_id_in(br#"{"jsonrpc":"2.0","id":"a\"b","method":"m""#),
            Some(serde_json::json!("a\"b"))
        );
        assert_eq!(request_id_in(br#"{"method":"n"}"#), None);
    }
}
