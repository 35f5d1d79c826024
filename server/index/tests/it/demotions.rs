//! Demotions (issue 45) end to end: real files in a temporary directory, a real SQLite catalog,
//! a real tantivy index and the built-in table's vectors. For each rule, a chunk of that role
//! that outranks the implementation without demotions (checked first, so the test can fail)
//! ranks below it with the shipped weights, in lexical and in hybrid search; a query that asks
//! for tests, or names the file, keeps it first.

use std::fs;
use std::path::Path;

use lode_index::{
    DemotionWeights, SearchMode, SearchRequest, Workspace, WorkspaceOptions, default_embedder,
};

fn write(root: &Path, rel: &str, text: &str) {
    let path = root.join(rel);
    fs::create_dir_all(path.parent().unwrap()).unwrap();
    fs::write(path, text).unwrap();
}

fn no_progress(_: lode_index::RefreshProgress) {}

/// The implementation every question below is about.
const IMPLEMENTATION: &str = r#"
/// Splits a text into pieces of at most `size` characters each.
pub fn cut_into_pieces(text: &str, size: usize) -> Vec<String> {
    let characters: Vec<char> = text.chars().collect();
    characters
        .chunks(size.max(1))
        .map(|piece| piece.iter().collect())
        .collect()
}

/// How many pieces `cut_into_pieces` makes of a text.
pub fn piece_count(text: &str, size: usize) -> usize {
    text.chars().count().div_ceil(size.max(1))
}
"#;

const QUESTION: &str = "how is a text split into pieces";

/// The implementation under a name that shares no word with the question: against chunks
/// without a symbol (a header, a data file) it matches by its doc alone.
fn unnamed_implementation() -> String {
    IMPLEMENTATION
        .replace("cut_into_pieces", "chop")
        .replace("piece_count", "chop_count")
}

/// A workspace of `implementation`, some unrelated code and `other` (path, text), indexed
/// with vectors.
fn workspace_with(implementation: &str, other: &[(&str, &str)]) -> (tempfile::TempDir, Workspace) {
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), "src/pieces.rs", implementation);
    // Unrelated code around it, so that the words' rarity is that of a real repository.
    for (index, (noun, verb)) in [
        ("socket", "open"),
        ("config", "load"),
        ("cache", "evict"),
        ("token", "refresh"),
        ("image", "resize"),
        ("queue", "drain"),
        ("user", "rename"),
        ("report", "print"),
    ]
    .iter()
    .enumerate()
    {
        write(
            dir.path(),
            &format!("src/{noun}.rs"),
            &format!(
                "/// Does the {verb} step for a {noun}.\npub fn {verb}_{noun}(count: usize) -> usize {{\n    \
                 count + {index}\n}}\n\n/// Whether a {noun} text is empty.\npub fn {noun}_is_empty(text: &str) -> bool {{\n    \
                 text.is_empty()\n}}\n"
            ),
        );
    }
    for (path, text) in other {
        write(dir.path(), path, text);
    }
    let mut options = WorkspaceOptions::new(dir.path());
    options.embedder = Some(default_embedder().unwrap());
    let workspace = Workspace::open(options).unwrap();
    workspace.refresh(&no_progress).unwrap();
    assert!(workspace.has_vectors());
    (dir, workspace)
}

/// The path of the first hit for `query`.
fn first(
    workspace: &Workspace,
    query: &str,
    mode: SearchMode,
    demotions: Option<DemotionWeights>,
) -> String {
    let request = SearchRequest {
        demotions,
        ..SearchRequest::new(query)
    };
    let hits = workspace.search_with_mode(&request, mode).unwrap();
    assert!(!hits.is_empty(), "no hits for {query:?}");
    let ranking: Vec<String> = hits
        .iter()
        .map(|hit| format!("{}:{} {:.3}", hit.path, hit.start_line, hit.score))
        .collect();
    eprintln!("{mode:?} {demotions:?} {query:?}: {ranking:?}");
    hits[0].path.clone()
}

/// Without demotions `other_path` answers `QUESTION` first in both modes; with the shipped ones
/// the implementation does, and `keeps_it` (a query asking for it) still gets `other_path` first.
fn assert_demoted(other: &[(&str, &str)], other_path: &str, keeps_it: Option<&str>) {
    assert_demoted_against(IMPLEMENTATION, other, other_path, keeps_it)
}

fn assert_demoted_against(
    implementation: &str,
    other: &[(&str, &str)],
    other_path: &str,
    keeps_it: Option<&str>,
) {
    let (_dir, workspace) = workspace_with(implementation, other);
    for mode in [SearchMode::Lexical, SearchMode::Hybrid] {
        assert_eq!(
            first(&workspace, QUESTION, mode, Some(DemotionWeights::NONE)),
            other_path,
            "{mode:?}: without demotions the {other_path} chunk must outrank the implementation, \
             or this test proves nothing"
        );
        assert_eq!(
            first(&workspace, QUESTION, mode, None),
            "src/pieces.rs",
            "{mode:?}: the implementation ranks first"
        );
        if let Some(query) = keeps_it {
            assert_eq!(
                first(&workspace, query, mode, None),
                other_path,
                "{mode:?}: {query:?} asks for it"
            );
        }
    }
}

const TEST_BODY: &str = r#"
use crate::pieces::cut_into_pieces;

#[test]
fn a_text_split_into_pieces_keeps_its_text() {
    let text = "some text";
    assert_eq!(cut_into_pieces(text, 4).concat(), text);
}
"#;

