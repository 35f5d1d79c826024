//! One open buffer's syntax, kept current edit by edit: its tree-sitter tree and the tags
//! (definitions and references) of its text.
//!
//! A keystroke re-reads only the part of the file it can have changed:
//! - **A few top-level items**: when the edited lines lie in top-level items (functions,
//!   structs, `extern` blocks, a comment) that together are small, those whole lines are parsed
//!   on their own. A top-level item of Rust or Go that parses cleanly alone (its braces balance)
//!   parses the same in its file,
//!   so this is exact, and it costs the same on a 10 KiB file as on a flat 1 MiB generated one
//!   (where even tree-sitter's incremental re-parse walks every top-level item). The tree then
//!   lags behind in those lines (it is still edited, so its positions stay right).
//! - **Inside one definition**: otherwise tree-sitter re-parses incrementally, and the changed
//!   region (the edits plus the ranges whose structure changed) is read again inside the
//!   innermost definition that contains it, with the definitions around it giving scope chains.
//! - **Everything**: when neither applies (a brace that re-nests the rest of the file).
//!
//! Tags outside the region keep their values, moved by the edits. The result always equals a
//! full extraction of the new text; `tests` check that over random edits.

use std::ops::Range;

use crate::{
    Definition, FileTags, Language, Reference, SyntaxError, extract_tags, extract_tags_within,
};
use tree_sitter::{InputEdit, Point, Tree};

/// Top-level items re-read on their own when together they are at most this large.
const STANDALONE_REGION_BYTES: usize = 32 * 1024;

/// A region larger than this share of the file is read as a whole instead.
const WHOLE_FILE_SHARE: f64 = 0.5;

/// How a buffer's tags were brought up to date (for tests and logs).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Update {
    /// Whole top-level items parsed on their own.
    Standalone,
    /// An incremental re-parse, tags read again inside one region.
    Region,
    /// An incremental re-parse, every tag read again.
    Whole,
}

/// The syntax of one buffer in a language lode parses.
pub struct Syntax {
    language: Language,
    /// The last tree, with every edit since applied, so its positions match the current text.
    tree: Tree,
    /// Byte ranges of the current text the tree has not re-parsed (re-read on their own).
    stale: Vec<Range<usize>>,
    /// The tags of the current text.
    tags: FileTags,
}

impl Syntax {
    /// Parses a buffer; `None` for a language lode has no grammar for.
    pub fn parse(language: Language, text: &str) -> Result<Option<Syntax>, SyntaxError> {
        let Some(tree) = crate::parse_tree(language, text)? else {
            return Ok(None);
        };
        let tags = extract_tags(language, &tree, text)?;
        Ok(Some(Syntax {
            language,
            tree,
            stale: Vec::new(),
            tags,
        }))
    }

    pub fn tags(&self) -> &FileTags {
        &self.tags
    }

    /// The tree when it covers the whole current text (no item was re-read on its own since
    /// the last re-parse), for checks that compare it with a fresh parse.
    pub fn current_tree(&self) -> Option<&Tree> {
        self.stale.is_empty().then_some(&self.tree)
    }

    /// Follows `edits` (in order, as the language server's document returns
    /// them) to the buffer's new `text`.
    /// `line_starts` are the byte offsets where the new text's lines start.
    pub fn edit(
        &mut self,
        edits: &[InputEdit],
        text: &str,
        line_starts: &[usize],
    ) -> Result<Update, SyntaxError> {
        let lines = Lines {
            text,
            starts: line_starts,
        };
        if edits.is_empty() {
            return Ok(Update::Standalone);
        }
        let mut dirty: Vec<Range<usize>> = Vec::new();
        for edit in edits {
            self.tree.edit(edit);
            shift_tags(&mut self.tags, edit);
            for range in dirty.iter_mut().chain(self.stale.iter_mut()) {
                *range = map_range(range.clone(), edit);
            }
            dirty.push(edit.start_byte..edit.new_end_byte);
        }
        let Some(changed) = hull(&dirty) else {
            return Ok(Update::Standalone);
        };
        let lines_changed = whole_lines(text, changed);
        if let Some(region) = self.standalone_region(text, lines_changed.clone())
            && self.read_standalone(&lines, region.clone())?
        {
            self.stale.push(region);
            return Ok(Update::Standalone);
        }
        self.reparse(&lines, dirty)
    }

