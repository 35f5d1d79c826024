//! `lode-sandbox`: confines the commands lode runs on a model's say-so.
//!
//! It owns the sandbox profile (what a command may read, write and reach), the check of what the
//! kernel can enforce ([`Capabilities`]), the scrubbed environment ([`env`]), and the launcher:
//! `lode sandbox-exec [PROFILE] -- PROGRAM ARGS…` enters the confinement and then executes the
//! program, so every caller — a command the agent spawns itself, one it runs in an editor's
//! terminal, a diagnostics checker — gets the same confinement by wrapping its argv
//! ([`Sandbox::wrap`]).
//!
//! On Linux the launcher uses Landlock for the file system (and TCP where the kernel's Landlock
//! has it), a seccomp filter for every other socket family but Unix sockets, and a private user
//! and mount namespace to keep `.git/` and `.lode/` read-only inside a writable workspace and to
//! hide the pathname Unix sockets outside it ([`sockets`]). The environment is an allowlist
//! ([`env`]); the secret-name rule it shares with redaction is `lode_secrets`'.
//!
//! It knows nothing about agents, LLMs, permission policy or protocols: the policy asks it what
//! can be enforced, and tools ask it for a wrapped command line.

pub mod capabilities;
pub mod env;
pub mod exempt;
mod launcher;
#[cfg(target_os = "linux")]
mod linux;
pub mod profile;
pub mod sockets;
mod wrap;

pub use capabilities::Capabilities;
pub use launcher::{LAUNCHER_FAILURE, SANDBOX_EXEC, hidden_for, launcher_main};
pub use profile::{Profile, SandboxMode, SandboxSettings};
pub use wrap::{Sandbox, SandboxStatus, WrappedCommand};

use std::path::PathBuf;

/// Why a profile could not be read or the confinement could not be entered.
#[derive(Debug, thiserror::Error)]
pub enum SandboxError {
    #[error("invalid sandbox arguments: {0}")]
    Usage(String),
    #[error("the sandbox is not available on this machine: {0}")]
    Unavailable(String),
    #[error("cannot set up the sandbox: {what}: {source}")]
    Setup {
        what: String,
        source: std::io::Error,
    },
    #[error(
        "refusing to run: {path} is a symbolic link; lode protects it read-only and will not follow it"
    )]
    SymlinkedProtectedPath { path: PathBuf },
    #[error("Landlock could not confine the file system: {0}")]
    Landlock(String),
    #[error("cannot run {program}: {source}{}", exec_hint(source))]
    Exec {
        program: String,
        source: std::io::Error,
    },
}

/// What to do about a program the sandbox may not run: it lives outside the workspace and the
/// folders commands can read.
fn exec_hint(source: &std::io::Error) -> &'static str {
    if source.kind() == std::io::ErrorKind::PermissionDenied {
        " (commands read only the workspace, system folders and toolchains; if the program \
         lives elsewhere, add its folder to `[sandbox] read` in your own config)"
    } else {
        ""
    }
}

impl SandboxError {
    pub(crate) fn setup(what: impl Into<String>, source: std::io::Error) -> SandboxError {
        SandboxError::Setup {
            what: what.into(),
            source,
        }
    }
}
