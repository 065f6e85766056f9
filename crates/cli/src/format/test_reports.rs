//! Test-only: the reports the format tests render, built in memory (any plan, any path) or by
//! the library from a copy of the demo store (`fixtures/demo`) with the clock fixed.

// The demo store is copied with std::fs, outside any root under test.
#![allow(clippy::disallowed_methods, clippy::disallowed_types)]

use std::path::{Path, PathBuf};

use engine::Planned;
use exec::Applied;
use plan::{Action, ItemKind, Outcome, OutcomeKind, Plan, PlannedAction, Precondition, Skipped};
use sessions::Summary;
use store::ids::RunId;

use crate::sweep::{SweepReport, SweepSkipped, SweepSummary};
use crate::{AdminCommand, AdminReport, RepairOptions, RepairReport};

/// The run id of the reports built in memory.
pub(crate) const RUN: &str = "20261129T120000Z-a1b2c3";
/// The instant of the demo runs.
const NOW: &str = "2026-11-29T12:00:00Z";
/// A path with every character the formats must escape: `%`, `:`, `,`, a newline, `<`, `&`,
/// `"` and `'`.
pub(crate) const ODD: &str = "odd%:,\n<&\"'.json";

fn run() -> RunId {
    RunId(RUN.to_owned())
}

fn file() -> Precondition {
    Precondition::File {
        bytes: 120,
        sha256: "ab".repeat(32),
    }
}

/// An action of `rule` (named `name`) on `path`.
pub(crate) fn action(
    seq: u64,
    rule: &str,
    name: &str,
    action: Action,
    path: &str,
    reason: &str,
) -> PlannedAction {
    PlannedAction {
        seq,
        rule: rule.to_owned(),
        rule_name: name.to_owned(),
        action,
        path: path.to_owned(),
        reason: reason.to_owned(),
        precondition: file(),
    }
}

/// R1 setting aside the document `path`.
fn set_aside(seq: u64, path: &str) -> PlannedAction {
    action(
        seq,
        "R1",
        "unreadable-document",
        Action::SetAside {
            kind: ItemKind::Document,
        },
        path,
        "unreadable document: EOF while parsing",
    )
}

fn planned(actions: Vec<PlannedAction>, skipped: Vec<Skipped>) -> Planned<Summary> {
    Planned {
        plan: Plan {
            actions,
            deferred: 0,
            planned_at: Some(NOW.to_owned()),
        },
        skipped,
        ..Planned::default()
    }
}

/// A dry run over `/tmp/S` planning `n` R1 set-asides (`doc-1.json`..), with one item R3 kept.
pub(crate) fn repair_dry(n: u64) -> RepairReport {
    let actions = (1..=n)
        .map(|i| set_aside(i, &format!("doc-{i}.json")))
        .collect();
    let skipped = vec![Skipped {
        path: "taken/runtime/threads/th-taken.json".to_owned(),
        rule: "R3".to_owned(),
        why: "document id taken".to_owned(),
    }];
    RepairReport::dry("/tmp/S".to_owned(), run(), planned(actions, skipped))
}

/// A real run over `/tmp/S`: one action applied, one skipped, one failed (with its error).
pub(crate) fn repair_real() -> RepairReport {
    let thread = "s/runtime/threads/th-1.json";
    let actions = vec![
        set_aside(1, "torn.json"),
        set_aside(2, "junk.json"),
        action(
            3,
            "R4",
            "dangling-thread-binding",
            Action::UnbindThread,
            thread,
            "bound to a missing document",
        ),
    ];
    let applied = Applied {
        outcomes: vec![
            outcome(1, OutcomeKind::Applied, None),
            outcome(2, OutcomeKind::Skipped, Some("changed since planned")),
            outcome(3, OutcomeKind::Failed, Some("permission denied")),
        ],
        errors: vec![engine::Problem::new(
            thread,
            "unbind",
            std::io::ErrorKind::PermissionDenied,
            format!("{thread}: permission denied"),
        )],
        records_failed: false,
        interrupted: None,
    };
    RepairReport::applied(
        "/tmp/S".to_owned(),
        run(),
        planned(actions, Vec::new()),
        applied,
    )
}

/// A dry run whose action, kept item and error carry [`ODD`] and other characters to escape.
pub(crate) fn repair_odd() -> RepairReport {
    let actions = vec![action(
        1,
        "R1",
        "odd:name,with%",
        Action::SetAside {
            kind: ItemKind::Document,
        },
        ODD,
        "reason % with\r\nnewline, colon: and <&\"'>",
    )];
    let skipped = vec![Skipped {
        path: ODD.to_owned(),
        rule: "R3:x".to_owned(),
        why: "why %:,\n".to_owned(),
    }];
    let mut planned = planned(actions, skipped);
    planned.errors.push(engine::Problem::new(
        ODD,
        "read",
        std::io::ErrorKind::InvalidData,
        "cannot read | this\nfile \u{1} <&>",
    ));
    RepairReport::dry("/tmp/S|x".to_owned(), run(), planned)
}

/// The outcome of action `seq`.
pub(crate) fn outcome(seq: u64, outcome: OutcomeKind, why: Option<&str>) -> Outcome {
    Outcome {
        seq,
        outcome,
        why: why.map(str::to_owned),
    }
}