    /// Whole top-level items covering `lines`, when parsing them alone is exact and cheap.
    fn standalone_region(&self, text: &str, lines: Range<usize>) -> Option<Range<usize>> {
        if !self.language.rules().standalone_items {
            // Only where braces delimit every item: a Python item's extent depends on the
            // indentation of the lines after it, and JavaScript's automatic semicolons join a
            // statement to a next line starting with `(`.
            return None;
        }
        let region = top_level_region(&self.tree, text, lines)?;
        (region.len() <= STANDALONE_REGION_BYTES && !self.overlaps_partially(&region))
            .then_some(region)
    }

    /// Parses `region` alone and puts its tags in place of the old ones there. `false` (and
    /// nothing changed) when the region does not parse cleanly on its own.
    fn read_standalone(
        &mut self,
        lines: &Lines,
        region: Range<usize>,
    ) -> Result<bool, SyntaxError> {
        let text = lines.text;
        let part = &text[region.clone()];
        let Some(tree) = crate::parse_tree(self.language, part)? else {
            return Ok(false);
        };
        if tree.root_node().has_error() {
            return Ok(false);
        }
        let mut found = extract_tags(self.language, &tree, part)?;
        // The region starts a line, so only rows and bytes move; columns stay.
        let first_row = lines.point(region.start).row;
        for definition in &mut found.definitions {
            definition.start_byte += region.start;
            definition.end_byte += region.start;
            definition.start_line += first_row as u32;
            definition.end_line += first_row as u32;
        }
        for reference in &mut found.references {
            reference.line += first_row as u32;
        }
        let points = lines.point(region.start)..lines.point(region.end);
        self.replace_tags(&region, points, region.end >= text.len(), found);
        Ok(true)
    }

    /// Re-parses incrementally and reads the tags again where the text or its structure
    /// changed.
    fn reparse(&mut self, lines: &Lines, dirty: Vec<Range<usize>>) -> Result<Update, SyntaxError> {
        let text = lines.text;
        let Some(tree) = crate::reparse_tree(self.language, text, &self.tree)? else {
            return Ok(Update::Whole);
        };
        let mut changed = dirty;
        changed.append(&mut self.stale);
        changed.extend(
            self.tree
                .changed_ranges(&tree)
                .map(|range| range.start_byte..range.end_byte),
        );
        self.tree = tree;
        let Some(hull) = hull(&changed) else {
            return Ok(Update::Region);
        };
        let changed_lines = whole_lines(text, hull.clone());
        let small_enough = |range: &Range<usize>| {
            (range.len() as f64) <= WHOLE_FILE_SHARE * text.len() as f64
                && !self.overlaps_partially(range)
        };
        let region = match self.innermost_definition_around(&changed_lines) {
            Some(index) => {
                let definition = &self.tags.definitions[index];
                let range = definition.start_byte..definition.end_byte;
                let mut enclosing = self.enclosing(index);
                match self.gap_between_members(index, &changed_lines) {
                    // A class that is most of its file (one Java or C# class per file, a
                    // large `impl`), edited between its members (a Javadoc, a blank line):
                    // only the lines between the members around the edit are read again.
                    Some(gap) if !small_enough(&range) => {
                        enclosing.push(definition.clone());
                        Some((gap, enclosing))
                    }
                    _ => Some((range, enclosing)),
                }
            }
            // Top-level items still sit inside a definition that encloses the rest of its
            // file (C#'s `namespace X;`, Java's `package`).
            None => top_level_region(&self.tree, text, changed_lines.clone())
                .map(|range| (range.clone(), self.around(&range))),
        };
        match region {
            Some((range, enclosing)) if small_enough(&range) => {
                let found = extract_tags_within(
                    self.language,
                    &self.tree,
                    text,
                    range.clone(),
                    &enclosing,
                )?;
                let points = lines.point(range.start)..lines.point(range.end);
                self.replace_tags(&range, points, range.end >= text.len(), found);
                Ok(Update::Region)
            }
            _ => {
                self.tags = extract_tags(self.language, &self.tree, text)?;
                Ok(Update::Whole)
            }
        }
    }

    /// The innermost definition whose bytes strictly contain `lines` (so the edited lines are
    /// neither its first line nor its last, and its borders are where they were).
    fn innermost_definition_around(&self, lines: &Range<usize>) -> Option<usize> {
        // Definitions are ordered outer first: the last one that contains is innermost.
        // Strictly: text typed right at a definition's end may or may not belong to it.
        self.tags
            .definitions
            .iter()
            .rposition(|def| def.start_byte < lines.start && lines.end < def.end_byte)
    }

