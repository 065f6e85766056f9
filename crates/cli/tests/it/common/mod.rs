//! Test support shared by the fixture, demo and bad-input tests: copying a store, listing a
//! tree with content hashes (symlinks never followed), and the `hold-lock` process that plays a
//! host holding a `flock`.

// Each test binary uses a different subset of these helpers.
#![allow(dead_code)]

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};

use serde_json::Value;
use sha2::{Digest, Sha256};
use std::fmt::Write as _;

/// `fixtures/` at the workspace root.
pub fn fixtures_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures")
}

/// Lowercase hex SHA-256 of `bytes`.
pub fn sha256_hex(bytes: &[u8]) -> String {
    Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// Copies the tree `from` into `to` (created), recreating symlinks as symlinks.
pub fn copy_tree(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap_or_else(|e| panic!("create {}: {e}", to.display()));
    let mut entries: Vec<_> = std::fs::read_dir(from)
        .unwrap_or_else(|e| panic!("list {}: {e}", from.display()))
        .map(|e| e.unwrap())
        .collect();
    entries.sort_by_key(|e| e.file_name());
    for entry in entries {
        let src = entry.path();
        let dst = to.join(entry.file_name());
        let ft = entry.file_type().unwrap();
        if ft.is_symlink() {
            let target = std::fs::read_link(&src).unwrap();
            std::os::unix::fs::symlink(target, &dst).unwrap();
        } else if ft.is_dir() {
            copy_tree(&src, &dst);
        } else {
            std::fs::copy(&src, &dst).unwrap_or_else(|e| panic!("copy {}: {e}", src.display()));
        }
    }
}

/// One entry of a [`Tree`], as `lstat` sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Node {
    /// A regular file and its bytes.
    File(Vec<u8>),
    /// A directory.
    Dir,
    /// A symlink and its target (never followed).
    Symlink(PathBuf),
    /// A socket, fifo or device.
    Other,
}

/// Every path under a directory (relative, not including the directory itself).
pub type Tree = BTreeMap<PathBuf, Node>;

/// Lists every path under `root`, recursively, without following symlinks.
pub fn tree(root: &Path) -> Tree {
    let mut out = Tree::new();
    walk(root, Path::new(""), &mut out);
    out
}

fn walk(root: &Path, rel: &Path, out: &mut Tree) {
    let dir = root.join(rel);
    for entry in std::fs::read_dir(&dir).unwrap_or_else(|e| panic!("list {}: {e}", dir.display())) {
        let entry = entry.unwrap();
        let child = rel.join(entry.file_name());
        let path = root.join(&child);
        let ft = std::fs::symlink_metadata(&path).unwrap().file_type();
        if ft.is_symlink() {
            out.insert(child, Node::Symlink(std::fs::read_link(&path).unwrap()));
        } else if ft.is_dir() {
            out.insert(child.clone(), Node::Dir);
            walk(root, &child, out);
        } else if ft.is_file() {
            let bytes =
                std::fs::read(&path).unwrap_or_else(|e| panic!("read {}: {e}", path.display()));
            out.insert(child, Node::File(bytes));
        } else {
            out.insert(child, Node::Other);
        }
    }
}

/// Every path under `root` with its `lstat` mtime in nanoseconds: a file created and removed
/// again, or rewritten with the same bytes, shows up as a changed directory or file mtime.
pub fn mtimes(root: &Path) -> BTreeMap<PathBuf, i128> {
    let mut out = BTreeMap::new();
    let meta = std::fs::symlink_metadata(root).unwrap();
    out.insert(PathBuf::new(), mtime_ns(&meta));
    for path in tree(root).keys() {
        let meta = std::fs::symlink_metadata(root.join(path)).unwrap();
        out.insert(path.clone(), mtime_ns(&meta));
    }
    out
}

fn mtime_ns(meta: &std::fs::Metadata) -> i128 {
    i128::from(meta.mtime()) * 1_000_000_000 + i128::from(meta.mtime_nsec())
}

/// Asserts nothing of `before` was lost: each file and symlink is at its path with the same
/// content, or (for a set-aside item) byte-identical at `.set-aside/<run>/<path>`; each
/// directory is still a directory at one of the two places, unless it was empty (an empty
/// directory holds no data: the doctor removes session directories a set-aside emptied).
#[track_caller]
pub fn assert_nothing_lost(before: &Tree, after: &Tree, run: &str) {
    for (path, node) in before {
        let mirrored = Path::new(".set-aside").join(run).join(path);
        let here = after.get(path);
        let there = after.get(&mirrored);
        let empty_dir = *node == Node::Dir
            && !before
                .range(path.clone()..)
                .nth(1)
                .is_some_and(|(p, _)| p.starts_with(path));
        assert!(
            here == Some(node) || there == Some(node) || (empty_dir && here.is_none()),
            "{} was lost: before {}, now at its path {}, at {} {}",
            path.display(),
            describe(Some(node)),
            describe(here),
            mirrored.display(),
            describe(there),
        );
    }
}

