//! The watcher lease: how a query process learns that a live process keeps the index current,
//! and sends it its queries (or asks it to apply what it has seen before answering itself).
//!
//! The holder (`lode daemon`, `lode watch`, `lode lsp`, `lode acp`) holds an exclusive `flock`
//! on `<index dir>/watch.lock` for its lifetime (the operating system releases it however the
//! process ends) and writes into that file the protocol version, its pid, what kind of holder
//! it is, its lode version, the Unix socket it answers on and the settings it indexes with.
//! The socket is `<index dir>/watch.sock`, or, when that path is too long for a socket
//! address (about 100 bytes), one in a private `lode-watch-*` directory under the temporary
//! directory.
//!
//! A query process reads the file, checks it (version, settings, a socket where lode puts
//! sockets, owned by this user, answered by a process of this user), connects and exchanges one
//! frame each way ([`super::protocol`]). Anything odd — no file, a socket nobody listens on (a
//! killed holder), another protocol version or other settings, no answer in time — is a
//! [`NotWatched`] reason, and the caller does the work itself.

use std::fs::{File, OpenOptions, TryLockError};
use std::io::{Read, Seek, Write};
use std::os::unix::fs::{FileTypeExt, MetadataExt};
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use super::protocol::{
    self, FrameError, HolderStatus, IndexPhase, MAX_ANSWER_BYTES, PROTOCOL, Request, RequestKind,
    Response,
};
use crate::query::{Answer, Query};
use crate::workspace::RefreshStats;

/// The lease file inside the index directory.
pub const LEASE_FILE: &str = "watch.lock";

/// The socket inside the index directory, when its path fits.
pub const SOCKET_FILE: &str = "watch.sock";

/// Prefix of the private directory holding the socket when the index path is too long.
const PRIVATE_DIR_PREFIX: &str = "lode-watch-";

/// Longest socket path used in place (`sun_path` holds 108 bytes on Linux, 104 on macOS).
const MAX_SOCKET_PATH: usize = 100;

/// How long a query waits for the holder's flush by default: long enough for a holder busy
/// with a burst (a checkout) to finish, since the alternative, a check of its own, would find
/// the index locked by that very holder.
pub const DEFAULT_FLUSH_TIMEOUT: Duration = Duration::from_secs(10);

/// How long a query process waits for a served answer (a flush, then the query itself).
pub const DEFAULT_QUERY_TIMEOUT: Duration = Duration::from_secs(30);

/// Why a query could not rely on a lease holder.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NotWatched {
    #[error("no watcher holds the lease")]
    NoWatcher,
    #[error("the watcher's socket does not answer (a stopped watcher): {0}")]
    Gone(String),
    #[error("the watcher speaks protocol {found}, this lode speaks {PROTOCOL}")]
    Version { found: String },
    #[error(
        "the watcher indexes with other settings (exclusions, size cap, embedder, vector store or lode version)"
    )]
    Settings,
    #[error("the watcher did not answer within {0:?}")]
    Timeout(Duration),
    #[error("the watcher could not bring the index up to date: {0}")]
    Failed(String),
    #[error("the watcher refused: {0}")]
    Refused(String),
    #[error("the lease names a socket lode does not trust ({0})")]
    Untrusted(String),
    #[error("unreadable lease {path}: {message}")]
    Unreadable { path: PathBuf, message: String },
}

/// Errors of holding a lease.
#[derive(Debug, thiserror::Error)]
pub enum LeaseError {
    #[error(
        "the index {index_dir} is already watched by process {pid} (lode daemon, lode watch, lode lsp or lode acp); stop it or let it keep the index current"
    )]
    AlreadyWatched { index_dir: PathBuf, pid: String },
    #[error("cannot hold the watch lease {path}: {source}")]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
}

/// A holder's answer to a flush.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Flushed {
    pub watcher_pid: u32,
    /// Paths the holder applied to answer this flush (0: it was already current).
    pub applied: usize,
    /// From connecting to the answer.
    pub elapsed: Duration,
}

/// A query answered by the holder.
#[derive(Debug, Clone, PartialEq)]
pub struct Served {
    pub answer: Answer,
    pub holder_pid: u32,
    /// What kind of process answered (`daemon`, `watch`, `lsp`, `acp`).
    pub holder: String,
    /// Paths the holder's flush applied first (`None` when no flush was asked for).
    pub applied: Option<usize>,
    /// How long the holder took to flush and to run the query.
    pub flush: Duration,
    pub query: Duration,
    /// From reading the lease to the decoded answer.
    pub elapsed: Duration,
}

