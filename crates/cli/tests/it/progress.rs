//! Progress appears on stderr only when stderr is a terminal: under a pseudo-terminal (util-linux
//! `script`) the spinner is drawn; with stderr piped, stderr stays empty.

mod common;

use std::process::Command;

use common::{copy_tree, fixtures_dir};

#[test]
fn spinner_only_on_a_terminal() {
    let tmp = tempfile::tempdir().unwrap();
    let s = tmp.path().join("S");
    copy_tree(&fixtures_dir().join("demo"), &s);
    let doctor = env!("CARGO_BIN_EXE_doctor");
    let cmd = format!(
        "{doctor} --repair-sessions --dry-run --sessions-dir {}",
        s.display()
    );

    let piped = Command::new(doctor)
        .args(["--repair-sessions", "--dry-run", "--sessions-dir"])
        .arg(&s)
        .output()
        .unwrap();
    assert!(piped.status.success());
    assert!(
        piped.stderr.is_empty(),
        "no progress into a pipe: {:?}",
        String::from_utf8_lossy(&piped.stderr)
    );

    let tty = Command::new("script")
        .args(["-qec", &cmd, "/dev/null"])
        .output()
        .expect("util-linux `script` runs the command under a pseudo-terminal");
    assert!(tty.status.success());
    let shown = String::from_utf8_lossy(&tty.stdout);
    assert!(
        shown.contains("repairing sessions"),
        "a spinner on a terminal: {shown}"
    );
    assert!(shown.contains("would set aside garbage.json"), "{shown}");
}
