//! Where a workspace's `lode acp --http` listens, so that `lode ask` run in that workspace (or a
//! folder inside it) finds it without flags.
//!
//! The server writes one record per workspace, `acp-server-<hash of the root>.json`, beside the
//! token file (`$XDG_RUNTIME_DIR/lode/`, else `<config dir>/lode/`): its root, endpoint URL,
//! bearer token and pid, in a file only the user can read (0600) in a directory only the user
//! can enter (0700), and removes it when it exits. The record carries a secret and says where
//! to send it, so a reader trusts it only when it could have come from the user's own server:
//! the directory and the file are the user's, not a symlink, not open to anyone else; the record
//! names this workspace and a loopback URL; its pid is alive and that very process listens on
//! the URL's port. A record whose process is gone (killed before it could remove its record) is
//! stale: it is removed and ignored. Anything else is refused, naming why, and the token is
//! never sent.

use std::io::Write;
use std::net::SocketAddr;
use std::os::unix::fs::{DirBuilderExt, MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

/// The record's format version.
const VERSION: u32 = 1;

/// A record larger than this is not one lode wrote.
const MAX_RECORD_BYTES: u64 = 64 * 1024;

/// What a workspace's running `lode acp --http` says about itself.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ServerRecord {
    pub version: u32,
    /// The workspace's canonical root.
    pub root: PathBuf,
    /// `http://127.0.0.1:PORT/acp`.
    pub url: String,
    pub token: String,
    pub pid: u32,
}

/// Why a record was refused or could not be read or written (an `anyhow` error in this binary).
#[derive(Debug)]
pub enum RuntimeError {
    Refused {
        path: PathBuf,
        reason: String,
    },
    Io {
        action: &'static str,
        path: PathBuf,
        source: std::io::Error,
    },
}

impl std::fmt::Display for RuntimeError {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            RuntimeError::Refused { path, reason } => write!(
                formatter,
                "refusing the server record {}: {reason}",
                path.display()
            ),
            RuntimeError::Io {
                action,
                path,
                source,
            } => write!(formatter, "cannot {action} {}: {source}", path.display()),
        }
    }
}

impl std::error::Error for RuntimeError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            RuntimeError::Io { source, .. } => Some(source),
            RuntimeError::Refused { .. } => None,
        }
    }
}

/// What looking for a workspace's server found.
#[derive(Debug)]
pub enum Lookup {
    /// A server that may be trusted with its token.
    Running { record: ServerRecord, path: PathBuf },
    /// No server; `stale` names a record of one that is gone, which was removed.
    None { stale: Option<PathBuf> },
}

/// The directory of lode's runtime files (the token file's).
pub fn runtime_dir() -> Option<PathBuf> {
    lode_acp::token_file::default_token_path()?
        .parent()
        .map(Path::to_path_buf)
}

/// The record's path for the workspace at `root` (canonical) inside `dir`.
pub fn record_path(dir: &Path, root: &Path) -> PathBuf {
    dir.join(format!("acp-server-{:016x}.json", fnv1a(root)))
}

/// FNV-1a over the root's bytes: a stable name per workspace (not a secret, not a defence).
fn fnv1a(root: &Path) -> u64 {
    use std::os::unix::ffi::OsStrExt;
    root.as_os_str()
        .as_bytes()
        .iter()
        .fold(0xcbf2_9ce4_8422_2325_u64, |hash, byte| {
            (hash ^ u64::from(*byte)).wrapping_mul(0x0100_0000_01b3)
        })
}

fn own_uid() -> u32 {
    // SAFETY: geteuid has no preconditions and cannot fail.
    unsafe { libc::geteuid() }
}

/// The record of the running server; removed when dropped, unless another server's record has
/// replaced it meanwhile.
pub struct RecordGuard {
    path: PathBuf,
}

