//! Editor configurations that run lode: the workspace's own and the user's, for the editors
//! `editors/` documents (Zed, VS Code, Helix, Neovim, JetBrains). A file counts when it
//! mentions `lode`; what it says is not shown (it may hold an `env` with keys).

use std::path::{Path, PathBuf};

use super::Check;

/// (editor, file) pairs to look at.
fn candidates(root: &Path) -> Vec<(&'static str, PathBuf)> {
    let mut files = vec![
        ("Zed", root.join(".zed/settings.json")),
        ("VS Code", root.join(".vscode/settings.json")),
        ("Helix", root.join(".helix/languages.toml")),
        ("Neovim", root.join(".nvim.lua")),
    ];
    let home = std::env::var_os("HOME").map(PathBuf::from);
    let config = std::env::var_os("XDG_CONFIG_HOME")
        .map(PathBuf::from)
        .filter(|dir| dir.is_absolute())
        .or_else(|| home.as_ref().map(|home| home.join(".config")));
    if let Some(config) = config {
        files.push(("Zed", config.join("zed/settings.json")));
        files.push(("VS Code", config.join("Code/User/settings.json")));
        files.push(("Helix", config.join("helix/languages.toml")));
        files.push(("Neovim", config.join("nvim/init.lua")));
        files.push(("Neovim", config.join("nvim/lua/lode.lua")));
    }
    if let Some(home) = home {
        files.push(("JetBrains", home.join(".jetbrains/acp.json")));
    }
    files
}

/// Installed VS Code extensions whose folder is lode's (`lode.lode-0.1.0`).
fn vscode_extensions() -> Vec<PathBuf> {
    let Some(home) = std::env::var_os("HOME").map(PathBuf::from) else {
        return Vec::new();
    };
    let Ok(entries) = std::fs::read_dir(home.join(".vscode/extensions")) else {
        return Vec::new();
    };
    entries
        .flatten()
        .filter(|entry| {
            entry
                .file_name()
                .to_string_lossy()
                .starts_with("lode.lode-")
        })
        .map(|entry| entry.path())
        .collect()
}

fn mentions_lode(path: &Path) -> bool {
    std::fs::read_to_string(path).is_ok_and(|text| text.contains("lode"))
}

pub fn check(root: &Path) -> Vec<Check> {
    let mut checks: Vec<Check> = candidates(root)
        .into_iter()
        .filter(|(_, file)| mentions_lode(file))
        .map(|(editor, file)| {
            Check::ok(
                "editor",
                format!("{editor}: {} mentions lode", file.display()),
            )
        })
        .collect();
    checks.extend(vscode_extensions().into_iter().map(|folder| {
        Check::ok(
            "editor",
            format!(
                "VS Code: lode's extension is installed ({})",
                folder.display()
            ),
        )
    }));
    if checks.is_empty() {
        checks.push(Check::warn(
            "editor",
            "no editor configuration that runs lode was found (Zed, VS Code, Helix, Neovim, \
             JetBrains; workspace and user files)",
            "follow editors/<your editor>/README.md, e.g. Zed: \"agent_servers\": { \"lode\": \
             { \"type\": \"custom\", \"command\": \"lode\", \"args\": [\"acp\"] } }",
        ));
    }
    checks
}
