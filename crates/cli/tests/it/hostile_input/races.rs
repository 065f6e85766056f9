//! c50-c55, c64-c66, c69, c92. Races, made deterministic by the pause hook (`DOCTOR_PAUSE_BEFORE`):
//! the real binary stops right before the named mutation, the test changes the store inside
//! that window (a document saved, a file created, a store or a document swapped, a lock taken,
//! a directory at a temporary file's name), then lets it go on.

use super::*;

/// Runs the doctor binary with `args`, pausing before the first mutation described by
/// `pause`; `during` runs inside the window. Returns the exit code, stdout and stderr.
fn paused(args: &[&str], pause: &str, during: impl FnOnce()) -> (Option<i32>, String, String) {
    paused_steps(args, &[pause], vec![Box::new(during)])
}

/// [`paused`] with several windows: one pause before the first mutation matching each of
/// `pauses`, and `during[i]` runs inside the i-th window met.
fn paused_steps<'a>(
    args: &[&'a str],
    pauses: &[&'a str],
    during: Vec<Box<dyn FnOnce() + 'a>>,
) -> (Option<i32>, String, String) {
    let run = Doctor::new()
        .args(args)
        .now(NOW)
        .run_paused(pauses.iter().copied().zip(during).collect());
    (run.code, run.stdout, run.stderr)
}

/// A document saved at `S/<tid>.json` after R3 checked that the id is free, just before the
/// recovered document is renamed into place: it is never replaced (`RENAME_NOREPLACE`); the
/// recovery is skipped as "document id taken", the thread is left unbound.
#[test]
fn c50_a_document_saved_during_a_recovery_is_never_replaced() {
    let c = Case::new();
    store_with_thread(&c.s, "o/runtime", "th-o", None, 1);
    let record = std::fs::read(c.s.join("o/runtime/threads/th-o.json")).unwrap();
    let s = c.s.to_string_lossy().into_owned();
    let (code, stdout, stderr) = paused(
        &["--repair-sessions", "--json", "--sessions-dir", &s],
        "create in place th-o.json",
        || std::fs::write(c.s.join("th-o.json"), b"theirs\n").unwrap(),
    );
    assert_eq!(code, Some(0), "{stderr}");
    let report: Value = serde_json::from_str(&stdout).unwrap();
    let o = outcome_in(&report, "o/runtime/threads/th-o.json");
    assert_eq!(o["outcome"], "skipped", "{o}");
    assert_eq!(o["why"], "document id taken", "{o}");
    assert_eq!(std::fs::read(c.s.join("th-o.json")).unwrap(), b"theirs\n");
    assert_eq!(
        std::fs::read(c.s.join("o/runtime/threads/th-o.json")).unwrap(),
        record,
        "the thread stays unbound"
    );
}

/// A file created at a restore's original path after the "not occupied" check, just before
/// the rename: it is never replaced; the item is skipped and stays in the set-aside run.
#[test]
fn c51_a_file_created_during_a_restore_is_never_replaced() {
    let c = Case::new();
    write(&c.s, "torn.json", b"{\"torn\":");
    let s = c.s.to_string_lossy().into_owned();
    let repaired = lib(&c.s, false).unwrap();
    let run = repaired.run.clone();
    let (code, stdout, stderr) = paused(
        &[
            "--restore",
            &run,
            "--item",
            "torn.json",
            "--json",
            "--sessions-dir",
            &s,
        ],
        &format!("move .set-aside/{run}/torn.json"),
        || std::fs::write(c.s.join("torn.json"), b"theirs\n").unwrap(),
    );
    assert_eq!(
        code,
        Some(1),
        "a restore that could not put an item back fails: {stderr}"
    );
    let report: Value = serde_json::from_str(&stdout).unwrap();
    let o = outcome_in(&report, "torn.json");
    assert_eq!(o["outcome"], "skipped", "{o}");
    assert_says(o["why"].as_str().unwrap(), "occupied");
    assert_eq!(std::fs::read(c.s.join("torn.json")).unwrap(), b"theirs\n");
    assert_eq!(
        std::fs::read(c.s.join(format!(".set-aside/{run}/torn.json"))).unwrap(),
        b"{\"torn\":"
    );
}

/// While R2 moves an empty store entry by entry, the store directory is swapped for a symlink
/// to another store that stays inside S (a bound one). Nothing of the bound store moves: the
/// moves act on directories opened one component at a time without following links.
#[test]
fn c52_a_store_swapped_for_an_inside_symlink_never_redirects_the_move() {
    let c = Case::new();
    empty_store(&c.s, "e/runtime");
    let bound_before = tree(&c.s.join("keep/runtime"));
    let s = c.s.to_string_lossy().into_owned();
    let (_, stdout, stderr) = paused(
        &["--repair-sessions", "--json", "--sessions-dir", &s],
        "move e/runtime/",
        || {
            std::fs::rename(c.s.join("e/runtime"), c.s.join("e/old")).unwrap();
            std::os::unix::fs::symlink("../keep/runtime", c.s.join("e/runtime")).unwrap();
        },
    );
    let report: Value =
        serde_json::from_str(&stdout).unwrap_or_else(|e| panic!("{e}: {stdout:?} {stderr}"));
    let o = outcome_in(&report, "e/runtime");
    assert_ne!(o["outcome"], "applied", "{o}");
    assert_eq!(
        tree(&c.s.join("keep/runtime")),
        bound_before,
        "the bound store the symlink points at is untouched"
    );
    let set_aside = tree(&c.s.join(".set-aside"));
    assert!(
        !set_aside
            .keys()
            .any(|p| p.to_string_lossy().contains("keep")),
        "nothing of the bound store was set aside: {set_aside:?}"
    );
}

/// Two free stores, each with the temporary file of an interrupted doctor write in its
/// threads directory: the case and the two files' paths.
fn two_interrupted_writes() -> (Case, &'static str, &'static str) {
    let c = Case::new();
    store_with_thread(&c.s, "a/runtime", "th-a", None, 0);
    store_with_thread(&c.s, "b/runtime", "th-b", None, 0);
    let temp_a = "a/runtime/threads/.th-a.json.doctor-tmp-9999999-1";
    let temp_b = "b/runtime/threads/.th-b.json.doctor-tmp-9999999-1";
    write(&c.s, temp_a, "half");
    write(&c.s, temp_b, "half");
    (c, temp_a, temp_b)
}

/// Two temporary files of interrupted doctor writes, in two free stores: the dry run lists
/// both. While the real run sets the first aside, a host takes the second store's owner lock:
/// the second is left and its skip receipted, never moved under a live host, never silently.
#[test]
fn c53_an_interrupted_write_whose_store_became_live_is_skipped_with_a_receipt() {
    let (c, temp_a, temp_b) = two_interrupted_writes();
    let s = c.s.to_string_lossy().into_owned();
    let mut holder = None;
    let (code, stdout, stderr) = paused(
        &["--repair-sessions", "--json", "--sessions-dir", &s],
        &format!("move {temp_a}"),
        || {
            holder = Some(common::Holder::spawn(&[c
                .s
                .join("b/runtime/runtime-process.owner.lock")]))
        },
    );
    assert_eq!(code, Some(0), "{stderr}");
    let report: Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(report["interrupted_writes"], json!([temp_a]), "{report:#}");
    assert!(!c.s.join(temp_a).exists());
    let run = report["run"].as_str().unwrap();
    assert!(
        c.s.join(".set-aside").join(run).join(temp_a).is_file(),
        "set aside, never deleted"
    );
    assert!(c.s.join(temp_b).exists(), "never moved under a live host");
    let receipts = std::fs::read_to_string(c.s.join(".reconcile/receipts.jsonl")).unwrap();
    let skip = receipts
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .find(|r| r["path"] == temp_b)
        .unwrap_or_else(|| panic!("no receipt for {temp_b}: {receipts}"));
    assert_eq!(skip["outcome"], "skipped", "{skip}");
    assert_says(skip["why"].as_str().unwrap(), "in use");
    drop(holder);
}

/// A good document renamed over a torn one in the instant between R1's check and its move: the
/// move takes the good document. It is verified where it landed, a second manifest line records
/// what was moved, and it is put back at once; the action is skipped as changed since planned.
/// The run still matches its manifest (purge accepts it) and the next run plans R1 no more.
#[test]
fn c54_a_good_document_renamed_in_during_a_set_aside_is_put_back() {
    let c = Case::new();
    write(&c.s, "torn.json", b"{\"torn\":");
    let good = pretty(&stores::document("torn"));
    let s = c.s.to_string_lossy().into_owned();
    let (code, stdout, stderr) = paused(
        &["--repair-sessions", "--json", "--sessions-dir", &s],
        "move torn.json",
        || {
            std::fs::write(c.s.join("incoming.json"), &good).unwrap();
            std::fs::rename(c.s.join("incoming.json"), c.s.join("torn.json")).unwrap();
        },
    );
    assert_eq!(code, Some(0), "{stderr}");
    let report: Value = serde_json::from_str(&stdout).unwrap();
    let o = outcome_in(&report, "torn.json");
    assert_eq!(o["outcome"], "skipped", "{o}");
    assert_says(
        o["why"].as_str().unwrap(),
        "replaced between the check and the move",
    );
    assert_eq!(
        std::fs::read(c.s.join("torn.json")).unwrap(),
        good,
        "put back"
    );
    let run = report["run"].as_str().unwrap();
    let manifest =
        std::fs::read_to_string(c.s.join(format!(".set-aside/{run}/MANIFEST.jsonl"))).unwrap();
    let lines: Vec<Value> = manifest
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 2, "{manifest}");
    assert_eq!(lines[1]["sha256"], common::sha256_hex(&good), "{manifest}");
    assert_says(
        lines[1]["reason"].as_str().unwrap(),
        "records what was moved",
    );
    let purge = purge_dry_run(&c.s);
    assert_eq!(
        purge["skipped"],
        json!([]),
        "the run matches its manifest: {purge:#}"
    );
    let again = lib(&c.s, true).unwrap();
    assert!(
        again.plan.actions.iter().all(|a| a.path != "torn.json"),
        "{:?}",
        again.plan.actions
    );
}

