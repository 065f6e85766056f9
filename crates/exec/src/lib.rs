//! The bounded executor: applies a [`Plan`] through a [`WritableRoot`], action for action.
//! It holds the single-flight `.reconcile.lock`, re-checks each action's precondition and the
//! session's live lease immediately before acting, writes the manifest line before each move,
//! and receipts every action applied, skipped or failed. It never deletes.

mod records;

use std::path::Path;

use fsroot::{LockGuard, LockProbe, TryLock, WritableRoot};
use plan::{
    ActionKind, ItemKind, Outcome, OutcomeKind, Plan, PlannedAction, Precondition, Summary,
};
use store::ids::{LATE_USAGE_DIR, OWNER_LOCK, RECONCILE_DIR, RECONCILE_LOCK, SET_ASIDE_DIR};
use store::{Clock, Timestamp};

mod act;
pub mod admin;
mod reclaim;
pub mod store_move;

use act::{Act, Extra};
pub use reclaim::{
    acquire_sweep_lock, apply_reclaim, read_pending, PendingDeletion, ReclaimTargets, Reclaimed,
    PENDING_DIR,
};
pub use records::{LastRun, ManifestLine, Receipt};

/// A run id, `YYYYMMDDTHHMMSSZ-<6 hex>`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunId(pub String);

impl RunId {
    /// A fresh run id at `now`: the time, then six hex digits unique to this process and call.
    // The system clock only seeds the random part; the time in the id is `now`.
    #[allow(clippy::disallowed_methods)]
    pub fn new(now: Timestamp) -> RunId {
        use std::sync::atomic::{AtomicU64, Ordering};
        static COUNTER: AtomicU64 = AtomicU64::new(0);
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or_default();
        let mut h = blake3::Hasher::new();
        h.update(&std::process::id().to_le_bytes());
        h.update(&nanos.to_le_bytes());
        h.update(&COUNTER.fetch_add(1, Ordering::Relaxed).to_le_bytes());
        let hex = h.finalize().to_hex();
        RunId(format!("{}-{}", now.compact(), &hex[..6]))
    }

    /// Whether `s` has the shape of a run id.
    pub fn is_valid(s: &str) -> bool {
        let b = s.as_bytes();
        b.len() == 23
            && b[8] == b'T'
            && b[15] == b'Z'
            && b[16] == b'-'
            && b[..8].iter().chain(&b[9..15]).all(u8::is_ascii_digit)
            && b[17..]
                .iter()
                .all(|c| c.is_ascii_digit() || (b'a'..=b'f').contains(c))
    }
}

/// Takes `S/.reconcile.lock` (mode 0600, non-blocking). `Ok(None)`: another run holds it.
///
/// Refuses first, naming the path, when the doctor's own `.reconcile` or `.set-aside` exists as
/// anything but a real directory (a symlink there would carry its writes elsewhere).
pub fn acquire_reconcile_lock(root: &WritableRoot) -> fsroot::Result<Option<LockGuard>> {
    for own in [RECONCILE_DIR, SET_ASIDE_DIR] {
        let path = Path::new(own);
        match root.stat(path)? {
            Some(s) if s.kind == fsroot::EntryKind::Symlink => {
                return Err(fsroot::Error::SymlinkInPath {
                    path: root.display_path(path),
                })
            }
            Some(s) if s.kind != fsroot::EntryKind::Dir => {
                return Err(fsroot::Error::NotADirectory {
                    path: root.display_path(path),
                })
            }
            _ => {}
        }
    }
    single_flight_lock(root, RECONCILE_LOCK)
}

/// Takes a single-flight lock file `rel` (created with mode 0600, non-blocking): `Ok(None)` when
/// another run holds it. The sessions pack's `.reconcile.lock` and the build-dirs state lock.
pub fn single_flight_lock(root: &WritableRoot, rel: &str) -> fsroot::Result<Option<LockGuard>> {
    match root.try_lock(Path::new(rel), true, 0o600)? {
        TryLock::Acquired(g) => Ok(Some(g)),
        TryLock::Held | TryLock::Missing => Ok(None),
    }
}

