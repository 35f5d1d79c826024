//! Linux confinement: namespaces for read-only paths, Landlock for the file system and TCP,
//! seccomp for every other socket and the dangerous system calls.

mod filesystem;
mod mounts;
pub mod probe;
pub mod seccomp;

use crate::SandboxError;
use crate::launcher::Plan;

/// Confines the calling (single-threaded) process as `plan` says. Afterwards every program it
/// executes, and their children, stay confined.
pub fn confine(plan: &Plan) -> Result<(), SandboxError> {
    if !plan.read_only_paths.is_empty() {
        let paths: Vec<&std::path::Path> =
            plan.read_only_paths.iter().map(|p| p.as_path()).collect();
        mounts::protect_read_only(&paths)?;
    }
    // SAFETY: prctl(PR_SET_NO_NEW_PRIVS, 1) only sets a flag on this process; Landlock and
    // seccomp both require it, and it keeps setuid programs from gaining privileges.
    if unsafe { libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) } != 0 {
        return Err(SandboxError::setup(
            "setting no_new_privs",
            std::io::Error::last_os_error(),
        ));
    }
    filesystem::restrict(plan)?;
    seccomp::install(plan.network)
}
