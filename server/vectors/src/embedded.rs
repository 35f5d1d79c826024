//! The embedded vector store: int8 vectors in memory-mapped segment files under
//! `<index>/vectors/`. Small stores are searched exactly with a tight integer dot-product
//! loop; larger ones first score every row's binary code (one bit per dimension, stored in
//! the segment) and rescore the best candidates with their int8 vectors ([`SearchOptions`]).
//!
//! Crash safety follows tantivy's design: a commit writes new segment files and a file of dead
//! rows, flushes them, then atomically replaces `manifest.json` (write, fsync, rename, fsync of
//! the directory). A crash before the rename leaves the previous manifest and its files intact;
//! unreferenced files are removed by the next commit. Segments are never modified in place.

use parking_lot::{Mutex, MutexGuard, RwLock};
use std::cmp::Ordering;
use std::collections::{BinaryHeap, HashMap, HashSet};
use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering as AtomicOrdering};

use rayon::prelude::*;
use rustc_hash::FxHashSet;
use serde::{Deserialize, Serialize};

use crate::segment::{
    CODE_GROUP, CodeBlock, NotOrdered, Segment, SegmentRow, is_store_file, quantize,
    segment_file_name, write_segment,
};
use crate::{
    QuantizedRecord, StoreState, VectorError, VectorFilter, VectorHit, VectorRecord, VectorStore,
};
use lode_embed::EmbedderIdentity;

const MANIFEST: &str = "manifest.json";
const MANIFEST_FORMAT: u32 = 1;
/// More segments than this are merged into one at the next commit.
const MAX_SEGMENTS: usize = 8;

/// The published state's description, the one file that is replaced atomically.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
struct Manifest {
    format: u32,
    generation: u64,
    identity: Option<EmbedderIdentity>,
    /// Number for the next file written (file names are never reused while referenced).
    next_file: u64,
    segments: Vec<String>,
    /// File listing the dead rows of each segment (absent when none are dead).
    dead: Option<String>,
}

/// What searches read: the manifest and its open segments with their live rows.
#[derive(Default)]
struct Published {
    manifest: Manifest,
    segments: Vec<Arc<Segment>>,
    live: Vec<Vec<bool>>,
    count: usize,
}

/// A staged, quantised record.
struct StagedRow {
    content_hash: u64,
    path: String,
    language: String,
    scale: f32,
    quantized: Vec<i8>,
}

#[derive(Default)]
struct Staged {
    reset: Option<EmbedderIdentity>,
    upserts: HashMap<i64, StagedRow>,
    deletes: HashSet<i64>,
}

impl Staged {
    /// Stages `row` as chunk `id`'s, replacing what was staged for it.
    fn stage(&mut self, id: i64, row: StagedRow) {
        self.deletes.remove(&id);
        self.upserts.insert(id, row);
    }
}

/// The embedded vector store of one index.
pub struct EmbeddedStore {
    dir: PathBuf,
    published: RwLock<Arc<Published>>,
    staged: Mutex<Staged>,
    /// Set by [`EmbeddedStore::keep_resident`]: segments are populated as they are published.
    resident: AtomicBool,
    options: SearchOptions,
}

/// What one published segment of an [`EmbeddedStore`] holds.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SegmentInfo {
    pub name: String,
    /// Rows written, dead ones included.
    pub rows: usize,
    pub live: usize,
    /// Whether it has binary codes (a segment written before them is scanned exactly).
    pub has_codes: bool,
}

/// Below this many live rows a store is searched exactly: scanning 20,000 int8 rows of 256
/// dimensions takes about 0.3 ms on two cores (bench/README.md, "Vector search"), where the
/// two passes would save a fraction of that and could lose a hit.
pub const EXACT_SEARCH_BELOW: usize = 20_000;

/// The environment variable that overrides [`EXACT_SEARCH_BELOW`] (for benchmarks: `0`
/// searches every store approximately, a huge number every store exactly).
pub const EXACT_SEARCH_BELOW_VAR: &str = "LODE_VECTORS_EXACT_BELOW";

/// How [`EmbeddedStore::search_with`] finds the nearest rows.
///
/// A store of at least `exact_below` live rows is searched in two passes: the binary codes
/// of every row that passes the filter are scored against the query (a table lookup per
/// code byte), the best `max(k * oversample, min_candidates)` of all segments are rescored
/// with their int8 vectors, and the best `k` of those are returned with their int8 scores,
/// the scores an exact search gives them. Segments without codes (written by an older lode)
/// and segments too small to gain from it are scanned exactly in either case.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SearchOptions {
    /// Stores with fewer live rows than this are scanned exactly.
    pub exact_below: usize,
    /// Candidates rescored per hit asked for.
    pub oversample: usize,
    /// Candidates rescored at least.
    pub min_candidates: usize,
}

impl SearchOptions {
    /// Every row scored with its int8 vector: what approximate searches are measured against.
    pub const EXACT: SearchOptions = SearchOptions {
        exact_below: usize::MAX,
        oversample: 0,
        min_candidates: 0,
    };

    /// The defaults, with [`EXACT_SEARCH_BELOW_VAR`] read from the environment when set.
    pub fn from_env() -> SearchOptions {
        let mut options = SearchOptions::default();
        if let Some(below) = std::env::var(EXACT_SEARCH_BELOW_VAR)
            .ok()
            .and_then(|value| value.trim().parse().ok())
        {
            options.exact_below = below;
        }
        options
    }

    /// How many first-pass candidates a search for `k` hits rescores.
    fn candidates(&self, k: usize) -> usize {
        k.saturating_mul(self.oversample).max(self.min_candidates)
    }
}

impl Default for SearchOptions {
    /// Recall@50 against exact search was 0.99+ on the benchmark corpus with these
    /// (bench/README.md, "Vector search").
    fn default() -> SearchOptions {
        SearchOptions {
            exact_below: EXACT_SEARCH_BELOW,
            oversample: 20,
            min_candidates: 500,
        }
    }
}

impl EmbeddedStore {
    /// Opens the store in `dir` (created if missing). A missing manifest is an empty store; a
    /// damaged one, or a segment it names that is missing or damaged, is an error (the caller
    /// deletes the directory and rebuilds from the catalog).
    pub fn open(dir: &Path) -> Result<EmbeddedStore, VectorError> {
        fs::create_dir_all(dir).map_err(|source| VectorError::Io {
            path: dir.to_path_buf(),
            source,
        })?;
        let published = load(dir)?;
        Ok(EmbeddedStore {
            dir: dir.to_path_buf(),
            published: RwLock::new(Arc::new(published)),
            staged: Mutex::new(Staged::default()),
            resident: AtomicBool::new(false),
            options: SearchOptions::from_env(),
        })
    }

    /// The published segments (benchmarks and diagnostics).
    pub fn segments(&self) -> Vec<SegmentInfo> {
        let published = self.published();
        published
            .segments
            .iter()
            .zip(&published.live)
            .map(|(segment, live)| SegmentInfo {
                name: segment.name.clone(),
                rows: segment.rows,
                live: live.iter().filter(|&&alive| alive).count(),
                has_codes: segment.has_codes(),
            })
            .collect()
    }

    /// The same store searched with other options (tests and benchmarks).
    pub fn with_search_options(mut self, options: SearchOptions) -> EmbeddedStore {
        self.options = options;
        self
    }

    /// For a process that keeps the store open to answer many queries (the lease holder):
    /// every segment, and every segment a later commit or reload publishes, is mapped into
    /// memory on a background thread ([`Segment::populate`]).
    pub fn keep_resident(&self) {
        self.resident.store(true, AtomicOrdering::Release);
        self.populate_in_background();
    }

    /// Whether every published segment has been populated.
    #[cfg(test)]
    fn is_populated(&self) -> bool {
        self.published()
            .segments
            .iter()
            .all(|segment| segment.is_populated())
    }

    fn populate_in_background(&self) {
        if !self.resident.load(AtomicOrdering::Acquire) {
            return;
        }
        let segments: Vec<Arc<Segment>> = self
            .published()
            .segments
            .iter()
            .filter(|segment| !segment.is_populated())
            .cloned()
            .collect();
        if segments.is_empty() {
            return;
        }
        // Best effort: a thread that cannot start leaves the pages to be faulted in.
        let _ = std::thread::Builder::new()
            .name("lode-vectors-populate".into())
            .spawn(move || {
                for segment in segments {
                    segment.populate();
                }
            });
    }

    /// The `k` live rows closest to `query` that pass `filter`, best first, found as
    /// `options` say (see [`SearchOptions`]). Filters are applied to every row before
    /// either pass, so they are honoured exactly whichever way the rows are found.
    pub fn search_with(
        &self,
        query: &[f32],
        k: usize,
        filter: &VectorFilter,
        options: &SearchOptions,
    ) -> Result<Vec<VectorHit>, VectorError> {
        let published = self.published();
        let Some(identity) = &published.manifest.identity else {
            return Ok(Vec::new());
        };
        if query.len() != identity.dimension {
            return Err(VectorError::Dimension {
                expected: identity.dimension,
                found: query.len(),
            });
        }
        let matcher = match &filter.path_glob {
            Some(glob) => Some(
                crate::path_glob_matcher(glob).map_err(|e| VectorError::Glob {
                    glob: glob.clone(),
                    message: e.to_string(),
                })?,
            ),
            None => None,
        };
        let (query_scale, quantized) = quantize(query);
        if k == 0 || query_scale == 0.0 {
            return Ok(Vec::new());
        }
        let query = Query {
            vector: query,
            quantized: &quantized,
            scale: query_scale,
            dot: dot_i8_kernel(),
        };
        let approximate = published.count >= options.exact_below;
        let candidates = options.candidates(k).max(k);
        let mut best: Vec<Ranked> = Vec::new();
        let mut coded: Vec<(&Segment, RowFilter<'_>)> = Vec::new();
        for (segment, live) in published.segments.iter().zip(&published.live) {
            let language = match &filter.language {
                Some(name) => match segment.languages.iter().position(|l| l == name) {
                    Some(index) => Some(index as u8),
                    None => continue,
                },
                None => None,
            };
            let allowed_paths: Option<Vec<bool>> = matcher
                .as_ref()
                .map(|m| segment.paths.iter().map(|p| m.is_match(p)).collect());
            let rows = RowFilter {
                live,
                language,
                allowed_paths,
            };
            // A segment a few times the candidate pool costs about what rescoring does.
            if approximate
                && segment.has_codes()
                && segment.rows > candidates.saturating_mul(SMALL_SEGMENT_POOLS)
            {
                coded.push((segment, rows));
            } else {
                best.extend(scan_exactly(segment, &rows, &query, k));
            }
        }
        if !coded.is_empty() {
            best.extend(first_pass_and_rescore(&coded, &query, k, candidates));
        }
        best.sort();
        best.truncate(k);
        Ok(best
            .into_iter()
            .map(|r| VectorHit {
                id: r.id,
                score: r.score,
            })
            .collect())
    }

    fn published(&self) -> Arc<Published> {
        // A panic while holding the lock cannot leave `Arc<Published>` half-written.
        Arc::clone(&self.published.read())
    }

    fn staged(&self) -> MutexGuard<'_, Staged> {
        self.staged.lock()
    }

