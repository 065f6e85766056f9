//! Every deletion is receipted (issue 21, item 2): a purge records the deletion of a run in
//! `S/.reconcile/purge-pending/<run>.json` before it starts, and removes the record once the
//! receipt is written. A receipts log that cannot be written (immutable: nothing is deleted;
//! cut short by `EFBIG`: the next purge writes the receipt), a record that cannot be written
//! (nothing is deleted) and a kill at any point between the record and the receipt all end
//! with the run gone and its deletion receipted, once.

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

use crate::common::{Doctor, Ran};
use crate::stores::{document, pretty, write};

const NOW: &str = "2026-11-29T12:00:00Z";
/// A month after [`NOW`]: `--older-than 1d` takes the run made at NOW.
const LATER: &str = "2026-12-29T12:00:00Z";

/// S with a readable session and a torn document, repaired at [`NOW`]: one run, holding the
/// torn document. Returns the run.
fn repaired() -> (tempfile::TempDir, PathBuf, String) {
    let tmp = tempfile::tempdir().unwrap();
    let s = tmp.path().join("S");
    std::fs::create_dir_all(&s).unwrap();
    write(&s, "keep.json", pretty(&document("keep")));
    write(&s, "torn.json", b"{\"schema_version\": 1, \"messages\": [");
    let out = Doctor::new()
        .args(["--repair-sessions", "--json"])
        .sessions_dir(&s)
        .now(NOW)
        .run();
    assert_eq!(out.code, Some(0), "{}", out.said());
    let run = out.json()["run"].as_str().unwrap().to_owned();
    (tmp, s, run)
}

/// `--purge-set-aside --older-than 1d --json` at [`LATER`], `dry` for a dry run.
fn purge(s: &Path, dry: bool) -> Doctor {
    let d = Doctor::new()
        .sessions_dir(s)
        .args(["--purge-set-aside", "--older-than", "1d", "--json"])
        .now(LATER);
    if dry {
        d.arg("--dry-run")
    } else {
        d
    }
}

/// The applied purge receipts of `path` in S's receipts log.
fn purge_receipts(s: &Path, path: &str) -> Vec<Value> {
    let bytes = std::fs::read(s.join(".reconcile/receipts.jsonl")).unwrap_or_default();
    bytes
        .split(|b| *b == b'\n')
        .filter_map(|l| serde_json::from_slice::<Value>(l).ok())
        .filter(|r| r["action"] == "purge" && r["path"] == path && r["outcome"] == "applied")
        .collect()
}

fn record(s: &Path, run: &str) -> PathBuf {
    s.join(".reconcile/purge-pending")
        .join(format!("{run}.json"))
}

/// The end every purge must reach: the run gone, its deletion receipted exactly once, no
/// record left, the session kept, and a further purge planning nothing.
#[track_caller]
fn converged(s: &Path, run: &str, context: &str) {
    let path = format!(".set-aside/{run}");
    assert!(!s.join(&path).exists(), "{context}: the run is gone");
    assert_eq!(
        purge_receipts(s, &path).len(),
        1,
        "{context}: one receipt of the deletion"
    );
    assert!(!record(s, run).exists(), "{context}: no record left");
    assert!(s.join("keep.json").is_file(), "{context}");
    let again = purge(s, true).run();
    assert_eq!(again.code, Some(0), "{context}: {}", again.said());
    assert_eq!(
        again.json()["plan"]["actions"],
        serde_json::json!([]),
        "{context}"
    );
}

/// `chattr` on `path`, which must work: the tests run as root on a filesystem with
/// attributes (ext4 here and in CI; `.ci/run` installs e2fsprogs when `chattr` is missing).
pub(crate) fn chattr(flag: &str, path: &Path) {
    let out = Command::new("chattr").arg(flag).arg(path).output();
    let ok = out.as_ref().is_ok_and(|o| o.status.success());
    assert!(ok, "chattr {flag} {}: {out:?}", path.display());
}

/// Lifts `chattr +i` when dropped, so the temporary directory can go even when a test fails.
pub(crate) struct Immutable(pub(crate) PathBuf);

impl Drop for Immutable {
    fn drop(&mut self) {
        let _ = Command::new("chattr").arg("-i").arg(&self.0).status();
    }
}

