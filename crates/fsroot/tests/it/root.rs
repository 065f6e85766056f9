//! The confined root's guarantees: no escape by `..`, absolute paths or symlinks; no symlink
//! followed on read; the delete seam never follows links; atomic writes leave no temp files.

use std::path::Path;

// On Windows the tests that need Unix facilities (symlinks, fifos, modes, fds) are left out.
#[cfg_attr(not(unix), allow(unused_imports))]
use fsroot::{EntryKind, Error, LockProbe, Root, TryLock, WritableRoot};

#[cfg(unix)] // Unix facilities: symlinks, fifos, modes or fds
#[test]
fn refuses_paths_that_leave_the_root() {
    let tmp = tempfile::tempdir().unwrap();
    let outside = tempfile::tempdir().unwrap();
    std::fs::write(outside.path().join("secret"), "s").unwrap();
    std::os::unix::fs::symlink(outside.path(), tmp.path().join("out")).unwrap();
    std::os::unix::fs::symlink(outside.path().join("secret"), tmp.path().join("link")).unwrap();
    let root = Root::open(tmp.path()).unwrap();
    for bad in ["../x", "/etc/passwd", "a/../../x"] {
        let err = root.read(Path::new(bad)).unwrap_err();
        assert!(matches!(err, Error::Escape { .. }), "{bad}: {err}");
        assert!(
            err.to_string().contains(bad),
            "the error names the path: {err}"
        );
    }
    // Refused at the symlink on the way, which the error names.
    let err = root.read(Path::new("out/secret")).unwrap_err();
    assert!(matches!(err, Error::SymlinkInPath { .. }), "{err}");
    assert!(err.to_string().contains("/out:"), "{err}");
    assert!(
        root.read(Path::new("link")).is_err(),
        "a symlink is never followed on read"
    );
    assert_eq!(
        root.stat(Path::new("link")).unwrap().unwrap().kind,
        EntryKind::Symlink
    );
}

#[cfg(unix)] // Unix facilities: symlinks, fifos, modes or fds
#[test]
fn the_delete_seam_never_follows_links() {
    let tmp = tempfile::tempdir().unwrap();
    let outside = tempfile::tempdir().unwrap();
    std::fs::write(outside.path().join("keep"), "keep me").unwrap();
    let t = tmp.path().join("go-build1");
    std::fs::create_dir_all(t.join("b001")).unwrap();
    std::fs::write(t.join("b001/a.o"), "12345").unwrap();
    std::os::unix::fs::symlink(outside.path(), t.join("b001/dirlink")).unwrap();
    let root = WritableRoot::open(tmp.path()).unwrap();
    let freed = root.remove_tree(Path::new("go-build1")).unwrap();
    assert_eq!(freed, 5);
    assert!(!t.exists());
    assert_eq!(
        std::fs::read_to_string(outside.path().join("keep")).unwrap(),
        "keep me"
    );
    assert!(
        root.remove_tree(Path::new("")).is_err(),
        "the root itself is never deleted"
    );
}

#[test]
fn atomic_write_replaces_and_leaves_no_temp_file() {
    let tmp = tempfile::tempdir().unwrap();
    let root = WritableRoot::open(tmp.path()).unwrap();
    root.write_atomic(Path::new("d/f.json"), b"one").unwrap();
    root.write_atomic(Path::new("d/f.json"), b"two").unwrap();
    assert_eq!(std::fs::read(tmp.path().join("d/f.json")).unwrap(), b"two");
    let names: Vec<_> = std::fs::read_dir(tmp.path().join("d"))
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(names, ["f.json"]);
    assert!(
        root.move_item(Path::new("d/f.json"), Path::new("d/f.json"))
            .is_err(),
        "no move onto an existing path"
    );
}

