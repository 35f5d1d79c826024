//! An incremental Server-Sent-Events parser (the WHATWG `text/event-stream` format) over a byte
//! stream whose chunk boundaries fall anywhere: inside a line, inside a UTF-8 sequence, between
//! the CR and LF of a line ending.
//!
//! It knows nothing about LLM APIs; the providers decode each event's `data`.

use std::collections::VecDeque;

/// The longest line, and the largest event, the parser buffers. A provider never sends one this
/// large; a stream that does is broken (or hostile), and buffering it would only exhaust memory.
pub const MAX_LINE_BYTES: usize = 16 * 1024 * 1024;

/// One dispatched event.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SseEvent {
    /// The `event:` name, `None` when the event had none (the spec's "message").
    pub event: Option<String>,
    /// The `data:` lines joined with `\n`.
    pub data: String,
}

/// A line or an event larger than [`MAX_LINE_BYTES`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("an event-stream line or event exceeded {MAX_LINE_BYTES} bytes")]
pub struct LineTooLong;

/// Feed bytes with [`SseParser::push`], take events with [`SseParser::next_event`], and call
/// [`SseParser::finish`] at the end of the stream.
#[derive(Debug, Default)]
pub struct SseParser {
    /// Bytes of the line not yet terminated.
    line: Vec<u8>,
    /// The previous chunk ended with CR: an LF at the start of the next chunk belongs to it.
    after_cr: bool,
    event_name: Option<String>,
    data: String,
    has_data: bool,
    ready: VecDeque<SseEvent>,
    /// Newline-delimited JSON (Ollama's native API): every non-empty line is an event of its
    /// own, its data the whole line.
    lines_are_events: bool,
}

impl SseParser {
    pub fn new() -> Self {
        Self::default()
    }

    /// A parser for newline-delimited JSON: each non-empty line is one event.
    pub fn ndjson() -> Self {
        Self {
            lines_are_events: true,
            ..Self::default()
        }
    }

    /// Consumes a chunk of the stream. Complete events become available from
    /// [`SseParser::next_event`].
    pub fn push(&mut self, chunk: &[u8]) -> Result<(), LineTooLong> {
        let mut rest = chunk;
        if self.after_cr {
            self.after_cr = false;
            if let Some(stripped) = rest.strip_prefix(b"\n") {
                rest = stripped;
            }
        }
        while let Some(end) = rest.iter().position(|&b| b == b'\n' || b == b'\r') {
            self.append_to_line(&rest[..end])?;
            self.end_line()?;
            let terminator = rest[end];
            rest = &rest[end + 1..];
            if terminator == b'\r' {
                match rest.first() {
                    Some(b'\n') => rest = &rest[1..],
                    Some(_) => {}
                    None => self.after_cr = true,
                }
            }
        }
        self.append_to_line(rest)
    }

    /// The next complete event, in stream order.
    pub fn next_event(&mut self) -> Option<SseEvent> {
        self.ready.pop_front()
    }

    /// Ends the stream. An event whose lines were complete but which lacked the closing blank
    /// line is dispatched (servers often omit it at the very end); a partial last line is
    /// discarded, since it was cut off mid-way.
    pub fn finish(&mut self) {
        self.line.clear();
        self.dispatch();
    }

    fn append_to_line(&mut self, bytes: &[u8]) -> Result<(), LineTooLong> {
        if self.line.len() + bytes.len() > MAX_LINE_BYTES {
            return Err(LineTooLong);
        }
        self.line.extend_from_slice(bytes);
        Ok(())
    }

    fn end_line(&mut self) -> Result<(), LineTooLong> {
        let line = std::mem::take(&mut self.line);
        if self.lines_are_events {
            let text = String::from_utf8_lossy(&line);
            if !text.trim().is_empty() {
                self.ready.push_back(SseEvent {
                    event: None,
                    data: text.into_owned(),
                });
            }
            return Ok(());
        }
        if line.is_empty() {
            self.dispatch();
            return Ok(());
        }
        if line.first() == Some(&b':') {
            return Ok(()); // A comment (keep-alive).
        }
        let text = String::from_utf8_lossy(&line);
        let (field, value) = match text.split_once(':') {
            Some((field, value)) => (field, value.strip_prefix(' ').unwrap_or(value)),
            None => (text.as_ref(), ""),
        };
        match field {
            "data" => {
                if self.data.len() + value.len() >= MAX_LINE_BYTES {
                    return Err(LineTooLong);
                }
                if self.has_data {
                    self.data.push('\n');
                }
                self.data.push_str(value);
                self.has_data = true;
            }
            "event" => self.event_name = Some(value.to_string()),
            // `id` and `retry` steer reconnection, which a one-shot request never does.
            _ => {}
        }
        Ok(())
    }

