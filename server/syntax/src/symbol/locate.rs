//! The definitions of one text with the ranges an edit by symbol needs, and resolving a
//! [`SymbolTarget`] to exactly one of them.
//!
//! Definitions come from the language's tags query over a fresh parse (`parse::parse_tree`,
//! `tags::extract_tags_and_comments`), so a name means here what it means in the index and the
//! editor outline. The tags query marks the node that defines a name; this module widens it to
//! what an edit works on:
//! - the statement the node is the only definition of (`export function f`, Python's
//!   decorated definition, `const f = () => …`, Go's `type X struct`);
//! - in `full`, the comments, attributes (`#[derive]`) and decorators right above it, with no
//!   blank line between;
//! - in `definition`, the text from the signature's first token (after decorators and
//!   attributes, with `pub`, `export`, `async` …) to the end: what `replace_symbol_body`
//!   replaces.

use std::ops::Range;

use tree_sitter::Node;

use super::name::SymbolTarget;
use super::{Candidate, SymbolError};
use crate::language::Language;
use crate::parse::parse_tree;
use crate::tags::{DefKind, Definition, extract_tags_and_comments};

/// Lines of a range, 1-based and inclusive.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LineRange {
    pub start: u32,
    pub end: u32,
}

/// One definition and the byte ranges of its parts in the text it was found in.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SymbolSpan {
    /// The name path from the top of the file: `Circle/area`; an impl block is named by its
    /// label (`impl Greeter for Registry`), and a Go method has its receiver's type first.
    pub path: String,
    pub kind: DefKind,
    /// Leading doc comments, attributes and decorators, the definition, to its end.
    pub full: Range<usize>,
    pub full_lines: LineRange,
    /// From the signature's first token (`pub fn`, `def`, `export class`) to the end.
    pub definition: Range<usize>,
    pub definition_lines: LineRange,
    /// The body block (`{ … }`, an indented block), when the definition has one.
    pub body: Option<Range<usize>>,
    pub body_lines: Option<LineRange>,
    /// The whitespace before the definition's first line.
    pub indent: String,
    /// 1-based line and column (in characters) of the definition's first character.
    pub line: u32,
    pub column: u32,
}

/// A definition with what its name path is matched against.
struct Entry {
    span: SymbolSpan,
    /// Names from the outermost enclosing definition to this one.
    names: Vec<String>,
    /// The same, with an impl block's label (`impl Display for Wrapper`) instead of its type.
    labels: Vec<String>,
    is_impl: bool,
    /// A function or method declared without a body (a C prototype, a member declared in its
    /// class and defined outside it).
    is_prototype: bool,
}

impl Entry {
    fn segment_matches(&self, at: usize, segment: &str) -> bool {
        self.names[at] == segment || self.labels[at] == segment
    }

    /// Whether `segments` are the whole path (`exact`) or its end.
    fn matches(&self, segments: &[String], exact: bool) -> bool {
        let depth = self.names.len();
        if segments.len() > depth || (exact && segments.len() != depth) {
            return false;
        }
        let offset = depth - segments.len();
        segments
            .iter()
            .enumerate()
            .all(|(at, segment)| self.segment_matches(offset + at, segment))
    }

    /// The path with impl blocks named by their labels (`impl Greeter for Registry/greet_all`),
    /// which tells apart methods of two impls of the same type.
    fn label_path(&self) -> String {
        self.labels.join("/")
    }

    fn candidate(&self, file: &str) -> Candidate {
        Candidate {
            name: format!("{file}:{}", self.span.path),
            kind: self.span.kind,
            lines: self.span.definition_lines,
            position: format!("{file}:{}:{}", self.span.line, self.span.column),
        }
    }
}

/// Byte offsets of line starts, for turning offsets into lines and back.
struct Lines<'s> {
    source: &'s str,
    starts: Vec<usize>,
}

