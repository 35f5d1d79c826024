//! Applying file-system events to the index without walking the tree: the paths a watcher saw
//! are judged one by one (a known file edited or deleted, a new file in a directory the last
//! walk entered), and anything that can change which files are indexed (a new or vanished
//! directory, an ignore file) falls back to a quick refresh.

use std::collections::{BTreeMap, HashSet};
use std::fs;
use std::path::{Path, PathBuf};
use std::time::Instant;

use crate::error::IndexError;
use crate::scan::{ScannedFile, admitted_entries, mtime_ns, relative_path};
use crate::workspace::{RefreshMode, RefreshStats, Workspace, read_and_parse};
use lode_syntax::Language;

/// What applying a batch of file-system events did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ChangeReport {
    /// The batch needed a quick refresh (a directory or an ignore file changed, or the watcher
    /// lost events) instead of per-file updates.
    pub rescanned: bool,
    /// Paths that could not affect the index (ignored, not source, lode's own files).
    pub ignored: usize,
    /// Files parsed, found unchanged, removed (counts of the refresh when `rescanned`).
    pub stats: RefreshStats,
}

/// How one changed path is handled.
enum Verdict {
    Ignore,
    /// A file the index knows or a new file in a walked directory: read it.
    Update(ScannedFile),
    /// A new source file in a directory the walk entered: admitted if the walk would.
    New(PathBuf),
    /// A known file that is gone, or no longer indexable.
    Remove(String),
    /// Can change which files are indexed: refresh.
    Rescan,
}

impl Workspace {
    /// Brings the index up to date with changes a file watcher reported at `paths` (absolute,
    /// under the root); `rescan` asks for a quick refresh regardless (events were lost).
    /// Edited and deleted files are updated one by one in one commit; new files are indexed
    /// when the walk would admit them; a change to a directory or an ignore file refreshes.
    pub fn apply_disk_changes(
        &self,
        paths: &[PathBuf],
        rescan: bool,
    ) -> Result<ChangeReport, IndexError> {
        let mut report = ChangeReport::default();
        if !rescan && let Some((updates, removals)) = self.judge(paths, &mut report)? {
            if !updates.is_empty() || !removals.is_empty() {
                report.stats = self.write_changes(updates, removals)?;
            }
            return Ok(report);
        }
        report.rescanned = true;
        report.stats = self.refresh_with(RefreshMode::Quick, &|_| {})?;
        Ok(report)
    }

    /// Files to update and remove, or `None` when the batch needs a refresh.
    #[allow(clippy::type_complexity)]
    fn judge(
        &self,
        paths: &[PathBuf],
        report: &mut ChangeReport,
    ) -> Result<Option<(Vec<ScannedFile>, Vec<String>)>, IndexError> {
        let (known, walked) = {
            let catalog = self.catalog();
            let known = catalog.files()?;
            let Some((fingerprint, dirs)) = catalog.walk_stamps()? else {
                return Ok(None);
            };
            if fingerprint != self.scan_fingerprint() {
                return Ok(None);
            }
            let walked: HashSet<String> = dirs.into_iter().map(|d| d.rel_path).collect();
            (known, walked)
        };
        let unique: std::collections::BTreeSet<&PathBuf> = paths.iter().collect();
        // New files are judged by listing their directory once with the walk's rules.
        let mut new_by_dir: BTreeMap<PathBuf, Vec<PathBuf>> = BTreeMap::new();
        let mut updates = Vec::new();
        let mut removals = Vec::new();
        for path in unique {
            match self.judge_one(path, &known, &walked) {
                Verdict::Ignore => report.ignored += 1,
                Verdict::Update(file) => updates.push(file),
                Verdict::Remove(rel) => removals.push(rel),
                Verdict::Rescan => return Ok(None),
                Verdict::New(path) => {
                    if let Some(parent) = path.parent() {
                        new_by_dir
                            .entry(parent.to_path_buf())
                            .or_default()
                            .push(path);
                    }
                }
            }
        }
        for (dir, files) in new_by_dir {
            let admitted: HashSet<PathBuf> =
                admitted_entries(self.root(), &dir, &self.scan_options)?
                    .into_iter()
                    .map(|(path, _)| path)
                    .collect();
            for path in files {
                if admitted.contains(&path)
                    && let Some(file) = self.scanned(&path)
                {
                    updates.push(file);
                } else {
                    report.ignored += 1;
                }
            }
        }
        Ok(Some((updates, removals)))
    }