/// `chattr +i S/.reconcile/receipts.jsonl`: no receipt can be written, which the purge finds
/// before it deletes anything. The run is left whole, the purge exits 1 naming the log; once
/// the log is writable again the purge deletes the run and receipts it.
#[test]
fn an_immutable_receipts_log_stops_a_purge_before_anything_is_deleted() {
    let (_tmp, s, run) = repaired();
    let receipts = s.join(".reconcile/receipts.jsonl");
    let before = std::fs::read(&receipts).unwrap();
    let run_dir = s.join(".set-aside").join(&run);
    let held = crate::common::tree(&run_dir);
    chattr("+i", &receipts);
    let guard = Immutable(receipts.clone());

    let out = purge(&s, false).run();
    assert_eq!(out.code, Some(1), "{}", out.said());
    assert!(out.said().contains("receipts.jsonl"), "{}", out.said());
    assert_eq!(crate::common::tree(&run_dir), held, "nothing deleted");
    assert!(!record(&s, &run).exists());
    drop(guard);
    assert_eq!(std::fs::read(&receipts).unwrap(), before);

    let out = purge(&s, false).run();
    assert_eq!(out.code, Some(0), "{}", out.said());
    converged(&s, &run, "after the log is writable again");
}

/// The receipts log cannot grow (`RLIMIT_FSIZE` below its size, `SIGXFSZ` ignored: the append
/// fails with `EFBIG`, which opening the log does not show). The deletion was recorded before
/// it started, so the run is gone with a record of it; the purge exits 1 naming the log, and
/// the next purge writes the receipt (`finishes_run`) and drops the record.
#[test]
fn a_receipt_that_fails_with_efbig_is_written_by_the_next_purge() {
    const LIMIT: u64 = 4096;
    let (_tmp, s, run) = repaired();
    let receipts = s.join(".reconcile/receipts.jsonl");
    let mut padded = std::fs::read(&receipts).unwrap();
    padded.resize(LIMIT as usize + 10, b'\n');
    std::fs::write(&receipts, &padded).unwrap();

    let out = purge(&s, false).file_size_limit(LIMIT).run();
    assert_eq!(out.code, Some(1), "{}", out.said());
    assert!(out.said().contains("receipts.jsonl"), "{}", out.said());
    assert!(!s.join(".set-aside").join(&run).exists(), "deleted");
    let pending: Value = serde_json::from_slice(&std::fs::read(record(&s, &run)).unwrap())
        .expect("the deletion is recorded");
    assert_eq!(pending["path"], format!(".set-aside/{run}"));
    assert_eq!(std::fs::read(&receipts).unwrap(), padded, "no receipt");

    let dry = purge(&s, true).run();
    let planned = dry.json()["plan"]["actions"].to_string();
    assert!(planned.contains("receipted now"), "{planned}");
    let out = purge(&s, false).run();
    assert_eq!(out.code, Some(0), "{}", out.said());
    converged(&s, &run, "after the limit is gone");
    let receipt = &purge_receipts(&s, &format!(".set-aside/{run}"))[0];
    assert_eq!(receipt["finishes_run"], pending["run"], "{receipt:#}");
    let schema: Value = serde_json::from_str(include_str!(
        "../../../../docs/schemas/receipt-line.schema.json"
    ))
    .unwrap();
    let validator = jsonschema::draft202012::options()
        .should_validate_formats(true)
        .build(&schema)
        .unwrap();
    let errors: Vec<String> = validator
        .iter_errors(receipt)
        .map(|e| e.to_string())
        .collect();
    assert!(errors.is_empty(), "{errors:#?}: {receipt:#}");
}

/// The mutations of a real purge of a fresh [`repaired`] store, traced.
fn traced_purge() -> Vec<(u64, String)> {
    let (_tmp, s, _) = repaired();
    let out: Ran = purge(&s, false).env("DOCTOR_FAULT_TRACE", "1").run();
    assert_eq!(out.code, Some(0), "{}", out.said());
    mutations(&out)
}

/// The mutations a run traced (`DOCTOR_FAULT_TRACE=1`), numbered.
fn mutations(out: &Ran) -> Vec<(u64, String)> {
    out.stderr
        .lines()
        .filter_map(|l| {
            let rest = l.strip_prefix("doctor: fault point: mutation ")?;
            let (n, described) = rest.split_once(' ')?;
            let described = described.strip_prefix('(')?.strip_suffix(')')?;
            Some((n.parse().ok()?, described.to_owned()))
        })
        .collect()
}

