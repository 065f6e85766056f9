//! R3 `orphan-thread`: recovers a document for an unbound thread that holds a conversation, in
//! a store no document binds.

use engine::{Context, Effect, Expect, Proposal, Rule, RuleOutput};
use plan::{ActionKind, Precondition, Skipped};
use store::ThreadState;

/// ## What it finds
///
/// In a runtime store that no document or checkpoint binds (a document whose id is one of the
/// store's own thread ids does not count: it is a recovery a crash interrupted), that no other
/// process holds and that holds no thread of a newer schema: an unbound thread (no
/// `session_id`, or one R4 unbinds in the same plan) that is recoverable: at least one turn (any
/// status) whose items rebuild into a non-empty conversation (codewhale-format.md §7). In a
/// bound store R3 plans nothing: threads that never had a document there (Runtime-API and task
/// threads of a host store) never get one.
///
/// ## What it does
///
/// One `recover_thread` action: writes `S/<tid>.json` (the thread id is the document id), the
/// `SavedSession` the app would load (§8): content blocks, a journal whose entry ids derive from
/// the thread id, `model`, `workspace`, `mode` and `system_prompt` from the thread, title
/// `Recovered: <thread title, else the derived title>` sanitized and cut to 100 characters,
/// `total_tokens` summed from the turns' usage, `created_at` the thread's and `updated_at` the
/// latest turn's end, and `runtime_store` = the store's canonical absolute path with the app's
/// `execution_scope`. Then binds the thread: `session_id` = the id, `saved_session_checkpoint`
/// = `{covered_turn_id: latest_turn_id, messages_sha256, messages_len}` with the hash of the
/// app's compact serialization, `updated_at` = the plan's instant. When `S/<tid>.json` already
/// exists, is readable and binds this store (a crash between the two writes), only the binding
/// is planned (`bind_thread`).
///
/// ## What it never touches
///
/// - an existing document: when `S/<tid>.json` exists and does not bind this store, or another
///   thread with the same id is recovered first (stores in path order), nothing is planned and
///   the thread is listed under `skipped` with `why: "document id taken"`;
/// - a thread whose id has a `.late-usage/<tid>.deleted` tombstone (`session was deleted`);
/// - a thread whose id would make a reserved file name (`session_boot_owners`, `latest`,
///   `offline_queue`);
/// - a store without a readable `owner.json` (its binding could not validate), and a store one
///   of whose turn or item files cannot be read: kept whole, the reason listed under `skipped`;
/// - a thread with a seed journal (`threads/<tid>.seed`), which the doctor does not settle;
/// - a thread in a held store, in a live session's directory, or of a newer schema.
///
/// ## Example
///
/// `x/runtime/threads/thr_9.json` unbound with two turns in a store no document binds:
/// `would recover x/runtime/threads/thr_9.json as thr_9.json  (R3 orphan-thread: thread has no
/// session document; messages: 4, turns: 2)`.
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
        let skip = |out: &mut RuleOutput, path: &str, why: String| {
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
                    out.counts
                        .errors
                        .push(format!("recovery in {} failed: {e}", store.path));
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
                    ActionKind::RecoverThread
                } else if !taken_here
                    && readable.contains(t.id.as_str())
                    && cx.refs.binds(&t.id, &store.path)
                {
                    ActionKind::BindThread
                } else {
                    skip(&mut out, &store.thread_path(t), "document id taken".into());
                    continue;
                };
                let reason = match action {
                    ActionKind::RecoverThread => format!(
                        "thread has no session document; messages: {}, turns: {}",
                        recovery.messages, recovery.turns
                    ),
                    _ => format!("recovered document {document} exists but the thread is unbound"),
                };
                claimed.insert(t.id.clone());
                out.proposals.push(Proposal {
                    action,
                    path: store.thread_path(t),
                    kind: None,
                    document: Some(document),
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
