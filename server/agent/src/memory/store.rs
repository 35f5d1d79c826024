//! The memory store: one SQLite file per user (default `<data dir>/lode/memory.sqlite`), each
//! memory with its text (secrets redacted before it is written), provenance, workspace scope and
//! optional embedding vector (little-endian `f32` blob, tagged with the embedder's identity).
//! Search scores every memory in scope exactly: BM25 over the texts plus cosine similarity.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use lode_index::Embedder;
use parking_lot::Mutex;
use rusqlite::{Connection, OptionalExtension, params};

use crate::redact::{execute_redacted, redact_stored_text, redact_text};
use crate::skills::rank::{Bm25Index, HybridWeights, cosine, hybrid_scores};

/// Longest memory saved with `memory_save`, in characters.
pub const MAX_MEMORY_CHARS: usize = 4_000;
/// Longest session summary kept, in characters (longer ones are cut).
pub const MAX_SUMMARY_CHARS: usize = 8_000;
/// A memory needs at least this hybrid score (0..1) to be returned by search or recall.
const MIN_SCORE: f64 = 0.05;

#[derive(Debug, thiserror::Error)]
pub enum MemoryError {
    #[error("cannot create {path}: {source}")]
    CreateDir {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("memory database {path}: {source}")]
    Sqlite {
        path: PathBuf,
        source: rusqlite::Error,
    },
    #[error("no data directory for the default memory store; configure a path")]
    NoDataDir,
    #[error("the memory is empty")]
    Empty,
    #[error("the memory has {chars} characters; at most {MAX_MEMORY_CHARS} are allowed")]
    TooLong { chars: usize },
}

/// Where a memory came from, as lode observed it (never as the model claims). Only what the
/// user typed themselves is trusted; everything else is shown to the model as untrusted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MemorySource {
    /// The user typed it themselves (`/remember`): the one trusted source.
    User,
    /// Written by the model with nothing untrusted observed in its context, or a session
    /// summary (which lode asks the model for).
    Agent,
    /// Output of a tool (memories stored by older versions or by API callers).
    Tool { name: String },
    /// Content of a file (memories stored by older versions or by API callers).
    File { path: String },
    /// Saved by the model during a turn in which untrusted content entered its context: what
    /// lode saw enter it (`tool:read_file`, `file:notes.md`, `context:repo_map`, …; see
    /// [`lode_tools::untrusted::TurnSources`]).
    Observed { sources: Vec<String> },
    /// Stored by a version of lode that took the source from the model's arguments: `claim` is
    /// what the model said (`user`), kept for display and never trusted.
    Claimed { claim: String },
}

impl MemorySource {
    /// Whether the memory is shown to the model as untrusted data: everything but what the
    /// user typed.
    pub fn is_untrusted(&self) -> bool {
        !matches!(self, MemorySource::User)
    }

    fn kind(&self) -> &'static str {
        match self {
            MemorySource::User => "user",
            MemorySource::Agent => "agent",
            MemorySource::Tool { .. } => "tool",
            MemorySource::File { .. } => "file",
            MemorySource::Observed { .. } => "observed",
            MemorySource::Claimed { .. } => "claimed",
        }
    }

    fn detail(&self) -> Option<String> {
        match self {
            MemorySource::Tool { name } => Some(name.clone()),
            MemorySource::File { path } => Some(path.clone()),
            MemorySource::Observed { sources } => Some(sources.join("\n")),
            MemorySource::Claimed { claim } => Some(claim.clone()),
            MemorySource::User | MemorySource::Agent => None,
        }
    }

    /// `by_lode` is false for rows written before lode recorded provenance itself: their
    /// `user` came from the model's arguments and is only a claim.
    fn from_columns(kind: &str, detail: Option<String>, by_lode: bool) -> Self {
        match kind {
            "user" if by_lode => MemorySource::User,
            "user" => MemorySource::Claimed {
                claim: "user".to_owned(),
            },
            "tool" => MemorySource::Tool {
                name: detail.unwrap_or_default(),
            },
            "file" => MemorySource::File {
                path: detail.unwrap_or_default(),
            },
            "observed" => MemorySource::Observed {
                sources: detail
                    .unwrap_or_default()
                    .lines()
                    .filter(|line| !line.is_empty())
                    .map(str::to_owned)
                    .collect(),
            },
            "claimed" => MemorySource::Claimed {
                claim: detail.unwrap_or_default(),
            },
            _ => MemorySource::Agent,
        }
    }

    /// Short human label: `user`, `agent`, `tool:grep`, `file:src/lib.rs`,
    /// `agent after tool:read_file, file:notes.md`, `claimed:user`.
    pub fn label(&self) -> String {
        match self {
            MemorySource::Observed { sources } => format!("agent after {}", sources.join(", ")),
            MemorySource::Claimed { claim } => format!("claimed:{claim}"),
            other => match other.detail() {
                Some(detail) => format!("{}:{detail}", other.kind()),
                None => other.kind().to_owned(),
            },
        }
    }
}

