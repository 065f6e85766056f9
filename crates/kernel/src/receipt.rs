//! The receipt of one action: the line a pack's executor target appends to its receipts log for
//! every action applied, skipped or failed.

use plan::{ActionKind, OutcomeKind};
use serde::{Deserialize, Serialize};

/// A receipt line (`S/.reconcile/receipts.jsonl` for the sessions pack): one per action
/// applied, skipped or failed.
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
