//! The session store model: serde types of every JSON file Codewhale writes, and the
//! parallel scan of S into an [`Inventory`] that keeps ids, bindings and digests, never message
//! bodies.

pub mod cache;
pub mod host;
pub mod ids;
pub mod inventory;
pub mod judge;
pub mod model;
mod names;
pub mod rebuild;
pub mod recognize;
pub mod recover;
pub mod relpath;
pub mod scan;
pub mod title;

pub use inventory::*;
pub use judge::{digest_of, judge_document, judge_thread};
pub use scan::{read_external, scan, scan_cached, scan_watched, scan_with, External};
// The clock, timestamps and progress are the kernel's; the store's paths name them too.
pub use kernel::{progress, time, Clock, Timestamp};
