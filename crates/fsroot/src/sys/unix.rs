//! The Unix backend (macOS, the BSDs, and Linux's base): a directory is a `cap-std` handle
//! (`openat` with `O_NOFOLLOW` one component at a time), entries come from `getdents` /
//! `readdir` on the handle, renames are `renameat_with(NOREPLACE)` (`renameat2` on Linux,
//! `renameatx_np(RENAME_EXCL)` on Apple), locks are `flock`. Linux's one-call resolver and
//! mount ids are hooks in `linux.rs`.

use std::ffi::{OsStr, OsString};
use std::fs::File;
use std::io;
use std::os::fd::{AsFd, BorrowedFd};
use std::os::unix::fs::{FileExt, MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};

use cap_fs_ext::{DirExt, FollowSymlinks, OpenOptionsFollowExt};
use cap_std::fs::{OpenOptions, OpenOptionsExt};
use rustix::fs::{Mode, OFlags};
use rustix::io::Errno;

use super::{FileOpts, Meta, MountId};
use crate::{EntryKind, FileId, Owner};

/// An owned directory handle (an `O_DIRECTORY` descriptor, maybe an `O_PATH` one on Linux).
#[derive(Debug)]
pub(crate) struct Dir(cap_std::fs::Dir);

/// What the type bits of `st_mode` say (`S_IFMT`, the same on every Unix).
fn kind_of_mode(mode: u32) -> EntryKind {
    match mode & 0o170_000 {
        0o120_000 => EntryKind::Symlink,
        0o040_000 => EntryKind::Dir,
        0o100_000 => EntryKind::File,
        _ => EntryKind::Other,
    }
}

/// The [`Meta`] of what `std` or `cap-std` metadata says, from the same `stat` fields.
macro_rules! meta_from {
    ($m:expr) => {{
        let m = $m;
        Meta {
            kind: kind_of_mode(m.mode()),
            len: m.size(),
            mtime: m.mtime(),
            mtime_ns: m
                .mtime()
                .saturating_mul(1_000_000_000)
                .saturating_add(m.mtime_nsec()),
            ctime_ns: m
                .ctime()
                .saturating_mul(1_000_000_000)
                .saturating_add(m.ctime_nsec()),
            nlink: m.nlink(),
            id: FileId::from_parts(m.dev(), m.ino()),
            owner: Owner::uid(m.uid()),
            mode: m.mode(),
        }
    }};
}

fn meta_of(m: &std::fs::Metadata) -> Meta {
    meta_from!(m)
}

fn cap_meta(m: &cap_std::fs::Metadata) -> Meta {
    use cap_std::fs::MetadataExt as _;
    meta_from!(m)
}

#[cfg(target_os = "linux")]
/// The `open` flags of `opts`: never following, never blocking (a fifo does not wait for a
/// writer), close-on-exec.
fn oflags(opts: &FileOpts) -> OFlags {
    let mut f = if opts.append {
        OFlags::RDWR | OFlags::APPEND
    } else if opts.write {
        OFlags::RDWR
    } else {
        OFlags::RDONLY
    };
    if opts.create_new {
        f |= OFlags::CREATE | OFlags::EXCL;
    } else if opts.create {
        f |= OFlags::CREATE;
    }
    f | OFlags::NONBLOCK | OFlags::NOFOLLOW | OFlags::CLOEXEC
}

