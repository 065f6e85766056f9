//! `host-sim`: test support that plays a host application with the library's own protocol.
//!
//! `host-sim open-store SESSIONS STORE [--pause-after-open]` acquires the store with
//! `StoreOwnerLock::acquire` and prints `owned attempts=<n>` (or `held`), then keeps it until
//! its standard input closes. With `--pause-after-open` it prints `opened` after opening the
//! lock file and waits for one line on stdin before locking: the window in which a doctor run
//! may move the file, so a test can prove that the host then reopens the path.
//!
//! `host-sim simulate SESSIONS --seconds N --seed K --journal FILE` plays a busy host for N
//! seconds: it creates, saves, closes, resumes, deletes and abandons sessions continuously, the
//! way a real host does (see [`Sim::run`]), and logs every item it held and every file it saved
//! to FILE, one JSON object a line, so a test can check afterwards that a doctor running beside
//! it touched nothing it held and lost nothing it saved. It prints one line of counts at the
//! end and exits 0, or 1 when it saw a violation.
//!
//! It writes the store the way Codewhale does (store-format.md, "Version 2"): documents with
//! content blocks bound by the store's absolute canonical path and its execution scope, thread
//! records with the app's required fields and a checkpoint of the saved messages, flat
//! `turns/<turn id>.json` and `items/<item id>.json`. Its records come from the builder the
//! doctor's tests and the benchmark share (`test_support::session`), so it depends on no model
//! type of the library.

use std::collections::{BTreeMap, BTreeSet};
use std::io::{BufRead, Write};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use fsroot::WritableRoot;
use serde_json::{json, Map, Value};

use store::host::{Acquired, LiveLease, StoreOwnerLock};
use store::Timestamp;
use test_support::session::{self, pretty, text_message, Checkpoint, Document, Item, Thread, Turn};
use test_support::SplitMix64;

fn say(line: &str) {
    let mut out = std::io::stdout();
    let _ = writeln!(out, "{line}");
    let _ = out.flush();
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.first().map(String::as_str) == Some("simulate") {
        std::process::exit(simulate_main(&args[1..]));
    }
    let [cmd, sessions, store, rest @ ..] = args.as_slice() else {
        eprintln!("usage: host-sim open-store SESSIONS STORE [--pause-after-open]");
        eprintln!("       host-sim simulate SESSIONS --seconds N --seed K --journal FILE");
        std::process::exit(2);
    };
    assert_eq!(cmd, "open-store", "host-sim: unknown command {cmd}");
    let pause = rest.iter().any(|a| a == "--pause-after-open");
    let root = WritableRoot::open(Path::new(sessions)).unwrap_or_else(|e| panic!("host-sim: {e}"));
    let stdin = std::io::stdin();
    let mut attempts = 0;
    let acquired = StoreOwnerLock::acquire_observed(&root, store, &mut |n| {
        attempts = n;
        if pause && n == 1 {
            say("opened");
            let mut line = String::new();
            let _ = stdin.lock().read_line(&mut line);
        }
    })
    .unwrap_or_else(|e| panic!("host-sim: {e}"));
    let _owned = match acquired {
        Acquired::Owned(lock) => {
            say(&format!("owned attempts={attempts}"));
            Some(lock)
        }
        Acquired::Held => {
            say("held");
            None
        }
    };
    let mut sink = String::new();
    while stdin
        .lock()
        .read_line(&mut sink)
        .map(|n| n > 0)
        .unwrap_or(false)
    {
        sink.clear();
    }
}

// ---------------------------------------------------------------------------------------------
// simulate
// ---------------------------------------------------------------------------------------------

struct SimArgs {
    sessions: PathBuf,
    seconds: u64,
    seed: u64,
    journal: PathBuf,
}

