//! Reading `/proc` through a [`Root`]: which live processes reference which paths (working
//! directory, argv elements, environment values, open file descriptors, memory-mapped files),
//! and the invoking user's uid. Liveness questions ("does any process reference a path at or
//! under this directory?") are answered by [`ProcessRefs`], a plain value that pure code can
//! query without touching the filesystem.
//!
//! Processes come and go while `/proc` is read: one that vanishes mid-scan is simply not
//! counted, and an item that cannot be read (another user's `environ`, `fd/`, `maps` or `cwd`
//! give `EACCES`) is skipped and counted in [`ProcessRefs::unreadable`]. Only when `/proc`
//! itself cannot be listed, or does not list this very process, is the scan an error: then
//! nothing can be known to be unreferenced.
//!
//! # Example
//!
//! ```
//! use std::path::Path;
//! use fsroot::procfs::{ProcessInfo, ProcessRefs, Via};
//!
//! let refs = ProcessRefs::from_processes([ProcessInfo {
//!     pid: 7,
//!     cwd: Some("/tmp/go-build123/b001".into()),
//!     ..ProcessInfo::default()
//! }]);
//! assert_eq!(refs.referencing(Path::new("/tmp/go-build123")).unwrap().via, Via::Cwd);
//! assert!(refs.referencing(Path::new("/tmp/go-build12")).is_none(), "matched by component");
//! ```

use std::collections::BTreeMap;
use std::ffi::{OsStr, OsString};
use std::fmt;
use std::io;
use std::ops::Bound;
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::path::{Component, Path, PathBuf};

use crate::{Error, Result, Root};

/// How a process references a path.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Via {
    /// Its working directory.
    Cwd,
    /// An argv element.
    Argv,
    /// An environment value.
    Environ,
    /// An open file descriptor's target.
    Fd,
    /// A memory-mapped file.
    Map,
}

impl fmt::Display for Via {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Via::Cwd => "cwd",
            Via::Argv => "argv",
            Via::Environ => "environment",
            Via::Fd => "open file",
            Via::Map => "mapped file",
        })
    }
}

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

/// One process's reference to a path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reference {
    /// The process.
    pub pid: u32,
    /// How it references the path.
    pub via: Via,
    /// The path referenced, absolute and lexically normalised.
    pub path: PathBuf,
}

impl fmt::Display for Reference {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "pid {} {} {}", self.pid, self.via, self.path.display())
    }
}

/// Every path some live process references, indexed for "at or under" queries.
#[derive(Debug, Clone, Default)]
pub struct ProcessRefs {
    paths: BTreeMap<PathBuf, (u32, Via)>,
    /// Processes seen.
    pub processes: u64,
    /// Items (one process's `cwd`, `cmdline`, `environ`, `fd/`, `maps`) that could not be read,
    /// typically other users' processes.
    pub unreadable: u64,
}

impl ProcessRefs {
    /// Indexes what the given processes reference.
    ///
    /// The working directory, descriptor targets and mapped files are taken as the kernel
    /// reports them. Each argv element and environment value is taken whole and split on `:`;
    /// of each part, also what follows its first `=` (`-o=/x`, `WORK=/x`) and, for a part that
    /// starts with `-`, what follows its first `/` (`-L/x`). Relative parts are resolved against
    /// the process's working directory when it is known. Every path is lexically normalised.
    pub fn from_processes(processes: impl IntoIterator<Item = ProcessInfo>) -> ProcessRefs {
        let mut refs = ProcessRefs::default();
        for p in processes {
            refs.add(p);
        }
        refs
    }

    fn insert(&mut self, path: PathBuf, pid: u32, via: Via) {
        self.paths.entry(path).or_insert((pid, via));
    }

    fn add(&mut self, p: ProcessInfo) {
        self.processes += 1;
        let cwd = p.cwd.as_deref().and_then(absolute_normal);
        if let Some(c) = &cwd {
            self.insert(c.clone(), p.pid, Via::Cwd);
        }
        for (list, via) in [(&p.fds, Via::Fd), (&p.maps, Via::Map)] {
            for path in list.iter().filter_map(|f| absolute_normal(f)) {
                self.insert(path, p.pid, via);
            }
        }
        for arg in &p.argv {
            for path in value_paths(arg.as_bytes(), cwd.as_deref()) {
                self.insert(path, p.pid, Via::Argv);
            }
        }
        for entry in &p.environ {
            let bytes = entry.as_bytes();
            let value = match bytes.iter().position(|b| *b == b'=') {
                Some(i) => &bytes[i + 1..],
                None => bytes,
            };
            for path in value_paths(value, cwd.as_deref()) {
                self.insert(path, p.pid, Via::Environ);
            }
        }
    }

    /// A reference to `dir` itself or to a path beneath it, if any process holds one.
    /// Matching is by whole path components: `/x/go-build12` does not match `/x/go-build123`.
    pub fn referencing(&self, dir: &Path) -> Option<Reference> {
        let dir = absolute_normal(dir)?;
        let (path, (pid, via)) = self
            .paths
            .range::<Path, _>((Bound::Included(dir.as_path()), Bound::Unbounded))
            .next()?;
        // Paths compare component by component, so every path beneath `dir` sorts right after
        // it: the first one at or after `dir` is beneath it, or none is.
        path.starts_with(&dir).then(|| Reference {
            pid: *pid,
            via: *via,
            path: path.clone(),
        })
    }

    /// How many distinct paths are indexed.
    pub fn len(&self) -> usize {
        self.paths.len()
    }

