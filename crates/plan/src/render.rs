//! Text rendering of plans and outcomes, shared by the dry run and the real run.

use crate::{Outcome, OutcomeKind, PlannedAction, Skipped};

/// `would set aside torn.json  (R1 unreadable-document: <reason>)`, or the past tense.
pub fn render_action(a: &PlannedAction, dry_run: bool) -> String {
    // The finish of a store move a kill cut short names both ends: from the store's path into
    // its run.
    if let crate::Action::FinishSetAside { from } = &a.action {
        let verb = if dry_run {
            "would finish moving"
        } else {
            "finished moving"
        };
        return format!(
            "{verb} {from} into {}  ({} {}: {})",
            a.path, a.rule, a.rule_name, a.reason
        );
    }
    let verb = if dry_run {
        format!("would {}", a.action.kind().verb())
    } else {
        a.action.kind().past().to_owned()
    };
    let doc = match a.action.document() {
        Some(d) => format!(" as {d}"),
        None => String::new(),
    };
    format!(
        "{verb} {}{doc}  ({} {}: {})",
        shown_path(a),
        a.rule,
        a.rule_name,
        a.reason
    )
}

/// The action's path as a reader should see it: joined to its root when it has one (B1),
/// since a run over several roots would otherwise be ambiguous.
pub fn shown_path(a: &PlannedAction) -> String {
    match a.action.root() {
        Some(root) => format!("{}/{}", root.trim_end_matches('/'), a.path),
        None => a.path.clone(),
    }
}

/// One line per action, in plan order: the dry-run or past-tense line of an action that was
/// applied (or, in a dry run, planned), and `skipped|failed <path>  (<rule> <name>: <why>)` for
/// one that was not.
pub fn render_actions(actions: &[PlannedAction], outcomes: &[Outcome], dry_run: bool) -> String {
    let mut out = String::new();
    for a in actions {
        let line = match outcomes.iter().find(|o| o.seq == a.seq) {
            Some(Outcome {
                outcome: OutcomeKind::Applied,
                ..
            })
            | None => render_action(a, dry_run),
            Some(Outcome { outcome, why, .. }) => {
                let word = if *outcome == OutcomeKind::Skipped {
                    "skipped"
                } else {
                    "failed"
                };
                format!(
                    "{word} {}  ({} {}: {})",
                    shown_path(a),
                    a.rule,
                    a.rule_name,
                    why.as_deref().unwrap_or("")
                )
            }
        };
        out.push_str(&line);
        out.push('\n');
    }
    out
}

/// `skipped <path>  (<rule>: <why>)`.
pub fn render_skipped(s: &Skipped) -> String {
    format!("skipped {}  ({}: {})", s.path, s.rule, s.why)
}