fn parse_sim_args(args: &[String]) -> Result<SimArgs, String> {
    let mut it = args.iter();
    let sessions = it.next().ok_or("missing SESSIONS")?.into();
    let (mut seconds, mut seed, mut journal) = (None, 0, None);
    while let Some(flag) = it.next() {
        let value = it.next().ok_or(format!("{flag} needs a value"))?;
        match flag.as_str() {
            "--seconds" => seconds = Some(value.parse().map_err(|e| format!("--seconds: {e}"))?),
            "--seed" => seed = value.parse().map_err(|e| format!("--seed: {e}"))?,
            "--journal" => journal = Some(PathBuf::from(value)),
            other => return Err(format!("unknown flag {other}")),
        }
    }
    Ok(SimArgs {
        sessions,
        seconds: seconds.ok_or("missing --seconds")?,
        seed,
        journal: journal.ok_or("missing --journal")?,
    })
}

fn simulate_main(args: &[String]) -> i32 {
    let args = match parse_sim_args(args) {
        Ok(a) => a,
        Err(e) => {
            eprintln!("host-sim simulate: {e}");
            eprintln!("usage: host-sim simulate SESSIONS --seconds N --seed K --journal FILE");
            return 2;
        }
    };
    let sessions = WritableRoot::open(&args.sessions)
        .unwrap_or_else(|e| panic!("host-sim: cannot open the sessions directory: {e}"));
    // The app records a store's canonical path in the documents that bind it.
    let canonical = args
        .sessions
        .canonicalize()
        .unwrap_or_else(|e| panic!("host-sim: cannot canonicalize the sessions directory: {e}"));
    let journal = Journal::open(&args.journal);
    let mut sim = Sim {
        root: sessions,
        canonical,
        journal,
        rng: SplitMix64(args.seed ^ 0x9e37_79b9_7f4a_7c15),
        seed: args.seed,
        start: Instant::now(),
        next_id: 0,
        open: Vec::new(),
        at_rest: Vec::new(),
        counts: BTreeMap::new(),
    };
    sim.run(Duration::from_secs(args.seconds));
    let c = &sim.counts;
    let get = |k: &str| c.get(k).copied().unwrap_or(0);
    let ops = ["create", "save", "close", "resume", "delete", "abandon"]
        .iter()
        .map(|k| get(k))
        .sum::<u64>();
    sim.journal
        .line(json!({ "op": "summary", "ops": ops, "counts": c }));
    say(&format!(
        "ops={ops} created={} saved={} closed={} resumed={} deleted={} abandoned={} \
         files_written={} files_verified={} busy={} interfered={} changed_at_rest={} \
         violations={}",
        get("create"),
        get("save"),
        get("close"),
        get("resume"),
        get("delete"),
        get("abandon"),
        get("files_written"),
        get("files_verified"),
        get("busy"),
        get("interfered"),
        get("changed_at_rest"),
        get("violations"),
    ));
    i32::from(get("violations") > 0)
}

/// The JSON-lines journal, appended (and fsynced) line by line through a root opened at its
/// directory.
struct Journal {
    root: WritableRoot,
    name: PathBuf,
}

impl Journal {
    fn open(path: &Path) -> Journal {
        let parent = path
            .parent()
            .filter(|p| !p.as_os_str().is_empty())
            .unwrap_or(Path::new("."));
        let name = PathBuf::from(path.file_name().expect("--journal needs a file name"));
        let root = WritableRoot::open(parent)
            .unwrap_or_else(|e| panic!("host-sim: cannot open the journal's directory: {e}"));
        Journal { root, name }
    }

    fn line(&self, value: Value) {
        let mut bytes = serde_json::to_vec(&value).expect("journal line serializes");
        bytes.push(b'\n');
        self.root
            .append(&self.name, &bytes)
            .unwrap_or_else(|e| panic!("host-sim: cannot write the journal: {e}"));
    }
}

/// One session of the host: what it last wrote (paths relative to S), and, while it is open,
/// the live lease and the store's owner lock.
struct Session {
    id: String,
    tid: String,
    /// Every file this host wrote for the session and did not remove: path -> bytes.
    files: BTreeMap<String, Vec<u8>>,
    /// The conversation so far, as the document holds it.
    messages: Vec<Value>,
    /// The store's `owner_id`.
    owner_id: String,
    /// When the session was created (its thread's and its document's `created_at`).
    created_at: String,
    turns: u64,
    /// The sum of the turns' input and output tokens.
    tokens: u64,
    document_written: bool,
    /// Entries others added while the session rested, accepted as part of its state.
    foreign: BTreeSet<String>,
    held: Option<(LiveLease, StoreOwnerLock)>,
}

