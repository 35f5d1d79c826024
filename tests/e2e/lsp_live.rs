//! The editor's live path through the real `lode lsp`: typing in a large file keeps the outline
//! and the symbol list current keystroke by keystroke, a huge buffer is bounded (not parsed or
//! indexed, said once), and indexing never waits for the client's answer about progress.

use crate::lsp_support;
use crate::support;

use std::fmt::Write as _;
use std::path::Path;
use std::time::Instant;

use lsp_support::{LspClient, eventually, uri};
use serde_json::{Value, json};

/// A generated Rust file of about `target` bytes: structs with impl blocks of methods (nested
/// definitions), then a flat run of constants (thousands of top-level items), as generated
/// bindings have.
fn generated_rust(target: usize) -> String {
    let mut text = String::from("//! Generated for a test.\n\n");
    let mut item = 0;
    while text.len() < target / 2 {
        let _ = write!(
            text,
            "/// Shape number {item}.\npub struct Shape{item} {{\n    pub width: u32,\n    pub height: u32,\n}}\n\nimpl Shape{item} {{\n    pub fn area(&self) -> u32 {{\n        let product = self.width * self.height;\n        product + {item}\n    }}\n\n    pub fn grow(&mut self, by: u32) {{\n        self.width += by;\n        self.height += by;\n    }}\n}}\n\n"
        );
        item += 1;
    }
    let mut constant = 0;
    while text.len() < target {
        let _ = writeln!(text, "pub const LIMIT_{constant}: u32 = {constant};");
        constant += 1;
    }
    text
}

/// Every name in a nested outline, depth first.
fn outline_names(symbols: &Value, names: &mut Vec<String>) {
    for symbol in symbols.as_array().into_iter().flatten() {
        names.push(symbol["name"].as_str().unwrap_or_default().to_string());
        outline_names(&symbol["children"], names);
    }
}

fn workspace(files: &[(&str, &str)]) -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("tempdir");
    for (path, text) in files {
        let full = dir.path().join(path);
        std::fs::create_dir_all(full.parent().expect("parent")).expect("mkdir");
        std::fs::write(full, text).expect("write");
    }
    dir
}

/// Types `typed` one character per `didChange` at (line, character), calling `after` after
/// each keystroke with the new version.
fn type_text(
    client: &mut LspClient,
    doc: &str,
    version: &mut i32,
    (line, mut character): (u32, u32),
    typed: &str,
    mut after: impl FnMut(&mut LspClient),
) {
    for ch in typed.chars() {
        *version += 1;
        client.notify(
            "textDocument/didChange",
            json!({
                "textDocument": { "uri": doc, "version": *version },
                "contentChanges": [{
                    "range": { "start": { "line": line, "character": character },
                               "end": { "line": line, "character": character } },
                    "text": ch.to_string(),
                }],
            }),
        );
        character += ch.len_utf16() as u32;
        after(client);
    }
}

#[test]
fn typing_in_a_large_file_keeps_the_outline_and_symbols_current() {
    let text = generated_rust(280 * 1024);
    let dir = workspace(&[("src/generated.rs", &text)]);
    // A debounce longer than the test: whatever the answers show comes from the buffer, not
    // from the index following it.
    let mut client = LspClient::start(dir.path(), &["--no-watch", "--debounce-ms", "600000"]);
    client.initialize_and_wait_for_index();
    let doc = client.doc_uri("src/generated.rs");
    // Not open: the server reads the file. Open: the transport answers from the buffer's
    // analysis, written straight to the wire. Both say the same.
    let from_disk = client.call(
        "textDocument/documentSymbol",
        json!({ "textDocument": { "uri": doc } }),
    );
    client.open("src/generated.rs", "rust", &text);
    let from_buffer = client.call(
        "textDocument/documentSymbol",
        json!({ "textDocument": { "uri": doc } }),
    );
    assert_eq!(from_disk, from_buffer);
    let mut before = Vec::new();
    outline_names(&from_buffer, &mut before);
    assert!(before.len() > 3000, "{}", before.len());

    // A new top-level function typed on the blank line after the first impl block, with the
    // outline asked for after every keystroke (the benchmark's smallest case, in a test).
    let blank_line = text
        .lines()
        .position(|line| line.is_empty())
        .and_then(|first| {
            text.lines()
                .enumerate()
                .skip(first + 1)
                .find(|(_, line)| line.is_empty())
        })
        .map(|(index, _)| index as u32)
        .expect("a blank line");
    let mut version = 1;
    let mut latencies = Vec::new();
    let mut last_outline = Value::Null;
    type_text(
        &mut client,
        &doc,
        &mut version,
        (blank_line, 0),
        "fn typed_here() -> u32 { 7 }",
        |client| {
            let started = Instant::now();
            last_outline = client.call(
                "textDocument/documentSymbol",
                json!({ "textDocument": { "uri": doc } }),
            );
            latencies.push(started.elapsed());
        },
    );
    let mut after = Vec::new();
    outline_names(&last_outline, &mut after);
    assert_eq!(after.len(), before.len() + 1);
    assert!(after.contains(&"typed_here".to_string()));

    // Inside a method of an impl block: a local edit that renames the method as it is typed.
    let grow_line = text
        .lines()
        .position(|line| line.contains("pub fn grow"))
        .expect("a grow method") as u32;
    type_text(
        &mut client,
        &doc,
        &mut version,
        (grow_line, "    pub fn grow".len() as u32),
        "_faster",
        |_| {},
    );
    let mut renamed = Vec::new();
    outline_names(
        &client.call(
            "textDocument/documentSymbol",
            json!({ "textDocument": { "uri": doc } }),
        ),
        &mut renamed,
    );
    assert!(renamed.contains(&"grow_faster".to_string()), "{renamed:?}");
    assert_eq!(renamed.len(), after.len());

    // The symbol list has both at once, though the index has not seen the buffer since it
    // was opened.
    let found = client.call("workspace/symbol", json!({ "query": "typed_here" }));
    assert_eq!(found[0]["name"], "typed_here", "{found}");
    assert_eq!(found[0]["location"]["uri"], doc.as_str());
    assert_eq!(found[0]["location"]["range"]["start"]["line"], blank_line);
    let found = client.call("workspace/symbol", json!({ "query": "grow_faster" }));
    assert_eq!(found[0]["name"], "grow_faster", "{found}");

    // The time each keystroke took is printed for the record, never asserted: a timed
    // assertion fails on a loaded CI machine. bench/lsp/keystroke.py checks the targets
    // (release build, ratios against a whole parse from the same run).
    latencies.sort();
    let median = latencies[latencies.len() / 2];
    eprintln!("keystroke + documentSymbol median {median:?} (debug build)");
    assert!(client.call("shutdown", Value::Null).is_null());
    client.notify("exit", Value::Null);
    assert!(client.wait_for_exit().success());
}