impl<'s> Lines<'s> {
    fn new(source: &'s str) -> Self {
        let mut starts = vec![0];
        starts.extend(
            source
                .bytes()
                .enumerate()
                .filter(|&(_, byte)| byte == b'\n')
                .map(|(at, _)| at + 1),
        );
        Lines { source, starts }
    }

    /// 1-based line of a byte offset.
    fn line_of(&self, offset: usize) -> u32 {
        self.starts.partition_point(|&start| start <= offset) as u32
    }

    fn line_start(&self, offset: usize) -> usize {
        self.starts[self.line_of(offset) as usize - 1]
    }

    /// The lines a non-empty range covers (its last byte's line ends it).
    fn range(&self, range: &Range<usize>) -> LineRange {
        LineRange {
            start: self.line_of(range.start),
            end: self.line_of(range.end.max(range.start + 1) - 1),
        }
    }

    /// 1-based column, in characters, of an offset.
    fn column_of(&self, offset: usize) -> u32 {
        let start = self.line_start(offset);
        self.source
            .get(start..offset)
            .map_or(1, |text| text.chars().count() as u32 + 1)
    }

    /// The byte offset of a 1-based line and column, or why there is none.
    fn offset_of(&self, line: u32, column: u32) -> Result<usize, String> {
        let count = self.starts.len() as u32;
        if line > count {
            return Err(format!(
                "line {line} is past the end of the file ({count} lines)"
            ));
        }
        let start = self.starts[line as usize - 1];
        let end = self
            .starts
            .get(line as usize)
            .map_or(self.source.len(), |&next| next - 1);
        let text = self.source.get(start..end).unwrap_or("");
        let text = text.strip_suffix('\r').unwrap_or(text);
        let width = text.chars().count() as u32;
        if column > width + 1 {
            return Err(format!("line {line} has only {width} characters"));
        }
        Ok(start
            + text
                .char_indices()
                .nth(column as usize - 1)
                .map_or(text.len(), |(at, _)| at))
    }
}

/// Statements that may wrap a definition node: when the node is the only one of its kind in
/// it, the definition is the whole statement (`export …`, `@decorator def …`, `const f = …`,
/// `type X struct {…}`, a Go field or constant with one name).
const WRAPPERS: &[&str] = &[
    "decorated_definition",
    "export_statement",
    "ambient_declaration",
    "lexical_declaration",
    "variable_declaration",
    "expression_statement",
    "type_declaration",
    "const_declaration",
    "var_declaration",
    "const_spec",
    "var_spec",
    "field_declaration",
    "template_declaration",
    "type_definition",
];

/// The largest node below `root` that starts at `start`.
fn outermost_starting_at(root: Node, start: usize) -> Option<Node> {
    let mut node = root.descendant_for_byte_range(start, start)?;
    while let Some(parent) = node.parent()
        && parent.id() != root.id()
        && parent.start_byte() == start
    {
        node = parent;
    }
    (node.id() != root.id()).then_some(node)
}

fn is_leading_trivia(kind: &str) -> bool {
    kind == "decorator" || kind == "attribute_item" || kind.contains("comment") || kind == "haddock"
}

/// The statement a definition node stands for (see [`WRAPPERS`]).
fn widen(mut node: Node) -> Node {
    while let Some(parent) = node.parent() {
        if !WRAPPERS.contains(&parent.kind()) {
            break;
        }
        let mut cursor = parent.walk();
        let same_kind = parent
            .named_children(&mut cursor)
            .filter(|child| child.kind() == node.kind())
            .count();
        if same_kind != 1 {
            break;
        }
        node = parent;
    }
    node
}

/// Where the definition's own text starts: its first token that is not a decorator,
/// attribute or comment.
fn signature_start(node: Node) -> usize {
    let mut cursor = node.walk();
    let first = node
        .children(&mut cursor)
        .find(|child| !is_leading_trivia(child.kind()))
        .map(|child| child.start_byte());
    first.unwrap_or_else(|| node.start_byte())
}

