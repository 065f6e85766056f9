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

use std::collections::{BTreeSet, HashMap};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use fsroot::{EntryKind, Root, Stat};

use crate::inventory::Digest;

/// The layout of the cache file; a cache of another layout is ignored.
const FORMAT: u32 = 1;
const MAGIC: &[u8; 16] = b"doctor-verdicts\n";

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
    fn of(s: &Stat) -> Option<Key> {
        (s.kind == EntryKind::File).then_some(Key {
            volume: s.id.volume(),
            index: s.id.index(),
            len: s.len,
            mtime_ns: s.mtime_ns,
            ctime_ns: s.ctime_ns,
        })
    }
}

/// A document that reads as the app loads it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct DocEntry {
    key: Key,
    /// `metadata.runtime_store.data_dir`.
    pub data_dir: Option<Arc<str>>,
    /// Every UUID-shaped window of its text, as 128 bits, sorted and distinct.
    pub uuids: Vec<u128>,
    /// The ids of [`Prior::others`] its text names (outside digests).
    pub others: Vec<Arc<str>>,
}

/// A thread record of the known schema.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ThreadEntry {
    key: Key,
    pub sha256: [u8; 32],
    pub session_id: Option<String>,
    pub has_checkpoint: bool,
}

/// What a previous run kept.
#[derive(Debug, Default)]
struct Prior {
    /// The ids that are not UUIDs which the documents' `others` were matched against.
    others: BTreeSet<Arc<str>>,
    /// By document id; the flag is set once this scan took the entry (it is kept again).
    docs: HashMap<Box<str>, (DocEntry, AtomicBool)>,
    /// By record path relative to S; the flag as for `docs`.
    threads: HashMap<Box<str>, (ThreadEntry, AtomicBool)>,
}

