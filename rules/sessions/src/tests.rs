//! Each sessions rule (R1-R5) on an inventory built in memory: what it proposes, what it leaves
//! (in `skipped` or a counter), and the summary field its actions move (`Rule::count`).

use std::collections::BTreeSet;
use std::path::Path;
use std::sync::Arc;

use engine::{Config, Context, Expect, Proposal, Rule, RuleOutput};
use plan::{Action, ActionKind, ItemKind, Plan, PlannedAction, Precondition};
use refset::ReferenceSet;
use store::inventory::RecoverySummary;
use store::{
    Digest, DocState, Document, Inventory, SessionDir, Store, Thread, ThreadState, Timestamp,
};

use crate::*;

/// The plan's instant.
const NOW: i64 = 1_700_000_000;
const HOUR: i64 = 3600;

// ---- builders ----------------------------------------------------------------------------

fn readable(id: &str, binds: Option<&str>) -> Document {
    Document {
        id: id.into(),
        state: DocState::Readable {
            data_dir: binds.map(Arc::from),
        },
    }
}

fn unreadable(id: &str) -> Document {
    Document {
        id: id.into(),
        state: DocState::Unreadable {
            reason: "EOF while parsing messages".into(),
            digest: Digest::of(b"{\"metadata\":").file_digest(),
        },
    }
}

/// A current thread record, bound to `session` when given. A bound one carries the digest R4
/// would leave it with, as the scan computes for dangling threads.
fn thread(id: &str, session: Option<&str>) -> Thread {
    Thread {
        id: id.into(),
        digest: Digest::of(id.as_bytes()),
        state: ThreadState::Current {
            session_id: session.map(Into::into),
            has_checkpoint: session.is_some(),
        },
        recovery: None,
        unbound_digest: session.map(|_| Box::new(Digest::of(b"unbound").file_digest())),
    }
}

/// A thread with a conversation to recover (two turns, four messages).
fn recoverable(mut t: Thread) -> Thread {
    t.recovery = Some(Box::new(RecoverySummary {
        turns: 2,
        messages: 4,
    }));
    t
}

/// `<dir>/runtime`: nobody holds it, no work, a readable `owner.json`.
fn store(dir: &str, threads: Vec<Thread>) -> Store {
    Store {
        path: format!("{dir}/runtime"),
        held: false,
        holds_work: false,
        owner_id: Some("owner-1".into()),
        threads,
        newer_thread: false,
        seeded: BTreeSet::new(),
        recovery_errors: Vec::new(),
    }
}

fn session_dir(id: &str, stores: Vec<Store>) -> SessionDir {
    SessionDir {
        id: id.into(),
        path: id.into(),
        artifact_only: false,
        empty: stores.is_empty(),
        newest_mtime: 0,
        stores,
    }
}

/// `S/<id>/` holding only artifacts, last changed `idle` seconds before [`NOW`].
fn artifact_dir(id: &str, idle: i64) -> SessionDir {
    SessionDir {
        artifact_only: true,
        empty: false,
        newest_mtime: NOW - idle,
        ..session_dir(id, Vec::new())
    }
}

fn inventory(documents: Vec<Document>, session_dirs: Vec<SessionDir>) -> Inventory {
    Inventory {
        documents,
        session_dirs,
        ..Inventory::default()
    }
}

/// Runs `rule` as the planner would (reference set, R3 gate, default config at [`NOW`]),
/// after `project` has applied what earlier rules planned.
fn plan_after(
    rule: &dyn Rule<Pack>,
    inv: &Inventory,
    project: impl FnOnce(&mut ReferenceSet),
) -> RuleOutput<Summary> {
    let anchor = Path::new("/s");
    let mut refs = ReferenceSet::build(inv, &[anchor, anchor]);
    let recoverable = engine::recoverable_stores(inv, &refs);
    project(&mut refs);
    let config = Config::new(Timestamp(NOW));
    rule.plan(&Context {
        inventory: inv,
        refs: &refs,
        recoverable: &recoverable,
        config: &config,
    })
}

fn plan(rule: &dyn Rule<Pack>, inv: &Inventory) -> RuleOutput<Summary> {
    plan_after(rule, inv, |_| {})
}

/// The only proposal of `out`.
fn only(out: &RuleOutput<Summary>) -> &Proposal {
    assert_eq!(out.proposals.len(), 1, "{:?}", out.proposals);
    &out.proposals[0]
}

