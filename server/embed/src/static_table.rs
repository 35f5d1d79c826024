//! The built-in static embedder: one int8 vector per WordPiece token (and per frequent code
//! word), weighted, summed over a text's tokens and L2-normalised. No neural network runs.
//!
//! The table is distilled from all-MiniLM-L6-v2 by `scripts/embeddings/distill.py`; its file
//! format is documented in `scripts/embeddings/README.md`. The default table is compiled into
//! the binary (`assets/embeddings/`, Apache-2.0, see the NOTICE there).

use std::borrow::Cow;
use std::collections::HashMap;
use std::path::Path;
use std::sync::OnceLock;

use rustc_hash::FxBuildHasher;

use super::text::for_each_word;
use super::wordpiece::WordPiece;
use super::{EmbedError, Embedder, EmbedderIdentity};

static BUILTIN_TABLE: &[u8] = include_bytes!(concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../../assets/embeddings/static-minilm.bin"
));
include!(concat!(env!("OUT_DIR"), "/builtin_table_hash.rs"));
static BUILTIN_VOCAB: &str = include_str!(concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../../assets/embeddings/static-minilm.vocab.txt"
));

const MAGIC: &[u8; 8] = b"LODESEMB";
/// The built-in table's name, part of its identity.
const BUILTIN_NAME: &str = "static-minilm";

/// The identity of a static table: its name and the low half of its hash name the model.
fn identity_of(name: &str, hash: u64, dims: usize) -> EmbedderIdentity {
    EmbedderIdentity {
        backend: "static".into(),
        model: format!("{name}-{:08x}", hash as u32),
        dimension: dims,
    }
}
const VERSION: u32 = 1;
const HEADER_BYTES: usize = 32;

/// A static embedding table with its tokenizer.
///
/// Opening one reads only the header (the built-in table's hash, its identity, is computed at
/// build time); the vocabulary, the whole-word list and the row scales are built on the first
/// embedding. Commands that never embed (lexical search, symbols, the map) thus pay neither for reading the table nor
/// for building the vocabulary's hash maps.
pub struct StaticEmbedder {
    identity: EmbedderIdentity,
    dims: usize,
    /// Row-major int8 vectors, `dims` per row (stored as bytes; read as `i8`), after the header,
    /// the scale and weight columns.
    rows: Cow<'static, [u8]>,
    layout: TableLayout,
    vocabulary: Cow<'static, str>,
    tokens: OnceLock<Result<Tokens, String>>,
}

/// Where the parts of a table are, read from its header.
#[derive(Clone, Copy)]
struct TableLayout {
    dims: usize,
    rows: usize,
    n_base: usize,
    n_extra: usize,
    rows_offset: usize,
}

/// What embedding needs beyond the raw rows, built once from the table and vocabulary.
struct Tokens {
    /// Per row: token weight times dequantisation scale (0 for tokens that do not count).
    row_scale: Vec<f32>,
    vocab: WordPiece,
    /// Whole-word rows for frequent code words that WordPiece would split.
    words: HashMap<Box<str>, u32, FxBuildHasher>,
}

impl StaticEmbedder {
    /// The table compiled into lode. Its vocabulary is built on first use (see the type's doc);
    /// the table itself is checked by this crate's tests.
    pub fn builtin() -> Result<StaticEmbedder, EmbedError> {
        StaticEmbedder::from_parts(
            Cow::Borrowed(BUILTIN_TABLE),
            Cow::Borrowed(BUILTIN_VOCAB),
            BUILTIN_NAME,
            BUILTIN_TABLE_HASH,
        )
    }

    /// A table and vocabulary from files (e.g. a table distilled with other settings), checked
    /// in full before this returns.
    pub fn from_files(table: &Path, vocabulary: &Path) -> Result<StaticEmbedder, EmbedError> {
        let read = |path: &Path| {
            std::fs::read(path).map_err(|e| EmbedError::Config(format!("{}: {e}", path.display())))
        };
        let vocab = String::from_utf8(read(vocabulary)?)
            .map_err(|_| EmbedError::BadTable("the vocabulary is not UTF-8".into()))?;
        let name = table
            .file_stem()
            .and_then(|s| s.to_str())
            .unwrap_or("static")
            .to_string();
        let table = read(table)?;
        let hash = xxhash_rust::xxh3::xxh3_64(&table);
        let embedder =
            StaticEmbedder::from_parts(Cow::Owned(table), Cow::Owned(vocab), &name, hash)?;
        embedder.tokens()?;
        Ok(embedder)
    }

