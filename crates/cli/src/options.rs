//! The settings of a sessions run, and the default directories the environment gives.

use std::ffi::OsString;
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
    /// Where the verdict cache lives ([`default_cache_dir`]); `None` (`--no-cache`) neither
    /// reads nor writes one.
    pub cache_dir: Option<PathBuf>,
    /// A file changed less than this long (ns) before the scan is not kept in the verdict
    /// cache (3 s; tests use less and wait as long after each edit).
    pub cache_racy_margin_ns: i64,
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
            cache_dir: default_cache_dir(),
            cache_racy_margin_ns: store::cache::RACY_MARGIN_NS,
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
            cache_dir: self.cache_dir.clone(),
            cache_racy_margin_ns: self.cache_racy_margin_ns,
        }
    }
}

/// Where the verdict cache lives: `$XDG_CACHE_HOME/doctor` when that is set (on every OS),
/// else the OS's place for an application's caches: `~/.cache/doctor` on Linux and the BSDs,
/// `~/Library/Caches/doctor` on macOS, `%LOCALAPPDATA%\doctor\cache` on Windows. `None` when
/// the environment names no home.
pub fn default_cache_dir() -> Option<PathBuf> {
    user_dir("XDG_CACHE_HOME", ".cache", "Library/Caches", "cache")
}