/// What applying a plan did.
#[derive(Debug, Default)]
pub struct Applied {
    /// One outcome per action, in plan order.
    pub outcomes: Vec<Outcome>,
    /// Counts of applied actions, and errors.
    pub summary: Summary,
    /// Whether a receipt could not be written: an action was done (or skipped) without its
    /// record, so the run fails (exit 1) although every action may have been applied.
    pub records_failed: bool,
}

/// Applies `plan` as run `run`. Requires the reconcile lock (the guard proves it is held).
pub fn apply_plan(
    root: &WritableRoot,
    _lock: &LockGuard,
    plan: &Plan,
    run: &RunId,
    clock: Clock,
) -> Applied {
    let mut applied = Applied::default();
    let planned_at = plan
        .planned_at
        .clone()
        .unwrap_or_else(|| clock.now().to_string());
    for action in &plan.actions {
        let (outcome, why, extra) = match apply_one(root, action, run, clock, &planned_at) {
            Ok(extra) => (OutcomeKind::Applied, None, extra),
            Err(Refusal::Skip(why)) => (OutcomeKind::Skipped, Some(why), Default::default()),
            Err(Refusal::Undone(why, extra)) => (OutcomeKind::Skipped, Some(why), extra),
            Err(Refusal::Fail(why)) => {
                applied.summary.errors.push(why.clone());
                (OutcomeKind::Failed, Some(why), Default::default())
            }
        };
        if outcome == OutcomeKind::Applied {
            // Set-asides and thread rewrites (their previous versions) both fill the run's
            // set-aside directory.
            if !matches!(action.action, ActionKind::ReclaimDir | ActionKind::Purge) {
                applied.summary.set_aside_path = Some(format!("{SET_ASIDE_DIR}/{}", run.0));
            }
        }
        let receipt = Receipt {
            run: run.0.clone(),
            seq: action.seq,
            rule: action.rule.clone(),
            action: action.action,
            path: action.path.clone(),
            outcome,
            why: why.clone(),
            at: clock.now().to_string(),
            extra,
        };
        if let Err(e) = append_json_line(root, store::ids::RECEIPTS_PATH, &receipt) {
            applied.summary.errors.push(e.to_string());
            applied.records_failed = true;
        }
        applied.outcomes.push(Outcome {
            seq: action.seq,
            outcome,
            why,
        });
    }
    applied
}

/// The temporary files of interrupted doctor writes that a real run will remove: those the scan
/// found (`scanned`: in S and in threads directories) plus any in `.reconcile/`, except this
/// process's own, those inside a store another process holds, and those of a live session.
/// Reads only, so a dry run lists exactly what a real run removes. A `.reconcile/` that cannot
/// be listed (other than missing) is reported in `errors`, never taken for an empty one.
pub fn removable_interrupted_writes(
    root: &fsroot::Root,
    scanned: &[String],
    errors: &mut Vec<String>,
) -> Vec<String> {
    let mut all: Vec<String> = scanned.to_vec();
    match root.list(Path::new(RECONCILE_DIR)) {
        Ok(entries) => {
            for e in entries {
                let name = e.name.to_string_lossy();
                if e.kind == fsroot::EntryKind::File && fsroot::temp::is_temp(&name) {
                    all.push(format!("{RECONCILE_DIR}/{name}"));
                }
            }
        }
        Err(e) if e.is_not_found() => {}
        Err(e) => errors.push(e.to_string()),
    }
    // This process's own writes in progress are never someone's interrupted write.
    all.retain(|p| {
        !fsroot::temp::is_own(p.rsplit('/').next().unwrap_or(p))
            && interrupted_write_is_free(root, p)
    });
    all.sort();
    all
}

fn lock_is_free(root: &fsroot::Root, rel: &str) -> bool {
    matches!(
        root.probe_lock(Path::new(rel)),
        Ok(LockProbe::Missing | LockProbe::Free)
    )
}

/// Whether nobody holds the store or the session a temp file lies in.
fn interrupted_write_is_free(root: &fsroot::Root, path: &str) -> bool {
    if let Some((store, _)) = path.rsplit_once("/threads/") {
        if !lock_is_free(root, &format!("{store}/{OWNER_LOCK}")) {
            return false;
        }
    }
    lease_is_free(root, path)
}

