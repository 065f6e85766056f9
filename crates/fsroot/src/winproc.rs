//! Reading Windows processes, the build-dirs pack's liveness backend there
//! (`engine::liveness::Liveness`): every process the system lists (a Toolhelp snapshot), with
//! its working directory, command line and environment read from its process environment block
//! as `sysinfo` and Process Explorer read them (`NtQueryInformationProcess`, then
//! `ReadProcessMemory` of its `RTL_USER_PROCESS_PARAMETERS`; a 32-bit process's own 32-bit
//! block), and whom it runs as (its token's user SID). Which of those name a path is the
//! build-dirs policy (`engine::liveness`); this module only reads.
//!
//! A process whose block cannot be read (access denied: another user's, an elevated or a
//! protected process) is listed in [`ProcessScan::unread`] with why, and whom it runs as when
//! its token can be read. The idle process (pid 0) and `System` (pid 4), and any process whose
//! block address is null (the kernel's minimal processes: `Registry`, `Memory Compression`,
//! `Secure System`), have no working directory, command line or environment: they are counted
//! in [`ProcessScan::kernel`]. A process that exits while it is read is not counted; a block
//! that cannot be read once the process is open is read again five times, from 20 ms to 320 ms
//! apart (a process being created has none yet). A process that cannot be opened at all
//! (another user's) is not waited for.
//!
//! Open files are not listed: a file a live process holds without `FILE_SHARE_DELETE` (as Go
//! opens its files) cannot be deleted, and `WritableRoot::remove_tree` checks every entry of a
//! tree for that before it deletes the first.
//!
//! One of the two modules of the workspace allowed `unsafe` (with `sys/windows.rs`): each block
//! is a system call on handles this module owns for the call's duration, or a read of memory
//! of another process into a buffer of this one, and says so.
#![allow(unsafe_code)]

use std::ffi::OsString;
use std::io;
use std::mem::size_of;
use std::os::windows::ffi::OsStringExt;
use std::os::windows::io::{AsRawHandle, FromRawHandle, OwnedHandle};
use std::path::PathBuf;
use std::ptr;

use windows_sys::Wdk::System::Threading::{
    NtQueryInformationProcess, ProcessBasicInformation, ProcessWow64Information,
};
use windows_sys::Win32::Foundation::{
    ERROR_INVALID_PARAMETER, ERROR_NO_MORE_FILES, HANDLE, INVALID_HANDLE_VALUE, STILL_ACTIVE,
};
use windows_sys::Win32::Security::{GetLengthSid, GetTokenInformation, TokenUser, TOKEN_QUERY};
use windows_sys::Win32::System::Diagnostics::Debug::ReadProcessMemory;
use windows_sys::Win32::System::Diagnostics::ToolHelp::{
    CreateToolhelp32Snapshot, Process32FirstW, Process32NextW, PROCESSENTRY32W, TH32CS_SNAPPROCESS,
};
use windows_sys::Win32::System::Threading::{
    GetCurrentProcess, GetExitCodeProcess, OpenProcess, OpenProcessToken,
    PROCESS_QUERY_INFORMATION, PROCESS_QUERY_LIMITED_INFORMATION, PROCESS_VM_READ,
};

use crate::Owner;

/// What one process was seen to reference.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ProcessInfo {
    /// Process id.
    pub pid: u32,
    /// Its image name, as the snapshot lists it (`go.exe`).
    pub name: String,
    /// Its working directory (`CurrentDirectory.DosPath`, with its trailing `\`).
    pub cwd: Option<PathBuf>,
    /// Its command line, one string as Windows keeps it.
    pub command_line: OsString,
    /// Its environment: `KEY=value` entries.
    pub environ: Vec<OsString>,
}

/// A process whose block could not be read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unread {
    /// Process id.
    pub pid: u32,
    /// Its image name.
    pub name: String,
    /// Why it could not be read (the system's error).
    pub why: String,
    /// Whom it runs as; unknown when its token cannot be read either.
    pub owner: Owner,
}

/// Every process the snapshot listed, as far as each could be read.
#[derive(Debug, Clone, Default)]
pub struct ProcessScan {
    /// The processes read.
    pub processes: Vec<ProcessInfo>,
    /// The processes whose working directory, command line and environment could not be read.
    pub unread: Vec<Unread>,
    /// Processes with no user-mode block (idle, `System`, the kernel's minimal processes).
    pub kernel: u64,
    /// Whom this process runs as.
    pub own: Owner,
}

