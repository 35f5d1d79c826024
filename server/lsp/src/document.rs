//! An open editor buffer: its text, its version, and LSP positions (UTF-16 code units) mapped
//! to byte offsets and back, with incremental `didChange` edits applied in order.

use std::sync::Arc;

use tower_lsp_server::lsp_types::{Position, Range, TextDocumentContentChangeEvent};
use tree_sitter::{InputEdit, Point};

/// The text of one open document as the editor has it (saved or not). Cheap to clone: the text
/// and its line table are shared until the next edit, so a snapshot can go to another thread.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Document {
    text: Arc<String>,
    version: i32,
    language_id: String,
    /// Byte offset where each line starts; always begins with 0.
    line_starts: Arc<Vec<usize>>,
}

/// A change that cannot be applied to the document it names.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum EditError {
    #[error("range {start:?}..{end:?} is reversed")]
    ReversedRange { start: Position, end: Position },
}

impl Document {
    pub fn new(text: String, version: i32, language_id: impl Into<String>) -> Document {
        let line_starts = line_starts(&text);
        Document {
            text: Arc::new(text),
            version,
            language_id: language_id.into(),
            line_starts: Arc::new(line_starts),
        }
    }

    pub fn text(&self) -> &str {
        &self.text
    }

    /// The text, shared (no copy).
    pub fn shared_text(&self) -> Arc<String> {
        self.text.clone()
    }

    pub fn version(&self) -> i32 {
        self.version
    }

    pub fn language_id(&self) -> &str {
        &self.language_id
    }

    /// Applies the changes of one `didChange` in order, then takes the new version. A change
    /// without a range replaces the whole text. Positions past the end of a line or of the
    /// document are clamped, as the protocol asks. Returns each change as a tree-sitter edit,
    /// in order (each relative to the text the previous one left), so a syntax tree of the old
    /// text can follow. On an error the document is left as it was.
    pub fn apply_changes(
        &mut self,
        changes: &[TextDocumentContentChangeEvent],
        version: i32,
    ) -> Result<Vec<InputEdit>, EditError> {
        // Check every range first (against the text each change will see) only when there are
        // several; one change is checked before anything is touched.
        if changes.len() > 1 {
            let mut next = self.clone();
            let edits = next.apply_each(changes)?;
            *self = next;
            self.version = version;
            return Ok(edits);
        }
        let edits = self.apply_each(changes)?;
        self.version = version;
        Ok(edits)
    }

    fn apply_each(
        &mut self,
        changes: &[TextDocumentContentChangeEvent],
    ) -> Result<Vec<InputEdit>, EditError> {
        let mut edits = Vec::with_capacity(changes.len());
        for change in changes {
            let (start, end) = match change.range {
                None => (0, self.text.len()),
                Some(range) => {
                    let start = self.offset_of(range.start);
                    let end = self.offset_of(range.end);
                    if end < start {
                        return Err(EditError::ReversedRange {
                            start: range.start,
                            end: range.end,
                        });
                    }
                    (start, end)
                }
            };
            edits.push(self.replace(start, end, &change.text));
        }
        Ok(edits)
    }

    /// Replaces the bytes `start..end` (on character boundaries) with `inserted`, keeping the
    /// line table current without rescanning the whole text.
    fn replace(&mut self, start: usize, end: usize, inserted: &str) -> InputEdit {
        let start_position = self.point_of(start);
        let old_end_position = self.point_of(end);
        Arc::make_mut(&mut self.text).replace_range(start..end, inserted);
        let new_end = start + inserted.len();
        let delta = inserted.len() as isize - (end - start) as isize;
        let lines = Arc::make_mut(&mut self.line_starts);
        // Lines that started inside the replaced bytes are gone; the inserted text brings its
        // own; every line after moves by the change in length.
        let first_removed = lines.partition_point(|&line| line <= start);
        let after_removed = lines.partition_point(|&line| line <= end);
        let inserted_lines = inserted.match_indices('\n').map(|(at, _)| start + at + 1);
        lines.splice(first_removed..after_removed, inserted_lines);
        let moved_from = first_removed + inserted.matches('\n').count();
        for line in &mut lines[moved_from..] {
            *line = (*line as isize + delta) as usize;
        }
        InputEdit {
            start_byte: start,
            old_end_byte: end,
            new_end_byte: new_end,
            start_position,
            old_end_position,
            new_end_position: self.point_of(new_end),
        }
    }

