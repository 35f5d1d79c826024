//! Naming a symbol and editing by it: `FILE:NAME/PATH` or `FILE:LINE:COLUMN` resolved, with a
//! fresh tree-sitter parse of the file's current text and the language's tags query (the same
//! definitions the index and the editor outline see), to the definition's ranges; and the text
//! splices that replace a definition or insert a new one next to it.
//!
//! - `name` — parsing a name ([`SymbolName`]); nothing is read.
//! - `locate` — the definitions of a text with their ranges ([`SymbolSpan`]: leading doc
//!   comments, attributes and decorators included in `full`; the definition itself from its
//!   signature in `definition`; the body block in `body`), and resolving a name to exactly one
//!   of them, or an error listing the candidates.
//! - `splice` — the new text of a file after replacing a definition or inserting next to it,
//!   with the indentation and blank lines of the place it goes.
//!
//! Pure functions over text: the callers (the agent's tools, `lode mcp`) read and write files,
//! confine paths and ask permission.

mod locate;
mod name;
mod splice;

use std::fmt;

pub use locate::{LineRange, SymbolSpan, file_symbols, locate};
pub use name::{MAX_SYMBOL_NAME_BYTES, SymbolName, SymbolTarget};
pub use splice::{Spliced, SymbolEdit, splice};

use crate::tags::DefKind;

/// A definition offered when a name matched none or several.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Candidate {
    /// `FILE:NAME/PATH`.
    pub name: String,
    pub kind: DefKind,
    /// Lines of the definition (signature to end), 1-based, inclusive.
    pub lines: LineRange,
    /// `FILE:LINE:COLUMN` of the definition's first character: a name that is never ambiguous.
    pub position: String,
}

impl fmt::Display for Candidate {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} ({}, lines {}-{}; or {})",
            self.name,
            self.kind.name(),
            self.lines.start,
            self.lines.end,
            self.position
        )
    }
}

/// Why a name names no single definition, or an edit cannot be made. The messages are written
/// for whoever wrote the name (often a model): they say what to write instead.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum SymbolError {
    #[error(
        "the symbol name is {length} bytes long; at most {MAX_SYMBOL_NAME_BYTES} are accepted. \
         Name a symbol as FILE:NAME/PATH or FILE:LINE:COLUMN"
    )]
    TooLong { length: usize },
    #[error(
        "malformed symbol name {}: {reason}. Name a symbol as FILE:NAME/PATH \
         (src/shapes.py:Circle/area, src/lib.rs:add) or FILE:LINE:COLUMN (src/lib.rs:12:5)",
        shorten(given)
    )]
    Malformed { given: String, reason: String },
    #[error(
        "{file} is not source code lode parses (Rust, Python, JavaScript, TypeScript, Go), so \
         it has no symbols to edit by; edit it by its text instead"
    )]
    Unsupported { file: String },
    #[error("{}", list(&format!("no definition {name} in {file}"), "Definitions with similar names", candidates, *total))]
    NotFound {
        name: String,
        file: String,
        candidates: Vec<Candidate>,
        /// How many candidates there were before the list was cut.
        total: usize,
    },
    #[error("{}", list(&format!("{name} names {} definitions in {file}; name one with a longer path or by FILE:LINE:COLUMN", candidates.len()), "They are", candidates, candidates.len()))]
    Ambiguous {
        name: String,
        file: String,
        candidates: Vec<Candidate>,
    },
    #[error("{}", list(&format!("no definition contains {name} in {file}"), "Definitions nearby", candidates, candidates.len()))]
    NoDefinitionAt {
        name: String,
        file: String,
        candidates: Vec<Candidate>,
    },
    #[error("{name}: {reason}")]
    OutOfRange { name: String, reason: String },
    #[error("{0}")]
    InvalidText(String),
    #[error("cannot parse {file}: {message}")]
    Parse { file: String, message: String },
}

/// At most 80 characters of a name that could not be parsed, for an error message.
fn shorten(given: &str) -> String {
    const SHOWN: usize = 80;
    match given.char_indices().nth(SHOWN) {
        Some((cut, _)) => format!("{:?}…", &given[..cut]),
        None => format!("{given:?}"),
    }
}

fn list(headline: &str, intro: &str, candidates: &[Candidate], total: usize) -> String {
    if candidates.is_empty() {
        return format!("{headline}; the file has no definitions lode recognises");
    }
    let mut text = format!("{headline}. {intro}:");
    for candidate in candidates {
        text.push_str("\n  ");
        text.push_str(&candidate.to_string());
    }
    if total > candidates.len() {
        text.push_str(&format!("\n  … and {} more", total - candidates.len()));
    }
    text
}
