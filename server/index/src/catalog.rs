//! The SQLite catalog: files with their content hashes, chunks, definitions and references.
//!
//! The catalog is the index's source of truth. The lexical index is derived from it and can be
//! rebuilt from it without re-parsing. Every write goes through one transaction ([`CatalogBatch`])
//! that also bumps the index generation, which the lexical index records in its commit.

use std::collections::HashMap;
use std::path::Path;

use rusqlite::{Connection, OptionalExtension, Transaction, params};

use crate::error::IndexError;
use crate::refcodec;
use crate::scan::DirStamp;
use lode_syntax::DefKind;
use lode_syntax::Language;
use lode_syntax::ParsedFile;

/// Bumped whenever the tables or the meaning of their contents change; a mismatch rebuilds.
/// (5: chunk ids are never reused, so derived stores can diff by id. 6: references are stored
/// per file in one compact record, with a per-file count of each referenced name. 7: chunks
/// cut at the smaller default sizes of `chunk::DEFAULT_SIZES`; a file is re-chunked only when
/// it changes, so an older index is rebuilt rather than left with two chunkings. 8: a file
/// under the maximum chunk size is split at its definitions like a larger one. 9: chunks no
/// longer keep a copy of their comments, which only the dropped lexical field read. 10: an
/// exported or decorated class opens at its methods like a bare class. 11: C, C++, Java, C#, Kotlin,
/// Swift, Ruby, PHP, Scala, Lua, Bash, Zig, Elixir, Haskell, OCaml and Markdown are parsed: files
/// that were plain text have definitions, references and chunks of their own.)
pub const SCHEMA_VERSION: &str = "11";

/// The catalog's file in an index directory.
pub const CATALOG_FILE: &str = "catalog.sqlite";

/// Separates the labels of a scope chain in one column.
const SCOPE_SEPARATOR: char = '\u{1f}';

const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS meta(key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS files(
    id INTEGER PRIMARY KEY,
    path TEXT NOT NULL UNIQUE,
    language TEXT NOT NULL,
    size INTEGER NOT NULL,
    mtime_ns INTEGER NOT NULL,
    hash INTEGER NOT NULL,
    chunk_count INTEGER NOT NULL,
    def_count INTEGER NOT NULL,
    ref_count INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS dirs(
    path TEXT PRIMARY KEY,
    mtime_ns INTEGER NOT NULL,
    ignore_mtime_ns INTEGER NOT NULL
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS chunks(
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    file_id INTEGER NOT NULL,
    start_line INTEGER NOT NULL,
    end_line INTEGER NOT NULL,
    symbol TEXT,
    kind TEXT,
    scope TEXT NOT NULL,
    defined_names TEXT NOT NULL,
    text TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS defs(
    file_id INTEGER NOT NULL,
    name TEXT NOT NULL,
    name_lower TEXT NOT NULL,
    kind TEXT NOT NULL,
    start_line INTEGER NOT NULL,
    end_line INTEGER NOT NULL,
    scope TEXT NOT NULL,
    signature TEXT NOT NULL
);
-- A file's references, encoded by `crate::refcodec` (names and scope chains written once per
-- file, each reference a few bytes). Millions of reference rows cost more to write and to index
-- than the source is large; one record per file does not.
CREATE TABLE IF NOT EXISTS file_refs(
    file_id INTEGER PRIMARY KEY,
    data BLOB NOT NULL
);
-- How often each file refers to each name: finds the files to decode for `lode refs`, and is
-- the repo map's graph as it stands.
CREATE TABLE IF NOT EXISTS ref_names(
    file_id INTEGER NOT NULL,
    name TEXT NOT NULL,
    count INTEGER NOT NULL
);
";

/// Secondary indexes by file. A cold build keeps them through its bulk load: rows arrive in file
/// id order, so each insert appends to an index's rightmost leaf, and building these at the end
/// would be serial work while the parse workers' core idles.
const FILE_INDEXES: &str = "
CREATE INDEX IF NOT EXISTS chunks_by_file ON chunks(file_id);
CREATE INDEX IF NOT EXISTS defs_by_file ON defs(file_id);
CREATE INDEX IF NOT EXISTS ref_names_by_file ON ref_names(file_id);
";

/// Secondary indexes by name. A cold build drops them and builds them once at the end, which is
/// several times faster than keeping them up to date row by row.
const NAME_INDEXES: &str = "
CREATE INDEX IF NOT EXISTS defs_by_name ON defs(name_lower);
CREATE INDEX IF NOT EXISTS ref_names_by_name ON ref_names(name);
";

const DROP_NAME_INDEXES: &str = "
DROP INDEX IF EXISTS defs_by_name;
DROP INDEX IF EXISTS ref_names_by_name;
";

/// What the catalog remembers about one indexed file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FileRecord {
    pub id: i64,
    pub path: String,
    pub language: String,
    pub size: u64,
    pub mtime_ns: i64,
    pub hash: u64,
}

/// A chunk as stored, with its file's path and language.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ChunkRow {
    pub id: i64,
    pub path: String,
    pub language: String,
    pub start_line: u32,
    pub end_line: u32,
    pub symbol: Option<String>,
    pub kind: Option<String>,
    pub scope: Vec<String>,
    pub defined_names: Vec<String>,
    pub text: String,
}

/// A definition as stored, with its file's path.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DefinitionRow {
    pub path: String,
    pub language: String,
    pub name: String,
    pub kind: String,
    pub start_line: u32,
    pub end_line: u32,
    pub scope: Vec<String>,
    pub signature: String,
}

