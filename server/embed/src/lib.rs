//! lode's embedders: turning chunk and query text into vectors.
//!
//! One trait, [`Embedder`], and its backends: the built-in static table ([`StaticEmbedder`], the
//! default: no network, no model server) and the HTTP providers ([`OpenAiEmbedder`] for
//! OpenAI-compatible `/v1/embeddings`, [`OllamaEmbedder`] for Ollama's `/api/embed`) and, with
//! the `minilm` feature, `MiniLmEmbedder` (all-MiniLM-L6-v2 from a local directory, run with
//! candle). This module
//! also owns what text a chunk is embedded as ([`chunk_embedding_text`]) and the word splitting
//! that identifiers go through before tokenization.
//!
//! Nothing here downloads model weights: the static table is compiled into the binary, and
//! MiniLM's weights are read from a directory the user filled.
//!
//! It must not know about the index, its catalog or vector stores, nor about agents or
//! protocols: `lode-index` decides what is embedded and when, and stores the vectors.

#[cfg(feature = "minilm")]
mod bert;
mod http;
#[cfg(feature = "minilm")]
mod minilm;
mod static_table;
mod text;
mod wordpiece;
mod words;

use std::sync::Arc;

use serde::{Deserialize, Serialize};

pub use http::{HttpEmbedderConfig, OllamaEmbedder, OpenAiEmbedder};
#[cfg(feature = "minilm")]
pub use minilm::{MAX_TOKENS as MINILM_MAX_TOKENS, MINILM_FILES, MiniLmEmbedder};
pub use static_table::StaticEmbedder;
pub use text::{ChunkContext, chunk_embedding_text, chunk_head_text, import_lines};
pub use words::{for_each_identifier_part, identifier_parts};

/// Which embedder produced a set of vectors. Stored with the index: a different identity means
/// every chunk is embedded again.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct EmbedderIdentity {
    /// `static`, `openai`, `ollama`, `minilm`, ...
    pub backend: String,
    /// The model name; for the static table, its name and content hash.
    pub model: String,
    /// Length of every vector.
    pub dimension: usize,
}

impl std::fmt::Display for EmbedderIdentity {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{}:{} ({} dims)",
            self.backend, self.model, self.dimension
        )
    }
}

/// Everything that can go wrong while embedding.
#[derive(Debug, thiserror::Error)]
pub enum EmbedError {
    #[error("the embedding table is damaged: {0}")]
    BadTable(String),
    #[error("cannot reach the embedding service at {url}: {message}")]
    Unreachable { url: String, message: String },
    #[error("the embedding service at {url} answered {status}: {body}")]
    Status {
        url: String,
        status: u16,
        body: String,
    },
    #[error("the embedding service at {url} sent an unusable answer: {message}")]
    BadResponse { url: String, message: String },
    #[error("the API key variable {0} is not set")]
    MissingApiKey(String),
    #[error("embedding configuration: {0}")]
    Config(String),
    #[error("the local embedding model failed: {0}")]
    Model(String),
}

/// Turns texts into vectors of one fixed dimension. Implementations are thread-safe and
/// synchronous (HTTP backends block; call them from a blocking context in async code).
pub trait Embedder: Send + Sync {
    /// Backend, model and dimension.
    fn identity(&self) -> &EmbedderIdentity;

    /// One vector per text, in order, each `identity().dimension` long. Callers may pass any
    /// number of texts; backends split them into requests of [`Embedder::batch_size`].
    fn embed_batch(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, EmbedError>;

    /// The vector of a search query (models with query prefixes override this).
    fn embed_query(&self, query: &str) -> Result<Vec<f32>, EmbedError> {
        let mut vectors = self.embed_batch(&[query])?;
        vectors
            .pop()
            .ok_or_else(|| EmbedError::Config("the embedder returned no vector".into()))
    }

    /// How many texts the index hands over per call (progress is reported between calls).
    fn batch_size(&self) -> usize {
        256
    }

    /// Similarity below which a chunk is not considered related to a query at all (semantic
    /// and hybrid search drop such hits, so a query about nothing in the code finds nothing).
    /// Depends on the model's score distribution; the default keeps every hit.
    fn relevance_floor(&self) -> f32 {
        f32::NEG_INFINITY
    }

    /// Whether this embedder's cosine similarities can be added to BM25 scores (hybrid search
    /// then fuses sentence queries by score) or only its ranks are to be trusted (reciprocal
    /// rank fusion). Only a table tuned for it says `Calibrated`.
    fn similarity_scale(&self) -> SimilarityScale {
        SimilarityScale::RankOnly
    }

    /// Whether the embedder is cheap enough to run inside the parse workers of a refresh (a
    /// table lookup, not a model or a network call). Then each file's chunks are embedded while
    /// their text is in memory, instead of being read back from the catalog afterwards.
    fn embeds_while_parsing(&self) -> bool {
        false
    }

    /// Whether the embedder splits identifiers into words itself. When it does not, chunk
    /// texts carry the split words of their identifiers as an extra line.
    fn splits_identifiers(&self) -> bool {
        false
    }
}

/// See [`Embedder::similarity_scale`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SimilarityScale {
    /// Similarities are on a scale that sums well with BM25 divided by the query's best BM25.
    Calibrated,
    /// Only the order of the similarities means something.
    RankOnly,
}

impl std::fmt::Debug for dyn Embedder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Embedder({})", self.identity())
    }
}

/// The default embedder: the built-in static table.
pub fn default_embedder() -> Result<Arc<dyn Embedder>, EmbedError> {
    Ok(Arc::new(StaticEmbedder::builtin()?))
}

/// The dot product of two vectors: their cosine when both are unit vectors.
pub fn dot(a: &[f32], b: &[f32]) -> f32 {
    a.iter().zip(b).map(|(x, y)| x * y).sum()
}

/// Scales `vector` to unit length in place (a zero vector stays zero).
pub fn normalize(vector: &mut [f32]) {
    let norm = vector.iter().map(|x| x * x).sum::<f32>().sqrt();
    if norm > 0.0 {
        for x in vector.iter_mut() {
            *x /= norm;
        }
    }
}
