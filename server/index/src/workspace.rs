//! The workspace service: one indexed workspace, opened, kept current and queried.
//!
//! [`Workspace`] is the one door through which the index changes (`refresh`, `update_file`,
//! `remove_file`) and the place every reader (CLI, agent, ACP, LSP) queries. It is `Sync`:
//! share it behind an `Arc`.

use std::collections::HashMap;
use std::fs;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, mpsc};
use std::time::{Duration, Instant};

use parking_lot::{Mutex, MutexGuard};
use rayon::prelude::*;

use crate::catalog::{
    CATALOG_FILE, Catalog, CatalogBatch, CatalogCounts, FileRecord, content_hash,
};
use crate::embed::Embedder;
use crate::error::IndexError;
use crate::lexical::{LexicalDoc, LexicalIndex};
use crate::lock::WriterLock;
use crate::scan::{
    Scan, ScanOptions, ScannedFile, mtime_ns, read_source, relative_path, scan, stamp_dir,
};
use crate::vectors::inline::{ChunkVector, InlineVectors, embed_chunks};
use crate::vectors::sync::{SyncStats, in_step, sync_store};
use crate::vectors::{EmbeddedStore, VectorStore};
use lode_syntax::Language;
use lode_syntax::{ChunkSizes, DEFAULT_SIZES};
use lode_syntax::{ParsedFile, parse_file_with};

/// Where the index lives when no directory is configured: `<root>/.lode/index`.
pub const DEFAULT_INDEX_DIR: &str = ".lode/index";

/// How often a long refresh publishes what it has done, so an interrupted run keeps its work.
const CHECKPOINT_INTERVAL: Duration = Duration::from_secs(10);

/// A long refresh also publishes after this many files.
pub const DEFAULT_CHECKPOINT_FILES: usize = 5000;

/// How to open a workspace.
#[derive(Clone, Debug)]
pub struct WorkspaceOptions {
    pub root: PathBuf,
    /// Defaults to `<root>/.lode/index`.
    pub index_dir: Option<PathBuf>,
    pub scan: ScanOptions,
    /// A refresh publishes (commits) its progress after this many files, and at least every
    /// ten seconds, so an interrupted run keeps what it finished.
    pub checkpoint_files: usize,
    /// Chunk sizes; changing them only affects files parsed afterwards (re-index from scratch
    /// to apply them everywhere).
    pub chunk_sizes: ChunkSizes,
    /// Embeds chunks for semantic search during refreshes (`None`: no vectors are made; an
    /// existing vector store is kept as it is). [`crate::embed::default_embedder`] is the
    /// built-in static one.
    pub embedder: Option<Arc<dyn Embedder>>,
    /// Where vectors live; `None` uses the embedded store in `<index_dir>/vectors`.
    pub vector_store: Option<Arc<dyn VectorStore>>,
    /// For callers that need only the catalog (definitions and references: the repo map): a
    /// derived index (lexical, vectors) that would have to be built from scratch — the index is
    /// new, or the derived index is behind the catalog — is left for the next handle that
    /// needs it, which rebuilds it from the catalog on open (the generation check), never by
    /// re-parsing. One that is in step is kept in step. `open` repairs no derived index.
    pub defer_derived: bool,
}

impl WorkspaceOptions {
    pub fn new(root: impl Into<PathBuf>) -> Self {
        WorkspaceOptions {
            root: root.into(),
            index_dir: None,
            scan: ScanOptions::default(),
            checkpoint_files: DEFAULT_CHECKPOINT_FILES,
            chunk_sizes: DEFAULT_SIZES,
            embedder: None,
            vector_store: None,
            defer_derived: false,
        }
    }

    /// These options with chunks embedded by `embedder`.
    pub fn with_embedder(mut self, embedder: Arc<dyn Embedder>) -> Self {
        self.embedder = Some(embedder);
        self
    }
}

/// How a refresh finds what changed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RefreshMode {
    /// Walk the whole tree with the ignore rules (what `lode index` does).
    Full,
    /// Stat the directories and files the last full walk recorded, and walk in full only when
    /// a directory's entries or ignore files changed (what query commands do before answering).
    /// A file edited in place is caught by its size and mtime; a file added, removed or renamed
    /// changes its directory's mtime.
    Quick,
}

/// What a refresh did (also sent by a lease holder that refreshed for `lode index`).
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(default)]
pub struct RefreshStats {
    /// Whether the tree was walked in full (always for [`RefreshMode::Full`]).
    pub walked: bool,
    /// Indexable files found by the walk.
    pub files: usize,
    /// Files read and parsed because they are new or changed.
    pub parsed: usize,
    /// Files left alone because their content is unchanged.
    pub unchanged: usize,
    /// Files dropped from the index because they are gone (or now binary / too large).
    pub removed: usize,
    pub skipped_binary: usize,
    /// Known only after a full walk (0 otherwise).
    pub skipped_too_large: usize,
    /// Files that could not be read (permissions, vanished mid-walk).
    pub unreadable: usize,
    /// Code files read as plain text because their parse ran over its time budget, each with
    /// the reason (`lode index --verbose` lists them).
    pub read_as_text: Vec<String>,
    /// Totals in the index after the refresh.
    pub total_chunks: u64,
    pub total_definitions: u64,
    pub total_references: u64,
    /// Bytes of source parsed in this refresh.
    pub parsed_bytes: u64,
    /// What the vector sync did (all zero without an embedder).
    pub vectors: SyncStats,
    /// Vectors in the store after the refresh (0 without one).
    pub total_vectors: u64,
    /// Where the time went.
    pub timings: RefreshTimings,
}

impl RefreshStats {
    fn set_totals(&mut self, counts: CatalogCounts) {
        self.total_chunks = counts.chunks;
        self.total_definitions = counts.definitions;
        self.total_references = counts.references;
    }
}

/// Wall time of each phase of a refresh.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct RefreshTimings {
    /// Finding what changed: the walk, or the quick stat check.
    pub scan: Duration,
    /// Reading, parsing and writing changed files (parsing and writing overlap).
    pub parse_and_write: Duration,
    /// The final commit: secondary indexes, catalog and lexical commits.
    pub commit: Duration,
    /// Embedding changed chunks and publishing their vectors.
    pub embed: Duration,
    /// Closing the lexical writer: waiting for its merges (after a cold build, the merges of
    /// its segments into at most two).
    pub close: Duration,
}

