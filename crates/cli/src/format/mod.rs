//! The output formats of `--output-format` (cli.md, Version 2): `text` (each report's
//! `render_human`), `json` (the report itself), and the machine formats CI systems read,
//! rendered from one [`View`] of a report: `json-lines`, `github`, `markdown` and `junit`.
//! Each machine format is a function of the view alone: the same report gives the same bytes.

pub mod github;
pub mod json_lines;
pub mod junit;
pub mod markdown;
#[cfg(test)]
mod test_reports;

use std::collections::BTreeMap;

use plan::{Outcome, OutcomeKind, Plan, PlannedAction};

pub use github::{append_step_summary, github};
pub use junit::junit;
pub use markdown::markdown;

/// `--output-format`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum OutputFormat {
    /// The human report.
    #[default]
    Text,
    /// One JSON document.
    Json,
    /// One JSON object per line: progress, actions, then the summary.
    JsonLines,
    /// GitHub Actions workflow commands (annotations), and the markdown report appended to
    /// `$GITHUB_STEP_SUMMARY`.
    Github,
    /// A markdown report, fit for a pull-request comment.
    Markdown,
    /// JUnit XML: a test suite per rule, a test case per planned action.
    Junit,
}

impl OutputFormat {
    /// The name `--output-format` takes.
    pub fn name(self) -> &'static str {
        match self {
            OutputFormat::Text => "text",
            OutputFormat::Json => "json",
            OutputFormat::JsonLines => "json-lines",
            OutputFormat::Github => "github",
            OutputFormat::Markdown => "markdown",
            OutputFormat::Junit => "junit",
        }
    }
}
/// The summary line of a real run that changed nothing.
pub const NOTHING_CHANGED: &str = "nothing changed";

/// An item a run left on purpose (a rule's skip, an item kept), as a machine format shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeptItem {
    /// The path as a reader should see it (joined to its root for the build-dirs pack).
    pub path: String,
    /// The rule code that left it.
    pub rule: String,
    /// Why.
    pub why: String,
}

impl From<&plan::Skipped> for KeptItem {
    fn from(s: &plan::Skipped) -> KeptItem {
        KeptItem {
            path: s.path.clone(),
            rule: s.rule.clone(),
            why: s.why.clone(),
        }
    }
}

/// What the machine formats read of a report: one view over the repair, apply, restore, purge
/// and sweep reports alike.
pub trait View {
    /// The command, as `doctor <command>` names it: `sessions repair`, `sessions apply`,
    /// `sessions restore`, `sessions purge`, `build-dirs sweep`.
    fn command(&self) -> &'static str;
    /// The directories the run works on: the sessions directory, or each build root.
    fn targets(&self) -> Vec<String>;
    /// Whether nothing was written.
    fn dry_run(&self) -> bool;
    /// The plan (planned in a dry run, applied in a real run).
    fn plan(&self) -> &Plan;
    /// One outcome per action of a real run (applied, skipped or failed); empty for a dry run.
    fn outcomes(&self) -> &[Outcome];
    /// Items left on purpose or kept.
    fn kept(&self) -> Vec<KeptItem>;
    /// The rules as `(code, name)`: every rule of the command's pack in registry order, whether
    /// it acted or not (for a purge, the one code its actions carry), then each other code an
    /// action or kept item carries (the doctor's housekeeping, `doctor`), so every action and
    /// kept item belongs to one of them.
    fn rules(&self) -> Vec<(String, String)>;
    /// One line that sums the run up: the notice line of a real run ([`NOTHING_CHANGED`] when
    /// there is none), the counts line a dry run's text output ends with; for a restore or a
    /// purge, dry or real, the counts line its text output ends with.
    fn summary_line(&self) -> String;
    /// The errors met, each naming its path.
    fn problems(&self) -> &[engine::Problem];
    /// The messages of [`View::problems`].
    fn errors(&self) -> Vec<String> {
        self.problems().iter().map(ToString::to_string).collect()
    }
    /// The report's `summary` object, as its JSON form has it.
    fn summary_json(&self) -> serde_json::Value;
}

