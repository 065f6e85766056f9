//! The fixture stores of `fixtures/sessions/<case>/`, one snapshot each
//! (`snapshots/sessions/<case>.snap`).
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
//! - `@SESSIONS_DIR@`: the canonical absolute path of S;
//! - `@SESSIONS_LINK@`: the path of a symlink to S that lives outside S (`<tmp>/sessions-link`);
//! - `@SCOPE:<store>@`: the execution scope of the store `<store>` (a path relative to S) as the
//!   app computes it: lowercase hex SHA-256 of its `owner.json` `owner_id`, one zero byte, and
//!   `<canonical S>/<store>/events.lock` (empty when the store has no readable `owner.json`).
//!
//! The snapshot shows S as `[S]`, the link as `[S-LINK]`, the home as `[HOME]`, each store's
//! scope as `[SCOPE:<store>]`, and the SHA-256 of a file whose placeholders were replaced as
//! `[SHA256:<path>]`; in the tree listing, a file that holds such a value is hashed and sized as
//! shown. Byte counts in plans and manifests are not redacted: the temp dir is always
//! `/tmp/.tmpXXXXXX`, so they are the same on every machine.
//!
//! Each case is repaired through the library as a host would: a dry run, a real run, then a
//! second dry run. The snapshot shows the dry-run report and plan, the tree after the real run,
//! the manifest, receipts and `last.json`, and the second plan. The test also asserts what a
//! snapshot cannot: the dry run planned exactly what the real run applied, every action was
//! applied, nothing was lost, and the second plan is empty (e2fsprogs style: a repair run twice
//! finds nothing the second time). A case whose rules converge over two runs by design
//! (`second_run_acts`) gets a second real run and a third dry run, which must be empty.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use crate::common::case::{self, parse_time, MtimeSpec, SymlinkSpec};
use crate::common::{
    assert_nothing_lost, copy_tree, fixtures_dir, records_text, sha256_hex, tree, Holder, Kept,
    Node, Redactions, Tree,
};
use doctor::{RepairOptions, RepairReport};
use plan::OutcomeKind;
use serde::Deserialize;
use serde_json::Value;
use store::Clock;

const DEFAULT_NOW: &str = "2026-11-29T12:00:00Z";

/// `fixtures/sessions/<case>/case.json`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Case {
    /// What the case shows (the snapshot's description).
    description: String,
    /// The rule the case is about: every planned action must be this rule's.
    #[serde(default)]
    rule: Option<String>,
    /// `DOCTOR_NOW` for every run of the case.
    #[serde(default)]
    doctor_now: Option<String>,
    /// Directories created after copying (git cannot store empty ones).
    #[serde(default)]
    empty_dirs: Vec<String>,
    /// Symlinks created after copying.
    #[serde(default)]
    symlinks: Vec<SymlinkSpec>,
    /// Modification times, set recursively on each path after everything else.
    #[serde(default)]
    mtimes: Vec<MtimeSpec>,
    /// Files a second process holds an exclusive `flock` on during the whole case.
    #[serde(default)]
    hold_locks: Vec<String>,
    /// `--max-actions`.
    #[serde(default)]
    max_actions: Option<usize>,
    /// Whether some actions are expected to be skipped at apply time.
    #[serde(default)]
    expect_skipped: bool,
    /// The rules converge over two runs by design (for example R5 names are collected before
    /// R4 unbinds): the second plan is not empty, a second real run applies it, and a third
    /// dry run must find nothing.
    #[serde(default)]
    second_run_acts: bool,
}

