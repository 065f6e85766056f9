//! The fast readability check of a session document: one borrowed pass over the bytes that
//! accepts only documents the typed model ([`crate::model::SavedSession`]) accepts with the
//! verdict `Readable`, and gives up on anything else, which the exact parse then judges.
//!
//! Why it is exact: every part the typed model parses straight from the bytes (the top level,
//! `metadata`, messages, the journal) is parsed here with the same field names, types, defaults
//! and duplicate-key errors; the parts the model buffers first (content blocks, journal entries:
//! internally tagged and flattened enums) are parsed here through `deserialize_any`, as the
//! buffer does, and each field with the strictest type any variant gives it. So this pass
//! rejects a superset of what the model rejects; where it accepts, it found the same id,
//! binding, versions, roles, block types, entry kinds and journal links the exact verdict is
//! made of. `judge::tests` and the property test compare the two verdicts on mutated documents.

use std::borrow::Cow;
use std::fmt;

use serde::de::{self, DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};
use serde::Deserialize;
use serde_json::{Map, Value};

use crate::model::{
    ContextReference, KNOWN_BLOCK_TYPES, KNOWN_JOURNAL_KINDS, KNOWN_ROLES, SESSION_SCHEMA_VERSION,
};
use crate::time::Timestamp;

/// `Some(data_dir)` when the document is readable as the app reads it, its schema is not newer,
/// its `metadata.id` is `id`, its journal is valid and every role, block type and entry kind is
/// known. `None` means "not decided here": the exact parse judges it.
pub(crate) fn readable(id: &str, bytes: &[u8]) -> Option<Option<String>> {
    // The whole text is checked as UTF-8 once, so the parse need not check each string again
    // (`from_str` and `from_slice` accept the same valid UTF-8 text; invalid text is left to
    // the exact parse, which names the error).
    let text = std::str::from_utf8(bytes).ok()?;
    let doc: Doc<'_> = serde_json::from_str(text).ok()?;
    let journal_version = doc.journal.as_ref().map_or(0, |j| j.schema_version);
    if doc.schema_version.max(journal_version) > SESSION_SCHEMA_VERSION {
        return None;
    }
    if doc.metadata.id.0 != id || !doc.messages.0 {
        return None;
    }
    if let Some(j) = &doc.journal {
        let links: Vec<(&str, Option<&str>)> = j
            .entries
            .iter()
            .map(|(id, parent)| (id.as_ref(), parent.as_deref()))
            .collect();
        super::journal::check_journal_links(&links, j.leaf_id.as_deref()).ok()?;
    }
    Some(
        doc.metadata
            .runtime_store
            .map(|r| r.data_dir.0.into_owned()),
    )
}

fn one() -> u64 {
    1
}

/// `SavedSession` with the same fields; messages and the journal are checked, not kept.
// Fields read only to check them, as the model reads them.
#[derive(Deserialize)]
#[allow(dead_code)]
struct Doc<'a> {
    #[serde(default = "one")]
    schema_version: u64,
    #[serde(borrow)]
    metadata: Metadata<'a>,
    messages: Messages,
    #[serde(default, borrow)]
    journal: Option<Journal<'a>>,
    #[serde(default)]
    leaf_id: Option<Str>,
    #[serde(default)]
    system_prompt: Option<Str>,
    #[serde(default)]
    context_references: Option<Vec<ContextReference>>,
    #[serde(default)]
    artifacts: Option<Vec<Map<String, Value>>>,
    #[serde(default)]
    approval_receipts: Option<Vec<Value>>,
    #[serde(default)]
    work_state: Option<Map<String, Value>>,
    #[serde(default)]
    window_title: Option<Str>,
    #[serde(default)]
    last_auto_route: Option<Map<String, Value>>,
    #[serde(default)]
    turn_outcomes: Option<Vec<Map<String, Value>>>,
}