/// Which sessions directory a cache is for.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Identity {
    canonical: Vec<u8>,
    volume: u64,
    index: u64,
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
    next_docs: Mutex<Vec<(Box<str>, DocEntry)>>,
    next_threads: Mutex<Vec<(Box<str>, ThreadEntry)>>,
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
            Ok(bytes) => match decode(&bytes, &identity) {
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
            next_docs: Mutex::default(),
            next_threads: Mutex::default(),
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

    /// The kept verdict of document `id`, whose stat is `stat` now. An entry taken is kept
    /// again by [`VerdictCache::save`].
    pub(crate) fn document(&self, id: &str, stat: &Stat) -> Option<&DocEntry> {
        let key = Key::of(stat)?;
        let hit = self
            .prior
            .docs
            .get(id)
            .filter(|(e, _)| e.key == key && self.others_known);
        self.count(hit.is_some());
        hit.map(|(e, used)| {
            used.store(true, Ordering::Relaxed);
            e
        })
    }

    /// The kept verdict of the thread record at `rel`, whose stat is `stat` now.
    pub(crate) fn thread(&self, rel: &str, stat: &Stat) -> Option<&ThreadEntry> {
        let key = Key::of(stat)?;
        let hit = self.prior.threads.get(rel).filter(|(e, _)| e.key == key);
        self.count(hit.is_some());
        hit.map(|(e, used)| {
            used.store(true, Ordering::Relaxed);
            e
        })
    }

    fn count(&self, hit: bool) {
        let n = if hit { &self.hits } else { &self.misses };
        n.fetch_add(1, Ordering::Relaxed);
    }

    /// Keeps document `id`'s verdict for the next run (unless it changed too recently to be
    /// trusted). `others` are the ids of this scan's `others` its text names.
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
            key,
            data_dir,
            uuids,
            others,
        };
        lock(&self.next_docs).push((id.into(), entry));
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
            key,
            sha256: digest.sha256,
            session_id,
            has_checkpoint,
        };
        lock(&self.next_threads).push((rel.into(), entry));
    }

    /// Writes what this scan kept, atomically, creating the cache directory. The previous
    /// cache is replaced whole: entries of files this scan did not meet are gone.
    pub fn save(&self) -> Result<(), String> {
        let fresh_docs = lock(&self.next_docs);
        let fresh_threads = lock(&self.next_threads);
        let taken = |used: &AtomicBool| used.load(Ordering::Relaxed);
        let docs: Vec<(&str, &DocEntry)> = (self.prior.docs.iter())
            .filter(|(_, (_, used))| taken(used))
            .map(|(k, (e, _))| (&**k, e))
            .chain(fresh_docs.iter().map(|(k, e)| (&**k, e)))
            .collect();
        let threads: Vec<(&str, &ThreadEntry)> = (self.prior.threads.iter())
            .filter(|(_, (_, used))| taken(used))
            .map(|(k, (e, _))| (&**k, e))
            .chain(fresh_threads.iter().map(|(k, e)| (&**k, e)))
            .collect();
        let bytes = encode(&self.identity, &self.others, &docs, &threads);
        fsroot::replace_private_file(&self.file, &bytes)
            .map_err(|e| format!("cannot write {}: {e}", self.file.display()))
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// Every UUID-shaped window of `text` (`8-4-4-4-12` hex digits, any case), as 128 bits,
/// sorted and distinct: what a document's text can name of any session directory.
pub(crate) fn uuid_windows(text: &[u8]) -> Vec<u128> {
    let mut out: Vec<u128> = memchr::memchr_iter(b'-', text)
        .filter_map(|p| {
            let start = p.checked_sub(8)?;
            text.get(start..start + 36).and_then(crate::scan::uuid_bits)
        })
        .collect();
    out.sort_unstable();
    out.dedup();
    out
}

// The file: MAGIC, FORMAT, the doctor's version, the identity, the string table, the `others`
// (as string indices), the documents, the threads, then the BLAKE3 of everything before it.

struct Writer {
    out: Vec<u8>,
    strings: HashMap<Arc<str>, u32>,
    table: Vec<Arc<str>>,
}

impl Writer {
    fn u8(&mut self, v: u8) {
        self.out.push(v);
    }
    fn u32(&mut self, v: u32) {
        self.out.extend_from_slice(&v.to_le_bytes());
    }
    fn u64(&mut self, v: u64) {
        self.out.extend_from_slice(&v.to_le_bytes());
    }
    fn bytes(&mut self, b: &[u8]) {
        self.u32(b.len() as u32);
        self.out.extend_from_slice(b);
    }
    fn key(&mut self, k: &Key) {
        for v in [
            k.volume,
            k.index,
            k.len,
            k.mtime_ns as u64,
            k.ctime_ns as u64,
        ] {
            self.u64(v);
        }
    }
    /// The index of `s` in the string table (`u32::MAX`: none).
    fn string(&mut self, s: Option<&Arc<str>>) -> u32 {
        let Some(s) = s else { return u32::MAX };
        if let Some(&i) = self.strings.get(s) {
            return i;
        }
        let i = self.table.len() as u32;
        self.table.push(s.clone());
        self.strings.insert(s.clone(), i);
        i
    }
}

/// The cache file of `docs` and `threads`; each document's `others` narrowed to `others`, the
/// ids this scan matched against.
fn encode(
    identity: &Identity,
    others: &BTreeSet<Arc<str>>,
    docs: &[(&str, &DocEntry)],
    threads: &[(&str, &ThreadEntry)],
) -> Vec<u8> {
    // The body first, with string indices; then the header and the table in front of it.
    let mut w = Writer {
        out: Vec::with_capacity(docs.len() * 96 + threads.len() * 128),
        strings: HashMap::new(),
        table: Vec::new(),
    };
    w.u32(others.len() as u32);
    for o in others {
        let i = w.string(Some(o));
        w.u32(i);
    }
    w.u64(docs.len() as u64);
    for (id, e) in docs {
        w.bytes(id.as_bytes());
        w.key(&e.key);
        let i = w.string(e.data_dir.as_ref());
        w.u32(i);
        w.u32(e.uuids.len() as u32);
        for u in &e.uuids {
            w.out.extend_from_slice(&u.to_le_bytes());
        }
        let named: Vec<&Arc<str>> = e.others.iter().filter(|o| others.contains(*o)).collect();
        w.u32(named.len() as u32);
        for o in named {
            let i = w.string(Some(o));
            w.u32(i);
        }
    }
    w.u64(threads.len() as u64);
    for (rel, e) in threads {
        w.bytes(rel.as_bytes());
        w.key(&e.key);
        w.out.extend_from_slice(&e.sha256);
        w.u8(u8::from(e.has_checkpoint));
        match &e.session_id {
            Some(s) => {
                w.u8(1);
                w.bytes(s.as_bytes());
            }
            None => w.u8(0),
        }
    }
    let body = std::mem::take(&mut w.out);
    w.out.extend_from_slice(MAGIC);
    w.u32(FORMAT);
    w.bytes(env!("CARGO_PKG_VERSION").as_bytes());
    w.bytes(&identity.canonical);
    w.u64(identity.volume);
    w.u64(identity.index);
    let table = std::mem::take(&mut w.table);
    w.u32(table.len() as u32);
    for s in &table {
        w.bytes(s.as_bytes());
    }
    w.out.extend_from_slice(&body);
    let sum = blake3::hash(&w.out);
    w.out.extend_from_slice(sum.as_bytes());
    w.out
}

struct Reader<'a> {
    b: &'a [u8],
}

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Result<&'a [u8], String> {
        if self.b.len() < n {
            return Err("it ends early".into());
        }
        let (head, rest) = self.b.split_at(n);
        self.b = rest;
        Ok(head)
    }
    fn u8(&mut self) -> Result<u8, String> {
        Ok(self.take(1)?[0])
    }
    fn u32(&mut self) -> Result<u32, String> {
        Ok(u32::from_le_bytes(
            self.take(4)?.try_into().expect("4 bytes"),
        ))
    }
    fn u64(&mut self) -> Result<u64, String> {
        Ok(u64::from_le_bytes(
            self.take(8)?.try_into().expect("8 bytes"),
        ))
    }
    fn bytes(&mut self) -> Result<&'a [u8], String> {
        let n = self.u32()? as usize;
        self.take(n)
    }
    fn str(&mut self) -> Result<&'a str, String> {
        std::str::from_utf8(self.bytes()?).map_err(|_| "a name is not UTF-8".to_string())
    }
    fn key(&mut self) -> Result<Key, String> {
        Ok(Key {
            volume: self.u64()?,
            index: self.u64()?,
            len: self.u64()?,
            mtime_ns: self.u64()? as i64,
            ctime_ns: self.u64()? as i64,
        })
    }
    /// A count of items that take at least `each` bytes: one larger than the rest of the file
    /// could hold is refused before anything is allocated for it.
    fn count(&mut self, n: u64, each: usize) -> Result<usize, String> {
        let n = usize::try_from(n).map_err(|_| "a count is too large".to_string())?;
        if n.saturating_mul(each) > self.b.len() {
            return Err("a count exceeds the file".into());
        }
        Ok(n)
    }
}

