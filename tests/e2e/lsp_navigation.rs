//! End-to-end: the real `lode lsp` answers `textDocument/definition` and `…/references` through
//! the real pyright language server (from target/test-tools, confined by the sandbox, which is
//! granted read access to it) when `[lsp.diagnostics]` names one for Python, and by name from
//! its index when none is configured, the configured one cannot start, or it is too slow. The
//! workspace is fixtures/agent/shapes: `Circle` and `Square` both have an `area` method, and
//! only the type tells `c.area()` from `s.area()`.

use crate::lsp_support;
use crate::support;

use std::path::Path;
use std::time::Instant;

use lsp_support::{LspClient, location_path};
use serde_json::{Value, json};
use support::{copy_tree, fixtures, pyright_test_tools, write};

const MAIN: &str = include_str!("../../fixtures/agent/shapes/main.py");

/// The shapes fixture with `[lsp.diagnostics]` naming `python` (a TOML list's items; empty:
/// no server) as the only language server, plus `rest`.
fn workspace(python: &str, rest: &str) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join(".git")).unwrap();
    copy_tree(&fixtures().join("agent/shapes"), dir.path());
    write(
        dir.path(),
        ".lode/config.toml",
        &format!(
            "[lsp.diagnostics]\ndefault_servers = false\ncommands = false\n\
             servers = {{ python = [{python}] }}\n{rest}"
        ),
    );
    dir
}

/// A workspace whose Python server is the test's pyright, or `None` to skip.
fn pyright_workspace() -> Option<tempfile::TempDir> {
    let tools = pyright_test_tools()?;
    let pyright = tools.join("node_modules/.bin/pyright-langserver");
    Some(workspace(
        &format!("{:?}, \"--stdio\"", pyright.display().to_string()),
        // The server runs in the sandbox, which reads nothing outside the workspace and the
        // usual toolchains unless told: the test's tools live here.
        &format!("\n[sandbox]\nread = [{:?}]\n", tools.display().to_string()),
    ))
}

/// The 0-based position of the `nth` occurrence of `needle` in `text`, `shift` characters in.
fn position(text: &str, needle: &str, nth: usize, shift: usize) -> Value {
    let offset = text.match_indices(needle).nth(nth).expect("present").0 + shift;
    let line = text[..offset].matches('\n').count();
    let character = offset - text[..offset].rfind('\n').map_or(0, |at| at + 1);
    json!({ "line": line, "character": character })
}

/// `file:line:character` of each location (0-based, as LSP), sorted.
fn places(locations: &Value, root: &Path) -> Vec<String> {
    let mut found: Vec<String> = locations
        .as_array()
        .unwrap_or_else(|| panic!("a list of locations: {locations}"))
        .iter()
        .map(|location| {
            format!(
                "{}:{}:{}",
                location_path(location, root),
                location["range"]["start"]["line"],
                location["range"]["start"]["character"]
            )
        })
        .collect();
    found.sort();
    found
}

fn references(client: &mut LspClient, uri: &str, at: Value, declaration: bool) -> Value {
    client.call(
        "textDocument/references",
        json!({ "textDocument": { "uri": uri }, "position": at,
                "context": { "includeDeclaration": declaration } }),
    )
}

fn definition(client: &mut LspClient, uri: &str, at: Value) -> Value {
    client.call(
        "textDocument/definition",
        json!({ "textDocument": { "uri": uri }, "position": at }),
    )
}

fn shut_down(mut client: LspClient) {
    assert!(client.call("shutdown", Value::Null).is_null());
    client.notify("exit", Value::Null);
    assert!(client.wait_for_exit().success(), "{}", client.stderr());
}

// Where the fixture's names are (0-based lines and UTF-16 characters).
const CIRCLE_AREA_DEF: &str = "shapes.py:6:8";
const SQUARE_AREA_DEF: &str = "shapes.py:15:8";
const CIRCLE_CALL: &str = "main.py:6:13"; // c.area()
const SQUARE_CALL: &str = "main.py:6:24"; // s.area()
const CHAINED_CIRCLE_CALL: &str = "main.py:10:23"; // Circle(3.0).area()

