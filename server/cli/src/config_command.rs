//! `lode config`: prints the effective configuration (all files layered, defaults filled in,
//! secrets redacted) as TOML, preceded by comments naming every place a file was looked for.
//! The loading, layering and redaction live in `lode_agent::config`; this module only prints.

use std::process::ExitCode;

use clap::Args;
use lode_agent::config::Config;

use crate::commands::{WorkspaceArgs, resolve_root};
use crate::render::say;

/// Options of `lode config`.
#[derive(Debug, Args)]
pub struct ConfigArgs {
    /// Print only the config files that were read, one per line, highest precedence first.
    #[arg(long)]
    pub files: bool,
    /// Exit with status 3 when no LLM provider is configured or detected from the environment
    /// (for scripts and CI).
    #[arg(long)]
    pub check: bool,
}

/// Runs `lode config`. Errors (unreadable file, bad TOML, invalid value) name the file, line and
/// key; a missing provider is reported on stderr, and fails only with `--check`.
pub fn run_config(workspace: &WorkspaceArgs, args: ConfigArgs) -> anyhow::Result<ExitCode> {
    let root = resolve_root(workspace, None)?;
    let mut loaded = Config::load(workspace.config.as_deref(), &root)?;
    if !args.files {
        // Zero-config models: the effective configuration includes a detected provider.
        loaded.detect_provider(&|name| std::env::var(name).ok());
    }
    if args.files {
        for file in &loaded.files {
            println!("{}", file.display());
        }
    } else {
        if let Some(detected) = &loaded.detected {
            println!(
                "# provider \"{}\" below is in no file: detected from the environment ({})",
                detected.provider.name, detected.reason
            );
            say!("lode: {}", detected.notice());
        }
        print!("{}", loaded.describe());
        // Loud when commands would run unconfined (see `lode sandbox-check`).
        let sandbox = lode_agent::sandbox_for(crate::sandbox_command::launcher(), &loaded.config);
        println!("# {}", sandbox.status().describe());
    }
    for warning in &loaded.warnings {
        say!("lode: warning: {warning}");
    }
    if let Err(error) = loaded.provider(None) {
        if args.check {
            return Err(error.into());
        }
        say!("lode: note: {error}");
    }
    Ok(ExitCode::SUCCESS)
}
