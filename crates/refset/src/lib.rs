//! The reference set, built once per run from the inventory: known sessions, bound stores,
//! thread bindings, live sessions and named ids (store-format.md, "References"). Held stores
//! need no projection, so rules read them from the inventory (`store::Store::held`), probed once
//! by the scan. Never from directory names alone. The planner projects it through the actions that earlier
//! rules planned, with the `project_*` methods.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Component, Path};

use store::{Inventory, ThreadState};

/// A binding that binds nothing the doctor may act on.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, serde::Serialize)]
pub struct UnusableBinding {
    /// The document that declares it.
    pub document: String,
    /// The `data_dir` as written.
    pub data_dir: String,
    /// Why it binds nothing.
    pub why: &'static str,
}

/// What refers to what, from the files themselves.
#[derive(Debug, Clone, Default)]
pub struct ReferenceSet {
    /// Ids of readable and newer-schema documents and of checkpoints.
    pub known_sessions: BTreeSet<String>,
    /// Store path (relative to S) → ids of the documents that bind it.
    pub bound_stores: BTreeMap<String, BTreeSet<String>>,
    /// Thread record path → its `session_id`.
    pub thread_bindings: BTreeMap<String, Option<String>>,
    /// Ids whose live lease another process holds.
    pub live_sessions: BTreeSet<String>,
    /// Ids any thread names, and session-directory ids named in a readable document's text.
    pub named: BTreeSet<String>,
    /// How many thread records name each id, so that unbinding keeps `named` exact.
    thread_names: BTreeMap<String, usize>,
    /// Ids with a file at `S/<id>.json`, whatever its state.
    pub present_documents: BTreeSet<String>,
    /// Bindings that lead outside S, through a symlink, or to no runtime store.
    pub unusable_bindings: Vec<UnusableBinding>,
}

/// Resolves a `data_dir` lexically to a path relative to S, or says why it cannot be used.
/// `anchors` are the spellings of S's absolute path (as given, canonical).
pub fn resolve_binding(data_dir: &str, anchors: &[&Path]) -> Result<String, &'static str> {
    const OUTSIDE: &str = "binding leads outside the sessions directory";
    let p = Path::new(data_dir);
    // An absolute binding is normalised first (`/s/../s/a` is `/s/a`), then taken relative to
    // one of S's spellings; a relative one is relative to S.
    let rel: Vec<&str> = if p.is_absolute() {
        let abs = normalize(p, Vec::new())?;
        anchors
            .iter()
            .find_map(|a| {
                let anchor = normalize(a, Vec::new()).ok()?;
                abs.strip_prefix(anchor.as_slice()).map(<[&str]>::to_vec)
            })
            .ok_or(OUTSIDE)?
    } else {
        normalize(p, Vec::new())?
    };
    if rel.is_empty() {
        return Err("binding names the sessions directory itself");
    }
    Ok(rel.join("/"))
}

/// The normal components of `p` after resolving `.` and `..` lexically, appended to `parts`.
/// Climbing above the start is refused.
fn normalize<'a>(p: &'a Path, mut parts: Vec<&'a str>) -> Result<Vec<&'a str>, &'static str> {
    for c in p.components() {
        match c {
            Component::Normal(s) => parts.push(s.to_str().ok_or("binding is not UTF-8")?),
            Component::CurDir | Component::RootDir => {}
            // `/..` is `/`; above the start of a relative path is outside.
            Component::ParentDir if p.is_absolute() => {
                parts.pop();
            }
            Component::ParentDir => {
                parts
                    .pop()
                    .ok_or("binding leads outside the sessions directory")?;
            }
            Component::Prefix(_) => return Err("binding leads outside the sessions directory"),
        }
    }
    Ok(parts)
}

impl ReferenceSet {
    /// Builds the reference set from an inventory. `anchors` as for [`resolve_binding`].
    pub fn build(inv: &Inventory, anchors: &[&Path]) -> ReferenceSet {
        let mut refs = ReferenceSet {
            live_sessions: inv.live_sessions.clone(),
            named: inv.named_by_documents.clone(),
            ..ReferenceSet::default()
        };
        refs.known_sessions.extend(inv.checkpoints.iter().cloned());
        let stores: BTreeSet<&str> = inv.stores().map(|s| s.path.as_str()).collect();
        for doc in &inv.documents {
            refs.present_documents.insert(doc.id.clone());
            if !doc.state.is_known() {
                continue;
            }
            refs.known_sessions.insert(doc.id.clone());
            let Some(data_dir) = doc.state.data_dir() else {
                continue;
            };
            let resolved = resolve_binding(data_dir, anchors).and_then(|rel| {
                if stores.contains(rel.as_str()) {
                    Ok(rel)
                } else {
                    Err("binding names no runtime store (missing, not a store, or through a symlink)")
                }
            });
            match resolved {
                Ok(rel) => {
                    refs.bound_stores
                        .entry(rel)
                        .or_default()
                        .insert(doc.id.clone());
                }
                Err(why) => refs.unusable_bindings.push(UnusableBinding {
                    document: doc.path.clone(),
                    data_dir: data_dir.to_owned(),
                    why,
                }),
            }
        }
        for store in inv.stores() {
            for t in &store.threads {
                match &t.state {
                    ThreadState::Current { session_id, .. } => {
                        refs.thread_bindings
                            .insert(t.path.clone(), session_id.clone());
                        refs.add_thread_name(session_id.as_deref());
                    }
                    ThreadState::NewerSchema { session_id, .. } => {
                        refs.add_thread_name(session_id.as_deref());
                    }
                    ThreadState::Unreadable { .. } => {}
                }
            }
        }
        refs
    }

