//! lode's configuration: the TOML files, where they are found, how they layer, and what a
//! misconfiguration is told.
//!
//! # Files and precedence
//! Up to four files are read, highest precedence first ([`ConfigOrigin`]):
//! 1. the global `--config PATH` flag (must exist when given),
//! 2. `$LODE_CONFIG` (must exist when set),
//! 3. `<root>/.lode/config.toml`,
//! 4. `<user config dir>/lode/config.toml` (`$XDG_CONFIG_HOME` or `~/.config` on Linux).
//!
//! # Layering
//! An earlier file wins; a later file fills what earlier ones leave unset. Tables merge key by
//! key, recursively. A list set in an earlier file replaces the later one, with two exceptions:
//! - **`[[llm.providers]]` merge by `name`**: a provider defined in an earlier file replaces the
//!   same-named provider of a later file as a whole entry (its fields are not mixed), and
//!   providers only defined in later files are kept, after the earlier ones;
//! - **`[[permissions.rules]]` are concatenated** (earlier files' rules first): every file's
//!   rules apply, and since `deny` beats `ask` beats `allow` among matching rules, no file can
//!   lift another file's `deny`.
//!
//! Defaults apply to whatever no file sets.
//!
//! # Workspace trust
//! The workspace's file arrives with the code. Until the user trusts it (`lode trust`; see
//! `crate::trust`), only its settings that tighten lode are read (`crate::trust::restrict`):
//! the rest is listed in [`LoadedConfig::untrusted_ignored`] and a warning. Its `[sandbox]` can
//! only ever tighten, trusted or not.
//!
//! # Sections
//! Every section lode reads is a type, checked by this loader and no one else:
//! `[llm]` (`default` = a provider name; `[[llm.providers]]`, see `lode_llm::ProviderConfig`),
//! `[agent]` (see [`AgentConfig`], with `[agent.context]` = `crate::context::ContextShares`),
//! `[permissions]` (`lode_policy::PermissionConfig`), `[sandbox]`
//! (`lode_sandbox::SandboxSettings`), `[skills]` (`crate::skills::SkillsSettings`), `[memory]`
//! (`crate::memory::MemorySettings`), `[mcp]` (`crate::mcp::McpSettings`), and the front ends'
//! `[lsp]`, `[acp]` and `[index]` ([`sections`]). Inside them, an unknown key or a bad value is
//! an error naming the file, line, column and dotted key ([`ConfigError::Parse`]). A top-level
//! section lode does not know is kept verbatim in [`Config::other`] and named in
//! [`LoadedConfig::warnings`], so a config written for a newer lode still loads.
//!
//! The untrusted workspace file is checked in what applies of it (what
//! `crate::trust::restrict` keeps); what does not apply is listed, not checked, so a setting that
//! would be ignored anyway cannot stop lode.

mod layers;
pub mod sections;

use std::collections::HashSet;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use layers::{ReadLayers, read_layers};

pub use sections::{
    AcpLspSettings, AcpSection, DaemonMode, IndexSection, LspDiagnosticsSettings, LspSection,
};

use crate::compaction::{DEFAULT_COMPACTION_THRESHOLD, DEFAULT_KEEP_RECENT_TOOL_OUTPUTS};
use crate::context::{ContextShares, DEFAULT_INSTRUCTION_FILE_MAX_BYTES, ProfileSetting};
use lode_llm::{DetectedProvider, ProviderConfig};
use lode_policy::{Mode, PermissionConfig};

/// The environment variable naming a config file.
pub const CONFIG_ENV: &str = "LODE_CONFIG";
/// The workspace's config file, relative to the root.
pub const WORKSPACE_CONFIG: &str = ".lode/config.toml";
/// The top-level sections lode reads, each a field of [`Config`].
pub const KNOWN_SECTIONS: &[&str] = &[
    "llm",
    "agent",
    "permissions",
    "sandbox",
    "skills",
    "memory",
    "mcp",
    "lsp",
    "acp",
    "index",
];

/// The whole configuration.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Config {
    pub llm: LlmConfig,
    pub agent: AgentConfig,
    pub permissions: PermissionConfig,
    /// `[sandbox]`: how commands are confined. The workspace's own config file can only
    /// tighten it (a stricter `mode`); its `read`, `write`, `env_passthrough` and
    /// `allow_unix_sockets` are ignored.
    pub sandbox: lode_sandbox::SandboxSettings,
    /// `[skills]`: which skills are offered and how many per turn.
    pub skills: crate::skills::SkillsSettings,
    /// `[memory]`: long-term memory.
    pub memory: crate::memory::MemorySettings,
    /// `[mcp]`: the MCP servers every session connects to.
    pub mcp: crate::mcp::McpSettings,
    /// `[lsp]`: the language servers lode runs for the agent's diagnostics and navigation.
    pub lsp: LspSection,
    /// `[acp]`: `lode acp`'s sessions and its `lsp/*` extension.
    pub acp: AcpSection,
    /// `[index]`: the background daemon.
    pub index: IndexSection,
    /// Top-level sections outside [`KNOWN_SECTIONS`], merged like the rest, verbatim.
    #[serde(skip)]
    pub other: toml::Table,
}

