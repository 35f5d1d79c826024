//! `lode sandbox-check`: what the sandbox can enforce on this machine, the profile commands get
//! here, and a live self-test (a confined command writes inside the workspace and is refused
//! outside it). Also names the launcher: this very binary, which runs `lode sandbox-exec`.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::Context;
use clap::Args;
use lode_sandbox::{Capabilities, Sandbox, SandboxStatus};
use serde_json::json;

use crate::commands::{WorkspaceArgs, resolve_root};
use crate::render::say;

/// The program commands are confined through: this `lode` binary.
pub fn launcher() -> Option<PathBuf> {
    std::env::current_exe().ok()
}

/// Options of `lode sandbox-check`.
#[derive(Debug, Args)]
pub struct SandboxCheckArgs {
    /// Print one JSON object instead of text.
    #[arg(long)]
    pub json: bool,
}

/// What the self-test saw.
struct SelfTest {
    wrote_inside: bool,
    refused_outside: bool,
    detail: String,
}

/// Runs a confined `sh` that writes one file in a scratch workspace and tries one outside it.
fn self_test(sandbox: &Sandbox) -> anyhow::Result<Option<SelfTest>> {
    let scratch = std::env::temp_dir().join(format!("lode-sandbox-check-{}", std::process::id()));
    let workspace = scratch.join("workspace");
    let outside = scratch.join("outside");
    std::fs::create_dir_all(&workspace).context("creating the self-test workspace")?;
    std::fs::create_dir_all(&outside).context("creating the self-test directory")?;
    let root = std::fs::canonicalize(&workspace)?;
    let script = format!(
        "echo ok > {inside}; echo escaped > {outside}",
        inside = shell_quote(&root.join("inside.txt")),
        outside = shell_quote(&outside.join("escaped.txt")),
    );
    let Some(wrapped) = sandbox.wrap(std::slice::from_ref(&root), false, "sh", ["-c", &script])
    else {
        let _ = std::fs::remove_dir_all(&scratch);
        return Ok(None);
    };
    let output = std::process::Command::new(&wrapped.program)
        .args(&wrapped.args)
        .current_dir(&root)
        .output()
        .context("running the self-test")?;
    let result = SelfTest {
        wrote_inside: root.join("inside.txt").is_file(),
        refused_outside: !outside.join("escaped.txt").exists(),
        detail: String::from_utf8_lossy(&output.stderr).trim().to_owned(),
    };
    let _ = std::fs::remove_dir_all(&scratch);
    Ok(Some(result))
}

fn shell_quote(path: &Path) -> String {
    format!("'{}'", path.display().to_string().replace('\'', "'\\''"))
}

pub fn run(workspace: &WorkspaceArgs, args: SandboxCheckArgs) -> anyhow::Result<ExitCode> {
    let root = resolve_root(workspace, None)?;
    let loaded = lode_agent::config::Config::load(workspace.config.as_deref(), &root)?;
    let sandbox = lode_agent::sandbox_for(launcher(), &loaded.config);
    let capabilities = Capabilities::probe();
    let profile = sandbox.profile(std::slice::from_ref(&root), false);
    let test = self_test(&sandbox)?;
    let hidden = lode_sandbox::hidden_for(&profile);
    let enforced = matches!(&test, Some(t) if t.wrote_inside && t.refused_outside);
    if args.json {
        let report = json!({
            "status": sandbox.status().describe(),
            "confined": sandbox.is_confined(),
            "mode": profile.mode.as_str(),
            "capabilities": capabilities,
            "landlock_confines_tcp": capabilities.landlock_confines_tcp(),
            "landlock_scopes_signals": capabilities.landlock_scopes_signals(),
            "profile": {
                "roots": profile.roots,
                "read": profile.read,
                "write": profile.write,
                "env_passthrough": profile.env_passthrough,
                "secret_env": profile.secret_env,
                "allow_unix_sockets": profile.allow_sockets,
            },
            "hidden_socket_dirs": hidden.dirs,
            "hidden_sockets": hidden.sockets,
            "self_test": test.as_ref().map(|t| json!({
                "wrote_inside": t.wrote_inside,
                "refused_outside": t.refused_outside,
                "stderr": t.detail,
            })),
        });
        println!("{report}");
    } else {
        let yes_no = |flag: bool| if flag { "yes" } else { "no" };
        println!("{}", sandbox.status().describe());
        println!("os: {}", capabilities.os);
        println!(
            "landlock: {}",
            capabilities
                .landlock_abi
                .map_or_else(|| "not available".to_owned(), |abi| format!("ABI {abi}"))
        );
        println!(
            "  files confined: {}; TCP confined by Landlock too: {}; signals and abstract \
             sockets scoped: {}",
            yes_no(capabilities.landlock_abi.is_some()),
            yes_no(capabilities.landlock_confines_tcp()),
            yes_no(capabilities.landlock_scopes_signals())
        );
        println!(
            "seccomp: {} (refuses TCP and UDP sockets unless a command is granted network)",
            yes_no(capabilities.seccomp)
        );
        println!(
            "user namespaces: {} (keep .git/ and .lode/ read-only in workspace-write)",
            yes_no(capabilities.user_namespaces)
        );
        println!("profile: {} in {}", profile.mode, root.display());
        for (label, paths) in [("read", &profile.read), ("write", &profile.write)] {
            for path in paths {
                println!("  [sandbox] {label}: {}", path.display());
            }
        }
        for name in &profile.env_passthrough {
            println!("  [sandbox] env_passthrough: {name}");
        }
        for path in &profile.allow_sockets {
            println!("  [sandbox] allow_unix_sockets: {}", path.display());
        }
        println!(
            "unix sockets hidden from commands: {} directories, {} sockets{}",
            hidden.dirs.len(),
            hidden.sockets.len(),
            if hidden.dirs.is_empty() && hidden.sockets.is_empty() {
                " (none outside the workspace here)"
            } else {
                ""
            }
        );
        for dir in &hidden.dirs {
            println!("  hidden (empty tmpfs): {}/", dir.display());
        }
        for socket in &hidden.sockets {
            println!("  hidden: {}", socket.display());
        }
        match &test {
            Some(test) => println!(
                "self-test: write inside the workspace {}, write outside {}{}",
                if test.wrote_inside {
                    "worked"
                } else {
                    "FAILED"
                },
                if test.refused_outside {
                    "refused"
                } else {
                    "NOT REFUSED"
                },
                if test.detail.is_empty() {
                    String::new()
                } else {
                    format!(" ({})", test.detail.lines().last().unwrap_or(""))
                }
            ),
            None => println!("self-test: skipped (commands are not confined here)"),
        }
    }
    for warning in &loaded.warnings {
        say!("lode: warning: {warning}");
    }
    Ok(match sandbox.status() {
        SandboxStatus::Confined(_) if enforced => ExitCode::SUCCESS,
        SandboxStatus::Off => ExitCode::SUCCESS,
        _ => ExitCode::from(crate::EXIT_FAILURE),
    })
}
