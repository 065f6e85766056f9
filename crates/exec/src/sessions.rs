//! The sessions pack's [`Target`]: S through a [`WritableRoot`]. Before each action the
//! session's live lease is probed, the owner lock of the store the action works in is taken
//! (and held until the action is done, so no host opens the store in between), and the
//! precondition is checked; then the action is dispatched by its kind.

use std::collections::HashMap;
use std::path::Path;

use engine::housekeeping;
use engine::records::Receipt;
use fsroot::{LockGuard, TryLock, WritableRoot};

use plan::{Action, ActionKind, ItemKind, OutcomeKind, PlannedAction};
use store::ids::OWNER_LOCK;
use store::Timestamp;

use crate::act::Act;
use crate::{Extra, Refusal, Step, Target};

/// Applies sessions-pack plans (repairs, restores, purges) to S.
#[derive(Debug)]
pub struct SessionsTarget<'a> {
    root: &'a WritableRoot,
    /// The `(action, path)` of every action an earlier run applied, with the run and the instant
    /// of its last application: read from the receipts the first time a precondition fails.
    applied_before: Option<HashMap<(ActionKind, String), (String, Timestamp)>>,
}

impl<'a> SessionsTarget<'a> {
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

impl Target for SessionsTarget<'_> {
    type Held = Option<LockGuard>;

    fn check(&mut self, a: &PlannedAction, step: &Step<'_>) -> Result<Self::Held, Refusal> {
        if crate::lease_held(self.root, &session_of(a))? {
            return Err(Refusal::Skip("session is live".into()));
        }
        let owner = match store_of(a) {
            Some(store) => lock_store(self.root, store)?,
            None => None,
        };
        if let Err(refusal) = check_precondition(self.root, a) {
            // A plan applied a second time: its end state is already there.
            return Err(match self.applied_by(a, step.planned_at) {
                Some(run) => Refusal::Skip(format!("already applied (run {run})")),
                None => refusal,
            });
        }
        Ok(owner)
    }

    fn act(
        &mut self,
        a: &PlannedAction,
        _owner: Self::Held,
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
            } => cx.move_store(),
            Action::SetAside { .. } => cx.set_aside(),
            Action::UnbindThread => cx.unbind_thread(),
            Action::RecoverThread { document } => cx.recover_thread(document),
            Action::BindThread { document } => cx.bind_thread(document),
            Action::RemoveEmptyDir => cx.remove_empty_dir(),
            Action::Restore { kind, from } => cx.restore(*kind, from),
            Action::Purge => cx.purge(),
            Action::ReclaimDir { .. } => Err(Refusal::Fail(format!(
                "{}: reclaim_dir belongs to the build-dirs pack, not to a sessions plan",
                a.path
            ))),
        }
    }

    fn write_receipt(&mut self, receipt: &Receipt) -> fsroot::Result<()> {
        crate::append_json_line(self.root, store::ids::RECEIPTS_PATH, receipt)
    }
}

/// The session an action's item belongs to: the stem of `<id>.json` or the first component
/// (for a temporary file in S itself, set aside or put back, the document it was writing).
fn session_of(a: &PlannedAction) -> String {
    if is_temporary_file(&a.action) {
        return housekeeping::session_of_temp(&a.path);
    }
    let first = a.path.split('/').next().unwrap_or(&a.path);
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
        // A store being restored is locked where it is now, inside the set-aside run.
        Action::Restore {
            kind: ItemKind::RuntimeStore,
            from,
        } => Some(from),
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
        // A restore checks the item where it is now; every other action checks its path.
        Action::Restore { from, .. } => crate::check_precondition(root, a, from),
        _ => crate::check_precondition(root, a, &a.path),
    }
}
