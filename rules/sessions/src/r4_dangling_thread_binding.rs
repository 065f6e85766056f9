//! R4 `dangling-thread-binding`: unbinds threads whose session document no longer exists.

use engine::{Context, Effect, Expect, Proposal, Rule, RuleOutput};

use crate::{Pack, Summary};
use plan::{Action, ActionKind, ItemKind, PlannedAction, Precondition, Skipped};
use store::ThreadState;

#[doc = include_str!("r4_dangling_thread_binding.md")]
#[derive(Debug, Clone, Copy)]
pub struct DanglingThreadBinding;

impl Rule<Pack> for DanglingThreadBinding {
    fn code(&self) -> &'static str {
        "R4"
    }

    fn name(&self) -> &'static str {
        "dangling-thread-binding"
    }

    fn doc(&self) -> &'static str {
        include_str!("r4_dangling_thread_binding.md")
    }

    fn plans(&self) -> &'static [(ActionKind, Option<ItemKind>)] {
        &[(ActionKind::UnbindThread, None)]
    }

    fn accepts(&self, a: &PlannedAction) -> bool {
        crate::shape::thread(&a.path).is_some()
    }

    fn count(&self, _a: &PlannedAction, summary: &mut Summary) {
        summary.threads_unbound += 1;
    }

    fn plan(&self, cx: &Context<'_>) -> RuleOutput<Summary> {
        let mut out = RuleOutput::<Summary>::default();
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
                if settled || cx.is_live_path(&store.thread_path(t)) {
                    continue;
                }
                // No projected digest: the record could not be read again to plan its rewrite.
                if t.unbound_digest.is_none() {
                    out.skipped.push(Skipped {
                        path: store.thread_path(t),
                        rule: self.code().into(),
                        why: "the record could not be read again to plan the unbind: left in place"
                            .into(),
                    });
                    continue;
                }
                out.proposals.push(Proposal {
                    action: Action::UnbindThread,
                    path: store.thread_path(t),
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
