//! Store moves that are cut short or raced (issue 21): a move killed midway by a real signal at
//! a real `renameat2` (`strace` fault injection) is finished into the run that began it, and a
//! restore of that run gives the store back whole; a store without its owner lock file is
//! locked for its move (a second real process that tries to open it mid-move is refused); a
//! session whose item R1 or R5 moves has its live lease held across the move (a host that takes
//! the lease inside the window between the probe and the move is refused).

use std::io::{BufRead, BufReader};
use std::os::unix::fs::PermissionsExt;
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use crate::common::{self, demo_with_old_artifacts, tree, Doctor};

const NOW: &str = "2026-11-29T12:00:00Z";
const STORE: &str = "epsilon/runtime";

fn doctor(s: &Path) -> Doctor {
    Doctor::new().sessions_dir(s).now(NOW)
}

/// `strace` must be there: the test fails, never skips, without it (`.ci/run` installs it).
fn strace() -> &'static str {
    let ok = Command::new("strace")
        .arg("-V")
        .stdout(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    assert!(
        ok,
        "strace is needed for this test (apt-get install strace; .ci/run installs it)"
    );
    "strace"
}

/// The demo store, its R2 store `epsilon/runtime` grown to 11 entries.
fn demo_with_a_big_store() -> (tempfile::TempDir, PathBuf) {
    let (tmp, s) = demo_with_old_artifacts();
    for i in 0..7 {
        std::fs::write(
            s.join(STORE).join(format!("entry-{i}.json")),
            format!("{{\"n\":{i}}}"),
        )
        .unwrap();
    }
    assert_eq!(std::fs::read_dir(s.join(STORE)).unwrap().count(), 11);
    (tmp, s)
}

