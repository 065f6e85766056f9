//! Torn lines in the doctor's line logs (issue 21, item 1): `S/.reconcile/receipts.jsonl`, the
//! per-store `session-unbind-receipts.jsonl` and `S/.set-aside/<run>/MANIFEST.jsonl`. A line
//! cut short (a writer that died mid-line, a write cut short by `EFBIG` or `ENOSPC`) is never
//! glued onto; an item whose manifest line is not wholly on disk is never moved; `sessions
//! list`, restore and purge read past a torn line and name it.

use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::common::{self, Doctor, Ran};
use crate::stores::{document, pretty, write};

const NOW: &str = "2026-11-29T12:00:00Z";
/// A month after [`NOW`]: a purge `--older-than 1d` at this time takes the runs made at NOW.
const LATER: &str = "2026-12-29T12:00:00Z";
/// The torn record of the reproduction.
const TORN: &[u8] = b"{\"run\":\"x\",\"seq\":1,\"ru";

/// `doctor --sessions-dir <s> <args> --json` at `now`.
fn doctor(s: &Path, now: &str, args: &[&str]) -> Ran {
    Doctor::new()
        .sessions_dir(s)
        .args(args)
        .arg("--json")
        .now(now)
        .run()
}

/// `doctor sessions list <args> --sessions-dir <s> --json` at [`NOW`].
fn list(s: &Path, args: &[&str]) -> Ran {
    Doctor::new()
        .args(["sessions", "list"])
        .args(args)
        .args(["--json", "--sessions-dir"])
        .arg(s)
        .now(NOW)
        .run()
}

/// The lines of `path` (split on `\n`, without the empty piece after a final newline).
fn lines(path: &Path) -> Vec<Vec<u8>> {
    let bytes = std::fs::read(path).unwrap_or_else(|e| panic!("read {}: {e}", path.display()));
    let mut out: Vec<Vec<u8>> = bytes.split(|b| *b == b'\n').map(<[u8]>::to_vec).collect();
    if out.last().is_some_and(Vec::is_empty) {
        out.pop();
    }
    out
}

/// Every line of `path` after the first is a whole JSON record: nothing was glued onto the
/// first (torn) one.
#[track_caller]
fn rest_are_records(path: &Path) -> Vec<Value> {
    let all = lines(path);
    assert!(all.len() > 1, "{}: nothing appended", path.display());
    all[1..]
        .iter()
        .map(|l| {
            serde_json::from_slice(l).unwrap_or_else(|e| {
                panic!(
                    "{}: a line is not a record ({e}): {}",
                    path.display(),
                    String::from_utf8_lossy(l)
                )
            })
        })
        .collect()
}

/// S with a readable session `keep` and the torn documents `names` (R1 sets each aside).
fn store_with_torn(names: &[&str]) -> (tempfile::TempDir, PathBuf) {
    let tmp = tempfile::tempdir().unwrap();
    let s = tmp.path().join("S");
    std::fs::create_dir_all(&s).unwrap();
    write(&s, "keep.json", pretty(&document("keep")));
    for name in names {
        write(
            &s,
            &format!("{name}.json"),
            b"{\"schema_version\": 1, \"messages\": [",
        );
    }
    (tmp, s)
}

