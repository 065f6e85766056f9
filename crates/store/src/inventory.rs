//! The inventory: what the scan found, as ids, bindings and digests, never message bodies.

use std::collections::{BTreeMap, BTreeSet};

use fsroot::FileDigest;

/// Everything one scan of S found.
#[derive(Debug, Default, Clone)]
pub struct Inventory {
    /// Top-level `<id>.json` documents, sorted by id.
    pub documents: Vec<Document>,
    /// Top-level `<id>/` session directories, sorted by id.
    pub session_dirs: Vec<SessionDir>,
    /// Ids of `checkpoints/<id>.json`: each is a known session, whatever its state.
    pub checkpoints: BTreeSet<String>,
    /// Checkpoint id → the `data_dir` it binds (a checkpoint binds a store as a document does).
    pub checkpoint_bindings: BTreeMap<String, String>,
    /// Ids whose `.late-usage/<id>.live` lease another process holds.
    pub live_sessions: BTreeSet<String>,
    /// Stems of top-level `<id>.json` entries that are not regular files (a directory, a
    /// symlink, a fifo): no document, but the name is taken.
    pub taken_document_names: BTreeSet<String>,
    /// Ids whose checkpoint (`checkpoints/<id>.json`) exists but could not be read.
    pub inaccessible_checkpoints: BTreeSet<String>,
    /// Ids with a `.late-usage/<id>.deleted` tombstone.
    pub deleted_sessions: BTreeSet<String>,
    /// Ids of artifact-only and empty session directories (the only ones text can spare) that
    /// some known document's text names (a UUID in any case, any other id as a substring).
    pub named_by_documents: BTreeSet<String>,
    /// Names from the read-only task stores (`$CODEWHALE_HOME/tasks/runtime`): each thread's
    /// `session_id`, its id and its derived UUID.
    pub task_names: BTreeSet<String>,
    /// Entries the doctor leaves alone and reports, sorted by path.
    pub ignored: Vec<Ignored>,
    /// Temporary files of atomic writes an interrupted doctor run left (in S and in threads
    /// directories); a real run removes them before acting.
    pub interrupted_writes: Vec<String>,
    /// Errors met while scanning; the scan went on without the entry.
    pub errors: Vec<fsroot::Problem>,
}

/// An entry that is not a document, a session directory or a known file.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Ignored {
    /// Relative to S, `/`-separated (lossy for non-UTF-8 names).
    pub path: String,
    /// Why it is ignored.
    pub why: &'static str,
}

/// A top-level session document.
#[derive(Debug, Clone)]
pub struct Document {
    /// The id (file stem).
    pub id: String,
    /// What reading it found.
    pub state: DocState,
}

impl Document {
    /// `<id>.json`, relative to S (derived, not stored once per document).
    pub fn path(&self) -> String {
        format!("{}.json", self.id)
    }
}

/// What reading a document found.
#[derive(Debug, Clone)]
pub enum DocState {
    /// Deserializes as the app's `SavedSession`, id equal to the stem, journal valid.
    Readable {
        /// `metadata.runtime_store.data_dir`.
        data_dir: Option<std::sync::Arc<str>>,
    },
    /// Readable but for a content block `type`, journal `kind` or message `role` the doctor
    /// does not know: kept, a known session.
    UnknownContent {
        /// `metadata.runtime_store.data_dir`.
        data_dir: Option<std::sync::Arc<str>>,
        /// What is unknown, e.g. `content block type "hologram"`.
        unknown: String,
    },
    /// `schema_version` above the known version: kept, counts as existing.
    NewerSchema {
        /// The version it declares.
        version: u64,
        /// `metadata.runtime_store.data_dir` when it can be read.
        data_dir: Option<std::sync::Arc<str>>,
    },
    /// Not readable: the reason and the digest of the bytes judged.
    Unreadable {
        /// Why (parse or schema error).
        reason: String,
        /// Size and SHA-256 of what was read.
        digest: FileDigest,
    },
    /// Could not be read at all (permission denied, ...): kept and counted as existing.
    Inaccessible,
}

