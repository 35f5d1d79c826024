//! Definitions and references in one source file, found by the language's tags query.
//!
//! Query files (`grammars/<language>/tags.scm`) follow one capture convention:
//! - `@definition.<kind>` on the whole definition node and `@name` on its name; `<kind>` is one of
//!   the [`DefKind`] names. An impl block's `@name` is the implementing type; its scope label
//!   (`impl Trait for Type`) is read from its first line.
//! - `@reference.<kind>` on the referring node and `@name` on the referenced name; `<kind>` is one of
//!   the [`RefKind`] names.
//! - A name node that declares something is never a reference: a reference whose `@name` node is
//!   also a definition's `@name` node, or is captured as `@not_a_reference`, is dropped. This lets
//!   a query capture a node type broadly (every type name) and list only the exceptions.
//! - `@comment` on every comment node (not on the parts inside one). Reading a definition in
//!   full (`symbol::locate`) takes the doc comments above it from these; capturing them here
//!   saves a second walk over the whole tree.
//!
//! - `@scope.file` on a definition node (with its `@definition.module`) makes it enclose the rest
//!   of the file, up to the next such definition: Java's `package`, C#'s `namespace X;`.
//! - `@qualifier` on the qualifying part of a definition's name (C++'s `Shape` in
//!   `double Shape::area()`) appends its parts, split at `::` and `.`, to the definition's scope.
//!
//! Scope chains come from nesting: a tag's scope is the chain of definitions that enclose it.

use std::sync::OnceLock;

use serde::{Deserialize, Serialize};
use streaming_iterator::StreamingIterator;
use tree_sitter::{Node, Query, QueryCursor, Tree};

use crate::error::SyntaxError;
use crate::language::Language;

/// What kind of thing a definition defines.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DefKind {
    Function,
    Method,
    Class,
    Struct,
    Enum,
    Trait,
    Interface,
    Impl,
    Module,
    Constant,
    Static,
    Type,
    Macro,
    Field,
    Variable,
    /// A Java or C# record, a Kotlin data class.
    Record,
    /// A Swift protocol.
    Protocol,
    /// A heading of a document (Markdown), holding what follows it up to the next heading of
    /// its level.
    Section,
}

impl DefKind {
    /// Every kind, in the order used for stable numbering.
    pub const ALL: [DefKind; 18] = [
        DefKind::Function,
        DefKind::Method,
        DefKind::Class,
        DefKind::Struct,
        DefKind::Enum,
        DefKind::Trait,
        DefKind::Interface,
        DefKind::Impl,
        DefKind::Module,
        DefKind::Constant,
        DefKind::Static,
        DefKind::Type,
        DefKind::Macro,
        DefKind::Field,
        DefKind::Variable,
        DefKind::Record,
        DefKind::Protocol,
        DefKind::Section,
    ];

    /// The name used in query captures, in the index and in JSON output.
    pub fn name(self) -> &'static str {
        match self {
            DefKind::Function => "function",
            DefKind::Method => "method",
            DefKind::Class => "class",
            DefKind::Struct => "struct",
            DefKind::Enum => "enum",
            DefKind::Trait => "trait",
            DefKind::Interface => "interface",
            DefKind::Impl => "impl",
            DefKind::Module => "module",
            DefKind::Constant => "constant",
            DefKind::Static => "static",
            DefKind::Type => "type",
            DefKind::Macro => "macro",
            DefKind::Field => "field",
            DefKind::Variable => "variable",
            DefKind::Record => "record",
            DefKind::Protocol => "protocol",
            DefKind::Section => "section",
        }
    }

    /// The inverse of [`DefKind::name`].
    pub fn from_name(name: &str) -> Option<DefKind> {
        DefKind::ALL.into_iter().find(|kind| kind.name() == name)
    }

    /// Kinds whose members are methods rather than free functions.
    fn holds_methods(self) -> bool {
        matches!(
            self,
            DefKind::Impl
                | DefKind::Trait
                | DefKind::Class
                | DefKind::Interface
                | DefKind::Struct
                | DefKind::Enum
                | DefKind::Record
                | DefKind::Protocol
        )
    }
}

