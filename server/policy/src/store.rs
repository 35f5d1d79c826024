//! Remembered "allow always" / "reject always" answers, per workspace, in SQLite (the agent's
//! database `<root>/.lode/agent.sqlite`, shared with the session store; this module owns the
//! `permission_rules` table).

use parking_lot::{Mutex, MutexGuard};
use std::path::{Path, PathBuf};
use std::time::Duration;

use rusqlite::{Connection, OptionalExtension, params};

use super::PermissionError;

/// A remembered answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Remembered {
    Allow,
    Deny,
}

impl Remembered {
    fn as_str(self) -> &'static str {
        match self {
            Remembered::Allow => "allow",
            Remembered::Deny => "deny",
        }
    }
}

/// One stored rule.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RememberedRule {
    pub tool: String,
    pub pattern: String,
    pub decision: Remembered,
    /// RFC 3339 time of the answer.
    pub decided_at: String,
}

/// The store of remembered answers.
pub struct PermissionStore {
    connection: Mutex<Connection>,
    path: PathBuf,
}

impl PermissionStore {
    /// Opens (creating) the database at `path` in WAL mode and creates the table if missing.
    pub fn open(path: &Path) -> Result<PermissionStore, PermissionError> {
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent).map_err(|source| PermissionError::Io {
                path: parent.to_path_buf(),
                source,
            })?;
        }
        let store_error = |source| PermissionError::Store {
            path: path.to_path_buf(),
            source,
        };
        let connection = Connection::open(path).map_err(store_error)?;
        connection
            .busy_timeout(Duration::from_secs(5))
            .map_err(store_error)?;
        connection
            .pragma_update(None, "journal_mode", "WAL")
            .map_err(store_error)?;
        connection
            .execute_batch(
                "CREATE TABLE IF NOT EXISTS permission_rules (
                    tool TEXT NOT NULL,
                    pattern TEXT NOT NULL,
                    decision TEXT NOT NULL CHECK (decision IN ('allow', 'deny')),
                    decided_at TEXT NOT NULL,
                    PRIMARY KEY (tool, pattern)
                )",
            )
            .map_err(store_error)?;
        Ok(PermissionStore {
            connection: Mutex::new(connection),
            path: path.to_path_buf(),
        })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    fn connection(&self) -> MutexGuard<'_, Connection> {
        // A panic while holding the lock leaves SQLite consistent.
        self.connection.lock()
    }

    fn error(&self, source: rusqlite::Error) -> PermissionError {
        PermissionError::Store {
            path: self.path.clone(),
            source,
        }
    }

    /// Remembers an answer for `tool` and `pattern`, replacing an earlier one.
    pub fn remember(
        &self,
        tool: &str,
        pattern: &str,
        decision: Remembered,
    ) -> Result<(), PermissionError> {
        let now = chrono::Utc::now().to_rfc3339();
        self.connection()
            .execute(
                "INSERT INTO permission_rules (tool, pattern, decision, decided_at)
                 VALUES (?1, ?2, ?3, ?4)
                 ON CONFLICT (tool, pattern) DO UPDATE
                 SET decision = excluded.decision, decided_at = excluded.decided_at",
                params![tool, pattern, decision.as_str(), now],
            )
            .map_err(|e| self.error(e))?;
        Ok(())
    }

    /// Forgets the answer for `tool` and `pattern`; returns whether there was one.
    pub fn forget(&self, tool: &str, pattern: &str) -> Result<bool, PermissionError> {
        let removed = self
            .connection()
            .execute(
                "DELETE FROM permission_rules WHERE tool = ?1 AND pattern = ?2",
                params![tool, pattern],
            )
            .map_err(|e| self.error(e))?;
        Ok(removed > 0)
    }

    /// The answer remembered for exactly `tool` and `pattern`.
    pub fn get(&self, tool: &str, pattern: &str) -> Result<Option<Remembered>, PermissionError> {
        let decision: Option<String> = self
            .connection()
            .query_row(
                "SELECT decision FROM permission_rules WHERE tool = ?1 AND pattern = ?2",
                params![tool, pattern],
                |row| row.get(0),
            )
            .optional()
            .map_err(|e| self.error(e))?;
        Ok(decision.map(|d| parse_decision(&d)))
    }

    /// Every remembered rule of `tool`.
    pub fn rules_for(&self, tool: &str) -> Result<Vec<RememberedRule>, PermissionError> {
        self.query(
            "SELECT tool, pattern, decision, decided_at FROM permission_rules
             WHERE tool = ?1 ORDER BY decided_at",
            Some(tool),
        )
    }

    /// Every remembered rule.
    pub fn rules(&self) -> Result<Vec<RememberedRule>, PermissionError> {
        self.query(
            "SELECT tool, pattern, decision, decided_at FROM permission_rules
             ORDER BY tool, decided_at",
            None,
        )
    }

    fn query(&self, sql: &str, tool: Option<&str>) -> Result<Vec<RememberedRule>, PermissionError> {
        let connection = self.connection();
        let mut statement = connection.prepare(sql).map_err(|e| self.error(e))?;
        let map = |row: &rusqlite::Row<'_>| {
            Ok(RememberedRule {
                tool: row.get(0)?,
                pattern: row.get(1)?,
                decision: parse_decision(&row.get::<_, String>(2)?),
                decided_at: row.get(3)?,
            })
        };
        let rows = match tool {
            Some(tool) => statement.query_map(params![tool], map),
            None => statement.query_map([], map),
        }
        .map_err(|e| self.error(e))?;
        rows.collect::<Result<Vec<_>, _>>()
            .map_err(|e| self.error(e))
    }
}

/// Anything but `allow` reads as deny: a damaged row never grants.
fn parse_decision(text: &str) -> Remembered {
    if text == "allow" {
        Remembered::Allow
    } else {
        Remembered::Deny
    }
}
