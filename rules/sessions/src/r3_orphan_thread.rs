//! R3 `orphan-thread`: recovers a document for an unbound thread that holds a conversation.

use engine::{Context, Effect, Expect, Proposal, Rule, RuleOutput};
use plan::{ActionKind, Precondition, Skipped};
use store::ThreadState;

/// ## What it finds
///
/// An unbound thread (no `session_id`, or one R4 unbinds in the same plan) in a store no other
/// process holds, that is recoverable: at least one `completed` turn and a non-empty
/// reconstructed conversation. Bound and unbound stores alike.
///
/// ## What it does
///
/// One `recover_thread` action: writes `S/<tid>.json` atomically (title `Recovered: <thread
/// title, else first user message>` cut to 100 characters; the messages of the completed turns
/// in `seq` order; `message_count`; `total_tokens` and `cost` summed from the turns' usage,
/// with priced and unpriced turns counted; the thread's timestamps; `runtime_store.data_dir` =
/// the store relative to S and its `execution_scope`), then binds the thread: `session_id` =
/// the thread id, `saved_session_checkpoint` covering the latest completed turn and every
/// message. When `S/<tid>.json` already exists, is readable and binds this store (a crash
/// between the two writes), only the binding is planned (`bind_thread`).
///
/// ## What it never touches
///
/// - an existing document: when `S/<tid>.json` exists and does not bind this store, or another
///   thread with the same id is recovered first (stores in path order), nothing is planned and
///   the thread is listed under `skipped` with `why: "document id taken"`;
/// - a thread in a held store, in a live session's directory, or of a newer schema;
/// - a turn file that does not parse or validate: left out of the recovery and listed under
///   `skipped` with why.
///
/// ## Example
///
/// `x/runtime/threads/th-9.json` unbound with two completed turns:
/// `would recover x/runtime/threads/th-9.json as th-9.json  (R3 orphan-thread: thread has no
/// session document; messages: 4, completed turns: 2)`.
#[derive(Debug, Clone, Copy)]
pub struct OrphanThread;

impl Rule for OrphanThread {
    fn code(&self) -> &'static str {
        "R3"
    }

    fn name(&self) -> &'static str {
        "orphan-thread"
    }

    fn plan(&self, cx: &Context<'_>) -> RuleOutput {
        let mut out = RuleOutput::default();
        // Document ids this rule already plans to write: a second thread with the same id in
        // another store finds its id taken, as it will in the real run.
        let mut claimed = std::collections::BTreeSet::new();
        for store in cx.inventory.stores() {
            if store.held || cx.is_live_path(&store.path) {
                continue;
            }
            for t in &store.threads {
                let ThreadState::Current { session_id, .. } = &t.state else {
                    continue;
                };
                let unbound_by_r4 = session_id.is_some();
                let bound = cx.refs.thread_bindings.get(&t.path).cloned().flatten();
                if bound.is_none() {
                    for turn in &t.left_out_turns {
                        out.skipped.push(Skipped {
                            path: turn.path.clone(),
                            rule: self.code().into(),
                            why: format!("turn left out of the recovery: {}", turn.why),
                        });
                    }
                }
                let Some(recovery) = t.recovery else { continue };
                if bound.is_some() || cx.refs.live_sessions.contains(&t.id) {
                    continue;
                }
                let digest = match (unbound_by_r4, &t.unbound_digest) {
                    (true, Some(d)) => d,
                    (true, None) => continue,
                    (false, _) => &t.digest,
                };
                let document = format!("{}.json", t.id);
                let taken_here = claimed.contains(&t.id);
                let action = if !taken_here && !cx.refs.present_documents.contains(&t.id) {
                    ActionKind::RecoverThread
                } else if !taken_here && cx.refs.binds(&t.id, &store.path) {
                    ActionKind::BindThread
                } else {
                    out.skipped.push(Skipped {
                        path: t.path.clone(),
                        rule: self.code().into(),
                        why: "document id taken".into(),
                    });
                    continue;
                };
                let reason = match action {
                    ActionKind::RecoverThread => format!(
                        "thread has no session document; messages: {}, completed turns: {}",
                        recovery.messages, recovery.completed_turns
                    ),
                    _ => format!("recovered document {document} exists but the thread is unbound"),
                };
                claimed.insert(t.id.clone());
                out.proposals.push(Proposal {
                    action,
                    path: t.path.clone(),
                    kind: None,
                    document: Some(document),
                    reason,
                    expect: Expect::Known(Precondition::File {
                        bytes: digest.bytes,
                        sha256: digest.sha256.clone(),
                    }),
                    effect: Effect::Recovered {
                        id: t.id.clone(),
                        store: store.path.clone(),
                        thread: t.path.clone(),
                    },
                });
            }
        }
        out
    }
}
