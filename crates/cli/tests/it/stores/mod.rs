//! Builders of small session stores for the handle-leak, hostile-input and live-host tests, in
//! the shape Codewhale writes (store-format.md, "Version 2"; codewhale-format.md §1, §4-§7):
//! readable documents with content blocks and an absolute `data_dir`, thread records with the
//! app's required fields, flat `turns/<turn id>.json` and `items/<item id>.json`, empty stores,
//! and a "rich" store on which one real run applies every kind of action of the sessions pack
//! (R1, R4, R3, R2, R5).
//!
//! The records themselves come from the one builder the tests, `host-sim` and the benchmark
//! share (`test_support::session`); this module says what each holds and where it goes in S.

use std::path::{Path, PathBuf};

use serde_json::{json, Value};
use sha2::{Digest, Sha256};
use test_support::session::{
    self, text_message, Checkpoint, Document, Item, Thread, Turn, CREATED_AT, UPDATED_AT,
};

pub use test_support::session::pretty;

/// The fixed clock of these tests: far enough in the future that every artifact directory the
/// tests create is idle (R5), whatever the system clock says.
pub const NOW: &str = "2099-01-01T00:00:00Z";

/// Writes `bytes` at `s/rel`, creating the parents.
pub fn write(s: &Path, rel: &str, bytes: impl AsRef<[u8]>) {
    let p = s.join(rel);
    std::fs::create_dir_all(p.parent().unwrap())
        .unwrap_or_else(|e| panic!("create parent of {}: {e}", p.display()));
    std::fs::write(&p, bytes).unwrap_or_else(|e| panic!("write {}: {e}", p.display()));
}

