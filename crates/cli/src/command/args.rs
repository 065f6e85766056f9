//! The command line as clap reads it (cli.md, Version 2): the global flags, the commands
//! (`status`, `sessions repair|apply|list|restore|purge`, `build-dirs sweep`, `rule`,
//! `completions`), and the first flag forms (`--repair-sessions`, ...), hidden, which
//! [`Cli::invocation`] turns into the very same [`Invocation`] as their command.

// The doc comments of the commands and flags are `--help` text, written for a terminal
// (`go-build<n>`, `.set-aside/<run>`), not rustdoc.
#![allow(rustdoc::invalid_html_tags)]

use std::path::PathBuf;

use clap::{ArgAction, Args, CommandFactory, Parser, Subcommand};

use crate::format::OutputFormat;

const AFTER_HELP: &str = "\
Exit codes:
  0   done (a dry run: planned and printed)
  1   the run failed: an action failed, a receipt could not be written, or a guard held a rule back
  2   usage error: bad flags, a missing directory or plan file, not a session store
  3   --check: actions are pending or deferred
  75  another doctor run holds the lock; nothing was written

Environment:
  CODEWHALE_HOME      where the default sessions directory lives ($CODEWHALE_HOME/sessions)
  HOME, USERPROFILE   else the home holding it (~/.codewhale/sessions): HOME, then USERPROFILE,
                      then on Windows HOMEDRIVE+HOMEPATH, then the OS's home directory
  DOCTOR_NOW          an RFC 3339 instant used as \"now\" (tests, reproducible runs)
  DOCTOR_LOG          a tracing filter for the logs on stderr (else RUST_LOG; -v, -vv, -vvv)
  NO_COLOR            no colour in the text output; CLICOLOR_FORCE forces it
  GITHUB_STEP_SUMMARY with --output-format github, the markdown report is appended to this file
  GOTMPDIR            a default root of build-dirs sweep (beside the OS temp dir)
  XDG_STATE_HOME      where build-dirs sweep keeps its receipts and lock ($XDG_STATE_HOME/doctor)
  XDG_CACHE_HOME      where a scan of S keeps its verdict cache ($XDG_CACHE_HOME/doctor)

Examples:
  doctor sessions repair --dry-run              preview the repair of the default store
  doctor build-dirs sweep --min-age 1h30m       reclaim Go work directories idle for 90 minutes";

/// Repairs on-disk state that applications leave orphaned (session stores, leaked build
/// directories) without ever losing anything.
#[derive(Debug, Parser)]
#[command(name = "doctor", version, after_help = AFTER_HELP)]
pub struct Cli {
    #[command(flatten)]
    pub global: Global,
    #[command(subcommand)]
    pub command: Option<Command>,
    #[command(flatten)]
    pub legacy: Legacy,
}

/// The flags every command takes, before or after it.
#[derive(Debug, Args)]
pub struct Global {
    /// How to print the report.
    #[arg(
        long,
        global = true,
        value_enum,
        value_name = "FORMAT",
        alias = "format"
    )]
    pub output_format: Option<OutputFormat>,
    /// The same as --output-format json.
    #[arg(long, global = true, conflicts_with = "output_format")]
    pub json: bool,
    /// Colour in the text output (auto: only on a terminal, never when NO_COLOR is set).
    #[arg(
        long,
        global = true,
        value_enum,
        value_name = "WHEN",
        default_value = "auto"
    )]
    pub color: ColorChoice,
    /// Print only errors and, for a real run, the notice line.
    #[arg(short, long, global = true, conflicts_with = "verbose")]
    pub quiet: bool,
    /// More logs on stderr: -v phases, -vv each action, -vvv everything.
    #[arg(short, long, global = true, action = ArgAction::Count)]
    pub verbose: u8,
    /// Never draw progress on stderr.
    #[arg(long, global = true)]
    pub no_progress: bool,
    /// Neither read nor write the verdict cache ($XDG_CACHE_HOME/doctor): judge every file.
    #[arg(long, global = true)]
    pub no_cache: bool,
}

/// `--color`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum ColorChoice {
    /// Colour on a terminal, unless NO_COLOR is set (CLICOLOR_FORCE forces it).
    Auto,
    /// Always colour.
    Always,
    /// Never colour.
    Never,
}

