//! Embedding chunks inside the parse workers, for embedders cheap enough to run there.
//!
//! A refresh normally embeds after the catalog commit, reading every new chunk back from the
//! catalog. With an embedder that is a table lookup (the static one), the workers embed each
//! file's chunks while its text is still in memory, and the catalog writer stages the vectors
//! under the chunk ids it just assigned; the sync that follows the commit then finds nothing
//! left to embed and only publishes. The vectors are the ones the sync would have made: same
//! text ([`chunk_text`]), same content hash. The workers quantize them to int8 ([`quantize`])
//! before handing them over: a quarter of the bytes to carry across threads and hold until
//! the catalog commits, and exactly what the embedded store would have made of the floats. A
//! store that keeps floats gets them back dequantized (`VectorStore::upsert_quantized`).

use std::collections::HashMap;
use std::sync::Arc;

use super::sync::PARTIAL_GENERATION;
use super::{QuantizedRecord, VectorStore, quantize};
use crate::catalog::{Catalog, ChunkRow};
use crate::embed::{ChunkContext, EmbedError, Embedder, chunk_embedding_text, import_lines};
use crate::error::IndexError;
use lode_syntax::Chunk;

/// Staged vectors published together during a refresh: about 60 MB staged at most, and a
/// few segments for a large cold build.
const PUBLISH_ROWS: usize = 150_000;

/// The vector of one chunk, quantized, before the catalog has given the chunk an id.
#[derive(Clone, Debug)]
pub struct ChunkVector {
    pub content_hash: u64,
    pub scale: f32,
    pub quantized: Vec<i8>,
}

/// The text a chunk is embedded as by `embedder`, and its content hash.
pub fn chunk_text(embedder: &dyn Embedder, context: &ChunkContext<'_>) -> (String, u64) {
    let text = chunk_embedding_text(context, !embedder.splits_identifiers());
    let hash = xxhash_rust::xxh3::xxh3_64(text.as_bytes());
    (text, hash)
}

/// [`chunk_text`] of a chunk read back from the catalog, with its file's `imports`.
pub fn row_text(embedder: &dyn Embedder, row: &ChunkRow, imports: &[String]) -> (String, u64) {
    chunk_text(
        embedder,
        &ChunkContext {
            path: &row.path,
            language: &row.language,
            scope: &row.scope,
            symbol: row.symbol.as_deref(),
            imports,
            text: &row.text,
        },
    )
}

/// The import lines of `path`'s file (taken from its first chunk, as indexing does), read
/// from the catalog once per path and kept in `cache`.
pub fn file_imports<'c>(
    catalog: &Catalog,
    path: &str,
    cache: &'c mut HashMap<String, Vec<String>>,
) -> Result<&'c [String], IndexError> {
    if !cache.contains_key(path) {
        let head = catalog.first_chunk_text(path)?.unwrap_or_default();
        cache.insert(path.to_string(), import_lines(&head));
    }
    Ok(cache.get(path).map_or(&[], Vec::as_slice))
}

/// The vectors of one file's chunks, in chunk order (called from a parse worker).
pub fn embed_chunks(
    embedder: &dyn Embedder,
    path: &str,
    language: &str,
    chunks: &[Chunk],
) -> Result<Vec<ChunkVector>, EmbedError> {
    let Some(first) = chunks.first() else {
        return Ok(Vec::new());
    };
    let imports = import_lines(&first.text);
    let (texts, hashes): (Vec<String>, Vec<u64>) = chunks
        .iter()
        .map(|chunk| {
            chunk_text(
                embedder,
                &ChunkContext {
                    path,
                    language,
                    scope: &chunk.scope,
                    symbol: chunk.symbol.as_deref(),
                    imports: &imports,
                    text: &chunk.text,
                },
            )
        })
        .unzip();
    let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
    let vectors = embedder.embed_batch(&refs)?;
    if vectors.len() != chunks.len() {
        return Err(EmbedError::Config(format!(
            "the embedder returned {} vectors for {} texts",
            vectors.len(),
            chunks.len()
        )));
    }
    Ok(hashes
        .into_iter()
        .zip(vectors)
        .map(|(content_hash, vector)| {
            let (scale, quantized) = quantize(&vector);
            ChunkVector {
                content_hash,
                scale,
                quantized,
            }
        })
        .collect())
}

