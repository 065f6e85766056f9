//! `--sweep-build-dirs`, the build-dirs pack's entry point: opens each build root as its own
//! confined root, reads liveness (`/proc` on Linux; [`Liveness`]), plans B1 on the shared engine and, unless dry, applies the plan
//! under the sweep's single-flight lock, receipting every action in the state directory. Its
//! report (JSON and human) and its errors, each with the exit code of cli.md.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use engine::liveness::{Liveness, ProcessRefs};
use engine::{BuildConfig, BuildPlanned, Interrupted};
use exec::{BuildDirsTarget, PendingDeletion};
use fsroot::{Problem, Root, WritableRoot};
use kernel::{Clock, RunId};
use plan::{render_actions, Outcome, OutcomeKind, Plan, Precondition};
use serde::Serialize;

use crate::format::{self, KeptItem, View};
/// Byte sizes as the human reports print them (shared by every report).
pub use crate::output::human_bytes;
use crate::Error;

/// The receipts of build-dirs runs, in the state directory: one JSON line per action.
pub const RECEIPTS_FILE: &str = "build-dirs-receipts.jsonl";
/// The single-flight lock of build-dirs runs, in the state directory.
pub const LOCK_FILE: &str = "build-dirs.lock";

/// Settings of a build-dirs sweep.
#[derive(Debug, Clone)]
pub struct SweepOptions {
    /// `--root`s; when empty, [`default_build_roots`].
    pub roots: Vec<PathBuf>,
    /// Plan and print only.
    pub dry_run: bool,
    /// `--max-actions`.
    pub max_actions: usize,
    /// `--min-age`, seconds.
    pub min_age_secs: i64,
    /// The clock.
    pub clock: Clock,
    /// Where procfs is mounted (`/proc`), for Linux's liveness backend.
    pub proc_dir: PathBuf,
    /// Where receipts and the lock go; `None`: [`default_state_dir`].
    pub state_dir: Option<PathBuf>,
    /// `--select`: the rule codes that run (`None`: every rule of the pack).
    pub select: Option<Vec<String>>,
    /// `--ignore`: rule codes that do not run.
    pub ignore: Vec<String>,
    /// Who watches the application of the plan.
    pub progress: kernel::progress::ProgressSink,
}

impl SweepOptions {
    /// The defaults of cli.md: default roots, `--min-age 30m`, `--max-actions 500`.
    pub fn new() -> SweepOptions {
        SweepOptions {
            roots: Vec::new(),
            dry_run: false,
            max_actions: 500,
            min_age_secs: 30 * 60,
            clock: Clock::System,
            proc_dir: PathBuf::from("/proc"),
            state_dir: None,
            select: None,
            ignore: Vec::new(),
            progress: kernel::progress::ProgressSink::silent(),
        }
    }
}

impl Default for SweepOptions {
    fn default() -> Self {
        SweepOptions::new()
    }
}

/// The default roots: `$GOTMPDIR` when set, and the OS temp dir.
#[allow(clippy::disallowed_methods)] // the edge reads the environment
pub fn default_build_roots() -> Vec<PathBuf> {
    let mut roots = Vec::new();
    if let Some(g) = std::env::var_os("GOTMPDIR").filter(|g| !g.is_empty()) {
        roots.push(PathBuf::from(g));
    }
    roots.push(std::env::temp_dir());
    roots
}

/// Where build-dirs runs keep receipts and their lock: `$XDG_STATE_HOME/doctor` when that is
/// set (on every OS), else the OS's place for an application's state: `~/.local/state/doctor`
/// on Linux and the BSDs, `~/Library/Application Support/doctor` on macOS,
/// `%LOCALAPPDATA%\doctor` on Windows.
pub fn default_state_dir() -> Option<PathBuf> {
    crate::options::user_dir(
        "XDG_STATE_HOME",
        ".local/state",
        "Library/Application Support",
        "",
    )
}

/// One item a rule left, with its root.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct SweepSkipped {
    /// The absolute root.
    pub root: String,
    /// The item, relative to the root.
    pub path: String,
    /// Rule code.
    pub rule: String,
    /// Why.
    pub why: String,
}

