//! `lode_syntax::live::Syntax` driven the way the language server drives it: keystrokes as LSP
//! content changes applied to a [`Document`], the tags compared with a full extraction.

use crate::document::Document;
use lode_syntax::live::{Syntax, Update};
use lode_syntax::{Language, extract_tags};
use tower_lsp_server::lsp_types::{Position, Range as LspRange, TextDocumentContentChangeEvent};

/// A small deterministic generator (no dependency needed for a test's random edits).
struct Lcg(u64);
impl Lcg {
    fn next(&mut self, bound: usize) -> usize {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        ((self.0 >> 33) as usize) % bound.max(1)
    }
}

const RUST: &str = r#"//! A module.
use std::fmt;

/// A point.
pub struct Point { x: i32, y: i32 }

impl Point {
pub fn norm(&self) -> i32 {
    let squared = self.x * self.x + self.y * self.y;
    helper(squared)
}

fn zero() -> Self { Point { x: 0, y: 0 } }
}

impl fmt::Display for Point {
fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
    write!(f, "({}, {})", self.x, self.y)
}
}

mod inner {
pub fn deep() -> u32 { super::helper(2) as u32 }
pub struct Hidden;
}

fn helper(value: i32) -> i32 { value }

extern "C" {
pub fn c_call(x: i32) -> i32;
}
pub const LIMIT: i32 = 10; pub const OTHER: i32 = 11;
"#;

const PYTHON: &str = r#"import os

class Shape:
def area(self):
    return 0

def name(self):
    return helper(self)

def helper(shape):
return os.path.join("a", str(shape))

class Circle(Shape):
def area(self):
    return 3.14 * self.r * self.r
"#;

const TYPESCRIPT: &str = r#"export interface Shape { area(): number }
export class Circle implements Shape {
  constructor(private r: number) {}
  area(): number { return helper(this.r) }
}
function helper(r: number): number { return r * r }
"#;

fn change_at(
    document: &Document,
    start: usize,
    end: usize,
    text: &str,
) -> TextDocumentContentChangeEvent {
    TextDocumentContentChangeEvent {
        range: Some(LspRange::new(
            document.position_of(start),
            document.position_of(end),
        )),
        range_length: None,
        text: text.to_string(),
    }
}

fn char_floor(text: &str, mut at: usize) -> usize {
    at = at.min(text.len());
    while !text.is_char_boundary(at) {
        at -= 1;
    }
    at
}

/// One keystroke: replaces `start..end` of the document with `text`, and follows it.
fn keystroke(
    document: &mut Document,
    syntax: &mut Syntax,
    start: usize,
    end: usize,
    text: &str,
) -> Update {
    let change = change_at(document, start, end, text);
    let version = document.version() + 1;
    let edits = document.apply_changes(&[change], version).unwrap();
    syntax
        .edit(&edits, document.text(), document.line_starts())
        .unwrap()
}