    /// The verdict for one path.
    fn judge_one(
        &self,
        path: &Path,
        known: &std::collections::HashMap<String, crate::catalog::FileRecord>,
        walked: &HashSet<String>,
    ) -> Verdict {
        let root = self.root();
        if path.starts_with(self.index_dir())
            || path.starts_with(root.join(".lode"))
            || path.starts_with(root.join(".git"))
        {
            return Verdict::Ignore;
        }
        let Some(rel) = relative_path(root, path) else {
            // The root itself (its attributes) or a path outside it.
            return Verdict::Ignore;
        };
        let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
        let parent_rel = rel.rsplit_once('/').map_or("", |(parent, _)| parent);
        let in_walked_dir = walked.contains(parent_rel);
        if name == ".gitignore" || name == ".ignore" {
            return if in_walked_dir {
                Verdict::Rescan
            } else {
                Verdict::Ignore
            };
        }
        match fs::metadata(path) {
            Ok(metadata) if metadata.is_dir() => {
                // A directory appeared, was replaced or renamed: only a walk knows what it holds.
                // Directories the walk never enters (build output, ignored trees) don't matter.
                if in_walked_dir || walked.contains(&rel) {
                    Verdict::Rescan
                } else {
                    Verdict::Ignore
                }
            }
            Ok(metadata) if metadata.is_file() => {
                if known.contains_key(&rel) {
                    match self.scanned(path) {
                        Some(file) => Verdict::Update(file),
                        None => Verdict::Remove(rel),
                    }
                } else if in_walked_dir && Language::from_path(path).is_some() {
                    Verdict::New(path.to_path_buf())
                } else {
                    Verdict::Ignore
                }
            }
            // Gone (or a special file).
            _ => {
                if known.contains_key(&rel) {
                    Verdict::Remove(rel)
                } else if walked.contains(&rel) {
                    Verdict::Rescan
                } else {
                    Verdict::Ignore
                }
            }
        }
    }

    /// The file as a walk would record it, or `None` when lode doesn't index it (any more).
    fn scanned(&self, path: &Path) -> Option<ScannedFile> {
        let rel_path = relative_path(self.root(), path)?;
        let language = Language::from_path(Path::new(&rel_path))?;
        let metadata = fs::metadata(path).ok().filter(|m| m.is_file())?;
        if metadata.len() > self.scan_options.max_file_bytes {
            return None;
        }
        Some(ScannedFile {
            language,
            rel_path,
            abs_path: path.to_path_buf(),
            size: metadata.len(),
            mtime_ns: mtime_ns(&metadata),
        })
    }

    /// Parses `updates`, drops `removals`, and publishes both in one commit.
    fn write_changes(
        &self,
        updates: Vec<ScannedFile>,
        removals: Vec<String>,
    ) -> Result<RefreshStats, IndexError> {
        let started = Instant::now();
        let max_bytes = self.scan_options.max_file_bytes;
        let sizes = self.chunk_sizes;
        self.with_write_locks(|| {
            let catalog = self.catalog();
            let known = catalog.files()?;
            let derived = self.derived_in_step(&catalog, false)?;
            let mut stats = RefreshStats {
                files: updates.len(),
                ..RefreshStats::default()
            };
            let mut batch = catalog.begin()?;
            for rel in &removals {
                if batch.remove_file(rel)? {
                    stats.removed += 1;
                }
                if derived.lexical {
                    self.lexical().delete_file(rel)?;
                }
            }
            for file in &updates {
                let known_hash = known.get(&file.rel_path).map(|record| record.hash);
                let outcome = read_and_parse(file, known_hash, max_bytes, sizes, None);
                let lexical = derived.lexical_write(known.contains_key(&file.rel_path));
                self.apply_outcome(&mut batch, file, outcome, lexical, None, &mut stats)?;
            }
            let generation = batch.commit()?;
            self.commit_lexical(derived, generation)?;
            stats.timings.parse_and_write = started.elapsed();
            let embed_started = Instant::now();
            if derived.vectors {
                stats.vectors = self.sync_vectors(&catalog, &|_| {})?;
            }
            stats.timings.embed = embed_started.elapsed();
            stats.total_vectors = self
                .vector_store()?
                .map_or(0, |store| store.state().count as u64);
            Ok(stats)
        })
    }
}