/// A purge killed (SIGKILL) just before and just after each mutation from the record's write
/// to its removal: the rerun finishes the deletion or writes the missing receipt, and ends as
/// an uninterrupted purge does. A record that cannot be written (an injected `EIO` at each of
/// its mutations) deletes nothing.
#[test]
fn a_purge_killed_between_its_record_and_its_receipt_converges() {
    let trace = traced_purge();
    let first = trace
        .iter()
        .position(|(_, d)| d.contains(".reconcile/purge-pending"))
        .unwrap_or_else(|| panic!("no record written: {trace:#?}"));
    let last = trace
        .iter()
        .rposition(|(_, d)| d.contains(".reconcile/purge-pending"))
        .unwrap();
    let receipt = trace
        .iter()
        .position(|(_, d)| d.contains("append .reconcile/receipts.jsonl"))
        .unwrap();
    let deletes = trace
        .iter()
        .position(|(_, d)| d.starts_with("delete .set-aside/"))
        .unwrap_or_else(|| panic!("no deletion: {trace:#?}"));
    assert!(
        first < deletes && deletes < receipt && receipt < last,
        "{trace:#?}"
    );
    let mut killed = 0;
    for (n, described) in &trace[first..=last] {
        for when in ["", ":after"] {
            let (_tmp, s, run) = repaired();
            let context = format!("killed at {n}{when} ({described})");
            let stopped = purge(&s, false).killed_at(&format!("{n}{when}"));
            assert!(stopped.is_some(), "{context}: not reached");
            killed += 1;
            let out = purge(&s, false).run();
            assert_eq!(out.code, Some(0), "{context}: {}", out.said());
            converged(&s, &run, &context);
        }
    }
    assert!(killed >= 10, "{killed} kill points");
    // The record's own mutations, failed: nothing is deleted, the purge fails.
    let record_writes = trace[first..deletes]
        .iter()
        .filter(|(_, d)| d.contains(".reconcile/purge-pending"));
    for (n, described) in record_writes {
        let (_tmp, s, run) = repaired();
        let held = crate::common::tree(&s.join(".set-aside").join(&run));
        let out = purge(&s, false)
            .env("DOCTOR_FAULT_AT", format!("{n}:fail"))
            .run();
        let context = format!("{n} failed ({described})");
        assert_eq!(out.code, Some(1), "{context}: {}", out.said());
        assert!(
            out.said()
                .contains("cannot record the deletion before starting it"),
            "{context}: {}",
            out.said()
        );
        assert_eq!(
            crate::common::tree(&s.join(".set-aside").join(&run)),
            held,
            "{context}: nothing deleted"
        );
    }
}

/// A purge killed just before its first unlink leaves its record; then the run's directory is
/// replaced by a copy of itself (another inode: the store copied back from a backup). The
/// record names a directory that is no longer there: it is dropped, named, and the copy is
/// judged as any run (whole, old enough: purged and receipted), never skipped forever as a
/// deletion "already done".
#[test]
fn a_record_whose_run_is_another_directory_now_is_dropped_and_the_run_judged_afresh() {
    let trace = traced_purge();
    let (n, _) = trace
        .iter()
        .find(|(_, d)| d.starts_with("delete .set-aside/"))
        .unwrap_or_else(|| panic!("no deletion: {trace:#?}"));
    let (_tmp, s, run) = repaired();
    assert!(purge(&s, false).killed_at(&n.to_string()).is_some());
    assert!(record(&s, &run).is_file(), "the deletion is recorded");
    let run_dir = s.join(".set-aside").join(&run);
    let copy = s.join(".set-aside").join("copy");
    let cp = Command::new("cp")
        .arg("-a")
        .arg(&run_dir)
        .arg(&copy)
        .status();
    assert!(cp.is_ok_and(|c| c.success()));
    std::fs::remove_dir_all(&run_dir).unwrap();
    std::fs::rename(&copy, &run_dir).unwrap();

    let out = purge(&s, false).run();
    assert_eq!(out.code, Some(0), "{}", out.said());
    assert!(
        out.json()["summary"]["errors"]
            .to_string()
            .contains("the directory there now is another one"),
        "{}",
        out.stdout
    );
    converged(&s, &run, "after the run was replaced by a copy");
}

