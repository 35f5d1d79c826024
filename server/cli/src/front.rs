//! The `lode` binary: a small front end. A query command that a running lode (`lode daemon`,
//! `watch`, `lsp`, `acp`) can answer from memory is sent to it and printed here; everything
//! else runs `lode-full`, installed beside this binary, with the same arguments (`exec`: same
//! process, same pid, same standard streams).
//!
//! Why two binaries: a served query takes a few milliseconds, and most of what `lode-full`
//! spends before and after them is its own size — mapping and relocating a binary that holds
//! tantivy, tree-sitter's grammars, the agent and the protocol servers. This one holds the
//! lease client, the query types and their printing, and starts in well under a millisecond.
//! See `quick` for what it answers itself.

mod quick;
mod render;
mod root;
mod settings_env;

use std::ffi::OsString;
use std::os::unix::process::CommandExt;
use std::process::{Command, ExitCode};

use crate::render::say;

/// The full binary's file name, next to this one.
const FULL_BINARY: &str = "lode-full";

/// Exit code when the full binary cannot be run (as a shell says for a command it cannot run).
const CANNOT_RUN: u8 = 126;

/// Exit code for runtime failures, as `lode-full` uses it.
const EXIT_FAILURE: u8 = 3;

fn main() -> ExitCode {
    let args: Vec<OsString> = std::env::args_os().collect();
    if let Some((answer, json)) = quick::serve(&args) {
        return match render::print_answer(&answer, json) {
            Ok(code) => code,
            Err(error) => {
                say!("lode: {error}");
                ExitCode::from(EXIT_FAILURE)
            }
        };
    }
    run_full(&args)
}

/// Replaces this process with `lode-full ARGS…`; returns only when that fails.
fn run_full(args: &[OsString]) -> ExitCode {
    let full = match std::env::current_exe() {
        Ok(exe) => exe.with_file_name(FULL_BINARY),
        Err(error) => {
            say!("lode: cannot find where lode is installed: {error}");
            return ExitCode::from(CANNOT_RUN);
        }
    };
    // The program name stays what the user typed, so usage messages say `lode`.
    let name = args
        .first()
        .cloned()
        .unwrap_or_else(|| OsString::from("lode"));
    let error = Command::new(&full)
        .arg0(name)
        .args(args.iter().skip(1))
        .exec();
    say!(
        "lode: cannot run {}: {error} (it is installed with lode, beside this binary; \
         `cargo install --path server/cli` or `cargo build -p lode` puts both in place)",
        full.display()
    );
    ExitCode::from(CANNOT_RUN)
}
