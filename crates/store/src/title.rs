//! Session titles as the app makes them (codewhale-format.md §8, title helpers).
//!
//! Read from `crates/tui/src/session_manager.rs @9dd14399` (`sanitize_session_title`,
//! `is_title_format_char`, `extract_user_prompt`, `truncate_title`,
//! `conversation_derived_title`, `conversation_title_prompt`), `crates/tui/src/
//! session_reconcile.rs` (`recovered_title`, `Run::recovered_document`) and `crates/tui/src/
//! runtime_handoff.rs` (`classify_user_turn_prompt`, `is_runtime_owned_user_message`,
//! `turn_metadata_text`, `restored_subagent_checkpoint_display`). The classifier was read at
//! commit `00e44f11`, the only stored version of that file; the 9dd14399 copy was not available.

use crate::model::{ContentBlock, Message};

/// `MAX_SESSION_TITLE_CHARS`: a recovered title keeps at most this many characters.
pub const MAX_SESSION_TITLE_CHARS: usize = 100;
/// `DEFAULT_SESSION_TITLE`: the title of a conversation with no user prompt.
pub const DEFAULT_SESSION_TITLE: &str = "New Session";
/// Characters a derived title keeps before it is cut to 47 plus `...`.
const DERIVED_TITLE_CHARS: usize = 50;

/// The engine-owned metadata block of a restored sub-agent checkpoint.
const RESTORED_CHECKPOINT_TURN_META: &str = concat!(
    "<turn_meta>\n",
    "Input provenance: subagent_handoff (non-authoritative)\n",
    "Restore projection: subagent_checkpoint_v1\n",
    "</turn_meta>",
);
/// The headers a restored sub-agent checkpoint's display text starts with.
const RESTORED_CHECKPOINT_HEADERS: [&str; 4] = [
    "[Codewhale restored sub-agent checkpoint]",
    "[Codewhale restored sub-agent checkpoints]",
    "[Codewhale restored sub-agent runtime checkpoint]",
    "[Codewhale restored Agent topology checkpoint]",
];

/// `recovered_title`: `Recovered: <label>` sanitized and cut to 100 characters, where the
/// label is the thread's title when not blank, else the conversation's derived title, else
/// `New Session`.
pub fn recovered_title(thread_title: Option<&str>, messages: &[Message]) -> String {
    let label = match thread_title.filter(|title| !title.trim().is_empty()) {
        Some(title) => title.to_string(),
        None => conversation_derived_title(messages)
            .unwrap_or_else(|| DEFAULT_SESSION_TITLE.to_string()),
    };
    sanitize_session_title(&format!("Recovered: {}", label.trim()))
        .chars()
        .take(MAX_SESSION_TITLE_CHARS)
        .collect()
}

/// `is_title_format_char`: bidi marks, embeddings, overrides and isolates, zero-width
/// characters, the soft hyphen, the BOM and the line and paragraph separators.
pub fn is_title_format_char(ch: char) -> bool {
    matches!(
        ch,
        '\u{00ad}'
            | '\u{061c}'
            | '\u{200b}'..='\u{200f}'
            | '\u{2028}'..='\u{202e}'
            | '\u{2060}'..='\u{2064}'
            | '\u{2066}'..='\u{2069}'
            | '\u{feff}'
    )
}

/// `sanitize_session_title`: drops every `char::is_control` character and every
/// [`is_title_format_char`]. It does not trim.
pub fn sanitize_session_title(raw: &str) -> String {
    raw.chars()
        .filter(|ch| !ch.is_control() && !is_title_format_char(*ch))
        .collect()
}

/// `extract_user_prompt`: the text without leading whitespace and without one leading
/// `<turn_meta>…</turn_meta>` block (an unclosed block loses only its opening tag).
pub fn extract_user_prompt(raw: &str) -> &str {
    let trimmed = raw.trim_start();
    let Some(after_open) = trimmed.strip_prefix("<turn_meta>") else {
        return trimmed;
    };
    match after_open.find("</turn_meta>") {
        Some(close) => after_open[close + "</turn_meta>".len()..].trim_start(),
        None => after_open.trim_start(),
    }
}