/// What may have happened to a session since the host last checked it.
#[derive(Clone, Copy)]
enum When {
    /// The host held it all along.
    Held,
    /// It rested unheld and was just taken again.
    Retaken,
}

impl Session {
    fn store(&self) -> String {
        format!("{}/runtime", self.id)
    }
    fn document(&self) -> String {
        format!("{}.json", self.id)
    }
}

struct Sim {
    root: WritableRoot,
    /// The canonical path of the sessions directory.
    canonical: PathBuf,
    journal: Journal,
    rng: SplitMix64,
    seed: u64,
    start: Instant,
    next_id: u64,
    /// Sessions this process has open (lease and owner lock held).
    open: Vec<Session>,
    /// Sessions saved and closed: nobody holds them; the doctor must still leave them alone,
    /// since each is a readable document bound to its store.
    at_rest: Vec<Session>,
    counts: BTreeMap<&'static str, u64>,
}

/// The most sessions open at once, and at rest before the host prefers deleting.
const MAX_OPEN: usize = 6;
const MAX_AT_REST: usize = 30;

impl Sim {
    /// The loop: until the deadline, one operation at a time, picked at random among those that
    /// apply:
    ///
    /// - **create**: a new session id; take its live lease (`LiveLease::acquire`), then its
    ///   store (`StoreOwnerLock::acquire`, which creates `<id>/runtime`), then write
    ///   `owner.json` and `state.json`. The session stays open.
    /// - **save**: an open session gains a turn: its two items, the turn record, the thread
    ///   record (bound to the session, with a checkpoint), `state.json`, then the document,
    ///   every one with `write_atomic`, under the held lease and lock.
    /// - **close**: an open, saved session releases its locks and rests.
    /// - **resume**: a resting session is taken again (lease, then lock; while the doctor's
    ///   probe holds either for an instant, the attempt counts as `busy` and is retried).
    /// - **delete**: an open session (a resting one is resumed first) removes its document and
    ///   its store's work (`threads/`, `turns/`, `items/`, `state.json`), writes the tombstone
    ///   `.late-usage/<id>.deleted` and releases. The empty store is the doctor's to set aside.
    /// - **abandon**: a crash before the first document: an open session writes a turn and its
    ///   bound thread record, then drops its locks without a document. No document binds the
    ///   store, so the orphan is the doctor's to repair (R4 unbinds the thread, R3 recovers it
    ///   as the document `th-<id>.json`); the host never comes back to it.
    ///
    /// Before every operation on a session it holds, right after taking one again, and right
    /// before letting go of one it deletes or abandons, the host verifies that every file it
    /// wrote is at its path, byte for byte, and that its store, threads and turns hold no entry
    /// it did not write ([`Sim::verify`]): a difference while it held the session, or a file
    /// gone at any time, is a violation. A write whose temporary file vanished under it is
    /// counted as `interfered` and retried.
    ///
    /// At the end it closes what is open (abandoning what has no document yet) and takes every
    /// resting session once more to verify it.
    fn run(&mut self, duration: Duration) {
        let deadline = self.start + duration;
        while Instant::now() < deadline {
            let r = self.rng.below(100);
            if self.open.is_empty() || (r < 14 && self.open.len() < MAX_OPEN) {
                self.create();
            } else if r < 50 {
                let i = self.rng.below(self.open.len() as u64) as usize;
                self.save(i);
            } else if r < 64 {
                let i = self.rng.below(self.open.len() as u64) as usize;
                if self.open[i].document_written {
                    self.close(i);
                } else {
                    self.save(i);
                }
            } else if r < 80 {
                if !self.at_rest.is_empty() && self.open.len() < MAX_OPEN {
                    let i = self.rng.below(self.at_rest.len() as u64) as usize;
                    self.resume(i);
                }
            } else if r < 86 || self.at_rest.len() > MAX_AT_REST {
                self.delete_one();
            } else if r < 90 {
                self.abandon_one();
            } else {
                std::thread::sleep(Duration::from_millis(1 + self.rng.below(4)));
            }
        }
        while !self.open.is_empty() {
            let i = self.open.len() - 1;
            if self.open[i].document_written {
                self.close(i);
            } else {
                self.abandon(i);
            }
        }
        for mut s in std::mem::take(&mut self.at_rest) {
            match self.take(&s.id) {
                Some(held) => {
                    s.held = Some(held);
                    self.verify(&mut s, When::Retaken);
                    s.held = None;
                }
                None => self.violation(
                    &s.id,
                    &s.document(),
                    "cannot take it for the final check".into(),
                ),
            }
            self.log(
                "final",
                &s.id,
                Map::from_iter([("files".into(), s.files.len().into())]),
            );
            self.at_rest.push(s);
        }
    }