impl Drop for RecordGuard {
    fn drop(&mut self) {
        let ours = std::fs::read_to_string(&self.path)
            .ok()
            .and_then(|text| serde_json::from_str::<ServerRecord>(&text).ok())
            .is_some_and(|record| record.pid == std::process::id());
        if ours {
            let _ = std::fs::remove_file(&self.path);
        }
    }
}

/// Writes the record of this process's server for `root`, listening on `bound` with `token`.
pub fn write_record(
    dir: &Path,
    root: &Path,
    bound: SocketAddr,
    token: &str,
) -> Result<RecordGuard, RuntimeError> {
    let io = |action, path: &Path| {
        let path = path.to_path_buf();
        move |source| RuntimeError::Io {
            action,
            path,
            source,
        }
    };
    if !dir.exists() {
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(dir)
            .map_err(io("create", dir))?;
    }
    check_private_dir(dir)?;
    let path = record_path(dir, root);
    let record = ServerRecord {
        version: VERSION,
        root: root.to_path_buf(),
        url: format!("http://{bound}/acp"),
        token: token.to_owned(),
        pid: std::process::id(),
    };
    let temporary = dir.join(format!(".acp-server.{}.tmp", std::process::id()));
    let _ = std::fs::remove_file(&temporary);
    let written = (|| {
        let mut file = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(&temporary)?;
        file.write_all(serde_json::to_string_pretty(&record)?.as_bytes())?;
        file.sync_all()?;
        std::fs::rename(&temporary, &path)
    })();
    if let Err(error) = written {
        let _ = std::fs::remove_file(&temporary);
        return Err(io("write", &path)(error));
    }
    Ok(RecordGuard { path })
}

/// The directory must be the user's own, a real directory, and closed to everyone else.
fn check_private_dir(dir: &Path) -> Result<(), RuntimeError> {
    let metadata = std::fs::symlink_metadata(dir).map_err(|source| RuntimeError::Io {
        action: "read",
        path: dir.to_path_buf(),
        source,
    })?;
    let refused = |reason: String| RuntimeError::Refused {
        path: dir.to_path_buf(),
        reason,
    };
    if !metadata.is_dir() {
        return Err(refused("it is not a directory".into()));
    }
    if metadata.uid() != own_uid() {
        return Err(refused(format!(
            "the directory belongs to uid {}, not to you",
            metadata.uid()
        )));
    }
    let mode = metadata.permissions().mode() & 0o777;
    if mode & 0o077 != 0 {
        return Err(refused(format!(
            "the directory is open to other users (mode {mode:04o}); run `chmod 700 {}`",
            dir.display()
        )));
    }
    Ok(())
}

/// The server of the workspace at `root` (canonical), judged as the module says.
pub fn find_server(dir: &Path, root: &Path) -> Result<Lookup, RuntimeError> {
    let path = record_path(dir, root);
    let metadata = match std::fs::symlink_metadata(&path) {
        Ok(metadata) => metadata,
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => {
            return Ok(Lookup::None { stale: None });
        }
        Err(source) => {
            return Err(RuntimeError::Io {
                action: "read",
                path,
                source,
            });
        }
    };
    check_private_dir(dir)?;
    let refused = |reason: String| RuntimeError::Refused {
        path: path.clone(),
        reason,
    };
    if !metadata.is_file() {
        return Err(refused("it is not a regular file".into()));
    }
    if metadata.uid() != own_uid() {
        return Err(refused(format!(
            "it belongs to uid {}, not to you",
            metadata.uid()
        )));
    }
    let mode = metadata.permissions().mode() & 0o777;
    if mode & 0o077 != 0 {
        return Err(refused(format!(
            "other users can read or change it (mode {mode:04o}); delete it"
        )));
    }
    if metadata.len() > MAX_RECORD_BYTES {
        return Err(refused("it is too large to be a record lode wrote".into()));
    }
    let text = std::fs::read_to_string(&path).map_err(|source| RuntimeError::Io {
        action: "read",
        path: path.clone(),
        source,
    })?;
    let record: ServerRecord = serde_json::from_str(&text)
        .map_err(|error| refused(format!("it is not a record lode wrote ({error})")))?;
    if record.version != VERSION {
        return Err(refused(format!("unknown version {}", record.version)));
    }
    if record.root != root {
        return Err(refused(format!(
            "it names the workspace {}, not {}",
            record.root.display(),
            root.display()
        )));
    }
    let port = loopback_port(&record.url)
        .ok_or_else(|| refused(format!("{} is not a loopback http:// URL", record.url)))?;
    if !process_is_alive(record.pid) {
        let _ = std::fs::remove_file(&path);
        return Ok(Lookup::None { stale: Some(path) });
    }
    match listens_on(record.pid, port) {
        Listener::Pid => Ok(Lookup::Running { record, path }),
        // The server is gone and its pid reused, or it stopped listening: stale.
        Listener::Nobody => {
            let _ = std::fs::remove_file(&path);
            Ok(Lookup::None { stale: Some(path) })
        }
        Listener::Other => Err(refused(format!(
            "process {} does not listen on port {port}, which another process holds: the \
             token is not sent there",
            record.pid
        ))),
    }
}

