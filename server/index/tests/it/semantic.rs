//! Semantic and hybrid search end to end on real files: the built-in static embedder, the
//! embedded vector store on disk, incremental re-embedding, embedder changes and repairs.

use std::fs;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use lode_index::{
    EmbedError, EmbeddedStore, Embedder, EmbedderIdentity, IndexError, Language, RefreshPhase,
    SearchMode, SearchRequest, StaticEmbedder, StoreState, VectorError, VectorFilter, VectorHit,
    VectorRecord, VectorStore, Workspace, WorkspaceOptions, default_embedder,
};

fn write(root: &Path, rel: &str, text: &str) {
    let path = root.join(rel);
    fs::create_dir_all(path.parent().unwrap()).unwrap();
    fs::write(path, text).unwrap();
}

fn open_with(root: &Path, embedder: Option<Arc<dyn Embedder>>) -> Workspace {
    let mut options = WorkspaceOptions::new(root);
    options.embedder = embedder;
    Workspace::open(options).unwrap()
}

fn open_static(root: &Path) -> Workspace {
    open_with(root, Some(default_embedder().unwrap()))
}

const NETWORK_RS: &str = r#"
use std::net::TcpStream;
use std::io::Write;

/// Opens a connection to the server and sends a greeting.
pub fn connect_to_server(address: &str) -> std::io::Result<TcpStream> {
    let mut socket = TcpStream::connect(address)?;
    socket.write_all(b"hello")?;
    Ok(socket)
}
"#;

const SORTING_RS: &str = r#"
/// Orders the items by their key, smallest first.
pub fn sort_items_by_key(items: &mut Vec<(u32, String)>) {
    items.sort_by(|a, b| a.0.cmp(&b.0));
}
"#;

const COLORS_PY: &str = r#"
def blend_colors(red, green, blue):
    """Mix three colour channels into one pixel value."""
    return (red << 16) | (green << 8) | blue
"#;

fn sample() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), "src/network.rs", NETWORK_RS);
    write(dir.path(), "src/sorting.rs", SORTING_RS);
    write(dir.path(), "py/colors.py", COLORS_PY);
    dir
}

/// Asserts that the workspace reported a repair mentioning `what`.
fn assert_repaired(workspace: &Workspace, what: &str) {
    let repairs = workspace.repairs();
    assert!(repairs.iter().any(|r| r.contains(what)), "{repairs:?}");
}

/// Moves a file's mtime a minute ahead without changing its bytes.
fn touch_later(path: &Path) {
    let file = fs::File::options().write(true).open(path).unwrap();
    file.set_modified(std::time::SystemTime::now() + std::time::Duration::from_secs(60))
        .unwrap();
}

fn top_path(hits: &[lode_index::SearchHit]) -> &str {
    hits.first().map(|h| h.path.as_str()).unwrap_or("<none>")
}

#[test]
fn refresh_embeds_every_chunk_and_semantic_search_finds_by_meaning() {
    let dir = sample();
    let workspace = open_static(dir.path());
    let phases = std::sync::Mutex::new(Vec::new());
    let stats = workspace
        .refresh(&|p| phases.lock().unwrap().push(p.phase))
        .unwrap();
    assert_eq!(stats.vectors.embedded as u64, stats.total_chunks);
    // The static table embeds in the parse workers: there is no separate embed phase.
    assert!(!phases.lock().unwrap().contains(&RefreshPhase::Embed));
    assert!(workspace.has_vectors());
    let store = workspace.vector_store().unwrap().unwrap();
    assert_eq!(store.state().count as u64, stats.total_chunks);

    // No word of the query appears in the code.
    let request = SearchRequest::new("open a tcp link to a remote host");
    let hits = workspace
        .search_with_mode(&request, SearchMode::Semantic)
        .unwrap();
    assert_eq!(top_path(&hits), "src/network.rs");
    let request = SearchRequest::new("mix pixel colour");
    let hits = workspace
        .search_with_mode(&request, SearchMode::Semantic)
        .unwrap();
    assert_eq!(top_path(&hits), "py/colors.py");

    // Filters apply to vector hits.
    let mut only_python = SearchRequest::new("open a tcp link to a remote host");
    only_python.language = Some(Language::Python);
    let hits = workspace
        .search_with_mode(&only_python, SearchMode::Semantic)
        .unwrap();
    assert!(hits.iter().all(|h| h.language == "python"), "{hits:?}");
    let mixed = SearchRequest::new("colour channels pixel and the server greeting");
    let everywhere = workspace
        .search_with_mode(&mixed, SearchMode::Hybrid)
        .unwrap();
    assert!(everywhere.iter().any(|h| h.path == "py/colors.py"));
    let mut only_src = mixed.clone();
    only_src.path_glob = Some("src/**".into());
    let hits = workspace
        .search_with_mode(&only_src, SearchMode::Hybrid)
        .unwrap();
    assert!(!hits.is_empty() && hits.iter().all(|h| h.path.starts_with("src/")));
    // Nothing in src/ is about colours: below the relevance floor, no hit at all.
    let mut unrelated = SearchRequest::new("mix pixel colour");
    unrelated.path_glob = Some("src/**".into());
    assert!(
        workspace
            .search_with_mode(&unrelated, SearchMode::Semantic)
            .unwrap()
            .is_empty()
    );
}

