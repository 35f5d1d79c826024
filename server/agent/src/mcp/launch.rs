//! How a stdio MCP server is started: through the sandbox's launcher, like every program lode
//! starts for a workspace.
//!
//! - It runs in the workspace root, confined in the mode `[sandbox]` gives commands
//!   (`workspace-write` by default; `read-only` when that is the mode): it reads the system,
//!   the toolchains and the workspace, writes only the workspace (not `.git/` or `.lode/`) and
//!   its private temporary directory, reaches no Unix socket outside, and sees the allowlisted
//!   environment plus the variables of its own `env` setting.
//! - A server of the user's own config or editor ([`McpSource::User`]) gets the network (most
//!   servers are clients of a web service). One named only by a workspace's config
//!   ([`McpSource::Workspace`], which needs `lode trust` to be read at all) does not, unless the
//!   user's own `[sandbox] mcp_network` names it.
//! - Where the sandbox cannot confine (the kernel lacks it, or `[sandbox] mode = "off"`), the
//!   user's own servers run unconfined, with a notice (the named exemption
//!   `lode_sandbox::exempt::USERS_MCP_SERVERS`); a workspace's server is not started.

use std::path::{Path, PathBuf};

use lode_sandbox::{Sandbox, SandboxStatus};

use super::config::McpSource;
use super::connection::McpError;

/// A stdio server's command line and settings, as configured.
#[derive(Debug, Clone, Copy)]
pub struct StdioServer<'a> {
    pub name: &'a str,
    pub source: McpSource,
    pub command: &'a str,
    pub args: &'a [String],
    pub env: &'a [(String, String)],
    pub cwd: Option<&'a Path>,
}

/// The process to start, and a notice when it runs unconfined.
#[derive(Debug)]
pub struct ServerLaunch {
    pub command: tokio::process::Command,
    /// Said once to the user when the server runs outside the sandbox.
    pub unconfined: Option<String>,
}

/// The command that starts `server` for the workspace at `root` (its default working
/// directory), confined by `sandbox` as the module docs say; an error when it may not start.
pub fn server_command(
    server: StdioServer<'_>,
    sandbox: &Sandbox,
    root: Option<&Path>,
) -> Result<ServerLaunch, McpError> {
    let roots: Vec<PathBuf> = root
        .map(|root| std::fs::canonicalize(root).unwrap_or_else(|_| root.to_path_buf()))
        .into_iter()
        .collect();
    let network = match server.source {
        McpSource::User => true,
        McpSource::Workspace => sandbox
            .settings()
            .mcp_network
            .iter()
            .any(|name| name.trim() == server.name),
    };
    let pass_env: Vec<String> = server.env.iter().map(|(name, _)| name.clone()).collect();
    let confinable = match sandbox.status() {
        SandboxStatus::Confined(mode) => Some(*mode),
        // The user turned the sandbox off for commands; a workspace's server is still confined.
        SandboxStatus::Off if server.source == McpSource::Workspace => {
            Some(lode_sandbox::SandboxMode::WorkspaceWrite)
        }
        SandboxStatus::Off | SandboxStatus::Unavailable(_) => None,
    };
    let wrapped = confinable.and_then(|mode| {
        sandbox.wrap_server(
            &roots,
            mode,
            network,
            &pass_env,
            server.command,
            server.args.iter(),
        )
    });
    let (mut command, unconfined) = match (wrapped, server.source) {
        (Some(wrapped), _) => {
            let mut command = tokio::process::Command::new(wrapped.program);
            command.args(wrapped.args);
            (command, None)
        }
        (None, McpSource::Workspace) => {
            return Err(McpError::Refused(format!(
                "it is named only by the workspace's config, and lode starts a workspace's \
                 programs only inside its sandbox, which cannot confine here ({})",
                unconfinable_reason(sandbox)
            )));
        }
        (None, McpSource::User) => {
            let mut command = tokio::process::Command::new(server.command);
            command.args(server.args);
            let notice = format!(
                "MCP server {:?} runs outside the sandbox ({}): it is your own, from your \
                 config or editor",
                server.name,
                unconfinable_reason(sandbox)
            );
            (command, Some(notice))
        }
    };
    command.envs(server.env.iter().map(|(name, value)| (name, value)));
    if let Some(dir) = server.cwd.or(root) {
        command.current_dir(dir);
    }
    Ok(ServerLaunch {
        command,
        unconfined,
    })
}

