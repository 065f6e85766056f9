//! The Windows backend of the filesystem contract (`sys/mod.rs`): handle-relative `NtCreateFile`
//! opens that never follow a reparse point, renames and deletes through the entry's own handle,
//! identity from the volume serial and file index, and the app's `LockFileEx` byte range.
//!
//! Every child is opened with `OBJECT_ATTRIBUTES.RootDirectory` set to the held directory
//! handle and the one component as the object name, with `FILE_OPEN_REPARSE_POINT`: a symlink,
//! junction or mount point is opened as itself, and any open meant for use (a directory to
//! descend, a file to read or write) that lands on a reparse point is closed and refused with
//! [`ERROR_STOPPED_ON_SYMLINK`] (see [`is_link_error`]). Every open shares read, write and
//! delete (platforms.md §8.6), so a handle of the doctor never blocks the app's renames.
//!
//! This is the one module of the workspace allowed `unsafe`: each block is a system call on
//! handles this module owns or borrows for the call's duration, and says so.
#![allow(unsafe_code)]

use std::ffi::{OsStr, OsString};
use std::fs::File;
use std::io;
use std::mem::{offset_of, size_of};
use std::os::windows::ffi::{OsStrExt, OsStringExt};
use std::os::windows::fs::{FileExt, OpenOptionsExt};
use std::os::windows::io::{AsHandle, AsRawHandle, BorrowedHandle, FromRawHandle, OwnedHandle};
use std::path::{Path, PathBuf};
use std::ptr;

use windows_sys::Wdk::Foundation::OBJECT_ATTRIBUTES;
use windows_sys::Wdk::Storage::FileSystem::{
    FileDirectoryInformation, FileDispositionInformation, FileLinkInformation,
    FileRenameInformation, NtCreateFile, NtQueryDirectoryFile, NtSetInformationFile, FILE_CREATE,
    FILE_DIRECTORY_FILE, FILE_DIRECTORY_INFORMATION, FILE_DISPOSITION_INFORMATION,
    FILE_LINK_INFORMATION, FILE_NON_DIRECTORY_FILE, FILE_OPEN, FILE_OPEN_IF,
    FILE_OPEN_REPARSE_POINT, FILE_RENAME_INFORMATION, FILE_SYNCHRONOUS_IO_NONALERT,
};
use windows_sys::Win32::Foundation::{
    LocalFree, RtlNtStatusToDosError, ERROR_ACCESS_DENIED, ERROR_DELETE_PENDING, ERROR_DIRECTORY,
    ERROR_DIRECTORY_NOT_SUPPORTED, ERROR_FILENAME_EXCED_RANGE, ERROR_INVALID_PARAMETER,
    ERROR_LOCK_VIOLATION, ERROR_SHARING_VIOLATION, ERROR_STOPPED_ON_SYMLINK, HANDLE, NTSTATUS,
    OBJ_CASE_INSENSITIVE, STATUS_DELETE_PENDING, STATUS_FILE_IS_A_DIRECTORY, STATUS_NO_MORE_FILES,
    STILL_ACTIVE, UNICODE_STRING,
};
use windows_sys::Win32::Security::Authorization::{GetSecurityInfo, SE_FILE_OBJECT};
use windows_sys::Win32::Security::{
    GetLengthSid, OWNER_SECURITY_INFORMATION, PSECURITY_DESCRIPTOR, PSID,
};
use windows_sys::Win32::Storage::FileSystem::{
    FileBasicInfo, GetFileInformationByHandle, GetFileInformationByHandleEx, LockFileEx,
    UnlockFileEx, BY_HANDLE_FILE_INFORMATION, DELETE, FILE_ATTRIBUTE_DIRECTORY,
    FILE_ATTRIBUTE_NORMAL, FILE_ATTRIBUTE_READONLY, FILE_ATTRIBUTE_REPARSE_POINT, FILE_BASIC_INFO,
    FILE_FLAG_BACKUP_SEMANTICS, FILE_GENERIC_WRITE, FILE_LIST_DIRECTORY, FILE_READ_ATTRIBUTES,
    FILE_READ_EA, FILE_SHARE_DELETE, FILE_SHARE_READ, FILE_SHARE_WRITE, FILE_TRAVERSE,
    FILE_WRITE_ATTRIBUTES, FILE_WRITE_DATA, LOCKFILE_EXCLUSIVE_LOCK, LOCKFILE_FAIL_IMMEDIATELY,
    MAXIMUM_REPARSE_DATA_BUFFER_SIZE, READ_CONTROL, SYNCHRONIZE,
};
use windows_sys::Win32::System::Ioctl::FSCTL_GET_REPARSE_POINT;
use windows_sys::Win32::System::Threading::{
    GetExitCodeProcess, OpenProcess, PROCESS_QUERY_LIMITED_INFORMATION,
};
use windows_sys::Win32::System::IO::{
    DeviceIoControl, IO_STATUS_BLOCK, OVERLAPPED, OVERLAPPED_0, OVERLAPPED_0_0,
};

use super::{FileOpts, Meta, MountId};
use crate::EntryKind;

/// Every open shares everything (§8.6): the app may rename or delete what the doctor holds.
const SHARE_ALL: u32 = FILE_SHARE_READ | FILE_SHARE_WRITE | FILE_SHARE_DELETE;
/// What a directory handle is opened for: listing, resolving children, reading attributes.
const DIR_ACCESS: u32 =
    FILE_LIST_DIRECTORY | FILE_TRAVERSE | FILE_READ_ATTRIBUTES | FILE_READ_EA | SYNCHRONIZE;
/// What a `stat` opens an entry for: attributes only, which no share mode can refuse.
const STAT_ACCESS: u32 = FILE_READ_ATTRIBUTES | SYNCHRONIZE;
/// Generic read, as `std` opens a file for reading (with `SYNCHRONIZE` for synchronous I/O).
const GENERIC_READ: u32 = 0x8000_0000;
/// Generic write (`FILE_GENERIC_WRITE`, which includes `FILE_WRITE_DATA`).
const GENERIC_WRITE: u32 = 0x4000_0000;

/// The app's lock range (platforms.md §3 and §8.11): offset 128, `0x7FFF_FFFF_FFFF_FFFF` bytes.
const LOCK_OFFSET: u32 = 128;
const LOCK_LEN_LOW: u32 = u32::MAX;
const LOCK_LEN_HIGH: u32 = 0x7FFF_FFFF;

/// The reparse tags of a symlink and of a junction or mount point (`winnt.h`).
const IO_REPARSE_TAG_SYMLINK: u32 = 0xA000_000C;
const IO_REPARSE_TAG_MOUNT_POINT: u32 = 0xA000_0003;

/// Seconds between 1601-01-01 (the `FILETIME` epoch) and 1970-01-01.
const FILETIME_UNIX_OFFSET: i64 = 11_644_473_600;

/// An owned handle on a directory, opened synchronously with every share mode.
#[derive(Debug)]
pub(crate) struct Dir {
    handle: OwnedHandle,
}

impl Dir {
    /// The anchor: an ordinary open of `path` (links followed), refused unless a directory.
    pub(crate) fn open_ambient(path: &Path) -> io::Result<Dir> {
        // std's default share mode is read | write | delete; `read` asks GENERIC_READ, which
        // on a directory includes FILE_LIST_DIRECTORY. Backup semantics is what lets
        // CreateFileW open a directory at all.
        let file = std::fs::OpenOptions::new()
            .read(true)
            .custom_flags(FILE_FLAG_BACKUP_SEMANTICS)
            .open(path)?;
        let handle = OwnedHandle::from(file);
        let info = handle_info(handle.as_handle())?;
        if info.dwFileAttributes & FILE_ATTRIBUTE_DIRECTORY == 0 {
            return Err(win_error(ERROR_DIRECTORY));
        }
        Ok(Dir { handle })
    }

    /// Another handle on the same directory (`DuplicateHandle`).
    pub(crate) fn try_clone(&self) -> io::Result<Dir> {
        Ok(Dir {
            handle: self.handle.try_clone()?,
        })
    }

