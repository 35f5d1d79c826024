//! Kernel feature probes. Each is cheap and has no lasting effect on the calling process.

use super::seccomp::{SECCOMP_GET_ACTION_AVAIL, SECCOMP_RET_ERRNO};

/// `LANDLOCK_CREATE_RULESET_VERSION`: ask for the ABI version instead of creating a ruleset.
const LANDLOCK_CREATE_RULESET_VERSION: libc::c_uint = 1;

pub fn landlock_abi() -> Option<u32> {
    // SAFETY: with a null attribute, size 0 and the VERSION flag the call only returns the ABI
    // version (or an error); it creates no file descriptor and touches no memory.
    let version = unsafe {
        libc::syscall(
            libc::SYS_landlock_create_ruleset,
            std::ptr::null::<libc::c_void>(),
            0usize,
            LANDLOCK_CREATE_RULESET_VERSION,
        )
    };
    u32::try_from(version).ok().filter(|&version| version > 0)
}

pub fn seccomp_filters() -> bool {
    let action: u32 = SECCOMP_RET_ERRNO;
    // SAFETY: SECCOMP_GET_ACTION_AVAIL reads the u32 behind the pointer and installs nothing.
    let answer = unsafe {
        libc::syscall(
            libc::SYS_seccomp,
            SECCOMP_GET_ACTION_AVAIL,
            0,
            &action as *const u32,
        )
    };
    answer == 0
}

/// Whether an unprivileged process may create a user and mount namespace: tried in a forked
/// child, which exits at once.
pub fn user_namespaces() -> bool {
    // SAFETY: fork(2) in a possibly multithreaded process; the child calls only unshare(2) and
    // _exit(2), both async-signal-safe raw system calls, and allocates nothing.
    let pid = unsafe { libc::fork() };
    if pid < 0 {
        return false;
    }
    if pid == 0 {
        // SAFETY: see above; the child ends here either way.
        unsafe {
            let created = libc::unshare(libc::CLONE_NEWUSER | libc::CLONE_NEWNS) == 0;
            libc::_exit(if created { 0 } else { 1 });
        }
    }
    let mut status = 0;
    loop {
        // SAFETY: waits for the child forked above; `status` is a valid out-pointer.
        let waited = unsafe { libc::waitpid(pid, &mut status, 0) };
        if waited == pid {
            break;
        }
        if waited < 0 && std::io::Error::last_os_error().kind() != std::io::ErrorKind::Interrupted {
            return false;
        }
    }
    libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0
}
