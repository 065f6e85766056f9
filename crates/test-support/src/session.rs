//! The one builder of the records Codewhale writes in a session store (store-format.md,
//! "Version 2"; codewhale-format.md §1, §4-§7): session documents, thread records, turns, items,
//! a runtime store's `owner.json` and `state.json`, and the binding and fingerprint they carry.
//! The doctor's tests (`crates/cli/tests/it`), `host-sim` and `cargo xtask bench` build their
//! stores with it; each says only what its records hold.
//!
//! Each record is a struct of what varies; the rest (model, workspace, mode, flags, cost) is
//! fixed here. `into_value` gives it as a `serde_json::Value` with its keys in the app's order
//! (`preserve_order` is on in this workspace), which a test may change to break it and
//! [`pretty`] renders as the tests and `host-sim` write it; `write_verbatim` writes the same
//! members as compact JSON straight to a string, as the benchmark writes them. A document moves its messages into the JSON rather than
//! copy them. It depends on no model type of the library.

use std::path::Path;

use serde_json::{json, Value};

/// When the tests' and the benchmark's documents and threads were created (the default of
/// [`Document::new`]).
pub const CREATED_AT: &str = "2026-09-01T10:00:00Z";
/// When the tests' documents and threads were last updated (the default of [`Document::new`]).
pub const UPDATED_AT: &str = "2026-09-01T11:00:00Z";

/// The model, provider, workspace and mode of every session these builders write.
const MODEL: &str = "deepseek-v4";
const MODEL_PROVIDER: &str = "deepseek";
const WORKSPACE: &str = "/home/u/proj";
const MODE: &str = "agent";

/// `value` as pretty JSON with a trailing newline, as the app saves its files.
pub fn pretty(value: &Value) -> Vec<u8> {
    let mut b = serde_json::to_vec_pretty(value).expect("a JSON value serializes");
    b.push(b'\n');
    b
}

/// `value` as compact JSON appended to `out`: the bytes `serde_json::to_vec` gives. This is the
/// benchmark's writer, whose strings are words, ids and paths: a string with nothing to escape
/// (no `"`, `\` or control character, one byte test each) is copied as it is, and only one
/// with something to escape goes through `serde_json`, whose escaping is several times slower
/// in the unoptimised builds `cargo xtask` runs.
pub fn write_verbatim(value: &Value, out: &mut String) {
    match value {
        Value::String(s) => write_str(s, out),
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_verbatim(item, out);
            }
            out.push(']');
        }
        Value::Object(map) => {
            out.push('{');
            for (i, (key, item)) in map.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_str(key, out);
                out.push(':');
                write_verbatim(item, out);
            }
            out.push('}');
        }
        scalar => out.push_str(&scalar.to_string()),
    }
}

fn write_str(s: &str, out: &mut String) {
    if s.bytes().any(|b| b == b'"' || b == b'\\' || b < 0x20) {
        out.push_str(&serde_json::to_string(s).expect("a string serializes"));
    } else {
        out.push('"');
        out.push_str(s);
        out.push('"');
    }
}

