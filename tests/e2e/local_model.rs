//! lode against a REAL local model: llama.cpp's `llama-server` (its OpenAI-compatible endpoint)
//! serving Qwen2.5-Coder-0.5B-Instruct (Q4_K_M GGUF) on 127.0.0.1, driven by `lode run --json`
//! on a copy of the calculator fixture with a 4096-token window (the lean profile).
//!
//! What it checks is what a prompt cache needs from lode, with a real server's own accounting:
//! the requests of a session share their prefix, so llama-server reuses its cached prompt
//! (`timings.cache_n` / `prompt_tokens_details.cached_tokens`, which lode reports as
//! `cached_input_tokens`), and a second session's first request reuses the tools and the system
//! prompt that the first one left in the cache. The model's answers are not judged (it is tiny).
//!
//! The server is `$LODE_LLAMA_SERVER` when set, else `shared/bin/llama-server` in the nearest
//! ancestor of the repository that has one (`../shared` beside a checkout, `../../shared` beside
//! a worktree);
//! the model `$LODE_LOCAL_MODEL`, else `target/test-tools/qwen-0.5b/model.gguf`
//! (scripts/install-test-tools.sh). Missing either, the test skips and says so (under CI it
//! fails). About a minute on two idle cores.

use crate::support;

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::Duration;

use serde_json::Value;
use support::{copy_tree, fixtures, lode, stderr, stdout};

fn repository_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// `shared/bin/llama-server` in the nearest ancestor of the repository holding one, else where
/// a checkout's sibling would have it (for the message).
fn shared_llama_server() -> PathBuf {
    let root = std::fs::canonicalize(repository_root()).unwrap_or_else(|_| repository_root());
    root.ancestors()
        .skip(1)
        .map(|dir| dir.join("shared/bin/llama-server"))
        .find(|path| path.is_file())
        .unwrap_or_else(|| root.join("../shared/bin/llama-server"))
}

/// `$NAME` when set, else `fallback`; `None` (skip) when the file is missing.
fn tool(name: &str, fallback: PathBuf) -> Option<PathBuf> {
    let path = std::env::var_os(name)
        .filter(|value| !value.is_empty())
        .map_or(fallback, PathBuf::from);
    if path.is_file() {
        return Some(path);
    }
    assert!(
        std::env::var_os("CI").is_none(),
        "{} is missing (${name}); run scripts/install-test-tools.sh",
        path.display()
    );
    eprintln!(
        "skipping: {} is missing (${name}; scripts/install-test-tools.sh installs the model)",
        path.display()
    );
    None
}

/// A running llama-server, killed when dropped.
struct LlamaServer {
    child: Child,
    port: u16,
    log: PathBuf,
    _dir: tempfile::TempDir,
}

impl Drop for LlamaServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// `GET /health` answered 200.
fn healthy(port: u16) -> bool {
    let Ok(mut stream) = TcpStream::connect(("127.0.0.1", port)) else {
        return false;
    };
    let _ = stream.set_read_timeout(Some(Duration::from_secs(5)));
    if write!(
        stream,
        "GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n"
    )
    .is_err()
    {
        return false;
    }
    let mut answer = String::new();
    let _ = stream.read_to_string(&mut answer);
    answer.starts_with("HTTP/1.1 200")
}

fn start_llama_server(binary: &Path, model: &Path) -> LlamaServer {
    let port = TcpListener::bind("127.0.0.1:0")
        .and_then(|listener| listener.local_addr())
        .map(|address| address.port())
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("llama-server.log");
    let threads = std::thread::available_parallelism().map_or(2, |n| n.get().min(4));
    let child = Command::new(binary)
        .arg("-m")
        .arg(model)
        .args(["--jinja", "--host", "127.0.0.1", "--port"])
        .arg(port.to_string())
        .args(["-t", &threads.to_string(), "-c", "4096", "-np", "1"])
        // Greedy sampling: the same prompt gets the same answer, run after run.
        .args(["--alias", "local-model", "--temp", "0", "--seed", "1"])
        .stdin(Stdio::null())
        .stdout(std::fs::File::create(&log).unwrap())
        .stderr(std::fs::File::create(dir.path().join("stderr.log")).unwrap())
        .spawn()
        .expect("llama-server starts");
    let mut server = LlamaServer {
        child,
        port,
        log,
        _dir: dir,
    };
    // Loading the model takes seconds; a loaded machine more. Not a timed assertion: the loop
    // only ends early when the server died.
    for _ in 0..600 {
        if healthy(port) {
            return server;
        }
        if let Ok(Some(status)) = server.child.try_wait() {
            panic!(
                "llama-server exited ({status}): {}",
                std::fs::read_to_string(server.log.with_file_name("stderr.log"))
                    .unwrap_or_default()
            );
        }
        std::thread::sleep(Duration::from_millis(500));
    }
    panic!(
        "llama-server did not become healthy on port {}",
        server.port
    );
}

