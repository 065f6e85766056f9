//! R2 `unbound-empty-store`: sets aside runtime stores that no document binds and that hold no
//! work.

use engine::{Context, Effect, Expect, Proposal, Rule, RuleOutput};
use plan::{ActionKind, ItemKind, Skipped};

/// ## What it finds
///
/// A runtime store (`S/<id>/runtime` or `S/<id>/runtime-recovered-*`) that no known document
/// and no checkpoint binds (after R1's and R3's projection; a binding is compared lexically and
/// in its canonical form, so one spelled through a symlink binds), that holds no work (its seven
/// work directories are empty or absent, `state.json` has `next_seq` of at most 1 and parses,
/// and no automation is pinned to it), and whose owner lock no other process holds.
///
/// ## What it does
///
/// Sets the whole store aside into `.set-aside/<run>/<id>/<store>` by the store-move protocol
/// (invariants.md): it takes the owner lock, renames each entry into the destination with the
/// lock file last, removes the emptied source directory only if it is still empty, and
/// releases the lock last. Reason `empty runtime store no document binds`, or `empty runtime
/// store of a deleted session` when `.late-usage/<id>.deleted` exists. Manifest
/// `kind: "runtime_store"` with the tree digest.
///
/// ## What it never touches
///
/// - a store any known document binds, wherever it lives (a host binds many documents to the
///   store under the id it booted with), including `runtime-recovered-*` stores;
/// - an unbound store that holds work with nothing recoverable (`stores_kept_with_work`);
/// - a store whose owner lock another process holds, or in a live session's directory, even
///   when empty (counted in `stores_in_use` when no document binds it, as the app counts);
/// - a store any checkpoint binds, and a store pinned by an automation (an `*.json` under
///   `$CODEWHALE_HOME/automations` that contains its `execution_scope`), which holds work;
/// - a store whose session's own document (`S/<id>.json`) or checkpoint
///   (`S/checkpoints/<id>.json`) exists but cannot be read (permission denied, an I/O error):
///   it may bind the store, so the store is kept and the skip says why. The executor's
///   re-check right before the move judges the same way.
///
/// ## Empty session directories
///
/// When the store was the last entry of its session directory, the same action removes the
/// emptied directory (an empty directory holds no data; the receipt says so, and a restore
/// recreates it). A kill between the two leaves the directory empty; the next run plans its
/// removal (`remove_empty_dir`). Both the removal after a set-aside and the planned one apply
/// only to the directory of a session with no document, no checkpoint and no live lease; the
/// planned one also spares a directory a thread or document names (the app's engine may be
/// about to write under `S/<thread id>/`).
///
/// ## Example
///
/// `old/runtime` holding only `owner.json` and an empty `threads/`, with no `old.json`:
/// `would set aside old/runtime  (R2 unbound-empty-store: empty runtime store no document
/// binds)`.
#[derive(Debug, Clone, Copy)]
pub struct UnboundEmptyStore;

impl Rule for UnboundEmptyStore {
    fn code(&self) -> &'static str {
        "R2"
    }

    fn name(&self) -> &'static str {
        "unbound-empty-store"
    }

    fn plan(&self, cx: &Context<'_>) -> RuleOutput {
        let mut out = RuleOutput::default();
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
                    action: ActionKind::SetAside,
                    path: store.path.clone(),
                    kind: Some(ItemKind::RuntimeStore),
                    document: None,
                    reason: reason.into(),
                    expect: Expect::TreeOfPath,
                    effect: Effect::None,
                });
            }
            // A session directory a set-aside left empty (a kill came before its removal).
            if dir.empty
                && !cx.refs.present_documents.contains(&dir.id)
                && !cx.inventory.checkpoints.contains(&dir.id)
                && !cx.refs.live_sessions.contains(&dir.id)
                && !cx.refs.names_dir(&dir.id)
            {
                out.proposals.push(Proposal {
                    action: ActionKind::RemoveEmptyDir,
                    path: dir.path.clone(),
                    kind: None,
                    document: None,
                    reason: "empty session directory: it holds no data".into(),
                    expect: Expect::TreeOfPath,
                    effect: Effect::None,
                });
            }
        }
        out
    }
}
