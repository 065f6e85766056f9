//! Applying one action: set-aside moves (the store-move protocol for runtime stores), thread
//! unbinding, recovery and binding. Preconditions and locks are already checked by the caller.

use std::path::Path;

use fsroot::WritableRoot;
use plan::{ItemKind, PlannedAction};
use serde_json::Value;
use store::ids::SET_ASIDE_DIR;
use store::model::{SavedSession, ThreadRecord};
use store::recover;
use store::Clock;

use engine::records::ManifestLine;
use store::ids::RunId;

use crate::{append_json_line, Extra, Refusal};

pub(crate) struct Act<'a> {
    pub root: &'a WritableRoot,
    pub action: &'a PlannedAction,
    pub run: &'a RunId,
    pub clock: Clock,
    /// The plan's instant: `updated_at` of every thread record this run rewrites.
    pub planned_at: &'a str,
}

fn fail(e: impl ToString) -> Refusal {
    Refusal::Fail(e.to_string())
}

impl Act<'_> {
    fn run_dir(&self) -> String {
        format!("{SET_ASIDE_DIR}/{}", self.run.0)
    }

    fn mirrored(&self, path: &str) -> String {
        format!("{}/{path}", self.run_dir())
    }

    fn write_manifest(&self, line: &ManifestLine) -> Result<(), Refusal> {
        append_json_line(
            self.root,
            &format!("{}/{}", self.run_dir(), store::ids::MANIFEST_FILE),
            line,
        )
        .map_err(fail)
    }

    /// Moves a document or an artifact directory aside: manifest line first, then the rename,
    /// then the moved item is verified where it landed. An item replaced between the check and
    /// the rename (a good document renamed over a torn one), or one that cannot be looked at,
    /// is not what the line promises: a second line records what was actually moved when it
    /// can be digested (the last line for a `moved_to` is the one that counts), then it goes
    /// back to its path if nothing took that path meanwhile (also when that second line could
    /// not be written: it never stays in the run under the first), and the action is the skip the
    /// planner would have made, its receipt naming what went back (`put_back_from`).
    pub fn set_aside(&self) -> Result<Extra, Refusal> {
        let path = Path::new(&self.action.path);
        let moved_to = self.mirrored(&self.action.path);
        let line = ManifestLine::for_action(self.action, self.run, &moved_to, self.clock.now());
        self.write_manifest(&line)?;
        let failure = match self.moved(path, Path::new(&moved_to)) {
            Ok(f) => f,
            Err(refusal) => return Err(self.void(&line, refusal)),
        };
        let mut extra = Extra::from_iter([("moved_to".to_owned(), moved_to.clone().into())]);
        let found = engine::judge::item_digest(self.root, &moved_to);
        if matches!(&found, Ok(Some(d)) if *d == self.action.precondition) {
            return match failure {
                None => Ok(extra),
                Some(e) => Err(Refusal::Fail(e)),
            };
        }
        // The line that records what was moved, when it cannot be written, does not stop the
        // put-back: the item must not stay in the run under a line whose digest is not its own.
        let mut unrecorded = None;
        if let Ok(Some(d)) = &found {
            let mut corrected = line.with_digest(d);
            corrected.reason = format!(
                "{}; corrected: the item moved is not the one checked (it was replaced between \
                 the check and the move), this line records what was moved",
                line.reason
            );
            if let Err(Refusal::Fail(e) | Refusal::Skip(e) | Refusal::Undone(e, _)) =
                self.write_manifest(&corrected)
            {
                unrecorded = Some(e);
            }
        }
        match self.moved(Path::new(&moved_to), path) {
            Ok(_) => Err(Refusal::Undone(
                match &unrecorded {
                    None => "changed since planned: it was replaced between the check and the \
                             move, and was put back"
                        .into(),
                    Some(e) => format!(
                        "changed since planned: it was replaced between the check and the move, \
                         and was put back (the manifest line recording what was moved could not \
                         be written: {e})"
                    ),
                },
                Extra::from_iter([("put_back_from".to_owned(), moved_to.into())]),
            )),
            Err(Refusal::Fail(e) | Refusal::Skip(e) | Refusal::Undone(e, _))
                if unrecorded.is_some() =>
            {
                Err(Refusal::Fail(format!(
                    "the item moved to {moved_to} was replaced between the check and the move, \
                     the manifest line recording what was moved could not be written ({}), and \
                     it could not be put back: {e}",
                    unrecorded.unwrap_or_default()
                )))
            }
            Err(Refusal::Fail(e) | Refusal::Skip(e) | Refusal::Undone(e, _)) => {
                extra.insert(
                    "not_as_planned".into(),
                    format!(
                        "the item moved was replaced between the check and the move (the \
                         manifest records what was moved when it could be digested); it \
                         could not be put back: {e}"
                    )
                    .into(),
                );
                match failure {
                    None => Ok(extra),
                    Some(e) => Err(Refusal::Fail(e)),
                }
            }
        }
    }

    /// A move whose manifest line was written did not happen (it failed, and what moved went
    /// back): a line voiding it follows, so no line is left claiming the item is in the run.
    /// If that line cannot be written, the refusal says so (a restore then finds the item in
    /// place, as the line promised).
    fn void(&self, line: &ManifestLine, refusal: Refusal) -> Refusal {
        let Refusal::Fail(why) = refusal else {
            return refusal;
        };
        match self.write_manifest(&line.rolled_back(&why, self.clock.now())) {
            Ok(()) => Refusal::Fail(why),
            Err(Refusal::Fail(e) | Refusal::Skip(e) | Refusal::Undone(e, _)) => {
                Refusal::Fail(format!("{why}; the manifest line could not be voided: {e}"))
            }
        }
    }

    /// Moves `from` to `to`, judging by what is there whether the rename happened: `Ok(None)`
    /// moved; `Ok(Some(error))` moved, but something after the rename failed (a directory
    /// fsync); `Err` not moved.
    fn moved(&self, from: &Path, to: &Path) -> Result<Option<String>, Refusal> {
        match self.root.move_item(from, to) {
            Ok(()) => Ok(None),
            Err(e) => {
                let happened = matches!(self.root.stat(to), Ok(Some(_)))
                    && matches!(self.root.stat(from), Ok(None));
                if happened {
                    Ok(Some(e.to_string()))
                } else {
                    Err(fail(e))
                }
            }
        }
    }

    /// The store-move protocol (invariants.md): the caller holds the owner lock; every entry is
    /// renamed into the destination, the lock file last; on failure what moved is moved back in
    /// reverse; the emptied source is removed only if still empty; the directory itself is
    /// never renamed and the lock file never unlinked.
    ///
    /// `created_owner_lock`: the store had no owner lock file, and the check created one to hold
    /// it; the manifest line then records the store as it moves, with that (empty) lock file.
    pub fn move_store(&self, created_owner_lock: bool) -> Result<Extra, Refusal> {
        let store = &self.action.path;
        self.check_not_bound_by_own_document(store)?;
        let moved_to = self.mirrored(store);
        let mut line = ManifestLine::for_action(self.action, self.run, &moved_to, self.clock.now());
        if created_owner_lock {
            match engine::judge::item_digest(self.root, store) {
                Ok(Some(d)) => line = line.with_digest(&d),
                _ => {
                    return Err(Refusal::Skip(
                        "changed since planned: the store cannot be digested".into(),
                    ))
                }
            }
        }
        self.write_manifest(&line)?;
        let outcome = crate::store_move::move_store(self.root, store, &moved_to, &mut |_| {})
            .map_err(|e| {
                // Voided only when nothing of the store is in the run: a move back that failed
                // (or a source that could not be removed once every entry had moved) leaves
                // entries there, which the line goes on naming; the next run finishes the move.
                if matches!(self.root.stat(Path::new(&moved_to)), Ok(None)) {
                    self.void(&line, Refusal::Fail(e))
                } else {
                    Refusal::Fail(format!(
                        "{e}; what moved stays in the run under its manifest line"
                    ))
                }
            })?;
        let removed = outcome.source_removed;
        let mut extra = Extra::from_iter([("moved_to".to_owned(), moved_to.into())]);
        if created_owner_lock {
            extra.insert(
                "owner_lock_created".into(),
                "the store had no owner lock file: it was created (0600) and held for the move"
                    .into(),
            );
        }
        if !removed {
            extra.insert(
                "source_left".into(),
                "a new store was created at the source during the move; it was left to its owner"
                    .into(),
            );
        }
        if removed {
            self.remove_left_session_dir(store, &mut extra);
        }
        Ok(extra)
    }

    /// The session directory a moved store leaves empty holds no data: it goes too (`rmdir`,
    /// which refuses a directory something appeared in). A restore recreates it. The move is
    /// done: nothing here may turn it into a failure; in doubt, the directory stays.
    fn remove_left_session_dir(&self, store: &str, extra: &mut Extra) {
        let Some((dir, _)) = store.split_once('/') else {
            return;
        };
        if self.session_dir_may_go(dir).unwrap_or(false) {
            match self.root.remove_empty_dir(Path::new(dir)) {
                Ok(true) => {
                    extra.insert("removed_empty_dir".into(), dir.into());
                }
                Ok(false) => {}
                Err(e) => {
                    extra.insert("empty_dir_left".into(), e.to_string().into());
                }
            }
        }
    }

    /// Before the first rewrite of a record in this run, copies its bytes to the mirrored path
    /// with a `previous_version` manifest line.
    fn keep_previous_version(&self, bytes: &[u8]) -> Result<(), Refusal> {
        let path = &self.action.path;
        let mirrored = self.mirrored(path);
        if self
            .root
            .stat(Path::new(&mirrored))
            .map_err(fail)?
            .is_some()
        {
            return Ok(());
        }
        let digest = store::digest_of(bytes);
        let line = ManifestLine {
            run: self.run.0.clone(),
            rule: self.action.rule.clone(),
            original: path.clone(),
            moved_to: mirrored.clone(),
            reason: format!("bytes of {path} before this run rewrote it"),
            kind: ItemKind::PreviousVersion,
            sha256: Some(digest.sha256),
            tree_blake3: None,
            bytes: digest.bytes,
            at: self.clock.now().to_string(),
            rolled_back: false,
        };
        self.write_manifest(&line)?;
        // The very bytes the line records, created and never replacing anything (something
        // at the mirrored path since the check above is not ours).
        let mode = self
            .root
            .stat(Path::new(path))
            .map_err(fail)?
            .map_or(0o644, |s| s.mode & 0o777);
        self.root
            .create_atomic(Path::new(&mirrored), bytes, mode)
            .map_err(fail)
    }

    fn read_record(&self) -> Result<(Vec<u8>, ThreadRecord), Refusal> {
        let bytes = self.root.read(Path::new(&self.action.path)).map_err(fail)?;
        let record: ThreadRecord = serde_json::from_slice(&bytes)
            .map_err(|e| Refusal::Skip(format!("thread record no longer parses: {e}")))?;
        Ok((bytes, record))
    }

    /// The permission bits of the thread record: its rewrite, and the document recovered from
    /// it, keep them (a private record stays private).
    fn record_mode(&self) -> Result<u32, Refusal> {
        Ok(self
            .root
            .stat(Path::new(&self.action.path))
            .map_err(fail)?
            .map_or(0o644, |s| s.mode & 0o777))
    }

    fn write_record(&self, bytes: Option<Vec<u8>>, mode: u32) -> Result<(), Refusal> {
        let bytes = bytes.ok_or_else(|| Refusal::Skip("thread record no longer parses".into()))?;
        self.root
            .write_atomic_mode(Path::new(&self.action.path), &bytes, mode)
            .map_err(fail)
    }

    fn store(&self) -> &str {
        self.action
            .path
            .rsplit_once("/threads/")
            .map(|(s, _)| s)
            .unwrap_or_default()
    }

    fn previous_fields(bytes: &[u8], record: &ThreadRecord) -> Extra {
        let mut extra = Extra::new();
        extra.insert(
            "previous_sha256".into(),
            store::digest_of(bytes).sha256.into(),
        );
        extra.insert(
            "previous_session_id".into(),
            record.session_id.clone().map_or(Value::Null, Value::from),
        );
        extra
    }

    /// R4: rewrites the record without its binding, receipted in the store (with the app's
    /// keys) and centrally.
    pub fn unbind_thread(&self) -> Result<Extra, Refusal> {
        let (bytes, record) = self.read_record()?;
        // The premise, checked again right before acting: the session it names is still gone
        // (no document, no checkpoint) and nobody has it open.
        // An id that is not valid, or is reserved, can have no document and no lease: the
        // planner found it dangling by the same rule.
        let valid = record
            .session_id
            .as_ref()
            .filter(|sid| store::ids::is_valid_id(sid));
        if let Some(sid) = valid {
            if self.lease_held(sid)? {
                return Err(Refusal::Skip("session is live".into()));
            }
        }
        let sid = valid
            .filter(|sid| !store::ids::is_reserved_top(&format!("{sid}.json")))
            .filter(|sid| !store::ids::RESERVED_CHECKPOINT_IDS.contains(&sid.as_str()));
        if let Some(sid) = sid {
            // Known as planning knows it: a regular file, not a symlink or a directory.
            for known in [format!("{sid}.json"), format!("checkpoints/{sid}.json")] {
                let stat = self.root.stat(Path::new(&known)).map_err(fail)?;
                if stat.is_some_and(|s| s.kind == fsroot::EntryKind::File) {
                    return Err(Refusal::Skip(format!(
                        "changed since planned: {known} exists"
                    )));
                }
            }
        }
        let extra = Self::previous_fields(&bytes, &record);
        self.keep_previous_version(&bytes)?;
        self.write_record(
            recover::unbind_bytes(&bytes, self.planned_at),
            self.record_mode()?,
        )?;
        let mut line = Extra::new();
        line.insert("action".into(), "thread_unbound".into());
        line.insert("thread_id".into(), record.id.clone().into());
        line.insert(
            "session_id".into(),
            record.session_id.clone().map_or(Value::Null, Value::from),
        );
        line.insert(
            "saved_session_checkpoint".into(),
            record
                .saved_session_checkpoint
                .as_ref()
                .map_or(Value::Null, |c| {
                    serde_json::to_value(c).expect("checkpoint serializes")
                }),
        );
        line.insert("reason".into(), self.action.reason.clone().into());
        line.insert("at".into(), self.clock.now().to_string().into());
        line.insert("run".into(), self.run.0.clone().into());
        line.insert("thread".into(), self.action.path.clone().into());
        line.extend(extra.clone());
        let receipts = format!("{}/session-unbind-receipts.jsonl", self.store());
        append_json_line(self.root, &receipts, &line).map_err(fail)?;
        Ok(extra)
    }

    /// R3: writes the recovered document (never over an existing one), then binds the thread.
    pub fn recover_thread(&self, document: &str) -> Result<Extra, Refusal> {
        if self.root.stat(Path::new(document)).map_err(fail)?.is_some() {
            return Err(Refusal::Skip("document id taken".into()));
        }
        let (bytes, record) = self.read_record()?;
        // The premises that can change between planning and now: the session was not deleted
        // and nobody has it open.
        // A tombstone is a regular file, as the scan counts one.
        let tombstone = format!("{}/{}.deleted", store::ids::LATE_USAGE_DIR, record.id);
        let stat = self.root.stat(Path::new(&tombstone)).map_err(fail)?;
        if stat.is_some_and(|s| s.kind == fsroot::EntryKind::File) {
            return Err(Refusal::Skip("session was deleted".into()));
        }
        if self.lease_held(&record.id)? {
            return Err(Refusal::Skip("session is live".into()));
        }
        let recovered = match recover::build_recovered(self.root, self.store(), &bytes) {
            Ok(Some(r)) => r,
            Ok(None) => return Err(Refusal::Skip("changed since planned".into())),
            Err(e) => return Err(Refusal::Skip(format!("changed since planned: {e}"))),
        };
        let extra = Self::previous_fields(&bytes, &record);
        self.keep_previous_version(&bytes)?;
        // Created, never replaced: a document saved at this id since the check above stays,
        // and the recovery is the skip the planner makes for a taken id.
        let mode = self.record_mode()?;
        match self
            .root
            .create_atomic(Path::new(document), &recovered.document, mode)
        {
            Ok(()) => {}
            Err(fsroot::Error::Occupied { .. }) => {
                return Err(Refusal::Skip("document id taken".into()))
            }
            Err(e) => return Err(fail(e)),
        }
        self.write_record(
            recover::bind_bytes(&bytes, &record.id, &recovered.checkpoint, self.planned_at),
            mode,
        )?;
        let mut extra = extra;
        extra.insert("document".into(), document.into());
        extra.insert(
            "document_sha256".into(),
            store::digest_of(&recovered.document).sha256.into(),
        );
        Ok(extra)
    }

    /// R3 after a crash: binds the thread to the recovered document that already binds its store.
    pub fn bind_thread(&self, document: &str) -> Result<Extra, Refusal> {
        let changed = || Refusal::Skip("changed since planned".into());
        let doc_bytes = self.root.read(Path::new(document)).map_err(|_| changed())?;
        let doc: SavedSession = serde_json::from_slice(&doc_bytes).map_err(|_| changed())?;
        let binds = doc.metadata.runtime_store.as_ref().is_some_and(|r| {
            refset::binds_store(
                &r.data_dir,
                &[self.root.anchor(), self.root.canonical_anchor()],
                self.store(),
            )
        });
        if !binds {
            return Err(changed());
        }
        let (bytes, record) = self.read_record()?;
        let messages: Vec<store::model::Message> = doc
            .messages
            .into_iter()
            .map(|m| store::model::Message {
                role: m.role,
                content: m.content.into_iter().map(|b| b.canonical()).collect(),
            })
            .collect();
        let checkpoint = store::model::SavedSessionCheckpoint {
            covered_turn_id: record.latest_turn_id.clone(),
            messages_sha256: recover::messages_sha256(&messages),
            messages_len: Some(messages.len() as u64),
            retained_messages: None,
        };
        let extra = Self::previous_fields(&bytes, &record);
        self.keep_previous_version(&bytes)?;
        self.write_record(
            recover::bind_bytes(&bytes, &record.id, &checkpoint, self.planned_at),
            self.record_mode()?,
        )?;
        let mut extra = extra;
        extra.insert("document".into(), document.into());
        Ok(extra)
    }

    /// Puts a set-aside item back at its original path (`--restore`). A document or directory
    /// is renamed back; a store moves back by the store-move protocol (the caller holds its
    /// owner lock); a thread record gets its previous bytes back, after what is there now is
    /// kept as a previous version of this run, so a restore loses nothing either.
    pub fn restore(&self, kind: ItemKind, from: &str) -> Result<Extra, Refusal> {
        let path = Path::new(&self.action.path);
        let mut extra = Extra::from_iter([("from".to_owned(), Value::from(from))]);
        if kind == ItemKind::PreviousVersion {
            let bytes = self.root.read(Path::new(from)).map_err(fail)?;
            match self.root.read(path) {
                Ok(current) if current == bytes => return Ok(extra),
                Ok(current) => self.keep_previous_version(&current)?,
                Err(e) if e.is_not_found() => {}
                Err(e) => return Err(fail(e)),
            }
            // The record gets its previous bytes back with the previous version's bits.
            let mode = self
                .root
                .stat(Path::new(from))
                .map_err(fail)?
                .map_or(0o644, |s| s.mode & 0o777);
            self.root
                .write_atomic_mode(path, &bytes, mode)
                .map_err(fail)?;
            return Ok(extra);
        }
        // A temporary file goes back into a store's `threads/` only while that directory is
        // there (re-checked: the store may have been set aside since planning).
        if let Some(why) =
            engine::admin::temporary_file_home_gone(self.root, kind, &self.action.path)
        {
            return Err(Refusal::Skip(why));
        }
        // A store found at its path is a restore cut short midway, which the precondition
        // check established; anything else there is someone else's.
        let store = kind == ItemKind::RuntimeStore;
        if !store && self.root.stat(path).map_err(fail)?.is_some() {
            return Err(Refusal::Skip(format!(
                "original path is occupied: {}",
                self.action.path
            )));
        }
        if store {
            let outcome =
                crate::store_move::move_store(self.root, from, &self.action.path, &mut |_| {})
                    .map_err(Refusal::Fail)?;
            if !outcome.source_removed {
                extra.insert(
                    "source_left".into(),
                    "the set-aside copy was not empty after the move".into(),
                );
            }
        } else {
            match self.root.move_item(Path::new(from), path) {
                Ok(()) => {}
                Err(fsroot::Error::Occupied { .. }) => {
                    return Err(Refusal::Skip(format!(
                        "original path is occupied: {}",
                        self.action.path
                    )))
                }
                Err(e) => return Err(fail(e)),
            }
        }
        Ok(extra)
    }

    /// Finishes the set-aside of the store at `from` that a kill cut short midway: the rest of
    /// its entries move into the action's path, its destination in the run that began the move,
    /// by the store-move protocol (the caller holds the owner lock, still at `from`); the store is
    /// then whole in that run, and its emptied session directory goes as after that move.
    pub fn finish_set_aside(&self, from: &str) -> Result<Extra, Refusal> {
        let mut extra = Extra::from_iter([("from".to_owned(), Value::from(from))]);
        let outcome =
            crate::store_move::move_store(self.root, from, &self.action.path, &mut |_| {})
                .map_err(Refusal::Fail)?;
        if outcome.source_removed {
            self.remove_left_session_dir(from, &mut extra);
        } else {
            extra.insert(
                "source_left".into(),
                "a new store was created at the source during the move; it was left to its \
                 owner"
                    .into(),
            );
        }
        Ok(extra)
    }

    /// Whether the session directory `dir` may be removed once empty: the same rule as R2's
    /// planned `remove_empty_dir` (store-format.md, Version 2: an empty directory holds no data,
    /// whether or not its session has a document or a checkpoint); only a live lease keeps it.
    fn session_dir_may_go(&self, dir: &str) -> Result<bool, Refusal> {
        Ok(!self.lease_held(dir)?)
    }

    fn lease_held(&self, id: &str) -> Result<bool, Refusal> {
        crate::sessions::lease_held(self.root, id)
    }

    /// Removes an empty session directory (`rmdir`, which fails on a directory that is not
    /// empty, so nothing that appeared since planning is lost).
    pub fn remove_empty_dir(&self) -> Result<Extra, Refusal> {
        if !self.session_dir_may_go(&self.action.path)? {
            return Err(Refusal::Skip("session is live".into()));
        }
        match self.root.remove_empty_dir(Path::new(&self.action.path)) {
            Ok(true) => Ok(Extra::new()),
            Ok(false) => Err(Refusal::Skip("changed since planned: not empty".into())),
            Err(e) => Err(fail(e)),
        }
    }

    /// Deletes a whole set-aside run through the one delete seam (`--purge-set-aside`),
    /// recorded before it starts ([`crate::purge`]).
    pub fn purge(&self, step: &crate::Step<'_>) -> Result<Extra, Refusal> {
        crate::purge::purge(self.root, self.action, step)
    }

    /// The cheap re-check of R2's premise right before the move: the document of the session
    /// directory the store sits in (`S/<dir>.json`, the usual binder) and its checkpoint do not
    /// bind it now. A plan made before that document was saved must not set its store aside.
    fn check_not_bound_by_own_document(&self, store: &str) -> Result<(), Refusal> {
        let Some((dir, _)) = store.split_once('/') else {
            return Ok(());
        };
        let anchors = [self.root.anchor(), self.root.canonical_anchor()];
        // The session's document and its crash checkpoint, which binds as a document does.
        for doc in [format!("{dir}.json"), format!("checkpoints/{dir}.json")] {
            // Only what cannot be a document is passed over (nothing there, not a regular
            // file); a document that cannot be read now may bind the store: in doubt, it stays.
            let bytes = match self.root.read(Path::new(&doc)) {
                Ok(b) => b,
                Err(e) if e.is_not_found() || matches!(e, fsroot::Error::NotAFile { .. }) => {
                    continue
                }
                Err(e) if e.is_symlink() => continue,
                Err(e) => {
                    return Err(Refusal::Skip(format!(
                        "cannot read {doc} to check that it does not bind the store: {e}"
                    )))
                }
            };
            let binds = store::judge_document(dir, &bytes)
                .data_dir()
                .is_some_and(|d| refset::binds_store(d, &anchors, store));
            if binds {
                return Err(Refusal::Skip(format!(
                    "changed since planned: {doc} binds the store"
                )));
            }
        }
        Ok(())
    }
}