/// Progress of a refresh, for progress bars.
#[derive(Clone, Copy, Debug)]
pub struct RefreshProgress {
    pub done: usize,
    pub total: usize,
    /// Which phase `done` and `total` count.
    pub phase: RefreshPhase,
}

/// The phases of a refresh that report progress.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RefreshPhase {
    /// Files read and parsed.
    Parse,
    /// Chunks embedded for semantic search.
    Embed,
}

/// One indexed workspace.
pub struct Workspace {
    root: PathBuf,
    index_dir: PathBuf,
    pub(crate) scan_options: ScanOptions,
    checkpoint_files: usize,
    pub(crate) chunk_sizes: ChunkSizes,
    catalog: Mutex<Catalog>,
    lexical: LexicalIndex,
    embedder: Option<Arc<dyn Embedder>>,
    /// The store given in the options (Qdrant, tests); `None`: the embedded one, if any.
    configured_vectors: Option<Arc<dyn VectorStore>>,
    /// The vector store, opened on first use: lexical search, symbols, references and the map
    /// never read it, and opening the embedded store maps and checks every segment. `None`
    /// until then; `Some(None)` when the workspace has no vectors.
    vectors: Mutex<Option<Option<Arc<dyn VectorStore>>>>,
    /// Whether a search has brought vectors left behind the catalog up to date.
    vectors_reconciled: AtomicBool,
    defer_derived: bool,
    repairs: Mutex<Vec<String>>,
    /// Every distinct defined name, as of the catalog generation it was read at: the symbol
    /// search's full pass (substring and fuzzy matches) reads it from here until the catalog
    /// changes.
    pub(crate) definition_names: Mutex<Option<(u64, Arc<crate::search::NameTable>)>>,
    /// The code language with the most indexed bytes, as of the catalog generation it was read
    /// at (hybrid search weighs the vectors by it).
    pub(crate) main_language: Mutex<Option<(u64, Option<Language>)>>,
    /// The builds of this handle in progress (refreshes, and callers that announced one).
    activity: Arc<crate::activity::BuildActivity>,
}

impl Workspace {
    /// Opens the workspace's index, creating it if missing. A damaged index is repaired: a
    /// catalog that cannot be read is recreated empty (the next refresh re-indexes), a lexical
    /// index that is unreadable or out of step with the catalog is rebuilt from the catalog.
    pub fn open(options: WorkspaceOptions) -> Result<Workspace, IndexError> {
        let root = fs::canonicalize(&options.root).map_err(|source| IndexError::Read {
            path: options.root.clone(),
            source,
        })?;
        if !root.is_dir() {
            return Err(IndexError::NotADirectory { path: root });
        }
        let index_dir = options
            .index_dir
            .clone()
            .unwrap_or_else(|| root.join(DEFAULT_INDEX_DIR));
        fs::create_dir_all(&index_dir).map_err(|source| IndexError::Write {
            path: index_dir.clone(),
            source,
        })?;
        ensure_ignored(&index_dir)?;

        let mut repairs = Vec::new();
        let catalog_path = index_dir.join(CATALOG_FILE);
        let lexical_dir = index_dir.join("lexical");
        let catalog = match open_checked_catalog(&catalog_path) {
            Ok(catalog) => catalog,
            Err(error) => {
                // Deleting files another process is writing would lose its work: only the
                // writer-lock holder repairs.
                let lock = WriterLock::try_acquire(&index_dir)?;
                repairs.extend(lock.takeover_note());
                repairs.push(match error {
                    IndexError::SchemaChanged { .. } => format!("{error}; rebuilding it"),
                    _ => format!("catalog unreadable ({error}); recreated it empty"),
                });
                remove_catalog_files(&catalog_path)?;
                remove_dir_if_exists(&lexical_dir)?;
                // Chunk ids start over with a new catalog: vectors keyed by the old ones go too.
                remove_dir_if_exists(&index_dir.join(VECTORS_DIR))?;
                Catalog::open(&catalog_path)?
            }
        };
        let lexical = match LexicalIndex::open_or_create(&lexical_dir) {
            Ok(lexical) => lexical,
            Err(error) => {
                let lock = WriterLock::try_acquire(&index_dir)?;
                repairs.extend(lock.takeover_note());
                repairs.push(format!("lexical index unreadable ({error}); rebuilt it"));
                remove_dir_if_exists(&lexical_dir)?;
                LexicalIndex::open_or_create(&lexical_dir)?
            }
        };
        if !options.defer_derived
            && let Some(repair) = reconcile(&index_dir, &catalog, &lexical)?
        {
            repairs.push(repair);
        }
        Ok(Workspace {
            root,
            index_dir,
            scan_options: options.scan,
            checkpoint_files: options.checkpoint_files.max(1),
            chunk_sizes: options.chunk_sizes,
            catalog: Mutex::new(catalog),
            lexical,
            embedder: options.embedder,
            configured_vectors: options.vector_store,
            vectors: Mutex::new(None),
            vectors_reconciled: AtomicBool::new(false),
            defer_derived: options.defer_derived,
            repairs: Mutex::new(repairs),
            definition_names: Mutex::new(None),
            main_language: Mutex::new(None),
            activity: Arc::default(),
        })
    }

    /// The canonical workspace root.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// The builds of this handle in progress: a caller about to bring the index up to date in
    /// the background announces its build here ([`crate::BuildActivity::begin`]).
    pub fn build_activity(&self) -> &Arc<crate::activity::BuildActivity> {
        &self.activity
    }

    /// `Some` while this handle is building or refreshing its index (readers of this handle
    /// would wait for it): how far it has come.
    pub fn build_progress(&self) -> Option<crate::activity::BuildProgress> {
        self.activity.progress()
    }

    /// The directory holding the index.
    pub fn index_dir(&self) -> &Path {
        &self.index_dir
    }

    /// How many segments the lexical index's searches go through (at most two after a cold
    /// build).
    pub fn lexical_segment_count(&self) -> usize {
        self.lexical.segment_count()
    }

    /// How many chunks the lexical index holds: the catalog's chunk count whenever the two
    /// are in step.
    pub fn lexical_document_count(&self) -> u64 {
        self.lexical.document_count()
    }

    /// What this handle had to repair so far, one line each (empty when the index was
    /// healthy): the catalog and lexical index are checked by `open`, the vector store when it
    /// is first used.
    pub fn repairs(&self) -> Vec<String> {
        self.repairs.lock().clone()
    }

