//! Property tests over generated session stores (proptest): a strategy builds whole stores in
//! the app's shape (readable, torn, newer-schema, mismatched, unknown-content and non-JSON
//! documents; checkpoints; bound, dangling, cross-bound, orphan and newer-schema threads with
//! turns, a broken turn, stores without `owner.json`, busy and empty stores, empty session
//! directories, tombstones of deleted sessions; stores and live leases held by a
//! real second process; artifact directories, idle or recent; symlinks inside S and out of it;
//! interrupted-write temporary files of dead and live writers, in the places the doctor writes
//! them and elsewhere), and every generated store must satisfy [`check_store`]:
//!
//! - the dry-run plan is what the real run applies, action for action;
//! - nothing is lost (every entry at its path unchanged, or at its mirrored path in the run, or
//!   a thread record rewritten with the SHA-256 of its earlier bytes recorded);
//! - a second run plans nothing, but for the one wait rules.md prescribes (R5 collects its
//!   names before any rule acts), and a third run plans nothing;
//! - restoring the runs gives back the original tree byte for byte, outside the doctor's own
//!   files;
//! - a real `doctor` process killed at a chosen mutation point, then full reruns, reach the
//!   uninterrupted end state;
//! - nothing outside S changes (sentinels, a store and a link beside S: bytes and mtimes);
//! - the plan file is byte-identical across runs and on rayon pools of 1, 2 and 4 threads
//!   (what `RAYON_NUM_THREADS` sets for the global pool).
//!
//! `cargo test` runs [`DEFAULT_CASES`] cases; `PROPTEST_CASES=N` (what `cargo xtask prop
//! --cases N` sets, over several processes with their own seeds) runs more. A failing case
//! shrinks to a minimal store; its seed is kept in `crates/cli/tests/proptest-regressions/` and
//! replayed first by every later run. docs/reliability.md describes the strategy and the runs.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use proptest::prelude::*;
use proptest::test_runner::{Config, FileFailurePersistence, TestRunner};
use serde_json::{json, Value};

use crate::common::{
    self, assert_nothing_lost, is_doctor_own, mtimes, sha256_hex, tree, Doctor, Kept, Node, Tree,
};
use crate::stores::{self, pretty, write};

/// Cases `cargo test` runs when `PROPTEST_CASES` is not set.
const DEFAULT_CASES: u32 = 48;

/// The clock of every run: an hour after this process started. It must agree with the
/// filesystem's clock: a directory the doctor changes gets the real time as its mtime, and an
/// artifact directory a run changed must look recent to the next run, as it does for a user
/// (a clock years ahead of the files made R5 act on a directory R2 had just emptied of its
/// store, which no user's second run would see). Generated artifact directories get their
/// mtimes explicitly: weeks before it (idle) or an hour before it (recent).
fn now() -> store::Timestamp {
    static NOW: std::sync::OnceLock<store::Timestamp> = std::sync::OnceLock::new();
    *NOW.get_or_init(|| {
        let since = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap();
        store::Timestamp(since.as_secs() as i64 + 3600)
    })
}

/// Session ids: none is a substring of another's text by chance (documents name the ids their
/// text holds), the last is UUID-shaped (named in lower case, as a token).
const SESSIONS: [&str; 5] = [
    "sa1",
    "sb2",
    "sc3",
    "sd4",
    "5e2f3b1c-0a4d-4c8e-9f10-6b7d8e9fa0b1",
];

/// Thread ids: two of their own, and two that are session ids too (a thread names its own id,
/// and a recovery writes the document of the thread's id).
const THREADS: [&str; 4] = ["tq7", "tr8", "sa1", "sc3"];

/// A pid no process can have (above the kernel's largest `pid_max`): its temporary files are
/// an interrupted write of a dead doctor.
const DEAD_PID: u32 = 4_194_999;

// ---------------------------------------------------------------------------------------------
// The model of a generated store
// ---------------------------------------------------------------------------------------------

/// What `<id>.json` (or `checkpoints/<id>.json`) holds.
#[derive(Debug, Clone)]
enum Doc {
    Readable(Bind),
    /// The readable bytes cut at this share (of 256) of their length.
    Torn(u8),
    Newer,
    /// `metadata.id` names another session.
    Mismatched,
    /// A content block of a type the doctor does not know.
    UnknownContent,
    NotJson,
}

/// The `runtime_store` binding of a readable document.
#[derive(Debug, Clone)]
enum Bind {
    None,
    /// Its own `<id>/runtime`.
    Own,
    /// The store of another session (index into [`SESSIONS`]).
    Other(usize),
    /// A store outside S.
    Outside,
    /// Its own store, spelled through a symlink to S that sits beside S.
    ThroughLink,
}

#[derive(Debug, Clone)]
struct Thread {
    id: usize,
    /// Bound to this session (index into [`SESSIONS`]).
    bound: Option<usize>,
    turns: u64,
    /// Schema 5, newer than the doctor knows: its store gets no action from R2, R3 or R4.
    newer: bool,
}

#[derive(Debug, Clone)]
struct Runtime {
    threads: Vec<Thread>,
    /// A turn file that does not parse: recovery of the store stops with an error.
    broken_turn: bool,
    /// `state.json` with `next_seq` above 1: the store holds work.
    busy_state: bool,
    /// An entry in `events/`: the store holds work.
    events: bool,
    /// No `owner.json`: a recovery cannot compute its binding.
    no_owner: bool,
    /// Its owner lock is held by another process.
    held: bool,
}

#[derive(Debug, Clone)]
enum Lease {
    None,
    /// `.late-usage/<id>.live` exists, unheld.
    Free,
    /// Held by another process: the session is live.
    Held,
    /// `.late-usage/<id>.deleted`: the user deleted the session.
    Deleted,
}

