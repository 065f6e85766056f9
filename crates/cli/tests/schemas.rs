//! The published JSON Schemas (`docs/schemas/`) against what the `doctor` binary really writes:
//! the `--json` output of a dry run, a real run, `--apply-plan` and plain `doctor`, the
//! `--plan-out` file, every manifest and receipt line and `last.json`. Each schema must also
//! reject broken instances, so that no check here can pass vacuously.

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::{json, Value};

const NOW: &str = "2026-11-29T12:00:00Z";

const SCHEMAS: &[(&str, &str)] = &[
    (
        "repair-output",
        include_str!("../../../docs/schemas/repair-output.schema.json"),
    ),
    (
        "plan",
        include_str!("../../../docs/schemas/plan.schema.json"),
    ),
    (
        "manifest-line",
        include_str!("../../../docs/schemas/manifest-line.schema.json"),
    ),
    (
        "receipt-line",
        include_str!("../../../docs/schemas/receipt-line.schema.json"),
    ),
    (
        "last",
        include_str!("../../../docs/schemas/last.schema.json"),
    ),
    (
        "status",
        include_str!("../../../docs/schemas/status.schema.json"),
    ),
    (
        "admin-output",
        include_str!("../../../docs/schemas/admin-output.schema.json"),
    ),
];

fn schema_text(name: &str) -> &'static str {
    SCHEMAS
        .iter()
        .find(|(n, _)| *n == name)
        .map(|(_, text)| *text)
        .unwrap_or_else(|| panic!("no schema {name}"))
}

fn schema_value(name: &str) -> Value {
    serde_json::from_str(schema_text(name)).unwrap_or_else(|e| panic!("{name}: not JSON: {e}"))
}

fn validator(name: &str) -> jsonschema::Validator {
    jsonschema::draft202012::options()
        .should_validate_formats(true)
        .build(&schema_value(name))
        .unwrap_or_else(|e| panic!("{name}.schema.json does not compile: {e}"))
}

fn errors(name: &str, instance: &Value) -> Vec<String> {
    validator(name)
        .iter_errors(instance)
        .map(|e| format!("{}: {e}", e.instance_path()))
        .collect()
}

#[track_caller]
fn assert_valid(name: &str, instance: &Value) {
    let errs = errors(name, instance);
    assert!(
        errs.is_empty(),
        "{name}.schema.json rejects a real output:\n{}\ninstance:\n{}",
        errs.join("\n"),
        serde_json::to_string_pretty(instance).unwrap()
    );
}

#[track_caller]
fn assert_invalid(name: &str, instance: &Value, what: &str) {
    assert!(
        !errors(name, instance).is_empty(),
        "{name}.schema.json accepts {what}:\n{}",
        serde_json::to_string_pretty(instance).unwrap()
    );
}

// ---- a small session store -------------------------------------------------------------

const GOOD: &str = r#"{
  "schema_version": 1,
  "metadata": {
    "id": "good",
    "title": "Fix the parser",
    "created_at": "2026-09-01T10:00:00Z",
    "updated_at": "2026-09-01T11:00:00Z",
    "message_count": 2
  },
  "messages": [
    { "role": "user", "content": "hello" },
    { "role": "assistant", "content": "hi" }
  ]
}
"#;