    /// The repairs not taken yet, for a front end that reports each once as it happens.
    pub fn take_repairs(&self) -> Vec<String> {
        std::mem::take(&mut *self.repairs.lock())
    }

    pub(crate) fn catalog(&self) -> MutexGuard<'_, Catalog> {
        // A panic while holding the lock leaves SQLite consistent (the transaction rolls back).
        self.catalog.lock()
    }

    pub(crate) fn with_catalog<T>(
        &self,
        read: impl FnOnce(&Catalog) -> Result<T, IndexError>,
    ) -> Result<T, IndexError> {
        read(&self.catalog())
    }

    /// What `derive` computes from the catalog, kept in `slot` until the catalog's generation
    /// changes: read from memory by every query while the index does not change.
    pub(crate) fn per_generation<T: Clone>(
        &self,
        slot: &Mutex<Option<(u64, T)>>,
        derive: impl FnOnce() -> Result<T, IndexError>,
    ) -> Result<T, IndexError> {
        let generation = self.with_catalog(|catalog| catalog.generation())?;
        let mut cached = slot.lock();
        if let Some((seen, value)) = cached.as_ref()
            && *seen == generation
        {
            return Ok(value.clone());
        }
        let value = derive()?;
        *cached = Some((generation, value.clone()));
        Ok(value)
    }

    pub(crate) fn lexical(&self) -> &LexicalIndex {
        &self.lexical
    }

    /// The embedder chunks and queries go through, if semantic search is configured.
    pub fn embedder(&self) -> Option<&Arc<dyn Embedder>> {
        self.embedder.as_ref()
    }

    /// The vector store, if the index has one: the configured store, or the embedded one when
    /// an embedder is set or vectors exist. The embedded store is opened on the first call; one
    /// that cannot be read is deleted and recreated empty (the next sync fills it).
    pub fn vector_store(&self) -> Result<Option<Arc<dyn VectorStore>>, IndexError> {
        let mut slot = self.vectors.lock();
        if let Some(opened) = slot.as_ref() {
            return Ok(opened.clone());
        }
        let opened = match &self.configured_vectors {
            Some(store) => Some(Arc::clone(store)),
            None => open_embedded_vectors(
                &self.index_dir,
                self.embedder.is_some(),
                &mut self.repairs.lock(),
            )?,
        };
        *slot = Some(opened.clone());
        Ok(opened)
    }

    /// For a process that keeps this workspace open to answer queries (the lease holder):
    /// opens the vector store now and lets it prepare for many searches in the background
    /// ([`VectorStore::keep_resident`]).
    pub fn keep_resident(&self) -> Result<(), IndexError> {
        if let Some(store) = self.vector_store()? {
            store.keep_resident();
        }
        Ok(())
    }

    /// Where this workspace's vectors live ([`VectorStore::location`]), without opening the
    /// embedded store: [`crate::watch::EMBEDDED_STORE`] unless another store was configured.
    pub fn vector_store_location(&self) -> String {
        self.configured_vectors.as_ref().map_or_else(
            || crate::watch::EMBEDDED_STORE.to_owned(),
            |store| store.location(),
        )
    }

    /// The vector store for a search. The first call also brings vectors made by this
    /// embedder but left behind the catalog (a crash between the two commits) up to date.
    pub(crate) fn vector_store_for_search(
        &self,
    ) -> Result<Option<Arc<dyn VectorStore>>, IndexError> {
        let store = self.vector_store()?;
        if let (Some(store), Some(embedder), false) = (&store, &self.embedder, self.defer_derived)
            && !self.vectors_reconciled.load(Ordering::Acquire)
        {
            let repair =
                reconcile_vectors(&self.index_dir, &self.catalog(), &**store, &**embedder)?;
            self.repairs.lock().extend(repair);
            self.vectors_reconciled.store(true, Ordering::Release);
        }
        Ok(store)
    }

    /// How many vectors the store holds (0 without one).
    fn vector_count(&self) -> Result<u64, IndexError> {
        Ok(self
            .vector_store()?
            .map_or(0, |store| store.state().count as u64))
    }

    /// Whether semantic search can run: an embedder is configured and the store holds vectors
    /// made by it (possibly a refresh behind the catalog). False as well when the store cannot
    /// be opened; a semantic search reports why.
    pub fn has_vectors(&self) -> bool {
        let Some(embedder) = &self.embedder else {
            return false;
        };
        match self.vector_store() {
            Ok(Some(store)) => {
                let state = store.state();
                state.count > 0 && state.identity.as_ref() == Some(embedder.identity())
            }
            _ => false,
        }
    }

    /// Brings the vectors in step with the catalog (no-op without an embedder). The caller
    /// holds the writer lock.
    pub(crate) fn sync_vectors(
        &self,
        catalog: &Catalog,
        progress: &(dyn Fn(RefreshProgress) + Sync),
    ) -> Result<SyncStats, IndexError> {
        let Some(embedder) = &self.embedder else {
            return Ok(SyncStats::default());
        };
        let Some(store) = self.vector_store()? else {
            return Ok(SyncStats::default());
        };
        sync_store(catalog, &*store, &**embedder, &|done, total| {
            progress(RefreshProgress {
                done,
                total,
                phase: RefreshPhase::Embed,
            })
        })
    }

    /// Brings the index up to date with the files on disk: parses new and changed files, drops
    /// deleted ones, and leaves unchanged ones alone (an unchanged workspace parses nothing).
    pub fn refresh(
        &self,
        progress: &(dyn Fn(RefreshProgress) + Sync),
    ) -> Result<RefreshStats, IndexError> {
        self.refresh_with(RefreshMode::Full, progress)
    }

    /// [`Workspace::refresh`] with a choice of how changes are found.
    pub fn refresh_with(
        &self,
        mode: RefreshMode,
        progress: &(dyn Fn(RefreshProgress) + Sync),
    ) -> Result<RefreshStats, IndexError> {
        let mut closing = None;
        let mut stats = self.with_write_locks(|| {
            let _counted = self.activity.begin();
            let counting = |step: RefreshProgress| {
                if step.phase == RefreshPhase::Parse {
                    self.activity.record(step.done, step.total);
                }
                progress(step);
            };
            let stats = self.refresh_locked(mode, &counting);
            closing = Some(Instant::now());
            stats
        })?;
        stats.timings.close = closing.map(|at| at.elapsed()).unwrap_or_default();
        Ok(stats)
    }

    /// Runs `write` holding the index's writer lock and the lexical writer, and releases the
    /// lexical writer afterwards whether `write` succeeded or not.
    pub(crate) fn with_write_locks<T>(
        &self,
        write: impl FnOnce() -> Result<T, IndexError>,
    ) -> Result<T, IndexError> {
        // Opened first: repairing an unreadable store takes the writer lock itself.
        self.vector_store()?;
        let _lock = self.writer_lock()?;
        self.lexical.acquire_writer()?;
        let result = write();
        let closed = self.lexical.close_writer();
        let value = result?;
        closed?;
        Ok(value)
    }

    /// Takes the writer lock; a lock taken over from a writer that was killed is reported as a
    /// repair (once: the lock is clean from then on).
    fn writer_lock(&self) -> Result<WriterLock, IndexError> {
        let lock = WriterLock::try_acquire(&self.index_dir)?;
        self.repairs.lock().extend(lock.takeover_note());
        Ok(lock)
    }

    /// Rebuilds the lexical index from the catalog if it is behind (a deferring handle left it,
    /// or a writer died between its two commits), so incremental writes land on a complete
    /// index. The caller holds the write locks.
    fn catch_up_lexical(&self, catalog: &Catalog) -> Result<(), IndexError> {
        let generation = catalog.generation()?;
        if self.lexical.generation()?.unwrap_or(0) != generation {
            rebuild_lexical(catalog, &self.lexical, generation)?;
        }
        Ok(())
    }

    /// Which derived indexes a write keeps in step (see [`WorkspaceOptions::defer_derived`]).
    pub(crate) fn derived_in_step(
        &self,
        catalog: &Catalog,
        cold: bool,
    ) -> Result<Derived, IndexError> {
        if !self.defer_derived {
            self.catch_up_lexical(catalog)?;
            return Ok(Derived {
                lexical: true,
                vectors: true,
            });
        }
        if cold {
            return Ok(Derived {
                lexical: false,
                vectors: false,
            });
        }
        let generation = catalog.generation()?;
        let vectors = match (&self.embedder, self.vector_store()?) {
            (Some(embedder), Some(store)) => {
                store.state().identity.as_ref() == Some(embedder.identity())
                    && in_step(catalog, &*store, &**embedder)?
            }
            _ => false,
        };
        Ok(Derived {
            lexical: self.lexical.generation()?.unwrap_or(0) == generation,
            vectors,
        })
    }

    fn refresh_locked(
        &self,
        mode: RefreshMode,
        progress: &(dyn Fn(RefreshProgress) + Sync),
    ) -> Result<RefreshStats, IndexError> {
        let started = Instant::now();
        let catalog = self.catalog();
        let known = catalog.files()?;
        let derived = self.derived_in_step(&catalog, known.is_empty())?;
        let fingerprint = self.scan_fingerprint();
        let (found, walked) = self.find_files(&catalog, mode, &known, &fingerprint)?;
        let mut stats = RefreshStats {
            walked,
            timings: RefreshTimings {
                scan: started.elapsed(),
                ..RefreshTimings::default()
            },
            files: found.files.len(),
            skipped_too_large: found.skipped_too_large,
            ..RefreshStats::default()
        };
        let (deleted, candidates) = changed_files(&known, &found);
        stats.unchanged = found.files.len() - candidates.len();
        if deleted.is_empty() && candidates.is_empty() {
            if walked {
                catalog.set_walk_stamps(&fingerprint, &found.dirs)?;
            }
            self.finish_vectors(&catalog, derived, None, &mut stats, progress)?;
            return Ok(stats);
        }

        // A cold build loads without the name indexes and builds them once at the end.
        let bulk_load = known.is_empty();
        self.prepare_write(&catalog, bulk_load, derived)?;
        let mut batch = catalog.begin()?;
        self.remove_deleted(&mut batch, &deleted, derived, &mut stats)?;
        let mut inline = self.inline_vectors(&catalog, derived)?;
        let batch = self.parse_and_write(
            &catalog,
            batch,
            candidates,
            &known,
            derived,
            bulk_load,
            &mut inline,
            &mut stats,
            progress,
        )?;
        stats.timings.parse_and_write = started.elapsed() - stats.timings.scan;
        self.commit_refresh(&catalog, batch, derived, bulk_load, &mut inline)?;
        // Only now that the files it vouches for are committed.
        if walked {
            catalog.set_walk_stamps(&fingerprint, &found.dirs)?;
        }
        stats.timings.commit =
            started.elapsed() - stats.timings.scan - stats.timings.parse_and_write;
        self.finish_vectors(&catalog, derived, inline.as_ref(), &mut stats, progress)?;
        Ok(stats)
    }

    /// The files on disk, and whether a full walk found them: a quick refresh stats the known
    /// files when no directory of the last walk changed, and walks otherwise.
    fn find_files(
        &self,
        catalog: &Catalog,
        mode: RefreshMode,
        known: &HashMap<String, FileRecord>,
        fingerprint: &str,
    ) -> Result<(Scan, bool), IndexError> {
        let quick = match mode {
            RefreshMode::Quick => self.quick_scan(catalog, known, fingerprint)?,
            RefreshMode::Full => None,
        };
        match quick {
            Some(found) => Ok((found, false)),
            None => Ok((scan(&self.root, &self.scan_options)?, true)),
        }
    }

    /// Before the first write of a refresh: a cold build (`bulk_load`) drops the name indexes
    /// and defers the lexical merges; an incremental one makes sure the indexes exist.
    fn prepare_write(
        &self,
        catalog: &Catalog,
        bulk_load: bool,
        derived: Derived,
    ) -> Result<(), IndexError> {
        if bulk_load {
            catalog.prepare_bulk_load()?;
            if derived.lexical {
                self.lexical.defer_merges()?;
            }
        } else {
            catalog.create_indexes()?;
        }
        Ok(())
    }

    /// Drops the files no longer on disk from the batch and the lexical index.
    fn remove_deleted(
        &self,
        batch: &mut CatalogBatch<'_>,
        deleted: &[String],
        derived: Derived,
        stats: &mut RefreshStats,
    ) -> Result<(), IndexError> {
        for path in deleted {
            batch.remove_file(path)?;
            if derived.lexical {
                self.lexical.delete_file(path)?;
            }
            stats.removed += 1;
        }
        Ok(())
    }

    /// The vectors the parse workers embed themselves, when the embedder is cheap enough
    /// (`vectors::inline`) and the vectors are kept in step.
    fn inline_vectors(
        &self,
        catalog: &Catalog,
        derived: Derived,
    ) -> Result<Option<InlineVectors>, IndexError> {
        match (&self.embedder, derived.vectors) {
            (Some(embedder), true) => match self.vector_store()? {
                Some(store) => InlineVectors::prepare(embedder, &store, catalog.generation()?),
                None => Ok(None),
            },
            _ => Ok(None),
        }
    }

    /// Reads and parses `candidates` on the worker threads and writes each outcome here, in
    /// the order they finish, committing a checkpoint every `checkpoint_files` files or
    /// `CHECKPOINT_INTERVAL`. Returns the batch still open (none when a checkpoint failed to
    /// open the next).
    #[allow(clippy::too_many_arguments)]
    fn parse_and_write<'c>(
        &self,
        catalog: &'c Catalog,
        batch: CatalogBatch<'c>,
        candidates: Vec<&ScannedFile>,
        known: &HashMap<String, FileRecord>,
        derived: Derived,
        bulk_load: bool,
        inline: &mut Option<InlineVectors>,
        stats: &mut RefreshStats,
        progress: &(dyn Fn(RefreshProgress) + Sync),
    ) -> Result<Option<CatalogBatch<'c>>, IndexError> {
        let mut batch = Some(batch);
        let worker_embedder = inline.as_ref().map(InlineVectors::embedder);
        let total = candidates.len();
        let max_bytes = self.scan_options.max_file_bytes;
        let sizes = self.chunk_sizes;
        let (sender, receiver) = mpsc::sync_channel::<(&ScannedFile, FileOutcome)>(256);
        let mut last_checkpoint = Instant::now();
        let mut since_checkpoint = 0usize;
        let mut write_error: Option<IndexError> = None;
        std::thread::scope(|threads| {
            threads.spawn(move || {
                let embedder = worker_embedder.as_deref();
                candidates.par_iter().for_each_with(sender, |sender, file| {
                    let known_hash = known.get(&file.rel_path).map(|record| record.hash);
                    let outcome = read_and_parse(file, known_hash, max_bytes, sizes, embedder);
                    // The receiver only goes away after an error; then the rest is moot.
                    let _ = sender.send((*file, outcome));
                });
            });
            for (done, (file, outcome)) in receiver.iter().enumerate() {
                if write_error.is_some() {
                    continue; // drain so the producers finish
                }
                let applied = match batch.as_mut() {
                    Some(open) => self.apply_outcome(
                        open,
                        file,
                        outcome,
                        derived.lexical_write(known.contains_key(&file.rel_path)),
                        inline.as_mut(),
                        stats,
                    ),
                    None => Ok(()),
                };
                if let Err(error) = applied {
                    write_error = Some(error);
                    continue;
                }
                progress(RefreshProgress {
                    done: done + 1,
                    total,
                    phase: RefreshPhase::Parse,
                });
                since_checkpoint += 1;
                if (since_checkpoint >= self.checkpoint_files
                    || last_checkpoint.elapsed() >= CHECKPOINT_INTERVAL)
                    && let Some(open) = batch.take()
                {
                    match self.checkpoint(catalog, open, derived, bulk_load, inline) {
                        Ok(next) => batch = Some(next),
                        Err(error) => write_error = Some(error),
                    }
                    last_checkpoint = Instant::now();
                    since_checkpoint = 0;
                }
            }
        });
        match write_error {
            Some(error) => Err(error),
            None => Ok(batch),
        }
    }

    /// Commits `batch` mid-refresh (the catalog, the vectors held so far, and the lexical
    /// index unless this is a cold build) and opens the next.
    ///
    /// A cold build (`bulk_load`) publishes its lexical index once, at the end: each lexical
    /// commit closes a segment, and every segment costs a term dictionary now and a merge
    /// later. The next handle to open an interrupted cold build's index rebuilds the lexical
    /// index from the catalog, without parsing again.
    fn checkpoint<'c>(
        &self,
        catalog: &'c Catalog,
        batch: CatalogBatch<'c>,
        derived: Derived,
        bulk_load: bool,
        inline: &mut Option<InlineVectors>,
    ) -> Result<CatalogBatch<'c>, IndexError> {
        let generation = batch.commit()?;
        if !bulk_load {
            self.commit_lexical(derived, generation)?;
        }
        if let Some(inline) = inline.as_mut() {
            inline.committed(false)?;
        }
        catalog.begin()
    }

    /// Commits the last batch (and, after a cold build, merges the lexical segments and builds
    /// the catalog's name indexes).
    fn commit_refresh(
        &self,
        catalog: &Catalog,
        batch: Option<CatalogBatch<'_>>,
        derived: Derived,
        bulk_load: bool,
        inline: &mut Option<InlineVectors>,
    ) -> Result<(), IndexError> {
        if let Some(open) = batch {
            let generation = open.commit()?;
            self.commit_lexical(derived, generation)?;
            if bulk_load && derived.lexical {
                self.lexical.merge_into(bulk_merge_parts())?;
            }
            if let Some(inline) = inline.as_mut() {
                inline.committed(true)?;
            }
        }
        if bulk_load {
            // After the commit, so SQLite builds them while the lexical merges run.
            catalog.create_indexes()?;
        }
        Ok(())
    }

    /// Ends a refresh: brings the vectors in step (counting what the parse workers embedded)
    /// and records the totals.
    fn finish_vectors(
        &self,
        catalog: &Catalog,
        derived: Derived,
        inline: Option<&InlineVectors>,
        stats: &mut RefreshStats,
        progress: &(dyn Fn(RefreshProgress) + Sync),
    ) -> Result<(), IndexError> {
        let embed_started = Instant::now();
        if derived.vectors {
            stats.vectors = self.sync_vectors(catalog, progress)?;
        }
        if let Some(inline) = inline {
            stats.vectors.embedded += inline.embedded();
            stats.vectors.reset |= inline.reset();
        }
        stats.timings.embed = embed_started.elapsed();
        stats.total_vectors = self.vector_count()?;
        stats.set_totals(catalog.counts()?);
        Ok(())
    }

    pub(crate) fn commit_lexical(
        &self,
        derived: Derived,
        generation: u64,
    ) -> Result<(), IndexError> {
        if derived.lexical {
            self.lexical.commit(generation)?;
        }
        Ok(())
    }
}

