//! The reports the entry points return, their JSON form (cli.md) and their human form.

use std::fmt::Write as _;

use engine::Planned;
use exec::Applied;
use plan::{
    render_actions, render_skipped, Outcome, OutcomeKind, Plan, PlanFile, PlannedAction, Skipped,
};
use serde::Serialize;
use sessions::LastRun;
use sessions::{count, notice_line, Summary};
use store::ids::RunId;

use crate::format::{self, KeptItem, View};

/// The JSON document of `--repair-sessions` and `--apply-plan`.
#[derive(Debug, Clone, Serialize)]
pub struct RepairReport {
    /// Format version (1).
    pub schema_version: u64,
    /// Whether nothing was written.
    pub dry_run: bool,
    /// Absolute S.
    pub sessions_dir: String,
    /// Run id.
    pub run: String,
    /// The plan.
    pub plan: Plan,
    /// One per action applied (empty for a dry run).
    pub outcomes: Vec<Outcome>,
    /// Counts.
    pub summary: Summary,
    /// Items rules left on purpose.
    pub skipped: Vec<Skipped>,
    /// Entries the doctor leaves alone.
    pub ignored: Vec<String>,
    /// Bindings that bind nothing the doctor may act on.
    pub unusable_bindings: Vec<refset::UnusableBinding>,
    /// The paths of the plan's housekeeping actions (files named like temporary files of
    /// interrupted writes, set aside): all of them in a dry run, the applied ones in a real run.
    pub interrupted_writes: Vec<String>,
    #[serde(skip)]
    ignored_why: Vec<(String, &'static str)>,
    /// Whether the report is of a saved plan applied (`sessions apply`), not of a repair.
    #[serde(skip)]
    from_plan_file: bool,
    /// A failure beside or after the actions (a receipt, `last.json` or the plan file that
    /// could not be written): the report of what was done is still printed, its message is in
    /// `summary.errors`, and the run exits 1.
    #[serde(skip)]
    pub late_failure: bool,
    /// The mass set-aside guard held R1 back (cli.md, Version 2): the run says why in
    /// `summary.errors` and exits 1.
    #[serde(skip)]
    pub mass_set_aside_refused: bool,
}

impl RepairReport {
    /// Records that the mass set-aside guard held R1 back, and why.
    pub(crate) fn note_mass_set_aside(&mut self, why: Option<engine::Problem>) {
        if let Some(why) = why {
            self.summary.errors.insert(0, why);
            self.mass_set_aside_refused = true;
        }
    }

    pub(crate) fn dry(sessions_dir: String, run: RunId, planned: Planned<Summary>) -> RepairReport {
        let mut actions = engine::count_actions(sessions::RULES, &planned.plan.actions);
        if planned.plan.actions.iter().any(fills_set_aside) {
            actions.set_aside_path = Some(format!("{}/{}", store::ids::SET_ASIDE_DIR, run.0));
        }
        RepairReport {
            schema_version: 1,
            dry_run: true,
            sessions_dir,
            run: run.0,
            outcomes: Vec::new(),
            summary: merged(planned_summary(&planned), &actions),
            skipped: planned.skipped,
            ignored: planned.ignored_why.iter().map(|(p, _)| p.clone()).collect(),
            unusable_bindings: planned.unusable_bindings,
            interrupted_writes: interrupted_writes(&planned.plan.actions, None),
            ignored_why: planned.ignored_why,
            late_failure: false,
            mass_set_aside_refused: false,
            from_plan_file: false,
            plan: planned.plan,
        }
    }

    pub(crate) fn applied(
        sessions_dir: String,
        run: RunId,
        planned: Planned<Summary>,
        applied: Applied,
    ) -> RepairReport {
        let actions = counted(&planned.plan, &applied, &run);
        RepairReport {
            schema_version: 1,
            dry_run: false,
            sessions_dir,
            run: run.0,
            summary: merged(planned_summary(&planned), &actions),
            skipped: planned.skipped,
            ignored: planned.ignored_why.iter().map(|(p, _)| p.clone()).collect(),
            unusable_bindings: planned.unusable_bindings,
            interrupted_writes: interrupted_writes(&planned.plan.actions, Some(&applied.outcomes)),
            outcomes: applied.outcomes,
            ignored_why: planned.ignored_why,
            late_failure: applied.records_failed,
            mass_set_aside_refused: false,
            from_plan_file: false,
            plan: planned.plan,
        }
    }

