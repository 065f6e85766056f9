//! Why a run could not go on, and the exit code of cli.md for each.

use std::path::PathBuf;

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
    Admin(#[from] engine::admin::AdminError),
}

impl RunError {
    /// The exit code of cli.md.
    pub fn exit_code(&self) -> i32 {
        match self {
            RunError::MissingDir(_) | RunError::BadPlan(_) | RunError::BadEnvironment(_) => 2,
            RunError::Busy(_) => 75,
            RunError::Fs(_) => 1,
            RunError::Admin(engine::admin::AdminError::Fs(_)) => 1,
            RunError::Admin(_) => 2,
        }
    }
}