/// A record as its members in order: the one layout behind both renderings of a record, as a
/// `Value` and straight to text (which builds no map, for the benchmark's hundreds of thousands
/// of records).
enum Tree {
    Leaf(Value),
    Object(Vec<(&'static str, Tree)>),
}

fn leaf(value: impl Into<Value>) -> Tree {
    Tree::Leaf(value.into())
}

impl Tree {
    fn into_value(self) -> Value {
        match self {
            Tree::Leaf(v) => v,
            Tree::Object(members) => Value::Object(
                members
                    .into_iter()
                    .map(|(k, t)| (k.to_owned(), t.into_value()))
                    .collect(),
            ),
        }
    }

    fn write_verbatim(&self, out: &mut String) {
        match self {
            Tree::Leaf(v) => write_verbatim(v, out),
            Tree::Object(members) => {
                out.push('{');
                for (i, (key, t)) in members.iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    write_str(key, out);
                    out.push(':');
                    t.write_verbatim(out);
                }
                out.push('}');
            }
        }
    }
}

/// A message with one `text` block.
pub fn text_message(role: &str, text: &str) -> Value {
    json!({ "role": role, "content": [{ "type": "text", "text": text }] })
}

/// The SHA-256 of `messages` serialized compactly, as the app fingerprints them in a thread's
/// `saved_session_checkpoint` (codewhale-format.md §5).
pub fn messages_sha256(messages: &[Value]) -> String {
    store::digest_of(&serde_json::to_vec(messages).expect("messages serialize")).sha256
}

/// The app's `execution_scope` of a store at the absolute path `data_dir` owned by `owner_id`:
/// SHA-256 of the owner id, a zero byte, and `<data_dir>/events.lock` (codewhale-format.md §4.5).
pub fn execution_scope(owner_id: &str, data_dir: &Path) -> String {
    let mut bytes = owner_id.as_bytes().to_vec();
    bytes.push(0);
    bytes.extend_from_slice(data_dir.join("events.lock").as_os_str().as_encoded_bytes());
    store::digest_of(&bytes).sha256
}

/// A document's `metadata.runtime_store`: the store's `data_dir`, as given, and its scope.
pub fn binding(data_dir: &str, execution_scope: &str) -> Value {
    json!({ "data_dir": data_dir, "execution_scope": execution_scope })
}

/// A runtime store's `owner.json`.
pub fn owner(owner_id: &str) -> Value {
    json!({ "owner_id": owner_id })
}

/// A runtime store's `state.json`.
pub fn state(next_seq: u64) -> Value {
    json!({ "schema_version": 2, "next_seq": next_seq })
}

/// The first 80 characters of `text`: an item's `summary` of its `detail`.
pub fn summary(text: &str) -> String {
    text.chars().take(80).collect()
}

/// The `metadata.cost` the app writes for a session nothing was priced in (every field at its
/// default).
fn default_cost() -> Tree {
    Tree::Object(vec![
        ("session_cost_usd", leaf(0.0)),
        ("priced_turns", leaf(0)),
        ("unpriced_turns", leaf(0)),
        ("coverage_recorded", leaf(false)),
    ])
}

/// A session document (`<id>.json`, codewhale-format.md §1): every required metadata field,
/// `message_count` the number of `messages`.
#[derive(Debug, Clone)]
pub struct Document<'a> {
    pub schema_version: u64,
    pub id: &'a str,
    /// `metadata.runtime_store` (see [`binding`]); absent when `None`.
    pub runtime_store: Option<Value>,
    pub title: &'a str,
    pub created_at: &'a str,
    pub updated_at: &'a str,
    pub total_tokens: u64,
    pub messages: Vec<Value>,
    /// The `journal` after the messages; absent when `None`.
    pub journal: Option<Value>,
    /// Whether `"system_prompt": null` closes the document, as the app writes it.
    pub system_prompt: bool,
}

impl<'a> Document<'a> {
    /// Document `id` of schema 1 holding `messages`, bound to no store, titled `title`, created
    /// at [`CREATED_AT`] and updated at [`UPDATED_AT`], no tokens counted, no journal, closed by
    /// `"system_prompt": null`.
    pub fn new(id: &'a str, title: &'a str, messages: Vec<Value>) -> Document<'a> {
        Document {
            schema_version: 1,
            id,
            runtime_store: None,
            title,
            created_at: CREATED_AT,
            updated_at: UPDATED_AT,
            total_tokens: 0,
            messages,
            journal: None,
            system_prompt: true,
        }
    }

    /// The document as JSON.
    pub fn into_value(self) -> Value {
        self.tree().into_value()
    }

    /// The document as compact JSON appended to `out`, its strings copied as they are (see
    /// [`write_verbatim`]).
    pub fn write_verbatim(self, out: &mut String) {
        self.tree().write_verbatim(out)
    }

    fn tree(self) -> Tree {
        let mut metadata = vec![("id", leaf(self.id))];
        if let Some(binding) = self.runtime_store {
            metadata.push(("runtime_store", leaf(binding)));
        }
        metadata.extend([
            ("title", leaf(self.title)),
            ("created_at", leaf(self.created_at)),
            ("updated_at", leaf(self.updated_at)),
            ("message_count", leaf(self.messages.len())),
            ("total_tokens", leaf(self.total_tokens)),
            ("model", leaf(MODEL)),
            ("model_provider", leaf(MODEL_PROVIDER)),
            ("workspace", leaf(WORKSPACE)),
            ("mode", leaf(MODE)),
            ("cost", default_cost()),
        ]);
        let mut doc = vec![
            ("schema_version", leaf(self.schema_version)),
            ("metadata", Tree::Object(metadata)),
            ("messages", leaf(Value::Array(self.messages))),
        ];
        if let Some(journal) = self.journal {
            doc.push(("journal", leaf(journal)));
        }
        if self.system_prompt {
            doc.push(("system_prompt", leaf(Value::Null)));
        }
        Tree::Object(doc)
    }
}

/// A thread record (`threads/<id>.json`, schema 2, every field the app requires).
#[derive(Debug, Clone)]
pub struct Thread<'a> {
    pub id: &'a str,
    pub created_at: &'a str,
    pub updated_at: &'a str,
    /// `latest_turn_id`: a turn id or `null`; absent when `None`.
    pub latest_turn_id: Option<Value>,
    pub title: &'a str,
    /// `session_id` and `saved_session_checkpoint`; both absent when `None`.
    pub session: Option<Checkpoint<'a>>,
}