    /// The report of a run that found `.reconcile.lock` held by another doctor run: nothing
    /// planned, nothing written, `summary.skipped_concurrent` set.
    pub fn busy(sessions_dir: &std::path::Path, now: store::Timestamp) -> RepairReport {
        RepairReport {
            schema_version: 1,
            dry_run: false,
            sessions_dir: crate::repair::absolute(sessions_dir),
            run: RunId::new(now).0,
            plan: Plan::default(),
            outcomes: Vec::new(),
            summary: Summary {
                skipped_concurrent: true,
                ..Summary::default()
            },
            skipped: Vec::new(),
            ignored: Vec::new(),
            unusable_bindings: Vec::new(),
            interrupted_writes: Vec::new(),
            ignored_why: Vec::new(),
            late_failure: false,
            mass_set_aside_refused: false,
            from_plan_file: false,
        }
    }

    pub(crate) fn from_plan_file(file: PlanFile, run: RunId, applied: Applied) -> RepairReport {
        let mut summary = counted(&file.plan, &applied, &run);
        summary.actions_deferred = file.plan.deferred;
        summary.limit_reached = file.plan.deferred > 0;
        RepairReport {
            schema_version: 1,
            dry_run: false,
            sessions_dir: file.sessions_dir,
            run: run.0,
            interrupted_writes: interrupted_writes(&file.plan.actions, Some(&applied.outcomes)),
            outcomes: applied.outcomes,
            summary,
            skipped: Vec::new(),
            ignored: Vec::new(),
            unusable_bindings: Vec::new(),
            ignored_why: Vec::new(),
            late_failure: applied.records_failed,
            mass_set_aside_refused: false,
            from_plan_file: true,
            plan: file.plan,
        }
    }

    /// The human form: one line per action (future tense for a dry run), skipped and ignored
    /// items, errors, then the summary or the notice line.
    pub fn render_human(&self) -> String {
        let mut s = String::new();
        s.push_str(&render_actions(
            &self.plan.actions,
            &self.outcomes,
            self.dry_run,
        ));
        for k in &self.skipped {
            let _ = writeln!(s, "{}", render_skipped(k));
        }
        for (path, why) in &self.ignored_why {
            let _ = writeln!(s, "ignored {path}  ({why})");
        }
        for b in &self.unusable_bindings {
            let _ = writeln!(
                s,
                "binding of {} to {:?} binds nothing  ({})",
                b.document, b.data_dir, b.why
            );
        }
        for e in &self.summary.errors {
            let _ = writeln!(s, "error: {e}");
        }
        let sm = &self.summary;
        if let Some(line) = self.closing_line() {
            let _ = writeln!(s, "{line}");
        }
        let mut kept = Vec::new();
        for (n, what) in [
            (
                sm.documents_newer_schema,
                "documents of a newer schema kept",
            ),
            (
                sm.documents_unknown_content,
                "documents with content the doctor does not know kept",
            ),
            (
                sm.threads_unreadable,
                "unreadable thread records left in place",
            ),
            (sm.stores_kept_with_work, "unbound stores with work kept"),
            (sm.stores_in_use, "items in use by another process"),
            (sm.artifact_dirs_kept, "artifact directories kept"),
            (sm.actions_deferred, "actions deferred by --max-actions"),
        ] {
            if n > 0 {
                kept.push(format!("{what}: {n}"));
            }
        }
        if !kept.is_empty() {
            let _ = writeln!(s, "{}", kept.join("; "));
        }
        s
    }

    /// The line the human form closes its actions with: for a dry run, how many actions were
    /// planned (and deferred) and that nothing was written; for a real run, the notice line, or
    /// `None` when nothing changed.
    fn closing_line(&self) -> Option<String> {
        if !self.dry_run {
            return notice_line(&self.summary);
        }
        let n = self.plan.actions.len();
        Some(format!(
            "{n} action{} planned{}; nothing was written",
            if n == 1 { "" } else { "s" },
            if self.plan.deferred > 0 {
                format!(", {} deferred", self.plan.deferred)
            } else {
                String::new()
            }
        ))
    }
}

impl View for RepairReport {
    fn command(&self) -> &'static str {
        if self.from_plan_file {
            "sessions apply"
        } else {
            "sessions repair"
        }
    }

