//! The tantivy BM25 index over chunks: schema, writing, and ranked lookup.
//!
//! Derived from the catalog: each commit carries the catalog generation it mirrors as its
//! payload, so a mismatch after a crash is detected on open and answered by a rebuild.

use std::path::Path;

use tantivy::collector::TopDocs;
use tantivy::directory::error::LockError;
use tantivy::indexer::NoMergePolicy;
use tantivy::query::{BooleanQuery, BoostQuery, Occur, Query, TermQuery, TermSetQuery};
use tantivy::schema::{
    FAST, Field, INDEXED, IndexRecordOption, STRING, Schema, TextFieldIndexing, TextOptions,
};
use tantivy::tokenizer::{TextAnalyzer, TokenStream};
use tantivy::{
    FutureResult, Index, IndexReader, IndexWriter, ReloadPolicy, SegmentMeta, TantivyError, Term,
    doc,
};

use crate::catalog::ChunkRow;
use crate::error::IndexError;
use crate::tokenizer::{CODE_TOKENIZER, CodeTokenizer};
use lode_syntax::Chunk;

/// Memory each tantivy indexing thread may use before it flushes a segment. The whole of
/// `bench/`'s corpus (1M chunks) fits one; a write that fits closes one segment per commit.
const WRITER_MEMORY_PER_THREAD: usize = 512 * 1024 * 1024;

/// Cores per tantivy indexing thread. Each thread builds segments of its own, each with a term
/// dictionary of nearly the whole vocabulary, which a merge later unites again: on 2 cores,
/// one thread took 8–12% less CPU for a cold index than two did, and 10% less together with
/// no lexical commit at a cold build's checkpoints (bench/README.md). Parsing,
/// which keeps every core busy, is the bulk of the work anyway.
const CORES_PER_WRITER_THREAD: usize = 4;

/// How many threads the tantivy writer indexes with: one per four cores, at least one and at
/// most four.
fn writer_threads() -> usize {
    std::thread::available_parallelism()
        .map_or(1, |n| n.get())
        .div_ceil(CORES_PER_WRITER_THREAD)
        .clamp(1, 4)
}

/// The analyzer of every text field: code-aware splitting, then English stemming of each part
/// (so `matches`, `matching` and `matched` meet `match`).
pub fn code_analyzer() -> TextAnalyzer {
    TextAnalyzer::from(CodeTokenizer::default())
}

/// Words dropped from natural-language queries: they carry no meaning in code search and match
/// every comment. A query made only of them is searched as it is.
const STOP_WORDS: &[&str] = &[
    "a", "an", "the", "and", "or", "but", "if", "of", "to", "in", "on", "at", "by", "for", "with",
    "from", "into", "as", "is", "are", "was", "were", "be", "been", "being", "it", "its", "this",
    "that", "these", "those", "which", "who", "whom", "what", "when", "where", "how", "why", "do",
    "does", "did", "can", "could", "should", "would", "will", "may", "might", "must", "has",
    "have", "had", "not", "no", "any", "all", "some", "such", "than", "then", "there", "their",
    "them", "they", "we", "you", "your", "our", "i", "me", "my", "so", "also", "only", "just",
    "via", "per",
];

/// The query with stop words removed, unless nothing else would remain.
fn without_stop_words(query: &str) -> String {
    let kept: Vec<&str> = query
        .split_whitespace()
        .filter(|word| {
            let bare = word.trim_matches(|c: char| !c.is_alphanumeric());
            !STOP_WORDS.contains(&bare.to_ascii_lowercase().as_str())
        })
        .collect();
    if kept.is_empty() {
        query.to_string()
    } else {
        kept.join(" ")
    }
}

/// At most this many distinct terms of a query are searched; the rest are ignored.
pub const MAX_QUERY_TERMS: usize = 64;

/// Per-field weights of the BM25 score, tuned on the retrieval benchmark (`bench/`).
#[derive(Clone, Copy, Debug)]
pub struct FieldBoosts {
    pub symbols: f32,
    pub path: f32,
    pub content: f32,
}

