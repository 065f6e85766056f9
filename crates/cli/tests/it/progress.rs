//! Progress appears on stderr only when stderr is a terminal: under a pseudo-terminal (util-linux
//! `script`) the spinner is drawn; with stderr piped, stderr stays empty.

use crate::common::{copy_tree, fixtures_dir, Doctor};

#[test]
fn spinner_only_on_a_terminal() {
    let tmp = tempfile::tempdir().unwrap();
    let s = tmp.path().join("S");
    copy_tree(&fixtures_dir().join("demo"), &s);
    let dry_run = || {
        Doctor::new()
            .args(["--repair-sessions", "--dry-run"])
            .sessions_dir(&s)
    };

    let piped = dry_run().run();
    assert_eq!(piped.code, Some(0), "{}", piped.said());
    assert!(
        piped.stderr.is_empty(),
        "no progress into a pipe: {:?}",
        piped.stderr
    );

    // util-linux `script` runs the command under a pseudo-terminal.
    let tty = dry_run().on_a_terminal().run();
    assert_eq!(tty.code, Some(0), "{}", tty.said());
    let shown = &tty.stdout;
    assert!(
        shown.contains("repairing sessions"),
        "a spinner on a terminal: {shown}"
    );
    assert!(shown.contains("would set aside garbage.json"), "{shown}");
}
