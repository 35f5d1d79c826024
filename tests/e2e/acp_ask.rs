//! `lode ask` end to end: the real binary as an ACP client of a real `lode acp --http`, whose
//! model is the scripted LLM server (in-process). Named sessions continue across calls, stdin is
//! attached as context, edits are denied unless `--yes-to` allows them, and a missing server, a
//! wrong token and a forgotten session fail with clear messages. Without flags, `lode ask` finds
//! the token `lode acp --http` generated in the same `$XDG_RUNTIME_DIR`.

use std::path::{Path, PathBuf};
use std::process::{Output, Stdio};
use std::time::Duration;

use lode_llm_script::{Script, ScriptedServer, ScriptedServerHandle};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};

/// Safety net against hangs only; no test asserts on time.
const PATIENCE: Duration = Duration::from_secs(90);

const SCRIPT: &str = r#"{
  "turns": [
    {"name": "denied", "repeat": true,
     "match": {"last_tool_result_of": "edit_file", "last_tool_result_contains": "permission_denied"},
     "respond": {"text": "I was not allowed to edit src/main.rs."}},
    {"name": "edited", "repeat": true,
     "match": {"last_tool_result_of": "edit_file"},
     "respond": {"text": "The greeting now says goodbye."}},
    {"name": "edit", "repeat": true,
     "match": {"last_user_text_contains": "say goodbye"},
     "respond": {"text": "Changing the greeting.",
                 "tool_calls": [{"id": "call_edit_1", "name": "edit_file",
                   "arguments": {"path": "src/main.rs", "old_string": "hello", "new_string": "goodbye"}}]}},
    {"name": "remember",
     "match": {"last_user_text_contains": "remember the word pelican"},
     "respond": {"text": "Noted: the word is pelican."}},
    {"name": "recall",
     "match": {"last_user_text_contains": "what was the word"},
     "respond": {"text": "You said pelican."}},
    {"name": "cut short", "repeat": true,
     "match": {"last_user_text_contains": "write a novel"},
     "respond": {"text": "It was a dark and", "finish": "length"}},
    {"name": "selection", "repeat": true,
     "match": {"last_user_text_contains": "explain the selection"},
     "respond": {"text": "It prints a greeting."}}
  ]
}"#;

fn lode() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_lode"))
}

/// A workspace with a tiny Rust program whose one model is the scripted server.
fn workspace(llm: &ScriptedServerHandle) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    std::fs::create_dir_all(root.join(".git")).unwrap();
    std::fs::create_dir_all(root.join("src")).unwrap();
    std::fs::write(
        root.join("src/main.rs"),
        "fn main() {\n    println!(\"hello\");\n}\n",
    )
    .unwrap();
    std::fs::create_dir_all(root.join(".lode")).unwrap();
    std::fs::write(
        root.join(".lode/config.toml"),
        format!(
            "[[llm.providers]]\nname = \"scripted\"\nkind = \"openai\"\nbase_url = \"{}\"\nmodel = \"scripted-1\"\ncontext_window = 32000\n",
            llm.openai_base_url()
        ),
    )
    .unwrap();
    dir
}

fn root_of(dir: &tempfile::TempDir) -> PathBuf {
    std::fs::canonicalize(dir.path()).unwrap()
}

/// A fresh `$XDG_RUNTIME_DIR` (0700) shared by a test's server and `lode ask` calls.
fn runtime_dir() -> tempfile::TempDir {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o700)).unwrap();
    dir
}

/// `lode acp --http 127.0.0.1:0` in `root`, with the endpoint URL it printed.
async fn serve(root: &Path, runtime: &Path, extra: &[&str]) -> (tokio::process::Child, String) {
    let mut child = tokio::process::Command::new(lode())
        .arg("--root")
        .arg(root)
        .args(["acp", "--http", "127.0.0.1:0"])
        .args(extra)
        .env("LODE_CONFIG", root.join(".lode/config.toml"))
        .env_remove("LODE_ACP_TOKEN")
        .env("XDG_CONFIG_HOME", root.join(".no-user-config"))
        .env("XDG_RUNTIME_DIR", runtime)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
    let url = tokio::time::timeout(PATIENCE, async {
        while let Some(line) = lines.next_line().await.unwrap() {
            if let Some(rest) = line.strip_prefix("lode acp: listening on ") {
                return rest.split_whitespace().next().unwrap().to_string();
            }
        }
        panic!("lode acp --http exited without printing its address");
    })
    .await
    .expect("lode acp --http printed its address");
    // Keep draining stderr so the server never blocks on a full pipe.
    tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
    (child, url)
}

