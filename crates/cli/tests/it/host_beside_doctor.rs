//! A live host beside the doctor: `host-sim simulate` plays a busy host application for 30 s
//! (creating, saving, closing, resuming, deleting and abandoning sessions with the library's
//! `LiveLease` and `StoreOwnerLock`, writing with `write_atomic`), while two loops run the real
//! `doctor --repair-sessions` binary on the same S, back to back, so that runs also meet each
//! other at `.reconcile.lock`.
//!
//! Afterwards: every doctor run exited 0 or 75; the host saw no violation (each time it took a
//! session again, and before each operation on one it held, every file it had written was at
//! its path byte for byte and its store held nothing it did not write); every file of every
//! session the host kept is on disk with the bytes of its last save; no receipt or manifest
//! line of the doctor names a kept session; every file of an abandoned or deleted session is at
//! its path or at its mirrored path in a set-aside run; and two more runs converge (the second
//! plans nothing).
//!
//! `DOCTOR_HOST_SECONDS` shortens or lengthens the simulation (default 30).

use std::collections::{BTreeMap, BTreeSet};
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::common::{sha256_hex, Doctor, Holder, Ran};
use crate::stores;
use serde_json::Value;

const SEED: u64 = 11;

/// `doctor <args> --sessions-dir <s>` on the system clock.
fn doctor(args: &[&str], s: &Path) -> Ran {
    Doctor::new().args(args).sessions_dir(s).run()
}

/// What one doctor loop saw.
#[derive(Default)]
struct Runs {
    codes: BTreeMap<i32, usize>,
    unexpected: Vec<String>,
}

fn doctor_loop(s: PathBuf, stop: Arc<AtomicBool>, runs: Arc<Mutex<Runs>>, offset: usize) {
    let mut n = offset;
    while !stop.load(Ordering::SeqCst) {
        n += 1;
        // Mostly real repairs; now and then a dry run and a status report, which only read.
        let args: &[&str] = match n % 10 {
            3 => &["--repair-sessions", "--dry-run", "--json"],
            7 => &["--json"],
            _ => &["--repair-sessions", "--json"],
        };
        let out = doctor(args, &s);
        // A short pause, so the two loops do not spend the host's whole time slice.
        std::thread::sleep(Duration::from_millis(5));
        let code = out.exit_code();
        let mut r = runs.lock().unwrap();
        *r.codes.entry(code).or_default() += 1;
        if code != 0 && code != 75 {
            r.unexpected
                .push(format!("doctor {args:?} exited {code}:\n{}", out.said()));
        }
    }
}

/// What the journal says the host did to one session.
#[derive(Default, Debug)]
struct Life {
    /// Path -> sha256 of the last bytes the host wrote there (removed paths dropped).
    files: BTreeMap<String, String>,
    deleted: bool,
    abandoned: bool,
    held: u64,
    /// What the host found changed when it took the session again after it rested.
    changed_at_rest: Vec<Value>,
}

fn read_journal(path: &Path) -> (BTreeMap<String, Life>, Vec<Value>, Value) {
    let text = std::fs::read_to_string(path).expect("read the journal");
    let mut lives: BTreeMap<String, Life> = BTreeMap::new();
    let mut violations = Vec::new();
    let mut summary = Value::Null;
    for line in text.lines() {
        let v: Value = serde_json::from_str(line).expect("a journal line is JSON");
        let op = v["op"].as_str().unwrap_or_default();
        if op == "summary" {
            summary = v;
            continue;
        }
        let id = v["id"].as_str().unwrap_or_default().to_owned();
        let life = lives.entry(id).or_default();
        match op {
            // `adopted`: the state the host found and accepted after resting (see below).
            "saved" | "adopted" => {
                let p = v["path"].as_str().unwrap().to_owned();
                life.files
                    .insert(p, v["sha256"].as_str().unwrap().to_owned());
            }
            "removed" => {
                let p = v["path"].as_str().unwrap().to_owned();
                let under = format!("{p}/");
                life.files.retain(|f, _| f != &p && !f.starts_with(&under));
            }
            "held" => life.held += 1,
            "changed_at_rest" => life.changed_at_rest.push(v.clone()),
            "deleted" => life.deleted = true,
            "abandoned" => life.abandoned = true,
            "violation" => violations.push(v),
            _ => {}
        }
    }
    (lives, violations, summary)
}

