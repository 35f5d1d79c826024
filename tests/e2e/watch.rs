//! `lode watch` and the watch lease, end to end: the real binary, real files, real inotify
//! events, real processes. A query while a watcher runs sees an edit made just before it
//! through the watcher's flush, without checking any file; a killed watcher's lease is gone and
//! queries check files again; a second watcher says who holds the lease; `lode acp` and
//! `lode lsp` hold it.

use crate::lsp_support;
use crate::support;

use std::fs;
use std::process::{Command, Stdio};

use support::{
    edit_behind_the_stat_check, lode_bin, run, spawn_watch, stderr, stdout, wait_until_watched,
    write,
};

fn workspace() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    fs::create_dir_all(root.join(".git")).unwrap();
    write(
        root,
        "src/lib.rs",
        "pub fn alpha_one() -> u32 {\n    1\n}\n",
    );
    write(
        root,
        "src/other.rs",
        "pub fn beta_two() -> u32 {\n    2\n}\n",
    );
    let output = run(root, &["index"]);
    assert!(output.status.success(), "{}", stderr(&output));
    dir
}

#[test]
fn a_query_while_lode_watch_runs_sees_an_edit_through_the_flush_without_checking_files() {
    let dir = workspace();
    let root = dir.path();
    let _watch = spawn_watch(root);
    wait_until_watched(root, "alpha_one");

    // Invisible to a size-and-mtime check: if this query finds it, the watcher applied it.
    edit_behind_the_stat_check(
        &root.join("src/lib.rs"),
        "pub fn gamma_six() -> u32 {\n    1\n}\n",
    );
    let output = run(root, &["symbols", "gamma_six", "--json", "-v"]);
    let err = stderr(&output);
    assert!(output.status.success(), "{err}");
    assert!(stdout(&output).contains("\"gamma_six\""), "{err}");
    assert!(err.contains("freshness: served by"), "{err}");
    assert!(err.contains("0 files checked"), "{err}");

    // A new file and a deleted file, each queried at once.
    write(root, "src/fresh.rs", "pub fn delta_new_file() {}\n");
    let output = run(root, &["search", "delta_new_file", "--json", "-v"]);
    assert!(
        stdout(&output).contains("src/fresh.rs"),
        "{}",
        stderr(&output)
    );
    assert!(stderr(&output).contains("freshness: served by"));
    fs::remove_file(root.join("src/other.rs")).unwrap();
    let output = run(root, &["symbols", "beta_two", "--json", "-v"]);
    assert_eq!(output.status.code(), Some(1), "{}", stderr(&output));
    assert!(stderr(&output).contains("freshness: served by"));

    // A new directory changes the tree's shape: the watcher walks, the query still needn't.
    write(root, "src/nested/deep.rs", "pub fn epsilon_nested() {}\n");
    let output = run(root, &["refs", "epsilon_nested", "-v"]);
    assert!(stderr(&output).contains("freshness: served by"));
    let output = run(root, &["symbols", "epsilon_nested", "--json"]);
    assert!(
        stdout(&output).contains("src/nested/deep.rs"),
        "{}",
        stderr(&output)
    );
    let output = run(root, &["map", "-v", "--tokens", "200"]);
    assert!(output.status.success(), "{}", stderr(&output));
    assert!(stderr(&output).contains("freshness: served by"));

    // Without a watcher, the same kind of edit stays invisible to the quick check: the proof
    // above really came from the watcher.
    drop(_watch);
    edit_behind_the_stat_check(
        &root.join("src/lib.rs"),
        "pub fn omega_two() -> u32 {\n    1\n}\n",
    );
    let output = run(root, &["symbols", "omega_two", "--json", "-v"]);
    assert!(
        stderr(&output).contains("freshness: quick check"),
        "{}",
        stderr(&output)
    );
    assert!(!stdout(&output).contains("\"omega_two\""));
}

