//! `cargo xtask bench`: the scale benchmark (docs/performance.md). Generates, deterministically
//! from a seed, session stores in the real format (store-format.md, Version 2) at two sizes,
//! builds the release `doctor`, and prints, from alternating measurements and their medians:
//! the in-process floor (a parallel listing of every directory plus a read of every file the dry
//! run must read), the dry run's wall time, their ratio, its peak RSS, and the linearity factor
//! between the two sizes. Then the apply benchmark: a real run that sets aside K documents
//! against a raw loop of the same renames and fsyncs.

use std::collections::HashSet;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant, SystemTime};

use rayon::prelude::*;

use serde_json::{json, Map, Value};
use test_support::session::{self, text_message, Checkpoint, Document, Item, Thread, Turn};
use test_support::SplitMix64;

use crate::Failure;

fn fail(e: impl std::fmt::Display) -> Failure {
    Failure::Failed(e.to_string())
}

/// The benchmark's generator: splitmix64 (`test_support::SplitMix64`, the stream the
/// simulated host uses too), with the shapes the stores are drawn from.
#[derive(Clone)]
struct Rng(SplitMix64);

impl Rng {
    fn below(&mut self, n: u64) -> u64 {
        self.0.below(n)
    }
    fn hex(&mut self, len: usize) -> String {
        self.0.hex(len)
    }
    fn uuid(&mut self) -> String {
        let h = self.hex(32);
        format!(
            "{}-{}-4{}-a{}-{}",
            &h[0..8],
            &h[8..12],
            &h[13..16],
            &h[17..20],
            &h[20..32]
        )
    }
    /// Prose of `min` to `min + spread` bytes.
    fn words_about(&mut self, min: usize, spread: u64) -> String {
        let len = min + self.below(spread) as usize;
        self.words(len)
    }
    /// Prose of about `len` bytes, JSON-safe.
    fn words(&mut self, len: usize) -> String {
        const WORDS: [&str; 24] = [
            "parser", "returns", "the", "error", "line", "column", "test", "fixture", "cargo",
            "build", "module", "trait", "async", "buffer", "index", "token", "array", "comma",
            "value", "schema", "store", "thread", "turn", "item",
        ];
        let mut s = String::with_capacity(len + 12);
        while s.len() < len {
            s.push_str(WORDS[self.below(WORDS.len() as u64) as usize]);
            s.push(if self.below(12) == 0 { '.' } else { ' ' });
        }
        s
    }
}

/// What one session of the generated store is.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    /// A readable document, its thread in its group's host store.
    Healthy,
    /// Truncated document (R1).
    Torn,
    /// `schema_version` 2 (kept).
    Newer,
    /// The document is gone; its thread still names it (R4).
    Deleted,
}

/// The stores and directories that hold no document (about 2% of the documents each).
#[derive(Clone, Copy, PartialEq, Eq)]
enum Extra {
    /// An unbound store with a thread, a turn and items (R3 recovers it).
    OrphanStore,
    /// An unbound store holding no work (R2).
    EmptyStore,
    /// An artifact-only directory, weeks old (R5).
    OldArtifacts,
}

/// Counts of what was generated.
#[derive(Default, Clone, Copy)]
struct Counts {
    files: u64,
    dirs: u64,
    bytes: u64,
}

impl std::ops::Add for Counts {
    type Output = Counts;
    fn add(self, o: Counts) -> Counts {
        Counts {
            files: self.files + o.files,
            dirs: self.dirs + o.dirs,
            bytes: self.bytes + o.bytes,
        }
    }
}

struct Writer<'a> {
    s: &'a Path,
    counts: Counts,
}

impl Writer<'_> {
    fn dir(&mut self, rel: &str) -> Result<(), Failure> {
        std::fs::create_dir_all(self.s.join(rel)).map_err(fail)?;
        self.counts.dirs += 1;
        Ok(())
    }
    fn file(&mut self, rel: &str, bytes: &[u8]) -> Result<(), Failure> {
        std::fs::write(self.s.join(rel), bytes).map_err(fail)?;
        self.counts.files += 1;
        self.counts.bytes += bytes.len() as u64;
        Ok(())
    }
}

/// The shape of a generated store: how big its documents are, how many share a host store,
/// how many thread records each has, and how many directories no document names.
#[derive(Clone, Copy, Debug)]
struct Shape {
    name: &'static str,
    /// Rounds of four messages (user text, thinking with a tool call, its result, assistant
    /// text) per document.
    rounds: u32,
    /// Bytes of prose of a user or assistant text: at least `.0`, up to `.0 + .1`.
    text: (usize, u64),
    /// Bytes of a thinking block.
    thinking: usize,
    /// Bytes of a tool result: at least `.0`, up to `.0 + .1`.
    tool: (usize, u64),
    /// Documents per host store (the store all of them bind).
    group: usize,
    /// Thread records per document in its host store (the first with a turn and two items).
    threads: u32,
    /// Percent, per document, of each kind of directory no document names ([`Extra`]).
    extra_pct: u64,
}

/// The shape of the earlier benchmarks: about 14 KiB per document, 50 per host store.
const STANDARD: Shape = Shape {
    name: "standard",
    rounds: 3,
    text: (350, 550),
    thinking: 300,
    tool: (1500, 1500),
    group: 50,
    threads: 1,
    extra_pct: 2,
};

