//! Live holders and the store-move races, each with a real second process holding the `flock`
//! (`flock` belongs to an open file description, so a thread of this process would prove
//! nothing): held stores and live sessions are never touched, and the race points of the
//! store move never produce two owners.

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};

use crate::stores::{self, empty_store};
use fsroot::{LockProbe, TryLock, WritableRoot};
use store::{Clock, Timestamp};

const NOW: &str = "2026-11-29T12:00:00Z";

struct Proc {
    child: Child,
    stdin: Option<ChildStdin>,
    stdout: BufReader<ChildStdout>,
}

impl Proc {
    fn spawn(bin: impl AsRef<std::ffi::OsStr>, args: &[&Path]) -> Proc {
        let mut child = Command::new(bin)
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .expect("spawn helper process");
        let stdin = child.stdin.take();
        let stdout = BufReader::new(child.stdout.take().unwrap());
        Proc {
            child,
            stdin,
            stdout,
        }
    }

    fn line(&mut self) -> String {
        let mut l = String::new();
        self.stdout.read_line(&mut l).expect("read helper output");
        l.trim().to_owned()
    }

    fn send(&mut self, line: &str) {
        let stdin = self.stdin.as_mut().unwrap();
        writeln!(stdin, "{line}").unwrap();
        stdin.flush().unwrap();
    }
}

impl Drop for Proc {
    fn drop(&mut self) {
        drop(self.stdin.take());
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn hold(paths: &[&Path]) -> Proc {
    let mut p = Proc::spawn(
        test_support::binary(env!("CARGO_BIN_EXE_doctor"), "hold-lock"),
        paths,
    );
    assert_eq!(p.line(), "held");
    p
}

fn write(root: &Path, rel: &str, text: &str) {
    let p = root.join(rel);
    std::fs::create_dir_all(p.parent().unwrap()).unwrap();
    std::fs::write(p, text).unwrap();
}

fn listing(root: &Path) -> Vec<(PathBuf, Vec<u8>)> {
    let mut out = Vec::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let e = e.unwrap();
            let p = e.path();
            let rel = p.strip_prefix(root).unwrap().to_path_buf();
            if e.file_type().unwrap().is_dir() {
                stack.push(p);
                out.push((rel, Vec::new()));
            } else {
                out.push((rel, std::fs::read(&p).unwrap()));
            }
        }
    }
    out.sort();
    out
}

fn repair(s: &Path) -> doctor::RepairReport {
    let mut opts = crate::common::repair_options(s);
    // A store of runtime stores only, as the test needs: no mark of a session store.
    opts.assume_session_store = true;
    opts.clock = Clock::Fixed(Timestamp::parse(NOW).unwrap());
    doctor::repair_sessions(&opts).expect("repair runs")
}

#[test]
fn a_held_store_is_never_touched_even_when_empty() {
    let tmp = tempfile::tempdir().unwrap();
    let s = tmp.path();
    empty_store(s, "h/runtime");
    empty_store(s, "free/runtime");
    let before = listing(&s.join("h"));
    let _host = hold(&[&s.join("h/runtime/runtime-process.owner.lock")]);
    let report = repair(s);
    let paths: Vec<&str> = report
        .plan
        .actions
        .iter()
        .map(|a| a.path.as_str())
        .collect();
    assert_eq!(paths, ["free/runtime"], "only the free store is planned");
    assert_eq!(report.summary.stores_in_use, 1);
    assert!(report.skipped.iter().any(|k| k.path == "h/runtime"));
    assert_eq!(listing(&s.join("h")), before, "the held store is untouched");
    assert!(
        !s.join("free/runtime").exists(),
        "the free one was set aside"
    );
}