/// `$<xdg>/doctor` when that variable holds an absolute path, else `~/<unix>/doctor` on Linux
/// and the BSDs, `~/<macos>/doctor` on macOS, `%LOCALAPPDATA%\doctor\<windows>` on Windows.
#[allow(clippy::disallowed_methods)] // the edge reads the environment
pub(crate) fn user_dir(xdg: &str, unix: &str, macos: &str, windows: &str) -> Option<PathBuf> {
    let var = |name: &str| std::env::var_os(name).filter(|v| !v.is_empty());
    if let Some(base) = var(xdg).map(PathBuf::from).filter(|p| p.is_absolute()) {
        return Some(base.join("doctor"));
    }
    if cfg!(windows) {
        let base = var("LOCALAPPDATA")
            .map(PathBuf::from)
            .filter(|p| p.is_absolute())?;
        let dir = base.join("doctor");
        Some(if windows.is_empty() {
            dir
        } else {
            dir.join(windows)
        })
    } else if cfg!(target_os = "macos") {
        var("HOME").map(|h| PathBuf::from(h).join(macos).join("doctor"))
    } else {
        var("HOME").map(|h| PathBuf::from(h).join(unix).join("doctor"))
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

/// Where the app keeps its state, as it resolves it (platforms.md §5 and §8.5), and the legacy
/// sessions directory it still reads.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AppHome {
    /// `$CODEWHALE_HOME`, else `<user home>/.codewhale`.
    pub home: PathBuf,
    /// `<user home>/.deepseek/sessions`, which the app reads (and moves to
    /// [`AppHome::sessions_dir`] on first use) when `CODEWHALE_HOME` is not set; `None` when it
    /// is set.
    pub legacy_sessions: Option<PathBuf>,
}

impl AppHome {
    /// The default sessions directory: `<home>/sessions`.
    pub fn sessions_dir(&self) -> PathBuf {
        self.home.join("sessions")
    }

    /// Resolves the app's home from the environment `env` gives, in the app's order:
    /// `CODEWHALE_HOME` (trimmed, a leading `~` expanded, absolute), else the user's home
    /// joined with `.codewhale`. The user's home is `HOME` (when set it must be absolute: no
    /// other is tried), then `USERPROFILE`, then, when `windows`, `HOMEDRIVE` + `HOMEPATH`,
    /// then `os_home` (std's `home_dir`, as the app's `dirs::home_dir`). An empty variable
    /// counts as unset. `Err` says why no home can be found.
    pub fn resolve(
        env: impl Fn(&str) -> Option<OsString>,
        os_home: impl FnOnce() -> Option<PathBuf>,
        windows: bool,
    ) -> Result<AppHome, String> {
        let var = |name: &str| env(name).filter(|v| !v.is_empty());
        let user_home = || -> Result<PathBuf, String> {
            if let Some(home) = var("HOME") {
                let home = PathBuf::from(home);
                return if home.is_absolute() {
                    Ok(home)
                } else {
                    Err(format!(
                        "HOME={} is not an absolute path, so the default sessions directory \
                         cannot be found; pass --sessions-dir",
                        home.display()
                    ))
                };
            }
            let drive_path = || {
                let (drive, path) = (var("HOMEDRIVE")?, var("HOMEPATH")?);
                let mut joined = drive;
                joined.push(path);
                Some(joined)
            };
            var("USERPROFILE")
                .or_else(|| if windows { drive_path() } else { None })
                .map(PathBuf::from)
                .or_else(os_home)
                .filter(|h| h.is_absolute())
                .ok_or_else(|| {
                    format!(
                        "no --sessions-dir, and no home directory to find the default in \
                         (CODEWHALE_HOME, HOME, USERPROFILE{} are unset)",
                        if windows { ", HOMEDRIVE+HOMEPATH" } else { "" }
                    )
                })
        };
        let explicit = var("CODEWHALE_HOME")
            .map(|h| match h.to_str() {
                Some(text) => PathBuf::from(text.trim()),
                None => PathBuf::from(h),
            })
            .filter(|h| !h.as_os_str().is_empty());
        let Some(explicit) = explicit else {
            let user = user_home()?;
            return Ok(AppHome {
                home: user.join(".codewhale"),
                legacy_sessions: Some(user.join(".deepseek").join("sessions")),
            });
        };
        let home = match explicit.to_str().and_then(|h| h.strip_prefix('~')) {
            Some("") => user_home()?,
            Some(rest) if rest.starts_with('/') || (windows && rest.starts_with('\\')) => {
                user_home()?.join(&rest[1..])
            }
            _ => explicit.clone(),
        };
        if !home.is_absolute() {
            return Err(format!(
                "CODEWHALE_HOME={} is not an absolute path, so the default sessions directory \
                 cannot be found; pass --sessions-dir",
                explicit.display()
            ));
        }
        Ok(AppHome {
            home,
            legacy_sessions: None,
        })
    }

    /// [`AppHome::resolve`] from this process's environment and OS.
    #[allow(clippy::disallowed_methods)] // the edge reads the environment
    pub fn from_env() -> Result<AppHome, String> {
        AppHome::resolve(
            |name| std::env::var_os(name),
            std::env::home_dir,
            cfg!(windows),
        )
    }
}

/// `$CODEWHALE_HOME`, else `~/.codewhale` ([`AppHome::from_env`]); `None` when no home can be
/// found.
pub fn default_codewhale_home() -> Option<PathBuf> {
    AppHome::from_env().ok().map(|h| h.home)
}

/// The default sessions directory: `$CODEWHALE_HOME/sessions`, else `~/.codewhale/sessions`
/// ([`AppHome::from_env`]); `None` when no home can be found.
pub fn default_sessions_dir() -> Option<PathBuf> {
    AppHome::from_env().ok().map(|h| h.sessions_dir())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// [`AppHome::resolve`] over the variables `vars` only, with `os_home` as std's home.
    fn resolve(
        vars: &[(&str, &str)],
        os_home: Option<&str>,
        windows: bool,
    ) -> Result<AppHome, String> {
        let env = |name: &str| {
            vars.iter()
                .find(|(k, _)| *k == name)
                .map(|(_, v)| OsString::from(v))
        };
        AppHome::resolve(env, || os_home.map(PathBuf::from), windows)
    }

    fn sessions(vars: &[(&str, &str)], os_home: Option<&str>, windows: bool) -> PathBuf {
        resolve(vars, os_home, windows).unwrap().sessions_dir()
    }

    #[cfg(unix)]
    #[test]
    fn the_sessions_directory_is_found_in_the_apps_order() {
        let all = [
            ("CODEWHALE_HOME", "/cw"),
            ("HOME", "/home/u"),
            ("USERPROFILE", "/profile"),
            ("HOMEDRIVE", "/drive"),
            ("HOMEPATH", "/path"),
        ];
        let os = Some("/os");
        assert_eq!(sessions(&all, os, true), PathBuf::from("/cw/sessions"));
        assert_eq!(
            sessions(&all[1..], os, true),
            PathBuf::from("/home/u/.codewhale/sessions")
        );
        assert_eq!(
            sessions(&all[2..], os, true),
            PathBuf::from("/profile/.codewhale/sessions")
        );
        assert_eq!(
            sessions(&all[3..], os, true),
            PathBuf::from("/drive/path/.codewhale/sessions"),
            "HOMEDRIVE + HOMEPATH on Windows"
        );
        assert_eq!(
            sessions(&all[3..], os, false),
            PathBuf::from("/os/.codewhale/sessions"),
            "not elsewhere"
        );
        assert_eq!(
            sessions(&all[4..], os, true),
            PathBuf::from("/os/.codewhale/sessions"),
            "HOMEPATH alone is not a home"
        );
        // An empty variable counts as unset.
        let empty = [
            ("CODEWHALE_HOME", ""),
            ("HOME", ""),
            ("USERPROFILE", "/profile"),
        ];
        assert_eq!(
            sessions(&empty, os, false),
            PathBuf::from("/profile/.codewhale/sessions")
        );
        assert!(resolve(&[], None, true).unwrap_err().contains("HOMEDRIVE"));
        assert!(!resolve(&[], None, false).unwrap_err().contains("HOMEDRIVE"));
    }

    #[cfg(unix)]
    #[test]
    fn a_home_that_is_not_absolute_is_refused_without_trying_the_next() {
        let err =
            resolve(&[("HOME", "rel"), ("USERPROFILE", "/profile")], None, false).unwrap_err();
        assert!(err.contains("HOME=rel is not an absolute path"), "{err}");
        let err = resolve(&[("CODEWHALE_HOME", "cw"), ("HOME", "/h")], None, false).unwrap_err();
        assert!(err.contains("CODEWHALE_HOME=cw"), "{err}");
    }

    #[cfg(unix)]
    #[test]
    fn codewhale_home_is_trimmed_and_its_tilde_expanded() {
        let home = [("HOME", "/home/u")];
        let with = |cw: &str| {
            let vars = [home[0], ("CODEWHALE_HOME", cw)];
            sessions(&vars, None, false)
        };
        assert_eq!(with("  /cw \n"), PathBuf::from("/cw/sessions"));
        assert_eq!(with("~"), PathBuf::from("/home/u/sessions"));
        assert_eq!(with("~/cw"), PathBuf::from("/home/u/cw/sessions"));
        assert!(resolve(&[("CODEWHALE_HOME", "~u/cw")], None, false).is_err());
    }

    #[cfg(unix)]
    #[test]
    fn the_legacy_directory_is_known_only_when_codewhale_home_is_not_set() {
        let home = resolve(&[("HOME", "/home/u")], None, false).unwrap();
        assert_eq!(
            home.legacy_sessions,
            Some(PathBuf::from("/home/u/.deepseek/sessions"))
        );
        let explicit = resolve(
            &[("HOME", "/home/u"), ("CODEWHALE_HOME", "/cw")],
            None,
            false,
        );
        assert_eq!(explicit.unwrap().legacy_sessions, None);
    }

    #[cfg(windows)]
    #[test]
    fn on_windows_the_profile_is_the_home() {
        assert_eq!(
            sessions(&[("USERPROFILE", r"C:\Users\u")], None, true),
            PathBuf::from(r"C:\Users\u\.codewhale\sessions")
        );
        assert_eq!(
            sessions(
                &[("HOMEDRIVE", "C:"), ("HOMEPATH", r"\Users\u")],
                None,
                true
            ),
            PathBuf::from(r"C:\Users\u\.codewhale\sessions")
        );
        assert!(resolve(&[("HOME", "/c/Users/u")], None, true).is_err());
    }
}
