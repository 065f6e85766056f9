//! Repairing the sessions pack (dry or real) and applying a saved plan.

use std::path::{Path, PathBuf};

use fsroot::{Root, WritableRoot};
use plan::PlanFile;
use sessions::LastRun;
use store::ids::RunId;
use store::progress::ProgressSink;
use store::Clock;

use engine::Rule;

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

/// Plans the sessions pack and, unless `dry_run`, applies the plan. Two guards come first
/// (cli.md, Version 2): the directory must look like a session store (else
/// [`Error::NotASessionStore`], before anything is written, unless `assume_session_store`),
/// and R1 may not set aside more than half of a store's documents (unless
/// `allow_mass_set_aside`: the run then plans nothing for R1, says why and fails).
pub fn repair_sessions(opts: &RepairOptions) -> Result<RepairReport, Error> {
    // A clock no run id can spell makes runs no command can name (exit 2).
    opts.clock.check().map_err(Error::BadEnvironment)?;
    let config = opts.config();
    let run = RunId::new(config.now);
    if opts.dry_run {
        let root = Root::open(&opts.sessions_dir).map_err(|e| open_error(&opts.sessions_dir, e))?;
        let marked = opts.assume_session_store || store::recognize::has_store_mark(&root)?;
        let (planned, refused) = plan_guarded(opts, &root, &config)?;
        recognize(opts, &root, marked, &planned)?;
        let mut report = RepairReport::dry(absolute(&opts.sessions_dir), run, planned);
        report.note_mass_set_aside(refused);
        return Ok(report);
    }
    let root =
        WritableRoot::open(&opts.sessions_dir).map_err(|e| open_error(&opts.sessions_dir, e))?;
    // Recognized before anything is written (the lock file is a write): in a directory without
    // a mark, its documents are judged until one is readable.
    let marked = opts.assume_session_store
        || store::recognize::has_store_mark(&root)?
        || store::recognize::has_readable_document(&root)?;
    if !marked {
        return Err(not_a_session_store(&opts.sessions_dir, &root));
    }
    let Some(lock) = exec::acquire_reconcile_lock(&root)? else {
        return Err(Error::Busy(
            opts.sessions_dir.join(store::ids::RECONCILE_LOCK),
        ));
    };
    let (planned, refused) = plan_guarded(opts, &root, &config)?;
    let applied = exec::execute(
        &mut exec::SessionsTarget::new(&root),
        &lock,
        &planned.plan,
        &run,
        opts.clock,
        &opts.progress,
    );
    let mut report = RepairReport::applied(absolute(&opts.sessions_dir), run, planned, applied);
    report.note_mass_set_aside(refused);
    finish_or_note(&root, &mut report, opts.clock);
    Ok(report)
}

/// The store-recognition guard: [`Error::NotASessionStore`] for a directory that has no mark of
/// a session store (`marked`, or assumed) and no session document the app can read.
fn recognize(
    opts: &RepairOptions,
    root: &Root,
    marked: bool,
    planned: &engine::Planned<sessions::Summary>,
) -> Result<(), Error> {
    if marked || planned.documents.readable > 0 {
        return Ok(());
    }
    Err(not_a_session_store(&opts.sessions_dir, root))
}

/// [`Error::NotASessionStore`] for the sessions directory `dir`, suggesting its `sessions/`.
fn not_a_session_store(dir: &Path, root: &Root) -> Error {
    let sessions = Path::new("sessions");
    let hint = matches!(root.stat(sessions), Ok(Some(s)) if s.kind == fsroot::EntryKind::Dir)
        .then(|| dir.join(sessions));
    Error::NotASessionStore {
        dir: PathBuf::from(absolute(dir)),
        hint,
    }
}

/// A store must hold at least this many documents for the mass set-aside guard to apply.
const MASS_MIN_DOCUMENTS: u64 = 10;

/// Plans the selected rules. When R1 would set aside more than half of the documents of a store
/// that has at least [`MASS_MIN_DOCUMENTS`], and the options do not allow it, no rule's action
/// is kept (the documents R1 misjudges would mislead the rules after it too: an unreadable
/// document binds nothing and names no session), only the doctor's housekeeping, and the reason
/// is returned.
fn plan_guarded(
    opts: &RepairOptions,
    root: &Root,
    config: &engine::Config,
) -> Result<(engine::Planned<sessions::Summary>, Option<engine::Problem>), Error> {
    let mut planned = engine::plan_sessions(root, &opts.rules(), config)?;
    // The finish of a store move an earlier run began is planned whatever `--select` and
    // `--ignore` say (it completes that run's action); its rule is named from the whole
    // registry, the rule being possibly unselected.
    for a in &mut planned.plan.actions {
        if a.rule_name.is_empty() && engine::interrupted::finishing(a).is_some() {
            if let Some(rule) = sessions::RULES.iter().find(|r| r.code() == a.rule) {
                a.rule_name = rule.name().to_owned();
            }
        }
    }
    let r1 = planned
        .proposed
        .iter()
        .find(|(code, _)| *code == sessions::UnreadableDocument.code())
        .map_or(0, |(_, n)| *n);
    let all = planned.documents.all;
    if opts.allow_mass_set_aside || all < MASS_MIN_DOCUMENTS || r1 * 2 <= all {
        return Ok((planned, None));
    }
    planned
        .plan
        .actions
        .retain(|a| a.rule == engine::housekeeping::CODE);
    planned.plan.deferred = 0;
    planned.limit_reached = false;
    let why = engine::Problem::new(
        absolute(&opts.sessions_dir),
        "plan",
        std::io::ErrorKind::InvalidData,
        format!(
            "R1 would set aside {r1} of {all} documents: this looks like a format the doctor \
             does not know, not damage; no rule's action was planned (--allow-mass-set-aside \
             plans them anyway)"
        ),
    );
    Ok((planned, Some(why)))
}

