//! Clocks and run ids (issue 21, item 4): a `DOCTOR_NOW` that no run id can spell (a leap
//! second, a date that does not exist, a year past 9999 in UTC) runs nothing and exits 2 naming
//! it; the last second a run id can spell works end to end; and `latest` is the run that
//! started last, also among runs of one second, whose random suffixes say nothing of order.

use std::path::{Path, PathBuf};

use crate::common::{Doctor, Ran};
use crate::stores::{document, pretty, write};

const NOW: &str = "2026-11-29T12:00:00Z";

/// S with a readable session and the torn documents `names` (R1 sets each aside).
fn store_with_torn(names: &[&str]) -> (tempfile::TempDir, PathBuf) {
    let tmp = tempfile::tempdir().unwrap();
    let s = tmp.path().join("S");
    std::fs::create_dir_all(&s).unwrap();
    write(&s, "keep.json", pretty(&document("keep")));
    for name in names {
        torn(&s, name);
    }
    (tmp, s)
}

fn torn(s: &Path, name: &str) {
    write(
        s,
        &format!("{name}.json"),
        b"{\"schema_version\": 1, \"messages\": [",
    );
}

fn repair(s: &Path, now: &str) -> Ran {
    Doctor::new()
        .args(["--repair-sessions", "--json"])
        .sessions_dir(s)
        .now(now)
        .run()
}

/// Each `DOCTOR_NOW` a run id cannot spell is refused before anything is read or written:
/// exit 2, the message naming `DOCTOR_NOW` and why; the store is untouched.
#[test]
fn a_doctor_now_no_run_id_can_spell_is_refused_with_exit_2() {
    for (now, why) in [
        ("9999-12-31T23:59:60Z", "leap second"),
        ("2016-12-31T23:59:60Z", "leap second"),
        ("2026-02-31T00:00:00Z", "not an RFC 3339 time"),
        (
            "9999-12-31T23:59:59-01:00",
            "outside the years 0000 to 9999",
        ),
        (
            "0000-01-01T00:00:00+01:00",
            "outside the years 0000 to 9999",
        ),
    ] {
        let (_tmp, s) = store_with_torn(&["torn"]);
        for args in [
            vec!["--repair-sessions"],
            vec!["--purge-set-aside", "--older-than", "1d"],
            vec!["--restore", "latest"],
        ] {
            let out = Doctor::new().sessions_dir(&s).args(&args).now(now).run();
            assert_eq!(out.code, Some(2), "{now} {args:?}: {}", out.said());
            assert!(
                out.stderr.contains(&format!("DOCTOR_NOW={now:?}")) && out.stderr.contains(why),
                "{now} {args:?}: {}",
                out.stderr
            );
        }
        assert!(s.join("torn.json").exists(), "{now}: nothing was done");
        assert!(!s.join(".set-aside").exists() && !s.join(".reconcile").exists());
    }
}

/// The last second a run id can spell: the run is `99991231T235959Z-…`, and list, restore and
/// purge all name it.
#[test]
fn the_last_second_a_run_id_can_spell_makes_a_run_every_command_can_name() {
    let (_tmp, s) = store_with_torn(&["torn"]);
    let last = "9999-12-31T23:59:59Z";
    let out = repair(&s, last);
    assert_eq!(out.code, Some(0), "{}", out.said());
    let run = out.json()["run"].as_str().unwrap().to_owned();
    assert!(run.starts_with("99991231T235959Z-"), "{run}");
    let list = Doctor::new()
        .args(["sessions", "list", "latest", "--json", "--sessions-dir"])
        .arg(&s)
        .now(last)
        .run();
    assert_eq!(list.code, Some(0), "{}", list.said());
    assert_eq!(list.json()["run"], run.as_str());
    assert_eq!(list.json()["at"], last);
    let restore = Doctor::new()
        .sessions_dir(&s)
        .args(["--restore", "latest", "--json"])
        .now(last)
        .run();
    assert_eq!(restore.code, Some(0), "{}", restore.said());
    assert!(s.join("torn.json").exists());
    let purge = Doctor::new()
        .sessions_dir(&s)
        .args(["--purge-set-aside", "--older-than", "0s", "--json"])
        .now(last)
        .run();
    assert_eq!(purge.code, Some(0), "{}", purge.said());
    assert_eq!(
        purge.json()["summary"]["runs_purged"],
        1,
        "{}",
        purge.stdout
    );
}

/// Two runs in one second, the later with the smaller random suffix (tried until the suffixes
/// fall that way): `latest` is the later run, and `sessions list` shows them in the order
/// they ran. By suffix, `latest` would be the earlier one.
#[test]
fn latest_is_the_run_that_ran_last_among_runs_of_one_second() {
    for _ in 0..40 {
        let (_tmp, s) = store_with_torn(&["first"]);
        let earlier = repair(&s, NOW).json()["run"].as_str().unwrap().to_owned();
        torn(&s, "second");
        let later = repair(&s, NOW).json()["run"].as_str().unwrap().to_owned();
        assert_eq!(earlier[..16], later[..16], "one second");
        if later > earlier {
            continue;
        }
        let list = Doctor::new()
            .args(["sessions", "list", "--json", "--sessions-dir"])
            .arg(&s)
            .now(NOW)
            .run();
        let listed = list.json();
        let runs: Vec<&str> = listed["runs"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| match r["run"].as_str().unwrap() {
                r if r == earlier => "earlier",
                r if r == later => "later",
                _ => "another",
            })
            .collect();
        assert_eq!(runs, ["earlier", "later"], "{}", list.stdout);
        let restore = Doctor::new()
            .sessions_dir(&s)
            .args(["--restore", "latest", "--json"])
            .now(NOW)
            .run();
        assert_eq!(restore.code, Some(0), "{}", restore.said());
        assert!(
            s.join("second.json").exists() && !s.join("first.json").exists(),
            "latest is the later run {later}, not {earlier}: {}",
            restore.stdout
        );
        return;
    }
    panic!("forty pairs of runs, and never the later with the smaller suffix");
}

/// The library refuses such a clock too (a host embedding the doctor with a system clock set
/// past 9999, or a fixed instant past it), also applying a plan file: exit 2, nothing written.
#[test]
fn a_library_run_whose_clock_no_run_id_can_spell_is_refused() {
    let (_tmp, s) = store_with_torn(&["torn"]);
    let mut opts = crate::common::repair_options(&s);
    opts.codewhale_home = None;
    opts.clock = store::Clock::Fixed(store::Timestamp(store::Timestamp::MAX.0 + 1));
    let repaired = doctor::repair_sessions(&opts).unwrap_err();
    let purged = doctor::purge(&opts, 86_400, false).unwrap_err();
    // A plan made with a clock that works, applied with one that does not.
    let mut dry = crate::common::repair_options(&s);
    dry.codewhale_home = None;
    dry.dry_run = true;
    dry.clock = store::Clock::Fixed(store::Timestamp::parse(NOW).unwrap());
    let plan = doctor::plan_file_bytes(&doctor::repair_sessions(&dry).unwrap());
    let applied = doctor::apply_plan_bytes(
        &plan,
        "plan.json",
        opts.clock,
        &store::progress::ProgressSink::silent(),
    )
    .unwrap_err();
    for e in [repaired, purged, applied] {
        assert_eq!(e.exit_code(), 2, "{e}");
        assert!(e.to_string().contains("0000 to 9999"), "{e}");
    }
    assert!(s.join("torn.json").exists());
    assert!(!s.join(".set-aside").exists() && !s.join(".reconcile").exists());
}
