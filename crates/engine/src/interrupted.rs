//! Store moves a kill cut short: a store is moved entry by entry (invariants.md, "Moving a
//! store"), so a run killed midway leaves it split between its path, which still has the owner
//! lock file (it moves last), and its destination in that run's directory, which the run's
//! manifest line names. The next run finishes that move into the run that began it, as the
//! planned action [`plan_store_moves`] makes, instead of taking the remainder for a store of
//! its own; the same trace ([`crate::judge::store_restore_cut_short`], halves swapped) decides
//! at planning and at execution, and only halves that together digest to what the manifest line
//! recorded are finished (anything else at the path is judged by the rules).

use std::path::Path;

use fsroot::{EntryKind, Root};
use plan::{Action, ItemKind, PlannedAction};
use store::ids::{RunId, SET_ASIDE_DIR};

/// The store whose move `a` finishes (`finish_set_aside`: from the store's path `from` into
/// `path`, the destination its run's manifest line names, by the store-move protocol, locked at
/// `from`, checked as the two halves together).
pub fn finishing(a: &PlannedAction) -> Option<&str> {
    match &a.action {
        Action::FinishSetAside { from } => Some(from),
        _ => None,
    }
}

/// Whether `a` is an action [`plan_store_moves`] could have planned: a store's finishing move
/// into `.set-aside/<run>/<the same path>`, `<run>` a run id, the store outside the doctor's own
/// directories. A saved plan's actions are checked with it.
pub fn accepts(a: &PlannedAction) -> bool {
    let Some(from) = finishing(a) else {
        return false;
    };
    let Some((run, inner)) = run_and_inner(&a.path) else {
        return false;
    };
    RunId::is_valid(run)
        && inner == from
        && !from.starts_with('.')
        && !from
            .split('/')
            .any(|c| c.is_empty() || c == "." || c == "..")
}

/// `.set-aside/<run>/<inner>` as `(run, inner)`.
fn run_and_inner(path: &str) -> Option<(&str, &str)> {
    path.strip_prefix(&format!("{SET_ASIDE_DIR}/"))?
        .split_once('/')
}

/// Whether a manifest line of the run `a`'s path is in records the store `a` finishes moving
/// there, as its precondition says (the line [`plan_store_moves`] planned `a` from).
pub fn recorded(root: &Root, a: &PlannedAction) -> bool {
    let Some(from) = finishing(a) else {
        return false;
    };
    let Some((run, _)) = run_and_inner(&a.path) else {
        return false;
    };
    if purging(root, run) {
        return false;
    }
    let Ok(manifest) = crate::admin::read_manifest(root, run, &|_| String::new()) else {
        return false;
    };
    manifest.items.iter().any(|line| {
        finishes(line, run)
            && line.original == from
            && line.moved_to == a.path
            && line.promise.as_ref() == Some(&a.precondition)
    })
}

/// Whether a purge of run `run` has been recorded and not receipted: a record in
/// `.reconcile/purge-pending/` of that very directory (same device and inode), or one that
/// cannot be read (in doubt, a deletion). The next purge finishes deleting such a run whatever
/// it holds, so nothing is finished into it: the store's remainder stays at its path, out of a
/// deletion nobody planned with it (the rules judge it). A record of another directory at that
/// path, or naming another run, is not this run's (the next purge drops or ignores it).
fn purging(root: &Root, run: &str) -> bool {
    let file = crate::records::purge_pending_file(run);
    match root.stat(Path::new(&file)) {
        Ok(None) => return false,
        Ok(Some(_)) => {}
        Err(_) => return true,
    }
    let Some(record) = root
        .read(Path::new(&file))
        .ok()
        .and_then(|b| serde_json::from_slice::<crate::records::PendingDeletion>(&b).ok())
    else {
        return true;
    };
    let dir = format!("{SET_ASIDE_DIR}/{run}");
    record.path == dir
        && match root.stat(Path::new(&dir)) {
            Ok(Some(s)) => s.id == fsroot::FileId::from_parts(record.dev, record.ino),
            Ok(None) => false,
            Err(_) => true,
        }
}

/// Whether `line` of run `run` is a store set-aside of the doctor's whose move a kill can have
/// cut short: a `runtime_store` moved to its mirrored path in that run.
fn finishes(line: &crate::admin::SetAsideItem, run: &str) -> bool {
    line.kind == Some(ItemKind::RuntimeStore)
        && line.writer == crate::admin::Writer::Doctor
        && line.moved_to == format!("{SET_ASIDE_DIR}/{run}/{}", line.original)
}

/// One action per store a kill left split between its path and a set-aside run whose manifest
/// says it was being moved there: the rest of its entries go into that run, the lock file last.
/// `rule_name` names the rule of the manifest line. Runs and lines that cannot be read plan
/// nothing here (restore and purge report them).
pub fn plan_store_moves(root: &Root, rule_name: &dyn Fn(&str) -> String) -> Vec<PlannedAction> {
    let mut out = Vec::new();
    let Ok(runs) = root.list(Path::new(SET_ASIDE_DIR)) else {
        return out;
    };
    let mut runs: Vec<String> = runs
        .into_iter()
        .filter(|e| e.kind == EntryKind::Dir)
        .filter_map(|e| e.name.into_string().ok())
        .filter(|r| RunId::is_valid(r))
        .collect();
    runs.sort();
    for run in runs {
        if purging(root, &run) {
            continue;
        }
        let Ok(manifest) = crate::admin::read_manifest(root, &run, &|_| String::new()) else {
            continue;
        };
        for line in manifest.items {
            if !finishes(&line, &run) {
                continue;
            }
            // The destination lacks the lock file, the store's path still has it, no name is
            // in both, and the two halves together are the store the line recorded: the move
            // was cut short midway. Halves that digest to anything else are not that store (a
            // remainder changed since, or another store at the path): the rules judge what is
            // at the path, and the run keeps what it has.
            let Some(halves) =
                crate::judge::store_restore_cut_short(root, &line.moved_to, &line.original)
            else {
                continue;
            };
            if line.promise.as_ref() != Some(&halves) {
                continue;
            }
            out.push(PlannedAction {
                seq: 0,
                rule_name: rule_name(&line.rule),
                rule: line.rule.clone(),
                action: Action::FinishSetAside {
                    from: line.original.clone(),
                },
                path: line.moved_to.clone(),
                reason: format!(
                    "finishes moving the store {} into run {run}, which a kill cut short \
                     midway",
                    line.original
                ),
                precondition: halves,
            });
        }
    }
    out
}