/// An intact metadata prefix, then the messages cut off.
const TORN: &str = r#"{
  "schema_version": 1,
  "metadata": {
    "id": "torn",
    "title": "Torn",
    "created_at": "2026-09-01T10:00:00Z",
    "updated_at": "2026-09-01T11:00:00Z"
  },
  "messages": [ { "role": "user", "cont"#;

const JUNK: &str = "this is not JSON at all\n";

struct Store {
    _tmp: tempfile::TempDir,
    dir: PathBuf,
    plan: PathBuf,
}

impl Store {
    /// `good.json` (readable), `torn.json` (truncated), `junk.json` (not JSON), `notes.txt`.
    fn new() -> Store {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("sessions");
        std::fs::create_dir(&dir).unwrap();
        std::fs::write(dir.join("good.json"), GOOD).unwrap();
        std::fs::write(dir.join("torn.json"), TORN).unwrap();
        std::fs::write(dir.join("junk.json"), JUNK).unwrap();
        std::fs::write(dir.join("notes.txt"), "not a session\n").unwrap();
        let plan = tmp.path().join("plan.json");
        Store {
            _tmp: tmp,
            dir,
            plan,
        }
    }

    /// [`Store::new`] plus work for R4, R3 and R2: a store under `host/` whose thread names the
    /// missing session `gone` (unbound, then recovered as `th-orphan.json`), and an empty
    /// store `empty/runtime` that no document binds (set aside).
    fn with_orphans() -> Store {
        let store = Store::new();
        let write = |rel: &str, text: &str| {
            let p = store.dir.join(rel);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(p, text).unwrap();
        };
        write(
            "host/runtime/owner.json",
            r#"{ "owner_id": "owner_1f2e3d4c" }"#,
        );
        write(
            "host/runtime/state.json",
            r#"{ "schema_version": 1, "next_seq": 3 }"#,
        );
        write(
            "host/runtime/threads/th-orphan.json",
            &json!({
                "schema_version": 1,
                "id": "th-orphan",
                "created_at": "2026-09-02T10:00:00Z",
                "updated_at": "2026-09-02T10:05:00Z",
                "title": "Orphaned work",
                "latest_turn_id": "t1",
                "session_id": "gone",
                "saved_session_checkpoint": {
                    "covered_turn_id": "t1",
                    "messages_sha256": "0".repeat(64),
                    "messages_len": 2
                },
                "a_host_field": [1, 2]
            })
            .to_string(),
        );
        write(
            "host/runtime/turns/th-orphan/t1.json",
            &json!({
                "schema_version": 1,
                "id": "t1",
                "thread_id": "th-orphan",
                "seq": 1,
                "created_at": "2026-09-02T10:00:00Z",
                "status": "completed",
                "messages": [
                    { "role": "user", "content": "keep this" },
                    { "role": "assistant", "content": "kept" }
                ],
                "usage": { "input_tokens": 10, "output_tokens": 20, "cost_usd": 0.001 }
            })
            .to_string(),
        );
        write(
            "empty/runtime/state.json",
            r#"{ "schema_version": 1, "next_seq": 1 }"#,
        );
        store
    }

    /// A store at `dir` as it is (the plan file goes to a temporary directory).
    fn at(dir: PathBuf) -> Store {
        let tmp = tempfile::tempdir().unwrap();
        let plan = tmp.path().join("plan.json");
        Store {
            _tmp: tmp,
            dir,
            plan,
        }
    }

    /// A temporary copy of the store at `src` (symlinks copied as symlinks).
    fn copy_of(src: &Path) -> Store {
        fn copy(from: &Path, to: &Path) {
            std::fs::create_dir(to).unwrap();
            for e in std::fs::read_dir(from).unwrap() {
                let e = e.unwrap();
                let (src, dst) = (e.path(), to.join(e.file_name()));
                let ft = e.file_type().unwrap();
                if ft.is_symlink() {
                    std::os::unix::fs::symlink(std::fs::read_link(&src).unwrap(), &dst).unwrap();
                } else if ft.is_dir() {
                    copy(&src, &dst);
                } else {
                    std::fs::copy(&src, &dst).unwrap();
                }
            }
        }
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("sessions");
        copy(src, &dir);
        let plan = tmp.path().join("plan.json");
        Store {
            _tmp: tmp,
            dir,
            plan,
        }
    }

    /// Runs `doctor` with `args` (plus `--json`), expects exit 0, returns stdout as JSON.
    fn doctor(&self, args: &[&str]) -> Value {
        let out = Command::new(env!("CARGO_BIN_EXE_doctor"))
            .args(args)
            .arg("--json")
            .env("DOCTOR_NOW", NOW)
            .env_remove("DOCTOR_LOG")
            .env_remove("RUST_LOG")
            .env_remove("CODEWHALE_HOME")
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "doctor {args:?} exited {:?}\nstdout:\n{}\nstderr:\n{}",
            out.status.code(),
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
            panic!(
                "doctor {args:?}: stdout is not one JSON document: {e}\n{}",
                String::from_utf8_lossy(&out.stdout)
            )
        })
    }

    fn dir_arg(&self) -> &str {
        self.dir.to_str().unwrap()
    }

    fn status(&self) -> Value {
        self.doctor(&["--sessions-dir", self.dir_arg()])
    }

    fn dry_run_with_plan_out(&self) -> Value {
        let plan = self.plan.to_str().unwrap();
        self.doctor(&[
            "--repair-sessions",
            "--sessions-dir",
            self.dir_arg(),
            "--dry-run",
            "--plan-out",
            plan,
        ])
    }

    fn repair(&self) -> Value {
        self.doctor(&["--repair-sessions", "--sessions-dir", self.dir_arg()])
    }

    fn apply_plan(&self) -> Value {
        self.doctor(&["--apply-plan", self.plan.to_str().unwrap()])
    }

    fn plan_file(&self) -> Value {
        serde_json::from_slice(&std::fs::read(&self.plan).unwrap()).unwrap()
    }

    fn json_lines(&self, rel: &str) -> Vec<Value> {
        let text = std::fs::read_to_string(self.dir.join(rel))
            .unwrap_or_else(|e| panic!("cannot read {rel}: {e}"));
        text.lines()
            .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{rel}: {e}: {l}")))
            .collect()
    }

    /// The manifest of `run`; empty when the run set nothing aside.
    fn manifest(&self, run: &str) -> Vec<Value> {
        let rel = format!(".set-aside/{run}/MANIFEST.jsonl");
        if self.dir.join(&rel).exists() {
            self.json_lines(&rel)
        } else {
            Vec::new()
        }
    }

    fn receipts(&self) -> Vec<Value> {
        self.json_lines(".reconcile/receipts.jsonl")
    }

    fn last(&self) -> Value {
        serde_json::from_slice(&std::fs::read(self.dir.join(".reconcile/last.json")).unwrap())
            .unwrap()
    }

    /// Every path beneath S, relative, sorted, with file contents (symlinks: their target).
    fn tree(&self) -> Vec<(String, Option<Vec<u8>>)> {
        fn walk(base: &Path, dir: &Path, out: &mut Vec<(String, Option<Vec<u8>>)>) {
            for e in std::fs::read_dir(dir).unwrap() {
                let e = e.unwrap();
                let p = e.path();
                let rel = p.strip_prefix(base).unwrap().to_string_lossy().into_owned();
                let ft = e.file_type().unwrap();
                if ft.is_symlink() {
                    let target = std::fs::read_link(&p).unwrap();
                    out.push((rel, Some(target.to_string_lossy().as_bytes().to_vec())));
                } else if ft.is_dir() {
                    out.push((rel, None));
                    walk(base, &p, out);
                } else {
                    out.push((rel, std::fs::read(&p).ok()));
                }
            }
        }
        let mut out = Vec::new();
        walk(&self.dir, &self.dir, &mut out);
        out.sort();
        out
    }
}

