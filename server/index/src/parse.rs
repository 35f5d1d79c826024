//! Parsing one file: tree-sitter tree, tags and chunks, with a parser reused per thread.

use std::cell::RefCell;

use tree_sitter::{Parser, Tree};

use crate::chunk::{Chunk, ChunkSizes, DEFAULT_SIZES, chunk_code_with, chunk_text_with};
use crate::error::IndexError;
use crate::language::Language;
use crate::tags::{FileTags, extract_tags};

/// What lode learns from one file's text.
#[derive(Clone, Debug, Default)]
pub struct ParsedFile {
    pub tags: FileTags,
    pub chunks: Vec<Chunk>,
}

thread_local! {
    static PARSER: RefCell<Parser> = RefCell::new(Parser::new());
}

/// Parses `source` with the grammar of `language`; `None` for plain text.
pub fn parse_tree(language: Language, source: &str) -> Result<Option<Tree>, IndexError> {
    parse_with_old(language, source, None)
}

/// Parses `source` again after edits: `old` is the previous tree with every edit applied to it
/// (`Tree::edit`), so tree-sitter re-parses only what changed. `None` for plain text.
pub fn reparse_tree(
    language: Language,
    source: &str,
    old: &Tree,
) -> Result<Option<Tree>, IndexError> {
    parse_with_old(language, source, Some(old))
}

fn parse_with_old(
    language: Language,
    source: &str,
    old: Option<&Tree>,
) -> Result<Option<Tree>, IndexError> {
    let Some(grammar) = language.grammar() else {
        return Ok(None);
    };
    PARSER.with(|parser| {
        let mut parser = parser.borrow_mut();
        parser
            .set_language(&grammar)
            .map_err(|e| IndexError::Grammar {
                language: language.name(),
                message: e.to_string(),
            })?;
        // `parse` returns None only when cancelled or without a language; neither applies here,
        // but an empty result is still the honest answer if it ever does.
        Ok(parser.parse(source, old))
    })
}

/// Tags and chunks for one file, with the default chunk sizes.
pub fn parse_file(language: Language, source: &str) -> Result<ParsedFile, IndexError> {
    parse_file_with(language, source, DEFAULT_SIZES)
}

/// Tags and chunks for one file.
pub fn parse_file_with(
    language: Language,
    source: &str,
    sizes: ChunkSizes,
) -> Result<ParsedFile, IndexError> {
    match parse_tree(language, source)? {
        Some(tree) => {
            let tags = extract_tags(language, &tree, source)?;
            let chunks = chunk_code_with(&tree, source, &tags, sizes);
            Ok(ParsedFile { tags, chunks })
        }
        None => Ok(ParsedFile {
            tags: FileTags::default(),
            chunks: chunk_text_with(source, sizes),
        }),
    }
}