fn nothing(out: &RuleOutput<Summary>) {
    assert!(out.proposals.is_empty(), "{:?}", out.proposals);
}

/// The one `skipped` entry's `why`.
fn skipped_why(out: &RuleOutput<Summary>) -> &str {
    assert_eq!(out.skipped.len(), 1, "{:?}", out.skipped);
    &out.skipped[0].why
}

fn file(d: &Digest) -> Expect {
    let d = d.file_digest();
    Expect::Known(Precondition::File {
        bytes: d.bytes,
        sha256: d.sha256,
    })
}

/// An action of `rule` as a plan holds it (the precondition does not matter here).
fn action(rule: &dyn Rule<Pack>, action: Action, path: &str) -> PlannedAction {
    PlannedAction {
        seq: 1,
        rule: rule.code().into(),
        rule_name: rule.name().into(),
        action,
        path: path.into(),
        reason: String::new(),
        precondition: Precondition::Tree {
            bytes: 0,
            tree_blake3: String::new(),
        },
    }
}

/// The summary after counting one action of `rule`, through the registry.
fn counted(rule: &dyn Rule<Pack>, kind: Action) -> Summary {
    engine::count_actions(RULES, [&action(rule, kind, "x")])
}

fn doc(document: &str) -> String {
    document.to_owned()
}

// ---- R1 unreadable-document --------------------------------------------------------------

#[test]
fn r1_sets_aside_an_unreadable_document_expecting_the_bytes_judged() {
    let inv = inventory(vec![readable("alpha", None), unreadable("torn")], vec![]);
    let out = plan(&UnreadableDocument, &inv);
    let p = only(&out);
    assert_eq!(
        (p.action.kind(), p.action.item()),
        (ActionKind::SetAside, Some(ItemKind::Document))
    );
    assert_eq!(p.path, "torn.json");
    assert_eq!(p.reason, "EOF while parsing messages");
    assert_eq!(p.expect, file(&Digest::of(b"{\"metadata\":")));
    assert_eq!(out.counts, Summary::default());
}

#[test]
fn r1_keeps_a_newer_schema_document_and_counts_it() {
    let newer = Document {
        id: "future".into(),
        state: DocState::NewerSchema {
            version: 99,
            data_dir: None,
        },
    };
    let out = plan(&UnreadableDocument, &inventory(vec![newer], vec![]));
    nothing(&out);
    assert_eq!(out.counts.documents_newer_schema, 1);
}

#[test]
fn r1_keeps_a_document_of_unknown_content_counts_and_lists_it() {
    let odd = Document {
        id: "odd".into(),
        state: DocState::UnknownContent {
            data_dir: None,
            unknown: "content block type \"hologram\"".into(),
        },
    };
    let out = plan(&UnreadableDocument, &inventory(vec![odd], vec![]));
    nothing(&out);
    assert_eq!(out.counts.documents_unknown_content, 1);
    assert!(skipped_why(&out).contains("hologram"));
}

#[test]
fn r1_never_sets_aside_the_document_of_a_live_session() {
    let mut inv = inventory(vec![unreadable("torn")], vec![]);
    inv.live_sessions.insert("torn".into());
    let out = plan(&UnreadableDocument, &inv);
    nothing(&out);
    assert_eq!(skipped_why(&out), "session is live");
}

// ---- R4 dangling-thread-binding ----------------------------------------------------------

#[test]
fn r4_reports_a_dangling_thread_whose_rewrite_could_not_be_planned() {
    let mut t = thread("t1", Some("gone"));
    t.unbound_digest = None;
    let inv = inventory(vec![], vec![session_dir("a", vec![store("a", vec![t])])]);
    let out = plan(&DanglingThreadBinding, &inv);
    assert!(out.proposals.is_empty());
    assert_eq!(out.skipped.len(), 1, "{:?}", out.skipped);
    assert_eq!(out.skipped[0].path, "a/runtime/threads/t1.json");
    assert!(
        out.skipped[0].why.contains("could not be read again"),
        "{}",
        out.skipped[0].why
    );
}

#[test]
fn r4_unbinds_a_thread_whose_session_has_no_document() {
    let inv = inventory(
        vec![],
        vec![session_dir(
            "a",
            vec![store("a", vec![thread("t1", Some("gone"))])],
        )],
    );
    let out = plan(&DanglingThreadBinding, &inv);
    let p = only(&out);
    assert_eq!(p.action, Action::UnbindThread);
    assert_eq!(p.path, "a/runtime/threads/t1.json");
    assert_eq!(p.reason, "its session document no longer exists");
    assert_eq!(
        p.expect,
        file(&Digest::of(b"t1")),
        "the record as it is now"
    );
    assert_eq!(out.counts, Summary::default());
}

