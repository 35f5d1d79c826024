//! Benchmark: how long an editor change takes to become searchable through the live index
//! (`change_buffer` + `flush`), as a ratio of tree-sitter parsing the same file alone, on a
//! generated Rust workspace; and the resident memory of the process holding the open index.
//!
//! `cargo run --release -p lode-lsp --example edit_latency [FILES] [EDITS]`

use std::path::Path;
use std::time::{Duration, Instant};

use lode_index::{Language, RefreshMode, SearchRequest, WorkspaceOptions, parse_file};
use lode_lsp::LiveIndex;

fn module(n: usize, files: usize) -> String {
    let mut text = format!(
        "use crate::module_{}::Widget{};\n\npub struct Widget{n} {{\n    pub id: u64,\n}}\n\nimpl Widget{n} {{\n",
        (n + 1) % files,
        (n + 1) % files
    );
    for m in 0..12 {
        text.push_str(&format!(
            "    /// Computes value {m} of widget {n}.\n    pub fn compute_{m}_for_{n}(&self, input: u64) -> u64 {{\n        let mut acc = input;\n        for step in 0..{m} {{\n            acc = acc.wrapping_mul(31).wrapping_add(step + self.id);\n        }}\n        acc\n    }}\n\n"
        ));
    }
    text.push_str("}\n");
    text
}

fn resident_kib() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmRSS:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

fn median(mut samples: Vec<Duration>) -> Duration {
    samples.sort();
    samples[samples.len() / 2]
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let files: usize = args.next().map(|a| a.parse()).transpose()?.unwrap_or(2000);
    let edits: usize = args.next().map(|a| a.parse()).transpose()?.unwrap_or(50);
    let dir = tempfile::tempdir()?;
    for n in 0..files {
        let path = dir.path().join(format!("src/module_{n}.rs"));
        std::fs::create_dir_all(path.parent().unwrap_or(Path::new(".")))?;
        std::fs::write(path, module(n, files))?;
    }
    let index = LiveIndex::open(
        WorkspaceOptions::new(dir.path()),
        Duration::from_millis(300),
    )?;
    let started = Instant::now();
    let stats = index.refresh(RefreshMode::Full, |_| {}).await?;
    println!(
        "indexed {} files in {:.2}s",
        stats.files,
        started.elapsed().as_secs_f64()
    );

    let target = dir.path().join("src/module_0.rs");
    let base = module(0, files);
    index.open_buffer(&target, std::sync::Arc::new(base.clone()));
    index.flush().await;
    let reader = index.reader();
    let mut live = Vec::new();
    let mut parse_only = Vec::new();
    for edit in 0..edits {
        let text = format!("{base}\npub fn typed_edit_{edit}() {{}}\n");
        let parse_started = Instant::now();
        parse_file(Language::Rust, &text)?;
        parse_only.push(parse_started.elapsed());

        let edit_started = Instant::now();
        index.change_buffer(&target, std::sync::Arc::new(text));
        index.flush().await;
        live.push(edit_started.elapsed());
        let hits = reader.search(&SearchRequest::new(format!("typed_edit_{edit}")))?;
        if hits.first().map(|h| h.path.as_str()) != Some("src/module_0.rs") {
            return Err(format!("edit {edit} is not searchable").into());
        }
    }
    let live = median(live);
    let parse = median(parse_only);
    println!(
        "didChange -> searchable: median {:.2} ms; parsing the file alone: {:.2} ms; ratio {:.1}x",
        live.as_secs_f64() * 1000.0,
        parse.as_secs_f64() * 1000.0,
        live.as_secs_f64() / parse.as_secs_f64()
    );
    if let Some(kib) = resident_kib() {
        println!(
            "resident memory with the index open: {:.1} MiB",
            kib as f64 / 1024.0
        );
    }
    Ok(())
}
