//! Splitting a file into retrieval units ("chunks").
//!
//! Code is chunked along its syntax tree: nodes that fit the maximum size are kept whole, larger
//! ones are opened up at their children, and consecutive small units are merged up to the target
//! size. Comments and attributes stick to the code that follows them. Sizes count non-whitespace
//! bytes, so indentation does not change where chunks break. Plain text is chunked by paragraphs.

use tree_sitter::{Node, Tree};

use crate::rules::LanguageRules;
use crate::tags::{DefKind, Definition, FileTags};

/// Chunk sizes in non-whitespace bytes.
#[derive(Clone, Copy, Debug)]
pub struct ChunkSizes {
    /// Consecutive units merge while the chunk stays at or under this size.
    pub target: usize,
    /// A node larger than this is split at its children.
    pub max: usize,
    /// A trailing chunk smaller than this merges into its predecessor when they fit `max`.
    pub min: usize,
}

/// The sizes tuned on the per-language retrieval sets (`bench/multilang`, see
/// `bench/README.md`), where a hit must overlap the function without being much larger: a
/// target of 300 keeps most functions one chunk with their signature instead of packing four
/// or five small ones together (lexical MRR@10 +13% to +46% in every language against 600).
pub const DEFAULT_SIZES: ChunkSizes = ChunkSizes {
    target: 300,
    max: 1200,
    min: 50,
};

/// One retrieval unit of a file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Chunk {
    /// 1-based, inclusive.
    pub start_line: u32,
    /// 1-based, inclusive.
    pub end_line: u32,
    pub start_byte: usize,
    pub end_byte: usize,
    /// The main definition of the chunk: the outermost one starting in it, else the innermost
    /// one enclosing it.
    pub symbol: Option<String>,
    pub kind: Option<DefKind>,
    /// Enclosing definitions of `symbol`, outermost first.
    pub scope: Vec<String>,
    /// Names of every definition starting inside the chunk.
    pub defined_names: Vec<String>,
    /// The chunk's source text, from the start of its first line.
    pub text: String,
}

/// Below this depth of the syntax tree a node is split by lines instead of at its children: a
/// file of thousands of nested brackets must not exhaust a thread's stack.
const MAX_DEPTH: usize = 200;

/// Splits a parsed code file into chunks along its syntax tree, by its language's rules; its
/// definitions (known beforehand) name the chunks.
pub fn chunk_code_with(
    tree: &Tree,
    source: &str,
    tags: &FileTags,
    rules: &LanguageRules,
    sizes: ChunkSizes,
) -> Vec<Chunk> {
    if source.trim().is_empty() {
        return Vec::new();
    }
    let counter = NonWhitespace::new(source);
    let mut units = Vec::new();
    // The file opens at the target like a container's body: kept whole up to the maximum, a
    // small file of three functions would be one chunk, and a search for one of them would
    // answer with the file.
    let walk = Walk {
        source,
        counter: &counter,
        sizes,
        rules,
    };
    walk.flatten(tree.root_node(), true, 0, &mut units);
    let spans = group_units(&units, &counter, sizes);
    let lines = LineIndex::new(source);
    let mut definitions = DefinitionCursor::new(&tags.definitions);
    spans
        .into_iter()
        .map(|(start, end)| build_chunk(source, &lines, start, end, &mut definitions))
        .collect()
}

/// Chunks a plain-text file by paragraphs.
pub fn chunk_text_with(source: &str, sizes: ChunkSizes) -> Vec<Chunk> {
    if source.trim().is_empty() {
        return Vec::new();
    }
    let counter = NonWhitespace::new(source);
    let mut units: Vec<Piece> = Vec::new();
    let mut paragraph_start: Option<usize> = None;
    let mut offset = 0;
    for line in source.split_inclusive('\n') {
        let line_end = offset + line.len();
        let blank = line.trim().is_empty();
        let heading = line.starts_with('#') || line.starts_with("[");
        if let Some(start) = paragraph_start
            && (blank || heading)
        {
            push_text_unit(&mut units, source, &counter, sizes, start, offset);
            paragraph_start = None;
        }
        if !blank && paragraph_start.is_none() {
            paragraph_start = Some(offset);
        }
        offset = line_end;
    }
    if let Some(start) = paragraph_start {
        push_text_unit(&mut units, source, &counter, sizes, start, source.len());
    }
    let lines = LineIndex::new(source);
    let mut no_definitions = DefinitionCursor::new(&[]);
    group_units(&units, &counter, sizes)
        .into_iter()
        .map(|(start, end)| build_chunk(source, &lines, start, end, &mut no_definitions))
        .collect()
}

/// A span that is never split further; `sticky` spans (comments, attributes) join what follows.
#[derive(Clone, Copy, Debug)]
struct Unit {
    start: usize,
    end: usize,
    sticky: bool,
}

/// The flattened file: units, and boundaries around nodes that were opened up, so the pieces
/// of a split function never merge with its neighbours.
#[derive(Clone, Copy, Debug)]
enum Piece {
    Unit(Unit),
    /// A node is opened here: what comes before it is finished.
    Open,
    /// The opened node ends here.
    Close,
}