/// The processes the system lists now, each read as far as it can be. An error only when the
/// system cannot list its processes (or this process's own user cannot be read).
pub fn scan() -> io::Result<ProcessScan> {
    let own = token_owner(current_process()).ok_or_else(|| {
        io::Error::new(
            io::ErrorKind::PermissionDenied,
            "this process's own user cannot be read",
        )
    })?;
    let mut scan = ProcessScan {
        own,
        ..ProcessScan::default()
    };
    for (pid, name) in snapshot()? {
        if pid == 0 || pid == 4 {
            scan.kernel += 1;
            continue;
        }
        match read(pid, &name) {
            Read::Info(info) => scan.processes.push(info),
            Read::Kernel => scan.kernel += 1,
            Read::Gone => {}
            Read::Unread(why) => scan.unread.push(Unread {
                pid,
                owner: open(pid, PROCESS_QUERY_LIMITED_INFORMATION)
                    .ok()
                    .and_then(|p| token_owner(p.as_raw_handle()))
                    .unwrap_or_else(Owner::unknown),
                name,
                why,
            }),
        }
    }
    Ok(scan)
}

/// Whom this process runs as: its token's user.
pub fn own_owner() -> Option<Owner> {
    token_owner(current_process())
}

fn current_process() -> HANDLE {
    // SAFETY: a pseudo handle for this process; it needs no closing.
    unsafe { GetCurrentProcess() }
}