/// What kind of entry a memory is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MemoryKind {
    Note,
    SessionSummary,
}

impl MemoryKind {
    fn as_str(self) -> &'static str {
        match self {
            MemoryKind::Note => "note",
            MemoryKind::SessionSummary => "session_summary",
        }
    }
}

/// One stored memory.
#[derive(Debug, Clone, PartialEq)]
pub struct Memory {
    pub id: i64,
    /// Already redacted.
    pub text: String,
    pub source: MemorySource,
    pub kind: MemoryKind,
    /// The workspace root it belongs to; `None` for memories shared by every workspace.
    pub workspace: Option<PathBuf>,
    pub session_id: Option<String>,
    /// RFC 3339.
    pub created_at: String,
}

/// A memory with its search score (0..1).
#[derive(Debug, Clone, PartialEq)]
pub struct ScoredMemory {
    pub memory: Memory,
    pub score: f64,
}

/// Which memories a search sees.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MemoryScope {
    /// This workspace's memories plus global ones (the default).
    Workspace(PathBuf),
    /// Only global memories.
    Global,
    /// Everything (for `lode memory` style listings).
    All,
}

/// A memory to store.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewMemory {
    pub text: String,
    pub source: MemorySource,
    /// `None` stores a global memory.
    pub workspace: Option<PathBuf>,
    pub session_id: Option<String>,
}

/// The per-user memory store. Methods are synchronous (SQLite and the embedder); call them from
/// `spawn_blocking` in async code.
pub struct MemoryStore {
    connection: Mutex<Connection>,
    path: PathBuf,
    embedder: Option<Arc<dyn Embedder>>,
}

impl std::fmt::Debug for MemoryStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MemoryStore")
            .field("path", &self.path)
            .finish_non_exhaustive()
    }
}

/// The `[memory]` config section.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct MemorySettings {
    /// `false` turns long-term memory off (no recall, no summaries, no memory tools).
    pub enabled: bool,
    /// The store (default `<data dir>/lode/memory.sqlite`).
    pub path: Option<PathBuf>,
    /// Whether relevant memories enter each turn's context automatically (default true).
    pub auto_recall: bool,
    /// Whether a session's summary is stored when it ends (default true).
    pub session_summaries: bool,
}

impl Default for MemorySettings {
    fn default() -> Self {
        Self {
            enabled: true,
            path: None,
            auto_recall: true,
            session_summaries: true,
        }
    }
}

impl MemorySettings {
    /// Reads a `[memory]` table on its own (the config loader reads the section as part of
    /// `crate::config::Config`, with the file and line of any error).
    pub fn from_toml(value: &toml::Value) -> Result<Self, String> {
        value
            .clone()
            .try_into()
            .map_err(|e: toml::de::Error| format!("invalid [memory] section: {}", e.message()))
    }

    /// Opens the configured store (`None` when memory is disabled).
    pub fn open(
        &self,
        embedder: Option<Arc<dyn Embedder>>,
    ) -> Result<Option<MemoryStore>, MemoryError> {
        if !self.enabled {
            return Ok(None);
        }
        match &self.path {
            Some(path) => MemoryStore::open(path, embedder).map(Some),
            None => MemoryStore::open_default(embedder).map(Some),
        }
    }
}

/// `<data dir>/lode/memory.sqlite`.
pub fn default_memory_path() -> Option<PathBuf> {
    dirs::data_dir().map(|dir| dir.join("lode").join("memory.sqlite"))
}