/// `(code, name)` of every rule of a pack's registry, in registry order.
pub(crate) fn registry<P: engine::Pack>(rules: &[&dyn engine::Rule<P>]) -> Vec<(String, String)> {
    rules
        .iter()
        .map(|r| (r.code().to_owned(), r.name().to_owned()))
        .collect()
}

/// `rules`, then each other rule code the plan's actions or the kept items carry (the
/// doctor's housekeeping, `doctor`), in order of first appearance: every action and kept item
/// then belongs to a rule of the list. An action gives its code the action's `rule_name`; a
/// code only a kept item carries is named when it is the housekeeping's, else left unnamed.
pub(crate) fn rules_seen(
    mut rules: Vec<(String, String)>,
    plan: &Plan,
    kept: &[KeptItem],
) -> Vec<(String, String)> {
    for a in &plan.actions {
        if !rules.iter().any(|(code, _)| *code == a.rule) {
            rules.push((a.rule.clone(), a.rule_name.clone()));
        }
    }
    for k in kept {
        if !rules.iter().any(|(code, _)| *code == k.rule) {
            let name = if k.rule == engine::housekeeping::CODE {
                engine::housekeeping::NAME
            } else {
                ""
            };
            rules.push((k.rule.clone(), name.to_owned()));
        }
    }
    rules
}

/// `R1 unreadable-document`; the code alone when the name is empty.
pub(crate) fn rule_title(code: &str, name: &str) -> String {
    if name.is_empty() {
        code.to_owned()
    } else {
        format!("{code} {name}")
    }
}

/// One planned action of a view, with what became of it in a real run.
pub(crate) struct ActionView<'a> {
    /// The action.
    pub(crate) action: &'a PlannedAction,
    /// Its outcome: `None` in a dry run.
    pub(crate) outcome: Option<&'a Outcome>,
    dry_run: bool,
}

impl ActionView<'_> {
    /// `would set aside` (dry run), `set aside` (applied), `skipped`, `failed`.
    pub(crate) fn verb(&self) -> String {
        let kind = self.action.action.kind();
        if self.dry_run {
            return format!("would {}", kind.verb());
        }
        match self.outcome.map(|o| o.outcome) {
            Some(OutcomeKind::Skipped) => "skipped".to_owned(),
            Some(OutcomeKind::Failed) => "failed".to_owned(),
            Some(OutcomeKind::Applied) | None => kind.past().to_owned(),
        }
    }

    /// The path as a reader should see it (joined to its root for B1).
    pub(crate) fn path(&self) -> String {
        plan::shown_path(self.action)
    }

    /// The action's reason; for one skipped or failed, why it was not applied.
    pub(crate) fn detail(&self) -> &str {
        match self.outcome {
            Some(Outcome {
                outcome: OutcomeKind::Skipped | OutcomeKind::Failed,
                why,
                ..
            }) => why.as_deref().unwrap_or(""),
            _ => &self.action.reason,
        }
    }

    /// `applied`, `skipped: <why>` or `failed: <why>`; `None` in a dry run.
    pub(crate) fn outcome_text(&self) -> Option<String> {
        let o = self.outcome?;
        Some(match (o.outcome, o.why.as_deref()) {
            (OutcomeKind::Applied, _) => "applied".to_owned(),
            (kind, why) => {
                let word = if kind == OutcomeKind::Skipped {
                    "skipped"
                } else {
                    "failed"
                };
                match why {
                    Some(why) => format!("{word}: {why}"),
                    None => word.to_owned(),
                }
            }
        })
    }

    /// The action's line of the text output (`plan::render_actions`), without its newline.
    pub(crate) fn text_line(&self) -> String {
        let outcomes = self.outcome.map(std::slice::from_ref).unwrap_or_default();
        let mut line =
            plan::render_actions(std::slice::from_ref(self.action), outcomes, self.dry_run);
        line.truncate(line.trim_end_matches('\n').len());
        line
    }
}