/// What the lease file says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LeaseInfo {
    pub version: String,
    pub pid: String,
    /// `daemon`, `watch`, `lsp` or `acp`.
    pub holder: String,
    /// The holder's lode version.
    pub lode: String,
    pub socket: PathBuf,
    pub settings: String,
}

impl LeaseInfo {
    fn render(&self) -> String {
        format!(
            "lode-watch {}\npid {}\nholder {}\nlode {}\nsocket {}\nsettings {}\n",
            self.version,
            self.pid,
            self.holder,
            self.lode,
            self.socket.display(),
            self.settings
        )
    }

    /// The version is read on its own first, so that a lease of another protocol is reported
    /// as such rather than as unreadable.
    fn version_of(text: &str) -> Option<&str> {
        text.lines()
            .find_map(|line| line.strip_prefix("lode-watch "))
            .map(str::trim)
    }

    fn parse(text: &str) -> Option<LeaseInfo> {
        let mut fields = std::collections::HashMap::new();
        for line in text.lines() {
            let (key, value) = line.split_once(' ')?;
            fields.insert(key, value);
        }
        let mut take = |key: &str| fields.remove(key).map(str::to_owned);
        Some(LeaseInfo {
            version: take("lode-watch")?,
            pid: take("pid")?,
            holder: take("holder")?,
            lode: take("lode")?,
            socket: PathBuf::from(take("socket")?),
            settings: take("settings")?,
        })
    }
}

/// A held lease: the locked file and the bound socket. Dropping it unbinds and clears both.
pub struct Lease {
    file: File,
    socket: PathBuf,
    /// The private directory holding the socket when the index path was too long.
    private_dir: Option<tempfile::TempDir>,
    pub(crate) listener: UnixListener,
}

impl Lease {
    /// Takes the lease of `index_dir` for a `holder` (daemon, watch, lsp, acp) indexing with
    /// `settings`, or reports who holds it.
    pub fn acquire(index_dir: &Path, settings: &str, holder: &str) -> Result<Lease, LeaseError> {
        let path = index_dir.join(LEASE_FILE);
        let io = |source| LeaseError::Io {
            path: path.clone(),
            source,
        };
        let mut file = OpenOptions::new()
            .create(true)
            .truncate(false)
            .read(true)
            .write(true)
            .open(&path)
            .map_err(io)?;
        match file.try_lock() {
            Ok(()) => {}
            Err(TryLockError::WouldBlock) => {
                let mut text = String::new();
                let _ = file.read_to_string(&mut text);
                let pid = LeaseInfo::parse(&text)
                    .map(|info| info.pid)
                    .unwrap_or_else(|| "(unknown)".to_owned());
                return Err(LeaseError::AlreadyWatched {
                    index_dir: index_dir.to_path_buf(),
                    pid,
                });
            }
            Err(TryLockError::Error(source)) => return Err(io(source)),
        }
        let (socket, private_dir) = socket_place(index_dir).map_err(io)?;
        // We hold the lease: a socket file left here is a dead holder's.
        let _ = std::fs::remove_file(&socket);
        let listener = UnixListener::bind(&socket).map_err(|source| LeaseError::Io {
            path: socket.clone(),
            source,
        })?;
        // Connecting takes write permission on the socket file: this user's alone. (The holder
        // also refuses a peer of another user, in case the file was reachable meanwhile.)
        {
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(&socket, std::fs::Permissions::from_mode(0o600)).map_err(
                |source| LeaseError::Io {
                    path: socket.clone(),
                    source,
                },
            )?;
        }
        let info = LeaseInfo {
            version: PROTOCOL.to_string(),
            pid: std::process::id().to_string(),
            holder: holder.to_owned(),
            lode: env!("CARGO_PKG_VERSION").to_owned(),
            socket: socket.clone(),
            settings: settings.to_owned(),
        };
        file.set_len(0).map_err(io)?;
        file.rewind().map_err(io)?;
        file.write_all(info.render().as_bytes()).map_err(io)?;
        Ok(Lease {
            file,
            socket,
            private_dir,
            listener,
        })
    }

    /// Where queries connect.
    pub fn socket(&self) -> &Path {
        &self.socket
    }
}