#[test]
fn tests_in_a_test_directory_rank_below_the_implementation_unless_tests_are_asked_for() {
    assert_demoted(
        &[("tests/pieces.rs", TEST_BODY)],
        "tests/pieces.rs",
        Some("test for how a text is split into pieces"),
    );
}

#[test]
fn test_files_by_name_rank_below_the_implementation() {
    let python_test = r#"
from pieces import cut_into_pieces

def test_a_text_split_into_pieces_keeps_its_text():
    text = "some text"
    assert "".join(cut_into_pieces(text, 4)) == text
"#;
    assert_demoted(
        &[("tools/test_pieces.py", python_test)],
        "tools/test_pieces.py",
        Some("tests of splitting a text into pieces"),
    );
}

#[test]
fn a_test_module_in_a_source_file_ranks_below_the_implementation() {
    let with_tests = format!(
        "pub fn unrelated() -> u32 {{\n    7\n}}\n\n#[cfg(test)]\nmod tests {{\n{}\n}}\n",
        TEST_BODY.replace("crate::pieces", "super")
    );
    assert_demoted(
        &[("src/other.rs", &with_tests)],
        "src/other.rs",
        Some("the test of a text split into pieces"),
    );
}

#[test]
fn fixtures_rank_below_the_implementation() {
    let fixture = "# Pieces\n\nA text split into pieces of four: `some`, ` tex`, `t`.\n";
    assert_demoted(
        &[("fixtures/pieces/split.md", fixture)],
        "fixtures/pieces/split.md",
        Some("the fixture of a text split into pieces"),
    );
}

#[test]
fn generated_code_ranks_below_the_implementation() {
    let generated = r#"// Code generated by piecegen. DO NOT EDIT.

/// Splits a text into pieces.
pub fn split_text_into_pieces(text: &str) -> Vec<String> {
    vec![text.to_string()]
}
"#;
    assert_demoted(
        &[("src/gen/pieces_gen.rs", generated)],
        "src/gen/pieces_gen.rs",
        Some("what is in pieces_gen.rs"),
    );
}

/// Every chunk of a generated file is demoted, not only its first: the header is read once per
/// file whichever of the file's chunks the ranking holds first (rows come in no fixed order).
#[test]
fn every_chunk_of_a_generated_file_ranks_below_the_implementation() {
    let generated = format!(
        r#"// Code generated by piecegen. DO NOT EDIT.

/// The length of a text in characters.
pub fn text_length(text: &str) -> usize {{
    let characters: Vec<char> = text.chars().collect();
    {}
    characters.len()
}}

/// Splits a text into pieces.
pub fn split_text_into_pieces(text: &str) -> Vec<String> {{
    vec![text.to_string()]
}}
"#,
        "let _ = 0;\n    ".repeat(12)
    );
    let (_dir, workspace) =
        workspace_with(IMPLEMENTATION, &[("src/gen/pieces_gen.rs", &generated)]);
    let request = SearchRequest {
        demotions: Some(DemotionWeights::NONE),
        ..SearchRequest::new(QUESTION)
    };
    let hits = workspace
        .search_with_mode(&request, SearchMode::Lexical)
        .unwrap();
    let generated_hits: Vec<u32> = hits
        .iter()
        .filter(|hit| hit.path == "src/gen/pieces_gen.rs")
        .map(|hit| hit.start_line)
        .collect();
    assert!(
        generated_hits.contains(&1) && generated_hits.iter().any(|&line| line > 1),
        "the header chunk and a later chunk must both rank, or this test proves nothing: {generated_hits:?}"
    );
    assert_eq!(hits[0].path, "src/gen/pieces_gen.rs", "without demotions");
    // Several searches: the order in which the file's chunks are read differs between them.
    for _ in 0..8 {
        for mode in [SearchMode::Lexical, SearchMode::Hybrid] {
            assert_eq!(
                first(&workspace, QUESTION, mode, None),
                "src/pieces.rs",
                "{mode:?}"
            );
        }
    }
}

#[test]
fn data_files_rank_below_the_implementation_unless_named() {
    let data = r#"{"text": "split into pieces"}
"#;
    assert_demoted_against(
        &unnamed_implementation(),
        &[("bench/results/pieces.json", data)],
        "bench/results/pieces.json",
        Some("how is a text split into pieces in bench/results"),
    );
}

#[test]
fn a_module_header_ranks_below_the_implementation() {
    let header = "//! Split a text into pieces: the pieces of a split text.\n\n\
                  use std::fmt::Write;\nuse std::collections::HashMap;\n\n";
    // Two definitions of a chunk each, so that the header is a chunk of its own.
    let body: String = ["counter", "printer"]
        .iter()
        .map(|name| {
            let lines: String = (0..12)
                .map(|i| format!("    total += map.get(\"{name}_{i}\").copied().unwrap_or({i});\n"))
                .collect();
            format!(
                "pub fn unrelated_{name}(map: &HashMap<String, u32>, out: &mut String) -> u32 {{\n    \
                 let mut total = 0;\n{lines}    let _ = write!(out, \"{{total}}\");\n    total\n}}\n\n"
            )
        })
        .collect();
    assert_demoted_against(
        &unnamed_implementation(),
        &[("src/splitting.rs", &format!("{header}{body}"))],
        "src/splitting.rs",
        Some("how is a text split into pieces in src/splitting.rs"),
    );
}
