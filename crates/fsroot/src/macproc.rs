//! Reading macOS processes, the build-dirs pack's liveness backend there
//! (`engine::liveness::Liveness`): every process `proc_listallpids` lists, with its working
//! directory (`proc_pidinfo` `PROC_PIDVNODEPATHINFO`), argv and environment (`sysctl`
//! `KERN_PROCARGS2`, parsed by [`crate::procargs`]), the paths of its open files
//! (`PROC_PIDLISTFDS`, then `proc_pidfdinfo` `PROC_PIDFDVNODEPATHINFO` of each vnode), and whom
//! it runs as (`PROC_PIDTBSDINFO`). Which of those name a path is the build-dirs policy
//! (`engine::liveness`); this module only reads.
//!
//! An item that cannot be read (another user's process: macOS lets only its owner or root read
//! its working directory, files and environment) is skipped, counted, and its process listed in
//! [`ProcessScan::unread`] with its user when that can be read. The kernel (pid 0) is counted
//! apart. Memory-mapped files are not read: the process that maps a file it wrote (Go's linker
//! maps its output) holds its descriptor too.
//!
//! One of the modules of the workspace allowed `unsafe` (with the Windows ones): each block is
//! a call into libproc or `sysctl` with a buffer of this process, sized as the call is told.
#![allow(unsafe_code)]

use std::ffi::OsString;
use std::io;
use std::mem::size_of;
use std::path::PathBuf;

use crate::procargs::{nul_terminated_path, parse_procargs2};

/// What one process was seen to reference. Fields that could not be read are empty.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ProcessInfo {
    /// Process id.
    pub pid: u32,
    /// Its working directory.
    pub cwd: Option<PathBuf>,
    /// Its arguments.
    pub argv: Vec<OsString>,
    /// Its environment: `KEY=value` entries.
    pub environ: Vec<OsString>,
    /// The paths of its open files.
    pub fds: Vec<PathBuf>,
}

/// A process some of whose items could not be read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unread {
    /// Process id.
    pub pid: u32,
    /// The items that could not be read: `cwd`, `argv and environment`, `open files`.
    pub items: Vec<&'static str>,
    /// Its real and effective uid, when they can be read.
    pub uids: Option<(u32, u32)>,
}

/// Every process listed, as far as each could be read.
#[derive(Debug, Clone, Default)]
pub struct ProcessScan {
    /// The processes read (some items of which may be missing: see `unread`).
    pub processes: Vec<ProcessInfo>,
    /// Items that could not be read.
    pub unreadable: u64,
    /// The processes those items belong to.
    pub unread: Vec<Unread>,
    /// The kernel (pid 0).
    pub kernel: u64,
    /// This process's real uid.
    pub own_uid: u32,
}

/// `PROC_PIDFDVNODEPATHINFO` (`sys/proc_info.h`), which libc does not name.
const PROC_PIDFDVNODEPATHINFO: libc::c_int = 2;

/// `struct proc_fileinfo` (`sys/proc_info.h`): its layout only, never read.
#[allow(dead_code)]
#[repr(C)]
struct ProcFileInfo {
    fi_openflags: u32,
    fi_status: u32,
    fi_offset: libc::off_t,
    fi_type: i32,
    fi_guardflags: u32,
}

/// `struct vnode_fdinfowithpath` (`sys/proc_info.h`).
#[allow(dead_code)]
#[repr(C)]
struct VnodeFdInfoWithPath {
    pfi: ProcFileInfo,
    pvip: libc::vnode_info_path,
}

/// This process's real uid.
pub fn own_uid() -> u32 {
    // SAFETY: getuid takes nothing and cannot fail.
    unsafe { libc::getuid() }
}

