//! c28-c38. The wrong kind of entry: a file where a directory is expected (c28-c33) and a
//! directory where a file is expected (c34-c38).

use super::*;

#[test]
fn c28_threads_and_turns_are_files() {
    let c = Case::new();
    empty_store(&c.s, "w/runtime");
    write(&c.s, "w/runtime/threads", b"not a directory");
    store_with_thread(&c.s, "u/runtime", "th-u", None, 0);
    write(&c.s, "u/runtime/turns", b"not a directory");
    let o = exercise(&c);
    // Both stores may hold work the doctor cannot read: kept, untouched.
    assert!(o.real().plan.actions.is_empty(), "{:?}", o.real().plan);
    assert_eq!(o.real().summary.stores_kept_with_work, 2);
}

#[test]
fn c28_c29_unexpected_files_in_a_session_directory_are_named() {
    let c = Case::new();
    empty_store(&c.s, "w/runtime");
    write(&c.s, "w/runtime/threads", b"not a directory");
    write(&c.s, "v/runtime", b"not a directory");
    let o = exercise(&c);
    assert_says(&o.said(), "w/runtime/threads");
    assert_says(&o.said(), "v/runtime");
}

#[test]
fn c29_runtime_is_a_file() {
    let c = Case::new();
    write(&c.s, "v/runtime", b"not a directory");
    write(&c.s, "v/artifacts/log", b"x");
    let o = exercise(&c);
    // Not a store, and the directory is not artifact-only: nothing to do.
    assert!(o.real().plan.actions.is_empty(), "{:?}", o.real().plan);
}

/// `.late-usage` is a file, or a symlink: no process can hold a lease under it (the app needs a
/// real directory there), so there is no live session, at planning and at execution alike. The
/// torn document is planned and set aside, and the next run plans nothing: dry run and real
/// run agree, and the repair converges.
#[test]
fn c30_late_usage_is_a_file_or_a_symlink() {
    for odd in ["file", "symlink"] {
        let c = Case::new();
        match odd {
            "file" => write(&c.s, ".late-usage", b"not a directory"),
            _ => {
                std::fs::create_dir(c.s.join("leases")).unwrap();
                std::fs::write(c.s.join("leases/torn.live"), b"").unwrap();
                symlink("leases", &c.s.join(".late-usage"));
            }
        }
        write(&c.s, "torn.json", b"{\"torn\":");
        let o = exercise(&c);
        let out = outcome_of(o.real(), "torn.json");
        assert_eq!(out.outcome, OutcomeKind::Applied, "{odd}: {out:?}");
        assert!(!o.after.contains_key(Path::new("torn.json")), "{odd}");
        let again = lib(&c.s, true).unwrap();
        assert!(again.plan.actions.is_empty(), "{odd}: {:?}", again.plan);
    }
}

#[test]
fn c31_checkpoints_is_a_file() {
    let c = Case::new();
    write(&c.s, "checkpoints", b"not a directory");
    let o = exercise(&c);
    assert!(o.real().plan.actions.is_empty());
    assert_says(&o.said(), "ignored checkpoints  (unexpected kind of entry)");
}

#[test]
fn c32_set_aside_is_a_file() {
    let c = Case::new();
    rich_store(&c.s);
    write(&c.s, ".set-aside", b"not a directory");
    let o = exercise(&c);
    assert_says(
        &said(&o.dry),
        "ignored .set-aside  (unexpected kind of entry)",
    );
    assert_set_aside_unusable(&o);
}

#[test]
fn c33_reconcile_is_a_file() {
    let c = Case::new();
    write(&c.s, "torn.json", b"{\"torn\":");
    write(&c.s, ".reconcile", b"not a directory");
    let o = exercise(&c);
    assert_says(&o.said(), "S/.reconcile");
    assert_eq!(
        o.after.get(Path::new(".reconcile")),
        Some(&file(b"not a directory"))
    );
}