/// Measured on `bench/retrieval.py` (300 doc-comment queries over regex-automata and tokio):
/// symbols 1 → 2 lifts MRR@10 from 0.224 to 0.271; symbols 3–5 and path 0.5–1.5 move it by
/// less than 0.01.
///
/// Comments are part of `content` and have no field of their own. A separate field with
/// weight 0.5 (so comment words counted 1.5 times) was dropped on 11-27. Weighed 0, the sets
/// that keep docs scored better on the training packages and the same within noise on the
/// evaluation ones, and the blanked sets and the Rust suites scored better (bench/README.md,
/// "The comments field, dropped"). It held 9% of all indexed tokens.
pub const DEFAULT_BOOSTS: FieldBoosts = FieldBoosts {
    symbols: 2.0,
    path: 1.0,
    content: 1.0,
};

#[derive(Clone, Copy)]
struct Fields {
    chunk_id: Field,
    path_key: Field,
    language: Field,
    path: Field,
    symbols: Field,
    content: Field,
}

fn schema() -> (Schema, Fields) {
    let mut builder = Schema::builder();
    let text = TextOptions::default().set_indexing_options(
        TextFieldIndexing::default()
            .set_tokenizer(CODE_TOKENIZER)
            // No phrase queries are run, so positions would only cost time and space.
            .set_index_option(IndexRecordOption::WithFreqs),
    );
    let fields = Fields {
        // Read back through the fast field: nothing is stored, so there is no doc store to
        // compress while indexing or to decompress per hit.
        chunk_id: builder.add_u64_field("chunk_id", INDEXED | FAST),
        path_key: builder.add_text_field("path_key", STRING),
        language: builder.add_text_field("language", STRING),
        path: builder.add_text_field("path", text.clone()),
        symbols: builder.add_text_field("symbols", text.clone()),
        content: builder.add_text_field("content", text),
    };
    (builder.build(), fields)
}

/// The fields of one chunk as the lexical index sees them.
pub struct LexicalDoc<'a> {
    pub id: i64,
    pub path: &'a str,
    pub language: &'a str,
    pub symbol: Option<&'a str>,
    pub scope: &'a [String],
    pub defined_names: &'a [String],
    pub text: &'a str,
}

impl<'a> LexicalDoc<'a> {
    pub fn from_row(row: &'a ChunkRow) -> Self {
        LexicalDoc {
            id: row.id,
            path: &row.path,
            language: &row.language,
            symbol: row.symbol.as_deref(),
            scope: &row.scope,
            defined_names: &row.defined_names,
            text: &row.text,
        }
    }

    pub fn from_chunk(id: i64, path: &'a str, language: &'a str, chunk: &'a Chunk) -> Self {
        LexicalDoc {
            id,
            path,
            language,
            symbol: chunk.symbol.as_deref(),
            scope: &chunk.scope,
            defined_names: &chunk.defined_names,
            text: &chunk.text,
        }
    }
}

/// Restrictions on which chunks a lexical search may return.
#[derive(Clone, Debug, Default)]
pub struct LexicalFilter {
    pub language: Option<String>,
    /// When set, only chunks of these files (relative paths).
    pub paths: Option<Vec<String>>,
}

/// The on-disk BM25 index.
pub struct LexicalIndex {
    dir: std::path::PathBuf,
    index: Index,
    reader: IndexReader,
    fields: Fields,
    writer: parking_lot::Mutex<Option<IndexWriter>>,
    /// The merges started by [`LexicalIndex::merge_into`], awaited when the writer closes.
    pending_merges: parking_lot::Mutex<Vec<FutureResult<Option<SegmentMeta>>>>,
}

impl LexicalIndex {
    /// Opens the index in `dir`, creating it when the directory is empty.
    pub fn open_or_create(dir: &Path) -> Result<LexicalIndex, IndexError> {
        std::fs::create_dir_all(dir).map_err(|source| IndexError::Write {
            path: dir.to_path_buf(),
            source,
        })?;
        let (schema, fields) = schema();
        let index = if dir.join("meta.json").exists() {
            let index = Index::open_in_dir(dir)?;
            if index.schema() != schema {
                return Err(IndexError::Lexical(TantivyError::SchemaError(
                    "lexical index schema differs from this version of lode".into(),
                )));
            }
            index
        } else {
            Index::create_in_dir(dir, schema)?
        };
        index.tokenizers().register(CODE_TOKENIZER, code_analyzer());
        let reader = index
            .reader_builder()
            .reload_policy(ReloadPolicy::Manual)
            .try_into()?;
        Ok(LexicalIndex {
            dir: dir.to_path_buf(),
            index,
            reader,
            fields,
            writer: parking_lot::Mutex::new(None),
            pending_merges: parking_lot::Mutex::new(Vec::new()),
        })
    }

