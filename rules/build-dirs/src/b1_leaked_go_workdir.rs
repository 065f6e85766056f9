//! B1 `leaked-go-workdir`: reclaims Go work directories that a killed build left behind.

use engine::{BuildContext, BuildDirs, EntryKind, Expect, NoCounts, RootEntry, Rule};
use kernel::{Proposal, RuleOutput};
use plan::{Action, ActionKind, PlannedAction, Skipped};

#[doc = include_str!("b1_leaked_go_workdir.md")]
#[derive(Debug, Clone, Copy)]
pub struct LeakedGoWorkdir;

impl Rule<BuildDirs> for LeakedGoWorkdir {
    fn code(&self) -> &'static str {
        "B1"
    }

    fn name(&self) -> &'static str {
        "leaked-go-workdir"
    }

    fn doc(&self) -> &'static str {
        include_str!("b1_leaked_go_workdir.md")
    }

    fn plans(&self) -> &'static [(ActionKind, Option<plan::ItemKind>)] {
        &[(ActionKind::ReclaimDir, None)]
    }

    fn accepts(&self, a: &PlannedAction) -> bool {
        is_go_work_dir_name(&a.path)
    }

    fn plan(&self, cx: &BuildContext<'_>) -> RuleOutput<NoCounts, ()> {
        let mut out = RuleOutput::<NoCounts, ()>::default();
        for entry in &cx.listing.entries {
            match judge(cx, entry) {
                Verdict::NotOurs => {}
                Verdict::Spare(why) => out.skipped.push(Skipped {
                    path: entry.name.clone(),
                    rule: self.code().to_owned(),
                    why,
                }),
                Verdict::Reclaim(reason) => out.proposals.push(Proposal {
                    action: Action::ReclaimDir {
                        root: cx.listing.root.clone(),
                    },
                    path: entry.name.clone(),
                    reason,
                    expect: Expect::TreeOfPath,
                    effect: (),
                }),
            }
        }
        out
    }
}

enum Verdict {
    /// Not a Go-ish name: not mentioned at all.
    NotOurs,
    /// Left alone, with why.
    Spare(String),
    /// Reclaimed, with the reason.
    Reclaim(String),
}

/// The predicates of build-dirs.md, in order, as early returns.
fn judge(cx: &BuildContext<'_>, e: &RootEntry) -> Verdict {
    if !is_go_work_dir_name(&e.name) {
        if e.name.starts_with("go-build") || e.name.starts_with("go-link") {
            return Verdict::Spare(
                "not a name Go gives its work directories (go-build<digits>, go-link-<digits>)"
                    .into(),
            );
        }
        return Verdict::NotOurs;
    }
    match e.kind {
        EntryKind::Dir => {}
        EntryKind::Symlink => return Verdict::Spare("a symlink, not a directory".into()),
        EntryKind::File | EntryKind::Other => return Verdict::Spare("not a directory".into()),
    }
    match e.mount_point {
        Some(false) => {}
        Some(true) => {
            return Verdict::Spare(
                "a mount point (another filesystem than its root's): never reclaimed".into(),
            )
        }
        None => return Verdict::Spare("cannot check whether it is a mount point".into()),
    }
    // Where liveness cannot be read at all (an OS without a backend), no directory is known to
    // be unused, whoever owns it.
    if let Some(why) = cx.processes.unsupported_why() {
        return Verdict::Spare(why);
    }
    if Some(e.owner) != cx.config.owner {
        return Verdict::Spare(format!("owned by {}, not by the invoking user", e.owner));
    }
    // A deletion cut short changed the directory's mtime; the run that started it had found
    // it old enough, so the next run finishes it.
    let interrupted = cx.interrupted_by(e);
    let age = cx.config.now.0.saturating_sub(e.mtime);
    if interrupted.is_none() && age < 0 {
        return Verdict::Spare("changed in the future (clock skew); treated as fresh".into());
    }
    if interrupted.is_none() && age < cx.config.min_age_secs {
        return Verdict::Spare(format!(
            "changed {} ago, within --min-age {}",
            span(age),
            span(cx.config.min_age_secs)
        ));
    }
    match e.has_git {
        Some(false) => {}
        Some(true) => return Verdict::Spare("holds a .git entry".into()),
        None => return Verdict::Spare("cannot check it for a .git entry".into()),
    }
    if let Some(r) = cx.live_reference(&e.name) {
        return Verdict::Spare(format!("referenced by a live process: {r}"));
    }
    if let Some(why) = cx.processes.unseen_user(e.mode) {
        return Verdict::Spare(why);
    }
    Verdict::Reclaim(match interrupted {
        Some(run) => format!(
            "finishing the deletion run {run} started and did not finish; referenced by no live process"
        ),
        None => format!(
            "leaked Go work directory: unchanged for {}, referenced by no live process",
            span(age)
        ),
    })
}

/// Whether `name` is one the Go toolchain gives its work directories: `go-build<digits>`
/// (`go build`, `go test`) or `go-link-<digits>` (the linker). Exactly, so that human-named
/// scratch such as `go-build-base` never matches.
pub fn is_go_work_dir_name(name: &str) -> bool {
    ["go-build", "go-link-"].iter().any(|prefix| {
        name.strip_prefix(prefix)
            .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
    })
}

/// A duration in its largest whole unit: `3d`, `2h`, `30m`, `0s`.
fn span(secs: i64) -> String {
    match secs {
        s if s >= 86_400 && s % 86_400 == 0 || s >= 2 * 86_400 => format!("{}d", s / 86_400),
        s if s >= 3600 => format!("{}h", s / 3600),
        s if s >= 60 => format!("{}m", s / 60),
        s => format!("{s}s"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_names_go_generates() {
        for ok in [
            "go-build1",
            "go-build0123456789",
            "go-link-7",
            "go-link-4294967295",
        ] {
            assert!(is_go_work_dir_name(ok), "{ok}");
        }
        for no in [
            "go-build",
            "go-build-base",
            "go-build12ab",
            "go-build-12",
            "go-link",
            "go-link-",
            "go-link-base",
            "go-link12",
            "gocache-x",
            "xgo-build1",
            "go-build1 ",
            "go-build١",
        ] {
            assert!(!is_go_work_dir_name(no), "{no}");
        }
    }

    #[test]
    fn spans_read_naturally() {
        assert_eq!(span(0), "0s");
        assert_eq!(span(90), "1m");
        assert_eq!(span(1800), "30m");
        assert_eq!(span(7200), "2h");
        assert_eq!(span(86_400), "1d");
        assert_eq!(span(90_000), "25h");
        assert_eq!(span(3 * 86_400 + 5), "3d");
    }
}
