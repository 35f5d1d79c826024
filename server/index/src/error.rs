//! The errors the index library returns.

use std::path::PathBuf;

/// Everything that can go wrong while building, updating or querying an index.
#[derive(Debug, thiserror::Error)]
pub enum IndexError {
    #[error("cannot read {path}: {source}")]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("cannot write {path}: {source}")]
    Write {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{path} is not inside the workspace root {root}")]
    OutsideRoot { path: PathBuf, root: PathBuf },
    #[error("workspace root {path} is not a directory")]
    NotADirectory { path: PathBuf },
    #[error(transparent)]
    Syntax(#[from] lode_syntax::SyntaxError),
    #[error(
        "the index was written by another version of lode (catalog schema {found}, this version uses {expected})"
    )]
    SchemaChanged {
        found: String,
        expected: &'static str,
    },
    #[error("the index catalog is damaged: {message}")]
    CorruptCatalog { message: String },
    #[error("index catalog (SQLite) error: {0}")]
    Catalog(#[from] rusqlite::Error),
    #[error("lexical index (tantivy) error: {0}")]
    Lexical(#[from] tantivy::TantivyError),
    #[error("invalid glob {glob:?}: {message}")]
    Glob { glob: String, message: String },
    #[error("invalid query: {0}")]
    InvalidQuery(String),
    #[error("token counter unavailable: {0}")]
    Tokenizer(String),
    #[error("embedding failed: {0}")]
    Embed(#[from] crate::embed::EmbedError),
    #[error("vector store error: {0}")]
    Vectors(#[from] crate::vectors::VectorError),
    #[error("semantic search is unavailable: {0}")]
    NoVectors(String),
    #[error(
        "another lode process{} is writing this index ({path}); try again when it finishes",
        holder.map(|pid| format!(" (pid {pid})")).unwrap_or_default()
    )]
    Locked {
        path: PathBuf,
        /// The writer's pid, when its lock file names it.
        holder: Option<u32>,
    },
}
