//! lode's Qdrant backend against a REAL Qdrant server (the binary `real_server` finds and
//! starts on free loopback ports with a temporary storage directory; the tests fail, not skip,
//! when there is none): the store scenario, a workspace indexed, updated, pruned and searched
//! with path and language filters, a changed embedder, and the server killed (SIGKILL) and
//! restarted on the same storage in the middle of a run.

use crate::real_server;
use crate::scenario;

use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use lode_index::{
    EmbedError, Embedder, EmbedderIdentity, Language, SearchMode, SearchRequest, VectorFilter,
    VectorStore, Workspace, WorkspaceOptions,
};
use lode_qdrant::{QdrantConfig, QdrantStore};
use real_server::{RealQdrant, rest_get};

fn write(root: &Path, relative: &str, text: &str) {
    let path = root.join(relative);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

/// A small workspace of two languages in three directories.
fn sample_workspace(root: &Path) {
    write(
        root,
        "src/net.rs",
        "/// Opens a TCP connection to the server and retries on failure.\npub fn connect_with_retries(host: &str) -> u32 {\n    host.len() as u32\n}\n",
    );
    write(
        root,
        "src/color.py",
        "def blend_colors(first, second):\n    \"\"\"Mix two RGB colours half and half.\"\"\"\n    return [(a + b) / 2 for a, b in zip(first, second)]\n",
    );
    write(
        root,
        "geometry/shapes.rs",
        "/// The area of a circle of the given radius.\npub fn circle_area(radius: f64) -> f64 {\n    std::f64::consts::PI * radius * radius\n}\n",
    );
    write(
        root,
        "scripts/shapes.py",
        "import math\n\ndef circle_area(radius):\n    \"\"\"The area of a circle of the given radius.\"\"\"\n    return math.pi * radius * radius\n",
    );
}

/// A workspace whose vectors live in `server`'s Qdrant, and its store.
fn open(
    server: &RealQdrant,
    root: &Path,
    embedder: Arc<dyn Embedder>,
) -> (Workspace, Arc<QdrantStore>) {
    let store = Arc::new(
        QdrantStore::connect(
            &QdrantConfig::new(&server.url),
            root,
            Some(embedder.identity()),
        )
        .unwrap(),
    );
    let mut options = WorkspaceOptions::new(root).with_embedder(embedder);
    options.vector_store = Some(Arc::clone(&store) as Arc<dyn VectorStore>);
    (Workspace::open(options).unwrap(), store)
}

fn semantic(
    workspace: &Workspace,
    query: &str,
    language: Option<Language>,
    glob: Option<&str>,
) -> Vec<lode_index::SearchHit> {
    let mut request = SearchRequest::new(query);
    request.language = language;
    request.path_glob = glob.map(str::to_string);
    workspace
        .search_with_mode(&request, SearchMode::Semantic)
        .unwrap()
}

fn paths(hits: &[lode_index::SearchHit]) -> Vec<&str> {
    hits.iter().map(|h| h.path.as_str()).collect()
}

#[test]
fn a_missing_binary_fails_and_says_where_it_looked() {
    let nowhere = tempfile::tempdir().unwrap();
    let named = nowhere.path().join("qdrant-1.18");
    let error =
        real_server::locate(Some(named.clone().into()), &nowhere.path().join("repo")).unwrap_err();
    assert!(error.contains(&named.display().to_string()), "{error}");
    assert!(error.contains(real_server::BINARY_ENV), "{error}");
    let error = real_server::locate(None, &nowhere.path().join("repo")).unwrap_err();
    assert!(error.contains("(not set)"), "{error}");
    assert!(error.contains("shared/bin/qdrant"), "{error}");
    // A variable naming a missing file fails even where the shared copy exists.
    let shared_root = nowhere.path().join("repo");
    std::fs::create_dir_all(&shared_root).unwrap();
    std::fs::create_dir_all(nowhere.path().join("shared/bin")).unwrap();
    std::fs::write(nowhere.path().join("shared/bin/qdrant"), "").unwrap();
    assert!(real_server::locate(Some(named.clone().into()), &shared_root).is_err());
    assert!(real_server::locate(None, &shared_root).is_ok());
    // The variable wins over the shared copy when it names a file.
    let fake = nowhere.path().join("fake-qdrant");
    std::fs::write(&fake, "").unwrap();
    assert_eq!(
        real_server::locate(Some(fake.clone().into()), &nowhere.path().join("repo")),
        Ok(fake)
    );
}

#[test]
fn full_scenario_against_a_real_qdrant() {
    let server = RealQdrant::start();
    let root = tempfile::tempdir().unwrap();
    let store = scenario::run(&QdrantConfig::new(&server.url), root.path());

    // The collection as Qdrant describes it: 4 dimensions, cosine, the three keyword indexes.
    let collection = store.collection().unwrap();
    let info = rest_get(&server, &format!("/collections/{collection}"));
    assert!(info.contains("\"size\":4"), "{info}");
    assert!(info.contains("\"distance\":\"Cosine\""), "{info}");
    for field in ["path", "language", "dirs"] {
        assert!(
            info.contains(&format!("\"{field}\":{{\"data_type\":\"keyword\"")),
            "no keyword index on {field}: {info}"
        );
    }
}

#[tokio::test]
async fn works_when_called_from_inside_a_tokio_runtime() {
    // The trait is synchronous; lode calls it from async code too (the agent, the ACP server).
    let server = RealQdrant::start();
    let root = tempfile::tempdir().unwrap();
    let identity = scenario::identity(4);
    let store = QdrantStore::connect(
        &QdrantConfig::new(&server.url),
        root.path(),
        Some(&identity),
    )
    .unwrap();
    store.reset(&identity).unwrap();
    store
        .upsert((1..=10).map(scenario::record).collect())
        .unwrap();
    store.commit(3).unwrap();
    assert_eq!(scenario::ids(&store, 2, None, None), vec![1, 2]);
    // Dropping the store (and its runtime) inside a runtime must not panic either.
    drop(store);
}

#[test]
fn a_workspace_indexes_updates_deletes_and_filters_through_a_real_qdrant() {
    let server = RealQdrant::start();
    let root = tempfile::tempdir().unwrap();
    sample_workspace(root.path());
    let embedder = lode_index::default_embedder().unwrap();
    let (workspace, store) = open(&server, root.path(), Arc::clone(&embedder));

    // Index.
    let stats = workspace.refresh(&|_| {}).unwrap();
    assert!(stats.vectors.embedded >= 4, "{stats:?}");
    assert_eq!(store.state().count as u64, stats.total_vectors, "{stats:?}");
    // The embedded store was not used.
    assert!(!root.path().join(".lode/index/vectors").exists());

    // Search, and payload filters by language and by path.
    assert_eq!(
        paths(&semantic(&workspace, "mix two colours", None, None))[0],
        "src/color.py"
    );
    let rust = semantic(&workspace, "area of a circle", Some(Language::Rust), None);
    assert_eq!(paths(&rust)[0], "geometry/shapes.rs", "{rust:?}");
    assert!(rust.iter().all(|h| h.language == "rust"), "{rust:?}");
    let python = semantic(&workspace, "area of a circle", Some(Language::Python), None);
    assert_eq!(paths(&python)[0], "scripts/shapes.py", "{python:?}");
    assert!(python.iter().all(|h| h.language == "python"), "{python:?}");
    // A directory glob (an exact server-side match on `dirs`) and a file glob (client-side).
    let scripts = semantic(&workspace, "area of a circle", None, Some("scripts/**"));
    assert!(!scripts.is_empty());
    assert!(
        scripts.iter().all(|h| h.path.starts_with("scripts/")),
        "{scripts:?}"
    );
    let rs = semantic(&workspace, "mix two colours", None, Some("*.rs"));
    assert!(rs.iter().all(|h| h.path.ends_with(".rs")), "{rs:?}");
    assert!(!paths(&rs).contains(&"src/color.py"));

    // Incremental update: one file changes, only its chunks are embedded again.
    let before = store.entries().unwrap().len();
    write(
        root.path(),
        "src/color.py",
        "def parse_timestamp(text):\n    \"\"\"Parse an ISO 8601 timestamp into seconds since the epoch.\"\"\"\n    return int(text)\n",
    );
    let stats = workspace.refresh(&|_| {}).unwrap();
    assert!(!stats.vectors.reset, "{stats:?}");
    assert!(
        stats.vectors.embedded >= 1 && stats.vectors.embedded < before,
        "{stats:?}"
    );
    assert_eq!(store.state().count as u64, stats.total_vectors);
    assert_eq!(store.entries().unwrap().len() as u64, stats.total_vectors);
    let hits = semantic(&workspace, "parse a timestamp", None, None);
    assert_eq!(hits[0].path, "src/color.py", "{hits:?}");
    assert!(hits[0].snippet.contains("parse_timestamp"), "{hits:?}");

    // Delete: a removed file's vectors leave Qdrant.
    std::fs::remove_file(root.path().join("src/net.rs")).unwrap();
    let stats = workspace.refresh(&|_| {}).unwrap();
    assert!(stats.vectors.deleted >= 1, "{stats:?}");
    assert_eq!(store.state().count as u64, stats.total_vectors);
    assert_eq!(store.entries().unwrap().len() as u64, stats.total_vectors);
    let hits = semantic(&workspace, "open a TCP connection and retry", None, None);
    assert!(!paths(&hits).contains(&"src/net.rs"), "{hits:?}");

    // Another process sees what was published.
    let other = QdrantStore::connect(
        &QdrantConfig::new(&server.url),
        root.path(),
        Some(embedder.identity()),
    )
    .unwrap();
    assert_eq!(other.state(), store.state());
}

/// The built-in table cut to its first 64 dimensions under another name: a different
/// embedder identity (model and dimension) that still ranks sensibly.
struct FirstDimensions {
    inner: Arc<dyn Embedder>,
    identity: EmbedderIdentity,
}

impl FirstDimensions {
    fn new(inner: Arc<dyn Embedder>) -> FirstDimensions {
        let identity = EmbedderIdentity {
            backend: "test".into(),
            model: format!("{}-first-64", inner.identity().model),
            dimension: 64,
        };
        FirstDimensions { inner, identity }
    }
}

impl Embedder for FirstDimensions {
    fn identity(&self) -> &EmbedderIdentity {
        &self.identity
    }

    fn embed_batch(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, EmbedError> {
        let mut vectors = self.inner.embed_batch(texts)?;
        for vector in &mut vectors {
            vector.truncate(64);
        }
        Ok(vectors)
    }
}

#[test]
fn a_changed_embedder_gets_its_own_collection_and_nothing_is_mixed() {
    let server = RealQdrant::start();
    let root = tempfile::tempdir().unwrap();
    sample_workspace(root.path());
    let table = lode_index::default_embedder().unwrap();
    let (workspace, first) = open(&server, root.path(), Arc::clone(&table));
    let stats = workspace.refresh(&|_| {}).unwrap();
    let total = stats.total_vectors;
    let first_state = first.state();
    let first_collection = first.collection().unwrap();
    drop(workspace);

    // The same workspace with another embedder: a fresh collection, everything re-embedded.
    let narrow: Arc<dyn Embedder> = Arc::new(FirstDimensions::new(Arc::clone(&table)));
    let (workspace, second) = open(&server, root.path(), Arc::clone(&narrow));
    let second_collection = second.collection().unwrap();
    assert_ne!(first_collection, second_collection);
    let stats = workspace.refresh(&|_| {}).unwrap();
    assert!(stats.vectors.reset, "{stats:?}");
    assert_eq!(stats.vectors.embedded as u64, total, "{stats:?}");
    assert_eq!(second.state().count as u64, total);
    assert_eq!(
        second.state().identity.as_ref(),
        Some(narrow.identity()),
        "the new collection records the new identity"
    );
    let hits = semantic(&workspace, "mix two colours", None, None);
    assert_eq!(hits[0].path, "src/color.py", "{hits:?}");
    // Not mixed: each collection holds its own dimension, the first one is untouched.
    let info = rest_get(&server, &format!("/collections/{second_collection}"));
    assert!(info.contains("\"size\":64"), "{info}");
    let info = rest_get(&server, &format!("/collections/{first_collection}"));
    assert!(info.contains("\"size\":256"), "{info}");
    let reopened = QdrantStore::connect(
        &QdrantConfig::new(&server.url),
        root.path(),
        Some(table.identity()),
    )
    .unwrap();
    assert_eq!(reopened.state(), first_state);
    let vectors = reopened
        .vectors(
            &reopened
                .entries()
                .unwrap()
                .iter()
                .map(|(id, _)| *id)
                .collect::<Vec<_>>(),
        )
        .unwrap();
    assert_eq!(vectors.len() as u64, total);
    assert!(vectors.iter().all(|(_, v)| v.len() == 256));
    drop(workspace);

    // Back to the first embedder: its collection is used as it was, nothing to re-embed.
    let (workspace, again) = open(&server, root.path(), Arc::clone(&table));
    assert_eq!(again.collection().unwrap(), first_collection);
    let stats = workspace.refresh(&|_| {}).unwrap();
    assert!(!stats.vectors.reset, "{stats:?}");
    assert_eq!(again.state().count as u64, total);
    let hits = semantic(&workspace, "area of a circle", Some(Language::Rust), None);
    assert_eq!(hits[0].path, "geometry/shapes.rs", "{hits:?}");
}

#[test]
fn a_collection_of_that_name_not_made_by_lode_is_recreated() {
    let server = RealQdrant::start();
    let root = tempfile::tempdir().unwrap();
    let identity = scenario::identity(4);
    // A collection of lode's name that lode did not make (another dimension and distance, no
    // metadata point), created with the REST API: lode must not write into it as it is.
    let name =
        lode_qdrant::collection_name("lode", &lode_qdrant::workspace_key(root.path()), &identity);
    let created = rest_put(
        &server,
        &format!("/collections/{name}"),
        r#"{"vectors":{"size":3,"distance":"Dot"}}"#,
    );
    assert!(created.contains("\"result\":true"), "{created}");

    let store = QdrantStore::connect(
        &QdrantConfig::new(&server.url),
        root.path(),
        Some(&identity),
    )
    .unwrap();
    assert_eq!(store.collection().as_deref(), Some(name.as_str()));
    assert_eq!(store.state().identity, None, "not lode's: no identity");
    store.reset(&identity).unwrap();
    store.upsert(vec![scenario::record(1)]).unwrap();
    store.commit(2).unwrap();
    let info = rest_get(&server, &format!("/collections/{name}"));
    assert!(info.contains("\"size\":4"), "{info}");
    assert!(info.contains("\"distance\":\"Cosine\""), "{info}");
    assert_eq!(store.state().count, 1);
}

/// `PUT <path>` with a JSON body on the REST port; returns the answer's body.
fn rest_put(server: &RealQdrant, path: &str, body: &str) -> String {
    use std::io::{Read, Write};
    let mut stream = std::net::TcpStream::connect(("127.0.0.1", server.http_port)).unwrap();
    let request = format!(
        "PUT {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    stream.write_all(request.as_bytes()).unwrap();
    let mut answer = String::new();
    stream.read_to_string(&mut answer).unwrap();
    answer
}

#[test]
fn the_server_killed_mid_run_is_reported_and_nothing_acknowledged_is_lost() {
    let mut server = RealQdrant::start();
    let root = tempfile::tempdir().unwrap();
    let identity = scenario::identity(4);
    let config = QdrantConfig::new(&server.url);
    let store = Arc::new(QdrantStore::connect(&config, root.path(), Some(&identity)).unwrap());
    store.reset(&identity).unwrap();
    store
        .upsert((1..=300).map(scenario::record).collect())
        .unwrap();
    store.commit(1).unwrap();

    // A writer upserts batch after batch; the server is killed while it runs.
    const BATCH: i64 = 100;
    let acknowledged = Arc::new(AtomicUsize::new(0));
    let writer = {
        let store = Arc::clone(&store);
        let acknowledged = Arc::clone(&acknowledged);
        std::thread::spawn(move || {
            for batch in 0..100_000i64 {
                let first = 1_000 + batch * BATCH;
                let records = (first..first + BATCH).map(scenario::record).collect();
                if let Err(error) = store.upsert(records) {
                    return Some(error.to_string());
                }
                acknowledged.store(batch as usize + 1, Ordering::SeqCst);
            }
            None
        })
    };
    while acknowledged.load(Ordering::SeqCst) < 5 {
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    server.kill();
    let failure = writer
        .join()
        .unwrap()
        .expect("the writer saw the server go away");
    eprintln!("the writer's error: {failure}");
    let acked = acknowledged.load(Ordering::SeqCst) as i64;
    eprintln!("{acked} batches of {BATCH} acknowledged before the kill");
    assert!(failure.contains(&server.url), "{failure}");

    // While it is down: every call is a clear error naming the server.
    let error = store
        .search(&scenario::QUERY, 3, &VectorFilter::default())
        .unwrap_err()
        .to_string();
    assert!(error.contains("cannot reach Qdrant"), "{error}");
    assert!(error.contains(&server.url), "{error}");
    let error = store.commit(2).unwrap_err().to_string();
    assert!(error.contains("cannot reach Qdrant"), "{error}");
    assert!(QdrantStore::connect(&config, root.path(), Some(&identity)).is_err());

    // Back on the same storage: the same handle works again and nothing acknowledged is lost.
    server.restart();
    let mut ids: Vec<i64> = store.entries().unwrap().iter().map(|(id, _)| *id).collect();
    ids.sort_unstable();
    let present: std::collections::HashSet<i64> = ids.iter().copied().collect();
    let mut expected: Vec<i64> = (1..=300).collect();
    expected.extend(1_000..1_000 + acked * BATCH);
    let missing: Vec<i64> = expected
        .iter()
        .copied()
        .filter(|id| !present.contains(id))
        .collect();
    assert!(missing.is_empty(), "lost after the restart: {missing:?}");
    // The generation is the last one committed; the batch in flight may or may not be there,
    // which is what a sync repairs from `entries`.
    let reopened = QdrantStore::connect(&config, root.path(), Some(&identity)).unwrap();
    assert_eq!(reopened.state().generation, 1);
    assert_eq!(
        scenario::ids(&store, 3, None, None),
        vec![1, 2, 3],
        "search works again"
    );
    store.commit(2).unwrap();
    assert_eq!(store.state().count, ids.len());
}

#[test]
fn a_workspace_reports_a_dead_server_and_catches_up_after_the_restart() {
    let mut server = RealQdrant::start();
    let root = tempfile::tempdir().unwrap();
    sample_workspace(root.path());
    let embedder = lode_index::default_embedder().unwrap();
    let (workspace, store) = open(&server, root.path(), embedder);
    let stats = workspace.refresh(&|_| {}).unwrap();
    let before: std::collections::HashSet<(i64, u64)> =
        store.entries().unwrap().into_iter().collect();
    assert_eq!(before.len() as u64, stats.total_vectors);

    server.kill();
    // A change made while the server is down: the refresh fails and says why.
    write(
        root.path(),
        "src/queue.rs",
        "/// A bounded queue that drops the oldest message when it is full.\npub struct RingQueue {\n    items: Vec<String>,\n}\n",
    );
    let error = workspace.refresh(&|_| {}).unwrap_err().to_string();
    eprintln!("refresh while Qdrant is down: {error}");
    assert!(error.contains("cannot reach Qdrant"), "{error}");
    let search =
        workspace.search_with_mode(&SearchRequest::new("mix two colours"), SearchMode::Semantic);
    match search {
        Err(error) => {
            let error = error.to_string();
            eprintln!("semantic search while Qdrant is down: {error}");
            assert!(error.contains("cannot reach Qdrant"), "{error}");
        }
        Ok(hits) => panic!("a semantic search answered without its vectors: {hits:?}"),
    }

    server.restart();
    let stats = workspace.refresh(&|_| {}).unwrap();
    eprintln!("refresh after the restart: {stats:?}");
    let after: std::collections::HashSet<(i64, u64)> =
        store.entries().unwrap().into_iter().collect();
    assert_eq!(after.len() as u64, stats.total_vectors);
    assert_eq!(store.state().count as u64, stats.total_vectors);
    let lost: Vec<_> = before.difference(&after).collect();
    assert!(lost.is_empty(), "vectors lost across the crash: {lost:?}");
    let hits = semantic(
        &workspace,
        "bounded queue that drops the oldest message",
        None,
        None,
    );
    assert_eq!(hits[0].path, "src/queue.rs", "{hits:?}");
    assert_eq!(
        paths(&semantic(&workspace, "mix two colours", None, None))[0],
        "src/color.py"
    );
}
