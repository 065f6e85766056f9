//! The store-move protocol (invariants.md, "moving a store"): the only way a runtime store
//! moves. The caller holds the store's owner lock for the whole call.

use std::path::Path;

use fsroot::WritableRoot;
use store::ids::OWNER_LOCK;

/// A point of the protocol, reported to the observer as it is passed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MoveStep {
    /// An entry other than the lock file was renamed into the destination.
    EntryMoved(String),
    /// The owner lock file was renamed (always the last entry).
    LockFileMoved,
}

/// What the move did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MoveOutcome {
    /// Whether the emptied source directory was removed. `false`: a host created a fresh store
    /// there during the move, and it was left to its owner.
    pub source_removed: bool,
}

/// Renames every entry of `store` into `dest` (created), the owner lock file last; on a failed
/// rename moves back what moved, in reverse order, and removes the directories it created for
/// the destination (each only while empty); then removes the source directory only if it is
/// still empty. Never renames the store directory itself and never unlinks a lock file.
/// The caller must hold the owner lock and release it after this returns.
pub fn move_store(
    root: &WritableRoot,
    store: &str,
    dest: &str,
    observer: &mut dyn FnMut(&MoveStep),
) -> Result<MoveOutcome, String> {
    let src = Path::new(store);
    let dst = Path::new(dest);
    let mut names: Vec<_> = root
        .list(src)
        .map_err(|e| e.to_string())?
        .into_iter()
        .map(|e| e.name)
        .collect();
    names.sort_by_key(|n| n == OWNER_LOCK);
    // The directories this move creates, deepest first: a move rolled back removes them again
    // (each only while empty), so it leaves no empty destination behind.
    let mut created = Vec::new();
    for dir in dst.ancestors().filter(|d| !d.as_os_str().is_empty()) {
        match root.stat(dir) {
            Ok(None) => created.push(dir.to_path_buf()),
            _ => break,
        }
    }
    root.create_dir_all(dst).map_err(|e| e.to_string())?;
    for (i, name) in names.iter().enumerate() {
        // `move_item` tries a rename again while Windows refuses it for a reason that passes by
        // itself (a scanner holding a file: platforms.md §8.14); one that lasts is rolled back.
        if let Err(e) = root.move_item(&src.join(name), &dst.join(name)) {
            let mut msg = format!("store move failed, moved back: {e}");
            // A rename that happened and then failed (its directory could not be synced)
            // moved the entry all the same: it goes back with the others. Judged by what is
            // there, not by the error.
            let moved = matches!(root.stat(&dst.join(name)), Ok(Some(_)))
                && matches!(root.stat(&src.join(name)), Ok(None));
            let upto = if moved { i + 1 } else { i };
            for back in names[..upto].iter().rev() {
                if let Err(e2) = root.move_item(&dst.join(back), &src.join(back)) {
                    msg.push_str(&format!(
                        "; could not move back {}: {e2}",
                        back.to_string_lossy()
                    ));
                }
            }
            for dir in &created {
                if !matches!(root.remove_empty_dir(dir), Ok(true)) {
                    break;
                }
            }
            return Err(msg);
        }
        observer(&if name == OWNER_LOCK {
            MoveStep::LockFileMoved
        } else {
            MoveStep::EntryMoved(name.to_string_lossy().into_owned())
        });
    }
    let source_removed = root.remove_empty_dir(src).map_err(|e| e.to_string())?;
    Ok(MoveOutcome { source_removed })
}