const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS memories (
    id INTEGER PRIMARY KEY,
    text TEXT NOT NULL,
    source TEXT NOT NULL,
    source_detail TEXT,
    kind TEXT NOT NULL,
    workspace TEXT,
    session_id TEXT,
    created_at TEXT NOT NULL,
    embedding BLOB,
    embedding_model TEXT,
    provenance_by_lode INTEGER
);
CREATE INDEX IF NOT EXISTS memories_workspace ON memories(workspace);
";

impl MemoryStore {
    /// Opens (creating when missing) the store at `path`. `embedder` adds semantic search.
    pub fn open(path: &Path, embedder: Option<Arc<dyn Embedder>>) -> Result<Self, MemoryError> {
        if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
            std::fs::create_dir_all(parent).map_err(|source| MemoryError::CreateDir {
                path: parent.to_owned(),
                source,
            })?;
        }
        let sqlite = |source| MemoryError::Sqlite {
            path: path.to_owned(),
            source,
        };
        let connection = Connection::open(path).map_err(sqlite)?;
        connection
            .busy_timeout(std::time::Duration::from_secs(5))
            .map_err(sqlite)?;
        connection
            .execute_batch("PRAGMA journal_mode = WAL;")
            .map_err(sqlite)?;
        connection.execute_batch(SCHEMA).map_err(sqlite)?;
        add_provenance_column(&connection).map_err(sqlite)?;
        Ok(Self {
            connection: Mutex::new(connection),
            path: path.to_owned(),
            embedder,
        })
    }

    /// Opens the default per-user store.
    pub fn open_default(embedder: Option<Arc<dyn Embedder>>) -> Result<Self, MemoryError> {
        let path = default_memory_path().ok_or(MemoryError::NoDataDir)?;
        Self::open(&path, embedder)
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    fn error(&self, source: rusqlite::Error) -> MemoryError {
        MemoryError::Sqlite {
            path: self.path.clone(),
            source,
        }
    }

    /// Stores a memory after redacting secrets. Saving text identical to a memory already in the
    /// same workspace scope returns that memory instead of a duplicate.
    pub fn save(&self, memory: NewMemory) -> Result<Memory, MemoryError> {
        let text = redact_text(memory.text.trim());
        if text.is_empty() {
            return Err(MemoryError::Empty);
        }
        let chars = text.chars().count();
        if chars > MAX_MEMORY_CHARS {
            return Err(MemoryError::TooLong { chars });
        }
        self.insert(
            text,
            memory.source,
            MemoryKind::Note,
            memory.workspace,
            memory.session_id,
        )
    }

    /// Stores the summary of a finished session so later sessions in the workspace recall it.
    /// Secrets are redacted; a summary longer than [`MAX_SUMMARY_CHARS`] is cut.
    pub fn save_session_summary(
        &self,
        workspace: &Path,
        session_id: &str,
        summary: &str,
    ) -> Result<Memory, MemoryError> {
        let mut text = redact_text(summary.trim());
        if text.is_empty() {
            return Err(MemoryError::Empty);
        }
        if text.chars().count() > MAX_SUMMARY_CHARS {
            text = text.chars().take(MAX_SUMMARY_CHARS).collect();
            text.push('…');
        }
        self.insert(
            text,
            MemorySource::Agent,
            MemoryKind::SessionSummary,
            Some(workspace.to_owned()),
            Some(session_id.to_owned()),
        )
    }

    /// The one write of a memory. The text is redacted here (the callers redact too, to check
    /// its length), and the `INSERT` goes through [`execute_redacted`], which redacts every text
    /// value bound to it, so no column of `memories` ever holds a secret in clear, including one
    /// added later. The embedding is computed from the redacted text.
    fn insert(
        &self,
        text: String,
        source: MemorySource,
        kind: MemoryKind,
        workspace: Option<PathBuf>,
        session_id: Option<String>,
    ) -> Result<Memory, MemoryError> {
        let text = redact_stored_text(&text).into_owned();
        let workspace_text = workspace.as_ref().map(|w| w.to_string_lossy().into_owned());
        // Embed before taking the lock; a failing embedder stores the memory without a vector.
        let embedding = self.embedder.as_ref().and_then(|embedder| {
            let vector = embedder.embed_batch(&[text.as_str()]).ok()?.pop()?;
            Some((vector_to_blob(&vector), embedder.identity().to_string()))
        });
        let connection = self.connection.lock();
        // What the user typed is never folded into an untrusted memory with the same text.
        let existing: Option<i64> = connection
            .query_row(
                "SELECT id FROM memories WHERE text = ?1 AND workspace IS ?2 AND kind = ?3
                     AND (?4 = 0 OR (source = 'user' AND provenance_by_lode = 1))",
                params![
                    text,
                    workspace_text,
                    kind.as_str(),
                    source == MemorySource::User
                ],
                |row| row.get(0),
            )
            .optional()
            .map_err(|e| self.error(e))?;
        let id = match existing {
            Some(id) => id,
            None => {
                let now = chrono::Utc::now().to_rfc3339();
                let (blob, model) = match embedding {
                    Some((blob, model)) => (Some(blob), Some(model)),
                    None => (None, None),
                };
                execute_redacted(
                    &connection,
                    "INSERT INTO memories (text, source, source_detail, kind, workspace,
                             session_id, created_at, embedding, embedding_model,
                             provenance_by_lode)
                         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, 1)",
                    params![
                        text,
                        source.kind(),
                        source.detail(),
                        kind.as_str(),
                        workspace_text,
                        session_id,
                        now,
                        blob,
                        model
                    ],
                )
                .map_err(|e| self.error(e))?;
                connection.last_insert_rowid()
            }
        };
        drop(connection);
        self.get(id)?
            .ok_or_else(|| self.error(rusqlite::Error::QueryReturnedNoRows))
    }

    pub fn get(&self, id: i64) -> Result<Option<Memory>, MemoryError> {
        let connection = self.connection.lock();
        connection
            .query_row(
                &format!("SELECT {COLUMNS} FROM memories WHERE id = ?1"),
                params![id],
                |row| Ok(row_to_memory(row)?.0),
            )
            .optional()
            .map_err(|e| self.error(e))
    }

    /// Deletes a memory; returns whether it existed.
    pub fn delete(&self, id: i64) -> Result<bool, MemoryError> {
        let removed = execute_redacted(
            &self.connection.lock(),
            "DELETE FROM memories WHERE id = ?1",
            params![id],
        )
        .map_err(|e| self.error(e))?;
        Ok(removed > 0)
    }

    /// Memories in scope, newest first.
    pub fn list(&self, scope: &MemoryScope, limit: usize) -> Result<Vec<Memory>, MemoryError> {
        let mut memories: Vec<Memory> = self
            .load_scope(scope)?
            .into_iter()
            .map(|(memory, _, _)| memory)
            .collect();
        memories.sort_by_key(|memory| std::cmp::Reverse(memory.id));
        memories.truncate(limit);
        Ok(memories)
    }

    fn load_scope(&self, scope: &MemoryScope) -> Result<Vec<StoredRow>, MemoryError> {
        let connection = self.connection.lock();
        let (filter, workspace): (&str, Option<String>) = match scope {
            MemoryScope::Workspace(root) => (
                "WHERE workspace IS NULL OR workspace = ?1",
                Some(root.to_string_lossy().into_owned()),
            ),
            MemoryScope::Global => ("WHERE workspace IS NULL AND ?1 IS NULL", None),
            MemoryScope::All => ("WHERE ?1 IS NULL", None),
        };
        let mut statement = connection
            .prepare(&format!(
                "SELECT {COLUMNS}, embedding, embedding_model FROM memories {filter} ORDER BY id"
            ))
            .map_err(|e| self.error(e))?;
        let rows = statement
            .query_map(params![workspace], |row| {
                let (memory, next) = row_to_memory(row)?;
                Ok((memory, row.get(next)?, row.get(next + 1)?))
            })
            .map_err(|e| self.error(e))?;
        rows.collect::<Result<_, _>>().map_err(|e| self.error(e))
    }

    /// The memories in scope that best match `query` (hybrid BM25 + embedding), best first.
    pub fn search(
        &self,
        query: &str,
        scope: &MemoryScope,
        limit: usize,
    ) -> Result<Vec<ScoredMemory>, MemoryError> {
        let rows = self.load_scope(scope)?;
        if rows.is_empty() || limit == 0 {
            return Ok(Vec::new());
        }
        let bm25 =
            Bm25Index::new(rows.iter().map(|(memory, _, _)| memory.text.as_str())).scores(query);
        let cosines: Option<Vec<f32>> = self.embedder.as_ref().and_then(|embedder| {
            let model = embedder.identity().to_string();
            let query_vector = embedder.embed_query(query).ok()?;
            Some(
                rows.iter()
                    .map(|(_, blob, blob_model)| match (blob, blob_model) {
                        (Some(blob), Some(blob_model)) if *blob_model == model => {
                            cosine(&query_vector, &blob_to_vector(blob))
                        }
                        _ => 0.0,
                    })
                    .collect(),
            )
        });
        let scores = hybrid_scores(&bm25, cosines.as_deref(), HybridWeights::default());
        let mut scored: Vec<ScoredMemory> = rows
            .into_iter()
            .zip(scores)
            .filter(|(_, score)| *score >= MIN_SCORE)
            .map(|((memory, _, _), score)| ScoredMemory { memory, score })
            .collect();
        // Best first; among equals, the newest.
        scored.sort_by(|a, b| {
            b.score
                .total_cmp(&a.score)
                .then(b.memory.id.cmp(&a.memory.id))
        });
        scored.truncate(limit);
        Ok(scored)
    }

    /// The memories to put into a turn's context: the best matches for `query` in `workspace`'s
    /// scope that fit `token_budget` (estimated as characters / 4), best first.
    pub fn recall(
        &self,
        query: &str,
        workspace: &Path,
        token_budget: usize,
    ) -> Result<Vec<Memory>, MemoryError> {
        let candidates = self.search(query, &MemoryScope::Workspace(workspace.to_owned()), 50)?;
        let mut used = 0usize;
        let mut recalled = Vec::new();
        for candidate in candidates {
            let cost = estimate_tokens(&candidate.memory.text) + 20;
            if used + cost > token_budget {
                continue;
            }
            used += cost;
            recalled.push(candidate.memory);
        }
        Ok(recalled)
    }
}