/// The counts of a sweep: what was reclaimed (a dry run: what would be) and what was spared.
#[derive(Debug, Clone, Default, Serialize, PartialEq, Eq)]
pub struct SweepSummary {
    /// Directories deleted (a dry run: planned).
    pub dirs_reclaimed: u64,
    /// Bytes of the regular files deleted (a dry run: in the planned trees).
    pub bytes_freed: u64,
    /// Items the rules left on purpose (listed in `skipped`).
    pub dirs_spared: u64,
    /// Processes whose references were read.
    pub processes_scanned: u64,
    /// Per-process items of `/proc` that could not be read (other users' or non-dumpable
    /// processes).
    pub proc_items_unreadable: u64,
    /// Actions left for a later run by `--max-actions`.
    pub actions_deferred: u64,
    /// Whether the bound cut the plan.
    pub limit_reached: bool,
    /// Errors met, each naming its path.
    pub errors: Vec<Problem>,
}

/// The JSON document of `--sweep-build-dirs`.
#[derive(Debug, Clone, Serialize)]
pub struct SweepReport {
    /// Format version (1).
    pub schema_version: u64,
    /// Whether nothing was written.
    pub dry_run: bool,
    /// Run id.
    pub run: String,
    /// The roots swept, absolute, in order.
    pub roots: Vec<String>,
    /// The plan; every action names its `root`.
    pub plan: Plan,
    /// One per action applied (empty for a dry run).
    pub outcomes: Vec<Outcome>,
    /// Counts.
    pub summary: SweepSummary,
    /// Items the rules left on purpose, with why.
    pub skipped: Vec<SweepSkipped>,
    /// Where the receipts of real runs go (absolute), when known.
    pub receipts_file: Option<String>,
    /// The sources of liveness this OS's backend read (`cwd`, `argv`, `environ`, `open files`,
    /// `maps` on Linux); none where there is no backend.
    pub liveness: Vec<String>,
    #[serde(skip)]
    receipt_failed: bool,
    /// Directories kept only because a process that could not be read (or seen) may be
    /// using them.
    #[serde(skip)]
    held_unseen: u64,
    /// Whether liveness could not be read at all (an OS without a backend).
    #[serde(skip)]
    unsupported: bool,
}

fn absolute(p: &Path) -> PathBuf {
    std::path::absolute(p).unwrap_or_else(|_| p.to_path_buf())
}

fn is_missing(e: &fsroot::Error) -> bool {
    matches!(
        e.io_error().map(std::io::Error::kind),
        Some(std::io::ErrorKind::NotFound | std::io::ErrorKind::NotADirectory)
    )
}

/// The roots of a run, opened: explicit roots must exist; default roots that do not are noted.
fn open_roots<R>(
    opts: &SweepOptions,
    open: impl Fn(&Path) -> fsroot::Result<R>,
    canonical: impl Fn(&R) -> PathBuf,
    notes: &mut Vec<Problem>,
) -> Result<Vec<(String, R)>, Error> {
    let explicit = !opts.roots.is_empty();
    let wanted = if explicit {
        opts.roots.clone()
    } else {
        default_build_roots()
    };
    let mut out: Vec<(String, R)> = Vec::new();
    let mut seen: Vec<PathBuf> = Vec::new();
    for dir in wanted {
        let label = absolute(&dir);
        let root = match open(&label) {
            Ok(r) => r,
            Err(e) if is_missing(&e) && explicit => return Err(Error::MissingRoot(dir)),
            Err(e) if is_missing(&e) => {
                notes.push(Problem::new(
                    label.to_string_lossy(),
                    "open",
                    std::io::ErrorKind::NotFound,
                    format!(
                        "default build root {} does not exist; skipped",
                        label.display()
                    ),
                ));
                continue;
            }
            Err(e) => return Err(Error::Fs(e)),
        };
        let c = canonical(&root);
        if seen.contains(&c) {
            continue; // the same directory under another name: swept once
        }
        seen.push(c);
        out.push((label.to_string_lossy().into_owned(), root));
    }
    Ok(out)
}