impl Drop for Lease {
    fn drop(&mut self) {
        // Cleared while still locked, so a query never reads a half-removed lease as live.
        let _ = std::fs::remove_file(&self.socket);
        let _ = self.file.set_len(0);
        if let Some(dir) = self.private_dir.take() {
            let _ = dir.close();
        }
    }
}

/// `<index dir>/watch.sock` when short enough, else a fresh private directory.
fn socket_place(index_dir: &Path) -> std::io::Result<(PathBuf, Option<tempfile::TempDir>)> {
    let in_place = index_dir.join(SOCKET_FILE);
    if in_place.as_os_str().len() <= MAX_SOCKET_PATH {
        return Ok((in_place, None));
    }
    let dir = tempfile::Builder::new()
        .prefix(PRIVATE_DIR_PREFIX)
        .tempdir_in(private_base())?;
    Ok((dir.path().join(SOCKET_FILE), Some(dir)))
}

/// Where private socket directories go: `$XDG_RUNTIME_DIR` when short, else `/tmp`.
fn private_base() -> PathBuf {
    std::env::var_os("XDG_RUNTIME_DIR")
        .map(PathBuf::from)
        .filter(|dir| dir.is_dir() && dir.as_os_str().len() < 60)
        .unwrap_or_else(|| PathBuf::from("/tmp"))
}

/// Reads and parses the lease of `index_dir`.
pub fn read_lease(index_dir: &Path) -> Result<LeaseInfo, NotWatched> {
    let path = index_dir.join(LEASE_FILE);
    let text = match std::fs::read_to_string(&path) {
        Ok(text) => text,
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => {
            return Err(NotWatched::NoWatcher);
        }
        Err(error) => {
            return Err(NotWatched::Unreadable {
                path,
                message: error.to_string(),
            });
        }
    };
    if text.trim().is_empty() {
        return Err(NotWatched::NoWatcher);
    }
    if let Some(version) = LeaseInfo::version_of(&text)
        && version != PROTOCOL.to_string()
    {
        return Err(NotWatched::Version {
            found: version.to_owned(),
        });
    }
    LeaseInfo::parse(&text).ok_or_else(|| NotWatched::Unreadable {
        path,
        message: "not a lode watch lease".to_owned(),
    })
}

/// The lease file may have been written by anyone who could write the workspace (a cloned
/// repository can ship one): its socket must be where a lease holder puts sockets, be a socket,
/// and belong to this user.
fn check_socket(index_dir: &Path, socket: &Path) -> Result<(), NotWatched> {
    let untrusted = |why: &str| NotWatched::Untrusted(format!("{}: {why}", socket.display()));
    let in_place = socket == index_dir.join(SOCKET_FILE);
    let private = socket.file_name() == Some(std::ffi::OsStr::new(SOCKET_FILE))
        && socket.parent().is_some_and(|dir| {
            dir.parent() == Some(private_base().as_path())
                && dir
                    .file_name()
                    .and_then(|name| name.to_str())
                    .is_some_and(|name| name.starts_with(PRIVATE_DIR_PREFIX))
        });
    if !in_place && !private {
        return Err(untrusted("not the index's socket"));
    }
    let metadata = match std::fs::symlink_metadata(socket) {
        Ok(metadata) => metadata,
        Err(error) => return Err(NotWatched::Gone(error.to_string())),
    };
    if !metadata.file_type().is_socket() {
        return Err(untrusted("not a socket"));
    }
    if metadata.uid() != current_uid() {
        return Err(untrusted("owned by another user"));
    }
    Ok(())
}

fn current_uid() -> u32 {
    // SAFETY: geteuid has no preconditions and cannot fail.
    unsafe { libc::geteuid() }
}

/// The user id of the process at the other end of `stream`.
fn peer_uid(stream: &UnixStream) -> std::io::Result<u32> {
    use std::os::fd::AsRawFd;
    let mut credentials = libc::ucred {
        pid: 0,
        uid: 0,
        gid: 0,
    };
    let mut length = std::mem::size_of::<libc::ucred>() as libc::socklen_t;
    // SAFETY: the descriptor is a connected Unix socket owned by `stream` for this call, and
    // `credentials`/`length` describe a writable ucred of the size passed.
    let status = unsafe {
        libc::getsockopt(
            stream.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_PEERCRED,
            (&mut credentials as *mut libc::ucred).cast(),
            &mut length,
        )
    };
    if status != 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(credentials.uid)
}

