//! Segment files of the embedded vector store: immutable, written once, memory-mapped.
//!
//! Layout (little-endian, no padding):
//! `LODEVSEG`, u32 version, u32 dims, u32 rows, u32 paths, u32 languages, then per row
//! i64 id, u64 content hash, u32 path index, u8 language index, f32 scale (each as one
//! column of `rows` values), then `rows * dims` int8 vector components (row-major), then
//! (version 3) the binary codes of the first search pass: the segment's centre (`dims` f32,
//! the mean of its vectors), one f32 code factor per row, one u16 count of set code bits per
//! row, and the codes themselves, `ceil(dims / 8)` bytes per row (bit `i % 8` of byte `i / 8`
//! is set when component `i` lies above the centre's) stored in groups of [`CODE_GROUP`] rows,
//! byte-position major: byte `p` of the group's rows `0..32`, then byte `p + 1`, ... (the last
//! group padded with zero codes), so one 32-byte load holds one byte of 32 rows' codes; then
//! the path table and the language table (u32 byte length + UTF-8 each). A vector's value is
//! `scale * q`; its estimate from the code is `centre + factor * s` with `s` the code's ±1
//! signs.
//!
//! Version 1 segments (no codes) and version 2 (codes row by row, written by development
//! builds before version 3) are still read; searches scan them exactly and the next commit
//! rewrites them.

use std::collections::HashMap;
use std::fs::File;
use std::io::{BufWriter, Write};
use std::ops::Range;
use std::path::Path;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicBool, Ordering as AtomicOrdering};

use memmap2::Mmap;

use crate::VectorError;

const MAGIC: &[u8; 8] = b"LODEVSEG";
/// The version written: int8 vectors and binary codes in groups of [`CODE_GROUP`] rows.
const VERSION: u32 = 3;
/// The version before binary codes: read and scanned exactly, never written.
const VERSION_WITHOUT_CODES: u32 = 1;
/// Codes row by row: read, their codes ignored (scanned exactly), never written.
const VERSION_ROW_CODES: u32 = 2;
/// Rows whose codes are stored together, byte-position major (one AVX2 register's bytes).
pub const CODE_GROUP: usize = 32;
const HEADER_BYTES: usize = 28;
/// Bytes of per-row columns: id, hash, path index, language index, scale.
const ROW_META_BYTES: usize = 8 + 8 + 4 + 1 + 4;

/// One quantised vector with its metadata, ready to be written.
pub struct SegmentRow<'a> {
    pub id: i64,
    pub content_hash: u64,
    pub path: &'a str,
    pub language: &'a str,
    pub scale: f32,
    pub quantized: &'a [i8],
}

/// Quantises `vector` to int8 with one scale (`max |x| / 127`): `(scale, components)`.
pub fn quantize(vector: &[f32]) -> (f32, Vec<i8>) {
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("avx2") {
        // SAFETY: the CPU supports AVX2, the one requirement of `quantize_avx2`.
        return unsafe { quantize_avx2(vector) };
    }
    quantize_portable(vector)
}

/// [`quantize`] compiled for AVX2. Without SSE4.1 the default x86-64 target has no rounding
/// instruction and calls `roundf` once per component: a cold index of `bench/`'s corpus spent
/// about 2 CPU seconds there. The results are the same bits (nothing is fused).
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
fn quantize_avx2(vector: &[f32]) -> (f32, Vec<i8>) {
    quantize_portable(vector)
}

#[inline(always)]
fn quantize_portable(vector: &[f32]) -> (f32, Vec<i8>) {
    let max = vector.iter().fold(0.0f32, |m, x| m.max(x.abs()));
    if max == 0.0 || !max.is_finite() {
        return (0.0, vec![0; vector.len()]);
    }
    let scale = max / 127.0;
    let quantized = vector
        .iter()
        .map(|x| (x / scale).round().clamp(-127.0, 127.0) as i8)
        .collect();
    (scale, quantized)
}

/// Bytes of one row's binary code.
pub fn code_bytes(dims: usize) -> usize {
    dims.div_ceil(8)
}

/// The binary codes of a segment's rows, computed from their int8 vectors when the segment is
/// written (so a search that opens the segment reads them instead of recomputing them).
struct BinaryCodes {
    /// The mean of the segment's vectors: codes are signs around it, which splits every
    /// component about evenly even when all vectors share a common direction.
    centre: Vec<f32>,
    /// Per row, what scales the dot product of a query with the code's ±1 signs to an
    /// estimate of its dot product with the row minus the centre: `|d|² / |d|₁` for that
    /// difference `d` (RaBitQ's estimator without its random rotation; on the benchmark
    /// corpus it kept more of the true nearest rows among the first pass's best than the
    /// least-squares length `|d|₁ / dims`, bench/README.md "Vector search").
    factors: Vec<f32>,
    /// Per row, how many bits of its code are set.
    counts: Vec<u16>,
    /// The codes in groups of [`CODE_GROUP`] rows, byte-position major.
    grouped: Vec<u8>,
}

