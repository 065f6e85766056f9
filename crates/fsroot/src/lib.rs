//! The confined root: the only place in the workspace that touches the filesystem.
//!
//! A [`Root`] is opened from an anchor path and gives read access beneath it; a
//! [`WritableRoot`] adds the write operations (atomic write, append, the one move seam,
//! directory creation, the single-flight lock). Planning code receives a `&Root` and so cannot
//! write, by type. Every path handed in is relative to the anchor; `..`, absolute paths and
//! symlinks are refused with an error that names the path. Every path is resolved by the
//! kernel beneath the root's handle with no symlink followed anywhere on the way
//! (`openat2(RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS)`, or one component at a time with
//! `O_NOFOLLOW` where `openat2` is missing), and every operation then acts on the handle it
//! opened: a check and the action that follows it never walk the same path twice.
//!
//! # Example
//!
//! ```
//! let tmp = tempfile::tempdir().unwrap();
//! let root = fsroot::WritableRoot::open(tmp.path()).unwrap();
//! root.write_atomic("a/b.json".as_ref(), b"{}").unwrap();
//! assert_eq!(root.read("a/b.json".as_ref()).unwrap(), b"{}");
//! assert!(root.read("../etc/passwd".as_ref()).is_err());
//! ```

// The filesystem layer: the one crate where `std::fs` is allowed (clippy.toml). Its fault
// hooks also read `DOCTOR_FAULT_AT`, `DOCTOR_FAULT_TRACE` and `DOCTOR_PAUSE_BEFORE`.
#![allow(clippy::disallowed_methods, clippy::disallowed_types)]

mod digest;
mod error;
mod fault;
mod lock;
mod problem;
// Linux's liveness backend (`engine::liveness::Liveness`): `/proc` exists there only.
#[cfg(target_os = "linux")]
pub mod procfs;
mod sys;
pub mod temp;
// macOS's liveness backend (`engine::liveness::Liveness`), and its parsing, tested everywhere.
#[cfg(target_os = "macos")]
pub mod macproc;
pub mod procargs;
// Windows's liveness backend (`engine::liveness::Liveness`).
#[cfg(windows)]
pub mod winproc;

use std::ffi::OsString;
use std::io::{Read, Write};
use std::ops::Deref;
use std::path::{Component, Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use sys::{Dir, FileOpts, Meta, MountId};

pub use digest::{hex, FileDigest, TreeDigest};
pub use error::{Error, Result};
pub use lock::{LockFile, LockGuard, LockProbe, TryLock};
pub use problem::Problem;

/// The canonical form of an absolute path (every symlink resolved), when it exists. Read-only:
/// used to compare a binding spelled through a symlink with the root's canonical anchor.
pub fn canonical_path(path: &Path) -> Option<PathBuf> {
    if !path.is_absolute() {
        return None;
    }
    std::fs::canonicalize(path).ok()
}

/// What a directory entry is, without following symlinks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum EntryKind {
    /// A regular file.
    File,
    /// A real directory.
    Dir,
    /// A symbolic link (never followed).
    Symlink,
    /// A socket, fifo, device or anything else.
    Other,
}

/// One entry of a directory listing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    /// The entry's file name (may be non-UTF-8).
    pub name: OsString,
    /// Its kind, from `lstat` semantics.
    pub kind: EntryKind,
}

/// `lstat`-like facts about one path.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Stat {
    /// What it is.
    pub kind: EntryKind,
    /// Size in bytes.
    pub len: u64,
    /// Modification time, seconds since the Unix epoch.
    pub mtime: i64,
    /// Modification time, nanoseconds since the Unix epoch (as precise as the filesystem).
    pub mtime_ns: i64,
    /// Status-change time, nanoseconds since the Unix epoch: `st_ctime` on Unix (any write,
    /// chmod, link or rename of the inode moves it, and it cannot be set back); NTFS's change
    /// time on Windows. `0` where the filesystem keeps none (FAT, exFAT).
    pub ctime_ns: i64,
    /// Who owns it.
    pub owner: Owner,
    /// Which file it is.
    pub id: FileId,
    /// Permission bits and file type bits on Unix; on Windows `0o644` (`0o444` when the file
    /// is read-only), so a rewrite that keeps a file's bits needs no OS test.
    pub mode: u32,
}

/// The identity of a file: device and inode on Unix, volume serial number and file index on
/// Windows (the scheme std's `remove_dir_all` checks against). Two stats of the same file
/// give equal ids; the parts are only for records that must survive the process.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct FileId {
    volume: u64,
    index: u64,
}

impl FileId {
    /// The id recorded as [`FileId::volume`] and [`FileId::index`].
    pub fn from_parts(volume: u64, index: u64) -> FileId {
        FileId { volume, index }
    }
    /// The device (Unix) or volume serial number (Windows).
    pub fn volume(&self) -> u64 {
        self.volume
    }
    /// The inode (Unix) or file index (Windows).
    pub fn index(&self) -> u64 {
        self.index
    }
}

/// Who owns a file or runs a process: a user id on Unix; a security identifier (SID) on
/// Windows, where a file's owner is read only when asked ([`Root::owner`]), so a [`Stat`]
/// there says unknown.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct Owner(OwnerId);

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
enum OwnerId {
    #[default]
    Unknown,
    Uid(u32),
    /// A SID's binary form, at most [`SID_MAX`] bytes.
    Sid(u8, [u8; SID_MAX]),
}

/// The longest SID (`SECURITY_MAX_SID_SIZE`).
const SID_MAX: usize = 68;

impl Owner {
    /// The owner with Unix user id `uid`.
    pub fn uid(uid: u32) -> Owner {
        Owner(OwnerId::Uid(uid))
    }
    /// The owner with the Windows SID whose binary form is `sid`; unknown when `sid` is longer
    /// than a SID can be.
    pub fn sid(sid: &[u8]) -> Owner {
        if sid.len() > SID_MAX {
            return Owner::unknown();
        }
        let mut bytes = [0; SID_MAX];
        bytes[..sid.len()].copy_from_slice(sid);
        Owner(OwnerId::Sid(sid.len() as u8, bytes))
    }
    /// An owner this OS does not tell.
    pub fn unknown() -> Owner {
        Owner(OwnerId::Unknown)
    }
    /// The Unix user id, where there is one.
    pub fn as_uid(&self) -> Option<u32> {
        match self.0 {
            OwnerId::Uid(uid) => Some(uid),
            _ => None,
        }
    }
    /// Whether the owner is known.
    pub fn is_known(&self) -> bool {
        self.0 != OwnerId::Unknown
    }
}

impl std::fmt::Display for Owner {
    /// `uid 1000`; a SID in its string form (`S-1-5-21-…`); `an unknown owner`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.0 {
            OwnerId::Unknown => f.write_str("an unknown owner"),
            OwnerId::Uid(uid) => write!(f, "uid {uid}"),
            OwnerId::Sid(len, bytes) => {
                let b = &bytes[..len as usize];
                if b.len() < 8 {
                    return f.write_str("an unreadable SID");
                }
                let authority = b[2..8].iter().fold(0u64, |a, x| a << 8 | u64::from(*x));
                write!(f, "S-{}-{authority}", b[0])?;
                for sub in b[8..].chunks_exact(4).take(b[1] as usize) {
                    write!(
                        f,
                        "-{}",
                        u32::from_le_bytes(sub.try_into().expect("4 bytes"))
                    )?;
                }
                Ok(())
            }
        }
    }
}

