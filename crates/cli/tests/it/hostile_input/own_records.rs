//! c49, c59, c62, c63, c80. The doctor's own files tampered with or unwritable: `last.json`
//! replaced by a directory, the receipts log hard-linked to a file outside S or replaced by a
//! directory (in S and in the sweep's state directory), manifest lines that name live items, a
//! `--plan-out` that cannot be written.

use super::*;

/// A failure after the actions were applied (here `last.json` cannot be written: a directory
/// holding a file is in its place) still prints the report of what was done, with the failure
/// in `errors`, and exits 1; what stands at `last.json` is left as it was.
#[test]
fn c49_a_late_failure_keeps_the_report() {
    let c = Case::new();
    rich_store(&c.s);
    write(&c.s, ".reconcile/last.json/keep", b"theirs\n");
    let out = repair_bin(&c.s, false)
        .timeout(Duration::from_secs(60))
        .run();
    assert!(!out.timed_out);
    assert_eq!(out.code, Some(1), "{}", out.stderr);
    let report: Value = serde_json::from_str(&out.stdout)
        .unwrap_or_else(|e| panic!("stdout is the report ({e}): {:?}", out.stdout));
    let outcomes = report["outcomes"].as_array().unwrap();
    assert_eq!(outcomes.len(), RICH_ACTIONS, "{}", out.stdout);
    assert!(outcomes.iter().all(|o| o["outcome"] == "applied"));
    let errors = report["summary"]["errors"].to_string();
    assert!(errors.contains("last.json"), "{errors}");
    assert_eq!(
        std::fs::read(c.s.join(".reconcile/last.json/keep")).unwrap(),
        b"theirs\n"
    );
}

/// One receipt policy for every pack: the receipts log is a directory, so no receipt can be
/// written. The sessions repair and the build-dirs sweep both apply their first action (nothing
/// is lost: a set-aside is in the run's directory, a reclaimed work directory is regenerable),
/// say which action went unreceipted and why, apply no further action (it would go
/// unreceipted too), and fail the run (exit 1).
#[test]
fn c80_a_receipt_that_cannot_be_written_fails_the_run_after_the_action_in_every_pack() {
    let c = Case::new();
    for name in ["torn.json", "torn2.json"] {
        write(&c.s, name, b"{\"schema_version\": 1, \"messages\": [");
    }
    std::fs::create_dir_all(c.s.join(".reconcile/receipts.jsonl/keep")).unwrap();
    let out = repair_bin(&c.s, false)
        .timeout(Duration::from_secs(60))
        .run();
    assert!(!out.timed_out);
    assert!(!c.s.join("torn.json").exists(), "the set-aside was applied");
    assert!(
        c.s.join("torn2.json").exists(),
        "no action after a lost receipt: {}",
        out.said()
    );
    assert_says(
        &out.said(),
        "not attempted: an earlier receipt could not be written",
    );
    assert_says(
        &out.said(),
        "was applied, but its receipt could not be written",
    );
    assert_says(&out.said(), "receipts.jsonl");
    assert_eq!(out.code, Some(1), "{}", out.said());

    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("root");
    let state = tmp.path().join("state");
    let old = std::time::SystemTime::now() - Duration::from_secs(3 * 3600);
    for dir in ["go-build3000", "go-build3001"] {
        let work = root.join(dir).join("b001");
        std::fs::create_dir_all(&work).unwrap();
        std::fs::write(work.join("_pkg_.a"), b"object").unwrap();
        crate::common::case::set_mtime_recursive(&root.join(dir), old);
    }
    let receipts = state.join("doctor").join(doctor::sweep::RECEIPTS_FILE);
    std::fs::create_dir_all(receipts.join("keep")).unwrap();
    let sweep = Doctor::new()
        .args(["--sweep-build-dirs", "--root"])
        .arg(&root)
        .env("XDG_STATE_HOME", &state)
        .timeout(Duration::from_secs(60))
        .run();
    assert!(
        !root.join("go-build3000").exists(),
        "the reclaim was applied"
    );
    assert_says(
        &sweep.said(),
        "was applied, but its receipt could not be written",
    );
    assert_says(&sweep.said(), &receipts.display().to_string());
    assert!(
        receipts.join("keep").is_dir(),
        "what stands at the log is left"
    );
    assert_eq!(sweep.code, Some(1), "{}", sweep.said());
}