impl BinaryCodes {
    fn of(dims: usize, rows: &[SegmentRow<'_>]) -> BinaryCodes {
        let mut sums = vec![0.0f64; dims];
        for row in rows {
            for (sum, &q) in sums.iter_mut().zip(row.quantized) {
                *sum += f64::from(row.scale) * f64::from(q);
            }
        }
        let count = rows.len().max(1) as f64;
        let centre: Vec<f32> = sums.iter().map(|sum| (sum / count) as f32).collect();
        let width = code_bytes(dims);
        let mut grouped = vec![0u8; rows.len().div_ceil(CODE_GROUP) * CODE_GROUP * width];
        let mut factors = Vec::with_capacity(rows.len());
        let mut counts = Vec::with_capacity(rows.len());
        for (index, row) in rows.iter().enumerate() {
            let group = &mut grouped[index / CODE_GROUP * CODE_GROUP * width..];
            let lane = index % CODE_GROUP;
            let (mut absolute, mut squared) = (0.0f32, 0.0f32);
            let mut set = 0u32;
            // Eight components make one byte of the code. The sign is a bit shifted in, not a
            // branch: about half the components lie above the centre, in no order a branch
            // predictor could learn, and the mispredictions made this loop most of a cold
            // build's segment writing.
            for (byte, (values, centres)) in
                row.quantized.chunks(8).zip(centre.chunks(8)).enumerate()
            {
                let mut bits = 0u8;
                for (bit, (&q, &c)) in values.iter().zip(centres).enumerate() {
                    let difference = row.scale * f32::from(q) - c;
                    absolute += difference.abs();
                    squared += difference * difference;
                    bits |= u8::from(difference > 0.0) << bit;
                }
                group[byte * CODE_GROUP + lane] = bits;
                set += bits.count_ones();
            }
            factors.push(if absolute > 0.0 {
                squared / absolute
            } else {
                0.0
            });
            counts.push(u16::try_from(set).unwrap_or(u16::MAX));
        }
        BinaryCodes {
            centre,
            factors,
            counts,
            grouped,
        }
    }
}

/// Writes a segment to `path` and flushes it to disk, its rows in the order given (the store
/// gives them in ascending id order, so that [`Segment::row_of`] can binary-search).
pub fn write_segment(path: &Path, dims: usize, rows: &[SegmentRow<'_>]) -> Result<(), VectorError> {
    let io = |source| VectorError::Io {
        path: path.to_path_buf(),
        source,
    };
    let mut paths: Vec<&str> = Vec::new();
    let mut path_index: HashMap<&str, u32> = HashMap::new();
    let mut languages: Vec<&str> = Vec::new();
    let mut language_index: HashMap<&str, u8> = HashMap::new();
    for row in rows {
        if row.quantized.len() != dims {
            return Err(VectorError::Dimension {
                expected: dims,
                found: row.quantized.len(),
            });
        }
        path_index.entry(row.path).or_insert_with(|| {
            paths.push(row.path);
            (paths.len() - 1) as u32
        });
        if !language_index.contains_key(row.language) {
            if languages.len() == usize::from(u8::MAX) {
                return Err(VectorError::Backend(
                    "more than 255 languages in one segment".into(),
                ));
            }
            languages.push(row.language);
            language_index.insert(row.language, (languages.len() - 1) as u8);
        }
    }
    let file = File::create(path).map_err(io)?;
    let mut out = BufWriter::with_capacity(1 << 20, file);
    let mut header = Vec::with_capacity(HEADER_BYTES);
    header.extend_from_slice(MAGIC);
    for value in [
        VERSION,
        dims as u32,
        rows.len() as u32,
        paths.len() as u32,
        languages.len() as u32,
    ] {
        header.extend_from_slice(&value.to_le_bytes());
    }
    out.write_all(&header).map_err(io)?;
    for row in rows {
        out.write_all(&row.id.to_le_bytes()).map_err(io)?;
    }
    for row in rows {
        out.write_all(&row.content_hash.to_le_bytes()).map_err(io)?;
    }
    for row in rows {
        out.write_all(&path_index[row.path].to_le_bytes())
            .map_err(io)?;
    }
    for row in rows {
        out.write_all(&[language_index[row.language]]).map_err(io)?;
    }
    for row in rows {
        out.write_all(&row.scale.to_le_bytes()).map_err(io)?;
    }
    for row in rows {
        let bytes: Vec<u8> = row.quantized.iter().map(|&q| q as u8).collect();
        out.write_all(&bytes).map_err(io)?;
    }
    let codes = BinaryCodes::of(dims, rows);
    for value in codes.centre.iter().chain(&codes.factors) {
        out.write_all(&value.to_le_bytes()).map_err(io)?;
    }
    for count in &codes.counts {
        out.write_all(&count.to_le_bytes()).map_err(io)?;
    }
    out.write_all(&codes.grouped).map_err(io)?;
    for text in paths.iter().chain(&languages) {
        out.write_all(&(text.len() as u32).to_le_bytes())
            .map_err(io)?;
        out.write_all(text.as_bytes()).map_err(io)?;
    }
    let file = out.into_inner().map_err(|e| io(e.into_error()))?;
    file.sync_all().map_err(io)?;
    Ok(())
}

/// A segment whose rows are in no id order (written by an older lode): look ids up by a scan.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NotOrdered;

/// An open, memory-mapped segment.
pub struct Segment {
    pub name: String,
    map: Mmap,
    pub dims: usize,
    pub rows: usize,
    pub paths: Vec<String>,
    pub languages: Vec<String>,
    /// Where the binary codes lie (`None` in a version 1 segment).
    codes: Option<CodesLayout>,
    /// The centre the codes are signs around (empty without codes).
    centre: Vec<f32>,
    /// Whether the rows are in ascending id order, checked on the first lookup by id. The
    /// store writes them so; segments written before 2026-11-28 are in no order.
    ids_ascending: OnceLock<bool>,
    /// Whether [`Segment::populate`] was called (a store populates a segment once).
    populated: AtomicBool,
}

/// The binary codes of consecutive rows of a segment, from a multiple of [`CODE_GROUP`] on.
/// Bit `i % 8` of byte `i / 8` of a row's code is set when component `i` of the row lies above
/// the segment's centre, and the row is estimated as `centre + factor * s`, `s` the code's
/// signs (+1 for a set bit, -1 otherwise).
pub struct CodeBlock<'a> {
    /// Bytes per code: `ceil(dims / 8)`.
    pub width: usize,
    /// `ceil(rows / CODE_GROUP)` groups of `width * CODE_GROUP` bytes: byte `p` of row `r`
    /// of a group at `p * CODE_GROUP + r` (rows past the segment's last are zero).
    pub grouped: &'a [u8],
    /// One little-endian f32 factor per row.
    pub factors: &'a [u8],
    /// One little-endian u16 count of set bits per row.
    pub counts: &'a [u8],
}

/// Offsets of a segment's code factors, bit counts and grouped codes in its file.
#[derive(Clone, Copy)]
struct CodesLayout {
    factors_at: usize,
    counts_at: usize,
    grouped_at: usize,
    width: usize,
}

impl Segment {
    /// Maps a segment file and checks its structure.
    pub fn open(path: &Path, name: &str) -> Result<Segment, VectorError> {
        let corrupt = |message: &str| VectorError::Corrupt {
            path: path.to_path_buf(),
            message: message.to_string(),
        };
        let file = File::open(path).map_err(|source| VectorError::Io {
            path: path.to_path_buf(),
            source,
        })?;
        // SAFETY: segment files are immutable once written: lode never opens a published
        // segment for writing, it only creates new ones and deletes unreferenced ones (a deleted
        // file stays mapped intact on Unix).
        let map = unsafe { Mmap::map(&file) }.map_err(|source| VectorError::Io {
            path: path.to_path_buf(),
            source,
        })?;
        if map.len() < HEADER_BYTES || &map[..8] != MAGIC {
            return Err(corrupt("not a vector segment"));
        }
        let header =
            |at: usize| u32::from_le_bytes([map[at], map[at + 1], map[at + 2], map[at + 3]]);
        let version = header(8);
        if ![VERSION, VERSION_ROW_CODES, VERSION_WITHOUT_CODES].contains(&version) {
            return Err(corrupt("unsupported segment version"));
        }
        let dims = header(12) as usize;
        let rows = header(16) as usize;
        let (n_paths, n_languages) = (header(20) as usize, header(24) as usize);
        // Sizes come from the header: computed with checked arithmetic, so a damaged header
        // is reported instead of wrapping around.
        let sum_of = |parts: &[(usize, usize)]| {
            parts.iter().try_fold(0usize, |sum, &(count, bytes)| {
                sum.checked_add(count.checked_mul(bytes)?)
            })
        };
        let too_large = || corrupt("sizes in the header overflow");
        let mut at = sum_of(&[(1, HEADER_BYTES), (rows, ROW_META_BYTES), (rows, dims)])
            .ok_or_else(too_large)?;
        let mut centre = Vec::new();
        let mut codes = None;
        let width = code_bytes(dims);
        if version == VERSION {
            let factors_at = sum_of(&[(1, at), (dims, 4)]).ok_or_else(too_large)?;
            let counts_at = sum_of(&[(1, factors_at), (rows, 4)]).ok_or_else(too_large)?;
            let grouped_at = sum_of(&[(1, counts_at), (rows, 2)]).ok_or_else(too_large)?;
            centre = map
                .get(at..factors_at)
                .ok_or_else(|| corrupt("truncated binary codes"))?
                .chunks_exact(4)
                .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
                .collect();
            codes = Some(CodesLayout {
                factors_at,
                counts_at,
                grouped_at,
                width,
            });
            at = sum_of(&[
                (1, grouped_at),
                (rows.div_ceil(CODE_GROUP), CODE_GROUP * width),
            ])
            .ok_or_else(too_large)?;
        } else if version == VERSION_ROW_CODES {
            // Centre, factors and row-by-row codes, skipped.
            at = sum_of(&[(1, at), (dims, 4), (rows, 4), (rows, width)]).ok_or_else(too_large)?;
        }
        // Each string takes 4 bytes at least: a damaged count cannot reserve more than that.
        let mut strings = Vec::with_capacity((n_paths + n_languages).min(map.len() / 4));
        for _ in 0..n_paths + n_languages {
            let len = map
                .get(at..at + 4)
                .map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]) as usize)
                .ok_or_else(|| corrupt("truncated string table"))?;
            let text = map
                .get(at + 4..at + 4 + len)
                .and_then(|b| std::str::from_utf8(b).ok())
                .ok_or_else(|| corrupt("truncated or invalid string table"))?;
            strings.push(text.to_string());
            at += 4 + len;
        }
        if at != map.len() {
            return Err(corrupt("unexpected length"));
        }
        let languages = strings.split_off(n_paths);
        let segment = Segment {
            name: name.to_string(),
            map,
            dims,
            rows,
            paths: strings,
            languages,
            codes,
            centre,
            ids_ascending: OnceLock::new(),
            populated: AtomicBool::new(false),
        };
        // The largest index of each column, in loops that vectorise: checking row by row took
        // a millisecond of every `lode search` process on the benchmark corpus.
        let largest_path = segment
            .column_bytes(16, 4)
            .chunks_exact(4)
            .map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
            .max();
        let largest_language = segment.column_bytes(20, 1).iter().copied().max();
        if largest_path.is_some_and(|index| index as usize >= n_paths)
            || largest_language.is_some_and(|index| usize::from(index) >= n_languages)
        {
            return Err(corrupt("a row points outside the string tables"));
        }
        Ok(segment)
    }

    /// All rows' values of one per-row column.
    fn column_bytes(&self, offset: usize, width: usize) -> &[u8] {
        let at = HEADER_BYTES + offset * self.rows;
        &self.map[at..at + width * self.rows]
    }

    fn column(&self, offset: usize, width: usize, row: usize) -> &[u8] {
        let at = HEADER_BYTES + offset * self.rows + row * width;
        &self.map[at..at + width]
    }

    pub fn id(&self, row: usize) -> i64 {
        let b = self.column(0, 8, row);
        i64::from_le_bytes([b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7]])
    }

    /// The row holding chunk `id`: a binary search when the rows are in ascending id order,
    /// `Err(NotOrdered)` when they are not (the caller scans instead).
    pub fn row_of(&self, id: i64) -> Result<Option<usize>, NotOrdered> {
        if !self.ids_ascending() {
            return Err(NotOrdered);
        }
        let (mut low, mut high) = (0, self.rows);
        while low < high {
            let middle = low + (high - low) / 2;
            match self.id(middle).cmp(&id) {
                std::cmp::Ordering::Less => low = middle + 1,
                std::cmp::Ordering::Greater => high = middle,
                std::cmp::Ordering::Equal => return Ok(Some(middle)),
            }
        }
        Ok(None)
    }

    /// Whether the rows are in ascending id order (see [`Segment::row_of`]).
    pub fn ids_ascending(&self) -> bool {
        *self.ids_ascending.get_or_init(|| {
            let ids = self
                .column_bytes(0, 8)
                .chunks_exact(8)
                .map(|b| i64::from_le_bytes([b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7]]));
            ids.clone().zip(ids.skip(1)).all(|(a, b)| a < b)
        })
    }

    pub fn content_hash(&self, row: usize) -> u64 {
        let b = self.column(8, 8, row);
        u64::from_le_bytes([b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7]])
    }

    pub fn path_index(&self, row: usize) -> u32 {
        let b = self.column(16, 4, row);
        u32::from_le_bytes([b[0], b[1], b[2], b[3]])
    }

    pub fn language_index(&self, row: usize) -> u8 {
        self.column(20, 1, row)[0]
    }

    pub fn scale(&self, row: usize) -> f32 {
        let b = self.column(21, 4, row);
        f32::from_le_bytes([b[0], b[1], b[2], b[3]])
    }

    /// The int8 components of a row, as raw bytes (read each as `i8`).
    pub fn quantized(&self, row: usize) -> &[u8] {
        let at = HEADER_BYTES + ROW_META_BYTES * self.rows + row * self.dims;
        &self.map[at..at + self.dims]
    }

    /// Whether the segment has binary codes (version 3) that a first pass can score: its
    /// per-row sums of 4-bit query levels must fit the kernels' u16 lanes (15 per dimension,
    /// so at most 4,369 dimensions). Searches scan a segment without exactly.
    pub fn has_codes(&self) -> bool {
        self.is_current() && self.dims * 15 <= usize::from(u16::MAX)
    }

    /// Whether the segment is in the format this lode writes (an older one is rewritten at
    /// the next commit).
    pub fn is_current(&self) -> bool {
        self.codes.is_some()
    }

    /// The centre the binary codes are signs around (empty without codes).
    pub fn centre(&self) -> &[f32] {
        &self.centre
    }

    /// The binary codes of the rows `rows` (`None` without codes). `rows.start` is a multiple
    /// of [`CODE_GROUP`] and `rows.end` at most the segment's rows.
    pub fn code_block(&self, rows: Range<usize>) -> Option<CodeBlock<'_>> {
        let layout = self.codes?;
        debug_assert!(rows.start.is_multiple_of(CODE_GROUP) && rows.end <= self.rows);
        let group_bytes = CODE_GROUP * layout.width;
        let groups = rows.start / CODE_GROUP..rows.end.div_ceil(CODE_GROUP);
        Some(CodeBlock {
            width: layout.width,
            grouped: &self.map[layout.grouped_at + groups.start * group_bytes
                ..layout.grouped_at + groups.end * group_bytes],
            factors: &self.map
                [layout.factors_at + 4 * rows.start..layout.factors_at + 4 * rows.end],
            counts: &self.map[layout.counts_at + 2 * rows.start..layout.counts_at + 2 * rows.end],
        })
    }

    /// Maps every page of the file into the process now, unless that was done before, so that
    /// searches take no page faults on it: rescoring reads a thousand rows no earlier search
    /// read, and a daemon's first queries spent a tenth of their time in page faults there.
    /// For a process that keeps the store open (a process that searches once would map far
    /// more than it reads). Returns whether it did so now.
    pub fn populate(&self) -> bool {
        if self.populated.swap(true, AtomicOrdering::AcqRel) {
            return false;
        }
        #[cfg(target_os = "linux")]
        if self.map.advise(memmap2::Advice::PopulateRead).is_ok() {
            return true;
        }
        // Kernels before 5.14 lack MADV_POPULATE_READ: one read per page maps it.
        let touched = self
            .map
            .iter()
            .step_by(4096)
            .fold(0u8, |sum, &byte| sum.wrapping_add(byte));
        std::hint::black_box(touched);
        true
    }

    /// Whether [`Segment::populate`] was called.
    pub fn is_populated(&self) -> bool {
        self.populated.load(AtomicOrdering::Acquire)
    }

    /// A row's vector, dequantised.
    pub fn vector(&self, row: usize) -> Vec<f32> {
        let scale = self.scale(row);
        self.quantized(row)
            .iter()
            .map(|&q| scale * f32::from(q as i8))
            .collect()
    }
}

