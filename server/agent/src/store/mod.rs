//! The session store: sessions, their messages and their tool calls, in SQLite.
//!
//! The caller chooses the file (lode uses `<root>/.lode/agent.sqlite`); the store owns the tables
//! `sessions`, `messages` and `tool_calls` in it and leaves every other table alone. The database
//! runs in WAL mode, every write is one transaction (a crash leaves either the old or the new
//! state), and a [`SessionStore`] is `Send + Sync` so one `Arc<SessionStore>` serves all the
//! sessions of a process.
//!
//! Nothing is stored in clear that the redaction filter ([`crate::redact`]) recognises as a
//! secret: every write goes through one function, `write`, which redacts every text value bound to
//! the statement. Loading a session therefore returns the redacted form (`[REDACTED]` where a
//! secret stood).
//!
//! Every message has a [`Visibility`]: what the user sees when a session is replayed and what the
//! model is sent are different views of the same rows. Compaction ([`SessionStore::mark_compacted`])
//! never deletes: the turns it replaces become [`Visibility::UserOnly`] and the summary that
//! replaces them is [`Visibility::ModelOnly`].
//!
//! What the model is sent of a session is also kept in memory ([`SessionStore::model_messages_with`]):
//! loaded from SQLite once, then kept current by the store's own writes (an appended message is
//! read back as stored, redacted; a compaction or a deletion drops the session's copy), and
//! dropped whole when another connection (another process) committed to the database, which
//! SQLite's `data_version` tells. So a turn costs no read of the whole session, and what it gets
//! is always what a load from the file gives.
//!
//! ```text
//! let store = Arc::new(SessionStore::open(&root.join(".lode/agent.sqlite"))?);
//! let session = store.create_session(&NewSession { cwd, mode: "code".into(), model: Some("openai".into()) })?;
//! let seq = store.append_message(&session.id, &Message::user_text("hi"), Visibility::Both)?;
//! let history = store.load_history(&session.id)?;
//! let for_the_model: Vec<Message> = history.model_messages();
//! ```

mod schema;

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::time::Duration;

use chrono::{DateTime, SecondsFormat, Utc};
use parking_lot::{Mutex, MutexGuard};
use rusqlite::types::ToSql;
use rusqlite::{Connection, OptionalExtension, Row, TransactionBehavior, params};
use serde::{Deserialize, Serialize};

use crate::event::{Location, ToolCallStart, ToolContent, ToolStatus};
use lode_llm::{ContentPart, Message, Role};

/// Why a store operation failed.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("session store {path}: {source}")]
    Open {
        path: PathBuf,
        #[source]
        source: rusqlite::Error,
    },
    #[error("could not create the directory for the session store {path}: {source}")]
    CreateDir {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("session store: {0}")]
    Sqlite(#[from] rusqlite::Error),
    #[error(
        "the session store was written by a newer lode (schema {found}; this build reads {supported})"
    )]
    UnsupportedSchema { found: i64, supported: i64 },
    #[error("no session with id {0}")]
    NoSuchSession(String),
    #[error("session {session}: no tool call with id {call}")]
    NoSuchToolCall { session: String, call: String },
    #[error("session {session}: no message with seq {seq}")]
    NoSuchMessage { session: String, seq: u64 },
    #[error("session store: a stored value could not be read: {0}")]
    Corrupt(String),
}

/// Who a stored message is shown to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Visibility {
    /// An ordinary turn: replayed to the user and sent to the model.
    Both,
    /// Replayed to the user, no longer sent to the model (turns a compaction summary replaced).
    UserOnly,
    /// Sent to the model, never shown (a compaction summary).
    ModelOnly,
    /// Kept for the record, shown to nobody (a summary that a later compaction replaced).
    Archived,
}

impl Visibility {
    pub fn to_user(self) -> bool {
        matches!(self, Visibility::Both | Visibility::UserOnly)
    }

    pub fn to_model(self) -> bool {
        matches!(self, Visibility::Both | Visibility::ModelOnly)
    }

    fn as_str(self) -> &'static str {
        match self {
            Visibility::Both => "both",
            Visibility::UserOnly => "user_only",
            Visibility::ModelOnly => "model_only",
            Visibility::Archived => "archived",
        }
    }

    fn parse(text: &str) -> Result<Self, StoreError> {
        Ok(match text {
            "both" => Visibility::Both,
            "user_only" => Visibility::UserOnly,
            "model_only" => Visibility::ModelOnly,
            "archived" => Visibility::Archived,
            other => return Err(StoreError::Corrupt(format!("visibility {other:?}"))),
        })
    }
}

