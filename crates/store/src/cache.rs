//! The verdict cache: what the scan judged of each session document and thread record, kept
//! between runs outside S so that a repeat run reads only what changed (issue 24).
//!
//! An entry is trusted only while the file's stat is exactly what it was when its bytes were
//! read: device and inode (volume serial and file index on Windows), size, and modification and
//! status-change times in nanoseconds, as git's index keys a file. A file changed since has
//! another stat and is read again. As git's "racily clean" rule has it, a file whose
//! modification or status-change time is not older than the scan that read it (less
//! [`RACY_MARGIN_NS`], for filesystems whose clocks are coarse) is never kept: a second change
//! in the same clock tick would leave its stat as it was.
//!
//! Only verdicts that are plain facts of the bytes are kept: a document that reads as the app
//! loads it, with its binding and the UUID-shaped names its text holds; a thread record of the
//! known schema, with its digest and binding. Everything else (unreadable, newer, unknown) is
//! judged again on every run. A cache that is missing, corrupt (its BLAKE3 trailer does not
//! match), of another format or doctor version, or for another directory (canonical path,
//! device and inode) is ignored, never trusted. It is written atomically, one file per
//! sessions directory identity.
//!
//! Memory is bounded by the file: the previous cache is held as its bytes with a sorted index
//! of 16 bytes per entry, and entries are parsed only when asked for; entries this run keeps are
//! serialized as they are made, and the new file is streamed from both.

use std::collections::BTreeSet;
use std::hash::{Hash, Hasher};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use fsroot::{EntryKind, Root, Stat};

use crate::inventory::Digest;

/// The layout of the cache file; a cache of another layout is ignored.
const FORMAT: u32 = 2;
const MAGIC: &[u8; 16] = b"doctor-verdicts\n";
/// The length prefix that says "no string".
const NONE: u16 = u16::MAX;

/// A file changed less than this before the scan began is not kept (3 s: FAT's 2 s timestamps
/// and the kernel's coarse file clock lag the wall clock by less).
pub const RACY_MARGIN_NS: i64 = 3_000_000_000;

/// What a change to a file must alter.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Key {
    volume: u64,
    index: u64,
    len: u64,
    mtime_ns: i64,
    ctime_ns: i64,
}

impl Key {
    /// The key of a regular file; `None` where the filesystem keeps no change time (the
    /// mtime alone can be set back, so nothing is kept or taken there).
    fn of(s: &Stat) -> Option<Key> {
        (s.kind == EntryKind::File && s.ctime_ns != 0).then_some(Key {
            volume: s.id.volume(),
            index: s.id.index(),
            len: s.len,
            mtime_ns: s.mtime_ns,
            ctime_ns: s.ctime_ns,
        })
    }
}

/// A kept document that reads as the app loads it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct DocEntry {
    /// `metadata.runtime_store.data_dir`.
    pub data_dir: Option<Arc<str>>,
    /// Every UUID-shaped window of its text, as 128 bits, sorted and distinct.
    pub uuids: Vec<u128>,
    /// The non-UUID candidate ids of this scan its text names (outside digests).
    pub others: Vec<Arc<str>>,
}

/// A kept thread record of the known schema.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ThreadEntry {
    pub sha256: [u8; 32],
    pub session_id: Option<String>,
    pub has_checkpoint: bool,
}

/// Which sessions directory a cache is for.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Identity {
    canonical: Vec<u8>,
    volume: u64,
    index: u64,
}

/// One entry of the previous cache: where it is in the file, and the hash of its name.
#[derive(Debug, Clone, Copy)]
struct Slot {
    hash: u64,
    at: u32,
    len: u32,
}

/// What a previous run kept: its file's bytes, and per kind a sorted index into them.
#[derive(Debug, Default)]
struct Prior {
    bytes: Vec<u8>,
    /// The non-UUID ids the documents' `others` were matched against.
    others: BTreeSet<Arc<str>>,
    docs: Vec<Slot>,
    threads: Vec<Slot>,
    /// One bit per slot (documents, then threads): taken by this scan, so kept again.
    taken: Vec<AtomicU64>,
}

impl Prior {
    /// The slots whose name is `name`, in `slots`, with their positions.
    fn find<'a>(
        &'a self,
        slots: &'a [Slot],
        name: &str,
    ) -> impl Iterator<Item = (usize, &'a [u8])> + 'a {
        let h = name_hash(name.as_bytes());
        let from = slots.partition_point(|s| s.hash < h);
        slots[from..]
            .iter()
            .take_while(move |s| s.hash == h)
            .enumerate()
            .map(move |(i, s)| {
                (
                    from + i,
                    &self.bytes[s.at as usize..(s.at + s.len) as usize],
                )
            })
    }

    fn take(&self, bit: usize) {
        self.taken[bit / 64].fetch_or(1 << (bit % 64), Ordering::Relaxed);
    }

    fn taken(&self, bit: usize) -> bool {
        self.taken[bit / 64].load(Ordering::Relaxed) & (1 << (bit % 64)) != 0
    }
}

fn name_hash(name: &[u8]) -> u64 {
    let mut h = std::collections::hash_map::DefaultHasher::new();
    name.hash(&mut h);
    h.finish()
}

/// How the cache served one scan.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CacheStats {
    /// Files whose verdict came from the cache.
    pub hits: u64,
    /// Files read and judged.
    pub misses: u64,
    /// Entries the cache file held when it was opened.
    pub loaded: u64,
}

