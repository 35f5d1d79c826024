//! `lode run` wires the language servers into the agent's navigation: through the real binary,
//! the scripted model (`fixtures/llm/agent_navigation.json`) asks `references` of
//! `shapes.py:Circle/area` in `fixtures/agent/shapes`, where `Square` has an `area` too. With
//! pyright's language server (from target/test-tools, confined by the sandbox, which is granted
//! read access to it) the answer is resolved by type; with no server for Python, the index
//! answers by name and says so.

use crate::support;

use std::path::Path;
use std::process::Output;

use lode_llm_script::{Script, ScriptedServer, ScriptedServerHandle};
use serde_json::Value;
use support::{copy_tree, fixtures, lode, pyright_test_tools, stderr, stdout};

fn start_server(runtime: &tokio::runtime::Runtime) -> ScriptedServerHandle {
    let script = Script::load(&fixtures().join("llm/agent_navigation.json")).unwrap();
    runtime.block_on(ScriptedServer::start(script)).unwrap()
}

/// The shapes fixture in a plain (not hidden) directory, with `python` as the Python server
/// command line (empty: none).
fn workspace(server: &ScriptedServerHandle, python: &str, sandbox: &str) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("ws");
    std::fs::create_dir(&root).unwrap();
    copy_tree(&fixtures().join("agent/shapes"), &root);
    std::fs::create_dir_all(root.join(".lode")).unwrap();
    std::fs::write(
        root.join(".lode/config.toml"),
        format!(
            "[[llm.providers]]\nname = \"scripted\"\nkind = \"openai\"\nbase_url = \"{}\"\n\
             model = \"scripted-model\"\ncontext_window = 32000\n\n\
             [lsp.diagnostics]\ndefault_servers = false\ncommands = false\n\
             servers = {{ python = [{python}] }}\n{sandbox}",
            server.openai_base_url()
        ),
    )
    .unwrap();
    dir
}

fn lode_run(root: &Path) -> Output {
    let home = tempfile::tempdir().unwrap();
    lode(root)
        .args(["run", "--json", "Who calls Circle.area?"])
        .env("LODE_CONFIG", support::workspace_config_env(root))
        .env("XDG_CONFIG_HOME", home.path().join("config"))
        .env("HOME", home.path())
        .output()
        .expect("lode runs")
}

/// The text of the finished `references` call's result.
fn references_result(output: &Output) -> String {
    let events: Vec<Value> = stdout(output)
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect();
    let calls = support::finished_tool_calls(&events);
    assert_eq!(calls.len(), 1, "{}", stdout(output));
    assert_eq!(
        (calls[0].0.as_str(), calls[0].1.as_str()),
        ("references", "completed")
    );
    calls[0].2.to_string()
}

#[test]
fn lode_run_answers_references_through_a_confined_pyright() {
    let Some(tools) = pyright_test_tools() else {
        return;
    };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    let server = start_server(&runtime);
    let pyright = tools.join("node_modules/.bin/pyright-langserver");
    let dir = workspace(
        &server,
        &format!("{:?}, \"--stdio\"", pyright.display().to_string()),
        // The server runs in the sandbox, which reads nothing outside the workspace and the
        // usual toolchains unless told: the test's tools live here.
        &format!("\n[sandbox]\nread = [{:?}]\n", tools.display().to_string()),
    );
    let output = lode_run(&dir.path().join("ws"));
    assert_eq!(output.status.code(), Some(0), "stderr: {}", stderr(&output));
    assert!(
        server
            .unused_turns()
            .iter()
            .any(|turn| turn.contains("by-name")),
        "the index did not answer: {:?}\nstdout: {}\nstderr: {}",
        server.unused_turns(),
        stdout(&output),
        stderr(&output)
    );
    let result = references_result(&output);
    assert!(result.contains("resolved_by: pyright"), "{result}");
    assert!(
        result.contains("7:14  total  return c.area() + s.area()"),
        "{result}"
    );
    assert!(result.contains("11:24  circles"), "{result}");
    assert!(
        !result.contains("7:25"),
        "Square's call is not a reference: {result}"
    );
}

#[test]
fn lode_run_without_a_python_server_answers_from_the_index() {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    let server = start_server(&runtime);
    let dir = workspace(&server, "", "");
    let output = lode_run(&dir.path().join("ws"));
    assert_eq!(output.status.code(), Some(0), "stderr: {}", stderr(&output));
    let result = references_result(&output);
    assert!(result.contains("resolved_by: index"), "{result}");
    // By name: Square's call is among them.
    assert!(result.contains("7:25"), "{result}");
}