/// A repair of R2 only, killed by SIGKILL at its 9th `renameat2` (the 9th entry of the store's
/// move), is split between the store's path and its run; the next run finishes the move into
/// that same run (a dry run plans exactly what it applies), no second run gets any of it, and a
/// restore of each run gives the store back whole, `owner.json`, `state.json`, `events.lock`
/// and the lock file included.
#[test]
fn a_store_move_killed_midway_is_finished_into_the_run_that_began_it() {
    let strace = strace();
    let (_tmp, s) = demo_with_a_big_store();
    let before = tree(&s.join(STORE));
    let status = Command::new(strace)
        .args(["-f", "-qq", "-o", "/dev/null"])
        .arg("-e")
        .arg("inject=renameat2:signal=KILL:when=9")
        .arg(env!("CARGO_BIN_EXE_doctor"))
        .env("XDG_CACHE_HOME", crate::common::test_cache_home())
        .args(["sessions", "repair", "--select", "R2", "--sessions-dir"])
        .arg(&s)
        .env("DOCTOR_NOW", NOW)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .unwrap();
    assert_eq!(
        status.signal(),
        Some(9),
        "killed at the 9th rename: {status}"
    );
    let first = common::set_aside_runs(&s);
    assert_eq!(first.len(), 1, "{first:?}");
    let moved_to = s.join(".set-aside").join(&first[0]).join(STORE);
    let there = std::fs::read_dir(&moved_to).unwrap().count();
    let left = std::fs::read_dir(s.join(STORE)).unwrap().count();
    assert_eq!(
        (there, left),
        (8, 3),
        "split 8 moved, 3 left (the lock file last)"
    );
    assert!(s.join(STORE).join("runtime-process.owner.lock").exists());

    let r2 = || {
        Doctor::new()
            .now(NOW)
            .args(["sessions", "repair", "--select", "R2"])
            .sessions_dir(&s)
    };
    let dry = r2().args(["--dry-run", "--json"]).run();
    assert_eq!(dry.code, Some(0), "{}", dry.said());
    let text = r2().arg("--dry-run").run();
    assert!(
        text.stdout.contains(&format!(
            "would finish moving {STORE} into .set-aside/{}/{STORE}",
            first[0]
        )),
        "{}",
        text.said()
    );
    let out = r2().arg("--json").run();
    assert_eq!(out.code, Some(0), "{}", out.said());
    let (dry, real) = (dry.json(), out.json());
    assert_eq!(
        dry["plan"]["actions"], real["plan"]["actions"],
        "a dry run plans what the real run applies"
    );
    let finish = real["plan"]["actions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|a| a["path"] == format!(".set-aside/{}/{STORE}", first[0]))
        .unwrap_or_else(|| panic!("no action finishes the move: {real:#}"));
    assert_eq!(finish["from"], STORE, "{finish}");
    // An action of its own kind, not a restore, in the published shapes.
    assert_eq!(finish["action"], "finish_set_aside", "{finish}");
    crate::schemas::assert_valid("repair-output", &dry);
    crate::schemas::assert_valid("repair-output", &real);
    assert!(
        real["outcomes"]
            .as_array()
            .unwrap()
            .iter()
            .any(|o| o["seq"] == finish["seq"] && o["outcome"] == "applied"),
        "{real:#}"
    );
    // Its own receipt, in the same run's terms.
    let receipts = std::fs::read_to_string(s.join(".reconcile/receipts.jsonl")).unwrap();
    assert!(
        receipts
            .lines()
            .any(|l| l.contains("\"outcome\":\"applied\"")
                && l.contains("\"action\":\"finish_set_aside\"")
                && l.contains(&format!("\"path\":\".set-aside/{}/{STORE}\"", first[0]))),
        "{receipts}"
    );
    for line in receipts.lines() {
        crate::schemas::assert_valid("receipt-line", &serde_json::from_str(line).unwrap());
    }
    assert!(
        !s.join(STORE).exists(),
        "nothing of the store is left at its path"
    );
    assert_eq!(
        tree(&moved_to),
        before,
        "the store is whole in the run that began it"
    );
    for run in common::set_aside_runs(&s)
        .iter()
        .filter(|r| **r != first[0])
    {
        let other = tree(&s.join(".set-aside").join(run));
        assert!(
            other.keys().all(|p| !p.starts_with(STORE)),
            "run {run} got part of the store: {other:?}"
        );
    }
    // Restore each run, newest first: the store comes back whole.
    for run in common::set_aside_runs(&s).iter().rev() {
        if !s
            .join(".set-aside")
            .join(run)
            .join("MANIFEST.jsonl")
            .exists()
        {
            continue;
        }
        let out = doctor(&s).args(["--restore", run, "--json"]).run();
        assert_eq!(out.code, Some(0), "restore {run}: {}", out.said());
    }
    assert_eq!(tree(&s.join(STORE)), before, "restored whole");
}

/// Spawns `hold-lock` on `file`; whether it took the lock (it prints `held`), then releases it.
fn another_process_locks(file: &Path) -> bool {
    let mut child = Command::new(test_support::binary(
        env!("CARGO_BIN_EXE_doctor"),
        "hold-lock",
    ))
    .arg(file)
    .stdin(Stdio::piped())
    .stdout(Stdio::piped())
    .stderr(Stdio::null())
    .spawn()
    .unwrap();
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    drop(child.stdin.take());
    child.wait().unwrap();
    line.trim() == "held"
}

/// A store without `runtime-process.owner.lock` is not moved unlocked: the doctor creates the
/// lock file (0600) and holds it, so a second real process that opens the store mid-move (between
/// two of its entries' renames) is refused; the lock file moves last, and the run restores.
#[test]
fn a_store_without_its_owner_lock_is_locked_for_its_move() {
    let (_tmp, s) = demo_with_old_artifacts();
    let lock = s.join(STORE).join("runtime-process.owner.lock");
    std::fs::remove_file(&lock).unwrap();
    let before = tree(&s.join(STORE));
    let mut took = None;
    let out = doctor(&s)
        .args(["--repair-sessions", "--json"])
        .run_paused(vec![(
            "move epsilon/runtime/",
            Box::new(|| took = Some(another_process_locks(&lock))),
        )]);
    assert_eq!(out.code, Some(0), "{}", out.said());
    assert_eq!(
        took,
        Some(false),
        "a host that opens the store mid-move is refused"
    );
    let run = common::set_aside_runs(&s).pop().unwrap();
    let moved = s.join(".set-aside").join(&run).join(STORE);
    assert!(!s.join(STORE).exists());
    let moved_lock = moved.join("runtime-process.owner.lock");
    assert_eq!(
        std::fs::metadata(&moved_lock).unwrap().permissions().mode() & 0o777,
        0o600
    );
    let mut with_lock = before.clone();
    with_lock.insert(
        PathBuf::from("runtime-process.owner.lock"),
        common::Node::File(Vec::new()),
    );
    assert_eq!(tree(&moved), with_lock, "moved whole, with the lock file");
    let report = out.json();
    let receipt = report["outcomes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|o| {
            report["plan"]["actions"]
                .as_array()
                .unwrap()
                .iter()
                .any(|a| a["seq"] == o["seq"] && a["path"] == STORE)
        })
        .unwrap();
    assert_eq!(receipt["outcome"], "applied", "{receipt}");
    // The manifest line records the store as it moved: the run restores.
    let out = doctor(&s).args(["--restore", &run, "--json"]).run();
    assert_eq!(out.code, Some(0), "{}", out.said());
    assert_eq!(tree(&s.join(STORE)), with_lock);
}

