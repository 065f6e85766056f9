//! `host-sim`: test support that plays a host application with the library's own protocol.
//!
//! `host-sim open-store SESSIONS STORE [--pause-after-open]` acquires the store with
//! `StoreOwnerLock::acquire` and prints `owned attempts=<n>` (or `held`), then keeps it until
//! its standard input closes. With `--pause-after-open` it prints `opened` after opening the
//! lock file and waits for one line on stdin before locking: the window in which a doctor run
//! may move the file, so a test can prove that the host then reopens the path.

use std::io::{BufRead, Write};
use std::path::Path;

use fsroot::WritableRoot;
use store::host::{Acquired, StoreOwnerLock};

fn say(line: &str) {
    let mut out = std::io::stdout();
    let _ = writeln!(out, "{line}");
    let _ = out.flush();
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [cmd, sessions, store, rest @ ..] = args.as_slice() else {
        eprintln!("usage: host-sim open-store SESSIONS STORE [--pause-after-open]");
        std::process::exit(2);
    };
    assert_eq!(cmd, "open-store", "host-sim: unknown command {cmd}");
    let pause = rest.iter().any(|a| a == "--pause-after-open");
    let root = WritableRoot::open(Path::new(sessions)).unwrap_or_else(|e| panic!("host-sim: {e}"));
    let stdin = std::io::stdin();
    let mut attempts = 0;
    let acquired = StoreOwnerLock::acquire_observed(&root, store, &mut |n| {
        attempts = n;
        if pause && n == 1 {
            say("opened");
            let mut line = String::new();
            let _ = stdin.lock().read_line(&mut line);
        }
    })
    .unwrap_or_else(|e| panic!("host-sim: {e}"));
    let _owned = match acquired {
        Acquired::Owned(lock) => {
            say(&format!("owned attempts={attempts}"));
            Some(lock)
        }
        Acquired::Held => {
            say("held");
            None
        }
    };
    let mut sink = String::new();
    while stdin
        .lock()
        .read_line(&mut sink)
        .map(|n| n > 0)
        .unwrap_or(false)
    {
        sink.clear();
    }
}
