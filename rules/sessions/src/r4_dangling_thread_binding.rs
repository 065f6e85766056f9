//! R4 `dangling-thread-binding`: unbinds threads whose session document no longer exists.

use engine::{Context, Effect, Expect, Proposal, Rule, RuleOutput};
use plan::{ActionKind, Precondition, Skipped};
use store::ThreadState;

/// ## What it finds
///
/// A thread record whose `session_id` names no known session (no readable, unknown-content or
/// newer-schema document, no checkpoint; a document R1 sets aside in the same plan no longer
/// counts), in a runtime store that no other process holds. Bound and unbound stores alike. A
/// legacy checkpoint (no `messages_len`, `covered_turn_id` null) is a binding like any other.
///
/// ## What it does
///
/// Rewrites the thread record atomically without `session_id` and `saved_session_checkpoint`
/// and with `updated_at` set to the plan's instant, keeping every other key in place (the app's
/// `unbind_session_threads_in_store`). Before the first rewrite of a record in a run its bytes
/// are copied to `.set-aside/<run>/<path>` (`kind: "previous_version"`). A receipt with the
/// app's keys (`action: "thread_unbound"`, `thread_id`, `session_id`,
/// `saved_session_checkpoint`, `reason`, `at`) plus the doctor's (`run`, `thread`,
/// `previous_sha256`, `previous_session_id`) goes to `<store>/session-unbind-receipts.jsonl`,
/// and one to `.reconcile/receipts.jsonl`, with reason `its session document no longer
/// exists`. In a store no document binds, R3 then sees the thread as unbound and recovers it;
/// in a bound store the thread stays loadable from its own turns and gets no document.
///
/// ## What it never touches
///
/// - a thread whose `session_id` is live (its lease is held) or has a checkpoint;
/// - a thread record of a newer schema (above 4), and every thread of its store (the app cannot
///   list that store), or a record that does not parse (counted in `threads_unreadable`): left
///   in place and listed under `skipped` with why;
/// - any thread in a store whose owner lock another process holds.
///
/// ## Example
///
/// `a/runtime/threads/th1.json` with `"session_id": "gone"` and no `gone.json`:
/// `would unbind a/runtime/threads/th1.json  (R4 dangling-thread-binding: its session
/// document no longer exists)`.
#[derive(Debug, Clone, Copy)]
pub struct DanglingThreadBinding;

impl Rule for DanglingThreadBinding {
    fn code(&self) -> &'static str {
        "R4"
    }

    fn name(&self) -> &'static str {
        "dangling-thread-binding"
    }

    fn plan(&self, cx: &Context<'_>) -> RuleOutput {
        let mut out = RuleOutput::default();
        for store in cx.inventory.stores() {
            if store.newer_thread {
                // The app cannot list a store holding a newer thread: no rule acts on it.
                for t in &store.threads {
                    if let ThreadState::NewerSchema { version, .. } = &t.state {
                        out.skipped.push(Skipped {
                            path: store.thread_path(t),
                            rule: self.code().into(),
                            why: format!(
                                "thread record of newer schema {version}: its store is left as it is"
                            ),
                        });
                    }
                }
                continue;
            }
            for t in &store.threads {
                let sid = match &t.state {
                    ThreadState::Current {
                        session_id: Some(sid),
                        ..
                    } => sid,
                    ThreadState::Current { .. } => continue,
                    ThreadState::NewerSchema { version, .. } => {
                        out.skipped.push(Skipped {
                            path: store.thread_path(t),
                            rule: self.code().into(),
                            why: format!("thread record of newer schema {version}: kept"),
                        });
                        continue;
                    }
                    ThreadState::Unreadable { reason, .. } => {
                        out.counts.threads_unreadable += 1;
                        out.skipped.push(Skipped {
                            path: store.thread_path(t),
                            rule: self.code().into(),
                            why: format!("thread record does not parse ({reason}): left in place"),
                        });
                        continue;
                    }
                };
                let settled = store.held
                    || cx.refs.known_sessions.contains(sid)
                    || cx.refs.live_sessions.contains(sid);
                // No projected digest: the record could not be re-read as a thread.
                if settled || t.unbound_digest.is_none() || cx.is_live_path(&store.thread_path(t)) {
                    continue;
                }
                out.proposals.push(Proposal {
                    action: ActionKind::UnbindThread,
                    path: store.thread_path(t),
                    kind: None,
                    document: None,
                    reason: "its session document no longer exists".into(),
                    expect: Expect::Known(Precondition::File {
                        bytes: t.digest.bytes,
                        sha256: t.digest.file_digest().sha256,
                    }),
                    effect: Effect::ThreadUnbound {
                        thread: store.thread_path(t),
                    },
                });
            }
        }
        out
    }
}