/// `[llm]`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct LlmConfig {
    /// The provider used when none is chosen; the first provider when unset.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub default: Option<String>,
    pub providers: Vec<ProviderConfig>,
}

/// `[agent]`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct AgentConfig {
    /// Model requests per turn before the turn stops with `max_turn_requests` (default 25).
    pub max_tool_iterations: u32,
    /// The mode new sessions start in (default `code`).
    pub default_mode: Mode,
    /// Each instruction file (`AGENTS.md`, …) is cut to this many bytes (default 16384).
    pub instruction_file_max_bytes: usize,
    /// Compaction starts when history reaches this fraction of its budget (default 0.8).
    pub compaction_threshold: f64,
    /// Tool outputs newer than this many are never pruned (default 3).
    pub keep_recent_tool_outputs: usize,
    /// How much lode sends: `auto` (default: `lean` below a 16k-token window), `full` or
    /// `lean` (core tools with short schemas, skills by name only; see `crate::context`).
    pub profile: ProfileSetting,
    /// Read a tool call the model wrote as text (a fenced JSON object or a `<tool_call>` block
    /// naming an offered tool) as that call, when its answer has no native call (default true).
    pub text_tool_calls: bool,
    /// `[agent.context]`: how the context budget is shared.
    pub context: ContextShares,
}

impl Default for AgentConfig {
    fn default() -> Self {
        AgentConfig {
            max_tool_iterations: 25,
            default_mode: Mode::Code,
            instruction_file_max_bytes: DEFAULT_INSTRUCTION_FILE_MAX_BYTES,
            compaction_threshold: DEFAULT_COMPACTION_THRESHOLD,
            keep_recent_tool_outputs: DEFAULT_KEEP_RECENT_TOOL_OUTPUTS,
            profile: ProfileSetting::Auto,
            text_tool_calls: true,
            context: ContextShares::default(),
        }
    }
}

/// Where a config file comes from, in precedence order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ConfigOrigin {
    /// `--config PATH`.
    Flag,
    /// `$LODE_CONFIG`.
    Env,
    /// `<root>/.lode/config.toml`.
    Workspace,
    /// `<user config dir>/lode/config.toml`.
    User,
}

impl ConfigOrigin {
    pub fn describe(self) -> &'static str {
        match self {
            ConfigOrigin::Flag => "--config",
            ConfigOrigin::Env => "$LODE_CONFIG",
            ConfigOrigin::Workspace => "workspace",
            ConfigOrigin::User => "user",
        }
    }

    /// Whether the file must exist when its location is given.
    fn required(self) -> bool {
        matches!(self, ConfigOrigin::Flag | ConfigOrigin::Env)
    }
}

/// One place a config file was looked for.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ConfigCandidate {
    pub origin: ConfigOrigin,
    /// `None` when the place is not defined (no flag, variable unset, no user config dir).
    pub path: Option<PathBuf>,
    /// Whether the file was read.
    pub found: bool,
}

/// Where to look, in precedence order. [`ConfigSources::discover`] fills it from the flag, the
/// environment and the platform; tests build it directly.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ConfigSources {
    pub flag: Option<PathBuf>,
    pub env: Option<PathBuf>,
    pub workspace: Option<PathBuf>,
    pub user: Option<PathBuf>,
    /// Whether the user trusts the workspace's file as it is now (`crate::trust`). When not,
    /// only the settings that tighten lode are read from it (`crate::trust::restrict`).
    pub workspace_trusted: bool,
}

impl ConfigSources {
    /// The standard places for a workspace at `root`, with its trust read from the user's
    /// store ([`crate::trust::user_state_dir`]).
    pub fn discover(explicit: Option<&Path>, root: &Path) -> ConfigSources {
        ConfigSources::discover_with_state(
            explicit,
            root,
            crate::trust::user_state_dir().as_deref(),
        )
    }

    /// The standard places for a workspace at `root`, with its trust read from the store under
    /// `state_dir` (`None`: no store, so the workspace is untrusted).
    pub fn discover_with_state(
        explicit: Option<&Path>,
        root: &Path,
        state_dir: Option<&Path>,
    ) -> ConfigSources {
        let workspace_trusted = state_dir.is_some_and(|state| {
            crate::trust::TrustStore::new(state)
                .status(root)
                .is_trusted()
        });
        ConfigSources {
            workspace_trusted,
            workspace: Some(root.join(WORKSPACE_CONFIG)),
            ..ConfigSources::outside_workspace(explicit)
        }
    }

    /// The standard places that belong to no workspace (the flag, `$LODE_CONFIG`, the user's
    /// file): what every workspace's configuration is layered on, for a front end that has no
    /// workspace yet (`lode acp` started outside a project).
    pub fn outside_workspace(explicit: Option<&Path>) -> ConfigSources {
        ConfigSources {
            flag: explicit.map(Path::to_path_buf),
            env: std::env::var_os(CONFIG_ENV)
                .filter(|value| !value.is_empty())
                .map(PathBuf::from),
            workspace: None,
            user: dirs::config_dir().map(|dir| dir.join("lode").join("config.toml")),
            workspace_trusted: false,
        }
    }