    fn dims(&self, staged: &Staged) -> Option<usize> {
        match &staged.reset {
            Some(identity) => Some(identity.dimension),
            None => self
                .published()
                .manifest
                .identity
                .as_ref()
                .map(|i| i.dimension),
        }
    }
}

fn read_manifest(dir: &Path) -> Result<Option<Manifest>, VectorError> {
    let path = dir.join(MANIFEST);
    let text = match fs::read_to_string(&path) {
        Ok(text) => text,
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(source) => return Err(VectorError::Io { path, source }),
    };
    let manifest: Manifest = serde_json::from_str(&text).map_err(|e| VectorError::Corrupt {
        path: path.clone(),
        message: e.to_string(),
    })?;
    if manifest.format != MANIFEST_FORMAT {
        return Err(VectorError::Corrupt {
            path,
            message: format!("manifest format {}", manifest.format),
        });
    }
    Ok(Some(manifest))
}

fn load(dir: &Path) -> Result<Published, VectorError> {
    let Some(manifest) = read_manifest(dir)? else {
        return Ok(Published::default());
    };
    let mut segments = Vec::with_capacity(manifest.segments.len());
    for name in &manifest.segments {
        segments.push(Arc::new(Segment::open(&dir.join(name), name)?));
    }
    if let (Some(identity), Some(segment)) = (&manifest.identity, segments.first())
        && segments.iter().any(|s| s.dims != identity.dimension)
    {
        return Err(VectorError::Corrupt {
            path: dir.join(&segment.name),
            message: format!(
                "segment dimension differs from the embedder's {}",
                identity.dimension
            ),
        });
    }
    let mut live: Vec<Vec<bool>> = segments.iter().map(|s| vec![true; s.rows]).collect();
    if let Some(name) = &manifest.dead {
        read_dead_rows(&dir.join(name), &mut live)?;
    }
    let count = live.iter().flatten().filter(|&&alive| alive).count();
    Ok(Published {
        manifest,
        segments,
        live,
        count,
    })
}

/// Dead-row file: per segment, u32 count then that many u32 row numbers.
fn read_dead_rows(path: &Path, live: &mut [Vec<bool>]) -> Result<(), VectorError> {
    let bytes = fs::read(path).map_err(|source| VectorError::Io {
        path: path.to_path_buf(),
        source,
    })?;
    let corrupt = || VectorError::Corrupt {
        path: path.to_path_buf(),
        message: "dead-row list does not match its segments".into(),
    };
    let mut words = bytes
        .chunks_exact(4)
        .map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]) as usize);
    if bytes.len() % 4 != 0 {
        return Err(corrupt());
    }
    for rows in live.iter_mut() {
        let count = words.next().ok_or_else(corrupt)?;
        for _ in 0..count {
            let row = words.next().ok_or_else(corrupt)?;
            *rows.get_mut(row).ok_or_else(corrupt)? = false;
        }
    }
    if words.next().is_some() {
        return Err(corrupt());
    }
    Ok(())
}

fn write_file_synced(path: &Path, bytes: &[u8]) -> Result<(), VectorError> {
    let io = |source| VectorError::Io {
        path: path.to_path_buf(),
        source,
    };
    let mut file = fs::File::create(path).map_err(io)?;
    file.write_all(bytes).map_err(io)?;
    file.sync_all().map_err(io)
}

fn sync_dir(dir: &Path) -> Result<(), VectorError> {
    fs::File::open(dir)
        .and_then(|d| d.sync_all())
        .map_err(|source| VectorError::Io {
            path: dir.to_path_buf(),
            source,
        })
}

/// An entry of the top-k heap, ordered so the heap's top is the worst kept hit. Equal scores
/// are ordered by content hash, so two indexes of the same files rank alike whatever ids their
/// chunks got.
struct Ranked {
    score: f32,
    content_hash: u64,
    id: i64,
}

impl PartialEq for Ranked {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}
impl Eq for Ranked {}
impl PartialOrd for Ranked {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for Ranked {
    fn cmp(&self, other: &Self) -> Ordering {
        // Better = higher score, then lower hash, then lower id; the heap keeps the worst on top.
        other
            .score
            .total_cmp(&self.score)
            .then(self.content_hash.cmp(&other.content_hash))
            .then(self.id.cmp(&other.id))
    }
}

/// Rows per parallel scan block.
const SCAN_BLOCK_ROWS: usize = 16_384;

/// Keeps the `k` best candidates in `heap` (whose top is the worst kept).
fn keep_best(heap: &mut BinaryHeap<Ranked>, candidate: Ranked, k: usize) {
    if heap.len() < k {
        heap.push(candidate);
    } else if heap.peek().is_some_and(|worst| candidate < *worst) {
        heap.pop();
        heap.push(candidate);
    }
}

/// A segment is scanned exactly when it holds no more than this many candidate pools.
const SMALL_SEGMENT_POOLS: usize = 4;

/// A search's query in the forms the passes use.
struct Query<'a> {
    vector: &'a [f32],
    quantized: &'a [i8],
    scale: f32,
    dot: fn(&[i8], &[u8]) -> i32,
}

impl Query<'_> {
    /// A row's int8 score: the score every hit is returned with, whichever pass found it.
    fn ranked(&self, segment: &Segment, row: usize) -> Ranked {
        Ranked {
            score: self.exact_score(segment, row),
            content_hash: segment.content_hash(row),
            id: segment.id(row),
        }
    }

    fn exact_score(&self, segment: &Segment, row: usize) -> f32 {
        (self.dot)(self.quantized, segment.quantized(row)) as f32 * segment.scale(row) * self.scale
    }
}

/// Which rows of one segment a search may return.
struct RowFilter<'a> {
    live: &'a [bool],
    language: Option<u8>,
    allowed_paths: Option<Vec<bool>>,
}

impl RowFilter<'_> {
    #[inline]
    fn accepts(&self, segment: &Segment, row: usize) -> bool {
        self.live[row]
            && self
                .language
                .is_none_or(|l| segment.language_index(row) == l)
            && self
                .allowed_paths
                .as_ref()
                .is_none_or(|allowed| allowed[segment.path_index(row) as usize])
    }
}

/// The best `k` rows of a segment, every accepted row scored with its int8 vector.
fn scan_exactly(
    segment: &Segment,
    rows: &RowFilter<'_>,
    query: &Query<'_>,
    k: usize,
) -> Vec<Ranked> {
    // Blocks of rows are scanned in parallel, each keeping its own top k.
    let heaps: Vec<BinaryHeap<Ranked>> = (0..segment.rows)
        .into_par_iter()
        .step_by(SCAN_BLOCK_ROWS)
        .map(|block_start| {
            let mut heap: BinaryHeap<Ranked> = BinaryHeap::with_capacity(k + 1);
            let block_end = (block_start + SCAN_BLOCK_ROWS).min(segment.rows);
            for row in block_start..block_end {
                if !rows.accepts(segment, row) {
                    continue;
                }
                let score = query.exact_score(segment, row);
                // Most rows lose to the worst kept hit: skip reading their id and hash.
                if heap.len() >= k && heap.peek().is_some_and(|worst| score < worst.score) {
                    continue;
                }
                keep_best(&mut heap, query.ranked(segment, row), k);
            }
            heap
        })
        .collect();
    heaps.into_iter().flatten().collect()
}

/// A first-pass candidate: its estimated score and where it lies. Ordered so a heap's top is
/// the worst kept (lowest estimate; among equals, the last row).
#[derive(Clone, Copy)]
struct Candidate {
    estimate: f32,
    segment: u32,
    row: u32,
}

impl PartialEq for Candidate {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}
impl Eq for Candidate {}
impl PartialOrd for Candidate {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for Candidate {
    fn cmp(&self, other: &Self) -> Ordering {
        other
            .estimate
            .total_cmp(&self.estimate)
            .then(self.segment.cmp(&other.segment))
            .then(self.row.cmp(&other.row))
    }
}

/// Bits per query component in the first pass (RaBitQ found 4 enough; on the benchmark
/// corpus recall@50 was the same as with the full int8 query, bench/README.md).
const QUERY_BITS: u32 = 4;

/// The query in the form the first pass scores codes with. Each component `i` is approximated
/// as `low + step * level_i`, `level_i` in `0..2^QUERY_BITS`. For every byte position `p` of a
/// code, `tables[p]` holds the sum of the levels of the components whose bits are set, for
/// each of the 16 values of the byte's low nibble (components `8p..8p+4`; bytes `0..16`) and of
/// its high nibble (`8p+4..8p+8`; bytes `32..48`); each table is stored twice, once per
/// 128-bit lane of an AVX2 register, for `vpshufb`. A sum of four levels fits a byte.
struct QueryTables {
    tables: Vec<[u8; 64]>,
    low: f32,
    step: f32,
    /// The sum of the approximated components.
    total: f32,
}

impl QueryTables {
    fn new(query: &[f32]) -> QueryTables {
        let low = query.iter().copied().fold(f32::INFINITY, f32::min);
        let high = query.iter().copied().fold(f32::NEG_INFINITY, f32::max);
        let top = ((1u32 << QUERY_BITS) - 1) as f32;
        let step = if high > low { (high - low) / top } else { 0.0 };
        // An empty query leaves `low` infinite.
        let low = if low.is_finite() { low } else { 0.0 };
        let levels: Vec<u8> = query
            .iter()
            .map(|&q| {
                if step > 0.0 {
                    // In 0..=15 (a NaN component becomes 0).
                    ((q - low) / step).round().clamp(0.0, top) as u8
                } else {
                    0
                }
            })
            .collect();
        let level_sum: u32 = levels.iter().map(|&l| u32::from(l)).sum();
        let tables = levels
            .chunks(8)
            .map(|byte_levels| {
                let mut table = [0u8; 64];
                for (half, offset) in [(0usize, 0usize), (4, 32)] {
                    let nibble_levels = byte_levels.get(half..).unwrap_or(&[]);
                    for nibble in 0..16usize {
                        let sum: u8 = nibble_levels
                            .iter()
                            .take(4)
                            .enumerate()
                            .filter(|&(bit, _)| nibble & (1 << bit) != 0)
                            .map(|(_, &level)| level)
                            .sum();
                        table[offset + nibble] = sum;
                        table[offset + 16 + nibble] = sum;
                    }
                }
                table
            })
            .collect();
        QueryTables {
            tables,
            low,
            step,
            total: low * query.len() as f32 + step * level_sum as f32,
        }
    }