/// A read-only directory handle confining every access beneath its anchor.
#[derive(Debug)]
pub struct Root {
    dir: Dir,
    anchor: PathBuf,
    canonical: PathBuf,
}

/// A [`Root`] that may also write. Dereferences to [`Root`] for reading.
#[derive(Debug)]
pub struct WritableRoot {
    root: Root,
    temp_counter: AtomicU64,
}

impl Deref for WritableRoot {
    type Target = Root;
    fn deref(&self) -> &Root {
        &self.root
    }
}

/// Refuses absolute paths and `..` components; returns the path with `.` components dropped.
fn confine(rel: &Path) -> Result<PathBuf> {
    let mut out = PathBuf::new();
    for comp in rel.components() {
        match comp {
            Component::Normal(c) => out.push(c),
            Component::CurDir => {}
            Component::ParentDir | Component::RootDir | Component::Prefix(_) => {
                return Err(Error::escape(rel));
            }
        }
    }
    Ok(out)
}

/// Refuses an opened file that is not a regular file (a fifo, a device, a directory).
fn regular_file(f: std::fs::File, path: &Path) -> Result<std::fs::File> {
    match sys::file_meta(&f) {
        Ok(m) if m.is_file() => Ok(f),
        Ok(_) => Err(Error::not_a_file(path)),
        Err(e) => Err(Error::io("inspect", path, e)),
    }
}

/// Renames one name in `from` to one name in `to`, never replacing what is there; `fallback`
/// runs where the filesystem cannot rename without replacing (`RENAME_NOREPLACE` answered
/// `EINVAL`, as NFS and some FUSE servers answer).
fn rename_noreplace(
    from: &Dir,
    from_name: &std::ffi::OsStr,
    to: &Dir,
    to_name: &std::ffi::OsStr,
    fallback: impl FnOnce() -> std::io::Result<()>,
) -> std::io::Result<()> {
    // Only the rename itself is tried again: a fallback's steps are not all safe to repeat.
    match retry_transient(|| from.rename_noreplace(from_name, to, to_name)) {
        Err(e) if e.kind() == std::io::ErrorKind::Unsupported => fallback(),
        r => r,
    }
}

/// How many times a rename the OS refused for a reason that passes by itself is tried, as the
/// app's `write_atomic` tries its publish (platforms.md §6, §8.14): 6 attempts, 10·2ⁿ ms apart
/// (310 ms at most). On Unix no error is transient, so there is one attempt.
const RENAME_ATTEMPTS: u32 = 6;

/// Runs `rename` until it succeeds, fails for a lasting reason, or has been tried
/// [`RENAME_ATTEMPTS`] times. A rename refused with access denied, a sharing or a lock
/// violation (a scanner, an indexer or a reader without delete sharing holds a file for a
/// moment) did nothing, so trying it again is safe.
fn retry_transient(rename: impl FnMut() -> std::io::Result<()>) -> std::io::Result<()> {
    retry_while(sys::is_transient, rename)
}

/// Removes the directory `name` of `dir`, waiting as the transient renames do while Windows
/// says it is not empty: a file deleted in it stays until the last handle to it is closed
/// (a scan reading it, the app's or the doctor's), as std's `remove_dir_all` waits for it.
/// Removing a directory never removes what is in it, so trying again is safe; on Unix a
/// directory that is not empty is an answer.
fn remove_dir_waiting(dir: &Dir, name: &std::ffi::OsStr) -> std::io::Result<()> {
    retry_while(
        |e| sys::DELETES_CAN_PEND && e.kind() == std::io::ErrorKind::DirectoryNotEmpty,
        || dir.remove_dir(name),
    )
}

/// Runs `op` until it succeeds, fails with an error `passes` does not accept, or has been
/// tried [`RENAME_ATTEMPTS`] times, 10·2ⁿ ms apart.
fn retry_while(
    passes: impl Fn(&std::io::Error) -> bool,
    mut op: impl FnMut() -> std::io::Result<()>,
) -> std::io::Result<()> {
    let mut attempt = 1;
    loop {
        match op() {
            Err(e) if passes(&e) && attempt < RENAME_ATTEMPTS => {
                std::thread::sleep(std::time::Duration::from_millis(10 << (attempt - 1)));
                attempt += 1;
            }
            r => return r,
        }
    }
}

/// The [`Stat`] of what a backend read.
fn stat_of(m: &Meta) -> Stat {
    Stat {
        kind: m.kind,
        len: m.len,
        mtime: m.mtime,
        mtime_ns: m.mtime_ns,
        ctime_ns: m.ctime_ns,
        owner: m.owner,
        id: m.id,
        mode: m.mode,
    }
}

impl Root {
    /// Opens `anchor` (which must be an existing directory) read-only.
    pub fn open(anchor: &Path) -> Result<Root> {
        let dir = Dir::open_ambient(anchor).map_err(|e| Error::io("open directory", anchor, e))?;
        let canonical = std::fs::canonicalize(anchor).unwrap_or_else(|_| anchor.to_path_buf());
        Ok(Root {
            dir,
            anchor: anchor.to_path_buf(),
            canonical,
        })
    }

    /// The path this root was opened from, as given.
    pub fn anchor(&self) -> &Path {
        &self.anchor
    }

    /// The absolute, symlink-free path of the anchor.
    pub fn canonical_anchor(&self) -> &Path {
        &self.canonical
    }

    /// The anchor joined with `rel`, for messages.
    pub fn display_path(&self, rel: &Path) -> PathBuf {
        self.anchor.join(rel)
    }

    fn err(&self, op: &'static str, rel: &Path, e: std::io::Error) -> Error {
        Error::io(op, &self.display_path(rel), e)
    }

    /// Opens the directory `p` beneath the root, following no symlink on the way or at the
    /// end: in one call where the OS resolves beneath a handle (`openat2` on Linux), else one
    /// component at a time from the root's handle, each opened without following a link.
    /// Either way the result is the object found at that instant, and whatever is done next is
    /// done to it.
    fn open_beneath_dir(&self, p: &Path) -> std::io::Result<Dir> {
        self.dir.open_beneath_dir(p)
    }

    /// [`Root::open_beneath_dir`] for the file `p`, opened as `opts` says.
    fn open_beneath_file(&self, p: &Path, opts: &FileOpts) -> std::io::Result<std::fs::File> {
        self.dir.open_beneath_file(p, opts)
    }