#[test]
fn r4_keeps_a_thread_whose_session_has_a_document_a_checkpoint_or_a_lease() {
    let dir = || session_dir("a", vec![store("a", vec![thread("t1", Some("sid"))])]);
    let with_doc = inventory(vec![readable("sid", None)], vec![dir()]);
    nothing(&plan(&DanglingThreadBinding, &with_doc));
    let mut with_checkpoint = inventory(vec![], vec![dir()]);
    with_checkpoint.checkpoints.insert("sid".into());
    nothing(&plan(&DanglingThreadBinding, &with_checkpoint));
    let mut live = inventory(vec![], vec![dir()]);
    live.live_sessions.insert("sid".into());
    nothing(&plan(&DanglingThreadBinding, &live));
}

#[test]
fn r4_unbinds_a_thread_whose_only_document_is_unreadable() {
    let inv = inventory(
        vec![unreadable("sid")],
        vec![session_dir(
            "a",
            vec![store("a", vec![thread("t1", Some("sid"))])],
        )],
    );
    // An unreadable document is no known session, even before R1's projection.
    only(&plan(&DanglingThreadBinding, &inv));
}

#[test]
fn r4_never_touches_a_held_store() {
    let mut s = store("a", vec![thread("t1", Some("gone"))]);
    s.held = true;
    nothing(&plan(
        &DanglingThreadBinding,
        &inventory(vec![], vec![session_dir("a", vec![s])]),
    ));
}

#[test]
fn r4_keeps_a_newer_schema_thread_and_lists_it() {
    let mut t = thread("t1", Some("gone"));
    t.state = ThreadState::NewerSchema {
        version: 5,
        session_id: Some("gone".into()),
    };
    let inv = inventory(vec![], vec![session_dir("a", vec![store("a", vec![t])])]);
    let out = plan(&DanglingThreadBinding, &inv);
    nothing(&out);
    assert!(skipped_why(&out).contains("newer schema 5"));
}

#[test]
fn r4_leaves_an_unreadable_thread_record_and_counts_it() {
    let mut t = thread("t1", None);
    t.state = ThreadState::Unreadable {
        reason: "expected value".into(),
        session_id: Some("gone".into()),
    };
    let inv = inventory(vec![], vec![session_dir("a", vec![store("a", vec![t])])]);
    let out = plan(&DanglingThreadBinding, &inv);
    nothing(&out);
    assert_eq!(out.counts.threads_unreadable, 1);
    assert!(skipped_why(&out).contains("does not parse"));
}

// ---- R3 orphan-thread --------------------------------------------------------------------

/// Session directory `a` whose store holds `threads`.
fn one_store(docs: Vec<Document>, threads: Vec<Thread>) -> Inventory {
    inventory(docs, vec![session_dir("a", vec![store("a", threads)])])
}

#[test]
fn r3_recovers_an_unbound_thread_in_a_store_no_document_binds() {
    let inv = one_store(vec![], vec![recoverable(thread("t1", None))]);
    let out = plan(&OrphanThread, &inv);
    let p = only(&out);
    assert_eq!(p.action.kind(), ActionKind::RecoverThread);
    assert_eq!(p.path, "a/runtime/threads/t1.json");
    assert_eq!(p.action.document(), Some("t1.json"));
    assert_eq!(
        p.reason,
        "thread has no session document; messages: 4, turns: 2"
    );
    assert_eq!(p.expect, file(&Digest::of(b"t1")));
    assert_eq!(out.counts, Summary::default());
}

#[test]
fn r3_recovers_a_thread_r4_unbinds_expecting_the_record_r4_writes() {
    let inv = one_store(vec![], vec![recoverable(thread("t1", Some("gone")))]);
    nothing(&plan(&OrphanThread, &inv));
    let out = plan_after(&OrphanThread, &inv, |refs| {
        refs.project_thread_unbound("a/runtime/threads/t1.json")
    });
    assert_eq!(only(&out).expect, file(&Digest::of(b"unbound")));
}