/// Edits as a user makes them, one keystroke at a time: a line deleted and typed again, a
/// new item typed at the start of a line, a typo and its backspace, random junk. After
/// every keystroke the kept-current tags must equal a whole read of the kept tree (when it
/// is not behind), and, when the text has no syntax errors, a fresh parse's. (With errors,
/// tree-sitter's recovery may differ between an incremental and a fresh parse, so there is
/// no single right answer to compare with.)
/// Returns how often each way of catching up ran, and how many states were compared.
fn follows_typing(
    language: Language,
    source: &str,
    snippet: &str,
    seed: u64,
    actions: usize,
) -> ([usize; 3], usize) {
    let mut random = Lcg(seed);
    let mut document = Document::new(source.to_string(), 1, "");
    let mut syntax = Syntax::parse(language, source).unwrap().unwrap();
    let mut paths = [0usize; 3];
    let mut compared = 0;
    for action in 0..actions {
        let text = document.text().to_string();
        let starts = document.line_starts().to_vec();
        let line = random.next(starts.len());
        let line_start = starts[line];
        let line_end = starts.get(line + 1).copied().unwrap_or(text.len());
        let mut strokes: Vec<(usize, usize, String)> = Vec::new();
        match random.next(4) {
            0 => {
                // Delete the line, then type it again.
                let content = text[line_start..line_end].to_string();
                strokes.push((line_start, line_end, String::new()));
                let mut at = line_start;
                for ch in content.chars() {
                    strokes.push((at, at, ch.to_string()));
                    at += ch.len_utf8();
                }
            }
            1 => {
                let mut at = line_start;
                for ch in snippet.replace('N', &action.to_string()).chars() {
                    strokes.push((at, at, ch.to_string()));
                    at += ch.len_utf8();
                }
            }
            2 => {
                let at = char_floor(&text, line_start + random.next(line_end - line_start + 1));
                strokes.push((at, at, "q".into()));
                strokes.push((at, at + 1, String::new()));
            }
            _ => {
                const JUNK: [&str; 6] = ["{", "}", "(", "\"", "\n", "é"];
                let at = char_floor(&text, random.next(text.len() + 1));
                strokes.push((at, at, JUNK[random.next(JUNK.len())].into()));
            }
        }
        for (start, end, typed) in strokes {
            let how = keystroke(&mut document, &mut syntax, start, end, &typed);
            paths[how as usize] += 1;
            let text = document.text();
            // Region and whole reads must equal a whole read of the same tree, errors or
            // not.
            if let Some(tree) = syntax.current_tree() {
                let expected = extract_tags(language, tree, text).unwrap();
                assert_eq!(
                    syntax.tags(),
                    &expected,
                    "action {action} ({how:?}) of seed {seed} diverged from its tree; text now:\n{text}"
                );
                compared += 1;
            }
            // Without syntax errors, also equal a fresh parse (for Python, tree-sitter's
            // incremental parse may end a block before or after trailing blanks where a
            // fresh one does not: compare with its own tree only).
            let fresh = lode_syntax::parse_tree(language, text).unwrap().unwrap();
            if fresh.root_node().has_error() || language == Language::Python {
                continue;
            }
            compared += 1;
            let expected = extract_tags(language, &fresh, text).unwrap();
            assert_eq!(
                syntax.tags(),
                &expected,
                "action {action} ({how:?}) of seed {seed} diverged from a fresh parse; text now:\n{text}"
            );
        }
    }
    (paths, compared)
}

#[test]
fn rust_tags_follow_typing_exactly() {
    let mut used = [0; 3];
    let mut compared = 0;
    for seed in 1..=16 {
        let (paths, checked) = follows_typing(Language::Rust, RUST, "fn typed_N() {}\n", seed, 40);
        compared += checked;
        for (total, count) in used.iter_mut().zip(paths) {
            *total += count;
        }
    }
    // Every way of catching up ran, and many states were compared.
    assert!(used.iter().all(|&count| count > 0), "{used:?}");
    assert!(compared > 100, "{compared}");
}

#[test]
fn python_tags_follow_typing_exactly() {
    let mut compared = 0;
    for seed in 1..=10 {
        compared += follows_typing(
            Language::Python,
            PYTHON,
            "def typed_N():\n    pass\n",
            seed,
            40,
        )
        .1;
    }
    assert!(compared > 100, "{compared}");
}

#[test]
fn typescript_tags_follow_typing_exactly() {
    let mut compared = 0;
    for seed in 1..=10 {
        compared += follows_typing(
            Language::TypeScript,
            TYPESCRIPT,
            "function typed_N() {}\n",
            seed,
            40,
        )
        .1;
    }
    assert!(compared > 100, "{compared}");
}

