//! Advisory `flock` locks: probing another process's lock and holding our own.

use std::fs::{File, TryLockError};
use std::io;

/// What a non-destructive lock probe found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LockProbe {
    /// No file at the path: nobody can hold it.
    Missing,
    /// The file exists and nobody holds its lock.
    Free,
    /// Another open file description holds the lock.
    Held,
}

/// The outcome of trying to take a lock.
#[derive(Debug)]
pub enum TryLock {
    /// We hold the lock until the guard drops.
    Acquired(LockGuard),
    /// Someone else holds it.
    Held,
    /// The file does not exist (only when not asked to create it).
    Missing,
}

/// A held exclusive `flock`; released (and the descriptor closed) on drop.
#[derive(Debug)]
pub struct LockGuard {
    file: File,
}

impl LockGuard {
    /// Device and inode of the locked file, to check it is still the file at its path.
    pub fn identity(&self) -> io::Result<crate::FileId> {
        use std::os::unix::fs::MetadataExt;
        let m = self.file.metadata()?;
        Ok(crate::FileId::from_parts(m.dev(), m.ino()))
    }
}

impl std::os::fd::AsFd for LockGuard {
    fn as_fd(&self) -> std::os::fd::BorrowedFd<'_> {
        self.file.as_fd()
    }
}

/// Releases the lock explicitly before the descriptor closes. A lock belongs to the open file
/// description, which a process forked meanwhile (by a host embedding the doctor, or a test
/// harness starting children) shares until it execs: closing our descriptor alone would leave
/// the lock held through the child's copy, and the next action on the same store would find it
/// "in use by another process".
impl Drop for LockGuard {
    fn drop(&mut self) {
        let _ = self.file.unlock();
    }
}

pub(crate) fn probe(file: &File) -> io::Result<LockProbe> {
    match file.try_lock() {
        Ok(()) => {
            file.unlock()?;
            Ok(LockProbe::Free)
        }
        Err(TryLockError::WouldBlock) => Ok(LockProbe::Held),
        Err(TryLockError::Error(e)) => Err(e),
    }
}

/// A lock file opened through a root but not locked yet.
#[derive(Debug)]
pub struct LockFile {
    pub(crate) file: File,
    pub(crate) path: std::path::PathBuf,
}

impl LockFile {
    /// Takes the exclusive `flock` without blocking.
    pub fn try_lock(self) -> crate::Result<TryLock> {
        match self.file.try_lock() {
            Ok(()) => Ok(TryLock::Acquired(LockGuard { file: self.file })),
            Err(TryLockError::WouldBlock) => Ok(TryLock::Held),
            Err(TryLockError::Error(e)) => Err(crate::Error::io("lock", &self.path, e)),
        }
    }
}