#[test]
fn r3_only_binds_when_its_recovered_document_already_binds_the_store() {
    let inv = one_store(
        vec![readable("t1", Some("a/runtime"))],
        vec![recoverable(thread("t1", None))],
    );
    let p = only(&plan(&OrphanThread, &inv)).clone();
    assert_eq!(p.action.kind(), ActionKind::BindThread);
    assert_eq!(
        p.reason,
        "recovered document t1.json exists but the thread is unbound"
    );
}

#[test]
fn r3_lists_a_thread_whose_document_id_is_taken() {
    let inv = one_store(
        vec![readable("t1", None)],
        vec![recoverable(thread("t1", None))],
    );
    let out = plan(&OrphanThread, &inv);
    nothing(&out);
    assert_eq!(skipped_why(&out), "document id taken");
}

#[test]
fn r3_recovers_nothing_in_a_store_a_document_binds() {
    let inv = one_store(
        vec![readable("host", Some("a/runtime"))],
        vec![recoverable(thread("t1", None))],
    );
    let out = plan(&OrphanThread, &inv);
    nothing(&out);
    assert!(out.skipped.is_empty());
}

#[test]
fn r3_never_recovers_in_a_held_store() {
    let mut inv = one_store(vec![], vec![recoverable(thread("t1", None))]);
    inv.session_dirs[0].stores[0].held = true;
    nothing(&plan(&OrphanThread, &inv));
}

#[test]
fn r3_lists_a_thread_of_a_deleted_session() {
    let mut inv = one_store(vec![], vec![recoverable(thread("t1", None))]);
    inv.deleted_sessions.insert("t1".into());
    let out = plan(&OrphanThread, &inv);
    nothing(&out);
    assert_eq!(skipped_why(&out), "session was deleted");
}

#[test]
fn r3_reports_a_failed_recovery_as_an_error_and_keeps_the_store() {
    let mut inv = one_store(vec![], vec![recoverable(thread("t1", None))]);
    inv.session_dirs[0].stores[0].recovery_errors = vec![store::RecoveryError::DoesNotParse {
        path: "turns/x.json".into(),
        reason: "bad".into(),
    }];
    let out = plan(&OrphanThread, &inv);
    nothing(&out);
    assert!(skipped_why(&out).contains("recovery failed"));
    let [e] = &out.errors[..] else {
        panic!("one error: {:?}", out.errors)
    };
    assert_eq!(
        e.message,
        "recovery in a/runtime failed: turns/x.json does not parse: bad"
    );
    assert_eq!(
        (e.path.as_str(), e.kind),
        ("a/runtime", std::io::ErrorKind::InvalidData)
    );
}

#[test]
fn r3_leaves_a_thread_with_nothing_to_recover() {
    nothing(&plan(
        &OrphanThread,
        &one_store(vec![], vec![thread("t1", None)]),
    ));
}

// ---- R2 unbound-empty-store --------------------------------------------------------------

#[test]
fn r2_sets_aside_an_empty_store_no_document_binds() {
    let out = plan(&UnboundEmptyStore, &one_store(vec![], vec![]));
    let p = only(&out);
    assert_eq!(
        (p.action.kind(), p.action.item()),
        (ActionKind::SetAside, Some(ItemKind::RuntimeStore))
    );
    assert_eq!(p.path, "a/runtime");
    assert_eq!(p.reason, "empty runtime store no document binds");
    assert_eq!(p.expect, Expect::TreeOfPath);
    assert_eq!(out.counts, Summary::default());
}

#[test]
fn r2_names_a_deleted_session_in_its_reason() {
    let mut inv = one_store(vec![], vec![]);
    inv.deleted_sessions.insert("a".into());
    let out = plan(&UnboundEmptyStore, &inv);
    assert_eq!(
        only(&out).reason,
        "empty runtime store of a deleted session"
    );
}

#[test]
fn r2_keeps_a_store_another_sessions_document_or_a_checkpoint_binds() {
    let bound_elsewhere = one_store(vec![readable("other", Some("a/runtime"))], vec![]);
    nothing(&plan(&UnboundEmptyStore, &bound_elsewhere));
    let mut by_checkpoint = one_store(vec![], vec![]);
    by_checkpoint.checkpoints.insert("a".into());
    by_checkpoint
        .checkpoint_bindings
        .insert("a".into(), "a/runtime".into());
    nothing(&plan(&UnboundEmptyStore, &by_checkpoint));
}