/// Runs `lode ask ARGS` in `root` with `stdin` piped in (empty: a closed pipe, not a terminal).
async fn ask(root: &Path, runtime: &Path, args: &[&str], stdin: &str) -> Output {
    let mut child = tokio::process::Command::new(lode())
        .arg("--root")
        .arg(root)
        .arg("ask")
        .args(args)
        .env_remove("LODE_ACP_URL")
        .env_remove("LODE_ACP_TOKEN")
        .env("XDG_RUNTIME_DIR", runtime)
        .env("XDG_CONFIG_HOME", root.join(".no-user-config"))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let mut input = child.stdin.take().unwrap();
    input.write_all(stdin.as_bytes()).await.unwrap();
    drop(input);
    tokio::time::timeout(PATIENCE, child.wait_with_output())
        .await
        .expect("lode ask finished")
        .unwrap()
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

fn describe(output: &Output) -> String {
    format!(
        "status {:?}\nstdout: {}\nstderr: {}",
        output.status.code(),
        text(&output.stdout),
        text(&output.stderr)
    )
}

async fn scripted() -> ScriptedServerHandle {
    ScriptedServer::start(Script::from_json(SCRIPT).unwrap())
        .await
        .unwrap()
}

#[tokio::test(flavor = "multi_thread")]
async fn a_named_session_continues_across_calls_and_stdin_is_attached() {
    let llm = scripted().await;
    let dir = workspace(&llm);
    let root = root_of(&dir);
    let runtime = runtime_dir();
    let (_server, url) = serve(&root, runtime.path(), &[]).await;

    let first = ask(
        &root,
        runtime.path(),
        &[
            "--connect",
            &url,
            "--session",
            "s1",
            "please",
            "remember the word pelican",
        ],
        "",
    )
    .await;
    assert_eq!(first.status.code(), Some(0), "{}", describe(&first));
    assert_eq!(text(&first.stdout), "Noted: the word is pelican.\n");

    let book: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(root.join(".lode/ask-sessions.json")).unwrap(),
    )
    .unwrap();
    let first_id = book["servers"][&url]["s1"].as_str().unwrap().to_string();

    let second = ask(
        &root,
        runtime.path(),
        &["--connect", &url, "--session", "s1", "what was the word?"],
        "",
    )
    .await;
    assert_eq!(second.status.code(), Some(0), "{}", describe(&second));
    assert_eq!(text(&second.stdout), "You said pelican.\n");
    // The model saw the first exchange: the same session was continued.
    let recall = serde_json::to_string(&llm.requests().last().unwrap().body).unwrap();
    assert!(recall.contains("remember the word pelican"), "{recall}");
    assert!(recall.contains("Noted: the word is pelican."), "{recall}");
    let book: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(root.join(".lode/ask-sessions.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(book["servers"][&url]["s1"].as_str().unwrap(), first_id);

    // Without --session, a fresh session: the model does not see the pelican, and stdin (a
    // Helix `:pipe` selection) reaches it as context.
    let selection = ask(
        &root,
        runtime.path(),
        &["--connect", &url, "explain the selection"],
        "fn shout_marker() { println!(\"HEY\"); }\n",
    )
    .await;
    assert_eq!(selection.status.code(), Some(0), "{}", describe(&selection));
    assert_eq!(text(&selection.stdout), "It prints a greeting.\n");
    let explained = serde_json::to_string(&llm.requests().last().unwrap().body).unwrap();
    assert!(explained.contains("shout_marker"), "{explained}");
    assert!(!explained.contains("pelican"), "{explained}");

    // --new-session starts the name over.
    let fresh = ask(
        &root,
        runtime.path(),
        &[
            "--connect",
            &url,
            "--session",
            "s1",
            "--new-session",
            "explain the selection",
        ],
        "",
    )
    .await;
    assert_eq!(fresh.status.code(), Some(0), "{}", describe(&fresh));
    let restarted = serde_json::to_string(&llm.requests().last().unwrap().body).unwrap();
    assert!(!restarted.contains("pelican"), "{restarted}");
    let book: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(root.join(".lode/ask-sessions.json")).unwrap(),
    )
    .unwrap();
    assert_ne!(book["servers"][&url]["s1"].as_str().unwrap(), first_id);
}

#[tokio::test(flavor = "multi_thread")]
async fn edits_are_denied_unless_yes_to_allows_them() {
    let llm = scripted().await;
    let dir = workspace(&llm);
    let root = root_of(&dir);
    let runtime = runtime_dir();
    let (_server, url) = serve(&root, runtime.path(), &[]).await;
    let original = std::fs::read_to_string(root.join("src/main.rs")).unwrap();

    let denied = ask(
        &root,
        runtime.path(),
        &["--connect", &url, "say goodbye"],
        "",
    )
    .await;
    assert_eq!(denied.status.code(), Some(0), "{}", describe(&denied));
    assert_eq!(
        text(&denied.stdout),
        "Changing the greeting.\nI was not allowed to edit src/main.rs.\n"
    );
    let stderr = text(&denied.stderr);
    assert!(stderr.contains("lode: denied"), "{stderr}");
    assert!(
        stderr.contains("--yes-to 'src/main.rs'") || stderr.contains("--yes-to 'src/"),
        "{stderr}"
    );
    assert_eq!(
        std::fs::read_to_string(root.join("src/main.rs")).unwrap(),
        original
    );

    // A glob that matches something else allows nothing.
    let other = ask(
        &root,
        runtime.path(),
        &["--connect", &url, "--yes-to", "tests/**", "say goodbye"],
        "",
    )
    .await;
    assert_eq!(other.status.code(), Some(0), "{}", describe(&other));
    assert_eq!(
        std::fs::read_to_string(root.join("src/main.rs")).unwrap(),
        original
    );

    let allowed = ask(
        &root,
        runtime.path(),
        &["--connect", &url, "--yes-to", "src/**", "say goodbye"],
        "",
    )
    .await;
    assert_eq!(allowed.status.code(), Some(0), "{}", describe(&allowed));
    assert_eq!(
        text(&allowed.stdout),
        "Changing the greeting.\nThe greeting now says goodbye.\n"
    );
    assert!(
        text(&allowed.stderr).contains("edited"),
        "{}",
        describe(&allowed)
    );
    assert_eq!(
        std::fs::read_to_string(root.join("src/main.rs")).unwrap(),
        original.replace("hello", "goodbye")
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn failures_are_explained() {
    let llm = scripted().await;
    let dir = workspace(&llm);
    let root = root_of(&dir);
    let runtime = runtime_dir();

    // No server given.
    let nowhere = ask(&root, runtime.path(), &["hello"], "").await;
    assert_eq!(nowhere.status.code(), Some(3), "{}", describe(&nowhere));
    assert!(
        text(&nowhere.stderr).contains("LODE_ACP_URL"),
        "{}",
        describe(&nowhere)
    );

    // Nothing listening.
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let dead_url = format!("http://{}/acp", closed.local_addr().unwrap());
    drop(closed);
    let unreachable = ask(
        &root,
        runtime.path(),
        &["--connect", &dead_url, "hello"],
        "",
    )
    .await;
    assert_eq!(
        unreachable.status.code(),
        Some(3),
        "{}",
        describe(&unreachable)
    );
    assert!(
        text(&unreachable.stderr).contains("cannot reach lode"),
        "{}",
        describe(&unreachable)
    );

    let (_server, url) = serve(&root, runtime.path(), &["--token", "open-sesame"]).await;
    let missing = ask(
        &root,
        runtime.path(),
        &["--connect", &url, "explain the selection"],
        "",
    )
    .await;
    assert_eq!(missing.status.code(), Some(3), "{}", describe(&missing));
    assert!(
        text(&missing.stderr).contains("requires a token"),
        "{}",
        describe(&missing)
    );
    // A token file left by another server is sent, refused, and named.
    {
        use std::os::unix::fs::PermissionsExt;
        let file = runtime.path().join("lode/acp-token");
        std::fs::create_dir_all(file.parent().unwrap()).unwrap();
        std::fs::write(&file, "stale-token\n").unwrap();
        std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o600)).unwrap();
        let stale = ask(
            &root,
            runtime.path(),
            &["--connect", &url, "explain the selection"],
            "",
        )
        .await;
        assert_eq!(stale.status.code(), Some(3), "{}", describe(&stale));
        assert!(
            text(&stale.stderr).contains(&format!("refused the token in {}", file.display())),
            "{}",
            describe(&stale)
        );
        std::fs::remove_file(&file).unwrap();
    }
    let wrong = ask(
        &root,
        runtime.path(),
        &[
            "--connect",
            &url,
            "--token",
            "guess",
            "explain the selection",
        ],
        "",
    )
    .await;
    assert_eq!(wrong.status.code(), Some(3), "{}", describe(&wrong));
    assert!(
        text(&wrong.stderr).contains("refused the token"),
        "{}",
        describe(&wrong)
    );
    let right = ask(
        &root,
        runtime.path(),
        &[
            "--connect",
            &url,
            "--token",
            "open-sesame",
            "explain the selection",
        ],
        "",
    )
    .await;
    assert_eq!(right.status.code(), Some(0), "{}", describe(&right));
    assert_eq!(text(&right.stdout), "It prints a greeting.\n");

    // A turn that ends for another reason than finishing its answer exits 4, like `lode run`.
    let cut = ask(
        &root,
        runtime.path(),
        &["--connect", &url, "--token", "open-sesame", "write a novel"],
        "",
    )
    .await;
    assert_eq!(cut.status.code(), Some(4), "{}", describe(&cut));
    assert_eq!(text(&cut.stdout), "It was a dark and\n");
    assert!(
        text(&cut.stderr).contains("the turn ended: the model hit its output limit"),
        "{}",
        describe(&cut)
    );

    // A remembered session the server does not know.
    std::fs::write(
        root.join(".lode/ask-sessions.json"),
        serde_json::json!({"servers": {url.clone(): {"gone": "no-such-session"}}}).to_string(),
    )
    .unwrap();
    let forgotten = ask(
        &root,
        runtime.path(),
        &[
            "--connect",
            &url,
            "--token",
            "open-sesame",
            "--session",
            "gone",
            "explain the selection",
        ],
        "",
    )
    .await;
    assert_eq!(forgotten.status.code(), Some(3), "{}", describe(&forgotten));
    assert!(
        text(&forgotten.stderr).contains("does not know session \"gone\""),
        "{}",
        describe(&forgotten)
    );

    // Nothing to ask.
    let empty = ask(
        &root,
        runtime.path(),
        &["--connect", &url, "--token", "open-sesame"],
        "",
    )
    .await;
    assert_eq!(empty.status.code(), Some(3), "{}", describe(&empty));
    assert!(
        text(&empty.stderr).contains("nothing to ask"),
        "{}",
        describe(&empty)
    );
}

/// Where `lode acp --http` keeps the record of the workspace at `root` (FNV-1a of the root, as
/// `lode`'s `acp_runtime` names it) inside the runtime directory.
pub fn server_record(runtime: &Path, root: &Path) -> PathBuf {
    use std::os::unix::ffi::OsStrExt;
    let hash = root
        .as_os_str()
        .as_bytes()
        .iter()
        .fold(0xcbf2_9ce4_8422_2325_u64, |hash, byte| {
            (hash ^ u64::from(*byte)).wrapping_mul(0x0100_0000_01b3)
        });
    runtime
        .join("lode")
        .join(format!("acp-server-{hash:016x}.json"))
}

/// Runs `lode ask ARGS` with no `--root`, from the directory `dir`.
async fn ask_from(dir: &Path, runtime: &Path, args: &[&str]) -> Output {
    let child = tokio::process::Command::new(lode())
        .arg("ask")
        .args(args)
        .current_dir(dir)
        .env_remove("LODE_ACP_URL")
        .env_remove("LODE_ACP_TOKEN")
        .env("XDG_RUNTIME_DIR", runtime)
        .env("XDG_CONFIG_HOME", dir.join(".no-user-config"))
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    tokio::time::timeout(PATIENCE, child.wait_with_output())
        .await
        .expect("lode ask finished")
        .unwrap()
}

/// Without flags, `lode ask` answers through the workspace's running `lode acp --http`, from
/// the root or a folder inside it, with the token the server recorded (here one given with
/// `--token`, which no token file holds). When the server stops (SIGTERM) its record goes, and
/// `lode ask` says how to start one; a record left by a killed server is found stale, removed,
/// and the same error follows.
#[tokio::test(flavor = "multi_thread")]
async fn ask_finds_the_workspace_server_without_flags() {
    use std::os::unix::fs::PermissionsExt;
    let llm = scripted().await;
    let dir = workspace(&llm);
    let root = root_of(&dir);
    let runtime = runtime_dir();
    let record = server_record(runtime.path(), &root);

    // None running: the error names how to start one.
    let none = ask_from(&root, runtime.path(), &["explain the selection"]).await;
    assert_eq!(none.status.code(), Some(3), "{}", describe(&none));
    let error = text(&none.stderr);
    assert!(
        error.contains("no `lode acp --http` server is running for this workspace"),
        "{error}"
    );
    assert!(error.contains("with `lode acp --http`"), "{error}");

    let (mut server, url) = serve(&root, runtime.path(), &["--token", "only-in-the-record"]).await;
    let mode = std::fs::metadata(&record).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o600, "the record is the user's alone");
    let recorded: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&record).unwrap()).unwrap();
    assert_eq!(recorded["url"], url.as_str());
    assert_eq!(recorded["root"], root.to_str().unwrap());

    let answered = ask_from(&root, runtime.path(), &["explain the selection"]).await;
    assert_eq!(answered.status.code(), Some(0), "{}", describe(&answered));
    assert_eq!(text(&answered.stdout), "It prints a greeting.\n");
    // From a folder inside the workspace too.
    let inside = ask_from(
        &root.join("src"),
        runtime.path(),
        &["explain the selection"],
    )
    .await;
    assert_eq!(inside.status.code(), Some(0), "{}", describe(&inside));
    assert_eq!(text(&inside.stdout), "It prints a greeting.\n");

    // A clean stop removes the record.
    let pid = server.id().unwrap();
    assert!(
        std::process::Command::new("kill")
            .args(["-TERM", &pid.to_string()])
            .status()
            .unwrap()
            .success()
    );
    let status = tokio::time::timeout(PATIENCE, server.wait())
        .await
        .expect("lode acp stopped")
        .unwrap();
    assert!(status.success(), "{status:?}");
    assert!(!record.exists(), "the record went with the server");
    let stopped = ask_from(&root, runtime.path(), &["explain the selection"]).await;
    assert_eq!(stopped.status.code(), Some(3), "{}", describe(&stopped));
    assert!(
        text(&stopped.stderr).contains("no `lode acp --http` server is running"),
        "{}",
        describe(&stopped)
    );

    // A killed server leaves its record behind: stale, removed, and the same error.
    let (mut server, _url) = serve(&root, runtime.path(), &[]).await;
    assert!(record.exists());
    server.kill().await.unwrap();
    let killed = ask_from(&root, runtime.path(), &["explain the selection"]).await;
    assert_eq!(killed.status.code(), Some(3), "{}", describe(&killed));
    let error = text(&killed.stderr);
    assert!(error.contains("the server it named has exited"), "{error}");
    assert!(
        error.contains("no `lode acp --http` server is running"),
        "{error}"
    );
    assert!(!record.exists(), "the stale record was removed");
}
