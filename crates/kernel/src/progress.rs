//! Progress of a long phase (scanning a store, applying a plan), reported to whoever watches:
//! a bar on a terminal, `progress` lines of `json-lines`, or nobody ([`ProgressSink::silent`]).
//! Reporting never changes what a run does.

use std::fmt;
use std::sync::Arc;

/// Whoever watches a run's progress. Called from several threads at once.
pub trait Progress: Send + Sync {
    /// A phase starts, with `total` items to do.
    fn start(&self, phase: &'static str, total: u64);
    /// `n` more items of the current phase are done.
    fn advance(&self, n: u64);
}

struct Silent;

impl Progress for Silent {
    fn start(&self, _: &'static str, _: u64) {}
    fn advance(&self, _: u64) {}
}

/// A shared handle on a [`Progress`], which options carry.
#[derive(Clone)]
pub struct ProgressSink(Arc<dyn Progress>);

impl ProgressSink {
    /// Reports to `progress`.
    pub fn new(progress: Arc<dyn Progress>) -> ProgressSink {
        ProgressSink(progress)
    }

    /// Reports to nobody.
    pub fn silent() -> ProgressSink {
        ProgressSink(Arc::new(Silent))
    }

    /// A phase starts, with `total` items to do.
    pub fn start(&self, phase: &'static str, total: u64) {
        self.0.start(phase, total);
    }

    /// One more item of the current phase is done.
    pub fn tick(&self) {
        self.0.advance(1);
    }
}

impl Default for ProgressSink {
    fn default() -> ProgressSink {
        ProgressSink::silent()
    }
}

impl fmt::Debug for ProgressSink {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("ProgressSink")
    }
}
