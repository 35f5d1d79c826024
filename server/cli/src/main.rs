//! The `lode` binary: parses arguments, opens the workspace and prints results.
//!
//! It wires the library crates together and owns presentation (text, JSON Lines, progress bars,
//! exit codes). It holds no indexing or search logic of its own.

mod acp_command;
mod agent_cli;
mod ask_command;
mod commands;
mod config_command;
mod diagnostics_adapter;
mod llm_script_command;
mod lsp_command;
mod mcp_command;
mod output;
mod parse_only;
mod qdrant_cli;
mod root;
mod semantic_cli;
mod skill_command;
mod watch_command;

use std::process::ExitCode;

use clap::Parser;

use crate::commands::Cli;

// Indexing allocates many small strings on several threads at once; mimalloc measurably beats
// the system allocator there (see bench/README.md).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// Exit code when a query found nothing (like grep).
pub const EXIT_NO_RESULTS: u8 = 1;
/// Exit code for runtime failures (usage errors exit with 2, from clap).
pub const EXIT_FAILURE: u8 = 3;

fn main() -> ExitCode {
    let cli = Cli::parse();
    match commands::run(cli) {
        Ok(code) => code,
        Err(error) => {
            // One line: the error and its causes, joined.
            let message = error
                .chain()
                .map(|cause| cause.to_string())
                .collect::<Vec<_>>()
                .join(": ");
            eprintln!("lode: {message}");
            ExitCode::from(EXIT_FAILURE)
        }
    }
}
