//! The recovered document of an orphan thread (rules.md, R3) and the thread rewrites (bind,
//! unbind). Each is a pure function of the store's contents: the same store always yields the
//! same bytes, whether the planner summarises it or the executor writes it.

use std::path::Path;

use fsroot::{EntryKind, Root};
use serde_json::{Map, Value};
use sha2::{Digest, Sha256};

use crate::ids::is_valid_id;
use crate::model::{
    Cost, DocumentMetadata, Message, RuntimeStoreRef, SessionCheckpoint, SessionDocument,
    ThreadRecord, Turn, KNOWN_SCHEMA_VERSION,
};

/// A recovered document and the checkpoint that binds its thread to it.
#[derive(Debug, Clone)]
pub struct Recovered {
    /// The document `S/<tid>.json`.
    pub document: SessionDocument,
    /// The thread's new `saved_session_checkpoint`.
    pub checkpoint: SessionCheckpoint,
}

/// What the planner keeps of a recovery: counts, no bodies.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RecoverySummary {
    /// Completed turns.
    pub completed_turns: u64,
    /// Messages of the reconstructed conversation.
    pub messages: u64,
}

impl Recovered {
    /// The counts the planner keeps.
    pub fn summary(&self, completed_turns: u64) -> RecoverySummary {
        RecoverySummary {
            completed_turns,
            messages: self.document.messages.len() as u64,
        }
    }

    /// The document's bytes as written (pretty JSON, trailing newline).
    pub fn document_bytes(&self) -> Vec<u8> {
        let mut b = serde_json::to_vec_pretty(&self.document).expect("document serializes");
        b.push(b'\n');
        b
    }
}

/// SHA-256 (hex) of the compact JSON of `messages`.
pub fn messages_sha256(messages: &[Message]) -> String {
    let compact = serde_json::to_vec(messages).expect("messages serialize");
    fsroot::hex(&Sha256::digest(&compact))
}

/// The checkpoint covering all of `messages` up to `covered_turn_id`.
pub fn checkpoint_for(messages: &[Message], covered_turn_id: &str) -> SessionCheckpoint {
    SessionCheckpoint {
        covered_turn_id: covered_turn_id.to_owned(),
        messages_sha256: messages_sha256(messages),
        messages_len: messages.len() as u64,
    }
}

/// `runtime_store.execution_scope` of a recovered document: SHA-256 hex of the store's
/// `owner_id` (empty when absent), a zero byte, and the store's path relative to S.
pub fn execution_scope(owner_id: Option<&str>, store: &str) -> String {
    let mut h = Sha256::new();
    h.update(owner_id.unwrap_or("").as_bytes());
    h.update([0u8]);
    h.update(store.as_bytes());
    fsroot::hex(&h.finalize())
}

fn cut_chars(s: &str, n: usize) -> String {
    s.chars().take(n).collect()
}

/// A turn file a recovery leaves out, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LeftOut {
    /// The turn file, relative to S.
    pub path: String,
    /// Why it is left out.
    pub why: String,
}

/// The completed turns of thread `tid` in `store`, in ascending `seq` (then id). Turns that do
/// not parse, do not validate against the published turn schema (so a recovered document never
/// carries what its own schema rejects), belong to another thread or are of a newer schema are
/// left out, each pushed onto `left_out` with why.
pub fn completed_turns(
    root: &Root,
    store: &str,
    tid: &str,
    left_out: &mut Vec<LeftOut>,
) -> fsroot::Result<Vec<Turn>> {
    let dir = format!("{store}/turns/{tid}");
    match root.stat(Path::new(&dir))? {
        Some(s) if s.kind == EntryKind::Dir => {}
        _ => return Ok(Vec::new()),
    }
    let mut turns = Vec::new();
    for e in root.list(Path::new(&dir))? {
        let name = e.name.to_string_lossy();
        let Some(id) = name.strip_suffix(".json") else {
            continue;
        };
        if e.kind != EntryKind::File || !is_valid_id(id) {
            continue;
        }
        let path = format!("{dir}/{name}");
        let mut leave = |why: String| {
            left_out.push(LeftOut {
                path: path.clone(),
                why,
            })
        };
        let bytes = root.read(Path::new(&path))?;
        let value = match serde_json::from_slice::<Value>(&bytes) {
            Ok(v) => v,
            Err(e) => {
                leave(format!("does not parse: {e}"));
                continue;
            }
        };
        if let Some(err) = crate::schema::first_error(crate::schema::turn_validator(), &value) {
            leave(format!("does not match the turn schema: {err}"));
            continue;
        }
        let Ok(turn) = serde_json::from_value::<Turn>(value) else {
            leave("does not match the turn model".into());
            continue;
        };
        if turn.schema_version > KNOWN_SCHEMA_VERSION {
            leave(format!("turn of newer schema {}", turn.schema_version));
        } else if turn.thread_id != tid {
            leave(format!("belongs to thread {:?}", turn.thread_id));
        } else if turn.status == "completed" {
            turns.push(turn);
        }
    }
    turns.sort_by(|a, b| (a.seq, &a.id).cmp(&(b.seq, &b.id)));
    Ok(turns)
}