/// Counts non-whitespace bytes of any span in O(1): one bit per byte, and a running count at
/// the start of every 64-byte block (12 bytes per 64 bytes of source).
struct NonWhitespace {
    /// Non-whitespace bytes before each block, and the block's bits; one block past the end.
    blocks: Vec<(u32, u64)>,
}

impl NonWhitespace {
    fn new(source: &str) -> Self {
        let bytes = source.as_bytes();
        let mut blocks = Vec::with_capacity(bytes.len() / 64 + 1);
        let mut count = 0u32;
        for block in bytes.chunks(64) {
            let mut bits = 0u64;
            for (at, byte) in block.iter().enumerate() {
                bits |= u64::from(!byte.is_ascii_whitespace()) << at;
            }
            blocks.push((count, bits));
            count += bits.count_ones();
        }
        // `rank(len)` reads the block after the last full one.
        blocks.push((count, 0));
        NonWhitespace { blocks }
    }

    /// Non-whitespace bytes before `at`.
    fn rank(&self, at: usize) -> u32 {
        let (before, bits) = self.blocks[at / 64];
        let below = (1u64 << (at % 64)) - 1;
        before + (bits & below).count_ones()
    }

    fn count(&self, start: usize, end: usize) -> usize {
        (self.rank(end) - self.rank(start)) as usize
    }
}

/// What flattening a tree needs at every node.
struct Walk<'a> {
    source: &'a str,
    counter: &'a NonWhitespace,
    sizes: ChunkSizes,
    rules: &'a LanguageRules,
}

impl Walk<'_> {
    /// A container (a class, an impl block, a module: definitions that hold other definitions),
    /// or a wrapper around one: `export class` (JavaScript, TypeScript) and a decorated class
    /// (Python) open at the target like the bare class. Containers open at their children once
    /// larger than the target, not the maximum: kept whole up to 1200 bytes, a class of small
    /// methods would be one chunk, and a search for one method would answer with the class.
    fn is_container(&self, node: Node) -> bool {
        if self.rules.is_container(node.kind()) || self.rules.is_container_call(node, self.source) {
            return true;
        }
        self.rules
            .wrapped(node)
            .is_some_and(|wrapped| self.is_container(wrapped))
    }

    /// Whether `child` is the body of the container `node`: its `body` field, or a node of a
    /// body kind the language names.
    fn is_body(&self, node: Node, child: Node) -> bool {
        node.child_by_field_name("body")
            .is_some_and(|body| body.id() == child.id())
            || self.rules.is_body_kind(child.kind())
    }

    fn flatten(&self, node: Node, body_of_container: bool, depth: usize, out: &mut Vec<Piece>) {
        let (source, counter, sizes) = (self.source, self.counter, self.sizes);
        let (start, end) = (node.start_byte(), node.end_byte());
        let container = self.is_container(node);
        let keep_whole_up_to = if container || body_of_container {
            sizes.target
        } else {
            sizes.max
        };
        if counter.count(start, end) <= keep_whole_up_to {
            if start < end {
                out.push(Piece::Unit(Unit {
                    start,
                    end,
                    sticky: self.rules.is_sticky(node.kind())
                        || is_overload_signature(node, source),
                }));
            }
            return;
        }
        out.push(Piece::Open);
        if node.child_count() == 0 || depth >= MAX_DEPTH {
            split_by_lines(source, counter, sizes, start, end, out);
        } else {
            let mut cursor = node.walk();
            for child in node.children(&mut cursor) {
                // Only a container's body (a class block, an impl's declaration list) opens at
                // the target too; its other children, and the definitions inside a file's root,
                // are kept whole up to the maximum like any function.
                let is_body = container && self.is_body(node, child);
                self.flatten(child, is_body, depth + 1, out);
            }
        }
        out.push(Piece::Close);
    }
}

fn push_text_unit(
    units: &mut Vec<Piece>,
    source: &str,
    counter: &NonWhitespace,
    sizes: ChunkSizes,
    start: usize,
    end: usize,
) {
    if counter.count(start, end) > sizes.max {
        split_by_lines(source, counter, sizes, start, end, units);
    } else {
        units.push(Piece::Unit(Unit {
            start,
            end,
            sticky: false,
        }));
    }
}

/// Splits an unsplittable span (a huge literal, a long paragraph) at line ends near the target,
/// and a line longer than the maximum by itself (minified code) inside the line.
fn split_by_lines(
    source: &str,
    counter: &NonWhitespace,
    sizes: ChunkSizes,
    start: usize,
    end: usize,
    out: &mut Vec<Piece>,
) {
    let mut piece_start = start;
    let mut offset = start;
    for line in source[start..end].split_inclusive('\n') {
        let line_start = offset;
        offset += line.len();
        if counter.count(line_start, offset) > sizes.max {
            if piece_start < line_start {
                out.push(unsplit(piece_start, line_start));
            }
            split_long_line(source, counter, sizes, line_start, offset, out);
            piece_start = offset;
            continue;
        }
        if counter.count(piece_start, offset) >= sizes.target {
            out.push(unsplit(piece_start, offset));
            piece_start = offset;
        }
    }
    if piece_start < end {
        out.push(unsplit(piece_start, end));
    }
}

fn unsplit(start: usize, end: usize) -> Piece {
    Piece::Unit(Unit {
        start,
        end,
        sticky: false,
    })
}