    /// The tree-sitter point (row, byte column) of a byte offset.
    pub fn point_of(&self, offset: usize) -> Point {
        let offset = offset.min(self.text.len());
        let row = self.line_starts.partition_point(|&start| start <= offset) - 1;
        Point::new(row, offset - self.line_starts[row])
    }

    /// Byte offsets where lines start.
    pub fn line_starts(&self) -> &[usize] {
        &self.line_starts
    }

    /// The byte offset of an LSP position (UTF-16 columns), clamped to the line and the text.
    /// A column inside a surrogate pair lands after the character.
    pub fn offset_of(&self, position: Position) -> usize {
        let Some(&line_start) = self.line_starts.get(position.line as usize) else {
            return self.text.len();
        };
        let line_end = self.line_end(position.line as usize);
        let line = &self.text[line_start..line_end];
        let mut units = 0u32;
        for (index, ch) in line.char_indices() {
            if units >= position.character {
                return line_start + index;
            }
            units += ch.len_utf16() as u32;
        }
        line_end
    }

    /// The LSP position (UTF-16 columns) of a byte offset; offsets inside a character or past
    /// the end are clamped.
    pub fn position_of(&self, offset: usize) -> Position {
        position_in(&self.text, &self.line_starts, offset)
    }

    /// The LSP range of a byte range.
    pub fn range_of(&self, start: usize, end: usize) -> Range {
        Range::new(self.position_of(start), self.position_of(end))
    }

    /// The LSP position of a byte offset believed to be on 0-based `row` (a definition knows its
    /// lines): no search through the line table when it is. Same answer as
    /// [`Document::position_of`].
    pub fn position_on_row(&self, offset: usize, row: usize) -> Position {
        let offset = offset.min(self.text.len());
        let on_row = self
            .line_starts
            .get(row)
            .is_some_and(|&start| start <= offset)
            && self
                .line_starts
                .get(row + 1)
                .is_none_or(|&next| offset < next);
        if !on_row || !self.text.is_char_boundary(offset) {
            return self.position_of(offset);
        }
        let prefix = &self.text[self.line_starts[row]..offset];
        let character = if prefix.is_ascii() {
            prefix.len()
        } else {
            prefix.chars().map(char::len_utf16).sum()
        };
        Position::new(row as u32, character as u32)
    }

    /// The end of a line's content (before its `\n` or `\r\n`).
    fn line_end(&self, line: usize) -> usize {
        let next = self
            .line_starts
            .get(line + 1)
            .copied()
            .unwrap_or(self.text.len());
        let bytes = self.text.as_bytes();
        let mut end = next;
        if end > self.line_starts[line] && bytes.get(end - 1) == Some(&b'\n') {
            end -= 1;
            if end > self.line_starts[line] && bytes.get(end - 1) == Some(&b'\r') {
                end -= 1;
            }
        }
        end
    }
}

/// Byte offsets where lines start (`\n` ends a line; `\r\n` too).
pub fn line_starts(text: &str) -> Vec<usize> {
    std::iter::once(0)
        .chain(text.match_indices('\n').map(|(index, _)| index + 1))
        .collect()
}

/// The LSP position of a byte offset in `text`, given its line starts.
pub fn position_in(text: &str, line_starts: &[usize], offset: usize) -> Position {
    let mut offset = offset.min(text.len());
    while !text.is_char_boundary(offset) {
        offset -= 1;
    }
    let line = line_starts.partition_point(|&start| start <= offset) - 1;
    let prefix = &text[line_starts[line]..offset];
    let character = if prefix.is_ascii() {
        prefix.len()
    } else {
        prefix.chars().map(char::len_utf16).sum()
    };
    Position::new(line as u32, character as u32)
}

/// The UTF-16 column of a byte column within one line of text (clamped).
pub fn utf16_column(line: &str, byte_column: usize) -> u32 {
    let mut end = byte_column.min(line.len());
    while !line.is_char_boundary(end) {
        end -= 1;
    }
    line[..end].chars().map(char::len_utf16).sum::<usize>() as u32
}

#[cfg(test)]
mod tests {
    use super::*;