/// A command.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// What a repair would do now, the last repair, and the set-aside runs (the default).
    #[command(after_help = "Example:\n  doctor status --sessions-dir ~/.codewhale/sessions")]
    Status(DirArg),
    /// The session store: repair it, apply a saved plan, list, restore or purge set-aside runs.
    #[command(subcommand)]
    Sessions(SessionsCommand),
    /// Leaked build work directories (Go's go-build<n>, go-link-<n>).
    #[command(name = "build-dirs", subcommand)]
    BuildDirs(BuildDirsCommand),
    /// Explain a rule: with no CODE, a table of every rule.
    #[command(after_help = "Example:\n  doctor rule R3")]
    Rule {
        /// A rule code (R1, B1, ...).
        code: Option<String>,
    },
    /// Print a shell completion script.
    #[command(
        after_help = "Example:\n  doctor completions bash > ~/.local/share/bash-completion/completions/doctor"
    )]
    Completions {
        /// The shell.
        shell: clap_complete::Shell,
    },
}

/// `--sessions-dir`.
#[derive(Debug, Args)]
pub struct DirArg {
    /// The sessions directory (default: $CODEWHALE_HOME/sessions, else ~/.codewhale/sessions,
    /// the home found as the app finds it: HOME, USERPROFILE, on Windows HOMEDRIVE+HOMEPATH).
    #[arg(long, value_name = "DIR")]
    pub sessions_dir: Option<PathBuf>,
}

/// `doctor sessions ...`.
#[derive(Debug, Subcommand)]
pub enum SessionsCommand {
    /// Plan the sessions rules (R1-R5) and apply the plan (--dry-run: only print it).
    #[command(
        after_help = "Example:\n  doctor sessions repair --dry-run --check --output-format github"
    )]
    Repair(RepairArgs),
    /// Apply a plan written by --plan-out exactly, without planning again (- reads stdin).
    #[command(
        after_help = "Example:\n  doctor sessions repair --dry-run --plan-out - | doctor sessions apply -"
    )]
    Apply {
        /// The plan file, or - for standard input.
        file: PathBuf,
    },
    /// List the set-aside runs, or the numbered items of one run.
    #[command(after_help = "Example:\n  doctor sessions list latest")]
    List {
        /// A run id, latest, or .set-aside/<run>.
        run: Option<String>,
        #[command(flatten)]
        dir: DirArg,
    },
    /// Move the items of a set-aside run back to their original paths, verified first.
    #[command(after_help = "Example:\n  doctor sessions restore latest --item 2")]
    Restore {
        /// A run id, latest, or .set-aside/<run>.
        run: String,
        /// Only this item: its original path, or its number in `sessions list RUN`; repeatable.
        #[arg(long = "item", value_name = "REL|N")]
        items: Vec<String>,
        #[command(flatten)]
        dir: DirArg,
        /// Plan and print; write nothing.
        #[arg(long)]
        dry_run: bool,
    },
    /// Delete whole set-aside runs older than a duration (the only deletion of session data).
    #[command(after_help = "Example:\n  doctor sessions purge --older-than 2w --dry-run")]
    Purge {
        /// The minimum age of a run to purge (30m, 36h, 2w, 1day, 1h30m).
        #[arg(long, value_name = "DUR", value_parser = parse_duration)]
        older_than: i64,
        /// Purge runs that do not match their manifests too.
        #[arg(long)]
        force: bool,
        #[command(flatten)]
        dir: DirArg,
        /// Plan and print; write nothing.
        #[arg(long)]
        dry_run: bool,
    },
}

/// `doctor sessions repair`.
#[derive(Debug, Args)]
pub struct RepairArgs {
    #[command(flatten)]
    pub dir: DirArg,
    /// Plan and print; write nothing.
    #[arg(long)]
    pub dry_run: bool,
    /// Exit 3 when any action is planned or deferred (implies --dry-run): for CI.
    #[arg(long)]
    pub check: bool,
    /// Apply at most N actions; the rest are reported as deferred.
    #[arg(long, value_name = "N", default_value_t = 500)]
    pub max_actions: usize,
    /// How long an artifact directory must be unchanged before R5 sets it aside.
    #[arg(long, value_name = "DUR", default_value = "24h", value_parser = parse_duration)]
    pub artifact_idle: i64,
    /// Only these rules (comma-separated codes: R1,R3).
    #[arg(long, value_name = "CODES", value_delimiter = ',')]
    pub select: Option<Vec<String>>,
    /// Not these rules (comma-separated codes).
    #[arg(long, value_name = "CODES", value_delimiter = ',')]
    pub ignore: Vec<String>,
    /// Also write the plan to FILE (- : standard output, the report then goes to stderr).
    #[arg(long, value_name = "FILE")]
    pub plan_out: Option<PathBuf>,
    /// Plan in a directory that does not look like a session store.
    #[arg(long)]
    pub assume_session_store: bool,
    /// Let R1 set aside more than half of a store's documents.
    #[arg(long)]
    pub allow_mass_set_aside: bool,
}