/// The pid and image name of every process the system lists.
fn snapshot() -> io::Result<Vec<(u32, String)>> {
    // SAFETY: plain values in; a handle or INVALID_HANDLE_VALUE out.
    let raw = unsafe { CreateToolhelp32Snapshot(TH32CS_SNAPPROCESS, 0) };
    if raw == INVALID_HANDLE_VALUE {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: a valid handle just returned to us, owned by no one else.
    let snap = unsafe { OwnedHandle::from_raw_handle(raw) };
    let mut entry = PROCESSENTRY32W {
        dwSize: size_of::<PROCESSENTRY32W>() as u32,
        ..PROCESSENTRY32W::default()
    };
    let mut out = Vec::new();
    // SAFETY: `snap` is live and `entry` is a PROCESSENTRY32W with its size set.
    let mut ok = unsafe { Process32FirstW(snap.as_raw_handle(), &mut entry) };
    while ok != 0 {
        let len = entry
            .szExeFile
            .iter()
            .position(|c| *c == 0)
            .unwrap_or(entry.szExeFile.len());
        out.push((
            entry.th32ProcessID,
            String::from_utf16_lossy(&entry.szExeFile[..len]),
        ));
        // SAFETY: as for Process32FirstW.
        ok = unsafe { Process32NextW(snap.as_raw_handle(), &mut entry) };
    }
    let e = io::Error::last_os_error();
    if e.raw_os_error() != Some(ERROR_NO_MORE_FILES as i32) {
        return Err(e);
    }
    Ok(out)
}

fn open(pid: u32, access: u32) -> io::Result<OwnedHandle> {
    // SAFETY: plain values in; an owned process handle or null out.
    let raw = unsafe { OpenProcess(access, 0, pid) };
    if raw.is_null() {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: a non-null handle just returned to us, owned by no one else.
    Ok(unsafe { OwnedHandle::from_raw_handle(raw) })
}

/// The user of the token of `process`.
fn token_owner(process: HANDLE) -> Option<Owner> {
    let mut raw: HANDLE = ptr::null_mut();
    // SAFETY: `process` is live for the call; `raw` receives an owned token handle.
    if unsafe { OpenProcessToken(process, TOKEN_QUERY, &mut raw) } == 0 {
        return None;
    }
    // SAFETY: a token handle just returned to us, owned by no one else.
    let token = unsafe { OwnedHandle::from_raw_handle(raw) };
    let mut len = 0u32;
    // SAFETY: a size query (no buffer); it fails with the size needed in `len`.
    unsafe {
        GetTokenInformation(
            token.as_raw_handle(),
            TokenUser,
            ptr::null_mut(),
            0,
            &mut len,
        )
    };
    if len == 0 {
        return None;
    }
    // u64s: a buffer aligned for the TOKEN_USER it receives.
    let mut buf = vec![0u64; (len as usize).div_ceil(8)];
    // SAFETY: `buf` holds `len` writable bytes, aligned for TOKEN_USER.
    let ok = unsafe {
        GetTokenInformation(
            token.as_raw_handle(),
            TokenUser,
            buf.as_mut_ptr().cast(),
            len,
            &mut len,
        )
    };
    if ok == 0 {
        return None;
    }
    // SAFETY: the call filled `buf` with a TOKEN_USER whose SID points into `buf`.
    let sid = unsafe {
        (*buf
            .as_ptr()
            .cast::<windows_sys::Win32::Security::TOKEN_USER>())
        .User
        .Sid
    };
    // SAFETY: `sid` is the valid SID just read, alive in `buf`.
    let sid_len = unsafe { GetLengthSid(sid) } as usize;
    // SAFETY: `sid_len` bytes at `sid` lie in `buf`, which lives until the end of this function.
    let bytes = unsafe { std::slice::from_raw_parts(sid.cast::<u8>(), sid_len) };
    Some(Owner::sid(bytes))
}

/// `PROCESS_BASIC_INFORMATION`, declared here: windows-sys gates it behind its large
/// `Win32_System_Kernel` feature for the `PEB` type of one field, which this module reads by
/// offset instead.
#[repr(C)]
#[derive(Default)]
struct BasicInformation {
    exit_status: i32,
    peb: usize,
    affinity_mask: usize,
    base_priority: i32,
    pid: usize,
    parent_pid: usize,
}

enum Read {
    Info(ProcessInfo),
    /// No user-mode block.
    Kernel,
    /// It exited.
    Gone,
    /// Not readable, for this reason.
    Unread(String),
}

/// Where a block's fields lie, for a 64-bit or a 32-bit process.
struct Layout {
    /// Pointer size.
    ptr: usize,
    /// `PEB.ProcessParameters`.
    params: usize,
    /// `RTL_USER_PROCESS_PARAMETERS.CurrentDirectory.DosPath`.
    cwd: usize,
    /// `.CommandLine`.
    command_line: usize,
    /// `.Environment`.
    environment: usize,
    /// `.EnvironmentSize`.
    environment_size: usize,
}

const LAYOUT_64: Layout = Layout {
    ptr: 8,
    params: 0x20,
    cwd: 0x38,
    command_line: 0x70,
    environment: 0x80,
    environment_size: 0x3F0,
};

const LAYOUT_32: Layout = Layout {
    ptr: 4,
    params: 0x10,
    cwd: 0x24,
    command_line: 0x40,
    environment: 0x48,
    environment_size: 0x290,
};

/// The most bytes of environment read from one process.
const ENVIRONMENT_MAX: usize = 16 << 20;

fn read(pid: u32, name: &str) -> Read {
    let process = match open(pid, PROCESS_QUERY_INFORMATION | PROCESS_VM_READ) {
        Ok(p) => p,
        Err(e) if e.raw_os_error() == Some(ERROR_INVALID_PARAMETER as i32) => return Read::Gone,
        Err(e) => return Read::Unread(format!("it cannot be opened: {e}")),
    };
    let h = process.as_raw_handle();
    // A 32-bit process on 64-bit Windows keeps its own 32-bit block, which it updates.
    let mut peb32: usize = 0;
    // SAFETY: `h` is live; `peb32` is a writable pointer-sized value, as the class asks.
    let status = unsafe {
        NtQueryInformationProcess(
            h,
            ProcessWow64Information,
            ptr::addr_of_mut!(peb32).cast(),
            size_of::<usize>() as u32,
            ptr::null_mut(),
        )
    };
    let (peb, layout) = if status >= 0 && peb32 != 0 {
        (peb32 as u64, &LAYOUT_32)
    } else {
        let mut basic = BasicInformation::default();
        // SAFETY: `h` is live; `basic` is a writable PROCESS_BASIC_INFORMATION.
        let status = unsafe {
            NtQueryInformationProcess(
                h,
                ProcessBasicInformation,
                ptr::addr_of_mut!(basic).cast(),
                size_of::<BasicInformation>() as u32,
                ptr::null_mut(),
            )
        };
        if status < 0 {
            return Read::Unread(format!(
                "its basic information cannot be read (NTSTATUS {status:#x})"
            ));
        }
        (basic.peb as u64, &LAYOUT_64)
    };
    if peb == 0 {
        return Read::Kernel;
    }
    // A process being created has no complete block yet, and one exiting loses it: a failed
    // read is tried again a few times, and one that exited meanwhile is gone.
    let mut last = None;
    for attempt in 0..READ_ATTEMPTS {
        if attempt > 0 {
            // 20, 40, 80, 160, 320 ms: at most 620 ms for a process that stays unreadable.
            std::thread::sleep(std::time::Duration::from_millis(10 << attempt));
        }
        match read_block(h, peb, layout) {
            Ok((cwd, command_line, environ)) => {
                return Read::Info(ProcessInfo {
                    pid,
                    name: name.to_owned(),
                    cwd: Some(cwd),
                    command_line,
                    environ,
                })
            }
            Err(e) => last = Some(e),
        }
        if exited(h) {
            return Read::Gone;
        }
    }
    let e = last.expect("at least one attempt");
    Read::Unread(format!("its process block cannot be read: {e}"))
}

/// How many times a process block is read before the process counts as unreadable.
const READ_ATTEMPTS: usize = 6;

/// Whether the process has exited (its handle stays valid after it does).
fn exited(h: HANDLE) -> bool {
    let mut code = 0u32;
    // SAFETY: `h` is live for the call and `code` is a writable u32.
    let ok = unsafe { GetExitCodeProcess(h, &mut code) };
    ok != 0 && code != STILL_ACTIVE as u32
}

type Block = (PathBuf, OsString, Vec<OsString>);

fn read_block(h: HANDLE, peb: u64, l: &Layout) -> io::Result<Block> {
    let params = read_ptr(h, peb + l.params as u64, l.ptr)?;
    // The structure's own length (`Length`, after `MaximumLength`), so no field past its end is
    // read (the environment size is a later addition).
    let head = read_memory(h, params, 8)?;
    let len = u32::from_le_bytes(head[4..8].try_into().expect("4 bytes")) as usize;
    let block = read_memory(h, params, len.min(l.environment_size + l.ptr))?;
    let field = |at: usize, size: usize| -> io::Result<u64> {
        let b = block.get(at..at + size).ok_or_else(truncated)?;
        let mut v = [0u8; 8];
        v[..size].copy_from_slice(b);
        Ok(u64::from_le_bytes(v))
    };
    let string = |at: usize| -> io::Result<OsString> {
        let bytes = field(at, 2)? as usize;
        let buffer = field(at + l.ptr, l.ptr)?;
        if bytes == 0 {
            return Ok(OsString::new());
        }
        Ok(wide(&read_memory(h, buffer, bytes)?))
    };
    let cwd = PathBuf::from(string(l.cwd)?);
    let command_line = string(l.command_line)?;
    let env_at = field(l.environment, l.ptr)?;
    let env_size = field(l.environment_size, l.ptr).unwrap_or(0) as usize;
    let environ = if env_at == 0 {
        Vec::new()
    } else {
        environment(&read_environment(h, env_at, env_size)?)
    };
    Ok((cwd, command_line, environ))
}

/// The environment block at `at`: `size` bytes when the block says, else read a page at a time
/// up to its closing empty entry.
fn read_environment(h: HANDLE, at: u64, size: usize) -> io::Result<Vec<u8>> {
    if size > 0 {
        return read_memory(h, at, size.min(ENVIRONMENT_MAX));
    }
    let mut out = Vec::new();
    while out.len() < ENVIRONMENT_MAX {
        // Up to the next page boundary, so no read crosses into a page that is not mapped.
        let next = at + out.len() as u64;
        let chunk = 4096 - (next % 4096) as usize;
        out.extend(read_memory(h, next, chunk)?);
        if ends_block(&out) {
            break;
        }
    }
    Ok(out)
}

/// Whether the environment block read so far (UTF-16) holds its end: two NUL units in a row.
fn ends_block(b: &[u8]) -> bool {
    let units: Vec<u16> = b
        .chunks_exact(2)
        .map(|c| u16::from_le_bytes([c[0], c[1]]))
        .collect();
    units.windows(2).any(|w| w == [0, 0])
}

/// The `KEY=value` entries of an environment block (UTF-16, each entry NUL-terminated, an empty
/// entry last).
pub fn environment(block: &[u8]) -> Vec<OsString> {
    let units: Vec<u16> = block
        .chunks_exact(2)
        .map(|c| u16::from_le_bytes([c[0], c[1]]))
        .collect();
    units
        .split(|u| *u == 0)
        .take_while(|e| !e.is_empty())
        .map(OsString::from_wide)
        .collect()
}

fn wide(bytes: &[u8]) -> OsString {
    let units: Vec<u16> = bytes
        .chunks_exact(2)
        .map(|c| u16::from_le_bytes([c[0], c[1]]))
        .collect();
    OsString::from_wide(&units)
}

fn read_ptr(h: HANDLE, at: u64, size: usize) -> io::Result<u64> {
    let b = read_memory(h, at, size)?;
    let mut v = [0u8; 8];
    v[..size].copy_from_slice(&b);
    Ok(u64::from_le_bytes(v))
}

fn read_memory(h: HANDLE, at: u64, len: usize) -> io::Result<Vec<u8>> {
    let mut buf = vec![0u8; len];
    let mut got = 0usize;
    // SAFETY: `h` is live; `buf` holds `len` writable bytes; the address is the other
    // process's, which the system checks.
    let ok = unsafe {
        ReadProcessMemory(
            h,
            at as usize as *const core::ffi::c_void,
            buf.as_mut_ptr().cast(),
            len,
            &mut got,
        )
    };
    if ok == 0 {
        return Err(io::Error::last_os_error());
    }
    if got != len {
        return Err(truncated());
    }
    Ok(buf)
}

fn truncated() -> io::Error {
    io::Error::new(
        io::ErrorKind::UnexpectedEof,
        "a short read of a process block",
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_environment_block_splits_into_its_entries() {
        let mut block: Vec<u8> = Vec::new();
        for unit in "A=1\0PATH=C:\\x;D:\\y\0\0garbage".encode_utf16() {
            block.extend(unit.to_le_bytes());
        }
        assert_eq!(
            environment(&block),
            [OsString::from("A=1"), OsString::from("PATH=C:\\x;D:\\y")]
        );
        assert!(environment(&[0, 0]).is_empty());
        assert!(ends_block(&block) && !ends_block(&block[..8]));
    }

    /// A file this process creates is owned by the user it runs as (what B1 asks of a
    /// directory before it reclaims it).
    #[test]
    fn a_new_file_is_owned_by_this_process_user() {
        let tmp = tempfile::tempdir().unwrap();
        std::fs::create_dir(tmp.path().join("go-build1")).unwrap();
        let root = crate::Root::open(tmp.path()).unwrap();
        let owner = root.owner("go-build1".as_ref()).unwrap();
        assert!(owner.is_known(), "{owner}");
        assert_eq!(Some(owner), own_owner());
        assert!(root.owner("absent".as_ref()).is_err());
    }

    /// This very process is listed with its working directory, command line and environment
    /// as std sees them, and its user; a child's too.
    #[test]
    fn the_scan_reads_this_process_and_a_child() {
        let mut child = std::process::Command::new("cmd")
            .args(["/c", "pause"])
            .current_dir(std::env::temp_dir())
            .env("DOCTOR_WINPROC_TEST", "C:\\marker")
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::null())
            .spawn()
            .unwrap();
        let scan = scan().unwrap();
        let me = scan
            .processes
            .iter()
            .find(|p| p.pid == std::process::id())
            .unwrap_or_else(|| panic!("not listed: {:?}", scan.unread));
        let cwd = std::env::current_dir().unwrap();
        assert_eq!(
            me.cwd
                .as_deref()
                .map(|c| c.to_string_lossy().trim_end_matches('\\').to_owned()),
            Some(cwd.to_string_lossy().trim_end_matches('\\').to_owned())
        );
        assert!(!me.command_line.is_empty());
        assert!(me
            .environ
            .iter()
            .any(|e| e.to_string_lossy().starts_with("PATH=")
                || e.to_string_lossy().starts_with("Path=")));
        let other = scan
            .processes
            .iter()
            .find(|p| p.pid == child.id())
            .unwrap_or_else(|| panic!("the child is not listed: {:?}", scan.unread));
        assert!(other
            .environ
            .contains(&OsString::from("DOCTOR_WINPROC_TEST=C:\\marker")));
        assert!(other.command_line.to_string_lossy().contains("pause"));
        let tmp = std::env::temp_dir();
        assert_eq!(
            other
                .cwd
                .as_deref()
                .map(|c| c.to_string_lossy().trim_end_matches('\\').to_lowercase()),
            Some(tmp.to_string_lossy().trim_end_matches('\\').to_lowercase())
        );
        assert_eq!(Some(scan.own), own_owner());
        assert!(scan.own.is_known());
        drop(child.stdin.take());
        child.kill().ok();
        child.wait().unwrap();
    }
}
