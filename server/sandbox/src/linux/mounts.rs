//! A private user and mount namespace in which the whole file system is read-only but for the
//! paths the command may write, and in which `.git/` and `.lode/` are read-only again inside a
//! writable workspace.
//!
//! Landlock decides who may open, create and remove files; it does not cover chmod, chown,
//! utimes or extended attributes. A read-only mount refuses those too, so outside the writable
//! paths a command cannot change a file's mode or owner any more than its content.
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
        (libc::ST_RDONLY, libc::MS_RDONLY),
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

/// `struct mount_attr` of mount_setattr(2).
#[repr(C)]
struct MountAttr {
    attr_set: u64,
    attr_clr: u64,
    propagation: u64,
    userns_fd: u64,
}

const MOUNT_ATTR_RDONLY: u64 = 0x1;
const AT_RECURSIVE: libc::c_uint = 0x8000;

/// Makes every mount of this namespace read-only (mount_setattr, Linux 5.12; Landlock needs
/// 5.13, so wherever the sandbox runs, this exists).
fn everything_read_only() -> Result<(), SandboxError> {
    let root = c_path(Path::new("/"))?;
    let attr = MountAttr {
        attr_set: MOUNT_ATTR_RDONLY,
        attr_clr: 0,
        propagation: 0,
        userns_fd: 0,
    };
    // SAFETY: `root` is NUL-terminated and `attr` a valid mount_attr of the size passed; the
    // kernel only reads both.
    let changed = unsafe {
        libc::syscall(
            libc::SYS_mount_setattr,
            libc::AT_FDCWD,
            root.as_ptr(),
            AT_RECURSIVE,
            &attr as *const MountAttr,
            std::mem::size_of::<MountAttr>(),
        )
    };
    if changed != 0 {
        return Err(SandboxError::setup(
            "making the file system read-only",
            std::io::Error::last_os_error(),
        ));
    }
    Ok(())
}

/// Enters a new user and mount namespace in which only `writable` can be written (and, inside
/// them, not `read_only`). Paths that do not exist are skipped. Must run while the process has
/// a single thread.
pub fn confine_mounts(
    writable: &[&Path],
    read_only: &[&Path],
    hiding: &crate::sockets::SocketHiding,
) -> Result<(), SandboxError> {
    enter_namespace()?;
    // Devices stay writable on a read-only mount, and a second devpts mount over /dev/pts
    // would keep /dev/ptmx from finding its instance: only directories and regular files are
    // mounted again.
    let writable: Vec<&Path> = writable
        .iter()
        .copied()
        .filter(|path| {
            *path != Path::new("/dev/pts")
                && std::fs::metadata(path)
                    .is_ok_and(|meta| meta.is_dir() || meta.file_type().is_file())
        })
        .collect();
    // Each writable path becomes a mount of its own, so it can be made writable again below.
    for path in &writable {
        bind_onto_itself(path)?;
    }
    everything_read_only()?;
    for path in &writable {
        let target = c_path(path)?;
        let keep = locked_flags(&target)? & !libc::MS_RDONLY;
        mount(
            None,
            &target,
            libc::MS_BIND | libc::MS_REMOUNT | keep,
            &format!("making {} writable", path.display()),
        )?;
    }
    protect_read_only(read_only)?;
    hide_sockets(hiding)?;
    // The working directory still points into the mount it was entered on, under the new ones:
    // enter it again by name, so relative paths resolve through the writable mounts.
    let cwd = std::env::current_dir()
        .map_err(|error| SandboxError::setup("reading the working directory", error))?;
    std::env::set_current_dir(&cwd)
        .map_err(|error| SandboxError::setup(format!("re-entering {}", cwd.display()), error))
}

/// A user namespace mapping the caller's own ids, and a mount namespace whose mounts no longer
/// propagate to the parent's.
fn enter_namespace() -> Result<(), SandboxError> {
    // SAFETY: getuid/getgid cannot fail and have no side effects.
    let (uid, gid) = unsafe { (libc::getuid(), libc::getgid()) };
    // SAFETY: unshare(2) with namespace flags only; the launcher is single-threaded here.
    if unsafe { libc::unshare(libc::CLONE_NEWUSER | libc::CLONE_NEWNS) } != 0 {
        return Err(SandboxError::Unavailable(format!(
            "cannot create an unprivileged user and mount namespace ({}); they are needed for \
             a read-only view of the file system outside the writable paths",
            std::io::Error::last_os_error()
        )));
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
    )
}

/// Makes `path` a mount of its own (a recursive bind mount onto itself); returns its C path.
fn bind_onto_itself(path: &Path) -> Result<CString, SandboxError> {
    let target = c_path(path)?;
    mount(
        Some(&target),
        &target,
        libc::MS_BIND | libc::MS_REC,
        &format!("bind-mounting {}", path.display()),
    )?;
    Ok(target)
}

/// Covers the socket directories with an empty tmpfs and each other socket with `/dev/null`
/// (see [`crate::sockets`]). A path gone since the plan was made is skipped; any other failure
/// stops the launch rather than leave a socket reachable.
fn hide_sockets(hiding: &crate::sockets::SocketHiding) -> Result<(), SandboxError> {
    let tmpfs = CString::new("tmpfs").map_err(|_| SandboxError::Usage("tmpfs".into()))?;
    let options =
        CString::new("mode=0500,size=4k").map_err(|_| SandboxError::Usage("tmpfs".into()))?;
    for dir in &hiding.dirs {
        let target = c_path(dir)?;
        // SAFETY: every pointer is a valid NUL-terminated string that outlives the call.
        let mounted = unsafe {
            libc::mount(
                tmpfs.as_ptr(),
                target.as_ptr(),
                tmpfs.as_ptr(),
                libc::MS_NOSUID | libc::MS_NODEV | libc::MS_NOEXEC | libc::MS_RDONLY,
                options.as_ptr().cast(),
            )
        };
        if mounted != 0 {
            let error = std::io::Error::last_os_error();
            if error.kind() != std::io::ErrorKind::NotFound {
                return Err(SandboxError::setup(
                    format!("hiding the sockets in {}", dir.display()),
                    error,
                ));
            }
        }
    }
    let null = c_path(Path::new("/dev/null"))?;
    for socket in &hiding.sockets {
        let target = c_path(socket)?;
        if let Err(error) = mount(
            Some(&null),
            &target,
            libc::MS_BIND,
            &format!("hiding the socket {}", socket.display()),
        ) {
            match &error {
                SandboxError::Setup { source, .. }
                    if source.kind() == std::io::ErrorKind::NotFound => {}
                _ => return Err(error),
            }
        }
    }
    Ok(())
}

/// Bind-mounts each of `paths` read-only over itself.
fn protect_read_only(paths: &[&Path]) -> Result<(), SandboxError> {
    for path in paths {
        let target = bind_onto_itself(path)?;
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