    fn targets(&self) -> Vec<String> {
        vec![self.sessions_dir.clone()]
    }

    fn dry_run(&self) -> bool {
        self.dry_run
    }

    fn plan(&self) -> &Plan {
        &self.plan
    }

    fn outcomes(&self) -> &[Outcome] {
        &self.outcomes
    }

    fn kept(&self) -> Vec<KeptItem> {
        self.skipped.iter().map(KeptItem::from).collect()
    }

    fn rules(&self) -> Vec<(String, String)> {
        format::rules_seen(format::registry(sessions::RULES), &self.plan, &self.kept())
    }

    fn summary_line(&self) -> String {
        self.closing_line()
            .unwrap_or_else(|| format::NOTHING_CHANGED.to_owned())
    }

    fn problems(&self) -> &[engine::Problem] {
        &self.summary.errors
    }

    fn summary_json(&self) -> serde_json::Value {
        serde_json::to_value(&self.summary).expect("the summary serializes")
    }
}

/// A set-aside run and how many of its items are still set aside.
#[derive(Debug, Clone, Serialize)]
pub struct SetAsideRun {
    /// Run id (the directory name).
    pub run: String,
    /// The items its manifest lists (refused lines included) less those taken back out of it
    /// per the receipts (`restore`).
    pub items: u64,
}

/// The JSON document of `doctor` without a command.
#[derive(Debug, Clone, Serialize)]
pub struct StatusReport {
    /// Format version (1).
    pub schema_version: u64,
    /// Absolute S.
    pub sessions_dir: String,
    /// How many actions a repair would plan now.
    pub pending_actions: u64,
    /// The summary a dry run would print now.
    pub pending: Summary,
    /// The last real run, from `.reconcile/last.json`.
    pub last: Option<LastRun>,
    /// Set-aside runs on disk.
    pub set_aside_runs: Vec<SetAsideRun>,
    /// What could not be read of the last summary or the set-aside runs, each naming its path:
    /// such a problem is reported, never shown as "no last run" or as fewer runs or items.
    pub errors: Vec<engine::Problem>,
}

impl StatusReport {
    /// The human form.
    pub fn render_human(&self) -> String {
        let mut s = String::new();
        let _ = writeln!(s, "sessions directory: {}", self.sessions_dir);
        let p = &self.pending;
        let pending = self.pending_actions + p.actions_deferred;
        let _ = writeln!(
            s,
            "a repair would now: set aside {}, {}, {}; recover {}; unbind {}; bind {} ({} pending{})",
            count(p.documents_set_aside, "document", "documents"),
            count(p.stores_set_aside, "store", "stores"),
            count(p.artifact_dirs_set_aside, "artifact directory", "artifact directories"),
            count(p.sessions_recovered, "session", "sessions"),
            count(p.threads_unbound, "thread", "threads"),
            count(p.threads_bound, "thread", "threads"),
            count(pending, "action", "actions"),
            if p.actions_deferred > 0 {
                format!(
                    ": {} in the next run, {} deferred",
                    self.pending_actions, p.actions_deferred
                )
            } else {
                String::new()
            }
        );
        match &self.last {
            Some(l) => {
                let line = notice_line(&l.summary_or_app())
                    .unwrap_or_else(|| format::NOTHING_CHANGED.into());
                let when = l.when().unwrap_or("an unknown time");
                match &l.run {
                    Some(run) => {
                        let _ = writeln!(s, "last repair: {run} at {when}: {line}");
                    }
                    None => {
                        let _ = writeln!(s, "last repair: by the app at {when}: {line}");
                    }
                }
            }
            None => {
                let _ = writeln!(s, "last repair: none");
            }
        }
        if self.set_aside_runs.is_empty() {
            let _ = writeln!(s, "set-aside runs: none");
        }
        for r in &self.set_aside_runs {
            let _ = writeln!(s, "set-aside run {}: items: {}", r.run, r.items);
        }
        for e in &self.errors {
            let _ = writeln!(s, "error: {e}");
        }
        s
    }
}

