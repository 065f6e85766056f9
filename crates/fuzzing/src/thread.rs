//! Target `thread`: a thread record plus its store's turns and items → the thread's verdict,
//! its rewrites (unbind, bind), the rebuilt messages and the recovered document
//! (`store::judge_thread`, `store::recover`).
//!
//! Input: NUL-framed parts ([`crate::frame`]). The first is the thread record; each further
//! part is a turn when it starts with `T` (the rest is `turns/<n>.json`), else an item (without
//! its leading `I`, if any: `items/<n>.json`). They are written into one store, `sess/runtime`
//! of a temporary S with an `owner.json`.

use fsroot::Root;
use serde::Deserialize;
use serde_json::Value;
use sha2::{Digest, Sha256};
use store::judge::MAX_REASON_CHARS;
use store::model::{SavedSession, ThreadRecord, TurnRecord, MAX_RUNTIME_SCHEMA_VERSION};
use store::recover::{bind_bytes, build_recovered, messages_sha256, unbind_bytes, Recovered};
use store::{judge_document, judge_thread, DocState, ThreadState};

use crate::NUL;

/// The store the records are written into, relative to S.
const STORE: &str = "sess/runtime";
/// The instant the rewrites stamp.
const AT: &str = "2099-01-01T00:00:00Z";

/// Runs the thread record and its turns and items through the judge, the rewrites and the
/// recovery, and asserts:
///
/// * the verdict: current only when the typed record parses with this id and a known schema;
///   newer only above the known schema; either only for UTF-8 text; an unreadable reason under
///   the length cap;
/// * unbinding gives a JSON object with neither `session_id` nor `saved_session_checkpoint`
///   and with `updated_at` set, still a typed record when the input was one;
/// * a recovery, when there is one: the document loads as the app's `SavedSession`, is judged
///   readable under the thread's id and binds this store (its canonical path); its
///   `message_count`, the summary and the checkpoint agree on the number of messages;
///   `total_tokens` is the exact sum of the thread's turns' usage (no overflow); the checkpoint's
///   hash is the SHA-256 of the document's messages serialized compactly; and the record bound
///   to it parses back with that binding and that checkpoint.
pub fn thread(data: &[u8]) {
    let mut parts = data.split(|b| *b == NUL);
    let record = parts.next().unwrap_or_default();
    // The typed record, when the bytes are JSON text (UTF-8) that the typed model parses.
    let typed = std::str::from_utf8(record)
        .ok()
        .and_then(|_| serde_json::from_slice::<ThreadRecord>(record).ok());
    let tid = typed.as_ref().map_or("fuzz-thread", |t| t.id.as_str());
    check_verdict(tid, record, typed.as_ref());
    check_unbind(record, typed.is_some());
    // The planner recovers only records the judge finds current, which the typed model parses:
    // no store is built for any other.
    let Some(t) = typed else {
        return;
    };
    let turns: Vec<&[u8]> = parts.clone().filter(|p| p.first() == Some(&b'T')).collect();
    if let Ok((Some(r), canonical)) = build_recovered_in(record, parts) {
        check_recovered(record, &t, &r, &turns, &canonical);
    }
}

/// The store as a temporary S, and [`build_recovered`] over it with the canonical store path.
#[allow(clippy::type_complexity)]
fn build_recovered_in<'a>(
    record: &[u8],
    parts: impl Iterator<Item = &'a [u8]>,
) -> Result<(Option<Recovered>, String), String> {
    let tmp = tempfile::tempdir().expect("a temporary directory");
    let s = tmp.path();
    crate::write(
        s,
        &format!("{STORE}/owner.json"),
        br#"{"owner_id": "owner_fuzz"}"#,
    );
    std::fs::create_dir_all(s.join(STORE).join("threads")).expect("threads/");
    for (n, part) in parts.enumerate() {
        match part.split_first() {
            Some((b'T', turn)) => crate::write(s, &format!("{STORE}/turns/t{n}.json"), turn),
            Some((b'I', item)) => crate::write(s, &format!("{STORE}/items/i{n}.json"), item),
            _ => crate::write(s, &format!("{STORE}/items/i{n}.json"), part),
        }
    }
    let root = Root::open(s).expect("open the temporary S");
    let canonical = store::relpath::native(root.canonical_anchor(), STORE);
    let recovered = build_recovered(&root, STORE, record)?;
    Ok((recovered, canonical.to_string_lossy().into_owned()))
}

