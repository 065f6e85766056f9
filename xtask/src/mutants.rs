//! `cargo xtask mutants`: mutation testing with cargo-mutants over the crates whose logic
//! decides what moves (plan, refset, build-dirs, sessions, engine), with the settings of
//! docs/reliability.md, then a count of the outcomes per file. `--summary DIR` only counts an
//! earlier run's `mutants.out/outcomes.json`.
//!
//! Every mutant is tested with cargo-nextest (which stops at the first failing test) by the
//! unit tests of the crates above and the doctor's integration tests (`--test it`) but for the
//! three slowest modules (unless `--all-tests`), whose subjects (the executor's crash safety, a
//! live host, handle leaks) lie outside planning: `kill_points`, `host_beside_doctor`,
//! `fd_leak`. `--iterate` re-tests only what the last run did not catch. cargo-mutants'
//! own baseline is skipped (`--baseline=skip`): cargo-mutants 27 runs it with the mutated
//! packages only, where `--test it` does not exist. The baseline is the same test command on
//! the unmutated tree, which must pass first (docs/reliability.md).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::Failure;

/// The crates mutated when none is named.
const PACKAGES: &[&str] = &["plan", "refset", "build-dirs", "sessions", "engine"];

/// The packages whose tests every mutant runs. test-support is among them for its programs
/// (`hold-lock`, `host-sim`), which the doctor's tests start: cargo builds a package's programs
/// only for that package's own tests, and a test that cannot start them fails, which would
/// count every mutant as caught.
const TEST_PACKAGES: &str = "plan,refset,build-dirs,sessions,engine,doctor,test-support";

/// The nextest filter: the modules of the `it` binary left out (see the module comment).
const FILTER: &str =
    "not (test(/^kill_points::/) | test(/^host_beside_doctor::/) | test(/^fd_leak::/))";

/// The options of `cargo xtask mutants`.
#[derive(Debug, PartialEq)]
pub struct Options {
    /// `-p NAME`, repeatable: the crates to mutate ([`PACKAGES`] when none).
    pub packages: Vec<String>,
    /// `-f FILE`, repeatable: only these source files.
    pub files: Vec<String>,
    /// `--in-place`: mutate this tree and build in its target directory (no copy, no cold
    /// build; the tree must not be edited meanwhile).
    pub in_place: bool,
    /// `--summary DIR`: count the outcomes under `DIR/mutants.out` instead of running.
    pub summary: Option<PathBuf>,
    /// `--iterate`: test again only the mutants the last run in the same output directory did
    /// not catch (cargo-mutants' `--iterate`).
    pub iterate: bool,
    /// `--all-tests`: test with every module of the integration tests, the three slow ones
    /// included (the second pass over what the first missed).
    pub all_tests: bool,
}

impl Options {
    /// Reads the arguments after `mutants`.
    pub fn parse(args: &[String]) -> Result<Options, Failure> {
        let mut out = Options {
            packages: Vec::new(),
            files: Vec::new(),
            in_place: false,
            summary: None,
            iterate: false,
            all_tests: false,
        };
        let mut it = args.iter();
        while let Some(a) = it.next() {
            let mut value = |flag: &str| {
                it.next()
                    .cloned()
                    .ok_or_else(|| Failure::Usage(format!("{flag} takes a value")))
            };
            match a.as_str() {
                "-p" | "--package" => {
                    let p = value("-p")?;
                    if !PACKAGES.contains(&p.as_str()) {
                        return Err(Failure::Usage(format!(
                            "mutants runs over {} only, not {p}",
                            PACKAGES.join(", ")
                        )));
                    }
                    out.packages.push(p);
                }
                "-f" | "--file" => out.files.push(value("-f")?),
                "--in-place" => out.in_place = true,
                "--iterate" => out.iterate = true,
                "--all-tests" => out.all_tests = true,
                "--summary" => out.summary = Some(PathBuf::from(value("--summary")?)),
                other => return Err(Failure::Usage(format!("unknown mutants argument: {other}"))),
            }
        }
        if out.packages.is_empty() {
            out.packages = PACKAGES.iter().map(|p| p.to_string()).collect();
        }
        Ok(out)
    }

