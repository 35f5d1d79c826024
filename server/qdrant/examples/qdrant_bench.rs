//! The Qdrant vector store against the embedded one, on the same vectors, in one invocation:
//! upsert throughput (upsert + commit), Qdrant's indexing time after it, per-query latency
//! (median, p95) and recall@k of both against an exact f32 search. `bench/qdrant.sh` runs it.
//!
//! `cargo run -p lode-qdrant --example qdrant_bench -- [OPTIONS] [VECTORS_DIR]`
//!
//! VECTORS_DIR (default `bench/corpus/rust-vendor/.lode/index/vectors`, built by `lode index`)
//! is an embedded store: its vectors are the data. `--points N` (default 100000; 0 = all)
//! takes an even sample of its rows by chunk id. The records get synthetic paths (the store
//! keeps paths in a table this benchmark does not read) of a realistic length, language `rust`.
//!
//! Queries: the lines of `bench/search-queries.txt`, then an even sample of the retrieval
//! suites' queries (`bench/out/retrieval*-queries.jsonl`) up to `--queries N` (default 200),
//! embedded with the built-in table; stored vectors of the sample make up the rest when those
//! files are missing. Each query is searched in both stores, interleaved, `--runs N` times
//! (default 3) after a warm-up; its median is kept. `--k K` (default 10). The real Qdrant
//! binary is found and started like in the tests (`tests/it/real_server/mod.rs`:
//! `$LODE_QDRANT_BIN` or `../shared/bin/qdrant`). `--json PATH` (default `bench/out/qdrant.json`).

#[path = "../tests/it/real_server/mod.rs"]
mod real_server;

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use lode_index::{
    EmbeddedStore, Embedder, StaticEmbedder, VectorFilter, VectorHit, VectorRecord, VectorStore,
};
use lode_qdrant::{QdrantConfig, QdrantStore};
use qdrant_client::qdrant::point_id::PointIdOptions;
use qdrant_client::qdrant::{Query, QueryPointsBuilder, SearchParams, SearchParamsBuilder};
use real_server::{RealQdrant, rest_get};

struct Args {
    dir: PathBuf,
    points: usize,
    queries: usize,
    k: usize,
    runs: usize,
    json: PathBuf,
    /// How this binary was built, for the table (`bench/qdrant.sh` says).
    build: Option<String>,
}

fn bench_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../bench")
}

fn parse_args() -> Args {
    let mut args = Args {
        dir: bench_dir().join("corpus/rust-vendor/.lode/index/vectors"),
        points: 100_000,
        queries: 200,
        k: 10,
        runs: 3,
        json: bench_dir().join("out/qdrant.json"),
        build: None,
    };
    let mut it = std::env::args().skip(1);
    while let Some(arg) = it.next() {
        let mut value = |name: &str| it.next().unwrap_or_else(|| panic!("{name} needs a value"));
        match arg.as_str() {
            "--points" => args.points = value("--points").parse().expect("--points N"),
            "--queries" => args.queries = value("--queries").parse().expect("--queries N"),
            "--k" => args.k = value("--k").parse().expect("--k K"),
            "--runs" => args.runs = value("--runs").parse::<usize>().expect("--runs N").max(1),
            "--json" => args.json = PathBuf::from(value("--json")),
            "--build" => args.build = Some(value("--build")),
            other if !other.starts_with('-') => args.dir = PathBuf::from(other),
            other => panic!("unknown option {other}"),
        }
    }
    args
}

/// The query texts: search-queries.txt, then an even sample of the retrieval suites'.
fn query_texts(count: usize) -> Vec<String> {
    let mut texts: Vec<String> = std::fs::read_to_string(bench_dir().join("search-queries.txt"))
        .unwrap_or_default()
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .map(String::from)
        .collect();
    let mut suite: Vec<String> = Vec::new();
    for file in [
        "out/retrieval-queries.jsonl",
        "out/retrieval-large-queries.jsonl",
    ] {
        let text = std::fs::read_to_string(bench_dir().join(file)).unwrap_or_default();
        suite.extend(text.lines().filter_map(|line| {
            let value: serde_json::Value = serde_json::from_str(line).ok()?;
            Some(value.get("query")?.as_str()?.to_string())
        }));
    }
    let wanted = count.saturating_sub(texts.len());
    if wanted > 0 && !suite.is_empty() {
        let step = (suite.len() as f64 / wanted as f64).max(1.0);
        texts.extend(
            (0..wanted.min(suite.len())).map(|i| suite[(i as f64 * step) as usize].clone()),
        );
    }
    texts.truncate(count);
    texts
}