/// Lowercase hex SHA-256 of `bytes`.
pub fn sha256_hex(bytes: &[u8]) -> String {
    Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// `2026-09-01T10:00:00Z` plus `secs` seconds (less than 14 hours).
pub fn at(secs: u64) -> String {
    let t = 10 * 3600 + secs;
    assert!(t < 24 * 3600, "at({secs}) leaves the day");
    format!(
        "2026-09-01T{:02}:{:02}:{:02}Z",
        t / 3600,
        (t / 60) % 60,
        t % 60
    )
}

// ---------------------------------------------------------------------------------------------
// Messages and bindings
// ---------------------------------------------------------------------------------------------

/// The canonical (absolute) path of S.
pub fn canonical(s: &Path) -> PathBuf {
    s.canonicalize()
        .unwrap_or_else(|e| panic!("canonicalize {}: {e}", s.display()))
}

/// The `data_dir` the app records for the store `store` (relative to S): absolute, canonical.
pub fn data_dir(s: &Path, store: &str) -> String {
    canonical(s).join(store).to_string_lossy().into_owned()
}

/// The `owner_id` of the store `store` (relative to S): `owner_<32 hex>`, a function of the
/// store's path, so documents can compute the scope of a store before it is written.
pub fn owner_id(store: &str) -> String {
    format!("owner_{}", &sha256_hex(store.as_bytes())[..32])
}

/// The binding a document of S records for `store` (relative to S), as the app writes it: the
/// absolute canonical `data_dir` and its scope (`session::execution_scope`).
pub fn binding(s: &Path, store: &str) -> Value {
    let dir = canonical(s).join(store);
    session::binding(
        &dir.to_string_lossy(),
        &session::execution_scope(&owner_id(store), &dir),
    )
}

// ---------------------------------------------------------------------------------------------
// Documents
// ---------------------------------------------------------------------------------------------

/// The messages of the document `id`.
pub fn document_messages(id: &str) -> Vec<Value> {
    vec![
        text_message("user", &format!("hello from {id}")),
        text_message("assistant", "hello"),
    ]
}

/// A readable document `id` bound to no store.
pub fn document(id: &str) -> Value {
    document_with_binding(id, None)
}

/// A readable document `id` bound to the store `store` of S, with the absolute canonical
/// `data_dir` and the scope the app records. S must exist.
pub fn bound_document(s: &Path, id: &str, store: &str) -> Value {
    document_with_binding(id, Some(binding(s, store)))
}

/// A readable document `id` whose binding names `data_dir` verbatim (a relative path, a path
/// outside S): what a hostile or hand-edited document holds.
pub fn document_bound_to(id: &str, data_dir: &str) -> Value {
    document_with_binding(
        id,
        Some(session::binding(data_dir, &sha256_hex(data_dir.as_bytes()))),
    )
}

/// Document `id` titled `Session <id>`, holding [`document_messages`] and 30 tokens.
fn document_with_binding(id: &str, runtime_store: Option<Value>) -> Value {
    let title = format!("Session {id}");
    Document {
        runtime_store,
        total_tokens: 30,
        ..Document::new(id, &title, document_messages(id))
    }
    .into_value()
}

// ---------------------------------------------------------------------------------------------
// Threads, turns, items
// ---------------------------------------------------------------------------------------------

/// The id of turn `n` (from 1) of thread `tid`: unique in its store.
pub fn turn_id(tid: &str, n: u64) -> String {
    format!("turn_{tid}_{n}")
}

/// The ids of the two items of turn `n` of `tid`: the user's message, the agent's answer.
pub fn item_ids(tid: &str, n: u64) -> [String; 2] {
    [format!("item_{tid}_{n}_u"), format!("item_{tid}_{n}_a")]
}

/// The texts of turn `n` of `tid`: the question and the answer.
pub fn turn_texts(tid: &str, n: u64) -> [String; 2] {
    [
        format!("question {n} of {tid}"),
        format!("answer {n} of {tid}"),
    ]
}

/// A thread record `tid` (schema 2, every field the app requires), with `latest_turn_id` its
/// first turn; bound to `session_id` when given, with a checkpoint of the messages of
/// [`document`]`(session_id)`.
pub fn thread(tid: &str, session_id: Option<&str>) -> Value {
    let checkpoint = session_id.map(|sid| {
        let messages = document_messages(sid);
        (sid, session::messages_sha256(&messages), messages.len())
    });
    Thread {
        id: tid,
        created_at: CREATED_AT,
        updated_at: UPDATED_AT,
        latest_turn_id: Some(json!(turn_id(tid, 1))),
        title: &format!("Thread {tid}"),
        session: checkpoint.as_ref().map(|(sid, sha, len)| Checkpoint {
            session_id: json!(sid),
            covered_turn_id: json!(turn_id(tid, 1)),
            messages_sha256: sha,
            messages_len: *len,
        }),
    }
    .into_value()
}

/// Turn `n` (from 1) of thread `tid`, completed, with its two items; created `n` minutes after
/// [`CREATED_AT`].
pub fn turn(tid: &str, n: u64) -> Value {
    let start = n * 60;
    Turn {
        id: &turn_id(tid, n),
        thread_id: tid,
        input_summary: &turn_texts(tid, n)[0],
        created_at: &at(start),
        started_at: &at(start),
        ended_at: &at(start + 30),
        input_tokens: 10,
        output_tokens: 20,
        item_ids: item_ids(tid, n).into(),
    }
    .into_value()
}

/// The two items of turn `n` of `tid`: a `user_message` and an `agent_message`.
pub fn turn_items(tid: &str, n: u64) -> [Value; 2] {
    let start = n * 60;
    let [u, a] = item_ids(tid, n);
    let [q, r] = turn_texts(tid, n);
    let item = |id: &str, kind: &str, text: &str, from: u64, to: u64| {
        Item {
            id,
            turn_id: &turn_id(tid, n),
            kind,
            summary: &session::summary(text),
            detail: text,
            started_at: &at(from),
            ended_at: &at(to),
        }
        .into_value()
    };
    [
        item(&u, "user_message", &q, start, start + 1),
        item(&a, "agent_message", &r, start + 2, start + 30),
    ]
}

/// The messages the app rebuilds from turn `n` of `tid` (codewhale-format.md §7).
pub fn turn_messages(tid: &str, n: u64) -> Vec<Value> {
    let [q, r] = turn_texts(tid, n);
    vec![text_message("user", &q), text_message("assistant", &r)]
}

/// Writes turn `n` of `tid` and its items into the store `store` of S.
pub fn write_turn(s: &Path, store: &str, tid: &str, n: u64) {
    write(
        s,
        &format!("{store}/turns/{}.json", turn_id(tid, n)),
        pretty(&turn(tid, n)),
    );
    for item in turn_items(tid, n) {
        write(
            s,
            &format!("{store}/items/{}.json", item["id"].as_str().unwrap()),
            pretty(&item),
        );
    }
}

// ---------------------------------------------------------------------------------------------
// Stores
// ---------------------------------------------------------------------------------------------

/// An empty runtime store at `s/store`: `owner.json` (see [`owner_id`]), `state.json`
/// (`next_seq` 1), the owner lock file.
pub fn empty_store(s: &Path, store: &str) {
    write(
        s,
        &format!("{store}/owner.json"),
        pretty(&session::owner(&owner_id(store))),
    );
    write(
        s,
        &format!("{store}/state.json"),
        pretty(&session::state(1)),
    );
    write(s, &format!("{store}/runtime-process.owner.lock"), b"");
}

/// A store holding thread `tid` (bound to `session_id` when given) with `turns` completed
/// turns, each with its two items; `latest_turn_id` is the last turn (absent with none).
pub fn store_with_thread(s: &Path, store: &str, tid: &str, session_id: Option<&str>, turns: u64) {
    empty_store(s, store);
    let mut record = thread(tid, session_id);
    if turns == 0 {
        record.as_object_mut().unwrap().remove("latest_turn_id");
        if session_id.is_some() {
            record["saved_session_checkpoint"]["covered_turn_id"] = Value::Null;
        }
    } else {
        record["latest_turn_id"] = json!(turn_id(tid, turns));
        if session_id.is_some() {
            record["saved_session_checkpoint"]["covered_turn_id"] = json!(turn_id(tid, turns));
        }
    }
    write(s, &format!("{store}/threads/{tid}.json"), pretty(&record));
    for n in 1..=turns {
        write_turn(s, store, tid, n);
    }
}

/// A store on which one real run applies every kind of action (S is created if missing):
///
/// - `torn.json`: R1 sets it aside;
/// - `lost/runtime`: a store no document binds, holding a thread bound to the missing `lost`
///   document: R4 unbinds it, then R3 recovers `th-lost.json` and binds it;
/// - `orphan/runtime`: an unbound thread with a turn: R3 recovers `th-orphan.json`;
/// - `empty/runtime`: an empty store no document binds: R2 sets it aside (and removes the
///   session directory `empty/` it leaves empty, in the same action);
/// - `old-logs/`: an artifact-only directory nothing names: R5 sets it aside (its name is one
///   no document's text can hold by chance, since documents name the ids they contain);
/// - `keep.json` and `keep/runtime`: a healthy session that nothing touches.
pub fn rich_store(s: &Path) {
    std::fs::create_dir_all(s).unwrap();
    write(
        s,
        "torn.json",
        br#"{"schema_version":1,"metadata":{"id":"torn""#,
    );
    store_with_thread(s, "lost/runtime", "th-lost", Some("lost"), 2);
    store_with_thread(s, "orphan/runtime", "th-orphan", None, 1);
    empty_store(s, "empty/runtime");
    write(s, "old-logs/artifacts/build.log", b"compiling\n");
    write(s, "old-logs/approval_receipts.jsonl", b"");
    write(
        s,
        "keep.json",
        pretty(&bound_document(s, "keep", "keep/runtime")),
    );
    store_with_thread(s, "keep/runtime", "th-keep", Some("keep"), 1);
}

/// How many actions a real run applies on [`rich_store`]: R1 `torn.json`, R4 unbind `th-lost`,
/// R3 recover `th-lost`, R3 recover `th-orphan`, R2 `empty/runtime`, R5 `old-logs`.
pub const RICH_ACTIONS: usize = 6;
