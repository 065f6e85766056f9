//! The plan: an ordered list of [`PlannedAction`]s, each with the precondition it expects to
//! find, plus the count of deferred actions. One value, which a dry run prints and a real run
//! applies, action for action; what happened to each; and the text rendering of both.

mod render;
mod wire;

use serde::{Deserialize, Serialize};

pub use render::{render_action, render_actions, render_skipped, shown_path};

/// What an action does.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ActionKind {
    /// Move an item into `.set-aside/<run>/`.
    SetAside,
    /// Rewrite a thread record without its binding.
    UnbindThread,
    /// Write a recovered document and bind the thread to it.
    RecoverThread,
    /// Bind a thread to the already written recovered document.
    BindThread,
    /// Delete a regenerable build work directory.
    ReclaimDir,
    /// Put a set-aside item (or a thread record's previous version) back at its original path.
    Restore,
    /// Move the rest of a store a killed run left split into that run (the set-aside it began).
    FinishSetAside,
    /// Delete a whole set-aside run.
    Purge,
    /// Only in receipts of versions before issue 21, which deleted the temporary files of
    /// interrupted writes: read so those receipts still parse, never planned (a plan naming it
    /// is refused). Such files are now set aside ([`ItemKind::TemporaryFile`]).
    RemoveTemp,
    /// Remove an empty session directory (`rmdir`: it holds no data), such as one a set-aside
    /// left empty when a kill came before its removal.
    RemoveEmptyDir,
}

impl ActionKind {
    /// The verb of the dry-run line (`would <verb>`).
    pub fn verb(self) -> &'static str {
        match self {
            ActionKind::SetAside => "set aside",
            ActionKind::UnbindThread => "unbind",
            ActionKind::RecoverThread => "recover",
            ActionKind::BindThread => "bind",
            ActionKind::ReclaimDir => "reclaim",
            ActionKind::Restore => "restore",
            ActionKind::FinishSetAside => "finish setting aside",
            ActionKind::Purge => "purge",
            ActionKind::RemoveTemp => "remove",
            ActionKind::RemoveEmptyDir => "remove empty directory",
        }
    }

    /// The verb of the real-run line.
    pub fn past(self) -> &'static str {
        match self {
            ActionKind::SetAside => "set aside",
            ActionKind::UnbindThread => "unbound",
            ActionKind::RecoverThread => "recovered",
            ActionKind::BindThread => "bound",
            ActionKind::ReclaimDir => "reclaimed",
            ActionKind::Restore => "restored",
            ActionKind::FinishSetAside => "finished setting aside",
            ActionKind::Purge => "purged",
            ActionKind::RemoveTemp => "removed",
            ActionKind::RemoveEmptyDir => "removed empty directory",
        }
    }
}

/// What kind of item a `set_aside` moves (the manifest's `kind`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ItemKind {
    /// A session document.
    Document,
    /// A whole runtime store.
    RuntimeStore,
    /// A session directory.
    Directory,
    /// The bytes a thread record had before its first rewrite in a run.
    PreviousVersion,
    /// A file named like the temporary file of an interrupted atomic write
    /// (`.<target>.doctor-tmp-<pid>-<n>`), set aside by housekeeping (pseudo-rule `doctor`).
    TemporaryFile,
}

/// What an action expects to find, checked immediately before it is applied.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum Precondition {
    /// A regular file of this size and SHA-256.
    File {
        /// Size in bytes.
        bytes: u64,
        /// Lowercase hex SHA-256.
        sha256: String,
    },
    /// A directory whose tree digest is this.
    Tree {
        /// Sum of file sizes.
        bytes: u64,
        /// BLAKE3 of the tree listing.
        tree_blake3: String,
    },
}

/// What one planned action does, with exactly the fields its kind needs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Action {
    /// Move an item of `kind` into `.set-aside/<run>/`.
    SetAside {
        /// The kind of item moved.
        kind: ItemKind,
    },
    /// Rewrite a thread record without its binding.
    UnbindThread,
    /// Write the recovered `document` (relative to S) and bind the thread to it.
    RecoverThread {
        /// The document, relative to S.
        document: String,
    },
    /// Bind a thread to the already written recovered `document`.
    BindThread {
        /// The document, relative to S.
        document: String,
    },
    /// Delete a regenerable build work directory of the absolute `root`.
    ReclaimDir {
        /// The absolute root the path is relative to.
        root: String,
    },
    /// Put an item of `kind` back at its original path from `from`, where it is now (inside
    /// `.set-aside/<run>/`); the precondition is checked there.
    Restore {
        /// The kind of item put back.
        kind: ItemKind,
        /// Where the item is now, relative to S.
        from: String,
    },
    /// Move the rest of the runtime store at `from`, which a killed run left split between
    /// `from` and its destination in that run (the path), into that destination by the
    /// store-move protocol; the precondition is the two halves together.
    FinishSetAside {
        /// Where the rest of the store still is (the store's own path), relative to S.
        from: String,
    },
    /// Delete a whole set-aside run.
    Purge,
    /// Remove an empty session directory.
    RemoveEmptyDir,
}