/// One `lode run --json` in `root`; its events.
fn run(root: &Path, prompt: &str) -> (Output, Vec<Value>) {
    let home = tempfile::tempdir().unwrap();
    let output = lode(root)
        .args(["run", "--json", prompt])
        .env("LODE_CONFIG", support::workspace_config_env(root))
        .env("XDG_CONFIG_HOME", home.path().join("config"))
        .env("HOME", home.path())
        .output()
        .expect("lode runs");
    let events = stdout(&output)
        .lines()
        .filter_map(|line| serde_json::from_str(line).ok())
        .collect();
    (output, events)
}

/// (input, cached, output) tokens of each model request, in order.
fn usage(events: &[Value]) -> Vec<(u64, u64, u64)> {
    events
        .iter()
        .filter(|event| event["event"] == "usage")
        .map(|event| {
            let field = |name: &str| event[name].as_u64().unwrap_or(0);
            (
                field("input_tokens"),
                field("cached_input_tokens"),
                field("output_tokens"),
            )
        })
        .collect()
}

#[test]
fn a_real_local_model_reuses_its_prompt_cache_across_lodes_requests() {
    let Some(binary) = tool("LODE_LLAMA_SERVER", shared_llama_server()) else {
        return;
    };
    let Some(model) = tool(
        "LODE_LOCAL_MODEL",
        repository_root().join("target/test-tools/qwen-0.5b/model.gguf"),
    ) else {
        return;
    };
    let server = start_llama_server(&binary, &model);
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    copy_tree(&fixtures().join("agent/calculator"), root);
    std::fs::create_dir_all(root.join(".lode")).unwrap();
    // A short answer cap and at most three model requests a turn keep the test near a minute.
    // (The model's text tool call, a fenced JSON edit, takes about 90 tokens.)
    std::fs::write(
        root.join(".lode/config.toml"),
        format!(
            "[[llm.providers]]\nname = \"local\"\nkind = \"openai\"\nbase_url = \"http://127.0.0.1:{}/v1\"\n\
             model = \"local-model\"\ncontext_window = 4096\nmax_tokens = 128\n\n\
             [agent]\nmax_tool_iterations = 2\n",
            server.port
        ),
    )
    .unwrap();

    // Qwen2.5-Coder-0.5B answers this with an edit written as fenced JSON (read as a call; the
    // edit is refused, nobody is there to allow it), so the session makes a second request.
    let (first, first_events) = run(root, "Please fix the failing test.");
    assert!(
        matches!(first.status.code(), Some(0 | 4)),
        "{}\n{}",
        stderr(&first),
        stdout(&first)
    );
    let (second, second_events) = run(root, "Which test checks multiply?");
    assert!(
        matches!(second.status.code(), Some(0 | 4)),
        "{}\n{}",
        stderr(&second),
        stdout(&second)
    );
    let first_usage = usage(&first_events);
    let second_usage = usage(&second_events);
    let called: Vec<(String, String)> = support::finished_tool_calls(&first_events)
        .into_iter()
        .map(|(tool, status, _)| (tool, status))
        .collect();
    let audit = std::fs::read_to_string(root.join(".lode/audit.jsonl")).unwrap_or_default();
    println!(
        "llama-server usage (input, cached, output) per request: first session {first_usage:?}, \
         second session {second_usage:?}; first session's tool calls {called:?} ({} read from \
         text)",
        audit.matches("\"via\":\"text\"").count()
    );
    assert!(!first_usage.is_empty() && !second_usage.is_empty());
    // The window is kept: every request fit what lode budgets (the server counts with the
    // model's own tokenizer).
    for (input, _, output) in first_usage.iter().chain(&second_usage) {
        assert!(input + output <= 4096, "{first_usage:?} {second_usage:?}");
    }
    // Within a session, each request extends the one before: the server had all of it cached
    // but the last few tokens it must evaluate again.
    for pair in first_usage.windows(2) {
        let (before, _, _) = pair[0];
        let (_, cached, _) = pair[1];
        assert!(
            cached + 16 >= before,
            "request of {before} tokens, next one found only {cached} cached: {first_usage:?}\n{}",
            std::fs::read_to_string(&server.log).unwrap_or_default()
        );
    }
    // A new session starts with the same tools and system prompt: the server finds them in its
    // cache, so at least half of the first request was not processed again.
    let (input, cached, _) = second_usage[0];
    assert!(
        cached * 2 >= input,
        "second session's first request: {cached} of {input} tokens cached\n{}",
        std::fs::read_to_string(&server.log).unwrap_or_default()
    );
}
