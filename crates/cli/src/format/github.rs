//! The `github` format: GitHub Actions workflow commands (one annotation per action, kept item
//! and error, then the summary notice), their escaping, and the append of the markdown report
//! to the file `$GITHUB_STEP_SUMMARY` names.

use std::fmt::Write as _;
use std::path::Path;

use super::{actions, rule_title, View};

/// The workflow commands of a run, one per line: `::warning title=<CODE> <name>::<verb>
/// <path>: <reason>` per action (`would <verb>` in a dry run; in a real run the past tense when
/// applied, else `skipped` or `failed` with why), `::notice title=<CODE>::kept <path>: <why>` per
/// kept item, `::error title=doctor::<message>` per error, then `::notice
/// title=doctor::<summary line>`.
pub fn github(v: &dyn View) -> String {
    let mut out = String::new();
    for a in actions(v) {
        let title = rule_title(&a.action.rule, &a.action.rule_name);
        let message = format!("{} {}: {}", a.verb(), a.path(), a.detail());
        command(&mut out, "warning", &title, &message);
    }
    for k in v.kept() {
        command(
            &mut out,
            "notice",
            &k.rule,
            &format!("kept {}: {}", k.path, k.why),
        );
    }
    for e in v.errors() {
        command(&mut out, "error", "doctor", &e);
    }
    command(&mut out, "notice", "doctor", &v.summary_line());
    out
}

/// Appends `markdown` to the file `$GITHUB_STEP_SUMMARY` names (`path`), creating it when it is
/// missing.
pub fn append_step_summary(path: &Path, markdown: &str) -> Result<(), fsroot::Error> {
    fsroot::append_standalone_file(path, markdown.as_bytes())
}

/// One workflow command with a `title` property, and its newline.
fn command(out: &mut String, name: &str, title: &str, message: &str) {
    let _ = writeln!(
        out,
        "::{name} title={}::{}",
        escape_property(title),
        escape_data(message)
    );
}

/// The data of a workflow command: `%`, CR and LF as `%25`, `%0D`, `%0A`, so a message stays
/// on its line and cannot start a command of its own.
fn escape_data(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '%' => out.push_str("%25"),
            '\r' => out.push_str("%0D"),
            '\n' => out.push_str("%0A"),
            c => out.push(c),
        }
    }
    out
}

/// A property value of a workflow command: as data, and `:` and `,` as `%3A` and `%2C`, which
/// would otherwise end the value.
fn escape_property(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in escape_data(s).chars() {
        match c {
            ':' => out.push_str("%3A"),
            ',' => out.push_str("%2C"),
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::format::test_reports;

    #[test]
    fn data_and_properties_are_escaped_as_github_reads_them() {
        assert_eq!(escape_data("50% a\r\nb:c,d"), "50%25 a%0D%0Ab:c,d");
        assert_eq!(escape_property("50% a\r\nb:c,d"), "50%25 a%0D%0Ab%3Ac%2Cd");
        // `%` first: an escape already in the text is not read back as its character.
        assert_eq!(escape_data("%0A"), "%250A");
        assert_eq!(escape_property("%3A"), "%253A");
    }

    #[test]
    fn a_dry_run_warns_per_action_and_ends_with_the_summary() {
        let r = test_reports::repair_dry(3);
        let out = github(&r);
        let lines: Vec<&str> = out.lines().collect();
        assert_eq!(
            lines,
            [
                "::warning title=R1 unreadable-document::would set aside doc-1.json: unreadable document: EOF while parsing",
                "::warning title=R1 unreadable-document::would set aside doc-2.json: unreadable document: EOF while parsing",
                "::warning title=R1 unreadable-document::would set aside doc-3.json: unreadable document: EOF while parsing",
                "::notice title=R3::kept taken/runtime/threads/th-taken.json: document id taken",
                "::notice title=doctor::3 actions planned; nothing was written",
            ]
        );
    }

    #[test]
    fn a_real_run_says_what_became_of_each_action() {
        let r = test_reports::repair_real();
        let out = github(&r);
        let lines: Vec<&str> = out.lines().collect();
        assert_eq!(
            lines,
            [
                "::warning title=R1 unreadable-document::set aside torn.json: unreadable document: EOF while parsing",
                "::warning title=R1 unreadable-document::skipped junk.json: changed since planned",
                "::warning title=R4 dangling-thread-binding::failed s/runtime/threads/th-1.json: permission denied",
                "::error title=doctor::s/runtime/threads/th-1.json: permission denied",
                "::notice title=doctor::Sessions repaired: 1 unused item set aside → .set-aside/20261129T120000Z-a1b2c3",
            ]
        );
    }

    #[test]
    fn odd_paths_and_reasons_stay_on_their_line() {
        let r = test_reports::repair_odd();
        let out = github(&r);
        // One line per action, kept item, error and the summary: no newline leaks through.
        assert_eq!(out.lines().count(), 4, "{out}");
        for line in out.lines() {
            assert!(line.starts_with("::"), "{line}");
        }
        let first = out.lines().next().unwrap();
        assert_eq!(
            first,
            "::warning title=R1 odd%3Aname%2Cwith%25::would set aside odd%25:,%0A<&\"'.json: reason %25 with%0D%0Anewline, colon: and <&\"'>"
        );
        let kept = out.lines().nth(1).unwrap();
        assert_eq!(
            kept,
            "::notice title=R3%3Ax::kept odd%25:,%0A<&\"'.json: why %25:,%0A"
        );
    }

    #[test]
    fn a_sweep_names_each_directory_with_its_root() {
        let r = test_reports::sweep_dry();
        let out = github(&r);
        assert!(
            out.starts_with(
                "::warning title=B1 leaked-go-workdir::would reclaim /tmp/roots/a/go-build1: "
            ),
            "{out}"
        );
        assert!(
            out.contains("::notice title=B1::kept /tmp/roots/a/go-build9: held by process 42\n")
        );
        assert!(
            out.ends_with(
                "::notice title=doctor::2 actions planned, 3.0 KiB to free; nothing was written\n"
            ),
            "{out}"
        );
    }

    #[test]
    fn the_step_summary_is_created_then_appended_to() {
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join("step_summary.md");
        append_step_summary(&path, "# one\n").unwrap();
        append_step_summary(&path, "# two\n").unwrap();
        assert_eq!(
            fsroot::read_standalone_file(&path).unwrap(),
            b"# one\n# two\n"
        );
        assert!(append_step_summary(&tmp.path().join("no/such/dir.md"), "x").is_err());
    }
}
