//! A small LSP client for the end-to-end tests: starts `lode lsp`, frames JSON-RPC messages
//! with Content-Length headers, answers the server's requests, and keeps its notifications.

#![allow(dead_code)]

use std::collections::VecDeque;
use std::io::{BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, ExitStatus, Stdio};
use std::sync::mpsc::{Receiver, RecvTimeoutError, channel};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

/// The longest any single wait in a test may take before the test fails (never reached when
/// the server works; it only keeps a broken server from hanging the suite).
pub const PATIENCE: Duration = Duration::from_secs(60);

/// What the reader thread saw on the server's stdout.
pub enum Incoming {
    Message(Value),
    /// Bytes that were not a well-formed frame of JSON: a log line on stdout, say.
    Garbage(String),
}

pub struct LspClient {
    child: Child,
    stdin: ChildStdin,
    incoming: Receiver<Incoming>,
    /// Notifications and requests from the server not yet looked at.
    pub notifications: VecDeque<Value>,
    next_id: i64,
    stderr: Arc<Mutex<String>>,
    pub root: PathBuf,
    /// The button chosen for `window/showMessageRequest` (`None`: dismissed, answered `null`).
    pub message_request_choice: Option<String>,
    /// Server requests (by method) this client never answers, as a slow or broken editor.
    pub unanswered: Vec<String>,
}

/// What the client answers a server request: `workspace/applyEdit` is applied (the test
/// applies it itself if it wants the file changed), everything else gets `null`.
fn answer_for(method: &Value, choice: Option<&str>) -> Value {
    if method == "workspace/applyEdit" {
        json!({ "applied": true })
    } else if method == "window/showMessageRequest"
        && let Some(title) = choice
    {
        json!({ "title": title })
    } else {
        Value::Null
    }
}

pub fn uri(path: &Path) -> String {
    format!("file://{}", path.display())
}

fn read_frame(reader: &mut impl BufRead) -> Option<Result<Value, String>> {
    let mut length = None;
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line).ok()? == 0 {
            return None;
        }
        let line = line.trim_end();
        if line.is_empty() {
            break;
        }
        match line.split_once(':') {
            Some((name, value)) if name.eq_ignore_ascii_case("content-length") => {
                length = value.trim().parse::<usize>().ok();
            }
            Some(_) => {}
            None => return Some(Err(line.to_string())),
        }
    }
    let Some(length) = length else {
        return Some(Err("a header without Content-Length".into()));
    };
    let mut body = vec![0; length];
    reader.read_exact(&mut body).ok()?;
    Some(serde_json::from_slice(&body).map_err(|_| String::from_utf8_lossy(&body).into_owned()))
}

impl LspClient {
    /// Starts `lode lsp ARGS` with `root` as the working directory.
    pub fn start(root: &Path, args: &[&str]) -> LspClient {
        LspClient::start_with_env(root, args, &[])
    }

    /// Starts `lode lsp ARGS` with extra environment variables.
    pub fn start_with_env(root: &Path, args: &[&str], env: &[(&str, &Path)]) -> LspClient {
        let mut child = Command::new(env!("CARGO_BIN_EXE_lode"))
            .arg("lsp")
            .args(args)
            .current_dir(root)
            // The scripted providers live in the workspace's own file, which lode applies in
            // full only once trusted; named in `$LODE_CONFIG` it is the user's own. A test
            // passes `LODE_CONFIG` empty in `env` to leave the file untrusted.
            .env("LODE_CONFIG", {
                let file = root.join(".lode/config.toml");
                if file.exists() {
                    file.into_os_string()
                } else {
                    Default::default()
                }
            })
            .envs(env.iter().copied())
            .env_remove("LODE_INDEX_DIR")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("lode lsp starts");
        let stdin = child.stdin.take().expect("stdin");
        let stdout = child.stdout.take().expect("stdout");
        let mut stderr_pipe = child.stderr.take().expect("stderr");
        let (sender, incoming) = channel();
        std::thread::spawn(move || {
            let mut reader = BufReader::new(stdout);
            while let Some(frame) = read_frame(&mut reader) {
                let item = match frame {
                    Ok(message) => Incoming::Message(message),
                    Err(garbage) => Incoming::Garbage(garbage),
                };
                if sender.send(item).is_err() {
                    break;
                }
            }
        });
        let stderr = Arc::new(Mutex::new(String::new()));
        let sink = stderr.clone();
        std::thread::spawn(move || {
            let mut buffer = [0u8; 4096];
            while let Ok(n) = stderr_pipe.read(&mut buffer) {
                if n == 0 {
                    break;
                }
                sink.lock()
                    .unwrap()
                    .push_str(&String::from_utf8_lossy(&buffer[..n]));
            }
        });
        LspClient {
            child,
            stdin,
            incoming,
            notifications: VecDeque::new(),
            next_id: 1,
            stderr,
            root: std::fs::canonicalize(root).expect("root exists"),
            message_request_choice: None,
            unanswered: Vec::new(),
        }
    }

    pub fn stderr(&self) -> String {
        self.stderr.lock().unwrap().clone()
    }

    pub fn send_raw(&mut self, bytes: &[u8]) {
        self.stdin.write_all(bytes).expect("write to lode lsp");
        self.stdin.flush().expect("flush");
    }

    pub fn send(&mut self, message: &Value) {
        let body = message.to_string();
        let frame = format!("Content-Length: {}\r\n\r\n{body}", body.len());
        self.send_raw(frame.as_bytes());
    }

