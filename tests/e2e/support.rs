//! Helpers shared by the end-to-end tests: the real `lode` binary and scratch workspaces.

#![allow(dead_code)]

use std::fs;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant, SystemTime};

/// The `lode` binary Cargo built for this test run.
pub fn lode_bin() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_lode"))
}

/// The full binary that `lode` runs for everything but served queries: what lode names as the
/// sandbox launcher (its own executable), so the sandbox suites launch it directly.
pub fn lode_full_bin() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_lode-full"))
}

/// A `lode` command run inside `root`, with no inherited index location and no background
/// daemon started by a query (the daemon's own tests turn it back on).
pub fn lode(root: &Path) -> Command {
    let mut command = Command::new(lode_bin());
    command
        .current_dir(root)
        .env_remove("LODE_INDEX_DIR")
        .env("LODE_DAEMON", "never");
    // Zero-config models: a key or a local Ollama on the test machine must not become the
    // provider of a test that configures none (tests/e2e/zero_config.rs sets them on purpose).
    for variable in [
        "ANTHROPIC_API_KEY",
        "OPENAI_API_KEY",
        "OPENROUTER_API_KEY",
        "LODE_MODEL",
    ] {
        command.env_remove(variable);
    }
    command.env("OLLAMA_HOST", "127.0.0.1:9");
    command
}

/// Runs `lode ARGS` in `root` and returns its output.
pub fn run(root: &Path, args: &[&str]) -> Output {
    lode(root).args(args).output().expect("lode runs")
}

pub fn stdout(output: &Output) -> String {
    String::from_utf8_lossy(&output.stdout).into_owned()
}

pub fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

pub fn write(root: &Path, rel: &str, text: &str) {
    let path = root.join(rel);
    fs::create_dir_all(path.parent().expect("relative paths have a parent")).expect("mkdir");
    fs::write(path, text).expect("write");
}

/// Copies a directory tree (regular files only).
pub fn copy_tree(from: &Path, to: &Path) {
    for entry in fs::read_dir(from).expect("read_dir") {
        let entry = entry.expect("entry");
        let target = to.join(entry.file_name());
        if entry.file_type().expect("file type").is_dir() {
            fs::create_dir_all(&target).expect("mkdir");
            copy_tree(&entry.path(), &target);
        } else {
            fs::copy(entry.path(), &target).expect("copy");
        }
    }
}

/// The repository's fixtures directory.
pub fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures")
}

/// `target/test-tools` (canonical), when pyright's language server is installed there by
/// scripts/install-test-tools.sh; `None` to skip, which in CI is a failure instead.
pub fn pyright_test_tools() -> Option<PathBuf> {
    let tools = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target/test-tools");
    if tools.join("node_modules/.bin/pyright-langserver").is_file() {
        return fs::canonicalize(tools).ok();
    }
    assert!(
        std::env::var_os("CI").is_none(),
        "pyright-langserver is missing: run scripts/install-test-tools.sh"
    );
    eprintln!("skipping: pyright-langserver is not installed (run scripts/install-test-tools.sh)");
    None
}

/// A generated Rust crate of `files` modules, each with a few functions, a struct and an impl.
pub fn generate_rust_tree(root: &Path, files: usize) {
    for n in 0..files {
        let mut text = format!(
            "//! Module {n} of a generated crate.\n\nuse crate::module_{}::Widget{};\n\n",
            (n + 1) % files,
            (n + 1) % files
        );
        text.push_str(&format!(
            "pub struct Widget{n} {{\n    pub id: u64,\n    pub label: String,\n}}\n\n"
        ));
        text.push_str(&format!("impl Widget{n} {{\n"));
        for m in 0..6 {
            text.push_str(&format!(
                "    /// Computes value {m} of widget {n}.\n    pub fn compute_{m}_for_{n}(&self, input: u64) -> u64 {{\n        let mut acc = input;\n        for step in 0..{m} {{\n            acc = acc.wrapping_mul(31).wrapping_add(step + self.id);\n        }}\n        acc\n    }}\n\n"
            ));
        }
        text.push_str("}\n\n");
        text.push_str(&format!(
            "pub fn build_widget_{n}(id: u64) -> Widget{n} {{\n    let other = Widget{}::default_for(id);\n    Widget{n} {{ id, label: format!(\"{{}}\", other.id) }}\n}}\n",
            (n + 1) % files
        ));
        write(root, &format!("src/module_{n}.rs"), &text);
    }
}

