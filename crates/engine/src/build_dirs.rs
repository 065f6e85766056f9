//! The build-dirs planner: lists the depth-1 entries of each root through its own read-only
//! [`Root`], hands them with the live process references to the pack's rules, then orders,
//! bounds and seals the proposals like every pack. Its only I/O is that listing (one `lstat`
//! per entry, one per `<entry>/.git` and, for a directory, one `statx` of it and of its root
//! for its mount) and the tree digests of the planned directories.

use std::path::{Path, PathBuf};

use crate::liveness::{ProcessRefs, Reference};
use fsroot::{EntryKind, Problem, Root};
use kernel::Timestamp;
use plan::{Plan, Skipped};

use crate::{Pack, Rule};
use kernel::seal::{self, Ordered};

/// The build-dirs pack: its rules see one root at a time ([`BuildContext`]).
#[derive(Debug, Clone, Copy)]
pub struct BuildDirs;

impl Pack for BuildDirs {
    const NAME: &'static str = "build-dirs";
    type Context<'a> = BuildContext<'a>;
    type Counts = crate::NoCounts;
    /// A reclaim changes nothing another rule of the pack reads.
    type Effect = ();
}

/// Settings of a build-dirs run.
#[derive(Debug, Clone)]
pub struct BuildConfig {
    /// `--max-actions`.
    pub max_actions: usize,
    /// `--min-age`, seconds.
    pub min_age_secs: i64,
    /// The clock's instant for this run.
    pub now: Timestamp,
    /// The invoking user; `None` when the liveness backend cannot tell it (no directory
    /// is then the invoking user's).
    pub owner: Option<fsroot::Owner>,
}

/// One depth-1 entry of a root, as `lstat` saw it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RootEntry {
    /// Its name. Entries whose names are not UTF-8 are not listed: no tool names its work
    /// directories that way.
    pub name: String,
    /// What it is (a symlink is a symlink, never followed).
    pub kind: EntryKind,
    /// Its owner (a uid on Unix, a SID on Windows).
    pub owner: fsroot::Owner,
    /// Modification time, seconds since the epoch.
    pub mtime: i64,
    /// For a directory: whether it holds a `.git` entry; `None` when that could not be checked.
    pub has_git: Option<bool>,
    /// Device number (with `ino`, which directory this is).
    pub dev: u64,
    /// Inode number.
    pub ino: u64,
    /// Permission bits and file type bits.
    pub mode: u32,
    /// For a directory: whether it is a mount point (on another mount than its root);
    /// `None` when that could not be checked.
    pub mount_point: Option<bool>,
}

/// A deletion an earlier run started and did not finish (it was killed): the executor records
/// one before it deletes and drops it after the receipt.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Interrupted {
    /// The run that started it.
    pub run: String,
    /// The absolute root.
    pub root: String,
    /// The entry, relative to the root.
    pub path: String,
    /// The directory's device number when the deletion started.
    pub dev: u64,
    /// Its inode number.
    pub ino: u64,
}

/// One root and its entries.
#[derive(Debug, Clone)]
pub struct RootListing {
    /// The root as the run names it: absolute (the plan's `root`).
    pub root: String,
    /// The same root with symlinks resolved.
    pub canonical: PathBuf,
    /// Its depth-1 entries, sorted by name.
    pub entries: Vec<RootEntry>,
}

/// What a build-dirs rule sees: one root's listing, the live process references and the
/// settings. No handle: a rule cannot touch the filesystem.
#[derive(Debug)]
pub struct BuildContext<'a> {
    /// The root being planned.
    pub listing: &'a RootListing,
    /// What live processes reference.
    pub processes: &'a ProcessRefs,
    /// Deletions earlier runs started and did not finish, in every root.
    pub interrupted: &'a [Interrupted],
    /// Settings.
    pub config: &'a BuildConfig,
}

impl BuildContext<'_> {
    /// A live process's reference to the entry `name` or to anything beneath it, under the
    /// root as named or as resolved.
    pub fn live_reference(&self, name: &str) -> Option<Reference> {
        let named = Path::new(&self.listing.root).join(name);
        let resolved = self.listing.canonical.join(name);
        self.processes
            .referencing(&named)
            .or_else(|| self.processes.referencing(&resolved))
    }

    /// The earlier run whose deletion of this very directory (same device and inode) was cut
    /// short, if any.
    pub fn interrupted_by(&self, e: &RootEntry) -> Option<&str> {
        self.interrupted
            .iter()
            .find(|i| {
                i.root == self.listing.root && i.path == e.name && i.dev == e.dev && i.ino == e.ino
            })
            .map(|i| i.run.as_str())
    }
}