/// The reproduction: a torn last line in `S/.reconcile/receipts.jsonl` and in the
/// store's `session-unbind-receipts.jsonl`, then a repair with an R4 case. Each log keeps the
/// torn line as its first line and every record the repair appended is a line of its own;
/// the restore of the run finds the recovery's receipt (it sets the recovered document aside)
/// and puts the thread record back, byte for byte.
#[test]
fn a_torn_last_line_of_the_receipt_logs_is_never_glued_onto() {
    let tmp = tempfile::tempdir().unwrap();
    let s = tmp.path().join("S");
    common::copy_tree(
        &common::fixtures_dir().join("sessions/r4_dangling_binding/store"),
        &s,
    );
    let thread = s.join("host/runtime/threads/th-gone.json");
    let before = std::fs::read(&thread).unwrap();
    let receipts = s.join(".reconcile/receipts.jsonl");
    let unbind = s.join("host/runtime/session-unbind-receipts.jsonl");
    for log in [&receipts, &unbind] {
        std::fs::create_dir_all(log.parent().unwrap()).unwrap();
        std::fs::write(log, TORN).unwrap();
    }

    let repair = doctor(&s, NOW, &["--repair-sessions"]);
    assert_eq!(repair.code, Some(0), "{}", repair.said());
    let run = repair.json()["run"].as_str().unwrap().to_owned();
    for log in [&receipts, &unbind] {
        assert_eq!(
            lines(log)[0],
            TORN,
            "{}: the torn line stays",
            log.display()
        );
        let records = rest_are_records(log);
        assert!(
            records.iter().all(|r| r["run"] == run.as_str()),
            "{}: {records:#?}",
            log.display()
        );
    }
    assert_eq!(rest_are_records(&receipts).len(), 2, "R4 and R3");
    assert_eq!(rest_are_records(&unbind)[0]["action"], "thread_unbound");

    let restore = doctor(&s, NOW, &["--restore", &run]);
    assert_eq!(restore.code, Some(0), "{}", restore.said());
    let report = restore.json();
    assert_eq!(
        report["summary"]["documents_set_aside"], 1,
        "the recovery's receipt is read: {report:#}"
    );
    assert_eq!(std::fs::read(&thread).unwrap(), before);
    let errors = report["summary"]["errors"].to_string();
    assert!(
        errors.contains("line 1 of") && errors.contains("receipts.jsonl is a record cut short"),
        "the torn line is named: {errors}"
    );
}

