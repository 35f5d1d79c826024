//! Naming symbols and editing by them on real tree-sitter parses: two Python classes sharing a
//! method name, two Rust impl blocks with the same method, TypeScript exports and decorators,
//! Go methods by receiver; every edit changes the named definition and nothing else.

mod common;

use lode_syntax::{
    Language, SymbolEdit, SymbolError, SymbolName, SymbolSpan, file_symbols, locate, splice,
};

const SHAPES_PY: &str = r#"import math


class Circle:
    """A circle."""

    def __init__(self, r):
        self.r = r

    # The area, in square units.
    @property
    def area(self):
        return math.pi * self.r ** 2


class Square:
    def __init__(self, side):
        self.side = side

    def area(self):
        return self.side ** 2


def area(shape):
    return shape.area
"#;

const LIB_RS: &str = r#"//! A registry.

pub struct Registry {
    names: Vec<String>,
}

impl Registry {
    /// Greets everyone.
    #[inline]
    pub fn greet_all(&self) -> String {
        self.names.join(", ")
    }
}

pub trait Greeter {
    fn greet_all(&self) -> String;
}

impl Greeter for Registry {
    fn greet_all(&self) -> String {
        String::new()
    }
}

pub fn add(a: u32, b: u32) -> u32 {
    a + b
}
"#;

fn find(language: Language, source: &str, name: &str) -> Result<SymbolSpan, SymbolError> {
    let name = SymbolName::parse(name).unwrap();
    locate(language, source, &name.file, &name.target)
}

fn edit(language: Language, source: &str, name: &str, how: SymbolEdit, text: &str) -> String {
    let span = find(language, source, name).unwrap_or_else(|error| panic!("{name}: {error}"));
    splice(language, source, &span, how, text).unwrap().text
}

/// A static function declared at the top of its file and defined below is named by its
/// definition: the prototype does not make the name ambiguous (grammars/c/sample.c).
#[test]
fn a_c_forward_declaration_yields_to_its_definition() {
    let path = common::grammars_root().join("c/sample.c");
    let source = std::fs::read_to_string(&path).unwrap();
    let span = find(Language::C, &source, "sample.c:grow").unwrap();
    assert!(
        source[span.definition.clone()].contains("realloc"),
        "{}",
        &source[span.definition.clone()]
    );
    // The prototype alone is still found where nothing else has the name (a header).
    let header = std::fs::read_to_string(common::grammars_root().join("c/sample.h")).unwrap();
    let span = find(Language::C, &header, "sample.h:ring_push").unwrap();
    assert!(header[span.definition.clone()].starts_with("ring_status ring_push("));
}

#[test]
fn python_methods_are_named_by_their_class() {
    let span = find(Language::Python, SHAPES_PY, "src/shapes.py:Circle/area").unwrap();
    assert_eq!(span.path, "Circle/area");
    // The comment and the decorator are part of the full range, not of the definition.
    assert_eq!(
        &SHAPES_PY[span.full.clone()],
        "# The area, in square units.\n    @property\n    def area(self):\n        return math.pi * self.r ** 2"
    );
    assert!(SHAPES_PY[span.definition.clone()].starts_with("def area(self):"));
    assert_eq!(span.definition_lines.start, 12);
    assert_eq!(span.definition_lines.end, 13);
    assert_eq!(span.full_lines.start, 10);
    assert_eq!(
        &SHAPES_PY[span.body.clone().unwrap()],
        "return math.pi * self.r ** 2"
    );
    assert_eq!(span.indent, "    ");

    let square = find(Language::Python, SHAPES_PY, "src/shapes.py:Square/area").unwrap();
    assert_eq!(square.definition_lines.start, 20);
    // A path from the top of the file wins: `area` is the module-level function.
    let top = find(Language::Python, SHAPES_PY, "src/shapes.py:area").unwrap();
    assert_eq!(top.path, "area");
    assert_eq!(top.definition_lines.start, 24);
    // The end of a path matches when only one definition has it.
    let init = find(Language::Python, SHAPES_PY, "src/shapes.py:__init__");
    let Err(SymbolError::Ambiguous { candidates, .. }) = init else {
        panic!("{init:?}");
    };
    let names: Vec<&str> = candidates.iter().map(|c| c.name.as_str()).collect();
    assert_eq!(
        names,
        [
            "src/shapes.py:Circle/__init__",
            "src/shapes.py:Square/__init__"
        ]
    );
}

