//! What the agent's integration tests share.

use std::path::{Path, PathBuf};

use lode_agent::AgentOptions;

/// Options for a test workspace. Its scripted providers live in its `.lode/config.toml`, which
/// lode applies in full only once the user trusts it (trust has its own tests), so the file is
/// named as the user's own (`--config`); the user's state (workspace trust, remembered answers,
/// skill trust) lives in the test's folder, not the real home.
pub fn test_options(root: &Path) -> AgentOptions {
    AgentOptions {
        config_file: Some(root.join(".lode/config.toml")).filter(|file| file.exists()),
        state_dir: Some(root.join(".lode/test-user-state")),
        provider_env: Some(no_provider_env()),
        ..AgentOptions::default()
    }
}

/// The repository's root (fixtures live under it).
#[allow(dead_code)] // Not every test binary copies fixtures.
pub fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// Copies a fixture directory tree.
#[allow(dead_code)] // Not every test binary copies fixtures.
pub fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), &target).unwrap();
        }
    }
}

/// No key variable and no Ollama (it is looked for where nothing listens): the machine running
/// the tests cannot lend a provider to a test that configures none.
pub fn no_provider_env() -> lode_agent::ProviderEnv {
    std::sync::Arc::new(|name: &str| (name == "OLLAMA_HOST").then(|| "127.0.0.1:9".to_owned()))
}
