//! The outline of one buffer (`textDocument/documentSymbol`): tree-sitter tags of the text the
//! editor has, nested by the byte ranges of the definitions.

use lode_index::{DefKind, Definition, FileTags, Language, extract_tags, parse_tree};
use tower_lsp_server::lsp_types::{DocumentSymbol, Range, SymbolKind};

use crate::document::Document;

/// Definitions and references of a buffer's current text; empty for text lode does not parse.
pub fn buffer_tags(
    language: Option<Language>,
    text: &str,
) -> Result<FileTags, lode_syntax::SyntaxError> {
    let Some(language) = language else {
        return Ok(FileTags::default());
    };
    match parse_tree(language, text)? {
        Some(tree) => extract_tags(language, &tree, text),
        None => Ok(FileTags::default()),
    }
}

/// The LSP kind closest to a tags kind.
pub fn symbol_kind(kind: DefKind) -> SymbolKind {
    match kind {
        DefKind::Function => SymbolKind::FUNCTION,
        DefKind::Method => SymbolKind::METHOD,
        DefKind::Class => SymbolKind::CLASS,
        DefKind::Struct => SymbolKind::STRUCT,
        DefKind::Enum => SymbolKind::ENUM,
        DefKind::Trait | DefKind::Interface => SymbolKind::INTERFACE,
        DefKind::Impl => SymbolKind::OBJECT,
        DefKind::Module => SymbolKind::MODULE,
        DefKind::Constant | DefKind::Static => SymbolKind::CONSTANT,
        DefKind::Type => SymbolKind::TYPE_PARAMETER,
        DefKind::Macro => SymbolKind::FUNCTION,
        DefKind::Field => SymbolKind::FIELD,
        DefKind::Variable => SymbolKind::VARIABLE,
        DefKind::Record => SymbolKind::STRUCT,
        DefKind::Protocol => SymbolKind::INTERFACE,
        DefKind::Section => SymbolKind::STRING,
    }
}

/// The kind named in the index (`"function"`, ...) as an LSP kind.
pub fn symbol_kind_named(name: &str) -> SymbolKind {
    DefKind::from_name(name).map_or(SymbolKind::NULL, symbol_kind)
}

/// Byte range of a definition's name: its first whole-word occurrence inside the definition
/// (the start of the definition when the name is not spelled there, as for some impls).
pub fn name_span(text: &str, definition: &Definition) -> (usize, usize) {
    let start = definition.start_byte.min(text.len());
    let end = definition.end_byte.clamp(start, text.len());
    let body = text.get(start..end).unwrap_or("");
    match find_word(body, &definition.name) {
        Some(at) => (start + at, start + at + definition.name.len()),
        None => (start, start),
    }
}

/// First occurrence of `word` in `haystack` not embedded in a longer identifier. A plain scan
/// from the start: the names looked up sit a few bytes into the text searched (a definition's
/// name), where setting up a substring searcher would cost more than the search.
pub fn find_word(haystack: &str, word: &str) -> Option<usize> {
    let bytes = haystack.as_bytes();
    let wanted = word.as_bytes();
    let &first = wanted.first()?;
    let last_start = bytes.len().checked_sub(wanted.len())?;
    (0..=last_start).find(|&at| {
        bytes[at] == first
            && &bytes[at..at + wanted.len()] == wanted
            && (at == 0 || !is_identifier_byte(bytes[at - 1]))
            && bytes
                .get(at + wanted.len())
                .is_none_or(|&next| !is_identifier_byte(next))
    })
}

/// Bytes that can continue an identifier in the languages lode parses.
pub fn is_identifier_byte(byte: u8) -> bool {
    byte.is_ascii_alphanumeric() || byte == b'_' || byte == b'$' || byte >= 0x80
}