fn describe(node: Option<&Node>) -> String {
    match node {
        None => "nothing".into(),
        Some(Node::File(b)) => format!("a file of {} bytes ({})", b.len(), &sha256_hex(b)[..12]),
        Some(Node::Dir) => "a directory".into(),
        Some(Node::Symlink(t)) => format!("a symlink to {}", t.display()),
        Some(Node::Other) => "a special file".into(),
    }
}

/// A `hold-lock` process holding `flock`s on some files until dropped.
pub struct Holder {
    child: Child,
    stdin: Option<ChildStdin>,
}

impl Holder {
    /// Starts `hold-lock` on `files` (absolute paths) and waits until it says `held`.
    pub fn spawn(files: &[PathBuf]) -> Holder {
        let mut child = Command::new(env!("CARGO_BIN_EXE_hold-lock"))
            .args(files)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start hold-lock");
        let stdin = child.stdin.take();
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        if line.trim() != "held" {
            let out = child.wait_with_output().unwrap();
            panic!(
                "hold-lock did not take {files:?}: stdout {line:?}, stderr {}",
                String::from_utf8_lossy(&out.stderr)
            );
        }
        Holder { child, stdin }
    }
}

impl Drop for Holder {
    fn drop(&mut self) {
        // Closing stdin is how hold-lock is told to release; kill is the fallback.
        drop(self.stdin.take());
        for _ in 0..500 {
            if let Ok(Some(_)) = self.child.try_wait() {
                return;
            }
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A copy of the demo store (every sessions rule has a case in it) in a fresh temporary
/// directory, with its artifact-only directory `zeta/` made weeks old so that R5 acts too.
/// Returns the temp dir (keep it alive) and S.
#[allow(dead_code)]
pub fn demo_with_old_artifacts() -> (tempfile::TempDir, PathBuf) {
    let tmp = tempfile::tempdir().unwrap();
    let s = tmp.path().join("S");
    copy_tree(&fixtures_dir().join("demo"), &s);
    let old = std::time::SystemTime::UNIX_EPOCH + std::time::Duration::from_secs(1_760_000_000);
    for p in [
        "zeta/artifacts/build.log",
        "zeta/approval_receipts.jsonl",
        "zeta/artifacts",
        "zeta",
    ] {
        std::fs::File::open(s.join(p))
            .and_then(|f| f.set_modified(old))
            .unwrap();
    }
    (tmp, s)
}

/// Gives every file and directory under `to` the mtime of its namesake under `from` (after a
/// [`copy_tree`], which does not keep them), so age-based rules see the same store.
#[allow(dead_code)]
pub fn copy_mtimes(from: &Path, to: &Path) {
    for (path, node) in tree(from) {
        if matches!(node, Node::Symlink(_)) {
            continue;
        }
        let t = std::fs::symlink_metadata(from.join(&path))
            .unwrap()
            .modified()
            .unwrap();
        std::fs::File::open(to.join(&path))
            .and_then(|f| f.set_modified(t))
            .unwrap();
    }
}

#[allow(dead_code)]
/// Replaces what differs between runs and machines: temp paths, run ids, pids, and values
/// derived from temp paths (execution scopes, hashes of files that hold a temp path).
pub struct Redactions {
    pairs: Vec<(String, String)>,
}

impl Redactions {
    pub fn new(paths: &[(&Path, &'static str)], runs: &[&str]) -> Redactions {
        let mut pairs: Vec<(String, String)> = Vec::new();
        for (p, to) in paths {
            pairs.push((p.to_string_lossy().into_owned(), to.to_string()));
            if let Ok(c) = p.canonicalize() {
                pairs.push((c.to_string_lossy().into_owned(), to.to_string()));
            }
        }
        pairs.extend(runs.iter().map(|r| (r.to_string(), "[RUN]".to_owned())));
        let mut red = Redactions { pairs };
        red.sort();
        red
    }

    /// Adds one literal replacement (no canonical form added: `from` is replaced as written).
    /// When two replacements share `from`, the one added first wins.
    pub fn with(mut self, from: impl Into<String>, to: impl Into<String>) -> Redactions {
        let from = from.into();
        if !from.is_empty() {
            self.pairs.push((from, to.into()));
            self.sort();
        }
        self
    }

    /// Longest first, so that a path is replaced before any of its prefixes (stable: equal
    /// lengths keep the order they were added in).
    fn sort(&mut self) {
        self.pairs
            .sort_by_key(|(from, _)| std::cmp::Reverse(from.len()));
    }

    pub fn apply(&self, text: &str) -> String {
        let mut out = text.to_owned();
        for (from, to) in &self.pairs {
            out = out.replace(from.as_str(), to);
        }
        redact_pids(&out)
    }
}

/// `pid 1234` -> `pid [PID]`.
fn redact_pids(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(i) = rest.find("pid ") {
        out.push_str(&rest[..i + 4]);
        rest = &rest[i + 4..];
        let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
        if digits > 0 {
            out.push_str("[PID]");
            rest = &rest[digits..];
        }
    }
    out.push_str(rest);
    out
}

#[allow(dead_code)]
/// A JSON-lines file with `at` replaced, one line per record.
pub fn records(path: &Path, red: &Redactions) -> String {
    match std::fs::read_to_string(path) {
        Ok(text) => records_text(&text, &path.display().to_string(), red),
        Err(_) => "(none)\n".into(),
    }
}

#[allow(dead_code)]
/// [`records`] of the text of a JSON-lines file (`what` names it in a panic).
pub fn records_text(text: &str, what: &str, red: &Redactions) -> String {
    let mut out = String::new();
    for line in text.lines() {
        let mut v: Value = serde_json::from_str(line)
            .unwrap_or_else(|e| panic!("{what}: line is not JSON ({e}): {line}"));
        if let Some(at) = v.get_mut("at") {
            *at = Value::String("[AT]".into());
        }
        writeln!(out, "{}", red.apply(&v.to_string())).unwrap();
    }
    out
}

/// One pause window: the text of the mutation to pause before, and what to do inside it.
#[allow(dead_code)]
pub type Window<'a> = (&'a str, Box<dyn FnOnce() + 'a>);

/// What a paused run printed, and how it ended.
#[allow(dead_code)]
pub struct PausedRun {
    pub code: Option<i32>,
    pub stdout: String,
    pub stderr: String,
}

/// Runs `cmd` (the doctor binary) with one pause window per entry of `windows`
/// (`DOCTOR_PAUSE_BEFORE`, texts joined by `|`): the run stops before the first mutation whose
/// description contains the text, the entry's closure changes the store inside that window,
/// then the run goes on. A race becomes a deterministic test.
#[allow(dead_code)]
pub fn run_paused(mut cmd: std::process::Command, windows: Vec<Window<'_>>) -> PausedRun {
    use std::io::{BufRead, BufReader, Read, Write};
    use std::process::Stdio;
    let texts: Vec<&str> = windows.iter().map(|(t, _)| *t).collect();
    let pause = texts.join("|");
    let mut child = cmd
        .env("DOCTOR_PAUSE_BEFORE", &pause)
        .env_remove("DOCTOR_LOG")
        .env_remove("RUST_LOG")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut out = child.stdout.take().unwrap();
    let stdout = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = out.read_to_string(&mut s);
        s
    });
    let mut err = BufReader::new(child.stderr.take().unwrap());
    let mut stderr = String::new();
    let mut stdin = child.stdin.take().unwrap();
    for (_, during) in windows {
        loop {
            let mut line = String::new();
            if err.read_line(&mut line).unwrap() == 0 {
                panic!("the doctor ended without pausing before {pause:?}: {stderr}");
            }
            stderr.push_str(&line);
            if line.contains("fault point: paused") {
                break;
            }
        }
        during();
        stdin.write_all(b"\n").unwrap();
        stdin.flush().unwrap();
    }
    drop(stdin);
    let _ = err.read_to_string(&mut stderr);
    let status = child.wait().unwrap();
    PausedRun {
        code: status.code(),
        stdout: stdout.join().unwrap(),
        stderr,
    }
}

/// The mutations a real repair of `s` makes, traced (`DOCTOR_FAULT_TRACE=1`): number and
/// description, in order. The run changes `s`: run it on an identical copy (the sequence is
/// the same for the same store).
#[allow(dead_code)]
pub fn traced_mutations(s: &Path, now: &str) -> Vec<(u64, String)> {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_doctor"))
        .args(["--repair-sessions", "--json", "--sessions-dir"])
        .arg(s)
        .env("DOCTOR_NOW", now)
        .env("DOCTOR_FAULT_TRACE", "1")
        .env_remove("DOCTOR_PAUSE_BEFORE")
        .env_remove("DOCTOR_FAULT_AT")
        .env_remove("DOCTOR_LOG")
        .env_remove("RUST_LOG")
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    String::from_utf8_lossy(&out.stderr)
        .lines()
        .filter_map(|l| {
            let rest = l.strip_prefix("doctor: fault point: mutation ")?;
            let (n, described) = rest.split_once(' ')?;
            let described = described.strip_prefix('(')?.strip_suffix(')')?;
            Some((n.parse().ok()?, described.to_owned()))
        })
        .collect()
}
