//! The settings of a sessions run, and the default directories the environment gives.

use std::path::PathBuf;

use engine::Config;
use store::Clock;

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

    pub(crate) fn config(&self) -> Config {
        Config {
            max_actions: self.max_actions,
            artifact_idle_secs: self.artifact_idle_secs,
            now: self.clock.now(),
            codewhale_home: self.codewhale_home.clone(),
        }
    }
}

/// `$CODEWHALE_HOME`, else `~/.codewhale`.
#[allow(clippy::disallowed_methods)] // the edge reads the environment
pub fn default_codewhale_home() -> Option<PathBuf> {
    if let Some(home) = std::env::var_os("CODEWHALE_HOME").filter(|h| !h.is_empty()) {
        return Some(PathBuf::from(home));
    }
    std::env::var_os("HOME")
        .filter(|h| !h.is_empty())
        .map(|h| PathBuf::from(h).join(".codewhale"))
}

/// The default sessions directory: `$CODEWHALE_HOME/sessions`, else `~/.codewhale/sessions`.
#[allow(clippy::disallowed_methods)] // the edge reads the environment
pub fn default_sessions_dir() -> Option<PathBuf> {
    if let Some(home) = std::env::var_os("CODEWHALE_HOME").filter(|h| !h.is_empty()) {
        return Some(PathBuf::from(home).join("sessions"));
    }
    std::env::var_os("HOME")
        .filter(|h| !h.is_empty())
        .map(|h| PathBuf::from(h).join(".codewhale").join("sessions"))
}
