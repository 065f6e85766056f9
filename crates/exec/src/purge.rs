//! Deleting a whole set-aside run (`--purge-set-aside`), recorded before it starts: a record
//! in `S/.reconcile/purge-pending/<run>.json` ([`engine::records::PendingDeletion`], the one
//! record of deletions in progress, shared with the build-dirs pack) is written atomically
//! before the first unlink and removed once the purge's receipt is written. A purge that
//! cannot write that record deletes nothing; one killed or failed between the record and the
//! receipt is finished, or receipted, by the next purge (`engine::admin::plan_purge`).

use std::path::Path;

use engine::records::{purge_pending_file, PendingDeletion};
use fsroot::{Problem, WritableRoot};
use plan::{OutcomeKind, PlannedAction, Precondition};
use serde_json::Value;

use crate::{Extra, Refusal, Step};

/// The record of the purge of `path` (`.set-aside/<run>`), if one is there and reads.
fn pending(root: &WritableRoot, path: &str) -> Option<(String, PendingDeletion)> {
    let run = path.strip_prefix(&format!("{}/", store::ids::SET_ASIDE_DIR))?;
    let file = purge_pending_file(run);
    let bytes = root.read(Path::new(&file)).ok()?;
    let record: PendingDeletion = serde_json::from_slice(&bytes).ok()?;
    (record.path == path).then_some((file, record))
}

/// Whether `a` is the receipt of a deletion already done: its precondition is nothing, its
/// run is gone and a record says a purge deleted it.
fn already_deleted(a: &PlannedAction) -> bool {
    matches!(&a.precondition, Precondition::Tree { bytes: 0, tree_blake3 }
        if tree_blake3 == engine::admin::NOTHING_LEFT)
}

/// The re-check of a purge action right before it: the run's tree digest, or for the receipt
/// of a deletion already done, that the run is still gone and its record still there.
pub(crate) fn check(root: &WritableRoot, a: &PlannedAction) -> Result<(), Refusal> {
    if already_deleted(a) {
        let gone = matches!(root.stat(Path::new(&a.path)), Ok(None));
        return match (gone, pending(root, &a.path)) {
            (true, Some(_)) => Ok(()),
            _ => Err(Refusal::Skip("changed since planned".into())),
        };
    }
    crate::check_precondition(root, a, &a.path)
}

/// Deletes the run at `a.path` through the one delete seam, recorded first: the receipts log
/// must be appendable now (an immutable or read-only log is found before anything is
/// deleted), then the record is written (or kept, when it finishes a deletion an earlier purge
/// started), then the tree goes. The receipt fields: `bytes_freed`, and `finishes_run` when it
/// completes an earlier purge's deletion.
pub(crate) fn purge(
    root: &WritableRoot,
    a: &PlannedAction,
    step: &Step<'_>,
) -> Result<Extra, Refusal> {
    // An earlier purge's record of this very directory (same device and inode); a record of
    // another directory at this path is not finished here, and this purge records its own.
    let earlier = pending(root, &a.path).filter(|(_, p)| {
        already_deleted(a)
            || matches!(root.stat(Path::new(&a.path)), Ok(Some(s)) if s.id == fsroot::FileId::from_parts(p.dev, p.ino))
    });
    let mut extra = Extra::new();
    if let Some((_, p)) = &earlier {
        extra.insert("finishes_run".into(), Value::from(p.run.clone()));
    }
    if already_deleted(a) {
        extra.insert("bytes_freed".into(), Value::from(0u64));
        return Ok(extra);
    }
    root.check_appendable(Path::new(store::ids::RECEIPTS_PATH))
        .map_err(|e| {
            Refusal::Fail(format!(
                "its receipt could not be written ({e}): nothing was deleted"
            ))
        })?;
    if earlier.is_none() {
        let stat = root
            .stat(Path::new(&a.path))
            .map_err(|e| Refusal::Fail(e.to_string()))?
            .ok_or_else(|| Refusal::Skip("gone since planned".into()))?;
        let run = a.path.rsplit('/').next().unwrap_or_default();
        let record = PendingDeletion {
            run: step.run.0.clone(),
            root: root.anchor().display().to_string(),
            path: a.path.clone(),
            dev: stat.id.volume(),
            ino: stat.id.index(),
            at: step.clock.now().to_string(),
        };
        let mut bytes = serde_json::to_vec(&record).expect("record serializes");
        bytes.push(b'\n');
        root.write_atomic(Path::new(&purge_pending_file(run)), &bytes)
            .map_err(|e| {
                Refusal::Fail(format!(
                    "cannot record the deletion before starting it ({e}): nothing was deleted"
                ))
            })?;
    }
    let freed = root.remove_tree(Path::new(&a.path)).map_err(|e| {
        Refusal::Fail(format!(
            "deletion cut short ({e}): it is recorded, the next purge finishes it"
        ))
    })?;
    extra.insert("bytes_freed".into(), Value::from(freed));
    Ok(extra)
}

/// Once a purge's receipt is written: its record goes.
pub(crate) fn receipted(
    root: &WritableRoot,
    a: &PlannedAction,
    outcome: OutcomeKind,
) -> Result<(), Problem> {
    if outcome != OutcomeKind::Applied {
        return Ok(());
    }
    match pending(root, &a.path) {
        Some((file, _)) => root
            .remove_file(Path::new(&file))
            .map(drop)
            .map_err(|e| Problem::from(&e)),
        None => Ok(()),
    }
}

/// Removes the records with nothing left to finish (`stale`, paths relative to S and the
/// records as the plan read them), each only if it still reads the same: a purge of its run in
/// this plan wrote a record of its own in its place, which stays until its receipt is written
/// (and is gone once it is). The errors met.
pub fn drop_stale_purge_records(
    root: &WritableRoot,
    stale: &[(String, PendingDeletion)],
) -> Vec<Problem> {
    stale
        .iter()
        .filter(|(file, record)| {
            root.read(Path::new(file))
                .ok()
                .and_then(|b| serde_json::from_slice::<PendingDeletion>(&b).ok())
                .as_ref()
                == Some(record)
        })
        .filter_map(|(file, _)| root.remove_file(Path::new(file)).err())
        .map(|e| Problem::from(&e))
        .collect()
}
