//! Linux confinement: a mount namespace in which only the writable paths are writable (and
//! `.git`, `.lode` are not), Landlock for the file system and TCP, seccomp for every other
//! socket and the dangerous system calls, and no capabilities.

mod filesystem;
mod mounts;
pub mod probe;
pub mod seccomp;

use crate::SandboxError;
use crate::launcher::Plan;

/// Confines the calling (single-threaded) process as `plan` says. Afterwards every program it
/// executes, and their children, stay confined.
pub fn confine(plan: &Plan) -> Result<(), SandboxError> {
    let writable: Vec<&std::path::Path> = plan.write_paths.iter().map(|p| p.as_path()).collect();
    let read_only: Vec<&std::path::Path> =
        plan.read_only_paths.iter().map(|p| p.as_path()).collect();
    mounts::confine_mounts(&writable, &read_only, &plan.hidden)?;
    // SAFETY: prctl(PR_SET_NO_NEW_PRIVS, 1) only sets a flag on this process; Landlock and
    // seccomp both require it, and it keeps setuid programs from gaining privileges.
    if unsafe { libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) } != 0 {
        return Err(SandboxError::setup(
            "setting no_new_privs",
            std::io::Error::last_os_error(),
        ));
    }
    filesystem::restrict(plan)?;
    seccomp::install(plan.network)?;
    drop_capabilities()
}

/// `struct __user_cap_header_struct` and `struct __user_cap_data_struct` (version 3).
#[repr(C)]
struct CapHeader {
    version: u32,
    pid: libc::c_int,
}

#[repr(C)]
#[derive(Clone, Copy, Default)]
struct CapData {
    effective: u32,
    permitted: u32,
    inheritable: u32,
}

const LINUX_CAPABILITY_VERSION_3: u32 = 0x2008_0522;

/// Drops every capability the launcher holds, so that the command holds none either: root
/// without a user namespace (`read-only` mode) would otherwise keep CAP_MKNOD, CAP_CHOWN and
/// the rest, and with them read another process's `/proc/<pid>/environ` (the agent's API keys)
/// in spite of Landlock. no_new_privs is set, so executing the command cannot gain them back.
fn drop_capabilities() -> Result<(), SandboxError> {
    // SAFETY: prctl with integer arguments only; an old kernel without ambient capabilities
    // answers EINVAL and has none to clear.
    unsafe {
        libc::prctl(
            libc::PR_CAP_AMBIENT,
            libc::PR_CAP_AMBIENT_CLEAR_ALL,
            0,
            0,
            0,
        )
    };
    let last_cap = std::fs::read_to_string("/proc/sys/kernel/cap_last_cap")
        .ok()
        .and_then(|text| text.trim().parse::<libc::c_ulong>().ok())
        .unwrap_or(63);
    for cap in 0..=last_cap {
        // SAFETY: as above. Only a launcher holding CAP_SETPCAP (root) can shrink the bounding
        // set; any other has nothing for execve to give back.
        unsafe { libc::prctl(libc::PR_CAPBSET_DROP, cap, 0, 0, 0) };
    }
    let mut header = CapHeader {
        version: LINUX_CAPABILITY_VERSION_3,
        pid: 0,
    };
    let data = [CapData::default(); 2];
    // SAFETY: capset(2) reads the header and two data structs of the version-3 layout, all
    // valid for the call; lowering one's own capabilities needs no privilege.
    let set = unsafe {
        libc::syscall(
            libc::SYS_capset,
            &mut header as *mut CapHeader,
            data.as_ptr(),
        )
    };
    if set != 0 {
        return Err(SandboxError::setup(
            "dropping capabilities",
            std::io::Error::last_os_error(),
        ));
    }
    Ok(())
}
