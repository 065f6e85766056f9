//! c43-c47. Filesystems: a read-only S, ENOSPC (no inode, no byte left) and EXDEV (a store, or
//! `.set-aside`, on another filesystem), on small tmpfs mounts. Needs root and a permitted
//! `mount`; each case prints why it is skipped otherwise.

use super::*;

/// A mounted filesystem, unmounted on drop (lazily if busy).
struct Mount(PathBuf);

impl Drop for Mount {
    fn drop(&mut self) {
        let ok = Command::new("umount")
            .arg(&self.0)
            .status()
            .is_ok_and(|s| s.success());
        if !ok {
            let _ = Command::new("umount").arg("-l").arg(&self.0).status();
        }
    }
}

fn mount_cmd(args: &[&OsStr]) -> bool {
    Command::new("mount")
        .args(args)
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// Mounts a tmpfs with `options` at `at` (created).
fn tmpfs(at: &Path, options: &str) -> Option<Mount> {
    std::fs::create_dir_all(at).unwrap();
    mount_cmd(&[
        "-t".as_ref(),
        "tmpfs".as_ref(),
        "-o".as_ref(),
        options.as_ref(),
        "tmpfs".as_ref(),
        at.as_os_str(),
    ])
    .then(|| Mount(at.to_path_buf()))
}

/// Whether this process may mount filesystems; prints why not, for the skipping test.
fn can_mount(class: &str) -> bool {
    static OK: OnceLock<Result<(), String>> = OnceLock::new();
    let ok = OK.get_or_init(|| {
        if !is_root() {
            return Err("not running as root".into());
        }
        let tmp = tempfile::tempdir().unwrap();
        match tmpfs(&tmp.path().join("m"), "size=1m") {
            Some(_m) => Ok(()),
            None => Err("mount -t tmpfs is not permitted here".into()),
        }
    });
    match ok {
        Ok(()) => true,
        Err(why) => {
            println!("SKIPPED {class}: {why}");
            false
        }
    }
}

/// `stat -f` of the filesystem holding `p`: (free inodes, free blocks, block size).
fn fs_free(p: &Path) -> (u64, u64, u64) {
    let out = Command::new("stat")
        .args(["-f", "-c", "%d %f %S"])
        .arg(p)
        .output()
        .unwrap();
    let text = String::from_utf8(out.stdout).unwrap();
    let v: Vec<u64> = text
        .split_whitespace()
        .map(|w| w.parse().unwrap())
        .collect();
    (v[0], v[1], v[2])
}

/// A read-only S (a tmpfs remounted read-only): a dry run plans as usual; a real run fails
/// before it changes anything, naming the lock file and the reason.
#[test]
fn c43_read_only_s() {
    if !can_mount("c43") {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let mnt = tmp.path().join("ro");
    let Some(_m) = tmpfs(&mnt, "size=8m") else {
        println!("SKIPPED c43: tmpfs mount failed");
        return;
    };
    let c = Case::at(mnt.join("S"));
    rich_store(&c.s);
    assert!(
        mount_cmd(&["-o".as_ref(), "remount,ro".as_ref(), mnt.as_os_str()]),
        "remount read-only"
    );
    let o = exercise(&c);
    assert_eq!(o.dry().plan.actions.len(), RICH_ACTIONS);
    let err = o
        .real
        .as_ref()
        .expect_err("a read-only S cannot be repaired");
    assert_says(err, ".reconcile.lock");
    assert_says(err, "Read-only file system");
    assert_eq!(o.after, o.before);
}

/// ENOSPC (no inode left) in the middle of setting a store aside: the destination directory
/// cannot be created; nothing of the store moves; the receipt of the failure names the store
/// and the reason. With no inode left for `last.json` either, the run then fails, naming it.
#[test]
fn c44_enospc_no_inode_left_while_moving_a_store() {
    if !can_mount("c44") {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let mnt = tmp.path().join("full");
    let Some(_m) = tmpfs(&mnt, "size=16m,nr_inodes=600") else {
        println!("SKIPPED c44: tmpfs mount failed");
        return;
    };
    let c = Case::at(mnt.join("S"));
    empty_store(&c.s, "e/runtime");
    // The doctor's own files exist already, so the run needs an inode for its run directory,
    // one for MANIFEST.jsonl, and then two for the store's destination: leave two.
    write(&c.s, ".reconcile.lock", b"");
    write(&c.s, ".reconcile/receipts.jsonl", b"");
    std::fs::create_dir_all(c.s.join(".set-aside")).unwrap();
    let filler = mnt.join("filler");
    std::fs::create_dir(&filler).unwrap();
    let (free, _, _) = fs_free(&mnt);
    for i in 0..free.saturating_sub(2) {
        std::fs::write(filler.join(i.to_string()), b"").unwrap();
    }
    assert_eq!(fs_free(&mnt).0, 2, "inodes left");

    let o = exercise(&c);
    assert_eq!(o.dry().plan.actions.len(), 1);
    match &o.real {
        Ok(report) => {
            assert_eq!(report.outcomes[0].outcome, OutcomeKind::Failed);
        }
        Err(e) => {
            assert_says(e, "S/.reconcile/");
            assert_says(e, "last.json");
            assert_says(e, "No space left on device");
        }
    }
    let r = receipts(&c.s);
    assert_eq!(r.len(), 1, "{r:?}");
    assert_eq!(r[0]["path"], "e/runtime");
    assert_eq!(r[0]["outcome"], "failed");
    let why = r[0]["why"].as_str().unwrap();
    assert!(why.contains("No space left on device"), "{why}");
    assert!(why.contains("e/runtime"), "{why}");
    for (p, n) in o
        .before
        .iter()
        .filter(|(p, _)| !p.starts_with(".reconcile"))
    {
        assert_eq!(o.after.get(p), Some(n), "{}", p.display());
    }
}

/// ENOSPC (no byte left) in the middle of a recovery: the previous version of the thread record
/// is kept, then the recovered document does not fit. The thread record is not rewritten, no
/// partial document is left, the failure names the document; after the temporary file is
/// removed, receipts and last.json fit again.
#[test]
fn c45_enospc_no_space_left_while_writing_a_recovered_document() {
    if !can_mount("c45") {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let mnt = tmp.path().join("full");
    let Some(_m) = tmpfs(&mnt, "size=4m") else {
        println!("SKIPPED c45: tmpfs mount failed");
        return;
    };
    let c = Case::at(mnt.join("S"));
    store_with_thread(&c.s, "big/runtime", "th-big", None, 1);
    let [_, mut answer] = turn_items("th-big", 1);
    answer["detail"] = json!("z".repeat(400 << 10));
    write(
        &c.s,
        &format!("big/runtime/items/{}.json", answer["id"].as_str().unwrap()),
        pretty(&answer),
    );
    let (_, free_blocks, block) = fs_free(&mnt);
    assert_eq!(block, 4096);
    // Leave 8 pages: enough for the manifest, the previous version, receipts and last.json,
    // not for a 400 KiB document.
    let keep = 8;
    std::fs::write(
        mnt.join("filler"),
        vec![0u8; ((free_blocks - keep) * block) as usize],
    )
    .unwrap();
    let o = exercise(&c);
    let real = o.real();
    let out = outcome_of(real, "big/runtime/threads/th-big.json");
    assert_eq!(out.outcome, OutcomeKind::Failed, "{}", o.said());
    let why = out.why.as_deref().unwrap();
    assert!(
        why.contains("th-big.json") && why.contains("No space left on device"),
        "{why}"
    );
    assert_eq!(
        o.after.get(Path::new("big/runtime/threads/th-big.json")),
        o.before.get(Path::new("big/runtime/threads/th-big.json")),
        "the thread record was rewritten though its document could not be written"
    );
    assert!(!o.after.contains_key(Path::new("th-big.json")));
    assert!(
        !o.after
            .keys()
            .any(|p| p.to_string_lossy().contains("doctor-tmp")),
        "a temporary file was left"
    );
}

/// EXDEV: the store's directory is a mount point of another filesystem, so no entry can be
/// renamed into `.set-aside/` on S's filesystem. The move fails on its first entry, nothing
/// moves, and the failure names the store and the reason.
#[test]
fn c46_exdev_a_store_on_another_filesystem() {
    if !can_mount("c46") {
        return;
    }
    let c = Case::new();
    let store = c.s.join("m/runtime");
    let Some(_m) = tmpfs(&store, "size=1m") else {
        println!("SKIPPED c46: tmpfs mount failed");
        return;
    };
    empty_store(&c.s, "m/runtime");
    let o = exercise(&c);
    let real = o.real();
    let out = outcome_of(real, "m/runtime");
    assert_eq!(out.outcome, OutcomeKind::Failed);
    let why = out.why.as_deref().unwrap();
    assert!(
        why.contains("m/runtime") && why.contains("cross-device"),
        "{why}"
    );
    for (p, n) in &o.before {
        assert_eq!(o.after.get(p), Some(n), "{}", p.display());
    }
}

/// EXDEV the other way: `.set-aside` is another filesystem. A torn document cannot be moved
/// there (failed, named); a thread rewrite still works, because its previous version is copied,
/// not renamed.
#[test]
fn c47_exdev_set_aside_on_another_filesystem() {
    if !can_mount("c47") {
        return;
    }
    let c = Case::new();
    let Some(_m) = tmpfs(&c.s.join(".set-aside"), "size=1m") else {
        println!("SKIPPED c47: tmpfs mount failed");
        return;
    };
    write(&c.s, "torn.json", b"{\"torn\":");
    store_with_thread(&c.s, "lost/runtime", "th-lost", Some("lost"), 0);
    let o = exercise(&c);
    let real = o.real();
    let torn = outcome_of(real, "torn.json");
    assert_eq!(torn.outcome, OutcomeKind::Failed);
    let why = torn.why.as_deref().unwrap();
    assert!(
        why.contains("torn.json") && why.contains("cross-device"),
        "{why}"
    );
    assert_eq!(
        outcome_of(real, "lost/runtime/threads/th-lost.json").outcome,
        OutcomeKind::Applied
    );
    assert!(o.after.contains_key(Path::new("torn.json")));
}
