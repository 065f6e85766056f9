//! The parallel scan of S into an [`Inventory`]: one read of each document, checkpoint, store
//! file and thread record, fanned out over rayon; the bytes are judged as the app would load
//! them ([`crate::judge`]), searched for the names of session directories (`names`)
//! and dropped. Also the read-only look outside S that Version 2 asks for:
//! automation definitions and the task stores of `$CODEWHALE_HOME`.

use std::collections::{BTreeSet, HashSet};
use std::path::Path;

use fsroot::{Entry, EntryKind, LockProbe, Problem, Root};
use rayon::prelude::*;

use serde::Deserialize;
use serde_json::Value;

use crate::cache::VerdictCache;
use crate::ids::{self, is_valid_id};
use crate::inventory::*;
use crate::judge::{judge_document, judge_thread};
use crate::names::{uuid_windows, NameMatcher};

/// What the scan reads outside S, read-only: automation definitions (their text; a store whose
/// `execution_scope` appears in one holds work) and the names the task stores' threads give.
#[derive(Debug, Default, Clone)]
pub struct External {
    /// The bytes of every `*.json` under `$CODEWHALE_HOME/automations`, recursively.
    pub automations: Vec<Vec<u8>>,
    /// Each task thread's `session_id`, id and derived UUID.
    pub task_names: BTreeSet<String>,
}

/// Reads [`External`] from `home` (`$CODEWHALE_HOME`, else `~/.codewhale`). A missing
/// directory is empty; other errors are returned, each naming its path, and reading goes on.
pub fn read_external(home: Option<&Path>) -> (External, Vec<Problem>) {
    let mut ext = External::default();
    let mut errors = Vec::new();
    let Some(home) = home else {
        return (ext, errors);
    };
    if let Some(root) = open_optional(&home.join("automations"), &mut errors) {
        let mut files = Vec::new();
        collect_json_files(&root, Path::new(""), &mut files, &mut errors, 0);
        for f in files {
            match root.read(&f) {
                Ok(b) => ext.automations.push(b),
                Err(e) => errors.push(Problem::from(&e)),
            }
        }
    }
    if let Some(root) = open_optional(&home.join("tasks").join("runtime"), &mut errors) {
        let mut stores = vec![String::new()];
        match root.list(Path::new("")) {
            Ok(entries) => stores.extend(
                entries
                    .into_iter()
                    .filter(|e| e.kind == EntryKind::Dir && e.name != "threads")
                    .filter_map(|e| e.name.to_str().map(str::to_owned)),
            ),
            Err(e) => errors.push(Problem::from(&e)),
        }
        for store in stores {
            let dir = if store.is_empty() {
                "threads".to_owned()
            } else {
                format!("{store}/threads")
            };
            let entries = match root.list(Path::new(&dir)) {
                Ok(v) => v,
                Err(e) if e.is_not_found() => continue,
                Err(e) => {
                    errors.push(Problem::from(&e));
                    continue;
                }
            };
            for e in entries {
                let name = e.name.to_string_lossy();
                let Some(tid) = name.strip_suffix(".json") else {
                    continue;
                };
                if e.kind != EntryKind::File || !is_valid_id(tid) {
                    continue;
                }
                ext.task_names.insert(ids::name_key(tid));
                ext.task_names.insert(ids::thread_session_uuid(tid));
                let rel = format!("{dir}/{name}");
                match root.read(Path::new(&rel)) {
                    Ok(bytes) => {
                        if let Some(sid) = serde_json::from_slice::<Value>(&bytes)
                            .ok()
                            .and_then(|v| v.get("session_id")?.as_str().map(ids::name_key))
                        {
                            ext.task_names.insert(sid);
                        }
                    }
                    Err(e) => errors.push(Problem::from(&e)),
                }
            }
        }
    }
    (ext, errors)
}

fn open_optional(path: &Path, errors: &mut Vec<Problem>) -> Option<Root> {
    match Root::open(path) {
        Ok(r) => Some(r),
        Err(e) if e.is_not_found() => None,
        Err(e) => {
            errors.push(Problem::from(&e));
            None
        }
    }
}