/// The cache of one sessions directory for one scan: what the previous run kept, and what this
/// run will keep.
#[derive(Debug)]
pub struct VerdictCache {
    file: PathBuf,
    identity: Identity,
    prior: Prior,
    /// Entries whose modification or status-change time is at or after this are not kept.
    keep_before_ns: i64,
    /// Non-UUID ids this scan matches documents against ([`VerdictCache::set_others`]).
    others: BTreeSet<Arc<str>>,
    /// Whether the previous run matched the documents against every id of `others`.
    others_known: bool,
    /// Entries this scan judged and keeps, serialized, with their counts.
    fresh_docs: Mutex<(Vec<u8>, u64)>,
    fresh_threads: Mutex<(Vec<u8>, u64)>,
    hits: AtomicU64,
    misses: AtomicU64,
    /// Why the previous cache was not used, when it was not.
    pub ignored_because: Option<String>,
}

impl VerdictCache {
    /// The cache of S (`root`) in directory `dir`: what it holds is used only when it was
    /// written for this very directory by this version; anything else starts empty. A file
    /// changed less than `racy_margin_ns` before now is not kept ([`RACY_MARGIN_NS`] but in
    /// tests, which wait that long between an edit and the next scan instead of seconds).
    pub fn open(dir: &Path, root: &Root, racy_margin_ns: i64) -> VerdictCache {
        let canonical = root
            .canonical_anchor()
            .as_os_str()
            .as_encoded_bytes()
            .to_vec();
        let (volume, index) = match root.stat(Path::new("")) {
            Ok(Some(s)) => (s.id.volume(), s.id.index()),
            _ => (0, 0),
        };
        let identity = Identity {
            canonical,
            volume,
            index,
        };
        let mut name = blake3::Hasher::new();
        name.update(&identity.canonical);
        name.update(&volume.to_le_bytes());
        name.update(&index.to_le_bytes());
        let hex = name.finalize().to_hex();
        let file = dir.join(format!("sessions-{}.cache", &hex[..32]));
        let (prior, ignored_because) = match fsroot::read_standalone_file(&file) {
            Ok(bytes) => match decode(bytes, &identity) {
                Ok(p) => (p, None),
                Err(why) => (Prior::default(), Some(why)),
            },
            Err(e) if e.is_not_found() => (Prior::default(), Some("no cache yet".into())),
            Err(e) => (Prior::default(), Some(e.to_string())),
        };
        // The wall clock, never DOCTOR_NOW: the rule compares the kernel's file timestamps.
        let now = crate::time::wall_clock_ns();
        VerdictCache {
            file,
            identity,
            prior,
            keep_before_ns: now.saturating_sub(racy_margin_ns),
            others: BTreeSet::new(),
            others_known: true,
            fresh_docs: Mutex::default(),
            fresh_threads: Mutex::default(),
            hits: AtomicU64::new(0),
            misses: AtomicU64::new(0),
            ignored_because,
        }
    }

    /// The file the cache is read from and written to.
    pub fn file(&self) -> &Path {
        &self.file
    }

    /// Keeps only entries changed before `ns` (nanoseconds since the Unix epoch) instead of
    /// before the scan's start less the margin.
    #[cfg(test)]
    fn keep_changes_before(&mut self, ns: i64) {
        self.keep_before_ns = ns;
    }

    /// How this scan was served so far.
    pub fn stats(&self) -> CacheStats {
        CacheStats {
            hits: self.hits.load(Ordering::Relaxed),
            misses: self.misses.load(Ordering::Relaxed),
            loaded: (self.prior.docs.len() + self.prior.threads.len()) as u64,
        }
    }

    /// The non-UUID ids this scan matches document text against: a kept document answers for
    /// them only when the previous run matched it against every one of them.
    pub(crate) fn set_others(&mut self, others: impl IntoIterator<Item = String>) {
        self.others = others.into_iter().map(Arc::from).collect();
        self.others_known = self.others.is_subset(&self.prior.others);
    }

    fn racy(&self, key: &Key) -> bool {
        key.mtime_ns >= self.keep_before_ns || key.ctime_ns >= self.keep_before_ns
    }

    fn count(&self, hit: bool) {
        let n = if hit { &self.hits } else { &self.misses };
        n.fetch_add(1, Ordering::Relaxed);
    }

    /// The kept verdict of document `id`, whose stat is `stat` now. An entry taken is kept
    /// again by [`VerdictCache::save`].
    pub(crate) fn document(&self, id: &str, stat: &Stat) -> Option<DocEntry> {
        let key = Key::of(stat)?;
        let hit = self.others_known.then(|| {
            self.prior.find(&self.prior.docs, id).find_map(|(i, b)| {
                let (name, k, entry) = parse_doc(b)?;
                (name == id.as_bytes() && k == key).then_some((i, entry))
            })
        });
        let hit = hit.flatten();
        self.count(hit.is_some());
        hit.map(|(i, entry)| {
            self.prior.take(i);
            entry
        })
    }

    /// The kept verdict of the thread record at `rel`, whose stat is `stat` now.
    pub(crate) fn thread(&self, rel: &str, stat: &Stat) -> Option<ThreadEntry> {
        let key = Key::of(stat)?;
        let hit = self
            .prior
            .find(&self.prior.threads, rel)
            .find_map(|(i, b)| {
                let (name, k, entry) = parse_thread(b)?;
                (name == rel.as_bytes() && k == key).then_some((i, entry))
            });
        self.count(hit.is_some());
        hit.map(|(i, entry)| {
            self.prior.take(self.prior.docs.len() + i);
            entry
        })
    }