#[derive(Debug, Clone)]
struct Session {
    doc: Option<Doc>,
    checkpoint: Option<Doc>,
    runtime: Option<Runtime>,
    /// `Some(idle)`: an artifacts directory in `<id>/`, idle or written an hour before [`now`].
    artifacts: Option<bool>,
    lease: Lease,
    /// An empty `<id>/` when the session has no store and no artifacts.
    empty_dir: bool,
}

/// A symlink in S.
#[derive(Debug, Clone)]
enum Link {
    /// `lnk<n>.json` to the document of a session.
    DocInside(usize),
    /// `<id>` (when the session has no directory) to a directory outside S.
    DirOutside(usize),
    /// `<id>/runtime` (when the session has no store) to the store outside S.
    RuntimeOutside(usize),
    /// `<id>/runtime/threads/tz9.json` (in an existing store) to a file outside S.
    ThreadOutside(usize),
}

/// An interrupted write's temporary file.
#[derive(Debug, Clone)]
struct Temp {
    place: TempPlace,
    /// Its writer is dead (else pid 1, always alive).
    dead: bool,
}

#[derive(Debug, Clone)]
enum TempPlace {
    /// Beside the document of a session.
    Document(usize),
    /// In `.reconcile/`, of `last.json`.
    Reconcile,
    /// In the threads directory of a session's store.
    Threads(usize),
    /// In a session's artifacts: not a place the doctor writes, so never its to remove.
    Artifacts(usize),
}

#[derive(Debug, Clone)]
struct StoreCase {
    sessions: Vec<Session>,
    links: Vec<Link>,
    temps: Vec<Temp>,
    /// Where the killed run stops: the mutation number (taken modulo an estimate of the run's
    /// mutations) and whether just after it.
    kill: (u16, bool),
}

// ---------------------------------------------------------------------------------------------
// Strategies
// ---------------------------------------------------------------------------------------------

fn session_index() -> impl Strategy<Value = usize> {
    0..SESSIONS.len()
}

fn bind() -> impl Strategy<Value = Bind> {
    prop_oneof![
        2 => Just(Bind::None),
        4 => Just(Bind::Own),
        2 => session_index().prop_map(Bind::Other),
        1 => Just(Bind::Outside),
        1 => Just(Bind::ThroughLink),
    ]
}

fn doc() -> impl Strategy<Value = Doc> {
    prop_oneof![
        6 => bind().prop_map(Doc::Readable),
        2 => (1u8..=255).prop_map(Doc::Torn),
        1 => Just(Doc::Newer),
        1 => Just(Doc::Mismatched),
        1 => Just(Doc::UnknownContent),
        1 => Just(Doc::NotJson),
    ]
}

fn thread() -> impl Strategy<Value = Thread> {
    (
        0..THREADS.len(),
        proptest::option::weighted(0.6, session_index()),
        0u64..=2,
        proptest::bool::weighted(0.05),
    )
        .prop_map(|(id, bound, turns, newer)| Thread {
            id,
            bound,
            turns,
            newer,
        })
}

fn runtime() -> impl Strategy<Value = Runtime> {
    (
        proptest::collection::vec(thread(), 0..=2),
        proptest::bool::weighted(0.1),
        proptest::bool::weighted(0.1),
        proptest::bool::weighted(0.1),
        proptest::bool::weighted(0.1),
        proptest::bool::weighted(0.1),
    )
        .prop_map(
            |(threads, broken_turn, busy_state, events, no_owner, held)| Runtime {
                threads,
                broken_turn,
                busy_state,
                events,
                no_owner,
                held,
            },
        )
}

fn session() -> impl Strategy<Value = Session> {
    (
        proptest::option::weighted(0.7, doc()),
        proptest::option::weighted(0.15, doc()),
        proptest::option::weighted(0.6, runtime()),
        proptest::option::weighted(0.3, proptest::bool::weighted(0.7)),
        prop_oneof![
            12 => Just(Lease::None),
            2 => Just(Lease::Free),
            2 => Just(Lease::Held),
            1 => Just(Lease::Deleted),
        ],
        proptest::bool::weighted(0.1),
    )
        .prop_map(
            |(doc, checkpoint, runtime, artifacts, lease, empty_dir)| Session {
                doc,
                checkpoint,
                runtime,
                artifacts,
                lease,
                empty_dir,
            },
        )
}

fn link() -> impl Strategy<Value = Link> {
    prop_oneof![
        session_index().prop_map(Link::DocInside),
        session_index().prop_map(Link::DirOutside),
        session_index().prop_map(Link::RuntimeOutside),
        session_index().prop_map(Link::ThreadOutside),
    ]
}

fn temp() -> impl Strategy<Value = Temp> {
    let place = prop_oneof![
        session_index().prop_map(TempPlace::Document),
        Just(TempPlace::Reconcile),
        session_index().prop_map(TempPlace::Threads),
        session_index().prop_map(TempPlace::Artifacts),
    ];
    (place, proptest::bool::weighted(0.7)).prop_map(|(place, dead)| Temp { place, dead })
}

fn store_case() -> impl Strategy<Value = StoreCase> {
    (
        proptest::collection::vec(session(), SESSIONS.len()),
        proptest::collection::vec(link(), 0..=2),
        proptest::collection::vec(temp(), 0..=2),
        (any::<u16>(), any::<bool>()),
    )
        .prop_map(|(sessions, links, temps, kill)| StoreCase {
            sessions,
            links,
            temps,
            kill,
        })
}

// ---------------------------------------------------------------------------------------------
// Writing a generated store
// ---------------------------------------------------------------------------------------------

/// Where a case lives: `work/S` (the store), `work/S-link` (a symlink to S), `work/outside/`
/// (what must never change), `work/home` (an empty `CODEWHALE_HOME`); the pristine copy of S
/// lives elsewhere so that resetting S touches nothing beside it but S.
struct Place {
    _work: tempfile::TempDir,
    _pristine: tempfile::TempDir,
    work: PathBuf,
    s: PathBuf,
    pristine: PathBuf,
    home: PathBuf,
}