/// The shapes `cargo xtask bench --shape` knows (docs/performance.md, "Shapes").
const SHAPES: [Shape; 4] = [
    STANDARD,
    // About 3.5 KiB per document, one thread each, a host store per 12 documents.
    Shape {
        name: "small",
        rounds: 1,
        text: (150, 250),
        thinking: 120,
        tool: (500, 600),
        group: 12,
        ..STANDARD
    },
    // About 200 KiB per document: long tool outputs.
    Shape {
        name: "large",
        rounds: 6,
        text: (400, 600),
        thinking: 400,
        tool: (30_000, 5_000),
        ..STANDARD
    },
    // Standard documents, but most directories are orphans: for each document, a quarter
    // chance each of an orphan store with work, an empty store and an old artifact directory.
    Shape {
        name: "orphans",
        extra_pct: 25,
        ..STANDARD
    },
];

fn shape_named(name: &str) -> Option<Shape> {
    SHAPES.iter().copied().find(|s| s.name == name)
}

impl Shape {
    /// This shape with documents of about `kb` KiB on average: the tool results, which hold
    /// most of a document's bytes, are scaled to fill what the rest leaves.
    fn with_doc_kb(mut self, kb: usize) -> Shape {
        let rounds = self.rounds as usize;
        let rest = rounds * (2 * self.text.0 + self.text.1 as usize + self.thinking + 500) + 900;
        // One document in three repeats its last round in its journal.
        let per = (kb * 1024).saturating_sub(rest) * 3 / (3 * rounds + 1);
        self.tool = (per * 3 / 4, (per / 2).max(1) as u64);
        self
    }

    /// The store's directory name: the shape and every knob, so a kept store is reused only
    /// for the same shape.
    fn tag(&self) -> String {
        format!(
            "{}-r{}-k{}-g{}-t{}-x{}",
            self.name, self.rounds, self.tool.0, self.group, self.threads, self.extra_pct
        )
    }
}
/// When every generated document, thread, turn and item was created and updated.
const T0: &str = session::CREATED_AT;

/// `value` as the compact JSON the benchmark writes, its strings (words, ids, paths) copied as
/// they are ([`session::write_verbatim`]).
fn compact(value: &Value) -> String {
    let mut out = String::new();
    session::write_verbatim(value, &mut out);
    out
}

/// A document of `shape`'s size (the standard shape: about 16 KB, twelve messages of text,
/// thinking, tool use and tool results), and for one document in three a journal of message
/// entries.
fn document(
    rng: &mut Rng,
    shape: &Shape,
    id: &str,
    data_dir: &str,
    scope: &str,
    version: u32,
) -> String {
    let mut messages = Vec::new();
    for turn in 0..shape.rounds {
        let call = format!("call_{}", rng.hex(8));
        messages.push(text_message(
            "user",
            &rng.words_about(shape.text.0 - 50, shape.text.1 - 50),
        ));
        messages.push(json!({
            "role": "assistant",
            "content": [
                { "type": "thinking", "thinking": rng.words(shape.thinking) },
                {
                    "type": "tool_use",
                    "id": call,
                    "name": "read_file",
                    "input": { "path": format!("src/m{turn}.rs") }
                }
            ]
        }));
        messages.push(json!({
            "role": "user",
            "content": [{
                "type": "tool_result",
                "tool_use_id": call,
                "content": rng.words_about(shape.tool.0, shape.tool.1)
            }]
        }));
        messages.push(text_message(
            "assistant",
            &rng.words_about(shape.text.0 + 50, shape.text.1 + 50),
        ));
    }
    let mut journal = None;
    if rng.below(3) == 0 && !messages.is_empty() {
        let mut entries = Vec::new();
        let mut parent: Option<String> = None;
        for m in messages.iter().rev().take(4).rev() {
            let eid = rng.uuid();
            let mut entry = Map::new();
            entry.insert("id".into(), eid.clone().into());
            if let Some(p) = parent {
                entry.insert("parent_id".into(), p.into());
            }
            entry.insert("kind".into(), "message".into());
            entry.insert("message".into(), m.clone());
            entry.insert("created_at".into(), T0.into());
            entry.insert("spawn_depth".into(), 0.into());
            entries.push(Value::Object(entry));
            parent = Some(eid);
        }
        journal = Some(json!({
            "entries": entries,
            "leaf_id": parent,
            "schema_version": 1,
            "spawn_depth": 0
        }));
    }
    let title = rng.words(30);
    let mut out = String::new();
    Document {
        schema_version: version.into(),
        runtime_store: Some(session::binding(data_dir, scope)),
        created_at: T0,
        updated_at: T0,
        total_tokens: rng.below(50_000),
        journal,
        system_prompt: false,
        ..Document::new(id, title.trim(), messages)
    }
    .write_verbatim(&mut out);
    out
}

fn thread(rng: &mut Rng, tid: &str, session: Option<&str>, turns: u32) -> String {
    let latest = if turns > 0 {
        json!(format!("turn_{tid}_{turns}"))
    } else {
        Value::Null
    };
    let title = rng.words(30);
    let fingerprint = rng.hex(64);
    let mut out = String::new();
    Thread {
        id: tid,
        created_at: T0,
        updated_at: T0,
        latest_turn_id: Some(latest.clone()),
        title: title.trim(),
        session: Some(Checkpoint {
            session_id: json!(session),
            covered_turn_id: latest,
            messages_sha256: &fingerprint,
            messages_len: 12,
        }),
    }
    .write_verbatim(&mut out);
    out
}

