//! `cargo xtask snapshots [--accept] [--no-test]`: runs the tests so that insta writes every
//! mismatching snapshot as a pending `*.snap.new`, shows each one as a line diff against its
//! accepted `.snap`, and with `--accept` renames the pending files over the accepted ones.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::{workspace_root, Failure};

/// Flags of the task.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Options {
    /// Rename each `.snap.new` over its `.snap`.
    pub accept: bool,
    /// Do not run the tests; review what is already pending.
    pub no_test: bool,
}

impl Options {
    /// Parses the arguments after `snapshots`.
    pub fn parse(args: &[String]) -> Result<Options, Failure> {
        let mut o = Options::default();
        for a in args {
            match a.as_str() {
                "--accept" => o.accept = true,
                "--no-test" => o.no_test = true,
                other => return Err(Failure::Usage(format!("snapshots: unknown flag {other}"))),
            }
        }
        Ok(o)
    }
}

/// Runs the task from the workspace root.
pub fn run(opts: &Options) -> Result<(), Failure> {
    let root = workspace_root();
    let tests_passed = if opts.no_test {
        true
    } else {
        run_tests(&root)?
    };

    let pending = find_pending(&root);
    if pending.is_empty() {
        println!("no pending snapshots");
    }
    for new in &pending {
        let accepted = accepted_path(new);
        let rel = new.strip_prefix(&root).unwrap_or(new);
        let new_text = read(new)?;
        match std::fs::read_to_string(&accepted) {
            Ok(old_text) => {
                println!("=== {} (changed)", rel.display());
                print!("{}", unified_diff(&old_text, &new_text, 3));
            }
            Err(_) => {
                println!("=== {} (new)", rel.display());
                for line in new_text.lines() {
                    println!("+{line}");
                }
            }
        }
    }
    let inline = find_files(&root, ".pending-snap");
    for p in &inline {
        println!(
            "pending inline snapshot: {} (review with `cargo insta review`)",
            p.strip_prefix(&root).unwrap_or(p).display()
        );
    }

    if opts.accept {
        for new in &pending {
            let accepted = accepted_path(new);
            std::fs::rename(new, &accepted)
                .map_err(|e| Failure::Failed(format!("cannot rename {}: {e}", new.display())))?;
        }
        if !pending.is_empty() {
            println!("accepted {} snapshot(s)", pending.len());
        }
    } else if !pending.is_empty() {
        println!(
            "{} pending snapshot(s); run `cargo xtask snapshots --accept` to accept them",
            pending.len()
        );
    }

    if tests_passed {
        Ok(())
    } else {
        Err(Failure::Failed(
            "`cargo test --workspace` failed for reasons other than snapshots (see above)".into(),
        ))
    }
}

/// Runs `cargo test --workspace` so that every snapshot mismatch becomes a `.snap.new` and
/// does not stop the run. Returns whether the tests passed otherwise.
fn run_tests(root: &Path) -> Result<bool, Failure> {
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    println!("running cargo test --workspace --no-fail-fast (INSTA_UPDATE=new)");
    let status = Command::new(cargo)
        .current_dir(root)
        .args(["test", "--workspace", "--no-fail-fast"])
        .env("INSTA_UPDATE", "new")
        // Keep going past a mismatching assertion so that every one of them is written out.
        .env("INSTA_FORCE_PASS", "1")
        .status()
        .map_err(|e| Failure::Failed(format!("cannot run cargo: {e}")))?;
    Ok(status.success())
}

fn read(path: &Path) -> Result<String, Failure> {
    std::fs::read_to_string(path)
        .map_err(|e| Failure::Failed(format!("cannot read {}: {e}", path.display())))
}

/// `x.snap.new` → `x.snap`.
pub fn accepted_path(new: &Path) -> PathBuf {
    new.with_extension("")
}

/// Every `*.snap.new` under `root`, sorted, skipping `target/` and hidden directories.
pub fn find_pending(root: &Path) -> Vec<PathBuf> {
    find_files(root, ".snap.new")
}

fn find_files(root: &Path, suffix: &str) -> Vec<PathBuf> {
    let mut out = Vec::new();
    walk(root, root, suffix, &mut out);
    out.sort();
    out
}

fn walk(root: &Path, dir: &Path, suffix: &str, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        let name = entry.file_name();
        let name = name.to_string_lossy();
        let Ok(ft) = entry.file_type() else { continue };
        if ft.is_dir() {
            if name.starts_with('.') || (dir == root && name == "target") {
                continue;
            }
            walk(root, &path, suffix, out);
        } else if ft.is_file() && name.ends_with(suffix) {
            out.push(path);
        }
    }
}

