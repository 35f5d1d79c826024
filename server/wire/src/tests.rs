use std::ops::ControlFlow;
use std::sync::Mutex;

use tokio::io::{AsyncReadExt, AsyncWriteExt, BufReader};

use super::*;

async fn all(framing: Framing, input: &[u8], capacity: usize, limit: usize) -> Vec<Frame> {
    let mut reader = BufReader::with_capacity(capacity, input);
    let mut found = Vec::new();
    while let Some(frame) = framing.read(&mut reader, limit).await.unwrap() {
        found.push(frame);
    }
    found
}

fn message(text: &str) -> Frame {
    Frame::Message(text.as_bytes().to_vec())
}

// Lines.

#[tokio::test]
async fn oversized_lines_are_skipped_and_the_next_line_survives() {
    let input: &[u8] = b"0123456789abcdef\nshort\nlast";
    let mut reader = BufReader::with_capacity(4, input);
    let lines = Framing::Lines;
    assert_eq!(
        lines.read(&mut reader, 8).await.unwrap(),
        Some(Frame::Oversized {
            length: 16,
            head: b"0123456789abcdef".to_vec()
        })
    );
    assert_eq!(
        lines.read(&mut reader, 8).await.unwrap(),
        Some(message("short"))
    );
    assert_eq!(
        lines.read(&mut reader, 8).await.unwrap(),
        Some(message("last"))
    );
    assert_eq!(lines.read(&mut reader, 8).await.unwrap(), None);
}

#[tokio::test]
async fn carriage_returns_and_empty_lines() {
    assert_eq!(
        all(Framing::Lines, b"a\r\n\n01234567\n", 4, 8).await,
        [message("a"), message(""), message("01234567")],
        "a line of exactly the cap is kept"
    );
}

#[tokio::test]
async fn a_line_at_the_cap_is_kept_and_one_byte_more_is_not() {
    for capacity in [1, 3, 64] {
        let found = all(Framing::Lines, b"12345678\n123456789\nok\n", capacity, 8).await;
        assert_eq!(
            found,
            [
                message("12345678"),
                Frame::Oversized {
                    length: 9,
                    head: b"123456789".to_vec()
                },
                message("ok"),
            ],
            "read {capacity} bytes at a time"
        );
    }
}

#[tokio::test]
async fn an_oversized_line_keeps_only_its_head() {
    let mut input = vec![b'x'; OVERSIZED_HEAD * 3];
    input.extend_from_slice(b"\nnext\n");
    let found = all(Framing::Lines, &input, 1000, OVERSIZED_HEAD).await;
    assert_eq!(found.len(), 2);
    match &found[0] {
        Frame::Oversized { length, head } => {
            assert_eq!(*length, OVERSIZED_HEAD * 3);
            assert_eq!(head.len(), OVERSIZED_HEAD);
            assert!(head.capacity() < OVERSIZED_HEAD * 2, "the rest is not held");
        }
        other => panic!("expected an oversized frame, got {other:?}"),
    }
    assert_eq!(found[1], message("next"));
}

#[tokio::test]
async fn invalid_utf8_and_a_line_cut_by_the_end_of_input_come_through_as_bytes() {
    let found = all(Framing::Lines, b"\xff\xfe{\n{\"a\":\xc3", 2, 64).await;
    assert_eq!(
        found,
        [
            Frame::Message(b"\xff\xfe{".to_vec()),
            Frame::Message(b"{\"a\":\xc3".to_vec()),
        ]
    );
    assert_eq!(all(Framing::Lines, b"", 2, 64).await, []);
}

// Content-Length.

