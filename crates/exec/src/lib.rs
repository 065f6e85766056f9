//! The sessions and build-dirs targets of the kernel's bounded executor
//! ([`kernel::execute`]), re-exported with it: what is the sessions pack's (its
//! `.reconcile.lock`, `last.json`, the live lease, the manifest line before each move, never
//! deleting session data) is in `sessions` and `act`, the build-dirs pack's in `reclaim`.

mod act;
mod purge;
mod reclaim;
mod sessions;
pub mod store_move;

pub use kernel::execute::{
    append_json_line, check_precondition, execute, single_flight_lock, Applied, Extra, Refusal,
    Step, Target,
};
pub use kernel::interrupt;
pub use purge::drop_stale_purge_records;
pub use reclaim::{
    acquire_sweep_lock, read_pending, BuildDirsTarget, PendingDeletion, PENDING_DIR,
};
pub use sessions::{acquire_reconcile_lock, write_last, SessionsTarget};
