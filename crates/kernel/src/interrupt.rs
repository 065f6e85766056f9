//! The stop a signal asks for (SIGTERM, SIGINT, SIGHUP, caught by the binary): while a plan is
//! being applied, [`crate::execute::execute`] finishes the action in progress and its receipt, then
//! applies nothing more, so a signal never splits an action; before that, nothing has been
//! changed and the process may end at once. A host application that embeds the doctor and
//! catches no signal never sets it.

use std::sync::atomic::{AtomicBool, AtomicI32, Ordering};

static SIGNAL: AtomicI32 = AtomicI32::new(0);
static APPLYING: AtomicBool = AtomicBool::new(false);

/// Records that signal `sig` asks the run to stop. `true`: a plan is being applied, and the
/// executor stops after the action in progress (the caller lets it); `false`: nothing is being
/// changed, and the caller may end the process now. Both sides are sequentially consistent, so
/// an executor that starts applying after this returned `false` sees the request and applies
/// nothing.
pub fn request_stop(sig: i32) -> bool {
    SIGNAL.store(sig, Ordering::SeqCst);
    APPLYING.load(Ordering::SeqCst)
}

/// The signal that asked the run to stop, if one did.
pub fn stop_requested() -> Option<i32> {
    match SIGNAL.load(Ordering::SeqCst) {
        0 => None,
        sig => Some(sig),
    }
}

/// Marks the start of applying a plan: from now on a signal waits for the action in progress.
pub(crate) fn begin_applying() {
    APPLYING.store(true, Ordering::SeqCst);
}

/// The usual name of `sig`, for messages.
pub fn signal_name(sig: i32) -> String {
    match sig {
        1 => "SIGHUP".into(),
        2 => "SIGINT".into(),
        15 => "SIGTERM".into(),
        n => format!("signal {n}"),
    }
}
