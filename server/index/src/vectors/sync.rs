//! Keeping a vector store in step with the catalog.
//!
//! The store is derived from the catalog, like the lexical index: chunk ids are never reused
//! by the catalog, so the difference between the catalog's ids and the store's ids says what to
//! add and what to drop. A chunk whose embedding text hashes like a stored one (a file edited
//! elsewhere, a file renamed back) reuses that vector instead of being embedded again. A store
//! made by another embedder is reset and everything is embedded again.
//!
//! Long runs publish partial progress (with generation 0, which never matches a catalog that
//! has chunks) so an interrupted run keeps its vectors; the final commit records the catalog
//! generation.

use std::collections::{HashMap, HashSet};
use std::time::{Duration, Instant};

use rayon::prelude::*;

use super::inline::{file_imports, row_text};
use super::{VectorRecord, VectorStore};
use crate::catalog::{Catalog, ChunkRow};
use crate::embed::{Embedder, import_lines};
use crate::error::IndexError;

/// Publish partial progress this often.
const CHECKPOINT_INTERVAL: Duration = Duration::from_secs(10);
/// Texts embedded per round (spread over the threads), at most: a round is 8 of the
/// embedder's batches, so a slow embedder (a local transformer) still reports progress often.
const ROUND_TEXTS: usize = 8192;
/// Generation recorded by partial commits.
pub const PARTIAL_GENERATION: u64 = 0;

/// What a sync did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct SyncStats {
    /// Chunks run through the embedder.
    pub embedded: usize,
    /// Chunks that reused a stored vector of identical text.
    pub reused: usize,
    /// Vectors dropped because their chunk is gone.
    pub deleted: usize,
    /// The embedder changed (or the store was new or out of step), so everything was embedded.
    pub reset: bool,
}

/// Whether the store already mirrors the catalog for this embedder.
pub fn in_step(
    catalog: &Catalog,
    store: &dyn VectorStore,
    embedder: &dyn Embedder,
) -> Result<bool, IndexError> {
    let state = store.state();
    Ok(state.identity.as_ref() == Some(embedder.identity())
        && state.generation == catalog.generation()?)
}

/// Brings `store` up to date with `catalog` using `embedder`; `progress(done, total)` is called
/// after each round of embedding. The caller holds the writer lock.
pub fn sync_store(
    catalog: &Catalog,
    store: &dyn VectorStore,
    embedder: &dyn Embedder,
    progress: &(dyn Fn(usize, usize) + Sync),
) -> Result<SyncStats, IndexError> {
    let generation = catalog.generation()?;
    let state = store.state();
    let mut stats = SyncStats::default();
    let same_embedder = state.identity.as_ref() == Some(embedder.identity());
    if same_embedder && state.generation == generation {
        return Ok(stats);
    }
    // A store ahead of the catalog belongs to a catalog that was recreated: its ids mean nothing.
    if !same_embedder || state.generation > generation {
        store.reset(embedder.identity())?;
        stats.reset = true;
    }
    let stored: HashMap<i64, u64> = store.entries()?.into_iter().collect();
    let catalog_ids = catalog.chunk_ids()?;
    let wanted: HashSet<i64> = catalog_ids.iter().copied().collect();
    let gone: Vec<i64> = stored
        .keys()
        .filter(|id| !wanted.contains(id))
        .copied()
        .collect();
    let new_ids: Vec<i64> = catalog_ids
        .iter()
        .filter(|id| !stored.contains_key(id))
        .copied()
        .collect();
    // Vectors of chunks about to be dropped may serve new chunks with the same text.
    let reusable: HashMap<u64, i64> = gone.iter().map(|id| (stored[id], *id)).collect();

    let mut embedder_run = EmbedRun {
        store,
        embedder,
        total: new_ids.len(),
        done: 0,
        pending: Vec::new(),
        reuse: Vec::new(),
        reusable,
        last_checkpoint: Instant::now(),
        stats: &mut stats,
        progress,
    };
    if !new_ids.is_empty() {
        if new_ids.len() * 2 > catalog_ids.len() {
            // Most chunks are new (a cold build, a new embedder): one pass over the catalog.
            let new_set: HashSet<i64> = new_ids.iter().copied().collect();
            let mut current_path = String::new();
            let mut imports = Vec::new();
            catalog.for_each_chunk(|chunk| {
                if chunk.path != current_path {
                    // Chunks come in file order, the file's first chunk first.
                    current_path.clone_from(&chunk.path);
                    imports = import_lines(&chunk.text);
                }
                if new_set.contains(&chunk.id) {
                    embedder_run.add(&chunk, &imports)?;
                }
                Ok(())
            })?;
        } else {
            let mut imports_of: HashMap<String, Vec<String>> = HashMap::new();
            for ids in new_ids.chunks(1024) {
                let mut rows: Vec<ChunkRow> = catalog.chunks_by_id(ids)?.into_values().collect();
                rows.sort_by_key(|row| row.id);
                for row in rows {
                    let imports = file_imports(catalog, &row.path, &mut imports_of)?;
                    embedder_run.add(&row, imports)?;
                }
            }
        }
        embedder_run.flush()?;
        embedder_run.apply_reuse()?;
    }
    if !gone.is_empty() {
        store.delete(&gone)?;
        stats.deleted = gone.len();
    }
    store.commit(generation)?;
    Ok(stats)
}

