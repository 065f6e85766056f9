//! Every fuzz target's function over its checked-in corpus (`fuzz/corpus/<target>/`) and its
//! past crashes (`fuzz/regressions/<target>/`), on stable: what the fuzzer found stays fixed.

// Lists and reads the corpus files of the repository: test tooling, outside the product's
// boundaries (clippy.toml).
#![allow(clippy::disallowed_methods, clippy::disallowed_types)]

use std::path::{Path, PathBuf};

fn fuzz_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fuzz")
}

/// The files of `dir`, sorted; none when it does not exist.
fn files(dir: &Path) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut out: Vec<PathBuf> = entries
        .map(|e| e.expect("a directory entry").path())
        .filter(|p| p.is_file())
        .collect();
    out.sort();
    out
}

/// Runs `target` over each file, and names every file on which it panics.
fn run(name: &str, target: fuzzing::Target, files: &[PathBuf]) -> Vec<String> {
    let mut failed = Vec::new();
    for f in files {
        let bytes = std::fs::read(f).expect("read a corpus file");
        if std::panic::catch_unwind(|| target(&bytes)).is_err() {
            failed.push(format!("{name}: {}", f.display()));
        }
    }
    failed
}

#[test]
fn every_target_passes_over_its_corpus() {
    let mut failed = Vec::new();
    for (name, target) in fuzzing::TARGETS {
        let corpus = files(&fuzz_dir().join("corpus").join(name));
        assert!(
            !corpus.is_empty(),
            "fuzz/corpus/{name}/ is empty: seed it with `cargo xtask fuzz --seed`"
        );
        failed.extend(run(name, *target, &corpus));
    }
    assert!(failed.is_empty(), "failed on:\n{}", failed.join("\n"));
}

#[test]
fn every_past_crash_stays_fixed() {
    let mut failed = Vec::new();
    for (name, target) in fuzzing::TARGETS {
        let regressions = files(&fuzz_dir().join("regressions").join(name));
        failed.extend(run(name, *target, &regressions));
    }
    assert!(failed.is_empty(), "failed on:\n{}", failed.join("\n"));
}

#[test]
fn every_target_has_a_fuzz_target_file_and_no_other_is_there() {
    let mut on_disk: Vec<String> = files(&fuzz_dir().join("fuzz_targets"))
        .iter()
        .filter_map(|p| Some(p.file_stem()?.to_str()?.to_owned()))
        .collect();
    on_disk.sort();
    let mut listed: Vec<String> = fuzzing::NAMES.iter().map(|n| (*n).to_owned()).collect();
    listed.sort();
    assert_eq!(on_disk, listed);
    // This OS runs a part of them; Linux all.
    let runs: Vec<&str> = fuzzing::TARGETS.iter().map(|(n, _)| *n).collect();
    assert!(runs.iter().all(|n| fuzzing::NAMES.contains(n)), "{runs:?}");
    if cfg!(target_os = "linux") {
        assert_eq!(runs.len(), fuzzing::NAMES.len(), "{runs:?}");
    }
    let manifest = std::fs::read_to_string(fuzz_dir().join("Cargo.toml")).expect("fuzz/Cargo.toml");
    for name in &listed {
        assert!(
            manifest.contains(&format!("path = \"fuzz_targets/{name}.rs\"")),
            "fuzz/Cargo.toml has no [[bin]] for {name}"
        );
    }
}
