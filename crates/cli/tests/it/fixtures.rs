//! The sessions pack's fixture cases for the one harness (`harness.rs`): the stores of
//! `fixtures/sessions/<case>/`, one snapshot each (`snapshots/sessions/<case>.snap`).
//!
//! A case is a store (`store/`, copied to a temp dir as S), an optional `$CODEWHALE_HOME`
//! (`home/`, copied beside it; without one every run gets an empty home, so no test reads the
//! real `~/.codewhale`) and a `case.json` for what git cannot hold: empty directories, symlinks,
//! mtimes, locks a second process holds for the whole case, the clock and `--max-actions`.
//!
//! Real stores hold absolute paths (`runtime_store.data_dir`) and values derived from them
//! (`execution_scope`), which a fixture cannot know before it is copied. After copying, these
//! placeholders are replaced in every regular file of S and of the home:
//!
//! - `@SESSIONS_DIR@`: the canonical absolute path of S (every one is inside a JSON string; on
//!   Windows the path after it is joined natively and the whole escaped, as the app writes
//!   `std::fs::canonicalize`'s `\\?\C:\...\S\x\runtime`);
//! - `@SESSIONS_LINK@`: the path of a symlink to S that lives outside S (`<tmp>/sessions-link`);
//! - `@SCOPE:<store>@`: the execution scope of the store `<store>` (a path relative to S) as the
//!   app computes it: lowercase hex SHA-256 of its `owner.json` `owner_id`, one zero byte, and
//!   `<canonical S>/<store>/events.lock` (empty when the store has no readable `owner.json`).
//!
//! The snapshot shows S as `[S]`, the link as `[S-LINK]`, the home as `[HOME]`, each store's
//! scope as `[SCOPE:<store>]`, and the SHA-256 of a file whose placeholders were replaced as
//! `[SHA256:<path>]`; in the tree listing, a file that holds such a value is hashed and sized as
//! shown. Byte counts in plans and manifests are not redacted: the temp dir is always
//! `/tmp/.tmpXXXXXX`, so they are the same on every Linux machine. On Windows the tree listing
//! and the records are shown with `/` and with S's separators as on Linux, and a record's size
//! as it would be with Linux's S; a case whose store holds S is not compared there (its
//! documents' byte counts in plans and manifests depend on S's length).
//!
//! Each case is repaired through the library as a host would. Beyond what the harness shows and
//! checks, the snapshot shows the files the real run wrote, the manifest, receipts and
//! `last.json`, and the test checks that the home is never changed and that nothing was lost. A
//! case whose rules converge over two runs by design (`second_run_acts`) takes two real runs.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use crate::common::{
    self, assert_nothing_lost, copy_tree, records_text, sha256_hex, slashed, tree, Holder, Kept,
    Node, Redactions, Tree,
};
use crate::harness::{self, pretty, Pack, Sections};
use doctor::RepairReport;
use serde::Deserialize;
use serde_json::Value;
use store::Clock;

/// `fixtures/sessions/<case>/case.json`, besides the keys the harness reads.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields, default)]
struct Case {
    /// Files a second process holds an exclusive `flock` on during the whole case.
    hold_locks: Vec<String>,
    /// `--max-actions`.
    max_actions: Option<usize>,
    /// Whether some actions are expected to be skipped at apply time.
    expect_skipped: bool,
    /// The rules converge over two runs by design (for example R5 names are collected before
    /// R4 unbinds): the second plan is not empty, a second real run applies it, and a third
    /// dry run must find nothing.
    second_run_acts: bool,
    /// `--allow-mass-set-aside`: R1 may set aside more than half of the documents.
    allow_mass_set_aside: bool,
}

/// A case, set up: its `case.json`, S, its `$CODEWHALE_HOME`, the symlink to S outside S, what
/// the placeholders were replaced with, and the process holding the case's locks.
struct Sessions {
    case: Case,
    s: PathBuf,
    home: PathBuf,
    link: PathBuf,
    /// Store path relative to S -> its execution scope, for every store of S with an owner id.
    scopes: BTreeMap<String, String>,
    /// Paths (relative to S, or `[HOME]/...`) of files whose placeholders were replaced, with
    /// the SHA-256 of their new bytes.
    substituted: Vec<(String, String)>,
    /// The fixture's files as committed, for telling input values from derived ones.
    input_text: String,
    _holder: Option<Holder>,
}

