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
    /// `--select`: the rule codes that run (`None`: every rule of the pack).
    pub select: Option<Vec<String>>,
    /// `--ignore`: rule codes that do not run.
    pub ignore: Vec<String>,
    /// `--assume-session-store`: plan even in a directory that does not look like a session
    /// store.
    pub assume_session_store: bool,
    /// `--allow-mass-set-aside`: let R1 set aside more than half of a store's documents.
    pub allow_mass_set_aside: bool,
    /// Who watches the scan and the application of the plan.
    pub progress: store::progress::ProgressSink,
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
            select: None,
            ignore: Vec::new(),
            assume_session_store: false,
            allow_mass_set_aside: false,
            progress: store::progress::ProgressSink::silent(),
        }
    }

    /// The rules of the sessions pack that run: the registry, in its order, less those
    /// `--select` leaves out and those `--ignore` names.
    pub(crate) fn rules(&self) -> Vec<&'static dyn engine::Rule<sessions::Pack>> {
        selected(sessions::RULES, self.select.as_deref(), &self.ignore)
    }

    pub(crate) fn config(&self) -> Config {
        Config {
            max_actions: self.max_actions,
            artifact_idle_secs: self.artifact_idle_secs,
            now: self.clock.now(),
            codewhale_home: self.codewhale_home.clone(),
            progress: self.progress.clone(),
        }
    }
}

/// The rules of `registry` that run under `--select` and `--ignore`, in registry order. A rule
/// that does not run plans nothing and has no effect on the rules after it.
pub(crate) fn selected<P: engine::Pack>(
    registry: &'static [&'static dyn engine::Rule<P>],
    select: Option<&[String]>,
    ignore: &[String],
) -> Vec<&'static dyn engine::Rule<P>> {
    registry
        .iter()
        .copied()
        .filter(|r| select.is_none_or(|s| s.iter().any(|c| c.eq_ignore_ascii_case(r.code()))))
        .filter(|r| !ignore.iter().any(|c| c.eq_ignore_ascii_case(r.code())))
        .collect()
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
