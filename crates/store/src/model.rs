//! Serde types of the files Codewhale writes (codewhale-format.md): the `SavedSession` document
//! with its messages, content blocks and journal, thread records, turns, items and usage. They
//! accept what the app accepts and serialize as the app does (struct key order, `type` first,
//! absent optionals skipped), so a message array hashes to the app's `messages_sha256`.

use serde::{Deserialize, Deserializer, Serialize};
use serde_json::{Map, Value};

use crate::time::Timestamp;

/// `CURRENT_SESSION_SCHEMA_VERSION`: documents and journals above it are newer.
pub const SESSION_SCHEMA_VERSION: u64 = 1;
/// Runtime records (threads, turns, items) above this schema are newer (refused by the app).
pub const MAX_RUNTIME_SCHEMA_VERSION: u64 = 4;
/// The schema version of a runtime record without `schema_version`.
pub const DEFAULT_RUNTIME_SCHEMA_VERSION: u64 = 2;

/// The message roles of the app's `Role` enum.
pub const KNOWN_ROLES: &[&str] = &[
    "user",
    "assistant",
    "system",
    "assistant_interrupted",
    "developer",
];
/// The `type`s of the app's `ContentBlock` (no catch-all: anything else fails to load).
pub const KNOWN_BLOCK_TYPES: &[&str] = &[
    "text",
    "image_url",
    "thinking",
    "tool_use",
    "tool_result",
    "server_tool_use",
    "tool_search_tool_result",
    "code_execution_tool_result",
];
/// The `kind`s of journal entries.
pub const KNOWN_JOURNAL_KINDS: &[&str] = &[
    "message",
    "user",
    "assistant",
    "compaction",
    "branch_summary",
    "system",
];

/// An RFC 3339 instant as written (chrono's `DateTime<Utc>` in the app): deserializing checks
/// it as the app's deserialization does ([`Timestamp::parse_as_app`]), the text is kept as is.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(transparent)]
pub struct Rfc3339(pub String);

impl Rfc3339 {
    /// The instant, seconds since the epoch.
    pub fn timestamp(&self) -> Timestamp {
        Timestamp::parse_as_app(&self.0).unwrap_or(Timestamp(0))
    }
}

impl<'de> Deserialize<'de> for Rfc3339 {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        if Timestamp::parse_as_app(&s).is_none() {
            return Err(serde::de::Error::custom(format!(
                "{s:?} is not an RFC 3339 timestamp"
            )));
        }
        Ok(Rfc3339(s))
    }
}

/// A message: `{"role": ..., "content": [blocks]}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Message {
    /// `user`, `assistant`, ... (see [`KNOWN_ROLES`]).
    pub role: String,
    /// Always an array of blocks, never a string.
    pub content: Vec<ContentBlock>,
}

/// `cache_control` of a text block.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CacheControl {
    /// e.g. `ephemeral`.
    #[serde(rename = "type")]
    pub kind: String,
}

/// `image_url` of an image block.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ImageUrl {
    /// The URL (often a data URL).
    pub url: String,
}

/// `caller` of a tool use.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Caller {
    /// The caller kind.
    #[serde(rename = "type")]
    pub kind: String,
    /// The calling tool, when any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_id: Option<String>,
}