/// R1 (an unreadable document) and R5 (an orphan artifact directory) move an item of a session
/// whose lease file exists but nobody holds: the doctor holds the lease across the move, so a
/// host that takes it inside the window between the probe and the rename is refused instead of
/// finding its item gone.
#[test]
fn a_host_taking_the_lease_between_probe_and_move_is_refused() {
    for (id, item) in [("torn", "torn.json"), ("zeta", "zeta")] {
        let (_tmp, s) = demo_with_old_artifacts();
        let lease = s.join(format!(".late-usage/{id}.live"));
        std::fs::write(&lease, b"").unwrap();
        let mut took = None;
        let pause = format!("move {item}");
        let out = doctor(&s)
            .args(["--repair-sessions", "--json"])
            .run_paused(vec![(
                pause.as_str(),
                Box::new(|| took = Some(another_process_locks(&lease))),
            )]);
        assert_eq!(out.code, Some(0), "{id}: {}", out.said());
        assert_eq!(
            took,
            Some(false),
            "{id}: the lease is held across the move of {item}"
        );
    }
}

/// Kills a repair of R2 only by SIGKILL at its 9th `renameat2` (`strace`): the store is split,
/// 8 entries in the run, 3 (the lock file among them) at its path. The run's id.
fn killed_at_the_ninth_rename(s: &Path) -> String {
    let status = Command::new(strace())
        .args(["-f", "-qq", "-o", "/dev/null"])
        .arg("-e")
        .arg("inject=renameat2:signal=KILL:when=9")
        .arg(env!("CARGO_BIN_EXE_doctor"))
        .env("XDG_CACHE_HOME", crate::common::test_cache_home())
        .args(["sessions", "repair", "--select", "R2", "--sessions-dir"])
        .arg(s)
        .env("DOCTOR_NOW", NOW)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .unwrap();
    assert_eq!(status.signal(), Some(9), "{status}");
    let run = common::set_aside_runs(s).pop().unwrap();
    let moved = s.join(".set-aside").join(&run).join(STORE);
    assert_eq!(std::fs::read_dir(moved).unwrap().count(), 8);
    assert_eq!(std::fs::read_dir(s.join(STORE)).unwrap().count(), 3);
    run
}

/// The actions of a repair report that finish a store move into `run`.
fn finishing_into(report: &serde_json::Value, run: &str) -> Vec<serde_json::Value> {
    report["plan"]["actions"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|a| a["path"] == format!(".set-aside/{run}/{STORE}") && a["from"] == STORE)
        .cloned()
        .collect()
}

