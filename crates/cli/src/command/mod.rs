//! The `doctor` command line (cli.md): the commands and their flag forms ([`args`]), logging
//! (tracing, to stderr, `-q`/`-v`), progress, colour, the output formats, and the exit codes.
//! The binary's `main` only calls [`main`].

pub mod args;
mod print;

use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::Parser;
use store::{Clock, Timestamp};

use crate::format::OutputFormat;
use crate::{Error, RepairOptions};
use args::{Cli, Invocation};
use print::Printer;

pub use args::cli;

/// Runs the `doctor` command line: parses the arguments, runs the command, and gives the exit
/// code of cli.md.
pub fn main() -> ExitCode {
    let cli = Cli::parse();
    let invocation = match cli.invocation() {
        Ok(i) => i,
        Err(e) => e.exit(),
    };
    let format = match (cli.global.json, cli.global.output_format) {
        (true, _) => OutputFormat::Json,
        (false, f) => f.unwrap_or_default(),
    };
    init_tracing(cli.global.verbose);
    watch_signals();
    let printer = Printer::new(format, &cli.global);
    let code = match run(&invocation, &printer, cli.global.no_cache) {
        Ok(code) => ExitCode::from(code),
        Err(e) => {
            printer.error(&e.to_string());
            ExitCode::from(e.exit_code() as u8)
        }
    };
    // A run a signal stopped (after the action in progress, with its report) ends with the
    // shell's code for that signal: 129 SIGHUP, 130 SIGINT (Ctrl-C on Windows too), 143
    // SIGTERM.
    match exec::interrupt::stop_requested() {
        Some(sig) => {
            let _ = writeln!(
                std::io::stderr(),
                "doctor: stopped by {} after the action in progress; a rerun does the rest",
                exec::interrupt::signal_name(sig)
            );
            ExitCode::from((128 + sig) as u8)
        }
        None => code,
    }
}

/// Catches SIGTERM, SIGINT and SIGHUP as a careful tool does (`signal-hook`, on a thread of its
/// own): while a plan is being applied, the run finishes the action in progress and its
/// receipt, then stops with its report ([`exec::interrupt`]); before that (planning, a dry
/// run, a listing) nothing has been changed, and the process exits at once with 128 + the
/// signal's number.
#[cfg(unix)]
fn watch_signals() {
    use signal_hook::consts::{SIGHUP, SIGINT, SIGTERM};
    let Ok(mut signals) = signal_hook::iterator::Signals::new([SIGTERM, SIGINT, SIGHUP]) else {
        // Signals then keep their default action: the process ends at once, as before.
        return;
    };
    std::thread::spawn(move || {
        for sig in signals.forever() {
            on_signal(sig);
        }
    });
}

/// Catches Ctrl-C (and Ctrl-Break) and SIGTERM as the C runtime delivers them on Windows
/// (SIGINT 2, SIGBREAK 21 taken as SIGINT, SIGTERM 15), with what [`on_signal`] does on Unix.
/// signal-hook's iterator is Unix-only, so its flag records the signal and a thread of its
/// own takes it within 10 ms.
#[cfg(windows)]
fn watch_signals() {
    use signal_hook::consts::{SIGBREAK, SIGINT, SIGTERM};
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Arc;
    let caught = Arc::new(AtomicUsize::new(0));
    for (sig, as_sig) in [(SIGINT, SIGINT), (SIGBREAK, SIGINT), (SIGTERM, SIGTERM)] {
        let as_sig = usize::try_from(as_sig).unwrap_or_default();
        if signal_hook::flag::register_usize(sig, Arc::clone(&caught), as_sig).is_err() {
            return;
        }
    }
    std::thread::spawn(move || loop {
        std::thread::sleep(std::time::Duration::from_millis(10));
        match caught.swap(0, Ordering::SeqCst) {
            0 => {}
            sig => on_signal(i32::try_from(sig).unwrap_or(SIGINT)),
        }
    });
}

/// A caught signal: a run applying a plan stops after the action in progress; any other ends
/// the process now with 128 + the signal's number.
fn on_signal(sig: i32) {
    if !exec::interrupt::request_stop(sig) {
        let _ = writeln!(
            std::io::stderr(),
            "doctor: stopped by {} before anything was changed",
            exec::interrupt::signal_name(sig)
        );
        std::process::exit(128 + sig);
    }
}

