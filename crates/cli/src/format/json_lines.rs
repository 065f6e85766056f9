//! The `json-lines` format: one JSON object per line, each with a `type`: `progress` (a phase as
//! it goes), `action` (one per planned action, with its outcome in a real run) and `summary`
//! (last). `docs/schemas/json-lines.schema.json` describes every line. Printing the lines, one
//! per line and flushed, is the caller's.

use serde_json::{json, Map, Value};

use super::{actions, View};

/// One `{"type": "action", ...}` per planned action, in plan order: the action's fields as the
/// plan JSON has them and, in a real run, `outcome`, its outcome object (`seq`, `outcome`,
/// `why`).
pub fn action_lines(v: &dyn View) -> Vec<Value> {
    actions(v)
        .into_iter()
        .map(|a| {
            let mut line = Map::new();
            line.insert("type".into(), json!("action"));
            match serde_json::to_value(a.action).expect("a planned action serializes") {
                Value::Object(fields) => line.extend(fields),
                other => unreachable!("a planned action serializes as an object, not {other}"),
            }
            if let Some(o) = a.outcome {
                line.insert(
                    "outcome".into(),
                    serde_json::to_value(o).expect("an outcome serializes"),
                );
            }
            Value::Object(line)
        })
        .collect()
}

/// `{"type": "summary", ...}`: the command, `dry_run`, the `targets`, the report's `summary`
/// object and its summary `line`.
pub fn summary_line(v: &dyn View) -> Value {
    json!({
        "type": "summary",
        "command": v.command(),
        "dry_run": v.dry_run(),
        "targets": v.targets(),
        "summary": v.summary_json(),
        "line": v.summary_line(),
    })
}