#[test]
fn hybrid_search_combines_words_meaning_and_symbol_names() {
    let dir = sample();
    let workspace = open_static(dir.path());
    workspace.refresh(&|_| {}).unwrap();
    let by_name = workspace
        .search_with_mode(&SearchRequest::new("sort_items_by_key"), SearchMode::Hybrid)
        .unwrap();
    assert_eq!(top_path(&by_name), "src/sorting.rs");
    assert_eq!(by_name[0].symbol.as_deref(), Some("sort_items_by_key"));
    let by_meaning = workspace
        .search_hybrid(&SearchRequest::new("open a tcp link to a remote host"))
        .unwrap();
    assert_eq!(top_path(&by_meaning), "src/network.rs");
    let lexical = workspace
        .search_with_mode(&SearchRequest::new("greeting"), SearchMode::Lexical)
        .unwrap();
    assert_eq!(
        lexical,
        workspace.search(&SearchRequest::new("greeting")).unwrap()
    );
}

#[test]
fn only_changed_chunks_are_embedded_again() {
    let dir = sample();
    let workspace = open_static(dir.path());
    let first = workspace.refresh(&|_| {}).unwrap();
    assert!(first.vectors.embedded >= 3);

    let unchanged = workspace.refresh(&|_| {}).unwrap();
    assert_eq!(unchanged.vectors.embedded, 0);

    write(
        dir.path(),
        "src/sorting.rs",
        &SORTING_RS.replace("smallest first", "largest last"),
    );
    let edited = workspace.refresh(&|_| {}).unwrap();
    assert_eq!(edited.vectors.embedded, 1, "{:?}", edited.vectors);
    assert_eq!(edited.vectors.deleted, 1);

    // An editor buffer identical to the file: the chunks get new ids, the vectors are reused.
    let again = workspace.vector_store().unwrap().unwrap().state().count;
    workspace
        .update_file(&dir.path().join("src/network.rs"), NETWORK_RS)
        .unwrap();
    let store = workspace.vector_store().unwrap().unwrap();
    assert_eq!(store.state().count, again);
    assert_eq!(store.state().count as u64, edited.total_chunks);

    fs::remove_file(dir.path().join("py/colors.py")).unwrap();
    let removed = workspace.refresh(&|_| {}).unwrap();
    assert_eq!(removed.vectors.deleted, 1);
    assert_eq!(store.state().count as u64, removed.total_chunks);
    let hits = workspace
        .search_with_mode(
            &SearchRequest::new("mix pixel colour"),
            SearchMode::Semantic,
        )
        .unwrap();
    assert!(hits.iter().all(|h| h.path != "py/colors.py"));
}

#[test]
fn unchanged_text_reuses_its_vector() {
    let dir = sample();
    let counting = Arc::new(Counting::new("a"));
    let workspace = open_with(dir.path(), Some(counting.clone()));
    workspace.refresh(&|_| {}).unwrap();
    let before = counting.calls.load(Ordering::SeqCst);
    // Re-indexing the same text gives the chunks new ids but the same embedding text.
    let updated = workspace
        .update_file(&dir.path().join("src/network.rs"), NETWORK_RS)
        .unwrap();
    assert!(updated);
    assert_eq!(
        counting.calls.load(Ordering::SeqCst),
        before,
        "no text embedded again"
    );
    let hits = workspace
        .search_with_mode(
            &SearchRequest::new("connect_to_server"),
            SearchMode::Semantic,
        )
        .unwrap();
    assert_eq!(top_path(&hits), "src/network.rs");
}