/// The same swap, and then a file created at `torn.json` before the good document could go
/// back: it stays in the run, under a manifest line that records what was moved, so a restore
/// of that item is verified against the right digest (and refused only because the path is
/// occupied).
#[test]
fn c55_a_replaced_item_that_cannot_go_back_is_recorded_as_moved() {
    let c = Case::new();
    write(&c.s, "torn.json", b"{\"torn\":");
    let good = pretty(&stores::document("torn"));
    let s = c.s.to_string_lossy().into_owned();
    let (code, stdout, stderr) = paused_steps(
        &["--repair-sessions", "--json", "--sessions-dir", &s],
        &["move torn.json", "move .set-aside/"],
        vec![
            Box::new(|| {
                std::fs::write(c.s.join("incoming.json"), &good).unwrap();
                std::fs::rename(c.s.join("incoming.json"), c.s.join("torn.json")).unwrap();
            }),
            Box::new(|| std::fs::write(c.s.join("torn.json"), b"theirs\n").unwrap()),
        ],
    );
    assert_eq!(code, Some(0), "{stderr}");
    let report: Value = serde_json::from_str(&stdout).unwrap();
    let o = outcome_in(&report, "torn.json");
    assert_eq!(o["outcome"], "applied", "{o}");
    let run = report["run"].as_str().unwrap().to_owned();
    assert_eq!(std::fs::read(c.s.join("torn.json")).unwrap(), b"theirs\n");
    assert_eq!(
        std::fs::read(c.s.join(format!(".set-aside/{run}/torn.json"))).unwrap(),
        good
    );
    let receipts = std::fs::read_to_string(c.s.join(".reconcile/receipts.jsonl")).unwrap();
    assert_says(&receipts, "could not be put back");
    std::fs::remove_file(c.s.join("torn.json")).unwrap();
    let restore = Doctor::new()
        .args(["--restore", &run, "--json", "--sessions-dir", &s])
        .now(NOW)
        .run();
    assert_eq!(restore.code, Some(0));
    assert_eq!(
        std::fs::read(c.s.join("torn.json")).unwrap(),
        good,
        "restored"
    );
}