/// Which derived indexes a write keeps in step with the catalog.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Derived {
    pub(crate) lexical: bool,
    pub(crate) vectors: bool,
}

impl Derived {
    /// How a parsed file's chunks reach the lexical index. `known` says whether the catalog
    /// held the file when the write began: while the lexical index mirrors the catalog, a file
    /// the catalog did not know has nothing there to delete, and skipping the delete spares
    /// tantivy a term lookup per file in every segment at commit (a cold build deletes
    /// nothing at all).
    pub(crate) fn lexical_write(self, known: bool) -> LexicalWrite {
        match (self.lexical, known) {
            (false, _) => LexicalWrite::Skip,
            (true, true) => LexicalWrite::Replace,
            (true, false) => LexicalWrite::Add,
        }
    }
}

/// What a write does with a file's chunks in the lexical index.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum LexicalWrite {
    /// Nothing: the lexical index is rebuilt from the catalog later.
    Skip,
    /// Deletes the file's old chunks, then adds the new ones.
    Replace,
    /// Adds the chunks: the file has none there.
    Add,
}

/// The known files gone from disk, and the found files that are new or whose size or mtime
/// changed (an mtime of 0 is never trusted).
fn changed_files<'f>(
    known: &HashMap<String, FileRecord>,
    found: &'f Scan,
) -> (Vec<String>, Vec<&'f ScannedFile>) {
    let on_disk: std::collections::HashSet<&str> =
        found.files.iter().map(|f| f.rel_path.as_str()).collect();
    let deleted: Vec<String> = known
        .keys()
        .filter(|path| !on_disk.contains(path.as_str()))
        .cloned()
        .collect();
    let candidates: Vec<&ScannedFile> = found
        .files
        .iter()
        .filter(|file| {
            known.get(&file.rel_path).is_none_or(|record| {
                record.size != file.size || record.mtime_ns != file.mtime_ns || file.mtime_ns == 0
            })
        })
        .collect();
    (deleted, candidates)
}

