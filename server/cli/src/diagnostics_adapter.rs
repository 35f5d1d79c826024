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

use std::path::Path;
use std::sync::Arc;

use lode_agent::config::LspDiagnosticsSettings;
use lode_lsp::agent_diagnostics::ProviderSource;
use lode_lsp::agent_navigation::ServerNavigation;
use lode_lsp::downstream::{DiagnosticsConfig, DiagnosticsProvider};
use lode_tools::diagnostics::DiagnosticsSource;
use lode_tools::navigation::NavigationSource;

/// What `[lsp.diagnostics]` says.
#[derive(Debug)]
pub struct DiagnosticsSettings {
    pub enabled: bool,
    pub config: DiagnosticsConfig,
}

/// The downstream provider's settings from `[lsp.diagnostics]` (checked by the config loader).
pub fn settings_from(section: &LspDiagnosticsSettings) -> DiagnosticsSettings {
    DiagnosticsSettings {
        enabled: section.enabled,
        config: DiagnosticsConfig {
            servers: section
                .servers
                .iter()
                .map(|(family, command)| (family.clone(), command.clone()))
                .collect(),
            default_servers: section.default_servers,
            commands: section.commands,
            ..DiagnosticsConfig::default()
        },
    }
}

/// The agent's diagnostics and navigation over one set of warm language servers.
pub struct Sources {
    pub diagnostics: Arc<dyn DiagnosticsSource>,
    pub navigation: Arc<dyn NavigationSource>,
}

/// The diagnostics source for an agent on `root` and the navigation (`hover`, `definition`,
/// `references`) that asks the same language servers (one server per language serves both),
/// unless `[lsp.diagnostics] enabled = false`. A config that cannot be used is an error (the
/// loader's, naming the file, line and key).
pub fn sources_for(root: &Path, config_file: Option<&Path>) -> anyhow::Result<Option<Sources>> {
    Ok(config_for(root, config_file)?.map(|config| {
        let provider = Arc::new(DiagnosticsProvider::new(root, config));
        Sources {
            diagnostics: Arc::new(ProviderSource::shared(provider.clone())),
            navigation: Arc::new(ServerNavigation::new(provider)),
        }
    }))
}

/// What to check with for an agent on `root`: `None` when `[lsp.diagnostics] enabled = false`;
/// a config that cannot be used is an error.
pub fn config_for(
    root: &Path,
    config_file: Option<&Path>,
) -> anyhow::Result<Option<DiagnosticsConfig>> {
    let loaded = lode_agent::config::Config::load(config_file, root)?;
    let mut settings = settings_from(&loaded.config.lsp.diagnostics);
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

    /// `[lsp.diagnostics]` read through the config loader, as the front ends read it.
    fn settings(text: &str) -> DiagnosticsSettings {
        let config =
            lode_agent::config::Config::from_toml_str(text, Path::new("config.toml")).unwrap();
        settings_from(&config.lsp.diagnostics)
    }

    #[test]
    fn absent_section_means_enabled_with_defaults() {
        let settings = settings("");
        assert!(settings.enabled);
        assert!(settings.config.default_servers && settings.config.commands);
    }

    #[test]
    fn keys_are_read() {
        let settings = settings(
            "[lsp.diagnostics]\nenabled = false\ncommands = false\nservers = { go = [], python = [\"pylsp\"] }\n",
        );
        assert!(!settings.enabled && !settings.config.commands);
        assert_eq!(settings.config.servers["python"], vec!["pylsp".to_owned()]);
        assert!(settings.config.servers["go"].is_empty());
    }
}
