//! Exact against approximate vector search on a real embedded store, in one invocation:
//! per-query latency (median, p95) and recall@k of the approximate search against exact.
//!
//! `cargo bench -p lode-index --bench vector_search [-- OPTIONS] [VECTORS_DIR]`
//! (`bench/vectors.sh` runs it). VECTORS_DIR defaults to the benchmark corpus's
//! `bench/corpus/rust-vendor/.lode/index/vectors` (build it with `lode index`).
//!
//! Queries: the lines of `bench/search-queries.txt` and, to make up `--queries N` (default
//! 200), an even sample of the retrieval suites' queries (`bench/out/retrieval*-queries.jsonl`,
//! written by `bench/retrieval.py --queries-only`), embedded with the built-in static table.
//! A store made by another embedder, or `--stored`, uses an even sample of stored vectors
//! as queries instead.
//!
//! Two settings per query:
//! - resident: one open store, as in `lode watch`/`lsp`/`acp` or a daemon (each query timed
//!   `--runs` times after one warm-up pass, median of those kept);
//! - fresh: the store opened (segments mapped) anew for each query and searched once, as a
//!   `lode search` process without a resident server does (page cache warm).
//!
//! Options: `--k K` (default 50, what hybrid search asks for at `--limit 10` for an
//! identifier; a sentence asks for 100), `--runs N` (default 3), `--sweep R1,R2,...`
//! (oversample factors to also measure, resident: recall and median latency each, default
//! `5,10,20,40`), `--json PATH` (default `bench/out/vectors.json`).

use std::path::PathBuf;
use std::time::Instant;

use lode_index::{
    EmbeddedStore, Embedder, SearchOptions, StaticEmbedder, VectorFilter, VectorHit, VectorStore,
};

struct Args {
    dir: PathBuf,
    queries: usize,
    k: usize,
    runs: usize,
    sweep: Vec<usize>,
    stored: bool,
    json: PathBuf,
}

fn bench_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../bench")
}

