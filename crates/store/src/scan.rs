//! The parallel scan of S into an [`Inventory`]: one read of each document, store file and
//! thread record, fanned out over rayon; message bodies are parsed, judged and dropped.

use std::collections::{BTreeSet, HashSet};
use std::path::Path;

use fsroot::{Entry, EntryKind, FileDigest, LockProbe, Root};
use rayon::prelude::*;
use serde_json::Value;
use sha2::{Digest, Sha256};

use crate::ids::{self, is_valid_id};
use crate::inventory::*;
use crate::model::KNOWN_SCHEMA_VERSION;
use crate::schema;

/// Scans S. Fails only when S itself cannot be listed; every other problem is recorded in
/// [`Inventory::errors`] and the scan goes on without that entry.
#[tracing::instrument(skip_all)]
pub fn scan(root: &Root) -> fsroot::Result<Inventory> {
    let top = root.list(Path::new(""))?;
    let mut inv = Inventory::default();
    let mut doc_ids = Vec::new();
    let mut dir_ids = Vec::new();
    for entry in top {
        let Some(name) = entry.name.to_str().map(str::to_owned) else {
            inv.ignored
                .push(ignored(&entry.name.to_string_lossy(), "name is not UTF-8"));
            continue;
        };
        match classify_top(&name, entry.kind) {
            Top::Document(id) => doc_ids.push(id),
            Top::SessionDir => dir_ids.push(name),
            Top::Checkpoints => scan_checkpoints(root, &mut inv),
            Top::LateUsage => scan_late_usage(root, &mut inv),
            Top::Doctor => {}
            Top::Ignored(why) => inv.ignored.push(ignored(&name, why)),
        }
    }

    let candidates: HashSet<&str> = dir_ids.iter().map(String::as_str).collect();
    let docs: Vec<(Document, Vec<String>, Option<ScanError>)> = doc_ids
        .par_iter()
        .map(|id| scan_document(root, id, &candidates))
        .collect();
    for (doc, named, err) in docs {
        inv.named_by_documents.extend(named);
        inv.errors.extend(err);
        inv.documents.push(doc);
    }

    let dirs: Vec<(SessionDir, Vec<Ignored>, Vec<ScanError>)> = dir_ids
        .par_iter()
        .map(|id| scan_session_dir(root, id))
        .collect();
    for (dir, ign, errs) in dirs {
        inv.ignored.extend(ign);
        inv.errors.extend(errs);
        inv.session_dirs.push(dir);
    }
    summarize_orphans(root, &mut inv);
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

/// For every unbound or dangling thread in a store nobody holds, reads its turns once to learn
/// whether it is recoverable, and digests the record as R4 would rewrite it.
fn summarize_orphans(root: &Root, inv: &mut Inventory) {
    let known: HashSet<String> = inv.known_ids().into_iter().map(str::to_owned).collect();
    let errors: Vec<ScanError> = inv
        .session_dirs
        .par_iter_mut()
        .flat_map_iter(|dir| dir.stores.iter_mut())
        .filter(|store| !store.held)
        .flat_map(|store| {
            let owner = store.owner_id.clone();
            let path = store.path.clone();
            let known = &known;
            store.threads.par_iter_mut().filter_map(move |t| {
                let ThreadState::Current { session_id, .. } = &t.state else {
                    return None;
                };
                if session_id.as_ref().is_some_and(|s| known.contains(s)) {
                    return None;
                }
                summarize_thread(root, &path, owner.as_deref(), t).err()
            })
        })
        .collect();
    inv.errors.extend(errors);
}

fn summarize_thread(
    root: &Root,
    store: &str,
    owner: Option<&str>,
    t: &mut Thread,
) -> Result<(), ScanError> {
    let bytes = root
        .read(Path::new(&t.path))
        .map_err(|e| scan_error(&t.path, &e))?;
    if let ThreadState::Current {
        session_id: Some(_),
        ..
    } = &t.state
    {
        t.unbound_digest = crate::recover::unbound_thread_bytes(&bytes).map(|b| digest_of(&b));
    }
    let Ok(record) = serde_json::from_slice::<crate::model::ThreadRecord>(&bytes) else {
        return Ok(());
    };
    let mut left_out = Vec::new();
    let built = crate::recover::build_recovered(root, store, owner, &record, &mut left_out)
        .map_err(|e| scan_error(&t.path, &e))?;
    t.recovery = built.map(|(r, n)| r.summary(n));
    t.left_out_turns = left_out;
    Ok(())
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
        _ if ids::RESERVED_FILES.contains(&name) => {
            return Top::Ignored("reserved name (host bookkeeping)")
        }
        _ => {}
    }
    match kind {
        EntryKind::File if ids::is_doctor_temp(name) => Top::Ignored(INTERRUPTED_WRITE),
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

fn scan_error(path: &str, e: &fsroot::Error) -> ScanError {
    ScanError {
        path: path.to_owned(),
        message: e.to_string(),
    }
}

fn scan_document(
    root: &Root,
    id: &str,
    candidates: &HashSet<&str>,
) -> (Document, Vec<String>, Option<ScanError>) {
    let path = format!("{id}.json");
    let (state, named, err) = match root.read(Path::new(&path)) {
        Ok(bytes) => {
            let (state, named) = judge_document(id, &bytes, candidates);
            (state, named, None)
        }
        Err(e) => (
            DocState::Inaccessible,
            Vec::new(),
            Some(scan_error(&path, &e)),
        ),
    };
    let doc = Document {
        id: id.to_owned(),
        path,
        state,
    };
    (doc, named, err)
}

/// Size and SHA-256 of bytes in memory.
pub fn digest_of(bytes: &[u8]) -> FileDigest {
    FileDigest {
        bytes: bytes.len() as u64,
        sha256: fsroot::hex(&Sha256::digest(bytes)),
    }
}

/// The declared `schema_version` when it is a number above the known version. Floats such as
/// `2.0` and integers beyond `u64` (parsed as floats) count too: any newer number is kept, never
/// judged as version 1. Saturates at `u64::MAX`.
fn newer_version(value: &Value) -> Option<u64> {
    let v = value.get("schema_version")?;
    if let Some(n) = v.as_u64() {
        return (n > KNOWN_SCHEMA_VERSION).then_some(n);
    }
    let f = v.as_f64()?;
    (f > KNOWN_SCHEMA_VERSION as f64).then_some(f as u64)
}

/// Reasons quote offending values; a reason is cut so a huge value cannot flood the plan, the
/// manifest or the terminal.
const MAX_REASON_CHARS: usize = 300;

fn cut_reason(reason: String) -> String {
    match reason.char_indices().nth(MAX_REASON_CHARS) {
        Some((at, _)) => format!("{}…", &reason[..at]),
        None => reason,
    }
}

/// Judges the bytes of document `<id>.json`: readable, newer schema, or unreadable with a
/// reason. For a readable document, also returns which of `candidates` its text names.
pub fn judge_document(
    id: &str,
    bytes: &[u8],
    candidates: &HashSet<&str>,
) -> (DocState, Vec<String>) {
    let unreadable = |reason: String| DocState::Unreadable {
        reason: cut_reason(format!("unreadable document: {reason}")),
        digest: digest_of(bytes),
    };
    let value: Value = match serde_json::from_slice(bytes) {
        Ok(v) => v,
        Err(e) => return (unreadable(e.to_string()), Vec::new()),
    };
    let data_dir = value
        .pointer("/metadata/runtime_store/data_dir")
        .and_then(Value::as_str)
        .map(str::to_owned);
    if let Some(version) = newer_version(&value) {
        return (DocState::NewerSchema { version, data_dir }, Vec::new());
    }
    if let Some(err) = schema::first_error(schema::document_validator(), &value) {
        return (unreadable(err), Vec::new());
    }
    let declared = value.pointer("/metadata/id").and_then(Value::as_str);
    if declared != Some(id) {
        let declared = declared.unwrap_or_default();
        return (
            unreadable(format!(
                "metadata.id {declared:?} does not match the file name"
            )),
            Vec::new(),
        );
    }
    drop(value);
    let mut named = BTreeSet::new();
    if !candidates.is_empty() {
        // Most tokens of a conversation are words no candidate id can equal: a length check
        // skips them before any hashing.
        let max_len = candidates.iter().map(|c| c.len()).max().unwrap_or(0);
        ids::for_each_token(bytes, |tok| {
            if tok.len() > max_len {
                return;
            }
            // Id bytes are ASCII, so a token is always valid UTF-8.
            if let Ok(t) = std::str::from_utf8(tok) {
                if candidates.contains(t) {
                    named.insert(t.to_owned());
                }
            }
        });
    }
    (DocState::Readable { data_dir }, named.into_iter().collect())
}

fn list_or_record(root: &Root, rel: &str, errors: &mut Vec<ScanError>) -> Option<Vec<Entry>> {
    match root.list(Path::new(rel)) {
        Ok(v) => Some(v),
        Err(e) => {
            errors.push(scan_error(rel, &e));
            None
        }
    }
}

fn scan_checkpoints(root: &Root, inv: &mut Inventory) {
    let Some(entries) = list_or_record(root, "checkpoints", &mut inv.errors) else {
        return;
    };
    for e in entries {
        let name = e.name.to_string_lossy();
        match name.strip_suffix(".json") {
            Some(id) if e.kind == EntryKind::File && is_valid_id(id) => {
                inv.checkpoints.insert(id.to_owned());
            }
            _ => inv
                .ignored
                .push(ignored(&format!("checkpoints/{name}"), "not a checkpoint")),
        }
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
                    inv.errors.push(scan_error(&rel, &e));
                    inv.live_sessions.insert(id.to_owned());
                }
            }
        }
    }
}