/// A temporary directory on a tmpfs when there is one: a case writes and reads many small
/// files.
fn scratch() -> tempfile::TempDir {
    let shm = Path::new("/dev/shm");
    if shm.is_dir() {
        if let Ok(t) = tempfile::Builder::new()
            .prefix("doctor-prop")
            .tempdir_in(shm)
        {
            return t;
        }
    }
    tempfile::tempdir().unwrap()
}

impl Place {
    fn new() -> Place {
        let work_dir = scratch();
        let pristine_dir = scratch();
        let work = work_dir.path().canonicalize().unwrap();
        let s = work.join("S");
        std::fs::create_dir(&s).unwrap();
        std::os::unix::fs::symlink("S", work.join("S-link")).unwrap();
        let home = work.join("home");
        std::fs::create_dir(&home).unwrap();
        // What is outside S: sentinels, a runtime store a binding may name, a directory a link
        // from S leads to, and a file a thread link leads to.
        write(&work, "outside/sentinel.txt", b"never touched\n");
        stores::store_with_thread(&work, "outside/store", "tq7", None, 1);
        write(&work, "outside/victim/artifacts/big.log", b"keep me\n");
        write(
            &work,
            "outside/thread.json",
            pretty(&stores::thread("tz9", None)),
        );
        Place {
            pristine: pristine_dir.path().join("S"),
            _work: work_dir,
            _pristine: pristine_dir,
            work,
            s,
            home,
        }
    }

    /// Every path beside S (S's own entries left out), with its bytes, and its mtime.
    fn outside(&self) -> (Tree, BTreeMap<PathBuf, i128>) {
        let keep = |p: &Path| !p.starts_with("S") && p != Path::new("");
        let t = tree(&self.work)
            .into_iter()
            .filter(|(p, _)| keep(p))
            .collect();
        let m = mtimes(&self.work)
            .into_iter()
            .filter(|(p, _)| keep(p))
            .collect();
        (t, m)
    }
}

/// The bytes of a readable document `id` binding as `bind` says.
fn readable(place: &Place, id: &str, bind: &Bind) -> Value {
    let s = &place.s;
    match bind {
        Bind::None => stores::document(id),
        Bind::Own => stores::bound_document(s, id, &format!("{id}/runtime")),
        Bind::Other(j) => stores::bound_document(s, id, &format!("{}/runtime", SESSIONS[*j])),
        Bind::Outside => {
            stores::document_bound_to(id, &place.work.join("outside/store").to_string_lossy())
        }
        Bind::ThroughLink => stores::document_bound_to(
            id,
            &place
                .work
                .join("S-link")
                .join(id)
                .join("runtime")
                .to_string_lossy(),
        ),
    }
}

fn doc_bytes(place: &Place, id: &str, doc: &Doc) -> Vec<u8> {
    match doc {
        Doc::Readable(bind) => pretty(&readable(place, id, bind)),
        Doc::Torn(share) => {
            let b = pretty(&readable(place, id, &Bind::Own));
            let keep = b.len() * usize::from(*share) / 256;
            b[..keep].to_vec()
        }
        Doc::Newer => {
            let mut v = readable(place, id, &Bind::None);
            v["schema_version"] = json!(2);
            pretty(&v)
        }
        Doc::Mismatched => {
            let mut v = readable(place, id, &Bind::None);
            v["metadata"]["id"] = json!("zz9");
            pretty(&v)
        }
        Doc::UnknownContent => {
            let mut v = readable(place, id, &Bind::None);
            v["messages"][0]["content"][0]["type"] = json!("hologram");
            pretty(&v)
        }
        Doc::NotJson => b"not json at all\n".to_vec(),
    }
}

/// Sets the mtime of `path` (not following a symlink at it: none is given here).
fn set_mtime(path: &Path, at: std::time::SystemTime) {
    std::fs::File::open(path)
        .and_then(|f| f.set_modified(at))
        .unwrap_or_else(|e| panic!("set mtime of {}: {e}", path.display()));
}

/// `secs` seconds before [`now`].
fn before_now(secs: i64) -> std::time::SystemTime {
    std::time::UNIX_EPOCH + std::time::Duration::from_secs((now().0 - secs) as u64)
}

/// Whether `dir` and every directory between S and it are real directories (no symlink on
/// the way, so nothing written there lands outside S).
fn real_dirs_in(s: &Path, dir: &Path) -> bool {
    let Ok(rel) = dir.strip_prefix(s) else {
        return false;
    };
    let mut at = s.to_path_buf();
    rel.components().all(|c| {
        at.push(c);
        std::fs::symlink_metadata(&at).is_ok_and(|m| m.is_dir())
    })
}

