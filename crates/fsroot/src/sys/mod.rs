//! The one contract between the portable filesystem layer and the operating system.
//!
//! Everything above this module (confinement, errors, fault injection, the write, move and
//! delete protocols, digests) is the same on every OS; every system call is made here, by one
//! backend per OS:
//!
//! - `linux.rs`: `openat2(RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS)`, `statx` mount ids,
//!   `renameat2(RENAME_NOREPLACE)`; everything else from `unix.rs`.
//! - `unix.rs`: macOS and the BSDs (and Linux's base): per-component `O_NOFOLLOW` opens,
//!   `fstatat`, `renameatx_np(RENAME_EXCL)` on Apple, `flock`.
//! - `windows.rs`: `NtCreateFile` relative to a held directory handle with
//!   `FILE_OPEN_REPARSE_POINT` (a symlink, junction or mount point is never followed), renames
//!   and deletes through the handle (`FileRenameInformation` with `ReplaceIfExists = false`
//!   and the destination directory's handle, `FileDispositionInformation`), identity from the
//!   volume serial and file index, `LockFileEx` on the app's byte range.
//!
//! The contract, which each backend provides under these names:
//!
//! - `Dir`: an owned handle on a directory. Every `name` given to its methods is one path
//!   component (the portable layer checks it); nothing is ever resolved through a symlink or
//!   reparse point, and an attempt to open one fails with an error [`is_link_error`] accepts.
//!   - `Dir::open_ambient(path)`: the anchor itself (an ordinary open, links followed).
//!   - `try_clone`, `open_dir(name)`, `open_file(name, &FileOpts)`, `stat(name)` (`lstat`),
//!     `stat_self()`, `mount(name)`, `mount_self()`, `entries()` (every entry but `.` and
//!     `..`, unsorted, with its kind, never following), `create_dir(name)`,
//!     `rename_noreplace(name, to, to_name)` (an existing `to_name` fails with
//!     `AlreadyExists` and is untouched), `rename_replace(name, to, to_name)`,
//!     `remove_file(name)` (a directory is refused), `remove_dir(name)` (a non-empty one
//!     fails with `DirectoryNotEmpty`), `read_link(name)`, `sync()` (makes the directory's
//!     entries durable where the OS can; a no-op where it cannot).
//!   - `open_beneath_dir(rel)`, `open_beneath_file(rel, &FileOpts)`: a relative path of
//!     several components, resolved beneath this handle with no link followed anywhere. The
//!     backends without a one-call resolver use [`walk_beneath`].
//! - `file_meta(&File)`: the [`Meta`] of an opened file.
//! - `read_at(&File, buf, offset)`: `pread`.
//! - `try_lock(&File)` / `unlock(&File)`: the app's exclusive lock (platforms.md §8):
//!   `flock(LOCK_EX | LOCK_NB)` on Unix; on Windows `LockFileEx(EXCLUSIVE |
//!   FAIL_IMMEDIATELY)` at offset 128, length `0x7FFF_FFFF_FFFF_FFFF`. `Ok(false)`: another
//!   holder (`WouldBlock`, or raw 32 / 33 on Windows).
//! - `is_link_error(&io::Error)`: the error an open gives for a link it refused to follow.
//! - `is_transient(&io::Error)`: an error that passes by itself (Windows 5, 32, 33 from a
//!   scanner holding a file for a moment; never on Unix).
//! - `set_mode(&File, mode)`: exact permission bits (a no-op on Windows).
//! - `Dir::hard_link(name, to, to_name)`: the fallback of a create that must not replace,
//!   where `rename_noreplace` is `Unsupported` (never on Windows).
//! - `process_alive(pid) -> Option<bool>`: whether a process id names a running process;
//!   `None` when that cannot be told.
//! - `Dir::owner(name)`: who owns the entry (Unix: its uid; Windows: its owner SID).
//! - `DELETE_CAN_BE_REFUSED` and `Dir::delete_refused(name, is_dir)`: whether another
//!   process's open can make a delete fail, and whether one does for the entry now (Windows: a
//!   handle opened without `FILE_SHARE_DELETE`, a sharing violation; never on Unix).
//! - `DELETES_CAN_PEND`: whether a deleted file can stay in its directory while another handle
//!   to it is open (Windows), so that removing the directory waits for it.

use std::ffi::{OsStr, OsString};
use std::io;
use std::path::Path;

use crate::EntryKind;

#[cfg(target_os = "linux")]
mod linux;
#[cfg(unix)]
mod unix;
#[cfg(windows)]
mod windows;

#[cfg(target_os = "linux")]
pub(crate) use linux::*;
#[cfg(all(unix, not(target_os = "linux")))]
pub(crate) use unix::*;
#[cfg(windows)]
pub(crate) use windows::*;

/// How a file is opened by [`Dir::open_file`]. Every open is non-blocking (a fifo never waits
/// for a writer), close-on-exec and never follows a link; on Windows every share mode is given
/// (`FILE_SHARE_READ | WRITE | DELETE`), so the app's own renames never fail on the doctor's
/// handle (§8.6).
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct FileOpts {
    /// Open for writing.
    pub write: bool,
    /// Open for appending (implies writing).
    pub append: bool,
    /// Create the file when it is missing.
    pub create: bool,
    /// Create the file, failing with `AlreadyExists` when anything is at the name.
    pub create_new: bool,
    /// Permission bits of a created file (Unix; ignored on Windows).
    pub mode: u32,
}

impl FileOpts {
    /// Read only.
    pub(crate) fn read() -> FileOpts {
        FileOpts::default()
    }
}

/// Which mount (Linux: mount id and device; elsewhere: device or volume) an entry is on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct MountId(pub u64, pub u64);

/// `lstat`-like facts about one entry, as each backend reads them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Meta {
    pub kind: EntryKind,
    pub len: u64,
    /// Seconds since the Unix epoch.
    pub mtime: i64,
    /// The change stamps of [`crate::Stat`], in nanoseconds since the Unix epoch.
    pub mtime_ns: i64,
    pub ctime_ns: i64,
    pub nlink: u64,
    pub id: crate::FileId,
    pub owner: crate::Owner,
    /// Permission and type bits on Unix; on Windows 0o644 (0o444 when read-only).
    pub mode: u32,
}

impl Meta {
    pub(crate) fn is_dir(&self) -> bool {
        self.kind == EntryKind::Dir
    }
    pub(crate) fn is_file(&self) -> bool {
        self.kind == EntryKind::File
    }
}

/// [`Dir::open_beneath_dir`] for the backends that resolve one component at a time: each
/// directory on the way is opened from the previous one's handle without following a link.
pub(crate) fn walk_beneath(base: &Dir, rel: &Path) -> io::Result<Dir> {
    let mut at: Option<Dir> = None;
    for comp in rel.components() {
        let name: &OsStr = comp.as_os_str();
        if name == "." {
            continue;
        }
        let next = match &at {
            Some(d) => d.open_dir(name)?,
            None => base.open_dir(name)?,
        };
        at = Some(next);
    }
    match at {
        Some(d) => Ok(d),
        None => base.try_clone(),
    }
}

/// The parent of `rel` opened beneath `base` as [`walk_beneath`] opens it, and `rel`'s last
/// component (`.` for an empty path).
pub(crate) fn walk_parent(base: &Dir, rel: &Path) -> io::Result<(Dir, OsString)> {
    let parent = rel.parent().unwrap_or(Path::new(""));
    let name = rel
        .file_name()
        .map(OsStr::to_os_string)
        .unwrap_or_else(|| OsString::from("."));
    Ok((walk_beneath(base, parent)?, name))
}