#[test]
fn r2_keeps_a_store_that_holds_work_and_counts_it() {
    let mut inv = one_store(vec![], vec![]);
    inv.session_dirs[0].stores[0].holds_work = true;
    let out = plan(&UnboundEmptyStore, &inv);
    nothing(&out);
    assert_eq!(out.counts.stores_kept_with_work, 1);
}

#[test]
fn r2_keeps_a_held_store_counts_it_in_use_and_lists_it() {
    let mut inv = one_store(vec![], vec![]);
    inv.session_dirs[0].stores[0].held = true;
    let out = plan(&UnboundEmptyStore, &inv);
    nothing(&out);
    assert_eq!(out.counts.stores_in_use, 1);
    assert_eq!(skipped_why(&out), "store is in use by another process");
}

/// store-format.md, Version 2: an empty session directory holds no data and is removed, with
/// no exception for a session that has a document, a checkpoint or a name (issue 21); only a
/// live session's directory stays.
#[test]
fn r2_removes_an_empty_session_directory_unless_its_session_is_live() {
    let removes_a = |inv: &Inventory| {
        let out = plan(&UnboundEmptyStore, inv);
        let p = only(&out);
        assert_eq!((&p.action, p.path.as_str()), (&Action::RemoveEmptyDir, "a"));
    };
    removes_a(&inventory(vec![], vec![session_dir("a", vec![])]));
    let with_doc = inventory(vec![readable("a", None)], vec![session_dir("a", vec![])]);
    removes_a(&with_doc);
    let mut with_checkpoint = inventory(vec![], vec![session_dir("a", vec![])]);
    with_checkpoint.checkpoints.insert("a".into());
    removes_a(&with_checkpoint);
    let mut live = inventory(vec![readable("a", None)], vec![session_dir("a", vec![])]);
    live.live_sessions.insert("a".into());
    nothing(&plan(&UnboundEmptyStore, &live));
}

// ---- R5 orphan-artifact-dir --------------------------------------------------------------

#[test]
fn r5_sets_aside_an_idle_artifact_dir_of_no_known_session() {
    let out = plan(
        &OrphanArtifactDir,
        &inventory(vec![], vec![artifact_dir("art", 48 * HOUR)]),
    );
    let p = only(&out);
    assert_eq!(
        (p.action.kind(), p.action.item()),
        (ActionKind::SetAside, Some(ItemKind::Directory))
    );
    assert_eq!(p.path, "art");
    assert_eq!(
        p.reason,
        "artifact-only directory of no known session, unchanged for 48h"
    );
    assert_eq!(p.expect, Expect::TreeOfPath);
    assert_eq!(out.counts, Summary::default());
}

#[test]
fn r5_keeps_an_artifact_dir_changed_within_the_idle_time_and_counts_it() {
    let out = plan(
        &OrphanArtifactDir,
        &inventory(vec![], vec![artifact_dir("art", 23 * HOUR)]),
    );
    nothing(&out);
    assert_eq!(out.counts.artifact_dirs_kept, 1);
}

/// rules.md: set aside when nothing changed "for at least 24 hours" (`--artifact-idle`, the
/// default): exactly 24 hours is enough, a second less is not.
#[test]
fn r5_sets_aside_at_exactly_the_idle_time_and_not_a_second_before() {
    let at_limit = inventory(vec![], vec![artifact_dir("art", 24 * HOUR)]);
    assert_eq!(only(&plan(&OrphanArtifactDir, &at_limit)).path, "art");
    let just_before = inventory(vec![], vec![artifact_dir("art", 24 * HOUR - 1)]);
    let out = plan(&OrphanArtifactDir, &just_before);
    nothing(&out);
    assert_eq!(out.counts.artifact_dirs_kept, 1);
}

#[test]
fn r5_keeps_an_artifact_dir_a_thread_names_and_counts_it() {
    let named = session_dir("a", vec![store("a", vec![thread("t1", Some("art"))])]);
    let inv = inventory(vec![], vec![artifact_dir("art", 48 * HOUR), named]);
    let out = plan(&OrphanArtifactDir, &inv);
    nothing(&out);
    assert_eq!(out.counts.artifact_dirs_kept, 1);
}

#[test]
fn r5_never_touches_the_artifact_dir_of_a_known_or_live_session() {
    let dirs = || vec![artifact_dir("art", 48 * HOUR)];
    nothing(&plan(
        &OrphanArtifactDir,
        &inventory(vec![readable("art", None)], dirs()),
    ));
    let mut live = inventory(vec![], dirs());
    live.live_sessions.insert("art".into());
    nothing(&plan(&OrphanArtifactDir, &live));
}