/// `truncate_title`: trimmed, first line only, sanitized, trimmed again; longer than
/// `max_len` characters becomes its first `max_len - 3` characters plus `...`.
fn truncate_title(s: &str, max_len: usize) -> String {
    let s = s.trim();
    let first_line = sanitize_session_title(s.lines().next().unwrap_or(s));
    let first_line = first_line.trim();
    if first_line.chars().count() <= max_len {
        first_line.to_string()
    } else {
        let kept: String = first_line.chars().take(max_len - 3).collect();
        format!("{kept}...")
    }
}

/// `conversation_derived_title`: the first real user prompt, cut by `truncate_title(…, 50)`.
///
/// The first message [`classify_user_turn_prompt`] accepts is the prompt; its first text block
/// that is non-empty after [`extract_user_prompt`] names the session. A first prompt without
/// such text (an image-only turn) gives `None`: later messages are not searched.
pub fn conversation_derived_title(messages: &[Message]) -> Option<String> {
    let prompt = messages
        .iter()
        .find(|m| classify_user_turn_prompt(m) != UserTurnPromptKind::NotPrompt)?;
    prompt.content.iter().find_map(|block| match block {
        ContentBlock::Text { text, .. } => {
            let text = extract_user_prompt(text);
            (!text.is_empty()).then(|| truncate_title(text, DERIVED_TITLE_CHARS))
        }
        _ => None,
    })
}

/// `runtime_handoff::UserTurnPromptKind`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum UserTurnPromptKind {
    /// Assistant messages, tool results and runtime-owned control messages.
    NotPrompt,
    /// A user turn with text besides its metadata block.
    Editable,
    /// A user turn without such text (an image-only turn).
    Unsupported,
}

/// `runtime_handoff::classify_user_turn_prompt`: whether `message` is a turn the person wrote.
///
/// Not a prompt: any role but `user`; a message holding a tool, tool-search or code-execution
/// result; a runtime-owned message (a restored sub-agent checkpoint, or an engine-owned
/// `<turn_meta>` block whose provenance is non-authoritative).
pub fn classify_user_turn_prompt(message: &Message) -> UserTurnPromptKind {
    if message.role != "user" {
        return UserTurnPromptKind::NotPrompt;
    }
    if message.content.iter().any(|block| {
        matches!(
            block,
            ContentBlock::ToolResult { .. }
                | ContentBlock::ToolSearchToolResult { .. }
                | ContentBlock::CodeExecutionToolResult { .. }
        )
    }) {
        return UserTurnPromptKind::NotPrompt;
    }
    if is_restored_checkpoint(message) || has_non_authoritative_provenance(message) {
        return UserTurnPromptKind::NotPrompt;
    }
    let metadata_index = turn_metadata_text(message).map(|(index, _)| index);
    let has_text = message.content.iter().enumerate().any(|(index, block)| {
        Some(index) != metadata_index && matches!(block, ContentBlock::Text { .. })
    });
    if has_text {
        UserTurnPromptKind::Editable
    } else {
        UserTurnPromptKind::Unsupported
    }
}

/// `restored_subagent_checkpoint_display(..).is_some()`: exactly a display text starting with a
/// checkpoint header and the exact checkpoint metadata block, neither cache-marked.
fn is_restored_checkpoint(message: &Message) -> bool {
    let [ContentBlock::Text {
        text,
        cache_control: None,
    }, ContentBlock::Text {
        text: meta,
        cache_control: None,
    }] = message.content.as_slice()
    else {
        return false;
    };
    meta == RESTORED_CHECKPOINT_TURN_META
        && RESTORED_CHECKPOINT_HEADERS
            .iter()
            .any(|header| text.starts_with(header))
}