/// `doctor build-dirs ...`.
#[derive(Debug, Subcommand)]
pub enum BuildDirsCommand {
    /// Reclaim leaked Go work directories that no live process uses (--dry-run: only print).
    #[command(
        after_help = "Example:\n  doctor build-dirs sweep --root /tmp --min-age 1h --dry-run"
    )]
    Sweep(SweepArgs),
}

/// `doctor build-dirs sweep`.
#[derive(Debug, Args)]
pub struct SweepArgs {
    /// A root to sweep, repeatable (default: $GOTMPDIR when set, and the OS temp dir).
    #[arg(long = "root", value_name = "DIR")]
    pub roots: Vec<PathBuf>,
    /// How long a work directory must be unchanged to be reclaimed.
    #[arg(long, value_name = "DUR", default_value = "30m", value_parser = parse_duration)]
    pub min_age: i64,
    /// Plan and print; delete nothing.
    #[arg(long)]
    pub dry_run: bool,
    /// Exit 3 when any action is planned or deferred (implies --dry-run): for CI.
    #[arg(long)]
    pub check: bool,
    /// Apply at most N actions; the rest are reported as deferred.
    #[arg(long, value_name = "N", default_value_t = 500)]
    pub max_actions: usize,
    /// Only these rules (comma-separated codes).
    #[arg(long, value_name = "CODES", value_delimiter = ',')]
    pub select: Option<Vec<String>>,
    /// Not these rules (comma-separated codes).
    #[arg(long, value_name = "CODES", value_delimiter = ',')]
    pub ignore: Vec<String>,
}

/// The first flag forms, hidden from `--help`: each behaves as its command.
#[derive(Debug, Args)]
pub struct Legacy {
    /// `sessions repair`.
    #[arg(long, hide = true)]
    pub repair_sessions: bool,
    /// `sessions apply FILE`.
    #[arg(long, hide = true, value_name = "FILE", conflicts_with_all = ["repair_sessions", "sessions_dir", "dry_run", "max_actions", "artifact_idle", "check", "plan_out", "restore", "purge_set_aside", "sweep_build_dirs"])]
    pub apply_plan: Option<PathBuf>,
    /// `--sessions-dir` of the flag forms.
    #[arg(long, hide = true, value_name = "DIR")]
    pub sessions_dir: Option<PathBuf>,
    /// `--dry-run` of the flag forms: only with a command flag.
    #[arg(long, hide = true)]
    pub dry_run: bool,
    /// `--max-actions` of repair and sweep.
    #[arg(long, hide = true, value_name = "N", conflicts_with_all = ["restore", "purge_set_aside"])]
    pub max_actions: Option<usize>,
    /// `--artifact-idle` of repair.
    #[arg(long, hide = true, value_name = "DUR", value_parser = parse_duration, conflicts_with_all = ["restore", "purge_set_aside", "sweep_build_dirs"])]
    pub artifact_idle: Option<i64>,
    /// `--plan-out` of repair.
    #[arg(long, hide = true, value_name = "FILE")]
    pub plan_out: Option<PathBuf>,
    /// `--check` of repair and sweep.
    #[arg(long, hide = true)]
    pub check: bool,
    /// `--assume-session-store` of repair.
    #[arg(long, hide = true)]
    pub assume_session_store: bool,
    /// `--allow-mass-set-aside` of repair.
    #[arg(long, hide = true)]
    pub allow_mass_set_aside: bool,
    /// `sessions restore RUN`.
    #[arg(long, hide = true, value_name = "RUN", conflicts_with_all = ["repair_sessions", "purge_set_aside", "sweep_build_dirs"])]
    pub restore: Option<String>,
    /// `--item` of restore.
    #[arg(long = "item", hide = true, value_name = "REL")]
    pub items: Vec<String>,
    /// `sessions purge`.
    #[arg(long, hide = true, conflicts_with_all = ["repair_sessions", "sweep_build_dirs"])]
    pub purge_set_aside: bool,
    /// `--older-than` of purge.
    #[arg(long, hide = true, value_name = "DUR", value_parser = parse_duration)]
    pub older_than: Option<i64>,
    /// `--force` of purge.
    #[arg(long, hide = true)]
    pub force: bool,
    /// `build-dirs sweep`.
    #[arg(long, hide = true, conflicts_with_all = ["repair_sessions", "sessions_dir"])]
    pub sweep_build_dirs: bool,
    /// `--root` of the sweep.
    #[arg(long = "root", hide = true, value_name = "DIR")]
    pub roots: Vec<PathBuf>,
    /// `--min-age` of the sweep.
    #[arg(long, hide = true, value_name = "DUR", value_parser = parse_duration)]
    pub min_age: Option<i64>,
}