fn str_of<'a>(v: &'a Value, pointer: &str) -> &'a str {
    v.pointer(pointer)
        .and_then(Value::as_str)
        .unwrap_or_else(|| panic!("no string at {pointer} in {v}"))
}

fn actions(report: &Value) -> &Vec<Value> {
    report["plan"]["actions"].as_array().unwrap()
}

fn action_paths(report: &Value) -> Vec<&str> {
    actions(report)
        .iter()
        .map(|a| a["path"].as_str().unwrap())
        .collect()
}

/// Receipts, manifest lines and `last.json` of a real run or an applied plan, validated.
fn assert_records_valid(store: &Store, report: &Value) {
    let run = str_of(report, "/run");
    let outcomes = report["outcomes"].as_array().unwrap();
    let set_aside = actions(report)
        .iter()
        .filter(|a| a["action"] == "set_aside")
        .filter(|a| {
            outcomes
                .iter()
                .any(|o| o["seq"] == a["seq"] && o["outcome"] == "applied")
        })
        .count();
    let manifest = store.manifest(run);
    let moved = manifest
        .iter()
        .filter(|l| l["kind"] != "previous_version")
        .count();
    assert_eq!(moved, set_aside, "one manifest line per item set aside");
    for line in &manifest {
        assert_valid("manifest-line", line);
        assert_eq!(line["run"], run);
        assert_eq!(
            str_of(line, "/moved_to"),
            format!(".set-aside/{run}/{}", str_of(line, "/original")),
            "moved_to mirrors the original path"
        );
        assert!(store.dir.join(str_of(line, "/moved_to")).exists());
    }
    let receipts: Vec<Value> = store
        .receipts()
        .into_iter()
        .filter(|r| r["run"] == run)
        .collect();
    assert_eq!(receipts.len(), outcomes.len(), "one receipt per action");
    for r in &receipts {
        assert_valid("receipt-line", r);
    }
    let last = store.last();
    assert_valid("last", &last);
    assert_eq!(last["run"], run);
    assert_eq!(last["summary"], report["summary"]);
}