impl Action {
    /// The kind of action, without its fields.
    pub fn kind(&self) -> ActionKind {
        match self {
            Action::SetAside { .. } => ActionKind::SetAside,
            Action::UnbindThread => ActionKind::UnbindThread,
            Action::RecoverThread { .. } => ActionKind::RecoverThread,
            Action::BindThread { .. } => ActionKind::BindThread,
            Action::ReclaimDir { .. } => ActionKind::ReclaimDir,
            Action::Restore { .. } => ActionKind::Restore,
            Action::FinishSetAside { .. } => ActionKind::FinishSetAside,
            Action::Purge => ActionKind::Purge,
            Action::RemoveEmptyDir => ActionKind::RemoveEmptyDir,
        }
    }

    /// The kind of item a set-aside moves or a restore puts back.
    pub fn item(&self) -> Option<ItemKind> {
        match self {
            Action::SetAside { kind } | Action::Restore { kind, .. } => Some(*kind),
            Action::FinishSetAside { .. } => Some(ItemKind::RuntimeStore),
            _ => None,
        }
    }

    /// The document a recovery writes or a binding names.
    pub fn document(&self) -> Option<&str> {
        match self {
            Action::RecoverThread { document } | Action::BindThread { document } => Some(document),
            _ => None,
        }
    }

    /// The absolute root of a B1 action.
    pub fn root(&self) -> Option<&str> {
        match self {
            Action::ReclaimDir { root } => Some(root),
            _ => None,
        }
    }
}

/// One planned action.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(try_from = "wire::Action", into = "wire::Action")]
pub struct PlannedAction {
    /// 1-based position in the plan.
    pub seq: u64,
    /// Rule code (`R1`).
    pub rule: String,
    /// Rule name (`unreadable-document`).
    pub rule_name: String,
    /// What it does.
    pub action: Action,
    /// The item, relative to the directory the run works on (`from`'s destination for a
    /// restore, the root for B1), `/`-separated.
    pub path: String,
    /// Why.
    pub reason: String,
    /// What it expects to find.
    pub precondition: Precondition,
}

/// The plan of one run.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Plan {
    /// The actions, in order.
    pub actions: Vec<PlannedAction>,
    /// How many actions the bound left for a later run.
    pub deferred: u64,
    /// The instant the plan was made (RFC 3339), for sessions plans: every thread record the
    /// plan rewrites gets it as `updated_at`, so the bytes a real run writes, and the
    /// preconditions of later actions on the same record, are known when planning.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub planned_at: Option<String>,
}

/// An item a rule would have acted on but did not, and why.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub struct Skipped {
    /// Relative path.
    pub path: String,
    /// Rule code.
    pub rule: String,
    /// Why.
    pub why: String,
}

/// The plan as `--plan-out` writes it and `sessions apply` (`--apply-plan`) reads it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PlanFile {
    /// What the file is: always [`PlanFile::KIND`], so that no other JSON (a report, a
    /// manifest) is ever taken for a plan.
    pub kind: String,
    /// Format version (1).
    pub schema_version: u64,
    /// The absolute sessions directory the plan was made for.
    pub sessions_dir: String,
    /// The plan.
    pub plan: Plan,
}

impl PlanFile {
    /// The `kind` of a plan file.
    pub const KIND: &'static str = "doctor-plan";

    /// The plan file of `plan`, made for the sessions directory `sessions_dir`.
    pub fn new(sessions_dir: String, plan: Plan) -> PlanFile {
        PlanFile {
            kind: PlanFile::KIND.to_owned(),
            schema_version: 1,
            sessions_dir,
            plan,
        }
    }
}

/// The outcome of one applied action.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum OutcomeKind {
    /// Done.
    Applied,
    /// Not done, on purpose (precondition, live holder).
    Skipped,
    /// Tried and failed; nothing was lost.
    Failed,
}

/// What happened to one action of the plan.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Outcome {
    /// The action's `seq`.
    pub seq: u64,
    /// What happened.
    pub outcome: OutcomeKind,
    /// Why, when not applied.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub why: Option<String>,
}
