//! `cargo xtask prop`: runs the property test over generated stores
//! (`crates/cli/tests/it/properties.rs`) for many cases, split over several processes with
//! their own seeds, and sums the totals each prints.
//!
//! `cargo test` runs the same test with its default case count; this command only sets
//! `PROPTEST_CASES` and `PROPTEST_RNG_SEED` per process. A failing case shrinks, is saved in
//! `crates/cli/tests/proptest-regressions/properties.txt` (replayed first by every later run)
//! and fails the command.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::{Command, Stdio};

use crate::Failure;

/// The one test this command runs.
/// The property tests `--suite` names: generated stores, and edit sequences under the cache.
const SUITES: &[(&str, &str)] = &[
    ("stores", "properties::generated_stores_keep_every_property"),
    (
        "cache",
        "properties::a_cached_plan_is_the_uncached_plan_after_every_edit",
    ),
];

/// The options of `cargo xtask prop`.
#[derive(Debug, PartialEq)]
pub struct Options {
    /// `--cases N`: cases in all.
    pub cases: u64,
    /// `--jobs J`: processes at once (default 2).
    pub jobs: u64,
    /// `--seed S`: the seed of the first process; process `i` uses `S + i`. Random when unset.
    pub seed: Option<u64>,
    /// The test of [`SUITES`] to run.
    pub test: &'static str,
}

impl Options {
    /// Reads the arguments after `prop`.
    pub fn parse(args: &[String]) -> Result<Options, Failure> {
        let mut out = Options {
            cases: 0,
            jobs: 2,
            seed: None,
            test: SUITES[0].1,
        };
        let mut it = args.iter();
        let number = |flag: &str, v: Option<&String>| {
            v.and_then(|n| n.parse::<u64>().ok())
                .ok_or_else(|| Failure::Usage(format!("{flag} takes a number")))
        };
        while let Some(a) = it.next() {
            match a.as_str() {
                "--cases" => out.cases = number("--cases", it.next())?,
                "--jobs" => out.jobs = number("--jobs", it.next())?,
                "--seed" => out.seed = Some(number("--seed", it.next())?),
                "--suite" => {
                    let name = it.next().map(String::as_str).unwrap_or_default();
                    out.test = SUITES
                        .iter()
                        .find(|(n, _)| *n == name)
                        .map(|(_, t)| *t)
                        .ok_or_else(|| {
                            Failure::Usage(format!("--suite takes stores or cache, not {name:?}"))
                        })?;
                }
                other => return Err(Failure::Usage(format!("unknown prop argument: {other}"))),
            }
        }
        if out.cases == 0 || out.jobs == 0 {
            return Err(Failure::Usage(
                "prop needs --cases N (and --jobs J) above 0".into(),
            ));
        }
        // Never a process with no case to run.
        out.jobs = out.jobs.min(out.cases);
        Ok(out)
    }
}

/// Builds the test binary, runs the processes, prints their totals and the sum.
pub fn run(root: &Path, args: &[String]) -> Result<(), Failure> {
    let o = Options::parse(args)?;
    let bin = test_binary(root)?;
    let seed = o.seed.unwrap_or_else(|| {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_secs())
            .unwrap_or(1)
    });
    let started = std::time::Instant::now();
    let mut children = Vec::new();
    for i in 0..o.jobs {
        let cases = o.cases / o.jobs + u64::from(i < o.cases % o.jobs);
        let child = Command::new(&bin)
            .args([o.test, "--exact", "--nocapture", "--test-threads", "1"])
            .current_dir(root.join("crates/cli"))
            .env("PROPTEST_CASES", cases.to_string())
            .env("PROPTEST_RNG_SEED", seed.wrapping_add(i).to_string())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|e| Failure::Failed(format!("start {}: {e}", bin.display())))?;
        println!("process {i}: {cases} cases, seed {}", seed.wrapping_add(i));
        children.push((i, child));
    }
    let mut sum: BTreeMap<String, u64> = BTreeMap::new();
    let mut failed = Vec::new();
    for (i, child) in children {
        let out = child
            .wait_with_output()
            .map_err(|e| Failure::Failed(format!("wait for process {i}: {e}")))?;
        let stdout = String::from_utf8_lossy(&out.stdout);
        // libtest may print the test's name on the same line, before what the test prints.
        let totals = stdout
            .lines()
            .find_map(|l| l.split_once("property totals: ").map(|(_, t)| t));
        match totals {
            Some(line) if out.status.success() => {
                println!("process {i}: {line}");
                add_totals(&mut sum, line);
            }
            _ => {
                failed.push(i);
                eprintln!(
                    "process {i} failed ({}):\n{stdout}\n{}",
                    out.status,
                    String::from_utf8_lossy(&out.stderr)
                );
            }
        }
    }
    let total: Vec<String> = sum.iter().map(|(k, v)| format!("{k}={v}")).collect();
    println!(
        "total: {} in {:.0} s",
        total.join(" "),
        started.elapsed().as_secs_f64()
    );
    if failed.is_empty() {
        Ok(())
    } else {
        Err(Failure::Failed(format!(
            "processes {failed:?} found a failing case; its seed is saved in \
             crates/cli/tests/proptest-regressions/properties.txt"
        )))
    }
}