/// Opens the state directory, creating it (and its missing parents) when asked.
fn open_state_dir(dir: &Path) -> fsroot::Result<WritableRoot> {
    if let Ok(r) = WritableRoot::open(dir) {
        return Ok(r);
    }
    let mut base = dir.parent();
    while let Some(b) = base {
        if let Ok(r) = WritableRoot::open(b) {
            let rel = dir.strip_prefix(b).unwrap_or(dir);
            r.create_dir_all(rel)?;
            drop(r);
            return WritableRoot::open(dir);
        }
        base = b.parent();
    }
    WritableRoot::open(dir)
}

/// Opens the liveness backend (`given`, else this OS's: `/proc` on Linux, the process table
/// on Windows) and reads the invoking user from it.
fn open_liveness(
    opts: &SweepOptions,
    given: Option<Liveness>,
) -> Result<(Liveness, Option<fsroot::Owner>), Error> {
    let live = match given {
        Some(live) => live,
        None => Liveness::for_this_os(&opts.proc_dir).map_err(Error::NoProc)?,
    };
    let owner = live.invoking_owner().map_err(Error::NoProc)?;
    Ok((live, owner))
}

/// The deletions earlier runs started and did not finish, as the planner takes them.
fn interrupted(pending: &[PendingDeletion]) -> Vec<Interrupted> {
    pending
        .iter()
        .map(|p| Interrupted {
            run: p.run.clone(),
            root: p.root.clone(),
            path: p.path.clone(),
            dev: p.dev,
            ino: p.ino,
        })
        .collect()
}

/// Sweeps the build roots: plans B1 and, unless `dry_run`, applies the plan.
pub fn sweep_build_dirs(opts: &SweepOptions) -> Result<SweepReport, Error> {
    sweep_with(opts, None)
}

/// [`sweep_build_dirs`] reading liveness from `given` (`None`: this OS's backend).
fn sweep_with(opts: &SweepOptions, given: Option<Liveness>) -> Result<SweepReport, Error> {
    let _span = tracing::info_span!("sweep_with").entered();
    let now = opts.clock.now();
    let run = RunId::new(now);
    let mut notes = Vec::new();
    let state_dir = opts
        .state_dir
        .clone()
        .or_else(default_state_dir)
        .map(|d| absolute(&d));
    let receipts_file = state_dir
        .as_ref()
        .map(|d| d.join(RECEIPTS_FILE).to_string_lossy().into_owned());
    let config = |owner| BuildConfig {
        max_actions: opts.max_actions,
        min_age_secs: opts.min_age_secs,
        now,
        owner,
    };

    if opts.dry_run {
        let roots = open_roots(
            opts,
            Root::open,
            |r| r.canonical_anchor().to_path_buf(),
            &mut notes,
        )?;
        let (live, owner) = open_liveness(opts, given)?;
        let processes = live.read().map_err(Error::NoProc)?;
        // A dry run reads the state directory when there is one, and creates nothing.
        let (pending, pending_errors) = match state_dir.as_deref().map(Root::open) {
            Some(Ok(state)) => exec::read_pending(&state),
            _ => Default::default(),
        };
        notes.extend(pending_errors);
        let refs: Vec<(&str, &Root)> = roots.iter().map(|(l, r)| (l.as_str(), r)).collect();
        let planned = engine::plan_build_dirs(
            &refs,
            &processes,
            &interrupted(&pending),
            &crate::options::selected(build_dirs::RULES, opts.select.as_deref(), &opts.ignore),
            &config(owner),
        );
        let mut report = SweepReport::new(
            true,
            run,
            &roots,
            planned,
            &processes,
            None,
            notes,
            receipts_file,
        );
        report.note_unseen(&live, &processes);
        return Ok(report);
    }

    let roots = open_roots(
        opts,
        WritableRoot::open,
        |r| r.canonical_anchor().to_path_buf(),
        &mut notes,
    )?;
    let (live, owner) = open_liveness(opts, given)?;
    let state_dir = state_dir.ok_or(Error::NoStateDir)?;
    let state = open_state_dir(&state_dir)?;
    let Some(lock) = exec::acquire_sweep_lock(&state, LOCK_FILE)? else {
        return Err(Error::SweepBusy(state_dir.join(LOCK_FILE)));
    };
    // Read the pending deletions and the processes once the lock is held, right before
    // planning.
    let (pending, pending_errors) = exec::read_pending(&state);
    notes.extend(pending_errors);
    let processes = live.read().map_err(Error::NoProc)?;
    let refs: Vec<(&str, &Root)> = roots.iter().map(|(l, r)| (l.as_str(), &**r)).collect();
    let planned = engine::plan_build_dirs(
        &refs,
        &processes,
        &interrupted(&pending),
        &crate::options::selected(build_dirs::RULES, opts.select.as_deref(), &opts.ignore),
        &config(owner),
    );
    let mut target = BuildDirsTarget {
        roots: &roots,
        liveness: &live,
        owner,
        state: &state,
        receipts_file: RECEIPTS_FILE,
        pending: &pending,
        dirs_reclaimed: 0,
        bytes_freed: 0,
    };
    let mut applied = exec::execute(
        &mut target,
        &lock,
        &planned.plan,
        &run,
        opts.clock,
        &opts.progress,
    );
    applied.errors.extend(target.drop_stale_pending());
    let reclaimed = Reclaimed {
        dirs_reclaimed: target.dirs_reclaimed,
        bytes_freed: target.bytes_freed,
        applied,
    };
    let mut report = SweepReport::new(
        false,
        run,
        &roots,
        planned,
        &processes,
        Some(reclaimed),
        notes,
        receipts_file,
    );
    report.note_unseen(&live, &processes);
    Ok(report)
}

