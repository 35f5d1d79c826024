//! The session store's schema and its migrations. The store shares its SQLite file with other
//! parts of lode, so every table it owns has a plain, specific name (`sessions`, `messages`,
//! `tool_calls`) and its version lives in its own row of `schema_versions`, keyed by component.

use rusqlite::{Connection, OptionalExtension, TransactionBehavior, params};

use super::StoreError;

/// The component name under which the store records its schema version.
pub(super) const COMPONENT: &str = "agent_sessions";
/// The schema version this build writes.
pub(super) const VERSION: i64 = 1;

const V1: &str = "
CREATE TABLE sessions (
    id TEXT PRIMARY KEY,
    cwd TEXT NOT NULL,
    title TEXT,
    mode TEXT NOT NULL,
    model TEXT,
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL,
    closed INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX sessions_by_update ON sessions (updated_at DESC);

CREATE TABLE messages (
    session_id TEXT NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
    seq INTEGER NOT NULL,
    role TEXT NOT NULL,
    parts TEXT NOT NULL,
    visibility TEXT NOT NULL,
    summary_of INTEGER,
    created_at TEXT NOT NULL,
    PRIMARY KEY (session_id, seq)
);

CREATE TABLE tool_calls (
    session_id TEXT NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
    id TEXT NOT NULL,
    message_seq INTEGER NOT NULL,
    tool TEXT NOT NULL,
    raw_input TEXT NOT NULL,
    status TEXT NOT NULL,
    output TEXT,
    display TEXT NOT NULL DEFAULT '[]',
    locations TEXT NOT NULL DEFAULT '[]',
    started_at TEXT NOT NULL,
    finished_at TEXT,
    PRIMARY KEY (session_id, id)
);
";

/// Brings the schema up to [`VERSION`], in one transaction. A database written by a newer lode
/// is refused rather than misread.
pub(super) fn migrate(connection: &mut Connection) -> Result<(), StoreError> {
    // Immediate: two processes opening a fresh database at once must not both create the tables.
    let transaction = connection.transaction_with_behavior(TransactionBehavior::Immediate)?;
    transaction.execute_batch(
        "CREATE TABLE IF NOT EXISTS schema_versions (
            component TEXT PRIMARY KEY,
            version INTEGER NOT NULL
        );",
    )?;
    let found: Option<i64> = transaction
        .query_row(
            "SELECT version FROM schema_versions WHERE component = ?1",
            params![COMPONENT],
            |row| row.get(0),
        )
        .optional()?;
    match found {
        None => {
            transaction.execute_batch(V1)?;
            transaction.execute(
                "INSERT INTO schema_versions (component, version) VALUES (?1, ?2)",
                params![COMPONENT, VERSION],
            )?;
        }
        Some(version) if version == VERSION => {}
        Some(version) => {
            return Err(StoreError::UnsupportedSchema {
                found: version,
                supported: VERSION,
            });
        }
    }
    // A table of its own, not a new version of the others: a lode without it still reads the
    // sessions (and leaves this table alone).
    transaction.execute_batch(PRUNE_MARKS)?;
    transaction.commit()?;
    Ok(())
}

/// Where each session's old output is pruned in the model's view (see
/// `crate::compaction::PruneMark`): indices into that view, reset by a compaction.
const PRUNE_MARKS: &str = "
CREATE TABLE IF NOT EXISTS session_prune_marks (
    session_id TEXT PRIMARY KEY REFERENCES sessions (id) ON DELETE CASCADE,
    results_before INTEGER NOT NULL,
    contexts_before INTEGER NOT NULL
);
";
