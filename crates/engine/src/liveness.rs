//! Liveness of paths for the build-dirs pack: which paths live processes reference, read by
//! one backend per OS ([`Liveness`]: `/proc` on Linux through [`fsroot::procfs`]; on every other
//! OS none yet, so nothing is known to be unused there) and taken by the Go-aware rules of
//! `build-dirs.md` (argv and environment values split on `:`, after `=`, `-L/x`), and indexed
//! so that "does any process reference a path at or under this directory?" is one range lookup.
//! The index ([`ProcessRefs`]) is a plain value: pure code queries it without touching the
//! filesystem.
//!
//! It also judges the processes the scan could not read ([`Unseen`], docs/decisions.md "Issue
//! 21: processes the sweep cannot read"): a `/proc` that hides processes, or an unread process
//! that runs as the invoking user, a privileged one (uid 0 or capabilities, which can enter any
//! directory) or one whose owner is unknown, leaves no directory known to be unused; an unread
//! process of another, unprivileged user can use only directories that grant search permission
//! to group or others; kernel threads, zombies, and processes holding capabilities outside the
//! bounding set of the sweep and of pid 1 (outsiders of its container) are not counted against
//! any directory. An OS without a backend leaves no directory known to be unused either
//! ([`ProcessRefs::unsupported`]).
//!
//! Paths are indexed and queried in their Unicode form (a path that is not Unicode with each
//! invalid sequence replaced by U+FFFD, on both sides), so a reference is found whenever it
//! lies at or under the directory, and two such paths that differ only in their invalid bytes
//! count as the same: the lookup may spare too much, never too little.
//!
//! # Example
//!
//! ```
//! # #[cfg(target_os = "linux")] {
//! use std::path::Path;
//! use engine::liveness::{ProcessRefs, Via};
//! use fsroot::procfs::ProcessInfo;
//!
//! let refs = ProcessRefs::from_processes([ProcessInfo {
//!     pid: 7,
//!     cwd: Some("/tmp/go-build123/b001".into()),
//!     ..ProcessInfo::default()
//! }]);
//! assert_eq!(refs.referencing(Path::new("/tmp/go-build123")).unwrap().via, Via::Cwd);
//! assert!(refs.referencing(Path::new("/tmp/go-build12")).is_none(), "matched by component");
//! # }
//! ```

use std::collections::BTreeMap;
use std::fmt;
use std::ops::Bound;
use std::path::{Component, Path, PathBuf};

#[cfg(target_os = "linux")]
use fsroot::procfs::{ProcStatus, ProcessInfo, ProcessScan, Procfs, Unread};
#[cfg(windows)]
use fsroot::winproc;
use fsroot::Owner;

/// How every reason that a process the sweep could not read or see may use a directory begins.
pub const NOT_KNOWN_UNUSED: &str = "not known to be unused: ";

/// What the processes a scan could not read (or could not see) may reference.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Unseen {
    /// Why any directory of the invoking user may be in use by a process the sweep cannot read
    /// or see (a `/proc` that hides processes, the invoking user's own non-dumpable process, a
    /// privileged process of another user, a process whose owner is unknown): then none is
    /// reclaimed.
    pub anything: Option<String>,
    /// An unread process of another user without privileges (its pid and real uid): it can
    /// use only directories that grant search permission to group or others.
    pub open_dirs: Option<(u32, u32)>,
    /// Unread processes holding capabilities outside the sweep's own bounding set, where that
    /// is pid 1's (started from outside the sweep's container, as a pid namespace's outsiders
    /// are): not counted against any directory; their argv, which everyone may read, is
    /// still honoured.
    pub outside_bounding_set: u64,
    /// Unread kernel threads and exited processes not yet reaped (zombies): they reference
    /// no path of a user.
    pub kernel_threads: u64,
}

impl Unseen {
    #[cfg(target_os = "linux")]
    /// Judges the unread processes of a scan, for the invoking user `own` (in this order: no
    /// status, kernel thread or zombie, outside the container's bounding set, runs as the
    /// invoking user, privileged, another user).
    ///
    /// `init_bnd` is the bounding set of pid 1 (`None` when unknown): only a sweep whose own
    /// bounding set is that of its whole container (no service manager shrank it) can tell an
    /// outsider by its capabilities.
    pub fn judge(
        own: &ProcStatus,
        init_bnd: Option<u64>,
        unread: &[Unread],
        hidden: Option<&str>,
    ) -> Unseen {
        let me = own.uids[0];
        let mut u = Unseen {
            anything: hidden.map(|h| format!("the process table may hide processes ({h})")),
            ..Unseen::default()
        };
        let mut anything = |why: String| {
            u.anything.get_or_insert(why);
        };
        let mut open_dirs = None;
        let (mut outside_bounding_set, mut kernel_threads) = (0, 0);
        for p in unread {
            let items = p.items.join(", ");
            let Some(st) = p.status else {
                anything(format!(
                    "pid {} cannot be read ({items}), nor whom it runs as",
                    p.pid
                ));
                continue;
            };
            if st.kernel_thread || st.exited {
                kernel_threads += 1;
                continue;
            }
            // A process holding capabilities outside the sweep's bounding set, where that is
            // pid 1's (the container's), was started from outside the container: by no one
            // the sweep acts for (the bounding set is inherited and only shrinks).
            if init_bnd == Some(own.cap_bnd) && st.cap_prm & !own.cap_bnd != 0 {
                outside_bounding_set += 1;
                continue;
            }
            if st.uids.contains(&me) {
                anything(format!(
                    "pid {} runs as the invoking user (uid {me}) and its {items} cannot be read",
                    p.pid
                ));
                continue;
            }
            // Root (any of its uids 0) or a holder of capabilities enters any directory,
            // whatever its mode: it may be in any of the invoking user's.
            if st.uids.contains(&0) || st.cap_prm != 0 || st.cap_eff != 0 {
                let uid = if st.uids.contains(&0) { 0 } else { st.uids[0] };
                let caps = if st.cap_eff != 0 || st.cap_prm != 0 {
                    format!(" with capabilities {:016x}", st.cap_prm | st.cap_eff)
                } else {
                    String::new()
                };
                anything(format!(
                    "pid {} runs privileged (uid {uid}{caps}), so it can enter any directory, \
                     and its {items} cannot be read (a sweep given CAP_SYS_PTRACE and \
                     CAP_DAC_READ_SEARCH can read it)",
                    p.pid
                ));
                continue;
            }
            open_dirs.get_or_insert((p.pid, st.uids[0]));
        }
        u.open_dirs = open_dirs;
        u.outside_bounding_set = outside_bounding_set;
        u.kernel_threads = kernel_threads;
        u
    }