fn scan_session_dir(root: &Root, id: &str) -> (SessionDir, Vec<Ignored>, Vec<ScanError>) {
    let mut ign = Vec::new();
    let mut errs = Vec::new();
    let mut dir = SessionDir {
        id: id.to_owned(),
        path: id.to_owned(),
        artifact_only: false,
        newest_mtime: 0,
        stores: Vec::new(),
    };
    let Some(entries) = list_or_record(root, id, &mut errs) else {
        return (dir, ign, errs);
    };
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
        .map(|name| scan_store(root, &format!("{id}/{name}")))
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
            Err(e) => errs.push(scan_error(id, &e)),
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

fn scan_store(root: &Root, path: &str) -> (Store, Vec<Ignored>, Vec<ScanError>) {
    let mut ign = Vec::new();
    let mut errs = Vec::new();
    let lock = format!("{path}/{}", ids::OWNER_LOCK);
    let held = match root.probe_lock(Path::new(&lock)) {
        Ok(p) => p == LockProbe::Held,
        Err(e) => {
            // An owner lock we cannot probe is treated as held.
            errs.push(scan_error(&lock, &e));
            true
        }
    };
    let mut holds_work = false;
    for w in ids::WORK_DIRS {
        let rel = format!("{path}/{w}");
        match root.stat(Path::new(&rel)) {
            Ok(None) => {}
            Ok(Some(s)) if s.kind == EntryKind::Dir => match root.list(Path::new(&rel)) {
                Ok(v) => holds_work |= !v.is_empty(),
                Err(e) => {
                    errs.push(scan_error(&rel, &e));
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
                errs.push(scan_error(&rel, &e));
                holds_work = true;
            }
        }
    }
    let state_rel = format!("{path}/state.json");
    match read_json_if_present(root, &state_rel) {
        Ok(None) => {}
        Ok(Some(v)) => {
            let next_seq = v.get("next_seq");
            match next_seq {
                None => {}
                Some(n) => holds_work |= n.as_u64().is_none_or(|n| n > 1),
            }
        }
        Err(e) => {
            errs.push(e);
            holds_work = true;
        }
    }
    let owner_id = match read_json_if_present(root, &format!("{path}/owner.json")) {
        Ok(v) => v.and_then(|v| v.get("owner_id").and_then(Value::as_str).map(str::to_owned)),
        Err(e) => {
            errs.push(e);
            None
        }
    };
    let threads = scan_threads(root, path, &mut ign, &mut errs);
    let store = Store {
        path: path.to_owned(),
        held,
        holds_work,
        owner_id,
        threads,
    };
    (store, ign, errs)
}

fn read_json_if_present(root: &Root, rel: &str) -> Result<Option<Value>, ScanError> {
    match root.read(Path::new(rel)) {
        Ok(bytes) => serde_json::from_slice(&bytes)
            .map(Some)
            .map_err(|e| ScanError {
                path: rel.to_owned(),
                message: format!(
                    "cannot parse {}: {e}",
                    root.display_path(Path::new(rel)).display()
                ),
            }),
        Err(e) if e.is_not_found() => Ok(None),
        Err(e) => Err(scan_error(rel, &e)),
    }
}

fn scan_threads(
    root: &Root,
    store: &str,
    ign: &mut Vec<Ignored>,
    errs: &mut Vec<ScanError>,
) -> Vec<Thread> {
    let dir = format!("{store}/threads");
    match root.stat(Path::new(&dir)) {
        Ok(Some(s)) if s.kind == EntryKind::Dir => {}
        _ => return Vec::new(),
    }
    let Some(entries) = list_or_record(root, &dir, errs) else {
        return Vec::new();
    };
    let mut tids = Vec::new();
    for e in entries {
        let name = e.name.to_string_lossy();
        match name.strip_suffix(".json") {
            Some(tid) if e.kind == EntryKind::File && is_valid_id(tid) => tids.push(tid.to_owned()),
            _ if e.kind == EntryKind::Symlink => ign.push(ignored(
                &format!("{dir}/{name}"),
                "symlink (never followed)",
            )),
            _ if e.kind == EntryKind::File && ids::is_doctor_temp(&name) => {
                ign.push(ignored(&format!("{dir}/{name}"), INTERRUPTED_WRITE))
            }
            _ => ign.push(ignored(&format!("{dir}/{name}"), "not a thread record")),
        }
    }
    let results: Vec<Result<Thread, ScanError>> = tids
        .par_iter()
        .map(|tid| {
            let path = format!("{dir}/{tid}.json");
            let bytes = root
                .read(Path::new(&path))
                .map_err(|e| scan_error(&path, &e))?;
            Ok(Thread {
                id: tid.clone(),
                digest: digest_of(&bytes),
                state: judge_thread(tid, &bytes),
                path,
                recovery: None,
                unbound_digest: None,
                left_out_turns: Vec::new(),
            })
        })
        .collect();
    results
        .into_iter()
        .filter_map(|r| r.map_err(|e| errs.push(e)).ok())
        .collect()
}

/// Judges the bytes of thread record `<tid>.json`.
pub fn judge_thread(tid: &str, bytes: &[u8]) -> ThreadState {
    let value: Value = match serde_json::from_slice(bytes) {
        Ok(v) => v,
        Err(e) => {
            return ThreadState::Unreadable {
                reason: cut_reason(e.to_string()),
            }
        }
    };
    if let Some(version) = newer_version(&value) {
        let session_id = value
            .get("session_id")
            .and_then(Value::as_str)
            .map(str::to_owned);
        return ThreadState::NewerSchema {
            version,
            session_id,
        };
    }
    if let Some(reason) = schema::first_error(schema::thread_validator(), &value) {
        return ThreadState::Unreadable {
            reason: cut_reason(reason),
        };
    }
    if value.get("id").and_then(Value::as_str) != Some(tid) {
        return ThreadState::Unreadable {
            reason: "id does not match the file name".into(),
        };
    }
    ThreadState::Current {
        session_id: value
            .get("session_id")
            .and_then(Value::as_str)
            .map(str::to_owned),
        has_checkpoint: value
            .get("saved_session_checkpoint")
            .is_some_and(|c| !c.is_null()),
    }
}
