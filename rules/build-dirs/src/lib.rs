//! The build-dirs rule pack and its registry: one line per rule, in planning order. Its rules
//! see one root's depth-1 entries and the live process references (`engine::BuildContext`).

mod b1_leaked_go_workdir;
// The tests feed B1 processes as `/proc` reports them (`fsroot::procfs`, Linux).
#[cfg(all(test, target_os = "linux"))]
mod tests;

pub use b1_leaked_go_workdir::{is_go_work_dir_name, LeakedGoWorkdir};

use engine::{BuildDirs, Rule};

/// The build-dirs pack, in planning order.
pub static RULES: &[&dyn Rule<BuildDirs>] = &[&LeakedGoWorkdir];