#[tokio::test]
async fn messages_oversized_bodies_and_bad_headers() {
    let mut input = Vec::new();
    input.extend_from_slice(
        b"Content-Length: 2\r\nContent-Type: application/vscode-jsonrpc; charset=utf-8\r\n\r\n{}",
    );
    input.extend_from_slice(b"Content-Length: 30\r\n\r\n{\"id\":7,\"method\":\"x\",\"p\":\"aa\"}");
    input.extend_from_slice(b"X-Nothing: 1\r\n\r\n");
    input.extend_from_slice(b"content-length: 4\r\n\r\nnull");
    let found = all(Framing::ContentLength, &input, 8192, 10).await;
    assert_eq!(found[0], Frame::Message(b"{}".to_vec()));
    match &found[1] {
        Frame::Oversized { length, head } => {
            assert_eq!(*length, 30);
            assert_eq!(head, b"{\"id\":7,\"method\":\"x\",\"p\":\"aa\"}");
        }
        other => panic!("expected an oversized frame, got {other:?}"),
    }
    assert!(matches!(&found[2], Frame::BadHeader(message) if message.contains("Content-Length")));
    assert_eq!(found[3], Frame::Message(b"null".to_vec()));
    assert_eq!(found.len(), 4);
}

#[tokio::test]
async fn a_body_at_the_cap_is_kept_and_one_byte_more_is_not() {
    for capacity in [1, 3, 64] {
        let found = all(
            Framing::ContentLength,
            b"Content-Length: 8\r\n\r\n12345678Content-Length: 9\r\n\r\n123456789\r\nContent-Length: 2\r\n\r\nok",
            capacity,
            8,
        )
        .await;
        assert_eq!(
            found,
            [
                message("12345678"),
                Frame::Oversized {
                    length: 9,
                    head: b"123456789".to_vec()
                },
                message("ok"),
            ],
            "read {capacity} bytes at a time"
        );
    }
}

#[tokio::test]
async fn bad_headers_are_reported_and_the_stream_goes_on() {
    let found = all(
        Framing::ContentLength,
        b"Content-Length: ten\r\n\r\nno colon\r\n\r\nContent-Length: 1\r\n\r\n\xff",
        5,
        100,
    )
    .await;
    assert!(
        matches!(&found[0], Frame::BadHeader(problem) if problem.contains("invalid Content-Length"))
    );
    assert!(
        matches!(&found[1], Frame::BadHeader(problem) if problem.contains("malformed header line"))
    );
    assert_eq!(
        found[2],
        Frame::Message(vec![0xff]),
        "bodies are bytes, not text"
    );
    assert_eq!(found.len(), 3);
}

#[tokio::test]
async fn a_truncated_body_is_an_error() {
    let mut reader = BufReader::new(&b"Content-Length: 10\r\n\r\n{}"[..]);
    assert!(Framing::ContentLength.read(&mut reader, 100).await.is_err());
}

#[tokio::test]
async fn the_end_of_input_inside_a_frame_is_an_error_and_between_frames_is_not() {
    for cut in [
        &b"Content-Length: 2\r\n"[..],
        b"Content-Length: 2\r\n\r\n{",
        b"Content-Length: 20\r\n\r\n{}",
    ] {
        let mut reader = BufReader::with_capacity(3, cut);
        let error = Framing::ContentLength
            .read(&mut reader, 4)
            .await
            .unwrap_err();
        assert_eq!(error.kind(), std::io::ErrorKind::UnexpectedEof, "{cut:?}");
    }
    assert_eq!(all(Framing::ContentLength, b"\r\n", 3, 4).await, []);
}

#[tokio::test]
async fn framings_write_what_they_read() {
    for framing in [Framing::Lines, Framing::ContentLength] {
        let mut written = Vec::new();
        framing.write(&mut written, b"{\"a\":1}").await.unwrap();
        framing.write(&mut written, b"[]").await.unwrap();
        assert_eq!(
            all(framing, &written, 2, 64).await,
            [message("{\"a\":1}"), message("[]")],
            "{framing:?}"
        );
    }
}

// The guard.

/// Forwards frames that start with `{`, answers `ask` with `answer`, drops the rest; records
/// what the library wrote.
#[derive(Default)]
struct Echo {
    seen: Mutex<Vec<Vec<u8>>>,
}

impl Gate for Echo {
    async fn incoming(&self, frame: Frame, doors: &Doors) -> ControlFlow<()> {
        match frame {
            Frame::Message(body) if body.starts_with(b"{") => {
                return match doors.forward(body).await {
                    Ok(()) => ControlFlow::Continue(()),
                    Err(Stopped) => ControlFlow::Break(()),
                };
            }
            Frame::Message(body) if body == b"ask" => doors.answer(b"answer".to_vec()),
            Frame::Oversized { length, .. } => {
                doors.answer(format!("too big: {length}").into_bytes())
            }
            _ => {}
        }
        ControlFlow::Continue(())
    }

