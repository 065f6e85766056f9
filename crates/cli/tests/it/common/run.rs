//! The one way the tests run the `doctor` binary: [`Doctor`], a builder over
//! `std::process::Command` with the environment every run needs, optionally as user 65534, under
//! a memory limit, on a pseudo-terminal or with a timeout, and the protocols built on it: a run
//! paused inside mutation windows ([`Doctor::run_paused`]), a run killed at a fault point
//! ([`Doctor::killed_at`]) and the traced list of a repair's mutations ([`traced_mutations`]).

use std::ffi::{OsStr, OsString};
use std::io::{BufRead, BufReader, Read, Write};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// The path of the `doctor` binary under test.
const DOCTOR_BIN: &str = env!("CARGO_BIN_EXE_doctor");

/// Where the runs of the tests keep their verdict caches (`XDG_CACHE_HOME`): under the target
/// directory, or the temporary directory where that path means nothing (Wine).
pub fn test_cache_home() -> std::path::PathBuf {
    let target = Path::new(env!("CARGO_TARGET_TMPDIR"));
    if target.is_absolute() {
        target.join("xdg-cache")
    } else {
        std::env::temp_dir().join("doctor-tests-xdg-cache")
    }
}

/// The variables of the doctor's hidden hooks, its clock and its logs. Every run starts without
/// them, whatever the environment of `cargo test`, and sets the ones it needs.
const HOOKS_CLOCK_AND_LOGS: &[&str] = &[
    "DOCTOR_NOW",
    "DOCTOR_FAULT_AT",
    "DOCTOR_FAULT_TRACE",
    "DOCTOR_PAUSE_BEFORE",
    "DOCTOR_LOG",
    "RUST_LOG",
];

/// A run of the `doctor` binary, built up before it starts. Its stdin is empty (`/dev/null`)
/// unless a protocol below needs it.
#[must_use]
pub struct Doctor {
    args: Vec<OsString>,
    /// In order; `None` removes the variable.
    env: Vec<(OsString, Option<OsString>)>,
    /// Runs as this uid (and gid), with no supplementary groups.
    user: Option<u32>,
    /// Runs in the pid and mount namespaces of this process.
    namespace_of: Option<u32>,
    mem_limit: Option<u64>,
    file_size_limit: Option<u64>,
    terminal: bool,
    timeout: Option<Duration>,
}

/// What a run printed and how it ended.
#[derive(Debug)]
pub struct Ran {
    /// The exit code; `None` only when the run was killed: [`Doctor::run`] fails the test when
    /// a signal ended a run that had not timed out.
    pub code: Option<i32>,
    pub stdout: String,
    pub stderr: String,
    /// Killed because it outlived its [`Doctor::timeout`].
    pub timed_out: bool,
}

/// One pause window of [`Doctor::run_paused`]: the text of the mutation to pause before, and
/// what to do inside it.
pub type Window<'a> = (&'a str, Box<dyn FnOnce() + 'a>);

impl Doctor {
    /// `doctor` with no arguments yet.
    pub fn new() -> Doctor {
        Doctor {
            args: Vec::new(),
            env: Vec::new(),
            user: None,
            namespace_of: None,
            mem_limit: None,
            file_size_limit: None,
            terminal: false,
            timeout: None,
        }
    }

    pub fn arg(mut self, arg: impl AsRef<OsStr>) -> Doctor {
        self.args.push(arg.as_ref().to_owned());
        self
    }

    pub fn args<I, A>(mut self, args: I) -> Doctor
    where
        I: IntoIterator<Item = A>,
        A: AsRef<OsStr>,
    {
        self.args
            .extend(args.into_iter().map(|a| a.as_ref().to_owned()));
        self
    }

    /// `--sessions-dir <s>`.
    pub fn sessions_dir(self, s: &Path) -> Doctor {
        self.arg("--sessions-dir").arg(s)
    }

    /// `DOCTOR_NOW=<now>`: the run's clock.
    pub fn now(self, now: &str) -> Doctor {
        self.env("DOCTOR_NOW", now)
    }

    pub fn env(mut self, key: impl AsRef<OsStr>, value: impl AsRef<OsStr>) -> Doctor {
        self.env
            .push((key.as_ref().to_owned(), Some(value.as_ref().to_owned())));
        self
    }

    pub fn env_remove(mut self, key: impl AsRef<OsStr>) -> Doctor {
        self.env.push((key.as_ref().to_owned(), None));
        self
    }

    /// Runs as user and group 65534 with no supplementary groups (`setpriv`; needs root).
    pub fn by_nobody(self) -> Doctor {
        self.by_user(65534)
    }

    /// Runs as user and group `uid` with no supplementary groups (`setpriv`; needs root).
    pub fn by_user(mut self, uid: u32) -> Doctor {
        self.user = Some(uid);
        self
    }

