//! Text rendering of plans and outcomes, shared by the dry run and the real run.

use crate::{Outcome, OutcomeKind, PlannedAction, Skipped, Summary};

/// `would set aside torn.json  (R1 unreadable-document: <reason>)`, or the past tense.
pub fn render_action(a: &PlannedAction, dry_run: bool) -> String {
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

/// The notice line of a real run, or `None` when nothing changed.
pub fn notice_line(s: &Summary) -> Option<String> {
    let mut parts = Vec::new();
    if s.sessions_recovered > 0 {
        parts.push(format!("{} recovered", s.sessions_recovered));
    }
    // cli.md's wording: a thread unbound from a missing document (R4) and a thread bound after a
    // crash (R3's `bind_thread`) are both re-linked.
    let relinked = s.threads_bound + s.threads_unbound;
    if relinked > 0 {
        parts.push(format!("{relinked} threads re-linked"));
    }
    let set_aside = s.items_set_aside();
    if set_aside > 0 {
        let to = s.set_aside_path.as_deref().unwrap_or(".set-aside");
        parts.push(format!("{set_aside} unused items set aside → {to}"));
    }
    (!parts.is_empty()).then(|| format!("Sessions repaired: {}", parts.join(", ")))
}
