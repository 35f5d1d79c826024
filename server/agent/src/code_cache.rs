//! The repo map and retrieved code, kept across turns while the index stays the same.
//!
//! A turn's repo map is personalised by what the conversation mentions, and its retrieval
//! answers the user's latest message; both are read from the index, and on a mid-size workspace
//! they are most of what a turn costs lode (the map's ranking and its fitting to a token budget,
//! the search and the counting of each chunk). Neither can change while the index's catalog
//! generation (bumped by every write batch: a refresh, a watcher's update, a tool's edit) and the
//! inputs stay the same. So they are kept here, keyed by both, and made again only when one of
//! them changed: a turn whose files and identifiers are those of the previous one reuses its map,
//! and the requests after a tool that may write reuse both unless the index moved.
//!
//! When the generation cannot be read, nothing is reused.

use std::path::{Path, PathBuf};
use std::time::Duration;

use parking_lot::Mutex;
use rusqlite::{Connection, OpenFlags, OptionalExtension};

use crate::context::RetrievedChunk;

/// Maps and retrievals kept per generation; the oldest goes first.
const KEPT_PER_KIND: usize = 8;

/// The repo maps and retrievals of the current index generation.
pub(crate) struct CodeCache {
    probe: GenerationProbe,
    state: Mutex<CacheState>,
}

#[derive(Default)]
struct CacheState {
    /// The generation everything below was made at.
    generation: Option<u64>,
    maps: Vec<(MapKey, String)>,
    retrievals: Vec<(RetrievalKey, Vec<RetrievedChunk>)>,
}

/// What a repo map is made from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct MapKey {
    pub focus_files: Vec<String>,
    pub identifiers: Vec<String>,
    pub max_tokens: usize,
}

/// What a retrieval is made from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct RetrievalKey {
    pub query: String,
    pub max_tokens: usize,
}

impl CodeCache {
    /// A cache for the index kept in `index_dir`.
    pub fn new(index_dir: &Path) -> CodeCache {
        CodeCache {
            probe: GenerationProbe::new(index_dir),
            state: Mutex::new(CacheState::default()),
        }
    }

    /// The index's catalog generation now; `None` when it cannot be read. Read it before making
    /// anything from the index: what is made is then at least as new as the generation it is
    /// kept under, so a later change always shows as a new generation.
    pub fn generation(&self) -> Option<u64> {
        self.probe.read()
    }

    /// The repo map for `key` made at `generation`, else `make()`'s (kept when it succeeds).
    pub fn repo_map<E>(
        &self,
        generation: Option<u64>,
        key: &MapKey,
        make: impl FnOnce() -> Result<String, E>,
    ) -> Result<String, E> {
        cached(self, generation, key, |state| &mut state.maps, make)
    }

    /// The retrieved chunks for `key` made at `generation`, else `make()`'s (kept when it
    /// succeeds).
    pub fn retrieve<E>(
        &self,
        generation: Option<u64>,
        key: &RetrievalKey,
        make: impl FnOnce() -> Result<Vec<RetrievedChunk>, E>,
    ) -> Result<Vec<RetrievedChunk>, E> {
        cached(self, generation, key, |state| &mut state.retrievals, make)
    }
}

fn cached<K: Clone + PartialEq, V: Clone, E>(
    cache: &CodeCache,
    generation: Option<u64>,
    key: &K,
    entries: impl Fn(&mut CacheState) -> &mut Vec<(K, V)>,
    make: impl FnOnce() -> Result<V, E>,
) -> Result<V, E> {
    let Some(generation) = generation else {
        return make();
    };
    {
        let mut state = cache.state.lock();
        if state.generation != Some(generation) {
            // Another generation: nothing kept is current any more.
            *state = CacheState {
                generation: Some(generation),
                ..CacheState::default()
            };
        }
        if let Some((_, value)) = entries(&mut state).iter().find(|(kept, _)| kept == key) {
            return Ok(value.clone());
        }
    }
    // Made outside the lock: other sessions' turns go on meanwhile.
    let value = make()?;
    let mut state = cache.state.lock();
    if state.generation == Some(generation) {
        let kept = entries(&mut state);
        if !kept.iter().any(|(other, _)| other == key) {
            if kept.len() >= KEPT_PER_KIND {
                kept.remove(0);
            }
            kept.push((key.clone(), value.clone()));
        }
    }
    Ok(value)
}

/// Reads the catalog's generation through a read-only connection of its own.
///
/// `lode_index::Workspace` does not offer its generation yet; until it does, this reads the
/// catalog's `meta` row as `Catalog::generation` does, and any surprise (no file, another
/// schema, a locked or unreadable database) reads as "unknown", which reuses nothing. The
/// connection is opened again when the catalog file is replaced (a repair recreates it).
struct GenerationProbe {
    path: PathBuf,
    open: Mutex<Option<(FileIdentity, Connection)>>,
}

/// Which file a path names: a recreated catalog is another file.
type FileIdentity = (u64, u64);