#[test]
fn a_killed_watchers_lease_is_gone_and_queries_check_files_themselves() {
    let dir = workspace();
    let root = dir.path();
    let mut watch = spawn_watch(root);
    wait_until_watched(root, "alpha_one");
    watch.0.kill().unwrap(); // SIGKILL: no clean-up runs
    watch.0.wait().unwrap();

    write(root, "src/after.rs", "pub fn eta_after_kill() {}\n");
    let output = run(root, &["symbols", "eta_after_kill", "--json", "-v"]);
    let err = stderr(&output);
    assert!(output.status.success(), "{err}");
    assert!(stdout(&output).contains("eta_after_kill"), "{err}");
    assert!(err.contains("freshness: quick check"), "{err}");
    assert!(err.contains("does not answer"), "{err}");

    // The lease is free again: a new watcher takes it.
    let _again = spawn_watch(root);
    wait_until_watched(root, "alpha_one");
}

#[test]
fn a_second_watcher_on_the_same_index_says_which_process_holds_it() {
    let dir = workspace();
    let root = dir.path();
    let first = spawn_watch(root);
    wait_until_watched(root, "alpha_one");
    let output = run(root, &["watch"]);
    let err = stderr(&output);
    assert_eq!(output.status.code(), Some(3), "{err}");
    assert!(
        err.contains(&format!("already watched by process {}", first.0.id())),
        "{err}"
    );
    // The first one still answers.
    wait_until_watched(root, "alpha_one");
}

#[test]
fn lode_acp_holds_the_lease_while_it_runs() {
    let dir = workspace();
    let root = dir.path();
    // The agent needs a provider to open; nothing here talks to it.
    write(
        root,
        ".lode/config.toml",
        "[[llm.providers]]\nname = \"unused\"\nkind = \"openai\"\nbase_url = \"http://127.0.0.1:9/v1\"\nmodel = \"none\"\n",
    );
    let mut acp = Command::new(lode_bin())
        .arg("--root")
        .arg(root)
        .arg("acp")
        .env("LODE_CONFIG", support::workspace_config_env(root))
        .env_remove("LODE_INDEX_DIR")
        .env("XDG_CONFIG_HOME", root.join(".no-user-config"))
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("lode acp starts");
    let err = wait_until_watched(root, "alpha_one");
    assert!(
        err.contains(&format!("served by lode acp (pid {})", acp.id())),
        "{err}"
    );
    write(root, "src/by_acp.rs", "pub fn theta_seen_by_acp() {}\n");
    let output = run(root, &["symbols", "theta_seen_by_acp", "--json", "-v"]);
    assert!(
        stdout(&output).contains("theta_seen_by_acp"),
        "{}",
        stderr(&output)
    );
    drop(acp.stdin.take()); // end of input: lode acp exits
    let status = acp.wait().unwrap();
    assert!(status.success(), "{status}");
    let output = run(root, &["symbols", "alpha_one", "-v"]);
    assert!(stderr(&output).contains("freshness: quick check"));
}

#[test]
fn lode_lsp_holds_the_lease_and_a_terminal_query_sees_changes_on_disk_through_it() {
    let dir = workspace();
    let root = dir.path();
    let mut lsp = lsp_support::LspClient::start(root, &[]);
    lsp.initialize_and_wait_for_index();
    wait_until_watched(root, "alpha_one");
    // Invisible to a size-and-mtime check: only the server's watcher can have applied it.
    edit_behind_the_stat_check(
        &root.join("src/lib.rs"),
        "pub fn iota_lsp1() -> u32 {\n    1\n}\n",
    );
    let output = run(root, &["symbols", "iota_lsp1", "--json", "-v"]);
    let err = stderr(&output);
    assert!(
        stdout(&output).contains("\"iota_lsp1\""),
        "{err}\n{}",
        lsp.stderr()
    );
    assert!(err.contains("freshness: served by"), "{err}");
    assert!(err.contains("0 files checked"), "{err}");

    // `lode index` asks the server, which refreshes its live index.
    write(root, "src/by_index.rs", "pub fn mu_by_index() {}\n");
    let output = run(root, &["index", "-v"]);
    let err = stderr(&output);
    assert!(output.status.success(), "{err}\n{}", lsp.stderr());
    assert!(err.contains("indexed by lode lsp (pid"), "{err}");
    let output = run(root, &["symbols", "mu_by_index", "--no-refresh", "--json"]);
    assert!(
        stdout(&output).contains("src/by_index.rs"),
        "{}",
        stderr(&output)
    );

    // A `lode watch` started now finds the lease taken by the server.
    let output = run(root, &["watch"]);
    assert_eq!(output.status.code(), Some(3));
    assert!(stderr(&output).contains("already watched by process"));
}

