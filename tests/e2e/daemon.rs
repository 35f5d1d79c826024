//! `lode daemon` and queries served over the lease socket, end to end: the real binary, real
//! background processes, real Unix sockets and real files. A served answer is byte for byte
//! what the command prints when it answers itself; two clients racing start one daemon; a
//! daemon killed mid-query, a stale socket, a lease of another version or other settings, and
//! a peer that speaks something else are all bypassed with a correct answer; malformed and
//! oversized requests are refused while the daemon keeps serving; an idle daemon and one whose
//! workspace is deleted exit by themselves.

use crate::support;

use std::fs;
use std::io::{Read, Write};
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::process::{Output, Stdio};
use std::time::{Duration, Instant};

use support::{lode, run, stderr, stdout, write};

fn workspace() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    fs::create_dir_all(root.join(".git")).unwrap();
    write(
        root,
        "src/lib.rs",
        "/// Builds the greeting shown to a user.\npub fn alpha_greet(name: &str) -> String {\n    beta_format(name)\n}\n\npub fn beta_format(name: &str) -> String {\n    format!(\"hello {name}\")\n}\n",
    );
    write(
        root,
        "src/shapes.rs",
        "pub struct Circle { pub radius: f64 }\n\nimpl Circle {\n    pub fn area(&self) -> f64 {\n        3.14 * self.radius * self.radius\n    }\n}\n\npub fn total_area(shapes: &[Circle]) -> f64 {\n    shapes.iter().map(Circle::area).sum()\n}\n",
    );
    write(
        root,
        "app/main.py",
        "def alpha_main():\n    return greet_user('x')\n\n\ndef greet_user(name):\n    return f'hi {name}'\n",
    );
    let output = run(root, &["index"]);
    assert!(output.status.success(), "{}", stderr(&output));
    dir
}

/// `lode ARGS` in `root` with the daemon settings given (the shared helper turns it off).
fn run_with(root: &Path, args: &[&str], env: &[(&str, &str)]) -> Output {
    let mut command = lode(root);
    for (key, value) in env {
        command.env(key, value);
    }
    command.args(args).output().expect("lode runs")
}

fn index_dir(root: &Path) -> PathBuf {
    root.join(".lode/index")
}

/// The pid of the daemon holding `root`'s index, from `lode daemon status --json`.
fn daemon_pid(root: &Path) -> Option<u32> {
    let output = run(root, &["daemon", "status", "--json"]);
    let status: serde_json::Value = serde_json::from_str(stdout(&output).trim()).ok()?;
    (status["holder"] == "daemon").then(|| status["pid"].as_u64().unwrap() as u32)
}

