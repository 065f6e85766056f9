//! The sessions rule pack and its registry: one line per rule, in planning order.

mod r1_unreadable_document;

pub use r1_unreadable_document::UnreadableDocument;

use engine::Rule;

/// The sessions pack, in planning order (rules.md: R1, R4, R3, R2, R5).
pub static RULES: &[&dyn Rule] = &[&UnreadableDocument];
