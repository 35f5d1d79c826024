//! The new text of a file after an edit by symbol: a definition replaced, or a new one inserted
//! before or after it, indented like it and separated from it by blank lines as the language
//! usually is.

use super::SymbolError;
use super::locate::{LineRange, SymbolSpan};
use crate::language::Language;
use crate::tags::DefKind;

/// What to do at a symbol.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SymbolEdit {
    /// Replace the definition from its signature to its end. The doc comments, attributes and
    /// decorators above it stay, unless the new text begins with such lines: then it replaces
    /// them too, from the line equal to its first line (or all of them), so none is doubled.
    ReplaceDefinition,
    /// Insert a new definition above the symbol (above its doc comments and decorators).
    InsertBefore,
    /// Insert a new definition below the symbol.
    InsertAfter,
}

/// The file's new text and where the new text went.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Spliced {
    pub text: String,
    /// The lines the given text occupies in the new file, 1-based, inclusive.
    pub lines: LineRange,
    /// The first line of a syntax error tree-sitter finds in the new text when the old text had
    /// none: the edit probably broke the file (the edit is made all the same).
    pub syntax_error: Option<u32>,
}

/// Applies `edit` at `span` (found in `source`) with `text`.
///
/// `text` is re-indented: its common indentation is removed and the symbol's added, so it may
/// be written flush left or as it appears in the file. A text whose first line is flush left
/// and whose other lines carry the file's indentation (copied from the signature on) is
/// recognised too. Line endings follow the file's.
pub fn splice(
    language: Language,
    source: &str,
    span: &SymbolSpan,
    edit: SymbolEdit,
    text: &str,
) -> Result<Spliced, SymbolError> {
    let text = text.replace("\r\n", "\n");
    if text.trim().is_empty() {
        return Err(SymbolError::InvalidText(
            "`text` is empty; to delete a definition use edit_file".to_owned(),
        ));
    }
    let lines = reindent(&text, &span.indent, language.rules().indentation_scoped);
    let newline = if source.contains("\r\n") {
        "\r\n"
    } else {
        "\n"
    };
    let indented: Vec<String> = lines
        .iter()
        .enumerate()
        .map(|(at, line)| {
            if line.is_empty() || (at == 0 && edit == SymbolEdit::ReplaceDefinition) {
                line.clone()
            } else {
                format!("{}{line}", span.indent)
            }
        })
        .collect();
    let block = indented.join(newline);
    let count = indented.len() as u32;
    let line_of = |offset: usize| source[..offset].matches('\n').count() as u32 + 1;
    let (text, start) = match edit {
        SymbolEdit::ReplaceDefinition => {
            let first = lines.first().map(String::as_str).unwrap_or("");
            let from = replace_start(language, source, span, first);
            let mut new = String::with_capacity(source.len() + block.len());
            new.push_str(&source[..from]);
            new.push_str(&block);
            new.push_str(&source[span.definition.end..]);
            (new, line_of(from))
        }
        SymbolEdit::InsertBefore => {
            let at = source[..span.full.start].rfind('\n').map_or(0, |at| at + 1);
            let blank = newline.repeat(blank_lines(language, span) + 1);
            let mut new = String::with_capacity(source.len() + block.len() + blank.len());
            new.push_str(&source[..at]);
            new.push_str(&block);
            new.push_str(&blank);
            new.push_str(&source[at..]);
            (new, line_of(at))
        }
        SymbolEdit::InsertAfter => {
            // After the line the definition ends on.
            // From the definition's last character (a node may end with its newline).
            let mut last = span.full.end.max(span.full.start + 1).min(source.len()) - 1;
            while !source.is_char_boundary(last) {
                last -= 1;
            }
            let at = source[last..]
                .find('\n')
                .map_or(source.len(), |offset| last + offset);
            let at = if source[..at].ends_with('\r') {
                at - 1
            } else {
                at
            };
            let blank = newline.repeat(blank_lines(language, span) + 1);
            let mut new = String::with_capacity(source.len() + block.len() + blank.len());
            new.push_str(&source[..at]);
            new.push_str(&blank);
            new.push_str(&block);
            new.push_str(&source[at..]);
            (new, line_of(at) + blank_lines(language, span) as u32 + 1)
        }
    };
    let syntax_error = match first_syntax_error(language, source) {
        None => first_syntax_error(language, &text),
        Some(_) => None,
    };
    Ok(Spliced {
        text,
        lines: LineRange {
            start,
            end: start + count - 1,
        },
        syntax_error,
    })
}

/// Where a replacement starts: at the signature, or, when the new text begins with a doc
/// comment, attribute or decorator, at the line above the signature equal to that first line
/// (or the first line above it when none is), so nothing above the definition is doubled.
fn replace_start(language: Language, source: &str, span: &SymbolSpan, first: &str) -> usize {
    if span.full.start >= span.definition.start || !is_leading_line(language, first) {
        return span.definition.start;
    }
    let wanted = first.trim();
    let mut offset = span.full.start;
    for line in source[span.full.start..span.definition.start].split_inclusive('\n') {
        if line.trim() == wanted {
            return offset + (line.len() - line.trim_start().len());
        }
        offset += line.len();
    }
    span.full.start
}

