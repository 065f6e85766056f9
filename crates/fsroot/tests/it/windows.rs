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

/// Opens `path` for reading without delete sharing (as a scanner or indexer does), says so on
/// `opened`, and holds it for `hold`.
fn hold_without_delete_sharing(
    path: std::path::PathBuf,
    hold: Duration,
    opened: std::sync::mpsc::Sender<()>,
) -> std::thread::JoinHandle<()> {
    use std::os::windows::fs::OpenOptionsExt;
    std::thread::spawn(move || {
        // FILE_SHARE_READ alone: a rename over it, or of it, is refused while it is open.
        let f = std::fs::OpenOptions::new()
            .read(true)
            .share_mode(1)
            .open(&path)
            .unwrap();
        opened.send(()).unwrap();
        std::thread::sleep(hold);
        drop(f);
    })
}

#[test]
fn a_rename_refused_while_a_reader_holds_the_file_for_a_moment_is_tried_again() {
    let tmp = tempfile::tempdir().unwrap();
    let root = WritableRoot::open(tmp.path()).unwrap();
    root.write_atomic(p("doc.json"), b"v1").unwrap();
    root.write_atomic(p("held.json"), b"h").unwrap();

    // Held for 60 ms: the replacing write (the app's publish) and the move both succeed once
    // the reader lets go, well within the 310 ms of tries.
    for (i, act) in ["write", "move"].into_iter().enumerate() {
        let (tx, rx) = std::sync::mpsc::channel();
        let name = if i == 0 { "doc.json" } else { "held.json" };
        let reader =
            hold_without_delete_sharing(tmp.path().join(name), Duration::from_millis(60), tx);
        rx.recv().unwrap();
        let r = if act == "write" {
            root.write_atomic(p("doc.json"), b"v2")
        } else {
            root.move_item(p("held.json"), p("moved.json"))
        };
        reader.join().unwrap();
        r.unwrap_or_else(|e| panic!("the {act} was not tried again: {e}"));
    }
    assert_eq!(root.read(p("doc.json")).unwrap(), b"v2");
    assert_eq!(root.read(p("moved.json")).unwrap(), b"h");

    // Held for longer than every try: the write fails with the transient refusal, nothing is
    // replaced, and its temporary file is gone.
    let (tx, rx) = std::sync::mpsc::channel();
    let reader =
        hold_without_delete_sharing(tmp.path().join("doc.json"), Duration::from_millis(900), tx);
    rx.recv().unwrap();
    let started = Instant::now();
    let e = root.write_atomic(p("doc.json"), b"v3").unwrap_err();
    let waited = started.elapsed();
    reader.join().unwrap();
    assert!(e.is_transient(), "{e}");
    assert!(
        waited >= Duration::from_millis(300),
        "tried for {waited:?} only"
    );
    assert_eq!(root.read(p("doc.json")).unwrap(), b"v2");
    let names: Vec<_> = root
        .list(p(""))
        .unwrap()
        .into_iter()
        .map(|e| e.name)
        .collect();
    assert_eq!(names.len(), 2, "{names:?}");
    drop(root);
    tmp.close().unwrap();
}

#[test]
fn a_file_held_without_read_sharing_can_be_looked_at_but_not_stat_for_read() {
    use std::os::windows::fs::OpenOptionsExt;
    let tmp = tempfile::tempdir().unwrap();
    let root = WritableRoot::open(tmp.path()).unwrap();
    root.write_atomic(p("doc.json"), b"{}").unwrap();
    let held = root.hold_dir(p("")).unwrap();
    let st = held.stat_for_read("doc.json".as_ref()).unwrap().unwrap();
    assert_eq!(st.len, 2);
    assert_ne!(st.ctime_ns, 0, "NTFS gives a change time");
    // No sharing at all: a read would be refused (32), so the stat a cache hit relies on is.
    let f = std::fs::OpenOptions::new()
        .read(true)
        .share_mode(0)
        .open(tmp.path().join("doc.json"))
        .unwrap();
    assert!(held.stat("doc.json".as_ref()).unwrap().is_some());
    let e = held.stat_for_read("doc.json".as_ref()).unwrap_err();
    assert!(e.is_transient(), "{e}");
    assert!(held.read("doc.json".as_ref()).is_err());
    drop(f);
    assert!(held.stat_for_read("doc.json".as_ref()).unwrap().is_some());
    drop(held);
    drop(root);
    tmp.close().unwrap();
}

#[test]
fn a_tree_whose_file_another_handle_still_holds_is_removed_once_it_is_closed() {
    let tmp = tempfile::tempdir().unwrap();
    let root = WritableRoot::open(tmp.path()).unwrap();
    root.write_atomic(p("s/threads/t.json"), b"{}").unwrap();
    // A reader with full sharing (std's default, as a scan opens): the delete of the file
    // succeeds but leaves it pending until this handle is closed, 60 ms later.
    let (tx, rx) = std::sync::mpsc::channel();
    let path = tmp.path().join("s/threads/t.json");
    let reader = std::thread::spawn(move || {
        let f = std::fs::File::open(&path).unwrap();
        tx.send(()).unwrap();
        std::thread::sleep(Duration::from_millis(60));
        drop(f);
    });
    rx.recv().unwrap();
    let removed = root.remove_tree(p("s/threads"));
    reader.join().unwrap();
    removed.unwrap_or_else(|e| panic!("the removal did not wait for the pending delete: {e}"));
    assert!(root.stat(p("s/threads")).unwrap().is_none());
    drop(root);
    tmp.close().unwrap();
}
