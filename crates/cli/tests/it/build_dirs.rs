//! The build-dirs pack (B1) on fixture roots and through the binary.
//!
//! Fixture cases, for the one harness (`harness.rs`), live in `fixtures/build-dirs/<case>/`: a
//! root (`root/`, copied to a temp dir) and a `case.json` for what git cannot hold: symlinks,
//! owners, mtimes, empty directories and the live processes that reference a candidate (real
//! children: `sleep` with its cwd inside one, a shell holding a file open, a process with a
//! path in its environment or argv, a binary run from inside one). Every entry of the root is
//! three hours old unless the case says otherwise. Each case is swept through the library;
//! beyond what the harness shows and checks, the snapshot (`snapshots/build-dirs/<case>.snap`)
//! shows the receipts, and the test checks that a dry run creates no state directory, that
//! exactly the expected directories were reclaimed with the bytes planned and nothing else
//! changed, and that nothing outside the root changed either.
//!
//! The other tests cover the binary: the JSON output and receipts against their schemas, exit
//! codes (2, 3, 75, 1 when `/proc` is unusable), the bound, and a deletion killed halfway that
//! the next run finishes.

use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant, SystemTime};

use crate::common::case::{set_mtime_recursive, system_time};
use crate::common::{records, tree, Doctor, Holder, Redactions, Tree};
use crate::harness::{self, pretty, Pack, Sections};
use doctor::sweep::{sweep_build_dirs, SweepOptions, SweepReport};
use plan::Precondition;
use serde::Deserialize;
use serde_json::Value;
use store::Clock;

/// Every entry of a fixture root has this mtime unless the case sets another.
const DEFAULT_MTIME: &str = "2026-11-29T09:00:00Z";

/// `fixtures/build-dirs/<case>/case.json`, besides the keys the harness reads.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Case {
    #[serde(default)]
    min_age: Option<String>,
    #[serde(default)]
    chown: Vec<ChownSpec>,
    #[serde(default)]
    live: Vec<LiveSpec>,
    /// The entries of the root the real run must reclaim, exactly.
    expect_reclaimed: Vec<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct ChownSpec {
    path: String,
    uid: u32,
}

/// A live process referencing a path under the root in one way only.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, tag = "how", rename_all = "snake_case")]
enum LiveSpec {
    /// `sleep` whose working directory is `path`.
    Cwd { path: String },
    /// A process holding `path` open on fd 3.
    Fd { path: String },
    /// `sleep` with `X=<value>` in its environment (`[ROOT]` replaced).
    Env { value: String },
    /// A shell with `<value>` among its argv (`[ROOT]` replaced).
    Argv { value: String },
    /// `sleep` copied to `path` and run from there, argv[0] relative, cwd elsewhere.
    Map { path: String },
}

fn chown_recursive(path: &Path, uid: u32) -> std::io::Result<()> {
    std::os::unix::fs::lchown(path, Some(uid), None)?;
    if std::fs::symlink_metadata(path)?.is_dir() {
        for entry in std::fs::read_dir(path)? {
            chown_recursive(&entry?.path(), uid)?;
        }
    }
    Ok(())
}

fn am_root() -> bool {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    status
        .lines()
        .find_map(|l| l.strip_prefix("Uid:"))
        .and_then(|ids| ids.split_whitespace().next())
        == Some("0")
}

/// A live child process (and its process group), killed when dropped.
struct Live {
    child: Child,
}

/// A command with an empty environment but `PATH`, so that a live process references only
/// what the test gives it.
fn command(program: impl AsRef<std::ffi::OsStr>) -> Command {
    let mut cmd = Command::new(program);
    cmd.env_clear().env("PATH", "/usr/bin:/bin");
    cmd
}

impl Live {
    fn spawn(cmd: &mut Command) -> Live {
        cmd.process_group(0)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        Live {
            child: cmd.spawn().expect("start a live process"),
        }
    }

    fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Waits until `/proc/<pid>/<what>` satisfies `ready`.
    fn wait_until(&self, what: &str, ready: impl Fn(&Path) -> bool) {
        let p = PathBuf::from(format!("/proc/{}/{what}", self.pid()));
        let start = Instant::now();
        while !ready(&p) {
            assert!(
                start.elapsed() < Duration::from_secs(10),
                "live process {} never got ready ({what})",
                self.pid()
            );
            std::thread::sleep(Duration::from_millis(10));
        }
    }
}

