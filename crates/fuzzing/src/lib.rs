//! The fuzz targets' functions: one per untrusted input the doctor reads, each running the code
//! under test on arbitrary bytes and asserting its properties (a violation panics). `fuzz/`
//! (its own workspace, nightly, libFuzzer) calls them from `fuzz_targets/<name>.rs`;
//! `tests/corpus.rs` runs each over its checked-in corpus (`fuzz/corpus/<name>/`) and its past
//! crashes (`fuzz/regressions/<name>/`) on stable. docs/reliability.md, "Fuzzing", says what each
//! asserts.
//!
//! Inputs made of several parts (a thread record with its turns and items, a manifest with its
//! receipts and the files of the run, the items of one `/proc/<pid>`) are framed by
//! [`frame`]: parts joined by a separator byte that the part's format never needs.

// The targets that need a filesystem build a small store in a temporary directory per input,
// with std::fs: they are test tooling, not the product, and the boundaries clippy.toml enforces
// on the product do not apply.
#![allow(clippy::disallowed_methods, clippy::disallowed_types)]

mod admin;
// Its tree holds symbolic links (Unix).
#[cfg(unix)]
mod binding;
mod document;
// It reads a procfs (`fsroot::procfs`, Linux).
#[cfg(target_os = "linux")]
mod liveness;
mod names;
mod plan_file;
mod thread;

pub use admin::{restore_purge, RUN as ADMIN_RUN};
#[cfg(unix)]
pub use binding::binding;
pub use document::document;
#[cfg(target_os = "linux")]
pub use liveness::liveness;
pub use names::{duration, id_tokens, run_id, temp_name};
pub use plan_file::plan_file;
pub use thread::thread;

/// The separator of the parts of a `liveness` input: a byte no UTF-8 text holds.
pub const LIVENESS_SEP: u8 = 0xff;

/// A fuzz target's function.
pub type Target = fn(&[u8]);

/// Every target, by the name of its `fuzz/fuzz_targets/<name>.rs` and corpus directory.
pub const TARGETS: &[(&str, Target)] = &[
    ("document", document),
    ("thread", thread),
    ("plan_file", plan_file),
    ("restore_purge", restore_purge),
    #[cfg(target_os = "linux")]
    ("liveness", liveness),
    #[cfg(unix)]
    ("binding", binding),
    ("id_tokens", id_tokens),
    ("duration", duration),
    ("run_id", run_id),
    ("temp_name", temp_name),
];

/// The name of every target on every OS. `TARGETS` holds those this OS runs: `liveness` reads
/// `/proc` (Linux) and `binding` resolves bindings through symlinks (Unix).
pub const NAMES: &[&str] = &[
    "document",
    "thread",
    "plan_file",
    "restore_purge",
    "liveness",
    "binding",
    "id_tokens",
    "duration",
    "run_id",
    "temp_name",
];

/// The separator of the parts of a framed input (thread, restore_purge): a NUL byte, which no
/// JSON text holds outside a string, where it is always escaped.
pub const NUL: u8 = 0;

/// `parts` joined by `sep`: the framing the multi-part targets split again.
pub fn frame(parts: &[&[u8]], sep: u8) -> Vec<u8> {
    let mut out = Vec::new();
    for (i, p) in parts.iter().enumerate() {
        if i > 0 {
            out.push(sep);
        }
        out.extend_from_slice(p);
    }
    out
}

/// Whether `p` names something inside S, relative to it: not empty, not absolute, and every
/// component normal (none empty, `.` or `..`).
pub(crate) fn inside_s(p: &str) -> bool {
    !p.is_empty()
        && !p.starts_with('/')
        && p.split('/').all(|c| !c.is_empty() && c != "." && c != "..")
}

/// Writes `bytes` at `dir/rel`, creating the parents.
pub(crate) fn write(dir: &std::path::Path, rel: &str, bytes: &[u8]) {
    let p = dir.join(rel);
    if let Some(parent) = p.parent() {
        std::fs::create_dir_all(parent).expect("create a parent in the temporary store");
    }
    std::fs::write(&p, bytes).expect("write into the temporary store");
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn inside_s_refuses_every_way_out() {
        for ok in ["a.json", "a/runtime", ".set-aside/r/x"] {
            assert!(inside_s(ok), "{ok}");
        }
        for out in ["", "/a", "a/../../b", "..", "a//b", "./a", "a/", "a/."] {
            assert!(!inside_s(out), "{out}");
        }
    }

    #[test]
    fn frames_split_back() {
        let f = frame(&[b"a", b"", b"bc"], NUL);
        assert_eq!(f, b"a\0\0bc");
        let back: Vec<&[u8]> = f.split(|b| *b == NUL).collect();
        assert_eq!(back, [&b"a"[..], b"", b"bc"]);
    }
}
