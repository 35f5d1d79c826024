//! `lode run` through the real binary: one prompt against the scripted LLM server (started in
//! this test, over real HTTP), JSON event lines on stdout, permissions denied unless `--yes-to`
//! allows them, and a clear error when no provider is configured.

use crate::support;

use std::path::Path;
use std::process::Output;

use lode_llm_script::{Script, ScriptedServer, ScriptedServerHandle};
use serde_json::Value;
use support::{copy_tree, fixtures, lode, stderr, stdout};

/// The scripted server on its own runtime, which keeps serving while the test blocks on `lode`.
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

/// A copy of the calculator fixture; with `server`, a config pointing a provider at it.
fn workspace(server: Option<&Server>) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    copy_tree(&fixtures().join("agent/calculator"), dir.path());
    if let Some(server) = server {
        std::fs::create_dir_all(dir.path().join(".lode")).unwrap();
        std::fs::write(
            dir.path().join(".lode/config.toml"),
            format!(
                "[[llm.providers]]\nname = \"scripted\"\nkind = \"openai\"\nbase_url = \"{}\"\nmodel = \"scripted-model\"\ncontext_window = 32000\n",
                server.handle.openai_base_url()
            ),
        )
        .unwrap();
    }
    dir
}

/// Runs `lode ARGS` in `root` with no user config and no `$LODE_CONFIG` from the environment.
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

/// Every stdout line, each of which must be a JSON object with an `event` tag.
fn json_events(output: &Output) -> Vec<Value> {
    stdout(output)
        .lines()
        .map(|line| {
            let event: Value = serde_json::from_str(line)
                .unwrap_or_else(|error| panic!("not a JSON line ({error}): {line}"));
            assert!(event["event"].is_string(), "{line}");
            event
        })
        .collect()
}

fn streamed_text(events: &[Value]) -> String {
    events
        .iter()
        .filter(|event| event["event"] == "text_delta")
        .filter_map(|event| event["text"].as_str())
        .collect()
}

/// (tool, final status) of each finished tool call, in order.
fn finished_tools(events: &[Value]) -> Vec<(String, String)> {
    support::finished_tool_calls(events)
        .into_iter()
        .map(|(tool, status, _)| (tool, status))
        .collect()
}

#[test]
fn run_json_denies_an_edit_without_yes_to() {
    let server = start_server("agent_fix_test.json");
    let dir = workspace(Some(&server));
    let output = lode_run(
        dir.path(),
        &["run", "--json", "Please fix the failing test."],
    );
    assert_eq!(output.status.code(), Some(0), "stderr: {}", stderr(&output));
    let events = json_events(&output);
    assert_eq!(
        finished_tools(&events),
        vec![
            ("search_code".to_owned(), "completed".to_owned()),
            ("read_file".to_owned(), "completed".to_owned()),
            ("edit_file".to_owned(), "failed".to_owned()),
        ]
    );
    assert!(
        streamed_text(&events)
            .ends_with("I was not allowed to edit src/lib.rs, so the bug remains."),
        "{}",
        streamed_text(&events)
    );
    let last = events.last().unwrap();
    assert_eq!(last["event"], "turn_finished");
    assert_eq!(last["stop_reason"], "end_turn");
    let source = std::fs::read_to_string(dir.path().join("src/lib.rs")).unwrap();
    assert!(
        source.contains("left - right"),
        "the file must be untouched"
    );
}

#[test]
fn run_json_with_yes_to_makes_the_edit_and_runs_the_tests() {
    let server = start_server("agent_fix_test.json");
    let dir = workspace(Some(&server));
    let output = lode_run(
        dir.path(),
        &[
            "run",
            "--json",
            "--yes-to",
            "src/**",
            "Please fix the failing test.",
        ],
    );
    assert_eq!(output.status.code(), Some(0), "stderr: {}", stderr(&output));
    let events = json_events(&output);
    assert_eq!(
        finished_tools(&events),
        vec![
            ("search_code".to_owned(), "completed".to_owned()),
            ("read_file".to_owned(), "completed".to_owned()),
            ("edit_file".to_owned(), "completed".to_owned()),
            ("run_command".to_owned(), "completed".to_owned()),
        ]
    );
    assert!(
        streamed_text(&events).ends_with("Fixed: `add` now adds, and the tests pass."),
        "{}",
        streamed_text(&events)
    );
    let source = std::fs::read_to_string(dir.path().join("src/lib.rs")).unwrap();
    assert!(source.contains("left + right"));
    // The session was stored, so `lode chat --resume` could pick it up.
    assert!(dir.path().join(".lode/agent.sqlite").exists());
}

