//! Recovery (R3) and the thread rewrites (bind, unbind), as the app would load them
//! (store-format.md and rules.md, Version 2): the store's flat turns and items, the messages
//! rebuilt from them, the recovered `SavedSession` with its journal and binding, and the
//! thread record edited in place. Each is a pure function of the store's contents and the
//! plan's instant: the planner summarises exactly what the executor writes.

use std::collections::{BTreeSet, HashMap};
use std::path::Path;

use fsroot::{EntryKind, Problem, Root};
use serde::Deserialize;
use serde_json::value::RawValue;
use serde_json::{json, Map, Value};
use sha2::{Digest, Sha256};

use crate::ids::{derived_uuid, is_valid_id};
use crate::inventory::{Inventory, RecoveryError, RecoverySummary, ThreadState};
use crate::model::{
    Message, SavedSessionCheckpoint, ThreadRecord, TurnItemRecord, TurnRecord,
    MAX_RUNTIME_SCHEMA_VERSION,
};

/// `runtime_store.execution_scope` (codewhale-format.md §4.5, platforms.md §8.2): lowercase hex
/// SHA-256 of the store's `owner_id`, a zero byte, and `<canonical store path>/events.lock`.
pub fn execution_scope(owner_id: &str, canonical_store: &Path) -> String {
    let mut h = Sha256::new();
    h.update(owner_id.as_bytes());
    h.update([0u8]);
    // The bytes the app hashes (`as_encoded_bytes`): a Unix path's own bytes, WTF-8 on
    // Windows (platforms.md §2), with the OS's separator before `events.lock`.
    h.update(
        canonical_store
            .join("events.lock")
            .as_os_str()
            .as_encoded_bytes(),
    );
    fsroot::hex(&h.finalize())
}

/// SHA-256 (hex) of the app's compact serialization of `messages` (`session_messages_sha256`).
pub fn messages_sha256(messages: &[Message]) -> String {
    let compact = serde_json::to_vec(messages).expect("messages serialize");
    fsroot::hex(&Sha256::digest(&compact))
}

/// The turns and items of one store, grouped: turns by `thread_id`, items by `turn_id`.
#[derive(Debug, Default)]
pub struct StoreRecords {
    /// Turns of each thread.
    pub turns: HashMap<String, Vec<TurnRecord>>,
    /// Items of each turn.
    pub items: HashMap<String, Vec<TurnItemRecord>>,
}

/// Reads every `turns/*.json` and `items/*.json` of `store` (relative to S). A record that
/// cannot be read, does not parse, is of a newer schema or breaks a schema rule fails the whole
/// store, as in the app (codewhale-format.md §6.4); every such record is named, each error
/// naming its file.
pub fn load_store_records(root: &Root, store: &str) -> Result<StoreRecords, Vec<RecoveryError>> {
    let mut out = StoreRecords::default();
    let mut errors = Vec::new();
    for (path, turn) in read_records::<TurnRecord>(root, &format!("{store}/turns"), &mut errors) {
        if (turn.schema_version == 4) != turn.max_output_tokens.is_some() {
            errors.push(RecoveryError::OutputAllowance { path });
            continue;
        }
        out.turns
            .entry(turn.thread_id.clone())
            .or_default()
            .push(turn);
    }
    for (path, item) in read_records::<TurnItemRecord>(root, &format!("{store}/items"), &mut errors)
    {
        // The app validates the image input of every user message when it loads the items.
        if item.kind == crate::model::ItemKind::UserMessage {
            if let Err(reason) = crate::rebuild::user_content(&item) {
                errors.push(RecoveryError::ImageInput { path, reason });
                continue;
            }
        }
        out.items
            .entry(item.turn_id.clone())
            .or_default()
            .push(item);
    }
    if errors.is_empty() {
        Ok(out)
    } else {
        Err(errors)
    }
}