/// The host session an item of the doctor's belongs to: the first path component or document
/// stem; a recovered document `th-<id>.json` belongs to session `<id>`.
fn owner_of(path: &str) -> String {
    let first = path.split('/').next().unwrap_or(path);
    let stem = first.strip_suffix(".json").unwrap_or(first);
    stem.strip_prefix("th-").unwrap_or(stem).to_owned()
}

fn lines(path: &Path) -> Vec<Value> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .map(|l| serde_json::from_str(l).expect("a JSON line"))
        .collect()
}

/// Set-aside run directories of S.
fn set_aside_runs(s: &Path) -> Vec<PathBuf> {
    match std::fs::read_dir(s.join(".set-aside")) {
        Ok(rd) => rd.map(|e| e.unwrap().path()).collect(),
        Err(_) => Vec::new(),
    }
}

fn sha_of(p: &Path) -> Option<String> {
    std::fs::read(p).ok().map(|b| sha256_hex(&b))
}

/// For a failure message: the journal lines and the doctor's receipts of every session the host
/// reported a violation for.
fn history_of_violations(journal: &Path, s: &Path) -> String {
    let all = lines(journal);
    let ids: BTreeSet<String> = all
        .iter()
        .filter(|v| v["op"] == "violation")
        .filter_map(|v| v["id"].as_str().map(str::to_owned))
        .collect();
    let mut out = String::new();
    for id in &ids {
        out.push_str(&format!("--- journal of {id}\n"));
        for v in all.iter().filter(|v| v["id"].as_str() == Some(id.as_str())) {
            out.push_str(&format!("{v}\n"));
        }
        out.push_str(&format!("--- receipts naming {id}\n"));
        for r in lines(&s.join(".reconcile/receipts.jsonl")) {
            if owner_of(r["path"].as_str().unwrap_or_default()) == *id {
                out.push_str(&format!("{r}\n"));
            }
        }
    }
    out
}