    /// The catalog generation this index mirrors (`None` before its first commit).
    pub fn generation(&self) -> Result<Option<u64>, IndexError> {
        Ok(self
            .index
            .load_metas()?
            .payload
            .and_then(|payload| payload.parse().ok()))
    }

    fn with_writer<T>(
        &self,
        act: impl FnOnce(&mut IndexWriter, &Fields) -> Result<T, IndexError>,
    ) -> Result<T, IndexError> {
        let mut slot = self.writer.lock();
        if slot.is_none() {
            let threads = writer_threads();
            let writer = self
                .index
                .writer_with_num_threads(threads, threads * WRITER_MEMORY_PER_THREAD)
                .map_err(|error| match error {
                    TantivyError::LockFailure(LockError::LockBusy, _) => IndexError::Locked {
                        path: self.dir.clone(),
                        holder: None,
                    },
                    other => IndexError::Lexical(other),
                })?;
            *slot = Some(writer);
        }
        match slot.as_mut() {
            Some(writer) => act(writer, &self.fields),
            None => unreachable!("the writer slot was filled just above"),
        }
    }

    /// Takes the writer lock now, so a concurrent writer is reported before any work starts.
    pub fn acquire_writer(&self) -> Result<(), IndexError> {
        self.with_writer(|_, _| Ok(()))
    }

    /// Drops every chunk of a file (applied at the next commit).
    pub fn delete_file(&self, path: &str) -> Result<(), IndexError> {
        self.with_writer(|writer, fields| {
            writer.delete_term(Term::from_field_text(fields.path_key, path));
            Ok(())
        })
    }

    /// Drops every chunk (applied at the next commit).
    pub fn delete_all(&self) -> Result<(), IndexError> {
        self.with_writer(|writer, _| {
            writer.delete_all_documents()?;
            Ok(())
        })
    }

    /// Adds one chunk (visible after the next commit).
    pub fn add_chunk(&self, chunk: &LexicalDoc<'_>) -> Result<(), IndexError> {
        self.with_writer(|writer, fields| {
            let mut symbols = chunk.defined_names.join(" ");
            if let Some(symbol) = chunk.symbol
                && !chunk.defined_names.iter().any(|name| name == symbol)
            {
                symbols.push(' ');
                symbols.push_str(symbol);
            }
            for label in chunk.scope {
                symbols.push(' ');
                symbols.push_str(label);
            }
            writer.add_document(doc!(
                fields.chunk_id => chunk.id as u64,
                fields.path_key => chunk.path,
                fields.language => chunk.language,
                fields.path => chunk.path,
                fields.symbols => symbols,
                fields.content => chunk.text,
            ))?;
            Ok(())
        })
    }

    /// Publishes everything written so far as mirroring catalog `generation`, atomically.
    pub fn commit(&self, generation: u64) -> Result<(), IndexError> {
        self.with_writer(|writer, _| {
            let mut prepared = writer.prepare_commit()?;
            prepared.set_payload(&generation.to_string());
            prepared.commit()?;
            Ok(())
        })?;
        self.reader.reload()?;
        Ok(())
    }

    /// Turns off background merging until the writer closes. For bulk loads: each commit
    /// leaves small segments, and tantivy's policy merges them as they come, leaving a dozen
    /// segments behind; [`Self::merge_into`] merges them once at the end.
    pub fn defer_merges(&self) -> Result<(), IndexError> {
        self.with_writer(|writer, _| {
            writer.set_merge_policy(Box::new(NoMergePolicy));
            Ok(())
        })
    }

    /// Starts merging the committed segments into at most `parts` segments of about equal
    /// size, in the background, one merge per part so they run on separate cores. The merged
    /// segments replace their sources (under the same catalog generation) as each finishes;
    /// [`Self::close_writer`] waits for that.
    pub fn merge_into(&self, parts: usize) -> Result<(), IndexError> {
        let mut segments = self.index.searchable_segment_metas()?;
        let parts = parts.max(1);
        if segments.len() <= parts {
            return Ok(());
        }
        // Largest first, each into the lightest part so far.
        segments.sort_by_key(|segment| std::cmp::Reverse(segment.num_docs()));
        let mut groups: Vec<(u64, Vec<tantivy::index::SegmentId>)> = vec![(0, Vec::new()); parts];
        for segment in segments {
            let lightest = (0..parts).min_by_key(|&at| groups[at].0).unwrap_or(0);
            groups[lightest].0 += u64::from(segment.num_docs());
            groups[lightest].1.push(segment.id());
        }
        let merges = self.with_writer(|writer, _| {
            Ok(groups
                .iter()
                .filter(|(_, ids)| ids.len() > 1)
                .map(|(_, ids)| writer.merge(ids))
                .collect::<Vec<_>>())
        })?;
        self.pending_merges.lock().extend(merges);
        Ok(())
    }