    /// The directory `name` (one component) beneath this one, never through a reparse point.
    pub(crate) fn open_dir(&self, name: &OsStr) -> io::Result<Dir> {
        let handle = self.open_for_use(name, DIR_ACCESS, FILE_OPEN, FILE_DIRECTORY_FILE)?;
        Ok(Dir { handle })
    }

    /// The file `name` (one component), never a directory and never through a reparse point.
    pub(crate) fn open_file(&self, name: &OsStr, opts: &FileOpts) -> io::Result<File> {
        // Windows has no permission bits: a created file gets its directory's inherited ACL.
        let _ = opts.mode;
        let mut access = GENERIC_READ | SYNCHRONIZE | FILE_READ_ATTRIBUTES;
        if opts.append {
            // FILE_APPEND_DATA and the attribute rights, without FILE_WRITE_DATA: every
            // write goes to the end, as O_APPEND.
            access |= FILE_GENERIC_WRITE & !FILE_WRITE_DATA;
        } else if opts.write {
            access |= GENERIC_WRITE;
        }
        let disposition = if opts.create_new {
            FILE_CREATE
        } else if opts.create {
            FILE_OPEN_IF
        } else {
            FILE_OPEN
        };
        let handle = self.open_for_use(name, access, disposition, FILE_NON_DIRECTORY_FILE)?;
        Ok(File::from(handle))
    }

    /// The directory at `rel` beneath this one, one component at a time.
    pub(crate) fn open_beneath_dir(&self, rel: &Path) -> io::Result<Dir> {
        super::walk_beneath(self, rel)
    }

    /// The file at `rel` beneath this one: its parent walked as [`super::walk_beneath`] does.
    pub(crate) fn open_beneath_file(&self, rel: &Path, opts: &FileOpts) -> io::Result<File> {
        let (parent, name) = super::walk_parent(self, rel)?;
        parent.open_file(&name, opts)
    }

    /// `lstat`: the entry `name` itself, opened for its attributes only.
    pub(crate) fn stat(&self, name: &OsStr) -> io::Result<Meta> {
        let handle = self.open_entry(name, STAT_ACCESS, 0)?;
        handle_meta(handle.as_handle())
    }

    /// The directory's own [`Meta`].
    pub(crate) fn stat_self(&self) -> io::Result<Meta> {
        handle_meta(self.handle.as_handle())
    }

    /// The volume the entry `name` is on (its serial number).
    pub(crate) fn mount(&self, name: &OsStr) -> io::Result<MountId> {
        Ok(MountId(self.stat(name)?.id.volume(), 0))
    }

    /// The volume this directory is on.
    pub(crate) fn mount_self(&self) -> io::Result<MountId> {
        Ok(MountId(self.stat_self()?.id.volume(), 0))
    }

    /// Every entry but `.` and `..`, with its kind from its attributes (a reparse point is a
    /// link, never followed).
    pub(crate) fn entries(&self) -> io::Result<Vec<(OsString, EntryKind)>> {
        // A fresh handle on this directory (an empty name relative to it): the listing
        // position lives in the handle, so two listings never share one.
        let list = nt_create(
            self.handle.as_handle(),
            &[],
            FILE_LIST_DIRECTORY | SYNCHRONIZE,
            FILE_OPEN,
            FILE_DIRECTORY_FILE,
        )?;
        let mut out = Vec::new();
        // u64 words: every FILE_DIRECTORY_INFORMATION record is 8-byte aligned in it.
        let mut buf = vec![0u64; 8192];
        let mut restart = true;
        loop {
            let mut iosb = IO_STATUS_BLOCK::default();
            let len = u32::try_from(buf.len() * 8).unwrap_or(u32::MAX);
            // SAFETY: `list` is a live synchronous directory handle; `buf` is writable for
            // `len` bytes and outlives the call, which completes before returning (no event
            // and no APC: the handle is synchronous).
            let status = unsafe {
                NtQueryDirectoryFile(
                    list.as_raw_handle(),
                    ptr::null_mut(),
                    None,
                    ptr::null(),
                    &mut iosb,
                    buf.as_mut_ptr().cast(),
                    len,
                    FileDirectoryInformation,
                    false,
                    ptr::null(),
                    restart,
                )
            };
            restart = false;
            if status == STATUS_NO_MORE_FILES {
                break;
            }
            if status < 0 {
                return Err(nt_error(status));
            }
            // SAFETY: the u64 buffer is viewed as the bytes it holds; u8 has no alignment or
            // validity requirement, and the view ends before `buf` is used again.
            let bytes =
                unsafe { std::slice::from_raw_parts(buf.as_ptr().cast::<u8>(), buf.len() * 8) };
            let filled = iosb.Information.min(bytes.len());
            parse_directory_records(&bytes[..filled], &mut out)?;
        }
        Ok(out)
    }

    /// Creates the directory `name`; an existing entry fails with `AlreadyExists`.
    pub(crate) fn create_dir(&self, name: &OsStr) -> io::Result<()> {
        let wide = component(name)?;
        nt_create(
            self.handle.as_handle(),
            &wide,
            FILE_LIST_DIRECTORY | SYNCHRONIZE,
            FILE_CREATE,
            FILE_DIRECTORY_FILE,
        )
        .map(drop)
    }

    /// Renames `name` to `to_name` in `to`; an existing `to_name` fails with `AlreadyExists`
    /// and is untouched.
    pub(crate) fn rename_noreplace(
        &self,
        name: &OsStr,
        to: &Dir,
        to_name: &OsStr,
    ) -> io::Result<()> {
        self.rename(name, to, to_name, false)
    }

    /// Renames `name` to `to_name` in `to`, replacing a file there.
    pub(crate) fn rename_replace(&self, name: &OsStr, to: &Dir, to_name: &OsStr) -> io::Result<()> {
        self.rename(name, to, to_name, true)
    }

    /// A hard link `to_name` in `to` of the entry `name` (never following it); an existing
    /// `to_name` fails with `AlreadyExists` and is untouched.
    pub(crate) fn hard_link(&self, name: &OsStr, to: &Dir, to_name: &OsStr) -> io::Result<()> {
        let entry = self.open_entry(name, FILE_WRITE_ATTRIBUTES | SYNCHRONIZE, 0)?;
        set_name(&entry, to, to_name, false, FileLinkInformation)
    }

    fn rename(&self, name: &OsStr, to: &Dir, to_name: &OsStr, replace: bool) -> io::Result<()> {
        // The entry itself (a link is renamed, never what it points to).
        let entry = self.open_entry(name, DELETE | SYNCHRONIZE | FILE_READ_ATTRIBUTES, 0)?;
        set_name(&entry, to, to_name, replace, FileRenameInformation)
    }

    /// Removes the non-directory `name` (a link itself, never its target); a directory is
    /// refused with `IsADirectory`.
    pub(crate) fn remove_file(&self, name: &OsStr) -> io::Result<()> {
        let entry = self.open_entry(name, DELETE | SYNCHRONIZE | FILE_READ_ATTRIBUTES, 0)?;
        let attrs = handle_info(entry.as_handle())?.dwFileAttributes;
        if attrs & FILE_ATTRIBUTE_DIRECTORY != 0 && attrs & FILE_ATTRIBUTE_REPARSE_POINT == 0 {
            return Err(win_error(ERROR_DIRECTORY_NOT_SUPPORTED));
        }
        mark_deleted(&entry)
    }

    /// Removes the empty directory `name` (or a directory reparse point itself); a non-empty
    /// one fails with `DirectoryNotEmpty`.
    pub(crate) fn remove_dir(&self, name: &OsStr) -> io::Result<()> {
        let entry = self.open_entry(
            name,
            DELETE | SYNCHRONIZE | FILE_READ_ATTRIBUTES,
            FILE_DIRECTORY_FILE,
        )?;
        mark_deleted(&entry)
    }

