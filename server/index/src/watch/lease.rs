//! The watcher lease: how a query process learns that a live watcher keeps the index current,
//! and asks it to apply what it has seen before answering.
//!
//! The watcher holds an exclusive `flock` on `<index dir>/watch.lock` for its lifetime (the
//! operating system releases it however the process ends) and writes into that file the
//! protocol version, its pid, the Unix socket it answers on and the settings it indexes with.
//! The socket is `<index dir>/watch.sock`, or, when that path is too long for a socket
//! address (about 100 bytes), one in a private directory under the temporary directory.
//!
//! A query reads the file, connects, sends `flush 1` and waits (bounded) for `ok ...`. Anything
//! else — no file, a socket nobody listens on (a killed watcher), another protocol version or
//! other settings, no answer in time — is a [`NotWatched`] reason, and the caller checks
//! freshness itself.

use std::fs::{File, OpenOptions, TryLockError};
use std::io::{BufRead, BufReader, Read, Seek, Write};
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// Version of the lease file and the socket protocol; both sides must agree.
pub const PROTOCOL: u32 = 1;

/// The lease file inside the index directory.
pub const LEASE_FILE: &str = "watch.lock";

/// The socket inside the index directory, when its path fits.
pub const SOCKET_FILE: &str = "watch.sock";

/// Longest socket path used in place (`sun_path` holds 108 bytes on Linux, 104 on macOS).
const MAX_SOCKET_PATH: usize = 100;

/// How long a query waits for the watcher's answer by default: long enough for a watcher busy
/// with a burst (a checkout) to finish, since the alternative, a check of its own, would find
/// the index locked by that very watcher.
pub const DEFAULT_FLUSH_TIMEOUT: Duration = Duration::from_secs(10);

/// Why a query could not rely on a watcher.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NotWatched {
    #[error("no watcher holds the lease")]
    NoWatcher,
    #[error("the watcher's socket does not answer (a stopped watcher): {0}")]
    Gone(String),
    #[error("the watcher speaks protocol {found}, this lode speaks {PROTOCOL}")]
    Version { found: String },
    #[error(
        "the watcher indexes with other settings (exclusions, size cap, embedder or lode version)"
    )]
    Settings,
    #[error("the watcher did not answer within {0:?}")]
    Timeout(Duration),
    #[error("the watcher could not bring the index up to date: {0}")]
    Failed(String),
    #[error("unreadable lease {path}: {message}")]
    Unreadable { path: PathBuf, message: String },
}

/// Errors of holding a lease.
#[derive(Debug, thiserror::Error)]
pub enum LeaseError {
    #[error(
        "the index {index_dir} is already watched by process {pid} (lode watch, lode lsp or lode acp); stop it or let it keep the index current"
    )]
    AlreadyWatched { index_dir: PathBuf, pid: String },
    #[error("cannot hold the watch lease {path}: {source}")]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
}

/// A watcher's answer to a flush.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Flushed {
    pub watcher_pid: u32,
    /// Paths the watcher applied to answer this flush (0: it was already current).
    pub applied: usize,
    /// From connecting to the answer.
    pub elapsed: Duration,
}

/// What the lease file says.
#[derive(Debug, Clone, PartialEq, Eq)]
struct LeaseInfo {
    version: String,
    pid: String,
    socket: PathBuf,
    settings: String,
}

impl LeaseInfo {
    fn render(&self) -> String {
        format!(
            "lode-watch {}\npid {}\nsocket {}\nsettings {}\n",
            self.version,
            self.pid,
            self.socket.display(),
            self.settings
        )
    }

