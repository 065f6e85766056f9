//! R5 `orphan-artifact-dir`: sets aside artifact-only session directories of no known session.

use engine::{Context, Effect, Expect, Proposal, Rule, RuleOutput};
use plan::{ActionKind, ItemKind};

/// ## What it finds
///
/// A session directory `S/<id>/` whose entries are only `artifacts/`,
/// `approval_receipts.jsonl` and `approval_receipts.lock` (anything else, such as `control.sock`
/// or a `.recovery` file, keeps it), whose id is not a known session (no document, no
/// checkpoint), not live, and not named (collected before any rule acts): by no thread's
/// `session_id`, thread id or derived UUID (the app's engine writes under `S/<thread id>/`), in
/// any store or in `$CODEWHALE_HOME/tasks/runtime`, and by no known document's text (a UUID in
/// any case, another id as a substring); and in which nothing changed for at least
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
            if cx.refs.names_dir(&dir.id) || idle < cx.config.artifact_idle_secs {
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