/// `start` moved up over the comments, attributes and decorators directly above it (each on
/// lines of its own, no blank line between). Inner doc comments (`//!`) and `#!` lines belong
/// to the file, not to what follows them.
fn leading_start(
    lines: &Lines,
    root: Node,
    comments: &[(usize, usize)],
    mut start: usize,
) -> usize {
    let source = lines.source;
    loop {
        let line_start = lines.line_start(start);
        if line_start == 0 || !source[line_start..start].trim().is_empty() {
            return start;
        }
        let previous_start = lines.line_start(line_start - 1);
        let previous = &source[previous_start..line_start - 1];
        let kept = previous.trim_end().len();
        if previous.trim().is_empty() {
            return start;
        }
        let last = previous_start + kept - 1;
        // Comments are in order and do not overlap: the last one starting at or before `last`.
        let before = comments.partition_point(|&(from, _)| from <= last);
        let comment = before
            .checked_sub(1)
            .map(|at| comments[at])
            .filter(|&(_, to)| last < to)
            .map(|(from, _)| from);
        let above = comment.or_else(|| {
            let mut node = root.descendant_for_byte_range(last, last + 1)?;
            loop {
                if matches!(node.kind(), "attribute_item" | "decorator") {
                    return Some(node.start_byte());
                }
                node = node.parent()?;
            }
        });
        let Some(above) = above else {
            return start;
        };
        let own_line = source[lines.line_start(above)..above].trim().is_empty();
        let rest = &source[above..];
        if !own_line || rest.starts_with("//!") || rest.starts_with("/*!") || rest.starts_with("#!")
        {
            return start;
        }
        start = above;
    }
}

/// The body block of a definition node.
fn body_of(node: Node) -> Option<Node> {
    node.child_by_field_name("body").or_else(|| {
        node.child_by_field_name("value")
            .and_then(|value| value.child_by_field_name("body"))
    })
}

/// The receiver's type of a Go method (`func (r *Registry[T]) Greet()` -> `Registry`).
fn go_receiver_type(node: Node, source: &str) -> Option<String> {
    if node.kind() != "method_declaration" {
        return None;
    }
    let receiver = node.child_by_field_name("receiver")?;
    let mut cursor = receiver.walk();
    let parameter = receiver
        .named_children(&mut cursor)
        .find(|child| child.kind() == "parameter_declaration")?;
    let mut ty = parameter.child_by_field_name("type")?;
    loop {
        match ty.kind() {
            "pointer_type" => ty = ty.named_child(0)?,
            "generic_type" => ty = ty.child_by_field_name("type")?,
            "type_identifier" => return source.get(ty.byte_range()).map(str::to_owned),
            _ => return None,
        }
    }
}

/// Every definition of `source` with its ranges, in source order.
pub fn file_symbols(language: Language, source: &str) -> Result<Vec<SymbolSpan>, SymbolError> {
    Ok(entries(language, source, "")?
        .into_iter()
        .map(|entry| entry.span)
        .collect())
}

