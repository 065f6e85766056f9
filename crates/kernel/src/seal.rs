//! What every pack's planner shares once its rules have spoken: each rule's proposals in path
//! order without duplicates, the bound (`--max-actions`), and sealing (seqs and
//! preconditions, directory digests taken only for the actions that survive the bound).

use std::path::Path;

use fsroot::{Problem, Root};
use plan::{Plan, PlannedAction, Precondition};

use crate::rule::{Expect, Proposal};

/// One rule's proposals in plan order: sorted by path (stable), and of the same action on the
/// same path only the first kept, wherever the repeats stand.
pub fn order<E>(proposals: &mut Vec<Proposal<E>>) {
    proposals.sort_by(|a, b| a.path.cmp(&b.path));
    let mut seen = std::collections::HashSet::new();
    proposals.retain(|p| seen.insert((p.path.clone(), p.action.kind())));
}

/// A proposal in plan order, with the rule that made it and the root its path is relative to.
pub struct Ordered<'r, E> {
    /// The root the path is relative to (digests are taken through it).
    pub root: &'r Root,
    /// Rule code.
    pub code: &'static str,
    /// Rule name.
    pub name: &'static str,
    /// The proposal.
    pub proposal: Proposal<E>,
}

/// The bounded, sealed plan.
pub struct Sealed {
    /// The plan.
    pub plan: Plan,
    /// Whether the bound cut the plan.
    pub limit_reached: bool,
    /// Items that could not be digested, so were not planned (each names its path).
    pub errors: Vec<Problem>,
}

/// Keeps the first `max_actions` proposals, counts the rest as deferred, and seals each kept
/// one with its precondition and seq. A directory that cannot be digested cannot be guarded,
/// so it is not planned.
pub fn bound_and_seal<E>(mut ordered: Vec<Ordered<'_, E>>, max_actions: usize) -> Sealed {
    let total = ordered.len();
    ordered.truncate(max_actions);
    let mut out = Sealed {
        plan: Plan {
            actions: Vec::new(),
            deferred: (total - ordered.len()) as u64,
            planned_at: None,
        },
        limit_reached: total > max_actions,
        errors: Vec::new(),
    };
    for o in ordered {
        let p = o.proposal;
        let precondition = match p.expect {
            Expect::Known(pre) => pre,
            Expect::TreeOfPath => match o.root.tree_digest(Path::new(&p.path)) {
                Ok(d) => Precondition::Tree {
                    bytes: d.bytes,
                    tree_blake3: d.tree_blake3,
                },
                Err(e) => {
                    out.errors.push(Problem::from(&e));
                    continue;
                }
            },
        };
        out.plan.actions.push(PlannedAction {
            seq: out.plan.actions.len() as u64 + 1,
            rule: o.code.to_owned(),
            rule_name: o.name.to_owned(),
            action: p.action,
            path: p.path,
            reason: p.reason,
            precondition,
        });
    }
    out
}

#[cfg(test)]
mod tests {
    //! `order` and `bound_and_seal` on proposals built in memory. The root is opened read-only
    //! on this crate's directory only because sealing takes one: known preconditions never
    //! touch it, and the one directory proposal below is refused before any system call.

    use super::*;
    use plan::{Action, ActionKind, ItemKind};

    fn recover() -> Action {
        Action::RecoverThread {
            document: "t.json".into(),
        }
    }

    /// A proposal with a known file precondition whose digest names the path.
    fn file(action: Action, path: &str, reason: &str) -> Proposal<()> {
        Proposal {
            action,
            path: path.into(),
            reason: reason.into(),
            expect: Expect::Known(known(path)),
            effect: (),
        }
    }

    fn known(path: &str) -> Precondition {
        Precondition::File {
            bytes: path.len() as u64,
            sha256: format!("sha-of-{path}"),
        }
    }

    fn set_aside(path: &str) -> Proposal<()> {
        file(
            Action::SetAside {
                kind: ItemKind::Document,
            },
            path,
            "r",
        )
    }

    fn root() -> Root {
        Root::open(Path::new(env!("CARGO_MANIFEST_DIR"))).expect("the crate directory opens")
    }

