//! `cargo xtask fuzz`: runs the fuzz targets of `fuzz/` (cargo fuzz, libFuzzer, the nightly
//! toolchain) one after the other for N seconds each and prints the executions of each and
//! their total; a crash fails it, naming the artifact. `--seed` instead writes the seed corpora
//! of `fuzz/corpus/` from fixtures/ (`fuzz_seed.rs`).
//!
//! Each run reads the checked-in corpus and past crashes (`fuzz/corpus/<target>/`,
//! `fuzz/regressions/<target>/`) and writes what it finds into a scratch corpus under the target
//! directory, so the checked-in corpus only changes by `--seed` or by hand.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::Failure;

/// A tmpfs most Linux systems mount, used as the targets' temporary directory when present.
const SHM: &str = "/dev/shm";

/// The options of `cargo xtask fuzz`.
#[derive(Debug, PartialEq)]
pub struct Options {
    /// `--seconds N`: each target's fuzzing time.
    pub seconds: u64,
    /// `--target NAME`, repeatable: the targets to run (all when none is named).
    pub targets: Vec<String>,
    /// `--seed`: write the seed corpora instead of fuzzing.
    pub seed: bool,
}

impl Options {
    /// Reads the arguments after `fuzz`.
    pub fn parse(args: &[String]) -> Result<Options, Failure> {
        let mut out = Options {
            seconds: 0,
            targets: Vec::new(),
            seed: false,
        };
        let mut it = args.iter();
        while let Some(a) = it.next() {
            match a.as_str() {
                "--seconds" => {
                    out.seconds = it
                        .next()
                        .and_then(|n| n.parse().ok())
                        .filter(|n| *n > 0)
                        .ok_or_else(|| Failure::Usage("--seconds takes a positive number".into()))?
                }
                "--target" => {
                    let name = it
                        .next()
                        .ok_or_else(|| Failure::Usage("--target takes a target name".into()))?;
                    if !fuzzing::TARGETS.iter().any(|(n, _)| n == name) {
                        return Err(Failure::Usage(format!(
                            "no fuzz target {name}; the targets: {}",
                            names().join(", ")
                        )));
                    }
                    out.targets.push(name.clone());
                }
                "--seed" => out.seed = true,
                other => return Err(Failure::Usage(format!("unknown fuzz argument: {other}"))),
            }
        }
        if out.seed != (out.seconds == 0) || (out.seed && !out.targets.is_empty()) {
            return Err(Failure::Usage(
                "fuzz takes --seconds N [--target NAME]..., or --seed alone".into(),
            ));
        }
        if out.targets.is_empty() {
            out.targets = names();
        }
        Ok(out)
    }
}

fn names() -> Vec<String> {
    fuzzing::TARGETS
        .iter()
        .map(|(n, _)| (*n).to_owned())
        .collect()
}

/// What one target's run gave.
#[derive(Debug, Default, PartialEq)]
pub struct Outcome {
    /// `stat::number_of_executed_units`.
    pub executions: u64,
    /// `stat::average_exec_per_sec`.
    pub per_second: u64,
    /// The crash, timeout or leak artifact libFuzzer wrote, if any.
    pub artifact: Option<String>,
}

/// Reads libFuzzer's final statistics (`-print_final_stats=1`) and the artifact it names.
pub fn read_output(stderr: &str) -> Outcome {
    let stat = |key: &str| {
        stderr
            .lines()
            .find_map(|l| l.strip_prefix(key))
            .and_then(|v| v.trim_start_matches(':').trim().parse().ok())
            .unwrap_or(0)
    };
    Outcome {
        executions: stat("stat::number_of_executed_units"),
        per_second: stat("stat::average_exec_per_sec"),
        artifact: stderr
            .lines()
            .find_map(|l| l.split_once("Test unit written to "))
            .map(|(_, path)| path.trim().to_owned()),
    }
}

