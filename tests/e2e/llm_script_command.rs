//! `lode llm-script`: the hidden command other end-to-end tests spawn. It prints its address,
//! answers over real HTTP from the script, and refuses a bad script with a clear error.

use crate::support;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::{Command, Stdio};

use support::lode_bin;

/// Kills the child when the test ends, however it ends.
struct Child(std::process::Child);

impl Drop for Child {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn fixture(name: &str) -> String {
    format!("{}/../../fixtures/llm/{name}", env!("CARGO_MANIFEST_DIR"))
}

fn post(addr: &str, path: &str, body: &str) -> String {
    let mut stream = TcpStream::connect(addr).unwrap();
    write!(
        stream,
        "POST {path} HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )
    .unwrap();
    let mut response = String::new();
    stream.read_to_string(&mut response).unwrap();
    response
}

#[test]
fn serves_the_script_at_the_printed_address() {
    let mut child = Child(
        Command::new(lode_bin())
            .args(["llm-script", "--script", &fixture("hello.json")])
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap(),
    );
    let mut line = String::new();
    BufReader::new(child.0.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let addr = line
        .trim()
        .strip_prefix("listening on http://")
        .unwrap_or_else(|| panic!("unexpected first line {line:?}"))
        .to_string();

    let response = post(
        &addr,
        "/v1/messages",
        r#"{"model":"m","stream":true,"max_tokens":5,"messages":[{"role":"user","content":"hi"}]}"#,
    );
    assert!(response.starts_with("HTTP/1.1 200"), "{response}");
    assert!(response.contains("text/event-stream"), "{response}");
    assert!(response.contains("event: message_stop"), "{response}");

    // The only turn is used up: the next request is refused with the reason.
    let response = post(
        &addr,
        "/v1/chat/completions",
        r#"{"model":"m","stream":true,"messages":[{"role":"user","content":"again"}]}"#,
    );
    assert!(response.starts_with("HTTP/1.1 400"), "{response}");
    assert!(
        response.contains("every scripted turn has been used"),
        "{response}"
    );
}

#[test]
fn a_bad_script_is_a_clear_error() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("bad.json");
    std::fs::write(&path, r#"{"turns": [{"respond": {"chunk_chars": 0}}]}"#).unwrap();
    let output = Command::new(lode_bin())
        .args(["llm-script", "--script"])
        .arg(&path)
        .output()
        .unwrap();
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("turn 1: chunk_chars must be at least 1"),
        "{stderr}"
    );
    assert!(stderr.contains("bad.json"), "{stderr}");
}
