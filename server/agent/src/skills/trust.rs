//! Which workspace skills the user has trusted, and with what content: a `skill_trust` table in
//! the agent's SQLite database (the caller names the file, normally `<root>/.lode/agent.sqlite`).
//!
//! A trust record is a skill name and the SHA-256 of the whole skill folder at the time the user
//! trusted it. A skill whose current hash differs is "changed" and untrusted again until the user
//! trusts the new content.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use rusqlite::{Connection, OptionalExtension, params};

#[derive(Debug, thiserror::Error)]
pub enum TrustStoreError {
    #[error("cannot create {path}: {source}")]
    CreateDir {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("skill trust database {path}: {source}")]
    Sqlite {
        path: PathBuf,
        source: rusqlite::Error,
    },
}

/// One trust record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TrustRecord {
    pub name: String,
    pub content_hash: String,
    /// RFC 3339 time of the trust decision.
    pub trusted_at: String,
}

/// The trust table of one database file.
#[derive(Debug)]
pub struct TrustStore {
    connection: Connection,
    path: PathBuf,
}

impl TrustStore {
    /// Opens (creating when missing) the database and its `skill_trust` table.
    pub fn open(path: &Path) -> Result<Self, TrustStoreError> {
        if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
            std::fs::create_dir_all(parent).map_err(|source| TrustStoreError::CreateDir {
                path: parent.to_owned(),
                source,
            })?;
        }
        let sqlite = |source| TrustStoreError::Sqlite {
            path: path.to_owned(),
            source,
        };
        let connection = Connection::open(path).map_err(sqlite)?;
        connection
            .busy_timeout(std::time::Duration::from_secs(5))
            .map_err(sqlite)?;
        connection
            .execute_batch(
                "CREATE TABLE IF NOT EXISTS skill_trust (
                    name TEXT PRIMARY KEY,
                    content_hash TEXT NOT NULL,
                    trusted_at TEXT NOT NULL
                )",
            )
            .map_err(sqlite)?;
        Ok(Self {
            connection,
            path: path.to_owned(),
        })
    }

    fn error(&self, source: rusqlite::Error) -> TrustStoreError {
        TrustStoreError::Sqlite {
            path: self.path.clone(),
            source,
        }
    }

    /// Records that the user trusts `name` with exactly this content.
    pub fn trust(&self, name: &str, content_hash: &str) -> Result<(), TrustStoreError> {
        let now = chrono::Utc::now().to_rfc3339();
        self.connection
            .execute(
                "INSERT INTO skill_trust (name, content_hash, trusted_at) VALUES (?1, ?2, ?3)
                 ON CONFLICT(name) DO UPDATE SET content_hash = excluded.content_hash,
                     trusted_at = excluded.trusted_at",
                params![name, content_hash, now],
            )
            .map_err(|e| self.error(e))?;
        Ok(())
    }

    /// Forgets a trust decision; returns whether there was one.
    pub fn revoke(&self, name: &str) -> Result<bool, TrustStoreError> {
        let removed = self
            .connection
            .execute("DELETE FROM skill_trust WHERE name = ?1", params![name])
            .map_err(|e| self.error(e))?;
        Ok(removed > 0)
    }

    pub fn get(&self, name: &str) -> Result<Option<TrustRecord>, TrustStoreError> {
        self.connection
            .query_row(
                "SELECT name, content_hash, trusted_at FROM skill_trust WHERE name = ?1",
                params![name],
                |row| {
                    Ok(TrustRecord {
                        name: row.get(0)?,
                        content_hash: row.get(1)?,
                        trusted_at: row.get(2)?,
                    })
                },
            )
            .optional()
            .map_err(|e| self.error(e))
    }

    /// Every record, by name.
    pub fn all(&self) -> Result<HashMap<String, TrustRecord>, TrustStoreError> {
        let mut statement = self
            .connection
            .prepare("SELECT name, content_hash, trusted_at FROM skill_trust")
            .map_err(|e| self.error(e))?;
        let rows = statement
            .query_map([], |row| {
                Ok(TrustRecord {
                    name: row.get(0)?,
                    content_hash: row.get(1)?,
                    trusted_at: row.get(2)?,
                })
            })
            .map_err(|e| self.error(e))?;
        let mut records = HashMap::new();
        for row in rows {
            let record = row.map_err(|e| self.error(e))?;
            records.insert(record.name.clone(), record);
        }
        Ok(records)
    }
}