// ---- real outputs validate -------------------------------------------------------------

#[test]
fn dry_run_real_run_and_status_outputs_match_their_schemas() {
    let store = Store::new();

    let before = store.status();
    assert_valid("status", &before);
    assert_eq!(before["last"], Value::Null);
    assert_eq!(before["pending_actions"], 2);

    let pristine = store.tree();
    let dry = store.dry_run_with_plan_out();
    assert_valid("repair-output", &dry);
    assert_eq!(dry["dry_run"], true);
    assert_eq!(dry["outcomes"], json!([]));
    assert_eq!(action_paths(&dry), ["junk.json", "torn.json"]);
    assert_eq!(dry["ignored"], json!(["notes.txt"]));
    assert_eq!(store.tree(), pristine, "a dry run writes nothing into S");

    let plan = store.plan_file();
    assert_valid("plan", &plan);
    assert_eq!(
        plan["plan"], dry["plan"],
        "--plan-out writes the printed plan"
    );
    assert_eq!(plan["sessions_dir"], dry["sessions_dir"]);

    let real = store.repair();
    assert_valid("repair-output", &real);
    assert_eq!(real["dry_run"], false);
    assert_eq!(
        real["plan"]["actions"], dry["plan"]["actions"],
        "the dry-run plan is the real run's plan"
    );
    for o in real["outcomes"].as_array().unwrap() {
        assert_eq!(o["outcome"], "applied", "{o}");
    }
    assert_records_valid(&store, &real);
    assert!(store.dir.join("good.json").is_file());
    assert!(!store.dir.join("torn.json").exists());
    assert!(!store.dir.join("junk.json").exists());

    let after = store.status();
    assert_valid("status", &after);
    assert_eq!(after["pending_actions"], 0);
    assert_eq!(after["last"]["run"], real["run"]);
    assert_eq!(
        after["set_aside_runs"],
        json!([{ "run": real["run"], "items": 2 }])
    );

    let again = store.repair();
    assert_valid("repair-output", &again);
    assert_eq!(actions(&again).len(), 0, "a second run plans nothing");
}

/// Thread rewrites, recoveries and store moves write more kinds of records: receipts with
/// `previous_sha256` and `document`, `previous_version` and `runtime_store` manifest lines, and a
/// recovered document, which must itself be a readable document.
#[test]
fn thread_and_store_actions_match_their_schemas() {
    let store = Store::with_orphans();
    let dry = store.dry_run_with_plan_out();
    assert_valid("repair-output", &dry);
    assert_valid("plan", &store.plan_file());
    let kinds: Vec<(&str, &str)> = actions(&dry)
        .iter()
        .map(|a| (a["action"].as_str().unwrap(), a["path"].as_str().unwrap()))
        .collect();
    for expected in [
        ("unbind_thread", "host/runtime/threads/th-orphan.json"),
        ("recover_thread", "host/runtime/threads/th-orphan.json"),
        ("set_aside", "empty/runtime"),
    ] {
        assert!(kinds.contains(&expected), "{expected:?} not in {kinds:?}");
    }

    let real = store.repair();
    assert_valid("repair-output", &real);
    assert_eq!(real["plan"]["actions"], dry["plan"]["actions"]);
    for o in real["outcomes"].as_array().unwrap() {
        assert_eq!(o["outcome"], "applied", "{o}");
    }
    assert_records_valid(&store, &real);

    let run = str_of(&real, "/run");
    let manifest_kinds: Vec<Value> = store
        .manifest(run)
        .iter()
        .map(|l| l["kind"].clone())
        .collect();
    for kind in ["document", "runtime_store", "previous_version"] {
        assert!(
            manifest_kinds.contains(&json!(kind)),
            "{kind} not in {manifest_kinds:?}"
        );
    }
    let receipts = store.receipts();
    assert!(receipts.iter().any(|r| r.get("previous_sha256").is_some()));
    assert!(receipts.iter().any(|r| r["document"] == "th-orphan.json"));

    let recovered: Value =
        serde_json::from_slice(&std::fs::read(store.dir.join("th-orphan.json")).unwrap()).unwrap();
    let document = jsonschema::draft202012::options()
        .should_validate_formats(true)
        .build(
            &serde_json::from_str(include_str!("../../../docs/schemas/document.schema.json"))
                .unwrap(),
        )
        .unwrap();
    assert!(document.is_valid(&recovered), "{recovered}");
    assert_valid("status", &store.status());
}

