//! Applying a build-dirs plan: every `reclaim_dir` action is checked again immediately before
//! it runs (still a real directory, still the invoking user's, its tree digest unchanged,
//! referenced by no live process in a fresh read of `/proc`), then deleted through the one
//! delete seam (`WritableRoot::remove_tree`, which never follows a symlink), and receipted with
//! the bytes freed. Applied, skipped or failed, every action gets a receipt; the run goes on.
//!
//! Before a deletion starts, a [`PendingDeletion`] record naming the directory (device and
//! inode) is written to the state directory; it is dropped after the receipt. A run killed in
//! between leaves it, and the next run's planner uses it to finish that deletion.

use std::path::Path;

use fsroot::procfs::Procfs;
use fsroot::{EntryKind, LockGuard, Root, WritableRoot};
use plan::{ActionKind, Outcome, OutcomeKind, Plan, PlannedAction};
use serde::{Deserialize, Serialize};
use store::Clock;

use crate::act::Extra;
use crate::{append_json_line, check_precondition, Receipt, Refusal, RunId};

/// Where a build-dirs run applies its plan.
#[derive(Debug)]
pub struct ReclaimTargets<'a> {
    /// The roots, each under the absolute name the plan's actions carry in `root`.
    pub roots: &'a [(String, WritableRoot)],
    /// `/proc`, read again before each deletion.
    pub procfs: &'a Procfs,
    /// The invoking user's uid.
    pub uid: u32,
    /// The directory of the receipts file (and of the run's lock).
    pub state: &'a WritableRoot,
    /// The receipts file, relative to `state`.
    pub receipts_file: &'a str,
    /// The pending deletions read before planning ([`read_pending`]).
    pub pending: &'a [PendingDeletion],
}

/// The directory, in the state directory, of the records of deletions in progress.
pub const PENDING_DIR: &str = "build-dirs-pending";

/// A deletion in progress: written before the tree is deleted, dropped after its receipt.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PendingDeletion {
    /// The run that started it.
    pub run: String,
    /// The absolute root.
    pub root: String,
    /// The directory, relative to the root.
    pub path: String,
    /// Its device number.
    pub dev: u64,
    /// Its inode number.
    pub ino: u64,
    /// When it started, RFC 3339.
    pub at: String,
}

fn pending_file(root: &str, path: &str) -> String {
    let mut h = blake3::Hasher::new();
    h.update(root.as_bytes());
    h.update(b"\0");
    h.update(path.as_bytes());
    format!("{PENDING_DIR}/{}.json", &h.finalize().to_hex()[..16])
}

/// The pending deletions recorded in the state directory, and the records that could not be
/// read (each naming its path). A missing directory holds none.
pub fn read_pending(state: &Root) -> (Vec<PendingDeletion>, Vec<String>) {
    let mut found = Vec::new();
    let mut errors = Vec::new();
    let entries = match state.list(Path::new(PENDING_DIR)) {
        Ok(entries) => entries,
        Err(e) if e.is_not_found() => return (found, errors),
        // Unreadable is not empty: a deletion recorded there must not be taken for none.
        Err(e) => {
            errors.push(e.to_string());
            return (found, errors);
        }
    };
    for e in entries {
        let rel = Path::new(PENDING_DIR).join(&e.name);
        if e.kind != EntryKind::File || rel.extension().is_none_or(|x| x != "json") {
            continue; // an interrupted write's temporary file, or not ours
        }
        match state.read(&rel).map(|b| serde_json::from_slice(&b)) {
            Ok(Ok(p)) => found.push(p),
            Ok(Err(err)) => errors.push(format!(
                "cannot use {}: {err}",
                state.display_path(&rel).display()
            )),
            Err(err) => errors.push(err.to_string()),
        }
    }
    (found, errors)
}

/// Takes the build-dirs single-flight lock `<state>/<lock>` (mode 0600, non-blocking).
/// `Ok(None)`: another run holds it.
pub fn acquire_sweep_lock(state: &WritableRoot, lock: &str) -> fsroot::Result<Option<LockGuard>> {
    crate::single_flight_lock(state, lock)
}

/// What applying a build-dirs plan did.
#[derive(Debug, Default)]
pub struct Reclaimed {
    /// One outcome per action, in plan order.
    pub outcomes: Vec<Outcome>,
    /// Directories deleted.
    pub dirs_reclaimed: u64,
    /// Bytes of the regular files deleted.
    pub bytes_freed: u64,
    /// Failures and receipts that could not be written, each naming its path.
    pub errors: Vec<String>,
    /// Whether some receipt could not be written.
    pub receipt_failed: bool,
}

/// Applies a build-dirs `plan` as run `run`. The lock guard proves the single-flight lock is
/// held.
pub fn apply_reclaim(
    targets: &ReclaimTargets<'_>,
    _lock: &LockGuard,
    plan: &Plan,
    run: &RunId,
    clock: Clock,
) -> Reclaimed {
    let mut done = Reclaimed::default();
    for action in &plan.actions {
        let result = reclaim_one(targets, action, run, clock);
        let (outcome, why, extra) = match result {
            Ok(bytes) => {
                done.dirs_reclaimed += 1;
                done.bytes_freed += bytes;
                let mut extra = Extra::from_iter([
                    ("root".to_owned(), action.root.clone().into()),
                    ("bytes_freed".to_owned(), bytes.into()),
                ]);
                let label = action.root.as_deref().unwrap_or_default();
                if let Some(p) = targets
                    .pending
                    .iter()
                    .find(|p| p.root == label && p.path == action.path)
                {
                    extra.insert("finishes_run".to_owned(), p.run.clone().into());
                }
                (OutcomeKind::Applied, None, extra)
            }
            Err(Refusal::Skip(why) | Refusal::Undone(why, _)) => {
                (OutcomeKind::Skipped, Some(why), root_only(action))
            }
            Err(Refusal::Fail(why)) => {
                done.errors.push(why.clone());
                (OutcomeKind::Failed, Some(why), root_only(action))
            }
        };
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
        if let Err(e) = append_json_line(targets.state, targets.receipts_file, &receipt) {
            done.errors.push(e.to_string());
            done.receipt_failed = true;
        } else if outcome == OutcomeKind::Applied {
            // Deleted and receipted: no longer pending.
            let label = action.root.as_deref().unwrap_or_default();
            let marker = pending_file(label, &action.path);
            if let Err(e) = targets.state.remove_tree(Path::new(&marker)) {
                done.errors.push(e.to_string());
            }
        }
        done.outcomes.push(Outcome {
            seq: action.seq,
            outcome,
            why,
        });
    }
    drop_stale_pending(targets, &mut done);
    done
}