impl Drop for Live {
    fn drop(&mut self) {
        let _ = Command::new("kill")
            .args(["-KILL", "--", &format!("-{}", self.pid())])
            .status();
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn sleep_binary() -> PathBuf {
    ["/usr/bin/sleep", "/bin/sleep"]
        .into_iter()
        .map(PathBuf::from)
        .find(|p| p.exists())
        .expect("a sleep binary")
}

fn start_live(spec: &LiveSpec, root: &Path, outside: &Path) -> Live {
    let subst = |v: &str| v.replace("[ROOT]", &root.to_string_lossy());
    match spec {
        LiveSpec::Cwd { path } => {
            Live::spawn(command("sleep").arg("60").current_dir(root.join(path)))
        }
        LiveSpec::Fd { path } => {
            let file = root.join(path);
            let live = Live::spawn(
                command("sh")
                    .args(["-c", "exec 3<\"$1\"; exec sleep 60", "sh"])
                    .arg(&file)
                    .current_dir(outside),
            );
            // Ready once the shell has become `sleep` (its argv no longer names the file)
            // holding the file on fd 3.
            live.wait_until("cmdline", |p| {
                std::fs::read(p).is_ok_and(|b| b.starts_with(b"sleep\0"))
            });
            live.wait_until("fd/3", |p| std::fs::read_link(p).is_ok_and(|t| t == file));
            live
        }
        LiveSpec::Env { value } => Live::spawn(
            command("sleep")
                .arg("60")
                .current_dir(outside)
                .env("X", subst(value)),
        ),
        LiveSpec::Argv { value } => {
            let live = Live::spawn(
                command("sh")
                    .args(["-c", "sleep 60; :", "sh"])
                    .arg(subst(value))
                    .current_dir(outside),
            );
            live.wait_until("cmdline", |p| std::fs::read(p).is_ok_and(|b| b.len() > 3));
            live
        }
        LiveSpec::Map { path } => Live::spawn(
            command(root.join(path))
                .arg0("sleeper")
                .arg("60")
                .current_dir(outside),
        ),
    }
}

/// A temp dir on the target's filesystem (binaries copied there can be run).
fn tempdir() -> tempfile::TempDir {
    tempfile::Builder::new()
        .prefix("b1-")
        .tempdir_in(env!("CARGO_TARGET_TMPDIR"))
        .unwrap()
}

/// A build-dirs case, set up: its `case.json`, the root, the directory beside it that no run may
/// touch, the state directory, the copies of `sleep` in the root, and the live processes.
struct BuildDirs {
    case: Case,
    root: PathBuf,
    outside: PathBuf,
    state: PathBuf,
    copied: Vec<String>,
    _live: Vec<Live>,
}

impl Pack for BuildDirs {
    const NAME: &'static str = "build-dirs";
    const MIN_CASES: usize = 10;
    /// On the target's filesystem: binaries copied there can be run.
    const TEMP_IN: &'static str = env!("CARGO_TARGET_TMPDIR");
    const ROOT: (&'static str, &'static str) = ("root", "root");
    type Case = Case;
    type Report = SweepReport;

    fn set_up(case: Case, _: &Path, root: &Path) -> Result<BuildDirs, &'static str> {
        if !case.chown.is_empty() && !am_root() {
            return Err("setting a foreign owner needs root");
        }
        // The root is `<tmp>/root`; `<tmp>/outside` holds `keep` and `dir/`, so that a relative
        // symlink target such as `../outside` (stable tree digests) works.
        let tmp = root.parent().unwrap();
        let outside = tmp.join("outside");
        std::fs::create_dir_all(outside.join("dir")).unwrap();
        std::fs::write(outside.join("keep"), "outside the root: never touched\n").unwrap();
        let mut copied = Vec::new();
        for spec in &case.live {
            if let LiveSpec::Map { path } = spec {
                let to = root.join(path);
                std::fs::create_dir_all(to.parent().unwrap()).unwrap();
                std::fs::copy(sleep_binary(), &to).unwrap();
                copied.push(path.clone());
            }
        }
        for entry in std::fs::read_dir(root).unwrap() {
            set_mtime_recursive(&entry.unwrap().path(), system_time(DEFAULT_MTIME));
        }
        for c in &case.chown {
            chown_recursive(&root.join(&c.path), c.uid)
                .unwrap_or_else(|e| panic!("chown {}: {e}", c.path));
        }
        let live = case.live.iter();
        let live = live.map(|spec| start_live(spec, root, &outside)).collect();
        Ok(BuildDirs {
            case,
            root: root.to_path_buf(),
            outside,
            state: tmp.join("state"),
            copied,
            _live: live,
        })
    }

    fn untouched(&self) -> Vec<(PathBuf, &'static str)> {
        vec![(self.outside.clone(), "something outside the root changed")]
    }

    fn run(&self, dry_run: bool, clock: Clock) -> SweepReport {
        let mut opts = SweepOptions::new();
        opts.roots = vec![self.root.clone()];
        opts.dry_run = dry_run;
        opts.clock = clock;
        if let Some(m) = &self.case.min_age {
            opts.min_age_secs = store::time::parse_duration(m).expect("min_age");
        }
        opts.state_dir = Some(self.state.clone());
        let fresh = !self.state.exists();
        let report = sweep_build_dirs(&opts)
            .unwrap_or_else(|e| panic!("sweep (dry_run: {dry_run}) failed: {e}"));
        let made = fresh && self.state.exists();
        assert!(!dry_run || !made, "a dry run creates no state directory");
        report
    }

    fn redactions(&self, runs: &[&str], _: &[&Tree]) -> Redactions {
        let paths = [
            (self.root.as_path(), "[ROOT]"),
            (self.outside.as_path(), "[OUTSIDE]"),
            (self.state.as_path(), "[STATE]"),
        ];
        Redactions::new(&paths, runs)
    }

    fn listed_as(&self, path: &str, _bytes: &[u8]) -> Option<String> {
        let copy = self.copied.iter().any(|c| c == path);
        copy.then(|| "file (a copy of sleep)".to_owned())
    }

    fn sections(&self, red: &Redactions, _: &Tree, _: &Tree, _: &SweepReport) -> Sections {
        let receipts = records(&self.state.join(doctor::sweep::RECEIPTS_FILE), red);
        vec![("[STATE]/build-dirs-receipts.jsonl", receipts)]
    }

    fn check_real_run(&self, _: usize, before: &Tree, after: &Tree, real: &SweepReport) {
        let expected = &self.case.expect_reclaimed;
        let reclaimed: Vec<&str> = real.plan.actions.iter().map(|a| a.path.as_str()).collect();
        assert_eq!(reclaimed, *expected, "what B1 reclaims");
        let planned_bytes: u64 = real
            .plan
            .actions
            .iter()
            .map(|a| match a.precondition {
                Precondition::Tree { bytes, .. } | Precondition::File { bytes, .. } => bytes,
            })
            .sum();
        assert_eq!(real.summary.bytes_freed, planned_bytes, "bytes freed");
        // Exactly the reclaimed trees are gone; everything else is as it was.
        for (path, node) in before {
            let top = path.components().next().unwrap().as_os_str();
            if expected.iter().any(|r| *r == top.to_string_lossy()) {
                assert!(!after.contains_key(path), "{} survived", path.display());
            } else {
                assert_eq!(after.get(path), Some(node), "{} changed", path.display());
            }
        }
    }
}

#[test]
fn fixture_cases() {
    harness::fixture_cases::<BuildDirs>();
}

// ---- the binary ------------------------------------------------------------------------

/// A root with `n` leaked work directories (three hours old), each holding two files.
fn leaked_root(n: usize) -> (tempfile::TempDir, PathBuf, PathBuf) {
    let tmp = tempdir();
    let root = tmp.path().join("root");
    let state = tmp.path().join("state");
    for i in 0..n {
        let d = root.join(format!("go-build{}", 3000 + i));
        std::fs::create_dir_all(d.join("b001")).unwrap();
        std::fs::write(d.join("b001/_pkg_.a"), vec![b'a'; 1000]).unwrap();
        std::fs::write(d.join("b001/importcfg"), "packagefile fmt=x\n").unwrap();
    }
    std::fs::create_dir_all(&root).unwrap();
    std::fs::write(root.join("marker"), "keep\n").unwrap();
    let old = SystemTime::now() - Duration::from_secs(3 * 3600);
    for entry in std::fs::read_dir(&root).unwrap() {
        set_mtime_recursive(&entry.unwrap().path(), old);
    }
    (tmp, root, state)
}

/// `doctor --sweep-build-dirs <args>`, its state under `state` (`XDG_STATE_HOME`), on the
/// system clock.
fn doctor(args: &[&str], state: &Path) -> Doctor {
    Doctor::new()
        .arg("--sweep-build-dirs")
        .args(args)
        .env("XDG_STATE_HOME", state)
}

fn schema(name: &str) -> jsonschema::Validator {
    let text = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join(format!("../../docs/schemas/{name}.schema.json")),
    )
    .unwrap();
    let value: Value = serde_json::from_str(&text).unwrap();
    jsonschema::draft202012::options()
        .should_validate_formats(true)
        .build(&value)
        .unwrap_or_else(|e| panic!("{name}.schema.json does not compile: {e}"))
}

#[track_caller]
fn assert_valid(name: &str, instance: &Value) {
    let v = schema(name);
    let errs: Vec<String> = v
        .iter_errors(instance)
        .map(|e| format!("{}: {e}", e.instance_path()))
        .collect();
    assert!(
        errs.is_empty(),
        "{name}.schema.json rejects a real output:\n{}\n{}",
        errs.join("\n"),
        pretty(instance)
    );
}