    /// The built-in table's identity, from constants the build computed: what a process that
    /// only compares settings (a query sent to a lease holder) needs, without mapping the table.
    pub fn builtin_identity() -> EmbedderIdentity {
        identity_of(BUILTIN_NAME, BUILTIN_TABLE_HASH, BUILTIN_TABLE_DIMS)
    }

    /// Checks the header and derives the identity from `hash` (xxh3-64 of the whole table); the
    /// rest waits for [`Self::tokens`].
    fn from_parts(
        table: Cow<'static, [u8]>,
        vocabulary: Cow<'static, str>,
        name: &str,
        hash: u64,
    ) -> Result<StaticEmbedder, EmbedError> {
        let bad = |what: &str| EmbedError::BadTable(what.to_string());
        let u32_at = |at: usize| -> Result<u32, EmbedError> {
            let bytes = table
                .get(at..at + 4)
                .ok_or_else(|| bad("the file is truncated"))?;
            Ok(u32::from_le_bytes([bytes[0], bytes[1], bytes[2], bytes[3]]))
        };
        if table.get(..8) != Some(MAGIC.as_slice()) {
            return Err(bad("not a lode static embedding table (bad magic)"));
        }
        if u32_at(8)? != VERSION {
            return Err(bad("unsupported table version"));
        }
        let dims = u32_at(12)? as usize;
        let rows = u32_at(16)? as usize;
        let n_base = u32_at(20)? as usize;
        let n_extra = u32_at(24)? as usize;
        if dims == 0 || rows != n_base + n_extra {
            return Err(bad("inconsistent header"));
        }
        let rows_offset = HEADER_BYTES + 8 * rows;
        if table.len() < rows_offset + rows * dims {
            return Err(bad("the file is truncated"));
        }
        Ok(StaticEmbedder {
            identity: identity_of(name, hash, dims),
            dims,
            rows: table,
            layout: TableLayout {
                dims,
                rows,
                n_base,
                n_extra,
                rows_offset,
            },
            vocabulary,
            tokens: OnceLock::new(),
        })
    }

    /// The vocabulary, word list and row scales, built on first call.
    fn tokens(&self) -> Result<&Tokens, EmbedError> {
        self.tokens
            .get_or_init(|| {
                build_tokens(&self.rows, &self.vocabulary, self.layout).map_err(|e| e.to_string())
            })
            .as_ref()
            .map_err(|message| EmbedError::BadTable(message.clone()))
    }

    /// The table rows `text` sums (exposed for tests and benchmarks).
    pub fn token_rows(&self, text: &str) -> Result<Vec<u32>, EmbedError> {
        let tokens = self.tokens()?;
        let mut ids = Vec::new();
        let mut scratch = String::new();
        for_each_word(text, |word| tokens.word_rows(word, &mut scratch, &mut ids));
        Ok(ids)
    }

    /// Embeds one text into `out` (length `dims`), reusing the buffers.
    fn embed_into(
        &self,
        tokens: &Tokens,
        text: &str,
        ids: &mut Vec<u32>,
        scratch: &mut String,
        out: &mut [f32],
    ) {
        ids.clear();
        for_each_word(text, |word| tokens.word_rows(word, scratch, ids));
        out.fill(0.0);
        let table = &self.rows[self.layout.rows_offset..];
        // Code repeats its tokens (`self`, `let`, a local's name), so each distinct row is
        // added once, times its count: about half the row additions of a chunk.
        ids.sort_unstable();
        add_rows(out, table, &tokens.row_scale, ids);
        super::normalize(out);
    }
}

/// Adds to `out` each distinct row of `ids` (sorted) times its scale and its count.
fn add_rows(out: &mut [f32], table: &[u8], row_scale: &[f32], ids: &[u32]) {
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("avx2") {
        // SAFETY: the CPU supports AVX2, the one requirement of `add_rows_avx2`.
        unsafe { add_rows_avx2(out, table, row_scale, ids) };
        return;
    }
    add_rows_portable(out, table, row_scale, ids);
}

/// [`add_rows`] compiled for AVX2: the default x86-64 target widens int8 to f32 four at a
/// time with SSE2 unpacks; AVX2 converts eight per instruction. The sums are the same bits
/// (the same additions in the same order, nothing fused).
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
fn add_rows_avx2(out: &mut [f32], table: &[u8], row_scale: &[f32], ids: &[u32]) {
    add_rows_portable(out, table, row_scale, ids);
}

