//! The bounded executor: one loop, [`execute`], applies a [`Plan`] action for action through
//! a [`Target`] (a pack's: the sessions pack's store, the build-dirs roots), and owns what every
//! action gets alike: its re-check immediately before it is applied ([`Target::check`]), its
//! outcome, and its [`Receipt`], with one policy for a receipt that cannot be written (the run
//! fails, exit 1, after the action, and says so); and the single-flight lock and precondition
//! check every target uses.

use std::path::Path;

use fsroot::{LockGuard, Problem, TryLock, WritableRoot};
use plan::{Outcome, OutcomeKind, Plan, PlannedAction};

use crate::interrupt;
use crate::progress::ProgressSink;
use crate::receipt::Receipt;
use crate::{Clock, RunId};

/// Action-specific receipt fields.
pub type Extra = serde_json::Map<String, serde_json::Value>;

/// Why an action was not applied.
#[derive(Debug)]
pub enum Refusal {
    /// Not done, on purpose: its precondition does not hold, or something live holds it.
    Skip(String),
    /// Tried and failed; nothing was lost.
    Fail(String),
    /// Skipped after acting and undoing it; the receipt carries what was undone.
    Undone(String, Extra),
}

/// What every action of one run shares.
#[derive(Debug)]
pub struct Step<'a> {
    /// The run.
    pub run: &'a RunId,
    /// The clock of the run's records.
    pub clock: Clock,
    /// The plan's instant: `updated_at` of every thread record the run rewrites.
    pub planned_at: &'a str,
}

/// Where a plan is applied: how one pack re-checks an action immediately before applying it,
/// how it applies it, and where its receipts go. [`execute`] drives it.
pub trait Target {
    /// What a passed check holds until the action is done (a store's owner lock, say).
    type Held;
    /// Re-checks `a` immediately before it is applied: everything that may have changed since
    /// planning (its precondition, the locks and liveness it needs). `Err`: not applied.
    fn check(&mut self, a: &PlannedAction, step: &Step<'_>) -> Result<Self::Held, Refusal>;
    /// Applies `a`, whose check passed; the receipt fields it adds.
    fn act(
        &mut self,
        a: &PlannedAction,
        held: Self::Held,
        step: &Step<'_>,
    ) -> Result<Extra, Refusal>;
    /// Receipt fields of an action that was not applied.
    fn refused_extra(&self, _a: &PlannedAction) -> Extra {
        Extra::new()
    }
    /// Appends `receipt` to the run's receipts.
    fn write_receipt(&mut self, receipt: &Receipt) -> fsroot::Result<()>;
    /// Called once `a`'s receipt is written; an error is the run's.
    fn receipted(&mut self, _a: &PlannedAction, _outcome: OutcomeKind) -> Result<(), Problem> {
        Ok(())
    }
}

/// What applying a plan did.
#[derive(Debug, Default)]
pub struct Applied {
    /// One outcome per action, in plan order.
    pub outcomes: Vec<Outcome>,
    /// Failures, and receipts that could not be written, each naming its path.
    pub errors: Vec<Problem>,
    /// Whether a receipt could not be written: an action was done (or skipped) without its
    /// record, so the run fails (exit 1) although every action may have been applied.
    pub records_failed: bool,
    /// The signal that stopped the run after an action ([`interrupt`]): the actions after it
    /// were not attempted (and have no receipt); the next run does them.
    pub interrupted: Option<i32>,
}

impl Applied {
    /// The actions of `plan` whose outcome is `applied`, in plan order.
    pub fn applied<'p>(&self, plan: &'p Plan) -> impl Iterator<Item = &'p PlannedAction> {
        let done: std::collections::BTreeSet<u64> = self
            .outcomes
            .iter()
            .filter(|o| o.outcome == OutcomeKind::Applied)
            .map(|o| o.seq)
            .collect();
        plan.actions.iter().filter(move |a| done.contains(&a.seq))
    }
}