    /// The error for a failed open of `p`: a symlink on the way is named as such (a second
    /// look, for the message only; nothing is acted on through it).
    /// `whole`: the path names a directory, so a symlink as its last component is one on the
    /// way too (the kernel says `ENOTDIR` for it, not `ELOOP`).
    fn open_error(&self, op: &'static str, p: &Path, e: std::io::Error, whole: bool) -> Error {
        // A directory where a file was asked for: Windows refuses the open itself (a file
        // open there never opens a directory); Unix opens it and the kind check refuses it.
        // Either way it is the same refusal.
        if !whole && e.kind() == std::io::ErrorKind::IsADirectory {
            return Error::not_a_file(&self.display_path(p));
        }
        let maybe_link =
            sys::is_link_error(&e) || (whole && e.kind() == std::io::ErrorKind::NotADirectory);
        if maybe_link {
            let mut prefix = PathBuf::new();
            let parts: Vec<_> = p.components().collect();
            let upto = if whole {
                parts.len()
            } else {
                parts.len().saturating_sub(1)
            };
            for part in parts.iter().take(upto) {
                prefix.push(part);
                if sys::walk_parent(&self.dir, &prefix)
                    .and_then(|(d, n)| d.stat(&n))
                    .is_ok_and(|m| m.kind == EntryKind::Symlink)
                {
                    return Error::SymlinkInPath {
                        path: self.display_path(&prefix),
                    };
                }
            }
        }
        self.err(op, p, e)
    }

    /// The directory at `p` (the root itself when `p` is empty), with no symlink followed.
    fn open_dir(&self, p: &Path, op: &'static str) -> Result<Dir> {
        self.open_beneath_dir(p)
            .map_err(|e| self.open_error(op, p, e, true))
    }

    /// The directory holding `p`, opened beneath the root with no symlink followed, and `p`'s
    /// final name: a directory swapped for a symlink, even one that stays inside the root, is
    /// refused.
    fn parent_handle(&self, p: &Path) -> Result<(Dir, OsString)> {
        let parent = p.parent().unwrap_or(Path::new(""));
        let name = p.file_name().ok_or_else(|| Error::escape(p))?.to_owned();
        Ok((self.open_dir(parent, "open directory")?, name))
    }

    /// The regular file at `p`, opened for reading (never blocking, no symlink followed).
    fn open_regular(&self, p: &Path, op: &'static str) -> Result<std::fs::File> {
        self.open_regular_meta(p, op).map(|(f, _)| f)
    }

    /// [`Root::open_regular`], with the metadata it checked.
    fn open_regular_meta(&self, p: &Path, op: &'static str) -> Result<(std::fs::File, Meta)> {
        let f = self
            .open_beneath_file(p, &FileOpts::read())
            .map_err(|e| self.open_error(op, p, e, false))?;
        let m = sys::file_meta(&f).map_err(|e| self.err(op, p, e))?;
        if !m.is_file() {
            return Err(Error::not_a_file(&self.display_path(p)));
        }
        Ok((f, m))
    }

    /// Reads the opened file whose metadata said `len` bytes: the buffer is reserved from that
    /// (an allocation that cannot be had is an error, never an abort) and reading stops once
    /// `len` bytes are in, or at the end if it shrank: bytes appended after the `fstat` are
    /// not read, so the result is the file as it was at that instant, for the cost of one
    /// `read` call. A file that reports no size (as some special filesystems do) is read to
    /// its end.
    fn read_opened(&self, mut f: std::fs::File, len: u64, p: &Path) -> Result<Vec<u8>> {
        let mut buf = Vec::new();
        if len == 0 {
            f.read_to_end(&mut buf)
                .map_err(|e| self.err("read", p, e))?;
            return Ok(buf);
        }
        let want = usize::try_from(len).unwrap_or(usize::MAX);
        buf.try_reserve_exact(want).map_err(|_| {
            self.err(
                "read",
                p,
                std::io::Error::from(std::io::ErrorKind::OutOfMemory),
            )
        })?;
        Read::by_ref(&mut f)
            .take(len)
            .read_to_end(&mut buf)
            .map_err(|e| self.err("read", p, e))?;
        Ok(buf)
    }

    /// Opens directory `name` of `parent` without following a link, and checks it is the
    /// directory `seen` described (same device and inode).
    pub(crate) fn open_checked(
        &self,
        parent: &Dir,
        name: &std::ffi::OsStr,
        seen: &Meta,
        at: &Path,
    ) -> Result<Dir> {
        let dir = parent
            .open_dir(name)
            .map_err(|e| self.err("open directory", at, e))?;
        let now = dir.stat_self().map_err(|e| self.err("inspect", at, e))?;
        if now.id != seen.id {
            return Err(self.err(
                "open directory",
                at,
                std::io::Error::other("it was replaced while it was being walked"),
            ));
        }
        Ok(dir)
    }

    /// The directory at `p` (beneath the root, its last component not followed), checked to
    /// be the directory `lstat` saw there.
    fn open_dir_checked(&self, p: &Path) -> Result<Dir> {
        if p.as_os_str().is_empty() {
            return self
                .dir
                .try_clone()
                .map_err(|e| self.err("open directory", p, e));
        }
        let (parent, name) = self.parent_handle(p)?;
        let meta = parent
            .stat(&name)
            .map_err(|e| self.err("list directory", p, e))?;
        if !meta.is_dir() {
            return Err(self.err(
                "list directory",
                p,
                std::io::Error::from(std::io::ErrorKind::NotADirectory),
            ));
        }
        self.open_checked(&parent, &name, &meta, p)
    }

    pub(crate) fn sorted_names(&self, dir: &Dir, at: &Path) -> Result<Vec<OsString>> {
        let mut names: Vec<OsString> = dir
            .entries()
            .map_err(|e| self.err("list directory", at, e))?
            .into_iter()
            .map(|(name, _)| name)
            .collect();
        // Popped from the back: entries go in name order.
        names.sort_by(|a, b| b.cmp(a));
        Ok(names)
    }

    /// Lists a directory, sorted by name. Symlinks are reported as such, never followed; a
    /// symlink in place of the directory, or on the way to it, is refused.
    pub fn list(&self, rel: &Path) -> Result<Vec<Entry>> {
        self.hold_dir(rel)?.list()
    }