#[test]
fn json_output_and_receipts_follow_their_schemas_and_the_dry_run_is_the_plan() {
    let (_tmp, root, state) = leaked_root(2);
    let root_arg = root.to_str().unwrap();
    let dry = doctor(&["--root", root_arg, "--dry-run", "--json"], &state).run();
    assert_eq!(dry.code, Some(0), "{}", dry.stderr);
    let dry: Value = serde_json::from_str(&dry.stdout).expect("one JSON document on stdout");
    assert_valid("sweep-output", &dry);
    assert_eq!(dry["plan"]["actions"].as_array().unwrap().len(), 2);
    assert!(!state.exists(), "a dry run creates no state directory");
    assert_eq!(
        dry["liveness"],
        serde_json::json!(["cwd", "argv", "environ", "open files", "maps"]),
        "the report names the sources of liveness it read"
    );

    // The schema is no rubber stamp: it rejects what B1 must never output.
    let rejects = |what: &str, edit: &dyn Fn(&mut Value)| {
        let mut broken = dry.clone();
        edit(&mut broken);
        assert!(
            schema("sweep-output").iter_errors(&broken).next().is_some(),
            "sweep-output.schema.json accepts {what}"
        );
    };
    rejects("a look-alike name", &|v| {
        v["plan"]["actions"][0]["path"] = "go-build-base".into()
    });
    rejects("a nested path", &|v| {
        v["plan"]["actions"][0]["path"] = "go-build1/b001".into()
    });
    rejects("an action without a root", &|v| {
        v["plan"]["actions"][0]
            .as_object_mut()
            .unwrap()
            .remove("root");
    });
    rejects("a relative root", &|v| v["roots"][0] = "tmp".into());
    rejects("another action kind", &|v| {
        v["plan"]["actions"][0]["action"] = "set_aside".into()
    });
    rejects("a summary without bytes freed", &|v| {
        v["summary"].as_object_mut().unwrap().remove("bytes_freed");
    });

    let real = doctor(&["--root", root_arg, "--json"], &state).run();
    assert_eq!(real.code, Some(0), "{}", real.stderr);
    let real: Value = serde_json::from_str(&real.stdout).unwrap();
    assert_valid("sweep-output", &real);
    let strip = |v: &Value| {
        let mut actions = v["plan"]["actions"].as_array().unwrap().clone();
        for a in &mut actions {
            a.as_object_mut().unwrap().remove("reason"); // its age is in hours; still equal
        }
        actions
    };
    assert_eq!(
        strip(&dry),
        strip(&real),
        "the dry run's plan is the real run's"
    );
    assert_eq!(real["summary"]["dirs_reclaimed"], 2);
    assert_eq!(real["summary"]["bytes_freed"], 2 * (1000 + 18));
    let receipts =
        std::fs::read_to_string(state.join("doctor").join(doctor::sweep::RECEIPTS_FILE)).unwrap();
    assert_eq!(receipts.lines().count(), 2);
    for line in receipts.lines() {
        let v: Value = serde_json::from_str(line).unwrap();
        assert_valid("receipt-line", &v);
        assert_eq!(v["outcome"], "applied");
        assert_eq!(v["bytes_freed"], 1018);
        assert_eq!(v["root"], root_arg);
    }
    assert_eq!(
        std::fs::read_dir(&root).unwrap().count(),
        1,
        "only the marker is left"
    );
    assert!(
        std::fs::read_dir(state.join("doctor").join(exec::PENDING_DIR))
            .unwrap()
            .next()
            .is_none(),
        "no deletion is left pending"
    );
}

#[test]
fn exit_codes() {
    let (_tmp, root, state) = leaked_root(1);
    let root_arg = root.to_str().unwrap();
    let check = doctor(&["--root", root_arg, "--check"], &state).run();
    assert_eq!(
        check.code,
        Some(3),
        "--check with pending actions: {}",
        check.stderr
    );
    assert!(check.stdout.contains("would reclaim"), "{}", check.stdout);
    assert!(root.join("go-build3000").exists(), "--check writes nothing");

    let missing = doctor(&["--root", "/nonexistent/doctor-root"], &state).run();
    assert_eq!(missing.code, Some(2));
    assert!(
        missing.stderr.contains("/nonexistent/doctor-root"),
        "{}",
        missing.stderr
    );
    let bad = doctor(&["--min-age", "soon"], &state).run();
    assert_eq!(bad.code, Some(2), "a bad duration is a usage error");
    let both = doctor(&["--repair-sessions"], &state).run();
    assert_eq!(both.code, Some(2), "one command at a time");

    // Another sweep holds the lock: nothing is written, one line, 75.
    std::fs::create_dir_all(state.join("doctor")).unwrap();
    let holder = Holder::spawn(&[state.join("doctor").join(doctor::sweep::LOCK_FILE)]);
    let busy = doctor(&["--root", root_arg], &state).run();
    assert_eq!(busy.code, Some(75), "{}", busy.stderr);
    assert_eq!(busy.stderr.lines().count(), 1, "{}", busy.stderr);
    assert!(root.join("go-build3000").exists());
    drop(holder);

    let done = doctor(&["--root", root_arg], &state).run();
    assert_eq!(done.code, Some(0), "{}", done.stderr);
    assert!(!root.join("go-build3000").exists());
    let again = doctor(&["--root", root_arg, "--check"], &state).run();
    assert_eq!(
        again.code,
        Some(0),
        "nothing pending after a run: {}",
        again.stdout
    );
}

#[test]
fn an_unusable_proc_reclaims_nothing_and_fails() {
    let (_tmp, root, state) = leaked_root(1);
    let not_proc = tempdir();
    for proc_dir in [
        not_proc.path().to_path_buf(),
        not_proc.path().join("missing"),
    ] {
        for dry_run in [true, false] {
            let mut opts = SweepOptions::new();
            opts.roots = vec![root.clone()];
            opts.dry_run = dry_run;
            opts.proc_dir = proc_dir.clone();
            opts.state_dir = Some(state.clone());
            let err = sweep_build_dirs(&opts).expect_err("no liveness, no sweep");
            assert!(matches!(err, doctor::Error::NoProc(_)), "{err}");
            assert_eq!(err.exit_code(), 1);
            let msg = err.to_string();
            assert!(msg.contains("nothing was reclaimed"), "{msg}");
            assert!(
                msg.contains(&proc_dir.to_string_lossy().into_owned()),
                "{msg}"
            );
        }
    }
    assert!(root.join("go-build3000/b001/_pkg_.a").exists());
    assert!(!state.exists(), "nothing was written");
}

#[test]
fn the_bound_defers_the_rest_to_the_next_run() {
    let (_tmp, root, state) = leaked_root(3);
    let root_arg = root.to_str().unwrap();
    let first = doctor(
        &["--root", root_arg, "--max-actions", "1", "--json"],
        &state,
    )
    .run();
    assert_eq!(first.code, Some(0), "{}", first.stderr);
    let first: Value = serde_json::from_str(&first.stdout).unwrap();
    assert_eq!(first["plan"]["deferred"], 2);
    assert_eq!(first["summary"]["limit_reached"], true);
    assert_eq!(first["summary"]["dirs_reclaimed"], 1);
    assert!(!root.join("go-build3000").exists(), "plan order: by path");
    assert!(root.join("go-build3001").exists() && root.join("go-build3002").exists());
    let second = doctor(&["--root", root_arg, "--max-actions", "5"], &state).run();
    assert_eq!(second.code, Some(0));
    assert!(!root.join("go-build3001").exists() && !root.join("go-build3002").exists());
    assert!(root.join("marker").exists());
}