/// What a new session starts with.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewSession {
    /// The working directory the session was opened in (the workspace root, usually).
    pub cwd: PathBuf,
    /// The mode's name: `ask`, `code` or `architect`.
    pub mode: String,
    /// The configured provider name (`[[llm.providers]] name`), if one is chosen.
    pub model: Option<String>,
}

/// A session's metadata.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SessionInfo {
    /// A UUID v7 string: sorts by creation time.
    pub id: String,
    pub cwd: PathBuf,
    pub title: Option<String>,
    pub mode: String,
    pub model: Option<String>,
    pub created_at: DateTime<Utc>,
    /// Bumped by every write to the session (messages, tool calls, title, mode, model).
    pub updated_at: DateTime<Utc>,
    pub closed: bool,
}

/// One stored message.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StoredMessage {
    /// 1-based position in the session, in append order.
    pub seq: u64,
    pub role: Role,
    pub content: Vec<ContentPart>,
    pub visibility: Visibility,
    /// For a compaction summary: the last seq it replaces.
    pub summary_of: Option<u64>,
    pub created_at: DateTime<Utc>,
}

impl StoredMessage {
    pub fn to_message(&self) -> Message {
        Message {
            role: self.role,
            content: self.content.clone(),
        }
    }
}

/// One stored tool call: what was asked and, once finished, what came of it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StoredToolCall {
    /// The model's tool call id (unique within its session).
    pub id: String,
    pub session_id: String,
    /// The seq of the assistant message that made the call.
    pub message_seq: u64,
    pub tool: String,
    pub raw_input: serde_json::Value,
    pub status: ToolStatus,
    /// What the model was sent back, once finished.
    pub output: Option<String>,
    /// What a front end shows (diffs, terminal, text).
    pub display: Vec<ToolContent>,
    pub locations: Vec<Location>,
    pub started_at: DateTime<Utc>,
    pub finished_at: Option<DateTime<Utc>>,
}

/// How a tool call ended.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolCallFinish {
    /// `Completed` or `Failed` (any status is stored as given).
    pub status: ToolStatus,
    /// The text the model was sent.
    pub output: String,
    pub display: Vec<ToolContent>,
    /// Replaces the locations recorded at the start when non-empty.
    pub locations: Vec<Location>,
}

/// A whole session: metadata, every message in order, every tool call by id.
#[derive(Debug, Clone, PartialEq)]
pub struct History {
    pub session: SessionInfo,
    pub messages: Vec<StoredMessage>,
    pub tool_calls: BTreeMap<String, StoredToolCall>,
}

impl History {
    /// What the model is sent: model-visible messages, with each compaction summary standing where
    /// the turns it replaced stood.
    pub fn model_messages(&self) -> Vec<Message> {
        self.model_entries()
            .into_iter()
            .map(StoredMessage::to_message)
            .collect()
    }

    /// [`History::model_messages`], except that a message whose seq is in `in_clear` is sent as
    /// given there instead of as stored. The turn loop keeps the messages of the running turn
    /// as the model wrote them and as the tools returned them, so the store's redaction never
    /// changes what the model is sent within a turn; earlier turns come back redacted.
    pub fn model_messages_with(&self, in_clear: &BTreeMap<u64, Message>) -> Vec<Message> {
        self.model_entries()
            .into_iter()
            .map(|stored| match in_clear.get(&stored.seq) {
                Some(message) => message.clone(),
                None => stored.to_message(),
            })
            .collect()
    }

    /// [`History::model_messages`] with their stored metadata (seq, summary marker).
    pub fn model_entries(&self) -> Vec<&StoredMessage> {
        let mut visible: Vec<&StoredMessage> = self
            .messages
            .iter()
            .filter(|message| message.visibility.to_model())
            .collect();
        // A summary sorts right after the last message it replaces; everything else by seq.
        visible.sort_by_key(|message| sort_key(message));
        visible
    }

    /// What the user sees when the session is replayed, in order.
    pub fn user_messages(&self) -> impl Iterator<Item = &StoredMessage> {
        self.messages
            .iter()
            .filter(|message| message.visibility.to_user())
    }

    /// The seq of the last message, 0 for an empty session.
    pub fn last_seq(&self) -> u64 {
        self.messages.last().map_or(0, |message| message.seq)
    }
}

