//! The records the executor writes: manifest lines, receipt lines and `last.json`.

use serde::{Deserialize, Serialize};

use plan::{ActionKind, ItemKind, OutcomeKind, PlannedAction, Precondition, Summary};
use store::Timestamp;

use crate::RunId;

/// A line of `S/.set-aside/<run>/MANIFEST.jsonl`, written before the item moves.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ManifestLine {
    /// Run id.
    pub run: String,
    /// Rule code.
    pub rule: String,
    /// Where the item was, relative to S.
    pub original: String,
    /// Where it went, relative to S.
    pub moved_to: String,
    /// Why.
    pub reason: String,
    /// What it is.
    pub kind: ItemKind,
    /// SHA-256, for files.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sha256: Option<String>,
    /// Tree digest, for directories.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tree_blake3: Option<String>,
    /// Size in bytes (files: the file; directories: the sum of their files).
    pub bytes: u64,
    /// When, RFC 3339.
    pub at: String,
}

impl ManifestLine {
    pub(crate) fn for_action(
        a: &PlannedAction,
        run: &RunId,
        moved_to: &str,
        at: Timestamp,
    ) -> Self {
        let (sha256, tree_blake3, bytes) = match &a.precondition {
            Precondition::File { bytes, sha256 } => (Some(sha256.clone()), None, *bytes),
            Precondition::Tree { bytes, tree_blake3 } => (None, Some(tree_blake3.clone()), *bytes),
        };
        ManifestLine {
            run: run.0.clone(),
            rule: a.rule.clone(),
            original: a.path.clone(),
            moved_to: moved_to.to_owned(),
            reason: a.reason.clone(),
            kind: a.kind.unwrap_or(ItemKind::Directory),
            sha256,
            tree_blake3,
            bytes,
            at: at.to_string(),
        }
    }
}

/// A line of `S/.reconcile/receipts.jsonl`: one per action applied, skipped or failed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Receipt {
    /// Run id.
    pub run: String,
    /// The action's `seq` in the plan.
    pub seq: u64,
    /// Rule code.
    pub rule: String,
    /// Action kind.
    pub action: ActionKind,
    /// The action's path.
    pub path: String,
    /// What happened.
    pub outcome: OutcomeKind,
    /// Why, when not applied.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub why: Option<String>,
    /// When, RFC 3339.
    pub at: String,
    /// Action-specific fields (`moved_to`, ...).
    #[serde(flatten)]
    pub extra: serde_json::Map<String, serde_json::Value>,
}

/// `S/.reconcile/last.json`: the summary of the last real run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LastRun {
    /// Format version (1).
    pub schema_version: u64,
    /// Run id.
    pub run: String,
    /// When it finished, RFC 3339.
    pub at: String,
    /// The summary.
    pub summary: Summary,
}