impl Workspace {
    /// Identifies the scan settings, so a quick refresh never trusts a walk made with others.
    pub(crate) fn scan_fingerprint(&self) -> String {
        scan_fingerprint(&self.scan_options)
    }

    /// The known files with fresh sizes and mtimes, when no directory of the last full walk
    /// changed; `None` when a full walk is needed.
    fn quick_scan(
        &self,
        catalog: &Catalog,
        known: &std::collections::HashMap<String, crate::catalog::FileRecord>,
        fingerprint: &str,
    ) -> Result<Option<Scan>, IndexError> {
        let Some((stored_fingerprint, dirs)) = catalog.walk_stamps()? else {
            return Ok(None);
        };
        if stored_fingerprint != fingerprint {
            return Ok(None);
        }
        let unchanged = dirs.par_iter().all(|stamp| {
            let dir = if stamp.rel_path.is_empty() {
                self.root.clone()
            } else {
                self.root.join(&stamp.rel_path)
            };
            stamp_dir(&dir, String::new()).is_some_and(|now| {
                now.mtime_ns == stamp.mtime_ns && now.ignore_mtime_ns == stamp.ignore_mtime_ns
            })
        });
        if !unchanged {
            return Ok(None);
        }
        let max_bytes = self.scan_options.max_file_bytes;
        let records: Vec<&crate::catalog::FileRecord> = known.values().collect();
        let files: Option<Vec<ScannedFile>> = records
            .par_iter()
            .map(|record| {
                let abs_path = self.root.join(&record.path);
                // Gone, replaced or grown past the cap: let a full walk sort it out.
                let metadata = fs::metadata(&abs_path).ok().filter(|m| m.is_file())?;
                if metadata.len() > max_bytes {
                    return None;
                }
                Some(ScannedFile {
                    language: Language::from_path(Path::new(&record.path))?,
                    rel_path: record.path.clone(),
                    abs_path,
                    size: metadata.len(),
                    mtime_ns: mtime_ns(&metadata),
                })
            })
            .collect();
        let Some(mut files) = files else {
            return Ok(None);
        };
        files.sort_by(|a, b| a.rel_path.cmp(&b.rel_path));
        Ok(Some(Scan {
            files,
            skipped_too_large: 0,
            dirs,
        }))
    }