/// How a reference uses a name.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RefKind {
    Call,
    MethodCall,
    Type,
    Macro,
    Import,
}

impl RefKind {
    /// Every kind, in the order used for stable numbering.
    pub const ALL: [RefKind; 5] = [
        RefKind::Call,
        RefKind::MethodCall,
        RefKind::Type,
        RefKind::Macro,
        RefKind::Import,
    ];

    /// The name used in query captures, in the index and in JSON output.
    pub fn name(self) -> &'static str {
        match self {
            RefKind::Call => "call",
            RefKind::MethodCall => "method_call",
            RefKind::Type => "type",
            RefKind::Macro => "macro",
            RefKind::Import => "import",
        }
    }

    /// The inverse of [`RefKind::name`].
    pub fn from_name(name: &str) -> Option<RefKind> {
        RefKind::ALL.into_iter().find(|kind| kind.name() == name)
    }
}

/// A definition: something with a name that other code can refer to.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Definition {
    pub name: String,
    pub kind: DefKind,
    /// 1-based, inclusive.
    pub start_line: u32,
    /// 1-based, inclusive.
    pub end_line: u32,
    pub start_byte: usize,
    pub end_byte: usize,
    /// Labels of the enclosing definitions, outermost first (e.g. `["index", "impl Index"]`).
    pub scope: Vec<String>,
    /// The definition's first source line, trimmed: what a repo map shows.
    pub signature: String,
}

impl Definition {
    /// How this definition appears in a scope chain: its name, or `impl Trait for Type` for impls.
    pub fn scope_label(&self) -> String {
        if self.kind == DefKind::Impl {
            impl_label(&self.signature, &self.name)
        } else {
            self.name.clone()
        }
    }

    /// The scope chain including this definition, joined with ` > `.
    pub fn qualified_name(&self) -> String {
        let mut parts = self.scope.clone();
        parts.push(self.scope_label());
        parts.join(" > ")
    }
}

/// A use of a name: a call, a type mention, a macro invocation, an import.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Reference {
    pub name: String,
    pub kind: RefKind,
    /// 1-based.
    pub line: u32,
    /// 1-based, in bytes.
    pub column: u32,
    /// Labels of the enclosing definitions, outermost first.
    pub scope: Vec<String>,
}

/// Everything the tags query found in one file.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct FileTags {
    pub definitions: Vec<Definition>,
    pub references: Vec<Reference>,
}

/// A language's compiled tags query and what each of its captures stands for.
pub(crate) struct TagsQuery {
    query: Query,
    roles: Vec<CaptureRole>,
}

/// The compiled tags query of a language, built on first use (compiling costs tens of
/// milliseconds per language, so a process pays only for the languages it parses).
pub(crate) fn tags_query(language: Language) -> Result<Option<&'static TagsQuery>, SyntaxError> {
    static QUERIES: [OnceLock<Option<Result<TagsQuery, String>>>; Language::ALL.len()] =
        [const { OnceLock::new() }; Language::ALL.len()];
    let slot = Language::ALL
        .iter()
        .position(|&lang| lang == language)
        .map(|index| &QUERIES[index]);
    let Some(slot) = slot else {
        return Ok(None);
    };
    let compiled = slot.get_or_init(|| {
        let grammar = language.grammar()?;
        let source = language.tags_query_source()?;
        Some(
            Query::new(&grammar, source)
                .map(|query| TagsQuery {
                    roles: query
                        .capture_names()
                        .iter()
                        .map(|name| CaptureRole::of(name))
                        .collect(),
                    query,
                })
                .map_err(|e| e.to_string()),
        )
    });
    match compiled {
        None => Ok(None),
        Some(Ok(query)) => Ok(Some(query)),
        Some(Err(message)) => Err(SyntaxError::Query {
            language: language.name(),
            message: message.clone(),
        }),
    }
}

