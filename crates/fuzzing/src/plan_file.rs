//! Target `plan_file`: a plan file's bytes → the checks `sessions apply` makes before it applies
//! anything (JSON, `kind`, the typed `PlanFile`, `schema_version`, `engine::check_plan` against
//! the sessions registry).

use plan::{Action, PlanFile};
use serde_json::Value;

/// Reads `data` as `sessions apply` reads a plan file and, when every check accepts it,
/// asserts:
///
/// * it re-serialises (as `--plan-out` writes it) to a file that parses to an equal plan, which
///   the registry accepts again;
/// * no accepted action's path, document or `from` is absolute, empty, or has a `.`, `..` or
///   empty component: nothing a plan file names leaves S;
/// * no accepted action is one the sessions pack never plans (`reclaim_dir`, with its absolute
///   root); its lines render.
pub fn plan_file(data: &[u8]) {
    let Some(file) = accepted(data) else {
        return;
    };
    let mut again = serde_json::to_vec_pretty(&file).expect("a plan file serializes");
    again.push(b'\n');
    let back = accepted(&again).expect("a plan file written back is refused");
    assert_eq!(back, file, "a plan file does not read back as itself");
    for a in &file.plan.actions {
        assert!(crate::inside_s(&a.path), "accepted path {:?}", a.path);
        match &a.action {
            Action::RecoverThread { document } | Action::BindThread { document } => {
                assert!(crate::inside_s(document), "accepted document {document:?}");
            }
            Action::Restore { from, .. } => {
                assert!(crate::inside_s(from), "accepted from {from:?}");
            }
            Action::ReclaimDir { root } => panic!("accepted a reclaim of {root:?}"),
            _ => {}
        }
    }
    let _ = plan::render_actions(&file.plan.actions, &[], true);
}

/// The plan file in `data` when `sessions apply` would go on to apply it (the checks of
/// `doctor::apply_plan_bytes`, in its order).
fn accepted(data: &[u8]) -> Option<PlanFile> {
    let value: Value = serde_json::from_slice(data).ok()?;
    if value.get("kind").and_then(Value::as_str) != Some(PlanFile::KIND) {
        return None;
    }
    let file: PlanFile = serde_json::from_value(value).ok()?;
    if file.schema_version != 1 {
        return None;
    }
    engine::check_plan(sessions::RULES, &file.plan).ok()?;
    Some(file)
}