    fn in_order(&self) -> [(ConfigOrigin, Option<&PathBuf>); 4] {
        [
            (ConfigOrigin::Flag, self.flag.as_ref()),
            (ConfigOrigin::Env, self.env.as_ref()),
            (ConfigOrigin::Workspace, self.workspace.as_ref()),
            (ConfigOrigin::User, self.user.as_ref()),
        ]
    }
}

/// A loaded configuration and where it came from.
#[derive(Debug, Clone, PartialEq)]
pub struct LoadedConfig {
    pub config: Config,
    /// The files read, highest precedence first.
    pub files: Vec<PathBuf>,
    /// Every place looked at, in precedence order.
    pub searched: Vec<ConfigCandidate>,
    /// Things worth telling the user that do not stop loading (unknown sections).
    pub warnings: Vec<String>,
    /// Settings of the untrusted workspace file that were not applied, one line each (empty
    /// when the workspace is trusted or sets only what tightens).
    pub untrusted_ignored: Vec<String>,
    /// The provider taken from the environment because none is configured
    /// ([`LoadedConfig::detect_provider`]); it is also in `config.llm.providers`.
    pub detected: Option<DetectedProvider>,
    /// Why detection found nothing, when it ran and did.
    pub detection: Option<String>,
}

/// Why the configuration cannot be used.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ConfigError {
    #[error("config file {path} ({origin}): {message}", origin = origin.describe())]
    Read {
        path: PathBuf,
        origin: ConfigOrigin,
        message: String,
    },
    #[error("{}", parse_message(.path, *.line, *.column, .key.as_deref(), .message))]
    Parse {
        path: PathBuf,
        /// 1-based.
        line: usize,
        /// 1-based, in characters.
        column: usize,
        /// The dotted key the error is about, when it can be told (`agent.max_tool_iterations`).
        key: Option<String>,
        message: String,
    },
    #[error("{}: {key}: {message}", path.as_ref().map_or_else(|| "config".to_owned(), |path| path.display().to_string()))]
    Invalid {
        /// The file that set the key, when known.
        path: Option<PathBuf>,
        key: String,
        message: String,
    },
    #[error("{}", no_provider_message(.searched, .detection.as_deref()))]
    NoProvider {
        searched: Vec<ConfigCandidate>,
        /// What zero-config detection looked at, when it ran (`lode_llm::detect`).
        detection: Option<String>,
    },
    #[error(
        "no LLM provider is configured outside the workspace, and the providers in {} are not used because you have not trusted that file ({}). Review it, then run `lode trust` in the workspace (or add a provider to your own config, ~/.config/lode/config.toml)",
        file.display(),
        providers.join("; ")
    )]
    UntrustedProviders {
        file: PathBuf,
        /// The providers the file defines, as `lode trust` describes them.
        providers: Vec<String>,
    },
    #[error(
        "no provider named \"{name}\" is configured (configured: {}); add a [[llm.providers]] entry with name = \"{name}\" or pick one of those",
        if available.is_empty() { "none".to_owned() } else { available.join(", ") }
    )]
    UnknownProvider {
        name: String,
        available: Vec<String>,
    },
}

fn parse_message(
    path: &Path,
    line: usize,
    column: usize,
    key: Option<&str>,
    message: &str,
) -> String {
    let key = key.map(|key| format!(" (key `{key}`)")).unwrap_or_default();
    format!(
        "{}:{line}:{column}: {}{key}",
        path.display(),
        message.trim()
    )
}

/// An example provider entry for error messages and docs.
pub const EXAMPLE_PROVIDER: &str = "[[llm.providers]]
name = \"openai\"
kind = \"openai\"            # or \"anthropic\"; any OpenAI-compatible server works with base_url
model = \"gpt-4.1\"
api_key_env = \"OPENAI_API_KEY\" # the variable holding the key (never the key itself)";

fn no_provider_message(searched: &[ConfigCandidate], detection: Option<&str>) -> String {
    let mut out = String::from("no LLM provider is configured");
    if let Some(detection) = detection {
        out.push_str(&format!(" and {detection}"));
    }
    out.push_str(". lode looked for config files here (first wins):\n");
    for candidate in searched {
        let place = match (&candidate.path, candidate.origin) {
            (Some(path), _) => path.display().to_string(),
            (None, ConfigOrigin::Flag) => "(not given)".to_owned(),
            (None, ConfigOrigin::Env) => "(not set)".to_owned(),
            (None, _) => "(no such directory on this system)".to_owned(),
        };
        let state = match (&candidate.path, candidate.found) {
            (Some(_), true) => " (read, no providers)",
            (Some(_), false) => " (not found)",
            (None, _) => "",
        };
        out.push_str(&format!(
            "  {:<12} {place}{state}\n",
            candidate.origin.describe()
        ));
    }
    out.push_str(&format!(
        "Add a provider to one of them (or point ${CONFIG_ENV} at a file), for example:\n\n{EXAMPLE_PROVIDER}\n\n\
then set the variable it names: OPENAI_API_KEY (kind = \"openai\") or ANTHROPIC_API_KEY \
(kind = \"anthropic\"). Local servers (Ollama, llama.cpp, vLLM) need base_url and no key. \
Without a config, lode uses the first of ANTHROPIC_API_KEY, OPENAI_API_KEY, OPENROUTER_API_KEY \
that is set, else a local Ollama with a tool-capable model (docs/configuration.md)."
    ));
    out
}

