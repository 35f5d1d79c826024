//! lode's vector stores: where chunk embeddings live and how the nearest ones are found.
//!
//! One trait, [`VectorStore`], with the embedded backend [`EmbeddedStore`] (int8 vectors and
//! their binary codes in memory-mapped segment files inside the index directory; exact search
//! below [`EXACT_SEARCH_BELOW`] live rows, a binary first pass with int8 rescoring above,
//! see [`SearchOptions`]). A server backend
//! (Qdrant, `lode-qdrant`) implements the same trait.
//!
//! Writes are staged (`reset`, `upsert`, `delete`) and become visible to searches at `commit`.
//!
//! This crate must not know about the index's catalog, its files or chunks, nor about agents or
//! protocols: `lode-index` keeps a store in step with its catalog (the store is derived data,
//! like the lexical index, and each publication records the catalog generation it mirrors).

mod embedded;
mod glob;
mod segment;

pub use embedded::{
    EXACT_SEARCH_BELOW, EXACT_SEARCH_BELOW_VAR, EmbeddedStore, SearchOptions, SegmentInfo,
};
pub use glob::path_glob_matcher;
pub use segment::quantize;

use std::path::PathBuf;

use lode_embed::EmbedderIdentity;

/// One chunk's vector with what filters need.
#[derive(Clone, Debug, PartialEq)]
pub struct VectorRecord {
    /// The catalog's chunk id.
    pub id: i64,
    /// Hash of the text that was embedded: an unchanged text reuses its vector.
    pub content_hash: u64,
    /// Workspace-relative path of the chunk's file.
    pub path: String,
    /// Language name (`rust`, `python`, ...).
    pub language: String,
    pub vector: Vec<f32>,
}

/// A [`VectorRecord`] whose vector is already int8: `scale * quantized[i]` is component `i`
/// (see [`quantize`]). The parse workers hand vectors over in this form ([`inline`]), a
/// quarter of the bytes of the floats.
#[derive(Clone, Debug, PartialEq)]
pub struct QuantizedRecord {
    pub id: i64,
    pub content_hash: u64,
    pub path: String,
    pub language: String,
    pub scale: f32,
    pub quantized: Vec<i8>,
}

impl VectorRecord {
    /// The record with its vector quantized to int8 ([`quantize`]).
    pub fn quantized(self) -> QuantizedRecord {
        let (scale, quantized) = quantize(&self.vector);
        QuantizedRecord {
            id: self.id,
            content_hash: self.content_hash,
            path: self.path,
            language: self.language,
            scale,
            quantized,
        }
    }
}

impl QuantizedRecord {
    /// The record with its vector as floats.
    pub fn dequantized(self) -> VectorRecord {
        let scale = self.scale;
        VectorRecord {
            id: self.id,
            content_hash: self.content_hash,
            path: self.path,
            language: self.language,
            vector: self
                .quantized
                .iter()
                .map(|&q| scale * f32::from(q))
                .collect(),
        }
    }
}

/// Which records a search may return.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct VectorFilter {
    /// Language name; `None` allows all.
    pub language: Option<String>,
    /// A path glob as `lode search --path` takes it; `None` allows all.
    pub path_glob: Option<String>,
}

/// A search result: chunk id and similarity (higher is closer; cosine for unit vectors).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct VectorHit {
    pub id: i64,
    pub score: f32,
}

/// What a store holds, as last published.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct StoreState {
    /// The embedder the vectors came from (`None` for a store never written).
    pub identity: Option<EmbedderIdentity>,
    /// The catalog generation the published vectors mirror (0 for none).
    pub generation: u64,
    /// Live vectors.
    pub count: usize,
}

/// Everything that can go wrong in a vector store.
#[derive(Debug, thiserror::Error)]
pub enum VectorError {
    #[error("cannot read or write {path}: {source}")]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("the vector store is damaged ({path}): {message}")]
    Corrupt { path: PathBuf, message: String },
    #[error("vector of dimension {found} given to a store of dimension {expected}")]
    Dimension { expected: usize, found: usize },
    #[error("no embedder identity: reset the store before the first upsert")]
    NoIdentity,
    #[error("invalid glob {glob:?}: {message}")]
    Glob { glob: String, message: String },
    #[error("vector backend: {0}")]
    Backend(String),
}

/// A place to keep chunk vectors and search them. Implementations are thread-safe; writes
/// are staged until [`VectorStore::commit`], searches see the last commit.
pub trait VectorStore: Send + Sync {
    /// A short name for messages (`embedded`, `qdrant`).
    fn backend(&self) -> &'static str;

    /// Which store this is, for a query to tell whether a lease holder answers from the same
    /// one (`lode_index::watch_settings`): the backend, and where it is when that can vary.
    fn location(&self) -> String {
        self.backend().to_owned()
    }

    /// Identity, generation and size of what is published.
    fn state(&self) -> StoreState;

    /// `(chunk id, content hash)` of every live record, staged changes included.
    fn entries(&self) -> Result<Vec<(i64, u64)>, VectorError>;

    /// The stored vectors of these ids (those that exist), to reuse for unchanged texts.
    fn vectors(&self, ids: &[i64]) -> Result<Vec<(i64, Vec<f32>)>, VectorError>;

    /// Stages dropping every record and starting over with another embedder.
    fn reset(&self, identity: &EmbedderIdentity) -> Result<(), VectorError>;

    /// Stages adding or replacing records (by id).
    fn upsert(&self, records: Vec<VectorRecord>) -> Result<(), VectorError>;

    /// [`VectorStore::upsert`] of records already quantized. A store that keeps int8 vectors
    /// (the embedded one) stages them as they are, exactly what `upsert` of the floats they
    /// were quantized from would stage; the default gives `upsert` the dequantized floats.
    fn upsert_quantized(&self, records: Vec<QuantizedRecord>) -> Result<(), VectorError> {
        self.upsert(
            records
                .into_iter()
                .map(QuantizedRecord::dequantized)
                .collect(),
        )
    }

    /// Stages removing records by id (unknown ids are ignored).
    fn delete(&self, ids: &[i64]) -> Result<(), VectorError>;

    /// Publishes the staged changes as mirroring catalog `generation`.
    fn commit(&self, generation: u64) -> Result<(), VectorError>;

    /// The `k` records closest to `query` that pass `filter`, best first.
    fn search(
        &self,
        query: &[f32],
        k: usize,
        filter: &VectorFilter,
    ) -> Result<Vec<VectorHit>, VectorError>;

    /// Picks up commits made by other handles or processes.
    fn reload(&self) -> Result<(), VectorError>;

    /// Told by a process that keeps the store open to answer many queries (the lease holder):
    /// the store may prepare, in the background, what makes them faster (the embedded store
    /// maps its segments into memory). Nothing by default.
    fn keep_resident(&self) {}
}

impl std::fmt::Debug for dyn VectorStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "VectorStore({})", self.backend())
    }
}
