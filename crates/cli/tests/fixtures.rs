//! The fixture stores of `fixtures/sessions/<case>/`, one snapshot each (`snapshots/<case>.snap`).
//!
//! A case is a store (`store/`, copied to a temp dir) and a `case.json` for what git cannot hold:
//! empty directories, symlinks, mtimes, locks a second process holds for the whole case, the
//! clock and `--max-actions`. Each case is repaired through the library as a host would: a dry
//! run, a real run, then a second dry run. The snapshot shows the dry-run report and plan, the
//! tree after the real run, the manifest, receipts and `last.json`, and the second plan. The test
//! also asserts what a snapshot cannot: the dry run planned exactly what the real run applied,
//! every action was applied, nothing was lost, and the second plan is empty (e2fsprogs style:
//! a repair run twice finds nothing the second time).

mod common;

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use common::{
    assert_nothing_lost, copy_tree, fixtures_dir, records, sha256_hex, tree, Holder, Node,
    Redactions, Tree,
};
use doctor::{RepairOptions, RepairReport};
use plan::OutcomeKind;
use serde::Deserialize;
use serde_json::Value;
use store::{Clock, Timestamp};

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
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct SymlinkSpec {
    path: String,
    target: String,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct MtimeSpec {
    path: String,
    at: String,
}

fn parse_time(s: &str) -> Timestamp {
    Timestamp::parse(s).unwrap_or_else(|| panic!("{s:?} is not an RFC 3339 time"))
}

/// Sets the mtime of `path` and of everything beneath it (symlinks are left alone).
fn set_mtime_recursive(path: &Path, at: SystemTime) {
    let meta =
        std::fs::symlink_metadata(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    if meta.file_type().is_symlink() {
        return;
    }
    if meta.is_dir() {
        for entry in std::fs::read_dir(path).unwrap() {
            set_mtime_recursive(&entry.unwrap().path(), at);
        }
    }
    std::fs::File::open(path)
        .and_then(|f| f.set_modified(at))
        .unwrap_or_else(|e| panic!("set mtime of {}: {e}", path.display()));
}

/// Copies the store and applies the setup of `case.json`, except the holder process.
fn set_up(case: &Case, from: &Path, s: &Path) {
    copy_tree(from, s);
    for dir in &case.empty_dirs {
        std::fs::create_dir_all(s.join(dir)).unwrap();
    }
    for link in &case.symlinks {
        std::os::unix::fs::symlink(&link.target, s.join(&link.path)).unwrap();
    }
}

fn apply_mtimes(case: &Case, s: &Path) {
    for m in &case.mtimes {
        let secs = parse_time(&m.at).0;
        let at = SystemTime::UNIX_EPOCH + Duration::from_secs(u64::try_from(secs).unwrap());
        set_mtime_recursive(&s.join(&m.path), at);
    }
}

fn repair(s: &Path, case: &Case, dry_run: bool) -> RepairReport {
    let mut opts = RepairOptions::new(s);
    opts.dry_run = dry_run;
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
fn written_files(before: &Tree, after: &Tree, s: &Path, red: &Redactions) -> String {
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
            out.push_str(&records(&s.join(path), red));
        } else {
            out.push_str(&red.apply(&String::from_utf8_lossy(bytes)));
        }
    }
    if out.is_empty() {
        out.push_str("(none)\n");
    }
    out
}

fn render_tree(s: &Path, red: &Redactions) -> String {
    let rows: Vec<(String, String)> = tree(s)
        .into_iter()
        .map(|(path, node)| {
            let path = red.apply(&path.to_string_lossy());
            let what = match node {
                Node::Dir => "dir".to_owned(),
                Node::File(b) if is_record(&path) => {
                    format!("file {:>6}  (record, below)", b.len())
                }
                Node::File(b) => format!("file {:>6}  {}", b.len(), &sha256_hex(&b)[..12]),
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

    let tmp = tempfile::tempdir().unwrap();
    let s = tmp.path().join("S");
    set_up(&case, &dir.join("store"), &s);
    let _holder = (!case.hold_locks.is_empty()).then(|| {
        let files: Vec<PathBuf> = case.hold_locks.iter().map(|f| s.join(f)).collect();
        Holder::spawn(&files)
    });
    apply_mtimes(&case, &s);
    let before = tree(&s);

    let dry = repair(&s, &case, true);
    assert_eq!(
        tree(&s),
        before,
        "the dry run changed the store (it must only read)"
    );
    let real = repair(&s, &case, false);
    let after_real = tree(&s);
    let second = repair(&s, &case, true);

    let red = Redactions::new(
        &[(s.as_path(), "[TMP]")],
        &[&dry.run, &real.run, &second.run],
    );
    let run_dir = s.join(".set-aside").join(&real.run);
    let mut snap = String::new();
    writeln!(snap, "== dry run: human ==").unwrap();
    snap.push_str(&red.apply(&dry.render_human()));
    writeln!(snap, "\n== dry run: plan ==").unwrap();
    writeln!(snap, "{}", red.apply(&pretty(&dry.plan))).unwrap();
    writeln!(snap, "\n== real run: human ==").unwrap();
    snap.push_str(&red.apply(&real.render_human()));
    writeln!(snap, "\n== tree after the real run ==").unwrap();
    snap.push_str(&render_tree(&s, &red));
    writeln!(snap, "\n== files the real run wrote or rewrote ==").unwrap();
    snap.push_str(&written_files(&before, &after_real, &s, &red));
    writeln!(snap, "\n== .set-aside/[RUN]/MANIFEST.jsonl ==").unwrap();
    snap.push_str(&records(&run_dir.join("MANIFEST.jsonl"), &red));
    writeln!(snap, "\n== .reconcile/receipts.jsonl ==").unwrap();
    snap.push_str(&records(&s.join(".reconcile/receipts.jsonl"), &red));
    writeln!(snap, "\n== .reconcile/last.json ==").unwrap();
    let last = std::fs::read_to_string(s.join(".reconcile/last.json"))
        .expect("a real run writes .reconcile/last.json");
    let mut last: Value = serde_json::from_str(&last).expect("last.json is JSON");
    last["at"] = Value::String("[AT]".into());
    writeln!(snap, "{}", red.apply(&pretty(&last))).unwrap();
    writeln!(snap, "\n== second dry run: plan ==").unwrap();
    writeln!(snap, "{}", red.apply(&pretty(&second.plan))).unwrap();

    let mut settings = insta::Settings::clone_current();
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
    assert!(
        second.plan.actions.is_empty(),
        "a second run must find nothing to do, but plans {:#?}",
        second.plan.actions
    );
    assert_nothing_lost(&before, &after_real, &real.run);
    assert_eq!(tree(&s), after_real, "the second dry run changed the store");
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