impl DocState {
    /// Whether the document counts as a known session.
    pub fn is_known(&self) -> bool {
        !matches!(self, DocState::Unreadable { .. })
    }

    /// The binding it declares, if it counts as existing.
    pub fn data_dir(&self) -> Option<&str> {
        match self {
            DocState::Readable { data_dir }
            | DocState::UnknownContent { data_dir, .. }
            | DocState::NewerSchema { data_dir, .. } => data_dir.as_deref(),
            _ => None,
        }
    }
}

/// Size and SHA-256 of bytes, kept as raw bytes: the inventory holds one per thread record, and
/// only those that get an action are ever spelled out in hex (a precondition).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Digest {
    /// Size in bytes.
    pub bytes: u64,
    /// SHA-256.
    pub sha256: [u8; 32],
}

impl Digest {
    /// The digest of `bytes`.
    pub fn of(bytes: &[u8]) -> Digest {
        use sha2::Digest as _;
        Digest {
            bytes: bytes.len() as u64,
            sha256: sha2::Sha256::digest(bytes).into(),
        }
    }

    /// The same digest as a [`FileDigest`] (lowercase hex), as preconditions spell it.
    pub fn file_digest(&self) -> FileDigest {
        FileDigest {
            bytes: self.bytes,
            sha256: fsroot::hex(&self.sha256),
        }
    }
}

/// A top-level session directory `S/<id>/`.
#[derive(Debug, Clone)]
pub struct SessionDir {
    /// The directory name (a valid id).
    pub id: String,
    /// Relative to S.
    pub path: String,
    /// Whether it holds only artifacts (no store).
    pub artifact_only: bool,
    /// Whether it has no entry at all.
    pub empty: bool,
    /// Newest mtime of anything in the tree (seconds), for artifact-only directories.
    pub newest_mtime: i64,
    /// Runtime stores directly inside it.
    pub stores: Vec<Store>,
}

/// A runtime store `S/<id>/runtime*`.
#[derive(Debug, Clone)]
pub struct Store {
    /// Relative to S, e.g. `abc/runtime`.
    pub path: String,
    /// Whether another process holds its owner lock.
    pub held: bool,
    /// Whether it holds work (store-format.md, Version 2: an entry in a work directory,
    /// `next_seq` above 1 or a `state.json` that does not parse, or an automation pinned to it).
    pub holds_work: bool,
    /// `owner.json` `owner_id`, when the file is readable and names a valid record id.
    pub owner_id: Option<String>,
    /// Thread records, sorted by id.
    pub threads: Vec<Thread>,
    /// Whether a thread record of a newer schema (above 4) is in it: the app cannot list the
    /// store, so no rule acts on it.
    pub newer_thread: bool,
    /// Thread ids with a seed journal (`threads/<tid>.seed`): never recovered.
    pub seeded: BTreeSet<String>,
    /// Why recovery in this store failed (each unreadable turn or item, bad tool metadata),
    /// each naming its file: the store is kept and every error reported.
    pub recovery_errors: Vec<RecoveryError>,
}

impl Store {
    /// The path of thread record `t` of this store, relative to S.
    pub fn thread_path(&self, t: &Thread) -> String {
        format!("{}/threads/{}.json", self.path, t.id)
    }
}

/// A thread record.
#[derive(Debug, Clone)]
pub struct Thread {
    /// Thread id (file stem); the record is `<store>/threads/<id>.json` (see
    /// [`Store::thread_path`]).
    pub id: String,
    /// Size and SHA-256 of the record as it was judged (40 bytes, no string per thread).
    pub digest: Digest,
    /// What reading it found.
    pub state: ThreadState,
    /// For an unbound or dangling thread in a store nobody holds: what a recovery would hold
    /// (`None` when not recoverable or not looked at).
    pub recovery: Option<Box<RecoverySummary>>,
    /// For a dangling thread: size and SHA-256 of the record after R4 unbinds it at the plan's
    /// instant.
    pub unbound_digest: Option<Box<FileDigest>>,
}