/// A reference as stored, with its file's path.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ReferenceRow {
    pub path: String,
    pub language: String,
    pub name: String,
    pub kind: String,
    pub line: u32,
    pub column: u32,
    pub scope: Vec<String>,
}

/// The catalog database.
pub struct Catalog {
    conn: Connection,
}

impl Catalog {
    /// Opens (creating if needed) the catalog at `path`. A catalog written by another schema
    /// version, or one SQLite cannot read, is an error the caller answers by rebuilding.
    pub fn open(path: &Path) -> Result<Catalog, IndexError> {
        let conn = Connection::open(path)?;
        conn.busy_timeout(std::time::Duration::from_secs(10))?;
        conn.pragma_update(None, "journal_mode", "WAL")?;
        conn.pragma_update(None, "synchronous", "NORMAL")?;
        conn.pragma_update(None, "temp_store", "MEMORY")?;
        // 256 MB of page cache at most (allocated on demand): name indexes of millions of rows
        // stay in memory during a cold index instead of thrashing.
        conn.pragma_update(None, "cache_size", -256_000)?;
        conn.execute_batch(SCHEMA)?;
        let catalog = Catalog { conn };
        match catalog.meta("schema")? {
            None => catalog.set_meta("schema", SCHEMA_VERSION)?,
            Some(version) if version == SCHEMA_VERSION => {}
            Some(found) => {
                return Err(IndexError::SchemaChanged {
                    found,
                    expected: SCHEMA_VERSION,
                });
            }
        }
        Ok(catalog)
    }

    fn meta(&self, key: &str) -> Result<Option<String>, IndexError> {
        Ok(self
            .conn
            .query_row("SELECT value FROM meta WHERE key = ?1", [key], |row| {
                row.get(0)
            })
            .optional()?)
    }

    fn set_meta(&self, key: &str, value: &str) -> Result<(), IndexError> {
        self.conn.execute(
            "INSERT INTO meta(key, value) VALUES (?1, ?2) ON CONFLICT(key) DO UPDATE SET value = excluded.value",
            params![key, value],
        )?;
        Ok(())
    }

    /// The generation of the last committed batch (0 for a new catalog).
    pub fn generation(&self) -> Result<u64, IndexError> {
        Ok(self
            .meta("generation")?
            .and_then(|value| value.parse().ok())
            .unwrap_or(0))
    }

    /// Every indexed file, keyed by relative path.
    pub fn files(&self) -> Result<HashMap<String, FileRecord>, IndexError> {
        let mut statement = self
            .conn
            .prepare("SELECT id, path, language, size, mtime_ns, hash FROM files")?;
        let rows = statement.query_map([], |row| {
            Ok(FileRecord {
                id: row.get(0)?,
                path: row.get(1)?,
                language: row.get(2)?,
                size: row.get::<_, i64>(3)? as u64,
                mtime_ns: row.get(4)?,
                hash: row.get::<_, i64>(5)? as u64,
            })
        })?;
        let mut files = HashMap::new();
        for row in rows {
            let record = row?;
            files.insert(record.path.clone(), record);
        }
        Ok(files)
    }