    /// Inside definition `index`, the bytes between the end of the last definition before
    /// `lines` and the start of the first one after them; `None` when a definition inside it
    /// meets `lines`.
    fn gap_between_members(&self, index: usize, lines: &Range<usize>) -> Option<Range<usize>> {
        let outer = &self.tags.definitions[index];
        // The gap starts after the header (`class Circle extends Shape {`): the header holds
        // the outer definition's own name, which only a read of the whole definition renews.
        let node = self
            .tree
            .root_node()
            .descendant_for_byte_range(outer.start_byte, outer.end_byte)?;
        let rules = self.language.rules();
        let mut cursor = node.walk();
        let body = node.child_by_field_name("body").or_else(|| {
            node.children(&mut cursor)
                .find(|child| rules.is_body_kind(child.kind()))
        })?;
        if lines.start <= body.start_byte() {
            return None;
        }
        let mut gap = body.start_byte()..outer.end_byte;
        // Sorted by start byte, outer first: what lies inside `outer` follows it.
        for inner in &self.tags.definitions[index + 1..] {
            if inner.start_byte >= outer.end_byte {
                break;
            }
            if inner.end_byte <= lines.start {
                gap.start = gap.start.max(inner.end_byte);
            } else if inner.start_byte >= lines.end {
                gap.end = gap.end.min(inner.start_byte);
            } else {
                return None;
            }
        }
        Some(gap)
    }

    /// The definitions around `range` (that hold it and are not it), outermost first.
    fn around(&self, range: &Range<usize>) -> Vec<Definition> {
        self.tags
            .definitions
            .iter()
            .filter(|def| holds_other(def, range))
            .cloned()
            .collect()
    }

    /// The definitions around definition `index`, outermost first.
    fn enclosing(&self, index: usize) -> Vec<Definition> {
        let inner = &self.tags.definitions[index];
        let range = inner.start_byte..inner.end_byte;
        self.tags.definitions[..index]
            .iter()
            .filter(|def| holds_other(def, &range))
            .cloned()
            .collect()
    }

    /// Whether some definition crosses a border of `range` (then reading the range alone
    /// would cut it).
    fn overlaps_partially(&self, range: &Range<usize>) -> bool {
        self.tags.definitions.iter().any(|def| {
            let inside = range.start <= def.start_byte && def.end_byte <= range.end;
            let around = def.start_byte <= range.start && range.end <= def.end_byte;
            let apart = def.end_byte <= range.start || range.end <= def.start_byte;
            !(inside || around || apart)
        })
    }

    /// Drops the tags inside `range` (which spans `points`; up to the end of the text, the
    /// end included, when `to_the_end`) and puts `found` there, keeping both lists in order.
    fn replace_tags(
        &mut self,
        range: &Range<usize>,
        points: Range<Point>,
        to_the_end: bool,
        found: FileTags,
    ) {
        let definitions = &mut self.tags.definitions;
        definitions.retain(|def| !(range.start <= def.start_byte && def.end_byte <= range.end));
        definitions.extend(found.definitions);
        definitions.sort_by_key(|def| (def.start_byte, std::cmp::Reverse(def.end_byte)));
        let references = &mut self.tags.references;
        let inside = |at: Point| points.contains(&at) || (to_the_end && at >= points.start);
        references.retain(|reference| !inside(point_of(reference)));
        let at = references.partition_point(|reference| point_of(reference) < points.start);
        references.splice(at..at, found.references);
    }
}

/// Moves tags after an edit; tags inside the replaced bytes are left for the caller to drop.
fn shift_tags(tags: &mut FileTags, edit: &InputEdit) {
    let delta = edit.new_end_byte as isize - edit.old_end_byte as isize;
    let rows = edit.new_end_position.row as isize - edit.old_end_position.row as isize;
    let moved = |byte: usize| -> usize {
        if byte >= edit.old_end_byte {
            (byte as isize + delta) as usize
        } else if byte > edit.start_byte {
            edit.start_byte
        } else {
            byte
        }
    };
    for definition in &mut tags.definitions {
        if definition.start_byte >= edit.old_end_byte {
            definition.start_line = (definition.start_line as isize + rows) as u32;
        }
        if definition.end_byte >= edit.old_end_byte {
            definition.end_line = (definition.end_line as isize + rows) as u32;
        }
        if definition.start_byte > edit.start_byte && definition.start_byte < edit.old_end_byte {
            definition.start_line = edit.start_position.row as u32 + 1;
        }
        if definition.end_byte > edit.start_byte && definition.end_byte < edit.old_end_byte {
            definition.end_line = edit.start_position.row as u32 + 1;
        }
        definition.start_byte = moved(definition.start_byte);
        definition.end_byte = moved(definition.end_byte);
    }
    for reference in &mut tags.references {
        let at = point_of(reference);
        if at >= edit.old_end_position {
            if at.row == edit.old_end_position.row {
                reference.column = (edit.new_end_position.column
                    + (at.column - edit.old_end_position.column)
                    + 1) as u32;
            }
            reference.line = (reference.line as isize + rows) as u32;
        } else if at > edit.start_position {
            // Replaced: parked where the edit starts, inside the region read again.
            reference.line = edit.start_position.row as u32 + 1;
            reference.column = edit.start_position.column as u32 + 1;
        }
    }
}