fn eventually(what: &str, mut done: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(60);
    while !done() {
        assert!(Instant::now() < deadline, "gave up waiting: {what}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn alive(pid: u32) -> bool {
    // A zombie still has a /proc entry: look at its state.
    fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|stat| {
        !stat
            .rsplit(')')
            .next()
            .unwrap_or("")
            .trim_start()
            .starts_with('Z')
    })
}

fn kill(pid: u32, signal: i32) {
    // SAFETY: sending a signal to a pid has no memory-safety preconditions.
    unsafe {
        libc::kill(pid as i32, signal);
    }
}

/// Daemon processes serving `root`, found by their command lines.
fn daemons_serving(root: &Path) -> Vec<u32> {
    let root = root.to_string_lossy().into_owned();
    fs::read_dir("/proc")
        .unwrap()
        .filter_map(|entry| entry.ok()?.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| {
            let Ok(cmdline) = fs::read(format!("/proc/{pid}/cmdline")) else {
                return false;
            };
            let words: Vec<String> = cmdline
                .split(|b| *b == 0)
                .map(|w| String::from_utf8_lossy(w).into_owned())
                .collect();
            alive(*pid)
                && words
                    .windows(2)
                    .any(|w| w[0] == "daemon" && w[1] == "serve")
                && words.contains(&root)
        })
        .collect()
}

/// Stops whatever daemon serves the workspace when the test ends, however it ends.
struct Cleanup(PathBuf);

impl Drop for Cleanup {
    fn drop(&mut self) {
        for pid in daemons_serving(&self.0) {
            kill(pid, libc::SIGKILL);
        }
    }
}

fn start_daemon(root: &Path) -> u32 {
    let output = run(root, &["daemon", "start"]);
    assert!(output.status.success(), "{}", stderr(&output));
    assert!(
        stderr(&output).contains("started (pid"),
        "{}",
        stderr(&output)
    );
    daemon_pid(root).expect("a daemon holds the index after start")
}

/// The queries compared between the two paths: every command, text and JSON, filters, a
/// query with no result and one with an error.
const QUERIES: &[&[&str]] = &[
    &["search", "alpha_greet"],
    &["search", "alpha_greet", "--json"],
    &["search", "greeting shown to a user", "--json"],
    &["search", "area", "--mode", "lexical", "--json"],
    &["search", "area of a circle", "--mode", "semantic", "--json"],
    &["search", "greet", "--lang", "python", "--json"],
    &["search", "greet", "--path", "src/*.rs", "-n", "2"],
    &["search", "zzz_nothing_matches_this"],
    &["search", "greet", "--path", "["],
    &["symbols", "alpha", "--json"],
    &["symbols", "area"],
    &["refs", "beta_format", "--json"],
    &["refs", "area"],
    &["map", "--tokens", "300"],
    &["map", "--tokens", "300", "--json", "--focus", "src/lib.rs"],
];

#[test]
fn a_served_answer_is_exactly_what_the_command_prints_when_it_answers_itself() {
    let dir = workspace();
    let root = dir.path();
    let _cleanup = Cleanup(root.to_path_buf());
    let here: Vec<Output> = QUERIES.iter().map(|args| run(root, args)).collect();
    for (args, output) in QUERIES.iter().zip(&here) {
        assert_ne!(output.status.code(), Some(101), "{args:?} panicked");
    }
    start_daemon(root);
    for (args, expected) in QUERIES.iter().zip(&here) {
        let mut verbose = args.to_vec();
        verbose.push("-v");
        let served = run(root, &verbose);
        assert_eq!(served.status.code(), expected.status.code(), "{args:?}");
        assert_eq!(
            stdout(&served),
            stdout(expected),
            "{args:?}\n{}",
            stderr(&served)
        );
        let err = stderr(&served);
        if served.status.code() == Some(3) {
            // The error is the same; the daemon's failure sends the query back here.
            assert!(
                err.contains(stderr(expected).trim()),
                "{args:?}: {err} vs {}",
                stderr(expected)
            );
        } else {
            assert!(
                err.contains("freshness: served by lode daemon"),
                "{args:?}: {err}"
            );
        }
    }
    // Without -v the `lode` front end answers the served ones itself: the same bytes again.
    for (args, expected) in QUERIES.iter().zip(&here) {
        let served = run(root, args);
        assert_eq!(served.status.code(), expected.status.code(), "{args:?}");
        assert_eq!(stdout(&served), stdout(expected), "{args:?}");
        if stderr(expected).is_empty() {
            assert_eq!(stderr(&served), "", "{args:?}");
        }
    }
    // An edit is seen at once, through the daemon's flush.
    write(root, "src/late.rs", "pub fn gamma_late() {}\n");
    let output = run(root, &["symbols", "gamma_late", "--json", "-v"]);
    assert!(
        stdout(&output).contains("src/late.rs"),
        "{}",
        stderr(&output)
    );
    assert!(stderr(&output).contains("served by lode daemon"));
    let stop = run(root, &["daemon", "stop"]);
    assert!(stop.status.success(), "{}", stderr(&stop));
    assert_eq!(daemon_pid(root), None);
    let status = run(root, &["daemon", "status"]);
    assert_eq!(status.status.code(), Some(1));
    assert!(stdout(&status).contains("no process keeps the index"));
}

#[test]
fn a_query_in_a_large_enough_workspace_starts_a_daemon_that_serves_the_next_ones() {
    let dir = workspace();
    let root = dir.path();
    let _cleanup = Cleanup(root.to_path_buf());
    let never = [("LODE_DAEMON", "never"), ("LODE_DAEMON_MIN_FILES", "1")];
    let output = run_with(root, &["symbols", "alpha_greet"], &never);
    assert!(output.status.success(), "{}", stderr(&output));
    assert!(!stderr(&output).contains("daemon"), "{}", stderr(&output));
    assert_eq!(daemon_pid(root), None);

    // Three files: above a threshold of 3, nothing starts; at 3 a daemon does.
    let high = [("LODE_DAEMON", "auto"), ("LODE_DAEMON_MIN_FILES", "4")];
    let output = run_with(root, &["symbols", "alpha_greet"], &high);
    assert!(!stderr(&output).contains("daemon"), "{}", stderr(&output));
    let auto = [("LODE_DAEMON", "auto"), ("LODE_DAEMON_MIN_FILES", "3")];
    let output = run_with(root, &["symbols", "alpha_greet", "--json"], &auto);
    assert!(output.status.success(), "{}", stderr(&output));
    assert!(stdout(&output).contains("\"alpha_greet\""));
    let err = stderr(&output);
    assert!(err.contains("started a background daemon"), "{err}");
    assert!(err.contains("lode daemon stop"), "{err}");
    eventually("the daemon answers", || daemon_pid(root).is_some());
    let output = run_with(root, &["refs", "beta_format", "-v"], &auto);
    assert!(output.status.success(), "{}", stderr(&output));
    assert!(stderr(&output).contains("served by lode daemon"));

    // The notice is shown once per index.
    assert!(run(root, &["daemon", "stop"]).status.success());
    let output = run_with(root, &["symbols", "alpha_greet"], &auto);
    assert!(
        !stderr(&output).contains("started a background daemon"),
        "{}",
        stderr(&output)
    );
    eventually("the second daemon answers", || daemon_pid(root).is_some());
}

#[test]
fn two_clients_racing_end_with_one_daemon_and_both_get_their_answer() {
    let dir = workspace();
    let root = dir.path();
    let _cleanup = Cleanup(root.to_path_buf());
    let spawn = |args: &[&str]| {
        lode(root)
            .env("LODE_DAEMON", "auto")
            .env("LODE_DAEMON_MIN_FILES", "1")
            .args(args)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap()
    };
    let clients = vec![
        spawn(&["daemon", "start"]),
        spawn(&["daemon", "start"]),
        spawn(&["symbols", "alpha_greet", "--json"]),
        spawn(&["symbols", "alpha_greet", "--json"]),
    ];
    for (index, client) in clients.into_iter().enumerate() {
        let output = client.wait_with_output().unwrap();
        assert!(
            output.status.success(),
            "client {index}: {}",
            stderr(&output)
        );
        if index >= 2 {
            assert!(
                stdout(&output).contains("\"alpha_greet\""),
                "{}",
                stderr(&output)
            );
        }
    }
    let pid = daemon_pid(root).expect("a daemon holds the index");
    eventually("the losing daemons exit", || {
        daemons_serving(root) == vec![pid]
    });
    let log = fs::read_to_string(index_dir(root).join("daemon.log")).unwrap();
    assert_eq!(log.matches("lode daemon: serving").count(), 1, "{log}");
    let output = run(root, &["symbols", "beta_format", "-v"]);
    assert!(stderr(&output).contains(&format!("served by lode daemon (pid {pid})")));
}

#[test]
fn a_daemon_killed_mid_query_leaves_the_query_to_answer_itself_correctly() {
    let dir = workspace();
    let root = dir.path();
    let _cleanup = Cleanup(root.to_path_buf());
    let pid = start_daemon(root);
    // Stopped, the daemon still accepts connections (the kernel queues them) but never
    // answers: the query connects, sends, and waits until the daemon dies under it.
    kill(pid, libc::SIGSTOP);
    write(root, "src/during.rs", "pub fn delta_during_kill() {}\n");
    let query = lode(root)
        .args(["symbols", "delta_during_kill", "--json", "-v"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(500));
    kill(pid, libc::SIGKILL);
    let output = query.wait_with_output().unwrap();
    let err = stderr(&output);
    assert!(output.status.success(), "{err}");
    assert!(stdout(&output).contains("src/during.rs"), "{err}");
    assert!(err.contains("not served by a lease holder"), "{err}");
    assert!(err.contains("freshness: quick check"), "{err}");
    eventually("the killed daemon is gone", || !alive(pid));

    // Its lease file and socket are still there (SIGKILL runs no clean-up): both are stale.
    assert!(index_dir(root).join("watch.sock").exists());
    assert!(
        !fs::read_to_string(index_dir(root).join("watch.lock"))
            .unwrap()
            .is_empty()
    );
    let output = run(root, &["symbols", "alpha_greet", "-v"]);
    assert!(output.status.success(), "{}", stderr(&output));
    assert!(
        stderr(&output).contains("does not answer"),
        "{}",
        stderr(&output)
    );
    // A new daemon takes the place over.
    let second = start_daemon(root);
    assert_ne!(second, pid);
    let output = run(root, &["symbols", "alpha_greet", "-v"]);
    assert!(stderr(&output).contains(&format!("served by lode daemon (pid {second})")));
}

/// The lease a real daemon wrote, and the daemon stopped (so the test can impersonate it).
fn lease_of_a_stopped_daemon(root: &Path) -> String {
    start_daemon(root);
    let lease = fs::read_to_string(index_dir(root).join("watch.lock")).unwrap();
    assert!(run(root, &["daemon", "stop"]).status.success());
    lease
}

/// A listener at the index's socket that answers every connection with `reply` and counts them.
fn impostor(root: &Path, reply: &'static [u8]) -> std::sync::Arc<std::sync::atomic::AtomicUsize> {
    let socket = index_dir(root).join("watch.sock");
    let _ = fs::remove_file(&socket);
    let listener = UnixListener::bind(&socket).unwrap();
    let connections = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let counted = connections.clone();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { return };
            counted.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            // Take the request first, as a real server of another protocol would.
            let mut header = [0u8; 12];
            let _ = stream.read_exact(&mut header);
            let _ = stream.write_all(reply);
        }
    });
    connections
}

