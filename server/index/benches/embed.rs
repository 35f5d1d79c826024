//! Static embedder throughput, one thread: chunks/s and MB/s over real chunk texts.
//!
//! `cargo bench -p lode-index --bench embed [-- CATALOG.sqlite]`. The chunks come from a lode
//! catalog (default: the benchmark corpus `bench/corpus/rust-vendor/.lode/index/catalog.sqlite`,
//! every 10th chunk, at most 50,000), embedded with the same text lode builds for the index.
//!
//! `-- --minilm [CATALOG.sqlite]`: the MiniLM embedder instead (weights from
//! `$LODE_MINILM_DIR`), on the first 512 of those chunks, batches spread over every core as
//! `lode index` does; one run (it is slow).

#[path = "support/mod.rs"]
mod support;

use std::time::Instant;

use lode_index::{ChunkContext, Embedder, StaticEmbedder, chunk_embedding_text};
#[cfg(feature = "minilm")]
use rayon::prelude::*;

fn main() {
    let Some(conn) = support::corpus::open_catalog() else {
        return;
    };
    let mut statement = conn
        .prepare(
            "SELECT f.path, f.language, c.scope, c.symbol, c.text FROM chunks c JOIN files f ON f.id = c.file_id
             WHERE c.id % 10 = 0 LIMIT 50000",
        )
        .expect("query the catalog");
    let texts: Vec<String> = statement
        .query_map([], |row| {
            let path: String = row.get(0)?;
            let language: String = row.get(1)?;
            let scope: String = row.get(2)?;
            let symbol: Option<String> = row.get(3)?;
            let text: String = row.get(4)?;
            let scope: Vec<String> = scope
                .split('\u{1f}')
                .filter(|s| !s.is_empty())
                .map(String::from)
                .collect();
            Ok(chunk_embedding_text(
                &ChunkContext {
                    path: &path,
                    language: &language,
                    scope: &scope,
                    symbol: symbol.as_deref(),
                    imports: &[],
                    text: &text,
                },
                false,
            ))
        })
        .expect("read chunks")
        .collect::<Result<_, _>>()
        .expect("read chunks");
    if texts.is_empty() {
        eprintln!("the catalog has no chunks");
        return;
    }
    if std::env::args().any(|arg| arg == "--minilm") {
        minilm(&texts);
        return;
    }
    let bytes: usize = texts.iter().map(String::len).sum();
    let embedder = StaticEmbedder::builtin().expect("the built-in table loads");
    let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
    let mut best = f64::MAX;
    for _ in 0..3 {
        let started = Instant::now();
        for batch in refs.chunks(embedder.batch_size()) {
            std::hint::black_box(embedder.embed_batch(batch).expect("embed"));
        }
        best = best.min(started.elapsed().as_secs_f64());
    }
    println!(
        "static embedder, one thread: {} chunks ({:.1} MB) in {:.3}s: {:.0} chunks/s, {:.1} MB/s (best of 3; target >= 50,000 chunks/s)",
        texts.len(),
        bytes as f64 / 1e6,
        best,
        texts.len() as f64 / best,
        bytes as f64 / 1e6 / best
    );
}

#[cfg(feature = "minilm")]
fn minilm(texts: &[String]) {
    let Some(dir) = std::env::var_os("LODE_MINILM_DIR") else {
        eprintln!(
            "--minilm needs $LODE_MINILM_DIR (scripts/install-test-tools.sh fills target/test-tools/minilm)"
        );
        return;
    };
    let embedder = lode_index::MiniLmEmbedder::from_dir(std::path::Path::new(&dir))
        .expect("the MiniLM model loads");
    let refs: Vec<&str> = texts.iter().take(512).map(String::as_str).collect();
    let tokens: usize = refs
        .iter()
        .map(|text| embedder.token_ids(text).expect("tokenize").len())
        .sum();
    let started = Instant::now();
    let vectors: Vec<Vec<Vec<f32>>> = refs
        .par_chunks(embedder.batch_size())
        .map(|batch| embedder.embed_batch(batch).expect("embed"))
        .collect();
    let seconds = started.elapsed().as_secs_f64();
    std::hint::black_box(vectors);
    println!(
        "minilm embedder, {} threads: {} chunks ({:.0} tokens each on average, at most 256) in {:.1}s: {:.1} chunks/s",
        rayon::current_num_threads(),
        refs.len(),
        tokens as f64 / refs.len() as f64,
        seconds,
        refs.len() as f64 / seconds
    );
}

#[cfg(not(feature = "minilm"))]
fn minilm(_: &[String]) {
    eprintln!("lode-index was built without the minilm feature");
}
