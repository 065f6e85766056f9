//! Reading `/proc` through a [`Root`]: what each live process references as the kernel reports
//! it (working directory, argv, environment, open file descriptors, memory-mapped files), and
//! the invoking user's uid. Which of those name a path, and the liveness index over them, are
//! the build-dirs policy (`engine::liveness`); this module only reads.
//!
//! Processes come and go while `/proc` is read: one that vanishes mid-scan is simply not
//! counted, and one whose leader exited while other threads run on is read through one of
//! them. An item that cannot be read (another user's or a non-dumpable process's `environ`,
//! `fd/`, `maps` or `cwd` give `EACCES`) is skipped, counted in [`ProcessScan::unreadable`],
//! and its process is listed in [`ProcessScan::unread`] with what its `status` and `stat`
//! say about it (uids, capabilities, kernel thread, zombie), which everyone may read, as is
//! pid 1's bounding set ([`ProcessScan::init_cap_bnd`]). A `/proc` that
//! hides processes (mounted `hidepid=`/`subset=pid`, or not listing pid 1) is noted in
//! [`ProcessScan::hidden`]. Only when `/proc` itself cannot be listed, or does not list this
//! very process, is the scan an error: then nothing can be known to be unreferenced.

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

/// Who a process runs as and what it may do, from `/proc/<pid>/status` and `stat`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ProcStatus {
    /// Real, effective, saved and filesystem uid (`Uid:`).
    pub uids: [u32; 4],
    /// Permitted capabilities (`CapPrm:`).
    pub cap_prm: u64,
    /// Effective capabilities (`CapEff:`).
    pub cap_eff: u64,
    /// The capability bounding set (`CapBnd:`).
    pub cap_bnd: u64,
    /// A kernel thread (`PF_KTHREAD` in `stat`): it has no user memory, files or working
    /// directory of its own.
    pub kernel_thread: bool,
    /// Exited (`State:` zombie or dead, its last thread: `Threads: 1`), not yet reaped: it
    /// holds no working directory, file or mapping any more.
    pub exited: bool,
}

/// A process some of whose items could not be read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unread {
    /// Process id.
    pub pid: u32,
    /// The items that could not be read: `cwd`, `cmdline`, `environ`, `maps`, `fd`.
    pub items: Vec<&'static str>,
    /// What its `status` says; `None` when that could not be read either.
    pub status: Option<ProcStatus>,
}

/// Every process `/proc` listed, as far as each could be read.
#[derive(Debug, Clone, Default)]
pub struct ProcessScan {
    /// The processes read.
    pub processes: Vec<ProcessInfo>,
    /// Items (one process's `cwd`, `cmdline`, `environ`, `fd/`, `maps`) that could not be read,
    /// typically other users' processes.
    pub unreadable: u64,
    /// The processes those items belong to, in pid order.
    pub unread: Vec<Unread>,
    /// Why this `/proc` may not list every process (`mounted with hidepid=invisible`, `pid 1
    /// is not listed`); `None` when it lists them all.
    pub hidden: Option<String>,
    /// This process's own status: the sweep's uid, capabilities and bounding set (the
    /// default when it cannot be read, which [`ProcessScan::hidden`] then says).
    pub own: ProcStatus,
    /// The bounding set of pid 1 (`CapBnd:` of its `status`, which everyone may read); `None`
    /// when it could not be read.
    pub init_cap_bnd: Option<u64>,
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

/// Parses `status` (and the `stat` flags) into a [`ProcStatus`]; `None` without its `Uid:`
/// and capability lines (a process whose privileges are unknown).
fn parse_status(status: &[u8], stat: Option<&[u8]>) -> Option<ProcStatus> {
    let text = String::from_utf8_lossy(status);
    let field = |key: &str| {
        text.lines()
            .find_map(|l| l.strip_prefix(key))
            .map(str::trim)
    };
    let mut uids = [0u32; 4];
    let mut parts = field("Uid:")?.split_whitespace();
    for u in &mut uids {
        *u = parts.next()?.parse().ok()?;
    }
    let cap = |key: &str| field(key).and_then(|v| u64::from_str_radix(v, 16).ok());
    let kernel_thread = match field("Kthread:") {
        Some(v) => v == "1",
        None => stat.is_some_and(stat_is_kernel_thread),
    };
    // A zombie leader whose other threads still run (it called `pthread_exit`) is not exited:
    // its process holds all it held.
    let exited = field("State:").is_some_and(|v| v.starts_with('Z') || v.starts_with('X'))
        && field("Threads:") == Some("1");
    Some(ProcStatus {
        uids,
        cap_prm: cap("CapPrm:")?,
        cap_eff: cap("CapEff:")?,
        cap_bnd: cap("CapBnd:")?,
        kernel_thread,
        exited,
    })
}

/// `PF_KTHREAD` in the flags of a `stat` line (the ninth field; the second, in parentheses,
/// may hold spaces).
fn stat_is_kernel_thread(stat: &[u8]) -> bool {
    const PF_KTHREAD: u64 = 0x0020_0000;
    let Some(close) = stat.iter().rposition(|b| *b == b')') else {
        return false;
    };
    String::from_utf8_lossy(&stat[close + 1..])
        .split_whitespace()
        .nth(6)
        .and_then(|f| f.parse::<u64>().ok())
        .is_some_and(|f| f & PF_KTHREAD != 0)
}

/// `\040`-style escapes of `mountinfo` undone.
fn unescape_mount_path(p: &str) -> PathBuf {
    let b = p.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'\\' && i + 4 <= b.len() {
            let digits = std::str::from_utf8(&b[i + 1..i + 4]).unwrap_or("");
            if let Ok(v) = u8::from_str_radix(digits, 8) {
                out.push(v);
                i += 4;
                continue;
            }
        }
        out.push(b[i]);
        i += 1;
    }
    PathBuf::from(OsString::from_vec(out))
}

