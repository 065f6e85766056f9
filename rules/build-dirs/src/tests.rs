//! B1 on a build root listed in memory (`engine::BuildContext` of `RootEntry` values and fake
//! processes): what it reclaims, each predicate that spares a directory, and what it ignores.

use engine::liveness::ProcessRefs;
use engine::NoCounts;
use engine::{
    BuildConfig, BuildContext, EntryKind, Expect, Interrupted, RootEntry, RootListing, Rule,
};
use fsroot::procfs::ProcessInfo;
use fsroot::Owner;
use kernel::{RuleOutput, Timestamp};
use plan::{Action, Plan, PlannedAction, Precondition};

use crate::{LeakedGoWorkdir, RULES};

const NOW: i64 = 1_700_000_000;
const ME: u32 = 1000;
const HOUR: i64 = 3600;
const DAY: i64 = 24 * HOUR;
/// The root as the run names it; `/real/tmp` is what it resolves to.
const ROOT: &str = "/tmp";

/// A directory of mine named `name`, last changed `age` seconds before [`NOW`], without
/// `.git`.
fn dir(name: &str, age: i64) -> RootEntry {
    RootEntry {
        name: name.into(),
        kind: EntryKind::Dir,
        owner: Owner::uid(ME),
        mtime: NOW - age,
        has_git: Some(false),
        dev: 1,
        ino: 42,
        mode: 0o040700,
        mount_point: Some(false),
    }
}

/// A process whose working directory is `cwd`.
fn process_in(cwd: &str) -> ProcessInfo {
    ProcessInfo {
        pid: 7,
        cwd: Some(cwd.into()),
        ..ProcessInfo::default()
    }
}

/// B1 over `entries` of [`ROOT`], with `processes` alive, `interrupted` deletions and a
/// `--min-age` of one hour.
fn plan_with(
    entries: Vec<RootEntry>,
    processes: Vec<ProcessInfo>,
    interrupted: &[Interrupted],
) -> RuleOutput<NoCounts, ()> {
    plan_seeing(entries, ProcessRefs::from_processes(processes), interrupted)
}

/// [`plan_with`] over references already judged (with processes that could not be read).
fn plan_seeing(
    entries: Vec<RootEntry>,
    processes: ProcessRefs,
    interrupted: &[Interrupted],
) -> RuleOutput<NoCounts, ()> {
    let listing = RootListing {
        root: ROOT.into(),
        canonical: "/real/tmp".into(),
        entries,
    };
    let config = BuildConfig {
        max_actions: 500,
        min_age_secs: HOUR,
        now: Timestamp(NOW),
        owner: Some(Owner::uid(ME)),
    };
    let out = LeakedGoWorkdir.plan(&BuildContext {
        listing: &listing,
        processes: &processes,
        interrupted,
        config: &config,
    });
    assert!(
        out.errors.is_empty(),
        "B1 reports no errors over a listing: {:?}",
        out.errors
    );
    out
}

fn plan(entries: Vec<RootEntry>) -> RuleOutput<NoCounts, ()> {
    plan_with(entries, Vec::new(), &[])
}

/// Asserts that B1 proposes nothing and spares the one entry, and returns why.
fn spared(out: &RuleOutput<NoCounts, ()>) -> &str {
    assert!(out.proposals.is_empty(), "{:?}", out.proposals);
    assert_eq!(out.skipped.len(), 1, "{:?}", out.skipped);
    assert_eq!(out.skipped[0].rule, "B1");
    &out.skipped[0].why
}

fn interrupted_deletion_of(e: &RootEntry) -> Interrupted {
    Interrupted {
        run: "run-1".into(),
        root: ROOT.into(),
        path: e.name.clone(),
        dev: e.dev,
        ino: e.ino,
    }
}

#[test]
fn b1_reclaims_an_old_unreferenced_go_build_dir_of_mine() {
    let out = plan(vec![dir("go-build123", 2 * DAY)]);
    assert!(out.skipped.is_empty(), "{:?}", out.skipped);
    assert_eq!(out.proposals.len(), 1);
    let p = &out.proposals[0];
    assert_eq!(
        (&p.action, p.path.as_str()),
        (
            &Action::ReclaimDir {
                root: ROOT.to_owned()
            },
            "go-build123"
        )
    );
    assert_eq!(
        p.reason,
        "leaked Go work directory: unchanged for 2d, referenced by no live process"
    );
    assert_eq!(
        p.expect,
        Expect::TreeOfPath,
        "the tree is digested when sealed"
    );
}