/// `SessionMetadata` with the same fields; only the id and the binding are kept.
#[derive(Deserialize)]
#[allow(dead_code)]
struct Metadata<'a> {
    #[serde(borrow)]
    id: CowStr<'a>,
    #[serde(default, borrow)]
    runtime_store: Option<Binding<'a>>,
    title: Str,
    created_at: Instant,
    updated_at: Instant,
    message_count: u64,
    total_tokens: u64,
    model: Str,
    #[serde(default)]
    model_provider: Option<Str>,
    #[serde(default)]
    model_provider_id: Option<Str>,
    workspace: Str,
    #[serde(default)]
    mode: Option<Str>,
    #[serde(default)]
    cost: Option<AnyObject>,
    #[serde(default)]
    parent_session_id: Option<Str>,
    #[serde(default)]
    forked_from_message_count: Option<u64>,
    #[serde(default)]
    cumulative_turn_secs: Option<u64>,
    #[serde(default)]
    archived: Option<bool>,
    #[serde(default)]
    spawn_depth: Option<u32>,
}

/// `RuntimeStoreBinding`: both fields required.
#[derive(Deserialize)]
#[allow(dead_code)]
struct Binding<'a> {
    #[serde(borrow)]
    data_dir: CowStr<'a>,
    execution_scope: Str,
}

/// A JSON object of any values (`Map<String, Value>`).
struct AnyObject;

impl<'de> Deserialize<'de> for AnyObject {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = AnyObject;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("an object")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<AnyObject, A::Error> {
                while map.next_key::<Str>()?.is_some() {
                    map.next_value::<Any>()?;
                }
                Ok(AnyObject)
            }
        }
        d.deserialize_map(V)
    }
}

/// A JSON string, checked (UTF-8, escapes) and not kept.
struct Str;

impl<'de> Deserialize<'de> for Str {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_str(StrVisitor).map(|_| Str)
    }
}

/// Accepts any string, borrowed or unescaped into serde_json's scratch buffer, and keeps nothing.
struct StrVisitor;

impl Visitor<'_> for StrVisitor {
    type Value = ();
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a string")
    }
    fn visit_str<E: de::Error>(self, _: &str) -> Result<(), E> {
        Ok(())
    }
}

/// A string that must be one of a list: its index there, or an error (so the exact parse
/// decides what an unknown name means).
struct OneOf(&'static [&'static str]);

impl<'de> DeserializeSeed<'de> for OneOf {
    type Value = usize;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<usize, D::Error> {
        d.deserialize_str(self)
    }
}

impl Visitor<'_> for OneOf {
    type Value = usize;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a known name")
    }
    fn visit_str<E: de::Error>(self, s: &str) -> Result<usize, E> {
        self.0
            .iter()
            .position(|k| *k == s)
            .ok_or_else(|| E::custom("unknown name"))
    }
}

/// A string kept borrowed from the input when it has no escapes.
struct CowStr<'a>(Cow<'a, str>);

impl<'de: 'a, 'a> Deserialize<'de> for CowStr<'a> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = CowStr<'de>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a string")
            }
            fn visit_borrowed_str<E: de::Error>(self, s: &'de str) -> Result<Self::Value, E> {
                Ok(CowStr(Cow::Borrowed(s)))
            }
            fn visit_str<E: de::Error>(self, s: &str) -> Result<Self::Value, E> {
                Ok(CowStr(Cow::Owned(s.to_owned())))
            }
        }
        d.deserialize_str(V)
    }
}

/// An RFC 3339 instant, checked as [`crate::model::Rfc3339`] checks it.
struct Instant;

impl<'de> Deserialize<'de> for Instant {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl Visitor<'_> for V {
            type Value = Instant;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("an RFC 3339 timestamp")
            }
            fn visit_str<E: de::Error>(self, s: &str) -> Result<Instant, E> {
                Timestamp::parse_as_app(s)
                    .map(|_| Instant)
                    .ok_or_else(|| E::custom("not an RFC 3339 timestamp"))
            }
        }
        d.deserialize_str(V)
    }
}

/// The key by which serde_json (feature `raw_value`) recognizes a raw value.
const RAW_VALUE_TOKEN: &str = "$serde_json::private::RawValue";

/// Any JSON value, parsed as `serde_json::Value` and serde's buffer parse it (through
/// `deserialize_any`); only whether it was a string is kept.
struct Any {
    string: bool,
}

impl<'de> Deserialize<'de> for Any {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(AnyVisitor)
    }
}

struct AnyVisitor;

