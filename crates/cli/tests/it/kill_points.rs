//! Crash safety at every kill point: a real repair (the `doctor` binary) of a store with every
//! kind of action, owner lock files in its stores and live leases (one held by another
//! process) is stopped with SIGKILL just before and just after each of its filesystem
//! mutations: every create, write, fsync, permission change, rename, append and unlink (the
//! hidden `DOCTOR_FAULT_AT` hook in `fsroot`). After each kill a complete
//! rerun must reach the uninterrupted end state, nothing may be lost, and a further run must
//! plan nothing.
//!
//! Every run works on a fresh copy of the demo store at one and the same path: a recovered
//! document records the store's absolute canonical path and the execution scope derived from
//! it (store-format.md, Version 2), so end states are comparable byte for byte only at the same
//! place.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use crate::common::{
    self, assert_nothing_lost, demo_with_old_artifacts, is_doctor_own, sha256_hex, tree, user_tree,
    Doctor, Kept, Node, Tree,
};

const NOW: &str = "2026-11-29T12:00:00Z";

/// `doctor --sessions-dir <s>` at [`NOW`].
fn doctor(s: &Path) -> Doctor {
    Doctor::new().sessions_dir(s).now(NOW)
}

/// Runs a repair with the fault hook at `spec`; kills it with SIGKILL when it stops there.
/// Returns whether it was killed (false: it finished without reaching the point).
fn repair_killed_at(s: &Path, spec: &str) -> bool {
    killed_at(s, &["--repair-sessions"], spec)
}

/// Runs the doctor with `args` and the fault hook at `spec`; kills it with SIGKILL when it
/// stops there. Returns whether it was killed (false: it finished, successfully).
fn killed_at(s: &Path, args: &[&str], spec: &str) -> bool {
    doctor(s).args(args).killed_at(spec).is_some()
}

/// Why each set-aside run that does not match its manifest is refused by a purge.
fn runs_not_matching_their_manifests(s: &Path) -> Vec<String> {
    let out = doctor(s)
        .args([
            "--purge-set-aside",
            "--older-than",
            "0s",
            "--dry-run",
            "--json",
        ])
        .run();
    assert_eq!(out.code, Some(0), "{}", out.said());
    let v = out.json();
    v["skipped"]
        .as_array()
        .unwrap()
        .iter()
        .map(|k| k["why"].as_str().unwrap().to_owned())
        .collect()
}

fn complete_repair(s: &Path) {
    let out = doctor(s).arg("--repair-sessions").run();
    assert_eq!(out.code, Some(0), "rerun failed: {}", out.stderr);
}

fn plans_nothing(s: &Path) -> bool {
    let out = doctor(s)
        .args(["--repair-sessions", "--dry-run", "--check"])
        .run();
    out.code == Some(0)
}

/// The demo store with live leases: free lease files for sessions the repair acts on (every
/// lease check at execution probes a real file) and one for `alpha`, which a `hold-lock`
/// process holds during each run (see [`fresh_copy_held`]).
fn demo_with_leases() -> (tempfile::TempDir, PathBuf) {
    let (tmp, s) = demo_with_old_artifacts();
    for id in [
        "alpha", "beta", "delta", "epsilon", "zeta", "torn", "th-lost",
    ] {
        std::fs::write(s.join(format!(".late-usage/{id}.live")), b"").unwrap();
    }
    (tmp, s)
}

/// [`fresh_copy`], then `alpha`'s live lease taken by another process for as long as the
/// returned holder lives.
fn fresh_copy_held(pristine: &Path, s: &Path) -> common::Holder {
    common::fresh_copy(pristine, s);
    common::Holder::spawn(&[s.join(".late-usage/alpha.live")])
}