/// A content block, internally tagged by `type` (codewhale-format.md §1.4).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ContentBlock {
    /// Text.
    Text {
        /// The text.
        text: String,
        /// Prompt-cache marker.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        cache_control: Option<CacheControl>,
    },
    /// An image.
    ImageUrl {
        /// Where the image is.
        image_url: ImageUrl,
    },
    /// Model reasoning.
    Thinking {
        /// The reasoning text.
        thinking: String,
        /// Provider signature.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        signature: Option<String>,
        /// Provider state.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        state: Option<Value>,
    },
    /// A tool call.
    ToolUse {
        /// Provider call id.
        id: String,
        /// Tool name.
        name: String,
        /// Arguments.
        input: Value,
        /// The runtime's execution id.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        execution_id: Option<String>,
        /// Who called.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        caller: Option<Caller>,
        /// Provider thought signature.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        thought_signature: Option<String>,
    },
    /// A tool's result.
    ToolResult {
        /// The call it answers.
        tool_use_id: String,
        /// The output (always a string).
        content: String,
        /// The runtime's execution id.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        execution_id: Option<String>,
        /// Whether the call failed.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        is_error: Option<bool>,
        /// Structured output.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        content_blocks: Option<Vec<Value>>,
    },
    /// A server-side tool call.
    ServerToolUse {
        /// Call id.
        id: String,
        /// Tool name.
        name: String,
        /// Arguments.
        input: Value,
    },
    /// A tool-search result.
    ToolSearchToolResult {
        /// The call it answers.
        tool_use_id: String,
        /// The result.
        content: Value,
    },
    /// A code-execution result.
    CodeExecutionToolResult {
        /// The call it answers.
        tool_use_id: String,
        /// The result.
        content: Value,
    },
}

impl ContentBlock {
    /// A text block.
    pub fn text(text: impl Into<String>) -> ContentBlock {
        ContentBlock::Text {
            text: text.into(),
            cache_control: None,
        }
    }
}

/// Sorts the keys of every object inside `v`, recursively: the app's serde_json keeps no
/// insertion order (codewhale-format.md §9.3), so free-form values (`input`, `content`, `state`)
/// serialize with sorted keys there.
pub fn sort_keys(v: Value) -> Value {
    match v {
        Value::Object(m) => {
            let mut entries: Vec<(String, Value)> = m.into_iter().collect();
            entries.sort_by(|a, b| a.0.cmp(&b.0));
            Value::Object(
                entries
                    .into_iter()
                    .map(|(k, v)| (k, sort_keys(v)))
                    .collect(),
            )
        }
        Value::Array(a) => Value::Array(a.into_iter().map(sort_keys).collect()),
        other => other,
    }
}

impl ContentBlock {
    /// The block with the keys of its free-form values sorted, as the app serializes it.
    pub fn canonical(self) -> ContentBlock {
        match self {
            ContentBlock::Thinking {
                thinking,
                signature,
                state,
            } => ContentBlock::Thinking {
                thinking,
                signature,
                state: state.map(sort_keys),
            },
            ContentBlock::ToolUse {
                id,
                name,
                input,
                execution_id,
                caller,
                thought_signature,
            } => ContentBlock::ToolUse {
                id,
                name,
                input: sort_keys(input),
                execution_id,
                caller,
                thought_signature,
            },
            ContentBlock::ToolResult {
                tool_use_id,
                content,
                execution_id,
                is_error,
                content_blocks,
            } => ContentBlock::ToolResult {
                tool_use_id,
                content,
                execution_id,
                is_error,
                content_blocks: content_blocks.map(|b| b.into_iter().map(sort_keys).collect()),
            },
            ContentBlock::ServerToolUse { id, name, input } => ContentBlock::ServerToolUse {
                id,
                name,
                input: sort_keys(input),
            },
            ContentBlock::ToolSearchToolResult {
                tool_use_id,
                content,
            } => ContentBlock::ToolSearchToolResult {
                tool_use_id,
                content: sort_keys(content),
            },
            ContentBlock::CodeExecutionToolResult {
                tool_use_id,
                content,
            } => ContentBlock::CodeExecutionToolResult {
                tool_use_id,
                content: sort_keys(content),
            },
            other => other,
        }
    }
}

/// `metadata.runtime_store`: both fields required.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RuntimeStoreBinding {
    /// The store's absolute canonical path (relative ones are tolerated by the doctor).
    pub data_dir: String,
    /// SHA-256 over owner id and store path (codewhale-format.md §4.5).
    pub execution_scope: String,
}