/// A dry-run sweep of two roots: one directory planned in each, one kept in the first.
pub(crate) fn sweep_dry() -> SweepReport {
    let reclaim = |seq, root: &str, path: &str| PlannedAction {
        precondition: Precondition::Tree {
            bytes: 1536,
            tree_blake3: "cd".repeat(32),
        },
        ..action(
            seq,
            "B1",
            "leaked-go-workdir",
            Action::ReclaimDir {
                root: root.to_owned(),
            },
            path,
            "no process uses it; idle for 2h",
        )
    };
    let plan = Plan {
        actions: vec![
            reclaim(1, "/tmp/roots/a", "go-build1"),
            reclaim(2, "/tmp/roots/b/", "go-link-2"),
        ],
        deferred: 0,
        planned_at: None,
    };
    let skipped = vec![SweepSkipped {
        root: "/tmp/roots/a".to_owned(),
        path: "go-build9".to_owned(),
        rule: "B1".to_owned(),
        why: "held by process 42".to_owned(),
    }];
    let summary = SweepSummary {
        dirs_reclaimed: 2,
        bytes_freed: 3072,
        dirs_spared: 1,
        processes_scanned: 12,
        ..SweepSummary::default()
    };
    SweepReport::in_memory(
        true,
        vec!["/tmp/roots/a".to_owned(), "/tmp/roots/b/".to_owned()],
        plan,
        Vec::new(),
        skipped,
        summary,
    )
}

/// A real purge over `/tmp/S` that deleted one set-aside run and left one alone.
pub(crate) fn purge_real() -> AdminReport {
    let rel = ".set-aside/20261001T000000Z-000001";
    let plan = Plan {
        actions: vec![PlannedAction {
            precondition: Precondition::Tree {
                bytes: 4096,
                tree_blake3: "ef".repeat(32),
            },
            ..action(
                1,
                engine::admin::PURGE_RULE,
                engine::admin::PURGE_RULE_NAME,
                Action::Purge,
                rel,
                "set aside 1428h ago",
            )
        }],
        deferred: 0,
        planned_at: None,
    };
    let planned = engine::admin::AdminPlan {
        plan,
        skipped: vec![Skipped {
            path: ".set-aside/20261002T000000Z-000002".to_owned(),
            rule: engine::admin::PURGE_RULE.to_owned(),
            why: "does not match its manifest".to_owned(),
        }],
        ..engine::admin::AdminPlan::default()
    };
    let applied = Applied {
        outcomes: vec![outcome(1, OutcomeKind::Applied, None)],
        ..Applied::default()
    };
    AdminReport::new(
        AdminCommand::Purge,
        "/tmp/S".to_owned(),
        run(),
        planned,
        Some(applied),
    )
}

/// A copy of the demo store with the reports of a dry run and then a real run over it.
pub(crate) struct Demo {
    _tmp: tempfile::TempDir,
    dir: PathBuf,
    /// The dry run.
    pub(crate) dry: RepairReport,
    /// The real run, after the dry run.
    pub(crate) real: RepairReport,
}

impl Demo {
    /// `text` with the copy's directory as `[S]` and the runs' ids (unique to each run) as
    /// `[DRY-RUN]` and `[RUN]`.
    pub(crate) fn redact(&self, text: &str) -> String {
        let dir = self.dir.to_string_lossy().into_owned();
        // A Windows path inside JSON has its backslashes escaped.
        text.replace(&self.dry.run, "[DRY-RUN]")
            .replace(&self.real.run, "[RUN]")
            .replace(&dir.replace('\\', "\\\\"), "[S]")
            .replace(&dir, "[S]")
    }
}

/// Runs the library over a fresh copy of `fixtures/demo`, dry then real, at the demo's instant,
/// reading no `$CODEWHALE_HOME`.
pub(crate) fn demo() -> Demo {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("S");
    let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/demo");
    copy_tree(&fixtures, &dir);
    let mut opts = RepairOptions::new(&dir);
    opts.clock = store::Clock::Fixed(store::Timestamp::parse(NOW).unwrap());
    opts.codewhale_home = None;
    opts.cache_dir = Some(tmp.path().join("cache"));
    opts.dry_run = true;
    let dry = crate::repair_sessions(&opts).unwrap();
    opts.dry_run = false;
    let real = crate::repair_sessions(&opts).unwrap();
    Demo {
        _tmp: tmp,
        dir,
        dry,
        real,
    }
}

/// The report of `sessions apply`: the plan of a dry run over a fresh copy of the demo store,
/// written to a file and applied from it.
pub(crate) fn demo_applied_plan() -> RepairReport {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("S");
    let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/demo");
    copy_tree(&fixtures, &dir);
    let mut opts = RepairOptions::new(&dir);
    let clock = store::Clock::Fixed(store::Timestamp::parse(NOW).unwrap());
    opts.clock = clock;
    opts.codewhale_home = None;
    opts.cache_dir = Some(tmp.path().join("cache"));
    opts.dry_run = true;
    let dry = crate::repair_sessions(&opts).unwrap();
    let plan_file = tmp.path().join("plan.json");
    std::fs::write(&plan_file, crate::plan_file_bytes(&dry)).unwrap();
    crate::apply_plan_file(&plan_file, clock).unwrap()
}

/// Copies the tree `from` into `to` (created), recreating symlinks as symlinks.
fn copy_tree(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    let mut entries: Vec<_> = std::fs::read_dir(from)
        .unwrap()
        .map(Result::unwrap)
        .collect();
    entries.sort_by_key(std::fs::DirEntry::file_name);
    for entry in entries {
        let (src, dst) = (entry.path(), to.join(entry.file_name()));
        let ft = entry.file_type().unwrap();
        if ft.is_symlink() {
            // Only Unix runs a test over a tree holding a symlink (Wine's `remove_dir_all`
            // follows one).
            #[cfg(unix)]
            test_support::unix::symlink(std::fs::read_link(&src).unwrap(), &dst).unwrap();
            #[cfg(not(unix))]
            panic!("{} is a symlink: copied on Unix only", src.display());
        } else if ft.is_dir() {
            copy_tree(&src, &dst);
        } else {
            std::fs::copy(&src, &dst).unwrap();
        }
    }
}