/// `--purge-set-aside --older-than 0s --dry-run --json` in 2099: every run is old enough, so
/// only the runs that do not match their manifest are left, under `skipped`.
fn purge_dry_run(s: &Path) -> Value {
    let out = Doctor::new()
        .args([
            "--purge-set-aside",
            "--older-than",
            "0s",
            "--dry-run",
            "--json",
        ])
        .sessions_dir(s)
        .now("2099-01-01T00:00:00Z")
        .run();
    serde_json::from_str(&out.stdout)
        .unwrap_or_else(|e| panic!("the purge dry run printed no report ({e}): {}", out.said()))
}

/// The receipt of the action on `path` in `S/.reconcile/receipts.jsonl`.
fn receipt_of(s: &Path, path: &str) -> Value {
    let all = receipts(s);
    all.iter()
        .find(|r| r["path"] == path)
        .cloned()
        .unwrap_or_else(|| panic!("no receipt for {path}: {all:#?}"))
}

/// A good document renamed over `torn.json` between R1's check and its move, and the
/// directory sync right after the move fails (an injected EIO). The rename happened: the
/// set-aside judges by what is on disk, finds it moved something other than what it checked,
/// and puts the good document back, its receipt naming `put_back_from`. Before, the failed
/// sync failed the action with the good document left in the run. The run is taken back, not
/// partial: a purge skips nothing, even after the app saved `torn.json` again.
#[test]
fn c64_a_set_aside_whose_sync_fails_after_the_move_still_puts_back_a_swapped_document() {
    let trace = common::traced_mutations(&torn_case().s, NOW);
    let at = trace
        .iter()
        .position(|(_, d)| d.starts_with("move torn.json"))
        .unwrap_or_else(|| panic!("no move of torn.json: {trace:#?}"));
    let (n, next) = trace
        .get(at + 1)
        .unwrap_or_else(|| panic!("nothing after the move: {trace:#?}"));
    assert!(
        next.starts_with("sync directory .set-aside/"),
        "the mutation after the move: {next}: {trace:#?}"
    );

    let c = torn_case();
    let good = pretty(&stores::document("torn"));
    let run = repair_bin(&c.s, false)
        .env("DOCTOR_FAULT_AT", format!("{n}:fail"))
        .run_paused(vec![(
            "move torn.json",
            Box::new(|| {
                std::fs::write(c.s.join("incoming.json"), &good).unwrap();
                std::fs::rename(c.s.join("incoming.json"), c.s.join("torn.json")).unwrap();
            }),
        )]);
    let said = format!("stdout:\n{}\nstderr:\n{}", run.stdout, run.stderr);
    assert_says(&run.stderr, &format!("failed mutation {n} (sync directory"));
    assert!(run.code.is_some(), "{said}");
    assert_eq!(
        std::fs::read(c.s.join("torn.json"))
            .ok()
            .map(|b| String::from_utf8_lossy(&b).into_owned()),
        Some(String::from_utf8_lossy(&good).into_owned()),
        "the good document is back at torn.json: {said}"
    );
    let receipt = receipt_of(&c.s, "torn.json");
    assert!(
        receipt["put_back_from"].is_string(),
        "the receipt names what was put back: {receipt:#}"
    );
    let purge = purge_dry_run(&c.s);
    assert_eq!(
        purge["skipped"],
        json!([]),
        "the run counts the item as taken back: {purge:#}"
    );
    // The app saves torn.json again: the run still does not claim it.
    write(&c.s, "torn.json", [&good[..], b"\n"].concat());
    let purge = purge_dry_run(&c.s);
    assert_eq!(
        purge["skipped"],
        json!([]),
        "torn.json changed at its path; the run is still not partial: {purge:#}"
    );
}

