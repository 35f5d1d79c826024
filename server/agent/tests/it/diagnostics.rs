//! Diagnostics injected into the agent loop, end to end: a real `Agent` on a copy of the
//! calculator fixture, the scripted LLM server over HTTP, and a real `DiagnosticsSource` that runs
//! `cargo check --message-format=json` on the workspace (the same parser the `diagnostics` tool
//! uses). The scripted model breaks the build, must see the injected error in the edit's result,
//! tries to finish anyway, gets the turn-end note and fixes the error.

use crate::common;

use common::{copy_dir, repo_root};

use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use lode_agent::event::{AgentEvent, StopReason};
use lode_agent::host::{PermissionAnswer, PermissionRequest, SessionHost};
use lode_agent::{Agent, AgentOptions, UserInput};
use lode_llm_script::{Script, ScriptedServer, ScriptedServerHandle};
use lode_tools::cargo_check::parse_cargo_messages;
use lode_tools::diagnostics::{Diagnostic, DiagnosticsSource, FileDiagnostics, Severity};
use tokio_util::sync::CancellationToken;

fn workspace(server: &ScriptedServerHandle) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    copy_dir(&repo_root().join("fixtures/agent/calculator"), dir.path());
    std::fs::create_dir_all(dir.path().join(".lode")).unwrap();
    std::fs::write(
        dir.path().join(".lode/config.toml"),
        format!(
            "[[llm.providers]]\nname = \"scripted\"\nkind = \"openai\"\nbase_url = \"{}\"\n\
             model = \"scripted-model\"\ncontext_window = 32000\nmax_tokens = 2000\n",
            server.openai_base_url()
        ),
    )
    .unwrap();
    dir
}

/// Runs `cargo check` on the workspace's package (its own target directory, so nothing is
/// shared with the build running the test) and reports each asked-for file's messages.
struct CargoCheckSource {
    package: PathBuf,
    target_dir: PathBuf,
    calls: Mutex<usize>,
}

#[async_trait::async_trait]
impl DiagnosticsSource for CargoCheckSource {
    async fn diagnostics_for(&self, paths: &[PathBuf]) -> Vec<FileDiagnostics> {
        *self.calls.lock().unwrap() += 1;
        let output = tokio::process::Command::new("cargo")
            .args([
                "check",
                "--offline",
                "--message-format=json",
                "--all-targets",
            ])
            .env("CARGO_TARGET_DIR", &self.target_dir)
            .current_dir(&self.package)
            .output()
            .await
            .unwrap();
        let stdout = String::from_utf8_lossy(&output.stdout);
        let parsed =
            parse_cargo_messages(&stdout, &self.package, std::slice::from_ref(&self.package));
        paths
            .iter()
            .map(|path| FileDiagnostics {
                path: path.clone(),
                diagnostics: parsed
                    .iter()
                    .filter(|d| self.package.join(&d.path) == *path)
                    .map(|d| Diagnostic {
                        severity: match d.rank {
                            0 => Severity::Error,
                            1 => Severity::Warning,
                            _ => Severity::Information,
                        },
                        line: d.line,
                        column: d.column,
                        message: d.message.clone(),
                        code: d.code.clone(),
                        source: Some("rustc".into()),
                    })
                    .collect(),
                checked_by: Some("cargo check".into()),
                error: None,
            })
            .collect()
    }
}

struct AllowingHost {
    events: Mutex<Vec<AgentEvent>>,
}

#[async_trait::async_trait]
impl SessionHost for AllowingHost {
    fn emit(&self, event: AgentEvent) {
        self.events.lock().unwrap().push(event);
    }

    async fn request_permission(&self, _request: PermissionRequest) -> PermissionAnswer {
        PermissionAnswer::AllowOnce
    }
}