#[cfg(unix)] // Unix facilities: symlinks, fifos, modes or fds
#[test]
fn never_writes_through_a_symlink_inside_the_root() {
    let tmp = tempfile::tempdir().unwrap();
    std::fs::create_dir(tmp.path().join("alpha")).unwrap();
    std::fs::write(tmp.path().join("doc.json"), "{}").unwrap();
    std::os::unix::fs::symlink("alpha", tmp.path().join(".reconcile")).unwrap();
    let root = WritableRoot::open(tmp.path()).unwrap();
    for err in [
        root.append(Path::new(".reconcile/receipts.jsonl"), b"x")
            .unwrap_err(),
        root.write_atomic(Path::new(".reconcile/last.json"), b"{}")
            .unwrap_err(),
        root.move_item(Path::new("doc.json"), Path::new(".reconcile/run/doc.json"))
            .unwrap_err(),
        root.create_dir_all(Path::new(".reconcile/x")).unwrap_err(),
        root.create_atomic(Path::new(".reconcile/doc.json"), b"{}", 0o600)
            .unwrap_err(),
        root.remove_empty_dir(Path::new(".reconcile/x"))
            .unwrap_err(),
        root.remove_file(Path::new(".reconcile/receipts.jsonl"))
            .unwrap_err(),
        root.stat(Path::new(".reconcile/x")).unwrap_err(),
        root.list(Path::new(".reconcile")).unwrap_err(),
    ] {
        assert!(matches!(err, Error::SymlinkInPath { .. }), "{err}");
        assert!(err.to_string().contains(".reconcile"), "{err}");
    }
    assert_eq!(
        std::fs::read_dir(tmp.path().join("alpha")).unwrap().count(),
        0,
        "nothing went through the link"
    );
    assert!(tmp.path().join("doc.json").exists());
}

/// A log whose last line is torn (a writer died mid-line, a write cut short) is never glued
/// onto: the append terminates the torn line first, so the new record is a line of its own and
/// the torn one stays what it was; a log that ends with a newline gets no blank line.
#[test]
fn an_append_after_a_torn_line_starts_a_line_of_its_own() {
    let tmp = tempfile::tempdir().unwrap();
    let root = WritableRoot::open(tmp.path()).unwrap();
    std::fs::write(
        tmp.path().join("receipts.jsonl"),
        b"{\"run\":\"x\",\"seq\":1,\"ru",
    )
    .unwrap();
    root.append(Path::new("receipts.jsonl"), b"{\"seq\":2}\n")
        .unwrap();
    root.append(Path::new("receipts.jsonl"), b"{\"seq\":3}\n")
        .unwrap();
    assert_eq!(
        std::fs::read_to_string(tmp.path().join("receipts.jsonl")).unwrap(),
        "{\"run\":\"x\",\"seq\":1,\"ru\n{\"seq\":2}\n{\"seq\":3}\n"
    );
    // An empty log and a missing one take the record as it is.
    std::fs::write(tmp.path().join("empty.jsonl"), b"").unwrap();
    root.append(Path::new("empty.jsonl"), b"{}\n").unwrap();
    assert_eq!(
        std::fs::read(tmp.path().join("empty.jsonl")).unwrap(),
        b"{}\n"
    );
}

/// `check_appendable` opens a log as an append would, writing nothing: a missing log is
/// appendable (the append creates it, and the check does not), a directory or a hard-linked
/// file is refused naming the path.
#[test]
fn a_log_is_checked_appendable_without_a_write() {
    let tmp = tempfile::tempdir().unwrap();
    let root = WritableRoot::open(tmp.path()).unwrap();
    root.check_appendable(Path::new("missing.jsonl")).unwrap();
    assert!(!tmp.path().join("missing.jsonl").exists());
    root.check_appendable(Path::new("nodir/missing.jsonl"))
        .unwrap();
    assert!(
        !tmp.path().join("nodir").exists(),
        "no directory is created"
    );
    std::fs::write(tmp.path().join("log.jsonl"), b"torn").unwrap();
    root.check_appendable(Path::new("log.jsonl")).unwrap();
    assert_eq!(
        std::fs::read(tmp.path().join("log.jsonl")).unwrap(),
        b"torn"
    );
    std::fs::create_dir(tmp.path().join("dir.jsonl")).unwrap();
    let err = root.check_appendable(Path::new("dir.jsonl")).unwrap_err();
    assert!(err.to_string().contains("dir.jsonl"), "{err}");
    std::fs::hard_link(
        tmp.path().join("log.jsonl"),
        tmp.path().join("linked.jsonl"),
    )
    .unwrap();
    let err = root
        .check_appendable(Path::new("linked.jsonl"))
        .unwrap_err();
    assert!(matches!(err, Error::HardLinked { .. }), "{err}");
}

