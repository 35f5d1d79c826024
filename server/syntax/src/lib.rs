//! lode's languages: what it knows about code before any index exists.
//!
//! This crate owns the language registry (names, extensions, file names, `#!` lines; one row
//! per language, its grammar, tags query and rules in `grammars/<dir>/`), parsing with
//! tree-sitter, definitions and references with their scope chains (one run of a language's
//! tags query), AST-aware chunks, naming and editing a definition by symbol, and the syntax of
//! a live buffer kept current edit by edit ([`live::Syntax`], the language server's keystroke
//! path).
//!
//! It must not know about files on disk beyond the text it is handed, the index (catalog,
//! BM25, vectors), agents, LLMs, editors or protocols: `lode-index` builds on it, and the
//! language server and tools reach it through plain functions and data.

mod chunk;
mod error;
mod language;
pub mod live;
mod parse;
mod rules;
mod symbol;
mod tags;

pub use chunk::{Chunk, ChunkSizes, DEFAULT_SIZES, chunk_code_with, chunk_text_with};
pub use error::SyntaxError;
pub use language::{Language, LanguageSpec, REGISTRY};
pub use parse::{
    DEFAULT_PARSE_BUDGET, ParsedFile, parse_file, parse_file_with, parse_file_within, parse_tree,
    parse_tree_within, reparse_tree,
};
pub use rules::LanguageRules;
pub use symbol::{
    Candidate, LineRange, Spliced, SymbolEdit, SymbolError, SymbolName, SymbolSpan, SymbolTarget,
    file_symbols, locate, splice,
};
pub use tags::{
    DefKind, Definition, FileTags, RefKind, Reference, extract_tags, extract_tags_and_comments,
    extract_tags_within,
};