/// The port of an `http://127.0.0.1:PORT/…` or `http://[::1]:PORT/…` URL.
fn loopback_port(url: &str) -> Option<u16> {
    let rest = url.strip_prefix("http://")?;
    let authority = rest.split('/').next()?;
    let address: SocketAddr = authority.parse().ok()?;
    address.ip().is_loopback().then_some(address.port())
}

/// Whether `pid` names a running process (a zombie is not).
fn process_is_alive(pid: u32) -> bool {
    let Ok(raw) = libc::pid_t::try_from(pid) else {
        return false;
    };
    if raw <= 0 {
        return false;
    }
    // SAFETY: signal 0 only checks that the process exists; no signal is sent.
    let exists = unsafe { libc::kill(raw, 0) } == 0
        || std::io::Error::last_os_error().raw_os_error() == Some(libc::EPERM);
    exists
        && std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|stat| {
            !matches!(
                stat.rsplit(')')
                    .next()
                    .map(str::trim_start)
                    .and_then(|rest| rest.chars().next()),
                Some('Z' | 'X')
            )
        })
}

/// Who listens on a TCP port.
#[derive(Debug, PartialEq, Eq)]
enum Listener {
    /// The process named.
    Pid,
    /// Another process (or one whose sockets cannot be read).
    Other,
    /// Nobody.
    Nobody,
}

