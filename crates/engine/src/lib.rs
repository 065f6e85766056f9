//! The engine: the planners, over the kernel's [`Rule`] and [`Pack`] (re-exported here). The
//! sessions planner scans S through a read-only root, builds the reference set and
//! runs the rules in registry order with projection; the build-dirs planner (`build_dirs`)
//! lists each root. Both then order the actions deterministically, apply the bound and seal the
//! preconditions the same way (`seal`). Rules never touch the filesystem; a planner's only I/O
//! is its scan and the digests of directory preconditions, both through a `&Root`, which cannot
//! write.

pub mod admin;
mod build_dirs;
pub mod housekeeping;
pub mod interrupted;
pub mod judge;
pub mod liveness;
pub mod records;

pub use build_dirs::{
    list_root, plan_build_dirs, BuildConfig, BuildContext, BuildDirs, BuildPlanned, Interrupted,
    RootEntry, RootListing, RootSkipped,
};

use std::collections::BTreeSet;

use kernel::seal;
pub use kernel::{
    check_plan, count_actions, missing_page_section, planner_of, rule_for, Counts, Expect,
    NoCounts, Pack, PlanCheckError, Rule, RULE_PAGE_SECTIONS,
};

/// A proposal of the sessions pack: its effect is an [`Effect`] on the reference set.
pub type Proposal = kernel::Proposal<Effect>;
/// What a rule of the sessions pack returns; `C` is the pack's counters.
pub type RuleOutput<C> = kernel::RuleOutput<C, Effect>;

pub use fsroot::EntryKind;
/// A problem met on the way, carried to the report (what rules report beside their counters).
pub use fsroot::Problem;
use fsroot::Root;
use plan::{Plan, PlannedAction, Skipped};
use refset::ReferenceSet;
use store::{Inventory, Timestamp};

/// Settings a rule may read.
#[derive(Debug, Clone)]
pub struct Config {
    /// `--max-actions`.
    pub max_actions: usize,
    /// `--artifact-idle`, seconds.
    pub artifact_idle_secs: i64,
    /// The clock's instant for this run: the plan's `planned_at`, which every thread record
    /// the plan rewrites gets as `updated_at`.
    pub now: Timestamp,
    /// `$CODEWHALE_HOME`, read-only: its automations pin stores and its task threads name
    /// sessions. `None` reads nothing outside S.
    pub codewhale_home: Option<std::path::PathBuf>,
    /// Who watches the scan.
    pub progress: store::progress::ProgressSink,
    /// The directory of the verdict cache (`$XDG_CACHE_HOME/doctor`); `None` (`--no-cache`)
    /// neither reads nor writes one.
    pub cache_dir: Option<std::path::PathBuf>,
    /// A file changed less than this long (ns) before the scan is not kept in the cache
    /// ([`store::cache::RACY_MARGIN_NS`]; tests use less and wait as long after each edit).
    pub cache_racy_margin_ns: i64,
}

impl Config {
    /// The defaults of cli.md at instant `now`.
    pub fn new(now: Timestamp) -> Config {
        Config {
            max_actions: 500,
            artifact_idle_secs: 24 * 3600,
            now,
            codewhale_home: None,
            progress: store::progress::ProgressSink::silent(),
            cache_dir: None,
            cache_racy_margin_ns: store::cache::RACY_MARGIN_NS,
        }
    }
}

/// What a rule sees: the inventory, the reference set as projected through earlier rules'
/// actions, and the settings.
#[derive(Debug)]
pub struct Context<'a> {
    /// What the scan found.
    pub inventory: &'a Inventory,
    /// References, projected.
    pub refs: &'a ReferenceSet,
    /// Stores R3 may recover in: no document or checkpoint binds them, except documents of
    /// their own threads' ids (the R3 gate, rules.md Version 2).
    pub recoverable: &'a BTreeSet<String>,
    /// Settings.
    pub config: &'a Config,
}

impl Context<'_> {
    /// Whether `path` lies in a live session's directory or is a live session's document: its
    /// first component (or the stem of `<id>.json`) names a session whose lease is held.
    pub fn is_live_path(&self, path: &str) -> bool {
        let first = path.split('/').next().unwrap_or(path);
        let id = first.strip_suffix(".json").unwrap_or(first);
        self.refs.live_sessions.contains(id)
    }
}

/// The effect of a proposal on the reference set, for the rules after it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Effect {
    /// Nothing later rules look at changes.
    None,
    /// Document `id` is set aside.
    DocumentGone {
        /// Its id.
        id: String,
    },
    /// A thread record loses its binding.
    ThreadUnbound {
        /// Thread record path.
        thread: String,
    },
    /// A document `id` now exists, binds `store`, and the thread is bound to it.
    Recovered {
        /// New document id.
        id: String,
        /// The store it binds.
        store: String,
        /// Thread record path.
        thread: String,
    },
}

