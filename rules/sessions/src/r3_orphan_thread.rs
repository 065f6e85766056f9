//! R3 `orphan-thread`: recovers a document for an unbound thread that holds a conversation, in
//! a store no document binds.

use engine::{Context, Effect, Expect, Proposal, Rule, RuleOutput};

use crate::{Pack, Summary};
use plan::{Action, ActionKind, ItemKind, PlannedAction, Precondition, Skipped};
use store::ThreadState;

#[doc = include_str!("r3_orphan_thread.md")]
#[derive(Debug, Clone, Copy)]
pub struct OrphanThread;

impl Rule<Pack> for OrphanThread {
    fn code(&self) -> &'static str {
        "R3"
    }

    fn name(&self) -> &'static str {
        "orphan-thread"
    }

    fn doc(&self) -> &'static str {
        include_str!("r3_orphan_thread.md")
    }

    fn plans(&self) -> &'static [(ActionKind, Option<ItemKind>)] {
        &[
            (ActionKind::RecoverThread, None),
            (ActionKind::BindThread, None),
        ]
    }

    fn accepts(&self, a: &PlannedAction) -> bool {
        // The document is the one named by the thread's id.
        crate::shape::thread(&a.path)
            .is_some_and(|tid| a.action.document() == Some(&format!("{tid}.json")))
    }

    fn count(&self, a: &PlannedAction, summary: &mut Summary) {
        match a.action {
            Action::RecoverThread { .. } => summary.sessions_recovered += 1,
            _ => summary.threads_bound += 1,
        }
    }

    fn plan(&self, cx: &Context<'_>) -> RuleOutput<Summary> {
        let mut out = RuleOutput::<Summary>::default();
        let skip = |out: &mut RuleOutput<Summary>, path: &str, why: String| {
            out.skipped.push(Skipped {
                path: path.to_owned(),
                rule: "R3".into(),
                why,
            })
        };
        // Document ids this rule already plans to write: a second thread with the same id in
        // another store finds its id taken, as it will in the real run.
        let mut claimed = std::collections::BTreeSet::new();
        // A crash-interrupted recovery is finished only over a document the executor can read
        // back as the app's `SavedSession` (not unknown content, not a newer schema).
        let readable: std::collections::BTreeSet<&str> = cx
            .inventory
            .documents
            .iter()
            .filter(|d| matches!(d.state, store::DocState::Readable { .. }))
            .map(|d| d.id.as_str())
            .collect();
        for store in cx.inventory.stores() {
            if !cx.recoverable.contains(&store.path) || cx.is_live_path(&store.path) {
                continue;
            }
            let unbound: Vec<_> = store
                .threads
                .iter()
                .filter(|t| matches!(t.state, ThreadState::Current { .. }))
                .filter(|t| !cx.refs.thread_bound(store, t))
                .collect();
            if unbound.is_empty() {
                continue;
            }
            if !store.recovery_errors.is_empty() {
                for e in &store.recovery_errors {
                    skip(
                        &mut out,
                        &store.path,
                        format!("store kept, recovery failed: {e}"),
                    );
                    // The app records a recovery error in the summary's `errors` too.
                    out.errors.push(engine::Problem::invalid_data(
                        &store.path,
                        format!("recovery in {} failed: {e}", store.path),
                    ));
                }
                continue;
            }
            if store.owner_id.is_none() {
                if unbound.iter().any(|t| t.recovery.is_some()) {
                    skip(
                        &mut out,
                        &store.path,
                        "store kept: no readable owner.json, so a recovered binding could not validate"
                            .into(),
                    );
                }
                continue;
            }
            for t in unbound {
                let ThreadState::Current { session_id, .. } = &t.state else {
                    continue;
                };
                if store.seeded.contains(&t.id) {
                    skip(
                        &mut out,
                        &store.thread_path(t),
                        "thread has a seed journal the doctor does not settle".into(),
                    );
                    continue;
                }
                let Some(recovery) = t.recovery.as_deref().copied() else {
                    continue;
                };
                if store::ids::is_reserved_top(&format!("{}.json", t.id)) {
                    skip(
                        &mut out,
                        &store.thread_path(t),
                        "thread id is a reserved name: no document can be written for it".into(),
                    );
                    continue;
                }
                if cx.inventory.deleted_sessions.contains(&t.id) {
                    skip(
                        &mut out,
                        &store.thread_path(t),
                        "session was deleted".into(),
                    );
                    continue;
                }
                if cx.refs.live_sessions.contains(&t.id) {
                    continue;
                }
                let unbound_by_r4 = session_id.is_some();
                let digest = match (unbound_by_r4, &t.unbound_digest) {
                    (true, Some(d)) => (**d).clone(),
                    (true, None) => continue,
                    (false, _) => t.digest.file_digest(),
                };
                let document = format!("{}.json", t.id);
                let taken_here = claimed.contains(&t.id);
                let action = if !taken_here && !cx.refs.present_documents.contains(&t.id) {
                    Action::RecoverThread {
                        document: document.clone(),
                    }
                } else if !taken_here
                    && readable.contains(t.id.as_str())
                    && cx.refs.binds(&t.id, &store.path)
                {
                    Action::BindThread {
                        document: document.clone(),
                    }
                } else {
                    skip(&mut out, &store.thread_path(t), "document id taken".into());
                    continue;
                };
                let reason = match &action {
                    Action::RecoverThread { .. } => format!(
                        "thread has no session document; messages: {}, turns: {}",
                        recovery.messages, recovery.turns
                    ),
                    _ => format!("recovered document {document} exists but the thread is unbound"),
                };
                claimed.insert(t.id.clone());
                out.proposals.push(Proposal {
                    action,
                    path: store.thread_path(t),
                    reason,
                    expect: Expect::Known(Precondition::File {
                        bytes: digest.bytes,
                        sha256: digest.sha256,
                    }),
                    effect: Effect::Recovered {
                        id: t.id.clone(),
                        store: store.path.clone(),
                        thread: store.thread_path(t),
                    },
                });
            }
        }
        out
    }
}
