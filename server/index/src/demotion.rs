//! Demotions: what a chunk is besides the code that answers a question, and how far that puts it
//! down a ranking.
//!
//! A question about a repository ("how is a file split into chunks") is answered by the function
//! that does it; tests that call it, fixtures and data that mention it, generated code and a
//! file's leading module header (its imports and `//!` doc) share its words and often outrank
//! it. Each of those is a [`ChunkRole`], recognised from the chunk's path, its file and its
//! text, and each role takes a penalty in units of a ranking's typical spread
//! ([`DemotionWeights`], fitted on repository questions of the training split, see
//! `bench/questions/`). A query that asks for tests ("test for …") keeps tests and fixtures
//! where they rank, and a query naming a chunk's file (`retrieval.json`, `bench/results`) keeps
//! that file's chunks where they rank.
//!
//! This module knows paths and texts only; the ranking it adjusts is the caller's.

use crate::catalog::ChunkRow;

/// What a chunk is, for ranking.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ChunkRole {
    /// Code that does the work: what questions are about.
    Implementation,
    /// A test: in a test file or directory, or a test function or module of a source file.
    Test,
    /// Test inputs: `fixtures/`, `testdata/`, mocks, snapshots.
    Fixture,
    /// Written by a tool: a "generated"/"DO NOT EDIT" header, `*.pb.go`, minified code.
    Generated,
    /// A data file: JSON, CSV, YAML… larger than [`DATA_FILE_BYTES`], or any under `results/`.
    Data,
    /// A code file's leading chunk that defines nothing: its module doc and imports.
    ModuleHeader,
}

/// Penalties per role, in units of the ranking's typical spread (a standard score in fusion by
/// standard scores). 0 leaves a role where it ranks.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct DemotionWeights {
    pub test: f32,
    pub fixture: f32,
    pub generated: f32,
    pub data: f32,
    pub header: f32,
}

impl DemotionWeights {
    /// No demotion at all (benchmarks' "before").
    pub const NONE: DemotionWeights = DemotionWeights {
        test: 0.0,
        fixture: 0.0,
        generated: 0.0,
        data: 0.0,
        header: 0.0,
    };

    /// The same penalty for every role.
    pub fn uniform(weight: f32) -> DemotionWeights {
        DemotionWeights {
            test: weight,
            fixture: weight,
            generated: weight,
            data: weight,
            header: weight,
        }
    }

    fn of(&self, role: ChunkRole) -> f32 {
        match role {
            ChunkRole::Implementation => 0.0,
            ChunkRole::Test => self.test,
            ChunkRole::Fixture => self.fixture,
            ChunkRole::Generated => self.generated,
            ChunkRole::Data => self.data,
            ChunkRole::ModuleHeader => self.header,
        }
    }
}

/// The fitted penalties. `bench/questions/eval.py` on the training split's 45 questions
/// (10 packages as shipped, tests and all; default mode, through the binary), one weight for
/// every role: MRR@10 0.498 at 0, 0.508 at 1, 0.526 at 2, 0.542 at 3 and 0.551 from 5 to 20
/// (top-1 0.311 -> 0.356); lexical mode 0.433 -> 0.502, the same plateau from 5. Only the tests'
/// weight moves the set (tests 5 and the rest 0 give the same 0.551; tests 0 and the rest 5 the
/// same 0.498): its packages have no fixture, generated, data or header chunk above a gold
/// function. Those roles take the tests' weight, the smallest of the plateau, for want of a
/// set that tells them apart.
pub const DEFAULT_DEMOTIONS: DemotionWeights = DemotionWeights {
    test: 5.0,
    fixture: 5.0,
    generated: 5.0,
    data: 5.0,
    header: 5.0,
};

/// A data file at most this large is demoted only under a `results/` directory: small ones are
/// configuration (`Cargo.toml`, `tsconfig.json`) that questions do ask about.
pub const DATA_FILE_BYTES: u64 = 8 * 1024;

/// What the query asks for, as far as demotions go.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct QueryIntent {
    /// "test for …", "tests of …", "spec", "fixture": tests and fixtures keep their rank.
    pub wants_tests: bool,
    /// Path-like words of the query (`bench/results`, `retrieval.json`), lowercased: a chunk
    /// whose path holds one keeps its rank.
    pub path_words: Vec<String>,
}

