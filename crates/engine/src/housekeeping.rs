//! Housekeeping planned like any other action: the files named like the temporary files of
//! interrupted atomic writes (`.<name>.doctor-tmp-<pid>-<n>`) whose writer is gone. Such a file
//! may be an earlier doctor run's incomplete copy, but also a host's newest complete save (a host
//! writing with the same library that died between fsync and rename) or anyone's file, so it is
//! never deleted: each is set aside like any other item (`set_aside` of kind `temporary_file`,
//! pseudo-rule `doctor`, `interrupted-write`), with the file's digest as its precondition, a
//! manifest line and a receipt, at the head of the plan and outside the bound; a restore puts it
//! back.

use std::path::Path;

use fsroot::{EntryKind, Problem, Root};
use plan::{Action, ItemKind, Plan, PlannedAction, Precondition};
use store::ids::{OWNER_LOCK, PURGE_PENDING_DIR, RECONCILE_DIR};

/// `purge-pending`, the last component of [`PURGE_PENDING_DIR`].
const PURGE_PENDING: &str = "purge-pending";

use crate::judge::{lease_held, lock_is_free};

/// The code housekeeping actions carry in the rule's place.
pub const CODE: &str = "doctor";
/// Their name.
pub const NAME: &str = "interrupted-write";
/// Their reason.
pub const REASON: &str = "named like the temporary file of an interrupted write, its writer gone";

/// The action housekeeping plans: a set-aside of a temporary file.
pub const ACTION: Action = Action::SetAside {
    kind: ItemKind::TemporaryFile,
};

/// Whether `a` is a housekeeping action of the one shape it has: a set-aside of kind
/// `temporary_file`, under the housekeeping code, of a path where the doctor's atomic writes
/// leave temporary files ([`is_temp_place`]).
pub fn accepts(a: &PlannedAction) -> bool {
    a.rule == CODE && is_housekeeping(&a.action) && is_temp_place(&a.path)
}

/// Whether `action` is the one kind of action housekeeping plans.
pub fn is_housekeeping(action: &Action) -> bool {
    *action == ACTION
}

/// Whether `path` (relative to S) is a place where the doctor's atomic writes leave temporary
/// files, and names one: beside a session document in S (`.<id>.json.doctor-tmp-*`, the
/// document's id valid and not reserved), in `.reconcile/` or its `purge-pending/`, or beside a thread record in a
/// store's `threads/` (`<id>/.../threads/.<tid>.json.doctor-tmp-*`). Nothing else: not under
/// `.set-aside/`, `checkpoints/` or `.late-usage/`, not in a session's other directories. The
/// planner and the saved-plan check both judge by this one predicate.
pub fn is_temp_place(path: &str) -> bool {
    let parts: Vec<&str> = path.split('/').collect();
    let Some((name, dirs)) = parts.split_last() else {
        return false;
    };
    let Some(target) = fsroot::temp::target(name) else {
        return false;
    };
    let document = |t: &str| {
        t.strip_suffix(".json")
            .is_some_and(|id| store::ids::is_valid_id(id) && !store::ids::is_reserved_top(t))
    };
    let plain = |c: &&str| !c.is_empty() && !c.starts_with('.');
    match dirs {
        [] => document(target),
        [dir] => *dir == RECONCILE_DIR,
        [dir, sub] if *dir == RECONCILE_DIR => *sub == PURGE_PENDING,
        [session, .., threads] => {
            *threads == "threads"
                && store::ids::is_valid_id(session)
                && dirs.iter().all(plain)
                && target
                    .strip_suffix(".json")
                    .is_some_and(store::ids::is_valid_id)
        }
    }
}

