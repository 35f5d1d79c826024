//! `QdrantStore` through the real `qdrant-client` against a STAND-IN Qdrant server.
//!
//! No Qdrant server can be installed on the machines these tests run on, so `standin/` serves
//! the gRPC `Collections` and `Points` services that `qdrant-client` itself exports, over
//! 127.0.0.1, with an exact in-memory implementation of the calls the store makes. The same
//! scenario runs against a real Qdrant in `real_qdrant.rs` when `QDRANT_URL` is set.

mod scenario;
mod standin;

use std::sync::Arc;

use lode_index::vectors::{VectorFilter, VectorStore};
use lode_index::{SearchMode, SearchRequest, Workspace, WorkspaceOptions};
use lode_qdrant::{QdrantConfig, QdrantStore, UPSERT_BATCH};
use qdrant_client::qdrant::{Distance, FieldType};
use standin::StandIn;

#[test]
fn full_scenario_against_the_stand_in() {
    let server = StandIn::start(None);
    let root = tempfile::tempdir().unwrap();
    let store = scenario::run(&QdrantConfig::new(&server.url), root.path());

    let collection = store.collection().unwrap();
    let db = server.db.lock().unwrap();
    let stored = &db.collections[&collection];
    assert_eq!(stored.dimension, 4);
    assert_eq!(stored.distance, Distance::Cosine as i32);
    let mut indexes = stored.indexes.clone();
    indexes.sort();
    let keyword = FieldType::Keyword as i32;
    assert_eq!(
        indexes,
        vec![
            ("dirs".to_string(), keyword),
            ("language".to_string(), keyword),
            ("path".to_string(), keyword),
        ]
    );
    // 600 records went out as full batches of 256 and one remainder (the 1-point upserts
    // around them are the metadata point).
    let chunk_upserts: Vec<usize> = db.upsert_sizes.iter().copied().filter(|&n| n > 1).collect();
    assert_eq!(
        chunk_upserts,
        vec![UPSERT_BATCH, UPSERT_BATCH, 600 - 2 * UPSERT_BATCH]
    );
    assert!(db.api_keys.iter().all(Option::is_none));
    drop(db);
    // After the final reset only the metadata point is left.
    assert_eq!(server.point_count(&collection), Some(1));
}

#[test]
fn api_key_is_sent_and_a_wrong_one_is_a_clear_error() {
    let server = StandIn::start(Some("s3cret"));
    let root = tempfile::tempdir().unwrap();
    let identity = scenario::identity(4);

    let refused = QdrantStore::connect(
        &QdrantConfig::new(&server.url),
        root.path(),
        Some(&identity),
    )
    .err()
    .expect("a missing key is refused");
    let message = refused.to_string();
    assert!(message.contains("check the API key"), "{message}");
    assert!(message.contains(&server.url), "{message}");

    let wrong = QdrantConfig::new(&server.url).with_api_key(Some("guess".into()));
    assert!(QdrantStore::connect(&wrong, root.path(), Some(&identity)).is_err());

    let config = QdrantConfig::new(&server.url).with_api_key(Some("s3cret".into()));
    let store = QdrantStore::connect(&config, root.path(), Some(&identity)).unwrap();
    store.reset(&identity).unwrap();
    store.upsert(vec![scenario::record(1)]).unwrap();
    store.commit(1).unwrap();
    assert_eq!(store.state().count, 1);
    let keys = server.db.lock().unwrap().api_keys.clone();
    assert_eq!(keys[0], None);
    assert_eq!(keys[1].as_deref(), Some("guess"));
    assert!(keys[2..].iter().all(|k| k.as_deref() == Some("s3cret")));
}

#[test]
fn unreachable_server_is_a_clear_error() {
    // A port that was free a moment ago: nothing listens there.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let url = format!("http://127.0.0.1:{port}");
    let root = tempfile::tempdir().unwrap();
    let error = QdrantStore::connect(
        &QdrantConfig::new(&url),
        root.path(),
        Some(&scenario::identity(4)),
    )
    .err()
    .expect("nothing listens there");
    let message = error.to_string();
    assert!(message.contains("cannot reach Qdrant"), "{message}");
    assert!(message.contains(&url), "{message}");
}

#[test]
fn malformed_url_is_a_clear_error() {
    let root = tempfile::tempdir().unwrap();
    let error = QdrantStore::connect(&QdrantConfig::new("not a url"), root.path(), None)
        .err()
        .expect("not a URL");
    assert!(error.to_string().contains("not a url"), "{error}");
}

#[tokio::test]
async fn works_when_called_from_inside_a_tokio_runtime() {
    // The trait is synchronous; lode calls it from async code too (the agent, the ACP server).
    let server = StandIn::start(None);
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
    let hits = store
        .search(&scenario::QUERY, 2, &VectorFilter::default())
        .unwrap();
    assert_eq!(hits.iter().map(|h| h.id).collect::<Vec<_>>(), vec![1, 2]);
    // Dropping the store (and its runtime) inside a runtime must not panic either.
    drop(store);
}