#[cfg(unix)] // Unix facilities: symlinks, fifos, modes or fds
#[test]
fn appends_refuse_hard_links_and_never_block_on_a_fifo() {
    let tmp = tempfile::tempdir().unwrap();
    let outside = tempfile::tempdir().unwrap();
    let target = outside.path().join("outside.txt");
    std::fs::write(&target, "untouched\n").unwrap();
    std::fs::hard_link(&target, tmp.path().join("receipts.jsonl")).unwrap();
    let root = WritableRoot::open(tmp.path()).unwrap();
    let err = root
        .append(Path::new("receipts.jsonl"), b"{}\n")
        .unwrap_err();
    assert!(matches!(err, Error::HardLinked { .. }), "{err}");
    assert!(err.to_string().contains("receipts.jsonl"), "{err}");
    assert_eq!(std::fs::read(&target).unwrap(), b"untouched\n");

    let fifo = tmp.path().join("fifo.jsonl");
    let made = std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap();
    assert!(made.success());
    // No reader: a blocking open would wait forever; this one returns an error at once.
    assert!(root.append(Path::new("fifo.jsonl"), b"{}\n").is_err());

    root.append(Path::new("fresh.jsonl"), b"a\n").unwrap();
    root.append(Path::new("fresh.jsonl"), b"b\n").unwrap();
    assert_eq!(
        std::fs::read(tmp.path().join("fresh.jsonl")).unwrap(),
        b"a\nb\n"
    );
}

#[cfg(unix)] // Unix facilities: symlinks, fifos, modes or fds
#[test]
fn create_atomic_never_replaces_and_keeps_the_mode() {
    use std::os::unix::fs::PermissionsExt;
    let tmp = tempfile::tempdir().unwrap();
    let root = WritableRoot::open(tmp.path()).unwrap();
    root.create_atomic(Path::new("a/new.json"), b"new\n", 0o600)
        .unwrap();
    let made = tmp.path().join("a/new.json");
    assert_eq!(std::fs::read(&made).unwrap(), b"new\n");
    assert_eq!(
        std::fs::metadata(&made).unwrap().permissions().mode() & 0o777,
        0o600
    );
    std::fs::write(tmp.path().join("a/theirs.json"), b"theirs\n").unwrap();
    let err = root
        .create_atomic(Path::new("a/theirs.json"), b"ours\n", 0o644)
        .unwrap_err();
    assert!(matches!(err, Error::Occupied { .. }), "{err}");
    assert_eq!(
        std::fs::read(tmp.path().join("a/theirs.json")).unwrap(),
        b"theirs\n"
    );
    let names: Vec<_> = std::fs::read_dir(tmp.path().join("a"))
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    assert_eq!(names.len(), 2, "no temporary file is left: {names:?}");
}

#[cfg(unix)] // Unix facilities: symlinks, fifos, modes or fds
#[test]
fn remove_tree_walks_held_handles_at_any_depth() {
    let tmp = tempfile::tempdir().unwrap();
    let deep: std::path::PathBuf = std::iter::repeat_n("d", 1500).collect();
    std::fs::create_dir_all(tmp.path().join("go-build1").join(&deep)).unwrap();
    std::fs::write(tmp.path().join("go-build1").join(&deep).join("f"), b"12345").unwrap();
    let outside = tempfile::tempdir().unwrap();
    std::fs::write(outside.path().join("keep"), b"k").unwrap();
    std::os::unix::fs::symlink(outside.path(), tmp.path().join("go-build1/d/link")).unwrap();
    let root = WritableRoot::open(tmp.path()).unwrap();
    let digest = root.tree_digest(Path::new("go-build1")).unwrap();
    assert_eq!(
        (digest.bytes, digest.entries),
        (5, 1502),
        "every level, the file, the link"
    );
    assert_eq!(root.remove_tree(Path::new("go-build1")).unwrap(), 5);
    assert!(!tmp.path().join("go-build1").exists());
    assert_eq!(std::fs::read(outside.path().join("keep")).unwrap(), b"k");
    assert_eq!(
        root.remove_tree(Path::new("go-build1")).unwrap(),
        0,
        "nothing left"
    );
}