#[test]
fn leases_of_another_version_other_settings_or_a_foreign_peer_are_bypassed() {
    let dir = workspace();
    let root = dir.path();
    let _cleanup = Cleanup(root.to_path_buf());
    let genuine = lease_of_a_stopped_daemon(root);
    let lease_path = index_dir(root).join("watch.lock");
    let connections = impostor(root, b"HTTP/1.1 400 Bad Request\r\n\r\n");
    let check = |expect: &str| {
        let output = run(root, &["symbols", "alpha_greet", "--json", "-v"]);
        let err = stderr(&output);
        assert!(output.status.success(), "{err}");
        assert!(stdout(&output).contains("\"alpha_greet\""), "{err}");
        assert!(err.contains(expect), "expected {expect:?}: {err}");
        assert!(err.contains("freshness: quick check"), "{err}");
    };

    // Another protocol version: never contacted.
    fs::write(&lease_path, genuine.replace("lode-watch 2", "lode-watch 3")).unwrap();
    check("speaks protocol 3");
    // Other settings (another lode version, other exclusions): never contacted.
    let settings = genuine
        .lines()
        .find_map(|line| line.strip_prefix("settings "))
        .unwrap();
    fs::write(&lease_path, genuine.replace(settings, "0123456789abcdef")).unwrap();
    check("other settings");
    assert_eq!(connections.load(std::sync::atomic::Ordering::SeqCst), 0);
    // The same settings, but the peer does not speak lode: its answer is not trusted.
    fs::write(&lease_path, &genuine).unwrap();
    check("not a lode frame");
    assert!(connections.load(std::sync::atomic::Ordering::SeqCst) > 0);
    // A lease naming a socket outside the index (a repository can ship any file).
    let elsewhere = tempfile::tempdir().unwrap();
    let foreign = elsewhere.path().join("service.sock");
    let _service = UnixListener::bind(&foreign).unwrap();
    let socket_line = genuine
        .lines()
        .find(|line| line.starts_with("socket "))
        .unwrap();
    fs::write(
        &lease_path,
        genuine.replace(socket_line, &format!("socket {}", foreign.display())),
    )
    .unwrap();
    check("does not trust");
}

