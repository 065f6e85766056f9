//! Rules and their packs, as every pack has them: the pure [`Rule`] trait, generic over its
//! [`Pack`] (what its rules read, the counters they move, the effect one rule's proposal has on
//! the next), what a rule returns, a rule's page, and what a pack's registry answers: the rule
//! of a code, the planner of an action, the check of a saved plan and the counts of its
//! actions.

use fsroot::Problem;
use plan::{Action, ActionKind, ItemKind, Plan, PlannedAction, Precondition, Skipped};

/// A precondition a rule asks for: files carry their digest from the scan; directories are
/// digested by the planner after the bound, so only planned directories are walked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Expect {
    /// A known precondition.
    Known(Precondition),
    /// The tree digest of the action's path, taken at planning time.
    TreeOfPath,
}

/// An action as a rule proposes it, before ordering and sealing; `E` is its pack's effect on
/// what later rules see ([`Pack::Effect`]).
#[derive(Debug, Clone, PartialEq)]
pub struct Proposal<E> {
    /// What it does, with the fields its kind needs.
    pub action: Action,
    /// The item, relative to S (to the root, for B1).
    pub path: String,
    /// Why.
    pub reason: String,
    /// What it expects.
    pub expect: Expect,
    /// How it changes what later rules of its pack see.
    pub effect: E,
}

/// What one rule returns; `C` is its pack's counters, `E` its effect.
#[derive(Debug)]
pub struct RuleOutput<C, E> {
    /// Proposed actions, in any order.
    pub proposals: Vec<Proposal<E>>,
    /// Items deliberately left, with why (JSON `skipped`).
    pub skipped: Vec<Skipped>,
    /// Counters the rule contributes to the pack's summary (kept items and the like).
    pub counts: C,
    /// Errors the rule reports, each naming its path.
    pub errors: Vec<Problem>,
}

impl<C: Default, E> Default for RuleOutput<C, E> {
    fn default() -> Self {
        RuleOutput {
            proposals: Vec::new(),
            skipped: Vec::new(),
            counts: C::default(),
            errors: Vec::new(),
        }
    }
}

/// The counters of a pack's summary: they start at zero and the parts of a run (each rule,
/// the applied actions) merge with `+=`.
pub trait Counts: Default + for<'c> std::ops::AddAssign<&'c Self> {}

impl<C: Default + for<'c> std::ops::AddAssign<&'c C>> Counts for C {}

/// The counters of a pack that counts nothing beyond its plan.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct NoCounts;

impl std::ops::AddAssign<&NoCounts> for NoCounts {
    fn add_assign(&mut self, _: &NoCounts) {}
}

/// A rule pack, as the kernel sees it: what its rules are given to read, the counters they
/// move, and how one rule's proposal changes what the rules after it see.
pub trait Pack {
    /// The pack's name (`sessions`, `build-dirs`): its directory under `rules/` and
    /// `fixtures/`.
    const NAME: &'static str;
    /// What a rule of the pack sees.
    type Context<'a>;
    /// The counters of the pack's summary, which the pack owns.
    type Counts: Counts;
    /// What a proposal changes for the rules after it (the sessions pack projects its
    /// reference set; a pack whose rules are independent has `()`).
    type Effect;
    /// Whether `a` is an action the pack plans itself, outside its rules (its housekeeping):
    /// [`check_plan`] accepts those too. None by default.
    fn accepts_own(_a: &PlannedAction) -> bool {
        false
    }
}

/// The sections of every rule's page ([`Rule::doc`]: what `doctor rule` prints and
/// `docs/rules/` holds), in the order a reader finds them.
pub const RULE_PAGE_SECTIONS: [&str; 4] = [
    "## What it finds",
    "## What it does",
    "## What it never touches",
    "## Example",
];

/// The first of the [`RULE_PAGE_SECTIONS`] a rule page lacks, or has out of order.
pub fn missing_page_section(doc: &str) -> Option<&'static str> {
    let mut from = 0;
    for h in RULE_PAGE_SECTIONS {
        match doc[from..].find(h) {
            Some(i) => from += i + h.len(),
            None => return Some(h),
        }
    }
    None
}