fn collect_json_files(
    root: &Root,
    rel: &Path,
    out: &mut Vec<std::path::PathBuf>,
    errors: &mut Vec<Problem>,
    depth: usize,
) {
    if depth > 32 {
        return;
    }
    let entries = match root.list(rel) {
        Ok(v) => v,
        Err(e) => {
            errors.push(Problem::from(&e));
            return;
        }
    };
    for e in entries {
        let child = rel.join(&e.name);
        match e.kind {
            EntryKind::Dir => collect_json_files(root, &child, out, errors, depth + 1),
            EntryKind::File if e.name.to_string_lossy().ends_with(".json") => out.push(child),
            _ => {}
        }
    }
}

/// Scans S with nothing read from outside it.
pub fn scan(root: &Root) -> fsroot::Result<Inventory> {
    scan_with(root, &External::default())
}

/// Scans S. Fails only when S itself cannot be listed; every other problem is recorded in
/// [`Inventory::errors`] and the scan goes on without that entry.
pub fn scan_with(root: &Root, ext: &External) -> fsroot::Result<Inventory> {
    let _span = tracing::info_span!("scan_with").entered();
    scan_watched(root, ext, &crate::progress::ProgressSink::silent())
}

/// [`scan_with`], reporting each session directory and document scanned to `progress` (phase
/// `scanning`).
pub fn scan_watched(
    root: &Root,
    ext: &External,
    progress: &crate::progress::ProgressSink,
) -> fsroot::Result<Inventory> {
    scan_cached(root, ext, progress, None)
}

/// [`scan_watched`], taking each document's and thread record's verdict from `cache` where
/// the file is unchanged, and keeping what it judges in it for the next run. The inventory is
/// the one [`scan_watched`] gives (the property tests of the cache compare the two).
pub fn scan_cached(
    root: &Root,
    ext: &External,
    progress: &crate::progress::ProgressSink,
    mut cache: Option<&mut VerdictCache>,
) -> fsroot::Result<Inventory> {
    let top = root.list(Path::new(""))?;
    let mut inv = Inventory {
        task_names: ext.task_names.clone(),
        ..Inventory::default()
    };
    let mut doc_ids = Vec::new();
    let mut dir_ids = Vec::new();
    let mut has_checkpoints = false;
    for entry in top {
        let Some(name) = entry.name.to_str().map(str::to_owned) else {
            inv.ignored
                .push(ignored(&entry.name.to_string_lossy(), "name is not UTF-8"));
            continue;
        };
        let top = classify_top(&name, entry.kind);
        if let Some(stem) = name.strip_suffix(".json").filter(|s| is_valid_id(s)) {
            if !matches!(top, Top::Document(_)) {
                inv.taken_document_names.insert(stem.to_owned());
            }
        }
        match top {
            Top::Document(id) => doc_ids.push(id),
            Top::SessionDir => dir_ids.push(name),
            Top::Checkpoints => has_checkpoints = true,
            Top::LateUsage => scan_late_usage(root, &mut inv),
            Top::Doctor => {}
            Top::Ignored(why) => inv.ignored.push(ignored(&name, why)),
        }
    }

    progress.start("scanning", (dir_ids.len() + doc_ids.len()) as u64);
    let dirs: Vec<(SessionDir, Vec<Ignored>, Vec<Problem>)> = dir_ids
        .par_iter()
        .map(|id| {
            let dir = scan_session_dir(root, id, ext, cache.as_deref());
            progress.tick();
            dir
        })
        .collect();
    for (dir, ign, errs) in dirs {
        inv.ignored.extend(ign);
        inv.errors.extend(errs);
        inv.session_dirs.push(dir);
    }

    // Document text can only spare a directory that holds no store: an artifact-only one (R5)
    // or an empty one (R2's removal). Only their ids are looked for, so the search costs one
    // pass over each text whatever the number of sessions.
    let candidates: Vec<String> = inv
        .session_dirs
        .iter()
        .filter(|d| d.artifact_only || d.empty)
        .map(|d| d.id.clone())
        .collect();
    let bindings = Bindings::default();
    let names = NameMatcher::new(&candidates);
    if let Some(c) = cache.as_deref_mut() {
        c.set_others(
            names
                .others
                .iter()
                .flat_map(|(_, pats)| pats.iter().cloned()),
        );
    }
    let cache = cache.as_deref();
    // S itself, held for the cache's stats of its documents.
    let top_dir = cache.and_then(|_| root.hold_dir(Path::new("")).ok());
    let docs: Vec<(Document, Option<Box<Extra>>)> = doc_ids
        .par_iter()
        .map(|id| {
            let cached = cache.zip(top_dir.as_ref());
            let doc = scan_document(root, id, &format!("{id}.json"), &names, &bindings, cached);
            progress.tick();
            doc
        })
        .collect();
    inv.documents.reserve_exact(docs.len());
    for (doc, extra) in docs {
        if let Some(x) = extra {
            inv.named_by_documents.extend(x.named);
            inv.errors.extend(x.err);
        }
        inv.documents.push(doc);
    }
    if has_checkpoints {
        scan_checkpoints(root, &names, &mut inv);
    }
    let (temps, ignored): (Vec<Ignored>, Vec<Ignored>) = std::mem::take(&mut inv.ignored)
        .into_iter()
        .partition(|i| i.why == INTERRUPTED_WRITE);
    inv.ignored = ignored;
    inv.interrupted_writes = temps.into_iter().map(|i| i.path).collect();
    inv.interrupted_writes.sort();
    inv.ignored.sort();
    inv.errors.sort();
    Ok(inv)
}

