//! The doctor's entry points, shared by the `doctor` binary and host applications that embed
//! it: repair (dry or real), apply a saved plan, and report. Each opens its own root and closes
//! it (with every handle and lock) before returning, on every path.

mod output;
pub mod sweep;

use std::path::{Path, PathBuf};

use engine::Config;
use exec::{LastRun, RunId};
use fsroot::{Root, WritableRoot};
use plan::PlanFile;
use store::ids::SET_ASIDE_DIR;
use store::Clock;

pub use output::{AdminReport, RepairReport, SetAsideRun, StatusReport};

/// Why a run could not go on. Each maps to an exit code of cli.md.
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    /// The sessions directory does not exist or is not a directory (exit 2).
    #[error("sessions directory {} does not exist or is not a directory", .0.display())]
    MissingDir(PathBuf),
    /// Another doctor run holds `.reconcile.lock` (exit 75).
    #[error("another doctor run holds {}; nothing was written", .0.display())]
    Busy(PathBuf),
    /// A plan file that cannot be used (exit 2).
    #[error("{0}")]
    BadPlan(String),
    /// The environment gives no usable setting: a `DOCTOR_NOW` that is not a timestamp, no
    /// `HOME` to find the default directory (exit 2).
    #[error("{0}")]
    BadEnvironment(String),
    /// Any other failure (exit 1).
    #[error(transparent)]
    Fs(#[from] fsroot::Error),
    /// A restore or purge that cannot be planned (exit 2 for a bad run or item, else 1).
    #[error(transparent)]
    Admin(#[from] exec::admin::AdminError),
}

impl RunError {
    /// The exit code of cli.md.
    pub fn exit_code(&self) -> i32 {
        match self {
            RunError::MissingDir(_) | RunError::BadPlan(_) | RunError::BadEnvironment(_) => 2,
            RunError::Busy(_) => 75,
            RunError::Fs(_) => 1,
            RunError::Admin(exec::admin::AdminError::Fs(_)) => 1,
            RunError::Admin(_) => 2,
        }
    }
}

/// Settings of a sessions repair.
#[derive(Debug, Clone)]
pub struct RepairOptions {
    /// S.
    pub sessions_dir: PathBuf,
    /// Plan and print only.
    pub dry_run: bool,
    /// `--max-actions`.
    pub max_actions: usize,
    /// `--artifact-idle`, seconds.
    pub artifact_idle_secs: i64,
    /// The clock.
    pub clock: Clock,
    /// `$CODEWHALE_HOME` (else `~/.codewhale`): where the read-only task stores
    /// (`tasks/runtime`) and automation definitions (`automations/`) are read from. `None`
    /// reads neither.
    pub codewhale_home: Option<PathBuf>,
}

impl RepairOptions {
    /// Defaults of cli.md for `sessions_dir`.
    pub fn new(sessions_dir: impl Into<PathBuf>) -> RepairOptions {
        RepairOptions {
            sessions_dir: sessions_dir.into(),
            dry_run: false,
            max_actions: 500,
            artifact_idle_secs: 24 * 3600,
            clock: Clock::System,
            codewhale_home: default_codewhale_home(),
        }
    }

    fn config(&self) -> Config {
        Config {
            max_actions: self.max_actions,
            artifact_idle_secs: self.artifact_idle_secs,
            now: self.clock.now(),
            codewhale_home: self.codewhale_home.clone(),
        }
    }
}

/// `$CODEWHALE_HOME`, else `~/.codewhale`.
pub fn default_codewhale_home() -> Option<PathBuf> {
    if let Some(home) = std::env::var_os("CODEWHALE_HOME").filter(|h| !h.is_empty()) {
        return Some(PathBuf::from(home));
    }
    std::env::var_os("HOME")
        .filter(|h| !h.is_empty())
        .map(|h| PathBuf::from(h).join(".codewhale"))
}

/// The default sessions directory: `$CODEWHALE_HOME/sessions`, else `~/.codewhale/sessions`.
pub fn default_sessions_dir() -> Option<PathBuf> {
    if let Some(home) = std::env::var_os("CODEWHALE_HOME").filter(|h| !h.is_empty()) {
        return Some(PathBuf::from(home).join("sessions"));
    }
    std::env::var_os("HOME")
        .filter(|h| !h.is_empty())
        .map(|h| PathBuf::from(h).join(".codewhale").join("sessions"))
}

fn open_error(dir: &Path, e: fsroot::Error) -> RunError {
    match e.io_error().map(std::io::Error::kind) {
        Some(std::io::ErrorKind::NotFound | std::io::ErrorKind::NotADirectory) => {
            RunError::MissingDir(dir.to_path_buf())
        }
        _ => RunError::Fs(e),
    }
}

fn absolute(dir: &Path) -> String {
    std::path::absolute(dir)
        .unwrap_or_else(|_| dir.to_path_buf())
        .to_string_lossy()
        .into_owned()
}

/// Plans the sessions pack and, unless `dry_run`, applies the plan.
pub fn repair_sessions(opts: &RepairOptions) -> Result<RepairReport, RunError> {
    let config = opts.config();
    let run = RunId::new(config.now);
    if opts.dry_run {
        let root = Root::open(&opts.sessions_dir).map_err(|e| open_error(&opts.sessions_dir, e))?;
        let mut planned = engine::plan_sessions(&root, sessions::RULES, &config)?;
        planned.interrupted_writes =
            exec::removable_interrupted_writes(&root, &planned.interrupted_writes);
        return Ok(RepairReport::dry(
            absolute(&opts.sessions_dir),
            run,
            planned,
        ));
    }
    let root =
        WritableRoot::open(&opts.sessions_dir).map_err(|e| open_error(&opts.sessions_dir, e))?;
    let Some(lock) = exec::acquire_reconcile_lock(&root)? else {
        return Err(RunError::Busy(
            opts.sessions_dir.join(store::ids::RECONCILE_LOCK),
        ));
    };
    let planned = engine::plan_sessions(&root, sessions::RULES, &config)?;
    let temps = exec::removable_interrupted_writes(&root, &planned.interrupted_writes);
    let cleanup = exec::remove_interrupted_writes(&root, &lock, &temps, &run, opts.clock);
    let mut applied = exec::apply_plan(&root, &lock, &planned.plan, &run, opts.clock);
    // A removal without its receipt fails the run, as an action without one does.
    applied.records_failed |= cleanup.records_failed;
    applied.summary.errors.extend(cleanup.errors);
    let mut planned = planned;
    planned.interrupted_writes = cleanup.removed;
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
            .push(format!("the run's actions were applied, but {e}"));
        report.late_failure = true;
    }
}