    /// Runs in the pid and mount namespaces of process `pid` (`nsenter`; needs root), so that
    /// it sees only that namespace's processes.
    pub fn entering(mut self, pid: u32) -> Doctor {
        self.namespace_of = Some(pid);
        self
    }

    /// Runs under an address-space limit of `bytes` (`prlimit --as`).
    pub fn mem_limit(mut self, bytes: u64) -> Doctor {
        self.mem_limit = Some(bytes);
        self
    }

    /// Runs with no file growing past `bytes` (`prlimit --fsize`) and `SIGXFSZ` ignored, so a
    /// write past the limit is cut short by the kernel: the part below the limit is written and
    /// the rest fails with `EFBIG`, as on a full quota.
    pub fn file_size_limit(mut self, bytes: u64) -> Doctor {
        self.file_size_limit = Some(bytes);
        self
    }

    /// Runs with stdin, stdout and stderr on a pseudo-terminal (util-linux `script`); both
    /// arrive on [`Ran::stdout`].
    pub fn on_a_terminal(mut self) -> Doctor {
        self.terminal = true;
        self
    }

    /// Kills the run once it has taken longer than `timeout` ([`Ran::timed_out`]).
    pub fn timeout(mut self, timeout: Duration) -> Doctor {
        self.timeout = Some(timeout);
        self
    }

    /// The command line as a `Command`, stdin empty, stdout and stderr inherited.
    pub fn command(self) -> Command {
        let mut argv: Vec<OsString> = Vec::new();
        if let Some(pid) = self.namespace_of {
            argv.extend(["nsenter", "-t", &pid.to_string(), "-p", "-m", "--"].map(OsString::from));
        }
        if let Some(limit) = self.mem_limit {
            argv.extend([
                "prlimit".into(),
                format!("--as={limit}").into(),
                "--".into(),
            ]);
        }
        if let Some(limit) = self.file_size_limit {
            argv.extend(
                [
                    "prlimit".into(),
                    format!("--fsize={limit}"),
                    "--".into(),
                    "sh".into(),
                    "-c".into(),
                    "trap '' XFSZ; exec \"$@\"".into(),
                    "sh".into(),
                ]
                .map(OsString::from),
            );
        }
        if let Some(uid) = self.user {
            argv.extend(
                [
                    "setpriv".to_owned(),
                    format!("--reuid={uid}"),
                    format!("--regid={uid}"),
                    "--clear-groups".to_owned(),
                    "--".to_owned(),
                ]
                .map(OsString::from),
            );
        }
        argv.push(DOCTOR_BIN.into());
        argv.extend(self.args);
        if self.terminal {
            let line: Vec<String> = argv.iter().map(|a| shell_quoted(a)).collect();
            argv = ["script", "-qec", &line.join(" "), "/dev/null"]
                .map(OsString::from)
                .to_vec();
        }
        let mut cmd = Command::new(&argv[0]);
        cmd.args(&argv[1..]).stdin(Stdio::null());
        for var in HOOKS_CLOCK_AND_LOGS {
            cmd.env_remove(var);
        }
        // The verdict cache of every run goes to the tests' own directory, never the user's.
        cmd.env("XDG_CACHE_HOME", test_cache_home());
        for (key, value) in &self.env {
            match value {
                Some(v) => cmd.env(key, v),
                None => cmd.env_remove(key),
            };
        }
        cmd
    }

    /// Runs to the end (or to the timeout) and collects what it printed. A run that a signal
    /// ended before its timeout fails the test.
    pub fn run(self) -> Ran {
        let timeout = self.timeout;
        let mut cmd = self.command();
        let mut child = cmd
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap_or_else(|e| panic!("spawn {cmd:?}: {e}"));
        let stdout = read_all(child.stdout.take().unwrap());
        let stderr = read_all(child.stderr.take().unwrap());
        let (status, timed_out) = match timeout {
            None => (child.wait().unwrap(), false),
            Some(timeout) => wait_at_most(&mut child, timeout),
        };
        let ran = Ran {
            code: status.code(),
            stdout: utf8(stdout, "stdout"),
            stderr: utf8(stderr, "stderr"),
            timed_out,
        };
        assert!(
            ran.code.is_some() || timed_out,
            "doctor exited by a signal ({status}): {}",
            ran.said()
        );
        ran
    }