#[test]
fn replacing_a_python_method_changes_only_it() {
    let new = edit(
        Language::Python,
        SHAPES_PY,
        "src/shapes.py:Square/area",
        SymbolEdit::ReplaceDefinition,
        "def area(self):\n    # Squared.\n    return self.side * self.side\n",
    );
    let expected = SHAPES_PY.replace(
        "    def area(self):\n        return self.side ** 2\n",
        "    def area(self):\n        # Squared.\n        return self.side * self.side\n",
    );
    assert_eq!(new, expected);
    assert!(new.contains("return math.pi * self.r ** 2"));

    // Text as it appears in the file (indented) gives the same result.
    let indented = edit(
        Language::Python,
        SHAPES_PY,
        "src/shapes.py:Square/area",
        SymbolEdit::ReplaceDefinition,
        "    def area(self):\n        # Squared.\n        return self.side * self.side",
    );
    assert_eq!(indented, expected);

    // The decorator and comment above Circle.area stay when its definition is replaced.
    let circle = edit(
        Language::Python,
        SHAPES_PY,
        "src/shapes.py:Circle/area",
        SymbolEdit::ReplaceDefinition,
        "def area(self):\n    return 3 * self.r ** 2",
    );
    assert!(
        circle.contains(
            "    # The area, in square units.\n    @property\n    def area(self):\n        return 3 * self.r ** 2\n\n\nclass Square:"
        ),
        "{circle}"
    );
}

#[test]
fn inserting_next_to_python_symbols() {
    let after = edit(
        Language::Python,
        SHAPES_PY,
        "src/shapes.py:Circle/area",
        SymbolEdit::InsertAfter,
        "def perimeter(self):\n    return 2 * math.pi * self.r",
    );
    assert!(
        after.contains(
            "        return math.pi * self.r ** 2\n\n    def perimeter(self):\n        return 2 * math.pi * self.r\n\n\nclass Square:"
        ),
        "{after}"
    );
    let before = edit(
        Language::Python,
        SHAPES_PY,
        "src/shapes.py:Circle/area",
        SymbolEdit::InsertBefore,
        "def diameter(self):\n    return 2 * self.r",
    );
    // Above the comment and decorator of `area`, one blank line apart.
    assert!(
        before.contains(
            "        self.r = r\n\n    def diameter(self):\n        return 2 * self.r\n\n    # The area, in square units.\n    @property"
        ),
        "{before}"
    );
    // Top level: two blank lines (PEP 8).
    let top = edit(
        Language::Python,
        SHAPES_PY,
        "src/shapes.py:/area",
        SymbolEdit::InsertAfter,
        "def volume(shape):\n    return 0\n",
    );
    assert!(
        top.ends_with("    return shape.area\n\n\ndef volume(shape):\n    return 0\n"),
        "{top}"
    );
}

