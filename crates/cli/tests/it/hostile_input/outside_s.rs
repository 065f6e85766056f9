//! c26, c27, c42. Paths that lead out of S without a symlink: bindings to `/etc` and
//! `../../..`, and hard links to files outside S.

use super::*;

fn etc_state() -> (i128, Vec<u8>) {
    let m = std::fs::metadata("/etc").unwrap();
    (
        i128::from(m.mtime()) * 1_000_000_000 + i128::from(m.mtime_nsec()),
        std::fs::read("/etc/passwd").unwrap_or_default(),
    )
}

#[test]
fn c26_binding_to_etc() {
    let c = Case::new();
    write(&c.s, "etc.json", pretty(&document_bound_to("etc", "/etc")));
    write(
        &c.s,
        "passwd.json",
        pretty(&document_bound_to("passwd", "/etc/passwd")),
    );
    let etc = etc_state();
    let o = exercise(&c);
    assert!(o.real().plan.actions.is_empty(), "{:?}", o.real().plan);
    let said = o.said();
    assert_says(&said, "binding of etc.json to \"/etc\" binds nothing");
    assert_says(
        &said,
        "binding of passwd.json to \"/etc/passwd\" binds nothing",
    );
    assert_eq!(etc_state(), etc);
}

#[test]
fn c27_binding_to_parent_directories() {
    let c = Case::new();
    let outside_store = format!("{}/../outside/store", c.s.display());
    let bindings = [
        ("up", "../../.."),
        ("upstore", "../outside/store"),
        ("sneaky", "x/../../outside/store"),
        ("absolute", outside_store.as_str()),
    ];
    for (id, data_dir) in bindings {
        write(
            &c.s,
            &format!("{id}.json"),
            pretty(&document_bound_to(id, data_dir)),
        );
    }
    let o = exercise(&c);
    assert!(o.real().plan.actions.is_empty(), "{:?}", o.real().plan);
    let said = o.said();
    for (id, data_dir) in bindings {
        assert_says(
            &said,
            &format!("binding of {id}.json to {data_dir:?} binds nothing"),
        );
    }
}

/// A thread record that is a hard link to a file outside S, and a torn document that is one:
/// R4's rewrite replaces the link atomically (the file outside keeps its bytes), and R1 moves
/// the link (the file outside is untouched).
#[test]
fn c42_hard_links_to_files_outside_s() {
    let c = Case::new();
    store_with_thread(&c.s, "hl/runtime", "th-out", Some("nobody"), 0);
    let rec = c.s.join("hl/runtime/threads/th-out.json");
    std::fs::remove_file(&rec).unwrap();
    std::fs::hard_link(c.outside.join("thread.json"), &rec).unwrap();
    std::fs::hard_link(c.outside.join("torn.json"), c.s.join("linked.json")).unwrap();
    let o = exercise(&c);
    let real = o.real();
    let mut paths: Vec<&str> = real.plan.actions.iter().map(|a| a.path.as_str()).collect();
    paths.sort();
    assert_eq!(paths, ["hl/runtime/threads/th-out.json", "linked.json"]);
    assert!(real
        .outcomes
        .iter()
        .all(|o| o.outcome == OutcomeKind::Applied));
    let now: Value = serde_json::from_slice(&std::fs::read(&rec).unwrap()).unwrap();
    assert!(
        now.get("session_id").is_none(),
        "the record in S was unbound"
    );
}
