//! `--restore` and `--purge-set-aside` through the real binary: a repair followed by a restore
//! gives back the original tree byte for byte (apart from the doctor's own files); restore
//! verifies hashes and refuses occupied paths by name; purge deletes only runs that match their
//! manifests (unless `--force`), receipted with bytes freed; dry runs write nothing. Then the
//! set-aside runs through the library: listed (`list_runs`, `list_run`), named (`resolve_run`:
//! an id, `latest`, `.set-aside/<run>`), restored by item number, and a partial restore that
//! fails ([`doctor::AdminReport::failed`]).

use std::path::Path;

use crate::common::{self, demo_with_old_artifacts, tree, user_tree, Doctor, Tree};
use serde_json::Value;

const NOW: &str = "2026-11-29T12:00:00Z";

/// `doctor --sessions-dir <s> <args> --json` at [`NOW`]: the exit code, the report (`null` when
/// stdout is not JSON) and stderr.
fn doctor(s: &Path, args: &[&str]) -> (i32, Value, String) {
    let out = Doctor::new()
        .sessions_dir(s)
        .args(args)
        .arg("--json")
        .now(NOW)
        .run();
    let json = serde_json::from_str(&out.stdout).unwrap_or(Value::Null);
    (out.exit_code(), json, out.stderr)
}

fn admin_validator() -> jsonschema::Validator {
    let schema: Value = serde_json::from_str(include_str!(
        "../../../../docs/schemas/admin-output.schema.json"
    ))
    .unwrap();
    jsonschema::draft202012::options().build(&schema).unwrap()
}

#[track_caller]
fn assert_admin_valid(v: &Value) {
    let validator = admin_validator();
    let errs: Vec<String> = validator
        .iter_errors(v)
        .map(|e| format!("{}: {e}", e.instance_path()))
        .collect();
    assert!(errs.is_empty(), "{errs:?}\n{v:#}");
}

/// The `(path, why)` of each item a report skipped.
fn whys(out: &Value) -> Vec<(&str, &str)> {
    out["skipped"]
        .as_array()
        .unwrap()
        .iter()
        .map(|k| (k["path"].as_str().unwrap(), k["why"].as_str().unwrap()))
        .collect()
}