#[test]
fn b1_reclaims_a_linker_work_dir_too() {
    let out = plan(vec![dir("go-link-99", 2 * DAY)]);
    assert_eq!(out.proposals[0].path, "go-link-99");
}

#[test]
fn b1_does_not_mention_entries_that_are_not_go_ish() {
    let out = plan(vec![dir("gocache-x", 2 * DAY), dir("notes", 2 * DAY)]);
    assert!(
        out.proposals.is_empty() && out.skipped.is_empty(),
        "{out:?}"
    );
}

#[test]
fn b1_spares_a_look_alike_name() {
    let why = spared(&plan(vec![dir("go-build-base", 2 * DAY)])).to_owned();
    assert!(why.starts_with("not a name Go gives"), "{why}");
}

#[test]
fn b1_spares_a_symlink_and_a_file() {
    let link = RootEntry {
        kind: EntryKind::Symlink,
        has_git: None,
        ..dir("go-build1", 2 * DAY)
    };
    assert_eq!(spared(&plan(vec![link])), "a symlink, not a directory");
    let file = RootEntry {
        kind: EntryKind::File,
        ..dir("go-build1", 2 * DAY)
    };
    assert_eq!(spared(&plan(vec![file])), "not a directory");
}

#[test]
fn b1_reclaims_nothing_where_liveness_cannot_be_read() {
    // Another user's directory too: the reason is the liveness, not the owner.
    let theirs = RootEntry {
        owner: Owner::uid(0),
        ..dir("go-build2", 2 * DAY)
    };
    let out = plan_seeing(
        vec![dir("go-build1", 2 * DAY), theirs],
        ProcessRefs::unsupported(engine::liveness::NO_BACKEND),
        &[],
    );
    assert!(out.proposals.is_empty(), "{:?}", out.proposals);
    assert_eq!(out.skipped.len(), 2);
    for s in &out.skipped {
        assert_eq!(
            s.why,
            format!(
                "{}{}",
                engine::liveness::NOT_KNOWN_UNUSED,
                engine::liveness::NO_BACKEND
            )
        );
    }
}

#[test]
fn b1_spares_another_users_dir() {
    let theirs = RootEntry {
        owner: Owner::uid(0),
        ..dir("go-build1", 2 * DAY)
    };
    assert_eq!(
        spared(&plan(vec![theirs])),
        "owned by uid 0, not by the invoking user"
    );
}

#[test]
fn b1_spares_a_dir_changed_within_min_age() {
    assert_eq!(
        spared(&plan(vec![dir("go-build1", 30 * 60)])),
        "changed 30m ago, within --min-age 1h"
    );
}

#[test]
fn b1_spares_a_dir_changed_in_the_future() {
    let why = spared(&plan(vec![dir("go-build1", -60)])).to_owned();
    assert!(why.contains("clock skew"), "{why}");
}

#[test]
fn b1_spares_a_dir_holding_git_or_not_checked_for_it() {
    let git = RootEntry {
        has_git: Some(true),
        ..dir("go-build1", 2 * DAY)
    };
    assert_eq!(spared(&plan(vec![git])), "holds a .git entry");
    let unknown = RootEntry {
        has_git: None,
        ..dir("go-build1", 2 * DAY)
    };
    assert_eq!(
        spared(&plan(vec![unknown])),
        "cannot check it for a .git entry"
    );
}

#[test]
fn b1_spares_a_dir_a_process_works_in() {
    let out = plan_with(
        vec![dir("go-build1", 2 * DAY)],
        vec![process_in("/tmp/go-build1/b001")],
        &[],
    );
    assert_eq!(
        spared(&out),
        "referenced by a live process: pid 7 cwd /tmp/go-build1/b001"
    );
}

#[test]
fn b1_spares_a_dir_a_process_reaches_through_the_resolved_root() {
    let out = plan_with(
        vec![dir("go-build1", 2 * DAY)],
        vec![process_in("/real/tmp/go-build1")],
        &[],
    );
    assert!(spared(&out).starts_with("referenced by a live process"));
}

#[test]
fn b1_matches_references_by_whole_name() {
    let out = plan_with(
        vec![dir("go-build1", 2 * DAY)],
        vec![process_in("/tmp/go-build12")],
        &[],
    );
    assert_eq!(out.proposals.len(), 1, "{out:?}");
}