// The edge: the environment is read here (clippy.toml).
#[allow(clippy::disallowed_methods)]
fn clock() -> Result<Clock, String> {
    let clock = match std::env::var("DOCTOR_NOW") {
        Ok(v) if !v.is_empty() => Timestamp::parse_strict(&v)
            .map(Clock::Fixed)
            .map_err(|why| format!("DOCTOR_NOW={v:?} {why}"))?,
        _ => Clock::System,
    };
    // A clock no run id can spell (the system clock set past 9999) runs nothing.
    clock.check()?;
    Ok(clock)
}

/// Logs on stderr: `DOCTOR_LOG`, else `RUST_LOG`, else the level `-v` asks for (`warn` by
/// default; `-v` the phases, `-vv` each action, `-vvv` everything). Logs never stop a run: a
/// line stderr does not take (its reader gone, a full disk) is dropped ([`LogWriter`]), and the
/// subscriber never reports its own failures (it would do so with `eprintln!`, which panics).
#[allow(clippy::disallowed_methods)]
fn init_tracing(verbose: u8) {
    let level = match verbose {
        0 => "warn",
        1 => "info",
        2 => "debug",
        _ => "trace",
    };
    let filter = std::env::var("DOCTOR_LOG")
        .or_else(|_| std::env::var("RUST_LOG"))
        .unwrap_or_else(|_| level.into());
    let _ = tracing_subscriber::fmt()
        .with_env_filter(tracing_subscriber::EnvFilter::new(filter))
        .with_writer(|| LogWriter)
        .log_internal_errors(false)
        .try_init();
}

/// Standard error for the logs: whatever stderr does not take is dropped, never an error.
struct LogWriter;

impl std::io::Write for LogWriter {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let _ = std::io::stderr().write_all(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        let _ = std::io::stderr().flush();
        Ok(())
    }
}

/// The sessions directory a command works on: `--sessions-dir`, else the default
/// ([`crate::AppHome`]). A default that does not exist while the app's legacy
/// `~/.deepseek/sessions` does is reported ([`Error::OnlyLegacySessions`]), never migrated.
fn sessions_dir(dir: &Option<PathBuf>) -> Result<PathBuf, Error> {
    if let Some(d) = dir {
        return Ok(d.clone());
    }
    let home = crate::AppHome::from_env().map_err(Error::BadEnvironment)?;
    let s = home.sessions_dir();
    if let Some(legacy) = home.legacy_sessions {
        let exists = |p: &Path| fsroot::Root::open(p).is_ok();
        if !exists(&s) && exists(&legacy) {
            return Err(Error::OnlyLegacySessions { dir: s, legacy });
        }
    }
    Ok(s)
}

