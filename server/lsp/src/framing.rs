//! LSP base-protocol framing (`Content-Length: N\r\n\r\n` + N bytes of JSON), for both sides:
//! lode's own server guards its stdin with it, and the downstream client talks to other
//! language servers with it. The framing itself is `lode_wire`'s ([`FRAMING`]); what is LSP's
//! own is the default size cap and finding the id of a message too large to parse.

pub use lode_wire::Frame;

/// How LSP messages are delimited, on lode's stdio and on a downstream server's.
pub const FRAMING: lode_wire::Framing = lode_wire::Framing::ContentLength;

/// The largest message `lode lsp` accepts by default (a whole-file `didChange` of a huge file
/// still fits; a runaway client does not exhaust memory).
pub const DEFAULT_MAX_MESSAGE_BYTES: usize = 64 * 1024 * 1024;

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
        while let Some(frame) = FRAMING.read(&mut reader, max).await.unwrap() {
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
        assert!(FRAMING.read(&mut reader, 100).await.is_err());
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
