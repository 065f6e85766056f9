//! The build-dirs pack's [`Target`]: every `reclaim_dir` action is checked again immediately
//! before it runs (still a real directory, still the invoking user's, not a mount point, its
//! tree digest unchanged, referenced by no live process in a fresh read of the liveness
//! backend (`/proc` on Linux, the process table on Windows), not possibly used by a process
//! that read could not see into, and, on Windows, holding no entry another process keeps open
//! without `FILE_SHARE_DELETE`: "in use", never forced), then deleted through the one delete
//! seam (`WritableRoot::remove_tree`, which never follows a symlink), and receipted with the
//! bytes freed by [`crate::execute`], like every other action.
//!
//! Before a deletion starts, a [`PendingDeletion`] record naming the directory (device and
//! inode) is written to the state directory; it is dropped after the receipt. A run killed in
//! between leaves it, and the next run's planner uses it to finish that deletion.

use std::path::Path;

use engine::liveness::Liveness;
use engine::records::Receipt;
use fsroot::{EntryKind, LockGuard, Problem, Root, WritableRoot};
use plan::{Action, OutcomeKind, PlannedAction};

use crate::{append_json_line, check_precondition, Extra, Refusal, Step, Target};

/// Where a build-dirs run applies its plan: the [`Target`] of the build-dirs pack. Each
/// `reclaim_dir` is checked again immediately before it runs, recorded as pending, deleted,
/// and its pending record dropped once its receipt is written.
#[derive(Debug)]
pub struct BuildDirsTarget<'a> {
    /// The roots, each under the absolute name the plan's actions carry in `root`.
    pub roots: &'a [(String, WritableRoot)],
    /// The liveness backend (`/proc` on Linux), read again before each deletion.
    pub liveness: &'a Liveness,
    /// The invoking user; `None` when the backend cannot tell it (then no directory is the
    /// invoking user's).
    pub owner: Option<fsroot::Owner>,
    /// The directory of the receipts file (and of the run's lock).
    pub state: &'a WritableRoot,
    /// The receipts file, relative to `state`.
    pub receipts_file: &'a str,
    /// The pending deletions read before planning ([`read_pending`]).
    pub pending: &'a [PendingDeletion],
    /// Directories deleted so far.
    pub dirs_reclaimed: u64,
    /// Bytes of the regular files deleted so far.
    pub bytes_freed: u64,
}

/// The directory, in the state directory, of the records of deletions in progress.
pub const PENDING_DIR: &str = "build-dirs-pending";

/// A deletion in progress: written before the tree is deleted, dropped after its receipt (the
/// one record of deletions in progress, shared with the sessions pack's purge).
pub use engine::records::PendingDeletion;

fn pending_file(root: &str, path: &str) -> String {
    let mut h = blake3::Hasher::new();
    h.update(root.as_bytes());
    h.update(b"\0");
    h.update(path.as_bytes());
    format!("{PENDING_DIR}/{}.json", &h.finalize().to_hex()[..16])
}

/// The pending deletions recorded in the state directory, and the records that could not be
/// read (each naming its path). A missing directory holds none.
pub fn read_pending(state: &Root) -> (Vec<PendingDeletion>, Vec<Problem>) {
    engine::records::read_pending(state, PENDING_DIR)
}

/// Takes the build-dirs single-flight lock `<state>/<lock>` (mode 0600, non-blocking).
/// `Ok(None)`: another run holds it.
pub fn acquire_sweep_lock(state: &WritableRoot, lock: &str) -> fsroot::Result<Option<LockGuard>> {
    crate::single_flight_lock(state, lock)
}

