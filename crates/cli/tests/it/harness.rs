//! The one fixture harness: each case of a pack (`fixtures/<pack>/<case>/`) runs the same way,
//! with one snapshot `snapshots/<pack>/<case>.snap`. A [`Pack`] (`fixtures.rs`: sessions,
//! `build_dirs.rs`: build-dirs) sets a case up, runs the doctor and adds its own sections and
//! checks. [`fixture_cases`] owns the rest: `case.json`'s common keys ([`Head`]); the runs (a dry
//! run, then per real run the case takes: the real run and a dry run); the snapshot; and what a
//! snapshot cannot show: no dry run changed the tree, each dry run planned exactly what the next
//! real run applied, every action was applied (unless the pack allows skips), only the last plan
//! is empty (a repair run twice finds nothing the second time), and the trees the pack names
//! beside the tree never changed.

use std::path::{Path, PathBuf};

use plan::{Outcome, OutcomeKind, Plan};
use serde::de::DeserializeOwned;
use serde::Deserialize;
use serde_json::{Map, Value};
use store::Clock;

use crate::common::case::{apply_mtimes, parse_time, MtimeSpec, SymlinkSpec};
use crate::common::{copy_tree, fixtures_dir, sha256_hex, slashed, tree, Node, Redactions, Tree};

/// The clock of a case that names none.
const DEFAULT_NOW: &str = "2026-11-29T12:00:00Z";
/// How headings and messages number the runs: `dry run`, `second dry run`, `third dry run`.
const NTH: [&str; 3] = ["", "second ", "third "];

/// The keys every `case.json` may have; the pack's [`Pack::Case`] reads the others.
#[derive(Deserialize)]
struct Head {
    /// What the case shows (the snapshot's description).
    description: String,
    /// The rule the case is about: every action of the first plan must be this rule's.
    rule: Option<String>,
    /// `DOCTOR_NOW` for every run of the case.
    doctor_now: Option<String>,
    /// Directories created in the root after copying it (git cannot store empty ones).
    #[serde(default)]
    empty_dirs: Vec<String>,
    /// Symlinks created in the root after copying it. `[OUTSIDE]` in a target stands for
    /// `<tmp>/outside`, beside the root.
    #[serde(default)]
    symlinks: Vec<SymlinkSpec>,
    /// Modification times, set recursively on each path after everything else.
    #[serde(default)]
    mtimes: Vec<MtimeSpec>,
    /// The other keys, read by the pack.
    #[serde(flatten)]
    rest: Map<String, Value>,
}

