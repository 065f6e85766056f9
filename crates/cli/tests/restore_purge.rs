//! `--restore` and `--purge-set-aside` through the real binary: a repair followed by a restore
//! gives back the original tree byte for byte (apart from the doctor's own files); restore
//! verifies hashes and refuses occupied paths by name; purge deletes only runs that match their
//! manifests (unless `--force`), receipted with bytes freed; dry runs write nothing.

mod common;

use std::path::Path;
use std::process::Command;

use common::{demo_with_old_artifacts, tree, Tree};
use serde_json::Value;

const NOW: &str = "2026-11-29T12:00:00Z";

fn doctor(s: &Path, args: &[&str]) -> (i32, Value, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_doctor"))
        .arg("--sessions-dir")
        .arg(s)
        .args(args)
        .arg("--json")
        .env("DOCTOR_NOW", NOW)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    let json = serde_json::from_str(&stdout).unwrap_or(Value::Null);
    (out.status.code().unwrap_or(-1), json, stderr)
}

fn admin_validator() -> jsonschema::Validator {
    let schema: Value = serde_json::from_str(include_str!(
        "../../../docs/schemas/admin-output.schema.json"
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

/// The tree without the doctor's own files.
fn user_tree(s: &Path) -> Tree {
    tree(s)
        .into_iter()
        .filter(|(p, _)| {
            let p = p.to_string_lossy();
            !(p.starts_with(".reconcile")
                || p.starts_with(".set-aside")
                || p.ends_with("session-unbind-receipts.jsonl"))
        })
        .collect()
}

fn set_aside_runs(s: &Path) -> Vec<String> {
    let mut runs: Vec<String> = std::fs::read_dir(s.join(".set-aside"))
        .map(|d| {
            d.map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default();
    runs.sort();
    runs
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
        set_aside_runs(&s),
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

#[test]
fn restore_refuses_an_occupied_path_and_a_tampered_item() {
    let (_tmp, s) = demo_with_old_artifacts();
    let (_, repair, _) = doctor(&s, &["--repair-sessions"]);
    let run = repair["run"].as_str().unwrap().to_owned();
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
    assert_eq!(code, 0);
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
    let restored: Vec<&str> = out["plan"]["actions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a["path"].as_str().unwrap())
        .collect();
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
    assert_eq!(set_aside_runs(&s).len(), 2, "a dry purge deletes nothing");

    let (code, out, _) = doctor(&s, &["--purge-set-aside", "--older-than", "0s"]);
    assert_eq!(code, 0);
    assert_admin_valid(&out);
    assert_eq!(
        set_aside_runs(&s),
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
    assert!(set_aside_runs(&s).is_empty());
}

#[test]
fn purge_refuses_a_partial_run_and_accepts_one_a_restore_emptied() {
    let (_tmp, s) = demo_with_old_artifacts();
    let (_, rep, _) = doctor(&s, &["--repair-sessions"]);
    let run = rep["run"].as_str().unwrap().to_owned();
    doctor(&s, &["--restore", &run]);
    // Everything moved back: the run holds previous versions and its manifest; it still matches.
    std::fs::write(s.join("late.json"), "not json").unwrap();
    let (_, rep2, _) = doctor(&s, &["--repair-sessions"]);
    let run2 = rep2["run"].as_str().unwrap().to_owned();
    std::fs::remove_file(s.join(".set-aside").join(&run2).join("late.json")).unwrap();
    let (_, out, _) = doctor(&s, &["--purge-set-aside", "--older-than", "0s"]);
    let purged: Vec<&str> = out["plan"]["actions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a["path"].as_str().unwrap())
        .collect();
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

#[test]
fn restore_never_touches_a_held_store() {
    let (_tmp, s) = demo_with_old_artifacts();
    let (_, rep, _) = doctor(&s, &["--repair-sessions"]);
    let run = rep["run"].as_str().unwrap().to_owned();
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
    assert_eq!(code, 0);
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
            r#"{{"schema_version":1,"sessions_dir":{:?},"plan":{{"actions":[{{"seq":1,"rule":"{rule}","rule_name":"x","action":"{action}","path":"{path}"{extra},"reason":"r","precondition":{{"bytes":{bytes},"sha256":"{digest}"}}}}],"deferred":0}}}}"#,
            s.to_string_lossy()
        );
        std::fs::write(&plan_file, plan).unwrap();
        let out = Command::new(env!("CARGO_BIN_EXE_doctor"))
            .arg("--apply-plan")
            .arg(&plan_file)
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2), "{action} {path}");
        let stderr = String::from_utf8_lossy(&out.stderr);
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
