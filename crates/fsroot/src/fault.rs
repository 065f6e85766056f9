//! The mutation counter of the one write seam, and the hidden fault hooks the tests use:
//! `DOCTOR_FAULT_AT=N` stops the process just before its Nth filesystem mutation,
//! `DOCTOR_FAULT_AT=N:after` just after it. Stopped means: a line on stderr, then waiting to be
//! killed (the test sends SIGKILL), so no destructor, flush or unlock of ours runs after it.
//! `DOCTOR_PAUSE_BEFORE=TEXT` pauses before the first mutation whose description
//! (`<what> <path>`) contains TEXT: a line on stderr, then it waits for one line on standard
//! input and goes on. A race test changes the store inside that window, deterministically.

use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::OnceLock;

static MUTATIONS: AtomicU64 = AtomicU64::new(0);

#[derive(Clone, Copy)]
struct FaultAt {
    n: u64,
    after: bool,
}

fn fault_at() -> Option<FaultAt> {
    static AT: OnceLock<Option<FaultAt>> = OnceLock::new();
    *AT.get_or_init(|| {
        let v = std::env::var("DOCTOR_FAULT_AT").ok()?;
        let (n, after) = match v.strip_suffix(":after") {
            Some(n) => (n, true),
            None => (v.as_str(), false),
        };
        Some(FaultAt {
            n: n.parse().ok()?,
            after,
        })
    })
}

fn stop(n: u64, when: &str, what: &str, path: &Path) -> ! {
    eprintln!(
        "doctor: fault point: stopped {when} mutation {n} ({what} {})",
        path.display()
    );
    loop {
        std::thread::sleep(std::time::Duration::from_secs(3600));
    }
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

/// Pauses once, before the first mutation that matches `DOCTOR_PAUSE_BEFORE`.
fn maybe_pause(n: u64, what: &str, path: &Path) {
    static DONE: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);
    let Some(text) = pause_before() else {
        return;
    };
    let described = format!("{what} {}", path.display());
    if !described.contains(text) || DONE.swap(true, Ordering::SeqCst) {
        return;
    }
    eprintln!("doctor: fault point: paused before mutation {n} ({described})");
    let mut line = String::new();
    let _ = std::io::stdin().read_line(&mut line);
}

/// Runs one mutation, counted, with the fault hooks around it.
pub(crate) fn mutation<T>(what: &str, path: &Path, f: impl FnOnce() -> T) -> T {
    let n = MUTATIONS.fetch_add(1, Ordering::SeqCst) + 1;
    maybe_pause(n, what, path);
    let at = fault_at();
    if let Some(FaultAt {
        n: at,
        after: false,
    }) = at
    {
        if at == n {
            stop(n, "before", what, path);
        }
    }
    let out = f();
    if let Some(FaultAt { n: at, after: true }) = at {
        if at == n {
            stop(n, "after", what, path);
        }
    }
    out
}
