//! What compiling each language's tags query costs, per process (a cold `lode map` pays it once
//! per language it parses).
//!
//! `cargo bench -p lode-syntax --bench tags_query [-- RUNS] [LANGUAGE=FILE.scm]...`: compiles
//! every tags query (or the given query files, to try a change) RUNS times (default 5) from
//! scratch and prints the median and minimum per language.

use std::time::{Duration, Instant};

use lode_syntax::Language;
use tree_sitter::Query;

fn main() {
    let runs: usize = std::env::args()
        .skip(1)
        .find_map(|arg| arg.parse().ok())
        .unwrap_or(5)
        .max(1);
    let overrides: Vec<(Language, String)> = std::env::args()
        .skip(1)
        .filter_map(|arg| {
            let (name, file) = arg.split_once('=')?;
            let language = Language::from_name(name)?;
            Some((
                language,
                std::fs::read_to_string(file).expect("read the query file"),
            ))
        })
        .collect();
    let queries: Vec<(Language, String)> = if overrides.is_empty() {
        Language::ALL
            .iter()
            .filter_map(|&l| Some((l, l.tags_query_source()?.to_string())))
            .collect()
    } else {
        overrides
    };
    for (language, source) in &queries {
        let Some(grammar) = language.grammar() else {
            continue;
        };
        let source = source.as_str();
        let mut times: Vec<Duration> = (0..runs)
            .map(|_| {
                let started = Instant::now();
                let query = Query::new(&grammar, source).expect("the tags query compiles");
                let elapsed = started.elapsed();
                std::hint::black_box(query.pattern_count());
                elapsed
            })
            .collect();
        times.sort();
        let patterns = Query::new(&grammar, source).map_or(0, |q| q.pattern_count());
        println!(
            "{:<11} {:>4} patterns  median {:>8.2} ms  min {:>8.2} ms",
            language.name(),
            patterns,
            times[times.len() / 2].as_secs_f64() * 1e3,
            times[0].as_secs_f64() * 1e3,
        );
    }
}