impl Config {
    /// Loads the configuration for a workspace at `root` from the standard places (see the
    /// module docs). No provider is not an error here; [`LoadedConfig::provider`] reports it.
    pub fn load(explicit: Option<&Path>, root: &Path) -> Result<LoadedConfig, ConfigError> {
        Config::load_from(&ConfigSources::discover(explicit, root))
    }

    /// Loads the configuration from `sources`.
    pub fn load_from(sources: &ConfigSources) -> Result<LoadedConfig, ConfigError> {
        let ReadLayers {
            searched,
            layers,
            workspace_sandbox,
            untrusted_ignored,
            untrusted_file,
            workspace_file,
        } = read_layers(sources)?;
        let merged = merge_layers(&layers);
        let mut config = deserialize_merged(&merged)?;
        config.mcp.from_workspace = workspace_mcp_servers(&layers, workspace_file.as_deref());
        let mut warnings = Vec::new();
        if let Some(path) = untrusted_file.filter(|_| !untrusted_ignored.is_empty()) {
            warnings.push(untrusted_warning(&path, &untrusted_ignored));
        }
        if let Some((path, table)) = workspace_sandbox {
            tighten_sandbox(&mut config.sandbox, &path, table, &mut warnings)?;
        }
        keep_unknown_sections(&mut config, merged, &layers, &mut warnings);
        validate(&config, &layers)?;
        Ok(LoadedConfig {
            config,
            files: layers.into_iter().map(|(path, _)| path).collect(),
            searched,
            warnings,
            untrusted_ignored,
            detected: None,
            detection: None,
        })
    }

    /// Parses one config file's text (for tests and tools); `path` names it in errors.
    pub fn from_toml_str(text: &str, path: &Path) -> Result<Config, ConfigError> {
        let (layer, _) = parse_layer(path, text, false)?;
        let layers = vec![(path.to_path_buf(), layer.clone())];
        let mut config: Config =
            toml::Value::Table(layer.clone())
                .try_into()
                .map_err(|error: toml::de::Error| ConfigError::Invalid {
                    path: Some(path.to_path_buf()),
                    key: "config".to_owned(),
                    message: error.message().to_owned(),
                })?;
        for (key, value) in layer {
            if !KNOWN_SECTIONS.contains(&key.as_str()) {
                config.other.insert(key, value);
            }
        }
        validate(&config, &layers)?;
        Ok(config)
    }

    /// The configuration as TOML, with anything that looks like a credential replaced: provider
    /// header values and URL passwords (`ProviderConfig::redacted`), and in the other sections
    /// values of keys named like a credential or matching a known secret pattern.
    pub fn to_redacted_toml(&self) -> String {
        let mut redacted = self.clone();
        redacted.llm.providers = self
            .llm
            .providers
            .iter()
            .map(ProviderConfig::redacted)
            .collect();
        /// The sections in `Config`'s order; those that were once kept verbatim are redacted by
        /// key and pattern like the unknown sections.
        #[derive(Serialize)]
        struct Printed<'a> {
            llm: &'a LlmConfig,
            agent: &'a AgentConfig,
            permissions: &'a PermissionConfig,
            sandbox: &'a lode_sandbox::SandboxSettings,
            skills: toml::Value,
            memory: toml::Value,
            mcp: toml::Value,
            lsp: toml::Value,
            acp: toml::Value,
            index: toml::Value,
        }
        fn redacted_section(section: &impl Serialize) -> toml::Value {
            // Every section is TOML-representable; an empty table is the safe answer if one
            // ever were not.
            let mut value = toml::Value::try_from(section)
                .unwrap_or_else(|_| toml::Value::Table(toml::Table::new()));
            redact_value(&mut value, None);
            value
        }
        let printed = Printed {
            llm: &redacted.llm,
            agent: &redacted.agent,
            permissions: &redacted.permissions,
            sandbox: &redacted.sandbox,
            skills: redacted_section(&redacted.skills),
            memory: redacted_section(&redacted.memory),
            mcp: redacted_section(&redacted.mcp),
            lsp: redacted_section(&redacted.lsp),
            acp: redacted_section(&redacted.acp),
            index: redacted_section(&redacted.index),
        };
        let mut out = toml::to_string_pretty(&printed)
            // Every field of `Config` is TOML-representable, so this cannot fail; a comment is
            // the safe answer if it ever did.
            .unwrap_or_else(|error| format!("# could not render the configuration: {error}\n"));
        if !self.other.is_empty() {
            let mut other = toml::Value::Table(self.other.clone());
            redact_value(&mut other, None);
            if let toml::Value::Table(table) = other {
                out.push('\n');
                out.push_str(&toml::to_string_pretty(&table).unwrap_or_else(|error| {
                    format!("# could not render the other sections: {error}\n")
                }));
            }
        }
        out
    }
}

