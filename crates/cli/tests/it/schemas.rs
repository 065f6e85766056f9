//! The published JSON Schemas (`docs/schemas/`) against what the `doctor` binary really writes:
//! the `--json` output of a dry run, a real run, `--apply-plan` and plain `doctor`, the
//! `--plan-out` file, every manifest and receipt line (the doctor's and the app's), the stores'
//! unbind receipts and `last.json` (also read as the app's `ReconcileSummary`); and the schemas of
//! the app's own records (document, thread, turn, item) against the real shapes. Each schema
//! must also reject broken instances, so that no check here can pass vacuously.

use std::path::{Path, PathBuf};

use serde_json::{json, Value};
use sha2::{Digest, Sha256};

use crate::common::{self, Doctor};

const NOW: &str = "2026-11-29T12:00:00Z";

const SCHEMAS: &[(&str, &str)] = &[
    (
        "repair-output",
        include_str!("../../../../docs/schemas/repair-output.schema.json"),
    ),
    (
        "plan",
        include_str!("../../../../docs/schemas/plan.schema.json"),
    ),
    (
        "manifest-line",
        include_str!("../../../../docs/schemas/manifest-line.schema.json"),
    ),
    (
        "receipt-line",
        include_str!("../../../../docs/schemas/receipt-line.schema.json"),
    ),
    (
        "last",
        include_str!("../../../../docs/schemas/last.schema.json"),
    ),
    (
        "status",
        include_str!("../../../../docs/schemas/status.schema.json"),
    ),
    (
        "admin-output",
        include_str!("../../../../docs/schemas/admin-output.schema.json"),
    ),
    (
        "list-output",
        include_str!("../../../../docs/schemas/list-output.schema.json"),
    ),
    (
        "unbind-receipt-line",
        include_str!("../../../../docs/schemas/unbind-receipt-line.schema.json"),
    ),
    (
        "document",
        include_str!("../../../../docs/schemas/document.schema.json"),
    ),
    (
        "thread",
        include_str!("../../../../docs/schemas/thread.schema.json"),
    ),
    (
        "turn",
        include_str!("../../../../docs/schemas/turn.schema.json"),
    ),
    (
        "item",
        include_str!("../../../../docs/schemas/item.schema.json"),
    ),
    (
        "json-lines",
        include_str!("../../../../docs/schemas/json-lines.schema.json"),
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
pub(crate) fn assert_valid(name: &str, instance: &Value) {
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

/// A readable document in the app's shape (codewhale-format §1): every required metadata field,
/// messages of content blocks.
const GOOD: &str = r#"{
  "schema_version": 1,
  "metadata": {
    "id": "good",
    "title": "Fix the parser",
    "created_at": "2026-09-01T10:00:00Z",
    "updated_at": "2026-09-01T11:00:00Z",
    "message_count": 2,
    "total_tokens": 30,
    "model": "deepseek-v4",
    "model_provider": "deepseek",
    "workspace": "/home/u/proj",
    "mode": "agent",
    "cost": {
      "session_cost_usd": 0.0,
      "priced_turns": 0,
      "unpriced_turns": 0,
      "coverage_recorded": false
    }
  },
  "messages": [
    {
      "role": "user",
      "content": [
        {
          "type": "text",
          "text": "hello"
        }
      ]
    },
    {
      "role": "assistant",
      "content": [
        {
          "type": "text",
          "text": "hi"
        }
      ]
    }
  ],
  "system_prompt": null
}
"#;

/// An intact metadata block, then the messages cut off.
const TORN: &str = r#"{
  "schema_version": 1,
  "metadata": {
    "id": "torn",
    "title": "Torn",
    "created_at": "2026-09-01T10:00:00Z",
    "updated_at": "2026-09-01T11:00:00Z",
    "message_count": 2,
    "total_tokens": 0,
    "model": "deepseek-v4",
    "workspace": "/home/u/proj",
    "mode": null
  },
  "messages": [ { "role": "user", "content": [ { "type": "text", "te"#;

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

    /// [`Store::new`] plus work for R4, R3 and R2, in the app's shape (codewhale-format §4-§6):
    /// a store under `host/` that no document binds, whose thread `th-orphan` is bound to the
    /// missing session `gone` (unbound, then recovered as `th-orphan.json`) and has one turn
    /// with two items (flat `turns/`, `items/`); and an empty store `empty/runtime` that no
    /// document binds (set aside; its emptied session directory is removed); and an empty
    /// session directory `left-empty/` a killed run left (removed).
    fn with_orphans() -> Store {
        let store = Store::new();
        let write = |rel: &str, value: &Value| {
            let p = store.dir.join(rel);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            let mut bytes = serde_json::to_vec_pretty(value).unwrap();
            bytes.push(b'\n');
            std::fs::write(p, bytes).unwrap();
        };
        let touch = |rel: &str| {
            let p = store.dir.join(rel);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(p, b"").unwrap();
        };
        write(
            "host/runtime/owner.json",
            &json!({ "owner_id": "owner_1f2e3d4c5b6a79881f2e3d4c5b6a7988" }),
        );
        write(
            "host/runtime/state.json",
            &json!({ "schema_version": 2, "next_seq": 3 }),
        );
        touch("host/runtime/events.lock");
        touch("host/runtime/runtime-process.owner.lock");
        let messages = json!([
            { "role": "user", "content": [{ "type": "text", "text": "keep this" }] },
            { "role": "assistant", "content": [{ "type": "text", "text": "kept" }] }
        ]);
        write(
            "host/runtime/threads/th-orphan.json",
            &json!({
                "schema_version": 2,
                "id": "th-orphan",
                "created_at": "2026-09-02T10:00:00Z",
                "updated_at": "2026-09-02T10:05:00Z",
                "model": "deepseek-v4",
                "workspace": "/home/u/proj",
                "mode": "agent",
                "allow_shell": false,
                "trust_mode": false,
                "auto_approve": false,
                "latest_turn_id": "turn_orphan_1",
                "archived": false,
                "title": "Orphaned work",
                "session_id": "gone",
                "saved_session_checkpoint": {
                    "covered_turn_id": "turn_orphan_1",
                    "messages_sha256": sha256_hex(&serde_json::to_vec(&messages).unwrap()),
                    "messages_len": 2
                },
                "a_host_field": [1, 2]
            }),
        );
        write(
            "host/runtime/turns/turn_orphan_1.json",
            &json!({
                "schema_version": 2,
                "id": "turn_orphan_1",
                "thread_id": "th-orphan",
                "status": "completed",
                "input_summary": "keep this",
                "created_at": "2026-09-02T10:00:00Z",
                "started_at": "2026-09-02T10:00:00Z",
                "ended_at": "2026-09-02T10:05:00Z",
                "duration_ms": 300000,
                "usage": { "input_tokens": 10, "output_tokens": 20 },
                "item_ids": ["item_orphan_1_u", "item_orphan_1_a"],
                "steer_count": 0
            }),
        );
        for (id, kind, text, secs) in [
            ("item_orphan_1_u", "user_message", "keep this", "00"),
            ("item_orphan_1_a", "agent_message", "kept", "30"),
        ] {
            write(
                &format!("host/runtime/items/{id}.json"),
                &json!({
                    "schema_version": 2,
                    "id": id,
                    "turn_id": "turn_orphan_1",
                    "kind": kind,
                    "status": "completed",
                    "summary": text,
                    "detail": text,
                    "artifact_refs": [],
                    "started_at": format!("2026-09-02T10:00:{secs}Z"),
                    "ended_at": format!("2026-09-02T10:00:{secs}Z")
                }),
            );
        }
        write(
            "empty/runtime/owner.json",
            &json!({ "owner_id": "owner_00000000000000000000000000000001" }),
        );
        write(
            "empty/runtime/state.json",
            &json!({ "schema_version": 2, "next_seq": 1 }),
        );
        touch("empty/runtime/events.lock");
        // A session directory an earlier run emptied, killed before removing it.
        std::fs::create_dir(store.dir.join("left-empty")).unwrap();
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
                    #[cfg(unix)]
                    std::os::unix::fs::symlink(std::fs::read_link(&src).unwrap(), &dst).unwrap();
                    #[cfg(not(unix))]
                    panic!("{}: a symlink in a tree copied on Windows", src.display());
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
        let out = Doctor::new()
            .args(args)
            .arg("--json")
            .now(NOW)
            .env_remove("CODEWHALE_HOME")
            .run();
        assert_eq!(
            out.code,
            Some(0),
            "doctor {args:?} exited {:?}\n{}",
            out.code,
            out.said()
        );
        out.json()
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

    /// Every line of every store's `session-unbind-receipts.jsonl` outside `.set-aside`.
    fn unbind_receipts(&self) -> Vec<Value> {
        let mut out = Vec::new();
        for (rel, bytes) in self.tree() {
            if rel.starts_with(".set-aside") || !rel.ends_with("/session-unbind-receipts.jsonl") {
                continue;
            }
            let text = String::from_utf8(bytes.unwrap_or_default()).unwrap();
            for l in text.lines() {
                out.push(serde_json::from_str(l).unwrap_or_else(|e| panic!("{rel}: {e}: {l}")));
            }
        }
        out
    }

    fn last(&self) -> Value {
        serde_json::from_slice(&std::fs::read(self.dir.join(".reconcile/last.json")).unwrap())
            .unwrap()
    }

    /// Every path beneath S, relative (with `/`), sorted, with file contents (symlinks: their target).
    fn tree(&self) -> Vec<(String, Option<Vec<u8>>)> {
        fn walk(base: &Path, dir: &Path, out: &mut Vec<(String, Option<Vec<u8>>)>) {
            for e in std::fs::read_dir(dir).unwrap() {
                let e = e.unwrap();
                let p = e.path();
                let rel = common::slashed(p.strip_prefix(base).unwrap());
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

fn sha256_hex(bytes: &[u8]) -> String {
    Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
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
    let unbinds = actions(report)
        .iter()
        .filter(|a| a["action"] == "unbind_thread")
        .filter(|a| {
            outcomes
                .iter()
                .any(|o| o["seq"] == a["seq"] && o["outcome"] == "applied")
        })
        .count();
    let unbind_lines: Vec<Value> = store
        .unbind_receipts()
        .into_iter()
        .filter(|l| l["run"] == run)
        .collect();
    assert_eq!(
        unbind_lines.len(),
        unbinds,
        "one store receipt per thread unbound"
    );
    for line in &unbind_lines {
        assert_valid("unbind-receipt-line", line);
        assert_eq!(
            str_of(line, "/thread"),
            format!(
                "{}/runtime/threads/{}.json",
                str_of(line, "/thread").split('/').next().unwrap(),
                str_of(line, "/thread_id")
            ),
            "the doctor's `thread` and the app's `thread_id` name the same record"
        );
    }
    assert_last_is_the_apps_summary(&store.last(), report);
}

/// The app's `ReconcileSummary` (codewhale-format §9.6), as its `codewhale doctor` reads
/// `.reconcile/last.json`: every field but `ran_at` has a default and unknown keys are ignored,
/// as in the app (`ran_at` is a chrono time there; its format is checked by last.schema.json).
#[derive(Debug, serde::Deserialize)]
#[allow(dead_code)]
struct AppReconcileSummary {
    ran_at: Option<String>,
    #[serde(default)]
    dry_run: bool,
    #[serde(default)]
    skipped_concurrent: bool,
    #[serde(default)]
    documents_set_aside: usize,
    #[serde(default)]
    documents_newer_schema: usize,
    #[serde(default)]
    stores_set_aside: usize,
    #[serde(default)]
    stores_kept_with_work: usize,
    #[serde(default)]
    stores_in_use: usize,
    #[serde(default)]
    sessions_recovered: usize,
    #[serde(default)]
    threads_unbound: usize,
    #[serde(default)]
    artifact_dirs_set_aside: usize,
    #[serde(default)]
    artifact_dirs_kept: usize,
    #[serde(default)]
    limit_reached: bool,
    #[serde(default)]
    set_aside_path: Option<PathBuf>,
    #[serde(default)]
    errors: Vec<String>,
}

/// `last.json` of the real run `report` validates, carries the doctor's own keys, and reads as
/// the app's `ReconcileSummary` with the same counts.
#[track_caller]
fn assert_last_is_the_apps_summary(last: &Value, report: &Value) {
    assert_valid("last", last);
    assert_eq!(last["run"], report["run"]);
    assert_eq!(last["summary"], report["summary"]);
    let app: AppReconcileSummary = serde_json::from_value(last.clone())
        .unwrap_or_else(|e| panic!("the app cannot read last.json: {e}\n{last:#}"));
    let sm = &report["summary"];
    assert_eq!(app.ran_at.as_deref(), Some(str_of(last, "/at")));
    assert!(!app.dry_run, "last.json is written by real runs only");
    for (name, n) in [
        ("documents_set_aside", app.documents_set_aside),
        ("documents_newer_schema", app.documents_newer_schema),
        ("stores_set_aside", app.stores_set_aside),
        ("stores_kept_with_work", app.stores_kept_with_work),
        ("stores_in_use", app.stores_in_use),
        ("sessions_recovered", app.sessions_recovered),
        ("threads_unbound", app.threads_unbound),
        ("artifact_dirs_set_aside", app.artifact_dirs_set_aside),
        ("artifact_dirs_kept", app.artifact_dirs_kept),
    ] {
        assert_eq!(sm[name], json!(n), "{name}");
    }
    assert_eq!(sm["limit_reached"], json!(app.limit_reached));
    assert_eq!(sm["skipped_concurrent"], json!(app.skipped_concurrent));
    assert_eq!(sm["errors"], json!(app.errors));
    assert_eq!(
        sm["set_aside_path"].as_str().map(PathBuf::from),
        app.set_aside_path
    );
    if sm["set_aside_path"].is_null() {
        assert!(last.get("set_aside_path").is_none(), "omitted when none");
    }
    if sm["errors"] == json!([]) {
        assert!(last.get("errors").is_none(), "omitted when empty");
    }
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
        ("remove_empty_dir", "left-empty"),
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
    let store_move = receipts
        .iter()
        .find(|r| r["run"] == run && r["path"] == "empty/runtime")
        .expect("the store set-aside is receipted");
    assert_eq!(
        store_move["removed_empty_dir"], "empty",
        "the session directory the store left empty is removed, receipted: {store_move}"
    );
    assert!(!store.dir.join("empty").exists());
    assert!(receipts.iter().any(|r| r.get("previous_sha256").is_some()));
    assert!(receipts.iter().any(|r| r["document"] == "th-orphan.json"));

    // The records the app reads: the recovered document, the rewritten thread, the turns and
    // items the recovery read.
    let recovered: Value =
        serde_json::from_slice(&std::fs::read(store.dir.join("th-orphan.json")).unwrap()).unwrap();
    assert_valid("document", &recovered);
    let record = |rel: &str| -> Value {
        serde_json::from_slice(&std::fs::read(store.dir.join(rel)).unwrap()).unwrap()
    };
    let thread = record("host/runtime/threads/th-orphan.json");
    assert_valid("thread", &thread);
    assert_eq!(
        thread["session_id"], "th-orphan",
        "bound to its recovered document"
    );
    assert_eq!(
        thread["a_host_field"],
        json!([1, 2]),
        "unknown keys are kept"
    );
    assert_valid("turn", &record("host/runtime/turns/turn_orphan_1.json"));
    for id in ["item_orphan_1_u", "item_orphan_1_a"] {
        assert_valid("item", &record(&format!("host/runtime/items/{id}.json")));
    }
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

    // Applying the same plan again finds its end state already there: every action is
    // skipped, saying which run applied it.
    let again = store.apply_plan();
    assert_valid("repair-output", &again);
    for o in again["outcomes"].as_array().unwrap() {
        assert_eq!(o["outcome"], "skipped", "{o}");
        assert_eq!(o["why"], format!("already applied (run {run})"));
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

/// The required fields at the top of a schema (following a top-level `$ref`), or of its
/// definition `def` (for a schema that is a choice of shapes), and whether it is closed
/// (`additionalProperties: false`).
fn top_shape(name: &str, def: Option<&str>) -> (Vec<String>, bool) {
    let schema = schema_value(name);
    let top = match (def, schema.get("$ref").and_then(Value::as_str)) {
        (Some(def), _) => schema["$defs"][def].clone(),
        (None, Some(r)) => schema.pointer(r.trim_start_matches('#')).unwrap().clone(),
        (None, None) => schema,
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
    assert_rejects_incomplete_as(name, None, valid)
}

/// [`assert_rejects_incomplete`] for an instance of the definition `def` of `name`.
fn assert_rejects_incomplete_as(name: &str, def: Option<&str>, valid: &Value) {
    assert_valid(name, valid);
    let (required, closed) = top_shape(name, def);
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
    assert_rejects_incomplete_as("manifest-line", Some("doctor_manifest_line"), &manifest);
    assert_rejects_incomplete_as("receipt-line", Some("doctor_receipt_line"), &receipt);
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
    // Earlier versions planned `remove_temp` (a deletion); the doctor refuses such a plan, so
    // the plan schema does not describe one.
    assert_rejects_edit("plan", &plan, "a remove_temp action", |v| {
        let a = &mut v["plan"]["actions"][0];
        a["action"] = json!("remove_temp");
        a.as_object_mut().unwrap().remove("kind");
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
    assert_rejects_edit("last", &last, "a dry run", |v| v["dry_run"] = json!(true));
    assert_rejects_edit("last", &last, "ran_at that is not a time", |v| {
        v["ran_at"] = json!("yesterday")
    });
    assert_rejects_edit("last", &last, "an app counter that is negative", |v| {
        v["threads_unbound"] = json!(-1)
    });
    assert_rejects_edit(
        "last",
        &last,
        "a summary without documents_unknown_content",
        |v| {
            v["summary"]
                .as_object_mut()
                .unwrap()
                .remove("documents_unknown_content");
        },
    );
    assert_rejects_edit("last", &last, "errors given as an empty list", |v| {
        v["errors"] = json!([])
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

// ---- what the app writes ---------------------------------------------------------------

/// Lines the app writes into a set-aside manifest and the central receipts (codewhale-format
/// §9.4, §9.5): absolute paths, a `detail`, alphabetical keys. The schemas describe them too,
/// and still tell them from broken lines.
#[test]
fn app_written_manifest_and_receipt_lines_match_their_schemas() {
    let run = "20261001T120000Z-a1b2c3";
    let s = "/home/u/.codewhale/sessions";
    let line = |original: &str, detail: Value| {
        json!({
            "at": "2026-10-01T12:00:00.123456789+00:00",
            "detail": detail,
            "moved_to": format!("{s}/.set-aside/{run}/{original}"),
            "original": format!("{s}/{original}"),
            "reason": "empty Runtime store no document binds"
        })
    };
    let store = line("x/runtime", json!({ "kind": "runtime_store" }));
    let document = line(
        "torn.json",
        json!({ "sha256": "0".repeat(64), "bytes": 120 }),
    );
    let directory = line("art", json!({ "kind": "directory" }));
    let unread = line("gone.json", Value::Null);
    for l in [&store, &document, &directory, &unread] {
        assert_valid("manifest-line", l);
    }
    let m = "manifest-line";
    assert_rejects_edit(m, &store, "a relative original", |v| {
        v["original"] = json!("x/runtime")
    });
    assert_rejects_edit(m, &store, "moved_to outside a run", |v| {
        v["moved_to"] = json!(format!("{s}/elsewhere/x/runtime"))
    });
    assert_rejects_edit(m, &store, "an unknown detail kind", |v| {
        v["detail"] = json!({ "kind": "trash" })
    });
    assert_rejects_edit(m, &document, "a document digest without bytes", |v| {
        v["detail"].as_object_mut().unwrap().remove("bytes");
    });
    assert_rejects_edit(m, &store, "a line without detail", |v| {
        v.as_object_mut().unwrap().remove("detail");
    });
    assert_rejects_edit(m, &store, "an app line with a doctor's run", |v| {
        v["run"] = json!(run)
    });

    let receipts = [
        json!({
            "action": "store_set_aside",
            "at": "2026-10-01T12:00:00Z",
            "moved_to": format!("{s}/.set-aside/{run}/x/runtime"),
            "path": format!("{s}/x/runtime"),
            "reason": "empty Runtime store no document binds"
        }),
        json!({
            "action": "session_recovered",
            "at": "2026-10-01T12:00:00Z",
            "session_id": "thr_0123456789abcdef0123456789abcdef",
            "store": format!("{s}/y/runtime"),
            "thread_id": "thr_0123456789abcdef0123456789abcdef",
            "title": "Recovered: work"
        }),
        json!({
            "action": "set_aside",
            "at": "2026-10-01T12:00:00Z",
            "moved_to": format!("{s}/.set-aside/{run}/torn.json"),
            "path": format!("{s}/torn.json"),
            "reason": "unreadable document: EOF while parsing a value at line 3 column 0"
        }),
    ];
    for r in &receipts {
        assert_valid("receipt-line", r);
    }
    let r = "receipt-line";
    assert_rejects_edit(r, &receipts[0], "an unknown app action", |v| {
        v["action"] = json!("store_deleted")
    });
    assert_rejects_edit(r, &receipts[1], "a recovery without its thread", |v| {
        v.as_object_mut().unwrap().remove("thread_id");
    });
    assert_rejects_edit(r, &receipts[2], "a relative app path", |v| {
        v["path"] = json!("torn.json")
    });
}

/// A `.reconcile/last.json` the app wrote (its `ReconcileSummary` only) does not fail the
/// report: `doctor` shows it, without the doctor's keys; one that is not JSON shows none.
#[test]
fn status_reads_a_last_json_the_app_wrote() {
    let store = Store::new();
    let reconcile = store.dir.join(".reconcile");
    std::fs::create_dir_all(&reconcile).unwrap();
    let app_last = json!({
        "ran_at": "2026-10-01T12:00:00.123456789Z",
        "dry_run": false,
        "skipped_concurrent": false,
        "documents_set_aside": 1,
        "documents_newer_schema": 0,
        "stores_set_aside": 2,
        "stores_kept_with_work": 0,
        "stores_in_use": 0,
        "sessions_recovered": 1,
        "threads_unbound": 0,
        "artifact_dirs_set_aside": 0,
        "artifact_dirs_kept": 0,
        "limit_reached": false,
        "set_aside_path": "/home/u/.codewhale/sessions/.set-aside/20261001T120000Z-a1b2c3"
    });
    std::fs::write(
        reconcile.join("last.json"),
        serde_json::to_vec_pretty(&app_last).unwrap(),
    )
    .unwrap();
    let status = store.status();
    assert_valid("status", &status);
    assert_eq!(status["last"], app_last, "the app's keys, as written");

    // Fewer keys (the app's defaults) read too.
    std::fs::write(
        reconcile.join("last.json"),
        r#"{ "ran_at": null, "sessions_recovered": 3 }"#,
    )
    .unwrap();
    let status = store.status();
    assert_valid("status", &status);
    assert_eq!(status["last"]["sessions_recovered"], 3);
    assert_eq!(status["last"]["ran_at"], Value::Null);

    std::fs::write(reconcile.join("last.json"), "not json").unwrap();
    let status = store.status();
    assert_valid("status", &status);
    assert_eq!(status["last"], Value::Null);

    // A real run replaces it with the superset.
    let real = store.repair();
    assert_last_is_the_apps_summary(&store.last(), &real);
    let status = store.status();
    assert_valid("status", &status);
    assert_eq!(status["last"]["run"], real["run"]);
}

/// A document using every part of the format: all block types, a journal with every entry
/// kind, optional metadata and top-level fields.
fn rich_document() -> Value {
    let text = json!({ "type": "text", "text": "hi", "cache_control": { "type": "ephemeral" } });
    let message = json!({ "role": "user", "content": [text] });
    json!({
        "schema_version": 1,
        "metadata": {
            "id": "rich",
            "runtime_store": {
                "data_dir": "/home/u/.codewhale/sessions/rich/runtime",
                "execution_scope": "0".repeat(64)
            },
            "title": "Rich",
            "created_at": "2026-09-01T10:00:00.5Z",
            "updated_at": "2026-09-01T11:00:00+00:00",
            "message_count": 2,
            "total_tokens": 30,
            "model": "auto",
            "model_provider": "deepseek",
            "model_provider_id": "deepseek-main",
            "workspace": "/home/u/proj",
            "mode": null,
            "cost": {
                "session_cost_usd": 0.01,
                "priced_turns": 1,
                "unpriced_turns": 0,
                "unpriced_reasons": ["late_usage_ledger_unavailable"],
                "missing_usage_sources": {},
                "coverage_recorded": true
            },
            "parent_session_id": "parent",
            "forked_from_message_count": 1,
            "cumulative_turn_secs": 12,
            "archived": true,
            "spawn_depth": 0
        },
        "messages": [
            message,
            {
                "role": "assistant",
                "content": [
                    { "type": "thinking", "thinking": "hmm", "signature": "sig",
                      "state": { "provider": "p", "api": "a", "model": "m", "encrypted_content": "x" } },
                    { "type": "tool_use", "id": "call_1", "name": "shell", "input": { "cmd": "ls" },
                      "execution_id": "exec_1", "caller": { "type": "direct" } },
                    { "type": "server_tool_use", "id": "s1", "name": "search", "input": null },
                    { "type": "image_url", "image_url": { "url": "https://example.com/a.png" } }
                ]
            },
            {
                "role": "user",
                "content": [
                    { "type": "tool_result", "tool_use_id": "call_1", "content": "a b",
                      "is_error": false, "content_blocks": [] },
                    { "type": "tool_search_tool_result", "tool_use_id": "s1", "content": [] },
                    { "type": "code_execution_tool_result", "tool_use_id": "s2", "content": { "ok": true } }
                ]
            }
        ],
        "journal": {
            "entries": [
                { "id": "e1", "kind": "message", "message": message,
                  "created_at": "2026-09-01T10:00:00Z", "spawn_depth": 0 },
                { "id": "e2", "parent_id": "e1", "kind": "user", "text": "u", "created_at": "2026-09-01T10:00:01Z" },
                { "id": "e3", "parent_id": "e2", "kind": "assistant", "text": "a", "created_at": "2026-09-01T10:00:02Z" },
                { "id": "e4", "parent_id": "e3", "kind": "compaction", "summary": "s", "tokens_before": 10,
                  "created_at": "2026-09-01T10:00:03Z" },
                { "id": "e5", "parent_id": "e4", "kind": "branch_summary", "branch_id": "b", "summary": "s",
                  "created_at": "2026-09-01T10:00:04Z" },
                { "id": "e6", "parent_id": "e5", "kind": "system", "content": "c", "created_at": "2026-09-01T10:00:05Z" }
            ],
            "leaf_id": "e6",
            "schema_version": 1,
            "spawn_depth": 0
        },
        "leaf_id": "e6",
        "system_prompt": "be brief",
        "context_references": [{ "message_index": 0, "reference": { "path": "a.rs" } }],
        "artifacts": [{
            "id": "art_1", "kind": "tool_output", "session_id": "rich", "tool_call_id": "call_1",
            "tool_name": "shell", "created_at": "2026-09-01T10:00:00Z", "byte_size": 10,
            "preview": "a b", "storage_path": "/home/u/.codewhale/sessions/rich/artifacts/art_call_1.txt"
        }],
        "window_title": "rich",
        "turn_outcomes": [{ "status": "completed", "error": null, "ended_at": "2026-09-01T10:00:00Z",
                            "after_message_count": 2 }],
        "a_future_field": true
    })
}

/// The app's own records (codewhale-format §1, §5, §6) against the schemas that publish them:
/// real shapes validate, and each broken shape the app refuses is rejected.
#[test]
fn the_apps_records_match_their_schemas() {
    let doc = rich_document();
    assert_valid("document", &doc);
    assert_valid("document", &serde_json::from_str::<Value>(GOOD).unwrap());
    let mut legacy = serde_json::from_str::<Value>(GOOD).unwrap();
    legacy.as_object_mut().unwrap().remove("schema_version");
    assert_valid("document", &legacy);
    assert_rejects_incomplete("document", &doc);
    let d = "document";
    assert_rejects_edit(d, &doc, "content given as a string", |v| {
        v["messages"][0]["content"] = json!("hi")
    });
    assert_rejects_edit(d, &doc, "a block without type", |v| {
        v["messages"][0]["content"][0]
            .as_object_mut()
            .unwrap()
            .remove("type");
    });
    assert_rejects_edit(d, &doc, "a text block without text", |v| {
        v["messages"][0]["content"][0]
            .as_object_mut()
            .unwrap()
            .remove("text");
    });
    assert_rejects_edit(
        d,
        &doc,
        "a tool_result whose content is not a string",
        |v| v["messages"][2]["content"][0]["content"] = json!([{ "type": "text", "text": "x" }]),
    );
    assert_rejects_edit(d, &doc, "a tool_use without input", |v| {
        v["messages"][1]["content"][1]
            .as_object_mut()
            .unwrap()
            .remove("input");
    });
    for field in [
        "id",
        "title",
        "created_at",
        "updated_at",
        "message_count",
        "total_tokens",
        "model",
        "workspace",
    ] {
        assert_rejects_edit(d, &doc, &format!("metadata without {field}"), |v| {
            v["metadata"].as_object_mut().unwrap().remove(field);
        });
    }
    assert_rejects_edit(d, &doc, "a binding without its scope", |v| {
        v["metadata"]["runtime_store"]
            .as_object_mut()
            .unwrap()
            .remove("execution_scope");
    });
    assert_rejects_edit(d, &doc, "a negative total", |v| {
        v["metadata"]["total_tokens"] = json!(-1)
    });
    assert_rejects_edit(
        d,
        &doc,
        "a journal message entry without its message",
        |v| {
            v["journal"]["entries"][0]
                .as_object_mut()
                .unwrap()
                .remove("message");
        },
    );
    assert_rejects_edit(d, &doc, "a journal entry without created_at", |v| {
        v["journal"]["entries"][1]
            .as_object_mut()
            .unwrap()
            .remove("created_at");
    });
    // Kept, not refused: the app may be newer than the doctor.
    let mut unknown = doc.clone();
    unknown["messages"][0]["content"][0] = json!({ "type": "hologram", "frames": 3 });
    assert_valid(d, &unknown);

    let thread = json!({
        "id": "thr_0123456789abcdef0123456789abcdef",
        "created_at": "2026-09-01T10:00:00.25Z",
        "updated_at": "2026-09-01T11:00:00Z",
        "model": "auto",
        "workspace": "/home/u/proj",
        "mode": "agent",
        "allow_shell": true,
        "trust_mode": false,
        "auto_approve": false,
        "latest_turn_id": "turn_1",
        "archived": false,
        "session_id": "thr_0123456789abcdef0123456789abcdef",
        "saved_session_checkpoint": {
            "covered_turn_id": null,
            "messages_sha256": "535b3e334916edfeb56ece3eb1525e3d6c12ce097803ead53453887d75626af4"
        }
    });
    assert_rejects_incomplete("thread", &thread);
    let t = "thread";
    assert_rejects_edit(t, &thread, "a checkpoint without messages_sha256", |v| {
        v["saved_session_checkpoint"]
            .as_object_mut()
            .unwrap()
            .remove("messages_sha256");
    });
    assert_rejects_edit(t, &thread, "allow_shell as a string", |v| {
        v["allow_shell"] = json!("yes")
    });
    assert_rejects_edit(t, &thread, "an id with a slash", |v| {
        v["id"] = json!("../x")
    });

    let turn = json!({
        "schema_version": 4,
        "id": "turn_1",
        "thread_id": "thr_0123456789abcdef0123456789abcdef",
        "status": "interrupted",
        "input_summary": "fix it",
        "created_at": "2026-09-01T10:00:00Z",
        "maxOutputTokens": 8192,
        "usage": { "input_tokens": 10, "output_tokens": 20, "reasoning_tokens": 5 },
        "item_ids": ["item_1"]
    });
    assert_rejects_incomplete("turn", &turn);
    let tu = "turn";
    assert_rejects_edit(tu, &turn, "an unknown status", |v| {
        v["status"] = json!("done")
    });
    assert_rejects_edit(tu, &turn, "schema 4 without maxOutputTokens", |v| {
        v.as_object_mut().unwrap().remove("maxOutputTokens");
    });
    assert_rejects_edit(tu, &turn, "maxOutputTokens below schema 4", |v| {
        v["schema_version"] = json!(2)
    });
    assert_rejects_edit(tu, &turn, "usage without output_tokens", |v| {
        v["usage"].as_object_mut().unwrap().remove("output_tokens");
    });

    let item = json!({
        "id": "item_1",
        "turn_id": "turn_1",
        "kind": "tool_call",
        "status": "completed",
        "summary": "shell",
        "detail": "ls",
        "metadata": { "tool_use_id": "call_1", "tool_name": "shell", "tool_input": "{\"cmd\":\"ls\"}" },
        "artifact_refs": [],
        "started_at": "2026-09-01T10:00:00Z"
    });
    assert_rejects_incomplete("item", &item);
    let i = "item";
    assert_rejects_edit(i, &item, "an unknown kind", |v| {
        v["kind"] = json!("thought")
    });
    assert_rejects_edit(i, &item, "image input without its content", |v| {
        v["kind"] = json!("user_message");
        v["schema_version"] = json!(3);
    });

    let unbind = json!({
        "action": "thread_unbound",
        "at": "2026-11-29T12:00:00Z",
        "reason": "its session document no longer exists",
        "saved_session_checkpoint": thread["saved_session_checkpoint"],
        "session_id": "gone",
        "thread_id": "th-orphan",
        "run": "20261129T120000Z-a1b2c3",
        "thread": "host/runtime/threads/th-orphan.json",
        "previous_sha256": "0".repeat(64),
        "previous_session_id": "gone"
    });
    assert_rejects_incomplete("unbind-receipt-line", &unbind);
    let mut app_line = unbind.clone();
    for k in ["run", "thread", "previous_sha256", "previous_session_id"] {
        app_line.as_object_mut().unwrap().remove(k);
    }
    assert_valid("unbind-receipt-line", &app_line);
    assert_rejects_edit(
        "unbind-receipt-line",
        &unbind,
        "a doctor line without its thread",
        |v| {
            v.as_object_mut().unwrap().remove("thread");
        },
    );
    assert_rejects_edit("unbind-receipt-line", &unbind, "another action", |v| {
        v["action"] = json!("thread_bound")
    });
}
