//! `lode doctor`: checks what lode depends on and explains each finding on one line, `ok`,
//! `warn` or `fail`, with the fix. Read-only: it writes nothing but what opening an existing
//! index catalog writes, starts no daemon, never builds an index.
//!
//! Checks, in order: the configuration and its LLM providers (configured or detected from the
//! environment: credentials present, never shown; each provider reachable with one small
//! request), the index (health, size), the process keeping it (the watch lease), the command
//! sandbox (what the kernel offers), the language servers the workspace's languages use, editor
//! configurations that run lode, and the Qdrant endpoint when the vectors live there.
//!
//! Exit 0 when nothing failed, 1 otherwise. `--json` prints one document.

mod editors;
mod index;
mod language_servers;
mod providers;
mod qdrant;
mod sandbox;

use std::process::ExitCode;

use clap::Args;
use serde::Serialize;

use crate::commands::WorkspaceArgs;

/// Options of `lode doctor`.
#[derive(Debug, Args)]
pub struct DoctorArgs {
    /// Print one JSON document instead of text.
    #[arg(long)]
    pub json: bool,
}

/// How a check came out.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Status {
    Ok,
    Warn,
    Fail,
}

impl Status {
    fn label(self) -> &'static str {
        match self {
            Status::Ok => "ok",
            Status::Warn => "warn",
            Status::Fail => "fail",
        }
    }
}

/// One finding.
#[derive(Debug, Clone, Serialize)]
pub struct Check {
    /// What was checked: `config`, `provider`, `credentials`, `index`, `watcher`, `sandbox`,
    /// `language-server`, `editor`, `qdrant`.
    pub area: &'static str,
    pub status: Status,
    /// What was found, one line. Never a credential.
    pub message: String,
    /// What to do about it (absent when nothing needs doing).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fix: Option<String>,
}

impl Check {
    pub fn ok(area: &'static str, message: impl Into<String>) -> Check {
        Check {
            area,
            status: Status::Ok,
            message: message.into(),
            fix: None,
        }
    }

    pub fn warn(area: &'static str, message: impl Into<String>, fix: impl Into<String>) -> Check {
        Check {
            area,
            status: Status::Warn,
            message: message.into(),
            fix: Some(fix.into()),
        }
    }

    pub fn fail(area: &'static str, message: impl Into<String>, fix: impl Into<String>) -> Check {
        Check {
            area,
            status: Status::Fail,
            message: message.into(),
            fix: Some(fix.into()),
        }
    }
}

/// The whole report.
#[derive(Debug, Serialize)]
struct Report {
    root: String,
    checks: Vec<Check>,
    ok: usize,
    warn: usize,
    fail: usize,
}

pub fn run(args: &WorkspaceArgs, doctor: DoctorArgs) -> anyhow::Result<ExitCode> {
    let root = crate::commands::canonical_root(args)?;
    let index_dir = crate::served::index_dir_of(args, &root);
    let mut checks = Vec::new();
    let loaded = providers::check(args, &root, &mut checks);
    checks.extend(index::check_index(&index_dir));
    checks.push(index::check_watcher(&index_dir));
    checks.extend(sandbox::check(loaded.as_ref().map(|loaded| &loaded.config)));
    let defaults = lode_agent::config::Config::default();
    let config = loaded.as_ref().map_or(&defaults, |loaded| &loaded.config);
    let sandbox = lode_agent::sandbox_for(crate::sandbox_command::launcher(), config);
    checks.extend(language_servers::check(
        &root,
        loaded.as_ref().map(|loaded| &loaded.config.lsp.diagnostics),
        &sandbox,
    ));
    checks.extend(editors::check(&root));
    checks.extend(qdrant::check(args, &root));
    let count = |status| checks.iter().filter(|c| c.status == status).count();
    let report = Report {
        root: root.display().to_string(),
        ok: count(Status::Ok),
        warn: count(Status::Warn),
        fail: count(Status::Fail),
        checks,
    };
    if doctor.json {
        println!("{}", serde_json::to_string_pretty(&report)?);
    } else {
        print!("{}", render(&report));
    }
    Ok(if report.fail == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}

fn render(report: &Report) -> String {
    let mut out = format!("lode doctor: {}\n", report.root);
    for check in &report.checks {
        out.push_str(&format!(
            "{:<5} {:<15} {}\n",
            check.status.label(),
            check.area,
            check.message
        ));
        if let Some(fix) = &check.fix {
            out.push_str(&format!("{:<21} fix: {fix}\n", ""));
        }
    }
    out.push_str(&format!(
        "{} ok, {} warn, {} fail\n",
        report.ok, report.warn, report.fail
    ));
    out
}