    fn parse(text: &str) -> Option<LeaseInfo> {
        let mut version = None;
        let mut pid = None;
        let mut socket = None;
        let mut settings = None;
        for line in text.lines() {
            let (key, value) = line.split_once(' ')?;
            match key {
                "lode-watch" => version = Some(value.to_owned()),
                "pid" => pid = Some(value.to_owned()),
                "socket" => socket = Some(PathBuf::from(value)),
                "settings" => settings = Some(value.to_owned()),
                _ => {}
            }
        }
        Some(LeaseInfo {
            version: version?,
            pid: pid?,
            socket: socket?,
            settings: settings?,
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
    /// Takes the lease of `index_dir` for a watcher indexing with `settings`, or reports who
    /// holds it.
    pub fn acquire(index_dir: &Path, settings: &str) -> Result<Lease, LeaseError> {
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
        // We hold the lease: a socket file left here is a dead watcher's.
        let _ = std::fs::remove_file(&socket);
        let listener = UnixListener::bind(&socket).map_err(|source| LeaseError::Io {
            path: socket.clone(),
            source,
        })?;
        let info = LeaseInfo {
            version: PROTOCOL.to_string(),
            pid: std::process::id().to_string(),
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
    let base = std::env::var_os("XDG_RUNTIME_DIR")
        .map(PathBuf::from)
        .filter(|dir| dir.is_dir() && dir.as_os_str().len() < 60)
        .unwrap_or_else(|| PathBuf::from("/tmp"));
    let dir = tempfile::Builder::new()
        .prefix("lode-watch-")
        .tempdir_in(base)?;
    Ok((dir.path().join(SOCKET_FILE), Some(dir)))
}

/// Asks the watcher of `index_dir` (if any) to apply every change it has seen and waits for
/// its answer, at most `timeout`.
pub fn flush(index_dir: &Path, settings: &str, timeout: Duration) -> Result<Flushed, NotWatched> {
    let started = Instant::now();
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
    let info = LeaseInfo::parse(&text).ok_or_else(|| NotWatched::Unreadable {
        path: path.clone(),
        message: "not a lode watch lease".to_owned(),
    })?;
    if info.version != PROTOCOL.to_string() {
        return Err(NotWatched::Version {
            found: info.version,
        });
    }
    if info.settings != settings {
        return Err(NotWatched::Settings);
    }
    let mut stream =
        UnixStream::connect(&info.socket).map_err(|error| NotWatched::Gone(error.to_string()))?;
    let remaining = timeout
        .saturating_sub(started.elapsed())
        .max(Duration::from_millis(1));
    let failed = |error: std::io::Error| match error.kind() {
        std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut => {
            NotWatched::Timeout(timeout)
        }
        _ => NotWatched::Gone(error.to_string()),
    };
    stream.set_read_timeout(Some(remaining)).map_err(failed)?;
    stream.set_write_timeout(Some(remaining)).map_err(failed)?;
    stream
        .write_all(format!("flush {PROTOCOL}\n").as_bytes())
        .map_err(failed)?;
    let mut answer = String::new();
    BufReader::new(&stream)
        .take(4096)
        .read_line(&mut answer)
        .map_err(failed)?;
    parse_answer(answer.trim_end(), started.elapsed())
}

fn parse_answer(answer: &str, elapsed: Duration) -> Result<Flushed, NotWatched> {
    let mut words = answer.split_whitespace();
    match words.next() {
        Some("ok") => {
            let watcher_pid = words.next().and_then(|w| w.parse().ok());
            let applied = words.next().and_then(|w| w.parse().ok());
            match (watcher_pid, applied) {
                (Some(watcher_pid), Some(applied)) => Ok(Flushed {
                    watcher_pid,
                    applied,
                    elapsed,
                }),
                _ => Err(NotWatched::Failed(format!("unexpected answer {answer:?}"))),
            }
        }
        Some("error") => Err(NotWatched::Failed(
            answer.trim_start_matches("error").trim().to_owned(),
        )),
        // The watcher closed the connection without answering (it is stopping).
        None => Err(NotWatched::Gone("no answer".to_owned())),
        Some(_) => Err(NotWatched::Failed(format!("unexpected answer {answer:?}"))),
    }
}

/// One request read from a query's connection: `Ok(())` for a well-formed flush.
pub(crate) fn read_request(stream: &UnixStream) -> Result<(), String> {
    stream
        .set_read_timeout(Some(Duration::from_secs(2)))
        .map_err(|e| e.to_string())?;
    let mut line = String::new();
    BufReader::new(stream)
        .take(256)
        .read_line(&mut line)
        .map_err(|e| e.to_string())?;
    let mut words = line.split_whitespace();
    match (words.next(), words.next(), words.next()) {
        (Some("flush"), Some(version), None) if version == PROTOCOL.to_string() => Ok(()),
        (Some("flush"), Some(version), None) => Err(format!(
            "protocol {version} is not supported (this watcher speaks {PROTOCOL})"
        )),
        _ => Err(format!("malformed request {:?}", line.trim_end())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_lease_file_round_trips_and_rejects_garbage() {
        let info = LeaseInfo {
            version: "1".into(),
            pid: "42".into(),
            socket: PathBuf::from("/tmp/x/watch.sock"),
            settings: "abc|static".into(),
        };
        assert_eq!(LeaseInfo::parse(&info.render()), Some(info));
        assert_eq!(LeaseInfo::parse("garbage"), None);
        assert_eq!(LeaseInfo::parse("pid 1\n"), None);
    }

    #[test]
    fn answers_are_parsed_strictly() {
        let elapsed = Duration::from_millis(1);
        assert_eq!(
            parse_answer("ok 7 3", elapsed),
            Ok(Flushed {
                watcher_pid: 7,
                applied: 3,
                elapsed
            })
        );
        assert!(matches!(
            parse_answer("error locked", elapsed),
            Err(NotWatched::Failed(message)) if message == "locked"
        ));
        assert!(matches!(
            parse_answer("", elapsed),
            Err(NotWatched::Gone(_))
        ));
        assert!(matches!(
            parse_answer("ok seven", elapsed),
            Err(NotWatched::Failed(_))
        ));
    }

    #[test]
    fn a_second_lease_is_refused_with_the_holders_pid_and_a_long_path_uses_a_private_socket() {
        let dir = tempfile::tempdir().unwrap();
        let long = dir.path().join("x".repeat(120));
        std::fs::create_dir_all(&long).unwrap();
        let lease = Lease::acquire(&long, "s").unwrap();
        assert!(!lease.socket().starts_with(&long));
        assert!(lease.socket().as_os_str().len() <= MAX_SOCKET_PATH + 40);
        match Lease::acquire(&long, "s") {
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
        let again = Lease::acquire(&long, "s").unwrap();
        assert_eq!(
            flush(&long, "other", DEFAULT_FLUSH_TIMEOUT),
            Err(NotWatched::Settings)
        );
        drop(again);
    }
}
