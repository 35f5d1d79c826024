//! End-to-end: the real `lode lsp` driven over stdio by a real LSP client (tests/e2e/lsp_support.rs).

use crate::lsp_support;
use crate::support;

use std::path::Path;

use lsp_support::{LspClient, location_path};
use serde_json::{Value, json};
use support::write;

const STORE: &str = "pub struct Store {\n    items: Vec<u32>,\n}\n\nimpl Store {\n    pub fn open() -> Store {\n        let _ = helper();\n        Store { items: Vec::new() }\n    }\n\n    pub fn count(&self) -> usize {\n        self.items.len()\n    }\n}\n\npub fn helper() -> u32 {\n    1\n}\n";
const OTHER: &str =
    "pub fn helper() -> u32 {\n    2\n}\n\npub fn count() -> u32 {\n    helper()\n}\n";
const MAIN: &str = "mod other;\nmod store;\n\nuse crate::store::helper;\n\nfn count() -> usize {\n    0\n}\n\nfn main() {\n    let s = store::Store::open();\n    println!(\"{}\", s.count() + helper() as usize + count());\n}\n";

fn sample_workspace() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), "src/store.rs", STORE);
    write(dir.path(), "src/other.rs", OTHER);
    write(dir.path(), "src/main.rs", MAIN);
    dir
}

fn position_of(text: &str, needle: &str, nth: usize) -> Value {
    let offset = text
        .match_indices(needle)
        .nth(nth)
        .expect("needle present")
        .0;
    let line = text[..offset].matches('\n').count();
    let column = offset - text[..offset].rfind('\n').map_or(0, |i| i + 1);
    json!({ "line": line, "character": column })
}

fn paths_and_lines(locations: &Value, root: &Path) -> Vec<(String, u64)> {
    locations
        .as_array()
        .expect("a list of locations")
        .iter()
        .map(|l| {
            (
                location_path(l, root),
                l["range"]["start"]["line"].as_u64().unwrap(),
            )
        })
        .collect()
}

fn workspace_symbols(client: &mut LspClient, query: &str) -> Vec<(String, String)> {
    let root = client.root.clone();
    let result = client.call("workspace/symbol", json!({ "query": query }));
    result
        .as_array()
        .expect("symbols")
        .iter()
        .map(|s| {
            (
                s["name"].as_str().unwrap().to_string(),
                location_path(&s["location"], &root),
            )
        })
        .collect()
}

