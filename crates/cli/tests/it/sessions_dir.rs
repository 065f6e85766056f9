//! The default sessions directory (platforms.md §8.5) through the real `doctor` binary: found
//! under `HOME` as the app finds it, and a missing one beside the app's legacy
//! `~/.deepseek/sessions` reported (exit 2, as any missing sessions directory), never migrated.

use std::path::Path;

use crate::common::{tree, Doctor, Ran};

/// `doctor sessions repair --dry-run` with no `--sessions-dir`, the home `home` and no other
/// variable that names a home (`codewhale_home`: `CODEWHALE_HOME`, when given).
fn repair_default(home: &Path, codewhale_home: Option<&Path>) -> Ran {
    let mut d = Doctor::new()
        .args(["sessions", "repair", "--dry-run"])
        .env("HOME", home)
        .env_remove("USERPROFILE")
        .env_remove("HOMEDRIVE")
        .env_remove("HOMEPATH")
        .env_remove("CODEWHALE_HOME");
    if let Some(cw) = codewhale_home {
        d = d.env("CODEWHALE_HOME", cw);
    }
    d.run()
}

/// A home holding only the legacy sessions directory, with one session document.
fn legacy_home() -> (tempfile::TempDir, std::path::PathBuf) {
    let tmp = tempfile::tempdir().unwrap();
    let legacy = tmp.path().join(".deepseek").join("sessions");
    std::fs::create_dir_all(&legacy).unwrap();
    std::fs::write(legacy.join("a.json"), b"{}").unwrap();
    (tmp, legacy)
}

#[test]
fn a_missing_default_beside_the_legacy_directory_is_reported_and_never_migrated() {
    let (tmp, legacy) = legacy_home();
    let before = tree(tmp.path());
    let ran = repair_default(tmp.path(), None);
    assert_eq!(ran.exit_code(), 2, "{}", ran.said());
    let s = tmp.path().join(".codewhale").join("sessions");
    for part in [
        format!("sessions directory {} does not exist", s.display()),
        format!("but the legacy {} does", legacy.display()),
        "the doctor never moves it".to_owned(),
        format!("--sessions-dir {}", legacy.display()),
    ] {
        assert!(ran.stderr.contains(&part), "{part}: {}", ran.said());
    }
    assert_eq!(tree(tmp.path()), before, "nothing moved, nothing created");
}

#[test]
fn the_legacy_directory_is_not_mentioned_when_it_is_absent_or_codewhale_home_is_set() {
    // No legacy directory: the missing directory is reported as ever.
    let tmp = tempfile::tempdir().unwrap();
    let ran = repair_default(tmp.path(), None);
    assert_eq!(ran.exit_code(), 2, "{}", ran.said());
    let s = tmp.path().join(".codewhale").join("sessions");
    assert!(
        ran.stderr.contains(&format!(
            "sessions directory {} does not exist or is not a directory",
            s.display()
        )),
        "{}",
        ran.said()
    );
    assert!(!ran.stderr.contains("legacy"), "{}", ran.said());

    // An explicit CODEWHALE_HOME: the app does not read the legacy directory then.
    let (tmp, _legacy) = legacy_home();
    let cw = tmp.path().join("cw");
    let ran = repair_default(tmp.path(), Some(&cw));
    assert_eq!(ran.exit_code(), 2, "{}", ran.said());
    assert!(
        ran.stderr
            .contains(&cw.join("sessions").display().to_string()),
        "{}",
        ran.said()
    );
    assert!(!ran.stderr.contains("legacy"), "{}", ran.said());
}

#[test]
fn the_default_is_under_home() {
    let tmp = tempfile::tempdir().unwrap();
    let s = tmp.path().join(".codewhale").join("sessions");
    std::fs::create_dir_all(s.join("checkpoints")).unwrap();
    let ran = repair_default(tmp.path(), None);
    assert_eq!(ran.exit_code(), 0, "{}", ran.said());
    assert!(ran.stdout.contains("nothing was written"), "{}", ran.said());
}