impl QueryIntent {
    pub fn of(query: &str) -> QueryIntent {
        let lowered = query.to_lowercase();
        let wants_tests = lowered
            .split(|c: char| !c.is_alphanumeric())
            .any(|word| TEST_WORDS.contains(&word));
        let path_words = lowered
            .split_whitespace()
            .map(|word| {
                word.trim_matches(|c: char| !(c.is_alphanumeric() || matches!(c, '_' | '/' | '.')))
            })
            .map(|word| word.trim_end_matches('.'))
            .filter(|word| word.len() >= 3 && looks_like_path(word))
            .map(str::to_string)
            .collect();
        QueryIntent {
            wants_tests,
            path_words,
        }
    }

    fn names(&self, path: &str) -> bool {
        if self.path_words.is_empty() {
            return false;
        }
        let path = path.to_lowercase();
        self.path_words
            .iter()
            .any(|word| path.contains(word.as_str()))
    }
}

/// Words by which a query asks for tests or their inputs.
const TEST_WORDS: &[&str] = &[
    "test",
    "tests",
    "tested",
    "testing",
    "unittest",
    "unittests",
    "spec",
    "specs",
    "fixture",
    "fixtures",
    "testdata",
];

/// `a/b`, or a file name with an extension (`retrieval.json`, `chunk.rs`), not `a::b` or `x.y()`.
fn looks_like_path(word: &str) -> bool {
    if word.contains('/') {
        return true;
    }
    match word.rsplit_once('.') {
        Some((stem, extension)) => {
            !stem.is_empty()
                && (1..=5).contains(&extension.len())
                && extension.chars().all(|c| c.is_ascii_alphanumeric())
                && extension.chars().any(|c| c.is_ascii_alphabetic())
        }
        None => false,
    }
}

/// What is known of a chunk's file beyond its path.
#[derive(Clone, Copy, Debug, Default)]
pub struct FileFacts<'a> {
    pub size: u64,
    /// The file's first chunk, where a "generated" header would be.
    pub first_chunk: Option<&'a str>,
}

/// The role of a chunk, by its path, its file and its text.
pub fn role_of(row: &ChunkRow, file: FileFacts<'_>) -> ChunkRole {
    let path = row.path.to_lowercase();
    let (dirs, name) = match path.rsplit_once('/') {
        Some((dirs, name)) => (dirs, name),
        None => ("", path.as_str()),
    };
    let dirs: Vec<&str> = dirs.split('/').filter(|d| !d.is_empty()).collect();
    if generated_name(name)
        || file.first_chunk.is_some_and(generated_header)
        || (row.start_line == 1 && generated_header(&row.text))
        || minified(&row.text)
    {
        return ChunkRole::Generated;
    }
    if let Some(extension) = name.rsplit_once('.').map(|(_, e)| e)
        && DATA_EXTENSIONS.contains(&extension)
        && (file.size > DATA_FILE_BYTES || dirs.contains(&"results"))
    {
        return ChunkRole::Data;
    }
    if name.ends_with(".lock") || name == "package-lock.json" {
        return ChunkRole::Data;
    }
    if dirs.iter().any(|dir| FIXTURE_DIRS.contains(dir)) {
        return ChunkRole::Fixture;
    }
    if dirs.iter().any(|dir| TEST_DIRS.contains(dir))
        || test_file_name(name)
        || dirs.windows(2).any(|pair| pair == ["src", "test"])
        || test_code(row)
    {
        return ChunkRole::Test;
    }
    if row.start_line == 1
        && row.symbol.is_none()
        && !matches!(row.language.as_str(), "text" | "markdown")
    {
        return ChunkRole::ModuleHeader;
    }
    ChunkRole::Implementation
}

const DATA_EXTENSIONS: &[&str] = &[
    "json", "jsonl", "ndjson", "csv", "tsv", "yaml", "yml", "xml", "toml", "svg",
];

const FIXTURE_DIRS: &[&str] = &[
    "fixtures",
    "fixture",
    "__fixtures__",
    "testdata",
    "test-data",
    "test_data",
    "mocks",
    "__mocks__",
    "snapshots",
    "__snapshots__",
];

const TEST_DIRS: &[&str] = &["test", "tests", "__tests__", "spec", "specs", "e2e"];

/// Test files by name: `test_x.py`, `x_test.py`, `x_test.go`, `x.spec.ts`, `x.test.js`,
/// `XTest.java`, `x_spec.rb`, `conftest.py`, Rust's `tests.rs`.
fn test_file_name(name: &str) -> bool {
    let stem = name.split('.').next().unwrap_or(name);
    stem.starts_with("test_")
        || stem.ends_with("_test")
        || stem.ends_with("_tests")
        || stem.ends_with("_spec")
        || stem == "conftest"
        || stem == "tests"
        || name.contains(".spec.")
        || name.contains(".test.")
        || (name.ends_with(".java") || name.ends_with(".kt"))
            && (stem.ends_with("test") || stem.ends_with("tests"))
}