/// Whether process `pid` is writing the index of `root`: it has `writer.lock` open (only while
/// it writes) and the file names it (written once it holds the lock).
fn writing(root: &std::path::Path, pid: u32) -> bool {
    let lock = root.canonicalize().unwrap().join(".lode/index/writer.lock");
    let Ok(fds) = fs::read_dir(format!("/proc/{pid}/fd")) else {
        return false;
    };
    let open = fds
        .filter_map(Result::ok)
        .filter_map(|fd| fs::read_link(fd.path()).ok())
        .any(|target| target == lock);
    open && fs::read_to_string(&lock).is_ok_and(|text| text.trim() == format!("pid {pid}"))
}

#[test]
fn lode_index_beside_lode_watch_asks_it_and_one_killed_mid_update_leaves_no_lock_behind() {
    let dir = workspace();
    let root = dir.path();
    // Enough files that applying an edit of all of them takes a while (a debug build parses
    // about a thousand small files a second), so the watcher can be caught writing.
    let count = 1500;
    for n in 0..count {
        write(
            root,
            &format!("src/many/m{n}.rs"),
            &format!("pub fn kappa_{n}() {{}}\n"),
        );
    }
    assert!(run(root, &["index"]).status.success());
    let mut watch = spawn_watch(root);
    wait_until_watched(root, "alpha_one");
    let pid = watch.0.id();

    // While it runs, `lode index` asks it.
    write(root, "src/asked.rs", "pub fn lambda_asked() {}\n");
    let output = run(root, &["index", "-v"]);
    let err = stderr(&output);
    assert!(output.status.success(), "{err}");
    assert!(
        err.contains(&format!("indexed by lode watch (pid {pid})")),
        "{err}"
    );
    assert!(
        err.contains(&format!("indexed {} files (", count + 3)),
        "{err}"
    );

    // Edit every file until the watcher is caught holding the writer lock, and kill it there.
    let mut round = 0;
    loop {
        round += 1;
        assert!(round <= 10, "never caught the watcher writing");
        for n in 0..count {
            write(
                root,
                &format!("src/many/m{n}.rs"),
                &format!("pub fn kappa_{round}_{n}() {{}}\n"),
            );
        }
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        while std::time::Instant::now() < deadline && !writing(root, pid) {
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
        if writing(root, pid) {
            break;
        }
    }
    watch.0.kill().unwrap(); // SIGKILL, mid-update: no clean-up runs
    watch.0.wait().unwrap();
    let lock = fs::read_to_string(root.join(".lode/index/writer.lock")).unwrap();
    assert_eq!(
        lock.trim(),
        format!("pid {pid}"),
        "killed while holding the lock"
    );

    // `lode index` finds the dead watcher's lease (its socket refuses) and its lock file: it
    // indexes here, says once that it took the lock over, and the edits are searchable.
    let output = run(root, &["index"]);
    let err = stderr(&output);
    assert!(output.status.success(), "{err}");
    assert!(
        err.contains(&format!("process {pid} ended while writing the index")),
        "{err}"
    );
    assert!(err.contains("took it over"), "{err}");
    assert!(
        err.contains(&format!("indexed {} files (", count + 3)),
        "{err}"
    );
    for n in [0, 700, count - 1] {
        let output = run(
            root,
            &[
                "symbols",
                &format!("kappa_{round}_{n}"),
                "--no-refresh",
                "--json",
            ],
        );
        assert!(
            stdout(&output).contains(&format!("src/many/m{n}.rs")),
            "{}",
            stderr(&output)
        );
    }
    let output = run(root, &["index"]);
    let err = stderr(&output);
    assert!(output.status.success(), "{err}");
    assert!(!err.contains("took it over"), "said once: {err}");
    assert_eq!(err.lines().count(), 1, "{err}");
}