/// Cuts one long line into pieces of about the target size, each ending after a space or
/// punctuation where one is near, and always on a character boundary.
fn split_long_line(
    source: &str,
    counter: &NonWhitespace,
    sizes: ChunkSizes,
    start: usize,
    end: usize,
    out: &mut Vec<Piece>,
) {
    let mut piece_start = start;
    let mut last_break = None;
    for (at, ch) in source[start..end].char_indices() {
        let at = start + at;
        if matches!(ch, ' ' | ';' | ',' | '}' | ')' | '>') {
            last_break = Some(at + ch.len_utf8());
        }
        if counter.count(piece_start, at) >= sizes.target {
            let cut = last_break
                .filter(|&cut| {
                    cut > piece_start && counter.count(piece_start, cut) * 2 >= sizes.target
                })
                .unwrap_or(at);
            out.push(unsplit(piece_start, cut));
            piece_start = cut;
            last_break = None;
        }
    }
    if piece_start < end {
        out.push(unsplit(piece_start, end));
    }
}

/// A TypeScript overload signature (`function parse(text: string): Node;`, or a method's in a
/// class) followed by another declaration of the same name: it belongs with the implementation
/// the signatures lead to, not with whatever precedes it.
fn is_overload_signature(node: Node, source: &str) -> bool {
    fn declaration(node: Node) -> Option<Node> {
        if node.kind() == "export_statement" {
            node.child_by_field_name("declaration")
        } else {
            Some(node)
        }
    }
    let name = |node: Node| {
        node.child_by_field_name("name")
            .map(|name| &source[name.byte_range()])
    };
    let Some(signature) = declaration(node) else {
        return false;
    };
    if !matches!(signature.kind(), "function_signature" | "method_signature") {
        return false;
    }
    let mut next = node.next_named_sibling();
    while let Some(sibling) = next
        && sibling.kind().contains("comment")
    {
        next = sibling.next_named_sibling();
    }
    let next_name = next.and_then(declaration).and_then(name);
    next_name.is_some() && next_name == name(signature)
}

/// Merges consecutive units into spans no larger than the target (a single unit may reach max).
/// Comments and attributes wait for the unit they precede and go wherever it goes. Spans below
/// the minimum merge into a neighbour: forward when cut short by an opened node (a function's
/// header joins its body), backward otherwise (a closing brace joins what it closes).
fn group_units(
    pieces: &[Piece],
    counter: &NonWhitespace,
    sizes: ChunkSizes,
) -> Vec<(usize, usize)> {
    // (start, end, cut short by an opened node)
    let mut spans: Vec<(usize, usize, bool)> = Vec::new();
    let mut group: Option<(usize, usize)> = None;
    let mut pending_sticky: Option<(usize, usize)> = None;
    for piece in pieces {
        let unit = match piece {
            Piece::Open => {
                spans.extend(group.take().map(|(s, e)| (s, e, true)));
                continue;
            }
            Piece::Close => {
                spans.extend(group.take().map(|(s, e)| (s, e, false)));
                continue;
            }
            Piece::Unit(unit) if counter.count(unit.start, unit.end) == 0 => continue,
            Piece::Unit(unit) => unit,
        };
        if unit.sticky {
            pending_sticky =
                Some(pending_sticky.map_or((unit.start, unit.end), |(s, _)| (s, unit.end)));
            continue;
        }
        let start = pending_sticky.take().map_or(unit.start, |(s, _)| s);
        group = match group {
            Some((group_start, _)) if counter.count(group_start, unit.end) <= sizes.target => {
                Some((group_start, unit.end))
            }
            Some((full_start, full_end)) => {
                spans.push((full_start, full_end, false));
                Some((start, unit.end))
            }
            None => Some((start, unit.end)),
        };
    }
    // Trailing comments join the last group, or stand alone.
    if let Some((sticky_start, sticky_end)) = pending_sticky {
        group = Some(group.map_or((sticky_start, sticky_end), |(s, _)| (s, sticky_end)));
    }
    spans.extend(group.map(|(s, e)| (s, e, false)));

    let mut merged: Vec<(usize, usize)> = Vec::with_capacity(spans.len());
    let mut carried: Option<(usize, usize)> = None;
    for (start, end, cut_by_open) in spans {
        let (start, end) = match carried.take() {
            Some((carried_start, _)) if counter.count(carried_start, end) <= sizes.max => {
                (carried_start, end)
            }
            Some(alone) => {
                merged.push(alone);
                (start, end)
            }
            None => (start, end),
        };
        if counter.count(start, end) < sizes.min {
            if cut_by_open {
                carried = Some((start, end));
                continue;
            }
            if let Some(previous) = merged.last_mut()
                && counter.count(previous.0, end) <= sizes.max
            {
                previous.1 = end;
                continue;
            }
        }
        merged.push((start, end));
    }
    if let Some((start, end)) = carried {
        match merged.last_mut() {
            Some(previous) if counter.count(previous.0, end) <= sizes.max => previous.1 = end,
            _ => merged.push((start, end)),
        }
    }
    merged
}