fn turn(rng: &mut Rng, tid: &str, n: u32, items: u32) -> String {
    let summary = rng.words(60);
    let mut out = String::new();
    Turn {
        id: &format!("turn_{tid}_{n}"),
        thread_id: tid,
        input_summary: summary.trim(),
        created_at: T0,
        started_at: T0,
        ended_at: T0,
        input_tokens: rng.below(5000),
        output_tokens: rng.below(2000),
        item_ids: (1..=items).map(|i| format!("item_{tid}_{n}_{i}")).collect(),
    }
    .write_verbatim(&mut out);
    out
}

fn item(rng: &mut Rng, tid: &str, n: u32, i: u32) -> String {
    let (kind, detail) = if i % 2 == 1 {
        ("user_message", rng.words(400))
    } else {
        ("agent_message", rng.words(800))
    };
    let summary = rng.words(50);
    let mut out = String::new();
    Item {
        id: &format!("item_{tid}_{n}_{i}"),
        turn_id: &format!("turn_{tid}_{n}"),
        kind,
        summary: summary.trim(),
        detail: &detail,
        started_at: T0,
        ended_at: T0,
    }
    .write_verbatim(&mut out);
    out
}

/// The files of a runtime store that hold no work: owner record, sequence state, lock files.
fn store_skeleton(
    w: &mut Writer,
    rng: &mut Rng,
    store: &str,
    next_seq: u64,
) -> Result<(), Failure> {
    w.dir(store)?;
    w.file(
        &format!("{store}/owner.json"),
        compact(&session::owner(&format!("owner_{}", rng.hex(32)))).as_bytes(),
    )?;
    w.file(
        &format!("{store}/state.json"),
        compact(&session::state(next_seq)).as_bytes(),
    )?;
    w.file(&format!("{store}/runtime-process.owner.lock"), b"")?;
    w.file(&format!("{store}/events.lock"), b"")
}

/// A thread with one turn of two items in `store`.
fn thread_with_turn(
    w: &mut Writer,
    rng: &mut Rng,
    store: &str,
    tid: &str,
    session: Option<&str>,
) -> Result<(), Failure> {
    w.file(
        &format!("{store}/threads/{tid}.json"),
        thread(rng, tid, session, 1).as_bytes(),
    )?;
    w.file(
        &format!("{store}/turns/turn_{tid}_1.json"),
        turn(rng, tid, 1, 2).as_bytes(),
    )?;
    for i in 1..=2 {
        w.file(
            &format!("{store}/items/item_{tid}_1_{i}.json"),
            item(rng, tid, 1, i).as_bytes(),
        )?;
    }
    Ok(())
}

/// One group of `shape.group` sessions: their documents, the host store that holds their threads,
/// and the group's share of stores and directories no document names. Returns what it wrote and
/// the orphan stores (whose turns and items a dry run reads).
fn generate_group(
    s: &Path,
    abs: &str,
    shape: &Shape,
    seed: u64,
    group: usize,
    sessions: usize,
) -> Result<(Counts, Vec<String>), Failure> {
    let mut rng = Rng(SplitMix64(
        seed ^ (group as u64).wrapping_mul(0x2545_f491_4f6c_dd1d),
    ));
    let mut w = Writer {
        s,
        counts: Counts::default(),
    };
    let mut orphans = Vec::new();
    let ids: Vec<String> = (0..sessions).map(|_| rng.uuid()).collect();
    let host = &ids[0];
    let store = format!("{host}/runtime");
    w.dir(host)?;
    store_skeleton(&mut w, &mut rng, &store, 1 + 2 * sessions as u64)?;
    for d in ["threads", "turns", "items"] {
        w.dir(&format!("{store}/{d}"))?;
    }
    let data_dir = format!("{abs}/{store}");
    let scope = rng.hex(64);
    for id in &ids {
        let kind = match rng.below(100) {
            0 | 1 => Kind::Torn,
            2 | 3 => Kind::Newer,
            4 | 5 => Kind::Deleted,
            _ => Kind::Healthy,
        };
        let tid = format!("th-{}", &rng.uuid()[..18]);
        thread_with_turn(&mut w, &mut rng, &store, &tid, Some(id))?;
        for _ in 1..shape.threads {
            let tid = format!("th-{}", &rng.uuid()[..18]);
            w.file(
                &format!("{store}/threads/{tid}.json"),
                thread(&mut rng, &tid, Some(id), 0).as_bytes(),
            )?;
        }
        if kind == Kind::Deleted {
            continue;
        }
        let version = if kind == Kind::Newer { 2 } else { 1 };
        let mut doc = document(&mut rng, shape, id, &data_dir, &scope, version).into_bytes();
        if kind == Kind::Torn {
            let cut = doc.len() / 2 + rng.below(doc.len() as u64 / 3) as usize;
            doc.truncate(cut);
        }
        w.file(&format!("{id}.json"), &doc)?;
        if rng.below(50) == 0 && kind == Kind::Healthy {
            w.file(&format!("checkpoints/{id}.json"), &doc)?;
        }
        match rng.below(100) {
            0 | 1 => w.file(&format!(".late-usage/{id}.live"), b"")?,
            2 | 3 => w.file(&format!(".late-usage/{id}.lock"), b"")?,
            _ => {}
        }
    }
    // `shape.extra_pct` percent of the documents each: stores and directories no document
    // names.
    let pct = shape.extra_pct;
    for _ in 0..sessions {
        let extra = match rng.below(100) {
            d if d < pct => Extra::OrphanStore,
            d if d < 2 * pct => Extra::EmptyStore,
            d if d < 3 * pct => Extra::OldArtifacts,
            _ => continue,
        };
        let id = rng.uuid();
        w.dir(&id)?;
        match extra {
            Extra::OrphanStore => {
                let store = format!("{id}/runtime");
                store_skeleton(&mut w, &mut rng, &store, 3)?;
                for d in ["threads", "turns", "items"] {
                    w.dir(&format!("{store}/{d}"))?;
                }
                let tid = format!("th-{}", &rng.uuid()[..18]);
                thread_with_turn(&mut w, &mut rng, &store, &tid, None)?;
                orphans.push(store);
            }
            Extra::EmptyStore => {
                let store = format!("{id}/runtime");
                store_skeleton(&mut w, &mut rng, &store, 1)?;
                w.dir(&format!("{store}/threads"))?;
            }
            Extra::OldArtifacts => {
                w.dir(&format!("{id}/artifacts"))?;
                let log = format!("{id}/artifacts/build.log");
                w.file(&log, rng.words(4000).as_bytes())?;
                let old = SystemTime::UNIX_EPOCH + Duration::from_secs(1_760_000_000);
                for p in [log, format!("{id}/artifacts"), id.clone()] {
                    std::fs::File::open(s.join(p))
                        .and_then(|f| f.set_modified(old))
                        .map_err(fail)?;
                }
            }
        }
    }
    Ok((w.counts, orphans))
}