/// A symlink (to `keep.json`) renamed over `torn.json` between R1's check and its move: the
/// moved symlink cannot be digested, so it is not what was checked; it goes back to
/// `torn.json`, still a symlink, and the action is skipped saying so. Before, it was left in
/// the run as if it were the torn document.
#[test]
fn c65_a_symlink_renamed_in_during_a_set_aside_is_put_back() {
    let c = torn_case();
    let s = c.s.to_string_lossy().into_owned();
    let keep = std::fs::read(c.s.join("keep.json")).unwrap();
    let (code, stdout, stderr) = paused(
        &["--repair-sessions", "--json", "--sessions-dir", &s],
        "move torn.json",
        || {
            std::os::unix::fs::symlink("keep.json", c.s.join("incoming.json")).unwrap();
            std::fs::rename(c.s.join("incoming.json"), c.s.join("torn.json")).unwrap();
        },
    );
    assert_eq!(code, Some(0), "{stderr}");
    let report: Value = serde_json::from_str(&stdout).unwrap();
    let torn = std::fs::symlink_metadata(c.s.join("torn.json"));
    assert!(
        torn.as_ref().is_ok_and(|m| m.file_type().is_symlink()),
        "the symlink is back at torn.json: {torn:?}: {report:#}"
    );
    assert_eq!(
        std::fs::read_link(c.s.join("torn.json")).unwrap(),
        Path::new("keep.json")
    );
    assert_eq!(std::fs::read(c.s.join("keep.json")).unwrap(), keep);
    let o = outcome_in(&report, "torn.json");
    assert_eq!(o["outcome"], "skipped", "{o}");
    assert_says(o["why"].as_str().unwrap_or_default(), "put back");
    let purge = purge_dry_run(&c.s);
    assert_eq!(purge["skipped"], json!([]), "{purge:#}");
}

