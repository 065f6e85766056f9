//! Judgments about what is on disk now that the planners and the executor both make, so that
//! a plan and its application decide by the same function: an item's digest in the form its
//! kind has, whether a session's live lease is held, and whether a store restore was cut short.

use std::path::Path;

use fsroot::{EntryKind, LockProbe, Root};
use plan::Precondition;
use store::ids::{LATE_USAGE_DIR, OWNER_LOCK};

/// The digest of the item at `rel` in the form its kind has: a regular file's size and
/// SHA-256, a directory's tree digest. `Ok(None)`: nothing, or something that is neither.
pub fn item_digest(root: &Root, rel: &str) -> fsroot::Result<Option<Precondition>> {
    let path = Path::new(rel);
    Ok(match root.stat(path)?.map(|s| s.kind) {
        Some(EntryKind::File) => {
            let d = root.file_digest(path)?;
            Some(Precondition::File {
                bytes: d.bytes,
                sha256: d.sha256,
            })
        }
        Some(EntryKind::Dir) => {
            let d = root.tree_digest(path)?;
            Some(Precondition::Tree {
                bytes: d.bytes,
                tree_blake3: d.tree_blake3,
            })
        }
        _ => None,
    })
}

/// Whether another process holds session `id`'s live lease, judged as the scan judges it: a
/// lease that is not a regular file is no lease (nobody can hold it). `Err` says why it could
/// not be checked: a skip, never a guess.
pub fn lease_held(root: &Root, id: &str) -> Result<bool, LeaseProbeError> {
    let lease = format!("{LATE_USAGE_DIR}/{id}.live");
    let path = Path::new(&lease);
    match root.stat(path) {
        // Nothing there, or no regular file: no lease. A `.late-usage` that is a symlink or
        // not a directory holds no lease either (the app needs a real directory; the scan
        // ignores such an entry).
        Ok(None) => return Ok(false),
        Ok(Some(s)) if s.kind != EntryKind::File => return Ok(false),
        Ok(Some(_)) => {}
        Err(e) if e.is_symlink() => return Ok(false),
        Err(e) => return Err(LeaseProbeError(e)),
    }
    root.probe_lock(path)
        .map(|p| p == LockProbe::Held)
        .map_err(LeaseProbeError)
}

/// A live lease that could not be checked ([`lease_held`]): the filesystem's error, which names
/// the lease's path.
#[derive(Debug, thiserror::Error)]
#[error("cannot check the live lease: {0}")]
pub struct LeaseProbeError(pub fsroot::Error);

/// Whether nobody holds the lock file `rel` (missing counts as free).
pub fn lock_is_free(root: &Root, rel: &str) -> bool {
    matches!(
        root.probe_lock(Path::new(rel)),
        Ok(LockProbe::Missing | LockProbe::Free)
    )
}

/// When a restore of the store `original` from `moved_to` was cut short midway, the digest of
/// the two halves together (the store as it was set aside); `None` when the state is anything
/// else. The trace of the store-move protocol is required: `original` is a real directory
/// without the owner lock file, `moved_to` one that still has it (the lock file moves last),
/// and no name is in both. The planner and the executor judge by this one function.
pub fn store_restore_cut_short(
    root: &Root,
    original: &str,
    moved_to: &str,
) -> Option<Precondition> {
    let is_dir = |p: &str| {
        root.stat(Path::new(p))
            .ok()
            .flatten()
            .is_some_and(|s| s.kind == EntryKind::Dir)
    };
    let has_lock = |p: &str| {
        root.stat(Path::new(&format!("{p}/{OWNER_LOCK}")))
            .ok()
            .flatten()
            .is_some()
    };
    if !(is_dir(original) && is_dir(moved_to)) || has_lock(original) || !has_lock(moved_to) {
        return None;
    }
    let d = root
        .merged_tree_digest(&[Path::new(original), Path::new(moved_to)])
        .ok()?;
    Some(Precondition::Tree {
        bytes: d.bytes,
        tree_blake3: d.tree_blake3,
    })
}