/// What applying a build-dirs plan did.
#[derive(Debug)]
struct Reclaimed {
    dirs_reclaimed: u64,
    bytes_freed: u64,
    applied: exec::Applied,
}

impl SweepReport {
    #[allow(clippy::too_many_arguments)]
    fn new<R>(
        dry_run: bool,
        run: RunId,
        roots: &[(String, R)],
        planned: BuildPlanned,
        processes: &ProcessRefs,
        reclaimed: Option<Reclaimed>,
        notes: Vec<Problem>,
        receipts_file: Option<String>,
    ) -> SweepReport {
        let mut summary = SweepSummary {
            dirs_spared: planned.skipped.len() as u64,
            processes_scanned: processes.processes,
            proc_items_unreadable: processes.unreadable,
            actions_deferred: planned.plan.deferred,
            limit_reached: planned.limit_reached,
            errors: notes,
            ..SweepSummary::default()
        };
        summary.errors.extend(planned.errors);
        let mut outcomes = Vec::new();
        let mut receipt_failed = false;
        match reclaimed {
            None => {
                summary.dirs_reclaimed = planned.plan.actions.len() as u64;
                summary.bytes_freed = planned
                    .plan
                    .actions
                    .iter()
                    .map(|a| match a.precondition {
                        Precondition::Tree { bytes, .. } | Precondition::File { bytes, .. } => {
                            bytes
                        }
                    })
                    .sum();
            }
            Some(r) => {
                summary.dirs_reclaimed = r.dirs_reclaimed;
                summary.bytes_freed = r.bytes_freed;
                summary.errors.extend(r.applied.errors);
                outcomes = r.applied.outcomes;
                receipt_failed = r.applied.records_failed;
            }
        }
        SweepReport {
            schema_version: 1,
            dry_run,
            run: run.0,
            roots: roots.iter().map(|(l, _)| l.clone()).collect(),
            plan: planned.plan,
            outcomes,
            summary,
            skipped: planned
                .skipped
                .into_iter()
                .map(|s| SweepSkipped {
                    root: s.root,
                    path: s.skipped.path,
                    rule: s.skipped.rule,
                    why: s.skipped.why,
                })
                .collect(),
            receipts_file,
            liveness: Vec::new(),
            receipt_failed,
            held_unseen: 0,
            unsupported: false,
        }
    }

