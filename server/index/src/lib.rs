//! lode's code intelligence: everything lode knows about a workspace's code.
//!
//! This crate owns scanning a workspace, the on-disk index (a SQLite catalog of every file's
//! definitions, references and chunks, a tantivy BM25 index, the vectors), search,
//! symbol and reference lookup, and the repo map. What a file's text means (its language,
//! definitions, references, chunks) is `lode-syntax`'s; this crate stores and queries it, and
//! re-exports the syntax types its callers need; turning text into vectors is `lode-embed`'s.
//!
//! It must not know about agents, LLMs, editors or protocols: callers (the agent, the ACP and LSP
//! adapters, the CLI) reach it through [`Workspace`] and the plain data types it returns.

mod activity;
mod catalog;
// The embedders are their own crate; `crate::embed` names it inside this one.
use lode_embed as embed;
mod demotion;
mod error;
mod heads;
mod hybrid;
mod lexical;
mod lock;
mod nearby;
mod query;
mod refcodec;
mod repomap;
mod scan;
mod search;
mod table_signal;
mod tokenizer;
mod vectors;
mod watch;
mod workspace;

// The crate's public surface, named at the root: the modules above are private (issue 23).

// The workspace, opening and refreshing it, and its errors.
pub use error::IndexError;
pub use lode_syntax::Language;
pub use workspace::{
    RefreshMode, RefreshPhase, RefreshProgress, RefreshStats, RefreshTimings, Workspace,
    WorkspaceOptions,
};

// The workspace's queries and the data they return.
pub use hybrid::SearchMode;
pub use query::{Answer, Query};
pub use repomap::{MapDefinition, MapFile, MapRequest, RepoMap, count_tokens};
pub use search::{
    NameMatch, QueryLetters, ReferenceHit, SearchHit, SearchRequest, SymbolHit, SymbolRank,
    match_name, path_matcher, symbol_rank,
};
pub use workspace::{DEFAULT_INDEX_DIR, relative_to_root};

// Whether a build is in progress, and how far it has come (read without waiting for it).
pub use activity::{BuildActivity, BuildGuard, BuildProgress};

// Ranking hits by how near they are to the buffer a question comes from (the language server).
pub use nearby::{Nearness, Proximity, same_file_references};

// An index on disk, read without opening its workspace (`lode doctor`).
pub use catalog::{CATALOG_FILE, CatalogCounts, index_counts};

// What opening a workspace and searching it take.
pub use demotion::{DEFAULT_DEMOTIONS, DemotionWeights};
pub use hybrid::{FusionMethod, FusionWeights, QueryShape};
pub use lexical::FieldBoosts;
pub use lode_syntax::ChunkSizes;
pub use scan::{DEFAULT_MAX_FILE_BYTES, ScanOptions};

// Files found, read, named and written the way the index does.
pub use scan::{Scan, ScannedFile, read_source, relative_path, scan, write_atomic};

// Syntax for callers that keep their own buffers (the language server).
pub use lode_syntax::{
    DefKind, Definition, FileTags, ParsedFile, RefKind, Reference, SyntaxError, extract_tags,
    extract_tags_within, parse_file, parse_tree, reparse_tree,
};

// Naming a symbol in a file's text and editing by it.
pub use lode_syntax::{
    Candidate, LineRange, Spliced, SymbolEdit, SymbolError, SymbolName, SymbolSpan, SymbolTarget,
    file_symbols, locate, splice,
};

// Code tokens (the skills' and memories' BM25), and the analyzer of the index's BM25 fields.
pub use lexical::code_analyzer;
pub use tokenizer::{CodeToken, code_tokens, stem};

// Extension point: embedders.
pub use embed::{
    ChunkContext, EmbedError, Embedder, EmbedderIdentity, HttpEmbedderConfig, OllamaEmbedder,
    OpenAiEmbedder, SimilarityScale, StaticEmbedder, chunk_embedding_text, default_embedder,
};
#[cfg(feature = "minilm")]
pub use embed::{MINILM_FILES, MINILM_MAX_TOKENS, MiniLmEmbedder};

// Extension point: vector stores.
pub use vectors::{
    EXACT_SEARCH_BELOW, EXACT_SEARCH_BELOW_VAR, EmbeddedStore, QuantizedRecord, SearchOptions,
    SegmentInfo, StoreState, VectorError, VectorFilter, VectorHit, VectorRecord, VectorStore,
};

// Keeping an index current (the watcher) and asking the process that does (the lease).
pub use watch::lease::{
    DEFAULT_FLUSH_TIMEOUT, DEFAULT_QUERY_TIMEOUT, LEASE_FILE, index as index_through_lease,
    query as query_lease, read_lease, status as lease_status, stop as stop_lease,
};
pub use watch::{
    ChangeReport, ChangeSink, EMBEDDED_STORE, Flushed, Freshness, HolderStatus, IndexPhase,
    IndexProgress, Indexed, LeaseError, LeaseInfo, NotIndexed, NotWatched, ProgressFn, Served,
    WatchError, WatchEvent, WatchOptions, Watcher, WorkspaceSink, default_settings, retry_locked,
    watch_settings,
};
