//! The app's exclusive locks (`flock` on Unix; `LockFileEx` on the app's byte range on
//! Windows, platforms.md §8.11): probing another process's lock and holding our own.

use std::fs::File;
use std::io;

use crate::sys;

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

/// A held exclusive lock; released (and the descriptor closed) on drop.
#[derive(Debug)]
pub struct LockGuard {
    pub(crate) file: File,
}

impl LockGuard {
    /// Device and inode of the locked file, to check it is still the file at its path.
    pub fn identity(&self) -> io::Result<crate::FileId> {
        Ok(sys::file_meta(&self.file)?.id)
    }
}

/// Releases the lock explicitly before the descriptor closes. A lock belongs to the open file
/// description, which a process forked meanwhile (by a host embedding the doctor, or a test
/// harness starting children) shares until it execs: closing our descriptor alone would leave
/// the lock held through the child's copy, and the next action on the same store would find it
/// "in use by another process".
impl Drop for LockGuard {
    fn drop(&mut self) {
        let _ = sys::unlock(&self.file);
    }
}

pub(crate) fn probe(file: &File) -> io::Result<LockProbe> {
    if sys::try_lock(file)? {
        sys::unlock(file)?;
        Ok(LockProbe::Free)
    } else {
        Ok(LockProbe::Held)
    }
}

/// A lock file opened through a root but not locked yet.
#[derive(Debug)]
pub struct LockFile {
    pub(crate) file: File,
    pub(crate) path: std::path::PathBuf,
}

impl LockFile {
    /// Takes the exclusive lock without blocking.
    pub fn try_lock(self) -> crate::Result<TryLock> {
        match sys::try_lock(&self.file) {
            Ok(true) => Ok(TryLock::Acquired(LockGuard { file: self.file })),
            Ok(false) => Ok(TryLock::Held),
            Err(e) => Err(crate::Error::io("lock", &self.path, e)),
        }
    }
}
