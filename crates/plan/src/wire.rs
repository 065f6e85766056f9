//! The JSON form of a [`PlannedAction`](crate::PlannedAction): one flat object whose optional
//! `kind`, `document`, `from` and `root` appear only on the actions that have them. Reading
//! refuses an object whose fields do not fit its `action`, so a parsed plan holds only actions
//! the executor can apply as they are.

use serde::{Deserialize, Serialize};

use crate::{ActionKind, ItemKind, Precondition};

#[derive(Serialize, Deserialize)]
pub(crate) struct Action {
    seq: u64,
    rule: String,
    rule_name: String,
    action: ActionKind,
    path: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    kind: Option<ItemKind>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    document: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    from: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    root: Option<String>,
    reason: String,
    precondition: Precondition,
}

impl From<crate::PlannedAction> for Action {
    fn from(a: crate::PlannedAction) -> Action {
        let kind = a.action.kind();
        let item = a.action.item();
        let (document, from, root) = match a.action {
            crate::Action::RecoverThread { document } | crate::Action::BindThread { document } => {
                (Some(document), None, None)
            }
            crate::Action::Restore { from, .. } | crate::Action::FinishSetAside { from } => {
                (None, Some(from), None)
            }
            crate::Action::ReclaimDir { root } => (None, None, Some(root)),
            _ => (None, None, None),
        };
        Action {
            seq: a.seq,
            rule: a.rule,
            rule_name: a.rule_name,
            action: kind,
            path: a.path,
            kind: item,
            document,
            from,
            root,
            reason: a.reason,
            precondition: a.precondition,
        }
    }
}

impl TryFrom<Action> for crate::PlannedAction {
    type Error = String;

    fn try_from(w: Action) -> Result<crate::PlannedAction, String> {
        use crate::Action as A;
        let action = match (w.action, w.kind, w.document, w.from, w.root) {
            (ActionKind::SetAside, Some(kind), None, None, None) => A::SetAside { kind },
            (ActionKind::UnbindThread, None, None, None, None) => A::UnbindThread,
            (ActionKind::RecoverThread, None, Some(document), None, None) => {
                A::RecoverThread { document }
            }
            (ActionKind::BindThread, None, Some(document), None, None) => {
                A::BindThread { document }
            }
            (ActionKind::ReclaimDir, None, None, None, Some(root)) => A::ReclaimDir { root },
            (ActionKind::Restore, Some(kind), None, Some(from), None) => A::Restore { kind, from },
            (ActionKind::FinishSetAside, Some(ItemKind::RuntimeStore), None, Some(from), None) => {
                A::FinishSetAside { from }
            }
            (ActionKind::Purge, None, None, None, None) => A::Purge,
            (ActionKind::RemoveTemp, ..) => {
                return Err(format!(
                    "action {} (remove_temp {}): the doctor no longer deletes temporary files, \
                     it sets them aside; make a new plan",
                    w.seq, w.path
                ))
            }
            (ActionKind::RemoveEmptyDir, None, None, None, None) => A::RemoveEmptyDir,
            (kind, ..) => {
                return Err(format!(
                    "action {} ({kind:?} {}) carries fields its kind of action never has, or \
                     lacks one it needs",
                    w.seq, w.path
                ))
            }
        };
        Ok(crate::PlannedAction {
            seq: w.seq,
            rule: w.rule,
            rule_name: w.rule_name,
            action,
            path: w.path,
            reason: w.reason,
            precondition: w.precondition,
        })
    }
}

#[cfg(test)]
mod tests {
    use crate::{Action, ItemKind, PlannedAction};

    fn parse(fields: &str) -> Result<PlannedAction, String> {
        let json = format!(
            r#"{{"seq": 3, "rule": "R", "rule_name": "r", "path": "p", "reason": "why",
                "precondition": {{"bytes": 1, "sha256": "ab"}}, {fields}}}"#
        );
        serde_json::from_str(&json).map_err(|e| e.to_string())
    }

    #[test]
    fn each_action_reads_with_exactly_its_fields_and_writes_back_the_same() {
        let cases = [
            (
                r#""action": "set_aside", "kind": "document""#,
                Action::SetAside {
                    kind: ItemKind::Document,
                },
            ),
            (r#""action": "unbind_thread""#, Action::UnbindThread),
            (
                r#""action": "recover_thread", "document": "t.json""#,
                Action::RecoverThread {
                    document: "t.json".into(),
                },
            ),
            (
                r#""action": "bind_thread", "document": "t.json""#,
                Action::BindThread {
                    document: "t.json".into(),
                },
            ),
            (
                r#""action": "reclaim_dir", "root": "/tmp""#,
                Action::ReclaimDir {
                    root: "/tmp".into(),
                },
            ),
            (
                r#""action": "restore", "kind": "runtime_store", "from": ".set-aside/r/a/runtime""#,
                Action::Restore {
                    kind: ItemKind::RuntimeStore,
                    from: ".set-aside/r/a/runtime".into(),
                },
            ),
            (
                r#""action": "finish_set_aside", "kind": "runtime_store", "from": "a/runtime""#,
                Action::FinishSetAside {
                    from: "a/runtime".into(),
                },
            ),
            (r#""action": "purge""#, Action::Purge),
            (
                r#""action": "set_aside", "kind": "temporary_file""#,
                Action::SetAside {
                    kind: ItemKind::TemporaryFile,
                },
            ),
            (r#""action": "remove_empty_dir""#, Action::RemoveEmptyDir),
        ];
        for (fields, want) in cases {
            let a = parse(fields).unwrap_or_else(|e| panic!("{fields}: {e}"));
            assert_eq!(a.action, want, "{fields}");
            let again: PlannedAction =
                serde_json::from_value(serde_json::to_value(&a).unwrap()).unwrap();
            assert_eq!(again, a, "{fields}");
        }
    }

    #[test]
    fn an_action_with_a_field_its_kind_never_has_or_without_one_it_needs_is_refused() {
        for fields in [
            r#""action": "set_aside""#,
            r#""action": "set_aside", "kind": "document", "from": "alpha.json""#,
            r#""action": "set_aside", "kind": "directory", "root": "/tmp""#,
            r#""action": "unbind_thread", "document": "t.json""#,
            r#""action": "recover_thread""#,
            r#""action": "reclaim_dir""#,
            r#""action": "restore", "kind": "document""#,
            r#""action": "restore", "from": "x""#,
            r#""action": "finish_set_aside", "from": "a/runtime""#,
            r#""action": "finish_set_aside", "kind": "document", "from": "a.json""#,
            r#""action": "purge", "kind": "document""#,
            r#""action": "remove_temp", "root": "/""#,
            // Earlier versions deleted temporary files: such a plan is refused, never applied.
            r#""action": "remove_temp""#,
        ] {
            let err = parse(fields).expect_err(fields);
            assert!(err.contains("action 3"), "{fields}: {err}");
        }
    }
}
