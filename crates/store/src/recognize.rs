//! The marks of a session store (cli.md, Version 2, "Not a session store"), for the guard
//! that keeps a mistaken `--sessions-dir` (the app's home, a folder of unrelated
//! JSON files) from being planned as one.

use std::path::Path;

use fsroot::{EntryKind, Root};

use crate::ids::{self, LATE_USAGE_DIR, RECONCILE_DIR};
use crate::DocState;

/// Whether `root` holds a mark of a session store that costs no read of a document: a
/// `checkpoints/`, `.late-usage/` or `.reconcile/` directory. Without one, a directory is a
/// session store only if it holds a session document the app can read, which the scan finds
/// (`engine::Planned::documents`). A runtime store alone is not enough (the app's
/// `tasks/runtime` holds those).
pub fn has_store_mark(root: &Root) -> fsroot::Result<bool> {
    let entries = root.list(Path::new(""))?;
    Ok(entries.iter().any(|e| {
        e.kind == EntryKind::Dir
            && ["checkpoints", LATE_USAGE_DIR, RECONCILE_DIR]
                .iter()
                .any(|d| e.name.as_os_str() == *d)
    }))
}

/// Whether `root` holds a session document the app can read: the top-level `<id>.json` files
/// are judged (the fast pass first) until one is. For a real run in a directory with no mark,
/// before anything is written; a dry run learns the same from its scan.
pub fn has_readable_document(root: &Root) -> fsroot::Result<bool> {
    for e in root.list(Path::new(""))? {
        let Some(name) = e.name.to_str() else {
            continue;
        };
        let Some(id) = name.strip_suffix(".json") else {
            continue;
        };
        if e.kind != EntryKind::File || !ids::is_valid_id(id) || ids::is_reserved_top(name) {
            continue;
        }
        let Ok(bytes) = root.read(Path::new(name)) else {
            continue;
        };
        if matches!(
            crate::judge_document(id, &bytes),
            DocState::Readable { .. }
                | DocState::UnknownContent { .. }
                | DocState::NewerSchema { .. }
        ) {
            return Ok(true);
        }
    }
    Ok(false)
}

#[cfg(test)]
// The tests build their trees with std::fs, outside the root under test.
#[allow(clippy::disallowed_methods)]
mod tests {
    use super::*;

    #[test]
    fn a_store_is_marked_by_its_directories_and_not_by_a_runtime_store() {
        let tmp = tempfile::tempdir().unwrap();
        let s = tmp.path();
        let looks = || has_store_mark(&Root::open(s).unwrap()).unwrap();
        assert!(!looks(), "an empty directory");
        std::fs::write(s.join("config.json"), b"{\"model\": \"x\"}").unwrap();
        std::fs::write(s.join("auth.json"), b"{}").unwrap();
        std::fs::create_dir_all(s.join("a/runtime/threads")).unwrap();
        assert!(
            !looks(),
            "the app's home: unrelated JSON and a runtime store"
        );
        std::fs::create_dir(s.join(".late-usage")).unwrap();
        assert!(looks());
        std::fs::remove_dir(s.join(".late-usage")).unwrap();
        std::fs::write(s.join(".reconcile"), b"a file, not the directory").unwrap();
        assert!(!looks(), "only a directory counts");
        std::fs::remove_file(s.join(".reconcile")).unwrap();
        std::fs::create_dir(s.join("checkpoints")).unwrap();
        assert!(looks());
    }

    #[test]
    fn a_readable_document_is_found_and_a_torn_one_is_not_enough() {
        let tmp = tempfile::tempdir().unwrap();
        let s = tmp.path();
        let readable = || has_readable_document(&Root::open(s).unwrap()).unwrap();
        std::fs::write(s.join("config.json"), b"{}").unwrap();
        std::fs::write(s.join("alpha.json"), b"{\"torn\":").unwrap();
        assert!(!readable(), "a document the app cannot read does not count");
        let demo = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/demo/alpha.json");
        std::fs::copy(&demo, s.join("alpha.json")).unwrap();
        assert!(readable());
    }
}