/// The file name of segment number `n`.
pub fn segment_file_name(n: u64) -> String {
    format!("seg-{n:08}.vec")
}

/// Whether a file in the store directory is one of the store's data files.
pub fn is_store_file(name: &str) -> bool {
    (name.starts_with("seg-") && name.ends_with(".vec"))
        || (name.starts_with("dead-") && name.ends_with(".bin"))
        || name.ends_with(".tmp")
}

/// Where the codes of a current segment file start and end (test helpers).
#[cfg(test)]
fn code_section(bytes: &[u8]) -> (usize, usize, usize) {
    let word = |at: usize| u32::from_le_bytes(bytes[at..at + 4].try_into().unwrap()) as usize;
    assert_eq!(word(8), VERSION as usize);
    let (dims, rows) = (word(12), word(16));
    let start = HEADER_BYTES + rows * (ROW_META_BYTES + dims);
    let end =
        start + 4 * dims + 6 * rows + rows.div_ceil(CODE_GROUP) * CODE_GROUP * code_bytes(dims);
    (start, end, start + 4 * dims)
}

/// Rewrites a segment file as version 1 (no binary codes), as an older lode wrote it.
#[cfg(test)]
pub fn strip_codes(path: &Path) {
    let mut bytes = std::fs::read(path).unwrap();
    let (start, end, _) = code_section(&bytes);
    bytes.drain(start..end);
    bytes[8..12].copy_from_slice(&VERSION_WITHOUT_CODES.to_le_bytes());
    std::fs::write(path, bytes).unwrap();
}