/// A line diff of `old` → `new` in unified form (`-`, `+`, ` ` prefixes), with `context`
/// unchanged lines around each change and `@@` hunk headers. Empty when they are equal.
pub fn unified_diff(old: &str, new: &str, context: usize) -> String {
    let a: Vec<&str> = old.lines().collect();
    let b: Vec<&str> = new.lines().collect();
    let ops = diff_ops(&a, &b);
    let mut out = String::new();
    let changed: Vec<usize> = ops
        .iter()
        .enumerate()
        .filter(|(_, op)| !matches!(op, Op::Same(..)))
        .map(|(i, _)| i)
        .collect();
    let mut i = 0;
    while i < changed.len() {
        // Group changes whose contexts touch into one hunk.
        let start = changed[i].saturating_sub(context);
        let mut end = changed[i];
        while i < changed.len() && changed[i] <= end + 2 * context + 1 {
            end = changed[i];
            i += 1;
        }
        let end = (end + context + 1).min(ops.len());
        let (old_start, new_start) = positions(&ops[..start]);
        let (old_len, new_len) = positions(&ops[start..end]);
        out.push_str(&format!(
            "@@ -{},{old_len} +{},{new_len} @@\n",
            old_start + 1,
            new_start + 1
        ));
        for op in &ops[start..end] {
            match op {
                Op::Same(l) => out.push_str(&format!(" {l}\n")),
                Op::Del(l) => out.push_str(&format!("-{l}\n")),
                Op::Add(l) => out.push_str(&format!("+{l}\n")),
            }
        }
    }
    out
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Op<'a> {
    Same(&'a str),
    Del(&'a str),
    Add(&'a str),
}

/// How many old and new lines a run of ops covers.
fn positions(ops: &[Op<'_>]) -> (usize, usize) {
    ops.iter().fold((0, 0), |(o, n), op| match op {
        Op::Same(_) => (o + 1, n + 1),
        Op::Del(_) => (o + 1, n),
        Op::Add(_) => (o, n + 1),
    })
}

/// Longest-common-subsequence diff; snapshots are small enough for the quadratic table.
fn diff_ops<'a>(a: &[&'a str], b: &[&'a str]) -> Vec<Op<'a>> {
    let (n, m) = (a.len(), b.len());
    let mut lcs = vec![vec![0u32; m + 1]; n + 1];
    for i in (0..n).rev() {
        for j in (0..m).rev() {
            lcs[i][j] = if a[i] == b[j] {
                lcs[i + 1][j + 1] + 1
            } else {
                lcs[i + 1][j].max(lcs[i][j + 1])
            };
        }
    }
    let (mut i, mut j) = (0, 0);
    let mut ops = Vec::with_capacity(n + m);
    while i < n || j < m {
        if i < n && j < m && a[i] == b[j] {
            ops.push(Op::Same(a[i]));
            i += 1;
            j += 1;
        } else if i < n && (j == m || lcs[i + 1][j] >= lcs[i][j + 1]) {
            ops.push(Op::Del(a[i]));
            i += 1;
        } else {
            ops.push(Op::Add(b[j]));
            j += 1;
        }
    }
    ops
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn equal_texts_have_an_empty_diff() {
        assert_eq!(unified_diff("a\nb\n", "a\nb\n", 3), "");
    }

    #[test]
    fn a_changed_line_shows_as_removed_and_added_with_context() {
        let old = "1\n2\n3\n4\n5\n6\n7\n8\n9\n";
        let new = "1\n2\n3\n4\nfive\n6\n7\n8\n9\n";
        assert_eq!(
            unified_diff(old, new, 2),
            "@@ -3,5 +3,5 @@\n 3\n 4\n-5\n+five\n 6\n 7\n"
        );
    }

    #[test]
    fn distant_changes_make_separate_hunks() {
        let old: String = (1..=20).map(|i| format!("{i}\n")).collect();
        let new: String = (1..=20)
            .map(|i| match i {
                2 => "two\n".to_owned(),
                19 => "nineteen\n".to_owned(),
                i => format!("{i}\n"),
            })
            .collect();
        let diff = unified_diff(&old, &new, 1);
        assert_eq!(diff.matches("@@ -").count(), 2, "{diff}");
        assert!(diff.contains("-19\n+nineteen\n"), "{diff}");
    }

    #[test]
    fn additions_at_the_end() {
        assert_eq!(
            unified_diff("a\n", "a\nb\n", 3),
            "@@ -1,1 +1,2 @@\n a\n+b\n"
        );
    }

    #[test]
    fn pending_files_map_to_their_accepted_snapshot() {
        assert_eq!(
            accepted_path(Path::new("x/snapshots/r1__torn.snap.new")),
            Path::new("x/snapshots/r1__torn.snap")
        );
    }

    /// Snapshots live in per-pack directories (`crates/cli/tests/it/snapshots/sessions/`,
    /// `.../build-dirs/`, `.../demo/`): pending ones are found at any depth, and not under
    /// `target/` or hidden directories.
    #[test]
    fn pending_snapshots_are_found_in_nested_directories() {
        let root = std::env::temp_dir().join(format!("xtask-snapshots-{}", std::process::id()));
        let snaps = root.join("crates/cli/tests/it/snapshots");
        for (dir, name) in [
            ("sessions", "r1_bom.snap.new"),
            ("build-dirs", "b1_spares_fresh.snap.new"),
            ("demo", "dry_run.snap.new"),
            ("sessions", "r1_torn.snap"),
        ] {
            std::fs::create_dir_all(snaps.join(dir)).unwrap();
            std::fs::write(snaps.join(dir).join(name), "x\n").unwrap();
        }
        for skipped in ["target/debug", ".git"] {
            std::fs::create_dir_all(root.join(skipped)).unwrap();
            std::fs::write(root.join(skipped).join("x.snap.new"), "x\n").unwrap();
        }
        let found: Vec<PathBuf> = find_pending(&root)
            .iter()
            .map(|p| p.strip_prefix(&snaps).unwrap().to_path_buf())
            .collect();
        std::fs::remove_dir_all(&root).unwrap();
        assert_eq!(
            found,
            [
                "build-dirs/b1_spares_fresh.snap.new",
                "demo/dry_run.snap.new",
                "sessions/r1_bom.snap.new",
            ]
            .map(PathBuf::from)
        );
    }

    #[test]
    fn flags_parse() {
        let args = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert_eq!(
            Options::parse(&args(&["--accept"])).unwrap(),
            Options {
                accept: true,
                no_test: false
            }
        );
        assert!(Options::parse(&args(&["--bogus"])).is_err());
    }
}
