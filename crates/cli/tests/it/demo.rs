//! The demo store `fixtures/demo/` through the real `doctor` binary: the dry-run output
//! (snapshot), `--check` before and after a real repair, a dry run on the committed store itself
//! that must leave it untouched, and the single-flight lock against a concurrent run. Every run
//! gets an empty `$CODEWHALE_HOME`, so no test reads the real `~/.codewhale` (its task threads and
//! automations would change what the doctor keeps).

mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use common::{copy_tree, fixtures_dir, mtimes, tree, Holder};

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

/// `doctor` with the fixed clock and an empty `$CODEWHALE_HOME`.
fn doctor_command() -> (Command, tempfile::TempDir) {
    let home = tempfile::tempdir().unwrap();
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_doctor"));
    cmd.env("DOCTOR_NOW", NOW)
        .env("CODEWHALE_HOME", home.path())
        .env_remove("DOCTOR_LOG")
        .env_remove("RUST_LOG");
    (cmd, home)
}

/// Runs `doctor --repair-sessions --sessions-dir <s> <args>`.
fn doctor(s: &Path, args: &[&str]) -> Output {
    let (mut cmd, _home) = doctor_command();
    cmd.arg("--repair-sessions")
        .arg("--sessions-dir")
        .arg(s)
        .args(args)
        .output()
        .expect("run doctor")
}

fn code(out: &Output) -> i32 {
    out.status.code().expect("doctor exited by a signal")
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8(bytes.to_vec()).expect("doctor prints UTF-8")
}

#[test]
fn dry_run_then_repair_then_check() {
    let (_tmp, s) = demo_copy();

    let dry = doctor(&s, &["--dry-run"]);
    let shown = format!(
        "exit code: {}\n--- stdout ---\n{}--- stderr ---\n{}",
        code(&dry),
        text(&dry.stdout),
        text(&dry.stderr)
    )
    .replace(&s.to_string_lossy().into_owned(), "[TMP]");
    insta::assert_snapshot!("dry_run", shown);
    assert_eq!(code(&dry), 0);

    let check = doctor(&s, &["--dry-run", "--check"]);
    assert_eq!(
        code(&check),
        3,
        "--check on the unrepaired demo store must report pending actions"
    );

    let real = doctor(&s, &[]);
    assert_eq!(code(&real), 0, "stderr: {}", text(&real.stderr));
    let stdout = text(&real.stdout);
    assert!(
        stdout.contains("Sessions repaired: 2 recovered, 1 threads re-linked, 4 unused items set aside → .set-aside/"),
        "{stdout}"
    );

    let check = doctor(&s, &["--dry-run", "--check"]);
    assert_eq!(
        code(&check),
        0,
        "after a repair, --check must find nothing: {}",
        text(&check.stdout)
    );
}

#[test]
fn check_on_a_fresh_copy_exits_3_and_writes_nothing() {
    let (_tmp, s) = demo_copy();
    let before = tree(&s);
    let check = doctor(&s, &["--dry-run", "--check"]);
    assert_eq!(code(&check), 3, "stdout: {}", text(&check.stdout));
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
            matches!(code(&out), 0 | 3),
            "doctor {args:?} failed: {}",
            text(&out.stderr)
        );
    }
    let (mut cmd, _home) = doctor_command();
    let status = cmd.arg("--sessions-dir").arg(&demo).output().unwrap();
    assert_eq!(code(&status), 0, "{}", text(&status.stderr));

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
        assert_eq!(code(&out), 75, "doctor {args:?}: {}", text(&out.stderr));
        let stderr = text(&out.stderr);
        assert_eq!(
            stderr.lines().count(),
            1,
            "a busy run says so in one line: {stderr}"
        );
        assert!(stderr.contains("another doctor run"), "{stderr}");
        assert!(stderr.contains(".reconcile.lock"), "{stderr}");
        if args.contains(&"--json") {
            let v: serde_json::Value = serde_json::from_slice(&out.stdout)
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