    /// Whether a store is bound by a known document.
    pub fn is_bound(&self, store: &str) -> bool {
        self.bound_stores.get(store).is_some_and(|d| !d.is_empty())
    }

    fn add_thread_name(&mut self, id: Option<&str>) {
        if let Some(id) = id {
            *self.thread_names.entry(id.to_owned()).or_default() += 1;
            self.named.insert(id.to_owned());
        }
    }

    fn remove_thread_name(&mut self, id: &str, named_by_documents: &BTreeSet<String>) {
        if let Some(n) = self.thread_names.get_mut(id) {
            *n -= 1;
            if *n == 0 {
                self.thread_names.remove(id);
                if !named_by_documents.contains(id) {
                    self.named.remove(id);
                }
            }
        }
    }

    /// Whether document `id` binds `store`.
    pub fn binds(&self, id: &str, store: &str) -> bool {
        self.bound_stores.get(store).is_some_and(|d| d.contains(id))
    }

    /// Projection of setting document `id` aside: it is no longer a known session (unless a
    /// checkpoint keeps it known) and binds nothing.
    pub fn project_document_set_aside(&mut self, id: &str, checkpoints: &BTreeSet<String>) {
        if !checkpoints.contains(id) {
            self.known_sessions.remove(id);
        }
        self.present_documents.remove(id);
        for docs in self.bound_stores.values_mut() {
            docs.remove(id);
        }
    }

    /// Projection of unbinding a thread record: it no longer names its old session.
    pub fn project_thread_unbound(
        &mut self,
        thread_path: &str,
        named_by_documents: &BTreeSet<String>,
    ) {
        if let Some(Some(old)) = self.thread_bindings.insert(thread_path.to_owned(), None) {
            self.remove_thread_name(&old, named_by_documents);
        }
    }

    /// Projection of a new document `id` that binds `store` and a thread bound to it.
    pub fn project_recovered(&mut self, id: &str, store: &str, thread_path: &str) {
        self.known_sessions.insert(id.to_owned());
        self.present_documents.insert(id.to_owned());
        self.bound_stores
            .entry(store.to_owned())
            .or_default()
            .insert(id.to_owned());
        self.thread_bindings
            .insert(thread_path.to_owned(), Some(id.to_owned()));
        self.add_thread_name(Some(id));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn resolves_bindings_lexically_inside_s() {
        let a = Path::new("/home/u/.codewhale/sessions");
        let c = Path::new("/data/sessions");
        let anchors = [a, c];
        assert_eq!(
            resolve_binding("abc/runtime", &anchors),
            Ok("abc/runtime".into())
        );
        assert_eq!(
            resolve_binding("./abc/../abc/runtime", &anchors),
            Ok("abc/runtime".into())
        );
        assert_eq!(
            resolve_binding("/home/u/.codewhale/sessions/abc/runtime", &anchors),
            Ok("abc/runtime".into())
        );
        assert_eq!(
            resolve_binding("/data/sessions/x/runtime-recovered-1", &anchors),
            Ok("x/runtime-recovered-1".into())
        );
        assert_eq!(
            resolve_binding("/data/sessions/../sessions/./alpha/runtime", &anchors),
            Ok("alpha/runtime".into()),
            "an absolute binding is normalised before it is compared with S"
        );
        assert_eq!(
            resolve_binding("/../data/sessions/a/runtime", &anchors),
            Ok("a/runtime".into()),
            "`/..` is `/`"
        );
        for outside in [
            "/etc",
            "../../..",
            "abc/../../x",
            "/home/u/other/abc/runtime",
            "/data/sessions/../other/alpha/runtime",
            "/data/../../data/sessions",
            "/../data/sessions/../x",
            "",
            ".",
        ] {
            assert!(resolve_binding(outside, &anchors).is_err(), "{outside}");
        }
    }
}
