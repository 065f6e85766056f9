//! The sessions pack's [`Target`]: S through a [`WritableRoot`]. Before each action the
//! session's live lease is probed, the owner lock of the store the action works in is taken
//! (and held until the action is done, so no host opens the store in between), and the
//! precondition is checked; then the action is dispatched by its kind. Also the pack's run
//! state around the loop: the single-flight `.reconcile.lock` and `.reconcile/last.json`.

use std::collections::HashMap;
use std::path::Path;

use engine::housekeeping;
use engine::records::Receipt;
use fsroot::{LockGuard, TryLock, WritableRoot};

use plan::{Action, ActionKind, ItemKind, OutcomeKind, PlannedAction, Precondition};
use store::ids::{OWNER_LOCK, RECONCILE_DIR, RECONCILE_LOCK, SET_ASIDE_DIR};
use store::Timestamp;

use crate::act::Act;
use crate::{single_flight_lock, Extra, Refusal, Step, Target};

/// Applies sessions-pack plans (repairs, restores, purges) to S.
#[derive(Debug)]
pub struct SessionsTarget<'a> {
    root: &'a WritableRoot,
    /// The `(action, path)` of every action an earlier run applied, with the run and the instant
    /// of its last application: read from the receipts the first time a precondition fails.
    applied_before: Option<HashMap<(ActionKind, String), (String, Timestamp)>>,
}

impl<'a> SessionsTarget<'a> {
    /// `a`'s precondition holds now; else the skip, worded `already applied` when an earlier
    /// run applied it since the plan was made.
    fn precondition(&mut self, a: &PlannedAction, step: &Step<'_>) -> Result<(), Refusal> {
        if let Err(refusal) = check_precondition(self.root, a) {
            // A plan applied a second time: its end state is already there.
            return Err(match self.applied_by(a, step.planned_at) {
                Some(run) => Refusal::Skip(format!("already applied (run {run})")),
                None => refusal,
            });
        }
        Ok(())
    }

    /// The target S, opened writable.
    pub fn new(root: &'a WritableRoot) -> SessionsTarget<'a> {
        SessionsTarget {
            root,
            applied_before: None,
        }
    }

    /// The run that already applied `a`'s action on its path since the plan was made
    /// (`planned_at`), per the receipts of S. It only words a skip (`already applied` instead of
    /// `changed since planned`), so receipts that cannot be read, or lines that do not parse,
    /// leave the plainer wording; restore and purge report them.
    fn applied_by(&mut self, a: &PlannedAction, planned_at: &str) -> Option<&str> {
        let root = self.root;
        let seen = self.applied_before.get_or_insert_with(|| {
            let bytes = root
                .read_record(Path::new(store::ids::RECEIPTS_PATH))
                .unwrap_or_default();
            bytes
                .split(|b| *b == b'\n')
                .filter_map(|l| serde_json::from_slice::<Receipt>(l).ok())
                .filter(|r| r.outcome == OutcomeKind::Applied)
                .filter_map(|r| Some(((r.action, r.path), (r.run, Timestamp::parse(&r.at)?))))
                .collect()
        });
        let since = Timestamp::parse(planned_at)?;
        seen.get(&(a.action.kind(), a.path.clone()))
            .filter(|(_, at)| *at >= since)
            .map(|(run, _)| run.as_str())
    }
}

/// What a passed check holds until its action is done.
#[derive(Debug, Default)]
pub struct Held {
    /// The owner lock of the store the action works in.
    owner: Option<LockGuard>,
    /// Whether the doctor created that lock file (a store that had none, held for its move).
    created_owner_lock: bool,
    /// The live lease of the session whose item R1 or R5 moves, held across the move.
    _lease: Option<LockGuard>,
}

impl Target for SessionsTarget<'_> {
    type Held = Held;

