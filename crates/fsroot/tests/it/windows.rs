//! The confined root on Windows, through the Windows backend (`sys/windows.rs`), run under
//! Wine by `cargo-windows test -p fsroot` and natively on a Windows runner: every operation of
//! `Root` and `WritableRoot` on a real tree, a lock held by a second process, and every
//! temporary tree removed at the end (a leaked directory handle makes that removal fail with
//! 32, on Windows and under Wine). Links cannot be made under Wine (see the cross tools
//! README): the refusals of links are the backend's, argued in docs/decisions.md.
#![cfg(windows)]

use std::path::Path;
use std::time::{Duration, Instant};

use fsroot::{EntryKind, LockProbe, Root, TryLock, WritableRoot};

fn p(s: &str) -> &Path {
    Path::new(s)
}

#[test]
fn writes_moves_lists_digests_and_removes_through_held_handles() {
    let tmp = tempfile::tempdir().unwrap();
    let root = WritableRoot::open(tmp.path()).unwrap();
    root.create_dir_all(p("a/b/c")).unwrap();
    root.write_atomic(p("a/b/c/doc.json"), b"{}").unwrap();
    root.write_atomic(p("a/b/c/doc.json"), b"{\"v\":2}")
        .unwrap();
    assert_eq!(root.read(p("a/b/c/doc.json")).unwrap(), b"{\"v\":2}");
    root.create_atomic(p("a/new.json"), b"x", 0o600).unwrap();
    let e = root
        .create_atomic(p("a/new.json"), b"y", 0o600)
        .unwrap_err();
    assert_eq!(e.kind(), std::io::ErrorKind::AlreadyExists, "{e}");
    assert_eq!(root.read(p("a/new.json")).unwrap(), b"x");
    root.append(p("a/log.jsonl"), b"one\n").unwrap();
    root.append(p("a/log.jsonl"), b"two\n").unwrap();
    assert_eq!(root.read(p("a/log.jsonl")).unwrap(), b"one\ntwo\n");
    let mut names: Vec<(String, EntryKind)> = root
        .list(p("a"))
        .unwrap()
        .into_iter()
        .map(|e| (e.name.to_string_lossy().into_owned(), e.kind))
        .collect();
    names.sort();
    assert_eq!(
        names,
        [
            ("b".to_owned(), EntryKind::Dir),
            ("log.jsonl".to_owned(), EntryKind::File),
            ("new.json".to_owned(), EntryKind::File)
        ]
    );
    let st = root.stat(p("a/new.json")).unwrap().unwrap();
    assert_eq!((st.kind, st.len), (EntryKind::File, 1));
    assert_eq!(root.stat(p("a/new.json")).unwrap().unwrap().id, st.id);
    assert!(root.stat(p("a/missing")).unwrap().is_none());
    let before = root.tree_digest(p("a/b")).unwrap();
    root.create_dir_all(p("set-aside")).unwrap();
    root.move_item(p("a/b"), p("set-aside/b")).unwrap();
    assert_eq!(root.tree_digest(p("set-aside/b")).unwrap(), before);
    root.write_atomic(p("a/b"), b"occupies").unwrap();
    assert!(root.move_item(p("set-aside/b"), p("a/b")).is_err());
    assert_eq!(root.read(p("a/b")).unwrap(), b"occupies");
    assert!(root.remove_tree(p("set-aside")).unwrap() > 0);
    assert!(root.stat(p("set-aside")).unwrap().is_none());
    root.create_dir_all(p("empty")).unwrap();
    assert!(root.remove_empty_dir(p("empty")).unwrap());
    assert!(!root.remove_empty_dir(p("a")).unwrap());
    assert!(root.read(p("..\\x")).is_err());
    drop(root);
    tmp.close().unwrap();
}

/// The environment variable naming the lock file [`lock_holder`] holds.
const HOLD: &str = "FSROOT_IT_WINDOWS_HOLD";

#[test]
#[ignore = "the second process of a_lock_held_by_another_process_is_seen_and_freed_by_its_death"]
fn lock_holder() {
    let path = std::path::PathBuf::from(std::env::var_os(HOLD).expect("run by the parent"));
    let root = WritableRoot::open(path.parent().unwrap()).unwrap();
    let name = Path::new(path.file_name().unwrap());
    let TryLock::Acquired(_guard) = root.try_lock(name, true, 0o600).unwrap() else {
        panic!("the lock was not free");
    };
    root.write_atomic(p("ready"), b"").unwrap();
    std::thread::sleep(Duration::from_secs(120));
}

#[test]
fn a_lock_held_by_another_process_is_seen_and_freed_by_its_death() {
    let tmp = tempfile::tempdir().unwrap();
    let root = WritableRoot::open(tmp.path()).unwrap();
    let mut child = std::process::Command::new(std::env::current_exe().unwrap())
        .args(["--ignored", "--exact", "windows::lock_holder"])
        .env(HOLD, tmp.path().join("owner.lock"))
        .stdout(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let start = Instant::now();
    while root.stat(p("ready")).unwrap().is_none() {
        assert!(
            child.try_wait().unwrap().is_none(),
            "the holder ended early"
        );
        assert!(
            start.elapsed() < Duration::from_secs(60),
            "the holder never locked"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    assert_eq!(root.probe_lock(p("owner.lock")).unwrap(), LockProbe::Held);
    assert!(matches!(
        root.try_lock(p("owner.lock"), false, 0o600).unwrap(),
        TryLock::Held
    ));
    child.kill().unwrap();
    child.wait().unwrap();
    assert_eq!(root.probe_lock(p("owner.lock")).unwrap(), LockProbe::Free);
    let TryLock::Acquired(guard) = root.try_lock(p("owner.lock"), false, 0o600).unwrap() else {
        panic!("the dead holder's lock was not released");
    };
    drop(guard);
    assert_eq!(
        root.probe_lock(p("missing.lock")).unwrap(),
        LockProbe::Missing
    );
    drop(root);
    tmp.close().unwrap();
}

#[test]
fn a_read_only_root_reads_and_holds_directories() {
    let tmp = tempfile::tempdir().unwrap();
    let w = WritableRoot::open(tmp.path()).unwrap();
    w.create_dir_all(p("d")).unwrap();
    w.write_atomic(p("d/f"), b"body").unwrap();
    drop(w);
    let root = Root::open(tmp.path()).unwrap();
    let mut held = root.hold_dir(p("d")).unwrap();
    assert_eq!(held.read("f".as_ref()).unwrap(), b"body");
    assert_eq!(held.list().unwrap().len(), 1);
    assert_eq!(root.read_record(p("d/f")).unwrap(), b"body");
    assert_eq!(
        root.file_digest(p("d/f")).unwrap(),
        root.file_digest(p("d/f")).unwrap()
    );
    assert!(!root.is_mount_point(p("d")).unwrap());
    drop(held);
    drop(root);
    tmp.close().unwrap();
}
