//! The records the executor writes: manifest lines, receipt lines and `last.json`.

use serde::{Deserialize, Serialize};

use plan::{ActionKind, ItemKind, OutcomeKind, PlannedAction, Precondition, Summary};
use store::Timestamp;

use store::ids::RunId;

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
    /// The line of a set-aside of `a`, moved to `moved_to` by run `run`.
    pub fn for_action(a: &PlannedAction, run: &RunId, moved_to: &str, at: Timestamp) -> Self {
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
            kind: a.action.item().unwrap_or(ItemKind::Directory),
            sha256,
            tree_blake3,
            bytes,
            at: at.to_string(),
        }
    }

    /// This line with the digest (and the kind that goes with it) of `found`: what a move
    /// actually moved.
    pub fn with_digest(&self, found: &Precondition) -> Self {
        let mut line = self.clone();
        match found {
            Precondition::File { bytes, sha256 } => {
                line.sha256 = Some(sha256.clone());
                line.tree_blake3 = None;
                line.bytes = *bytes;
                if line.kind == ItemKind::Directory {
                    line.kind = ItemKind::Document;
                }
            }
            Precondition::Tree { bytes, tree_blake3 } => {
                line.sha256 = None;
                line.tree_blake3 = Some(tree_blake3.clone());
                line.bytes = *bytes;
                if line.kind == ItemKind::Document {
                    line.kind = ItemKind::Directory;
                }
            }
        }
        line
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

/// A line of a set-aside manifest as read back: the doctor's own, or one the app wrote
/// (codewhale-format §9.5). A line that is neither is skipped by readers (it cannot name an item).
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(untagged)]
pub enum AnyManifestLine {
    /// Written by the doctor: relative paths, rule, kind and digest.
    Doctor(ManifestLine),
    /// Written by the app: absolute paths and a `detail`.
    App(AppManifestLine),
}

/// A line the app writes into `S/.set-aside/<run>/MANIFEST.jsonl` (codewhale-format §9.5):
/// absolute `original` and `moved_to`, no run, rule or kind.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AppManifestLine {
    /// Where the item was: an absolute path (under S for anything the doctor restores).
    pub original: String,
    /// Where the app moved it: an absolute path inside the run directory.
    pub moved_to: String,
    /// Why.
    #[serde(default)]
    pub reason: String,
    /// When, RFC 3339.
    #[serde(default)]
    pub at: String,
    /// `{"kind":"runtime_store"}`, `{"sha256","bytes"}`, `{"kind":"directory"}`, or null.
    #[serde(default)]
    pub detail: Option<AppDetail>,
}

/// The `detail` of an app manifest line.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum AppDetail {
    /// A document: the digest of its bytes.
    File {
        /// Lowercase hex SHA-256.
        sha256: String,
        /// Size in bytes.
        bytes: u64,
    },
    /// `runtime_store` or `directory`.
    Kind {
        /// The kind.
        kind: String,
    },
    /// A shape the doctor does not know (a newer app): judged by what is on disk.
    Other(serde_json::Value),
}

/// The app's `ReconcileSummary` (codewhale-format §9.6): the keys of `last.json` the app's
/// `codewhale doctor` reads. Every field but `ran_at` has a default, as in the app.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ReconcileSummary {
    /// When the run ran, RFC 3339 (null when unknown; always written).
    pub ran_at: Option<String>,
    /// Always false in a file the doctor writes (dry runs write no `last.json`).
    #[serde(default)]
    pub dry_run: bool,
    /// Whether another run held `.reconcile.lock`.
    #[serde(default)]
    pub skipped_concurrent: bool,
    /// R1 documents set aside.
    #[serde(default)]
    pub documents_set_aside: u64,
    /// Documents of a newer schema, kept.
    #[serde(default)]
    pub documents_newer_schema: u64,
    /// Stores set aside.
    #[serde(default)]
    pub stores_set_aside: u64,
    /// Unbound stores kept because they hold work.
    #[serde(default)]
    pub stores_kept_with_work: u64,
    /// Held stores no document binds.
    #[serde(default)]
    pub stores_in_use: u64,
    /// Documents recovered.
    #[serde(default)]
    pub sessions_recovered: u64,
    /// Threads unbound.
    #[serde(default)]
    pub threads_unbound: u64,
    /// Artifact directories set aside.
    #[serde(default)]
    pub artifact_dirs_set_aside: u64,
    /// Artifact directories kept.
    #[serde(default)]
    pub artifact_dirs_kept: u64,
    /// Whether the action bound cut the run.
    #[serde(default)]
    pub limit_reached: bool,
    /// Where this run set items aside; omitted when nowhere.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub set_aside_path: Option<String>,
    /// Errors met; omitted when none.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub errors: Vec<String>,
}

