//! The sessions rule pack and its registry: one line per rule, in planning order.

mod r1_unreadable_document;
mod r2_unbound_empty_store;
mod r3_orphan_thread;
mod r4_dangling_thread_binding;
mod r5_orphan_artifact_dir;

pub use r1_unreadable_document::UnreadableDocument;
pub use r2_unbound_empty_store::UnboundEmptyStore;
pub use r3_orphan_thread::OrphanThread;
pub use r4_dangling_thread_binding::DanglingThreadBinding;
pub use r5_orphan_artifact_dir::OrphanArtifactDir;

use engine::Rule;

/// The sessions pack, in planning order (rules.md: R1, R4, R3, R2, R5).
pub static RULES: &[&dyn Rule] = &[
    &UnreadableDocument,
    &DanglingThreadBinding,
    &OrphanThread,
    &UnboundEmptyStore,
    &OrphanArtifactDir,
];