    /// Judges the processes a macOS scan could not read, for the invoking user `own_uid`, as
    /// on Linux: one of the invoking user's, one of root (which enters any directory) or one
    /// whose user is unknown leaves no directory known to be unused; another user's can use
    /// only directories that grant search permission to group or others.
    #[cfg(target_os = "macos")]
    pub fn judge_macos(own_uid: u32, unread: &[fsroot::macproc::Unread], kernel: u64) -> Unseen {
        let mut u = Unseen {
            kernel_threads: kernel,
            ..Unseen::default()
        };
        for p in unread {
            let items = p.items.join(", ");
            let why = match p.uids {
                None => format!(
                    "pid {} cannot be read ({items}), nor whom it runs as",
                    p.pid
                ),
                Some((r, e)) if r == own_uid || e == own_uid => format!(
                    "pid {} runs as the invoking user (uid {own_uid}) and its {items} cannot \
                     be read",
                    p.pid
                ),
                Some((r, e)) if r == 0 || e == 0 => format!(
                    "pid {} runs as root, so it can enter any directory, and its {items} cannot \
                     be read (a sweep run as root can read it)",
                    p.pid
                ),
                Some((r, _)) => {
                    u.open_dirs.get_or_insert((p.pid, r));
                    continue;
                }
            };
            u.anything.get_or_insert(why);
        }
        u
    }

    /// Judges the processes a Windows scan could not read, for the invoking user `own`: any of
    /// them leaves no directory known to be unused. One of the invoking user's may use any of
    /// its directories; one of another user (an elevated, a service's, a protected process)
    /// may be let into any directory by its access control list, which the sweep does not
    /// judge; one whose user cannot be read either is judged as both.
    #[cfg(windows)]
    pub fn judge_windows(own: &Owner, unread: &[winproc::Unread], kernel: u64) -> Unseen {
        const ITEMS: &str = "working directory, command line and environment";
        Unseen {
            anything: unread.first().map(|p| {
                let who = format!("pid {} ({})", p.pid, p.name);
                if !p.owner.is_known() {
                    format!("{who} cannot be read ({}), nor whom it runs as", p.why)
                } else if p.owner == *own {
                    format!(
                        "{who} runs as the invoking user ({own}) and its {ITEMS} cannot be read \
                         ({})",
                        p.why
                    )
                } else {
                    format!(
                        "{who} runs as {} and its {ITEMS} cannot be read ({}); another user \
                         may be let into any directory by its access control list (a sweep \
                         run elevated can read more processes)",
                        p.owner, p.why
                    )
                }
            }),
            kernel_threads: kernel,
            ..Unseen::default()
        }
    }
}

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
    /// What the processes that could not be read (or seen) may reference.
    pub unseen: Unseen,
    /// Why no process could be read at all ([`ProcessRefs::unsupported`]); `None` when a
    /// backend read them.
    pub unsupported: Option<String>,
}

impl ProcessRefs {
    /// Indexes what the given processes reference.
    ///
    /// The working directory, descriptor targets and mapped files are taken as the kernel
    /// reports them. Each argv element and environment value is taken whole and split on `:`;
    /// of each part, also what follows its first `=` (`-o=/x`, `WORK=/x`) and, for a part that
    /// starts with `-`, what follows its first `/` (`-L/x`). Relative parts are resolved against
    /// the process's working directory when it is known. Every path is lexically normalised.
    #[cfg(target_os = "linux")]
    pub fn from_processes(processes: impl IntoIterator<Item = ProcessInfo>) -> ProcessRefs {
        let mut refs = ProcessRefs::default();
        for p in processes {
            refs.add(p);
        }
        refs
    }