/// Whether a line is a comment, attribute or decorator in `language`.
fn is_leading_line(language: Language, line: &str) -> bool {
    language.rules().is_leading_line(line)
}

/// The 1-based line of the first syntax error (or missing token) tree-sitter finds in `text`.
fn first_syntax_error(language: Language, text: &str) -> Option<u32> {
    let tree = crate::parse::parse_tree(language, text).ok()??;
    let mut node = tree.root_node();
    if !node.has_error() {
        return None;
    }
    // Descend into the first child that holds an error until the error node itself.
    loop {
        if node.is_error() || node.is_missing() {
            return Some(node.start_position().row as u32 + 1);
        }
        let mut cursor = node.walk();
        let child = node
            .children(&mut cursor)
            .find(|child| child.has_error() || child.is_missing());
        match child {
            Some(child) => node = child,
            None => return Some(node.start_position().row as u32 + 1),
        }
    }
}

/// Blank lines between the symbol and a definition inserted next to it: none between fields
/// and constants, two between Python's top-level definitions (PEP 8), one otherwise.
fn blank_lines(language: Language, span: &SymbolSpan) -> usize {
    match span.kind {
        DefKind::Field | DefKind::Constant | DefKind::Static | DefKind::Variable => 0,
        _ if language.rules().indentation_scoped && span.indent.is_empty() => 2,
        _ => 1,
    }
}

/// `text`'s lines relative to the symbol's indentation (the first without it, the others
/// with what they need beyond it); leading and trailing blank lines dropped, trailing
/// whitespace trimmed.
fn reindent(text: &str, indent: &str, indent_sensitive: bool) -> Vec<String> {
    let mut lines: Vec<&str> = text.lines().map(str::trim_end).collect();
    while lines.first().is_some_and(|line| line.is_empty()) {
        lines.remove(0);
    }
    while lines.last().is_some_and(|line| line.is_empty()) {
        lines.pop();
    }
    let leading = |line: &str| line.len() - line.trim_start().len();
    let non_blank = || lines.iter().filter(|line| !line.is_empty());
    let first_flush = lines.first().is_some_and(|line| leading(line) == 0);
    let rest: Vec<&&str> = lines
        .iter()
        .skip(1)
        .filter(|line| !line.is_empty())
        .collect();
    // The first line flush left and the others in the file's indentation: the text was copied
    // from the signature on. In Python the body must be deeper than the signature, which tells
    // a copied body (deeper than the file's indentation) from a flush-left one.
    let copied = first_flush
        && !indent.is_empty()
        && !rest.is_empty()
        && rest.iter().all(|line| line.starts_with(indent))
        && (!indent_sensitive || rest.iter().all(|line| leading(line) > indent.len()));
    let strip: String = if copied {
        indent.to_owned()
    } else {
        common_indent(non_blank().copied())
    };
    lines
        .iter()
        .enumerate()
        .map(|(at, line)| {
            if line.is_empty() {
                String::new()
            } else if at == 0 && copied {
                (*line).to_owned()
            } else {
                line.strip_prefix(strip.as_str())
                    .unwrap_or_else(|| line.trim_start())
                    .to_owned()
            }
        })
        .collect()
}

/// The whitespace every line starts with.
fn common_indent<'l>(mut lines: impl Iterator<Item = &'l str>) -> String {
    let Some(first) = lines.next() else {
        return String::new();
    };
    let mut common: &str = &first[..first.len() - first.trim_start().len()];
    for line in lines {
        let shared = common
            .bytes()
            .zip(line.bytes())
            .take_while(|(a, b)| a == b)
            .count();
        common = &common[..shared];
    }
    common.to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reindent_accepts_flush_copied_and_indented_text() {
        let four = "    ";
        // Flush left.
        assert_eq!(
            reindent("def f(self):\n    return 1\n", four, true),
            vec!["def f(self):", "    return 1"]
        );
        // As in the file.
        assert_eq!(
            reindent("    def f(self):\n        return 1\n", four, true),
            vec!["def f(self):", "    return 1"]
        );
        // Copied from the signature on.
        assert_eq!(
            reindent("def f(self):\n        return 1", four, true),
            vec!["def f(self):", "    return 1"]
        );
        // Braces: the closing line tells.
        assert_eq!(
            reindent("fn f() {\n        1\n    }", four, false),
            vec!["fn f() {", "    1", "}"]
        );
        assert_eq!(
            reindent("fn f() {\n    1\n}", four, false),
            vec!["fn f() {", "    1", "}"]
        );
        assert_eq!(reindent("\n\nfn f() {}\n\n", "", false), vec!["fn f() {}"]);
    }
}