impl ReconcileSummary {
    /// The app's view of a doctor summary of a real run that ended at `ran_at`.
    pub fn of(ran_at: &str, s: &Summary) -> ReconcileSummary {
        ReconcileSummary {
            ran_at: Some(ran_at.to_owned()),
            dry_run: false,
            skipped_concurrent: s.skipped_concurrent,
            documents_set_aside: s.documents_set_aside,
            documents_newer_schema: s.documents_newer_schema,
            stores_set_aside: s.stores_set_aside,
            stores_kept_with_work: s.stores_kept_with_work,
            stores_in_use: s.stores_in_use,
            sessions_recovered: s.sessions_recovered,
            threads_unbound: s.threads_unbound,
            artifact_dirs_set_aside: s.artifact_dirs_set_aside,
            artifact_dirs_kept: s.artifact_dirs_kept,
            limit_reached: s.limit_reached,
            // The app names a set-aside path only when something was set aside; the previous
            // versions of rewritten thread records alone do not make one for it.
            set_aside_path: s.set_aside_path.clone().filter(|_| s.items_set_aside() > 0),
            errors: s.errors.clone(),
        }
    }

    /// The same counts as a doctor [`Summary`] (counters the app does not keep are 0).
    pub fn to_summary(&self) -> Summary {
        Summary {
            documents_set_aside: self.documents_set_aside,
            documents_newer_schema: self.documents_newer_schema,
            stores_set_aside: self.stores_set_aside,
            stores_kept_with_work: self.stores_kept_with_work,
            stores_in_use: self.stores_in_use,
            sessions_recovered: self.sessions_recovered,
            threads_unbound: self.threads_unbound,
            artifact_dirs_set_aside: self.artifact_dirs_set_aside,
            artifact_dirs_kept: self.artifact_dirs_kept,
            limit_reached: self.limit_reached,
            skipped_concurrent: self.skipped_concurrent,
            set_aside_path: self.set_aside_path.clone(),
            errors: self.errors.clone(),
            ..Summary::default()
        }
    }
}

/// `S/.reconcile/last.json`: the summary of the last real run. A superset of the app's
/// `ReconcileSummary` (its keys at the top level, so the app's `codewhale doctor` reads the
/// file as its own) plus the doctor's keys `schema_version`, `run`, `at` and `summary`.
///
/// Read back, a file the app wrote has none of the doctor's keys: they are then `None`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LastRun {
    /// Format version of the doctor's part (1); absent in a file the app wrote.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub schema_version: Option<u64>,
    /// The app's keys.
    #[serde(flatten)]
    pub app: ReconcileSummary,
    /// Run id; absent in a file the app wrote.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub run: Option<String>,
    /// When it finished, RFC 3339; absent in a file the app wrote.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub at: Option<String>,
    /// The doctor's summary; absent in a file the app wrote.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub summary: Option<Summary>,
}

impl LastRun {
    /// The record of the real run `run`, finished at `at`, with summary `summary`.
    pub fn new(run: &str, at: &str, summary: &Summary) -> LastRun {
        LastRun {
            schema_version: Some(1),
            app: ReconcileSummary::of(at, summary),
            run: Some(run.to_owned()),
            at: Some(at.to_owned()),
            summary: Some(summary.clone()),
        }
    }

    /// Reads `last.json` as the doctor or the app wrote it; `None` when it is neither (a
    /// report never fails over this file).
    pub fn parse(bytes: &[u8]) -> Option<LastRun> {
        let value: serde_json::Value = serde_json::from_slice(bytes).ok()?;
        if !value.is_object() {
            return None;
        }
        if let Ok(mut last) = serde_json::from_value::<LastRun>(value.clone()) {
            // Written by an earlier doctor, before the app's keys: derive them.
            if let (None, Some(at), Some(summary)) = (&last.app.ran_at, &last.at, &last.summary) {
                last.app = ReconcileSummary::of(at, summary);
            }
            return Some(last);
        }
        // The doctor's keys in an unexpected shape (a newer doctor): keep the app's part.
        let app = serde_json::from_value::<ReconcileSummary>(value).ok()?;
        Some(LastRun {
            schema_version: None,
            app,
            run: None,
            at: None,
            summary: None,
        })
    }

    /// Whether the app wrote this file (none of the doctor's keys).
    pub fn written_by_app(&self) -> bool {
        self.run.is_none() && self.summary.is_none()
    }

    /// The summary: the doctor's own, else the counts of the app's keys.
    pub fn summary_or_app(&self) -> Summary {
        self.summary
            .clone()
            .unwrap_or_else(|| self.app.to_summary())
    }

    /// When the run happened: the doctor's `at`, else the app's `ran_at`.
    pub fn when(&self) -> Option<&str> {
        self.at.as_deref().or(self.app.ran_at.as_deref())
    }
}