/// Test code inside a source file: Rust's `#[test]` functions and `mod tests`, Python's
/// `test_*` functions and `Test*` classes, Go's `Test*`/`Benchmark*` functions.
fn test_code(row: &ChunkRow) -> bool {
    let in_test_module = row
        .scope
        .iter()
        .chain(row.symbol.as_ref())
        .any(|name| name == "tests" || name == "test");
    let attribute = row.language == "rust"
        && (row.text.contains("#[test]")
            || row.text.contains("#[cfg(test)]")
            || row.text.contains("::test]"));
    let named = row
        .symbol
        .as_deref()
        .is_some_and(|symbol| match row.language.as_str() {
            "python" => symbol.starts_with("test_") || symbol.starts_with("Test"),
            "go" => ["Test", "Benchmark", "Fuzz"].iter().any(|prefix| {
                symbol.starts_with(prefix)
                    && symbol[prefix.len()..]
                        .chars()
                        .next()
                        .is_none_or(|c| c.is_uppercase() || c == '_')
            }),
            _ => false,
        });
    in_test_module || attribute || named
}

/// Generated files by name.
fn generated_name(name: &str) -> bool {
    name.ends_with(".pb.go")
        || name.ends_with("_pb2.py")
        || name.ends_with("_pb2_grpc.py")
        || name.ends_with(".pb.rs")
        || name.ends_with(".min.js")
        || name.ends_with(".min.css")
        || name.ends_with(".g.dart")
        || name.ends_with("_generated.go")
        || name.starts_with("zz_generated")
        || name.contains(".generated.")
}

/// A generator's header in the first lines of a file: `@generated`, `Code generated … DO NOT
/// EDIT.`, "automatically generated … do not edit".
fn generated_header(text: &str) -> bool {
    let head: String = text
        .lines()
        .take(8)
        .collect::<Vec<_>>()
        .join("\n")
        .to_lowercase();
    head.contains("@generated")
        || head.contains("code generated")
        || (head.contains("generated") && head.contains("do not edit"))
}

/// Minified code: lines far longer than anyone writes.
fn minified(text: &str) -> bool {
    let lines = text.lines().count().max(1);
    text.len() > 2000 && text.len() / lines > 400
}

