//! `cargo xtask tidy`: the check of the source tree that neither the compiler nor clippy
//! makes, also run by plain `cargo test` (`workspace_is_tidy`): every `.rs` file of the
//! workspace (outside `target/` and `fuzz/target/`) starts with a `//!` line saying what it
//! owns, no file but those in [`UNSAFE_ALLOWED`] lifts the `unsafe_code` lint (the
//! workspace forbids it; fsroot, whose Windows backend needs it, denies it), and no product
//! code names an OS module or crate outside `fsroot`'s backends ([`os_code`]). Where the
//! filesystem, the clock and the environment may be touched is clippy's to enforce
//! (`clippy.toml`), and the crates' dependency directions are `layers.rs`'s.

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

/// The files that may lift the `unsafe_code` lint: fsroot's Windows backends (the filesystem
/// and the liveness one) and its macOS liveness backend, the modules making raw system calls
/// (docs/ARCHITECTURE.md).
pub const UNSAFE_ALLOWED: &[&str] = &[
    "crates/fsroot/src/sys/windows.rs",
    "crates/fsroot/src/winproc.rs",
    "crates/fsroot/src/macproc.rs",
];

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
    found.extend(os_code(rel, src));
    found
}

/// The OS modules and crates that only `fsroot`'s backends use: `std::os::unix`,
/// `std::os::windows`, `std::os::fd`, `rustix`, `libc`, `windows_sys`.
pub const OS_NAMES: &[&str] = &[
    "std::os::unix",
    "std::os::windows",
    "std::os::fd",
    "rustix",
    "libc",
    "windows_sys",
];

/// Where [`OS_NAMES`] may appear: `fsroot`'s per-OS backends (`crates/fsroot/src/sys/`), its
/// liveness backends (`crates/fsroot/src/procfs.rs`, `winproc.rs`, `macproc.rs`), and test code: every file under a
/// `tests/` directory and in `crates/test-support/`.
pub fn may_name_the_os(rel: &str) -> bool {
    rel.starts_with("crates/fsroot/src/sys/")
        || rel == "crates/fsroot/src/procfs.rs"
        || rel == "crates/fsroot/src/winproc.rs"
        || rel == "crates/fsroot/src/macproc.rs"
        || rel.starts_with("crates/test-support/")
        || rel.starts_with("tests/")
        || rel.contains("/tests/")
}

/// Whether `line` opens a file's test module: `#[cfg(test)]` or `#[cfg(all(test, ...))]`.
fn opens_tests(line: &str) -> bool {
    let l = line.trim();
    l == "#[cfg(test)]" || l.starts_with("#[cfg(all(test,")
}

/// The lines of `src` that name an OS module or crate ([`OS_NAMES`]) in code, in a file that
/// may not ([`may_name_the_os`]). A file's test module, from the line that opens it
/// ([`opens_tests`]) to the end of the file (tests come last), may; so may comments.
pub fn os_code(rel: &str, src: &str) -> Vec<Violation> {
    if may_name_the_os(rel) {
        return Vec::new();
    }
    let mut found = Vec::new();
    for (i, line) in src.lines().enumerate() {
        if opens_tests(line) {
            break;
        }
        let code = code_of(line);
        if let Some(name) = OS_NAMES.iter().find(|n| names(&code, n)) {
            found.push(Violation {
                path: rel.to_owned(),
                line: i + 1,
                message: format!(
                    "`{name}` outside fsroot's OS backends (crates/fsroot/src/sys/): product \
                     code stays portable (docs/ARCHITECTURE.md, \"One filesystem layer, one \
                     backend per OS\")"
                ),
            });
        }
    }
    found
}

/// `line` without its comment and the text of its string literals (the quotes kept): the
/// names it holds in code.
fn code_of(line: &str) -> String {
    let mut out = String::new();
    let (mut in_string, mut escaped) = (false, false);
    let mut chars = line.chars().peekable();
    while let Some(c) = chars.next() {
        if in_string {
            match c {
                _ if escaped => escaped = false,
                '\\' => escaped = true,
                '"' => {
                    in_string = false;
                    out.push(c);
                }
                _ => {}
            }
            continue;
        }
        match c {
            '/' if chars.peek() == Some(&'/') => break,
            '"' => {
                in_string = true;
                out.push(c);
            }
            _ => out.push(c),
        }
    }
    out
}

/// Whether `code` holds `name` as a whole path: not inside a longer identifier.
fn names(code: &str, name: &str) -> bool {
    let ident = |c: char| c.is_alphanumeric() || c == '_';
    code.match_indices(name).any(|(at, _)| {
        let before = code[..at].chars().next_back();
        let after = code[at + name.len()..].chars().next();
        !before.is_some_and(ident) && !after.is_some_and(ident)
    })
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
    fn only_the_windows_backends_may_lift_the_unsafe_lint() {
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
        assert!(check_file("crates/fsroot/src/winproc.rs", &lift).is_empty());
        assert!(check_file("crates/fsroot/src/macproc.rs", &lift).is_empty());
    }

    #[test]
    fn an_os_module_in_product_code_fails_the_check() {
        let src = "//! a\nuse std::os::unix::ffi::OsStrExt;\nfn f() { libc::getuid(); }\n\
                   // rustix in a comment is prose\nlet glibc_version = 1;\n\
                   let s = \"libc:: in a string\"; // std::os::fd\n\
                   #[cfg(test)]\nmod tests { use std::os::fd::AsFd; }\n";
        let found: Vec<String> = check_file("crates/engine/src/x.rs", src)
            .iter()
            .map(|v| format!("{}:{}", v.path, v.line))
            .collect();
        assert_eq!(
            found,
            ["crates/engine/src/x.rs:2", "crates/engine/src/x.rs:3"]
        );
        let v = &check_file("crates/engine/src/x.rs", src)[0];
        assert!(
            v.message
                .starts_with("`std::os::unix` outside fsroot's OS backends"),
            "{v}"
        );
        for name in OS_NAMES {
            let one = format!("//! a\nuse {name}::x;\n");
            assert_eq!(check_file("rules/p/src/r.rs", &one).len(), 1, "{name}");
            assert_eq!(check_file("crates/cli/src/lib.rs", &one).len(), 1, "{name}");
        }
        for allowed in [
            "crates/fsroot/src/sys/linux.rs",
            "crates/fsroot/src/sys/windows.rs",
            "crates/fsroot/src/procfs.rs",
            "crates/fsroot/src/winproc.rs",
            "crates/cli/tests/it/common/mod.rs",
            "crates/test-support/src/lib.rs",
        ] {
            assert!(check_file(allowed, src).is_empty(), "{allowed}");
        }
        assert_eq!(
            check_file("crates/fsroot/src/lib.rs", src).len(),
            2,
            "fsroot's portable layer is product code too"
        );
        let gated = "//! a\n#[cfg(all(test, target_os = \"linux\"))]\nmod tests { use libc; }\n";
        assert!(check_file("crates/engine/src/x.rs", gated).is_empty());
    }

    /// The real check, run by plain `cargo test`.
    #[test]
    fn workspace_is_tidy() {
        let found = check_workspace(&crate::workspace_root());
        let report: Vec<String> = found.iter().map(ToString::to_string).collect();
        assert!(report.is_empty(), "tidy:\n{}", report.join("\n"));
    }
}