/// The store. Cheap to share: wrap it in an `Arc`.
pub struct SessionStore {
    path: PathBuf,
    connection: Mutex<Connection>,
    /// The model's view of recently used sessions. Only touched with `connection` locked, so it
    /// changes in step with what this store writes.
    views: Mutex<ModelViews>,
}

/// At most this many sessions' model views are kept; the least recently used goes first.
const MAX_CACHED_VIEWS: usize = 32;

/// The model's view of sessions, kept in memory (see the module's note).
#[derive(Default)]
struct ModelViews {
    /// SQLite's `data_version` when the views were last known to match the file: it changes
    /// when another connection commits, never for this connection's own writes.
    data_version: Option<i64>,
    sessions: HashMap<String, ModelView>,
    /// Bumped on every use, to find the least recently used view.
    clock: u64,
}

struct ModelView {
    /// [`History::model_entries`] of the session, owned, in the order the model sees them.
    entries: Vec<StoredMessage>,
    last_used: u64,
}

impl ModelViews {
    /// Drops every view when another connection has committed since the last check.
    fn check(&mut self, connection: &Connection) -> Result<(), StoreError> {
        let version: i64 = connection.query_row("PRAGMA data_version", [], |row| row.get(0))?;
        if self.data_version != Some(version) {
            self.sessions.clear();
            self.data_version = Some(version);
        }
        Ok(())
    }

    fn touch(&mut self, session_id: &str) -> Option<&mut ModelView> {
        self.clock += 1;
        let clock = self.clock;
        let view = self.sessions.get_mut(session_id)?;
        view.last_used = clock;
        Some(view)
    }

    fn insert(&mut self, session_id: &str, entries: Vec<StoredMessage>) {
        if self.sessions.len() >= MAX_CACHED_VIEWS
            && let Some(oldest) = self
                .sessions
                .iter()
                .min_by_key(|(_, view)| view.last_used)
                .map(|(id, _)| id.clone())
        {
            self.sessions.remove(&oldest);
        }
        self.clock += 1;
        self.sessions.insert(
            session_id.to_owned(),
            ModelView {
                entries,
                last_used: self.clock,
            },
        );
    }
}

impl std::fmt::Debug for SessionStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SessionStore")
            .field("path", &self.path)
            .finish_non_exhaustive()
    }
}

const SESSION_COLUMNS: &str = "id, cwd, title, mode, model, created_at, updated_at, closed";

impl SessionStore {
    /// Opens (creating if needed) the store at `path`, and its parent directory.
    pub fn open(path: &Path) -> Result<SessionStore, StoreError> {
        if let Some(parent) = path
            .parent()
            .filter(|parent| !parent.as_os_str().is_empty())
        {
            std::fs::create_dir_all(parent).map_err(|source| StoreError::CreateDir {
                path: parent.to_path_buf(),
                source,
            })?;
        }
        let open_error = |source| StoreError::Open {
            path: path.to_path_buf(),
            source,
        };
        let mut connection = Connection::open(path).map_err(open_error)?;
        connection
            .busy_timeout(Duration::from_secs(10))
            .map_err(open_error)?;
        connection
            .pragma_update(None, "journal_mode", "WAL")
            .map_err(open_error)?;
        connection
            .pragma_update(None, "synchronous", "NORMAL")
            .map_err(open_error)?;
        connection
            .pragma_update(None, "foreign_keys", "ON")
            .map_err(open_error)?;
        schema::migrate(&mut connection)?;
        Ok(SessionStore {
            path: path.to_path_buf(),
            connection: Mutex::new(connection),
            views: Mutex::new(ModelViews::default()),
        })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    fn views(&self) -> MutexGuard<'_, ModelViews> {
        // Views are replaced or dropped whole; one left behind by a panic is dropped by the
        // next `data_version` check at worst, and is otherwise a complete earlier state.
        self.views.lock()
    }

    /// Creates a session with a fresh UUID v7 id.
    pub fn create_session(&self, new: &NewSession) -> Result<SessionInfo, StoreError> {
        let now = Utc::now();
        let info = SessionInfo {
            id: uuid::Uuid::now_v7().to_string(),
            cwd: new.cwd.clone(),
            title: None,
            mode: new.mode.clone(),
            model: new.model.clone(),
            created_at: now,
            updated_at: now,
            closed: false,
        };
        write(
            &self.connection.lock(),
            "INSERT INTO sessions (id, cwd, title, mode, model, created_at, updated_at, closed)
             VALUES (?1, ?2, NULL, ?3, ?4, ?5, ?5, 0)",
            params![
                info.id,
                path_text(&info.cwd),
                info.mode,
                info.model,
                timestamp(now)
            ],
        )?;
        Ok(info)
    }