/// The path of each action a report planned.
fn planned_paths(out: &Value) -> Vec<&str> {
    out["plan"]["actions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a["path"].as_str().unwrap())
        .collect()
}

/// The demo store with old artifacts, repaired: the temp dir (keep it alive), S and the run.
fn repaired_demo() -> (tempfile::TempDir, std::path::PathBuf, String) {
    let (tmp, s) = demo_with_old_artifacts();
    let (code, repair, stderr) = doctor(&s, &["--repair-sessions"]);
    assert_eq!(code, 0, "{stderr}");
    let run = repair["run"].as_str().unwrap().to_owned();
    (tmp, s, run)
}

#[test]
fn repair_then_restore_gives_back_the_original_tree() {
    let (_tmp, s) = demo_with_old_artifacts();
    let before = user_tree(&s);
    let (code, repair, _) = doctor(&s, &["--repair-sessions"]);
    assert_eq!(code, 0);
    let kinds: Vec<&str> = repair["plan"]["actions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a["rule"].as_str().unwrap())
        .collect();
    for rule in ["R1", "R2", "R3", "R4", "R5"] {
        assert!(
            kinds.contains(&rule),
            "the repair exercises {rule}: {kinds:?}"
        );
    }
    assert_ne!(user_tree(&s), before, "the repair changed the store");
    let run = repair["run"].as_str().unwrap().to_owned();

    let (code, dry, _) = doctor(&s, &["--restore", &run, "--dry-run"]);
    assert_eq!(code, 0);
    assert_admin_valid(&dry);
    assert!(dry["outcomes"].as_array().unwrap().is_empty());
    assert_eq!(
        common::set_aside_runs(&s),
        std::slice::from_ref(&run),
        "a dry restore writes nothing"
    );

    let (code, restore, stderr) = doctor(&s, &["--restore", &run]);
    assert_eq!(code, 0, "{stderr}");
    assert_admin_valid(&restore);
    for o in restore["outcomes"].as_array().unwrap() {
        assert_eq!(o["outcome"], "applied", "{restore:#}");
    }
    assert_eq!(
        restore["summary"]["documents_set_aside"], 2,
        "the two recovered documents"
    );
    assert_eq!(
        user_tree(&s),
        before,
        "restore gives back the original tree byte for byte"
    );

    let (_, again, _) = doctor(&s, &["--restore", &run]);
    assert!(
        again["plan"]["actions"].as_array().unwrap().is_empty(),
        "a second restore finds everything in place"
    );

    let receipts = std::fs::read_to_string(s.join(".reconcile/receipts.jsonl")).unwrap();
    assert!(
        receipts
            .lines()
            .any(|l| l.contains("\"action\":\"restore\"")),
        "restores are receipted"
    );
}

/// A run whose R3 recovered a thread into the document of an id whose unreadable document R1
/// set aside in the same run: the restore sets the recovered document aside first, then puts
/// the original back at the path it just emptied. (Found by the property tests: the restore
/// judged the path occupied by the document its own plan removes.)
#[test]
fn a_restore_puts_back_a_document_that_a_recovery_of_the_same_id_replaced() {
    let tmp = tempfile::tempdir().unwrap();
    let s = tmp.path().join("S");
    std::fs::create_dir_all(s.join(".late-usage")).unwrap();
    crate::stores::write(&s, "sc3.json", b"{\n ");
    crate::stores::store_with_thread(&s, "sb2/runtime", "sc3", None, 1);
    let before = user_tree(&s);

    let (code, repair, stderr) = doctor(&s, &["--repair-sessions"]);
    assert_eq!(code, 0, "{stderr}");
    let planned: Vec<(&str, &str)> = repair["plan"]["actions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| (a["rule"].as_str().unwrap(), a["path"].as_str().unwrap()))
        .collect();
    assert_eq!(
        planned,
        [("R1", "sc3.json"), ("R3", "sb2/runtime/threads/sc3.json")],
        "{repair:#}"
    );
    let run = repair["run"].as_str().unwrap().to_owned();

    let (code, restore, stderr) = doctor(&s, &["--restore", &run]);
    assert_eq!(code, 0, "{stderr}\n{restore:#}");
    assert!(
        restore["skipped"].as_array().unwrap().is_empty(),
        "{restore:#}"
    );
    assert_eq!(
        user_tree(&s),
        before,
        "the torn sc3.json is back at its path, the recovered one set aside"
    );

    // Again: everything is in place, and the document back at its path is not taken for a
    // recovered document someone changed (which would make the restore partial: exit 1).
    let (code, again, stderr) = doctor(&s, &["--restore", &run]);
    assert_eq!(code, 0, "{stderr}\n{again:#}");
    assert!(
        again["plan"]["actions"].as_array().unwrap().is_empty(),
        "{again:#}"
    );
    for k in again["skipped"].as_array().unwrap() {
        let why = k["why"].as_str().unwrap();
        assert!(why.starts_with("already"), "{again:#}");
    }
    assert_eq!(user_tree(&s), before);
}

/// A store whose unbound thread `sc3` R3 recovers into `sc3.json` (binding the thread, so a
/// restore gives the record its previous bytes back): the repair's run.
fn recovered_sc3(s: &Path) -> String {
    std::fs::create_dir_all(s.join(".late-usage")).unwrap();
    crate::stores::store_with_thread(s, "sb2/runtime", "sc3", None, 1);
    let (code, repair, stderr) = doctor(s, &["--repair-sessions"]);
    assert_eq!(code, 0, "{stderr}");
    assert!(
        repair["plan"]["actions"]
            .as_array()
            .unwrap()
            .iter()
            .any(|a| a["rule"] == "R3" && a["path"] == "sb2/runtime/threads/sc3.json"),
        "{repair:#}"
    );
    repair["run"].as_str().unwrap().to_owned()
}

/// A document the run's recovery wrote and the user changed since is kept, by name: the
/// restore is partial (exit 1) and its last line counts it, while the thread record still gets
/// its previous bytes back.
#[test]
fn a_restore_keeps_a_recovered_document_changed_since_and_says_so() {
    let tmp = tempfile::tempdir().unwrap();
    let s = tmp.path().join("S");
    let run = recovered_sc3(&s);
    let edited = b"{\"the user\": \"wrote here since\"}";
    std::fs::write(s.join("sc3.json"), edited).unwrap();
    let why = format!("document changed since run {run} wrote it: kept");

    for dry in [true, false] {
        let mut args = vec!["--restore", run.as_str()];
        if dry {
            args.push("--dry-run");
        }
        let (code, out, stderr) = doctor(&s, &args);
        assert_eq!(
            code, 1,
            "a partial restore fails (dry: {dry})\n{stderr}\n{out:#}"
        );
        assert_admin_valid(&out);
        let skipped = whys(&out);
        assert_eq!(skipped, [("sc3.json", why.as_str())], "{out:#}");
        let restored = planned_paths(&out);
        assert_eq!(restored, ["sb2/runtime/threads/sc3.json"], "{out:#}");
        assert_eq!(std::fs::read(s.join("sc3.json")).unwrap(), edited);
    }
    let human = Doctor::new()
        .sessions_dir(&s)
        .args(["--restore", &run])
        .now(NOW)
        .run();
    assert_eq!(human.exit_code(), 1);
    assert!(
        human
            .stdout
            .ends_with("restored 0 of 0 items; 1 recovered document kept: see above\n"),
        "{}",
        human.stdout
    );
}

/// When the recovery replaced an unreadable document of the same id and the user changed the
/// recovered one since, both are kept where they are: the changed document is not taken for
/// the run's own item already back.
#[test]
fn a_changed_recovered_document_that_replaced_one_set_aside_is_kept_not_taken_as_restored() {
    let tmp = tempfile::tempdir().unwrap();
    let s = tmp.path().join("S");
    crate::stores::write(&s, "sc3.json", b"{\n ");
    let run = recovered_sc3(&s);
    std::fs::write(s.join("sc3.json"), b"{\"edited\": true}").unwrap();

    let (code, out, stderr) = doctor(&s, &["--restore", &run, "--dry-run"]);
    assert_eq!(code, 1, "{stderr}\n{out:#}");
    let kept = format!("document changed since run {run} wrote it: kept");
    assert_eq!(
        whys(&out),
        [
            ("sc3.json", kept.as_str()),
            ("sc3.json", "original path is occupied: sc3.json")
        ],
        "{out:#}"
    );
}

/// An item someone put back by hand, unchanged, is already in place: nothing to do, no
/// refusal.
#[test]
fn an_item_put_back_by_hand_is_already_in_place() {
    let (_tmp, s, run) = repaired_demo();
    std::fs::rename(
        s.join(".set-aside").join(&run).join("torn.json"),
        s.join("torn.json"),
    )
    .unwrap();
    // A thread record given its previous bytes back by hand (the copy stays in the run).
    let record = "beta/runtime/threads/th-lost.json";
    std::fs::copy(s.join(".set-aside").join(&run).join(record), s.join(record)).unwrap();
    let (code, out, stderr) = doctor(
        &s,
        &["--restore", &run, "--item", "torn.json", "--item", record],
    );
    assert_eq!(code, 0, "{stderr}\n{out:#}");
    assert_eq!(
        out["skipped"],
        serde_json::json!([
            { "path": "torn.json", "rule": "R1", "why": "already in place" },
            { "path": record, "rule": "R4", "why": "already in place" },
        ]),
        "{out:#}"
    );
    assert!(out["plan"]["actions"].as_array().unwrap().is_empty());
}

/// The restore of a store the doctor set aside (with its digest), cut short: midway (some
/// entries back at the path, the owner lock still in the run) it is finished; after its last
/// entry moved (an empty directory left in the run) it is already in place. A store changed in
/// the run is refused, not taken for one cut short.
#[test]
fn a_store_restore_cut_short_is_finished_and_a_changed_store_is_refused() {
    let store = "epsilon/runtime";
    let restore = |tamper: &dyn Fn(&Path, &Path)| {
        let (_tmp, s) = demo_with_old_artifacts();
        let before = tree(&s.join(store));
        let (_, repair, _) = doctor(&s, &["--repair-sessions"]);
        let run = repair["run"].as_str().unwrap().to_owned();
        let in_run = s.join(".set-aside").join(&run).join(store);
        std::fs::create_dir_all(s.join(store)).unwrap();
        tamper(&in_run, &s.join(store));
        let (code, out, stderr) = doctor(&s, &["--restore", &run, "--item", store]);
        let ok = s.join(store).is_dir() && tree(&s.join(store)) == before;
        (code, out, stderr, ok)
    };

    let (code, out, stderr, ok) = restore(&|in_run, at| {
        for name in ["owner.json", "state.json"] {
            std::fs::rename(in_run.join(name), at.join(name)).unwrap();
        }
    });
    assert_eq!(code, 0, "{stderr}\n{out:#}");
    assert_eq!(out["plan"]["actions"][0]["path"], store, "{out:#}");
    assert!(ok, "the store is whole at its path: {out:#}");

    let (code, out, stderr, ok) = restore(&|in_run, at| {
        std::fs::remove_dir(at).unwrap();
        std::fs::rename(in_run, at).unwrap();
        std::fs::create_dir(in_run).unwrap();
    });
    assert_eq!(code, 0, "{stderr}\n{out:#}");
    assert_eq!(out["skipped"][0]["why"], "already in place", "{out:#}");
    assert!(ok);

    let (code, out, _, _) = restore(&|in_run, at| {
        std::fs::remove_dir(at).unwrap();
        std::fs::write(in_run.join("extra.json"), "{}").unwrap();
    });
    assert_eq!(code, 1, "{out:#}");
    assert!(
        out["skipped"][0]["why"]
            .as_str()
            .unwrap()
            .ends_with("epsilon/runtime does not match its manifest line: kept"),
        "{out:#}"
    );

    // A store without an owner lock file leaves no trace of the store-move protocol: split
    // between its path and the run, it is not taken for a restore cut short. (The doctor now
    // creates the lock file to hold such a store for its move; a run the app made, or an older
    // doctor, has none: it is taken out of the run here.)
    let tmp = tempfile::tempdir().unwrap();
    let s = tmp.path().join("S");
    std::fs::create_dir_all(s.join(".late-usage")).unwrap();
    crate::stores::write(
        &s,
        "nl/runtime/owner.json",
        crate::stores::pretty(
            &serde_json::json!({ "owner_id": crate::stores::owner_id("nl/runtime") }),
        ),
    );
    crate::stores::write(
        &s,
        "nl/runtime/state.json",
        crate::stores::pretty(&serde_json::json!({ "schema_version": 2, "next_seq": 1 })),
    );
    let (_, repair, _) = doctor(&s, &["--repair-sessions"]);
    let run = repair["run"].as_str().unwrap().to_owned();
    let in_run = s.join(".set-aside").join(&run).join("nl/runtime");
    assert!(in_run.join("state.json").is_file(), "{repair:#}");
    std::fs::remove_file(in_run.join("runtime-process.owner.lock")).unwrap();
    std::fs::create_dir_all(s.join("nl/runtime")).unwrap();
    std::fs::rename(in_run.join("state.json"), s.join("nl/runtime/state.json")).unwrap();
    let (code, out, _) = doctor(&s, &["--restore", &run]);
    assert_eq!(code, 1, "{out:#}");
    assert!(
        out["skipped"][0]["why"]
            .as_str()
            .unwrap()
            .ends_with("nl/runtime does not match its manifest line: kept"),
        "{out:#}"
    );
}

/// A restore sets aside the documents its own run's recoveries wrote, and not those of a later
/// run.
#[test]
fn a_restore_sets_aside_only_the_documents_its_own_run_recovered() {
    let tmp = tempfile::tempdir().unwrap();
    let s = tmp.path().join("S");
    let first = recovered_sc3(&s);
    crate::stores::store_with_thread(&s, "sb4/runtime", "sc4", None, 1);
    let (code, second, stderr) = doctor(&s, &["--repair-sessions"]);
    assert_eq!(code, 0, "{stderr}");
    assert_ne!(second["run"].as_str(), Some(first.as_str()));
    assert!(s.join("sc4.json").is_file(), "{second:#}");

    // By item: the recovered document alone is a path the run names.
    let (code, one, stderr) = doctor(
        &s,
        &["--restore", &first, "--item", "sc3.json", "--dry-run"],
    );
    assert_eq!(code, 0, "{stderr}\n{one:#}");
    assert_eq!(one["plan"]["actions"][0]["path"], "sc3.json", "{one:#}");
    assert_eq!(one["plan"]["actions"].as_array().map(Vec::len), Some(1));

    let (code, out, stderr) = doctor(&s, &["--restore", &first, "--dry-run"]);
    assert_eq!(code, 0, "{stderr}\n{out:#}");
    let planned: Vec<(&str, &str)> = out["plan"]["actions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| (a["action"].as_str().unwrap(), a["path"].as_str().unwrap()))
        .collect();
    assert_eq!(
        planned,
        [
            ("set_aside", "sc3.json"),
            ("restore", "sb2/runtime/threads/sc3.json")
        ],
        "{out:#}"
    );
}

/// A restore that gives a thread record its previous bytes back first sets aside (never
/// deletes) the temporary file an interrupted write of that record left beside it, and nothing
/// else: not the temporary file of another record, not a directory of that name. A directory it
/// would look in that is gone is no error.
#[test]
fn a_restore_sets_aside_the_interrupted_write_beside_a_record_it_rewrites() {
    let tmp = tempfile::tempdir().unwrap();
    let s = tmp.path().join("S");
    let run = recovered_sc3(&s);
    let threads = s.join("sb2/runtime/threads");
    let ours = "sb2/runtime/threads/.sc3.json.doctor-tmp-9999999-1";
    std::fs::write(s.join(ours), "half a record").unwrap();
    std::fs::write(threads.join(".other.json.doctor-tmp-9999999-2"), "not ours").unwrap();
    std::fs::create_dir(threads.join(".sc3.json.doctor-tmp-9999999-3")).unwrap();

    let (code, dry, stderr) = doctor(&s, &["--restore", &run, "--dry-run"]);
    assert_eq!(code, 0, "{stderr}\n{dry:#}");
    assert_eq!(
        dry["interrupted_writes"],
        serde_json::json!([ours]),
        "{dry:#}"
    );
    let first = &dry["plan"]["actions"][0];
    assert_eq!(
        (
            first["action"].as_str(),
            first["kind"].as_str(),
            first["path"].as_str()
        ),
        (Some("set_aside"), Some("temporary_file"), Some(ours)),
        "{dry:#}"
    );

    let (code, out, stderr) = doctor(&s, &["--restore", &run]);
    assert_eq!(code, 0, "{stderr}\n{out:#}");
    assert!(!s.join(ours).exists());
    let aside = s.join(".set-aside").join(out["run"].as_str().unwrap());
    assert_eq!(
        std::fs::read_to_string(aside.join(ours)).unwrap(),
        "half a record"
    );
    assert!(threads.join(".other.json.doctor-tmp-9999999-2").is_file());
    assert!(threads.join(".sc3.json.doctor-tmp-9999999-3").is_dir());

    // Its directory gone, the record's restore is still planned, and the look for temporary
    // files beside it reports nothing.
    let tmp = tempfile::tempdir().unwrap();
    let s = tmp.path().join("S");
    let run = recovered_sc3(&s);
    std::fs::remove_dir_all(s.join("sb2/runtime/threads")).unwrap();
    let (_, dry, stderr) = doctor(&s, &["--restore", &run, "--dry-run"]);
    assert_eq!(
        dry["plan"]["actions"][1]["path"], "sb2/runtime/threads/sc3.json",
        "{stderr}\n{dry:#}"
    );
    assert_eq!(dry["summary"]["errors"], serde_json::json!([]), "{dry:#}");
}

/// Issue 21: a file named like the doctor's temporary file whose writer is gone may be a host's
/// newest complete save (a host writing with the same library died between fsync and rename),
/// so the sessions pack never deletes it: a repair sets it aside (kind `temporary_file`, a
/// manifest line and a receipt), in S, in a store's `threads/` and in `.reconcile/`, and a
/// restore of that run puts each back byte for byte. The app's own temporaries (`.tmp` and six
/// characters, platforms.md §6) are the app's: left where they are.
#[test]
fn a_file_named_like_an_interrupted_write_is_set_aside_and_restored_never_deleted() {
    let tmp = tempfile::tempdir().unwrap();
    let s = tmp.path().join("S");
    crate::stores::write(
        &s,
        "alpha.json",
        crate::stores::pretty(&crate::stores::document("alpha")),
    );
    crate::stores::store_with_thread(&s, "alpha/runtime", "th-a", Some("alpha"), 0);
    let save = crate::stores::pretty(&crate::stores::document("alpha"));
    let temps: [(&str, &[u8]); 4] = [
        (".alpha.json.doctor-tmp-9999999-0", &save),
        (
            "alpha/runtime/threads/.th-a.json.doctor-tmp-9999999-1",
            b"a thread record",
        ),
        (".reconcile/.last.json.doctor-tmp-9999999-2", b"{\"half\":"),
        // A purge record a kill left before its rename: no deletion began under it.
        (
            ".reconcile/purge-pending/.20261101T000000Z-abcdef.json.doctor-tmp-9999999-3",
            b"{\"run\":",
        ),
    ];
    for (path, bytes) in temps {
        crate::stores::write(&s, path, bytes);
    }
    let app_temps = [".tmpAb12Cd", "alpha/runtime/threads/.tmpXy34Zw"];
    for path in app_temps {
        crate::stores::write(&s, path, b"the app's");
    }
    let before = tree(&s);

    let (code, dry, stderr) = doctor(&s, &["--repair-sessions", "--dry-run"]);
    assert_eq!(code, 0, "{stderr}\n{dry:#}");
    let (code, out, stderr) = doctor(&s, &["--repair-sessions"]);
    assert_eq!(code, 0, "{stderr}\n{out:#}");
    assert_eq!(out["plan"], dry["plan"], "dry run = real run");
    let mut want: Vec<&str> = temps.iter().map(|(p, _)| *p).collect();
    want.sort();
    assert_eq!(
        out["interrupted_writes"],
        serde_json::json!(want),
        "{out:#}"
    );
    let run = out["run"].as_str().unwrap();
    let aside = s.join(".set-aside").join(run);
    for (path, bytes) in temps {
        assert!(!s.join(path).exists(), "{path} moved");
        assert_eq!(std::fs::read(aside.join(path)).unwrap(), bytes, "{path}");
    }
    for path in app_temps {
        assert_eq!(std::fs::read(s.join(path)).unwrap(), b"the app's", "{path}");
    }
    let manifest = std::fs::read_to_string(aside.join("MANIFEST.jsonl")).unwrap();
    let lines: Vec<Value> = manifest
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), temps.len(), "{manifest}");
    for l in &lines {
        assert_eq!(
            (&l["rule"], &l["kind"]),
            (&"doctor".into(), &"temporary_file".into())
        );
    }
    let receipts = std::fs::read_to_string(s.join(".reconcile/receipts.jsonl")).unwrap();
    for (path, _) in temps {
        assert!(
            receipts.contains(&format!(
                r#""action":"set_aside","path":"{path}","outcome":"applied""#
            )),
            "{path}: {receipts}"
        );
    }

    let (code, back, stderr) = doctor(&s, &["--restore", run]);
    assert_eq!(code, 0, "{stderr}\n{back:#}");
    assert_admin_valid(&back);
    let after = tree(&s);
    for path in temps.iter().map(|(p, _)| *p).chain(app_temps) {
        let (was, is) = (before.get(Path::new(path)), after.get(Path::new(path)));
        assert!(was.is_some() && is == was, "{path} is back as it was");
    }
}

#[test]
fn restore_refuses_an_occupied_path_and_a_tampered_item() {
    let (_tmp, s, run) = repaired_demo();
    std::fs::write(s.join("torn.json"), "a new torn.json written since").unwrap();
    std::fs::write(
        s.join(".set-aside").join(&run).join("garbage.json"),
        "tampered",
    )
    .unwrap();
    let (code, out, _) = doctor(
        &s,
        &[
            "--restore",
            &run,
            "--item",
            "torn.json",
            "--item",
            "garbage.json",
            "--item",
            "mismatch.json",
        ],
    );
    assert_eq!(code, 1, "a restore that refuses an item fails");
    let skipped = out["skipped"].as_array().unwrap();
    let why = |p: &str| {
        skipped
            .iter()
            .find(|k| k["path"] == p)
            .map(|k| k["why"].as_str().unwrap().to_owned())
    };
    assert_eq!(
        why("torn.json").as_deref(),
        Some("original path is occupied: torn.json")
    );
    assert!(why("garbage.json")
        .unwrap()
        .contains("does not match its manifest line"));
    let restored = planned_paths(&out);
    assert_eq!(restored, ["mismatch.json"], "--item restricts the restore");
    assert_eq!(
        std::fs::read_to_string(s.join("torn.json")).unwrap(),
        "a new torn.json written since"
    );

    let (code, _, stderr) = doctor(&s, &["--restore", &run, "--item", "nope.json"]);
    assert_eq!(code, 2);
    assert!(stderr.contains("has no item nope.json"), "{stderr}");
    let (code, _, stderr) = doctor(&s, &["--restore", "20990101T000000Z-abcdef"]);
    assert_eq!(code, 2);
    assert!(stderr.contains("MANIFEST.jsonl does not exist"), "{stderr}");
}

/// An original path taken since by an item of another kind (a directory where a document was,
/// a file where a directory was) is occupied, and said to be; and so is a set-aside item
/// replaced by one of another kind said not to match its line.
#[test]
fn restore_refuses_a_path_taken_by_an_item_of_another_kind() {
    let (_tmp, s, run) = repaired_demo();
    let in_run = s.join(".set-aside").join(&run);
    assert!(in_run.join("zeta").is_dir() && in_run.join("torn.json").is_file());
    std::fs::create_dir(s.join("torn.json")).unwrap();
    std::fs::write(s.join("zeta"), "a file where the directory was").unwrap();
    std::fs::remove_file(in_run.join("garbage.json")).unwrap();
    std::fs::create_dir(in_run.join("garbage.json")).unwrap();

    let (code, out, _) = doctor(&s, &["--restore", &run, "--dry-run"]);
    assert_eq!(code, 1, "{out:#}");
    let skipped = whys(&out);
    let run_garbage =
        format!(".set-aside/{run}/garbage.json does not match its manifest line: kept");
    for (path, why) in [
        ("torn.json", "original path is occupied: torn.json"),
        ("zeta", "original path is occupied: zeta"),
        ("garbage.json", run_garbage.as_str()),
    ] {
        assert!(skipped.contains(&(path, why)), "{path}: {skipped:#?}");
    }
}

#[test]
fn purge_deletes_matching_runs_and_refuses_tampered_ones_unless_forced() {
    let (_tmp, s) = demo_with_old_artifacts();
    let (_, first, _) = doctor(&s, &["--repair-sessions"]);
    let first = first["run"].as_str().unwrap().to_owned();
    // A second run with something to set aside, then tamper with it.
    std::fs::write(s.join("late.json"), "not json").unwrap();
    let (_, second, _) = doctor(&s, &["--repair-sessions"]);
    let second = second["run"].as_str().unwrap().to_owned();
    std::fs::write(
        s.join(".set-aside").join(&second).join("extra.txt"),
        "not in the manifest",
    )
    .unwrap();

    let (code, dry, _) = doctor(
        &s,
        &["--purge-set-aside", "--older-than", "0s", "--dry-run"],
    );
    assert_eq!(code, 0);
    assert_admin_valid(&dry);
    assert_eq!(
        common::set_aside_runs(&s).len(),
        2,
        "a dry purge deletes nothing"
    );

    let (code, out, _) = doctor(&s, &["--purge-set-aside", "--older-than", "0s"]);
    assert_eq!(code, 0);
    assert_admin_valid(&out);
    assert_eq!(
        common::set_aside_runs(&s),
        std::slice::from_ref(&second),
        "the matching run is purged, the tampered one kept"
    );
    let skipped = &out["skipped"][0];
    assert!(
        skipped["why"]
            .as_str()
            .unwrap()
            .contains("extra.txt is not in the manifest"),
        "{skipped}"
    );
    assert!(out["summary"]["bytes_freed"].as_u64().unwrap() > 0);
    let receipts = std::fs::read_to_string(s.join(".reconcile/receipts.jsonl")).unwrap();
    let purge = receipts
        .lines()
        .find(|l| l.contains("\"action\":\"purge\""))
        .expect("the purge is receipted");
    assert!(
        purge.contains(&first) && purge.contains("\"bytes_freed\":"),
        "{purge}"
    );

    let (_, young, _) = doctor(&s, &["--purge-set-aside", "--older-than", "14d", "--force"]);
    assert!(
        young["plan"]["actions"].as_array().unwrap().is_empty(),
        "younger runs are kept"
    );
    let (_, forced, _) = doctor(&s, &["--purge-set-aside", "--older-than", "0s", "--force"]);
    assert_eq!(forced["summary"]["runs_purged"], 1);
    assert!(common::set_aside_runs(&s).is_empty());
}

#[test]
fn purge_refuses_a_partial_run_and_accepts_one_a_restore_emptied() {
    let (_tmp, s, run) = repaired_demo();
    doctor(&s, &["--restore", &run]);
    // Everything moved back: the run holds previous versions and its manifest; it still matches.
    std::fs::write(s.join("late.json"), "not json").unwrap();
    let (_, rep2, _) = doctor(&s, &["--repair-sessions"]);
    let run2 = rep2["run"].as_str().unwrap().to_owned();
    std::fs::remove_file(s.join(".set-aside").join(&run2).join("late.json")).unwrap();
    let (_, out, _) = doctor(&s, &["--purge-set-aside", "--older-than", "0s"]);
    let purged = planned_paths(&out);
    assert!(
        purged.contains(&format!(".set-aside/{run}").as_str()),
        "{out:#}"
    );
    assert!(
        !purged.contains(&format!(".set-aside/{run2}").as_str()),
        "a partial run is refused: {out:#}"
    );
    assert!(out["skipped"].as_array().unwrap().iter().any(|k| k["why"]
        .as_str()
        .unwrap()
        .contains("is missing (a partial run)")));
}

/// A fresh demo store repaired, then changed by `tamper(S, run)`: whether a dry purge of that
/// run would delete it (`Ok`) or why it keeps it (`Err`).
fn purge_verdict(tamper: impl FnOnce(&Path, &Path)) -> Result<(), String> {
    let (_tmp, s, run) = repaired_demo();
    tamper(&s, &s.join(".set-aside").join(&run));
    let (_, out, stderr) = doctor(
        &s,
        &["--purge-set-aside", "--older-than", "0s", "--dry-run"],
    );
    let at = format!(".set-aside/{run}");
    let planned = out["plan"]["actions"]
        .as_array()
        .unwrap_or_else(|| panic!("{stderr}"))
        .iter()
        .any(|a| a["path"] == at.as_str());
    let why = out["skipped"]
        .as_array()
        .unwrap()
        .iter()
        .find(|k| k["path"] == at.as_str())
        .map(|k| k["why"].as_str().unwrap().to_owned());
    match (planned, why) {
        (true, None) => Ok(()),
        (false, Some(why)) => Err(why),
        _ => panic!("{out:#}"),
    }
}

#[track_caller]
fn refused(verdict: Result<(), String>, says: &str) {
    let why = verdict.expect_err("the purge keeps the run");
    assert!(why.contains(says), "{why}");
}

/// What a purge accepts as a run matching its manifest, item by item: an item where a kill or
/// a later run left it is accounted for; anything changed, replaced or unlisted is not.
#[test]
fn purge_accounts_for_each_item_where_a_kill_or_a_later_run_left_it() {
    let store = "epsilon/runtime";
    // An item changed in the run.
    let why = purge_verdict(|_, run| std::fs::write(run.join("torn.json"), "changed").unwrap());
    refused(why, "torn.json does not match its manifest line)");

    // A store restore cut short before the emptied directory in the run went: whole at its
    // path, an empty directory in the run.
    purge_verdict(|s, run| {
        std::fs::create_dir_all(s.join("epsilon")).unwrap();
        std::fs::rename(run.join(store), s.join(store)).unwrap();
        std::fs::create_dir(run.join(store)).unwrap();
    })
    .unwrap();
    // An empty directory in the run and nothing at the path is not that.
    let why = purge_verdict(|_, run| {
        std::fs::remove_dir_all(run.join(store)).unwrap();
        std::fs::create_dir(run.join(store)).unwrap();
    });
    refused(why, "epsilon/runtime does not match its manifest line)");

    // A kill between the manifest line and the move: the item unchanged at its path.
    purge_verdict(|s, run| std::fs::rename(run.join("torn.json"), s.join("torn.json")).unwrap())
        .unwrap();
    // ... changed there, it is missing from the run.
    let why = purge_verdict(|s, run| {
        std::fs::remove_file(run.join("torn.json")).unwrap();
        std::fs::write(s.join("torn.json"), "another").unwrap();
    });
    refused(why, "torn.json is missing (a partial run))");

    // The next run moved it into its own run.
    purge_verdict(|s, run| {
        let next = s.join(".set-aside/20261129T130000Z-abcdef");
        std::fs::create_dir_all(&next).unwrap();
        std::fs::rename(run.join("torn.json"), next.join("torn.json")).unwrap();
    })
    .unwrap();

    // A temporary file of a copy a kill cut short is the doctor's own; a directory of that
    // name, or any other file, is not in the manifest.
    let temp = ".torn.json.doctor-tmp-9999999-1";
    purge_verdict(|_, run| std::fs::write(run.join(temp), "half").unwrap()).unwrap();
    let why = purge_verdict(|_, run| std::fs::create_dir(run.join(temp)).unwrap());
    refused(why, &format!("{temp} is not in the manifest)"));
    // Nor is an empty directory.
    let why = purge_verdict(|_, run| std::fs::create_dir(run.join("stray")).unwrap());
    refused(why, "stray is not in the manifest)");

    // Entries of .set-aside/ that are not runs are left alone, by name.
    let (_tmp, s) = demo_with_old_artifacts();
    std::fs::create_dir_all(s.join(".set-aside/notarun")).unwrap();
    std::fs::write(s.join(".set-aside/20261128T120000Z-abcdef"), "a file").unwrap();
    let (_, out, _) = doctor(
        &s,
        &["--purge-set-aside", "--older-than", "0s", "--dry-run"],
    );
    for p in [".set-aside/notarun", ".set-aside/20261128T120000Z-abcdef"] {
        assert!(
            out["skipped"]
                .as_array()
                .unwrap()
                .iter()
                .any(|k| k["path"] == p && k["why"] == "not a set-aside run: left alone"),
            "{p}: {out:#}"
        );
    }
}

#[test]
fn restore_never_touches_a_held_store() {
    let (_tmp, s, run) = repaired_demo();
    let record = s.join("beta/runtime/threads/th-lost.json");
    let rewritten = std::fs::read(&record).unwrap();
    let _host = common::Holder::spawn(&[s.join("beta/runtime/runtime-process.owner.lock")]);
    let (code, out, _) = doctor(
        &s,
        &[
            "--restore",
            &run,
            "--item",
            "beta/runtime/threads/th-lost.json",
        ],
    );
    assert_eq!(code, 1, "a restore that could not put an item back fails");
    assert_eq!(out["outcomes"][0]["outcome"], "skipped", "{out:#}");
    assert_eq!(
        out["outcomes"][0]["why"],
        "store is in use by another process"
    );
    assert_eq!(
        std::fs::read(&record).unwrap(),
        rewritten,
        "the held store's record is untouched"
    );
}

/// The outcome and why of the planned action on `path` in an admin report.
fn outcome_of(out: &Value, path: &str) -> (Value, Value) {
    let seq = out["plan"]["actions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|a| a["path"] == path)
        .unwrap_or_else(|| panic!("{path} is not planned: {out:#}"))["seq"]
        .clone();
    let o = out["outcomes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|o| o["seq"] == seq)
        .unwrap_or_else(|| panic!("{path} has no outcome: {out:#}"));
    (o["outcome"].clone(), o["why"].clone())
}

/// A temporary file housekeeping set aside goes back only where nobody holds anything, as it
/// was taken: not into the `threads/` of a store a host now holds (invariants.md: a held store
/// and anything under it are skipped), not beside the document of a session that is now live.
/// Both are skipped with their reason and left in the run; once the holders are gone, both go
/// back.
#[test]
fn a_temporary_file_is_not_restored_under_a_holder() {
    let tmp = tempfile::tempdir().unwrap();
    let s = tmp.path().join("S");
    crate::stores::write(
        &s,
        "alpha.json",
        crate::stores::pretty(&crate::stores::document("alpha")),
    );
    crate::stores::store_with_thread(&s, "alpha/runtime", "th-a", Some("alpha"), 0);
    let in_store = "alpha/runtime/threads/.th-a.json.doctor-tmp-9999999-1";
    let beside = ".alpha.json.doctor-tmp-9999999-0";
    crate::stores::write(&s, in_store, b"a thread record");
    crate::stores::write(&s, beside, b"a document");
    crate::stores::write(&s, ".late-usage/alpha.live", b"");
    let (code, out, stderr) = doctor(&s, &["--repair-sessions"]);
    assert_eq!(code, 0, "{stderr}\n{out:#}");
    let run = out["run"].as_str().unwrap().to_owned();
    assert!(
        !s.join(in_store).exists() && !s.join(beside).exists(),
        "{out:#}"
    );

    let holder = common::Holder::spawn(&[
        s.join("alpha/runtime/runtime-process.owner.lock"),
        s.join(".late-usage/alpha.live"),
    ]);
    let (code, out, _) = doctor(&s, &["--restore", &run]);
    assert_eq!(code, 1, "a restore that could not put an item back fails");
    assert_eq!(
        outcome_of(&out, beside),
        ("skipped".into(), "session is live".into()),
        "{out:#}"
    );
    assert_eq!(
        outcome_of(&out, in_store),
        ("skipped".into(), "session is live".into()),
        "{out:#}"
    );
    assert!(!s.join(in_store).exists() && !s.join(beside).exists());

    // The store alone held: the file in it stays; the one beside the document goes back.
    drop(holder);
    let holder = common::Holder::spawn(&[s.join("alpha/runtime/runtime-process.owner.lock")]);
    let (code, out, _) = doctor(&s, &["--restore", &run]);
    assert_eq!(code, 1, "{out:#}");
    assert_eq!(
        outcome_of(&out, in_store),
        (
            "skipped".into(),
            "store is in use by another process".into()
        ),
        "{out:#}"
    );
    assert_eq!(
        outcome_of(&out, beside),
        ("applied".into(), Value::Null),
        "{out:#}"
    );
    assert!(!s.join(in_store).exists(), "never into a held store");
    assert_eq!(std::fs::read(s.join(beside)).unwrap(), b"a document");

    drop(holder);
    let (code, out, stderr) = doctor(&s, &["--restore", &run]);
    assert_eq!(code, 0, "{stderr}\n{out:#}");
    assert_eq!(std::fs::read(s.join(in_store)).unwrap(), b"a thread record");
}

/// A host writing a new thread record with the doctor's library died before the rename: its
/// store's `threads/` holds only that temporary file. The first repair sets the file aside (the
/// store holds work until then), the second sets the now empty store aside. Restoring the first
/// run alone must not create `a/runtime/threads/` (the doctor never creates missing directories
/// in a store): that skeleton would stand at the store's path and make the restore of the
/// store itself refuse it as occupied. The file is refused with the reason, dry and real, and
/// once the store is back it goes back into it.
#[test]
fn a_temporary_file_is_not_restored_into_a_store_that_is_gone() {
    let tmp = tempfile::tempdir().unwrap();
    let s = tmp.path().join("S");
    crate::stores::empty_store(&s, "a/runtime");
    let temp = "a/runtime/threads/.th-new.json.doctor-tmp-9999999-0";
    crate::stores::write(&s, temp, b"a host's newest save");
    crate::stores::write(&s, ".reconcile/receipts.jsonl", b"");
    let (code, first, stderr) = doctor(&s, &["--repair-sessions"]);
    assert_eq!(code, 0, "{stderr}\n{first:#}");
    assert_eq!(first["interrupted_writes"], serde_json::json!([temp]));
    let (code, second, stderr) = doctor(&s, &["--repair-sessions"]);
    assert_eq!(code, 0, "{stderr}\n{second:#}");
    assert_eq!(planned_paths(&second), ["a/runtime"], "{second:#}");
    assert!(!s.join("a").exists(), "{second:#}");
    let (first, second) = (
        first["run"].as_str().unwrap().to_owned(),
        second["run"].as_str().unwrap().to_owned(),
    );

    let why = "its directory a/runtime/threads is gone (restore first the run that set its store \
               aside): kept";
    let (code, dry, _) = doctor(&s, &["--restore", &first, "--dry-run"]);
    assert_eq!(code, 1, "{dry:#}");
    assert_eq!(whys(&dry), [(temp, why)], "{dry:#}");
    let (code, out, _) = doctor(&s, &["--restore", &first]);
    assert_eq!(code, 1, "{out:#}");
    assert_eq!(whys(&out), [(temp, why)], "{out:#}");
    assert!(!s.join("a").exists(), "no store skeleton: {out:#}");

    let (code, out, stderr) = doctor(&s, &["--restore", &second]);
    assert_eq!(code, 0, "{stderr}\n{out:#}");
    let (code, out, stderr) = doctor(&s, &["--restore", &first]);
    assert_eq!(code, 0, "{stderr}\n{out:#}");
    assert_eq!(
        std::fs::read(s.join(temp)).unwrap(),
        b"a host's newest save"
    );
    assert!(s.join("a/runtime/owner.json").is_file());
}

#[test]
fn apply_plan_refuses_actions_no_sessions_rule_plans() {
    let (_tmp, s) = demo_with_old_artifacts();
    let digest = common::sha256_hex(&std::fs::read(s.join("alpha.json")).unwrap());
    let bytes = std::fs::metadata(s.join("alpha.json")).unwrap().len();
    let plan_dir = tempfile::tempdir().unwrap();
    let plan_file = plan_dir.path().join("plan.json");
    for (action, extra) in [("purge", ""), ("set_aside", r#","kind":"document""#)] {
        let path = if action == "purge" {
            "alpha.json"
        } else {
            "checkpoints/alpha.json"
        };
        let rule = if action == "purge" { "purge" } else { "R1" };
        let plan = format!(
            r#"{{"kind":"doctor-plan","schema_version":1,"sessions_dir":{:?},"plan":{{"actions":[{{"seq":1,"rule":"{rule}","rule_name":"x","action":"{action}","path":"{path}"{extra},"reason":"r","precondition":{{"bytes":{bytes},"sha256":"{digest}"}}}}],"deferred":0}}}}"#,
            s.to_string_lossy()
        );
        std::fs::write(&plan_file, plan).unwrap();
        let out = Doctor::new().arg("--apply-plan").arg(&plan_file).run();
        assert_eq!(out.code, Some(2), "{action} {path}");
        let stderr = &out.stderr;
        assert!(
            stderr.contains("not an action the sessions pack plans"),
            "{stderr}"
        );
    }
    assert!(s.join("alpha.json").exists() && s.join("checkpoints/alpha.json").exists());
    assert!(
        !s.join(".set-aside").exists() && !s.join(".reconcile").exists(),
        "nothing was written"
    );
}

// ---- set-aside runs the app wrote --------------------------------------------------------

/// A run id in the app's form (`%Y%m%dT%H%M%SZ-<6 hex>`), weeks before `NOW`.
const APP_RUN: &str = "20261001T120000Z-a1b2c3";

/// A small session store in the app's shape: one readable document, so S looks like a
/// session store. Returns the temp dir (keep it alive) and the canonical S, as the app spells
/// it in its manifests.
fn app_store() -> (tempfile::TempDir, std::path::PathBuf) {
    let tmp = tempfile::tempdir().unwrap();
    std::fs::create_dir(tmp.path().join("S")).unwrap();
    let s = tmp.path().join("S").canonicalize().unwrap();
    let doc = serde_json::json!({
        "schema_version": 1,
        "metadata": {
            "id": "keep",
            "title": "Kept",
            "created_at": "2026-09-01T10:00:00Z",
            "updated_at": "2026-09-01T11:00:00Z",
            "message_count": 1,
            "total_tokens": 3,
            "model": "deepseek-v4",
            "model_provider": "deepseek",
            "workspace": "/home/u/proj",
            "mode": "agent"
        },
        "messages": [{ "role": "user", "content": [{ "type": "text", "text": "hi" }] }]
    });
    std::fs::write(
        s.join("keep.json"),
        serde_json::to_vec_pretty(&doc).unwrap(),
    )
    .unwrap();
    (tmp, s)
}

/// Writes `bytes` at `s/rel`, creating the parents.
fn put(s: &Path, rel: &str, bytes: &[u8]) {
    let p = s.join(rel);
    std::fs::create_dir_all(p.parent().unwrap()).unwrap();
    std::fs::write(p, bytes).unwrap();
}

/// An empty runtime store at `s/rel`, as the app's `open` leaves one.
fn put_store(s: &Path, rel: &str) {
    put(
        s,
        &format!("{rel}/owner.json"),
        b"{\n  \"owner_id\": \"owner_0123456789abcdef0123456789abcdef\"\n}",
    );
    put(
        s,
        &format!("{rel}/state.json"),
        b"{\n  \"schema_version\": 2,\n  \"next_seq\": 1\n}",
    );
    put(s, &format!("{rel}/events.lock"), b"");
    put(s, &format!("{rel}/runtime-process.owner.lock"), b"");
    std::fs::create_dir_all(s.join(rel).join("threads")).unwrap();
}

/// Sets `items` (paths relative to S, with their `detail`) aside as the app does
/// (codewhale-format §9.5): each is renamed to `.set-aside/<run>/<path>`, then a compact line
/// with absolute paths and alphabetical keys is appended to the run's `MANIFEST.jsonl`; a
/// session directory left empty is removed. Returns the tree of S before.
fn app_sets_aside(s: &Path, run: &str, items: &[(&str, Value)]) -> Tree {
    let before = user_tree(s);
    let run_dir = s.join(".set-aside").join(run);
    let mut manifest = String::new();
    for (rel, detail) in items {
        let from = s.join(rel);
        let to = run_dir.join(rel);
        std::fs::create_dir_all(to.parent().unwrap()).unwrap();
        std::fs::rename(&from, &to).unwrap();
        let parent = from.parent().unwrap();
        if parent != s && std::fs::read_dir(parent).unwrap().next().is_none() {
            std::fs::remove_dir(parent).unwrap();
        }
        let line = serde_json::json!({
            "at": "2026-10-01T12:00:00.123456789+00:00",
            "detail": detail,
            "moved_to": to.to_string_lossy(),
            "original": from.to_string_lossy(),
            "reason": "set aside by the app"
        });
        manifest.push_str(&serde_json::to_string(&line).unwrap());
        manifest.push('\n');
    }
    std::fs::write(run_dir.join("MANIFEST.jsonl"), manifest).unwrap();
    before
}

fn detail_of(s: &Path, rel: &str) -> Value {
    let bytes = std::fs::read(s.join(rel)).unwrap();
    serde_json::json!({ "sha256": common::sha256_hex(&bytes), "bytes": bytes.len() })
}

fn status(s: &Path) -> Value {
    let out = Doctor::new()
        .sessions_dir(s)
        .arg("--json")
        .now(NOW)
        .env_remove("CODEWHALE_HOME")
        .run();
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    out.json()
}

#[test]
fn a_run_the_app_wrote_is_listed_and_restored_byte_for_byte() {
    let (_tmp, s) = app_store();
    put_store(&s, "x/runtime");
    put(&s, "torn.json", b"{\"metadata\": {\"id\": \"torn\"");
    let detail = detail_of(&s, "torn.json");
    let before = app_sets_aside(
        &s,
        APP_RUN,
        &[
            ("x/runtime", serde_json::json!({ "kind": "runtime_store" })),
            ("torn.json", detail),
        ],
    );
    assert!(
        !s.join("x").exists(),
        "the app removed the emptied session directory"
    );
    // The app's central receipts are read without error too.
    put(
        &s,
        ".reconcile/receipts.jsonl",
        format!(
            "{}\n",
            serde_json::json!({
                "action": "store_set_aside",
                "at": "2026-10-01T12:00:00Z",
                "moved_to": s.join(".set-aside").join(APP_RUN).join("x/runtime").to_string_lossy(),
                "path": s.join("x/runtime").to_string_lossy(),
                "reason": "empty Runtime store no document binds"
            })
        )
        .as_bytes(),
    );

    let listed = status(&s);
    assert!(
        listed["set_aside_runs"]
            .as_array()
            .unwrap()
            .contains(&serde_json::json!({ "run": APP_RUN, "items": 2 })),
        "the app's run is listed: {listed:#}"
    );

    let (code, dry, stderr) = doctor(&s, &["--restore", APP_RUN, "--dry-run"]);
    assert_eq!(code, 0, "{stderr}");
    assert_admin_valid(&dry);
    let planned: Vec<(String, String, String)> = dry["plan"]["actions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| {
            (
                a["path"].as_str().unwrap().to_owned(),
                a["kind"].as_str().unwrap().to_owned(),
                a["from"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    assert_eq!(
        planned,
        [
            (
                "x/runtime".to_owned(),
                "runtime_store".to_owned(),
                format!(".set-aside/{APP_RUN}/x/runtime")
            ),
            (
                "torn.json".to_owned(),
                "document".to_owned(),
                format!(".set-aside/{APP_RUN}/torn.json")
            ),
        ],
        "absolute paths under S become paths relative to S: {dry:#}"
    );
    assert!(!s.join("x").exists(), "a dry restore writes nothing");
    // An item is named by its path relative to S or as the line spells it.
    let as_written = s.join("torn.json").to_string_lossy().into_owned();
    for (item, planned) in [
        ("x/runtime", "x/runtime"),
        ("torn.json", "torn.json"),
        (as_written.as_str(), "torn.json"),
    ] {
        let (code, one, stderr) = doctor(&s, &["--restore", APP_RUN, "--item", item, "--dry-run"]);
        assert_eq!(code, 0, "{item}: {stderr}");
        let paths = planned_paths(&one);
        assert_eq!(paths, [planned], "{item}: {one:#}");
    }

    let (code, restored, stderr) = doctor(&s, &["--restore", APP_RUN]);
    assert_eq!(code, 0, "{stderr}");
    assert_admin_valid(&restored);
    for o in restored["outcomes"].as_array().unwrap() {
        assert_eq!(o["outcome"], "applied", "{restored:#}");
    }
    assert_eq!(restored["summary"]["items_restored"], 2);
    assert_eq!(
        user_tree(&s),
        before,
        "the store and the document are back at their original paths, byte for byte"
    );

    let (code, again, _) = doctor(&s, &["--restore", APP_RUN]);
    assert_eq!(code, 0, "{again:#}");
    assert!(
        again["plan"]["actions"].as_array().unwrap().is_empty(),
        "a second restore finds nothing to do: {again:#}"
    );
    for k in again["skipped"].as_array().unwrap() {
        assert_eq!(k["why"], "already restored", "{again:#}");
    }
    assert_eq!(again["skipped"].as_array().map(Vec::len), Some(2));
}

/// An app store (no digest) restore cut short midway (some entries back at the path, the
/// owner lock still in the run) is finished by the next restore; a store missing from its run
/// and never restored is refused, by name.
#[test]
fn an_app_store_restore_cut_short_is_finished_and_one_missing_from_its_run_is_refused() {
    let (_tmp, s) = app_store();
    put_store(&s, "x/runtime");
    let before = app_sets_aside(
        &s,
        APP_RUN,
        &[("x/runtime", serde_json::json!({ "kind": "runtime_store" }))],
    );
    let in_run = s.join(".set-aside").join(APP_RUN).join("x/runtime");
    std::fs::create_dir_all(s.join("x/runtime")).unwrap();
    for name in ["owner.json", "state.json"] {
        std::fs::rename(in_run.join(name), s.join("x/runtime").join(name)).unwrap();
    }
    let (code, out, stderr) = doctor(&s, &["--restore", APP_RUN]);
    assert_eq!(code, 0, "{stderr}\n{out:#}");
    assert_eq!(out["plan"]["actions"][0]["path"], "x/runtime", "{out:#}");
    assert_eq!(user_tree(&s), before, "the store is whole at its path");

    let (_tmp, s) = app_store();
    put_store(&s, "x/runtime");
    app_sets_aside(
        &s,
        APP_RUN,
        &[("x/runtime", serde_json::json!({ "kind": "runtime_store" }))],
    );
    std::fs::remove_dir_all(s.join(".set-aside").join(APP_RUN).join("x")).unwrap();
    let (code, out, stderr) = doctor(&s, &["--restore", APP_RUN]);
    assert_eq!(code, 1, "{stderr}\n{out:#}");
    assert_eq!(
        out["skipped"][0]["why"].as_str(),
        Some(format!("missing from the set-aside run: .set-aside/{APP_RUN}/x/runtime").as_str()),
        "{out:#}"
    );
}

#[test]
fn a_run_the_app_wrote_that_cannot_be_verified_is_purged_only_with_force() {
    let (_tmp, s) = app_store();
    put_store(&s, "x/runtime");
    put(&s, "art/artifacts/art_call_1.txt", b"spilled tool output");
    app_sets_aside(
        &s,
        APP_RUN,
        &[
            ("x/runtime", serde_json::json!({ "kind": "runtime_store" })),
            ("art", serde_json::json!({ "kind": "directory" })),
        ],
    );
    // A run of documents only: their digests verify it.
    let digested = "20261002T120000Z-0f0f0f";
    put(&s, "old.json", b"not json");
    let detail = detail_of(&s, "old.json");
    app_sets_aside(&s, digested, &[("old.json", detail)]);

    let (code, first, _) = doctor(&s, &["--purge-set-aside", "--older-than", "1d"]);
    assert_eq!(code, 0);
    assert_admin_valid(&first);
    let purged = planned_paths(&first);
    assert_eq!(purged, [format!(".set-aside/{digested}")], "{first:#}");
    let refused = first["skipped"]
        .as_array()
        .unwrap()
        .iter()
        .find(|k| k["path"] == format!(".set-aside/{APP_RUN}"))
        .unwrap_or_else(|| panic!("the app's run is refused: {first:#}"));
    assert_eq!(
        refused["why"],
        format!("run {APP_RUN} was written by the app and has no digests to verify: pass --force to purge it")
    );
    assert!(
        s.join(".set-aside").join(APP_RUN).exists(),
        "the unverifiable run is kept"
    );
    assert!(!s.join(".set-aside").join(digested).exists());

    let (code, forced, _) = doctor(&s, &["--purge-set-aside", "--older-than", "1d", "--force"]);
    assert_eq!(code, 0);
    assert_admin_valid(&forced);
    assert_eq!(forced["summary"]["runs_purged"], 1, "{forced:#}");
    assert!(forced["plan"]["actions"][0]["reason"]
        .as_str()
        .unwrap()
        .contains("forced although"));
    assert!(common::set_aside_runs(&s).is_empty());
}

#[test]
fn an_app_manifest_line_naming_a_path_outside_s_is_refused_by_name() {
    let (_tmp, s) = app_store();
    put(&s, "torn.json", b"{");
    let run_dir = s.join(".set-aside").join(APP_RUN);
    put(&s, &format!(".set-aside/{APP_RUN}/torn.json"), b"{");
    std::fs::remove_file(s.join("torn.json")).unwrap();
    put(&s, &format!(".set-aside/{APP_RUN}/escape.json"), b"{}");
    let outside = s.parent().unwrap().join("outside.json");
    // `S/../outside.json` with the OS's separator (in a verbatim Windows path, `/` is no
    // separator and `..` would be part of a name).
    let leading_out = format!(
        "{}{sep}..{sep}outside.json",
        s.display(),
        sep = std::path::MAIN_SEPARATOR
    );
    let lines = [
        serde_json::json!({
            "at": "2026-10-01T12:00:00Z",
            "detail": Value::Null,
            "moved_to": run_dir.join("escape.json").to_string_lossy(),
            "original": leading_out.as_str(),
            "reason": "a line that leads out of S"
        }),
        serde_json::json!({
            "at": "2026-10-01T12:00:00Z",
            "detail": Value::Null,
            "moved_to": run_dir.join("torn.json").to_string_lossy(),
            "original": s.join("torn.json").to_string_lossy(),
            "reason": "unreadable document"
        }),
    ];
    let manifest: String = lines.iter().map(|l| format!("{l}\n")).collect();
    std::fs::write(run_dir.join("MANIFEST.jsonl"), manifest).unwrap();

    let (code, out, stderr) = doctor(&s, &["--restore", APP_RUN]);
    assert_eq!(code, 1, "a restore that refuses a line fails: {stderr}");
    assert_admin_valid(&out);
    let why = out["skipped"][0]["why"].as_str().unwrap();
    assert!(
        why.contains(&leading_out) && why.contains("outside the sessions directory"),
        "{out:#}"
    );
    assert!(!outside.exists(), "nothing is written outside S");
    assert!(run_dir.join("escape.json").exists());
    assert_eq!(
        std::fs::read(s.join("torn.json")).unwrap(),
        b"{",
        "an item whose detail is null is restored by what is on disk"
    );

    let (_, purge, _) = doctor(&s, &["--purge-set-aside", "--older-than", "1d"]);
    assert!(
        purge["plan"]["actions"].as_array().unwrap().is_empty(),
        "a run that names paths outside S is not purged without --force: {purge:#}"
    );
}

/// While a purge deletes a set-aside run, directories inside the run are swapped for symlinks
/// to live data that stays inside S (a session directory, a bound store): the delete walks held
/// directory handles checked by device and inode and never follows a link, so the live data is
/// untouched (at most the links themselves go).
#[test]
#[cfg(unix)] // makes symlinks
fn a_purge_never_follows_a_directory_swapped_for_an_inside_symlink() {
    let (_tmp, s, run) = repaired_demo();
    let aside = s.join(".set-aside").join(&run);
    assert!(aside.join("zeta").is_dir() && aside.join("beta/runtime").is_dir());
    let alpha_before = tree(&s.join("alpha"));
    let alpha_doc = std::fs::read(s.join("alpha.json")).unwrap();
    let purge = Doctor::new()
        .sessions_dir(&s)
        .args(["--purge-set-aside", "--older-than", "0s", "--json"])
        .now("2099-01-01T00:00:00Z");
    // MANIFEST.jsonl sorts first: the run's entries are listed, none entered yet.
    let swap = |dir: &str, target: &str| {
        let at = aside.join(dir);
        std::fs::rename(&at, at.with_extension("moved")).unwrap();
        std::os::unix::fs::symlink(target, &at).unwrap();
    };
    let done = purge.run_paused(vec![(
        &format!("delete .set-aside/{run}/MANIFEST.jsonl"),
        Box::new(|| {
            swap("zeta", "../../alpha");
            swap("beta/runtime", "../../../alpha/runtime");
        }),
    )]);
    assert!(done.code.is_some(), "{}", done.stderr);
    assert_eq!(tree(&s.join("alpha")), alpha_before, "{}", done.stdout);
    assert_eq!(std::fs::read(s.join("alpha.json")).unwrap(), alpha_doc);
}

/// A line of the run's manifest that is not a record (whole JSON of no known shape) may have
/// named an item: a restore names it among the skipped (never a silently shorter restore, and
/// the other items still go back), and a purge refuses the run without `--force`. A receipt
/// line that does not parse is reported in the restore's errors. (A torn line, JSON cut short,
/// names nothing moved: `torn_logs.rs`.)
#[test]
fn lines_that_do_not_parse_are_reported_not_dropped() {
    let (_tmp, s) = demo_with_old_artifacts();
    let (code, repair, _) = doctor(&s, &["--repair-sessions"]);
    assert_eq!(code, 0);
    let run = repair["run"].as_str().unwrap().to_owned();
    let manifest = s.join(".set-aside").join(&run).join("MANIFEST.jsonl");
    let mut lines = std::fs::read(&manifest).unwrap();
    lines.extend_from_slice(b"{\"run\": 7}\n");
    std::fs::write(&manifest, &lines).unwrap();
    let receipts = s.join(".reconcile/receipts.jsonl");
    let mut r = std::fs::read(&receipts).unwrap();
    r.extend_from_slice(b"not a receipt\n");
    std::fs::write(&receipts, &r).unwrap();

    let (_, dry, _) = doctor(&s, &["--restore", &run, "--dry-run"]);
    assert_admin_valid(&dry);
    let skipped = dry["skipped"].to_string();
    assert!(
        skipped.contains("MANIFEST.jsonl") && skipped.contains("is not a record"),
        "{dry:#}"
    );
    let errors = dry["summary"]["errors"].to_string();
    assert!(
        errors.contains("receipts.jsonl") && errors.contains("is not a record"),
        "{dry:#}"
    );
    assert!(
        !dry["plan"]["actions"].as_array().unwrap().is_empty(),
        "the items the other lines name are still restored"
    );

    let (code, purge, stderr) = doctor(&s, &["--purge-set-aside", "--older-than", "0s"]);
    assert_eq!(code, 0, "{stderr}");
    assert!(
        purge["plan"]["actions"].as_array().unwrap().is_empty(),
        "{purge:#}"
    );
    assert!(
        purge["skipped"].to_string().contains("is not a record"),
        "{purge:#}"
    );
    assert_eq!(common::set_aside_runs(&s), [run], "the run is kept");
}

// ---- naming and listing set-aside runs, through the library ------------------------------

/// The options of a library call on `s` at [`NOW`], reading nothing outside S.
fn lib_opts(s: &Path) -> doctor::RepairOptions {
    let mut o = crate::common::repair_options(s);
    o.clock = store::Clock::Fixed(store::Timestamp::parse(NOW).unwrap());
    o.codewhale_home = None;
    o
}

#[track_caller]
fn assert_list_valid(report: &impl serde::Serialize) {
    let v = serde_json::to_value(report).unwrap();
    let schema: Value = serde_json::from_str(include_str!(
        "../../../../docs/schemas/list-output.schema.json"
    ))
    .unwrap();
    let validator = jsonschema::draft202012::options()
        .should_validate_formats(true)
        .build(&schema)
        .unwrap();
    let errs: Vec<String> = validator
        .iter_errors(&v)
        .map(|e| format!("{}: {e}", e.instance_path()))
        .collect();
    assert!(errs.is_empty(), "{errs:?}\n{v:#}");
}

/// The lines of run `run`'s manifest.
fn manifest_lines(s: &Path, run: &str) -> Vec<Value> {
    std::fs::read_to_string(s.join(".set-aside").join(run).join("MANIFEST.jsonl"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// The items still set aside of run `run`, as plain `doctor` reports them.
fn status_items(opts: &doctor::RepairOptions, run: &str) -> u64 {
    let status = doctor::status(opts).unwrap();
    status
        .set_aside_runs
        .iter()
        .find(|r| r.run == run)
        .unwrap_or_else(|| panic!("{run} is not listed: {status:?}"))
        .items
}

#[test]
fn a_repairs_run_is_listed_numbered_and_restored_by_number() {
    use doctor::ItemState;
    let (_tmp, s) = demo_with_old_artifacts();
    let opts = lib_opts(&s);
    let repair = doctor::repair_sessions(&opts).unwrap();
    let run = repair.run.clone();
    let lines = manifest_lines(&s, &run);
    let n = lines.len() as u64;

    let runs = doctor::list_runs(&opts).unwrap();
    assert_list_valid(&runs);
    let mut rules: Vec<String> = lines
        .iter()
        .map(|l| l["rule"].as_str().unwrap().to_owned())
        .collect();
    rules.sort();
    rules.dedup();
    let bytes: u64 = lines.iter().map(|l| l["bytes"].as_u64().unwrap()).sum();
    assert_eq!(
        runs.runs,
        [doctor::RunEntry {
            run: run.clone(),
            at: Some(NOW.into()),
            rules,
            items: n,
            bytes,
            restored: 0,
            written_by_app: false,
        }]
    );
    assert!(runs.errors.is_empty(), "{:?}", runs.errors);
    let human = runs.render_human();
    assert!(
        human.contains(&format!("{n} items")) && human.ends_with("1 set-aside run\n"),
        "{human}"
    );

    // `latest` and the path the notice line prints name the run.
    let notice = repair.summary.set_aside_path.clone().unwrap();
    assert_eq!(notice, format!(".set-aside/{run}"));
    let absolute = s.join(&notice);
    for given in [
        run.clone(),
        "latest".into(),
        notice.clone(),
        format!("{notice}/"),
        absolute.display().to_string(),
        format!("{}/", absolute.display()),
    ] {
        assert_eq!(doctor::resolve_run(&opts, &given).unwrap(), run, "{given}");
    }

    let listing = doctor::list_run(&opts, "latest").unwrap();
    assert_list_valid(&listing);
    assert_eq!(listing.run, run);
    assert_eq!(listing.at.as_deref(), Some(NOW));
    let numbers: Vec<u64> = listing.items.iter().map(|i| i.number).collect();
    assert_eq!(numbers, (1..=n).collect::<Vec<_>>(), "numbered from 1");
    let originals: Vec<&str> = listing.items.iter().map(|i| i.original.as_str()).collect();
    let in_manifest: Vec<&str> = lines
        .iter()
        .map(|l| l["original"].as_str().unwrap())
        .collect();
    assert_eq!(originals, in_manifest, "in manifest order");
    assert!(
        listing.items.iter().all(|i| i.state == ItemState::SetAside),
        "{listing:#?}"
    );
    assert!(listing.refused.is_empty() && listing.errors.is_empty());
    assert_eq!(
        doctor::list_run(&opts, &format!("{notice}/"))
            .unwrap()
            .items,
        listing.items
    );
    assert_eq!(status_items(&opts, &run), n);

    // Restore one document by its number, naming the run by its path.
    let doc = listing
        .items
        .iter()
        .find(|i| i.kind == Some(plan::ItemKind::Document))
        .expect("the repair set a document aside");
    let restored = doctor::restore(&opts, &notice, &[doc.number.to_string()]).unwrap();
    assert_admin_valid(&serde_json::to_value(&restored).unwrap());
    assert!(!restored.failed(), "{}", restored.render_human());
    assert_eq!(restored.summary.items_restored, 1);
    let paths: Vec<&str> = restored
        .plan
        .actions
        .iter()
        .filter(|a| a.rule != "doctor")
        .map(|a| a.path.as_str())
        .collect();
    assert_eq!(paths, [doc.original.as_str()]);
    assert!(s.join(&doc.original).is_file(), "{} is back", doc.original);

    let after = doctor::list_run(&opts, &run).unwrap();
    assert_list_valid(&after);
    for item in &after.items {
        let want = if item.number == doc.number {
            ItemState::Restored
        } else {
            ItemState::SetAside
        };
        assert_eq!(item.state, want, "{item:?}");
    }
    let human = after.render_human();
    assert!(human.contains(", 1 restored, "), "{human}");
    assert_eq!(doctor::list_runs(&opts).unwrap().runs[0].restored, 1);
    assert_eq!(
        status_items(&opts, &run),
        n - 1,
        "status counts the items still set aside"
    );
}

#[test]
fn an_unknown_run_or_item_number_is_an_error_with_exit_code_2() {
    let (_tmp, s) = demo_with_old_artifacts();
    let opts = lib_opts(&s);
    match doctor::resolve_run(&opts, "latest") {
        Err(e @ doctor::Error::NoSuchRun { .. }) => {
            assert_eq!(e.exit_code(), 2);
            assert!(e.to_string().contains("latest"), "{e}");
        }
        other => panic!("no run is latest yet: {other:?}"),
    }
    let none = doctor::list_runs(&opts).unwrap();
    assert_list_valid(&none);
    assert!(none.render_human().ends_with("no set-aside runs\n"));

    let run = doctor::repair_sessions(&opts).unwrap().run;
    let before = user_tree(&s);
    for given in [
        "nope",
        "20990101T000000Z-abcdef",
        ".set-aside/nope",
        "/elsewhere/.set-aside/20261129T120000Z-a1b2c3",
    ] {
        for e in [
            doctor::list_run(&opts, given).unwrap_err(),
            doctor::restore(&opts, given, &[]).unwrap_err(),
        ] {
            assert!(
                matches!(e, doctor::Error::NoSuchRun { .. }),
                "{given}: {e:?}"
            );
            assert_eq!(e.exit_code(), 2);
            assert!(e.to_string().contains(given), "{e}");
        }
    }
    assert!(matches!(
        doctor::resolve_run(&opts, "nope"),
        Err(doctor::Error::NoSuchRun { .. })
    ));

    let n = doctor::list_run(&opts, &run).unwrap().items.len();
    for item in [(n + 1).to_string(), "0".into(), "nope.json".into()] {
        let e = doctor::restore(&opts, "latest", std::slice::from_ref(&item)).unwrap_err();
        match &e {
            doctor::Error::NoSuchItem { run: r, item: i } => {
                assert_eq!((r, i), (&run, &item));
            }
            other => panic!("{item}: {other:?}"),
        }
        assert_eq!(e.exit_code(), 2);
        assert_eq!(
            e.to_string(),
            format!("set-aside run {run} has no item {item}")
        );
    }
    assert_eq!(user_tree(&s), before, "nothing was written");
}

#[test]
fn a_partial_restore_says_what_it_refused_and_fails() {
    use doctor::ItemState;
    let (_tmp, s) = demo_with_old_artifacts();
    let opts = lib_opts(&s);
    let run = doctor::repair_sessions(&opts).unwrap().run;
    let n = doctor::list_run(&opts, &run).unwrap().items.len() as u64;
    std::fs::write(s.join("torn.json"), "a new torn.json written since").unwrap();
    std::fs::write(
        s.join(".set-aside").join(&run).join("garbage.json"),
        "tampered",
    )
    .unwrap();

    let mut dry_opts = lib_opts(&s);
    dry_opts.dry_run = true;
    let dry = doctor::restore(&dry_opts, "latest", &[]).unwrap();
    assert!(dry.failed(), "a dry run that would refuse fails too");
    assert_eq!(dry.items_refused, 2, "{}", dry.render_human());
    let restorable = dry.summary.items_restored;
    assert_eq!(
        dry.render_human().lines().last().unwrap(),
        format!(
            "would restore {restorable} of {} items; 2 refused: see above",
            restorable + 2
        )
    );

    let real = doctor::restore(&opts, "latest", &[]).unwrap();
    assert_admin_valid(&serde_json::to_value(&real).unwrap());
    assert!(real.failed(), "a partial restore fails");
    assert_eq!(real.summary.items_restored, restorable);
    let human = real.render_human();
    assert!(
        human.contains("original path is occupied: torn.json")
            && human.ends_with(&format!(
                "restored {restorable} of {} items; 2 refused: see above\n",
                restorable + 2
            )),
        "{human}"
    );

    let after = doctor::list_run(&opts, &run).unwrap();
    assert_list_valid(&after);
    let state = |path: &str| {
        after
            .items
            .iter()
            .find(|i| i.original == path)
            .map(|i| (i.state, i.why.clone()))
            .unwrap()
    };
    assert_eq!(
        state("torn.json"),
        (ItemState::SetAside, None),
        "kept in the run"
    );
    let (garbage, why) = state("garbage.json");
    assert_eq!(garbage, ItemState::Missing);
    assert!(
        why.unwrap()
            .ends_with("garbage.json does not match its manifest line"),
        "{after:#?}"
    );
    let restored = after
        .items
        .iter()
        .filter(|i| i.state == ItemState::Restored)
        .count() as u64;
    assert_eq!(restored, restorable);
    assert_eq!(status_items(&opts, &run), n - restorable);
}