/// A torn line inside one run's manifest (written between its first and second line, as a
/// writer that died there leaves one): the second set-aside's line is a line of its own, so
/// `sessions list` shows both items and names the torn line, the restore puts both back (not a
/// partial restore: the torn line names nothing moved) and names it, and a later purge takes
/// the run whole, naming it too.
#[test]
fn a_torn_manifest_line_is_read_past_by_list_restore_and_purge() {
    let (_tmp, s) = store_with_torn(&["torn1", "torn2"]);
    let trace = {
        let (_t, copy) = store_with_torn(&["torn1", "torn2"]);
        common::traced_mutations(&copy, NOW)
    };
    let appends: Vec<u64> = trace
        .iter()
        .filter(|(_, d)| d.starts_with("append .set-aside/") && d.ends_with("MANIFEST.jsonl"))
        .map(|(n, _)| *n)
        .collect();
    assert_eq!(appends.len(), 2, "{trace:#?}");
    // The mutation before the second line's append (the first receipt's sync): the torn line is
    // there when the second append looks at the manifest.
    let before_second = appends[1] - 1;
    assert!(
        trace
            .iter()
            .any(|(n, d)| *n == before_second && !d.contains("MANIFEST.jsonl")),
        "{trace:#?}"
    );
    let repair = Doctor::new()
        .args(["--repair-sessions", "--json"])
        .sessions_dir(&s)
        .now(NOW)
        .env("DOCTOR_FAULT_AT", format!("{before_second}:pause"))
        .run_paused(vec![(
            "",
            Box::new(|| {
                let run = &common::set_aside_runs(&s)[0];
                let manifest = s.join(".set-aside").join(run).join("MANIFEST.jsonl");
                let mut bytes = std::fs::read(&manifest).unwrap();
                bytes.extend_from_slice(b"{\"run\":\"x\",\"rule\":\"R1\",\"orig");
                std::fs::write(&manifest, bytes).unwrap();
            }),
        )]);
    assert_eq!(repair.code, Some(0), "{}", repair.said());
    let run = common::set_aside_runs(&s).remove(0);
    let manifest = s.join(".set-aside").join(&run).join("MANIFEST.jsonl");
    assert_eq!(lines(&manifest).len(), 3, "line, torn line, line");
    assert!(!s.join("torn1.json").exists() && !s.join("torn2.json").exists());

    let listed_run = list(&s, &[&run]);
    assert_eq!(listed_run.code, Some(0), "{}", listed_run.said());
    let listed = listed_run.json();
    let items: Vec<(&str, &str)> = listed["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| {
            (
                i["original"].as_str().unwrap(),
                i["state"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        items,
        [("torn1.json", "set_aside"), ("torn2.json", "set_aside")],
        "{listed:#}"
    );
    assert_eq!(listed["refused"], serde_json::json!([]), "{listed:#}");
    let named = |v: &Value| {
        let errors = v.to_string();
        errors.contains("line 2 of") && errors.contains("MANIFEST.jsonl is a record cut short")
    };
    assert!(named(&listed["errors"]), "{listed:#}");
    let overview = list(&s, &[]);
    assert_eq!(overview.code, Some(0), "{}", overview.said());
    assert_eq!(
        overview.json()["runs"][0]["items"],
        2,
        "{}",
        overview.stdout
    );
    assert!(named(&overview.json()["errors"]), "{}", overview.stdout);

    let restore = doctor(&s, NOW, &["--restore", &run]);
    assert_eq!(restore.code, Some(0), "{}", restore.said());
    assert_eq!(restore.json()["summary"]["items_restored"], 2);
    assert!(
        named(&restore.json()["summary"]["errors"]),
        "{}",
        restore.stdout
    );
    assert!(s.join("torn1.json").exists() && s.join("torn2.json").exists());

    let purge = doctor(&s, LATER, &["--purge-set-aside", "--older-than", "1d"]);
    assert_eq!(purge.code, Some(0), "{}", purge.said());
    assert_eq!(
        purge.json()["summary"]["runs_purged"],
        1,
        "{}",
        purge.stdout
    );
    assert!(
        named(&purge.json()["summary"]["errors"]),
        "{}",
        purge.stdout
    );
    assert!(common::set_aside_runs(&s).is_empty());
}

/// A real short write: under a file size limit (`RLIMIT_FSIZE`, `SIGXFSZ` ignored) the kernel
/// writes the first bytes of the manifest line and fails the rest with `EFBIG`. The set-aside
/// is a failed action and its item is not moved; the receipt cut short the same way fails the
/// run (exit 1). The next run (no limit) terminates the torn receipt before its own, sets the
/// item aside in its own run, and the first run's torn manifest line is named by list,
/// restore and purge, never taken for an item.
#[test]
#[cfg(target_os = "linux")] // `prlimit --fsize`
fn a_manifest_line_cut_short_by_efbig_moves_nothing_and_is_not_glued_onto() {
    const LIMIT: u64 = 100;
    let (_tmp, s) = store_with_torn(&["torn"]);
    let cut = Doctor::new()
        .args(["--repair-sessions", "--json"])
        .sessions_dir(&s)
        .now(NOW)
        .file_size_limit(LIMIT)
        .run();
    assert_eq!(cut.code, Some(1), "{}", cut.said());
    assert!(s.join("torn.json").exists(), "not moved: {}", cut.said());
    let first = common::set_aside_runs(&s).remove(0);
    let manifest = s.join(".set-aside").join(&first).join("MANIFEST.jsonl");
    let torn_line = std::fs::read(&manifest).unwrap();
    assert_eq!(torn_line.len() as u64, LIMIT, "a real short write");
    assert!(!torn_line.contains(&b'\n'));
    let receipts = s.join(".reconcile/receipts.jsonl");
    assert_eq!(std::fs::metadata(&receipts).unwrap().len(), LIMIT);
    let entries: Vec<_> = std::fs::read_dir(s.join(".set-aside").join(&first))
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(entries, ["MANIFEST.jsonl"], "nothing moved into the run");

    let repair = doctor(&s, NOW, &["--repair-sessions"]);
    assert_eq!(repair.code, Some(0), "{}", repair.said());
    let second = repair.json()["run"].as_str().unwrap().to_owned();
    assert!(!s.join("torn.json").exists());
    let records = rest_are_records(&receipts);
    assert!(
        records
            .iter()
            .any(|r| r["run"] == second.as_str() && r["outcome"] == "applied"),
        "{records:#?}"
    );
    assert_eq!(lines(&manifest), [torn_line], "the torn line stays");

    let named = |v: &Value| {
        let errors = v.to_string();
        errors.contains(&format!("{first}/MANIFEST.jsonl is a record cut short"))
    };
    let listed_run = list(&s, &[&first]);
    assert_eq!(listed_run.code, Some(0), "{}", listed_run.said());
    assert_eq!(
        listed_run.json()["items"],
        serde_json::json!([]),
        "{}",
        listed_run.stdout
    );
    assert!(named(&listed_run.json()["errors"]), "{}", listed_run.stdout);
    let restore = doctor(&s, NOW, &["--restore", &first]);
    assert_eq!(
        restore.code,
        Some(0),
        "nothing to restore, nothing refused: {}",
        restore.said()
    );
    assert!(
        named(&restore.json()["summary"]["errors"]),
        "{}",
        restore.stdout
    );
    let restore = doctor(&s, NOW, &["--restore", &second]);
    assert_eq!(restore.code, Some(0), "{}", restore.said());
    assert!(s.join("torn.json").exists());

    let purge = doctor(&s, LATER, &["--purge-set-aside", "--older-than", "1d"]);
    assert_eq!(purge.code, Some(0), "{}", purge.said());
    assert_eq!(
        purge.json()["summary"]["runs_purged"],
        2,
        "{}",
        purge.stdout
    );
    assert!(
        named(&purge.json()["summary"]["errors"]),
        "{}",
        purge.stdout
    );
}

/// The manifest append fails outright (an injected `EIO` on it, `DOCTOR_FAULT_AT=N:fail`):
/// the set-aside is a failed action, receipted as such, and its item stays where it was; the
/// next run sets it aside.
#[test]
fn a_failed_manifest_append_moves_nothing() {
    let (_tmp, s) = store_with_torn(&["torn"]);
    let trace = {
        let (_t, copy) = store_with_torn(&["torn"]);
        common::traced_mutations(&copy, NOW)
    };
    let (n, _) = trace
        .iter()
        .find(|(_, d)| d.starts_with("append .set-aside/"))
        .unwrap_or_else(|| panic!("no manifest append: {trace:#?}"));
    let out = Doctor::new()
        .args(["--repair-sessions", "--json"])
        .sessions_dir(&s)
        .now(NOW)
        .env("DOCTOR_FAULT_AT", format!("{n}:fail"))
        .run();
    assert_eq!(out.code, Some(1), "{}", out.said());
    assert_eq!(
        out.json()["outcomes"][0]["outcome"],
        "failed",
        "{}",
        out.stdout
    );
    assert!(s.join("torn.json").exists(), "not moved");
    let run = common::set_aside_runs(&s).remove(0);
    assert!(!s.join(".set-aside").join(&run).join("torn.json").exists());
    let again = doctor(&s, NOW, &["--repair-sessions"]);
    assert_eq!(again.code, Some(0), "{}", again.said());
    assert!(!s.join("torn.json").exists());
}

/// A good document renamed over a torn one between R1's check and its move, and the manifest
/// made unwritable in the same instant (`chattr +i`), so the second line, the one recording
/// what was actually moved, cannot be written: the document still goes back to its path (it
/// must never stay in the run under the first line, whose digest is the torn document's and
/// which a restore refuses), the action is skipped saying so, and the run holds nothing.
#[test]
#[cfg(target_os = "linux")] // `chattr +i`
fn a_replaced_item_whose_second_manifest_line_cannot_be_written_is_put_back() {
    let (_tmp, s) = store_with_torn(&["torn"]);
    let good = pretty(&document("torn"));
    let mut guard = None;
    let out = Doctor::new()
        .args(["--repair-sessions", "--json"])
        .sessions_dir(&s)
        .now(NOW)
        .run_paused(vec![(
            "move torn.json",
            Box::new(|| {
                std::fs::write(s.join("incoming.json"), &good).unwrap();
                std::fs::rename(s.join("incoming.json"), s.join("torn.json")).unwrap();
                let manifest = s
                    .join(".set-aside")
                    .join(&common::set_aside_runs(&s)[0])
                    .join("MANIFEST.jsonl");
                crate::purge_records::chattr("+i", &manifest);
                guard = Some(crate::purge_records::Immutable(manifest));
            }),
        )]);
    drop(guard);
    assert_eq!(
        std::fs::read(s.join("torn.json")).unwrap(),
        good,
        "put back: {}",
        out.said()
    );
    let run = common::set_aside_runs(&s).remove(0);
    let manifest = s.join(".set-aside").join(&run).join("MANIFEST.jsonl");
    assert_eq!(lines(&manifest).len(), 1, "the second line was not written");
    assert!(!s.join(".set-aside").join(&run).join("torn.json").exists());
    let report = out.json();
    assert_eq!(
        report["plan"]["actions"][0]["path"], "torn.json",
        "{report:#}"
    );
    let outcome = &report["outcomes"][0];
    assert_eq!(outcome["outcome"], "skipped", "{outcome:#}");
    let why = outcome["why"].as_str().unwrap();
    assert!(
        why.contains("put back") && why.contains("could not be written"),
        "{why}"
    );
}