/// Whether nobody holds the live lease of the session a temp file belongs to.
fn lease_is_free(root: &fsroot::Root, path: &str) -> bool {
    let session = match path.split_once('/') {
        Some((first, _)) => first.to_owned(),
        None => fsroot::temp::target(path)
            .map(|t| t.strip_suffix(".json").unwrap_or(t).to_owned())
            .unwrap_or_default(),
    };
    lease_held(root, &session).is_ok_and(|held| !held)
}

/// Removes, through the one delete seam, the temporary files that interrupted atomic writes of
/// earlier doctor runs left (`paths`, from [`removable_interrupted_writes`]). They are the
/// doctor's own incomplete copies, never session data. Each is re-checked immediately before
/// (the store's owner lock is taken for one inside a store) and each removal is receipted.
/// Returns what was removed and the errors met.
pub fn remove_interrupted_writes(
    root: &WritableRoot,
    _lock: &LockGuard,
    paths: &[String],
    run: &RunId,
    clock: Clock,
) -> Cleanup {
    let mut removed = Vec::new();
    let mut errors = Vec::new();
    let mut records_failed = false;
    for path in paths {
        // Re-checked right before: the store's owner lock is taken (and held until the removal
        // is done), then the session's lease probed. A temp file that became live since the
        // dry run listed it is left, and the skip receipted like any other.
        let owner = match path.rsplit_once("/threads/") {
            Some((store, _)) => lock_store(root, store).map_err(|r| match r {
                Refusal::Skip(why) | Refusal::Fail(why) | Refusal::Undone(why, _) => why,
            }),
            None => Ok(None),
        };
        let (outcome, why, freed) = match owner {
            Err(why) => (OutcomeKind::Skipped, Some(why), 0),
            // The store's owner lock is ours now (a second probe of it would see it held): only
            // the session's lease is left to check.
            Ok(_) if !lease_is_free(root, path) => {
                (OutcomeKind::Skipped, Some("session is live".to_owned()), 0)
            }
            Ok(_guard) => match root.remove_file(Path::new(path)) {
                Ok(b) => {
                    removed.push(path.clone());
                    (OutcomeKind::Applied, None, b)
                }
                Err(e) => {
                    errors.push(e.to_string());
                    (OutcomeKind::Failed, Some(e.to_string()), 0)
                }
            },
        };
        let receipt = Receipt {
            run: run.0.clone(),
            seq: 0,
            rule: "doctor".into(),
            action: ActionKind::RemoveTemp,
            path: path.clone(),
            outcome,
            why,
            at: clock.now().to_string(),
            extra: serde_json::Map::from_iter([("bytes_freed".to_owned(), freed.into())]),
        };
        if let Err(e) = append_json_line(root, store::ids::RECEIPTS_PATH, &receipt) {
            errors.push(e.to_string());
            records_failed = true;
        }
    }
    Cleanup {
        removed,
        errors,
        records_failed,
    }
}

/// What [`remove_interrupted_writes`] did.
#[derive(Debug, Default)]
pub struct Cleanup {
    /// The temporary files removed.
    pub removed: Vec<String>,
    /// Removals that failed, and receipts that could not be written.
    pub errors: Vec<String>,
    /// Whether a receipt could not be written (the run fails, as in [`Applied`]).
    pub records_failed: bool,
}

/// Writes `S/.reconcile/last.json` atomically.
pub fn write_last(root: &WritableRoot, last: &LastRun) -> fsroot::Result<()> {
    let mut bytes = serde_json::to_vec_pretty(last).expect("last.json serializes");
    bytes.push(b'\n');
    root.write_atomic(Path::new(store::ids::LAST_RUN_PATH), &bytes)
}

pub(crate) enum Refusal {
    Skip(String),
    Fail(String),
    /// Skipped after acting and undoing it; the receipt carries what was undone.
    Undone(String, Extra),
}

pub(crate) fn append_json_line<T: serde::Serialize>(
    root: &WritableRoot,
    rel: &str,
    value: &T,
) -> fsroot::Result<()> {
    let mut line = serde_json::to_vec(value).expect("record serializes");
    line.push(b'\n');
    root.append(Path::new(rel), &line)
}