    /// Runs with one pause window per entry of `windows` (`DOCTOR_PAUSE_BEFORE`, texts joined
    /// by `|`): the run stops before the first mutation whose description contains the text,
    /// the entry's closure changes the store inside that window, then the run goes on. A race
    /// becomes a deterministic test.
    pub fn run_paused(self, windows: Vec<Window<'_>>) -> Ran {
        let texts: Vec<&str> = windows.iter().map(|(t, _)| *t).collect();
        let pause = texts.join("|");
        let mut child = self
            .env("DOCTOR_PAUSE_BEFORE", &pause)
            .command()
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let stdout = read_all(child.stdout.take().unwrap());
        let mut err = BufReader::new(child.stderr.take().unwrap());
        let mut stderr = String::new();
        let mut stdin = child.stdin.take().unwrap();
        for (_, during) in windows {
            loop {
                let mut line = String::new();
                if err.read_line(&mut line).unwrap() == 0 {
                    panic!("the doctor ended without pausing before {pause:?}: {stderr}");
                }
                stderr.push_str(&line);
                if line.contains("fault point: paused") {
                    break;
                }
            }
            during();
            stdin.write_all(b"\n").unwrap();
            stdin.flush().unwrap();
        }
        drop(stdin);
        err.read_to_string(&mut stderr).unwrap();
        let status = child.wait().unwrap();
        Ran {
            code: status.code(),
            stdout: utf8(stdout, "stdout"),
            stderr,
            timed_out: false,
        }
    }

    /// Runs with the fault hook at `spec` (`DOCTOR_FAULT_AT`) and kills the run with SIGKILL
    /// when it stops there. Returns what it printed on stderr up to and including the line
    /// saying so; `None` when it finished without reaching the point, which it must then have
    /// done successfully.
    pub fn killed_at(self, spec: &str) -> Option<String> {
        let mut child = self
            .env("DOCTOR_FAULT_AT", spec)
            .command()
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let mut said = String::new();
        for line in BufReader::new(child.stderr.take().unwrap()).lines() {
            let line = line.unwrap();
            said.push_str(&line);
            said.push('\n');
            if line.contains("fault point: stopped") {
                child.kill().unwrap(); // SIGKILL
                child.wait().unwrap();
                return Some(said);
            }
        }
        let status = child.wait().unwrap();
        assert!(
            status.success(),
            "an unfaulted run must succeed: {status}\n{said}"
        );
        None
    }
}

impl Ran {
    /// The exit code; panics when a signal ended the run.
    #[track_caller]
    pub fn exit_code(&self) -> i32 {
        self.code
            .unwrap_or_else(|| panic!("doctor exited by a signal: {}", self.said()))
    }

    /// Everything the run printed, for a failure message.
    pub fn said(&self) -> String {
        format!("stdout:\n{}\nstderr:\n{}", self.stdout, self.stderr)
    }

    /// Stdout as the one JSON document `--json` prints.
    #[track_caller]
    pub fn json(&self) -> serde_json::Value {
        serde_json::from_str(&self.stdout).unwrap_or_else(|e| {
            panic!(
                "stdout is not one JSON document ({e}); exit {:?}\n{}",
                self.code,
                self.said()
            )
        })
    }
}

/// The mutations a real repair of `s` makes, traced (`DOCTOR_FAULT_TRACE=1`): number and
/// description, in order. The run changes `s`: run it on an identical copy (the sequence is
/// the same for the same store).
pub fn traced_mutations(s: &Path, now: &str) -> Vec<(u64, String)> {
    let out = Doctor::new()
        .args(["--repair-sessions", "--json"])
        .sessions_dir(s)
        .now(now)
        .env("DOCTOR_FAULT_TRACE", "1")
        .run();
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

/// Reads `from` to its end in a thread, so that a full pipe never stops the child.
fn read_all(mut from: impl Read + Send + 'static) -> JoinHandle<Vec<u8>> {
    std::thread::spawn(move || {
        let mut bytes = Vec::new();
        from.read_to_end(&mut bytes).unwrap();
        bytes
    })
}

/// The doctor prints UTF-8, whatever the names it reports.
#[track_caller]
fn utf8(reader: JoinHandle<Vec<u8>>, what: &str) -> String {
    let bytes = reader.join().unwrap();
    String::from_utf8(bytes).unwrap_or_else(|e| {
        panic!(
            "the doctor's {what} is not UTF-8 ({e}): {}",
            String::from_utf8_lossy(e.as_bytes())
        )
    })
}

/// Waits for `child`, killing it after `timeout`; returns its status and whether it was
/// killed.
fn wait_at_most(child: &mut Child, timeout: Duration) -> (std::process::ExitStatus, bool) {
    let start = Instant::now();
    let mut pause = Duration::from_millis(1);
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            return (status, false);
        }
        if start.elapsed() > timeout {
            let _ = child.kill();
            return (child.wait().unwrap(), true);
        }
        std::thread::sleep(pause);
        pause = (pause * 2).min(Duration::from_millis(20));
    }
}

/// `arg` for `sh -c`, in single quotes.
fn shell_quoted(arg: &OsStr) -> String {
    format!("'{}'", arg.to_string_lossy().replace('\'', r"'\''"))
}

/// [`doctor::RepairOptions::new`] for an in-process run of the tests: its verdict cache goes to
/// [`test_cache_home`], never the user's.
pub fn repair_options(s: impl Into<std::path::PathBuf>) -> doctor::RepairOptions {
    let mut opts = doctor::RepairOptions::new(s);
    opts.cache_dir = Some(test_cache_home().join("doctor"));
    opts
}