    /// Sessions, most recently updated first; only those opened in `cwd` when given.
    pub fn list_sessions(&self, cwd: Option<&Path>) -> Result<Vec<SessionInfo>, StoreError> {
        let connection = self.connection.lock();
        let mut sessions = Vec::new();
        match cwd {
            Some(cwd) => {
                let mut statement = connection.prepare(&format!(
                    "SELECT {SESSION_COLUMNS} FROM sessions WHERE cwd = ?1
                     ORDER BY updated_at DESC, id DESC"
                ))?;
                let mut rows = statement.query(params![path_text(cwd)])?;
                while let Some(row) = rows.next()? {
                    sessions.push(session_from_row(row)?);
                }
            }
            None => {
                let mut statement = connection.prepare(&format!(
                    "SELECT {SESSION_COLUMNS} FROM sessions ORDER BY updated_at DESC, id DESC"
                ))?;
                let mut rows = statement.query([])?;
                while let Some(row) = rows.next()? {
                    sessions.push(session_from_row(row)?);
                }
            }
        }
        Ok(sessions)
    }

    /// One session's metadata, `None` if there is no such session.
    pub fn get_session(&self, id: &str) -> Result<Option<SessionInfo>, StoreError> {
        get_session(&self.connection.lock(), id)
    }

    /// Everything stored for a session.
    pub fn load_history(&self, id: &str) -> Result<History, StoreError> {
        let mut connection = self.connection.lock();
        // One read transaction: a consistent snapshot even while other connections write.
        let transaction = connection.transaction()?;
        let session =
            get_session(&transaction, id)?.ok_or_else(|| StoreError::NoSuchSession(id.into()))?;
        let mut messages = Vec::new();
        {
            let mut statement = transaction.prepare(
                "SELECT seq, role, parts, visibility, summary_of, created_at FROM messages
                 WHERE session_id = ?1 ORDER BY seq",
            )?;
            let mut rows = statement.query(params![id])?;
            while let Some(row) = rows.next()? {
                messages.push(message_from_row(row)?);
            }
        }
        let mut tool_calls = BTreeMap::new();
        {
            let mut statement = transaction.prepare(
                "SELECT id, message_seq, tool, raw_input, status, output, display, locations,
                        started_at, finished_at
                 FROM tool_calls WHERE session_id = ?1 ORDER BY started_at, id",
            )?;
            let mut rows = statement.query(params![id])?;
            while let Some(row) = rows.next()? {
                let call = tool_call_from_row(id, row)?;
                tool_calls.insert(call.id.clone(), call);
            }
        }
        transaction.commit()?;
        Ok(History {
            session,
            messages,
            tool_calls,
        })
    }

    /// What the model is sent of the session: `load_history(id)?.model_messages_with(in_clear)`,
    /// from the view kept in memory (loaded from the file when there is none, or when another
    /// connection wrote to the file since).
    pub fn model_messages_with(
        &self,
        id: &str,
        in_clear: &BTreeMap<u64, Message>,
    ) -> Result<Vec<Message>, StoreError> {
        let connection = self.connection.lock();
        let mut views = self.views();
        views.check(&connection)?;
        if views.touch(id).is_none() {
            let entries = load_model_entries(&connection, id)?;
            views.insert(id, entries);
        }
        let view = views
            .sessions
            .get(id)
            .ok_or_else(|| StoreError::NoSuchSession(id.into()))?;
        Ok(view
            .entries
            .iter()
            .map(|stored| match in_clear.get(&stored.seq) {
                Some(message) => message.clone(),
                None => stored.to_message(),
            })
            .collect())
    }

    /// Lets go of the session's view kept in memory (an idle session); the next use loads it.
    pub fn forget_view(&self, id: &str) {
        let _connection = self.connection.lock();
        self.views().sessions.remove(id);
    }

    /// Appends a message and returns its seq.
    pub fn append_message(
        &self,
        session_id: &str,
        message: &Message,
        visibility: Visibility,
    ) -> Result<u64, StoreError> {
        let mut connection = self.connection.lock();
        let transaction = connection.transaction_with_behavior(TransactionBehavior::Immediate)?;
        let seq = insert_message(&transaction, session_id, message, visibility, None)?;
        // Read back as stored (redacted), for the view in memory: exactly what a load gives.
        let stored = if visibility.to_model() && self.views().sessions.contains_key(session_id) {
            Some(load_message(&transaction, session_id, seq)?)
        } else {
            None
        };
        transaction.commit()?;
        if let Some(stored) = stored
            && let Some(view) = self.views().touch(session_id)
        {
            // The newest message: no summary sorts after it, so it is the last the model sees.
            view.entries.push(stored);
        }
        Ok(seq)
    }