impl Dir {
    fn fd(&self) -> BorrowedFd<'_> {
        self.0.as_fd()
    }

    /// The directory opened for reading (`.` from the handle): the handle may be an `O_PATH`
    /// one, which can be neither read nor synced.
    fn readable(&self) -> io::Result<std::os::fd::OwnedFd> {
        Ok(rustix::fs::openat(
            self.fd(),
            ".",
            OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC,
            Mode::empty(),
        )?)
    }

    pub(crate) fn open_ambient(path: &Path) -> io::Result<Dir> {
        cap_std::fs::Dir::open_ambient_dir(path, cap_std::ambient_authority()).map(Dir)
    }

    pub(crate) fn try_clone(&self) -> io::Result<Dir> {
        self.0.try_clone().map(Dir)
    }

    pub(crate) fn open_dir(&self, name: &OsStr) -> io::Result<Dir> {
        self.0.open_dir_nofollow(name).map(Dir)
    }

    pub(crate) fn open_file(&self, name: &OsStr, opts: &FileOpts) -> io::Result<File> {
        let mut o = OpenOptions::new();
        o.read(true)
            .follow(FollowSymlinks::No)
            .custom_flags(OFlags::NONBLOCK.bits() as i32);
        if opts.append {
            o.append(true);
        } else if opts.write {
            o.write(true);
        }
        if opts.create_new {
            o.create_new(true);
        } else if opts.create {
            o.create(true);
        }
        if opts.create || opts.create_new {
            o.mode(opts.mode);
        }
        self.0.open_with(name, &o).map(cap_std::fs::File::into_std)
    }

    pub(crate) fn open_beneath_dir(&self, rel: &Path) -> io::Result<Dir> {
        #[cfg(target_os = "linux")]
        if let Some(r) = super::linux::openat2(
            self.fd(),
            rel,
            OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC | OFlags::NOFOLLOW,
            Mode::empty(),
        ) {
            return r.map(|fd| Dir(cap_std::fs::Dir::from_std_file(File::from(fd))));
        }
        super::walk_beneath(self, rel)
    }

    pub(crate) fn open_beneath_file(&self, rel: &Path, opts: &FileOpts) -> io::Result<File> {
        #[cfg(target_os = "linux")]
        {
            let mode = if opts.create || opts.create_new {
                Mode::from_bits_truncate(opts.mode)
            } else {
                Mode::empty()
            };
            if let Some(r) = super::linux::openat2(self.fd(), rel, oflags(opts), mode) {
                return r.map(File::from);
            }
        }
        let (parent, name) = super::walk_parent(self, rel)?;
        parent.open_file(&name, opts)
    }

    pub(crate) fn stat(&self, name: &OsStr) -> io::Result<Meta> {
        self.0.symlink_metadata(name).map(|m| cap_meta(&m))
    }

    pub(crate) fn stat_self(&self) -> io::Result<Meta> {
        self.0.dir_metadata().map(|m| cap_meta(&m))
    }

    /// Whether another process's open makes deleting `name` fail: never on Unix.
    pub(crate) fn delete_refused(&self, _name: &OsStr, _is_dir: bool) -> io::Result<bool> {
        Ok(false)
    }

    /// Who owns `name` (not following it): its stat's uid.
    pub(crate) fn owner(&self, name: &OsStr) -> io::Result<crate::Owner> {
        self.stat(name).map(|m| m.owner)
    }

    pub(crate) fn mount(&self, name: &OsStr) -> io::Result<MountId> {
        #[cfg(target_os = "linux")]
        {
            super::linux::mount_of(self.fd(), name)
        }
        #[cfg(not(target_os = "linux"))]
        {
            self.stat(name).map(|m| MountId(m.id.volume(), 0))
        }
    }

    pub(crate) fn mount_self(&self) -> io::Result<MountId> {
        #[cfg(target_os = "linux")]
        {
            super::linux::mount_of(self.fd(), OsStr::new("."))
        }
        #[cfg(not(target_os = "linux"))]
        {
            self.stat_self().map(|m| MountId(m.id.volume(), 0))
        }
    }

    pub(crate) fn entries(&self) -> io::Result<Vec<(OsString, EntryKind)>> {
        use std::os::unix::ffi::OsStringExt;
        let fd = self.readable()?;
        let mut stream = rustix::fs::Dir::new(fd)?;
        let mut out = Vec::new();
        while let Some(ent) = stream.read() {
            let ent = ent?;
            let name = ent.file_name().to_bytes();
            if name == b"." || name == b".." {
                continue;
            }
            let kind = match ent.file_type() {
                rustix::fs::FileType::Directory => EntryKind::Dir,
                rustix::fs::FileType::RegularFile => EntryKind::File,
                rustix::fs::FileType::Symlink => EntryKind::Symlink,
                // A filesystem that does not fill `d_type`: ask for the entry's own mode.
                rustix::fs::FileType::Unknown => {
                    let st = rustix::fs::statat(
                        self.fd(),
                        ent.file_name(),
                        rustix::fs::AtFlags::SYMLINK_NOFOLLOW,
                    )?;
                    match rustix::fs::FileType::from_raw_mode(st.st_mode) {
                        rustix::fs::FileType::Directory => EntryKind::Dir,
                        rustix::fs::FileType::RegularFile => EntryKind::File,
                        rustix::fs::FileType::Symlink => EntryKind::Symlink,
                        _ => EntryKind::Other,
                    }
                }
                _ => EntryKind::Other,
            };
            out.push((OsString::from_vec(name.to_vec()), kind));
        }
        Ok(out)
    }

    pub(crate) fn create_dir(&self, name: &OsStr) -> io::Result<()> {
        self.0.create_dir(name)
    }

    /// `renameat_with(NOREPLACE)`; `Unsupported` where the filesystem lacks the flag (`EINVAL`
    /// from NFS and some FUSE servers on Linux, `ENOTSUP` on Apple).
    pub(crate) fn rename_noreplace(
        &self,
        name: &OsStr,
        to: &Dir,
        to_name: &OsStr,
    ) -> io::Result<()> {
        match rustix::fs::renameat_with(
            self.fd(),
            name,
            to.fd(),
            to_name,
            rustix::fs::RenameFlags::NOREPLACE,
        ) {
            Ok(()) => Ok(()),
            Err(Errno::INVAL | Errno::NOTSUP) => Err(io::ErrorKind::Unsupported.into()),
            Err(e) => Err(e.into()),
        }
    }

    pub(crate) fn rename_replace(&self, name: &OsStr, to: &Dir, to_name: &OsStr) -> io::Result<()> {
        self.0.rename(name, &to.0, to_name)
    }

    /// A hard link `to_name` in `to` of the entry `name` (never following it): fails on an
    /// existing name.
    pub(crate) fn hard_link(&self, name: &OsStr, to: &Dir, to_name: &OsStr) -> io::Result<()> {
        Ok(rustix::fs::linkat(
            self.fd(),
            name,
            to.fd(),
            to_name,
            rustix::fs::AtFlags::empty(),
        )?)
    }

    pub(crate) fn remove_file(&self, name: &OsStr) -> io::Result<()> {
        self.0.remove_file(name)
    }

    pub(crate) fn remove_dir(&self, name: &OsStr) -> io::Result<()> {
        self.0.remove_dir(name)
    }

    pub(crate) fn read_link(&self, name: &OsStr) -> io::Result<PathBuf> {
        self.0.read_link_contents(name)
    }

    /// fsyncs the directory.
    pub(crate) fn sync(&self) -> io::Result<()> {
        let fd = self.readable()?;
        Ok(rustix::fs::fsync(&fd)?)
    }
}

