//! The reference set, built once per run from the inventory: known sessions, bound stores
//! (documents and checkpoints, compared lexically and canonically), thread bindings, live
//! sessions and the names that keep directories (store-format.md, Version 2, "References").
//! Held stores need no projection, so rules read them from the inventory (`store::Store::held`),
//! probed once by the scan. Never from directory names alone. The planner projects it through
//! the actions that earlier rules planned, with the `project_*` methods.

use std::collections::{BTreeMap, BTreeSet};

/// Hash maps and sets with a fast hasher seeded at random per process (ids come from files
/// anyone can write, so the seed keeps collisions from being chosen).
type HashMap<K, V> = std::collections::HashMap<K, V, foldhash::fast::RandomState>;
type HashSet<K> = std::collections::HashSet<K, foldhash::fast::RandomState>;
use std::path::{Component, Path};
use std::sync::Arc;

use rayon::prelude::*;
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

/// What refers to what, from the files themselves. Kept compact, as a large store holds
/// hundreds of thousands of sessions: ids are [`IdKey`]s (a lowercase UUID as 16 bytes), a
/// binder is a kind and an id, and each store path is held once.
#[derive(Debug, Clone, Default)]
pub struct ReferenceSet {
    /// Ids of readable, unknown-content and newer-schema documents and of checkpoints.
    pub known_sessions: IdSet,
    /// Store path (relative to S) → what binds it (documents and checkpoints).
    bound_stores: HashMap<Arc<str>, Vec<Binder>>,
    /// Binder → the store it binds (the inverse of `bound_stores`), so a projection touches
    /// only what the document bound.
    binder_stores: HashMap<Binder, Arc<str>>,
    /// Thread record path → its `session_id`, for the threads an earlier rule's planned action
    /// rebinds or unbinds; every other thread is bound as its record says (see
    /// [`ReferenceSet::thread_bound`]).
    thread_overrides: BTreeMap<String, Option<String>>,
    /// Ids whose live lease another process holds.
    pub live_sessions: IdSet,
    /// Names that keep a directory (rules.md, Version 2, R5), collected before any rule acts:
    /// every thread's `session_id`, its id and its derived UUID (in every store, held or not,
    /// and in the task stores), compared as [`store::ids::name_key`]. Only the names of
    /// directories a name can spare are kept (artifact-only and empty ones, the only ones
    /// [`ReferenceSet::names_dir`] is asked about), so the set stays small.
    names: IdSet,
    /// Session-directory ids some known document's text names.
    named_by_documents: IdSet,
    /// Ids with a file at `S/<id>.json`, whatever its state.
    pub present_documents: IdSet,
    /// Bindings that lead outside S, or to no runtime store.
    pub unusable_bindings: Vec<UnusableBinding>,
}

/// An id as a set key: a lowercase UUID as its 16 bytes, anything else as its text. Two ids
/// are equal keys exactly when they are equal strings.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum IdKey {
    /// A UUID spelled in lower case.
    Uuid([u8; 16]),
    /// Anything else.
    Text(Box<str>),
}

impl IdKey {
    /// The key of `id`, exactly.
    pub fn of(id: &str) -> IdKey {
        match uuid_bytes(id) {
            Some((b, false)) => IdKey::Uuid(b),
            _ => IdKey::Text(id.into()),
        }
    }

    /// The key of `id` compared as [`store::ids::name_key`] does (a UUID in any case).
    fn name(id: &str) -> IdKey {
        match uuid_bytes(id) {
            Some((b, _)) => IdKey::Uuid(b),
            None => IdKey::Text(id.into()),
        }
    }
}

/// The 16 bytes of a UUID-shaped id (`8-4-4-4-12` hex digits, any case, as
/// [`store::ids::is_uuid`] has it), and whether any digit is upper case.
fn uuid_bytes(id: &str) -> Option<([u8; 16], bool)> {
    let b = id.as_bytes();
    if b.len() != 36 || b[8] != b'-' || b[13] != b'-' || b[18] != b'-' || b[23] != b'-' {
        return None;
    }
    let mut upper = false;
    let mut digit = |c: u8| -> Option<u8> {
        match c {
            b'0'..=b'9' => Some(c - b'0'),
            b'a'..=b'f' => Some(c - b'a' + 10),
            b'A'..=b'F' => {
                upper = true;
                Some(c - b'A' + 10)
            }
            _ => None,
        }
    };
    let mut out = [0u8; 16];
    let mut at = 0;
    for byte in &mut out {
        if matches!(at, 8 | 13 | 18 | 23) {
            at += 1;
        }
        *byte = digit(b[at])? << 4 | digit(b[at + 1])?;
        at += 2;
    }
    Some((out, upper))
}

