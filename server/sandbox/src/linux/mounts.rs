//! A private user and mount namespace in which chosen paths are bind-mounted read-only over
//! themselves: the rest of a writable workspace stays writable, `.git/` and `.lode/` do not.
//!
//! The user namespace maps the caller's own uid and gid, so files keep their owners. Once the
//! command is executed it holds no capability, and Landlock forbids it to change mounts, so the
//! read-only mounts cannot be undone; a mount point cannot be renamed or removed either.

use std::ffi::CString;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

use crate::SandboxError;

fn c_path(path: &Path) -> Result<CString, SandboxError> {
    CString::new(path.as_os_str().as_bytes())
        .map_err(|_| SandboxError::Usage(format!("path {} contains a NUL byte", path.display())))
}

fn write_proc(file: &str, text: &str) -> Result<(), SandboxError> {
    std::fs::write(file, text)
        .map_err(|error| SandboxError::setup(format!("writing {file}"), error))
}

fn mount(
    source: Option<&CString>,
    target: &CString,
    flags: libc::c_ulong,
    what: &str,
) -> Result<(), SandboxError> {
    // SAFETY: every pointer is null or a valid NUL-terminated string that outlives the call;
    // no file system type or data is passed.
    let mounted = unsafe {
        libc::mount(
            source.map_or(std::ptr::null(), |source| source.as_ptr()),
            target.as_ptr(),
            std::ptr::null(),
            flags,
            std::ptr::null(),
        )
    };
    if mounted != 0 {
        return Err(SandboxError::setup(
            what.to_owned(),
            std::io::Error::last_os_error(),
        ));
    }
    Ok(())
}

/// Mount flags that a remount inside a user namespace must keep (the kernel locks them).
fn locked_flags(path: &CString) -> Result<libc::c_ulong, SandboxError> {
    // SAFETY: an all-zero statvfs is a valid value for the kernel to overwrite.
    let mut stats: libc::statvfs = unsafe { std::mem::zeroed() };
    // SAFETY: `path` is NUL-terminated and `stats` a valid out-pointer.
    if unsafe { libc::statvfs(path.as_ptr(), &mut stats) } != 0 {
        return Err(SandboxError::setup(
            "reading mount flags",
            std::io::Error::last_os_error(),
        ));
    }
    let pairs = [
        (libc::ST_NOSUID, libc::MS_NOSUID),
        (libc::ST_NODEV, libc::MS_NODEV),
        (libc::ST_NOEXEC, libc::MS_NOEXEC),
        (libc::ST_NOATIME, libc::MS_NOATIME),
        (libc::ST_NODIRATIME, libc::MS_NODIRATIME),
        (libc::ST_RELATIME, libc::MS_RELATIME),
    ];
    Ok(pairs
        .iter()
        .filter(|(statvfs_flag, _)| stats.f_flag & statvfs_flag != 0)
        .fold(0, |flags, (_, mount_flag)| flags | mount_flag))
}

/// Enters a new user and mount namespace and makes each of `paths` read-only. Must run while
/// the process has a single thread.
pub fn protect_read_only(paths: &[&Path]) -> Result<(), SandboxError> {
    // SAFETY: getuid/getgid cannot fail and have no side effects.
    let (uid, gid) = unsafe { (libc::getuid(), libc::getgid()) };
    // SAFETY: unshare(2) with namespace flags only; the launcher is single-threaded here.
    if unsafe { libc::unshare(libc::CLONE_NEWUSER | libc::CLONE_NEWNS) } != 0 {
        return Err(SandboxError::setup(
            "creating a user and mount namespace",
            std::io::Error::last_os_error(),
        ));
    }
    write_proc("/proc/self/setgroups", "deny")?;
    write_proc("/proc/self/uid_map", &format!("{uid} {uid} 1"))?;
    write_proc("/proc/self/gid_map", &format!("{gid} {gid} 1"))?;
    let root = c_path(Path::new("/"))?;
    mount(
        None,
        &root,
        libc::MS_REC | libc::MS_PRIVATE,
        "making mounts private",
    )?;
    for path in paths {
        let target = c_path(path)?;
        mount(
            Some(&target),
            &target,
            libc::MS_BIND | libc::MS_REC,
            &format!("bind-mounting {}", path.display()),
        )?;
        let keep = locked_flags(&target)?;
        mount(
            None,
            &target,
            libc::MS_BIND | libc::MS_REMOUNT | libc::MS_RDONLY | keep,
            &format!("making {} read-only", path.display()),
        )?;
    }
    Ok(())
}