    /// Counts the directories kept only because a process that could not be read (or seen)
    /// may be using them, at planning or right before deleting; when there are any, says so
    /// in one error (naming `proc`) and the run fails (exit 1). Where liveness cannot be read
    /// at all (an OS without a backend), it says so whatever was found, and the run fails.
    fn note_unseen(&mut self, live: &Liveness, processes: &ProcessRefs) {
        self.liveness = live.sources().iter().map(|s| (*s).to_owned()).collect();
        let unseen = |why: &str| why.starts_with(engine::liveness::NOT_KNOWN_UNUSED);
        let planned = self.skipped.iter().filter(|k| unseen(&k.why)).count();
        let checked = self
            .outcomes
            .iter()
            .filter(|o| o.outcome == OutcomeKind::Skipped && o.why.as_deref().is_some_and(unseen))
            .count();
        self.held_unseen = (planned + checked) as u64;
        let n = self.held_unseen;
        let plural = if n == 1 { "y" } else { "ies" };
        if let Some(why) = &processes.unsupported {
            self.unsupported = true;
            self.summary.errors.push(Problem::new(
                "",
                "read the process table",
                std::io::ErrorKind::Unsupported,
                format!(
                    "{why}: no directory can be known to be unused, so nothing was reclaimed \
                     ({n} director{plural} spared)"
                ),
            ));
        } else if n > 0 {
            let proc = live.source().unwrap_or(Path::new(""));
            self.summary.errors.push(Problem::new(
                proc.to_string_lossy(),
                "read the process table",
                std::io::ErrorKind::PermissionDenied,
                format!(
                    "not every process could be read, so {n} director{plural} that one of them \
                     may be using {} not reclaimed (see why it was skipped)",
                    if n == 1 { "was" } else { "were" },
                ),
            ));
        }
    }

    /// Whether the run failed: an action failed, a receipt could not be written, or a
    /// directory was kept only because a process that could not be read may be using it.
    pub fn failed(&self) -> bool {
        self.receipt_failed
            || self.held_unseen > 0
            || self.unsupported
            || self
                .outcomes
                .iter()
                .any(|o| o.outcome == OutcomeKind::Failed)
    }

    /// The human form: one line per action (future tense for a dry run), the skipped items
    /// with why, errors, then the summary line.
    pub fn render_human(&self) -> String {
        let mut s = String::new();
        s.push_str(&render_actions(
            &self.plan.actions,
            &self.outcomes,
            self.dry_run,
        ));
        for k in &self.skipped {
            let _ = writeln!(s, "skipped {}  ({}: {})", k.shown_path(), k.rule, k.why);
        }
        for e in &self.summary.errors {
            let _ = writeln!(s, "error: {e}");
        }
        let sm = &self.summary;
        if let Some(line) = self.closing_line() {
            let _ = writeln!(s, "{line}");
        }
        if !self.dry_run && sm.actions_deferred > 0 {
            let _ = writeln!(
                s,
                "{} actions deferred by --max-actions",
                sm.actions_deferred
            );
        }
        s
    }
}

impl SweepReport {
    /// The line the human form closes its actions with: for a dry run, how many actions were
    /// planned, the bytes they free (and the actions deferred) and that nothing was written;
    /// for a real run, what was reclaimed, or `None` when nothing was.
    pub(crate) fn closing_line(&self) -> Option<String> {
        let sm = &self.summary;
        let n = self.plan.actions.len();
        if self.dry_run {
            Some(format!(
                "{n} action{} planned, {} to free{}; nothing was written",
                if n == 1 { "" } else { "s" },
                human_bytes(sm.bytes_freed),
                if sm.actions_deferred > 0 {
                    format!(", {} deferred", sm.actions_deferred)
                } else {
                    String::new()
                }
            ))
        } else if sm.dirs_reclaimed > 0 {
            Some(format!(
                "Build dirs reclaimed: {} director{}, {} freed",
                sm.dirs_reclaimed,
                if sm.dirs_reclaimed == 1 { "y" } else { "ies" },
                human_bytes(sm.bytes_freed)
            ))
        } else {
            None
        }
    }