/// A daemon answers from the index's own vector store: a query for a Qdrant store is not sent
/// to it (its settings name the store), so it reaches Qdrant itself, here a port nothing
/// listens on, and says so instead of printing the daemon's answer as Qdrant's.
#[test]
fn a_query_for_another_vector_store_is_not_answered_by_the_daemon() {
    let dir = workspace();
    let root = dir.path();
    let _cleanup = Cleanup(root.to_path_buf());
    start_daemon(root);
    let served = run(root, &["search", "alpha_greet", "--json", "-v"]);
    assert!(
        stderr(&served).contains("freshness: served by"),
        "{}",
        stderr(&served)
    );

    let unreachable = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", unreachable.local_addr().unwrap());
    drop(unreachable);
    let output = run(
        root,
        &[
            "search",
            "alpha_greet",
            "--json",
            "-v",
            "--vectors",
            "qdrant",
            "--qdrant-url",
            &url,
        ],
    );
    let err = stderr(&output);
    assert!(!err.contains("freshness: served by"), "{err}");
    assert!(err.contains("other settings"), "{err}");
    assert!(!output.status.success(), "{err}");
    assert!(err.contains("Qdrant"), "{err}");
}

/// One raw exchange with the daemon's socket: what it answers to `bytes`.
fn exchange(socket: &Path, bytes: &[u8]) -> Option<serde_json::Value> {
    let mut stream = UnixStream::connect(socket).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    stream.write_all(bytes).unwrap();
    let _ = stream.shutdown(std::net::Shutdown::Write);
    let mut answer = Vec::new();
    let _ = stream.read_to_end(&mut answer);
    if answer.len() < 12 {
        return None;
    }
    assert_eq!(&answer[..4], b"LODE");
    serde_json::from_slice(&answer[12..]).ok()
}