#[test]
#[cfg_attr(
    windows,
    ignore = "exhaustive: too slow under Wine for the CI budget (232 kill points, 22 min); windows::a_repair_killed_at_a_few_points_converges_and_restores_to_the_original covers Windows"
)]
fn every_kill_point_converges_and_loses_nothing() {
    let (_tmp, pristine) = demo_with_leases();
    let before = tree(&pristine);

    // Every run below works at this one path.
    let work = tempfile::tempdir().unwrap();
    let s = work.path().join("S");

    // The uninterrupted run, and how many mutations it makes.
    let _held = fresh_copy_held(&pristine, &s);
    complete_repair(&s);
    assert!(plans_nothing(&s));
    let want_user = user_tree(&s);
    let want_aside = common::set_aside_files(&tree(&s));
    // Its holder lets go before the next copy replaces S: on Windows a file held open cannot
    // leave its directory, so S could not be removed.
    drop(_held);

    let mut total = 0;
    loop {
        let _held = fresh_copy_held(&pristine, &s);
        if !repair_killed_at(&s, &(total + 1).to_string()) {
            break;
        }
        total += 1;
        assert!(total < 10_000, "the fault hook never stops firing");
    }
    assert!(
        total >= 20,
        "a run with every kind of action makes many mutations: {total}"
    );

    let mut points = 0;
    for n in 1..=total {
        for spec in [n.to_string(), format!("{n}:after")] {
            let _held = fresh_copy_held(&pristine, &s);
            assert!(
                repair_killed_at(&s, &spec),
                "kill point {spec} was not reached"
            );
            // Every file is at its path, or at its mirrored path in a set-aside run, or (a
            // thread record) rewritten with the SHA-256 of its earlier bytes recorded in a
            // manifest line or receipt.
            let kept = Kept::in_any_run().files_only().or_receipted_rewrite();
            let point = format!("right after the kill at {spec}");
            assert_nothing_lost(&before, &tree(&s), kept.when(&point));
            complete_repair(&s);
            let point = format!("after the rerun of {spec}");
            assert_nothing_lost(&before, &tree(&s), kept.when(&point));
            let differing = common::tree_difference(&user_tree(&s), &want_user);
            assert!(
                differing.is_empty(),
                "kill at {spec}: the rerun does not reach the uninterrupted end state; differing paths: {differing:?}"
            );
            let aside = common::set_aside_files(&tree(&s));
            let missing: Vec<_> = want_aside.difference(&aside).collect();
            assert!(
                missing.is_empty(),
                "kill at {spec}: not set aside as in the uninterrupted run: {missing:?}"
            );
            assert!(
                plans_nothing(&s),
                "kill at {spec}: a further run still plans something"
            );
            // A store move the kill cut short was finished into the run that began it: every
            // run matches its manifest.
            let unmatched = runs_not_matching_their_manifests(&s);
            assert!(
                unmatched.is_empty(),
                "kill at {spec}: set-aside runs that do not match their manifests: {unmatched:?}"
            );
            points += 1;
        }
    }
    println!("kill points run: {points}; mutations of one uninterrupted run: {total}");
}

/// How many mutations an uninterrupted repair of a fresh copy of `pristine` at `s` makes.
fn mutations_of_a_repair(pristine: &Path, s: &Path) -> u64 {
    let _held = fresh_copy_held(pristine, s);
    common::traced_mutations(s, NOW).len() as u64
}