    /// Indexes a scan of `/proc`, keeping its count of items that could not be read and
    /// judging the processes they belong to ([`Unseen::judge`]).
    #[cfg(target_os = "linux")]
    pub fn from_scan(scan: ProcessScan) -> ProcessRefs {
        let unseen = Unseen::judge(
            &scan.own,
            scan.init_cap_bnd,
            &scan.unread,
            scan.hidden.as_deref(),
        );
        let mut refs = ProcessRefs::from_processes(scan.processes);
        refs.unreadable = scan.unreadable;
        refs.unseen = unseen;
        refs
    }

    /// Indexes a scan of Windows's processes: each one's working directory, every argument of
    /// its command line (split as `CommandLineToArgvW` splits it) and environment value, split
    /// on `;` (Windows's list separator) and at each drive (`-IC:\x`); the processes it could
    /// not read are judged by [`Unseen::judge_windows`].
    #[cfg(windows)]
    pub fn from_windows(scan: winproc::ProcessScan) -> ProcessRefs {
        let mut refs = ProcessRefs::default();
        for p in scan.processes {
            refs.processes += 1;
            let cwd = p.cwd.as_deref().and_then(absolute_normal);
            if let Some(c) = &cwd {
                refs.insert(c.clone(), p.pid, Via::Cwd);
            }
            for arg in split_command_line(&p.command_line.to_string_lossy()) {
                for path in value_paths(&arg, cwd.as_deref()) {
                    refs.insert(path, p.pid, Via::Argv);
                }
            }
            refs.add_environ(p.pid, &p.environ, cwd.as_deref());
        }
        // Three items of each: its working directory, command line and environment.
        refs.unreadable = 3 * scan.unread.len() as u64;
        refs.unseen = Unseen::judge_windows(&scan.own, &scan.unread, scan.kernel);
        refs
    }

    /// Why a directory of the invoking user with permission bits `mode` may be in use by a
    /// process the scan could not read or see, beginning with [`NOT_KNOWN_UNUSED`]; `None`
    /// when every process that could use it was read.
    pub fn unseen_user(&self, mode: u32) -> Option<String> {
        if let Some(why) = &self.unseen.anything {
            return Some(format!("{NOT_KNOWN_UNUSED}{why}"));
        }
        match self.unseen.open_dirs {
            Some((pid, uid)) if mode & 0o011 != 0 => Some(format!(
                "{NOT_KNOWN_UNUSED}pid {pid} of uid {uid} cannot be read, and the directory \
                 lets other users in (mode {:04o})",
                mode & 0o7777
            )),
            _ => None,
        }
    }

    /// The references of an OS that has no liveness backend (or of a source of liveness that
    /// cannot be read): none known, and every directory possibly in use by a process that
    /// could not be seen, for the reason `why` ([`ProcessRefs::unsupported_why`]).
    pub fn unsupported(why: &str) -> ProcessRefs {
        ProcessRefs {
            unseen: Unseen {
                anything: Some(why.to_owned()),
                ..Unseen::default()
            },
            unsupported: Some(why.to_owned()),
            ..ProcessRefs::default()
        }
    }

    /// Why liveness could not be read at all (an OS without a backend), beginning with
    /// [`NOT_KNOWN_UNUSED`]: then no directory is known to be unused, whoever owns it.
    pub fn unsupported_why(&self) -> Option<String> {
        self.unsupported
            .as_ref()
            .map(|why| format!("{NOT_KNOWN_UNUSED}{why}"))
    }

    #[cfg(any(target_os = "linux", target_os = "macos", windows))]
    fn insert(&mut self, path: PathBuf, pid: u32, via: Via) {
        self.paths.entry(key(path)).or_insert((pid, via));
    }

    #[cfg(any(target_os = "linux", target_os = "macos", windows))]
    fn add_environ(&mut self, pid: u32, environ: &[std::ffi::OsString], cwd: Option<&Path>) {
        for entry in environ {
            let entry = entry.to_string_lossy();
            let value = match entry.split_once('=') {
                Some((_, value)) => value,
                None => &entry,
            };
            for path in value_paths(value, cwd) {
                self.insert(path, pid, Via::Environ);
            }
        }
    }

    #[cfg(target_os = "linux")]
    fn add(&mut self, p: ProcessInfo) {
        let files = [(&p.fds[..], Via::Fd), (&p.maps[..], Via::Map)];
        self.add_unix(p.pid, p.cwd.as_deref(), &p.argv, &p.environ, &files);
    }

    /// One Unix process's references: its working directory and files as the kernel reports
    /// them, its argv elements and environment values as paths.
    #[cfg(any(target_os = "linux", target_os = "macos"))]
    fn add_unix(
        &mut self,
        pid: u32,
        cwd: Option<&Path>,
        argv: &[std::ffi::OsString],
        environ: &[std::ffi::OsString],
        files: &[(&[PathBuf], Via)],
    ) {
        self.processes += 1;
        let cwd = cwd.and_then(absolute_normal);
        if let Some(c) = &cwd {
            self.insert(c.clone(), pid, Via::Cwd);
        }
        for (list, via) in files {
            for path in list.iter().filter_map(|f| absolute_normal(f)) {
                self.insert(path, pid, *via);
            }
        }
        for arg in argv {
            for path in value_paths(&arg.to_string_lossy(), cwd.as_deref()) {
                self.insert(path, pid, Via::Argv);
            }
        }
        self.add_environ(pid, environ, cwd.as_deref());
    }