    /// Whether another process holds `name` open so that it cannot be deleted: a handle
    /// opened without `FILE_SHARE_DELETE` (as Go opens its files, and as a process's working
    /// directory is held) makes an open for `DELETE` fail with a sharing violation. The open
    /// is closed at once; nothing is changed.
    pub(crate) fn delete_refused(&self, name: &OsStr, is_dir: bool) -> io::Result<bool> {
        let options = if is_dir { FILE_DIRECTORY_FILE } else { 0 };
        match self.open_entry(name, DELETE | SYNCHRONIZE | FILE_READ_ATTRIBUTES, options) {
            Ok(_) => Ok(false),
            Err(e) if e.raw_os_error() == Some(ERROR_SHARING_VIOLATION as i32) => Ok(true),
            Err(e) => Err(e),
        }
    }

    /// Who owns `name` (not following it): the owner SID of its security descriptor.
    pub(crate) fn owner(&self, name: &OsStr) -> io::Result<crate::Owner> {
        let entry = self.open_entry(name, READ_CONTROL | SYNCHRONIZE, 0)?;
        let mut sid: PSID = ptr::null_mut();
        let mut descriptor: PSECURITY_DESCRIPTOR = ptr::null_mut();
        // SAFETY: `entry` is live; `sid` and `descriptor` receive pointers into one buffer the
        // system allocates, freed below with LocalFree.
        let code = unsafe {
            GetSecurityInfo(
                entry.as_raw_handle(),
                SE_FILE_OBJECT,
                OWNER_SECURITY_INFORMATION,
                &mut sid,
                ptr::null_mut(),
                ptr::null_mut(),
                ptr::null_mut(),
                &mut descriptor,
            )
        };
        if code != 0 {
            return Err(win_error(code));
        }
        let owner = if sid.is_null() {
            crate::Owner::unknown()
        } else {
            // SAFETY: `sid` points to the valid SID inside `descriptor`, alive until freed.
            let len = unsafe { GetLengthSid(sid) } as usize;
            // SAFETY: `len` bytes at `sid` lie inside `descriptor`.
            crate::Owner::sid(unsafe { std::slice::from_raw_parts(sid.cast::<u8>(), len) })
        };
        // SAFETY: `descriptor` was allocated by GetSecurityInfo for us to free, once.
        unsafe { LocalFree(descriptor) };
        Ok(owner)
    }

    /// What the link `name` points to: the print name of a symlink or junction (its
    /// substitute name when the print name is empty).
    pub(crate) fn read_link(&self, name: &OsStr) -> io::Result<PathBuf> {
        let entry = self.open_entry(name, STAT_ACCESS, 0)?;
        let mut buf = vec![0u32; MAXIMUM_REPARSE_DATA_BUFFER_SIZE as usize / 4];
        let mut returned = 0u32;
        // SAFETY: `entry` is a live synchronous handle; the output buffer is writable for
        // the length given and outlives the call; no OVERLAPPED, so the call completes first.
        let ok = unsafe {
            DeviceIoControl(
                entry.as_raw_handle(),
                FSCTL_GET_REPARSE_POINT,
                ptr::null(),
                0,
                buf.as_mut_ptr().cast(),
                MAXIMUM_REPARSE_DATA_BUFFER_SIZE,
                &mut returned,
                ptr::null_mut(),
            )
        };
        if ok == 0 {
            return Err(io::Error::last_os_error());
        }
        let bytes: Vec<u8> = buf.iter().flat_map(|w| w.to_le_bytes()).collect();
        parse_reparse_target(&bytes[..(returned as usize).min(bytes.len())])
    }

    /// Directories cannot be flushed on Windows (`FlushFileBuffers` on a directory handle is
    /// refused): NTFS journals its metadata, so a completed rename or create is already
    /// durable as far as the file system offers; file data is flushed by `File::sync_all`.
    pub(crate) fn sync(&self) -> io::Result<()> {
        Ok(())
    }

    /// Opens the entry `name` itself (never following it) for `access`, with extra
    /// `options`.
    fn open_entry(&self, name: &OsStr, access: u32, options: u32) -> io::Result<OwnedHandle> {
        let wide = component(name)?;
        nt_create(self.handle.as_handle(), &wide, access, FILE_OPEN, options)
    }

    /// Opens `name` to use it (descend, read, write): a reparse point is refused with the
    /// link error, whether the kind check (`options`) or the attribute check meets it.
    fn open_for_use(
        &self,
        name: &OsStr,
        access: u32,
        disposition: u32,
        options: u32,
    ) -> io::Result<OwnedHandle> {
        let wide = component(name)?;
        match nt_create(self.handle.as_handle(), &wide, access, disposition, options) {
            Ok(handle) => {
                if handle_info(handle.as_handle())?.dwFileAttributes & FILE_ATTRIBUTE_REPARSE_POINT
                    != 0
                {
                    return Err(link_error());
                }
                Ok(handle)
            }
            Err(e)
                if matches!(
                    e.kind(),
                    io::ErrorKind::NotADirectory | io::ErrorKind::IsADirectory
                ) =>
            {
                // A file symlink opened as a directory (or a directory link opened as a
                // file) fails on its kind first; it is still a link the caller met.
                match self.stat(name) {
                    Ok(m) if m.kind == EntryKind::Symlink => Err(link_error()),
                    _ => Err(e),
                }
            }
            Err(e) => Err(e),
        }
    }
}

/// Another process's handle without `FILE_SHARE_DELETE` makes a delete fail on Windows.
pub(crate) const DELETE_CAN_BE_REFUSED: bool = true;

/// A file deleted while another handle to it is open stays in its directory until that handle
/// is closed (delete pending), so the directory is not empty for a moment.
pub(crate) const DELETES_CAN_PEND: bool = true;

/// The [`Meta`] of an opened file.
pub(crate) fn file_meta(f: &File) -> io::Result<Meta> {
    handle_meta(f.as_handle())
}

/// Reads at `off` (`ReadFile` with an offset; the handle's own position moves too).
pub(crate) fn read_at(f: &File, buf: &mut [u8], off: u64) -> io::Result<usize> {
    f.seek_read(buf, off)
}

/// Takes the app's exclusive lock on `f` (offset 128, `0x7FFF_FFFF_FFFF_FFFF` bytes);
/// `Ok(false)` when another handle holds any of it.
pub(crate) fn try_lock(f: &File) -> io::Result<bool> {
    let mut overlapped = lock_overlapped();
    // SAFETY: `f` is a live handle for the call; `overlapped` carries only the offset and
    // outlives the call; the handle is synchronous and FAIL_IMMEDIATELY never pends.
    let ok = unsafe {
        LockFileEx(
            f.as_raw_handle(),
            LOCKFILE_EXCLUSIVE_LOCK | LOCKFILE_FAIL_IMMEDIATELY,
            0,
            LOCK_LEN_LOW,
            LOCK_LEN_HIGH,
            &mut overlapped,
        )
    };
    if ok != 0 {
        return Ok(true);
    }
    let e = io::Error::last_os_error();
    let held = e.kind() == io::ErrorKind::WouldBlock
        || matches!(
            e.raw_os_error(),
            Some(c) if c == ERROR_SHARING_VIOLATION as i32 || c == ERROR_LOCK_VIOLATION as i32
        );
    if held {
        Ok(false)
    } else {
        Err(e)
    }
}