/// The shipped demo store exercises more of the pack than the small store above; as rules
/// are added, their actions, receipts and manifest lines are validated here too.
#[test]
fn demo_store_outputs_match_their_schemas() {
    let demo = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/demo");
    let fixture = Store::at(demo.clone());
    let pristine = fixture.tree();
    let dry = fixture.dry_run_with_plan_out();
    assert_valid("repair-output", &dry);
    assert_valid("plan", &fixture.plan_file());
    assert_valid("status", &fixture.status());
    assert_eq!(
        fixture.tree(),
        pristine,
        "a dry run leaves the fixture untouched"
    );
    assert!(
        !actions(&dry).is_empty(),
        "the demo store has something to repair"
    );

    let copy = Store::copy_of(&demo);
    let dry = copy.dry_run_with_plan_out();
    let real = copy.repair();
    assert_valid("repair-output", &real);
    assert_eq!(
        real["plan"]["actions"], dry["plan"]["actions"],
        "the dry-run plan is the real run's plan"
    );
    assert_records_valid(&copy, &real);
    assert_valid("status", &copy.status());
}

// ---- --apply-plan ----------------------------------------------------------------------

#[test]
fn apply_plan_applies_exactly_the_planned_actions() {
    let store = Store::with_orphans();
    let dry = store.dry_run_with_plan_out();
    let plan = store.plan_file();
    assert_valid("plan", &plan);

    let applied = store.apply_plan();
    assert_valid("repair-output", &applied);
    assert_eq!(applied["dry_run"], false);
    assert_eq!(applied["plan"], plan["plan"], "no re-planning");
    assert_eq!(applied["sessions_dir"], dry["sessions_dir"]);
    let planned: Vec<&Value> = actions(&plan).iter().map(|a| &a["seq"]).collect();
    let outcomes = applied["outcomes"].as_array().unwrap();
    let done: Vec<&Value> = outcomes.iter().map(|o| &o["seq"]).collect();
    assert_eq!(
        done, planned,
        "one outcome per planned action, in plan order"
    );
    for o in outcomes {
        assert_eq!(o["outcome"], "applied", "{o}");
    }
    assert_records_valid(&store, &applied);
    let run = str_of(&applied, "/run");
    for a in actions(&applied) {
        let path = str_of(a, "/path");
        match str_of(a, "/action") {
            "set_aside" => {
                assert!(!store.dir.join(path).exists(), "{path} moved");
                assert!(store.dir.join(format!(".set-aside/{run}/{path}")).exists());
            }
            "recover_thread" | "bind_thread" => {
                assert!(store.dir.join(str_of(a, "/document")).is_file());
            }
            _ => {}
        }
    }

    // Applying the same plan again finds nothing it expects: every action is skipped.
    let again = store.apply_plan();
    assert_valid("repair-output", &again);
    for o in again["outcomes"].as_array().unwrap() {
        assert_eq!(o["outcome"], "skipped", "{o}");
        assert_eq!(o["why"], "changed since planned");
    }
    for r in store.receipts() {
        assert_valid("receipt-line", &r);
    }
}

#[test]
fn apply_plan_skips_an_action_whose_file_changed_since_planned() {
    let store = Store::new();
    store.dry_run_with_plan_out();
    let plan = store.plan_file();
    let torn_seq = actions(&plan)
        .iter()
        .find(|a| a["path"] == "torn.json")
        .map(|a| a["seq"].clone())
        .expect("torn.json is planned");

    let changed = format!("{TORN}tent\": \"still writing");
    std::fs::write(store.dir.join("torn.json"), &changed).unwrap();

    let applied = store.apply_plan();
    assert_valid("repair-output", &applied);
    let run = str_of(&applied, "/run");
    for o in applied["outcomes"].as_array().unwrap() {
        if o["seq"] == torn_seq {
            assert_eq!(o["outcome"], "skipped", "{o}");
            assert_eq!(o["why"], "changed since planned");
        } else {
            assert_eq!(o["outcome"], "applied", "{o}");
        }
    }
    assert_eq!(
        std::fs::read_to_string(store.dir.join("torn.json")).unwrap(),
        changed,
        "the changed file stays in place, untouched"
    );
    assert!(!store
        .dir
        .join(format!(".set-aside/{run}/torn.json"))
        .exists());
    assert!(!store.dir.join("junk.json").exists());

    let receipts = store.receipts();
    let skipped: Vec<&Value> = receipts
        .iter()
        .filter(|r| r["path"] == "torn.json")
        .collect();
    assert_eq!(skipped.len(), 1);
    assert_eq!(skipped[0]["outcome"], "skipped");
    assert_eq!(skipped[0]["why"], "changed since planned");
    assert_records_valid(&store, &applied);
}