#[test]
fn a_live_host_beside_the_doctor_loses_nothing_and_keeps_what_it_holds() {
    let seconds: u64 = std::env::var("DOCTOR_HOST_SECONDS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(30);
    let tmp = tempfile::tempdir().unwrap();
    let s = tmp.path().join("S");
    std::fs::create_dir(&s).unwrap();
    // The lease directory a store the app has run in holds: the doctor's first runs may come
    // before the host's first document, and S must still look like a session store.
    std::fs::create_dir(s.join(".late-usage")).unwrap();
    let journal = tmp.path().join("journal.jsonl");

    let start = Instant::now();
    let host = Command::new(test_support::binary(
        env!("CARGO_BIN_EXE_doctor"),
        "host-sim",
    ))
    .arg("simulate")
    .arg(&s)
    .args([
        "--seconds",
        &seconds.to_string(),
        "--seed",
        &SEED.to_string(),
    ])
    .arg("--journal")
    .arg(&journal)
    .stdout(Stdio::piped())
    .stderr(Stdio::piped())
    .spawn()
    .expect("start host-sim");

    let stop = Arc::new(AtomicBool::new(false));
    let runs = Arc::new(Mutex::new(Runs::default()));
    let loops: Vec<_> = (0..2)
        .map(|k| {
            let (s, stop, runs) = (s.clone(), stop.clone(), runs.clone());
            std::thread::spawn(move || doctor_loop(s, stop, runs, k * 5))
        })
        .collect();
    let host_out = host.wait_with_output().expect("wait for host-sim");
    stop.store(true, Ordering::SeqCst);
    for l in loops {
        l.join().unwrap();
    }
    let host_stdout = String::from_utf8_lossy(&host_out.stdout).into_owned();
    let host_stderr = String::from_utf8_lossy(&host_out.stderr).into_owned();
    assert_eq!(
        host_out.status.code(),
        Some(0),
        "host-sim saw violations:\n{host_stdout}\n{host_stderr}\n{}",
        history_of_violations(&journal, &s)
    );

    // Two more runs with the host gone: the first finishes the repairs, the second plans nothing.
    let last = doctor(&["--repair-sessions", "--json"], &s);
    assert_eq!(last.code, Some(0), "{}", last.stderr);
    let converged = doctor(&["--repair-sessions", "--dry-run", "--json"], &s).json();
    assert_eq!(
        converged["plan"]["actions"].as_array().unwrap().len(),
        0,
        "a run after a complete run plans nothing: {converged:#}"
    );

    let runs = runs.lock().unwrap();
    let doctor_runs: usize = runs.codes.values().sum();
    println!("host: {}", host_stdout.trim());
    println!(
        "doctor: {doctor_runs} runs beside the host in {:?}, exit codes {:?}",
        start.elapsed(),
        runs.codes
    );
    assert!(
        runs.unexpected.is_empty(),
        "doctor runs exited with neither 0 nor 75:\n{}",
        runs.unexpected.join("\n")
    );
    assert!(doctor_runs >= 10, "too few doctor runs: {doctor_runs}");

    // The journal: what the host held, saved, removed, deleted and abandoned.
    let (lives, violations, summary) = read_journal(&journal);
    assert!(violations.is_empty(), "host violations: {violations:#?}");
    assert!(!summary.is_null(), "the host did not finish its journal");
    let kept: BTreeSet<&String> = lives
        .iter()
        .filter(|(_, l)| !l.deleted && !l.abandoned)
        .map(|(id, _)| id)
        .collect();
    let gone: BTreeSet<&String> = lives
        .iter()
        .filter(|(_, l)| l.deleted || l.abandoned)
        .map(|(id, _)| id)
        .collect();
    assert!(!kept.is_empty() && !gone.is_empty(), "{lives:?}");

    // Every file of a kept session is at its path with its last bytes.
    let mut checked = 0;
    for id in &kept {
        for (path, sha) in &lives[*id].files {
            assert_eq!(
                sha_of(&s.join(path)).as_deref(),
                Some(sha.as_str()),
                "{path} of kept session {id} is not what the host last wrote"
            );
            checked += 1;
        }
    }

    // The doctor acted only on sessions the host deleted or abandoned, and set aside no
    // temporary file of a kept session's writes. A kept session is a readable document bound to its
    // store: even while it rests unheld there is nothing to repair in it, so a change the host
    // finds when it takes it again means the doctor acted on a stale view of it
    // (a_plan_made_before_the_document_was_saved_does_not_unbind_its_thread).
    let receipts = lines(&s.join(".reconcile/receipts.jsonl"));
    let mut by_action: BTreeMap<String, usize> = BTreeMap::new();
    for r in receipts.iter().filter(|r| r["outcome"] == "applied") {
        let path = r["path"].as_str().unwrap();
        let owner = owner_of(path);
        *by_action
            .entry(r["action"].as_str().unwrap().to_owned())
            .or_default() += 1;
        // A temporary file the scan saw while the host wrote it is usually renamed away by the
        // time the run sets "it" aside: such receipts name kept sessions without touching them.
        // Whether a set-aside ever hit a write in flight, the host itself tells (`interfered`).
        if r["rule"] == "doctor" {
            continue;
        }
        assert!(
            !kept.contains(&owner),
            "the doctor acted on {path} of session {owner}, which the host kept: {r}"
        );
    }
    for (id, life) in &lives {
        assert!(
            life.changed_at_rest.is_empty(),
            "session {id} changed while it rested: {:#?}",
            life.changed_at_rest
        );
    }
    for run in set_aside_runs(&s) {
        for m in lines(&run.join("MANIFEST.jsonl")) {
            let original = m["original"].as_str().unwrap();
            // A temporary file of a dead writer is set aside whoever's it was (see above).
            if m["rule"] == "doctor" {
                continue;
            }
            assert!(
                !kept.contains(&owner_of(original)),
                "{original} of a kept session was set aside: {m}"
            );
        }
    }

    // Nothing of a deleted or abandoned session is lost: each file the host left is at its path
    // or at its mirrored path in a set-aside run (a rewritten thread record's previous version
    // is there too).
    let runs_dirs = set_aside_runs(&s);
    for id in &gone {
        for (path, sha) in &lives[*id].files {
            let here = sha_of(&s.join(path)).as_deref() == Some(sha.as_str());
            let aside = runs_dirs
                .iter()
                .any(|r| sha_of(&r.join(path)).as_deref() == Some(sha.as_str()));
            assert!(here || aside, "{path} of session {id} was lost");
            checked += 1;
        }
    }

    let interfered = summary["counts"]["interfered"].as_u64().unwrap_or(0);
    println!(
        "journal: {} sessions ({} kept, {} deleted or abandoned), {} files checked; doctor \
         applied {by_action:?}",
        lives.len(),
        kept.len(),
        gone.len(),
        checked
    );
    assert_eq!(
        interfered, 0,
        "the doctor removed the temporary file of a host write in flight \
         (the_doctor_never_removes_a_temporary_file_of_a_held_store)"
    );
    assert!(by_action.get("set_aside").copied().unwrap_or(0) > 0);
    assert!(by_action.get("recover_thread").copied().unwrap_or(0) > 0);
}

/// invariants.md, "live things are never touched": a held store, and anything under it, is
/// never touched. The doctor removes "temporary files of interrupted writes" (names
/// `.<name>.doctor-tmp-<pid>-<n>`, which the library's `write_atomic` also gives a host's
/// writes); it must not remove one inside a store another process holds, or one of a live
/// session, where a host may be about to rename it into place. (Found by the live-host test:
/// 2 to 19 host writes per 30 s failed with ENOENT on their rename.)
#[test]
fn the_doctor_never_removes_a_temporary_file_of_a_held_store() {
    let tmp = tempfile::tempdir().unwrap();
    let s = tmp.path().join("S");
    let store = s.join("busy/runtime");
    stores::empty_store(&s, "busy/runtime");
    std::fs::create_dir_all(store.join("threads")).unwrap();
    std::fs::create_dir_all(s.join(".late-usage")).unwrap();
    // The host: holds the store's owner lock and the lease of its session; its pid is alive.
    let host = Holder::spawn(&[
        store.join("runtime-process.owner.lock"),
        s.join(".late-usage/busy.live"),
    ]);
    let pid = std::process::id();
    let in_store = store.join(format!("threads/.th-busy.json.doctor-tmp-{pid}-7"));
    let at_top = s.join(format!(".busy.json.doctor-tmp-{pid}-8"));
    std::fs::write(&in_store, b"{\"half\":").unwrap();
    std::fs::write(&at_top, b"{\"half\":").unwrap();

    let out = doctor(&["--repair-sessions", "--json"], &s);
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    let still_there = (in_store.exists(), at_top.exists());
    drop(host);
    assert_eq!(
        still_there,
        (true, true),
        "the doctor removed a held store's or a live session's temporary file: {}",
        out.stdout
    );
}

/// host-sim itself: its journal names every held item and every saved file, and a short run
/// without a doctor beside it ends without a violation. Keeps the journal format honest.
#[test]
fn host_sim_journals_what_it_holds_and_saves() {
    let tmp = tempfile::tempdir().unwrap();
    let s = tmp.path().join("S");
    std::fs::create_dir(&s).unwrap();
    let journal = tmp.path().join("j.jsonl");
    let mut child = Command::new(test_support::binary(
        env!("CARGO_BIN_EXE_doctor"),
        "host-sim",
    ))
    .arg("simulate")
    .arg(&s)
    .args(["--seconds", "1", "--seed", "5", "--journal"])
    .arg(&journal)
    .stdout(Stdio::piped())
    .spawn()
    .unwrap();
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    assert!(child.wait().unwrap().success(), "{line}");
    assert!(line.starts_with("ops="), "{line}");
    assert!(line.trim_end().ends_with("violations=0"), "{line}");
    let (lives, violations, summary) = read_journal(&journal);
    assert!(violations.is_empty());
    assert!(summary["ops"].as_u64().unwrap() > 0);
    assert!(lives.values().any(|l| l.held > 0 && !l.files.is_empty()));
    for (id, life) in &lives {
        if life.deleted || life.abandoned {
            continue;
        }
        for (path, sha) in &life.files {
            assert_eq!(
                sha_of(&s.join(path)).as_deref(),
                Some(sha.as_str()),
                "{id}: {path}"
            );
        }
    }
}

/// A store with thread `th-x` bound to session `x`, whose document is not written yet (a host
/// between its first thread record and its first document), and the plan a dry run makes of
/// it: R4 unbinds the thread, R3 recovers `th-x.json`.
fn plan_before_the_document(s: &Path, plan: &Path) -> doctor::RepairReport {
    stores::store_with_thread(s, "x/runtime", "th-x", Some("x"), 1);
    let mut opts = crate::common::repair_options(s);
    // A store of runtime stores only, as the test needs: no mark of a session store.
    opts.assume_session_store = true;
    opts.dry_run = true;
    let dry = doctor::repair_sessions(&opts).unwrap();
    std::fs::write(plan, doctor::plan_file_bytes(&dry)).unwrap();
    dry
}

/// The document `x` the host saves, bound to `x/runtime` as the app binds (absolute path).
fn document_x(s: &Path) -> Vec<u8> {
    stores::pretty(&stores::bound_document(s, "x", "x/runtime"))
}

/// What the live-host test found in about one 30 s run in four, made deterministic. A doctor's
/// scan is not a snapshot: it can list S before a host writes its first document and probe the
/// leases and read the thread record after the host saved and let go; R4's "its session
/// document no longer exists" must then be re-checked when the action is applied, not only
/// the thread record's bytes. Here the stale plan is an explicit `--apply-plan` of a plan made
/// before the document was written: the thread must stay bound to its readable document
/// `x.json`, and no duplicate `th-x.json` may be recovered.
#[test]
fn a_plan_made_before_the_document_was_saved_does_not_unbind_its_thread() {
    let tmp = tempfile::tempdir().unwrap();
    let s = tmp.path().join("S");
    let plan = tmp.path().join("plan.json");
    let dry = plan_before_the_document(&s, &plan);
    assert_eq!(dry.plan.actions.len(), 2, "{:?}", dry.plan);
    // The host saves its document, then lets go of the session.
    std::fs::write(s.join("x.json"), document_x(&s)).unwrap();
    let record = std::fs::read(s.join("x/runtime/threads/th-x.json")).unwrap();
    let applied = doctor::apply_plan_file(&plan, store::Clock::System).unwrap();
    assert_eq!(
        std::fs::read(s.join("x/runtime/threads/th-x.json")).unwrap(),
        record,
        "the thread of x.json was rewritten: {:?}",
        applied.outcomes
    );
    assert!(
        !s.join("th-x.json").exists(),
        "a duplicate of x was recovered"
    );
}

/// The same for R2: an empty store planned as unbound, then bound by a document the host
/// writes, is set aside by the stale plan: its tree digest, the only precondition, did not
/// change.
#[test]
fn a_plan_made_before_a_document_bound_the_store_does_not_set_it_aside() {
    let tmp = tempfile::tempdir().unwrap();
    let s = tmp.path().join("S");
    let store = s.join("x/runtime");
    stores::empty_store(&s, "x/runtime");
    let mut opts = crate::common::repair_options(&s);
    // A store of runtime stores only, as the test needs: no mark of a session store.
    opts.assume_session_store = true;
    opts.dry_run = true;
    let dry = doctor::repair_sessions(&opts).unwrap();
    assert_eq!(dry.plan.actions.len(), 1);
    let plan = tmp.path().join("plan.json");
    std::fs::write(&plan, doctor::plan_file_bytes(&dry)).unwrap();
    std::fs::write(s.join("x.json"), document_x(&s)).unwrap();
    let applied = doctor::apply_plan_file(&plan, store::Clock::System).unwrap();
    assert!(
        store.join("owner.json").exists(),
        "the store x.json binds was set aside: {:?}",
        applied.outcomes
    );
}
