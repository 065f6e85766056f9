//! The records the executor writes and the restore and purge planners read back: manifest
//! lines (the doctor's and the app's), receipt lines, and the records of deletions in progress
//! (a purge's in `S/.reconcile/purge-pending/`, a sweep's in its state directory).

use std::path::Path;

use fsroot::{EntryKind, Problem, Root};
use serde::{Deserialize, Serialize};

use plan::{ItemKind, PlannedAction, Precondition};
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
    /// This line voids the earlier line for the same `moved_to`: that move failed and was
    /// rolled back, so nothing of it is in the run (readers drop both).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub rolled_back: bool,
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
            rolled_back: false,
        }
    }

    /// The line that voids this one: its move failed and everything it moved went back.
    pub fn rolled_back(&self, why: &str, at: Timestamp) -> Self {
        let mut line = self.clone();
        line.rolled_back = true;
        line.reason = format!("rolled back, nothing of it is in this run: {why}");
        line.at = at.to_string();
        line
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
                if matches!(line.kind, ItemKind::Document | ItemKind::TemporaryFile) {
                    line.kind = ItemKind::Directory;
                }
            }
        }
        line
    }
}

pub use kernel::Receipt;

/// A line of `S/.reconcile/receipts.jsonl` as read back: the doctor's own, or one the app wrote
/// (codewhale-format §9.4). The app's lines name no run and restore nothing: readers pass over
/// them without error. A line that is neither is reported by readers.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(untagged)]
pub enum AnyReceiptLine {
    /// Written by the doctor.
    Doctor(Receipt),
    /// Written by the app.
    App(AppReceiptLine),
}

/// A line the app appends to `S/.reconcile/receipts.jsonl` (codewhale-format §9.4): its
/// `action` and `at`, the other keys per action.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct AppReceiptLine {
    /// What the app did.
    pub action: AppReceiptAction,
    /// When, RFC 3339.
    pub at: String,
}

/// The actions the app receipts (codewhale-format §9.4).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AppReceiptAction {
    /// A runtime store moved into a set-aside run.
    StoreSetAside,
    /// A session recovered from a store.
    SessionRecovered,
    /// A document or a directory moved into a set-aside run.
    SetAside,
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

/// A deletion in progress: written (atomically, one file per deletion) before the tree is
/// deleted, removed once the deletion is receipted. A run killed or failed in between leaves
/// it, and the next run finishes the deletion, or writes the receipt of one that finished.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PendingDeletion {
    /// The run that started it.
    pub run: String,
    /// The absolute root (S, or a build root).
    pub root: String,
    /// The directory, relative to the root.
    pub path: String,
    /// Its device number.
    pub dev: u64,
    /// Its inode number.
    pub ino: u64,
    /// When it started, RFC 3339.
    pub at: String,
}

/// The pending deletions recorded in `dir` of `state` (its `*.json` files), and the records
/// that could not be read (each naming its path). A missing directory holds none; one that
/// cannot be listed is reported, never taken for empty.
pub fn read_pending(state: &Root, dir: &str) -> (Vec<PendingDeletion>, Vec<Problem>) {
    let mut found = Vec::new();
    let mut errors = Vec::new();
    let entries = match state.list(Path::new(dir)) {
        Ok(entries) => entries,
        Err(e) if e.is_not_found() => return (found, errors),
        // Unreadable is not empty: a deletion recorded there must not be taken for none.
        Err(e) => {
            errors.push(Problem::from(&e));
            return (found, errors);
        }
    };
    for e in entries {
        let rel = Path::new(dir).join(&e.name);
        if e.kind != EntryKind::File || rel.extension().is_none_or(|x| x != "json") {
            continue; // an interrupted write's temporary file, or not ours
        }
        match state.read(&rel).map(|b| serde_json::from_slice(&b)) {
            Ok(Ok(p)) => found.push(p),
            Ok(Err(err)) => {
                let shown = state.display_path(&rel);
                errors.push(Problem::invalid_data(
                    shown.to_string_lossy(),
                    format!("cannot use {}: {err}", shown.display()),
                ));
            }
            Err(err) => errors.push(Problem::from(&err)),
        }
    }
    (found, errors)
}

/// The record file, relative to S, of the purge of set-aside run `run`.
pub fn purge_pending_file(run: &str) -> String {
    format!("{}/{run}.json", store::ids::PURGE_PENDING_DIR)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What a move actually moved decides the digest and, between a document and a directory,
    /// the kind; the other kinds keep theirs.
    #[test]
    fn a_line_with_what_was_found_takes_its_digest_and_kind() {
        let line = |kind| ManifestLine {
            run: "20261129T120000Z-a1b2c3".into(),
            rule: "R1".into(),
            original: "a".into(),
            moved_to: ".set-aside/20261129T120000Z-a1b2c3/a".into(),
            reason: "r".into(),
            kind,
            sha256: None,
            tree_blake3: None,
            bytes: 0,
            at: "2026-11-29T12:00:00Z".into(),
            rolled_back: false,
        };
        let file = Precondition::File {
            bytes: 3,
            sha256: "f".repeat(64),
        };
        let tree = Precondition::Tree {
            bytes: 5,
            tree_blake3: "b".repeat(64),
        };
        let got = |kind, found: &Precondition| {
            let l = line(kind).with_digest(found);
            (l.kind, l.sha256.is_some(), l.tree_blake3.is_some(), l.bytes)
        };
        use ItemKind::*;
        assert_eq!(got(Directory, &file), (Document, true, false, 3));
        assert_eq!(got(Document, &file), (Document, true, false, 3));
        assert_eq!(
            got(PreviousVersion, &file),
            (PreviousVersion, true, false, 3)
        );
        assert_eq!(got(Document, &tree), (Directory, false, true, 5));
        assert_eq!(got(TemporaryFile, &tree), (Directory, false, true, 5));
        assert_eq!(got(TemporaryFile, &file), (TemporaryFile, true, false, 3));
        assert_eq!(got(Directory, &tree), (Directory, false, true, 5));
        assert_eq!(got(RuntimeStore, &tree), (RuntimeStore, false, true, 5));
    }
}