/// A generated store.
struct Store {
    s: PathBuf,
    docs: usize,
    counts: Counts,
    /// Stores whose turns and items a dry run reads (R3 recovers their threads).
    orphans: HashSet<String>,
}

/// Writes a store of `docs` documents of `shape` into `s` (which must not exist), in parallel by
/// group.
fn generate(s: &Path, shape: &Shape, docs: usize, seed: u64) -> Result<Store, Failure> {
    std::fs::create_dir_all(s.join("checkpoints")).map_err(fail)?;
    std::fs::create_dir_all(s.join(".late-usage")).map_err(fail)?;
    let abs = s.canonicalize().map_err(fail)?;
    let abs = abs.to_string_lossy().into_owned();
    let groups = docs.div_ceil(shape.group);
    let parts: Vec<(Counts, Vec<String>)> = (0..groups)
        .into_par_iter()
        .map(|g| {
            let n = shape.group.min(docs - g * shape.group);
            generate_group(s, &abs, shape, seed, g, n)
        })
        .collect::<Result<_, _>>()?;
    let mut counts = Counts {
        files: 0,
        dirs: 3,
        bytes: 0,
    };
    let mut orphans = HashSet::new();
    for (c, o) in parts {
        counts = counts + c;
        orphans.extend(o);
    }
    Ok(Store {
        s: s.to_path_buf(),
        docs,
        counts,
        orphans,
    })
}

/// [`generate`], or with `--keep`, the store a previous run generated at `s` from the same
/// shape, size and seed (a `.done` file beside it records its counts and orphan stores).
fn generate_or_reuse(s: &Path, shape: &Shape, docs: usize, seed: u64) -> Result<Store, Failure> {
    let done = s.with_extension("done");
    if let Ok(text) = std::fs::read_to_string(&done) {
        let mut lines = text.lines();
        let nums: Vec<u64> = lines
            .next()
            .unwrap_or_default()
            .split(' ')
            .filter_map(|n| n.parse().ok())
            .collect();
        if let [files, dirs, bytes] = nums[..] {
            return Ok(Store {
                s: s.to_path_buf(),
                docs,
                counts: Counts { files, dirs, bytes },
                orphans: lines.map(str::to_owned).collect(),
            });
        }
    }
    if s.exists() {
        std::fs::remove_dir_all(s).map_err(fail)?;
    }
    let store = generate(s, shape, docs, seed)?;
    let mut text = format!(
        "{} {} {}\n",
        store.counts.files, store.counts.dirs, store.counts.bytes
    );
    for o in &store.orphans {
        text.push_str(o);
        text.push('\n');
    }
    std::fs::write(&done, text).map_err(fail)?;
    Ok(store)
}

/// Whether a dry run must read the file at `rel` (relative to S): documents and checkpoints,
/// the owner record and state of every store, every thread record, and the turns and items of
/// orphan stores. Lock files and leases are opened (to probe them), not read.
fn must_read(rel: &str, orphans: &HashSet<String>) -> Option<bool> {
    let parts: Vec<&str> = rel.split('/').collect();
    match parts.as_slice() {
        [name] => Some(name.ends_with(".json")),
        ["checkpoints", _] => Some(true),
        [".late-usage", name] => name.ends_with(".live").then_some(false),
        [_, "runtime", "owner.json" | "state.json"] => Some(true),
        [_, "runtime", name] if name.ends_with(".lock") => Some(false),
        [_, "runtime", "threads", _] => Some(true),
        [d, "runtime", "turns" | "items", _] => {
            orphans.contains(&format!("{d}/runtime")).then_some(true)
        }
        _ => None,
    }
}