/// invariants.md: receipts are written for every action applied. When `.reconcile/` cannot be
/// written (a file, or a link out of S), the run refuses before it changes anything, instead
/// of applying its actions unreceipted and then failing on `last.json`.
#[test]
fn c24_c33_an_unusable_reconcile_dir_stops_the_run_before_it_acts() {
    for link in [false, true] {
        let c = Case::new();
        write(&c.s, "torn.json", b"{\"torn\":");
        if link {
            symlink(c.outside.join("reconcile"), &c.s.join(".reconcile"));
        } else {
            write(&c.s, ".reconcile", b"not a directory");
        }
        let o = exercise(&c);
        let err = o.real.as_ref().expect_err("the run must refuse");
        assert_says(err, "S/.reconcile");
        assert!(
            o.after.contains_key(Path::new("torn.json")),
            "torn.json was moved though no receipt could be written (link: {link})"
        );
    }
}

#[test]
fn c34_owner_json_is_a_directory() {
    let c = Case::new();
    empty_store(&c.s, "d1/runtime");
    std::fs::remove_file(c.s.join("d1/runtime/owner.json")).unwrap();
    write(&c.s, "d1/runtime/owner.json/inside", b"x");
    let o = exercise(&c);
    assert_says(&o.said(), "d1/runtime/owner.json: not a regular file");
    // Still an empty store: set aside whole, the odd directory with it.
    assert_eq!(o.real().plan.actions.len(), 1);
    assert_eq!(o.real().outcomes[0].outcome, OutcomeKind::Applied);
}

#[test]
fn c35_state_json_is_a_directory() {
    let c = Case::new();
    empty_store(&c.s, "d2/runtime");
    std::fs::remove_file(c.s.join("d2/runtime/state.json")).unwrap();
    std::fs::create_dir(c.s.join("d2/runtime/state.json")).unwrap();
    let o = exercise(&c);
    assert_says(&o.said(), "d2/runtime/state.json: not a regular file");
    assert!(
        o.real().plan.actions.is_empty(),
        "its work cannot be judged: kept"
    );
}

#[test]
fn c36_thread_record_is_a_directory() {
    let c = Case::new();
    empty_store(&c.s, "d3/runtime");
    write(&c.s, "d3/runtime/threads/th-d.json/x", b"x");
    let o = exercise(&c);
    assert_says(
        &o.said(),
        "ignored d3/runtime/threads/th-d.json  (not a thread record)",
    );
    assert!(o.real().plan.actions.is_empty());
}

#[test]
fn c37_reconcile_lock_is_a_directory() {
    let c = Case::new();
    write(&c.s, "torn.json", b"{\"torn\":");
    std::fs::create_dir(c.s.join(".reconcile.lock")).unwrap();
    let o = exercise(&c);
    let err = o.real.as_ref().expect_err("the lock cannot be taken");
    assert_says(err, ".reconcile.lock");
    assert_eq!(o.after, o.before);
}

#[test]
fn c38_owner_lock_and_live_lease_are_directories() {
    let c = Case::new();
    empty_store(&c.s, "d4/runtime");
    std::fs::remove_file(c.s.join("d4/runtime/runtime-process.owner.lock")).unwrap();
    std::fs::create_dir(c.s.join("d4/runtime/runtime-process.owner.lock")).unwrap();
    write(&c.s, "torn.json", b"{\"torn\":");
    std::fs::create_dir_all(c.s.join(".late-usage/torn.live")).unwrap();
    let o = exercise(&c);
    // An owner lock that is not a regular file cannot be probed: the store counts as held and
    // is kept, with a message naming the path. A lease that is not a regular file is no lease:
    // the torn document is set aside, at planning and at execution alike.
    assert_says(
        &o.said(),
        "d4/runtime/runtime-process.owner.lock: not a regular file",
    );
    let real = o.real();
    let paths: Vec<&str> = real.plan.actions.iter().map(|a| a.path.as_str()).collect();
    assert_eq!(paths, ["torn.json"], "{}", o.said());
    assert!(real
        .outcomes
        .iter()
        .all(|o| o.outcome == OutcomeKind::Applied));
}
