//! The parallel scan of S into an [`Inventory`]: one read of each document, checkpoint, store
//! file and thread record, fanned out over rayon; message bodies are parsed, judged as the app
//! would load them, and dropped. Also the read-only look outside S that Version 2 asks for:
//! automation definitions and the task stores of `$CODEWHALE_HOME`.

use std::collections::{BTreeSet, HashMap, HashSet};
use std::path::Path;

use aho_corasick::{AhoCorasick, AhoCorasickBuilder};
use fsroot::{Entry, EntryKind, FileDigest, LockProbe, Problem, Root};
use rayon::prelude::*;

use crate::cache::{uuid_windows, VerdictCache};
use serde::Deserialize;
use serde_json::Value;
use sha2::{Digest, Sha256};

use crate::ids::{self, is_valid_id};
use crate::inventory::*;
use crate::model::{
    SavedSession, ThreadRecord, KNOWN_BLOCK_TYPES, KNOWN_JOURNAL_KINDS, KNOWN_ROLES,
    MAX_RUNTIME_SCHEMA_VERSION, SESSION_SCHEMA_VERSION,
};

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

/// Finds which session-directory ids a document's text names: a UUID-shaped id in any case,
/// any other id as a substring (the app's rule, codewhale-format.md §9.7 step 6; it errs toward
/// keeping), except a substring strictly inside a digest-like token ([`digest_spans`]): hex
/// digests and UUIDs are names of bytes, not text that names a session, and matching inside
/// them made a rerun after a kill keep a directory the uninterrupted run set aside (the
/// digests of a document R3 wrote in the killed run; issue 21). UUIDs are found by their shape: every 36-byte window whose ninth byte is a hyphen
/// is checked against the 8-4-4-4-12 pattern and looked up as 128 bits, so the cost is one pass
/// over the text whatever the number of ids. Other ids, usually few, go through one
/// Aho-Corasick automaton.
struct NameMatcher {
    uuids: HashMap<u128, Vec<String>>,
    others: Option<(AhoCorasick, Vec<String>)>,
    /// Ids whose automaton could not be built: every document names them (fails closed).
    unmatched: Vec<String>,
}

/// The 128 bits of a UUID-shaped window (`8-4-4-4-12` hex digits, any case).
pub(crate) fn uuid_bits(w: &[u8]) -> Option<u128> {
    if w.len() != 36 {
        return None;
    }
    let mut n: u128 = 0;
    for (i, &c) in w.iter().enumerate() {
        if matches!(i, 8 | 13 | 18 | 23) {
            if c != b'-' {
                return None;
            }
            continue;
        }
        let d = (c as char).to_digit(16)?;
        n = (n << 4) | u128::from(d);
    }
    Some(n)
}

impl NameMatcher {
    fn new(ids: &[String]) -> NameMatcher {
        let mut uuids: HashMap<u128, Vec<String>> = HashMap::new();
        let mut others = Vec::new();
        for id in ids {
            match uuid_bits(id.as_bytes()).filter(|_| ids::is_uuid(id)) {
                Some(n) => uuids.entry(n).or_default().push(id.clone()),
                None => others.push(id.clone()),
            }
        }
        let mut unmatched = Vec::new();
        let others = if others.is_empty() {
            None
        } else {
            match AhoCorasickBuilder::new().build(&others) {
                Ok(ac) => Some((ac, others)),
                Err(e) => {
                    tracing::warn!(
                        "cannot match names in documents ({e}): every id counts as named"
                    );
                    unmatched = others;
                    None
                }
            }
        };
        NameMatcher {
            uuids,
            others,
            unmatched,
        }
    }

