//! The index (its catalog opens, what it holds, its size on disk) and the process that keeps it
//! current (the holder of the watch lease).

use std::path::Path;

use lode_index::{CATALOG_FILE, IndexError, NotWatched, index_counts, lease_status};

use super::Check;

pub fn check_index(index_dir: &Path) -> Vec<Check> {
    let catalog_path = index_dir.join(CATALOG_FILE);
    if !catalog_path.is_file() {
        return vec![Check::warn(
            "index",
            format!("no index yet at {}", index_dir.display()),
            "run `lode index` (the first query, `lode lsp` or `lode acp` also builds it)",
        )];
    }
    let size = directory_bytes(index_dir);
    match index_counts(index_dir) {
        Ok((counts, generation)) => {
            let mut checks = vec![Check::ok(
                "index",
                format!(
                    "{} files, {} chunks, {} definitions, {} references; {} on disk at {} \
                     (generation {generation})",
                    counts.files,
                    counts.chunks,
                    counts.definitions,
                    counts.references,
                    human_bytes(size),
                    index_dir.display()
                ),
            )];
            if !index_dir.join("lexical").is_dir() {
                checks.push(Check::warn(
                    "index",
                    "the lexical index is missing; it is rebuilt from the catalog on next use",
                    "run `lode index`",
                ));
            }
            checks
        }
        Err(IndexError::SchemaChanged { found, expected }) => vec![Check::warn(
            "index",
            format!(
                "the index was built by another lode (schema {found}, this lode reads \
                 {expected}); it is rebuilt on next use"
            ),
            "run `lode index`",
        )],
        Err(error) => vec![Check::fail(
            "index",
            format!(
                "the catalog at {} cannot be read: {error}",
                catalog_path.display()
            ),
            format!(
                "stop lode's processes for this workspace, delete {} and run `lode index`",
                index_dir.display()
            ),
        )],
    }
}

pub fn check_watcher(index_dir: &Path) -> Check {
    match lease_status(index_dir) {
        Ok((_, holder)) => Check::ok(
            "watcher",
            format!(
                "`lode {}` (pid {}, lode {}) keeps the index current: up {} s, {} requests answered",
                holder.holder, holder.pid, holder.lode, holder.uptime_secs, holder.requests
            ),
        ),
        Err(NotWatched::NoWatcher) => Check::ok(
            "watcher",
            "no daemon or watcher holds the index; queries check the files themselves \
             (`lode daemon start` keeps a large workspace's index current)",
        ),
        Err(reason @ NotWatched::Gone(_)) => Check::warn(
            "watcher",
            format!("a watcher's lease is left but it does not answer: {reason}"),
            "`lode daemon stop`, or remove the stale lease by starting `lode daemon start`",
        ),
        Err(reason) => Check::warn(
            "watcher",
            format!("the process holding the index cannot serve this lode: {reason}"),
            "`lode daemon stop` (or stop that `lode watch`/editor), then let lode start a new one",
        ),
    }
}

/// Bytes under `dir`, symlinks not followed.
fn directory_bytes(dir: &Path) -> u64 {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return 0;
    };
    entries
        .flatten()
        .map(|entry| match entry.file_type() {
            Ok(kind) if kind.is_dir() => directory_bytes(&entry.path()),
            Ok(kind) if kind.is_file() => entry.metadata().map_or(0, |meta| meta.len()),
            _ => 0,
        })
        .sum()
}

fn human_bytes(bytes: u64) -> String {
    const MIB: f64 = 1024.0 * 1024.0;
    if bytes >= 1024 * 1024 {
        format!("{:.1} MiB", bytes as f64 / MIB)
    } else {
        format!("{:.1} KiB", bytes as f64 / 1024.0)
    }
}