impl<'de> Visitor<'de> for AnyVisitor {
    type Value = Any;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("any JSON value")
    }
    fn visit_bool<E>(self, _: bool) -> Result<Any, E> {
        Ok(Any { string: false })
    }
    fn visit_i64<E>(self, _: i64) -> Result<Any, E> {
        Ok(Any { string: false })
    }
    fn visit_u64<E>(self, _: u64) -> Result<Any, E> {
        Ok(Any { string: false })
    }
    fn visit_f64<E>(self, _: f64) -> Result<Any, E> {
        Ok(Any { string: false })
    }
    fn visit_str<E>(self, _: &str) -> Result<Any, E> {
        Ok(Any { string: true })
    }
    fn visit_unit<E>(self) -> Result<Any, E> {
        Ok(Any { string: false })
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Any, A::Error> {
        while seq.next_element::<Any>()?.is_some() {}
        Ok(Any { string: false })
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Any, A::Error> {
        // With serde_json's `raw_value` feature, a `Value` whose first key is this token is
        // parsed as a raw value (its value must be a string of JSON): left to the exact parse.
        while let Some(k) = map.next_key_seed(Field(&[RAW_VALUE_TOKEN]))? {
            if k.is_some() {
                return Err(de::Error::custom("raw value token"));
            }
            map.next_value::<Any>()?;
        }
        Ok(Any { string: false })
    }
}

/// A JSON array of any values (`Vec<Value>`).
struct AnyArray;

impl<'de> Deserialize<'de> for AnyArray {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = AnyArray;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("an array")
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<AnyArray, A::Error> {
                while seq.next_element::<Any>()?.is_some() {}
                Ok(AnyArray)
            }
        }
        d.deserialize_seq(V)
    }
}

/// A map key: its index in `fields`, or `None` for another key.
struct Field(&'static [&'static str]);

impl<'de> DeserializeSeed<'de> for Field {
    type Value = Option<usize>;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Option<usize>, D::Error> {
        d.deserialize_str(self)
    }
}

impl Visitor<'_> for Field {
    type Value = Option<usize>;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a field name")
    }
    fn visit_str<E: de::Error>(self, s: &str) -> Result<Option<usize>, E> {
        Ok(self.0.iter().position(|k| *k == s))
    }
}

/// Marks field `i` as seen; a second time is the duplicate-field error the model gives.
fn seen<E: de::Error>(present: &mut u32, i: usize) -> Result<(), E> {
    if *present & (1 << i) != 0 {
        return Err(E::custom("duplicate field"));
    }
    *present |= 1 << i;
    Ok(())
}

/// A small object: a required string field first, then optional string fields
/// (`cache_control`, `image_url`, `caller`), other keys any value.
struct Small(&'static [&'static str]);

impl<'de> DeserializeSeed<'de> for Small {
    type Value = ();
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_map(self)
    }
}

impl<'de> Visitor<'de> for Small {
    type Value = ();
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("an object")
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        let mut present = 0;
        while let Some(k) = map.next_key_seed(Field(self.0))? {
            match k {
                Some(0) => {
                    seen(&mut present, 0)?;
                    map.next_value::<Str>()?;
                }
                Some(i) => {
                    seen(&mut present, i)?;
                    map.next_value::<Option<Str>>()?;
                }
                None => {
                    map.next_value::<Any>()?;
                }
            }
        }
        if present & 1 == 0 {
            return Err(de::Error::custom("missing field"));
        }
        Ok(())
    }
}

/// `Vec<Message>`; true when every role is known.
struct Messages(bool);

impl<'de> Deserialize<'de> for Messages {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Messages;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("an array of messages")
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Messages, A::Error> {
                let mut known = true;
                while let Some(m) = seq.next_element::<Message>()? {
                    known &= m.0;
                }
                Ok(Messages(known))
            }
        }
        d.deserialize_seq(V)
    }
}

/// A message; true when its role is known. A role the doctor does not know is not an error
/// here (the model reads any string): the caller gives up on the document instead.
struct Message(bool);

const MESSAGE_FIELDS: &[&str] = &["role", "content"];

impl<'de> Deserialize<'de> for Message {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Message;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a message")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Message, A::Error> {
                let mut present = 0;
                let mut known = false;
                while let Some(k) = map.next_key_seed(Field(MESSAGE_FIELDS))? {
                    match k {
                        Some(0) => {
                            seen(&mut present, 0)?;
                            let role = map.next_value::<CowStr>()?;
                            known = KNOWN_ROLES.contains(&role.0.as_ref());
                        }
                        Some(_) => {
                            seen(&mut present, 1)?;
                            map.next_value::<Blocks>()?;
                        }
                        None => {
                            map.next_value::<Any>()?;
                        }
                    }
                }
                if present != 0b11 {
                    return Err(de::Error::custom("missing field"));
                }
                Ok(Message(known))
            }
        }
        d.deserialize_map(V)
    }
}