fn percentile(sorted: &[f64], p: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    sorted[(p * (sorted.len() - 1) as f64).round() as usize]
}

fn median_p95(mut ms: Vec<f64>) -> (f64, f64) {
    ms.sort_by(f64::total_cmp);
    (percentile(&ms, 0.5), percentile(&ms, 0.95))
}

/// Recall@k against the exact top k, counting ties: a hit counts when its exact cosine is at
/// least the k-th best exact score (the corpus holds identical chunks, whose equal scores the
/// stores may order differently).
fn recall(
    hits: &[VectorHit],
    exact: &Exact,
    vectors: &HashMap<i64, Vec<f32>>,
    query: &[f32],
) -> f64 {
    if exact.ids.is_empty() {
        return 1.0;
    }
    let query = normalized(query);
    let found = hits
        .iter()
        .take(exact.ids.len())
        .filter(|hit| {
            vectors
                .get(&hit.id)
                .is_some_and(|v| dot(v, &query) >= exact.kth - 1e-5)
        })
        .count();
    found as f64 / exact.ids.len() as f64
}

/// The exact top k of one query: ids and the k-th best score.
struct Exact {
    ids: Vec<i64>,
    kth: f32,
}

fn dot(a: &[f32], b: &[f32]) -> f32 {
    a.iter().zip(b).map(|(x, y)| x * y).sum()
}

fn normalized(vector: &[f32]) -> Vec<f32> {
    let norm = vector.iter().map(|x| x * x).sum::<f32>().sqrt().max(1e-12);
    vector.iter().map(|x| x / norm).collect()
}

/// The exact top `k` by cosine over every record (stored normalized).
fn exact_top(records: &HashMap<i64, Vec<f32>>, query: &[f32], k: usize) -> Exact {
    let query = normalized(query);
    let mut scored: Vec<(f32, i64)> = records
        .iter()
        .map(|(id, v)| (dot(v, &query), *id))
        .collect();
    let k = k.min(scored.len());
    if k == 0 {
        return Exact {
            ids: Vec::new(),
            kth: f32::INFINITY,
        };
    }
    scored.select_nth_unstable_by(k - 1, |a, b| b.0.total_cmp(&a.0));
    scored.truncate(k);
    scored.sort_by(|a, b| b.0.total_cmp(&a.0));
    Exact {
        kth: scored[k - 1].0,
        ids: scored.into_iter().map(|(_, id)| id).collect(),
    }
}

/// Bytes under `dir`.
fn disk_bytes(dir: &Path) -> u64 {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return 0;
    };
    entries
        .flatten()
        .map(|entry| match entry.metadata() {
            Ok(meta) if meta.is_dir() => disk_bytes(&entry.path()),
            Ok(meta) => meta.len(),
            Err(_) => 0,
        })
        .sum()
}

/// A number field of a REST answer (`"name":123`).
fn json_number(text: &str, name: &str) -> Option<u64> {
    let after = text.split_once(&format!("\"{name}\":"))?.1;
    after
        .chars()
        .take_while(char::is_ascii_digit)
        .collect::<String>()
        .parse()
        .ok()
}

/// Waits until Qdrant's optimizers are done with `collection` (status green and the indexed
/// vector count steady for a second); returns how long that took and the counts.
fn wait_indexed(server: &RealQdrant, collection: &str) -> (Duration, u64, u64) {
    let started = Instant::now();
    let mut last = None;
    loop {
        let info = rest_get(server, &format!("/collections/{collection}"));
        let green = info.contains("\"status\":\"green\"");
        let indexed = json_number(&info, "indexed_vectors_count").unwrap_or(0);
        let points = json_number(&info, "points_count").unwrap_or(0);
        if green && last == Some(indexed) {
            return (
                started.elapsed().saturating_sub(Duration::from_secs(1)),
                indexed,
                points,
            );
        }
        last = green.then_some(indexed);
        if started.elapsed() > Duration::from_secs(3600) {
            panic!("Qdrant did not finish indexing within an hour: {info}");
        }
        std::thread::sleep(Duration::from_secs(1));
    }
}