/// Who listens on `port` (TCP, any address), from `/proc/net/tcp{,6}` and `pid`'s open files.
fn listens_on(pid: u32, port: u16) -> Listener {
    const LISTEN: &str = "0A";
    let mut inodes = Vec::new();
    for table in ["/proc/net/tcp", "/proc/net/tcp6"] {
        let Ok(text) = std::fs::read_to_string(table) else {
            continue;
        };
        for line in text.lines().skip(1) {
            let fields: Vec<&str> = line.split_whitespace().collect();
            let (Some(local), Some(state), Some(inode)) =
                (fields.get(1), fields.get(3), fields.get(9))
            else {
                continue;
            };
            let local_port = local
                .rsplit_once(':')
                .and_then(|(_, hex)| u16::from_str_radix(hex, 16).ok());
            if *state == LISTEN && local_port == Some(port) {
                inodes.push(format!("socket:[{inode}]"));
            }
        }
    }
    if inodes.is_empty() {
        return Listener::Nobody;
    }
    let Ok(fds) = std::fs::read_dir(format!("/proc/{pid}/fd")) else {
        return Listener::Other;
    };
    let owns = fds.flatten().any(|fd| {
        std::fs::read_link(fd.path()).is_ok_and(|target| {
            inodes
                .iter()
                .any(|inode| target.as_os_str() == inode.as_str())
        })
    });
    if owns { Listener::Pid } else { Listener::Other }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn private_dir() -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o700)).unwrap();
        dir
    }

    #[test]
    fn a_record_is_found_while_its_server_listens_and_removed_with_it() {
        let dir = private_dir();
        let root = Path::new("/work/some/project");
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let bound = listener.local_addr().unwrap();
        let guard = write_record(dir.path(), root, bound, "secret").unwrap();
        let path = record_path(dir.path(), root);
        let mode = std::fs::metadata(&path).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
        match find_server(dir.path(), root).unwrap() {
            Lookup::Running { record, .. } => {
                assert_eq!(record.url, format!("http://{bound}/acp"));
                assert_eq!(record.token, "secret");
            }
            other => panic!("{other:?}"),
        }
        // Another workspace has no server.
        assert!(matches!(
            find_server(dir.path(), Path::new("/work/other")).unwrap(),
            Lookup::None { stale: None }
        ));
        drop(guard);
        assert!(!path.exists());
    }

    #[test]
    fn a_record_of_a_server_that_stopped_listening_is_stale_and_removed() {
        let dir = private_dir();
        let root = Path::new("/work/some/project");
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let bound = listener.local_addr().unwrap();
        let guard = write_record(dir.path(), root, bound, "secret").unwrap();
        drop(listener);
        let path = record_path(dir.path(), root);
        assert!(matches!(
            find_server(dir.path(), root).unwrap(),
            Lookup::None { stale: Some(stale) } if stale == path
        ));
        assert!(!path.exists());
        drop(guard);
    }

    #[test]
    fn forged_records_are_refused() {
        let dir = private_dir();
        let root = Path::new("/work/some/project");
        let path = record_path(dir.path(), root);
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let bound = listener.local_addr().unwrap();
        let write = |record: &ServerRecord, mode: u32| {
            let _ = std::fs::remove_file(&path);
            std::fs::write(&path, serde_json::to_string(record).unwrap()).unwrap();
            std::fs::set_permissions(&path, std::fs::Permissions::from_mode(mode)).unwrap();
        };
        let good = ServerRecord {
            version: VERSION,
            root: root.to_path_buf(),
            url: format!("http://{bound}/acp"),
            token: "secret".into(),
            pid: std::process::id(),
        };
        let refused = |why: &str| match find_server(dir.path(), root) {
            Err(RuntimeError::Refused { reason, .. }) => {
                assert!(reason.contains(why), "{reason} (wanted {why})")
            }
            other => panic!("expected a refusal for {why}, got {other:?}"),
        };
        write(&good, 0o644);
        refused("mode 0644");
        write(
            &ServerRecord {
                url: "http://10.0.0.1:80/acp".into(),
                ..good.clone()
            },
            0o600,
        );
        refused("not a loopback");
        write(
            &ServerRecord {
                root: "/elsewhere".into(),
                ..good.clone()
            },
            0o600,
        );
        refused("names the workspace");
        // A live process that does not listen on the port named (pid 1 does not hold this
        // test's listener).
        write(
            &ServerRecord {
                pid: 1,
                ..good.clone()
            },
            0o600,
        );
        refused("does not listen on port");
        // A symlink to a good record.
        write(&good, 0o600);
        let elsewhere = dir.path().join("real.json");
        std::fs::rename(&path, &elsewhere).unwrap();
        std::os::unix::fs::symlink(&elsewhere, &path).unwrap();
        refused("not a regular file");
        std::fs::remove_file(&path).unwrap();
        // A directory others can enter.
        write(&good, 0o600);
        std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
        refused("open to other users");
        std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o700)).unwrap();
        // A record another user owns (only root can make one here).
        if own_uid() == 0 {
            std::os::unix::fs::chown(&path, Some(65534), None).unwrap();
            refused("belongs to uid 65534");
            std::os::unix::fs::chown(&path, Some(0), None).unwrap();
        }
        assert!(matches!(
            find_server(dir.path(), root).unwrap(),
            Lookup::Running { .. }
        ));
    }
}
