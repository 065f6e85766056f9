//! R1 `unreadable-document`: sets aside session documents that cannot be read.

use engine::{Context, Effect, Expect, Proposal, Rule, RuleOutput};

use crate::{Pack, Summary};
use plan::{Action, ActionKind, ItemKind, PlannedAction, Precondition, Skipped};
use store::DocState;

#[doc = include_str!("r1_unreadable_document.md")]
#[derive(Debug, Clone, Copy)]
pub struct UnreadableDocument;

impl Rule<Pack> for UnreadableDocument {
    fn code(&self) -> &'static str {
        "R1"
    }

    fn name(&self) -> &'static str {
        "unreadable-document"
    }

    fn doc(&self) -> &'static str {
        include_str!("r1_unreadable_document.md")
    }

    fn plans(&self) -> &'static [(ActionKind, Option<ItemKind>)] {
        &[(ActionKind::SetAside, Some(ItemKind::Document))]
    }

    fn accepts(&self, a: &PlannedAction) -> bool {
        crate::shape::document(&a.path)
    }

    fn count(&self, _a: &PlannedAction, summary: &mut Summary) {
        summary.documents_set_aside += 1;
    }

    fn plan(&self, cx: &Context<'_>) -> RuleOutput<Summary> {
        let mut out = RuleOutput::<Summary>::default();
        for doc in &cx.inventory.documents {
            let (reason, digest) = match &doc.state {
                DocState::NewerSchema { .. } => {
                    out.counts.documents_newer_schema += 1;
                    continue;
                }
                DocState::UnknownContent { unknown, .. } => {
                    out.counts.documents_unknown_content += 1;
                    out.skipped.push(Skipped {
                        path: doc.path(),
                        rule: self.code().into(),
                        why: format!("unknown content kept: {unknown}"),
                    });
                    continue;
                }
                DocState::Unreadable { reason, digest } => (reason, digest),
                DocState::Readable { .. } | DocState::Inaccessible => continue,
            };
            if cx.refs.live_sessions.contains(&doc.id) {
                out.skipped.push(Skipped {
                    path: doc.path(),
                    rule: self.code().into(),
                    why: "session is live".into(),
                });
                continue;
            }
            out.proposals.push(Proposal {
                action: Action::SetAside {
                    kind: ItemKind::Document,
                },
                path: doc.path(),
                reason: reason.clone(),
                expect: Expect::Known(Precondition::File {
                    bytes: digest.bytes,
                    sha256: digest.sha256.clone(),
                }),
                effect: Effect::DocumentGone { id: doc.id.clone() },
            });
        }
        out
    }
}