/// The execution scope the app computes for the store at `<canonical S>/<rel>`
/// (codewhale-format.md §4.5): empty when it has no readable owner id.
fn scope_of(s: &Path, canonical_s: &Path, rel: &str) -> String {
    let owner = std::fs::read(s.join(rel).join("owner.json"))
        .ok()
        .and_then(|b| serde_json::from_slice::<Value>(&b).ok())
        .and_then(|v| v.get("owner_id").and_then(Value::as_str).map(str::to_owned));
    let Some(owner) = owner else {
        return String::new();
    };
    let mut bytes = owner.into_bytes();
    bytes.push(0);
    bytes.extend_from_slice(
        canonical_s
            .join(rel)
            .join("events.lock")
            .as_os_str()
            .as_encoded_bytes(),
    );
    sha256_hex(&bytes)
}

/// Every `S/<dir>/<runtime|runtime-recovered-*>` directory (symlinks not followed).
fn store_dirs(s: &Path) -> Vec<String> {
    let mut out = Vec::new();
    for (path, node) in tree(s) {
        let parts: Vec<_> = path
            .iter()
            .map(|c| c.to_string_lossy().into_owned())
            .collect();
        if node == Node::Dir
            && parts.len() == 2
            && (parts[1] == "runtime" || parts[1].starts_with("runtime-recovered-"))
        {
            out.push(parts.join("/"));
        }
    }
    out
}

/// Replaces the placeholders (module doc) in `bytes`; `None` when there is none.
fn substitute(bytes: &[u8], setup: &Sessions, canonical_s: &Path) -> Option<Vec<u8>> {
    const SCOPE: &[u8] = b"@SCOPE:";
    let dir = canonical_s.as_os_str().as_encoded_bytes();
    let link = setup.link.as_os_str().as_encoded_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut changed = false;
    let mut i = 0;
    while i < bytes.len() {
        let rest = &bytes[i..];
        if rest.starts_with(b"@SESSIONS_DIR@") && cfg!(windows) {
            // Every placeholder is inside a JSON string: the path the app writes there is
            // `std::fs::canonicalize`'s (`\\?\C:\...\S\x\runtime`, where `/` is no separator),
            // with its backslashes escaped.
            let tail = &rest[b"@SESSIONS_DIR@".len()..];
            let end = tail.iter().position(|&b| b == b'"').unwrap_or(tail.len());
            let rel = String::from_utf8_lossy(&tail[..end]);
            let native = canonical_s.join(rel.trim_start_matches('/'));
            let escaped = native.to_string_lossy().replace('\\', "\\\\");
            out.extend_from_slice(escaped.as_bytes());
            i += b"@SESSIONS_DIR@".len() + end;
        } else if rest.starts_with(b"@SESSIONS_DIR@") {
            out.extend_from_slice(dir);
            i += b"@SESSIONS_DIR@".len();
        } else if rest.starts_with(b"@SESSIONS_LINK@") {
            out.extend_from_slice(link);
            i += b"@SESSIONS_LINK@".len();
        } else if let Some(end) = rest
            .starts_with(SCOPE)
            .then(|| rest[SCOPE.len()..].iter().position(|&b| b == b'@'))
            .flatten()
        {
            let rel = String::from_utf8_lossy(&rest[SCOPE.len()..SCOPE.len() + end]).into_owned();
            let scope = match setup.scopes.get(&rel) {
                Some(scope) => scope.clone(),
                None => scope_of(&setup.s, canonical_s, &rel),
            };
            out.extend_from_slice(scope.as_bytes());
            i += SCOPE.len() + end + 1;
        } else {
            out.push(bytes[i]);
            i += 1;
            continue;
        }
        changed = true;
    }
    changed.then_some(out)
}

