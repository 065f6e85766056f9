//! No leaked handles (invariants.md, "filesystem access is received"): the library's entry
//! points (`repair_sessions` dry and real, `apply_plan_file`, `status`) are called 100 times in
//! one process, on runs that succeed and runs that fail, and the set of open file descriptors of
//! the process (`/proc/self/fd`) must be the same before and after.
//!
//! The tests of one binary run as threads of one process, and any other test would open and
//! close descriptors while this one counts: the test runs its count in a process of its own (this
//! test binary again, filtered to this one test, `DOCTOR_FD_LEAK_ALONE` set).
//!
//! The failing runs: S missing; S a regular file; S mode 000 (tests run as root, where mode 000
//! does not stop reads: the run succeeds, and still must not leak); `.reconcile.lock` held by
//! another process (`hold-lock`), for a repair and for `--apply-plan`; a store the kernel
//! refuses to change even for root (`chattr +i`: every rename out of it fails with EPERM) and a
//! whole S that is immutable (the lock file cannot be created); `.reconcile.lock` that is a
//! directory; a fifo in place of a store; a saved plan whose precondition no longer holds; plan
//! files that are missing, not JSON, or name a missing S.

use std::collections::BTreeMap;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use crate::common::Holder;
use crate::stores::{rich_store, write, NOW, RICH_ACTIONS};
use doctor::{Error, RepairOptions};
use plan::OutcomeKind;
use store::{Clock, Timestamp};

fn clock() -> Clock {
    Clock::Fixed(Timestamp::parse(NOW).unwrap())
}

fn opts(s: &Path, dry_run: bool) -> RepairOptions {
    let mut o = crate::common::repair_options(s);
    o.dry_run = dry_run;
    o.clock = clock();
    o
}

/// Every open descriptor of this process and what it refers to, without the one `read_dir`
/// uses to list them.
fn open_fds() -> BTreeMap<String, String> {
    let listing = format!("/proc/{}/fd", std::process::id());
    let mut out = BTreeMap::new();
    for e in std::fs::read_dir("/proc/self/fd").expect("list /proc/self/fd") {
        let e = e.unwrap();
        let Ok(target) = std::fs::read_link(e.path()) else {
            continue;
        };
        let target = target.to_string_lossy().into_owned();
        if target != listing {
            out.insert(e.file_name().to_string_lossy().into_owned(), target);
        }
    }
    out
}

/// `chattr +i`/`-i` on `path`; `false` when the filesystem or the user cannot.
fn chattr(flag: &str, path: &Path) -> bool {
    Command::new("chattr")
        .arg(flag)
        .arg(path)
        .output()
        .map(|o| o.status.success())
        .unwrap_or(false)
}

/// Makes `path` immutable for as long as it lives, and mutable again on drop, so the temporary
/// directory can be removed even when an assertion fails.
struct Immutable(PathBuf);

impl Immutable {
    fn set(path: &Path) -> Option<Immutable> {
        chattr("+i", path).then(|| Immutable(path.to_path_buf()))
    }
}

impl Drop for Immutable {
    fn drop(&mut self) {
        chattr("-i", &self.0);
    }
}

/// What the 100 runs did, for the report line.
#[derive(Default)]
struct Tally {
    calls: usize,
    ok: usize,
    errors: BTreeMap<&'static str, usize>,
    failed_actions: usize,
    skipped_actions: usize,
}

impl Tally {
    fn result<T>(&mut self, r: Result<T, Error>) -> Option<T> {
        self.calls += 1;
        match r {
            Ok(v) => {
                self.ok += 1;
                Some(v)
            }
            Err(e) => {
                let kind = match e {
                    Error::MissingDir(_) => "missing directory",
                    Error::Busy(_) => "busy",
                    Error::BadPlan(_) => "bad plan",
                    Error::Fs(_) => "filesystem",
                    _ => "other",
                };
                *self.errors.entry(kind).or_default() += 1;
                None
            }
        }
    }

    fn report(&mut self, r: Result<doctor::RepairReport, Error>) -> Option<doctor::RepairReport> {
        let report = self.result(r)?;
        for o in &report.outcomes {
            match o.outcome {
                OutcomeKind::Failed => self.failed_actions += 1,
                OutcomeKind::Skipped => self.skipped_actions += 1,
                OutcomeKind::Applied => {}
            }
        }
        Some(report)
    }
}

/// A fresh rich store at `<tmp>/S`.
fn rich() -> (tempfile::TempDir, PathBuf) {
    let tmp = tempfile::tempdir().unwrap();
    let s = tmp.path().join("S");
    rich_store(&s);
    (tmp, s)
}

/// Writes the plan of a dry run of `s` to `<dir>/plan.json`.
fn save_plan(t: &mut Tally, s: &Path, dir: &Path) -> PathBuf {
    let dry = t.report(doctor::repair_sessions(&opts(s, true))).unwrap();
    let file = dir.join("plan.json");
    std::fs::write(&file, doctor::plan_file_bytes(&dry)).unwrap();
    file
}

