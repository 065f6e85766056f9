//! B1 against the real Go toolchain (Debian's `golang-go`; `.ci/run` installs it). The test is
//! never skipped: without `go` on `PATH` it fails and says how to install it.
//!
//! A small module is built with `GOTMPDIR` pointing at a temporary root (and `GOCACHE`,
//! `GOPATH`, `HOME` in temporary directories, `GOFLAGS=-mod=mod`, `GOTOOLCHAIN=local`,
//! `GOPROXY=off`: no network). Real work directories are leaked the two ways builds leak them:
//! `go build -work`, and a `go build` of a slow package killed with SIGKILL (its whole process
//! group, as a watchdog does) while `compile` runs. Two more are kept live: one by a `sleep`
//! whose cwd is inside it, one by a second slow `go build` still compiling. GOTMPDIR also
//! holds a marker file and a `go-build-base` directory. The sweep (`--min-age 0s`) must plan
//! and reclaim exactly the leaked ones, spare the live ones and leave the rest alone; once the
//! live processes are gone, the next sweep reclaims what they held, and a third plans nothing.

use std::collections::BTreeSet;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::common::Doctor;

/// The Go environment of the test, everything inside `tmp`.
struct GoEnv {
    tmp: PathBuf,
    gotmp: PathBuf,
    module: PathBuf,
}

impl GoEnv {
    fn new(tmp: &Path) -> GoEnv {
        let env = GoEnv {
            tmp: tmp.to_path_buf(),
            gotmp: tmp.join("gotmp"),
            module: tmp.join("mod"),
        };
        for d in ["gotmp", "gocache", "gopath", "home", "state", "mod/quick"] {
            std::fs::create_dir_all(tmp.join(d)).unwrap();
        }
        std::fs::write(
            env.module.join("go.mod"),
            "module example.com/leak\n\ngo 1.19\n",
        )
        .unwrap();
        std::fs::write(
            env.module.join("quick/quick.go"),
            "package quick\n\nfunc Add(a, b int) int { return a + b }\n",
        )
        .unwrap();
        env.write_slow_package("slow", 1);
        env.write_slow_package("slow2", 2);
        env
    }

    /// A package that takes the compiler seconds: hundreds of functions with large switches.
    fn write_slow_package(&self, name: &str, salt: u32) {
        let mut src = format!("package {name}\n\n");
        for i in 0..600 {
            src.push_str(&format!("func F{i}(x int) int {{\n\tswitch x {{\n"));
            for j in 0..60 {
                src.push_str(&format!("\tcase {j}:\n\t\treturn x*{} + {salt}\n", i + j));
            }
            src.push_str("\t}\n\treturn x\n}\n\n");
        }
        std::fs::create_dir_all(self.module.join(name)).unwrap();
        std::fs::write(self.module.join(name).join(format!("{name}.go")), src).unwrap();
    }

    fn go(&self, args: &[&str]) -> Command {
        let mut cmd = Command::new("go");
        cmd.args(args)
            .current_dir(&self.module)
            .env("HOME", self.tmp.join("home"))
            .env("GOCACHE", self.tmp.join("gocache"))
            .env("GOPATH", self.tmp.join("gopath"))
            .env("GOTMPDIR", &self.gotmp)
            .env("TMPDIR", &self.gotmp)
            .env("GOFLAGS", "-mod=mod")
            .env("GOTOOLCHAIN", "local")
            .env("GOPROXY", "off")
            .env("GOTELEMETRY", "off")
            .env("CGO_ENABLED", "0")
            .stdin(Stdio::null());
        cmd
    }

    fn work_dirs(&self) -> BTreeSet<String> {
        std::fs::read_dir(&self.gotmp)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|n| n.starts_with("go-build") && n != "go-build-base")
            .collect()
    }
}

/// A process group, killed with SIGKILL when dropped (or on `kill`).
struct Group {
    child: Child,
    killed: bool,
}

impl Group {
    fn spawn(cmd: &mut Command) -> Group {
        let child = cmd
            .process_group(0)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("spawn");
        Group {
            child,
            killed: false,
        }
    }