/// A set of ids, compared exactly.
#[derive(Debug, Clone, Default)]
pub struct IdSet(HashSet<IdKey>);

impl IdSet {
    /// Whether `id` is in the set.
    pub fn contains(&self, id: &str) -> bool {
        self.0.contains(&IdKey::of(id))
    }
    fn insert(&mut self, id: &str) {
        self.0.insert(IdKey::of(id));
    }
    fn remove(&mut self, id: &str) {
        self.0.remove(&IdKey::of(id));
    }
    fn insert_name(&mut self, id: &str) {
        self.0.insert(IdKey::name(id));
    }
    fn contains_name(&self, id: &str) -> bool {
        self.0.contains(&IdKey::name(id))
    }
}

/// What binds a store: a document `<id>.json` or a checkpoint `checkpoints/<id>.json`.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
struct Binder {
    checkpoint: bool,
    id: IdKey,
}

impl Binder {
    fn document(id: &str) -> Binder {
        Binder {
            checkpoint: false,
            id: IdKey::of(id),
        }
    }
}

/// Resolves a `data_dir` lexically to a path relative to S, or says why it cannot be used.
/// `anchors` are the spellings of S's absolute path (as given, canonical).
pub fn resolve_binding(data_dir: &str, anchors: &[&Path]) -> Result<String, &'static str> {
    const OUTSIDE: &str = "binding leads outside the sessions directory";
    let p = Path::new(data_dir);
    // An absolute binding is normalised first (`/s/../s/a` is `/s/a`), then taken relative to
    // one of S's absolute spellings (S given as a relative path is matched through its
    // canonical form only); a relative one is relative to S.
    let rel: Vec<&str> = if p.is_absolute() {
        let abs = lexical(p).ok_or(OUTSIDE)?;
        anchors
            .iter()
            .filter(|a| a.is_absolute())
            .find_map(|a| {
                let anchor = lexical(a)?;
                abs.strip_prefix(anchor.as_slice()).map(<[&str]>::to_vec)
            })
            .ok_or(OUTSIDE)?
    } else {
        lexical(p).ok_or(OUTSIDE)?
    };
    if rel.is_empty() {
        return Err("binding names the sessions directory itself");
    }
    Ok(rel.join("/"))
}

/// The components of `p` after resolving `.` and `..` lexically: a Windows drive or share
/// first (`C:`, `\\?\C:`, `\\server\share`, kept as spelled: `C:\s` and `\\?\C:\s` are the same
/// directory but compare unequal, which is why S's anchors hold both its given and its
/// canonical form), then the normal components. `None` for a relative path that climbs above
/// its start, a component that is not UTF-8, and a path that is neither absolute nor
/// relative, which on Windows names a place that depends on the current drive or directory:
/// `\Users\x` (a root, no drive) and `C:x` (a drive, no root), as the app refuses them
/// (platforms.md §8.16). Bindings and the paths in the app's manifest lines are read by it.
pub fn lexical(p: &Path) -> Option<Vec<&str>> {
    let absolute = p.is_absolute();
    let mut parts = Vec::new();
    // How many leading parts `..` never removes: the drive or share.
    let mut floor = 0;
    for c in p.components() {
        match c {
            Component::RootDir | Component::Prefix(_) if !absolute => return None,
            Component::Prefix(pre) => {
                parts.push(pre.as_os_str().to_str()?);
                floor = 1;
            }
            Component::Normal(s) => parts.push(s.to_str()?),
            Component::CurDir | Component::RootDir => {}
            // `/..` is `/`; above the start of a relative path is outside.
            Component::ParentDir if parts.len() > floor => {
                parts.pop();
            }
            Component::ParentDir if absolute => {}
            Component::ParentDir => return None,
        }
    }
    Some(parts)
}