/// What a JSON value that is not a plan file looks like, for the message that refuses it.
fn looks_like(v: &serde_json::Value) -> &'static str {
    let has = |k: &str| v.get(k).is_some();
    if !v.is_object() {
        "it is JSON but not an object"
    } else if has("command") && has("plan") {
        "it looks like the JSON report of a restore or purge"
    } else if has("plan") && has("summary") && has("dry_run") {
        "it looks like the JSON report of a run (--json output)"
    } else if has("pending_actions") {
        "it looks like the JSON status report"
    } else if has("moved_to") {
        "it looks like a line of a set-aside manifest"
    } else if has("outcome") && has("seq") {
        "it looks like a receipt line"
    } else if has("plan") {
        "it has no \"kind\": \"doctor-plan\""
    } else {
        "it is JSON of another kind"
    }
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
    let file = PlanFile::new(report.sessions_dir.clone(), report.plan.clone());
    let mut bytes = serde_json::to_vec_pretty(&file).expect("plan serializes");
    bytes.push(b'\n');
    bytes
}

/// Applies a plan file exactly: no re-planning; each precondition is checked before acting. A
/// plan file that is missing or cannot be read as a plan is [`Error::BadPlan`] (exit 2).
pub fn apply_plan_file(path: &Path, clock: Clock) -> Result<RepairReport, Error> {
    let bytes = read_plan_file(path)?;
    apply_plan_bytes(
        &bytes,
        &path.display().to_string(),
        clock,
        &ProgressSink::silent(),
    )
}

/// Reads the plan file `path` as [`apply_plan_file`] does, for [`apply_plan_bytes`].
pub fn read_plan_file(path: &Path) -> Result<Vec<u8>, Error> {
    fsroot::read_standalone_file(path).map_err(|e| match e.kind() {
        std::io::ErrorKind::NotFound | std::io::ErrorKind::NotADirectory => {
            Error::BadPlan(format!("cannot use plan {}: no such file", path.display()))
        }
        _ => Error::Fs(e),
    })
}

/// Applies the plan file whose bytes are `bytes` (read from `from`: a path, or standard input),
/// as [`apply_plan_file`] does, reporting each action applied to `progress`.
pub fn apply_plan_bytes(
    bytes: &[u8],
    from: &str,
    clock: Clock,
    progress: &ProgressSink,
) -> Result<RepairReport, Error> {
    // A clock no run id can spell makes runs no command can name (exit 2).
    clock.check().map_err(Error::BadEnvironment)?;
    let bad = |why: String| Error::BadPlan(format!("cannot use plan {from}: {why}"));
    let value: serde_json::Value = serde_json::from_slice(bytes).map_err(|e| bad(e.to_string()))?;
    if value.get("kind").and_then(serde_json::Value::as_str) != Some(PlanFile::KIND) {
        return Err(bad(format!(
            "{}, not a plan file (write one with --plan-out)",
            looks_like(&value)
        )));
    }
    let file: PlanFile = serde_json::from_value(value).map_err(|e| bad(e.to_string()))?;
    if file.schema_version != 1 {
        return Err(bad(format!(
            "schema_version {} is not 1",
            file.schema_version
        )));
    }
    engine::check_plan(sessions::RULES, &file.plan).map_err(|e| bad(e.to_string()))?;
    let dir = PathBuf::from(&file.sessions_dir);
    let root = WritableRoot::open(&dir).map_err(|e| open_error(&dir, e))?;
    // The same guard as a repair, before anything is written: a plan file names the directory
    // it changes, and a hand-made one may name any.
    if !(store::recognize::has_store_mark(&root)?
        || store::recognize::has_readable_document(&root)?)
    {
        return Err(not_a_session_store(&dir, &root));
    }
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
        progress,
    );
    let mut report = RepairReport::from_plan_file(file, run, applied);
    finish_or_note(&root, &mut report, clock);
    Ok(report)
}