/// A duration on the command line, in seconds.
pub fn parse_duration(s: &str) -> Result<i64, String> {
    store::time::parse_duration(s).ok_or_else(|| {
        format!("invalid duration {s:?} (use a number and a unit: 90s, 30m, 36h, 14d, 2w, 1h30m)")
    })
}

/// What the command line asks for, whichever form it was given in.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Invocation {
    /// `status`, or no command.
    Status {
        /// `--sessions-dir`.
        dir: Option<PathBuf>,
    },
    /// `sessions repair`.
    Repair(Repair),
    /// `sessions apply FILE|-`.
    Apply {
        /// The plan file (`-`: standard input).
        file: PathBuf,
    },
    /// `sessions list [RUN]`.
    List {
        /// `--sessions-dir`.
        dir: Option<PathBuf>,
        /// The run, when one.
        run: Option<String>,
    },
    /// `sessions restore RUN`.
    Restore {
        /// `--sessions-dir`.
        dir: Option<PathBuf>,
        /// The run, as given.
        run: String,
        /// `--item`s.
        items: Vec<String>,
        /// `--dry-run`.
        dry_run: bool,
    },
    /// `sessions purge`.
    Purge {
        /// `--sessions-dir`.
        dir: Option<PathBuf>,
        /// `--older-than`, seconds.
        older_than: i64,
        /// `--force`.
        force: bool,
        /// `--dry-run`.
        dry_run: bool,
    },
    /// `build-dirs sweep`.
    Sweep(Sweep),
    /// `rule [CODE]`.
    Rule {
        /// The code, when one.
        code: Option<String>,
    },
    /// `completions SHELL`.
    Completions {
        /// The shell.
        shell: clap_complete::Shell,
    },
}

/// The settings of `sessions repair`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Repair {
    /// `--sessions-dir`.
    pub dir: Option<PathBuf>,
    /// `--dry-run` (or `--check`).
    pub dry_run: bool,
    /// `--check`.
    pub check: bool,
    /// `--max-actions`.
    pub max_actions: usize,
    /// `--artifact-idle`, seconds.
    pub artifact_idle: i64,
    /// `--select`.
    pub select: Option<Vec<String>>,
    /// `--ignore`.
    pub ignore: Vec<String>,
    /// `--plan-out`.
    pub plan_out: Option<PathBuf>,
    /// `--assume-session-store`.
    pub assume_session_store: bool,
    /// `--allow-mass-set-aside`.
    pub allow_mass_set_aside: bool,
}

/// The settings of `build-dirs sweep`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Sweep {
    /// `--root`s.
    pub roots: Vec<PathBuf>,
    /// `--min-age`, seconds.
    pub min_age: i64,
    /// `--dry-run` (or `--check`).
    pub dry_run: bool,
    /// `--check`.
    pub check: bool,
    /// `--max-actions`.
    pub max_actions: usize,
    /// `--select`.
    pub select: Option<Vec<String>>,
    /// `--ignore`.
    pub ignore: Vec<String>,
}