impl ReferenceSet {
    /// Builds the reference set from an inventory. `anchors` as for [`resolve_binding`]; the
    /// last anchor is S's canonical form, against which a binding's canonical form (every
    /// symlink resolved) is compared when its lexical form names no store.
    pub fn build(inv: &Inventory, anchors: &[&Path]) -> ReferenceSet {
        let mut refs = ReferenceSet::default();
        for id in &inv.live_sessions {
            refs.live_sessions.insert(id);
        }
        for id in &inv.named_by_documents {
            refs.named_by_documents.insert(id);
        }
        // The directories a name can spare; every other name is dropped at once.
        let mut spared = IdSet::default();
        for d in inv
            .session_dirs
            .iter()
            .filter(|d| d.artifact_only || d.empty)
        {
            spared.insert_name(&d.id);
        }
        let name = |refs: &mut ReferenceSet, n: &str| {
            if spared.contains_name(n) {
                refs.names.insert_name(n);
            }
        };
        for n in &inv.task_names {
            name(&mut refs, n);
        }
        for id in &inv.checkpoints {
            refs.known_sessions.insert(id);
        }
        for id in &inv.taken_document_names {
            refs.present_documents.insert(id);
        }
        let stores: BTreeSet<&str> = inv.stores().map(|s| s.path.as_str()).collect();
        refs.present_documents.0.reserve(inv.documents.len());
        refs.known_sessions.0.reserve(inv.documents.len());
        let mut binders: Vec<(Binder, &str, &str)> = Vec::new();
        for doc in &inv.documents {
            let key = IdKey::of(&doc.id);
            refs.present_documents.0.insert(key.clone());
            if doc.state.is_known() {
                refs.known_sessions.0.insert(key.clone());
                if let Some(data_dir) = doc.state.data_dir() {
                    binders.push((
                        Binder {
                            checkpoint: false,
                            id: key,
                        },
                        doc.id.as_str(),
                        data_dir,
                    ));
                }
            }
        }
        binders.extend(inv.checkpoint_bindings.iter().map(|(id, d)| {
            (
                Binder {
                    checkpoint: true,
                    id: IdKey::of(id),
                },
                id.as_str(),
                d.as_str(),
            )
        }));
        // A binding string is resolved once however many documents declare it: the scan
        // shares one allocation per distinct string, so it is looked up by address and length
        // (equal strings at two addresses are resolved twice, to the same store).
        let mut resolved: HashMap<(usize, usize), Result<usize, &'static str>> = HashMap::default();
        // The bound stores, each once, with their binders.
        let mut table: Vec<(Arc<str>, Vec<Binder>)> = Vec::new();
        let mut index_of: HashMap<&str, usize> = HashMap::default();
        refs.binder_stores.reserve(binders.len());
        for (binder, id, data_dir) in binders {
            let key = (data_dir.as_ptr() as usize, data_dir.len());
            let found = match resolved.get(&key) {
                Some(found) => *found,
                None => {
                    let found = bind(data_dir, anchors, &stores).map(|rel| {
                        let store = stores.get(rel.as_str()).copied().unwrap_or_default();
                        *index_of.entry(store).or_insert_with(|| {
                            table.push((Arc::from(rel.as_str()), Vec::new()));
                            table.len() - 1
                        })
                    });
                    resolved.insert(key, found);
                    found
                }
            };
            match found {
                Ok(i) => {
                    let (store, binders) = &mut table[i];
                    binders.push(binder.clone());
                    refs.binder_stores.insert(binder, store.clone());
                }
                Err(why) => refs.unusable_bindings.push(UnusableBinding {
                    document: if binder.checkpoint {
                        format!("checkpoints/{id}.json")
                    } else {
                        format!("{id}.json")
                    },
                    data_dir: data_dir.to_owned(),
                    why,
                }),
            }
        }
        refs.bound_stores.reserve(table.len());
        refs.bound_stores.extend(table);
        // The names a thread gives (its session, its id, its derived UUID: a SHA-256 each)
        // are computed in parallel; only those that spare a directory are kept.
        if !spared.0.is_empty() {
            let threads: Vec<&store::Thread> =
                inv.stores().flat_map(|s| s.threads.iter()).collect();
            let named: Vec<IdKey> = threads
                .par_iter()
                .flat_map_iter(|t| {
                    let session_id = match &t.state {
                        ThreadState::Current { session_id, .. }
                        | ThreadState::NewerSchema { session_id, .. }
                        | ThreadState::Unreadable { session_id, .. } => session_id,
                    };
                    let derived = store::ids::thread_session_uuid(&t.id);
                    [
                        session_id.as_deref(),
                        Some(t.id.as_str()),
                        Some(derived.as_str()),
                    ]
                    .into_iter()
                    .flatten()
                    .map(IdKey::name)
                    .filter(|k| spared.0.contains(k))
                    .collect::<Vec<_>>()
                })
                .collect();
            refs.names.0.extend(named);
        }
        refs
    }

