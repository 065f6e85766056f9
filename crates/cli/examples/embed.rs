//! Embedding the doctor in a host application. At startup the host owns its runtime store
//! (`StoreOwnerLock`) and holds its session's live lease (`LiveLease`), then runs the sessions
//! repair: the doctor leaves both alone, and repairs the rest. A host repairs at every launch:
//! the example calls a second time, as the next launch would, and prints what each call cost
//! (the second is served by the verdict cache in `$XDG_CACHE_HOME/doctor` for every document
//! and thread record unchanged since).
//!
//! ```sh
//! cargo run --example embed               # a fresh temporary store, repaired for real
//! cargo run --example embed -- DIR        # a dry run on DIR (nothing is written to DIR
//!                                                # but the host's own lease and store lock)
//! ```

use std::path::PathBuf;
use std::time::Instant;

use doctor::host::{Acquired, LiveLease, StoreOwnerLock, WritableRoot};

/// The host's own session: its document would be `<id>.json`, its store `<id>/runtime`.
const SESSION: &str = "5e2f3b1c-0a4d-4c8e-9f10-6b7d8e9fa0b1";

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let given = std::env::args_os().nth(1).map(PathBuf::from);
    let temp = tempfile::tempdir()?;
    let dir = given.clone().unwrap_or_else(|| temp.path().to_path_buf());
    let sessions = WritableRoot::open(&dir)?;

    // Own the store first, then hold the lease: both stay held while the doctor runs, and the
    // doctor skips what they cover instead of moving it.
    let Acquired::Owned(store) = StoreOwnerLock::acquire(&sessions, &format!("{SESSION}/runtime"))?
    else {
        return Err("another process owns this session's store".into());
    };
    let Acquired::Owned(lease) = LiveLease::acquire(&sessions, SESSION)? else {
        return Err("another process has this session open".into());
    };
    println!(
        "host: owns {} and holds the lease of {}",
        store.store(),
        lease.id()
    );

    let mut opts = doctor::RepairOptions::new(&dir);
    // A store the user named is only previewed; the temporary one is repaired for real.
    opts.dry_run = given.is_some();
    let started = Instant::now();
    let report = doctor::repair_sessions(&opts)?;
    let first = started.elapsed();
    print!("{}", report.render_human());
    // The next launch: a dry run, so that it only costs what it reads.
    let mut next = opts.clone();
    next.dry_run = true;
    let started = Instant::now();
    doctor::repair_sessions(&next)?;
    println!(
        "host: the first call took {:.1} ms, a second one {:.1} ms",
        first.as_secs_f64() * 1e3,
        started.elapsed().as_secs_f64() * 1e3
    );
    let failed = report
        .outcomes
        .iter()
        .any(|o| o.outcome == doctor::OutcomeKind::Failed);
    if failed || report.late_failure {
        return Err("the repair did not complete; see the report above".into());
    }
    Ok(())
}
