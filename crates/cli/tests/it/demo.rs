//! The demo store `fixtures/demo/` through the real `doctor` binary: the dry-run output
//! (snapshot), `--check` before and after a real repair, a dry run on the committed store itself
//! that must leave it untouched, and the single-flight lock against a concurrent run. Every run
//! gets an empty `$CODEWHALE_HOME`, so no test reads the real `~/.codewhale` (its task threads and
//! automations would change what the doctor keeps).

use std::path::{Path, PathBuf};

use crate::common::{copy_tree, fixtures_dir, mtimes, tree, Doctor, Holder, Ran};

const NOW: &str = "2026-11-29T12:00:00Z";

fn demo_dir() -> PathBuf {
    fixtures_dir().join("demo")
}

/// A temp copy of the demo store, at `<tmp>/S`.
fn demo_copy() -> (tempfile::TempDir, PathBuf) {
    let tmp = tempfile::tempdir().unwrap();
    let s = tmp.path().join("S");
    copy_tree(&demo_dir(), &s);
    (tmp, s)
}

/// Runs `doctor <args>` with the fixed clock and an empty `$CODEWHALE_HOME`.
fn doctor_with(args: &[&str]) -> Ran {
    let home = tempfile::tempdir().unwrap();
    Doctor::new()
        .args(args)
        .now(NOW)
        .env("CODEWHALE_HOME", home.path())
        .run()
}

/// Runs `doctor --repair-sessions --sessions-dir <s> <args>`.
fn doctor(s: &Path, args: &[&str]) -> Ran {
    let s = s.to_str().unwrap();
    doctor_with(&[&["--repair-sessions", "--sessions-dir", s], args].concat())
}

#[test]
fn dry_run_then_repair_then_check() {
    let (_tmp, s) = demo_copy();

    let dry = doctor(&s, &["--dry-run"]);
    let shown = format!(
        "exit code: {}\n--- stdout ---\n{}--- stderr ---\n{}",
        dry.exit_code(),
        dry.stdout,
        dry.stderr
    )
    .replace(&s.to_string_lossy().into_owned(), "[TMP]");
    let mut settings = insta::Settings::clone_current();
    settings.set_snapshot_path("snapshots/demo");
    settings.set_prepend_module_to_snapshot(false);
    settings.bind(|| insta::assert_snapshot!("dry_run", shown));
    assert_eq!(dry.exit_code(), 0);

    let check = doctor(&s, &["--dry-run", "--check"]);
    assert_eq!(
        check.exit_code(),
        3,
        "--check on the unrepaired demo store must report pending actions"
    );

    let real = doctor(&s, &[]);
    assert_eq!(real.exit_code(), 0, "stderr: {}", real.stderr);
    let stdout = real.stdout;
    assert!(
        stdout.contains("Sessions repaired: 2 recovered, 1 thread re-linked, 4 unused items set aside → .set-aside/"),
        "{stdout}"
    );

    let check = doctor(&s, &["--dry-run", "--check"]);
    assert_eq!(
        check.exit_code(),
        0,
        "after a repair, --check must find nothing: {}",
        check.stdout
    );
}

#[test]
fn check_on_a_fresh_copy_exits_3_and_writes_nothing() {
    let (_tmp, s) = demo_copy();
    let before = tree(&s);
    let check = doctor(&s, &["--dry-run", "--check"]);
    assert_eq!(check.exit_code(), 3, "stdout: {}", check.stdout);
    assert_eq!(tree(&s), before, "--check wrote to the store");
}

#[test]
fn dry_run_on_the_demo_store_itself_changes_nothing() {
    let demo = demo_dir();
    let before = tree(&demo);
    let before_mtimes = mtimes(&demo);
    assert!(
        before.len() > 20,
        "the demo store looks incomplete: {before:?}"
    );

    for args in [
        &["--dry-run"][..],
        &["--dry-run", "--json"],
        &["--dry-run", "--check"],
    ] {
        let out = doctor(&demo, args);
        assert!(
            matches!(out.exit_code(), 0 | 3),
            "doctor {args:?} failed: {}",
            out.stderr
        );
    }
    let status = doctor_with(&["--sessions-dir", demo.to_str().unwrap()]);
    assert_eq!(status.exit_code(), 0, "{}", status.stderr);

    assert_eq!(
        tree(&demo),
        before,
        "a dry run changed the bytes or the listing of fixtures/demo"
    );
    assert_eq!(
        mtimes(&demo),
        before_mtimes,
        "a dry run created, removed or rewrote something in fixtures/demo"
    );
}

#[test]
fn a_concurrent_run_exits_75_and_writes_nothing() {
    let (_tmp, s) = demo_copy();
    let _holder = Holder::spawn(&[s.join(".reconcile.lock")]);
    let before = tree(&s);
    let before_mtimes = mtimes(&s);

    for args in [&[][..], &["--json"]] {
        let out = doctor(&s, args);
        assert_eq!(out.exit_code(), 75, "doctor {args:?}: {}", out.stderr);
        let stderr = &out.stderr;
        assert_eq!(
            stderr.lines().count(),
            1,
            "a busy run says so in one line: {stderr}"
        );
        assert!(stderr.contains("another doctor run"), "{stderr}");
        assert!(stderr.contains(".reconcile.lock"), "{stderr}");
        if args.contains(&"--json") {
            let v: serde_json::Value = serde_json::from_str(&out.stdout)
                .expect("--json prints one JSON document even when busy");
            assert_eq!(v["summary"]["skipped_concurrent"], true);
            assert!(v["plan"]["actions"].as_array().unwrap().is_empty());
        } else {
            assert!(out.stdout.is_empty());
        }
    }

    assert!(!s.join(".reconcile").exists(), ".reconcile/ was created");
    assert!(!s.join(".set-aside").exists(), ".set-aside/ was created");
    assert_eq!(tree(&s), before, "a busy run changed the store");
    assert_eq!(mtimes(&s), before_mtimes, "a busy run touched the store");
}