    /// Whether a store is bound by a known document or a checkpoint.
    pub fn is_bound(&self, store: &str) -> bool {
        self.bound_stores.get(store).is_some_and(|d| !d.is_empty())
    }

    /// Whether some document or checkpoint binds `store`, not counting those whose id is in
    /// `except` (the R3 gate, rules.md Version 2: a document a recovery wrote for one of the
    /// store's own threads does not close the store to recovery).
    pub fn is_bound_except(&self, store: &str, except: &BTreeSet<&str>) -> bool {
        let except: HashSet<IdKey> = except.iter().map(|id| IdKey::of(id)).collect();
        self.bound_stores
            .get(store)
            .is_some_and(|binders| binders.iter().any(|b| !except.contains(&b.id)))
    }

    /// Whether a directory id is named: by a known document's text, or by a thread or task
    /// thread (its session, its id, its derived UUID). Asked about artifact-only and empty
    /// session directories only (see `names`).
    pub fn names_dir(&self, id: &str) -> bool {
        self.named_by_documents.contains(id) || self.names.contains_name(id)
    }

    /// Whether thread `t` is bound to a session after the actions planned so far: as its record
    /// says, unless a planned unbind or recovery changed that.
    pub fn thread_bound(&self, store: &store::Store, t: &store::Thread) -> bool {
        match self.thread_overrides.get(&store.thread_path(t)) {
            Some(sid) => sid.is_some(),
            None => matches!(
                &t.state,
                ThreadState::Current {
                    session_id: Some(_),
                    ..
                }
            ),
        }
    }

    /// Whether document `<id>.json` binds `store`.
    pub fn binds(&self, id: &str, store: &str) -> bool {
        self.binder_stores
            .get(&Binder::document(id))
            .is_some_and(|s| &**s == store)
    }

    /// Projection of setting document `id` aside: it is no longer a known session (unless a
    /// checkpoint keeps it known) and binds nothing.
    pub fn project_document_set_aside(&mut self, id: &str, checkpoints: &BTreeSet<String>) {
        if !checkpoints.contains(id) {
            self.known_sessions.remove(id);
        }
        self.present_documents.remove(id);
        let binder = Binder::document(id);
        if let Some(store) = self.binder_stores.remove(&binder) {
            if let Some(binders) = self.bound_stores.get_mut(&store) {
                binders.retain(|b| *b != binder);
            }
        }
    }

    /// Projection of unbinding a thread record. Names stay: they were collected before any
    /// rule acted.
    pub fn project_thread_unbound(&mut self, thread_path: &str) {
        self.thread_overrides.insert(thread_path.to_owned(), None);
    }

    /// Projection of a new document `id` that binds `store` and a thread bound to it.
    pub fn project_recovered(&mut self, id: &str, store: &str, thread_path: &str) {
        self.known_sessions.insert(id);
        self.present_documents.insert(id);
        let store: Arc<str> = self
            .bound_stores
            .get_key_value(store)
            .map_or_else(|| Arc::from(store), |(k, _)| k.clone());
        let binder = Binder::document(id);
        self.bound_stores
            .entry(store.clone())
            .or_default()
            .push(binder.clone());
        self.binder_stores.insert(binder, store);
        self.thread_overrides
            .insert(thread_path.to_owned(), Some(id.to_owned()));
    }
}

/// Whether `data_dir` binds the store at `store` (relative to S), by the same comparison the
/// reference set makes: the executor's re-checks and the planner judge alike.
pub fn binds_store(data_dir: &str, anchors: &[&Path], store: &str) -> bool {
    bind(data_dir, anchors, &BTreeSet::from([store])).is_ok_and(|rel| rel == store)
}