fn check_verdict(tid: &str, record: &[u8], typed: Option<&ThreadRecord>) {
    let verdict = judge_thread(tid, record);
    if !matches!(verdict, ThreadState::Unreadable { .. }) {
        assert!(
            std::str::from_utf8(record).is_ok(),
            "{verdict:?}, yet not UTF-8"
        );
    }
    match verdict {
        ThreadState::Current { session_id, .. } => {
            let t = typed.expect("current, yet the typed model refuses it");
            assert_eq!(t.id, tid, "current under another id");
            assert!(t.schema_version <= MAX_RUNTIME_SCHEMA_VERSION);
            assert_eq!(session_id, t.session_id);
        }
        ThreadState::NewerSchema { version, .. } => {
            assert!(
                version > MAX_RUNTIME_SCHEMA_VERSION,
                "newer schema {version}"
            );
        }
        ThreadState::Unreadable { reason, .. } => {
            let chars = reason.chars().count();
            let cut = usize::from(reason.ends_with('…'));
            assert!(
                chars <= MAX_REASON_CHARS + cut,
                "a reason of {chars} characters"
            );
            if let Some(t) = typed {
                assert!(
                    t.id != tid || t.schema_version > MAX_RUNTIME_SCHEMA_VERSION,
                    "unreadable, yet the typed record is current: {reason}"
                );
            }
        }
    }
}

fn check_unbind(record: &[u8], typed: bool) {
    let Some(out) = unbind_bytes(record, AT) else {
        assert!(!typed, "a typed record that cannot be unbound");
        return;
    };
    let v: Value = serde_json::from_slice(&out).expect("an unbound record is JSON");
    let obj = v.as_object().expect("an unbound record is an object");
    assert!(!obj.contains_key("session_id"));
    assert!(!obj.contains_key("saved_session_checkpoint"));
    assert_eq!(obj.get("updated_at").and_then(Value::as_str), Some(AT));
    if typed {
        let t: ThreadRecord = serde_json::from_slice(&out)
            .unwrap_or_else(|e| panic!("an unbound typed record no longer parses: {e}"));
        assert_eq!(t.session_id, None);
        assert_eq!(t.saved_session_checkpoint, None);
    }
}

fn check_recovered(
    record: &[u8],
    t: &ThreadRecord,
    r: &Recovered,
    turns: &[&[u8]],
    canonical: &str,
) {
    let doc: SavedSession = serde_json::from_slice(&r.document)
        .unwrap_or_else(|e| panic!("the recovered document does not load: {e}"));
    match judge_document(&t.id, &r.document) {
        DocState::Readable { data_dir } => {
            assert_eq!(data_dir.as_deref(), Some(canonical), "binds another store");
        }
        other => panic!("the recovered document is judged {other:?}"),
    }
    let value: Value = serde_json::from_slice(&r.document).expect("JSON");
    let n = doc.messages.len() as u64;
    assert!(n > 0, "a recovery of an empty conversation");
    assert_eq!(
        value.pointer("/metadata/message_count"),
        Some(&Value::from(n))
    );
    assert_eq!(r.summary.messages, n);
    assert_eq!(r.checkpoint.messages_len, Some(n));
    assert_eq!(r.checkpoint.covered_turn_id, t.latest_turn_id);
    // The thread's turns' usage, summed without any chance of overflow; each turn read as the
    // store's loader reads it (JSON first, then the typed record: a duplicated key counts once).
    let tokens: u128 = turns
        .iter()
        .filter_map(|p| serde_json::from_slice::<Value>(&p[1..]).ok())
        .filter_map(|v| TurnRecord::deserialize(&v).ok())
        .filter(|turn| turn.thread_id == t.id)
        .filter_map(|turn| turn.usage)
        .map(|u| u128::from(u.input_tokens) + u128::from(u.output_tokens))
        .sum();
    assert_eq!(
        value
            .pointer("/metadata/total_tokens")
            .and_then(Value::as_u64)
            .map(u128::from),
        Some(tokens),
        "total_tokens"
    );
    let compact = serde_json::to_vec(&value["messages"]).expect("messages serialize");
    let hash = fsroot::hex(&Sha256::digest(&compact));
    assert_eq!(r.checkpoint.messages_sha256, hash, "the checkpoint's hash");
    assert_eq!(
        messages_sha256(&doc.messages),
        hash,
        "the typed messages' hash"
    );
    let bound = bind_bytes(record, &t.id, &r.checkpoint, AT).expect("a typed record binds");
    let b: ThreadRecord = serde_json::from_slice(&bound)
        .unwrap_or_else(|e| panic!("the bound record no longer parses: {e}"));
    assert_eq!(b.session_id.as_deref(), Some(t.id.as_str()));
    assert_eq!(b.saved_session_checkpoint.as_ref(), Some(&r.checkpoint));
    assert_eq!(b.updated_at.0, AT);
}
