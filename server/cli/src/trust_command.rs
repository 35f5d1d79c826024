//! `lode trust`: shows what the workspace's own `.lode/config.toml` would change, and records
//! (or revokes) the user's trust in exactly that content. The trust store and the rules for what
//! an untrusted file may set live in `lode_agent::trust`; this module only talks to the user.

use std::io::{BufRead, IsTerminal, Write};
use std::path::Path;
use std::process::ExitCode;

use anyhow::Context;
use clap::Args;
use lode_agent::config::WORKSPACE_CONFIG;
use lode_agent::trust::{TrustStatus, TrustStore, config_fingerprint, ignored_until_trusted};

use crate::commands::{WorkspaceArgs, resolve_root};

/// Options of `lode trust`.
#[derive(Debug, Args)]
pub struct TrustArgs {
    /// Print whether the workspace's settings are trusted and what is ignored until they are;
    /// change nothing. Exit 0 when trusted (or there is nothing to trust), 3 when not.
    #[arg(long, conflicts_with_all = ["revoke", "yes"])]
    pub status: bool,
    /// Forget the trust given to this workspace: its settings only tighten again.
    #[arg(long, conflicts_with = "yes")]
    pub revoke: bool,
    /// Trust without asking (for scripts). Without it, lode asks on the terminal.
    #[arg(long, short = 'y')]
    pub yes: bool,
}

/// Runs `lode trust`.
pub fn run_trust(workspace: &WorkspaceArgs, args: TrustArgs) -> anyhow::Result<ExitCode> {
    let root = resolve_root(workspace, None)?;
    let root =
        std::fs::canonicalize(&root).with_context(|| format!("workspace {}", root.display()))?;
    let store = TrustStore::for_user()?;
    let file = root.join(WORKSPACE_CONFIG);
    let status = store.status(&root);
    if args.revoke {
        if store.revoke(&root)? {
            println!(
                "{}: trust revoked; its settings only tighten lode again",
                file.display()
            );
        } else {
            println!("{}: was not trusted", file.display());
        }
        return Ok(ExitCode::SUCCESS);
    }
    let ignored = ignored_until_trusted(workspace.config.as_deref(), &root)?;
    print_summary(&file, status, &ignored);
    if args.status {
        return Ok(if status.is_trusted() {
            ExitCode::SUCCESS
        } else {
            ExitCode::from(3)
        });
    }
    if status.is_trusted() {
        return Ok(ExitCode::SUCCESS);
    }
    if !args.yes && !confirm()? {
        println!("not trusted; nothing changed");
        return Ok(ExitCode::from(3));
    }
    let fingerprint = store.trust(&root)?;
    println!(
        "trusted {} ({}): its settings apply until the file changes",
        file.display(),
        fingerprint
            .get(..16)
            .map_or("no config file".to_owned(), |hash| format!("sha256 {hash}"))
    );
    Ok(ExitCode::SUCCESS)
}

fn print_summary(file: &Path, status: TrustStatus, ignored: &[String]) {
    let root = file.parent().and_then(Path::parent).unwrap_or(file);
    let Some(hash) = config_fingerprint(root) else {
        println!(
            "{} does not exist: this workspace ships no lode settings ({})",
            file.display(),
            if status.is_trusted() {
                "trusted"
            } else {
                "not trusted"
            }
        );
        println!(
            "  trusting it only lets clients of `lode acp --http` start MCP server commands here"
        );
        return;
    };
    println!(
        "{} (sha256 {}): {}",
        file.display(),
        &hash[..16],
        status.describe()
    );
    if ignored.is_empty() {
        println!("  it only sets what tightens lode, so all of it applies trusted or not");
        return;
    }
    println!(
        "  {} these settings:",
        if status.is_trusted() {
            "trusted, so lode applies"
        } else {
            "until you trust it, lode ignores"
        }
    );
    for line in ignored {
        println!("    {line}");
    }
}

/// Asks on the terminal; refuses to guess when nobody is there.
fn confirm() -> anyhow::Result<bool> {
    anyhow::ensure!(
        std::io::stdin().is_terminal(),
        "stdin is not a terminal: read the settings above and run `lode trust --yes` to trust them"
    );
    print!(
        "Trust these settings? Providers receive your API keys and code, MCP servers and language servers run as you. [y/N] "
    );
    std::io::stdout()
        .flush()
        .context("cannot write to stdout")?;
    let mut answer = String::new();
    std::io::stdin()
        .lock()
        .read_line(&mut answer)
        .context("cannot read the answer")?;
    Ok(matches!(answer.trim(), "y" | "Y" | "yes" | "Yes" | "YES"))
}