    /// Records that a tool call started (status `in_progress`). Starting the same call id again
    /// replaces the earlier record.
    pub fn record_tool_call_start(
        &self,
        session_id: &str,
        message_seq: u64,
        call: &ToolCallStart,
    ) -> Result<(), StoreError> {
        let mut connection = self.connection.lock();
        let transaction = connection.transaction_with_behavior(TransactionBehavior::Immediate)?;
        require_session(&transaction, session_id)?;
        let now = timestamp(Utc::now());
        write(
            &transaction,
            "INSERT OR REPLACE INTO tool_calls
                 (session_id, id, message_seq, tool, raw_input, status, output, display, locations,
                  started_at, finished_at)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, NULL, '[]', ?7, ?8, NULL)",
            params![
                session_id,
                call.id,
                to_i64(message_seq),
                call.tool,
                to_json(&call.raw_input)?,
                status_text(ToolStatus::InProgress),
                to_json(&call.locations)?,
                now
            ],
        )?;
        touch(&transaction, session_id, &now)?;
        transaction.commit()?;
        Ok(())
    }

    /// Records how a tool call ended.
    pub fn record_tool_call_finish(
        &self,
        session_id: &str,
        call_id: &str,
        finish: &ToolCallFinish,
    ) -> Result<(), StoreError> {
        let mut connection = self.connection.lock();
        let transaction = connection.transaction_with_behavior(TransactionBehavior::Immediate)?;
        let now = timestamp(Utc::now());
        let changed = if finish.locations.is_empty() {
            write(
                &transaction,
                "UPDATE tool_calls SET status = ?3, output = ?4, display = ?5, finished_at = ?6
                 WHERE session_id = ?1 AND id = ?2",
                params![
                    session_id,
                    call_id,
                    status_text(finish.status),
                    finish.output,
                    to_json(&finish.display)?,
                    now
                ],
            )?
        } else {
            write(
                &transaction,
                "UPDATE tool_calls SET status = ?3, output = ?4, display = ?5, finished_at = ?6,
                        locations = ?7
                 WHERE session_id = ?1 AND id = ?2",
                params![
                    session_id,
                    call_id,
                    status_text(finish.status),
                    finish.output,
                    to_json(&finish.display)?,
                    now,
                    to_json(&finish.locations)?
                ],
            )?
        };
        if changed == 0 {
            return Err(StoreError::NoSuchToolCall {
                session: session_id.into(),
                call: call_id.into(),
            });
        }
        touch(&transaction, session_id, &now)?;
        transaction.commit()?;
        Ok(())
    }

    pub fn set_title(&self, session_id: &str, title: &str) -> Result<(), StoreError> {
        self.update_column(session_id, "title", Some(title))
    }

    pub fn set_mode(&self, session_id: &str, mode: &str) -> Result<(), StoreError> {
        self.update_column(session_id, "mode", Some(mode))
    }

    pub fn set_model(&self, session_id: &str, model: Option<&str>) -> Result<(), StoreError> {
        self.update_column(session_id, "model", model)
    }

    /// Marks a session closed (it stays listed and loadable).
    pub fn close_session(&self, session_id: &str) -> Result<(), StoreError> {
        let connection = self.connection.lock();
        let changed = write(
            &connection,
            "UPDATE sessions SET closed = 1, updated_at = ?2 WHERE id = ?1",
            params![session_id, timestamp(Utc::now())],
        )?;
        if changed == 0 {
            return Err(StoreError::NoSuchSession(session_id.into()));
        }
        Ok(())
    }

    /// Where the session's old output is pruned in the model's view: `(results_before,
    /// contexts_before)`, `(0, 0)` when nothing is (see `crate::compaction::PruneMark`).
    pub fn prune_mark(&self, session_id: &str) -> Result<(usize, usize), StoreError> {
        let connection = self.connection.lock();
        let found: Option<(i64, i64)> = connection
            .query_row(
                "SELECT results_before, contexts_before FROM session_prune_marks
                 WHERE session_id = ?1",
                params![session_id],
                |row| Ok((row.get(0)?, row.get(1)?)),
            )
            .optional()?;
        let (results, contexts) = found.unwrap_or((0, 0));
        let index = |value: i64| usize::try_from(value).unwrap_or(0);
        Ok((index(results), index(contexts)))
    }

    /// Records where the session's old output is pruned (see [`SessionStore::prune_mark`]).
    pub fn set_prune_mark(
        &self,
        session_id: &str,
        results_before: usize,
        contexts_before: usize,
    ) -> Result<(), StoreError> {
        let connection = self.connection.lock();
        require_session(&connection, session_id)?;
        write(
            &connection,
            "INSERT INTO session_prune_marks (session_id, results_before, contexts_before)
             VALUES (?1, ?2, ?3)
             ON CONFLICT (session_id) DO UPDATE
             SET results_before = excluded.results_before,
                 contexts_before = excluded.contexts_before",
            params![
                session_id,
                to_i64(results_before as u64),
                to_i64(contexts_before as u64)
            ],
        )?;
        Ok(())
    }

    /// Deletes a session with its messages and tool calls. Returns whether it existed.
    pub fn delete_session(&self, session_id: &str) -> Result<bool, StoreError> {
        let mut connection = self.connection.lock();
        let transaction = connection.transaction_with_behavior(TransactionBehavior::Immediate)?;
        write(
            &transaction,
            "DELETE FROM session_prune_marks WHERE session_id = ?1",
            params![session_id],
        )?;
        write(
            &transaction,
            "DELETE FROM tool_calls WHERE session_id = ?1",
            params![session_id],
        )?;
        write(
            &transaction,
            "DELETE FROM messages WHERE session_id = ?1",
            params![session_id],
        )?;
        let deleted = write(
            &transaction,
            "DELETE FROM sessions WHERE id = ?1",
            params![session_id],
        )?;
        transaction.commit()?;
        self.views().sessions.remove(session_id);
        Ok(deleted > 0)
    }

    /// Replaces messages `1..=up_to_seq` for the model by `summary`, in one transaction: those
    /// messages become [`Visibility::UserOnly`] (earlier summaries become
    /// [`Visibility::Archived`]), and `summary` is appended as [`Visibility::ModelOnly`] with
    /// `summary_of = up_to_seq`, so [`History::model_messages`] puts it where they stood.
    /// Returns the summary's seq. Nothing is deleted.
    pub fn mark_compacted(
        &self,
        session_id: &str,
        up_to_seq: u64,
        summary: &Message,
    ) -> Result<u64, StoreError> {
        let mut connection = self.connection.lock();
        let transaction = connection.transaction_with_behavior(TransactionBehavior::Immediate)?;
        require_session(&transaction, session_id)?;
        let exists: Option<i64> = transaction
            .query_row(
                "SELECT seq FROM messages WHERE session_id = ?1 AND seq = ?2",
                params![session_id, to_i64(up_to_seq)],
                |row| row.get(0),
            )
            .optional()?;
        if exists.is_none() {
            return Err(StoreError::NoSuchMessage {
                session: session_id.into(),
                seq: up_to_seq,
            });
        }
        write(
            &transaction,
            "UPDATE messages SET visibility = 'archived'
             WHERE session_id = ?1 AND visibility = 'model_only' AND summary_of IS NOT NULL",
            params![session_id],
        )?;
        // The model's view starts again from the summary: nothing in it is pruned yet.
        write(
            &transaction,
            "DELETE FROM session_prune_marks WHERE session_id = ?1",
            params![session_id],
        )?;
        write(
            &transaction,
            "UPDATE messages SET visibility = 'user_only'
             WHERE session_id = ?1 AND seq <= ?2 AND visibility = 'both'",
            params![session_id, to_i64(up_to_seq)],
        )?;
        write(
            &transaction,
            "UPDATE messages SET visibility = 'archived'
             WHERE session_id = ?1 AND seq <= ?2 AND visibility = 'model_only'",
            params![session_id, to_i64(up_to_seq)],
        )?;
        let seq = insert_message(
            &transaction,
            session_id,
            summary,
            Visibility::ModelOnly,
            Some(up_to_seq),
        )?;
        // Whether or not the commit succeeds, the view in memory may no longer match: the next
        // use loads it again.
        self.views().sessions.remove(session_id);
        transaction.commit()?;
        Ok(seq)
    }

    fn update_column(
        &self,
        session_id: &str,
        column: &'static str,
        value: Option<&str>,
    ) -> Result<(), StoreError> {
        let connection = self.connection.lock();
        // `column` is one of a fixed set of names chosen by the callers above, never user input.
        let changed = write(
            &connection,
            &format!("UPDATE sessions SET {column} = ?2, updated_at = ?3 WHERE id = ?1"),
            params![session_id, value, timestamp(Utc::now())],
        )?;
        if changed == 0 {
            return Err(StoreError::NoSuchSession(session_id.into()));
        }
        Ok(())
    }
}

