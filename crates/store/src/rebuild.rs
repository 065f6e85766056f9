//! Rebuilding a thread's conversation from its turns and items, as the app's
//! `reconstruct_messages_from_turns_with` does (codewhale-format.md §7).
//!
//! Read from `crates/tui/src/runtime_threads.rs @9dd14399` (`RuntimeThreadManager::
//! reconstruct_messages_from_turns_with`, `RuntimeToolIdentity::read`, `check_execution_provider`,
//! `projects_tool_history`, `unanswered_call_result`, `TurnItemRecord::user_content`,
//! `RuntimeThreadStore::list_all_turns` / `list_items_for_turns_map`, `HeldRuntimeStore::
//! recoverable_threads`) and `crates/tui/src/image_attach.rs` (`validate_stored_image_content`).
//! Points where this module has to choose, because the app's answer depends on the machine:
//!
//! * Ties. The app sorts turns by `created_at` and items by `started_at` with stable sorts over
//!   directory-listing order, which is unspecified; ties are broken here by id.
//! * Undated items. The app sorts an item without `started_at` as "now"; here it sorts after
//!   every dated item. The two differ only for items dated in the future.
//! * Stored images. The app fully decodes every stored image (`decode_and_guard_image`, with the
//!   `image` crate). This module checks everything before that step exactly (block kinds, data
//!   URL shape, size limits, canonical padded base64, format sniffing, declared MIME) and then
//!   only the image header's dimensions against the same guard (8192 px a side, 33,554,432
//!   pixels); corrupt pixel data past a valid header is not detected.

use std::cmp::Ordering;
use std::collections::{HashMap, HashSet};

use serde_json::Value;

use crate::model::{
    Caller, ContentBlock, ItemKind, Message, Rfc3339, Status, TurnItemRecord, TurnRecord,
};
use crate::time::Timestamp;

/// `tool_history_repair::CRASH_REPAIR_CONTENT`: the result given to a call the process lost.
pub const CRASH_REPAIR_CONTENT: &str =
    "Tool call interrupted by process exit; terminal status: crashed_and_repaired.";

/// `IMAGE_RUNTIME_SCHEMA_VERSION`: a `user_message` item of this schema carries its content in
/// `metadata.runtime_image_content`.
pub const IMAGE_SCHEMA_VERSION: u64 = 3;

/// `OUTPUT_LIMIT_RUNTIME_SCHEMA_VERSION`: image content is read from a `user_message` item of
/// this schema only when `metadata.runtime_image_content` is present.
pub const OUTPUT_LIMIT_SCHEMA_VERSION: u64 = 4;

/// `image_attach::MAX_IMAGE_BYTES`: the largest stored image, in decoded bytes.
const MAX_IMAGE_BYTES: usize = 5 * 1024 * 1024;
/// `image_attach::MAX_IMAGE_DIMENSION`.
const MAX_IMAGE_DIMENSION: u32 = 8192;
/// `image_attach::MAX_IMAGE_PIXELS`.
const MAX_IMAGE_PIXELS: u64 = 33_554_432;

/// The messages of one thread, rebuilt from `turns` (this thread's turns, in any order) and
/// `items` (the store's items grouped by `turn_id`). An error aborts recovery of the whole store.
///
/// Turns are replayed by `created_at` (ties by id). Within a turn, items are replayed in the
/// turn's `item_ids` order for the ids that name an item of that turn, then the turn's other
/// items by `started_at` (undated last, ties by id). Every `user_message` item with image
/// content is validated, whatever its status, as the app does when it loads the item.
pub fn rebuild_thread(
    turns: &[&TurnRecord],
    items: &HashMap<String, Vec<TurnItemRecord>>,
) -> Result<Vec<Message>, RebuildError> {
    let mut ordered: Vec<&TurnRecord> = turns.to_vec();
    ordered.sort_by(|a, b| {
        instant_cmp(Some(&a.created_at), Some(&b.created_at)).then_with(|| a.id.cmp(&b.id))
    });

    let mut messages = Vec::new();
    // One execution id keeps one provider id across the whole thread.
    let mut bindings: HashMap<String, String> = HashMap::new();
    for turn in ordered {
        let turn_items = order_items(turn, items.get(&turn.id).map_or(&[][..], Vec::as_slice));
        for item in &turn_items {
            if carries_image_content(item) {
                user_content(item).map_err(|e| item_error(turn, item, &e))?;
            }
        }
        rebuild_turn(turn, &turn_items, &mut bindings, &mut messages)?;
    }
    Ok(messages)
}

/// The content blocks a `user_message` item contributes (the app's
/// `TurnItemRecord::user_content`): the validated `runtime_image_content` blocks for image
/// schemas, otherwise one text block from `detail` (or `summary` when `detail` is absent) unless
/// that text is blank.
pub fn user_content(item: &TurnItemRecord) -> Result<Vec<ContentBlock>, String> {
    if carries_image_content(item) {
        let content = item
            .metadata
            .as_ref()
            .and_then(|meta| meta.get("runtime_image_content"))
            .ok_or("persisted image input is missing its content")?;
        let blocks: Vec<ContentBlock> = serde_json::from_value(content.clone())
            .map_err(|e| format!("invalid persisted image input: {e}"))?;
        validate_stored_image_content(&blocks)?;
        let has_prompt = item.detail.as_deref().is_some_and(|t| !t.trim().is_empty());
        let has_text = blocks
            .iter()
            .any(|b| matches!(b, ContentBlock::Text { text, .. } if !text.trim().is_empty()));
        if has_prompt && !has_text {
            return Err("persisted image input is missing its prompt".into());
        }
        return Ok(blocks.into_iter().map(ContentBlock::canonical).collect());
    }
    let text = item.detail.as_ref().unwrap_or(&item.summary);
    Ok(if text.trim().is_empty() {
        Vec::new()
    } else {
        vec![ContentBlock::text(text.clone())]
    })
}

/// Whether `item` is a `user_message` whose content lives in `metadata.runtime_image_content`.
fn carries_image_content(item: &TurnItemRecord) -> bool {
    item.kind == ItemKind::UserMessage
        && (item.schema_version == IMAGE_SCHEMA_VERSION
            || (item.schema_version == OUTPUT_LIMIT_SCHEMA_VERSION
                && item
                    .metadata
                    .as_ref()
                    .is_some_and(|meta| meta.get("runtime_image_content").is_some())))
}

/// An instant as (seconds, nanoseconds), read by chrono as the app reads it, so instants order
/// as chrono orders them (sub-second differences, and a leap second after the second before).
fn instant(t: &Rfc3339) -> (Timestamp, u32) {
    Timestamp::parse_as_app_nanos(&t.0).unwrap_or((Timestamp(0), 0))
}

/// Earlier first; an absent instant sorts after every present one.
fn instant_cmp(a: Option<&Rfc3339>, b: Option<&Rfc3339>) -> Ordering {
    match (a, b) {
        (Some(a), Some(b)) => instant(a).cmp(&instant(b)),
        (Some(_), None) => Ordering::Less,
        (None, Some(_)) => Ordering::Greater,
        (None, None) => Ordering::Equal,
    }
}

/// The replay order of one turn's items.
fn order_items<'a>(turn: &TurnRecord, stored: &'a [TurnItemRecord]) -> Vec<&'a TurnItemRecord> {
    let mut by_start: Vec<&TurnItemRecord> =
        stored.iter().filter(|i| i.turn_id == turn.id).collect();
    by_start.sort_by(|a, b| {
        instant_cmp(a.started_at.as_ref(), b.started_at.as_ref()).then_with(|| a.id.cmp(&b.id))
    });
    if turn.item_ids.is_empty() {
        return by_start;
    }
    let mut taken: HashSet<&str> = HashSet::new();
    let mut out = Vec::with_capacity(by_start.len());
    for id in &turn.item_ids {
        if taken.contains(id.as_str()) {
            continue;
        }
        if let Some(item) = by_start.iter().find(|i| &i.id == id) {
            taken.insert(item.id.as_str());
            out.push(*item);
        }
    }
    out.extend(
        by_start
            .into_iter()
            .filter(|i| !taken.contains(i.id.as_str())),
    );
    out
}

