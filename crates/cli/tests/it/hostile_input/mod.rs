//! Hostile input beyond malformed documents (those are `bad_input.rs`), one file per class of
//! input:
//!
//! - `malformed_records.rs` (c01-c09): malformed thread records, turns, items and store files;
//!   documents 500 levels deep, of 100 MB, and a sparse 64 GiB one;
//! - `names.rs` (c10-c13, c91): names that are not UTF-8 below the top level; an id inside a
//!   recovered document's digest, which names nothing;
//! - `permissions.rs` (c14-c16, c48, c56, c68): permission-denied files and directories, private
//!   records, unreadable documents and checkpoints that may bind a store;
//! - `symlinks.rs` (c17-c25, c67): loops, and links out of S in place of a session directory, a
//!   store, a thread record, a document, a turn directory, `.set-aside`, `.reconcile` and
//!   `.reconcile.lock`;
//! - `outside_s.rs` (c26, c27, c42): bindings to `/etc` and `../../..`, hard links to files
//!   outside S;
//! - `wrong_kinds.rs` (c28-c38): files where directories are expected, and the reverse;
//! - `special_files.rs` (c39-c41, c57, c58, c60, c61, c70): fifos, devices and sockets, at the
//!   store's files and at the doctor's own;
//! - `filesystems.rs` (c43-c47): a read-only S, ENOSPC, EXDEV;
//! - `races.rs` (c50-c55, c64-c66, c69, c92): the real binary stopped right before one mutation with
//!   the pause hook (`DOCTOR_PAUSE_BEFORE`), the store changed inside that window, the run let
//!   go on;
//! - `own_records.rs` (c49, c59, c62, c63): the doctor's own files tampered with or unwritable.
//!
//! Each test is one class. Each repairs dry and for real (through the library, or the binary
//! where a second user, a memory limit or a timeout is needed) and checks: no panic; a message
//! that names the path; nothing lost (every file and directory of S is at its path or at its
//! mirrored path under `.set-aside/<run>/`); the healthy session `keep` untouched; nothing
//! outside S changed (content and mtimes of a tree of decoys that following a link would
//! reach). This file holds the harness they share.
//!
//! Root: the tests run as root in CI, where `chmod` denies nothing. The permission tests run the
//! real binary as user 65534 through `setpriv`; the filesystem tests (read-only S, ENOSPC,
//! EXDEV) mount small tmpfs filesystems. Each prints why it is skipped when it cannot do so.

mod filesystems;
mod malformed_records;
mod names;
mod outside_s;
mod own_records;
mod permissions;
mod races;
mod special_files;
mod symlinks;
mod wrong_kinds;

use std::collections::BTreeMap;
use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use crate::common::{self, assert_nothing_lost, mtimes, tree, Doctor, Kept, Node, Ran, Tree};
use crate::stores::{
    self, bound_document, data_dir, document, document_bound_to, empty_store, pretty, rich_store,
    store_with_thread, thread, turn, turn_id, turn_items, turn_messages, write, NOW, RICH_ACTIONS,
};
use doctor::{RepairOptions, RepairReport};
use plan::OutcomeKind;
use serde_json::{json, Value};
use store::{Clock, Timestamp};

// The harness every class shares.

/// A temporary directory holding S and, next to it, a tree of decoys outside S: what a link
/// out of S would reach, and what the doctor would change if it followed one.
struct Case {
    tmp: tempfile::TempDir,
    s: PathBuf,
    outside: PathBuf,
}

impl Case {
    fn new() -> Case {
        let tmp = tempfile::tempdir().unwrap();
        let s = tmp.path().join("S");
        let outside = tmp.path().join("outside");
        Case::populate(&s, &outside);
        Case { tmp, s, outside }
    }

    /// A case whose S lives at `s` (for example inside a mount); decoys in the temp dir.
    fn at(s: PathBuf) -> Case {
        let tmp = tempfile::tempdir().unwrap();
        let outside = tmp.path().join("outside");
        Case::populate(&s, &outside);
        Case { tmp, s, outside }
    }