/// The layers merged into one table, a higher layer winning key by key.
fn merge_layers(layers: &[(PathBuf, toml::Table)]) -> toml::Table {
    let mut merged = toml::Table::new();
    for (_, layer) in layers {
        merge_lower(&mut merged, layer.clone(), "");
    }
    merged
}

fn deserialize_merged(merged: &toml::Table) -> Result<Config, ConfigError> {
    toml::Value::Table(merged.clone())
        .try_into()
        .map_err(|error: toml::de::Error| ConfigError::Invalid {
            path: None,
            key: "config".to_owned(),
            message: error.message().to_owned(),
        })
}

/// Says which settings of the untrusted workspace file at `path` were not applied.
fn untrusted_warning(path: &Path, ignored: &[String]) -> String {
    format!(
        "{} is not trusted, so {} of its settings {} not applied ({}); run `lode trust` \
         to review and trust it",
        path.display(),
        ignored.len(),
        if ignored.len() == 1 { "is" } else { "are" },
        ignored.join("; ")
    )
}

/// Keeps the sections this version does not know in `config.other`, with a warning each.
fn keep_unknown_sections(
    config: &mut Config,
    merged: toml::Table,
    layers: &[(PathBuf, toml::Table)],
    warnings: &mut Vec<String>,
) {
    for (key, value) in merged {
        if KNOWN_SECTIONS.contains(&key.as_str()) {
            continue;
        }
        let origin = origin_of(layers, &[&key]);
        warnings.push(format!(
            "{}: unknown section `{key}` ignored by this version of lode (known: {})",
            origin.map_or_else(|| "config".to_owned(), |path| path.display().to_string()),
            KNOWN_SECTIONS.join(", ")
        ));
        config.other.insert(key, value);
    }
}

impl LoadedConfig {
    /// The provider called `name`, or the default one (`[llm] default`, else the first).
    pub fn provider(&self, name: Option<&str>) -> Result<&ProviderConfig, ConfigError> {
        let providers = &self.config.llm.providers;
        let wanted = name.or(self.config.llm.default.as_deref());
        match wanted {
            Some(wanted) => providers
                .iter()
                .find(|provider| provider.name == wanted)
                .ok_or_else(|| {
                    if providers.is_empty() {
                        self.no_provider()
                    } else {
                        ConfigError::UnknownProvider {
                            name: wanted.to_owned(),
                            available: providers.iter().map(|p| p.name.clone()).collect(),
                        }
                    }
                }),
            None => providers.first().ok_or_else(|| self.no_provider()),
        }
    }

    /// Zero-config models: when no provider is configured anywhere (not even in an untrusted
    /// workspace file, whose `lode trust` question comes first), takes the first provider the
    /// environment `env` offers (`lode_llm::detect`: keys, then a local Ollama) as if it were
    /// configured, and returns it. Configuration always wins: with any provider configured this
    /// looks at nothing. When nothing is found, [`LoadedConfig::provider`]'s error says what was
    /// looked at.
    pub fn detect_provider(
        &mut self,
        env: &dyn Fn(&str) -> Option<String>,
    ) -> Option<&DetectedProvider> {
        if !self.config.llm.providers.is_empty() || !self.untrusted_providers().is_empty() {
            return None;
        }
        match lode_llm::detect::detect(env) {
            Ok(found) => {
                self.config.llm.providers.push(found.provider.clone());
                self.detection = None;
                self.detected = Some(found);
                self.detected.as_ref()
            }
            Err(nothing) => {
                self.detection = Some(nothing.to_string());
                None
            }
        }
    }

    /// The provider lines of the untrusted workspace file that are not applied.
    fn untrusted_providers(&self) -> Vec<String> {
        self.untrusted_ignored
            .iter()
            .filter(|line| line.starts_with("[[llm.providers]]"))
            .cloned()
            .collect()
    }

    /// Why there is no provider: none configured anywhere, or only in the untrusted workspace.
    fn no_provider(&self) -> ConfigError {
        let untrusted = self.untrusted_providers();
        let workspace_file = self
            .searched
            .iter()
            .find(|candidate| candidate.origin == ConfigOrigin::Workspace && candidate.found)
            .and_then(|candidate| candidate.path.clone());
        match workspace_file {
            Some(file) if !untrusted.is_empty() => ConfigError::UntrustedProviders {
                file,
                providers: untrusted,
            },
            _ => ConfigError::NoProvider {
                searched: self.searched.clone(),
                detection: self.detection.clone(),
            },
        }
    }