impl Cli {
    /// What the arguments ask for. A flag given where it means nothing, a rule code no pack
    /// has, a flag form mixed with a command: a usage error naming it (exit 2).
    pub fn invocation(&self) -> Result<Invocation, clap::Error> {
        let l = &self.legacy;
        let legacy_used = l.repair_sessions
            || l.apply_plan.is_some()
            || l.sessions_dir.is_some()
            || l.restore.is_some()
            || l.purge_set_aside
            || l.sweep_build_dirs
            || l.check
            || l.dry_run;
        let inv =
            match &self.command {
                Some(_) if legacy_used => return Err(usage(
                    "the flag forms (--repair-sessions, --sessions-dir before the command, ...) \
                     cannot be mixed with a command: give the flags after the command",
                )),
                Some(Command::Status(d)) => Invocation::Status {
                    dir: d.sessions_dir.clone(),
                },
                Some(Command::Sessions(SessionsCommand::Repair(r))) => Invocation::Repair(Repair {
                    dir: r.dir.sessions_dir.clone(),
                    dry_run: r.dry_run || r.check,
                    check: r.check,
                    max_actions: r.max_actions,
                    artifact_idle: r.artifact_idle,
                    select: r.select.clone(),
                    ignore: r.ignore.clone(),
                    plan_out: r.plan_out.clone(),
                    assume_session_store: r.assume_session_store,
                    allow_mass_set_aside: r.allow_mass_set_aside,
                }),
                Some(Command::Sessions(SessionsCommand::Apply { file })) => {
                    Invocation::Apply { file: file.clone() }
                }
                Some(Command::Sessions(SessionsCommand::List { run, dir })) => Invocation::List {
                    dir: dir.sessions_dir.clone(),
                    run: run.clone(),
                },
                Some(Command::Sessions(SessionsCommand::Restore {
                    run,
                    items,
                    dir,
                    dry_run,
                })) => Invocation::Restore {
                    dir: dir.sessions_dir.clone(),
                    run: run.clone(),
                    items: items.clone(),
                    dry_run: *dry_run,
                },
                Some(Command::Sessions(SessionsCommand::Purge {
                    older_than,
                    force,
                    dir,
                    dry_run,
                })) => Invocation::Purge {
                    dir: dir.sessions_dir.clone(),
                    older_than: *older_than,
                    force: *force,
                    dry_run: *dry_run,
                },
                Some(Command::BuildDirs(BuildDirsCommand::Sweep(s))) => Invocation::Sweep(Sweep {
                    roots: s.roots.clone(),
                    min_age: s.min_age,
                    dry_run: s.dry_run || s.check,
                    check: s.check,
                    max_actions: s.max_actions,
                    select: s.select.clone(),
                    ignore: s.ignore.clone(),
                }),
                Some(Command::Rule { code }) => Invocation::Rule { code: code.clone() },
                Some(Command::Completions { shell }) => Invocation::Completions { shell: *shell },
                None => self.legacy_invocation()?,
            };
        check_codes(&inv)?;
        Ok(inv)
    }