/// Writes the case's store into `place.s` (empty). Returns the files another process must hold
/// (owner locks of held stores, leases of live sessions).
fn write_store(place: &Place, case: &StoreCase) -> Vec<PathBuf> {
    let s = &place.s;
    let mut held = Vec::new();
    // Marks of a session store, as the app leaves them.
    std::fs::create_dir_all(s.join(".late-usage")).unwrap();
    write(s, "session_boot_owners.json", b"{}\n");
    write(s, "notes.txt", b"the user's own notes\n");
    for (i, sess) in case.sessions.iter().enumerate() {
        let id = SESSIONS[i];
        if let Some(doc) = &sess.doc {
            write(s, &format!("{id}.json"), doc_bytes(place, id, doc));
        }
        if let Some(doc) = &sess.checkpoint {
            write(
                s,
                &format!("checkpoints/{id}.json"),
                doc_bytes(place, id, doc),
            );
        }
        if let Some(rt) = &sess.runtime {
            let store = format!("{id}/runtime");
            stores::empty_store(s, &store);
            for t in &rt.threads {
                let tid = THREADS[t.id];
                let bound = t.bound.map(|j| SESSIONS[j]);
                stores::store_with_thread(s, &store, tid, bound, t.turns);
                if t.newer {
                    let path = s.join(&store).join(format!("threads/{tid}.json"));
                    let mut v: Value =
                        serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
                    v["schema_version"] = json!(5);
                    std::fs::write(&path, pretty(&v)).unwrap();
                }
            }
            if rt.broken_turn {
                write(s, &format!("{store}/turns/turn_broken.json"), b"{\"id\":");
            }
            if rt.busy_state {
                write(
                    s,
                    &format!("{store}/state.json"),
                    pretty(&json!({ "schema_version": 2, "next_seq": 7 })),
                );
            }
            if rt.events {
                write(s, &format!("{store}/events/000001.json"), b"{}\n");
            }
            if rt.no_owner {
                std::fs::remove_file(s.join(&store).join("owner.json")).unwrap();
            }
            if rt.held {
                held.push(s.join(&store).join("runtime-process.owner.lock"));
            }
        }
        if sess.artifacts.is_some() {
            write(s, &format!("{id}/artifacts/build.log"), b"compiling\n");
            write(s, &format!("{id}/approval_receipts.jsonl"), b"");
        }
        if sess.empty_dir && sess.runtime.is_none() && sess.artifacts.is_none() {
            std::fs::create_dir(s.join(id)).unwrap();
        }
        match sess.lease {
            Lease::None => {}
            Lease::Deleted => write(s, &format!(".late-usage/{id}.deleted"), b""),
            Lease::Free => write(s, &format!(".late-usage/{id}.live"), b""),
            Lease::Held => {
                write(s, &format!(".late-usage/{id}.live"), b"");
                held.push(s.join(format!(".late-usage/{id}.live")));
            }
        }
    }
    for (n, l) in case.links.iter().enumerate() {
        let (at, to) = match *l {
            Link::DocInside(i) => (
                s.join(format!("lnk{n}.json")),
                PathBuf::from(format!("{}.json", SESSIONS[i])),
            ),
            Link::DirOutside(i) => (s.join(SESSIONS[i]), place.work.join("outside/victim")),
            Link::RuntimeOutside(i) => (
                s.join(SESSIONS[i]).join("runtime"),
                place.work.join("outside/store"),
            ),
            Link::ThreadOutside(i) => (
                s.join(SESSIONS[i]).join("runtime/threads/tz9.json"),
                place.work.join("outside/thread.json"),
            ),
        };
        // Only where every directory on the way is a real one inside S (a link made earlier
        // must not carry this one out of S), and nothing is at the path yet.
        let parent = at.parent().unwrap();
        let parent_ok = real_dirs_in(s, parent)
            || (matches!(l, Link::RuntimeOutside(_))
                && std::fs::symlink_metadata(parent).is_err()
                && real_dirs_in(s, parent.parent().unwrap()));
        if std::fs::symlink_metadata(&at).is_ok() || !parent_ok {
            continue;
        }
        std::fs::create_dir_all(at.parent().unwrap()).unwrap();
        std::os::unix::fs::symlink(&to, &at).unwrap();
    }
    for (n, t) in case.temps.iter().enumerate() {
        let pid = if t.dead { DEAD_PID } else { 1 };
        let (dir, target) = match t.place {
            TempPlace::Document(i) => (s.clone(), format!("{}.json", SESSIONS[i])),
            TempPlace::Reconcile => (s.join(".reconcile"), "last.json".to_owned()),
            TempPlace::Threads(i) => (
                s.join(SESSIONS[i]).join("runtime/threads"),
                format!("{}.json", THREADS[n % THREADS.len()]),
            ),
            TempPlace::Artifacts(i) => (s.join(SESSIONS[i]).join("artifacts"), "x.json".to_owned()),
        };
        // Only where the directory is a real one already (a threads directory of a store, an
        // artifacts directory), except S and `.reconcile/`, which are made.
        if !real_dirs_in(s, &dir) && !matches!(t.place, TempPlace::Reconcile) {
            continue;
        }
        std::fs::create_dir_all(&dir).unwrap();
        let name = fsroot::temp::name(target.as_ref(), pid, n as u64);
        std::fs::write(dir.join(name), b"{\"half\":").unwrap();
    }
    // Last, once nothing more is written into them: the artifact directories' ages.
    for (i, sess) in case.sessions.iter().enumerate() {
        let id = SESSIONS[i];
        let Some(idle) = sess.artifacts else { continue };
        let at = before_now(if idle { 30 * 24 * 3600 } else { 3600 });
        for p in [
            format!("{id}/artifacts/build.log"),
            format!("{id}/approval_receipts.jsonl"),
            format!("{id}/artifacts"),
            id.to_owned(),
        ] {
            set_mtime(&s.join(p), at);
        }
    }
    held
}

// ---------------------------------------------------------------------------------------------
// The properties
// ---------------------------------------------------------------------------------------------

/// What another process holds in a case: the stores whose owner lock it holds and the
/// sessions whose lease it holds. The doctor leaves everything in them alone, temporary files
/// of dead writers included.
#[derive(Debug, Default)]
struct Holders {
    stores: Vec<String>,
    live: BTreeSet<String>,
}

impl Holders {
    fn of(case: &StoreCase) -> Holders {
        let mut h = Holders::default();
        for (i, sess) in case.sessions.iter().enumerate() {
            if sess.runtime.as_ref().is_some_and(|r| r.held) {
                h.stores.push(format!("{}/runtime", SESSIONS[i]));
            }
            if matches!(sess.lease, Lease::Held) {
                h.live.insert(SESSIONS[i].to_owned());
            }
        }
        h
    }

