//! Lexical tokenizer throughput, one thread: lode's code tokenizer (identifier splitting,
//! lowercasing, stemming) against tantivy's own English analyzer on the same chunk texts.
//!
//! `cargo bench -p lode-index --bench tokenize [-- CATALOG.sqlite]`. The chunks come from a lode
//! catalog (default: the benchmark corpus `bench/corpus/rust-vendor/.lode/index/catalog.sqlite`,
//! every 10th chunk, at most 50,000). The reference is tantivy's `en_stem` analyzer (split on
//! non-alphanumerics, lowercase, Snowball English): the ratio says what code-awareness costs.

#[path = "support/mod.rs"]
mod support;

use std::time::Instant;

use lode_index::code_analyzer;
use tantivy::tokenizer::{
    LowerCaser, RemoveLongFilter, SimpleTokenizer, Stemmer, TextAnalyzer, TokenStream,
};

fn main() {
    let Some(conn) = support::corpus::open_catalog() else {
        return;
    };
    let texts: Vec<String> = conn
        .prepare("SELECT text FROM chunks WHERE id % 10 = 0 LIMIT 50000")
        .and_then(|mut statement| {
            statement
                .query_map([], |row| row.get(0))?
                .collect::<Result<_, _>>()
        })
        .expect("read chunks");
    if texts.is_empty() {
        eprintln!("the catalog has no chunks");
        return;
    }
    let bytes: usize = texts.iter().map(String::len).sum();
    let mut reference = TextAnalyzer::builder(SimpleTokenizer::default())
        .filter(RemoveLongFilter::limit(64))
        .filter(LowerCaser)
        .filter(Stemmer::default())
        .build();
    let mut lode = code_analyzer();
    // Alternating rounds, best of each: this machine's speed drifts between seconds.
    let (mut best_lode, mut best_reference) = (f64::MAX, f64::MAX);
    let (mut lode_tokens, mut reference_tokens) = (0, 0);
    for _ in 0..5 {
        let (seconds, tokens) = time_analyzer(&mut lode, &texts);
        best_lode = best_lode.min(seconds);
        lode_tokens = tokens;
        let (seconds, tokens) = time_analyzer(&mut reference, &texts);
        best_reference = best_reference.min(seconds);
        reference_tokens = tokens;
    }
    let megabytes = bytes as f64 / 1e6;
    println!(
        "{} chunks, {megabytes:.1} MB, best of 5 alternating rounds, one thread",
        texts.len()
    );
    println!(
        "lode code tokenizer: {lode_tokens} tokens in {best_lode:.3}s: {:.1} MB/s, {:.0} ns/token",
        megabytes / best_lode,
        best_lode * 1e9 / lode_tokens as f64
    );
    println!(
        "tantivy en_stem (reference): {reference_tokens} tokens in {best_reference:.3}s: {:.1} MB/s, {:.0} ns/token",
        megabytes / best_reference,
        best_reference * 1e9 / reference_tokens as f64
    );
    println!(
        "time ratio lode / reference: {:.2}x (per token: {:.2}x)",
        best_lode / best_reference,
        (best_lode / lode_tokens as f64) / (best_reference / reference_tokens as f64)
    );
}

/// Seconds to run every text through `analyzer`, and the tokens it produced.
fn time_analyzer(analyzer: &mut TextAnalyzer, texts: &[String]) -> (f64, usize) {
    let started = Instant::now();
    let mut tokens = 0usize;
    for text in texts {
        let mut stream = analyzer.token_stream(text);
        while stream.advance() {
            tokens += 1;
            std::hint::black_box(&stream.token().text);
        }
    }
    (started.elapsed().as_secs_f64(), tokens)
}