#[test]
fn a_deletion_killed_halfway_is_finished_by_the_next_run() {
    let (_tmp, root, state) = leaked_root(1);
    let dir = root.join("go-build3000");
    std::fs::create_dir_all(dir.join("b002")).unwrap();
    std::fs::write(dir.join("b002/_pkg_.a"), vec![b'b'; 500]).unwrap();
    std::fs::write(dir.join("b002/importcfg"), "x\n").unwrap();
    let old = SystemTime::now() - Duration::from_secs(3 * 3600);
    set_mtime_recursive(&dir, old);
    // With the state directories in place, the real run's mutations are: 1-2 the pending
    // record (1-5: temporary file created, written, synced, renamed, its directory synced),
    // 6-8 b001 (two files, then the directory), 9 the first file of b002. Stop before 9: b001
    // is gone, so the tree's own mtime is now fresh.
    std::fs::create_dir_all(state.join("doctor").join(exec::PENDING_DIR)).unwrap();
    let said = doctor(&["--root", root.to_str().unwrap()], &state)
        .killed_at("9")
        .expect("the run stops at mutation 9");
    let line = said.lines().next().unwrap_or_default();
    assert!(
        line.contains("fault point: stopped before mutation 9 (delete"),
        "{said}"
    );
    assert!(
        !dir.join("b001").exists(),
        "b001 was deleted before the kill"
    );
    assert!(
        dir.join("b002/_pkg_.a").exists(),
        "the kill cut the deletion short"
    );
    let mtime = std::fs::metadata(&dir).unwrap().modified().unwrap();
    assert!(
        mtime > SystemTime::now() - Duration::from_secs(600),
        "the cut-short tree looks fresh"
    );
    let receipts = state.join("doctor").join(doctor::sweep::RECEIPTS_FILE);
    assert!(!receipts.exists(), "the killed run receipted nothing");

    // The next run, with the default --min-age 30m, still finishes it.
    let dry = doctor(&["--root", root.to_str().unwrap(), "--dry-run"], &state).run();
    assert!(
        dry.stdout.contains("would reclaim") && dry.stdout.contains("finishing the deletion run"),
        "{}",
        dry.stdout
    );
    let next = doctor(&["--root", root.to_str().unwrap(), "--json"], &state).run();
    assert_eq!(next.code, Some(0), "{}", next.stderr);
    assert!(!dir.exists(), "the next run finished the deletion");
    let receipt: Value =
        serde_json::from_str(std::fs::read_to_string(&receipts).unwrap().trim()).unwrap();
    assert_eq!(receipt["outcome"], "applied");
    assert_eq!(receipt["bytes_freed"], 502, "what was left of the tree");
    assert!(receipt["finishes_run"].is_string(), "{receipt}");
    assert_valid("receipt-line", &receipt);
    assert!(
        std::fs::read_dir(state.join("doctor").join(exec::PENDING_DIR))
            .unwrap()
            .next()
            .is_none(),
        "nothing is left pending"
    );
    assert!(root.join("marker").exists());
}

#[test]
fn a_live_child_process_spares_its_directory_through_the_binary() {
    let (_tmp, root, state) = leaked_root(2);
    let live = Live::spawn(
        command("sleep")
            .arg("60")
            .current_dir(root.join("go-build3001/b001")),
    );
    let out = doctor(&["--root", root.to_str().unwrap()], &state).run();
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    assert!(!root.join("go-build3000").exists());
    assert!(
        root.join("go-build3001/b001/_pkg_.a").exists(),
        "{}",
        out.stdout
    );
    assert!(
        out.stdout.contains(&format!(
            "referenced by a live process: pid {} cwd",
            live.pid()
        )),
        "{}",
        out.stdout
    );
    drop(live);
    let out = doctor(&["--root", root.to_str().unwrap()], &state).run();
    assert_eq!(out.code, Some(0));
    assert!(
        !root.join("go-build3001").exists(),
        "reclaimed once its process is gone"
    );
}

/// A leaked work directory with two package directories, and a sibling directory that is no Go
/// work directory.
fn leaked_with_sibling() -> (tempfile::TempDir, PathBuf, PathBuf, Tree) {
    let (tmp, root, state) = leaked_root(1);
    let dir = root.join("go-build3000");
    std::fs::create_dir_all(dir.join("b002")).unwrap();
    std::fs::write(dir.join("b002/_pkg_.a"), vec![b'b'; 500]).unwrap();
    let other = root.join("other");
    std::fs::create_dir_all(other.join("deep")).unwrap();
    std::fs::write(other.join("notes.txt"), "not a work directory\n").unwrap();
    std::fs::write(other.join("deep/data"), vec![b'd'; 300]).unwrap();
    let old = SystemTime::now() - Duration::from_secs(3 * 3600);
    set_mtime_recursive(&dir, old);
    let before = tree(&other);
    (tmp, root, state, before)
}

/// While the sweep deletes a leaked work directory, a package directory it has listed but not
/// entered is swapped for a symlink to a sibling directory that is no work directory: the
/// delete walks held handles and never follows the link; the sibling is untouched.
#[test]
fn a_sweep_never_follows_a_directory_swapped_for_a_symlink() {
    let (_tmp, root, state, other_before) = leaked_with_sibling();
    let dir = root.join("go-build3000");
    let done = doctor(&["--root", root.to_str().unwrap()], &state).run_paused(vec![(
        "delete go-build3000/b001/_pkg_.a",
        Box::new(|| {
            std::fs::rename(dir.join("b002"), root.join("b002.moved")).unwrap();
            std::os::unix::fs::symlink("../other", dir.join("b002")).unwrap();
        }),
    )]);
    assert!(done.code.is_some(), "{}", done.stderr);
    assert_eq!(
        tree(&root.join("other")),
        other_before,
        "{}\n{}",
        done.stdout,
        done.stderr
    );
}

/// A bind mount inside a leaked work directory (of a sibling directory that is no work
/// directory): the sweep never crosses it, so not one file of the mounted directory is
/// deleted; the removal stops at the mount point with an error naming it. Needs root.
#[test]
fn a_sweep_never_crosses_a_bind_mount_inside_a_work_directory() {
    if !am_root() {
        println!("SKIPPED: bind mounts need root");
        return;
    }
    let (_tmp, root, state, other_before) = leaked_with_sibling();
    let point = root.join("go-build3000/b002/mnt");
    std::fs::create_dir_all(&point).unwrap();
    let mounted = Command::new("mount")
        .arg("--bind")
        .arg(root.join("other"))
        .arg(&point)
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if !mounted {
        println!("SKIPPED: mount --bind is not permitted here");
        return;
    }
    struct Unmount(PathBuf);
    impl Drop for Unmount {
        fn drop(&mut self) {
            let _ = Command::new("umount").arg("-l").arg(&self.0).status();
        }
    }
    let _unmount = Unmount(point.clone());
    set_mtime_recursive(
        &root.join("go-build3000"),
        SystemTime::now() - Duration::from_secs(3 * 3600),
    );
    let out = doctor(&["--root", root.to_str().unwrap()], &state).run();
    assert_eq!(tree(&root.join("other")), other_before, "{}", out.stdout);
    assert!(
        format!("{}{}", out.stdout, out.stderr).contains("mount point"),
        "the error names the mount point: {}\n{}",
        out.stdout,
        out.stderr
    );
}

