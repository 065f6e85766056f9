//! R5 `orphan-artifact-dir`: sets aside artifact-only session directories of no known session.

use engine::{Context, Effect, Expect, Proposal, Rule, RuleOutput};

use crate::{Pack, Summary};
use plan::{Action, ActionKind, ItemKind, PlannedAction};

#[doc = include_str!("r5_orphan_artifact_dir.md")]
#[derive(Debug, Clone, Copy)]
pub struct OrphanArtifactDir;

impl Rule<Pack> for OrphanArtifactDir {
    fn code(&self) -> &'static str {
        "R5"
    }

    fn name(&self) -> &'static str {
        "orphan-artifact-dir"
    }

    fn doc(&self) -> &'static str {
        include_str!("r5_orphan_artifact_dir.md")
    }

    fn plans(&self) -> &'static [(ActionKind, Option<ItemKind>)] {
        &[(ActionKind::SetAside, Some(ItemKind::Directory))]
    }

    fn accepts(&self, a: &PlannedAction) -> bool {
        crate::shape::session_dir(&a.path)
    }

    fn count(&self, _a: &PlannedAction, summary: &mut Summary) {
        summary.artifact_dirs_set_aside += 1;
    }

    fn plan(&self, cx: &Context<'_>) -> RuleOutput<Summary> {
        let mut out = RuleOutput::<Summary>::default();
        for dir in &cx.inventory.session_dirs {
            if !dir.artifact_only || cx.refs.known_sessions.contains(&dir.id) {
                continue;
            }
            // A live session's directory is kept, and counted as kept (rules.md, Version 2).
            if cx.refs.live_sessions.contains(&dir.id) {
                out.counts.artifact_dirs_kept += 1;
                continue;
            }
            let idle = cx.config.now.0.saturating_sub(dir.newest_mtime);
            if cx.refs.names_dir(&dir.id) || idle < cx.config.artifact_idle_secs {
                out.counts.artifact_dirs_kept += 1;
                continue;
            }
            out.proposals.push(Proposal {
                action: Action::SetAside {
                    kind: ItemKind::Directory,
                },
                path: dir.path.clone(),
                reason: format!(
                    "artifact-only directory of no known session, unchanged for {}h",
                    idle / 3600
                ),
                expect: Expect::TreeOfPath,
                effect: Effect::None,
            });
        }
        out
    }
}