#[test]
fn b1_finishes_an_interrupted_deletion_of_the_same_dir_whatever_its_age() {
    let fresh = dir("go-build1", 60);
    let out = plan_with(
        vec![fresh.clone()],
        vec![],
        &[interrupted_deletion_of(&fresh)],
    );
    assert_eq!(out.proposals.len(), 1, "{out:?}");
    assert!(
        out.proposals[0]
            .reason
            .starts_with("finishing the deletion run run-1 started"),
        "{}",
        out.proposals[0].reason
    );
}

#[test]
fn b1_judges_a_new_dir_at_an_interrupted_name_by_its_age() {
    let fresh = dir("go-build1", 60);
    let other_inode = Interrupted {
        ino: 43,
        ..interrupted_deletion_of(&fresh)
    };
    let why = spared(&plan_with(vec![fresh], vec![], &[other_inode])).to_owned();
    assert!(why.contains("within --min-age"), "{why}");
}

#[test]
fn b1_spares_an_interrupted_dir_a_process_now_uses() {
    let fresh = dir("go-build1", 60);
    let out = plan_with(
        vec![fresh.clone()],
        vec![process_in("/tmp/go-build1")],
        &[interrupted_deletion_of(&fresh)],
    );
    assert!(spared(&out).starts_with("referenced by a live process"));
}

#[test]
fn b1_judges_each_entry_on_its_own() {
    let out = plan(vec![
        dir("go-build1", 2 * DAY),
        dir("go-build2", 60),
        dir("go-link-3", 2 * DAY),
    ]);
    let reclaimed: Vec<_> = out.proposals.iter().map(|p| p.path.as_str()).collect();
    assert_eq!(reclaimed, ["go-build1", "go-link-3"]);
    assert_eq!(out.skipped[0].path, "go-build2");
}

#[test]
fn b1_proposal_passes_the_saved_plan_check_and_the_same_action_elsewhere_does_not() {
    let out = plan(vec![dir("go-build123", 2 * DAY)]);
    let p = &out.proposals[0];
    let action = PlannedAction {
        seq: 1,
        rule: "B1".into(),
        rule_name: LeakedGoWorkdir.name().into(),
        action: p.action.clone(),
        path: p.path.clone(),
        reason: p.reason.clone(),
        precondition: Precondition::Tree {
            bytes: 0,
            tree_blake3: String::new(),
        },
    };
    let mut plan = Plan {
        actions: vec![action],
        ..Plan::default()
    };
    assert_eq!(engine::check_plan(RULES, &plan), Ok(()));
    // The same action, tampered onto a directory Go never names so, is refused.
    for path in ["src", "go-build", "go-buildx1", "go-link-", "go-build1/pkg"] {
        plan.actions[0].path = path.into();
        let err = engine::check_plan(RULES, &plan).unwrap_err();
        assert_eq!(
            (err.seq, err.rule.as_str(), err.path.as_str()),
            (1, "B1", path)
        );
        assert_eq!(err.pack, "build-dirs");
        assert_eq!(
            err.to_string(),
            format!(
                "action 1 (B1 {:?} {path}): not an action the build-dirs pack plans on a path \
                 of that shape",
                err.kind
            )
        );
    }
}

/// B1's page (`Rule::doc`: what `doctor rule B1` prints and `cargo xtask docs` writes) has the
/// sections of every rule page, in order.
#[test]
fn the_rule_page_has_its_sections_in_order() {
    for r in RULES {
        assert_eq!(engine::missing_page_section(r.doc()), None, "{}", r.code());
    }
}

#[test]
fn b1_spares_a_mount_point_or_a_dir_it_cannot_check_for_one() {
    let mounted = RootEntry {
        mount_point: Some(true),
        ..dir("go-build1", 2 * DAY)
    };
    assert_eq!(
        spared(&plan(vec![mounted])),
        "a mount point (another filesystem than its root's): never reclaimed"
    );
    let unknown = RootEntry {
        mount_point: None,
        ..dir("go-build1", 2 * DAY)
    };
    assert_eq!(
        spared(&plan(vec![unknown])),
        "cannot check whether it is a mount point"
    );
}