/// Releases the range [`try_lock`] took.
pub(crate) fn unlock(f: &File) -> io::Result<()> {
    let mut overlapped = lock_overlapped();
    // SAFETY: as in `try_lock`: a live handle, an offset-only OVERLAPPED outliving the call.
    let ok = unsafe {
        UnlockFileEx(
            f.as_raw_handle(),
            0,
            LOCK_LEN_LOW,
            LOCK_LEN_HIGH,
            &mut overlapped,
        )
    };
    if ok == 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// Whether `e` is the refusal an open gives for a reparse point: `ERROR_STOPPED_ON_SYMLINK`.
pub(crate) fn is_link_error(e: &io::Error) -> bool {
    e.raw_os_error() == Some(ERROR_STOPPED_ON_SYMLINK as i32)
}

/// Whether `e` passes by itself: access denied, a sharing or a lock violation (5, 32, 33),
/// which a scanner or indexer holding a file for a moment gives (platforms.md §8.14).
pub(crate) fn is_transient(e: &io::Error) -> bool {
    matches!(
        e.raw_os_error().map(|c| c as u32),
        Some(ERROR_ACCESS_DENIED | ERROR_SHARING_VIOLATION | ERROR_LOCK_VIOLATION)
    )
}

/// Whether `pid` names a running process: `None` when Windows does not say.
pub(crate) fn process_alive(pid: u32) -> Option<bool> {
    // SAFETY: OpenProcess takes plain values and returns an owned handle or null.
    let raw = unsafe { OpenProcess(PROCESS_QUERY_LIMITED_INFORMATION, 0, pid) };
    if raw.is_null() {
        let e = io::Error::last_os_error();
        return match e.raw_os_error().map(|c| c as u32) {
            // No such process id.
            Some(ERROR_INVALID_PARAMETER) => Some(false),
            // It exists, in a session or at an integrity level this process cannot query.
            Some(ERROR_ACCESS_DENIED) => Some(true),
            _ => None,
        };
    }
    // SAFETY: `raw` is a non-null process handle just returned to us; nothing else owns it.
    let process = unsafe { OwnedHandle::from_raw_handle(raw) };
    let mut code = 0u32;
    // SAFETY: `process` is live for the call and `code` is a writable u32.
    let ok = unsafe { GetExitCodeProcess(process.as_raw_handle(), &mut code) };
    if ok == 0 {
        return None;
    }
    // A process that exited with code 259 reads as alive: the doctor then keeps its things.
    Some(code == STILL_ACTIVE as u32)
}

/// Permission bits do not exist on Windows (no ACL is changed): nothing to do.
pub(crate) fn set_mode(_f: &File, _mode: u32) -> io::Result<()> {
    Ok(())
}

/// The error every open for use returns on a reparse point.
fn link_error() -> io::Error {
    win_error(ERROR_STOPPED_ON_SYMLINK)
}

fn win_error(code: u32) -> io::Error {
    io::Error::from_raw_os_error(code as i32)
}

/// An NTSTATUS as the Win32 error std maps to an `ErrorKind`. Two are kept apart from what
/// `RtlNtStatusToDosError` would make of them (both "access denied"): a directory where a
/// file was asked (`IsADirectory`, as Unix's `EISDIR`) and a pending delete.
fn nt_error(status: NTSTATUS) -> io::Error {
    let code = match status {
        STATUS_FILE_IS_A_DIRECTORY => ERROR_DIRECTORY_NOT_SUPPORTED,
        STATUS_DELETE_PENDING => ERROR_DELETE_PENDING,
        // SAFETY: a pure translation of a status value.
        _ => unsafe { RtlNtStatusToDosError(status) },
    };
    win_error(code)
}

/// `name` as the UTF-16 object name of one component, or `InvalidInput`: empty, `.`, `..`,
/// or holding a separator, a stream colon or NUL.
fn component(name: &OsStr) -> io::Result<Vec<u16>> {
    let wide: Vec<u16> = name.encode_wide().collect();
    let bad = wide.is_empty()
        || name == "."
        || name == ".."
        || wide.iter().any(|&c| {
            c == u16::from(b'\\') || c == u16::from(b'/') || c == u16::from(b':') || c == 0
        });
    if bad {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("not one path component: {name:?}"),
        ));
    }
    Ok(wide)
}

/// `NtCreateFile` of `name` relative to `root`, never reparsing, synchronous, sharing all.
/// An empty `name` opens `root`'s own directory again.
fn nt_create(
    root: BorrowedHandle<'_>,
    name: &[u16],
    access: u32,
    disposition: u32,
    options: u32,
) -> io::Result<OwnedHandle> {
    let bytes = u16::try_from(name.len() * 2).map_err(|_| win_error(ERROR_FILENAME_EXCED_RANGE))?;
    let object_name = UNICODE_STRING {
        Length: bytes,
        MaximumLength: bytes,
        // NtCreateFile only reads the name.
        Buffer: name.as_ptr().cast_mut(),
    };
    let attributes = OBJECT_ATTRIBUTES {
        Length: size_of::<OBJECT_ATTRIBUTES>() as u32,
        RootDirectory: root.as_raw_handle(),
        ObjectName: &object_name,
        // As CreateFileW opens (the app's opens): names match without case.
        Attributes: OBJ_CASE_INSENSITIVE,
        SecurityDescriptor: ptr::null(),
        SecurityQualityOfService: ptr::null(),
    };
    let mut handle: HANDLE = ptr::null_mut();
    let mut iosb = IO_STATUS_BLOCK::default();
    // SAFETY: every pointer is to a live local (`attributes`, `object_name`, `name`,
    // `handle`, `iosb`) that outlives the call; `root` is borrowed for the call; no EA
    // buffer; the call is synchronous.
    let status = unsafe {
        NtCreateFile(
            &mut handle,
            access,
            &attributes,
            &mut iosb,
            ptr::null(),
            FILE_ATTRIBUTE_NORMAL,
            SHARE_ALL,
            disposition,
            options | FILE_OPEN_REPARSE_POINT | FILE_SYNCHRONOUS_IO_NONALERT,
            ptr::null(),
            0,
        )
    };
    if status < 0 {
        return Err(nt_error(status));
    }
    // SAFETY: on success `handle` is a new handle that nothing else owns.
    Ok(unsafe { OwnedHandle::from_raw_handle(handle) })
}

/// `NtSetInformationFile` of `len` bytes at `info` on `handle`.
///
/// # Safety
///
/// `info` must point to `len` initialised bytes holding the structure `class` names, valid
/// for the duration of the call.
unsafe fn set_information(
    handle: &OwnedHandle,
    info: *const core::ffi::c_void,
    len: usize,
    class: i32,
) -> io::Result<()> {
    let len = u32::try_from(len).map_err(|_| win_error(ERROR_FILENAME_EXCED_RANGE))?;
    let mut iosb = IO_STATUS_BLOCK::default();
    // SAFETY: `handle` is live; `info` is as this function's contract requires; the call is
    // synchronous, so nothing is used after it returns.
    let status =
        unsafe { NtSetInformationFile(handle.as_raw_handle(), &mut iosb, info, len, class) };
    if status < 0 {
        return Err(nt_error(status));
    }
    Ok(())
}

/// Gives `entry` the name `to_name` in `to`: a rename (`FileRenameInformation`) or a new hard
/// link (`FileLinkInformation`, whose structure has the same layout), replacing an existing
/// file there only when `replace`.
fn set_name(
    entry: &OwnedHandle,
    to: &Dir,
    to_name: &OsStr,
    replace: bool,
    class: i32,
) -> io::Result<()> {
    const _: () =
        assert!(size_of::<FILE_RENAME_INFORMATION>() == size_of::<FILE_LINK_INFORMATION>());
    let target = component(to_name)?;
    let name_bytes = target.len() * 2;
    let header = offset_of!(FILE_RENAME_INFORMATION, FileName);
    let size = (header + name_bytes).max(size_of::<FILE_RENAME_INFORMATION>());
    let mut buf = vec![0u64; size.div_ceil(8)];
    let info = buf.as_mut_ptr().cast::<FILE_RENAME_INFORMATION>();
    // SAFETY: `buf` is zeroed, 8-byte aligned and at least `size` bytes, which covers the
    // header and `target.len()` UTF-16 units from `FileName`; the writes stay inside it.
    unsafe {
        (*info).Anonymous.ReplaceIfExists = replace;
        (*info).RootDirectory = to.handle.as_raw_handle();
        (*info).FileNameLength = name_bytes as u32;
        ptr::copy_nonoverlapping(
            target.as_ptr(),
            ptr::addr_of_mut!((*info).FileName).cast::<u16>(),
            target.len(),
        );
    }
    // SAFETY: `buf` holds `size` initialised bytes: the structure just written, for `class`.
    unsafe { set_information(entry, buf.as_ptr().cast(), size, class) }
}