/// `Vec<ContentBlock>`.
struct Blocks;

impl<'de> Deserialize<'de> for Blocks {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Blocks;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("an array of content blocks")
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Blocks, A::Error> {
                while seq.next_element::<Block>()?.is_some() {}
                Ok(Blocks)
            }
        }
        d.deserialize_seq(V)
    }
}

/// Every field of every content block variant; the index is the bit in `present`.
const BLOCK_FIELDS: &[&str] = &[
    "type",              // 0
    "text",              // 1
    "cache_control",     // 2
    "image_url",         // 3
    "thinking",          // 4
    "signature",         // 5
    "state",             // 6
    "id",                // 7
    "name",              // 8
    "input",             // 9
    "execution_id",      // 10
    "caller",            // 11
    "thought_signature", // 12
    "tool_use_id",       // 13
    "content",           // 14
    "is_error",          // 15
    "content_blocks",    // 16
];

/// The fields each block type requires, by bit, in [`KNOWN_BLOCK_TYPES`] order.
const BLOCK_REQUIRED: [u32; 8] = [
    1 << 1,                   // text: text
    1 << 3,                   // image_url: image_url
    1 << 4,                   // thinking: thinking
    1 << 7 | 1 << 8 | 1 << 9, // tool_use: id, name, input
    1 << 13 | 1 << 14,        // tool_result: tool_use_id, content (a string)
    1 << 7 | 1 << 8 | 1 << 9, // server_tool_use: id, name, input
    1 << 13 | 1 << 14,        // tool_search_tool_result: tool_use_id, content
    1 << 13 | 1 << 14,        // code_execution_tool_result: tool_use_id, content
];
const TOOL_RESULT: usize = 4;

/// A content block of a known type with its variant's fields; a field of another variant must
/// have the type that variant gives it (stricter than the model, which ignores it).
struct Block;

impl<'de> Deserialize<'de> for Block {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Block;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a content block")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Block, A::Error> {
                let mut present = 0;
                let mut ty = None;
                let mut content_is_string = false;
                while let Some(k) = map.next_key_seed(Field(BLOCK_FIELDS))? {
                    let Some(i) = k else {
                        map.next_value::<Any>()?;
                        continue;
                    };
                    seen(&mut present, i)?;
                    match i {
                        0 => ty = Some(map.next_value_seed(OneOf(KNOWN_BLOCK_TYPES))?),
                        1 | 4 | 7 | 8 | 13 => map.next_value::<Str>().map(drop)?,
                        5 | 10 | 12 => map.next_value::<Option<Str>>().map(drop)?,
                        2 => map.next_value_seed(OptionSeed(Small(&["type"])))?,
                        3 => map.next_value_seed(Small(&["url"]))?,
                        11 => map.next_value_seed(OptionSeed(Small(&["type", "tool_id"])))?,
                        6 => map.next_value::<Option<Any>>().map(drop)?,
                        9 => map.next_value::<Any>().map(drop)?,
                        14 => content_is_string = map.next_value::<Any>()?.string,
                        15 => map.next_value::<Option<bool>>().map(drop)?,
                        _ => map.next_value::<Option<AnyArray>>().map(drop)?,
                    }
                }
                let ty = ty.ok_or_else(|| de::Error::custom("missing field `type`"))?;
                let required = BLOCK_REQUIRED[ty];
                if present & required != required || (ty == TOOL_RESULT && !content_is_string) {
                    return Err(de::Error::custom("missing or mistyped field"));
                }
                Ok(Block)
            }
        }
        d.deserialize_map(V)
    }
}

/// `Option<T>` of a seed: `null` is `None`, anything else goes to the seed.
struct OptionSeed<S>(S);

impl<'de, S: DeserializeSeed<'de, Value = ()>> DeserializeSeed<'de> for OptionSeed<S> {
    type Value = ();
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_option(self)
    }
}

