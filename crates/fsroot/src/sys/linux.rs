//! Linux's part of the Unix backend: `openat2(RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS)`, which
//! resolves a whole relative path beneath a handle in one call, and `statx` mount ids (so a
//! bind mount of the same filesystem counts as another mount). Everything else is `unix.rs`.

use std::ffi::OsStr;
use std::io;
use std::os::fd::{BorrowedFd, OwnedFd};
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};

use rustix::fs::{Mode, OFlags, ResolveFlags};
use rustix::io::Errno;

use super::MountId;

pub(crate) use super::unix::*;

/// Whether `openat2` is there to use (cleared on the first `ENOSYS`).
static OPENAT2: AtomicBool = AtomicBool::new(true);

/// Opens `p` beneath `base` with `flags` in one `openat2` call, following no symlink on the way
/// or at the end. `None`: the kernel has no `openat2` (the caller walks one component at a
/// time instead).
pub(super) fn openat2(
    base: BorrowedFd<'_>,
    p: &Path,
    flags: OFlags,
    mode: Mode,
) -> Option<io::Result<OwnedFd>> {
    if !OPENAT2.load(Ordering::Relaxed) {
        return None;
    }
    let flags = flags | OFlags::CLOEXEC | OFlags::NOFOLLOW;
    // `openat2` refuses a mode where nothing is created.
    let mode = if flags.contains(OFlags::CREATE) {
        mode
    } else {
        Mode::empty()
    };
    let p = if p.as_os_str().is_empty() {
        Path::new(".")
    } else {
        p
    };
    let how = ResolveFlags::BENEATH | ResolveFlags::NO_SYMLINKS | ResolveFlags::NO_MAGICLINKS;
    // `EAGAIN`: a rename or mount elsewhere raced the lookup; the kernel asks to retry.
    for _ in 0..16 {
        match rustix::fs::openat2(base, p, flags, mode, how) {
            Err(Errno::AGAIN) => continue,
            Err(Errno::NOSYS) => {
                OPENAT2.store(false, Ordering::Relaxed);
                return None;
            }
            r => return Some(r.map_err(Into::into)),
        }
    }
    Some(Err(Errno::AGAIN.into()))
}

/// The mount of `name` in `dir` (never followed): its mount id where `statx` gives one, and
/// its device.
pub(super) fn mount_of(dir: BorrowedFd<'_>, name: &OsStr) -> io::Result<MountId> {
    let st = rustix::fs::statx(
        dir,
        name,
        rustix::fs::AtFlags::SYMLINK_NOFOLLOW,
        rustix::fs::StatxFlags::MNT_ID | rustix::fs::StatxFlags::BASIC_STATS,
    )?;
    let dev = (u64::from(st.stx_dev_major) << 32) | u64::from(st.stx_dev_minor);
    let id = if st.stx_mask & rustix::fs::StatxFlags::MNT_ID.bits() != 0 {
        st.stx_mnt_id
    } else {
        0
    };
    Ok(MountId(dev, id))
}
