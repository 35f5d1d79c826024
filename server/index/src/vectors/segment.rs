//! Segment files of the embedded vector store: immutable, written once, memory-mapped.
//!
//! Layout (little-endian, no padding):
//! `LODEVSEG`, u32 version, u32 dims, u32 rows, u32 paths, u32 languages, then per row
//! i64 id, u64 content hash, u32 path index, u8 language index, f32 scale (each as one
//! column of `rows` values), then `rows * dims` int8 vector components (row-major), then the
//! path table and the language table (u32 byte length + UTF-8 each). A vector's value is
//! `scale * q`.

use std::collections::HashMap;
use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::Path;

use memmap2::Mmap;

use super::VectorError;

const MAGIC: &[u8; 8] = b"LODEVSEG";
const VERSION: u32 = 1;
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

/// Quantises `vector` to int8 with one scale (`max |x| / 127`).
pub fn quantize(vector: &[f32], out: &mut Vec<i8>) -> f32 {
    let max = vector.iter().fold(0.0f32, |m, x| m.max(x.abs()));
    out.clear();
    if max == 0.0 || !max.is_finite() {
        out.resize(vector.len(), 0);
        return 0.0;
    }
    let scale = max / 127.0;
    out.extend(
        vector
            .iter()
            .map(|x| (x / scale).round().clamp(-127.0, 127.0) as i8),
    );
    scale
}

/// Writes a segment to `path` and flushes it to disk.
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
    for text in paths.iter().chain(&languages) {
        out.write_all(&(text.len() as u32).to_le_bytes())
            .map_err(io)?;
        out.write_all(text.as_bytes()).map_err(io)?;
    }
    let file = out.into_inner().map_err(|e| io(e.into_error()))?;
    file.sync_all().map_err(io)?;
    Ok(())
}

/// An open, memory-mapped segment.
pub struct Segment {
    pub name: String,
    map: Mmap,
    pub dims: usize,
    pub rows: usize,
    pub paths: Vec<String>,
    pub languages: Vec<String>,
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
        if header(8) != VERSION {
            return Err(corrupt("unsupported segment version"));
        }
        let dims = header(12) as usize;
        let rows = header(16) as usize;
        let (n_paths, n_languages) = (header(20) as usize, header(24) as usize);
        let mut at = HEADER_BYTES + rows * (ROW_META_BYTES + dims);
        let mut strings = Vec::with_capacity(n_paths + n_languages);
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
        };
        for row in 0..rows {
            if segment.path_index(row) as usize >= n_paths
                || segment.language_index(row) as usize >= n_languages
            {
                return Err(corrupt("a row points outside the string tables"));
            }
        }
        Ok(segment)
    }

    fn column(&self, offset: usize, width: usize, row: usize) -> &[u8] {
        let at = HEADER_BYTES + offset * self.rows + row * width;
        &self.map[at..at + width]
    }

    pub fn id(&self, row: usize) -> i64 {
        let b = self.column(0, 8, row);
        i64::from_le_bytes([b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7]])
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
