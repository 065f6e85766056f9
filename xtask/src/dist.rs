//! `cargo xtask dist [--check]`: writes the files a package of `doctor` ships beside the binary,
//! generated from the command line itself (`doctor::command::cli()`): the man pages
//! `dist/man/doctor.1` and one per command (`doctor-sessions-repair.1`, ...) with `clap_mangen`,
//! and the shell completions `dist/completions/` with `clap_complete`, the generator
//! `doctor completions SHELL` uses. The files are committed; check mode fails listing every one
//! that is missing, stale, or not generated at all, and plain `cargo test` runs the check.

use std::path::{Path, PathBuf};

use clap::ValueEnum;
use clap_complete::{Generator, Shell};

use crate::Failure;

/// The directories `dist` owns: every file in them is generated, so a file no generator writes
/// is stale too.
const OWNED_DIRS: [&str; 2] = ["dist/man", "dist/completions"];

/// One generated file: its path relative to the workspace root, and its bytes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Generated {
    pub path: PathBuf,
    pub bytes: Vec<u8>,
}

/// Every file `dist` writes, man pages first, in a fixed order. Nothing in them depends on the
/// time or the machine: `clap_mangen` puts a date in `.TH` only when given one, and none is.
pub fn generate() -> Vec<Generated> {
    let mut out = Vec::new();
    // As `clap_mangen::generate_to` does: no page for clap's `help` command, and the command
    // built so that each subcommand has its display name (`doctor-sessions-repair`).
    let mut cmd = doctor::command::cli().disable_help_subcommand(true);
    cmd.build();
    let source = format!("doctor {}", cmd.get_version().unwrap_or_default());
    man_pages(cmd, &source, &mut out);
    for shell in Shell::value_variants() {
        let mut cmd = doctor::command::cli();
        let mut bytes = Vec::new();
        clap_complete::generate(*shell, &mut cmd, "doctor", &mut bytes);
        out.push(Generated {
            path: Path::new("dist/completions").join(shell.file_name("doctor")),
            bytes,
        });
    }
    out
}

/// The page of `cmd`, then those of its visible subcommands, depth first. Every page names
/// `source` (`doctor <version>`) in its `.TH` line; a subcommand has no version of its own.
fn man_pages(cmd: clap::Command, source: &str, out: &mut Vec<Generated>) {
    let subcommands: Vec<clap::Command> = cmd
        .get_subcommands()
        .filter(|s| !s.is_hide_set())
        .cloned()
        .collect();
    let man = clap_mangen::Man::new(cmd).source(source);
    let mut bytes = Vec::new();
    man.render(&mut bytes)
        .expect("rendering into memory cannot fail");
    out.push(Generated {
        path: Path::new("dist/man").join(man.get_filename()),
        bytes,
    });
    for sub in subcommands {
        man_pages(sub, source, out);
    }
}

/// The files under the owned directories of `root` that `generated` does not name, sorted.
fn not_generated(root: &Path, generated: &[Generated]) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for dir in OWNED_DIRS {
        let Ok(entries) = std::fs::read_dir(root.join(dir)) else {
            continue;
        };
        for entry in entries.flatten() {
            let rel = Path::new(dir).join(entry.file_name());
            if !generated.iter().any(|g| g.path == rel) {
                out.push(rel);
            }
        }
    }
    out.sort();
    out
}

/// Writes the files under `root` (and removes files of the owned directories no generator
/// writes), or with `check` fails listing each file that is missing, stale or not generated.
pub fn run(root: &Path, check: bool) -> Result<(), Failure> {
    let generated = generate();
    let mut problems = Vec::new();
    for file in &generated {
        let target = root.join(&file.path);
        let problem = match std::fs::read(&target) {
            Ok(current) if current == file.bytes => continue,
            Ok(_) => "stale",
            Err(_) => "missing",
        };
        if check {
            problems.push(format!("{problem}: {}", file.path.display()));
            continue;
        }
        std::fs::create_dir_all(target.parent().expect("a file in a directory"))
            .and_then(|()| std::fs::write(&target, &file.bytes))
            .map_err(|e| Failure::Failed(format!("cannot write {}: {e}", target.display())))?;
        println!("wrote {}", file.path.display());
    }
    for extra in not_generated(root, &generated) {
        if check {
            problems.push(format!("not generated: {}", extra.display()));
            continue;
        }
        std::fs::remove_file(root.join(&extra))
            .map_err(|e| Failure::Failed(format!("cannot remove {}: {e}", extra.display())))?;
        println!("removed {}", extra.display());
    }
    if problems.is_empty() {
        Ok(())
    } else {
        Err(Failure::Failed(format!(
            "the man pages and completions are out of date (run `cargo xtask dist`):\n  {}",
            problems.join("\n  ")
        )))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn man_pages_and_completions_are_fresh() {
        if let Err(Failure::Failed(msg)) = run(&crate::workspace_root(), true) {
            panic!("{msg}");
        }
    }

    #[test]
    fn the_output_is_deterministic_and_has_no_date() {
        let (a, b) = (generate(), generate());
        assert_eq!(a, b);
        let names: Vec<String> = a.iter().map(|g| g.path.display().to_string()).collect();
        for want in [
            "dist/man/doctor.1",
            "dist/man/doctor-sessions-repair.1",
            "dist/man/doctor-build-dirs-sweep.1",
            "dist/completions/doctor.bash",
            "dist/completions/_doctor",
            "dist/completions/doctor.fish",
            "dist/completions/doctor.elv",
            "dist/completions/_doctor.ps1",
        ] {
            assert!(names.iter().any(|n| n == want), "{want} in {names:?}");
        }
        assert!(!names.iter().any(|n| n.contains("help")), "{names:?}");
        let version = doctor::command::cli().get_version().unwrap().to_owned();
        for page in a.iter().filter(|g| g.path.starts_with("dist/man")) {
            let text = String::from_utf8(page.bytes.clone()).unwrap();
            let th = text.lines().find(|l| l.starts_with(".TH ")).unwrap();
            // .TH title section date source manual: the date (and the manual) left empty.
            let stem = page.path.file_stem().unwrap().to_string_lossy();
            assert_eq!(
                th.trim_end(),
                format!(".TH {stem} 1  \"doctor {version}\""),
                "{th}"
            );
        }
    }

    #[test]
    fn the_check_names_every_missing_stale_and_extra_file() {
        let root = std::env::temp_dir().join(format!("xtask-dist-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        let missing = run(&root, true);
        assert!(
            matches!(&missing, Err(Failure::Failed(m)) if m.contains("missing: dist/man/doctor.1")),
            "{missing:?}"
        );
        run(&root, false).unwrap();
        run(&root, true).unwrap();
        std::fs::write(root.join("dist/completions/doctor.bash"), "old").unwrap();
        std::fs::write(root.join("dist/man/doctor-gone.1"), "old").unwrap();
        let Err(Failure::Failed(msg)) = run(&root, true) else {
            panic!("the check passed over a stale and an extra file");
        };
        assert!(msg.contains("stale: dist/completions/doctor.bash"), "{msg}");
        assert!(
            msg.contains("not generated: dist/man/doctor-gone.1"),
            "{msg}"
        );
        run(&root, false).unwrap();
        assert!(!root.join("dist/man/doctor-gone.1").exists());
        run(&root, true).unwrap();
        std::fs::remove_dir_all(&root).unwrap();
    }
}
