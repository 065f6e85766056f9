//! The sessions rule pack: its registry (one line per rule, in planning order), its summary
//! and notice line, and its record of the last run (`last.json`).

mod last_run;
mod r1_unreadable_document;
mod r2_unbound_empty_store;
mod r3_orphan_thread;
mod r4_dangling_thread_binding;
mod r5_orphan_artifact_dir;
mod shape;
mod summary;

pub use last_run::{LastRun, ReconcileSummary};
pub use summary::{count, notice_line, Summary};

pub use r1_unreadable_document::UnreadableDocument;
pub use r2_unbound_empty_store::UnboundEmptyStore;
pub use r3_orphan_thread::OrphanThread;
pub use r4_dangling_thread_binding::DanglingThreadBinding;
pub use r5_orphan_artifact_dir::OrphanArtifactDir;

use engine::Rule;

/// The sessions pack as the engine sees it: its rules see [`engine::Context`] and move the
/// counters of [`Summary`].
pub type Pack = engine::Sessions<Summary>;

/// The sessions pack, in planning order (rules.md: R1, R4, R3, R2, R5).
pub static RULES: &[&dyn Rule<Pack>] = &[
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
    use plan::{Action, ItemKind, Plan, PlannedAction, Precondition};

    fn check(a: &PlannedAction) -> Result<(), String> {
        let plan = Plan {
            actions: vec![a.clone()],
            ..Plan::default()
        };
        engine::check_plan(RULES, &plan).map_err(|e| e.to_string())
    }

    fn action(rule: &str, action: Action, path: &str) -> PlannedAction {
        PlannedAction {
            seq: 1,
            rule: rule.into(),
            rule_name: "x".into(),
            action,
            path: path.into(),
            reason: "r".into(),
            precondition: Precondition::File {
                bytes: 0,
                sha256: String::new(),
            },
        }
    }

    fn set_aside(kind: ItemKind) -> Action {
        Action::SetAside { kind }
    }

    fn recover(document: &str) -> Action {
        Action::RecoverThread {
            document: document.into(),
        }
    }

    #[test]
    fn a_saved_plan_holds_only_what_the_rules_plan() {
        use ItemKind::*;
        let thread = "a/runtime/threads/t.json";
        let good = [
            action("R1", set_aside(Document), "torn.json"),
            action("R2", set_aside(RuntimeStore), "a/runtime-recovered-1"),
            action("R5", set_aside(Directory), "art"),
            action("R2", Action::RemoveEmptyDir, "emptied"),
            action("R4", Action::UnbindThread, thread),
            action("R3", recover("t.json"), thread),
            action(
                "R3",
                Action::BindThread {
                    document: "t.json".into(),
                },
                thread,
            ),
            // Housekeeping, under its own code.
            action(
                "doctor",
                set_aside(TemporaryFile),
                ".a.json.doctor-tmp-42-0",
            ),
            action(
                "doctor",
                set_aside(TemporaryFile),
                "a/runtime/threads/.t.json.doctor-tmp-42-1",
            ),
            action(
                "doctor",
                set_aside(TemporaryFile),
                ".reconcile/.last.json.doctor-tmp-42-2",
            ),
        ];
        for a in &good {
            assert!(check(a).is_ok(), "{a:?}");
        }
        let bad = [
            action("purge", Action::Purge, "alpha.json"),
            action("R1", set_aside(Document), "checkpoints/alpha.json"),
            action("R1", set_aside(Document), ".reconcile.lock"),
            action("R2", set_aside(RuntimeStore), "a/items"),
            action("R5", set_aside(Directory), "a/runtime"),
            action("R1", set_aside(PreviousVersion), "a.json"),
            action("R3", recover("other.json"), thread),
            action("R4", Action::UnbindThread, "a/runtime/turns/t.json"),
            action(
                "B1",
                Action::ReclaimDir {
                    root: "/tmp".into(),
                },
                "go-build1",
            ),
            action("R2", set_aside(RuntimeStore), "checkpoints/runtime"),
            action("R5", set_aside(Directory), "checkpoints"),
            action("R1", set_aside(Document), "session_boot_owners.json"),
            action("R1", set_aside(Document), "latest.json"),
            action("R2", Action::RemoveEmptyDir, "a/runtime"),
            action("R5", Action::RemoveEmptyDir, "emptied"),
            action(
                "R1",
                Action::Restore {
                    kind: Document,
                    from: ".set-aside/r/a.json".into(),
                },
                "a.json",
            ),
            // Housekeeping sets temporary files aside, and nothing else, under its own code.
            action("doctor", set_aside(TemporaryFile), "alpha.json"),
            action(
                "doctor",
                set_aside(TemporaryFile),
                "../.a.json.doctor-tmp-42-0",
            ),
            action("R1", set_aside(TemporaryFile), ".a.json.doctor-tmp-42-0"),
            action("doctor", set_aside(Document), ".a.json.doctor-tmp-42-0"),
            action("doctor", Action::Purge, ".a.json.doctor-tmp-42-0"),
            action("doctor", set_aside(Document), "torn.json"),
        ];
        for a in &bad {
            assert!(check(a).is_err(), "{a:?}");
        }
    }
}