/// Why-marker of a doctor temp file left by an interrupted atomic write.
const INTERRUPTED_WRITE: &str = "temporary file of an interrupted doctor write";

enum Top {
    Document(String),
    SessionDir,
    Checkpoints,
    LateUsage,
    Doctor,
    Ignored(&'static str),
}

fn classify_top(name: &str, kind: EntryKind) -> Top {
    if kind == EntryKind::Symlink {
        return Top::Ignored("symlink (never followed)");
    }
    match (name, kind) {
        ("checkpoints", EntryKind::Dir) => return Top::Checkpoints,
        (".late-usage", EntryKind::Dir) => return Top::LateUsage,
        (".reconcile" | ".set-aside", EntryKind::Dir) | (".reconcile.lock", EntryKind::File) => {
            return Top::Doctor
        }
        _ if ids::STRUCTURAL.contains(&name) => return Top::Ignored("unexpected kind of entry"),
        _ if ids::is_reserved_top(name) => return Top::Ignored("reserved name (host bookkeeping)"),
        _ => {}
    }
    match kind {
        EntryKind::File if fsroot::temp::is_temp(name) => Top::Ignored(INTERRUPTED_WRITE),
        EntryKind::File => match name.strip_suffix(".json") {
            Some(stem) if is_valid_id(stem) => Top::Document(stem.to_owned()),
            Some(_) => Top::Ignored("file name is not a valid session id"),
            None => Top::Ignored("not a session document"),
        },
        EntryKind::Dir if is_valid_id(name) => Top::SessionDir,
        EntryKind::Dir => Top::Ignored("directory name is not a valid session id"),
        _ => Top::Ignored("not a regular file or directory"),
    }
}

fn ignored(path: &str, why: &'static str) -> Ignored {
    Ignored {
        path: path.to_owned(),
        why,
    }
}

/// Distinct `data_dir` strings, each kept once: many documents bind one store (a host binds
/// every document it creates to its own), so a large store holds few distinct bindings.
#[derive(Default)]
struct Bindings(std::sync::Mutex<HashSet<std::sync::Arc<str>>>);

impl Bindings {
    fn share(&self, state: &mut DocState) {
        if let DocState::Readable { data_dir }
        | DocState::UnknownContent { data_dir, .. }
        | DocState::NewerSchema { data_dir, .. } = state
        {
            if let Some(d) = data_dir.as_mut() {
                let mut set = self.0.lock().unwrap_or_else(|e| e.into_inner());
                match set.get(d) {
                    Some(shared) => *d = shared.clone(),
                    None => {
                        set.insert(d.clone());
                    }
                }
            }
        }
    }
}

/// Judges document `path` (`<id>.json` of S when `cache` is given, with S's held handle).
fn scan_document(
    root: &Root,
    id: &str,
    path: &str,
    names: &NameMatcher,
    bindings: &Bindings,
    cache: Option<(&VerdictCache, &fsroot::HeldDir<'_>)>,
) -> (Document, Option<Box<Extra>>) {
    let file = || format!("{id}.json");
    let hit = cache.and_then(|(c, top)| {
        let stat = top.stat_for_read(file().as_ref()).ok()??;
        c.document(id, &stat)
    });
    let (mut state, named, err) = if let Some(e) = hit {
        let state = DocState::Readable {
            data_dir: e.data_dir,
        };
        (state, names.named_from(&e.uuids, &e.others), None)
    } else {
        let read = match cache {
            Some((_, top)) => top
                .read_with_stat(file().as_ref())
                .map(|(b, s)| (b, Some(s))),
            None => root.read(Path::new(path)).map(|b| (b, None)),
        };
        match read {
            Ok((bytes, stat)) => {
                let state = judge_document(id, &bytes);
                let named = if state.is_known() {
                    names.named(&bytes)
                } else {
                    BTreeSet::new()
                };
                if let (Some((c, _)), Some(stat), DocState::Readable { data_dir }) =
                    (cache, stat, &state)
                {
                    let others = names.others_among(&named);
                    c.keep_document(id, &stat, data_dir.clone(), uuid_windows(&bytes), others);
                }
                (state, named, None)
            }
            Err(e) => (
                DocState::Inaccessible,
                BTreeSet::new(),
                Some(Problem::from(&e)),
            ),
        }
    };
    bindings.share(&mut state);
    let doc = Document {
        id: id.to_owned(),
        state,
    };
    // The rare extras go in a box: a large store has hundreds of thousands of these results
    // alive at once, almost all without either.
    let extra = (!named.is_empty() || err.is_some()).then(|| Box::new(Extra { named, err }));
    (doc, extra)
}

/// What scanning a document found beside its state: the directory ids its text names, and an
/// error reading it.
struct Extra {
    named: BTreeSet<String>,
    err: Option<Problem>,
}

fn list_or_record(root: &Root, rel: &str, errors: &mut Vec<Problem>) -> Option<Vec<Entry>> {
    match root.list(Path::new(rel)) {
        Ok(v) => Some(v),
        Err(e) => {
            errors.push(Problem::from(&e));
            None
        }
    }
}

fn scan_checkpoints(root: &Root, names: &NameMatcher, inv: &mut Inventory) {
    let Some(entries) = list_or_record(root, "checkpoints", &mut inv.errors) else {
        return;
    };
    let mut ids = Vec::new();
    for e in entries {
        let name = e.name.to_string_lossy();
        if name == "latest.json" && e.kind == EntryKind::File {
            scan_legacy_checkpoint(root, inv);
            continue;
        }
        match name.strip_suffix(".json") {
            Some(id)
                if e.kind == EntryKind::File
                    && is_valid_id(id)
                    && !ids::RESERVED_CHECKPOINT_IDS.contains(&id) =>
            {
                ids.push(id.to_owned());
            }
            _ => inv
                .ignored
                .push(ignored(&format!("checkpoints/{name}"), "not a checkpoint")),
        }
    }
    let scanned: Vec<_> = ids
        .par_iter()
        .map(|id| {
            scan_document(
                root,
                id,
                &format!("checkpoints/{id}.json"),
                names,
                &Bindings::default(),
                None,
            )
        })
        .collect();
    for (doc, extra) in scanned {
        if let Some(x) = extra {
            inv.named_by_documents.extend(x.named);
            inv.errors.extend(x.err);
        }
        if let Some(d) = doc.state.data_dir() {
            inv.checkpoint_bindings.insert(doc.id.clone(), d.to_owned());
        }
        if matches!(doc.state, DocState::Inaccessible) {
            inv.inaccessible_checkpoints.insert(doc.id.clone());
        }
        inv.checkpoints.insert(doc.id);
    }
}

/// `checkpoints/latest.json`, the legacy single-slot checkpoint the app still reads: its owner is
/// the session its `metadata.id` names (a known session), and its binding binds as any
/// checkpoint's does. Errs toward keeping: a metadata prefix is enough.
fn scan_legacy_checkpoint(root: &Root, inv: &mut Inventory) {
    let rel = "checkpoints/latest.json";
    let bytes = match root.read(Path::new(rel)) {
        Ok(b) => b,
        Err(e) => {
            inv.errors.push(Problem::from(&e));
            return;
        }
    };
    let Ok(v) = serde_json::from_slice::<Value>(&bytes) else {
        inv.ignored
            .push(ignored(rel, "legacy checkpoint that does not parse"));
        return;
    };
    if let Some(id) = v
        .pointer("/metadata/id")
        .and_then(Value::as_str)
        .filter(|id| is_valid_id(id))
    {
        inv.checkpoints.insert(id.to_owned());
    }
    if let Some(d) = v
        .pointer("/metadata/runtime_store/data_dir")
        .and_then(Value::as_str)
    {
        inv.checkpoint_bindings
            .insert("latest".to_owned(), d.to_owned());
    }
}

fn scan_late_usage(root: &Root, inv: &mut Inventory) {
    let Some(entries) = list_or_record(root, ids::LATE_USAGE_DIR, &mut inv.errors) else {
        return;
    };
    for e in entries {
        let Some(name) = e.name.to_str() else {
            continue;
        };
        if e.kind != EntryKind::File {
            if name.ends_with(".live") {
                inv.ignored.push(ignored(
                    &format!("{}/{name}", ids::LATE_USAGE_DIR),
                    "a lease that is not a regular file (nobody can hold it)",
                ));
            }
            continue;
        }
        if let Some(id) = name.strip_suffix(".deleted").filter(|id| is_valid_id(id)) {
            inv.deleted_sessions.insert(id.to_owned());
        } else if let Some(id) = name.strip_suffix(".live").filter(|id| is_valid_id(id)) {
            let rel = format!("{}/{name}", ids::LATE_USAGE_DIR);
            match root.probe_lock(Path::new(&rel)) {
                Ok(LockProbe::Held) => {
                    inv.live_sessions.insert(id.to_owned());
                }
                Ok(_) => {}
                Err(e) => {
                    // A lease we cannot probe is treated as held: never touch what may be live.
                    inv.errors.push(Problem::from(&e));
                    inv.live_sessions.insert(id.to_owned());
                }
            }
        }
    }
}

fn scan_session_dir(
    root: &Root,
    id: &str,
    ext: &External,
    cache: Option<&VerdictCache>,
) -> (SessionDir, Vec<Ignored>, Vec<Problem>) {
    let mut ign = Vec::new();
    let mut errs = Vec::new();
    let mut dir = SessionDir {
        id: id.to_owned(),
        path: id.to_owned(),
        artifact_only: false,
        empty: false,
        newest_mtime: 0,
        stores: Vec::new(),
    };
    let Some(entries) = list_or_record(root, id, &mut errs) else {
        return (dir, ign, errs);
    };
    dir.empty = entries.is_empty();
    // An empty directory holds nothing to set aside: it is not artifact-only.
    let mut artifact_only = !entries.is_empty();
    let mut store_names = Vec::new();
    for e in &entries {
        let name = e.name.to_string_lossy();
        if e.kind == EntryKind::Symlink {
            ign.push(ignored(&format!("{id}/{name}"), "symlink (never followed)"));
            artifact_only = false;
            continue;
        }
        if e.kind == EntryKind::Dir && ids::is_store_name(&name) {
            store_names.push(name.into_owned());
            artifact_only = false;
            continue;
        }
        if ids::is_store_name(&name) {
            ign.push(ignored(
                &format!("{id}/{name}"),
                "named like a runtime store but not a directory",
            ));
        }
        let artifact_kind_ok = match name.as_ref() {
            "artifacts" => e.kind == EntryKind::Dir,
            "approval_receipts.jsonl" | "approval_receipts.lock" => e.kind == EntryKind::File,
            _ => false,
        };
        artifact_only &= artifact_kind_ok;
    }
    dir.stores = store_names
        .par_iter()
        .map(|name| scan_store(root, &format!("{id}/{name}"), ext, cache))
        .collect::<Vec<_>>()
        .into_iter()
        .map(|(store, i, e)| {
            ign.extend(i);
            errs.extend(e);
            store
        })
        .collect();
    if artifact_only {
        match newest_mtime(root, Path::new(id)) {
            Ok(t) => {
                dir.artifact_only = true;
                dir.newest_mtime = t;
            }
            Err(e) => errs.push(Problem::from(&e)),
        }
    }
    (dir, ign, errs)
}

fn newest_mtime(root: &Root, rel: &Path) -> fsroot::Result<i64> {
    let mut newest = root.stat(rel)?.map(|s| s.mtime).unwrap_or(0);
    for e in root.list(rel)? {
        let child = rel.join(&e.name);
        let t = if e.kind == EntryKind::Dir {
            newest_mtime(root, &child)?
        } else {
            root.stat(&child)?.map(|s| s.mtime).unwrap_or(0)
        };
        newest = newest.max(t);
    }
    Ok(newest)
}

fn scan_store(
    root: &Root,
    path: &str,
    ext: &External,
    cache: Option<&VerdictCache>,
) -> (Store, Vec<Ignored>, Vec<Problem>) {
    let mut ign = Vec::new();
    let mut errs = Vec::new();
    // The store's directory is held once and its entries listed once: the lock, the work
    // directories and the records below are found through that handle. Where it cannot be
    // listed, each of them is looked up by its path and its own error recorded.
    let mut held = root.hold_dir(Path::new(path)).ok();
    let listing = held.as_mut().and_then(|h| h.list().ok());
    if listing.is_none() {
        held = None;
    }
    let lock = format!("{path}/{}", ids::OWNER_LOCK);
    let probe = match &held {
        Some(h) => h.probe_lock(ids::OWNER_LOCK.as_ref()),
        None => root.probe_lock(Path::new(&lock)),
    };
    let held_lock = match probe {
        Ok(p) => p == LockProbe::Held,
        Err(e) => {
            // An owner lock we cannot probe is treated as held.
            errs.push(Problem::from(&e));
            true
        }
    };
    let mut holds_work = false;
    let mut threads_dir = false;
    for w in ids::WORK_DIRS {
        let rel = format!("{path}/{w}");
        let kind = match &listing {
            Some(entries) => Ok(entries
                .binary_search_by(|e| e.name.as_os_str().cmp(w.as_ref()))
                .ok()
                .map(|i| entries[i].kind)),
            None => root.stat(Path::new(&rel)).map(|s| s.map(|s| s.kind)),
        };
        match kind {
            Ok(None) => {}
            // The threads directory is listed once, by the thread scan below.
            Ok(Some(EntryKind::Dir)) if *w == "threads" => threads_dir = true,
            Ok(Some(EntryKind::Dir)) => match root.list(Path::new(&rel)) {
                Ok(v) => holds_work |= !v.is_empty(),
                Err(e) => {
                    errs.push(Problem::from(&e));
                    holds_work = true;
                }
            },
            Ok(Some(_)) => {
                ign.push(ignored(
                    &rel,
                    "a file where a work directory is expected (counted as work: the store is kept)",
                ));
                holds_work = true;
            }
            Err(e) => {
                errs.push(Problem::from(&e));
                holds_work = true;
            }
        }
    }
    let read = |name: &str| -> Result<Option<Value>, Problem> {
        let rel = format!("{path}/{name}");
        let bytes = match &held {
            Some(h) => h.read(name.as_ref()),
            None => root.read(Path::new(&rel)),
        };
        parse_if_present(root, &rel, bytes)
    };
    let state_rel = format!("{path}/state.json");
    match read("state.json") {
        Ok(None) => {}
        // The app's `RuntimeStoreState`: a state it cannot read keeps the store.
        Ok(Some(v)) => match crate::model::RuntimeStoreState::deserialize(&v) {
            Ok(state) => holds_work |= state.next_seq > 1,
            Err(e) => {
                let shown = root.display_path(Path::new(&state_rel));
                errs.push(Problem::invalid_data(
                    shown.to_string_lossy(),
                    format!(
                        "{} is not a store state the app can read (the store is kept): {e}",
                        shown.display()
                    ),
                ));
                holds_work = true;
            }
        },
        Err(e) => {
            errs.push(e);
            holds_work = true;
        }
    }
    let owner_id = match read("owner.json") {
        Ok(v) => v.and_then(|v| {
            v.get("owner_id")
                .and_then(Value::as_str)
                .filter(|o| is_valid_id(o))
                .map(str::to_owned)
        }),
        Err(e) => {
            errs.push(e);
            None
        }
    };
    if !holds_work && !ext.automations.is_empty() {
        if let Some(owner) = &owner_id {
            let store = crate::relpath::native(root.canonical_anchor(), path);
            let scope = crate::recover::execution_scope(owner, &store);
            holds_work = ext
                .automations
                .iter()
                .any(|a| contains_bytes(a, scope.as_bytes()));
        }
    }
    let (threads, seeded) = if threads_dir {
        let (threads, seeded, work) = scan_threads(root, path, &mut ign, &mut errs, cache);
        holds_work |= work;
        (threads, seeded)
    } else {
        (Vec::new(), BTreeSet::new())
    };
    let newer_thread = threads
        .iter()
        .any(|t| matches!(t.state, ThreadState::NewerSchema { .. }));
    let store = Store {
        path: path.to_owned(),
        held: held_lock,
        holds_work,
        owner_id,
        threads,
        newer_thread,
        seeded,
        recovery_errors: Vec::new(),
    };
    (store, ign, errs)
}

fn contains_bytes(hay: &[u8], needle: &[u8]) -> bool {
    !needle.is_empty() && hay.windows(needle.len()).any(|w| w == needle)
}

/// The JSON of a read file at `rel`; `Ok(None)` when no file was there.
fn parse_if_present(
    root: &Root,
    rel: &str,
    bytes: fsroot::Result<Vec<u8>>,
) -> Result<Option<Value>, Problem> {
    match bytes {
        Ok(bytes) => serde_json::from_slice(&bytes).map(Some).map_err(|e| {
            let shown = root.display_path(Path::new(rel));
            Problem::invalid_data(
                shown.to_string_lossy(),
                format!("cannot parse {}: {e}", shown.display()),
            )
        }),
        Err(e) if e.is_not_found() => Ok(None),
        Err(e) => Err(Problem::from(&e)),
    }
}

fn scan_threads(
    root: &Root,
    store: &str,
    ign: &mut Vec<Ignored>,
    errs: &mut Vec<Problem>,
    cache: Option<&VerdictCache>,
) -> (Vec<Thread>, BTreeSet<String>, bool) {
    let dir = format!("{store}/threads");
    let mut seeded = BTreeSet::new();
    let mut held = match root.hold_dir(Path::new(&dir)) {
        Ok(h) => h,
        Err(e) => {
            errs.push(Problem::from(&e));
            return (Vec::new(), seeded, true);
        }
    };
    let entries = match held.list() {
        Ok(v) => v,
        Err(e) => {
            errs.push(Problem::from(&e));
            return (Vec::new(), seeded, true);
        }
    };
    let work = !entries.is_empty();
    let mut tids = Vec::new();
    for e in entries {
        let name = e.name.to_string_lossy();
        if let Some(tid) = name.strip_suffix(".seed").filter(|t| is_valid_id(t)) {
            seeded.insert(tid.to_owned());
            continue;
        }
        match name.strip_suffix(".json") {
            Some(tid) if e.kind == EntryKind::File && is_valid_id(tid) => tids.push(tid.to_owned()),
            _ if e.kind == EntryKind::Symlink => ign.push(ignored(
                &format!("{dir}/{name}"),
                "symlink (never followed)",
            )),
            _ if e.kind == EntryKind::File && fsroot::temp::is_temp(&name) => {
                ign.push(ignored(&format!("{dir}/{name}"), INTERRUPTED_WRITE))
            }
            _ => ign.push(ignored(&format!("{dir}/{name}"), "not a thread record")),
        }
    }
    let results: Vec<Result<Thread, Problem>> = tids
        .par_iter()
        .map(|tid| {
            let name = format!("{tid}.json");
            // The cache, and the record's path it keys.
            let cached = cache.map(|c| (c, format!("{dir}/{name}")));
            let hit = cached.as_ref().and_then(|(c, rel)| {
                let stat = held.stat_for_read(name.as_ref()).ok()??;
                c.thread(rel, &stat).map(|e| (stat, e))
            });
            if let Some((stat, e)) = hit {
                return Ok(Thread {
                    id: tid.clone(),
                    digest: crate::Digest {
                        bytes: stat.len,
                        sha256: e.sha256,
                    },
                    state: ThreadState::Current {
                        session_id: e.session_id,
                        has_checkpoint: e.has_checkpoint,
                    },
                    recovery: None,
                    unbound_digest: None,
                });
            }
            let (bytes, stat) = held
                .read_with_stat(name.as_ref())
                .map_err(|e| Problem::from(&e))?;
            let digest = crate::Digest::of(&bytes);
            let state = judge_thread(tid, &bytes);
            if let (
                Some((c, rel)),
                ThreadState::Current {
                    session_id,
                    has_checkpoint,
                },
            ) = (&cached, &state)
            {
                c.keep_thread(rel, &stat, &digest, session_id.clone(), *has_checkpoint);
            }
            Ok(Thread {
                id: tid.clone(),
                digest,
                state,
                recovery: None,
                unbound_digest: None,
            })
        })
        .collect();
    // A fresh vector of exactly the threads: the results' buffer is larger per element.
    let mut threads = Vec::with_capacity(results.iter().filter(|r| r.is_ok()).count());
    for r in results {
        match r {
            Ok(t) => threads.push(t),
            Err(e) => errs.push(e),
        }
    }
    (threads, seeded, work)
}