fn read_records<T: for<'de> Deserialize<'de>>(
    root: &Root,
    dir: &str,
    errors: &mut Vec<RecoveryError>,
) -> Vec<(String, T)> {
    let entries = match root.list(Path::new(dir)) {
        Ok(v) => v,
        Err(e) if e.is_not_found() => return Vec::new(),
        Err(e) => {
            errors.push(RecoveryError::Unreadable(Problem::from(&e)));
            return Vec::new();
        }
    };
    let mut out = Vec::new();
    for e in entries {
        let name = e.name.to_string_lossy();
        let Some(stem) = name.strip_suffix(".json") else {
            continue;
        };
        let path = format!("{dir}/{name}");
        if e.kind != EntryKind::File || !is_valid_id(stem) {
            errors.push(RecoveryError::NotARecordFile { path });
            continue;
        }
        let bytes = match root.read(Path::new(&path)) {
            Ok(b) => b,
            Err(e) => {
                errors.push(RecoveryError::Unreadable(Problem::from(&e)));
                continue;
            }
        };
        let value: Value = match serde_json::from_slice(&bytes) {
            Ok(v) => v,
            Err(e) => {
                errors.push(RecoveryError::DoesNotParse {
                    path,
                    reason: e.to_string(),
                });
                continue;
            }
        };
        if let Some(v) = value.get("schema_version").and_then(Value::as_f64) {
            if v > MAX_RUNTIME_SCHEMA_VERSION as f64 {
                errors.push(RecoveryError::NewerSchema { path, version: v });
                continue;
            }
        }
        match T::deserialize(&value) {
            Ok(rec) => out.push((path, rec)),
            Err(e) => errors.push(RecoveryError::NotAValidRecord {
                path,
                reason: e.to_string(),
            }),
        }
    }
    out
}

/// The thread's record parsed, and its rebuilt messages with the turns they came from.
struct Rebuilt<'r> {
    thread: ThreadRecord,
    turns: &'r [TurnRecord],
    messages: Vec<Message>,
}

fn rebuild(
    records: &StoreRecords,
    thread: ThreadRecord,
) -> Result<Option<Rebuilt<'_>>, RecoveryError> {
    let turns: &[TurnRecord] = records.turns.get(&thread.id).map_or(&[], Vec::as_slice);
    if turns.is_empty() {
        return Ok(None);
    }
    let refs: Vec<&TurnRecord> = turns.iter().collect();
    let messages = crate::rebuild::rebuild_thread(&refs, &records.items).map_err(|error| {
        RecoveryError::Rebuild {
            thread: thread.id.clone(),
            error,
        }
    })?;
    if messages.is_empty() {
        return Ok(None);
    }
    Ok(Some(Rebuilt {
        thread,
        turns,
        messages,
    }))
}