    fn count(&mut self, what: &'static str) {
        *self.counts.entry(what).or_default() += 1;
    }

    fn log(&self, op: &str, id: &str, mut extra: Map<String, Value>) {
        extra.insert("t".into(), (self.start.elapsed().as_millis() as u64).into());
        extra.insert("op".into(), op.into());
        extra.insert("id".into(), id.into());
        self.journal.line(Value::Object(extra));
    }

    fn violation(&mut self, id: &str, path: &str, why: String) {
        eprintln!("host-sim: VIOLATION {id}: {path}: {why}");
        self.count("violations");
        self.log(
            "violation",
            id,
            Map::from_iter([("path".into(), path.into()), ("why".into(), why.into())]),
        );
    }

    fn now(&self) -> String {
        Timestamp(1_788_000_000 + self.start.elapsed().as_millis() as i64 / 10).to_string()
    }

    /// Takes the lease of `id`, then the owner lock of its store, each a few times if the
    /// doctor's probe holds it for an instant. The lease is kept while the store lock is
    /// retried: as long as a session's lease is held, the doctor treats the session as live,
    /// whatever state its files are in (a store without its document yet, a thread bound to a
    /// document not written yet).
    fn take(&mut self, id: &str) -> Option<(LiveLease, StoreOwnerLock)> {
        let store = format!("{id}/runtime");
        let mut lease = None;
        for _ in 0..20 {
            match LiveLease::acquire(&self.root, id) {
                Ok(Acquired::Owned(l)) => {
                    lease = Some(l);
                    break;
                }
                Ok(Acquired::Held) => {
                    self.count("busy");
                    std::thread::sleep(Duration::from_millis(1));
                }
                Err(e) => {
                    self.violation(id, ".late-usage", format!("cannot take the lease: {e}"));
                    return None;
                }
            }
        }
        let Some(lease) = lease else {
            self.log("busy", id, Map::new());
            return None;
        };
        for _ in 0..20 {
            match StoreOwnerLock::acquire(&self.root, &store) {
                Ok(Acquired::Owned(lock)) => {
                    self.log(
                        "held",
                        id,
                        Map::from_iter([
                            ("lease".into(), format!(".late-usage/{id}.live").into()),
                            ("store".into(), store.clone().into()),
                        ]),
                    );
                    return Some((lease, lock));
                }
                Ok(Acquired::Held) => {
                    self.count("busy");
                    std::thread::sleep(Duration::from_millis(1));
                }
                Err(e) => {
                    self.violation(id, &store, format!("cannot take the store: {e}"));
                    return None;
                }
            }
        }
        self.log("busy", id, Map::new());
        None
    }

    /// Writes `rel` atomically as the app does (platforms.md §6): on Windows a replace refused
    /// with error 5, 32 or 33 (a reader holding the target open, such as a doctor scanning the
    /// store) is tried again, up to 6 attempts, 10·2ⁿ ms apart; on Unix no error is transient.
    fn write_atomic(&self, rel: &str, bytes: &[u8]) -> fsroot::Result<()> {
        let mut attempt = 0;
        loop {
            match self.root.write_atomic(Path::new(rel), bytes) {
                Err(e) if e.is_transient() && attempt < 5 => {
                    eprintln!("host-sim: retrying {rel}: {e}");
                    std::thread::sleep(Duration::from_millis(10 << attempt));
                    attempt += 1;
                }
                done => return done,
            }
        }
    }

