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

/// The variable that tells a test it runs in its own process (see [`in_own_process`]).
const OWN_PROCESS: &str = "LODE_TEST_OWN_PROCESS";

/// For a test that needs process-wide environment variables: every suite shares this test
/// binary, so such a test runs alone in a child process of it, with `env` set there. Returns
/// `true` in the parent once the child passed (the test is done; it panics when the child
/// failed), `false` in the child, where the test's body runs and may set variables of its own.
/// `test` is the test's path in this binary (`config::discovery_reads_…`).
pub fn in_own_process(test: &str, env: &[(&str, &std::ffi::OsStr)]) -> bool {
    if std::env::var_os(OWN_PROCESS).is_some_and(|name| name == test) {
        return false;
    }
    let mut child = std::process::Command::new(std::env::current_exe().unwrap());
    child
        .args([test, "--exact", "--nocapture", "--test-threads=1"])
        .env(OWN_PROCESS, test);
    for (name, value) in env {
        child.env(name, value);
    }
    let output = child.output().unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success() && stdout.contains("1 passed"),
        "{test} in its own process:\n{stdout}\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    true
}