#[test]
fn symbols_outline_definitions_and_references() {
    let dir = sample_workspace();
    // By name from the index (a rust-analyzer on PATH would answer by type: tests/e2e/lsp_navigation.rs).
    let mut client = LspClient::start(dir.path(), &["--no-watch", "--navigation-timeout-ms", "0"]);
    let init = client.initialize_and_wait_for_index();
    let capabilities = &init["capabilities"];
    assert_eq!(
        capabilities["textDocumentSync"]["change"], 2,
        "incremental sync"
    );
    assert_eq!(capabilities["workspaceSymbolProvider"], true);
    assert_eq!(capabilities["definitionProvider"], true);
    assert_eq!(capabilities["referencesProvider"], true);
    assert_eq!(capabilities["documentSymbolProvider"], true);
    assert_eq!(init["serverInfo"]["name"], "lode");

    // workspace/symbol: an exact name, and a prefix.
    let found = workspace_symbols(&mut client, "Store");
    assert!(
        found.contains(&("Store".into(), "src/store.rs".into())),
        "{found:?}"
    );
    let found = workspace_symbols(&mut client, "hel");
    let helpers: Vec<&str> = found
        .iter()
        .filter(|(n, _)| n == "helper")
        .map(|(_, p)| p.as_str())
        .collect();
    assert_eq!(helpers.len(), 2, "{found:?}");

    // documentSymbol: methods nest under the impl block.
    let store_uri = client.doc_uri("src/store.rs");
    let outline = client.call(
        "textDocument/documentSymbol",
        json!({ "textDocument": { "uri": store_uri } }),
    );
    let top: Vec<&str> = outline
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["name"].as_str().unwrap())
        .collect();
    assert!(top.contains(&"Store") && top.contains(&"helper"), "{top:?}");
    let implementation = outline
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["name"] == "impl Store")
        .expect("the impl block is in the outline");
    let children: Vec<&str> = implementation["children"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["name"].as_str().unwrap())
        .collect();
    assert_eq!(children, ["open", "count"]);
    let structure = outline
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["name"] == "Store")
        .unwrap();
    assert_eq!(
        structure["children"][0]["name"], "items",
        "fields nest under their struct"
    );
    assert_eq!(
        implementation["children"][0]["selectionRange"]["start"],
        json!({ "line": 5, "character": 11 })
    );

    // definition: same-file first, then the imported module, then the rest.
    let main_uri = client.doc_uri("src/main.rs");
    let root = client.root.clone();
    let at_count = position_of(MAIN, "count()", 1); // `s.count()`
    let locations = client.call(
        "textDocument/definition",
        json!({ "textDocument": { "uri": main_uri }, "position": at_count }),
    );
    assert_eq!(
        paths_and_lines(&locations, &root),
        [
            ("src/main.rs".into(), 5),
            ("src/store.rs".into(), 10),
            ("src/other.rs".into(), 4)
        ]
    );
    let at_helper = position_of(MAIN, "helper()", 0);
    let locations = client.call(
        "textDocument/definition",
        json!({ "textDocument": { "uri": main_uri }, "position": at_helper }),
    );
    // store.rs is imported (`use crate::store::helper`), so it beats other.rs despite the alphabet.
    assert_eq!(
        paths_and_lines(&locations, &root),
        [("src/store.rs".into(), 15), ("src/other.rs".into(), 0)]
    );
    assert_eq!(locations[0]["range"]["start"]["character"], 7);
    assert_eq!(locations[0]["range"]["end"]["character"], 13);

    // references: this file, then the imported file, then the rest.
    let references = client.call(
        "textDocument/references",
        json!({ "textDocument": { "uri": main_uri }, "position": at_helper, "context": { "includeDeclaration": false } }),
    );
    let files: Vec<String> = paths_and_lines(&references, &root)
        .into_iter()
        .map(|(p, _)| p)
        .collect();
    let first_other = files
        .iter()
        .position(|p| p == "src/other.rs")
        .expect("a call in other.rs");
    let first_store = files
        .iter()
        .position(|p| p == "src/store.rs")
        .expect("a call in store.rs");
    let last_main = files
        .iter()
        .rposition(|p| p == "src/main.rs")
        .expect("uses in main.rs");
    assert!(
        last_main < first_store && first_store < first_other,
        "{files:?}"
    );
    let call_in_store = references
        .as_array()
        .unwrap()
        .iter()
        .find(|l| location_path(l, &root) == "src/store.rs")
        .unwrap();
    assert_eq!(
        call_in_store["range"],
        json!({ "start": { "line": 6, "character": 16 }, "end": { "line": 6, "character": 22 } })
    );

    // No identifier under the cursor: no answer, no error.
    let nothing = client.call(
        "textDocument/definition",
        json!({ "textDocument": { "uri": main_uri }, "position": { "line": 2, "character": 0 } }),
    );
    assert!(nothing.is_null());

    assert!(client.call("shutdown", Value::Null).is_null());
    client.notify("exit", Value::Null);
    assert!(client.wait_for_exit().success());
}

#[test]
fn unsaved_text_is_indexed_until_the_buffer_closes() {
    let dir = sample_workspace();
    // Requests answer from the buffer itself; the index follows once the buffer is quiet for
    // the debounce interval (short here).
    let mut client = LspClient::start(dir.path(), &["--no-watch", "--debounce-ms", "50"]);
    client.initialize_and_wait_for_index();
    let store_uri = client.doc_uri("src/store.rs");
    client.open("src/store.rs", "rust", STORE);
    // Two incremental edits: add a function after line 17, then rename it (UTF-16 columns).
    client.notify(
        "textDocument/didChange",
        json!({
            "textDocument": { "uri": store_uri, "version": 2 },
            "contentChanges": [
                { "range": { "start": { "line": 18, "character": 0 }, "end": { "line": 18, "character": 0 } },
                  "text": "\n/// é😀\npub fn draft_symbol() {}\n" },
                { "range": { "start": { "line": 20, "character": 7 }, "end": { "line": 20, "character": 12 } },
                  "text": "unsaved" },
            ],
        }),
    );
    let found = workspace_symbols(&mut client, "unsaved_symbol");
    assert_eq!(
        found,
        [("unsaved_symbol".to_string(), "src/store.rs".to_string())]
    );
    let symbol = client.call("workspace/symbol", json!({ "query": "unsaved_symbol" }));
    assert_eq!(
        symbol[0]["location"]["range"]["start"],
        json!({ "line": 20, "character": 7 })
    );

    // Another process searching the same index sees what the editor sees, once the index has
    // followed the buffer (polled: how soon is the debounce's business, not this test's).
    let mut last = String::new();
    let seen = lsp_support::eventually(|| {
        let output = support::run(
            dir.path(),
            &["search", "unsaved_symbol", "--no-refresh", "--json"],
        );
        last = format!("{}\n{}", support::stdout(&output), support::stderr(&output));
        last.contains("\"path\":\"src/store.rs\"")
    });
    assert!(seen, "the index never showed the unsaved text: {last}");

    // The file on disk never had it: closing the buffer drops it from the index (which
    // re-reads the file at once, behind the answers).
    client.notify(
        "textDocument/didClose",
        json!({ "textDocument": { "uri": store_uri } }),
    );
    let gone = lsp_support::eventually(|| {
        let output = support::run(
            dir.path(),
            &["search", "unsaved_symbol", "--no-refresh", "--json"],
        );
        !support::stdout(&output).contains("src/store.rs")
    });
    assert!(gone, "the closed buffer's text stayed in the index");
    assert!(workspace_symbols(&mut client, "unsaved_symbol").is_empty());
    // The saved definitions are still there.
    assert!(
        workspace_symbols(&mut client, "Store").contains(&("Store".into(), "src/store.rs".into()))
    );
}

