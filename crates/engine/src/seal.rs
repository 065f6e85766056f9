//! What every pack's planner shares once its rules have spoken: each rule's proposals in path
//! order without duplicates, the bound (`--max-actions`), and sealing (seqs and
//! preconditions, directory digests taken only for the actions that survive the bound).

use std::path::Path;

use fsroot::Root;
use plan::{Plan, PlannedAction, Precondition};

use crate::{Expect, Proposal};

/// One rule's proposals in plan order: sorted by path, duplicates dropped.
pub(crate) fn order(proposals: &mut Vec<Proposal>) {
    proposals.sort_by(|a, b| a.path.cmp(&b.path));
    proposals.dedup_by(|a, b| a.path == b.path && a.action == b.action);
}

/// A proposal in plan order, with the rule that made it and the root its path is relative to.
pub(crate) struct Ordered<'r> {
    /// The root the path is relative to (digests are taken through it).
    pub root: &'r Root,
    /// The plan's `root` field: the absolute root for packs that work on several.
    pub root_label: Option<String>,
    /// Rule code.
    pub code: &'static str,
    /// Rule name.
    pub name: &'static str,
    /// The proposal.
    pub proposal: Proposal,
}

/// The bounded, sealed plan.
pub(crate) struct Sealed {
    /// The plan.
    pub plan: Plan,
    /// Whether the bound cut the plan.
    pub limit_reached: bool,
    /// Items that could not be digested, so were not planned (each names its path).
    pub errors: Vec<String>,
}

/// Keeps the first `max_actions` proposals, counts the rest as deferred, and seals each kept
/// one with its precondition and seq. A directory that cannot be digested cannot be guarded,
/// so it is not planned.
pub(crate) fn bound_and_seal(mut ordered: Vec<Ordered<'_>>, max_actions: usize) -> Sealed {
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
                    out.errors.push(e.to_string());
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
            kind: p.kind,
            document: p.document,
            from: None,
            root: o.root_label,
            reason: p.reason,
            precondition,
        });
    }
    out
}