/// The processes macOS lists now, each read as far as it can be. An error only when the
/// process list itself cannot be read.
pub fn scan() -> io::Result<ProcessScan> {
    let mut scan = ProcessScan {
        own_uid: own_uid(),
        ..ProcessScan::default()
    };
    for pid in all_pids()? {
        if pid == 0 {
            scan.kernel += 1;
            continue;
        }
        let uids = bsd_uids(pid);
        let mut items = Vec::new();
        let mut info = ProcessInfo {
            pid: pid as u32,
            ..ProcessInfo::default()
        };
        match cwd(pid) {
            Ok(c) => info.cwd = c,
            Err(e) if gone(&e) => continue,
            Err(_) => items.push("cwd"),
        }
        match procargs(pid) {
            Ok((argv, environ)) => {
                info.argv = argv;
                info.environ = environ;
            }
            Err(e) if gone(&e) => continue,
            Err(_) => items.push("argv and environment"),
        }
        match open_files(pid) {
            Ok(f) => info.fds = f,
            Err(e) if gone(&e) => continue,
            Err(_) => items.push("open files"),
        }
        if !items.is_empty() {
            scan.unreadable += items.len() as u64;
            scan.unread.push(Unread {
                pid: pid as u32,
                items,
                uids,
            });
        }
        scan.processes.push(info);
    }
    Ok(scan)
}

fn gone(e: &io::Error) -> bool {
    e.raw_os_error() == Some(libc::ESRCH)
}

fn all_pids() -> io::Result<Vec<libc::pid_t>> {
    // SAFETY: a size query (null buffer): the call returns how many pids there are.
    let n = unsafe { libc::proc_listallpids(std::ptr::null_mut(), 0) };
    if n <= 0 {
        return Err(io::Error::last_os_error());
    }
    // Room for processes started since the count.
    let mut pids = vec![0 as libc::pid_t; n as usize + 64];
    let bytes = (pids.len() * size_of::<libc::pid_t>()) as libc::c_int;
    // SAFETY: `pids` holds `bytes` writable bytes.
    let n = unsafe { libc::proc_listallpids(pids.as_mut_ptr().cast(), bytes) };
    if n < 0 {
        return Err(io::Error::last_os_error());
    }
    pids.truncate(n as usize);
    Ok(pids)
}

/// `proc_pidinfo(pid, flavor, arg)` into a `T`: the error of the call, or a short answer as
/// permission denied (libproc answers 0 for a process it will not describe).
fn pidinfo<T>(pid: libc::pid_t, flavor: libc::c_int, arg: u64) -> io::Result<T> {
    let mut out = std::mem::MaybeUninit::<T>::zeroed();
    let size = size_of::<T>() as libc::c_int;
    // SAFETY: `out` holds `size` writable bytes; the call writes at most that many.
    let n = unsafe { libc::proc_pidinfo(pid, flavor, arg, out.as_mut_ptr().cast(), size) };
    if n == size {
        // SAFETY: the call filled the whole `T`, a plain C structure of integers and arrays.
        return Ok(unsafe { out.assume_init() });
    }
    let e = io::Error::last_os_error();
    Err(match e.raw_os_error() {
        Some(code) if code != 0 => e,
        _ => io::Error::from_raw_os_error(libc::EPERM),
    })
}

fn bsd_uids(pid: libc::pid_t) -> Option<(u32, u32)> {
    pidinfo::<libc::proc_bsdinfo>(pid, libc::PROC_PIDTBSDINFO, 0)
        .ok()
        .map(|b| (b.pbi_ruid, b.pbi_uid))
}

fn path_bytes(p: &libc::vnode_info_path) -> Option<PathBuf> {
    // SAFETY: `vip_path` is a plain array of `c_char` (MAXPATHLEN bytes), viewed as bytes.
    let bytes = unsafe {
        std::slice::from_raw_parts(
            p.vip_path.as_ptr().cast::<u8>(),
            size_of::<[[libc::c_char; 32]; 32]>(),
        )
    };
    nul_terminated_path(bytes)
}