    /// The directory at `rel`, held open: what is then listed, read or probed through it is
    /// in that directory, whatever is renamed on the way to it meanwhile. Refused as
    /// [`Root::list`] refuses.
    pub fn hold_dir(&self, rel: &Path) -> Result<HeldDir<'_>> {
        let p = confine(rel)?;
        let dir = self
            .open_beneath_dir(&p)
            .map_err(|e| self.open_error("list directory", &p, e, true))?;
        Ok(HeldDir {
            root: self,
            dir,
            rel: p,
        })
    }

    /// `lstat` of `rel`; `Ok(None)` when nothing is there. The last component is looked at
    /// relative to its parent's handle; a symlink on the way there is refused.
    /// Who owns `rel` (not following it): on Unix its stat's uid, on Windows the owner SID of
    /// its security descriptor, which a [`Stat`] there does not carry.
    pub fn owner(&self, rel: &Path) -> Result<Owner> {
        let p = confine(rel)?;
        if p.as_os_str().is_empty() {
            return Err(Error::escape(rel));
        }
        let (parent, name) = self.parent_handle(&p)?;
        parent.owner(&name).map_err(|e| self.err("inspect", &p, e))
    }

    pub fn stat(&self, rel: &Path) -> Result<Option<Stat>> {
        let p = confine(rel)?;
        let absent = |e: &std::io::Error| {
            // ENOTDIR: a component on the way is not a directory, so nothing is there.
            matches!(
                e.kind(),
                std::io::ErrorKind::NotFound | std::io::ErrorKind::NotADirectory
            )
        };
        let meta = if p.as_os_str().is_empty() {
            self.dir.stat_self()
        } else {
            let (parent, name) = match self.parent_handle(&p) {
                Ok(h) => h,
                Err(Error::Io { source, .. }) if absent(&source) => return Ok(None),
                Err(e) => return Err(e),
            };
            parent.stat(&name)
        };
        match meta {
            Ok(m) => Ok(Some(stat_of(&m))),
            Err(e) if absent(&e) => Ok(None),
            Err(e) => Err(self.err("inspect", &p, e)),
        }
    }

    /// Whether `rel` (never followed) is on another mount than its parent directory: a mount
    /// point, by mount id where the kernel gives one, else by device.
    pub fn is_mount_point(&self, rel: &Path) -> Result<bool> {
        let p = confine(rel)?;
        if p.as_os_str().is_empty() {
            return Err(Error::escape(rel));
        }
        let (parent, name) = self.parent_handle(&p)?;
        let here = parent
            .mount(&name)
            .map_err(|e| self.err("inspect", &p, e))?;
        let above = parent
            .mount_self()
            .map_err(|e| self.err("inspect", &p, e))?;
        Ok(here != above)
    }

    /// Reads a whole regular file. A symlink or a directory is refused.
    pub fn read(&self, rel: &Path) -> Result<Vec<u8>> {
        let p = confine(rel)?;
        let (f, m) = self.open_regular_meta(&p, "read")?;
        self.read_opened(f, m.len, &p)
    }

    /// [`Root::read`], with the [`Stat`] of the opened file taken before its bytes were read:
    /// a change after that instant changes the stat too (what a verdict cache keys on).
    pub fn read_with_stat(&self, rel: &Path) -> Result<(Vec<u8>, Stat)> {
        let p = confine(rel)?;
        let (f, m) = self.open_regular_meta(&p, "read")?;
        Ok((self.read_opened(f, m.len, &p)?, stat_of(&m)))
    }

    /// Reads one of the doctor's own record files (a manifest, the receipts, `last.json`, a
    /// plan file) as [`Root::read`] does, and also refuses one with other hard links: such a
    /// name may stand for a file that lives outside the root.
    pub fn read_record(&self, rel: &Path) -> Result<Vec<u8>> {
        let p = confine(rel)?;
        let (f, m) = self.open_regular_meta(&p, "read")?;
        if m.nlink > 1 {
            return Err(Error::HardLinked {
                path: self.display_path(&p),
            });
        }
        self.read_opened(f, m.len, &p)
    }

    /// Size and SHA-256 of a regular file, streamed.
    pub fn file_digest(&self, rel: &Path) -> Result<FileDigest> {
        let p = confine(rel)?;
        let f = self.open_regular(&p, "hash")?;
        digest::file_digest(f).map_err(|e| self.err("hash", &p, e))
    }

    /// A BLAKE3 digest of a directory tree: every entry's relative path, kind, size and, for
    /// files, content hash, in sorted order. Symlinks are listed with their target, not followed.
    pub fn tree_digest(&self, rel: &Path) -> Result<TreeDigest> {
        let p = confine(rel)?;
        digest::tree_digest(self, &p)
    }

    /// The digest [`Root::tree_digest`] gives one directory holding the entries of all `rels`
    /// together; an error when two of them hold the same name. A tree an entry-by-entry move
    /// split in two (a store move cut short) digests as it did whole.
    pub fn merged_tree_digest(&self, rels: &[&Path]) -> Result<TreeDigest> {
        let ps = rels
            .iter()
            .map(|r| confine(r))
            .collect::<Result<Vec<_>>>()?;
        let refs: Vec<&Path> = ps.iter().map(PathBuf::as_path).collect();
        digest::merged_tree_digest(self, &refs)
    }

    /// The digest [`Root::tree_digest`] gives the directory `rel` without its entry `name`: what
    /// it digested to before `name` was created in it (a store's owner lock file the doctor
    /// created to hold the store for its move).
    pub fn tree_digest_except(&self, rel: &Path, name: &std::ffi::OsStr) -> Result<TreeDigest> {
        let p = confine(rel)?;
        digest::merged_tree_digest_except(self, &[p.as_path()], Some(name))
    }

    /// Reads the target of a symlink (for listings only; it is never followed).
    pub fn read_link(&self, rel: &Path) -> Result<PathBuf> {
        let p = confine(rel)?;
        let (parent, name) = self.parent_handle(&p)?;
        parent
            .read_link(&name)
            .map_err(|e| self.err("read link", &p, e))
    }

    /// Whether another open file description holds the `flock` on `rel`. Creates nothing;
    /// a lock taken for the probe is released before returning.
    pub fn probe_lock(&self, rel: &Path) -> Result<LockProbe> {
        let p = confine(rel)?;
        let file = match self.open_beneath_file(&p, &FileOpts::read()) {
            Ok(f) => regular_file(f, &self.display_path(&p))?,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(LockProbe::Missing),
            Err(e) => return Err(self.open_error("probe lock", &p, e, false)),
        };
        lock::probe(&file).map_err(|e| self.err("probe lock", &p, e))
    }
}

/// A directory beneath a [`Root`], held open by [`Root::hold_dir`]. Names given to it are one
/// component each, opened relative to the held handle with no symlink followed.
pub struct HeldDir<'r> {
    root: &'r Root,
    dir: Dir,
    rel: PathBuf,
}

impl std::fmt::Debug for HeldDir<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HeldDir").field("rel", &self.rel).finish()
    }
}