    /// What `lode config` prints: the files read (as comments) and the effective configuration,
    /// redacted.
    pub fn describe(&self) -> String {
        let mut out = String::from("# lode configuration (effective; secrets redacted)\n");
        out.push_str("# looked for, highest precedence first:\n");
        for candidate in &self.searched {
            let place = candidate
                .path
                .as_ref()
                .map_or_else(|| "-".to_owned(), |path| path.display().to_string());
            let state = match (&candidate.path, candidate.found) {
                (Some(_), true) => "read",
                (Some(_), false) => "not found",
                (None, _) => "not set",
            };
            out.push_str(&format!(
                "#   {:<12} {place} ({state})\n",
                candidate.origin.describe()
            ));
        }
        for warning in &self.warnings {
            out.push_str(&format!("# warning: {warning}\n"));
        }
        out.push('\n');
        out.push_str(&self.config.to_redacted_toml());
        out
    }
}

/// Parses one file: TOML syntax, then every section's types, keys and values, with the file,
/// line and key of the first problem. With `untrusted` (the workspace's file before the user
/// trusts it), what `crate::trust::restrict` does not keep is taken out first and returned, one
/// line each: it is listed, not checked, since it does not apply.
fn parse_layer(
    path: &Path,
    text: &str,
    untrusted: bool,
) -> Result<(toml::Table, Vec<String>), ConfigError> {
    let mut table: toml::Table =
        toml::from_str(text).map_err(|error| parse_error(path, text, &error))?;
    let ignored = if untrusted {
        crate::trust::restrict::restrict_untrusted(&mut table)
    } else {
        Vec::new()
    };
    // Deserialising the spanned document (not the table) keeps spans, so type errors and
    // unknown keys point at their line; an untrusted file's is cut to what applies first.
    let mut document =
        toml::de::DeTable::parse(text).map_err(|error| parse_error(path, text, &error))?;
    if untrusted {
        keep_only(document.get_mut(), &table);
    }
    let config = Config::deserialize(toml::de::Deserializer::from(document))
        .map_err(|error| parse_error(path, text, &error))?;
    let mut names = HashSet::new();
    for provider in &config.llm.providers {
        if !names.insert(provider.name.as_str()) {
            return Err(ConfigError::Invalid {
                path: Some(path.to_path_buf()),
                key: "llm.providers".to_owned(),
                message: format!(
                    "two providers are named \"{}\"; names must be unique",
                    provider.name
                ),
            });
        }
    }
    for (index, entry) in config.mcp.servers.iter().enumerate() {
        if let Err((field, message)) = entry.check() {
            let mut at = vec!["mcp", "servers"];
            let index = index.to_string();
            at.push(&index);
            at.extend(field);
            return Err(located_error(path, text, &at, message));
        }
    }
    Ok((table, ignored))
}

/// Cuts `document` (the spanned parse of a file) down to what `kept` (the same file, restricted)
/// holds: the same keys at every depth, and of a list the items `kept` still has, in order.
fn keep_only(document: &mut toml::de::DeTable<'_>, kept: &toml::Table) {
    *document = std::mem::take(document)
        .into_iter()
        .filter(|(key, _)| kept.contains_key(key.get_ref().as_ref()))
        .collect();
    for (key, value) in document.iter_mut() {
        let Some(kept) = kept.get(key.get_ref().as_ref()) else {
            continue;
        };
        match (value.get_mut(), kept) {
            (toml::de::DeValue::Table(table), toml::Value::Table(kept)) => keep_only(table, kept),
            (toml::de::DeValue::Array(items), toml::Value::Array(kept)) => {
                let mut wanted = kept.iter().peekable();
                let all = std::mem::replace(items, toml::de::DeArray::new());
                *items = all
                    .into_iter()
                    .filter(|item| {
                        let same = wanted
                            .peek()
                            .is_some_and(|wanted| plain_value(item).as_ref() == Some(*wanted));
                        if same {
                            wanted.next();
                        }
                        same
                    })
                    .collect();
            }
            _ => {}
        }
    }
}

/// A spanned value as a plain one (`None` if it cannot be read, which a parsed one always can).
fn plain_value(value: &toml::Spanned<toml::de::DeValue<'_>>) -> Option<toml::Value> {
    toml::Value::deserialize(toml::de::ValueDeserializer::from(value.clone())).ok()
}

/// A [`ConfigError::Parse`] at the key path `at` of the file (`["mcp", "servers", "0", "url"]`;
/// a number indexes a list), or at the start of the file when the path is not in it.
fn located_error(path: &Path, text: &str, at: &[&str], message: String) -> ConfigError {
    let span = toml::de::DeTable::parse(text)
        .ok()
        .and_then(|document| span_of(document.get_ref(), at));
    let (line, column) = span.map_or((1, 1), |span| line_column(text, span.start));
    ConfigError::Parse {
        path: path.to_path_buf(),
        line,
        column,
        key: Some(
            at.iter()
                .filter(|step| step.parse::<usize>().is_err())
                .copied()
                .collect::<Vec<_>>()
                .join("."),
        ),
        message,
    }
}