#[test]
fn r5_counts_the_artifact_dir_of_a_live_session_as_kept() {
    // rules.md, Version 2: `artifact_dirs_kept` counts those kept as named, recent or live.
    let mut live = inventory(vec![], vec![artifact_dir("art", 48 * HOUR)]);
    live.live_sessions.insert("art".into());
    assert_eq!(plan(&OrphanArtifactDir, &live).counts.artifact_dirs_kept, 1);
    // A known session's directory is not the rule's to keep: not counted.
    let known = inventory(
        vec![readable("art", None)],
        vec![artifact_dir("art", 48 * HOUR)],
    );
    assert_eq!(
        plan(&OrphanArtifactDir, &known).counts.artifact_dirs_kept,
        0
    );
}

#[test]
fn r5_leaves_a_directory_that_holds_a_store() {
    nothing(&plan(&OrphanArtifactDir, &one_store(vec![], vec![])));
}

// ---- registry: what each rule plans it accepts, and what its actions count ---------------

#[test]
fn every_rules_positive_proposal_passes_the_saved_plan_check() {
    let cases: [(&dyn Rule<Pack>, Inventory); 5] = [
        (
            &UnreadableDocument,
            inventory(vec![unreadable("torn")], vec![]),
        ),
        (
            &DanglingThreadBinding,
            one_store(vec![], vec![thread("t1", Some("gone"))]),
        ),
        (
            &OrphanThread,
            one_store(vec![], vec![recoverable(thread("t1", None))]),
        ),
        (&UnboundEmptyStore, one_store(vec![], vec![])),
        (
            &OrphanArtifactDir,
            inventory(vec![], vec![artifact_dir("art", 48 * HOUR)]),
        ),
    ];
    for (rule, inv) in cases {
        let out = plan(rule, &inv);
        let p = only(&out);
        let a = action(rule, p.action.clone(), &p.path);
        let plan = Plan {
            actions: vec![a],
            ..Plan::default()
        };
        assert_eq!(engine::check_plan(RULES, &plan), Ok(()), "{}", rule.code());
    }
}

#[test]
fn r1_counts_a_document_set_aside() {
    let got = counted(
        &UnreadableDocument,
        Action::SetAside {
            kind: ItemKind::Document,
        },
    );
    assert_eq!(
        got,
        Summary {
            documents_set_aside: 1,
            ..Summary::default()
        }
    );
}

#[test]
fn r2_counts_a_store_set_aside_and_not_an_emptied_directory() {
    let got = counted(
        &UnboundEmptyStore,
        Action::SetAside {
            kind: ItemKind::RuntimeStore,
        },
    );
    assert_eq!(
        got,
        Summary {
            stores_set_aside: 1,
            ..Summary::default()
        }
    );
    let got = counted(&UnboundEmptyStore, Action::RemoveEmptyDir);
    assert_eq!(got, Summary::default());
}

#[test]
fn r3_counts_a_recovery_as_a_session_and_a_bind_as_a_thread() {
    let got = counted(
        &OrphanThread,
        Action::RecoverThread {
            document: doc("x.json"),
        },
    );
    assert_eq!(
        got,
        Summary {
            sessions_recovered: 1,
            ..Summary::default()
        }
    );
    let got = counted(
        &OrphanThread,
        Action::BindThread {
            document: doc("x.json"),
        },
    );
    assert_eq!(
        got,
        Summary {
            threads_bound: 1,
            ..Summary::default()
        }
    );
}

#[test]
fn r4_counts_a_thread_unbound() {
    let got = counted(&DanglingThreadBinding, Action::UnbindThread);
    assert_eq!(
        got,
        Summary {
            threads_unbound: 1,
            ..Summary::default()
        }
    );
}

#[test]
fn r5_counts_an_artifact_dir_set_aside() {
    let got = counted(
        &OrphanArtifactDir,
        Action::SetAside {
            kind: ItemKind::Directory,
        },
    );
    assert_eq!(
        got,
        Summary {
            artifact_dirs_set_aside: 1,
            ..Summary::default()
        }
    );
}

/// Every rule's page (what `doctor rule` prints and `cargo xtask docs` writes to docs/rules/)
/// has the sections a reader looks for, in order.
#[test]
fn every_rule_page_has_its_sections_in_order() {
    for r in RULES {
        assert_eq!(engine::missing_page_section(r.doc()), None, "{}", r.code());
    }
}