/// Writes `last.json` for a real run: the app's `ReconcileSummary` keys (codewhale-format
/// §9.6, so the app's `codewhale doctor` reads it) plus the doctor's own.
fn finish(root: &WritableRoot, report: &RepairReport, clock: Clock) -> Result<(), RunError> {
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
pub fn apply_plan_file(path: &Path, clock: Clock) -> Result<RepairReport, RunError> {
    let bytes = fsroot::read_standalone_file(path)?;
    let file: PlanFile = serde_json::from_slice(&bytes)
        .map_err(|e| RunError::BadPlan(format!("cannot use plan {}: {e}", path.display())))?;
    if file.schema_version != 1 {
        return Err(RunError::BadPlan(format!(
            "cannot use plan {}: schema_version {} is not 1",
            path.display(),
            file.schema_version
        )));
    }
    engine::check_plan(sessions::RULES, &file.plan)
        .map_err(|e| RunError::BadPlan(format!("cannot use plan {}: {e}", path.display())))?;
    let dir = PathBuf::from(&file.sessions_dir);
    let root = WritableRoot::open(&dir).map_err(|e| open_error(&dir, e))?;
    let Some(lock) = exec::acquire_reconcile_lock(&root)? else {
        return Err(RunError::Busy(dir.join(store::ids::RECONCILE_LOCK)));
    };
    let run = RunId::new(clock.now());
    let applied = exec::apply_plan(&root, &lock, &file.plan, &run, clock);
    let mut report = RepairReport::from_plan_file(file, run, applied);
    finish_or_note(&root, &mut report, clock);
    Ok(report)
}

/// `doctor` without a command: what a repair would do now, the last summary, set-aside runs.
pub fn status(opts: &RepairOptions) -> Result<StatusReport, RunError> {
    let config = opts.config();
    let root = Root::open(&opts.sessions_dir).map_err(|e| open_error(&opts.sessions_dir, e))?;
    let planned = engine::plan_sessions(&root, sessions::RULES, &config)?;
    let pending = RepairReport::dry(
        absolute(&opts.sessions_dir),
        RunId::new(config.now),
        planned,
    );
    let mut errors = Vec::new();
    let last_path = Path::new(store::ids::LAST_RUN_PATH);
    let last = match root.read_record(last_path) {
        // The doctor's or the app's last.json.
        Ok(b) => {
            let last = LastRun::parse(&b);
            if last.is_none() {
                errors.push(format!(
                    "{} is neither the doctor's nor the app's summary of a run: ignored",
                    root.display_path(last_path).display()
                ));
            }
            last
        }
        Err(e) if e.is_not_found() => None,
        Err(e) => {
            errors.push(e.to_string());
            None
        }
    };
    let mut runs = Vec::new();
    match root.list(Path::new(SET_ASIDE_DIR)) {
        Ok(entries) => {
            for e in entries {
                let name = e.name.to_string_lossy().into_owned();
                let manifest = store::ids::manifest_path(&name);
                let items = match root.read_record(Path::new(&manifest)) {
                    Ok(b) => b.split(|c| *c == b'\n').filter(|l| !l.is_empty()).count() as u64,
                    // A run directory without a manifest holds no recorded item.
                    Err(e) if e.is_not_found() => 0,
                    Err(e) => {
                        errors.push(e.to_string());
                        0
                    }
                };
                runs.push(SetAsideRun { run: name, items });
            }
        }
        Err(e) if e.is_not_found() => {}
        Err(e) => errors.push(e.to_string()),
    }
    Ok(StatusReport {
        schema_version: 1,
        sessions_dir: pending.sessions_dir.clone(),
        pending_actions: pending.plan.actions.len() as u64,
        pending: pending.summary,
        last,
        set_aside_runs: runs,
        errors,
    })
}

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
    plan: impl Fn(&Root) -> Result<exec::admin::AdminPlan, exec::admin::AdminError>,
) -> Result<AdminReport, RunError> {
    let dir = &opts.sessions_dir;
    let run = RunId::new(opts.clock.now());
    if opts.dry_run {
        let root = Root::open(dir).map_err(|e| open_error(dir, e))?;
        let planned = plan(&root)?;
        let temps = exec::removable_interrupted_writes(&root, &planned.interrupted_writes(&root));
        let mut report = AdminReport::new(command, absolute(dir), run, planned, None);
        report.interrupted_writes = temps;
        return Ok(report);
    }
    let root = WritableRoot::open(dir).map_err(|e| open_error(dir, e))?;
    let Some(lock) = exec::acquire_reconcile_lock(&root)? else {
        return Err(RunError::Busy(dir.join(store::ids::RECONCILE_LOCK)));
    };
    let planned = plan(&root)?;
    // A restore killed while it wrote a record left that write's temporary file: removed first,
    // receipted, as a repair removes them.
    let temps = exec::removable_interrupted_writes(&root, &planned.interrupted_writes(&root));
    let cleanup = exec::remove_interrupted_writes(&root, &lock, &temps, &run, opts.clock);
    let applied = exec::apply_plan(&root, &lock, &planned.plan, &run, opts.clock);
    let mut report = AdminReport::new(command, absolute(dir), run, planned, Some(applied));
    report.interrupted_writes = cleanup.removed;
    report.records_failed |= cleanup.records_failed;
    report.summary.errors.extend(cleanup.errors);
    Ok(report)
}