/// Runs the language's tags query over a parsed tree.
pub fn extract_tags(
    language: Language,
    tree: &Tree,
    source: &str,
) -> Result<FileTags, SyntaxError> {
    extract_tags_and_comments(language, tree, source).map(|(tags, _)| tags)
}

/// What one capture of a tags query stands for, resolved once when the query is compiled.
#[derive(Clone, Copy)]
enum CaptureRole {
    Name,
    NotAReference,
    Definition(DefKind),
    Reference(RefKind),
    Comment,
    FileScope,
    Qualifier,
    Other,
}

impl CaptureRole {
    fn of(capture_name: &str) -> CaptureRole {
        if let Some(kind) = capture_name.strip_prefix("definition.") {
            return DefKind::from_name(kind).map_or(CaptureRole::Other, CaptureRole::Definition);
        }
        if let Some(kind) = capture_name.strip_prefix("reference.") {
            return RefKind::from_name(kind).map_or(CaptureRole::Other, CaptureRole::Reference);
        }
        match capture_name {
            "name" => CaptureRole::Name,
            "not_a_reference" => CaptureRole::NotAReference,
            "comment" => CaptureRole::Comment,
            "scope.file" => CaptureRole::FileScope,
            "qualifier" => CaptureRole::Qualifier,
            _ => CaptureRole::Other,
        }
    }
}

/// The tags of a parsed tree and the byte ranges of its comments, in order, from one run of the
/// language's tags query.
pub fn extract_tags_and_comments(
    language: Language,
    tree: &Tree,
    source: &str,
) -> Result<(FileTags, Vec<(usize, usize)>), SyntaxError> {
    let Some(raw) = run_tags_query(language, tree, source, None)? else {
        return Ok((FileTags::default(), Vec::new()));
    };
    Ok((assemble(raw.defs, raw.refs, source, &[]), raw.comments))
}

/// The tags inside `range` of a parsed tree: the definitions whose whole node lies in it and
/// the references whose name starts in it. `enclosing` are the definitions around the range,
/// outermost first (their labels begin every scope chain found inside, and the innermost one
/// decides whether a function is a method). With the whole file as the range and nothing
/// enclosing, this is [`extract_tags`]; an editor re-reads one changed definition this way.
pub fn extract_tags_within(
    language: Language,
    tree: &Tree,
    source: &str,
    range: std::ops::Range<usize>,
    enclosing: &[Definition],
) -> Result<FileTags, SyntaxError> {
    let Some(mut raw) = run_tags_query(language, tree, source, Some(range.clone()))? else {
        return Ok(FileTags::default());
    };
    raw.defs
        .retain(|def| range.start <= def.node_start && def.node_end <= range.end);
    raw.refs.retain(|reference| range.contains(&reference.byte));
    Ok(assemble(raw.defs, raw.refs, source, enclosing))
}

/// What one run of the tags query found, before nesting is worked out.
struct RawTags {
    defs: Vec<RawDef>,
    refs: Vec<RawRef>,
    comments: Vec<(usize, usize)>,
}