/// Builds the recovered document of thread `record` in `store` (relative to S), or `None` when
/// the thread is not recoverable (no completed turn, or an empty conversation).
pub fn build_recovered(
    root: &Root,
    store: &str,
    owner_id: Option<&str>,
    record: &ThreadRecord,
    left_out: &mut Vec<LeftOut>,
) -> fsroot::Result<Option<(Recovered, u64)>> {
    let turns = completed_turns(root, store, &record.id, left_out)?;
    let Some(last) = turns.last() else {
        return Ok(None);
    };
    let covered = last.id.clone();
    let mut messages = Vec::new();
    let (mut tokens, mut usd, mut priced, mut unpriced) = (0u64, 0f64, 0u64, 0u64);
    for t in &turns {
        messages.extend(t.messages.iter().cloned());
        match &t.usage {
            Some(u) => {
                tokens = tokens
                    .saturating_add(u.input_tokens)
                    .saturating_add(u.output_tokens);
                match u.cost_usd {
                    Some(c) => {
                        usd += c;
                        priced += 1;
                    }
                    None => unpriced += 1,
                }
            }
            None => unpriced += 1,
        }
    }
    if messages.is_empty() {
        return Ok(None);
    }
    let str_field = |k: &str| {
        record
            .extra
            .get(k)
            .and_then(Value::as_str)
            .map(str::to_owned)
    };
    let first_user = messages
        .iter()
        .find(|m| m.role == "user")
        .map(|m| m.content.clone());
    let base = str_field("title")
        .filter(|t| !t.is_empty())
        .or(first_user)
        .unwrap_or_default();
    let first_turn_at = turns.first().and_then(|t| t.created_at.clone());
    let last_turn_at = last.created_at.clone();
    let epoch = "1970-01-01T00:00:00Z".to_owned();
    let created_at = str_field("created_at")
        .or(first_turn_at)
        .unwrap_or_else(|| epoch.clone());
    let updated_at = str_field("updated_at").or(last_turn_at).unwrap_or(epoch);
    let checkpoint = checkpoint_for(&messages, &covered);
    let document = SessionDocument {
        schema_version: KNOWN_SCHEMA_VERSION,
        metadata: DocumentMetadata {
            id: record.id.clone(),
            title: cut_chars(&format!("Recovered: {base}"), 100),
            created_at,
            updated_at,
            message_count: Some(messages.len() as u64),
            total_tokens: Some(tokens),
            cost: Some(Cost {
                usd,
                priced_turns: priced,
                unpriced_turns: unpriced,
            }),
            runtime_store: Some(RuntimeStoreRef {
                data_dir: Some(store.to_owned()),
                execution_scope: Some(execution_scope(owner_id, store)),
                extra: Map::new(),
            }),
            extra: Map::new(),
        },
        messages,
        extra: Map::new(),
    };
    // The recovered document must be readable by the doctor's own rule (R1), or the next run
    // would set it aside again and recovery would never converge (for example a thread whose
    // own timestamps are not RFC 3339).
    let value = serde_json::to_value(&document).expect("document serializes");
    if crate::schema::first_error(crate::schema::document_validator(), &value).is_some() {
        return Ok(None);
    }
    let n = turns.len() as u64;
    Ok(Some((
        Recovered {
            document,
            checkpoint,
        },
        n,
    )))
}

/// Serializes a thread record as the doctor writes it (pretty JSON, trailing newline).
pub fn thread_bytes(record: &ThreadRecord) -> Vec<u8> {
    let mut b = serde_json::to_vec_pretty(record).expect("thread serializes");
    b.push(b'\n');
    b
}

/// The record without `session_id` and `saved_session_checkpoint` (R4), as bytes.
pub fn unbound_thread_bytes(bytes: &[u8]) -> Option<Vec<u8>> {
    let mut rec: ThreadRecord = serde_json::from_slice(bytes).ok()?;
    rec.session_id = None;
    rec.saved_session_checkpoint = None;
    Some(thread_bytes(&rec))
}

/// `owner_id` of `<store>/owner.json`, when present and readable.
pub fn owner_id(root: &Root, store: &str) -> Option<String> {
    let bytes = root.read(Path::new(&format!("{store}/owner.json"))).ok()?;
    let v: Value = serde_json::from_slice(&bytes).ok()?;
    v.get("owner_id").and_then(Value::as_str).map(str::to_owned)
}