/// Rewrites a segment file as version 2 (codes row by row, as development builds wrote them).
#[cfg(test)]
pub fn regroup_codes_as_version_2(path: &Path) {
    let mut bytes = std::fs::read(path).unwrap();
    let word = |at: usize| u32::from_le_bytes(bytes[at..at + 4].try_into().unwrap()) as usize;
    let (dims, rows) = (word(12), word(16));
    let (start, end, factors_at) = code_section(&bytes);
    let width = code_bytes(dims);
    let grouped_at = factors_at + 6 * rows;
    let mut section = bytes[start..factors_at + 4 * rows].to_vec();
    for row in 0..rows {
        let group = grouped_at + row / CODE_GROUP * CODE_GROUP * width;
        for p in 0..width {
            section.push(bytes[group + p * CODE_GROUP + row % CODE_GROUP]);
        }
    }
    bytes.splice(start..end, section);
    bytes[8..12].copy_from_slice(&VERSION_ROW_CODES.to_le_bytes());
    std::fs::write(path, bytes).unwrap();
}

/// Overwrites every code factor of a segment file with 0, so its first pass sees every row as
/// equally close.
#[cfg(test)]
pub fn flatten_codes(path: &Path) {
    let mut bytes = std::fs::read(path).unwrap();
    let word = |at: usize| u32::from_le_bytes(bytes[at..at + 4].try_into().unwrap()) as usize;
    let rows = word(16);
    let (_, _, factors_at) = code_section(&bytes);
    bytes[factors_at..factors_at + 4 * rows].fill(0);
    std::fs::write(path, bytes).unwrap();
}

