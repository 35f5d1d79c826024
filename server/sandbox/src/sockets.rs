//! Which pathname Unix sockets a confined command must not reach, and how they are hidden.
//!
//! Landlock below ABI 9 does not govern `connect(2)` to a pathname socket, and walking to a
//! socket's path needs no read right: a command could reach the user's D-Bus session bus and
//! systemd user manager (`systemd-run --user` runs anything, unconfined), the X11 and Wayland
//! sockets (keystrokes into the user's terminal), the ssh-agent (the user's keys), docker and
//! podman (root), an editor's IPC socket. `/proc/net/unix` lists every bound socket's path, so
//! guessing is not even needed.
//!
//! So the launcher hides them in its mount namespace: an empty `tmpfs` over the directories that
//! hold sockets (the runtime dir `/run/user/$UID`, `/tmp/.X11-unix`, `/run/dbus`, …), and
//! `/dev/null` bind-mounted over every other socket path `/proc/net/unix` names or the
//! environment points at (`SSH_AUTH_SOCK`), unless it lies inside a workspace root or the
//! command's private temporary directory, or the user allowed it (`[sandbox]
//! allow_unix_sockets`, which also keeps a directory holding it from being covered). A connect
//! to a hidden path then fails (`ECONNREFUSED`). The variables naming them are not on the
//! environment allowlist ([`crate::env`]).

use std::path::{Path, PathBuf};

/// Directories that hold sockets and little else a command needs, covered whole.
const SOCKET_DIRS: &[&str] = &[
    "/tmp/.X11-unix",
    "/tmp/.ICE-unix",
    "/tmp/.XIM-unix",
    "/tmp/.font-unix",
    "/run/dbus",
    "/var/run/dbus",
];
/// Well-known socket files, hidden even when `/proc/net/unix` does not list them (another
/// network namespace, a daemon not running yet).
const SOCKET_FILES: &[&str] = &[
    "/run/docker.sock",
    "/var/run/docker.sock",
    "/run/podman/podman.sock",
    "/run/containerd/containerd.sock",
    "/run/systemd/private",
    "/run/systemd/io.systemd.Manager",
    "/run/dbus/system_bus_socket",
    "/var/run/dbus/system_bus_socket",
];
/// Variables whose values name sockets (or directories of them).
const SOCKET_VARS: &[&str] = &["SSH_AUTH_SOCK", "GPG_AGENT_INFO"];
/// At most this many sockets are hidden one by one (each is a mount).
const MAX_HIDDEN_SOCKETS: usize = 4096;

/// What the launcher hides.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SocketHiding {
    /// Covered by an empty tmpfs.
    pub dirs: Vec<PathBuf>,
    /// Covered by `/dev/null`.
    pub sockets: Vec<PathBuf>,
}

/// Inputs to [`plan`], gathered from the machine (or given by tests).
pub struct SocketSources<'a> {
    /// The text of `/proc/net/unix`.
    pub proc_net_unix: &'a str,
    /// The caller's `XDG_RUNTIME_DIR` and the default `/run/user/$UID`.
    pub runtime_dirs: Vec<PathBuf>,
    /// Values of [`SOCKET_VARS`] (`GPG_AGENT_INFO` is `path:pid:1`).
    pub socket_vars: Vec<String>,
}

impl SocketSources<'_> {
    /// The variables of [`SOCKET_VARS`] found in `lookup`.
    pub fn socket_vars(lookup: impl Fn(&str) -> Option<String>) -> Vec<String> {
        SOCKET_VARS.iter().filter_map(|name| lookup(name)).collect()
    }
}

/// The paths of named sockets in `/proc/net/unix` (abstract ones, `@…`, are Landlock's).
pub fn listed_sockets(proc_net_unix: &str) -> Vec<PathBuf> {
    proc_net_unix
        .lines()
        .skip(1)
        .filter_map(|line| {
            // Seven fields, then the path (which may hold spaces).
            let mut rest = line.trim_start();
            for _ in 0..7 {
                let end = rest.find(char::is_whitespace)?;
                rest = rest[end..].trim_start();
            }
            rest.starts_with('/').then(|| PathBuf::from(rest))
        })
        .collect()
}

