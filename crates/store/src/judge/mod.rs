//! Judging what the app wrote, as the app would load it: session documents (`document`, with
//! its fast path `fast`), their journals (`journal`) and thread records (`thread`); and the
//! helpers the verdicts share (digests, schema versions, typed parses, reasons). Pure: bytes in,
//! a verdict out, nothing read from disk.

pub(crate) mod document;
pub(crate) mod fast;
pub(crate) mod journal;
pub(crate) mod thread;

use fsroot::FileDigest;
use serde_json::Value;
use sha2::{Digest, Sha256};

pub use document::{judge_document, judge_document_exact};
pub use thread::judge_thread;

/// Size and SHA-256 of bytes in memory.
pub fn digest_of(bytes: &[u8]) -> FileDigest {
    FileDigest {
        bytes: bytes.len() as u64,
        sha256: fsroot::hex(&Sha256::digest(bytes)),
    }
}

/// A numeric `schema_version` above `known`. Floats such as `2.0` and integers beyond `u64`
/// (parsed as floats) count too: any newer number is kept, never judged as an older version.
/// Saturates at `u64::MAX`.
pub(crate) fn newer_than(v: Option<&Value>, known: u64) -> Option<u64> {
    let v = v?;
    if let Some(n) = v.as_u64() {
        return (n > known).then_some(n);
    }
    let f = v.as_f64()?;
    (f > known as f64).then_some(f as u64)
}

/// `T` parsed straight from `bytes`, when they are UTF-8 text. JSON text is UTF-8 (store-format.md:
/// readable means valid UTF-8 JSON), but a typed parse checks only the strings it keeps, and
/// skips an unknown member's bytes unchecked: text that is not UTF-8 is parsed generically
/// instead, which checks every string and so refuses it with serde_json's reason. A thread
/// record judged current is thereby one the rewrites can edit byte for byte.
pub(crate) fn typed<T: serde::de::DeserializeOwned>(bytes: &[u8]) -> serde_json::Result<T> {
    if std::str::from_utf8(bytes).is_ok() {
        serde_json::from_slice(bytes)
    } else {
        serde_json::from_slice::<Value>(bytes).and_then(T::deserialize)
    }
}

/// Reasons quote offending values; a reason is cut so a huge value cannot flood the plan, the
/// manifest or the terminal: to this many characters, then `…`.
pub const MAX_REASON_CHARS: usize = 300;

