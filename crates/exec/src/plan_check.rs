//! What a plan file may ask of the sessions executor. `--apply-plan` applies a plan exactly,
//! so a plan edited by hand (or written for another purpose) must not be able to delete, move a
//! checkpoint, or rewrite anything the sessions pack never touches: each action must be one a
//! sessions rule plans, on a path of the shape that rule acts on.

use plan::{ActionKind, ItemKind, Plan, PlannedAction};
use store::ids::{is_reserved_top, is_store_name, is_valid_id, STRUCTURAL};

/// A session directory's name as the scan finds one: a valid id that is not a structural name
/// of S (`checkpoints`).
fn session_dir(name: &str) -> bool {
    is_valid_id(name) && !STRUCTURAL.contains(&name)
}

fn thread_path(path: &str) -> Option<&str> {
    let (store, file) = path.rsplit_once("/threads/")?;
    let (dir, name) = store.split_once('/')?;
    let tid = file.strip_suffix(".json")?;
    (session_dir(dir) && is_store_name(name) && is_valid_id(tid)).then_some(tid)
}

fn check(a: &PlannedAction) -> Result<(), &'static str> {
    let rule = a.rule.as_str();
    let p = a.path.as_str();
    // Each action kind carries exactly its own fields: a `from` on a set-aside would make the
    // precondition be checked against another file.
    let fields_fit = a.from.is_none()
        && a.root.is_none()
        && match a.action {
            ActionKind::SetAside => a.kind.is_some() && a.document.is_none(),
            ActionKind::RecoverThread | ActionKind::BindThread => {
                a.kind.is_none() && a.document.is_some()
            }
            _ => a.kind.is_none() && a.document.is_none(),
        };
    if !fields_fit {
        return Err("carries fields its kind of action never has");
    }
    let ok = match (a.action, a.kind) {
        (ActionKind::SetAside, Some(ItemKind::Document)) => {
            rule == "R1" && !is_reserved_top(p) && p.strip_suffix(".json").is_some_and(is_valid_id)
        }
        (ActionKind::SetAside, Some(ItemKind::RuntimeStore)) => {
            rule == "R2"
                && p.split_once('/')
                    .is_some_and(|(d, s)| session_dir(d) && is_store_name(s))
        }
        (ActionKind::SetAside, Some(ItemKind::Directory)) => rule == "R5" && session_dir(p),
        (ActionKind::RemoveEmptyDir, None) => rule == "R2" && session_dir(p),
        (ActionKind::UnbindThread, None) => rule == "R4" && thread_path(p).is_some(),
        (ActionKind::RecoverThread | ActionKind::BindThread, None) => {
            rule == "R3"
                && thread_path(p)
                    .is_some_and(|tid| a.document.as_deref() == Some(&format!("{tid}.json")))
        }
        _ => false,
    };
    if ok {
        Ok(())
    } else {
        Err("not an action the sessions pack plans on a path of that shape")
    }
}

/// Checks every action of a plan file; the error names the first offending action.
pub fn check_sessions_plan(plan: &Plan) -> Result<(), String> {
    for a in &plan.actions {
        check(a).map_err(|why| {
            format!(
                "action {} ({} {:?} {}): {why}",
                a.seq, a.rule, a.action, a.path
            )
        })?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use plan::Precondition;

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
    fn accepts_what_the_rules_plan_and_nothing_else() {
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