/// A `lode watch` child that is killed (SIGKILL) when dropped.
pub struct Watch(pub Child);

impl Drop for Watch {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

pub fn spawn_watch(root: &Path) -> Watch {
    let mut child = lode(root)
        .args(["watch", "-v"])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("lode watch starts");
    // Drain stderr so the watcher never blocks on a full pipe; echo it for failing tests.
    let log = child.stderr.take().expect("piped stderr");
    std::thread::spawn(move || {
        for line in BufReader::new(log).lines().map_while(Result::ok) {
            eprintln!("[watch] {line}");
        }
    });
    Watch(child)
}

/// Runs `lode symbols PROBE -v` until its freshness line says a watcher answered (bounded).
pub fn wait_until_watched(root: &Path, probe: &str) -> String {
    let deadline = Instant::now() + Duration::from_secs(120);
    loop {
        let output = run(root, &["symbols", probe, "-v", "--json"]);
        let err = stderr(&output);
        if err.contains("freshness: served by") {
            return err;
        }
        assert!(
            Instant::now() < deadline,
            "no watcher answered in time; last stderr: {err}"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// Rewrites a file with new text of the same length and puts its old mtime back: a check by
/// size and mtime cannot see the change, only a file-system event can.
pub fn edit_behind_the_stat_check(path: &Path, new_text: &str) {
    let old = fs::metadata(path).unwrap();
    assert_eq!(old.len() as usize, new_text.len(), "same length on purpose");
    let mtime: SystemTime = old.modified().unwrap();
    fs::write(path, new_text).unwrap();
    fs::File::options()
        .write(true)
        .open(path)
        .unwrap()
        .set_modified(mtime)
        .unwrap();
}

/// Each finished tool call in `lode run --json` events, in order: its tool, its final status
/// (`completed` or `failed`) and the finishing event itself.
pub fn finished_tool_calls(
    events: &[serde_json::Value],
) -> Vec<(String, String, serde_json::Value)> {
    let mut names = std::collections::HashMap::new();
    let mut finished = Vec::new();
    for event in events {
        match event["event"].as_str() {
            Some("tool_call_started") => {
                names.insert(
                    event["id"].as_str().unwrap_or_default().to_owned(),
                    event["tool"].as_str().unwrap_or_default().to_owned(),
                );
            }
            Some("tool_call_updated")
                if matches!(event["status"].as_str(), Some("completed" | "failed")) =>
            {
                let id = event["id"].as_str().unwrap_or_default();
                finished.push((
                    names.get(id).cloned().unwrap_or_default(),
                    event["status"].as_str().unwrap_or_default().to_owned(),
                    event.clone(),
                ));
            }
            _ => {}
        }
    }
    finished
}

/// `$LODE_CONFIG` for a test workspace: its `.lode/config.toml` when there is one (the tests'
/// scripted providers live there), else empty, which lode treats as unset. lode applies a
/// workspace's own file in full only once the user trusts it (`lode trust`; covered by
/// `tests/e2e/workspace_trust.rs`); a file the user names in `$LODE_CONFIG` is theirs, so it applies.
pub fn workspace_config_env(root: &std::path::Path) -> std::ffi::OsString {
    let file = root.join(".lode/config.toml");
    if file.exists() {
        file.into_os_string()
    } else {
        std::ffi::OsString::new()
    }
}