pub(crate) fn cut_reason(reason: String) -> String {
    match reason.char_indices().nth(MAX_REASON_CHARS) {
        Some((at, _)) => format!("{}…", &reason[..at]),
        None => reason,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::inventory::{DocState, ThreadState};

    fn doc(extra: &str) -> String {
        format!(
            r#"{{"metadata":{{"id":"a","title":"t","created_at":"2026-09-01T10:00:00Z","updated_at":"2026-09-01T10:00:00Z","message_count":1,"total_tokens":0,"model":"m","workspace":"/w"}},"messages":[{{"role":"user","content":[{{"type":"text","text":"hi"}}]}}]{extra}}}"#
        )
    }

    #[test]
    fn text_that_is_not_utf8_is_unreadable_even_in_a_member_nobody_reads() {
        // Found by the fuzz targets `document` and `thread` (fuzz/regressions/*/
        // non-utf8-in-unknown-member): a typed parse skips an unknown member without checking
        // its bytes, but JSON text is UTF-8 (store-format.md: readable means valid UTF-8 JSON),
        // and a thread record the doctor cannot rewrite byte for byte must be left in place.
        let mut d = doc(r#","host_note":"caf?""#).into_bytes();
        let at = d.iter().rposition(|b| *b == b'?').unwrap();
        d[at] = 0xe9;
        for judged in [judge_document("a", &d), judge_document_exact("a", &d)] {
            match judged {
                DocState::Unreadable { reason, .. } => {
                    assert!(reason.contains("invalid unicode code point"), "{reason}")
                }
                other => panic!("{other:?}"),
            }
        }
        let mut t = br#"{"id":"t","created_at":"2026-09-01T10:00:00Z","updated_at":"2026-09-01T10:00:00Z","model":"m","workspace":"/w","mode":"agent","allow_shell":false,"trust_mode":false,"auto_approve":false,"session_id":"s","labels":["fix?"]}"#.to_vec();
        let at = t.iter().rposition(|b| *b == b'?').unwrap();
        t[at] = 0x93;
        match judge_thread("t", &t) {
            ThreadState::Unreadable { reason, .. } => {
                assert!(reason.contains("invalid unicode code point"), "{reason}")
            }
            other => panic!("{other:?}"),
        }
        assert!(crate::recover::unbind_bytes(&t, "2026-11-29T12:00:00Z").is_none());
    }

    #[test]
    fn a_real_document_without_schema_version_is_readable() {
        assert!(matches!(
            judge_document("a", doc("").as_bytes()),
            DocState::Readable { data_dir: None }
        ));
    }

    #[test]
    fn unknown_names_are_unknown_content_not_damage() {
        let d = doc("").replace(r#""type":"text","text":"hi""#, r#""type":"hologram""#);
        match judge_document("a", d.as_bytes()) {
            DocState::UnknownContent { unknown, .. } => {
                assert_eq!(unknown, r#"content block type "hologram""#)
            }
            other => panic!("{other:?}"),
        }
        let d = doc("").replace(r#""role":"user""#, r#""role":"critic""#);
        assert!(matches!(
            judge_document("a", d.as_bytes()),
            DocState::UnknownContent { .. }
        ));
        // An unknown block and a real defect: unreadable.
        let d = doc("")
            .replace(r#""type":"text","text":"hi""#, r#""type":"hologram""#)
            .replace(r#""model":"m","#, "");
        assert!(matches!(
            judge_document("a", d.as_bytes()),
            DocState::Unreadable { .. }
        ));
    }

    #[test]
    fn string_content_and_broken_journals_are_unreadable() {
        let d = doc("").replace(r#"[{"type":"text","text":"hi"}]"#, r#""hi""#);
        assert!(matches!(
            judge_document("a", d.as_bytes()),
            DocState::Unreadable { .. }
        ));
        let entry = |id: &str, parent: &str| {
            format!(
                r#"{{"id":"{id}",{parent}"kind":"user","text":"x","created_at":"2026-09-01T10:00:00Z"}}"#
            )
        };
        let ok = doc(&format!(
            r#","journal":{{"entries":[{},{}],"leaf_id":"e2"}}"#,
            entry("e1", ""),
            entry("e2", r#""parent_id":"e1","#)
        ));
        assert!(matches!(
            judge_document("a", ok.as_bytes()),
            DocState::Readable { .. }
        ));
        for bad in [
            format!(
                r#","journal":{{"entries":[{}]}}"#,
                entry("e1", r#""parent_id":"x","#)
            ),
            format!(
                r#","journal":{{"entries":[{}],"leaf_id":"zz"}}"#,
                entry("e1", "")
            ),
            format!(
                r#","journal":{{"entries":[{},{}]}}"#,
                entry("e1", r#""parent_id":"e2","#),
                entry("e2", r#""parent_id":"e1","#)
            ),
            format!(
                r#","journal":{{"entries":[{},{}]}}"#,
                entry("e1", ""),
                entry("e1", "")
            ),
        ] {
            assert!(
                matches!(
                    judge_document("a", doc(&bad).as_bytes()),
                    DocState::Unreadable { .. }
                ),
                "{bad}"
            );
        }
        let newer = doc(r#","journal":{"entries":[],"schema_version":2}"#);
        assert!(matches!(
            judge_document("a", newer.as_bytes()),
            DocState::NewerSchema { version: 2, .. }
        ));
    }

    #[test]
    fn a_deep_unknown_field_is_skipped_as_the_app_skips_it() {
        // The app's typed parser skips an unknown member whatever its depth (without
        // recursing), so the document loads there and is readable here; nothing overflows.
        let deep = |n: usize| doc(&format!(r#","x":{}{}"#, "[".repeat(n), "]".repeat(n)));
        assert!(matches!(
            judge_document("a", deep(500).as_bytes()),
            DocState::Readable { .. }
        ));
        assert!(matches!(
            judge_document("a", deep(200_000).as_bytes()),
            DocState::Readable { .. }
        ));
    }

    #[test]
    fn judged_as_the_app_parses_duplicates_and_float_versions() {
        // The app parses the bytes straight into its types: a duplicated key or a float
        // version fails there, so here too (a `Value` would silently keep the last key).
        let dup = doc("").replace(r#""title":"t","#, r#""title":"t","title":"u","#);
        assert!(matches!(
            judge_document("a", dup.as_bytes()),
            DocState::Unreadable { .. }
        ));
        let float = doc(r#","schema_version":1.0"#);
        assert!(matches!(
            judge_document("a", float.as_bytes()),
            DocState::Unreadable { .. }
        ));
        let dup_thread = br#"{"id":"t","id":"t","created_at":"2026-09-01T10:00:00Z","updated_at":"2026-09-01T10:00:00Z","model":"m","workspace":"/w","mode":"agent","allow_shell":false,"trust_mode":false,"auto_approve":false}"#;
        assert!(matches!(
            judge_thread("t", dup_thread),
            ThreadState::Unreadable { .. }
        ));
    }
}