    /// Whether `p` (relative to S) is a temporary file a real run may set aside: an interrupted
    /// write of a dead writer, in a place the doctor writes them, in no held store and of no
    /// live session.
    fn removable_temp(&self, p: &Path) -> bool {
        let text = p.to_string_lossy();
        let name = p.file_name().unwrap_or_default().to_string_lossy();
        if !engine::housekeeping::is_temp_place(&text) || fsroot::temp::writer_alive(&name) {
            return false;
        }
        if self.stores.iter().any(|st| p.starts_with(st)) {
            return false;
        }
        let session = if p.components().count() == 1 {
            fsroot::temp::target(&name).and_then(|t| t.strip_suffix(".json"))
        } else {
            p.iter().next().and_then(|c| c.to_str())
        };
        !session.is_some_and(|id| self.live.contains(id))
    }

    /// The tree without what the comparisons of user data leave out: the doctor's own files,
    /// and the temporary files a run may set aside.
    fn user_data(&self, t: &Tree) -> Tree {
        t.iter()
            .filter(|(p, _)| !(is_doctor_own(p) || self.removable_temp(p)))
            .map(|(p, n)| (p.clone(), n.clone()))
            .collect()
    }
}

/// The paths whose entries differ between `want` and `got`, each with both sides.
fn differences(want: &Tree, got: &Tree) -> String {
    let show = |n: Option<&Node>| match n {
        None => "nothing".to_owned(),
        Some(Node::File(b)) => format!("{} bytes {}", b.len(), &sha256_hex(b)[..12]),
        Some(other) => format!("{other:?}"),
    };
    common::tree_difference(want, got)
        .iter()
        .map(|p| {
            format!(
                "\n  {}: want {}, got {}",
                p.display(),
                show(want.get(p)),
                show(got.get(p))
            )
        })
        .collect()
}

fn options(place: &Place, dry_run: bool) -> doctor::RepairOptions {
    let mut o = crate::common::repair_options(&place.s);
    o.clock = store::Clock::Fixed(now());
    o.codewhale_home = Some(place.home.clone());
    o.dry_run = dry_run;
    o
}

/// A dry run on a rayon pool of `threads` threads; its plan file.
fn dry_plan(place: &Place, threads: usize) -> (doctor::RepairReport, Vec<u8>) {
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .build()
        .unwrap();
    let report = pool
        .install(|| doctor::repair_sessions(&options(place, true)))
        .unwrap_or_else(|e| panic!("dry run on {threads} threads: {e}"));
    let bytes = doctor::plan_file_bytes(&report);
    (report, bytes)
}

/// A `doctor` process repairing S, stopped and killed with SIGKILL at the mutation `spec`.
/// Whether it was killed (else it finished).
fn killed_run(place: &Place, spec: &str) -> bool {
    Doctor::new()
        .sessions_dir(&place.s)
        .arg("--repair-sessions")
        .now(&now().to_string())
        .env("CODEWHALE_HOME", &place.home)
        .killed_at(spec)
        .is_some()
}

/// What one case found, for the counts `cargo xtask prop` prints.
#[derive(Debug, Default, Clone)]
struct Seen {
    actions: usize,
    /// Actions of the uninterrupted runs by rule code (`doctor` for housekeeping).
    by_rule: BTreeMap<String, usize>,
    /// The second run planned something (R5 on directories only unbound threads named).
    second_run: bool,
    killed: bool,
    held: bool,
}

/// A real run in this process; every planned action must be applied and every record
/// written.
fn real_run(place: &Place, what: &str) -> Result<doctor::RepairReport, TestCaseError> {
    let real = doctor::repair_sessions(&options(place, false))
        .map_err(|e| TestCaseError::fail(format!("{what}: {e}")))?;
    prop_assert_eq!(real.outcomes.len(), real.plan.actions.len());
    for (o, a) in real.outcomes.iter().zip(&real.plan.actions) {
        prop_assert_eq!(
            o.outcome,
            doctor::OutcomeKind::Applied,
            "{}: action {:?} was not applied: {:?}",
            what,
            a,
            o.why
        );
    }
    prop_assert!(!real.late_failure, "{}: its records were written", what);
    Ok(real)
}

/// Restores the run `run` in this process, when it set anything aside; every item must come
/// back. What it printed.
fn restore_run(place: &Place, run: &str) -> Result<String, TestCaseError> {
    if !place.s.join(".set-aside").join(run).exists() {
        return Ok(format!("(run {run} set nothing aside)\n"));
    }
    let restored = doctor::restore(&options(place, false), run, &[])
        .map_err(|e| TestCaseError::fail(format!("restore of {run}: {e}")))?;
    let said = restored.render_human();
    prop_assert!(
        restored.skipped.is_empty()
            && restored
                .outcomes
                .iter()
                .all(|o| o.outcome == doctor::OutcomeKind::Applied),
        "every item of run {} is restored:\n{}",
        run,
        said
    );
    Ok(said)
}

