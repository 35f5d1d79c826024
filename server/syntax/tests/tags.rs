//! Tags fixtures: for every language, `grammars/<dir>/sample*` is parsed with
//! `parse_file` and its definitions and references are compared with `<sample>.json` next to it
//! (name, kind, lines and scope chain; byte offsets, columns and signatures are not compared).
//!
//! The expected files are the spec for `grammars/<language>/tags.scm`. After changing a query or a
//! fixture, regenerate them and review the diff entry by entry against the source:
//!
//! ```sh
//! UPDATE_EXPECT=1 cargo test -p lode-syntax --test tags
//! ```
//!
//! Two ignored helpers for writing queries: `dump_tree` prints a file's syntax tree (node kinds,
//! fields, line numbers) and `print_tags` prints its tags next to the source lines they point at:
//!
//! ```sh
//! TAGS_DUMP=/abs/path/file.rs TAGS_LANG=rust cargo test -p lode-syntax --test tags -- --ignored --nocapture dump_tree
//! TAGS_DUMP=/abs/path/file.rs TAGS_LANG=rust cargo test -p lode-syntax --test tags -- --ignored --nocapture print_tags
//! ```

use std::fmt::Write as _;

use lode_syntax::{DefKind, Definition, FileTags, Language, RefKind, parse_file, parse_tree};
use serde::{Deserialize, Serialize};

mod common;

use common::{Sample, sample as fixture, samples};

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

fn tags_of(fixture: &Sample) -> FileTags {
    parse_file(fixture.language, &fixture.source())
        .unwrap_or_else(|e| panic!("parsing {}: {e}", fixture.path.display()))
        .tags
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
    for fixture in samples() {
        let actual = Expected::from_tags(&tags_of(&fixture));
        let expected_path = fixture.expected_path();
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
        diff.push_str(&diff_entries(
            "reference",
            &expected.references,
            &actual.references,
        ));
        if !diff.is_empty() {
            writeln!(failures, "{}:\n{diff}", fixture.path.display()).expect("writing to a String");
        }
    }
    assert!(
        failures.is_empty(),
        "tags differ from <sample>.json (- expected, + actual); if the change is intended, \
         regenerate with UPDATE_EXPECT=1 and review:\n{failures}"
    );
}

#[test]
fn fixtures_are_realistic_sized() {
    for fixture in samples() {
        let lines = fixture.source().lines().count();
        assert!(
            (60..=400).contains(&lines),
            "{} has {lines} lines",
            fixture.path.display()
        );
    }
}

/// The definition named `name` that starts on `line`.
fn definition<'t>(tags: &'t FileTags, name: &str, line: u32) -> &'t Definition {
    tags.definitions
        .iter()
        .find(|d| d.name == name && d.start_line == line)
        .unwrap_or_else(|| {
            panic!(
                "no definition {name} on line {line} in {:#?}",
                tags.definitions
            )
        })
}

/// The kinds of the references to `name` on `line`.
fn reference_kinds(tags: &FileTags, name: &str, line: u32) -> Vec<RefKind> {
    tags.references
        .iter()
        .filter(|r| r.name == name && r.line == line)
        .map(|r| r.kind)
        .collect()
}

#[test]
fn rust_scopes_macros_and_imports() {
    let tags = tags_of(&fixture("rust"));

    let search = definition(&tags, "search", 64);
    assert_eq!(search.kind, DefKind::Method);
    assert_eq!(search.scope, ["index", "impl Index"]);
    assert_eq!(search.qualified_name(), "index > impl Index > search");
    assert_eq!(
        definition(&tags, "count_terms", 84).scope,
        ["index", "stats"]
    );
    assert_eq!(definition(&tags, "normalize", 79).kind, DefKind::Function);
    assert_eq!(
        definition(&tags, "score", 25).kind,
        DefKind::Method,
        "trait method signature"
    );

    // An impl is named by its implementing type, also when it is generic or a path.
    let display = definition(&tags, "Wrapper", 42);
    assert_eq!(display.kind, DefKind::Impl);
    let debug = definition(&tags, "Index", 127);
    assert_eq!(debug.kind, DefKind::Impl);
    assert_eq!(
        definition(&tags, "fmt", 128).scope,
        ["impl fmt::Debug for Index"]
    );

    assert_eq!(reference_kinds(&tags, "println", 121), [RefKind::Macro]);
    assert_eq!(reference_kinds(&tags, "debug_log", 68), [RefKind::Macro]);
    assert_eq!(
        reference_kinds(&tags, "count_terms", 119),
        [RefKind::Call],
        "a::b::c() calls c"
    );
    assert_eq!(reference_kinds(&tags, "search", 118), [RefKind::MethodCall]);
    assert_eq!(
        reference_kinds(&tags, "parse", 120),
        [RefKind::MethodCall],
        "turbofish"
    );

    for (name, line) in [
        ("BTreeMap", 5),
        ("HashMap", 5),
        ("fmt", 6),
        ("Display", 6),
        ("Arc", 7),
    ] {
        assert_eq!(
            reference_kinds(&tags, name, line),
            [RefKind::Import],
            "use of {name}"
        );
    }
    let imports_in_mod: Vec<&str> = tags
        .references
        .iter()
        .filter(|r| r.kind == RefKind::Import && r.scope == ["index"])
        .map(|r| r.name.as_str())
        .collect();
    assert_eq!(imports_in_mod, ["DocId", "Field", "MAX_RESULTS"]);
}

