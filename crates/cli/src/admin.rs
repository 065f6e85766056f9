//! Restoring a set-aside run and purging old ones.

use fsroot::{Root, WritableRoot};
use store::ids::RunId;

use crate::repair::{absolute, open_error};
use crate::{AdminReport, Error, RepairOptions};

/// Which set-aside command an [`AdminReport`] is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum AdminCommand {
    /// `--restore`.
    Restore,
    /// `--purge-set-aside`.
    Purge,
}

fn run_admin(
    opts: &RepairOptions,
    command: AdminCommand,
    plan: impl Fn(&Root) -> Result<engine::admin::AdminPlan, engine::admin::AdminError>,
) -> Result<AdminReport, Error> {
    let dir = &opts.sessions_dir;
    // A clock no run id can spell makes runs no command can name (exit 2).
    opts.clock.check().map_err(Error::BadEnvironment)?;
    let run = RunId::new(opts.clock.now());
    if opts.dry_run {
        let root = Root::open(dir).map_err(|e| open_error(dir, e))?;
        let planned = plan(&root)?;
        return Ok(AdminReport::new(command, absolute(dir), run, planned, None));
    }
    let root = WritableRoot::open(dir).map_err(|e| open_error(dir, e))?;
    let Some(lock) = exec::acquire_reconcile_lock(&root)? else {
        return Err(Error::Busy(dir.join(store::ids::RECONCILE_LOCK)));
    };
    // A restore killed while it wrote a record left that write's temporary file: its set-aside
    // heads the plan, applied and receipted like every action.
    let planned = plan(&root)?;
    let mut applied = exec::execute(
        &mut exec::SessionsTarget::new(&root),
        &lock,
        &planned.plan,
        &run,
        opts.clock,
        &opts.progress,
    );
    applied.errors.extend(exec::drop_stale_purge_records(
        &root,
        &planned.stale_pending,
    ));
    Ok(AdminReport::new(
        command,
        absolute(dir),
        run,
        planned,
        Some(applied),
    ))
}

/// `restore RUN [--item REL|N]...`: moves items of a set-aside run back, verified against the
/// manifest; sets aside the documents that run's recoveries wrote; receipted.
///
/// `run` is any form [`crate::resolve_run`] accepts (a run id, `latest`, `.set-aside/<run>`),
/// resolved under the lock in a real run. Each of `items` is an original path the run names,
/// else the number of an item in [`crate::list_run`]'s listing (1-based); anything else is
/// [`Error::NoSuchItem`]. No items: the whole run.
pub fn restore(opts: &RepairOptions, run: &str, items: &[String]) -> Result<AdminReport, Error> {
    run_admin(opts, AdminCommand::Restore, |root| {
        let run = engine::admin::resolve_run(root, run)?;
        engine::admin::plan_restore(root, &run, items, &app_line_rule)
    })
}

/// The rule an item the app set aside is shown under: the sessions rule that sets aside items
/// of its kind (an item of no stated kind is a document).
pub(crate) fn app_line_rule(kind: Option<plan::ItemKind>) -> String {
    let kind = Some(kind.unwrap_or(plan::ItemKind::Document));
    engine::planner_of(sessions::RULES, plan::ActionKind::SetAside, kind)
        .unwrap_or("app")
        .to_owned()
}

/// `--purge-set-aside --older-than DUR [--force]`: deletes whole set-aside runs older than
/// `older_than_secs` whose contents match their manifests (or all of them with `force`).
pub fn purge(
    opts: &RepairOptions,
    older_than_secs: i64,
    force: bool,
) -> Result<AdminReport, Error> {
    let now = opts.clock.now();
    run_admin(opts, AdminCommand::Purge, |root| {
        engine::admin::plan_purge(root, older_than_secs, now, force)
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use plan::ItemKind;

    #[test]
    fn the_apps_set_asides_are_shown_under_the_rule_that_sets_aside_their_kind() {
        assert_eq!(app_line_rule(None), "R1");
        assert_eq!(app_line_rule(Some(ItemKind::Document)), "R1");
        assert_eq!(app_line_rule(Some(ItemKind::RuntimeStore)), "R2");
        assert_eq!(app_line_rule(Some(ItemKind::Directory)), "R5");
        assert_eq!(app_line_rule(Some(ItemKind::PreviousVersion)), "app");
    }
}
