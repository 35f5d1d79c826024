//! Zero-config models at the configuration level (`LoadedConfig::detect_provider`): the
//! documented order of the key variables, configuration always winning, an untrusted
//! workspace's providers asked about before anything is detected, and the no-provider error
//! saying what detection looked at. The environment is a closure here; `tests/zero_config.rs`
//! drives the real binary with real variables and a stand-in Ollama.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use lode_agent::config::{Config, ConfigError, ConfigSources, LoadedConfig};

fn write(path: &Path, text: &str) -> PathBuf {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
    path.to_path_buf()
}

fn env(pairs: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> + use<> {
    let mut map: HashMap<String, String> = pairs
        .iter()
        .map(|(name, value)| ((*name).to_owned(), (*value).to_owned()))
        .collect();
    // Ollama, when asked, is looked for where nothing listens.
    map.entry("OLLAMA_HOST".to_owned())
        .or_insert_with(|| "127.0.0.1:9".to_owned());
    move |name| map.get(name).cloned()
}

fn load(user: Option<&str>, workspace: Option<&str>) -> (tempfile::TempDir, LoadedConfig) {
    let dir = tempfile::tempdir().unwrap();
    let user = user.map(|text| write(&dir.path().join("user/config.toml"), text));
    let workspace = workspace.map(|text| write(&dir.path().join("repo/.lode/config.toml"), text));
    let loaded = Config::load_from(&ConfigSources {
        flag: None,
        env: None,
        workspace,
        user,
        workspace_trusted: false,
    })
    .unwrap();
    (dir, loaded)
}

#[test]
fn the_documented_order_is_followed() {
    let cases: &[(&[(&str, &str)], &str)] = &[
        (
            &[
                ("OPENROUTER_API_KEY", "r"),
                ("OPENAI_API_KEY", "o"),
                ("ANTHROPIC_API_KEY", "a"),
            ],
            "anthropic",
        ),
        (
            &[("OPENROUTER_API_KEY", "r"), ("OPENAI_API_KEY", "o")],
            "openai",
        ),
        (&[("OPENROUTER_API_KEY", "r")], "openrouter"),
        (
            &[("ANTHROPIC_API_KEY", ""), ("OPENROUTER_API_KEY", "r")],
            "openrouter",
        ),
    ];
    for (vars, expected) in cases {
        let (_dir, mut loaded) = load(None, None);
        let detected = loaded.detect_provider(&env(vars)).cloned();
        assert_eq!(
            detected.map(|d| d.provider.name).as_deref(),
            Some(*expected)
        );
        // The detected provider is what `provider(None)` gives, as if configured.
        assert_eq!(loaded.provider(None).unwrap().name, *expected);
        assert_eq!(loaded.config.llm.providers.len(), 1);
    }
}

#[test]
fn configuration_always_wins() {
    let user = "[[llm.providers]]\nname = \"mine\"\nkind = \"openai\"\nbase_url = \"http://127.0.0.1:8080/v1\"\nmodel = \"m\"\n";
    let (_dir, mut loaded) = load(Some(user), None);
    let everything = env(&[
        ("ANTHROPIC_API_KEY", "a"),
        ("OPENAI_API_KEY", "o"),
        ("OPENROUTER_API_KEY", "r"),
    ]);
    assert!(loaded.detect_provider(&everything).is_none());
    assert!(loaded.detected.is_none());
    assert_eq!(loaded.provider(None).unwrap().name, "mine");
    assert_eq!(loaded.config.llm.providers.len(), 1);
}

#[test]
fn an_untrusted_workspaces_providers_are_asked_about_first() {
    let workspace = "[[llm.providers]]\nname = \"local\"\nkind = \"openai\"\nbase_url = \"http://127.0.0.1:8080/v1\"\nmodel = \"m\"\n";
    let (_dir, mut loaded) = load(None, Some(workspace));
    assert!(
        loaded
            .detect_provider(&env(&[("OPENAI_API_KEY", "o")]))
            .is_none()
    );
    assert!(matches!(
        loaded.provider(None),
        Err(ConfigError::UntrustedProviders { .. })
    ));
}

#[test]
fn nothing_detected_is_said_in_the_error() {
    let (_dir, mut loaded) = load(None, None);
    assert!(loaded.detect_provider(&env(&[])).is_none());
    let error = loaded.provider(None).unwrap_err();
    let message = error.to_string();
    assert!(
        message.starts_with(
            "no LLM provider is configured and nothing detected: none of ANTHROPIC_API_KEY, \
             OPENAI_API_KEY, OPENROUTER_API_KEY is set; no Ollama with a tool-capable model at \
             http://127.0.0.1:9 (nothing listening)."
        ),
        "{message}"
    );
    assert!(message.contains("[[llm.providers]]"), "{message}");
}