    pub(crate) fn apply_outcome(
        &self,
        batch: &mut CatalogBatch<'_>,
        file: &ScannedFile,
        outcome: FileOutcome,
        lexical: LexicalWrite,
        inline: Option<&mut InlineVectors>,
        stats: &mut RefreshStats,
    ) -> Result<(), IndexError> {
        match outcome {
            FileOutcome::Parsed {
                hash,
                language,
                parsed,
                bytes,
                vectors,
            } => {
                if let Some(reason) = &parsed.fell_back {
                    stats
                        .read_as_text
                        .push(format!("{}: {reason}", file.rel_path));
                }
                let ids = self.store_parsed(
                    batch,
                    &file.rel_path,
                    language,
                    file.size,
                    file.mtime_ns,
                    hash,
                    &parsed,
                    lexical,
                )?;
                if let (Some(inline), Some(vectors)) = (inline, vectors) {
                    inline.hold(&ids, &file.rel_path, language.name(), vectors);
                }
                stats.parsed += 1;
                stats.parsed_bytes += bytes;
            }
            FileOutcome::Unchanged => {
                batch.touch_file(&file.rel_path, file.size, file.mtime_ns)?;
                stats.unchanged += 1;
            }
            FileOutcome::Binary => {
                if batch.remove_file(&file.rel_path)? {
                    if lexical == LexicalWrite::Replace {
                        self.lexical.delete_file(&file.rel_path)?;
                    }
                    stats.removed += 1;
                }
                stats.skipped_binary += 1;
            }
            FileOutcome::Unreadable => stats.unreadable += 1,
            FileOutcome::Failed(error) => return Err(error),
        }
        Ok(())
    }

    /// Writes one parsed file to the catalog batch and the lexical writer; returns the ids of
    /// its chunks.
    #[allow(clippy::too_many_arguments)]
    fn store_parsed(
        &self,
        batch: &mut CatalogBatch<'_>,
        rel_path: &str,
        language: Language,
        size: u64,
        mtime_ns: i64,
        hash: u64,
        parsed: &ParsedFile,
        lexical: LexicalWrite,
    ) -> Result<Vec<i64>, IndexError> {
        let ids = batch.put_file(rel_path, language, size, mtime_ns, hash, parsed)?;
        match lexical {
            LexicalWrite::Skip => return Ok(ids),
            LexicalWrite::Replace => self.lexical.delete_file(rel_path)?,
            LexicalWrite::Add => {}
        }
        for (&id, chunk) in ids.iter().zip(&parsed.chunks) {
            self.lexical.add_chunk(&LexicalDoc::from_chunk(
                id,
                rel_path,
                language.name(),
                chunk,
            ))?;
        }
        Ok(ids)
    }