/// Applies `plan` as run `run` through `target`, action for action: each is checked, then
/// applied, then receipted, whatever its outcome; the run goes on after a skip or a failure,
/// but stops applying once a receipt could not be written (the rest are not attempted), or
/// once a signal asked it to stop ([`interrupt`]: the action in progress is finished and
/// receipted first, so a signal never splits one). The guard proves the run's single-flight lock is held. Each action done is reported to
/// `progress` (phase `applying`).
pub fn execute<T: Target>(
    target: &mut T,
    _lock: &LockGuard,
    plan: &Plan,
    run: &RunId,
    clock: Clock,
    progress: &ProgressSink,
) -> Applied {
    let started = std::time::Instant::now();
    interrupt::begin_applying();
    progress.start("applying", plan.actions.len() as u64);
    let mut applied = Applied::default();
    let planned_at = plan
        .planned_at
        .clone()
        .unwrap_or_else(|| clock.now().to_string());
    let step = Step {
        run,
        clock,
        planned_at: &planned_at,
    };
    for action in &plan.actions {
        // A signal stops the run between actions, never inside one: the rest are not
        // attempted, and the next run plans them again.
        if let Some(sig) = applied.interrupted.or_else(interrupt::stop_requested) {
            applied.interrupted = Some(sig);
            applied.outcomes.push(Outcome {
                seq: action.seq,
                outcome: OutcomeKind::Skipped,
                why: Some(format!(
                    "not attempted: the run was stopped by {}",
                    interrupt::signal_name(sig)
                )),
            });
            progress.tick();
            continue;
        }
        // Every action is receipted: once a receipt could not be written, no further action
        // is applied (it would go unreceipted too); each is reported as not attempted.
        if applied.records_failed {
            applied.outcomes.push(Outcome {
                seq: action.seq,
                outcome: OutcomeKind::Skipped,
                why: Some("not attempted: an earlier receipt could not be written".into()),
            });
            progress.tick();
            continue;
        }
        let result = target
            .check(action, &step)
            .and_then(|held| target.act(action, held, &step));
        let (outcome, why, extra) = match result {
            Ok(extra) => (OutcomeKind::Applied, None, extra),
            Err(Refusal::Skip(why)) => (
                OutcomeKind::Skipped,
                Some(why),
                target.refused_extra(action),
            ),
            Err(Refusal::Undone(why, extra)) => (OutcomeKind::Skipped, Some(why), extra),
            Err(Refusal::Fail(why)) => {
                applied.errors.push(Problem::new(
                    &action.path,
                    action.action.kind().verb(),
                    std::io::ErrorKind::Other,
                    &why,
                ));
                (OutcomeKind::Failed, Some(why), target.refused_extra(action))
            }
        };
        let receipt = Receipt {
            run: run.0.clone(),
            seq: action.seq,
            rule: action.rule.clone(),
            action: action.action.kind(),
            path: action.path.clone(),
            outcome,
            why: why.clone(),
            at: clock.now().to_string(),
            extra,
        };
        match target.write_receipt(&receipt) {
            Ok(()) => {
                if let Err(e) = target.receipted(action, outcome) {
                    applied.errors.push(e);
                }
            }
            Err(e) => {
                applied.errors.push(Problem::from(&e).context(&format!(
                    "action {} ({} {}) was {}, but its receipt could not be written",
                    action.seq,
                    action.action.kind().verb(),
                    action.path,
                    match outcome {
                        OutcomeKind::Applied => "applied",
                        OutcomeKind::Skipped => "skipped",
                        OutcomeKind::Failed => "tried and failed",
                    }
                )));
                applied.records_failed = true;
            }
        }
        tracing::debug!(
            seq = action.seq,
            rule = %action.rule,
            action = action.action.kind().verb(),
            path = %action.path,
            outcome = ?outcome,
            why = why.as_deref().unwrap_or(""),
            "action"
        );
        applied.outcomes.push(Outcome {
            seq: action.seq,
            outcome,
            why,
        });
        progress.tick();
    }
    let count = |k: OutcomeKind| applied.outcomes.iter().filter(|o| o.outcome == k).count();
    tracing::info!(
        applied = count(OutcomeKind::Applied),
        skipped = count(OutcomeKind::Skipped),
        failed = count(OutcomeKind::Failed),
        ms = started.elapsed().as_millis() as u64,
        "applied the plan"
    );
    applied
}

/// Takes a single-flight lock file `rel` (created with mode 0600, non-blocking): `Ok(None)` when
/// another run holds it. The sessions pack's `.reconcile.lock` and the build-dirs state lock.
pub fn single_flight_lock(root: &WritableRoot, rel: &str) -> fsroot::Result<Option<LockGuard>> {
    match root.try_lock(Path::new(rel), true, 0o600)? {
        TryLock::Acquired(g) => Ok(Some(g)),
        TryLock::Held | TryLock::Missing => Ok(None),
    }
}

/// Appends `value` to the log `rel` as one JSON line.
pub fn append_json_line<T: serde::Serialize>(
    root: &WritableRoot,
    rel: &str,
    value: &T,
) -> fsroot::Result<()> {
    let mut line = serde_json::to_vec(value).expect("record serializes");
    line.push(b'\n');
    root.append(Path::new(rel), &line)
}

/// Whether the item at `path` of `root` holds `a`'s precondition now.
pub fn check_precondition(
    root: &fsroot::Root,
    a: &PlannedAction,
    path: &str,
) -> Result<(), Refusal> {
    let path = Path::new(path);
    let holds = match &a.precondition {
        plan::Precondition::File { bytes, sha256 } => root
            .file_digest(path)
            .is_ok_and(|d| d.bytes == *bytes && d.sha256 == *sha256),
        plan::Precondition::Tree { bytes, tree_blake3 } => root
            .tree_digest(path)
            .is_ok_and(|d| d.bytes == *bytes && d.tree_blake3 == *tree_blake3),
    };
    if holds {
        Ok(())
    } else {
        Err(Refusal::Skip("changed since planned".into()))
    }
}