/// One scenario; `i` picks which. Each asserts what the library must say, so a scenario that
/// stopped failing (or started) is noticed, not just counted.
fn scenario(i: usize, t: &mut Tally, chattr_works: bool) {
    match i % 12 {
        // Success: dry run, real run with every kind of action, status.
        0 => {
            let (_tmp, s) = rich();
            let dry = t.report(doctor::repair_sessions(&opts(&s, true))).unwrap();
            assert_eq!(dry.plan.actions.len(), RICH_ACTIONS, "{:?}", dry.plan);
            let real = t.report(doctor::repair_sessions(&opts(&s, false))).unwrap();
            assert!(
                real.outcomes
                    .iter()
                    .all(|o| o.outcome == OutcomeKind::Applied),
                "{:?}",
                real.outcomes
            );
            let status = t.result(doctor::status(&opts(&s, true))).unwrap();
            assert_eq!(status.pending_actions, 0);
        }
        // Success: a saved plan applied exactly.
        1 => {
            let (tmp, s) = rich();
            let plan = save_plan(t, &s, tmp.path());
            let applied = t.report(doctor::apply_plan_file(&plan, clock())).unwrap();
            assert_eq!(applied.outcomes.len(), RICH_ACTIONS);
        }
        // S does not exist.
        2 => {
            let tmp = tempfile::tempdir().unwrap();
            let s = tmp.path().join("missing");
            for dry in [true, false] {
                let r = doctor::repair_sessions(&opts(&s, dry));
                assert!(matches!(r, Err(Error::MissingDir(_))), "{r:?}");
                t.report(r);
            }
            let r = doctor::status(&opts(&s, true));
            assert!(matches!(r, Err(Error::MissingDir(_))), "{r:?}");
            t.result(r);
        }
        // S is a regular file.
        3 => {
            let tmp = tempfile::tempdir().unwrap();
            let s = tmp.path().join("S");
            std::fs::write(&s, b"not a directory").unwrap();
            for dry in [true, false] {
                let r = doctor::repair_sessions(&opts(&s, dry));
                assert!(matches!(r, Err(Error::MissingDir(_))), "{r:?}");
                t.report(r);
            }
            t.result(doctor::status(&opts(&s, true)));
        }
        // S mode 000: refused for an ordinary user; as root it is read anyway. Either way, no
        // descriptor may stay open.
        4 => {
            let (_tmp, s) = rich();
            std::fs::set_permissions(&s, std::fs::Permissions::from_mode(0o000)).unwrap();
            t.report(doctor::repair_sessions(&opts(&s, true)));
            t.report(doctor::repair_sessions(&opts(&s, false)));
            std::fs::set_permissions(&s, std::fs::Permissions::from_mode(0o755)).unwrap();
        }
        // `.reconcile.lock` held by another process: a repair and an apply-plan are refused.
        5 => {
            let (tmp, s) = rich();
            let plan = save_plan(t, &s, tmp.path());
            let _holder = Holder::spawn(&[s.join(".reconcile.lock")]);
            let r = doctor::repair_sessions(&opts(&s, false));
            assert!(matches!(r, Err(Error::Busy(_))), "{r:?}");
            t.report(r);
            let r = doctor::apply_plan_file(&plan, clock());
            assert!(matches!(r, Err(Error::Busy(_))), "{r:?}");
            t.report(r);
            // A dry run takes no lock: it still plans.
            t.report(doctor::repair_sessions(&opts(&s, true))).unwrap();
        }
        // A store the kernel refuses to change, even for root: its set-aside fails (EPERM),
        // the run goes on and reports it.
        6 if chattr_works => {
            let (_tmp, s) = rich();
            let _guard = Immutable::set(&s.join("empty/runtime")).expect("chattr +i");
            let real = t.report(doctor::repair_sessions(&opts(&s, false))).unwrap();
            let failed: Vec<_> = real
                .outcomes
                .iter()
                .filter(|o| o.outcome == OutcomeKind::Failed)
                .collect();
            assert_eq!(failed.len(), 1, "{:?}", real.outcomes);
        }
        // An immutable S: the lock file cannot be created, the run fails before planning.
        7 if chattr_works => {
            let (_tmp, s) = rich();
            let _guard = Immutable::set(&s).expect("chattr +i");
            let r = doctor::repair_sessions(&opts(&s, false));
            assert!(matches!(r, Err(Error::Fs(_))), "{r:?}");
            t.report(r);
            t.report(doctor::repair_sessions(&opts(&s, true))).unwrap();
        }
        // Without chattr: `.reconcile.lock` is a directory, so it cannot be locked.
        6..=8 => {
            let (_tmp, s) = rich();
            std::fs::create_dir(s.join(".reconcile.lock")).unwrap();
            let r = doctor::repair_sessions(&opts(&s, false));
            assert!(matches!(r, Err(Error::Fs(_))), "{r:?}");
            t.report(r);
        }
        // A fifo in place of a store, a socket in place of a document: never opened.
        9 => {
            let (_tmp, s) = rich();
            std::fs::create_dir_all(s.join("fifo")).unwrap();
            let ok = Command::new("mkfifo")
                .arg(s.join("fifo/runtime"))
                .status()
                .is_ok_and(|st| st.success());
            assert!(ok, "mkfifo");
            drop(std::os::unix::net::UnixListener::bind(s.join("sock.json")).unwrap());
            t.report(doctor::repair_sessions(&opts(&s, true))).unwrap();
            t.report(doctor::repair_sessions(&opts(&s, false))).unwrap();
        }
        // A precondition that fails: plan, change the document, apply the plan.
        10 => {
            let (tmp, s) = rich();
            let plan = save_plan(t, &s, tmp.path());
            write(&s, "torn.json", b"changed since the plan was made");
            let applied = t.report(doctor::apply_plan_file(&plan, clock())).unwrap();
            let torn = applied
                .plan
                .actions
                .iter()
                .find(|a| a.path == "torn.json")
                .unwrap();
            let outcome = applied.outcomes.iter().find(|o| o.seq == torn.seq).unwrap();
            assert_eq!(outcome.outcome, OutcomeKind::Skipped);
            assert_eq!(outcome.why.as_deref(), Some("changed since planned"));
        }
        // Plan files that cannot be used.
        _ => {
            let (tmp, s) = rich();
            let r = doctor::apply_plan_file(&tmp.path().join("no-such-plan.json"), clock());
            assert!(matches!(r, Err(Error::BadPlan(_))), "{r:?}");
            t.report(r);
            let garbage = tmp.path().join("garbage.json");
            std::fs::write(&garbage, b"{\"schema_version\": 1, \"plan\": ").unwrap();
            let r = doctor::apply_plan_file(&garbage, clock());
            assert!(matches!(r, Err(Error::BadPlan(_))), "{r:?}");
            t.report(r);
            let plan = save_plan(t, &s, tmp.path());
            std::fs::rename(&s, tmp.path().join("moved")).unwrap();
            let r = doctor::apply_plan_file(&plan, clock());
            assert!(matches!(r, Err(Error::MissingDir(_))), "{r:?}");
            t.report(r);
        }
    }
}

