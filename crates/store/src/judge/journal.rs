//! The app's checks of a session journal (codewhale-format.md §1.7 item 6), over the typed
//! journal or over the links the fast path collects.

use std::collections::HashSet;

/// The app's journal checks (codewhale-format.md §1.7 item 6): non-empty unique entry ids,
/// every parent present, the leaf present, no cycle.
pub(crate) fn check_journal(j: &crate::model::SessionJournal) -> Result<(), String> {
    let links: Vec<(&str, Option<&str>)> = j
        .entries
        .iter()
        .map(|e| (e.id.as_str(), e.parent_id.as_deref()))
        .collect();
    check_journal_links(&links, j.leaf_id.as_deref())
}

/// [`check_journal`] over the entries' `(id, parent_id)` links and the journal's leaf.
pub(crate) fn check_journal_links(
    links: &[(&str, Option<&str>)],
    leaf: Option<&str>,
) -> Result<(), String> {
    use std::collections::HashMap;
    let mut parent: HashMap<&str, Option<&str>> = HashMap::with_capacity(links.len());
    for &(id, p) in links {
        if id.is_empty() {
            return Err("an entry has an empty id".into());
        }
        if parent.insert(id, p).is_some() {
            return Err(format!("entry id {id:?} is duplicated"));
        }
    }
    for &(id, p) in links {
        if let Some(p) = p {
            if !parent.contains_key(p) {
                return Err(format!("entry {id:?} names a missing parent {p:?}"));
            }
        }
    }
    if let Some(leaf) = leaf {
        if !parent.contains_key(leaf) {
            return Err(format!("leaf {leaf:?} is not an entry"));
        }
    }
    // A walk from any entry reaches a root within as many steps as there are entries.
    // Each entry is walked once: a walk stops at an entry an earlier walk settled.
    let mut settled: HashSet<&str> = HashSet::new();
    for &(start, _) in links {
        let mut path: HashSet<&str> = HashSet::new();
        let mut at = Some(start);
        while let Some(id) = at {
            if settled.contains(id) {
                break;
            }
            if !path.insert(id) {
                return Err(format!("the parent chain of entry {start:?} has a cycle"));
            }
            at = parent.get(id).copied().flatten();
        }
        settled.extend(path);
    }
    Ok(())
}