/// Checks every property on the store `case` describes.
fn check_store(case: &StoreCase) -> Result<Seen, TestCaseError> {
    let place = Place::new();
    let held_files = write_store(&place, case);
    let holders = Holders::of(case);
    common::copy_tree(&place.s, &place.pristine);
    common::copy_mtimes(&place.s, &place.pristine);
    let original = tree(&place.s);
    let outside = place.outside();
    // Only the doctor's own temporary files may be gone outright, and only a dead writer's in
    // a place it writes them.
    let before_user: Tree = original
        .iter()
        .filter(|(p, _)| !holders.removable_temp(p))
        .map(|(p, n)| (p.clone(), n.clone()))
        .collect();
    let kept_anywhere = Kept::in_any_run().files_only().or_receipted_rewrite();
    let mut seen = Seen {
        held: !held_files.is_empty(),
        ..Seen::default()
    };
    let hold = |files: &[PathBuf]| (!files.is_empty()).then(|| common::Holder::spawn(files));

    // The uninterrupted runs, then a restore of each.
    let end = {
        let _holder = hold(&held_files);
        let (dry, plan) = dry_plan(&place, 2);
        for threads in [1, 4, 2] {
            let (_, again) = dry_plan(&place, threads);
            prop_assert_eq!(
                &plan,
                &again,
                "the plan file differs on a pool of {} threads",
                threads
            );
        }
        let now_there = tree(&place.s);
        prop_assert!(
            now_there == original,
            "a dry run writes nothing; differing: {}",
            differences(&original, &now_there)
        );

        let real = real_run(&place, "the real run")?;
        prop_assert_eq!(
            &real.plan.actions,
            &dry.plan.actions,
            "the real run plans what the dry run printed"
        );
        seen.actions = real.plan.actions.len();
        for a in &real.plan.actions {
            *seen.by_rule.entry(a.rule.clone()).or_default() += 1;
        }
        let after = tree(&place.s);
        let kept = Kept::in_run(&real.run)
            .empty_dirs_may_go()
            .or_receipted_rewrite()
            .when("after the real run");
        assert_nothing_lost(&before_user, &after, kept);

        // A second run plans nothing, except what rules.md makes wait for it: names are
        // collected before any rule acts, so the directory of a session that only a thread
        // this run unbound named is set aside (R5) or, empty, removed (R2) by the next run. A
        // third run plans nothing.
        let unbound = sessions_of_unbound_threads(&original, &real.plan.actions);
        let (second, _) = dry_plan(&place, 2);
        for a in &second.plan.actions {
            let waited = matches!(
                (a.rule.as_str(), &a.action),
                ("R5", plan::Action::SetAside { .. }) | ("R2", plan::Action::RemoveEmptyDir)
            );
            prop_assert!(
                waited && unbound.contains(&a.path),
                "a second run plans nothing but R5's set-aside or R2's removal of the \
                 directories of sessions only threads this run unbound named ({:?}), not {:?}",
                unbound,
                a
            );
        }
        let mut runs = vec![real];
        if !second.plan.actions.is_empty() {
            seen.second_run = true;
            let real2 = real_run(&place, "the second run")?;
            prop_assert_eq!(&real2.plan.actions, &second.plan.actions);
            for a in &real2.plan.actions {
                *seen.by_rule.entry(a.rule.clone()).or_default() += 1;
            }
            assert_nothing_lost(
                &before_user,
                &tree(&place.s),
                kept_anywhere.when("after a second run"),
            );
            let (third, _) = dry_plan(&place, 2);
            prop_assert!(
                third.plan.actions.is_empty(),
                "a third run plans nothing, not {:?}",
                third.plan.actions
            );
            runs.push(real2);
        }
        prop_assert_eq!(
            place.outside(),
            outside.clone(),
            "nothing outside S changed"
        );
        let after = tree(&place.s);
        let end = (holders.user_data(&after), common::set_aside_files(&after));

        // Restoring the runs, the last first, gives back the original tree.
        let mut said = String::new();
        for r in runs.iter().rev() {
            said.push_str(&r.render_human());
            said.push_str(&restore_run(&place, &r.run)?);
        }
        // An empty session directory R2 removed outside any set-aside (one nothing emptied)
        // held no data and belongs to no run, so no restore brings it back.
        let back = holders.user_data(&tree(&place.s));
        let mut want = holders.user_data(&original);
        want.retain(|p, n| {
            let removed_empty = *n == Node::Dir
                && p.components().count() == 1
                && !back.contains_key(p)
                && !original.keys().any(|q| q != p && q.starts_with(p));
            !removed_empty
        });
        prop_assert!(
            back == want,
            "a restore gives back the original tree; differing: {}\nruns and restores:\n{}",
            differences(&want, &back),
            said
        );
        prop_assert_eq!(
            place.outside(),
            outside.clone(),
            "nothing outside S changed"
        );
        end
    };

    // A real process killed at one of its mutations, then full reruns until one plans
    // nothing: the uninterrupted end state.
    let estimate = 12 + 10 * seen.actions as u32;
    let n = 1 + u32::from(case.kill.0) % estimate;
    let spec = if case.kill.1 {
        format!("{n}:after")
    } else {
        n.to_string()
    };
    common::fresh_copy(&place.pristine, &place.s);
    {
        let _holder = hold(&held_files);
        seen.killed = killed_run(&place, &spec);
        let point = format!("right after the kill at {spec}");
        assert_nothing_lost(&before_user, &tree(&place.s), kept_anywhere.when(&point));
        let mut reruns = 0;
        loop {
            let (next, _) = dry_plan(&place, 2);
            if next.plan.actions.is_empty() {
                break;
            }
            reruns += 1;
            prop_assert!(
                reruns <= 2,
                "killed at {}: still planning after two reruns",
                spec
            );
            real_run(&place, &format!("rerun {reruns} after the kill at {spec}"))?;
            let point = format!("after rerun {reruns} of {spec}");
            assert_nothing_lost(&before_user, &tree(&place.s), kept_anywhere.when(&point));
        }
        let after = tree(&place.s);
        // A kill between a store's set-aside and the removal of the session directory it
        // emptied leaves that directory empty; the next run removes it whatever names it
        // (store-format.md, Version 2), so no difference is allowed.
        let user = holders.user_data(&after);
        prop_assert!(
            user == end.0,
            "killed at {}, the reruns reach the uninterrupted end state; differing: {}",
            spec,
            differences(&end.0, &user)
        );
        let aside = common::set_aside_files(&after);
        let missing: Vec<_> = end.1.difference(&aside).collect();
        prop_assert!(
            missing.is_empty(),
            "killed at {}: not set aside as in the uninterrupted run: {:?}",
            spec,
            missing
        );
        prop_assert_eq!(place.outside(), outside, "nothing outside S changed");
    }
    Ok(seen)
}

