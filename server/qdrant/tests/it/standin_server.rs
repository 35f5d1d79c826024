//! `QdrantStore` through the real `qdrant-client` against the STAND-IN server, for what a real
//! Qdrant cannot do on demand or does not show: injected error statuses (in the middle of a
//! multi-batch upsert, on a search, a refused key mid-run) and the requests themselves (batch
//! sizes, the `api-key` header of every call). The behaviour of the store against a real
//! server is tested in `real_qdrant.rs`.

use crate::scenario;
use crate::standin;

use lode_index::{VectorFilter, VectorStore};
use lode_qdrant::{QdrantConfig, QdrantStore, UPSERT_BATCH};
use qdrant_client::qdrant::{Distance, FieldType};
use standin::{Fault, StandIn};

#[test]
fn the_requests_of_the_full_scenario() {
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

/// A store with a fresh 4-dimension collection on `server`.
fn fresh_store(server: &StandIn, root: &std::path::Path) -> QdrantStore {
    let identity = scenario::identity(4);
    let store =
        QdrantStore::connect(&QdrantConfig::new(&server.url), root, Some(&identity)).unwrap();
    store.reset(&identity).unwrap();
    store
}

/// Makes every request after the next `allowed` ones fail with `code`.
fn inject(server: &StandIn, allowed: usize, code: tonic::Code, message: &str) {
    let mut db = server.db.lock().unwrap();
    let after = db.api_keys.len() + allowed;
    db.fault = Some(Fault {
        after,
        code,
        message: message.into(),
    });
}

#[test]
fn a_failure_in_the_middle_of_an_upsert_is_reported_and_a_retry_completes_it() {
    let server = StandIn::start(None);
    let root = tempfile::tempdir().unwrap();
    let store = fresh_store(&server, root.path());
    let collection = store.collection().unwrap();
    store.commit(1).unwrap();
    // The first batch of 256 goes through, the second is refused.
    inject(&server, 1, tonic::Code::Internal, "injected: disk full");
    let error = store
        .upsert((1..=600).map(scenario::record).collect())
        .unwrap_err()
        .to_string();
    assert!(error.contains("injected: disk full"), "{error}");
    assert!(error.contains("upsert"), "{error}");
    assert!(error.contains(&server.url), "{error}");
    assert_eq!(
        server.point_count(&collection),
        Some(1 + UPSERT_BATCH),
        "one batch landed before the fault"
    );
    assert_eq!(store.state().generation, 1, "nothing was published");

    // Healed: the same upsert again (what a sync does from `entries`) completes it.
    server.db.lock().unwrap().fault = None;
    store
        .upsert((1..=600).map(scenario::record).collect())
        .unwrap();
    store.commit(2).unwrap();
    assert_eq!(store.state().count, 600);
    assert_eq!(server.point_count(&collection), Some(601));
}

#[test]
fn error_statuses_on_search_and_commit_are_clear() {
    let server = StandIn::start(None);
    let root = tempfile::tempdir().unwrap();
    let store = fresh_store(&server, root.path());
    store
        .upsert((1..=10).map(scenario::record).collect())
        .unwrap();
    store.commit(1).unwrap();

    inject(&server, 0, tonic::Code::Unauthenticated, "key revoked");
    let error = store
        .search(&scenario::QUERY, 3, &VectorFilter::default())
        .unwrap_err()
        .to_string();
    assert!(error.contains("check the API key"), "{error}");

    inject(&server, 0, tonic::Code::Unavailable, "shutting down");
    let error = store.commit(2).unwrap_err().to_string();
    assert!(error.contains("cannot reach Qdrant"), "{error}");
    assert_eq!(store.state().generation, 1);

    inject(
        &server,
        0,
        tonic::Code::InvalidArgument,
        "Wrong input: bad vector",
    );
    let error = store.delete(&[1]).unwrap_err().to_string();
    assert!(error.contains("Wrong input: bad vector"), "{error}");
    assert!(error.contains("delete"), "{error}");

    server.db.lock().unwrap().fault = None;
    assert_eq!(scenario::ids(&store, 3, None, None), vec![1, 2, 3]);
}