/// Runs a statement that changes the store. Every `INSERT`, `UPDATE` and `DELETE` of this module
/// goes through here, and this goes through [`crate::redact::execute_redacted`], which redacts
/// every text value bound to the statement (message parts, raw tool input, output, display
/// content, locations, titles, and any column added later) before SQLite sees it: secrets are
/// never persisted, and there is no per-column call to forget. Do not call `execute` on the
/// connection directly. The turn loop keeps the current turn's messages in clear in memory, so
/// the model is still sent what it wrote and what the tools returned within that turn; from the
/// next turn on, it sees the redacted history (see docs/permissions.md, "Redaction").
fn write(connection: &Connection, sql: &str, params: &[&dyn ToSql]) -> Result<usize, StoreError> {
    Ok(crate::redact::execute_redacted(connection, sql, params)?)
}

fn insert_message(
    connection: &Connection,
    session_id: &str,
    message: &Message,
    visibility: Visibility,
    summary_of: Option<u64>,
) -> Result<u64, StoreError> {
    require_session(connection, session_id)?;
    let last: i64 = connection.query_row(
        "SELECT COALESCE(MAX(seq), 0) FROM messages WHERE session_id = ?1",
        params![session_id],
        |row| row.get(0),
    )?;
    let seq = last + 1;
    let now = timestamp(Utc::now());
    write(
        connection,
        "INSERT INTO messages (session_id, seq, role, parts, visibility, summary_of, created_at)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
        params![
            session_id,
            seq,
            role_text(message.role),
            to_json(&message.content)?,
            visibility.as_str(),
            summary_of.map(to_i64),
            now
        ],
    )?;
    touch(connection, session_id, &now)?;
    Ok(seq as u64)
}

