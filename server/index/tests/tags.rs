//! Tags fixtures: for every language, `fixtures/languages/<dir>/sample.*` is parsed with
//! `parse_file` and its definitions and references are compared with `expected.json` next to it
//! (name, kind, lines and scope chain; byte offsets, columns and signatures are not compared).
//!
//! The expected files are the spec for `grammars/<language>/tags.scm`. After changing a query or a
//! fixture, regenerate them and review the diff entry by entry against the source:
//!
//! ```sh
//! UPDATE_EXPECT=1 cargo test -p lode-index --test tags
//! ```
//!
//! To see the syntax tree of a file while writing queries (node kinds, fields and line numbers):
//!
//! ```sh
//! TAGS_DUMP=/abs/path/file.rs TAGS_LANG=rust cargo test -p lode-index --test tags -- --ignored --nocapture dump_tree
//! ```

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use lode_index::Language;
use lode_index::parse::parse_file;
use lode_index::tags::FileTags;
use serde::{Deserialize, Serialize};

/// One fixture directory and the language its sample is parsed as.
struct Fixture {
    dir: &'static str,
    sample: &'static str,
    language: Language,
}

const FIXTURES: &[Fixture] = &[
    Fixture { dir: "rust", sample: "sample.rs", language: Language::Rust },
    Fixture { dir: "python", sample: "sample.py", language: Language::Python },
    Fixture { dir: "javascript", sample: "sample.js", language: Language::JavaScript },
    Fixture { dir: "typescript", sample: "sample.ts", language: Language::TypeScript },
    Fixture { dir: "tsx", sample: "sample.tsx", language: Language::Tsx },
    Fixture { dir: "go", sample: "sample.go", language: Language::Go },
];

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
struct ExpectedDef {
    name: String,
    kind: String,
    start_line: u32,
    end_line: u32,
    scope: Vec<String>,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
struct ExpectedRef {
    name: String,
    kind: String,
    line: u32,
    scope: Vec<String>,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
struct Expected {
    definitions: Vec<ExpectedDef>,
    references: Vec<ExpectedRef>,
}

impl Expected {
    fn from_tags(tags: &FileTags) -> Expected {
        Expected {
            definitions: tags
                .definitions
                .iter()
                .map(|d| ExpectedDef {
                    name: d.name.clone(),
                    kind: d.kind.name().to_string(),
                    start_line: d.start_line,
                    end_line: d.end_line,
                    scope: d.scope.clone(),
                })
                .collect(),
            references: tags
                .references
                .iter()
                .map(|r| ExpectedRef {
                    name: r.name.clone(),
                    kind: r.kind.name().to_string(),
                    line: r.line,
                    scope: r.scope.clone(),
                })
                .collect(),
        }
    }

    /// Pretty JSON with one entry per line, so that diffs and reviews read line by line.
    fn to_json(&self) -> String {
        let mut out = String::from("{\n  \"definitions\": [\n");
        push_entries(&mut out, &self.definitions);
        out.push_str("  ],\n  \"references\": [\n");
        push_entries(&mut out, &self.references);
        out.push_str("  ]\n}\n");
        out
    }
}

fn push_entries<T: Serialize>(out: &mut String, entries: &[T]) {
    for (i, entry) in entries.iter().enumerate() {
        let comma = if i + 1 < entries.len() { "," } else { "" };
        let line = serde_json::to_string(entry).expect("entries serialize");
        writeln!(out, "    {line}{comma}").expect("writing to a String");
    }
}

fn fixtures_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/languages")
}

fn read_sample(fixture: &Fixture) -> String {
    let path = fixtures_root().join(fixture.dir).join(fixture.sample);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("reading {}: {e}", path.display()))
}

fn tags_of(fixture: &Fixture) -> FileTags {
    let source = read_sample(fixture);
    parse_file(fixture.language, &source)
        .unwrap_or_else(|e| panic!("parsing {}/{}: {e}", fixture.dir, fixture.sample))
        .tags
}

fn fixture(dir: &str) -> &'static Fixture {
    FIXTURES.iter().find(|f| f.dir == dir).expect("known fixture")
}

/// The readable difference between two entry lists: entries missing from `actual` (`-`) and entries
/// only in `actual` (`+`), each as its JSON line; then an ordering note when only the order differs.
fn diff_entries<T: Serialize + PartialEq>(what: &str, expected: &[T], actual: &[T]) -> String {
    let line = |entry: &T| serde_json::to_string(entry).expect("entries serialize");
    let mut out = String::new();
    for entry in expected.iter().filter(|e| !actual.contains(e)) {
        writeln!(out, "  - {what} {}", line(entry)).expect("writing to a String");
    }
    for entry in actual.iter().filter(|a| !expected.contains(a)) {
        writeln!(out, "  + {what} {}", line(entry)).expect("writing to a String");
    }
    if out.is_empty() && expected != actual {
        writeln!(
            out,
            "  {what}: same entries ({} expected, {} actual) but in a different order or count",
            expected.len(),
            actual.len()
        )
        .expect("writing to a String");
    }
    out
}