/// Counts of a restore or purge.
#[derive(Debug, Clone, Default, Serialize)]
pub struct AdminSummary {
    /// Items put back at their original paths.
    pub items_restored: u64,
    /// Documents set aside (those the restored run's recoveries wrote).
    pub documents_set_aside: u64,
    /// Set-aside runs deleted.
    pub runs_purged: u64,
    /// Bytes of the files the purge deleted.
    pub bytes_freed: u64,
    /// Items not acted on (see `skipped`).
    pub items_skipped: u64,
    /// Errors, each naming its path.
    pub errors: Vec<engine::Problem>,
}

/// The JSON document of `--restore` and `--purge-set-aside`.
#[derive(Debug, Clone, Serialize)]
pub struct AdminReport {
    /// Format version (1).
    pub schema_version: u64,
    /// `restore` or `purge`.
    pub command: crate::AdminCommand,
    /// Whether nothing was written.
    pub dry_run: bool,
    /// Absolute S.
    pub sessions_dir: String,
    /// The run id of this command (a restore sets documents aside under it).
    pub run: String,
    /// The plan.
    pub plan: Plan,
    /// One per action (empty for a dry run).
    pub outcomes: Vec<Outcome>,
    /// Items left alone, with why.
    pub skipped: Vec<Skipped>,
    /// Counts (planned for a dry run, done for a real run).
    pub summary: AdminSummary,
    /// The paths of the plan's housekeeping actions (files named like temporary files of
    /// interrupted writes, set aside, in `.reconcile/` and, for a restore, next to the records
    /// it rewrites): all of them in a dry run, the applied ones in a real run.
    pub interrupted_writes: Vec<String>,
    /// A receipt or a cleanup could not be done: the run exits 1.
    #[serde(skip)]
    pub records_failed: bool,
    /// Restore: the items refused (in `skipped`: an occupied path, an item that does not match
    /// its manifest line or is missing, a refused line) and, in a real run, the restore actions
    /// not applied (their outcomes say why). Items already in place are not counted.
    #[serde(skip)]
    pub items_refused: u64,
    /// Restore: the documents the run's recoveries wrote that were kept (changed since, or
    /// their set-aside not applied).
    #[serde(skip)]
    pub documents_kept: u64,
}

impl AdminReport {
    pub(crate) fn new(
        command: crate::AdminCommand,
        sessions_dir: String,
        run: RunId,
        planned: engine::admin::AdminPlan,
        applied: Option<Applied>,
    ) -> AdminReport {
        let dry_run = applied.is_none();
        let records_failed = applied.as_ref().is_some_and(|a| a.records_failed);
        let (outcomes, mut errors) = match applied {
            Some(a) => (a.outcomes, a.errors),
            None => (Vec::new(), Vec::new()),
        };
        errors.splice(0..0, planned.errors);
        let mut summary = AdminSummary {
            errors,
            ..AdminSummary::default()
        };
        let mut items_refused = planned.items_refused;
        let mut documents_kept = planned.documents_kept;
        for a in &planned.plan.actions {
            // Housekeeping is shown by its own lines and `interrupted_writes`, not counted.
            if engine::housekeeping::accepts(a) {
                continue;
            }
            let done = dry_run
                || outcomes
                    .iter()
                    .any(|o| o.seq == a.seq && o.outcome == OutcomeKind::Applied);
            if !done {
                summary.items_skipped += 1;
                match a.action.kind() {
                    plan::ActionKind::Restore => items_refused += 1,
                    plan::ActionKind::SetAside => documents_kept += 1,
                    _ => {}
                }
                continue;
            }
            match a.action.kind() {
                plan::ActionKind::Restore => summary.items_restored += 1,
                plan::ActionKind::SetAside => summary.documents_set_aside += 1,
                plan::ActionKind::Purge => {
                    summary.runs_purged += 1;
                    if let plan::Precondition::Tree { bytes, .. } = a.precondition {
                        summary.bytes_freed += bytes;
                    }
                }
                _ => {}
            }
        }
        summary.items_skipped += planned.skipped.len() as u64;
        let interrupted_writes =
            interrupted_writes(&planned.plan.actions, (!dry_run).then_some(&outcomes));
        AdminReport {
            schema_version: 1,
            command,
            dry_run,
            sessions_dir,
            run: run.0,
            plan: planned.plan,
            outcomes,
            skipped: planned.skipped,
            summary,
            interrupted_writes,
            records_failed,
            items_refused,
            documents_kept,
        }
    }