/// `S/.reconcile/receipts.jsonl` is a hard link to a file outside S: appending to it appended
/// the receipts to that file. A real run that applies actions (the rich store) leaves the file
/// outside byte for byte as it was (and its mtime), names the path, and exits 1; nothing in S
/// is lost.
#[test]
fn c59_a_receipts_log_hard_linked_outside_s_is_never_appended_to() {
    let c = Case::new();
    rich_store(&c.s);
    let theirs = b"{\"theirs\":\"a log of someone else\"}\n";
    write(&c.outside, "receipts.jsonl", theirs);
    let receipts_log = c.s.join(".reconcile/receipts.jsonl");
    std::fs::create_dir_all(receipts_log.parent().unwrap()).unwrap();
    std::fs::hard_link(c.outside.join("receipts.jsonl"), &receipts_log).unwrap();
    let before = tree(&c.s);
    let outside = c.outside_state();

    let out = repair_bin(&c.s, false)
        .timeout(Duration::from_secs(60))
        .run();
    assert!(!out.timed_out, "{}", out.said());
    assert_eq!(
        std::fs::read(c.outside.join("receipts.jsonl")).unwrap(),
        theirs,
        "receipts were appended to the file outside S: {}",
        out.said()
    );
    assert_eq!(c.outside_state(), outside, "something outside S changed");
    assert_says(&out.said(), &receipts_log.display().to_string());
    let after = tree(&c.s);
    assert_nothing_lost(&before, &after, kept());
    assert_keep_untouched(&before, &after);
    // Checked last, so every other expectation is seen first.
    assert_eq!(
        out.code,
        Some(1),
        "receipts that cannot be written fail the run: {}",
        out.said()
    );
}

/// A real set-aside run whose MANIFEST.jsonl has been given lines whose `moved_to` is not under
/// `.set-aside/<that run>/` but names a live item: `keep.json` (as is, and as
/// `.set-aside/<run>/../../keep.json`), `keep/runtime` (with its true digests, so only the
/// place gives them away), and an app line naming `<S>/keep/runtime`. `--restore RUN` (dry and
/// real) refuses each line, naming its `moved_to`, and moves nothing of `keep`: no action reads
/// from a live item, no "original" of those lines is created.
#[test]
fn c62_a_manifest_line_moved_to_a_live_item_is_refused_by_restore() {
    let c = Case::new();
    write(&c.s, "torn.json", b"{\"torn\":");
    let run = lib(&c.s, false).unwrap().run;
    let keep_doc = std::fs::read(c.s.join("keep.json")).unwrap();
    let keep_store = fsroot::Root::open(&c.s)
        .unwrap()
        .tree_digest(Path::new("keep/runtime"))
        .unwrap();
    let abs = c.s.display().to_string();
    let doc_line = |original: &str, moved_to: &str| {
        json!({
            "run": run, "rule": "R1", "original": original, "moved_to": moved_to,
            "reason": "tampered", "kind": "document",
            "sha256": common::sha256_hex(&keep_doc), "bytes": keep_doc.len(), "at": NOW
        })
    };
    let traversal = format!(".set-aside/{run}/../../keep.json");
    let lines = [
        doc_line("stolen.json", "keep.json"),
        doc_line("stolen2.json", &traversal),
        json!({
            "run": run, "rule": "R2", "original": "stolen/runtime", "moved_to": "keep/runtime",
            "reason": "tampered", "kind": "runtime_store",
            "tree_blake3": keep_store.tree_blake3, "bytes": keep_store.bytes, "at": NOW
        }),
        json!({
            "original": format!("{abs}/stolen3/runtime"),
            "moved_to": format!("{abs}/keep/runtime"),
            "reason": "tampered", "at": NOW, "detail": {"kind": "runtime_store"}
        }),
    ];
    let manifest = c.s.join(format!(".set-aside/{run}/MANIFEST.jsonl"));
    let mut text = std::fs::read_to_string(&manifest).unwrap();
    for l in &lines {
        text.push_str(&serde_json::to_string(l).unwrap());
        text.push('\n');
    }
    std::fs::write(&manifest, text).unwrap();
    let keep_before: Tree = tree(&c.s)
        .into_iter()
        .filter(|(p, _)| p.starts_with("keep") || p == Path::new("keep.json"))
        .collect();
    let live = ["keep.json", "keep/runtime"];
    let stolen = ["stolen.json", "stolen2.json", "stolen", "stolen3"];

    for dry_run in [true, false] {
        let mut args: Vec<&OsStr> = vec!["--restore".as_ref(), run.as_ref(), "--json".as_ref()];
        if dry_run {
            args.push("--dry-run".as_ref());
        }
        args.extend(["--sessions-dir".as_ref(), c.s.as_os_str()]);
        let out = doctor_args(&args, Duration::from_secs(30));
        assert!(!out.timed_out, "{}", out.said());
        let report: Value = serde_json::from_str(&out.stdout)
            .unwrap_or_else(|e| panic!("dry_run {dry_run} ({e}): {}", out.said()));
        let skipped = report["skipped"].as_array().unwrap();
        for l in &lines {
            let moved_to = l["moved_to"].as_str().unwrap();
            assert!(
                skipped
                    .iter()
                    .any(|k| k["why"].as_str().unwrap_or_default().contains(moved_to)),
                "dry_run {dry_run}: no refusal names {moved_to}: {report:#}"
            );
        }
        for a in report["plan"]["actions"].as_array().unwrap() {
            for field in ["path", "from"] {
                let p = a[field].as_str().unwrap_or_default();
                assert!(
                    !live.iter().chain(&stolen).any(|x| p == *x
                        || p.starts_with(&format!("{x}/"))
                        || p == format!("{abs}/{x}")),
                    "dry_run {dry_run}: an action on {p}: {report:#}"
                );
            }
        }
        let keep_now: Tree = tree(&c.s)
            .into_iter()
            .filter(|(p, _)| p.starts_with("keep") || p == Path::new("keep.json"))
            .collect();
        assert_eq!(
            keep_now, keep_before,
            "dry_run {dry_run}: the live session moved"
        );
        for x in stolen {
            assert!(
                std::fs::symlink_metadata(c.s.join(x)).is_err(),
                "dry_run {dry_run}: {x} was created"
            );
        }
    }
}