impl GenerationProbe {
    fn new(index_dir: &Path) -> GenerationProbe {
        GenerationProbe {
            path: index_dir.join("catalog.sqlite"),
            open: Mutex::new(None),
        }
    }

    fn read(&self) -> Option<u64> {
        let identity = file_identity(&self.path)?;
        // Only this probe uses the connection; a panic while reading leaves nothing half-done.
        let mut open = self.open.lock();
        if open.as_ref().map(|(seen, _)| *seen) != Some(identity) {
            *open = None;
            let connection = Connection::open_with_flags(
                &self.path,
                OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX,
            )
            .ok()?;
            connection.busy_timeout(Duration::from_millis(200)).ok()?;
            *open = Some((identity, connection));
        }
        let (_, connection) = open.as_ref()?;
        let value: Option<String> = connection
            .query_row(
                "SELECT value FROM meta WHERE key = 'generation'",
                [],
                |row| row.get(0),
            )
            .optional()
            .ok()?;
        match value {
            // A catalog that never committed a batch is at generation 0.
            None => Some(0),
            Some(text) => text.parse().ok(),
        }
    }
}

#[cfg(unix)]
fn file_identity(path: &Path) -> Option<FileIdentity> {
    use std::os::unix::fs::MetadataExt;
    let metadata = std::fs::metadata(path).ok()?;
    Some((metadata.dev(), metadata.ino()))
}

#[cfg(not(unix))]
fn file_identity(path: &Path) -> Option<FileIdentity> {
    // No inode to tell a recreated file by: its creation time stands in.
    let metadata = std::fs::metadata(path).ok()?;
    let created = metadata
        .created()
        .ok()?
        .duration_since(std::time::UNIX_EPOCH)
        .ok()?;
    Some((created.as_secs(), u64::from(created.subsec_nanos())))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn catalog(dir: &Path, generation: Option<&str>) {
        let connection = Connection::open(dir.join("catalog.sqlite")).unwrap();
        connection
            .execute_batch(
                "PRAGMA journal_mode = WAL;
                 CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
                 DELETE FROM meta;",
            )
            .unwrap();
        if let Some(generation) = generation {
            connection
                .execute(
                    "INSERT INTO meta (key, value) VALUES ('generation', ?1)",
                    [generation],
                )
                .unwrap();
        }
    }

    #[test]
    fn the_probe_follows_the_catalog_and_a_recreated_file() {
        let dir = tempfile::tempdir().unwrap();
        let probe = GenerationProbe::new(dir.path());
        assert_eq!(probe.read(), None, "no catalog yet");
        catalog(dir.path(), None);
        assert_eq!(probe.read(), Some(0));
        catalog(dir.path(), Some("7"));
        assert_eq!(probe.read(), Some(7));
        std::fs::remove_file(dir.path().join("catalog.sqlite")).unwrap();
        let _ = std::fs::remove_file(dir.path().join("catalog.sqlite-wal"));
        let _ = std::fs::remove_file(dir.path().join("catalog.sqlite-shm"));
        assert_eq!(probe.read(), None, "the catalog is gone");
        catalog(dir.path(), Some("2"));
        assert_eq!(probe.read(), Some(2), "a recreated catalog is read anew");
        catalog(dir.path(), Some("not a number"));
        assert_eq!(probe.read(), None);
    }

    #[test]
    fn entries_are_reused_within_a_generation_only() {
        let dir = tempfile::tempdir().unwrap();
        let cache = CodeCache::new(dir.path());
        let key = MapKey {
            focus_files: vec!["src/lib.rs".into()],
            identifiers: vec!["add".into()],
            max_tokens: 100,
        };
        let made = std::cell::Cell::new(0);
        let make = |text: &str| {
            made.set(made.get() + 1);
            Ok::<_, ()>(text.to_owned())
        };
        assert_eq!(
            cache.repo_map(Some(1), &key, || make("one")),
            Ok("one".into())
        );
        assert_eq!(
            cache.repo_map(Some(1), &key, || make("two")),
            Ok("one".into())
        );
        assert_eq!(made.get(), 1);
        let other = MapKey {
            max_tokens: 200,
            ..key.clone()
        };
        assert_eq!(
            cache.repo_map(Some(1), &other, || make("three")),
            Ok("three".into())
        );
        assert_eq!(
            cache.repo_map(Some(2), &key, || make("four")),
            Ok("four".into())
        );
        assert_eq!(made.get(), 3);
        // Unknown generations reuse nothing and keep nothing; failures are not kept.
        assert_eq!(
            cache.repo_map(None, &key, || make("five")),
            Ok("five".into())
        );
        assert_eq!(cache.repo_map(None, &key, || make("six")), Ok("six".into()));
        assert_eq!(
            cache.repo_map(Some(3), &key, || Err::<String, _>(())),
            Err(())
        );
        assert_eq!(
            cache.repo_map(Some(3), &key, || make("seven")),
            Ok("seven".into())
        );
        assert_eq!(made.get(), 6);
    }
}