/// Every text the model was sent as a tool result, in request order.
fn tool_results_sent(server: &ScriptedServerHandle) -> Vec<String> {
    let mut seen = Vec::new();
    for request in server.requests() {
        for message in request.body["messages"].as_array().into_iter().flatten() {
            if message["role"] == "tool" {
                let text = message["content"].as_str().unwrap_or("").to_owned();
                if !seen.contains(&text) {
                    seen.push(text);
                }
            }
        }
    }
    seen
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_edit_that_breaks_the_build_gets_its_errors_back_and_one_more_round() {
    let script = Script::load(&repo_root().join("fixtures/llm/agent_diagnostics.json")).unwrap();
    let server = ScriptedServer::start(script).await.unwrap();
    let dir = workspace(&server);
    let target = tempfile::tempdir().unwrap();
    let package = std::fs::canonicalize(dir.path()).unwrap();
    let source = Arc::new(CargoCheckSource {
        package: package.clone(),
        target_dir: target.path().to_path_buf(),
        calls: Mutex::new(0),
    });
    let options = AgentOptions {
        diagnostics: Some(source.clone()),
        ..common::test_options(dir.path())
    };
    let agent = Agent::open(dir.path(), options).unwrap();
    let session = agent.new_session(package.clone(), Vec::new()).unwrap();
    let host = Arc::new(AllowingHost {
        events: Mutex::new(Vec::new()),
    });

    let stop = agent
        .prompt(
            &session.id,
            vec![UserInput::Text("Please make add add.".into())],
            host.clone(),
            CancellationToken::new(),
        )
        .await
        .unwrap();
    assert_eq!(stop, StopReason::EndTurn);
    assert!(
        server.unused_turns().is_empty(),
        "unused turns: {:?}; events: {:#?}",
        server.unused_turns(),
        host.events.lock().unwrap()
    );

    // The breaking edit's result carried exactly the new error, in the compact format.
    let results = tool_results_sent(&server);
    let broken = results
        .iter()
        .find(|text| text.contains("lode diagnostics after this edit"))
        .unwrap_or_else(|| panic!("no diagnostics block in {results:#?}"));
    assert!(
        broken.contains("(1 new error(s), 0 new warning(s))"),
        "{broken}"
    );
    assert!(
        broken.contains("src/lib.rs:5:") && broken.contains("error[E0425]"),
        "{broken}"
    );
    // The fixing edit's result said the file is clean again.
    assert!(
        results
            .iter()
            .any(|text| text.contains("no new errors or warnings in src/lib.rs.")),
        "{results:#?}"
    );
    // The note before the turn end reached the model as a user message, and the user saw it.
    let note_sent = server.requests().iter().any(|request| {
        request.body["messages"]
            .as_array()
            .into_iter()
            .flatten()
            .any(|m| {
                m["role"] == "user"
                    && m.to_string()
                        .contains("left 1 error(s) that were not there before")
            })
    });
    assert!(note_sent);
    assert!(host.events.lock().unwrap().iter().any(|event| matches!(
        event,
        AgentEvent::Notice { message } if message.contains("E0425")
    )));
    let fixed = std::fs::read_to_string(dir.path().join("src/lib.rs")).unwrap();
    assert!(fixed.contains("left + right"), "{fixed}");
    // Before and after each of the two edits, plus the one check before the turn ended.
    assert_eq!(*source.calls.lock().unwrap(), 5);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_extra_round_is_given_once_per_turn() {
    // The model keeps the error and finishes twice: the second finish ends the turn.
    let script = Script::from_json(
        r#"{"turns": [
            {"match": {"last_user_text_contains": "break it"},
             "respond": {"tool_calls": [{"id": "c1", "name": "edit_file", "arguments": {"path": "src/lib.rs", "old_string": "left - right", "new_string": "left + rigth"}}]}},
            {"match": {"last_tool_result_of": "edit_file"}, "respond": {"text": "Done."}},
            {"match": {"last_user_text_contains": "were not there before"}, "respond": {"text": "The error is intended."}}
        ]}"#,
    )
    .unwrap();
    let server = ScriptedServer::start(script).await.unwrap();
    let dir = workspace(&server);
    let target = tempfile::tempdir().unwrap();
    let package = std::fs::canonicalize(dir.path()).unwrap();
    let source = Arc::new(CargoCheckSource {
        package: package.clone(),
        target_dir: target.path().to_path_buf(),
        calls: Mutex::new(0),
    });
    let options = AgentOptions {
        diagnostics: Some(source.clone()),
        ..common::test_options(dir.path())
    };
    let agent = Agent::open(dir.path(), options).unwrap();
    let session = agent.new_session(package, Vec::new()).unwrap();
    let host = Arc::new(AllowingHost {
        events: Mutex::new(Vec::new()),
    });
    let stop = agent
        .prompt(
            &session.id,
            vec![UserInput::Text("break it".into())],
            host.clone(),
            CancellationToken::new(),
        )
        .await
        .unwrap();
    assert_eq!(stop, StopReason::EndTurn);
    assert!(
        server.unused_turns().is_empty(),
        "{:?}",
        server.unused_turns()
    );
    assert_eq!(server.requests().len(), 3, "one extra round, not more");
    assert_eq!(*source.calls.lock().unwrap(), 3);
}