    /// Indexes one file from the given contents (an editor buffer, an agent edit) and publishes
    /// it at once. Returns `false` when lode does not index files of this kind.
    pub fn update_file(&self, path: &Path, contents: &str) -> Result<bool, IndexError> {
        let rel_path = self.relative(path)?;
        let Some(language) = Language::detect(Path::new(&rel_path), head_of(contents)) else {
            return Ok(false);
        };
        let parsed = parse_file_with(language, contents, self.chunk_sizes)?;
        self.with_write_locks(|| {
            let catalog = self.catalog();
            let derived = self.derived_in_step(&catalog, false)?;
            let mut batch = catalog.begin()?;
            // mtime 0 means "unknown": the next refresh compares the file on disk by hash.
            self.store_parsed(
                &mut batch,
                &rel_path,
                language,
                contents.len() as u64,
                0,
                content_hash(contents),
                &parsed,
                // Whether the catalog holds the file is not looked up: one delete is cheap.
                derived.lexical_write(true),
            )?;
            let generation = batch.commit()?;
            self.commit_lexical(derived, generation)?;
            if derived.vectors {
                self.sync_vectors(&catalog, &|_| {})?;
            }
            Ok(())
        })?;
        Ok(true)
    }

    /// Drops one file from the index at once. Returns whether it was indexed.
    pub fn remove_file(&self, path: &Path) -> Result<bool, IndexError> {
        let rel_path = self.relative(path)?;
        self.with_write_locks(|| {
            let catalog = self.catalog();
            let derived = self.derived_in_step(&catalog, false)?;
            let mut batch = catalog.begin()?;
            let removed = batch.remove_file(&rel_path)?;
            if derived.lexical {
                self.lexical.delete_file(&rel_path)?;
            }
            let generation = batch.commit()?;
            self.commit_lexical(derived, generation)?;
            if derived.vectors {
                self.sync_vectors(&catalog, &|_| {})?;
            }
            Ok(removed)
        })
    }

    /// Makes commits by other handles or processes visible to this one's searches.
    pub fn reload(&self) -> Result<(), IndexError> {
        self.lexical.reload()?;
        // A store not opened yet will read the latest state when it is.
        let opened = self.vectors.lock().clone().flatten();
        if let Some(store) = opened {
            store.reload()?;
        }
        Ok(())
    }

    /// A path (absolute, or relative to the root) as the index names it.
    pub fn relative(&self, path: &Path) -> Result<String, IndexError> {
        relative_to_root(&self.root, path)
    }
}

/// A path (absolute, or relative to `root`) as an index of the canonical `root` names it.
pub fn relative_to_root(root: &Path, path: &Path) -> Result<String, IndexError> {
    let absolute = if path.is_absolute() {
        path.to_path_buf()
    } else {
        root.join(path)
    };
    // Resolve symlinks where the file exists; a deleted file keeps its lexical path.
    let resolved = match fs::canonicalize(&absolute) {
        Ok(canonical) => canonical,
        Err(_) => match absolute.parent().map(fs::canonicalize) {
            Some(Ok(parent)) => parent.join(absolute.file_name().unwrap_or_default()),
            _ => absolute.clone(),
        },
    };
    relative_path(root, &resolved).ok_or(IndexError::OutsideRoot {
        path: path.to_path_buf(),
        root: root.to_path_buf(),
    })
}

/// Compares generations and rebuilds the lexical index from the catalog when they differ.
/// Returns a description of the repair, if one was made.
fn reconcile(
    index_dir: &Path,
    catalog: &Catalog,
    lexical: &LexicalIndex,
) -> Result<Option<String>, IndexError> {
    let catalog_generation = catalog.generation()?;
    let lexical_generation = lexical.generation()?.unwrap_or(0);
    if catalog_generation == lexical_generation {
        return Ok(None);
    }
    let lock = match WriterLock::try_acquire(index_dir) {
        // Another process is writing: it is between its two commits and will publish the
        // matching lexical generation itself.
        Err(IndexError::Locked { .. }) => return Ok(None),
        other => other?,
    };
    // Re-read under the lock: a writer may have finished in between.
    let catalog_generation = catalog.generation()?;
    if lexical.generation()?.unwrap_or(0) == catalog_generation {
        return Ok(lock.takeover_note());
    }
    lexical.acquire_writer()?;
    let rebuilt = rebuild_lexical(catalog, lexical, catalog_generation);
    let closed = lexical.close_writer();
    rebuilt?;
    closed?;
    let taken_over = lock
        .takeover_note()
        .map(|note| format!("{note}; "))
        .unwrap_or_default();
    Ok(Some(
        taken_over
            + &if lexical_generation == 0 {
                format!(
                    "lexical index not built yet (catalog at generation {catalog_generation}): built it from the catalog"
                )
            } else {
                format!(
                    "lexical index was at generation {lexical_generation}, catalog at {catalog_generation}: rebuilt it from the catalog"
                )
            },
    ))
}

/// Replaces the lexical index's contents with the catalog's chunks, as of `generation`. The
/// caller holds the writer lock and the lexical writer.
fn rebuild_lexical(
    catalog: &Catalog,
    lexical: &LexicalIndex,
    generation: u64,
) -> Result<(), IndexError> {
    lexical.defer_merges()?;
    lexical.delete_all()?;
    catalog.for_each_chunk(|chunk| lexical.add_chunk(&LexicalDoc::from_row(&chunk)))?;
    lexical.commit(generation)?;
    lexical.merge_into(bulk_merge_parts())
}

/// How many lexical segments a bulk load merges its segments into: one merge per core, at most
/// two. On `bench/`'s corpus (2 cores) a single merge of all 559k chunks added 6 s of waiting
/// to a 95 s cold build, two in parallel 1 s; a lexical query took 8.9 ms on one segment,
/// 10.5 ms on two, 15.2 ms on the 13 that tantivy's own merge policy left.
fn bulk_merge_parts() -> usize {
    std::thread::available_parallelism()
        .map_or(1, |n| n.get())
        .min(2)
}