/// Marks the entry deleted (classic disposition): it goes when its last handle closes, which
/// for the doctor is at once (this handle is dropped next).
fn mark_deleted(entry: &OwnedHandle) -> io::Result<()> {
    let info = FILE_DISPOSITION_INFORMATION { DeleteFile: true };
    // SAFETY: `info` is a FILE_DISPOSITION_INFORMATION, alive for the call.
    unsafe {
        set_information(
            entry,
            ptr::addr_of!(info).cast(),
            size_of::<FILE_DISPOSITION_INFORMATION>(),
            FileDispositionInformation,
        )
    }
}

fn handle_info(handle: BorrowedHandle<'_>) -> io::Result<BY_HANDLE_FILE_INFORMATION> {
    let mut info = BY_HANDLE_FILE_INFORMATION::default();
    // SAFETY: `handle` is live for the call; `info` is a writable structure of the type.
    let ok = unsafe { GetFileInformationByHandle(handle.as_raw_handle(), &mut info) };
    if ok == 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(info)
}

/// The [`Meta`] of an open handle, its `ctime_ns` the NTFS change time (`ChangeTime` of
/// `FILE_BASIC_INFO`: any write or attribute change moves it, as `st_ctime` on Unix) where the
/// filesystem gives one, else 0 (FAT and exFAT keep none).
fn handle_meta(handle: BorrowedHandle<'_>) -> io::Result<Meta> {
    let mut meta = meta_of(&handle_info(handle)?);
    let mut basic = FILE_BASIC_INFO::default();
    // SAFETY: `handle` is live for the call; `basic` is a writable FILE_BASIC_INFO and its size
    // is the one passed.
    let ok = unsafe {
        GetFileInformationByHandleEx(
            handle.as_raw_handle(),
            FileBasicInfo,
            (&mut basic as *mut FILE_BASIC_INFO).cast(),
            std::mem::size_of::<FILE_BASIC_INFO>() as u32,
        )
    };
    if ok != 0 && basic.ChangeTime != 0 {
        meta.ctime_ns = filetime_ns(basic.ChangeTime);
    }
    Ok(meta)
}

/// A FILETIME (100 ns since 1601) as nanoseconds since 1970.
fn filetime_ns(t: i64) -> i64 {
    t.saturating_sub(FILETIME_UNIX_OFFSET * 10_000_000)
        .saturating_mul(100)
}

fn kind_of(attributes: u32) -> EntryKind {
    if attributes & FILE_ATTRIBUTE_REPARSE_POINT != 0 {
        EntryKind::Symlink
    } else if attributes & FILE_ATTRIBUTE_DIRECTORY != 0 {
        EntryKind::Dir
    } else {
        EntryKind::File
    }
}

fn meta_of(info: &BY_HANDLE_FILE_INFORMATION) -> Meta {
    let kind = kind_of(info.dwFileAttributes);
    let filetime = |t: &windows_sys::Win32::Foundation::FILETIME| {
        ((u64::from(t.dwHighDateTime) << 32) | u64::from(t.dwLowDateTime)) as i64
    };
    let write_time = filetime(&info.ftLastWriteTime);
    let perm = if info.dwFileAttributes & FILE_ATTRIBUTE_READONLY != 0 {
        0o444
    } else {
        0o644
    };
    let type_bits = match kind {
        EntryKind::Dir => 0o040000,
        EntryKind::Symlink => 0o120000,
        _ => 0o100000,
    };
    Meta {
        kind,
        len: (u64::from(info.nFileSizeHigh) << 32) | u64::from(info.nFileSizeLow),
        mtime: write_time.div_euclid(10_000_000) - FILETIME_UNIX_OFFSET,
        mtime_ns: filetime_ns(write_time),
        // No change time in this structure: `handle_meta` reads it, where there is one.
        ctime_ns: 0,
        nlink: u64::from(info.nNumberOfLinks),
        id: crate::FileId::from_parts(
            u64::from(info.dwVolumeSerialNumber),
            (u64::from(info.nFileIndexHigh) << 32) | u64::from(info.nFileIndexLow),
        ),
        owner: crate::Owner::unknown(),
        mode: type_bits | perm,
    }
}

fn lock_overlapped() -> OVERLAPPED {
    OVERLAPPED {
        Anonymous: OVERLAPPED_0 {
            Anonymous: OVERLAPPED_0_0 {
                Offset: LOCK_OFFSET,
                OffsetHigh: 0,
            },
        },
        ..OVERLAPPED::default()
    }
}

fn u32_at(bytes: &[u8], at: usize) -> io::Result<u32> {
    bytes
        .get(at..at + 4)
        .map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
        .ok_or_else(truncated)
}

fn u16_at(bytes: &[u8], at: usize) -> io::Result<u16> {
    bytes
        .get(at..at + 2)
        .map(|b| u16::from_le_bytes([b[0], b[1]]))
        .ok_or_else(truncated)
}

fn utf16_at(bytes: &[u8], at: usize, len: usize) -> io::Result<OsString> {
    let raw = bytes.get(at..at + len).ok_or_else(truncated)?;
    let units: Vec<u16> = raw
        .chunks_exact(2)
        .map(|p| u16::from_le_bytes([p[0], p[1]]))
        .collect();
    Ok(OsString::from_wide(&units))
}

fn truncated() -> io::Error {
    io::Error::new(
        io::ErrorKind::InvalidData,
        "truncated record from the file system",
    )
}

/// Appends the entries of one `FileDirectoryInformation` answer (but `.` and `..`) to `out`.
fn parse_directory_records(bytes: &[u8], out: &mut Vec<(OsString, EntryKind)>) -> io::Result<()> {
    let attrs_at = offset_of!(FILE_DIRECTORY_INFORMATION, FileAttributes);
    let len_at = offset_of!(FILE_DIRECTORY_INFORMATION, FileNameLength);
    let name_at = offset_of!(FILE_DIRECTORY_INFORMATION, FileName);
    let mut at = 0usize;
    while at < bytes.len() {
        let rec = &bytes[at..];
        let next = u32_at(rec, 0)? as usize;
        let attrs = u32_at(rec, attrs_at)?;
        let name_len = u32_at(rec, len_at)? as usize;
        let name = utf16_at(rec, name_at, name_len)?;
        if name != "." && name != ".." {
            out.push((name, kind_of(attrs)));
        }
        if next == 0 {
            break;
        }
        at += next;
    }
    Ok(())
}

/// The target a `REPARSE_DATA_BUFFER` names: symlinks and junctions (mount points) only.
fn parse_reparse_target(bytes: &[u8]) -> io::Result<PathBuf> {
    let tag = u32_at(bytes, 0)?;
    // After the 8-byte header: substitute offset and length, print offset and length; a
    // symlink then has 4 bytes of flags before its path buffer.
    let path_at = match tag {
        IO_REPARSE_TAG_SYMLINK => 20,
        IO_REPARSE_TAG_MOUNT_POINT => 16,
        _ => {
            return Err(io::Error::new(
                io::ErrorKind::Unsupported,
                format!("reparse point with tag {tag:#x} is not a link"),
            ))
        }
    };
    let sub_off = usize::from(u16_at(bytes, 8)?);
    let sub_len = usize::from(u16_at(bytes, 10)?);
    let print_off = usize::from(u16_at(bytes, 12)?);
    let print_len = usize::from(u16_at(bytes, 14)?);
    let name = if print_len > 0 {
        utf16_at(bytes, path_at + print_off, print_len)?
    } else {
        utf16_at(bytes, path_at + sub_off, sub_len)?
    };
    Ok(PathBuf::from(name))
}

#[cfg(test)]
mod tests {
    //! Under Wine (`cargo-windows test`) and natively: what each call does on real handles.
    //! Wine cannot make symlinks or junctions (see the cross tools README), so the link
    //! refusals are argued from `FILE_OPEN_REPARSE_POINT` and the attribute check, and the
    //! reparse-buffer parser is tested on a buffer laid out as Windows returns it.
    #![allow(clippy::disallowed_methods, clippy::disallowed_types)] // std::fs makes the fixtures.