/// Real runs on the rich store with `--plan-out` naming a path that cannot be written: inside
/// a directory that does not exist, inside a regular file, and a directory holding a file. The
/// actions are applied whatever happens then, so the report of what was applied is still
/// printed (JSON, and the human form), the failure is in `summary.errors` naming the path, and
/// the run exits 1; whatever stands at the path is left as it was.
#[test]
fn c63_an_unwritable_plan_out_keeps_the_report_of_what_was_applied() {
    let tmp = tempfile::tempdir().unwrap();
    write(tmp.path(), "a-file", b"theirs\n");
    write(tmp.path(), "a-dir/keep", b"theirs\n");
    let targets = [
        tmp.path().join("no-such-dir/plan.json"),
        tmp.path().join("a-file/plan.json"),
        tmp.path().join("a-dir"),
    ];
    // Errors that do not name the --plan-out path, reported together at the end.
    let mut unnamed = Vec::new();
    for target in &targets {
        for json in [true, false] {
            let c = Case::new();
            rich_store(&c.s);
            let mut args: Vec<&OsStr> = vec![
                "--repair-sessions".as_ref(),
                "--plan-out".as_ref(),
                target.as_os_str(),
                "--sessions-dir".as_ref(),
                c.s.as_os_str(),
            ];
            if json {
                args.push("--json".as_ref());
            }
            let out = doctor_args(&args, Duration::from_secs(60));
            let said = out.said();
            assert!(!out.timed_out, "{said}");
            assert_eq!(out.code, Some(1), "{}: {said}", target.display());
            let path = target.display().to_string();
            if json {
                let report: Value = serde_json::from_str(&out.stdout).unwrap_or_else(|e| {
                    panic!("stdout is the report ({e}), --plan-out {path}: {said}")
                });
                let outcomes = report["outcomes"].as_array().unwrap();
                assert_eq!(outcomes.len(), RICH_ACTIONS, "{said}");
                assert!(outcomes.iter().all(|o| o["outcome"] == "applied"), "{said}");
                let errors = report["summary"]["errors"].as_array().unwrap();
                assert!(!errors.is_empty(), "{said}");
                if !errors
                    .iter()
                    .any(|e| e.as_str().unwrap_or_default().contains(&path))
                {
                    unnamed.push(format!("--json: no error names {path}: {errors:?}"));
                }
            } else {
                assert_says(&out.stdout, "Sessions repaired");
                if !out.stdout.contains(&path) {
                    unnamed.push(format!("human: the output does not name {path}: {said}"));
                }
            }
            assert!(!c.s.join("torn.json").exists(), "the actions were applied");
            assert_eq!(receipts(&c.s).len(), RICH_ACTIONS, "every action receipted");
        }
    }
    assert_eq!(
        std::fs::read(tmp.path().join("a-file")).unwrap(),
        b"theirs\n"
    );
    assert_eq!(
        tree(&tmp.path().join("a-dir")),
        Tree::from([(PathBuf::from("keep"), file(b"theirs\n"))])
    );
    assert!(!tmp.path().join("no-such-dir").exists());
    assert!(
        unnamed.is_empty(),
        "the failure must name the --plan-out path as given:\n{}",
        unnamed.join("\n")
    );
}