/// The view's actions in plan order, each with its outcome (by `seq`) in a real run.
pub(crate) fn actions(v: &dyn View) -> Vec<ActionView<'_>> {
    let dry_run = v.dry_run();
    let by_seq: BTreeMap<u64, &Outcome> = if dry_run {
        BTreeMap::new()
    } else {
        v.outcomes().iter().map(|o| (o.seq, o)).collect()
    };
    v.plan()
        .actions
        .iter()
        .map(|a| ActionView {
            action: a,
            outcome: by_seq.get(&a.seq).copied(),
            dry_run,
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every machine format of a report, one after the other, as the snapshots show them.
    fn all_formats(v: &dyn View) -> String {
        let mut lines: Vec<String> = json_lines::action_lines(v)
            .iter()
            .map(ToString::to_string)
            .collect();
        lines.push(json_lines::summary_line(v).to_string());
        format!(
            "--- github ---\n{}--- markdown ---\n{}--- junit ---\n{}--- json-lines ---\n{}\n",
            github(v),
            markdown(v),
            junit(v),
            lines.join("\n")
        )
    }

    #[test]
    fn every_format_over_the_demo_store_dry_and_real() {
        let demo = test_reports::demo();
        assert_eq!(demo.dry.command(), "sessions repair");
        assert!(demo.dry.dry_run() && !demo.real.dry_run());
        assert_eq!(demo.real.plan().actions.len(), demo.real.outcomes().len());
        let mut settings = insta::Settings::clone_current();
        settings.set_prepend_module_to_snapshot(false);
        settings.bind(|| {
            insta::assert_snapshot!("demo_dry", demo.redact(&all_formats(&demo.dry)));
            insta::assert_snapshot!("demo_real", demo.redact(&all_formats(&demo.real)));
        });
    }

    #[test]
    fn an_applied_plan_is_sessions_apply_and_its_json_is_unchanged() {
        let applied = test_reports::demo_applied_plan();
        assert_eq!(applied.command(), "sessions apply");
        assert!(!applied.dry_run());
        assert!(!applied.plan().actions.is_empty());
        let json = serde_json::to_value(&applied).unwrap();
        let keys: Vec<&str> = json
            .as_object()
            .unwrap()
            .keys()
            .map(String::as_str)
            .collect();
        assert_eq!(
            keys,
            [
                "schema_version",
                "dry_run",
                "sessions_dir",
                "run",
                "plan",
                "outcomes",
                "summary",
                "skipped",
                "ignored",
                "unusable_bindings",
                "interrupted_writes"
            ]
        );
        assert_eq!(test_reports::repair_dry(1).command(), "sessions repair");
    }

    #[test]
    fn rules_list_the_registry_then_every_other_code_met() {
        let r = test_reports::purge_real();
        assert_eq!(
            r.rules(),
            [("purge".to_owned(), "purge-set-aside".to_owned())]
        );
        let mut plan = Plan::default();
        plan.actions.push(test_reports::action(
            1,
            engine::housekeeping::CODE,
            engine::housekeeping::NAME,
            engine::housekeeping::ACTION,
            ".reconcile/.last.json.doctor-tmp-1-0",
            engine::housekeeping::REASON,
        ));
        let kept = [KeptItem {
            path: "x".into(),
            rule: "Z9".into(),
            why: "y".into(),
        }];
        let rules = rules_seen(registry(build_dirs::RULES), &plan, &kept);
        assert_eq!(
            rules,
            [
                ("B1".to_owned(), "leaked-go-workdir".to_owned()),
                ("doctor".to_owned(), "interrupted-write".to_owned()),
                ("Z9".to_owned(), String::new()),
            ]
        );
        assert_eq!(rule_title("Z9", ""), "Z9");
    }
}