/// Drops the records of pending deletions in this run's roots whose directory is gone (or is
/// another directory now): there is nothing left to finish.
fn drop_stale_pending(targets: &ReclaimTargets<'_>, done: &mut Reclaimed) {
    for p in targets.pending {
        let Some((_, root)) = targets.roots.iter().find(|(name, _)| *name == p.root) else {
            continue;
        };
        let stale = match root.stat(Path::new(&p.path)) {
            Ok(None) => true,
            Ok(Some(s)) => s.dev != p.dev || s.ino != p.ino,
            Err(_) => false,
        };
        if stale {
            let marker = pending_file(&p.root, &p.path);
            if let Err(e) = targets.state.remove_tree(Path::new(&marker)) {
                done.errors.push(e.to_string());
            }
        }
    }
}

fn root_only(action: &PlannedAction) -> Extra {
    Extra::from_iter([("root".to_owned(), action.root.clone().into())])
}

/// Re-checks one action, records it as pending, and deletes its tree; the bytes freed.
fn reclaim_one(
    targets: &ReclaimTargets<'_>,
    action: &PlannedAction,
    run: &RunId,
    clock: Clock,
) -> Result<u64, Refusal> {
    if action.action != ActionKind::ReclaimDir {
        return Err(Refusal::Fail(format!(
            "{}: {} is not an action of the build-dirs pack",
            action.path,
            action.action.verb()
        )));
    }
    let label = action.root.as_deref().unwrap_or_default();
    let Some((_, root)) = targets.roots.iter().find(|(name, _)| name == label) else {
        return Err(Refusal::Fail(format!(
            "{}: its root {label:?} is not a root of this run",
            action.path
        )));
    };
    let path = Path::new(&action.path);
    let mut parts = path.components();
    if !matches!(
        (parts.next(), parts.next()),
        (Some(std::path::Component::Normal(_)), None)
    ) {
        return Err(Refusal::Fail(format!(
            "{}: not a depth-1 entry of {label}",
            action.path
        )));
    }
    let shown = root.display_path(path);
    let stat = match root.stat(path) {
        Ok(Some(s)) if s.kind != EntryKind::Dir => {
            return Err(Refusal::Skip("no longer a real directory".into()))
        }
        Ok(Some(s)) if s.uid != targets.uid => {
            return Err(Refusal::Skip(format!(
                "now owned by uid {}, not by the invoking user",
                s.uid
            )))
        }
        Ok(Some(s)) => s,
        Ok(None) => return Err(Refusal::Skip("gone since planned".into())),
        Err(e) => return Err(Refusal::Skip(format!("cannot inspect it: {e}"))),
    };
    check_precondition(root, action)?;
    // Liveness last, closest to the deletion.
    let processes = targets
        .procfs
        .scan()
        .map(engine::liveness::ProcessRefs::from_scan)
        .map_err(|e| Refusal::Skip(format!("cannot check for live processes: {e}")))?;
    let live = processes
        .referencing(&shown)
        .or_else(|| processes.referencing(&root.canonical_anchor().join(path)));
    if let Some(r) = live {
        return Err(Refusal::Skip(format!("referenced by a live process: {r}")));
    }
    let pending = PendingDeletion {
        run: run.0.clone(),
        root: label.to_owned(),
        path: action.path.clone(),
        dev: stat.dev,
        ino: stat.ino,
        at: clock.now().to_string(),
    };
    let mut record = serde_json::to_vec(&pending).expect("record serializes");
    record.push(b'\n');
    targets
        .state
        .write_atomic(Path::new(&pending_file(label, &action.path)), &record)
        .map_err(|e| {
            Refusal::Fail(format!(
                "cannot record the deletion before starting it: {e}"
            ))
        })?;
    root.remove_tree(path)
        .map_err(|e| Refusal::Fail(format!("deletion cut short, the next run finishes it: {e}")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pending_deletions_that_cannot_be_listed_are_reported_not_taken_for_none() {
        let tmp = tempfile::tempdir().unwrap();
        let state = Root::open(tmp.path()).unwrap();
        // No directory: no pending deletion, nothing to report.
        assert_eq!(read_pending(&state), (Vec::new(), Vec::new()));
        // A symlink where the directory should be is never followed: reported.
        let elsewhere = tempfile::tempdir().unwrap();
        std::os::unix::fs::symlink(elsewhere.path(), tmp.path().join(PENDING_DIR)).unwrap();
        let (found, errors) = read_pending(&state);
        assert!(found.is_empty());
        assert_eq!(errors.len(), 1, "{errors:?}");
        assert!(errors[0].contains(PENDING_DIR), "{}", errors[0]);
    }
}