/// What the scan could not read, judged for [`ME`]: a process of `uids`, capabilities
/// `caps` (permitted and effective), or no status at all.
fn unread(status: Option<([u32; 4], u64)>, hidden: Option<&str>) -> ProcessRefs {
    use fsroot::procfs::{ProcStatus, ProcessScan, Unread};
    let own = ProcStatus {
        uids: [ME; 4],
        cap_bnd: u64::MAX >> 23,
        ..ProcStatus::default()
    };
    let unread = Unread {
        pid: 4242,
        items: vec!["cwd", "environ", "maps", "fd"],
        status: status.map(|(uids, caps)| ProcStatus {
            uids,
            cap_prm: caps,
            cap_eff: caps,
            cap_bnd: u64::MAX >> 23,
            kernel_thread: false,
            exited: false,
        }),
    };
    ProcessRefs::from_scan(ProcessScan {
        unread: vec![unread],
        unreadable: 4,
        hidden: hidden.map(str::to_owned),
        own,
        init_cap_bnd: Some(u64::MAX >> 23),
        ..ProcessScan::default()
    })
}

#[test]
fn b1_reclaims_nothing_while_a_process_of_mine_cannot_be_read() {
    let refs = unread(Some(([ME; 4], 0)), None);
    let why = spared(&plan_seeing(vec![dir("go-build1", 2 * DAY)], refs, &[])).to_owned();
    assert_eq!(
        why,
        "not known to be unused: pid 4242 runs as the invoking user (uid 1000) and its cwd, \
         environ, maps, fd cannot be read"
    );
    // A program the user started that runs as root (sudo: real uid mine) counts as mine.
    let sudo = unread(Some(([ME, 0, 0, 0], u64::MAX >> 23)), None);
    let why = spared(&plan_seeing(vec![dir("go-build1", 2 * DAY)], sudo, &[])).to_owned();
    assert!(why.contains("pid 4242 runs as the invoking user"), "{why}");
    // Nor while the owner of an unread process is unknown, or /proc hides processes.
    let unknown = unread(None, None);
    let why = spared(&plan_seeing(vec![dir("go-build1", 2 * DAY)], unknown, &[])).to_owned();
    assert!(why.contains("nor whom it runs as"), "{why}");
    let hidden = unread(None, Some("mounted with hidepid=invisible"));
    let why = spared(&plan_seeing(vec![dir("go-build1", 2 * DAY)], hidden, &[])).to_owned();
    assert_eq!(
        why,
        "not known to be unused: the process table may hide processes (mounted with \
         hidepid=invisible)"
    );
}

#[test]
fn b1_an_unread_process_of_another_user_spares_only_dirs_open_to_others() {
    let other = || unread(Some(([1001; 4], 0)), None);
    let closed = dir("go-build1", 2 * DAY);
    assert_eq!(
        plan_seeing(vec![closed.clone()], other(), &[])
            .proposals
            .len(),
        1,
        "mode 0700: another user cannot be inside"
    );
    for mode in [0o040755, 0o040710, 0o040701] {
        let open = RootEntry {
            mode,
            ..closed.clone()
        };
        let why = spared(&plan_seeing(vec![open], other(), &[])).to_owned();
        assert_eq!(
            why,
            format!(
                "not known to be unused: pid 4242 of uid 1001 cannot be read, and the \
                 directory lets other users in (mode {:04o})",
                mode & 0o7777
            )
        );
    }
}

#[test]
fn b1_an_unread_privileged_process_of_another_user_spares_every_dir() {
    // Root's daemon, as an ordinary user sees it: it enters a 0700 directory as easily as an
    // open one, so neither is known to be unused.
    let root = || unread(Some(([0; 4], u64::MAX >> 23)), None);
    let closed = dir("go-build1", 2 * DAY);
    let why = spared(&plan_seeing(vec![closed.clone()], root(), &[])).to_owned();
    assert!(
        why.starts_with(
            "not known to be unused: pid 4242 runs privileged (uid 0 with capabilities"
        ) && why.contains("(a sweep given CAP_SYS_PTRACE and CAP_DAC_READ_SEARCH can read it)"),
        "{why}"
    );
    // Another user holding a capability alike, with no uid 0.
    let capable = unread(Some(([1001; 4], 1 << 2)), None);
    let why = spared(&plan_seeing(vec![closed], capable, &[])).to_owned();
    assert!(
        why.starts_with("not known to be unused: pid 4242 runs privileged (uid 1001 with capabilities 0000000000000004)"),
        "{why}"
    );
}