/// Where a case runs: S, its `$CODEWHALE_HOME`, the symlink to S outside S, and what the
/// placeholders were replaced with.
struct SetUp {
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
fn substitute(bytes: &[u8], setup: &SetUp, canonical_s: &Path) -> Option<Vec<u8>> {
    const SCOPE: &[u8] = b"@SCOPE:";
    let dir = canonical_s.as_os_str().as_encoded_bytes();
    let link = setup.link.as_os_str().as_encoded_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut changed = false;
    let mut i = 0;
    while i < bytes.len() {
        let rest = &bytes[i..];
        if rest.starts_with(b"@SESSIONS_DIR@") {
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
fn substitute_tree(root: &Path, shown_as: &str, setup: &mut SetUp, canonical_s: &Path) {
    for (path, node) in tree(root) {
        let Node::File(bytes) = node else { continue };
        let Some(new) = substitute(&bytes, setup, canonical_s) else {
            continue;
        };
        let full = root.join(&path);
        // Keep the file's permissions: rewrite in place.
        std::fs::write(&full, &new).unwrap_or_else(|e| panic!("write {}: {e}", full.display()));
        let rel = format!("{shown_as}{}", path.to_string_lossy());
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

/// Copies the store and the home and applies the setup of `case.json`, except the holder
/// process and the mtimes.
fn set_up(case: &Case, dir: &Path, tmp: &Path) -> SetUp {
    let s = tmp.join("S");
    copy_tree(&dir.join("store"), &s);
    for d in &case.empty_dirs {
        std::fs::create_dir_all(s.join(d)).unwrap();
    }
    for link in &case.symlinks {
        std::os::unix::fs::symlink(&link.target, s.join(&link.path)).unwrap();
    }
    let home = tmp.join("home");
    if dir.join("home").is_dir() {
        copy_tree(&dir.join("home"), &home);
    } else {
        std::fs::create_dir(&home).unwrap();
    }
    let link = tmp.join("sessions-link");
    std::os::unix::fs::symlink(&s, &link).unwrap();

    let canonical_s = s.canonicalize().unwrap();
    let scopes = store_dirs(&s)
        .into_iter()
        .map(|rel| {
            let scope = scope_of(&s, &canonical_s, &rel);
            (rel, scope)
        })
        .filter(|(_, scope)| !scope.is_empty())
        .collect();
    let mut setup = SetUp {
        s: s.clone(),
        home: home.clone(),
        link,
        scopes,
        substituted: Vec::new(),
        input_text: input_text(dir),
    };
    substitute_tree(&s, "", &mut setup, &canonical_s);
    substitute_tree(&home, "[HOME]/", &mut setup, &canonical_s);
    setup
}

/// The redactions of a case: its paths, run ids, and the values derived from its paths:
/// scopes, and the SHA-256 of every file of `trees` (outside the doctor's records) whose bytes
/// hold a temp path or a scope, such as a recovered document.
fn redactions(setup: &SetUp, runs: &[&str], trees: &[&Tree]) -> Redactions {
    let mut red = Redactions::new(&[(setup.s.as_path(), "[S]")], runs)
        .with(setup.link.to_string_lossy(), "[S-LINK]")
        .with(setup.home.to_string_lossy(), "[HOME]");
    if let Ok(home) = setup.home.canonicalize() {
        red = red.with(home.to_string_lossy(), "[HOME]");
    }
    for (rel, scope) in &setup.scopes {
        red = red.with(scope.clone(), format!("[SCOPE:{rel}]"));
    }
    for (rel, sha) in &setup.substituted {
        red = red.with(sha.clone(), format!("[SHA256:{rel}]"));
    }
    let mut needles: Vec<Vec<u8>> = vec![
        setup.s.as_os_str().as_encoded_bytes().to_vec(),
        setup.link.as_os_str().as_encoded_bytes().to_vec(),
    ];
    if let Ok(c) = setup.s.canonicalize() {
        needles.push(c.as_os_str().as_encoded_bytes().to_vec());
    }
    needles.extend(setup.scopes.values().map(|v| v.as_bytes().to_vec()));
    for tree in trees {
        for (path, node) in tree.iter() {
            let rel = path.to_string_lossy();
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
fn redact(red: &Redactions, setup: &SetUp, text: &str) -> String {
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
            Some(h) if !setup.input_text.contains(h) => {
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

fn apply_mtimes(case: &Case, s: &Path) {
    case::apply_mtimes(&case.mtimes, s);
}

fn repair(setup: &SetUp, case: &Case, dry_run: bool) -> RepairReport {
    let mut opts = RepairOptions::new(&setup.s);
    opts.dry_run = dry_run;
    opts.codewhale_home = Some(setup.home.clone());
    opts.clock = Clock::Fixed(parse_time(
        case.doctor_now.as_deref().unwrap_or(DEFAULT_NOW),
    ));
    if let Some(n) = case.max_actions {
        opts.max_actions = n;
    }
    doctor::repair_sessions(&opts)
        .unwrap_or_else(|e| panic!("repair (dry_run: {dry_run}) failed: {e}"))
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
fn written_files(before: &Tree, after: &Tree, setup: &SetUp, red: &Redactions) -> String {
    let s = setup.s.as_path();
    let mut out = String::new();
    for (path, node) in after {
        let rel = path.to_string_lossy();
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
            out.push_str(&redact(red, setup, &String::from_utf8_lossy(bytes)));
        }
    }
    if out.is_empty() {
        out.push_str("(none)\n");
    }
    out
}

/// S as the first real run left it.
fn render_tree(after: &Tree, red: &Redactions) -> String {
    // A file that holds a temp path (or a value derived from one) is hashed as shown redacted.
    let shown = |b: Vec<u8>| -> Vec<u8> {
        match String::from_utf8(b) {
            Ok(t) => {
                let r = red.apply(&t);
                if r != t {
                    r.into_bytes()
                } else {
                    t.into_bytes()
                }
            }
            Err(e) => e.into_bytes(),
        }
    };
    let rows: Vec<(String, String)> = after
        .clone()
        .into_iter()
        .map(|(path, node)| {
            let path = red.apply(&path.to_string_lossy());
            let what = match node {
                Node::Dir => "dir".to_owned(),
                Node::File(b) if is_record(&path) => {
                    format!("file {:>6}  (record, below)", b.len())
                }
                Node::File(b) => {
                    let b = shown(b);
                    format!("file {:>6}  {}", b.len(), &sha256_hex(&b)[..12])
                }
                Node::Symlink(t) => format!("symlink -> {}", red.apply(&t.to_string_lossy())),
                Node::Other => "other".to_owned(),
            };
            (path, what)
        })
        .collect();
    let width = rows.iter().map(|(p, _)| p.len()).max().unwrap_or(0);
    let mut out = String::new();
    for (path, what) in rows {
        writeln!(out, "{path:<width$}  {what}").unwrap();
    }
    out
}

fn pretty(v: &impl serde::Serialize) -> String {
    serde_json::to_string_pretty(v).unwrap()
}

fn run_case(name: &str, dir: &Path) {
    let case_path = dir.join("case.json");
    let case: Case = serde_json::from_slice(&std::fs::read(&case_path).unwrap())
        .unwrap_or_else(|e| panic!("{}: {e}", case_path.display()));

    // Always under /tmp (not $TMPDIR): S's absolute path, which some files hold, then has the
    // same length on every machine, and so do the byte counts the snapshot shows for them.
    let tmp = tempfile::tempdir_in("/tmp").unwrap();
    let setup = set_up(&case, dir, tmp.path());
    let s = setup.s.clone();
    let _holder = (!case.hold_locks.is_empty()).then(|| {
        let files: Vec<PathBuf> = case.hold_locks.iter().map(|f| s.join(f)).collect();
        Holder::spawn(&files)
    });
    apply_mtimes(&case, &s);
    let before = tree(&s);
    let home_before = tree(&setup.home);

    let dry = repair(&setup, &case, true);
    assert_eq!(
        tree(&s),
        before,
        "the dry run changed the store (it must only read)"
    );
    let real = repair(&setup, &case, false);
    let after_real = tree(&s);
    let second = repair(&setup, &case, true);
    // A case whose rules converge over two runs: apply the second plan, then plan once more.
    let again = case.second_run_acts.then(|| {
        let real2 = repair(&setup, &case, false);
        let after = tree(&s);
        let third = repair(&setup, &case, true);
        (real2, after, third)
    });
    assert_eq!(
        tree(&setup.home),
        home_before,
        "$CODEWHALE_HOME is read-only for the doctor"
    );

    let mut runs = vec![dry.run.as_str(), real.run.as_str(), second.run.as_str()];
    if let Some((real2, _, third)) = &again {
        runs.extend([real2.run.as_str(), third.run.as_str()]);
    }
    let mut trees = vec![&before, &after_real];
    if let Some((_, after_real2, _)) = &again {
        trees.push(after_real2);
    }
    let red = redactions(&setup, &runs, &trees);
    let show = |text: &str| redact(&red, &setup, text);
    // The doctor's records as the first real run left them.
    let record = |rel: &str| match after_real.get(Path::new(rel)) {
        Some(Node::File(b)) => records_text(&String::from_utf8_lossy(b), rel, &red),
        _ => "(none)\n".to_owned(),
    };
    let mut snap = String::new();
    writeln!(snap, "== dry run: human ==").unwrap();
    snap.push_str(&show(&dry.render_human()));
    writeln!(snap, "\n== dry run: plan ==").unwrap();
    writeln!(snap, "{}", show(&pretty(&dry.plan))).unwrap();
    writeln!(snap, "\n== real run: human ==").unwrap();
    snap.push_str(&show(&real.render_human()));
    writeln!(snap, "\n== tree after the real run ==").unwrap();
    snap.push_str(&render_tree(&after_real, &red));
    writeln!(snap, "\n== files the real run wrote or rewrote ==").unwrap();
    snap.push_str(&written_files(&before, &after_real, &setup, &red));
    writeln!(snap, "\n== .set-aside/[RUN]/MANIFEST.jsonl ==").unwrap();
    snap.push_str(&show(&record(&format!(
        ".set-aside/{}/MANIFEST.jsonl",
        real.run
    ))));
    writeln!(snap, "\n== .reconcile/receipts.jsonl ==").unwrap();
    snap.push_str(&show(&record(".reconcile/receipts.jsonl")));
    writeln!(snap, "\n== .reconcile/last.json ==").unwrap();
    let last = match after_real.get(Path::new(".reconcile/last.json")) {
        Some(Node::File(b)) => String::from_utf8_lossy(b).into_owned(),
        _ => panic!("a real run writes .reconcile/last.json"),
    };
    let mut last: Value = serde_json::from_str(&last).expect("last.json is JSON");
    last["at"] = Value::String("[AT]".into());
    writeln!(snap, "{}", show(&pretty(&last))).unwrap();
    writeln!(snap, "\n== second dry run: plan ==").unwrap();
    writeln!(snap, "{}", show(&pretty(&second.plan))).unwrap();
    if let Some((real2, _, third)) = &again {
        writeln!(snap, "\n== second real run: human ==").unwrap();
        snap.push_str(&show(&real2.render_human()));
        writeln!(snap, "\n== third dry run: plan ==").unwrap();
        writeln!(snap, "{}", show(&pretty(&third.plan))).unwrap();
    }

    let mut settings = insta::Settings::clone_current();
    settings.set_snapshot_path("snapshots/sessions");
    settings.set_prepend_module_to_snapshot(false);
    settings.set_description(case.description.clone());
    settings.set_omit_expression(true);
    settings.bind(|| insta::assert_snapshot!(name, snap));

    assert_eq!(
        dry.plan.actions, real.plan.actions,
        "the dry run must plan exactly what the real run applies"
    );
    assert_eq!(dry.plan.deferred, real.plan.deferred);
    if let Some(rule) = &case.rule {
        for a in &dry.plan.actions {
            assert_eq!(&a.rule, rule, "{} is planned by another rule", a.path);
        }
    }
    assert_applied(&case, &real);
    assert_nothing_lost(
        &before,
        &after_real,
        Kept::in_run(&real.run).empty_dirs_may_go(),
    );
    match &again {
        None => {
            assert!(
                second.plan.actions.is_empty(),
                "a second run must find nothing to do, but plans {:#?}",
                second.plan.actions
            );
            assert_eq!(tree(&s), after_real, "the second dry run changed the store");
        }
        Some((real2, after_real2, third)) => {
            assert!(
                !second.plan.actions.is_empty(),
                "second_run_acts: the second run was expected to act"
            );
            assert_eq!(
                second.plan.actions, real2.plan.actions,
                "the second dry run must plan exactly what the second real run applies"
            );
            assert_applied(&case, real2);
            // The doctor's own records (.reconcile/) are rewritten and appended to by each run.
            let data: Tree = after_real
                .iter()
                .filter(|(p, _)| !p.starts_with(".reconcile") && !p.starts_with(".reconcile.lock"))
                .map(|(p, n)| (p.clone(), n.clone()))
                .collect();
            assert_nothing_lost(
                &data,
                after_real2,
                Kept::in_run(&real2.run).empty_dirs_may_go(),
            );
            assert!(
                third.plan.actions.is_empty(),
                "a third run must find nothing to do, but plans {:#?}",
                third.plan.actions
            );
            assert_eq!(
                &tree(&s),
                after_real2,
                "the third dry run changed the store"
            );
        }
    }
}

fn assert_applied(case: &Case, real: &RepairReport) {
    assert_eq!(
        real.outcomes.len(),
        real.plan.actions.len(),
        "one outcome per planned action"
    );
    if !case.expect_skipped {
        for (o, a) in real.outcomes.iter().zip(&real.plan.actions) {
            assert_eq!(
                o.outcome,
                OutcomeKind::Applied,
                "action {} on {} was not applied: {:?}",
                a.seq,
                a.path,
                o.why
            );
        }
    }
}

#[test]
fn fixture_cases() {
    let root = fixtures_dir().join("sessions");
    let mut cases: Vec<(String, PathBuf)> = std::fs::read_dir(&root)
        .unwrap_or_else(|e| panic!("{}: {e}", root.display()))
        .map(|e| e.unwrap())
        .filter(|e| e.file_type().unwrap().is_dir())
        .map(|e| (e.file_name().to_string_lossy().into_owned(), e.path()))
        .collect();
    cases.sort();
    assert!(
        !cases.is_empty(),
        "no fixture cases under {}",
        root.display()
    );

    // Run every case even when one fails, so that all new snapshots are written at once.
    let mut failed = Vec::new();
    for (name, dir) in &cases {
        let result = std::panic::catch_unwind(|| run_case(name, dir));
        if result.is_err() {
            failed.push(name.clone());
        }
    }
    assert!(failed.is_empty(), "fixture cases failed: {failed:?}");
}
