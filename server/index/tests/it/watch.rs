//! The watcher and its lease on a real index: file-system events applied file by file with the
//! walk's ignore rules, and the flush socket under malformed, oversized and out-of-order input.

use std::io::{Read, Write};
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use lode_index::watch::lease::{DEFAULT_FLUSH_TIMEOUT, NotWatched};
use lode_index::watch::{WatchOptions, Watcher, WorkspaceSink, protocol};
use lode_index::{Workspace, WorkspaceOptions};

fn write(root: &Path, rel: &str, text: &str) {
    let path = root.join(rel);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

fn indexed() -> (tempfile::TempDir, Workspace) {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    write(root, ".gitignore", "generated/\n");
    write(root, "src/lib.rs", "pub fn alpha() {}\n");
    write(root, "src/old.rs", "pub fn beta() {}\n");
    std::fs::create_dir_all(root.join("generated")).unwrap();
    let workspace = Workspace::open(WorkspaceOptions::new(root)).unwrap();
    workspace.refresh(&|_| {}).unwrap();
    (dir, workspace)
}

fn names(workspace: &Workspace, name: &str) -> Vec<String> {
    workspace
        .symbols(name, 10)
        .unwrap()
        .into_iter()
        .map(|hit| format!("{}:{}", hit.path, hit.name))
        .collect()
}

fn abs(workspace: &Workspace, rel: &str) -> PathBuf {
    workspace.root().join(rel)
}

#[test]
fn events_are_applied_file_by_file_with_the_walks_ignore_rules() {
    let (dir, workspace) = indexed();
    let root = dir.path();
    write(root, "src/lib.rs", "pub fn alpha_changed() {}\n");
    write(root, "src/new.rs", "pub fn gamma() {}\n");
    write(root, "generated/out.rs", "pub fn ignored_fn() {}\n");
    std::fs::remove_file(root.join("src/old.rs")).unwrap();
    let paths: Vec<PathBuf> = ["src/lib.rs", "src/new.rs", "generated/out.rs", "src/old.rs"]
        .iter()
        .map(|rel| abs(&workspace, rel))
        .collect();
    let report = workspace.apply_disk_changes(&paths, false).unwrap();
    assert!(!report.rescanned, "{report:?}");
    assert_eq!(report.stats.parsed, 2, "{report:?}");
    assert_eq!(report.stats.removed, 1, "{report:?}");
    assert_eq!(
        names(&workspace, "alpha_changed"),
        ["src/lib.rs:alpha_changed"]
    );
    assert_eq!(names(&workspace, "gamma"), ["src/new.rs:gamma"]);
    assert!(names(&workspace, "ignored_fn").is_empty());
    assert!(names(&workspace, "beta").is_empty());

    // A new directory can hold anything: a refresh, which finds its files.
    write(root, "src/deep/er.rs", "pub fn delta() {}\n");
    let report = workspace
        .apply_disk_changes(&[abs(&workspace, "src/deep")], false)
        .unwrap();
    assert!(report.rescanned);
    assert_eq!(names(&workspace, "delta"), ["src/deep/er.rs:delta"]);

    // An ignore file changed: a refresh too, which now leaves src/new.rs out.
    write(root, ".gitignore", "generated/\nsrc/new.rs\n");
    let report = workspace
        .apply_disk_changes(&[abs(&workspace, ".gitignore")], false)
        .unwrap();
    assert!(report.rescanned);
    assert!(names(&workspace, "gamma").is_empty());

    // Nothing lode indexes: no write at all.
    let before = workspace.symbols("alpha_changed", 1).unwrap();
    let report = workspace
        .apply_disk_changes(
            &[
                abs(&workspace, "target/debug/x.o"),
                abs(&workspace, "README"),
            ],
            false,
        )
        .unwrap();
    assert_eq!(report.stats.parsed + report.stats.removed, 0);
    assert_eq!(workspace.symbols("alpha_changed", 1).unwrap(), before);
}

/// One raw exchange: the bytes sent, the response frame's JSON body (`None`: no answer).
fn request(socket: &Path, bytes: &[u8]) -> Option<serde_json::Value> {
    let mut stream = UnixStream::connect(socket).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(30)))
        .unwrap();
    let _ = stream.write_all(bytes);
    let _ = stream.shutdown(std::net::Shutdown::Write);
    let mut answer = Vec::new();
    let _ = stream.read_to_end(&mut answer);
    if answer.len() < 12 {
        return None;
    }
    assert_eq!(&answer[..4], protocol::MAGIC);
    Some(serde_json::from_slice(&answer[12..]).unwrap())
}

fn frame(body: &[u8]) -> Vec<u8> {
    let mut frame = protocol::MAGIC.to_vec();
    frame.extend_from_slice(&protocol::PROTOCOL.to_le_bytes());
    frame.extend_from_slice(&(body.len() as u32).to_le_bytes());
    frame.extend_from_slice(body);
    frame
}

fn refusal(answer: Option<serde_json::Value>) -> String {
    let answer = answer.expect("an answer");
    assert_eq!(answer["response"], "refused", "{answer}");
    answer["reason"].as_str().unwrap().to_owned()
}

#[test]
fn the_flush_socket_answers_bad_input_with_an_error_and_keeps_serving() {
    let (_dir, workspace) = indexed();
    let workspace = Arc::new(workspace);
    let watcher = Watcher::start(
        WatchOptions::for_workspace(&workspace),
        Box::new(WorkspaceSink(workspace.clone())),
    )
    .unwrap();
    let socket = watcher.socket().unwrap().to_path_buf();

    assert!(refusal(request(&socket, b"hello\n")).contains("not a lode frame"));
    assert!(refusal(request(&socket, b"flush 1\n")).contains("not a lode frame"));
    let mut future = frame(b"{}");
    future[4..8].copy_from_slice(&99u32.to_le_bytes());
    assert!(refusal(request(&socket, &future)).contains("protocol 99"));
    let huge = frame(&vec![b' '; 2 << 20]);
    assert!(refusal(request(&socket, &huge)).contains("exceeds the limit"));
    // Connected and gone without a word, or a request cut short.
    drop(UnixStream::connect(&socket).unwrap());
    assert!(refusal(request(&socket, &frame(b"{}")[..13])).contains("malformed"));
    // A query: this watcher was given no workspace to answer with.
    let settings = workspace.watch_settings();
    let query = format!(
        r#"{{"settings":"{settings}","request":"query","fresh":false,"query":{{"kind":"symbols","name":"alpha","limit":1}}}}"#
    );
    assert!(refusal(request(&socket, &frame(query.as_bytes()))).contains("does not answer"));
    // A stop: only a daemon may be stopped from outside.
    let stop = br#"{"settings":"","request":"stop"}"#;
    assert!(refusal(request(&socket, &frame(stop))).contains("not a background daemon"));

    // Still serving: a well-formed flush through the library, and one by hand.
    let flushed = workspace.flush_watcher(DEFAULT_FLUSH_TIMEOUT).unwrap();
    assert_eq!(flushed.watcher_pid, std::process::id());
    let flush = format!(r#"{{"settings":"{settings}","request":"flush"}}"#);
    let answer = request(&socket, &frame(flush.as_bytes())).unwrap();
    assert_eq!(answer["response"], "flushed", "{answer}");
    assert_eq!(answer["pid"], std::process::id());

    // Stopped: the lease is gone and a flush says so.
    drop(watcher);
    assert!(!socket.exists());
    assert_eq!(
        workspace.flush_watcher(DEFAULT_FLUSH_TIMEOUT),
        Err(NotWatched::NoWatcher)
    );
}