/// The embedded vector store's directory inside the index directory.
pub const VECTORS_DIR: &str = "vectors";

/// The embedded vector store, when an embedder is set or vectors exist. One that cannot be read
/// is deleted and recreated empty (the next sync fills it).
fn open_embedded_vectors(
    index_dir: &Path,
    has_embedder: bool,
    repairs: &mut Vec<String>,
) -> Result<Option<Arc<dyn VectorStore>>, IndexError> {
    let dir = index_dir.join(VECTORS_DIR);
    if !has_embedder && !dir.exists() {
        return Ok(None);
    }
    match EmbeddedStore::open(&dir) {
        Ok(store) => Ok(Some(Arc::new(store))),
        Err(error) => {
            let lock = WriterLock::try_acquire(index_dir)?;
            repairs.extend(lock.takeover_note());
            repairs.push(format!("vector store unreadable ({error}); rebuilt it"));
            remove_dir_if_exists(&dir)?;
            Ok(Some(Arc::new(EmbeddedStore::open(&dir)?)))
        }
    }
}

/// Brings vectors made by `embedder` but out of step with the catalog (a crash between the
/// commits) up to date. Vectors of another embedder are left for the next refresh, which
/// re-embeds everything with progress.
fn reconcile_vectors(
    index_dir: &Path,
    catalog: &Catalog,
    store: &dyn VectorStore,
    embedder: &dyn Embedder,
) -> Result<Option<String>, IndexError> {
    let state = store.state();
    if state.identity.as_ref() != Some(embedder.identity()) || in_step(catalog, store, embedder)? {
        return Ok(None);
    }
    let lock = match WriterLock::try_acquire(index_dir) {
        Err(IndexError::Locked { .. }) => return Ok(None),
        other => other?,
    };
    store.reload()?;
    if in_step(catalog, store, embedder)? {
        return Ok(lock.takeover_note());
    }
    let catalog_generation = catalog.generation()?;
    let stats = sync_store(catalog, store, embedder, &|_, _| {})?;
    let taken_over = lock
        .takeover_note()
        .map(|note| format!("{note}; "))
        .unwrap_or_default();
    Ok(Some(format!(
        "{taken_over}vectors were at generation {}, catalog at {catalog_generation}: updated them from the catalog ({} embedded, {} reused, {} dropped)",
        state.generation, stats.embedded, stats.reused, stats.deleted
    )))
}

/// What reading and parsing one candidate file produced.
pub(crate) enum FileOutcome {
    Parsed {
        hash: u64,
        /// The file's language judged by its content too (a `.h` header that reads as C++).
        language: Language,
        parsed: ParsedFile,
        bytes: u64,
        /// The chunks' vectors, when the refresh embeds while parsing.
        vectors: Option<Vec<ChunkVector>>,
    },
    Unchanged,
    Binary,
    Unreadable,
    /// lode itself failed (a grammar or query that does not load): stop, do not skip.
    Failed(IndexError),
}

/// Reads, parses and (with `embedder`, see [`Embedder::embeds_while_parsing`]) embeds one
/// candidate file.
pub(crate) fn read_and_parse(
    file: &ScannedFile,
    known_hash: Option<u64>,
    max_bytes: u64,
    sizes: ChunkSizes,
    embedder: Option<&dyn Embedder>,
) -> FileOutcome {
    let text = match read_source(&file.abs_path, max_bytes) {
        Ok(Some(text)) => text,
        Ok(None) => return FileOutcome::Binary,
        Err(_) => return FileOutcome::Unreadable,
    };
    let hash = content_hash(&text);
    if known_hash == Some(hash) {
        return FileOutcome::Unchanged;
    }
    let language = Language::detect(&file.abs_path, head_of(&text)).unwrap_or(file.language);
    let parsed = match parse_file_with(language, &text, sizes) {
        Ok(parsed) => parsed,
        Err(error) => return FileOutcome::Failed(error.into()),
    };
    let embedded = embedder
        .map(|embedder| embed_chunks(embedder, &file.rel_path, language.name(), &parsed.chunks));
    let vectors = match embedded.transpose() {
        Ok(vectors) => vectors,
        Err(error) => return FileOutcome::Failed(error.into()),
    };
    FileOutcome::Parsed {
        hash,
        language,
        parsed,
        bytes: text.len() as u64,
        vectors,
    }
}

/// The start of a file's text that judging its language by content reads (a header's first
/// declarations, a `#!` line).
fn head_of(text: &str) -> &str {
    const HEAD_BYTES: usize = 8 * 1024;
    let mut end = text.len().min(HEAD_BYTES);
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    &text[..end]
}

fn ensure_ignored(index_dir: &Path) -> Result<(), IndexError> {
    let marker = index_dir.join(".gitignore");
    if !marker.exists() {
        fs::write(
            &marker,
            "# lode's index: rebuilt on demand, never committed\n*\n",
        )
        .map_err(|source| IndexError::Write {
            path: marker.clone(),
            source,
        })?;
    }
    Ok(())
}

/// Opens the catalog and reads from it once, so a file SQLite cannot read fails here.
fn open_checked_catalog(path: &Path) -> Result<Catalog, IndexError> {
    let catalog = Catalog::open(path)?;
    catalog.generation()?;
    Ok(catalog)
}

fn remove_catalog_files(path: &Path) -> Result<(), IndexError> {
    for suffix in ["", "-wal", "-shm", "-journal"] {
        let file = PathBuf::from(format!("{}{suffix}", path.display()));
        if file.exists() {
            fs::remove_file(&file).map_err(|source| IndexError::Write { path: file, source })?;
        }
    }
    Ok(())
}

fn remove_dir_if_exists(dir: &Path) -> Result<(), IndexError> {
    if dir.exists() {
        fs::remove_dir_all(dir).map_err(|source| IndexError::Write {
            path: dir.to_path_buf(),
            source,
        })?;
    }
    Ok(())
}

/// Identifies the scan settings (and lode version) an index was walked with.
pub(crate) fn scan_fingerprint(options: &ScanOptions) -> String {
    let settings = format!(
        "{}|{}|{:?}",
        env!("CARGO_PKG_VERSION"),
        options.max_file_bytes,
        options.exclude
    );
    format!("{:016x}", xxhash_rust::xxh3::xxh3_64(settings.as_bytes()))
}
