//! The `doctor` command line: flags (clap), logging (tracing, to stderr), progress, exit codes
//! (cli.md). The binary's `main` only calls [`main`].

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use crate::{Error, RepairOptions};
use clap::Parser;
use store::{Clock, Timestamp};

/// Repairs on-disk state that applications leave orphaned, without ever losing anything.
// The flags' doc comments are `--help` text, written for a terminal, not rustdoc.
#[allow(rustdoc::invalid_html_tags)]
#[derive(Debug, Parser)]
#[command(name = "doctor", version, about)]
#[command(group(clap::ArgGroup::new("checkable").args(["repair_sessions", "sweep_build_dirs"])))]
pub struct Args {
    /// Plan and apply the sessions pack (R1-R5).
    #[arg(long, conflicts_with = "apply_plan")]
    repair_sessions: bool,
    /// Apply a plan written by --plan-out exactly, without re-planning.
    #[arg(long, value_name = "FILE", conflicts_with_all = ["sessions_dir", "dry_run", "max_actions", "artifact_idle", "check", "plan_out"])]
    apply_plan: Option<PathBuf>,
    /// The sessions directory (default: $CODEWHALE_HOME/sessions, else ~/.codewhale/sessions).
    #[arg(long, value_name = "DIR")]
    sessions_dir: Option<PathBuf>,
    /// Plan and print; write nothing.
    #[arg(long)]
    dry_run: bool,
    /// Print one JSON document on stdout.
    #[arg(long)]
    json: bool,
    /// Apply at most N actions; the rest are reported as deferred.
    #[arg(long, value_name = "N", default_value_t = 500)]
    max_actions: usize,
    /// How long an artifact directory must be unchanged before R5 sets it aside.
    #[arg(long, value_name = "DUR", default_value = "24h", value_parser = parse_duration)]
    artifact_idle: i64,
    /// Also write the plan JSON to FILE.
    #[arg(long, value_name = "FILE", requires = "repair_sessions")]
    plan_out: Option<PathBuf>,
    /// Exit 3 when any action is planned (implies --dry-run): for CI.
    #[arg(long, requires = "checkable")]
    check: bool,
    /// Move the items of set-aside run RUN back to their original paths, verified first.
    #[arg(long, value_name = "RUN", conflicts_with_all = ["repair_sessions", "apply_plan", "purge_set_aside"])]
    restore: Option<String>,
    /// With --restore: only this item (its original path relative to S); repeatable.
    #[arg(long = "item", value_name = "REL", requires = "restore")]
    items: Vec<String>,
    /// Delete whole set-aside runs older than --older-than (the only deletion of session data).
    #[arg(long, requires = "older_than", conflicts_with_all = ["repair_sessions", "apply_plan"])]
    purge_set_aside: bool,
    /// With --purge-set-aside: the minimum age of a run to purge.
    #[arg(long, value_name = "DUR", value_parser = parse_duration, requires = "purge_set_aside")]
    older_than: Option<i64>,
    /// With --purge-set-aside: purge runs that do not match their manifests too.
    #[arg(long, requires = "purge_set_aside")]
    force: bool,
    /// Reclaim leaked Go work directories (go-build<n>, go-link-<n>) no live process uses.
    #[arg(long, conflicts_with_all = ["apply_plan", "restore", "purge_set_aside", "sessions_dir", "artifact_idle", "plan_out"])]
    sweep_build_dirs: bool,
    /// With --sweep-build-dirs: a root to sweep, repeatable (default: $GOTMPDIR when set, and
    /// the OS temp dir).
    #[arg(long = "root", value_name = "DIR", requires = "sweep_build_dirs")]
    roots: Vec<PathBuf>,
    /// With --sweep-build-dirs: how long a work directory must be unchanged to be reclaimed.
    #[arg(long, value_name = "DUR", default_value = "30m", value_parser = parse_duration, requires = "sweep_build_dirs")]
    min_age: i64,
}

fn parse_duration(s: &str) -> Result<i64, String> {
    store::time::parse_duration(s)
        .ok_or_else(|| format!("invalid duration {s:?} (use 90s, 30m, 24h, 14d)"))
}

// The edge: the environment is read here (clippy.toml).
#[allow(clippy::disallowed_methods)]
fn clock() -> Result<Clock, String> {
    match std::env::var("DOCTOR_NOW") {
        Ok(v) if !v.is_empty() => Timestamp::parse(&v)
            .map(Clock::Fixed)
            .ok_or_else(|| format!("DOCTOR_NOW={v:?} is not an RFC 3339 time")),
        _ => Ok(Clock::System),
    }
}

#[allow(clippy::disallowed_methods)]
fn init_tracing() {
    let filter = std::env::var("DOCTOR_LOG")
        .or_else(|_| std::env::var("RUST_LOG"))
        .unwrap_or_else(|_| "warn".into());
    let _ = tracing_subscriber::fmt()
        .with_env_filter(tracing_subscriber::EnvFilter::new(filter))
        .with_writer(std::io::stderr)
        .try_init();
}

/// Runs `f` with a spinner on stderr, drawn only when stderr is a terminal (never into pipes,
/// logs or CI output), and cleared when `f` returns.
fn with_progress<T>(message: &'static str, f: impl FnOnce() -> T) -> T {
    use std::io::IsTerminal;
    if !std::io::stderr().is_terminal() {
        return f();
    }
    let spinner = indicatif::ProgressBar::new_spinner();
    spinner.set_message(message);
    spinner.enable_steady_tick(std::time::Duration::from_millis(100));
    let out = f();
    spinner.finish_and_clear();
    out
}

