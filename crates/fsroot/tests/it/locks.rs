//! The lock seam on every OS: a hard-linked lock file is refused, a held lock is seen as held
//! by a probe, and the lock is released when its guard drops.

use std::path::Path;

use fsroot::{LockProbe, TryLock, WritableRoot};

#[test]
fn a_lock_file_with_another_hard_link_is_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let outside = tempfile::tempdir().unwrap();
    std::fs::write(outside.path().join("elsewhere.lock"), b"").unwrap();
    std::fs::hard_link(
        outside.path().join("elsewhere.lock"),
        tmp.path().join("runtime-process.owner.lock"),
    )
    .unwrap();
    let root = WritableRoot::open(tmp.path()).unwrap();
    let err = root
        .try_lock(Path::new("runtime-process.owner.lock"), false, 0o600)
        .unwrap_err();
    assert!(
        matches!(err, fsroot::Error::HardLinked { .. }),
        "refused as hard-linked: {err}"
    );
    drop(root);
    tmp.close().unwrap();
    outside.close().unwrap();
}

#[test]
fn a_held_lock_is_held_until_its_guard_drops() {
    let tmp = tempfile::tempdir().unwrap();
    let root = WritableRoot::open(tmp.path()).unwrap();
    let rel = Path::new(".reconcile.lock");
    let TryLock::Acquired(guard) = root.try_lock(rel, true, 0o600).unwrap() else {
        panic!("a fresh lock file is free");
    };
    assert_eq!(
        guard.identity().unwrap(),
        root.stat(rel).unwrap().unwrap().id
    );
    // A second open file description (another handle of this process) finds it held.
    assert!(matches!(
        root.try_lock(rel, false, 0o600).unwrap(),
        TryLock::Held
    ));
    assert_eq!(root.probe_lock(rel).unwrap(), LockProbe::Held);
    drop(guard);
    assert_eq!(root.probe_lock(rel).unwrap(), LockProbe::Free);
    drop(root);
    tmp.close().unwrap();
}