/// The `session_id`s the thread records `actions` unbind (R4) held in `original`.
fn sessions_of_unbound_threads(
    original: &Tree,
    actions: &[plan::PlannedAction],
) -> BTreeSet<String> {
    actions
        .iter()
        .filter(|a| a.rule == "R4")
        .filter_map(|a| match original.get(Path::new(&a.path)) {
            Some(Node::File(b)) => serde_json::from_slice::<Value>(b).ok(),
            _ => None,
        })
        .filter_map(|v| Some(v.get("session_id")?.as_str()?.to_owned()))
        .collect()
}

/// The runner's configuration: `PROPTEST_CASES` cases (else [`DEFAULT_CASES`]), failures kept
/// beside this file.
fn config() -> Config {
    let cases = std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|c| c.parse().ok())
        .unwrap_or(DEFAULT_CASES);
    Config {
        cases,
        failure_persistence: Some(Box::new(FileFailurePersistence::SourceParallel(
            "proptest-regressions",
        ))),
        source_file: Some(file!()),
        max_shrink_iters: 4096,
        ..Config::default()
    }
}

#[test]
fn generated_stores_keep_every_property() {
    let mut runner = TestRunner::new(config());
    let totals = std::cell::RefCell::new(Totals::default());
    let result = runner.run(&store_case(), |case| {
        let seen = check_store(&case)?;
        totals.borrow_mut().add(&seen);
        Ok(())
    });
    if let Err(e) = result {
        panic!("{e}");
    }
    println!("{}", totals.borrow());
}

/// The counts over every case that passed, printed at the end (`cargo xtask prop` sums them
/// over its processes).
#[derive(Debug, Default)]
struct Totals {
    stores: usize,
    actions: usize,
    by_rule: BTreeMap<String, usize>,
    killed: usize,
    held: usize,
    second_run: usize,
}

impl Totals {
    fn add(&mut self, seen: &Seen) {
        self.stores += 1;
        self.actions += seen.actions;
        for (rule, n) in &seen.by_rule {
            *self.by_rule.entry(rule.clone()).or_default() += n;
        }
        self.killed += usize::from(seen.killed);
        self.held += usize::from(seen.held);
        self.second_run += usize::from(seen.second_run);
    }
}

impl std::fmt::Display for Totals {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let rules: Vec<String> = self
            .by_rule
            .iter()
            .map(|(r, n)| format!("{r}={n}"))
            .collect();
        write!(
            f,
            "property totals: stores={} actions={} [{}] killed={} held={} second_run={}",
            self.stores,
            self.actions,
            rules.join(" "),
            self.killed,
            self.held,
            self.second_run
        )
    }
}

// ---------------------------------------------------------------------------------------------
// The verdict cache never changes a plan
// ---------------------------------------------------------------------------------------------

/// How long before a scan a file must have changed for the cache to keep it, in these tests
/// (the doctor's default is 3 s): each edit is followed by a wait of [`CACHE_WAIT`], longer than
/// this plus a tick of the kernel's coarse file clock, so an edit always lands after what the
/// previous scan kept.
const CACHE_MARGIN_NS: i64 = 20_000_000;
const CACHE_WAIT: std::time::Duration = std::time::Duration::from_millis(35);

/// What an edit writes: a document's bytes when it lands on a document, a thread record's when
/// it lands on one.
#[derive(Debug, Clone)]
struct Content {
    doc: Doc,
    bound: Option<usize>,
    newer: bool,
}

/// One edit of a file the scan judges (a document or a thread record), chosen by `target`
/// among the files there at the time.
#[derive(Debug, Clone)]
enum Edit {
    /// New bytes written in place (the same inode).
    Rewrite(Content),
    /// Cut to this share (of 256) of its length, in place.
    Truncate(u8),
    /// One byte changed in place, the size kept, the mtime set back to what it was: only the
    /// ctime tells.
    TouchSameMtime,
    /// New bytes through a temporary file renamed over it (a new inode).
    ReplaceByRename(Content),
    Delete,
    /// A document or thread record that was not there.
    Add(Content),
}

fn content() -> impl Strategy<Value = Content> {
    (
        doc(),
        proptest::option::of(session_index()),
        proptest::bool::weighted(0.2),
    )
        .prop_map(|(doc, bound, newer)| Content { doc, bound, newer })
}

fn edit() -> impl Strategy<Value = Edit> {
    prop_oneof![
        content().prop_map(Edit::Rewrite),
        any::<u8>().prop_map(Edit::Truncate),
        Just(Edit::TouchSameMtime),
        content().prop_map(Edit::ReplaceByRename),
        Just(Edit::Delete),
        content().prop_map(Edit::Add),
    ]
}

/// The files of S the scan judges and the cache keeps: top-level documents and the thread
/// records of every store, relative to S, sorted.
fn judged_files(s: &Path) -> Vec<String> {
    let mut out: Vec<String> = tree(s)
        .into_iter()
        .filter(|(_, n)| matches!(n, Node::File(_)))
        .map(|(p, _)| p.to_string_lossy().into_owned())
        .filter(|p| {
            let parts: Vec<&str> = p.split('/').collect();
            let json = p.ends_with(".json");
            (parts.len() == 1 && json && !p.starts_with("session_boot"))
                || (parts.len() == 4 && parts[2] == "threads" && json)
        })
        .collect();
    out.sort();
    out
}

/// The bytes `c` stands for at `rel`: a thread record's in a threads directory, else a
/// document's.
fn content_bytes(place: &Place, rel: &str, c: &Content) -> Vec<u8> {
    let stem = Path::new(rel).file_stem().unwrap().to_string_lossy();
    if rel.contains("/threads/") {
        let mut t = stores::thread(&stem, c.bound.map(|j| SESSIONS[j]));
        if c.newer {
            t["schema_version"] = json!(5);
        }
        pretty(&t)
    } else {
        doc_bytes(place, &stem, &c.doc)
    }
}