    /// Indexes a scan of macOS's processes (working directory, argv, environment, open files);
    /// the processes whose items could not be read are judged as on Linux, by their uids
    /// ([`Unseen::judge_macos`]).
    #[cfg(target_os = "macos")]
    pub fn from_macos(scan: fsroot::macproc::ProcessScan) -> ProcessRefs {
        let mut refs = ProcessRefs::default();
        for p in &scan.processes {
            let files = [(&p.fds[..], Via::Fd)];
            refs.add_unix(p.pid, p.cwd.as_deref(), &p.argv, &p.environ, &files);
        }
        refs.unreadable = scan.unreadable;
        refs.unseen = Unseen::judge_macos(scan.own_uid, &scan.unread, scan.kernel);
        refs
    }

    /// A reference to `dir` itself or to a path beneath it, if any process holds one.
    /// Matching is by whole path components: `/x/go-build12` does not match `/x/go-build123`;
    /// on Windows without regard to case or drive (`C:\X` is `d:\x`), which spares more,
    /// never less. The path of a reference is its indexed form (lower case on Windows).
    pub fn referencing(&self, dir: &Path) -> Option<Reference> {
        let dir = key(absolute_normal(dir)?);
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

/// Why the sweep cannot read liveness on an OS that has no backend for it yet.
pub const NO_BACKEND: &str =
    "which processes use a directory cannot be read on this OS (no liveness backend for it yet)";

/// Where the build-dirs pack reads what live processes reference: one backend per OS. Linux
/// reads `/proc`; an OS without a backend is [`Liveness::Unsupported`], whose reading knows no
/// process and leaves every directory possibly in use ([`ProcessRefs::unsupported`]), so B1
/// reclaims nothing there and says why.
#[derive(Debug)]
pub enum Liveness {
    /// `/proc`, read through [`fsroot::procfs`].
    #[cfg(target_os = "linux")]
    Procfs(Procfs),
    /// Windows's processes, read through [`fsroot::winproc`].
    #[cfg(windows)]
    Windows,
    /// macOS's processes, read through [`fsroot::macproc`].
    #[cfg(target_os = "macos")]
    Macos,
    /// No backend: why liveness cannot be read.
    Unsupported(String),
}

impl Liveness {
    /// This OS's backend: on Linux `/proc` as mounted at `proc_dir`; on Windows its process
    /// table; elsewhere [`Liveness::Unsupported`] with [`NO_BACKEND`].
    pub fn for_this_os(proc_dir: &Path) -> fsroot::Result<Liveness> {
        #[cfg(target_os = "linux")]
        return Procfs::open(proc_dir).map(Liveness::Procfs);
        #[cfg(windows)]
        {
            let _ = proc_dir;
            Ok(Liveness::Windows)
        }
        #[cfg(target_os = "macos")]
        {
            let _ = proc_dir;
            Ok(Liveness::Macos)
        }
        #[cfg(not(any(target_os = "linux", target_os = "macos", windows)))]
        {
            let _ = proc_dir;
            Ok(Liveness::unsupported(NO_BACKEND))
        }
    }

    /// A backend that cannot read liveness, for the reason `why`.
    pub fn unsupported(why: &str) -> Liveness {
        Liveness::Unsupported(why.to_owned())
    }

    /// The invoking user, as the backend reads it; `None` when it cannot tell (then no
    /// directory counts as the invoking user's).
    pub fn invoking_owner(&self) -> fsroot::Result<Option<Owner>> {
        match self {
            #[cfg(target_os = "linux")]
            Liveness::Procfs(p) => p.invoking_uid().map(|uid| Some(Owner::uid(uid))),
            #[cfg(windows)]
            Liveness::Windows => Ok(winproc::own_owner()),
            #[cfg(target_os = "macos")]
            Liveness::Macos => Ok(Some(Owner::uid(fsroot::macproc::own_uid()))),
            Liveness::Unsupported(_) => Ok(None),
        }
    }

    /// What live processes reference now.
    pub fn read(&self) -> fsroot::Result<ProcessRefs> {
        match self {
            #[cfg(target_os = "linux")]
            Liveness::Procfs(p) => p.scan().map(ProcessRefs::from_scan),
            #[cfg(windows)]
            Liveness::Windows => winproc::scan()
                .map(ProcessRefs::from_windows)
                .map_err(|e| fsroot::Error::io("read", Path::new("the process table"), e)),
            #[cfg(target_os = "macos")]
            Liveness::Macos => fsroot::macproc::scan()
                .map(ProcessRefs::from_macos)
                .map_err(|e| fsroot::Error::io("read", Path::new("the process table"), e)),
            Liveness::Unsupported(why) => Ok(ProcessRefs::unsupported(why)),
        }
    }

    /// The sources of liveness the backend reads, as the sweep's report names them.
    pub fn sources(&self) -> &'static [&'static str] {
        match self {
            #[cfg(target_os = "linux")]
            Liveness::Procfs(_) => &["cwd", "argv", "environ", "open files", "maps"],
            #[cfg(windows)]
            Liveness::Windows => &[
                "cwd",
                "command line",
                "environ",
                "files held open (checked before each deletion)",
            ],
            #[cfg(target_os = "macos")]
            Liveness::Macos => &["cwd", "argv", "environ", "open files"],
            Liveness::Unsupported(_) => &[],
        }
    }

    /// Where the backend reads from, for messages: the procfs mount, Windows's process table,
    /// or `None`.
    pub fn source(&self) -> Option<&Path> {
        match self {
            #[cfg(target_os = "linux")]
            Liveness::Procfs(p) => Some(p.path()),
            #[cfg(windows)]
            Liveness::Windows => Some(Path::new("the process table")),
            #[cfg(target_os = "macos")]
            Liveness::Macos => Some(Path::new("the process table")),
            Liveness::Unsupported(_) => None,
        }
    }
}

/// `p` made absolute-only and lexically normal (`.` dropped, `..` popped, never above the root);
/// `None` when relative. A Windows drive or share stays: the index drops it ([`key`]).
fn absolute_normal(p: &Path) -> Option<PathBuf> {
    if !p.is_absolute() {
        return None;
    }
    let mut out = PathBuf::new();
    for c in p.components() {
        match c {
            Component::Prefix(pre) => out.push(pre.as_os_str()),
            Component::RootDir => out.push(Component::RootDir.as_os_str()),
            Component::Normal(n) => out.push(n),
            Component::ParentDir => {
                if out.parent().is_some() {
                    out.pop();
                }
            }
            Component::CurDir => {}
        }
    }
    Some(out)
}

/// `p` as the index keeps it: in its Unicode form (itself when it is Unicode, else with each
/// invalid sequence replaced by U+FFFD; a separator is never part of an invalid sequence, so a
/// path at or under another stays at or under it in this form), and on Windows, whose
/// filesystems compare names without case, in lower case and without its drive or share
/// (`C:\X` and `\\?\d:\x` are one key), which spares more, never less.
fn key(p: PathBuf) -> PathBuf {
    let p = match p.to_str() {
        Some(_) => p,
        None => PathBuf::from(p.to_string_lossy().into_owned()),
    };
    if cfg!(windows) {
        let rest: PathBuf = p
            .components()
            .filter(|c| !matches!(c, Component::Prefix(_)))
            .collect();
        PathBuf::from(rest.to_string_lossy().to_lowercase())
    } else {
        p
    }
}

/// The list separator of argv and environment values: `;` on Windows (`PATH=C:\a;C:\b`),
/// `:` elsewhere.
const LIST_SEPARATOR: char = if cfg!(windows) { ';' } else { ':' };

/// The paths an argv element or environment value names (see [`ProcessRefs::from_processes`]).
#[cfg(any(target_os = "linux", target_os = "macos", windows))]
fn value_paths(value: &str, cwd: Option<&Path>) -> Vec<PathBuf> {
    let mut parts: Vec<&str> = vec![value];
    parts.extend(value.split(LIST_SEPARATOR));
    let mut texts: Vec<&str> = Vec::new();
    for part in parts {
        if part.is_empty() {
            continue;
        }
        texts.push(part);
        if let Some(i) = part.find('=') {
            texts.push(&part[i + 1..]);
        }
        if part.starts_with('-') {
            if let Some(i) = part.find('/') {
                texts.push(&part[i..]);
            }
        }
        // On Windows, from each drive on (`-IC:\x`, `/Fo:C:\x`, `@C:\rsp`).
        if cfg!(windows) {
            let b = part.as_bytes();
            for i in 1..b.len().saturating_sub(1) {
                if b[i] == b':'
                    && matches!(b[i + 1], b'\\' | b'/')
                    && b[i - 1].is_ascii_alphabetic()
                {
                    texts.push(&part[i - 1..]);
                }
            }
        }
    }
    let mut out = Vec::new();
    for t in texts {
        if t.is_empty() {
            continue;
        }
        let p = Path::new(t);
        let full = if p.is_absolute() {
            absolute_normal(p)
        } else {
            cwd.and_then(|c| absolute_normal(&c.join(p)))
        };
        out.extend(full);
    }
    out
}

/// The arguments of a Windows command line, split as `CommandLineToArgvW` splits it: the
/// program name up to a space (or within quotes, taken as is), then arguments separated by
/// spaces or tabs outside quotes, where `2n` backslashes before a quote are `n` and the quote
/// toggles quoting, `2n+1` are `n` and a literal quote, and `""` within quotes is a quote.
pub fn split_command_line(line: &str) -> Vec<String> {
    let c: Vec<char> = line.chars().collect();
    let mut args = Vec::new();
    let mut i = 0;
    let mut program = String::new();
    if c.first() == Some(&'"') {
        i = 1;
        while i < c.len() && c[i] != '"' {
            program.push(c[i]);
            i += 1;
        }
        i += 1;
    } else {
        while i < c.len() && c[i] != ' ' && c[i] != '\t' {
            program.push(c[i]);
            i += 1;
        }
    }
    args.push(program);
    loop {
        while i < c.len() && (c[i] == ' ' || c[i] == '\t') {
            i += 1;
        }
        if i >= c.len() {
            break;
        }
        let mut arg = String::new();
        let mut quoted = false;
        while i < c.len() {
            match c[i] {
                '\\' => {
                    let start = i;
                    while i < c.len() && c[i] == '\\' {
                        i += 1;
                    }
                    let n = i - start;
                    if c.get(i) == Some(&'"') {
                        arg.extend(std::iter::repeat_n('\\', n / 2));
                        if n % 2 == 1 {
                            arg.push('"');
                            i += 1;
                        }
                    } else {
                        arg.extend(std::iter::repeat_n('\\', n));
                    }
                }
                '"' if quoted && c.get(i + 1) == Some(&'"') => {
                    arg.push('"');
                    i += 2;
                }
                '"' => {
                    quoted = !quoted;
                    i += 1;
                }
                ' ' | '\t' if !quoted => break,
                ch => {
                    arg.push(ch);
                    i += 1;
                }
            }
        }
        args.push(arg);
    }
    args
}

#[cfg(test)]
mod unsupported_tests {
    use super::*;