fn item_error(turn: &TurnRecord, item: &TurnItemRecord, reason: &str) -> RebuildError {
    RebuildError {
        turn: turn.id.clone(),
        item: item.id.clone(),
        reason: reason.to_owned(),
    }
}

/// Why a thread's messages cannot be rebuilt ([`rebuild_thread`]): the item at fault, its
/// turn, and the app's reason, in the app's words.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("turn {turn} item {item}: {reason}")]
pub struct RebuildError {
    /// The turn's id.
    pub turn: String,
    /// The item's id.
    pub item: String,
    /// What the app would refuse it for.
    pub reason: String,
}

/// `projects_tool_history`: rows that can carry a model tool call or result.
fn projects_tool_history(item: &TurnItemRecord) -> bool {
    match item.kind {
        ItemKind::ToolCall => true,
        ItemKind::FileChange | ItemKind::CommandExecution => item
            .metadata
            .as_ref()
            .is_some_and(|meta| meta.get("execution_id").is_some()),
        _ => false,
    }
}

/// One side (call or result) of a tool row: `RuntimeToolIdentity`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
struct ToolIdentity<'a> {
    execution_id: Option<&'a str>,
    provider_id: &'a str,
}

impl<'a> ToolIdentity<'a> {
    /// The identity `metadata[side]` names, `None` when that side is absent, or an error for
    /// mistyped or inconsistent correlation keys.
    fn read(metadata: Option<&'a Value>, side: &str) -> Result<Option<Self>, String> {
        let Some(meta) = metadata else {
            return Ok(None);
        };
        let Some(local) = meta.get(side) else {
            return Ok(None);
        };
        let local = local
            .as_str()
            .ok_or_else(|| format!("invalid stored tool correlation: `{side}` is not a string"))?;
        let Some(execution) = meta.get("execution_id") else {
            return Ok((!local.is_empty()).then_some(Self {
                execution_id: None,
                provider_id: local,
            }));
        };
        let execution = execution.as_str().filter(|id| !id.is_empty()).ok_or(
            "invalid stored tool execution identity: `execution_id` is not a non-empty string",
        )?;
        if local != execution {
            return Err(format!(
                "stored tool execution identity mismatch: `{side}` is {local:?} but `execution_id` is {execution:?}"
            ));
        }
        let Some(provider) = meta.get("provider_tool_use_id") else {
            return Ok(None);
        };
        let provider = provider.as_str().filter(|id| !id.is_empty()).ok_or(
            "invalid stored provider tool identity: `provider_tool_use_id` is not a non-empty string",
        )?;
        Ok(Some(Self {
            execution_id: Some(execution),
            provider_id: provider,
        }))
    }
}

/// `check_execution_provider`: an execution id cannot pair with two provider ids.
fn check_execution_provider(
    bindings: &mut HashMap<String, String>,
    identity: ToolIdentity<'_>,
) -> Result<(), String> {
    let Some(execution) = identity.execution_id else {
        return Ok(());
    };
    match bindings.get(execution) {
        Some(previous) if previous != identity.provider_id => Err(format!(
            "stored tool execution {execution:?} has inconsistent provider identity: {previous:?} and {:?}",
            identity.provider_id
        )),
        Some(_) => Ok(()),
        None => {
            bindings.insert(execution.to_string(), identity.provider_id.to_string());
            Ok(())
        }
    }
}

/// `unanswered_call_result`: the content of the synthetic result a call with no recorded result
/// in its turn gets, or `None` when nothing is missing (running and completed calls included).
fn unanswered_call_result(
    item: &TurnItemRecord,
    identity: ToolIdentity<'_>,
    tool_name: &str,
    recorded: &HashSet<ToolIdentity<'_>>,
) -> Option<String> {
    if identity.provider_id.is_empty() || tool_name.is_empty() || recorded.contains(&identity) {
        return None;
    }
    match item.status {
        Status::Failed => Some(item.detail.clone().unwrap_or_else(|| item.summary.clone())),
        Status::Interrupted | Status::Canceled => Some(CRASH_REPAIR_CONTENT.to_string()),
        Status::Queued | Status::InProgress | Status::Completed => None,
    }
}

fn flush(role: &str, blocks: &mut Vec<ContentBlock>, messages: &mut Vec<Message>) {
    if !blocks.is_empty() {
        messages.push(Message {
            role: role.to_string(),
            content: std::mem::take(blocks),
        });
    }
}

/// The tool call block of a row whose call side has an identity and a tool name.
fn tool_use_block(
    item: &TurnItemRecord,
    identity: ToolIdentity<'_>,
    tool_name: String,
) -> Result<ContentBlock, String> {
    let meta = item.metadata.as_ref();
    let input_text = meta
        .and_then(|m| m.get("tool_input"))
        .and_then(Value::as_str)
        .map(str::to_string)
        .or_else(|| item.detail.clone())
        .unwrap_or_default();
    let input = serde_json::from_str(&input_text).unwrap_or(Value::Null);
    let caller = meta
        .and_then(|m| m.get("tool_caller"))
        .map(|v| serde_json::from_value::<Caller>(v.clone()))
        .transpose()
        .map_err(|e| format!("invalid stored tool caller: {e}"))?;
    let thought_signature = meta
        .and_then(|m| m.get("tool_thought_signature"))
        .map(|v| {
            v.as_str()
                .map(str::to_string)
                .ok_or("invalid stored tool thought signature: not a string")
        })
        .transpose()?;
    Ok(ContentBlock::ToolUse {
        id: identity.provider_id.to_string(),
        name: tool_name,
        input,
        execution_id: identity.execution_id.map(str::to_string),
        caller,
        thought_signature,
    }
    .canonical())
}