/// How many `window/logMessage` notifications so far say `needle`.
fn log_messages_saying(client: &LspClient, needle: &str) -> usize {
    client
        .notifications
        .iter()
        .filter(|message| {
            message["method"] == "window/logMessage"
                && message["params"]["message"]
                    .as_str()
                    .is_some_and(|text| text.contains(needle))
        })
        .count()
}

fn search_finds(root: &Path, query: &str) -> bool {
    let output = support::run(root, &["search", query, "--no-refresh", "--json"]);
    support::stdout(&output).contains("src/lib.rs")
}

#[test]
fn a_huge_buffer_is_neither_parsed_nor_indexed_and_the_user_is_told_once() {
    let small = "pub fn small_marker() -> u32 { 1 }\n";
    let dir = workspace(&[("src/lib.rs", small)]);
    let mut client = LspClient::start(dir.path(), &["--no-watch", "--debounce-ms", "50"]);
    client.initialize_and_wait_for_index();
    let doc = client.doc_uri("src/lib.rs");
    client.open("src/lib.rs", "rust", small);
    assert!(search_finds(dir.path(), "small_marker"));

    // 20 MiB pasted at the top of the buffer.
    let line = "fn pasted_function_0() -> u32 { 0 }\n";
    let huge = line.repeat(20 * 1024 * 1024 / line.len());
    client.notify(
        "textDocument/didChange",
        json!({
            "textDocument": { "uri": doc, "version": 2 },
            "contentChanges": [{
                "range": { "start": { "line": 0, "character": 0 }, "end": { "line": 0, "character": 0 } },
                "text": huge,
            }],
        }),
    );
    drop(huge);
    let outline = client.call(
        "textDocument/documentSymbol",
        json!({ "textDocument": { "uri": doc } }),
    );
    assert_eq!(outline, json!([]));
    // Other requests still work, and the user hears why once.
    let again = client.call(
        "textDocument/documentSymbol",
        json!({ "textDocument": { "uri": doc } }),
    );
    assert_eq!(again, json!([]));
    assert!(client.call("workspace/symbol", json!({ "query": "pasted" })) == json!([]));
    assert_eq!(log_messages_saying(&client, "over the"), 1);
    // The index drops the file while its buffer is that large (a file that size on disk is
    // skipped too).
    let dropped = eventually(|| !search_finds(dir.path(), "small_marker"));
    assert!(dropped, "the index kept the file of a 20 MiB buffer");

    // Undo the paste: the buffer is parsed and indexed again.
    client.notify(
        "textDocument/didChange",
        json!({
            "textDocument": { "uri": doc, "version": 3 },
            "contentChanges": [{ "text": small }],
        }),
    );
    let mut names = Vec::new();
    outline_names(
        &client.call(
            "textDocument/documentSymbol",
            json!({ "textDocument": { "uri": doc } }),
        ),
        &mut names,
    );
    assert_eq!(names, ["small_marker"]);
    let back = eventually(|| search_finds(dir.path(), "small_marker"));
    assert!(back, "the index did not take the buffer back");
    assert!(client.call("shutdown", Value::Null).is_null());
}

#[test]
fn indexing_does_not_wait_for_the_client_to_answer_about_progress() {
    let dir = workspace(&[("src/lib.rs", "pub fn indexed_without_progress() {}\n")]);
    let mut client = LspClient::start(dir.path(), &["--no-watch"]);
    // An editor that announces progress support but never answers the request creating it.
    client.unanswered = vec!["window/workDoneProgress/create".to_string()];
    client.call(
        "initialize",
        json!({
            "processId": null,
            "rootUri": uri(&client.root.clone()),
            "capabilities": { "window": { "workDoneProgress": true } },
        }),
    );
    client.notify("initialized", json!({}));
    let indexed = eventually(|| {
        client
            .call(
                "workspace/symbol",
                json!({ "query": "indexed_without_progress" }),
            )
            .as_array()
            .is_some_and(|hits| !hits.is_empty())
    });
    assert!(indexed, "nothing was indexed\n{}", client.stderr());
    // It asked, and no progress was reported on a token the client never accepted.
    assert!(
        client
            .notifications
            .iter()
            .any(|message| message["method"] == "window/workDoneProgress/create")
    );
    assert!(
        !client
            .notifications
            .iter()
            .any(|message| message["method"] == "$/progress")
    );
}
