//! One scenario through the `VectorStore` API only, run against a real Qdrant
//! (`real_qdrant.rs`) and against the stand-in server (`standin_server.rs`).

#![allow(dead_code)]

use std::path::Path;

use lode_index::{EmbedderIdentity, VectorError, VectorFilter, VectorRecord, VectorStore};
use lode_qdrant::{QdrantConfig, QdrantStore};

pub const RECORDS: i64 = 600;

pub fn identity(dimension: usize) -> EmbedderIdentity {
    EmbedderIdentity {
        backend: "test".into(),
        model: "angles".into(),
        dimension,
    }
}

/// Record `id`: a unit vector at angle `id` milliradians from the x axis, so the query
/// `[1, 0, 0, 0]` ranks ids in increasing order. Paths and languages cycle over three files.
pub fn record(id: i64) -> VectorRecord {
    let angle = id as f32 * 0.001;
    let (path, language) = match id % 3 {
        0 => (format!("src/a/f{id}.rs"), "rust"),
        1 => (format!("src/b/g{id}.py"), "python"),
        _ => (format!("docs/h{id}.md"), "markdown"),
    };
    VectorRecord {
        id,
        content_hash: 0xdead_beef_0000_0000 ^ id as u64,
        path,
        language: language.into(),
        vector: vec![angle.cos(), angle.sin(), 0.0, 0.0],
    }
}

pub const QUERY: [f32; 4] = [1.0, 0.0, 0.0, 0.0];

pub fn ids(store: &QdrantStore, k: usize, language: Option<&str>, glob: Option<&str>) -> Vec<i64> {
    let filter = VectorFilter {
        language: language.map(str::to_string),
        path_glob: glob.map(str::to_string),
    };
    store
        .search(&QUERY, k, &filter)
        .unwrap()
        .into_iter()
        .map(|hit| hit.id)
        .collect()
}

/// The full round trip; returns the store for backend-specific checks.
pub fn run(config: &QdrantConfig, root: &Path) -> QdrantStore {
    let id4 = identity(4);
    let store = QdrantStore::connect(config, root, Some(&id4)).unwrap();
    assert_eq!(store.backend(), "qdrant");
    let state = store.state();
    assert_eq!(
        (state.identity, state.generation, state.count),
        (None, 0, 0)
    );
    assert!(store.entries().unwrap().is_empty());
    assert!(matches!(
        store.upsert(vec![record(1)]),
        Err(VectorError::NoIdentity)
    ));

    assert!(matches!(store.commit(1), Err(VectorError::NoIdentity)));
    store.delete(&[1]).unwrap();
    assert!(
        store
            .search(&QUERY, 3, &VectorFilter::default())
            .unwrap()
            .is_empty()
    );

    store.reset(&id4).unwrap();
    assert_eq!(store.state().identity.as_ref(), Some(&id4));
    let wrong = VectorRecord {
        vector: vec![1.0; 3],
        ..record(1)
    };
    assert!(matches!(
        store.upsert(vec![wrong]),
        Err(VectorError::Dimension {
            expected: 4,
            found: 3
        })
    ));

    store.upsert((1..=RECORDS).map(record).collect()).unwrap();
    store.commit(7).unwrap();
    let state = store.state();
    assert_eq!((state.generation, state.count), (7, RECORDS as usize));

    let mut entries = store.entries().unwrap();
    entries.sort();
    let expected: Vec<(i64, u64)> = (1..=RECORDS)
        .map(|id| (id, record(id).content_hash))
        .collect();
    assert_eq!(entries, expected, "ids and content hashes round-trip");

    let mut vectors = store.vectors(&[2, 1, 999_999]).unwrap();
    vectors.sort_by_key(|(id, _)| *id);
    assert_eq!(vectors.len(), 2, "unknown ids are skipped");
    for (id, vector) in &vectors {
        let original = record(*id).vector;
        for (a, b) in vector.iter().zip(&original) {
            assert!(
                (a - b).abs() < 1e-5,
                "vector of {id}: {vector:?} vs {original:?}"
            );
        }
    }

    assert_eq!(ids(&store, 5, None, None), vec![1, 2, 3, 4, 5]);
    let hits = store.search(&QUERY, 2, &VectorFilter::default()).unwrap();
    assert!(hits[0].score >= hits[1].score && hits[0].score > 0.99);
    assert_eq!(ids(&store, 3, Some("python"), None), vec![1, 4, 7]);
    assert_eq!(ids(&store, 3, Some("go"), None), Vec::<i64>::new());
    // A directory glob (server-side `dirs` match) and globs Qdrant cannot match (client-side).
    assert_eq!(ids(&store, 3, None, Some("src/a/")), vec![3, 6, 9]);
    assert_eq!(ids(&store, 3, None, Some("src/a/**")), vec![3, 6, 9]);
    assert_eq!(ids(&store, 3, None, Some("*.md")), vec![2, 5, 8]);
    assert_eq!(ids(&store, 3, None, Some("src/**/*.py")), vec![1, 4, 7]);
    assert_eq!(ids(&store, 2, Some("rust"), Some("src/**")), vec![3, 6]);
    assert_eq!(
        ids(&store, 2, Some("rust"), Some("*.py")),
        Vec::<i64>::new()
    );
    // Deep in the ranking: more than one oversampled page must be read.
    let last = RECORDS - RECORDS % 3;
    assert_eq!(
        ids(&store, 1, None, Some(&format!("f{last}.rs"))),
        vec![last]
    );
    assert_eq!(
        ids(&store, 3, None, Some("nowhere/**/*.zz")),
        Vec::<i64>::new()
    );
    assert!(matches!(
        store.search(
            &QUERY,
            3,
            &VectorFilter {
                language: None,
                path_glob: Some("a[".into())
            }
        ),
        Err(VectorError::Glob { .. })
    ));
    assert!(matches!(
        store.search(&[1.0, 0.0], 3, &VectorFilter::default()),
        Err(VectorError::Dimension { .. })
    ));

    store.delete(&[1, 2, 3, 123_456]).unwrap();
    assert_eq!(ids(&store, 3, None, None), vec![4, 5, 6]);
    store.commit(8).unwrap();
    assert_eq!(store.state().count, RECORDS as usize - 3);

    // A second handle (another process) sees what was published.
    let other = QdrantStore::connect(config, root, Some(&id4)).unwrap();
    let state = other.state();
    assert_eq!(
        (state.identity.as_ref(), state.generation, state.count),
        (Some(&id4), 8, RECORDS as usize - 3)
    );
    assert_eq!(other.collection(), store.collection());

    // Writes without a commit (a crash mid-sync): the generation still says 8, the entries
    // say what is really there, which is what the sync repairs from.
    store.upsert(vec![record(1000)]).unwrap();
    other.reload().unwrap();
    assert_eq!(other.state().generation, 8);
    assert!(other.entries().unwrap().iter().any(|(id, _)| *id == 1000));

    // Another embedder lives in another collection.
    let id8 = identity(8);
    let eight = QdrantStore::connect(config, root, Some(&id8)).unwrap();
    assert_ne!(eight.collection(), store.collection());
    assert_eq!(eight.state().identity, None);

    // Reset empties the collection and starts over.
    store.reset(&id4).unwrap();
    assert!(store.entries().unwrap().is_empty());
    assert_eq!(ids(&store, 3, None, None), Vec::<i64>::new());
    store.commit(9).unwrap();
    let state = store.state();
    assert_eq!((state.generation, state.count), (9, 0));
    store
}