#[test]
fn a_new_embedder_re_embeds_everything() {
    let dir = sample();
    let workspace = open_static(dir.path());
    let first = workspace.refresh(&|_| {}).unwrap();
    drop(workspace);

    let other = Arc::new(Counting::new("b"));
    let workspace = open_with(dir.path(), Some(other.clone()));
    assert!(
        !workspace.has_vectors(),
        "vectors of another embedder do not count"
    );
    assert!(matches!(
        workspace.search_with_mode(&SearchRequest::new("tcp"), SearchMode::Semantic),
        Err(IndexError::NoVectors(_))
    ));
    let stats = workspace.refresh(&|_| {}).unwrap();
    assert!(stats.vectors.reset);
    assert_eq!(stats.vectors.embedded as u64, first.total_chunks);
    assert_eq!(
        workspace
            .vector_store()
            .unwrap()
            .unwrap()
            .state()
            .identity
            .as_ref(),
        Some(other.identity())
    );
    assert!(workspace.has_vectors());
}

#[test]
fn vectors_behind_the_catalog_are_brought_up_to_date_on_open() {
    let dir = sample();
    let workspace = open_static(dir.path());
    workspace.refresh(&|_| {}).unwrap();
    drop(workspace);
    // A process without an embedder changes the catalog: the vectors fall one generation behind,
    // as after a crash between the catalog commit and the vector commit.
    let plain = open_with(dir.path(), None);
    write(
        dir.path(),
        "src/extra.rs",
        "/// Compresses a buffer with deflate.\npub fn squeeze(data: &[u8]) -> Vec<u8> { data.to_vec() }\n",
    );
    plain.refresh(&|_| {}).unwrap();
    drop(plain);

    let workspace = open_static(dir.path());
    let hits = workspace
        .search_with_mode(&SearchRequest::new("squeeze"), SearchMode::Semantic)
        .unwrap();
    assert_eq!(top_path(&hits), "src/extra.rs");
    assert_repaired(&workspace, "vectors were at generation");
}

#[test]
fn a_damaged_vector_store_is_rebuilt() {
    let dir = sample();
    let workspace = open_static(dir.path());
    let first = workspace.refresh(&|_| {}).unwrap();
    let vectors_dir = workspace.index_dir().join("vectors");
    drop(workspace);
    fs::write(vectors_dir.join("manifest.json"), b"{ not json").unwrap();
    let workspace = open_static(dir.path());
    let stats = workspace.refresh(&|_| {}).unwrap();
    assert_repaired(&workspace, "vector store unreadable");
    assert_eq!(stats.vectors.embedded as u64, first.total_chunks);
    assert!(workspace.has_vectors());
}

#[test]
fn a_lexical_search_never_opens_the_vector_store() {
    let dir = sample();
    let workspace = open_static(dir.path());
    workspace.refresh(&|_| {}).unwrap();
    let vectors_dir = workspace.index_dir().join("vectors");
    drop(workspace);
    // A store that cannot be read shows whether anything opened it: opening repairs it.
    fs::write(vectors_dir.join("manifest.json"), b"{ not json").unwrap();

    let workspace = open_static(dir.path());
    let hits = workspace
        .search_with_mode(&SearchRequest::new("greeting"), SearchMode::Lexical)
        .unwrap();
    assert!(!hits.is_empty());
    assert!(workspace.symbols("greeting", 5).is_ok());
    assert!(workspace.repairs().is_empty(), "{:?}", workspace.repairs());
    assert_eq!(
        fs::read(vectors_dir.join("manifest.json")).unwrap(),
        b"{ not json",
        "the lexical search touched the vector store"
    );

    // The first semantic use opens (and here repairs) it.
    assert!(!workspace.has_vectors());
    assert_repaired(&workspace, "vector store unreadable");
}