    /// Keeps document `id`'s verdict for the next run (unless it changed too recently to be
    /// trusted, or a part is too long for the format). `others` are the ids of this scan's
    /// `others` its text names.
    pub(crate) fn keep_document(
        &self,
        id: &str,
        stat: &Stat,
        data_dir: Option<Arc<str>>,
        uuids: Vec<u128>,
        others: Vec<Arc<str>>,
    ) {
        let Some(key) = Key::of(stat).filter(|k| !self.racy(k)) else {
            return;
        };
        let entry = DocEntry {
            data_dir,
            uuids,
            others,
        };
        push(&self.fresh_docs, |out| {
            encode_doc(out, id, &key, &entry, None)
        });
    }

    /// Keeps the verdict of the current-schema thread record at `rel`.
    pub(crate) fn keep_thread(
        &self,
        rel: &str,
        stat: &Stat,
        digest: &Digest,
        session_id: Option<String>,
        has_checkpoint: bool,
    ) {
        let Some(key) = Key::of(stat).filter(|k| !self.racy(k) && k.len == digest.bytes) else {
            return;
        };
        let entry = ThreadEntry {
            sha256: digest.sha256,
            session_id,
            has_checkpoint,
        };
        push(&self.fresh_threads, |out| {
            encode_thread(out, rel, &key, &entry)
        });
    }

    /// Writes what this scan kept, atomically, creating the cache directory: the entries it
    /// took from the previous cache (copied as they were, a document's `others` narrowed to
    /// this scan's when those differ) and the ones it judged. Entries of files this scan did
    /// not meet are gone. When the scan took every entry of the previous cache, judged nothing
    /// new and matched against the same ids, the file already says all of that: it is left as
    /// it is ([`Saved::Unchanged`]).
    pub fn save(&self) -> Result<Saved, String> {
        let fresh_docs = lock(&self.fresh_docs);
        let fresh_threads = lock(&self.fresh_threads);
        let p = &self.prior;
        let slots = p.docs.len() + p.threads.len();
        let taken: usize = p
            .taken
            .iter()
            .map(|w| w.load(Ordering::Relaxed).count_ones() as usize)
            .sum();
        if self.ignored_because.is_none()
            && taken == slots
            && fresh_docs.1 == 0
            && fresh_threads.1 == 0
            && self.others == p.others
        {
            return Ok(Saved::Unchanged);
        }
        let taken_docs: Vec<&Slot> = (p.docs.iter().enumerate())
            .filter(|(i, _)| p.taken(*i))
            .map(|(_, s)| s)
            .collect();
        let taken_threads: Vec<&Slot> = (p.threads.iter().enumerate())
            .filter(|(i, _)| p.taken(p.docs.len() + i))
            .map(|(_, s)| s)
            .collect();
        let slice = |s: &Slot| &p.bytes[s.at as usize..(s.at + s.len) as usize];
        // Documents matched against other ids than this scan's are written again.
        let narrowed: Vec<u8> = if self.others == p.others {
            Vec::new()
        } else {
            let mut out = Vec::new();
            for s in &taken_docs {
                if let Some((name, key, entry)) = parse_doc(slice(s)) {
                    let id = String::from_utf8_lossy(name);
                    encode_doc(&mut out, &id, &key, &entry, Some(&self.others));
                }
            }
            out
        };
        let mut header = Vec::with_capacity(256);
        header.extend_from_slice(MAGIC);
        header.extend_from_slice(&FORMAT.to_le_bytes());
        put_bytes32(&mut header, env!("CARGO_PKG_VERSION").as_bytes());
        put_bytes32(&mut header, &self.identity.canonical);
        header.extend_from_slice(&self.identity.volume.to_le_bytes());
        header.extend_from_slice(&self.identity.index.to_le_bytes());
        header.extend_from_slice(&(self.others.len() as u32).to_le_bytes());
        for o in &self.others {
            put_bytes32(&mut header, o.as_bytes());
        }
        let docs = taken_docs.len() as u64 + fresh_docs.1;
        header.extend_from_slice(&docs.to_le_bytes());
        let mut parts: Vec<&[u8]> = vec![&header];
        if self.others == p.others {
            parts.extend(taken_docs.iter().map(|s| slice(s)));
        } else {
            parts.push(&narrowed);
        }
        parts.push(&fresh_docs.0);
        let threads = (taken_threads.len() as u64 + fresh_threads.1).to_le_bytes();
        parts.push(&threads);
        parts.extend(taken_threads.iter().map(|s| slice(s)));
        parts.push(&fresh_threads.0);
        let mut sum = blake3::Hasher::new();
        for part in &parts {
            sum.update(part);
        }
        let sum = sum.finalize();
        parts.push(sum.as_bytes());
        fsroot::replace_private_file(&self.file, &parts)
            .map(|()| Saved::Written)
            .map_err(|e| format!("cannot write {}: {e}", self.file.display()))
    }
}

/// What [`VerdictCache::save`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Saved {
    /// The file was replaced by what this scan kept.
    Written,
    /// The file already held exactly what this scan kept, and was not written.
    Unchanged,
}