/// Whether the process at the other end of `stream` runs as this user (the holder's check of
/// a connecting client).
pub(crate) fn peer_is_this_user(stream: &UnixStream) -> bool {
    peer_uid(stream).is_ok_and(|uid| uid == current_uid())
}

/// Reads and checks the lease of `index_dir` and connects to its holder, with read and write
/// timeouts of `timeout` less the time spent. `settings` must match the lease's unless
/// `any_settings`.
fn connect(
    index_dir: &Path,
    settings: &str,
    any_settings: bool,
    timeout: Duration,
) -> Result<(LeaseInfo, UnixStream), NotWatched> {
    let started = Instant::now();
    let info = read_lease(index_dir)?;
    if !any_settings && info.settings != settings {
        return Err(NotWatched::Settings);
    }
    check_socket(index_dir, &info.socket)?;
    let stream =
        UnixStream::connect(&info.socket).map_err(|error| NotWatched::Gone(error.to_string()))?;
    match peer_uid(&stream) {
        Ok(uid) if uid == current_uid() => {}
        Ok(_) => {
            return Err(NotWatched::Untrusted(
                "the process on the socket belongs to another user".to_owned(),
            ));
        }
        Err(error) => return Err(NotWatched::Gone(error.to_string())),
    }
    let remaining = timeout
        .saturating_sub(started.elapsed())
        .max(Duration::from_millis(1));
    stream
        .set_read_timeout(Some(remaining))
        .map_err(|e| frame_failure(e.into(), timeout))?;
    stream
        .set_write_timeout(Some(remaining))
        .map_err(|e| frame_failure(e.into(), timeout))?;
    Ok((info, stream))
}

/// Why an exchange with the holder failed, when it failed reading or writing a frame.
fn frame_failure(error: FrameError, timeout: Duration) -> NotWatched {
    match error {
        FrameError::Io(error)
            if matches!(
                error.kind(),
                std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
            ) =>
        {
            NotWatched::Timeout(timeout)
        }
        // The holder closed the connection without answering (it is stopping, or died).
        FrameError::Io(error) => NotWatched::Gone(error.to_string()),
        FrameError::Version { found } => NotWatched::Version {
            found: found.to_string(),
        },
        other => NotWatched::Failed(other.to_string()),
    }
}

/// Sends one request to the holder of `index_dir`'s lease and reads its response, all within
/// `timeout`. `settings` must match the lease's unless `any_settings` (status, stop).
pub fn request(
    index_dir: &Path,
    settings: &str,
    kind: RequestKind,
    any_settings: bool,
    timeout: Duration,
) -> Result<(LeaseInfo, Response), NotWatched> {
    let (info, mut stream) = connect(index_dir, settings, any_settings, timeout)?;
    let failed = |error| frame_failure(error, timeout);
    let request = Request {
        settings: settings.to_owned(),
        kind,
    };
    protocol::write_frame(&mut stream, &request).map_err(failed)?;
    let response: Response = protocol::read_frame(&mut stream, MAX_ANSWER_BYTES).map_err(failed)?;
    match response {
        Response::Refused { reason } => Err(NotWatched::Refused(reason)),
        Response::Failed { message } => Err(NotWatched::Failed(message)),
        response => Ok((info, response)),
    }
}

/// The index brought up to date by the lease holder, for `lode index`.
#[derive(Debug, Clone, PartialEq)]
pub struct Indexed {
    pub holder_pid: u32,
    /// What kind of process did it (`daemon`, `watch`, `lsp`, `acp`).
    pub holder: String,
    pub stats: RefreshStats,
    /// Segments of the lexical index afterwards, when the holder keeps a query handle.
    pub lexical_segments: Option<usize>,
}

/// Why the lease holder did not index, with the lease when one was read (whose pid and kind
/// tell the user who did not answer).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{reason}")]
pub struct NotIndexed {
    pub lease: Option<Box<LeaseInfo>>,
    pub reason: NotWatched,
}

/// What the holder reported while indexing: its pid, the phase, done and total.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct IndexProgress {
    pub holder_pid: u32,
    pub phase: IndexPhase,
    pub done: usize,
    pub total: usize,
}