/// Fills in, for the planner, what the rules need beyond the scan: for every dangling thread
/// (bound to no known session) in a store nobody holds, the digest of its record once unbound
/// at `planned_at`; and for every store in `recoverable` (those the R3 gate admits), what a
/// recovery of each unbound or dangling thread would hold, or the error that keeps the store.
///
/// `known` tells whether a session id is known (a known document or a checkpoint): the
/// reference set answers it, so no second set of every id is built here.
pub fn prepare(
    root: &Root,
    inv: &mut Inventory,
    recoverable: &BTreeSet<String>,
    planned_at: &str,
    known: &(dyn Fn(&str) -> bool + Sync),
) {
    use rayon::prelude::*;
    inv.session_dirs
        .par_iter_mut()
        .flat_map_iter(|d| d.stores.iter_mut())
        .filter(|s| !s.held && !s.newer_thread)
        .for_each(|store| {
            let mut candidates = Vec::new();
            for (i, t) in store.threads.iter_mut().enumerate() {
                let ThreadState::Current { session_id, .. } = &t.state else {
                    continue;
                };
                let dangling = session_id.as_ref().is_some_and(|s| !known(s.as_str()));
                if session_id.is_some() && !dangling {
                    continue;
                }
                let Ok(bytes) =
                    root.read(Path::new(&format!("{}/threads/{}.json", store.path, t.id)))
                else {
                    continue;
                };
                if dangling {
                    t.unbound_digest =
                        unbind_bytes(&bytes, planned_at).map(|b| Box::new(crate::digest_of(&b)));
                }
                if !store.seeded.contains(&t.id) {
                    if let Ok(record) = serde_json::from_slice::<ThreadRecord>(&bytes) {
                        candidates.push((i, record));
                    }
                }
            }
            if !recoverable.contains(&store.path) || candidates.is_empty() {
                return;
            }
            let records = match load_store_records(root, &store.path) {
                Ok(r) => r,
                Err(e) => {
                    store.recovery_errors = e;
                    return;
                }
            };
            for (i, record) in candidates {
                match rebuild(&records, record) {
                    Ok(Some(r)) => {
                        store.threads[i].recovery = Some(Box::new(RecoverySummary {
                            turns: r.turns.len() as u64,
                            messages: r.messages.len() as u64,
                        }));
                    }
                    Ok(None) => {}
                    Err(e) => store.recovery_errors.push(e),
                }
            }
            if !store.recovery_errors.is_empty() {
                for t in &mut store.threads {
                    t.recovery = None;
                }
            }
        });
}

/// A recovered document and the checkpoint that binds its thread to it.
#[derive(Debug, Clone)]
pub struct Recovered {
    /// The document's bytes (pretty JSON, trailing newline).
    pub document: Vec<u8>,
    /// The thread's new `saved_session_checkpoint`.
    pub checkpoint: SavedSessionCheckpoint,
    /// Counts.
    pub summary: RecoverySummary,
}

/// The default `SessionCostSnapshot` (every field at its default).
fn default_cost() -> Value {
    json!({
        "session_cost_usd": 0.0,
        "session_cost_cny": 0.0,
        "subagent_cost_usd": 0.0,
        "subagent_cost_cny": 0.0,
        "displayed_cost_high_water_usd": 0.0,
        "displayed_cost_high_water_cny": 0.0,
        "priced_turns": 0,
        "unpriced_turns": 0,
        "cny_priced_turns": 0,
        "cny_unpriced_turns": 0,
        "coverage_recorded": false
    })
}