#[test]
fn bad_input_gets_errors_and_the_server_keeps_going() {
    let dir = sample_workspace();
    let mut client = LspClient::start(dir.path(), &["--no-watch", "--max-message-bytes", "4096"]);

    // Before initialize: ServerNotInitialized (-32002).
    let early = client.request("workspace/symbol", json!({ "query": "Store" }));
    assert_eq!(early["error"]["code"], -32002, "{early}");

    client.initialize_and_wait_for_index();

    // A body that is not JSON: a parse error, then business as usual.
    client.send_raw(b"Content-Length: 9\r\n\r\n{\"id\": 1,");
    let parse_error = client.wait_for("a parse error", |m| m.get("error").is_some());
    assert_eq!(parse_error["error"]["code"], -32700, "{parse_error}");

    // JSON that is not JSON-RPC: an invalid request, answered to its id.
    client.send(&json!({ "id": 77, "nonsense": true }));
    let invalid = client.response_to(&json!(77));
    assert_eq!(invalid["error"]["code"], -32600, "{invalid}");

    // A header without Content-Length.
    client.send_raw(b"X-Whatever: 3\r\n\r\n");
    let header_error = client.wait_for("a header error", |m| m.get("error").is_some());
    assert_eq!(header_error["error"]["code"], -32700);
    assert!(
        header_error["error"]["message"]
            .as_str()
            .unwrap()
            .contains("Content-Length")
    );

    // A request larger than the limit: an error naming the limit, answered to its id.
    let huge = json!({ "jsonrpc": "2.0", "id": 4242, "method": "workspace/symbol",
        "params": { "query": "x".repeat(10_000) } });
    client.send(&huge);
    let too_big = client.response_to(&json!(4242));
    assert_eq!(too_big["error"]["code"], -32600, "{too_big}");
    assert!(
        too_big["error"]["message"]
            .as_str()
            .unwrap()
            .contains("4096"),
        "{too_big}"
    );

    // Notifications out of order: a change to a document never opened, a close of one either.
    let ghost = client.doc_uri("src/ghost.rs");
    client.notify(
        "textDocument/didChange",
        json!({ "textDocument": { "uri": ghost, "version": 3 },
                "contentChanges": [{ "range": { "start": { "line": 0, "character": 0 }, "end": { "line": 0, "character": 0 } }, "text": "fn ghost() {}" }] }),
    );
    client.notify(
        "textDocument/didClose",
        json!({ "textDocument": { "uri": ghost } }),
    );
    // An unknown method gets MethodNotFound.
    let unknown = client.request("lode/noSuchMethod", json!({}));
    assert_eq!(unknown["error"]["code"], -32601);

    // Still serving.
    let found = workspace_symbols(&mut client, "Store");
    assert!(found.contains(&("Store".into(), "src/store.rs".into())));
    assert!(workspace_symbols(&mut client, "ghost").is_empty());

    assert!(client.call("shutdown", Value::Null).is_null());
    // After shutdown, requests are refused.
    let late = client.request("workspace/symbol", json!({ "query": "Store" }));
    assert_eq!(late["error"]["code"], -32600);
    client.notify("exit", Value::Null);
    assert_eq!(client.wait_for_exit().code(), Some(0));
    assert!(
        client.stderr().contains("4096"),
        "the oversized message is logged"
    );
}

