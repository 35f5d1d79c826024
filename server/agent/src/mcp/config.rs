//! Which MCP servers to connect to: the `[[mcp.servers]]` entries of lode's config
//! ([`McpSettings`], [`McpServerEntry`]) and the plain, resolved [`McpServerConfig`] that both
//! they and an ACP client's `session/new` `mcpServers` convert into.

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;
use std::time::Duration;

use serde::{Deserialize, Serialize};

/// How long a server may take to start and answer `initialize` and `tools/list`.
pub const DEFAULT_STARTUP_TIMEOUT: Duration = Duration::from_secs(30);
/// How long one tool call may take.
pub const DEFAULT_CALL_TIMEOUT: Duration = Duration::from_secs(300);

/// How to reach one MCP server.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum McpTransport {
    /// A child process speaking MCP over its stdin/stdout.
    Stdio {
        command: String,
        #[serde(default)]
        args: Vec<String>,
        /// Added to lode's own environment.
        #[serde(default)]
        env: Vec<(String, String)>,
        /// Working directory (default: the workspace root the manager is given).
        #[serde(default)]
        cwd: Option<PathBuf>,
    },
    /// A streamable HTTP endpoint.
    Http {
        url: String,
        /// Header name and value, already resolved (no environment lookups left).
        #[serde(default)]
        headers: Vec<(String, String)>,
    },
}

/// Who named an MCP server. It decides how a stdio server is confined (`super::launch`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum McpSource {
    /// The user: their own config file (`--config`, `$LODE_CONFIG`, the user's file), or their
    /// editor (an ACP client's `session/new`). The server gets the network.
    #[default]
    User,
    /// Only a (trusted) workspace's `.lode/config.toml`. The server gets no network unless the
    /// user's own `[sandbox] mcp_network` names it, and never runs unconfined.
    Workspace,
}

/// One MCP server, resolved and ready to connect. The ACP adapter converts `session/new`
/// `mcpServers` entries into this (stdio → [`McpTransport::Stdio`], http →
/// [`McpTransport::Http`]; an `sse` entry has no transport here and should be reported).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct McpServerConfig {
    /// The server's name; its tools appear as `mcp__<name>__<tool>`.
    pub name: String,
    pub transport: McpTransport,
    /// Startup (initialize + tools/list) limit; `None` means [`DEFAULT_STARTUP_TIMEOUT`].
    #[serde(default)]
    pub startup_timeout: Option<Duration>,
    /// Per-call limit; `None` means [`DEFAULT_CALL_TIMEOUT`].
    #[serde(default)]
    pub call_timeout: Option<Duration>,
    /// Who named it.
    #[serde(default)]
    pub source: McpSource,
}

impl McpServerConfig {
    pub fn stdio(name: impl Into<String>, command: impl Into<String>, args: Vec<String>) -> Self {
        Self {
            name: name.into(),
            transport: McpTransport::Stdio {
                command: command.into(),
                args,
                env: Vec::new(),
                cwd: None,
            },
            startup_timeout: None,
            call_timeout: None,
            source: McpSource::User,
        }
    }

    pub fn http(name: impl Into<String>, url: impl Into<String>) -> Self {
        Self {
            name: name.into(),
            transport: McpTransport::Http {
                url: url.into(),
                headers: Vec::new(),
            },
            startup_timeout: None,
            call_timeout: None,
            source: McpSource::User,
        }
    }
}

/// The `[mcp]` config section.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct McpSettings {
    pub servers: Vec<McpServerEntry>,
    /// The names of the entries that come only from the workspace's own config (filled by the
    /// config loader; an entry identical to one in the user's own config is the user's).
    #[serde(skip)]
    pub from_workspace: BTreeSet<String>,
}

/// One `[[mcp.servers]]` entry: `command` (+ `args`, `env`, `cwd`) for stdio, or `url`
/// (+ `headers`, `headers_from_env`, `bearer_token_env`) for streamable HTTP.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct McpServerEntry {
    pub name: String,
    /// `false` keeps the entry but does not start it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub enabled: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub command: Option<String>,
    pub args: Vec<String>,
    pub env: BTreeMap<String, String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cwd: Option<PathBuf>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    /// Literal header values (avoid secrets here; use `headers_from_env`).
    pub headers: BTreeMap<String, String>,
    /// Header name → the environment variable holding its value.
    pub headers_from_env: BTreeMap<String, String>,
    /// An environment variable holding a bearer token (sent as `Authorization: Bearer …`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub bearer_token_env: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub startup_timeout_secs: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub call_timeout_secs: Option<u64>,
}