/// The temporary files a real run sets aside: `candidates` (those the scan found, in S and in
/// threads directories, or those beside the records a restore rewrites) plus any in
/// `.reconcile/`, except this process's own, those inside a store another process holds, and
/// those of a live session. Each is planned with its digest. Reads only, so a dry run lists
/// exactly what a real run sets aside. A `.reconcile/` that cannot be listed (other than missing)
/// or a file that cannot be digested is reported in `errors`, never passed over in silence.
pub fn plan_interrupted_writes(
    root: &Root,
    candidates: &[String],
    errors: &mut Vec<Problem>,
) -> Vec<PlannedAction> {
    let mut all: Vec<String> = candidates.to_vec();
    // The doctor's own directories: `.reconcile/` (`last.json`) and the purge records of
    // `.reconcile/purge-pending/`, whose writes a kill can leave half done too.
    for dir in [RECONCILE_DIR, PURGE_PENDING_DIR] {
        match root.list(Path::new(dir)) {
            Ok(entries) => {
                for e in entries {
                    let name = e.name.to_string_lossy();
                    if e.kind == EntryKind::File && fsroot::temp::is_temp(&name) {
                        all.push(format!("{dir}/{name}"));
                    }
                }
            }
            Err(e) if e.is_not_found() => {}
            Err(e) => {
                // `purge-pending/` lies beneath `.reconcile/`: one error says it for both.
                errors.push(Problem::from(&e));
                break;
            }
        }
    }
    // Only where the doctor leaves temporary files; never one whose writer is still alive (this
    // process's own writes in progress, a host writing with the same library), nor one of a
    // store or session somebody holds.
    all.retain(|p| {
        let name = p.rsplit('/').next().unwrap_or(p);
        is_temp_place(p) && !fsroot::temp::writer_alive(name) && nobody_holds(root, p)
    });
    all.sort();
    all.dedup();
    let mut out = Vec::new();
    for path in all {
        let digest = match root.file_digest(Path::new(&path)) {
            Ok(d) => d,
            Err(e) if e.is_not_found() => continue,
            Err(e) => {
                errors.push(Problem::from(&e));
                continue;
            }
        };
        out.push(PlannedAction {
            seq: 0,
            rule: CODE.to_owned(),
            rule_name: NAME.to_owned(),
            action: ACTION,
            path,
            reason: REASON.to_owned(),
            precondition: Precondition::File {
                bytes: digest.bytes,
                sha256: digest.sha256,
            },
        });
    }
    out
}

/// Puts `housekeeping` at the head of `plan` and numbers every action from 1 again.
pub fn prepend(plan: &mut Plan, housekeeping: Vec<PlannedAction>) {
    if housekeeping.is_empty() {
        return;
    }
    let rest = std::mem::take(&mut plan.actions);
    plan.actions = housekeeping;
    plan.actions.extend(rest);
    for (i, a) in plan.actions.iter_mut().enumerate() {
        a.seq = i as u64 + 1;
    }
}

/// The session a temporary file belongs to: the first component of its path, or for one in S
/// itself the stem of the document it was writing.
pub fn session_of_temp(path: &str) -> String {
    match path.split_once('/') {
        Some((first, _)) => first.to_owned(),
        None => fsroot::temp::target(path)
            .map(|t| t.strip_suffix(".json").unwrap_or(t).to_owned())
            .unwrap_or_default(),
    }
}

/// The store a temporary file lies in, when it is in a store's `threads/`.
pub fn store_of_temp(path: &str) -> Option<&str> {
    path.rsplit_once("/threads/").map(|(store, _)| store)
}

/// Whether nobody holds the store or the session a temporary file lies in.
fn nobody_holds(root: &Root, path: &str) -> bool {
    if let Some(store) = store_of_temp(path) {
        if !lock_is_free(root, &format!("{store}/{OWNER_LOCK}")) {
            return false;
        }
    }
    lease_held(root, &session_of_temp(path)).is_ok_and(|held| !held)
}

#[cfg(test)]
// The tests build their trees with std::fs, outside the root under test.
#[allow(clippy::disallowed_methods, clippy::disallowed_types)]
mod tests {
    use super::*;