// ---- processes the sweep cannot read, and mount points -----------------------------------

/// The uid the sweeps below run as, and another ordinary user: uids no other test runs as.
const SWEEPER: u32 = 65520;
const OTHER_USER: u32 = 65521;

/// A pid namespace (with its own mount namespace and `/proc`) of the test's own, so that a
/// sweep as [`SWEEPER`] sees only the processes the test starts in it. Outside it, every
/// machine runs root's processes an ordinary user cannot read, and any of them keeps every
/// directory. Its init is a `sleep` of [`SWEEPER`] in `/`, which that user reads and which
/// references nothing, and which reaps no child: a process the test kills there stays a
/// zombie, as under a careless parent, which the sweep must not count. Killing the init (on
/// drop) ends every process in the namespace.
struct PidNamespace {
    unshare: Live,
    init: u32,
}

impl PidNamespace {
    fn new() -> PidNamespace {
        PidNamespace::with_init(&[
            "setpriv",
            &format!("--reuid={SWEEPER}"),
            &format!("--regid={SWEEPER}"),
            "--clear-groups",
            "sleep",
            "600",
        ])
    }

    /// One whose init is `init` (a command that ends by running `sleep`).
    fn with_init(init: &[&str]) -> PidNamespace {
        let unshare = Live::spawn(
            command("unshare")
                .args([
                    "-p",
                    "-m",
                    "--fork",
                    "--mount-proc",
                    "--propagation",
                    "private",
                ])
                .args(init)
                .current_dir("/"),
        );
        let children = format!("/proc/{0}/task/{0}/children", unshare.pid());
        let start = Instant::now();
        let init = loop {
            let init = std::fs::read_to_string(&children)
                .ok()
                .and_then(|c| c.split_whitespace().next()?.parse::<u32>().ok());
            if let Some(pid) = init.filter(|pid| {
                std::fs::read_to_string(format!("/proc/{pid}/comm")).is_ok_and(|c| c == "sleep\n")
            }) {
                break pid;
            }
            assert!(
                start.elapsed() < Duration::from_secs(10),
                "the pid namespace's init never started (unshare -p --fork --mount-proc)"
            );
            std::thread::sleep(Duration::from_millis(10));
        };
        PidNamespace { unshare, init }
    }

    /// `program` run in this namespace (`nsenter`, from root).
    fn command(&self, program: &str) -> Command {
        let mut cmd = command("nsenter");
        cmd.args(["-t", &self.init.to_string(), "-p", "-m", "--", program]);
        cmd
    }
}

impl Drop for PidNamespace {
    fn drop(&mut self) {
        let _ = Command::new("kill")
            .args(["-KILL", &self.init.to_string()])
            .status();
        let _ = self.unshare.child.wait();
    }
}

/// A non-dumpable process in a [`PidNamespace`]; [`Agent::pid`] is its pid there.
struct Agent {
    _live: Live,
    pid: u32,
}

impl Agent {
    fn pid(&self) -> u32 {
        self.pid
    }
}

/// Hands a [`leaked_root`] to [`SWEEPER`]: the temp dir searchable by all, the root (and
/// everything in it) and the state directory owned by that user. Work directories stay
/// mode 0700, as Go creates them, but `open` ones are made 0755.
fn hand_to_sweeper(tmp: &Path, root: &Path, state: &Path, open: &[&str]) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(tmp, std::fs::Permissions::from_mode(0o755)).unwrap();
    std::fs::create_dir_all(state).unwrap();
    chown_recursive(root, SWEEPER).unwrap();
    chown_recursive(state, SWEEPER).unwrap();
    for entry in std::fs::read_dir(root).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            let name = path.file_name().unwrap().to_string_lossy().into_owned();
            let mode = if open.contains(&name.as_str()) {
                0o755
            } else {
                0o700
            };
            std::fs::set_permissions(&path, std::fs::Permissions::from_mode(mode)).unwrap();
        }
    }
}

/// A process of user `uid` in `ns`, working in `cwd`, that has made itself non-dumpable
/// (`prctl(PR_SET_DUMPABLE, 0)`, as ssh-agent and gpg-agent do): only root reads its `cwd`,
/// `environ`, `maps` and `fd/`. Returns once it has.
fn not_dumpable(uid: u32, cwd: &Path, ns: &PidNamespace) -> Agent {
    use std::io::BufRead;
    const SCRIPT: &str = "import ctypes, os, sys, time\n\
        os.chdir(os.environ['WORK_IN'])\n\
        if ctypes.CDLL(None, use_errno=True).prctl(4, 0, 0, 0, 0) != 0:\n\
        \x20   sys.exit('prctl(PR_SET_DUMPABLE) failed')\n\
        print('ready', os.getpid(), flush=True)\n\
        time.sleep(120)\n";
    let uid_arg = |flag: &str| format!("--{flag}={uid}");
    let mut child = ns
        .command("setpriv")
        .args([&uid_arg("reuid"), &uid_arg("regid"), "--clear-groups"])
        .args(["/usr/bin/python3", "-c", SCRIPT])
        // In the environment, which only the process itself (and root) can read: its argv
        // names nothing.
        .env("WORK_IN", cwd)
        .current_dir("/")
        .process_group(0)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("start a non-dumpable process (setpriv, /usr/bin/python3)");
    let mut line = String::new();
    std::io::BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let pid = line
        .strip_prefix("ready ")
        .and_then(|p| p.trim_end().parse().ok())
        .unwrap_or_else(|| panic!("the non-dumpable helper did not start: {line:?}"));
    Agent {
        _live: Live { child },
        pid,
    }
}

/// The `skipped` reasons of a sweep's JSON, by path.
fn skipped_whys(report: &Value) -> Vec<(String, String)> {
    report["skipped"]
        .as_array()
        .unwrap()
        .iter()
        .map(|k| {
            (
                k["path"].as_str().unwrap().to_owned(),
                k["why"].as_str().unwrap().to_owned(),
            )
        })
        .collect()
}

fn errors_text(report: &Value) -> String {
    report["summary"]["errors"].to_string()
}