impl HeldDir<'_> {
    /// The directory's path relative to the root.
    pub fn rel(&self) -> &Path {
        &self.rel
    }

    /// `name` as one component, or the escape error naming it.
    fn child(&self, name: &std::ffi::OsStr) -> Result<PathBuf> {
        let mut comps = Path::new(name).components();
        match (comps.next(), comps.next()) {
            (Some(Component::Normal(_)), None) => Ok(self.rel.join(name)),
            _ => Err(Error::escape(&self.rel.join(name))),
        }
    }

    /// The entries, sorted by name, as [`Root::list`] gives them. Lists from the start each
    /// time.
    pub fn list(&mut self) -> Result<Vec<Entry>> {
        let mut out: Vec<Entry> = self
            .dir
            .entries()
            .map_err(|e| self.root.err("list directory", &self.rel, e))?
            .into_iter()
            .map(|(name, kind)| Entry { name, kind })
            .collect();
        out.sort_by(|a, b| a.name.cmp(&b.name));
        Ok(out)
    }

    /// Reads the whole regular file `name` of this directory, as [`Root::read`] reads.
    pub fn read(&self, name: &std::ffi::OsStr) -> Result<Vec<u8>> {
        self.read_with_stat(name).map(|(bytes, _)| bytes)
    }

    /// [`HeldDir::read`], with the [`Stat`] of the opened file taken before its bytes were
    /// read, as [`Root::read_with_stat`] gives it.
    pub fn read_with_stat(&self, name: &std::ffi::OsStr) -> Result<(Vec<u8>, Stat)> {
        let p = self.child(name)?;
        let f = self
            .dir
            .open_file(name, &FileOpts::read())
            .map_err(|e| self.root.open_error("read", &p, e, false))?;
        let m = sys::file_meta(&f).map_err(|e| self.root.err("read", &p, e))?;
        if !m.is_file() {
            return Err(Error::not_a_file(&self.root.display_path(&p)));
        }
        Ok((self.root.read_opened(f, m.len, &p)?, stat_of(&m)))
    }

    /// The [`Stat`] of `name` as a read of it would meet it. On Windows the file is opened for
    /// reading, so a handle of another process without read sharing refuses it as it refuses
    /// the read (a byte-range lock does not). On Unix it is looked at, as by
    /// [`HeldDir::stat`]: a file that can no longer be opened has had its mode or ACL changed,
    /// which moves its ctime. `Ok(None)` when nothing is there; a directory or another
    /// non-file gives its own stat.
    pub fn stat_for_read(&self, name: &std::ffi::OsStr) -> Result<Option<Stat>> {
        if !cfg!(windows) {
            return self.stat(name);
        }
        let p = self.child(name)?;
        match self.dir.open_file(name, &FileOpts::read()) {
            Ok(f) => sys::file_meta(&f)
                .map(|m| Some(stat_of(&m)))
                .map_err(|e| self.root.err("inspect", &p, e)),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(self.root.err("inspect", &p, e)),
        }
    }

    /// The [`Stat`] of `name` in this directory (never followed), `Ok(None)` when nothing is
    /// there, as [`Root::stat`] gives it.
    pub fn stat(&self, name: &std::ffi::OsStr) -> Result<Option<Stat>> {
        let p = self.child(name)?;
        match self.dir.stat(name) {
            Ok(m) => Ok(Some(stat_of(&m))),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(self.root.err("inspect", &p, e)),
        }
    }

    /// [`Root::probe_lock`] of the file `name` of this directory.
    pub fn probe_lock(&self, name: &std::ffi::OsStr) -> Result<LockProbe> {
        let p = self.child(name)?;
        let fd = match self.dir.open_file(name, &FileOpts::read()) {
            Ok(f) => regular_file(f, &self.root.display_path(&p))?,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(LockProbe::Missing),
            Err(e) => return Err(self.root.open_error("probe lock", &p, e, false)),
        };
        lock::probe(&fd).map_err(|e| self.root.err("probe lock", &p, e))
    }
}

impl WritableRoot {
    /// The first entry of the tree at `rel` (`rel` itself included, in no set order) that
    /// another process holds so that it cannot be deleted, relative to the root: on Windows one
    /// held open without `FILE_SHARE_DELETE` (a file Go has open, a process's working
    /// directory), found by opening each entry for deletion and closing it again; `None` when
    /// there is none, and always on Unix, where no open blocks a delete. Nothing is changed;
    /// an entry gone during the walk is passed over. The walk never follows a link.
    pub fn held_open(&self, rel: &Path) -> Result<Option<PathBuf>> {
        if !sys::DELETE_CAN_BE_REFUSED {
            return Ok(None);
        }
        let p = confine(rel)?;
        if p.as_os_str().is_empty() {
            return Err(Error::escape(rel));
        }
        let (parent, name) = self.parent_handle(&p)?;
        let is_dir = match parent.stat(&name) {
            Ok(m) => m.is_dir(),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(self.err("inspect", &p, e)),
        };
        let gone = |e: &std::io::Error| e.kind() == std::io::ErrorKind::NotFound;
        match parent.delete_refused(&name, is_dir) {
            Ok(true) => return Ok(Some(p)),
            Ok(false) => {}
            Err(e) if gone(&e) => return Ok(None),
            Err(e) => return Err(self.err("inspect", &p, e)),
        }
        if !is_dir {
            return Ok(None);
        }
        let mut stack = vec![(
            parent
                .open_dir(&name)
                .map_err(|e| self.err("open directory", &p, e))?,
            p,
        )];
        while let Some((dir, at)) = stack.pop() {
            let entries = dir
                .entries()
                .map_err(|e| self.err("list directory", &at, e))?;
            for (name, kind) in entries {
                let child = at.join(&name);
                let is_dir = kind == EntryKind::Dir;
                match dir.delete_refused(&name, is_dir) {
                    Ok(true) => return Ok(Some(child)),
                    Ok(false) => {}
                    Err(e) if gone(&e) => continue,
                    Err(e) => return Err(self.err("inspect", &child, e)),
                }
                if is_dir {
                    match dir.open_dir(&name) {
                        Ok(d) => stack.push((d, child)),
                        Err(e) if gone(&e) => {}
                        Err(e) => return Err(self.err("open directory", &child, e)),
                    }
                }
            }
        }
        Ok(None)
    }

    /// Opens `anchor` (an existing directory) for reading and writing.
    pub fn open(anchor: &Path) -> Result<WritableRoot> {
        Ok(WritableRoot {
            root: Root::open(anchor)?,
            temp_counter: AtomicU64::new(0),
        })
    }

    /// Creates `rel` and its missing parents as directories.
    pub fn create_dir_all(&self, rel: &Path) -> Result<()> {
        self.dir_all(&confine(rel)?).map(drop)
    }