fn parse_args() -> Args {
    let mut args = Args {
        dir: bench_dir().join("corpus/rust-vendor/.lode/index/vectors"),
        queries: 200,
        k: 50,
        runs: 3,
        sweep: vec![5, 10, 20, 40],
        stored: false,
        json: bench_dir().join("out/vectors.json"),
    };
    let mut it = std::env::args().skip(1);
    while let Some(arg) = it.next() {
        let mut value = |name: &str| it.next().unwrap_or_else(|| panic!("{name} needs a value"));
        match arg.as_str() {
            "--queries" => args.queries = value("--queries").parse().expect("--queries N"),
            "--k" => args.k = value("--k").parse().expect("--k K"),
            "--runs" => args.runs = value("--runs").parse::<usize>().expect("--runs N").max(1),
            "--sweep" => {
                args.sweep = value("--sweep")
                    .split(',')
                    .filter(|s| !s.is_empty())
                    .map(|s| s.parse().expect("--sweep R1,R2"))
                    .collect()
            }
            "--json" => args.json = PathBuf::from(value("--json")),
            "--stored" => args.stored = true,
            // `cargo bench` passes this to every bench.
            "--bench" => {}
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
    let rank = (p * (sorted.len() - 1) as f64).round() as usize;
    sorted[rank]
}

fn summary(mut ms: Vec<f64>) -> (f64, f64) {
    ms.sort_by(f64::total_cmp);
    (percentile(&ms, 0.5), percentile(&ms, 0.95))
}

fn recall(hits: &[VectorHit], exact: &[VectorHit]) -> f64 {
    if exact.is_empty() {
        return 1.0;
    }
    let found = exact
        .iter()
        .filter(|e| hits.iter().any(|h| h.id == e.id))
        .count();
    found as f64 / exact.len() as f64
}

/// Per variant: each query's median time (ms) over `runs` rounds after a warm-up round, and
/// its hits. The variants are interleaved per query, so a drift in the machine's load touches
/// them alike.
fn time_resident(
    store: &EmbeddedStore,
    queries: &[Vec<f32>],
    k: usize,
    variants: &[SearchOptions],
    runs: usize,
) -> Vec<(Vec<f64>, Vec<Vec<VectorHit>>)> {
    let filter = VectorFilter::default();
    let search = |query: &[f32], options: &SearchOptions| {
        store
            .search_with(query, k, &filter, options)
            .expect("search the store")
    };
    let hits: Vec<Vec<Vec<VectorHit>>> = variants
        .iter()
        .map(|options| queries.iter().map(|q| search(q, options)).collect())
        .collect();
    let mut times = vec![vec![Vec::with_capacity(runs); queries.len()]; variants.len()];
    for round in 0..runs {
        for (index, query) in queries.iter().enumerate() {
            for step in 0..variants.len() {
                // Each round starts the cycle at another variant.
                let variant = (step + round + index) % variants.len();
                let start = Instant::now();
                std::hint::black_box(search(query, &variants[variant]));
                times[variant][index].push(start.elapsed().as_secs_f64() * 1e3);
            }
        }
    }
    times
        .into_iter()
        .zip(hits)
        .map(|(per_query, hits)| (per_query.into_iter().map(|t| summary(t).0).collect(), hits))
        .collect()
}

fn main() {
    let args = parse_args();
    let store = match EmbeddedStore::open(&args.dir) {
        Ok(store) => store,
        Err(error) => {
            eprintln!(
                "cannot open the vector store {}: {error}\nbuild it with `lode index bench/corpus/rust-vendor`",
                args.dir.display()
            );
            return;
        }
    };
    let state = store.state();
    let Some(identity) = state.identity.clone() else {
        eprintln!("the store at {} is empty", args.dir.display());
        return;
    };
    let segments = store.segments();
    let coded = segments.iter().filter(|s| s.has_codes).count();
    println!(
        "store {}: {} live vectors of {} dims ({identity}), {} segments ({coded} with binary codes)",
        args.dir.display(),
        state.count,
        identity.dimension,
        segments.len()
    );
    if coded < segments.len() {
        println!(
            "  segments without codes (written by an older lode) are scanned exactly either way; re-index to compare"
        );
    }

    let embedder = StaticEmbedder::builtin().expect("the built-in table loads");
    let (kind, queries): (&str, Vec<Vec<f32>>) = if !args.stored && embedder.identity() == &identity
    {
        let texts = query_texts(args.queries);
        if texts.is_empty() {
            eprintln!("no query texts: run `bench/retrieval.py --queries-only` or pass --stored");
            return;
        }
        let vectors = texts
            .iter()
            .map(|t| embedder.embed_query(t).expect("embed a query"))
            .collect();
        ("text queries embedded with the built-in table", vectors)
    } else {
        let mut ids: Vec<i64> = store
            .entries()
            .expect("list the store")
            .into_iter()
            .map(|(id, _)| id)
            .collect();
        ids.sort_unstable();
        let step = (ids.len() / args.queries.max(1)).max(1);
        let wanted: Vec<i64> = ids
            .iter()
            .step_by(step)
            .take(args.queries)
            .copied()
            .collect();
        let vectors = store
            .vectors(&wanted)
            .expect("read stored vectors")
            .into_iter()
            .map(|(_, v)| v)
            .collect();
        ("stored vectors", vectors)
    };
    println!("{} queries ({kind}), k = {}", queries.len(), args.k);
    let filter = VectorFilter::default();
    let k = args.k;
    let approximate = SearchOptions::default();
    let sweep: Vec<SearchOptions> = args
        .sweep
        .iter()
        .map(|&oversample| SearchOptions {
            oversample,
            min_candidates: 0,
            ..approximate
        })
        .collect();
    let mut variants = vec![SearchOptions::EXACT, approximate];
    variants.extend(&sweep);
    let mut timed = time_resident(&store, &queries, k, &variants, args.runs).into_iter();
    let (Some((exact_ms, exact_hits)), Some((approx_ms, approx_hits))) =
        (timed.next(), timed.next())
    else {
        unreachable!("two variants at least");
    };
    let recalls: Vec<f64> = approx_hits
        .iter()
        .zip(&exact_hits)
        .map(|(a, e)| recall(a, e))
        .collect();
    let mean_recall = recalls.iter().sum::<f64>() / recalls.len().max(1) as f64;
    let min_recall = recalls.iter().copied().fold(1.0, f64::min);
    let perfect = recalls.iter().filter(|&&r| r >= 1.0).count();

    // Fresh: a new handle (new mappings) per query, exact and approximate alternating.
    let mut fresh_exact = Vec::new();
    let mut fresh_approx = Vec::new();
    let mut opens = Vec::new();
    for (index, query) in queries.iter().enumerate() {
        let mut pair = [
            (SearchOptions::EXACT, &mut fresh_exact),
            (approximate, &mut fresh_approx),
        ];
        if index % 2 == 1 {
            pair.reverse();
        }
        for (options, times) in pair {
            let start = Instant::now();
            let store = EmbeddedStore::open(&args.dir).expect("reopen the store");
            opens.push(start.elapsed().as_secs_f64() * 1e3);
            std::hint::black_box(
                store
                    .search_with(query, k, &filter, &options)
                    .expect("search the store"),
            );
            times.push(start.elapsed().as_secs_f64() * 1e3);
        }
    }

    let (em, ep) = summary(exact_ms.clone());
    let (am, ap) = summary(approx_ms.clone());
    let (fem, fep) = summary(fresh_exact.clone());
    let (fam, fap) = summary(fresh_approx.clone());
    let (open_median, _) = summary(opens);
    println!();
    println!("| search | resident median | resident p95 | fresh median | fresh p95 | recall@{k} |");
    println!("|---|---|---|---|---|---|");
    println!("| exact (int8 scan) | {em:.2} ms | {ep:.2} ms | {fem:.2} ms | {fep:.2} ms | 1 |");
    println!(
        "| approximate (binary pass + int8 rescoring of max({k}×{}, {})) | {am:.2} ms | {ap:.2} ms | {fam:.2} ms | {fap:.2} ms | {mean_recall:.4} (min {min_recall:.2}, {perfect}/{} queries 1.0) |",
        approximate.oversample,
        approximate.min_candidates,
        recalls.len()
    );
    println!(
        "speed-up: resident {:.1}× (median), fresh {:.1}× (median); recall@{k} target ≥ 0.98: {}",
        em / am,
        fem / fam,
        if mean_recall >= 0.98 { "OK" } else { "MISS" }
    );
    println!(
        "fresh includes opening the store (mapping and checking its segments): median {open_median:.2} ms"
    );

    let mut sweep_rows = Vec::new();
    if !args.sweep.is_empty() {
        println!();
        println!("oversample sweep (resident): candidates = max({k} × R, min), min = 0");
        println!("| R | candidates | median | p95 | recall@{k} mean | min |");
        println!("|---|---|---|---|---|---|");
        for ((ms, hits), &oversample) in timed.zip(&args.sweep) {
            let r: Vec<f64> = hits
                .iter()
                .zip(&exact_hits)
                .map(|(a, e)| recall(a, e))
                .collect();
            let mean = r.iter().sum::<f64>() / r.len().max(1) as f64;
            let min = r.iter().copied().fold(1.0, f64::min);
            let (median, p95) = summary(ms);
            println!(
                "| {oversample} | {} | {median:.2} ms | {p95:.2} ms | {mean:.4} | {min:.2} |",
                k * oversample
            );
            sweep_rows.push(serde_json::json!({
                "oversample": oversample, "candidates": k * oversample,
                "median_ms": median, "p95_ms": p95, "recall_mean": mean, "recall_min": min,
            }));
        }
    }

    let report = serde_json::json!({
        "store": args.dir.display().to_string(),
        "vectors": state.count,
        "dims": identity.dimension,
        "segments": segments.len(),
        "segments_with_codes": coded,
        "queries": queries.len(),
        "query_kind": kind,
        "k": k,
        "runs": args.runs,
        "options": {
            "exact_below": approximate.exact_below,
            "oversample": approximate.oversample,
            "min_candidates": approximate.min_candidates,
        },
        "open_median_ms": open_median,
        "exact": { "resident_median_ms": em, "resident_p95_ms": ep,
                   "fresh_median_ms": fem, "fresh_p95_ms": fep },
        "approximate": { "resident_median_ms": am, "resident_p95_ms": ap,
                         "fresh_median_ms": fam, "fresh_p95_ms": fap,
                         "recall_mean": mean_recall, "recall_min": min_recall,
                         "queries_with_full_recall": perfect },
        "sweep": sweep_rows,
    });
    if let Some(parent) = args.json.parent() {
        let _ = std::fs::create_dir_all(parent);
    }
    match std::fs::write(
        &args.json,
        serde_json::to_string_pretty(&report).unwrap_or_default(),
    ) {
        Ok(()) => println!("\nwrote {}", args.json.display()),
        Err(error) => eprintln!("cannot write {}: {error}", args.json.display()),
    }
}
