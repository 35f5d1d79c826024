//! What the agent's integration tests share.

use std::path::Path;

use lode_agent::AgentOptions;

/// Options for a test workspace. Its scripted providers live in its `.lode/config.toml`, which
/// lode applies in full only once the user trusts it (trust has its own tests), so the file is
/// named as the user's own (`--config`); the user's state (workspace trust, remembered answers,
/// skill trust) lives in the test's folder, not the real home.
pub fn test_options(root: &Path) -> AgentOptions {
    AgentOptions {
        config_file: Some(root.join(".lode/config.toml")).filter(|file| file.exists()),
        state_dir: Some(root.join(".lode/test-user-state")),
        ..AgentOptions::default()
    }
}
