//! `lode run` wires the downstream diagnostics into the agent (`[lsp.diagnostics]`): through the
//! real binary, the scripted model (`fixtures/llm/agent_diagnostics.json`) breaks the calculator's
//! build with an edit, must find the `cargo check` error in the edit's result to go on, tries to
//! finish, gets the turn-end note and fixes the error. With `enabled = false` the same script
//! stalls, because the edit's result carries no diagnostics.

use crate::support;

use std::path::Path;
use std::process::Output;

use lode_llm_script::{Script, ScriptedServer, ScriptedServerHandle};
use serde_json::Value;
use support::{copy_tree, fixtures, lode, stderr, stdout};

fn start_server(runtime: &tokio::runtime::Runtime) -> ScriptedServerHandle {
    let script = Script::load(&fixtures().join("llm/agent_diagnostics.json")).unwrap();
    runtime.block_on(ScriptedServer::start(script)).unwrap()
}

/// The calculator with a provider at `server`; checks by `cargo check` only (no language
/// server), so the test does not depend on what is on `PATH`.
fn workspace(server: &ScriptedServerHandle, enabled: bool) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    copy_tree(&fixtures().join("agent/calculator"), dir.path());
    std::fs::create_dir_all(dir.path().join(".lode")).unwrap();
    std::fs::write(
        dir.path().join(".lode/config.toml"),
        format!(
            "[[llm.providers]]\nname = \"scripted\"\nkind = \"openai\"\nbase_url = \"{}\"\n\
             model = \"scripted-model\"\ncontext_window = 32000\n\n\
             [lsp.diagnostics]\nenabled = {enabled}\ndefault_servers = false\n",
            server.openai_base_url()
        ),
    )
    .unwrap();
    dir
}

fn lode_run(root: &Path, args: &[&str]) -> Output {
    let home = tempfile::tempdir().unwrap();
    lode(root)
        .args(args)
        .env("LODE_CONFIG", support::workspace_config_env(root))
        .env("XDG_CONFIG_HOME", home.path().join("config"))
        .env("HOME", home.path())
        .output()
        .expect("lode runs")
}

fn events(output: &Output) -> Vec<Value> {
    stdout(output)
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect()
}

#[test]
fn lode_run_feeds_cargo_check_errors_back_after_an_edit_and_before_the_turn_ends() {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    let server = start_server(&runtime);
    let dir = workspace(&server, true);
    let output = lode_run(
        dir.path(),
        &[
            "run",
            "--json",
            "--yes-to",
            "src/**",
            "Please make add add.",
        ],
    );
    assert_eq!(output.status.code(), Some(0), "stderr: {}", stderr(&output));
    assert!(
        server.unused_turns().is_empty(),
        "unused: {:?}\nstdout: {}",
        server.unused_turns(),
        stdout(&output)
    );
    let events = events(&output);
    assert!(
        events.iter().any(|e| e["event"] == "notice"
            && e["message"].as_str().is_some_and(|m| m.contains("E0425"))),
        "{}",
        stdout(&output)
    );
    let source = std::fs::read_to_string(dir.path().join("src/lib.rs")).unwrap();
    assert!(source.contains("left + right"), "{source}");
}

#[test]
fn with_diagnostics_disabled_the_edit_result_carries_none() {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    let server = start_server(&runtime);
    let dir = workspace(&server, false);
    let output = lode_run(
        dir.path(),
        &[
            "run",
            "--json",
            "--yes-to",
            "src/**",
            "Please make add add.",
        ],
    );
    // Nothing in the script matches a plain edit result: the model request fails.
    assert_ne!(output.status.code(), Some(0), "stdout: {}", stdout(&output));
    let unused = server.unused_turns();
    assert!(
        unused.iter().any(|turn| turn.contains("\"ignore\"")),
        "{unused:?}"
    );
    let source = std::fs::read_to_string(dir.path().join("src/lib.rs")).unwrap();
    assert!(
        source.contains("left + rigth"),
        "the edit itself was made: {source}"
    );
}