/// Runs the language's tags query over the tree (or the part of it that meets `range`);
/// `None` for a language without a tags query.
fn run_tags_query(
    language: Language,
    tree: &Tree,
    source: &str,
    range: Option<std::ops::Range<usize>>,
) -> Result<Option<RawTags>, SyntaxError> {
    let Some(TagsQuery { query, roles }) = tags_query(language)? else {
        return Ok(None);
    };
    let mut raw_defs: Vec<RawDef> = Vec::new();
    let mut raw_refs: Vec<RawRef> = Vec::new();
    let mut comments: Vec<(usize, usize)> = Vec::new();
    // Start bytes of name nodes that declare something (see the module doc).
    let mut declaring: Vec<usize> = Vec::new();
    let mut cursor = QueryCursor::new();
    if let Some(range) = range {
        cursor.set_byte_range(range);
    }
    let mut matches = cursor.matches(query, tree.root_node(), source.as_bytes());
    while let Some(found) = matches.next() {
        let mut outer: Option<(Node, CaptureRole)> = None;
        let mut name: Option<Node> = None;
        let mut file_scope = false;
        let mut qualifiers: Vec<Node> = Vec::new();
        for capture in found.captures() {
            match roles[capture.index as usize] {
                CaptureRole::Name => name = Some(capture.node),
                CaptureRole::NotAReference => declaring.push(capture.node.start_byte()),
                CaptureRole::Comment => {
                    comments.push((capture.node.start_byte(), capture.node.end_byte()))
                }
                role @ (CaptureRole::Definition(_) | CaptureRole::Reference(_)) => {
                    outer = Some((capture.node, role))
                }
                CaptureRole::FileScope => file_scope = true,
                CaptureRole::Qualifier => qualifiers.push(capture.node),
                CaptureRole::Other => {}
            }
        }
        let (Some((node, role)), Some(name_node)) = (outer, name) else {
            continue;
        };
        let name_text = node_text(name_node, source).trim();
        let name_text = match role {
            // `#include <stdio.h>` names `stdio.h`, as `#include "buf.h"` names `buf.h`.
            CaptureRole::Reference(RefKind::Import) => name_text
                .strip_prefix('<')
                .and_then(|inner| inner.strip_suffix('>'))
                .unwrap_or(name_text),
            // Ruby's `attr_reader :id` defines `id`.
            CaptureRole::Definition(_) => name_text.strip_prefix(':').unwrap_or(name_text),
            _ => name_text,
        };
        if name_text.is_empty() {
            continue;
        }
        match role {
            CaptureRole::Definition(kind) => {
                declaring.push(name_node.start_byte());
                raw_defs.push(RawDef {
                    node_start: node.start_byte(),
                    node_end: node.end_byte(),
                    start_line: node.start_position().row as u32 + 1,
                    end_line: last_line(node),
                    name: name_text.to_string(),
                    kind,
                    file_scope,
                    qualifier: qualifiers
                        .iter()
                        .flat_map(|node| qualifier_parts(node_text(*node, source)))
                        .collect(),
                });
            }
            CaptureRole::Reference(kind) => {
                let position = name_node.start_position();
                raw_refs.push(RawRef {
                    byte: name_node.start_byte(),
                    line: position.row as u32 + 1,
                    column: position.column as u32 + 1,
                    name: name_text.to_string(),
                    kind,
                });
            }
            _ => {}
        }
    }
    if !declaring.is_empty() {
        declaring.sort_unstable();
        raw_refs.retain(|reference| declaring.binary_search(&reference.byte).is_err());
    }
    comments.sort_unstable();
    comments.dedup();
    extend_file_scopes(&mut raw_defs, source);
    Ok(Some(RawTags {
        defs: raw_defs,
        refs: raw_refs,
        comments,
    }))
}

struct RawDef {
    node_start: usize,
    node_end: usize,
    start_line: u32,
    end_line: u32,
    name: String,
    kind: DefKind,
    /// Encloses the rest of the file (`@scope.file`).
    file_scope: bool,
    /// Scope labels from the definition's qualified name (`@qualifier`).
    qualifier: Vec<String>,
}

/// The 1-based last line of a node: the line its last byte is on (a node that ends with its
/// newline, such as C's `#define` or a Markdown section, ends at column 0 of the next row).
fn last_line(node: Node) -> u32 {
    let end = node.end_position();
    if end.column == 0 && end.row > node.start_position().row {
        end.row as u32
    } else {
        end.row as u32 + 1
    }
}

/// `ns::Shape` → `["ns", "Shape"]`; `Outer.Inner` → `["Outer", "Inner"]`.
fn qualifier_parts(text: &str) -> Vec<String> {
    text.split("::")
        .flat_map(|part| part.split('.'))
        .map(str::trim)
        .filter(|part| !part.is_empty())
        .map(str::to_string)
        .collect()
}

