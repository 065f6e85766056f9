//! What the fixture harness (`harness.rs`) reads from a `case.json` of any pack, and how it is
//! applied: symlinks to create and mtimes to set, given as RFC 3339 times.

use std::path::Path;
use std::time::{Duration, SystemTime};

use serde::Deserialize;
use store::Timestamp;

/// A symlink a case creates at `path` (relative to its tree), pointing at `target`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SymlinkSpec {
    pub path: String,
    pub target: String,
}

/// An mtime a case sets on `path` and everything beneath it.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MtimeSpec {
    pub path: String,
    pub at: String,
}

/// A case's RFC 3339 time.
pub fn parse_time(s: &str) -> Timestamp {
    Timestamp::parse(s).unwrap_or_else(|| panic!("{s:?} is not an RFC 3339 time"))
}

/// A case's RFC 3339 time as a `SystemTime`.
pub fn system_time(s: &str) -> SystemTime {
    SystemTime::UNIX_EPOCH + Duration::from_secs(u64::try_from(parse_time(s).0).unwrap())
}

/// Sets the mtime of `path` and of everything beneath it (symlinks are left alone).
pub fn set_mtime_recursive(path: &Path, at: SystemTime) {
    let meta =
        std::fs::symlink_metadata(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    if meta.file_type().is_symlink() {
        return;
    }
    if meta.is_dir() {
        for entry in std::fs::read_dir(path).unwrap() {
            set_mtime_recursive(&entry.unwrap().path(), at);
        }
    }
    super::set_mtime(path, at).unwrap_or_else(|e| panic!("set mtime of {}: {e}", path.display()));
}

/// Sets each of a case's mtimes beneath `tree`.
pub fn apply_mtimes(mtimes: &[MtimeSpec], tree: &Path) {
    for m in mtimes {
        set_mtime_recursive(&tree.join(&m.path), system_time(&m.at));
    }
}