/// Where the value at `at` is in the file (the deepest step of `at` that is there).
fn span_of(table: &toml::de::DeTable<'_>, at: &[&str]) -> Option<std::ops::Range<usize>> {
    let (first, rest) = at.split_first()?;
    let (key, value) = table
        .iter()
        .find(|(key, _)| key.get_ref().as_ref() == *first)?;
    let mut span = key.span();
    let mut current = value;
    for step in rest {
        let next = match current.get_ref() {
            toml::de::DeValue::Table(table) => table
                .iter()
                .find(|(key, _)| key.get_ref().as_ref() == *step)
                .map(|(key, value)| (key.span(), value)),
            toml::de::DeValue::Array(items) => step
                .parse::<usize>()
                .ok()
                .and_then(|index| items.get(index))
                .map(|item| (item.span(), item)),
            _ => None,
        };
        let Some((next_span, next)) = next else {
            break;
        };
        span = next_span;
        current = next;
    }
    Some(span)
}

/// The 1-based line and column (in characters) of the byte offset `at`.
fn line_column(text: &str, at: usize) -> (usize, usize) {
    let at = at.min(text.len());
    let before = &text[..at];
    let line = before.matches('\n').count() + 1;
    let line_start = before.rfind('\n').map_or(0, |index| index + 1);
    (line, text[line_start..at].chars().count() + 1)
}

fn parse_error(path: &Path, text: &str, error: &toml::de::Error) -> ConfigError {
    let (line, column, key) = match error.span() {
        Some(span) => {
            let start = span.start.min(text.len());
            let before = &text[..start];
            let line = before.matches('\n').count() + 1;
            let line_start = before.rfind('\n').map_or(0, |index| index + 1);
            let column = text[line_start..start].chars().count() + 1;
            (line, column, key_at(text, line_start))
        }
        None => (1, 1, None),
    };
    ConfigError::Parse {
        path: path.to_path_buf(),
        line,
        column,
        key,
        message: error.message().to_owned(),
    }
}

/// The dotted key of the `key = value` line starting at `line_start`, prefixed by the table
/// header in effect there (`[agent]`, `[[llm.providers]]`).
fn key_at(text: &str, line_start: usize) -> Option<String> {
    let line = text[line_start..].lines().next().unwrap_or("").trim();
    let header = text[..line_start]
        .lines()
        .rev()
        .map(str::trim)
        .find(|line| line.starts_with('['))
        .map(|line| {
            line.trim_start_matches('[')
                .split(']')
                .next()
                .unwrap_or("")
                .trim()
                .to_owned()
        });
    if line.starts_with('[') {
        return Some(
            line.trim_start_matches('[')
                .split(']')
                .next()
                .unwrap_or("")
                .trim()
                .to_owned(),
        );
    }
    let (key, _) = line.split_once('=')?;
    let key = key.trim().trim_matches('"');
    if key.is_empty() {
        return None;
    }
    Some(match header {
        Some(header) if !header.is_empty() => format!("{header}.{key}"),
        _ => key.to_owned(),
    })
}

/// Merges `lower` (a lower-precedence layer) into `merged`: keys `merged` lacks are added, tables
/// merge recursively, `llm.providers` merges by name, anything else already set stays.
/// Applies a workspace's `[sandbox]`: a stricter mode is taken, anything that would widen the
/// sandbox is ignored with a warning.
fn tighten_sandbox(
    sandbox: &mut lode_sandbox::SandboxSettings,
    path: &Path,
    table: toml::Value,
    warnings: &mut Vec<String>,
) -> Result<(), ConfigError> {
    let workspace: lode_sandbox::SandboxSettings =
        table
            .try_into()
            .map_err(|error: toml::de::Error| ConfigError::Invalid {
                path: Some(path.to_path_buf()),
                key: "sandbox".to_owned(),
                message: error.message().to_owned(),
            })?;
    let tighter = sandbox.mode.tighter(workspace.mode);
    if tighter != workspace.mode {
        warnings.push(format!(
            "{}: [sandbox] mode = \"{}\" ignored: a workspace's config can only make the \
             sandbox stricter (it stays \"{}\")",
            path.display(),
            workspace.mode,
            sandbox.mode
        ));
    }
    sandbox.mode = tighter;
    for (key, widened) in [
        ("read", !workspace.read.is_empty()),
        ("write", !workspace.write.is_empty()),
        ("env_passthrough", !workspace.env_passthrough.is_empty()),
        (
            "allow_unix_sockets",
            !workspace.allow_unix_sockets.is_empty(),
        ),
        ("mcp_network", !workspace.mcp_network.is_empty()),
    ] {
        if widened {
            warnings.push(format!(
                "{}: [sandbox] {key} ignored: only your own config (not the workspace's) can \
                 widen the sandbox",
                path.display()
            ));
        }
    }
    Ok(())
}

fn merge_lower(merged: &mut toml::Table, lower: toml::Table, path: &str) {
    for (key, lower_value) in lower {
        let key_path = if path.is_empty() {
            key.clone()
        } else {
            format!("{path}.{key}")
        };
        match merged.get_mut(&key) {
            None => {
                merged.insert(key, lower_value);
            }
            Some(toml::Value::Table(higher)) => {
                if let toml::Value::Table(lower_table) = lower_value {
                    merge_lower(higher, lower_table, &key_path);
                }
            }
            Some(toml::Value::Array(higher)) if key_path == "llm.providers" => {
                if let toml::Value::Array(lower_items) = lower_value {
                    let names: HashSet<String> = higher
                        .iter()
                        .filter_map(|item| item.get("name").and_then(toml::Value::as_str))
                        .map(str::to_owned)
                        .collect();
                    higher.extend(lower_items.into_iter().filter(|item| {
                        item.get("name")
                            .and_then(toml::Value::as_str)
                            .is_none_or(|name| !names.contains(name))
                    }));
                }
            }
            Some(toml::Value::Array(higher)) if key_path == "permissions.rules" => {
                if let toml::Value::Array(lower_items) = lower_value {
                    higher.extend(lower_items);
                }
            }
            Some(_) => {}
        }
    }
}