/// A tree split in two by an entry-by-entry move digests, merged, as it did whole; names in
/// both halves are refused.
#[cfg(unix)] // Unix facilities: symlinks, fifos, modes or fds
#[test]
fn a_split_tree_digests_merged_as_it_did_whole() {
    let tmp = tempfile::tempdir().unwrap();
    let root = fsroot::WritableRoot::open(tmp.path()).unwrap();
    for (p, b) in [
        ("whole/a.json", &b"1"[..]),
        ("whole/sub/b", b"22"),
        ("whole/z", b"333"),
    ] {
        root.write_atomic(Path::new(p), b).unwrap();
    }
    let whole = root.tree_digest(Path::new("whole")).unwrap();
    root.create_dir_all(Path::new("half")).unwrap();
    root.move_item(Path::new("whole/sub"), Path::new("half/sub"))
        .unwrap();
    assert_ne!(root.tree_digest(Path::new("whole")).unwrap(), whole);
    let merged = root
        .merged_tree_digest(&[Path::new("whole"), Path::new("half")])
        .unwrap();
    assert_eq!(merged, whole);
    root.write_atomic(Path::new("half/z"), b"333").unwrap();
    let err = root
        .merged_tree_digest(&[Path::new("whole"), Path::new("half")])
        .unwrap_err();
    assert!(err.to_string().contains("half/z"), "{err}");
}

/// The doctor's own record files are read only when they have a single link: a hard link may
/// stand for a file outside the root. A fifo in their place never blocks the read.
#[cfg(unix)] // Unix facilities: symlinks, fifos, modes or fds
#[test]
fn record_reads_refuse_hard_links_and_fifos() {
    let tmp = tempfile::tempdir().unwrap();
    let outside = tempfile::tempdir().unwrap();
    std::fs::write(outside.path().join("secret"), b"outside\n").unwrap();
    std::fs::hard_link(outside.path().join("secret"), tmp.path().join("last.json")).unwrap();
    let root = fsroot::Root::open(tmp.path()).unwrap();
    let err = root.read_record(Path::new("last.json")).unwrap_err();
    assert!(matches!(err, Error::HardLinked { .. }), "{err}");
    assert!(err.to_string().contains("last.json"), "{err}");
    assert_eq!(root.read(Path::new("last.json")).unwrap(), b"outside\n");
    let made = std::process::Command::new("mkfifo")
        .arg(tmp.path().join("receipts.jsonl"))
        .status()
        .unwrap();
    assert!(made.success());
    let err = root.read_record(Path::new("receipts.jsonl")).unwrap_err();
    assert!(matches!(err, Error::NotAFile { .. }), "{err}");
    std::fs::write(tmp.path().join("plan.json"), b"{}").unwrap();
    assert_eq!(
        fsroot::read_standalone_file(&tmp.path().join("plan.json")).unwrap(),
        b"{}"
    );
    std::fs::hard_link(tmp.path().join("plan.json"), outside.path().join("plan")).unwrap();
    assert!(fsroot::read_standalone_file(&tmp.path().join("plan.json")).is_err());
}