/// Two temporary files of interrupted doctor writes (as in c53). While the real run sets the
/// first aside, the second is replaced by a directory holding a file: its digest no longer
/// matches, so the directory and its file stay where they are, and its receipt is not
/// "applied" (nothing is ever deleted).
#[test]
fn c66_a_directory_swapped_in_at_a_temporary_files_name_is_never_deleted() {
    let (c, temp_a, temp_b) = two_interrupted_writes();
    let s = c.s.to_string_lossy().into_owned();
    let (code, stdout, stderr) = paused(
        &["--repair-sessions", "--json", "--sessions-dir", &s],
        &format!("move {temp_a}"),
        || {
            std::fs::remove_file(c.s.join(temp_b)).unwrap();
            std::fs::create_dir(c.s.join(temp_b)).unwrap();
            std::fs::write(c.s.join(temp_b).join("precious.txt"), b"precious\n").unwrap();
        },
    );
    let said = format!("stdout:\n{stdout}\nstderr:\n{stderr}");
    assert!(code.is_some(), "{said}");
    assert!(
        c.s.join(temp_b).is_dir(),
        "the directory at {temp_b} was deleted: {said}"
    );
    assert_eq!(
        std::fs::read(c.s.join(temp_b).join("precious.txt")).ok(),
        Some(b"precious\n".to_vec()),
        "{said}"
    );
    assert!(!c.s.join(temp_a).exists(), "{said}");
    let receipt = receipt_of(&c.s, temp_b);
    assert_ne!(receipt["outcome"], "applied", "{receipt:#}");
}