#[test]
fn rust_impl_blocks_with_the_same_method_are_ambiguous() {
    let error = find(Language::Rust, LIB_RS, "src/lib.rs:Registry/greet_all").unwrap_err();
    let SymbolError::Ambiguous { candidates, .. } = &error else {
        panic!("{error:?}");
    };
    assert_eq!(candidates.len(), 2);
    // Each candidate is named so that it resolves to itself.
    assert_eq!(candidates[0].name, "src/lib.rs:impl Registry/greet_all");
    assert_eq!(
        candidates[1].name,
        "src/lib.rs:impl Greeter for Registry/greet_all"
    );
    assert_eq!(candidates[0].lines.start, 10);
    assert_eq!(candidates[1].lines.start, 20);
    let message = error.to_string();
    assert!(message.contains("lines 10-12"), "{message}");
    assert!(message.contains("src/lib.rs:20:5"), "{message}");

    // An impl's label names it, and so one of the two methods.
    let by_label = find(
        Language::Rust,
        LIB_RS,
        "src/lib.rs:impl Greeter for Registry/greet_all",
    )
    .unwrap();
    assert_eq!(by_label.definition_lines.start, 20);
    // A position inside the method names it.
    let by_position = find(Language::Rust, LIB_RS, "src/lib.rs:11:9").unwrap();
    assert_eq!(by_position.path, "Registry/greet_all");
    assert_eq!(by_position.definition_lines.start, 10);
    // Its doc comment and attribute belong to its full range.
    assert_eq!(by_position.full_lines.start, 8);
    // `Registry` is the struct, not the impls named after it.
    let registry = find(Language::Rust, LIB_RS, "src/lib.rs:Registry").unwrap();
    assert_eq!(registry.kind.name(), "struct");
    let add = find(Language::Rust, LIB_RS, "src/lib.rs:add").unwrap();
    assert_eq!(add.definition_lines.start, 25);
}

#[test]
fn replacing_and_inserting_in_rust_keep_docs_and_neighbours() {
    let new = edit(
        Language::Rust,
        LIB_RS,
        "src/lib.rs:impl Registry/greet_all",
        SymbolEdit::ReplaceDefinition,
        "pub fn greet_all(&self) -> String {\n    format!(\"hello {}\", self.names.join(\", \"))\n}",
    );
    let expected = LIB_RS.replace(
        "    pub fn greet_all(&self) -> String {\n        self.names.join(\", \")\n    }",
        "    pub fn greet_all(&self) -> String {\n        format!(\"hello {}\", self.names.join(\", \"))\n    }",
    );
    assert_eq!(new, expected);
    assert!(new.contains("    /// Greets everyone.\n    #[inline]\n    pub fn greet_all"));

    let after = edit(
        Language::Rust,
        LIB_RS,
        "src/lib.rs:add",
        SymbolEdit::InsertAfter,
        "pub fn sub(a: u32, b: u32) -> u32 {\n    a - b\n}\n",
    );
    assert!(after.ends_with("    a + b\n}\n\npub fn sub(a: u32, b: u32) -> u32 {\n    a - b\n}\n"));
    let before = edit(
        Language::Rust,
        LIB_RS,
        "src/lib.rs:10:5",
        SymbolEdit::InsertBefore,
        "/// Counts.\npub fn count(&self) -> usize {\n    self.names.len()\n}",
    );
    assert!(
        before.contains(
            "impl Registry {\n    /// Counts.\n    pub fn count(&self) -> usize {\n        self.names.len()\n    }\n\n    /// Greets everyone.\n"
        ),
        "{before}"
    );
}

#[test]
fn unknown_names_list_what_the_file_has() {
    let error = find(
        Language::Python,
        SHAPES_PY,
        "src/shapes.py:Circle/perimeter",
    )
    .unwrap_err();
    assert!(matches!(error, SymbolError::NotFound { .. }), "{error:?}");
    let message = error.to_string();
    assert!(
        message.contains("no definition src/shapes.py:Circle/perimeter"),
        "{message}"
    );
    assert!(message.contains("src/shapes.py:Circle"), "{message}");
    // A similar name is offered first.
    let error = find(Language::Python, SHAPES_PY, "src/shapes.py:Circle/Area").unwrap_err();
    let message = error.to_string();
    assert!(message.contains("src/shapes.py:Circle/area ("), "{message}");
    // `/Circle/area` is absolute; `/area/x` matches nothing.
    assert!(find(Language::Python, SHAPES_PY, "src/shapes.py:/Square/area").is_ok());
    assert!(find(Language::Python, SHAPES_PY, "src/shapes.py:/area/x").is_err());
    // Positions outside the file or outside every definition.
    let error = find(Language::Python, SHAPES_PY, "src/shapes.py:999:1").unwrap_err();
    assert!(error.to_string().contains("past the end"), "{error}");
    let error = find(Language::Python, SHAPES_PY, "src/shapes.py:1:99").unwrap_err();
    assert!(error.to_string().contains("only 11 characters"), "{error}");
    let error = find(Language::Python, SHAPES_PY, "src/shapes.py:2:1").unwrap_err();
    assert!(
        matches!(error, SymbolError::NoDefinitionAt { .. }),
        "{error:?}"
    );
    // Text files are not parsed.
    let error = find(Language::Text, "hello", "README.md:hello").unwrap_err();
    assert!(matches!(error, SymbolError::Unsupported { .. }));
}