    /// The directories of the last full walk and the scan settings it used, if one finished.
    pub fn walk_stamps(&self) -> Result<Option<(String, Vec<DirStamp>)>, IndexError> {
        let Some(fingerprint) = self.meta("scan_fingerprint")? else {
            return Ok(None);
        };
        let mut statement = self
            .conn
            .prepare("SELECT path, mtime_ns, ignore_mtime_ns FROM dirs ORDER BY path")?;
        let rows = statement.query_map([], |row| {
            Ok(DirStamp {
                rel_path: row.get(0)?,
                mtime_ns: row.get(1)?,
                ignore_mtime_ns: row.get(2)?,
            })
        })?;
        let dirs: Vec<DirStamp> = rows.collect::<Result<_, _>>()?;
        Ok((!dirs.is_empty()).then_some((fingerprint, dirs)))
    }

    /// Records the directories of a finished full walk. Call only after the walk's file
    /// changes are committed: a stamp newer than the files it vouches for would hide them.
    pub fn set_walk_stamps(&self, fingerprint: &str, dirs: &[DirStamp]) -> Result<(), IndexError> {
        let tx = self.conn.unchecked_transaction()?;
        tx.execute("DELETE FROM dirs", [])?;
        {
            let mut insert = tx.prepare_cached(
                "INSERT INTO dirs(path, mtime_ns, ignore_mtime_ns) VALUES (?1, ?2, ?3)",
            )?;
            for dir in dirs {
                insert.execute(params![dir.rel_path, dir.mtime_ns, dir.ignore_mtime_ns])?;
            }
        }
        tx.execute(
            "INSERT INTO meta(key, value) VALUES ('scan_fingerprint', ?1)
             ON CONFLICT(key) DO UPDATE SET value = excluded.value",
            [fingerprint],
        )?;
        tx.commit()?;
        Ok(())
    }

    /// The bytes of indexed source per language, largest first.
    pub fn language_bytes(&self) -> Result<Vec<(String, u64)>, IndexError> {
        let mut statement = self.conn.prepare(
            "SELECT language, COALESCE(SUM(size), 0) AS bytes FROM files
             GROUP BY language ORDER BY bytes DESC, language",
        )?;
        let rows = statement.query_map([], |row| {
            Ok((
                row.get::<_, String>(0)?,
                row.get::<_, i64>(1)?.max(0) as u64,
            ))
        })?;
        Ok(rows.collect::<Result<_, _>>()?)
    }

    /// Counts of files, chunks, definitions and references.
    /// Kept per file so that totals cost one pass over `files`, not over millions of rows.
    pub fn counts(&self) -> Result<CatalogCounts, IndexError> {
        Ok(self.conn.query_row(
            "SELECT COUNT(*), COALESCE(SUM(chunk_count), 0), COALESCE(SUM(def_count), 0),
                    COALESCE(SUM(ref_count), 0) FROM files",
            [],
            |row| {
                Ok(CatalogCounts {
                    files: row.get::<_, i64>(0)? as u64,
                    chunks: row.get::<_, i64>(1)? as u64,
                    definitions: row.get::<_, i64>(2)? as u64,
                    references: row.get::<_, i64>(3)? as u64,
                })
            },
        )?)
    }

    /// Sets up the secondary indexes for a bulk load into an empty catalog: those by file
    /// exist, those by name do not; [`Catalog::create_indexes`] completes them afterwards.
    pub fn prepare_bulk_load(&self) -> Result<(), IndexError> {
        self.conn.execute_batch(DROP_NAME_INDEXES)?;
        self.conn.execute_batch(FILE_INDEXES)?;
        Ok(())
    }

    /// Builds the secondary indexes (a no-op when they exist; restores those an interrupted
    /// cold build dropped). Writers call it; readers work without them, only slower.
    pub fn create_indexes(&self) -> Result<(), IndexError> {
        self.conn.execute_batch(FILE_INDEXES)?;
        self.conn.execute_batch(NAME_INDEXES)?;
        Ok(())
    }