/// A rough token count (characters / 4), good enough for budgeting a small context share.
pub fn estimate_tokens(text: &str) -> usize {
    text.chars().count().div_ceil(4)
}

/// A memory with its stored embedding blob and the identity of the model that made it.
type StoredRow = (Memory, Option<Vec<u8>>, Option<String>);

const COLUMNS: &str =
    "id, text, source, source_detail, kind, workspace, session_id, created_at, provenance_by_lode";

/// Stores from before lode recorded provenance itself lack `provenance_by_lode`; their rows keep
/// working and read as NULL there (their `user` is then only the model's claim).
fn add_provenance_column(connection: &Connection) -> rusqlite::Result<()> {
    let present = || {
        connection
            .prepare("SELECT provenance_by_lode FROM memories LIMIT 0")
            .is_ok()
    };
    if present() {
        return Ok(());
    }
    match connection.execute_batch("ALTER TABLE memories ADD COLUMN provenance_by_lode INTEGER") {
        // Another process may have added it in the meantime.
        Err(_) if present() => Ok(()),
        other => other,
    }
}

fn row_to_memory(row: &rusqlite::Row<'_>) -> rusqlite::Result<(Memory, usize)> {
    let source: String = row.get(2)?;
    let detail: Option<String> = row.get(3)?;
    let kind: String = row.get(4)?;
    let workspace: Option<String> = row.get(5)?;
    let by_lode: Option<i64> = row.get(8)?;
    Ok((
        Memory {
            id: row.get(0)?,
            text: row.get(1)?,
            source: MemorySource::from_columns(&source, detail, by_lode == Some(1)),
            kind: if kind == "session_summary" {
                MemoryKind::SessionSummary
            } else {
                MemoryKind::Note
            },
            workspace: workspace.map(PathBuf::from),
            session_id: row.get(6)?,
            created_at: row.get(7)?,
        },
        9,
    ))
}

fn vector_to_blob(vector: &[f32]) -> Vec<u8> {
    vector.iter().flat_map(|x| x.to_le_bytes()).collect()
}

fn blob_to_vector(blob: &[u8]) -> Vec<f32> {
    blob.chunks_exact(4)
        .map(|bytes| f32::from_le_bytes([bytes[0], bytes[1], bytes[2], bytes[3]]))
        .collect()
}