impl Target for BuildDirsTarget<'_> {
    /// The root the action's path is in, and the directory's identity when checked.
    type Held = (usize, fsroot::Stat);

    fn check(&mut self, a: &PlannedAction, _step: &Step<'_>) -> Result<Self::Held, Refusal> {
        let Action::ReclaimDir { root: label } = &a.action else {
            return Err(Refusal::Fail(format!(
                "{}: {} is not an action of the build-dirs pack",
                a.path,
                a.action.kind().verb()
            )));
        };
        let Some(index) = self.roots.iter().position(|(name, _)| name == label) else {
            return Err(Refusal::Fail(format!(
                "{}: its root {label:?} is not a root of this run",
                a.path
            )));
        };
        let root = &self.roots[index].1;
        let path = Path::new(&a.path);
        let mut parts = path.components();
        if !matches!(
            (parts.next(), parts.next()),
            (Some(std::path::Component::Normal(_)), None)
        ) {
            return Err(Refusal::Fail(format!(
                "{}: not a depth-1 entry of {label}",
                a.path
            )));
        }
        let shown = root.display_path(path);
        let stat = match root.stat(path) {
            Ok(Some(s)) if s.kind != EntryKind::Dir => {
                return Err(Refusal::Skip("no longer a real directory".into()))
            }
            Ok(Some(_)) if self.owner.is_none() => {
                return Err(Refusal::Skip(
                    "the invoking user cannot be told on this OS: no directory is theirs".into(),
                ))
            }
            Ok(Some(s)) => {
                // Windows's stat carries no owner: its SID is read apart.
                let owner = if s.owner.is_known() {
                    Ok(s.owner)
                } else {
                    root.owner(path)
                };
                match owner {
                    Ok(o) if Some(o) == self.owner => s,
                    Ok(o) if o.is_known() => {
                        return Err(Refusal::Skip(format!(
                            "now owned by {o}, not by the invoking user"
                        )))
                    }
                    Ok(_) => {
                        return Err(Refusal::Skip(
                            "its owner cannot be told on this OS".to_owned(),
                        ))
                    }
                    Err(e) => return Err(Refusal::Skip(format!("cannot read its owner: {e}"))),
                }
            }
            Ok(None) => return Err(Refusal::Skip("gone since planned".into())),
            Err(e) => return Err(Refusal::Skip(format!("cannot inspect it: {e}"))),
        };
        match root.is_mount_point(path) {
            Ok(false) => {}
            Ok(true) => {
                return Err(Refusal::Skip(
                    "now a mount point (another filesystem than its root's): never reclaimed"
                        .into(),
                ))
            }
            Err(e) => {
                return Err(Refusal::Skip(format!(
                    "cannot check whether it is a mount point: {e}"
                )))
            }
        }
        check_precondition(root, a, &a.path)?;
        // Liveness last, closest to the deletion: a live reference, or a process that could
        // not be read (or seen) and could be using the directory, keeps it.
        let processes = self
            .liveness
            .read()
            .map_err(|e| Refusal::Skip(format!("cannot check for live processes: {e}")))?;
        let live = processes
            .referencing(&shown)
            .or_else(|| processes.referencing(&root.canonical_anchor().join(path)));
        if let Some(r) = live {
            return Err(Refusal::Skip(format!("referenced by a live process: {r}")));
        }
        if let Some(why) = processes
            .unsupported_why()
            .or_else(|| processes.unseen_user(stat.mode))
        {
            return Err(Refusal::Skip(why));
        }
        // On Windows, an entry held open without FILE_SHARE_DELETE cannot be deleted: the
        // directory is in use, and nothing of it is deleted (never forced, never retried).
        match root.held_open(path) {
            Ok(None) => {}
            Ok(Some(at)) => {
                return Err(Refusal::Skip(format!(
                    "in use: {} is held open by another process, which does not let it be \
                     deleted",
                    root.display_path(&at).display()
                )))
            }
            Err(e) => {
                return Err(Refusal::Skip(format!(
                    "cannot check whether it is in use: {e}"
                )))
            }
        }
        Ok((index, stat))
    }

    fn act(
        &mut self,
        a: &PlannedAction,
        (index, stat): Self::Held,
        step: &Step<'_>,
    ) -> Result<Extra, Refusal> {
        let (label, root) = &self.roots[index];
        let pending = PendingDeletion {
            run: step.run.0.clone(),
            root: label.clone(),
            path: a.path.clone(),
            dev: stat.id.volume(),
            ino: stat.id.index(),
            at: step.clock.now().to_string(),
        };
        let mut record = serde_json::to_vec(&pending).expect("record serializes");
        record.push(b'\n');
        self.state
            .write_atomic(Path::new(&pending_file(label, &a.path)), &record)
            .map_err(|e| {
                Refusal::Fail(format!(
                    "cannot record the deletion before starting it: {e}"
                ))
            })?;
        let bytes = root.remove_tree(Path::new(&a.path)).map_err(|e| {
            Refusal::Fail(format!("deletion cut short, the next run finishes it: {e}"))
        })?;
        self.dirs_reclaimed += 1;
        self.bytes_freed += bytes;
        let mut extra = self.refused_extra(a);
        extra.insert("bytes_freed".to_owned(), bytes.into());
        if let Some(p) = self
            .pending
            .iter()
            .find(|p| p.root == *label && p.path == a.path)
        {
            extra.insert("finishes_run".to_owned(), p.run.clone().into());
        }
        Ok(extra)
    }

    fn refused_extra(&self, a: &PlannedAction) -> Extra {
        Extra::from_iter([("root".to_owned(), a.action.root().into())])
    }

    fn write_receipt(&mut self, receipt: &Receipt) -> fsroot::Result<()> {
        append_json_line(self.state, self.receipts_file, receipt)
    }

    /// Deleted and receipted: no longer pending.
    fn receipted(&mut self, a: &PlannedAction, outcome: OutcomeKind) -> Result<(), Problem> {
        if outcome != OutcomeKind::Applied {
            return Ok(());
        }
        let marker = pending_file(a.action.root().unwrap_or_default(), &a.path);
        self.state
            .remove_tree(Path::new(&marker))
            .map(|_| ())
            .map_err(Problem::from)
    }
}

impl BuildDirsTarget<'_> {
    /// Drops the records of pending deletions in this run's roots whose directory is gone (or
    /// is another directory now): there is nothing left to finish. Call after the plan is
    /// applied; the errors met.
    pub fn drop_stale_pending(&self) -> Vec<Problem> {
        let mut errors = Vec::new();
        for p in self.pending {
            let Some((_, root)) = self.roots.iter().find(|(name, _)| *name == p.root) else {
                continue;
            };
            let stale = match root.stat(Path::new(&p.path)) {
                Ok(None) => true,
                Ok(Some(s)) => s.id != fsroot::FileId::from_parts(p.dev, p.ino),
                Err(_) => false,
            };
            if stale {
                let marker = pending_file(&p.root, &p.path);
                if let Err(e) = self.state.remove_tree(Path::new(&marker)) {
                    errors.push(Problem::from(&e));
                }
            }
        }
        errors
    }
}

// The one test makes a symlink (Unix; a tree holding one is not made under Wine, whose
// `remove_dir_all` follows it).
#[cfg(all(test, unix))]
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
        assert!(errors[0].message.contains(PENDING_DIR), "{}", errors[0]);
    }
}