    fn check(&mut self, a: &PlannedAction, step: &Step<'_>) -> Result<Self::Held, Refusal> {
        let session = session_of(a);
        if lease_held(self.root, &session)? {
            return Err(Refusal::Skip("session is live".into()));
        }
        let mut held = Held::default();
        // R1 and R5 move an item of the session itself: its lease is held across the move, so
        // a host that opens the session after the probe is refused (it retries, then says the
        // session is open elsewhere) rather than finding its item gone.
        if matches!(
            a.action,
            Action::SetAside {
                kind: ItemKind::Document | ItemKind::Directory
            }
        ) {
            held._lease = hold_lease(self.root, &session)?;
        }
        let moving_store = matches!(
            a.action,
            Action::SetAside {
                kind: ItemKind::RuntimeStore
            }
        );
        if let Some(store) = store_of(a) {
            match lock_store(self.root, store)? {
                // A store without its owner lock file is not moved unlocked: it is checked as
                // planned, then the lock file is created as the app creates it (0600, no link
                // followed) and held for the move, so a host that opens the store meanwhile is
                // refused, and what the lock file's creation added is all that changed.
                None if moving_store => {
                    self.precondition(a, step)?;
                    held.owner = Some(create_owner_lock(self.root, store)?);
                    held.created_owner_lock = true;
                    let now = self
                        .root
                        .tree_digest_except(Path::new(store), std::ffi::OsStr::new(OWNER_LOCK))
                        .map(|d| Precondition::Tree {
                            bytes: d.bytes,
                            tree_blake3: d.tree_blake3,
                        });
                    if now.ok().as_ref() != Some(&a.precondition) {
                        return Err(Refusal::Skip("changed since planned".into()));
                    }
                    return Ok(held);
                }
                owner => held.owner = owner,
            }
        }
        self.precondition(a, step)?;
        Ok(held)
    }

    fn act(
        &mut self,
        a: &PlannedAction,
        held: Self::Held,
        step: &Step<'_>,
    ) -> Result<Extra, Refusal> {
        let cx = Act {
            root: self.root,
            action: a,
            run: step.run,
            clock: step.clock,
            planned_at: step.planned_at,
        };
        match &a.action {
            Action::SetAside {
                kind: ItemKind::RuntimeStore,
            } => cx.move_store(held.created_owner_lock),
            Action::SetAside { .. } => cx.set_aside(),
            Action::UnbindThread => cx.unbind_thread(),
            Action::RecoverThread { document } => cx.recover_thread(document),
            Action::BindThread { document } => cx.bind_thread(document),
            Action::RemoveEmptyDir => cx.remove_empty_dir(),
            Action::Restore { kind, from } => cx.restore(*kind, from),
            Action::FinishSetAside { from } => cx.finish_set_aside(from),
            Action::Purge => cx.purge(step),
            Action::ReclaimDir { .. } => Err(Refusal::Fail(format!(
                "{}: reclaim_dir belongs to the build-dirs pack, not to a sessions plan",
                a.path
            ))),
        }
    }

    fn write_receipt(&mut self, receipt: &Receipt) -> fsroot::Result<()> {
        crate::append_json_line(self.root, store::ids::RECEIPTS_PATH, receipt)
    }

    /// A purge's record of its deletion goes once its receipt is written.
    fn receipted(
        &mut self,
        a: &PlannedAction,
        outcome: OutcomeKind,
    ) -> Result<(), fsroot::Problem> {
        match a.action {
            Action::Purge => crate::purge::receipted(self.root, a, outcome),
            _ => Ok(()),
        }
    }
}

/// The session an action's item belongs to: the stem of `<id>.json` or the first component
/// (for a temporary file in S itself, set aside or put back, the document it was writing).
fn session_of(a: &PlannedAction) -> String {
    if is_temporary_file(&a.action) {
        return housekeeping::session_of_temp(&a.path);
    }
    // The finish of a store move: the session is the store's, where it still is.
    let path = engine::interrupted::finishing(a).unwrap_or(&a.path);
    let first = path.split('/').next().unwrap_or(path);
    first.strip_suffix(".json").unwrap_or(first).to_owned()
}

/// The store an action works in: the store itself for a store set-aside, the store of the
/// thread record for thread actions (and for a temporary file in its `threads/`).
fn store_of(a: &PlannedAction) -> Option<&str> {
    let thread_store = || a.path.rsplit_once("/threads/").map(|(store, _)| store);
    match &a.action {
        Action::SetAside {
            kind: ItemKind::RuntimeStore,
        } => Some(&a.path),
        // A store being restored is locked where it is now, inside the set-aside run; a store
        // whose set-aside is finished, at its path, where the lock file still is.
        Action::Restore {
            kind: ItemKind::RuntimeStore,
            from,
        }
        | Action::FinishSetAside { from } => Some(from),
        // A thread record put back in place is written inside its store.
        Action::Restore {
            kind: ItemKind::PreviousVersion,
            ..
        } => thread_store(),
        Action::UnbindThread | Action::RecoverThread { .. } | Action::BindThread { .. } => {
            thread_store()
        }
        // A temporary file in a store's `threads/`, set aside or put back.
        action if is_temporary_file(action) => housekeeping::store_of_temp(&a.path),
        _ => None,
    }
}

