//! B1 `leaked-go-workdir`: reclaims Go work directories that a killed build left behind.

use engine::{BuildContext, BuildDirs, Effect, Expect, Proposal, RootEntry, Rule, RuleOutput};
use fsroot::EntryKind;
use plan::{ActionKind, Skipped};

/// ## What it finds
///
/// A depth-1 entry `R/<name>` of a build root `R` (each `--root`; by default `$GOTMPDIR` when
/// set, and the OS temp dir) that `go build` / `go test` (`os.MkdirTemp(dir, "go-build")`) or
/// the linker (`os.MkdirTemp(dir, "go-link-")`) created and never removed, because the run was
/// killed, signalled or OOM-killed. All must hold:
///
/// 1. its name is exactly `go-build<digits>` or `go-link-<digits>`;
/// 2. it is a real directory, not a symlink;
/// 3. it is owned by the invoking user;
/// 4. it has not changed for `--min-age` (default `30m`; the clock is `DOCTOR_NOW` when set);
/// 5. it holds no `.git` entry;
/// 6. no live process references it: no process's working directory, argv element,
///    environment value (whole and split on `:`), open file descriptor or memory-mapped file
///    lies at or under it, compared by whole path components (`/x/go-build12` is not
///    `/x/go-build123`).
///
/// ## What it does
///
/// Deletes the tree (the next build regenerates it) through the one delete seam, which never
/// follows a symlink: a link inside the tree is removed, its target is left as it was. Just
/// before deleting, the executor checks again that the directory is real, still the invoking
/// user's, referenced by no live process (a fresh read of `/proc`), and unchanged since
/// planned (its tree digest). Each deletion is receipted with the bytes freed. A deletion cut
/// short leaves a smaller tree whose mtime just changed; the executor records each deletion
/// before it starts, so the next run recognises the same directory (device and inode), skips
/// only the age check for it, and finishes it.
///
/// ## What it never touches
///
/// - names Go does not generate: `go-build-base`, `go-link-base`, `go-build12ab`, `go-link`,
///   `gocache-x` (names starting with `go-build` or `go-link` are reported as skipped);
/// - a symlink or anything that is not a directory;
/// - another user's directory, a directory changed within `--min-age`, a directory holding
///   `.git`, and a directory any live process references (each reported as skipped, with why);
/// - anything below depth 1 of a root, and the roots themselves;
/// - everything, when `/proc` cannot be read: liveness cannot be known, so nothing is
///   reclaimed and the run says why (exit 1).
///
/// ## Example
///
/// `/tmp/gotmp/go-build2931` left by a `go test` killed two hours ago, and
/// `/tmp/gotmp/go-build77` whose build is still running:
///
/// ```text
/// would reclaim /tmp/gotmp/go-build2931  (B1 leaked-go-workdir: leaked Go work directory: unchanged for 2h, referenced by no live process)
/// skipped /tmp/gotmp/go-build77  (B1: referenced by a live process: pid 4242 cwd /tmp/gotmp/go-build77/b001)
/// ```
#[derive(Debug, Clone, Copy)]
pub struct LeakedGoWorkdir;

impl Rule<BuildDirs> for LeakedGoWorkdir {
    fn code(&self) -> &'static str {
        "B1"
    }

    fn name(&self) -> &'static str {
        "leaked-go-workdir"
    }

    fn plan(&self, cx: &BuildContext<'_>) -> RuleOutput {
        let mut out = RuleOutput::default();
        for entry in &cx.listing.entries {
            match judge(cx, entry) {
                Verdict::NotOurs => {}
                Verdict::Spare(why) => out.skipped.push(Skipped {
                    path: entry.name.clone(),
                    rule: self.code().to_owned(),
                    why,
                }),
                Verdict::Reclaim(reason) => out.proposals.push(Proposal {
                    action: ActionKind::ReclaimDir,
                    path: entry.name.clone(),
                    kind: None,
                    document: None,
                    reason,
                    expect: Expect::TreeOfPath,
                    effect: Effect::None,
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
    if e.uid != cx.config.uid {
        return Verdict::Spare(format!("owned by uid {}, not by the invoking user", e.uid));
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