    /// Writes one file of a held session atomically and remembers it. A write whose own
    /// temporary file vanished under it (someone removed it between its creation and the
    /// rename) is counted as `interfered`, journaled, and retried.
    fn put(&mut self, s: &mut Session, rel: String, bytes: Vec<u8>) {
        for attempt in 1..=5 {
            match self.write_atomic(&rel, &bytes) {
                Ok(()) => break,
                Err(e) if e.is_not_found() && attempt < 5 => {
                    eprintln!("host-sim: interfered {rel}: {e}");
                    self.count("interfered");
                    self.log(
                        "interfered",
                        &s.id,
                        Map::from_iter([
                            ("path".into(), rel.clone().into()),
                            ("error".into(), e.to_string().into()),
                        ]),
                    );
                }
                Err(e) => {
                    self.violation(&s.id, &rel, format!("write failed: {e}"));
                    return;
                }
            }
        }
        let digest = store::digest_of(&bytes);
        self.count("files_written");
        self.log(
            "saved",
            &s.id,
            Map::from_iter([
                ("path".into(), rel.clone().into()),
                ("sha256".into(), digest.sha256.into()),
                ("bytes".into(), digest.bytes.into()),
            ]),
        );
        s.files.insert(rel, bytes);
    }

    /// Every file of `s` is at its path with the bytes last written, and its store, threads,
    /// turns and items hold no entry the host did not write.
    ///
    /// `when` says what may have happened since the last check. [`When::Held`]: the session was
    /// held all along, so any difference is a violation (the doctor touched a held item). A
    /// file that is gone is a violation either way (a kept session lost a file).
    /// [`When::Retaken`]: it rested unheld in between, where the doctor may act on what it
    /// believes orphaned; a changed file or a new entry is journaled as `changed_at_rest` (the
    /// test decides whether it is explained) and adopted as the new state, so later checks
    /// compare against what is on disk now.
    fn verify(&mut self, s: &mut Session, when: When) {
        let mut n = 0;
        let mut changed: Vec<(String, String)> = Vec::new();
        let mut adopt: Vec<(String, Vec<u8>)> = Vec::new();
        for (rel, bytes) in &s.files {
            match self.root.read(Path::new(rel)) {
                Ok(now) if now == *bytes => n += 1,
                Ok(now) => {
                    changed.push((
                        rel.clone(),
                        format!("changed: {} bytes, expected {}", now.len(), bytes.len()),
                    ));
                    adopt.push((rel.clone(), now));
                }
                Err(e) => {
                    let id = s.id.clone();
                    self.violation(&id, rel, format!("lost: {e}"));
                }
            }
        }
        let store = s.store();
        for dir in [
            store.clone(),
            format!("{store}/threads"),
            format!("{store}/turns"),
            format!("{store}/items"),
        ] {
            let Ok(entries) = self.root.list(Path::new(&dir)) else {
                continue;
            };
            for e in entries {
                let rel = format!("{dir}/{}", e.name.to_string_lossy());
                let expected = s.files.contains_key(&rel)
                    || s.foreign.contains(&rel)
                    || rel == format!("{store}/runtime-process.owner.lock")
                    || rel == format!("{store}/threads")
                    || rel == format!("{store}/turns")
                    || rel == format!("{store}/items");
                if !expected {
                    changed.push((rel.clone(), "an entry the host did not write".into()));
                    s.foreign.insert(rel);
                }
            }
        }
        for (rel, why) in changed {
            match when {
                When::Held => self.violation(&s.id, &rel, format!("touched while held: {why}")),
                When::Retaken => {
                    eprintln!("host-sim: changed at rest {}: {rel}: {why}", s.id);
                    self.count("changed_at_rest");
                    self.log(
                        "changed_at_rest",
                        &s.id,
                        Map::from_iter([("path".into(), rel.into()), ("why".into(), why.into())]),
                    );
                }
            }
        }
        for (rel, bytes) in adopt {
            let digest = store::digest_of(&bytes);
            self.log(
                "adopted",
                &s.id,
                Map::from_iter([
                    ("path".into(), rel.clone().into()),
                    ("sha256".into(), digest.sha256.into()),
                    ("bytes".into(), digest.bytes.into()),
                ]),
            );
            s.files.insert(rel, bytes);
        }
        self.count("verifications");
        *self.counts.entry("files_verified").or_default() += n;
        self.log(
            "verified",
            &s.id,
            Map::from_iter([("files".into(), n.into())]),
        );
    }