#[inline(always)]
fn add_rows_portable(out: &mut [f32], table: &[u8], row_scale: &[f32], ids: &[u32]) {
    let dims = out.len();
    for run in ids.chunk_by(|a, b| a == b) {
        let id = run[0] as usize;
        let scale = row_scale[id] * run.len() as f32;
        if scale == 0.0 {
            continue;
        }
        let row = &table[id * dims..(id + 1) * dims];
        for (sum, &q) in out.iter_mut().zip(row) {
            *sum += scale * f32::from(q as i8);
        }
    }
}

impl Tokens {
    fn word_rows(&self, word: &str, scratch: &mut String, out: &mut Vec<u32>) {
        match self.words.get(word) {
            Some(&row) => out.push(row),
            None => self.vocab.tokenize(word, scratch, out),
        }
    }
}

/// Reads the scale and weight columns and the whole-word list, and builds the vocabulary.
fn build_tokens(table: &[u8], vocabulary: &str, layout: TableLayout) -> Result<Tokens, EmbedError> {
    let bad = |what: &str| EmbedError::BadTable(what.to_string());
    let TableLayout {
        rows,
        n_base,
        n_extra,
        rows_offset,
        ..
    } = layout;
    let f32s = |at: usize| -> Result<Vec<f32>, EmbedError> {
        let bytes = table
            .get(at..at + 4 * rows)
            .ok_or_else(|| bad("the file is truncated"))?;
        Ok(bytes
            .chunks_exact(4)
            .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
            .collect())
    };
    let scales = f32s(HEADER_BYTES)?;
    let weights = f32s(HEADER_BYTES + 4 * rows)?;
    let mut at = rows_offset + rows * layout.dims;
    let mut words = HashMap::with_capacity_and_hasher(n_extra, FxBuildHasher);
    for j in 0..n_extra {
        let len = table
            .get(at..at + 2)
            .map(|b| u16::from_le_bytes([b[0], b[1]]) as usize)
            .ok_or_else(|| bad("the word list is truncated"))?;
        let word = table
            .get(at + 2..at + 2 + len)
            .and_then(|b| std::str::from_utf8(b).ok())
            .ok_or_else(|| bad("a whole-word entry is truncated or not UTF-8"))?;
        words.insert(word.into(), (n_base + j) as u32);
        at += 2 + len;
    }
    if at != table.len() {
        return Err(bad("trailing bytes after the word list"));
    }
    let vocab = WordPiece::from_lines(vocabulary)?;
    if vocab.token_count() != n_base {
        return Err(EmbedError::BadTable(format!(
            "the vocabulary has {} tokens, the table {n_base} rows",
            vocab.token_count()
        )));
    }
    let row_scale = scales.iter().zip(&weights).map(|(s, w)| s * w).collect();
    Ok(Tokens {
        row_scale,
        vocab,
        words,
    })
}

impl Embedder for StaticEmbedder {
    fn identity(&self) -> &EmbedderIdentity {
        &self.identity
    }

    fn embed_batch(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, EmbedError> {
        let tokens = self.tokens()?;
        let mut ids = Vec::with_capacity(512);
        let mut scratch = String::new();
        Ok(texts
            .iter()
            .map(|text| {
                let mut vector = vec![0.0; self.dims];
                self.embed_into(tokens, text, &mut ids, &mut scratch, &mut vector);
                vector
            })
            .collect())
    }

    fn batch_size(&self) -> usize {
        1024
    }

    fn embeds_while_parsing(&self) -> bool {
        true
    }

    fn splits_identifiers(&self) -> bool {
        true
    }

    /// Score fusion was tuned with this table (bench/semantic/fusion.py).
    fn similarity_scale(&self) -> super::SimilarityScale {
        super::SimilarityScale::Calibrated
    }

    /// The trained table puts texts about nothing in the code at 0.17-0.32 from their best
    /// chunk (measured on tokio and regex-automata: "chocolate cake recipe", "the history of
    /// ancient rome", ...; through `lode search --mode semantic` all of them fall under the
    /// floor) and related ones from about 0.4-0.5 up. The floor drops the bulk of the
    /// unrelated ones; a higher one starts to cost hybrid retrieval quality
    /// (bench/semantic/fusion.py: 0.25 and 0.3 are within 0.005 MRR@10 of no floor).
    fn relevance_floor(&self) -> f32 {
        STATIC_RELEVANCE_FLOOR
    }
}

/// See [`StaticEmbedder::relevance_floor`].
const STATIC_RELEVANCE_FLOOR: f32 = 0.3;

#[cfg(test)]
mod tests {
    use super::*;
    // The table's vectors are unit vectors, so their dot product is their cosine.
    use crate::dot as cosine;