    /// Whether the run failed (exit 1): an action failed, a receipt or a cleanup could not be
    /// done, or a restore (dry or real) refused anything: an item, or a document its run's
    /// recoveries wrote (a partial restore). A purge that keeps a run which does not match its
    /// manifest has done what it should and does not fail.
    pub fn failed(&self) -> bool {
        let refused = self.command == crate::AdminCommand::Restore
            && self.items_refused + self.documents_kept > 0;
        refused
            || self.records_failed
            || self
                .outcomes
                .iter()
                .any(|o| o.outcome == OutcomeKind::Failed)
    }

    /// The last line of a partial restore: `restored 5 of 6 items; 1 refused: see above`;
    /// `None` when nothing was refused.
    fn partial_restore_line(&self) -> Option<String> {
        if self.command != crate::AdminCommand::Restore
            || self.items_refused + self.documents_kept == 0
        {
            return None;
        }
        let restored = self.summary.items_restored;
        let of = count(restored + self.items_refused, "item", "items");
        let mut parts = vec![if self.dry_run {
            format!("would restore {restored} of {of}")
        } else {
            format!("restored {restored} of {of}")
        }];
        if self.items_refused > 0 {
            parts.push(format!("{} refused", self.items_refused));
        }
        if self.documents_kept > 0 {
            parts.push(format!(
                "{} kept",
                count(
                    self.documents_kept,
                    "recovered document",
                    "recovered documents"
                )
            ));
        }
        Some(format!("{}: see above", parts.join("; ")))
    }

    /// The human form: one line per action, skipped items, then the counts.
    pub fn render_human(&self) -> String {
        let mut s = String::new();
        s.push_str(&render_actions(
            &self.plan.actions,
            &self.outcomes,
            self.dry_run,
        ));
        for k in &self.skipped {
            let _ = writeln!(s, "{}", render_skipped(k));
        }
        for e in &self.summary.errors {
            let _ = writeln!(s, "error: {e}");
        }
        let _ = writeln!(s, "{}", self.counts_line());
        if let Some(line) = self.partial_restore_line() {
            let _ = writeln!(s, "{line}");
        }
        s
    }

    /// The counts line the human form ends with: the counts, in the future tense for a dry run.
    fn counts_line(&self) -> String {
        let sm = &self.summary;
        let tense = if self.dry_run { "would be " } else { "" };
        match self.command {
            crate::AdminCommand::Restore => format!(
                "items {tense}restored: {}; recovered documents {tense}set aside: {}; skipped: {}",
                sm.items_restored, sm.documents_set_aside, sm.items_skipped
            ),
            crate::AdminCommand::Purge => format!(
                "set-aside runs {tense}purged: {}; {tense}freed: {}; skipped: {}",
                sm.runs_purged,
                human_bytes(sm.bytes_freed),
                sm.items_skipped
            ),
        }
    }
}

impl View for AdminReport {
    fn command(&self) -> &'static str {
        match self.command {
            crate::AdminCommand::Restore => "sessions restore",
            crate::AdminCommand::Purge => "sessions purge",
        }
    }

    fn targets(&self) -> Vec<String> {
        vec![self.sessions_dir.clone()]
    }

    fn dry_run(&self) -> bool {
        self.dry_run
    }

    fn plan(&self) -> &Plan {
        &self.plan
    }

    fn outcomes(&self) -> &[Outcome] {
        &self.outcomes
    }

    fn kept(&self) -> Vec<KeptItem> {
        self.skipped.iter().map(KeptItem::from).collect()
    }

    /// A restore puts back items of every rule of the sessions pack, each action carrying the
    /// code of the rule that set it aside; a purge's actions all carry
    /// [`engine::admin::PURGE_RULE`].
    fn rules(&self) -> Vec<(String, String)> {
        let pack = match self.command {
            crate::AdminCommand::Restore => format::registry(sessions::RULES),
            crate::AdminCommand::Purge => vec![(
                engine::admin::PURGE_RULE.to_owned(),
                engine::admin::PURGE_RULE_NAME.to_owned(),
            )],
        };
        format::rules_seen(pack, &self.plan, &self.kept())
    }

    /// The counts line the human form ends with: a restore or purge has no notice line.
    fn summary_line(&self) -> String {
        self.counts_line()
    }

    fn problems(&self) -> &[engine::Problem] {
        &self.summary.errors
    }

    fn summary_json(&self) -> serde_json::Value {
        serde_json::to_value(&self.summary).expect("the summary serializes")
    }
}