    /// The `cargo mutants` arguments of a run writing into `output`.
    fn cargo_args(&self, output: &Path) -> Vec<String> {
        let mut a: Vec<String> = vec!["mutants".into()];
        for p in &self.packages {
            a.extend(["-p".into(), p.clone()]);
        }
        for f in &self.files {
            a.extend(["-f".into(), f.clone()]);
        }
        if self.in_place {
            a.push("--in-place".into());
        }
        if self.iterate {
            a.push("--iterate".into());
        }
        a.extend(
            [
                "--test-tool",
                "nextest",
                "--test-package",
                TEST_PACKAGES,
                "--baseline=skip",
                "--no-shuffle",
                "--timeout",
                "240",
                "--build-timeout",
                "900",
                "-o",
            ]
            .map(String::from),
        );
        a.push(output.display().to_string());
        a.extend(["--", "--lib", "--test", "it"].map(String::from));
        if !self.all_tests {
            a.extend(["-E", FILTER].map(String::from));
        }
        a
    }
}

/// Runs cargo-mutants (or reads an earlier run with `--summary`) and prints the counts.
pub fn run(root: &Path, args: &[String]) -> Result<(), Failure> {
    let o = Options::parse(args)?;
    let dir = match &o.summary {
        Some(dir) => dir.clone(),
        None => {
            let dir = root.join("target/mutants");
            let status = Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()))
                .args(o.cargo_args(&dir))
                .current_dir(root)
                // Smaller, faster builds; a fixed property-test sample so outcomes repeat.
                .env("CARGO_PROFILE_DEV_DEBUG", "0")
                .env("PROPTEST_CASES", "16")
                .env("PROPTEST_RNG_SEED", "13")
                .status()
                .map_err(|e| {
                    Failure::Failed(format!(
                        "run cargo mutants ({e}); install it with `cargo install cargo-mutants`"
                    ))
                })?;
            // cargo-mutants exits 2 when it missed a mutant, 3 on a timeout: counted below.
            if !matches!(status.code(), Some(0 | 2 | 3)) {
                return Err(Failure::Failed(format!("cargo mutants failed: {status}")));
            }
            dir
        }
    };
    let path = dir.join("mutants.out/outcomes.json");
    let text = std::fs::read_to_string(&path)
        .map_err(|e| Failure::Failed(format!("read {}: {e}", path.display())))?;
    let outcomes: serde_json::Value = serde_json::from_str(&text)
        .map_err(|e| Failure::Failed(format!("{}: {e}", path.display())))?;
    print!("{}", summary(&outcomes));
    Ok(())
}