/// Finds, for chunks visited in order, the definitions starting inside each and the innermost
/// one enclosing its start, in time linear in the definitions (a file of thousands of constants
/// has hundreds of chunks).
struct DefinitionCursor<'t> {
    /// Sorted by start byte, outer first on ties (as [`crate::tags::extract_tags`] orders them).
    definitions: &'t [Definition],
    /// Definitions before `next` start before the last chunk visited.
    next: usize,
    /// Indices of the definitions that may still enclose a later chunk, by start byte.
    open: Vec<usize>,
    last_start: usize,
}

impl<'t> DefinitionCursor<'t> {
    fn new(definitions: &'t [Definition]) -> Self {
        DefinitionCursor {
            definitions,
            next: 0,
            open: Vec::new(),
            last_start: 0,
        }
    }

    /// The definitions starting in `start..end`, and the innermost one (latest start) that
    /// starts before `start` and ends after it.
    fn at(&mut self, start: usize, end: usize) -> (&'t [Definition], Option<&'t Definition>) {
        let definitions = self.definitions;
        if start < self.last_start {
            // Chunks come in order; start over if they ever do not.
            self.next = 0;
            self.open.clear();
        }
        self.last_start = start;
        while let Some(definition) = definitions.get(self.next)
            && definition.start_byte < start
        {
            while let Some(&top) = self.open.last()
                && definitions[top].end_byte <= definition.start_byte
            {
                self.open.pop();
            }
            self.open.push(self.next);
            self.next += 1;
        }
        while let Some(&top) = self.open.last()
            && definitions[top].end_byte <= start
        {
            self.open.pop();
        }
        let first = self.next;
        let count = definitions[first..].partition_point(|d| d.start_byte < end);
        let enclosing = self.open.last().map(|&top| &definitions[top]);
        (&definitions[first..first + count], enclosing)
    }
}

fn build_chunk(
    source: &str,
    lines: &LineIndex,
    start: usize,
    end: usize,
    definitions: &mut DefinitionCursor<'_>,
) -> Chunk {
    let line_start = source[..start].rfind('\n').map_or(0, |at| at + 1);
    // A chunk starts at the start of its first line, unless that line is long and the chunk a
    // piece of it (minified code): then the piece alone.
    let line_start = if start - line_start > LONG_LINE_PREFIX {
        start
    } else {
        line_start
    };
    let text = source[line_start..end].trim_end().to_string();
    let start_line = lines.line_of(line_start);
    let end_line = start_line + text.matches('\n').count() as u32;

    // Definitions starting inside the chunk, and the innermost one enclosing its start.
    let (starting, enclosing) = definitions.at(start, end);
    let main = starting
        .iter()
        .min_by_key(|d| (d.scope.len(), d.start_byte))
        .or(enclosing);

    Chunk {
        start_line,
        end_line,
        start_byte: line_start,
        end_byte: end,
        symbol: main.map(|d| d.name.clone()),
        kind: main.map(|d| d.kind),
        scope: main.map(|d| d.scope.clone()).unwrap_or_default(),
        defined_names: starting.iter().map(|d| d.name.clone()).collect(),
        text,
    }
}

/// How much of its first line before it a chunk takes with it, at most.
const LONG_LINE_PREFIX: usize = 512;

/// Byte offsets of line starts, for 1-based line numbers by binary search.
struct LineIndex {
    starts: Vec<usize>,
}

impl LineIndex {
    fn new(source: &str) -> Self {
        let mut starts = vec![0];
        starts.extend(
            source
                .bytes()
                .enumerate()
                .filter(|&(_, b)| b == b'\n')
                .map(|(at, _)| at + 1),
        );
        LineIndex { starts }
    }