/// Appends one entry to the serialized entries of `fresh` with `encode`, and counts it when it
/// fit the format (`encode` leaves the bytes as they were when it did not).
fn push(fresh: &Mutex<(Vec<u8>, u64)>, encode: impl FnOnce(&mut Vec<u8>) -> bool) {
    let mut fresh = lock(fresh);
    if encode(&mut fresh.0) {
        fresh.1 += 1;
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

// The file: MAGIC, FORMAT, the doctor's version, the identity, the `others`, the count of
// documents and each document, the count of threads and each thread, then the BLAKE3 of
// everything before it. Integers are little-endian. Strings in entries carry a u16 length
// (`NONE`: absent); an entry with a longer string, or more than 255 UUIDs or others, is not
// kept. A document: name, key, `data_dir`, the UUIDs (u8 count, 16 bytes each), the others (u8
// count, strings). A thread: its path, key, SHA-256, checkpoint flag, `session_id`.

fn put_bytes32(out: &mut Vec<u8>, b: &[u8]) {
    out.extend_from_slice(&(b.len() as u32).to_le_bytes());
    out.extend_from_slice(b);
}

/// Appends `s` with its u16 length; `false` when it is too long.
fn put_str16(out: &mut Vec<u8>, s: Option<&[u8]>) -> bool {
    match s {
        None => out.extend_from_slice(&NONE.to_le_bytes()),
        Some(b) if b.len() < usize::from(NONE) => {
            out.extend_from_slice(&(b.len() as u16).to_le_bytes());
            out.extend_from_slice(b);
        }
        Some(_) => return false,
    }
    true
}

fn put_key(out: &mut Vec<u8>, k: &Key) {
    for v in [
        k.volume,
        k.index,
        k.len,
        k.mtime_ns as u64,
        k.ctime_ns as u64,
    ] {
        out.extend_from_slice(&v.to_le_bytes());
    }
}

/// Appends the entry of document `id`, its others narrowed to `only` when given; `false` (and
/// `out` as it was) when it does not fit the format.
fn encode_doc(
    out: &mut Vec<u8>,
    id: &str,
    key: &Key,
    e: &DocEntry,
    only: Option<&BTreeSet<Arc<str>>>,
) -> bool {
    let others: Vec<&Arc<str>> = e
        .others
        .iter()
        .filter(|o| only.is_none_or(|set| set.contains(*o)))
        .collect();
    let start = out.len();
    let fits = e.uuids.len() <= 255
        && others.len() <= 255
        && put_str16(out, Some(id.as_bytes()))
        && {
            put_key(out, key);
            put_str16(out, e.data_dir.as_deref().map(str::as_bytes))
        }
        && {
            out.push(e.uuids.len() as u8);
            for u in &e.uuids {
                out.extend_from_slice(&u.to_le_bytes());
            }
            out.push(others.len() as u8);
            others.iter().all(|o| put_str16(out, Some(o.as_bytes())))
        };
    if !fits {
        out.truncate(start);
    }
    fits
}

/// Appends the entry of the thread record at `rel`; `false` (and `out` as it was) when it
/// does not fit the format.
fn encode_thread(out: &mut Vec<u8>, rel: &str, key: &Key, e: &ThreadEntry) -> bool {
    let start = out.len();
    let fits = put_str16(out, Some(rel.as_bytes())) && {
        put_key(out, key);
        out.extend_from_slice(&e.sha256);
        out.push(u8::from(e.has_checkpoint));
        put_str16(out, e.session_id.as_deref().map(str::as_bytes))
    };
    if !fits {
        out.truncate(start);
    }
    fits
}

struct Reader<'a> {
    b: &'a [u8],
    /// How many bytes were taken so far.
    offset: usize,
}

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Option<&'a [u8]> {
        if self.b.len() < n {
            return None;
        }
        let (head, rest) = self.b.split_at(n);
        self.b = rest;
        self.offset += n;
        Some(head)
    }
    fn u8(&mut self) -> Option<u8> {
        Some(self.take(1)?[0])
    }
    fn u16(&mut self) -> Option<u16> {
        Some(u16::from_le_bytes(self.take(2)?.try_into().ok()?))
    }
    fn u32(&mut self) -> Option<u32> {
        Some(u32::from_le_bytes(self.take(4)?.try_into().ok()?))
    }
    fn u64(&mut self) -> Option<u64> {
        Some(u64::from_le_bytes(self.take(8)?.try_into().ok()?))
    }
    fn bytes32(&mut self) -> Option<&'a [u8]> {
        let n = self.u32()? as usize;
        self.take(n)
    }
    /// A u16-prefixed string: `Some(None)` when absent.
    fn str16(&mut self) -> Option<Option<&'a [u8]>> {
        match self.u16()? {
            NONE => Some(None),
            n => self.take(usize::from(n)).map(Some),
        }
    }
    fn key(&mut self) -> Option<Key> {
        Some(Key {
            volume: self.u64()?,
            index: self.u64()?,
            len: self.u64()?,
            mtime_ns: self.u64()? as i64,
            ctime_ns: self.u64()? as i64,
        })
    }
}

fn utf8(b: &[u8]) -> Option<&str> {
    std::str::from_utf8(b).ok()
}

/// What a reader of one entry gives: its name, key, verdict and length in bytes.
type Read<'a, E> = Option<(&'a [u8], Key, E, usize)>;

/// The entry at the start of `b`, read by `read`: its name, key and verdict.
fn parse<'a, E>(
    b: &'a [u8],
    read: fn(&mut Reader<'a>) -> Read<'a, E>,
) -> Option<(&'a [u8], Key, E)> {
    let (name, key, entry, _) = read(&mut Reader { b, offset: 0 })?;
    Some((name, key, entry))
}

/// The document entry at the start of `b`.
fn parse_doc(b: &[u8]) -> Option<(&[u8], Key, DocEntry)> {
    parse(b, read_doc)
}

/// The thread entry at the start of `b`.
fn parse_thread(b: &[u8]) -> Option<(&[u8], Key, ThreadEntry)> {
    parse(b, read_thread)
}