/// A byte range of the text before `edit`, in the text after it (grown to cover the edit when
/// they meet).
fn map_range(range: Range<usize>, edit: &InputEdit) -> Range<usize> {
    let delta = edit.new_end_byte as isize - edit.old_end_byte as isize;
    let map = |byte: usize, end: bool| -> usize {
        if byte < edit.start_byte || (byte == edit.start_byte && !end) {
            byte
        } else if byte >= edit.old_end_byte {
            (byte as isize + delta) as usize
        } else if end {
            edit.new_end_byte
        } else {
            edit.start_byte
        }
    };
    let mut start = map(range.start, false);
    let mut end = map(range.end, true);
    if range.start <= edit.old_end_byte && edit.start_byte <= range.end {
        start = start.min(edit.start_byte);
        end = end.max(edit.new_end_byte);
    }
    start..end.max(start)
}

/// The smallest range holding every range given.
fn hull(ranges: &[Range<usize>]) -> Option<Range<usize>> {
    let start = ranges.iter().map(|range| range.start).min()?;
    let end = ranges.iter().map(|range| range.end).max()?;
    Some(start..end)
}

/// `range` grown to whole lines: from the start of its first line to past the end of its
/// last (the line break included).
fn whole_lines(text: &str, range: Range<usize>) -> Range<usize> {
    let start = range.start.min(text.len());
    let end = range.end.clamp(start, text.len());
    let line_start = text[..start].rfind('\n').map_or(0, |at| at + 1);
    let line_end = text[end..].find('\n').map_or(text.len(), |at| end + at + 1);
    line_start..line_end
}

/// `range` grown to whole lines where it is not already: a range that ends right after a line
/// break keeps its end.
fn snap_to_lines(text: &str, range: Range<usize>) -> Range<usize> {
    let start = range.start.min(text.len());
    let end = range.end.clamp(start, text.len());
    let line_start = text[..start].rfind('\n').map_or(0, |at| at + 1);
    if end > line_start && text.as_bytes()[end - 1] == b'\n' {
        return line_start..end;
    }
    let line_end = text[end..].find('\n').map_or(text.len(), |at| end + at + 1);
    line_start..line_end
}

/// The new text and where its lines start.
struct Lines<'a> {
    text: &'a str,
    starts: &'a [usize],
}

impl Lines<'_> {
    /// The tree-sitter point (0-based row, byte column) of a byte offset.
    fn point(&self, byte: usize) -> Point {
        let row = self.starts.partition_point(|&start| start <= byte).max(1) - 1;
        Point::new(row, byte - self.starts.get(row).copied().unwrap_or(0))
    }
}

/// Where a reference's name starts, as a tree-sitter point.
fn point_of(reference: &Reference) -> Point {
    Point::new(
        reference.line.saturating_sub(1) as usize,
        reference.column.saturating_sub(1) as usize,
    )
}

/// The whole lines of the top-level items (children of the root) that meet `lines`, grown
/// until no item crosses its borders; `None` when that does not settle quickly.
fn top_level_region(tree: &Tree, text: &str, lines: Range<usize>) -> Option<Range<usize>> {
    let root = tree.root_node();
    let mut region = snap_to_lines(text, lines);
    for _ in 0..4 {
        let mut cursor = root.walk();
        let mut grown = region.clone();
        if cursor.goto_first_child_for_byte(region.start).is_some() {
            loop {
                let node = cursor.node();
                if node.start_byte() >= region.end {
                    break;
                }
                grown.start = grown.start.min(node.start_byte());
                grown.end = grown.end.max(node.end_byte());
                if !cursor.goto_next_sibling() {
                    break;
                }
            }
        }
        let grown = snap_to_lines(text, grown);
        if grown == region {
            return Some(region);
        }
        region = grown;
    }
    None
}

/// Whether definition `def` holds `range` and is not that very range.
fn holds_other(def: &Definition, range: &Range<usize>) -> bool {
    def.start_byte <= range.start
        && range.end <= def.end_byte
        && (def.start_byte, def.end_byte) != (range.start, range.end)
}