    fn outgoing(&self, message: &[u8]) {
        self.seen.lock().unwrap().push(message.to_vec());
    }
}

#[tokio::test]
async fn the_guard_forwards_answers_and_writes_both_whole() {
    let (mut client, input) = tokio::io::duplex(64);
    let (output, mut client_output) = tokio::io::duplex(1 << 20);
    let pipes = guard(input, output, Framing::Lines, 16, Echo::default());
    let (mut server_input, mut server_output) = (pipes.server_input, pipes.server_output);

    client
        .write_all(b"{\"id\":1}\nask\nnot forwarded\n0123456789abcdefXYZ\n{\"id\":2}\n")
        .await
        .unwrap();
    drop(client);
    let mut forwarded = String::new();
    server_input.read_to_string(&mut forwarded).await.unwrap();
    assert_eq!(
        forwarded, "{\"id\":1}\n{\"id\":2}\n",
        "the library's input ends with the client's"
    );
    pipes.input_task.await.unwrap();

    // A message larger than the pipe, written in pieces: the answers queued meanwhile must not
    // cut it.
    let big = format!("{{\"x\":\"{}\"}}\n", "y".repeat(600 * 1024));
    server_output.write_all(big.as_bytes()).await.unwrap();
    drop(server_output);
    pipes.output_task.await.unwrap();
    let mut written = String::new();
    client_output.read_to_string(&mut written).await.unwrap();
    let lines: Vec<&str> = written.lines().collect();
    assert_eq!(lines.len(), 3, "{:?}", &written[..200]);
    assert!(lines.contains(&"answer"));
    assert!(lines.contains(&"too big: 19"));
    assert!(lines.contains(&big.trim_end()));
}

#[tokio::test]
async fn the_guard_speaks_content_length_on_both_sides() {
    let (mut client, input) = tokio::io::duplex(64);
    let (output, mut client_output) = tokio::io::duplex(1 << 16);
    let pipes = guard(input, output, Framing::ContentLength, 16, Echo::default());
    let (mut server_input, mut server_output) = (pipes.server_input, pipes.server_output);

    client
        .write_all(b"Content-Length: 3\r\n\r\nask\r\nContent-Length: 2\r\n\r\n{}")
        .await
        .unwrap();
    drop(client);
    let mut forwarded = Vec::new();
    server_input.read_to_end(&mut forwarded).await.unwrap();
    assert_eq!(forwarded, b"Content-Length: 2\r\n\r\n{}");
    server_output
        .write_all(b"Content-Length: 4\r\n\r\nnull")
        .await
        .unwrap();
    drop(server_output);
    pipes.output_task.await.unwrap();
    let mut written = Vec::new();
    client_output.read_to_end(&mut written).await.unwrap();
    let frames = all(Framing::ContentLength, &written, 64, 64).await;
    assert_eq!(frames.len(), 2);
    assert!(frames.contains(&message("answer")));
    assert!(frames.contains(&message("null")));
}

#[tokio::test]
async fn an_answer_written_while_a_message_is_half_read_does_not_cut_it() {
    let (mut client, input) = tokio::io::duplex(64);
    let (output, mut client_output) = tokio::io::duplex(1 << 16);
    let pipes = guard(input, output, Framing::ContentLength, 16, Echo::default());
    let mut server_output = pipes.server_output;
    let _server_input = pipes.server_input;
    let pause = || tokio::time::sleep(std::time::Duration::from_millis(20));

    server_output
        .write_all(b"Content-Length: 10\r\n\r\n{\"a\":")
        .await
        .unwrap();
    pause().await;
    client
        .write_all(b"Content-Length: 3\r\n\r\nask")
        .await
        .unwrap();
    pause().await;
    server_output.write_all(b"true}").await.unwrap();
    drop(server_output);
    pipes.output_task.await.unwrap();
    let mut written = Vec::new();
    client_output.read_to_end(&mut written).await.unwrap();
    assert_eq!(
        all(Framing::ContentLength, &written, 64, 64).await,
        [message("answer"), message("{\"a\":true}")]
    );
}
