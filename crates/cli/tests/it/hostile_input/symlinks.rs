//! c17-c25, c67. Symlinks: loops, and links out of S in place of a session directory, a store,
//! a thread record, a document, a store's turns and items, `.set-aside`, `.reconcile` and
//! `.reconcile.lock`; a restore through a session directory swapped for a symlink.

use super::*;

#[test]
fn c17_symlink_loops_inside_a_store_and_at_the_top() {
    let c = Case::new();
    store_with_thread(&c.s, "l/runtime", "th-l", None, 0);
    symlink("loop.json", &c.s.join("l/runtime/threads/loop.json"));
    symlink("loop.json", &c.s.join("l/runtime/turns/loop.json"));
    symlink("runtime-recovered-1", &c.s.join("l/runtime-recovered-1"));
    symlink("ring-b", &c.s.join("ring-a"));
    symlink("ring-a", &c.s.join("ring-b"));
    let o = exercise(&c);
    assert!(o.real().plan.actions.is_empty(), "{:?}", o.real().plan);
    let said = o.said();
    for p in [
        "l/runtime/threads/loop.json",
        "l/runtime-recovered-1",
        "ring-a",
        "ring-b",
    ] {
        assert_says(&said, p);
    }
    assert!(!said.contains("many levels of symbolic links"), "{said}");
}

#[test]
fn c18_symlink_out_of_s_in_place_of_a_session_directory() {
    let c = Case::new();
    symlink(c.outside.join("session"), &c.s.join("away"));
    let o = exercise(&c);
    assert!(o.real().plan.actions.is_empty(), "{:?}", o.real().plan);
    assert_says(&o.said(), "ignored away  (symlink (never followed))");
}

#[test]
fn c19_symlink_out_of_s_in_place_of_a_store() {
    let c = Case::new();
    symlink(c.outside.join("store"), &c.s.join("x/runtime"));
    // The app records the canonical path of the store; S is canonical, `x/runtime` is the link.
    write(
        &c.s,
        "x.json",
        pretty(&bound_document(&c.s, "x", "x/runtime")),
    );
    let o = exercise(&c);
    assert!(o.real().plan.actions.is_empty(), "{:?}", o.real().plan);
    let said = o.said();
    assert_says(&said, "ignored x/runtime  (symlink (never followed))");
    assert_says(
        &said,
        &format!(
            "binding of x.json to {:?} binds nothing",
            data_dir(&c.s, "x/runtime")
        ),
    );
}

#[test]
fn c20_symlink_out_of_s_in_place_of_a_thread_record() {
    let c = Case::new();
    store_with_thread(&c.s, "y/runtime", "th-y", Some("gone"), 0);
    symlink(
        c.outside.join("thread.json"),
        &c.s.join("y/runtime/threads/th-out.json"),
    );
    let o = exercise(&c);
    // The real thread with a dangling binding is unbound; the link is neither read nor
    // rewritten.
    let real = o.real();
    let paths: Vec<&str> = real.plan.actions.iter().map(|a| a.path.as_str()).collect();
    assert_eq!(paths, ["y/runtime/threads/th-y.json"]);
    assert_says(&o.said(), "y/runtime/threads/th-out.json");
}

/// A symlink out of S named `gone.json`, to a torn document (following the link would set the
/// target aside), next to a store whose thread is bound to `gone`. The link is listed as ignored
/// and neither it nor its target is touched.
#[test]
fn c21_symlink_out_of_s_in_place_of_a_document() {
    // bad_input links x.json to a readable document; here the target is torn.
    let c = linked_document();
    let o = exercise(&c);
    assert_says(&o.said(), "ignored gone.json  (symlink (never followed))");
    let real = o.real();
    assert!(real.plan.actions.iter().all(|a| a.path != "gone.json"));
    assert_eq!(
        o.after.get(Path::new("gone.json")),
        o.before.get(Path::new("gone.json"))
    );
}

fn linked_document() -> Case {
    let c = Case::new();
    symlink(c.outside.join("torn.json"), &c.s.join("gone.json"));
    store_with_thread(&c.s, "g/runtime", "th-g", Some("gone"), 1);
    c
}

/// store-format.md: a symlink is never a document. So the thread bound to `gone` names no known
/// session: the dry run plans R4 and R3 for it, and the real run must do what the dry run
/// planned, after which a further run plans nothing.
#[test]
fn c21_a_link_named_like_a_document_is_no_document_and_the_repair_converges() {
    let c = linked_document();
    let o = exercise(&c);
    let real = o.real();
    assert_eq!(real.plan.actions.len(), 2, "{}", o.said());
    for out in &real.outcomes {
        assert_eq!(out.outcome, OutcomeKind::Applied, "{out:?}");
    }
    let again = lib(&c.s, true).unwrap();
    assert!(again.plan.actions.is_empty(), "{:?}", again.plan);
}

