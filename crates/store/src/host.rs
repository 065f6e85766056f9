//! The host side of the locking protocol: how an application that uses a runtime store or has
//! a session open takes ownership, so that the doctor never touches what it holds.
//!
//! The doctor moves a store while holding its owner lock, entry by entry with the lock file
//! last, and never renames the store directory or unlinks a lock file (invariants.md). A host
//! therefore locks the owner lock file and then checks that the file it locked is still the
//! file at the path (same device and inode); if the doctor moved it meanwhile, the host
//! reopens the path, which gives it a fresh store. [`StoreOwnerLock::acquire`] is that one way.

use std::path::Path;

use fsroot::{LockGuard, TryLock, WritableRoot};

use crate::ids::{LATE_USAGE_DIR, OWNER_LOCK};

/// How many times [`StoreOwnerLock::acquire`] reopens a lock file that moved under it.
const REOPEN_ATTEMPTS: usize = 16;

/// How many times a contended lock is tried again, [`CONTENDED_WAIT`] apart, before the owner
/// is taken to be another process. A doctor run's liveness probe takes and releases a free lock
/// within microseconds; these retries keep such a probe from looking like an owner.
const CONTENDED_RETRIES: usize = 5;
/// The pause between two tries of a contended lock.
const CONTENDED_WAIT: std::time::Duration = std::time::Duration::from_millis(5);

/// The outcome of trying to own a store or a session.
#[derive(Debug)]
pub enum Acquired<T> {
    /// We own it until the value drops.
    Owned(T),
    /// Another process holds it.
    Held,
}

/// Ownership of a runtime store: an exclusive `flock` on `<store>/runtime-process.owner.lock`
/// that is known to be the file at that path. Released on drop.
///
/// # Example
///
/// ```
/// use store::host::{Acquired, StoreOwnerLock};
///
/// let tmp = tempfile::tempdir().unwrap();
/// let sessions = fsroot::WritableRoot::open(tmp.path()).unwrap();
/// let Acquired::Owned(lock) = StoreOwnerLock::acquire(&sessions, "s1/runtime").unwrap() else {
///     panic!("nobody else holds it");
/// };
/// assert_eq!(lock.store(), "s1/runtime");
/// // A second owner in the same process is refused too: `flock` is per open file.
/// assert!(matches!(
///     StoreOwnerLock::acquire(&sessions, "s1/runtime").unwrap(),
///     Acquired::Held
/// ));
/// drop(lock);
/// ```
#[derive(Debug)]
pub struct StoreOwnerLock {
    _guard: LockGuard,
    store: String,
}

impl StoreOwnerLock {
    /// Creates the store directory if needed, locks its owner lock file (without blocking: a contended lock is tried a few more times, 25 ms in all, then reported `Held`), and
    /// checks by device and inode that the locked file is still the one at the path,
    /// reopening when it moved (the doctor set the old store aside meanwhile).
    pub fn acquire(
        sessions: &WritableRoot,
        store: &str,
    ) -> fsroot::Result<Acquired<StoreOwnerLock>> {
        Self::acquire_observed(sessions, store, &mut |_| {})
    }

    /// [`StoreOwnerLock::acquire`], calling `after_open(attempt)` between opening the lock
    /// file and locking it: the window in which the doctor may move the file. For race tests.
    #[doc(hidden)]
    pub fn acquire_observed(
        sessions: &WritableRoot,
        store: &str,
        after_open: &mut dyn FnMut(usize),
    ) -> fsroot::Result<Acquired<StoreOwnerLock>> {
        let lock = format!("{store}/{OWNER_LOCK}");
        let guard = acquire_verified(sessions, store, &lock, after_open)?;
        Ok(match guard {
            Some(g) => Acquired::Owned(StoreOwnerLock {
                _guard: g,
                store: store.to_owned(),
            }),
            None => Acquired::Held,
        })
    }

    /// The store, relative to S.
    pub fn store(&self) -> &str {
        &self.store
    }
}

/// The one acquisition protocol of a host lock file `rel`: create its directory `dir`, open it
/// (created if missing), lock it without blocking (`after_open(attempt)` runs in between), then
/// check by device and inode that the locked file is still the one at the path, reopening when
/// it moved. A contended lock is tried [`CONTENDED_RETRIES`] more times. `None`: another process
/// holds it.
fn acquire_verified(
    sessions: &WritableRoot,
    dir: &str,
    rel: &str,
    after_open: &mut dyn FnMut(usize),
) -> fsroot::Result<Option<LockGuard>> {
    let mut contended = 0;
    for attempt in 1..=REOPEN_ATTEMPTS + CONTENDED_RETRIES {
        sessions.create_dir_all(Path::new(dir))?;
        let Some(file) = sessions.open_lock_file(Path::new(rel), true, 0o644)? else {
            continue;
        };
        after_open(attempt);
        let guard = match file.try_lock()? {
            TryLock::Acquired(g) => g,
            TryLock::Held | TryLock::Missing if contended < CONTENDED_RETRIES => {
                contended += 1;
                std::thread::sleep(CONTENDED_WAIT);
                continue;
            }
            TryLock::Held | TryLock::Missing => return Ok(None),
        };
        if still_at_path(sessions, rel, &guard)? {
            return Ok(Some(guard));
        }
    }
    Ok(None)
}

fn still_at_path(root: &WritableRoot, rel: &str, guard: &LockGuard) -> fsroot::Result<bool> {
    let id = guard.identity().map_err(|e| fsroot::Error::Io {
        op: "inspect lock",
        path: root.display_path(Path::new(rel)),
        source: e,
    })?;
    Ok(root.stat(Path::new(rel))?.is_some_and(|s| s.id == id))
}

/// A live lease: the exclusive `flock` on `.late-usage/<id>.live` that a process holds while
/// session `<id>` is open. The doctor never touches a session whose lease is held: not its
/// document, not its directory, nothing under it.
///
/// # Example
///
/// ```
/// use store::host::{Acquired, LiveLease};
///
/// let tmp = tempfile::tempdir().unwrap();
/// let sessions = fsroot::WritableRoot::open(tmp.path()).unwrap();
/// let Acquired::Owned(lease) = LiveLease::acquire(&sessions, "s1").unwrap() else {
///     panic!("nobody else has s1 open");
/// };
/// assert_eq!(
///     sessions.probe_lock(".late-usage/s1.live".as_ref()).unwrap(),
///     fsroot::LockProbe::Held
/// );
/// drop(lease);
/// ```
#[derive(Debug)]
pub struct LiveLease {
    _guard: LockGuard,
    id: String,
}

impl LiveLease {
    /// Takes the lease of session `id` (without blocking: a contended lease is tried a few more times, 25 ms in all), creating the lease file if needed.
    pub fn acquire(sessions: &WritableRoot, id: &str) -> fsroot::Result<Acquired<LiveLease>> {
        if !crate::ids::is_valid_id(id) {
            return Err(fsroot::Error::Escape {
                path: Path::new(id).to_path_buf(),
            });
        }
        let rel = format!("{LATE_USAGE_DIR}/{id}.live");
        let guard = acquire_verified(sessions, LATE_USAGE_DIR, &rel, &mut |_| {})?;
        Ok(match guard {
            Some(g) => Acquired::Owned(LiveLease {
                _guard: g,
                id: id.to_owned(),
            }),
            None => Acquired::Held,
        })
    }

    /// The session id.
    pub fn id(&self) -> &str {
        &self.id
    }
}