/// The floor: every directory listed and every file the dry run must read read (or opened),
/// in parallel across directories. Returns the bytes read.
fn floor(s: &Path, rel: &str, orphans: &HashSet<String>) -> std::io::Result<u64> {
    walk(s, rel, orphans, &|e| {
        Ok(std::fs::read(e.path())?.len() as u64)
    })
}

/// The least a repeat run keyed as git's index is can cost: every directory listed as the floor
/// lists it, and each file the floor reads only stat'ed (`fstatat` beneath its directory), the
/// lease files still opened. Returns the files stat'ed.
fn stat_floor(s: &Path, rel: &str, orphans: &HashSet<String>) -> std::io::Result<u64> {
    walk(s, rel, orphans, &|e| e.metadata().map(|_| 1))
}

/// The floor's walk: every directory listed in parallel, `read` called on each file the dry
/// run must read, and each lease file opened. Returns the sum of what `read` returns.
fn walk(
    s: &Path,
    rel: &str,
    orphans: &HashSet<String>,
    read: &(dyn Fn(&std::fs::DirEntry) -> std::io::Result<u64> + Sync),
) -> std::io::Result<u64> {
    let dir = if rel.is_empty() {
        s.to_path_buf()
    } else {
        s.join(rel)
    };
    let entries: Vec<std::fs::DirEntry> = std::fs::read_dir(&dir)?.collect::<Result<_, _>>()?;
    entries
        .par_iter()
        .map(|e| {
            let name = e.file_name();
            let name = name.to_string_lossy();
            let child = if rel.is_empty() {
                name.into_owned()
            } else {
                format!("{rel}/{name}")
            };
            if e.file_type()?.is_dir() {
                walk(s, &child, orphans, read)
            } else {
                match must_read(&child, orphans) {
                    Some(true) => read(e),
                    Some(false) => std::fs::File::open(e.path()).map(|_| 0),
                    None => Ok(0),
                }
            }
        })
        .sum()
}

/// Every directory of S and every file the floor reads or opens (the leases), relative to S: what a repeat run that
/// skipped every listing (git's untracked cache) would still stat.
fn stat_targets(
    s: &Path,
    rel: &str,
    orphans: &HashSet<String>,
    out: &mut Vec<PathBuf>,
) -> std::io::Result<()> {
    let dir = if rel.is_empty() {
        s.to_path_buf()
    } else {
        s.join(rel)
    };
    for e in std::fs::read_dir(&dir)? {
        let e = e?;
        let name = e.file_name();
        let name = name.to_string_lossy();
        let child = if rel.is_empty() {
            name.into_owned()
        } else {
            format!("{rel}/{name}")
        };
        if e.file_type()?.is_dir() {
            out.push(e.path());
            stat_targets(s, &child, orphans, out)?;
        } else if must_read(&child, orphans).is_some() {
            out.push(e.path());
        }
    }
    Ok(())
}

/// One dry run, with the verdict cache in `cache` (`XDG_CACHE_HOME`) or with `--no-cache`: its
/// wall time and, when `/usr/bin/time` exists, its peak RSS in KiB.
fn dry_run(
    doctor: &Path,
    s: &Path,
    cache: Option<&Path>,
) -> Result<(Duration, Option<u64>), Failure> {
    let time = Path::new("/usr/bin/time");
    let mut cmd = if time.exists() {
        let mut c = Command::new(time);
        c.args(["-f", "%M"]).arg(doctor);
        c
    } else {
        Command::new(doctor)
    };
    cmd.args(["--repair-sessions", "--dry-run", "--json", "--sessions-dir"])
        .arg(s)
        .stdout(std::process::Stdio::null());
    match cache {
        Some(dir) => cmd.env("XDG_CACHE_HOME", dir),
        None => cmd.arg("--no-cache"),
    };
    let t = Instant::now();
    let out = cmd.output().map_err(fail)?;
    let elapsed = t.elapsed();
    if !out.status.success() {
        return Err(fail(String::from_utf8_lossy(&out.stderr)));
    }
    let rss = time.exists().then(|| {
        String::from_utf8_lossy(&out.stderr)
            .lines()
            .last()
            .and_then(|l| l.trim().parse::<u64>().ok())
    });
    Ok((elapsed, rss.flatten()))
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

/// What one size measured.
struct Measured {
    docs: usize,
    counts: Counts,
    floor: Duration,
    /// `--no-cache`: every file judged.
    dry: Duration,
    /// A repeat run over the unchanged store, with the verdict cache.
    repeat: Duration,
    /// A repeat run with 1% of the documents rewritten just before it.
    changed: Duration,
    rss_kib: Option<u64>,
    /// [`stat_floor`]: every listing, and a stat for each read of the floor.
    stat_floor: Duration,
    /// Each directory and each file the floor reads stat'ed by path, nothing listed.
    stat_only: Duration,
    /// How many paths `stat_only` stats.
    stat_targets: usize,
}

/// Every hundredth document of S (top-level `<id>.json`), in name order: the 1% a changed run
/// rewrites.
fn one_percent(s: &Path) -> Result<Vec<PathBuf>, Failure> {
    let mut docs: Vec<PathBuf> = std::fs::read_dir(s)
        .map_err(fail)?
        .filter_map(|e| e.ok())
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "json") && p.is_file())
        .collect();
    docs.sort();
    Ok(docs.into_iter().step_by(100).collect())
}