    /// What [`NameMatcher::named`] gives for a text whose UUID-shaped windows are `uuids`
    /// ([`uuid_windows`]) and whose matches among the non-UUID ids are `others`.
    fn named_from(&self, uuids: &[u128], others: &[std::sync::Arc<str>]) -> BTreeSet<String> {
        let mut out: BTreeSet<String> = self.unmatched.iter().cloned().collect();
        for bits in uuids {
            if let Some(found) = self.uuids.get(bits) {
                out.extend(found.iter().cloned());
            }
        }
        if let Some((_, pats)) = &self.others {
            out.extend(
                others
                    .iter()
                    .filter(|o| pats.iter().any(|p| p.as_str() == &***o))
                    .map(|o| o.to_string()),
            );
        }
        out
    }

    /// The ids of `named` that are matched as substrings (not UUIDs).
    fn others_among(&self, named: &BTreeSet<String>) -> Vec<std::sync::Arc<str>> {
        match &self.others {
            Some((_, pats)) => pats
                .iter()
                .filter(|p| named.contains(*p))
                .map(|p| std::sync::Arc::from(p.as_str()))
                .collect(),
            None => Vec::new(),
        }
    }

    fn named(&self, text: &[u8]) -> BTreeSet<String> {
        let mut out: BTreeSet<String> = self.unmatched.iter().cloned().collect();
        if !self.uuids.is_empty() {
            for p in memchr::memchr_iter(b'-', text) {
                let Some(start) = p.checked_sub(8) else {
                    continue;
                };
                let Some(bits) = text.get(start..start + 36).and_then(uuid_bits) else {
                    continue;
                };
                if let Some(found) = self.uuids.get(&bits) {
                    out.extend(found.iter().cloned());
                }
            }
        }
        if let Some((ac, pats)) = &self.others {
            let mut seen = HashSet::new();
            // Computed at the first match only: most documents name no other id at all.
            let mut spans: Option<Vec<(usize, usize)>> = None;
            for m in ac.find_overlapping_iter(text) {
                if seen.contains(&m.pattern()) {
                    continue;
                }
                let spans = spans.get_or_insert_with(|| digest_spans(text));
                if inside_a_digest(spans, m.start(), m.end()) {
                    continue;
                }
                seen.insert(m.pattern());
                out.insert(pats[m.pattern().as_usize()].clone());
            }
        }
        out
    }
}

/// The shortest run of hex digits taken for a digest: an MD5 in hex (SHA-256 and BLAKE3 are 64).
const DIGEST_MIN_HEX: usize = 32;

/// The digest-like tokens of `text`, as sorted, disjoint `[start, end)` spans: every maximal
/// run of at least [`DIGEST_MIN_HEX`] ASCII hex digits, and every UUID-shaped window
/// (`8-4-4-4-12` hex digits, any case) whose first group is a whole run of hex digits.
fn digest_spans(text: &[u8]) -> Vec<(usize, usize)> {
    let hex = |c: u8| c.is_ascii_hexdigit();
    let mut spans = Vec::new();
    let mut i = 0;
    while i < text.len() {
        if !hex(text[i]) {
            i += 1;
            continue;
        }
        let start = i;
        while i < text.len() && hex(text[i]) {
            i += 1;
        }
        if i - start >= DIGEST_MIN_HEX {
            spans.push((start, i));
        } else if i - start == 8 && text.get(start..start + 36).and_then(uuid_bits).is_some() {
            spans.push((start, start + 36));
            i = start + 36;
        }
    }
    spans
}