fn decode(bytes: &[u8], identity: &Identity) -> Result<Prior, String> {
    let Some(body_len) = bytes.len().checked_sub(32) else {
        return Err("it is too short".into());
    };
    let (body, sum) = bytes.split_at(body_len);
    if blake3::hash(body).as_bytes() != sum {
        return Err("its checksum does not match (corrupt)".into());
    }
    let mut r = Reader { b: body };
    if r.take(MAGIC.len())? != MAGIC {
        return Err("it is not a verdict cache".into());
    }
    let format = r.u32()?;
    if format != FORMAT {
        return Err(format!("it is of format {format}, not {FORMAT}"));
    }
    let version = r.str()?;
    if version != env!("CARGO_PKG_VERSION") {
        return Err(format!("it was written by doctor {version}"));
    }
    let found = Identity {
        canonical: r.bytes()?.to_vec(),
        volume: r.u64()?,
        index: r.u64()?,
    };
    if &found != identity {
        return Err("it is for another directory".into());
    }
    let n = r.u32()?;
    let n = r.count(n.into(), 4)?;
    let mut table: Vec<Arc<str>> = Vec::with_capacity(n);
    for _ in 0..n {
        table.push(r.str()?.into());
    }
    let string = |i: u32| -> Result<Arc<str>, String> {
        table
            .get(i as usize)
            .cloned()
            .ok_or_else(|| "a string index is out of range".to_string())
    };
    let mut prior = Prior::default();
    let n = r.u32()?;
    for _ in 0..r.count(n.into(), 4)? {
        prior.others.insert(string(r.u32()?)?);
    }
    let n = r.u64()?;
    let n = r.count(n, 52)?;
    prior.docs.reserve(n);
    for _ in 0..n {
        let id: Box<str> = r.str()?.into();
        let key = r.key()?;
        let data_dir = match r.u32()? {
            u32::MAX => None,
            i => Some(string(i)?),
        };
        let nu = r.u32()?;
        let nu = r.count(nu.into(), 16)?;
        let mut uuids = Vec::with_capacity(nu);
        for _ in 0..nu {
            uuids.push(u128::from_le_bytes(
                r.take(16)?.try_into().expect("16 bytes"),
            ));
        }
        let no = r.u32()?;
        let no = r.count(no.into(), 4)?;
        let mut others = Vec::with_capacity(no);
        for _ in 0..no {
            others.push(string(r.u32()?)?);
        }
        let entry = DocEntry {
            key,
            data_dir,
            uuids,
            others,
        };
        prior.docs.insert(id, (entry, AtomicBool::new(false)));
    }
    let n = r.u64()?;
    let n = r.count(n, 80)?;
    prior.threads.reserve(n);
    for _ in 0..n {
        let rel: Box<str> = r.str()?.into();
        let key = r.key()?;
        let sha256: [u8; 32] = r.take(32)?.try_into().expect("32 bytes");
        let has_checkpoint = match r.u8()? {
            0 => false,
            1 => true,
            _ => return Err("a flag is neither 0 nor 1".into()),
        };
        let session_id = match r.u8()? {
            0 => None,
            1 => Some(r.str()?.to_owned()),
            _ => return Err("a flag is neither 0 nor 1".into()),
        };
        let entry = ThreadEntry {
            key,
            sha256,
            session_id,
            has_checkpoint,
        };
        prior.threads.insert(rel, (entry, AtomicBool::new(false)));
    }
    if !r.b.is_empty() {
        return Err("it has bytes after its last entry".into());
    }
    Ok(prior)
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

    fn sample() -> (Identity, Vec<u8>) {
        let identity = Identity {
            canonical: b"/s".to_vec(),
            volume: 7,
            index: 8,
        };
        let others: BTreeSet<Arc<str>> = ["ses-a".into()].into();
        let doc = DocEntry {
            key: key(1),
            data_dir: Some("/s/x/runtime".into()),
            uuids: vec![3, 9],
            others: vec!["ses-a".into(), "ses-gone".into()],
        };
        let thread = ThreadEntry {
            key: key(2),
            sha256: [4; 32],
            session_id: Some("d1".into()),
            has_checkpoint: true,
        };
        let docs = [("d1", &doc)];
        let threads = [("x/runtime/threads/t.json", &thread)];
        let bytes = encode(&identity, &others, &docs, &threads);
        (identity, bytes)
    }

    #[test]
    fn what_is_written_reads_back_whole() {
        let (identity, bytes) = sample();
        let prior = decode(&bytes, &identity).unwrap();
        assert_eq!(prior.others.len(), 1);
        let d = &prior.docs["d1"].0;
        assert_eq!(
            (d.key, d.data_dir.as_deref(), &d.uuids[..], d.others.len()),
            (key(1), Some("/s/x/runtime"), &[3u128, 9][..], 1)
        );
        let t = &prior.threads["x/runtime/threads/t.json"].0;
        assert_eq!(
            (t.key, t.sha256, t.session_id.as_deref(), t.has_checkpoint),
            (key(2), [4; 32], Some("d1"), true)
        );
    }

    #[test]
    fn a_corrupt_truncated_foreign_or_other_version_cache_is_refused() {
        let (identity, bytes) = sample();
        for i in [0, 20, bytes.len() / 2, bytes.len() - 1] {
            let mut b = bytes.clone();
            b[i] ^= 1;
            assert!(decode(&b, &identity).is_err(), "byte {i} flipped");
        }
        for n in [0, 31, 32, bytes.len() - 1] {
            assert!(decode(&bytes[..n], &identity).is_err(), "cut to {n}");
        }
        let other = Identity {
            index: 9,
            ..identity.clone()
        };
        assert_eq!(
            decode(&bytes, &other).unwrap_err(),
            "it is for another directory"
        );
        // Another version: the same layout with another version string and a valid checksum.
        let mut b = bytes[..bytes.len() - 32].to_vec();
        let at = MAGIC.len() + 4 + 4;
        b[at] ^= 1;
        let sum = blake3::hash(&b);
        b.extend_from_slice(sum.as_bytes());
        assert!(decode(&b, &identity)
            .unwrap_err()
            .starts_with("it was written by doctor"));
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
        let v = env!("CARGO_PKG_VERSION").as_bytes();
        b.extend_from_slice(&(v.len() as u32).to_le_bytes());
        b.extend_from_slice(v);
        b.extend_from_slice(&0u32.to_le_bytes());
        b.extend_from_slice(&0u64.to_le_bytes());
        b.extend_from_slice(&0u64.to_le_bytes());
        b.extend_from_slice(&u32::MAX.to_le_bytes()); // the string table's count
        let sum = blake3::hash(&b);
        b.extend_from_slice(sum.as_bytes());
        assert_eq!(
            decode(&b, &identity).unwrap_err(),
            "a count exceeds the file"
        );
    }

    #[test]
    fn uuid_windows_are_found_in_any_case_once_each() {
        let text =
            b"x 5E2F3B1C-0A4D-4C8E-9F10-6B7D8E9FA0B1 y 5e2f3b1c-0a4d-4c8e-9f10-6b7d8e9fa0b1 \
                     -- 12345678-aaaa-bbbb-cccc-dddddddddddd";
        let found = uuid_windows(text);
        assert_eq!(found.len(), 2, "{found:x?}");
        assert!(found.contains(&0x5e2f3b1c_0a4d_4c8e_9f10_6b7d8e9fa0b1));
    }

    fn stat(mtime_ns: i64, ctime_ns: i64) -> Stat {
        Stat {
            kind: EntryKind::File,
            len: 10,
            mtime: mtime_ns / 1_000_000_000,
            mtime_ns,
            ctime_ns,
            owner: fsroot::Owner::unknown(),
            id: fsroot::FileId::from_parts(1, 1),
            mode: 0o644,
        }
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
        let kept: Vec<_> = lock(&cache.next_docs)
            .iter()
            .map(|(id, _)| id.to_string())
            .collect();
        assert_eq!(kept, ["old"]);
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
        // An id the previous run did not match its text against: the document is read again.
        second.set_others(["ses-a".to_owned(), "ses-b".to_owned()]);
        assert!(second.document("d", &stat(5, 5)).is_none());
        assert_eq!(
            second.stats(),
            CacheStats {
                hits: 1,
                misses: 5,
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

    fn plain(s: &Path) -> Inventory {
        crate::scan(&Root::open(s).unwrap()).unwrap()
    }

    #[test]
    fn an_unchanged_store_is_judged_from_the_cache_and_a_changed_file_is_read_again() {
        let tmp = tempfile::tempdir().unwrap();
        let s = tmp.path().join("S");
        copy_tree(
            &Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/demo"),
            &s,
        );
        let cache = tmp.path().join("cache");
        std::thread::sleep(std::time::Duration::from_millis(30));

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
        let tmp = tempfile::tempdir().unwrap();
        let s = tmp.path().join("S");
        copy_tree(
            &Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/demo"),
            &s,
        );
        let cache = tmp.path().join("cache");
        std::thread::sleep(std::time::Duration::from_millis(30));
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