    /// Starts a write batch.
    pub fn begin(&self) -> Result<CatalogBatch<'_>, IndexError> {
        let generation = self.generation()?;
        // The catalog is used from one thread at a time (callers hold it behind a mutex), so
        // the unchecked transaction cannot nest with another.
        let tx = self.conn.unchecked_transaction()?;
        Ok(CatalogBatch {
            tx,
            generation,
            content_changed: false,
        })
    }

    /// Calls `visit` for every chunk, in file order (used to rebuild the lexical index).
    pub fn for_each_chunk(
        &self,
        mut visit: impl FnMut(ChunkRow) -> Result<(), IndexError>,
    ) -> Result<(), IndexError> {
        let mut statement = self
            .conn
            .prepare(&format!("{CHUNK_SELECT} ORDER BY c.file_id, c.id"))?;
        let mut rows = statement.query([])?;
        while let Some(row) = rows.next()? {
            visit(chunk_from_row(row)?)?;
        }
        Ok(())
    }

    /// Every chunk id, ascending.
    pub fn chunk_ids(&self) -> Result<Vec<i64>, IndexError> {
        let mut statement = self.conn.prepare("SELECT id FROM chunks ORDER BY id")?;
        let ids = statement
            .query_map([], |row| row.get(0))?
            .collect::<Result<_, _>>()?;
        Ok(ids)
    }

    /// The size in bytes of an indexed file.
    pub fn file_size(&self, path: &str) -> Result<Option<u64>, IndexError> {
        Ok(self
            .conn
            .prepare_cached("SELECT size FROM files WHERE path = ?1")?
            .query_row([path], |row| row.get::<_, i64>(0))
            .optional()?
            .map(|size| size.max(0) as u64))
    }

    /// The text of a file's first chunk (where its imports are), if the file is indexed.
    pub fn first_chunk_text(&self, path: &str) -> Result<Option<String>, IndexError> {
        Ok(self
            .conn
            .prepare_cached(
                "SELECT c.text FROM chunks c JOIN files f ON f.id = c.file_id
                 WHERE f.path = ?1 ORDER BY c.start_line, c.id LIMIT 1",
            )?
            .query_row([path], |row| row.get(0))
            .optional()?)
    }

    /// The smallest chunk of `path` that contains `line`.
    pub fn chunk_at_line(&self, path: &str, line: u32) -> Result<Option<ChunkRow>, IndexError> {
        Ok(self
            .conn
            .prepare_cached(&format!(
                "{CHUNK_SELECT} WHERE f.path = ?1 AND c.start_line <= ?2 AND c.end_line >= ?2
                 ORDER BY c.end_line - c.start_line, c.id LIMIT 1"
            ))?
            .query_row(params![path, line], chunk_from_row)
            .optional()?)
    }

    /// The chunks with these ids, in no particular order.
    ///
    /// One statement reads them all, the ids passed as a JSON array: a statement per id began
    /// a read transaction (a WAL lock) per id, a tenth of a hybrid query's CPU for its hundred
    /// candidates.
    pub fn chunks_by_id(&self, ids: &[i64]) -> Result<HashMap<i64, ChunkRow>, IndexError> {
        if ids.is_empty() {
            return Ok(HashMap::new());
        }
        let list = format!(
            "[{}]",
            ids.iter().map(i64::to_string).collect::<Vec<_>>().join(",")
        );
        let mut statement = self.conn.prepare_cached(&format!(
            "{CHUNK_SELECT} WHERE c.id IN (SELECT value FROM json_each(?1))"
        ))?;
        let mut found = HashMap::with_capacity(ids.len());
        let mut rows = statement.query([list])?;
        while let Some(row) = rows.next()? {
            let chunk = chunk_from_row(row)?;
            found.insert(chunk.id, chunk);
        }
        Ok(found)
    }

    /// Distinct defined names whose lowercase form starts with `prefix` (lowercase), at most
    /// `limit`, using the name index.
    pub fn definition_names_with_prefix(
        &self,
        prefix: &str,
        limit: usize,
    ) -> Result<Vec<String>, IndexError> {
        let mut upper = prefix.to_string();
        upper.push(char::MAX);
        let mut statement = self.conn.prepare_cached(
            "SELECT DISTINCT name FROM defs WHERE name_lower >= ?1 AND name_lower < ?2
             ORDER BY name_lower LIMIT ?3",
        )?;
        let names = statement.query_map(params![prefix, upper, limit as i64], |row| row.get(0))?;
        Ok(names.collect::<Result<_, _>>()?)
    }

    /// Every distinct defined name.
    pub fn definition_names(&self) -> Result<Vec<String>, IndexError> {
        let mut statement = self.conn.prepare("SELECT DISTINCT name FROM defs")?;
        let names = statement.query_map([], |row| row.get(0))?;
        Ok(names.collect::<Result<_, _>>()?)
    }

    /// Definitions with exactly this name.
    pub fn definitions_named(&self, name: &str) -> Result<Vec<DefinitionRow>, IndexError> {
        let mut statement = self.conn.prepare_cached(&format!(
            "{DEF_SELECT} WHERE d.name_lower = ?1 AND d.name = ?2 ORDER BY f.path, d.start_line"
        ))?;
        let rows = statement.query_map(params![name.to_lowercase(), name], definition_from_row)?;
        Ok(rows.collect::<Result<_, _>>()?)
    }

    /// The first definition named `name` in `path` starting within the given lines.
    pub fn definition_in_lines(
        &self,
        path: &str,
        name: &str,
        start_line: u32,
        end_line: u32,
    ) -> Result<Option<DefinitionRow>, IndexError> {
        let mut statement = self.conn.prepare_cached(&format!(
            "{DEF_SELECT} WHERE d.name = ?1 AND f.path = ?2 AND d.start_line BETWEEN ?3 AND ?4
             ORDER BY d.start_line LIMIT 1"
        ))?;
        Ok(statement
            .query_row(
                params![name, path, start_line, end_line],
                definition_from_row,
            )
            .optional()?)
    }

    /// Every definition, by path and line. Sorted here, not by SQLite: on a tree with two
    /// million definitions, `ORDER BY` doubled the query's time.
    pub fn all_definitions(&self) -> Result<Vec<DefinitionRow>, IndexError> {
        let mut statement = self.conn.prepare(DEF_SELECT)?;
        let rows = statement.query_map([], definition_from_row)?;
        let mut definitions: Vec<DefinitionRow> = rows.collect::<Result<_, _>>()?;
        definitions
            .sort_by(|a, b| (a.path.as_str(), a.start_line).cmp(&(b.path.as_str(), b.start_line)));
        Ok(definitions)
    }

    /// References to exactly this name, in path, line and column order, at most `limit`.
    pub fn references_named(
        &self,
        name: &str,
        limit: usize,
    ) -> Result<Vec<ReferenceRow>, IndexError> {
        let mut statement = self.conn.prepare_cached(
            "SELECT f.path, f.language, r.data FROM ref_names n
             JOIN files f ON f.id = n.file_id JOIN file_refs r ON r.file_id = n.file_id
             WHERE n.name = ?1 ORDER BY f.path",
        )?;
        let mut rows = statement.query([name])?;
        let mut found = Vec::new();
        while found.len() < limit
            && let Some(row) = rows.next()?
        {
            let path: String = row.get(0)?;
            let language: String = row.get(1)?;
            let data = row.get_ref(2)?.as_blob().map_err(rusqlite::Error::from)?;
            let decoded = refcodec::decode(data).map_err(|message| IndexError::CorruptCatalog {
                message: format!("references of {path}: {message}"),
            })?;
            for reference in decoded.named(name) {
                if found.len() >= limit {
                    break;
                }
                found.push(ReferenceRow {
                    path: path.clone(),
                    language: language.clone(),
                    name: name.to_string(),
                    kind: reference.kind.name().to_string(),
                    line: reference.line,
                    column: reference.column,
                    scope: decoded.scope(reference.scope).to_vec(),
                });
            }
        }
        Ok(found)
    }

    /// For each file, how often it references each name, in no particular order. Names
    /// defined nowhere are included: filtering them in SQL (`IN (SELECT name FROM defs)`) cost
    /// ten times the query itself on a large tree, and the caller looks every name up anyway.
    pub fn reference_counts(&self) -> Result<Vec<(String, String, u32)>, IndexError> {
        let mut statement = self.conn.prepare(
            "SELECT f.path, n.name, n.count FROM ref_names n JOIN files f ON f.id = n.file_id",
        )?;
        let rows = statement.query_map([], |row| Ok((row.get(0)?, row.get(1)?, row.get(2)?)))?;
        Ok(rows.collect::<Result<_, _>>()?)
    }
}