fn measure(doctor: &Path, store: &Store, runs: usize, cache: &Path) -> Result<Measured, Failure> {
    // Warm the page cache and check both work; files the cache may keep have changed more than
    // its 3 s before the run that fills it.
    floor(&store.s, "", &store.orphans).map_err(fail)?;
    dry_run(doctor, &store.s, None)?;
    std::thread::sleep(Duration::from_millis(3_500));
    let _ = std::fs::remove_dir_all(cache);
    dry_run(doctor, &store.s, Some(cache))?;
    let changing = one_percent(&store.s)?;
    let mut targets = Vec::new();
    stat_targets(&store.s, "", &store.orphans, &mut targets).map_err(fail)?;
    let (mut floors, mut drys, mut repeats, mut changed, mut rss) =
        (Vec::new(), Vec::new(), Vec::new(), Vec::new(), None);
    let (mut stat_floors, mut stat_onlys) = (Vec::new(), Vec::new());
    for _ in 0..runs {
        let t = Instant::now();
        floor(&store.s, "", &store.orphans).map_err(fail)?;
        floors.push(t.elapsed());
        let t = Instant::now();
        stat_floor(&store.s, "", &store.orphans).map_err(fail)?;
        stat_floors.push(t.elapsed());
        let t = Instant::now();
        targets
            .par_iter()
            .try_for_each(|p| std::fs::symlink_metadata(p).map(|_| ()))
            .map_err(fail)?;
        stat_onlys.push(t.elapsed());
        let (d, r) = dry_run(doctor, &store.s, None)?;
        drys.push(d);
        rss = rss.max(r);
        let (d, r) = dry_run(doctor, &store.s, Some(cache))?;
        repeats.push(d);
        rss = rss.max(r);
    }
    // The same 1% rewritten (the same bytes, a new mtime and ctime) before each run: never kept,
    // since each changed within the cache's margin, so each run reads exactly those again.
    for _ in 0..runs {
        for p in &changing {
            let bytes = std::fs::read(p).map_err(fail)?;
            std::fs::write(p, bytes).map_err(fail)?;
        }
        let (d, r) = dry_run(doctor, &store.s, Some(cache))?;
        changed.push(d);
        rss = rss.max(r);
    }
    Ok(Measured {
        docs: store.docs,
        counts: store.counts,
        floor: median(floors),
        dry: median(drys),
        repeat: median(repeats),
        changed: median(changed),
        rss_kib: rss,
        stat_floor: median(stat_floors),
        stat_only: median(stat_onlys),
        stat_targets: targets.len(),
    })
}

/// A store of `n` torn documents and nothing else: a real run sets every one aside.
fn torn_store(s: &Path, n: usize, seed: u64) -> Result<(), Failure> {
    std::fs::create_dir_all(s).map_err(fail)?;
    (0..n).into_par_iter().try_for_each(|i| {
        let mut rng = Rng(SplitMix64(seed ^ i as u64));
        let id = rng.uuid();
        let scope = rng.hex(64);
        let mut doc = document(&mut rng, &SHAPES[0], &id, "/nowhere", &scope, 1).into_bytes();
        doc.truncate(doc.len() / 2);
        std::fs::write(s.join(format!("{id}.json")), doc).map_err(fail)
    })
}

fn sync_all() {
    let _ = Command::new("sync").status();
}

fn fsync_dir(p: &Path) -> std::io::Result<()> {
    std::fs::File::open(p)?.sync_all()
}

/// The raw loop a set-aside costs at least: per item, a manifest line appended and fsynced,
/// the rename, and fsyncs of the source and destination directories.
fn raw_set_aside(s: &Path) -> std::io::Result<()> {
    let run = s.join(".set-aside/raw");
    std::fs::create_dir_all(&run)?;
    let mut manifest = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(run.join("MANIFEST.jsonl"))?;
    let mut names: Vec<_> = std::fs::read_dir(s)?
        .filter_map(|e| e.ok())
        .filter(|e| e.file_type().is_ok_and(|t| t.is_file()))
        .map(|e| e.file_name())
        .collect();
    names.sort();
    for name in names {
        writeln!(
            manifest,
            r#"{{"original":"{}","moved_to":".set-aside/raw/{}"}}"#,
            name.to_string_lossy(),
            name.to_string_lossy()
        )?;
        manifest.sync_all()?;
        std::fs::rename(s.join(&name), run.join(&name))?;
        fsync_dir(s)?;
        fsync_dir(&run)?;
    }
    Ok(())
}

