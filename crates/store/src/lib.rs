//! The session store model: serde types of every JSON file Codewhale writes, and the
//! parallel scan of S into an [`Inventory`] that keeps ids, bindings and digests, never message
//! bodies.

pub mod cache;
mod fastdoc;
pub mod host;
pub mod ids;
pub mod inventory;
pub mod model;
pub mod progress;
pub mod rebuild;
pub mod recognize;
pub mod recover;
pub mod relpath;
pub mod scan;
pub mod time;
pub mod title;

pub use inventory::*;
pub use scan::{
    digest_of, judge_document, judge_thread, read_external, scan, scan_cached, scan_watched,
    scan_with, External,
};
pub use time::{Clock, Timestamp};
