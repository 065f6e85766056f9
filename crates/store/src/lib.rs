//! The session store model: serde types of every JSON file, the published schemas, and the
//! parallel scan of S into an [`Inventory`] that keeps ids, bindings and digests, never message
//! bodies.

pub mod host;
pub mod ids;
pub mod inventory;
pub mod model;
pub mod recover;
pub mod scan;
pub mod schema;
pub mod time;

pub use inventory::*;
pub use scan::{digest_of, judge_document, judge_thread, scan};
pub use time::{Clock, Timestamp};
