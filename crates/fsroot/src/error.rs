//! The error type of the confined root: every error names the full path it concerns.

use std::io;
use std::path::{Path, PathBuf};

/// Result alias for root operations.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// A filesystem error with the path it concerns.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// An operating-system error.
    #[error("cannot {op} {}: {source}", path.display())]
    Io {
        /// What was being done.
        op: &'static str,
        /// The full path.
        path: PathBuf,
        /// The underlying error.
        #[source]
        source: io::Error,
    },
    /// A path that is absolute or climbs out with `..`.
    #[error("refusing path {}: it leads outside the root", path.display())]
    Escape {
        /// The path as given.
        path: PathBuf,
    },
    /// A path expected to be a regular file is something else.
    #[error("refusing {}: not a regular file", path.display())]
    NotAFile {
        /// The full path.
        path: PathBuf,
    },
    /// A path whose ancestor is a symlink (never written through).
    #[error("refusing {}: it is a symlink inside the root, never followed", path.display())]
    SymlinkInPath {
        /// The full path of the symlink.
        path: PathBuf,
    },
    /// A path that must be a real directory is something else.
    #[error("refusing {}: not a directory", path.display())]
    NotADirectory {
        /// The full path.
        path: PathBuf,
    },
    /// A record file of the doctor's with more than one link: appending would write into the
    /// other name too, and reading it would read a file that may lie outside the root.
    #[error("refusing {}: it has other hard links, so it may stand for a file elsewhere", path.display())]
    HardLinked {
        /// The full path.
        path: PathBuf,
    },
    /// A move destination that already exists.
    #[error("refusing to move onto {}: it already exists", path.display())]
    Occupied {
        /// The full path.
        path: PathBuf,
    },
}

impl Error {
    /// An OS error met doing `op` on `path`.
    pub fn io(op: &'static str, path: &Path, source: io::Error) -> Error {
        Error::Io {
            op,
            path: path.to_path_buf(),
            source,
        }
    }
    pub(crate) fn escape(path: &Path) -> Error {
        Error::Escape {
            path: path.to_path_buf(),
        }
    }
    pub(crate) fn not_a_file(path: &Path) -> Error {
        Error::NotAFile {
            path: path.to_path_buf(),
        }
    }
    /// A destination that already exists.
    pub fn occupied(path: &Path) -> Error {
        Error::Occupied {
            path: path.to_path_buf(),
        }
    }

    /// Whether the error means "nothing is there": no such entry, or a component on the way
    /// is not a directory (as [`crate::Root::stat`] judges it).
    pub fn is_not_found(&self) -> bool {
        matches!(
            self,
            Error::Io { source, .. } if matches!(
                source.kind(),
                io::ErrorKind::NotFound | io::ErrorKind::NotADirectory
            )
        )
    }

    /// Whether a symlink was met where none is followed: in place of the path (`ELOOP`) or on
    /// the way to it.
    pub fn is_symlink(&self) -> bool {
        match self {
            Error::SymlinkInPath { .. } => true,
            // `io::ErrorKind::FilesystemLoop` is not stable: this crate, which makes the system
            // calls, is the one place that knows the error number.
            Error::Io { source, .. } => crate::sys::is_link_error(source),
            _ => false,
        }
    }

    /// Whether the OS refused for a reason that passes by itself: on Windows, access denied,
    /// a sharing violation or a lock violation (errors 5, 32, 33), which a scanner or indexer
    /// holding the file for a moment gives (platforms.md §8.14). Never on Unix.
    pub fn is_transient(&self) -> bool {
        match self {
            Error::Io { source, .. } => crate::sys::is_transient(source),
            _ => false,
        }
    }

    /// The full path the error concerns.
    pub fn path(&self) -> &Path {
        match self {
            Error::Io { path, .. }
            | Error::Escape { path }
            | Error::NotAFile { path }
            | Error::SymlinkInPath { path }
            | Error::NotADirectory { path }
            | Error::HardLinked { path }
            | Error::Occupied { path } => path,
        }
    }

    /// What was being done when it happened.
    pub fn operation(&self) -> &'static str {
        match self {
            Error::Io { op, .. } => op,
            Error::Escape { .. } | Error::SymlinkInPath { .. } => "resolve",
            Error::NotAFile { .. } | Error::NotADirectory { .. } | Error::HardLinked { .. } => {
                "open"
            }
            Error::Occupied { .. } => "move",
        }
    }

    /// How it is classified: the OS error's kind, or the kind of the doctor's own refusal.
    pub fn kind(&self) -> io::ErrorKind {
        match self {
            Error::Io { source, .. } => source.kind(),
            Error::NotADirectory { .. } => io::ErrorKind::NotADirectory,
            Error::Occupied { .. } => io::ErrorKind::AlreadyExists,
            Error::Escape { .. }
            | Error::NotAFile { .. }
            | Error::SymlinkInPath { .. }
            | Error::HardLinked { .. } => io::ErrorKind::InvalidInput,
        }
    }

    /// The underlying OS error, if any.
    pub fn io_error(&self) -> Option<&io::Error> {
        match self {
            Error::Io { source, .. } => Some(source),
            _ => None,
        }
    }
}
