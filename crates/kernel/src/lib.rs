//! The kernel every pack is built on, which knows no pack and no store format: the one clock
//! and its timestamps ([`time`]), progress reporting ([`progress`]) and run ids ([`RunId`]).

pub mod progress;
mod run_id;
pub mod time;

pub use run_id::RunId;
pub use time::{Clock, Timestamp};