/// The sessions pack: its rules see the inventory and the projected reference set
/// ([`Context`]) and move the counters `C`, the summary the sessions pack defines.
pub struct Sessions<C>(std::marker::PhantomData<fn() -> C>);

impl<C: Counts> Pack for Sessions<C> {
    const NAME: &'static str = "sessions";
    type Context<'a> = Context<'a>;
    type Counts = C;
    type Effect = Effect;
    /// The set-asides of interrupted writes and the finishes of interrupted store moves.
    fn accepts_own(a: &PlannedAction) -> bool {
        housekeeping::accepts(a) || interrupted::accepts(a)
    }
}

/// The result of planning the sessions pack, whose counters are `C`.
#[derive(Debug, Default)]
pub struct Planned<C> {
    /// The plan, bounded.
    pub plan: Plan,
    /// Items skipped by rules.
    pub skipped: Vec<Skipped>,
    /// The rules' counters (actions are counted separately, [`count_actions`]).
    pub counts: C,
    /// Errors met, each naming its path: the rules', the items that could not be digested, the
    /// scan's, and the housekeeping's.
    pub errors: Vec<Problem>,
    /// Whether the bound cut the plan.
    pub limit_reached: bool,
    /// How many actions each rule proposed, before the bound, in registry order.
    pub proposed: Vec<(&'static str, u64)>,
    /// The session documents of S (top-level `<id>.json` files), whatever their verdict, and
    /// how many of them the app can read.
    pub documents: DocumentCount,
    /// Ignored entries with why (the JSON output lists the paths, the human report both).
    pub ignored_why: Vec<(String, &'static str)>,
    /// Bindings that bind nothing, for the report.
    pub unusable_bindings: Vec<refset::UnusableBinding>,
}

/// How many session documents a store holds.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct DocumentCount {
    /// Every top-level `<id>.json` document, whatever its verdict.
    pub all: u64,
    /// Those the app reads (readable, or of content or a schema newer than the doctor knows).
    pub readable: u64,
}

/// Scans S (and, read-only, what `$CODEWHALE_HOME` holds that names sessions or pins stores)
/// and plans the given rules, in order.
pub fn plan_sessions<C: Counts>(
    root: &Root,
    rules: &[&dyn Rule<Sessions<C>>],
    config: &Config,
) -> fsroot::Result<Planned<C>> {
    let _span = tracing::info_span!("plan_sessions").entered();
    let (external, external_errors) = store::read_external(config.codewhale_home.as_deref());
    let started = std::time::Instant::now();
    let mut cache = config.cache_dir.as_deref().map(|dir| {
        let c = store::cache::VerdictCache::open(dir, root, config.cache_racy_margin_ns);
        tracing::info!(
            entries = c.stats().loaded,
            ms = started.elapsed().as_millis() as u64,
            "read the verdict cache"
        );
        c
    });
    let mut inventory = store::scan_cached(root, &external, &config.progress, cache.as_mut())?;
    // Written on a thread of its own while the rest is planned; joined before returning.
    let saving = cache.map(|c| std::thread::spawn(move || save_cache(&c)));
    tracing::info!(
        documents = inventory.documents.len(),
        session_dirs = inventory.session_dirs.len(),
        ms = started.elapsed().as_millis() as u64,
        "scanned the store"
    );
    inventory.errors.extend(external_errors);
    let anchors = [root.anchor(), root.canonical_anchor()];
    let refs = ReferenceSet::build(&inventory, &anchors);
    let recoverable = recoverable_stores(&inventory, &refs);
    store::recover::prepare(
        root,
        &mut inventory,
        &recoverable,
        &config.now.to_string(),
        &|id| refs.known_sessions.contains(id),
    );
    let mut planned = plan_inventory(root, &inventory, refs, &recoverable, rules, config);
    // A store a kill left split is finished into the run that began moving it: the rules'
    // actions on its remainder (which they take for a store of its own) are dropped.
    let finishing = interrupted::plan_store_moves(root, &|code| {
        rules
            .iter()
            .find(|r| r.code() == code)
            .map_or_else(String::new, |r| r.name().to_owned())
    });
    if !finishing.is_empty() {
        planned.plan.actions.retain(|a| {
            !finishing
                .iter()
                .filter_map(interrupted::finishing)
                .any(|store| a.path == store || a.path.starts_with(&format!("{store}/")))
        });
        housekeeping::prepend(&mut planned.plan, finishing);
    }
    let temps = housekeeping::plan_interrupted_writes(
        root,
        &inventory.interrupted_writes,
        &mut planned.errors,
    );
    housekeeping::prepend(&mut planned.plan, temps);
    tracing::info!(
        documents = planned.documents.all,
        actions = planned.plan.actions.len(),
        deferred = planned.plan.deferred,
        ms = started.elapsed().as_millis() as u64,
        "planned the sessions pack"
    );
    if let Some(t) = saving {
        if t.join().is_err() {
            tracing::warn!("the thread writing the verdict cache panicked");
        }
    }
    Ok(planned)
}

/// Writes what the scan kept in the verdict cache. A cache is an optimisation: one that cannot
/// be written is logged, and the run goes on as if there were none.
fn save_cache(cache: &store::cache::VerdictCache) {
    let stats = cache.stats();
    if let Some(why) = &cache.ignored_because {
        tracing::info!(file = %cache.file().display(), "verdict cache not used: {why}");
    }
    let written = std::time::Instant::now();
    match cache.save() {
        Ok(store::cache::Saved::Unchanged) => tracing::info!(
            file = %cache.file().display(),
            hits = stats.hits,
            "the verdict cache already holds what this scan kept: not written"
        ),
        Ok(store::cache::Saved::Written) => tracing::info!(
            file = %cache.file().display(),
            hits = stats.hits,
            misses = stats.misses,
            ms = written.elapsed().as_millis() as u64,
            "wrote the verdict cache"
        ),
        Err(e) => tracing::warn!("cannot write the verdict cache: {e}"),
    }
}

/// The R3 gate (rules.md, Version 2): stores nobody holds, with no newer-schema thread, that no
/// document or checkpoint binds other than one named by the id of a thread in the store.
pub fn recoverable_stores(inventory: &Inventory, refs: &ReferenceSet) -> BTreeSet<String> {
    inventory
        .stores()
        .filter(|s| !s.held && !s.newer_thread)
        .filter(|s| {
            let own: BTreeSet<&str> = s.threads.iter().map(|t| t.id.as_str()).collect();
            !refs.is_bound_except(&s.path, &own)
        })
        .map(|s| s.path.clone())
        .collect()
}

/// Plans the rules over an existing inventory and reference set.
pub fn plan_inventory<C: Counts>(
    root: &Root,
    inventory: &Inventory,
    mut refs: ReferenceSet,
    recoverable: &BTreeSet<String>,
    rules: &[&dyn Rule<Sessions<C>>],
    config: &Config,
) -> Planned<C> {
    let mut out = Planned {
        plan: Plan::default(),
        skipped: Vec::new(),
        counts: C::default(),
        errors: Vec::new(),
        limit_reached: false,
        proposed: Vec::new(),
        documents: DocumentCount {
            all: inventory.documents.len() as u64,
            readable: inventory
                .documents
                .iter()
                .filter(|d| {
                    matches!(
                        d.state,
                        store::DocState::Readable { .. }
                            | store::DocState::UnknownContent { .. }
                            | store::DocState::NewerSchema { .. }
                    )
                })
                .count() as u64,
        },
        ignored_why: Vec::new(),
        unusable_bindings: Vec::new(),
    };
    let mut ordered = Vec::new();
    for rule in rules {
        let cx = Context {
            inventory,
            refs: &refs,
            recoverable,
            config,
        };
        let mut result = rule.plan(&cx);
        seal::order(&mut result.proposals);
        out.proposed
            .push((rule.code(), result.proposals.len() as u64));
        for p in &result.proposals {
            project(&mut refs, inventory, &p.effect);
        }
        out.counts += &result.counts;
        out.errors.extend(result.errors);
        out.skipped.extend(result.skipped);
        ordered.extend(result.proposals.into_iter().map(|p| seal::Ordered {
            root,
            code: rule.code(),
            name: rule.name(),
            proposal: p,
        }));
    }
    let sealed = seal::bound_and_seal(ordered, config.max_actions);
    // Items that could not be digested could not be guarded: not planned, reported.
    out.errors.extend(sealed.errors);
    out.plan = sealed.plan;
    out.plan.planned_at = Some(config.now.to_string());
    out.limit_reached = sealed.limit_reached;
    out.errors.extend(inventory.errors.iter().cloned());
    out.ignored_why = inventory
        .ignored
        .iter()
        .map(|i| (i.path.clone(), i.why))
        .collect();
    out.unusable_bindings = refs.unusable_bindings.clone();
    out
}

fn project(refs: &mut ReferenceSet, inventory: &Inventory, effect: &Effect) {
    match effect {
        Effect::None => {}
        Effect::DocumentGone { id } => refs.project_document_set_aside(id, &inventory.checkpoints),
        Effect::ThreadUnbound { thread } => refs.project_thread_unbound(thread),
        Effect::Recovered { id, store, thread } => refs.project_recovered(id, store, thread),
    }
}
