//! `lode chat` through the real binary with its input piped in: a multi-turn conversation
//! against the scripted LLM server (over real HTTP), a permission question answered on the same
//! input, lode's own slash commands, and a session that `--resume` picks up again.

use crate::support;

use std::io::Write;
use std::path::Path;
use std::process::{Output, Stdio};

use lode_llm_script::{Script, ScriptedServer, ScriptedServerHandle};
use support::{copy_tree, fixtures, lode, stderr, stdout};

struct Server {
    handle: ScriptedServerHandle,
    _runtime: tokio::runtime::Runtime,
}

fn start_server(script_name: &str) -> Server {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    let script = Script::load(&fixtures().join("llm").join(script_name)).unwrap();
    let handle = runtime.block_on(ScriptedServer::start(script)).unwrap();
    Server {
        handle,
        _runtime: runtime,
    }
}

fn workspace(server: &Server) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    copy_tree(&fixtures().join("agent/calculator"), dir.path());
    std::fs::create_dir_all(dir.path().join(".lode")).unwrap();
    std::fs::write(
        dir.path().join(".lode/config.toml"),
        format!(
            "[[llm.providers]]\nname = \"scripted\"\nkind = \"openai\"\nbase_url = \"{}\"\nmodel = \"scripted-model\"\ncontext_window = 32000\n",
            server.handle.openai_base_url()
        ),
    )
    .unwrap();
    dir
}

/// Runs `lode chat ARGS` in `root` with `input` on stdin, isolated from the user's config.
fn chat(root: &Path, home: &Path, args: &[&str], input: &str) -> Output {
    let mut child = lode(root)
        .arg("chat")
        .args(args)
        .env("LODE_CONFIG", support::workspace_config_env(root))
        .env("XDG_CONFIG_HOME", home.join("config"))
        .env("HOME", home)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("lode chat starts");
    child
        .stdin
        .take()
        .unwrap()
        .write_all(input.as_bytes())
        .unwrap();
    child.wait_with_output().unwrap()
}

#[test]
fn a_piped_chat_runs_turns_answers_permission_and_handles_slash_commands() {
    let server = start_server("agent_fix_test.json");
    let dir = workspace(&server);
    let home = tempfile::tempdir().unwrap();
    // The fix turn asks before editing: the "y" line answers it. Then a slash command, then a
    // second exchange, then end of input.
    let output = chat(
        dir.path(),
        home.path(),
        &[],
        "Please fix the failing test.\ny\n/mode\nthanks!\n",
    );
    assert!(output.status.success(), "stderr: {}", stderr(&output));
    let out = stdout(&output);
    let err = stderr(&output);
    assert!(
        out.contains("Fixed: `add` now adds, and the tests pass."),
        "{out}"
    );
    assert!(out.contains("mode: code"), "{out}");
    assert!(out.contains("You're welcome."), "{out}");
    assert!(
        err.contains("Allow Edit"),
        "the permission question is on stderr: {err}"
    );
    assert!(
        err.contains("src/lib.rs (+1 −1)"),
        "a compact card for the edit: {err}"
    );
    let source = std::fs::read_to_string(dir.path().join("src/lib.rs")).unwrap();
    assert!(source.contains("left + right"));
    // The slash command never reached the model: two turns, six model requests in all.
    assert_eq!(server.handle.requests().len(), 6);
}

#[test]
fn a_declined_edit_leaves_the_file_and_resume_replays_the_session() {
    let server = start_server("agent_fix_test.json");
    let dir = workspace(&server);
    let home = tempfile::tempdir().unwrap();
    let output = chat(
        dir.path(),
        home.path(),
        &[],
        "Please fix the failing test.\nn\n",
    );
    assert!(output.status.success(), "stderr: {}", stderr(&output));
    assert!(stdout(&output).contains("I was not allowed to edit src/lib.rs"));
    assert!(
        std::fs::read_to_string(dir.path().join("src/lib.rs"))
            .unwrap()
            .contains("left - right")
    );

    // The session is stored: `chat --resume` shows its history first.
    let agent_db = dir.path().join(".lode/agent.sqlite");
    assert!(agent_db.exists());
    let listing = chat(dir.path(), home.path(), &[], "/sessions\n");
    let id = stdout(&listing)
        .lines()
        // This chat started a session of its own too; the stored one carries its title.
        .filter(|line| line.contains("Please fix the failing test."))
        .find_map(|line| {
            line.strip_prefix("- ")
                .and_then(|rest| rest.split_whitespace().next())
        })
        .map(str::to_owned)
        .expect("a stored session is listed");
    let resumed = chat(dir.path(), home.path(), &["--resume", &id], "");
    assert!(resumed.status.success(), "stderr: {}", stderr(&resumed));
    let replay = stdout(&resumed);
    assert!(
        replay.contains("> Please fix the failing test."),
        "{replay}"
    );
    assert!(
        replay.contains("I was not allowed to edit src/lib.rs"),
        "{replay}"
    );
}