    /// The directory `p`, created with its missing parents: one component at a time from the
    /// root's handle, each opened without following a link (a symlink on the way is refused,
    /// even one that stays inside the root), each creation one counted mutation.
    fn dir_all(&self, p: &Path) -> Result<Dir> {
        let mut dir = self
            .dir
            .try_clone()
            .map_err(|e| self.err("open directory", Path::new(""), e))?;
        let mut at = PathBuf::new();
        for part in p.components() {
            at.push(part);
            let name = part.as_os_str();
            let opened = match dir.open_dir(name) {
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                    match fault::mutation("create directory", &at, || dir.create_dir(name)) {
                        Ok(()) => {}
                        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
                        // Named as asked: the directory the caller needed.
                        Err(e) => return Err(self.err("create directory", p, e)),
                    }
                    dir.open_dir(name)
                }
                r => r,
            };
            dir = match opened {
                Ok(d) => d,
                Err(e) => {
                    let is_link = dir.stat(name).is_ok_and(|m| m.kind == EntryKind::Symlink);
                    return Err(if is_link {
                        Error::SymlinkInPath {
                            path: self.display_path(&at),
                        }
                    } else {
                        self.err("open directory", &at, e)
                    });
                }
            };
        }
        Ok(dir)
    }

    /// fsyncs the held directory `dir` (at `p`): one counted mutation.
    fn sync_dir(&self, dir: &Dir, p: &Path) -> Result<()> {
        fault::mutation("sync directory", p, || dir.sync())
            .map_err(|e| self.err("sync directory", p, e))
    }

    /// The one atomic write: a temporary file in the same directory, written and fsynced,
    /// renamed over `rel`, then the directory fsynced. Parents are created as needed. The file
    /// gets mode 0644 (the doctor's own records); see [`WritableRoot::write_atomic_mode`].
    pub fn write_atomic(&self, rel: &Path, bytes: &[u8]) -> Result<()> {
        self.write_atomic_inner(rel, bytes, None)
    }

    /// [`WritableRoot::write_atomic`] with the permission bits `mode`: a file written from
    /// another (a rewrite, a copy, a recovered document) keeps that file's bits, so a private
    /// record never becomes readable by others.
    pub fn write_atomic_mode(&self, rel: &Path, bytes: &[u8], mode: u32) -> Result<()> {
        self.write_atomic_inner(rel, bytes, Some(mode & 0o777))
    }

    /// The atomic write: with `Some(mode)` the file gets exactly those bits; with `None`, 0644
    /// as the umask leaves it (the doctor's own records).
    fn write_atomic_inner(&self, rel: &Path, bytes: &[u8], exact: Option<u32>) -> Result<()> {
        self.write_through_temp(rel, bytes, exact, true)
    }

    /// Creates the new file `rel` atomically with `bytes` and permission bits `mode`, never
    /// replacing anything: a temporary file in the same directory is renamed into place with
    /// `renameat2(RENAME_NOREPLACE)`, relative to the held parent directory. When something
    /// appeared at `rel` in the meantime, nothing is replaced, the temporary file is removed,
    /// and the error is [`Error::Occupied`].
    pub fn create_atomic(&self, rel: &Path, bytes: &[u8], mode: u32) -> Result<()> {
        self.write_through_temp(rel, bytes, Some(mode & 0o777), false)
    }

    /// Writes `bytes` to a temporary file next to `rel` (fsynced, with exactly the bits `exact`
    /// when given), then renames it to `rel` (over what is there when `replace`, else never
    /// replacing), then fsyncs the directory. Parents are created; the parent is opened one
    /// component at a time without following a link, and both the create and the rename name
    /// one entry of that held directory.
    fn write_through_temp(
        &self,
        rel: &Path,
        bytes: &[u8],
        exact: Option<u32>,
        replace: bool,
    ) -> Result<()> {
        let p = confine(rel)?;
        let parent = p.parent().unwrap_or(Path::new("")).to_path_buf();
        let name = p.file_name().ok_or_else(|| Error::escape(rel))?.to_owned();
        let dir = self.dir_all(&parent)?;
        let n = self.temp_counter.fetch_add(1, Ordering::Relaxed);
        let tmp_name = temp::name(&name, std::process::id(), n);
        let tmp = parent.join(&tmp_name);
        let opts = FileOpts {
            write: true,
            create_new: true,
            mode: exact.unwrap_or(0o644),
            ..FileOpts::default()
        };
        // Set once the temporary file is ours: only then is it removed on failure (a file
        // already at that name is someone else's).
        let mut created = false;
        let result = (|| {
            let mut f = fault::mutation("create", &tmp, || dir.open_file(&tmp_name, &opts))
                .map_err(|e| self.err("create", &tmp, e))?;
            created = true;
            if let Some(mode) = exact {
                // The umask may have cleared bits of `mode`; the file gets exactly `mode`.
                fault::mutation("set permissions of", &tmp, || sys::set_mode(&f, mode))
                    .map_err(|e| self.err("set permissions of", &tmp, e))?;
            }
            fault::mutation("write", &tmp, || f.write_all(bytes))
                .map_err(|e| self.err("write", &tmp, e))?;
            fault::mutation("sync", &tmp, || f.sync_all())
                .map_err(|e| self.err("sync", &tmp, e))?;
            drop(f);
            if replace {
                return fault::mutation("rename into place", &p, || {
                    retry_transient(|| dir.rename_replace(&tmp_name, &dir, &name))
                })
                .map_err(|e| self.err("rename into place", &p, e));
            }
            fault::mutation("create in place", &p, || {
                rename_noreplace(&dir, &tmp_name, &dir, &name, || {
                    // Where the filesystem has no `RENAME_NOREPLACE`: a hard link also fails on
                    // an existing name; then the temporary name goes.
                    dir.hard_link(&tmp_name, &dir, &name)?;
                    fault::mutation("delete", &tmp, || dir.remove_file(&tmp_name))
                })
            })
            .map_err(|e| {
                if e.kind() == std::io::ErrorKind::AlreadyExists {
                    Error::occupied(&self.display_path(&p))
                } else {
                    self.err("create in place", &p, e)
                }
            })
        })();
        if result.is_err() {
            if created {
                // A temporary file this cannot remove is left for the next run's removal of
                // interrupted writes; the error reported is the one that failed the write.
                let _ = fault::mutation("delete", &tmp, || dir.remove_file(&tmp_name));
            }
            return result;
        }
        self.sync_dir(&dir, &parent)
    }

    /// Appends `bytes` to `rel` (created with mode 0644 if missing) and fsyncs it. Used for the
    /// append-only line logs (manifests, receipts, the app's `session-unbind-receipts.jsonl`).
    /// The open never blocks (`O_NONBLOCK`: a fifo there cannot hang the run) and never follows
    /// a symlink; anything but a regular file with a single link is refused, naming the path, so
    /// a hard link cannot carry the records out of the root.
    ///
    /// Never glues onto a torn line: when the file does not end with a newline (a writer died
    /// mid-line, or a write was cut short by `ENOSPC` or `EFBIG`), a `\n` goes first, in the same
    /// write, so the torn line stays one line of its own and `bytes` start a line. A write cut
    /// short here leaves a torn line that the next append terminates the same way.
    pub fn append(&self, rel: &Path, bytes: &[u8]) -> Result<()> {
        let p = confine(rel)?;
        let mut f = self.open_log(&p, true)?;
        let torn = match sys::file_meta(&f)
            .map_err(|e| self.err("append", &p, e))?
            .len
        {
            0 => false,
            len => {
                let mut last = [0u8; 1];
                let n =
                    sys::read_at(&f, &mut last, len - 1).map_err(|e| self.err("append", &p, e))?;
                n == 1 && last[0] != b'\n'
            }
        };
        let line: std::borrow::Cow<'_, [u8]> = if torn {
            [b"\n".as_slice(), bytes].concat().into()
        } else {
            bytes.into()
        };
        fault::mutation("append", &p, || f.write_all(&line))
            .map_err(|e| self.err("append", &p, e))?;
        fault::mutation("sync", &p, || f.sync_all()).map_err(|e| self.err("sync", &p, e))
    }

    /// Whether `rel` could be appended to now, without writing: it is opened for appending as
    /// [`WritableRoot::append`] opens it (the same refusals), so an immutable file, a read-only
    /// mount or a file the process may not write is an error naming the path. A missing file
    /// is fine (the append creates it). What only a write can tell (`ENOSPC`, `EFBIG`) is not
    /// known here.
    pub fn check_appendable(&self, rel: &Path) -> Result<()> {
        let p = confine(rel)?;
        match self.open_log(&p, false) {
            Err(e) if e.is_not_found() => Ok(()),
            other => other.map(drop),
        }
    }

    /// Opens the line log `p` (confined) for reading and appending, created with mode 0644 (and
    /// its missing parents) when `create`: never through a symlink, never blocking, and only a
    /// regular file with a single link.
    fn open_log(&self, p: &Path, create: bool) -> Result<std::fs::File> {
        let name = p.file_name().ok_or_else(|| Error::escape(p))?;
        let parent = p.parent().unwrap_or(Path::new(""));
        let dir = if create {
            self.dir_all(parent)?
        } else {
            self.open_dir(parent, "open directory")?
        };
        let opts = FileOpts {
            append: true,
            create,
            mode: 0o644,
            ..FileOpts::default()
        };
        let f = dir
            .open_file(name, &opts)
            .map_err(|e| self.err("append", p, e))?;
        let meta = sys::file_meta(&f).map_err(|e| self.err("append", p, e))?;
        if !meta.is_file() {
            return Err(Error::not_a_file(&self.display_path(p)));
        }
        if meta.nlink > 1 {
            return Err(Error::HardLinked {
                path: self.display_path(p),
            });
        }
        Ok(f)
    }

    /// The one move seam: renames `from` to `to` (both beneath the root). Refuses when `to`
    /// already exists, also when it appears between the check and the rename
    /// (`renameat2(RENAME_NOREPLACE)`); creates the parents of `to`; fsyncs both parent
    /// directories.
    pub fn move_item(&self, from: &Path, to: &Path) -> Result<()> {
        let f = confine(from)?;
        let t = confine(to)?;
        let to_name = t.file_name().ok_or_else(|| Error::escape(to))?;
        let to_parent = t.parent().unwrap_or(Path::new(""));
        // Both parents are held directory handles, opened with no symlink followed, and the
        // rename names one entry in each: nothing on the way is resolved again.
        let (from_dir, from_name) = self.parent_handle(&f)?;
        let to_dir = self.dir_all(to_parent)?;
        // Early and clear; `RENAME_NOREPLACE` below is the guard (and, where a filesystem
        // lacks it, this check is).
        match to_dir.stat(to_name) {
            Ok(_) => return Err(Error::occupied(&self.display_path(&t))),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(self.err("inspect", &t, e)),
        }
        fault::mutation("move", &f, || {
            rename_noreplace(&from_dir, &from_name, &to_dir, to_name, || {
                // Where the filesystem has no `RENAME_NOREPLACE`: the check above stands.
                from_dir.rename_replace(&from_name, &to_dir, to_name)
            })
        })
        .map_err(|e| {
            if e.kind() == std::io::ErrorKind::AlreadyExists {
                Error::occupied(&self.display_path(&t))
            } else {
                self.err("move", &f, e)
            }
        })?;
        // The rename is done: a failed fsync after it is reported, but the item has moved.
        self.sync_dir(&to_dir, to_parent)?;
        self.sync_dir(&from_dir, f.parent().unwrap_or(Path::new("")))
    }

    /// Removes the regular file `rel` (one unlink relative to its held parent, which the kernel
    /// refuses for a directory) and returns its size; `Ok(0)` when nothing is there. Anything
    /// but a regular file is refused, naming the path: a directory swapped in at a temporary
    /// file's name is never deleted.
    pub fn remove_file(&self, rel: &Path) -> Result<u64> {
        let p = confine(rel)?;
        let (parent, name) = self.parent_handle(&p)?;
        let meta = match parent.stat(&name) {
            Ok(m) => m,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(0),
            Err(e) => return Err(self.err("inspect", &p, e)),
        };
        if !meta.is_file() {
            return Err(Error::not_a_file(&self.display_path(&p)));
        }
        fault::mutation("delete", &p, || parent.remove_file(&name))
            .map_err(|e| self.err("delete", &p, e))?;
        Ok(meta.len)
    }

    /// The one delete seam: removes the tree at `rel` (a directory, file or symlink) without
    /// ever following a symlink (a link inside is removed, its target is left intact), and
    /// returns the bytes of the regular files it removed. Each unlink is one counted mutation;
    /// a removal cut short leaves a smaller tree that a later call finishes.
    ///
    /// The walk acts on held directory handles: each directory is opened by name from its
    /// parent's handle without following links, checked to be the directory that was looked at
    /// (device and inode), and its entries are unlinked relative to that handle, so a directory
    /// swapped for a symlink mid-walk is never followed and no path is walked twice (the cost
    /// is linear in the entries, at any depth). A mount inside the tree is never crossed: the
    /// removal stops there with an error naming it; a directory that is itself a mount point
    /// (on another mount than its parent) is refused before anything is deleted.
    pub fn remove_tree(&self, rel: &Path) -> Result<u64> {
        let p = confine(rel)?;
        if p.as_os_str().is_empty() {
            return Err(Error::escape(rel));
        }
        let (parent, name) = self.parent_handle(&p)?;
        let meta = match parent.stat(&name) {
            Ok(m) => m,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(0),
            Err(e) => return Err(self.err("inspect", &p, e)),
        };
        if !meta.is_dir() {
            fault::mutation("delete", &p, || parent.remove_file(&name))
                .map_err(|e| self.err("delete", &p, e))?;
            return Ok(if meta.is_file() { meta.len } else { 0 });
        }
        let mount = parent
            .mount(&name)
            .map_err(|e| self.err("inspect", &p, e))?;
        let parent_mount = parent
            .mount_self()
            .map_err(|e| self.err("inspect", &p, e))?;
        if mount != parent_mount {
            return Err(self.err(
                "delete",
                &p,
                std::io::Error::other("it is a mount point, never crossed"),
            ));
        }
        let dir = self.open_checked(&parent, &name, &meta, &p)?;
        let freed = self.remove_contents(dir, &p, mount)?;
        fault::mutation("delete directory", &p, || {
            remove_dir_waiting(&parent, &name)
        })
        .map_err(|e| self.err("delete directory", &p, e))?;
        Ok(freed)
    }

    /// Empties the directory `top` (at `at`), depth first, with an explicit stack of held
    /// handles (no recursion: any depth fits).
    fn remove_contents(&self, top: Dir, at: &Path, mount: MountId) -> Result<u64> {
        struct Frame {
            dir: Dir,
            at: PathBuf,
            name: OsString,
            names: Vec<OsString>,
        }
        let names = self.sorted_names(&top, at)?;
        let mut stack = vec![Frame {
            dir: top,
            at: at.to_path_buf(),
            name: OsString::new(),
            names,
        }];
        let mut freed = 0;
        while let Some(frame) = stack.last_mut() {
            let Some(name) = frame.names.pop() else {
                let done = stack.pop().expect("a frame is on the stack");
                if let Some(parent) = stack.last() {
                    drop(done.dir);
                    fault::mutation("delete directory", &done.at, || {
                        remove_dir_waiting(&parent.dir, &done.name)
                    })
                    .map_err(|e| self.err("delete directory", &done.at, e))?;
                }
                continue;
            };
            let child = frame.at.join(&name);
            let meta = match frame.dir.stat(&name) {
                Ok(m) => m,
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
                Err(e) => return Err(self.err("inspect", &child, e)),
            };
            if meta.is_dir() {
                let here = frame
                    .dir
                    .mount(&name)
                    .map_err(|e| self.err("inspect", &child, e))?;
                if here != mount {
                    return Err(self.err(
                        "delete",
                        &child,
                        std::io::Error::other("it is a mount point, never crossed"),
                    ));
                }
                let sub = self.open_checked(&frame.dir, &name, &meta, &child)?;
                let names = self.sorted_names(&sub, &child)?;
                stack.push(Frame {
                    dir: sub,
                    at: child,
                    name,
                    names,
                });
            } else {
                fault::mutation("delete", &child, || frame.dir.remove_file(&name))
                    .map_err(|e| self.err("delete", &child, e))?;
                if meta.is_file() {
                    freed += meta.len;
                }
            }
        }
        Ok(freed)
    }

    /// Removes `rel` if it is an empty directory. Returns `false` (and leaves it) when it is
    /// not empty.
    pub fn remove_empty_dir(&self, rel: &Path) -> Result<bool> {
        let p = confine(rel)?;
        let (parent, name) = self.parent_handle(&p)?;
        match fault::mutation("remove directory", &p, || parent.remove_dir(&name)) {
            Ok(()) => Ok(true),
            Err(e) if e.kind() == std::io::ErrorKind::DirectoryNotEmpty => Ok(false),
            Err(e) => Err(self.err("remove directory", &p, e)),
        }
    }

    /// Opens `rel` for locking without locking it yet, creating it with `mode` when `create`
    /// is set. `Ok(None)`: it does not exist (only when not asked to create it).
    pub fn open_lock_file(&self, rel: &Path, create: bool, mode: u32) -> Result<Option<LockFile>> {
        let p = confine(rel)?;
        let opts = FileOpts {
            write: create,
            create,
            mode,
            ..FileOpts::default()
        };
        match self.open_beneath_file(&p, &opts) {
            Ok(f) => Ok(Some(LockFile {
                file: regular_file(f, &self.display_path(&p))?,
                path: self.display_path(&p),
            })),
            Err(e) if !create && e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(self.open_error("lock", &p, e, false)),
        }
    }

    /// Takes the app's non-blocking exclusive lock on `rel` (`flock` on Unix, `LockFileEx` on
    /// the app's byte range on Windows), creating it with `mode` when `create` is set. The lock
    /// lasts as long as the returned guard. A file with other hard links is refused, and after
    /// locking, the locked file must still be the one at `rel` (same [`FileId`], as the app's
    /// `owner_lock_is_at_path` checks, platforms.md §8.13): one renamed away or replaced
    /// meanwhile belongs to whoever moved it, and is reported [`TryLock::Held`].
    pub fn try_lock(&self, rel: &Path, create: bool, mode: u32) -> Result<TryLock> {
        let Some(f) = self.open_lock_file(rel, create, mode)? else {
            return Ok(TryLock::Missing);
        };
        let meta = sys::file_meta(&f.file).map_err(|e| self.err("lock", rel, e))?;
        if meta.nlink > 1 {
            return Err(Error::HardLinked {
                path: self.display_path(rel),
            });
        }
        match f.try_lock()? {
            TryLock::Acquired(g) => match self.stat(rel)? {
                Some(now) if now.id == meta.id => Ok(TryLock::Acquired(g)),
                _ => Ok(TryLock::Held),
            },
            other => Ok(other),
        }
    }
}