/// The store a `data_dir` binds: its lexical resolution when that names a store, else its
/// canonical form taken relative to S's canonical form (a binding spelled through a symlink).
fn bind(
    data_dir: &str,
    anchors: &[&Path],
    stores: &BTreeSet<&str>,
) -> Result<String, &'static str> {
    const NO_STORE: &str = "binding names no runtime store (missing, or not a store)";
    let lexical = resolve_binding(data_dir, anchors);
    if let Ok(rel) = &lexical {
        if stores.contains(rel.as_str()) {
            return lexical;
        }
    }
    if let (Some(canonical), Some(s)) =
        (fsroot::canonical_path(Path::new(data_dir)), anchors.last())
    {
        if let Ok(rel) = resolve_binding(&canonical.to_string_lossy(), &[s]) {
            if stores.contains(rel.as_str()) {
                return Ok(rel);
            }
        }
    }
    match lexical {
        Ok(_) => Err(NO_STORE),
        Err(why) => Err(why),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uuid_keys_are_exactly_the_uuid_shaped_ids() {
        let u = "0173d926-7de5-4fc7-a6be-2d40453ae678";
        let mut cases = vec![
            u.to_owned(),
            u.to_ascii_uppercase(),
            u.replacen('d', "D", 1),
            u.replacen('-', "x", 1),
            u.replacen('7', "g", 1),
            u[1..].to_owned(),
            format!("{u}0"),
            format!("0{}", &u[1..]).replacen('-', "0", 1),
            "thr_0123".to_owned(),
            String::new(),
            "é".repeat(18),
        ];
        // Every position swapped for each character class.
        for at in 0..36 {
            for c in ['-', 'a', 'F', 'z', '0'] {
                let mut b = u.as_bytes().to_vec();
                b[at] = c as u8;
                cases.push(String::from_utf8(b).unwrap());
            }
        }
        for id in &cases {
            let shaped = store::ids::is_uuid(id);
            assert_eq!(uuid_bytes(id).is_some(), shaped, "{id}");
            let exact = matches!(IdKey::of(id), IdKey::Uuid(_));
            assert_eq!(exact, shaped && *id == id.to_ascii_lowercase(), "{id}");
            assert_eq!(IdKey::of(id), IdKey::of(id));
            assert_eq!(
                IdKey::name(id) == IdKey::name(&id.to_ascii_lowercase()),
                shaped || *id == id.to_ascii_lowercase(),
                "{id}"
            );
        }
        assert_eq!(
            uuid_bytes(u).unwrap().0,
            [
                0x01, 0x73, 0xd9, 0x26, 0x7d, 0xe5, 0x4f, 0xc7, 0xa6, 0xbe, 0x2d, 0x40, 0x45, 0x3a,
                0xe6, 0x78
            ]
        );
    }

    #[test]
    fn setting_a_document_aside_unbinds_only_it_and_forgets_it_unless_a_checkpoint_keeps_it() {
        let mut refs = ReferenceSet::default();
        refs.project_recovered("a", "s/runtime", "s/runtime/threads/t1.json");
        refs.project_recovered("b", "s/runtime", "s/runtime/threads/t2.json");
        let checkpoints = BTreeSet::from(["b".to_owned()]);

        refs.project_document_set_aside("a", &checkpoints);
        assert!(!refs.known_sessions.contains("a"));
        assert!(!refs.present_documents.contains("a"));
        assert!(!refs.binds("a", "s/runtime"));
        assert!(refs.binds("b", "s/runtime"), "the other binder stays");
        assert!(refs.is_bound_except("s/runtime", &BTreeSet::from(["a"])));
        assert!(
            !refs.is_bound_except("s/runtime", &BTreeSet::from(["b"])),
            "a binds it no more"
        );

        refs.project_document_set_aside("b", &checkpoints);
        assert!(
            refs.known_sessions.contains("b"),
            "its checkpoint keeps it known"
        );
        assert!(!refs.present_documents.contains("b"));
        assert!(!refs.is_bound("s/runtime"));
    }

    // Makes a symlink (Unix).
    #[cfg(unix)]
    #[test]
    fn a_binding_spelled_through_a_symlink_binds_its_store() {
        let tmp = tempfile::tempdir().unwrap();
        let s = tmp.path().join("sessions");
        fsroot::WritableRoot::open(tmp.path())
            .unwrap()
            .create_dir_all(Path::new("sessions/a/runtime"))
            .unwrap();
        let link = tmp.path().join("link");
        std::os::unix::fs::symlink(&s, &link).unwrap();
        let canonical = s.canonicalize().unwrap();
        let anchors = [s.as_path(), canonical.as_path()];
        let stores = BTreeSet::from(["a/runtime"]);
        let through = format!("{}/a/runtime", link.display());
        assert_eq!(bind(&through, &anchors, &stores), Ok("a/runtime".into()));
        assert_eq!(bind("a/runtime", &anchors, &stores), Ok("a/runtime".into()));
        assert!(bind(&format!("{}/b/runtime", link.display()), &anchors, &stores).is_err());
        assert!(bind("/etc", &anchors, &stores).is_err());
    }

    /// `p`, a Unix absolute path, as an absolute path of this OS: on Windows with a drive
    /// (`C:/s`), since `/s` is not absolute there.
    fn abs(p: &str) -> String {
        if cfg!(windows) {
            format!("C:{p}")
        } else {
            p.to_owned()
        }
    }

    #[test]
    fn resolves_bindings_lexically_inside_s() {
        let (a, c) = (abs("/home/u/.codewhale/sessions"), abs("/data/sessions"));
        let anchors = [Path::new(&a), Path::new(&c)];
        assert_eq!(
            resolve_binding("abc/runtime", &anchors),
            Ok("abc/runtime".into())
        );
        assert_eq!(
            resolve_binding("./abc/../abc/runtime", &anchors),
            Ok("abc/runtime".into())
        );
        assert_eq!(
            resolve_binding(&abs("/home/u/.codewhale/sessions/abc/runtime"), &anchors),
            Ok("abc/runtime".into())
        );
        assert_eq!(
            resolve_binding(&abs("/data/sessions/x/runtime-recovered-1"), &anchors),
            Ok("x/runtime-recovered-1".into())
        );
        assert_eq!(
            resolve_binding(&abs("/data/sessions/../sessions/./alpha/runtime"), &anchors),
            Ok("alpha/runtime".into()),
            "an absolute binding is normalised before it is compared with S"
        );
        assert_eq!(
            resolve_binding(&abs("/../data/sessions/a/runtime"), &anchors),
            Ok("a/runtime".into()),
            "`/..` is `/`"
        );
        for outside in [
            abs("/etc"),
            "../../..".into(),
            "abc/../../x".into(),
            abs("/home/u/other/abc/runtime"),
            abs("/data/sessions/../other/alpha/runtime"),
            abs("/data/../../data/sessions"),
            abs("/../data/sessions/../x"),
            "".into(),
            ".".into(),
        ] {
            assert!(resolve_binding(&outside, &anchors).is_err(), "{outside}");
        }
    }

    /// S given as a relative path is no spelling an absolute binding can be compared with:
    /// `/s/a/runtime` is not `s/a/runtime` under the current directory.
    #[test]
    fn an_absolute_binding_is_not_matched_against_a_relative_anchor() {
        let c = abs("/data/sessions");
        let anchors = [Path::new("s"), Path::new(&c)];
        assert!(resolve_binding(&abs("/s/a/runtime"), &anchors).is_err());
        assert_eq!(
            resolve_binding(&abs("/data/sessions/a/runtime"), &anchors),
            Ok("a/runtime".into())
        );
    }

    /// Windows spellings (platforms.md §8.15–16): the app's verbatim `\\?\C:\` binding matches
    /// S's canonical form, a `C:\` one S as given; the drive is never climbed over; a path
    /// with a root but no drive, or a drive but no root, is refused.
    #[cfg(windows)]
    #[test]
    fn windows_bindings_are_matched_by_drive_and_verbatim_spelling() {
        let anchors = [Path::new(r"C:\Users\u\S"), Path::new(r"\\?\C:\Users\u\S")];
        for binding in [
            r"\\?\C:\Users\u\S\a\runtime",
            r"C:\Users\u\S\a\runtime",
            r"C:/Users/u/S/a/runtime",
            r"C:\..\Users\u\S\a\runtime",
        ] {
            assert_eq!(
                resolve_binding(binding, &anchors),
                Ok("a/runtime".into()),
                "{binding}"
            );
        }
        for outside in [
            r"\Users\u\S\a\runtime",
            r"/Users/u/S/a/runtime",
            r"C:Users\u\S\a\runtime",
            r"D:\Users\u\S\a\runtime",
            r"\\?\D:\Users\u\S\a\runtime",
            r"c:\users\u\S\a\runtime",
        ] {
            assert!(resolve_binding(outside, &anchors).is_err(), "{outside}");
        }
    }
}