/// Builds the recovered document of the thread whose record is `thread_bytes`, in `store`
/// (relative to S), per codewhale-format.md §8 with the deliberate differences of Version 2.
/// `Ok(None)`: not recoverable (no turn, or an empty conversation). `Err`: the store's records
/// are broken, or it has no readable `owner.json` (its binding could not validate).
pub fn build_recovered(
    root: &Root,
    store: &str,
    thread_bytes: &[u8],
) -> Result<Option<Recovered>, String> {
    let thread: ThreadRecord = serde_json::from_slice(thread_bytes)
        .map_err(|e| format!("thread record does not parse: {e}"))?;
    let owner = crate::recover::owner_id(root, store)
        .ok_or_else(|| format!("{store} has no readable owner.json"))?;
    let records = load_store_records(root, store).map_err(|e| {
        e.iter()
            .map(ToString::to_string)
            .collect::<Vec<_>>()
            .join("; ")
    })?;
    let Some(r) = rebuild(&records, thread).map_err(|e| e.to_string())? else {
        return Ok(None);
    };
    let canonical = crate::relpath::native(root.canonical_anchor(), store);
    let scope = execution_scope(&owner, &canonical);
    let t = &r.thread;
    let latest = r
        .turns
        .iter()
        .map(|t| t.ended_at.as_ref().unwrap_or(&t.created_at))
        .max_by_key(|at| (at.timestamp(), at.0.clone()))
        .map(|at| at.0.clone())
        .unwrap_or_else(|| t.created_at.0.clone());
    let tokens: u64 = r
        .turns
        .iter()
        .filter_map(|t| t.usage.as_ref())
        .map(|u| u64::from(u.input_tokens) + u64::from(u.output_tokens))
        .sum();
    let mut metadata = Map::new();
    metadata.insert("id".into(), t.id.clone().into());
    metadata.insert(
        "runtime_store".into(),
        json!({"data_dir": canonical.to_string_lossy(), "execution_scope": scope}),
    );
    metadata.insert(
        "title".into(),
        crate::title::recovered_title(t.title.as_deref(), &r.messages).into(),
    );
    metadata.insert("created_at".into(), t.created_at.0.clone().into());
    metadata.insert("updated_at".into(), latest.clone().into());
    metadata.insert("message_count".into(), r.messages.len().into());
    metadata.insert("total_tokens".into(), tokens.into());
    metadata.insert("model".into(), t.model.clone().into());
    match &t.model_provider {
        Some(p) => {
            metadata.insert("model_provider".into(), p.clone().into());
            if let Some(id) = &t.model_provider_id {
                metadata.insert("model_provider_id".into(), id.clone().into());
            }
        }
        None => {
            metadata.insert("model_provider".into(), "deepseek".into());
        }
    }
    metadata.insert("workspace".into(), t.workspace.clone().into());
    metadata.insert("mode".into(), t.mode.clone().into());
    metadata.insert("cost".into(), default_cost());
    metadata.insert("cumulative_turn_secs".into(), 0.into());
    metadata.insert("spawn_depth".into(), 0.into());
    let messages = serde_json::to_value(&r.messages).expect("messages serialize");
    let mut entries = Vec::with_capacity(r.messages.len());
    let mut parent: Option<String> = None;
    for (i, m) in r.messages.iter().enumerate() {
        let id = derived_uuid(&format!("doctor-journal-v1:{}:{i}", t.id));
        let mut e = Map::new();
        e.insert("id".into(), id.clone().into());
        if let Some(p) = &parent {
            e.insert("parent_id".into(), p.clone().into());
        }
        e.insert("kind".into(), "message".into());
        e.insert(
            "message".into(),
            serde_json::to_value(m).expect("message serializes"),
        );
        e.insert("created_at".into(), latest.clone().into());
        e.insert("spawn_depth".into(), 0.into());
        entries.push(Value::Object(e));
        parent = Some(id);
    }
    let leaf = parent.map_or(Value::Null, Value::from);
    let document = json!({
        "schema_version": 1,
        "metadata": metadata,
        "messages": messages,
        "journal": {"entries": entries, "leaf_id": leaf, "schema_version": 1, "spawn_depth": 0},
        "leaf_id": leaf,
        "system_prompt": t.system_prompt,
    });
    let mut bytes = serde_json::to_vec_pretty(&document).expect("document serializes");
    bytes.push(b'\n');
    let checkpoint = SavedSessionCheckpoint {
        covered_turn_id: t.latest_turn_id.clone(),
        messages_sha256: messages_sha256(&r.messages),
        messages_len: Some(r.messages.len() as u64),
        retained_messages: None,
    };
    Ok(Some(Recovered {
        document: bytes,
        summary: RecoverySummary {
            turns: r.turns.len() as u64,
            messages: r.messages.len() as u64,
        },
        checkpoint,
    }))
}

/// A JSON object as a list of its members, each value kept as the exact text it had: editing
/// one member never re-encodes another's value (numbers of any size, escapes and duplicates
/// survive). Keys are decoded and written back, so an escaped key (`"\u00e9"`) comes back in
/// its plain UTF-8 spelling: the same key, other bytes.
struct RawObject(Vec<(String, Box<RawValue>)>);

impl<'de> Deserialize<'de> for RawObject {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> serde::de::Visitor<'de> for V {
            type Value = RawObject;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a JSON object")
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(
                self,
                mut m: A,
            ) -> Result<RawObject, A::Error> {
                let mut out = Vec::new();
                while let Some((k, v)) = m.next_entry::<String, Box<RawValue>>()? {
                    out.push((k, v));
                }
                Ok(RawObject(out))
            }
        }
        d.deserialize_map(V)
    }
}

