//! Logging through the one subscriber of `lode-full`: `LODE_LOG` filters what reaches stderr,
//! `--log-file` sends it to a file instead, and in the protocol modes nothing but protocol
//! frames ever reaches stdout, whatever is logged.

use std::io::{Read, Write};
use std::path::Path;
use std::process::{Output, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::support::{self, stderr, write};

/// How long a protocol server may take to answer and stop once its input ends.
const PATIENCE: Duration = Duration::from_secs(60);

/// A scratch workspace with one Rust file.
fn workspace() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join(".git")).unwrap();
    write(
        dir.path(),
        "src/lib.rs",
        "/// Adds.\npub fn add(a: i32, b: i32) -> i32 {\n    a + b\n}\n",
    );
    dir
}

#[test]
fn lode_log_debug_shows_debug_events_on_stderr_and_the_default_does_not() {
    let dir = workspace();
    let quiet = support::run(dir.path(), &["index"]);
    assert!(quiet.status.success(), "{}", stderr(&quiet));
    assert!(
        stderr(&quiet).contains("indexed 1 files"),
        "the command's own output: {}",
        stderr(&quiet)
    );
    assert!(!stderr(&quiet).contains("DEBUG"), "{}", stderr(&quiet));

    let loud = support::lode(dir.path())
        .args(["index"])
        .env("LODE_LOG", "debug")
        .output()
        .unwrap();
    assert!(loud.status.success(), "{}", stderr(&loud));
    let err = stderr(&loud);
    assert!(
        err.lines()
            .any(|line| line.starts_with("lode: DEBUG lode_full::commands: opening the index")),
        "{err}"
    );
    assert!(err.contains("indexed 1 files"), "{err}");
    assert!(loud.stdout.is_empty(), "logs never go to stdout");
}

#[test]
fn log_file_takes_the_log_lines_and_stderr_keeps_the_output() {
    let dir = workspace();
    let log = dir.path().join("lode.log");
    std::fs::write(&log, "an earlier line\n").unwrap();
    let output = support::lode(dir.path())
        .args(["index", "--log-file"])
        .arg(&log)
        .env("LODE_LOG", "lode=debug")
        .output()
        .unwrap();
    assert!(output.status.success(), "{}", stderr(&output));
    let err = stderr(&output);
    assert!(
        !err.contains("DEBUG"),
        "the log lines went to stderr: {err}"
    );
    assert!(err.contains("indexed 1 files"), "{err}");
    let logged = std::fs::read_to_string(&log).unwrap();
    assert!(
        logged.starts_with("an earlier line\n"),
        "appended: {logged}"
    );
    let pid = format!(
        "lode[{}]: DEBUG lode_full::commands: opening the index",
        output_pid(&logged)
    );
    assert!(logged.contains(&pid), "{logged}");

    // A log file that cannot be opened is an error, said on stderr.
    let nowhere = support::lode(dir.path())
        .args(["index", "--log-file"])
        .arg(dir.path().join("missing/dir/lode.log"))
        .output()
        .unwrap();
    assert_eq!(nowhere.status.code(), Some(3), "{}", stderr(&nowhere));
    assert!(
        stderr(&nowhere).contains("cannot open the log file"),
        "{}",
        stderr(&nowhere)
    );
}

/// The process id a log file's second line names (`TIME lode[PID]: …`).
fn output_pid(logged: &str) -> String {
    let line = logged.lines().nth(1).unwrap_or_default();
    line.split_once("lode[")
        .and_then(|(_, rest)| rest.split_once(']'))
        .map(|(pid, _)| pid.to_owned())
        .unwrap_or_default()
}

#[test]
fn a_filter_that_is_not_one_is_reported_and_logging_goes_on_as_without_it() {
    let dir = workspace();
    let output = support::lode(dir.path())
        .args(["index"])
        .env("LODE_LOG", "lode=notalevel")
        .output()
        .unwrap();
    assert!(output.status.success(), "{}", stderr(&output));
    assert!(
        stderr(&output).contains("LODE_LOG=\"lode=notalevel\" is not a filter"),
        "{}",
        stderr(&output)
    );
}