fn apply_bench(
    doctor: &Path,
    tmp: &Path,
    n: usize,
    seed: u64,
    runs: usize,
) -> Result<(Duration, Duration), Failure> {
    let (mut doctors, mut raws) = (Vec::new(), Vec::new());
    for r in 0..runs {
        let s = tmp.join(format!("apply-{r}"));
        torn_store(&s, n, seed)?;
        sync_all();
        let t = Instant::now();
        let out = Command::new(doctor)
            .args(["--repair-sessions", "--json", "--max-actions"])
            .arg(n.to_string())
            .arg("--sessions-dir")
            .arg(&s)
            .env("XDG_CACHE_HOME", tmp.join("xdg-cache"))
            .stdout(std::process::Stdio::null())
            .output()
            .map_err(fail)?;
        doctors.push(t.elapsed());
        if !out.status.success() {
            return Err(fail(String::from_utf8_lossy(&out.stderr)));
        }
        let left = std::fs::read_dir(&s)
            .map_err(fail)?
            .filter(|e| {
                e.as_ref()
                    .is_ok_and(|e| e.file_name().to_string_lossy().ends_with(".json"))
            })
            .count();
        if left != 0 {
            return Err(fail(format!("{left} documents were not set aside")));
        }
        std::fs::remove_dir_all(&s).map_err(fail)?;
        torn_store(&s, n, seed)?;
        sync_all();
        let t = Instant::now();
        raw_set_aside(&s).map_err(fail)?;
        raws.push(t.elapsed());
        std::fs::remove_dir_all(&s).map_err(fail)?;
    }
    Ok((median(doctors), median(raws)))
}

struct Options {
    shape: Shape,
    docs: usize,
    seed: u64,
    runs: usize,
    apply: usize,
    keep: Option<PathBuf>,
}

impl Options {
    fn parse(args: &[String]) -> Result<Options, Failure> {
        let mut o = Options {
            shape: SHAPES[0],
            docs: 23_000,
            seed: 1,
            runs: 5,
            apply: 10_000,
            keep: None,
        };
        let (mut doc_kb, mut threads, mut group) = (None, None, None);
        let mut it = args.iter();
        while let Some(flag) = it.next() {
            let mut value = || {
                it.next()
                    .cloned()
                    .ok_or_else(|| Failure::Usage(format!("{flag} needs a value")))
            };
            let num = |v: String| {
                v.parse::<u64>()
                    .map_err(|_| Failure::Usage(format!("bad {flag} {v}")))
            };
            match flag.as_str() {
                "--docs" => o.docs = num(value()?)? as usize,
                "--shape" => {
                    let v = value()?;
                    o.shape = shape_named(&v).ok_or_else(|| {
                        let known: Vec<&str> = SHAPES.iter().map(|s| s.name).collect();
                        Failure::Usage(format!("unknown shape {v} (known: {})", known.join(", ")))
                    })?;
                }
                "--doc-kb" => doc_kb = Some(num(value()?)?.max(1) as usize),
                "--threads-per-doc" => threads = Some(num(value()?)?.max(1) as u32),
                "--group" => group = Some(num(value()?)?.max(1) as usize),
                "--seed" => o.seed = num(value()?)?,
                "--runs" => o.runs = num(value()?)?.max(1) as usize,
                "--apply" => o.apply = num(value()?)? as usize,
                "--keep" => o.keep = Some(PathBuf::from(value()?)),
                _ => return Err(Failure::Usage(format!("unknown bench argument {flag}"))),
            }
        }
        // The knobs change the shape they follow or precede alike.
        if let Some(kb) = doc_kb {
            o.shape = o.shape.with_doc_kb(kb);
        }
        o.shape.threads = threads.unwrap_or(o.shape.threads);
        o.shape.group = group.unwrap_or(o.shape.group);
        Ok(o)
    }
}

fn row(m: &Measured) -> String {
    let f = m.floor.as_secs_f64();
    format!(
        "| {} | {} | {} | {:.0} MB | {:.3} s | {:.3} s | {:.2}x | {:.3} s | {:.2}x | {:.3} s | {:.2}x | {} |",
        m.docs,
        m.counts.files,
        m.counts.files + m.counts.dirs,
        m.counts.bytes as f64 / 1e6,
        f,
        m.dry.as_secs_f64(),
        m.dry.as_secs_f64() / f,
        m.repeat.as_secs_f64(),
        m.repeat.as_secs_f64() / f,
        m.changed.as_secs_f64(),
        m.changed.as_secs_f64() / f,
        m.rss_kib
            .map_or("n/a".into(), |k| format!("{:.1} MiB", k as f64 / 1024.0)),
    )
}