/// Reads one document entry from `r`, and how many bytes it took.
fn read_doc<'a>(r: &mut Reader<'a>) -> Read<'a, DocEntry> {
    let before = r.b.len();
    let name = r.str16()??;
    let key = r.key()?;
    let data_dir = r.str16()?.map(utf8).map(|d| d.map(Arc::from));
    let data_dir = match data_dir {
        Some(None) => return None,
        Some(Some(d)) => Some(d),
        None => None,
    };
    let nu = r.u8()?;
    let mut uuids = Vec::with_capacity(usize::from(nu));
    for _ in 0..nu {
        uuids.push(u128::from_le_bytes(r.take(16)?.try_into().ok()?));
    }
    let no = r.u8()?;
    let mut others = Vec::with_capacity(usize::from(no));
    for _ in 0..no {
        others.push(Arc::from(utf8(r.str16()??)?));
    }
    let entry = DocEntry {
        data_dir,
        uuids,
        others,
    };
    Some((name, key, entry, before - r.b.len()))
}

/// Reads one thread entry from `r`, and how many bytes it took.
fn read_thread<'a>(r: &mut Reader<'a>) -> Read<'a, ThreadEntry> {
    let before = r.b.len();
    let name = r.str16()??;
    let key = r.key()?;
    let sha256: [u8; 32] = r.take(32)?.try_into().ok()?;
    let has_checkpoint = match r.u8()? {
        0 => false,
        1 => true,
        _ => return None,
    };
    let session_id = match r.str16()? {
        None => None,
        Some(b) => Some(utf8(b)?.to_owned()),
    };
    let entry = ThreadEntry {
        sha256,
        session_id,
        has_checkpoint,
    };
    Some((name, key, entry, before - r.b.len()))
}

/// The refusal of a cache cut short, or with an entry that does not parse.
fn short() -> String {
    "it ends early or an entry does not parse".into()
}

/// Reads a count, then that many entries with `read`, into their slots, sorted by hash. Each entry
/// takes at least 45 bytes: a count beyond the rest of the file is refused before allocating.
fn index<'a, E>(
    r: &mut Reader<'a>,
    read: fn(&mut Reader<'a>) -> Read<'a, E>,
) -> Result<Vec<Slot>, String> {
    let n = r.u64().ok_or_else(short)?;
    if n.saturating_mul(45) > r.b.len() as u64 {
        return Err("a count exceeds the file".into());
    }
    let mut slots = Vec::with_capacity(n as usize);
    for _ in 0..n {
        let at = r.offset;
        let (name, _, _, len) = read(r).ok_or_else(short)?;
        slots.push(Slot {
            hash: name_hash(name),
            at: at as u32,
            len: len as u32,
        });
    }
    slots.sort_by_key(|s| s.hash);
    Ok(slots)
}

