//! Commands that need the network to do their job: their permission question offers "allow
//! once with network", since the sandbox otherwise refuses every TCP and UDP socket.

use super::shell::Segment;

/// Program, then the subcommands that download or upload (empty: every use).
const NETWORK_COMMANDS: &[(&str, &[&str])] = &[
    (
        "cargo",
        &[
            "add",
            "update",
            "fetch",
            "install",
            "search",
            "publish",
            "login",
            "generate-lockfile",
            "vendor",
            "yank",
            "owner",
            "info",
        ],
    ),
    (
        "npm",
        &[
            "install", "i", "ci", "add", "update", "publish", "view", "audit", "outdated", "exec",
        ],
    ),
    ("npx", &[]),
    ("pnpm", &["install", "i", "add", "update", "publish", "dlx"]),
    ("yarn", &["install", "add", "upgrade", "publish", "dlx"]),
    ("bun", &["install", "add", "update", "x"]),
    ("pip", &["install", "download"]),
    ("pip3", &["install", "download"]),
    ("uv", &["pip", "sync", "add", "lock", "run", "tool"]),
    ("poetry", &["install", "add", "update", "lock"]),
    ("go", &["get", "mod", "install"]),
    (
        "git",
        &["fetch", "pull", "push", "clone", "ls-remote", "submodule"],
    ),
    ("gh", &[]),
    ("curl", &[]),
    ("wget", &[]),
    ("ssh", &[]),
    ("scp", &[]),
    ("rsync", &[]),
    ("docker", &["pull", "push", "build", "login"]),
    ("gem", &["install"]),
    ("bundle", &["install", "update"]),
    ("composer", &["install", "update", "require"]),
    ("apt-get", &["update", "install"]),
];

/// Whether the segment's command is one that needs the network.
pub fn needs_network(segment: &Segment) -> bool {
    let (program, args) = segment.effective();
    NETWORK_COMMANDS.iter().any(|(name, subcommands)| {
        *name == program
            && (subcommands.is_empty()
                || args
                    .iter()
                    .find(|arg| !arg.starts_with('-'))
                    .is_some_and(|sub| subcommands.contains(&sub.as_str())))
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analyze;

    fn network(command: &str) -> bool {
        analyze(command).segments.iter().any(needs_network)
    }

    #[test]
    fn downloads_need_the_network_and_builds_do_not() {
        for yes in [
            "cargo add serde",
            "npm install",
            "pip install -r requirements.txt",
            "git fetch origin",
            "curl https://example.invalid",
            "go mod download",
        ] {
            assert!(network(yes), "{yes}");
        }
        for no in [
            "cargo test",
            "npm test",
            "git status",
            "ls",
            "go test ./...",
        ] {
            assert!(!network(no), "{no}");
        }
    }
}