/// Runs the benchmark: `cargo xtask bench [--docs N] [--seed S] [--runs R] [--apply K]
/// [--keep DIR]`.
pub fn run(root: &Path, args: &[String]) -> Result<(), Failure> {
    let o = Options::parse(args)?;
    let status = Command::new(env!("CARGO"))
        .args(["build", "--release", "-p", "doctor", "--bin", "doctor"])
        .current_dir(root)
        .status()
        .map_err(fail)?;
    if !status.success() {
        return Err(fail("cargo build --release failed"));
    }
    let doctor = root.join("target/release/doctor");
    let tmp = o.keep.clone().unwrap_or_else(|| {
        std::env::temp_dir().join(format!("doctor-bench-{}", std::process::id()))
    });
    let mut results = Vec::new();
    for docs in [o.docs / 10, o.docs] {
        let s = tmp.join(format!("S-{}-{docs}-{}", o.shape.tag(), o.seed));
        let t = Instant::now();
        let store = generate_or_reuse(&s, &o.shape, docs, o.seed)?;
        eprintln!(
            "generated {docs} documents ({} files) in {:.1} s",
            store.counts.files,
            t.elapsed().as_secs_f64()
        );
        sync_all();
        results.push(measure(&doctor, &store, o.runs, &tmp.join("xdg-cache"))?);
        if o.keep.is_none() {
            std::fs::remove_dir_all(&s).map_err(fail)?;
        }
    }
    let apply = if o.apply > 0 {
        Some(apply_bench(&doctor, &tmp, o.apply, o.seed, o.runs.min(3))?)
    } else {
        None
    };
    if o.keep.is_none() {
        let _ = std::fs::remove_dir_all(&tmp);
    }
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    println!(
        "shape {} ({:?}); seed {}, {} alternating runs each, medians, warm page cache, {cores} cores",
        o.shape.name, o.shape, o.seed, o.runs
    );
    println!();
    println!(
        "| documents | files | entries | bytes | floor | dry run | ratio | repeat | ratio | 1% changed | ratio | peak RSS |"
    );
    println!("|---|---|---|---|---|---|---|---|---|---|---|---|");
    for m in &results {
        println!("{}", row(m));
    }
    println!();
    println!("The least a repeat run keyed by each file's stat can cost:");
    println!();
    println!("| documents | floor | every listing + a stat per read | ratio | stats alone, no listing | ratio |");
    println!("|---|---|---|---|---|---|");
    for m in &results {
        let f = m.floor.as_secs_f64();
        println!(
            "| {} | {f:.3} s | {:.3} s | {:.2}x | {:.3} s ({} paths) | {:.2}x |",
            m.docs,
            m.stat_floor.as_secs_f64(),
            m.stat_floor.as_secs_f64() / f,
            m.stat_only.as_secs_f64(),
            m.stat_targets,
            m.stat_only.as_secs_f64() / f,
        );
    }
    let (small, big) = (&results[0], &results[1]);
    println!();
    println!(
        "linearity: {:.2}x the time for {:.1}x the documents",
        big.dry.as_secs_f64() / small.dry.as_secs_f64(),
        big.docs as f64 / small.docs.max(1) as f64
    );
    if let Some((doctor_t, raw_t)) = apply {
        println!(
            "apply: {} set-asides in {:.3} s; raw rename-and-fsync loop {:.3} s; ratio {:.2}x",
            o.apply,
            doctor_t.as_secs_f64(),
            raw_t.as_secs_f64(),
            doctor_t.as_secs_f64() / raw_t.as_secs_f64()
        );
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mean_document_kib(shape: &Shape) -> f64 {
        let mut rng = Rng(SplitMix64(7));
        let n = 200;
        let total: usize = (0..n)
            .map(|_| {
                let id = rng.uuid();
                document(&mut rng, shape, &id, "/s/x/runtime", "scope", 1).len()
            })
            .sum();
        total as f64 / n as f64 / 1024.0
    }

    #[test]
    fn each_shape_writes_documents_of_the_size_it_names() {
        let kib = |name| mean_document_kib(&shape_named(name).unwrap());
        let (standard, small, large) = (kib("standard"), kib("small"), kib("large"));
        assert!(
            (12.0..17.0).contains(&standard),
            "standard: {standard:.1} KiB"
        );
        assert!((2.5..4.5).contains(&small), "small: {small:.1} KiB");
        assert!((180.0..220.0).contains(&large), "large: {large:.1} KiB");
        assert!((standard - kib("orphans")).abs() < 0.5);
    }

    #[test]
    fn the_knobs_change_the_shape_whatever_their_order() {
        let args = |a: &[&str]| a.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        let a = Options::parse(&args(&[
            "--doc-kb", "64", "--shape", "small", "--group", "3",
        ]))
        .unwrap();
        let b = Options::parse(&args(&[
            "--shape", "small", "--group", "3", "--doc-kb", "64",
        ]))
        .unwrap();
        assert_eq!(a.shape.tag(), b.shape.tag());
        assert_eq!((a.shape.name, a.shape.group), ("small", 3));
        let kib = mean_document_kib(&a.shape);
        assert!((54.0..74.0).contains(&kib), "--doc-kb 64 gave {kib:.1} KiB");
        assert_ne!(a.shape.tag(), shape_named("small").unwrap().tag());
        assert!(Options::parse(&args(&["--shape", "huge"])).is_err());
    }

    #[test]
    fn more_threads_per_document_write_more_thread_records() {
        let tmp = tempfile::tempdir().unwrap();
        let count = |threads: u32| {
            let s = tmp.path().join(format!("S{threads}"));
            let shape = Shape {
                threads,
                ..shape_named("small").unwrap()
            };
            generate(&s, &shape, 12, 1).unwrap();
            let host = std::fs::read_dir(&s)
                .unwrap()
                .filter_map(|e| e.ok())
                .map(|e| e.path().join("runtime/threads"))
                .find(|p| p.is_dir() && std::fs::read_dir(p).unwrap().count() >= 12)
                .expect("the group's host store");
            std::fs::read_dir(host).unwrap().count()
        };
        assert_eq!(count(1), 12);
        assert_eq!(count(3), 36);
    }
}