/// Chunks waiting to be embedded, and those that reuse a stored vector.
struct EmbedRun<'a> {
    store: &'a dyn VectorStore,
    embedder: &'a dyn Embedder,
    total: usize,
    done: usize,
    pending: Vec<(VectorRecord, String)>,
    /// (stored chunk id with the same text, record without its vector, text)
    reuse: Vec<(i64, VectorRecord, String)>,
    reusable: HashMap<u64, i64>,
    last_checkpoint: Instant,
    stats: &'a mut SyncStats,
    progress: &'a (dyn Fn(usize, usize) + Sync),
}

impl EmbedRun<'_> {
    fn add(&mut self, chunk: &ChunkRow, imports: &[String]) -> Result<(), IndexError> {
        let (text, content_hash) = row_text(self.embedder, chunk, imports);
        let record = VectorRecord {
            id: chunk.id,
            content_hash,
            path: chunk.path.clone(),
            language: chunk.language.clone(),
            vector: Vec::new(),
        };
        if let Some(&old) = self.reusable.get(&content_hash) {
            self.reuse.push((old, record, text));
            return Ok(());
        }
        self.pending.push((record, text));
        if self.pending.len() >= (self.embedder.batch_size() * 8).clamp(256, ROUND_TEXTS) {
            self.flush()?;
        }
        Ok(())
    }

    /// Embeds what is pending (batches in parallel) and stages the vectors.
    fn flush(&mut self) -> Result<(), IndexError> {
        if self.pending.is_empty() {
            return Ok(());
        }
        let texts: Vec<&str> = self.pending.iter().map(|(_, text)| text.as_str()).collect();
        let embedder = self.embedder;
        let batches: Vec<Vec<Vec<f32>>> = texts
            .par_chunks(embedder.batch_size().max(1))
            .map(|batch| embedder.embed_batch(batch))
            .collect::<Result<_, _>>()?;
        let records: Vec<VectorRecord> = std::mem::take(&mut self.pending)
            .into_iter()
            .zip(batches.into_iter().flatten())
            .map(|((mut record, _), vector)| {
                record.vector = vector;
                record
            })
            .collect();
        self.done += records.len();
        self.stats.embedded += records.len();
        self.store.upsert(records)?;
        (self.progress)(self.done, self.total);
        if self.last_checkpoint.elapsed() >= CHECKPOINT_INTERVAL {
            self.store.commit(PARTIAL_GENERATION)?;
            self.last_checkpoint = Instant::now();
        }
        Ok(())
    }

    /// Copies stored vectors to the chunks whose text they were made from.
    fn apply_reuse(&mut self) -> Result<(), IndexError> {
        if self.reuse.is_empty() {
            return Ok(());
        }
        let old_ids: Vec<i64> = self.reuse.iter().map(|(old, _, _)| *old).collect();
        let vectors: HashMap<i64, Vec<f32>> = self.store.vectors(&old_ids)?.into_iter().collect();
        let mut records = Vec::with_capacity(self.reuse.len());
        for (old, mut record, text) in std::mem::take(&mut self.reuse) {
            match vectors.get(&old) {
                Some(vector) => {
                    record.vector = vector.clone();
                    records.push(record);
                }
                // Listed by the store a moment ago; if it is gone anyway, embed the text.
                None => self.pending.push((record, text)),
            }
        }
        self.done += records.len();
        self.stats.reused += records.len();
        self.store.upsert(records)?;
        self.flush()?;
        (self.progress)(self.done, self.total);
        Ok(())
    }
}