    fn create(&mut self) {
        let id = format!("h{}-{}", self.seed, self.next_id);
        self.next_id += 1;
        let Some(held) = self.take(&id) else {
            return;
        };
        self.count("create");
        // `owner_<32 hex>`, as the app creates it.
        let owner_id = format!(
            "owner_{}",
            &store::digest_of(format!("{id} {}", self.seed).as_bytes()).sha256[..32]
        );
        let mut s = Session {
            tid: format!("th-{id}"),
            id,
            files: BTreeMap::new(),
            messages: Vec::new(),
            owner_id,
            created_at: self.now(),
            turns: 0,
            tokens: 0,
            document_written: false,
            foreign: BTreeSet::new(),
            held: Some(held),
        };
        let store = s.store();
        let owner = session::owner(&s.owner_id);
        self.put(&mut s, format!("{store}/owner.json"), pretty(&owner));
        self.put(
            &mut s,
            format!("{store}/state.json"),
            pretty(&session::state(1)),
        );
        self.open.push(s);
    }

    /// The binding of the documents of `s`: the store's absolute canonical path and its
    /// execution scope (SHA-256 of the owner id, a zero byte, `<store>/events.lock`).
    fn binding(&self, s: &Session) -> Value {
        let data_dir = store::relpath::native(&self.canonical, &s.store());
        session::binding(
            &data_dir.to_string_lossy(),
            &session::execution_scope(&s.owner_id, &data_dir),
        )
    }

    /// A new turn (its two items, then the turn record), the thread record bound to the
    /// session with a checkpoint of the conversation, `state.json`; with `document`, the
    /// document too.
    fn write_turn(&mut self, s: &mut Session, document: bool) {
        s.turns += 1;
        let n = s.turns;
        let at = self.now();
        let store = s.store();
        let turn_id = format!("turn_{}_{n}", s.tid);
        let question = format!("question {n} of {} (seed {})", s.id, self.seed);
        let answer = format!(
            "answer {n}: {}",
            "lorem ".repeat(1 + self.rng.below(40) as usize)
        );
        let items = [
            (format!("item_{}_{n}_u", s.tid), "user_message", question),
            (format!("item_{}_{n}_a", s.tid), "agent_message", answer),
        ];
        for (item_id, kind, text) in &items {
            let item = Item {
                id: item_id,
                turn_id: &turn_id,
                kind,
                summary: &session::summary(text),
                detail: text,
                started_at: &at,
                ended_at: &at,
            }
            .into_value();
            self.put(s, format!("{store}/items/{item_id}.json"), pretty(&item));
        }
        let (input_tokens, output_tokens) = (10 * n, 20 * n);
        let turn = Turn {
            id: &turn_id,
            thread_id: &s.tid,
            input_summary: &session::summary(&items[0].2),
            created_at: &at,
            started_at: &at,
            ended_at: &at,
            input_tokens,
            output_tokens,
            item_ids: items.iter().map(|(id, _, _)| id.clone()).collect(),
        }
        .into_value();
        self.put(s, format!("{store}/turns/{turn_id}.json"), pretty(&turn));
        s.tokens += input_tokens + output_tokens;
        s.messages.push(text_message("user", &items[0].2));
        s.messages.push(text_message("assistant", &items[1].2));

        let title = format!("Session {}", s.id);
        let record = Thread {
            id: &s.tid,
            created_at: &s.created_at,
            updated_at: &at,
            latest_turn_id: Some(json!(turn_id)),
            title: &title,
            session: Some(Checkpoint {
                session_id: json!(s.id),
                covered_turn_id: json!(turn_id),
                messages_sha256: &session::messages_sha256(&s.messages),
                messages_len: s.messages.len(),
            }),
        }
        .into_value();
        self.put(
            s,
            format!("{store}/threads/{}.json", s.tid),
            pretty(&record),
        );
        self.put(
            s,
            format!("{store}/state.json"),
            pretty(&session::state(n + 1)),
        );
        if document {
            let doc = Document {
                runtime_store: Some(self.binding(s)),
                created_at: &s.created_at,
                updated_at: &at,
                total_tokens: s.tokens,
                ..Document::new(&s.id, &title, s.messages.clone())
            }
            .into_value();
            let rel = s.document();
            self.put(s, rel, pretty(&doc));
            s.document_written = true;
        }
    }

