//! Wires the LSP crate's downstream diagnostics (language servers lode runs as a client, with
//! checker commands as the fallback) into the agent as its `DiagnosticsSource`, configured by the
//! `[lsp.diagnostics]` section of the config:
//!
//! ```toml
//! [lsp.diagnostics]
//! enabled = true            # feed diagnostics to the agent after edits (default true)
//! default_servers = true    # try rust-analyzer, pyright-langserver, … when on PATH
//! commands = true           # fall back to cargo check, pyright, tsc
//! servers = { python = ["pylsp"], go = [] }   # per family; [] turns servers off
//! ```

use std::collections::HashMap;
use std::path::Path;
use std::sync::Arc;

use lode_agent::diagnostics::DiagnosticsSource;
use lode_agent::navigation::NavigationSource;
use lode_lsp::agent_diagnostics::ProviderSource;
use lode_lsp::agent_navigation::ServerNavigation;
use lode_lsp::downstream::{DiagnosticsConfig, DiagnosticsProvider};

/// What `[lsp.diagnostics]` says.
#[derive(Debug)]
pub struct DiagnosticsSettings {
    pub enabled: bool,
    pub config: DiagnosticsConfig,
}

/// Reads `[lsp.diagnostics]` from the `[lsp]` table (absent keys keep their defaults).
pub fn settings_from(lsp: Option<&toml::Value>) -> Result<DiagnosticsSettings, String> {
    let mut settings = DiagnosticsSettings {
        enabled: true,
        config: DiagnosticsConfig::default(),
    };
    let Some(table) = lsp.and_then(|lsp| lsp.get("diagnostics")) else {
        return Ok(settings);
    };
    let table = table
        .as_table()
        .ok_or("[lsp.diagnostics] must be a table")?;
    for (key, value) in table {
        let flag = || {
            value
                .as_bool()
                .ok_or(format!("[lsp.diagnostics] {key} must be true or false"))
        };
        match key.as_str() {
            "enabled" => settings.enabled = flag()?,
            "default_servers" => settings.config.default_servers = flag()?,
            "commands" => settings.config.commands = flag()?,
            "servers" => {
                let servers = value
                    .as_table()
                    .ok_or("[lsp.diagnostics] servers must be a table of command lines")?;
                let mut parsed = HashMap::new();
                for (family, command) in servers {
                    let parts = command
                        .as_array()
                        .and_then(|parts| {
                            parts
                                .iter()
                                .map(|part| part.as_str().map(str::to_owned))
                                .collect::<Option<Vec<String>>>()
                        })
                        .ok_or(format!(
                            "[lsp.diagnostics] servers.{family} must be a list of strings"
                        ))?;
                    parsed.insert(family.clone(), parts);
                }
                settings.config.servers = parsed;
            }
            other => return Err(format!("[lsp.diagnostics] has no key {other:?}")),
        }
    }
    Ok(settings)
}

/// The agent's diagnostics and navigation over one set of warm language servers.
pub struct Sources {
    pub diagnostics: Arc<dyn DiagnosticsSource>,
    pub navigation: Arc<dyn NavigationSource>,
}

/// The diagnostics source for an agent on `root` and the navigation (`hover`, `definition`,
/// `references`) that asks the same language servers (one server per language serves both),
/// unless `[lsp.diagnostics] enabled = false`. A config that cannot be read leaves it to
/// `Agent::open` to report; a bad `[lsp.diagnostics]` section is an error.
pub fn sources_for(root: &Path, config_file: Option<&Path>) -> anyhow::Result<Option<Sources>> {
    Ok(config_for(root, config_file)?.map(|config| {
        let provider = Arc::new(DiagnosticsProvider::new(root, config));
        Sources {
            diagnostics: Arc::new(ProviderSource::shared(provider.clone())),
            navigation: Arc::new(ServerNavigation::new(provider)),
        }
    }))
}

/// What to check with for an agent on `root`: `None` when `[lsp.diagnostics] enabled = false`
/// or the config cannot be read (`Agent::open` reports that); a bad section is an error.
pub fn config_for(
    root: &Path,
    config_file: Option<&Path>,
) -> anyhow::Result<Option<DiagnosticsConfig>> {
    let Ok(loaded) = lode_agent::config::Config::load(config_file, root) else {
        return Ok(None);
    };
    let mut settings = settings_from(loaded.config.other.get("lsp")).map_err(anyhow::Error::msg)?;
    // Checkers run the workspace's code (cargo check runs build.rs): confined like commands.
    settings.config.sandbox = Arc::new(lode_agent::sandbox_for(
        crate::sandbox_command::launcher(),
        &loaded.config,
    ));
    Ok(settings.enabled.then_some(settings.config))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lsp(text: &str) -> toml::Value {
        toml::from_str::<toml::Table>(text).unwrap()["lsp"].clone()
    }

    #[test]
    fn absent_section_means_enabled_with_defaults() {
        let settings = settings_from(None).unwrap();
        assert!(settings.enabled);
        assert!(settings.config.default_servers && settings.config.commands);
    }

    #[test]
    fn keys_are_read_and_bad_ones_refused() {
        let settings = settings_from(Some(&lsp(
            "[lsp.diagnostics]\nenabled = false\ncommands = false\nservers = { go = [], python = [\"pylsp\"] }\n",
        )))
        .unwrap();
        assert!(!settings.enabled && !settings.config.commands);
        assert_eq!(settings.config.servers["python"], vec!["pylsp".to_owned()]);
        assert!(settings.config.servers["go"].is_empty());
        let error = settings_from(Some(&lsp("[lsp.diagnostics]\nenable = true\n"))).unwrap_err();
        assert!(error.contains("\"enable\""), "{error}");
        let error = settings_from(Some(&lsp(
            "[lsp.diagnostics]\nservers = { rust = \"ra\" }\n",
        )))
        .unwrap_err();
        assert!(error.contains("servers.rust"), "{error}");
    }
}