fn run(invocation: &Invocation, printer: &Printer, no_cache: bool) -> Result<u8, Error> {
    let options = |dir: &Option<PathBuf>, clock: Clock| -> Result<RepairOptions, Error> {
        let mut opts = RepairOptions::new(sessions_dir(dir)?);
        opts.clock = clock;
        if no_cache {
            opts.cache_dir = None;
        }
        Ok(opts)
    };
    if let Invocation::Completions { shell } = invocation {
        let mut cmd = cli();
        let mut out = Vec::new();
        clap_complete::generate(*shell, &mut cmd, "doctor", &mut out);
        printer.raw(&out);
        return Ok(0);
    }
    if let Invocation::Rule { code } = invocation {
        return Ok(printer.rule(code.as_deref()));
    }
    let clock = clock().map_err(Error::BadEnvironment)?;
    match invocation {
        Invocation::Status { dir } => {
            printer.only_text_or_json("status")?;
            let opts = options(dir, clock)?;
            let status = printer.progress("scanning", |p| {
                let mut opts = opts.clone();
                opts.progress = p.clone();
                crate::status(&opts)
            })?;
            printer.report(&status, &status.render_human(), None);
            Ok(0)
        }
        Invocation::Repair(r) => {
            // `--plan-out -` takes stdout for the plan alone: everything else goes to stderr.
            let plan_to_stdout = r.plan_out.as_deref() == Some(Path::new("-"));
            let printer = if plan_to_stdout {
                printer.to_stderr()
            } else {
                printer.clone()
            };
            let mut opts = options(&r.dir, clock)?;
            opts.dry_run = r.dry_run;
            opts.max_actions = r.max_actions;
            opts.artifact_idle_secs = r.artifact_idle;
            opts.select.clone_from(&r.select);
            opts.ignore.clone_from(&r.ignore);
            opts.assume_session_store = r.assume_session_store;
            opts.allow_mass_set_aside = r.allow_mass_set_aside;
            let report = match printer.progress("repairing sessions", |p| {
                opts.progress = p.clone();
                crate::repair_sessions(&opts)
            }) {
                Err(Error::Busy(lock)) if printer.format() == OutputFormat::Json => {
                    // `--json` still prints one document: nothing done, skipped_concurrent.
                    printer.json(&crate::RepairReport::busy(&opts.sessions_dir, clock.now()));
                    return Err(Error::Busy(lock));
                }
                other => other?,
            };
            let mut report = report;
            if let Some(path) = &r.plan_out {
                let bytes = crate::plan_file_bytes(&report);
                if plan_to_stdout {
                    printer.raw(&bytes);
                } else if let Err(e) = fsroot::write_standalone_file(path, &bytes) {
                    // After a real run the actions are applied whatever happens here: a plan
                    // file that cannot be written is reported with the rest, never instead.
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
            printer.repair(&report);
            if r.check && (!report.plan.actions.is_empty() || report.plan.deferred > 0) {
                return Ok(3);
            }
            Ok(exit_of(&report))
        }
        Invocation::Apply { file } => {
            let (bytes, from) = if file == Path::new("-") {
                let mut bytes = Vec::new();
                std::io::stdin()
                    .read_to_end(&mut bytes)
                    .map_err(|e| Error::BadPlan(format!("cannot read the plan from stdin: {e}")))?;
                (bytes, "from stdin".to_owned())
            } else {
                (crate::read_plan_file(file)?, file.display().to_string())
            };
            let report = printer.progress("applying the plan", |p| {
                crate::apply_plan_bytes(&bytes, &from, clock, p)
            })?;
            printer.repair(&report);
            Ok(exit_of(&report))
        }
        Invocation::List { dir, run } => {
            printer.only_text_or_json("sessions list")?;
            let opts = options(dir, clock)?;
            match run {
                None => {
                    let runs = crate::list_runs(&opts)?;
                    printer.report(&runs, &runs.render_human(), None);
                }
                Some(run) => {
                    let listing = crate::list_run(&opts, run)?;
                    printer.report(&listing, &listing.render_human(), None);
                }
            }
            Ok(0)
        }
        Invocation::Restore {
            dir,
            run,
            items,
            dry_run,
        } => {
            let mut opts = options(dir, clock)?;
            opts.dry_run = *dry_run;
            let report = printer.progress("restoring", |p| {
                opts.progress = p.clone();
                crate::restore(&opts, run, items)
            })?;
            printer.admin(&report);
            Ok(admin_exit(&report))
        }
        Invocation::Purge {
            dir,
            older_than,
            force,
            dry_run,
        } => {
            let mut opts = options(dir, clock)?;
            opts.dry_run = *dry_run;
            let report = printer.progress("purging set-aside runs", |p| {
                opts.progress = p.clone();
                crate::purge(&opts, *older_than, *force)
            })?;
            printer.admin(&report);
            Ok(admin_exit(&report))
        }
        Invocation::Sweep(s) => {
            let mut opts = crate::sweep::SweepOptions::new();
            opts.clock = clock;
            opts.roots.clone_from(&s.roots);
            opts.dry_run = s.dry_run;
            opts.max_actions = s.max_actions;
            opts.min_age_secs = s.min_age;
            opts.select.clone_from(&s.select);
            opts.ignore.clone_from(&s.ignore);
            let report = printer.progress("sweeping build directories", |p| {
                opts.progress = p.clone();
                crate::sweep::sweep_build_dirs(&opts)
            })?;
            printer.sweep(&report);
            // A directory kept because a process could not be read fails even --check.
            if s.check
                && !report.failed()
                && (!report.plan.actions.is_empty() || report.plan.deferred > 0)
            {
                return Ok(3);
            }
            Ok(u8::from(report.failed()))
        }
        Invocation::Rule { .. } | Invocation::Completions { .. } => Ok(0),
    }
}

/// 1 when an action failed (it was tried and could not be done), something failed after the
/// actions were applied (the report is printed all the same), or a guard held a rule back; 0
/// otherwise. Errors the run worked around (a file it could not read, kept; a file that went
/// away while it looked) are reported, dry or real, and do not fail it: cli.md's 1 is "an
/// error it could not work around" (docs/decisions.md, "Issue 21: ... exit codes").
fn exit_of(report: &crate::RepairReport) -> u8 {
    let failed = report
        .outcomes
        .iter()
        .any(|o| o.outcome == plan::OutcomeKind::Failed);
    u8::from(failed || report.late_failure || report.mass_set_aside_refused)
}

/// 1 when a restore or purge action failed, a receipt could not be written, or a restore
/// refused an item ([`crate::AdminReport::failed`]).
fn admin_exit(report: &crate::AdminReport) -> u8 {
    u8::from(report.failed())
}
