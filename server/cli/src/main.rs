//! The `lode-full` binary: parses arguments, opens the workspace and prints results. Users run
//! `lode` (src/front.rs), which answers served queries itself and runs this for the rest.
//!
//! It wires the library crates together and owns presentation (text, JSON Lines, progress bars,
//! exit codes). It holds no indexing or search logic of its own.

mod acp_command;
mod acp_runtime;
mod agent_cli;
mod ask_command;
mod commands;
mod config_command;
mod daemon_command;
mod diagnostics_adapter;
mod doctor;
mod index_command;
mod llm_script_command;
mod logging;
mod lsp_command;
mod mcp_command;
mod mcp_navigation;
mod output;
mod parse_only;
mod qdrant_cli;
mod render;
mod root;
mod sandbox_command;
mod semantic_cli;
mod served;
// Only the tests read it here: they check the front end's list against every option.
#[cfg(test)]
mod settings_env;
mod shell_command;
mod skill_command;
mod startup;
mod trust_command;
mod watch_command;

use std::process::ExitCode;

use clap::Parser;

use crate::commands::Cli;
use crate::render::say;

// Indexing allocates many small strings on several threads at once; mimalloc measurably beats
// the system allocator there (see bench/README.md).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

pub use render::EXIT_NO_RESULTS;
/// Exit code for runtime failures (usage errors exit with 2, from clap).
pub const EXIT_FAILURE: u8 = 3;

/// `lode sandbox-exec PROFILE -- COMMAND…`: returns only when the command could not be confined
/// or started (exit 125; 126 when it cannot be executed, 127 when it is not found, like a shell).
fn sandbox_exec(args: &[std::ffi::OsString]) -> ExitCode {
    let error = lode_sandbox::launcher_main(args);
    say!("lode sandbox: {error}");
    let code = match &error {
        lode_sandbox::SandboxError::Exec { source, .. } => match source.kind() {
            std::io::ErrorKind::NotFound => 127,
            std::io::ErrorKind::PermissionDenied => 126,
            _ => lode_sandbox::LAUNCHER_FAILURE,
        },
        _ => lode_sandbox::LAUNCHER_FAILURE,
    };
    ExitCode::from(code)
}

/// Sends tree-sitter's C allocations (parse stacks, subtrees, query cursors) to mimalloc as
/// well: with glibc's malloc they were ~7% of a parse (see bench/README.md).
fn use_mimalloc_for_tree_sitter() {
    use libmimalloc_sys::{mi_free, mi_malloc, mi_realloc, mi_zalloc};
    use std::ffi::c_void;

    /// C's `calloc` on mimalloc's zeroing allocation (its own `mi_calloc` needs a feature that
    /// pulls in another crate): null when the size overflows, as `calloc` must.
    unsafe extern "C" fn mi_calloc(count: usize, size: usize) -> *mut c_void {
        match count.checked_mul(size) {
            // SAFETY: mi_zalloc takes any size and returns null or a fresh zeroed block.
            Some(bytes) => unsafe { mi_zalloc(bytes) },
            None => std::ptr::null_mut(),
        }
    }
    // SAFETY: called first thing in `main`, before any parser, tree or query exists (they are
    // all created lazily later), so every block tree-sitter frees came from the allocator set
    // here; the four functions are mimalloc's C malloc family, which matches the signatures.
    unsafe {
        tree_sitter::set_allocator(Some(tree_sitter::Allocator {
            malloc: mi_malloc,
            calloc: mi_calloc,
            realloc: mi_realloc,
            free: mi_free,
        }));
    }
}

fn main() -> ExitCode {
    // The sandbox launcher runs first, before anything starts a thread: entering a user
    // namespace needs a single-threaded process, and the command must inherit nothing else.
    let args: Vec<std::ffi::OsString> = std::env::args_os().collect();
    if args
        .get(1)
        .is_some_and(|word| word == lode_sandbox::SANDBOX_EXEC)
    {
        return sandbox_exec(&args[2..]);
    }
    // `LODE_TREE_SITTER_ALLOCATOR=system` keeps glibc's malloc, for comparing the two.
    if std::env::var_os("LODE_TREE_SITTER_ALLOCATOR").is_none_or(|value| value != "system") {
        use_mimalloc_for_tree_sitter();
    }
    let cli = Cli::parse();
    // The one log subscriber, before anything can log (see logging.rs).
    if let Err(error) = logging::init(logging::prefix(&cli.command), &cli.log) {
        return fail(&error);
    }
    match commands::run(cli) {
        Ok(code) => code,
        Err(error) => fail(&error),
    }
}

/// Reports a command's failure on one line (the error and its causes, joined); exit code 3.
fn fail(error: &anyhow::Error) -> ExitCode {
    let message = error
        .chain()
        .map(|cause| cause.to_string())
        .collect::<Vec<_>>()
        .join(": ");
    say!("lode: {message}");
    ExitCode::from(EXIT_FAILURE)
}