/// `impl<T: Display> Display for Wrapper<T>` is labelled by its trait and type, like a non-generic
/// trait impl (`impl Default for Index`).
#[test]
fn rust_generic_trait_impl_scope_names_the_trait() {
    let tags = tags_of(&fixture("rust"));
    assert_eq!(
        definition(&tags, "default", 74).scope,
        ["index", "impl Default for Index"]
    );
    assert_eq!(
        definition(&tags, "fmt", 43).scope,
        ["impl Display for Wrapper"]
    );
}

#[test]
fn python_classes_methods_and_imports() {
    let tags = tags_of(&fixture("python"));
    assert_eq!(definition(&tags, "record", 53).scope, ["Queue", "Stats"]);
    assert_eq!(definition(&tags, "record", 53).kind, DefKind::Method);
    assert_eq!(
        definition(&tags, "backoff", 83).kind,
        DefKind::Function,
        "nested in a function"
    );
    assert_eq!(definition(&tags, "MAX_RETRIES", 11).kind, DefKind::Constant);
    assert_eq!(definition(&tags, "logger", 13).kind, DefKind::Variable);
    assert_eq!(reference_kinds(&tags, "dataclass", 6), [RefKind::Import]);
    assert_eq!(reference_kinds(&tags, "field", 6), [RefKind::Import]);
    assert_eq!(
        reference_kinds(&tags, "Protocol", 7),
        [RefKind::Import],
        "the name, not the alias"
    );
    assert_eq!(
        reference_kinds(&tags, "run_with_retries", 76),
        [RefKind::Call]
    );
    assert_eq!(reference_kinds(&tags, "record", 77), [RefKind::MethodCall]);
}

#[test]
fn javascript_functions_methods_and_imports() {
    let tags = tags_of(&fixture("javascript"));
    let by_title = definition(&tags, "byTitle", 21);
    assert_eq!(
        (by_title.kind, by_title.scope.len()),
        (DefKind::Function, 0),
        "arrow function"
    );
    assert_eq!(definition(&tags, "#persist", 72).scope, ["TodoStore"]);
    assert_eq!(definition(&tags, "#persist", 72).kind, DefKind::Method);
    assert_eq!(definition(&tags, "merge", 65).scope, ["TodoStore", "sync"]);
    assert_eq!(
        reference_kinds(&tags, "React", 3),
        [RefKind::Import],
        "default import"
    );
    assert_eq!(reference_kinds(&tags, "useEffect", 3), [RefKind::Import]);
    assert_eq!(
        reference_kinds(&tags, "TodoItem", 96),
        [RefKind::Call],
        "JSX component"
    );
}

#[test]
fn typescript_and_tsx_share_the_query() {
    let ts = tags_of(&fixture("typescript"));
    assert_eq!(definition(&ts, "Transport", 19).kind, DefKind::Interface);
    assert_eq!(definition(&ts, "send", 21).scope, ["Transport"]);
    assert_eq!(definition(&ts, "Retry", 79).kind, DefKind::Module);
    assert_eq!(definition(&ts, "withRetry", 84).scope, ["Retry"]);
    assert_eq!(definition(&ts, "Method", 11).kind, DefKind::Type);
    assert_eq!(definition(&ts, "Status", 14).kind, DefKind::Enum);
    assert_eq!(definition(&ts, "createClient", 98).kind, DefKind::Function);
    assert_eq!(
        reference_kinds(&ts, "CachingTransport", 49),
        [RefKind::Type]
    );

    let tsx = tags_of(&fixture("tsx"));
    assert_eq!(
        definition(&tsx, "SearchListProps", 17).kind,
        DefKind::Interface
    );
    assert_eq!(definition(&tsx, "format", 79).scope, ["Label"]);
    assert_eq!(reference_kinds(&tsx, "ReactNode", 4), [RefKind::Import]);
}

#[test]
fn go_calls_types_and_imports() {
    let tags = tags_of(&fixture("go"));
    assert_eq!(definition(&tags, "Cache", 38).kind, DefKind::Struct);
    assert_eq!(definition(&tags, "Store", 26).kind, DefKind::Interface);
    assert_eq!(definition(&tags, "Clock", 23).kind, DefKind::Type);
    assert_eq!(definition(&tags, "Get", 57).kind, DefKind::Method);
    assert_eq!(
        definition(&tags, "misses", 42).scope,
        ["Cache"],
        "second name of a field list"
    );
    assert_eq!(definition(&tags, "maxTTL", 16).kind, DefKind::Constant);
    assert_eq!(
        reference_kinds(&tags, "New", 19),
        [RefKind::Call],
        "pkg.Func() calls Func"
    );
    assert_eq!(reference_kinds(&tags, "Lock", 73), [RefKind::MethodCall]);
    assert_eq!(reference_kinds(&tags, "net/http", 7), [RefKind::Import]);
    assert_eq!(reference_kinds(&tags, "Duration", 69), [RefKind::Type]);
}