/// The temporary files of interrupted writes a plan sets aside: all of its housekeeping actions
/// for a dry run (`outcomes` is `None`), the applied ones for a real run.
fn interrupted_writes(actions: &[PlannedAction], outcomes: Option<&Vec<Outcome>>) -> Vec<String> {
    actions
        .iter()
        .filter(|a| engine::housekeeping::accepts(a))
        .filter(|a| {
            outcomes.is_none_or(|os| {
                os.iter()
                    .any(|o| o.seq == a.seq && o.outcome == OutcomeKind::Applied)
            })
        })
        .map(|a| a.path.clone())
        .collect()
}

/// Whether applying `a` writes into the run's `.set-aside/<run>/`: a set-aside, or a thread
/// rewrite (its record's previous version). The dry and the real summary name that directory
/// by this one test.
fn fills_set_aside(a: &PlannedAction) -> bool {
    matches!(
        a.action,
        plan::Action::SetAside { .. }
            | plan::Action::UnbindThread
            | plan::Action::RecoverThread { .. }
            | plan::Action::BindThread { .. }
    )
}

/// The summary of what planning found: the rules' counters, the actions the bound deferred,
/// and the errors met.
fn planned_summary(planned: &Planned<Summary>) -> Summary {
    Summary {
        actions_deferred: planned.plan.deferred,
        limit_reached: planned.limit_reached,
        errors: planned.errors.clone(),
        ..planned.counts.clone()
    }
}

/// `base` with `more` added ([`Summary`]'s `+=`).
fn merged(mut base: Summary, more: &Summary) -> Summary {
    base += more;
    base
}

/// The counts of the actions of `plan` whose outcome is `applied`, each counted by its rule,
/// with the errors of applying them and the run's set-aside directory when an applied action
/// wrote into it (a set-aside, or a rewrite's previous version).
fn counted(plan: &Plan, applied: &Applied, run: &RunId) -> Summary {
    let mut summary = engine::count_actions(sessions::RULES, applied.applied(plan));
    if applied.applied(plan).any(fills_set_aside) {
        summary.set_aside_path = Some(format!("{}/{}", store::ids::SET_ASIDE_DIR, run.0));
    }
    summary.errors.clone_from(&applied.errors);
    summary
}

/// A byte count as a human reads it: `512 B`, `3.4 KiB`, `12.0 MiB`, `4.5 GiB`.
pub fn human_bytes(n: u64) -> String {
    const UNITS: [&str; 4] = ["KiB", "MiB", "GiB", "TiB"];
    if n < 1024 {
        return format!("{n} B");
    }
    let mut v = n as f64 / 1024.0;
    let mut unit = 0;
    while v >= 1024.0 && unit < UNITS.len() - 1 {
        v /= 1024.0;
        unit += 1;
    }
    format!("{v:.1} {}", UNITS[unit])
}

#[cfg(test)]
mod tests {
    use super::*;
    use plan::{Action, ItemKind, Precondition};

    fn action(seq: u64, action: Action, path: &str) -> PlannedAction {
        PlannedAction {
            seq,
            rule: if action == Action::Purge {
                "purge"
            } else {
                "R1"
            }
            .into(),
            rule_name: "restore".into(),
            action,
            path: path.into(),
            reason: "set aside by run r".into(),
            precondition: Precondition::Tree {
                bytes: 1536,
                tree_blake3: "0".repeat(64),
            },
        }
    }

    fn restore(seq: u64, path: &str) -> PlannedAction {
        action(
            seq,
            Action::Restore {
                kind: ItemKind::Document,
                from: format!(".set-aside/20261129T120000Z-a1b2c3/{path}"),
            },
            path,
        )
    }

    fn report(
        command: crate::AdminCommand,
        actions: Vec<PlannedAction>,
        refused: u64,
        outcomes: Option<Vec<OutcomeKind>>,
    ) -> AdminReport {
        let planned = engine::admin::AdminPlan {
            plan: Plan {
                actions,
                ..Plan::default()
            },
            skipped: (0..refused)
                .map(|n| Skipped {
                    path: format!("refused{n}.json"),
                    rule: "R1".into(),
                    why: "original path is occupied: refused.json".into(),
                })
                .collect(),
            items_refused: refused,
            ..Default::default()
        };
        let applied = outcomes.map(|kinds| Applied {
            outcomes: kinds
                .into_iter()
                .enumerate()
                .map(|(i, outcome)| Outcome {
                    seq: i as u64 + 1,
                    why: (outcome != OutcomeKind::Applied).then(|| "changed since planned".into()),
                    outcome,
                })
                .collect(),
            errors: Vec::new(),
            records_failed: false,
            interrupted: None,
        });
        AdminReport::new(
            command,
            "/s".into(),
            RunId("20261129T130000Z-d4e5f6".into()),
            planned,
            applied,
        )
    }