fn unconfinable_reason(sandbox: &Sandbox) -> String {
    match sandbox.status() {
        SandboxStatus::Off => "[sandbox] mode = \"off\"".to_owned(),
        SandboxStatus::Unavailable(reason) => reason.clone(),
        SandboxStatus::Confined(_) => sandbox
            .own_programs_unconfinable()
            .unwrap_or("no sandbox launcher")
            .to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use lode_sandbox::{SandboxMode, SandboxSettings};

    fn server(source: McpSource) -> StdioServer<'static> {
        static ARGS: std::sync::LazyLock<Vec<String>> =
            std::sync::LazyLock::new(|| vec!["--flag".to_owned()]);
        static ENV: std::sync::LazyLock<Vec<(String, String)>> =
            std::sync::LazyLock::new(|| vec![("SERVER_TOKEN".to_owned(), "t".to_owned())]);
        StdioServer {
            name: "docs",
            source,
            command: "docs-server",
            args: &ARGS,
            env: &ENV,
            cwd: None,
        }
    }

    fn args_of(command: &tokio::process::Command) -> Vec<String> {
        command
            .as_std()
            .get_args()
            .map(|arg| arg.to_string_lossy().into_owned())
            .collect()
    }

    #[test]
    fn without_a_sandbox_the_users_server_runs_with_a_notice_and_a_workspaces_does_not() {
        let sandbox = Sandbox::unavailable("no launcher in this test");
        let root = Path::new("/w");
        let user = server_command(server(McpSource::User), &sandbox, Some(root)).unwrap();
        assert_eq!(user.command.as_std().get_program(), "docs-server");
        assert_eq!(args_of(&user.command), vec!["--flag"]);
        let notice = user.unconfined.unwrap();
        assert!(notice.contains("outside the sandbox"), "{notice}");
        let refused = server_command(server(McpSource::Workspace), &sandbox, Some(root))
            .unwrap_err()
            .to_string();
        assert!(refused.contains("workspace's config"), "{refused}");
    }

    /// Where the kernel confines: the launcher's command line carries the mode, the network
    /// only for the user's server (or a workspace server the user names) and the server's own
    /// variables. (The confinement itself is tested with the real binary in tests/e2e.)
    #[test]
    fn where_the_kernel_confines_servers_go_through_the_launcher() {
        if lode_sandbox::Capabilities::probe()
            .missing_for(SandboxMode::WorkspaceWrite)
            .is_some()
        {
            eprintln!("skipping: this machine cannot confine");
            return;
        }
        let dir = tempfile::tempdir().unwrap();
        let root = std::fs::canonicalize(dir.path()).unwrap();
        let sandbox = |settings: SandboxSettings| {
            Sandbox::new(PathBuf::from("/usr/bin/lode"), settings, Vec::new())
        };
        let plain = sandbox(SandboxSettings::default());
        let user = server_command(server(McpSource::User), &plain, Some(&root)).unwrap();
        assert_eq!(user.command.as_std().get_program(), "/usr/bin/lode");
        let args = args_of(&user.command);
        assert!(user.unconfined.is_none());
        for expected in [
            "sandbox-exec",
            "workspace-write",
            "--network",
            "SERVER_TOKEN",
        ] {
            assert!(
                args.iter().any(|arg| arg == expected),
                "{expected}: {args:?}"
            );
        }
        assert_eq!(&args[args.len() - 2..], ["docs-server", "--flag"]);
        assert_eq!(
            user.command.as_std().get_current_dir(),
            Some(root.as_path())
        );

        let workspace = server_command(server(McpSource::Workspace), &plain, Some(&root)).unwrap();
        let args = args_of(&workspace.command);
        assert!(!args.iter().any(|arg| arg == "--network"), "{args:?}");

        let named = sandbox(SandboxSettings {
            mcp_network: vec!["docs".to_owned()],
            ..SandboxSettings::default()
        });
        let workspace = server_command(server(McpSource::Workspace), &named, Some(&root)).unwrap();
        assert!(
            args_of(&workspace.command)
                .iter()
                .any(|arg| arg == "--network")
        );

        // `mode = "off"` is about the model's commands: the user's server runs as it is, a
        // workspace's stays confined.
        let off = sandbox(SandboxSettings {
            mode: SandboxMode::Off,
            ..SandboxSettings::default()
        });
        let user = server_command(server(McpSource::User), &off, Some(&root)).unwrap();
        assert_eq!(user.command.as_std().get_program(), "docs-server");
        assert!(user.unconfined.is_some());
        let workspace = server_command(server(McpSource::Workspace), &off, Some(&root)).unwrap();
        assert_eq!(workspace.command.as_std().get_program(), "/usr/bin/lode");
        assert!(
            args_of(&workspace.command)
                .iter()
                .any(|arg| arg == "workspace-write")
        );

        let read_only = sandbox(SandboxSettings {
            mode: SandboxMode::ReadOnly,
            ..SandboxSettings::default()
        });
        let user = server_command(server(McpSource::User), &read_only, Some(&root)).unwrap();
        assert!(args_of(&user.command).iter().any(|arg| arg == "read-only"));
    }
}
