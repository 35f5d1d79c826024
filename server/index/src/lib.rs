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

// The crate's public surface, named at the root: what other crates use. The modules above are
// public only until every user names these instead (issue 23); then they become private.

// The workspace's queries and the data they return.
pub use query::{Answer, Query};
pub use repomap::{MapDefinition, MapFile, count_tokens};
pub use search::{match_name, path_matcher};
pub use workspace::{DEFAULT_INDEX_DIR, relative_to_root};

// What opening a workspace and searching it take.
pub use chunk::ChunkSizes;
pub use hybrid::{FusionMethod, FusionWeights};
pub use lexical::FieldBoosts;
pub use scan::{DEFAULT_MAX_FILE_BYTES, ScanOptions};

// Files read, named and written the way the index does.
pub use scan::{read_source, relative_path, write_atomic};

// Syntax for callers that keep their own buffers (the language server).
pub use parse::{ParsedFile, parse_file, parse_tree, reparse_tree};
pub use tags::{
    DefKind, Definition, FileTags, RefKind, Reference, extract_tags, extract_tags_within,
};

// Naming a symbol in a file's text and editing by it.
pub use symbol::{
    Candidate, LineRange, Spliced, SymbolEdit, SymbolError, SymbolName, SymbolSpan, SymbolTarget,
    file_symbols, locate, splice,
};

// Code tokens (the skills' and memories' BM25).
pub use tokenizer::{CodeToken, code_tokens, stem};

// Extension point: embedders.
#[cfg(feature = "minilm")]
pub use embed::MiniLmEmbedder;
pub use embed::{
    EmbedError, Embedder, EmbedderIdentity, HttpEmbedderConfig, OllamaEmbedder, OpenAiEmbedder,
    SimilarityScale, StaticEmbedder, default_embedder,
};

// Extension point: vector stores.
pub use vectors::{
    EmbeddedStore, StoreState, VectorError, VectorFilter, VectorHit, VectorRecord, VectorStore,
};

// Keeping an index current (the watcher) and asking the process that does (the lease).
pub use watch::lease::{
    DEFAULT_FLUSH_TIMEOUT, DEFAULT_QUERY_TIMEOUT, LEASE_FILE, query as query_lease, read_lease,
    status as lease_status, stop as stop_lease,
};
pub use watch::{
    ChangeReport, ChangeSink, EMBEDDED_STORE, Flushed, Freshness, HolderStatus, LeaseError,
    LeaseInfo, NotWatched, Served, WatchError, WatchEvent, WatchOptions, Watcher, WorkspaceSink,
    default_settings, retry_locked, watch_settings,
};