/// The hierarchical outline of a buffer: each definition nested under the innermost
/// definition whose byte range contains it.
#[allow(deprecated)] // `DocumentSymbol::deprecated` must be spelled out to build the struct.
pub fn document_symbols(document: &Document, tags: &FileTags) -> Vec<DocumentSymbol> {
    let text = document.text();
    let mut definitions: Vec<&Definition> = tags.definitions.iter().collect();
    // Outer definitions before the ones they contain.
    definitions.sort_by_key(|def| (def.start_byte, std::cmp::Reverse(def.end_byte)));

    // A stack of open ancestors: (end byte, symbol); closed ones are folded into their parent.
    let mut roots: Vec<DocumentSymbol> = Vec::new();
    let mut stack: Vec<(usize, DocumentSymbol)> = Vec::new();
    for definition in definitions {
        while let Some((end, _)) = stack.last() {
            if definition.start_byte < *end && definition.end_byte <= *end {
                break;
            }
            close_top(&mut stack, &mut roots);
        }
        let (name_start, name_end) = name_span(text, definition);
        // Definitions know their lines: no search through the line table.
        let first_row = definition.start_line.saturating_sub(1) as usize;
        let last_row = definition.end_line.saturating_sub(1) as usize;
        let range = Range::new(
            document.position_on_row(definition.start_byte, first_row),
            document.position_on_row(definition.end_byte, last_row),
        );
        let name_row = first_row
            + text[definition.start_byte.min(name_start)..name_start]
                .bytes()
                .filter(|&byte| byte == b'\n')
                .count();
        let symbol = DocumentSymbol {
            name: definition.scope_label(),
            detail: Some(definition.signature.clone()).filter(|s| !s.is_empty()),
            kind: symbol_kind(definition.kind),
            tags: None,
            deprecated: None,
            range,
            selection_range: Range::new(
                document.position_on_row(name_start, name_row),
                document.position_on_row(name_end, name_row),
            ),
            children: None,
        };
        stack.push((definition.end_byte, symbol));
    }
    while !stack.is_empty() {
        close_top(&mut stack, &mut roots);
    }
    roots
}

fn close_top(stack: &mut Vec<(usize, DocumentSymbol)>, roots: &mut Vec<DocumentSymbol>) {
    let Some((_, symbol)) = stack.pop() else {
        return;
    };
    match stack.last_mut() {
        Some((_, parent)) => parent.children.get_or_insert_with(Vec::new).push(symbol),
        None => roots.push(symbol),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    #[test]
    fn methods_nest_under_their_impl_and_names_are_selected() {
        let text = "struct Point { x: i32 }\n\nimpl Point {\n    fn norm(&self) -> i32 { self.x }\n    fn zero() -> Self { Point { x: 0 } }\n}\n\nfn free() {}\n";
        let document = Document::new(text.into(), 1, "rust");
        let tags = buffer_tags(Language::from_path(Path::new("a.rs")), text).unwrap();
        let outline = document_symbols(&document, &tags);
        let names: Vec<&str> = outline.iter().map(|s| s.name.as_str()).collect();
        assert!(names.contains(&"Point"), "{names:?}");
        assert!(names.contains(&"free"), "{names:?}");
        let implementation = outline
            .iter()
            .find(|s| s.kind == SymbolKind::OBJECT)
            .expect("the impl block is a top-level symbol");
        let children: Vec<&str> = implementation
            .children
            .iter()
            .flatten()
            .map(|s| s.name.as_str())
            .collect();
        assert_eq!(children, ["norm", "zero"]);
        let norm = &implementation.children.as_ref().unwrap()[0];
        assert_eq!(norm.selection_range.start.line, 3);
        assert_eq!(norm.selection_range.start.character, 7);
        assert_eq!(norm.selection_range.end.character, 11);
        assert_eq!(norm.kind, SymbolKind::METHOD);
    }

    #[test]
    fn whole_words_only() {
        assert_eq!(find_word("fn normalize norm", "norm"), Some(13));
        assert_eq!(find_word("x_norm", "norm"), None);
    }
}
