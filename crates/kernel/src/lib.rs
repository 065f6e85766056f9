//! The kernel every pack is built on, which knows no pack and no store format: rules and their
//! packs ([`Rule`], [`Pack`], the registry's answers), the planners' shared tail ([`seal`]: plan
//! order, the bound, the preconditions), the one clock and its timestamps ([`time`]), progress
//! reporting ([`progress`]), run ids ([`RunId`]), and the bounded executor every pack's target
//! plugs into ([`execute`], with its [`Receipt`]s).

pub mod execute;
pub mod interrupt;
pub mod progress;
mod receipt;
mod rule;
mod run_id;
pub mod seal;
pub mod time;

pub use receipt::Receipt;
pub use rule::{
    check_plan, count_actions, missing_page_section, planner_of, rule_for, Counts, Expect,
    NoCounts, Pack, PlanCheckError, Proposal, Rule, RuleOutput, RULE_PAGE_SECTIONS,
};
pub use run_id::RunId;
pub use time::{Clock, Timestamp};
