//! The audit log: one JSON line per tool call, appended to `<root>/.lode/audit.jsonl` — when it
//! happened, in which session, which tool with which arguments (secrets redacted), what the
//! policy or the user decided, how it ended, the exit code of commands, and whether the model
//! wrote the call as text — and one line per model request with its token use, cached and
//! uncached ([`UsageRecord`]).
//!
//! The log is append-only: every record is one `write` of one line to a file opened with
//! `O_APPEND`, so concurrent sessions and processes never interleave partial lines.

use parking_lot::Mutex;
use std::fs::OpenOptions;
use std::io::Write;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::event::{ToolCallUpdate, ToolStatus};
use crate::redact::redact_json;

/// One audit line.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AuditRecord {
    /// RFC 3339, UTC.
    pub time: String,
    pub session_id: String,
    pub tool: String,
    /// The call's arguments, secrets redacted.
    pub arguments: serde_json::Value,
    /// `allow` (by policy), `deny` (by policy or mode), or `ask:<answer>` (e.g. `ask:allow_once`,
    /// `ask:reject_always`, `ask:cancelled`).
    pub decision: String,
    /// `ok`, or `error:<category>` (e.g. `error:permission_denied`, `error:timeout`).
    pub outcome: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exit_code: Option<i64>,
    /// `text` when the model wrote the call as text and lode read it as a call (see
    /// `crate::text_calls`); absent for the provider's own tool calls.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub via: Option<String>,
}

/// One model request's token use, a line of its own in the audit log (`"event":
/// "model_request"`, no `tool`): every input token, how many came from the provider's prompt
/// cache and how many were processed afresh, and the output.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct UsageRecord {
    /// RFC 3339, UTC.
    pub time: String,
    pub session_id: String,
    /// Always `model_request`.
    pub event: String,
    /// The configured provider's name and its model.
    pub provider: String,
    pub model: String,
    pub input_tokens: u64,
    pub cached_input_tokens: u64,
    pub uncached_input_tokens: u64,
    pub cache_write_tokens: u64,
    pub output_tokens: u64,
}

#[derive(Debug, thiserror::Error)]
#[error("cannot append to the audit log {path}: {source}")]
pub struct AuditError {
    pub path: PathBuf,
    pub source: std::io::Error,
}

/// The append-only audit log of one workspace.
pub struct AuditLog {
    path: PathBuf,
    /// Serialises appends within this process.
    lock: Mutex<()>,
}

impl AuditLog {
    /// A log at `path` (created, with its directory, on the first append).
    pub fn new(path: impl Into<PathBuf>) -> AuditLog {
        AuditLog {
            path: path.into(),
            lock: Mutex::new(()),
        }
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Appends one record. This is the log's only write, and it redacts the whole record (every
    /// field, not only the arguments) with the one redaction filter before the line is built, so
    /// callers cannot forget to and a field added later is covered.
    pub fn append(&self, record: &AuditRecord) -> Result<(), AuditError> {
        self.append_line(record)
    }

    /// Appends any record as one redacted line (see [`AuditLog::append`]).
    fn append_line(&self, record: &impl Serialize) -> Result<(), AuditError> {
        let encode_error = |error: serde_json::Error| AuditError {
            path: self.path.clone(),
            source: std::io::Error::other(error),
        };
        let record = serde_json::to_value(record).map_err(encode_error)?;
        let mut line = serde_json::to_string(&redact_json(&record)).map_err(encode_error)?;
        line.push('\n');
        let error = |source| AuditError {
            path: self.path.clone(),
            source,
        };
        let _guard = self.lock.lock();
        if let Some(parent) = self.path.parent() {
            std::fs::create_dir_all(parent).map_err(error)?;
        }
        let mut file = OpenOptions::new()
            .create(true)
            .append(true)
            .open(&self.path)
            .map_err(error)?;
        file.write_all(line.as_bytes()).map_err(error)
    }

    /// Appends the record of a finished call, reading the outcome and exit code from the final
    /// [`ToolCallUpdate`] (`raw_output.category` for failures, `raw_output.exit_code`).
    pub fn record(
        &self,
        session_id: &str,
        tool: &str,
        arguments: &serde_json::Value,
        decision: &str,
        via: Option<&str>,
        update: &ToolCallUpdate,
    ) -> Result<(), AuditError> {
        let raw = update.raw_output.as_ref();
        let outcome = match update.status {
            ToolStatus::Failed => format!(
                "error:{}",
                raw.and_then(|raw| raw.get("category"))
                    .and_then(serde_json::Value::as_str)
                    .unwrap_or("failed")
            ),
            ToolStatus::Completed => "ok".to_owned(),
            ToolStatus::Pending | ToolStatus::InProgress => "unfinished".to_owned(),
        };
        let exit_code = raw
            .and_then(|raw| raw.get("exit_code"))
            .and_then(serde_json::Value::as_i64);
        self.append(&AuditRecord {
            time: chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Millis, true),
            session_id: session_id.to_owned(),
            tool: tool.to_owned(),
            arguments: arguments.clone(),
            decision: decision.to_owned(),
            outcome,
            exit_code,
            via: via.map(str::to_owned),
        })
    }

    /// Appends a model request's token use.
    pub fn record_usage(
        &self,
        session_id: &str,
        provider: &str,
        model: &str,
        usage: &lode_llm::Usage,
    ) -> Result<(), AuditError> {
        self.append_line(&UsageRecord {
            time: chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Millis, true),
            session_id: session_id.to_owned(),
            event: "model_request".to_owned(),
            provider: provider.to_owned(),
            model: model.to_owned(),
            input_tokens: usage.input_tokens,
            cached_input_tokens: usage.cache_read_tokens,
            uncached_input_tokens: usage.uncached_input_tokens(),
            cache_write_tokens: usage.cache_write_tokens,
            output_tokens: usage.output_tokens,
        })
    }

    /// Reads every model request's token use (see [`UsageRecord`]).
    pub fn read_usage(&self) -> Result<Vec<UsageRecord>, AuditError> {
        Ok(self
            .read_lines()?
            .lines()
            .filter_map(|line| serde_json::from_str::<UsageRecord>(line).ok())
            .filter(|record| record.event == "model_request")
            .collect())
    }

    /// Reads every tool call's record (for `lode` commands and tests); other lines (model
    /// requests' usage) and unreadable ones are skipped.
    pub fn read_all(&self) -> Result<Vec<AuditRecord>, AuditError> {
        Ok(self
            .read_lines()?
            .lines()
            .filter_map(|line| serde_json::from_str(line).ok())
            .collect())
    }

    fn read_lines(&self) -> Result<String, AuditError> {
        match std::fs::read_to_string(&self.path) {
            Ok(text) => Ok(text),
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => Ok(String::new()),
            Err(source) => Err(AuditError {
                path: self.path.clone(),
                source,
            }),
        }
    }
}
