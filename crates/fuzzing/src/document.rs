//! Target `document`: a session document's bytes → the R1 verdict (`store::judge_document`).

use serde_json::Value;
use store::ids::is_valid_id;
use store::judge::{judge_document_exact, MAX_REASON_CHARS};
use store::model::{SavedSession, KNOWN_ROLES, SESSION_SCHEMA_VERSION};
use store::{digest_of, judge_document, DocState};

/// Judges `data` as the document `<id>.json`, for the id its `metadata.id` names (when that is
/// a valid id) and for a fixed id it does not name, and asserts:
///
/// * the fast check and the typed model give the same verdict;
/// * the verdict is readable, unknown content, newer or unreadable, never inaccessible (the
///   bytes were read) and never a panic; anything but unreadable is UTF-8 text (JSON text is);
/// * readable: the bytes parse as the typed `SavedSession`, whose `metadata.id` is the id, whose
///   schema is not newer, whose roles are all known, and whose `data_dir` is the verdict's;
/// * newer: the version is above the known one; unknown content: it names what is unknown;
/// * unreadable: a reason of at most [`MAX_REASON_CHARS`] characters (plus the `…` of a cut
///   one), and the digest of exactly these bytes.
pub fn document(data: &[u8]) {
    let named = serde_json::from_slice::<Value>(data)
        .ok()
        .and_then(|v| v.pointer("/metadata/id")?.as_str().map(str::to_owned))
        .filter(|id| is_valid_id(id));
    for id in named.as_deref().into_iter().chain(["fuzz-doc"]) {
        check(id, data);
    }
}

fn check(id: &str, data: &[u8]) {
    let fast = judge_document(id, data);
    let exact = judge_document_exact(id, data);
    assert_eq!(
        format!("{fast:?}"),
        format!("{exact:?}"),
        "the fast check and the typed model disagree on {id}.json"
    );
    if exact.is_known() {
        assert!(
            std::str::from_utf8(data).is_ok(),
            "{exact:?}, yet not UTF-8"
        );
    }
    match exact {
        DocState::Readable { data_dir } => {
            let s: SavedSession = serde_json::from_slice(data)
                .unwrap_or_else(|e| panic!("readable, yet the typed model refuses it: {e}"));
            assert_eq!(s.metadata.id, id, "readable under another id");
            let journal = s.journal.as_ref().map_or(0, |j| j.schema_version);
            assert!(
                s.schema_version.max(journal) <= SESSION_SCHEMA_VERSION,
                "readable, yet of a newer schema"
            );
            assert!(
                s.messages
                    .iter()
                    .all(|m| KNOWN_ROLES.contains(&m.role.as_str())),
                "readable, yet a role is unknown"
            );
            assert_eq!(
                data_dir.as_deref(),
                s.metadata
                    .runtime_store
                    .as_ref()
                    .map(|r| r.data_dir.as_str()),
                "the verdict's data_dir is not the document's"
            );
        }
        DocState::UnknownContent { unknown, .. } => {
            assert!(!unknown.is_empty(), "unknown content that names nothing");
            assert!(serde_json::from_slice::<Value>(data).is_ok());
        }
        DocState::NewerSchema { version, .. } => {
            assert!(version > SESSION_SCHEMA_VERSION, "newer schema {version}");
        }
        DocState::Unreadable { reason, digest } => {
            let chars = reason.chars().count();
            let cut = reason.ends_with('…');
            assert!(
                chars <= MAX_REASON_CHARS + usize::from(cut),
                "a reason of {chars} characters"
            );
            assert!(reason.starts_with("unreadable document: "), "{reason}");
            assert_eq!(
                digest,
                digest_of(data),
                "the digest is not of the bytes judged"
            );
        }
        DocState::Inaccessible => panic!("bytes in hand judged inaccessible"),
    }
}
