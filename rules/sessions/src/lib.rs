//! The sessions rule pack and its registry: one line per rule, in planning order.

mod r1_unreadable_document;
mod r2_unbound_empty_store;
mod r3_orphan_thread;
mod r4_dangling_thread_binding;
mod r5_orphan_artifact_dir;
mod shape;

pub use r1_unreadable_document::UnreadableDocument;
pub use r2_unbound_empty_store::UnboundEmptyStore;
pub use r3_orphan_thread::OrphanThread;
pub use r4_dangling_thread_binding::DanglingThreadBinding;
pub use r5_orphan_artifact_dir::OrphanArtifactDir;

use engine::Rule;

/// The sessions pack, in planning order (rules.md: R1, R4, R3, R2, R5).
pub static RULES: &[&dyn Rule] = &[
    &UnreadableDocument,
    &DanglingThreadBinding,
    &OrphanThread,
    &UnboundEmptyStore,
    &OrphanArtifactDir,
];

// `tests` is taken by the registry test below; the rules' in-memory tests live in tests.rs.
#[cfg(test)]
#[path = "tests.rs"]
mod rule_tests;

#[cfg(test)]
mod tests {
    use super::*;
    use plan::{ActionKind, ItemKind, Plan, PlannedAction, Precondition};

    fn check(a: &PlannedAction) -> Result<(), String> {
        let plan = Plan {
            actions: vec![a.clone()],
            ..Plan::default()
        };
        engine::check_plan(RULES, &plan)
    }

    fn action(
        rule: &str,
        kind: ActionKind,
        item: Option<ItemKind>,
        path: &str,
        doc: Option<&str>,
    ) -> PlannedAction {
        PlannedAction {
            seq: 1,
            rule: rule.into(),
            rule_name: "x".into(),
            action: kind,
            path: path.into(),
            kind: item,
            document: doc.map(str::to_owned),
            from: None,
            root: None,
            reason: "r".into(),
            precondition: Precondition::File {
                bytes: 0,
                sha256: String::new(),
            },
        }
    }

    #[test]
    fn a_saved_plan_holds_only_what_the_rules_plan() {
        use ActionKind::*;
        let good = [
            action("R1", SetAside, Some(ItemKind::Document), "torn.json", None),
            action(
                "R2",
                SetAside,
                Some(ItemKind::RuntimeStore),
                "a/runtime-recovered-1",
                None,
            ),
            action("R5", SetAside, Some(ItemKind::Directory), "art", None),
            action("R2", RemoveEmptyDir, None, "emptied", None),
            action("R4", UnbindThread, None, "a/runtime/threads/t.json", None),
            action(
                "R3",
                RecoverThread,
                None,
                "a/runtime/threads/t.json",
                Some("t.json"),
            ),
            action(
                "R3",
                BindThread,
                None,
                "a/runtime/threads/t.json",
                Some("t.json"),
            ),
        ];
        for a in &good {
            assert!(check(a).is_ok(), "{a:?}");
        }
        let bad = [
            action("purge", Purge, None, "alpha.json", None),
            action(
                "R1",
                SetAside,
                Some(ItemKind::Document),
                "checkpoints/alpha.json",
                None,
            ),
            action(
                "R1",
                SetAside,
                Some(ItemKind::Document),
                ".reconcile.lock",
                None,
            ),
            action(
                "R2",
                SetAside,
                Some(ItemKind::RuntimeStore),
                "a/items",
                None,
            ),
            action("R5", SetAside, Some(ItemKind::Directory), "a/runtime", None),
            action(
                "R1",
                SetAside,
                Some(ItemKind::PreviousVersion),
                "a.json",
                None,
            ),
            action(
                "R3",
                RecoverThread,
                None,
                "a/runtime/threads/t.json",
                Some("other.json"),
            ),
            action("R4", UnbindThread, None, "a/runtime/turns/t.json", None),
            action("B1", ReclaimDir, None, "go-build1", None),
            action(
                "R2",
                SetAside,
                Some(ItemKind::RuntimeStore),
                "checkpoints/runtime",
                None,
            ),
            action(
                "R5",
                SetAside,
                Some(ItemKind::Directory),
                "checkpoints",
                None,
            ),
            action(
                "R1",
                SetAside,
                Some(ItemKind::Document),
                "session_boot_owners.json",
                None,
            ),
            action(
                "R1",
                SetAside,
                Some(ItemKind::Document),
                "latest.json",
                None,
            ),
            action("R2", RemoveEmptyDir, None, "a/runtime", None),
            action("R5", RemoveEmptyDir, None, "emptied", None),
            action("R1", Restore, Some(ItemKind::Document), "a.json", None),
        ];
        for a in &bad {
            assert!(check(a).is_err(), "{a:?}");
        }
        let mut with_from = action("R1", SetAside, Some(ItemKind::Document), "torn.json", None);
        with_from.from = Some("alpha.json".into());
        assert!(
            check(&with_from).is_err(),
            "a set-aside never carries `from`"
        );
        let mut with_doc = action("R4", UnbindThread, None, "a/runtime/threads/t.json", None);
        with_doc.document = Some("t.json".into());
        assert!(
            check(&with_doc).is_err(),
            "an unbind never names a document"
        );
        let mut with_root = action("R5", SetAside, Some(ItemKind::Directory), "art", None);
        with_root.root = Some("/tmp".into());
        assert!(check(&with_root).is_err(), "only B1 actions carry a root");
    }
}
