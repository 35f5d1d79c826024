//! Splitting a file into retrieval units ("chunks").
//!
//! Code is chunked along its syntax tree: nodes that fit the maximum size are kept whole, larger
//! ones are opened up at their children, and consecutive small units are merged up to the target
//! size. Comments and attributes stick to the code that follows them. Sizes count non-whitespace
//! bytes, so indentation does not change where chunks break. Plain text is chunked by paragraphs.

use tree_sitter::{Node, Tree};

use crate::tags::{DefKind, FileTags};

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

/// The sizes tuned on the retrieval benchmark (see `bench/README.md`).
pub const DEFAULT_SIZES: ChunkSizes = ChunkSizes {
    target: 600,
    max: 1200,
    min: 100,
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
    /// The chunk's comments, joined by newlines.
    pub comments: String,
}

/// Chunks a parsed code file.
pub fn chunk_code(tree: &Tree, source: &str, tags: &FileTags) -> Vec<Chunk> {
    chunk_code_with(tree, source, tags, DEFAULT_SIZES)
}

/// Chunks a parsed code file with explicit sizes.
pub fn chunk_code_with(tree: &Tree, source: &str, tags: &FileTags, sizes: ChunkSizes) -> Vec<Chunk> {
    if source.trim().is_empty() {
        return Vec::new();
    }
    let counter = NonWhitespace::new(source);
    let mut units = Vec::new();
    flatten(tree.root_node(), source, &counter, sizes, &mut units);
    let spans = group_units(&units, &counter, sizes);
    let lines = LineIndex::new(source);
    let mut comments = Vec::new();
    collect_comments(tree.root_node(), &mut comments);
    spans
        .into_iter()
        .map(|(start, end)| build_chunk(source, &lines, start, end, tags, &comments))
        .collect()
}

/// Chunks a plain-text file by paragraphs.
pub fn chunk_text(source: &str) -> Vec<Chunk> {
    chunk_text_with(source, DEFAULT_SIZES)
}

/// Chunks a plain-text file with explicit sizes.
pub fn chunk_text_with(source: &str, sizes: ChunkSizes) -> Vec<Chunk> {
    if source.trim().is_empty() {
        return Vec::new();
    }
    let counter = NonWhitespace::new(source);
    let mut units: Vec<Unit> = Vec::new();
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
    group_units(&units, &counter, sizes)
        .into_iter()
        .map(|(start, end)| build_chunk(source, &lines, start, end, &FileTags::default(), &[]))
        .collect()
}

/// A span that is never split further; `sticky` spans (comments, attributes) join what follows.
#[derive(Clone, Copy, Debug)]
struct Unit {
    start: usize,
    end: usize,
    sticky: bool,
}

/// Counts non-whitespace bytes of any span in O(1).
struct NonWhitespace {
    prefix: Vec<u32>,
}

impl NonWhitespace {
    fn new(source: &str) -> Self {
        let mut prefix = Vec::with_capacity(source.len() + 1);
        let mut count = 0u32;
        prefix.push(0);
        for byte in source.bytes() {
            if !byte.is_ascii_whitespace() {
                count += 1;
            }
            prefix.push(count);
        }
        NonWhitespace { prefix }
    }

    fn count(&self, start: usize, end: usize) -> usize {
        (self.prefix[end] - self.prefix[start]) as usize
    }
}

fn flatten(node: Node, source: &str, counter: &NonWhitespace, sizes: ChunkSizes, out: &mut Vec<Unit>) {
    let (start, end) = (node.start_byte(), node.end_byte());
    if counter.count(start, end) <= sizes.max || node.child_count() == 0 {
        if counter.count(start, end) > sizes.max {
            split_by_lines(source, counter, sizes, start, end, out);
        } else if start < end {
            out.push(Unit {
                start,
                end,
                sticky: is_sticky(node),
            });
        }
        return;
    }
    let mut cursor = node.walk();
    for child in node.children(&mut cursor) {
        flatten(child, source, counter, sizes, out);
    }
}

fn push_text_unit(
    units: &mut Vec<Unit>,
    source: &str,
    counter: &NonWhitespace,
    sizes: ChunkSizes,
    start: usize,
    end: usize,
) {
    if counter.count(start, end) > sizes.max {
        split_by_lines(source, counter, sizes, start, end, units);
    } else {
        units.push(Unit {
            start,
            end,
            sticky: false,
        });
    }
}