#[test]
fn a_workspace_indexes_and_searches_through_qdrant() {
    let server = StandIn::start(None);
    let root = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(root.path().join("src")).unwrap();
    std::fs::write(
        root.path().join("src/net.rs"),
        "/// Opens a TCP connection to the server and retries on failure.\npub fn connect_with_retries(host: &str) -> u32 {\n    host.len() as u32\n}\n",
    )
    .unwrap();
    std::fs::write(
        root.path().join("src/color.py"),
        "def blend_colors(first, second):\n    \"\"\"Mix two RGB colours half and half.\"\"\"\n    return [(a + b) / 2 for a, b in zip(first, second)]\n",
    )
    .unwrap();
    let embedder = lode_index::embed::default_embedder().unwrap();
    let store = QdrantStore::connect(
        &QdrantConfig::new(&server.url),
        root.path(),
        Some(embedder.identity()),
    )
    .unwrap();
    let collection = store.collection().unwrap();
    let mut options = WorkspaceOptions::new(root.path()).with_embedder(Arc::clone(&embedder));
    options.vector_store = Some(Arc::new(store));
    let workspace = Workspace::open(options).unwrap();
    let stats = workspace.refresh(&|_| {}).unwrap();
    assert!(stats.vectors.embedded >= 2, "{stats:?}");
    assert!(workspace.has_vectors());
    // Every chunk is in the stand-in, plus the metadata point.
    assert_eq!(
        server.point_count(&collection),
        Some(stats.total_vectors as usize + 1)
    );

    let mut request = SearchRequest::new("mix two colours");
    request.limit = 1;
    let hits = workspace
        .search_with_mode(&request, SearchMode::Semantic)
        .unwrap();
    assert_eq!(hits[0].path, "src/color.py");
    let mut request = SearchRequest::new("open a network connection");
    request.limit = 1;
    let hits = workspace
        .search_with_mode(&request, SearchMode::Semantic)
        .unwrap();
    assert_eq!(hits[0].path, "src/net.rs");

    // Removing a file deletes its vectors from Qdrant on the next refresh.
    std::fs::remove_file(root.path().join("src/net.rs")).unwrap();
    let stats = workspace.refresh(&|_| {}).unwrap();
    assert!(stats.vectors.deleted >= 1, "{stats:?}");
    assert_eq!(
        server.point_count(&collection),
        Some(stats.total_vectors as usize + 1)
    );
}

/// A figure, not a check: upsert and search throughput of the store against the STAND-IN
/// server (in-memory, brute force), so it measures the client, gRPC and the bridge, not Qdrant.
/// Run with `cargo test -p lode-qdrant --release --test standin_server -- --ignored --nocapture`.
#[test]
#[ignore]
fn throughput_against_the_stand_in() {
    let server = StandIn::start(None);
    let root = tempfile::tempdir().unwrap();
    let dimension = 256;
    let identity = scenario::identity(dimension);
    let store = QdrantStore::connect(
        &QdrantConfig::new(&server.url),
        root.path(),
        Some(&identity),
    )
    .unwrap();
    store.reset(&identity).unwrap();
    let count = 20_000;
    let records: Vec<_> = (1..=count)
        .map(|id| {
            let mut record = scenario::record(id);
            record.vector = (0..dimension)
                .map(|i| ((id as usize * 31 + i * 7) % 97) as f32 - 48.0)
                .collect();
            record
        })
        .collect();
    let started = std::time::Instant::now();
    store.upsert(records).unwrap();
    store.commit(1).unwrap();
    let upsert = started.elapsed();
    let query: Vec<f32> = (0..dimension).map(|i| (i % 5) as f32).collect();
    let started = std::time::Instant::now();
    for _ in 0..20 {
        store.search(&query, 10, &VectorFilter::default()).unwrap();
    }
    let search = started.elapsed() / 20;
    eprintln!(
        "stand-in: {count} points x {dimension} dims upserted in {upsert:?} ({:.0} points/s); search k=10 over them {search:?}",
        count as f64 / upsert.as_secs_f64()
    );
    assert_eq!(store.state().count, count as usize);
}

#[test]
fn a_collection_without_lode_metadata_is_recreated() {
    let server = StandIn::start(None);
    let root = tempfile::tempdir().unwrap();
    let identity = scenario::identity(4);
    let name =
        lode_qdrant::collection_name("lode", &lode_qdrant::workspace_key(root.path()), &identity);
    // A collection of that name that lode did not write (no metadata point, other dimension).
    server
        .db
        .lock()
        .unwrap()
        .collections
        .insert(name.clone(), standin::Collection::empty(3));
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
    assert_eq!(server.db.lock().unwrap().collections[&name].dimension, 4);
    assert_eq!(server.point_count(&name), Some(2));
}
