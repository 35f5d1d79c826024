//! The sections that the front ends read — `[lsp]`, `[acp]`, `[index]` — typed here, so the one
//! loader checks their keys and values like every other section's and an error names the file,
//! the line and the key. `[skills]`, `[memory]` and `[mcp]` are typed next to what they
//! configure (`crate::skills`, `crate::memory`, `crate::mcp`).
//!
//! A check serde cannot express by a type (a number that must be at least 1, a word out of a
//! list) is a `deserialize_with` function on the field, so its error, too, carries the value's
//! place in the file.

use std::collections::BTreeMap;
use std::time::Duration;

use serde::{Deserialize, Deserializer, Serialize};

use lode_tools::pushed_diagnostics::PushedLimits;

/// `[lsp]`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct LspSection {
    /// `[lsp.diagnostics]`.
    pub diagnostics: LspDiagnosticsSettings,
}

/// `[lsp.diagnostics]`: the language servers (and checker commands) lode runs as a client for
/// the agent's diagnostics after edits and its navigation.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct LspDiagnosticsSettings {
    /// Feed diagnostics to the agent after edits (default true).
    pub enabled: bool,
    /// Try rust-analyzer, pyright-langserver, … when they are on `PATH` (default true).
    pub default_servers: bool,
    /// Fall back to checker commands: cargo check, pyright, tsc (default true).
    pub commands: bool,
    /// Server command lines by language family; an empty list turns servers off for it.
    pub servers: BTreeMap<String, Vec<String>>,
}

impl Default for LspDiagnosticsSettings {
    fn default() -> Self {
        LspDiagnosticsSettings {
            enabled: true,
            default_servers: true,
            commands: true,
            servers: BTreeMap::new(),
        }
    }
}

/// Idle sessions are released after this long unless `[acp] idle_session_timeout_secs` says
/// otherwise (30 minutes).
pub const DEFAULT_IDLE_SESSION_TIMEOUT_SECS: u64 = 30 * 60;

/// `[acp]`: what `lode acp` reads.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct AcpSection {
    /// Seconds a session may stay idle before it is released from memory; 0: until its
    /// connection ends (default 1800).
    #[serde(deserialize_with = "idle_session_seconds")]
    pub idle_session_timeout_secs: u64,
    /// `[acp.lsp]`.
    pub lsp: AcpLspSettings,
}

impl Default for AcpSection {
    fn default() -> Self {
        AcpSection {
            idle_session_timeout_secs: DEFAULT_IDLE_SESSION_TIMEOUT_SECS,
            lsp: AcpLspSettings::default(),
        }
    }
}

impl AcpSection {
    /// How long an idle session is kept; `None`: until its connection ends.
    pub fn idle_session_timeout(&self) -> Option<Duration> {
        (self.idle_session_timeout_secs > 0)
            .then(|| Duration::from_secs(self.idle_session_timeout_secs))
    }
}

/// `[acp.lsp]`: the ACP `lsp/*` extension's settings (`lode_acp::ext_lsp`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct AcpLspSettings {
    /// Whether lode uses the editor's language servers when the client offers them.
    pub enabled: bool,
    /// How long one `lsp/*` request may take before lode moves on to the next provider.
    #[serde(deserialize_with = "at_least_one_u64")]
    pub timeout_ms: u64,
    /// Most diagnostics kept for one file from `lsp/publishDiagnostics`.
    #[serde(deserialize_with = "at_least_one_usize")]
    pub max_diagnostics_per_file: usize,
    /// Most pushed diagnostics kept over all files; the least recently pushed files go first.
    #[serde(deserialize_with = "at_least_one_usize")]
    pub max_diagnostics_total: usize,
    /// Most files whose pushed diagnostics are kept.
    #[serde(deserialize_with = "at_least_one_usize")]
    pub max_files: usize,
}

impl Default for AcpLspSettings {
    fn default() -> AcpLspSettings {
        let limits = PushedLimits::default();
        AcpLspSettings {
            enabled: true,
            timeout_ms: 3_000,
            max_diagnostics_per_file: limits.per_file,
            max_diagnostics_total: limits.total,
            max_files: limits.files,
        }
    }
}