/// A file outside any store (`$GITHUB_STEP_SUMMARY`) is created when missing and appended to
/// after; a symlink in its place is refused, and the file it points at is left as it was.
#[cfg(unix)] // Unix facilities: symlinks, fifos, modes or fds
#[test]
fn standalone_appends_create_then_append_and_refuse_symlinks() {
    let tmp = tempfile::tempdir().unwrap();
    let summary = tmp.path().join("step_summary.md");
    fsroot::append_standalone_file(&summary, b"one\n").unwrap();
    fsroot::append_standalone_file(&summary, b"two\n").unwrap();
    assert_eq!(std::fs::read(&summary).unwrap(), b"one\ntwo\n");
    std::os::unix::fs::symlink(&summary, tmp.path().join("link.md")).unwrap();
    assert!(fsroot::append_standalone_file(&tmp.path().join("link.md"), b"three\n").is_err());
    assert_eq!(std::fs::read(&summary).unwrap(), b"one\ntwo\n");
    assert!(fsroot::append_standalone_file(&tmp.path().join("missing/x.md"), b"x").is_err());
}

#[cfg(unix)] // Unix facilities: symlinks, fifos, modes or fds
#[test]
fn a_held_directory_lists_reads_and_probes_through_its_handle() {
    let tmp = tempfile::tempdir().unwrap();
    let d = tmp.path().join("store/threads");
    std::fs::create_dir_all(d.join("sub")).unwrap();
    std::fs::write(d.join("b.json"), "{\"b\":1}").unwrap();
    std::fs::write(d.join("a.lock"), "").unwrap();
    std::os::unix::fs::symlink("b.json", d.join("link.json")).unwrap();
    std::fs::write(tmp.path().join("outside.json"), "secret").unwrap();
    let root = Root::open(tmp.path()).unwrap();
    let mut held = root.hold_dir(Path::new("store/threads")).unwrap();
    let listed: Vec<(String, EntryKind)> = held
        .list()
        .unwrap()
        .into_iter()
        .map(|e| (e.name.to_string_lossy().into_owned(), e.kind))
        .collect();
    let expected = vec![
        ("a.lock".to_owned(), EntryKind::File),
        ("b.json".to_owned(), EntryKind::File),
        ("link.json".to_owned(), EntryKind::Symlink),
        ("sub".to_owned(), EntryKind::Dir),
    ];
    assert_eq!(listed, expected);
    // A second listing starts again from the first entry.
    assert_eq!(held.list().unwrap().len(), 4);
    assert_eq!(
        root.list(Path::new("store/threads"))
            .unwrap()
            .into_iter()
            .map(|e| (e.name.to_string_lossy().into_owned(), e.kind))
            .collect::<Vec<_>>(),
        expected
    );

    // The directory is renamed after it was held: reads still go to the held one.
    std::fs::rename(tmp.path().join("store"), tmp.path().join("moved")).unwrap();
    std::fs::create_dir_all(tmp.path().join("store/threads")).unwrap();
    std::fs::write(tmp.path().join("store/threads/b.json"), "decoy").unwrap();
    assert_eq!(held.read("b.json".as_ref()).unwrap(), b"{\"b\":1}");
    assert_eq!(held.probe_lock("a.lock".as_ref()).unwrap(), LockProbe::Free);
    assert_eq!(
        held.probe_lock("none.lock".as_ref()).unwrap(),
        LockProbe::Missing
    );

    // One component only, no symlink, no directory.
    for name in ["../../outside.json", "sub/x", "..", "/etc/passwd", ""] {
        let err = held.read(name.as_ref()).unwrap_err();
        assert!(matches!(err, Error::Escape { .. }), "{name}: {err}");
    }
    let err = held.read("link.json".as_ref()).unwrap_err();
    assert!(err.to_string().contains("store/threads/link.json"), "{err}");
    assert!(matches!(
        held.read("sub".as_ref()).unwrap_err(),
        Error::NotAFile { .. }
    ));
    assert!(held.probe_lock("link.json".as_ref()).is_err());
}