    #[test]
    fn an_os_without_a_backend_knows_no_directory_to_be_unused() {
        let live = Liveness::unsupported(NO_BACKEND);
        assert_eq!(live.invoking_owner().unwrap(), None);
        assert_eq!(live.source(), None);
        let refs = live.read().unwrap();
        assert!(refs.is_empty());
        assert_eq!(refs.processes, 0);
        let why = format!("{NOT_KNOWN_UNUSED}{NO_BACKEND}");
        assert_eq!(refs.unsupported_why().as_deref(), Some(why.as_str()));
        // Whatever the directory's mode, it may be in use.
        for mode in [0o040700, 0o040755] {
            assert_eq!(refs.unseen_user(mode).as_deref(), Some(why.as_str()));
        }
    }

    #[test]
    fn the_backend_of_this_os() {
        let live = Liveness::for_this_os(Path::new("/proc")).unwrap();
        if cfg!(target_os = "linux") {
            assert!(matches!(live.source(), Some(p) if p == Path::new("/proc")));
            assert!(live.read().unwrap().unsupported.is_none());
        } else if cfg!(windows) {
            let refs = live.read().unwrap();
            assert!(refs.unsupported.is_none());
            assert!(refs.processes > 0);
            assert!(live.invoking_owner().unwrap().is_some_and(|o| o.is_known()));
        } else {
            assert!(live.read().unwrap().unsupported_why().is_some());
        }
    }
}

#[cfg(test)]
mod command_line_tests {
    use super::split_command_line;