#[test]
fn without_an_embedder_nothing_is_embedded() {
    let dir = sample();
    let workspace = open_with(dir.path(), None);
    let stats = workspace.refresh(&|_| {}).unwrap();
    assert_eq!(stats.vectors.embedded, 0);
    assert!(!workspace.has_vectors());
    assert!(!workspace.index_dir().join("vectors").exists());
    assert!(matches!(
        workspace.search_hybrid(&SearchRequest::new("tcp")),
        Err(IndexError::NoVectors(_))
    ));
}

/// The static embedder under another identity, counting the texts it embeds.
struct Counting {
    identity: EmbedderIdentity,
    calls: AtomicUsize,
    inner: StaticEmbedder,
}

impl Counting {
    fn new(name: &str) -> Counting {
        Counting {
            identity: EmbedderIdentity {
                backend: "test".into(),
                model: name.into(),
                dimension: 256,
            },
            calls: AtomicUsize::new(0),
            inner: StaticEmbedder::builtin().unwrap(),
        }
    }
}

impl Embedder for Counting {
    fn identity(&self) -> &EmbedderIdentity {
        &self.identity
    }

    fn embed_batch(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, EmbedError> {
        self.calls.fetch_add(texts.len(), Ordering::SeqCst);
        self.inner.embed_batch(texts)
    }
}

#[test]
fn a_touched_but_unchanged_file_starts_no_new_generation() {
    let dir = sample();
    let workspace = open_static(dir.path());
    workspace.refresh(&|_| {}).unwrap();
    let store = workspace.vector_store().unwrap().unwrap().clone();
    let before = store.state().generation;

    // New mtime, same bytes: the file is read and hashed again, and only its mtime is stored.
    touch_later(&dir.path().join("src/network.rs"));
    let stats = workspace.refresh(&|_| {}).unwrap();
    assert_eq!(stats.parsed, 0, "{stats:?}");
    assert_eq!(
        store.state().generation,
        before,
        "nothing to embed or reindex, so no new generation for the derived indexes to chase"
    );
    let again = workspace.refresh(&|_| {}).unwrap();
    assert_eq!(
        again.unchanged, again.files,
        "the new mtime was recorded: {again:?}"
    );

    write(
        dir.path(),
        "src/network.rs",
        &format!("{NETWORK_RS}\n// changed\n"),
    );
    workspace.refresh(&|_| {}).unwrap();
    assert!(store.state().generation > before);
}

/// The built-in static embedder under its own identity, choosing whether it embeds while
/// parsing, and optionally failing its `fail_at`-th call (counted from 1).
struct Switchable {
    inner: StaticEmbedder,
    inline: bool,
    calls: AtomicUsize,
    fail_at: Option<usize>,
}

impl Switchable {
    fn new(inline: bool, fail_at: Option<usize>) -> Switchable {
        Switchable {
            inner: StaticEmbedder::builtin().unwrap(),
            inline,
            calls: AtomicUsize::new(0),
            fail_at,
        }
    }
}

impl Embedder for Switchable {
    fn identity(&self) -> &EmbedderIdentity {
        self.inner.identity()
    }

