//! Reading `/proc` through a [`Root`]: what each live process references as the kernel reports
//! it (working directory, argv, environment, open file descriptors, memory-mapped files), and
//! the invoking user's uid. Which of those name a path, and the liveness index over them, are
//! the build-dirs policy (`engine::liveness`); this module only reads.
//!
//! Processes come and go while `/proc` is read: one that vanishes mid-scan is simply not
//! counted, and an item that cannot be read (another user's `environ`, `fd/`, `maps` or `cwd`
//! give `EACCES`) is skipped and counted in [`ProcessScan::unreadable`]. Only when `/proc`
//! itself cannot be listed, or does not list this very process, is the scan an error: then
//! nothing can be known to be unreferenced.

use std::ffi::{OsStr, OsString};
use std::io;
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::path::{Path, PathBuf};

use crate::{Error, Result, Root};

/// What one process was seen to reference. Fields that could not be read are empty.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ProcessInfo {
    /// Process id.
    pub pid: u32,
    /// `readlink /proc/<pid>/cwd`.
    pub cwd: Option<PathBuf>,
    /// `/proc/<pid>/cmdline`, split on NUL.
    pub argv: Vec<OsString>,
    /// `/proc/<pid>/environ`, split on NUL: `KEY=value` entries.
    pub environ: Vec<OsString>,
    /// `readlink /proc/<pid>/fd/*`.
    pub fds: Vec<PathBuf>,
    /// The file paths of `/proc/<pid>/maps`.
    pub maps: Vec<PathBuf>,
}

/// Every process `/proc` listed, as far as each could be read.
#[derive(Debug, Clone, Default)]
pub struct ProcessScan {
    /// The processes read.
    pub processes: Vec<ProcessInfo>,
    /// Items (one process's `cwd`, `cmdline`, `environ`, `fd/`, `maps`) that could not be read,
    /// typically other users' processes.
    pub unreadable: u64,
}

/// A handle on `/proc`, opened as a read-only [`Root`].
#[derive(Debug)]
pub struct Procfs {
    root: Root,
}

/// What reading one item of a process gave.
enum Item<T> {
    Read(T),
    /// The process is gone (or the item does not exist for it).
    Gone,
    /// Not readable: permission denied or another error.
    Unreadable,
}

fn classify<T>(r: Result<T>) -> Item<T> {
    match r {
        Ok(v) => Item::Read(v),
        Err(e) => match e.io_error() {
            // ENOENT: gone; ESRCH: gone while reading.
            Some(io)
                if io.kind() == io::ErrorKind::NotFound
                    || io.raw_os_error() == Some(rustix::io::Errno::SRCH.raw_os_error()) =>
            {
                Item::Gone
            }
            _ => Item::Unreadable,
        },
    }
}

fn split_nul(bytes: Vec<u8>) -> Vec<OsString> {
    bytes
        .split(|b| *b == 0)
        .filter(|s| !s.is_empty())
        .map(|s| OsString::from_vec(s.to_vec()))
        .collect()
}

/// The file paths of a `maps` listing: the sixth column, when it is an absolute path.
fn map_paths(maps: &[u8]) -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = Vec::new();
    for line in maps.split(|b| *b == b'\n') {
        // address perms offset dev inode pathname; the pathname may contain spaces.
        let mut rest = line;
        for _ in 0..5 {
            let trimmed = trim_start(rest);
            let end = trimmed
                .iter()
                .position(|b| *b == b' ')
                .unwrap_or(trimmed.len());
            rest = &trimmed[end..];
        }
        let path = trim_start(rest);
        if path.starts_with(b"/") {
            let p = PathBuf::from(OsStr::from_bytes(path));
            if out.last() != Some(&p) {
                out.push(p);
            }
        }
    }
    out.sort();
    out.dedup();
    out
}

fn trim_start(b: &[u8]) -> &[u8] {
    let n = b.iter().take_while(|c| **c == b' ' || **c == b'\t').count();
    &b[n..]
}

impl Procfs {
    /// Opens `/proc`.
    pub fn open_default() -> Result<Procfs> {
        Procfs::open(Path::new("/proc"))
    }

    /// Opens a procfs mounted at `dir`.
    pub fn open(dir: &Path) -> Result<Procfs> {
        Ok(Procfs {
            root: Root::open(dir)?,
        })
    }

    /// Where it was opened.
    pub fn path(&self) -> &Path {
        self.root.anchor()
    }

    fn own_dir(&self) -> PathBuf {
        PathBuf::from(std::process::id().to_string())
    }