/// Build-dirs.md rule 6 as an ordinary user: a non-dumpable process of that very user can
/// be in any of the user's directories and the sweep cannot read where, so nothing is
/// reclaimed, the reason names the process, and the run fails; once it is gone, the same
/// sweep reclaims both directories.
#[test]
fn a_process_of_the_invoking_user_that_cannot_be_read_keeps_every_directory() {
    if !am_root() {
        println!("SKIPPED: running as another uid needs root");
        return;
    }
    let (tmp, root, state) = leaked_root(2);
    let ns = PidNamespace::new();
    hand_to_sweeper(tmp.path(), &root, &state, &[]);
    let agent = not_dumpable(SWEEPER, &root.join("go-build3001/b001"), &ns);
    let root_arg = root.to_str().unwrap();
    let out = doctor(&["--root", root_arg, "--json"], &state)
        .by_user(SWEEPER)
        .entering(ns.init)
        .run();
    assert_eq!(out.code, Some(1), "{}\n{}", out.stdout, out.stderr);
    assert!(root.join("go-build3000/b001/_pkg_.a").exists());
    assert!(root.join("go-build3001/b001/_pkg_.a").exists());
    let report: Value = serde_json::from_str(&out.stdout).unwrap();
    assert_valid("sweep-output", &report);
    let why = format!(
        "not known to be unused: pid {} runs as the invoking user (uid {SWEEPER}) and its cwd, \
         environ, maps, fd cannot be read",
        agent.pid()
    );
    assert_eq!(
        skipped_whys(&report),
        [
            ("go-build3000".to_owned(), why.clone()),
            ("go-build3001".to_owned(), why)
        ]
    );
    assert!(
        errors_text(&report).contains("not every process could be read, so 2 directories"),
        "{}",
        errors_text(&report)
    );
    // The dry run and --check say the same, and fail alike.
    let check = doctor(&["--root", root_arg, "--check"], &state)
        .by_user(SWEEPER)
        .entering(ns.init)
        .run();
    assert_eq!(check.code, Some(1), "{}", check.stdout);
    drop(agent);
    let out = doctor(&["--root", root_arg], &state)
        .by_user(SWEEPER)
        .entering(ns.init)
        .run();
    assert_eq!(out.code, Some(0), "{}\n{}", out.stdout, out.stderr);
    assert!(!root.join("go-build3000").exists() && !root.join("go-build3001").exists());
}

/// Another ordinary user's process cannot be read either, but it can only be inside a
/// directory that lets other users in: a work directory Go made (0700) is still reclaimed,
/// one opened to others (0755) is kept, with why, and the run fails.
#[test]
fn another_users_process_that_cannot_be_read_keeps_only_directories_open_to_it() {
    if !am_root() {
        println!("SKIPPED: running as another uid needs root");
        return;
    }
    let (tmp, root, state) = leaked_root(2);
    let ns = PidNamespace::new();
    hand_to_sweeper(tmp.path(), &root, &state, &["go-build3001"]);
    let theirs = not_dumpable(OTHER_USER, &root.join("go-build3001"), &ns);
    let out = doctor(&["--root", root.to_str().unwrap(), "--json"], &state)
        .by_user(SWEEPER)
        .entering(ns.init)
        .run();
    assert_eq!(out.code, Some(1), "{}\n{}", out.stdout, out.stderr);
    assert!(!root.join("go-build3000").exists(), "0700: reclaimed");
    assert!(root.join("go-build3001/b001/_pkg_.a").exists());
    let report: Value = serde_json::from_str(&out.stdout).unwrap();
    let skipped = skipped_whys(&report);
    assert_eq!(skipped.len(), 1, "{skipped:?}");
    let (path, why) = &skipped[0];
    assert_eq!(path, "go-build3001");
    assert_eq!(
        why,
        &format!(
            "not known to be unused: pid {} of uid {OTHER_USER} cannot be read, and the \
             directory lets other users in (mode 0755)",
            theirs.pid()
        )
    );
    drop(theirs);
    assert!(errors_text(&report).contains("so 1 directory that one of them may be using was"));
}

/// Root's process (a daemon, or a build run with `sudo` or `doas`) enters a 0700 work
/// directory as easily as an open one, and an ordinary user cannot read where it works: the
/// sweep keeps every directory, names the process and how to read it, and fails. (Here a root
/// `sleep` whose working directory is inside one; its argv names nothing.)
#[test]
fn a_privileged_process_that_cannot_be_read_keeps_every_directory() {
    const CAPS: &str = "+sys_ptrace,+dac_read_search";
    if !am_root() {
        println!("SKIPPED: running as another uid needs root");
        return;
    }
    let (tmp, root, state) = leaked_root(2);
    let ns = PidNamespace::new();
    hand_to_sweeper(tmp.path(), &root, &state, &[]);
    let inside = root.join("go-build3001/b001");
    let daemon = Live::spawn(
        ns.command("sh")
            .args(["-c", "cd \"$WORK_IN\" && exec sleep 120"])
            .env("WORK_IN", &inside),
    );
    // The root `sleep` is nsenter's child; its pid in the namespace is the last of `NSpid`.
    let children = format!("/proc/{0}/task/{0}/children", daemon.pid());
    let start = Instant::now();
    let pid = loop {
        let host = std::fs::read_to_string(&children)
            .ok()
            .and_then(|c| c.split_whitespace().next()?.parse::<u32>().ok());
        let ready = host.filter(|h| {
            std::fs::read_link(format!("/proc/{h}/cwd")).is_ok_and(|c| c == inside)
                && std::fs::read_to_string(format!("/proc/{h}/comm")).is_ok_and(|c| c == "sleep\n")
        });
        if let Some(h) = ready {
            let status = std::fs::read_to_string(format!("/proc/{h}/status")).unwrap();
            let nspid = status
                .lines()
                .find_map(|l| l.strip_prefix("NSpid:"))
                .unwrap();
            break nspid
                .split_whitespace()
                .last()
                .unwrap()
                .parse::<u32>()
                .unwrap();
        }
        assert!(
            start.elapsed() < Duration::from_secs(10),
            "the root sleep never started"
        );
        std::thread::sleep(Duration::from_millis(10));
    };
    let root_arg = root.to_str().unwrap();
    let out = doctor(&["--root", root_arg, "--json"], &state)
        .by_user(SWEEPER)
        .entering(ns.init)
        .run();
    assert_eq!(out.code, Some(1), "{}\n{}", out.stdout, out.stderr);
    assert!(
        root.join("go-build3001/b001/_pkg_.a").exists(),
        "the one it works in"
    );
    assert!(
        root.join("go-build3000/b001/_pkg_.a").exists(),
        "{}",
        out.stdout
    );
    let report: Value = serde_json::from_str(&out.stdout).unwrap();
    let whys = skipped_whys(&report);
    assert_eq!(whys.len(), 2, "{whys:?}");
    for (_, why) in &whys {
        assert!(
            why.starts_with(&format!(
                "not known to be unused: pid {pid} runs privileged (uid 0 with capabilities "
            )) && why.ends_with(
                "so it can enter any directory, and its cwd, environ, maps, fd cannot be read \
                 (a sweep given CAP_SYS_PTRACE and CAP_DAC_READ_SEARCH can read it)"
            ),
            "{why}"
        );
    }
    assert!(errors_text(&report).contains("so 2 directories"));
    // Given CAP_SYS_PTRACE (the ptrace access check) and CAP_DAC_READ_SEARCH (`environ` and
    // `fd/` are root's, mode 0400 and 0500), as the reason says, the same user's sweep reads
    // it: the directory it works in is spared by its cwd, the other one is reclaimed.
    let out = ns
        .command("setpriv")
        .args([format!("--reuid={SWEEPER}"), format!("--regid={SWEEPER}")])
        .args(["--clear-groups", "--inh-caps", CAPS, "--ambient-caps", CAPS])
        .arg(env!("CARGO_BIN_EXE_doctor"))
        .args(["--sweep-build-dirs", "--json", "--root", root_arg])
        .env("XDG_STATE_HOME", &state)
        .output()
        .expect("run nsenter");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{stdout}");
    assert!(!root.join("go-build3000").exists(), "{stdout}");
    let report: Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(
        skipped_whys(&report),
        [(
            "go-build3001".to_owned(),
            format!(
                "referenced by a live process: pid {pid} cwd {}",
                inside.display()
            )
        )]
    );
    // Once it has exited (a zombie, not reaped: it holds nothing), the sweep without the
    // capability reclaims the directory too.
    drop(daemon);
    let out = doctor(&["--root", root_arg], &state)
        .by_user(SWEEPER)
        .entering(ns.init)
        .run();
    assert_eq!(out.code, Some(0), "{}\n{}", out.stdout, out.stderr);
    assert!(!root.join("go-build3001").exists());
}

