//! `cargo xtask tidy`: the check of the source tree that neither the compiler nor clippy
//! makes, also run by plain `cargo test` (`workspace_is_tidy`): every `.rs` file of the
//! workspace (outside `target/` and `fuzz/target/`) starts with a `//!` line saying what it
//! owns, and no file but those in [`UNSAFE_ALLOWED`] lifts the `unsafe_code` lint (the
//! workspace forbids it; fsroot, whose Windows backend needs it, denies it). Where the filesystem, the clock and the environment may be touched is clippy's to
//! enforce (`clippy.toml`), and the crates' dependency directions are `layers.rs`'s.

use std::fmt;
use std::path::{Path, PathBuf};

use crate::Failure;

/// One finding, with the file (relative to the workspace root) and line it concerns.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Violation {
    /// Relative to the workspace root, `/`-separated.
    pub path: String,
    /// 1-based line.
    pub line: usize,
    /// What is wrong.
    pub message: String,
}

impl fmt::Display for Violation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}: {}", self.path, self.line, self.message)
    }
}

/// The files that may lift the `unsafe_code` lint: fsroot's Windows backend, the one module
/// making raw system calls (docs/ARCHITECTURE.md).
pub const UNSAFE_ALLOWED: &[&str] = &["crates/fsroot/src/sys/windows.rs"];

/// The attribute texts that lift the lint (written split, so this file does not match).
const UNSAFE_LIFTS: [&str; 2] = [
    concat!("allow", "(unsafe_code)"),
    concat!("expect", "(unsafe_code)"),
];

/// Runs the checks on the workspace at `root` and prints what they find.
pub fn run(root: &Path) -> Result<(), Failure> {
    let found = check_workspace(root);
    for v in &found {
        eprintln!("{v}");
    }
    if found.is_empty() {
        println!("tidy: ok");
        Ok(())
    } else {
        Err(Failure::Failed(format!("tidy: {} problem(s)", found.len())))
    }
}

/// Every violation of the checks under `root`, sorted by path and line.
pub fn check_workspace(root: &Path) -> Vec<Violation> {
    let mut files = Vec::new();
    rust_files(root, root, &mut files);
    files.sort();
    let mut found = Vec::new();
    for file in files {
        let rel = file
            .strip_prefix(root)
            .unwrap_or(&file)
            .to_string_lossy()
            .replace('\\', "/");
        let src = match std::fs::read_to_string(&file) {
            Ok(s) => s,
            Err(e) => {
                found.push(Violation {
                    path: rel,
                    line: 1,
                    message: format!("cannot read: {e}"),
                });
                continue;
            }
        };
        found.extend(check_file(&rel, &src));
    }
    found
}

/// The violations of one file, `rel` being its path relative to the workspace root.
pub fn check_file(rel: &str, src: &str) -> Vec<Violation> {
    let mut found = Vec::new();
    if !starts_with_module_doc(src) {
        found.push(Violation {
            path: rel.to_owned(),
            line: 1,
            message: "does not start with a `//!` line saying what the module owns".into(),
        });
    }
    if !UNSAFE_ALLOWED.contains(&rel) {
        for (i, line) in src.lines().enumerate() {
            let squashed: String = line.chars().filter(|c| !c.is_whitespace()).collect();
            if UNSAFE_LIFTS.iter().any(|l| squashed.contains(l)) {
                found.push(Violation {
                    path: rel.to_owned(),
                    line: i + 1,
                    message: "lifts the `unsafe_code` lint, which only tidy's UNSAFE_ALLOWED may"
                        .into(),
                });
            }
        }
    }
    found
}

/// Whether the first line of `src` is a `//!` comment.
pub fn starts_with_module_doc(src: &str) -> bool {
    src.lines().next().is_some_and(|l| l.starts_with("//!"))
}

fn rust_files(root: &Path, dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        let name = entry.file_name();
        let name = name.to_string_lossy();
        let Ok(ft) = entry.file_type() else { continue };
        if ft.is_dir() {
            // The build outputs: the workspace's, and fuzz/'s (its own workspace).
            let build = name == "target" && (dir == root || dir == root.join("fuzz"));
            if name.starts_with('.') || build {
                continue;
            }
            rust_files(root, &path, out);
        } else if ft.is_file() && name.ends_with(".rs") {
            out.push(path);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn module_doc_must_be_the_first_line() {
        assert!(starts_with_module_doc("//! Owns the thing.\nfn f() {}\n"));
        assert!(!starts_with_module_doc("// Owns the thing.\n"));
        assert!(!starts_with_module_doc("\n//! late\n"));
        assert!(!starts_with_module_doc("#![allow(x)]\n//! late\n"));
        assert!(!starts_with_module_doc(""));
    }

    #[test]
    fn a_file_without_its_module_line_fails_the_check() {
        let found = check_file("crates/store/src/bad.rs", "use std::io;\n");
        assert_eq!(found.len(), 1, "{found:?}");
        assert_eq!(
            found[0].to_string(),
            "crates/store/src/bad.rs:1: does not start with a `//!` line saying what the module \
             owns"
        );
        assert!(check_file("crates/store/src/good.rs", "//! good\n").is_empty());
    }

    #[test]
    fn the_walk_finds_every_file_without_its_module_line_outside_target() {
        let root = std::env::temp_dir().join(format!("xtask-tidy-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        for (rel, text) in [
            ("crates/a/src/lib.rs", "//! a\nuse std::{fs, io};\n"),
            ("crates/a/tests/t.rs", "use std::fs;\n"),
            ("rules/p/src/r.rs", "fn main() {}\n"),
            ("target/debug/build/x.rs", "no doc\n"),
            ("fuzz/target/release/build/y.rs", "no doc\n"),
            ("fuzz/fuzz_targets/z.rs", "no doc\n"),
        ] {
            let p = root.join(rel);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(p, text).unwrap();
        }
        let found: Vec<String> = check_workspace(&root)
            .iter()
            .map(|v| format!("{}:{}", v.path, v.line))
            .collect();
        let _ = std::fs::remove_dir_all(&root);
        assert_eq!(
            found,
            [
                "crates/a/tests/t.rs:1",
                "fuzz/fuzz_targets/z.rs:1",
                "rules/p/src/r.rs:1"
            ]
        );
    }

    #[test]
    fn only_the_windows_backend_may_lift_the_unsafe_lint() {
        let lift = format!("//! x\n#![{}(unsafe_code)]\n", "allow");
        let found = check_file("crates/fsroot/src/lib.rs", &lift);
        assert_eq!(found.len(), 1, "{found:?}");
        assert_eq!(
            found[0].to_string(),
            "crates/fsroot/src/lib.rs:2: lifts the `unsafe_code` lint, which only tidy's \
             UNSAFE_ALLOWED may"
        );
        let item = format!("//! x\n#[{} ( unsafe_code )]\nfn f() {{}}\n", "expect");
        assert_eq!(check_file("crates/store/src/a.rs", &item).len(), 1);
        assert!(check_file("crates/fsroot/src/sys/windows.rs", &lift).is_empty());
    }

    /// The real check, run by plain `cargo test`.
    #[test]
    fn workspace_is_tidy() {
        let found = check_workspace(&crate::workspace_root());
        let report: Vec<String> = found.iter().map(ToString::to_string).collect();
        assert!(report.is_empty(), "tidy:\n{}", report.join("\n"));
    }
}