/// The session id an item belongs to: the stem of `<id>.json` or the first component.
fn session_of(path: &str) -> &str {
    let first = path.split('/').next().unwrap_or(path);
    first.strip_suffix(".json").unwrap_or(first)
}

fn check_not_live(root: &WritableRoot, action: &PlannedAction) -> Result<(), Refusal> {
    if lease_held(root, session_of(&action.path))? {
        return Err(Refusal::Skip("session is live".into()));
    }
    Ok(())
}

/// Whether another process holds session `id`'s live lease, judged as the scan judges it: a
/// lease that is not a regular file is no lease (nobody can hold it); one that cannot be probed
/// is a skip, never a guess. Every check of a lease at execution goes through here.
pub(crate) fn lease_held(root: &fsroot::Root, id: &str) -> Result<bool, Refusal> {
    let lease = format!("{LATE_USAGE_DIR}/{id}.live");
    let path = Path::new(&lease);
    match root.stat(path) {
        // Nothing there, or no regular file: no lease. A `.late-usage` that is a symlink or
        // not a directory holds no lease either (the app needs a real directory; the scan
        // ignores such an entry).
        Ok(None) => return Ok(false),
        Ok(Some(s)) if s.kind != fsroot::EntryKind::File => return Ok(false),
        Ok(Some(_)) => {}
        Err(e) if e.is_symlink() => return Ok(false),
        Err(e) => return Err(Refusal::Skip(format!("cannot check the live lease: {e}"))),
    }
    // Missing: no lease. A lease directory that is not a directory cannot be probed: a skip.
    match root.probe_lock(path) {
        Ok(p) => Ok(p == LockProbe::Held),
        Err(e) => Err(Refusal::Skip(format!("cannot check the live lease: {e}"))),
    }
}

/// The digest of the item at `rel` in the form its kind has: a regular file's size and
/// SHA-256, a directory's tree digest. `Ok(None)`: nothing, or something that is neither.
pub(crate) fn item_digest(root: &fsroot::Root, rel: &str) -> fsroot::Result<Option<Precondition>> {
    let path = Path::new(rel);
    Ok(match root.stat(path)?.map(|s| s.kind) {
        Some(fsroot::EntryKind::File) => {
            let d = root.file_digest(path)?;
            Some(Precondition::File {
                bytes: d.bytes,
                sha256: d.sha256,
            })
        }
        Some(fsroot::EntryKind::Dir) => {
            let d = root.tree_digest(path)?;
            Some(Precondition::Tree {
                bytes: d.bytes,
                tree_blake3: d.tree_blake3,
            })
        }
        _ => None,
    })
}