/// Writes and opens a segment of 4-dimensional rows with these ids, in this order, all with
/// the same vector.
#[cfg(test)]
pub fn segment_of_ids(path: &Path, ids: &[i64]) -> Segment {
    let quantized = [1i8, -2, 3, -4];
    let rows: Vec<SegmentRow<'_>> = ids
        .iter()
        .map(|&id| SegmentRow {
            id,
            content_hash: 0,
            path: "a.rs",
            language: "rust",
            scale: 1.0,
            quantized: &quantized,
        })
        .collect();
    write_segment(path, 4, &rows).unwrap();
    let name = path.file_name().unwrap().to_string_lossy();
    Segment::open(path, &name).unwrap()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The AVX2 build of `quantize` gives the portable one's bits, halves and ties included.
    #[test]
    fn quantize_gives_the_same_bits_on_every_path() {
        let mut state = 0x9e37_79b9_7f4a_7c15u64;
        for dims in [1usize, 7, 256, 300] {
            let mut vector: Vec<f32> = (0..dims)
                .map(|_| {
                    state = state
                        .wrapping_mul(6_364_136_223_846_793_005)
                        .wrapping_add(1_442_695_040_888_963_407);
                    ((state >> 40) as f32 / (1u64 << 24) as f32) * 2.0 - 1.0
                })
                .collect();
            // Components that land exactly on a half step: 0.5 * scale rounds away from 0.
            if dims > 3 {
                vector[0] = 1.0;
                vector[1] = 0.5 / 127.0;
                vector[2] = -1.5 / 127.0;
            }
            let (scale, portable) = quantize_portable(&vector);
            let (dispatched_scale, dispatched) = quantize(&vector);
            assert_eq!(scale.to_bits(), dispatched_scale.to_bits(), "dims {dims}");
            assert_eq!(portable, dispatched, "dims {dims}");
            if dims > 3 {
                assert_eq!(&portable[..3], &[127, 1, -2]);
            }
        }
        assert_eq!(quantize(&[0.0, 0.0]), (0.0, vec![0, 0]));
    }

    /// Rows in ascending id order are found by binary search, absent ids (below, between and
    /// above the stored ones) are not; rows in another order say so instead of guessing.
    #[test]
    fn rows_are_found_by_id_only_in_a_segment_written_in_id_order() {
        let dir = tempfile::tempdir().unwrap();
        let segment_of = |name: &str, ids: &[i64]| segment_of_ids(&dir.path().join(name), ids);
        let ordered_ids: Vec<i64> = (0..1000).map(|n| 3 * n + 10).collect();
        let ordered = segment_of("ordered.vec", &ordered_ids);
        for (row, &id) in ordered_ids.iter().enumerate() {
            assert_eq!(ordered.row_of(id), Ok(Some(row)), "id {id}");
        }
        for absent in [-5, 0, 9, 11, 12, 1_001, 3_008, 3_010, i64::MAX] {
            assert_eq!(ordered.row_of(absent), Ok(None), "id {absent}");
        }
        let single = segment_of("single.vec", &[42]);
        assert_eq!(single.row_of(42), Ok(Some(0)));
        assert_eq!(single.row_of(41), Ok(None));

        let unordered = segment_of("unordered.vec", &[5, 3, 8]);
        assert_eq!(unordered.row_of(3), Err(NotOrdered));
        // A repeated id is not "ascending" either.
        let repeated = segment_of("repeated.vec", &[1, 2, 2, 3]);
        assert_eq!(repeated.row_of(2), Err(NotOrdered));
    }

    /// Every bit of every code, over more rows than one group and a partial last byte,
    /// against the sign of its component's difference from the centre, computed here one
    /// component at a time.
    #[test]
    fn every_code_bit_is_its_components_sign_across_groups() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("seg.vec");
        let (dims, count) = (37, 2 * CODE_GROUP + 5);
        let mut state = 0x2545_f491_4f6c_dd1du64;
        let vectors: Vec<Vec<i8>> = (0..count)
            .map(|_| {
                (0..dims)
                    .map(|_| {
                        state = state
                            .wrapping_mul(6_364_136_223_846_793_005)
                            .wrapping_add(1_442_695_040_888_963_407);
                        (state >> 56) as i8
                    })
                    .collect()
            })
            .collect();
        let rows: Vec<SegmentRow<'_>> = vectors
            .iter()
            .enumerate()
            .map(|(row, quantized)| SegmentRow {
                id: row as i64,
                content_hash: 0,
                path: "a.rs",
                language: "rust",
                scale: 0.25 + row as f32 / 64.0,
                quantized,
            })
            .collect();
        write_segment(&path, dims, &rows).unwrap();
        let segment = Segment::open(&path, "seg.vec").unwrap();
        let centre = segment.centre().to_vec();
        let block = segment.code_block(0..count).unwrap();
        let width = dims.div_ceil(8);
        for (index, row) in rows.iter().enumerate() {
            let mut set = 0u16;
            for (component, (&q, &c)) in row.quantized.iter().zip(&centre).enumerate() {
                let above = row.scale * f32::from(q) - c > 0.0;
                let at = index / CODE_GROUP * CODE_GROUP * width
                    + component / 8 * CODE_GROUP
                    + index % CODE_GROUP;
                let bit = block.grouped[at] >> (component % 8) & 1 == 1;
                assert_eq!(bit, above, "row {index}, component {component}");
                set += u16::from(above);
            }
            let stored = u16::from_le_bytes([block.counts[2 * index], block.counts[2 * index + 1]]);
            assert_eq!(stored, set, "row {index}");
        }
    }

    #[test]
    fn codes_are_signs_around_the_mean_with_their_factor() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("seg.vec");
        // Nine dimensions: the code of each row takes two bytes, the second holding one bit.
        let a: Vec<i8> = vec![10, -10, 20, 0, 5, 5, 5, 5, 100];
        let b: Vec<i8> = vec![-10, -10, 0, 0, 5, 5, 5, 5, -100];
        let rows = [
            SegmentRow {
                id: 1,
                content_hash: 1,
                path: "a.rs",
                language: "rust",
                scale: 0.5,
                quantized: &a,
            },
            SegmentRow {
                id: 2,
                content_hash: 2,
                path: "b.rs",
                language: "rust",
                scale: 0.5,
                quantized: &b,
            },
        ];
        write_segment(&path, 9, &rows).unwrap();
        let segment = Segment::open(&path, "seg.vec").unwrap();
        assert!(segment.has_codes());
        assert_eq!(
            segment.centre(),
            [0.0, -5.0, 5.0, 0.0, 2.5, 2.5, 2.5, 2.5, 0.0]
        );
        // Row a minus the centre: 5, 0, 5, 0, 0, 0, 0, 0, 50 → bits 0, 2 and 8.
        let block = segment.code_block(0..2).unwrap();
        assert_eq!(block.width, 2);
        // One group of 32 rows: byte 0 of every row, then byte 1 of every row.
        assert_eq!(block.grouped.len(), 2 * CODE_GROUP);
        assert_eq!(&block.grouped[..3], [0b0000_0101, 0, 0]);
        assert_eq!(&block.grouped[CODE_GROUP..CODE_GROUP + 3], [0b1, 0, 0]);
        assert!(block.grouped.iter().filter(|&&b| b != 0).count() == 2);
        assert_eq!(block.counts, [3, 0, 0, 0]);
        let factor = (25.0 + 25.0 + 2500.0) / (5.0 + 5.0 + 50.0);
        let factors: Vec<f32> = block
            .factors
            .chunks_exact(4)
            .map(|b| f32::from_le_bytes(b.try_into().unwrap()))
            .collect();
        assert_eq!(factors.len(), 2);
        assert!(
            factors.iter().all(|f| (f - factor).abs() < 1e-4),
            "{factors:?}"
        );
        assert_eq!(segment.vector(0)[8], 50.0);

        for rewrite in [regroup_codes_as_version_2, strip_codes] {
            let copy = dir.path().join("old.vec");
            std::fs::copy(&path, &copy).unwrap();
            rewrite(&copy);
            let old = Segment::open(&copy, "old.vec").unwrap();
            assert!(!old.has_codes());
            assert!(old.centre().is_empty());
            assert!(old.code_block(0..2).is_none());
            assert_eq!(old.vector(1), segment.vector(1));
            assert_eq!((old.id(1), old.content_hash(1)), (2, 2));
            assert_eq!(old.paths, ["a.rs", "b.rs"]);
        }
    }

    #[test]
    fn a_row_pointing_outside_the_string_tables_is_corrupt() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("seg.vec");
        let q = vec![1i8; 8];
        let rows: Vec<SegmentRow<'_>> = ["a.rs", "b.rs"]
            .iter()
            .enumerate()
            .map(|(id, path)| SegmentRow {
                id: id as i64,
                content_hash: 1,
                path,
                language: "rust",
                scale: 1.0,
                quantized: &q,
            })
            .collect();
        write_segment(&path, 8, &rows).unwrap();
        let good = std::fs::read(&path).unwrap();
        assert!(Segment::open(&path, "seg.vec").is_ok());
        // Row 1's path index (after the ids and hashes), then row 0's language index.
        let path_index = HEADER_BYTES + 16 * 2 + 4;
        let language_index = HEADER_BYTES + 20 * 2;
        for (at, value) in [(path_index, 2u8), (language_index, 1)] {
            let mut bytes = good.clone();
            bytes[at] = value;
            std::fs::write(&path, &bytes).unwrap();
            assert!(matches!(
                Segment::open(&path, "seg.vec"),
                Err(VectorError::Corrupt { .. })
            ));
        }
    }

    #[test]
    fn a_header_with_huge_sizes_is_corrupt_not_an_overflow() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("seg.vec");
        let q = vec![1i8; 8];
        let row = SegmentRow {
            id: 1,
            content_hash: 1,
            path: "a.rs",
            language: "rust",
            scale: 1.0,
            quantized: &q,
        };
        write_segment(&path, 8, &[row]).unwrap();
        let good = std::fs::read(&path).unwrap();
        // dims, rows, paths: each at its largest, then all together.
        for fields in [vec![12], vec![16], vec![20], vec![12, 16, 20, 24]] {
            let mut bytes = good.clone();
            for at in fields {
                bytes[at..at + 4].copy_from_slice(&u32::MAX.to_le_bytes());
            }
            std::fs::write(&path, &bytes).unwrap();
            assert!(matches!(
                Segment::open(&path, "seg.vec"),
                Err(VectorError::Corrupt { .. })
            ));
        }
    }

    #[test]
    fn a_truncated_code_section_is_corrupt() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("seg.vec");
        let q = vec![1i8; 16];
        let row = SegmentRow {
            id: 1,
            content_hash: 1,
            path: "a.rs",
            language: "rust",
            scale: 1.0,
            quantized: &q,
        };
        write_segment(&path, 16, &[row]).unwrap();
        let mut bytes = std::fs::read(&path).unwrap();
        // Claim the current version for a body laid out without codes.
        strip_codes(&path);
        let stripped = std::fs::read(&path).unwrap();
        assert!(stripped.len() < bytes.len());
        let mut forged = stripped.clone();
        forged[8..12].copy_from_slice(&VERSION.to_le_bytes());
        std::fs::write(&path, &forged).unwrap();
        assert!(matches!(
            Segment::open(&path, "seg.vec"),
            Err(VectorError::Corrupt { .. })
        ));
        // A version this lode does not know, and the current one cut short.
        let mut future = bytes.clone();
        future[8..12].copy_from_slice(&4u32.to_le_bytes());
        std::fs::write(&path, &future).unwrap();
        assert!(matches!(
            Segment::open(&path, "seg.vec"),
            Err(VectorError::Corrupt { .. })
        ));
        bytes.truncate(bytes.len() - 20);
        std::fs::write(&path, &bytes).unwrap();
        assert!(matches!(
            Segment::open(&path, "seg.vec"),
            Err(VectorError::Corrupt { .. })
        ));
    }
}