    /// The command a flag form asks for.
    fn legacy_invocation(&self) -> Result<Invocation, clap::Error> {
        let l = &self.legacy;
        let command = l.repair_sessions
            || l.apply_plan.is_some()
            || l.restore.is_some()
            || l.purge_set_aside
            || l.sweep_build_dirs;
        // A flag that belongs to one command, given without it (clap's `requires` takes an
        // absent flag for a given one, so the check is made here).
        let misplaced = [
            (
                l.check && !(l.repair_sessions || l.sweep_build_dirs),
                "--check",
                "--repair-sessions or --sweep-build-dirs",
            ),
            (l.dry_run && !command, "--dry-run", "a command"),
            (
                l.min_age.is_some() && !l.sweep_build_dirs,
                "--min-age",
                "--sweep-build-dirs",
            ),
            (
                !l.roots.is_empty() && !l.sweep_build_dirs,
                "--root",
                "--sweep-build-dirs",
            ),
            (
                l.plan_out.is_some() && !l.repair_sessions,
                "--plan-out",
                "--repair-sessions",
            ),
            (
                l.assume_session_store && !l.repair_sessions,
                "--assume-session-store",
                "--repair-sessions",
            ),
            (
                l.allow_mass_set_aside && !l.repair_sessions,
                "--allow-mass-set-aside",
                "--repair-sessions",
            ),
            (
                !l.items.is_empty() && l.restore.is_none(),
                "--item",
                "--restore",
            ),
            (
                l.older_than.is_some() && !l.purge_set_aside,
                "--older-than",
                "--purge-set-aside",
            ),
            (
                l.force && !l.purge_set_aside,
                "--force",
                "--purge-set-aside",
            ),
            (
                l.purge_set_aside && l.older_than.is_none(),
                "--purge-set-aside",
                "--older-than",
            ),
            (
                (l.max_actions.is_some() || l.artifact_idle.is_some()) && !command,
                "--max-actions or --artifact-idle",
                "a command",
            ),
        ];
        if let Some((_, flag, needs)) = misplaced.iter().find(|(bad, ..)| *bad) {
            return Err(usage(&format!(
                "{flag} means nothing here: it goes with {needs} (see doctor --help for the \
                 commands)"
            )));
        }
        let max_actions = l.max_actions.unwrap_or(500);
        Ok(if let Some(file) = &l.apply_plan {
            Invocation::Apply { file: file.clone() }
        } else if let Some(run) = &l.restore {
            Invocation::Restore {
                dir: l.sessions_dir.clone(),
                run: run.clone(),
                items: l.items.clone(),
                dry_run: l.dry_run,
            }
        } else if l.purge_set_aside {
            Invocation::Purge {
                dir: l.sessions_dir.clone(),
                older_than: l.older_than.unwrap_or_default(),
                force: l.force,
                dry_run: l.dry_run,
            }
        } else if l.sweep_build_dirs {
            Invocation::Sweep(Sweep {
                roots: l.roots.clone(),
                min_age: l.min_age.unwrap_or(30 * 60),
                dry_run: l.dry_run || l.check,
                check: l.check,
                max_actions,
                select: None,
                ignore: Vec::new(),
            })
        } else if l.repair_sessions {
            Invocation::Repair(Repair {
                dir: l.sessions_dir.clone(),
                dry_run: l.dry_run || l.check,
                check: l.check,
                max_actions,
                artifact_idle: l.artifact_idle.unwrap_or(24 * 3600),
                select: None,
                ignore: Vec::new(),
                plan_out: l.plan_out.clone(),
                assume_session_store: l.assume_session_store,
                allow_mass_set_aside: l.allow_mass_set_aside,
            })
        } else {
            Invocation::Status {
                dir: l.sessions_dir.clone(),
            }
        })
    }
}

/// A usage error (exit 2) with `message`, in clap's form.
pub fn usage(message: &str) -> clap::Error {
    Cli::command().error(clap::error::ErrorKind::ArgumentConflict, message)
}

/// Refuses a `--select`/`--ignore` code, or a `rule` code, that no pack has.
fn check_codes(inv: &Invocation) -> Result<(), clap::Error> {
    let sessions: Vec<&str> = sessions::RULES.iter().map(|r| r.code()).collect();
    let build: Vec<&str> = build_dirs::RULES.iter().map(|r| r.code()).collect();
    let (known, given): (Vec<&str>, Vec<&String>) = match inv {
        Invocation::Repair(r) => (
            sessions,
            r.select.iter().flatten().chain(&r.ignore).collect(),
        ),
        Invocation::Sweep(s) => (build, s.select.iter().flatten().chain(&s.ignore).collect()),
        Invocation::Rule { code: Some(c) } => ([sessions, build].concat(), vec![c]),
        _ => return Ok(()),
    };
    for code in given {
        if !known.iter().any(|k| k.eq_ignore_ascii_case(code)) {
            return Err(Cli::command().error(
                clap::error::ErrorKind::InvalidValue,
                format!(
                    "unknown rule code {code:?} (known here: {})",
                    known.join(", ")
                ),
            ));
        }
    }
    Ok(())
}