    fn change(
        range: Option<((u32, u32), (u32, u32))>,
        text: &str,
    ) -> TextDocumentContentChangeEvent {
        TextDocumentContentChangeEvent {
            range: range.map(|((l1, c1), (l2, c2))| {
                Range::new(Position::new(l1, c1), Position::new(l2, c2))
            }),
            range_length: None,
            text: text.to_string(),
        }
    }

    #[test]
    fn incremental_edits_use_utf16_columns() {
        // "é" is one UTF-16 unit and two bytes; "😀" is two units and four bytes.
        let mut doc = Document::new("let é = \"😀x\";\nfn main() {}\n".into(), 1, "rust");
        // Replace the "x" after the emoji: line 0, columns 10..11 in UTF-16.
        doc.apply_changes(&[change(Some(((0, 11), (0, 12))), "y")], 2)
            .unwrap();
        assert_eq!(doc.text(), "let é = \"😀y\";\nfn main() {}\n");
        // Insert on the second line, then delete across the line break.
        doc.apply_changes(
            &[
                change(Some(((1, 3), (1, 3))), "real_"),
                change(Some(((0, 14), (1, 0))), " "),
            ],
            3,
        )
        .unwrap();
        assert_eq!(doc.text(), "let é = \"😀y\"; fn real_main() {}\n");
        assert_eq!(doc.version(), 3);
    }

    #[test]
    fn positions_round_trip_through_offsets() {
        let doc = Document::new("a😀b\r\nsecond\n".into(), 1, "text");
        let b = doc.text().find('b').unwrap();
        assert_eq!(doc.position_of(b), Position::new(0, 3));
        assert_eq!(doc.offset_of(Position::new(0, 3)), b);
        // Past the end of a line clamps to the line's end (before \r\n).
        assert_eq!(doc.offset_of(Position::new(0, 99)), b + 1);
        assert_eq!(
            doc.position_of(doc.text().find("second").unwrap()),
            Position::new(1, 0)
        );
        // Past the last line clamps to the end of the text.
        assert_eq!(doc.offset_of(Position::new(9, 0)), doc.text().len());
    }

    #[test]
    fn a_change_without_range_replaces_everything_and_reversed_ranges_are_refused() {
        let mut doc = Document::new("old".into(), 1, "text");
        doc.apply_changes(&[change(None, "new\ntext")], 2).unwrap();
        assert_eq!(doc.text(), "new\ntext");
        let error = doc
            .apply_changes(&[change(Some(((1, 2), (0, 1))), "")], 3)
            .unwrap_err();
        assert!(matches!(error, EditError::ReversedRange { .. }));
        assert_eq!(doc.text(), "new\ntext");
        assert_eq!(doc.version(), 2);
    }

    #[test]
    fn positions_on_a_known_row_match_the_searched_ones() {
        let doc = Document::new("fn a() {}\nlet é😀 = 1;\n\n  tail".into(), 1, "rust");
        for offset in 0..=doc.text().len() + 2 {
            let expected = doc.position_of(offset);
            // The right row, a wrong one, and one past the end all give the same answer.
            for row in [expected.line as usize, 0, 2, 99] {
                assert_eq!(
                    doc.position_on_row(offset, row),
                    expected,
                    "{offset} on {row}"
                );
            }
        }
    }

    #[test]
    fn the_line_table_follows_edits_as_a_rescan_would() {
        let mut doc = Document::new("one\ntwo\nthree\n".into(), 1, "text");
        type LineRange = ((u32, u32), (u32, u32));
        let edits: [(LineRange, &str); 5] = [
            (((0, 3), (0, 3)), "\nnew\nlines"),
            (((1, 0), (3, 2)), ""),
            (((0, 0), (0, 0)), "\r\n"),
            (((2, 1), (2, 1)), "é\n😀"),
            (((0, 0), (9, 0)), "all\ngone\n"),
        ];
        for (version, (range, text)) in edits.into_iter().enumerate() {
            doc.apply_changes(&[change(Some(range), text)], version as i32 + 2)
                .unwrap();
            assert_eq!(
                doc.line_starts(),
                line_starts(doc.text()),
                "{:?}",
                doc.text()
            );
        }
    }

    #[test]
    fn utf16_columns_of_byte_columns() {
        assert_eq!(utf16_column("é😀x", 0), 0);
        assert_eq!(utf16_column("é😀x", 2), 1);
        assert_eq!(utf16_column("é😀x", 6), 3);
        assert_eq!(utf16_column("é😀x", 3), 1);
    }
}
