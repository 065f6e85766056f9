//! Builders of small session stores for the handle-leak, hostile-input and live-host tests, in
//! the shape Codewhale writes (store-format.md, "Version 2"; codewhale-format.md §1, §4-§7):
//! readable documents with content blocks and an absolute `data_dir`, thread records with the
//! app's required fields, flat `turns/<turn id>.json` and `items/<item id>.json`, empty stores,
//! and a "rich" store on which one real run applies every kind of action of the sessions pack
//! (R1, R4, R3, R2, R5).
//!
//! The builders use `serde_json::json!` only (with `preserve_order`, so keys keep the app's
//! order), never the library's model types.

use std::path::{Path, PathBuf};

use serde_json::{json, Value};
use sha2::{Digest, Sha256};

/// The fixed clock of these tests: far enough in the future that every artifact directory the
/// tests create is idle (R5), whatever the system clock says.
pub const NOW: &str = "2099-01-01T00:00:00Z";

/// When every document and thread of these builders was created, and last updated.
pub const CREATED_AT: &str = "2026-09-01T10:00:00Z";
pub const UPDATED_AT: &str = "2026-09-01T11:00:00Z";

/// `value` as pretty JSON with a trailing newline.
pub fn pretty(value: &Value) -> Vec<u8> {
    let mut b = serde_json::to_vec_pretty(value).unwrap();
    b.push(b'\n');
    b
}

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

/// A message with one `text` block, keys in the app's order.
pub fn text_message(role: &str, text: &str) -> Value {
    json!({ "role": role, "content": [{ "type": "text", "text": text }] })
}

/// The SHA-256 of `messages` serialized compactly, as the app fingerprints them in a thread's
/// `saved_session_checkpoint` (codewhale-format.md §5).
pub fn messages_sha256(messages: &[Value]) -> String {
    sha256_hex(&serde_json::to_vec(messages).unwrap())
}

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

/// The app's `execution_scope` of a store at the absolute path `data_dir` owned by `owner_id`:
/// SHA-256 of the owner id, a zero byte, and `<data_dir>/events.lock` (codewhale-format.md §4.5).
pub fn execution_scope(owner_id: &str, data_dir: &Path) -> String {
    let mut bytes = owner_id.as_bytes().to_vec();
    bytes.push(0);
    bytes.extend_from_slice(data_dir.join("events.lock").as_os_str().as_encoded_bytes());
    sha256_hex(&bytes)
}

/// The binding a document of S records for `store` (relative to S), as the app writes it.
pub fn binding(s: &Path, store: &str) -> Value {
    let dir = canonical(s).join(store);
    json!({
        "data_dir": dir.to_string_lossy(),
        "execution_scope": execution_scope(&owner_id(store), &dir),
    })
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
        Some(json!({
            "data_dir": data_dir,
            "execution_scope": sha256_hex(data_dir.as_bytes()),
        })),
    )
}

fn document_with_binding(id: &str, runtime_store: Option<Value>) -> Value {
    let messages = document_messages(id);
    let mut metadata = serde_json::Map::new();
    metadata.insert("id".into(), json!(id));
    if let Some(b) = runtime_store {
        metadata.insert("runtime_store".into(), b);
    }
    let rest = json!({
        "title": format!("Session {id}"),
        "created_at": CREATED_AT,
        "updated_at": UPDATED_AT,
        "message_count": messages.len(),
        "total_tokens": 30,
        "model": "deepseek-v4",
        "model_provider": "deepseek",
        "workspace": "/home/u/proj",
        "mode": "agent",
        "cost": test_support::default_cost()
    });
    metadata.extend(rest.as_object().unwrap().clone());
    json!({
        "schema_version": 1,
        "metadata": metadata,
        "messages": messages,
        "system_prompt": null
    })
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
    let mut t = json!({
        "schema_version": 2,
        "id": tid,
        "created_at": CREATED_AT,
        "updated_at": UPDATED_AT,
        "model": "deepseek-v4",
        "workspace": "/home/u/proj",
        "mode": "agent",
        "allow_shell": false,
        "trust_mode": false,
        "auto_approve": false,
        "latest_turn_id": turn_id(tid, 1),
        "archived": false,
        "title": format!("Thread {tid}")
    });
    if let Some(sid) = session_id {
        let messages = document_messages(sid);
        t["session_id"] = json!(sid);
        t["saved_session_checkpoint"] = json!({
            "covered_turn_id": turn_id(tid, 1),
            "messages_sha256": messages_sha256(&messages),
            "messages_len": messages.len()
        });
    }
    t
}

/// Turn `n` (from 1) of thread `tid`, completed, with its two items; created `n` minutes after
/// [`CREATED_AT`].
pub fn turn(tid: &str, n: u64) -> Value {
    let start = n * 60;
    json!({
        "schema_version": 2,
        "id": turn_id(tid, n),
        "thread_id": tid,
        "status": "completed",
        "input_summary": turn_texts(tid, n)[0],
        "created_at": at(start),
        "started_at": at(start),
        "ended_at": at(start + 30),
        "usage": { "input_tokens": 10, "output_tokens": 20 },
        "item_ids": item_ids(tid, n)
    })
}

/// The two items of turn `n` of `tid`: a `user_message` and an `agent_message`.
pub fn turn_items(tid: &str, n: u64) -> [Value; 2] {
    let start = n * 60;
    let [u, a] = item_ids(tid, n);
    let [q, r] = turn_texts(tid, n);
    let item = |id: &str, kind: &str, text: &str, from: u64, to: u64| {
        json!({
            "schema_version": 2,
            "id": id,
            "turn_id": turn_id(tid, n),
            "kind": kind,
            "status": "completed",
            "summary": text.chars().take(80).collect::<String>(),
            "detail": text,
            "artifact_refs": [],
            "started_at": at(from),
            "ended_at": at(to)
        })
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
        pretty(&json!({ "owner_id": owner_id(store) })),
    );
    write(
        s,
        &format!("{store}/state.json"),
        pretty(&json!({ "schema_version": 2, "next_seq": 1 })),
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