#[test]
fn typescript_exports_decorators_and_overloads() {
    let source = r#"/** Parses. */
export function parse(text: string): number;
export function parse(text: number): number;
export function parse(text: any): number {
  return Number(text);
}

export class Shape {
  @log()
  area(): number {
    return 0;
  }
}

export const double = (x: number) => x * 2;
"#;
    let error = find(Language::TypeScript, source, "src/a.ts:parse").unwrap_err();
    let SymbolError::Ambiguous { candidates, .. } = error else {
        panic!("{error:?}");
    };
    assert_eq!(candidates.len(), 3);
    let area = find(Language::TypeScript, source, "src/a.ts:Shape/area").unwrap();
    assert!(source[area.definition.clone()].starts_with("area(): number {"));
    assert!(source[area.full.clone()].starts_with("@log()"));
    let new = edit(
        Language::TypeScript,
        source,
        "src/a.ts:double",
        SymbolEdit::ReplaceDefinition,
        "export const double = (x: number) => x + x;",
    );
    assert_eq!(
        new,
        source.replace("x * 2;", "x + x;"),
        "the whole `export const` statement is the definition"
    );
    let class = find(Language::TypeScript, source, "src/a.ts:Shape").unwrap();
    assert!(source[class.definition.clone()].starts_with("export class Shape {"));
}

#[test]
fn go_methods_are_named_by_their_receiver() {
    let source = "package main\n\ntype Registry struct {\n\tnames []string\n}\n\n// Greet greets.\nfunc (r *Registry) Greet() string {\n\treturn \"hi\"\n}\n\nfunc Greet() string {\n\treturn \"\"\n}\n";
    let method = find(Language::Go, source, "main.go:Registry/Greet").unwrap();
    assert_eq!(method.path, "Registry/Greet");
    assert_eq!(method.full_lines.start, 7);
    assert_eq!(method.definition_lines.start, 8);
    let function = find(Language::Go, source, "main.go:Greet").unwrap();
    assert_eq!(function.definition_lines.start, 12);
    let new = edit(
        Language::Go,
        source,
        "main.go:Registry/Greet",
        SymbolEdit::ReplaceDefinition,
        "func (r *Registry) Greet() string {\n\treturn \"hello\"\n}",
    );
    assert_eq!(new, source.replace("\treturn \"hi\"", "\treturn \"hello\""));
    let registry = find(Language::Go, source, "main.go:Registry").unwrap();
    assert!(source[registry.definition.clone()].starts_with("type Registry struct"));
}

#[test]
fn crlf_files_keep_their_line_endings() {
    let source = SHAPES_PY.replace('\n', "\r\n");
    let new = edit(
        Language::Python,
        &source,
        "src/shapes.py:Square/area",
        SymbolEdit::ReplaceDefinition,
        "def area(self):\n    return 4\n",
    );
    assert_eq!(
        new,
        source.replace(
            "def area(self):\r\n        return self.side ** 2",
            "def area(self):\r\n        return 4"
        )
    );
}

#[test]
fn every_definition_has_consistent_ranges() {
    for (language, source) in [(Language::Python, SHAPES_PY), (Language::Rust, LIB_RS)] {
        for span in file_symbols(language, source).unwrap() {
            assert!(span.full.start <= span.definition.start, "{span:?}");
            assert!(span.definition.end <= span.full.end, "{span:?}");
            if let Some(body) = &span.body {
                assert!(span.definition.start < body.start && body.end <= span.definition.end);
            }
        }
    }
}