fn rebuild_turn(
    turn: &TurnRecord,
    items: &[&TurnItemRecord],
    bindings: &mut HashMap<String, String>,
    messages: &mut Vec<Message>,
) -> Result<(), RebuildError> {
    let tool_rows: Vec<&TurnItemRecord> = items
        .iter()
        .copied()
        .filter(|i| projects_tool_history(i))
        .collect();
    let mut recorded: HashSet<ToolIdentity<'_>> = HashSet::new();
    for item in &tool_rows {
        for side in ["tool_use_id", "tool_result_for"] {
            let identity = ToolIdentity::read(item.metadata.as_ref(), side)
                .map_err(|e| item_error(turn, item, &e))?;
            if let Some(identity) = identity {
                check_execution_provider(bindings, identity)
                    .map_err(|e| item_error(turn, item, &e))?;
                if side == "tool_result_for" {
                    recorded.insert(identity);
                }
            }
        }
    }

    let mut assistant: Vec<ContentBlock> = Vec::new();
    let mut user: Vec<ContentBlock> = Vec::new();
    for item in items {
        match item.kind {
            ItemKind::UserMessage => {
                // A steer the engine never delivered stays out of the history.
                if matches!(item.status, Status::Queued | Status::Canceled) {
                    continue;
                }
                flush("assistant", &mut assistant, messages);
                user.extend(user_content(item).map_err(|e| item_error(turn, item, &e))?);
            }
            ItemKind::AgentMessage => {
                flush("user", &mut user, messages);
                let text = item.detail.clone().unwrap_or_else(|| item.summary.clone());
                if !text.trim().is_empty() {
                    assistant.push(ContentBlock::text(text));
                }
            }
            ItemKind::AgentReasoning => {
                flush("user", &mut user, messages);
                let thinking = item.detail.clone().unwrap_or_else(|| item.summary.clone());
                if !thinking.trim().is_empty() {
                    assistant.push(ContentBlock::Thinking {
                        thinking,
                        signature: None,
                        state: None,
                    });
                }
            }
            _ if projects_tool_history(item) => {
                let meta = item.metadata.as_ref();
                let call = ToolIdentity::read(meta, "tool_use_id")
                    .map_err(|e| item_error(turn, item, &e))?;
                let result = ToolIdentity::read(meta, "tool_result_for")
                    .map_err(|e| item_error(turn, item, &e))?;
                let tool_name = meta
                    .and_then(|m| m.get("tool_name"))
                    .and_then(Value::as_str)
                    .unwrap_or_default()
                    .to_string();
                let unanswered = call.and_then(|identity| {
                    unanswered_call_result(item, identity, &tool_name, &recorded)
                        .map(|content| (identity, content))
                });
                if let Some(identity) = call.filter(|_| !tool_name.is_empty()) {
                    flush("user", &mut user, messages);
                    let block = tool_use_block(item, identity, tool_name)
                        .map_err(|e| item_error(turn, item, &e))?;
                    assistant.push(block);
                }
                if let Some(identity) = result {
                    flush("assistant", &mut assistant, messages);
                    let is_error = meta
                        .and_then(|m| m.get("is_error"))
                        .and_then(Value::as_bool)
                        .unwrap_or(false);
                    let content_blocks = meta
                        .and_then(|m| m.get("content_blocks"))
                        .and_then(Value::as_array)
                        .cloned();
                    user.push(
                        ContentBlock::ToolResult {
                            tool_use_id: identity.provider_id.to_string(),
                            content: item.detail.clone().unwrap_or_default(),
                            execution_id: identity.execution_id.map(str::to_string),
                            is_error: is_error.then_some(true),
                            content_blocks,
                        }
                        .canonical(),
                    );
                } else if let Some((identity, content)) = unanswered {
                    // The synthetic answer takes the place the live result held: right after
                    // its call, before whatever the turn did next.
                    flush("assistant", &mut assistant, messages);
                    user.push(ContentBlock::ToolResult {
                        tool_use_id: identity.provider_id.to_string(),
                        content,
                        execution_id: identity.execution_id.map(str::to_string),
                        is_error: Some(true),
                        content_blocks: None,
                    });
                }
            }
            _ => {}
        }
    }
    flush("assistant", &mut assistant, messages);
    flush("user", &mut user, messages);
    Ok(())
}

/// `image_attach::validate_stored_image_content`: only text and image blocks, at least one
/// image, every image canonical inline content the app would accept (see the module docs for
/// the one check that is approximated).
fn validate_stored_image_content(blocks: &[ContentBlock]) -> Result<(), String> {
    if blocks
        .iter()
        .any(|b| !matches!(b, ContentBlock::Text { .. } | ContentBlock::ImageUrl { .. }))
    {
        return Err("invalid persisted user image content kind".into());
    }
    let mut images: Vec<(&str, &str)> = Vec::new();
    for block in blocks {
        if let ContentBlock::ImageUrl { image_url } = block {
            if image_url.url.len() > MAX_IMAGE_BYTES.div_ceil(3) * 4 + 32 {
                return Err("stored image exceeds the attachment limit".into());
            }
            images.push(
                parse_data_url(&image_url.url)
                    .ok_or("stored image requires canonical inline content")?,
            );
        }
    }
    for (index, (mime, data)) in images.iter().enumerate() {
        let n = index + 1;
        if data.len() > MAX_IMAGE_BYTES.div_ceil(3) * 4 {
            return Err(format!("image {n} exceeds the 5 MiB limit"));
        }
        let bytes = decode_base64(data).ok_or_else(|| format!("image {n} has invalid base64"))?;
        if bytes.is_empty() {
            return Err(format!("image {n} is empty"));
        }
        if bytes.len() > MAX_IMAGE_BYTES {
            return Err(format!("image {n} exceeds the 5 MiB limit"));
        }
        let sniffed = sniff_media_type(&bytes)
            .ok_or_else(|| format!("image {n} is not a PNG, JPEG, GIF or WebP image"))?;
        if *mime != sniffed {
            return Err(format!("image {n} MIME does not match its content"));
        }
        let (width, height) = image_dimensions(&bytes)
            .ok_or_else(|| format!("image {n} has an invalid image header"))?;
        if width > MAX_IMAGE_DIMENSION
            || height > MAX_IMAGE_DIMENSION
            || u64::from(width) * u64::from(height) > MAX_IMAGE_PIXELS
        {
            return Err(format!(
                "image {n} dimensions exceed the decompression bomb guard"
            ));
        }
    }
    if images.is_empty() {
        return Err("persisted image input must contain an image".into());
    }
    Ok(())
}

/// `image_attach::parse_data_url`: `data:<media-type>;base64,<payload>`.
fn parse_data_url(url: &str) -> Option<(&str, &str)> {
    let rest = url.strip_prefix("data:")?;
    let (header, payload) = rest.split_once(',')?;
    let media_type = header.strip_suffix(";base64")?;
    if media_type.is_empty() || payload.is_empty() {
        return None;
    }
    Some((media_type, payload))
}

/// Standard base64 as the `base64` crate's `STANDARD` engine decodes it: canonical padding
/// required, no whitespace, no non-zero trailing bits. So decoding succeeds exactly when
/// re-encoding gives the input back (the app's canonical check).
fn decode_base64(text: &str) -> Option<Vec<u8>> {
    fn value(c: u8) -> Option<u32> {
        match c {
            b'A'..=b'Z' => Some(u32::from(c - b'A')),
            b'a'..=b'z' => Some(u32::from(c - b'a') + 26),
            b'0'..=b'9' => Some(u32::from(c - b'0') + 52),
            b'+' => Some(62),
            b'/' => Some(63),
            _ => None,
        }
    }
    let bytes = text.as_bytes();
    if !bytes.len().is_multiple_of(4) {
        return None;
    }
    let mut out = Vec::with_capacity(bytes.len() / 4 * 3);
    let quads = bytes.len() / 4;
    for (q, quad) in bytes.chunks(4).enumerate() {
        let pad = quad.iter().rev().take_while(|&&c| c == b'=').count();
        if pad > 2 || (pad > 0 && q + 1 != quads) {
            return None;
        }
        let mut acc = 0u32;
        for &c in &quad[..4 - pad] {
            acc = (acc << 6) | value(c)?;
        }
        match pad {
            0 => out.extend_from_slice(&[(acc >> 16) as u8, (acc >> 8) as u8, acc as u8]),
            1 => {
                if acc & 0b11 != 0 {
                    return None;
                }
                out.extend_from_slice(&[(acc >> 10) as u8, (acc >> 2) as u8]);
            }
            _ => {
                if acc & 0b1111 != 0 {
                    return None;
                }
                out.push((acc >> 4) as u8);
            }
        }
    }
    Some(out)
}

/// `image_attach::sniff_media_type`: the four formats every provider accepts.
fn sniff_media_type(bytes: &[u8]) -> Option<&'static str> {
    if bytes.starts_with(b"\x89PNG\r\n\x1a\n") {
        Some("image/png")
    } else if bytes.starts_with(b"\xff\xd8\xff") {
        Some("image/jpeg")
    } else if bytes.starts_with(b"GIF87a") || bytes.starts_with(b"GIF89a") {
        Some("image/gif")
    } else if bytes.len() >= 12 && bytes.starts_with(b"RIFF") && &bytes[8..12] == b"WEBP" {
        Some("image/webp")
    } else {
        None
    }
}