/// Reads a file outside any store (a plan file named on the command line) through a root
/// opened at its parent directory.
pub fn read_standalone_file(path: &Path) -> Result<Vec<u8>> {
    let (parent, name) = split_file_path(path)?;
    Root::open(&parent)?.read_record(&name)
}

/// Writes a file outside any store (`--plan-out FILE`) atomically through a root opened at its
/// parent directory.
pub fn write_standalone_file(path: &Path, bytes: &[u8]) -> Result<()> {
    let (parent, name) = split_file_path(path)?;
    WritableRoot::open(&parent)?.write_atomic(&name, bytes)
}

/// Replaces `path`, a file outside every store that only the doctor reads back, and checks when
/// it does (the verdict cache), with the concatenation of `parts`. Its parents are created; the
/// bytes go to a temporary file beside it, named for this process and write and created new
/// (nothing already at that name is opened or removed), which is renamed over it, so a reader
/// meets the old file or the new one. Not synced, and neither a fault point nor a traced
/// mutation: it is no part of any store, and a file a crash left torn fails the reader's check.
pub fn replace_private_file(path: &Path, parts: &[&[u8]]) -> std::io::Result<()> {
    let (parent, name) = split_file_path(path).map_err(std::io::Error::other)?;
    std::fs::create_dir_all(&parent)?;
    static WRITES: AtomicU64 = AtomicU64::new(0);
    let tmp = parent.join(format!(
        ".{}.{}-{}.tmp",
        name.to_string_lossy(),
        std::process::id(),
        WRITES.fetch_add(1, Ordering::Relaxed)
    ));
    // Created new: a name already there (a link someone left) is never opened or removed.
    let f = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&tmp)?;
    let write = || -> std::io::Result<()> {
        let mut f = std::io::BufWriter::new(f);
        for part in parts {
            f.write_all(part)?;
        }
        f.into_inner().map_err(|e| e.into_error())?;
        std::fs::rename(&tmp, path)
    };
    write().inspect_err(|_| {
        let _ = std::fs::remove_file(&tmp);
    })
}