fn frame(version: u32, body: &[u8]) -> Vec<u8> {
    let mut frame = b"LODE".to_vec();
    frame.extend_from_slice(&version.to_le_bytes());
    frame.extend_from_slice(&(body.len() as u32).to_le_bytes());
    frame.extend_from_slice(body);
    frame
}

#[test]
fn malformed_oversized_and_out_of_order_requests_are_refused_and_the_daemon_keeps_serving() {
    let dir = workspace();
    let root = dir.path();
    let _cleanup = Cleanup(root.to_path_buf());
    start_daemon(root);
    let socket = index_dir(root).join("watch.sock");
    let refused = |answer: Option<serde_json::Value>, why: &str| {
        let answer = answer.unwrap_or_else(|| panic!("no answer ({why})"));
        assert_eq!(answer["response"], "refused", "{why}: {answer}");
        answer["reason"].as_str().unwrap().to_owned()
    };
    // The protocol 1 text request.
    let reason = refused(exchange(&socket, b"flush 1\n"), "old text protocol");
    assert!(reason.contains("not a lode frame"), "{reason}");
    // Another version.
    let reason = refused(exchange(&socket, &frame(1, b"{}")), "version 1");
    assert!(reason.contains("protocol 1"), "{reason}");
    // A length far beyond the limit: refused before any body is read.
    let mut huge = b"LODE".to_vec();
    huge.extend_from_slice(&2u32.to_le_bytes());
    huge.extend_from_slice(&(1u32 << 30).to_le_bytes());
    let reason = refused(exchange(&socket, &huge), "oversized");
    assert!(reason.contains("exceeds the limit"), "{reason}");
    // Not JSON, an unknown request, an answer sent as a request (out of order).
    refused(
        exchange(&socket, &frame(2, b"\xff\xfe not json")),
        "not JSON",
    );
    refused(
        exchange(
            &socket,
            &frame(2, br#"{"settings":"x","request":"drop_index"}"#),
        ),
        "unknown request",
    );
    refused(
        exchange(&socket, &frame(2, br#"{"response":"stopping","pid":1}"#)),
        "an answer as a request",
    );
    // A query with other settings.
    let reason = refused(
        exchange(
            &socket,
            &frame(
                2,
                br#"{"settings":"0000","request":"query","fresh":true,"query":{"kind":"symbols","name":"alpha","limit":3}}"#,
            ),
        ),
        "other settings",
    );
    assert!(reason.contains("other settings"), "{reason}");
    // A truncated frame.
    let reason = refused(
        exchange(&socket, &frame(2, b"{\"settings\"")[..14]),
        "truncated",
    );
    assert!(reason.contains("malformed request"), "{reason}");

    // Still serving, and still the same daemon.
    let output = run(root, &["symbols", "alpha_greet", "--json", "-v"]);
    assert!(
        stdout(&output).contains("\"alpha_greet\""),
        "{}",
        stderr(&output)
    );
    assert!(stderr(&output).contains("served by lode daemon"));
}

#[test]
fn an_idle_daemon_exits_and_so_does_one_whose_workspace_is_deleted() {
    let dir = workspace();
    let root = dir.path().to_path_buf();
    let _cleanup = Cleanup(root.clone());
    let output = run_with(
        &root,
        &["daemon", "start"],
        &[("LODE_DAEMON_IDLE_SECS", "1")],
    );
    assert!(output.status.success(), "{}", stderr(&output));
    assert!(
        stderr(&output).contains("exits after 1 s idle"),
        "{}",
        stderr(&output)
    );
    eventually("the idle daemon exits", || daemon_pid(&root).is_none());
    let log = fs::read_to_string(index_dir(&root).join("daemon.log")).unwrap();
    assert!(log.contains("stopped: idle for 1 s"), "{log}");

    let pid = start_daemon(&root);
    drop(dir);
    eventually("the orphaned daemon exits", || !alive(pid));
}

#[test]
fn daemon_stop_does_not_stop_an_editor_or_a_watch_holding_the_index() {
    let dir = workspace();
    let root = dir.path();
    let _watch = support::spawn_watch(root);
    support::wait_until_watched(root, "alpha_greet");
    let output = run(root, &["daemon", "stop"]);
    assert_eq!(output.status.code(), Some(3), "{}", stderr(&output));
    assert!(
        stderr(&output).contains("not a background daemon"),
        "{}",
        stderr(&output)
    );
    let status = run(root, &["daemon", "status"]);
    assert!(
        stdout(&status).contains("lode watch (pid"),
        "{}",
        stdout(&status)
    );
    let output = run(root, &["daemon", "start"]);
    assert!(output.status.success());
    assert!(
        stderr(&output).contains("already kept by `lode watch`"),
        "{}",
        stderr(&output)
    );
    // Queries are served by the watch process itself.
    let output = run(root, &["search", "alpha_greet", "-v"]);
    assert!(
        stderr(&output).contains("served by lode watch"),
        "{}",
        stderr(&output)
    );
}

#[test]
fn the_index_section_of_the_config_decides_whether_a_query_starts_a_daemon() {
    let dir = workspace();
    let root = dir.path();
    let _cleanup = Cleanup(root.to_path_buf());
    let config = dir.path().join("settings.toml");
    let config_arg = config.to_str().unwrap();
    let query = |env: &[(&str, &str)]| {
        let mut command = lode(root);
        command
            .env_remove("LODE_DAEMON")
            .env_remove("LODE_DAEMON_MIN_FILES");
        for (key, value) in env {
            command.env(key, value);
        }
        command
            .args(["--config", config_arg, "symbols", "alpha_greet", "--json"])
            .output()
            .unwrap()
    };
    // A bad value is reported; the query itself is unaffected.
    fs::write(
        &config,
        "[index]\ndaemon = \"sometimes\"\ndaemon_min_files = 1\n",
    )
    .unwrap();
    let output = query(&[]);
    assert!(output.status.success(), "{}", stderr(&output));
    assert!(stdout(&output).contains("\"alpha_greet\""));
    let err = stderr(&output);
    assert!(err.contains("not starting a background daemon"), "{err}");
    assert!(err.contains("\"auto\" or \"never\""), "{err}");
    // "never" in the config: no daemon, however small the threshold.
    fs::write(
        &config,
        "[index]\ndaemon = \"never\"\ndaemon_min_files = 1\n",
    )
    .unwrap();
    let output = query(&[]);
    assert!(output.status.success(), "{}", stderr(&output));
    assert!(!stderr(&output).contains("daemon"), "{}", stderr(&output));
    assert_eq!(daemon_pid(root), None);
    // The environment wins over the config.
    let output = query(&[("LODE_DAEMON", "auto")]);
    assert!(
        stderr(&output).contains("started a background daemon"),
        "{}",
        stderr(&output)
    );
    eventually("the daemon answers", || daemon_pid(root).is_some());
}

/// The `lode` front end alone in a directory, without `lode-full` beside it: whatever it
/// answers, it answered itself; whatever it hands on fails to find `lode-full`.
fn front_end_alone() -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let front = dir.path().join("lode");
    fs::copy(support::lode_bin(), &front).unwrap();
    (dir, front)
}

#[test]
fn the_front_end_answers_served_queries_itself_and_hands_everything_else_on() {
    let dir = workspace();
    let root = dir.path();
    let _cleanup = Cleanup(root.to_path_buf());
    let (_bin, front) = front_end_alone();
    let alone = |args: &[&str], env: &[(&str, &str)]| {
        let mut command = std::process::Command::new(&front);
        command
            .current_dir(root)
            .env_remove("LODE_INDEX_DIR")
            .env("LODE_DAEMON", "never");
        for (key, value) in env {
            command.env(key, value);
        }
        command.args(args).output().unwrap()
    };
    let handed_on = |output: &Output| {
        output.status.code() == Some(126)
            && stderr(output).contains("cannot run")
            && stderr(output).contains("lode-full")
    };
    // No lease holder: handed on, and the message says what is missing.
    let output = alone(&["symbols", "alpha_greet"], &[]);
    assert!(handed_on(&output), "{}", stderr(&output));

    start_daemon(root);
    // From the workspace root and from a directory inside it.
    let expected = run(root, &["symbols", "alpha_greet", "--json"]);
    let output = alone(&["symbols", "alpha_greet", "--json"], &[]);
    assert!(output.status.success(), "{}", stderr(&output));
    assert_eq!(stdout(&output), stdout(&expected));
    let mut inside = std::process::Command::new(&front);
    let output = inside
        .current_dir(root.join("src"))
        .env("LODE_DAEMON", "never")
        .args(["refs", "beta_format"])
        .output()
        .unwrap();
    assert!(output.status.success(), "{}", stderr(&output));
    assert!(
        stdout(&output).contains("src/lib.rs"),
        "{}",
        stdout(&output)
    );
    // `--root`, from anywhere.
    let output = std::process::Command::new(&front)
        .current_dir(std::env::temp_dir())
        .env("LODE_DAEMON", "never")
        .arg("--root")
        .arg(root)
        .args(["symbols", "beta_format"])
        .output()
        .unwrap();
    assert!(output.status.success(), "{}", stderr(&output));
    assert!(
        stdout(&output).contains("src/lib.rs"),
        "{}",
        stdout(&output)
    );
    // Nothing found: exit 1, as the full binary says it.
    let output = alone(
        &["search", "zzz_nothing_matches_this", "--mode", "lexical"],
        &[],
    );
    assert_eq!(output.status.code(), Some(1), "{}", stderr(&output));
    assert_eq!(stdout(&output), "");
    // An edit is seen through the holder's flush.
    write(root, "src/later.rs", "pub fn delta_later() {}\n");
    let output = alone(&["symbols", "delta_later"], &[]);
    assert!(
        stdout(&output).contains("src/later.rs"),
        "{}",
        stderr(&output)
    );

    // What the front end does not know exactly goes to lode-full: options that change the
    // root, the index or the settings, verbose reports, help, malformed arguments, other
    // commands, and an environment that selects other settings.
    for args in [
        &["--index-dir", ".lode/index", "symbols", "alpha_greet"][..],
        &["symbols", "alpha_greet", "-v"],
        &["search", "greet", "--exclude", "app/"],
        &["search", "--help"],
        &["search", "greet", "-n", "many"],
        &["search", "greet", "extra"],
        &["map", "--focus", "src/lib.rs"],
        &["index"],
        &["--version"],
    ] {
        let output = alone(args, &[]);
        assert!(handed_on(&output), "{args:?}: {}", stderr(&output));
    }
    for variable in lode_settings_variables() {
        let output = alone(&["symbols", "alpha_greet"], &[(variable, "x")]);
        assert!(handed_on(&output), "{variable}: {}", stderr(&output));
    }
    // Other variables do not matter to it.
    let output = alone(
        &["symbols", "alpha_greet"],
        &[("LODE_BIN", "/elsewhere/lode")],
    );
    assert!(output.status.success(), "{}", stderr(&output));

    // A holder indexing with other settings is not asked by the front end.
    run(root, &["daemon", "stop"]);
    eventually("the daemon stops", || daemon_pid(root).is_none());
    let output = run(root, &["--exclude", "app/", "daemon", "start"]);
    assert!(output.status.success(), "{}", stderr(&output));
    let output = alone(&["symbols", "alpha_greet"], &[]);
    assert!(handed_on(&output), "{}", stderr(&output));
}

/// The variables that select settings (server/cli/src/settings_env.rs), as a user sets them.
fn lode_settings_variables() -> Vec<&'static str> {
    let source = include_str!("../../server/cli/src/settings_env.rs");
    let names: Vec<&str> = source
        .split('"')
        .filter(|part| part.starts_with("LODE_"))
        .collect();
    assert!(names.len() >= 10, "{names:?}");
    names
}

// ---------------------------------------------------------------------------------------------
// `lode index` beside the daemon: it asks the daemon (the lease protocol's `index` request),
// which is the one writing the index, and waits for it; it fails only when the daemon says
// nothing within the bound (`LODE_INDEX_WAIT_SECS`).
// ---------------------------------------------------------------------------------------------

/// `root` with `count` more small Rust files under `src/many/`, indexed.
fn workspace_of(count: usize) -> tempfile::TempDir {
    let dir = workspace();
    for n in 0..count {
        write(
            dir.path(),
            &format!("src/many/m{n}.rs"),
            &format!("pub fn before_{n}() {{}}\n"),
        );
    }
    let output = run(dir.path(), &["index"]);
    assert!(output.status.success(), "{}", stderr(&output));
    dir
}

/// The file `symbols NAME --no-refresh --json` finds `name` in: what the index holds now,
/// with nothing brought up to date first.
fn indexed_in(root: &Path, name: &str) -> String {
    let output = run(root, &["symbols", name, "--no-refresh", "--json"]);
    stdout(&output)
}

#[test]
fn lode_index_beside_a_daemon_asks_it_and_the_edits_are_searchable() {
    let dir = workspace_of(200);
    let root = dir.path();
    let _cleanup = Cleanup(root.to_path_buf());
    let pid = start_daemon(root);
    // Each round edits 200 files and runs `lode index` at once, while the daemon is busy
    // applying the same edits from its file-system events (the collision that used to fail
    // with "another lode process is writing this index").
    for round in 0..3 {
        for n in 0..200 {
            write(
                root,
                &format!("src/many/m{n}.rs"),
                &format!("pub fn edited_{round}_{n}() {{}}\n"),
            );
        }
        let output = run(root, &["index", "-v"]);
        let err = stderr(&output);
        assert!(output.status.success(), "round {round}: {err}");
        assert_eq!(stdout(&output), "", "nothing on stdout");
        assert!(
            err.starts_with("indexed 203 files ("),
            "round {round}: the summary line comes first: {err}"
        );
        assert!(
            err.contains(&format!("indexed by lode daemon (pid {pid})")),
            "round {round}: {err}"
        );
        assert!(err.contains("phases: scan"), "{err}");
        assert!(err.contains("lexical index: "), "{err}");
        for n in [0, 77, 199] {
            let found = indexed_in(root, &format!("edited_{round}_{n}"));
            assert!(
                found.contains(&format!("src/many/m{n}.rs")),
                "round {round}: {found}"
            );
        }
        let output = run(
            root,
            &[
                "search",
                &format!("edited_{round}_123"),
                "--no-refresh",
                "--json",
            ],
        );
        assert!(
            stdout(&output).contains("src/many/m123.rs"),
            "{}",
            stderr(&output)
        );
    }
    assert_eq!(
        daemon_pid(root),
        Some(pid),
        "the same daemon keeps the index"
    );
    // Without a terminal, no progress is drawn: stderr holds only the summary line.
    let output = run(root, &["index"]);
    let err = stderr(&output);
    assert!(output.status.success(), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains("(0 parsed, 203 unchanged"), "{err}");
}

#[test]
fn lode_index_beside_a_hung_daemon_fails_within_the_bound_naming_it() {
    let dir = workspace();
    let root = dir.path();
    let _cleanup = Cleanup(root.to_path_buf());
    let pid = start_daemon(root);
    // Stopped, the daemon still accepts the connection (the kernel queues it) and says nothing.
    kill(pid, libc::SIGSTOP);
    write(
        root,
        "src/while_stopped.rs",
        "pub fn zeta_while_stopped() {}\n",
    );
    let output = run_with(root, &["index"], &[("LODE_INDEX_WAIT_SECS", "2")]);
    let err = stderr(&output);
    kill(pid, libc::SIGCONT);
    assert_eq!(output.status.code(), Some(3), "{err}");
    assert!(
        err.contains(&format!(
            "lode daemon (pid {pid}) keeps this index but said nothing for 2 s"
        )),
        "{err}"
    );
    assert!(err.contains("lode daemon stop"), "{err}");
    assert!(err.contains(&format!("kill {pid}")), "{err}");
    assert!(err.contains("LODE_INDEX_WAIT_SECS"), "{err}");
    // Running again, it answers.
    let output = run(root, &["index", "-v"]);
    let err = stderr(&output);
    assert!(output.status.success(), "{err}");
    assert!(
        err.contains(&format!("indexed by lode daemon (pid {pid})")),
        "{err}"
    );
    assert!(indexed_in(root, "zeta_while_stopped").contains("src/while_stopped.rs"));

    // A bound that is not a positive number of seconds is an error, before anything is asked.
    let output = run_with(root, &["index"], &[("LODE_INDEX_WAIT_SECS", "soon")]);
    assert_eq!(output.status.code(), Some(3));
    assert!(
        stderr(&output).contains("LODE_INDEX_WAIT_SECS must be"),
        "{}",
        stderr(&output)
    );
}

#[test]
fn lode_index_with_other_settings_stops_the_daemon_and_indexes_here() {
    let dir = workspace();
    let root = dir.path();
    let _cleanup = Cleanup(root.to_path_buf());
    let pid = start_daemon(root);
    // The daemon indexes with the default settings; this index leaves app/ out. The daemon
    // would put app/ back with its next update: it is stopped.
    let output = run(root, &["--exclude", "app/", "index"]);
    let err = stderr(&output);
    assert!(output.status.success(), "{err}");
    assert!(
        err.contains(&format!("stopped the background daemon (pid {pid})")),
        "{err}"
    );
    assert!(err.contains("indexed 2 files ("), "{err}");
    eventually("the daemon exits", || !alive(pid));
    assert_eq!(daemon_pid(root), None);
    let output = run(
        root,
        &["--exclude", "app/", "symbols", "greet_user", "--no-refresh"],
    );
    assert_eq!(
        output.status.code(),
        Some(1),
        "app/ is left out: {}",
        stdout(&output)
    );
}
