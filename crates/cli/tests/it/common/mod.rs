//! Test support shared by the modules of this binary: running the `doctor` binary ([`Doctor`],
//! in `run.rs`), copying a store, listing a tree with content hashes (symlinks never followed),
//! the one [`assert_nothing_lost`], the `hold-lock` process that plays a host holding a `flock`,
//! and the redactions of snapshot text.

pub mod case;
mod run;

pub use run::{repair_options, test_cache_home, traced_mutations, Doctor, Ran};

use std::collections::{BTreeMap, BTreeSet};
use std::io::{BufRead, BufReader};
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
            #[cfg(unix)]
            std::os::unix::fs::symlink(target, &dst).unwrap();
            // Never on Windows: Wine's remove_dir_all follows a symlink made from Linux and
            // deletes what it points to (no tree a Windows test copies holds one).
            #[cfg(not(unix))]
            panic!(
                "{}: a symlink ({}) in a tree copied on Windows",
                src.display(),
                target.display()
            );
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

/// A relative path of a [`Tree`] as snapshots and the doctor's records spell it: its components
/// joined with `/` on every OS (a tree's keys are native paths, with `\` on Windows).
pub fn slashed(p: &Path) -> String {
    let parts: Vec<_> = p.iter().map(|c| c.to_string_lossy()).collect();
    parts.join("/")
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
    let at = meta.modified().unwrap();
    match at.duration_since(std::time::UNIX_EPOCH) {
        Ok(after) => after.as_nanos() as i128,
        Err(before) => -(before.duration().as_nanos() as i128),
    }
}

/// Every file under `.set-aside/<any run>/` of the tree `t` of S, as (path inside its run,
/// SHA-256), manifests left out: what runs set aside, whatever their ids.
pub fn set_aside_files(t: &Tree) -> BTreeSet<(PathBuf, String)> {
    t.iter()
        .filter_map(|(p, n)| {
            let rest = p.strip_prefix(".set-aside").ok()?;
            let inside: PathBuf = rest.components().skip(1).collect();
            match n {
                Node::File(b) if inside != Path::new("MANIFEST.jsonl") => {
                    Some((inside, sha256_hex(b)))
                }
                _ => None,
            }
        })
        .collect()
}

/// The paths whose entries differ between two trees.
pub fn tree_difference(a: &Tree, b: &Tree) -> Vec<PathBuf> {
    let mut paths: BTreeSet<&PathBuf> = a.keys().collect();
    paths.extend(b.keys());
    paths
        .into_iter()
        .filter(|p| a.get(*p) != b.get(*p))
        .cloned()
        .collect()
}