    fn save(&mut self, i: usize) {
        let mut s = self.open.swap_remove(i);
        self.verify(&mut s, When::Held);
        self.write_turn(&mut s, true);
        self.count("save");
        self.open.push(s);
    }

    fn close(&mut self, i: usize) {
        let mut s = self.open.swap_remove(i);
        self.verify(&mut s, When::Held);
        s.held = None;
        self.count("close");
        self.log("released", &s.id, Map::new());
        self.at_rest.push(s);
    }

    fn resume(&mut self, i: usize) {
        let id = self.at_rest[i].id.clone();
        let Some(held) = self.take(&id) else {
            return;
        };
        let mut s = self.at_rest.swap_remove(i);
        s.held = Some(held);
        self.count("resume");
        self.verify(&mut s, When::Retaken);
        self.open.push(s);
    }

    fn delete_one(&mut self) {
        let candidates: Vec<usize> = (0..self.open.len())
            .filter(|&i| self.open[i].document_written)
            .collect();
        let i = if candidates.is_empty() {
            if self.at_rest.is_empty() || self.open.len() >= MAX_OPEN {
                return;
            }
            let r = self.rng.below(self.at_rest.len() as u64) as usize;
            let before = self.open.len();
            self.resume(r);
            if self.open.len() == before {
                return;
            }
            self.open.len() - 1
        } else {
            candidates[self.rng.below(candidates.len() as u64) as usize]
        };
        let mut s = self.open.swap_remove(i);
        self.verify(&mut s, When::Held);
        let store = s.store();
        let doomed = [
            s.document(),
            format!("{store}/threads"),
            format!("{store}/turns"),
            format!("{store}/items"),
            format!("{store}/state.json"),
        ];
        for rel in doomed {
            if let Err(e) = self.root.remove_tree(Path::new(&rel)) {
                self.violation(&s.id, &rel, format!("cannot remove: {e}"));
            }
            s.files
                .retain(|p, _| p != &rel && !p.starts_with(&format!("{rel}/")));
            self.log(
                "removed",
                &s.id,
                Map::from_iter([("path".into(), rel.into())]),
            );
        }
        let tombstone = format!(".late-usage/{}.deleted", s.id);
        if let Err(e) = self.write_atomic(&tombstone, b"") {
            self.violation(&s.id, &tombstone, format!("write failed: {e}"));
        }
        // What is left is still the host's until it lets go.
        self.verify(&mut s, When::Held);
        s.held = None;
        self.count("delete");
        self.log("deleted", &s.id, Map::new());
    }

    fn abandon_one(&mut self) {
        match self.open.iter().position(|s| !s.document_written) {
            Some(i) => self.abandon(i),
            None if self.open.len() < MAX_OPEN => {
                self.create();
                if self.open.last().is_some_and(|s| !s.document_written) {
                    let i = self.open.len() - 1;
                    self.abandon(i);
                }
            }
            None => {}
        }
    }

    /// A crash before the first document: a turn and the bound thread record are written, the
    /// locks are dropped, and the session is never touched again.
    fn abandon(&mut self, i: usize) {
        let mut s = self.open.swap_remove(i);
        self.verify(&mut s, When::Held);
        if s.turns == 0 {
            self.write_turn(&mut s, false);
        }
        self.verify(&mut s, When::Held);
        s.held = None;
        self.count("abandon");
        self.log("abandoned", &s.id, Map::new());
    }
}
