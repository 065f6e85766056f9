//! R5 `orphan-artifact-dir`: sets aside artifact-only session directories of no known session.

use engine::{Context, Effect, Expect, Proposal, Rule, RuleOutput};
use plan::{ActionKind, ItemKind};

/// ## What it finds
///
/// A session directory `S/<id>/` whose entries are all among `artifacts/`,
/// `approval_receipts.jsonl` and `approval_receipts.lock` (no runtime store), whose id is not
/// a known session (after projection), not live, and not named by any reference (no thread's
/// `session_id`, no readable document's text), and in which nothing changed for at least
/// `--artifact-idle` (default 24h; the clock is `DOCTOR_NOW` when set).
///
/// ## What it does
///
/// Sets the directory aside into `.set-aside/<run>/<id>`. Manifest `kind: "directory"` with
/// the tree digest.
///
/// ## What it never touches
///
/// - a directory that is named by a reference or changed recently (`artifact_dirs_kept`);
/// - a directory of a known or live session, or one that holds a runtime store.
///
/// ## Example
///
/// `old-art/artifacts/out.txt`, unchanged for three days, no `old-art.json`, named nowhere:
/// `would set aside old-art  (R5 orphan-artifact-dir: artifact-only directory of no known
/// session, unchanged for 72h)`.
#[derive(Debug, Clone, Copy)]
pub struct OrphanArtifactDir;

impl Rule for OrphanArtifactDir {
    fn code(&self) -> &'static str {
        "R5"
    }

    fn name(&self) -> &'static str {
        "orphan-artifact-dir"
    }

    fn plan(&self, cx: &Context<'_>) -> RuleOutput {
        let mut out = RuleOutput::default();
        for dir in &cx.inventory.session_dirs {
            if !dir.artifact_only
                || cx.refs.known_sessions.contains(&dir.id)
                || cx.refs.live_sessions.contains(&dir.id)
            {
                continue;
            }
            let idle = cx.config.now.0.saturating_sub(dir.newest_mtime);
            if cx.refs.named.contains(&dir.id) || idle < cx.config.artifact_idle_secs {
                out.counts.artifact_dirs_kept += 1;
                continue;
            }
            out.proposals.push(Proposal {
                action: ActionKind::SetAside,
                path: dir.path.clone(),
                kind: Some(ItemKind::Directory),
                document: None,
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