/// What the index in `index_dir` holds and the generation it is at, read from its catalog alone:
/// no workspace is opened, nothing scanned, no writer lock taken (what `lode doctor` reports).
/// Opening creates an empty catalog where none is, so callers look for [`CATALOG_FILE`] first;
/// a catalog another schema wrote is [`IndexError::SchemaChanged`].
pub fn index_counts(index_dir: &Path) -> Result<(CatalogCounts, u64), IndexError> {
    let catalog = Catalog::open(&index_dir.join(CATALOG_FILE))?;
    Ok((catalog.counts()?, catalog.generation()?))
}

/// Row counts of the catalog.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CatalogCounts {
    pub files: u64,
    pub chunks: u64,
    pub definitions: u64,
    pub references: u64,
}

const CHUNK_SELECT: &str =
    "SELECT c.id, f.path, f.language, c.start_line, c.end_line, c.symbol, c.kind,
    c.scope, c.defined_names, c.text FROM chunks c JOIN files f ON f.id = c.file_id";

const DEF_SELECT: &str =
    "SELECT f.path, f.language, d.name, d.kind, d.start_line, d.end_line, d.scope,
    d.signature FROM defs d JOIN files f ON f.id = d.file_id";

fn chunk_from_row(row: &rusqlite::Row<'_>) -> rusqlite::Result<ChunkRow> {
    Ok(ChunkRow {
        id: row.get(0)?,
        path: row.get(1)?,
        language: row.get(2)?,
        start_line: row.get(3)?,
        end_line: row.get(4)?,
        symbol: row.get(5)?,
        kind: row.get(6)?,
        scope: split_scope(&row.get::<_, String>(7)?),
        defined_names: split_scope(&row.get::<_, String>(8)?),
        text: row.get(9)?,
    })
}