const MESSAGE_COLUMNS: &str = "seq, role, parts, visibility, summary_of, created_at";

/// [`History::model_entries`] of a session, read from the file.
fn load_model_entries(
    connection: &Connection,
    session_id: &str,
) -> Result<Vec<StoredMessage>, StoreError> {
    require_session(connection, session_id)?;
    let mut statement = connection.prepare_cached(&format!(
        "SELECT {MESSAGE_COLUMNS} FROM messages
         WHERE session_id = ?1 AND visibility IN ('both', 'model_only') ORDER BY seq"
    ))?;
    let mut rows = statement.query(params![session_id])?;
    let mut entries = Vec::new();
    while let Some(row) = rows.next()? {
        entries.push(message_from_row(row)?);
    }
    sort_for_model(&mut entries);
    Ok(entries)
}

/// One stored message, as a load reads it.
fn load_message(
    connection: &Connection,
    session_id: &str,
    seq: u64,
) -> Result<StoredMessage, StoreError> {
    let mut statement = connection.prepare_cached(&format!(
        "SELECT {MESSAGE_COLUMNS} FROM messages WHERE session_id = ?1 AND seq = ?2"
    ))?;
    let mut rows = statement.query(params![session_id, to_i64(seq)])?;
    match rows.next()? {
        Some(row) => message_from_row(row),
        None => Err(StoreError::NoSuchMessage {
            session: session_id.into(),
            seq,
        }),
    }
}

/// The model's order: a summary right after the last message it replaces, everything else by
/// seq.
fn sort_key(message: &StoredMessage) -> (u64, u8, u64) {
    match message.summary_of {
        Some(last) => (last, 1u8, message.seq),
        None => (message.seq, 0u8, message.seq),
    }
}

fn sort_for_model(entries: &mut [StoredMessage]) {
    entries.sort_by_key(sort_key);
}

fn require_session(connection: &Connection, session_id: &str) -> Result<(), StoreError> {
    let found: Option<i64> = connection
        .query_row(
            "SELECT 1 FROM sessions WHERE id = ?1",
            params![session_id],
            |row| row.get(0),
        )
        .optional()?;
    match found {
        Some(_) => Ok(()),
        None => Err(StoreError::NoSuchSession(session_id.into())),
    }
}

fn touch(connection: &Connection, session_id: &str, now: &str) -> Result<(), StoreError> {
    write(
        connection,
        "UPDATE sessions SET updated_at = ?2 WHERE id = ?1",
        params![session_id, now],
    )?;
    Ok(())
}