    /// `(rule code, proposal)` pairs in the order the planner hands them over.
    fn ordered<'r>(
        root: &'r Root,
        items: Vec<(&'static str, Proposal<()>)>,
    ) -> Vec<Ordered<'r, ()>> {
        items
            .into_iter()
            .map(|(code, proposal)| Ordered {
                root,
                code,
                name: "some-rule",
                proposal,
            })
            .collect()
    }

    fn paths(plan: &Plan) -> Vec<(&str, &str)> {
        plan.actions
            .iter()
            .map(|a| (a.rule.as_str(), a.path.as_str()))
            .collect()
    }

    #[test]
    fn order_sorts_one_rules_proposals_by_path() {
        let mut ps = vec![
            set_aside("c.json"),
            set_aside("a.json"),
            set_aside("b.json"),
        ];
        order(&mut ps);
        let got: Vec<_> = ps.iter().map(|p| p.path.as_str()).collect();
        assert_eq!(got, ["a.json", "b.json", "c.json"]);
    }

    #[test]
    fn order_drops_a_repeated_action_on_the_same_path_keeping_the_first() {
        let mut ps = vec![
            file(
                Action::SetAside {
                    kind: ItemKind::Document,
                },
                "a.json",
                "first",
            ),
            set_aside("b.json"),
            file(
                Action::SetAside {
                    kind: ItemKind::Document,
                },
                "a.json",
                "second",
            ),
        ];
        order(&mut ps);
        assert_eq!(ps.len(), 2);
        assert_eq!(
            (ps[0].path.as_str(), ps[0].reason.as_str()),
            ("a.json", "first")
        );
    }

    #[test]
    fn order_drops_a_repeat_that_another_action_on_the_same_path_separates() {
        let t = "s/runtime/threads/t.json";
        let mut ps = vec![
            file(Action::UnbindThread, t, "first"),
            file(recover(), t, "r"),
            file(Action::UnbindThread, t, "second"),
        ];
        order(&mut ps);
        let kept: Vec<(ActionKind, &str)> = ps
            .iter()
            .map(|p| (p.action.kind(), p.reason.as_str()))
            .collect();
        assert_eq!(
            kept,
            [
                (ActionKind::UnbindThread, "first"),
                (ActionKind::RecoverThread, "r")
            ]
        );
    }

    #[test]
    fn order_keeps_two_different_actions_on_the_same_path() {
        let t = "s/runtime/threads/t.json";
        let mut ps = vec![file(recover(), t, "r"), file(Action::UnbindThread, t, "r")];
        order(&mut ps);
        assert_eq!(
            ps.len(),
            2,
            "a duplicate is the same action on the same path"
        );
    }

    #[test]
    fn sealing_keeps_rule_order_ahead_of_path_order() {
        let root = root();
        let items = vec![("R1", set_aside("z.json")), ("R4", set_aside("a.json"))];
        let sealed = bound_and_seal(ordered(&root, items), 10);
        assert_eq!(paths(&sealed.plan), [("R1", "z.json"), ("R4", "a.json")]);
    }

    #[test]
    fn seqs_count_from_one_in_plan_order() {
        let root = root();
        let items = vec![
            ("R1", set_aside("a.json")),
            ("R1", set_aside("b.json")),
            ("R5", set_aside("c")),
        ];
        let sealed = bound_and_seal(ordered(&root, items), 10);
        let seqs: Vec<u64> = sealed.plan.actions.iter().map(|a| a.seq).collect();
        assert_eq!(seqs, [1, 2, 3]);
    }

    #[test]
    fn under_the_bound_nothing_is_deferred() {
        let root = root();
        let items = vec![("R1", set_aside("a.json")), ("R1", set_aside("b.json"))];
        let sealed = bound_and_seal(ordered(&root, items), 2);
        assert_eq!(sealed.plan.actions.len(), 2);
        assert_eq!(sealed.plan.deferred, 0);
        assert!(
            !sealed.limit_reached,
            "exactly max_actions is not over the bound"
        );
    }

    #[test]
    fn the_bound_keeps_the_first_actions_and_defers_the_rest() {
        let root = root();
        let items = vec![
            ("R1", set_aside("a.json")),
            ("R1", set_aside("b.json")),
            ("R5", set_aside("c")),
        ];
        let sealed = bound_and_seal(ordered(&root, items), 2);
        assert_eq!(paths(&sealed.plan), [("R1", "a.json"), ("R1", "b.json")]);
        assert_eq!(sealed.plan.deferred, 1);
        assert!(sealed.limit_reached);
    }

    #[test]
    fn a_bound_of_zero_defers_everything() {
        let root = root();
        let sealed = bound_and_seal(ordered(&root, vec![("R1", set_aside("a.json"))]), 0);
        assert!(sealed.plan.actions.is_empty());
        assert_eq!(sealed.plan.deferred, 1);
        assert!(sealed.limit_reached);
    }

    #[test]
    fn a_known_precondition_and_the_proposal_fields_are_carried_into_the_action() {
        let root = root();
        let p = file(recover(), "s/runtime/threads/t.json", "why");
        let items = ordered(&root, vec![("R3", p)]);
        let a = &bound_and_seal(items, 10).plan.actions[0];
        assert_eq!(a.precondition, known("s/runtime/threads/t.json"));
        assert_eq!((a.rule.as_str(), a.rule_name.as_str()), ("R3", "some-rule"));
        assert_eq!(a.action, recover());
        assert_eq!(a.reason, "why");
    }

    #[test]
    fn a_directory_that_cannot_be_digested_is_reported_and_not_planned() {
        let root = root();
        let mut bad = set_aside("../outside");
        bad.expect = Expect::TreeOfPath;
        let items = vec![("R5", bad), ("R5", set_aside("ok.json"))];
        let sealed = bound_and_seal(ordered(&root, items), 10);
        assert_eq!(paths(&sealed.plan), [("R5", "ok.json")]);
        assert_eq!(sealed.plan.actions[0].seq, 1, "seqs stay contiguous");
        assert_eq!(sealed.errors.len(), 1);
        assert!(
            sealed.errors[0].message.contains("outside"),
            "{:?}",
            sealed.errors
        );
    }

    #[test]
    fn deferred_directories_are_never_digested() {
        let root = root();
        let mut bad = set_aside("../outside");
        bad.expect = Expect::TreeOfPath;
        let items = vec![("R1", set_aside("a.json")), ("R5", bad)];
        let sealed = bound_and_seal(ordered(&root, items), 1);
        assert!(sealed.errors.is_empty(), "{:?}", sealed.errors);
        assert_eq!(sealed.plan.deferred, 1);
    }
}