    #[test]
    fn a_command_line_splits_as_windows_splits_it() {
        let cases: &[(&str, &[&str])] = &[
            (
                r#"go.exe build -o C:\t\go-build1\b001\exe"#,
                &["go.exe", "build", "-o", r"C:\t\go-build1\b001\exe"],
            ),
            (
                r#""C:\Program Files\Go\bin\go.exe" test  "-work=C:\a b" x"#,
                &[
                    r"C:\Program Files\Go\bin\go.exe",
                    "test",
                    r"-work=C:\a b",
                    "x",
                ],
            ),
            (r#"p a\\"b c" d"#, &["p", r"a\b c", "d"]),
            (r#"p a\\\"b c"#, &["p", r#"a\"b"#, "c"]),
            (r#"p a\b\ "x""y""#, &["p", r"a\b\", r#"x"y"#]),
            ("p\tq", &["p", "q"]),
            ("", &[""]),
        ];
        for (line, want) in cases {
            assert_eq!(split_command_line(line), *want, "{line}");
        }
    }
}

#[cfg(all(test, windows))]
mod windows_tests {
    use super::*;
    use fsroot::winproc::{ProcessInfo, ProcessScan, Unread};

    fn scan(processes: Vec<ProcessInfo>, unread: Vec<Unread>) -> ProcessRefs {
        ProcessRefs::from_windows(ProcessScan {
            processes,
            unread,
            kernel: 2,
            own: Owner::sid(&[1, 1, 0, 0, 0, 0, 0, 5, 7, 0, 0, 0]),
        })
    }

    fn via(r: &ProcessRefs, dir: &str) -> Option<Via> {
        r.referencing(Path::new(dir)).map(|r| r.via)
    }

    #[test]
    fn cwd_command_line_and_environment_are_indexed_without_case() {
        let r = scan(
            vec![ProcessInfo {
                pid: 9,
                name: "go.exe".into(),
                cwd: Some(r"C:\Users\U\AppData\Local\Temp\go-build1\b001\".into()),
                command_line: r#""C:\Go\bin\go.exe" build -IC:\t\go-build2\inc -o=D:/t/go-build3/x ..\..\go-build4"#.into(),
                environ: vec![
                    r"PATH=C:\Windows;C:\t\go-build5\bin".into(),
                    r"=C:=C:\t\go-build6".into(),
                    r"WORK=C:\t\go-build7x".into(),
                ],
            }],
            vec![],
        );
        assert_eq!(
            via(&r, r"c:\users\u\appdata\local\temp\go-build1"),
            Some(Via::Cwd)
        );
        assert_eq!(
            via(&r, r"C:\t\go-build2"),
            Some(Via::Argv),
            "after a drive in -I"
        );
        assert_eq!(
            via(&r, r"C:\t\go-build3"),
            Some(Via::Argv),
            "after =, any drive"
        );
        assert_eq!(
            via(&r, r"C:\Users\U\AppData\Local\Temp\go-build4"),
            Some(Via::Argv),
            "relative to the cwd"
        );
        assert_eq!(via(&r, r"C:\t\go-build5"), Some(Via::Environ), "split on ;");
        assert_eq!(
            via(&r, r"C:\t\go-build6"),
            Some(Via::Environ),
            "a drive's cwd entry"
        );
        assert_eq!(via(&r, r"C:\t\go-build7"), None, "by whole component");
        assert!(r.unseen.anything.is_none() && r.unseen_user(0).is_none());
        assert_eq!(r.unseen.kernel_threads, 2);
    }

    #[test]
    fn a_process_that_cannot_be_read_leaves_no_directory_known_unused() {
        let own = Owner::sid(&[1, 1, 0, 0, 0, 0, 0, 5, 7, 0, 0, 0]);
        let system = Owner::sid(&[1, 1, 0, 0, 0, 0, 0, 5, 18, 0, 0, 0]);
        for (owner, says) in [
            (own, "runs as the invoking user (S-1-5-7)"),
            (system, "runs as S-1-5-18"),
            (Owner::unknown(), "nor whom it runs as"),
        ] {
            let r = scan(
                vec![],
                vec![Unread {
                    pid: 600,
                    name: "svc.exe".into(),
                    why: "it cannot be opened: Access is denied. (os error 5)".into(),
                    owner,
                }],
            );
            let why = r.unseen_user(0o040700).unwrap();
            assert!(
                why.starts_with(NOT_KNOWN_UNUSED) && why.contains("pid 600 (svc.exe)"),
                "{why}"
            );
            assert!(why.contains(says), "{why}");
            assert_eq!(r.unreadable, 3);
        }
    }
}

#[cfg(all(test, target_os = "linux"))]
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
    fn an_environment_entry_counts_after_its_equals_sign_and_each_path_once() {
        let r = refs(ProcessInfo {
            pid: 4,
            cwd: Some("/w".into()),
            environ: vec!["WORK=/t/go-build3".into(), "=/t/go-build5".into()],
            ..Default::default()
        });
        assert_eq!(via(&r, "/t/go-build3"), Some(Via::Environ));
        assert_eq!(via(&r, "/t/go-build5"), Some(Via::Environ));
        // The cwd and the two values: nothing made of a key, nothing relative to the cwd.
        assert_eq!(r.len(), 3);
        assert!(!r.is_empty());
        let none = ProcessRefs::from_processes(Vec::<ProcessInfo>::new());
        assert!(none.is_empty());
        assert_eq!(none.len(), 0);
        // An argument `KEY=path` (as `env` passes one) names the path after its first `=`.
        let r = refs(ProcessInfo {
            pid: 5,
            cwd: Some("/w".into()),
            argv: vec!["env".into(), "GOTMPDIR=/t/go-build6".into()],
            ..Default::default()
        });
        assert_eq!(via(&r, "/t/go-build6"), Some(Via::Argv));
        // The cwd, each argument taken whole (relative to the cwd) and the path after `=`.
        assert_eq!(r.len(), 4);
    }

    #[test]
    fn a_path_that_is_not_unicode_is_found_under_its_directory() {
        use std::ffi::OsString;
        use std::os::unix::ffi::OsStringExt;
        let bytes = |b: &[u8]| OsString::from_vec(b.to_vec());
        let r = refs(ProcessInfo {
            pid: 3,
            argv: vec![bytes(b"-o=/x/go-build1/b\xff/a.o")],
            ..Default::default()
        });
        assert_eq!(via(&r, "/x/go-build1"), Some(Via::Argv));
        // A directory whose own path is not Unicode is found by its references, whichever
        // way they come.
        let dir = PathBuf::from(bytes(b"/x/\xfe/go-build2"));
        for p in [
            ProcessInfo {
                pid: 4,
                cwd: Some(dir.join("b001")),
                ..Default::default()
            },
            ProcessInfo {
                pid: 5,
                environ: vec![bytes(b"WORK=/x/\xfe/go-build2")],
                ..Default::default()
            },
        ] {
            assert!(refs(p.clone()).referencing(&dir).is_some(), "{p:?}");
        }
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

    fn status(uids: [u32; 4], caps: u64, bnd: u64) -> ProcStatus {
        ProcStatus {
            uids,
            cap_prm: caps,
            cap_eff: caps,
            cap_bnd: bnd,
            kernel_thread: false,
            exited: false,
        }
    }

    fn unread(pid: u32, status: Option<ProcStatus>) -> Unread {
        Unread {
            pid,
            items: vec!["cwd", "maps"],
            status,
        }
    }

    #[test]
    fn judges_the_processes_it_could_not_read() {
        const ALL: u64 = 0x1ff_ffff_ffff;
        const NO_MODULE: u64 = ALL & !(1 << 16);
        let me = status([1000; 4], 0, ALL);
        // Kernel threads do not count; another unprivileged user's process counts against
        // open directories only.
        let kthread = ProcStatus {
            kernel_thread: true,
            ..status([0; 4], ALL, ALL)
        };
        let u = Unseen::judge(
            &me,
            Some(ALL),
            &[
                unread(2, Some(kthread)),
                unread(4, Some(status([1001; 4], 0, ALL))),
                unread(5, Some(status([1002; 4], 0, ALL))),
            ],
            None,
        );
        assert_eq!(u.anything, None);
        assert_eq!((u.kernel_threads, u.outside_bounding_set), (1, 0));
        assert_eq!(u.open_dirs, Some((4, 1001)), "the first one");
        // A privileged process of another user (root's daemon, as an ordinary user sees it;
        // a holder of capabilities) can enter any directory: nothing is known unused.
        let u = Unseen::judge(
            &me,
            Some(ALL),
            &[
                unread(2, Some(kthread)),
                unread(3, Some(status([0; 4], ALL, ALL))),
            ],
            None,
        );
        assert_eq!(
            u.anything.as_deref(),
            Some(
                "pid 3 runs privileged (uid 0 with capabilities 000001ffffffffff), so it can \
                 enter any directory, and its cwd, maps cannot be read (a sweep given \
                 CAP_SYS_PTRACE and CAP_DAC_READ_SEARCH can read it)"
            )
        );
        // Unless it has exited and is not yet reaped (a zombie): it holds nothing any more.
        let zombie = ProcStatus {
            exited: true,
            ..status([0; 4], ALL, ALL)
        };
        let u = Unseen::judge(&me, Some(ALL), &[unread(3, Some(zombie))], None);
        assert_eq!((u.anything, u.kernel_threads), (None, 1));
        let u = Unseen::judge(
            &me,
            Some(ALL),
            &[unread(3, Some(status([1001, 0, 0, 0], 0, ALL)))],
            None,
        );
        assert!(u
            .anything
            .unwrap()
            .starts_with("pid 3 runs privileged (uid 0)"));
        let u = Unseen::judge(
            &me,
            Some(ALL),
            &[unread(3, Some(status([1001; 4], 1 << 1, ALL)))],
            None,
        );
        assert!(u
            .anything
            .unwrap()
            .starts_with("pid 3 runs privileged (uid 1001 with capabilities 0000000000000002)"));
        // Any uid of the invoking user's (sudo: the real one) leaves nothing known unused.
        let u = Unseen::judge(
            &me,
            Some(ALL),
            &[unread(9, Some(status([1000, 0, 0, 0], ALL, ALL)))],
            None,
        );
        assert_eq!(
            u.anything.as_deref(),
            Some("pid 9 runs as the invoking user (uid 1000) and its cwd, maps cannot be read")
        );
        let u = Unseen::judge(
            &me,
            Some(ALL),
            &[unread(9, None)],
            Some("pid 1 is not listed"),
        );
        assert_eq!(
            u.anything.as_deref(),
            Some("the process table may hide processes (pid 1 is not listed)")
        );
        let u = Unseen::judge(&me, Some(ALL), &[unread(9, None)], None);
        assert!(u.anything.unwrap().contains("nor whom it runs as"));
        // For root: a root process holding a capability outside the sweep's bounding set was
        // started by nothing the sweep acts for; one within it could be the sweep's own.
        let root = status([0; 4], NO_MODULE, NO_MODULE);
        let u = Unseen::judge(
            &root,
            Some(NO_MODULE),
            &[unread(1, Some(status([0; 4], ALL, ALL)))],
            None,
        );
        assert_eq!((u.anything, u.outside_bounding_set), (None, 1));
        let u = Unseen::judge(
            &root,
            Some(NO_MODULE),
            &[unread(1, Some(status([0; 4], NO_MODULE, ALL)))],
            None,
        );
        assert!(u.anything.is_some());
        // Nor where a service manager shrank the sweep's bounding set below pid 1's: the
        // process may be the service manager's, in the sweep's own container.
        let u = Unseen::judge(
            &root,
            Some(ALL),
            &[unread(1, Some(status([0; 4], ALL, ALL)))],
            None,
        );
        assert!(u
            .anything
            .unwrap()
            .starts_with("pid 1 runs as the invoking user (uid 0)"));
        let u = Unseen::judge(
            &root,
            None,
            &[unread(1, Some(status([0; 4], ALL, ALL)))],
            None,
        );
        assert!(u.anything.is_some(), "pid 1's bounding set unknown");
        // An ordinary user's sweep (given CAP_SYS_PTRACE, it reads root's other processes)
        // tells an outsider alike.
        let u = Unseen::judge(
            &status([1000; 4], 0, NO_MODULE),
            Some(NO_MODULE),
            &[unread(1, Some(status([0; 4], ALL, ALL)))],
            None,
        );
        assert_eq!((u.anything, u.outside_bounding_set), (None, 1));
        // Only a directory open to group or others is kept for another user's process.
        let refs = ProcessRefs {
            unseen: Unseen {
                open_dirs: Some((4, 1001)),
                ..Unseen::default()
            },
            ..ProcessRefs::default()
        };
        assert_eq!(refs.unseen_user(0o040700), None);
        assert!(refs.unseen_user(0o040750).is_some());
        assert!(refs.unseen_user(0o040701).is_some());
        assert_eq!(
            refs.unseen_user(0o040740),
            None,
            "read without search lets no one in"
        );
    }

    #[test]
    fn scans_this_process() {
        let proc = fsroot::procfs::Procfs::open_default().unwrap();
        let refs = ProcessRefs::from_scan(proc.scan().unwrap());
        assert!(refs.processes >= 1);
        let cwd = std::env::current_dir().unwrap();
        assert!(
            refs.referencing(&cwd).is_some(),
            "our own cwd is referenced"
        );
    }
}