/// A definition's own name is never also reported as a reference to itself.
#[test]
fn definition_names_are_not_references() {
    for fixture in samples() {
        let source = fixture.source();
        let tags = parse_file(fixture.language, &source).expect("parses").tags;
        for r in &tags.references {
            let byte = line_start(&source, r.line) + r.column as usize - 1;
            let own_name = tags.definitions.iter().find(|d| {
                d.start_byte <= byte
                    && byte < d.end_byte
                    && d.name == r.name
                    && source[d.start_byte..d.end_byte]
                        .find(&d.name)
                        .is_some_and(|at| d.start_byte + at == byte)
            });
            assert!(
                own_name.is_none(),
                "{}: reference {} on line {} is the name of its definition",
                fixture.path.display(),
                r.name,
                r.line
            );
        }
    }
}

fn line_start(source: &str, line: u32) -> usize {
    source
        .split_inclusive('\n')
        .take(line as usize - 1)
        .map(str::len)
        .sum()
}

/// Syntax tree printer for writing queries; see the module docs.
#[test]
#[ignore]
fn dump_tree() {
    let path = std::env::var("TAGS_DUMP").expect("TAGS_DUMP=<file>");
    let language = Language::from_name(&std::env::var("TAGS_LANG").expect("TAGS_LANG=<language>"))
        .expect("a known language");
    let source = std::fs::read_to_string(&path).expect("readable file");
    let tree = parse_tree(language, &source)
        .expect("parses")
        .expect("a code language");
    let mut cursor = tree.walk();
    let mut depth = 0usize;
    loop {
        let node = cursor.node();
        if node.is_named() {
            let field = cursor
                .field_name()
                .map(|f| format!("{f}: "))
                .unwrap_or_default();
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

/// A C header's API is its prototypes: each is a function, in and out of conditional blocks,
/// returning pointers or not; a function pointer type stays a type.
#[test]
fn c_header_prototypes_are_functions() {
    let header = samples()
        .into_iter()
        .find(|sample| sample.path.ends_with("c/sample.h"))
        .expect("grammars/c/sample.h is read as C");
    let tags = tags_of(&header);
    for (name, line) in [
        ("ring_new", 46),
        ("ring_push", 52),
        ("ring_strerror", 67),
        ("ring_parse_options", 70),
        ("ring_push_locked", 74),
    ] {
        let found = definition(&tags, name, line);
        assert_eq!(found.kind, DefKind::Function, "{name}");
        assert!(found.scope.is_empty(), "{name}: {:?}", found.scope);
    }
    assert_eq!(definition(&tags, "ring_visit_fn", 25).kind, DefKind::Type);
    // A prototype inside a C++ namespace is the namespace's function.
    let cpp = samples()
        .into_iter()
        .find(|sample| sample.path.ends_with("cpp/sample.h"))
        .expect("grammars/cpp/sample.h");
    let total = definition(&tags_of(&cpp), "total_area", 61).clone();
    assert_eq!(
        (total.kind, total.scope),
        (DefKind::Function, vec!["geom".to_string()])
    );
}

/// Members without a name of their own, Scala 3 givens, Haskell `where` helpers and the labels
/// of Haskell instances and Elixir implementations (`impl Class for Type`, as Rust's).
#[test]
fn indexers_subscripts_givens_where_helpers_and_impl_labels() {
    let csharp = tags_of(&fixture("csharp"));
    let indexer = definition(&csharp, "this", 75);
    assert_eq!(indexer.kind, DefKind::Field);
    assert_eq!(indexer.scope, ["Example.Jobs", "JobQueue"]);

    let swift = tags_of(&fixture("swift"));
    let subscript = definition(&swift, "subscript", 122);
    assert_eq!(subscript.kind, DefKind::Method);
    assert_eq!(subscript.scope, ["impl MemoryStorage"]);

    let scala = tags_of(&fixture("scala"));
    assert_eq!(
        definition(&scala, "priorityOrdering", 100).kind,
        DefKind::Variable
    );
    assert_eq!(
        definition(&scala, "compare", 101).scope,
        ["com.example.limits", "priorityOrdering"]
    );
    assert_eq!(
        definition(&scala, "Ordering[Decision]", 104).kind,
        DefKind::Variable
    );

    let haskell = tags_of(&fixture("haskell"));
    let helper = definition(&haskell, "go", 115);
    assert_eq!(
        (helper.kind, helper.end_line, helper.scope.clone()),
        (
            DefKind::Function,
            120,
            vec!["Data.JobQueue".to_string(), "drain".to_string()]
        )
    );
    assert_eq!(
        definition(&haskell, "pretty", 68).scope,
        ["Data.JobQueue", "impl Pretty for Job"]
    );

    let elixir = tags_of(&fixture("elixir"));
    assert_eq!(
        definition(&elixir, "key", 56).scope,
        ["RateLimit", "impl Keyed for Map"]
    );
}