    /// Releases the writer lock, waiting for merges to finish.
    pub fn close_writer(&self) -> Result<(), IndexError> {
        let mut slot = self.writer.lock();
        let pending = std::mem::take(&mut *self.pending_merges.lock());
        if let Some(writer) = slot.take() {
            writer.wait_merging_threads()?;
        }
        if !pending.is_empty() {
            for merge in pending {
                merge.wait()?;
            }
            self.reader.reload()?;
        }
        Ok(())
    }

    /// Reloads the searcher to see commits made by other processes.
    pub fn reload(&self) -> Result<(), IndexError> {
        self.reader.reload()?;
        Ok(())
    }

    /// Number of chunks searches see (deleted ones not counted).
    pub fn document_count(&self) -> u64 {
        self.reader.searcher().num_docs()
    }

    /// Number of segments visible to searches (each costs a term lookup per query term).
    pub fn segment_count(&self) -> usize {
        self.reader.searcher().segment_readers().len()
    }

    /// The best `limit` chunk ids for `query`, with BM25 scores.
    pub fn search(
        &self,
        query: &str,
        filter: &LexicalFilter,
        boosts: FieldBoosts,
        limit: usize,
    ) -> Result<Vec<(i64, f32)>, IndexError> {
        // Distinct terms in query order, capped: a pasted file must not become a million clauses.
        let mut terms: Vec<String> = Vec::new();
        let mut analyzer = code_analyzer();
        let query = without_stop_words(query);
        let mut stream = analyzer.token_stream(&query);
        while terms.len() < MAX_QUERY_TERMS && stream.advance() {
            let text = &stream.token().text;
            if !terms.contains(text) {
                terms.push(text.clone());
            }
        }
        if terms.is_empty() || limit == 0 {
            return Ok(Vec::new());
        }
        let f = self.fields;
        let mut should: Vec<(Occur, Box<dyn Query>)> = Vec::new();
        for term in &terms {
            for (field, boost) in [
                (f.symbols, boosts.symbols),
                (f.path, boosts.path),
                (f.content, boosts.content),
            ] {
                if boost <= 0.0 {
                    continue;
                }
                let term_query = TermQuery::new(
                    Term::from_field_text(field, term),
                    IndexRecordOption::WithFreqs,
                );
                should.push((
                    Occur::Should,
                    Box::new(BoostQuery::new(Box::new(term_query), boost)),
                ));
            }
        }
        let mut must: Vec<(Occur, Box<dyn Query>)> =
            vec![(Occur::Must, Box::new(BooleanQuery::new(should)))];
        if let Some(language) = &filter.language {
            must.push((
                Occur::Must,
                Box::new(TermQuery::new(
                    Term::from_field_text(f.language, language),
                    IndexRecordOption::Basic,
                )),
            ));
        }
        if let Some(paths) = &filter.paths {
            if paths.is_empty() {
                return Ok(Vec::new());
            }
            let terms = paths.iter().map(|p| Term::from_field_text(f.path_key, p));
            must.push((Occur::Must, Box::new(TermSetQuery::new(terms))));
        }
        let query = BooleanQuery::new(must);
        let searcher = self.reader.searcher();
        let top = searcher.search(&query, &TopDocs::with_limit(limit).order_by_score())?;
        let mut hits = Vec::with_capacity(top.len());
        let mut columns = std::collections::HashMap::new();
        for (score, address) in top {
            let column = match columns.entry(address.segment_ord) {
                std::collections::hash_map::Entry::Occupied(entry) => entry.into_mut(),
                std::collections::hash_map::Entry::Vacant(entry) => entry.insert(
                    searcher
                        .segment_reader(address.segment_ord)
                        .fast_fields()
                        .u64("chunk_id")?,
                ),
            };
            if let Some(id) = column.first(address.doc_id) {
                hits.push((id as i64, score));
            }
        }
        Ok(hits)
    }
}