/// Whether `action` moves a temporary file: housekeeping's set-aside, or its restore.
fn is_temporary_file(action: &Action) -> bool {
    housekeeping::is_housekeeping(action)
        || matches!(
            action,
            Action::Restore {
                kind: ItemKind::TemporaryFile,
                ..
            }
        )
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

/// Creates the owner lock file of `store` (mode 0600, opened without following a link, as the
/// app creates it) and takes it; held by another process meanwhile: skipped.
fn create_owner_lock(root: &WritableRoot, store: &str) -> Result<LockGuard, Refusal> {
    let lock = format!("{store}/{OWNER_LOCK}");
    match root.try_lock(Path::new(&lock), true, 0o600) {
        Ok(TryLock::Acquired(g)) => Ok(g),
        Ok(_) => Err(Refusal::Skip("store is in use by another process".into())),
        Err(e) => Err(Refusal::Skip(format!(
            "cannot create the store's owner lock: {e}"
        ))),
    }
}

/// Takes session `id`'s live lease, when its file is there (never created: a lease nobody ever
/// took is no lease); held by another process: the session is live.
fn hold_lease(root: &WritableRoot, id: &str) -> Result<Option<LockGuard>, Refusal> {
    let lease = format!("{}/{id}.live", store::ids::LATE_USAGE_DIR);
    match root.stat(Path::new(&lease)) {
        // As the probe judges: what is not a regular file is no lease.
        Ok(Some(s)) if s.kind == fsroot::EntryKind::File => {}
        _ => return Ok(None),
    }
    match root.try_lock(Path::new(&lease), false, 0o600) {
        Ok(TryLock::Acquired(g)) => Ok(Some(g)),
        Ok(TryLock::Missing) => Ok(None),
        Ok(TryLock::Held) => Err(Refusal::Skip("session is live".into())),
        Err(e) => Err(Refusal::Skip(format!("cannot check the live lease: {e}"))),
    }
}

fn check_precondition(root: &WritableRoot, a: &PlannedAction) -> Result<(), Refusal> {
    match &a.action {
        // A store restore cut short midway: the two halves together are checked.
        Action::Restore {
            kind: ItemKind::RuntimeStore,
            from,
        } if root.stat(Path::new(&a.path)).ok().flatten().is_some() => {
            match engine::judge::store_restore_cut_short(root, &a.path, from) {
                Some(d) if d == a.precondition => Ok(()),
                _ => Err(Refusal::Skip(format!(
                    "original path is occupied: {}",
                    a.path
                ))),
            }
        }
        // A store's set-aside cut short midway: the two halves together, as planned, and, as
        // the planner judges, a manifest line of the run that records that very store going
        // there (a saved plan is applied only to what a run began).
        Action::FinishSetAside { from } => {
            match engine::judge::store_restore_cut_short(root, &a.path, from) {
                Some(d) if d == a.precondition => {}
                _ => {
                    return Err(Refusal::Skip(format!(
                        "changed since planned: {from} is no longer split as planned between \
                         its path and {}",
                        a.path
                    )))
                }
            }
            if engine::interrupted::recorded(root, a) {
                Ok(())
            } else {
                Err(Refusal::Skip(format!(
                    "no manifest line of its run records {from} moving to {} as it is",
                    a.path
                )))
            }
        }
        // A restore checks the item where it is now; every other action checks its path.
        Action::Restore { from, .. } => crate::check_precondition(root, a, from),
        // A purge that receipts a deletion already done checks that the run is still gone.
        Action::Purge => crate::purge::check(root, a),
        _ => crate::check_precondition(root, a, &a.path),
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

/// Writes `S/.reconcile/last.json` atomically: `last`, the pack's record of the run, as
/// pretty JSON.
pub fn write_last(root: &WritableRoot, last: &impl serde::Serialize) -> fsroot::Result<()> {
    let mut bytes = serde_json::to_vec_pretty(last).expect("last.json serializes");
    bytes.push(b'\n');
    root.write_atomic(Path::new(store::ids::LAST_RUN_PATH), &bytes)
}

/// Whether another process holds session `id`'s live lease ([`engine::judge::lease_held`]);
/// one that cannot be probed is a skip, never a guess. Every check of a lease at execution goes
/// through here.
pub(crate) fn lease_held(root: &fsroot::Root, id: &str) -> Result<bool, Refusal> {
    engine::judge::lease_held(root, id).map_err(|e| Refusal::Skip(e.to_string()))
}
