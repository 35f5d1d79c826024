//! The benchmark reference pass: what parsing alone costs, on both cores, with no index writes.

use std::path::Path;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::time::Instant;

use anyhow::Context;
use lode_index::{ScanOptions, extract_tags, parse_tree, read_source, scan};
use rayon::prelude::*;

/// Reads, parses and runs the tags query over every indexable file; returns a report line.
pub fn parse_everything(
    root: &Path,
    options: &ScanOptions,
    with_tags: bool,
) -> anyhow::Result<String> {
    let root =
        std::fs::canonicalize(root).with_context(|| format!("cannot open {}", root.display()))?;
    let started = Instant::now();
    let found = scan(&root, options)?;
    let bytes = AtomicU64::new(0);
    let parsed = AtomicUsize::new(0);
    found.files.par_iter().for_each(|file| {
        let Ok(Some(text)) = read_source(&file.abs_path, options.max_file_bytes) else {
            return;
        };
        bytes.fetch_add(text.len() as u64, Ordering::Relaxed);
        if let Ok(Some(tree)) = parse_tree(file.language, &text) {
            if with_tags {
                let _ = extract_tags(file.language, &tree, &text);
            }
            parsed.fetch_add(1, Ordering::Relaxed);
        }
    });
    let seconds = started.elapsed().as_secs_f64();
    let megabytes = bytes.into_inner() as f64 / 1_000_000.0;
    Ok(format!(
        "parsed {} files, {megabytes:.1} MB in {seconds:.3}s ({:.1} MB/s)",
        parsed.into_inner(),
        megabytes / seconds.max(1e-9)
    ))
}