#[test]
fn with_pyright_references_and_definitions_are_resolved_by_type() {
    let Some(dir) = pyright_workspace() else {
        return;
    };
    // Generous: the first question waits for pyright to load the workspace.
    let mut client = LspClient::start(
        dir.path(),
        &["--no-watch", "--navigation-timeout-ms", "60000"],
    );
    client.initialize_and_wait_for_index();
    let root = client.root.clone();
    let main = client.doc_uri("main.py");
    client.open("main.py", "python", MAIN);

    let started = Instant::now();
    let found = references(&mut client, &main, position(MAIN, "c.area", 0, 2), true);
    eprintln!(
        "first references (pyright starting): {:?}",
        started.elapsed()
    );
    assert_eq!(
        places(&found, &root),
        [CHAINED_CIRCLE_CALL, CIRCLE_CALL, CIRCLE_AREA_DEF],
        "Square.area's call and definition are not Circle.area's references\nstderr:\n{}",
        client.stderr()
    );
    let started = Instant::now();
    let without = references(&mut client, &main, position(MAIN, "c.area", 0, 2), false);
    eprintln!("references, warm: {:?}", started.elapsed());
    // Passed on as asked: pyright leaves out one of them (the place asked about).
    let without = places(&without, &root);
    assert_eq!(without.len(), 2, "{without:?}");
    assert!(
        without
            .iter()
            .all(|place| places(&found, &root).contains(place)),
        "{without:?}"
    );

    let started = Instant::now();
    let found = definition(&mut client, &main, position(MAIN, "s.area", 0, 2));
    eprintln!("definition, warm: {:?}", started.elapsed());
    assert_eq!(places(&found, &root), [SQUARE_AREA_DEF]);

    // Unsaved text: two lines typed above, so every position moved; the buffer's text is what
    // pyright is asked about, and the answer's positions are in it.
    let edited = format!("# typed\n# in the editor\n{MAIN}");
    client.notify(
        "textDocument/didChange",
        json!({ "textDocument": { "uri": main, "version": 2 },
                "contentChanges": [{ "text": edited }] }),
    );
    let found = definition(&mut client, &main, position(&edited, "c.area", 0, 2));
    assert_eq!(places(&found, &root), [CIRCLE_AREA_DEF]);
    let found = references(&mut client, &main, position(&edited, "s.area", 0, 2), true);
    assert_eq!(places(&found, &root), ["main.py:8:24", SQUARE_AREA_DEF]);

    // A file the editor has not opened is read from the disk.
    let shapes = client.doc_uri("shapes.py");
    let shapes_text = std::fs::read_to_string(root.join("shapes.py")).unwrap();
    let found = references(
        &mut client,
        &shapes,
        position(&shapes_text, "def area", 1, 4),
        true,
    );
    assert_eq!(places(&found, &root), ["main.py:8:24", SQUARE_AREA_DEF]);
    assert!(
        !client.stderr().contains("by name"),
        "nothing fell back to the index: {}",
        client.stderr()
    );
    shut_down(client);
}

/// What every test without a (working) server expects: the index's answer, by name.
fn assert_answered_by_name(client: &mut LspClient) {
    let root = client.root.clone();
    let main = client.doc_uri("main.py");
    let found = references(client, &main, position(MAIN, "c.area", 0, 2), true);
    let found = places(&found, &root);
    for place in [
        CIRCLE_CALL,
        SQUARE_CALL,
        CHAINED_CIRCLE_CALL,
        CIRCLE_AREA_DEF,
        SQUARE_AREA_DEF,
    ] {
        assert!(found.iter().any(|p| p == place), "{place} in {found:?}");
    }
    let found = definition(client, &main, position(MAIN, "s.area", 0, 2));
    assert_eq!(
        places(&found, &root),
        [SQUARE_AREA_DEF, CIRCLE_AREA_DEF],
        "both `area` methods, by name"
    );
}

#[test]
fn without_a_python_server_the_index_answers_by_name() {
    let dir = workspace("", "");
    let mut client = LspClient::start(dir.path(), &["--no-watch"]);
    client.initialize_and_wait_for_index();
    assert_answered_by_name(&mut client);
    shut_down(client);
}

#[test]
fn with_pyright_configured_but_navigation_off_the_index_answers() {
    let Some(dir) = pyright_workspace() else {
        return;
    };
    let mut client = LspClient::start(dir.path(), &["--no-watch", "--navigation-timeout-ms", "0"]);
    client.initialize_and_wait_for_index();
    assert_answered_by_name(&mut client);
    shut_down(client);
}

#[test]
fn a_server_that_cannot_start_leaves_the_answer_to_the_index() {
    // `false` exits at once: the initialize handshake fails.
    let dir = workspace("\"false\"", "");
    let mut client = LspClient::start(
        dir.path(),
        &["--no-watch", "--navigation-timeout-ms", "30000"],
    );
    client.initialize_and_wait_for_index();
    assert_answered_by_name(&mut client);
    let stderr = client.stderr();
    assert!(
        stderr.contains("by name"),
        "the fallback is logged: {stderr}"
    );
    shut_down(client);
}

#[test]
fn a_server_slower_than_the_deadline_leaves_the_answer_to_the_index() {
    // `sleep` reads nothing and answers nothing: the initialize handshake fails only when it
    // exits, long after the deadline.
    let dir = workspace("\"sleep\", \"5\"", "");
    let mut client = LspClient::start(
        dir.path(),
        &["--no-watch", "--navigation-timeout-ms", "300"],
    );
    client.initialize_and_wait_for_index();
    assert_answered_by_name(&mut client);
    let stderr = client.stderr();
    assert!(stderr.contains("no answer within 300 ms"), "{stderr}");
    shut_down(client);
}