fn get_session(connection: &Connection, id: &str) -> Result<Option<SessionInfo>, StoreError> {
    let mut statement = connection.prepare(&format!(
        "SELECT {SESSION_COLUMNS} FROM sessions WHERE id = ?1"
    ))?;
    let mut rows = statement.query(params![id])?;
    match rows.next()? {
        Some(row) => Ok(Some(session_from_row(row)?)),
        None => Ok(None),
    }
}

fn session_from_row(row: &Row<'_>) -> Result<SessionInfo, StoreError> {
    Ok(SessionInfo {
        id: row.get(0)?,
        cwd: PathBuf::from(row.get::<_, String>(1)?),
        title: row.get(2)?,
        mode: row.get(3)?,
        model: row.get(4)?,
        created_at: parse_time(&row.get::<_, String>(5)?)?,
        updated_at: parse_time(&row.get::<_, String>(6)?)?,
        closed: row.get::<_, i64>(7)? != 0,
    })
}

fn message_from_row(row: &Row<'_>) -> Result<StoredMessage, StoreError> {
    Ok(StoredMessage {
        seq: row.get::<_, i64>(0)? as u64,
        role: parse_role(&row.get::<_, String>(1)?)?,
        content: from_json(&row.get::<_, String>(2)?)?,
        visibility: Visibility::parse(&row.get::<_, String>(3)?)?,
        summary_of: row.get::<_, Option<i64>>(4)?.map(|seq| seq as u64),
        created_at: parse_time(&row.get::<_, String>(5)?)?,
    })
}

fn tool_call_from_row(session_id: &str, row: &Row<'_>) -> Result<StoredToolCall, StoreError> {
    Ok(StoredToolCall {
        id: row.get(0)?,
        session_id: session_id.into(),
        message_seq: row.get::<_, i64>(1)? as u64,
        tool: row.get(2)?,
        raw_input: from_json(&row.get::<_, String>(3)?)?,
        status: parse_status(&row.get::<_, String>(4)?)?,
        output: row.get(5)?,
        display: from_json(&row.get::<_, String>(6)?)?,
        locations: from_json(&row.get::<_, String>(7)?)?,
        started_at: parse_time(&row.get::<_, String>(8)?)?,
        finished_at: row
            .get::<_, Option<String>>(9)?
            .map(|text| parse_time(&text))
            .transpose()?,
    })
}

/// Microsecond RFC 3339 in UTC: sorts as text in time order.
fn timestamp(time: DateTime<Utc>) -> String {
    time.to_rfc3339_opts(SecondsFormat::Micros, true)
}

fn parse_time(text: &str) -> Result<DateTime<Utc>, StoreError> {
    DateTime::parse_from_rfc3339(text)
        .map(|time| time.with_timezone(&Utc))
        .map_err(|error| StoreError::Corrupt(format!("timestamp {text:?}: {error}")))
}

fn path_text(path: &Path) -> String {
    path.to_string_lossy().into_owned()
}

fn to_i64(value: u64) -> i64 {
    i64::try_from(value).unwrap_or(i64::MAX)
}

fn to_json<T: Serialize + ?Sized>(value: &T) -> Result<String, StoreError> {
    serde_json::to_string(value).map_err(|error| StoreError::Corrupt(error.to_string()))
}

fn from_json<T: serde::de::DeserializeOwned>(text: &str) -> Result<T, StoreError> {
    serde_json::from_str(text).map_err(|error| StoreError::Corrupt(error.to_string()))
}

fn role_text(role: Role) -> &'static str {
    match role {
        Role::User => "user",
        Role::Assistant => "assistant",
    }
}

fn parse_role(text: &str) -> Result<Role, StoreError> {
    match text {
        "user" => Ok(Role::User),
        "assistant" => Ok(Role::Assistant),
        other => Err(StoreError::Corrupt(format!("role {other:?}"))),
    }
}

fn status_text(status: ToolStatus) -> &'static str {
    match status {
        ToolStatus::Pending => "pending",
        ToolStatus::InProgress => "in_progress",
        ToolStatus::Completed => "completed",
        ToolStatus::Failed => "failed",
    }
}

fn parse_status(text: &str) -> Result<ToolStatus, StoreError> {
    Ok(match text {
        "pending" => ToolStatus::Pending,
        "in_progress" => ToolStatus::InProgress,
        "completed" => ToolStatus::Completed,
        "failed" => ToolStatus::Failed,
        other => return Err(StoreError::Corrupt(format!("tool status {other:?}"))),
    })
}