/// A rule of pack `P`: what the pack gives it in, proposals out. No I/O.
///
/// A rule declares everything about itself: its code and name, its page, the kinds of action it
/// plans, the check that an action of a saved plan is one it could have planned, and the
/// summary counter its actions move. A pack's registry (`RULES`) lists its rules; the
/// `--apply-plan` check ([`check_plan`]), the counts ([`count_actions`]) and the rule pages
/// (`cargo xtask docs`) all go through it.
pub trait Rule<P: Pack>: Send + Sync {
    /// `R1`.
    fn code(&self) -> &'static str;
    /// `unreadable-document`.
    fn name(&self) -> &'static str;
    /// The rule's page in Markdown, with the [`RULE_PAGE_SECTIONS`] in order:
    /// `docs/rules/<code>.md` is generated from it.
    fn doc(&self) -> &'static str;
    /// The `(action, item kind)` pairs the rule plans.
    fn plans(&self) -> &'static [(ActionKind, Option<ItemKind>)];
    /// Whether `a`, an action of one of the kinds in [`Rule::plans`], is on a path (and with a
    /// document) of the shape this rule acts on. A saved plan's actions are checked with it
    /// before anything is applied.
    fn accepts(&self, a: &PlannedAction) -> bool;
    /// Counts an applied action of this rule (or, in a dry run, a planned one) in the summary
    /// field it moves, if any.
    fn count(&self, _a: &PlannedAction, _counts: &mut P::Counts) {}
    /// Proposes actions.
    fn plan(&self, cx: &P::Context<'_>) -> RuleOutput<P::Counts, P::Effect>;
}

/// The rule of `rules` whose code is `code`.
pub fn rule_for<'r, P: Pack>(rules: &[&'r dyn Rule<P>], code: &str) -> Option<&'r dyn Rule<P>> {
    rules.iter().copied().find(|r| r.code() == code)
}

/// The first rule of `rules` that plans `action` on items of `kind`.
pub fn planner_of<P: Pack>(
    rules: &[&dyn Rule<P>],
    action: ActionKind,
    kind: Option<ItemKind>,
) -> Option<&'static str> {
    rules
        .iter()
        .find(|r| r.plans().contains(&(action, kind)))
        .map(|r| r.code())
}

/// Checks every action of a saved plan against the pack's registry: the pack plans it itself
/// ([`Pack::accepts_own`]), or its rule is in the pack, plans that kind of action, and accepts
/// its path. The error names the first offending action.
pub fn check_plan<P: Pack>(rules: &[&dyn Rule<P>], plan: &Plan) -> Result<(), PlanCheckError> {
    for a in &plan.actions {
        let fits = P::accepts_own(a)
            || rule_for(rules, &a.rule).is_some_and(|r| {
                r.plans().contains(&(a.action.kind(), a.action.item())) && r.accepts(a)
            });
        if !fits {
            return Err(PlanCheckError {
                seq: a.seq,
                rule: a.rule.clone(),
                kind: a.action.kind(),
                path: a.path.clone(),
                pack: P::NAME,
            });
        }
    }
    Ok(())
}

/// A saved plan's action that its pack does not plan ([`check_plan`]).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "action {seq} ({rule} {kind:?} {path}): not an action the {pack} pack plans on a path of that \
     shape"
)]
pub struct PlanCheckError {
    /// The action's `seq`.
    pub seq: u64,
    /// The rule code it names.
    pub rule: String,
    /// What it would do.
    pub kind: ActionKind,
    /// The path it acts on, relative to the root.
    pub path: String,
    /// The pack that refused it.
    pub pack: &'static str,
}

/// The summary counts of `actions` (applied, or planned in a dry run), each counted by its
/// rule.
pub fn count_actions<'a, P: Pack>(
    rules: &[&dyn Rule<P>],
    actions: impl IntoIterator<Item = &'a PlannedAction>,
) -> P::Counts {
    let mut counts = P::Counts::default();
    for a in actions {
        if let Some(rule) = rule_for(rules, &a.rule) {
            rule.count(a, &mut counts);
        }
    }
    counts
}

#[cfg(test)]
mod tests {
    use super::missing_page_section;

    #[test]
    fn a_page_needs_every_section_in_order() {
        let whole =
            "## What it finds\na\n## What it does\nb\n## What it never touches\nc\n## Example\nd";
        assert_eq!(missing_page_section(whole), None);
        assert_eq!(missing_page_section(""), Some("## What it finds"));
        let no_example = whole.replace("## Example", "## Sample");
        assert_eq!(missing_page_section(&no_example), Some("## Example"));
        let swapped = "## What it does\n## What it finds\n## What it never touches\n## Example";
        assert_eq!(missing_page_section(swapped), Some("## What it does"));
    }
}