/// `{"type": "progress", "phase": .., "done": .., "total": ..}`; `total` is `null` when unknown.
pub fn progress_line(phase: &str, done: u64, total: Option<u64>) -> Value {
    json!({
        "type": "progress",
        "phase": phase,
        "done": done,
        "total": total,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::format::test_reports;

    const SCHEMA: &str = include_str!("../../../../docs/schemas/json-lines.schema.json");
    const PLAN_SCHEMA: &str = include_str!("../../../../docs/schemas/plan.schema.json");

    fn validator(schema: &Value) -> jsonschema::Validator {
        jsonschema::draft202012::options()
            .should_validate_formats(true)
            .build(schema)
            .unwrap_or_else(|e| panic!("the schema does not compile: {e}"))
    }

    fn schema() -> Value {
        serde_json::from_str(SCHEMA).expect("json-lines.schema.json is JSON")
    }

    /// Every line of `v`, as a run prints them: a progress line, the actions, the summary.
    fn lines(v: &dyn View) -> Vec<Value> {
        let mut lines = vec![progress_line("scanning", 0, None)];
        lines.extend(action_lines(v));
        lines.push(progress_line("applying", 3, Some(4)));
        lines.push(summary_line(v));
        lines
    }

    #[track_caller]
    fn assert_all_valid(v: &dyn View) {
        let schema = validator(&schema());
        for line in lines(v) {
            let errors: Vec<String> = schema
                .iter_errors(&line)
                .map(|e| format!("{}: {e}", e.instance_path()))
                .collect();
            assert!(errors.is_empty(), "{}\n{line}", errors.join("\n"));
            // One line each: the serialized form holds no newline.
            assert!(!serde_json::to_string(&line).unwrap().contains('\n'));
        }
    }

    #[test]
    fn the_schema_is_draft_2020_12() {
        let schema = schema();
        assert_eq!(
            schema["$schema"],
            "https://json-schema.org/draft/2020-12/schema"
        );
        jsonschema::meta::validate(&schema).expect("a valid draft 2020-12 schema");
    }

    #[test]
    fn every_line_of_every_report_fits_the_schema() {
        assert_all_valid(&test_reports::repair_dry(130));
        assert_all_valid(&test_reports::repair_real());
        assert_all_valid(&test_reports::sweep_dry());
        assert_all_valid(&test_reports::purge_real());
        let demo = test_reports::demo();
        assert!(!demo.dry.plan.actions.is_empty());
        assert_all_valid(&demo.dry);
        assert_all_valid(&demo.real);
        // A path or reason with a newline still makes one line.
        for line in action_lines(&test_reports::repair_odd()) {
            let text = serde_json::to_string(&line).unwrap();
            assert!(!text.contains('\n'), "{text}");
            assert_eq!(line["path"], test_reports::ODD);
        }
    }

    #[test]
    fn the_schema_rejects_lines_that_are_not_what_the_doctor_prints() {
        let schema = validator(&schema());
        let real = test_reports::repair_real();
        let action = action_lines(&real).remove(1);
        let summary = summary_line(&real);
        let progress = progress_line("scanning", 1, Some(2));
        for (what, line) in [
            ("an unknown type", json!({"type": "other"})),
            (
                "a line without a type",
                json!({"phase": "x", "done": 1, "total": null}),
            ),
            ("a progress line without total", {
                let mut l = progress.clone();
                l.as_object_mut().unwrap().remove("total");
                l
            }),
            ("a negative count", {
                let mut l = progress.clone();
                l["done"] = json!(-1);
                l
            }),
            ("an action without its reason", {
                let mut l = action.clone();
                l.as_object_mut().unwrap().remove("reason");
                l
            }),
            ("a skipped outcome without why", {
                let mut l = action.clone();
                l["outcome"].as_object_mut().unwrap().remove("why");
                l
            }),
            ("an action with an unknown field", {
                let mut l = action.clone();
                l["surely_not_a_field"] = json!(1);
                l
            }),
            ("a repair summary in a sweep's shape", {
                let mut l = summary.clone();
                l["command"] = json!("build-dirs sweep");
                l
            }),
            ("a summary without its line", {
                let mut l = summary.clone();
                l.as_object_mut().unwrap().remove("line");
                l
            }),
        ] {
            assert!(!schema.is_valid(&line), "the schema accepts {what}: {line}");
        }
    }

    #[test]
    fn an_action_line_is_the_plan_json_of_its_action_plus_type_and_outcome() {
        let real = test_reports::repair_real();
        let lines = action_lines(&real);
        assert_eq!(lines.len(), real.plan.actions.len());
        let plan_defs = serde_json::from_str::<Value>(PLAN_SCHEMA).unwrap()["$defs"].clone();
        let planned_action = validator(&json!({
            "$schema": "https://json-schema.org/draft/2020-12/schema",
            "$ref": "#/$defs/planned_action",
            "$defs": plan_defs,
        }));
        for (line, (a, o)) in lines
            .iter()
            .zip(real.plan.actions.iter().zip(&real.outcomes))
        {
            let mut fields = line.as_object().unwrap().clone();
            assert_eq!(fields.shift_remove("type"), Some(json!("action")));
            assert_eq!(
                fields.shift_remove("outcome"),
                Some(serde_json::to_value(o).unwrap())
            );
            let fields = Value::Object(fields);
            assert_eq!(fields, serde_json::to_value(a).unwrap());
            assert!(planned_action.is_valid(&fields), "{fields}");
        }
        // `type` comes first, then the plan's fields in their order, then `outcome`.
        let keys: Vec<&str> = lines[0]
            .as_object()
            .unwrap()
            .keys()
            .map(String::as_str)
            .collect();
        assert_eq!(
            keys,
            [
                "type",
                "seq",
                "rule",
                "rule_name",
                "action",
                "path",
                "kind",
                "reason",
                "precondition",
                "outcome"
            ]
        );
        // A dry run has no outcome.
        let dry = action_lines(&test_reports::repair_dry(1));
        assert!(dry[0].get("outcome").is_none());
    }

    #[test]
    fn the_summary_line_carries_the_targets_the_counts_and_the_line() {
        assert_eq!(
            summary_line(&test_reports::sweep_dry()),
            json!({
                "type": "summary",
                "command": "build-dirs sweep",
                "dry_run": true,
                "targets": ["/tmp/roots/a", "/tmp/roots/b/"],
                "summary": {
                    "dirs_reclaimed": 2, "bytes_freed": 3072, "dirs_spared": 1,
                    "processes_scanned": 12, "proc_items_unreadable": 0, "actions_deferred": 0,
                    "limit_reached": false, "errors": []
                },
                "line": "2 actions planned, 3.0 KiB to free; nothing was written",
            })
        );
        let purge = summary_line(&test_reports::purge_real());
        assert_eq!(purge["command"], "sessions purge");
        assert_eq!(
            purge["line"],
            "set-aside runs purged: 1; freed: 4.0 KiB; skipped: 1"
        );
        assert_eq!(
            progress_line("applying", 2, None).to_string(),
            r#"{"type":"progress","phase":"applying","done":2,"total":null}"#
        );
    }
}