/// Replaces the placeholders in every regular file under `root`, recording what changed.
fn substitute_tree(root: &Path, shown_as: &str, setup: &mut Sessions, canonical_s: &Path) {
    for (path, node) in tree(root) {
        let Node::File(bytes) = node else { continue };
        let Some(new) = substitute(&bytes, setup, canonical_s) else {
            continue;
        };
        let full = root.join(&path);
        // Keep the file's permissions: rewrite in place.
        std::fs::write(&full, &new).unwrap_or_else(|e| panic!("write {}: {e}", full.display()));
        let rel = format!("{shown_as}{}", slashed(&path));
        setup.substituted.push((rel, sha256_hex(&new)));
    }
}

/// The text of every file of the case as committed (lossy), concatenated.
fn input_text(dir: &Path) -> String {
    let mut text = String::new();
    for sub in ["store", "home"] {
        if dir.join(sub).is_dir() {
            for node in tree(&dir.join(sub)).into_values() {
                if let Node::File(b) = node {
                    text.push_str(&String::from_utf8_lossy(&b));
                }
            }
        }
    }
    text
}

/// The doctor's own records, whose bytes hold the run id; their content is shown redacted.
fn is_record(path: &str) -> bool {
    path.starts_with(".reconcile/")
        || path.ends_with("/MANIFEST.jsonl")
        || path.ends_with("/session-unbind-receipts.jsonl")
}

/// The content of every file outside `.set-aside/` that the real run created or rewrote
/// (recovered documents, rewritten thread records), so token totals, titles and preserved
/// unknown fields show in the snapshot. Per-store unbind receipts are shown redacted.
fn written_files(before: &Tree, after: &Tree, setup: &Sessions, red: &Redactions) -> String {
    let s = setup.s.as_path();
    let mut out = String::new();
    for (path, node) in after {
        let rel = slashed(path);
        if rel.starts_with(".set-aside") || rel.starts_with(".reconcile") {
            continue;
        }
        let Node::File(bytes) = node else { continue };
        let old = before.get(path);
        if old == Some(node) {
            continue;
        }
        writeln!(
            out,
            "--- {} ({}) ---",
            red.apply(&rel),
            if old.is_some() { "rewritten" } else { "new" }
        )
        .unwrap();
        if rel.ends_with("/session-unbind-receipts.jsonl") {
            let text = String::from_utf8_lossy(bytes);
            out.push_str(&records_text(
                &text,
                &s.join(path).display().to_string(),
                red,
            ));
        } else {
            out.push_str(&setup.show(red, &String::from_utf8_lossy(bytes)));
        }
    }
    if out.is_empty() {
        out.push_str("(none)\n");
    }
    out
}

impl Sessions {
    /// How long `bytes` (a record, which may name a file in S: an error) would be with S spelled
    /// as on Linux, where S is `/tmp/.tmpXXXXXX/S` ([`Pack::TEMP_IN`]) and separators are `/`:
    /// the byte count a snapshot shows on every OS.
    fn len_with_linux_s(&self, bytes: &[u8]) -> usize {
        const MARK: &str = "\u{1}";
        const LINUX_S: usize = "/tmp/.tmpXXXXXX/S".len();
        let mut text = String::from_utf8_lossy(bytes).into_owned();
        let mut spellings = vec![self.s.to_string_lossy().into_owned()];
        if let Ok(c) = self.s.canonicalize() {
            spellings.push(c.to_string_lossy().into_owned());
        }
        let escaped: Vec<String> = spellings.iter().map(|t| t.replace('\\', "\\\\")).collect();
        spellings.extend(escaped);
        spellings.sort_by_key(|t| std::cmp::Reverse(t.len()));
        for t in &spellings {
            text = text.replace(t.as_str(), MARK);
        }
        let text = common::slash_after(&text, MARK);
        text.len() + text.matches(MARK).count() * (LINUX_S - MARK.len())
    }
}

impl Pack for Sessions {
    const NAME: &'static str = "sessions";
    const MIN_CASES: usize = 1;
    /// Always /tmp (not $TMPDIR): S's absolute path, which some files hold, then has the same
    /// length on every machine, and so do the byte counts the snapshot shows.
    const TEMP_IN: &'static str = "/tmp";
    const ROOT: (&'static str, &'static str) = ("store", "S");
    type Case = Case;
    type Report = RepairReport;