pub(crate) fn file_meta(f: &File) -> io::Result<Meta> {
    f.metadata().map(|m| meta_of(&m))
}

pub(crate) fn read_at(f: &File, buf: &mut [u8], off: u64) -> io::Result<usize> {
    f.read_at(buf, off)
}

/// `flock(LOCK_EX | LOCK_NB)`, as the app locks (platforms.md §8.8).
pub(crate) fn try_lock(f: &File) -> io::Result<bool> {
    match rustix::fs::flock(f, rustix::fs::FlockOperation::NonBlockingLockExclusive) {
        Ok(()) => Ok(true),
        Err(Errno::WOULDBLOCK) => Ok(false),
        Err(e) => Err(e.into()),
    }
}

pub(crate) fn unlock(f: &File) -> io::Result<()> {
    Ok(rustix::fs::flock(f, rustix::fs::FlockOperation::Unlock)?)
}

/// `ELOOP`: the last component was a symlink that `O_NOFOLLOW` (or `RESOLVE_NO_SYMLINKS`)
/// refused.
pub(crate) fn is_link_error(e: &io::Error) -> bool {
    e.raw_os_error() == Some(Errno::LOOP.raw_os_error())
}

/// No Unix error passes by itself (Windows' sharing violations have no counterpart).
/// No open of another process makes a delete fail on Unix.
pub(crate) const DELETE_CAN_BE_REFUSED: bool = false;

/// An unlink removes the name at once on Unix, whoever holds the file.
pub(crate) const DELETES_CAN_PEND: bool = false;

pub(crate) fn is_transient(_: &io::Error) -> bool {
    false
}

/// Gives the file exactly the permission bits `mode` (the umask may have cleared some).
pub(crate) fn set_mode(f: &File, mode: u32) -> io::Result<()> {
    f.set_permissions(std::fs::Permissions::from_mode(mode))
}

/// Whether process `pid` exists: `/proc/<pid>` on Linux (what the sweep reads too), `kill(pid,
/// 0)` elsewhere (`EPERM`: it exists, owned by someone else).
pub(crate) fn process_alive(pid: u32) -> Option<bool> {
    #[cfg(target_os = "linux")]
    {
        Path::new(&format!("/proc/{pid}")).try_exists().ok()
    }
    #[cfg(not(target_os = "linux"))]
    {
        let pid = rustix::process::Pid::from_raw(i32::try_from(pid).ok()?)?;
        match rustix::process::test_kill_process(pid) {
            Ok(()) | Err(Errno::PERM) => Some(true),
            Err(Errno::SRCH) => Some(false),
            Err(_) => None,
        }
    }
}

/// The descriptor of a held lock (a test duplicates it to check the lock belongs to the open
/// file description).
impl AsFd for crate::LockGuard {
    fn as_fd(&self) -> BorrowedFd<'_> {
        self.file.as_fd()
    }
}
