//! The verdict on a session document (store-format.md, Version 2): readable, unknown content,
//! newer schema, or unreadable with a reason, as the app's loader decides it.

use serde::Deserialize;
use serde_json::Value;

use super::{cut_reason, digest_of, newer_than, typed};
use crate::inventory::DocState;
use crate::model::{
    SavedSession, KNOWN_BLOCK_TYPES, KNOWN_JOURNAL_KINDS, KNOWN_ROLES, SESSION_SCHEMA_VERSION,
};

/// Judges the bytes of document `<id>.json` as the app loads it (store-format.md, Version 2):
/// readable, unknown content, newer schema, or unreadable with a reason.
pub fn judge_document(id: &str, bytes: &[u8]) -> DocState {
    match super::fast::readable(id, bytes) {
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
        if let Err(why) = super::journal::check_journal(journal) {
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