    /// A report built in memory, for the format tests.
    #[cfg(test)]
    pub(crate) fn in_memory(
        dry_run: bool,
        roots: Vec<String>,
        plan: Plan,
        outcomes: Vec<Outcome>,
        skipped: Vec<SweepSkipped>,
        summary: SweepSummary,
    ) -> SweepReport {
        SweepReport {
            schema_version: 1,
            dry_run,
            run: "20261129T120000Z-a1b2c3".to_owned(),
            roots,
            plan,
            outcomes,
            summary,
            skipped,
            receipts_file: None,
            liveness: Vec::new(),
            receipt_failed: false,
            held_unseen: 0,
            unsupported: false,
        }
    }
}

impl SweepSkipped {
    /// The item joined to its root, as a reader should see it.
    pub fn shown_path(&self) -> String {
        format!("{}/{}", self.root.trim_end_matches('/'), self.path)
    }
}

impl View for SweepReport {
    fn command(&self) -> &'static str {
        "build-dirs sweep"
    }

    fn targets(&self) -> Vec<String> {
        self.roots.clone()
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
        self.skipped
            .iter()
            .map(|k| KeptItem {
                path: k.shown_path(),
                rule: k.rule.clone(),
                why: k.why.clone(),
            })
            .collect()
    }

    fn rules(&self) -> Vec<(String, String)> {
        format::rules_seen(
            format::registry(build_dirs::RULES),
            &self.plan,
            &self.kept(),
        )
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

#[cfg(test)]
mod tests {
    use super::*;

    /// A build root holding one leaked Go work directory (a day older than the run's clock),
    /// a state directory, and the options of a sweep of that root.
    #[allow(clippy::disallowed_methods)] // the test makes its tree with std::fs
    fn leaked_tree(dry_run: bool) -> (tempfile::TempDir, SweepOptions) {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path().join("root");
        std::fs::create_dir_all(root.join("go-build1/b001")).unwrap();
        std::fs::write(root.join("go-build1/b001/a.o"), b"object").unwrap();
        let mut opts = SweepOptions::new();
        opts.roots = vec![root];
        opts.state_dir = Some(tmp.path().join("state"));
        opts.dry_run = dry_run;
        opts.clock = Clock::Fixed(kernel::Timestamp(i64::from(u32::MAX)));
        (tmp, opts)
    }

    #[test]
    fn without_a_liveness_backend_nothing_is_reclaimed_and_the_run_fails() {
        const WHY: &str = "which processes use a directory cannot be read here (test)";
        for dry_run in [true, false] {
            let (tmp, opts) = leaked_tree(dry_run);
            let report = sweep_with(&opts, Some(Liveness::unsupported(WHY))).unwrap();
            assert!(report.plan.actions.is_empty(), "{:?}", report.plan.actions);
            assert!(report.outcomes.is_empty());
            assert_eq!(report.summary.dirs_reclaimed, 0);
            assert_eq!(report.skipped.len(), 1, "{:?}", report.skipped);
            assert_eq!(report.skipped[0].path, "go-build1");
            assert_eq!(
                report.skipped[0].why,
                format!("{}{WHY}", engine::liveness::NOT_KNOWN_UNUSED)
            );
            let said = report
                .summary
                .errors
                .iter()
                .find(|e| e.kind == std::io::ErrorKind::Unsupported)
                .unwrap_or_else(|| panic!("no error says why: {:?}", report.summary.errors));
            assert!(
                said.message.starts_with(WHY) && said.message.contains("1 directory spared"),
                "{said}"
            );
            // Exit 1 (`command::run` gives `u8::from(report.failed())`).
            assert!(report.failed());
            assert!(tmp.path().join("root/go-build1/b001/a.o").is_file());
        }
    }

    /// The same tree with this OS's backend: on Linux `/proc` is read and the directory is
    /// planned, so the refusal above is the backend's doing.
    #[cfg(target_os = "linux")]
    #[test]
    fn with_procfs_the_same_directory_is_planned() {
        let (_tmp, opts) = leaked_tree(true);
        let report = sweep_build_dirs(&opts).unwrap();
        let planned: Vec<&str> = report
            .plan
            .actions
            .iter()
            .map(|a| a.path.as_str())
            .collect();
        assert_eq!(planned, ["go-build1"], "{:?}", report.skipped);
        assert!(!report.failed());
    }
}