/// Set in the process that runs [`a_hundred_runs_that_succeed_and_fail_leave_no_descriptor_open`]
/// alone.
const ALONE: &str = "DOCTOR_FD_LEAK_ALONE";

/// Runs the test `name` of this module in a process of its own: this test binary again, with
/// [`ALONE`] set, one test thread and a filter that matches that one test exactly. Fails when
/// it fails, or when it did not run.
fn run_alone(name: &str) {
    let name = format!("{}::{name}", module_path!().split_once("::").unwrap().1);
    let out = Command::new(std::env::current_exe().unwrap())
        .args([name.as_str(), "--exact", "--test-threads=1", "--nocapture"])
        .env(ALONE, "1")
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    print!("{stdout}");
    assert!(
        out.status.success(),
        "{name}, run alone, failed:\n{stdout}\n{stderr}"
    );
    assert!(
        stdout.contains("test result: ok. 1 passed"),
        "{name}, run alone, did not run:\n{stdout}\n{stderr}"
    );
}

#[test]
fn a_hundred_runs_that_succeed_and_fail_leave_no_descriptor_open() {
    if std::env::var_os(ALONE).is_none() {
        return run_alone("a_hundred_runs_that_succeed_and_fail_leave_no_descriptor_open");
    }
    let chattr_works = {
        let tmp = tempfile::tempdir().unwrap();
        let probe = tmp.path().join("probe");
        std::fs::create_dir(&probe).unwrap();
        Immutable::set(&probe).is_some()
    };
    if !chattr_works {
        println!(
            "chattr +i is not available here (not root, or the filesystem lacks it): the \
             immutable-store scenarios use a .reconcile.lock directory instead"
        );
    }

    let first = open_fds();
    // One warm-up round of every scenario, so that whatever a library opens once per process
    // (none is known) is not mistaken for a leak; both counts are asserted.
    let mut warm = Tally::default();
    for i in 0..12 {
        scenario(i, &mut warm, chattr_works);
    }
    let before = open_fds();

    let mut t = Tally::default();
    for i in 0..100 {
        scenario(i, &mut t, chattr_works);
    }
    let after = open_fds();

    println!(
        "{} scenarios, {} library calls: {} ok, errors {:?}, {} actions failed, {} skipped; \
         open descriptors: {} at start, {} before, {} after",
        100,
        t.calls,
        t.ok,
        t.errors,
        t.failed_actions,
        t.skipped_actions,
        first.len(),
        before.len(),
        after.len()
    );
    assert_eq!(after, before, "descriptors leaked by the 100 runs");
    assert_eq!(
        after, first,
        "descriptors leaked since the start of the test"
    );
    assert!(t.calls >= 100);
    for kind in ["missing directory", "busy", "bad plan", "filesystem"] {
        assert!(t.errors.contains_key(kind), "no run failed with {kind}");
    }
    assert!(t.failed_actions > 0 || !chattr_works);
    assert!(t.skipped_actions > 0);
}