    fn last_line(report: &AdminReport) -> String {
        report.render_human().lines().last().unwrap().to_owned()
    }

    #[test]
    fn a_partial_restore_ends_with_what_it_refused_and_fails() {
        use crate::AdminCommand::Restore;
        let whole = report(
            Restore,
            vec![restore(1, "a.json")],
            0,
            Some(vec![OutcomeKind::Applied]),
        );
        assert!(!whole.failed());
        assert_eq!(
            last_line(&whole),
            "items restored: 1; recovered documents set aside: 0; skipped: 0"
        );

        let dry = report(Restore, vec![restore(1, "a.json")], 1, None);
        assert!(dry.failed(), "a dry run says the same");
        assert_eq!(
            last_line(&dry),
            "would restore 1 of 2 items; 1 refused: see above"
        );

        let real = report(
            Restore,
            (1..=6).map(|n| restore(n, &format!("{n}.json"))).collect(),
            0,
            Some(
                [OutcomeKind::Applied; 5]
                    .into_iter()
                    .chain([OutcomeKind::Skipped])
                    .collect(),
            ),
        );
        assert!(
            real.failed(),
            "an item skipped when applied was not restored"
        );
        assert_eq!(
            last_line(&real),
            "restored 5 of 6 items; 1 refused: see above"
        );

        let none = report(Restore, Vec::new(), 1, Some(Vec::new()));
        assert_eq!(
            last_line(&none),
            "restored 0 of 1 item; 1 refused: see above"
        );

        let mut kept = report(
            Restore,
            vec![action(
                1,
                Action::SetAside {
                    kind: ItemKind::Document,
                },
                "rec.json",
            )],
            0,
            Some(vec![OutcomeKind::Skipped]),
        );
        assert!(kept.failed());
        assert_eq!(
            last_line(&kept),
            "restored 0 of 0 items; 1 recovered document kept: see above"
        );
        kept.documents_kept = 2;
        kept.items_refused = 1;
        assert_eq!(
            last_line(&kept),
            "restored 0 of 1 item; 1 refused; 2 recovered documents kept: see above"
        );
    }

    #[test]
    fn a_purge_prints_human_sizes_and_fails_only_on_a_failure() {
        use crate::AdminCommand::Purge;
        let dry = report(
            Purge,
            vec![action(1, Action::Purge, ".set-aside/r")],
            1,
            None,
        );
        assert!(
            !dry.failed(),
            "a run kept because it does not match is no failure"
        );
        assert_eq!(
            last_line(&dry),
            "set-aside runs would be purged: 1; would be freed: 1.5 KiB; skipped: 1"
        );
        let real = report(
            Purge,
            vec![action(1, Action::Purge, ".set-aside/r")],
            0,
            Some(vec![OutcomeKind::Applied]),
        );
        assert_eq!(
            last_line(&real),
            "set-aside runs purged: 1; freed: 1.5 KiB; skipped: 0"
        );
        let failed = report(
            Purge,
            vec![action(1, Action::Purge, ".set-aside/r")],
            0,
            Some(vec![OutcomeKind::Failed]),
        );
        assert!(failed.failed());
        let mut unrecorded = real;
        unrecorded.records_failed = true;
        assert!(unrecorded.failed());
    }

    #[test]
    fn bytes_read_naturally() {
        assert_eq!(human_bytes(0), "0 B");
        assert_eq!(human_bytes(1023), "1023 B");
        assert_eq!(human_bytes(1536), "1.5 KiB");
        assert_eq!(human_bytes(5 * 1024 * 1024), "5.0 MiB");
        assert_eq!(human_bytes(4_831_838_208), "4.5 GiB");
        assert_eq!(count(1, "item", "items"), "1 item");
        assert_eq!(count(0, "item", "items"), "0 items");
    }
}