impl RawObject {
    fn remove(&mut self, key: &str) {
        self.0.retain(|(k, _)| k != key);
    }

    /// Sets `key` to `value`: in place when present (every occurrence), else appended.
    fn set(&mut self, key: &str, value: &impl serde::Serialize) {
        // Pretty, indented for its place one level deep, like the rest of the record.
        let text = serde_json::to_string_pretty(value)
            .expect("value serializes")
            .replace('\n', "\n  ");
        let raw = RawValue::from_string(text).expect("pretty JSON is JSON");
        let mut found = false;
        for (k, v) in &mut self.0 {
            if k == key {
                *v = raw.clone();
                found = true;
            }
        }
        if !found {
            self.0.push((key.to_owned(), raw));
        }
    }

    /// Pretty JSON, trailing newline; each untouched value is written as its original text.
    fn to_bytes(&self) -> Vec<u8> {
        let mut out = b"{".to_vec();
        for (i, (k, v)) in self.0.iter().enumerate() {
            out.extend_from_slice(if i == 0 { b"\n  " } else { b",\n  " });
            out.extend(serde_json::to_vec(k).expect("key serializes"));
            out.extend_from_slice(b": ");
            out.extend_from_slice(v.get().as_bytes());
        }
        out.extend_from_slice(if self.0.is_empty() { b"}\n" } else { b"\n}\n" });
        out
    }
}

fn edit_record(bytes: &[u8], edit: impl FnOnce(&mut RawObject)) -> Option<Vec<u8>> {
    let mut rec: RawObject = serde_json::from_slice(bytes).ok()?;
    edit(&mut rec);
    Some(rec.to_bytes())
}

/// The record without `session_id` and `saved_session_checkpoint` and with `updated_at` = `at`
/// (R4, codewhale-format.md §9.1); every other member keeps its place and its exact text.
pub fn unbind_bytes(bytes: &[u8], at: &str) -> Option<Vec<u8>> {
    edit_record(bytes, |rec| {
        rec.remove("session_id");
        rec.remove("saved_session_checkpoint");
        rec.set("updated_at", &at);
    })
}

/// The record bound to document `id` with `checkpoint` and `updated_at` = `at` (§9.2).
pub fn bind_bytes(
    bytes: &[u8],
    id: &str,
    checkpoint: &SavedSessionCheckpoint,
    at: &str,
) -> Option<Vec<u8>> {
    edit_record(bytes, |rec| {
        rec.set("updated_at", &at);
        rec.set("session_id", &id);
        rec.set("saved_session_checkpoint", checkpoint);
    })
}