    /// Whether no path is indexed.
    pub fn is_empty(&self) -> bool {
        self.paths.is_empty()
    }
}

/// `p` made absolute-only and lexically normal (`.` dropped, `..` popped); `None` when relative.
fn absolute_normal(p: &Path) -> Option<PathBuf> {
    if !p.is_absolute() {
        return None;
    }
    let mut out = PathBuf::from("/");
    for c in p.components() {
        match c {
            Component::Normal(n) => out.push(n),
            Component::ParentDir => {
                out.pop();
            }
            Component::RootDir | Component::CurDir | Component::Prefix(_) => {}
        }
    }
    Some(out)
}

/// The paths an argv element or environment value names (see [`ProcessRefs::from_processes`]).
fn value_paths(value: &[u8], cwd: Option<&Path>) -> Vec<PathBuf> {
    let mut parts: Vec<&[u8]> = vec![value];
    parts.extend(value.split(|b| *b == b':'));
    let mut texts: Vec<&[u8]> = Vec::new();
    for part in parts {
        if part.is_empty() {
            continue;
        }
        texts.push(part);
        if let Some(i) = part.iter().position(|b| *b == b'=') {
            texts.push(&part[i + 1..]);
        }
        if part.starts_with(b"-") {
            if let Some(i) = part.iter().position(|b| *b == b'/') {
                texts.push(&part[i..]);
            }
        }
    }
    let mut out = Vec::new();
    for t in texts {
        if t.is_empty() {
            continue;
        }
        let p = Path::new(OsStr::from_bytes(t));
        let full = if p.is_absolute() {
            absolute_normal(p)
        } else {
            cwd.and_then(|c| absolute_normal(&c.join(p)))
        };
        out.extend(full);
    }
    out
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
            Some(io) if io.kind() == io::ErrorKind::NotFound || io.raw_os_error() == Some(3) => {
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
    pub fn scan(&self) -> Result<ProcessRefs> {
        let entries = self.root.list(Path::new(""))?;
        let own = std::process::id();
        let mut refs = ProcessRefs::default();
        let mut saw_self = false;
        for e in entries {
            let Some(pid) = e.name.to_str().and_then(|n| n.parse::<u32>().ok()) else {
                continue;
            };
            saw_self |= pid == own;
            let (info, unreadable) = self.read_process(pid);
            refs.unreadable += unreadable;
            if let Some(info) = info {
                refs.add(info);
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

    fn refs(p: ProcessInfo) -> ProcessRefs {
        ProcessRefs::from_processes([p])
    }

    fn via(r: &ProcessRefs, dir: &str) -> Option<Via> {
        r.referencing(Path::new(dir)).map(|r| r.via)
    }

    #[test]
    fn matches_by_whole_component() {
        let r = refs(ProcessInfo {
            pid: 1,
            fds: vec!["/x/go-build123/b001/a.o".into()],
            ..Default::default()
        });
        assert_eq!(via(&r, "/x/go-build123"), Some(Via::Fd));
        assert_eq!(via(&r, "/x/go-build12"), None);
        assert_eq!(via(&r, "/x/go-build1234"), None);
        assert_eq!(via(&r, "/x"), Some(Via::Fd));
        let r = refs(ProcessInfo {
            pid: 1,
            cwd: Some("/x/go-build12".into()),
            ..Default::default()
        });
        assert_eq!(
            via(&r, "/x/go-build12"),
            Some(Via::Cwd),
            "the directory itself"
        );
        assert_eq!(via(&r, "/x/go-build123"), None);
        assert_eq!(via(&r, "/x/go-build1"), None);
    }

    #[test]
    fn argv_and_environment_values_are_taken_whole_split_and_after_equals() {
        let r = refs(ProcessInfo {
            pid: 2,
            cwd: Some("/home/u/mod".into()),
            argv: vec![
                "compile".into(),
                "-trimpath=/t/go-build1/b001=>".into(),
                "-L/t/go-link-5/lib".into(),
                "../../../t/go-build9".into(),
            ],
            environ: vec![
                "PATH=/usr/bin:/t/go-build2/bin".into(),
                "WORK=/t/go-build3".into(),
                "NOPE=/t/go-build4x".into(),
                "GOFLAGS=-x".into(),
            ],
            ..Default::default()
        });
        assert_eq!(via(&r, "/t/go-build1"), Some(Via::Argv));
        assert_eq!(via(&r, "/t/go-link-5"), Some(Via::Argv));
        assert_eq!(via(&r, "/t/go-build9"), Some(Via::Argv), "relative to cwd");
        assert_eq!(via(&r, "/t/go-build2"), Some(Via::Environ), "split on ':'");
        assert_eq!(via(&r, "/t/go-build3"), Some(Via::Environ));
        assert_eq!(via(&r, "/t/go-build4"), None);
        assert_eq!(via(&r, "/t/go-build"), None);
    }

    #[test]
    fn normalises_paths_lexically() {
        let r = refs(ProcessInfo {
            pid: 3,
            maps: vec!["/t/./go-build7/../go-build8/exe/a.out (deleted)".into()],
            ..Default::default()
        });
        assert_eq!(via(&r, "/t/go-build8"), Some(Via::Map));
        assert_eq!(via(&r, "/t/go-build7"), None);
        assert_eq!(via(&r, "/t/go-build8/"), Some(Via::Map));
    }

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
        let refs = proc.scan().unwrap();
        assert!(refs.processes >= 1);
        let cwd = std::env::current_dir().unwrap();
        assert!(
            refs.referencing(&cwd).is_some(),
            "our own cwd is referenced"
        );
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
