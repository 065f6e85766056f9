//! Builders of small session stores for the handle-leak, hostile-input and live-host tests:
//! readable documents, thread records, turns, empty stores, and a "rich" store on which one
//! real run applies every kind of action of the sessions pack (R1, R4, R3, R2, R5).

// Each test binary uses a different subset of these helpers.
#![allow(dead_code)]

use std::path::Path;

use serde_json::{json, Value};

/// The fixed clock of these tests: far enough in the future that every artifact directory the
/// tests create is idle (R5), whatever the system clock says.
pub const NOW: &str = "2099-01-01T00:00:00Z";

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

/// A readable document `id`, binding `data_dir` when given.
pub fn document(id: &str, data_dir: Option<&str>) -> Value {
    let mut metadata = json!({
        "id": id,
        "title": format!("Session {id}"),
        "created_at": "2026-09-01T10:00:00Z",
        "updated_at": "2026-09-01T11:00:00Z",
        "message_count": 2
    });
    if let Some(d) = data_dir {
        metadata["runtime_store"] = json!({ "data_dir": d });
    }
    json!({
        "schema_version": 1,
        "metadata": metadata,
        "messages": [
            { "role": "user", "content": format!("hello from {id}") },
            { "role": "assistant", "content": "hello" }
        ]
    })
}

/// A thread record `tid`, bound to `session_id` when given.
pub fn thread(tid: &str, session_id: Option<&str>) -> Value {
    let mut t = json!({
        "schema_version": 1,
        "id": tid,
        "created_at": "2026-09-01T10:00:00Z",
        "updated_at": "2026-09-01T11:00:00Z",
        "title": format!("Thread {tid}"),
        "latest_turn_id": "t1"
    });
    if let Some(sid) = session_id {
        t["session_id"] = json!(sid);
    }
    t
}

/// A completed turn of thread `tid`.
pub fn turn(tid: &str, turn_id: &str, seq: i64) -> Value {
    json!({
        "schema_version": 1,
        "id": turn_id,
        "thread_id": tid,
        "seq": seq,
        "created_at": "2026-09-01T10:30:00Z",
        "status": "completed",
        "messages": [
            { "role": "user", "content": format!("question {turn_id} of {tid}") },
            { "role": "assistant", "content": format!("answer {turn_id} of {tid}") }
        ],
        "usage": { "input_tokens": 10, "output_tokens": 20, "cost_usd": 0.001 }
    })
}

/// An empty runtime store at `s/store`: owner.json, state.json (`next_seq` 1), the lock file.
pub fn empty_store(s: &Path, store: &str) {
    write(
        s,
        &format!("{store}/owner.json"),
        br#"{"owner_id":"owner_1"}"#,
    );
    write(
        s,
        &format!("{store}/state.json"),
        br#"{"schema_version":1,"next_seq":1}"#,
    );
    write(s, &format!("{store}/runtime-process.owner.lock"), b"");
}

/// A store holding thread `tid` (bound to `session_id` when given) with `turns` completed turns.
pub fn store_with_thread(s: &Path, store: &str, tid: &str, session_id: Option<&str>, turns: i64) {
    empty_store(s, store);
    write(
        s,
        &format!("{store}/threads/{tid}.json"),
        pretty(&thread(tid, session_id)),
    );
    for n in 1..=turns {
        write(
            s,
            &format!("{store}/turns/{tid}/t{n}.json"),
            pretty(&turn(tid, &format!("t{n}"), n)),
        );
    }
}

/// A store on which one real run applies every kind of action:
///
/// - `torn.json`: R1 sets it aside;
/// - `lost/runtime`: a thread bound to the missing `lost` document: R4 unbinds it, R3 recovers
///   `th-lost.json` and binds it;
/// - `orphan/runtime`: an unbound thread with turns: R3 recovers `th-orphan.json`;
/// - `empty/runtime`: an empty store no document binds: R2 sets it aside;
/// - `old/`: an artifact-only directory nothing names: R5 sets it aside;
/// - `keep.json` and `keep/runtime`: a healthy session that nothing touches.
pub fn rich_store(s: &Path) {
    write(
        s,
        "torn.json",
        br#"{"schema_version":1,"metadata":{"id":"torn""#,
    );
    store_with_thread(s, "lost/runtime", "th-lost", Some("lost"), 2);
    store_with_thread(s, "orphan/runtime", "th-orphan", None, 1);
    empty_store(s, "empty/runtime");
    write(s, "old/artifacts/build.log", b"compiling\n");
    write(s, "old/approval_receipts.jsonl", b"");
    write(
        s,
        "keep.json",
        pretty(&document("keep", Some("keep/runtime"))),
    );
    store_with_thread(s, "keep/runtime", "th-keep", Some("keep"), 1);
}

/// How many actions a real run applies on [`rich_store`].
pub const RICH_ACTIONS: usize = 6;
