//! The verdict on a thread record (codewhale-format.md §5): current, newer schema, or
//! unreadable with a reason, as the app reads it.

use serde_json::Value;

use super::{cut_reason, newer_than, typed};
use crate::inventory::ThreadState;
use crate::model::{ThreadRecord, MAX_RUNTIME_SCHEMA_VERSION};

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