    /// The AVX2 build of the row sums gives the portable one's bits, over the built-in
    /// table's own rows with repeated and zero-scaled ids.
    #[test]
    fn row_sums_are_the_same_bits_on_every_path() {
        let embedder = StaticEmbedder::builtin().unwrap();
        let tokens = embedder.tokens().unwrap();
        let table = &embedder.rows[embedder.layout.rows_offset..];
        let dims = embedder.dims;
        let rows = tokens.row_scale.len() as u32;
        let mut ids: Vec<u32> = (0..400u32).map(|n| (n * 7919) % rows).collect();
        ids.extend([3, 3, 3, 0, rows - 1]);
        ids.sort_unstable();
        let mut portable = vec![0.0f32; dims];
        let mut dispatched = vec![0.0f32; dims];
        add_rows_portable(&mut portable, table, &tokens.row_scale, &ids);
        add_rows(&mut dispatched, table, &tokens.row_scale, &ids);
        assert!(portable.iter().any(|&x| x != 0.0));
        let bits = |v: &[f32]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
        assert_eq!(bits(&portable), bits(&dispatched));
    }

    #[test]
    fn the_builtin_table_loads_and_embeds_unit_vectors() {
        let embedder = StaticEmbedder::builtin().unwrap();
        assert_eq!(embedder.identity().backend, "static");
        assert_eq!(embedder.identity().dimension, 256);
        // The identity from the build's constants is the one the opened table has.
        assert_eq!(&StaticEmbedder::builtin_identity(), embedder.identity());
        let vectors = embedder
            .embed_batch(&["read a file line by line", "", "1234 ++"])
            .unwrap();
        let norm = cosine(&vectors[0], &vectors[0]);
        assert!((norm - 1.0).abs() < 1e-4, "{norm}");
        assert!(
            vectors[1].iter().all(|&x| x == 0.0),
            "no tokens, zero vector"
        );
        assert!(vectors[2].iter().all(|&x| x == 0.0));
    }

    #[test]
    fn identifiers_embed_like_their_words() {
        let embedder = StaticEmbedder::builtin().unwrap();
        let v = embedder
            .embed_batch(&[
                "parseConfigFile",
                "parse config file",
                "tcp socket listener",
            ])
            .unwrap();
        assert!(cosine(&v[0], &v[1]) > 0.999);
        assert!(cosine(&v[0], &v[2]) < 0.9);
    }

    #[test]
    fn related_texts_are_closer_than_unrelated_ones() {
        let embedder = StaticEmbedder::builtin().unwrap();
        let v = embedder
            .embed_batch(&[
                "open a tcp connection to the server",
                "fn connect(addr: SocketAddr) -> TcpStream { TcpStream::connect(addr) }",
                "fn sort_by_key(items: &mut [Item]) { items.sort_by(|a, b| a.key.cmp(&b.key)) }",
            ])
            .unwrap();
        assert!(cosine(&v[0], &v[1]) > cosine(&v[0], &v[2]));
    }

    /// The table was trained on doc-sentence/function pairs of all five languages
    /// (scripts/embeddings/train.py --languages): in each, a sentence lands nearer the
    /// function it describes than a neighbour of the same file, written in that language's
    /// idioms.
    #[test]
    fn sentences_find_their_function_in_every_language() {
        let embedder = StaticEmbedder::builtin().unwrap();
        let cases: [(&str, &str, &str, &str); 5] = [
            (
                "python",
                "Return how many jobs are still waiting",
                "class Pool:\n    def __len__(self):\n        return len(self._pending)",
                "class Pool:\n    async def close(self):\n        await self._sock.aclose()",
            ),
            (
                "javascript",
                "Remove every listener registered for an event",
                "EventEmitter.prototype.off = function (name) {\n  delete this._handlers[name];\n};",
                "EventEmitter.prototype.emit = function (name, ...args) {\n  for (const h of this._handlers[name]) h(...args);\n};",
            ),
            (
                "typescript",
                "Parse a duration such as 5m or 2h into milliseconds",
                "export function toMillis(text: string): number {\n  const unit = text.slice(-1);\n  return parseInt(text, 10) * (unit === 'h' ? 3600000 : 60000);\n}",
                "export interface RetryOptions {\n  attempts: number;\n  backoff?: (attempt: number) => number;\n}",
            ),
            (
                "go",
                "Read reads up to len(p) bytes into p from the underlying buffer",
                "func (r *Reader) Read(p []byte) (n int, err error) {\n\tn = copy(p, r.buf[r.off:])\n\tr.off += n\n\treturn n, nil\n}",
                "func (r *Reader) Close() error {\n\tr.closed = true\n\treturn nil\n}",
            ),
            (
                "rust",
                "Returns the number of elements the map can hold without reallocating",
                "pub fn capacity(&self) -> usize {\n    self.table.buckets() * 7 / 8\n}",
                "pub fn clear(&mut self) {\n    self.table.drop_elements();\n}",
            ),
        ];
        for (language, sentence, described, neighbour) in cases {
            let v = embedder
                .embed_batch(&[sentence, described, neighbour])
                .unwrap();
            assert!(
                cosine(&v[0], &v[1]) > cosine(&v[0], &v[2]),
                "{language}: {sentence:?} is nearer its neighbour than its function"
            );
        }
    }