    fn kill(&mut self) {
        if std::mem::replace(&mut self.killed, true) {
            return;
        }
        let _ = Command::new("kill")
            .args(["-KILL", "--", &format!("-{}", self.child.id())])
            .stderr(Stdio::null())
            .status();
        let _ = self.child.wait();
        // The group's other members (compile) die with it; wait until none is left.
        let start = Instant::now();
        while group_alive(self.child.id()) && start.elapsed() < Duration::from_secs(10) {
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    fn running(&mut self) -> bool {
        matches!(self.child.try_wait(), Ok(None))
    }
}

impl Drop for Group {
    fn drop(&mut self) {
        self.kill();
    }
}

/// Whether any process of group `pgid` is alive (from `/proc/<pid>/stat`, field 5).
fn group_alive(pgid: u32) -> bool {
    std::fs::read_dir("/proc").unwrap().flatten().any(|e| {
        let stat = std::fs::read_to_string(e.path().join("stat")).unwrap_or_default();
        let Some(after) = stat.rsplit_once(") ") else {
            return false;
        };
        let fields: Vec<&str> = after.1.split(' ').collect();
        fields.first() != Some(&"Z") && fields.get(2) == Some(&pgid.to_string().as_str())
    })
}

/// Waits until a `compile` process is working in a work directory under `gotmp` that is not in
/// `known`; returns that directory's name.
fn wait_for_compile(gotmp: &Path, known: &BTreeSet<String>) -> String {
    let prefix = format!("{}/", gotmp.display());
    let start = Instant::now();
    loop {
        for e in std::fs::read_dir("/proc").unwrap().flatten() {
            let Ok(cmdline) = std::fs::read(e.path().join("cmdline")) else {
                continue;
            };
            let args: Vec<String> = cmdline
                .split(|b| *b == 0)
                .map(|a| String::from_utf8_lossy(a).into_owned())
                .collect();
            if !args.first().is_some_and(|a| a.ends_with("/compile")) {
                continue;
            }
            for a in &args {
                if let Some(rest) = a.strip_prefix(&prefix) {
                    let name = rest.split('/').next().unwrap_or_default().to_owned();
                    if name.starts_with("go-build") && !known.contains(&name) {
                        return name;
                    }
                }
            }
        }
        assert!(
            start.elapsed() < Duration::from_secs(30),
            "go build never started compiling under {}",
            gotmp.display()
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// `doctor --sweep-build-dirs --root <GOTMPDIR> --json <args>` on the system clock: its exit
/// code and its report.
fn doctor(env: &GoEnv, args: &[&str]) -> (i32, Value) {
    let out = Doctor::new()
        .arg("--sweep-build-dirs")
        .arg("--root")
        .arg(&env.gotmp)
        .arg("--json")
        .args(args)
        .env("XDG_STATE_HOME", env.tmp.join("state"))
        .run();
    (out.exit_code(), out.json())
}

fn planned(report: &Value) -> BTreeSet<String> {
    report["plan"]["actions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a["path"].as_str().unwrap().to_owned())
        .collect()
}

/// `name: bytes` of each planned action, for the log.
fn sizes(report: &Value) -> Vec<String> {
    report["plan"]["actions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| {
            format!(
                "{} {} B",
                a["path"].as_str().unwrap(),
                a["precondition"]["bytes"]
            )
        })
        .collect()
}

fn skipped_why(report: &Value, name: &str) -> String {
    report["skipped"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["path"] == name)
        .map(|s| s["why"].as_str().unwrap().to_owned())
        .unwrap_or_else(|| panic!("{name} is not reported as skipped: {report:#}"))
}

fn set(names: &[&String]) -> BTreeSet<String> {
    names.iter().map(|n| n.to_string()).collect()
}

#[test]
fn sweep_reclaims_exactly_the_work_dirs_real_go_builds_leaked() {
    let t0 = Instant::now();
    let version = Command::new("go").arg("version").output();
    let version = match version {
        Ok(out) if out.status.success() => String::from_utf8_lossy(&out.stdout).into_owned(),
        _ => panic!(
            "the real-Go test needs the Go toolchain on PATH (Debian: apt-get install -y \
             golang-go); .ci/run installs it before the tests"
        ),
    };
    let tmp = tempfile::Builder::new()
        .prefix("real-go-")
        .tempdir_in(env!("CARGO_TARGET_TMPDIR"))
        .unwrap();
    let env = GoEnv::new(tmp.path());
    std::fs::write(env.gotmp.join("notes.txt"), "not a work directory\n").unwrap();
    std::fs::create_dir_all(env.gotmp.join("go-build-base")).unwrap();
    std::fs::write(env.gotmp.join("go-build-base/keep"), "a comparison base\n").unwrap();

    // Leaked by `go build -work` (it prints WORK= and leaves the directory; `-a` makes it
    // compile rather than use the build cache).
    let mut known = env.work_dirs();
    let out = env
        .go(&["build", "-a", "-work", "./quick"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(String::from_utf8_lossy(&out.stderr).contains("WORK="));
    let after = env.work_dirs();
    let work_kept: Vec<&String> = after.difference(&known).collect();
    assert_eq!(
        work_kept.len(),
        1,
        "go build -work leaves one work dir: {after:?}"
    );
    let work_kept = work_kept[0].clone();
    known = after;

    // Another `go build -work` directory, kept live by a process whose cwd is inside it.
    let out = env
        .go(&["build", "-a", "-work", "./quick"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let after = env.work_dirs();
    let held_by_cwd = after.difference(&known).next().unwrap().clone();
    known = after;
    let mut sleeper = Group::spawn(
        Command::new("sleep")
            .arg("60")
            .current_dir(env.gotmp.join(&held_by_cwd).join("b001")),
    );

    // Leaked by a build killed with SIGKILL while compiling.
    let t_kill = Instant::now();
    let mut killed_build = Group::spawn(&mut env.go(&["build", "./slow"]));
    let killed = wait_for_compile(&env.gotmp, &known);
    std::thread::sleep(Duration::from_millis(300)); // mid-compile
    killed_build.kill();
    assert!(
        env.gotmp.join(&killed).is_dir(),
        "the killed build left {killed}"
    );
    known.insert(killed.clone());
    let kill_secs = t_kill.elapsed().as_secs_f64();

    // Kept live by a second slow build, still compiling during the sweep.
    let mut running_build = Group::spawn(&mut env.go(&["build", "./slow2"]));
    let running = wait_for_compile(&env.gotmp, &known);

    // With the default --min-age (30m) every one of them is too fresh.
    let (code, fresh) = doctor(&env, &["--dry-run"]);
    assert_eq!(code, 0);
    assert!(planned(&fresh).is_empty(), "{fresh:#}");
    assert!(skipped_why(&fresh, &killed).contains("within --min-age 30m"));

    // --min-age 0s: exactly the leaked ones.
    let t_sweep = Instant::now();
    let leaked = set(&[&work_kept, &killed]);
    let (code, dry) = doctor(&env, &["--dry-run", "--min-age", "0s"]);
    assert_eq!(code, 0, "{dry:#}");
    assert_eq!(planned(&dry), leaked, "the dry run plans the leaked ones");
    for live in [&held_by_cwd, &running] {
        let why = skipped_why(&dry, live);
        assert!(
            why.starts_with("referenced by a live process"),
            "{live}: {why}"
        );
    }
    assert!(skipped_why(&dry, "go-build-base").contains("not a name Go gives"));
    let (code, real) = doctor(&env, &["--min-age", "0s"]);
    assert_eq!(code, 0, "{real:#}");
    let sweep_secs = t_sweep.elapsed().as_secs_f64();
    assert_eq!(planned(&real), leaked, "the real run applies the same plan");
    assert!(
        running_build.running(),
        "the second build must still be compiling during the sweep, or it proved nothing"
    );
    let outcomes = real["outcomes"].as_array().unwrap();
    assert!(
        outcomes.iter().all(|o| o["outcome"] == "applied"),
        "{real:#}"
    );
    let bytes_freed = real["summary"]["bytes_freed"].as_u64().unwrap();
    let planned_bytes: u64 = dry["plan"]["actions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a["precondition"]["bytes"].as_u64().unwrap())
        .sum();
    assert_eq!(bytes_freed, planned_bytes);
    assert!(bytes_freed > 0, "real work dirs hold real files");
    for name in &leaked {
        assert!(!env.gotmp.join(name).exists(), "{name} was reclaimed");
    }
    for name in [&held_by_cwd, &running] {
        assert!(
            env.gotmp.join(name).is_dir(),
            "{name} is live and was spared"
        );
    }
    assert_eq!(
        std::fs::read_to_string(env.gotmp.join("notes.txt")).unwrap(),
        "not a work directory\n"
    );
    assert!(env.gotmp.join("go-build-base/keep").is_file());
    let skipped_names: Vec<String> = real["skipped"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| {
            format!(
                "{} ({})",
                s["path"].as_str().unwrap(),
                s["why"].as_str().unwrap()
            )
        })
        .collect();

    // Once their processes are gone, what they held is leaked too: the next run reclaims it.
    running_build.kill();
    sleeper.kill();
    let (code, later) = doctor(&env, &["--min-age", "0s"]);
    assert_eq!(code, 0, "{later:#}");
    assert_eq!(planned(&later), set(&[&held_by_cwd, &running]));
    let later_bytes = later["summary"]["bytes_freed"].as_u64().unwrap();
    let mut left: Vec<String> = std::fs::read_dir(&env.gotmp)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    left.sort();
    assert_eq!(
        left,
        ["go-build-base", "notes.txt"],
        "GOTMPDIR's other contents stay"
    );
    let (_, last) = doctor(&env, &["--dry-run", "--min-age", "0s"]);
    assert!(planned(&last).is_empty(), "{last:#}");

    eprintln!(
        "real Go ({}): leaked {work_kept} (go build -work) and {killed} (go build killed after \
         {kill_secs:.1}s); live {held_by_cwd} (cwd of sleep) and {running} (build compiling). \
         Sweep (dry + real, {sweep_secs:.2}s) reclaimed {:?}, {bytes_freed} bytes; \
         spared {skipped_names:?}. After the live processes ended: reclaimed {:?}, \
         {later_bytes} bytes. Total {:.1}s.",
        version.trim(),
        sizes(&real),
        sizes(&later),
        t0.elapsed().as_secs_f64()
    );
}