/// The model edits by symbol through the real binary: a name that matches nothing comes back
/// with the candidates, the corrected name replaces exactly that definition on disk.
#[test]
fn run_json_replaces_a_definition_named_by_symbol() {
    let server = start_server("agent_symbol_edit.json");
    let dir = workspace(Some(&server));
    let before = std::fs::read_to_string(dir.path().join("src/lib.rs")).unwrap();
    let output = lode_run(
        dir.path(),
        &["run", "--json", "--yes-to", "src/**", "Please fix add."],
    );
    assert_eq!(output.status.code(), Some(0), "stderr: {}", stderr(&output));
    let events = json_events(&output);
    assert_eq!(
        finished_tools(&events),
        vec![
            ("replace_symbol_body".to_owned(), "failed".to_owned()),
            ("replace_symbol_body".to_owned(), "completed".to_owned()),
        ]
    );
    assert!(
        streamed_text(&events).ends_with("Fixed: `add` now adds."),
        "{}",
        streamed_text(&events)
    );
    let failed = &support::finished_tool_calls(&events)[0].2;
    assert!(
        failed
            .to_string()
            .contains("src/lib.rs:add (function, lines 4-6"),
        "the candidates come back: {failed}"
    );
    // The edit went the way edit_file's do: the card shows the diff, and the model got the
    // unified diff followed by the diagnostics block after an edit.
    let completed = support::finished_tool_calls(&events)[1].2.to_string();
    assert!(completed.contains(r#""type":"diff""#), "{completed}");
    let requests = server.handle.requests();
    let seen = requests.last().unwrap().body.to_string();
    assert!(seen.contains("+    left + right"), "{seen}");
    assert!(
        seen.contains("lode diagnostics: no new errors or warnings in src/lib.rs."),
        "{seen}"
    );
    let after = std::fs::read_to_string(dir.path().join("src/lib.rs")).unwrap();
    assert_eq!(
        after,
        before.replace("    left - right\n", "    left + right\n"),
        "exactly the definition of add changed"
    );
}

#[test]
fn run_without_a_provider_fails_naming_the_config_files_and_variables() {
    let dir = workspace(None);
    let output = lode_run(dir.path(), &["run", "--json", "hello"]);
    assert_ne!(output.status.code(), Some(0));
    assert!(
        stdout(&output).is_empty(),
        "no events without a provider: {}",
        stdout(&output)
    );
    let message = stderr(&output);
    assert!(
        message.contains("no LLM provider is configured"),
        "{message}"
    );
    assert!(message.contains(".lode/config.toml"), "{message}");
    assert!(message.contains("LODE_CONFIG"), "{message}");
    assert!(message.contains("api_key_env"), "{message}");
}

#[test]
fn the_global_config_flag_names_a_config_outside_the_workspace() {
    let server = start_server("agent_fix_test.json");
    let dir = workspace(None);
    let elsewhere = tempfile::tempdir().unwrap();
    let config = elsewhere.path().join("lode.toml");
    std::fs::write(
        &config,
        format!(
            "[[llm.providers]]\nname = \"scripted\"\nkind = \"openai\"\nbase_url = \"{}\"\nmodel = \"scripted-model\"\ncontext_window = 32000\n",
            server.handle.openai_base_url()
        ),
    )
    .unwrap();
    // `--config` is global: it may come before the command.
    let config_arg = config.to_str().unwrap();
    let output = lode_run(
        dir.path(),
        &["--config", config_arg, "run", "--json", "thanks"],
    );
    assert_eq!(output.status.code(), Some(0), "stderr: {}", stderr(&output));
    assert_eq!(streamed_text(&json_events(&output)), "You're welcome.");
    let shown = lode_run(dir.path(), &["config", "--files", "--config", config_arg]);
    assert!(stdout(&shown).contains("lode.toml"), "{}", stdout(&shown));
}

/// `--yes-to` matches what the policy judged — resolved workspace-relative paths and each
/// simple command of a parsed command line — never the tool call's title, which carries what
/// the model wrote; and it never approves a must-ask. Globs shaped like the titles
/// (`*src/**`, `*cargo test*`) approve nothing they should not.
#[test]
fn run_yes_to_matches_resolved_paths_and_parsed_commands_never_titles() {
    let server = start_server("run_yes_to_tricks.json");
    let dir = workspace(Some(&server));
    let root = dir.path();
    std::fs::create_dir_all(root.join(".git/hooks")).unwrap();
    let config_before = std::fs::read_to_string(root.join(".lode/config.toml")).unwrap();
    let output = lode_run(
        root,
        &[
            "run",
            "--json",
            "--yes-to",
            "src/**",
            "--yes-to",
            "*src/**",
            "--yes-to",
            "cargo test*",
            "--yes-to",
            "*cargo test*",
            "--yes-to",
            "date*",
            "Please tidy up.",
        ],
    );
    assert_eq!(output.status.code(), Some(0), "stderr: {}", stderr(&output));
    let events = json_events(&output);
    let titles: Vec<&str> = events
        .iter()
        .filter(|event| event["event"] == "tool_call_started")
        .filter_map(|event| event["title"].as_str())
        .collect();
    // The titles carry what the model wrote (that is the trick).
    assert!(
        titles
            .iter()
            .any(|title| title.contains("src/../.git/hooks/x")),
        "{titles:?}"
    );
    let status = |id: &str| {
        support::finished_tool_calls(&events)
            .into_iter()
            .find(|(_, _, event)| event["id"] == id)
            .map(|(_, status, event)| (status, event.to_string()))
            .unwrap_or_else(|| panic!("no result for {id}"))
    };
    for id in ["call_hook", "call_config", "call_chain", "call_subst"] {
        let (status, event) = status(id);
        assert_eq!(status, "failed", "{id} must be refused: {event}");
        assert!(
            event.contains("declined") || event.contains("permission"),
            "{id}: {event}"
        );
    }
    // What the patterns do cover runs.
    assert_eq!(status("call_edit_ok").0, "completed");
    assert_eq!(
        status("call_cmd_ok").0,
        "completed",
        "{}",
        status("call_cmd_ok").1
    );
    assert_eq!(
        std::fs::read_to_string(root.join("src/notes.md")).unwrap(),
        "notes\n"
    );
    // Nothing of the rest happened.
    assert!(!root.join(".git/hooks/x").exists());
    assert_eq!(
        std::fs::read_to_string(root.join(".lode/config.toml")).unwrap(),
        config_before
    );
    assert!(!root.join("curl-canary.txt").exists());
    assert!(!root.join("subst-canary.txt").exists());
}

/// Without `--json` the refusal of a must-ask says why and that `--yes-to` cannot lift it.
#[test]
fn run_yes_to_refuses_a_must_ask_saying_only_a_person_can_approve_it() {
    let server = start_server("run_yes_to_tricks.json");
    let dir = workspace(Some(&server));
    std::fs::create_dir_all(dir.path().join(".git/hooks")).unwrap();
    let output = lode_run(
        dir.path(),
        &["run", "--yes-to", "**", "--yes-to", "*", "Please tidy up."],
    );
    assert_eq!(output.status.code(), Some(0), "stderr: {}", stderr(&output));
    let err = stderr(&output);
    assert!(
        err.contains("only a person can approve this") && err.contains(".git/hooks/x"),
        "{err}"
    );
    assert!(err.contains("--yes-to cannot"), "{err}");
    assert!(!dir.path().join(".git/hooks/x").exists());
    assert!(!dir.path().join("subst-canary.txt").exists());
}

/// `--ask` puts what `--yes-to` cannot answer to the person at stdin: `n` (or no line at all)
/// refuses, `y` approves, must-asks included.
#[test]
fn run_ask_puts_must_asks_to_the_person_at_stdin() {
    for (answers, approved) in [
        ("n\nn\nn\nn\nn\nn\n", false),
        ("", false),
        ("y\ny\ny\ny\ny\ny\n", true),
    ] {
        let server = start_server("run_yes_to_tricks.json");
        let dir = workspace(Some(&server));
        std::fs::create_dir_all(dir.path().join(".git/hooks")).unwrap();
        let answers_file = dir.path().join("answers.txt");
        std::fs::write(&answers_file, answers).unwrap();
        let home = tempfile::tempdir().unwrap();
        let output = lode(dir.path())
            .args(["run", "--ask", "Please tidy up."])
            .env("LODE_CONFIG", support::workspace_config_env(dir.path()))
            .env("XDG_CONFIG_HOME", home.path().join("config"))
            .env("HOME", home.path())
            .stdin(std::fs::File::open(&answers_file).unwrap())
            .output()
            .expect("lode runs");
        assert_eq!(output.status.code(), Some(0), "stderr: {}", stderr(&output));
        let err = stderr(&output);
        assert!(err.contains("Allow "), "the question is shown: {err}");
        assert!(err.contains("needs your decision each time"), "{err}");
        assert_eq!(
            dir.path().join(".git/hooks/x").exists(),
            approved,
            "answers {answers:?}: {err}"
        );
    }
}

#[test]
fn run_json_reports_what_the_prompt_cache_served_per_request() {
    // Each scripted answer carries a usage block in which the provider's prompt cache served
    // part of the input (`prompt_tokens_details.cached_tokens` on the wire).
    let server = start_server("cached_usage.json");
    let dir = workspace(Some(&server));
    let output = lode_run(dir.path(), &["run", "--json", "Which files are there?"]);
    assert!(output.status.success(), "{}", stderr(&output));
    let usage: Vec<Value> = json_events(&output)
        .into_iter()
        .filter(|event| event["event"] == "usage")
        .collect();
    let figures: Vec<(u64, u64, u64, u64)> = usage
        .iter()
        .map(|event| {
            let field = |name: &str| event[name].as_u64().unwrap_or_else(|| panic!("{event}"));
            (
                field("input_tokens"),
                field("cached_input_tokens"),
                field("uncached_input_tokens"),
                field("output_tokens"),
            )
        })
        .collect();
    assert_eq!(figures, vec![(1200, 1024, 176, 12), (1300, 1152, 148, 4)]);
    assert_eq!(streamed_text(&json_events(&output)), "Listing.Two files.");
    // The audit log has one model_request line per request with the same figures.
    let audit = std::fs::read_to_string(dir.path().join(".lode/audit.jsonl")).unwrap();
    let cached: Vec<u64> = audit
        .lines()
        .map(|line| serde_json::from_str::<Value>(line).unwrap())
        .filter(|line| line["event"] == "model_request")
        .map(|line| line["cached_input_tokens"].as_u64().unwrap())
        .collect();
    assert_eq!(cached, vec![1024, 1152]);
}
