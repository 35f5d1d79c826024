//! The index's writer lock: one process at a time changes an index.
//!
//! An advisory lock (`flock`) on `<index dir>/writer.lock`, held by refreshes, single-file
//! updates and repairs. The operating system releases it when the holder exits, however it
//! exits, so a killed writer never leaves a stale lock behind. Readers never take it.
//!
//! While it holds the lock a writer keeps its pid in the file (`pid N`), and empties the file
//! before letting go. So a contender can name who is writing, and a writer that finds a pid in
//! the file when it gets the lock knows the previous holder ended without letting go (it was
//! killed mid-write): it says so ([`WriterLock::took_over_from`]). A contender that finds the
//! lock still held by a process that is gone (the kernel releases a killed process's locks only
//! once it has finished exiting) waits a moment for the release and takes the lock over.

use std::fs::{File, OpenOptions, TryLockError};
use std::io::{Read, Seek, Write};
use std::path::Path;
use std::time::{Duration, Instant};

use crate::error::IndexError;

/// The lock file inside the index directory.
pub const WRITER_LOCK_FILE: &str = "writer.lock";

/// How long a contender waits for the lock of a holder that is gone (still exiting).
const TAKEOVER_PATIENCE: Duration = Duration::from_secs(2);
const TAKEOVER_POLL: Duration = Duration::from_millis(10);

/// Held while writing; released on drop.
#[derive(Debug)]
pub struct WriterLock {
    file: File,
    took_over_from: Option<u32>,
}

impl WriterLock {
    /// Takes the lock without waiting for a live holder; [`IndexError::Locked`] (naming the
    /// holder's pid when it is known) when another process holds it. A holder that is gone is
    /// waited for, briefly, and its lock taken over.
    pub fn try_acquire(index_dir: &Path) -> Result<WriterLock, IndexError> {
        let path = index_dir.join(WRITER_LOCK_FILE);
        let write_error = |source| IndexError::Write {
            path: path.clone(),
            source,
        };
        let mut file = OpenOptions::new()
            .create(true)
            .truncate(false)
            .read(true)
            .write(true)
            .open(&path)
            .map_err(write_error)?;
        match file.try_lock() {
            Ok(()) => {}
            Err(TryLockError::WouldBlock) => {
                let holder = recorded_pid(&mut file);
                let gone = holder.filter(|pid| !process_is_alive(*pid));
                if !gone.is_some_and(|pid| wait_for_release(&mut file, pid)) {
                    return Err(IndexError::Locked {
                        path,
                        holder: recorded_pid(&mut file).or(holder),
                    });
                }
            }
            Err(TryLockError::Error(source)) => return Err(write_error(source)),
        }
        // Ours now: a pid still in the file is a holder that never let go.
        let previous = recorded_pid(&mut file);
        let own = std::process::id();
        let took_over_from = previous.filter(|pid| *pid != own && !process_is_alive(*pid));
        file.set_len(0).map_err(write_error)?;
        file.rewind().map_err(write_error)?;
        file.write_all(format!("pid {own}\n").as_bytes())
            .map_err(write_error)?;
        Ok(WriterLock {
            file,
            took_over_from,
        })
    }

    /// The pid of a previous holder that ended (was killed) while holding this lock, when that
    /// is how this lock was found.
    #[cfg(test)]
    fn took_over_from(&self) -> Option<u32> {
        self.took_over_from
    }

    /// What to tell the user, once, when the lock was taken over from a holder that ended
    /// while holding it: its last write was cut short, and the write that follows repairs
    /// what it left.
    pub fn takeover_note(&self) -> Option<String> {
        self.took_over_from.map(|pid| {
            format!(
                "process {pid} ended while writing the index (killed?) and left its writer lock; took it over"
            )
        })
    }
}

impl Drop for WriterLock {
    fn drop(&mut self) {
        // Emptied while still locked: a pid left in the file means a holder died holding it.
        let _ = self.file.set_len(0);
    }
}

/// The pid the lock file names, read from its start (the file is not locked by the reader).
fn recorded_pid(file: &mut File) -> Option<u32> {
    let mut text = String::new();
    file.rewind().ok()?;
    file.take(64).read_to_string(&mut text).ok()?;
    text.lines()
        .find_map(|line| line.strip_prefix("pid "))
        .and_then(|pid| pid.trim().parse().ok())
        .filter(|pid| *pid != 0)
}

/// Polls for the lock of `gone`, a holder that is gone; whether it was got. Stops early when
/// the file names someone else (a new holder took the lock before writing its pid).
fn wait_for_release(file: &mut File, gone: u32) -> bool {
    let deadline = Instant::now() + TAKEOVER_PATIENCE;
    loop {
        match file.try_lock() {
            Ok(()) => return true,
            Err(TryLockError::WouldBlock)
                if Instant::now() < deadline && recorded_pid(file) == Some(gone) =>
            {
                std::thread::sleep(TAKEOVER_POLL)
            }
            Err(_) => return false,
        }
    }
}