/// The writer's side of inline embedding for one refresh: vectors of chunks written to the
/// catalog batch, held until that batch is committed, then handed to the store. A batch that
/// fails takes its vectors with it, so the store never holds a vector for a chunk id the
/// catalog rolled back (and may give out again).
pub(crate) struct InlineVectors {
    embedder: Arc<dyn Embedder>,
    store: Arc<dyn VectorStore>,
    pending: Vec<QuantizedRecord>,
    held: usize,
    reset: bool,
    /// A reset was staged and no commit has published it yet.
    reset_unpublished: bool,
    /// Vectors staged in the store and not yet published.
    unpublished: usize,
}

impl InlineVectors {
    /// Inline embedding for this refresh, when the embedder allows it and the store can take
    /// vectors by chunk id: it holds this embedder's vectors and is not ahead of the catalog
    /// (the sync would reset it then), or it is empty (then it is reset here).
    pub(crate) fn prepare(
        embedder: &Arc<dyn Embedder>,
        store: &Arc<dyn VectorStore>,
        catalog_generation: u64,
    ) -> Result<Option<InlineVectors>, IndexError> {
        if !embedder.embeds_while_parsing() {
            return Ok(None);
        }
        let state = store.state();
        let same_embedder = state.identity.as_ref() == Some(embedder.identity());
        let reset = !same_embedder || state.generation > catalog_generation;
        if reset {
            if state.count > 0 {
                return Ok(None);
            }
            store.reset(embedder.identity())?;
        }
        Ok(Some(InlineVectors {
            embedder: Arc::clone(embedder),
            store: Arc::clone(store),
            pending: Vec::new(),
            held: 0,
            reset,
            reset_unpublished: reset,
            unpublished: 0,
        }))
    }

    /// The embedder the parse workers run.
    pub(crate) fn embedder(&self) -> Arc<dyn Embedder> {
        Arc::clone(&self.embedder)
    }

    /// Holds one file's vectors under the ids the catalog batch gave its chunks.
    pub(crate) fn hold(
        &mut self,
        ids: &[i64],
        path: &str,
        language: &str,
        vectors: Vec<ChunkVector>,
    ) {
        self.held += ids.len().min(vectors.len());
        self.pending
            .extend(ids.iter().zip(vectors).map(|(&id, chunk)| QuantizedRecord {
                id,
                content_hash: chunk.content_hash,
                path: path.to_string(),
                language: language.to_string(),
                scale: chunk.scale,
                quantized: chunk.quantized,
            }));
    }

    /// Chunks embedded by the workers so far.
    pub(crate) fn embedded(&self) -> usize {
        self.held
    }

    /// Whether the store was reset for this embedder (it was empty, or held nothing usable).
    pub(crate) fn reset(&self) -> bool {
        self.reset
    }

    /// After a catalog commit: hands the held vectors to the store (staged there, quantized),
    /// and publishes what is staged as partial progress (see [`PARTIAL_GENERATION`]) once
    /// [`PUBLISH_ROWS`] have gathered, or with `last` (the refresh's final commit: the sync that
    /// follows then finds the vectors, and this embedder's identity, in the store). Publishing
    /// less often keeps a cold build's store below its segment limit, so it never merges.
    /// With nothing held and no reset, the store is left alone: a refresh that changed nothing
    /// must not knock it out of step with the catalog.
    pub(crate) fn committed(&mut self, last: bool) -> Result<(), IndexError> {
        if !self.pending.is_empty() {
            self.unpublished += self.pending.len();
            self.store
                .upsert_quantized(std::mem::take(&mut self.pending))?;
        }
        let something = self.unpublished > 0 || self.reset_unpublished;
        if something && (last || self.unpublished >= PUBLISH_ROWS) {
            self.store.commit(PARTIAL_GENERATION)?;
            self.unpublished = 0;
            self.reset_unpublished = false;
        }
        Ok(())
    }
}
