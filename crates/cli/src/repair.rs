//! Repairing the sessions pack (dry or real) and applying a saved plan.

use std::path::{Path, PathBuf};

use fsroot::{Root, WritableRoot};
use plan::PlanFile;
use sessions::LastRun;
use store::ids::RunId;
use store::Clock;

use crate::{Error, RepairOptions, RepairReport};

pub(crate) fn open_error(dir: &Path, e: fsroot::Error) -> Error {
    match e.io_error().map(std::io::Error::kind) {
        Some(std::io::ErrorKind::NotFound | std::io::ErrorKind::NotADirectory) => {
            Error::MissingDir(dir.to_path_buf())
        }
        _ => Error::Fs(e),
    }
}

pub(crate) fn absolute(dir: &Path) -> String {
    std::path::absolute(dir)
        .unwrap_or_else(|_| dir.to_path_buf())
        .to_string_lossy()
        .into_owned()
}

/// Plans the sessions pack and, unless `dry_run`, applies the plan.
pub fn repair_sessions(opts: &RepairOptions) -> Result<RepairReport, Error> {
    let config = opts.config();
    let run = RunId::new(config.now);
    if opts.dry_run {
        let root = Root::open(&opts.sessions_dir).map_err(|e| open_error(&opts.sessions_dir, e))?;
        let planned = engine::plan_sessions(&root, sessions::RULES, &config)?;
        return Ok(RepairReport::dry(
            absolute(&opts.sessions_dir),
            run,
            planned,
        ));
    }
    let root =
        WritableRoot::open(&opts.sessions_dir).map_err(|e| open_error(&opts.sessions_dir, e))?;
    let Some(lock) = exec::acquire_reconcile_lock(&root)? else {
        return Err(Error::Busy(
            opts.sessions_dir.join(store::ids::RECONCILE_LOCK),
        ));
    };
    let planned = engine::plan_sessions(&root, sessions::RULES, &config)?;
    let applied = exec::execute(
        &mut exec::SessionsTarget::new(&root),
        &lock,
        &planned.plan,
        &run,
        opts.clock,
    );
    let mut report = RepairReport::applied(absolute(&opts.sessions_dir), run, planned, applied);
    finish_or_note(&root, &mut report, opts.clock);
    Ok(report)
}

/// Writes `last.json` for a real run; when that fails, the actions stay applied, so the report
/// of what was done is kept and carries the failure (the run exits 1).
fn finish_or_note(root: &WritableRoot, report: &mut RepairReport, clock: Clock) {
    if let Err(e) = finish(root, report, clock) {
        report
            .summary
            .errors
            .push(e.problem().context("the run's actions were applied, but"));
        report.late_failure = true;
    }
}

/// Writes `last.json` for a real run: the app's `ReconcileSummary` keys (codewhale-format
/// §9.6, so the app's `codewhale doctor` reads it) plus the doctor's own.
fn finish(root: &WritableRoot, report: &RepairReport, clock: Clock) -> Result<(), Error> {
    let last = LastRun::new(&report.run, &clock.now().to_string(), &report.summary);
    exec::write_last(root, &last)?;
    Ok(())
}

/// The plan file `--plan-out` writes, as bytes (deterministic for the same store).
pub fn plan_file_bytes(report: &RepairReport) -> Vec<u8> {
    let file = PlanFile {
        schema_version: 1,
        sessions_dir: report.sessions_dir.clone(),
        plan: report.plan.clone(),
    };
    let mut bytes = serde_json::to_vec_pretty(&file).expect("plan serializes");
    bytes.push(b'\n');
    bytes
}

/// Applies a plan file exactly: no re-planning; each precondition is checked before acting.
pub fn apply_plan_file(path: &Path, clock: Clock) -> Result<RepairReport, Error> {
    let bytes = fsroot::read_standalone_file(path)?;
    let file: PlanFile = serde_json::from_slice(&bytes)
        .map_err(|e| Error::BadPlan(format!("cannot use plan {}: {e}", path.display())))?;
    if file.schema_version != 1 {
        return Err(Error::BadPlan(format!(
            "cannot use plan {}: schema_version {} is not 1",
            path.display(),
            file.schema_version
        )));
    }
    engine::check_plan(sessions::RULES, &file.plan)
        .map_err(|e| Error::BadPlan(format!("cannot use plan {}: {e}", path.display())))?;
    let dir = PathBuf::from(&file.sessions_dir);
    let root = WritableRoot::open(&dir).map_err(|e| open_error(&dir, e))?;
    let Some(lock) = exec::acquire_reconcile_lock(&root)? else {
        return Err(Error::Busy(dir.join(store::ids::RECONCILE_LOCK)));
    };
    let run = RunId::new(clock.now());
    let applied = exec::execute(
        &mut exec::SessionsTarget::new(&root),
        &lock,
        &file.plan,
        &run,
        clock,
    );
    let mut report = RepairReport::from_plan_file(file, run, applied);
    finish_or_note(&root, &mut report, clock);
    Ok(report)
}