/// `metadata` as the app reads it: required fields typed, the rest checked for type only.
#[derive(Debug, Clone, Deserialize)]
pub struct SessionMetadata {
    /// Equal to the file stem.
    pub id: String,
    /// The binding to a runtime store.
    #[serde(default)]
    pub runtime_store: Option<RuntimeStoreBinding>,
    /// Title.
    pub title: String,
    /// Creation time.
    pub created_at: Rfc3339,
    /// Last save.
    pub updated_at: Rfc3339,
    /// Number of messages.
    pub message_count: u64,
    /// Token total.
    pub total_tokens: u64,
    /// Model.
    pub model: String,
    /// Provider.
    #[serde(default)]
    pub model_provider: Option<String>,
    /// Provider id.
    #[serde(default)]
    pub model_provider_id: Option<String>,
    /// Workspace path.
    pub workspace: String,
    /// Mode, or null.
    #[serde(default)]
    pub mode: Option<String>,
    /// Cost snapshot (every field has a default in the app).
    #[serde(default)]
    pub cost: Option<Map<String, Value>>,
    /// Parent of a fork.
    #[serde(default)]
    pub parent_session_id: Option<String>,
    /// Messages the fork copied.
    #[serde(default)]
    pub forked_from_message_count: Option<u64>,
    /// Seconds spent in turns.
    #[serde(default)]
    pub cumulative_turn_secs: Option<u64>,
    /// Archived by retention.
    #[serde(default)]
    pub archived: Option<bool>,
    /// Sub-agent depth.
    #[serde(default)]
    pub spawn_depth: Option<u32>,
}

/// A journal entry's variant, tagged by `kind` (codewhale-format.md §1.5).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum EntryBody {
    /// A whole message.
    Message {
        /// The message.
        message: Message,
    },
    /// A user text.
    User {
        /// Text.
        text: String,
    },
    /// An assistant text.
    Assistant {
        /// Text.
        text: String,
    },
    /// A compaction summary.
    Compaction {
        /// Summary.
        summary: String,
        /// Tokens before.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        tokens_before: Option<u64>,
        /// Tokens after.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        tokens_after: Option<u64>,
        /// Model that compacted.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        model: Option<String>,
    },
    /// A branch summary.
    BranchSummary {
        /// Branch.
        branch_id: String,
        /// Summary.
        summary: String,
        /// Parent branch.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        parent_branch_id: Option<String>,
    },
    /// A system text.
    System {
        /// Text.
        content: String,
    },
}

/// A journal entry.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct JournalEntry {
    /// Entry id.
    pub id: String,
    /// Parent entry.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parent_id: Option<String>,
    /// Kind and fields.
    #[serde(flatten)]
    pub body: EntryBody,
    /// When.
    pub created_at: Rfc3339,
    /// Sub-agent depth.
    #[serde(default)]
    pub spawn_depth: u32,
}

fn one() -> u64 {
    1
}

/// The journal.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SessionJournal {
    /// Entries.
    #[serde(default)]
    pub entries: Vec<JournalEntry>,
    /// Active leaf.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub leaf_id: Option<String>,
    /// Journal schema.
    #[serde(default = "one")]
    pub schema_version: u64,
    /// Sub-agent depth.
    #[serde(default)]
    pub spawn_depth: u32,
}

/// A `SavedSession` as the app deserializes it (codewhale-format.md §1.1). Only what decides
/// readability is typed; the doctor never rewrites a document.
#[derive(Debug, Clone, Deserialize)]
pub struct SavedSession {
    /// Absent means 1.
    #[serde(default = "one")]
    pub schema_version: u64,
    /// Metadata.
    pub metadata: SessionMetadata,
    /// Messages (required, may be empty).
    pub messages: Vec<Message>,
    /// Canonical history.
    #[serde(default)]
    pub journal: Option<SessionJournal>,
    /// Active leaf.
    #[serde(default)]
    pub leaf_id: Option<String>,
    /// System prompt, or null.
    #[serde(default)]
    pub system_prompt: Option<String>,
    /// Context references.
    #[serde(default)]
    pub context_references: Option<Vec<ContextReference>>,
    /// Artifact records.
    #[serde(default)]
    pub artifacts: Option<Vec<Map<String, Value>>>,
    /// Approval receipts.
    #[serde(default)]
    pub approval_receipts: Option<Vec<Value>>,
    /// Work state.
    #[serde(default)]
    pub work_state: Option<Map<String, Value>>,
    /// Window title.
    #[serde(default)]
    pub window_title: Option<String>,
    /// Last route.
    #[serde(default)]
    pub last_auto_route: Option<Map<String, Value>>,
    /// Turn outcomes.
    #[serde(default)]
    pub turn_outcomes: Option<Vec<Map<String, Value>>>,
}