/// `turns/` and `items/` of a store are symlinks out of S, to a turn of the store's thread and
/// its items (whose text is `OUTSIDE-SECRET`); a turn file is a symlink out of S too.
#[test]
fn c22_symlinks_out_of_s_in_place_of_turns_items_and_a_turn() {
    let c = Case::new();
    store_with_thread(&c.s, "z/runtime", "th-z", None, 0);
    symlink(c.outside.join("turns"), &c.s.join("z/runtime/turns"));
    symlink(c.outside.join("items"), &c.s.join("z/runtime/items"));
    store_with_thread(&c.s, "z2/runtime", "th-z", None, 0);
    symlink(
        c.outside.join(format!("turns/{}.json", turn_id("th-z", 1))),
        &c.s.join(format!("z2/runtime/turns/{}.json", turn_id("th-z", 1))),
    );
    let o = exercise(&c);
    // The turns and items behind the links are not read: nothing is recovered.
    assert!(o.real().plan.actions.is_empty(), "{:?}", o.real().plan);
    for (p, n) in &o.after {
        if let Node::File(b) = n {
            assert!(
                !String::from_utf8_lossy(b).contains("OUTSIDE-SECRET"),
                "{} holds content read through the link",
                p.display()
            );
        }
    }
}

/// The executor must never move an item into a `.set-aside` that leads outside S. Either the run
/// refuses before it acts, naming `.set-aside`, or every action that needs it fails naming it
/// (thread rewrites too: their previous version cannot be kept first). Either way nothing in S
/// changes and the directory outside stays empty.
#[test]
fn c23_set_aside_is_a_symlink_out_of_s() {
    let c = Case::new();
    rich_store(&c.s);
    symlink(c.outside.join("aside"), &c.s.join(".set-aside"));
    let o = exercise(&c);
    assert_set_aside_unusable(&o);
}

#[test]
fn c24_reconcile_dir_is_a_symlink_out_of_s() {
    let c = Case::new();
    write(&c.s, "torn.json", b"{\"torn\":");
    symlink(c.outside.join("reconcile"), &c.s.join(".reconcile"));
    let o = exercise(&c);
    let said = o.said();
    assert_says(&said, "S/.reconcile");
    assert!(std::fs::read_dir(c.outside.join("reconcile"))
        .unwrap()
        .next()
        .is_none());
}

#[test]
fn c25_reconcile_lock_is_a_symlink_out_of_s() {
    let c = Case::new();
    write(&c.s, "torn.json", b"{\"torn\":");
    symlink(c.outside.join("lockfile"), &c.s.join(".reconcile.lock"));
    let o = exercise(&c);
    assert_eq!(o.dry().plan.actions.len(), 1);
    let err = o
        .real
        .as_ref()
        .expect_err("a real run must refuse the lock");
    assert_says(err, ".reconcile.lock");
    assert_eq!(o.after, o.before, "a refused run writes nothing");
}

/// After a real repair set the empty store `e/runtime` aside, `S/e` is replaced by a symlink
/// to another directory inside S. `--restore RUN` (dry and real) cannot look at `e/runtime`
/// without following the link: it skips that item, saying why, instead of failing the whole
/// restore; both exit 0, plan the same, and nothing lands in the link's target.
#[test]
fn c67_a_restore_through_a_symlinked_session_directory_skips_the_item() {
    let c = Case::new();
    empty_store(&c.s, "e/runtime");
    let repaired = lib(&c.s, false).unwrap();
    assert_eq!(
        outcome_of(&repaired, "e/runtime").outcome,
        OutcomeKind::Applied
    );
    let run = repaired.run.clone();
    let aside = c.s.join(format!(".set-aside/{run}/e/runtime"));
    assert!(aside.is_dir());
    if std::fs::symlink_metadata(c.s.join("e")).is_ok() {
        std::fs::remove_dir_all(c.s.join("e")).unwrap();
    }
    write(&c.s, "elsewhere/note.txt", b"theirs\n");
    symlink("elsewhere", &c.s.join("e"));
    let aside_before = tree(&aside);

    let mut plans = Vec::new();
    for dry_run in [true, false] {
        let mut args: Vec<&OsStr> = vec!["--restore".as_ref(), run.as_ref(), "--json".as_ref()];
        if dry_run {
            args.push("--dry-run".as_ref());
        }
        args.extend(["--sessions-dir".as_ref(), c.s.as_os_str()]);
        let out = doctor_args(&args, Duration::from_secs(30));
        let said = out.said();
        assert!(!out.timed_out, "{said}");
        assert_eq!(
            out.code,
            Some(1),
            "dry_run {dry_run}: a restore that skips an item fails: {said}"
        );
        let report: Value = serde_json::from_str(&out.stdout)
            .unwrap_or_else(|e| panic!("dry_run {dry_run} ({e}): {said}"));
        let skipped = report["skipped"].as_array().unwrap();
        assert!(
            skipped.iter().any(|k| k["path"] == "e/runtime"
                && k["why"]
                    .as_str()
                    .is_some_and(|w| w.contains("symlink") || w.contains("kept"))),
            "dry_run {dry_run}: e/runtime is not skipped naming the symlink: {report:#}"
        );
        assert!(
            report["plan"]["actions"]
                .as_array()
                .unwrap()
                .iter()
                .all(|a| a["path"] != "e/runtime"),
            "dry_run {dry_run}: {report:#}"
        );
        plans.push(report["plan"]["actions"].clone());
    }
    assert_eq!(plans[0], plans[1], "the dry run's plan is the real run's");
    assert_eq!(
        tree(&c.s.join("elsewhere")),
        Tree::from([(PathBuf::from("note.txt"), file(b"theirs\n"))]),
        "nothing was restored through the symlink"
    );
    assert_eq!(
        std::fs::read_link(c.s.join("e")).ok(),
        Some(PathBuf::from("elsewhere"))
    );
    assert_eq!(tree(&aside), aside_before, "the store stays in the run");
}
