//! c10-c13. Names that are not UTF-8 below the top level (bad_input covers a top-level file).
//! c91. An id that is a substring of a digest is not a name.

use super::*;

#[test]
fn c10_non_utf8_session_directory_name() {
    let c = Case::new();
    let dir = c.s.join(OsStr::from_bytes(b"sess-\xff\xfe"));
    empty_store(&dir, "runtime");
    let o = exercise(&c);
    assert!(o.real().plan.actions.is_empty(), "{:?}", o.real().plan);
    assert_says(&o.said(), "sess-\u{fffd}\u{fffd}");
    assert_says(&o.said(), "name is not UTF-8");
    assert_eq!(
        o.after.len(),
        o.before.len() + 3,
        "only the doctor's files are new"
    );
}

#[test]
fn c11_non_utf8_name_in_threads() {
    let c = Case::new();
    empty_store(&c.s, "n/runtime");
    let name =
        c.s.join("n/runtime/threads")
            .join(OsStr::from_bytes(b"th-\xff.json"));
    std::fs::create_dir_all(name.parent().unwrap()).unwrap();
    std::fs::write(&name, pretty(&thread("th-x", Some("gone")))).unwrap();
    let o = exercise(&c);
    // The store holds work it cannot read as a thread: it is kept, the entry reported.
    assert!(o.real().plan.actions.is_empty(), "{:?}", o.real().plan);
    assert_says(&o.said(), "n/runtime/threads/th-\u{fffd}.json");
    assert_eq!(o.real().summary.stores_kept_with_work, 1);
}

/// Non-UTF-8 names in the flat `turns/` (`o/runtime`) and `items/` (`i/runtime`) of stores
/// whose threads have a good turn: a file holding a turn or an item of the thread. The app
/// would read such a file (it lists every file of `turns/` and `items/`), so the doctor cannot
/// rebuild what the app would: each entry is named, each store's recovery is aborted and the
/// store kept, nothing moves.
#[test]
fn c12_non_utf8_names_in_turns_and_items() {
    let c = Case::new();
    store_with_thread(&c.s, "o/runtime", "th-o", None, 1);
    std::fs::write(
        c.s.join("o/runtime/turns")
            .join(OsStr::from_bytes(b"turn_\xff.json")),
        pretty(&turn("th-o", 9)),
    )
    .unwrap();
    store_with_thread(&c.s, "i/runtime", "th-i", None, 1);
    let [odd_item, _] = turn_items("th-i", 1);
    std::fs::write(
        c.s.join("i/runtime/items")
            .join(OsStr::from_bytes(b"item_\xff.json")),
        pretty(&odd_item),
    )
    .unwrap();
    let o = exercise(&c);
    let said = o.said();
    assert_says(&said, "o/runtime/turns/turn_\u{fffd}.json");
    assert_says(&said, "i/runtime/items/item_\u{fffd}.json");
    let real = o.real();
    assert!(real.plan.actions.is_empty(), "{:?}", real.plan);
    assert_eq!(real.summary.stores_kept_with_work, 2, "{said}");
    assert!(!o.after.contains_key(Path::new("th-o.json")));
    assert!(!o.after.contains_key(Path::new("th-i.json")));
}

#[test]
fn c13_non_utf8_name_inside_a_store_that_is_set_aside() {
    let c = Case::new();
    empty_store(&c.s, "e/runtime");
    let odd =
        c.s.join("e/runtime")
            .join(OsStr::from_bytes(b"cache-\xff\xfe.bin"));
    std::fs::write(&odd, b"\x00\x01opaque").unwrap();
    let o = exercise(&c);
    let real = o.real();
    assert_eq!(real.plan.actions.len(), 1);
    assert_eq!(real.outcomes[0].outcome, OutcomeKind::Applied);
    let moved = PathBuf::from(format!(".set-aside/{}/e/runtime", real.run))
        .join(OsStr::from_bytes(b"cache-\xff\xfe.bin"));
    assert_eq!(o.after.get(&moved), Some(&file(b"\x00\x01opaque")));
}