/// Asks the holder of `index_dir`'s lease to bring the index up to date as `lode index` does
/// (a full walk) and waits until it has, however long that takes, as long as the holder keeps
/// reporting: `patience` is the longest silence accepted (it reports at least every
/// [`protocol::PROGRESS_INTERVAL`]), after which the holder counts as hung
/// ([`NotWatched::Timeout`]). `progress` hears each report.
pub fn index(
    index_dir: &Path,
    settings: &str,
    patience: Duration,
    progress: &mut dyn FnMut(IndexProgress),
) -> Result<Indexed, NotIndexed> {
    let lease = read_lease(index_dir).ok().map(Box::new);
    let not_indexed = |reason| NotIndexed {
        lease: lease.clone(),
        reason,
    };
    let (info, mut stream) = connect(index_dir, settings, false, patience).map_err(not_indexed)?;
    let failed = |error| not_indexed(frame_failure(error, patience));
    let request = Request {
        settings: settings.to_owned(),
        kind: RequestKind::Index,
    };
    protocol::write_frame(&mut stream, &request).map_err(failed)?;
    loop {
        // Every frame must come within `patience` of the one before.
        stream
            .set_read_timeout(Some(patience.max(Duration::from_millis(1))))
            .map_err(|error| failed(error.into()))?;
        let response: Response =
            protocol::read_frame(&mut stream, MAX_ANSWER_BYTES).map_err(failed)?;
        match response {
            Response::Progress {
                pid,
                phase,
                done,
                total,
            } => progress(IndexProgress {
                holder_pid: pid,
                phase,
                done,
                total,
            }),
            Response::Indexed {
                pid,
                stats,
                lexical_segments,
            } => {
                return Ok(Indexed {
                    holder_pid: pid,
                    holder: info.holder,
                    stats: *stats,
                    lexical_segments,
                });
            }
            Response::Refused { reason } => return Err(not_indexed(NotWatched::Refused(reason))),
            Response::Failed { message } => return Err(not_indexed(NotWatched::Failed(message))),
            other => return Err(not_indexed(unexpected(&other))),
        }
    }
}

/// Asks the holder of `index_dir`'s lease (if any) to apply every change it has seen and waits
/// for its answer, at most `timeout`.
pub fn flush(index_dir: &Path, settings: &str, timeout: Duration) -> Result<Flushed, NotWatched> {
    let started = Instant::now();
    match request(index_dir, settings, RequestKind::Flush, false, timeout)?.1 {
        Response::Flushed { pid, applied } => Ok(Flushed {
            watcher_pid: pid,
            applied,
            elapsed: started.elapsed(),
        }),
        other => Err(unexpected(&other)),
    }
}

/// Has the holder of `index_dir`'s lease answer `query`, after applying what it has seen when
/// `fresh`.
pub fn query(
    index_dir: &Path,
    settings: &str,
    query: &Query,
    fresh: bool,
    timeout: Duration,
) -> Result<Served, NotWatched> {
    let started = Instant::now();
    let kind = RequestKind::Query {
        fresh,
        query: query.clone(),
    };
    let (info, response) = request(index_dir, settings, kind, false, timeout)?;
    match response {
        Response::Answer {
            pid,
            applied,
            flush_micros,
            query_micros,
            answer,
        } if same_kind(query, &answer) => Ok(Served {
            answer,
            holder_pid: pid,
            holder: info.holder,
            applied,
            flush: Duration::from_micros(flush_micros),
            query: Duration::from_micros(query_micros),
            elapsed: started.elapsed(),
        }),
        other => Err(unexpected(&other)),
    }
}

/// Who holds the lease of `index_dir`, as it describes itself.
pub fn status(index_dir: &Path) -> Result<(LeaseInfo, HolderStatus), NotWatched> {
    let (info, response) = request(
        index_dir,
        "",
        RequestKind::Status,
        true,
        Duration::from_secs(5),
    )?;
    match response {
        Response::Status(status) => Ok((info, status)),
        other => Err(unexpected(&other)),
    }
}

/// Asks the holder of `index_dir`'s lease to stop; only a daemon agrees. Returns its pid.
pub fn stop(index_dir: &Path) -> Result<u32, NotWatched> {
    match request(
        index_dir,
        "",
        RequestKind::Stop,
        true,
        Duration::from_secs(5),
    )?
    .1
    {
        Response::Stopping { pid } => Ok(pid),
        other => Err(unexpected(&other)),
    }
}

fn same_kind(query: &Query, answer: &Answer) -> bool {
    matches!(
        (query, answer),
        (Query::Search { .. }, Answer::Search { .. })
            | (Query::Symbols { .. }, Answer::Symbols { .. })
            | (Query::References { .. }, Answer::References { .. })
            | (Query::Map { .. }, Answer::Map { .. })
    )
}

