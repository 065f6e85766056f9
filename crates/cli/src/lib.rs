//! The doctor's entry points, shared by the `doctor` binary and host applications that embed
//! it: repair (dry or real), apply a saved plan, report, list, restore and purge set-aside runs,
//! and sweep build directories. Each opens its own root and closes it (with every handle and
//! lock) before returning, on every path. Each command lives in its own module; [`command`] is the binary's
//! command line.

mod admin;
pub mod command;
mod error;
pub mod format;
mod options;
mod output;
mod repair;
pub mod rules;
mod runs;
mod status;
pub mod sweep;

pub use admin::{purge, restore, AdminCommand};
pub use plan::OutcomeKind;

/// What a host application needs to hold its own state while the doctor runs beside it: the
/// store owner lock and the session live lease of the locking protocol, and the root they are
/// taken in (see `examples/embed.rs`).
pub mod host {
    pub use fsroot::WritableRoot;
    pub use store::host::{Acquired, LiveLease, StoreOwnerLock};
}
/// Where an item of a set-aside run is now ([`RunItem::state`]).
pub use engine::admin::ItemState;
pub use engine::Problem;
pub use error::Error;
pub use options::{
    default_cache_dir, default_codewhale_home, default_sessions_dir, AppHome, RepairOptions,
};
pub use output::{AdminReport, RepairReport, SetAsideRun, StatusReport};
pub use repair::{
    apply_plan_bytes, apply_plan_file, plan_file_bytes, read_plan_file, repair_sessions,
};
pub use runs::{
    list_run, list_runs, resolve_run, RefusedItem, RunEntry, RunItem, RunReport, RunsReport,
};
pub use status::status;