fn entries(language: Language, source: &str, file: &str) -> Result<Vec<Entry>, SymbolError> {
    let parse_error = |message: String| SymbolError::Parse {
        file: file.to_owned(),
        message,
    };
    let unsupported = || SymbolError::Unsupported {
        file: file.to_owned(),
    };
    if !language.is_code() {
        return Err(unsupported());
    }
    let tree = parse_tree(language, source)
        .map_err(|error| parse_error(error.to_string()))?
        .ok_or_else(unsupported)?;
    let (tags, comments) = extract_tags_and_comments(language, &tree, source)
        .map_err(|error| parse_error(error.to_string()))?;
    let root = tree.root_node();
    let lines = Lines::new(source);
    let definitions: &[Definition] = &tags.definitions;
    let mut out: Vec<Entry> = Vec::with_capacity(definitions.len());
    // Indices of the definitions enclosing the current one, outermost first.
    let mut open: Vec<usize> = Vec::new();
    for (index, definition) in definitions.iter().enumerate() {
        let (start, end) = (definition.start_byte, definition.end_byte);
        while let Some(&top) = open.last() {
            let outer = &definitions[top];
            let encloses = outer.start_byte <= start && end <= outer.end_byte;
            let same = outer.start_byte == start && outer.end_byte == end;
            if encloses && !same {
                break;
            }
            open.pop();
        }
        // A definition that encloses the rest of its file (`package`, `namespace X;`) spans
        // more than its node: take the node that starts where it does.
        let node = root
            .descendant_for_byte_range(start, end)
            .filter(|node| node.id() != root.id() || start == root.start_byte())
            .or_else(|| outermost_starting_at(root, start));
        let Some(node) = node else {
            open.push(index);
            continue;
        };
        let mut names: Vec<String> = open.iter().map(|&i| definitions[i].name.clone()).collect();
        let mut labels: Vec<String> = open.iter().map(|&i| definitions[i].scope_label()).collect();
        if open.is_empty()
            && let Some(receiver) = go_receiver_type(node, source)
        {
            names.push(receiver.clone());
            labels.push(receiver);
        }
        names.push(definition.name.clone());
        labels.push(definition.scope_label());
        let is_impl = definition.kind == DefKind::Impl;
        let mut path_parts = names.clone();
        if let (true, Some(last), Some(label)) = (is_impl, path_parts.last_mut(), labels.last()) {
            last.clone_from(label);
        }

        let outer = widen(node);
        let definition_range = signature_start(outer)..outer.end_byte();
        let full = leading_start(&lines, root, &comments, outer.start_byte())..outer.end_byte();
        let body = body_of(node).map(|body| body.byte_range());
        // C and C++ parse a prototype as a (field) declaration with a function declarator.
        let is_prototype = matches!(definition.kind, DefKind::Function | DefKind::Method)
            && matches!(node.kind(), "declaration" | "field_declaration");
        let first_line_start = lines.line_start(definition_range.start);
        let indent: String = source[first_line_start..definition_range.start]
            .chars()
            .take_while(|c| c.is_whitespace())
            .collect();
        out.push(Entry {
            span: SymbolSpan {
                path: path_parts.join("/"),
                kind: definition.kind,
                full_lines: lines.range(&full),
                full,
                definition_lines: lines.range(&definition_range),
                line: lines.line_of(definition_range.start),
                column: lines.column_of(definition_range.start),
                definition: definition_range,
                body_lines: body.as_ref().map(|body| lines.range(body)),
                body,
                indent,
            },
            names,
            labels,
            is_impl,
            is_prototype,
        });
        open.push(index);
    }
    Ok(out)
}

/// Most candidates listed in an error.
const MAX_CANDIDATES: usize = 20;

