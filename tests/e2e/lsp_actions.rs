//! End-to-end: `lode lsp` code actions run the real agent against the scripted LLM server
//! (in process, over HTTP) and answer the real LSP test client (tests/e2e/lsp_support.rs): edits come
//! back as one `workspace/applyEdit` and never touch the disk, explanations as
//! `window/showMessage`, review findings as diagnostics with source `lode`.

use crate::lsp_support;
use crate::support;

use lode_llm_script::{Script, ScriptedServer, ScriptedServerHandle};
use lsp_support::LspClient;
use serde_json::{Value, json};
use support::{copy_tree, fixtures, write};

/// The calculator fixture with a config pointing at the scripted server (and no diagnostics
/// after edits: what is on `PATH` must not change these scripts).
fn workspace(server: &ScriptedServerHandle) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    copy_tree(&fixtures().join("agent/calculator"), dir.path());
    write(
        dir.path(),
        ".lode/config.toml",
        &provider_config(server, "[lsp.diagnostics]\nenabled = false\n"),
    );
    dir
}

fn provider_config(server: &ScriptedServerHandle, rest: &str) -> String {
    format!(
        "[[llm.providers]]\nname = \"scripted\"\nkind = \"openai\"\nbase_url = \"{}\"\n\
         model = \"scripted-model\"\ncontext_window = 32000\nmax_tokens = 2000\n\n{rest}",
        server.openai_base_url()
    )
}

fn scripted(runtime: &tokio::runtime::Runtime, name: &str) -> ScriptedServerHandle {
    let script = Script::load(&fixtures().join("llm").join(name)).unwrap();
    runtime.block_on(ScriptedServer::start(script)).unwrap()
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap()
}

fn titles(actions: &Value) -> Vec<String> {
    actions
        .as_array()
        .expect("a list of code actions")
        .iter()
        .map(|a| a["title"].as_str().unwrap().to_owned())
        .collect()
}

fn run_action(client: &mut LspClient, actions: &Value, title: &str) {
    let action = actions
        .as_array()
        .unwrap()
        .iter()
        .find(|a| a["title"] == title)
        .unwrap_or_else(|| panic!("no {title:?} in {actions}"));
    let command = &action["command"];
    let result = client.call(
        "workspace/executeCommand",
        json!({ "command": command["command"], "arguments": command["arguments"] }),
    );
    assert_eq!(result, Value::Null);
}

fn show_message(client: &mut LspClient, containing: &str) -> String {
    let message = client.wait_for(containing, |m| {
        m["method"] == "window/showMessage"
            && m["params"]["message"]
                .as_str()
                .is_some_and(|text| text.contains(containing))
    });
    message["params"]["message"].as_str().unwrap().to_owned()
}