/// The session a thread names and its checkpoint of that session's messages.
#[derive(Debug, Clone)]
pub struct Checkpoint<'a> {
    /// `session_id`: a document id or `null`.
    pub session_id: Value,
    /// `covered_turn_id`: a turn id or `null`.
    pub covered_turn_id: Value,
    /// See [`messages_sha256`].
    pub messages_sha256: &'a str,
    pub messages_len: usize,
}

impl Thread<'_> {
    /// The thread record as JSON.
    pub fn into_value(self) -> Value {
        self.tree().into_value()
    }

    /// The thread record as compact JSON appended to `out`, its strings copied as they are (see
    /// [`write_verbatim`]).
    pub fn write_verbatim(self, out: &mut String) {
        self.tree().write_verbatim(out)
    }

    fn tree(self) -> Tree {
        let mut t = vec![
            ("schema_version", leaf(2)),
            ("id", leaf(self.id)),
            ("created_at", leaf(self.created_at)),
            ("updated_at", leaf(self.updated_at)),
            ("model", leaf(MODEL)),
            ("workspace", leaf(WORKSPACE)),
            ("mode", leaf(MODE)),
            ("allow_shell", leaf(false)),
            ("trust_mode", leaf(false)),
            ("auto_approve", leaf(false)),
        ];
        if let Some(latest) = self.latest_turn_id {
            t.push(("latest_turn_id", leaf(latest)));
        }
        t.push(("archived", leaf(false)));
        t.push(("title", leaf(self.title)));
        if let Some(c) = self.session {
            t.push(("session_id", leaf(c.session_id)));
            t.push((
                "saved_session_checkpoint",
                Tree::Object(vec![
                    ("covered_turn_id", leaf(c.covered_turn_id)),
                    ("messages_sha256", leaf(c.messages_sha256)),
                    ("messages_len", leaf(c.messages_len)),
                ]),
            ));
        }
        Tree::Object(t)
    }
}

/// A completed turn (`turns/<id>.json`, schema 2).
#[derive(Debug, Clone)]
pub struct Turn<'a> {
    pub id: &'a str,
    pub thread_id: &'a str,
    pub input_summary: &'a str,
    pub created_at: &'a str,
    pub started_at: &'a str,
    pub ended_at: &'a str,
    pub input_tokens: u64,
    pub output_tokens: u64,
    pub item_ids: Vec<String>,
}

impl Turn<'_> {
    /// The turn as JSON.
    pub fn into_value(self) -> Value {
        self.tree().into_value()
    }

    /// The turn as compact JSON appended to `out`, its strings copied as they are (see
    /// [`write_verbatim`]).
    pub fn write_verbatim(self, out: &mut String) {
        self.tree().write_verbatim(out)
    }

    fn tree(self) -> Tree {
        Tree::Object(vec![
            ("schema_version", leaf(2)),
            ("id", leaf(self.id)),
            ("thread_id", leaf(self.thread_id)),
            ("status", leaf("completed")),
            ("input_summary", leaf(self.input_summary)),
            ("created_at", leaf(self.created_at)),
            ("started_at", leaf(self.started_at)),
            ("ended_at", leaf(self.ended_at)),
            (
                "usage",
                Tree::Object(vec![
                    ("input_tokens", leaf(self.input_tokens)),
                    ("output_tokens", leaf(self.output_tokens)),
                ]),
            ),
            ("item_ids", leaf(self.item_ids)),
        ])
    }
}

/// A completed item of a turn (`items/<id>.json`, schema 2), with no artifacts.
#[derive(Debug, Clone)]
pub struct Item<'a> {
    pub id: &'a str,
    pub turn_id: &'a str,
    /// `user_message` or `agent_message`.
    pub kind: &'a str,
    pub summary: &'a str,
    pub detail: &'a str,
    pub started_at: &'a str,
    pub ended_at: &'a str,
}

impl Item<'_> {
    /// The item as JSON.
    pub fn into_value(self) -> Value {
        self.tree().into_value()
    }

    /// The item as compact JSON appended to `out`, its strings copied as they are (see
    /// [`write_verbatim`]).
    pub fn write_verbatim(self, out: &mut String) {
        self.tree().write_verbatim(out)
    }

    fn tree(self) -> Tree {
        Tree::Object(vec![
            ("schema_version", leaf(2)),
            ("id", leaf(self.id)),
            ("turn_id", leaf(self.turn_id)),
            ("kind", leaf(self.kind)),
            ("status", leaf("completed")),
            ("summary", leaf(self.summary)),
            ("detail", leaf(self.detail)),
            ("artifact_refs", leaf(Vec::<Value>::new())),
            ("started_at", leaf(self.started_at)),
            ("ended_at", leaf(self.ended_at)),
        ])
    }
}
