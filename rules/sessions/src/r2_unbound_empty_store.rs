//! R2 `unbound-empty-store`: sets aside runtime stores that no document binds and that hold no
//! work.

use engine::{Context, Effect, Expect, Proposal, Rule, RuleOutput};

use crate::{Pack, Summary};
use plan::{Action, ActionKind, ItemKind, PlannedAction, Skipped};

#[doc = include_str!("r2_unbound_empty_store.md")]
#[derive(Debug, Clone, Copy)]
pub struct UnboundEmptyStore;

impl Rule<Pack> for UnboundEmptyStore {
    fn code(&self) -> &'static str {
        "R2"
    }

    fn name(&self) -> &'static str {
        "unbound-empty-store"
    }

    fn doc(&self) -> &'static str {
        include_str!("r2_unbound_empty_store.md")
    }

    fn plans(&self) -> &'static [(ActionKind, Option<ItemKind>)] {
        &[
            (ActionKind::SetAside, Some(ItemKind::RuntimeStore)),
            (ActionKind::RemoveEmptyDir, None),
        ]
    }

    fn accepts(&self, a: &PlannedAction) -> bool {
        match a.action {
            Action::SetAside { .. } => crate::shape::store(&a.path),
            _ => crate::shape::session_dir(&a.path),
        }
    }

    fn count(&self, a: &PlannedAction, summary: &mut Summary) {
        if a.action.kind() == ActionKind::SetAside {
            summary.stores_set_aside += 1;
        }
    }

    fn plan(&self, cx: &Context<'_>) -> RuleOutput<Summary> {
        let mut out = RuleOutput::<Summary>::default();
        // Documents that exist but could not be read: what they bind is unknown.
        let inaccessible: std::collections::BTreeSet<&str> = cx
            .inventory
            .documents
            .iter()
            .filter(|d| matches!(d.state, store::DocState::Inaccessible))
            .map(|d| d.id.as_str())
            .collect();
        for dir in &cx.inventory.session_dirs {
            for store in &dir.stores {
                if store.held || cx.is_live_path(&store.path) {
                    if !cx.refs.is_bound(&store.path) {
                        // The app's counter: held stores no document binds.
                        out.counts.stores_in_use += 1;
                        out.skipped.push(Skipped {
                            path: store.path.clone(),
                            rule: self.code().into(),
                            why: "store is in use by another process".into(),
                        });
                    }
                    continue;
                }
                if cx.refs.is_bound(&store.path) {
                    continue;
                }
                // The session's own document or checkpoint, the usual binders, cannot be read:
                // either may bind the store. In doubt, the store stays (the executor's re-check
                // judges the same way).
                let unreadable = if inaccessible.contains(dir.id.as_str()) {
                    Some(format!("{}.json", dir.id))
                } else if cx.inventory.inaccessible_checkpoints.contains(&dir.id) {
                    Some(format!("checkpoints/{}.json", dir.id))
                } else {
                    None
                };
                if let Some(file) = unreadable {
                    out.skipped.push(Skipped {
                        path: store.path.clone(),
                        rule: self.code().into(),
                        why: format!("{file} cannot be read and may bind it: kept"),
                    });
                    continue;
                }
                if store.holds_work {
                    out.counts.stores_kept_with_work += 1;
                    continue;
                }
                let reason = if cx.inventory.deleted_sessions.contains(&dir.id) {
                    "empty runtime store of a deleted session"
                } else {
                    "empty runtime store no document binds"
                };
                out.proposals.push(Proposal {
                    action: Action::SetAside {
                        kind: ItemKind::RuntimeStore,
                    },
                    path: store.path.clone(),
                    reason: reason.into(),
                    expect: Expect::TreeOfPath,
                    effect: Effect::None,
                });
            }
            // A session directory a set-aside left empty (a kill came before its removal), or
            // that is empty anyway: it holds no data (store-format.md, Version 2, with no
            // exception for a session that has a document, a checkpoint or a name). Only a live
            // session's directory stays.
            if dir.empty && !cx.refs.live_sessions.contains(&dir.id) {
                out.proposals.push(Proposal {
                    action: Action::RemoveEmptyDir,
                    path: dir.path.clone(),
                    reason: "empty session directory: it holds no data".into(),
                    expect: Expect::TreeOfPath,
                    effect: Effect::None,
                });
            }
        }
        out
    }
}
