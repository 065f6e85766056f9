//! The one error type of the doctor's entry points ([`Error`]): why a run could not go on, the
//! exit code of cli.md for each, and the [`Problem`] it carries to a report.

use std::io;
use std::path::PathBuf;

use engine::admin::AdminError;
use engine::Problem;

/// Why a run (a repair, a sweep, a restore or purge, a status) could not go on. Each maps to an
/// exit code of cli.md ([`Error::exit_code`]).
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The sessions directory does not exist or is not a directory (exit 2).
    #[error("sessions directory {} does not exist or is not a directory", .0.display())]
    MissingDir(PathBuf),
    /// The default sessions directory does not exist, but the app's legacy one does (exit 2,
    /// as [`Error::MissingDir`]): reported, never migrated (platforms.md §8.5).
    #[error("sessions directory {} does not exist, but the legacy {} does: the app moves it there the next time it starts (the doctor never moves it); to work on it now, pass --sessions-dir {}", .dir.display(), .legacy.display(), .legacy.display())]
    OnlyLegacySessions {
        /// The default sessions directory, missing.
        dir: PathBuf,
        /// `~/.deepseek/sessions`, present.
        legacy: PathBuf,
    },
    /// A sessions directory that does not look like a session store, and no
    /// `--assume-session-store` (exit 2). `hint` suggests its `sessions/` when it has one.
    #[error("{} does not look like a session store (no session documents, checkpoints or repair files): nothing was done; check --sessions-dir or CODEWHALE_HOME{}, or pass --assume-session-store if it is one", .dir.display(), .hint.as_ref().map(|h| format!(" (did you mean {}?)", h.display())).unwrap_or_default())]
    NotASessionStore {
        /// The directory given.
        dir: PathBuf,
        /// Its `sessions/` subdirectory, when it has one.
        hint: Option<PathBuf>,
    },
    /// A `--root` that does not exist or is not a directory (exit 2).
    #[error("build root {} does not exist or is not a directory", .0.display())]
    MissingRoot(PathBuf),
    /// Another doctor run holds `.reconcile.lock` (exit 75).
    #[error("another doctor run holds {}; nothing was written", .0.display())]
    Busy(PathBuf),
    /// Another sweep holds the build-dirs lock (exit 75).
    #[error("another doctor sweep holds {}; nothing was written", .0.display())]
    SweepBusy(PathBuf),
    /// A plan file that cannot be used (exit 2).
    #[error("{0}")]
    BadPlan(String),
    /// The environment gives no usable setting: a `DOCTOR_NOW` that is not a timestamp, no
    /// `HOME` to find the default directory (exit 2).
    #[error("{0}")]
    BadEnvironment(String),
    /// A set-aside run or item that is not there to restore (exit 2).
    #[error("no set-aside run {run}: {why}")]
    NoSuchRun {
        /// The run id as given.
        run: String,
        /// What is missing.
        why: String,
    },
    /// `--item` names nothing in the run (exit 2).
    #[error("set-aside run {run} has no item {item}")]
    NoSuchItem {
        /// The run.
        run: String,
        /// The item as given.
        item: String,
    },
    /// `/proc` cannot be read, so liveness cannot be known (exit 1).
    #[error("cannot read the process table: {0}; no directory can be known to be unused, so nothing was reclaimed")]
    NoProc(fsroot::Error),
    /// No state directory for the build-dirs receipts (exit 1).
    #[error(
        "no state directory for the receipts (set XDG_STATE_HOME or HOME); nothing was reclaimed"
    )]
    NoStateDir,
    /// Any other failure (exit 1).
    #[error(transparent)]
    Fs(#[from] fsroot::Error),
}

impl Error {
    /// The exit code of cli.md: 2 for what the user gave (a path, a plan, a setting, a run),
    /// 75 for another run holding the lock, 1 for anything else.
    pub fn exit_code(&self) -> i32 {
        match self {
            Error::MissingDir(_)
            | Error::OnlyLegacySessions { .. }
            | Error::NotASessionStore { .. }
            | Error::MissingRoot(_)
            | Error::BadPlan(_)
            | Error::BadEnvironment(_)
            | Error::NoSuchRun { .. }
            | Error::NoSuchItem { .. } => 2,
            Error::Busy(_) | Error::SweepBusy(_) => 75,
            Error::NoProc(_) | Error::NoStateDir | Error::Fs(_) => 1,
        }
    }