fn cwd(pid: libc::pid_t) -> io::Result<Option<PathBuf>> {
    pidinfo::<libc::proc_vnodepathinfo>(pid, libc::PROC_PIDVNODEPATHINFO, 0)
        .map(|v| path_bytes(&v.pvi_cdir))
}

fn procargs(pid: libc::pid_t) -> io::Result<(Vec<OsString>, Vec<OsString>)> {
    let mut argmax: libc::c_int = 0;
    let mut size = size_of::<libc::c_int>();
    let mut mib = [libc::CTL_KERN, libc::KERN_ARGMAX];
    // SAFETY: `argmax` is a writable c_int and `size` its size.
    let r = unsafe {
        libc::sysctl(
            mib.as_mut_ptr(),
            2,
            std::ptr::addr_of_mut!(argmax).cast(),
            &mut size,
            std::ptr::null_mut(),
            0,
        )
    };
    if r != 0 {
        return Err(io::Error::last_os_error());
    }
    let mut buf = vec![0u8; argmax.max(4096) as usize];
    let mut len = buf.len();
    let mut mib = [libc::CTL_KERN, libc::KERN_PROCARGS2, pid];
    // SAFETY: `buf` holds `len` writable bytes; the call writes at most that many.
    let r = unsafe {
        libc::sysctl(
            mib.as_mut_ptr(),
            3,
            buf.as_mut_ptr().cast(),
            &mut len,
            std::ptr::null_mut(),
            0,
        )
    };
    if r != 0 {
        return Err(io::Error::last_os_error());
    }
    parse_procargs2(&buf[..len.min(buf.len())]).ok_or_else(|| {
        io::Error::new(
            io::ErrorKind::InvalidData,
            "KERN_PROCARGS2 buffer cut short",
        )
    })
}

fn open_files(pid: libc::pid_t) -> io::Result<Vec<PathBuf>> {
    // SAFETY: a size query (null buffer): the call returns the bytes the list takes.
    let bytes =
        unsafe { libc::proc_pidinfo(pid, libc::PROC_PIDLISTFDS, 0, std::ptr::null_mut(), 0) };
    if bytes <= 0 {
        let e = io::Error::last_os_error();
        return Err(match e.raw_os_error() {
            Some(code) if code != 0 => e,
            _ => io::Error::from_raw_os_error(libc::EPERM),
        });
    }
    let mut fds: Vec<libc::proc_fdinfo> =
        Vec::with_capacity(bytes as usize / size_of::<libc::proc_fdinfo>() + 16);
    let room = (fds.capacity() * size_of::<libc::proc_fdinfo>()) as libc::c_int;
    // SAFETY: `fds` has room for `room` bytes; the call writes at most that many, and the
    // length is set to the records it wrote.
    let n =
        unsafe { libc::proc_pidinfo(pid, libc::PROC_PIDLISTFDS, 0, fds.as_mut_ptr().cast(), room) };
    if n < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: the call initialised `n` bytes of whole records.
    unsafe { fds.set_len(n as usize / size_of::<libc::proc_fdinfo>()) };
    let mut out = Vec::new();
    for fd in fds
        .iter()
        .filter(|f| f.proc_fdtype == libc::PROX_FDTYPE_VNODE as u32)
    {
        let mut info = std::mem::MaybeUninit::<VnodeFdInfoWithPath>::zeroed();
        let size = size_of::<VnodeFdInfoWithPath>() as libc::c_int;
        // SAFETY: `info` holds `size` writable bytes; the call writes at most that many.
        let got = unsafe {
            libc::proc_pidfdinfo(
                pid,
                fd.proc_fd,
                PROC_PIDFDVNODEPATHINFO,
                info.as_mut_ptr().cast(),
                size,
            )
        };
        if got == size {
            // SAFETY: the call filled the whole structure (integers and arrays).
            let info = unsafe { info.assume_init() };
            out.extend(path_bytes(&info.pvip));
        }
        // A descriptor closed since it was listed is passed over.
    }
    Ok(out)
}