/// Runs a repair paused just before its mutation `n` (`DOCTOR_FAULT_AT=n:pause`), delivers
/// `signal` (a real `kill`) inside that pause, then lets it go on. Returns its exit code and
/// its JSON report.
#[cfg(unix)] // a real `kill -s`
fn repair_signalled_at(s: &Path, n: u64, signal: &str) -> (Option<i32>, serde_json::Value) {
    use std::io::{BufRead, BufReader, Read, Write};
    let mut child = doctor(s)
        .args(["--repair-sessions", "--json"])
        .env("DOCTOR_FAULT_AT", format!("{n}:pause"))
        .command()
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdout = child.stdout.take().unwrap();
    let reader = std::thread::spawn(move || {
        let mut out = String::new();
        stdout.read_to_string(&mut out).unwrap();
        out
    });
    let mut err = BufReader::new(child.stderr.take().unwrap());
    let mut said = String::new();
    loop {
        let mut line = String::new();
        assert!(
            err.read_line(&mut line).unwrap() > 0,
            "mutation {n} was not reached: {said}"
        );
        said.push_str(&line);
        if line.contains("fault point: paused") {
            break;
        }
    }
    let killed = std::process::Command::new("kill")
        .args(["-s", signal, &child.id().to_string()])
        .status()
        .unwrap();
    assert!(killed.success());
    // The signal is handled before the mutation goes on (a handler thread sets the flag).
    std::thread::sleep(std::time::Duration::from_millis(20));
    let mut stdin = child.stdin.take().unwrap();
    stdin.write_all(b"\n").unwrap();
    drop(stdin);
    err.read_to_string(&mut said).unwrap();
    let status = child.wait().unwrap();
    let out = reader.join().unwrap();
    let report = serde_json::from_str(&out)
        .unwrap_or_else(|e| panic!("{signal} at {n}: no JSON report ({e}): {status}\n{said}"));
    (status.code(), report)
}

/// SIGTERM and SIGINT delivered at every mutation of a real repair: the mutation in progress
/// completes, its action is finished and receipted, nothing after it is attempted, the run
/// exits 143 or 130 with its report, no set-aside run is left split, the rerun reaches the
/// uninterrupted end state, and restoring each run (newest first) gives back the original
/// tree (checked at each mutation for one of the two signals, in turn).
#[test]
#[cfg(unix)] // Unix signals
fn a_signal_at_every_mutation_finishes_the_action_and_stops() {
    let (_tmp, pristine) = demo_with_leases();
    let work = tempfile::tempdir().unwrap();
    let s = work.path().join("S");

    let _held = fresh_copy_held(&pristine, &s);
    complete_repair(&s);
    let want_user = user_tree(&s);
    let want_aside = common::set_aside_files(&tree(&s));
    drop(_held);
    let original = user_tree(&pristine);
    let total = mutations_of_a_repair(&pristine, &s);
    assert!(total >= 20, "{total}");

    let mut points = 0;
    for n in 1..=total {
        for (signal, code) in [("TERM", 143), ("INT", 130)] {
            let _held = fresh_copy_held(&pristine, &s);
            let point = format!("SIG{signal} at mutation {n}");
            let (exit, report) = repair_signalled_at(&s, n, signal);
            assert_eq!(exit, Some(code), "{point}: {report:#}");
            let outcomes = report["outcomes"].as_array().unwrap();
            let attempted: Vec<_> = outcomes
                .iter()
                .filter(|o| !o["why"].as_str().unwrap_or("").starts_with("not attempted"))
                .collect();
            assert!(!attempted.is_empty(), "{point}: {report:#}");
            // The actions attempted are a prefix of the plan, each receipted.
            assert!(
                outcomes[..attempted.len()]
                    .iter()
                    .all(|o| !o["why"].as_str().unwrap_or("").starts_with("not attempted")),
                "{point}: {report:#}"
            );
            let run = report["run"].as_str().unwrap().to_owned();
            let receipts =
                std::fs::read_to_string(s.join(".reconcile/receipts.jsonl")).unwrap_or_default();
            let receipted = receipts
                .lines()
                .filter(|l| l.contains(&format!("\"run\":\"{run}\"")))
                .count();
            assert_eq!(receipted, attempted.len(), "{point}: {receipts}");
            let unmatched = runs_not_matching_their_manifests(&s);
            assert!(unmatched.is_empty(), "{point}: split: {unmatched:?}");

            complete_repair(&s);
            let differing = common::tree_difference(&user_tree(&s), &want_user);
            assert!(
                differing.is_empty(),
                "{point}: rerun differs: {differing:?}"
            );
            let aside = common::set_aside_files(&tree(&s));
            let missing: Vec<_> = want_aside.difference(&aside).collect();
            assert!(missing.is_empty(), "{point}: not set aside: {missing:?}");
            assert!(plans_nothing(&s), "{point}: a further run plans something");
            drop(_held);
            // Both signals take one path: the restores are checked for one of them at each
            // mutation, in turn, which keeps the suite's time down.
            if (n % 2 == 0) != (signal == "INT") {
                points += 1;
                continue;
            }

            // Runs of one second differ by a random suffix: their order is the receipts'.
            let receipts = std::fs::read_to_string(s.join(".reconcile/receipts.jsonl")).unwrap();
            let mut runs: Vec<String> = Vec::new();
            for line in receipts.lines() {
                let v: serde_json::Value = serde_json::from_str(line).unwrap();
                let r = v["run"].as_str().unwrap().to_owned();
                if !runs.contains(&r)
                    && s.join(".set-aside")
                        .join(&r)
                        .join("MANIFEST.jsonl")
                        .exists()
                {
                    runs.push(r);
                }
            }
            for r in runs.iter().rev() {
                complete_restore(&s, r);
            }
            let differing = common::tree_difference(&user_tree(&s), &original);
            assert!(
                differing.is_empty(),
                "{point}: restoring each run does not give back the original: {differing:?}"
            );
            points += 1;
        }
    }
    println!("signal points run: {points}; mutations of one uninterrupted run: {total}");
}