// ---- the schemas themselves ------------------------------------------------------------

#[test]
fn schemas_are_valid_draft_2020_12_and_share_identical_definitions() {
    let mut seen: Vec<(&str, String, Value)> = Vec::new();
    for (name, _) in SCHEMAS {
        let schema = schema_value(name);
        assert_eq!(
            schema["$schema"], "https://json-schema.org/draft/2020-12/schema",
            "{name}"
        );
        if let Err(e) = jsonschema::meta::validate(&schema) {
            panic!("{name}.schema.json is not a valid schema: {e}");
        }
        validator(name);
        for (def, body) in schema["$defs"].as_object().into_iter().flatten() {
            for (other, other_def, other_body) in &seen {
                if other_def == def {
                    assert_eq!(
                        body, other_body,
                        "$defs/{def} differs between {name} and {other}"
                    );
                }
            }
            seen.push((name, def.clone(), body.clone()));
        }
    }
}

/// The required fields at the top of a schema (following a top-level `$ref`), and whether it
/// is closed (`additionalProperties: false`).
fn top_shape(name: &str) -> (Vec<String>, bool) {
    let schema = schema_value(name);
    let top = match schema.get("$ref").and_then(Value::as_str) {
        Some(r) => schema.pointer(r.trim_start_matches('#')).unwrap().clone(),
        None => schema,
    };
    let required = top["required"]
        .as_array()
        .unwrap_or_else(|| panic!("{name}: no required fields at the top"))
        .iter()
        .map(|v| v.as_str().unwrap().to_owned())
        .collect();
    (required, top["additionalProperties"] == false)
}

/// Checks that `name` rejects `valid` without each required field, and with an unknown field
/// when it is closed.
fn assert_rejects_incomplete(name: &str, valid: &Value) {
    assert_valid(name, valid);
    let (required, closed) = top_shape(name);
    assert!(!required.is_empty(), "{name}: nothing is required");
    for field in &required {
        let mut v = valid.clone();
        v.as_object_mut().unwrap().remove(field);
        assert_invalid(name, &v, &format!("an instance without `{field}`"));
    }
    let mut v = valid.clone();
    v["surely_not_a_field"] = json!(1);
    if closed {
        assert_invalid(name, &v, "an unknown field");
    } else {
        assert_valid(name, &v);
    }
    assert_invalid(name, &json!([]), "an array");
    assert_invalid(name, &json!("text"), "a string");
}

#[track_caller]
fn assert_rejects_edit(name: &str, valid: &Value, what: &str, edit: impl FnOnce(&mut Value)) {
    let mut v = valid.clone();
    edit(&mut v);
    assert_invalid(name, &v, what);
}

