//! The index's writer lock: one process at a time changes an index.
//!
//! An advisory lock (`flock`) on `<index dir>/writer.lock`, held by refreshes, single-file
//! updates and repairs. The operating system releases it when the holder exits, however it
//! exits, so a killed writer never leaves a stale lock behind. Readers never take it.

use std::fs::{File, OpenOptions, TryLockError};
use std::path::Path;

use crate::error::IndexError;

/// Held while writing; released on drop.
#[derive(Debug)]
pub struct WriterLock {
    _file: File,
}

impl WriterLock {
    /// Takes the lock without waiting; [`IndexError::Locked`] when another process holds it.
    pub fn try_acquire(index_dir: &Path) -> Result<WriterLock, IndexError> {
        let path = index_dir.join("writer.lock");
        let file = OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&path)
            .map_err(|source| IndexError::Write {
                path: path.clone(),
                source,
            })?;
        match file.try_lock() {
            Ok(()) => Ok(WriterLock { _file: file }),
            Err(TryLockError::WouldBlock) => Err(IndexError::Locked { path }),
            Err(TryLockError::Error(source)) => Err(IndexError::Write { path, source }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_second_holder_is_refused_until_the_first_lets_go() {
        let dir = tempfile::tempdir().unwrap();
        let first = WriterLock::try_acquire(dir.path()).unwrap();
        assert!(matches!(
            WriterLock::try_acquire(dir.path()),
            Err(IndexError::Locked { .. })
        ));
        drop(first);
        assert!(WriterLock::try_acquire(dir.path()).is_ok());
    }
}