/// Every file of `before` is somewhere in the tree at `s` with the same bytes (at its path, or
/// moved: a restore moves items back out of their run), except the doctor's own logs and
/// summary, which grow or are rewritten by design.
#[track_caller]
fn assert_contents_kept(before: &Tree, s: &Path, point: &str) {
    let after = tree(s);
    let present: BTreeSet<String> = after
        .values()
        .filter_map(|n| match n {
            Node::File(b) => Some(sha256_hex(b)),
            _ => None,
        })
        .collect();
    for (path, node) in before {
        let Node::File(bytes) = node else { continue };
        let name = path.to_string_lossy();
        if (is_doctor_own(path) && name.ends_with(".jsonl")) || name.ends_with("last.json") {
            continue;
        }
        assert!(
            after.get(path) == Some(node) || present.contains(&sha256_hex(bytes)),
            "{point}: {} was lost (its bytes are nowhere in the tree)",
            path.display()
        );
    }
}

fn restore_killed_at(s: &Path, run: &str, spec: &str) -> bool {
    killed_at(s, &["--restore", run], spec)
}

fn complete_restore(s: &Path, run: &str) -> serde_json::Value {
    let out = doctor(s).args(["--restore", run, "--json"]).run();
    assert_eq!(out.code, Some(0), "restore failed: {}", out.stderr);
    out.json()
}

