//! R1 `unreadable-document`: sets aside session documents that cannot be read.

use engine::{Context, Effect, Expect, Proposal, Rule, RuleOutput};
use plan::{ActionKind, ItemKind, Precondition, Skipped};
use store::DocState;

/// ## What it finds
///
/// A session document `S/<id>.json` (a valid id, not a reserved name) that the app could not
/// load as a `SavedSession`: not JSON, not UTF-8, truncated anywhere (also after an intact
/// metadata prefix: the whole document is parsed), a required field missing or mistyped,
/// `content` given as a string instead of an array of blocks, a `metadata.id` different from
/// the file stem, or a broken journal (an empty or duplicated entry id, a missing parent, an
/// unknown leaf, a cycle). A document without `schema_version` is version 1.
///
/// ## What it does
///
/// Moves the document into `.set-aside/<run>/<id>.json`. The manifest line has
/// `kind: "document"`, its `sha256` and `bytes`; the action's precondition is the same size
/// and hash, so a document rewritten since the plan is skipped, not moved.
///
/// ## What it never touches
///
/// - a document whose `schema_version` (or its journal's) is newer than 1: kept, counted in
///   `documents_newer_schema`, and still counts as a known session;
/// - a document whose only problem is a content block `type`, journal `kind` or message `role`
///   the doctor does not know (the app may be newer): kept, counted in
///   `documents_unknown_content`, listed under `skipped`, and still a known session;
/// - the document of a live session (its `.late-usage/<id>.live` lease is held by another
///   process): listed under `skipped`;
/// - reserved names (`session_boot_owners.json`, `latest.json`, `offline_queue.json`, any
///   `*.lock`), names that are not valid ids, directories or symlinks named `x.json`: listed
///   under `ignored`;
/// - approval-receipt sidecars and late-usage ledgers, which are not the document.
///
/// ## Example
///
/// `S/torn.json` holding `{"schema_version":1,"metadata":{"id":"torn",` is planned as
/// `would set aside torn.json  (R1 unreadable-document: unreadable document: EOF while
/// parsing an object at line 1 column 38)`.
#[derive(Debug, Clone, Copy)]
pub struct UnreadableDocument;

impl Rule for UnreadableDocument {
    fn code(&self) -> &'static str {
        "R1"
    }

    fn name(&self) -> &'static str {
        "unreadable-document"
    }

    fn plan(&self, cx: &Context<'_>) -> RuleOutput {
        let mut out = RuleOutput::default();
        for doc in &cx.inventory.documents {
            let (reason, digest) = match &doc.state {
                DocState::NewerSchema { .. } => {
                    out.counts.documents_newer_schema += 1;
                    continue;
                }
                DocState::UnknownContent { unknown, .. } => {
                    out.counts.documents_unknown_content += 1;
                    out.skipped.push(Skipped {
                        path: doc.path(),
                        rule: self.code().into(),
                        why: format!("unknown content kept: {unknown}"),
                    });
                    continue;
                }
                DocState::Unreadable { reason, digest } => (reason, digest),
                DocState::Readable { .. } | DocState::Inaccessible => continue,
            };
            if cx.refs.live_sessions.contains(&doc.id) {
                out.skipped.push(Skipped {
                    path: doc.path(),
                    rule: self.code().into(),
                    why: "session is live".into(),
                });
                continue;
            }
            out.proposals.push(Proposal {
                action: ActionKind::SetAside,
                path: doc.path(),
                kind: Some(ItemKind::Document),
                document: None,
                reason: reason.clone(),
                expect: Expect::Known(Precondition::File {
                    bytes: digest.bytes,
                    sha256: digest.sha256.clone(),
                }),
                effect: Effect::DocumentGone { id: doc.id.clone() },
            });
        }
        out
    }
}