/// Issue 21: an artifact-only directory whose id (not a UUID) is a substring of a hex digest in
/// the document R3 recovers. The uninterrupted run collects its names before R3 writes that
/// document and sets the directory aside; a run killed right after the document landed leaves
/// it on disk, and the rerun must not take the digest for a name: it plans the same R5
/// set-aside, and reaches the uninterrupted end state.
#[test]
fn c91_an_id_inside_a_recovered_documents_digest_does_not_keep_its_directory() {
    let work = tempfile::tempdir().unwrap();
    // Every run works at this one path: the recovered document's digests are the same.
    let s = work.path().join("S");
    let pristine = work.path().join("pristine");
    store_with_thread(&pristine, "orphan/runtime", "th-orphan", None, 1);
    write(&pristine, "keep.json", pretty(&document("keep")));

    // The document R3 writes, and an id strictly inside its first 64-digit hex digest.
    common::fresh_copy(&pristine, &s);
    let first = Doctor::new()
        .args(["--repair-sessions", "--json"])
        .sessions_dir(&s)
        .now(NOW)
        .run();
    assert_eq!(first.exit_code(), 0, "{}", first.said());
    let recovered = std::fs::read_to_string(s.join("th-orphan.json")).unwrap();
    let digest = recovered
        .split(|c: char| !c.is_ascii_hexdigit())
        .find(|w| w.len() == 64)
        .unwrap_or_else(|| panic!("no SHA-256 in the recovered document: {recovered}"));
    let id = &digest[20..28];
    assert_eq!(
        recovered.matches(id).count(),
        1,
        "{id} only inside {digest}"
    );

    // The same store with an old artifact-only directory of that id.
    let old = std::time::SystemTime::UNIX_EPOCH + Duration::from_secs(1_760_000_000);
    let log = pristine.join(id).join("artifacts/build.log");
    std::fs::create_dir_all(log.parent().unwrap()).unwrap();
    std::fs::write(&log, "compiling\n").unwrap();
    for p in [log.clone(), log.parent().unwrap().into(), pristine.join(id)] {
        std::fs::File::open(&p)
            .and_then(|f| f.set_modified(old))
            .unwrap();
    }
    let r5 = |plan: &Value| -> Vec<(String, String)> {
        plan["actions"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|a| a["rule"] == "R5")
            .map(|a| (a["action"].to_string(), a["path"].to_string()))
            .collect()
    };
    let dry = |s: &Path| -> Value {
        let out = Doctor::new()
            .args(["--repair-sessions", "--dry-run", "--json"])
            .sessions_dir(s)
            .now(NOW)
            .run();
        assert_eq!(out.exit_code(), 0, "{}", out.said());
        out.json()["plan"].clone()
    };
    let real = |s: &Path| {
        let out = Doctor::new()
            .args(["--repair-sessions", "--json"])
            .sessions_dir(s)
            .now(NOW)
            .run();
        assert_eq!(out.exit_code(), 0, "{}", out.said());
    };

    // The uninterrupted run: R3 recovers th-orphan, R5 sets the directory aside.
    common::fresh_copy(&pristine, &s);
    let uninterrupted = r5(&dry(&s));
    assert_eq!(
        uninterrupted,
        [("\"set_aside\"".to_owned(), format!("\"{id}\""))],
        "the uninterrupted run sets {id} aside"
    );
    real(&s);
    let want = common::user_tree(&s);

    // Killed right after the recovered document was renamed into place.
    common::fresh_copy(&pristine, &s);
    let traced = common::traced_mutations(&s, NOW);
    let (n, _) = traced
        .iter()
        .find(|(_, what)| {
            what.starts_with("create in place")
                && what.ends_with("th-orphan.json")
                && !what.contains("threads")
        })
        .unwrap_or_else(|| panic!("no rename of the recovered document in {traced:?}"));
    common::fresh_copy(&pristine, &s);
    let said = Doctor::new()
        .args(["--repair-sessions", "--json"])
        .sessions_dir(&s)
        .now(NOW)
        .killed_at(&format!("{n}:after"))
        .expect("the kill point is reached");
    assert!(s.join("th-orphan.json").is_file(), "{said}");
    assert!(s.join(id).is_dir(), "R5 came after the kill: {said}");

    let rerun = r5(&dry(&s));
    assert_eq!(
        rerun, uninterrupted,
        "the rerun plans R5 as the uninterrupted run"
    );
    real(&s);
    let differing = common::tree_difference(&common::user_tree(&s), &want);
    assert!(
        differing.is_empty(),
        "the rerun reaches the uninterrupted end state; differing: {differing:?}"
    );
}