/// A restore (every kind of item: documents, an artifact directory, runtime stores by the
/// store-move protocol, previous versions of rewritten thread records, and the documents the
/// run's recoveries wrote) killed before and after each of its mutations: a complete rerun of
/// the same restore gives back the same tree as an uninterrupted restore, and loses nothing.
#[test]
#[cfg_attr(
    windows,
    ignore = "exhaustive: too slow under Wine for the CI budget; windows::a_repair_killed_at_a_few_points_converges_and_restores_to_the_original covers Windows"
)]
fn every_restore_kill_point_converges() {
    let (_tmp, pristine) = demo_with_old_artifacts();
    let work = tempfile::tempdir().unwrap();
    let s = work.path().join("S");
    common::fresh_copy(&pristine, &s);
    complete_repair(&s);
    let runs: Vec<_> = std::fs::read_dir(s.join(".set-aside"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(runs.len(), 1, "{runs:?}");
    let run = runs[0].clone();
    let repaired_tmp = tempfile::tempdir().unwrap();
    let repaired = repaired_tmp.path().join("S");
    common::copy_tree(&s, &repaired);
    common::copy_mtimes(&s, &repaired);
    let before = tree(&repaired);

    let report = complete_restore(&s, &run);
    let want_user = user_tree(&s);
    assert_eq!(
        want_user,
        user_tree(&pristine),
        "an uninterrupted restore gives back the original tree: {report:#}"
    );

    let mut total = 0;
    loop {
        common::fresh_copy(&repaired, &s);
        if !restore_killed_at(&s, &run, &(total + 1).to_string()) {
            break;
        }
        total += 1;
        assert!(total < 10_000, "the fault hook never stops firing");
    }
    assert!(
        total >= 20,
        "a restore of every kind of item: {total} mutations"
    );
    let mut points = 0;
    for n in 1..=total {
        for spec in [n.to_string(), format!("{n}:after")] {
            common::fresh_copy(&repaired, &s);
            assert!(restore_killed_at(&s, &run, &spec), "{spec} not reached");
            assert_contents_kept(
                &before,
                &s,
                &format!("right after the restore kill at {spec}"),
            );
            let report = complete_restore(&s, &run);
            assert_contents_kept(&before, &s, &format!("after the rerun of {spec}"));
            let differing = common::tree_difference(&user_tree(&s), &want_user);
            assert!(
                differing.is_empty(),
                "restore killed at {spec}: the rerun does not give back the original tree; \
                 differing paths: {differing:?}\n{report:#}"
            );
            points += 1;
        }
    }
    println!("restore kill points run: {points}; mutations of one restore: {total}");
}

/// A store move whose rename of an entry happened but whose directory sync then failed (EIO,
/// injected with `DOCTOR_FAULT_AT=N:fail`): the entry did move, so it goes back with the
/// others. The store is whole at its path afterwards, nothing of it is left in the run, and
/// the next run sets it aside normally.
#[test]
fn a_store_entry_whose_sync_failed_after_its_rename_is_moved_back() {
    let (_tmp, pristine) = demo_with_old_artifacts();
    let work = tempfile::tempdir().unwrap();
    let s = work.path().join("S");
    let store_before = tree(&pristine.join("epsilon/runtime"));
    common::fresh_copy(&pristine, &s);
    let trace = common::traced_mutations(&s, NOW);
    // The first entry of epsilon/runtime renamed into the run, then its destination synced.
    let moved = trace
        .iter()
        .position(|(_, w)| w.starts_with("move epsilon/runtime/"))
        .unwrap_or_else(|| panic!("no store entry move: {trace:?}"));
    let (n, what) = &trace[moved + 1];
    assert!(what.starts_with("sync directory .set-aside/"), "{what}");

    common::fresh_copy(&pristine, &s);
    let report = doctor(&s)
        .args(["--repair-sessions", "--json"])
        .env("DOCTOR_FAULT_AT", format!("{n}:fail"))
        .run()
        .json();
    let seq = report["plan"]["actions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|a| a["path"] == "epsilon/runtime")
        .unwrap()["seq"]
        .clone();
    let outcome = report["outcomes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|o| o["seq"] == seq)
        .unwrap();
    assert_eq!(outcome["outcome"], "failed", "{outcome}");
    assert!(
        outcome["why"].as_str().unwrap().contains("moved back"),
        "{outcome}"
    );
    assert_eq!(
        tree(&s.join("epsilon/runtime")),
        store_before,
        "every entry is back, the one whose sync failed too"
    );
    let left: Vec<_> = tree(&s.join(".set-aside"))
        .into_keys()
        .filter(|p| p.to_string_lossy().contains("epsilon/runtime/"))
        .collect();
    assert!(
        left.is_empty(),
        "nothing of the store is left in the run: {left:?}"
    );
    // The rolled-back move leaves no empty destination directory behind.
    let empty: Vec<_> = tree(&s.join(".set-aside"))
        .into_keys()
        .filter(|p| p.to_string_lossy().contains("epsilon"))
        .collect();
    assert!(empty.is_empty(), "destination left: {empty:?}");
    // No manifest line is left claiming the store moved: a later line voids it, and the run's
    // listing does not show it.
    let run = report["run"].as_str().unwrap();
    let manifest =
        std::fs::read_to_string(s.join(".set-aside").join(run).join("MANIFEST.jsonl")).unwrap();
    let last = manifest
        .lines()
        .rfind(|l| l.contains("\"original\":\"epsilon/runtime\""))
        .unwrap();
    assert!(last.contains("\"rolled_back\":true"), "{manifest}");
    let listing = Doctor::new()
        .now(NOW)
        .args(["sessions", "list", run, "--json"])
        .sessions_dir(&s)
        .run();
    assert_eq!(listing.code, Some(0), "{}", listing.said());
    let items = listing.json()["items"].clone();
    assert!(
        items
            .as_array()
            .unwrap()
            .iter()
            .all(|i| i["original"] != "epsilon/runtime"),
        "{items:#}"
    );
    complete_repair(&s);
    assert!(!s.join("epsilon/runtime").exists());
    assert!(plans_nothing(&s));
}

/// SIGHUP, as a closed terminal sends it, stops a repair as SIGTERM does: the action in progress
/// finishes with its receipt, the run exits 129 with its report, and the rerun converges.
#[test]
#[cfg(unix)] // Unix signals
fn a_hangup_mid_repair_finishes_the_action_and_exits_129() {
    let (_tmp, pristine) = demo_with_leases();
    let work = tempfile::tempdir().unwrap();
    let s = work.path().join("S");
    let _held = fresh_copy_held(&pristine, &s);
    complete_repair(&s);
    let want_user = user_tree(&s);
    drop(_held);
    let total = mutations_of_a_repair(&pristine, &s);
    let _held = fresh_copy_held(&pristine, &s);
    let (exit, report) = repair_signalled_at(&s, total / 2, "HUP");
    assert_eq!(exit, Some(129), "{report:#}");
    let stopped = report["outcomes"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|o| {
            o["why"]
                .as_str()
                .is_some_and(|w| w.contains("stopped by SIGHUP"))
        })
        .count();
    assert!(
        stopped > 0,
        "the actions after the one in progress were not attempted: {report:#}"
    );
    assert!(runs_not_matching_their_manifests(&s).is_empty());
    complete_repair(&s);
    assert!(common::tree_difference(&user_tree(&s), &want_user).is_empty());
    assert!(plans_nothing(&s));
}

/// A signal before anything is applied (here: while `sessions apply -` waits for its plan on
/// stdin) ends the process at once with the shell's code, 143 for SIGTERM, having written
/// nothing.
#[test]
#[cfg(target_os = "linux")] // Unix signals; the handler is seen in /proc/<pid>/status
fn a_signal_before_applying_exits_at_once_with_its_code() {
    let (_tmp, s) = demo_with_old_artifacts();
    let before = tree(&s);
    let mut child = Doctor::new()
        .args(["sessions", "apply", "-"])
        .command()
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // Its stdin stays open until it has exited: the plan never comes (an end of input would
    // end the run with its own code, racing the signal).
    let stdin = child.stdin.take();
    // The binary has installed its handler once the kernel lists SIGTERM as caught.
    let caught = || {
        std::fs::read_to_string(format!("/proc/{}/status", child.id()))
            .unwrap_or_default()
            .lines()
            .find_map(|l| l.strip_prefix("SigCgt:"))
            .and_then(|m| u64::from_str_radix(m.trim(), 16).ok())
            .is_some_and(|m| m & (1 << (15 - 1)) != 0)
    };
    let start = std::time::Instant::now();
    while !caught() {
        assert!(start.elapsed().as_secs() < 30, "no SIGTERM handler");
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    let killed = std::process::Command::new("kill")
        .args(["-s", "TERM", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(killed.success());
    let out = child.wait_with_output().unwrap();
    drop(stdin);
    assert_eq!(
        out.status.code(),
        Some(143),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(String::from_utf8_lossy(&out.stderr).contains("before anything was changed"));
    assert_eq!(tree(&s), before, "nothing written");
}