/// Sections of a snapshot: heading, text.
pub type Sections = Vec<(&'static str, String)>;

/// What differs between the packs' cases.
pub trait Pack: Sized {
    /// The pack's folder under `fixtures/` and under `snapshots/`.
    const NAME: &'static str;
    /// The fewest cases the pack has.
    const MIN_CASES: usize;
    /// Where the temporary directory of a case is made.
    const TEMP_IN: &'static str;
    /// The tree the doctor acts on: its folder in a case, and the name of its copy, the root, in
    /// the temporary directory.
    const ROOT: (&'static str, &'static str);
    /// The keys of `case.json` besides [`Head`]'s.
    type Case: DeserializeOwned;
    type Report: Report;

    /// Sets the case (its folder `dir`) up beside and in the `root` the harness copied, with
    /// what it starts running for as long as the value lives; `Err` says why it cannot run here.
    fn set_up(case: Self::Case, dir: &Path, root: &Path) -> Result<Self, &'static str>;
    /// Trees beside the root that no run may change, each with what its failure says.
    fn untouched(&self) -> Vec<(PathBuf, &'static str)>;
    /// How many real runs the case takes to converge.
    fn real_runs(&self) -> usize {
        1
    }
    fn run(&self, dry_run: bool, clock: Clock) -> Self::Report;
    /// Given every run id, and the trees before the first real run and after each.
    fn redactions(&self, runs: &[&str], trees: &[&Tree]) -> Redactions;
    /// A report or a plan as the snapshot shows it.
    fn show(&self, red: &Redactions, text: &str) -> String {
        red.apply(text)
    }
    /// How the tree listing shows the file at `path` (redacted), when not by size and hash.
    fn listed_as(&self, _path: &str, _bytes: &[u8]) -> Option<String> {
        None
    }
    /// The pack's sections after the tree the first real run (`real`) left.
    fn sections(
        &self,
        red: &Redactions,
        before: &Tree,
        after: &Tree,
        real: &Self::Report,
    ) -> Sections;
    /// Whether the case's files are the same bytes on every OS (none holds S's absolute path):
    /// only then is its snapshot compared on Windows.
    fn same_bytes_everywhere(&self) -> bool {
        true
    }
    /// Whether every action of a real run must be applied (none skipped at apply time).
    fn all_applied(&self) -> bool {
        true
    }
    /// The pack's checks of real run `n` (from 0), which turned `before` into `after`.
    fn check_real_run(&self, n: usize, before: &Tree, after: &Tree, real: &Self::Report);
}

/// What the harness reads of a run's report.
pub trait Report {
    fn run_id(&self) -> &str;
    fn plan(&self) -> &Plan;
    fn outcomes(&self) -> &[Outcome];
    fn human(&self) -> String;
}

macro_rules! report {
    ($($t:ty),*) => {$(impl Report for $t {
        fn run_id(&self) -> &str { &self.run }
        fn plan(&self) -> &Plan { &self.plan }
        fn outcomes(&self) -> &[Outcome] { &self.outcomes }
        fn human(&self) -> String { self.render_human() }
    })*};
}
report!(doctor::RepairReport, doctor::sweep::SweepReport);

/// Runs every case of the pack `P`, each even when another fails, so that all new snapshots are
/// written at once.
pub fn fixture_cases<P: Pack>() {
    let root = fixtures_dir().join(P::NAME);
    let mut cases: Vec<(String, PathBuf)> = std::fs::read_dir(&root)
        .unwrap_or_else(|e| panic!("{}: {e}", root.display()))
        .map(|e| e.unwrap())
        .filter(|e| e.file_type().unwrap().is_dir())
        .map(|e| (e.file_name().to_string_lossy().into_owned(), e.path()))
        .collect();
    cases.sort();
    let (n, min, root) = (cases.len(), P::MIN_CASES, root.display());
    assert!(n >= min, "{n} cases under {root}, fewer than {min}");
    let failed: Vec<&str> = cases
        .iter()
        .filter(|(name, dir)| std::panic::catch_unwind(|| run_case::<P>(name, dir)).is_err())
        .map(|(name, _)| name.as_str())
        .collect();
    assert!(failed.is_empty(), "{} cases failed: {failed:?}", P::NAME);
}

/// `case.json` of `dir`, as the harness's keys and the pack's.
fn read_case<C: DeserializeOwned>(dir: &Path) -> (Head, C) {
    let path = dir.join("case.json");
    let read = || -> Result<(Head, C), Box<dyn std::error::Error>> {
        let mut head: Head = serde_json::from_slice(&std::fs::read(&path)?)?;
        let case = serde_json::from_value(std::mem::take(&mut head.rest).into())?;
        Ok((head, case))
    };
    read().unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn run_case<P: Pack>(name: &str, dir: &Path) {
    let (head, case) = read_case(dir);
    // No symlink in a tree a Windows test works on: Wine's remove_dir_all follows one made from
    // Linux and deletes what it points to, and Wine cannot make Windows links at all.
    if cfg!(windows) && !head.symlinks.is_empty() {
        return eprintln!("{name}: skipped on Windows: the case holds symlinks");
    }
    // On Windows the OS temp dir: `TEMP_IN` is a Unix path.
    let temp_in = if cfg!(windows) {
        std::env::temp_dir()
    } else {
        PathBuf::from(P::TEMP_IN)
    };
    let tmp = tempfile::tempdir_in(temp_in).unwrap();
    let root = &tmp.path().join(P::ROOT.1);
    copy_tree(&dir.join(P::ROOT.0), root);
    for d in &head.empty_dirs {
        std::fs::create_dir_all(root.join(d)).unwrap();
    }
    let outside = tmp.path().join("outside");
    #[cfg(unix)]
    for link in &head.symlinks {
        let target = link.target.replace("[OUTSIDE]", &outside.to_string_lossy());
        std::os::unix::fs::symlink(target, root.join(&link.path)).unwrap();
    }
    let pack = match P::set_up(case, dir, root) {
        Ok(pack) => pack,
        Err(why) => return eprintln!("{name}: skipped: {why}"),
    };
    apply_mtimes(&head.mtimes, root);
    let now = head.doctor_now.as_deref().unwrap_or(DEFAULT_NOW);
    let clock = Clock::Fixed(parse_time(now));
    let untouched = pack.untouched();
    let untouched_before: Vec<Tree> = untouched.iter().map(|(path, _)| tree(path)).collect();
    let before = tree(root);
    let dry = pack.run(true, clock);
    assert_eq!(tree(root), before, "the dry run changed the tree");
    // Each real run, the tree it left and the dry run after it.
    let rounds: Vec<(P::Report, Tree, P::Report)> = (1..=pack.real_runs())
        .map(|n| {
            let (real, after) = (pack.run(false, clock), tree(root));
            let next = pack.run(true, clock);
            assert_eq!(tree(root), after, "the {}dry run changed the tree", NTH[n]);
            (real, after, next)
        })
        .collect();

    let runs: Vec<&str> = std::iter::once(&dry)
        .chain(rounds.iter().flat_map(|(real, _, next)| [real, next]))
        .map(Report::run_id)
        .collect();
    let trees: Vec<&Tree> = std::iter::once(&before)
        .chain(rounds.iter().map(|(_, after, _)| after))
        .collect();
    let red = pack.redactions(&runs, &trees);
    let show = |text: &str| pack.show(&red, text);
    let plan = |report: &P::Report| show(&pretty(report.plan())) + "\n";
    let mut snap = String::new();
    let mut section = |heading: &str, text: String| {
        let gap = if snap.is_empty() { "" } else { "\n" };
        snap += &format!("{gap}== {heading} ==\n{text}");
    };
    section("dry run: human", show(&dry.human()));
    section("dry run: plan", plan(&dry));
    for (n, (real, after, next)) in rounds.iter().enumerate() {
        section(&format!("{}real run: human", NTH[n]), show(&real.human()));
        if n == 0 {
            section("tree after the real run", render_tree(&pack, after, &red));
            for (heading, text) in pack.sections(&red, &before, after, real) {
                section(heading, text);
            }
        }
        section(&format!("{}dry run: plan", NTH[n + 1]), plan(next));
    }
    let mut settings = insta::Settings::clone_current();
    settings.set_snapshot_path(format!("snapshots/{}", P::NAME));
    settings.set_prepend_module_to_snapshot(false);
    settings.set_description(head.description);
    settings.set_omit_expression(true);
    if cfg!(windows) && !pack.same_bytes_everywhere() {
        // The case's files hold S's absolute path, whose length differs on Windows, and so do
        // the byte counts the snapshot shows; every other check below still runs.
        eprintln!("{name}: snapshot not compared on Windows: the store holds S's absolute path");
    } else {
        settings.bind(|| insta::assert_snapshot!(name, snap));
    }

    if let Some(rule) = &head.rule {
        for a in &dry.plan().actions {
            assert_eq!(&a.rule, rule, "{} is planned by another rule", a.path);
        }
    }
    let (mut planned, mut before) = (dry.plan(), &before);
    for (n, (real, after, next)) in rounds.iter().enumerate() {
        let (this, then, done) = (NTH[n], NTH[n + 1], real.plan());
        assert_eq!(
            (&planned.actions, planned.deferred),
            (&done.actions, done.deferred),
            "the {this}dry run must plan (and defer) exactly what the {this}real run applies"
        );
        let outcomes = real.outcomes();
        assert_eq!(outcomes.len(), done.actions.len(), "one outcome per action");
        for (o, a) in outcomes.iter().zip(&done.actions) {
            let (applied, seq, path) = (o.outcome == OutcomeKind::Applied, a.seq, &a.path);
            assert!(
                applied || !pack.all_applied(),
                "action {seq} on {path}: {o:?}"
            );
        }
        pack.check_real_run(n, before, after, real);
        (planned, before) = (next.plan(), after);
        let (last, acts) = (n + 1 == rounds.len(), !planned.actions.is_empty());
        assert!(last || acts, "the {then}run was expected to act");
    }
    let (then, left) = (NTH[rounds.len()], &planned.actions);
    assert!(
        left.is_empty(),
        "a {then}run must find nothing, but plans {left:#?}"
    );
    for ((path, why), was) in untouched.iter().zip(&untouched_before) {
        assert_eq!(&tree(path), was, "{why}");
    }
    // The temporary directory must be removable once the case (and what it started) is gone:
    // on Windows a handle the doctor leaked inside it would make this fail.
    drop(pack);
    let at = tmp.path().to_path_buf();
    tmp.close()
        .unwrap_or_else(|e| panic!("{name}: removing {}: {e}", at.display()));
}

/// The tree as the snapshot lists it: each path (redacted), with `dir`, a symlink's target
/// (redacted), what the pack says of a file ([`Pack::listed_as`]) or else its size and hash (of
/// its bytes as shown redacted, when they hold a redacted value).
fn render_tree<P: Pack>(pack: &P, t: &Tree, red: &Redactions) -> String {
    let rows: Vec<(String, String)> = t
        .iter()
        .map(|(path, node)| {
            let path = red.apply(&slashed(path));
            let what = match node {
                Node::Dir => "dir".to_owned(),
                Node::File(b) => pack.listed_as(&path, b).unwrap_or_else(|| {
                    let b = std::str::from_utf8(b).map_or(b.clone(), |t| red.apply(t).into());
                    format!("file {:>6}  {}", b.len(), &sha256_hex(&b)[..12])
                }),
                Node::Symlink(to) => format!("symlink -> {}", red.apply(&to.to_string_lossy())),
                Node::Other => "other".to_owned(),
            };
            (path, what)
        })
        .collect();
    let width = rows.iter().map(|(p, _)| p.len()).max().unwrap_or(0);
    let out: String = rows
        .iter()
        .map(|(path, what)| format!("{path:<width$}  {what}\n"))
        .collect();
    if out.is_empty() {
        "(empty)\n".to_owned()
    } else {
        out
    }
}

/// `v` as pretty JSON.
pub fn pretty(v: &impl serde::Serialize) -> String {
    serde_json::to_string_pretty(v).unwrap()
}
