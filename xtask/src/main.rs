//! `cargo xtask`: developer tasks for the workspace (snapshot review, rule docs, man pages and
//! completions, tidy checks, fuzzing, property runs, mutation testing).
//!
//! This is a dev tool, not product code: it may use `std::fs` directly, and the tidy rule that
//! confines `std::fs` to `crates/fsroot` does not apply to it. Each subcommand lives in its own
//! module; `main` only dispatches.
//!
//! ```text
//! cargo xtask snapshots [--accept] [--no-test]
//! cargo xtask docs [--check]
//! cargo xtask dist [--check]
//! cargo xtask tidy
//! cargo xtask bench [--shape NAME] [--doc-kb K] [--threads-per-doc T] [--group G] [--docs N]
//!     [--seed S] [--runs R] [--apply K] [--keep DIR]
//! cargo xtask fuzz --seconds N [--target NAME]...
//! cargo xtask fuzz --seed
//! cargo xtask prop --cases N [--jobs J] [--seed S] [--suite stores|cache]
//! cargo xtask mutants [-p CRATE]... [-f FILE]... [--in-place] [--iterate] [--all-tests] | --summary DIR
//! ```

// A developer tool: it works on the repository's files directly (clippy.toml's boundaries are
// the product's).
#![allow(clippy::disallowed_methods, clippy::disallowed_types)]

mod bench;
mod dist;
mod docs;
mod fuzz;
mod fuzz_seed;
mod layers;
mod mutants;
mod prop;
mod snapshots;
mod tidy;

use std::path::{Path, PathBuf};
use std::process::ExitCode;

const USAGE: &str = "\
usage: cargo xtask <task>

tasks:
  snapshots [--accept] [--no-test]
      Run `cargo test --workspace` with INSTA_UPDATE=new, then list every pending
      `*.snap.new` with a diff against its `.snap`. --accept renames each `.snap.new`
      over its `.snap`; --no-test skips the test run and reviews what is pending.
  bench [--shape NAME] [--doc-kb K] [--threads-per-doc T] [--group G] [--docs N] [--seed S]
        [--runs R] [--apply K] [--keep DIR]
      Generate real-format stores of N/10 and N documents (default 23000) from seed S, of
      a shape (standard: ~14 KiB documents, 50 per host store; small: ~3.5 KB, 12 per host
      store; large: ~200 KB; orphans: mostly directories no document names), changed by the
      knobs (document size in KiB, thread records per document, documents per host store),
      then time a release `doctor --repair-sessions --dry-run` against the floor (a
      parallel listing plus a read of every file it must read), alternating R runs
      (default 5), medians; peak RSS; linearity; and a real run setting aside K
      documents (default 10000) against a raw rename-and-fsync loop.
  docs [--check]
      Generate docs/rules/<code>.md from each rule's doc() in the registries; --check fails when a
      page is stale. The check also runs in `cargo test`.
  dist [--check]
      Generate the man pages (dist/man/doctor.1, one page per command) and the shell
      completions (dist/completions/) from the command line's clap definition; --check
      fails listing every file that is missing, stale or not generated. The check also
      runs in `cargo test`.
  fuzz --seconds N [--target NAME]...
      Run the fuzz targets of fuzz/ (cargo +nightly fuzz run; needs the nightly toolchain and
      cargo-fuzz) one after the other for N seconds each, all of them or those named, and
      print the executions of each and the total. A crash fails it and names the artifact.
  fuzz --seed
      Write the seed corpora of fuzz/corpus/ from fixtures/ (replacing them).
  prop --cases N [--jobs J] [--seed S] [--suite stores|cache]
      Run a property test of crates/cli/tests/it/properties.rs (stores: generated stores keep
      every property; cache: after each edit of a sequence, the plan with the verdict cache is
      the plan without it) for N cases in all, split over J processes at once (default 2) with seeds S, S+1, ...
      (random S when unset), and print the totals of each and their sum. A failing case is
      shrunk, saved in crates/cli/tests/proptest-regressions/ and fails the command.
  mutants [-p CRATE]... [-f FILE]... [--in-place] [--iterate] [--all-tests]
      Mutation testing (cargo-mutants, `cargo install cargo-mutants`) of plan, refset,
      build-dirs, sessions and engine, or the crates and files named, each mutant tested by
      their unit tests and the doctor's integration tests but for the three slowest modules
      (docs/reliability.md); output in target/mutants/, then the counts per file and every
      missed mutant. --iterate tests again only what the last run there did not catch;
      --all-tests keeps the three slow modules in.
  mutants --summary DIR
      Only print the counts of the run whose output is DIR/mutants.out.
  tidy
      Check that `std::fs` is used only in crates/fsroot and that every .rs file starts
      with a `//!` line. Also run by `cargo test`.
";

/// The workspace root: the parent of this crate's directory.
pub fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("xtask lives inside the workspace")
        .to_path_buf()
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let Some((task, rest)) = args.split_first() else {
        eprint!("{USAGE}");
        return ExitCode::from(2);
    };
    let result = match task.as_str() {
        "snapshots" => snapshots::Options::parse(rest).and_then(|o| snapshots::run(&o)),
        "tidy" if rest.is_empty() => tidy::run(&workspace_root()),
        "bench" => bench::run(&workspace_root(), rest),
        "fuzz" => fuzz::run(&workspace_root(), rest),
        "prop" => prop::run(&workspace_root(), rest),
        "mutants" => mutants::run(&workspace_root(), rest),
        "docs" if rest.is_empty() => docs::run(&workspace_root(), false),
        "docs" if rest == ["--check"] => docs::run(&workspace_root(), true),
        "dist" if rest.is_empty() => dist::run(&workspace_root(), false),
        "dist" if rest == ["--check"] => dist::run(&workspace_root(), true),
        "help" | "--help" | "-h" => {
            print!("{USAGE}");
            return ExitCode::SUCCESS;
        }
        _ => Err(Failure::Usage(format!(
            "unknown task or argument: {}",
            args.join(" ")
        ))),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(Failure::Usage(msg)) => {
            eprintln!("xtask: {msg}\n\n{USAGE}");
            ExitCode::from(2)
        }
        Err(Failure::Failed(msg)) => {
            eprintln!("xtask: {msg}");
            ExitCode::FAILURE
        }
    }
}

/// Why a task did not succeed.
#[derive(Debug)]
pub enum Failure {
    /// Bad arguments (exit 2).
    Usage(String),
    /// The task ran and found a problem, or could not run (exit 1).
    Failed(String),
}