/// A config entry that cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum McpConfigError {
    #[error("an [[mcp.servers]] entry has no name")]
    MissingName,
    #[error("MCP server {0:?}: set either `command` (stdio) or `url` (HTTP)")]
    NoTransport(String),
    #[error("MCP server {0:?}: set only one of `command` and `url`")]
    BothTransports(String),
    #[error("MCP server {server:?}: environment variable {variable} is not set")]
    MissingEnv { server: String, variable: String },
    #[error("MCP server {0:?}: the url must start with http:// or https://")]
    BadUrl(String),
    #[error("invalid [mcp] section: {0}")]
    Invalid(String),
}

impl McpSettings {
    /// Reads an `[mcp]` table on its own (the config loader reads the section as part of
    /// `crate::config::Config`, with the file and line of any error).
    pub fn from_toml(value: &toml::Value) -> Result<Self, McpConfigError> {
        value
            .clone()
            .try_into()
            .map_err(|e: toml::de::Error| McpConfigError::Invalid(e.message().to_owned()))
    }

    /// Resolves every enabled entry; entries that cannot be resolved come back as errors so the
    /// front end can report them next to servers that failed to start.
    pub fn resolve(&self) -> (Vec<McpServerConfig>, Vec<McpConfigError>) {
        self.resolve_with(|name| std::env::var(name).ok())
    }

    /// [`McpSettings::resolve`] with an explicit environment lookup.
    pub fn resolve_with(
        &self,
        env: impl Fn(&str) -> Option<String>,
    ) -> (Vec<McpServerConfig>, Vec<McpConfigError>) {
        let mut servers = Vec::new();
        let mut errors = Vec::new();
        for entry in &self.servers {
            if entry.enabled == Some(false) {
                continue;
            }
            match entry.resolve_with(&env) {
                Ok(mut server) => {
                    if self.from_workspace.contains(&server.name) {
                        server.source = McpSource::Workspace;
                    }
                    servers.push(server)
                }
                Err(error) => errors.push(error),
            }
        }
        (servers, errors)
    }
}

impl McpServerEntry {
    /// What the config loader checks of an entry, beyond its types: a name, and exactly one of
    /// `command` and `url`, the url over HTTP. On failure, the key to point at (`None`: the
    /// entry) and why.
    pub fn check(&self) -> Result<(), (Option<&'static str>, String)> {
        let name = self.name.trim();
        if name.is_empty() {
            return Err((None, McpConfigError::MissingName.to_string()));
        }
        match (&self.command, &self.url) {
            (Some(_), Some(_)) => Err((
                Some("url"),
                McpConfigError::BothTransports(name.to_owned()).to_string(),
            )),
            (None, None) => Err((
                None,
                McpConfigError::NoTransport(name.to_owned()).to_string(),
            )),
            (None, Some(url)) if !(url.starts_with("http://") || url.starts_with("https://")) => {
                Err((
                    Some("url"),
                    McpConfigError::BadUrl(name.to_owned()).to_string(),
                ))
            }
            _ => Ok(()),
        }
    }

    fn resolve_with(
        &self,
        env: &impl Fn(&str) -> Option<String>,
    ) -> Result<McpServerConfig, McpConfigError> {
        let name = self.name.trim();
        if name.is_empty() {
            return Err(McpConfigError::MissingName);
        }
        let transport = match (&self.command, &self.url) {
            (Some(_), Some(_)) => return Err(McpConfigError::BothTransports(name.to_owned())),
            (None, None) => return Err(McpConfigError::NoTransport(name.to_owned())),
            (Some(command), None) => McpTransport::Stdio {
                command: command.clone(),
                args: self.args.clone(),
                env: self
                    .env
                    .iter()
                    .map(|(k, v)| (k.clone(), v.clone()))
                    .collect(),
                cwd: self.cwd.clone(),
            },
            (None, Some(url)) => {
                if !(url.starts_with("http://") || url.starts_with("https://")) {
                    return Err(McpConfigError::BadUrl(name.to_owned()));
                }
                let missing = |variable: &str| McpConfigError::MissingEnv {
                    server: name.to_owned(),
                    variable: variable.to_owned(),
                };
                let mut headers: Vec<(String, String)> = self
                    .headers
                    .iter()
                    .map(|(k, v)| (k.clone(), v.clone()))
                    .collect();
                for (header, variable) in &self.headers_from_env {
                    let value = env(variable).ok_or_else(|| missing(variable))?;
                    headers.push((header.clone(), value));
                }
                if let Some(variable) = &self.bearer_token_env {
                    let token = env(variable).ok_or_else(|| missing(variable))?;
                    headers.push(("Authorization".to_owned(), format!("Bearer {token}")));
                }
                McpTransport::Http {
                    url: url.clone(),
                    headers,
                }
            }
        };
        Ok(McpServerConfig {
            name: name.to_owned(),
            transport,
            startup_timeout: self.startup_timeout_secs.map(Duration::from_secs),
            call_timeout: self.call_timeout_secs.map(Duration::from_secs),
            source: McpSource::User,
        })
    }
}
