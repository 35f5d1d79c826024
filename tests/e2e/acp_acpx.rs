//! `lode acp` driven by acpx, a real ACP client from npm (`scripts/install-test-tools.sh`
//! installs it with its own Node 22 into target/test-tools/acpx). `--format json` prints every
//! JSON-RPC message, so the tests assert the sequence itself: the permission round trip, the
//! client-side file writes, the diff, the stop reason; `--deny-all` (exit 5, nothing written);
//! and a named session used across two runs of lode (the second one loads it).
//! Without acpx the tests say so and pass, except under CI, where they fail.

use crate::acp_support as support;

use std::path::PathBuf;
use std::process::Output;

use serde_json::Value;
use support::{Workspace, explain, repo_root};

fn acpx() -> Option<PathBuf> {
    let path = std::env::var_os("LODE_ACPX")
        .map(PathBuf::from)
        .unwrap_or_else(|| repo_root().join("target/test-tools/acpx/node_modules/.bin/acpx"));
    if path.exists() {
        return Some(path);
    }
    assert!(
        std::env::var_os("CI").is_none(),
        "acpx is missing at {}; run scripts/install-test-tools.sh",
        path.display()
    );
    eprintln!("skipping: acpx not installed (run scripts/install-test-tools.sh)");
    None
}

/// Runs acpx with `lode acp` as its agent, in the workspace, with a private HOME (acpx keeps its
/// session records there) and acpx's own Node first on PATH.
fn run_acpx(acpx: &PathBuf, workspace: &Workspace, args: &[&str]) -> Output {
    let agent = format!(
        "{} --root {} acp",
        support::lode().display(),
        workspace.root().display()
    );
    let bin = acpx.parent().unwrap();
    let path = format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    std::process::Command::new(acpx)
        .arg("--agent")
        .arg(&agent)
        .arg("--cwd")
        .arg(workspace.root())
        .args(["--format", "json", "--timeout", "60"])
        .args(args)
        .current_dir(workspace.root())
        .env("HOME", workspace.root().join(".home"))
        .env("PATH", path)
        .env(
            "LODE_CONFIG",
            support::workspace_config_env(&workspace.root()),
        )
        .env("XDG_CONFIG_HOME", workspace.root().join(".no-user-config"))
        .output()
        .expect("acpx runs")
}

/// The JSON-RPC messages acpx printed (other lines are acpx's own status output).
fn messages(output: &Output) -> Vec<Value> {
    String::from_utf8_lossy(&output.stdout)
        .lines()
        .filter_map(|line| serde_json::from_str::<Value>(line).ok())
        .filter(|value| value.get("jsonrpc").is_some())
        .collect()
}

fn methods(messages: &[Value]) -> Vec<String> {
    messages
        .iter()
        .filter_map(|m| m["method"].as_str())
        .map(str::to_string)
        .collect()
}

#[test]
fn an_approved_edit_goes_through_permission_and_the_clients_file_system() {
    let Some(acpx) = acpx() else { return };
    let workspace = Workspace::new("acp_edit.json");
    let output = run_acpx(
        &acpx,
        &workspace,
        &["--approve-all", "exec", "Please say goodbye instead"],
    );
    assert!(output.status.success(), "{}", explain(&output));
    let messages = messages(&output);
    let methods = methods(&messages);
    let position = |method: &str| {
        methods
            .iter()
            .position(|m| m == method)
            .unwrap_or_else(|| panic!("no {method} in {methods:?}"))
    };
    assert!(position("initialize") < position("session/new"));
    assert!(position("session/new") < position("session/prompt"));
    assert!(position("session/request_permission") < position("fs/write_text_file"));
    let question = messages
        .iter()
        .find(|m| m["method"] == "session/request_permission")
        .unwrap();
    assert_eq!(question["params"]["toolCall"]["kind"], "edit");
    let write = messages
        .iter()
        .find(|m| m["method"] == "fs/write_text_file")
        .unwrap();
    assert!(
        write["params"]["path"]
            .as_str()
            .unwrap()
            .ends_with("src/main.rs")
    );
    let diff = messages
        .iter()
        .filter(|m| m["params"]["update"]["sessionUpdate"] == "tool_call_update")
        .flat_map(|m| {
            m["params"]["update"]["content"]
                .as_array()
                .cloned()
                .unwrap_or_default()
        })
        .find(|content| content["type"] == "diff")
        .unwrap_or_else(|| panic!("no diff in {}", explain(&output)));
    assert!(diff["oldText"].as_str().unwrap().contains("hello"));
    assert!(diff["newText"].as_str().unwrap().contains("goodbye"));
    let stop = messages
        .iter()
        .find_map(|m| m["result"]["stopReason"].as_str());
    assert_eq!(stop, Some("end_turn"));
    let source = std::fs::read_to_string(workspace.root().join("src/main.rs")).unwrap();
    assert!(source.contains("goodbye"), "{source}");
}

#[test]
fn deny_all_exits_5_and_changes_nothing() {
    let Some(acpx) = acpx() else { return };
    let workspace = Workspace::new("acp_edit.json");
    let output = run_acpx(
        &acpx,
        &workspace,
        &["--deny-all", "exec", "Please say goodbye instead"],
    );
    assert_eq!(output.status.code(), Some(5), "{}", explain(&output));
    let messages = messages(&output);
    assert!(!methods(&messages).contains(&"fs/write_text_file".to_string()));
    let answered_reject = messages.iter().any(|m| {
        m["result"]["outcome"]["optionId"]
            .as_str()
            .is_some_and(|id| id.starts_with("reject"))
    });
    assert!(answered_reject, "{}", explain(&output));
    let source = std::fs::read_to_string(workspace.root().join("src/main.rs")).unwrap();
    assert!(
        source.contains("hello") && !source.contains("goodbye"),
        "{source}"
    );
}

#[test]
fn a_named_session_is_loaded_by_the_next_run_of_lode() {
    let Some(acpx) = acpx() else { return };
    let workspace = Workspace::new("hello.json");
    let created = run_acpx(&acpx, &workspace, &["sessions", "new", "--name", "work"]);
    assert!(created.status.success(), "{}", explain(&created));
    let prompted = run_acpx(
        &acpx,
        &workspace,
        &["--ttl", "1", "prompt", "-s", "work", "Say hello"],
    );
    assert!(prompted.status.success(), "{}", explain(&prompted));
    let messages = messages(&prompted);
    let methods = methods(&messages);
    assert!(
        methods
            .iter()
            .any(|m| m == "session/load" || m == "session/resume"),
        "the stored session is picked up again: {methods:?}"
    );
    assert!(!methods.contains(&"session/new".to_string()), "{methods:?}");
    let stop = messages
        .iter()
        .find_map(|m| m["result"]["stopReason"].as_str());
    assert_eq!(stop, Some("end_turn"), "{}", explain(&prompted));
}