    fn line_of(&self, byte: usize) -> u32 {
        self.starts.partition_point(|&start| start <= byte) as u32
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::language::Language;
    use crate::parse::{parse_file, parse_tree};
    use crate::tags::{extract_tags, extract_tags_and_comments};

    fn non_whitespace(text: &str) -> usize {
        text.bytes().filter(|b| !b.is_ascii_whitespace()).count()
    }

    fn rust_function(name: &str, statements: usize) -> String {
        let mut text = format!("/// Docs of {name}.\nfn {name}() {{\n");
        for i in 0..statements {
            text.push_str(&format!(
                "    let value_{i} = compute_something_long({i});\n"
            ));
        }
        text.push_str("}\n\n");
        text
    }

    #[test]
    fn small_functions_merge_and_large_ones_split_at_statements() {
        let mut source = String::new();
        for name in ["alpha", "beta", "gamma"] {
            source.push_str(&rust_function(name, 2));
        }
        source.push_str(&rust_function("huge", 80));
        let parsed = parse_file(Language::Rust, &source).unwrap();
        let chunks = &parsed.chunks;

        // The three small functions share one chunk; its main symbol is the first of them.
        assert_eq!(chunks[0].defined_names, ["alpha", "beta", "gamma"]);
        assert_eq!(chunks[0].symbol.as_deref(), Some("alpha"));
        // The huge function is split; every piece stays within the maximum and knows its function.
        let pieces: Vec<_> = chunks
            .iter()
            .filter(|c| c.symbol.as_deref() == Some("huge"))
            .collect();
        assert!(pieces.len() >= 3, "{} pieces", pieces.len());
        for chunk in chunks {
            assert!(
                non_whitespace(&chunk.text) <= DEFAULT_SIZES.max + 80,
                "{}",
                chunk.text
            );
        }
        // Chunks cover the file in order without gaps in line numbers.
        for pair in chunks.windows(2) {
            assert!(
                pair[1].start_line >= pair[0].end_line,
                "{:?}",
                (pair[0].end_line, pair[1].start_line)
            );
            assert!(pair[1].start_line <= pair[0].end_line + 2);
        }
    }

    #[test]
    fn doc_comments_stay_with_the_function_they_document() {
        let source = format!(
            "{}{}",
            rust_function("first", 20),
            rust_function("second", 20)
        );
        let parsed = parse_file(Language::Rust, &source).unwrap();
        let second = parsed
            .chunks
            .iter()
            .find(|c| c.defined_names.contains(&"second".to_string()))
            .unwrap();
        assert!(
            second.text.starts_with("/// Docs of second."),
            "{}",
            second.text
        );
        assert_eq!(second.kind, Some(DefKind::Function));
    }

    #[test]
    fn methods_carry_their_scope_chain() {
        let mut source = String::from("mod store {\n    impl Store {\n");
        for name in ["open", "close", "flush"] {
            source.push_str(&format!("        pub fn {name}(&self) {{\n"));
            for i in 0..25 {
                source.push_str(&format!("            self.inner.{name}_step_{i}();\n"));
            }
            source.push_str("        }\n");
        }
        source.push_str("    }\n}\n");
        let tree = parse_tree(Language::Rust, &source).unwrap().unwrap();
        let tags = extract_tags(Language::Rust, &tree, &source).unwrap();
        let chunks = chunk_code_with(&tree, &source, &tags, Language::Rust.rules(), DEFAULT_SIZES);
        let flush = chunks
            .iter()
            .find(|c| c.symbol.as_deref() == Some("flush"))
            .unwrap();
        assert_eq!(flush.scope, ["store", "impl Store"]);
        assert_eq!(flush.kind, Some(DefKind::Method));
    }

    /// The chunk holding `first` (a line's text) must also hold `last`: what starts a
    /// definition (decorator, doc comment, overload, receiver) stays with its whole body.
    fn assert_one_chunk(chunks: &[Chunk], language: &str, first: &str, last: &str) {
        let chunk = chunks
            .iter()
            .find(|c| c.text.contains(first))
            .unwrap_or_else(|| panic!("{language}: no chunk holds {first:?}"));
        assert!(
            chunk.text.contains(last),
            "{language}: {first:?} and {last:?} are in different chunks:\n{}",
            chunk.text
        );
    }

    #[test]
    fn python_decorators_and_docstrings_stay_with_their_function() {
        let source = "import os\n\n\nclass Cache:\n    \"\"\"Entries kept on disk.\"\"\"\n\n    \
            def __init__(self, path):\n        self.path = path\n        self.entries = {}\n        \
            self.hits = 0\n\n    @property\n    def size(self):\n        \"\"\"Bytes held by all \
            entries.\"\"\"\n        total = 0\n        for entry in self.entries.values():\n            \
            total += len(entry)\n        return total\n\n    @staticmethod\n    def key_for(name, \
            version):\n        cleaned = name.strip().lower()\n        return f\"{cleaned}-{version}\"\
            \n\n    async def refresh(self, loader):\n        fresh = await loader.load(self.path)\n        \
            self.entries.update(fresh)\n        return len(fresh)\n";
        let chunks = parse_file(Language::Python, source).unwrap().chunks;
        assert_one_chunk(&chunks, "python", "@property", "return total");
        assert_one_chunk(&chunks, "python", "@staticmethod", "return f\"{cleaned}");
        assert_one_chunk(
            &chunks,
            "python",
            "def size(self):",
            "Bytes held by all entries",
        );
        assert_one_chunk(&chunks, "python", "async def refresh", "return len(fresh)");
        // The class (under the 1200-byte maximum) is opened at its methods, not kept whole,
        // and a method's chunk knows its class.
        assert!(chunks.len() >= 2, "{chunks:?}");
        let refresh = chunks
            .iter()
            .find(|c| c.symbol.as_deref() == Some("refresh"))
            .unwrap();
        assert_eq!(refresh.scope, ["Cache"]);
    }

    /// An exported class (JavaScript, TypeScript) and a decorated one (Python) open at their
    /// methods like a bare class: a search for one method answers with the method.
    #[test]
    fn exported_and_decorated_classes_open_at_their_methods() {
        // A class of three small methods: `NAME` in `method` is each method's name.
        let class = |head: &str, method: &str| {
            let mut source = head.to_string();
            for name in ["report_observed", "report_changed", "become_stale"] {
                source.push_str(&method.replace("NAME", name));
            }
            source
        };
        let typescript = class(
            "import { Set } from './set';\n\nexport class Atom implements IAtom {\n",
            "  NAME(): number {\n    const observers = this.observers_for_NAME.size;\n    \
             return observers + this.pending_NAME.length;\n  }\n",
        ) + "}\n";
        let javascript = class(
            "export default class Atom {\n",
            "  NAME() {\n    const observers = this.observers_for_NAME.size;\n    \
             return observers + this.pending_NAME.length;\n  }\n",
        ) + "}\n";
        let python = class(
            "import dataclasses\n\n@dataclasses.dataclass\nclass Atom:\n    name: str\n\n",
            "    def NAME(self):\n        observers = self.observers_for_NAME.size\n        \
             return observers + self.pending_NAME.length\n\n",
        );
        for (language, source) in [
            (Language::TypeScript, &typescript),
            (Language::JavaScript, &javascript),
            (Language::Python, &python),
        ] {
            assert!(
                non_whitespace(source) > DEFAULT_SIZES.target
                    && non_whitespace(source) < DEFAULT_SIZES.max,
                "{language:?}: the class must be over the target and under the maximum"
            );
            let chunks = parse_file(language, source).unwrap().chunks;
            let observed = chunks
                .iter()
                .find(|c| c.text.contains("report_observed"))
                .unwrap();
            assert!(
                !observed.text.contains("become_stale"),
                "{language:?}: the class was kept whole: {chunks:#?}"
            );
            let stale = chunks
                .iter()
                .find(|c| c.symbol.as_deref() == Some("become_stale"))
                .unwrap_or_else(|| panic!("{language:?}: no chunk for a method: {chunks:#?}"));
            assert_eq!(stale.scope, ["Atom"], "{language:?}");
        }
    }

    fn grammar_sample(relative: &str) -> String {
        let path = format!("{}/../../grammars/{relative}", env!("CARGO_MANIFEST_DIR"));
        std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("reading {path}: {e}"))
    }