    fn write(dir: &Path, rel: &str, bytes: &[u8]) {
        let path = dir.join(rel);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, bytes).unwrap();
    }

    // Makes a symlink (Unix).
    #[cfg(unix)]
    #[test]
    fn a_reconcile_dir_that_cannot_be_listed_is_reported_not_taken_for_empty() {
        let tmp = tempfile::tempdir().unwrap();
        let root = Root::open(tmp.path()).unwrap();
        let mut errors = Vec::new();
        assert!(plan_interrupted_writes(&root, &[], &mut errors).is_empty());
        assert!(
            errors.is_empty(),
            "a missing .reconcile is empty: {errors:?}"
        );
        let elsewhere = tempfile::tempdir().unwrap();
        std::os::unix::fs::symlink(elsewhere.path(), tmp.path().join(RECONCILE_DIR)).unwrap();
        assert!(plan_interrupted_writes(&root, &[], &mut errors).is_empty());
        assert_eq!(errors.len(), 1, "{errors:?}");
        assert!(errors[0].path.contains(RECONCILE_DIR), "{:?}", errors[0]);
    }

    /// A candidate gone since the scan is no error; one that cannot be digested (a symlink of
    /// that name) is reported; a directory of that name in `.reconcile/` is not a candidate.
    // Makes a symlink (Unix).
    #[cfg(unix)]
    #[test]
    fn what_is_not_a_temporary_file_now_is_not_planned_and_what_cannot_be_read_is_reported() {
        let tmp = tempfile::tempdir().unwrap();
        let gone = ".gone.json.doctor-tmp-9999999-0";
        let link = ".link.json.doctor-tmp-9999999-1";
        std::os::unix::fs::symlink("a.json", tmp.path().join(link)).unwrap();
        std::fs::create_dir_all(tmp.path().join(".reconcile/.d.json.doctor-tmp-9999999-2"))
            .unwrap();
        let root = Root::open(tmp.path()).unwrap();

        let mut errors = Vec::new();
        assert!(plan_interrupted_writes(&root, &[gone.to_owned()], &mut errors).is_empty());
        assert!(errors.is_empty(), "{errors:?}");

        assert!(plan_interrupted_writes(&root, &[link.to_owned()], &mut errors).is_empty());
        assert_eq!(errors.len(), 1, "{errors:?}");
        assert!(errors[0].path.ends_with(link), "{errors:?}");
    }

    #[test]
    fn each_set_aside_is_planned_with_the_files_digest_and_heads_the_plan() {
        let tmp = tempfile::tempdir().unwrap();
        let temp = ".a.json.doctor-tmp-9999999-0";
        write(tmp.path(), temp, b"half a document");
        write(
            tmp.path(),
            ".reconcile/.last.json.doctor-tmp-9999999-1",
            b"{",
        );
        let root = Root::open(tmp.path()).unwrap();
        let mut errors = Vec::new();
        let planned = plan_interrupted_writes(&root, &[temp.to_owned()], &mut errors);
        assert!(errors.is_empty(), "{errors:?}");
        let paths: Vec<&str> = planned.iter().map(|a| a.path.as_str()).collect();
        assert_eq!(paths, [temp, ".reconcile/.last.json.doctor-tmp-9999999-1"]);
        let digest = root.file_digest(Path::new(temp)).unwrap();
        assert_eq!(
            planned[0].precondition,
            Precondition::File {
                bytes: digest.bytes,
                sha256: digest.sha256
            }
        );
        assert!(planned.iter().all(accepts), "{planned:?}");
        assert!(
            planned.iter().all(|a| a.action
                == Action::SetAside {
                    kind: ItemKind::TemporaryFile
                }),
            "never a deletion: {planned:?}"
        );

        let mut plan = Plan {
            actions: vec![PlannedAction {
                seq: 1,
                rule: "R1".into(),
                ..planned[0].clone()
            }],
            ..Plan::default()
        };
        prepend(&mut plan, planned);
        let seqs: Vec<(u64, &str)> = plan
            .actions
            .iter()
            .map(|a| (a.seq, a.rule.as_str()))
            .collect();
        assert_eq!(seqs, [(1, CODE), (2, CODE), (3, "R1")]);
    }

    #[test]
    fn only_the_places_the_doctor_writes_hold_its_temporary_files() {
        for path in [
            ".a.json.doctor-tmp-9999999-0",
            ".reconcile/.last.json.doctor-tmp-9999999-1",
            "a/runtime/threads/.t-1.json.doctor-tmp-9999999-2",
            "a/threads/.t-1.json.doctor-tmp-9999999-2",
            ".reconcile/purge-pending/.20261101T000000Z-abcdef.json.doctor-tmp-9999999-7",
        ] {
            assert!(is_temp_place(path), "{path}");
        }
        for path in [
            "a.json",
            ".session_boot_owners.json.doctor-tmp-9999999-3",
            ".config.doctor-tmp-9999999-3",
            "alpha/artifacts/.notes.doctor-tmp-1-2",
            ".set-aside/20260101T000000Z-abcdef/.x.json.doctor-tmp-7-7",
            ".set-aside/20260101T000000Z-abcdef/a/runtime/threads/.t.json.doctor-tmp-7-7",
            "checkpoints/.a.json.doctor-tmp-9999999-4",
            ".late-usage/.a.live.doctor-tmp-9999999-4",
            "a/.hidden/threads/.t.json.doctor-tmp-9999999-5",
            "../a/runtime/threads/.t.json.doctor-tmp-9999999-5",
            "a/runtime/threads/x/.t.json.doctor-tmp-9999999-6",
            ".reconcile/other/.x.json.doctor-tmp-9999999-8",
            ".reconcile/purge-pending/x/.x.json.doctor-tmp-9999999-8",
        ] {
            assert!(!is_temp_place(path), "{path}");
        }
    }

    #[test]
    fn a_temporary_file_whose_writer_is_alive_or_that_lies_elsewhere_is_not_planned() {
        let tmp = tempfile::tempdir().unwrap();
        let own = fsroot::temp::name("mine.json".as_ref(), std::process::id(), 0);
        let own = own.to_str().unwrap().to_owned();
        write(tmp.path(), &own, b"in flight");
        // Another live process: one waiting on a pipe this test holds open.
        let mut other = if cfg!(windows) {
            let mut c = std::process::Command::new("cmd");
            c.args(["/c", "pause"]);
            c
        } else {
            std::process::Command::new("cat")
        }
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::null())
        .spawn()
        .unwrap();
        let others = fsroot::temp::name("boot.json".as_ref(), other.id(), 0);
        let others = others.to_str().unwrap().to_owned();
        write(tmp.path(), &others, b"another live process writes it");
        let stray = "alpha/artifacts/.notes.doctor-tmp-9999999-2";
        write(tmp.path(), stray, b"user data");
        let root = Root::open(tmp.path()).unwrap();
        let mut errors = Vec::new();
        let candidates = [own, others, stray.to_owned()];
        let planned = plan_interrupted_writes(&root, &candidates, &mut errors);
        drop(other.stdin.take());
        other.kill().ok();
        other.wait().unwrap();
        assert!(planned.is_empty(), "{planned:?}");
        assert!(errors.is_empty(), "{errors:?}");

        // Once that writer is gone, its file is an interrupted write.
        let planned = plan_interrupted_writes(&root, &candidates[1..2], &mut errors);
        assert_eq!(planned.len(), 1, "{planned:?}");
    }

    // Holds the lease with `flock` (std's `File::lock` on Unix), as the app does there.
    #[cfg(unix)]
    #[test]
    fn a_temporary_file_of_a_live_session_is_not_planned() {
        let tmp = tempfile::tempdir().unwrap();
        let temp = "alpha/runtime/threads/.t-1.json.doctor-tmp-9999999-0";
        write(tmp.path(), temp, b"x");
        write(tmp.path(), ".late-usage/alpha.live", b"");
        let root = Root::open(tmp.path()).unwrap();
        let mut errors = Vec::new();
        let planned =
            |errors: &mut Vec<_>| plan_interrupted_writes(&root, &[temp.to_owned()], errors);
        assert_eq!(
            planned(&mut errors).len(),
            1,
            "planned while nobody holds the session"
        );
        let lease = std::fs::File::open(tmp.path().join(".late-usage/alpha.live")).unwrap();
        lease.lock().unwrap();
        assert!(
            planned(&mut errors).is_empty(),
            "not while its session is live"
        );
        assert!(errors.is_empty(), "{errors:?}");
    }
}