    /// The real uid of this process, from `/proc/<own pid>/status`: the invoking user.
    pub fn invoking_uid(&self) -> Result<u32> {
        let rel = self.own_dir().join("status");
        let status = self.root.read(&rel)?;
        String::from_utf8_lossy(&status)
            .lines()
            .find_map(|l| l.strip_prefix("Uid:"))
            .and_then(|ids| ids.split_whitespace().next())
            .and_then(|uid| uid.parse().ok())
            .ok_or_else(|| {
                Error::io(
                    "read the uid from",
                    &self.root.display_path(&rel),
                    io::Error::new(io::ErrorKind::InvalidData, "no Uid line"),
                )
            })
    }

    /// Reads every process. An error only when `/proc` cannot be listed or does not list this
    /// process; processes that vanish are left out, unreadable items are counted.
    pub fn scan(&self) -> Result<ProcessScan> {
        let entries = self.root.list(Path::new(""))?;
        let own = std::process::id();
        let mut refs = ProcessScan::default();
        let mut saw_self = false;
        for e in entries {
            let Some(pid) = e.name.to_str().and_then(|n| n.parse::<u32>().ok()) else {
                continue;
            };
            saw_self |= pid == own;
            let (info, unreadable) = self.read_process(pid);
            refs.unreadable += unreadable;
            if let Some(info) = info {
                refs.processes.push(info);
            }
        }
        if !saw_self {
            return Err(Error::io(
                "use the process list",
                self.root.anchor(),
                io::Error::other("it does not list this process, so it is not a usable procfs"),
            ));
        }
        Ok(refs)
    }

    /// One process: what could be read of it, and how many items could not be. `None` when it
    /// was gone before anything was read.
    fn read_process(&self, pid: u32) -> (Option<ProcessInfo>, u64) {
        let dir = PathBuf::from(pid.to_string());
        let mut info = ProcessInfo {
            pid,
            ..ProcessInfo::default()
        };
        let mut unreadable = 0;
        let mut read_any = false;
        macro_rules! item {
            ($read:expr) => {
                match classify($read) {
                    Item::Read(v) => {
                        read_any = true;
                        Some(v)
                    }
                    Item::Gone => None,
                    Item::Unreadable => {
                        unreadable += 1;
                        None
                    }
                }
            };
        }
        info.cwd = item!(self.root.read_link(&dir.join("cwd")));
        if let Some(b) = item!(self.root.read(&dir.join("cmdline"))) {
            info.argv = split_nul(b);
        }
        if let Some(b) = item!(self.root.read(&dir.join("environ"))) {
            info.environ = split_nul(b);
        }
        if let Some(b) = item!(self.root.read(&dir.join("maps"))) {
            info.maps = map_paths(&b);
        }
        let fd_dir = dir.join("fd");
        if let Some(fds) = item!(self.root.list(&fd_dir)) {
            for fd in fds {
                // A descriptor closed between the listing and the read is simply gone.
                if let Ok(target) = self.root.read_link(&fd_dir.join(&fd.name)) {
                    info.fds.push(target);
                }
            }
        }
        (read_any.then_some(info), unreadable)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_maps() {
        let maps = b"55d0-55d2 r--p 00000000 fd:01 123  /usr/bin/sleep\n\
7f00-7f01 r-xp 00000000 fd:01 456                        /t/go build1/x y (deleted)\n\
7f02-7f03 rw-p 00000000 00:00 0 \n\
7ffd-7ffe rw-p 00000000 00:00 0                          [stack]\n";
        assert_eq!(
            map_paths(maps),
            [
                PathBuf::from("/t/go build1/x y (deleted)"),
                PathBuf::from("/usr/bin/sleep")
            ]
        );
    }

    #[test]
    fn scans_this_process() {
        let proc = Procfs::open_default().unwrap();
        let scan = proc.scan().unwrap();
        let me = scan
            .processes
            .iter()
            .find(|p| p.pid == std::process::id())
            .expect("this process is listed");
        assert_eq!(
            me.cwd.as_deref(),
            Some(std::env::current_dir().unwrap().as_path())
        );
        assert!(!me.argv.is_empty());
        assert!(proc.invoking_uid().is_ok());
    }

    #[test]
    fn a_directory_that_is_not_procfs_is_an_error() {
        let tmp = tempfile::tempdir().unwrap();
        let err = Procfs::open(tmp.path()).unwrap().scan().unwrap_err();
        assert!(
            err.to_string().contains("does not list this process"),
            "{err}"
        );
    }
}