fn main() {
    let args = parse_args();
    let profile = args.build.clone().unwrap_or_else(|| {
        if cfg!(debug_assertions) {
            "debug".into()
        } else {
            "release".into()
        }
    });
    let source = match EmbeddedStore::open(&args.dir) {
        Ok(store) => store,
        Err(error) => {
            eprintln!(
                "cannot open the vector store {}: {error}\nbuild it with `lode index bench/corpus/rust-vendor`",
                args.dir.display()
            );
            std::process::exit(1);
        }
    };
    let Some(identity) = source.state().identity.clone() else {
        eprintln!(
            "the store at {} is empty: run `lode index` on its workspace",
            args.dir.display()
        );
        std::process::exit(1);
    };

    // The sample: an even spread of the store's rows by chunk id.
    let mut ids: Vec<i64> = source
        .entries()
        .expect("read the store")
        .into_iter()
        .map(|(id, _)| id)
        .collect();
    ids.sort_unstable();
    let total = ids.len();
    if args.points > 0 && args.points < total {
        let step = total as f64 / args.points as f64;
        ids = (0..args.points)
            .map(|i| ids[(i as f64 * step) as usize])
            .collect();
    }
    let started = Instant::now();
    let mut sample: Vec<(i64, Vec<f32>)> = Vec::with_capacity(ids.len());
    for batch in ids.chunks(8192) {
        sample.extend(source.vectors(batch).expect("read vectors"));
    }
    sample.sort_by_key(|(id, _)| *id);
    drop(source);
    let n = sample.len();
    let dims = identity.dimension;
    println!(
        "{n} of {total} vectors × {dims} dims ({identity}) from {} read in {:.1} s; build: {profile}",
        args.dir.display(),
        started.elapsed().as_secs_f64()
    );
    let records: Vec<VectorRecord> = sample
        .iter()
        .map(|(id, vector)| VectorRecord {
            id: *id,
            content_hash: *id as u64 ^ 0x9e37_79b9_7f4a_7c15,
            path: format!("crate-{:04}/src/module_{:05}.rs", id / 20_000, id / 40),
            language: "rust".into(),
            vector: vector.clone(),
        })
        .collect();

    // Queries.
    let texts = query_texts(args.queries);
    let mut queries: Vec<Vec<f32>> = Vec::new();
    let mut text_queries = 0;
    if identity.backend == "static" {
        let embedder = StaticEmbedder::builtin().expect("the built-in table");
        if embedder.identity() == &identity {
            for text in &texts {
                queries.push(embedder.embed_query(text).expect("embed a query"));
            }
            text_queries = queries.len();
        }
    }
    let stored_queries = args.queries.saturating_sub(queries.len());
    if stored_queries > 0 {
        let step = (n as f64 / stored_queries as f64).max(1.0);
        queries.extend(
            (0..stored_queries.min(n)).map(|i| sample[(i as f64 * step) as usize].1.clone()),
        );
    }
    let started = Instant::now();
    let unit: HashMap<i64, Vec<f32>> = sample.iter().map(|(id, v)| (*id, normalized(v))).collect();
    let exact: Vec<Exact> = queries
        .iter()
        .map(|q| exact_top(&unit, q, args.k))
        .collect();
    println!(
        "{} queries ({text_queries} texts, {} stored vectors); exact top {} in {:.1} s",
        queries.len(),
        queries.len() - text_queries,
        args.k,
        started.elapsed().as_secs_f64()
    );
    drop(sample);

    // The embedded store.
    let embedded_dir = tempfile::tempdir().expect("temporary directory");
    let embedded = EmbeddedStore::open(embedded_dir.path()).expect("open an embedded store");
    embedded.reset(&identity).expect("reset");
    let started = Instant::now();
    embedded.upsert(records.clone()).expect("embedded upsert");
    embedded.commit(1).expect("embedded commit");
    let embedded_upsert = started.elapsed().as_secs_f64();
    let embedded_disk = disk_bytes(embedded_dir.path());
    println!(
        "embedded: {n} upserted and committed in {embedded_upsert:.2} s ({:.0}/s), {:.1} MB",
        n as f64 / embedded_upsert,
        embedded_disk as f64 / 1e6
    );

    // Qdrant.
    let server = RealQdrant::start();
    let version = rest_get(&server, "/")
        .split_once("\"version\":\"")
        .and_then(|(_, rest)| rest.split('"').next().map(str::to_string))
        .unwrap_or_else(|| "?".into());
    let root = tempfile::tempdir().expect("temporary directory");
    let qdrant = QdrantStore::connect(
        &QdrantConfig::new(&server.url),
        root.path(),
        Some(&identity),
    )
    .expect("connect to Qdrant");
    qdrant.reset(&identity).expect("reset");
    let started = Instant::now();
    qdrant.upsert(records).expect("Qdrant upsert");
    qdrant.commit(1).expect("Qdrant commit");
    let qdrant_upsert = started.elapsed().as_secs_f64();
    println!(
        "Qdrant {version}: {n} upserted and committed in {qdrant_upsert:.2} s ({:.0}/s)",
        n as f64 / qdrant_upsert
    );
    let collection = qdrant.collection().expect("a collection after reset");
    let (indexing, indexed, points) = wait_indexed(&server, &collection);
    let qdrant_disk = disk_bytes(&server.storage());
    println!(
        "Qdrant: optimizers done {:.1} s after the upsert ({indexed} of {points} points in HNSW-indexed segments), {:.1} MB on disk",
        indexing.as_secs_f64(),
        qdrant_disk as f64 / 1e6
    );

    // Queries, interleaved per query; the first pass is the warm-up and gives the hits.
    let filter = VectorFilter::default();
    let search_embedded = |q: &[f32]| {
        embedded
            .search(q, args.k, &filter)
            .expect("embedded search")
    };
    let search_qdrant = |q: &[f32]| qdrant.search(q, args.k, &filter).expect("Qdrant search");
    let mut recall_embedded = Vec::new();
    let mut recall_qdrant = Vec::new();
    for (query, exact) in queries.iter().zip(&exact) {
        recall_embedded.push(recall(&search_embedded(query), exact, &unit, query));
        recall_qdrant.push(recall(&search_qdrant(query), exact, &unit, query));
    }
    let mut times_embedded = Vec::new();
    let mut times_qdrant = Vec::new();
    for (index, query) in queries.iter().enumerate() {
        let mut embedded_runs = Vec::new();
        let mut qdrant_runs = Vec::new();
        for run in 0..args.runs {
            let embedded_first = (index + run) % 2 == 0;
            for step in 0..2 {
                let start = Instant::now();
                if (step == 0) == embedded_first {
                    std::hint::black_box(search_embedded(query));
                    embedded_runs.push(start.elapsed().as_secs_f64() * 1e3);
                } else {
                    std::hint::black_box(search_qdrant(query));
                    qdrant_runs.push(start.elapsed().as_secs_f64() * 1e3);
                }
            }
        }
        times_embedded.push(median_p95(embedded_runs).0);
        times_qdrant.push(median_p95(qdrant_runs).0);
    }
    // Where Qdrant's recall goes: the same queries straight through qdrant-client, without
    // lode's filter (which leaves out the metadata point), with a wider HNSW search, and exact.
    let client = qdrant_client::Qdrant::from_url(&server.url)
        .skip_compatibility_check()
        .build()
        .expect("a Qdrant client");
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a tokio runtime");
    let direct = |query: &[f32], params: Option<SearchParams>| -> Vec<VectorHit> {
        let mut request = QueryPointsBuilder::new(&collection)
            .query(Query::new_nearest(query.to_vec()))
            .limit(args.k as u64);
        if let Some(params) = params {
            request = request.params(params);
        }
        let response = runtime
            .block_on(client.query(request))
            .expect("a direct query");
        response
            .result
            .into_iter()
            .filter_map(|point| match point.id?.point_id_options? {
                PointIdOptions::Num(id) => Some(VectorHit {
                    id: id as i64,
                    score: point.score,
                }),
                PointIdOptions::Uuid(_) => None,
            })
            .collect()
    };
    let variants: [(&str, Option<SearchParams>); 3] = [
        ("no filter, default search", None),
        (
            "no filter, hnsw_ef 256",
            Some(SearchParamsBuilder::default().hnsw_ef(256).build()),
        ),
        (
            "no filter, exact",
            Some(SearchParamsBuilder::default().exact(true).build()),
        ),
    ];
    let mut diagnostics = Vec::new();
    for (name, params) in variants {
        let recalls: Vec<f64> = queries
            .iter()
            .zip(&exact)
            .map(|(query, exact)| recall(&direct(query, params.clone()), exact, &unit, query))
            .collect();
        diagnostics.push((name, recalls));
    }
    let below_half = |v: &[f64]| v.iter().filter(|&&r| r < 0.5).count();

    let (embedded_median, embedded_p95) = median_p95(times_embedded);
    let (qdrant_median, qdrant_p95) = median_p95(times_qdrant);
    let mean = |v: &[f64]| v.iter().sum::<f64>() / v.len().max(1) as f64;
    let min = |v: &[f64]| v.iter().copied().fold(f64::INFINITY, f64::min);
    let (embedded_recall, qdrant_recall) = (mean(&recall_embedded), mean(&recall_qdrant));
    let k = args.k;

    println!();
    println!(
        "| {n} vectors × {dims} dims, {} queries, k = {k}; build: {profile} | embedded | Qdrant {version} | Qdrant / embedded |",
        queries.len()
    );
    println!("|---|---|---|---|");
    println!(
        "| upsert + commit | {embedded_upsert:.2} s ({:.0} vectors/s) | {qdrant_upsert:.2} s ({:.0} vectors/s) | {:.2}× the time |",
        n as f64 / embedded_upsert,
        n as f64 / qdrant_upsert,
        qdrant_upsert / embedded_upsert
    );
    println!(
        "| then until the index is built | — (written with the segment) | {:.1} s (HNSW; {indexed} of {points} indexed) | |",
        indexing.as_secs_f64()
    );
    println!(
        "| query latency, median / p95 | {embedded_median:.2} / {embedded_p95:.2} ms | {qdrant_median:.2} / {qdrant_p95:.2} ms | {:.2}× / {:.2}× |",
        qdrant_median / embedded_median,
        qdrant_p95 / embedded_p95
    );
    println!(
        "| recall@{k} against exact f32 cosine (ties counted), mean (min) | {embedded_recall:.4} ({:.1}) | {qdrant_recall:.4} ({:.1}) | |",
        min(&recall_embedded),
        min(&recall_qdrant)
    );
    println!(
        "| queries with recall@{k} below 0.5 | {} | {} | |",
        below_half(&recall_embedded),
        below_half(&recall_qdrant)
    );
    println!(
        "| on disk | {:.1} MB | {:.1} MB | {:.2}× |",
        embedded_disk as f64 / 1e6,
        qdrant_disk as f64 / 1e6,
        qdrant_disk as f64 / embedded_disk.max(1) as f64
    );

    println!();
    for (name, recalls) in &diagnostics {
        println!(
            "Qdrant straight through qdrant-client, {name}: recall@{k} {:.4} mean (min {:.1}), {} below 0.5",
            mean(recalls),
            min(recalls),
            below_half(recalls)
        );
    }
    let diagnostics_json: Vec<serde_json::Value> = diagnostics
        .iter()
        .map(|(name, recalls)| {
            serde_json::json!({
                "variant": name,
                "recall_mean": mean(recalls),
                "recall_min": min(recalls),
                "below_half": below_half(recalls),
            })
        })
        .collect();
    let json = serde_json::json!({
        "profile": profile,
        "qdrant_version": version,
        "store": args.dir.display().to_string(),
        "vectors": n,
        "of_total": total,
        "dimension": dims,
        "queries": queries.len(),
        "text_queries": text_queries,
        "k": k,
        "runs": args.runs,
        "embedded": {
            "upsert_commit_s": embedded_upsert,
            "vectors_per_s": n as f64 / embedded_upsert,
            "query_median_ms": embedded_median,
            "query_p95_ms": embedded_p95,
            "recall_mean": embedded_recall,
            "recall_min": min(&recall_embedded),
            "below_half": below_half(&recall_embedded),
            "disk_bytes": embedded_disk,
        },
        "qdrant": {
            "upsert_commit_s": qdrant_upsert,
            "vectors_per_s": n as f64 / qdrant_upsert,
            "indexing_s": indexing.as_secs_f64(),
            "indexed_vectors": indexed,
            "points": points,
            "query_median_ms": qdrant_median,
            "query_p95_ms": qdrant_p95,
            "recall_mean": qdrant_recall,
            "recall_min": min(&recall_qdrant),
            "below_half": below_half(&recall_qdrant),
            "direct": diagnostics_json,
            "disk_bytes": qdrant_disk,
        },
    });
    if let Some(parent) = args.json.parent() {
        let _ = std::fs::create_dir_all(parent);
    }
    match std::fs::write(&args.json, format!("{json:#}\n")) {
        Ok(()) => println!("\nwrote {}", args.json.display()),
        Err(error) => eprintln!("cannot write {}: {error}", args.json.display()),
    }
}