    fn embed_batch(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, EmbedError> {
        let call = self.calls.fetch_add(1, Ordering::SeqCst) + 1;
        if Some(call) == self.fail_at {
            return Err(EmbedError::Model("failing on purpose".into()));
        }
        self.inner.embed_batch(texts)
    }

    fn embeds_while_parsing(&self) -> bool {
        self.inline
    }

    fn splits_identifiers(&self) -> bool {
        self.inner.splits_identifiers()
    }
}

/// Every stored vector as (content hash, vector), sorted: what the store holds, whatever ids
/// the chunks got.
fn stored_vectors(workspace: &Workspace) -> Vec<(u64, Vec<i32>)> {
    let store = workspace.vector_store().unwrap().unwrap();
    let entries = store.entries().unwrap();
    let ids: Vec<i64> = entries.iter().map(|&(id, _)| id).collect();
    let vectors: std::collections::HashMap<i64, Vec<f32>> =
        store.vectors(&ids).unwrap().into_iter().collect();
    let mut all: Vec<(u64, Vec<i32>)> = entries
        .iter()
        .map(|(id, hash)| {
            // Exact comparison of the stored (quantized) values, as integers.
            let vector = vectors[id]
                .iter()
                .map(|x| (x * 1e6).round() as i32)
                .collect();
            (*hash, vector)
        })
        .collect();
    all.sort();
    all
}

/// The chunk ids of the workspace's catalog, read straight from its SQLite file.
fn catalog_chunk_ids(workspace: &Workspace) -> Vec<i64> {
    catalog_column(workspace.index_dir(), "SELECT id FROM chunks ORDER BY id")
}

/// The one column `sql` selects from the catalog in `index_dir`, read straight from SQLite.
fn catalog_column<T: rusqlite::types::FromSql>(index_dir: &Path, sql: &str) -> Vec<T> {
    let conn = rusqlite::Connection::open(index_dir.join("catalog.sqlite")).unwrap();
    let mut statement = conn.prepare(sql).unwrap();
    statement
        .query_map([], |row| row.get(0))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap()
}

fn many_files(root: &Path, count: usize) {
    for n in 0..count {
        write(
            root,
            &format!("src/module_{n}.rs"),
            &format!(
                "use std::collections::HashMap;\n\n/// Number {n}.\npub fn compute_value_{n}(input: u32) -> u32 {{\n    input * {n} + 1\n}}\n\npub struct Holder{n} {{\n    pub items: HashMap<u32, String>,\n}}\n"
            ),
        );
    }
}

#[test]
fn vectors_made_while_parsing_equal_those_of_the_embed_phase() {
    let inline_dir = sample();
    many_files(inline_dir.path(), 12);
    let phase_dir = sample();
    many_files(phase_dir.path(), 12);

    let inline = Arc::new(Switchable::new(true, None));
    let inline_workspace = open_with(inline_dir.path(), Some(inline.clone()));
    let inline_stats = inline_workspace.refresh(&|_| {}).unwrap();
    let phased = Arc::new(Switchable::new(false, None));
    let phased_workspace = open_with(phase_dir.path(), Some(phased.clone()));
    let phases = std::sync::Mutex::new(Vec::new());
    let phased_stats = phased_workspace
        .refresh(&|p| phases.lock().unwrap().push(p.phase))
        .unwrap();
    assert!(phases.lock().unwrap().contains(&RefreshPhase::Embed));

    // The workers embedded one batch per file; the embed phase batches across files.
    assert_eq!(inline.calls.load(Ordering::SeqCst), 15);
    assert!(phased.calls.load(Ordering::SeqCst) < 15);
    assert_eq!(
        inline_stats.vectors.embedded as u64,
        inline_stats.total_chunks
    );
    assert_eq!(inline_stats.vectors, phased_stats.vectors);
    assert_eq!(inline_stats.total_vectors, phased_stats.total_vectors);
    assert_eq!(
        stored_vectors(&inline_workspace),
        stored_vectors(&phased_workspace)
    );
    assert!(inline_workspace.has_vectors());
    let hits = inline_workspace
        .search_with_mode(
            &SearchRequest::new("open a tcp link to a remote host"),
            SearchMode::Semantic,
        )
        .unwrap();
    assert_eq!(top_path(&hits), "src/network.rs");
}

#[test]
fn a_refresh_that_fails_while_embedding_leaves_no_vector_without_its_chunk() {
    for fail_at in [1, 4, 9] {
        let dir = sample();
        many_files(dir.path(), 12);
        let failing = Arc::new(Switchable::new(true, Some(fail_at)));
        let mut options = WorkspaceOptions::new(dir.path());
        options.embedder = Some(failing.clone());
        // Commit every few files, so some vectors are published before the failure.
        options.checkpoint_files = 3;
        let workspace = Workspace::open(options).unwrap();
        let error = workspace.refresh(&|_| {}).unwrap_err();
        assert!(error.to_string().contains("failing on purpose"), "{error}");
        let store = workspace.vector_store().unwrap().unwrap();
        let committed_ids = catalog_chunk_ids(&workspace);
        for (id, _) in store.entries().unwrap() {
            assert!(
                committed_ids.binary_search(&id).is_ok(),
                "fail_at {fail_at}: vector {id} has no committed chunk"
            );
        }

        // The embedder works again (it failed once): the next refresh completes the index.
        let stats = workspace.refresh(&|_| {}).unwrap();
        let ids = catalog_chunk_ids(&workspace);
        let mut stored: Vec<i64> = store.entries().unwrap().into_iter().map(|e| e.0).collect();
        stored.sort();
        assert_eq!(stored, ids, "fail_at {fail_at}");
        assert_eq!(stats.total_vectors, stats.total_chunks);
        assert!(workspace.has_vectors());
    }
}

/// A cold build publishes its lexical index only at its end, so its checkpoints leave the
/// catalog (and vectors) ahead of it. After a build that fails half-way, the next handle
/// rebuilds the lexical index from the catalog: every committed file is found without being
/// parsed again, and no file the catalog lacks.
#[test]
fn an_interrupted_cold_build_is_indexed_lexically_from_its_checkpoints_by_the_next_open() {
    let dir = tempfile::tempdir().unwrap();
    many_files(dir.path(), 12);
    let mut options = WorkspaceOptions::new(dir.path());
    options.embedder = Some(Arc::new(Switchable::new(true, Some(9))));
    options.checkpoint_files = 3;
    let workspace = Workspace::open(options).unwrap();
    let error = workspace.refresh(&|_| {}).unwrap_err();
    assert!(error.to_string().contains("failing on purpose"), "{error}");
    drop(workspace);

    let committed: Vec<String> =
        catalog_column(&dir.path().join(".lode/index"), "SELECT path FROM files");
    assert!(
        (3..12).contains(&committed.len()),
        "checkpoints every 3 files before the 9th embedding: {committed:?}"
    );

    let workspace = Workspace::open(WorkspaceOptions::new(dir.path())).unwrap();
    assert_repaired(&workspace, "built it from the catalog");
    for n in 0..12 {
        let path = format!("src/module_{n}.rs");
        let request = SearchRequest::new(format!("compute_value_{n}"));
        let found = workspace
            .search_with_mode(&request, SearchMode::Lexical)
            .unwrap()
            .iter()
            .any(|hit| hit.path == path);
        assert_eq!(found, committed.contains(&path), "{path}");
    }
}

/// The embedded store, counting its commits.
struct CountingStore {
    inner: EmbeddedStore,
    commits: AtomicUsize,
}

impl VectorStore for CountingStore {
    fn backend(&self) -> &'static str {
        "counting"
    }
    fn state(&self) -> StoreState {
        self.inner.state()
    }
    fn entries(&self) -> Result<Vec<(i64, u64)>, VectorError> {
        self.inner.entries()
    }
    fn vectors(&self, ids: &[i64]) -> Result<Vec<(i64, Vec<f32>)>, VectorError> {
        self.inner.vectors(ids)
    }
    fn reset(&self, identity: &EmbedderIdentity) -> Result<(), VectorError> {
        self.inner.reset(identity)
    }
    fn upsert(&self, records: Vec<VectorRecord>) -> Result<(), VectorError> {
        self.inner.upsert(records)
    }
    fn delete(&self, ids: &[i64]) -> Result<(), VectorError> {
        self.inner.delete(ids)
    }
    fn commit(&self, generation: u64) -> Result<(), VectorError> {
        self.commits.fetch_add(1, Ordering::SeqCst);
        self.inner.commit(generation)
    }
    fn search(
        &self,
        query: &[f32],
        k: usize,
        filter: &VectorFilter,
    ) -> Result<Vec<VectorHit>, VectorError> {
        self.inner.search(query, k, filter)
    }
    fn reload(&self) -> Result<(), VectorError> {
        self.inner.reload()
    }
}

/// A workspace on `root` with the static embedder, its vectors in a counting store in
/// `vectors_dir`, committing the catalog every `checkpoint_files` files if given.
fn open_counting(
    root: &Path,
    vectors_dir: &Path,
    checkpoint_files: Option<usize>,
) -> (Workspace, Arc<CountingStore>) {
    let store = Arc::new(CountingStore {
        inner: EmbeddedStore::open(vectors_dir).unwrap(),
        commits: AtomicUsize::new(0),
    });
    let mut options = WorkspaceOptions::new(root);
    options.embedder = Some(default_embedder().unwrap());
    options.vector_store = Some(store.clone());
    if let Some(files) = checkpoint_files {
        options.checkpoint_files = files;
    }
    (Workspace::open(options).unwrap(), store)
}

#[test]
fn a_refresh_that_changes_nothing_leaves_the_vector_store_alone() {
    let dir = sample();
    let vectors_dir = tempfile::tempdir().unwrap();
    let (workspace, store) = open_counting(dir.path(), vectors_dir.path(), None);
    let first = workspace.refresh(&|_| {}).unwrap();
    assert_eq!(first.total_vectors, first.total_chunks);
    let commits = store.commits.load(Ordering::SeqCst);
    assert!(commits >= 1);

    // A new mtime with the same bytes makes the file a candidate that turns out unchanged.
    touch_later(&dir.path().join("src/sorting.rs"));
    workspace.refresh(&|_| {}).unwrap();
    workspace.refresh(&|_| {}).unwrap();
    assert_eq!(
        store.commits.load(Ordering::SeqCst),
        commits,
        "refreshes that changed nothing committed the vector store"
    );

    write(
        dir.path(),
        "src/sorting.rs",
        &SORTING_RS.replace("smallest first", "largest last"),
    );
    let edited = workspace.refresh(&|_| {}).unwrap();
    assert_eq!(edited.vectors.embedded, 1);
    assert!(store.commits.load(Ordering::SeqCst) > commits);
    assert_eq!(store.state().count as u64, edited.total_chunks);
}

#[test]
fn a_cold_build_publishes_its_vectors_once_not_at_every_checkpoint() {
    let dir = sample();
    many_files(dir.path(), 12);
    let vectors_dir = tempfile::tempdir().unwrap();
    let (workspace, store) = open_counting(dir.path(), vectors_dir.path(), Some(2));
    let stats = workspace.refresh(&|_| {}).unwrap();
    assert_eq!(stats.total_vectors, stats.total_chunks);
    // Seven catalog checkpoints; the few vectors are published once as partial progress, and
    // once more by the closing sync with the catalog's generation. Each commit writes a
    // segment; past the store's segment limit they would all be merged in memory.
    assert_eq!(store.commits.load(Ordering::SeqCst), 2);
    assert!(workspace.has_vectors());
}

/// The workers hand over int8 vectors; a store that only takes floats (this one leaves
/// `upsert_quantized` to the trait's default) gets them dequantized, and quantizing those
/// again gives back exactly what the embedded store keeps when it takes them as they are.
#[test]
fn a_store_of_floats_gets_the_workers_vectors_dequantized_to_the_same_values() {
    let dir = sample();
    many_files(dir.path(), 4);
    let vectors_dir = tempfile::tempdir().unwrap();
    let (through_floats, _) = open_counting(dir.path(), vectors_dir.path(), None);
    through_floats.refresh(&|_| {}).unwrap();
    let direct_dir = sample();
    many_files(direct_dir.path(), 4);
    let direct = open_static(direct_dir.path());
    let stats = direct.refresh(&|_| {}).unwrap();
    let expected = stored_vectors(&direct);
    assert_eq!(expected.len() as u64, stats.total_chunks);
    assert_eq!(stored_vectors(&through_floats), expected);
}

#[test]
fn hybrid_search_weighs_the_vectors_by_the_workspace_s_main_language() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    write(root, "README.md", &"Prose is not code. ".repeat(2000));
    write(root, "app/colors.py", COLORS_PY);
    write(root, "src/network.rs", NETWORK_RS);
    let workspace = open_static(root);
    assert_eq!(
        workspace.main_language().unwrap(),
        None,
        "nothing indexed yet"
    );
    workspace.refresh(&|_| {}).unwrap();
    // The README has the most bytes, but prose is never the main language.
    assert_eq!(workspace.main_language().unwrap(), Some(Language::Rust));
    write(root, "app/more.py", &COLORS_PY.repeat(20));
    workspace.refresh(&|_| {}).unwrap();
    // A new generation of the catalog is read again.
    assert_eq!(workspace.main_language().unwrap(), Some(Language::Python));
    let request = SearchRequest {
        query: "mix colour channels into a pixel".into(),
        limit: 3,
        path_glob: None,
        language: None,
        boosts: None,
        demotions: None,
    };
    let hits = workspace.search_hybrid(&request).unwrap();
    assert!(hits[0].path.starts_with("app/"), "{hits:?}");
}