/// The counts of an `outcomes.json`: per source file and in all, with the share of viable
/// mutants caught, then every missed mutant by name.
fn summary(outcomes: &serde_json::Value) -> String {
    let mut per_file: BTreeMap<String, BTreeMap<String, u64>> = BTreeMap::new();
    let mut missed = Vec::new();
    for o in outcomes["outcomes"].as_array().into_iter().flatten() {
        let Some(name) = o["scenario"]["Mutant"]["name"].as_str() else {
            continue; // the baseline
        };
        let file = name.split(':').next().unwrap_or(name).to_owned();
        let kind = match o["summary"].as_str().unwrap_or("") {
            "CaughtMutant" => "caught",
            "MissedMutant" => {
                missed.push(name.to_owned());
                "missed"
            }
            "Timeout" => "timeout",
            "Unviable" => "unviable",
            other => other,
        };
        *per_file
            .entry(file)
            .or_default()
            .entry(kind.to_owned())
            .or_default() += 1;
    }
    let mut all: BTreeMap<String, u64> = BTreeMap::new();
    let mut out = String::new();
    let line = |name: &str, c: &BTreeMap<String, u64>| {
        let get = |k: &str| c.get(k).copied().unwrap_or(0);
        let viable = get("caught") + get("missed") + get("timeout");
        let share = if viable == 0 {
            "-".to_owned()
        } else {
            format!(
                "{:.1}%",
                100.0 * (get("caught") + get("timeout")) as f64 / viable as f64
            )
        };
        format!(
            "{name}: {} caught, {} missed, {} timeout, {} unviable; caught {share} of viable\n",
            get("caught"),
            get("missed"),
            get("timeout"),
            get("unviable")
        )
    };
    for (file, c) in &per_file {
        out.push_str(&line(file, c));
        for (k, v) in c {
            *all.entry(k.clone()).or_default() += v;
        }
    }
    out.push_str(&line("total", &all));
    for m in missed {
        out.push_str(&format!("missed: {m}\n"));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(a: &[&str]) -> Vec<String> {
        a.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn reads_packages_files_and_modes_and_refuses_other_crates() {
        let o = Options::parse(&args(&[])).unwrap();
        assert_eq!(o.packages, PACKAGES);
        let o = Options::parse(&args(&["-p", "sessions", "-f", "x.rs", "--in-place"])).unwrap();
        assert_eq!(o.packages, ["sessions"]);
        assert_eq!(o.files, ["x.rs"]);
        assert!(o.in_place);
        let a = o.cargo_args(Path::new("/o"));
        let joined = a.join(" ");
        assert!(
            joined.starts_with("mutants -p sessions -f x.rs --in-place --test-tool nextest"),
            "{joined}"
        );
        assert!(joined.contains("test-support"), "{joined}");
        assert_eq!(
            a[a.len() - 6..a.len() - 1],
            ["--", "--lib", "--test", "it", "-E"]
        );
        assert!(a[a.len() - 1].contains("kill_points"), "{joined}");
        assert!(!o.iterate && !joined.contains("--iterate"), "{joined}");

        let o = Options::parse(&args(&["--iterate", "--all-tests"])).unwrap();
        let a = o.cargo_args(Path::new("/o"));
        assert!(a.contains(&"--iterate".to_owned()), "{a:?}");
        assert_eq!(
            a[a.len() - 4..],
            ["--", "--lib", "--test", "it"],
            "no filter"
        );
        for bad in [&["-p", "doctor"][..], &["-p"], &["--fast"]] {
            assert!(
                matches!(Options::parse(&args(bad)), Err(Failure::Usage(_))),
                "{bad:?}"
            );
        }
    }

    #[test]
    fn the_summary_counts_per_file_and_names_what_was_missed() {
        let v = serde_json::json!({ "outcomes": [
            { "scenario": "Baseline", "summary": "Success" },
            { "scenario": { "Mutant": { "name": "a.rs:1:1: replace f with ()" } }, "summary": "CaughtMutant" },
            { "scenario": { "Mutant": { "name": "a.rs:2:1: replace g with ()" } }, "summary": "MissedMutant" },
            { "scenario": { "Mutant": { "name": "b.rs:3:1: replace h with 0" } }, "summary": "Unviable" },
            { "scenario": { "Mutant": { "name": "b.rs:4:1: replace k with 1" } }, "summary": "Timeout" }
        ]});
        let s = summary(&v);
        assert!(
            s.contains("a.rs: 1 caught, 1 missed, 0 timeout, 0 unviable; caught 50.0% of viable"),
            "{s}"
        );
        assert!(
            s.contains("b.rs: 0 caught, 0 missed, 1 timeout, 1 unviable; caught 100.0% of viable"),
            "{s}"
        );
        assert!(
            s.contains("total: 1 caught, 1 missed, 1 timeout, 1 unviable; caught 66.7% of viable"),
            "{s}"
        );
        assert!(s.contains("missed: a.rs:2:1: replace g with ()"), "{s}");
    }
}