/// Runs the task.
pub fn run(root: &Path, args: &[String]) -> Result<(), Failure> {
    let opts = Options::parse(args)?;
    if opts.seed {
        return crate::fuzz_seed::run(root);
    }
    let fuzz_dir = root.join("fuzz");
    let target_dir = target_dir(root).join("fuzz");
    let nightly = |args: &[&str]| {
        let mut c = Command::new("cargo");
        c.arg("+nightly")
            .args(args)
            .arg("--fuzz-dir")
            .arg(&fuzz_dir)
            .arg("--target-dir")
            .arg(&target_dir)
            .current_dir(root);
        // The stable toolchain that runs xtask must not leak into the nightly build.
        for var in [
            "RUSTUP_TOOLCHAIN",
            "RUSTC",
            "RUSTDOC",
            "CARGO",
            "RUSTC_WRAPPER",
        ] {
            c.env_remove(var);
        }
        c
    };
    eprintln!("fuzz: building the targets (cargo +nightly fuzz build)");
    let built = nightly(&["fuzz", "build"])
        .status()
        .map_err(|e| Failure::Failed(format!("cannot run cargo +nightly fuzz: {e}")))?;
    if !built.success() {
        return Err(Failure::Failed(
            "cargo +nightly fuzz build failed (needs the nightly toolchain and cargo-fuzz: \
             `rustup toolchain install nightly`, `cargo install cargo-fuzz`)"
                .into(),
        ));
    }
    let mut rows = Vec::new();
    let mut crashes = Vec::new();
    for name in &opts.targets {
        let scratch = target_dir.join("scratch").join(name);
        let _ = std::fs::remove_dir_all(&scratch);
        std::fs::create_dir_all(&scratch)
            .map_err(|e| Failure::Failed(format!("{}: {e}", scratch.display())))?;
        let mut corpora: Vec<PathBuf> = vec![scratch, fuzz_dir.join("corpus").join(name)];
        let regressions = fuzz_dir.join("regressions").join(name);
        if regressions.is_dir() {
            corpora.push(regressions);
        }
        eprintln!("fuzz: {name} for {}s", opts.seconds);
        let mut cmd = nightly(&["fuzz", "run"]);
        cmd.arg(name).args(&corpora).args([
            "--".to_owned(),
            format!("-max_total_time={}", opts.seconds),
            "-print_final_stats=1".to_owned(),
            "-timeout=20".to_owned(),
        ]);
        // The filesystem targets make a small store per input in the temporary directory: on
        // a tmpfs that is tens of times faster than on a disk.
        if Path::new(SHM).is_dir() {
            cmd.env("TMPDIR", SHM);
        }
        let out = cmd
            .output()
            .map_err(|e| Failure::Failed(format!("cannot run cargo +nightly fuzz run: {e}")))?;
        let stderr = String::from_utf8_lossy(&out.stderr);
        let log = target_dir.join(format!("{name}.log"));
        let _ = std::fs::write(&log, stderr.as_bytes());
        let outcome = read_output(&stderr);
        if !out.status.success() {
            crashes.push(match &outcome.artifact {
                Some(a) => format!("{name}: crash, artifact {a} (log {})", log.display()),
                None => format!("{name}: failed without an artifact (log {})", log.display()),
            });
        }
        rows.push((name.clone(), outcome));
    }
    print!("{}", table(&rows, opts.seconds));
    if crashes.is_empty() {
        Ok(())
    } else {
        Err(Failure::Failed(crashes.join("\n")))
    }
}

/// The table of executions per target and their total.
pub fn table(rows: &[(String, Outcome)], seconds: u64) -> String {
    let mut out = format!(
        "{:<16} {:>8} {:>14} {:>10}  result\n",
        "target", "seconds", "executions", "exec/s"
    );
    let mut total = 0u64;
    for (name, o) in rows {
        total += o.executions;
        out.push_str(&format!(
            "{name:<16} {seconds:>8} {:>14} {:>10}  {}\n",
            o.executions,
            o.per_second,
            if o.artifact.is_some() { "CRASH" } else { "ok" }
        ));
    }
    out.push_str(&format!(
        "{:<16} {:>8} {total:>14}\n",
        "total",
        seconds * rows.len() as u64
    ));
    out
}

/// The target directory of the workspace: `CARGO_TARGET_DIR` when set, else `target/`.
fn target_dir(root: &Path) -> PathBuf {
    std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| root.join("target"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(s: &str) -> Vec<String> {
        s.split_whitespace().map(str::to_owned).collect()
    }

    #[test]
    fn reads_the_options() {
        let o = Options::parse(&args("--seconds 60 --target document --target duration")).unwrap();
        assert_eq!(o.seconds, 60);
        assert_eq!(o.targets, ["document", "duration"]);
        let all = Options::parse(&args("--seconds 5")).unwrap();
        assert_eq!(all.targets.len(), fuzzing::TARGETS.len());
        assert!(Options::parse(&args("--seed")).unwrap().seed);
        for bad in [
            "",
            "--seconds 0",
            "--seconds x",
            "--target nope --seconds 5",
            "--seed --seconds 5",
            "--seed --target document",
        ] {
            assert!(Options::parse(&args(bad)).is_err(), "{bad}");
        }
    }

    #[test]
    fn reads_libfuzzers_final_stats_and_artifact() {
        let stderr = "#1000\tDONE   cov: 10 ft: 20\n\
                      stat::number_of_executed_units: 123456\n\
                      stat::average_exec_per_sec:     4115\n\
                      stat::new_units_added:          7\n";
        assert_eq!(
            read_output(stderr),
            Outcome {
                executions: 123_456,
                per_second: 4115,
                artifact: None
            }
        );
        let crashed = "==1== ERROR: libFuzzer: deadly signal\n\
                       artifact_prefix='/w/fuzz/artifacts/thread/'; Test unit written to /w/fuzz/artifacts/thread/crash-ab12\n\
                       stat::number_of_executed_units: 9\n";
        let o = read_output(crashed);
        assert_eq!(o.executions, 9);
        assert_eq!(
            o.artifact.as_deref(),
            Some("/w/fuzz/artifacts/thread/crash-ab12")
        );
    }

    #[test]
    fn the_table_totals_the_executions() {
        let rows = vec![
            (
                "a".to_owned(),
                Outcome {
                    executions: 10,
                    per_second: 1,
                    artifact: None,
                },
            ),
            (
                "b".to_owned(),
                Outcome {
                    executions: 5,
                    per_second: 1,
                    artifact: Some("x".into()),
                },
            ),
        ];
        let t = table(&rows, 2);
        assert!(t.lines().last().unwrap().ends_with(" 15"), "{t}");
        assert!(t.contains("CRASH"), "{t}");
    }
}