/// A Java class whose fields and constants name what a sentence asks about, beside the method
/// that does it, and a README section on the same subject.
const RETRY_JAVA: &str = r#"
package net.example.client;

public class ConnectionRetryPolicy {
    public static final int CONNECTION_RETRY_LIMIT = 5;
    private final int limit;
    private final long delayMillis;

    public ConnectionRetryPolicy(int limit, long delay) {
        this.limit = limit;
        this.delayMillis = delay;
    }

    public Socket openWithRetries(String host, int port) throws IOException {
        IOException last = null;
        for (int attempt = 0; attempt < limit; attempt++) {
            try {
                return new Socket(host, port);
            } catch (IOException failure) {
                last = failure;
                sleepQuietly(delayMillis);
            }
        }
        throw last;
    }
}
"#;

const RETRY_README: &str = "# Client\n\nSome words about the client.\n\n\
## Retrying a connection\n\nA connection that fails is retried up to the retry limit, \
waiting the retry delay between attempts.\n";

#[test]
fn sentences_rank_what_does_something_above_what_only_declares() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    write(root, "src/ConnectionRetryPolicy.java", RETRY_JAVA);
    write(root, "README.md", RETRY_README);
    let workspace = open_static(root);
    workspace.refresh(&|_| {}).unwrap();
    let defaults = lode_index::FusionWeights::for_query(
        lode_index::QueryShape::NaturalLanguage,
        lode_index::SimilarityScale::Calibrated,
        Some(Language::Java),
    );
    assert!(defaults.callables > 0.0, "{defaults:?}");
    // The fused score of the chunk holding each of these lines, with the prior at `callables`.
    let line_of = |text: &str, needle: &str| {
        1 + text.lines().position(|line| line.contains(needle)).unwrap() as u32
    };
    let places = [
        (
            "limit",
            "src/ConnectionRetryPolicy.java",
            line_of(RETRY_JAVA, "int limit;"),
        ),
        (
            "method",
            "src/ConnectionRetryPolicy.java",
            line_of(RETRY_JAVA, "openWithRetries("),
        ),
        ("section", "README.md", line_of(RETRY_README, "## Retrying")),
    ];
    let fused = |query: &str, callables: f32| {
        let request = SearchRequest::new(query);
        let weights = lode_index::FusionWeights {
            callables,
            ..defaults
        };
        let hits = workspace.search_hybrid_with(&request, weights).unwrap();
        places
            .iter()
            .map(|&(name, path, line)| {
                let hit = hits
                    .iter()
                    .find(|hit| hit.path == path && (hit.start_line..=hit.end_line).contains(&line))
                    .unwrap_or_else(|| panic!("{name} not found for {query:?}: {hits:#?}"));
                (name, hit.score)
            })
            .collect::<std::collections::HashMap<&str, f32>>()
    };
    let lead = |scores: &std::collections::HashMap<&str, f32>, over: &str, of: &str| {
        scores[of] - scores[over]
    };
    // The fields match the words best; the method and the README's section gain the prior's
    // weight over them, and keep their order between themselves.
    let query = "connect to the host, retrying up to the limit";
    let (without, with) = (fused(query, 0.0), fused(query, 2.5));
    assert!(lead(&without, "method", "limit") > 0.0, "{without:?}");
    for does_something in ["method", "section"] {
        let gained = lead(&with, "limit", does_something) - lead(&without, "limit", does_something);
        assert!(
            (gained - 2.5).abs() < 1e-3,
            "{does_something}: {without:?} {with:?}"
        );
    }
    let kept = lead(&with, "section", "method") - lead(&without, "section", "method");
    assert!(kept.abs() < 1e-3, "{without:?} {with:?}");
    // A declaration the query names in code form is what it asks about: not demoted.
    let query = "where is CONNECTION_RETRY_LIMIT read between two connection attempts";
    let (without, with) = (fused(query, 0.0), fused(query, 2.5));
    let gained = lead(&with, "limit", "method") - lead(&without, "limit", "method");
    assert!(gained.abs() < 1e-3, "{without:?} {with:?}");
}