    /// The problem a report carries for this error: the path it concerns, the operation and
    /// the kind of the filesystem error under it, and its message.
    pub fn problem(&self) -> Problem {
        let message = self.to_string();
        match self {
            Error::Fs(e) => Problem::from(e),
            Error::NoProc(e) => Problem {
                message,
                ..Problem::from(e)
            },
            Error::MissingDir(p)
            | Error::MissingRoot(p)
            | Error::OnlyLegacySessions { dir: p, .. } => Problem::new(
                p.to_string_lossy(),
                "open",
                io::ErrorKind::NotFound,
                message,
            ),
            Error::NotASessionStore { dir, .. } => Problem::new(
                dir.to_string_lossy(),
                "recognize",
                io::ErrorKind::InvalidInput,
                message,
            ),
            Error::Busy(p) | Error::SweepBusy(p) => Problem::new(
                p.to_string_lossy(),
                "lock",
                io::ErrorKind::WouldBlock,
                message,
            ),
            Error::BadPlan(_) => Problem::new("", "read plan", io::ErrorKind::InvalidData, message),
            Error::BadEnvironment(_) => {
                Problem::new("", "read environment", io::ErrorKind::InvalidInput, message)
            }
            Error::NoSuchRun { .. } | Error::NoSuchItem { .. } => {
                Problem::new("", "restore", io::ErrorKind::NotFound, message)
            }
            Error::NoStateDir => {
                Problem::new("", "open state directory", io::ErrorKind::NotFound, message)
            }
        }
    }
}

impl From<AdminError> for Error {
    fn from(e: AdminError) -> Error {
        match e {
            AdminError::NoSuchRun { run, why } => Error::NoSuchRun { run, why },
            AdminError::NoSuchItem { run, item } => Error::NoSuchItem { run, item },
            AdminError::Fs(e) => Error::Fs(e),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_error_has_the_exit_code_of_cli_md_and_a_problem_naming_its_path() {
        let dir = PathBuf::from("/nowhere/s");
        let cases = [
            (Error::MissingDir(dir.clone()), 2),
            (
                Error::OnlyLegacySessions {
                    dir: dir.clone(),
                    legacy: "/nowhere/.deepseek/sessions".into(),
                },
                2,
            ),
            (Error::MissingRoot(dir.clone()), 2),
            (Error::BadPlan("cannot use plan p".into()), 2),
            (Error::BadEnvironment("DOCTOR_NOW".into()), 2),
            (
                Error::NoSuchRun {
                    run: "r".into(),
                    why: "no manifest".into(),
                },
                2,
            ),
            (
                Error::NoSuchItem {
                    run: "r".into(),
                    item: "a.json".into(),
                },
                2,
            ),
            (Error::Busy(dir.join(".reconcile.lock")), 75),
            (Error::SweepBusy(dir.join("build-dirs.lock")), 75),
            (Error::NoStateDir, 1),
            (
                Error::Fs(fsroot::Error::io(
                    "read",
                    &dir,
                    io::Error::from(io::ErrorKind::PermissionDenied),
                )),
                1,
            ),
        ];
        for (e, code) in cases {
            assert_eq!(e.exit_code(), code, "{e}");
            let p = e.problem();
            assert_eq!(p.message, e.to_string());
            if matches!(
                e,
                Error::MissingDir(_)
                    | Error::OnlyLegacySessions { .. }
                    | Error::MissingRoot(_)
                    | Error::Busy(_)
                    | Error::Fs(_)
            ) {
                assert!(p.path.starts_with("/nowhere/s"), "{p:?}");
            }
        }
        let fs = Error::Fs(fsroot::Error::io(
            "read",
            &dir,
            io::Error::from(io::ErrorKind::PermissionDenied),
        ));
        assert_eq!(
            (fs.problem().kind, fs.problem().operation.as_str()),
            (io::ErrorKind::PermissionDenied, "read")
        );
    }
}