/// Lowers the score of each demoted chunk of `ranked` by its role's weight times `unit` (the
/// ranking's typical spread) and sorts again, best first; ties keep their order.
/// `facts(row)` gives what is known of a row's file.
pub fn demote<'a>(
    ranked: &mut [(i64, f32)],
    rows: &'a std::collections::HashMap<i64, ChunkRow>,
    facts: impl Fn(&'a ChunkRow) -> FileFacts<'a>,
    intent: &QueryIntent,
    weights: DemotionWeights,
    unit: f32,
) {
    if weights == DemotionWeights::NONE || unit <= 0.0 {
        return;
    }
    for (id, score) in ranked.iter_mut() {
        let Some(row) = rows.get(id) else { continue };
        if intent.names(&row.path) {
            continue;
        }
        let role = role_of(row, facts(row));
        if intent.wants_tests && matches!(role, ChunkRole::Test | ChunkRole::Fixture) {
            continue;
        }
        *score -= weights.of(role) * unit;
    }
    ranked.sort_by(|a, b| b.1.total_cmp(&a.1));
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(
        path: &str,
        language: &str,
        start_line: u32,
        symbol: Option<&str>,
        text: &str,
    ) -> ChunkRow {
        ChunkRow {
            id: 1,
            path: path.into(),
            language: language.into(),
            start_line,
            end_line: start_line + text.lines().count() as u32,
            symbol: symbol.map(str::to_string),
            kind: symbol.map(|_| "function".to_string()),
            scope: Vec::new(),
            defined_names: symbol.into_iter().map(str::to_string).collect(),
            text: text.into(),
        }
    }

    fn role(path: &str, language: &str, symbol: Option<&str>, text: &str) -> ChunkRole {
        role_of(&row(path, language, 10, symbol, text), FileFacts::default())
    }

    #[test]
    fn roles_by_path() {
        let f = Some("f");
        assert_eq!(
            role("src/lib.rs", "rust", f, "fn f() {}"),
            ChunkRole::Implementation
        );
        for path in [
            "tests/e2e/search.rs",
            "pkg/test_io.py",
            "pkg/io_test.py",
            "io_test.go",
            "web/app.spec.ts",
            "web/app.test.js",
            "src/test/java/a/IoTest.java",
            "pkg/__tests__/a.js",
            "src/chunk/tests.rs",
            "conftest.py",
        ] {
            assert_eq!(role(path, "text", f, "x"), ChunkRole::Test, "{path}");
        }
        for path in [
            "fixtures/llm/a.rs",
            "pkg/testdata/x.go",
            "src/__mocks__/a.js",
        ] {
            assert_eq!(role(path, "text", f, "x"), ChunkRole::Fixture, "{path}");
        }
        for path in [
            "api/x.pb.go",
            "a_pb2.py",
            "dist/app.min.js",
            "zz_generated.deepcopy.go",
        ] {
            assert_eq!(role(path, "go", f, "x"), ChunkRole::Generated, "{path}");
        }
        assert_eq!(
            role("bench/results/a.json", "text", None, "{}"),
            ChunkRole::Data
        );
        assert_eq!(role("Cargo.lock", "text", None, "x"), ChunkRole::Data);
        // A small config file is not data; a large one is.
        assert_eq!(
            role("tsconfig.json", "text", None, "{}"),
            ChunkRole::Implementation
        );
        let big = FileFacts {
            size: DATA_FILE_BYTES + 1,
            first_chunk: None,
        };
        assert_eq!(
            role_of(&row("data/cities.csv", "text", 3, None, "a,b"), big),
            ChunkRole::Data
        );
        // `latest`/`contest` are not tests.
        assert_eq!(
            role("src/contest.rs", "rust", f, "fn f() {}"),
            ChunkRole::Implementation
        );
    }

    #[test]
    fn roles_by_text() {
        let mut test_fn = row(
            "src/a.rs",
            "rust",
            40,
            Some("splits"),
            "#[test]\nfn splits() {}",
        );
        assert_eq!(role_of(&test_fn, FileFacts::default()), ChunkRole::Test);
        test_fn.text = "fn splits() {}".into();
        test_fn.scope = vec!["tests".into()];
        assert_eq!(role_of(&test_fn, FileFacts::default()), ChunkRole::Test);
        assert_eq!(
            role(
                "a.py",
                "python",
                Some("test_split"),
                "def test_split(): pass"
            ),
            ChunkRole::Test
        );
        assert_eq!(
            role(
                "a.go",
                "go",
                Some("TestSplit"),
                "func TestSplit(t *testing.T) {}"
            ),
            ChunkRole::Test
        );
        assert_eq!(
            role("a.go", "go", Some("Testify"), "func Testify() {}"),
            ChunkRole::Implementation
        );
        let header = row(
            "src/chunk.rs",
            "rust",
            1,
            None,
            "//! Splitting files.\nuse a::b;",
        );
        assert_eq!(
            role_of(&header, FileFacts::default()),
            ChunkRole::ModuleHeader
        );
        let readme = row("README.md", "markdown", 1, None, "# lode");
        assert_eq!(
            role_of(&readme, FileFacts::default()),
            ChunkRole::Implementation
        );
        let later = row("api/x.go", "go", 30, Some("F"), "func F() {}");
        let generated = FileFacts {
            size: 100,
            first_chunk: Some("// Code generated by protoc-gen-go. DO NOT EDIT.\npackage api"),
        };
        assert_eq!(role_of(&later, generated), ChunkRole::Generated);
        let long_line = format!("var a={};", "x".repeat(3000));
        assert_eq!(
            role("app.js", "javascript", None, &long_line),
            ChunkRole::Generated
        );
    }

    #[test]
    fn intents() {
        assert!(QueryIntent::of("test for the chunker").wants_tests);
        assert!(QueryIntent::of("Tests of split_by_lines").wants_tests);
        assert!(!QueryIntent::of("how is a file split into chunks").wants_tests);
        assert!(!QueryIntent::of("latest contest results").wants_tests);
        let named = QueryIntent::of("what is in bench/results/retrieval.json?");
        assert_eq!(named.path_words, ["bench/results/retrieval.json"]);
        assert!(named.names("bench/results/retrieval.json"));
        assert!(QueryIntent::of("queries in retrieval.json").names("bench/results/retrieval.json"));
        assert!(
            QueryIntent::of("where is HashMap::new called")
                .path_words
                .is_empty()
        );
        assert!(
            QueryIntent::of("what does parse() return")
                .path_words
                .is_empty()
        );
    }
}