/// Checks `bytes` as a cache of `identity` and indexes its entries, each parsed once to check
/// it and find its end.
fn decode(bytes: Vec<u8>, identity: &Identity) -> Result<Prior, String> {
    let Some(body_len) = bytes.len().checked_sub(32) else {
        return Err("it is too short".into());
    };
    if u32::try_from(bytes.len()).is_err() {
        return Err("it is larger than 4 GiB".into());
    }
    let (body, sum) = bytes.split_at(body_len);
    if blake3::hash(body).as_bytes() != sum {
        return Err("its checksum does not match (corrupt)".into());
    }
    let mut r = Reader { b: body, offset: 0 };
    if r.take(MAGIC.len()).ok_or_else(short)? != MAGIC {
        return Err("it is not a verdict cache".into());
    }
    let format = r.u32().ok_or_else(short)?;
    if format != FORMAT {
        return Err(format!("it is of format {format}, not {FORMAT}"));
    }
    let version = r.bytes32().ok_or_else(short)?;
    if version != env!("CARGO_PKG_VERSION").as_bytes() {
        return Err(format!(
            "it was written by doctor {}",
            String::from_utf8_lossy(version)
        ));
    }
    let found = Identity {
        canonical: r.bytes32().ok_or_else(short)?.to_vec(),
        volume: r.u64().ok_or_else(short)?,
        index: r.u64().ok_or_else(short)?,
    };
    if &found != identity {
        return Err("it is for another directory".into());
    }
    let mut others = BTreeSet::new();
    for _ in 0..r.u32().ok_or_else(short)? {
        let o = utf8(r.bytes32().ok_or_else(short)?).ok_or_else(short)?;
        others.insert(Arc::from(o));
    }
    let docs = index(&mut r, read_doc)?;
    let threads = index(&mut r, read_thread)?;
    if !r.b.is_empty() {
        return Err("it has bytes after its last entry".into());
    }
    let bits = (docs.len() + threads.len()).div_ceil(64);
    Ok(Prior {
        bytes,
        others,
        docs,
        threads,
        taken: (0..bits).map(|_| AtomicU64::new(0)).collect(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(n: u64) -> Key {
        Key {
            volume: 1,
            index: n,
            len: 10,
            mtime_ns: 5,
            ctime_ns: 6,
        }
    }

    fn stat_of_key(k: Key) -> Stat {
        Stat {
            kind: EntryKind::File,
            len: k.len,
            mtime: k.mtime_ns / 1_000_000_000,
            mtime_ns: k.mtime_ns,
            ctime_ns: k.ctime_ns,
            owner: fsroot::Owner::unknown(),
            id: fsroot::FileId::from_parts(k.volume, k.index),
            mode: 0o644,
        }
    }

    fn stat(mtime_ns: i64, ctime_ns: i64) -> Stat {
        stat_of_key(Key {
            volume: 1,
            index: 1,
            len: 10,
            mtime_ns,
            ctime_ns,
        })
    }

    /// A cache of S `root` holding one document `d1` and one thread record, saved in `dir`.
    fn sample(dir: &Path, root: &Root) -> Vec<u8> {
        let mut c = VerdictCache::open(dir, root, RACY_MARGIN_NS);
        c.keep_changes_before(1_000);
        c.set_others(["ses-a".to_owned()]);
        c.keep_document(
            "d1",
            &stat_of_key(key(1)),
            Some("/s/x/runtime".into()),
            vec![3, 9],
            vec!["ses-a".into()],
        );
        let digest = Digest {
            bytes: 10,
            sha256: [4; 32],
        };
        c.keep_thread(
            "x/runtime/threads/t.json",
            &stat_of_key(key(2)),
            &digest,
            Some("d1".into()),
            true,
        );
        c.save().unwrap();
        fsroot::read_standalone_file(c.file()).unwrap()
    }

    #[test]
    fn what_is_written_reads_back_whole_and_is_kept_again_when_taken() {
        let tmp = tempfile::tempdir().unwrap();
        let root = Root::open(tmp.path()).unwrap();
        let dir = tmp.path().join("cache");
        sample(&dir, &root);
        let mut c = VerdictCache::open(&dir, &root, RACY_MARGIN_NS);
        assert_eq!(c.ignored_because, None);
        c.set_others(["ses-a".to_owned()]);
        let d = c.document("d1", &stat_of_key(key(1))).unwrap();
        assert_eq!(
            (d.data_dir.as_deref(), &d.uuids[..], d.others.len()),
            (Some("/s/x/runtime"), &[3u128, 9][..], 1)
        );
        let t = c
            .thread("x/runtime/threads/t.json", &stat_of_key(key(2)))
            .unwrap();
        assert_eq!(
            (t.sha256, t.session_id.as_deref(), t.has_checkpoint),
            ([4; 32], Some("d1"), true)
        );
        // Both taken: the next file holds both again; with no non-UUID id now, `ses-a` goes.
        c.set_others(Vec::new());
        c.save().unwrap();
        let mut again = VerdictCache::open(&dir, &root, RACY_MARGIN_NS);
        assert_eq!(again.stats().loaded, 2);
        again.set_others(Vec::new());
        let d = again.document("d1", &stat_of_key(key(1))).unwrap();
        assert!(d.others.is_empty(), "{d:?}");
        // Nothing taken: the next file is empty.
        let c = VerdictCache::open(&dir, &root, RACY_MARGIN_NS);
        c.save().unwrap();
        assert_eq!(
            VerdictCache::open(&dir, &root, RACY_MARGIN_NS)
                .stats()
                .loaded,
            0
        );
    }

    #[test]
    // The cache file is outside S: the test edits it with std.
    #[allow(clippy::disallowed_methods)]
    fn a_scan_that_took_every_entry_and_judged_nothing_new_leaves_the_file_as_it_is() {
        let tmp = tempfile::tempdir().unwrap();
        let root = Root::open(tmp.path()).unwrap();
        let dir = tmp.path().join("cache");
        let written = sample(&dir, &root);
        let take_both = |c: &mut VerdictCache| {
            c.set_others(["ses-a".to_owned()]);
            assert!(c.document("d1", &stat_of_key(key(1))).is_some());
            assert!(c
                .thread("x/runtime/threads/t.json", &stat_of_key(key(2)))
                .is_some());
        };
        // Both taken, nothing new, the same ids: not written (the file's bytes are the same
        // even after it is removed from under the save, which would recreate it if it wrote).
        let mut c = VerdictCache::open(&dir, &root, RACY_MARGIN_NS);
        take_both(&mut c);
        std::fs::remove_file(c.file()).unwrap();
        assert_eq!(c.save(), Ok(Saved::Unchanged));
        assert!(!c.file().exists());
        std::fs::write(c.file(), &written).unwrap();
        // One entry not taken, one new entry, or other ids: written.
        let mut c = VerdictCache::open(&dir, &root, RACY_MARGIN_NS);
        c.set_others(["ses-a".to_owned()]);
        assert!(c.document("d1", &stat_of_key(key(1))).is_some());
        assert_eq!(c.save(), Ok(Saved::Written));
        assert_eq!(
            VerdictCache::open(&dir, &root, RACY_MARGIN_NS)
                .stats()
                .loaded,
            1
        );
        std::fs::write(c.file(), &written).unwrap();
        let mut c = VerdictCache::open(&dir, &root, RACY_MARGIN_NS);
        take_both(&mut c);
        c.keep_changes_before(1_000);
        c.keep_document("d2", &stat_of_key(key(3)), None, Vec::new(), Vec::new());
        assert_eq!(c.save(), Ok(Saved::Written));
        assert_eq!(
            VerdictCache::open(&dir, &root, RACY_MARGIN_NS)
                .stats()
                .loaded,
            3
        );
        std::fs::write(c.file(), &written).unwrap();
        let mut c = VerdictCache::open(&dir, &root, RACY_MARGIN_NS);
        take_both(&mut c);
        c.set_others(Vec::new());
        assert_eq!(c.save(), Ok(Saved::Written));
        // A cache that was not used is replaced even when this scan keeps nothing.
        std::fs::write(c.file(), b"not a cache").unwrap();
        let c = VerdictCache::open(&dir, &root, RACY_MARGIN_NS);
        assert_eq!(c.save(), Ok(Saved::Written));
        assert_ne!(std::fs::read(c.file()).unwrap(), b"not a cache");
    }

    #[test]
    fn a_corrupt_truncated_foreign_or_other_version_cache_is_refused() {
        let tmp = tempfile::tempdir().unwrap();
        let root = Root::open(tmp.path()).unwrap();
        let bytes = sample(&tmp.path().join("cache"), &root);
        let identity = VerdictCache::open(tmp.path(), &root, 0).identity;
        assert!(decode(bytes.clone(), &identity).is_ok());
        for i in [0, 20, bytes.len() / 2, bytes.len() - 1] {
            let mut b = bytes.clone();
            b[i] ^= 1;
            assert!(decode(b, &identity).is_err(), "byte {i} flipped");
        }
        for n in [0, 31, 32, bytes.len() - 1] {
            assert!(
                decode(bytes[..n].to_vec(), &identity).is_err(),
                "cut to {n}"
            );
        }
        let other = Identity {
            index: identity.index + 1,
            ..identity.clone()
        };
        assert_eq!(
            decode(bytes.clone(), &other).unwrap_err(),
            "it is for another directory"
        );
        // Another version, or a truncated entry, behind a valid checksum.
        let resum = |mut b: Vec<u8>| {
            let sum = blake3::hash(&b);
            b.extend_from_slice(sum.as_bytes());
            b
        };
        let mut b = bytes[..bytes.len() - 32].to_vec();
        b[MAGIC.len() + 4 + 4] ^= 1;
        assert!(decode(resum(b), &identity)
            .unwrap_err()
            .starts_with("it was written by doctor"));
        let b = bytes[..bytes.len() - 33].to_vec();
        assert_eq!(
            decode(resum(b), &identity).unwrap_err(),
            "it ends early or an entry does not parse"
        );
    }

    #[test]
    fn a_count_larger_than_the_file_is_refused_before_allocating() {
        let identity = Identity {
            canonical: Vec::new(),
            volume: 0,
            index: 0,
        };
        let mut b = Vec::new();
        b.extend_from_slice(MAGIC);
        b.extend_from_slice(&FORMAT.to_le_bytes());
        put_bytes32(&mut b, env!("CARGO_PKG_VERSION").as_bytes());
        put_bytes32(&mut b, b"");
        b.extend_from_slice(&0u64.to_le_bytes());
        b.extend_from_slice(&0u64.to_le_bytes());
        b.extend_from_slice(&0u32.to_le_bytes()); // no others
        b.extend_from_slice(&u64::MAX.to_le_bytes()); // the documents' count
        let sum = blake3::hash(&b);
        b.extend_from_slice(sum.as_bytes());
        assert_eq!(
            decode(b, &identity).unwrap_err(),
            "a count exceeds the file"
        );
    }

    #[test]
    fn a_file_changed_at_or_after_the_scan_began_is_racily_clean_and_not_kept() {
        let tmp = tempfile::tempdir().unwrap();
        let root = Root::open(tmp.path()).unwrap();
        let mut cache = VerdictCache::open(&tmp.path().join("cache"), &root, RACY_MARGIN_NS);
        cache.keep_changes_before(1_000);
        cache.keep_document("old", &stat(999, 999), None, Vec::new(), Vec::new());
        cache.keep_document("mtime", &stat(1_000, 999), None, Vec::new(), Vec::new());
        cache.keep_document("ctime", &stat(999, 1_000), None, Vec::new(), Vec::new());
        // No change time (FAT): the mtime alone can be set back, so nothing is kept.
        cache.keep_document("no-ctime", &stat(999, 0), None, Vec::new(), Vec::new());
        assert_eq!(lock(&cache.fresh_docs).1, 1);
        cache.save().unwrap();
        let again = VerdictCache::open(&tmp.path().join("cache"), &root, RACY_MARGIN_NS);
        assert!(again.document("old", &stat(999, 999)).is_some());
    }

    #[test]
    fn an_entry_too_long_for_the_format_is_not_kept() {
        let tmp = tempfile::tempdir().unwrap();
        let root = Root::open(tmp.path()).unwrap();
        let mut cache = VerdictCache::open(&tmp.path().join("cache"), &root, RACY_MARGIN_NS);
        cache.keep_changes_before(1_000);
        let long: Arc<str> = "x".repeat(70_000).into();
        cache.keep_document("d", &stat(5, 5), Some(long), Vec::new(), Vec::new());
        cache.keep_document("e", &stat(5, 5), None, (0..300).collect(), Vec::new());
        assert_eq!(lock(&cache.fresh_docs).1, 0);
        assert!(lock(&cache.fresh_docs).0.is_empty());
    }

    #[test]
    fn a_kept_document_answers_only_for_the_same_stat_and_known_others() {
        let tmp = tempfile::tempdir().unwrap();
        let root = Root::open(tmp.path()).unwrap();
        let dir = tmp.path().join("cache");
        let mut first = VerdictCache::open(&dir, &root, RACY_MARGIN_NS);
        first.keep_changes_before(1_000);
        first.set_others(["ses-a".to_owned()]);
        first.keep_document("d", &stat(5, 5), None, vec![1], vec!["ses-a".into()]);
        first.save().unwrap();
        let mut second = VerdictCache::open(&dir, &root, RACY_MARGIN_NS);
        assert_eq!(second.ignored_because, None);
        second.set_others(["ses-a".to_owned()]);
        assert!(second.document("d", &stat(5, 5)).is_some());
        assert!(second.document("d", &stat(5, 6)).is_none(), "ctime differs");
        assert!(second.document("d", &stat(6, 5)).is_none(), "mtime differs");
        let mut longer = stat(5, 5);
        longer.len = 11;
        assert!(second.document("d", &longer).is_none(), "size differs");
        let mut moved = stat(5, 5);
        moved.id = fsroot::FileId::from_parts(1, 2);
        assert!(second.document("d", &moved).is_none(), "inode differs");
        assert!(second.document("e", &stat(5, 5)).is_none(), "another name");
        // An id the previous run did not match its text against: the document is read again.
        second.set_others(["ses-a".to_owned(), "ses-b".to_owned()]);
        assert!(second.document("d", &stat(5, 5)).is_none());
        assert_eq!(
            second.stats(),
            CacheStats {
                hits: 1,
                misses: 6,
                loaded: 1
            }
        );
    }
}

#[cfg(test)]
mod scan_tests {
    // The tests copy a store and edit it as a user would.
    #![allow(clippy::disallowed_methods, clippy::disallowed_types)]

    use std::path::Path;

    use super::*;
    use crate::progress::ProgressSink;
    use crate::{scan_cached, External, Inventory};

    fn copy_tree(from: &Path, to: &Path) {
        std::fs::create_dir_all(to).unwrap();
        for e in std::fs::read_dir(from).unwrap() {
            let e = e.unwrap();
            let dest = to.join(e.file_name());
            if e.file_type().unwrap().is_dir() {
                copy_tree(&e.path(), &dest);
            } else {
                std::fs::copy(e.path(), dest).unwrap();
            }
        }
    }

    /// A scan of `s` with the cache in `cache` (margin `margin_ns`), and how the cache served it.
    fn scan(s: &Path, cache: &Path, margin_ns: i64) -> (Inventory, CacheStats) {
        let root = Root::open(s).unwrap();
        let mut c = VerdictCache::open(cache, &root, margin_ns);
        let inv = scan_cached(
            &root,
            &External::default(),
            &ProgressSink::silent(),
            Some(&mut c),
        )
        .unwrap();
        c.save().unwrap();
        (inv, c.stats())
    }

    /// A copy of the demo store in `<tmp>/S`, a moment old, and `<tmp>/cache`.
    fn demo_copy() -> (tempfile::TempDir, std::path::PathBuf, std::path::PathBuf) {
        let tmp = tempfile::tempdir().unwrap();
        let s = tmp.path().join("S");
        copy_tree(
            &Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/demo"),
            &s,
        );
        std::thread::sleep(std::time::Duration::from_millis(30));
        let cache = tmp.path().join("cache");
        (tmp, s, cache)
    }

    fn plain(s: &Path) -> Inventory {
        crate::scan(&Root::open(s).unwrap()).unwrap()
    }

    #[test]
    fn an_unchanged_store_is_judged_from_the_cache_and_a_changed_file_is_read_again() {
        let (_tmp, s, cache) = demo_copy();

        // With the default margin, files written a moment ago are not kept: racily clean.
        let (_, first) = scan(&s, &cache, RACY_MARGIN_NS);
        let (_, again) = scan(&s, &cache, RACY_MARGIN_NS);
        assert_eq!((again.hits, again.loaded), (0, 0), "{first:?} {again:?}");

        // With a margin the wait above exceeds, they are; the next scan reads none of them.
        let (cold, first) = scan(&s, &cache, 10_000_000);
        assert_eq!(first.hits, 0);
        let kept = first.misses;
        assert!(kept >= 6, "{first:?}");
        let (warm, second) = scan(&s, &cache, 10_000_000);
        assert_eq!(second.misses, kept - second.hits);
        assert!(second.hits >= 6, "{second:?}");
        assert_eq!(format!("{warm:?}"), format!("{cold:?}"));
        assert_eq!(format!("{warm:?}"), format!("{:?}", plain(&s)));

        // A document rewritten with the same size: read again, and judged anew.
        let doc = s.join("alpha.json");
        let mut bytes = std::fs::read(&doc).unwrap();
        let at = bytes.iter().position(|&b| b == b'{').unwrap();
        bytes[at] = b'[';
        std::fs::write(&doc, &bytes).unwrap();
        std::thread::sleep(std::time::Duration::from_millis(30));
        let (edited, third) = scan(&s, &cache, 10_000_000);
        assert_eq!(third.hits, second.hits - 1, "{third:?}");
        assert_eq!(format!("{edited:?}"), format!("{:?}", plain(&s)));
        assert_ne!(format!("{edited:?}"), format!("{warm:?}"));
    }

    #[test]
    fn a_corrupt_cache_is_ignored_and_replaced() {
        let (_tmp, s, cache) = demo_copy();
        scan(&s, &cache, 10_000_000);
        let root = Root::open(&s).unwrap();
        let file = VerdictCache::open(&cache, &root, 0).file().to_path_buf();
        let mut bytes = std::fs::read(&file).unwrap();
        let mid = bytes.len() / 2;
        bytes[mid] ^= 0xff;
        std::fs::write(&file, &bytes).unwrap();
        let c = VerdictCache::open(&cache, &root, 0);
        assert_eq!(
            c.ignored_because.as_deref(),
            Some("its checksum does not match (corrupt)")
        );
        let (inv, stats) = scan(&s, &cache, 10_000_000);
        assert_eq!(stats.hits, 0);
        assert_eq!(format!("{inv:?}"), format!("{:?}", plain(&s)));
        let (_, again) = scan(&s, &cache, 10_000_000);
        assert!(
            again.hits > 0,
            "the corrupt cache was not replaced: {again:?}"
        );
    }
}