/// Makes each `@scope.file` definition end where the next one starts, or at the end of the
/// file, so that everything after it nests inside it.
fn extend_file_scopes(raw_defs: &mut [RawDef], source: &str) {
    let mut starts: Vec<usize> = raw_defs
        .iter()
        .filter(|def| def.file_scope)
        .map(|def| def.node_start)
        .collect();
    if starts.is_empty() {
        return;
    }
    starts.sort_unstable();
    let last_line = source.lines().count().max(1) as u32;
    for def in raw_defs.iter_mut().filter(|def| def.file_scope) {
        let next = starts.partition_point(|&start| start <= def.node_start);
        match starts.get(next) {
            Some(&end) => {
                def.node_end = end;
                def.end_line = source[..end].matches('\n').count() as u32;
            }
            None => {
                def.node_end = source.len();
                def.end_line = last_line;
            }
        }
    }
}

struct RawRef {
    byte: usize,
    line: u32,
    column: u32,
    name: String,
    kind: RefKind,
}

/// Orders tags, drops duplicates, and derives scope chains and method kinds from nesting
/// (inside the `enclosing` definitions, outermost first, which are not part of the result).
fn assemble(
    mut raw_defs: Vec<RawDef>,
    mut raw_refs: Vec<RawRef>,
    source: &str,
    enclosing: &[Definition],
) -> FileTags {
    // Outer definitions first when two start at the same byte.
    raw_defs.sort_by(|a, b| {
        (a.node_start, std::cmp::Reverse(a.node_end))
            .cmp(&(b.node_start, std::cmp::Reverse(b.node_end)))
    });
    raw_defs.dedup_by(|later, earlier| {
        later.node_start == earlier.node_start
            && later.node_end == earlier.node_end
            && later.name == earlier.name
    });
    raw_refs.sort_by_key(|r| r.byte);
    raw_refs.dedup_by(|later, earlier| later.byte == earlier.byte && later.name == earlier.name);

    let mut definitions: Vec<Definition> = Vec::with_capacity(raw_defs.len());
    let mut references: Vec<Reference> = Vec::with_capacity(raw_refs.len());
    // Indices into `definitions` of the definitions enclosing the current position.
    let mut open: Vec<usize> = Vec::new();
    let mut refs = raw_refs.into_iter().peekable();

    let close_before = |open: &mut Vec<usize>, definitions: &[Definition], byte: usize| {
        while let Some(&top) = open.last() {
            if definitions[top].end_byte <= byte {
                open.pop();
            } else {
                break;
            }
        }
    };
    // Each definition's scope label, made once: every tag inside it repeats it.
    // A definition's labels are its qualifier's parts then its own (`Rect`, `area` for C++'s
    // `double Rect::area()`), so what it holds is scoped under both.
    let mut labels: Vec<Vec<String>> = Vec::with_capacity(raw_defs.len());
    let outer: Vec<String> = enclosing.iter().map(Definition::scope_label).collect();
    let scope_of = |open: &[usize], labels: &[Vec<String>]| -> Vec<String> {
        outer
            .iter()
            .cloned()
            .chain(open.iter().flat_map(|&i| labels[i].iter().cloned()))
            .collect()
    };

    for raw in raw_defs {
        while let Some(reference) = refs.next_if(|r| r.byte < raw.node_start) {
            close_before(&mut open, &definitions, reference.byte);
            references.push(Reference {
                scope: scope_of(&open, &labels),
                name: reference.name,
                kind: reference.kind,
                line: reference.line,
                column: reference.column,
            });
        }
        close_before(&mut open, &definitions, raw.node_start);
        // A definition spanning exactly the same bytes (Go's `a, b int`) is a sibling, not a parent.
        while let Some(&top) = open.last() {
            let same = &definitions[top];
            if same.start_byte == raw.node_start && same.end_byte == raw.node_end {
                open.pop();
            } else {
                break;
            }
        }
        let parent_kind = open
            .last()
            .map(|&i| definitions[i].kind)
            .or(enclosing.last().map(|def| def.kind));
        let kind = match (raw.kind, parent_kind) {
            (DefKind::Function, Some(parent)) if parent.holds_methods() => DefKind::Method,
            (kind, _) => kind,
        };
        let signature = signature_line(source, raw.node_start);
        let mut scope = scope_of(&open, &labels);
        let qualifier = raw.qualifier;
        scope.extend(qualifier.iter().cloned());
        let definition = Definition {
            scope,
            name: raw.name,
            kind,
            start_line: raw.start_line,
            end_line: raw.end_line,
            start_byte: raw.node_start,
            end_byte: raw.node_end,
            signature,
        };
        let mut own = qualifier;
        own.push(definition.scope_label());
        labels.push(own);
        definitions.push(definition);
        open.push(definitions.len() - 1);
    }
    for reference in refs {
        close_before(&mut open, &definitions, reference.byte);
        references.push(Reference {
            scope: scope_of(&open, &labels),
            name: reference.name,
            kind: reference.kind,
            line: reference.line,
            column: reference.column,
        });
    }
    FileTags {
        definitions,
        references,
    }
}