fn definition_from_row(row: &rusqlite::Row<'_>) -> rusqlite::Result<DefinitionRow> {
    Ok(DefinitionRow {
        path: row.get(0)?,
        language: row.get(1)?,
        name: row.get(2)?,
        kind: row.get(3)?,
        start_line: row.get(4)?,
        end_line: row.get(5)?,
        scope: split_scope(&row.get::<_, String>(6)?),
        signature: row.get(7)?,
    })
}

fn join_scope(labels: &[String]) -> String {
    let mut joined = String::new();
    for (i, label) in labels.iter().enumerate() {
        if i > 0 {
            joined.push(SCOPE_SEPARATOR);
        }
        joined.push_str(label);
    }
    joined
}

fn split_scope(joined: &str) -> Vec<String> {
    if joined.is_empty() {
        Vec::new()
    } else {
        joined.split(SCOPE_SEPARATOR).map(str::to_string).collect()
    }
}

/// The identity of a file's content, as recorded in the catalog.
pub fn content_hash(text: &str) -> u64 {
    xxhash_rust::xxh3::xxh3_64(text.as_bytes())
}

/// One write transaction over the catalog.
pub struct CatalogBatch<'c> {
    tx: Transaction<'c>,
    generation: u64,
    /// Whether a file's chunks, symbols or references were written or removed (not just its
    /// size and mtime): only then is the commit a new generation.
    content_changed: bool,
}

