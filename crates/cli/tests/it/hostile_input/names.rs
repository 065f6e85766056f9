//! c10-c13. Names that are not UTF-8 below the top level (bad_input covers a top-level file).

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
