//! `S/.reconcile/last.json`, the record of the last real run of the sessions pack: the app's
//! `ReconcileSummary` keys (codewhale-format §9.6, so the app's `codewhale doctor` reads it)
//! plus the doctor's own, and how either writer's file is read back.

use serde::{Deserialize, Serialize};

use crate::Summary;

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
    pub errors: Vec<engine::Problem>,
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

#[cfg(test)]
mod tests {
    use super::*;

    /// A summary the app wrote, with a different number in every counter.
    fn app_summary() -> ReconcileSummary {
        serde_json::from_value(serde_json::json!({
            "ran_at": "2026-11-29T12:00:00Z",
            "dry_run": false,
            "skipped_concurrent": true,
            "documents_set_aside": 1,
            "documents_newer_schema": 2,
            "stores_set_aside": 3,
            "stores_kept_with_work": 4,
            "stores_in_use": 5,
            "sessions_recovered": 6,
            "threads_unbound": 7,
            "artifact_dirs_set_aside": 8,
            "artifact_dirs_kept": 9,
            "limit_reached": true,
            "set_aside_path": "/s/.set-aside/x",
            "errors": ["one"]
        }))
        .unwrap()
    }

    #[test]
    fn every_count_the_app_keeps_reads_back_into_its_own_counter() {
        let s = app_summary().to_summary();
        let counts = [
            s.documents_set_aside,
            s.documents_newer_schema,
            s.stores_set_aside,
            s.stores_kept_with_work,
            s.stores_in_use,
            s.sessions_recovered,
            s.threads_unbound,
            s.artifact_dirs_set_aside,
            s.artifact_dirs_kept,
        ];
        assert_eq!(counts, [1, 2, 3, 4, 5, 6, 7, 8, 9]);
        assert!(s.limit_reached && s.skipped_concurrent);
        assert_eq!(s.set_aside_path.as_deref(), Some("/s/.set-aside/x"));
        assert_eq!(s.errors.len(), 1);
        // Counters the app does not keep read as 0.
        assert_eq!(
            (
                s.threads_bound,
                s.documents_unknown_content,
                s.actions_deferred
            ),
            (0, 0, 0)
        );
    }

    #[test]
    fn a_doctor_summary_written_for_the_app_reads_back_the_same() {
        let s = app_summary().to_summary();
        let back = ReconcileSummary::of("2026-11-29T12:00:00Z", &s).to_summary();
        assert_eq!(back.documents_set_aside, s.documents_set_aside);
        assert_eq!(back.artifact_dirs_kept, s.artifact_dirs_kept);
        assert_eq!(back.set_aside_path, s.set_aside_path);
        assert_eq!(format!("{back:?}"), format!("{s:?}"));
    }
}