impl CatalogBatch<'_> {
    /// Removes a file and everything derived from it. Returns whether it was indexed.
    pub fn remove_file(&mut self, path: &str) -> Result<bool, IndexError> {
        let id: Option<i64> = self
            .tx
            .prepare_cached("SELECT id FROM files WHERE path = ?1")?
            .query_row([path], |row| row.get(0))
            .optional()?;
        let Some(id) = id else {
            return Ok(false);
        };
        self.content_changed = true;
        for statement in [
            "DELETE FROM chunks WHERE file_id = ?1",
            "DELETE FROM defs WHERE file_id = ?1",
            "DELETE FROM file_refs WHERE file_id = ?1",
            "DELETE FROM ref_names WHERE file_id = ?1",
            "DELETE FROM files WHERE id = ?1",
        ] {
            self.tx.prepare_cached(statement)?.execute([id])?;
        }
        Ok(true)
    }

    /// Records a file's new metadata without touching its derived rows (content unchanged).
    pub fn touch_file(&mut self, path: &str, size: u64, mtime_ns: i64) -> Result<(), IndexError> {
        self.tx
            .prepare_cached("UPDATE files SET size = ?2, mtime_ns = ?3 WHERE path = ?1")?
            .execute(params![path, size as i64, mtime_ns])?;
        Ok(())
    }

    /// Replaces a file's rows with freshly parsed ones; returns the ids given to its chunks.
    pub fn put_file(
        &mut self,
        path: &str,
        language: Language,
        size: u64,
        mtime_ns: i64,
        hash: u64,
        parsed: &ParsedFile,
    ) -> Result<Vec<i64>, IndexError> {
        self.remove_file(path)?;
        self.content_changed = true;
        self.tx
            .prepare_cached(
                "INSERT INTO files(path, language, size, mtime_ns, hash, chunk_count, def_count, ref_count)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
            )?
            .execute(params![
                path,
                language.name(),
                size as i64,
                mtime_ns,
                hash as i64,
                parsed.chunks.len() as i64,
                parsed.tags.definitions.len() as i64,
                parsed.tags.references.len() as i64,
            ])?;
        let file_id = self.tx.last_insert_rowid();

        let mut chunk_ids = Vec::with_capacity(parsed.chunks.len());
        let mut insert_chunk = self.tx.prepare_cached(
            "INSERT INTO chunks(file_id, start_line, end_line, symbol, kind, scope, defined_names, text)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
        )?;
        for chunk in &parsed.chunks {
            insert_chunk.execute(params![
                file_id,
                chunk.start_line,
                chunk.end_line,
                chunk.symbol,
                chunk.kind.map(DefKind::name),
                join_scope(&chunk.scope),
                join_scope(&chunk.defined_names),
                chunk.text,
            ])?;
            chunk_ids.push(self.tx.last_insert_rowid());
        }
        drop(insert_chunk);

        let mut insert_def = self.tx.prepare_cached(
            "INSERT INTO defs(file_id, name, name_lower, kind, start_line, end_line, scope, signature)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
        )?;
        for def in &parsed.tags.definitions {
            insert_def.execute(params![
                file_id,
                def.name,
                def.name.to_lowercase(),
                def.kind.name(),
                def.start_line,
                def.end_line,
                join_scope(&def.scope),
                def.signature,
            ])?;
        }
        drop(insert_def);

        if !parsed.tags.references.is_empty() {
            let encoded = refcodec::encode(&parsed.tags.references);
            self.tx
                .prepare_cached("INSERT INTO file_refs(file_id, data) VALUES (?1, ?2)")?
                .execute(params![file_id, encoded.data])?;
            let mut insert_name = self.tx.prepare_cached(
                "INSERT INTO ref_names(file_id, name, count) VALUES (?1, ?2, ?3)",
            )?;
            for (name, count) in encoded.name_counts() {
                insert_name.execute(params![file_id, name, count])?;
            }
        }
        Ok(chunk_ids)
    }

    /// Commits the batch and returns the generation the catalog is at: the next one when
    /// content changed, else the same (a batch that only refreshed sizes and mtimes leaves
    /// the lexical index and the vectors in step, so they need no catch-up pass).
    pub fn commit(self) -> Result<u64, IndexError> {
        if !self.content_changed {
            self.tx.commit()?;
            return Ok(self.generation);
        }
        let next = self.generation + 1;
        self.tx.execute(
            "INSERT INTO meta(key, value) VALUES ('generation', ?1)
             ON CONFLICT(key) DO UPDATE SET value = excluded.value",
            [next.to_string()],
        )?;
        self.tx.commit()?;
        Ok(next)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use lode_syntax::parse_file;

    #[test]
    fn chunks_are_read_by_id_in_one_statement_skipping_unknown_and_repeated_ids() {
        let dir = tempfile::tempdir().unwrap();
        let catalog = Catalog::open(&dir.path().join(CATALOG_FILE)).unwrap();
        let source = "fn alpha() -> u32 {\n    1\n}\n\nfn beta() -> u32 {\n    2\n}\n";
        let parsed = parse_file(Language::Rust, source).unwrap();
        let mut batch = catalog.begin().unwrap();
        let ids = batch
            .put_file(
                "src/lib.rs",
                Language::Rust,
                source.len() as u64,
                0,
                7,
                &parsed,
            )
            .unwrap();
        batch.commit().unwrap();
        assert!(!ids.is_empty());

        let missing = ids.iter().max().unwrap() + 1_000;
        let mut asked = ids.clone();
        asked.push(missing);
        asked.push(ids[0]);
        let rows = catalog.chunks_by_id(&asked).unwrap();
        assert_eq!(rows.len(), ids.len());
        for id in &ids {
            let row = &rows[id];
            assert_eq!(row.id, *id);
            assert_eq!(row.path, "src/lib.rs");
            assert_eq!(row.language, "rust");
            assert!(source.contains(row.text.trim()), "{:?}", row.text);
        }
        assert!(catalog.chunks_by_id(&[]).unwrap().is_empty());
        assert!(catalog.chunks_by_id(&[missing]).unwrap().is_empty());
    }
}