/// The clap definition of the command line, for the man page and the completions.
pub fn cli() -> clap::Command {
    Cli::command()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(args: &[&str]) -> Result<Invocation, clap::Error> {
        Cli::try_parse_from(std::iter::once("doctor").chain(args.iter().copied()))
            .and_then(|c| c.invocation())
    }

    #[test]
    fn the_flag_forms_ask_for_the_same_as_their_commands() {
        let pairs: &[(&[&str], &[&str])] = &[
            (&[], &["status"]),
            (
                &["--sessions-dir", "/s"],
                &["status", "--sessions-dir", "/s"],
            ),
            (
                &[
                    "--repair-sessions",
                    "--sessions-dir",
                    "/s",
                    "--dry-run",
                    "--max-actions",
                    "7",
                ],
                &[
                    "sessions",
                    "repair",
                    "--sessions-dir",
                    "/s",
                    "--dry-run",
                    "--max-actions",
                    "7",
                ],
            ),
            (
                &[
                    "--repair-sessions",
                    "--check",
                    "--artifact-idle",
                    "2h",
                    "--plan-out",
                    "p.json",
                ],
                &[
                    "sessions",
                    "repair",
                    "--check",
                    "--artifact-idle",
                    "2h",
                    "--plan-out",
                    "p.json",
                ],
            ),
            (
                &["--apply-plan", "p.json"],
                &["sessions", "apply", "p.json"],
            ),
            (
                &["--restore", "r", "--item", "a.json", "--dry-run"],
                &["sessions", "restore", "r", "--item", "a.json", "--dry-run"],
            ),
            (
                &["--purge-set-aside", "--older-than", "14d", "--force"],
                &["sessions", "purge", "--older-than", "14d", "--force"],
            ),
            (
                &[
                    "--sweep-build-dirs",
                    "--root",
                    "/r",
                    "--min-age",
                    "1h",
                    "--check",
                ],
                &[
                    "build-dirs",
                    "sweep",
                    "--root",
                    "/r",
                    "--min-age",
                    "1h",
                    "--check",
                ],
            ),
        ];
        for (old, new) in pairs {
            assert_eq!(
                parse(old).unwrap(),
                parse(new).unwrap(),
                "{old:?} vs {new:?}"
            );
        }
    }

    #[test]
    fn a_flag_where_it_means_nothing_is_a_usage_error() {
        for args in [
            &["--repair-sessions", "--min-age", "1h"][..],
            &["--repair-sessions", "--root", "/r"],
            &["--restore", "r", "--max-actions", "1"],
            &["--restore", "r", "--artifact-idle", "1h"],
            &["--sweep-build-dirs", "--artifact-idle", "1h"],
            &["--sweep-build-dirs", "--plan-out", "p"],
            &["--purge-set-aside"],
            &["--item", "a.json"],
            &["--dry-run"],
            &["--check"],
            &["--max-actions", "3"],
            &["sessions", "restore", "r", "--max-actions", "1"],
            &["sessions", "repair", "--min-age", "1h"],
            &["build-dirs", "sweep", "--artifact-idle", "1h"],
            &["--repair-sessions", "sessions", "repair"],
            &["--dry-run", "sessions", "repair"],
            &["sessions", "repair", "--select", "R9"],
            &["build-dirs", "sweep", "--ignore", "R1"],
            &["rule", "Z9"],
        ] {
            let e = parse(args).expect_err(&format!("{args:?}"));
            assert_eq!(e.exit_code(), 2, "{args:?}: {e}");
        }
    }

    #[test]
    fn globals_go_before_or_after_the_command_and_durations_read_long_forms() {
        let a = Cli::try_parse_from(["doctor", "--json", "sessions", "repair", "-q"]).unwrap();
        let b = Cli::try_parse_from(["doctor", "sessions", "repair", "--json", "-q"]).unwrap();
        assert!(a.global.json && b.global.json && a.global.quiet && b.global.quiet);
        let v = Cli::try_parse_from(["doctor", "-vv", "status"]).unwrap();
        assert_eq!(v.global.verbose, 2);
        for (dur, secs) in [
            ("1h30m", 5400),
            ("2w", 1_209_600),
            ("36h", 129_600),
            ("1day", 86_400),
        ] {
            let Invocation::Purge { older_than, .. } =
                parse(&["sessions", "purge", "--older-than", dur]).unwrap()
            else {
                panic!("{dur}")
            };
            assert_eq!(older_than, secs, "{dur}");
        }
    }

    #[test]
    fn typos_get_the_nearest_real_flag() {
        for (typo, want) in [
            ("--formt", "--format"),
            ("--verbos", "--verbose"),
            ("--dry-rn", "--dry-run"),
        ] {
            let e = Cli::try_parse_from(["doctor", "sessions", "repair", typo]).unwrap_err();
            let text = e.to_string();
            assert!(text.contains(&format!("'{want}'")), "{typo}: {text}");
            assert!(!text.contains("'--force'"), "{typo}: {text}");
        }
    }

    #[test]
    fn the_command_line_is_well_formed() {
        Cli::command().debug_assert();
    }
}
