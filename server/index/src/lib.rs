//! lode's code intelligence: everything lode knows about a workspace's code.
//!
//! This crate owns scanning a workspace, recognising languages, extracting definitions and
//! references with tree-sitter, cutting files into retrieval chunks, the on-disk index (a SQLite
//! catalog plus a tantivy BM25 index), search, symbol and reference lookup, and the repo map.
//!
//! It must not know about agents, LLMs, editors or protocols: callers (the agent, the ACP and LSP
//! adapters, the CLI) reach it through [`Workspace`] and the plain data types it returns.

pub mod chunk;
pub mod error;
pub mod language;
pub mod parse;
mod refcodec;
pub mod tags;

pub use error::IndexError;
pub use language::Language;
pub mod catalog;
pub mod lexical;
pub mod scan;
pub mod tokenizer;
pub mod workspace;
pub use workspace::{
    RefreshMode, RefreshPhase, RefreshProgress, RefreshStats, RefreshTimings, Workspace,
    WorkspaceOptions,
};
pub mod nearby;
pub mod search;
pub mod symbol;
pub use search::{NameMatch, ReferenceHit, SearchHit, SearchRequest, SymbolHit};
pub mod repomap;
pub use repomap::{MapRequest, RepoMap};
pub mod embed;
pub mod hybrid;
mod table_signal;
pub mod vectors;
pub use hybrid::SearchMode;
pub mod lock;
pub mod query;
pub mod watch;