impl<'de, S: DeserializeSeed<'de, Value = ()>> Visitor<'de> for OptionSeed<S> {
    type Value = ();
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("null or an object")
    }
    fn visit_none<E>(self) -> Result<(), E> {
        Ok(())
    }
    fn visit_unit<E>(self) -> Result<(), E> {
        Ok(())
    }
    fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        self.0.deserialize(d)
    }
}

/// `SessionJournal`: the links of its entries are kept for the journal checks.
struct Journal<'a> {
    entries: Vec<(Cow<'a, str>, Option<Cow<'a, str>>)>,
    leaf_id: Option<Cow<'a, str>>,
    schema_version: u64,
}

const JOURNAL_FIELDS: &[&str] = &["entries", "leaf_id", "schema_version", "spawn_depth"];

impl<'de: 'a, 'a> Deserialize<'de> for Journal<'a> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Journal<'de>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a journal")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Journal<'de>, A::Error> {
                let mut present = 0;
                let mut j = Journal {
                    entries: Vec::new(),
                    leaf_id: None,
                    schema_version: 1,
                };
                while let Some(k) = map.next_key_seed(Field(JOURNAL_FIELDS))? {
                    let Some(i) = k else {
                        map.next_value::<Any>()?;
                        continue;
                    };
                    seen(&mut present, i)?;
                    match i {
                        0 => j.entries = map.next_value::<Entries>()?.0,
                        1 => j.leaf_id = map.next_value::<Option<CowStr>>()?.map(|s| s.0),
                        2 => j.schema_version = map.next_value()?,
                        _ => map.next_value::<u32>().map(drop)?,
                    }
                }
                Ok(j)
            }
        }
        d.deserialize_map(V)
    }
}

/// `Vec<JournalEntry>`, as links.
struct Entries<'a>(Vec<(Cow<'a, str>, Option<Cow<'a, str>>)>);

impl<'de: 'a, 'a> Deserialize<'de> for Entries<'a> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Entries<'de>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("an array of journal entries")
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Entries<'de>, A::Error> {
                let mut links = Vec::with_capacity(seq.size_hint().unwrap_or(0));
                while let Some(e) = seq.next_element::<Entry>()? {
                    links.push((e.id, e.parent));
                }
                Ok(Entries(links))
            }
        }
        d.deserialize_seq(V)
    }
}

/// Every field of a journal entry and of every entry kind; the index is the bit in `present`.
const ENTRY_FIELDS: &[&str] = &[
    "id",               // 0
    "parent_id",        // 1
    "created_at",       // 2
    "spawn_depth",      // 3
    "kind",             // 4
    "message",          // 5
    "text",             // 6
    "summary",          // 7
    "tokens_before",    // 8
    "tokens_after",     // 9
    "model",            // 10
    "branch_id",        // 11
    "parent_branch_id", // 12
    "content",          // 13
];

/// The fields each entry kind requires besides `id`, `created_at` and `kind`, in
/// [`KNOWN_JOURNAL_KINDS`] order.
const ENTRY_REQUIRED: [u32; 6] = [
    1 << 5,           // message: message
    1 << 6,           // user: text
    1 << 6,           // assistant: text
    1 << 7,           // compaction: summary
    1 << 11 | 1 << 7, // branch_summary: branch_id, summary
    1 << 13,          // system: content
];

/// A journal entry of a known kind whose message, if any, has a known role.
struct Entry<'a> {
    id: Cow<'a, str>,
    parent: Option<Cow<'a, str>>,
}