/// `{message_index, reference}`.
#[derive(Debug, Clone, Deserialize)]
pub struct ContextReference {
    /// Index into messages.
    pub message_index: u64,
    /// The reference.
    pub reference: Value,
}

/// `saved_session_checkpoint` of a thread (codewhale-format.md §5).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SavedSessionCheckpoint {
    /// The latest turn covered; written as null when none.
    #[serde(default)]
    pub covered_turn_id: Option<String>,
    /// SHA-256 of the compact messages prefix.
    pub messages_sha256: String,
    /// Prefix length; absent on legacy records.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub messages_len: Option<u64>,
    /// Retained messages.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retained_messages: Option<u64>,
}

fn default_runtime_schema() -> u64 {
    DEFAULT_RUNTIME_SCHEMA_VERSION
}

/// A thread record as the app reads it (codewhale-format.md §5). Rewrites never go through
/// this type: they edit the record's JSON object in place, so every other byte of meaning stays.
#[derive(Debug, Clone, Deserialize)]
pub struct ThreadRecord {
    /// Absent means 2.
    #[serde(default = "default_runtime_schema")]
    pub schema_version: u64,
    /// Thread id.
    pub id: String,
    /// Creation time.
    pub created_at: Rfc3339,
    /// Last change.
    pub updated_at: Rfc3339,
    /// Model.
    pub model: String,
    /// Provider.
    #[serde(default)]
    pub model_provider: Option<String>,
    /// Provider id.
    #[serde(default)]
    pub model_provider_id: Option<String>,
    /// Workspace.
    pub workspace: String,
    /// Mode.
    pub mode: String,
    /// Shell allowed.
    pub allow_shell: bool,
    /// Trust mode.
    pub trust_mode: bool,
    /// Auto-approve.
    pub auto_approve: bool,
    /// Latest accepted turn.
    #[serde(default)]
    pub latest_turn_id: Option<String>,
    /// Archived.
    #[serde(default)]
    pub archived: bool,
    /// System prompt.
    #[serde(default)]
    pub system_prompt: Option<String>,
    /// Task id.
    #[serde(default)]
    pub task_id: Option<String>,
    /// Title.
    #[serde(default)]
    pub title: Option<String>,
    /// The bound document.
    #[serde(default)]
    pub session_id: Option<String>,
    /// The binding's checkpoint.
    #[serde(default)]
    pub saved_session_checkpoint: Option<SavedSessionCheckpoint>,
}

/// `<store>/state.json` (the app's `RuntimeStoreState`): the event sequence counter.
#[derive(Debug, Clone, Deserialize)]
pub struct RuntimeStoreState {
    /// Absent means 2.
    #[serde(default = "default_runtime_schema")]
    pub schema_version: u64,
    /// The next event sequence number; above 1 means the store has done work.
    pub next_seq: u64,
}

/// Token usage (codewhale-format.md §6.3).
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct Usage {
    /// Input tokens.
    pub input_tokens: u32,
    /// Output tokens.
    pub output_tokens: u32,
}

/// A turn's status, and an item's (the app's `RuntimeTurnStatus`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    /// Queued.
    Queued,
    /// Running.
    InProgress,
    /// Completed.
    Completed,
    /// Failed.
    Failed,
    /// Interrupted.
    Interrupted,
    /// Canceled.
    Canceled,
}