    /// Copies the home beside S, links to S, replaces the placeholders and starts the holder.
    fn set_up(case: Case, dir: &Path, s: &Path) -> Result<Sessions, &'static str> {
        let tmp = s.parent().unwrap();
        let home = tmp.join("home");
        if dir.join("home").is_dir() {
            copy_tree(&dir.join("home"), &home);
        } else {
            std::fs::create_dir(&home).unwrap();
        }
        let link = tmp.join("sessions-link");
        let input_text = input_text(dir);
        #[cfg(unix)]
        std::os::unix::fs::symlink(s, &link).unwrap();
        // Windows links cannot be made under Wine, and a Windows test never works beside one.
        #[cfg(not(unix))]
        if input_text.contains("@SESSIONS_LINK@") {
            return Err("the store names S through a symlink, which this OS's tests do not make");
        }

        let canonical_s = s.canonicalize().unwrap();
        let scopes = store_dirs(s)
            .into_iter()
            .map(|rel| {
                let scope = scope_of(s, &canonical_s, &rel);
                (rel, scope)
            })
            .filter(|(_, scope)| !scope.is_empty())
            .collect();
        let mut setup = Sessions {
            case,
            s: s.to_path_buf(),
            home: home.clone(),
            link,
            scopes,
            substituted: Vec::new(),
            input_text,
            _holder: None,
        };
        substitute_tree(s, "", &mut setup, &canonical_s);
        substitute_tree(&home, "[HOME]/", &mut setup, &canonical_s);
        let held: Vec<PathBuf> = setup.case.hold_locks.iter().map(|f| s.join(f)).collect();
        setup._holder = (!held.is_empty()).then(|| Holder::spawn(&held));
        Ok(setup)
    }

    fn untouched(&self) -> Vec<(PathBuf, &'static str)> {
        let read_only = "$CODEWHALE_HOME is read-only for the doctor";
        vec![(self.home.clone(), read_only)]
    }

    fn real_runs(&self) -> usize {
        1 + usize::from(self.case.second_run_acts)
    }

    fn same_bytes_everywhere(&self) -> bool {
        self.substituted.is_empty()
    }

    fn run(&self, dry_run: bool, clock: Clock) -> RepairReport {
        let mut opts = crate::common::repair_options(&self.s);
        opts.dry_run = dry_run;
        opts.codewhale_home = Some(self.home.clone());
        opts.clock = clock;
        // A fixture holds what its rules need, not every mark of a real store; the recognition
        // guard has tests of its own (`bad_input`).
        opts.assume_session_store = true;
        opts.allow_mass_set_aside = self.case.allow_mass_set_aside;
        if let Some(n) = self.case.max_actions {
            opts.max_actions = n;
        }
        doctor::repair_sessions(&opts)
            .unwrap_or_else(|e| panic!("repair (dry_run: {dry_run}) failed: {e}"))
    }

    /// The redactions of a case: its paths, run ids, and the values derived from its paths:
    /// scopes, and the SHA-256 of every file of `trees` (outside the doctor's records) whose bytes
    /// hold a temp path or a scope, such as a recovered document.
    fn redactions(&self, runs: &[&str], trees: &[&Tree]) -> Redactions {
        let mut red = Redactions::new(&[(self.s.as_path(), "[S]")], runs)
            .with(self.link.to_string_lossy(), "[S-LINK]")
            .with(self.home.to_string_lossy(), "[HOME]");
        if let Ok(home) = self.home.canonicalize() {
            red = red.with(home.to_string_lossy(), "[HOME]");
        }
        for (rel, scope) in &self.scopes {
            red = red.with(scope.clone(), format!("[SCOPE:{rel}]"));
        }
        for (rel, sha) in &self.substituted {
            red = red.with(sha.clone(), format!("[SHA256:{rel}]"));
        }
        let mut needles: Vec<Vec<u8>> = vec![
            self.s.as_os_str().as_encoded_bytes().to_vec(),
            self.link.as_os_str().as_encoded_bytes().to_vec(),
        ];
        if let Ok(c) = self.s.canonicalize() {
            needles.push(c.as_os_str().as_encoded_bytes().to_vec());
        }
        needles.extend(self.scopes.values().map(|v| v.as_bytes().to_vec()));
        for tree in trees {
            for (path, node) in tree.iter() {
                let rel = slashed(path);
                if rel.starts_with(".set-aside") || rel.starts_with(".reconcile") {
                    continue;
                }
                let Node::File(bytes) = node else { continue };
                if needles
                    .iter()
                    .any(|n| bytes.windows(n.len()).any(|w| w == n.as_slice()))
                {
                    red = red.with(sha256_hex(bytes), format!("[SHA256:{rel}]"));
                }
            }
        }
        red
    }

    /// `red.apply`, then any `"execution_scope": "<64 hex>"` left whose value is in no input file
    /// (it depends on the temp path, yet belongs to no store of the fixture) becomes `[SCOPE:?]`.
    fn show(&self, red: &Redactions, text: &str) -> String {
        let text = red.apply(text);
        let key = "\"execution_scope\":";
        let mut out = String::with_capacity(text.len());
        let mut rest = text.as_str();
        while let Some(i) = rest.find(key) {
            let (head, tail) = rest.split_at(i + key.len());
            out.push_str(head);
            let spaces = tail.len() - tail.trim_start_matches(' ').len();
            let value = &tail[spaces..];
            let hex = value
                .strip_prefix('"')
                .and_then(|v| v.get(..65))
                .filter(|v| v.ends_with('"'))
                .map(|v| &v[..64])
                .filter(|h| {
                    h.bytes()
                        .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
                });
            match hex {
                Some(h) if !self.input_text.contains(h) => {
                    out.push_str(&tail[..spaces]);
                    out.push_str("\"[SCOPE:?]\"");
                    rest = &value[66..];
                }
                _ => rest = tail,
            }
        }
        out.push_str(rest);
        out
    }

    fn listed_as(&self, path: &str, bytes: &[u8]) -> Option<String> {
        let len = if cfg!(windows) {
            self.len_with_linux_s(bytes)
        } else {
            bytes.len()
        };
        is_record(path).then(|| format!("file {len:>6}  (record, below)"))
    }

    fn sections(
        &self,
        red: &Redactions,
        before: &Tree,
        after: &Tree,
        real: &RepairReport,
    ) -> Sections {
        let file = |rel: &str| match after.get(Path::new(rel)) {
            Some(Node::File(b)) => Some(String::from_utf8_lossy(b).into_owned()),
            _ => None,
        };
        let record = |rel: &str| match file(rel) {
            Some(text) => self.show(red, &records_text(&text, rel, red)),
            None => "(none)\n".to_owned(),
        };
        let last = file(".reconcile/last.json").expect("a real run writes .reconcile/last.json");
        let mut last: Value = serde_json::from_str(&last).expect("last.json is JSON");
        last["at"] = Value::String("[AT]".into());
        let last = self.show(red, &(pretty(&last) + "\n"));
        let manifest = record(&format!(".set-aside/{}/MANIFEST.jsonl", real.run));
        let receipts = record(".reconcile/receipts.jsonl");
        let written = written_files(before, after, self, red);
        vec![
            ("files the real run wrote or rewrote", written),
            (".set-aside/[RUN]/MANIFEST.jsonl", manifest),
            (".reconcile/receipts.jsonl", receipts),
            (".reconcile/last.json", last),
        ]
    }

    fn all_applied(&self) -> bool {
        !self.case.expect_skipped
    }

    fn check_real_run(&self, n: usize, before: &Tree, after: &Tree, real: &RepairReport) {
        let mut kept = Kept::in_run(&real.run).empty_dirs_may_go();
        if n > 0 {
            // The doctor's own records (.reconcile/) are rewritten and appended to by each run.
            kept = kept.own_records_change();
        }
        assert_nothing_lost(before, after, kept);
    }
}

#[test]
fn fixture_cases() {
    harness::fixture_cases::<Sessions>();
}