#[test]
fn out_of_order_and_malformed_navigation_requests_get_errors_and_the_server_goes_on() {
    // With pyright when it is installed, so the malformed requests reach the new path too.
    let dir = pyright_workspace().unwrap_or_else(|| workspace("", ""));
    let mut client = LspClient::start(
        dir.path(),
        &["--no-watch", "--navigation-timeout-ms", "60000"],
    );
    let main = client.doc_uri("main.py");

    // Before initialize: refused as LSP says (ServerNotInitialized).
    for method in ["textDocument/definition", "textDocument/references"] {
        let answer = client.request(
            method,
            json!({ "textDocument": { "uri": main }, "position": { "line": 6, "character": 15 },
                    "context": { "includeDeclaration": true } }),
        );
        assert_eq!(answer["error"]["code"], -32002, "{method}: {answer}");
    }

    client.initialize_and_wait_for_index();
    let malformed = [
        (
            "textDocument/definition",
            json!({ "textDocument": { "uri": main } }),
        ),
        (
            "textDocument/definition",
            json!({ "textDocument": { "uri": main }, "position": "6:15" }),
        ),
        (
            "textDocument/definition",
            json!({ "textDocument": { "uri": main },
            "position": { "line": -1, "character": 0 } }),
        ),
        (
            "textDocument/references",
            json!({ "textDocument": { "uri": main },
            "position": { "line": 6, "character": 15 } }),
        ),
        ("textDocument/references", json!([1, 2, 3])),
        ("textDocument/references", Value::Null),
    ];
    for (method, params) in malformed {
        let answer = client.request(method, params.clone());
        assert_eq!(
            answer["error"]["code"], -32602,
            "{method} {params}: {answer}"
        );
    }
    // Positions past the end of the file, a line past the last, a file that does not exist, a
    // URI that is not a file: no answer or an error, never a crash.
    let odd = [
        json!({ "textDocument": { "uri": main }, "position": { "line": 4000, "character": 0 } }),
        json!({ "textDocument": { "uri": main }, "position": { "line": 6, "character": 4000 } }),
        json!({ "textDocument": { "uri": client.doc_uri("missing.py") },
                "position": { "line": 0, "character": 0 } }),
        json!({ "textDocument": { "uri": "untitled:Untitled-1" },
                "position": { "line": 0, "character": 0 } }),
    ];
    for params in odd {
        let answer = client.request("textDocument/definition", params.clone());
        let empty = answer["result"].is_null() || answer["result"] == json!([]);
        assert!(
            empty || answer["error"]["code"].is_i64(),
            "{params}: {answer}"
        );
    }
    // Still serving, and still by type when pyright is there.
    let root = client.root.clone();
    let found = references(&mut client, &main, position(MAIN, "c.area", 0, 2), true);
    assert!(
        places(&found, &root).contains(&CIRCLE_CALL.to_owned()),
        "{found}"
    );
    shut_down(client);
}

#[test]
fn an_untrusted_workspace_cannot_name_the_server_that_navigation_starts() {
    // Red team: a cloned repository's own `.lode/config.toml` names a "language server" that
    // would run a command. Until the user trusts that file its `servers` are ignored, so a
    // definition request (which starts the Python server) never runs it.
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("ws");
    // Inside the workspace, where the sandbox would let the command write.
    let sentinel = root.join("ran");
    std::fs::create_dir_all(root.join(".git")).unwrap();
    copy_tree(&fixtures().join("agent/shapes"), &root);
    write(
        &root,
        ".lode/config.toml",
        &format!(
            "[lsp.diagnostics]\ndefault_servers = false\n\
             servers = {{ python = [\"sh\", \"-c\", \"touch {}\"] }}\n",
            sentinel.display()
        ),
    );
    let home = dir.path().join("home");
    std::fs::create_dir(&home).unwrap();
    let (config, data) = (home.join("config"), home.join("data"));
    let mut client = LspClient::start_with_env(
        &root,
        &["--no-watch", "--navigation-timeout-ms", "30000"],
        &[
            ("LODE_CONFIG", Path::new("")),
            ("HOME", home.as_path()),
            ("XDG_CONFIG_HOME", config.as_path()),
            ("XDG_DATA_HOME", data.as_path()),
        ],
    );
    client.initialize_and_wait_for_index();
    assert_answered_by_name(&mut client);
    assert!(
        !sentinel.exists(),
        "the untrusted workspace's server command ran\nstderr:\n{}",
        client.stderr()
    );
    shut_down(client);
}