/// Whether `[start, end)` lies inside one span of `spans` without being all of it: a name
/// that is a whole digest-like token still counts.
fn inside_a_digest(spans: &[(usize, usize)], start: usize, end: usize) -> bool {
    let at = spans.partition_point(|&(_, e)| e <= start);
    spans
        .get(at)
        .is_some_and(|&(s, e)| s <= start && end <= e && (s, e) != (start, end))
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

/// Size and SHA-256 of bytes in memory.
pub fn digest_of(bytes: &[u8]) -> FileDigest {
    FileDigest {
        bytes: bytes.len() as u64,
        sha256: fsroot::hex(&Sha256::digest(bytes)),
    }
}

/// A numeric `schema_version` above `known`. Floats such as `2.0` and integers beyond `u64`
/// (parsed as floats) count too: any newer number is kept, never judged as an older version.
/// Saturates at `u64::MAX`.
fn newer_than(v: Option<&Value>, known: u64) -> Option<u64> {
    let v = v?;
    if let Some(n) = v.as_u64() {
        return (n > known).then_some(n);
    }
    let f = v.as_f64()?;
    (f > known as f64).then_some(f as u64)
}

/// `T` parsed straight from `bytes`, when they are UTF-8 text. JSON text is UTF-8 (store-format.md:
/// readable means valid UTF-8 JSON), but a typed parse checks only the strings it keeps, and
/// skips an unknown member's bytes unchecked: text that is not UTF-8 is parsed generically
/// instead, which checks every string and so refuses it with serde_json's reason. A thread
/// record judged current is thereby one the rewrites can edit byte for byte.
fn typed<T: serde::de::DeserializeOwned>(bytes: &[u8]) -> serde_json::Result<T> {
    if std::str::from_utf8(bytes).is_ok() {
        serde_json::from_slice(bytes)
    } else {
        serde_json::from_slice::<Value>(bytes).and_then(T::deserialize)
    }
}

/// Reasons quote offending values; a reason is cut so a huge value cannot flood the plan, the
/// manifest or the terminal: to this many characters, then `…`.
pub const MAX_REASON_CHARS: usize = 300;

fn cut_reason(reason: String) -> String {
    match reason.char_indices().nth(MAX_REASON_CHARS) {
        Some((at, _)) => format!("{}…", &reason[..at]),
        None => reason,
    }
}

/// Judges the bytes of document `<id>.json` as the app loads it (store-format.md, Version 2):
/// readable, unknown content, newer schema, or unreadable with a reason.
pub fn judge_document(id: &str, bytes: &[u8]) -> DocState {
    match crate::fastdoc::readable(id, bytes) {
        Some(data_dir) => DocState::Readable {
            data_dir: data_dir.map(Into::into),
        },
        None => judge_document_exact(id, bytes),
    }
}

/// [`judge_document`] by the typed model alone, without the fast check in front: the two give
/// the same verdict for every input (compared by the tests on mutated documents).
pub fn judge_document_exact(id: &str, bytes: &[u8]) -> DocState {
    let unreadable = |reason: String| DocState::Unreadable {
        reason: cut_reason(format!("unreadable document: {reason}")),
        digest: digest_of(bytes),
    };
    // The common case in one pass, typed straight from the bytes as the app parses them (so
    // a duplicated key fails here as it fails there).
    let mut unknown = None;
    let session = match typed::<SavedSession>(bytes) {
        Ok(s) => {
            let journal = s.journal.as_ref().map_or(0, |j| j.schema_version);
            let version = s.schema_version.max(journal);
            if version > SESSION_SCHEMA_VERSION {
                let data_dir = s.metadata.runtime_store.map(|r| r.data_dir.into());
                return DocState::NewerSchema { version, data_dir };
            }
            s
        }
        Err(e) => {
            let mut value: Value = match serde_json::from_slice(bytes) {
                Ok(v) => v,
                Err(e) => return unreadable(e.to_string()),
            };
            // A newer document need not have the known shape: its version is read alone.
            if let Some(version) = newer_than(value.get("schema_version"), SESSION_SCHEMA_VERSION)
                .or_else(|| {
                    newer_than(
                        value.pointer("/journal/schema_version"),
                        SESSION_SCHEMA_VERSION,
                    )
                })
            {
                let data_dir = value
                    .pointer("/metadata/runtime_store/data_dir")
                    .and_then(Value::as_str)
                    .map(Into::into);
                return DocState::NewerSchema { version, data_dir };
            }
            // Readable but for names the doctor does not know? Replace them with known ones
            // and try again: only then is the document kept as unknown content.
            unknown = neutralize_unknown(&mut value);
            match (&unknown, SavedSession::deserialize(&value)) {
                (Some(_), Ok(s)) => s,
                _ => return unreadable(e.to_string()),
            }
        }
    };
    let data_dir = session
        .metadata
        .runtime_store
        .as_ref()
        .map(|r| r.data_dir.as_str().into());
    if session.metadata.id != id {
        return unreadable(format!(
            "metadata.id {:?} does not match the file name",
            session.metadata.id
        ));
    }
    if let Some(journal) = &session.journal {
        if let Err(why) = check_journal(journal) {
            return unreadable(format!("broken journal: {why}"));
        }
    }
    let unknown = unknown.or_else(|| {
        let roles = session.messages.iter().map(|m| m.role.as_str()).chain(
            session.journal.iter().flat_map(|j| {
                j.entries.iter().filter_map(|e| match &e.body {
                    crate::model::EntryBody::Message { message } => Some(message.role.as_str()),
                    _ => None,
                })
            }),
        );
        let mut roles = roles;
        roles
            .find(|r| !KNOWN_ROLES.contains(r))
            .map(|r| format!("message role {r:?}"))
    });
    match unknown {
        Some(unknown) => DocState::UnknownContent { data_dir, unknown },
        None => DocState::Readable { data_dir },
    }
}

/// Replaces every unknown content block `type` and journal entry `kind` in `doc` with a known
/// one, returning the first unknown name met (`None` when there was none).
fn neutralize_unknown(doc: &mut Value) -> Option<String> {
    let mut first = None;
    let fix_blocks = |msg: &mut Value, first: &mut Option<String>| {
        let Some(blocks) = msg.get_mut("content").and_then(Value::as_array_mut) else {
            return;
        };
        for b in blocks {
            let Some(t) = b.get("type").and_then(Value::as_str) else {
                continue;
            };
            if !KNOWN_BLOCK_TYPES.contains(&t) {
                first.get_or_insert_with(|| format!("content block type {t:?}"));
                *b = serde_json::json!({"type": "text", "text": ""});
            }
        }
    };
    if let Some(msgs) = doc.get_mut("messages").and_then(Value::as_array_mut) {
        for m in msgs {
            fix_blocks(m, &mut first);
        }
    }
    if let Some(entries) = doc
        .pointer_mut("/journal/entries")
        .and_then(Value::as_array_mut)
    {
        for e in entries {
            let Some(obj) = e.as_object_mut() else {
                continue;
            };
            match obj.get("kind").and_then(Value::as_str) {
                Some("message") => {
                    if let Some(m) = obj.get_mut("message") {
                        fix_blocks(m, &mut first);
                    }
                }
                Some(k) if !KNOWN_JOURNAL_KINDS.contains(&k) => {
                    first.get_or_insert_with(|| format!("journal entry kind {k:?}"));
                    obj.insert("kind".into(), "user".into());
                    obj.insert("text".into(), "".into());
                }
                _ => {}
            }
        }
    }
    first
}

/// The app's journal checks (codewhale-format.md §1.7 item 6): non-empty unique entry ids,
/// every parent present, the leaf present, no cycle.
fn check_journal(j: &crate::model::SessionJournal) -> Result<(), String> {
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

/// Judges the bytes of thread record `<tid>.json` as the app reads it (codewhale-format.md §5).
pub fn judge_thread(tid: &str, bytes: &[u8]) -> ThreadState {
    // The common case in one pass, typed straight from the bytes; the generic parse runs only
    // to judge a record the typed one refuses (a newer schema, or why it is unreadable).
    // A typed parse skips unknown fields at any depth, where the app's generic parse stops at
    // serde_json's recursion limit: a deeply nested record is parsed generically first.
    if nesting_exceeds(bytes, 100) {
        if let Err(e) = serde_json::from_slice::<Value>(bytes) {
            return ThreadState::Unreadable {
                reason: cut_reason(e.to_string()),
                session_id: None,
            };
        }
    }
    let typed_error = match typed::<ThreadRecord>(bytes) {
        Ok(record) if record.schema_version > MAX_RUNTIME_SCHEMA_VERSION => {
            return ThreadState::NewerSchema {
                version: record.schema_version,
                session_id: record.session_id,
            }
        }
        Ok(record) if record.id != tid => {
            return ThreadState::Unreadable {
                reason: "id does not match the file name".into(),
                session_id: record.session_id,
            }
        }
        Ok(record) => {
            return ThreadState::Current {
                has_checkpoint: record.saved_session_checkpoint.is_some(),
                session_id: record.session_id,
            }
        }
        Err(e) => e,
    };
    let value: Value = match serde_json::from_slice(bytes) {
        Ok(v) => v,
        Err(e) => {
            return ThreadState::Unreadable {
                reason: cut_reason(e.to_string()),
                session_id: None,
            }
        }
    };
    let raw_session_id = || {
        value
            .get("session_id")
            .and_then(Value::as_str)
            .map(str::to_owned)
    };
    if let Some(version) = newer_than(value.get("schema_version"), MAX_RUNTIME_SCHEMA_VERSION) {
        return ThreadState::NewerSchema {
            version,
            session_id: raw_session_id(),
        };
    }
    ThreadState::Unreadable {
        reason: cut_reason(typed_error.to_string()),
        session_id: raw_session_id(),
    }
}

/// Whether `bytes` nest arrays and objects deeper than `limit` (outside strings).
fn nesting_exceeds(bytes: &[u8], limit: usize) -> bool {
    let (mut depth, mut in_string, mut escaped) = (0usize, false, false);
    for &b in bytes {
        if in_string {
            match (escaped, b) {
                (true, _) => escaped = false,
                (false, b'\\') => escaped = true,
                (false, b'"') => in_string = false,
                _ => {}
            }
            continue;
        }
        match b {
            b'"' => in_string = true,
            b'[' | b'{' => {
                depth += 1;
                if depth > limit {
                    return true;
                }
            }
            b']' | b'}' => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    fn doc(extra: &str) -> String {
        format!(
            r#"{{"metadata":{{"id":"a","title":"t","created_at":"2026-09-01T10:00:00Z","updated_at":"2026-09-01T10:00:00Z","message_count":1,"total_tokens":0,"model":"m","workspace":"/w"}},"messages":[{{"role":"user","content":[{{"type":"text","text":"hi"}}]}}]{extra}}}"#
        )
    }

    #[test]
    fn text_that_is_not_utf8_is_unreadable_even_in_a_member_nobody_reads() {
        // Found by the fuzz targets `document` and `thread` (fuzz/regressions/*/
        // non-utf8-in-unknown-member): a typed parse skips an unknown member without checking
        // its bytes, but JSON text is UTF-8 (store-format.md: readable means valid UTF-8 JSON),
        // and a thread record the doctor cannot rewrite byte for byte must be left in place.
        let mut d = doc(r#","host_note":"caf?""#).into_bytes();
        let at = d.iter().rposition(|b| *b == b'?').unwrap();
        d[at] = 0xe9;
        for judged in [judge_document("a", &d), judge_document_exact("a", &d)] {
            match judged {
                DocState::Unreadable { reason, .. } => {
                    assert!(reason.contains("invalid unicode code point"), "{reason}")
                }
                other => panic!("{other:?}"),
            }
        }
        let mut t = br#"{"id":"t","created_at":"2026-09-01T10:00:00Z","updated_at":"2026-09-01T10:00:00Z","model":"m","workspace":"/w","mode":"agent","allow_shell":false,"trust_mode":false,"auto_approve":false,"session_id":"s","labels":["fix?"]}"#.to_vec();
        let at = t.iter().rposition(|b| *b == b'?').unwrap();
        t[at] = 0x93;
        match judge_thread("t", &t) {
            ThreadState::Unreadable { reason, .. } => {
                assert!(reason.contains("invalid unicode code point"), "{reason}")
            }
            other => panic!("{other:?}"),
        }
        assert!(crate::recover::unbind_bytes(&t, "2026-11-29T12:00:00Z").is_none());
    }

    #[test]
    fn a_real_document_without_schema_version_is_readable() {
        assert!(matches!(
            judge_document("a", doc("").as_bytes()),
            DocState::Readable { data_dir: None }
        ));
    }

    #[test]
    fn unknown_names_are_unknown_content_not_damage() {
        let d = doc("").replace(r#""type":"text","text":"hi""#, r#""type":"hologram""#);
        match judge_document("a", d.as_bytes()) {
            DocState::UnknownContent { unknown, .. } => {
                assert_eq!(unknown, r#"content block type "hologram""#)
            }
            other => panic!("{other:?}"),
        }
        let d = doc("").replace(r#""role":"user""#, r#""role":"critic""#);
        assert!(matches!(
            judge_document("a", d.as_bytes()),
            DocState::UnknownContent { .. }
        ));
        // An unknown block and a real defect: unreadable.
        let d = doc("")
            .replace(r#""type":"text","text":"hi""#, r#""type":"hologram""#)
            .replace(r#""model":"m","#, "");
        assert!(matches!(
            judge_document("a", d.as_bytes()),
            DocState::Unreadable { .. }
        ));
    }

    #[test]
    fn string_content_and_broken_journals_are_unreadable() {
        let d = doc("").replace(r#"[{"type":"text","text":"hi"}]"#, r#""hi""#);
        assert!(matches!(
            judge_document("a", d.as_bytes()),
            DocState::Unreadable { .. }
        ));
        let entry = |id: &str, parent: &str| {
            format!(
                r#"{{"id":"{id}",{parent}"kind":"user","text":"x","created_at":"2026-09-01T10:00:00Z"}}"#
            )
        };
        let ok = doc(&format!(
            r#","journal":{{"entries":[{},{}],"leaf_id":"e2"}}"#,
            entry("e1", ""),
            entry("e2", r#""parent_id":"e1","#)
        ));
        assert!(matches!(
            judge_document("a", ok.as_bytes()),
            DocState::Readable { .. }
        ));
        for bad in [
            format!(
                r#","journal":{{"entries":[{}]}}"#,
                entry("e1", r#""parent_id":"x","#)
            ),
            format!(
                r#","journal":{{"entries":[{}],"leaf_id":"zz"}}"#,
                entry("e1", "")
            ),
            format!(
                r#","journal":{{"entries":[{},{}]}}"#,
                entry("e1", r#""parent_id":"e2","#),
                entry("e2", r#""parent_id":"e1","#)
            ),
            format!(
                r#","journal":{{"entries":[{},{}]}}"#,
                entry("e1", ""),
                entry("e1", "")
            ),
        ] {
            assert!(
                matches!(
                    judge_document("a", doc(&bad).as_bytes()),
                    DocState::Unreadable { .. }
                ),
                "{bad}"
            );
        }
        let newer = doc(r#","journal":{"entries":[],"schema_version":2}"#);
        assert!(matches!(
            judge_document("a", newer.as_bytes()),
            DocState::NewerSchema { version: 2, .. }
        ));
    }

    #[test]
    fn a_deep_unknown_field_is_skipped_as_the_app_skips_it() {
        // The app's typed parser skips an unknown member whatever its depth (without
        // recursing), so the document loads there and is readable here; nothing overflows.
        let deep = |n: usize| doc(&format!(r#","x":{}{}"#, "[".repeat(n), "]".repeat(n)));
        assert!(matches!(
            judge_document("a", deep(500).as_bytes()),
            DocState::Readable { .. }
        ));
        assert!(matches!(
            judge_document("a", deep(200_000).as_bytes()),
            DocState::Readable { .. }
        ));
    }

    #[test]
    fn judged_as_the_app_parses_duplicates_and_float_versions() {
        // The app parses the bytes straight into its types: a duplicated key or a float
        // version fails there, so here too (a `Value` would silently keep the last key).
        let dup = doc("").replace(r#""title":"t","#, r#""title":"t","title":"u","#);
        assert!(matches!(
            judge_document("a", dup.as_bytes()),
            DocState::Unreadable { .. }
        ));
        let float = doc(r#","schema_version":1.0"#);
        assert!(matches!(
            judge_document("a", float.as_bytes()),
            DocState::Unreadable { .. }
        ));
        let dup_thread = br#"{"id":"t","id":"t","created_at":"2026-09-01T10:00:00Z","updated_at":"2026-09-01T10:00:00Z","model":"m","workspace":"/w","mode":"agent","allow_shell":false,"trust_mode":false,"auto_approve":false}"#;
        assert!(matches!(
            judge_thread("t", dup_thread),
            ThreadState::Unreadable { .. }
        ));
    }

    #[test]
    fn uuid_names_match_in_any_case_and_other_ids_as_substrings() {
        let ids = vec![
            "0F8FAD5B-D9CB-469F-A165-70867728950E".to_owned(),
            "build".to_owned(),
            "zzz".to_owned(),
        ];
        let m = NameMatcher::new(&ids);
        let named = m.named(b"see 0f8fad5b-d9cb-469f-a165-70867728950e and rebuilding");
        assert_eq!(
            named.into_iter().collect::<Vec<_>>(),
            ["0F8FAD5B-D9CB-469F-A165-70867728950E", "build"]
        );
        // Inside a longer token too (a substring), and only a whole UUID shape counts.
        let named = m.named(b"sess-a0f8fad5b-d9cb-469f-a165-70867728950eff");
        assert_eq!(
            named.into_iter().collect::<Vec<_>>(),
            ["0F8FAD5B-D9CB-469F-A165-70867728950E"]
        );
        assert!(m
            .named(b"0f8fad5b-d9cb-469f-a165-70867728950 0f8fad5b-d9cb-469f-a165_70867728950e")
            .is_empty());
    }

    /// Issue 21: a non-UUID id inside a hex digest or a UUID is not a name (a document R3 wrote
    /// in a killed run must not keep what the uninterrupted run set aside); the same id as
    /// text, or an id that is a whole digest-like token, still is.
    #[test]
    fn other_ids_inside_digests_and_uuids_are_not_names() {
        let sha = "5e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b85";
        let whole = "0123456789abcdef0123456789abcdef";
        let ids: Vec<String> = ["c1c149af", "d9cb", "1", whole, "build"]
            .map(str::to_owned)
            .to_vec();
        let m = NameMatcher::new(&ids);
        let names = |text: &str| m.named(text.as_bytes()).into_iter().collect::<Vec<_>>();
        let digests = format!(
            r#"{{"messages_sha256":"{sha}","id":"0f8fad5b-d9cb-469f-a165-70867728950e","n":"{}"}}"#,
            whole.to_uppercase().repeat(2)
        );
        assert_eq!(names(&digests), Vec::<String>::new(), "{digests}");
        // The same ids as text name their directories.
        assert_eq!(
            names(&format!("{digests} see c1c149af, d9cb-2 and build 1")),
            ["1", "build", "c1c149af", "d9cb"]
        );
        // A whole token, even one shaped like a digest, is a name.
        assert_eq!(names(&format!("x {whole} y")), [whole]);
        // A short hex run is no digest: an id inside it still counts (the app's substring rule).
        assert_eq!(names("ref abc1c149af0"), ["1", "c1c149af"]);
    }

    #[test]
    fn many_uuid_names_cost_one_pass() {
        let ids: Vec<String> = (0..5000u32)
            .map(|i| format!("{i:08x}-0000-4000-8000-000000000000"))
            .collect();
        let m = NameMatcher::new(&ids);
        let text = format!("x {} y {}", ids[4999].to_uppercase(), ids[7]);
        assert_eq!(
            m.named(text.as_bytes()).into_iter().collect::<Vec<_>>(),
            [ids[7].clone(), ids[4999].clone()]
        );
    }
}