#[test]
fn a_live_sessions_torn_document_and_empty_store_are_untouched() {
    let tmp = tempfile::tempdir().unwrap();
    let s = tmp.path();
    write(s, "x.json", r#"{"schema_version":1,"metadata":{"id":"x""#);
    empty_store(s, "x/runtime");
    write(s, ".late-usage/x.live", "");
    let before = listing(s);
    let _host = hold(&[&s.join(".late-usage/x.live")]);
    let report = repair(s);
    assert!(report.plan.actions.is_empty(), "{:?}", report.plan.actions);
    assert!(report
        .skipped
        .iter()
        .any(|k| k.path == "x.json" && k.why == "session is live"));
    let after: Vec<_> = listing(s)
        .into_iter()
        .filter(|(p, _)| !p.starts_with(".reconcile") && p != Path::new(".reconcile.lock"))
        .collect();
    assert_eq!(after, before, "nothing of the live session changed");
}

#[test]
fn a_lease_taken_after_planning_stops_the_action() {
    // The executor probes the lease again immediately before acting.
    let tmp = tempfile::tempdir().unwrap();
    let s = tmp.path();
    write(s, "y.json", "not json");
    let opts = {
        let mut o = crate::common::repair_options(s);
        // A store of runtime stores only, as the test needs: no mark of a session store.
        o.assume_session_store = true;
        o.dry_run = true;
        o.clock = Clock::Fixed(Timestamp::parse(NOW).unwrap());
        o
    };
    let dry = doctor::repair_sessions(&opts).unwrap();
    let plan_dir = tempfile::tempdir().unwrap();
    let plan_file = plan_dir.path().join("plan.json");
    std::fs::write(&plan_file, doctor::plan_file_bytes(&dry)).unwrap();
    write(s, ".late-usage/y.live", "");
    let _host = hold(&[&s.join(".late-usage/y.live")]);
    let report =
        doctor::apply_plan_file(&plan_file, Clock::Fixed(Timestamp::parse(NOW).unwrap())).unwrap();
    assert_eq!(report.outcomes.len(), 1);
    assert_eq!(report.outcomes[0].why.as_deref(), Some("session is live"));
    assert!(s.join("y.json").exists());
}

/// Takes the doctor's side of the protocol by hand: the owner lock, then the real move.
fn doctor_lock(root: &WritableRoot, store: &str) -> fsroot::LockGuard {
    match root
        .try_lock(
            Path::new(&format!("{store}/runtime-process.owner.lock")),
            false,
            0o644,
        )
        .unwrap()
    {
        TryLock::Acquired(g) => g,
        other => panic!("doctor could not lock: {other:?}"),
    }
}

#[test]
fn an_opener_that_locks_in_the_gap_is_the_only_owner() {
    let tmp = tempfile::tempdir().unwrap();
    let s = tmp.path();
    empty_store(s, "g/runtime");
    let root = WritableRoot::open(s).unwrap();
    let guard = doctor_lock(&root, "g/runtime");
    let mut opener: Option<Proc> = None;
    let outcome =
        exec::store_move::move_store(&root, "g/runtime", ".set-aside/r/g/runtime", &mut |step| {
            if *step == exec::store_move::MoveStep::LockFileMoved {
                // The gap: the lock file has moved, the emptied source is not removed yet.
                let sim = test_support::binary(env!("CARGO_BIN_EXE_doctor"), "host-sim");
                let mut p =
                    Proc::spawn(&sim, &[Path::new("open-store"), s, Path::new("g/runtime")]);
                assert_eq!(
                    p.line(),
                    "owned attempts=1",
                    "the opener owns a fresh store"
                );
                opener = Some(p);
            }
        })
        .unwrap();
    assert!(
        !outcome.source_removed,
        "the opener's fresh store is left to it"
    );
    assert!(s.join("g/runtime/runtime-process.owner.lock").exists());
    assert!(s
        .join(".set-aside/r/g/runtime/runtime-process.owner.lock")
        .exists());
    assert!(s.join(".set-aside/r/g/runtime/owner.json").exists());
    // Exactly one owner of the store at the path: the opener. The doctor's lock is on the
    // moved file, which is no longer any store's lock.
    assert_eq!(
        root.probe_lock(Path::new("g/runtime/runtime-process.owner.lock"))
            .unwrap(),
        LockProbe::Held
    );
    drop(guard);
    assert_eq!(
        root.probe_lock(Path::new("g/runtime/runtime-process.owner.lock"))
            .unwrap(),
        LockProbe::Held
    );
    drop(opener);
}

#[test]
fn an_opener_that_locks_a_moved_lock_file_reopens_the_path() {
    let tmp = tempfile::tempdir().unwrap();
    let s = tmp.path();
    empty_store(s, "m/runtime");
    let sim = test_support::binary(env!("CARGO_BIN_EXE_doctor"), "host-sim");
    let mut opener = Proc::spawn(
        sim,
        &[
            Path::new("open-store"),
            s,
            Path::new("m/runtime"),
            Path::new("--pause-after-open"),
        ],
    );
    assert_eq!(opener.line(), "opened");
    // While the opener has the lock file open but not locked, a real doctor run moves it.
    let report = repair(s);
    assert_eq!(report.plan.actions.len(), 1);
    assert_eq!(report.outcomes[0].outcome, plan::OutcomeKind::Applied);
    let set_aside = s
        .join(report.summary.set_aside_path.clone().unwrap())
        .join("m/runtime");
    assert!(set_aside.join("runtime-process.owner.lock").exists());
    opener.send("go");
    assert_eq!(
        opener.line(),
        "owned attempts=2",
        "the opener noticed the move and reopened the path"
    );
    let root = WritableRoot::open(s).unwrap();
    assert_eq!(
        root.probe_lock(Path::new("m/runtime/runtime-process.owner.lock"))
            .unwrap(),
        LockProbe::Held
    );
    let moved = format!(
        "{}/m/runtime/runtime-process.owner.lock",
        report.summary.set_aside_path.unwrap()
    );
    assert_eq!(
        root.probe_lock(Path::new(&moved)).unwrap(),
        LockProbe::Free,
        "nobody owns the moved file"
    );
}

#[test]
fn interrupted_writes_are_set_aside_only_where_nobody_holds_anything() {
    let tmp = tempfile::tempdir().unwrap();
    let s = tmp.path();
    write(s, ".gone.json.doctor-tmp-9999999-0", "half a document");
    write(
        s,
        ".my.doctor-tmp-notes",
        "a user's file that only looks like ours",
    );
    empty_store(s, "h/runtime");
    stores::write(
        s,
        "h/runtime/threads/t1.json",
        stores::pretty(&stores::thread("t1", None)),
    );
    write(
        s,
        "h/runtime/threads/.t1.json.doctor-tmp-9999999-1",
        "half a record",
    );
    let _host = hold(&[&s.join("h/runtime/runtime-process.owner.lock")]);

    let mut opts = crate::common::repair_options(s);

    // A store of runtime stores only, as the test needs: no mark of a session store.

    opts.assume_session_store = true;
    opts.dry_run = true;
    opts.clock = Clock::Fixed(Timestamp::parse(NOW).unwrap());
    let dry = doctor::repair_sessions(&opts).unwrap();
    assert_eq!(dry.interrupted_writes, [".gone.json.doctor-tmp-9999999-0"]);
    assert!(dry
        .render_human()
        .contains("would set aside .gone.json.doctor-tmp-9999999-0"));
    assert!(
        s.join(".gone.json.doctor-tmp-9999999-0").exists(),
        "a dry run moves nothing"
    );

    let real = repair(s);
    assert_eq!(
        real.interrupted_writes, dry.interrupted_writes,
        "dry run = real run"
    );
    assert!(!s.join(".gone.json.doctor-tmp-9999999-0").exists());
    let run = s.join(real.summary.set_aside_path.as_deref().unwrap());
    assert_eq!(
        std::fs::read_to_string(run.join(".gone.json.doctor-tmp-9999999-0")).unwrap(),
        "half a document",
        "set aside, never deleted"
    );
    assert!(
        s.join(".my.doctor-tmp-notes").exists(),
        "not one of ours: never moved"
    );
    assert!(
        s.join("h/runtime/threads/.t1.json.doctor-tmp-9999999-1")
            .exists(),
        "inside a held store: never moved"
    );
    let receipts = std::fs::read_to_string(s.join(".reconcile/receipts.jsonl")).unwrap();
    assert!(
        receipts.contains(r#""action":"set_aside","path":".gone.json.doctor-tmp-9999999-0""#),
        "{receipts}"
    );
}

/// The temporary file of an interrupted write inside the threads directory of a store nobody
/// holds (what a doctor killed in the middle of a thread rewrite leaves) is set aside by the
/// next real run, as its dry run says: the run takes the store's owner lock itself before
/// moving it, and that lock must not be mistaken for another holder.
#[test]
fn an_interrupted_write_inside_a_free_store_is_set_aside() {
    let tmp = tempfile::tempdir().unwrap();
    let s = tmp.path();
    stores::store_with_thread(s, "f/runtime", "th-f", None, 0);
    let temp = "f/runtime/threads/.th-f.json.doctor-tmp-9999999-1";
    write(s, temp, "half a record");
    let mut opts = crate::common::repair_options(s);
    // A store of runtime stores only, as the test needs: no mark of a session store.
    opts.assume_session_store = true;
    opts.dry_run = true;
    opts.clock = Clock::Fixed(Timestamp::parse(NOW).unwrap());
    let dry = doctor::repair_sessions(&opts).unwrap();
    assert_eq!(dry.interrupted_writes, [temp]);
    let real = repair(s);
    assert_eq!(
        real.interrupted_writes, dry.interrupted_writes,
        "dry run = real run"
    );
    assert!(!s.join(temp).exists(), "the temporary file is still there");
}

/// A store no document binds, holding thread `th1` bound to the missing document `gamma`:
/// planned R4 (unbind) then R3 (recover `th1.json`). (Version 2 recovers only in stores no
/// document binds; in a bound store R4 would be planned alone.)
#[test]
fn an_unbind_whose_session_came_back_live_after_planning_is_skipped() {
    let tmp = tempfile::tempdir().unwrap();
    let s = tmp.path();
    stores::store_with_thread(s, "host/runtime", "th1", Some("gamma"), 1);
    let mut opts = crate::common::repair_options(s);
    // A store of runtime stores only, as the test needs: no mark of a session store.
    opts.assume_session_store = true;
    opts.dry_run = true;
    opts.clock = Clock::Fixed(Timestamp::parse(NOW).unwrap());
    let dry = doctor::repair_sessions(&opts).unwrap();
    let kinds: Vec<_> = dry.plan.actions.iter().map(|a| a.action.kind()).collect();
    assert_eq!(
        kinds,
        [
            plan::ActionKind::UnbindThread,
            plan::ActionKind::RecoverThread
        ]
    );
    let plan_dir = tempfile::tempdir().unwrap();
    let plan_file = plan_dir.path().join("plan.json");
    std::fs::write(&plan_file, doctor::plan_file_bytes(&dry)).unwrap();
    let record = std::fs::read(s.join("host/runtime/threads/th1.json")).unwrap();

    // After planning, the host opens session gamma again.
    write(s, ".late-usage/gamma.live", "");
    let _host = hold(&[&s.join(".late-usage/gamma.live")]);
    let report =
        doctor::apply_plan_file(&plan_file, Clock::Fixed(Timestamp::parse(NOW).unwrap())).unwrap();
    let whys: Vec<_> = report
        .outcomes
        .iter()
        .map(|o| o.why.clone().unwrap_or_default())
        .collect();
    assert_eq!(whys, ["session is live", "changed since planned"]);
    assert_eq!(
        std::fs::read(s.join("host/runtime/threads/th1.json")).unwrap(),
        record
    );
    assert!(
        !s.join("th1.json").exists(),
        "no document was recovered for a live session's thread"
    );
}