#[test]
fn code_actions_fix_explain_and_review_through_the_agent() {
    let runtime = runtime();
    let server = scripted(&runtime, "lsp_actions.json");
    let dir = workspace(&server);
    let on_disk = std::fs::read_to_string(dir.path().join("src/lib.rs")).unwrap();
    let mut client = LspClient::start(dir.path(), &[]);
    let init = client.initialize_and_wait_for_index();
    let capabilities = &init["capabilities"];
    assert_eq!(capabilities["codeActionProvider"], json!(true));
    let commands = capabilities["executeCommandProvider"]["commands"].to_string();
    for command in [
        "lode.fix",
        "lode.explain",
        "lode.writeTest",
        "lode.document",
        "lode.review",
    ] {
        assert!(commands.contains(command), "{commands}");
    }

    // An unsaved change in the buffer: the agent must read it, not the disk.
    let buffer = format!("// unsaved note\n{on_disk}");
    client.open("src/lib.rs", "rust", &buffer);
    let uri = client.doc_uri("src/lib.rs");
    let line = buffer
        .lines()
        .position(|l| l.contains("left - right"))
        .unwrap();
    let range = json!({ "start": { "line": line, "character": 4 }, "end": { "line": line, "character": 16 } });
    let diagnostic =
        json!({ "range": range, "severity": 1, "source": "test", "message": "add subtracts" });
    let actions = client.call(
        "textDocument/codeAction",
        json!({ "textDocument": { "uri": uri }, "range": range, "context": { "diagnostics": [diagnostic] } }),
    );
    assert_eq!(
        titles(&actions),
        vec![
            "lode: fix this diagnostic",
            "lode: explain",
            "lode: write a test for this function",
            "lode: document this",
            "lode: review",
        ]
    );
    assert_eq!(actions[0]["kind"], "quickfix");

    // Fix: one applyEdit with the whole new buffer; the disk stays as it was.
    run_action(&mut client, &actions, "lode: fix this diagnostic");
    let apply = client.wait_for("workspace/applyEdit", |m| {
        m["method"] == "workspace/applyEdit"
    });
    let changes = apply["params"]["edit"]["documentChanges"]
        .as_array()
        .expect("documentChanges");
    assert_eq!(changes.len(), 1, "{apply}");
    assert_eq!(changes[0]["textDocument"]["uri"], uri.as_str());
    assert_eq!(changes[0]["textDocument"]["version"], 1);
    let new_text = changes[0]["edits"][0]["newText"].as_str().unwrap();
    assert_eq!(new_text, buffer.replace("left - right", "left + right"));
    let replaced = &changes[0]["edits"][0]["range"];
    assert_eq!(replaced["start"], json!({ "line": 0, "character": 0 }));
    assert_eq!(
        replaced["end"]["line"].as_u64().unwrap() as usize,
        buffer.lines().count()
    );
    client.wait_for("work-done progress while the agent ran", |m| {
        m["method"] == "$/progress"
            && m["params"]["value"]["kind"] == "begin"
            && m["params"]["value"]["title"] == "lode: fixing the diagnostic"
    });
    assert!(show_message(&mut client, "Changed").contains("Changed `-` to `+` in add."));
    assert_eq!(
        std::fs::read_to_string(dir.path().join("src/lib.rs")).unwrap(),
        on_disk,
        "the disk is the editor's business"
    );

    // Explain: the answer as a message, no edit.
    run_action(&mut client, &actions, "lode: explain");
    assert_eq!(
        show_message(&mut client, "adds"),
        "lode: It adds two numbers."
    );

    // Review: the strict lines become lode diagnostics; other lines and paths outside the
    // workspace are dropped.
    run_action(&mut client, &actions, "lode: review");
    let published = client.wait_for("lode's review diagnostics", |m| {
        m["method"] == "textDocument/publishDiagnostics"
            && m["params"]["diagnostics"]
                .as_array()
                .is_some_and(|d| !d.is_empty())
    });
    assert_eq!(published["params"]["uri"], uri.as_str());
    let found: Vec<(u64, u64, String, String)> = published["params"]["diagnostics"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| {
            (
                d["range"]["start"]["line"].as_u64().unwrap(),
                d["severity"].as_u64().unwrap(),
                d["source"].as_str().unwrap().to_owned(),
                d["message"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    assert_eq!(
        found,
        vec![
            (
                4,
                2,
                "lode".into(),
                "add subtracts instead of adding".into()
            ),
            (9, 3, "lode".into(), "multiply can overflow".into()),
        ]
    );
    assert!(
        server.unused_turns().is_empty(),
        "{:?}",
        server.unused_turns()
    );

    // Arguments that are not a target: the error is shown, nothing runs.
    let result = client.call(
        "workspace/executeCommand",
        json!({ "command": "lode.explain", "arguments": [{ "uri": 42 }] }),
    );
    assert_eq!(result, Value::Null);
    let shown = client.wait_for("the bad-arguments error", |m| {
        m["method"] == "window/showMessage" && m["params"]["type"] == 1
    });
    assert!(
        shown["params"]["message"]
            .as_str()
            .unwrap()
            .contains("bad arguments for lode.explain"),
        "{shown}"
    );
    let result = client.call(
        "workspace/executeCommand",
        json!({ "command": "lode.review", "arguments": [] }),
    );
    assert_eq!(result, Value::Null);
    client.wait_for("the missing-argument error", |m| {
        m["method"] == "window/showMessage"
            && m["params"]["message"]
                .as_str()
                .is_some_and(|text| text.contains("expected one argument"))
    });

    // An unknown command is refused.
    let response = client.request(
        "workspace/executeCommand",
        json!({ "command": "lode.nope", "arguments": [] }),
    );
    assert!(
        response["error"]["message"]
            .as_str()
            .unwrap()
            .contains("lode.nope")
    );
    client.call("shutdown", Value::Null);
    client.notify("exit", Value::Null);
    assert!(client.wait_for_exit().success());
}

#[test]
fn without_a_model_the_server_offers_no_code_actions_and_works_as_before() {
    let dir = tempfile::tempdir().unwrap();
    write(
        dir.path(),
        "src/lib.rs",
        "pub fn add(a: i64, b: i64) -> i64 {\n    a + b\n}\n",
    );
    // No [[llm.providers]] anywhere: an empty config in the workspace, none from the user.
    write(dir.path(), ".lode/config.toml", "");
    let home = tempfile::tempdir().unwrap();
    let config_home = home.path().join("config");
    let mut client = LspClient::start_with_env(
        dir.path(),
        &[],
        &[("HOME", home.path()), ("XDG_CONFIG_HOME", &config_home)],
    );
    let init = client.initialize_and_wait_for_index();
    assert!(
        init["capabilities"].get("codeActionProvider").is_none(),
        "{init}"
    );
    assert!(
        client.stderr().contains("code actions are off"),
        "{}",
        client.stderr()
    );
    let symbols = client.call("workspace/symbol", json!({ "query": "add" }));
    assert!(symbols.to_string().contains("\"add\""), "{symbols}");
}

/// The `lode.fix` code action for `diagnostic` in an open document.
fn fix_action(client: &mut LspClient, uri: &str, diagnostic: &Value) -> Value {
    let actions = client.call(
        "textDocument/codeAction",
        json!({ "textDocument": { "uri": uri }, "range": diagnostic["range"], "context": { "diagnostics": [diagnostic] } }),
    );
    let fix = actions
        .as_array()
        .unwrap()
        .iter()
        .find(|a| a["command"]["command"] == "lode.fix")
        .unwrap_or_else(|| panic!("no fix in {actions}"))
        .clone();
    json!({ "command": "lode.fix", "arguments": fix["command"]["arguments"] })
}

/// A code action's (not the indexing's) work-done progress of this kind.
fn action_progress(message: &Value, kind: &str) -> bool {
    message["method"] == "$/progress"
        && message["params"]["value"]["kind"] == kind
        && message["params"]["token"]
            .as_str()
            .is_some_and(|token| token.starts_with("lode/action/"))
}

/// Waits until the action's progress reports the model's edit, then until the model has been
/// asked for its next (slow) answer.
fn wait_for_slow_answer(client: &mut LspClient, server: &ScriptedServerHandle, requests: usize) {
    client.wait_for("the edit in the progress", |m| {
        action_progress(m, "report") && m["params"]["value"]["message"] == "Edit src/lib.rs"
    });
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while server.requests().len() < requests {
        assert!(
            std::time::Instant::now() < deadline,
            "the model got {} requests, expected {requests}",
            server.requests().len()
        );
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
}

#[test]
fn a_code_action_is_cancelled_by_cancel_request_and_by_its_progress() {
    let runtime = runtime();
    let server = scripted(&runtime, "lsp_cancel.json");
    let dir = workspace(&server);
    let on_disk = std::fs::read_to_string(dir.path().join("src/lib.rs")).unwrap();
    let mut client = LspClient::start(dir.path(), &[]);
    client.initialize_and_wait_for_index();
    client.open("src/lib.rs", "rust", &on_disk);
    let uri = client.doc_uri("src/lib.rs");
    let line = on_disk
        .lines()
        .position(|l| l.contains("left - right"))
        .unwrap();
    let diagnostic = json!({
        "range": { "start": { "line": line, "character": 4 }, "end": { "line": line, "character": 16 } },
        "severity": 1, "source": "test", "message": "add subtracts",
    });
    let params = fix_action(&mut client, &uri, &diagnostic);

    // 1. `$/cancelRequest` for the executeCommand: the model has made its edit (captured) and
    // is slow to answer the next request.
    client.send(&json!({ "jsonrpc": "2.0", "id": "fix-1", "method": "workspace/executeCommand", "params": params }));
    let begin = client.wait_for("cancellable progress", |m| action_progress(m, "begin"));
    assert_eq!(begin["params"]["value"]["cancellable"], true, "{begin}");
    // The edit is captured and the model's next answer would take minutes: the response
    // below arriving within the client's 60 s patience shows the turn stopped at once.
    wait_for_slow_answer(&mut client, &server, 2);
    client.notify("$/cancelRequest", json!({ "id": "fix-1" }));
    let response = client.response_to(&json!("fix-1"));
    assert_eq!(response["error"]["code"], -32800, "{response}");
    let told = show_message(&mut client, "cancelled");
    assert!(told.contains("nothing was changed"), "{told}");
    // The turn stopped in its slow second request: the model was asked nothing more.
    assert_eq!(server.requests().len(), 2, "{:?}", server.unused_turns());
    client.wait_for("the progress to end", |m| action_progress(m, "end"));

    // 2. The cancel button of its progress (`window/workDoneProgress/cancel`).
    client.send(&json!({ "jsonrpc": "2.0", "id": "fix-2", "method": "workspace/executeCommand", "params": params }));
    let begin = client.wait_for("the second action's progress", |m| {
        action_progress(m, "begin")
    });
    wait_for_slow_answer(&mut client, &server, 4);
    client.notify(
        "window/workDoneProgress/cancel",
        json!({ "token": begin["params"]["token"] }),
    );
    // The request itself ends normally: the turn was stopped, not the request.
    let response = client.response_to(&json!("fix-2"));
    assert_eq!(response["result"], Value::Null, "{response}");
    show_message(&mut client, "cancelled");

    // A token nobody has is ignored, and the server keeps serving.
    client.notify(
        "window/workDoneProgress/cancel",
        json!({ "token": "no-such-token" }),
    );
    let symbols = client.call("workspace/symbol", json!({ "query": "add" }));
    assert!(symbols.to_string().contains("\"add\""), "{symbols}");
    assert!(
        !client
            .notifications
            .iter()
            .any(|m| m["method"] == "workspace/applyEdit"),
        "a cancelled action applied an edit: {:?}",
        client.notifications
    );
    assert_eq!(
        std::fs::read_to_string(dir.path().join("src/lib.rs")).unwrap(),
        on_disk
    );
    client.call("shutdown", Value::Null);
    client.notify("exit", Value::Null);
    assert!(client.wait_for_exit().success());
}

const GREETING: &str =
    "def greet(name: str) -> str:\n    return \"hello \" + name\n\n\ncount: int = greet(\"x\")\n";

#[test]
fn a_fix_that_leaves_an_error_gets_pyrights_diagnostics_of_the_unsaved_text_and_fixes_it() {
    let Some(tools) = support::pyright_test_tools() else {
        return;
    };
    let pyright = tools.join("node_modules/.bin/pyright-langserver");
    let runtime = runtime();
    let server = scripted(&runtime, "lsp_diagnostics.json");
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join(".git")).unwrap();
    write(dir.path(), "app.py", GREETING);
    // Only pyright's language server, which is sent the agent's unsaved text.
    write(
        dir.path(),
        ".lode/config.toml",
        &provider_config(
            &server,
            &format!(
                "[lsp.diagnostics]\ndefault_servers = false\ncommands = false\n\
                 servers = {{ python = [{:?}, \"--stdio\"] }}\n\n\
                 # The language server runs in the sandbox, which reads nothing outside the\n\
                 # workspace and the usual toolchains unless told: the test's tools live here.\n\
                 [sandbox]\nread = [{:?}]\n",
                pyright.display().to_string(),
                tools.display().to_string()
            ),
        ),
    );
    let mut client = LspClient::start(dir.path(), &[]);
    client.initialize_and_wait_for_index();
    client.open("app.py", "python", GREETING);
    let uri = client.doc_uri("app.py");
    let diagnostic = json!({
        "range": { "start": { "line": 4, "character": 13 }, "end": { "line": 4, "character": 23 } },
        "severity": 1, "source": "Pyright",
        "message": "Type \"str\" is not assignable to declared type \"int\"",
    });
    let params = fix_action(&mut client, &uri, &diagnostic);
    assert_eq!(client.call("workspace/executeCommand", params), Value::Null);
    assert!(
        server.unused_turns().is_empty(),
        "the model never saw the diagnostics block: unused {:?}\nstderr:\n{}",
        server.unused_turns(),
        client.stderr()
    );
    // The model's second request carried pyright's error about its first edit.
    let requests = server.requests();
    let second = requests[1].body.to_string();
    assert!(second.contains("reportArgumentType"), "{second}");
    let apply = client.wait_for("workspace/applyEdit", |m| {
        m["method"] == "workspace/applyEdit"
    });
    let new_text = apply["params"]["edit"]["documentChanges"][0]["edits"][0]["newText"]
        .as_str()
        .unwrap();
    assert_eq!(
        new_text,
        GREETING.replace(
            "count: int = greet(\"x\")",
            "count: int = len(greet(\"x\"))"
        )
    );
    assert_eq!(
        std::fs::read_to_string(dir.path().join("app.py")).unwrap(),
        GREETING,
        "the edits were checked without touching the disk"
    );
    show_message(&mut client, "length of the greeting");
    client.call("shutdown", Value::Null);
    client.notify("exit", Value::Null);
    assert!(client.wait_for_exit().success());
}