/// `owner_id` of `<store>/owner.json`, when readable and a valid record id.
pub fn owner_id(root: &Root, store: &str) -> Option<String> {
    let bytes = root.read(Path::new(&format!("{store}/owner.json"))).ok()?;
    let v: Value = serde_json::from_slice(&bytes).ok()?;
    v.get("owner_id")
        .and_then(Value::as_str)
        .filter(|o| is_valid_id(o))
        .map(str::to_owned)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::ContentBlock;

    /// Each record the app would refuse is named with what is wrong with it, typed, and shown
    /// in the words the planner's skips have always used.
    #[test]
    #[allow(clippy::disallowed_methods)] // the test writes its store with std
    fn each_refused_record_is_a_typed_error_naming_its_file() {
        let tmp = tempfile::tempdir().unwrap();
        let s = tmp.path();
        std::fs::create_dir_all(s.join("a/runtime/turns")).unwrap();
        std::fs::create_dir_all(s.join("a/runtime/items/sub")).unwrap();
        std::fs::write(s.join("a/runtime/turns/t1.json"), b"{").unwrap();
        std::fs::write(
            s.join("a/runtime/turns/t2.json"),
            br#"{"schema_version":9}"#,
        )
        .unwrap();
        std::fs::write(
            s.join("a/runtime/turns/t3.json"),
            br#"{"schema_version":1}"#,
        )
        .unwrap();
        std::fs::create_dir(s.join("a/runtime/items/i1.json")).unwrap();
        let root = Root::open(s).unwrap();
        let mut errors = load_store_records(&root, "a/runtime").unwrap_err();
        errors.sort_by_key(|e| e.to_string());
        let shown: Vec<String> = errors.iter().map(ToString::to_string).collect();
        assert_eq!(shown.len(), 4, "{shown:?}");
        assert_eq!(shown[0], "a/runtime/items/i1.json: not a record file");
        assert!(
            shown[1].starts_with("a/runtime/turns/t1.json does not parse: EOF"),
            "{shown:?}"
        );
        assert_eq!(
            shown[2],
            "a/runtime/turns/t2.json: record of newer schema 9"
        );
        assert!(
            shown[3].starts_with("a/runtime/turns/t3.json is not a valid record: missing field"),
            "{shown:?}"
        );
        assert!(matches!(
            &errors[..],
            [
                RecoveryError::NotARecordFile { .. },
                RecoveryError::DoesNotParse { .. },
                RecoveryError::NewerSchema { version, .. },
                RecoveryError::NotAValidRecord { .. },
            ] if *version == 9.0
        ));
    }

    #[test]
    fn messages_hash_matches_the_test_vector() {
        let messages = vec![
            Message {
                role: "user".into(),
                content: vec![ContentBlock::text("hi")],
            },
            Message {
                role: "assistant".into(),
                content: vec![ContentBlock::text("hello")],
            },
        ];
        assert_eq!(
            messages_sha256(&messages),
            "535b3e334916edfeb56ece3eb1525e3d6c12ce097803ead53453887d75626af4"
        );
    }

    #[test]
    fn tool_blocks_hash_as_the_app_serializes_them() {
        // Expected bytes and hash computed independently of this crate (Python's compact
        // `json.dumps` with the app's key order): `type` first, absent optionals skipped,
        // free-form `input` with sorted keys, non-ASCII kept as UTF-8.
        let messages: Vec<Message> = vec![
            Message {
                role: "user".into(),
                content: vec![ContentBlock::text("Read a.rs — please")],
            },
            Message {
                role: "assistant".into(),
                content: vec![
                    ContentBlock::Thinking {
                        thinking: "need the file".into(),
                        signature: None,
                        state: None,
                    },
                    ContentBlock::ToolUse {
                        id: "call_1".into(),
                        name: "read_file".into(),
                        input: serde_json::json!({"path": "a.rs", "a": 1}),
                        execution_id: None,
                        caller: None,
                        thought_signature: None,
                    }
                    .canonical(),
                ],
            },
            Message {
                role: "user".into(),
                content: vec![ContentBlock::ToolResult {
                    tool_use_id: "call_1".into(),
                    content: "fn main(){}".into(),
                    execution_id: None,
                    is_error: Some(true),
                    content_blocks: None,
                }],
            },
        ];
        assert_eq!(
            serde_json::to_string(&messages).unwrap(),
            r#"[{"role":"user","content":[{"type":"text","text":"Read a.rs — please"}]},{"role":"assistant","content":[{"type":"thinking","thinking":"need the file"},{"type":"tool_use","id":"call_1","name":"read_file","input":{"a":1,"path":"a.rs"}}]},{"role":"user","content":[{"type":"tool_result","tool_use_id":"call_1","content":"fn main(){}","is_error":true}]}]"#
        );
        assert_eq!(
            messages_sha256(&messages),
            "e9a0763369ae1c81a8e4fd30f1d9bf8524429ab6baf1eeb6c7329a44a291234d"
        );
    }

    #[test]
    fn non_ascii_is_hashed_as_utf8() {
        let messages = vec![Message {
            role: "user".into(),
            content: vec![ContentBlock::text("héllo ✓")],
        }];
        let compact =
            "[{\"role\":\"user\",\"content\":[{\"type\":\"text\",\"text\":\"héllo ✓\"}]}]";
        assert_eq!(
            messages_sha256(&messages),
            fsroot::hex(&Sha256::digest(compact.as_bytes()))
        );
    }

    /// The app's bytes: the owner id, a zero byte, the canonical store path joined with
    /// `events.lock` by the OS's separator; on Windows the verbatim `\\?\` spelling is hashed
    /// as it is (platforms.md §8.2, §8.15).
    #[test]
    fn scope_hashes_owner_zero_and_events_lock_path() {
        let cases: &[(&str, &[u8])] = if cfg!(windows) {
            &[
                (r"\\?\C:\s\a\runtime", br"\\?\C:\s\a\runtime\events.lock"),
                (r"C:\s\a\runtime", br"C:\s\a\runtime\events.lock"),
            ]
        } else {
            &[("/s/a/runtime", b"/s/a/runtime/events.lock")]
        };
        for (store, lock) in cases {
            let hashed = [b"owner_1\0".as_slice(), lock].concat();
            assert_eq!(
                execution_scope("owner_1", Path::new(store)),
                fsroot::hex(&Sha256::digest(hashed)),
                "{store}"
            );
        }
    }

    #[test]
    fn rewrites_keep_the_exact_text_of_other_members() {
        let rec = br#"{"id":"t","big":18446744073709551617,"huge":123456789012345678901234567890,"e":1e2,"s":"\u00e9","dup":1,"dup":2,"updated_at":"x","session_id":"s"}"#;
        let out = unbind_bytes(rec, "2026-11-29T12:00:00Z").unwrap();
        let text = String::from_utf8(out).unwrap();
        for kept in [
            r#""big": 18446744073709551617"#,
            r#""huge": 123456789012345678901234567890"#,
            r#""e": 1e2"#,
            r#""s": "\u00e9""#,
            r#""dup": 1"#,
            r#""dup": 2"#,
            r#""updated_at": "2026-11-29T12:00:00Z""#,
        ] {
            assert!(text.contains(kept), "{kept} in {text}");
        }
        assert!(!text.contains("session_id"), "{text}");
        assert!(serde_json::from_str::<Value>(&text).is_ok());
    }

    #[test]
    fn rewrites_keep_other_keys_in_place() {
        let rec = br#"{"schema_version":2,"id":"t","created_at":"2026-09-01T10:00:00Z","updated_at":"2026-09-01T11:00:00Z","future":{"a":[1,2]},"session_id":"s","saved_session_checkpoint":{"covered_turn_id":null,"messages_sha256":"00"},"zeta":true}"#;
        let out = unbind_bytes(rec, "2026-11-29T12:00:00Z").unwrap();
        let v: Value = serde_json::from_slice(&out).unwrap();
        assert_eq!(
            serde_json::to_string(&v).unwrap(),
            r#"{"schema_version":2,"id":"t","created_at":"2026-09-01T10:00:00Z","updated_at":"2026-11-29T12:00:00Z","future":{"a":[1,2]},"zeta":true}"#
        );
        let cp = SavedSessionCheckpoint {
            covered_turn_id: None,
            messages_sha256: "ab".into(),
            messages_len: Some(2),
            retained_messages: None,
        };
        let out = bind_bytes(&out, "t", &cp, "2026-11-30T00:00:00Z").unwrap();
        let v: Value = serde_json::from_slice(&out).unwrap();
        assert_eq!(
            serde_json::to_string(&v).unwrap(),
            r#"{"schema_version":2,"id":"t","created_at":"2026-09-01T10:00:00Z","updated_at":"2026-11-30T00:00:00Z","future":{"a":[1,2]},"zeta":true,"session_id":"t","saved_session_checkpoint":{"covered_turn_id":null,"messages_sha256":"ab","messages_len":2}}"#
        );
    }
}