/// Adds each `key=number` of a totals line (`stores=3 actions=9 [R1=2 ...] ...`) to `sum`.
fn add_totals(sum: &mut BTreeMap<String, u64>, line: &str) {
    for word in line.split_whitespace() {
        let word = word.trim_matches(|c| c == '[' || c == ']');
        if let Some((k, v)) = word.split_once('=') {
            if let Ok(n) = v.parse::<u64>() {
                *sum.entry(k.to_owned()).or_default() += n;
            }
        }
    }
}

/// Builds the `it` test binary of the doctor package and the `hold-lock` process it starts
/// (package test-support), and returns the test binary's path (cargo's JSON messages name it).
fn test_binary(root: &Path) -> Result<std::path::PathBuf, Failure> {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let built = Command::new(&cargo)
        .args(["build", "-p", "test-support", "--bins"])
        .current_dir(root)
        .status()
        .map_err(|e| Failure::Failed(format!("run cargo: {e}")))?;
    if !built.success() {
        return Err(Failure::Failed("building hold-lock failed".into()));
    }
    let out = Command::new(&cargo)
        .args([
            "test",
            "-p",
            "doctor",
            "--test",
            "it",
            "--no-run",
            "--message-format=json",
        ])
        .current_dir(root)
        .stderr(Stdio::inherit())
        .output()
        .map_err(|e| Failure::Failed(format!("run cargo: {e}")))?;
    if !out.status.success() {
        return Err(Failure::Failed("building the test binary failed".into()));
    }
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .filter(|v| v["reason"] == "compiler-artifact" && v["target"]["name"] == "it")
        .find_map(|v| v["executable"].as_str().map(std::path::PathBuf::from))
        .ok_or_else(|| Failure::Failed("cargo named no `it` test binary".into()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(a: &[&str]) -> Vec<String> {
        a.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn reads_cases_jobs_and_seed_and_refuses_the_rest() {
        let o = Options::parse(&args(&["--cases", "1000", "--jobs", "3", "--seed", "7"])).unwrap();
        assert_eq!(
            o,
            Options {
                cases: 1000,
                jobs: 3,
                seed: Some(7),
                test: SUITES[0].1,
            }
        );
        assert_eq!(Options::parse(&args(&["--cases", "5"])).unwrap().jobs, 2);
        assert_eq!(
            Options::parse(&args(&["--cases", "5", "--suite", "cache"]))
                .unwrap()
                .test,
            SUITES[1].1
        );
        assert_eq!(
            Options::parse(&args(&["--cases", "3", "--jobs", "8"]))
                .unwrap()
                .jobs,
            3
        );
        for bad in [
            &[][..],
            &["--cases"],
            &["--cases", "x"],
            &["--cases", "0"],
            &["--cases", "5", "--jobs", "0"],
            &["--cases", "5", "--fast"],
            &["--cases", "5", "--suite", "other"],
        ] {
            assert!(
                matches!(Options::parse(&args(bad)), Err(Failure::Usage(_))),
                "{bad:?}"
            );
        }
    }

    #[test]
    fn totals_lines_add_up_by_key() {
        let mut sum = BTreeMap::new();
        add_totals(&mut sum, "stores=3 actions=9 [R1=2 R5=1] killed=2");
        add_totals(&mut sum, "stores=4 actions=1 [R1=1] killed=0");
        assert_eq!(sum["stores"], 7);
        assert_eq!(sum["actions"], 10);
        assert_eq!(sum["R1"], 3);
        assert_eq!(sum["R5"], 1);
        assert_eq!(sum["killed"], 2);
    }
}