/// A purge killed just after its first unlink leaves a partly deleted run and its record; a
/// record under another name (a copy, or planted) names the same run with another inode. Only
/// the record named by its run counts: the deletion is finished and receipted, the other
/// record neither stops it nor has the run's own record dropped (which would leave the partial
/// run to the ordinary rules, which skip it).
#[test]
fn only_the_record_named_by_its_run_is_read_as_its_purge() {
    let trace = traced_purge();
    let (n, _) = trace
        .iter()
        .find(|(_, d)| d.starts_with("delete .set-aside/"))
        .unwrap_or_else(|| panic!("no deletion: {trace:#?}"));
    let (_tmp, s, run) = repaired();
    assert!(purge(&s, false).killed_at(&format!("{n}:after")).is_some());
    let mut other: Value = serde_json::from_slice(&std::fs::read(record(&s, &run)).unwrap())
        .expect("the deletion is recorded");
    other["ino"] = Value::from(other["ino"].as_u64().unwrap() + 1);
    let planted = s.join(".reconcile/purge-pending/other.json");
    std::fs::write(&planted, other.to_string()).unwrap();

    let out = purge(&s, false).run();
    assert_eq!(out.code, Some(0), "{}", out.said());
    let errors = out.json()["summary"]["errors"].to_string();
    assert!(!errors.contains("another one"), "{errors}");
    assert!(planted.exists(), "not ours: left alone");
    converged(&s, &run, "beside a record under another name");
}

/// [`repaired`], then a purge killed just before its first unlink (mutation `first_delete`),
/// then the run replaced by a copy of itself: a record of a directory no longer there.
fn with_a_record_of_another_directory(first_delete: u64) -> (tempfile::TempDir, PathBuf, String) {
    let (tmp, s, run) = repaired();
    assert!(purge(&s, false)
        .killed_at(&first_delete.to_string())
        .is_some());
    assert!(record(&s, &run).is_file());
    let run_dir = s.join(".set-aside").join(&run);
    let copy = s.join(".set-aside").join("copy");
    let cp = Command::new("cp")
        .arg("-a")
        .arg(&run_dir)
        .arg(&copy)
        .status();
    assert!(cp.is_ok_and(|c| c.success()));
    std::fs::remove_dir_all(&run_dir).unwrap();
    std::fs::rename(&copy, &run_dir).unwrap();
    (tmp, s, run)
}

/// The purge that takes a run beside a record of another directory at its path records its
/// own deletion: killed after its first unlink, or its second unlink failing, the next purge
/// finishes the deletion and receipts it (the old record neither stands in for the new one
/// nor has it dropped after the plan).
#[test]
fn a_purge_beside_a_record_of_another_directory_records_its_own_deletion() {
    let trace = traced_purge();
    let (first_delete, _) = trace
        .iter()
        .find(|(_, d)| d.starts_with("delete .set-aside/"))
        .unwrap_or_else(|| panic!("no deletion: {trace:#?}"));
    let deletes: Vec<u64> = {
        let (_t, s, _) = with_a_record_of_another_directory(*first_delete);
        let out = purge(&s, false).env("DOCTOR_FAULT_TRACE", "1").run();
        assert_eq!(out.code, Some(0), "{}", out.said());
        mutations(&out)
            .into_iter()
            .filter(|(_, d)| d.starts_with("delete .set-aside/"))
            .map(|(n, _)| n)
            .collect()
    };
    assert!(deletes.len() >= 2, "{deletes:?}");

    let (_t, s, run) = with_a_record_of_another_directory(*first_delete);
    assert!(purge(&s, false)
        .killed_at(&format!("{}:after", deletes[0]))
        .is_some());
    let out = purge(&s, false).run();
    assert_eq!(out.code, Some(0), "{}", out.said());
    converged(&s, &run, "killed after its first unlink");

    let (_t, s, run) = with_a_record_of_another_directory(*first_delete);
    let out = purge(&s, false)
        .env("DOCTOR_FAULT_AT", format!("{}:fail", deletes[1]))
        .run();
    assert_eq!(out.code, Some(1), "{}", out.said());
    assert!(
        record(&s, &run).is_file(),
        "the failed deletion is recorded"
    );
    let out = purge(&s, false).run();
    assert_eq!(out.code, Some(0), "{}", out.said());
    converged(&s, &run, "its second unlink failed");
}