/// Runs `lode ARGS` in `root` with `LODE_LOG=trace` and feeds its stdin `steps`: each chunk of
/// input is written once stdout holds the text before it (empty: at once); then stdin is closed.
/// Returns the output once it exits (bounded).
fn served(root: &Path, args: &[&str], steps: &[(&str, &[u8])]) -> Output {
    let mut child = support::lode(root)
        .args(args)
        .env("LODE_LOG", "trace")
        .env("LODE_CONFIG", "")
        .env("XDG_CONFIG_HOME", root.join(".no-user-config"))
        .env("XDG_DATA_HOME", root.join(".no-user-data"))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let mut stdout = child.stdout.take().unwrap();
    let mut stderr = child.stderr.take().unwrap();
    let seen = Arc::new(Mutex::new(Vec::new()));
    let out = {
        let seen = seen.clone();
        std::thread::spawn(move || {
            let mut buffer = [0u8; 8192];
            while let Ok(read) = stdout.read(&mut buffer) {
                if read == 0 {
                    break;
                }
                seen.lock().unwrap().extend_from_slice(&buffer[..read]);
            }
        })
    };
    let err = std::thread::spawn(move || {
        let mut bytes = Vec::new();
        let _ = stderr.read_to_end(&mut bytes);
        bytes
    });
    let started = Instant::now();
    for (after, input) in steps {
        while !String::from_utf8_lossy(&seen.lock().unwrap()).contains(after)
            && started.elapsed() < PATIENCE
        {
            std::thread::sleep(Duration::from_millis(20));
        }
        let _ = stdin.write_all(input);
        let _ = stdin.flush();
    }
    drop(stdin);
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if started.elapsed() > PATIENCE {
            let _ = child.kill();
            break child.wait().unwrap();
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    out.join().unwrap();
    let stdout = std::mem::take(&mut *seen.lock().unwrap());
    Output {
        status,
        stdout,
        stderr: err.join().unwrap(),
    }
}

/// Every line of `stdout` is one JSON-RPC message; returns them.
fn json_lines(stdout: &[u8]) -> Vec<Value> {
    let text = String::from_utf8(stdout.to_vec()).expect("stdout is UTF-8");
    text.lines()
        .map(|line| {
            let message: Value = serde_json::from_str(line).unwrap_or_else(|error| {
                panic!("not a protocol frame on stdout ({error}): {line:?}")
            });
            assert_eq!(message["jsonrpc"], "2.0", "{line}");
            message
        })
        .collect()
}

/// Every byte of `stdout` belongs to a `Content-Length` frame holding a JSON-RPC message.
fn lsp_frames(stdout: &[u8]) -> Vec<Value> {
    let mut rest = stdout;
    let mut messages = Vec::new();
    while !rest.is_empty() {
        let end = rest
            .windows(4)
            .position(|window| window == b"\r\n\r\n")
            .unwrap_or_else(|| panic!("not a frame header: {:?}", String::from_utf8_lossy(rest)));
        let header = std::str::from_utf8(&rest[..end]).expect("an ASCII header");
        let length: usize = header
            .lines()
            .find_map(|line| line.strip_prefix("Content-Length: "))
            .unwrap_or_else(|| panic!("no Content-Length in {header:?}"))
            .trim()
            .parse()
            .unwrap();
        let body = &rest[end + 4..end + 4 + length];
        let message: Value = serde_json::from_slice(body).unwrap();
        assert_eq!(message["jsonrpc"], "2.0");
        messages.push(message);
        rest = &rest[end + 4 + length..];
    }
    messages
}

fn lsp_frame(message: &Value) -> Vec<u8> {
    let body = message.to_string();
    let mut frame = format!("Content-Length: {}\r\n\r\n", body.len()).into_bytes();
    frame.extend_from_slice(body.as_bytes());
    frame
}

/// Trace logging was on: the server logged (to stderr) while it served.
fn traced(output: &Output) {
    let err = stderr(output);
    assert!(err.contains("TRACE") || err.contains("DEBUG"), "{err}");
}

#[test]
fn lode_lsp_stdout_holds_only_frames_while_everything_is_logged() {
    let dir = workspace();
    let root = dir.path().canonicalize().unwrap();
    let mut input = b"Content-Length: 5\r\n\r\n{oops".to_vec();
    input.extend(lsp_frame(
        &json!({"jsonrpc": "2.0", "id": 7, "result": "not a request"}),
    ));
    input.extend(lsp_frame(&json!({
        "jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {"processId": null, "rootUri": format!("file://{}", root.display()), "capabilities": {}},
    })));
    input.extend(lsp_frame(
        &json!({"jsonrpc": "2.0", "method": "initialized", "params": {}}),
    ));
    let mut ending = lsp_frame(&json!({"jsonrpc": "2.0", "id": 2, "method": "shutdown"}));
    ending.extend(lsp_frame(&json!({"jsonrpc": "2.0", "method": "exit"})));
    let output = served(
        &root,
        &["lsp"],
        &[("", &input), ("\"capabilities\"", &ending)],
    );
    let messages = lsp_frames(&output.stdout);
    assert!(
        messages
            .iter()
            .any(|message| message["error"]["code"] == -32700),
        "the malformed frame is answered: {messages:?}"
    );
    assert!(
        messages
            .iter()
            .any(|message| message["id"] == 1 && message["result"]["capabilities"].is_object()),
        "{messages:?}\n{}",
        stderr(&output)
    );
    traced(&output);
}

#[test]
fn lode_mcp_stdout_holds_only_frames_while_everything_is_logged() {
    let dir = workspace();
    let input = [
        "{not json".to_owned(),
        json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "logging-test", "version": "1"},
        }})
        .to_string(),
        json!({"jsonrpc": "2.0", "method": "notifications/initialized"}).to_string(),
        json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}).to_string(),
    ]
    .join("\n")
        + "\n";
    let output = served(
        dir.path(),
        &["mcp"],
        &[("", input.as_bytes()), ("\"tools\"", b"")],
    );
    let messages = json_lines(&output.stdout);
    assert!(
        messages
            .iter()
            .any(|message| message["error"]["code"] == -32700),
        "the malformed line is answered: {messages:?}"
    );
    assert!(
        messages
            .iter()
            .any(|message| message["id"] == 1 && message["result"].is_object()),
        "{messages:?}\n{}",
        stderr(&output)
    );
    traced(&output);
}

#[test]
fn lode_acp_stdout_holds_only_frames_while_everything_is_logged() {
    let dir = workspace();
    let input = [
        "{not json".to_owned(),
        json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": 1, "clientCapabilities": {},
        }})
        .to_string(),
    ]
    .join("\n")
        + "\n";
    let output = served(
        dir.path(),
        &["acp"],
        &[("", input.as_bytes()), ("\"protocolVersion\"", b"")],
    );
    let messages = json_lines(&output.stdout);
    assert!(
        messages
            .iter()
            .any(|message| message["id"] == 1 && message["result"]["protocolVersion"] == 1),
        "{messages:?}\n{}",
        stderr(&output)
    );
    traced(&output);
}