/// Writes to standard output through `write`. A reader that went away (`doctor … | head -1`)
/// ends the output quietly (cli.md: no panic, no backtrace); any other failure to write is said
/// on stderr.
fn emit(write: impl FnOnce(&mut dyn Write) -> std::io::Result<()>) {
    let mut out = std::io::BufWriter::new(std::io::stdout().lock());
    if let Err(e) = write(&mut out).and_then(|()| out.flush()) {
        if e.kind() != std::io::ErrorKind::BrokenPipe {
            eprintln!("doctor: cannot write the report: {e}");
        }
    }
}

/// Streams `value` as pretty JSON to standard output (never built whole in memory: a report of
/// a large store is large).
fn print_json(value: &impl serde::Serialize) {
    emit(|out| {
        serde_json::to_writer_pretty(&mut *out, value).map_err(std::io::Error::from)?;
        out.write_all(b"\n")
    });
}

/// Writes a human report to standard output.
fn print_text(text: &str) {
    emit(|out| out.write_all(text.as_bytes()));
}

/// Runs the `doctor` command line: parses the arguments, runs the command, and gives the exit
/// code of cli.md.
pub fn main() -> ExitCode {
    init_tracing();
    let args = Args::parse();
    if args.sweep_build_dirs {
        return ExitCode::from(run_sweep(&args));
    }
    match run(&args) {
        Ok(code) => ExitCode::from(code),
        Err(e) => {
            eprintln!("doctor: {e}");
            ExitCode::from(e.exit_code() as u8)
        }
    }
}

fn run(args: &Args) -> Result<u8, Error> {
    let clock = clock().map_err(Error::BadEnvironment)?;
    if let Some(plan) = &args.apply_plan {
        let report = with_progress("applying the plan", || crate::apply_plan_file(plan, clock))?;
        if args.json {
            print_json(&report);
        } else {
            print_text(&report.render_human());
        }
        return Ok(exit_of(&report));
    }
    let dir = match &args.sessions_dir {
        Some(d) => d.clone(),
        None => crate::default_sessions_dir().ok_or_else(|| {
            Error::BadEnvironment("no --sessions-dir and no HOME to find the default".into())
        })?,
    };
    let mut opts = RepairOptions::new(dir);
    opts.dry_run = args.dry_run || args.check || !args.repair_sessions;
    opts.max_actions = args.max_actions;
    opts.artifact_idle_secs = args.artifact_idle;
    opts.clock = clock;
    if args.restore.is_some() || args.purge_set_aside {
        opts.dry_run = args.dry_run;
        let report = match &args.restore {
            Some(run) => with_progress("restoring", || crate::restore(&opts, run, &args.items))?,
            None => with_progress("purging set-aside runs", || {
                crate::purge(&opts, args.older_than.unwrap_or_default(), args.force)
            })?,
        };
        if args.json {
            print_json(&report);
        } else {
            print_text(&report.render_human());
        }
        let failed = report
            .outcomes
            .iter()
            .any(|o| o.outcome == plan::OutcomeKind::Failed);
        return Ok(u8::from(failed || report.records_failed));
    }
    if !args.repair_sessions {
        let status = with_progress("scanning", || crate::status(&opts))?;
        if args.json {
            print_json(&status);
        } else {
            print_text(&status.render_human());
        }
        return Ok(0);
    }
    let report = match with_progress("repairing sessions", || crate::repair_sessions(&opts)) {
        Err(Error::Busy(lock)) if args.json => {
            // `--json` still prints one document: nothing done, skipped_concurrent set.
            print_json(&crate::RepairReport::busy(&opts.sessions_dir, clock.now()));
            return Err(Error::Busy(lock));
        }
        other => other?,
    };
    let mut report = report;
    if let Some(path) = &args.plan_out {
        // After a real run the actions are applied whatever happens here: a plan file that
        // cannot be written is reported with the rest, never instead of it.
        if let Err(e) = fsroot::write_standalone_file(path, &crate::plan_file_bytes(&report)) {
            if report.dry_run {
                return Err(e.into());
            }
            report.summary.errors.push(
                engine::Problem::from(&e)
                    .context(&format!("cannot write the plan file {}", path.display())),
            );
            report.late_failure = true;
        }
    }
    if args.json {
        print_json(&report);
    } else {
        print_text(&report.render_human());
    }
    if args.check && !report.plan.actions.is_empty() {
        return Ok(3);
    }
    Ok(exit_of(&report))
}

/// 1 when an action failed (it was tried and could not be done), or something failed after the
/// actions were applied (the report is printed all the same); 0 otherwise. Scan errors
/// alone do not fail a run: it went on with what it could do safely, and they are reported.
fn exit_of(report: &crate::RepairReport) -> u8 {
    let failed = report
        .outcomes
        .iter()
        .any(|o| o.outcome == plan::OutcomeKind::Failed);
    u8::from(failed || report.late_failure)
}

/// `--sweep-build-dirs`: the exit code of cli.md (1 when an action failed or a receipt could
/// not be written; 3 with `--check` when anything is planned).
fn run_sweep(args: &Args) -> u8 {
    let mut opts = crate::sweep::SweepOptions::new();
    opts.clock = match clock() {
        Ok(c) => c,
        Err(e) => {
            eprintln!("doctor: {e}");
            return 2;
        }
    };
    opts.roots = args.roots.clone();
    opts.dry_run = args.dry_run || args.check;
    opts.max_actions = args.max_actions;
    opts.min_age_secs = args.min_age;
    let report = match with_progress("sweeping build directories", || {
        crate::sweep::sweep_build_dirs(&opts)
    }) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("doctor: {e}");
            return e.exit_code() as u8;
        }
    };
    if args.json {
        print_json(&report);
    } else {
        print_text(&report.render_human());
    }
    if args.check && !report.plan.actions.is_empty() {
        return 3;
    }
    u8::from(report.failed())
}