#[test]
fn every_schema_rejects_broken_instances() {
    let store = Store::new();
    let status_before = store.status();
    let dry = store.dry_run_with_plan_out();
    let plan = store.plan_file();
    let real = store.repair();
    let run = str_of(&real, "/run").to_owned();
    let manifest = store.manifest(&run).remove(0);
    let receipt = store.receipts().remove(0);
    let last = store.last();
    let status_after = store.status();

    assert_rejects_incomplete("repair-output", &dry);
    assert_rejects_incomplete("repair-output", &real);
    assert_rejects_incomplete("plan", &plan);
    assert_rejects_incomplete("manifest-line", &manifest);
    assert_rejects_incomplete("receipt-line", &receipt);
    assert_rejects_incomplete("last", &last);
    assert_rejects_incomplete("status", &status_before);
    assert_rejects_incomplete("status", &status_after);

    // Shapes inside: run ids, hashes, enums, paths, and the conditional fields.
    let out = "repair-output";
    assert_rejects_edit(out, &real, "a malformed run id", |v| {
        v["run"] = json!("2026-11-29-abc")
    });
    assert_rejects_edit(out, &real, "an unknown action kind", |v| {
        v["plan"]["actions"][0]["action"] = json!("delete")
    });
    assert_rejects_edit(out, &real, "an uppercase sha256", |v| {
        let sha = str_of(v, "/plan/actions/0/precondition/sha256").to_uppercase();
        v["plan"]["actions"][0]["precondition"]["sha256"] = json!(sha)
    });
    assert_rejects_edit(out, &real, "a precondition with both digests", |v| {
        v["plan"]["actions"][0]["precondition"]["tree_blake3"] = json!("0".repeat(64))
    });
    assert_rejects_edit(out, &real, "set_aside without kind", |v| {
        v["plan"]["actions"][0]
            .as_object_mut()
            .unwrap()
            .remove("kind");
    });
    assert_rejects_edit(out, &real, "an unknown item kind", |v| {
        v["plan"]["actions"][0]["kind"] = json!("trash")
    });
    assert_rejects_edit(out, &real, "recover_thread without document", |v| {
        let a = &mut v["plan"]["actions"][0];
        a["action"] = json!("recover_thread");
        a.as_object_mut().unwrap().remove("kind");
    });
    assert_rejects_edit(out, &real, "an absolute action path", |v| {
        v["plan"]["actions"][0]["path"] = json!("/etc/passwd")
    });
    assert_rejects_edit(out, &real, "an action path with ..", |v| {
        v["plan"]["actions"][0]["path"] = json!("a/../../etc")
    });
    assert_rejects_edit(out, &real, "an unknown outcome", |v| {
        v["outcomes"][0]["outcome"] = json!("done")
    });
    assert_rejects_edit(out, &real, "a skipped outcome without why", |v| {
        v["outcomes"][0]["outcome"] = json!("skipped")
    });
    assert_rejects_edit(out, &real, "a dry run with outcomes", |v| {
        v["dry_run"] = json!(true)
    });
    assert_rejects_edit(out, &real, "a negative count", |v| {
        v["summary"]["documents_set_aside"] = json!(-1)
    });
    assert_rejects_edit(out, &real, "a summary without errors", |v| {
        v["summary"].as_object_mut().unwrap().remove("errors");
    });
    assert_rejects_edit(out, &real, "a set_aside_path elsewhere", |v| {
        v["summary"]["set_aside_path"] = json!("/tmp/elsewhere")
    });

    assert_rejects_edit("plan", &plan, "schema_version 2", |v| {
        v["schema_version"] = json!(2)
    });
    assert_rejects_edit("plan", &plan, "a negative deferred", |v| {
        v["plan"]["deferred"] = json!(-1)
    });

    let m = "manifest-line";
    assert_rejects_edit(m, &manifest, "a document without sha256", |v| {
        v.as_object_mut().unwrap().remove("sha256");
    });
    assert_rejects_edit(m, &manifest, "a document with a tree digest", |v| {
        v["tree_blake3"] = json!("0".repeat(64))
    });
    assert_rejects_edit(m, &manifest, "a store without a tree digest", |v| {
        v["kind"] = json!("runtime_store")
    });
    assert_rejects_edit(m, &manifest, "moved_to outside .set-aside", |v| {
        v["moved_to"] = json!("elsewhere/torn.json")
    });
    assert_rejects_edit(m, &manifest, "a time that is not RFC 3339", |v| {
        v["at"] = json!("yesterday")
    });

    let r = "receipt-line";
    assert_rejects_edit(r, &receipt, "a skipped receipt without why", |v| {
        v["outcome"] = json!("skipped")
    });
    assert_rejects_edit(r, &receipt, "an applied receipt with why", |v| {
        v["why"] = json!("because")
    });
    assert_rejects_edit(r, &receipt, "seq 0", |v| v["seq"] = json!(0));
    assert_rejects_edit(r, &receipt, "a malformed previous_sha256", |v| {
        v["previous_sha256"] = json!("xyz")
    });
    let mut extra = receipt.clone();
    extra["previous_sha256"] = json!("0".repeat(64));
    extra["previous_session_id"] = Value::Null;
    extra["a_future_field"] = json!({ "any": "shape" });
    assert_valid(r, &extra);

    assert_rejects_edit("last", &last, "errors that are not a list", |v| {
        v["summary"]["errors"] = json!("none")
    });
    assert_rejects_edit("status", &status_after, "a last run that is empty", |v| {
        v["last"] = json!({})
    });
    assert_rejects_edit(
        "status",
        &status_after,
        "a set-aside run without items",
        |v| {
            v["set_aside_runs"][0]
                .as_object_mut()
                .unwrap()
                .remove("items");
        },
    );
}