/// Why the proc mount at `dir`, as `mountinfo` describes it, may hide processes: its options
/// hold `hidepid=` (other than `0`/`off`) or `subset=`, or it is no procfs at all. `None`
/// when it lists every process.
fn hiding_options(mountinfo: &[u8], dir: &Path) -> Option<String> {
    // The mount that holds `dir`: the last (topmost) of the longest mount points above it.
    let text = String::from_utf8_lossy(mountinfo);
    let mut best: Option<(usize, &str)> = None;
    for line in text.lines() {
        let Some(point) = line.split(' ').nth(4) else {
            continue;
        };
        let point = unescape_mount_path(point);
        if dir.starts_with(&point) {
            let depth = point.components().count();
            if best.is_none_or(|(d, _)| depth >= d) {
                best = Some((depth, line));
            }
        }
    }
    let Some((_, line)) = best else {
        return Some("no mount holds it".to_owned());
    };
    let (mount_part, super_part) = line.split_once(" - ").unwrap_or((line, ""));
    let mut sup = super_part.split(' ');
    let fstype = sup.next().unwrap_or("");
    if fstype != "proc" {
        return Some(format!("it is a {fstype} mount, not a procfs"));
    }
    let opts = mount_part
        .split(' ')
        .nth(5)
        .into_iter()
        .chain(sup.nth(1))
        .flat_map(|o| o.split(','));
    for o in opts {
        if let Some(v) = o.strip_prefix("hidepid=") {
            if v != "0" && v != "off" {
                return Some(format!("mounted with {o}"));
            }
        } else if o.starts_with("subset=") {
            return Some(format!("mounted with {o}"));
        }
    }
    None
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

    /// This process's status ([`ProcStatus`]).
    pub fn own_status(&self) -> Result<ProcStatus> {
        let rel = self.own_dir().join("status");
        let status = self.root.read(&rel)?;
        parse_status(&status, None).ok_or_else(|| {
            Error::io(
                "read the uid from",
                &self.root.display_path(&rel),
                io::Error::new(io::ErrorKind::InvalidData, "no Uid line"),
            )
        })
    }

    /// Reads every process. An error only when `/proc` cannot be listed or does not list this
    /// process; processes that vanish are left out, unreadable items are counted and their
    /// processes listed, a `/proc` that may hide processes (or whose `status` and `mountinfo`
    /// of this process cannot be read) is noted ([`ProcessScan::hidden`]).
    pub fn scan(&self) -> Result<ProcessScan> {
        let entries = self.root.list(Path::new(""))?;
        let own = std::process::id();
        let mut refs = ProcessScan::default();
        let mut saw_self = false;
        let mut saw_init = false;
        for e in entries {
            let Some(pid) = e.name.to_str().and_then(|n| n.parse::<u32>().ok()) else {
                continue;
            };
            saw_self |= pid == own;
            saw_init |= pid == 1;
            let (info, unread) = self.read_process(pid);
            if let Some(u) = unread {
                refs.unreadable += u.items.len() as u64;
                refs.unread.push(u);
            }
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
        refs.unread.sort_by_key(|u| u.pid);
        // What cannot be read of this very process leaves the table as good as hidden.
        let own_status = self.own_status();
        let mountinfo = self.root.read(&self.own_dir().join("mountinfo"));
        refs.hidden = match (&own_status, &mountinfo) {
            (Err(e), _) => Some(format!("this process's status cannot be read: {e}")),
            (_, Err(e)) => Some(format!("this process's mountinfo cannot be read: {e}")),
            (Ok(_), Ok(info)) => hiding_options(info, self.root.canonical_anchor()),
        }
        .or_else(|| (!saw_init).then(|| "pid 1 is not listed".to_owned()));
        refs.own = own_status.unwrap_or_default();
        refs.init_cap_bnd = self
            .root
            .read(Path::new("1/status"))
            .ok()
            .and_then(|s| parse_status(&s, None))
            .map(|s| s.cap_bnd);
        Ok(refs)
    }

    /// One process: what could be read of it, and what could not (with its status). `None`
    /// when it was gone before anything was read.
    fn read_process(&self, pid: u32) -> (Option<ProcessInfo>, Option<Unread>) {
        let dir = PathBuf::from(pid.to_string());
        let (info, unread, read_any, cwd_gone) = self.read_items(pid, &dir);
        // A leader that exited (`pthread_exit`) while its other threads run on has no working
        // directory, memory or descriptors of its own any more, but its process still holds
        // them: read them through one of those threads.
        let (info, unread, read_any) = match cwd_gone.then(|| self.live_thread(pid)).flatten() {
            Some(thread) => {
                let (info, unread, read_any, _) = self.read_items(pid, &thread);
                (info, unread, read_any)
            }
            None => (info, unread, read_any),
        };
        if unread.is_empty() {
            return (read_any.then_some(info), None);
        }
        let status = match classify(self.root.read(&dir.join("status"))) {
            Item::Read(s) => Some(s),
            // Gone since: it references nothing any more.
            Item::Gone => return (read_any.then_some(info), None),
            Item::Unreadable => None,
        };
        let stat = self.root.read(&dir.join("stat")).ok();
        let unread = Unread {
            pid,
            items: unread,
            status: status.and_then(|s| parse_status(&s, stat.as_deref())),
        };
        (read_any.then_some(info), Some(unread))
    }

    /// `<pid>/task/<tid>` of a thread of `pid` other than its leader, if any runs.
    fn live_thread(&self, pid: u32) -> Option<PathBuf> {
        let task = PathBuf::from(format!("{pid}/task"));
        let own = OsString::from(pid.to_string());
        let thread = self
            .root
            .list(&task)
            .ok()?
            .into_iter()
            .find(|t| t.name != own)?;
        Some(task.join(thread.name))
    }

    /// The items of process `pid` read from `dir` (its own directory or one of its threads'):
    /// what was read, the names of the items that could not be, whether any was read, and
    /// whether its `cwd` was gone.
    fn read_items(&self, pid: u32, dir: &Path) -> (ProcessInfo, Vec<&'static str>, bool, bool) {
        let mut info = ProcessInfo {
            pid,
            ..ProcessInfo::default()
        };
        let mut unread: Vec<&'static str> = Vec::new();
        let mut read_any = false;
        macro_rules! item {
            ($name:literal, $read:expr) => {
                match classify($read) {
                    Item::Read(v) => {
                        read_any = true;
                        Some(v)
                    }
                    Item::Gone => None,
                    Item::Unreadable => {
                        unread.push($name);
                        None
                    }
                }
            };
        }
        let cwd = classify(self.root.read_link(&dir.join("cwd")));
        let cwd_gone = matches!(cwd, Item::Gone);
        info.cwd = match cwd {
            Item::Read(v) => {
                read_any = true;
                Some(v)
            }
            Item::Gone => None,
            Item::Unreadable => {
                unread.push("cwd");
                None
            }
        };
        if let Some(b) = item!("cmdline", self.root.read(&dir.join("cmdline"))) {
            info.argv = split_nul(b);
        }
        if let Some(b) = item!("environ", self.root.read(&dir.join("environ"))) {
            info.environ = split_nul(b);
        }
        if let Some(b) = item!("maps", self.root.read(&dir.join("maps"))) {
            info.maps = map_paths(&b);
        }
        let fd_dir = dir.join("fd");
        if let Some(fds) = item!("fd", self.root.list(&fd_dir)) {
            for fd in fds {
                match classify(self.root.read_link(&fd_dir.join(&fd.name))) {
                    Item::Read(target) => info.fds.push(target),
                    // A descriptor closed between the listing and the read is simply gone.
                    Item::Gone => {}
                    // A listing the kernel allows but a target it refuses (`ptrace` access):
                    // the descriptors are as unknown as an unlistable `fd/`.
                    Item::Unreadable => {
                        if unread.last() != Some(&"fd") {
                            unread.push("fd");
                        }
                    }
                }
            }
        }
        (info, unread, read_any, cwd_gone)
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
    fn reads_who_a_process_runs_as_and_whether_it_is_a_kernel_thread() {
        let status = b"Name:\tsudo\nUid:\t1000\t0\t0\t0\nGid:\t1000\t0\t0\t0\n\
CapPrm:\t000001ffffffffff\nCapEff:\t000001ffffffffff\nCapBnd:\t000001ffffffffff\n";
        let st = parse_status(status, None).unwrap();
        assert_eq!(st.uids, [1000, 0, 0, 0]);
        assert_eq!((st.cap_prm, st.cap_eff), (0x1ff_ffff_ffff, 0x1ff_ffff_ffff));
        assert!(!st.kernel_thread);
        // Without its uids or capabilities, whom it runs as is unknown.
        assert_eq!(parse_status(b"Uid:\t5\t5\t5\t5\n", None), None);
        assert_eq!(parse_status(b"Name:\tx\n", None), None, "no Uid line");
        // Kthread: where the kernel says it, else PF_KTHREAD in stat (comm may hold spaces).
        let root = "Uid:\t0\t0\t0\t0\nCapPrm:\t0\nCapEff:\t0\nCapBnd:\t0\n";
        let kthread = format!("{root}Kthread:\t1\n");
        assert!(
            parse_status(kthread.as_bytes(), None)
                .unwrap()
                .kernel_thread
        );
        let stat = b"2 (kthread d) S 0 0 0 0 -1 2129984 0 0";
        assert!(
            parse_status(root.as_bytes(), Some(stat))
                .unwrap()
                .kernel_thread
        );
        let stat = b"7 (sh) S 1 7 7 0 -1 4194560 0 0";
        assert!(!stat_is_kernel_thread(stat));
        // An exited process not yet reaped (a zombie) holds nothing any more.
        assert!(!parse_status(root.as_bytes(), None).unwrap().exited);
        let zombie = format!("State:\tZ (zombie)\nThreads:\t1\n{root}");
        assert!(parse_status(zombie.as_bytes(), None).unwrap().exited);
        let dead = format!("State:\tX (dead)\nThreads:\t1\n{root}");
        assert!(parse_status(dead.as_bytes(), None).unwrap().exited);
        // A zombie leader whose other threads run on (it called pthread_exit) still holds
        // what its process holds.
        let leader = format!("State:\tZ (zombie)\nThreads:\t2\n{root}");
        assert!(!parse_status(leader.as_bytes(), None).unwrap().exited);
    }

    #[test]
    fn finds_the_options_of_the_proc_mount_that_hide_processes() {
        let line = |id: u32, point: &str, opts: &str, fs: &str, sup: &str| {
            format!("{id} 1 0:21 / {point} {opts} shared:1 - {fs} {fs} {sup}\n")
        };
        let plain = line(22, "/proc", "rw,relatime", "proc", "rw");
        let proc = Path::new("/proc");
        assert_eq!(hiding_options(plain.as_bytes(), proc), None);
        // A second procfs mounted over the first: the topmost counts.
        for (sup, why) in [
            (
                "rw,hidepid=invisible",
                Some("mounted with hidepid=invisible"),
            ),
            ("rw,hidepid=2", Some("mounted with hidepid=2")),
            ("rw,hidepid=0", None),
            ("rw,hidepid=off", None),
            ("rw,subset=pid", Some("mounted with subset=pid")),
        ] {
            let info = format!("{plain}{}", line(66, "/proc", "rw", "proc", sup));
            assert_eq!(
                hiding_options(info.as_bytes(), proc).as_deref(),
                why,
                "{sup}"
            );
        }
        // Per-mount options count as well; a mount elsewhere does not.
        let info = format!(
            "{plain}{}",
            line(67, "/proc/sys", "ro", "proc", "hidepid=2")
        );
        assert_eq!(hiding_options(info.as_bytes(), proc), None);
        // Not a procfs at all, and an escaped mount point.
        let info = line(9, "/srv/my\\040proc", "rw", "tmpfs", "rw");
        assert_eq!(
            hiding_options(info.as_bytes(), Path::new("/srv/my proc")).as_deref(),
            Some("it is a tmpfs mount, not a procfs")
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
        assert_eq!(scan.own.uids[0], proc.invoking_uid().unwrap());
        assert_eq!(scan.hidden, None, "the test machine's /proc hides nothing");
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
