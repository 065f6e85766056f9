//! The path shapes the sessions rules act on, by which a saved plan's actions are checked
//! (`Rule::accepts`): a plan edited by hand, or written for another purpose, must not be able
//! to move a checkpoint or rewrite anything the sessions pack never touches.

use store::ids::{is_reserved_top, is_store_name, is_valid_id, STRUCTURAL};

/// A session directory's name as the scan finds one: a valid id that is not a structural name
/// of S (`checkpoints`).
pub(crate) fn session_dir(name: &str) -> bool {
    is_valid_id(name) && !STRUCTURAL.contains(&name)
}

/// A session document: `<id>.json` at the top of S, not a reserved name.
pub(crate) fn document(path: &str) -> bool {
    !is_reserved_top(path) && path.strip_suffix(".json").is_some_and(is_valid_id)
}

/// A runtime store: `<session dir>/<store name>`.
pub(crate) fn store(path: &str) -> bool {
    path.split_once('/')
        .is_some_and(|(d, s)| session_dir(d) && is_store_name(s))
}

/// The thread id of a thread record's path, `<session dir>/<store>/threads/<tid>.json`.
pub(crate) fn thread(path: &str) -> Option<&str> {
    let (store, file) = path.rsplit_once("/threads/")?;
    let (dir, name) = store.split_once('/')?;
    let tid = file.strip_suffix(".json")?;
    (session_dir(dir) && is_store_name(name) && is_valid_id(tid)).then_some(tid)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_thread_path_needs_a_session_dir_a_store_and_a_valid_id() {
        assert_eq!(thread("a/runtime/threads/t1.json"), Some("t1"));
        assert_eq!(thread("a/runtime-recovered-1/threads/t1.json"), Some("t1"));
        // Each part wrong on its own.
        assert_eq!(thread("checkpoints/runtime/threads/t1.json"), None);
        assert_eq!(thread("a/artifacts/threads/t1.json"), None);
        assert_eq!(thread("a/runtime/threads/t 1.json"), None);
        assert_eq!(thread("a/runtime/threads/t1.txt"), None);
        assert_eq!(thread("a/threads/t1.json"), None);
    }
}
