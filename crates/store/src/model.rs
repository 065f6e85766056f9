//! Serde types of the store's JSON files. Unknown fields are kept in `extra` and written back,
//! so a rewrite never drops what a newer host added.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// The schema version this doctor knows.
pub const KNOWN_SCHEMA_VERSION: u64 = 1;

/// A message of a conversation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Message {
    /// `user`, `assistant`, ...
    pub role: String,
    /// The text.
    pub content: String,
    /// Unknown fields, preserved.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// `metadata.runtime_store` of a document.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct RuntimeStoreRef {
    /// The store the document binds, relative to S or absolute.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data_dir: Option<String>,
    /// Opaque scope hash.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub execution_scope: Option<String>,
    /// Unknown fields, preserved.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// `metadata.cost` of a document.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Cost {
    /// Summed cost in USD.
    pub usd: f64,
    /// Turns that carried a price.
    pub priced_turns: u64,
    /// Turns without a price.
    pub unpriced_turns: u64,
}

/// `metadata` of a document.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DocumentMetadata {
    /// Equal to the file stem.
    pub id: String,
    /// Title.
    pub title: String,
    /// RFC 3339.
    pub created_at: String,
    /// RFC 3339.
    pub updated_at: String,
    /// Number of messages.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message_count: Option<u64>,
    /// Input plus output tokens.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub total_tokens: Option<u64>,
    /// Cost totals.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cost: Option<Cost>,
    /// The runtime store binding.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub runtime_store: Option<RuntimeStoreRef>,
    /// Unknown fields, preserved.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// A session document `S/<id>.json`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SessionDocument {
    /// Format version.
    pub schema_version: u64,
    /// Metadata.
    pub metadata: DocumentMetadata,
    /// The conversation.
    pub messages: Vec<Message>,
    /// Unknown fields, preserved.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// `saved_session_checkpoint` of a thread.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SessionCheckpoint {
    /// The latest turn the bound document covers.
    pub covered_turn_id: String,
    /// SHA-256 of the compact JSON of `messages[0..messages_len]`.
    pub messages_sha256: String,
    /// How many messages are covered.
    pub messages_len: u64,
}

/// A thread record `<store>/threads/<tid>.json`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ThreadRecord {
    /// Format version.
    pub schema_version: u64,
    /// Thread id.
    pub id: String,
    /// The bound document, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session_id: Option<String>,
    /// The checkpoint of the binding.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub saved_session_checkpoint: Option<SessionCheckpoint>,
    /// Everything else (`created_at`, `title`, unknown fields), preserved in order.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// Token and cost usage of a turn.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Usage {
    /// Input tokens.
    #[serde(default)]
    pub input_tokens: u64,
    /// Output tokens.
    #[serde(default)]
    pub output_tokens: u64,
    /// Price, when known.
    #[serde(default)]
    pub cost_usd: Option<f64>,
    /// Unknown fields, preserved.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// A turn `<store>/turns/<tid>/<turn-id>.json`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Turn {
    /// Format version.
    pub schema_version: u64,
    /// Turn id.
    pub id: String,
    /// Thread id.
    pub thread_id: String,
    /// Order within the thread.
    pub seq: i64,
    /// `completed`, ...
    pub status: String,
    /// Creation time.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub created_at: Option<String>,
    /// Messages of the turn.
    #[serde(default)]
    pub messages: Vec<Message>,
    /// Usage.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usage: Option<Usage>,
    /// Unknown fields, preserved.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// `<store>/state.json`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StoreState {
    /// Format version.
    #[serde(default)]
    pub schema_version: u64,
    /// Next sequence number; above 1 means the store has done work.
    #[serde(default)]
    pub next_seq: u64,
    /// Unknown fields, preserved.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn thread_rewrite_keeps_unknown_fields_in_order() {
        let text = r#"{"schema_version":1,"id":"t","created_at":"2026-09-01T10:00:00Z","future":{"a":[1,2]},"session_id":"s","saved_session_checkpoint":{"covered_turn_id":"x","messages_sha256":"00","messages_len":2},"zeta":true}"#;
        let mut rec: ThreadRecord = serde_json::from_str(text).unwrap();
        rec.session_id = None;
        rec.saved_session_checkpoint = None;
        let out = serde_json::to_string(&rec).unwrap();
        assert_eq!(
            out,
            r#"{"schema_version":1,"id":"t","created_at":"2026-09-01T10:00:00Z","future":{"a":[1,2]},"zeta":true}"#
        );
    }

    #[test]
    fn document_round_trips_unknown_fields() {
        let text = r#"{"schema_version":1,"metadata":{"id":"a","title":"t","created_at":"2026-09-01T10:00:00Z","updated_at":"2026-09-01T10:00:00Z","parent_session_id":"b","runtime_store":{"data_dir":"a/runtime","x":1}},"messages":[{"role":"user","content":"hi","ts":5}],"extra_top":[]}"#;
        let doc: SessionDocument = serde_json::from_str(text).unwrap();
        let back: Value = serde_json::to_value(&doc).unwrap();
        let orig: Value = serde_json::from_str(text).unwrap();
        assert_eq!(back, orig);
    }
}