#[test]
fn fixtures_match_expected_tags() {
    let update = std::env::var_os("UPDATE_EXPECT").is_some_and(|v| !v.is_empty() && v != "0");
    let mut failures = String::new();
    for fixture in FIXTURES {
        let actual = Expected::from_tags(&tags_of(fixture));
        let expected_path = fixtures_root().join(fixture.dir).join("expected.json");
        if update {
            std::fs::write(&expected_path, actual.to_json())
                .unwrap_or_else(|e| panic!("writing {}: {e}", expected_path.display()));
            continue;
        }
        let text = std::fs::read_to_string(&expected_path).unwrap_or_else(|e| {
            panic!(
                "reading {}: {e} (run with UPDATE_EXPECT=1 to create it)",
                expected_path.display()
            )
        });
        let expected: Expected = serde_json::from_str(&text)
            .unwrap_or_else(|e| panic!("parsing {}: {e}", expected_path.display()));
        let mut diff = diff_entries("definition", &expected.definitions, &actual.definitions);
        diff.push_str(&diff_entries("reference", &expected.references, &actual.references));
        if !diff.is_empty() {
            writeln!(failures, "{}/{}:\n{diff}", fixture.dir, fixture.sample)
                .expect("writing to a String");
        }
    }
    assert!(
        failures.is_empty(),
        "tags differ from expected.json (- expected, + actual); if the change is intended, \
         regenerate with UPDATE_EXPECT=1 and review:\n{failures}"
    );
}

#[test]
fn fixtures_are_realistic_sized() {
    for fixture in FIXTURES {
        let lines = read_sample(fixture).lines().count();
        assert!(
            (60..=150).contains(&lines),
            "{}/{} has {lines} lines",
            fixture.dir,
            fixture.sample
        );
    }
}

/// Syntax tree printer for writing queries; see the module docs.
#[test]
#[ignore]
fn dump_tree() {
    let path = std::env::var("TAGS_DUMP").expect("TAGS_DUMP=<file>");
    let language = Language::from_name(&std::env::var("TAGS_LANG").expect("TAGS_LANG=<language>"))
        .expect("a known language");
    let source = std::fs::read_to_string(&path).expect("readable file");
    let tree = lode_index::parse::parse_tree(language, &source)
        .expect("parses")
        .expect("a code language");
    let mut cursor = tree.walk();
    let mut depth = 0usize;
    loop {
        let node = cursor.node();
        if node.is_named() {
            let field = cursor.field_name().map(|f| format!("{f}: ")).unwrap_or_default();
            let text = if node.child_count() == 0 {
                format!(" {:?}", &source[node.byte_range()])
            } else {
                String::new()
            };
            let row = node.start_position().row + 1;
            println!("{}{field}{} [{row}]{text}", "  ".repeat(depth), node.kind());
        }
        if cursor.goto_first_child() {
            depth += 1;
            continue;
        }
        loop {
            if cursor.goto_next_sibling() {
                break;
            }
            if !cursor.goto_parent() {
                return;
            }
            depth -= 1;
        }
    }
}

/// Prints the tags of one file next to the source lines they sit on, for reviewing expected files.
#[test]
#[ignore]
fn print_tags() {
    let path = std::env::var("TAGS_DUMP").expect("TAGS_DUMP=<file>");
    let language = Language::from_name(&std::env::var("TAGS_LANG").expect("TAGS_LANG=<language>"))
        .expect("a known language");
    let source = std::fs::read_to_string(&path).expect("readable file");
    let lines: Vec<&str> = source.lines().collect();
    let tags = parse_file(language, &source).expect("parses").tags;
    for d in &tags.definitions {
        println!(
            "DEF {:<10} {:<20} {:>3}-{:<3} {:?}",
            d.kind.name(),
            d.name,
            d.start_line,
            d.end_line,
            d.scope
        );
    }
    for r in &tags.references {
        println!(
            "REF {:<11} {:<18} {:>3} {:<40} | {}",
            r.kind.name(),
            r.name,
            r.line,
            format!("{:?}", r.scope),
            lines[r.line as usize - 1].trim()
        );
    }
}