/// A split store whose remainder changed after the kill (a file written into it since) is not
/// the store the run's manifest line recorded: neither a dry run nor a real run finishes it into
/// that run, whose half stays as it is (the rules judge what is at the path).
#[test]
fn a_split_store_whose_remainder_changed_is_not_finished_into_its_run() {
    let (_tmp, s) = demo_with_a_big_store();
    let run = killed_at_the_ninth_rename(&s);
    let half = s.join(".set-aside").join(&run).join(STORE);
    let half_before = tree(&half);
    std::fs::write(s.join(STORE).join("written-since.json"), b"{\"n\":99}").unwrap();
    let r2 = || {
        Doctor::new()
            .now(NOW)
            .args(["sessions", "repair", "--select", "R2", "--json"])
            .sessions_dir(&s)
    };
    let dry = r2().arg("--dry-run").run();
    assert!(
        finishing_into(&dry.json(), &run).is_empty(),
        "{}",
        dry.said()
    );
    let real = r2().run();
    assert!(
        finishing_into(&real.json(), &run).is_empty(),
        "{}",
        real.said()
    );
    assert_eq!(tree(&half), half_before, "the run's half is left as it is");
}

/// A store move that fails after entries moved and cannot move them back (every later rename
/// fails, `strace` error injection) leaves its manifest line in force: the entries in the run
/// stay listed, the next run finishes the move into that run, and a restore gives the store
/// back whole.
#[test]
fn a_store_move_that_could_not_move_back_keeps_its_manifest_line() {
    let (_tmp, s) = demo_with_a_big_store();
    let before = tree(&s.join(STORE));
    let out = Command::new(strace())
        .args(["-f", "-qq", "-o", "/dev/null"])
        .arg("-e")
        .arg("inject=renameat2:error=EXDEV:when=9+")
        .arg(env!("CARGO_BIN_EXE_doctor"))
        .env("XDG_CACHE_HOME", crate::common::test_cache_home())
        .args([
            "sessions",
            "repair",
            "--select",
            "R2",
            "--json",
            "--sessions-dir",
        ])
        .arg(&s)
        .env("DOCTOR_NOW", NOW)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    let run = common::set_aside_runs(&s).pop().unwrap();
    let moved = s.join(".set-aside").join(&run).join(STORE);
    assert_eq!(
        std::fs::read_dir(&moved).unwrap().count(),
        8,
        "none moved back"
    );
    let manifest =
        std::fs::read_to_string(s.join(".set-aside").join(&run).join("MANIFEST.jsonl")).unwrap();
    assert!(!manifest.contains("rolled_back"), "{manifest}");

    let rerun = Doctor::new()
        .now(NOW)
        .args(["sessions", "repair", "--select", "R2", "--json"])
        .sessions_dir(&s)
        .run();
    assert_eq!(rerun.code, Some(0), "{}", rerun.said());
    assert_eq!(
        finishing_into(&rerun.json(), &run).len(),
        1,
        "{}",
        rerun.said()
    );
    assert_eq!(
        tree(&moved),
        before,
        "whole in the run that began moving it"
    );
    let restore = doctor(&s).args(["--restore", &run, "--json"]).run();
    assert_eq!(restore.code, Some(0), "{}", restore.said());
    assert_eq!(tree(&s.join(STORE)), before, "restored whole");
}

/// The finish of a split store is planned whatever the selection (it completes the move an
/// earlier run began, before a rule could change the remainder), and named by its rule even
/// when that rule is not selected: `--select R1` plans it as R2 `unbound-empty-store`, in the
/// published shape.
#[test]
fn the_finish_of_a_split_store_is_named_by_its_rule_when_that_rule_is_not_selected() {
    let (_tmp, s) = demo_with_a_big_store();
    let run = killed_at_the_ninth_rename(&s);
    let dry = Doctor::new()
        .now(NOW)
        .args([
            "sessions",
            "repair",
            "--select",
            "R1",
            "--dry-run",
            "--json",
        ])
        .sessions_dir(&s)
        .run();
    assert_eq!(dry.code, Some(0), "{}", dry.said());
    let report = dry.json();
    let finish = finishing_into(&report, &run);
    assert_eq!(finish.len(), 1, "{report:#}");
    assert_eq!(finish[0]["rule"], "R2");
    assert_eq!(finish[0]["rule_name"], "unbound-empty-store");
    crate::schemas::assert_valid("repair-output", &report);
}