    /// `template <...> class X { ... }` (C++) and `defmodule X do ... end` (Elixir) open at
    /// their members like a plain class, though neither names its class in a field.
    #[test]
    fn class_templates_and_elixir_modules_open_at_their_members() {
        for (language, sample, head, last_member, member, scope) in [
            (
                Language::Cpp,
                "cpp/sample.cpp",
                "class SmallStack {",
                "const T* end() const",
                "end",
                vec!["geom", "SmallStack"],
            ),
            (
                Language::Elixir,
                "elixir/sample.ex",
                "defmodule Bucket do",
                "def take(bucket), do:",
                "take",
                vec!["RateLimit", "Bucket"],
            ),
        ] {
            let source = grammar_sample(sample);
            let chunks = parse_file(language, &source).unwrap().chunks;
            let opening = chunks
                .iter()
                .find(|c| c.text.contains(head))
                .unwrap_or_else(|| panic!("{language:?}: no chunk holds {head:?}"));
            assert!(
                !opening.text.contains(last_member),
                "{language:?}: kept whole: {}",
                opening.text
            );
            let chunk = chunks
                .iter()
                .find(|c| c.defined_names.iter().any(|name| name == member))
                .unwrap_or_else(|| panic!("{language:?}: no chunk defines {member}"));
            assert_eq!(chunk.scope, scope, "{language:?}: {}", chunk.text);
        }
    }

    #[test]
    fn a_python_top_level_function_under_the_maximum_stays_whole() {
        let mut source = String::from("import os\n\n\ndef walk(root):\n");
        for i in 0..20 {
            source.push_str(&format!("    entry_{i} = os.path.join(root, 'part_{i}')\n"));
        }
        source.push_str("    return entry_0\n\n\ndef other():\n    return 1\n");
        let chunks = parse_file(Language::Python, &source).unwrap().chunks;
        assert_one_chunk(&chunks, "python", "def walk(root):", "return entry_0");
    }

    #[test]
    fn typescript_overloads_stay_with_their_implementation() {
        let source = "import { tokenize } from './lexer';\n\n\
            /** Parses a document. */\nexport function parse(text: string): Node;\n\
            export function parse(text: string, strict: boolean): Node | undefined;\n\
            export function parse(text: string, strict = false): Node | undefined {\n  \
            const tokens = tokenize(text);\n  if (strict && tokens.length === 0) {\n    \
            return undefined;\n  }\n  return build(tokens);\n}\n\n\
            export interface Options {\n  strict: boolean;\n  maxDepth?: number;\n}\n";
        let chunks = parse_file(Language::TypeScript, source).unwrap().chunks;
        assert_one_chunk(
            &chunks,
            "typescript",
            "/** Parses a document. */",
            "return build(tokens);",
        );
        assert_one_chunk(
            &chunks,
            "typescript",
            "export function parse(text: string): Node;",
            "return build(tokens);",
        );
    }

    #[test]
    fn javascript_jsdoc_and_methods_stay_whole() {
        let source = "const fs = require('fs');\n\n\
            /**\n * Reads a config file and merges the defaults.\n * @param {string} path\n */\n\
            function loadConfig(path) {\n  const text = fs.readFileSync(path, 'utf8');\n  \
            return Object.assign({}, DEFAULTS, JSON.parse(text));\n}\n\n\
            class Queue {\n  /** Adds a job at the back. */\n  push(job) {\n    \
            this.jobs.push(job);\n    this.notify();\n  }\n\n  /** Takes the oldest job. */\n  \
            shift() {\n    const job = this.jobs.shift();\n    return job;\n  }\n}\n";
        let chunks = parse_file(Language::JavaScript, source).unwrap().chunks;
        assert_one_chunk(
            &chunks,
            "javascript",
            "Reads a config file",
            "JSON.parse(text)",
        );
        assert_one_chunk(
            &chunks,
            "javascript",
            "Adds a job at the back",
            "this.notify();",
        );
        assert_one_chunk(&chunks, "javascript", "Takes the oldest job", "return job;");
    }