/// The scope label of an impl block: `impl Type` or `impl Trait for Type`.
fn impl_label(signature: &str, type_name: &str) -> String {
    let trimmed = signature.trim_start_matches("unsafe ").trim();
    if let Some(rest) = trimmed.strip_prefix("impl") {
        // `impl<T: Display> Display for Wrapper<T>`: the generics come before the trait.
        let rest = strip_leading_generics(rest.trim_start());
        if let Some(for_at) = rest.find(" for ") {
            let trait_part = rest[..for_at].trim();
            return format!("impl {trait_part} for {type_name}");
        }
    }
    // Haskell: `instance Pretty Job where`, `instance Show a => Pretty (Box a) where`.
    // Elixir: `defimpl Keyed, for: Map do` (`defimpl Keyed do` inside the implementing module
    // names only the protocol, which is then the impl's name).
    let class = if let Some(rest) = trimmed.strip_prefix("instance ") {
        let head = rest.rsplit_once("=>").map_or(rest, |(_, head)| head);
        head.split_whitespace().next()
    } else if let Some(rest) = trimmed.strip_prefix("defimpl ") {
        rest.split([',', ' ']).next()
    } else {
        None
    };
    match class {
        Some(class) if !class.is_empty() && class != type_name => {
            format!("impl {class} for {type_name}")
        }
        _ => format!("impl {type_name}"),
    }
}

/// `<T: Clone> Display` -> `Display`.
fn strip_leading_generics(text: &str) -> &str {
    if !text.starts_with('<') {
        return text;
    }
    let mut depth = 0usize;
    for (at, ch) in text.char_indices() {
        match ch {
            '<' => depth += 1,
            '>' => {
                depth = depth.saturating_sub(1);
                if depth == 0 {
                    return text[at + 1..].trim();
                }
            }
            _ => {}
        }
    }
    text
}

/// The source line on which a definition starts, trimmed and capped.
fn signature_line(source: &str, start_byte: usize) -> String {
    const MAX_SIGNATURE_CHARS: usize = 200;
    let line_start = source[..start_byte].rfind('\n').map_or(0, |at| at + 1);
    let line_end = source[start_byte..]
        .find('\n')
        .map_or(source.len(), |at| start_byte + at);
    let line = source[line_start..line_end].trim();
    match line.char_indices().nth(MAX_SIGNATURE_CHARS) {
        Some((cut, _)) => format!("{}…", &line[..cut]),
        None => line.to_string(),
    }
}

pub(crate) fn node_text<'s>(node: Node, source: &'s str) -> &'s str {
    source.get(node.start_byte()..node.end_byte()).unwrap_or("")
}