fn unexpected(response: &Response) -> NotWatched {
    let kind = serde_json::to_value(response)
        .ok()
        .and_then(|value| {
            value
                .get("response")
                .and_then(|v| v.as_str().map(str::to_owned))
        })
        .unwrap_or_default();
    NotWatched::Failed(format!("unexpected answer {kind:?}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn info() -> LeaseInfo {
        LeaseInfo {
            version: PROTOCOL.to_string(),
            pid: "42".into(),
            holder: "daemon".into(),
            lode: "0.1.0".into(),
            socket: PathBuf::from("/tmp/x/watch.sock"),
            settings: "abc|static".into(),
        }
    }

    #[test]
    fn the_lease_file_round_trips_and_rejects_garbage() {
        assert_eq!(LeaseInfo::parse(&info().render()), Some(info()));
        assert_eq!(LeaseInfo::parse("garbage"), None);
        assert_eq!(LeaseInfo::parse("pid 1\n"), None);
        // A protocol 1 lease (no holder, no lode version) is another version, not garbage.
        let old = "lode-watch 1\npid 7\nsocket /tmp/s\nsettings x\n";
        assert_eq!(LeaseInfo::parse(old), None);
        assert_eq!(LeaseInfo::version_of(old), Some("1"));
    }

    #[test]
    fn a_lease_of_another_version_or_pointing_elsewhere_is_not_used() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join(LEASE_FILE),
            "lode-watch 1\npid 7\nsocket /tmp/s\nsettings x\n",
        )
        .unwrap();
        assert_eq!(
            flush(dir.path(), "x", DEFAULT_FLUSH_TIMEOUT),
            Err(NotWatched::Version { found: "1".into() })
        );
        // A lease a repository could ship, naming some other service's socket.
        let elsewhere = tempfile::tempdir().unwrap();
        let socket = elsewhere.path().join("service.sock");
        let _listener = UnixListener::bind(&socket).unwrap();
        let mut forged = info();
        forged.socket = socket;
        forged.settings = "x".into();
        std::fs::write(dir.path().join(LEASE_FILE), forged.render()).unwrap();
        assert!(matches!(
            flush(dir.path(), "x", DEFAULT_FLUSH_TIMEOUT),
            Err(NotWatched::Untrusted(_))
        ));
        // The right place, but a plain file instead of a socket.
        forged.socket = dir.path().join(SOCKET_FILE);
        std::fs::write(&forged.socket, "").unwrap();
        std::fs::write(dir.path().join(LEASE_FILE), forged.render()).unwrap();
        assert!(matches!(
            flush(dir.path(), "x", DEFAULT_FLUSH_TIMEOUT),
            Err(NotWatched::Untrusted(_))
        ));
    }

    #[test]
    fn a_second_lease_is_refused_with_the_holders_pid_and_a_long_path_uses_a_private_socket() {
        let dir = tempfile::tempdir().unwrap();
        let long = dir.path().join("x".repeat(120));
        std::fs::create_dir_all(&long).unwrap();
        let lease = Lease::acquire(&long, "s", "watch").unwrap();
        assert!(!lease.socket().starts_with(&long));
        assert!(lease.socket().as_os_str().len() <= MAX_SOCKET_PATH + 40);
        assert!(check_socket(&long, lease.socket()).is_ok());
        match Lease::acquire(&long, "s", "watch") {
            Err(LeaseError::AlreadyWatched { pid, .. }) => {
                assert_eq!(pid, std::process::id().to_string())
            }
            other => panic!("expected AlreadyWatched, got {:?}", other.err()),
        }
        let socket = lease.socket().to_path_buf();
        drop(lease);
        assert!(!socket.exists());
        assert_eq!(
            flush(&long, "s", DEFAULT_FLUSH_TIMEOUT),
            Err(NotWatched::NoWatcher)
        );
        // Retaken after release.
        let again = Lease::acquire(&long, "s", "watch").unwrap();
        assert_eq!(
            flush(&long, "other", DEFAULT_FLUSH_TIMEOUT),
            Err(NotWatched::Settings)
        );
        drop(again);
    }

    #[test]
    fn the_socket_is_the_user_s_alone() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let lease = Lease::acquire(dir.path(), "s", "watch").unwrap();
        let mode = std::fs::metadata(lease.socket())
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o600, "{mode:o}");
    }
}