fn is_complete_turn_metadata(text: &str) -> bool {
    text.starts_with("<turn_meta>") && text.ends_with("</turn_meta>")
}

/// `turn_metadata_text`: the engine-owned metadata block, either last (current shape) or first
/// followed by ordinary text last (legacy shape); a message needs a second block to have one.
fn turn_metadata_text(message: &Message) -> Option<(usize, &str)> {
    let content = &message.content;
    if content.len() < 2 {
        return None;
    }
    if let Some(ContentBlock::Text {
        text,
        cache_control: None,
    }) = content.last()
    {
        let trimmed = text.trim();
        if is_complete_turn_metadata(trimmed) {
            return Some((content.len() - 1, trimmed));
        }
    }
    let ContentBlock::Text {
        text,
        cache_control: None,
    } = content.first()?
    else {
        return None;
    };
    let trimmed = text.trim();
    let last_is_ordinary = matches!(
        content.last(),
        Some(ContentBlock::Text { text, .. }) if !is_complete_turn_metadata(text.trim())
    );
    (is_complete_turn_metadata(trimmed) && last_is_ordinary).then_some((0, trimmed))
}

/// `has_non_authoritative_turn_provenance`: an `Input provenance: … (non-authoritative)` line,
/// or the legacy pair of a provenance line and `Input authority: non_authoritative`.
fn has_non_authoritative_provenance(message: &Message) -> bool {
    let Some((_, metadata)) = turn_metadata_text(message) else {
        return false;
    };
    let mut has_provenance = false;
    let mut condensed = false;
    let mut legacy = false;
    for line in metadata.lines().map(str::trim) {
        if let Some(value) = line.strip_prefix("Input provenance: ") {
            has_provenance = true;
            condensed |= value.ends_with(" (non-authoritative)");
        }
        legacy |= line == "Input authority: non_authoritative";
    }
    condensed || (has_provenance && legacy)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{CacheControl, ImageUrl};

    fn msg(role: &str, content: Vec<ContentBlock>) -> Message {
        Message {
            role: role.to_string(),
            content,
        }
    }

    fn user(text: &str) -> Message {
        msg("user", vec![ContentBlock::text(text)])
    }

    fn image() -> ContentBlock {
        ContentBlock::ImageUrl {
            image_url: ImageUrl {
                url: "data:image/png;base64,AAAA".into(),
            },
        }
    }

    const RUNTIME_META: &str =
        "<turn_meta>\nInput provenance: runtime (non-authoritative)\n</turn_meta>";

    #[test]
    fn sanitize_drops_controls_and_format_characters_only() {
        let raw = "a\u{1b}]0;x\u{7}b\tc\nd\u{7f}e\u{9b}f\u{85}g";
        assert_eq!(sanitize_session_title(raw), "a]0;xbcdefg");
        let format_chars = [
            '\u{00ad}', '\u{061c}', '\u{200b}', '\u{200d}', '\u{200f}', '\u{2028}', '\u{202a}',
            '\u{202e}', '\u{2060}', '\u{2064}', '\u{2066}', '\u{2069}', '\u{feff}',
        ];
        for ch in format_chars {
            assert!(is_title_format_char(ch), "{:04x}", ch as u32);
            assert_eq!(sanitize_session_title(&format!("x{ch}y")), "xy");
        }
        // Neighbours of the ranges, CJK, emoji and spaces stay; nothing is trimmed.
        for ch in [
            '\u{200a}', '\u{2027}', '\u{202f}', '\u{2065}', '\u{206a}', '\u{061b}',
        ] {
            assert!(!is_title_format_char(ch), "{:04x}", ch as u32);
        }
        assert_eq!(
            sanitize_session_title("  日本 🐳\u{2065} "),
            "  日本 🐳\u{2065} "
        );
    }

    #[test]
    fn recovered_title_prefers_the_thread_title() {
        let messages = [user("derived prompt")];
        assert_eq!(
            recovered_title(Some("  My thread \u{202e} "), &messages),
            "Recovered: My thread "
        );
        assert_eq!(
            recovered_title(Some("a\u{1b}[31mred"), &messages),
            "Recovered: a[31mred"
        );
        // Blank or absent: the derived title, else the default.
        assert_eq!(
            recovered_title(Some(" \t\n"), &messages),
            "Recovered: derived prompt"
        );
        assert_eq!(
            recovered_title(None, &messages),
            "Recovered: derived prompt"
        );
        assert_eq!(recovered_title(None, &[]), "Recovered: New Session");
        assert_eq!(
            recovered_title(None, &[msg("assistant", vec![ContentBlock::text("hi")])]),
            "Recovered: New Session"
        );
    }

    #[test]
    fn recovered_title_cuts_at_100_characters_without_ellipsis() {
        let title = "é🐳".repeat(80);
        let out = recovered_title(Some(&title), &[]);
        assert_eq!(out.chars().count(), MAX_SESSION_TITLE_CHARS);
        assert!(out.starts_with("Recovered: é🐳"));
        assert!(!out.ends_with("..."));
        let expected: String = format!("Recovered: {title}").chars().take(100).collect();
        assert_eq!(out, expected);
        // The cut counts characters after sanitizing.
        let with_controls = format!("{}{}", "\u{7}".repeat(50), "x".repeat(95));
        assert_eq!(
            recovered_title(Some(&with_controls), &[]),
            format!("Recovered: {}", "x".repeat(89))
        );
        // Short titles are untouched.
        assert_eq!(recovered_title(Some("short"), &[]), "Recovered: short");
    }

    #[test]
    fn derived_titles_are_cut_to_47_characters_and_an_ellipsis() {
        let fifty = "x".repeat(50);
        assert_eq!(conversation_derived_title(&[user(&fifty)]), Some(fifty));
        let long = "ü".repeat(51);
        let out = conversation_derived_title(&[user(&long)]).unwrap();
        assert_eq!(out, format!("{}...", "ü".repeat(47)));
        assert_eq!(out.chars().count(), 50);
        // Trimmed, first line only, sanitized.
        assert_eq!(
            conversation_derived_title(&[user("  \n first line\u{200b} \nsecond")]),
            Some("first line".to_string())
        );
        assert_eq!(
            recovered_title(None, &[user(&"y".repeat(60))]),
            format!("Recovered: {}...", "y".repeat(47))
        );
    }

    #[test]
    fn turn_meta_prefixes_are_stripped() {
        assert_eq!(
            extract_user_prompt("  <turn_meta>\nmode: agent\n</turn_meta>\n\nfix the bug"),
            "fix the bug"
        );
        assert_eq!(extract_user_prompt("<turn_meta> unclosed"), "unclosed");
        assert_eq!(
            extract_user_prompt("plain <turn_meta>x</turn_meta>"),
            "plain <turn_meta>x</turn_meta>"
        );
        assert_eq!(
            conversation_derived_title(&[user("<turn_meta>m</turn_meta> hello")]),
            Some("hello".to_string())
        );
        // A block that is only metadata is skipped for the next text block of that message.
        let legacy = msg(
            "user",
            vec![
                ContentBlock::text("<turn_meta>\nmode: plan\n</turn_meta>"),
                ContentBlock::text("real prompt"),
            ],
        );
        assert_eq!(
            conversation_derived_title(&[legacy]),
            Some("real prompt".to_string())
        );
    }

    #[test]
    fn tool_results_and_assistant_messages_are_not_prompts() {
        let result = msg(
            "user",
            vec![
                ContentBlock::ToolResult {
                    tool_use_id: "c1".into(),
                    content: "output".into(),
                    execution_id: None,
                    is_error: None,
                    content_blocks: None,
                },
                ContentBlock::text("text beside a result"),
            ],
        );
        assert_eq!(
            classify_user_turn_prompt(&result),
            UserTurnPromptKind::NotPrompt
        );
        let assistant = msg("assistant", vec![ContentBlock::text("answer")]);
        assert_eq!(
            classify_user_turn_prompt(&assistant),
            UserTurnPromptKind::NotPrompt
        );
        assert_eq!(
            conversation_derived_title(&[assistant, result, user("the prompt")]),
            Some("the prompt".to_string())
        );
    }

    #[test]
    fn runtime_owned_messages_are_not_prompts() {
        let runtime = msg(
            "user",
            vec![
                ContentBlock::text("<codewhale:runtime_event kind=\"operate_contract\">"),
                ContentBlock::text(RUNTIME_META),
            ],
        );
        assert_eq!(
            classify_user_turn_prompt(&runtime),
            UserTurnPromptKind::NotPrompt
        );
        // Legacy shape: metadata first, legacy authority pair.
        let legacy = msg(
            "user",
            vec![
                ContentBlock::text(
                    "<turn_meta>\nInput provenance: subagent_handoff\nInput authority: non_authoritative\n</turn_meta>",
                ),
                ContentBlock::text("handoff body"),
            ],
        );
        assert_eq!(
            classify_user_turn_prompt(&legacy),
            UserTurnPromptKind::NotPrompt
        );
        let checkpoint = msg(
            "user",
            vec![
                ContentBlock::text("[Codewhale restored sub-agent checkpoint]\nAgent: a"),
                ContentBlock::text(RESTORED_CHECKPOINT_TURN_META),
            ],
        );
        assert!(is_restored_checkpoint(&checkpoint));
        assert_eq!(
            classify_user_turn_prompt(&checkpoint),
            UserTurnPromptKind::NotPrompt
        );
        assert_eq!(
            conversation_derived_title(&[runtime, legacy, checkpoint, user("what I typed")]),
            Some("what I typed".to_string())
        );
    }

    #[test]
    fn user_authored_metadata_is_still_a_prompt() {
        // One block only: a person who typed an envelope is never runtime-owned.
        let typed = user(RUNTIME_META);
        assert_eq!(
            classify_user_turn_prompt(&typed),
            UserTurnPromptKind::Editable
        );
        // Authoritative provenance is the person's own turn.
        let authored = msg(
            "user",
            vec![
                ContentBlock::text("my prompt"),
                ContentBlock::text("<turn_meta>\nInput provenance: user\n</turn_meta>"),
            ],
        );
        assert_eq!(
            classify_user_turn_prompt(&authored),
            UserTurnPromptKind::Editable
        );
        assert_eq!(
            conversation_derived_title(&[authored]),
            Some("my prompt".to_string())
        );
        // A cache-marked metadata block is not engine-owned.
        let cached = msg(
            "user",
            vec![
                ContentBlock::text("body"),
                ContentBlock::Text {
                    text: RUNTIME_META.into(),
                    cache_control: Some(CacheControl {
                        kind: "ephemeral".into(),
                    }),
                },
            ],
        );
        assert_eq!(
            classify_user_turn_prompt(&cached),
            UserTurnPromptKind::Editable
        );
    }

    #[test]
    fn an_image_only_first_prompt_names_nothing() {
        let image_only = msg("user", vec![image()]);
        assert_eq!(
            classify_user_turn_prompt(&image_only),
            UserTurnPromptKind::Unsupported
        );
        assert_eq!(
            conversation_derived_title(&[image_only.clone(), user("later prompt")]),
            None
        );
        assert_eq!(
            recovered_title(None, &[image_only, user("later prompt")]),
            "Recovered: New Session"
        );
        let with_meta = msg(
            "user",
            vec![
                image(),
                ContentBlock::text("<turn_meta>\nmode: agent\n</turn_meta>"),
            ],
        );
        assert_eq!(
            classify_user_turn_prompt(&with_meta),
            UserTurnPromptKind::Unsupported
        );
        let with_text = msg("user", vec![image(), ContentBlock::text("caption")]);
        assert_eq!(
            conversation_derived_title(&[with_text]),
            Some("caption".to_string())
        );
    }
}