    fn dispatch(&mut self) {
        let event_name = self.event_name.take();
        if !self.has_data {
            return;
        }
        self.has_data = false;
        self.ready.push_back(SseEvent {
            event: event_name.filter(|name| !name.is_empty()),
            data: std::mem::take(&mut self.data),
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse_in_chunks(input: &[u8], chunk_sizes: &[usize]) -> Vec<SseEvent> {
        let mut parser = SseParser::new();
        let mut events = Vec::new();
        let mut rest = input;
        let mut sizes = chunk_sizes.iter().cycle();
        while !rest.is_empty() {
            let size = (*sizes.next().unwrap()).min(rest.len());
            parser.push(&rest[..size]).unwrap();
            rest = &rest[size..];
            while let Some(event) = parser.next_event() {
                events.push(event);
            }
        }
        parser.finish();
        while let Some(event) = parser.next_event() {
            events.push(event);
        }
        events
    }

    fn event(name: Option<&str>, data: &str) -> SseEvent {
        SseEvent {
            event: name.map(str::to_string),
            data: data.to_string(),
        }
    }

    const STREAM: &str = ": keep-alive\r\n\
        event: message_start\r\n\
        data: {\"a\":1}\r\n\
        \r\n\
        data: first line\n\
        data: second line\n\
        \n\
        event: ping\r\
        data:no-space\r\
        \r\
        data: caf\u{e9} \u{1F600}\n\n\
        data: [DONE]\n\n";

    fn expected() -> Vec<SseEvent> {
        vec![
            event(Some("message_start"), "{\"a\":1}"),
            event(None, "first line\nsecond line"),
            event(Some("ping"), "no-space"),
            event(None, "caf\u{e9} \u{1F600}"),
            event(None, "[DONE]"),
        ]
    }

    #[test]
    fn whole_stream_in_one_chunk() {
        assert_eq!(
            parse_in_chunks(STREAM.as_bytes(), &[usize::MAX]),
            expected()
        );
    }

    #[test]
    fn every_split_point_gives_the_same_events() {
        let bytes = STREAM.as_bytes();
        for split in 1..bytes.len() {
            let mut parser = SseParser::new();
            parser.push(&bytes[..split]).unwrap();
            parser.push(&bytes[split..]).unwrap();
            parser.finish();
            let events: Vec<_> = std::iter::from_fn(|| parser.next_event()).collect();
            assert_eq!(events, expected(), "split at byte {split}");
        }
    }

    #[test]
    fn byte_by_byte_and_odd_chunk_sizes() {
        assert_eq!(parse_in_chunks(STREAM.as_bytes(), &[1]), expected());
        assert_eq!(parse_in_chunks(STREAM.as_bytes(), &[2, 3, 7]), expected());
    }

    #[test]
    fn crlf_split_between_cr_and_lf_is_one_line_ending() {
        let mut parser = SseParser::new();
        parser.push(b"data: a\r").unwrap();
        parser.push(b"\ndata: b\r").unwrap();
        parser.push(b"\n\r").unwrap();
        parser.push(b"\n").unwrap();
        assert_eq!(parser.next_event(), Some(event(None, "a\nb")));
        assert_eq!(parser.next_event(), None);
    }

    #[test]
    fn field_without_colon_and_unknown_fields() {
        let events = parse_in_chunks(b"data\nid: 7\nretry: 10\nfoo: bar\n\n", &[4]);
        assert_eq!(events, vec![event(None, "")]);
    }

    #[test]
    fn event_without_data_is_not_dispatched() {
        let events = parse_in_chunks(b"event: ping\n\ndata: x\n\n", &[5]);
        assert_eq!(events, vec![event(None, "x")]);
    }

    #[test]
    fn finish_dispatches_complete_lines_but_drops_a_cut_line() {
        assert_eq!(
            parse_in_chunks(b"data: [DONE]\n", &[3]),
            vec![event(None, "[DONE]")]
        );
        assert_eq!(
            parse_in_chunks(b"data: ok\n\ndata: {\"choi", &[3]),
            vec![event(None, "ok")]
        );
    }

    #[test]
    fn oversized_line_is_refused() {
        let mut parser = SseParser::new();
        let big = vec![b'x'; MAX_LINE_BYTES];
        parser.push(b"data: ").unwrap();
        assert_eq!(parser.push(&big), Err(LineTooLong));
    }

    #[test]
    fn oversized_event_of_many_lines_is_refused() {
        let mut parser = SseParser::new();
        let line = format!("data: {}\n", "y".repeat(1024 * 1024));
        let mut result = Ok(());
        for _ in 0..17 {
            result = parser.push(line.as_bytes());
            if result.is_err() {
                break;
            }
        }
        assert_eq!(result, Err(LineTooLong));
    }

    #[test]
    fn ndjson_lines_are_events_whatever_the_chunking() {
        let input = b"{\"a\":1}\n\n{\"b\":\"x:y\"}\r\n{\"c\":3}";
        for sizes in [&[1usize][..], &[3, 7], &[100]] {
            let mut parser = SseParser::ndjson();
            let mut rest = &input[..];
            let mut sizes = sizes.iter().cycle();
            while !rest.is_empty() {
                let size = (*sizes.next().unwrap()).min(rest.len());
                parser.push(&rest[..size]).unwrap();
                rest = &rest[size..];
            }
            parser.finish();
            let mut data = Vec::new();
            while let Some(event) = parser.next_event() {
                data.push(event.data);
            }
            // The unterminated last line was cut off mid-way: it is dropped, as in SSE.
            assert_eq!(data, vec!["{\"a\":1}", "{\"b\":\"x:y\"}"]);
        }
    }
}