/// Width and height from the image header, or `None` when the header is unreadable or names a
/// zero dimension (where the app's decoder fails).
fn image_dimensions(bytes: &[u8]) -> Option<(u32, u32)> {
    let be16 = |i: usize| {
        Some(u32::from(u16::from_be_bytes([
            *bytes.get(i)?,
            *bytes.get(i + 1)?,
        ])))
    };
    let le16 = |i: usize| {
        Some(u32::from(u16::from_le_bytes([
            *bytes.get(i)?,
            *bytes.get(i + 1)?,
        ])))
    };
    let le24 = |i: usize| {
        Some(u32::from_le_bytes([
            *bytes.get(i)?,
            *bytes.get(i + 1)?,
            *bytes.get(i + 2)?,
            0,
        ]))
    };
    let (w, h) = match sniff_media_type(bytes)? {
        "image/png" => {
            if bytes.get(12..16)? != b"IHDR" {
                return None;
            }
            let w = u32::from_be_bytes(bytes.get(16..20)?.try_into().ok()?);
            let h = u32::from_be_bytes(bytes.get(20..24)?.try_into().ok()?);
            (w, h)
        }
        "image/gif" => (le16(6)?, le16(8)?),
        "image/webp" => match bytes.get(12..16)? {
            b"VP8 " => {
                if bytes.get(23..26)? != [0x9d, 0x01, 0x2a] {
                    return None;
                }
                (le16(26)? & 0x3fff, le16(28)? & 0x3fff)
            }
            b"VP8L" => {
                if *bytes.get(20)? != 0x2f {
                    return None;
                }
                let bits = u32::from_le_bytes(bytes.get(21..25)?.try_into().ok()?);
                ((bits & 0x3fff) + 1, ((bits >> 14) & 0x3fff) + 1)
            }
            b"VP8X" => (le24(24)? + 1, le24(27)? + 1),
            _ => return None,
        },
        _ => {
            // JPEG: walk the marker segments to the first start-of-frame.
            let mut i = 2;
            loop {
                if *bytes.get(i)? != 0xff {
                    return None;
                }
                let mut marker = *bytes.get(i + 1)?;
                while marker == 0xff {
                    i += 1;
                    marker = *bytes.get(i + 1)?;
                }
                i += 2;
                match marker {
                    0xd0..=0xd7 | 0x01 => continue,
                    0xd9 | 0xda => return None,
                    0xc0..=0xcf if !matches!(marker, 0xc4 | 0xc8 | 0xcc) => {
                        break (be16(i + 5)?, be16(i + 3)?);
                    }
                    _ => i += be16(i)? as usize,
                }
            }
        }
    };
    (w > 0 && h > 0).then_some((w, h))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// A 1x1 PNG.
    const PNG_1X1: &str = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==";

    fn turn(id: &str, created_at: &str, item_ids: &[&str]) -> TurnRecord {
        serde_json::from_value(json!({
            "id": id,
            "thread_id": "thr_1",
            "status": "completed",
            "input_summary": "",
            "created_at": created_at,
            "item_ids": item_ids,
        }))
        .unwrap()
    }

    /// An item from its JSON fields; `id`, `turn_id`, `status` and `summary` default.
    fn item(turn_id: &str, id: &str, kind: &str, fields: Value) -> TurnItemRecord {
        let mut v = json!({
            "id": id,
            "turn_id": turn_id,
            "kind": kind,
            "status": "completed",
            "summary": "",
        });
        for (k, val) in fields.as_object().unwrap() {
            v[k] = val.clone();
        }
        serde_json::from_value(v).unwrap()
    }

    fn user_item(turn_id: &str, id: &str, text: &str) -> TurnItemRecord {
        item(turn_id, id, "user_message", json!({"detail": text}))
    }

    fn agent_item(turn_id: &str, id: &str, text: &str) -> TurnItemRecord {
        item(turn_id, id, "agent_message", json!({"detail": text}))
    }

    /// Instants compare as chrono compares the app's `DateTime<Utc>`: sub-second digits, a
    /// leap second (after every instant of the second before it), offsets, and chrono's relaxed
    /// forms.
    #[test]
    fn instants_order_as_chrono_orders_them() {
        let texts = [
            "2016-12-31T23:59:59Z",
            "2016-12-31T23:59:59.5Z",
            "2016-12-31T23:59:59.999999999Z",
            "2016-12-31T23:59:60Z",
            "2016-12-31T23:59:60.5Z",
            "2017-01-01T00:00:00Z",
            "2017-01-01T01:00:00.25+01:00",
            "2017-01-01T00:00:00.125 +00:00",
            "2017-01-01T00:00:00.5Z",
        ];
        for a in texts {
            for b in texts {
                // What chrono's `Deserialize for DateTime<Utc>` does.
                let chrono = |s: &str| {
                    s.parse::<chrono::DateTime<chrono::FixedOffset>>()
                        .unwrap()
                        .with_timezone(&chrono::Utc)
                };
                let (ra, rb) = (Rfc3339(a.into()), Rfc3339(b.into()));
                assert_eq!(
                    instant_cmp(Some(&ra), Some(&rb)),
                    chrono(a).cmp(&chrono(b)),
                    "{a} vs {b}"
                );
            }
        }
    }

    fn group(items: Vec<TurnItemRecord>) -> HashMap<String, Vec<TurnItemRecord>> {
        let mut map: HashMap<String, Vec<TurnItemRecord>> = HashMap::new();
        for i in items {
            map.entry(i.turn_id.clone()).or_default().push(i);
        }
        map
    }

    fn run(turns: &[TurnRecord], items: Vec<TurnItemRecord>) -> Result<Vec<Message>, String> {
        let refs: Vec<&TurnRecord> = turns.iter().collect();
        rebuild_thread(&refs, &group(items)).map_err(|e| e.to_string())
    }

    fn json_of(messages: &[Message]) -> String {
        serde_json::to_string(messages).unwrap()
    }

    /// `role: text|thinking|tool_use(id)|tool_result(id)` per block, for compact assertions.
    fn shape(messages: &[Message]) -> Vec<String> {
        messages
            .iter()
            .map(|m| {
                let blocks: Vec<String> = m
                    .content
                    .iter()
                    .map(|b| match b {
                        ContentBlock::Text { text, .. } => format!("text:{text}"),
                        ContentBlock::Thinking { thinking, .. } => format!("thinking:{thinking}"),
                        ContentBlock::ToolUse { id, .. } => format!("tool_use:{id}"),
                        ContentBlock::ToolResult { tool_use_id, .. } => {
                            format!("tool_result:{tool_use_id}")
                        }
                        ContentBlock::ImageUrl { .. } => "image".to_string(),
                        other => format!("{other:?}"),
                    })
                    .collect();
                format!("{}: {}", m.role, blocks.join(", "))
            })
            .collect()
    }

    fn call_item(turn_id: &str, id: &str, status: &str, meta: Value) -> TurnItemRecord {
        item(
            turn_id,
            id,
            "tool_call",
            json!({"status": status, "metadata": meta}),
        )
    }

    #[test]
    fn no_turns_or_no_items_rebuild_to_nothing() {
        assert!(run(&[], vec![]).unwrap().is_empty());
        let t = turn("t1", "2026-01-01T00:00:00Z", &[]);
        assert!(run(std::slice::from_ref(&t), vec![]).unwrap().is_empty());
        // Only rows that never enter history: still empty.
        let items = vec![
            item("t1", "i1", "status", json!({"detail": "working"})),
            item("t1", "i2", "error", json!({"detail": "boom"})),
            item(
                "t1",
                "i3",
                "context_compaction",
                json!({"detail": "summary"}),
            ),
        ];
        assert!(run(&[t], items).unwrap().is_empty());
    }

    #[test]
    fn user_and_agent_messages_serialize_as_the_app_does() {
        let t = turn("t1", "2026-01-01T00:00:00Z", &[]);
        let items = vec![
            item(
                "t1",
                "i1",
                "user_message",
                json!({"detail": "hi", "started_at": "2026-01-01T00:00:01Z"}),
            ),
            item(
                "t1",
                "i2",
                "agent_message",
                json!({"detail": "hello", "started_at": "2026-01-01T00:00:02Z"}),
            ),
        ];
        assert_eq!(
            json_of(&run(&[t], items).unwrap()),
            r#"[{"role":"user","content":[{"type":"text","text":"hi"}]},{"role":"assistant","content":[{"type":"text","text":"hello"}]}]"#
        );
    }

    #[test]
    fn detail_wins_over_summary_only_when_present() {
        let t = turn("t1", "2026-01-01T00:00:00Z", &["a", "b", "c", "d"]);
        let items = vec![
            // No detail: the summary is used.
            item(
                "t1",
                "a",
                "user_message",
                json!({"summary": "from summary"}),
            ),
            // Blank detail wins over a non-blank summary, and blank text adds nothing.
            item(
                "t1",
                "b",
                "agent_message",
                json!({"summary": "unused", "detail": "  "}),
            ),
            item(
                "t1",
                "c",
                "agent_message",
                json!({"summary": "unused", "detail": "answer"}),
            ),
            item(
                "t1",
                "d",
                "agent_reasoning",
                json!({"summary": "", "detail": " \n"}),
            ),
        ];
        assert_eq!(
            shape(&run(&[t], items).unwrap()),
            ["user: text:from summary", "assistant: text:answer"]
        );
    }

    #[test]
    fn reasoning_becomes_a_bare_thinking_block_in_the_assistant_message() {
        let t = turn("t1", "2026-01-01T00:00:00Z", &["u", "r", "a", "u2"]);
        let items = vec![
            user_item("t1", "u", "q"),
            item("t1", "r", "agent_reasoning", json!({"detail": "pondering"})),
            agent_item("t1", "a", "answer"),
            user_item("t1", "u2", "follow-up"),
        ];
        let out = run(&[t], items).unwrap();
        assert_eq!(
            shape(&out),
            [
                "user: text:q",
                "assistant: thinking:pondering, text:answer",
                "user: text:follow-up"
            ]
        );
        assert_eq!(
            serde_json::to_string(&out[1].content[0]).unwrap(),
            r#"{"type":"thinking","thinking":"pondering"}"#
        );
    }

    #[test]
    fn undelivered_steers_are_skipped() {
        let t = turn("t1", "2026-01-01T00:00:00Z", &["a", "b", "c", "d", "e"]);
        let items = vec![
            user_item("t1", "a", "first"),
            item(
                "t1",
                "b",
                "user_message",
                json!({"detail": "queued steer", "status": "queued"}),
            ),
            item(
                "t1",
                "c",
                "user_message",
                json!({"detail": "dropped steer", "status": "canceled"}),
            ),
            item(
                "t1",
                "d",
                "user_message",
                json!({"detail": "failed still counts", "status": "failed"}),
            ),
            item(
                "t1",
                "e",
                "user_message",
                json!({"detail": "running counts", "status": "in_progress"}),
            ),
        ];
        assert_eq!(
            shape(&run(&[t], items).unwrap()),
            ["user: text:first, text:failed still counts, text:running counts"]
        );
    }

    #[test]
    fn turns_replay_by_created_at_with_subsecond_precision_and_id_ties() {
        let turns = [
            turn("t_c", "2026-01-01T00:00:00.5Z", &[]),
            turn("t_b", "2026-01-01T00:00:00.25Z", &[]),
            turn("t_z", "2026-01-01T00:00:00Z", &[]),
            turn("t_a", "2026-01-01T00:00:00Z", &[]),
            // An hour earlier, written with an offset.
            turn("t_0", "2026-01-01T00:30:00+01:00", &[]),
        ];
        let items = ["t_c", "t_b", "t_z", "t_a", "t_0"]
            .iter()
            .map(|t| user_item(t, &format!("i_{t}"), t))
            .collect();
        assert_eq!(
            shape(&run(&turns, items).unwrap()),
            [
                "user: text:t_0",
                "user: text:t_a",
                "user: text:t_z",
                "user: text:t_b",
                "user: text:t_c"
            ]
        );
    }

    #[test]
    fn each_turn_flushes_its_own_messages() {
        let turns = [
            turn("t1", "2026-01-01T00:00:00Z", &[]),
            turn("t2", "2026-01-01T00:00:01Z", &[]),
        ];
        let items = vec![user_item("t1", "a", "one"), user_item("t2", "b", "two")];
        assert_eq!(
            shape(&run(&turns, items).unwrap()),
            ["user: text:one", "user: text:two"]
        );
    }

    #[test]
    fn items_follow_item_ids_then_started_at() {
        // `ghost` names no item, `foreign` belongs to another turn, `b` is listed twice.
        let t = turn(
            "t1",
            "2026-01-01T00:00:00Z",
            &["c", "ghost", "foreign", "b", "b"],
        );
        let other = turn("t0", "2025-01-01T00:00:00Z", &[]);
        let at = |s: &str| json!(format!("2026-01-01T00:00:{s}Z"));
        let items = vec![
            item(
                "t1",
                "a",
                "user_message",
                json!({"detail": "a", "started_at": at("01")}),
            ),
            item(
                "t1",
                "b",
                "user_message",
                json!({"detail": "b", "started_at": at("02")}),
            ),
            item(
                "t1",
                "c",
                "user_message",
                json!({"detail": "c", "started_at": at("03")}),
            ),
            // Unlisted: undated last, then dated by time, ties by id.
            item(
                "t1",
                "z_undated",
                "user_message",
                json!({"detail": "undated"}),
            ),
            item(
                "t1",
                "e",
                "user_message",
                json!({"detail": "e", "started_at": at("00")}),
            ),
            item(
                "t1",
                "d",
                "user_message",
                json!({"detail": "d", "started_at": at("00")}),
            ),
            item(
                "t0",
                "foreign",
                "user_message",
                json!({"detail": "foreign"}),
            ),
        ];
        assert_eq!(
            shape(&run(&[other, t], items).unwrap()),
            [
                "user: text:foreign",
                "user: text:c, text:b, text:d, text:e, text:a, text:undated"
            ]
        );
    }

    #[test]
    fn items_without_item_ids_follow_started_at() {
        let t = turn("t1", "2026-01-01T00:00:00Z", &[]);
        let items = vec![
            item(
                "t1",
                "x",
                "agent_message",
                json!({"detail": "second", "started_at": "2026-01-01T00:00:02.100Z"}),
            ),
            item(
                "t1",
                "y",
                "user_message",
                json!({"detail": "first", "started_at": "2026-01-01T00:00:02.05Z"}),
            ),
            item("t1", "w", "agent_message", json!({"detail": "last"})),
        ];
        assert_eq!(
            shape(&run(&[t], items).unwrap()),
            ["user: text:first", "assistant: text:second, text:last"]
        );
    }

    #[test]
    fn a_live_tool_row_rebuilds_call_and_result() {
        let t = turn("t1", "2026-01-01T00:00:00Z", &["u", "tool", "a"]);
        let items = vec![
            user_item("t1", "u", "list files"),
            item(
                "t1",
                "tool",
                "tool_call",
                json!({
                    "detail": "a.txt\nb.txt",
                    "summary": "ignored for results",
                    "metadata": {
                        "tool_use_id": "call_1",
                        "tool_result_for": "call_1",
                        "tool_name": "shell",
                        "tool_input": "{\"z\":1,\"cmd\":{\"y\":2,\"b\":3}}",
                        "tool_caller": {"type": "direct"},
                        "tool_thought_signature": "sig",
                        "is_error": true,
                        "content_blocks": [{"type": "text", "text": "x", "a": 1}],
                        "visibility": "internal"
                    }
                }),
            ),
            agent_item("t1", "a", "done"),
        ];
        let out = run(&[t], items).unwrap();
        assert_eq!(
            json_of(&out),
            concat!(
                r#"[{"role":"user","content":[{"type":"text","text":"list files"}]},"#,
                r#"{"role":"assistant","content":[{"type":"tool_use","id":"call_1","name":"shell","input":{"cmd":{"b":3,"y":2},"z":1},"caller":{"type":"direct"},"thought_signature":"sig"}]},"#,
                r#"{"role":"user","content":[{"type":"tool_result","tool_use_id":"call_1","content":"a.txt\nb.txt","is_error":true,"content_blocks":[{"a":1,"text":"x","type":"text"}]}]},"#,
                r#"{"role":"assistant","content":[{"type":"text","text":"done"}]}]"#
            )
        );
    }

    #[test]
    fn seeded_rows_carry_execution_and_provider_ids() {
        let t = turn("t1", "2026-01-01T00:00:00Z", &["call", "result"]);
        let items = vec![
            item(
                "t1",
                "call",
                "tool_call",
                json!({"metadata": {
                    "tool_use_id": "exec_1", "execution_id": "exec_1",
                    "provider_tool_use_id": "toolu_1", "tool_name": "read",
                    "tool_input": "{\"path\":\"x\"}"
                }}),
            ),
            item(
                "t1",
                "result",
                "tool_call",
                json!({"status": "failed", "metadata": {
                    "tool_result_for": "exec_1", "execution_id": "exec_1",
                    "provider_tool_use_id": "toolu_1", "is_error": false
                }}),
            ),
        ];
        assert_eq!(
            json_of(&run(&[t], items).unwrap()),
            concat!(
                r#"[{"role":"assistant","content":[{"type":"tool_use","id":"toolu_1","name":"read","input":{"path":"x"},"execution_id":"exec_1"}]},"#,
                r#"{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_1","content":"","execution_id":"exec_1"}]}]"#
            )
        );
    }

    #[test]
    fn tool_input_falls_back_to_detail_then_null() {
        let t = turn("t1", "2026-01-01T00:00:00Z", &["a", "b", "c", "d"]);
        let meta = |id: &str, input: Option<Value>| {
            let mut m = json!({"tool_use_id": id, "tool_result_for": id, "tool_name": "t"});
            if let Some(input) = input {
                m["tool_input"] = input;
            }
            m
        };
        let items = vec![
            // No tool_input: the detail is parsed.
            item(
                "t1",
                "a",
                "tool_call",
                json!({"detail": "{\"k\":1}", "metadata": meta("c1", None)}),
            ),
            // tool_input that does not parse: null, the detail is not tried.
            item(
                "t1",
                "b",
                "tool_call",
                json!({"detail": "{\"k\":2}", "metadata": meta("c2", Some(json!("not json")))}),
            ),
            // Neither: null.
            item(
                "t1",
                "c",
                "tool_call",
                json!({"metadata": meta("c3", None)}),
            ),
            // A non-string tool_input is ignored in favour of the detail.
            item(
                "t1",
                "d",
                "tool_call",
                json!({"detail": "[1]", "metadata": meta("c4", Some(json!({"k": 4})))}),
            ),
        ];
        let out = run(&[t], items).unwrap();
        let inputs: Vec<Value> = out
            .iter()
            .flat_map(|m| &m.content)
            .filter_map(|b| match b {
                ContentBlock::ToolUse { input, .. } => Some(input.clone()),
                _ => None,
            })
            .collect();
        assert_eq!(
            inputs,
            [json!({"k": 1}), Value::Null, Value::Null, json!([1])]
        );
    }

    #[test]
    fn a_call_without_a_tool_name_is_not_replayed_nor_answered() {
        let t = turn("t1", "2026-01-01T00:00:00Z", &[]);
        let items = vec![call_item("t1", "a", "failed", json!({"tool_use_id": "c1"}))];
        assert!(run(&[t], items).unwrap().is_empty());
    }

    #[test]
    fn failed_calls_get_their_failure_text_right_after_the_call() {
        let t = turn("t1", "2026-01-01T00:00:00Z", &["c1", "a", "c2"]);
        let items = vec![
            item(
                "t1",
                "c1",
                "tool_call",
                json!({"status": "failed", "detail": "permission denied", "summary": "s",
                "metadata": {"tool_use_id": "call_1", "tool_name": "shell"}}),
            ),
            agent_item("t1", "a", "it failed"),
            item(
                "t1",
                "c2",
                "tool_call",
                json!({"status": "failed", "summary": "summary text",
                "metadata": {"tool_use_id": "call_2", "tool_name": "shell"}}),
            ),
        ];
        let out = run(&[t], items).unwrap();
        assert_eq!(
            shape(&out),
            [
                "assistant: tool_use:call_1",
                "user: tool_result:call_1",
                "assistant: text:it failed, tool_use:call_2",
                "user: tool_result:call_2"
            ]
        );
        let results: Vec<String> = out
            .iter()
            .flat_map(|m| &m.content)
            .filter_map(|b| {
                serde_json::to_string(b)
                    .ok()
                    .filter(|s| s.contains("tool_result"))
            })
            .collect();
        assert_eq!(
            results,
            [
                r#"{"type":"tool_result","tool_use_id":"call_1","content":"permission denied","is_error":true}"#,
                r#"{"type":"tool_result","tool_use_id":"call_2","content":"summary text","is_error":true}"#
            ]
        );
    }

    #[test]
    fn interrupted_and_canceled_calls_get_the_crash_notice() {
        let t = turn("t1", "2026-01-01T00:00:00Z", &["r1", "c1", "r2", "c2"]);
        let items = vec![
            item("t1", "r1", "agent_reasoning", json!({"detail": "think 1"})),
            call_item(
                "t1",
                "c1",
                "interrupted",
                json!({"tool_use_id": "call_1", "tool_name": "a", "execution_id": "call_1", "provider_tool_use_id": "p1"}),
            ),
            item("t1", "r2", "agent_reasoning", json!({"detail": "think 2"})),
            call_item(
                "t1",
                "c2",
                "canceled",
                json!({"tool_use_id": "call_2", "tool_name": "b"}),
            ),
        ];
        let out = run(&[t], items).unwrap();
        // Without the synthetic results the two responses would glue into one message.
        assert_eq!(
            shape(&out),
            [
                "assistant: thinking:think 1, tool_use:p1",
                "user: tool_result:p1",
                "assistant: thinking:think 2, tool_use:call_2",
                "user: tool_result:call_2"
            ]
        );
        match &out[1].content[0] {
            ContentBlock::ToolResult {
                content,
                is_error,
                execution_id,
                content_blocks,
                ..
            } => {
                assert_eq!(content, CRASH_REPAIR_CONTENT);
                assert_eq!(*is_error, Some(true));
                assert_eq!(execution_id.as_deref(), Some("call_1"));
                assert!(content_blocks.is_none());
            }
            other => panic!("expected a tool result, got {other:?}"),
        }
    }

    #[test]
    fn running_and_completed_calls_get_no_synthetic_result() {
        let t = turn("t1", "2026-01-01T00:00:00Z", &["a", "b", "c"]);
        let items = vec![
            call_item(
                "t1",
                "a",
                "completed",
                json!({"tool_use_id": "c1", "tool_name": "x"}),
            ),
            call_item(
                "t1",
                "b",
                "in_progress",
                json!({"tool_use_id": "c2", "tool_name": "x"}),
            ),
            call_item(
                "t1",
                "c",
                "queued",
                json!({"tool_use_id": "c3", "tool_name": "x"}),
            ),
        ];
        assert_eq!(
            shape(&run(&[t], items).unwrap()),
            ["assistant: tool_use:c1, tool_use:c2, tool_use:c3"]
        );
    }

    #[test]
    fn a_result_recorded_later_in_the_turn_answers_the_call() {
        let t = turn("t1", "2026-01-01T00:00:00Z", &["call", "result"]);
        let items = vec![
            call_item(
                "t1",
                "call",
                "failed",
                json!({"tool_use_id": "c1", "tool_name": "x"}),
            ),
            item(
                "t1",
                "result",
                "tool_call",
                json!({"detail": "out", "metadata": {"tool_result_for": "c1"}}),
            ),
        ];
        assert_eq!(
            shape(&run(&[t], items).unwrap()),
            ["assistant: tool_use:c1", "user: tool_result:c1"]
        );
    }

    #[test]
    fn a_result_in_another_turn_does_not_answer_the_call() {
        let turns = [
            turn("t1", "2026-01-01T00:00:00Z", &[]),
            turn("t2", "2026-01-01T00:00:01Z", &[]),
        ];
        let items = vec![
            call_item(
                "t1",
                "call",
                "interrupted",
                json!({"tool_use_id": "c1", "tool_name": "x"}),
            ),
            item(
                "t2",
                "result",
                "tool_call",
                json!({"detail": "late", "metadata": {"tool_result_for": "c1"}}),
            ),
        ];
        assert_eq!(
            shape(&run(&turns, items).unwrap()),
            [
                "assistant: tool_use:c1",
                "user: tool_result:c1",
                "user: tool_result:c1"
            ]
        );
    }

    #[test]
    fn a_legacy_result_does_not_answer_an_execution_call() {
        // Same provider id, but one side is keyed by execution and the other is not.
        let t = turn("t1", "2026-01-01T00:00:00Z", &["call", "result"]);
        let items = vec![
            call_item(
                "t1",
                "call",
                "failed",
                json!({"tool_use_id": "e1", "execution_id": "e1", "provider_tool_use_id": "p1", "tool_name": "x"}),
            ),
            call_item(
                "t1",
                "result",
                "completed",
                json!({"tool_result_for": "p1"}),
            ),
        ];
        assert_eq!(
            shape(&run(&[t], items).unwrap()),
            [
                "assistant: tool_use:p1",
                "user: tool_result:p1, tool_result:p1"
            ]
        );
    }

    #[test]
    fn file_and_command_rows_count_only_with_an_execution_id() {
        let t = turn("t1", "2026-01-01T00:00:00Z", &["f", "c", "plain"]);
        let items = vec![
            item(
                "t1",
                "f",
                "file_change",
                json!({"detail": "patched", "metadata": {
                "tool_use_id": "e1", "tool_result_for": "e1", "execution_id": "e1",
                "provider_tool_use_id": "p1", "tool_name": "apply_patch", "tool_input": "{}"}}),
            ),
            item(
                "t1",
                "c",
                "command_execution",
                json!({"detail": "ok", "metadata": {
                "tool_use_id": "e2", "tool_result_for": "e2", "execution_id": "e2",
                "provider_tool_use_id": "p2", "tool_name": "shell"}}),
            ),
            // No execution id: a UI row, never history.
            item(
                "t1",
                "plain",
                "command_execution",
                json!({"detail": "ls", "metadata": {
                "tool_use_id": "c3", "tool_result_for": "c3", "tool_name": "shell"}}),
            ),
        ];
        assert_eq!(
            shape(&run(&[t], items).unwrap()),
            [
                "assistant: tool_use:p1",
                "user: tool_result:p1",
                "assistant: tool_use:p2",
                "user: tool_result:p2"
            ]
        );
    }

    #[test]
    fn an_execution_without_a_provider_id_is_skipped() {
        let t = turn("t1", "2026-01-01T00:00:00Z", &[]);
        let items = vec![call_item(
            "t1",
            "a",
            "failed",
            json!({
            "tool_use_id": "e1", "tool_result_for": "e1", "execution_id": "e1", "tool_name": "x"}),
        )];
        assert!(run(&[t], items).unwrap().is_empty());
    }

    #[test]
    fn internal_rows_are_not_filtered() {
        let t = turn("t1", "2026-01-01T00:00:00Z", &[]);
        let items = vec![call_item(
            "t1",
            "a",
            "completed",
            json!({
            "tool_use_id": "c1", "tool_result_for": "c1", "tool_name": "x", "visibility": "internal"}),
        )];
        assert_eq!(
            shape(&run(&[t], items).unwrap()),
            ["assistant: tool_use:c1", "user: tool_result:c1"]
        );
    }

    fn error_of(meta: Value) -> String {
        let t = turn("t1", "2026-01-01T00:00:00Z", &[]);
        let mut fields = json!({"metadata": meta});
        fields["status"] = json!("completed");
        run(&[t], vec![item("t1", "item_x", "tool_call", fields)]).unwrap_err()
    }

    #[test]
    fn identity_errors_name_the_item() {
        let cases = [
            (json!({"tool_use_id": 7, "tool_name": "x"}), "not a string"),
            (json!({"tool_result_for": null}), "not a string"),
            (
                json!({"tool_use_id": "e1", "execution_id": 5, "provider_tool_use_id": "p"}),
                "execution identity",
            ),
            (
                json!({"tool_use_id": "e1", "execution_id": "", "provider_tool_use_id": "p"}),
                "execution identity",
            ),
            (
                json!({"tool_use_id": "other", "execution_id": "e1", "provider_tool_use_id": "p"}),
                "mismatch",
            ),
            (
                json!({"tool_result_for": "e1", "execution_id": "e1", "provider_tool_use_id": ""}),
                "provider tool identity",
            ),
            (
                json!({"tool_use_id": "e1", "execution_id": "e1", "provider_tool_use_id": 3}),
                "provider tool identity",
            ),
        ];
        for (meta, needle) in cases {
            let error = error_of(meta.clone());
            assert!(error.contains("item_x"), "{meta}: {error}");
            assert!(error.contains("t1"), "{meta}: {error}");
            assert!(error.contains(needle), "{meta}: {error}");
        }
    }

    #[test]
    fn a_bad_caller_or_signature_is_an_error() {
        let error =
            error_of(json!({"tool_use_id": "c", "tool_name": "x", "tool_caller": "direct"}));
        assert!(error.contains("tool caller"), "{error}");
        let error = error_of(json!({"tool_use_id": "c", "tool_name": "x", "tool_caller": null}));
        assert!(error.contains("tool caller"), "{error}");
        let error =
            error_of(json!({"tool_use_id": "c", "tool_name": "x", "tool_thought_signature": 1}));
        assert!(error.contains("thought signature"), "{error}");
    }

    #[test]
    fn one_execution_with_two_provider_ids_is_an_error() {
        let turns = [
            turn("t1", "2026-01-01T00:00:00Z", &[]),
            turn("t2", "2026-01-01T00:00:01Z", &[]),
        ];
        let items = vec![
            call_item(
                "t1",
                "a",
                "completed",
                json!({"tool_use_id": "e1", "execution_id": "e1", "provider_tool_use_id": "p1", "tool_name": "x"}),
            ),
            call_item(
                "t2",
                "b",
                "completed",
                json!({"tool_result_for": "e1", "execution_id": "e1", "provider_tool_use_id": "p2"}),
            ),
        ];
        let refs: Vec<&TurnRecord> = turns.iter().collect();
        let typed = rebuild_thread(&refs, &group(items.clone())).unwrap_err();
        assert_eq!((typed.turn.as_str(), typed.item.as_str()), ("t2", "b"));
        assert!(typed
            .reason
            .starts_with("stored tool execution \"e1\" has inconsistent"));
        let error = run(&turns, items).unwrap_err();
        assert_eq!(error, format!("turn t2 item b: {}", typed.reason));
        // The same pairing repeated is fine.
        let items = vec![
            call_item(
                "t1",
                "a",
                "completed",
                json!({"tool_use_id": "e1", "execution_id": "e1", "provider_tool_use_id": "p1", "tool_name": "x"}),
            ),
            call_item(
                "t2",
                "b",
                "completed",
                json!({"tool_result_for": "e1", "execution_id": "e1", "provider_tool_use_id": "p1"}),
            ),
        ];
        assert_eq!(run(&turns, items).unwrap().len(), 2);
    }

    fn image_item(
        schema: u64,
        status: &str,
        detail: Option<&str>,
        content: Option<Value>,
    ) -> TurnItemRecord {
        let mut fields = json!({"schema_version": schema, "status": status, "summary": "s"});
        if let Some(d) = detail {
            fields["detail"] = json!(d);
        }
        if let Some(c) = content {
            fields["metadata"] = json!({"runtime_image_content": c});
        }
        item("t1", "img", "user_message", fields)
    }

    fn png_block() -> Value {
        json!({"type": "image_url", "image_url": {"url": format!("data:image/png;base64,{PNG_1X1}")}})
    }

    #[test]
    fn image_items_replay_their_stored_blocks() {
        let t = turn("t1", "2026-01-01T00:00:00Z", &[]);
        let content = json!([{"type": "text", "text": "look"}, png_block()]);
        for schema in [3, 4] {
            let out = run(
                std::slice::from_ref(&t),
                vec![image_item(
                    schema,
                    "completed",
                    Some("look"),
                    Some(content.clone()),
                )],
            )
            .unwrap();
            assert_eq!(shape(&out), ["user: text:look, image"], "schema {schema}");
        }
    }

    #[test]
    fn image_content_outside_image_schemas_is_ignored() {
        let t = turn("t1", "2026-01-01T00:00:00Z", &[]);
        // Schema 2 with the key, and schema 4 without it: plain text.
        let out = run(
            std::slice::from_ref(&t),
            vec![image_item(
                2,
                "completed",
                Some("text"),
                Some(json!("junk")),
            )],
        )
        .unwrap();
        assert_eq!(shape(&out), ["user: text:text"]);
        let out = run(&[t], vec![image_item(4, "completed", Some("text"), None)]).unwrap();
        assert_eq!(shape(&out), ["user: text:text"]);
    }

    #[test]
    fn invalid_image_content_is_an_error() {
        let t = turn("t1", "2026-01-01T00:00:00Z", &[]);
        let url = |u: &str| json!({"type": "image_url", "image_url": {"url": u}});
        let png = format!("data:image/png;base64,{PNG_1X1}");
        let cases: Vec<(Option<Value>, Option<&str>, &str)> = vec![
            (None, None, "missing its content"),
            (
                Some(json!("not blocks")),
                None,
                "invalid persisted image input",
            ),
            (
                Some(json!([{"type": "hologram"}])),
                None,
                "invalid persisted image input",
            ),
            (
                Some(json!([{"type": "text", "text": "only text"}])),
                None,
                "must contain an image",
            ),
            (
                Some(json!([png_block(), {"type": "thinking", "thinking": "x"}])),
                None,
                "content kind",
            ),
            (
                Some(json!([url("https://example.com/a.png")])),
                None,
                "canonical inline content",
            ),
            (
                Some(json!([url("data:image/png;base64,!!!!")])),
                None,
                "invalid base64",
            ),
            (
                Some(json!([url(&png.replace("==", ""))])),
                None,
                "invalid base64",
            ),
            (
                Some(json!([url(&png.replace("image/png", "image/jpeg"))])),
                None,
                "MIME does not match",
            ),
            (
                Some(json!([url("data:image/png;base64,aGVsbG8gd29ybGQh")])),
                None,
                "not a PNG",
            ),
            (
                Some(json!([png_block()])),
                Some("a prompt"),
                "missing its prompt",
            ),
        ];
        for (content, detail, needle) in cases {
            let error = run(
                std::slice::from_ref(&t),
                vec![image_item(3, "completed", detail, content.clone())],
            )
            .unwrap_err();
            assert!(error.contains(needle), "{content:?}: {error}");
            assert!(error.contains("item img"), "{error}");
        }
    }

    #[test]
    fn oversized_image_headers_are_refused() {
        let mut bytes = decode_base64(PNG_1X1).unwrap();
        bytes[16..20].copy_from_slice(&9000u32.to_be_bytes());
        assert_eq!(image_dimensions(&bytes), Some((9000, 1)));
        let mut encoded = String::new();
        // Re-encode with a tiny encoder to build the data URL.
        const ALPHABET: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
        for chunk in bytes.chunks(3) {
            let b = [
                chunk[0],
                *chunk.get(1).unwrap_or(&0),
                *chunk.get(2).unwrap_or(&0),
            ];
            let n = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
            for i in 0..4 {
                if i <= chunk.len() {
                    encoded.push(ALPHABET[((n >> (18 - 6 * i)) & 63) as usize] as char);
                } else {
                    encoded.push('=');
                }
            }
        }
        assert_eq!(decode_base64(&encoded).unwrap(), bytes);
        let content = json!([{"type": "image_url", "image_url": {"url": format!("data:image/png;base64,{encoded}")}}]);
        let t = turn("t1", "2026-01-01T00:00:00Z", &[]);
        let error = run(&[t], vec![image_item(3, "completed", None, Some(content))]).unwrap_err();
        assert!(error.contains("decompression bomb guard"), "{error}");
    }

    #[test]
    fn undelivered_image_steers_are_still_validated() {
        // The app validates image content when it loads the item, whatever its status.
        let t = turn("t1", "2026-01-01T00:00:00Z", &[]);
        let error = run(
            std::slice::from_ref(&t),
            vec![image_item(3, "canceled", None, None)],
        )
        .unwrap_err();
        assert!(error.contains("missing its content"), "{error}");
        let ok = run(
            &[t],
            vec![image_item(3, "canceled", None, Some(json!([png_block()])))],
        )
        .unwrap();
        assert!(ok.is_empty());
    }

    #[test]
    fn base64_decoding_is_strict() {
        assert_eq!(decode_base64("aGk=").unwrap(), b"hi");
        assert_eq!(decode_base64("aGVsbG8=").unwrap(), b"hello");
        assert_eq!(decode_base64("").unwrap(), b"");
        for bad in ["aGk", "aGl=", "aG==k", "a===", "aGk=aGk=", "aG k", "aGk-"] {
            assert!(decode_base64(bad).is_none(), "{bad}");
        }
    }

    #[test]
    fn header_dimensions_of_each_format() {
        let gif = b"GIF89a\x02\x00\x03\x00rest";
        assert_eq!(image_dimensions(gif), Some((2, 3)));
        let mut jpeg = vec![0xff, 0xd8, 0xff, 0xe0, 0x00, 0x04, 0x00, 0x00];
        jpeg.extend_from_slice(&[0xff, 0xc0, 0x00, 0x0b, 0x08, 0x00, 0x05, 0x00, 0x07]);
        assert_eq!(image_dimensions(&jpeg), Some((7, 5)));
        let mut webp = b"RIFF\x00\x00\x00\x00WEBPVP8X\x0a\x00\x00\x00\x00\x00\x00\x00".to_vec();
        webp.extend_from_slice(&[9, 0, 0, 4, 0, 0]);
        assert_eq!(image_dimensions(&webp), Some((10, 5)));
        let zero = b"GIF89a\x00\x00\x03\x00";
        assert_eq!(image_dimensions(zero), None);
    }
}