    pub fn notify(&mut self, method: &str, params: Value) {
        self.send(&json!({ "jsonrpc": "2.0", "method": method, "params": params }));
    }

    /// Sends a request and returns the whole response message (with `result` or `error`).
    pub fn request(&mut self, method: &str, params: Value) -> Value {
        let id = self.next_id;
        self.next_id += 1;
        self.send(&json!({ "jsonrpc": "2.0", "id": id, "method": method, "params": params }));
        self.response_to(&json!(id))
    }

    /// The result of a request that must succeed.
    pub fn call(&mut self, method: &str, params: Value) -> Value {
        let response = self.request(method, params);
        assert!(
            response.get("error").is_none(),
            "{method} failed: {response}\nstderr:\n{}",
            self.stderr()
        );
        response["result"].clone()
    }

    /// Waits for the response with this id, answering server requests meanwhile.
    pub fn response_to(&mut self, id: &Value) -> Value {
        loop {
            let message = self.next_message();
            if message.get("method").is_none() && message.get("id") == Some(id) {
                return message;
            }
            self.keep(message);
        }
    }

    fn next_message(&mut self) -> Value {
        match self.incoming.recv_timeout(PATIENCE) {
            Ok(Incoming::Message(message)) => message,
            Ok(Incoming::Garbage(text)) => {
                panic!("lode lsp wrote a non-protocol frame on stdout: {text:?}")
            }
            Err(RecvTimeoutError::Timeout) => {
                panic!(
                    "lode lsp did not answer within {PATIENCE:?}\nstderr:\n{}",
                    self.stderr()
                )
            }
            Err(RecvTimeoutError::Disconnected) => {
                panic!("lode lsp closed its output\nstderr:\n{}", self.stderr())
            }
        }
    }

    /// Answers a server request (progress tokens, anything else with null) or keeps a
    /// notification for later.
    fn keep(&mut self, message: Value) {
        if let (Some(method), Some(id)) = (message.get("method"), message.get("id"))
            && !self
                .unanswered
                .iter()
                .any(|skipped| method == skipped.as_str())
        {
            let result = answer_for(method, self.message_request_choice.as_deref());
            let id = id.clone();
            self.send(&json!({ "jsonrpc": "2.0", "id": id, "result": result }));
        }
        self.notifications.push_back(message);
    }

    /// Waits for a notification (or server request) matching `wanted`, keeping the others.
    pub fn wait_for(&mut self, what: &str, wanted: impl Fn(&Value) -> bool) -> Value {
        if let Some(index) = self.notifications.iter().position(&wanted) {
            return self.notifications.remove(index).expect("index is in range");
        }
        let deadline = Instant::now() + PATIENCE;
        loop {
            assert!(
                Instant::now() < deadline,
                "no {what} within {PATIENCE:?}\nstderr:\n{}",
                self.stderr()
            );
            let message = self.next_message();
            if wanted(&message) {
                if message.get("id").is_some() {
                    let id = message["id"].clone();
                    let result =
                        answer_for(&message["method"], self.message_request_choice.as_deref());
                    self.send(&json!({ "jsonrpc": "2.0", "id": id, "result": result }));
                }
                return message;
            }
            self.keep(message);
        }
    }

    /// `initialize` + `initialized` with work-done progress; waits for the first indexing to end.
    pub fn initialize_and_wait_for_index(&mut self) -> Value {
        let result = self.call(
            "initialize",
            json!({
                "processId": null,
                "rootUri": uri(&self.root.clone()),
                "capabilities": { "window": { "workDoneProgress": true } },
            }),
        );
        self.notify("initialized", json!({}));
        self.wait_for("the end of indexing", |m| {
            m["method"] == "$/progress" && m["params"]["value"]["kind"] == "end"
        });
        result
    }

    pub fn open(&mut self, rel: &str, language: &str, text: &str) {
        let path = self.root.join(rel);
        self.notify(
            "textDocument/didOpen",
            json!({ "textDocument": { "uri": uri(&path), "languageId": language, "version": 1, "text": text } }),
        );
    }

    pub fn doc_uri(&self, rel: &str) -> String {
        uri(&self.root.join(rel))
    }

    /// Waits for the process to end (bounded).
    pub fn wait_for_exit(&mut self) -> ExitStatus {
        let deadline = Instant::now() + PATIENCE;
        loop {
            if let Some(status) = self.child.try_wait().expect("try_wait") {
                return status;
            }
            assert!(
                Instant::now() < deadline,
                "lode lsp did not exit\nstderr:\n{}",
                self.stderr()
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Drop for LspClient {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Workspace-relative path of a location's URI.
pub fn location_path(location: &Value, root: &Path) -> String {
    let uri = location["uri"].as_str().expect("a uri");
    let path = uri.strip_prefix("file://").expect("a file uri");
    Path::new(path)
        .strip_prefix(root)
        .expect("inside the workspace")
        .to_string_lossy()
        .into_owned()
}

/// Whether `done` holds within 30 s, asked every 100 ms: for what the index does behind the
/// answers (how soon is the debounce's business, not a test's).
pub fn eventually(mut done: impl FnMut() -> bool) -> bool {
    (0..300).any(|_| {
        let reached = done();
        if !reached {
            std::thread::sleep(Duration::from_millis(100));
        }
        reached
    })
}
