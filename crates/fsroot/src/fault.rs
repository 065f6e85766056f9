//! The mutation counter of the one write seam, and the hidden fault hooks the tests use:
//! `DOCTOR_FAULT_AT=N` stops the process just before its Nth filesystem mutation,
//! `DOCTOR_FAULT_AT=N:after` just after it. Stopped means: a line on stderr, then waiting to be
//! killed (the test sends SIGKILL), so no destructor, flush or unlock of ours runs after it.
//! `DOCTOR_FAULT_AT=N:fail` makes the Nth mutation fail with `EIO` without doing it (a failed
//! `fsync` after a rename that happened, say). `DOCTOR_FAULT_AT=N:pause` pauses just before the
//! Nth mutation, and
//! `DOCTOR_PAUSE_BEFORE=TEXT` before the first mutation whose description (`<what> <path>`)
//! contains TEXT (`A|B`: once before the first match of each): a line on stderr, then it waits for one line on standard input and goes on.
//! A race test changes the store inside that window, deterministically.
//! `DOCTOR_FAULT_TRACE=1` prints every mutation with its number, so a test can find the number
//! of the one it wants to fail, stop or pause at.

use std::io::Write;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::OnceLock;

/// One line on stderr; a line stderr does not take (its reader gone) is dropped, never a panic.
macro_rules! say {
    ($($arg:tt)*) => {{
        let _ = writeln!(std::io::stderr(), $($arg)*);
    }};
}

static MUTATIONS: AtomicU64 = AtomicU64::new(0);

#[derive(Clone, Copy, PartialEq, Eq)]
enum When {
    Before,
    After,
    Pause,
    Fail,
}

#[derive(Clone, Copy)]
struct FaultAt {
    n: u64,
    when: When,
}

fn fault_at() -> Option<FaultAt> {
    static AT: OnceLock<Option<FaultAt>> = OnceLock::new();
    *AT.get_or_init(|| {
        let v = std::env::var("DOCTOR_FAULT_AT").ok()?;
        let (n, when) = match v.split_once(':') {
            Some((n, "after")) => (n, When::After),
            Some((n, "pause")) => (n, When::Pause),
            Some((n, "fail")) => (n, When::Fail),
            Some(_) => return None,
            None => (v.as_str(), When::Before),
        };
        Some(FaultAt {
            n: n.parse().ok()?,
            when,
        })
    })
}

fn pause(n: u64, described: &str) {
    say!("doctor: fault point: paused before mutation {n} ({described})");
    let mut line = String::new();
    let _ = std::io::stdin().read_line(&mut line);
}

fn stop(n: u64, when: &str, what: &str, path: &Path) -> ! {
    say!(
        "doctor: fault point: stopped {when} mutation {n} ({what} {})",
        shown(path)
    );
    loop {
        std::thread::sleep(std::time::Duration::from_secs(3600));
    }
}

fn trace() -> bool {
    static ON: OnceLock<bool> = OnceLock::new();
    *ON.get_or_init(|| std::env::var_os("DOCTOR_FAULT_TRACE").is_some_and(|v| v == "1"))
}

fn pause_before() -> Option<&'static str> {
    static AT: OnceLock<Option<String>> = OnceLock::new();
    AT.get_or_init(|| {
        std::env::var("DOCTOR_PAUSE_BEFORE")
            .ok()
            .filter(|t| !t.is_empty())
    })
    .as_deref()
}

/// Pauses before the first mutation that matches `DOCTOR_PAUSE_BEFORE`; with several texts
/// separated by `|`, once before the first match of each, in the order they are met.
fn maybe_pause(n: u64, what: &str, path: &Path) {
    static DONE: std::sync::Mutex<Vec<usize>> = std::sync::Mutex::new(Vec::new());
    let Some(texts) = pause_before() else {
        return;
    };
    let described = format!("{what} {}", shown(path));
    let Some(i) = texts
        .split('|')
        .enumerate()
        .find(|(_, t)| !t.is_empty() && described.contains(t))
        .map(|(i, _)| i)
    else {
        return;
    };
    {
        let mut done = DONE.lock().unwrap_or_else(|e| e.into_inner());
        if done.contains(&i) {
            return;
        }
        done.push(i);
    }
    pause(n, &described);
}

/// Runs one mutation, counted, with the fault hooks around it.
pub(crate) fn mutation<T>(
    what: &str,
    path: &Path,
    f: impl FnOnce() -> std::io::Result<T>,
) -> std::io::Result<T> {
    let n = MUTATIONS.fetch_add(1, Ordering::SeqCst) + 1;
    if trace() {
        say!("doctor: fault point: mutation {n} ({what} {})", shown(path));
    }
    maybe_pause(n, what, path);
    let at = fault_at().filter(|at| at.n == n);
    match at.map(|at| at.when) {
        Some(When::Before) => stop(n, "before", what, path),
        Some(When::Pause) => pause(n, &format!("{what} {}", shown(path))),
        Some(When::Fail) => {
            say!(
                "doctor: fault point: failed mutation {n} ({what} {})",
                shown(path)
            );
            return Err(std::io::Error::from_raw_os_error(INJECTED_ERROR));
        }
        _ => {}
    }
    let out = f();
    if at.is_some_and(|at| at.when == When::After) {
        stop(n, "after", what, path);
    }
    out
}

/// The error a failed mutation gives: `EIO` on Unix, `ERROR_IO_DEVICE` (1117) on Windows, so
/// it is never one of the errors Windows retries (5, 32, 33).
const INJECTED_ERROR: i32 = if cfg!(windows) { 1117 } else { 5 };

/// A path as the fault trace and `DOCTOR_PAUSE_BEFORE` spell it: components joined with `/` on
/// every OS.
fn shown(path: &Path) -> String {
    let mut out = String::new();
    for c in path.components() {
        if !out.is_empty() && !out.ends_with('/') {
            out.push('/');
        }
        out.push_str(&c.as_os_str().to_string_lossy());
    }
    out
}