/// Appends to a file outside any store (the file `$GITHUB_STEP_SUMMARY` names) through a root
/// opened at its parent directory, creating the file when it is missing: the same refusals as
/// [`WritableRoot::append`] (a symlink, a non-regular file, a file with more than one link).
pub fn append_standalone_file(path: &Path, bytes: &[u8]) -> Result<()> {
    let (parent, name) = split_file_path(path)?;
    WritableRoot::open(&parent)?.append(&name, bytes)
}

fn split_file_path(path: &Path) -> Result<(PathBuf, PathBuf)> {
    let name = path.file_name().ok_or_else(|| Error::not_a_file(path))?;
    let parent = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    };
    Ok((parent, PathBuf::from(name)))
}

#[cfg(test)]
mod owner_tests {
    use super::Owner;

    #[test]
    fn owners_print_as_a_uid_or_a_sid_string() {
        assert_eq!(Owner::uid(1000).to_string(), "uid 1000");
        // S-1-5-18 (LocalSystem) and S-1-5-21-1-2-3-1001 in their binary form.
        assert_eq!(
            Owner::sid(&[1, 1, 0, 0, 0, 0, 0, 5, 18, 0, 0, 0]).to_string(),
            "S-1-5-18"
        );
        let user = [
            1, 5, 0, 0, 0, 0, 0, 5, 21, 0, 0, 0, 1, 0, 0, 0, 2, 0, 0, 0, 3, 0, 0, 0, 0xe9, 3, 0, 0,
        ];
        assert_eq!(Owner::sid(&user).to_string(), "S-1-5-21-1-2-3-1001");
        assert_ne!(Owner::sid(&user), Owner::sid(&user[..24]));
        assert!(!Owner::sid(&[0; 69]).is_known());
        assert_eq!(Owner::unknown().as_uid(), None);
    }
}