/// The names of the set-aside runs under `S/.set-aside`, in name order (none when it is
/// missing).
pub fn set_aside_runs(s: &Path) -> Vec<String> {
    let mut runs: Vec<String> = std::fs::read_dir(s.join(".set-aside"))
        .map(|d| {
            d.map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default();
    runs.sort();
    runs
}

/// Replaces whatever is at `s` with a fresh copy of `pristine` (mtimes included).
pub fn fresh_copy(pristine: &Path, s: &Path) {
    if s.exists() {
        std::fs::remove_dir_all(s).unwrap_or_else(|e| panic!("remove {}: {e}", s.display()));
    }
    copy_tree(pristine, s);
    copy_mtimes(pristine, s);
}

/// Whether `p` (relative to S) is one of the doctor's own files: its records under
/// `.reconcile/` and `.reconcile.lock`, its set-aside runs, and the stores' unbind receipts.
pub fn is_doctor_own(p: &Path) -> bool {
    let s = p.to_string_lossy();
    s.starts_with(".reconcile")
        || s.starts_with(".set-aside")
        || s.ends_with("session-unbind-receipts.jsonl")
}

/// The tree at `s` without the doctor's own files ([`is_doctor_own`]).
pub fn user_tree(s: &Path) -> Tree {
    tree(s)
        .into_iter()
        .filter(|(p, _)| !is_doctor_own(p))
        .collect()
}

/// What [`assert_nothing_lost`] accepts for an entry of `before` that is no longer at its path
/// unchanged. Start from [`Kept::in_run`] or [`Kept::in_any_run`]; each other method accepts
/// one more thing, or checks fewer entries, and says why at its call site.
#[derive(Debug, Clone, Copy)]
pub struct Kept<'a> {
    /// The set-aside run that may hold it at its mirrored path `.set-aside/<run>/<path>`;
    /// `None`: any run (a directory of `.set-aside/` named by a valid run id).
    run: Option<&'a str>,
    empty_dirs_may_go: bool,
    own_records_change: bool,
    files_only: bool,
    receipted_rewrites: bool,
    context: &'a str,
}

impl<'a> Kept<'a> {
    /// At its path, or at its mirrored path in the run `run`.
    pub fn in_run(run: &'a str) -> Kept<'a> {
        Kept {
            run: Some(run),
            empty_dirs_may_go: false,
            own_records_change: false,
            files_only: false,
            receipted_rewrites: false,
            context: "",
        }
    }

    /// At its path, or at its mirrored path in some set-aside run.
    pub fn in_any_run() -> Kept<'a> {
        Kept {
            run: None,
            ..Kept::in_run("")
        }
    }

    /// A directory that was empty may be gone: an empty directory holds no data (the doctor
    /// removes session directories a set-aside emptied).
    pub fn empty_dirs_may_go(self) -> Kept<'a> {
        Kept {
            empty_dirs_may_go: true,
            ..self
        }
    }

    /// The doctor's own `.reconcile/` and `.reconcile.lock` are not checked: its lock and its
    /// records change by design.
    pub fn own_records_change(self) -> Kept<'a> {
        Kept {
            own_records_change: true,
            ..self
        }
    }

    /// Only regular files are checked.
    pub fn files_only(self) -> Kept<'a> {
        Kept {
            files_only: true,
            ..self
        }
    }

    /// A thread record (a path with `/threads/`) may also have been rewritten, when a file is
    /// still at its path and a manifest line or a receipt among the doctor's own files records
    /// the SHA-256 of its earlier bytes (`sha256`, `previous_sha256`). A record that is gone is
    /// lost, even when an identical record elsewhere was rewritten.
    pub fn or_receipted_rewrite(self) -> Kept<'a> {
        Kept {
            receipted_rewrites: true,
            ..self
        }
    }

    /// Names the moment in the failure message (a kill point, a rerun).
    pub fn when(self, context: &'a str) -> Kept<'a> {
        Kept { context, ..self }
    }
}

/// Asserts nothing of `before` (a tree of S) was lost in `after`: each entry is at its path
/// unchanged, or byte-identical (a directory: a directory) at its mirrored path under
/// `.set-aside/`, or else accepted by `kept` (see [`Kept`]).
#[track_caller]
pub fn assert_nothing_lost(before: &Tree, after: &Tree, kept: Kept<'_>) {
    let runs: Vec<PathBuf> = match kept.run {
        Some(run) => vec![Path::new(".set-aside").join(run)],
        None => after
            .iter()
            .filter(|(p, n)| {
                **n == Node::Dir
                    && p.parent() == Some(Path::new(".set-aside"))
                    && store::ids::RunId::is_valid(&p.file_name().unwrap().to_string_lossy())
            })
            .map(|(p, _)| p.clone())
            .collect(),
    };
    let recorded = if kept.receipted_rewrites {
        recorded_hashes(after)
    } else {
        BTreeSet::new()
    };
    for (path, node) in before {
        let here = after.get(path);
        if here == Some(node)
            || (kept.own_records_change
                && (path.starts_with(".reconcile") || path == Path::new(".reconcile.lock")))
            || (kept.files_only && !matches!(node, Node::File(_)))
        {
            continue;
        }
        if runs.iter().any(|r| after.get(&r.join(path)) == Some(node)) {
            continue;
        }
        let empty_dir = *node == Node::Dir
            && !before
                .range(path.clone()..)
                .nth(1)
                .is_some_and(|(p, _)| p.starts_with(path));
        if kept.empty_dirs_may_go && empty_dir && here.is_none() {
            continue;
        }
        if let Node::File(bytes) = node {
            if path.to_string_lossy().contains("/threads/")
                && matches!(here, Some(Node::File(_)))
                && recorded.contains(&sha256_hex(bytes))
            {
                continue;
            }
        }
        let there: Vec<String> = runs
            .iter()
            .map(|r| {
                format!(
                    "at {} {}",
                    r.join(path).display(),
                    describe(after.get(&r.join(path)))
                )
            })
            .collect();
        panic!(
            "{}{} was lost: before {}, now at its path {}, {}",
            if kept.context.is_empty() {
                String::new()
            } else {
                format!("{}: ", kept.context)
            },
            path.display(),
            describe(Some(node)),
            describe(here),
            if there.is_empty() {
                "and no set-aside run".to_owned()
            } else {
                there.join(", ")
            },
        );
    }
}