#[test]
fn exit_without_shutdown_is_exit_code_1() {
    let dir = sample_workspace();
    let mut client = LspClient::start(dir.path(), &["--no-watch"]);
    client.initialize_and_wait_for_index();
    client.notify("exit", Value::Null);
    assert_eq!(client.wait_for_exit().code(), Some(1));
}

#[test]
fn files_changed_on_disk_are_picked_up_by_the_watcher() {
    let dir = sample_workspace();
    let mut client = LspClient::start(dir.path(), &[]);
    client.initialize_and_wait_for_index();
    write(dir.path(), "src/added.rs", "pub fn appeared_on_disk() {}\n");
    // The watcher debounces; poll (bounded) until the index has the new file.
    let deadline = std::time::Instant::now() + lsp_support::PATIENCE;
    loop {
        if !workspace_symbols(&mut client, "appeared_on_disk").is_empty() {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "the new file was never indexed\n{}",
            client.stderr()
        );
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    let found = workspace_symbols(&mut client, "appeared_on_disk");
    assert_eq!(
        found,
        [("appeared_on_disk".to_string(), "src/added.rs".to_string())]
    );
}

#[test]
fn did_save_indexes_the_buffer_at_once() {
    let dir = sample_workspace();
    // A ten-minute debounce: only didSave (not the change) can get the text indexed, and no
    // query is sent to the server (queries flush pending edits), so another process looks.
    let mut client = LspClient::start(dir.path(), &["--no-watch", "--debounce-ms", "600000"]);
    client.initialize_and_wait_for_index();
    let uri = client.doc_uri("src/other.rs");
    client.open("src/other.rs", "rust", OTHER);
    let saved = format!("{OTHER}\npub fn saved_by_the_editor() {{}}\n");
    client.notify(
        "textDocument/didChange",
        json!({ "textDocument": { "uri": uri, "version": 2 }, "contentChanges": [{ "text": saved }] }),
    );
    std::fs::write(dir.path().join("src/other.rs"), &saved).unwrap();
    client.notify(
        "textDocument/didSave",
        json!({ "textDocument": { "uri": uri } }),
    );
    let deadline = std::time::Instant::now() + lsp_support::PATIENCE;
    loop {
        let output = support::run(
            dir.path(),
            &["search", "saved_by_the_editor", "--no-refresh", "--json"],
        );
        if support::stdout(&output).contains("\"path\":\"src/other.rs\"") {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "the saved buffer was never indexed\n{}",
            client.stderr()
        );
        std::thread::sleep(std::time::Duration::from_millis(200));
    }
    client.call("shutdown", Value::Null);
    client.notify("exit", Value::Null);
    assert!(client.wait_for_exit().success());
}

/// An editor slow to answer `window/workDoneProgress/create` (here: after the first indexing
/// of a tiny workspace is long done) still sees the indexing progress begin and end: the server
/// waits for the answer instead of leaving a progress request with nothing after it.
#[test]
fn a_late_answer_to_the_progress_request_still_gets_its_begin_and_end() {
    let dir = sample_workspace();
    let mut client = LspClient::start(dir.path(), &[]);
    let root = client.root.clone();
    client.call(
        "initialize",
        json!({
            "processId": null,
            "rootUri": lsp_support::uri(&root),
            "capabilities": { "window": { "workDoneProgress": true } },
        }),
    );
    client.notify("initialized", json!({}));
    // Nothing is read for a while: three files index in milliseconds, so the indexing is
    // over before the client answers the request (`wait_for` answers it when it reads it).
    std::thread::sleep(std::time::Duration::from_secs(2));
    let create = client.wait_for("the progress request", |m| {
        m["method"] == "window/workDoneProgress/create"
    });
    let token = create["params"]["token"].clone();
    let is_progress = |kind: &'static str| {
        let token = token.clone();
        move |m: &Value| {
            m["method"] == "$/progress"
                && m["params"]["token"] == token
                && m["params"]["value"]["kind"] == kind
        }
    };
    client.wait_for("the progress to begin", is_progress("begin"));
    let end = client.wait_for("the progress to end", is_progress("end"));
    assert!(
        end["params"]["value"]["message"]
            .as_str()
            .is_some_and(|message| message.starts_with("indexed 3 files")),
        "{end}"
    );
}