/// Applies `edit` to the `target`-th judged file (an addition picks a free name). Returns what
/// it did, for the failure message.
fn apply_edit(place: &Place, edit: &Edit, target: usize) -> String {
    let s = &place.s;
    let files = judged_files(s);
    if let Edit::Add(c) = edit {
        let mut free: Vec<String> = SESSIONS
            .iter()
            .map(|id| format!("{id}.json"))
            .filter(|f| !s.join(f).exists())
            .collect();
        for dir in files
            .iter()
            .filter_map(|f| f.rsplit_once('/').map(|(d, _)| d))
        {
            free.extend(
                THREADS
                    .iter()
                    .map(|t| format!("{dir}/{t}.json"))
                    .filter(|f| !s.join(f).exists()),
            );
        }
        free.sort();
        free.dedup();
        if free.is_empty() {
            return "add: no free name".into();
        }
        let rel = &free[target % free.len()];
        write(s, rel, content_bytes(place, rel, c));
        return format!("add {rel}");
    }
    if files.is_empty() {
        return "nothing to edit".into();
    }
    let rel = &files[target % files.len()];
    let path = s.join(rel);
    match edit {
        Edit::Rewrite(c) => {
            let bytes = content_bytes(place, rel, c);
            let mut f = std::fs::OpenOptions::new()
                .write(true)
                .truncate(true)
                .open(&path)
                .unwrap();
            std::io::Write::write_all(&mut f, &bytes).unwrap();
        }
        Edit::Truncate(share) => {
            let len = std::fs::metadata(&path).unwrap().len();
            let f = std::fs::OpenOptions::new().write(true).open(&path).unwrap();
            f.set_len(len * u64::from(*share) / 256).unwrap();
        }
        Edit::TouchSameMtime => {
            let mtime = std::fs::metadata(&path).unwrap().modified().unwrap();
            let mut bytes = std::fs::read(&path).unwrap();
            let mid = bytes.len() / 2;
            if let Some(b) = bytes.get_mut(mid) {
                *b = if *b == b'0' { b'1' } else { b'0' };
            }
            std::fs::write(&path, &bytes).unwrap();
            set_mtime(&path, mtime);
        }
        Edit::ReplaceByRename(c) => {
            let tmp = path.with_extension("edit-tmp");
            std::fs::write(&tmp, content_bytes(place, rel, c)).unwrap();
            std::fs::rename(&tmp, &path).unwrap();
        }
        Edit::Delete => std::fs::remove_file(&path).unwrap(),
        Edit::Add(_) => unreachable!("handled above"),
    }
    format!("{edit:?} {rel}")
}

/// The plan file of a dry run over S, with the verdict cache in `cache` or without one.
fn cache_plan(place: &Place, cache: Option<&Path>) -> Vec<u8> {
    let mut o = options(place, true);
    o.cache_dir = cache.map(Path::to_path_buf);
    o.cache_racy_margin_ns = CACHE_MARGIN_NS;
    let report = doctor::repair_sessions(&o).unwrap_or_else(|e| panic!("dry run: {e}"));
    doctor::plan_file_bytes(&report)
}

/// What the cache property saw over its cases: the edits of each kind, the plans compared,
/// and how many entries the cache held before each cached run (what it could answer for).
#[derive(Debug, Default)]
struct CacheTotals {
    sequences: u64,
    plans: u64,
    kept: u64,
    edits: BTreeMap<&'static str, u64>,
}

/// The name of an edit's kind, for the totals.
fn edit_kind(e: &Edit) -> &'static str {
    match e {
        Edit::Rewrite(_) => "rewrite",
        Edit::Truncate(_) => "truncate",
        Edit::TouchSameMtime => "touch",
        Edit::ReplaceByRename(_) => "rename",
        Edit::Delete => "delete",
        Edit::Add(_) => "add",
    }
}

/// Writes `case`, then after each edit of `edits` compares the plan of a dry run that reads
/// and writes the cache with the plan of one that has none.
fn check_cache(
    case: &StoreCase,
    edits: &[(Edit, usize)],
    totals: &mut CacheTotals,
) -> Result<(), TestCaseError> {
    let place = Place::new();
    write_store(&place, case);
    let cache = place.work.join("cache");
    let mut done = vec!["the store as written".to_owned()];
    totals.sequences += 1;
    for step in 0..=edits.len() {
        if step > 0 {
            let (edit, target) = &edits[step - 1];
            done.push(apply_edit(&place, edit, *target));
            *totals.edits.entry(edit_kind(edit)).or_default() += 1;
        }
        std::thread::sleep(CACHE_WAIT);
        let root = fsroot::Root::open(&place.s).unwrap();
        totals.kept += store::cache::VerdictCache::open(&cache, &root, 0)
            .stats()
            .loaded;
        drop(root);
        totals.plans += 1;
        let cached = cache_plan(&place, Some(&cache));
        let uncached = cache_plan(&place, None);
        prop_assert!(
            cached == uncached,
            "after {}:\ncached plan:\n{}\nuncached plan:\n{}",
            done.join(", then "),
            String::from_utf8_lossy(&cached),
            String::from_utf8_lossy(&uncached)
        );
    }
    Ok(())
}

#[test]
fn a_cached_plan_is_the_uncached_plan_after_every_edit() {
    let mut runner = TestRunner::new(config());
    let edits = proptest::collection::vec((edit(), any::<usize>()), 1..=6);
    let totals = std::cell::RefCell::new(CacheTotals::default());
    let result = runner.run(&(store_case(), edits), |(case, edits)| {
        check_cache(&case, &edits, &mut totals.borrow_mut())
    });
    if let Err(e) = result {
        panic!("{e}");
    }
    let t = totals.into_inner();
    let kinds: Vec<String> = t.edits.iter().map(|(k, n)| format!("{k}={n}")).collect();
    println!(
        "property totals: sequences={} plans={} kept={} [{}]",
        t.sequences,
        t.plans,
        t.kept,
        kinds.join(" ")
    );
    // The cache answered for files in these cases, or the comparison proved nothing.
    assert!(t.kept > 0, "no run found a kept entry: {t:?}");
}