/// Splits an unsplittable span (a huge literal, a long paragraph) at line ends near the target.
fn split_by_lines(
    source: &str,
    counter: &NonWhitespace,
    sizes: ChunkSizes,
    start: usize,
    end: usize,
    out: &mut Vec<Unit>,
) {
    let mut piece_start = start;
    let mut offset = start;
    for line in source[start..end].split_inclusive('\n') {
        offset += line.len();
        if counter.count(piece_start, offset) >= sizes.target {
            out.push(Unit {
                start: piece_start,
                end: offset,
                sticky: false,
            });
            piece_start = offset;
        }
    }
    if piece_start < end {
        out.push(Unit {
            start: piece_start,
            end,
            sticky: false,
        });
    }
}

fn is_sticky(node: Node) -> bool {
    let kind = node.kind();
    kind.contains("comment") || kind == "attribute_item" || kind == "decorator"
}

fn is_comment(node: Node) -> bool {
    node.kind().contains("comment")
}

/// Merges consecutive units into spans no larger than the target (a single unit may reach max).
fn group_units(units: &[Unit], counter: &NonWhitespace, sizes: ChunkSizes) -> Vec<(usize, usize)> {
    let mut spans: Vec<(usize, usize)> = Vec::new();
    let mut current: Option<(usize, usize, bool)> = None; // start, end, only sticky so far
    for unit in units {
        if counter.count(unit.start, unit.end) == 0 {
            continue;
        }
        current = match current {
            None => Some((unit.start, unit.end, unit.sticky)),
            Some((start, _, true)) => Some((start, unit.end, unit.sticky)),
            Some((start, _, _)) if counter.count(start, unit.end) <= sizes.target => {
                Some((start, unit.end, unit.sticky))
            }
            Some((start, end, _)) => {
                spans.push((start, end));
                Some((unit.start, unit.end, unit.sticky))
            }
        };
    }
    if let Some((start, end, _)) = current {
        spans.push((start, end));
    }
    // A small trailing piece joins its predecessor when both fit.
    let mut merged: Vec<(usize, usize)> = Vec::with_capacity(spans.len());
    for (start, end) in spans {
        if let Some(previous) = merged.last_mut()
            && (counter.count(start, end) < sizes.min
                || counter.count(previous.0, previous.1) < sizes.min)
            && counter.count(previous.0, end) <= sizes.max
        {
            previous.1 = end;
            continue;
        }
        merged.push((start, end));
    }
    merged
}

fn collect_comments(node: Node, out: &mut Vec<(usize, usize)>) {
    if is_comment(node) {
        out.push((node.start_byte(), node.end_byte()));
        return;
    }
    let mut cursor = node.walk();
    for child in node.children(&mut cursor) {
        collect_comments(child, out);
    }
}

fn build_chunk(
    source: &str,
    lines: &LineIndex,
    start: usize,
    end: usize,
    tags: &FileTags,
    comments: &[(usize, usize)],
) -> Chunk {
    let line_start = source[..start].rfind('\n').map_or(0, |at| at + 1);
    let text = source[line_start..end].trim_end().to_string();
    let start_line = lines.line_of(line_start);
    let end_line = start_line + text.matches('\n').count() as u32;

    // Definitions starting inside the chunk, and the innermost one enclosing its start.
    let starting: Vec<_> = tags
        .definitions
        .iter()
        .filter(|d| d.start_byte >= start && d.start_byte < end)
        .collect();
    let enclosing = tags
        .definitions
        .iter()
        .filter(|d| d.start_byte < start && d.end_byte > start)
        .max_by_key(|d| d.start_byte);
    let main = starting
        .iter()
        .min_by_key(|d| (d.scope.len(), d.start_byte))
        .copied()
        .or(enclosing);

    let mut comment_text = String::new();
    let first_comment = comments.partition_point(|&(_, comment_end)| comment_end <= line_start);
    for &(comment_start, comment_end) in &comments[first_comment..] {
        if comment_start >= end {
            break;
        }
        if !comment_text.is_empty() {
            comment_text.push('\n');
        }
        comment_text.push_str(&source[comment_start.max(line_start)..comment_end.min(end)]);
    }

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
        comments: comment_text,
    }
}

/// Byte offsets of line starts, for 1-based line numbers by binary search.
struct LineIndex {
    starts: Vec<usize>,
}

impl LineIndex {
    fn new(source: &str) -> Self {
        let mut starts = vec![0];
        starts.extend(source.bytes().enumerate().filter(|&(_, b)| b == b'\n').map(|(at, _)| at + 1));
        LineIndex { starts }
    }

    fn line_of(&self, byte: usize) -> u32 {
        self.starts.partition_point(|&start| start <= byte) as u32
    }
}