    fn populate(s: &Path, outside: &Path) {
        std::fs::create_dir_all(s).unwrap();
        // The healthy session every run must leave alone.
        write(
            s,
            "keep.json",
            pretty(&bound_document(s, "keep", "keep/runtime")),
        );
        store_with_thread(s, "keep/runtime", "th-keep", Some("keep"), 1);
        // Decoys: an empty store (R2 would move it), a thread with a dangling binding (R4
        // would rewrite it), a torn document (R1 would move it), a completed turn and its
        // items (R3 would read them), a session directory, and empty directories for links to
        // lead to.
        empty_store(outside, "store");
        empty_store(outside, "session/runtime");
        write(
            outside,
            "thread.json",
            pretty(&thread("th-out", Some("nobody"))),
        );
        write(outside, "torn.json", br#"{"schema_version":1,"metadata":{"#);
        write(
            outside,
            &format!("turns/{}.json", turn_id("th-z", 1)),
            pretty(&turn("th-z", 1)),
        );
        for mut item in turn_items("th-z", 1) {
            item["detail"] = json!("OUTSIDE-SECRET");
            item["summary"] = json!("OUTSIDE-SECRET");
            write(
                outside,
                &format!("items/{}.json", item["id"].as_str().unwrap()),
                pretty(&item),
            );
        }
        write(outside, "lockfile", b"");
        std::fs::create_dir_all(outside.join("aside")).unwrap();
        std::fs::create_dir_all(outside.join("reconcile")).unwrap();
    }

    fn outside_state(&self) -> (Tree, BTreeMap<PathBuf, i128>) {
        (tree(&self.outside), mtimes(&self.outside))
    }
}

/// What one class did: the dry and the real run, and S before and after.
struct Observed {
    dry: Result<RepairReport, String>,
    real: Result<RepairReport, String>,
    before: Tree,
    after: Tree,
}

impl Observed {
    fn dry(&self) -> &RepairReport {
        self.dry
            .as_ref()
            .unwrap_or_else(|e| panic!("dry run failed: {e}"))
    }
    fn real(&self) -> &RepairReport {
        self.real
            .as_ref()
            .unwrap_or_else(|e| panic!("real run failed: {e}"))
    }
    /// Everything both runs said: JSON and human reports, or the error.
    fn said(&self) -> String {
        format!("{}\n{}", said(&self.dry), said(&self.real))
    }
}

fn said(r: &Result<RepairReport, String>) -> String {
    match r {
        Ok(report) => format!(
            "{}\n{}",
            serde_json::to_string(report).unwrap(),
            report.render_human()
        ),
        Err(e) => e.clone(),
    }
}

fn opts(s: &Path, dry_run: bool) -> RepairOptions {
    let mut o = crate::common::repair_options(s);
    o.dry_run = dry_run;
    o.clock = Clock::Fixed(Timestamp::parse(NOW).unwrap());
    o
}

/// A library repair; a panic fails the test with its message.
fn lib(s: &Path, dry_run: bool) -> Result<RepairReport, String> {
    match catch_unwind(AssertUnwindSafe(|| {
        doctor::repair_sessions(&opts(s, dry_run))
    })) {
        Ok(r) => r.map_err(|e| e.to_string()),
        Err(p) => panic!(
            "repair (dry_run: {dry_run}) panicked: {}",
            p.downcast_ref::<String>()
                .cloned()
                .or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string()))
                .unwrap_or_default()
        ),
    }
}

/// Runs the dry run (which must not change S), then the real run, and checks the invariants
/// every class shares: nothing lost, `keep` untouched, nothing outside S changed.
#[track_caller]
fn exercise(case: &Case) -> Observed {
    let before = tree(&case.s);
    let outside = case.outside_state();
    let dry = lib(&case.s, true);
    assert_eq!(tree(&case.s), before, "the dry run changed S");
    let real = lib(&case.s, false);
    let after = tree(&case.s);
    assert_nothing_lost(&before, &after, kept());
    assert_keep_untouched(&before, &after);
    assert_eq!(case.outside_state(), outside, "something outside S changed");
    Observed {
        dry,
        real,
        before,
        after,
    }
}

/// What every class accepts for an entry of S that is no longer at its path: its mirrored path
/// in some set-aside run (a thread record the doctor rewrote counts as kept when its previous
/// bytes are there, the `previous_version` copy). The doctor's own lock and receipts change by
/// design.
fn kept() -> Kept<'static> {
    Kept::in_any_run().own_records_change()
}

#[track_caller]
fn assert_keep_untouched(before: &Tree, after: &Tree) {
    for (p, n) in before {
        if p.starts_with("keep") || p == Path::new("keep.json") {
            assert_eq!(
                after.get(p),
                Some(n),
                "{} of the healthy session",
                p.display()
            );
        }
    }
}