/// A root sweep whose bounding set a service manager shrank (here `setpriv --bounding-set
/// -sys_ptrace`, so it cannot read root's processes that hold `CAP_SYS_PTRACE`) cannot tell
/// those from outsiders of its container by their capabilities: pid 1's bounding set is
/// larger than its own, so such a process is root's like the sweep and keeps every directory.
#[test]
fn a_root_sweep_with_a_shrunk_bounding_set_counts_roots_unread_processes() {
    if !am_root() {
        println!("SKIPPED: a pid namespace needs root");
        return;
    }
    let (_tmp, root, state) = leaked_root(2);
    let ns = PidNamespace::with_init(&["sleep", "600"]);
    let out = ns
        .command("setpriv")
        .args(["--bounding-set", "-sys_ptrace", "--"])
        .arg(env!("CARGO_BIN_EXE_doctor"))
        .args(["--sweep-build-dirs", "--json", "--root"])
        .arg(&root)
        .env("XDG_STATE_HOME", &state)
        .output()
        .expect("run nsenter");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stdout}\n{stderr}");
    assert!(root.join("go-build3000/b001/_pkg_.a").exists(), "{stdout}");
    assert!(root.join("go-build3001/b001/_pkg_.a").exists(), "{stdout}");
    let report: Value = serde_json::from_str(&stdout).unwrap();
    let whys = skipped_whys(&report);
    assert_eq!(whys.len(), 2, "{whys:?}");
    for (_, why) in whys {
        assert!(
            why.starts_with("not known to be unused: pid 1 runs as the invoking user (uid 0)"),
            "{why}"
        );
    }
}

/// The executor applies the same rule to its fresh read of `/proc` right before each
/// deletion: a non-dumpable process of the invoking user that starts while the first
/// directory is being deleted keeps the second.
#[test]
fn a_process_that_cannot_be_read_found_right_before_a_deletion_keeps_the_directory() {
    if !am_root() {
        println!("SKIPPED: running as another uid needs root");
        return;
    }
    let (tmp, root, state) = leaked_root(2);
    let ns = PidNamespace::new();
    hand_to_sweeper(tmp.path(), &root, &state, &[]);
    let elsewhere = tmp.path().join("elsewhere");
    std::fs::create_dir(&elsewhere).unwrap();
    chown_recursive(&elsewhere, SWEEPER).unwrap();
    let agent = std::cell::RefCell::new(None);
    let out = doctor(&["--root", root.to_str().unwrap(), "--json"], &state)
        .by_user(SWEEPER)
        .entering(ns.init)
        .run_paused(vec![(
            "delete go-build3000/b001/_pkg_.a",
            Box::new(|| *agent.borrow_mut() = Some(not_dumpable(SWEEPER, &elsewhere, &ns))),
        )]);
    assert_eq!(out.code, Some(1), "{}\n{}", out.stdout, out.stderr);
    assert!(
        !root.join("go-build3000").exists(),
        "planned and deleted first"
    );
    assert!(
        root.join("go-build3001/b001/_pkg_.a").exists(),
        "{}",
        out.stdout
    );
    let report: Value = serde_json::from_str(&out.stdout).unwrap();
    let outcome = &report["outcomes"][1];
    assert_eq!(outcome["outcome"], "skipped", "{outcome}");
    let pid = agent.borrow().as_ref().unwrap().pid();
    assert!(
        outcome["why"].as_str().unwrap().starts_with(&format!(
            "not known to be unused: pid {pid} runs as the invoking user"
        )),
        "{outcome}"
    );
    assert!(errors_text(&report).contains("not every process could be read"));
}

/// Whether this machine lets the tests mount inside a mount namespace of their own (root
/// in a container without `CAP_SYS_ADMIN` does not).
fn can_mount_in_a_namespace() -> bool {
    command("unshare")
        .args([
            "-m",
            "--propagation",
            "private",
            "mount",
            "-t",
            "tmpfs",
            "none",
            "/mnt",
        ])
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// `doctor <args>` as [`SWEEPER`] in `ns`, inside a mount namespace of its own whose `/proc` is
/// a fresh procfs of `ns` mounted with `options`, its state under `state`.
fn sweep_in_private_proc(
    ns: &PidNamespace,
    options: &str,
    args: &[&str],
    state: &Path,
) -> std::process::Output {
    let script = "mount -t proc -o \"$1\" proc /proc || exit 99; shift; exec \"$@\"";
    let mut cmd = ns.command("unshare");
    cmd.args([
        "-m",
        "--propagation",
        "private",
        "sh",
        "-c",
        script,
        "sh",
        options,
    ])
    .arg("setpriv")
    .args([format!("--reuid={SWEEPER}"), format!("--regid={SWEEPER}")])
    .arg("--clear-groups")
    .arg(env!("CARGO_BIN_EXE_doctor"))
    .arg("--sweep-build-dirs")
    .args(args)
    .env("XDG_STATE_HOME", state);
    let out = cmd.output().expect("run unshare");
    assert_ne!(
        out.status.code(),
        Some(99),
        "mount -t proc -o {options} failed"
    );
    out
}

/// A `/proc` mounted `hidepid=invisible` shows an ordinary user only its own processes: the
/// sweep cannot know what the others use, so it reclaims nothing, names the mount option and
/// fails. Without it (the same private mount, no `hidepid`), it reclaims what it may.
#[test]
fn a_proc_that_hides_processes_reclaims_nothing() {
    if !am_root() {
        println!("SKIPPED: mount namespaces and other uids need root");
        return;
    }
    if !can_mount_in_a_namespace() {
        println!("SKIPPED: mounting in a mount namespace is not permitted here");
        return;
    }
    let (tmp, root, state) = leaked_root(2);
    let ns = PidNamespace::new();
    hand_to_sweeper(tmp.path(), &root, &state, &["go-build3001"]);
    let theirs = not_dumpable(OTHER_USER, &root.join("go-build3001"), &ns);
    let root_arg = root.to_str().unwrap();
    let out = sweep_in_private_proc(
        &ns,
        "hidepid=invisible",
        &["--root", root_arg, "--json"],
        &state,
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        out.status.code(),
        Some(1),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(root.join("go-build3000/b001/_pkg_.a").exists(), "{stdout}");
    assert!(root.join("go-build3001/b001/_pkg_.a").exists(), "{stdout}");
    let report: Value = serde_json::from_str(&stdout)
        .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out.stderr)));
    let why = "not known to be unused: the process table may hide processes (mounted with \
               hidepid=invisible)";
    assert_eq!(
        skipped_whys(&report),
        [
            ("go-build3000".to_owned(), why.to_owned()),
            ("go-build3001".to_owned(), why.to_owned())
        ]
    );
    // The same private procfs without hidepid: the 0700 directory is reclaimed, the one the
    // other user's process may be in is kept.
    let out = sweep_in_private_proc(&ns, "rw", &["--root", root_arg, "--json"], &state);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{stdout}");
    assert!(!root.join("go-build3000").exists(), "{stdout}");
    assert!(root.join("go-build3001").exists(), "{stdout}");
    drop(theirs);
}