/// The SHA-256s of earlier record versions named by manifest lines and receipts among the
/// doctor's own files of `t`.
fn recorded_hashes(t: &Tree) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    for (p, node) in t {
        if !(p.to_string_lossy().ends_with(".jsonl") && is_doctor_own(p)) {
            continue;
        }
        let Node::File(b) = node else { continue };
        for line in String::from_utf8_lossy(b).lines() {
            let Ok(v) = serde_json::from_str::<Value>(line) else {
                continue;
            };
            for k in ["sha256", "previous_sha256"] {
                if let Some(h) = v.get(k).and_then(|h| h.as_str()) {
                    out.insert(h.to_owned());
                }
            }
        }
    }
    out
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
        let mut child = Command::new(test_support::binary(
            env!("CARGO_BIN_EXE_doctor"),
            "hold-lock",
        ))
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
        set_mtime(&s.join(p), old).unwrap();
    }
    (tmp, s)
}

/// Sets the mtime of the file or directory at `path`. On Windows a directory opens only with
/// `FILE_FLAG_BACKUP_SEMANTICS`, and setting a time needs only `FILE_WRITE_ATTRIBUTES`.
pub fn set_mtime(path: &Path, at: std::time::SystemTime) -> std::io::Result<()> {
    #[cfg(windows)]
    let file = {
        use std::os::windows::fs::OpenOptionsExt;
        std::fs::OpenOptions::new()
            .access_mode(0x100) // FILE_WRITE_ATTRIBUTES
            .custom_flags(0x0200_0000) // FILE_FLAG_BACKUP_SEMANTICS
            .open(path)?
    };
    #[cfg(not(windows))]
    let file = std::fs::File::open(path)?;
    file.set_modified(at)
}

/// Gives every file and directory under `to` the mtime of its namesake under `from` (after a
/// [`copy_tree`], which does not keep them), so age-based rules see the same store.
pub fn copy_mtimes(from: &Path, to: &Path) {
    for (path, node) in tree(from) {
        if matches!(node, Node::Symlink(_)) {
            continue;
        }
        let t = std::fs::symlink_metadata(from.join(&path))
            .unwrap()
            .modified()
            .unwrap();
        set_mtime(&to.join(&path), t).unwrap();
    }
}

/// Replaces what differs between runs and machines: temp paths, run ids, pids, and values
/// derived from temp paths (execution scopes, hashes of files that hold a temp path).
pub struct Redactions {
    pairs: Vec<(String, String)>,
}

impl Redactions {
    pub fn new(paths: &[(&Path, &'static str)], runs: &[&str]) -> Redactions {
        let mut pairs: Vec<(String, String)> = Vec::new();
        for (p, to) in paths {
            let mut spellings = vec![p.to_string_lossy().into_owned()];
            if let Ok(c) = p.canonicalize() {
                spellings.push(c.to_string_lossy().into_owned());
            }
            for text in spellings {
                // A Windows path inside JSON has its backslashes escaped.
                if text.contains('\\') {
                    pairs.push((text.replace('\\', "\\\\"), to.to_string()));
                }
                pairs.push((text, to.to_string()));
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
        if cfg!(windows) {
            for to in self.roots() {
                out = slash_after(&out, to);
            }
        }
        redact_pids(&out)
    }

    /// The tokens that stand for a directory (`[S]`, `[HOME]`, ...), not a run id.
    fn roots(&self) -> BTreeSet<&str> {
        self.pairs
            .iter()
            .map(|(_, to)| to.as_str())
            .filter(|to| to.starts_with('[') && !to.contains(':') && *to != "[RUN]")
            .collect()
    }
}

/// `text` with the Windows separators of each path written after `token` (a redacted
/// directory) spelled `/`: `\` and, inside JSON, `\\`, up to the end of the path (a quote,
/// whitespace or the end of the text). On Windows S is native in human output and in the paths
/// the app writes (bindings), and a snapshot shows the same `[S]/x/runtime` on every OS.
pub fn slash_after(text: &str, token: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(i) = rest.find(token) {
        let (head, tail) = rest.split_at(i + token.len());
        out.push_str(head);
        let end = tail
            .find(|c: char| c == '"' || c.is_whitespace())
            .unwrap_or(tail.len());
        let path = tail[..end].replace("\\\\", "/").replace('\\', "/");
        out.push_str(&path);
        rest = &tail[end..];
    }
    out.push_str(rest);
    out
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

/// A JSON-lines file with `at` replaced, one line per record.
pub fn records(path: &Path, red: &Redactions) -> String {
    match std::fs::read_to_string(path) {
        Ok(text) => records_text(&text, &path.display().to_string(), red),
        Err(_) => "(none)\n".into(),
    }
}

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