/// `text` mentions `needle`.
#[track_caller]
fn assert_says(text: &str, needle: &str) {
    assert!(
        text.contains(needle),
        "expected a message naming {needle:?}; the runs said:\n{text}"
    );
}

fn file(bytes: &[u8]) -> Node {
    Node::File(bytes.to_vec())
}

/// The outcome of the action on `path` in a real run.
fn outcome_of<'a>(report: &'a RepairReport, path: &str) -> &'a plan::Outcome {
    let action = report
        .plan
        .actions
        .iter()
        .find(|a| a.path == path)
        .unwrap_or_else(|| panic!("no action on {path}: {:?}", report.plan.actions));
    report
        .outcomes
        .iter()
        .find(|o| o.seq == action.seq)
        .unwrap()
}

fn symlink(target: impl AsRef<Path>, at: &Path) {
    std::fs::create_dir_all(at.parent().unwrap()).unwrap();
    std::os::unix::fs::symlink(target, at).unwrap();
}

fn is_root() -> bool {
    std::fs::metadata("/proc/self")
        .map(|m| m.uid())
        .unwrap_or(1)
        == 0
}

/// `doctor --repair-sessions --json --sessions-dir S [--dry-run]` at [`NOW`]; the caller adds
/// a user, a memory limit, a timeout.
fn repair_bin(s: &Path, dry_run: bool) -> Doctor {
    let d = Doctor::new()
        .args(["--repair-sessions", "--json"])
        .sessions_dir(s)
        .now(NOW);
    if dry_run {
        d.arg("--dry-run")
    } else {
        d
    }
}

/// Runs the doctor binary with `args` (nothing else) at [`NOW`], killed after `timeout`.
fn doctor_args(args: &[&OsStr], timeout: Duration) -> Ran {
    Doctor::new().args(args).now(NOW).timeout(timeout).run()
}

fn chmod(p: &Path, mode: u32) {
    std::fs::set_permissions(p, std::fs::Permissions::from_mode(mode)).unwrap();
}

fn receipts(s: &Path) -> Vec<Value> {
    std::fs::read_to_string(s.join(".reconcile/receipts.jsonl"))
        .unwrap_or_default()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// A real run on the rich store with an unusable `.set-aside`: refused before acting, naming
/// it, or run with no action applied (the first action on each path failed naming
/// `.set-aside`; a later one on the same path, R3 after R4's failed unbind, was skipped because
/// the record is not what the plan expected, or failed the same way). S is unchanged apart from
/// the doctor's own lock and receipts.
#[track_caller]
fn assert_set_aside_unusable(o: &Observed) {
    assert_eq!(o.dry().plan.actions.len(), RICH_ACTIONS);
    match &o.real {
        Err(e) => assert_says(e, "S/.set-aside"),
        Ok(real) => {
            let mut seen = std::collections::BTreeSet::new();
            for (a, out) in real.plan.actions.iter().zip(&real.outcomes) {
                let why = out.why.as_deref().unwrap_or_default();
                let first = seen.insert(a.path.clone());
                let ok = match out.outcome {
                    OutcomeKind::Failed => why.contains(".set-aside"),
                    OutcomeKind::Skipped => !first && why.starts_with("changed since planned"),
                    OutcomeKind::Applied => false,
                };
                assert!(ok, "{} {:?}: {why}", a.path, out.outcome);
            }
        }
    }
    for (p, n) in o
        .before
        .iter()
        .filter(|(p, _)| !p.starts_with(".reconcile"))
    {
        assert_eq!(o.after.get(p), Some(n), "{}", p.display());
    }
    assert!(!o.after.contains_key(Path::new("th-orphan.json")));
}

fn outcome_in(report: &Value, path: &str) -> Value {
    let seq = report["plan"]["actions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|a| a["path"] == path)
        .unwrap_or_else(|| panic!("no action on {path}: {report:#}"))["seq"]
        .clone();
    report["outcomes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|o| o["seq"] == seq)
        .cloned()
        .unwrap()
}

/// A case with the torn document `torn.json` (R1 sets it aside).
fn torn_case() -> Case {
    let c = Case::new();
    write(&c.s, "torn.json", b"{\"torn\":");
    c
}
