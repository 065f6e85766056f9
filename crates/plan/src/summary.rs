//! The run summary of cli.md: counts of what was planned (dry run) or applied (real run).

use serde::{Deserialize, Serialize};

use crate::{ActionKind, ItemKind, PlannedAction};

/// The `summary` object of the JSON output and of `last.json`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Summary {
    /// R1 documents set aside.
    pub documents_set_aside: u64,
    /// Documents of a newer schema, kept.
    pub documents_newer_schema: u64,
    /// Documents kept because they hold a content block `type`, journal `kind` or message
    /// `role` the doctor does not know (the app may be newer than the doctor).
    #[serde(default)]
    pub documents_unknown_content: u64,
    /// Thread records that do not parse, left in place.
    pub threads_unreadable: u64,
    /// R2 stores set aside.
    pub stores_set_aside: u64,
    /// Unbound stores kept because they hold work with nothing recoverable.
    pub stores_kept_with_work: u64,
    /// Stores or sessions skipped because another process holds them.
    pub stores_in_use: u64,
    /// R3 documents written.
    pub sessions_recovered: u64,
    /// R3 bindings completed after a crash.
    pub threads_bound: u64,
    /// R4 threads unbound.
    pub threads_unbound: u64,
    /// R5 directories set aside.
    pub artifact_dirs_set_aside: u64,
    /// R5 directories kept (named or recently changed).
    pub artifact_dirs_kept: u64,
    /// Actions left for a later run by `--max-actions`.
    pub actions_deferred: u64,
    /// Whether the bound cut the plan.
    pub limit_reached: bool,
    /// Whether another run held `.reconcile.lock`.
    pub skipped_concurrent: bool,
    /// `.set-aside/<run>` when this run sets anything aside.
    pub set_aside_path: Option<String>,
    /// Errors met, each naming its path.
    pub errors: Vec<String>,
}

impl Summary {
    /// Counts one action as done (or, for a dry run, as planned).
    pub fn count_action(&mut self, a: &PlannedAction) {
        match (a.action, a.kind) {
            (ActionKind::SetAside, Some(ItemKind::Document)) => self.documents_set_aside += 1,
            (ActionKind::SetAside, Some(ItemKind::RuntimeStore)) => self.stores_set_aside += 1,
            (ActionKind::SetAside, _) => self.artifact_dirs_set_aside += 1,
            (ActionKind::UnbindThread, _) => self.threads_unbound += 1,
            (ActionKind::RecoverThread, _) => self.sessions_recovered += 1,
            (ActionKind::BindThread, _) => self.threads_bound += 1,
            (
                ActionKind::ReclaimDir
                | ActionKind::Restore
                | ActionKind::Purge
                | ActionKind::RemoveTemp
                | ActionKind::RemoveEmptyDir,
                _,
            ) => {}
        }
    }

    /// Items set aside, of every kind.
    pub fn items_set_aside(&self) -> u64 {
        self.documents_set_aside + self.stores_set_aside + self.artifact_dirs_set_aside
    }
}