/// Whether `pid` names a running process (a zombie, dead but not yet reaped, is not).
pub fn process_is_alive(pid: u32) -> bool {
    let Ok(raw) = libc::pid_t::try_from(pid) else {
        return false;
    };
    // SAFETY: signal 0 only checks that the process exists; no signal is sent.
    let exists = unsafe { libc::kill(raw, 0) } == 0
        || std::io::Error::last_os_error().raw_os_error() == Some(libc::EPERM);
    if !exists {
        return false;
    }
    // Linux: a process that has exited but not been reaped is `Z` (or `X`) in its stat line.
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => !matches!(
            stat.rsplit(')')
                .next()
                .map(str::trim_start)
                .and_then(|rest| rest.chars().next()),
            Some('Z' | 'X')
        ),
        Err(_) => true,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_second_holder_is_refused_with_the_first_one_s_pid_until_it_lets_go() {
        let dir = tempfile::tempdir().unwrap();
        let first = WriterLock::try_acquire(dir.path()).unwrap();
        assert_eq!(first.took_over_from(), None);
        match WriterLock::try_acquire(dir.path()) {
            Err(IndexError::Locked { holder, .. }) => {
                assert_eq!(holder, Some(std::process::id()))
            }
            other => panic!("expected Locked, got {other:?}"),
        }
        drop(first);
        // Let go cleanly: the file names nobody, and the next holder takes over from no one.
        let text = std::fs::read_to_string(dir.path().join(WRITER_LOCK_FILE)).unwrap();
        assert_eq!(text, "");
        let second = WriterLock::try_acquire(dir.path()).unwrap();
        assert_eq!(second.took_over_from(), None);
    }

    /// A pid of a child that has exited and been reaped: a process that is certainly gone.
    fn gone_pid() -> u32 {
        let mut child = std::process::Command::new("true").spawn().unwrap();
        let pid = child.id();
        child.wait().unwrap();
        assert!(!process_is_alive(pid));
        pid
    }

    #[test]
    fn a_lock_left_by_a_killed_holder_is_taken_over_and_said_once() {
        let dir = tempfile::tempdir().unwrap();
        let dead = gone_pid();
        // What a holder killed mid-write leaves: its pid in the file, and no lock.
        std::fs::write(dir.path().join(WRITER_LOCK_FILE), format!("pid {dead}\n")).unwrap();
        let lock = WriterLock::try_acquire(dir.path()).unwrap();
        assert_eq!(lock.took_over_from(), Some(dead));
        assert!(lock.takeover_note().unwrap().contains(&dead.to_string()));
        drop(lock);
        let again = WriterLock::try_acquire(dir.path()).unwrap();
        assert_eq!(again.took_over_from(), None, "said once");
    }

    #[test]
    fn a_holder_that_is_gone_but_still_releasing_is_waited_for() {
        let dir = tempfile::tempdir().unwrap();
        let dead = gone_pid();
        // The lock is held (here by another open file of this process, standing for a killed
        // process the kernel has not finished tearing down) and names a process that is gone.
        let path = dir.path().join(WRITER_LOCK_FILE);
        let holder = OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&path)
            .unwrap();
        holder.try_lock().unwrap();
        std::fs::write(&path, format!("pid {dead}\n")).unwrap();
        let release = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(200));
            drop(holder);
        });
        let lock = WriterLock::try_acquire(dir.path()).unwrap();
        assert_eq!(lock.took_over_from(), Some(dead));
        release.join().unwrap();
    }

    #[test]
    fn a_live_holder_that_never_lets_go_is_named_not_taken_over() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(WRITER_LOCK_FILE);
        let holder = OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&path)
            .unwrap();
        holder.try_lock().unwrap();
        // A live process (this one) is named; an unreadable file names nobody.
        std::fs::write(&path, format!("pid {}\n", std::process::id())).unwrap();
        assert!(matches!(
            WriterLock::try_acquire(dir.path()),
            Err(IndexError::Locked { holder: Some(pid), .. }) if pid == std::process::id()
        ));
        std::fs::write(&path, "garbage").unwrap();
        assert!(matches!(
            WriterLock::try_acquire(dir.path()),
            Err(IndexError::Locked { holder: None, .. })
        ));
        // A gone process that never releases (another process shares its lock): refused after
        // the wait, naming it.
        let dead = gone_pid();
        std::fs::write(&path, format!("pid {dead}\n")).unwrap();
        assert!(matches!(
            WriterLock::try_acquire(dir.path()),
            Err(IndexError::Locked { holder: Some(pid), .. }) if pid == dead
        ));
        drop(holder);
    }
}
