//! The README's first command gives what it says (issue 45): it builds both binaries (the `lode`
//! front end and the `lode-full` it runs), and its example question, asked of this repository
//! through the real binary, answers first with the function the README names.

use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::support::{lode, stderr, stdout};

fn repository_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The README's first shell command and the comment above it.
fn first_command(readme: &str) -> (String, String) {
    let block = readme
        .split("```sh\n")
        .nth(1)
        .and_then(|rest| rest.split("```").next())
        .expect("the README has a sh block");
    let mut comment = String::new();
    for line in block.lines() {
        if let Some(text) = line.strip_prefix('#') {
            comment.push_str(text);
            comment.push(' ');
        } else if !line.trim().is_empty() {
            return (line.to_string(), comment);
        }
    }
    panic!("no command in the README's first sh block");
}

#[test]
fn the_readme_first_command_builds_both_binaries_and_its_question_finds_the_chunker() {
    let readme = std::fs::read_to_string(repository_root().join("README.md")).unwrap();
    let (command, comment) = first_command(&readme);
    let (build, search) = command
        .split_once(" && ")
        .unwrap_or_else(|| panic!("build, then search: {command}"));
    // `cargo run` builds only the binary it runs; `cargo build -p lode` builds both.
    assert_eq!(build, "cargo build --release -p lode", "{command}");
    let query = search
        .strip_prefix("target/release/lode search \"")
        .and_then(|rest| rest.strip_suffix('"'))
        .unwrap_or_else(|| panic!("the front end runs the search: {search}"));
    assert!(
        comment.contains("`chunk_code_with`"),
        "the README says which function answers: {comment}"
    );

    // This repository as a user's checkout is, indexed elsewhere so the checkout stays clean.
    let index = tempfile::tempdir().unwrap();
    for mode in [None, Some("lexical")] {
        let mut search = lode(&repository_root());
        search.args(["search", "--json", "--limit", "3"]);
        search.arg("--index-dir").arg(index.path());
        if let Some(mode) = mode {
            search.args(["--mode", mode]);
        }
        let output = search.arg("--").arg(query).output().unwrap();
        assert!(output.status.success(), "{}", stderr(&output));
        let hits: Vec<Value> = stdout(&output)
            .lines()
            .map(|line| serde_json::from_str(line).unwrap())
            .collect();
        let first = &hits[0];
        assert_eq!(
            (first["path"].as_str(), first["symbol"].as_str()),
            (Some("server/syntax/src/chunk.rs"), Some("chunk_code_with")),
            "mode {mode:?}, {query:?}: {hits:#?}"
        );
    }
}