/// What to hide: `kept` are the workspace roots and the private temporary directory (a socket
/// there stays reachable), `allowed` the user's `allow_unix_sockets`.
pub fn plan(sources: &SocketSources<'_>, kept: &[PathBuf], allowed: &[PathBuf]) -> SocketHiding {
    let is_kept = |path: &Path| kept.iter().any(|root| path.starts_with(root));
    let is_allowed = |path: &Path| allowed.iter().any(|allow| path == allow);
    // A directory is covered whole only when nothing under it is allowed.
    let coverable = |dir: &Path| {
        !allowed.iter().any(|allow| allow.starts_with(dir))
            && !kept
                .iter()
                .any(|root| root.starts_with(dir) || dir.starts_with(root))
    };
    let mut dirs: Vec<PathBuf> = Vec::new();
    for dir in sources
        .runtime_dirs
        .iter()
        .cloned()
        .chain(SOCKET_DIRS.iter().map(PathBuf::from))
    {
        if !dir.is_absolute() || dir == Path::new("/") {
            continue;
        }
        let Ok(canonical) = std::fs::canonicalize(&dir) else {
            continue;
        };
        if canonical.is_dir() && coverable(&canonical) && !dirs.contains(&canonical) {
            dirs.push(canonical);
        }
    }
    let candidates = listed_sockets(sources.proc_net_unix)
        .into_iter()
        .chain(SOCKET_FILES.iter().map(PathBuf::from))
        .chain(sources.socket_vars.iter().filter_map(|value| {
            let path = value.split(':').next().unwrap_or(value);
            Path::new(path).is_absolute().then(|| PathBuf::from(path))
        }));
    let mut sockets: Vec<PathBuf> = Vec::new();
    for path in candidates {
        if sockets.len() >= MAX_HIDDEN_SOCKETS {
            break;
        }
        // The path as the mount namespace resolves it; a symlink's target is what is hidden.
        let Ok(canonical) = std::fs::canonicalize(&path) else {
            continue;
        };
        if is_kept(&canonical)
            || is_allowed(&canonical)
            || is_allowed(&path)
            || dirs.iter().any(|dir| canonical.starts_with(dir))
            || sockets.contains(&canonical)
        {
            continue;
        }
        if is_socket(&canonical) {
            sockets.push(canonical);
        }
    }
    SocketHiding { dirs, sockets }
}

fn is_socket(path: &Path) -> bool {
    use std::os::unix::fs::FileTypeExt;
    std::fs::symlink_metadata(path).is_ok_and(|meta| meta.file_type().is_socket())
}

#[cfg(test)]
mod tests {
    use super::*;

    const PROC_NET_UNIX: &str = "\
Num       RefCount Protocol Flags    Type St Inode Path
00000000ac575fbd: 00000002 00000000 00010000 0001 01 224569 /tmp/x/agent.sock
00000000ac78b8df: 00000002 00000000 00010000 0001 01 221999 /tmp/x/with space.sock
000000002e9b32dd: 00000003 00000000 00000000 0001 03 174273
00000000ac78b8e0: 00000002 00000000 00010000 0001 01 221998 @abstract
";

    #[test]
    fn named_sockets_are_read_from_proc_net_unix() {
        assert_eq!(
            listed_sockets(PROC_NET_UNIX),
            vec![
                PathBuf::from("/tmp/x/agent.sock"),
                PathBuf::from("/tmp/x/with space.sock")
            ]
        );
    }

    #[test]
    fn sockets_outside_are_hidden_and_inside_or_allowed_kept() {
        use std::os::unix::net::UnixListener;
        let temp = tempfile::tempdir().unwrap();
        let base = std::fs::canonicalize(temp.path()).unwrap();
        let runtime = base.join("run-user");
        let workspace = base.join("ws");
        let elsewhere = base.join("elsewhere");
        for dir in [&runtime, &workspace, &elsewhere] {
            std::fs::create_dir_all(dir).unwrap();
        }
        let _bus = UnixListener::bind(runtime.join("bus")).unwrap();
        let _inside = UnixListener::bind(workspace.join("inside.sock")).unwrap();
        let _agent = UnixListener::bind(elsewhere.join("agent.sock")).unwrap();
        let _allowed = UnixListener::bind(elsewhere.join("allowed.sock")).unwrap();
        let _env = UnixListener::bind(elsewhere.join("env.sock")).unwrap();
        let listing = format!(
            "header\nx: 2 0 10000 1 1 1 {}\nx: 2 0 10000 1 1 2 {}\nx: 2 0 10000 1 1 3 {}\nx: 2 0 10000 1 1 4 {}\nx: 2 0 10000 1 1 5 /nonexistent/gone.sock\n",
            workspace.join("inside.sock").display(),
            elsewhere.join("agent.sock").display(),
            elsewhere.join("allowed.sock").display(),
            runtime.join("bus").display(),
        );
        let sources = SocketSources {
            proc_net_unix: &listing,
            runtime_dirs: vec![runtime.clone()],
            socket_vars: vec![elsewhere.join("env.sock").display().to_string()],
        };
        let hiding = plan(
            &sources,
            std::slice::from_ref(&workspace),
            &[elsewhere.join("allowed.sock")],
        );
        assert!(hiding.dirs.contains(&runtime), "{:?}", hiding.dirs);
        assert!(
            !hiding
                .dirs
                .iter()
                .any(|dir| dir.starts_with(&base) && *dir != runtime)
        );
        assert!(hiding.sockets.contains(&elsewhere.join("agent.sock")));
        assert!(hiding.sockets.contains(&elsewhere.join("env.sock")));
        assert!(!hiding.sockets.contains(&elsewhere.join("allowed.sock")));
        assert!(!hiding.sockets.contains(&workspace.join("inside.sock")));
        assert!(
            !hiding.sockets.contains(&runtime.join("bus")),
            "covered by its dir"
        );

        // Allowing a socket in the runtime dir keeps the dir open; its other sockets go one by one.
        let hiding = plan(&sources, &[workspace], &[runtime.join("bus")]);
        assert!(!hiding.dirs.contains(&runtime));
        assert!(!hiding.sockets.contains(&runtime.join("bus")));
    }
}