    use super::*;
    use std::io::{Read, Write};
    use std::time::{Duration, Instant};

    fn fixture() -> (tempfile::TempDir, Dir) {
        let td = tempfile::tempdir().unwrap();
        let dir = Dir::open_ambient(td.path()).unwrap();
        (td, dir)
    }

    fn read_all(mut f: &File) -> String {
        let mut s = String::new();
        f.read_to_string(&mut s).unwrap();
        s
    }

    fn os(s: &str) -> &OsStr {
        OsStr::new(s)
    }

    fn create(dir: &Dir, name: &str, body: &str) {
        let opts = FileOpts {
            write: true,
            create_new: true,
            ..FileOpts::default()
        };
        let mut f = dir.open_file(os(name), &opts).unwrap();
        f.write_all(body.as_bytes()).unwrap();
    }

    #[test]
    fn opens_relative_to_the_held_handle_and_refuses_non_components() {
        let (td, dir) = fixture();
        std::fs::create_dir(td.path().join("a")).unwrap();
        std::fs::write(td.path().join("a").join("f"), "hello").unwrap();
        let a = dir.open_dir(os("a")).unwrap();
        assert_eq!(
            read_all(&a.open_file(os("f"), &FileOpts::read()).unwrap()),
            "hello"
        );
        let nested = dir
            .open_beneath_file(Path::new("a/f"), &FileOpts::read())
            .unwrap();
        assert_eq!(read_all(&nested), "hello");
        assert!(dir
            .open_beneath_dir(Path::new("a"))
            .unwrap()
            .stat_self()
            .unwrap()
            .is_dir());
        for bad in ["", ".", "..", "a\\f", "a/f", "f:stream", "f\0"] {
            let e = a.open_file(os(bad), &FileOpts::read()).unwrap_err();
            assert_eq!(e.kind(), io::ErrorKind::InvalidInput, "{bad:?}");
        }
        let e = dir.open_file(os("missing"), &FileOpts::read()).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::NotFound);
        assert_eq!(
            dir.open_dir(os("missing")).unwrap_err().kind(),
            io::ErrorKind::NotFound
        );
        drop((a, nested, dir));
        td.close().unwrap();
    }

    #[test]
    fn open_file_refuses_a_directory_and_open_dir_a_file() {
        let (td, dir) = fixture();
        dir.create_dir(os("d")).unwrap();
        create(&dir, "f", "x");
        let e = dir.open_file(os("d"), &FileOpts::read()).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::IsADirectory, "{e}");
        let e = dir.open_dir(os("f")).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::NotADirectory, "{e}");
        assert!(!is_link_error(&e));
        assert_eq!(
            Dir::open_ambient(&td.path().join("f")).unwrap_err().kind(),
            io::ErrorKind::NotADirectory
        );
        drop(dir);
        td.close().unwrap();
    }

    #[test]
    fn create_new_refuses_an_existing_file_and_create_opens_it() {
        let (td, dir) = fixture();
        create(&dir, "f", "first");
        let opts = FileOpts {
            write: true,
            create_new: true,
            ..FileOpts::default()
        };
        let e = dir.open_file(os("f"), &opts).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::AlreadyExists, "{e}");
        let opts = FileOpts {
            write: true,
            create: true,
            ..FileOpts::default()
        };
        drop(dir.open_file(os("f"), &opts).unwrap());
        assert_eq!(
            std::fs::read_to_string(td.path().join("f")).unwrap(),
            "first"
        );
        drop(dir);
        td.close().unwrap();
    }

    #[test]
    fn append_writes_at_the_end_and_read_at_reads_at_an_offset() {
        let (td, dir) = fixture();
        create(&dir, "log", "one\n");
        let opts = FileOpts {
            append: true,
            ..FileOpts::default()
        };
        let mut f = dir.open_file(os("log"), &opts).unwrap();
        f.write_all(b"two\n").unwrap();
        drop(f);
        let f = dir.open_file(os("log"), &FileOpts::read()).unwrap();
        let mut buf = [0u8; 3];
        assert_eq!(read_at(&f, &mut buf, 4).unwrap(), 3);
        assert_eq!(&buf, b"two");
        assert_eq!(file_meta(&f).unwrap().len, 8);
        drop((f, dir));
        td.close().unwrap();
    }

    #[test]
    fn rename_noreplace_refuses_an_existing_target_and_leaves_it() {
        let (td, dir) = fixture();
        create(&dir, "a", "source");
        create(&dir, "b", "target");
        let e = dir.rename_noreplace(os("a"), &dir, os("b")).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::AlreadyExists, "{e}");
        assert_eq!(e.raw_os_error(), Some(183));
        assert_eq!(
            std::fs::read_to_string(td.path().join("b")).unwrap(),
            "target"
        );
        assert_eq!(
            std::fs::read_to_string(td.path().join("a")).unwrap(),
            "source"
        );
        dir.rename_noreplace(os("a"), &dir, os("c")).unwrap();
        assert!(!td.path().join("a").exists());
        assert_eq!(
            std::fs::read_to_string(td.path().join("c")).unwrap(),
            "source"
        );
        drop(dir);
        td.close().unwrap();
    }

    #[test]
    fn rename_replace_replaces_the_target() {
        let (td, dir) = fixture();
        create(&dir, "a", "new");
        create(&dir, "b", "old");
        dir.rename_replace(os("a"), &dir, os("b")).unwrap();
        assert_eq!(std::fs::read_to_string(td.path().join("b")).unwrap(), "new");
        assert!(!td.path().join("a").exists());
        drop(dir);
        td.close().unwrap();
    }

    #[test]
    fn rename_moves_files_and_directories_across_two_directory_handles() {
        let (td, dir) = fixture();
        dir.create_dir(os("from")).unwrap();
        dir.create_dir(os("to")).unwrap();
        let from = dir.open_dir(os("from")).unwrap();
        let to = dir.open_dir(os("to")).unwrap();
        create(&from, "f", "moved");
        from.create_dir(os("sub")).unwrap();
        from.rename_noreplace(os("f"), &to, os("g")).unwrap();
        from.rename_noreplace(os("sub"), &to, os("sub2")).unwrap();
        assert_eq!(
            std::fs::read_to_string(td.path().join("to").join("g")).unwrap(),
            "moved"
        );
        assert!(td.path().join("to").join("sub2").is_dir());
        assert!(from.entries().unwrap().is_empty());
        create(&from, "g", "again");
        let e = from.rename_noreplace(os("g"), &to, os("g")).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::AlreadyExists, "{e}");
        assert_eq!(
            std::fs::read_to_string(td.path().join("to").join("g")).unwrap(),
            "moved"
        );
        drop((from, to, dir));
        td.close().unwrap();
    }

    #[test]
    fn hard_link_adds_a_name_across_directories_and_never_replaces() {
        let (td, dir) = fixture();
        dir.create_dir(os("d")).unwrap();
        let d = dir.open_dir(os("d")).unwrap();
        create(&dir, "f", "body");
        create(&d, "taken", "mine");
        dir.hard_link(os("f"), &d, os("g")).unwrap();
        assert_eq!(
            std::fs::read_to_string(td.path().join("d").join("g")).unwrap(),
            "body"
        );
        assert_eq!(dir.stat(os("f")).unwrap().nlink, 2);
        assert_eq!(d.stat(os("g")).unwrap().id, dir.stat(os("f")).unwrap().id);
        let e = dir.hard_link(os("f"), &d, os("taken")).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::AlreadyExists, "{e}");
        assert_eq!(
            std::fs::read_to_string(td.path().join("d").join("taken")).unwrap(),
            "mine"
        );
        drop((d, dir));
        td.close().unwrap();
    }

    #[test]
    fn remove_file_refuses_a_directory_and_remove_dir_a_non_empty_one() {
        let (td, dir) = fixture();
        dir.create_dir(os("d")).unwrap();
        create(&dir.open_dir(os("d")).unwrap(), "f", "x");
        let e = dir.remove_file(os("d")).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::IsADirectory, "{e}");
        let e = dir.remove_dir(os("d")).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::DirectoryNotEmpty, "{e}");
        assert!(td.path().join("d").join("f").exists());
        let d = dir.open_dir(os("d")).unwrap();
        assert_eq!(
            d.remove_dir(os("f")).unwrap_err().kind(),
            io::ErrorKind::NotADirectory
        );
        d.remove_file(os("f")).unwrap();
        drop(d);
        dir.remove_dir(os("d")).unwrap();
        assert!(!td.path().join("d").exists());
        assert_eq!(
            dir.remove_file(os("d")).unwrap_err().kind(),
            io::ErrorKind::NotFound
        );
        let e = dir
            .create_dir(os("e"))
            .and_then(|()| dir.create_dir(os("e")))
            .unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::AlreadyExists);
        drop(dir);
        td.close().unwrap();
    }

    #[test]
    fn entries_lists_every_entry_with_its_kind() {
        let (td, dir) = fixture();
        dir.create_dir(os("d")).unwrap();
        create(&dir, "f", "x");
        create(&dir, "ünï cödé", "y");
        let mut got = dir.entries().unwrap();
        got.sort();
        let want = vec![
            (OsString::from("d"), EntryKind::Dir),
            (OsString::from("f"), EntryKind::File),
            (OsString::from("ünï cödé"), EntryKind::File),
        ];
        assert_eq!(got, want);
        // Listing twice through the same Dir gives the same answer (each listing has its own
        // handle, so no position is shared).
        let mut again = dir.entries().unwrap();
        again.sort();
        assert_eq!(again, want);
        // More entries than one answer holds.
        let d = dir.open_dir(os("d")).unwrap();
        for i in 0..1500 {
            create(&d, &format!("entry-with-a-longish-name-{i:05}"), "");
        }
        assert_eq!(d.entries().unwrap().len(), 1500);
        drop((d, dir));
        td.close().unwrap();
    }

    #[test]
    fn stat_gives_identity_links_kind_and_size() {
        let (td, dir) = fixture();
        create(&dir, "f", "12345");
        create(&dir, "g", "");
        let a = dir.stat(os("f")).unwrap();
        let b = file_meta(&dir.open_file(os("f"), &FileOpts::read()).unwrap()).unwrap();
        assert_eq!(a.id, b.id);
        assert_ne!(a.id, dir.stat(os("g")).unwrap().id);
        assert_eq!((a.kind, a.len, a.nlink), (EntryKind::File, 5, 1));
        assert_eq!(a.mode, 0o100644);
        assert_eq!(a.owner, crate::Owner::unknown());
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_secs() as i64;
        assert!((a.mtime - now).abs() < 600, "mtime {} now {now}", a.mtime);
        std::fs::hard_link(td.path().join("f"), td.path().join("f2")).unwrap();
        assert_eq!(dir.stat(os("f")).unwrap().nlink, 2);
        assert_eq!(dir.stat(os("f2")).unwrap().id, a.id);
        dir.create_dir(os("d")).unwrap();
        let d = dir.stat(os("d")).unwrap();
        assert_eq!((d.kind, d.mode & 0o170000), (EntryKind::Dir, 0o040000));
        assert_eq!(dir.open_dir(os("d")).unwrap().stat_self().unwrap().id, d.id);
        assert_eq!(dir.mount(os("f")).unwrap(), dir.mount_self().unwrap());
        assert_eq!(dir.mount_self().unwrap().0, a.id.volume());
        let mut perms = std::fs::metadata(td.path().join("g"))
            .unwrap()
            .permissions();
        perms.set_readonly(true);
        std::fs::set_permissions(td.path().join("g"), perms.clone()).unwrap();
        assert_eq!(dir.stat(os("g")).unwrap().mode, 0o100444);
        #[allow(clippy::permissions_set_readonly_false)]
        perms.set_readonly(false);
        std::fs::set_permissions(td.path().join("g"), perms).unwrap();
        drop(dir);
        td.close().unwrap();
    }

    #[test]
    fn a_doctor_handle_does_not_block_the_apps_renames_or_deletes() {
        // Without FILE_SHARE_DELETE in the doctor's opens each of these fails with 32.
        // (Replacing a target the doctor holds open fails with 5 under Wine and under
        // Windows' classic rename semantics whatever the share mode: the doctor holds a file
        // of the app only while it reads it.)
        let (td, dir) = fixture();
        create(&dir, "f", "x");
        create(&dir, "g", "y");
        dir.create_dir(os("sub")).unwrap();
        let held_file = dir.open_file(os("f"), &FileOpts::read()).unwrap();
        let held_other = dir.open_file(os("g"), &FileOpts::read()).unwrap();
        let held_dir = dir.open_dir(os("sub")).unwrap();
        std::fs::rename(td.path().join("f"), td.path().join("f-moved")).unwrap();
        std::fs::rename(td.path().join("sub"), td.path().join("sub-moved")).unwrap();
        std::fs::remove_file(td.path().join("g")).unwrap();
        assert_eq!(
            std::fs::read_to_string(td.path().join("f-moved")).unwrap(),
            "x"
        );
        assert!(td.path().join("sub-moved").is_dir());
        // The doctor's handles still read what they opened.
        assert_eq!(read_all(&held_file), "x");
        assert_eq!(read_all(&held_other), "y");
        drop((held_file, held_other, held_dir, dir));
        td.close().unwrap();
    }

    #[test]
    fn try_lock_is_exclusive_between_handles_and_released_by_unlock() {
        let (td, dir) = fixture();
        create(&dir, "lock", "");
        let rw = FileOpts {
            write: true,
            ..FileOpts::default()
        };
        let a = dir.open_file(os("lock"), &rw).unwrap();
        let b = dir.open_file(os("lock"), &rw).unwrap();
        assert!(try_lock(&a).unwrap());
        assert!(!try_lock(&b).unwrap());
        unlock(&a).unwrap();
        assert!(try_lock(&b).unwrap());
        unlock(&b).unwrap();
        drop((a, b, dir));
        td.close().unwrap();
    }

    #[test]
    fn try_lock_takes_the_apps_range_from_offset_128() {
        // The app reads its holder record in bytes 0..128 while the lock is held (a Windows
        // lock is mandatory): the doctor's lock must leave them free and cover the rest.
        let (td, dir) = fixture();
        create(&dir, "lock", "");
        let rw = FileOpts {
            write: true,
            ..FileOpts::default()
        };
        let a = dir.open_file(os("lock"), &rw).unwrap();
        let b = dir.open_file(os("lock"), &rw).unwrap();
        assert!(try_lock(&a).unwrap());
        let lock = |offset: u32, offset_high: u32, len: u32| {
            let mut ov = OVERLAPPED {
                Anonymous: OVERLAPPED_0 {
                    Anonymous: OVERLAPPED_0_0 {
                        Offset: offset,
                        OffsetHigh: offset_high,
                    },
                },
                ..OVERLAPPED::default()
            };
            let flags = LOCKFILE_EXCLUSIVE_LOCK | LOCKFILE_FAIL_IMMEDIATELY;
            // SAFETY: `b` is live; `ov` carries the offset and outlives the call.
            let ok = unsafe { LockFileEx(b.as_raw_handle(), flags, 0, len, 0, &mut ov) };
            if ok != 0 {
                // SAFETY: as above; the range just locked.
                unsafe { UnlockFileEx(b.as_raw_handle(), 0, len, 0, &mut ov) };
            }
            ok != 0
        };
        assert!(lock(0, 0, 128), "bytes 0..128 must stay free");
        assert!(!lock(128, 0, 1), "byte 128 must be locked");
        assert!(!lock(0, 0x7FFF_FFFE, 1), "the far end must be locked");
        drop((a, b, dir));
        td.close().unwrap();
    }

    /// The environment variable naming the file [`lock_holder_child`] locks.
    const CHILD_LOCK: &str = "FSROOT_WINDOWS_TEST_LOCK_FILE";

    #[test]
    #[ignore = "the second process of try_lock_sees_a_lock_held_by_another_process"]
    fn lock_holder_child() {
        let path = PathBuf::from(std::env::var_os(CHILD_LOCK).expect("run by the parent test"));
        let dir = Dir::open_ambient(path.parent().unwrap()).unwrap();
        let rw = FileOpts {
            write: true,
            ..FileOpts::default()
        };
        let f = dir.open_file(path.file_name().unwrap(), &rw).unwrap();
        assert!(try_lock(&f).unwrap());
        create(&dir, "ready", "");
        std::thread::sleep(Duration::from_secs(120));
    }

    #[test]
    fn try_lock_sees_a_lock_held_by_another_process() {
        let (td, dir) = fixture();
        create(&dir, "lock", "");
        let test_name = format!(
            "{}::lock_holder_child",
            module_path!().split_once("::").unwrap().1
        );
        let mut child = std::process::Command::new(std::env::current_exe().unwrap())
            .args(["--ignored", "--exact", &test_name, "--nocapture"])
            .env(CHILD_LOCK, td.path().join("lock"))
            .stdout(std::process::Stdio::null())
            .spawn()
            .unwrap();
        let start = Instant::now();
        while dir.stat(os("ready")).is_err() {
            assert!(child.try_wait().unwrap().is_none(), "the child ended early");
            assert!(
                start.elapsed() < Duration::from_secs(60),
                "the child never locked"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
        let rw = FileOpts {
            write: true,
            ..FileOpts::default()
        };
        let f = dir.open_file(os("lock"), &rw).unwrap();
        assert!(!try_lock(&f).unwrap(), "the child's lock was not seen");
        assert_eq!(process_alive(child.id()), Some(true));
        child.kill().unwrap();
        child.wait().unwrap();
        assert_eq!(process_alive(child.id()), Some(false));
        assert!(
            try_lock(&f).unwrap(),
            "the dead child's lock was not released"
        );
        unlock(&f).unwrap();
        drop((f, dir));
        td.close().unwrap();
    }

    #[test]
    fn process_alive_tells_this_process_from_no_process() {
        assert_eq!(process_alive(std::process::id()), Some(true));
        // Process ids are multiples of 4; this one is never handed out.
        assert_eq!(process_alive(0xFFFF_FFFD), Some(false));
    }

    #[test]
    fn is_transient_accepts_access_sharing_and_lock_violations_only() {
        for code in [5, 32, 33] {
            assert!(is_transient(&io::Error::from_raw_os_error(code)), "{code}");
        }
        assert!(!is_transient(&io::Error::from_raw_os_error(2)));
        assert!(!is_transient(&link_error()));
        assert!(!is_transient(&io::Error::from(
            io::ErrorKind::PermissionDenied
        )));
    }

    #[test]
    fn is_link_error_accepts_only_the_link_refusal() {
        assert!(is_link_error(&link_error()));
        assert!(!is_link_error(&io::Error::from_raw_os_error(2)));
        assert!(!is_link_error(&io::Error::from(io::ErrorKind::NotFound)));
    }

    fn reparse_buffer(tag: u32, path_at: usize, sub: &str, print: &str) -> Vec<u8> {
        let sub: Vec<u8> = sub.encode_utf16().flat_map(u16::to_le_bytes).collect();
        let print: Vec<u8> = print.encode_utf16().flat_map(u16::to_le_bytes).collect();
        let mut b = Vec::new();
        b.extend_from_slice(&tag.to_le_bytes());
        b.extend_from_slice(&0u16.to_le_bytes()); // data length (unread)
        b.extend_from_slice(&0u16.to_le_bytes());
        b.extend_from_slice(&0u16.to_le_bytes()); // substitute offset
        b.extend_from_slice(&(sub.len() as u16).to_le_bytes());
        b.extend_from_slice(&(sub.len() as u16).to_le_bytes()); // print offset
        b.extend_from_slice(&(print.len() as u16).to_le_bytes());
        b.resize(path_at, 0); // symlink flags
        b.extend_from_slice(&sub);
        b.extend_from_slice(&print);
        b
    }

    #[test]
    fn read_link_parses_symlink_and_junction_buffers() {
        let b = reparse_buffer(IO_REPARSE_TAG_SYMLINK, 20, "\\??\\C:\\target", "C:\\target");
        assert_eq!(
            parse_reparse_target(&b).unwrap(),
            PathBuf::from("C:\\target")
        );
        let b = reparse_buffer(IO_REPARSE_TAG_MOUNT_POINT, 16, "\\??\\D:\\j", "");
        assert_eq!(
            parse_reparse_target(&b).unwrap(),
            PathBuf::from("\\??\\D:\\j")
        );
        let e = parse_reparse_target(&reparse_buffer(0x8000_0017, 16, "x", "")).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::Unsupported);
        let mut short = reparse_buffer(IO_REPARSE_TAG_SYMLINK, 20, "abc", "abc");
        short.truncate(24);
        assert_eq!(
            parse_reparse_target(&short).unwrap_err().kind(),
            io::ErrorKind::InvalidData
        );
        let (td, dir) = fixture();
        create(&dir, "plain", "");
        assert!(dir.read_link(os("plain")).is_err());
        drop(dir);
        td.close().unwrap();
    }

    #[test]
    fn links_are_listed_refused_and_removed_as_themselves_where_they_can_be_made() {
        // Runs its assertions natively (a Windows runner as administrator or in developer
        // mode). Wine's CreateSymbolicLinkW answers TRUE and makes nothing, and an
        // unprivileged Windows user may not make links: then nothing can be shown here.
        let (td, dir) = fixture();
        let outside = tempfile::tempdir().unwrap();
        std::fs::write(outside.path().join("secret"), "s").unwrap();
        let dlink = td.path().join("dlink");
        let flink = td.path().join("flink");
        let made = std::os::windows::fs::symlink_dir(outside.path(), &dlink).is_ok()
            && std::os::windows::fs::symlink_file(outside.path().join("secret"), &flink).is_ok()
            && std::fs::symlink_metadata(&dlink).is_ok()
            && std::fs::symlink_metadata(&flink).is_ok();
        if !made {
            eprintln!("no symlink can be made here (Wine, or no privilege): nothing shown");
            return;
        }
        let mut got = dir.entries().unwrap();
        got.sort();
        assert_eq!(
            got,
            [
                (OsString::from("dlink"), EntryKind::Symlink),
                (OsString::from("flink"), EntryKind::Symlink)
            ]
        );
        assert_eq!(dir.stat(os("dlink")).unwrap().kind, EntryKind::Symlink);
        assert_eq!(dir.stat(os("flink")).unwrap().kind, EntryKind::Symlink);
        assert!(is_link_error(&dir.open_dir(os("dlink")).unwrap_err()));
        assert!(is_link_error(&dir.open_dir(os("flink")).unwrap_err()));
        for name in ["dlink", "flink"] {
            let e = dir.open_file(os(name), &FileOpts::read()).unwrap_err();
            assert!(is_link_error(&e), "{name}: {e}");
        }
        let e = dir
            .open_beneath_file(Path::new("dlink/secret"), &FileOpts::read())
            .unwrap_err();
        assert!(is_link_error(&e), "{e}");
        assert_eq!(dir.read_link(os("dlink")).unwrap(), outside.path());
        dir.remove_file(os("dlink")).unwrap();
        dir.remove_file(os("flink")).unwrap();
        assert!(dir.entries().unwrap().is_empty());
        assert_eq!(
            std::fs::read_to_string(outside.path().join("secret")).unwrap(),
            "s"
        );
        drop(dir);
        td.close().unwrap();
        outside.close().unwrap();
    }

    #[test]
    fn set_mode_and_sync_succeed_as_no_ops() {
        let (td, dir) = fixture();
        create(&dir, "f", "");
        let f = dir.open_file(os("f"), &FileOpts::read()).unwrap();
        set_mode(&f, 0o600).unwrap();
        dir.sync().unwrap();
        drop((f, dir));
        td.close().unwrap();
    }
}