    #[test]
    fn whole_word_rows_win_over_pieces() {
        let embedder = StaticEmbedder::builtin().unwrap();
        let rows = embedder.token_rows("usize").unwrap();
        assert_eq!(rows.len(), 1);
        assert!(
            rows[0] as usize >= embedder.tokens().unwrap().vocab.token_count(),
            "usize has its own row"
        );
    }

    /// Opens a table and builds its vocabulary, as `from_files` does.
    fn checked(table: Cow<'static, [u8]>, vocab: &'static str) -> Result<(), EmbedError> {
        let embedder = StaticEmbedder::from_parts(table, Cow::Borrowed(vocab), "x", 0)?;
        embedder.tokens().map(|_| ())
    }

    #[test]
    fn damaged_tables_are_refused() {
        let vocab = BUILTIN_VOCAB;
        let truncated = Cow::Owned(BUILTIN_TABLE[..BUILTIN_TABLE.len() - 3].to_vec());
        assert!(matches!(
            checked(truncated, vocab),
            Err(EmbedError::BadTable(_))
        ));
        let mut wrong_magic = BUILTIN_TABLE[..64].to_vec();
        wrong_magic[0] = b'X';
        assert!(checked(Cow::Owned(wrong_magic), vocab).is_err());
        assert!(checked(Cow::Borrowed(BUILTIN_TABLE), "[UNK]\n").is_err());
    }

    #[test]
    fn a_table_damaged_past_its_header_fails_on_first_embedding_not_before() {
        let truncated = Cow::Owned(BUILTIN_TABLE[..BUILTIN_TABLE.len() - 3].to_vec());
        let embedder =
            StaticEmbedder::from_parts(truncated, Cow::Borrowed(BUILTIN_VOCAB), "x", 0).unwrap();
        assert_eq!(embedder.identity().dimension, 256);
        for _ in 0..2 {
            assert!(matches!(
                embedder.embed_batch(&["read a file"]),
                Err(EmbedError::BadTable(message)) if message.contains("truncated")
            ));
        }
    }

    #[test]
    fn the_build_time_hash_is_the_hash_of_the_compiled_table() {
        assert_eq!(
            xxhash_rust::xxh3::xxh3_64(BUILTIN_TABLE),
            BUILTIN_TABLE_HASH,
            "build.rs hashed another file than the one compiled in"
        );
    }

    #[test]
    fn from_files_checks_the_whole_table_up_front() {
        let dir = tempfile::tempdir().unwrap();
        let table = dir.path().join("t.bin");
        let vocabulary = dir.path().join("t.vocab.txt");
        std::fs::write(&table, &BUILTIN_TABLE[..BUILTIN_TABLE.len() - 3]).unwrap();
        std::fs::write(&vocabulary, BUILTIN_VOCAB).unwrap();
        assert!(matches!(
            StaticEmbedder::from_files(&table, &vocabulary),
            Err(EmbedError::BadTable(_))
        ));
        std::fs::write(&table, BUILTIN_TABLE).unwrap();
        let embedder = StaticEmbedder::from_files(&table, &vocabulary).unwrap();
        assert_eq!(
            embedder.identity().model.rsplit('-').next(),
            StaticEmbedder::builtin()
                .unwrap()
                .identity()
                .model
                .rsplit('-')
                .next(),
            "same bytes, same hash"
        );
    }
}