/// When a restore of the store `original` from `moved_to` was cut short midway, the digest of
/// the two halves together (the store as it was set aside); `None` when the state is anything
/// else. The trace of the store-move protocol is required: `original` is a real directory
/// without the owner lock file, `moved_to` one that still has it (the lock file moves last),
/// and no name is in both. The planner and the executor judge by this one function.
pub(crate) fn store_restore_cut_short(
    root: &fsroot::Root,
    original: &str,
    moved_to: &str,
) -> Option<Precondition> {
    let is_dir = |p: &str| {
        root.stat(Path::new(p))
            .ok()
            .flatten()
            .is_some_and(|s| s.kind == fsroot::EntryKind::Dir)
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

fn check_precondition(root: &WritableRoot, action: &PlannedAction) -> Result<(), Refusal> {
    // A store restore cut short midway: the two halves together are checked.
    if action.action == ActionKind::Restore
        && action.kind == Some(ItemKind::RuntimeStore)
        && root.stat(Path::new(&action.path)).ok().flatten().is_some()
    {
        let from = action.from.as_deref().unwrap_or_default();
        return match store_restore_cut_short(root, &action.path, from) {
            Some(d) if d == action.precondition => Ok(()),
            _ => Err(Refusal::Skip(format!(
                "original path is occupied: {}",
                action.path
            ))),
        };
    }
    // A restore checks the item where it is now; every other action checks its path.
    let path = Path::new(action.from.as_deref().unwrap_or(&action.path));
    let holds = match &action.precondition {
        Precondition::File { bytes, sha256 } => root
            .file_digest(path)
            .is_ok_and(|d| d.bytes == *bytes && d.sha256 == *sha256),
        Precondition::Tree { bytes, tree_blake3 } => root
            .tree_digest(path)
            .is_ok_and(|d| d.bytes == *bytes && d.tree_blake3 == *tree_blake3),
    };
    if holds {
        Ok(())
    } else {
        Err(Refusal::Skip("changed since planned".into()))
    }
}

fn apply_one(
    root: &WritableRoot,
    action: &PlannedAction,
    run: &RunId,
    clock: Clock,
    planned_at: &str,
) -> Result<Extra, Refusal> {
    check_not_live(root, action)?;
    // The store's owner lock is held from before the precondition check until the action is
    // done, so no host can open the store in between.
    let _owner = match store_of(action) {
        Some(store) => lock_store(root, &store)?,
        None => None,
    };
    check_precondition(root, action)?;
    let cx = Act {
        root,
        action,
        run,
        clock,
        planned_at,
    };
    match action.action {
        ActionKind::SetAside if action.kind == Some(ItemKind::RuntimeStore) => cx.move_store(),
        ActionKind::SetAside => cx.set_aside(),
        ActionKind::UnbindThread => cx.unbind_thread(),
        ActionKind::RecoverThread => cx.recover_thread(),
        ActionKind::BindThread => cx.bind_thread(),
        ActionKind::ReclaimDir => Err(Refusal::Fail(format!(
            "{}: reclaim_dir belongs to the build-dirs pack, not to a sessions plan",
            action.path
        ))),
        ActionKind::RemoveEmptyDir => cx.remove_empty_dir(),
        ActionKind::Restore => cx.restore(),
        ActionKind::Purge => cx.purge(),
        ActionKind::RemoveTemp => Err(Refusal::Fail(format!(
            "{}: remove_temp is housekeeping of a real run, never a planned action",
            action.path
        ))),
    }
}

/// The store an action works in: the store itself for a store set-aside, the store of the
/// thread record for thread actions.
fn store_of(action: &PlannedAction) -> Option<String> {
    match action.action {
        ActionKind::SetAside if action.kind == Some(ItemKind::RuntimeStore) => {
            Some(action.path.clone())
        }
        // A store being restored is locked where it is now, inside the set-aside run.
        ActionKind::Restore if action.kind == Some(ItemKind::RuntimeStore) => action.from.clone(),
        // A thread record put back in place is written inside its store.
        ActionKind::Restore if action.kind == Some(ItemKind::PreviousVersion) => action
            .path
            .rsplit_once("/threads/")
            .map(|(store, _)| store.to_owned()),
        ActionKind::UnbindThread | ActionKind::RecoverThread | ActionKind::BindThread => action
            .path
            .rsplit_once("/threads/")
            .map(|(store, _)| store.to_owned()),
        _ => None,
    }
}

fn lock_store(root: &WritableRoot, store: &str) -> Result<Option<LockGuard>, Refusal> {
    let lock = format!("{store}/{OWNER_LOCK}");
    match root.try_lock(Path::new(&lock), false, 0o644) {
        Ok(TryLock::Acquired(g)) => Ok(Some(g)),
        Ok(TryLock::Missing) => Ok(None),
        Ok(TryLock::Held) => Err(Refusal::Skip("store is in use by another process".into())),
        Err(e) => Err(Refusal::Skip(format!(
            "cannot take the store's owner lock: {e}"
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_reconcile_dir_that_cannot_be_listed_is_reported_not_taken_for_empty() {
        let tmp = tempfile::tempdir().unwrap();
        let root = fsroot::Root::open(tmp.path()).unwrap();
        let mut errors = Vec::new();
        assert!(removable_interrupted_writes(&root, &[], &mut errors).is_empty());
        assert!(
            errors.is_empty(),
            "a missing .reconcile is empty: {errors:?}"
        );
        let elsewhere = tempfile::tempdir().unwrap();
        std::os::unix::fs::symlink(elsewhere.path(), tmp.path().join(RECONCILE_DIR)).unwrap();
        assert!(removable_interrupted_writes(&root, &[], &mut errors).is_empty());
        assert_eq!(errors.len(), 1, "{errors:?}");
        assert!(errors[0].contains(RECONCILE_DIR), "{}", errors[0]);
    }
}