impl<'de: 'a, 'a> Deserialize<'de> for Entry<'a> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Entry<'de>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a journal entry")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Entry<'de>, A::Error> {
                let mut present = 0;
                let mut id = None;
                let mut parent = None;
                let mut kind = None;
                while let Some(k) = map.next_key_seed(Field(ENTRY_FIELDS))? {
                    let Some(i) = k else {
                        map.next_value::<Any>()?;
                        continue;
                    };
                    seen(&mut present, i)?;
                    match i {
                        0 => id = Some(map.next_value::<CowStr>()?.0),
                        1 => parent = map.next_value::<Option<CowStr>>()?.map(|s| s.0),
                        2 => map.next_value::<Instant>().map(drop)?,
                        3 => map.next_value::<u32>().map(drop)?,
                        4 => kind = Some(map.next_value_seed(OneOf(KNOWN_JOURNAL_KINDS))?),
                        5 => {
                            if !map.next_value::<Message>()?.0 {
                                return Err(de::Error::custom("unknown role"));
                            }
                        }
                        6 | 7 | 11 | 13 => map.next_value::<Str>().map(drop)?,
                        8 | 9 => map.next_value::<Option<u64>>().map(drop)?,
                        _ => map.next_value::<Option<Str>>().map(drop)?,
                    }
                }
                let (Some(id), Some(kind)) = (id, kind) else {
                    return Err(de::Error::custom("missing field"));
                };
                let required = ENTRY_REQUIRED[kind] | 1 << 2;
                if present & required != required {
                    return Err(de::Error::custom("missing field"));
                }
                Ok(Entry { id, parent })
            }
        }
        d.deserialize_map(V)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::judge::{judge_document, judge_document_exact};
    use std::path::Path;

    /// Every document in the fixtures (top-level `<id>.json` of a store, and checkpoints).
    fn fixture_documents() -> Vec<(String, Vec<u8>)> {
        fn walk(root: &fsroot::Root, dir: &Path, out: &mut Vec<(String, Vec<u8>)>) {
            let Ok(entries) = root.list(dir) else {
                return;
            };
            let is_doc_dir = dir
                .file_name()
                .is_some_and(|n| n == "store" || n == "demo" || n == "checkpoints");
            for e in entries {
                let p = dir.join(&e.name);
                match e.kind {
                    fsroot::EntryKind::Dir => walk(root, &p, out),
                    fsroot::EntryKind::File
                        if is_doc_dir && p.extension().is_some_and(|x| x == "json") =>
                    {
                        let id = p.file_stem().unwrap().to_string_lossy().into_owned();
                        out.push((id, root.read(&p).unwrap()));
                    }
                    _ => {}
                }
            }
        }
        let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures");
        let root = fsroot::Root::open(&fixtures).unwrap();
        let mut out = Vec::new();
        walk(&root, Path::new(""), &mut out);
        out
    }

    fn same_verdict(id: &str, bytes: &[u8]) -> bool {
        let fast = format!("{:?}", judge_document(id, bytes));
        let exact = format!("{:?}", judge_document_exact(id, bytes));
        assert_eq!(
            fast,
            exact,
            "verdicts differ for {id}: {}",
            String::from_utf8_lossy(bytes)
        );
        readable(id, bytes).is_some()
    }

    /// Edits that each touch a rule of the typed model the fast pass must follow or give up on.
    const EDITS: &[(&str, &str)] = &[
        (r#""type":"text""#, r#""type":"hologram""#),
        (r#""type":"text""#, r#""type":0"#),
        (r#""type":"text""#, r#""type":"text","type":"text""#),
        (r#""type":"text""#, r#""type":"text","junk":1e400"#),
        (r#""type":"text""#, r#""type":"text","junk":"\ud800""#),
        (r#""type":"text""#, r#""type":"text","thinking":5"#),
        (
            r#""type":"text""#,
            r#""type":"text","cache_control":{"type":"x","type":"y"}"#,
        ),
        (
            r#""type":"text""#,
            r#""type":"text","cache_control":["ephemeral"]"#,
        ),
        (r#""type":"text""#, r#""type":"text","cache_control":null"#),
        (
            r#""type":"tool_result""#,
            r#""type":"tool_result","content":7"#,
        ),
        (r#""type":"tool_use""#, r#""type":"tool_use","input":null"#),
        (r#""role":"user""#, r#""role":"critic""#),
        (r#""role":"user""#, r#""role":"us\u0065r""#),
        (r#""role":"user""#, r#""role":"user","role":"user""#),
        (r#""role":"assistant""#, r#""role":"assistant","x":1e999"#),
        (r#""messages":"#, r#""messages":[],"messages2":"#),
        (r#""kind":"message""#, r#""kind":"hologram""#),
        (r#""kind":"message""#, r#""kind":"message","junk":1e400"#),
        (r#""kind":"user""#, r#""kind":"user","text":"a","text":"b""#),
        (r#""kind":"user""#, r#""kind":"user","content":5"#),
        (r#""parent_id":"#, r#""parent_id":null,"x":"#),
        (r#""schema_version":1"#, r#""schema_version":2"#),
        (r#""schema_version":1"#, r#""schema_version":1.0"#),
        (r#""created_at":""#, r#""created_at":"x"#),
        (r#""spawn_depth":0"#, r#""spawn_depth":-1"#),
        (r#""leaf_id":""#, r#""leaf_id":"missing-"#),
        (r#""text":""#, r#""text":"\u0000"#),
        (r#""text":""#, r#""text":null,"y":""#),
    ];

    #[test]
    fn every_readable_fixture_document_is_decided_by_the_fast_pass() {
        let docs = fixture_documents();
        assert!(docs.len() > 50, "found {} fixture documents", docs.len());
        let mut readable_docs = 0;
        for (id, bytes) in &docs {
            let fast = same_verdict(id, bytes);
            if matches!(
                judge_document_exact(id, bytes),
                crate::DocState::Readable { .. }
            ) {
                readable_docs += 1;
                assert!(fast, "the fast pass gave up on readable {id}");
            } else {
                assert!(!fast, "the fast pass accepted {id}");
            }
        }
        assert!(readable_docs > 20, "{readable_docs} readable documents");
    }

    #[test]
    fn edited_documents_get_the_exact_verdict() {
        let mut decided = 0;
        let mut judged = 0;
        for (id, bytes) in fixture_documents() {
            // Edits are written compact: the document is re-serialized so they match.
            let Ok(value) = serde_json::from_slice::<Value>(&bytes) else {
                continue;
            };
            let text = value.to_string();
            for (from, to) in EDITS {
                for (at, _) in text.match_indices(from).take(3) {
                    let edited = format!("{}{to}{}", &text[..at], &text[at + from.len()..]);
                    judged += 1;
                    decided += same_verdict(&id, edited.as_bytes()) as usize;
                }
            }
        }
        eprintln!("{judged} edited documents, {decided} decided by the fast pass");
        assert!(judged > 500, "{judged} edited documents");
        assert!(decided > 0, "the fast pass decided none of {judged}");
    }

    #[test]
    fn byte_mutations_get_the_exact_verdict() {
        // A fixed-seed generator: every run mutates the same way.
        let mut state = 0x9e37_79b9_7f4a_7c15_u64;
        let mut next = move |n: usize| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            (state % n as u64) as usize
        };
        const ALPHABET: &[u8] = b"{}[]\":,\\0-9eE.tfnul \x80\xff";
        let mut judged = 0;
        for (id, bytes) in fixture_documents() {
            if bytes.is_empty() {
                continue;
            }
            for _ in 0..30 {
                let mut m = bytes.clone();
                for _ in 0..1 + next(3) {
                    let at = next(m.len());
                    match next(3) {
                        0 => m[at] = ALPHABET[next(ALPHABET.len())],
                        1 => {
                            m.remove(at);
                        }
                        _ => m.insert(at, ALPHABET[next(ALPHABET.len())]),
                    }
                    if m.is_empty() {
                        break;
                    }
                }
                same_verdict(&id, &m);
                judged += 1;
            }
        }
        eprintln!("{judged} mutated documents");
        assert!(judged > 1000, "{judged} mutated documents");
    }

    #[test]
    fn values_the_model_buffers_are_checked_as_it_checks_them() {
        // Inside a content block or a journal entry the model buffers every value first, so an
        // unknown field's number out of range, or nesting beyond the recursion limit, fails
        // there; at the top level such a field is skipped unparsed.
        let deep = format!("{}1{}", "[".repeat(200), "]".repeat(200));
        let base = r#"{"metadata":{"id":"a","title":"t","created_at":"2026-09-01T10:00:00Z","updated_at":"2026-09-01T10:00:00Z","message_count":1,"total_tokens":0,"model":"m","workspace":"/w"},"messages":[{"role":"user","content":[{"type":"text","text":"hi"BLOCK}]}]TOP}"#;
        for (block, top) in [
            ("", ""),
            (",\"junk\":1e400", ""),
            ("", ",\"junk\":1e400"),
            (&*format!(",\"junk\":{deep}"), ""),
            ("", &*format!(",\"junk\":{deep}")),
        ] {
            let doc = base.replace("BLOCK", block).replace("TOP", top);
            let fast = same_verdict("a", doc.as_bytes());
            assert_eq!(fast, block.is_empty(), "{block:?} {top:?}");
        }
    }

    /// A minimal readable document of id `a`: `META` ends `metadata`, `BLOCK` is the one content
    /// block, `TOP` ends the document.
    fn doc(meta: &str, block: &str, top: &str) -> String {
        r#"{"metadata":{"id":"a","title":"t","created_at":"2026-09-01T10:00:00Z","updated_at":"2026-09-01T10:00:00Z","message_count":1,"total_tokens":0,"model":"m","workspace":"/w"META},"messages":[{"role":"user","content":[BLOCK]}]TOP}"#
            .replace("META", meta)
            .replace("BLOCK", block)
            .replace("TOP", top)
    }

    #[test]
    fn raw_value_token_in_free_form_values_gets_the_exact_verdict() {
        // With serde_json's `raw_value` feature, a `Value` whose first key is the raw-value
        // token parses its (string) value as JSON text; `Any` takes it as a plain object.
        let raw = r#"{"$serde_json::private::RawValue":0}"#;
        let tool_use =
            |input: &str| format!(r#"{{"type":"tool_use","id":"c","name":"n","input":{input}}}"#);
        for d in [
            doc("", &tool_use(raw), ""), // ToolUse.input: Value
            doc(
                "",
                &tool_use(r#"{"$serde_json::private::RawValue":"[1"}"#),
                "",
            ), // not JSON text
            doc(
                "",
                &tool_use(r#"{"\u0024serde_json::private::RawValue":0}"#),
                "",
            ), // escaped key
            doc(
                "",
                &format!(r#"{{"type":"thinking","thinking":"t","state":{raw}}}"#),
                "",
            ), // Thinking.state
            doc(
                "",
                &format!(
                    r#"{{"type":"tool_result","tool_use_id":"c","content":"x","content_blocks":[{raw}]}}"#
                ),
                "",
            ),
            doc(
                &format!(r#","cost":{{"x":{raw}}}"#),
                r#"{"type":"text","text":"t"}"#,
                "",
            ), // cost values: Value
        ] {
            same_verdict("a", d.as_bytes());
        }
    }

    #[test]
    fn adversarial_inputs_get_the_exact_verdict() {
        let text = r#"{"type":"text","text":"t"}"#;
        let entry = |extra: &str| {
            format!(
                r#","journal":{{"entries":[{{"id":"e","kind":"user","text":"x","created_at":"2026-09-01T10:00:00Z"{extra}}}]}}"#
            )
        };
        for (d, decided) in [
            (doc("", r#"{"\u0074ype":"text","text":"t"}"#, ""), true), // escaped tag key
            (
                doc("", r#"{"type":"text","\u0074ype":"text","text":"t"}"#, ""),
                false,
            ), // tag twice, once escaped
            (
                doc(r#","cost":{"$serde_json::private::RawValue":0}"#, text, ""),
                true,
            ), // token as a Map key (not a Value): no effect
            (doc(r#","runtime_store":["/d","s"]"#, text, ""), true), // binding as a sequence (derive accepts)
            (doc(r#","spawn_depth":-0"#, text, ""), false),          // -0 is the float -0.0 for u32
            (doc("", text, &entry(r#","kind":"user""#)), false), // duplicate tag through flatten
            (doc("", text, &entry(r#","tokens_before":-0"#)), false), // other variant's field: stricter here
            (doc("", text, r#","journal":{"schema_version":1.0}"#), false), // float schema version
            (
                doc(
                    "",
                    text,
                    &format!(r#","j":{}1{}"#, "[".repeat(200), "]".repeat(200)),
                ),
                true,
            ), // deep top-level junk is skipped
            (
                doc(
                    "",
                    &format!(
                        r#"{{"type":"tool_use","id":"c","name":"n","input":{}1{}}}"#,
                        "[".repeat(122),
                        "]".repeat(122)
                    ),
                    "",
                ),
                true,
            ), // input just within the recursion limit
            (
                doc(
                    "",
                    &format!(
                        r#"{{"type":"tool_use","id":"c","name":"n","input":{}1{}}}"#,
                        "[".repeat(123),
                        "]".repeat(123)
                    ),
                    "",
                ),
                false,
            ), // one level deeper: both fail
        ] {
            assert_eq!(same_verdict("a", d.as_bytes()), decided, "{d}");
        }
    }
}