/// The names of the `[[mcp.servers]]` entries that come only from the workspace's file
/// (`workspace`): the merged list is that file's (it is the first to set the key), and no other
/// file has the same entry. Such a server gets no network unless the user's own
/// `[sandbox] mcp_network` names it (`crate::mcp::launch`).
fn workspace_mcp_servers(
    layers: &[(PathBuf, toml::Table)],
    workspace: Option<&Path>,
) -> std::collections::BTreeSet<String> {
    let Some(workspace) = workspace else {
        return Default::default();
    };
    if origin_of(layers, &["mcp", "servers"]).map(PathBuf::as_path) != Some(workspace) {
        return Default::default();
    }
    let servers_of = |table: &toml::Table| -> Vec<toml::Value> {
        table
            .get("mcp")
            .and_then(|mcp| mcp.get("servers"))
            .and_then(toml::Value::as_array)
            .cloned()
            .unwrap_or_default()
    };
    let users: Vec<toml::Value> = layers
        .iter()
        .filter(|(file, _)| file != workspace)
        .flat_map(|(_, table)| servers_of(table))
        .collect();
    layers
        .iter()
        .filter(|(file, _)| file == workspace)
        .flat_map(|(_, table)| servers_of(table))
        .filter(|entry| !users.contains(entry))
        .filter_map(|entry| Some(entry.get("name")?.as_str()?.trim().to_owned()))
        .collect()
}

/// The first layer (highest precedence) that sets the key at `path`.
fn origin_of<'a>(layers: &'a [(PathBuf, toml::Table)], path: &[&str]) -> Option<&'a PathBuf> {
    layers.iter().find_map(|(file, table)| {
        let mut current = table;
        for (index, key) in path.iter().enumerate() {
            let value = current.get(*key)?;
            if index + 1 == path.len() {
                return Some(file);
            }
            current = value.as_table()?;
        }
        None
    })
}

fn validate(config: &Config, layers: &[(PathBuf, toml::Table)]) -> Result<(), ConfigError> {
    let invalid = |path: &[&str], message: String| ConfigError::Invalid {
        path: origin_of(layers, path).cloned(),
        key: path.join("."),
        message,
    };
    if let Some(default) = &config.llm.default
        && !config
            .llm
            .providers
            .iter()
            .any(|provider| &provider.name == default)
    {
        let names: Vec<&str> = config
            .llm
            .providers
            .iter()
            .map(|provider| provider.name.as_str())
            .collect();
        return Err(invalid(
            &["llm", "default"],
            format!(
                "names the provider \"{default}\", which is not configured (configured: {})",
                if names.is_empty() {
                    "none".to_owned()
                } else {
                    names.join(", ")
                }
            ),
        ));
    }
    let agent = &config.agent;
    if agent.max_tool_iterations == 0 {
        return Err(invalid(
            &["agent", "max_tool_iterations"],
            "must be at least 1".to_owned(),
        ));
    }
    if !(agent.compaction_threshold > 0.0 && agent.compaction_threshold <= 1.0) {
        return Err(invalid(
            &["agent", "compaction_threshold"],
            format!(
                "must be a fraction above 0 and at most 1, got {}",
                agent.compaction_threshold
            ),
        ));
    }
    if let Err(message) = agent.context.validate() {
        return Err(invalid(&["agent", "context"], message));
    }
    Ok(())
}

/// Key names whose string values are credentials (compared in lower case, as substrings).
const SECRET_KEY_WORDS: &[&str] = &[
    "key",
    "token",
    "secret",
    "password",
    "passwd",
    "auth",
    "cookie",
    "credential",
];

/// Replaces string values that look like credentials: values of keys named like one (but not
/// `*_env` keys, which name a variable) and values that match a known secret pattern.
fn redact_value(value: &mut toml::Value, key: Option<&str>) {
    match value {
        toml::Value::String(text) => {
            let key_is_secret = key.is_some_and(|key| {
                let key = key.to_ascii_lowercase();
                !key.ends_with("_env")
                    && !key.ends_with("_var")
                    && SECRET_KEY_WORDS.iter().any(|word| key.contains(word))
            });
            if key_is_secret || crate::redact::contains_secret(text) {
                *text = crate::redact::REDACTED.to_owned();
            }
        }
        toml::Value::Array(items) => {
            for item in items {
                redact_value(item, key);
            }
        }
        toml::Value::Table(table) => {
            for (key, item) in table.iter_mut() {
                redact_value(item, Some(key));
            }
        }
        _ => {}
    }
}
