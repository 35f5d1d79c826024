//! Parsing one file: tree-sitter tree, tags and chunks, with a parser reused per thread, within
//! a time budget per file.

use std::cell::RefCell;
use std::ops::ControlFlow;
use std::time::{Duration, Instant};

use tree_sitter::{ParseOptions, Parser, Tree};

use crate::chunk::{Chunk, ChunkSizes, DEFAULT_SIZES, chunk_code_with, chunk_text_with};
use crate::error::SyntaxError;
use crate::language::Language;
use crate::tags::{FileTags, extract_tags};

/// How long one file may take to parse before it is read as plain text instead. A megabyte of
/// ordinary code parses in tens of milliseconds; what takes seconds is a grammar stuck on input
/// it was not written for (generated tables, a file in another language), and it must not stall
/// the index or the editor.
pub const DEFAULT_PARSE_BUDGET: Duration = Duration::from_secs(2);

/// What lode learns from one file's text.
#[derive(Clone, Debug, Default)]
pub struct ParsedFile {
    pub tags: FileTags,
    pub chunks: Vec<Chunk>,
    /// Why a code file was read as plain text (its parse ran over the budget), if it was.
    pub fell_back: Option<String>,
}

thread_local! {
    static PARSER: RefCell<Parser> = RefCell::new(Parser::new());
}

/// Parses `source` with the grammar of `language`; `None` for plain text.
pub fn parse_tree(language: Language, source: &str) -> Result<Option<Tree>, SyntaxError> {
    parse_with_old(language, source, None, None)
}

/// Parses `source` again after edits: `old` is the previous tree with every edit applied to it
/// (`Tree::edit`), so tree-sitter re-parses only what changed. `None` for plain text.
pub fn reparse_tree(
    language: Language,
    source: &str,
    old: &Tree,
) -> Result<Option<Tree>, SyntaxError> {
    parse_with_old(language, source, Some(old), None)
}

/// Parses `source`, giving up after `budget`: `Ok(None)` then, as for plain text.
pub fn parse_tree_within(
    language: Language,
    source: &str,
    budget: Duration,
) -> Result<Option<Tree>, SyntaxError> {
    parse_with_old(language, source, None, Some(budget))
}

fn parse_with_old(
    language: Language,
    source: &str,
    old: Option<&Tree>,
    budget: Option<Duration>,
) -> Result<Option<Tree>, SyntaxError> {
    let Some(grammar) = language.grammar() else {
        return Ok(None);
    };
    PARSER.with(|parser| {
        let mut parser = parser.borrow_mut();
        parser
            .set_language(&grammar)
            .map_err(|e| SyntaxError::Grammar {
                language: language.name(),
                message: e.to_string(),
            })?;
        let bytes = source.as_bytes();
        let mut input = |at: usize, _| bytes.get(at..).unwrap_or_default();
        let Some(budget) = budget else {
            // `parse` returns None only when cancelled or without a language; neither applies
            // here, but an empty result is still the honest answer if it ever does.
            return Ok(parser.parse_with_options(&mut input, old, None));
        };
        let deadline = Instant::now() + budget;
        let mut over_budget = |_: &tree_sitter::ParseState| {
            if Instant::now() >= deadline {
                ControlFlow::Break(())
            } else {
                ControlFlow::Continue(())
            }
        };
        let options = ParseOptions::new().progress_callback(&mut over_budget);
        let tree = parser.parse_with_options(&mut input, old, Some(options));
        // A cancelled parse leaves the parser mid-file; the next file must start afresh.
        parser.reset();
        Ok(tree)
    })
}

/// Tags and chunks for one file, with the default chunk sizes and parse budget.
pub fn parse_file(language: Language, source: &str) -> Result<ParsedFile, SyntaxError> {
    parse_file_with(language, source, DEFAULT_SIZES)
}

/// Tags and chunks for one file, with the default parse budget.
pub fn parse_file_with(
    language: Language,
    source: &str,
    sizes: ChunkSizes,
) -> Result<ParsedFile, SyntaxError> {
    parse_file_within(language, source, sizes, DEFAULT_PARSE_BUDGET)
}

/// Tags and chunks for one file. A code file whose parse takes longer than `budget` is chunked
/// as plain text, and [`ParsedFile::fell_back`] says so.
pub fn parse_file_within(
    language: Language,
    source: &str,
    sizes: ChunkSizes,
    budget: Duration,
) -> Result<ParsedFile, SyntaxError> {
    if !language.is_parsed() {
        return Ok(text_file(source, sizes, None));
    }
    match parse_with_old(language, source, None, Some(budget))? {
        Some(tree) => {
            let tags = extract_tags(language, &tree, source)?;
            let chunks = chunk_code_with(&tree, source, &tags, language.rules(), sizes);
            Ok(ParsedFile {
                tags,
                chunks,
                fell_back: None,
            })
        }
        None => Ok(text_file(
            source,
            sizes,
            Some(format!(
                "the {language} parser took longer than {} ms; read as plain text",
                budget.as_millis()
            )),
        )),
    }
}

fn text_file(source: &str, sizes: ChunkSizes, fell_back: Option<String>) -> ParsedFile {
    ParsedFile {
        tags: FileTags::default(),
        chunks: chunk_text_with(source, sizes),
        fell_back,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_parse_over_its_budget_falls_back_to_text_and_says_so() {
        let mut source = String::new();
        for i in 0..2000 {
            source.push_str(&format!("int f{i}(int x) {{ return x * {i}; }}\n"));
        }
        let parsed =
            parse_file_within(Language::C, &source, DEFAULT_SIZES, Duration::ZERO).unwrap();
        assert!(parsed.tags.definitions.is_empty());
        assert!(!parsed.chunks.is_empty());
        assert!(
            parsed
                .fell_back
                .as_deref()
                .is_some_and(|why| why.contains("plain text")),
            "{:?}",
            parsed.fell_back
        );
        // The parser is usable again for the next file, within the normal budget.
        let parsed = parse_file(Language::C, "int g(void) { return 1; }\n").unwrap();
        assert!(parsed.fell_back.is_none());
    }

    #[test]
    fn deeply_nested_code_and_minified_lines_are_chunked() {
        let nested = format!(
            "int f(void) {{ return {}1{}; }}\n",
            "(".repeat(20_000),
            ")".repeat(20_000)
        );
        let parsed = parse_file(Language::C, &nested).unwrap();
        assert!(!parsed.chunks.is_empty());
        let minified: String = (0..5000)
            .map(|i| format!("function f{i}(a){{return a+{i}}};"))
            .collect();
        let parsed = parse_file(Language::JavaScript, &minified).unwrap();
        let largest = parsed.chunks.iter().map(|c| c.text.len()).max().unwrap();
        assert!(parsed.chunks.len() > 50, "{} chunks", parsed.chunks.len());
        assert!(
            largest < 4 * DEFAULT_SIZES.max,
            "a chunk of {largest} bytes"
        );
    }
}