#[test]
fn a_keystroke_in_a_top_level_item_reads_only_that_item() {
    let mut document = Document::new(RUST.to_string(), 1, "rust");
    let mut syntax = Syntax::parse(Language::Rust, RUST).unwrap().unwrap();
    let at = RUST.find("value }").unwrap();
    let edits = document
        .apply_changes(&[change_at(&document, at, at, "1 + ")], 2)
        .unwrap();
    assert_eq!(
        syntax
            .edit(&edits, document.text(), document.line_starts())
            .unwrap(),
        Update::Standalone
    );
    // A keystroke inside a method of a larger impl block.
    let at = document.text().find("helper(squared)").unwrap();
    let edits = document
        .apply_changes(&[change_at(&document, at, at, "2 * ")], 3)
        .unwrap();
    syntax
        .edit(&edits, document.text(), document.line_starts())
        .unwrap();
    let norm = syntax
        .tags()
        .definitions
        .iter()
        .find(|def| def.name == "norm")
        .unwrap();
    assert_eq!(norm.scope, ["impl Point"]);
    assert_eq!(norm.kind, lode_syntax::DefKind::Method);
    let _ = Position::new(0, 0);
}

/// The tags of a fresh parse of `text`: what any live update must come to.
fn fresh_tags(language: Language, text: &str) -> lode_syntax::FileTags {
    let fresh = lode_syntax::parse_tree(language, text).unwrap().unwrap();
    extract_tags(language, &fresh, text).unwrap()
}

/// A grammar sample of the repository (`grammars/<relative>`).
fn grammar_sample(relative: &str) -> String {
    let path = format!("{}/../../grammars/{relative}", env!("CARGO_MANIFEST_DIR"));
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("reading {path}: {e}"))
}

/// Java and C# files are one class: a keystroke between its members (a Javadoc, a blank line)
/// reads only the lines between the members around it, and the tags stay those of a whole
/// read. (Random edits as in `follows_typing` are not run on Java and C#: junk typed into a
/// `package` line, or a line break added at the end of a file under a file-scoped namespace,
/// leave the file-scope definition stale, with or without gap reads: a known gap.)
#[test]
fn a_keystroke_between_the_members_of_a_file_sized_class_reads_only_the_gap() {
    let source = grammar_sample("java/sample.java");
    let mut document = Document::new(source.clone(), 1, "java");
    let mut syntax = Syntax::parse(Language::Java, &source).unwrap().unwrap();
    let at = source.find("/** How often lookups hit so far. */").unwrap() + 4;
    let how = keystroke(&mut document, &mut syntax, at, at, "x");
    assert_eq!(how, Update::Region);
    assert_eq!(syntax.tags(), &fresh_tags(Language::Java, document.text()));
    // A new method typed between two others is found inside the class.
    let comment = document
        .text()
        .find("How often lookups hit so far")
        .unwrap();
    let mut at = document.text()[..comment].rfind('\n').unwrap() + 1;
    let mut ways = Vec::new();
    for ch in "    void typed() { evict(null); }\n".chars() {
        ways.push(keystroke(
            &mut document,
            &mut syntax,
            at,
            at,
            &ch.to_string(),
        ));
        at += ch.len_utf8();
    }
    // A blank typed before the method is read alone; half-typed, `void ty` swallows the
    // method below it, and the tree recovers when it closes (whole reads).
    assert_eq!(ways[0], Update::Region, "{ways:?}");
    let comment = document.text().find("lookups hit so far").unwrap();
    assert_eq!(
        keystroke(&mut document, &mut syntax, comment, comment, "all "),
        Update::Region
    );
    let typed = syntax
        .tags()
        .definitions
        .iter()
        .find(|def| def.name == "typed")
        .expect("the typed method");
    assert_eq!(typed.kind, lode_syntax::DefKind::Method);
    assert_eq!(typed.scope.last().map(String::as_str), Some("LruCache"));

    // The same as a whole read of a fresh parse.
    assert_eq!(syntax.tags(), &fresh_tags(Language::Java, document.text()));
}