/// A work directory that is itself a mount point (a tmpfs mounted at `go-build<n>`, inside a
/// mount namespace of the test's own): B1 spares it with why, nothing in the mounted
/// filesystem is deleted, and the ordinary directory beside it is reclaimed.
#[test]
fn a_work_directory_that_is_a_mount_point_is_never_reclaimed() {
    if !am_root() {
        println!("SKIPPED: mounting a tmpfs needs root");
        return;
    }
    if !can_mount_in_a_namespace() {
        println!("SKIPPED: mounting in a mount namespace is not permitted here");
        return;
    }
    let (tmp, root, state) = leaked_root(2);
    let point = root.join("go-build3001");
    let report_file = tmp.path().join("report.json");
    let old = (SystemTime::now() - Duration::from_secs(3 * 3600))
        .duration_since(SystemTime::UNIX_EPOCH)
        .unwrap()
        .as_secs();
    // The paths come on stdin, so that the shell, alive while the doctor runs, references
    // none of them through its argv or environment.
    let script = r#"set -e
        read -r point; read -r old; read -r doctor; read -r root; read -r report
        mount -t tmpfs -o mode=0700 none "$point"
        mkdir "$point/b001"
        echo data > "$point/b001/_pkg_.a"
        touch -d "@$old" "$point/b001" "$point"
        set +e
        "$doctor" --sweep-build-dirs --root "$root" --json > "$report"
        echo "rc=$?"
        test -f "$point/b001/_pkg_.a" && echo survived"#;
    let mut child = command("unshare")
        .args(["-m", "--propagation", "private", "sh", "-c", script])
        .current_dir("/")
        .env("XDG_STATE_HOME", &state)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run unshare");
    let lines = [
        point.clone(),
        PathBuf::from(old.to_string()),
        PathBuf::from(env!("CARGO_BIN_EXE_doctor")),
        root.clone(),
        report_file.clone(),
    ];
    {
        use std::io::Write;
        let mut stdin = child.stdin.take().unwrap();
        for l in &lines {
            writeln!(stdin, "{}", l.display()).unwrap();
        }
    }
    let out = child.wait_with_output().unwrap();
    let said = String::from_utf8_lossy(&out.stdout);
    let report = std::fs::read_to_string(&report_file).unwrap_or_default();
    assert!(
        said.contains("rc=0") && said.contains("survived"),
        "{said}\n{}\n{report}",
        String::from_utf8_lossy(&out.stderr)
    );
    let report: Value = serde_json::from_str(&report).unwrap();
    assert_eq!(
        skipped_whys(&report),
        [(
            "go-build3001".to_owned(),
            "a mount point (another filesystem than its root's): never reclaimed".to_owned()
        )]
    );
    assert!(
        !root.join("go-build3000").exists(),
        "the ordinary one is reclaimed"
    );
}

/// A directory mounted over a planned work directory between planning and deletion: the
/// executor's check right before deleting finds the mount point and skips it, naming why, and
/// nothing of the mounted directory is deleted. (A bind mount in the test's own namespace,
/// unmounted when done.) Needs root.
#[test]
fn a_work_directory_mounted_over_after_planning_is_skipped_by_the_executor() {
    if !am_root() {
        println!("SKIPPED: bind mounts need root");
        return;
    }
    let (tmp, root, state) = leaked_root(2);
    let source = tmp.path().join("source");
    std::fs::create_dir_all(source.join("b001")).unwrap();
    std::fs::write(source.join("b001/_pkg_.a"), "mounted\n").unwrap();
    let point = root.join("go-build3001");
    struct Unmount(PathBuf);
    impl Drop for Unmount {
        fn drop(&mut self) {
            let _ = Command::new("umount").arg("-l").arg(&self.0).status();
        }
    }
    let mounted = std::cell::RefCell::new(None);
    let out = doctor(&["--root", root.to_str().unwrap(), "--json"], &state).run_paused(vec![(
        "delete go-build3000/b001/_pkg_.a",
        Box::new(|| {
            let ok = Command::new("mount")
                .arg("--bind")
                .arg(&source)
                .arg(&point)
                .status()
                .is_ok_and(|s| s.success());
            assert!(ok, "mount --bind");
            *mounted.borrow_mut() = Some(Unmount(point.clone()));
        }),
    )]);
    assert_eq!(out.code, Some(0), "{}\n{}", out.stdout, out.stderr);
    let report: Value = serde_json::from_str(&out.stdout).unwrap();
    assert_eq!(report["outcomes"][0]["outcome"], "applied");
    assert_eq!(
        report["outcomes"][1]["why"],
        "now a mount point (another filesystem than its root's): never reclaimed",
        "{}",
        report["outcomes"]
    );
    assert_eq!(
        std::fs::read_to_string(source.join("b001/_pkg_.a")).unwrap(),
        "mounted\n"
    );
    drop(mounted);
}

/// A process whose main thread has exited (`pthread_exit`) while another thread runs on: its
/// leader is a zombie with no working directory, memory or descriptors of its own, but the
/// process still works inside the directory. The sweep reads it through the live thread and
/// spares the directory.
#[test]
fn a_process_whose_leader_exited_is_read_through_its_live_thread() {
    const SCRIPT: &str = "import ctypes, os, threading, time\n\
        os.chdir(os.environ['WORK_IN'])\n\
        threading.Thread(target=time.sleep, args=(120,)).start()\n\
        ctypes.CDLL(None).pthread_exit(None)\n";
    let (_tmp, root, state) = leaked_root(2);
    let live = Live::spawn(
        command("python3")
            .args(["-c", SCRIPT])
            .env("WORK_IN", root.join("go-build3001/b001"))
            .current_dir("/"),
    );
    live.wait_until("status", |p| {
        std::fs::read_to_string(p)
            .is_ok_and(|s| s.contains("State:\tZ (zombie)") && s.contains("Threads:\t2"))
    });
    let out = doctor(&["--root", root.to_str().unwrap(), "--json"], &state).run();
    assert_eq!(out.code, Some(0), "{}\n{}", out.stdout, out.stderr);
    assert!(!root.join("go-build3000").exists(), "{}", out.stdout);
    assert!(
        root.join("go-build3001/b001/_pkg_.a").exists(),
        "{}",
        out.stdout
    );
    let report: Value = serde_json::from_str(&out.stdout).unwrap();
    let whys = skipped_whys(&report);
    assert_eq!(whys.len(), 1, "{whys:?}");
    assert!(
        whys[0]
            .1
            .starts_with(&format!("referenced by a live process: pid {}", live.pid())),
        "{whys:?}"
    );
}