/// What reading a thread record found.
#[derive(Debug, Clone)]
pub enum ThreadState {
    /// A record of the known schema.
    Current {
        /// `session_id`, when bound.
        session_id: Option<String>,
        /// Whether it has a `saved_session_checkpoint`.
        has_checkpoint: bool,
    },
    /// Newer schema: never rewritten or recovered.
    NewerSchema {
        /// The version it declares.
        version: u64,
        /// The `session_id` it names, which still counts as a reference.
        session_id: Option<String>,
    },
    /// Does not parse: reported, left in place.
    Unreadable {
        /// Why.
        reason: String,
        /// The `session_id` the record names as raw JSON, when it has one: it still names a
        /// session directory (the app reads it so), though the record is not loadable.
        session_id: Option<String>,
    },
}

impl Inventory {
    /// Ids that count as known sessions: readable, unknown-content, newer-schema and
    /// inaccessible documents, and checkpoints.
    pub fn known_ids(&self) -> BTreeSet<&str> {
        self.documents
            .iter()
            .filter(|d| d.state.is_known())
            .map(|d| d.id.as_str())
            .chain(self.checkpoints.iter().map(String::as_str))
            .collect()
    }

    /// All stores of all session directories, in path order.
    pub fn stores(&self) -> impl Iterator<Item = &Store> {
        self.session_dirs.iter().flat_map(|d| d.stores.iter())
    }
}

/// What the planner keeps of a recovery: counts, no bodies.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RecoverySummary {
    /// Turns of the thread (any status).
    pub turns: u64,
    /// Messages of the rebuilt conversation.
    pub messages: u64,
}

/// Why the threads of a store cannot be recovered, naming the record at fault: one the app
/// would refuse when it loads the store's turns and items (codewhale-format.md §6.4), or a
/// thread whose messages cannot be rebuilt. Shown as the planner's skip reasons show it.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum RecoveryError {
    /// The directory or a record could not be read (the problem names its path).
    #[error("{0}")]
    Unreadable(fsroot::Problem),
    /// A `*.json` entry that is not a regular file named by a valid id.
    #[error("{path}: not a record file")]
    NotARecordFile {
        /// The record's path, relative to S.
        path: String,
    },
    /// Not JSON.
    #[error("{path} does not parse: {reason}")]
    DoesNotParse {
        /// The record's path, relative to S.
        path: String,
        /// serde_json's reason.
        reason: String,
    },
    /// A `schema_version` above the newest the doctor knows.
    #[error("{path}: record of newer schema {version}")]
    NewerSchema {
        /// The record's path, relative to S.
        path: String,
        /// Its `schema_version`.
        version: f64,
    },
    /// JSON, but not a record of its kind.
    #[error("{path} is not a valid record: {reason}")]
    NotAValidRecord {
        /// The record's path, relative to S.
        path: String,
        /// serde's reason.
        reason: String,
    },
    /// A turn whose `max_output_tokens` is present exactly when its schema is not 4.
    #[error("{path}: turn output allowance does not match its schema")]
    OutputAllowance {
        /// The turn's path, relative to S.
        path: String,
    },
    /// A user message whose image input the app would refuse.
    #[error("{path}: {reason}")]
    ImageInput {
        /// The item's path, relative to S.
        path: String,
        /// The app's reason.
        reason: String,
    },
    /// A thread whose messages cannot be rebuilt from its turns and items.
    #[error("thread {thread}: {error}")]
    Rebuild {
        /// The thread's id.
        thread: String,
        /// Where and why.
        error: crate::rebuild::RebuildError,
    },
}