    /// A file under the maximum as a whole is still split at its definitions: otherwise a
    /// search for one of its functions answers with the whole file.
    #[test]
    fn a_small_file_is_split_at_its_definitions() {
        let typescript = "import { format } from 'outvariant';\n\n\
            function formatMessage(message: string, ...positionals: any[]): string {\n  \
            const interpolated = format(message, ...positionals);\n  \
            return `[prefix] ${interpolated} (formatted for the console)`;\n}\n\n\
            function warn(message: string, ...positionals: any[]): void {\n  \
            console.warn(formatMessage(message, ...positionals), 'warning', Date.now());\n}\n\n\
            function error(message: string, ...positionals: any[]): void {\n  \
            console.error(formatMessage(message, ...positionals), 'error', Date.now());\n}\n";
        let go = "package dev\n\nimport \"fmt\"\n\n\
            func FormatMessage(message string, positionals ...any) string {\n\t\
            interpolated := fmt.Sprintf(message, positionals...)\n\t\
            return \"[prefix] \" + interpolated + \" (formatted for the console)\"\n}\n\n\
            func Warn(message string, positionals ...any) {\n\t\
            fmt.Println(FormatMessage(message, positionals...), \"warning\", len(message))\n}\n\n\
            func Error(message string, positionals ...any) {\n\t\
            fmt.Println(FormatMessage(message, positionals...), \"error\", len(message))\n}\n";
        for (language, source, first, last) in [
            (
                Language::TypeScript,
                typescript,
                "function formatMessage",
                "console.error",
            ),
            (Language::Go, go, "func FormatMessage", "\"error\""),
        ] {
            assert!(
                non_whitespace(source) < DEFAULT_SIZES.max,
                "{language:?}: not a small file"
            );
            let chunks = parse_file(language, source).unwrap().chunks;
            let holding_first = chunks.iter().find(|c| c.text.contains(first)).unwrap();
            assert!(
                !holding_first.text.contains(last),
                "{language:?}: the first and the last function share a chunk: {chunks:#?}"
            );
        }
    }

    /// Signatures of different names (a declaration file) are not overloads: they do not all
    /// wait for one implementation.
    #[test]
    fn typescript_signatures_of_different_names_do_not_stick_together() {
        let mut source = String::new();
        for i in 0..12 {
            source.push_str(&format!(
                "export declare function operation{i}(input: string, options?: Options): Promise<Result{i}>;\n"
            ));
        }
        let chunks = parse_file(Language::TypeScript, &source).unwrap().chunks;
        assert!(chunks.len() >= 3, "{chunks:#?}");
    }

    #[test]
    fn go_doc_comments_stay_with_their_receiver_method() {
        let source = "package bufio\n\nimport \"io\"\n\n\
            // Reader buffers an io.Reader.\ntype Reader struct {\n\tbuf []byte\n\toff int\n\
            \trd  io.Reader\n}\n\n\
            // Read reads up to len(p) bytes into p.\n// It returns the number of bytes read.\n\
            func (r *Reader) Read(p []byte) (int, error) {\n\tif r.off == len(r.buf) {\n\
            \t\treturn r.rd.Read(p)\n\t}\n\tn := copy(p, r.buf[r.off:])\n\tr.off += n\n\
            \treturn n, nil\n}\n\n\
            // Reset discards any buffered data.\nfunc (r *Reader) Reset(rd io.Reader) {\n\
            \tr.buf = r.buf[:0]\n\tr.off = 0\n\tr.rd = rd\n}\n";
        let chunks = parse_file(Language::Go, source).unwrap().chunks;
        assert_one_chunk(&chunks, "go", "// Read reads up to", "return n, nil");
        assert_one_chunk(&chunks, "go", "// Reset discards", "r.rd = rd");
        let read = chunks
            .iter()
            .find(|c| c.defined_names.contains(&"Read".to_string()))
            .unwrap();
        assert!(read.text.contains("func (r *Reader) Read"), "{}", read.text);
    }

    #[test]
    fn text_is_chunked_by_paragraphs_and_headings() {
        let mut source = String::from("# Title\n\nIntro paragraph.\n\n");
        for section in 0..6 {
            source.push_str(&format!("## Section {section}\n\n"));
            for line in 0..8 {
                source.push_str(&format!(
                    "Sentence {line} of section {section} says something useful.\n"
                ));
            }
            source.push('\n');
        }
        let chunks = chunk_text_with(&source, DEFAULT_SIZES);
        assert!(chunks.len() >= 3);
        assert!(
            chunks
                .iter()
                .all(|c| non_whitespace(&c.text) <= DEFAULT_SIZES.max)
        );
        assert!(
            chunks
                .iter()
                .skip(1)
                .all(|c| c.text.starts_with("## ") || c.text.starts_with("Sentence"))
        );
        assert!(chunk_text_with("  \n\n ", DEFAULT_SIZES).is_empty());
    }