impl AcpLspSettings {
    /// Checks what a value built in code (not read by the loader, which checks it already) may
    /// get wrong: the numbers that must be at least 1. The error names the key.
    pub fn validate(self) -> Result<AcpLspSettings, String> {
        let settings = self;
        if settings.timeout_ms == 0 {
            return Err("[acp.lsp] timeout_ms must be at least 1".into());
        }
        if settings.max_diagnostics_per_file == 0
            || settings.max_diagnostics_total == 0
            || settings.max_files == 0
        {
            return Err(
                "[acp.lsp] max_diagnostics_per_file, max_diagnostics_total and max_files must be \
                 at least 1"
                    .into(),
            );
        }
        Ok(settings)
    }

    pub fn timeout(&self) -> Duration {
        Duration::from_millis(self.timeout_ms)
    }

    /// The agent's cache caps.
    pub fn limits(&self) -> PushedLimits {
        PushedLimits {
            per_file: self.max_diagnostics_per_file,
            total: self.max_diagnostics_total,
            files: self.max_files,
        }
    }
}

/// A query starts a background daemon in a workspace of this many files or more (`[index]
/// daemon_min_files`).
pub const DEFAULT_DAEMON_MIN_FILES: usize = 2_000;
/// A background daemon exits after this many idle minutes (`[index] daemon_idle_minutes`).
pub const DEFAULT_DAEMON_IDLE_MINUTES: u64 = 30;

/// `[index]`: the background daemon's settings (the environment overrides them; see the cli's
/// `daemon_command`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct IndexSection {
    /// Whether a query may start a daemon (default `auto`).
    pub daemon: DaemonMode,
    /// The fewest files for which a query starts one (default 2000).
    pub daemon_min_files: usize,
    /// Minutes a daemon stays without queries before it exits (default 30; at least 1).
    #[serde(deserialize_with = "at_least_one_u64")]
    pub daemon_idle_minutes: u64,
}

impl Default for IndexSection {
    fn default() -> Self {
        IndexSection {
            daemon: DaemonMode::Auto,
            daemon_min_files: DEFAULT_DAEMON_MIN_FILES,
            daemon_idle_minutes: DEFAULT_DAEMON_IDLE_MINUTES,
        }
    }
}

/// `[index] daemon`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum DaemonMode {
    /// A query in a large workspace starts one.
    #[default]
    Auto,
    /// Queries answer in their own process.
    Never,
}

impl DaemonMode {
    /// `auto` or `never`; anything else is an error saying so.
    pub fn parse(text: &str) -> Result<DaemonMode, String> {
        match text {
            "auto" => Ok(DaemonMode::Auto),
            "never" => Ok(DaemonMode::Never),
            other => Err(format!("expected \"auto\" or \"never\", found {other:?}")),
        }
    }
}

impl<'de> Deserialize<'de> for DaemonMode {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = String::deserialize(deserializer)?;
        DaemonMode::parse(&text).map_err(serde::de::Error::custom)
    }
}

/// A whole number of seconds, 0 included; the message says what the key takes.
fn idle_session_seconds<'de, D: Deserializer<'de>>(deserializer: D) -> Result<u64, D::Error> {
    let value = toml::Value::deserialize(deserializer)?;
    value
        .as_integer()
        .and_then(|seconds| u64::try_from(seconds).ok())
        .ok_or_else(|| {
            serde::de::Error::custom(format!(
                "idle_session_timeout_secs must be a whole number of seconds (0: never), got \
                 {value}"
            ))
        })
}

fn at_least_one_u64<'de, D: Deserializer<'de>>(deserializer: D) -> Result<u64, D::Error> {
    let value = u64::deserialize(deserializer)?;
    if value == 0 {
        return Err(serde::de::Error::custom("must be at least 1, got 0"));
    }
    Ok(value)
}

fn at_least_one_usize<'de, D: Deserializer<'de>>(deserializer: D) -> Result<usize, D::Error> {
    let value = usize::deserialize(deserializer)?;
    if value == 0 {
        return Err(serde::de::Error::custom("must be at least 1, got 0"));
    }
    Ok(value)
}