#[test]
fn a_replacement_that_starts_with_docs_or_decorators_does_not_double_them() {
    // The decorator is given again: it replaces the one above, the comment above it stays.
    let new = edit(
        Language::Python,
        SHAPES_PY,
        "src/shapes.py:Circle/area",
        SymbolEdit::ReplaceDefinition,
        "@property\ndef area(self):\n    return 3",
    );
    assert!(
        new.contains(
            "    # The area, in square units.\n    @property\n    def area(self):\n        return 3\n"
        ),
        "{new}"
    );
    assert_eq!(new.matches("@property").count(), 1, "{new}");
    // New docs: everything above the signature is replaced by what the text brings.
    let new = edit(
        Language::Rust,
        LIB_RS,
        "src/lib.rs:impl Registry/greet_all",
        SymbolEdit::ReplaceDefinition,
        "/// Greets all of them.\n#[inline]\npub fn greet_all(&self) -> String {\n    String::new()\n}",
    );
    assert!(
        new.contains(
            "impl Registry {\n    /// Greets all of them.\n    #[inline]\n    pub fn greet_all(&self) -> String {\n        String::new()\n    }\n}"
        ),
        "{new}"
    );
    assert_eq!(new.matches("#[inline]").count(), 1);
    assert!(!new.contains("Greets everyone"));
}

#[test]
fn an_edit_that_breaks_the_syntax_is_flagged() {
    let name = SymbolName::parse("src/shapes.py:Square/area").unwrap();
    let span = locate(Language::Python, SHAPES_PY, &name.file, &name.target).unwrap();
    let good = splice(
        Language::Python,
        SHAPES_PY,
        &span,
        SymbolEdit::ReplaceDefinition,
        "def area(self):\n    return 4",
    )
    .unwrap();
    assert_eq!(good.syntax_error, None);
    let broken = splice(
        Language::Python,
        SHAPES_PY,
        &span,
        SymbolEdit::ReplaceDefinition,
        "def area(self:\n    return (4",
    )
    .unwrap();
    assert!(
        broken.syntax_error.is_some_and(|line| line >= 20),
        "{broken:?}"
    );
}

/// Every definition of the per-language samples (`grammars/<dir>/sample*`) is found again by the
/// position of its first character and by its name (or the name is reported ambiguous), and
/// every edit at it splices without a panic.
#[test]
fn every_definition_of_the_language_samples_can_be_named_and_edited() {
    let mut seen = 0;
    for sample in common::samples()
        .into_iter()
        .filter(|sample| sample.language.is_code())
    {
        {
            let (path, language) = (&sample.path, sample.language);
            let source = sample.source();
            let spans = file_symbols(language, &source).unwrap();
            assert!(!spans.is_empty(), "{}", path.display());
            for span in &spans {
                seen += 1;
                let at = format!("f:{}:{}", span.line, span.column);
                let found = find(language, &source, &at).unwrap();
                assert!(
                    found.full.start <= span.definition.start
                        && span.definition.start < found.full.end,
                    "{at} in {}: {found:?} does not hold {span:?}",
                    path.display()
                );
                if let Ok(name) = SymbolName::parse(&format!("f:{}", span.path)) {
                    match locate(language, &source, "f", &name.target) {
                        Ok(found) => assert_eq!(found.path, span.path),
                        Err(error) => assert!(
                            matches!(error, SymbolError::Ambiguous { .. }),
                            "{}: {error}",
                            span.path
                        ),
                    }
                }
                for how in [
                    SymbolEdit::ReplaceDefinition,
                    SymbolEdit::InsertBefore,
                    SymbolEdit::InsertAfter,
                ] {
                    let spliced = splice(language, &source, span, how, "é = 1\n  ü\n").unwrap();
                    assert!(spliced.text.contains("é = 1"));
                }
            }
        }
    }
    assert!(seen > 100, "{seen} definitions");
}