/// An item a rule left, with its root.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RootSkipped {
    /// The absolute root.
    pub root: String,
    /// The item, relative to the root, and why.
    pub skipped: Skipped,
}

/// The result of planning the build-dirs pack.
#[derive(Debug, Default)]
pub struct BuildPlanned {
    /// The plan, bounded; every action names its `root`.
    pub plan: Plan,
    /// Items rules left on purpose, in root order.
    pub skipped: Vec<RootSkipped>,
    /// Whether the bound cut the plan.
    pub limit_reached: bool,
    /// Roots that could not be listed and items that could not be digested, each naming its
    /// path.
    pub errors: Vec<Problem>,
}

/// Lists one root's depth-1 entries.
pub fn list_root(root: &Root, label: &str) -> fsroot::Result<RootListing> {
    let mut entries = Vec::new();
    for e in root.list(Path::new(""))? {
        let Some(name) = e.name.to_str() else {
            continue;
        };
        let Some(stat) = root.stat(Path::new(&e.name))? else {
            continue; // gone since the listing
        };
        let has_git = (stat.kind == EntryKind::Dir).then(|| {
            root.stat(&Path::new(&e.name).join(".git"))
                .ok()
                .map(|s| s.is_some())
        });
        let mount_point = (stat.kind == EntryKind::Dir)
            .then(|| root.is_mount_point(Path::new(&e.name)).ok())
            .flatten();
        entries.push(RootEntry {
            name: name.to_owned(),
            kind: stat.kind,
            // Windows's stat carries no owner: its SID is read apart, for a directory only (B1
            // judges nothing else by its owner). One that cannot be read is unknown, never the
            // invoking user, so B1 spares the directory.
            owner: if stat.owner.is_known() || stat.kind != EntryKind::Dir {
                stat.owner
            } else {
                root.owner(Path::new(&e.name))
                    .unwrap_or_else(|_| fsroot::Owner::unknown())
            },
            mtime: stat.mtime,
            has_git: has_git.flatten(),
            dev: stat.id.volume(),
            ino: stat.id.index(),
            mode: stat.mode,
            mount_point,
        });
    }
    Ok(RootListing {
        root: label.to_owned(),
        canonical: root.canonical_anchor().to_path_buf(),
        entries,
    })
}

/// Plans the build-dirs rules over `roots` (each with the absolute name the plan gives it), in
/// root order, then registry order, then path. A root that cannot be listed is reported in
/// `errors` and the others are still planned.
pub fn plan_build_dirs(
    roots: &[(&str, &Root)],
    processes: &ProcessRefs,
    interrupted: &[Interrupted],
    rules: &[&dyn Rule<BuildDirs>],
    config: &BuildConfig,
) -> BuildPlanned {
    let _span = tracing::info_span!("plan_build_dirs").entered();
    let mut out = BuildPlanned::default();
    let mut ordered = Vec::new();
    for (label, root) in roots {
        let listing = match list_root(root, label) {
            Ok(l) => l,
            Err(e) => {
                out.errors.push(Problem::from(&e));
                continue;
            }
        };
        let cx = BuildContext {
            listing: &listing,
            processes,
            interrupted,
            config,
        };
        for rule in rules {
            let mut result = rule.plan(&cx);
            seal::order(&mut result.proposals);
            out.errors.extend(result.errors);
            out.skipped
                .extend(result.skipped.into_iter().map(|s| RootSkipped {
                    root: label.to_string(),
                    skipped: s,
                }));
            ordered.extend(result.proposals.into_iter().map(|p| Ordered {
                root,
                code: rule.code(),
                name: rule.name(),
                proposal: p,
            }));
        }
    }
    let sealed = seal::bound_and_seal(ordered, config.max_actions);
    out.plan = sealed.plan;
    out.limit_reached = sealed.limit_reached;
    out.errors.extend(sealed.errors);
    out
}