/// A turn `<store>/turns/<turn_id>.json` (codewhale-format.md §6.1).
#[derive(Debug, Clone, Deserialize)]
pub struct TurnRecord {
    /// Output allowance: present iff `schema_version` is 4.
    #[serde(default, rename = "maxOutputTokens", alias = "max_output_tokens")]
    pub max_output_tokens: Option<std::num::NonZeroU32>,
    /// Absent means 2.
    #[serde(default = "default_runtime_schema")]
    pub schema_version: u64,
    /// Turn id.
    pub id: String,
    /// Its thread.
    pub thread_id: String,
    /// Status.
    pub status: Status,
    /// Summary of the input.
    pub input_summary: String,
    /// Creation time: turns are ordered by it.
    pub created_at: Rfc3339,
    /// Start.
    #[serde(default)]
    pub started_at: Option<Rfc3339>,
    /// End.
    #[serde(default)]
    pub ended_at: Option<Rfc3339>,
    /// Token usage.
    #[serde(default)]
    pub usage: Option<Usage>,
    /// Replay order of the turn's items.
    #[serde(default)]
    pub item_ids: Vec<String>,
}

/// An item's kind (the app's `TurnItemKind`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ItemKind {
    /// A user message.
    UserMessage,
    /// An assistant message.
    AgentMessage,
    /// Assistant reasoning.
    AgentReasoning,
    /// A tool call or its result.
    ToolCall,
    /// A file change.
    FileChange,
    /// A command execution.
    CommandExecution,
    /// A compaction.
    ContextCompaction,
    /// A status row.
    Status,
    /// An error row.
    Error,
}

/// An item `<store>/items/<item_id>.json` (codewhale-format.md §6.2).
#[derive(Debug, Clone, Deserialize)]
pub struct TurnItemRecord {
    /// Absent means 2.
    #[serde(default = "default_runtime_schema")]
    pub schema_version: u64,
    /// Item id.
    pub id: String,
    /// Its turn.
    pub turn_id: String,
    /// Kind.
    pub kind: ItemKind,
    /// Status.
    pub status: Status,
    /// Short text.
    pub summary: String,
    /// Full text; wins over `summary`.
    #[serde(default)]
    pub detail: Option<String>,
    /// Tool metadata and the like.
    #[serde(default)]
    pub metadata: Option<Value>,
    /// Start (items of a turn are sorted by it; absent sorts last).
    #[serde(default)]
    pub started_at: Option<Rfc3339>,
    /// End.
    #[serde(default)]
    pub ended_at: Option<Rfc3339>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_serialize_as_the_app_does() {
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
        let out = serde_json::to_string(&messages).unwrap();
        assert_eq!(
            out,
            r#"[{"role":"user","content":[{"type":"text","text":"hi"}]},{"role":"assistant","content":[{"type":"text","text":"hello"}]}]"#
        );
    }

    #[test]
    fn string_content_and_unknown_blocks_do_not_load() {
        assert!(serde_json::from_str::<Message>(r#"{"role":"user","content":"hi"}"#).is_err());
        assert!(serde_json::from_str::<Message>(
            r#"{"role":"user","content":[{"type":"hologram","x":1}]}"#
        )
        .is_err());
        assert!(serde_json::from_str::<Message>(
            r#"{"role":"user","content":[{"type":"tool_result","tool_use_id":"a","content":[]}]}"#
        )
        .is_err());
    }

    #[test]
    fn free_form_values_sort_their_keys() {
        let b = ContentBlock::ToolUse {
            id: "c".into(),
            name: "n".into(),
            input: serde_json::json!({"z": 1, "a": {"y": 2, "b": 3}}),
            execution_id: None,
            caller: None,
            thought_signature: None,
        }
        .canonical();
        assert_eq!(
            serde_json::to_string(&b).unwrap(),
            r#"{"type":"tool_use","id":"c","name":"n","input":{"a":{"b":3,"y":2},"z":1}}"#
        );
    }
}