/// A lock released while another process still holds a copy of its descriptor (a child forked
/// before it execs, which any process starting children has for a moment) is free at once: the
/// guard unlocks the open file description before closing. The child here holds the copy as its
/// stdin for as long as the test needs, so the race is deterministic.
#[cfg(unix)] // Unix facilities: symlinks, fifos, modes or fds
#[test]
fn a_released_lock_is_free_while_another_process_holds_a_copy_of_its_descriptor() {
    use std::os::fd::AsFd;

    let tmp = tempfile::tempdir().unwrap();
    let root = WritableRoot::open(tmp.path()).unwrap();
    let lock = Path::new("owner.lock");
    let TryLock::Acquired(guard) = root.try_lock(lock, true, 0o644).unwrap() else {
        panic!("the lock is free at first");
    };
    // A copy of the descriptor that a child keeps: the same open file description.
    let copy = rustix::io::dup(guard.as_fd()).unwrap();
    let mut child = std::process::Command::new("sleep")
        .arg("600")
        .stdin(std::process::Stdio::from(copy))
        .spawn()
        .unwrap();
    drop(guard);
    let again = root.try_lock(lock, true, 0o644).unwrap();
    child.kill().unwrap();
    child.wait().unwrap();
    assert!(
        matches!(again, TryLock::Acquired(_)),
        "a released lock must not stay held through another process's copy: {again:?}"
    );
}

/// A directory that is itself a mount point (here a bind mount of another directory, in this
/// test's mount namespace, unmounted when done) is never emptied: `remove_tree` refuses it
/// before deleting anything, and `is_mount_point` says so. Needs root (`mount --bind`).
#[test]
fn remove_tree_refuses_a_directory_that_is_a_mount_point() {
    let is_root = std::fs::read_to_string("/proc/self/status")
        .unwrap()
        .lines()
        .any(|l| l.starts_with("Uid:") && l.split_whitespace().nth(1) == Some("0"));
    if !is_root {
        println!("SKIPPED: bind mounts need root");
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let mounted = tempfile::tempdir().unwrap();
    std::fs::create_dir(mounted.path().join("b001")).unwrap();
    std::fs::write(mounted.path().join("b001/_pkg_.a"), b"keep").unwrap();
    let point = tmp.path().join("go-build1");
    std::fs::create_dir(&point).unwrap();
    std::fs::create_dir(tmp.path().join("plain")).unwrap();
    let ok = std::process::Command::new("mount")
        .arg("--bind")
        .arg(mounted.path())
        .arg(&point)
        .status()
        .is_ok_and(|s| s.success());
    if !ok {
        println!("SKIPPED: mount --bind is not permitted here");
        return;
    }
    struct Unmount(std::path::PathBuf);
    impl Drop for Unmount {
        fn drop(&mut self) {
            let _ = std::process::Command::new("umount")
                .arg("-l")
                .arg(&self.0)
                .status();
        }
    }
    let _unmount = Unmount(point.clone());
    let root = WritableRoot::open(tmp.path()).unwrap();
    assert!(root.is_mount_point(Path::new("go-build1")).unwrap());
    assert!(!root.is_mount_point(Path::new("plain")).unwrap());
    let err = root.remove_tree(Path::new("go-build1")).unwrap_err();
    assert!(err.to_string().contains("go-build1: "), "{err}");
    assert!(err.to_string().contains("mount point"), "{err}");
    assert_eq!(
        std::fs::read(mounted.path().join("b001/_pkg_.a")).unwrap(),
        b"keep",
        "nothing of the mounted directory is deleted"
    );
}

#[test]
fn a_private_file_is_replaced_whole_in_a_created_directory_with_no_temporary_file_left() {
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("cache/doctor/x.cache");
    fsroot::replace_private_file(&path, &[b"ab", b"", b"cd"]).unwrap();
    assert_eq!(fsroot::read_standalone_file(&path).unwrap(), b"abcd");
    fsroot::replace_private_file(&path, &[b"e"]).unwrap();
    assert_eq!(fsroot::read_standalone_file(&path).unwrap(), b"e");
    let names: Vec<_> = std::fs::read_dir(path.parent().unwrap())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(names, ["x.cache"]);
}