    /// The estimate of a row's score from the sum of the levels of its code's set bits and
    /// the number of those bits: the query's dot product with the centre, plus the row's
    /// factor times the approximated query's dot product with the code's ±1 signs.
    #[inline]
    fn estimate(&self, centre_dot: f32, factor: f32, set_bits: u16, level_sum: u16) -> f32 {
        let set = self.low * f32::from(set_bits) + self.step * f32::from(level_sum);
        centre_dot + factor * (2.0 * set - self.total)
    }
}

/// Writes to `out` the first-pass estimate of every row of a block of codes (see
/// [`QueryTables::estimate`]); the `f32` is the query's dot product with the segment's centre.
type EstimateKernel = fn(&QueryTables, &CodeBlock<'_>, f32, &mut Vec<f32>);

/// The fastest form of the first pass this CPU runs: 32 rows at a time with AVX2 byte
/// shuffles, or a table lookup per code byte and row.
fn estimate_kernel() -> EstimateKernel {
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("avx2") {
        return estimates_avx2_checked;
    }
    estimates_portable
}

/// The sums of the query levels of the set bits of one group's 32 codes.
fn group_level_sums(tables: &QueryTables, group: &[u8]) -> [u16; CODE_GROUP] {
    let mut sums = [0u16; CODE_GROUP];
    for (bytes, table) in group.chunks_exact(CODE_GROUP).zip(&tables.tables) {
        for (sum, &byte) in sums.iter_mut().zip(bytes) {
            *sum += u16::from(table[usize::from(byte & 0x0f)])
                + u16::from(table[32 + usize::from(byte >> 4)]);
        }
    }
    sums
}

/// Appends the estimates of the rows `first..` of one group from their level sums.
fn push_estimates(
    tables: &QueryTables,
    block: &CodeBlock<'_>,
    centre_dot: f32,
    first: usize,
    sums: &[u16],
    out: &mut Vec<f32>,
) {
    let factors = block.factors.chunks_exact(4).skip(first);
    let counts = block.counts.chunks_exact(2).skip(first);
    for ((&level_sum, factor), set_bits) in sums.iter().zip(factors).zip(counts) {
        let factor = f32::from_le_bytes([factor[0], factor[1], factor[2], factor[3]]);
        let set_bits = u16::from_le_bytes([set_bits[0], set_bits[1]]);
        out.push(tables.estimate(centre_dot, factor, set_bits, level_sum));
    }
}

fn estimates_portable(
    tables: &QueryTables,
    block: &CodeBlock<'_>,
    centre_dot: f32,
    out: &mut Vec<f32>,
) {
    out.clear();
    let group_bytes = CODE_GROUP * block.width;
    if group_bytes == 0 {
        return;
    }
    for (index, group) in block.grouped.chunks_exact(group_bytes).enumerate() {
        let sums = group_level_sums(tables, group);
        push_estimates(tables, block, centre_dot, index * CODE_GROUP, &sums, out);
    }
}

#[cfg(target_arch = "x86_64")]
fn estimates_avx2_checked(
    tables: &QueryTables,
    block: &CodeBlock<'_>,
    centre_dot: f32,
    out: &mut Vec<f32>,
) {
    // SAFETY: `estimate_kernel` hands this function out only after checking that the CPU
    // supports AVX2, the one requirement of `estimates_avx2`.
    unsafe { estimates_avx2(tables, block, centre_dot, out) }
}

/// [`estimates_portable`] with AVX2: per code byte of 32 rows, two `vpshufb` look up the
/// level sums of both nibbles in all 32 rows at once; the estimates are computed 8 rows at a
/// time. A last group of fewer than 32 rows is finished like the portable loop.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
fn estimates_avx2(
    tables: &QueryTables,
    block: &CodeBlock<'_>,
    centre_dot: f32,
    out: &mut Vec<f32>,
) {
    use std::arch::x86_64::{
        __m128i, _mm_loadu_si128, _mm256_add_epi8, _mm256_add_epi16, _mm256_add_ps,
        _mm256_castsi256_si128, _mm256_cvtepi32_ps, _mm256_cvtepu16_epi32,
        _mm256_extracti128_si256, _mm256_loadu_ps, _mm256_mul_ps, _mm256_set1_ps,
        _mm256_setzero_si256, _mm256_storeu_ps, _mm256_sub_ps, _mm256_unpackhi_epi8,
        _mm256_unpacklo_epi8,
    };
    out.clear();
    let group_bytes = CODE_GROUP * block.width;
    if group_bytes == 0 {
        return;
    }
    let rows = (block.factors.len() / 4).min(block.counts.len() / 2);
    out.reserve(rows);
    let zero = _mm256_setzero_si256();
    let twice_low = _mm256_set1_ps(2.0 * tables.low);
    let twice_step = _mm256_set1_ps(2.0 * tables.step);
    let total = _mm256_set1_ps(tables.total);
    let centre = _mm256_set1_ps(centre_dot);
    for (index, group) in block.grouped.chunks_exact(group_bytes).enumerate() {
        let first = index * CODE_GROUP;
        if first + CODE_GROUP > rows {
            let sums = group_level_sums(tables, group);
            let tail = rows.saturating_sub(first);
            push_estimates(tables, block, centre_dot, first, &sums[..tail], out);
            continue;
        }
        // u16 sums of rows 0..8 and 16..24 (`low`), 8..16 and 24..32 (`high`): the byte
        // unpacks work within each 128-bit lane. Two code bytes' sums (at most 120 each) are
        // added as bytes before they are widened: half the unpacks.
        let mut low = zero;
        let mut high = zero;
        let mut bytes_and_tables = group.chunks_exact(CODE_GROUP).zip(&tables.tables);
        while let Some((bytes, table)) = bytes_and_tables.next() {
            let mut sums = byte_level_sums(bytes, table);
            if let Some((bytes, table)) = bytes_and_tables.next() {
                sums = _mm256_add_epi8(sums, byte_level_sums(bytes, table));
            }
            low = _mm256_add_epi16(low, _mm256_unpacklo_epi8(sums, zero));
            high = _mm256_add_epi16(high, _mm256_unpackhi_epi8(sums, zero));
        }
        let eights = [
            _mm256_castsi256_si128(low),
            _mm256_castsi256_si128(high),
            _mm256_extracti128_si256(low, 1),
            _mm256_extracti128_si256(high, 1),
        ];
        let mut estimates = [0.0f32; CODE_GROUP];
        for (eight, level_sums) in eights.into_iter().enumerate() {
            let row = first + 8 * eight;
            // SAFETY: the group is whole (`first + 32 <= rows`), so the 8 factors (32 bytes)
            // and 8 counts (16 bytes) of rows `row..row + 8` lie inside their columns; the
            // store writes 32 bytes into `estimates[8 * eight..]`, which has them.
            unsafe {
                let factors = _mm256_loadu_ps(block.factors[4 * row..].as_ptr().cast::<f32>());
                let counts = _mm256_cvtepi32_ps(_mm256_cvtepu16_epi32(_mm_loadu_si128(
                    block.counts[2 * row..].as_ptr().cast::<__m128i>(),
                )));
                let level_sums = _mm256_cvtepi32_ps(_mm256_cvtepu16_epi32(level_sums));
                // centre_dot + factor * (2 * (low * set_bits + step * level_sum) - total)
                let signed = _mm256_sub_ps(
                    _mm256_add_ps(
                        _mm256_mul_ps(twice_low, counts),
                        _mm256_mul_ps(twice_step, level_sums),
                    ),
                    total,
                );
                _mm256_storeu_ps(
                    estimates[8 * eight..].as_mut_ptr(),
                    _mm256_add_ps(centre, _mm256_mul_ps(factors, signed)),
                );
            }
        }
        out.extend_from_slice(&estimates);
    }
}

/// The sums of the query levels of the set bits of one code byte of 32 rows (`bytes`, one per
/// row), at most 120 each: two `vpshufb` look both nibbles up in `table`.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
#[inline]
fn byte_level_sums(bytes: &[u8], table: &[u8; 64]) -> std::arch::x86_64::__m256i {
    use std::arch::x86_64::{
        __m256i, _mm256_add_epi8, _mm256_and_si256, _mm256_loadu_si256, _mm256_set1_epi8,
        _mm256_setzero_si256, _mm256_shuffle_epi8, _mm256_srli_epi16,
    };
    if bytes.len() < CODE_GROUP {
        return _mm256_setzero_si256();
    }
    let nibble = _mm256_set1_epi8(0x0f);
    // SAFETY: `bytes` holds 32 bytes at least (checked above) and `table` 64: each load
    // reads 32 bytes inside them, unaligned loads allowed.
    let (codes, low_table, high_table) = unsafe {
        (
            _mm256_loadu_si256(bytes.as_ptr().cast::<__m256i>()),
            _mm256_loadu_si256(table.as_ptr().cast::<__m256i>()),
            _mm256_loadu_si256(table[32..].as_ptr().cast::<__m256i>()),
        )
    };
    let low_nibbles = _mm256_and_si256(codes, nibble);
    let high_nibbles = _mm256_and_si256(_mm256_srli_epi16(codes, 4), nibble);
    // Two sums of four levels: at most 120, a byte.
    _mm256_add_epi8(
        _mm256_shuffle_epi8(low_table, low_nibbles),
        _mm256_shuffle_epi8(high_table, high_nibbles),
    )
}

/// The best `capacity` candidates offered, kept in a buffer that is cut back to them whenever
/// it doubles: constant time per candidate (a heap of a thousand candidates cost more than
/// scoring the codes did).
struct Pool {
    capacity: usize,
    items: Vec<Candidate>,
    /// The worst kept once the pool is full: only better candidates are taken.
    worst: Option<Candidate>,
}

impl Pool {
    fn new(capacity: usize) -> Pool {
        Pool {
            capacity: capacity.max(1),
            items: Vec::new(),
            worst: None,
        }
    }

    /// Whether a candidate with this estimate could be kept (cheap test before building it).
    #[inline]
    fn admits(&self, estimate: f32) -> bool {
        self.worst.is_none_or(|worst| estimate >= worst.estimate)
    }

    /// Which of these estimates (at most 32) could be kept: bit `i` for `estimates[i]`
    /// ([`Pool::admits`] for a group of them, in one vectorised comparison).
    #[inline]
    fn admitted(&self, estimates: &[f32]) -> u32 {
        debug_assert!(estimates.len() <= 32);
        match self.worst {
            None => u32::MAX
                .checked_shr(32 - estimates.len() as u32)
                .unwrap_or(0),
            Some(worst) => estimates
                .iter()
                .enumerate()
                .fold(0, |mask, (index, &estimate)| {
                    mask | (u32::from(estimate >= worst.estimate) << index)
                }),
        }
    }

    #[inline]
    fn offer(&mut self, candidate: Candidate) {
        if self.worst.is_some_and(|worst| candidate >= worst) {
            return;
        }
        self.items.push(candidate);
        if self.items.len() >= 2 * self.capacity {
            self.cut();
        }
    }

    fn cut(&mut self) {
        if self.items.len() >= self.capacity {
            // Better candidates order first: the best `capacity` end up before this index.
            self.items.select_nth_unstable(self.capacity - 1);
            self.items.truncate(self.capacity);
            self.worst = self.items.last().copied();
        }
    }

    fn merge(mut self, other: Pool) -> Pool {
        for candidate in other.items {
            self.offer(candidate);
        }
        self
    }
}

/// The two-pass search over segments with binary codes: every accepted row's code is scored,
/// the `candidates` best estimates over all these segments are rescored with their int8
/// vectors, and the best `k` of those returned.
fn first_pass_and_rescore(
    segments: &[(&Segment, RowFilter<'_>)],
    query: &Query<'_>,
    k: usize,
    candidates: usize,
) -> Vec<Ranked> {
    let tables = QueryTables::new(query.vector);
    let estimate = estimate_kernel();
    let blocks: Vec<(usize, usize)> = segments
        .iter()
        .enumerate()
        .flat_map(|(index, (segment, _))| {
            (0..segment.rows)
                .step_by(SCAN_BLOCK_ROWS)
                .map(move |start| (index, start))
        })
        .collect();
    // Each segment's codes are signs around its own centre: the query's dot product with
    // that centre is the estimate's constant part.
    let centre_dots: Vec<f32> = segments
        .iter()
        .map(|(segment, _)| {
            segment
                .centre()
                .iter()
                .zip(query.vector)
                .map(|(c, q)| c * q)
                .sum()
        })
        .collect();
    // Each pool starts empty and takes every row until it is full: a few large shares of
    // the blocks, not one pool per block.
    let share = blocks
        .len()
        .div_ceil(2 * rayon::current_num_threads())
        .max(1);
    let pool = blocks
        .par_iter()
        .with_min_len(share)
        .fold(
            || (Pool::new(candidates), Vec::new()),
            |(mut pool, mut estimates), &(index, block_start)| {
                let (segment, rows) = &segments[index];
                let block = block_start..(block_start + SCAN_BLOCK_ROWS).min(segment.rows);
                let Some(codes) = segment.code_block(block.clone()) else {
                    return (pool, estimates);
                };
                estimate(&tables, &codes, centre_dots[index], &mut estimates);
                for (group, group_estimates) in estimates.chunks(CODE_GROUP).enumerate() {
                    // Once the pool is full, most groups hold no row it would take, and the
                    // others one or two: one vectorised comparison finds them, and only
                    // they are visited (the pool's bar may rise on the way: checked again).
                    let mut admitted = pool.admitted(group_estimates);
                    let first = block.start + group * CODE_GROUP;
                    while admitted != 0 {
                        let offset = admitted.trailing_zeros() as usize;
                        admitted &= admitted - 1;
                        let (row, estimate) = (first + offset, group_estimates[offset]);
                        if pool.admits(estimate) && rows.accepts(segment, row) {
                            pool.offer(Candidate {
                                estimate,
                                // Segments are a handful and rows fit the file format's u32.
                                segment: index as u32,
                                row: row as u32,
                            });
                        }
                    }
                }
                (pool, estimates)
            },
        )
        .map(|(pool, _)| pool)
        .reduce(|| Pool::new(candidates), Pool::merge);
    let mut pool = pool.items;
    pool.sort();
    pool.truncate(candidates);
    // Rescored in file order, so rows close together are read together.
    pool.sort_unstable_by_key(|c| (c.segment, c.row));
    let mut best: BinaryHeap<Ranked> = BinaryHeap::with_capacity(k + 1);
    for candidate in pool {
        let segment = segments[candidate.segment as usize].0;
        keep_best(&mut best, query.ranked(segment, candidate.row as usize), k);
    }
    best.into_vec()
}

/// Integer dot product of a quantised query with a stored row (written to vectorise).
#[inline(always)]
fn dot_i8(query: &[i8], row: &[u8]) -> i32 {
    query
        .iter()
        .zip(row)
        .map(|(&q, &r)| i32::from(q) * i32::from(r as i8))
        .sum()
}

/// The fastest form of [`dot_i8`] this CPU runs. The default x86-64 target only vectorises the
/// loop with SSE2; the same loop compiled for AVX2 scans rows about twice as fast
/// (bench/README.md, "Vector scan").
fn dot_i8_kernel() -> fn(&[i8], &[u8]) -> i32 {
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("avx2") {
        return dot_i8_avx2_checked;
    }
    dot_i8_portable
}

fn dot_i8_portable(query: &[i8], row: &[u8]) -> i32 {
    dot_i8(query, row)
}

#[cfg(target_arch = "x86_64")]
fn dot_i8_avx2_checked(query: &[i8], row: &[u8]) -> i32 {
    // SAFETY: `dot_i8_kernel` hands this function out only after checking that the CPU
    // supports AVX2, the one requirement of `dot_i8_avx2`.
    unsafe { dot_i8_avx2(query, row) }
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
fn dot_i8_avx2(query: &[i8], row: &[u8]) -> i32 {
    dot_i8(query, row)
}

impl VectorStore for EmbeddedStore {
    fn backend(&self) -> &'static str {
        "embedded"
    }

    fn state(&self) -> StoreState {
        let published = self.published();
        StoreState {
            identity: published.manifest.identity.clone(),
            generation: published.manifest.generation,
            count: published.count,
        }
    }

    fn entries(&self) -> Result<Vec<(i64, u64)>, VectorError> {
        let staged = self.staged();
        let mut entries = Vec::new();
        if staged.reset.is_none() {
            let published = self.published();
            for (segment, live) in published.segments.iter().zip(&published.live) {
                for row in (0..segment.rows).filter(|&row| live[row]) {
                    let id = segment.id(row);
                    if !staged.deletes.contains(&id) && !staged.upserts.contains_key(&id) {
                        entries.push((id, segment.content_hash(row)));
                    }
                }
            }
        }
        entries.extend(
            staged
                .upserts
                .iter()
                .map(|(&id, row)| (id, row.content_hash)),
        );
        Ok(entries)
    }

    fn vectors(&self, ids: &[i64]) -> Result<Vec<(i64, Vec<f32>)>, VectorError> {
        let mut found = Vec::with_capacity(ids.len());
        let mut have: FxHashSet<i64> = FxHashSet::default();
        {
            let staged = self.staged();
            for &id in ids {
                if let Some(row) = staged.upserts.get(&id)
                    && have.insert(id)
                {
                    found.push((
                        id,
                        row.quantized
                            .iter()
                            .map(|&q| row.scale * f32::from(q))
                            .collect(),
                    ));
                }
            }
        }
        let published = self.published();
        let mut wanted: Vec<i64> = ids
            .iter()
            .copied()
            .filter(|id| !have.contains(id))
            .collect();
        wanted.sort_unstable();
        wanted.dedup();
        for (segment, live) in published.segments.iter().zip(&published.live) {
            if wanted.is_empty() {
                break;
            }
            let rows = rows_holding(segment, &wanted);
            for row in rows.into_iter().filter(|&row| live[row]) {
                let id = segment.id(row);
                if have.insert(id) {
                    found.push((id, segment.vector(row)));
                }
            }
            wanted.retain(|id| !have.contains(id));
        }
        Ok(found)
    }

    fn reset(&self, identity: &EmbedderIdentity) -> Result<(), VectorError> {
        let mut staged = self.staged();
        *staged = Staged {
            reset: Some(identity.clone()),
            ..Staged::default()
        };
        Ok(())
    }

    fn upsert(&self, records: Vec<VectorRecord>) -> Result<(), VectorError> {
        // Quantizing keeps a vector's length, so the dimension check below still sees it.
        self.upsert_quantized(records.into_iter().map(VectorRecord::quantized).collect())
    }

    fn upsert_quantized(&self, records: Vec<QuantizedRecord>) -> Result<(), VectorError> {
        let mut staged = self.staged();
        let dims = self.dims(&staged).ok_or(VectorError::NoIdentity)?;
        for record in records {
            if record.quantized.len() != dims {
                return Err(VectorError::Dimension {
                    expected: dims,
                    found: record.quantized.len(),
                });
            }
            staged.stage(
                record.id,
                StagedRow {
                    content_hash: record.content_hash,
                    path: record.path,
                    language: record.language,
                    scale: record.scale,
                    quantized: record.quantized,
                },
            );
        }
        Ok(())
    }

    fn delete(&self, ids: &[i64]) -> Result<(), VectorError> {
        let mut staged = self.staged();
        for &id in ids {
            staged.upserts.remove(&id);
            staged.deletes.insert(id);
        }
        Ok(())
    }

    fn commit(&self, generation: u64) -> Result<(), VectorError> {
        let mut staged = self.staged();
        let current = self.published();
        let staged_nothing =
            staged.reset.is_none() && staged.upserts.is_empty() && staged.deletes.is_empty();
        if staged_nothing && current.manifest.generation == generation {
            return Ok(());
        }
        let mut manifest = current.manifest.clone();
        manifest.format = MANIFEST_FORMAT;
        manifest.generation = generation;
        let (mut segments, mut live) = match &staged.reset {
            Some(identity) => {
                manifest.identity = Some(identity.clone());
                (Vec::new(), Vec::new())
            }
            None => (current.segments.clone(), current.live.clone()),
        };
        let dims = manifest.identity.as_ref().map(|i| i.dimension);
        // Rows replaced or deleted die.
        for (segment, rows) in segments.iter().zip(live.iter_mut()) {
            for (row, alive) in rows.iter_mut().enumerate() {
                if *alive {
                    let id = segment.id(row);
                    if staged.deletes.contains(&id) || staged.upserts.contains_key(&id) {
                        *alive = false;
                    }
                }
            }
        }
        let mut new_rows: Vec<(i64, &StagedRow)> =
            staged.upserts.iter().map(|(&id, row)| (id, row)).collect();
        new_rows.sort_by_key(|&(id, _)| id);
        let total: usize = live.iter().map(Vec::len).sum::<usize>() + new_rows.len();
        let dead = live.iter().flatten().filter(|&&alive| !alive).count();
        // Segments written before binary codes existed are rewritten with them, and those
        // written before rows were kept in id order are rewritten in it.
        let merge = segments.len() + 1 > MAX_SEGMENTS
            || dead * 4 > total
            || segments
                .iter()
                .any(|segment| !segment.is_current() || !segment.ids_ascending());

        let mut rows: Vec<SegmentRow<'_>> = Vec::new();
        let mut kept_quantized: Vec<Vec<i8>> = Vec::new();
        if merge {
            for (segment, alive) in segments.iter().zip(&live) {
                for row in (0..segment.rows).filter(|&row| alive[row]) {
                    kept_quantized.push(segment.quantized(row).iter().map(|&b| b as i8).collect());
                }
            }
            let mut kept = kept_quantized.iter();
            for (segment, alive) in segments.iter().zip(&live) {
                for row in (0..segment.rows).filter(|&row| alive[row]) {
                    let Some(quantized) = kept.next() else { break };
                    rows.push(SegmentRow {
                        id: segment.id(row),
                        content_hash: segment.content_hash(row),
                        path: &segment.paths[segment.path_index(row) as usize],
                        language: &segment.languages[segment.language_index(row) as usize],
                        scale: segment.scale(row),
                        quantized,
                    });
                }
            }
        }
        rows.extend(new_rows.iter().map(|(id, row)| SegmentRow {
            id: *id,
            content_hash: row.content_hash,
            path: &row.path,
            language: &row.language,
            scale: row.scale,
            quantized: &row.quantized,
        }));
        // In id order, so that lookups by id binary-search (`Segment::row_of`).
        rows.sort_unstable_by_key(|row| row.id);
        let mut new_segment = None;
        if !rows.is_empty() {
            let dims = dims.ok_or(VectorError::NoIdentity)?;
            let name = segment_file_name(manifest.next_file);
            manifest.next_file += 1;
            write_segment(&self.dir.join(&name), dims, &rows)?;
            new_segment = Some(name);
        }
        drop(rows);
        drop(kept_quantized);
        if merge {
            segments.clear();
            live.clear();
        }
        if let Some(name) = &new_segment {
            let segment = Segment::open(&self.dir.join(name), name)?;
            live.push(vec![true; segment.rows]);
            segments.push(Arc::new(segment));
        }
        manifest.segments = segments.iter().map(|s| s.name.clone()).collect();
        manifest.dead = None;
        if live.iter().flatten().any(|&alive| !alive) {
            let mut bytes = Vec::new();
            for rows in &live {
                let dead: Vec<u32> = (0..rows.len())
                    .filter(|&r| !rows[r])
                    .map(|r| r as u32)
                    .collect();
                bytes.extend_from_slice(&(dead.len() as u32).to_le_bytes());
                for row in dead {
                    bytes.extend_from_slice(&row.to_le_bytes());
                }
            }
            let name = format!("dead-{:08}.bin", manifest.next_file);
            manifest.next_file += 1;
            write_file_synced(&self.dir.join(&name), &bytes)?;
            manifest.dead = Some(name);
        }
        let text = serde_json::to_vec_pretty(&manifest)
            .map_err(|e| VectorError::Backend(format!("cannot serialise the manifest: {e}")))?;
        let temporary = self.dir.join("manifest.json.tmp");
        write_file_synced(&temporary, &text)?;
        fs::rename(&temporary, self.dir.join(MANIFEST)).map_err(|source| VectorError::Io {
            path: self.dir.join(MANIFEST),
            source,
        })?;
        sync_dir(&self.dir)?;
        *staged = Staged::default();
        let count = live.iter().flatten().filter(|&&alive| alive).count();
        let referenced: HashSet<&str> = manifest
            .segments
            .iter()
            .map(String::as_str)
            .chain(manifest.dead.as_deref())
            .collect();
        remove_unreferenced(&self.dir, &referenced);
        *self.published.write() = Arc::new(Published {
            manifest,
            segments,
            live,
            count,
        });
        drop(staged);
        self.populate_in_background();
        Ok(())
    }

    fn search(
        &self,
        query: &[f32],
        k: usize,
        filter: &VectorFilter,
    ) -> Result<Vec<VectorHit>, VectorError> {
        self.search_with(query, k, filter, &self.options)
    }

    fn keep_resident(&self) {
        EmbeddedStore::keep_resident(self);
    }

    fn reload(&self) -> Result<(), VectorError> {
        let on_disk = read_manifest(&self.dir)?.unwrap_or_default();
        if on_disk == self.published().manifest {
            return Ok(());
        }
        let published = load(&self.dir)?;
        *self.published.write() = Arc::new(published);
        self.populate_in_background();
        Ok(())
    }
}

/// Removes data files the manifest no longer names (left by earlier commits or a crash).
fn remove_unreferenced(dir: &Path, referenced: &HashSet<&str>) {
    let Ok(entries) = fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(name) = name.to_str() else { continue };
        if is_store_file(name) && !referenced.contains(name) {
            // Best effort: a file that cannot be removed now is removed by a later commit.
            let _ = fs::remove_file(entry.path());
        }
    }
}

/// The rows of `segment` holding any of `wanted` (ascending ids): a binary search per id when
/// the segment's rows are in id order, one scan of its id column otherwise.
fn rows_holding(segment: &Segment, wanted: &[i64]) -> Vec<usize> {
    let searched: Result<Vec<Option<usize>>, NotOrdered> =
        wanted.iter().map(|&id| segment.row_of(id)).collect();
    match searched {
        Ok(rows) => rows.into_iter().flatten().collect(),
        Err(NotOrdered) => {
            let wanted: FxHashSet<i64> = wanted.iter().copied().collect();
            (0..segment.rows)
                .filter(|&row| wanted.contains(&segment.id(row)))
                .collect()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_cpus_dot_product_kernel_matches_the_portable_loop() {
        let kernel = dot_i8_kernel();
        let mut seed = 12345u32;
        for length in [0usize, 1, 7, 31, 32, 33, 255, 256, 384, 1000] {
            let mut next = || {
                seed = seed.wrapping_mul(1_103_515_245).wrapping_add(12345);
                (seed >> 16) as u8
            };
            let query: Vec<i8> = (0..length).map(|_| next() as i8).collect();
            let row: Vec<u8> = (0..length).map(|_| next()).collect();
            let extremes_q = vec![-128i8; length];
            let extremes_r = vec![0x80u8; length];
            assert_eq!(kernel(&query, &row), dot_i8_portable(&query, &row));
            assert_eq!(
                kernel(&extremes_q, &extremes_r),
                dot_i8_portable(&extremes_q, &extremes_r)
            );
        }
    }

    fn identity(dimension: usize) -> EmbedderIdentity {
        EmbedderIdentity {
            backend: "test".into(),
            model: "axes".into(),
            dimension,
        }
    }

    /// A unit vector along axis `axis`, slightly tilted towards axis `(axis + 1) % 4`.
    fn axis(axis: usize, tilt: f32) -> Vec<f32> {
        let mut v = vec![0.0; 4];
        v[axis] = 1.0;
        v[(axis + 1) % 4] = tilt;
        lode_embed::normalize(&mut v);
        v
    }

    fn record(id: i64, path: &str, language: &str, vector: Vec<f32>) -> VectorRecord {
        VectorRecord {
            id,
            content_hash: id as u64 * 7,
            path: path.into(),
            language: language.into(),
            vector,
        }
    }

    fn ids(hits: &[VectorHit]) -> Vec<i64> {
        hits.iter().map(|h| h.id).collect()
    }

    #[test]
    fn upserts_keep_vectors_to_int8_precision_and_check_their_dimension() {
        let records = vec![
            record(1, "src/a.rs", "rust", axis(0, 0.3)),
            record(2, "src/b.py", "python", axis(1, 0.7)),
        ];
        let dir = tempfile::tempdir().unwrap();
        let store = EmbeddedStore::open(dir.path()).unwrap();
        store.reset(&identity(4)).unwrap();
        store.upsert(records.clone()).unwrap();
        // Already quantized, as the parse workers hand them over.
        store
            .upsert_quantized(vec![
                record(3, "lib/c.rs", "rust", axis(2, 0.05)).quantized(),
            ])
            .unwrap();
        store.commit(1).unwrap();
        let mut stored = store.vectors(&[1, 2, 3]).unwrap();
        stored.sort_by_key(|&(id, _)| id);
        let expected = [axis(0, 0.3), axis(1, 0.7), axis(2, 0.05)];
        for ((id, vector), expected) in stored.iter().zip(&expected) {
            let largest = expected.iter().fold(0.0f32, |m, x| m.max(x.abs()));
            for (got, want) in vector.iter().zip(expected) {
                // Half a quantization step at most.
                assert!(
                    (got - want).abs() <= largest / 254.0 + 1e-6,
                    "chunk {id}: {vector:?} against {expected:?}"
                );
            }
        }
        let short = record(4, "d.rs", "rust", vec![1.0, 0.0, 0.0]);
        for result in [
            store.upsert(vec![short.clone()]),
            store.upsert_quantized(vec![short.quantized()]),
        ] {
            assert!(matches!(
                result,
                Err(VectorError::Dimension {
                    expected: 4,
                    found: 3
                })
            ));
        }
    }

    #[test]
    fn a_quantized_record_dequantizes_to_its_scale_times_its_values() {
        let record = QuantizedRecord {
            id: 9,
            content_hash: 5,
            path: "a.rs".into(),
            language: "rust".into(),
            scale: 0.5,
            quantized: vec![2, -4, 0, 127],
        };
        let floats = record.dequantized();
        assert_eq!(floats.vector, [1.0, -2.0, 0.0, 63.5]);
        assert_eq!((floats.id, floats.content_hash), (9, 5));
        assert_eq!(
            (floats.path.as_str(), floats.language.as_str()),
            ("a.rs", "rust")
        );
    }

    #[test]
    fn upserts_are_searchable_after_commit_and_survive_reopening() {
        let dir = tempfile::tempdir().unwrap();
        let store = EmbeddedStore::open(dir.path()).unwrap();
        assert_eq!(store.state(), StoreState::default());
        assert!(matches!(
            store.upsert(vec![record(1, "a.rs", "rust", axis(0, 0.0))]),
            Err(VectorError::NoIdentity)
        ));
        store.reset(&identity(4)).unwrap();
        store
            .upsert(vec![
                record(1, "src/a.rs", "rust", axis(0, 0.0)),
                record(2, "src/b.py", "python", axis(0, 0.3)),
                record(3, "lib/c.rs", "rust", axis(1, 0.0)),
            ])
            .unwrap();
        assert!(
            store
                .search(&axis(0, 0.0), 2, &VectorFilter::default())
                .unwrap()
                .is_empty(),
            "staged records are invisible until commit"
        );
        store.commit(5).unwrap();
        let hits = store
            .search(&axis(0, 0.0), 2, &VectorFilter::default())
            .unwrap();
        assert_eq!(ids(&hits), [1, 2]);
        assert!((hits[0].score - 1.0).abs() < 0.02, "{}", hits[0].score);

        let reopened = EmbeddedStore::open(dir.path()).unwrap();
        assert_eq!(reopened.state().generation, 5);
        assert_eq!(reopened.state().count, 3);
        assert_eq!(reopened.state().identity, Some(identity(4)));
        assert_eq!(
            ids(&reopened
                .search(&axis(1, 0.0), 1, &VectorFilter::default())
                .unwrap()),
            [3]
        );
    }

    #[test]
    fn filters_by_language_and_path_glob() {
        let dir = tempfile::tempdir().unwrap();
        let store = EmbeddedStore::open(dir.path()).unwrap();
        store.reset(&identity(4)).unwrap();
        store
            .upsert(vec![
                record(1, "src/a.rs", "rust", axis(0, 0.0)),
                record(2, "src/b.py", "python", axis(0, 0.1)),
                record(3, "lib/c.rs", "rust", axis(0, 0.2)),
            ])
            .unwrap();
        store.commit(1).unwrap();
        let python = VectorFilter {
            language: Some("python".into()),
            path_glob: None,
        };
        assert_eq!(ids(&store.search(&axis(0, 0.0), 10, &python).unwrap()), [2]);
        let lib = VectorFilter {
            language: None,
            path_glob: Some("lib/**".into()),
        };
        assert_eq!(ids(&store.search(&axis(0, 0.0), 10, &lib).unwrap()), [3]);
        let rust_files = VectorFilter {
            language: None,
            path_glob: Some("*.rs".into()),
        };
        assert_eq!(
            ids(&store.search(&axis(0, 0.0), 10, &rust_files).unwrap()),
            [1, 3]
        );
        let go = VectorFilter {
            language: Some("go".into()),
            path_glob: None,
        };
        assert!(store.search(&axis(0, 0.0), 10, &go).unwrap().is_empty());
        let bad = VectorFilter {
            language: None,
            path_glob: Some("a[".into()),
        };
        assert!(matches!(
            store.search(&axis(0, 0.0), 10, &bad),
            Err(VectorError::Glob { .. })
        ));
    }

    #[test]
    fn deletes_and_replacements_survive_many_commits_and_merges() {
        let dir = tempfile::tempdir().unwrap();
        let store = EmbeddedStore::open(dir.path()).unwrap();
        store.reset(&identity(4)).unwrap();
        for generation in 1..=20i64 {
            // Each commit adds two records and deletes one of the previous commit's.
            store
                .upsert(vec![
                    record(generation * 10, "a.rs", "rust", axis(2, 0.0)),
                    record(generation * 10 + 1, "b.rs", "rust", axis(3, 0.0)),
                ])
                .unwrap();
            store.delete(&[(generation - 1) * 10 + 1]).unwrap();
            store.commit(generation as u64).unwrap();
        }
        // Replace record 10's vector.
        store
            .upsert(vec![record(10, "a.rs", "rust", axis(1, 0.0))])
            .unwrap();
        store.commit(21).unwrap();
        let reopened = EmbeddedStore::open(dir.path()).unwrap();
        assert_eq!(
            reopened.state().count,
            21,
            "20 of axis 2 (one moved) + the last axis 3"
        );
        assert_eq!(
            ids(&reopened
                .search(&axis(3, 0.0), 5, &VectorFilter::default())
                .unwrap())[0],
            201
        );
        assert_eq!(
            ids(&reopened
                .search(&axis(1, 0.0), 1, &VectorFilter::default())
                .unwrap()),
            [10]
        );
        let mut entries = reopened.entries().unwrap();
        entries.sort();
        assert_eq!(entries.len(), 21);
        assert_eq!(entries[0], (10, 70));
        let segments = fs::read_dir(dir.path())
            .unwrap()
            .filter(|e| {
                e.as_ref()
                    .unwrap()
                    .file_name()
                    .to_string_lossy()
                    .starts_with("seg-")
            })
            .count();
        assert!(segments <= MAX_SEGMENTS, "{segments} segment files remain");
        let vectors = reopened.vectors(&[10, 999]).unwrap();
        assert_eq!(vectors.len(), 1);
        assert!((vectors[0].1[1] - 1.0).abs() < 0.01);
    }

    /// Lookups by id across several segments, staged rows and replaced rows: each id comes
    /// back once, with its newest vector, whichever segment holds it.
    #[test]
    fn vectors_by_id_come_from_the_live_row_of_any_segment_or_the_staged_ones() {
        let dir = tempfile::tempdir().unwrap();
        let store = EmbeddedStore::open(dir.path()).unwrap();
        store.reset(&identity(4)).unwrap();
        // Three commits of 200 rows each, upserted in descending id order.
        for (generation, base) in [(1, 0), (2, 1000), (3, 2000)] {
            let records = (0..200)
                .rev()
                .map(|n| record(base + n, "src/a.rs", "rust", axis(0, 0.1)))
                .collect();
            store.upsert(records).unwrap();
            store.commit(generation).unwrap();
        }
        // 1005 moves to axis 2 in a fourth segment; 2007 is deleted; 7 is staged on axis 3.
        store
            .upsert(vec![record(1005, "src/a.rs", "rust", axis(2, 0.0))])
            .unwrap();
        store.delete(&[2007]).unwrap();
        store.commit(4).unwrap();
        store
            .upsert(vec![record(7, "src/a.rs", "rust", axis(3, 0.0))])
            .unwrap();

        let mut found = store
            .vectors(&[2199, 7, 1005, 3, 2007, 150, 5000, 3, -1])
            .unwrap();
        found.sort_by_key(|(id, _)| *id);
        let ids: Vec<i64> = found.iter().map(|(id, _)| *id).collect();
        assert_eq!(ids, [3, 7, 150, 1005, 2199]);
        let main_axis = |vector: &[f32]| {
            (0..4)
                .max_by(|&a, &b| vector[a].total_cmp(&vector[b]))
                .unwrap()
        };
        let axes: Vec<usize> = found.iter().map(|(_, vector)| main_axis(vector)).collect();
        assert_eq!(axes, [0, 3, 0, 2, 0]);
    }

    /// A segment of an older lode, its rows in no id order, is scanned instead.
    #[test]
    fn rows_of_a_segment_in_no_id_order_are_found_by_a_scan() {
        let dir = tempfile::tempdir().unwrap();
        let segment =
            crate::segment::segment_of_ids(&dir.path().join("old.vec"), &[30, 10, 20, 50, 40]);
        let mut found = rows_holding(&segment, &[10, 40, 45]);
        found.sort_unstable();
        assert_eq!(found, [1, 4]);
    }

    /// A store whose segment an older lode wrote in no id order: lookups by id still find
    /// every row, and the next commit rewrites the segment in id order.
    #[test]
    fn a_segment_in_no_id_order_is_read_and_rewritten_in_order_at_the_next_commit() {
        let dir = tempfile::tempdir().unwrap();
        let store = EmbeddedStore::open(dir.path()).unwrap();
        store.reset(&identity(4)).unwrap();
        store
            .upsert(
                (0..50)
                    .map(|n| record(n, "a.rs", "rust", axis(1, 0.2)))
                    .collect(),
            )
            .unwrap();
        store.commit(1).unwrap();
        drop(store);
        // Rewrite the segment with its ids in reverse, as an older lode could have left them.
        let reversed: Vec<i64> = (0..50).rev().collect();
        crate::segment::segment_of_ids(&segment_paths(dir.path())[0], &reversed);

        let store = EmbeddedStore::open(dir.path()).unwrap();
        assert!(!store.published().segments[0].ids_ascending());
        let mut found: Vec<i64> = store
            .vectors(&[49, 0, 17, 50])
            .unwrap()
            .into_iter()
            .map(|(id, _)| id)
            .collect();
        found.sort_unstable();
        assert_eq!(found, [0, 17, 49]);
        store
            .upsert(vec![record(60, "b.rs", "rust", axis(2, 0.0))])
            .unwrap();
        store.commit(2).unwrap();
        let published = store.published();
        assert_eq!(published.segments.len(), 1, "rewritten as one segment");
        assert!(published.segments[0].ids_ascending());
        assert_eq!(published.segments[0].rows, 51);
    }

    #[test]
    fn an_interrupted_commit_leaves_the_previous_state() {
        let dir = tempfile::tempdir().unwrap();
        let store = EmbeddedStore::open(dir.path()).unwrap();
        store.reset(&identity(4)).unwrap();
        store
            .upsert(vec![record(1, "a.rs", "rust", axis(0, 0.0))])
            .unwrap();
        store.commit(1).unwrap();
        // A crash after writing a segment and a temporary manifest but before the rename.
        fs::write(dir.path().join("seg-00000099.vec"), b"half a segment").unwrap();
        fs::write(dir.path().join("manifest.json.tmp"), b"{\"format\":").unwrap();
        let reopened = EmbeddedStore::open(dir.path()).unwrap();
        assert_eq!(reopened.state().generation, 1);
        assert_eq!(reopened.state().count, 1);
        reopened
            .upsert(vec![record(2, "b.rs", "rust", axis(1, 0.0))])
            .unwrap();
        reopened.commit(2).unwrap();
        assert!(
            !dir.path().join("seg-00000099.vec").exists(),
            "leftovers are cleaned up"
        );
        assert_eq!(EmbeddedStore::open(dir.path()).unwrap().state().count, 2);
    }

    #[test]
    fn damaged_files_are_reported_not_trusted() {
        let dir = tempfile::tempdir().unwrap();
        let store = EmbeddedStore::open(dir.path()).unwrap();
        store.reset(&identity(4)).unwrap();
        store
            .upsert(vec![record(1, "a.rs", "rust", axis(0, 0.0))])
            .unwrap();
        store.commit(1).unwrap();
        let manifest: Manifest =
            serde_json::from_str(&fs::read_to_string(dir.path().join(MANIFEST)).unwrap()).unwrap();
        let segment = dir.path().join(&manifest.segments[0]);
        let mut bytes = fs::read(&segment).unwrap();
        bytes.truncate(bytes.len() - 1);
        fs::write(&segment, &bytes).unwrap();
        assert!(matches!(
            EmbeddedStore::open(dir.path()),
            Err(VectorError::Corrupt { .. })
        ));
        fs::write(dir.path().join(MANIFEST), b"not json").unwrap();
        assert!(matches!(
            EmbeddedStore::open(dir.path()),
            Err(VectorError::Corrupt { .. })
        ));
    }

    #[test]
    fn a_reset_replaces_everything_and_dimensions_are_checked() {
        let dir = tempfile::tempdir().unwrap();
        let store = EmbeddedStore::open(dir.path()).unwrap();
        store.reset(&identity(4)).unwrap();
        store
            .upsert(vec![record(1, "a.rs", "rust", axis(0, 0.0))])
            .unwrap();
        store.commit(1).unwrap();
        store.reset(&identity(2)).unwrap();
        assert!(matches!(
            store.upsert(vec![record(2, "a.rs", "rust", axis(0, 0.0))]),
            Err(VectorError::Dimension {
                expected: 2,
                found: 4
            })
        ));
        store
            .upsert(vec![record(2, "a.rs", "rust", vec![0.0, 1.0])])
            .unwrap();
        store.commit(2).unwrap();
        assert_eq!(store.state().count, 1);
        assert_eq!(store.state().identity, Some(identity(2)));
        assert!(
            store
                .search(&axis(0, 0.0), 1, &VectorFilter::default())
                .is_err()
        );
    }

    /// Two handles on the store in `dir`: the first has committed one row, which the second
    /// has not reloaded.
    fn writer_and_reader_of_one_row(dir: &Path) -> (EmbeddedStore, EmbeddedStore) {
        let writer = EmbeddedStore::open(dir).unwrap();
        let reader = EmbeddedStore::open(dir).unwrap();
        writer.reset(&identity(4)).unwrap();
        writer
            .upsert(vec![record(1, "a.rs", "rust", axis(0, 0.0))])
            .unwrap();
        writer.commit(1).unwrap();
        (writer, reader)
    }

    /// Waits (up to a minute, for a loaded machine) until `store` has populated every segment.
    fn wait_until_populated(store: &EmbeddedStore) -> bool {
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
        while std::time::Instant::now() < deadline {
            if store.is_populated() {
                return true;
            }
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
        false
    }

    #[test]
    fn a_resident_store_populates_its_segments_and_those_published_later() {
        let dir = tempfile::tempdir().unwrap();
        let (writer, reader) = writer_and_reader_of_one_row(dir.path());
        // A store nobody keeps resident maps nothing ahead of its searches.
        reader.reload().unwrap();
        assert!(!reader.is_populated());
        assert!(!writer.is_populated());

        writer.keep_resident();
        assert!(wait_until_populated(&writer));
        writer
            .upsert(vec![record(2, "b.rs", "rust", axis(1, 0.0))])
            .unwrap();
        writer.commit(2).unwrap();
        assert_eq!(writer.segments().len(), 2);
        assert!(wait_until_populated(&writer), "the committed segment");

        reader.keep_resident();
        reader.reload().unwrap();
        assert!(wait_until_populated(&reader), "the reloaded segments");
        // Searches read the same rows either way.
        let hits = reader
            .search(&axis(1, 0.0), 1, &VectorFilter::default())
            .unwrap();
        assert_eq!(ids(&hits), [2]);
    }

    #[test]
    fn the_pool_admits_a_group_by_a_bit_mask() {
        let estimates: Vec<f32> = (0..32).map(|i| i as f32).collect();
        let mut pool = Pool::new(2);
        assert_eq!(pool.admitted(&estimates), u32::MAX);
        assert_eq!(pool.admitted(&estimates[..5]), 0b11111);
        assert_eq!(pool.admitted(&[]), 0);
        for (row, &estimate) in estimates.iter().enumerate().take(4) {
            pool.offer(Candidate {
                estimate: estimate + 10.0,
                segment: 0,
                row: row as u32,
            });
        }
        // Four offers fill it twice over: it keeps the best two (13 and 12) and admits
        // only what reaches 12.
        assert_eq!(pool.worst.map(|w| w.estimate), Some(12.0));
        assert_eq!(pool.admitted(&estimates), u32::MAX << 12);
        assert_eq!(pool.admitted(&estimates[..12]), 0);
    }

    #[test]
    fn a_segment_is_populated_once() {
        let dir = tempfile::tempdir().unwrap();
        let segment =
            crate::segment::segment_of_ids(&dir.path().join("seg-00000000.vec"), &[1, 2, 3]);
        assert!(!segment.is_populated());
        assert!(segment.populate());
        assert!(segment.is_populated());
        assert!(!segment.populate());
        assert_eq!(segment.row_of(2), Ok(Some(1)));
    }

    #[test]
    fn other_handles_see_commits_after_reload() {
        let dir = tempfile::tempdir().unwrap();
        let (_writer, reader) = writer_and_reader_of_one_row(dir.path());
        assert_eq!(reader.state().count, 0);
        reader.reload().unwrap();
        assert_eq!(reader.state().count, 1);
    }

    /// A seeded generator of clustered unit vectors (xorshift; sums of uniforms for noise).
    struct Clusters {
        state: u64,
        centres: Vec<Vec<f32>>,
    }

    impl Clusters {
        fn new(seed: u64, count: usize, dims: usize) -> Clusters {
            let mut clusters = Clusters {
                state: seed,
                centres: Vec::new(),
            };
            clusters.centres = (0..count).map(|_| clusters.noise(dims, 1.0)).collect();
            clusters
        }

        fn next(&mut self) -> f32 {
            self.state ^= self.state << 13;
            self.state ^= self.state >> 7;
            self.state ^= self.state << 17;
            (self.state >> 40) as f32 / (1u64 << 24) as f32 - 0.5
        }

        fn noise(&mut self, dims: usize, spread: f32) -> Vec<f32> {
            (0..dims)
                .map(|_| spread * (self.next() + self.next() + self.next()))
                .collect()
        }

        /// A unit vector near centre `n % count`.
        fn near(&mut self, n: usize, spread: f32) -> Vec<f32> {
            let centre = self.centres[n % self.centres.len()].clone();
            let mut v: Vec<f32> = self
                .noise(centre.len(), spread)
                .iter()
                .zip(&centre)
                .map(|(n, c)| n + c)
                .collect();
            lode_embed::normalize(&mut v);
            v
        }
    }

    const LANGUAGES: [&str; 3] = ["rust", "python", "go"];

    /// A store of `rows` clustered vectors in `commits` segments (before any merge), with ids
    /// 0.., paths `dir{id % 7}/f{id % 50}.ext` and languages cycling through [`LANGUAGES`].
    fn clustered_store(
        dir: &Path,
        clusters: &mut Clusters,
        rows: usize,
        commits: usize,
    ) -> EmbeddedStore {
        let dims = clusters.centres[0].len();
        let store = EmbeddedStore::open(dir).unwrap();
        store.reset(&identity(dims)).unwrap();
        let per_commit = rows.div_ceil(commits);
        for (generation, start) in (0..rows).step_by(per_commit).enumerate() {
            let records = (start..(start + per_commit).min(rows))
                .map(|id| {
                    let language = LANGUAGES[id % LANGUAGES.len()];
                    VectorRecord {
                        id: id as i64,
                        content_hash: (id as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15),
                        path: format!("dir{}/f{}.{language}", id % 7, id % 50),
                        language: language.into(),
                        vector: clusters.near(id, 0.6),
                    }
                })
                .collect();
            store.upsert(records).unwrap();
            store.commit(generation as u64 + 1).unwrap();
        }
        store
    }

    fn approximate() -> SearchOptions {
        SearchOptions {
            exact_below: 0,
            ..SearchOptions::default()
        }
    }

    fn segment_paths(dir: &Path) -> Vec<PathBuf> {
        let manifest: Manifest =
            serde_json::from_str(&fs::read_to_string(dir.join(MANIFEST)).unwrap()).unwrap();
        manifest
            .segments
            .iter()
            .map(|name| dir.join(name))
            .collect()
    }

    #[test]
    fn approximate_search_returns_the_exact_top_k_on_clustered_vectors() {
        let dir = tempfile::tempdir().unwrap();
        let mut clusters = Clusters::new(42, 60, 64);
        let store = clustered_store(dir.path(), &mut clusters, 30_000, 3);
        assert_eq!(store.state().count, 30_000);
        assert_eq!(segment_paths(dir.path()).len(), 3);
        for n in 0..30 {
            let query = clusters.near(n * 7, 0.9);
            for k in [1, 10, 50] {
                let exact = store
                    .search_with(&query, k, &VectorFilter::default(), &SearchOptions::EXACT)
                    .unwrap();
                assert_eq!(exact.len(), k);
                // The default options search a store of this size approximately.
                let hits = store.search(&query, k, &VectorFilter::default()).unwrap();
                assert_eq!(hits, exact, "query {n}, k {k}");
            }
        }
    }

    #[test]
    fn the_first_pass_is_what_finds_the_candidates_of_a_large_store_only() {
        let dir = tempfile::tempdir().unwrap();
        let mut clusters = Clusters::new(7, 40, 32);
        let store = clustered_store(dir.path(), &mut clusters, 24_000, 2);
        let queries: Vec<Vec<f32>> = (0..10).map(|n| clusters.near(n, 0.9)).collect();
        let exact: Vec<Vec<VectorHit>> = queries
            .iter()
            .map(|q| {
                store
                    .search_with(q, 20, &VectorFilter::default(), &SearchOptions::EXACT)
                    .unwrap()
            })
            .collect();
        // Codes that rank every row alike: the first pass keeps arbitrary candidates.
        for path in segment_paths(dir.path()) {
            crate::segment::flatten_codes(&path);
        }
        let flattened = EmbeddedStore::open(dir.path()).unwrap();
        let approximate_hits: Vec<Vec<VectorHit>> = queries
            .iter()
            .map(|q| {
                flattened
                    .search_with(q, 20, &VectorFilter::default(), &approximate())
                    .unwrap()
            })
            .collect();
        assert_ne!(approximate_hits, exact, "the codes decide the candidates");
        // Below the threshold the same store is scanned exactly, codes unused.
        let small = SearchOptions {
            exact_below: 24_001,
            ..SearchOptions::default()
        };
        for (query, exact) in queries.iter().zip(&exact) {
            assert_eq!(
                &flattened
                    .search_with(query, 20, &VectorFilter::default(), &small)
                    .unwrap(),
                exact
            );
        }
    }

    /// The share of `exact` that `hits` found, after checking that every hit carries the
    /// score exact search gives it.
    fn recall(hits: &[VectorHit], exact: &[VectorHit], all: &[VectorHit]) -> f32 {
        for hit in hits {
            assert!(
                all.contains(hit),
                "{hit:?} is not scored as exact search scores it"
            );
        }
        let found = exact.iter().filter(|hit| hits.contains(hit)).count();
        found as f32 / exact.len().max(1) as f32
    }

    #[test]
    fn approximate_search_honours_filters_and_deleted_rows() {
        let dir = tempfile::tempdir().unwrap();
        let mut clusters = Clusters::new(99, 50, 96);
        let store = clustered_store(dir.path(), &mut clusters, 24_000, 2);
        let mut rows: HashMap<i64, (String, &str)> = (0..24_000i64)
            .map(|id| {
                let language = LANGUAGES[id as usize % LANGUAGES.len()];
                let path = format!("dir{}/f{}.{language}", id % 7, id % 50);
                (id, (path, language))
            })
            .collect();
        // Delete every tenth row and move every 13th to another vector and path.
        let deleted: Vec<i64> = (0..24_000).step_by(10).collect();
        store.delete(&deleted).unwrap();
        for id in &deleted {
            rows.remove(id);
        }
        let moved: Vec<VectorRecord> = (5..24_000)
            .step_by(13)
            .filter(|id| id % 10 != 0)
            .map(|id| VectorRecord {
                id: id as i64,
                content_hash: id as u64,
                path: format!("moved/m{id}.rs"),
                language: "rust".into(),
                vector: clusters.near(id + 1, 0.6),
            })
            .collect();
        for record in &moved {
            rows.insert(record.id, (record.path.clone(), "rust"));
        }
        store.upsert(moved).unwrap();
        store.commit(10).unwrap();
        assert_eq!(store.state().count, rows.len());
        let filters = [
            VectorFilter::default(),
            VectorFilter {
                language: Some("python".into()),
                path_glob: None,
            },
            VectorFilter {
                language: None,
                path_glob: Some("dir3/**".into()),
            },
            VectorFilter {
                language: Some("rust".into()),
                path_glob: Some("moved/**".into()),
            },
            // Few enough rows that all of them are rescored: exactly the exact hits.
            VectorFilter {
                language: Some("go".into()),
                path_glob: Some("dir1/f1.*".into()),
            },
        ];
        let mut recalls = Vec::new();
        for n in 0..12 {
            let query = clusters.near(n * 3, 0.9);
            for filter in &filters {
                let exact = store
                    .search_with(&query, 50, filter, &SearchOptions::EXACT)
                    .unwrap();
                let all = store
                    .search_with(&query, 30_000, filter, &SearchOptions::EXACT)
                    .unwrap();
                let hits = store
                    .search_with(&query, 50, filter, &approximate())
                    .unwrap();
                assert_eq!(hits.len(), exact.len(), "query {n}, {filter:?}");
                let matcher = filter
                    .path_glob
                    .as_deref()
                    .map(|glob| crate::path_glob_matcher(glob).unwrap());
                for hit in &hits {
                    let Some((path, language)) = rows.get(&hit.id) else {
                        panic!("deleted row {} returned", hit.id);
                    };
                    assert!(filter.language.as_deref().is_none_or(|l| l == *language));
                    assert!(matcher.as_ref().is_none_or(|m| m.is_match(path)));
                }
                if filter.path_glob.as_deref() == Some("dir1/f1.*") {
                    assert!(exact.len() < 50);
                    assert_eq!(hits, exact);
                }
                recalls.push(recall(&hits, &exact, &all));
            }
        }
        let mean = recalls.iter().sum::<f32>() / recalls.len() as f32;
        assert!(mean >= 0.98, "recall@50 {mean}");
    }

    #[test]
    fn old_segments_without_codes_are_scanned_exactly_and_rewritten_at_the_next_commit() {
        let dir = tempfile::tempdir().unwrap();
        let mut clusters = Clusters::new(3, 30, 96);
        let store = clustered_store(dir.path(), &mut clusters, 21_000, 2);
        let queries: Vec<Vec<f32>> = (0..10).map(|n| clusters.near(n * 5, 0.9)).collect();
        let exact: Vec<Vec<VectorHit>> = queries
            .iter()
            .map(|q| {
                store
                    .search_with(q, 30, &VectorFilter::default(), &SearchOptions::EXACT)
                    .unwrap()
            })
            .collect();
        drop(store);
        let old_segments = segment_paths(dir.path());
        // One segment as an older lode wrote it, and the other with codes that would mislead.
        crate::segment::strip_codes(&old_segments[0]);
        crate::segment::flatten_codes(&old_segments[1]);
        let store = EmbeddedStore::open(dir.path()).unwrap();
        let published = store.published();
        assert!(!published.segments[0].has_codes());
        assert!(published.segments[1].has_codes());
        drop(published);
        let mixed: Vec<Vec<VectorHit>> = queries
            .iter()
            .map(|q| {
                store
                    .search_with(q, 30, &VectorFilter::default(), &SearchOptions::EXACT)
                    .unwrap()
            })
            .collect();
        assert_eq!(mixed, exact, "an old segment reads the same vectors");
        // The old segment's hits are exact even though the other segment's codes mislead.
        for (query, exact) in queries.iter().zip(&exact) {
            let hits = store
                .search_with(query, 30, &VectorFilter::default(), &approximate())
                .unwrap();
            for hit in exact.iter().filter(|hit| hit.id < 10_500) {
                assert!(hits.contains(hit), "{hit:?} of the old segment missed");
            }
        }
        // The next commit rewrites every segment with codes.
        store
            .upsert(vec![VectorRecord {
                id: 99_999,
                content_hash: 1,
                path: "new.rs".into(),
                language: "rust".into(),
                vector: clusters.near(0, 0.6),
            }])
            .unwrap();
        store.commit(50).unwrap();
        let published = store.published();
        assert!(
            published
                .segments
                .iter()
                .all(|s| s.has_codes() && s.is_current())
        );
        assert_eq!(published.count, 21_001);
        drop(published);
        let mut recalls = Vec::new();
        for query in &queries {
            let hits = store
                .search_with(query, 30, &VectorFilter::default(), &approximate())
                .unwrap();
            let expected = store
                .search_with(query, 30, &VectorFilter::default(), &SearchOptions::EXACT)
                .unwrap();
            let all = store
                .search_with(
                    query,
                    30_000,
                    &VectorFilter::default(),
                    &SearchOptions::EXACT,
                )
                .unwrap();
            recalls.push(recall(&hits, &expected, &all));
        }
        let mean = recalls.iter().sum::<f32>() / recalls.len() as f32;
        assert!(mean >= 0.98, "recall@30 {mean}");
    }

    #[test]
    fn very_wide_vectors_are_searched_exactly_and_not_rewritten_at_every_commit() {
        // 4,400 dimensions: 15 * 4,400 level sums overflow the kernels' u16 lanes.
        let dir = tempfile::tempdir().unwrap();
        let mut clusters = Clusters::new(21, 4, 4_400);
        let store = clustered_store(dir.path(), &mut clusters, 300, 2);
        let segments = store.segments();
        assert_eq!(segments.len(), 2);
        assert!(segments.iter().all(|s| !s.has_codes));
        let options = SearchOptions {
            exact_below: 0,
            oversample: 1,
            min_candidates: 1,
        };
        for n in 0..5 {
            let query = clusters.near(n, 0.9);
            let exact = store
                .search_with(&query, 10, &VectorFilter::default(), &SearchOptions::EXACT)
                .unwrap();
            let hits = store
                .search_with(&query, 10, &VectorFilter::default(), &options)
                .unwrap();
            assert_eq!(hits, exact);
        }
    }

    /// Codes of `rows` rows of `dims` dimensions, random, in groups as a segment stores them,
    /// and the same codes row by row.
    fn random_codes(clusters: &mut Clusters, rows: usize, dims: usize) -> (Vec<u8>, Vec<Vec<u8>>) {
        let width = dims.div_ceil(8);
        let by_row: Vec<Vec<u8>> = (0..rows)
            .map(|_| {
                (0..width)
                    .map(|p| {
                        let byte = ((clusters.next() + 0.5) * 255.0) as u8;
                        // Bits past the last dimension are never set in a stored code.
                        let used = (dims - 8 * p).min(8);
                        if used == 8 {
                            byte
                        } else {
                            byte & ((1 << used) - 1)
                        }
                    })
                    .collect()
            })
            .collect();
        let mut grouped = vec![0u8; rows.div_ceil(CODE_GROUP) * CODE_GROUP * width];
        for (row, code) in by_row.iter().enumerate() {
            for (p, &byte) in code.iter().enumerate() {
                grouped[(row / CODE_GROUP * width + p) * CODE_GROUP + row % CODE_GROUP] = byte;
            }
        }
        (grouped, by_row)
    }

    #[test]
    fn the_first_pass_estimates_the_approximated_querys_dot_product_with_the_signs() {
        let mut clusters = Clusters::new(5, 1, 8);
        for dims in [1usize, 7, 8, 9, 63, 64, 65, 100, 256] {
            let query: Vec<f32> = (0..dims).map(|_| clusters.next()).collect();
            let tables = QueryTables::new(&query);
            let (low, step) = (tables.low, tables.step);
            let approximated: Vec<f32> = query
                .iter()
                .map(|&q| {
                    if step == 0.0 {
                        low
                    } else {
                        low + step * ((q - low) / step).round().clamp(0.0, 15.0)
                    }
                })
                .collect();
            for (q, a) in query.iter().zip(&approximated) {
                assert!((q - a).abs() <= step / 2.0 + 1e-6);
            }
            let rows = 70;
            let (grouped, by_row) = random_codes(&mut clusters, rows, dims);
            let block = CodeBlock {
                width: dims.div_ceil(8),
                grouped: &grouped,
                factors: &[],
                counts: &[],
            };
            let sums: Vec<u16> = grouped
                .chunks_exact(CODE_GROUP * block.width)
                .flat_map(|group| group_level_sums(&tables, group))
                .collect();
            assert_eq!(sums.len(), rows.div_ceil(CODE_GROUP) * CODE_GROUP);
            for (code, &level_sum) in by_row.iter().zip(&sums) {
                let expected: f32 = approximated
                    .iter()
                    .enumerate()
                    .map(|(i, &q)| {
                        if code[i / 8] & (1 << (i % 8)) != 0 {
                            q
                        } else {
                            -q
                        }
                    })
                    .sum();
                let set_bits = code.iter().map(|b| b.count_ones() as u16).sum();
                // centre_dot 0.5, factor 2: 0.5 + 2 * (q̃ · s).
                let found = tables.estimate(0.5, 2.0, set_bits, level_sum);
                assert!(
                    (found - (0.5 + 2.0 * expected)).abs() < 1e-3,
                    "{dims}: {found} vs {expected}"
                );
            }
            // Padding rows have no bits set.
            assert!(sums[rows..].iter().all(|&s| s == 0));
        }
        // A constant query and an empty one.
        let constant = QueryTables::new(&[0.5; 10]);
        assert_eq!(constant.estimate(0.0, 1.0, 10, 0), 5.0);
        assert_eq!(QueryTables::new(&[]).estimate(0.0, 1.0, 0, 0), 0.0);
    }

    #[test]
    fn the_cpus_estimate_kernel_matches_the_portable_loop() {
        let mut clusters = Clusters::new(11, 1, 8);
        for (dims, rows) in [
            (256usize, 100usize),
            (200, 37),
            (384, 64),
            (12, 5),
            (256, 31),
        ] {
            let query: Vec<f32> = (0..dims).map(|_| clusters.next()).collect();
            let tables = QueryTables::new(&query);
            let (grouped, by_row) = random_codes(&mut clusters, rows, dims);
            let factors: Vec<u8> = (0..rows)
                .flat_map(|_| (clusters.next() + 1.0).to_le_bytes())
                .collect();
            let counts: Vec<u8> = by_row
                .iter()
                .flat_map(|code| {
                    (code.iter().map(|b| b.count_ones() as u16).sum::<u16>()).to_le_bytes()
                })
                .collect();
            let block = CodeBlock {
                width: dims.div_ceil(8),
                grouped: &grouped,
                factors: &factors,
                counts: &counts,
            };
            let (mut fast, mut portable) = (Vec::new(), Vec::new());
            estimate_kernel()(&tables, &block, 0.3, &mut fast);
            estimates_portable(&tables, &block, 0.3, &mut portable);
            assert_eq!(portable.len(), rows);
            assert_eq!(fast.len(), rows);
            for (f, p) in fast.iter().zip(&portable) {
                assert!(
                    (f - p).abs() <= 1e-4 * p.abs().max(1.0),
                    "{dims} dims: {f} vs {p}"
                );
            }
        }
    }
}