/// Resolves `target` in `source` (the text of `file`, as the error messages name it) to exactly
/// one definition. A path from the top of the file wins over a path that is only the end of
/// longer ones; several matches (two impl blocks with the same method, overloads) or none are
/// errors that list the candidates, never a guess.
pub fn locate(
    language: Language,
    source: &str,
    file: &str,
    target: &SymbolTarget,
) -> Result<SymbolSpan, SymbolError> {
    let entries = entries(language, source, file)?;
    let name = format!("{file}:{target}");
    match target {
        SymbolTarget::Path { segments, absolute } => {
            let exact: Vec<&Entry> = entries
                .iter()
                .filter(|e| e.matches(segments, true))
                .collect();
            let mut found = if exact.is_empty() && !absolute {
                entries
                    .iter()
                    .filter(|e| e.matches(segments, false))
                    .collect()
            } else {
                exact
            };
            // `Registry` names the struct, not the impl blocks named after it (which their
            // labels, `impl Registry`, name).
            if found.len() > 1 {
                let last = segments.last().map(String::as_str).unwrap_or("");
                let not_impls: Vec<&Entry> = found
                    .iter()
                    .copied()
                    .filter(|e| !e.is_impl || e.labels.last().map(String::as_str) == Some(last))
                    .collect();
                if !not_impls.is_empty() {
                    found = not_impls;
                }
            }
            // A function declared in its file and defined there too (a forward declaration of
            // a static function) is named by its definition.
            if found.len() > 1 && found.iter().any(|e| !e.is_prototype) {
                found.retain(|e| !e.is_prototype);
            }
            match found.as_slice() {
                [one] => Ok(one.span.clone()),
                [] => {
                    let similar = similar_names(&entries, segments);
                    let total = similar.len();
                    Err(SymbolError::NotFound {
                        name,
                        file: file.to_owned(),
                        candidates: similar
                            .into_iter()
                            .take(MAX_CANDIDATES)
                            .map(|e| e.candidate(file))
                            .collect(),
                        total,
                    })
                }
                several => Err(SymbolError::Ambiguous {
                    name,
                    file: file.to_owned(),
                    candidates: distinct_candidates(several, file),
                }),
            }
        }
        SymbolTarget::Position { line, column } => {
            let lines = Lines::new(source);
            let offset =
                lines
                    .offset_of(*line, *column)
                    .map_err(|reason| SymbolError::OutOfRange {
                        name: name.clone(),
                        reason,
                    })?;
            let innermost = entries
                .iter()
                .filter(|e| e.span.full.start <= offset && offset < e.span.full.end)
                .min_by_key(|e| (e.span.full.len(), std::cmp::Reverse(e.span.full.start)));
            match innermost {
                Some(entry) => Ok(entry.span.clone()),
                None => {
                    let mut nearby: Vec<&Entry> =
                        entries.iter().filter(|e| e.names.len() == 1).collect();
                    nearby.sort_by_key(|e| e.span.line.abs_diff(*line));
                    nearby.truncate(10);
                    nearby.sort_by_key(|e| e.span.full.start);
                    Err(SymbolError::NoDefinitionAt {
                        name,
                        file: file.to_owned(),
                        candidates: nearby.into_iter().map(|e| e.candidate(file)).collect(),
                    })
                }
            }
        }
    }
}

/// The candidates of an ambiguous name, each named so that it resolves to itself where a path
/// can: by its impl label when the plain paths are the same (the position form always does).
fn distinct_candidates(entries: &[&Entry], file: &str) -> Vec<Candidate> {
    let count = |path: &str, of: fn(&Entry) -> String| {
        entries.iter().filter(|entry| of(entry) == path).count()
    };
    entries
        .iter()
        .map(|entry| {
            let mut candidate = entry.candidate(file);
            let label_path = entry.label_path();
            if count(&entry.span.path, |e| e.span.path.clone()) > 1
                && count(&label_path, Entry::label_path) == 1
            {
                candidate.name = format!("{file}:{label_path}");
            }
            candidate
        })
        .collect()
}

/// Definitions whose name is like the path's last name (case-insensitive, one contains the
/// other); when none is, the file's outer definitions.
fn similar_names<'e>(entries: &'e [Entry], segments: &[String]) -> Vec<&'e Entry> {
    let wanted = segments
        .last()
        .map(|segment| segment.to_lowercase())
        .unwrap_or_default();
    let similar: Vec<&Entry> = entries
        .iter()
        .filter(|entry| {
            let own = entry
                .names
                .last()
                .map(|name| name.to_lowercase())
                .unwrap_or_default();
            !own.is_empty() && (own.contains(&wanted) || wanted.contains(&own))
        })
        .collect();
    if !similar.is_empty() {
        return similar;
    }
    entries
        .iter()
        .filter(|entry| entry.names.len() <= 2)
        .collect()
}