    #[test]
    fn non_whitespace_counts_match_a_plain_count() {
        let mut source = String::new();
        for i in 0..300 {
            source.push_str(&" ".repeat(i % 7));
            source.push_str(&format!("x{i}\t\n"));
        }
        let counter = NonWhitespace::new(&source);
        for start in (0..source.len()).step_by(13) {
            for end in (start..=source.len()).step_by(29).chain([source.len()]) {
                assert_eq!(
                    counter.count(start, end),
                    non_whitespace(&source[start..end]),
                    "{start}..{end}"
                );
            }
        }
        assert_eq!(NonWhitespace::new("").count(0, 0), 0);
        let block = "a".repeat(128);
        assert_eq!(NonWhitespace::new(&block).count(0, 128), 128);
    }

    #[test]
    fn the_definition_cursor_agrees_with_scanning_every_definition() {
        let mut source = String::from("mod outer {\n");
        for i in 0..40 {
            source.push_str(&format!("    pub const C{i}: u32 = {i};\n"));
        }
        source.push_str("    pub struct S;\n    impl S {\n");
        for i in 0..30 {
            source.push_str(&format!("        fn m{i}(&self) -> u32 {{ {i} }}\n"));
        }
        source.push_str("    }\n}\nfn after() {}\n");
        let tree = parse_tree(Language::Rust, &source).unwrap().unwrap();
        let tags = extract_tags(Language::Rust, &tree, &source).unwrap();
        assert!(tags.definitions.len() > 70);
        let mut cursor = DefinitionCursor::new(&tags.definitions);
        let step = 37;
        let spans: Vec<(usize, usize)> = (0..source.len())
            .step_by(step)
            .map(|start| (start, (start + 2 * step).min(source.len())))
            .collect();
        // In order, then once out of order (the cursor starts over).
        for &(start, end) in spans.iter().chain(spans.iter().take(3)) {
            let (starting, enclosing) = cursor.at(start, end);
            let expected_starting: Vec<&Definition> = tags
                .definitions
                .iter()
                .filter(|d| d.start_byte >= start && d.start_byte < end)
                .collect();
            let expected_enclosing = tags
                .definitions
                .iter()
                .filter(|d| d.start_byte < start && d.end_byte > start)
                .max_by_key(|d| d.start_byte);
            assert_eq!(starting.iter().collect::<Vec<_>>(), expected_starting);
            assert_eq!(enclosing, expected_enclosing, "{start}..{end}");
        }
    }

    /// Every outermost comment node, by a walk over the whole tree (what the `@comment` captures
    /// of each query must match).
    fn comments_by_walking(node: tree_sitter::Node, out: &mut Vec<(usize, usize)>) {
        // Haskell's Haddock comments (`-- |`) are nodes of their own kind.
        if node.kind().contains("comment") || node.kind() == "haddock" {
            out.push((node.start_byte(), node.end_byte()));
            return;
        }
        let mut cursor = node.walk();
        for child in node.children(&mut cursor) {
            comments_by_walking(child, out);
        }
    }

    /// Over every language's samples (`grammars/<dir>/sample*`, the tags tests' samples).
    #[test]
    fn every_query_captures_every_comment() {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../grammars");
        let mut checked = 0;
        for spec in crate::REGISTRY.iter().filter(|spec| spec.parsed) {
            // Markdown has no comments of its own (HTML comments are HTML blocks).
            if spec.language == Language::Markdown {
                continue;
            }
            for entry in std::fs::read_dir(root.join(spec.dir)).unwrap() {
                let path = entry.unwrap().path();
                let name = path.file_name().unwrap().to_string_lossy().into_owned();
                if !name.starts_with("sample") || name.ends_with(".json") {
                    continue;
                }
                let sample = std::fs::read_to_string(&path)
                    .unwrap_or_else(|e| panic!("reading {}: {e}", path.display()));
                if Language::detect(&path, &sample) != Some(spec.language) {
                    continue;
                }
                let language = spec.language;
                // The first samples hold few comments: add some at every level.
                let commented = match language {
                    Language::Rust => {
                        "\n/// Doc.\n/* block */\nfn commented() {\n    // inside\n    let x = 1; /* end */\n}\n"
                    }
                    Language::Python => {
                        "\n# top\ndef commented():\n    # inside\n    return 1  # end\n"
                    }
                    Language::Go => {
                        "\n// Doc.\nfunc commented() int {\n\t// inside\n\treturn 1 /* end */\n}\n"
                    }
                    Language::JavaScript | Language::TypeScript | Language::Tsx => {
                        "\n/** Doc. */\nfunction commented() {\n  // inside\n  return 1; /* end */\n}\n"
                    }
                    _ => "",
                };
                let source = sample + commented;
                let tree = parse_tree(language, &source).unwrap().unwrap();
                let (_, captured) = extract_tags_and_comments(language, &tree, &source).unwrap();
                let mut walked = Vec::new();
                comments_by_walking(tree.root_node(), &mut walked);
                assert!(
                    walked.len() >= 3,
                    "{}: the sample should hold comments at several levels",
                    path.display()
                );
                assert_eq!(captured, walked, "{}: comments", path.display());
                checked += 1;
            }
        }
        assert!(checked >= 6, "{checked} samples");
    }
}
