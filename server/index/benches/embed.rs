//! Static embedder throughput, one thread: chunks/s and MB/s over real chunk texts.
//!
//! `cargo bench -p lode-index --bench embed [-- CATALOG.sqlite]`. The chunks come from a lode
//! catalog (default: the benchmark corpus `bench/corpus/rust-vendor/.lode/index/catalog.sqlite`,
//! every 10th chunk, at most 50,000), embedded with the same text lode builds for the index.

use std::path::PathBuf;
use std::time::Instant;

use lode_index::embed::{ChunkContext, Embedder, StaticEmbedder, chunk_embedding_text};

fn main() {
    let catalog = std::env::args()
        .skip(1)
        .find(|arg| !arg.starts_with('-'))
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            PathBuf::from(env!("CARGO_MANIFEST_DIR"))
                .join("../../bench/corpus/rust-vendor/.lode/index/catalog.sqlite")
        });
    let Ok(conn) =
        rusqlite::Connection::open_with_flags(&catalog, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY)
    else {
        eprintln!(
            "no catalog at {}: run `lode index bench/corpus/rust-vendor` first",
            catalog.display()
        );
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