/// `--restore RUN [--item REL]...`: moves items of a set-aside run back, verified against the
/// manifest; sets aside the documents that run's recoveries wrote; receipted.
pub fn restore(opts: &RepairOptions, run: &str, items: &[String]) -> Result<AdminReport, RunError> {
    run_admin(opts, AdminCommand::Restore, |root| {
        exec::admin::plan_restore(root, run, items)
    })
}

/// `--purge-set-aside --older-than DUR [--force]`: deletes whole set-aside runs older than
/// `older_than_secs` whose contents match their manifests (or all of them with `force`).
pub fn purge(
    opts: &RepairOptions,
    older_than_secs: i64,
    force: bool,
) -> Result<AdminReport, RunError> {
    let now = opts.clock.now();
    run_admin(opts, AdminCommand::Purge, |root| {
        exec::admin::plan_purge(root, older_than_secs, now, force)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn status_reports_what_it_cannot_read_instead_of_hiding_it() {
        let tmp = tempfile::tempdir().unwrap();
        let root = WritableRoot::open(tmp.path()).unwrap();
        let mut opts = RepairOptions::new(tmp.path());
        opts.codewhale_home = None;

        // Nothing there yet: no last run, no runs, nothing to report.
        let clean = status(&opts).unwrap();
        assert!(clean.last.is_none() && clean.set_aside_runs.is_empty());
        assert_eq!(clean.errors, Vec::<String>::new());

        // A last.json that is neither summary, and a run whose manifest cannot be read.
        root.write_atomic(Path::new(store::ids::LAST_RUN_PATH), b"[1, 2]")
            .unwrap();
        root.create_dir_all(Path::new(&store::ids::manifest_path(
            "20261129T120000Z-a1b2c3",
        )))
        .unwrap();
        root.create_dir_all(Path::new(".set-aside/20261129T130000Z-d4e5f6"))
            .unwrap();
        let report = status(&opts).unwrap();
        assert!(report.last.is_none());
        assert_eq!(report.set_aside_runs.len(), 2, "every run is listed");
        assert_eq!(report.errors.len(), 2, "{:?}", report.errors);
        assert!(
            report.errors[0].contains(".reconcile/last.json")
                && report.errors[0].contains("neither"),
            "{}",
            report.errors[0]
        );
        assert!(
            report.errors[1].contains("20261129T120000Z-a1b2c3/MANIFEST.jsonl"),
            "{}",
            report.errors[1]
        );
        let human = report.render_human();
        assert!(human.contains("error: "), "{human}");
    }
}