/// A saved plan's finish is applied only to a move a run's manifest records: a plan saved while
/// the store was split, applied after the run's manifest stopped naming the store, moves
/// nothing (the executor judges as the planner does).
#[test]
fn a_saved_finish_is_applied_only_to_a_move_its_run_records() {
    let (_tmp, s) = demo_with_a_big_store();
    let run = killed_at_the_ninth_rename(&s);
    let dir = tempfile::tempdir().unwrap();
    let plan = dir.path().join("plan.json");
    let saved = Doctor::new()
        .now(NOW)
        .args([
            "sessions",
            "repair",
            "--select",
            "R2",
            "--dry-run",
            "--plan-out",
        ])
        .arg(&plan)
        .sessions_dir(&s)
        .run();
    assert_eq!(saved.code, Some(0), "{}", saved.said());
    let text = std::fs::read_to_string(&plan).unwrap();
    assert!(text.contains("finish_set_aside"), "{text}");
    std::fs::write(s.join(".set-aside").join(&run).join("MANIFEST.jsonl"), b"").unwrap();
    let (left, half) = (
        tree(&s.join(STORE)),
        tree(&s.join(".set-aside").join(&run).join(STORE)),
    );
    let out = Doctor::new()
        .now(NOW)
        .args(["--json", "--apply-plan"])
        .arg(&plan)
        .run();
    let report = out.json();
    let finish = finishing_into(&report, &run);
    assert_eq!(finish.len(), 1, "{report:#}");
    let outcome = report["outcomes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|o| o["seq"] == finish[0]["seq"])
        .unwrap();
    assert_eq!(outcome["outcome"], "skipped", "{outcome}");
    assert_eq!(tree(&s.join(STORE)), left, "nothing moved");
    assert_eq!(tree(&s.join(".set-aside").join(&run).join(STORE)), half);
}

/// A split store whose run a purge has recorded (its record written, the purge killed before
/// it deleted anything) is not finished into that run: the next purge finishes deleting the
/// run whatever is in it, so a finish would add the store's remainder (its lock file,
/// `owner.json`, ...) to a deletion nobody planned with them. Neither a dry run nor a real run
/// finishes it there, and the remainder stays out of that run.
#[test]
fn a_split_store_is_not_finished_into_a_run_a_purge_has_recorded() {
    use std::os::unix::fs::MetadataExt;
    let (_tmp, s) = demo_with_a_big_store();
    let run = killed_at_the_ninth_rename(&s);
    let dir = s.join(".set-aside").join(&run);
    let meta = std::fs::metadata(&dir).unwrap();
    let pending = s.join(".reconcile/purge-pending");
    std::fs::create_dir_all(&pending).unwrap();
    let record = serde_json::json!({
        "run": "20261129T130000Z-abcdef",
        "root": s.display().to_string(),
        "path": format!(".set-aside/{run}"),
        "dev": meta.dev(),
        "ino": meta.ino(),
        "at": "2026-11-29T13:00:00Z",
    });
    std::fs::write(pending.join(format!("{run}.json")), format!("{record}\n")).unwrap();
    let half_before = tree(&dir.join(STORE));
    let r2 = || {
        Doctor::new()
            .now(NOW)
            .args(["sessions", "repair", "--select", "R2", "--json"])
            .sessions_dir(&s)
    };
    let dry = r2().arg("--dry-run").run();
    assert!(
        finishing_into(&dry.json(), &run).is_empty(),
        "{}",
        dry.said()
    );
    let real = r2().run();
    assert!(
        finishing_into(&real.json(), &run).is_empty(),
        "{}",
        real.said()
    );
    assert_eq!(
        tree(&dir.join(STORE)),
        half_before,
        "nothing is added to a run being purged"
    );
}