/// R4 unbinds `th-gone` (bound to the missing session `gone`) in the bound store `b/runtime`,
/// keeping its previous version at `.set-aside/<run>/b/runtime/threads/th-gone.json` first.
/// Something else is written at that path right before the copy is made: the copy never
/// replaces it (before, a rename over it did), and without its previous version kept the
/// record is not rewritten.
#[test]
fn c69_a_previous_version_copy_never_replaces_what_is_at_its_path() {
    let c = Case::new();
    write(
        &c.s,
        "b.json",
        pretty(&bound_document(&c.s, "b", "b/runtime")),
    );
    store_with_thread(&c.s, "b/runtime", "th-gone", Some("gone"), 1);
    let record_rel = "b/runtime/threads/th-gone.json";
    let record = std::fs::read(c.s.join(record_rel)).unwrap();
    let dry = lib(&c.s, true).unwrap();
    assert!(
        dry.plan
            .actions
            .iter()
            .any(|a| a.path == record_rel && a.rule == "R4"),
        "{:?}",
        dry.plan.actions
    );
    let s = c.s.to_string_lossy().into_owned();
    let mut previous = None;
    // The temporary file of the copy is created next to the previous version's path (the
    // rename that follows is the step that must never replace).
    let (code, stdout, stderr) = paused(
        &["--repair-sessions", "--json", "--sessions-dir", &s],
        "create .set-aside/",
        || {
            let runs: Vec<PathBuf> = std::fs::read_dir(c.s.join(".set-aside"))
                .unwrap()
                .map(|e| e.unwrap().path())
                .filter(|p| p.is_dir())
                .collect();
            assert_eq!(runs.len(), 1, "{runs:?}");
            let at = runs[0].join(record_rel);
            std::fs::create_dir_all(at.parent().unwrap()).unwrap();
            std::fs::write(&at, b"OTHER").unwrap();
            previous = Some(at);
        },
    );
    let said = format!("stdout:\n{stdout}\nstderr:\n{stderr}");
    let previous = previous.unwrap();
    assert!(
        stderr.contains(&format!(
            "{}/.th-gone.json.doctor-tmp",
            previous
                .strip_prefix(&c.s)
                .unwrap()
                .parent()
                .unwrap()
                .display()
        )),
        "paused before the copy's temporary file: {said}"
    );
    assert!(code.is_some(), "{said}");
    assert_eq!(
        std::fs::read(&previous)
            .ok()
            .map(|b| String::from_utf8_lossy(&b).into_owned()),
        Some("OTHER".to_owned()),
        "what was at the previous version's path was replaced: {said}"
    );
    assert!(
        std::fs::read(c.s.join(record_rel)).unwrap() == record,
        "the record was rewritten without its previous version kept: {said}"
    );
    let report: Value = serde_json::from_str(&stdout).unwrap_or_else(|e| panic!("{e}: {said}"));
    let o = outcome_in(&report, record_rel);
    assert!(
        o["outcome"] == "failed" || o["outcome"] == "skipped",
        "{o}: {said}"
    );
}

/// c92. A restore puts back two temporary files: one beside a document in S, one in the
/// `threads/` of a store. While the first goes back, the store is taken away (as a repair that
/// sets it aside would): the second is skipped, never put back by recreating `threads/` at the
/// store's path (the doctor never creates missing directories in a store), and stays in the run.
#[test]
fn c92_a_store_gone_during_a_restore_gets_no_skeleton_for_a_temporary_file() {
    let c = Case::new();
    let beside = ".keep.json.doctor-tmp-9999999-0";
    let in_store = "t/runtime/threads/.th-t.json.doctor-tmp-9999999-1";
    store_with_thread(&c.s, "t/runtime", "th-t", Some("keep"), 1);
    write(&c.s, beside, b"a document");
    write(&c.s, in_store, b"a thread record");
    let repaired = lib(&c.s, false).unwrap();
    assert_eq!(repaired.interrupted_writes, [beside, in_store]);
    let run = repaired.run.clone();
    let elsewhere = tempfile::tempdir().unwrap();
    let s = c.s.to_string_lossy().into_owned();
    let (code, stdout, stderr) = paused(
        &["--restore", &run, "--json", "--sessions-dir", &s],
        &format!("move .set-aside/{run}/{beside}"),
        || std::fs::rename(c.s.join("t"), elsewhere.path().join("t")).unwrap(),
    );
    assert_eq!(code, Some(1), "an item could not go back: {stderr}");
    let report: Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(outcome_in(&report, beside)["outcome"], "applied");
    let o = outcome_in(&report, in_store);
    assert_eq!(o["outcome"], "skipped", "{o}");
    assert_says(o["why"].as_str().unwrap(), "t/runtime/threads is gone");
    assert!(!c.s.join("t").exists(), "no store skeleton");
    assert_eq!(
        std::fs::read(c.s.join(format!(".set-aside/{run}/{in_store}"))).unwrap(),
        b"a thread record"
    );
}
