//! Hostile input beyond malformed documents (those are `bad_input.rs`): malformed thread
//! records, turns and store files; non-UTF-8 names below the top level; a 100 MB and a sparse
//! 64 GiB document; permission-denied files and directories; symlinks (loops, and links out of
//! S in place of a session directory, a store, a thread record, a document, a turn directory,
//! `.set-aside`, `.reconcile` and `.reconcile.lock`); bindings to `/etc` and `../../..`; files
//! where directories are expected and the reverse; fifos and devices; hard links to files
//! outside S; a read-only S; ENOSPC; EXDEV.
//!
//! The races (c50-c52) stop the real binary right before one mutation with the pause hook
//! (`DOCTOR_PAUSE_BEFORE`), change the store inside that window, then let it go on.
//!
//! Each test is one class. Each repairs dry and for real (through the library, or the binary
//! where a second user, a memory limit or a timeout is needed) and checks: no panic; a message
//! that names the path; nothing lost (every file and directory of S is at its path or at its
//! mirrored path under `.set-aside/<run>/`); the healthy session `keep` untouched; nothing
//! outside S changed (content and mtimes of a tree of decoys that following a link would
//! reach).
//!
//! Root: the tests run as root in CI, where `chmod` denies nothing. The permission tests run the
//! real binary as user 65534 through `setpriv`; the filesystem tests (read-only S, ENOSPC,
//! EXDEV) mount small tmpfs filesystems. Each prints why it is skipped when it cannot do so.

mod common;
mod stores;

use std::collections::BTreeMap;
use std::ffi::OsStr;
use std::io::Read;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use common::{mtimes, tree, Node, Tree};
use doctor::{RepairOptions, RepairReport};
use plan::OutcomeKind;
use serde_json::{json, Value};
use store::{Clock, Timestamp};
use stores::{
    bound_document, data_dir, document, document_bound_to, empty_store, pretty, rich_store,
    store_with_thread, thread, turn, turn_id, turn_items, turn_messages, write, NOW, RICH_ACTIONS,
};

// ---------------------------------------------------------------------------------------------
// Harness
// ---------------------------------------------------------------------------------------------

/// A temporary directory holding S and, next to it, a tree of decoys outside S: what a link
/// out of S would reach, and what the doctor would change if it followed one.
struct Case {
    tmp: tempfile::TempDir,
    s: PathBuf,
    outside: PathBuf,
}

impl Case {
    fn new() -> Case {
        let tmp = tempfile::tempdir().unwrap();
        let s = tmp.path().join("S");
        let outside = tmp.path().join("outside");
        Case::populate(&s, &outside);
        Case { tmp, s, outside }
    }

    /// A case whose S lives at `s` (for example inside a mount); decoys in the temp dir.
    fn at(s: PathBuf) -> Case {
        let tmp = tempfile::tempdir().unwrap();
        let outside = tmp.path().join("outside");
        Case::populate(&s, &outside);
        Case { tmp, s, outside }
    }

    fn populate(s: &Path, outside: &Path) {
        std::fs::create_dir_all(s).unwrap();
        // The healthy session every run must leave alone.
        write(
            s,
            "keep.json",
            pretty(&bound_document(s, "keep", "keep/runtime")),
        );
        store_with_thread(s, "keep/runtime", "th-keep", Some("keep"), 1);
        // Decoys: an empty store (R2 would move it), a thread with a dangling binding (R4
        // would rewrite it), a torn document (R1 would move it), a completed turn and its
        // items (R3 would read them), a session directory, and empty directories for links to
        // lead to.
        empty_store(outside, "store");
        empty_store(outside, "session/runtime");
        write(
            outside,
            "thread.json",
            pretty(&thread("th-out", Some("nobody"))),
        );
        write(outside, "torn.json", br#"{"schema_version":1,"metadata":{"#);
        write(
            outside,
            &format!("turns/{}.json", turn_id("th-z", 1)),
            pretty(&turn("th-z", 1)),
        );
        for mut item in turn_items("th-z", 1) {
            item["detail"] = json!("OUTSIDE-SECRET");
            item["summary"] = json!("OUTSIDE-SECRET");
            write(
                outside,
                &format!("items/{}.json", item["id"].as_str().unwrap()),
                pretty(&item),
            );
        }
        write(outside, "lockfile", b"");
        std::fs::create_dir_all(outside.join("aside")).unwrap();
        std::fs::create_dir_all(outside.join("reconcile")).unwrap();
    }

    fn outside_state(&self) -> (Tree, BTreeMap<PathBuf, i128>) {
        (tree(&self.outside), mtimes(&self.outside))
    }
}

/// What one class did: the dry and the real run, and S before and after.
struct Observed {
    dry: Result<RepairReport, String>,
    real: Result<RepairReport, String>,
    before: Tree,
    after: Tree,
}

impl Observed {
    fn dry(&self) -> &RepairReport {
        self.dry
            .as_ref()
            .unwrap_or_else(|e| panic!("dry run failed: {e}"))
    }
    fn real(&self) -> &RepairReport {
        self.real
            .as_ref()
            .unwrap_or_else(|e| panic!("real run failed: {e}"))
    }
    /// Everything both runs said: JSON and human reports, or the error.
    fn said(&self) -> String {
        format!("{}\n{}", said(&self.dry), said(&self.real))
    }
}

fn said(r: &Result<RepairReport, String>) -> String {
    match r {
        Ok(report) => format!(
            "{}\n{}",
            serde_json::to_string(report).unwrap(),
            report.render_human()
        ),
        Err(e) => e.clone(),
    }
}

fn opts(s: &Path, dry_run: bool) -> RepairOptions {
    let mut o = RepairOptions::new(s);
    o.dry_run = dry_run;
    o.clock = Clock::Fixed(Timestamp::parse(NOW).unwrap());
    o
}

/// A library repair; a panic fails the test with its message.
fn lib(s: &Path, dry_run: bool) -> Result<RepairReport, String> {
    match catch_unwind(AssertUnwindSafe(|| {
        doctor::repair_sessions(&opts(s, dry_run))
    })) {
        Ok(r) => r.map_err(|e| e.to_string()),
        Err(p) => panic!(
            "repair (dry_run: {dry_run}) panicked: {}",
            p.downcast_ref::<String>()
                .cloned()
                .or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string()))
                .unwrap_or_default()
        ),
    }
}

/// Runs the dry run (which must not change S), then the real run, and checks the invariants
/// every class shares: nothing lost, `keep` untouched, nothing outside S changed.
#[track_caller]
fn exercise(case: &Case) -> Observed {
    let before = tree(&case.s);
    let outside = case.outside_state();
    let dry = lib(&case.s, true);
    assert_eq!(tree(&case.s), before, "the dry run changed S");
    let real = lib(&case.s, false);
    let after = tree(&case.s);
    assert_nothing_lost(&before, &after);
    assert_keep_untouched(&before, &after);
    assert_eq!(case.outside_state(), outside, "something outside S changed");
    Observed {
        dry,
        real,
        before,
        after,
    }
}

/// Every entry of `before` is at its path with the same content, or at its mirrored path under
/// `.set-aside/<some run>/`. A thread record the doctor rewrote counts as kept when its
/// previous bytes are at the mirrored path (the `previous_version` copy).
#[track_caller]
fn assert_nothing_lost(before: &Tree, after: &Tree) {
    let runs: Vec<PathBuf> = after
        .iter()
        .filter(|(p, n)| {
            **n == Node::Dir
                && p.parent() == Some(Path::new(".set-aside"))
                && exec::RunId::is_valid(&p.file_name().unwrap().to_string_lossy())
        })
        .map(|(p, _)| p.clone())
        .collect();
    for (path, node) in before {
        // The doctor's own lock and receipts change by design.
        if after.get(path) == Some(node)
            || path.starts_with(".reconcile")
            || path == Path::new(".reconcile.lock")
        {
            continue;
        }
        let found = runs.iter().any(|r| after.get(&r.join(path)) == Some(node));
        assert!(
            found,
            "{} was lost: before {node:?}, now {:?}, and no set-aside run holds it",
            path.display(),
            after.get(path).map(short)
        );
    }
}

fn short(n: &Node) -> String {
    match n {
        Node::File(b) => format!("a file of {} bytes", b.len()),
        other => format!("{other:?}"),
    }
}

#[track_caller]
fn assert_keep_untouched(before: &Tree, after: &Tree) {
    for (p, n) in before {
        if p.starts_with("keep") || p == Path::new("keep.json") {
            assert_eq!(
                after.get(p),
                Some(n),
                "{} of the healthy session",
                p.display()
            );
        }
    }
}

/// `text` mentions `needle`.
#[track_caller]
fn assert_says(text: &str, needle: &str) {
    assert!(
        text.contains(needle),
        "expected a message naming {needle:?}; the runs said:\n{text}"
    );
}

fn file(bytes: &[u8]) -> Node {
    Node::File(bytes.to_vec())
}

/// The outcome of the action on `path` in a real run.
fn outcome_of<'a>(report: &'a RepairReport, path: &str) -> &'a plan::Outcome {
    let action = report
        .plan
        .actions
        .iter()
        .find(|a| a.path == path)
        .unwrap_or_else(|| panic!("no action on {path}: {:?}", report.plan.actions));
    report
        .outcomes
        .iter()
        .find(|o| o.seq == action.seq)
        .unwrap()
}

/// `value` nested `depth` arrays deep.
fn nested(depth: usize) -> String {
    format!("{}1{}", "[".repeat(depth), "]".repeat(depth))
}

/// JSON text of `value` with `"deep": <depth-deep arrays>` as its first field.
fn with_deep_field(value: &Value, depth: usize) -> Vec<u8> {
    let text = serde_json::to_string(value).unwrap();
    format!("{{\"deep\":{},{}", nested(depth), &text[1..]).into_bytes()
}

fn truncated(value: &Value) -> Vec<u8> {
    let b = pretty(value);
    b[..b.len() / 2].to_vec()
}

fn bom(value: &Value) -> Vec<u8> {
    [&b"\xef\xbb\xbf"[..], &pretty(value)].concat()
}

/// `value` with the bytes of its title replaced by Latin-1 (not UTF-8).
fn not_utf8(value: &Value) -> Vec<u8> {
    let text = pretty(value);
    let at = text
        .windows(7)
        .position(|w| w == b"\"title\"")
        .expect("a title");
    let start = at + text[at..].iter().position(|&b| b == b':').unwrap() + 3;
    [&text[..start], b"Caf\xe9 cr\xe8me ", &text[start..]].concat()
}

fn symlink(target: impl AsRef<Path>, at: &Path) {
    std::fs::create_dir_all(at.parent().unwrap()).unwrap();
    std::os::unix::fs::symlink(target, at).unwrap();
}

fn mkfifo(at: &Path) {
    std::fs::create_dir_all(at.parent().unwrap()).unwrap();
    let ok = Command::new("mkfifo")
        .arg(at)
        .status()
        .is_ok_and(|s| s.success());
    assert!(ok, "mkfifo {}", at.display());
}

fn is_root() -> bool {
    std::fs::metadata("/proc/self")
        .map(|m| m.uid())
        .unwrap_or(1)
        == 0
}

// --- The real binary, as another user, under a memory limit, with a timeout. ----------------

struct BinOut {
    code: Option<i32>,
    stdout: String,
    stderr: String,
    timed_out: bool,
}

/// Runs `doctor --repair-sessions --sessions-dir S --json [--dry-run]`, optionally as user
/// 65534 (`setpriv`) and with an address-space limit (`prlimit`), killed after `timeout`.
fn doctor_bin(
    s: &Path,
    dry_run: bool,
    nobody: bool,
    mem_limit: Option<u64>,
    timeout: Duration,
) -> BinOut {
    let mut argv: Vec<String> = Vec::new();
    if let Some(limit) = mem_limit {
        argv.extend(["prlimit".into(), format!("--as={limit}"), "--".into()]);
    }
    if nobody {
        argv.extend(
            [
                "setpriv",
                "--reuid=65534",
                "--regid=65534",
                "--clear-groups",
                "--",
            ]
            .map(String::from),
        );
    }
    argv.push(env!("CARGO_BIN_EXE_doctor").into());
    argv.extend(["--repair-sessions", "--json", "--sessions-dir"].map(String::from));
    argv.push(s.to_string_lossy().into_owned());
    if dry_run {
        argv.push("--dry-run".into());
    }
    let mut cmd = Command::new(&argv[0]);
    cmd.args(&argv[1..]);
    within(cmd, timeout)
}

/// Runs `cmd` (with `DOCTOR_NOW` set, logs and hooks off), its output collected, killed after
/// `timeout`.
fn within(mut cmd: Command, timeout: Duration) -> BinOut {
    let mut child = cmd
        .env("DOCTOR_NOW", NOW)
        .env_remove("DOCTOR_LOG")
        .env_remove("RUST_LOG")
        .env_remove("DOCTOR_PAUSE_BEFORE")
        .env_remove("DOCTOR_FAULT_AT")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("spawn {cmd:?}: {e}"));
    let mut out = child.stdout.take().unwrap();
    let mut err = child.stderr.take().unwrap();
    let readers = (
        std::thread::spawn(move || {
            let mut s = String::new();
            let _ = out.read_to_string(&mut s);
            s
        }),
        std::thread::spawn(move || {
            let mut s = String::new();
            let _ = err.read_to_string(&mut s);
            s
        }),
    );
    let start = Instant::now();
    let mut timed_out = false;
    let status = loop {
        if let Some(st) = child.try_wait().unwrap() {
            break st;
        }
        if start.elapsed() > timeout {
            timed_out = true;
            let _ = child.kill();
            break child.wait().unwrap();
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    BinOut {
        code: status.code(),
        stdout: readers.0.join().unwrap(),
        stderr: readers.1.join().unwrap(),
        timed_out,
    }
}

/// Whether the doctor binary can be run as user 65534: root, `setpriv`, and a binary that user
/// may reach (a build under a private home directory may not be).
fn setpriv_works() -> bool {
    static OK: OnceLock<bool> = OnceLock::new();
    *OK.get_or_init(|| {
        is_root()
            && Command::new("setpriv")
                .args(["--reuid=65534", "--regid=65534", "--clear-groups", "--"])
                .arg(env!("CARGO_BIN_EXE_doctor"))
                .arg("--version")
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .status()
                .is_ok_and(|s| s.success())
    })
}

/// A fresh case that user 65534 can work in, or `None` (with a SKIPPED line naming `class`)
/// where the doctor cannot be run as that user here.
fn case_for_nobody(class: &str) -> Option<Case> {
    if !setpriv_works() {
        println!("SKIPPED {class}: needs root, setpriv, and a doctor binary user 65534 may run");
        return None;
    }
    let c = Case::new();
    chmod(c.tmp.path(), 0o755);
    if !nobody_can_reach(c.tmp.path()) {
        println!("SKIPPED {class}: user 65534 cannot reach the temporary directory");
        return None;
    }
    Some(c)
}

/// Whether user 65534 may reach `dir` (a private temporary directory's parents may stop it).
fn nobody_can_reach(dir: &Path) -> bool {
    Command::new("setpriv")
        .args([
            "--reuid=65534",
            "--regid=65534",
            "--clear-groups",
            "--",
            "test",
            "-x",
        ])
        .arg(dir)
        .status()
        .is_ok_and(|s| s.success())
}

/// `chown -R 65534:65534`.
fn give_to_nobody(p: &Path) {
    std::os::unix::fs::lchown(p, Some(65534), Some(65534)).unwrap();
    if std::fs::symlink_metadata(p).unwrap().is_dir() {
        for e in std::fs::read_dir(p).unwrap() {
            give_to_nobody(&e.unwrap().path());
        }
    }
}

fn chmod(p: &Path, mode: u32) {
    std::fs::set_permissions(p, std::fs::Permissions::from_mode(mode)).unwrap();
}

// --- Mounts. ---------------------------------------------------------------------------------

/// A mounted filesystem, unmounted on drop (lazily if busy).
struct Mount(PathBuf);

impl Drop for Mount {
    fn drop(&mut self) {
        let ok = Command::new("umount")
            .arg(&self.0)
            .status()
            .is_ok_and(|s| s.success());
        if !ok {
            let _ = Command::new("umount").arg("-l").arg(&self.0).status();
        }
    }
}

fn mount_cmd(args: &[&OsStr]) -> bool {
    Command::new("mount")
        .args(args)
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// Mounts a tmpfs with `options` at `at` (created).
fn tmpfs(at: &Path, options: &str) -> Option<Mount> {
    std::fs::create_dir_all(at).unwrap();
    mount_cmd(&[
        "-t".as_ref(),
        "tmpfs".as_ref(),
        "-o".as_ref(),
        options.as_ref(),
        "tmpfs".as_ref(),
        at.as_os_str(),
    ])
    .then(|| Mount(at.to_path_buf()))
}

/// Whether this process may mount filesystems; prints why not, for the skipping test.
fn can_mount(class: &str) -> bool {
    static OK: OnceLock<Result<(), String>> = OnceLock::new();
    let ok = OK.get_or_init(|| {
        if !is_root() {
            return Err("not running as root".into());
        }
        let tmp = tempfile::tempdir().unwrap();
        match tmpfs(&tmp.path().join("m"), "size=1m") {
            Some(_m) => Ok(()),
            None => Err("mount -t tmpfs is not permitted here".into()),
        }
    });
    match ok {
        Ok(()) => true,
        Err(why) => {
            println!("SKIPPED {class}: {why}");
            false
        }
    }
}

/// `stat -f` of the filesystem holding `p`: (free inodes, free blocks, block size).
fn fs_free(p: &Path) -> (u64, u64, u64) {
    let out = Command::new("stat")
        .args(["-f", "-c", "%d %f %S"])
        .arg(p)
        .output()
        .unwrap();
    let text = String::from_utf8(out.stdout).unwrap();
    let v: Vec<u64> = text
        .split_whitespace()
        .map(|w| w.parse().unwrap())
        .collect();
    (v[0], v[1], v[2])
}

fn receipts(s: &Path) -> Vec<Value> {
    std::fs::read_to_string(s.join(".reconcile/receipts.jsonl"))
        .unwrap_or_default()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

// ---------------------------------------------------------------------------------------------
// 1-4. Malformed thread records: truncated, non-UTF-8, BOM, 500-deep nesting.
// ---------------------------------------------------------------------------------------------

/// A store `t/runtime` with the thread record `th-t` replaced by `bytes` and a turn: the record
/// is unreadable, so it is counted, left in place, and its store is kept (it holds work).
fn unreadable_thread_record(bytes: Vec<u8>) -> Observed {
    let c = Case::new();
    store_with_thread(&c.s, "t/runtime", "th-t", None, 1);
    write(&c.s, "t/runtime/threads/th-t.json", &bytes);
    let o = exercise(&c);
    assert_eq!(o.dry().summary.threads_unreadable, 1, "{}", o.said());
    assert!(o.dry().plan.actions.is_empty(), "{:?}", o.dry().plan);
    assert_eq!(o.real().summary.stores_kept_with_work, 1);
    assert_eq!(
        o.after.get(Path::new("t/runtime/threads/th-t.json")),
        Some(&file(&bytes))
    );
    o
}

const TORN_THREAD: &str = "t/runtime/threads/th-t.json";

#[test]
fn c01_thread_record_truncated() {
    unreadable_thread_record(truncated(&thread("th-t", Some("gone"))));
}

#[test]
fn c02_thread_record_not_utf8() {
    unreadable_thread_record(not_utf8(&thread("th-t", Some("gone"))));
}

#[test]
fn c03_thread_record_with_a_byte_order_mark() {
    unreadable_thread_record(bom(&thread("th-t", Some("gone"))));
}

#[test]
fn c04_thread_record_nested_500_deep() {
    unreadable_thread_record(with_deep_field(&thread("th-t", Some("gone")), 500));
}

/// invariants.md: bad input "is reported with its path and reason". An unreadable thread record
/// is only counted in `threads_unreadable`; no message names it.
#[test]
fn c01_to_c04_unreadable_thread_records_are_named() {
    for bytes in [
        truncated(&thread("th-t", None)),
        not_utf8(&thread("th-t", None)),
        bom(&thread("th-t", None)),
        with_deep_field(&thread("th-t", None), 500),
    ] {
        let o = unreadable_thread_record(bytes);
        assert_says(&o.said(), TORN_THREAD);
    }
}

// ---------------------------------------------------------------------------------------------
// 5. Malformed turns of an orphan thread.
// ---------------------------------------------------------------------------------------------

/// A store `o/runtime` with the unbound thread `th-o`, its good turn 1, and bad turns 2-5
/// (paths relative to S, bytes) in the flat `turns/`.
fn orphan_with_bad_turns() -> (Case, Vec<(String, Vec<u8>)>) {
    let c = Case::new();
    store_with_thread(&c.s, "o/runtime", "th-o", None, 1);
    let bad = vec![
        (2, truncated(&turn("th-o", 2))),
        (3, not_utf8(&json!({"title": "x", "turn": turn("th-o", 3)}))),
        (4, bom(&turn("th-o", 4))),
        (5, with_deep_field(&turn("th-o", 5), 500)),
    ];
    let bad: Vec<(String, Vec<u8>)> = bad
        .into_iter()
        .map(|(n, bytes)| {
            (
                format!("o/runtime/turns/{}.json", turn_id("th-o", n)),
                bytes,
            )
        })
        .collect();
    for (rel, bytes) in &bad {
        write(&c.s, rel, bytes);
    }
    (c, bad)
}

#[test]
fn c05_turns_truncated_not_utf8_bom_and_500_deep() {
    let (c, bad) = orphan_with_bad_turns();
    let o = exercise(&c);
    // Version 2: any unreadable turn aborts recovery for the whole store (the app's listing of
    // turns fails on one bad file, so a recovery from the good turns alone would not be what
    // the app rebuilds). The store is kept with its work; nothing is recovered or moved.
    let real = o.real();
    assert!(real.plan.actions.is_empty(), "{:?}", real.plan);
    assert_eq!(real.summary.stores_kept_with_work, 1, "{}", o.said());
    assert_eq!(real.summary.sessions_recovered, 0);
    assert!(!o.after.contains_key(Path::new("th-o.json")));
    for (rel, bytes) in &bad {
        assert_eq!(o.after.get(Path::new(rel)), Some(&file(bytes)), "{rel}");
    }
}

#[test]
fn c05_bad_turns_are_named() {
    let (c, bad) = orphan_with_bad_turns();
    let o = exercise(&c);
    for (rel, _) in &bad {
        assert_says(&o.said(), rel);
    }
}

/// A bad item aborts the store's recovery as a bad turn does, and is named.
#[test]
fn c05_a_bad_item_aborts_the_stores_recovery_and_is_named() {
    let c = Case::new();
    store_with_thread(&c.s, "o/runtime", "th-o", None, 1);
    let [_, answer] = turn_items("th-o", 1);
    let rel = format!("o/runtime/items/{}.json", answer["id"].as_str().unwrap());
    let bytes = truncated(&answer);
    write(&c.s, &rel, &bytes);
    let o = exercise(&c);
    assert!(o.real().plan.actions.is_empty(), "{:?}", o.real().plan);
    assert_says(&o.said(), &rel);
    assert_eq!(o.after.get(Path::new(&rel)), Some(&file(&bytes)));
    assert!(!o.after.contains_key(Path::new("th-o.json")));
}

// ---------------------------------------------------------------------------------------------
// 6. Malformed store files: state.json truncated or 500 deep, owner.json with a BOM.
// ---------------------------------------------------------------------------------------------

#[test]
fn c06_store_files_truncated_500_deep_and_with_a_bom() {
    let c = Case::new();
    empty_store(&c.s, "a/runtime");
    write(
        &c.s,
        "a/runtime/state.json",
        br#"{"schema_version":2,"next_s"#,
    );
    empty_store(&c.s, "b/runtime");
    write(
        &c.s,
        "b/runtime/state.json",
        with_deep_field(&json!({"schema_version": 2, "next_seq": 1}), 500),
    );
    empty_store(&c.s, "c/runtime");
    write(
        &c.s,
        "c/runtime/owner.json",
        bom(&json!({"owner_id": stores::owner_id("c/runtime")})),
    );
    let o = exercise(&c);
    let said = o.said();
    for p in [
        "a/runtime/state.json",
        "b/runtime/state.json",
        "c/runtime/owner.json",
    ] {
        assert_says(&said, p);
    }
    // A store whose state cannot be read may hold work: kept. A store whose owner.json cannot
    // be read is still an empty store: set aside whole, the unreadable file with it (and its
    // session directory `c/`, left empty, removed in the same action).
    let paths: Vec<&str> = o
        .real()
        .plan
        .actions
        .iter()
        .map(|a| a.path.as_str())
        .collect();
    assert_eq!(paths, ["c/runtime"], "{said}");
    assert_eq!(o.real().outcomes[0].outcome, OutcomeKind::Applied);
}

// ---------------------------------------------------------------------------------------------
// 7-9. Nesting and size of documents.
// ---------------------------------------------------------------------------------------------

/// A document 500 levels deep in an unknown field is valid JSON that the app's typed parser
/// loads (an unknown member is skipped whatever its depth): it is readable, kept, and nothing
/// is planned. (bad_input covers 10 000 levels inside `messages`, which no parser accepts.)
#[test]
fn c07_document_nested_500_deep() {
    let c = Case::new();
    let bytes = with_deep_field(&document("deep"), 500);
    write(&c.s, "deep.json", &bytes);
    let o = exercise(&c);
    assert!(o.real().plan.actions.is_empty(), "{}", o.said());
    assert_eq!(
        o.after.get(&PathBuf::from("deep.json")),
        Some(&file(&bytes))
    );
}

/// A 100 MB readable document is kept; a 100 MB torn one is set aside; the whole class, with
/// two scans of 200 MB and the before/after trees, stays well under 10 s.
#[test]
fn c08_document_of_100_mb() {
    let start = Instant::now();
    let c = Case::new();
    // Built as bytes: serializing a 100 MB string through a `Value` takes seconds.
    let small = String::from_utf8(pretty(&document("big"))).unwrap();
    let (head, tail) = small.split_at(small.find("hello from big").unwrap());
    let mut big = Vec::with_capacity(100 << 20 | 4096);
    big.extend_from_slice(head.as_bytes());
    big.resize(big.len() + (100 << 20), b'y');
    big.extend_from_slice(tail.as_bytes());
    write(&c.s, "big.json", &big);
    write(&c.s, "bigtorn.json", &big[..big.len() - 3]);
    let o = exercise(&c);
    let real = o.real();
    assert_eq!(real.plan.actions.len(), 1, "{:?}", real.plan);
    assert_eq!(real.plan.actions[0].path, "bigtorn.json");
    assert_eq!(real.outcomes[0].outcome, OutcomeKind::Applied);
    assert_eq!(o.after.get(Path::new("big.json")), Some(&file(&big)));
    let elapsed = start.elapsed();
    println!("100 MB documents: {elapsed:?}");
    assert!(elapsed < Duration::from_secs(10), "{elapsed:?}");
}

/// A sparse 64 GiB file named like a document (and one in place of a thread record): the doctor
/// must not try to hold it in memory. Run by the binary under a 4 GiB address-space limit, so a
/// whole-file read fails cleanly instead of taking the machine down.
#[test]
fn c09_sparse_64_gib_document_and_thread_record() {
    if !Command::new("prlimit")
        .arg("--version")
        .stdout(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
    {
        println!("SKIPPED c09: prlimit (util-linux) is needed to cap the doctor's memory");
        return;
    }
    let c = Case::new();
    let size = 64u64 << 30;
    for rel in ["huge.json", "h/runtime/threads/th-h.json"] {
        let p = c.s.join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        let f = std::fs::File::create(&p).unwrap();
        if f.set_len(size).is_err() {
            println!("SKIPPED c09: the filesystem refuses a sparse 64 GiB file");
            return;
        }
    }
    let before_outside = c.outside_state();
    for dry in [true, false] {
        let out = doctor_bin(&c.s, dry, false, Some(4 << 30), Duration::from_secs(120));
        assert!(!out.timed_out, "doctor took longer than 120 s");
        assert_eq!(out.code, Some(0), "{}", out.stderr);
        assert_says(&out.stdout, "huge.json");
        assert_says(&out.stdout, "h/runtime/threads/th-h.json");
        assert_says(&out.stdout, "out of memory");
    }
    assert_eq!(
        std::fs::metadata(c.s.join("huge.json")).unwrap().len(),
        size
    );
    assert_eq!(
        std::fs::metadata(c.s.join("h/runtime/threads/th-h.json"))
            .unwrap()
            .len(),
        size
    );
    assert_eq!(c.outside_state(), before_outside);
}

// ---------------------------------------------------------------------------------------------
// 10-13. Names that are not UTF-8 below the top level (bad_input covers a top-level file).
// ---------------------------------------------------------------------------------------------

#[test]
fn c10_non_utf8_session_directory_name() {
    let c = Case::new();
    let dir = c.s.join(OsStr::from_bytes(b"sess-\xff\xfe"));
    empty_store(&dir, "runtime");
    let o = exercise(&c);
    assert!(o.real().plan.actions.is_empty(), "{:?}", o.real().plan);
    assert_says(&o.said(), "sess-\u{fffd}\u{fffd}");
    assert_says(&o.said(), "name is not UTF-8");
    assert_eq!(
        o.after.len(),
        o.before.len() + 3,
        "only the doctor's files are new"
    );
}

#[test]
fn c11_non_utf8_name_in_threads() {
    let c = Case::new();
    empty_store(&c.s, "n/runtime");
    let name =
        c.s.join("n/runtime/threads")
            .join(OsStr::from_bytes(b"th-\xff.json"));
    std::fs::create_dir_all(name.parent().unwrap()).unwrap();
    std::fs::write(&name, pretty(&thread("th-x", Some("gone")))).unwrap();
    let o = exercise(&c);
    // The store holds work it cannot read as a thread: it is kept, the entry reported.
    assert!(o.real().plan.actions.is_empty(), "{:?}", o.real().plan);
    assert_says(&o.said(), "n/runtime/threads/th-\u{fffd}.json");
    assert_eq!(o.real().summary.stores_kept_with_work, 1);
}

/// Non-UTF-8 names in the flat `turns/` (`o/runtime`) and `items/` (`i/runtime`) of stores
/// whose threads have a good turn: a file holding a turn or an item of the thread. The app
/// would read such a file (it lists every file of `turns/` and `items/`), so the doctor cannot
/// rebuild what the app would: each entry is named, each store's recovery is aborted and the
/// store kept, nothing moves.
#[test]
fn c12_non_utf8_names_in_turns_and_items() {
    let c = Case::new();
    store_with_thread(&c.s, "o/runtime", "th-o", None, 1);
    std::fs::write(
        c.s.join("o/runtime/turns")
            .join(OsStr::from_bytes(b"turn_\xff.json")),
        pretty(&turn("th-o", 9)),
    )
    .unwrap();
    store_with_thread(&c.s, "i/runtime", "th-i", None, 1);
    let [odd_item, _] = turn_items("th-i", 1);
    std::fs::write(
        c.s.join("i/runtime/items")
            .join(OsStr::from_bytes(b"item_\xff.json")),
        pretty(&odd_item),
    )
    .unwrap();
    let o = exercise(&c);
    let said = o.said();
    assert_says(&said, "o/runtime/turns/turn_\u{fffd}.json");
    assert_says(&said, "i/runtime/items/item_\u{fffd}.json");
    let real = o.real();
    assert!(real.plan.actions.is_empty(), "{:?}", real.plan);
    assert_eq!(real.summary.stores_kept_with_work, 2, "{said}");
    assert!(!o.after.contains_key(Path::new("th-o.json")));
    assert!(!o.after.contains_key(Path::new("th-i.json")));
}

#[test]
fn c13_non_utf8_name_inside_a_store_that_is_set_aside() {
    let c = Case::new();
    empty_store(&c.s, "e/runtime");
    let odd =
        c.s.join("e/runtime")
            .join(OsStr::from_bytes(b"cache-\xff\xfe.bin"));
    std::fs::write(&odd, b"\x00\x01opaque").unwrap();
    let o = exercise(&c);
    let real = o.real();
    assert_eq!(real.plan.actions.len(), 1);
    assert_eq!(real.outcomes[0].outcome, OutcomeKind::Applied);
    let moved = PathBuf::from(format!(".set-aside/{}/e/runtime", real.run))
        .join(OsStr::from_bytes(b"cache-\xff\xfe.bin"));
    assert_eq!(o.after.get(&moved), Some(&file(b"\x00\x01opaque")));
}

// ---------------------------------------------------------------------------------------------
// 14-16. Permission-denied files and directories.
// ---------------------------------------------------------------------------------------------

/// As root, mode 000 denies nothing (CAP_DAC_OVERRIDE): what root sees is the content, and the
/// doctor judges it as any other file. A torn document of mode 000 is set aside with its mode;
/// a readable one is kept; an empty store in a directory of mode 000 is set aside, and the
/// directory it leaves empty is removed.
#[test]
fn c14_mode_000_as_root_is_judged_by_content() {
    if !is_root() {
        println!("SKIPPED c14: not root (c15 and c16 cover an ordinary user)");
        return;
    }
    let c = Case::new();
    write(&c.s, "locked.json", b"{\"torn\":");
    write(&c.s, "fine.json", pretty(&document("fine")));
    empty_store(&c.s, "pd/runtime");
    chmod(&c.s.join("locked.json"), 0o000);
    chmod(&c.s.join("fine.json"), 0o000);
    chmod(&c.s.join("pd"), 0o000);
    let o = exercise(&c);
    let real = o.real();
    let mut paths: Vec<&str> = real.plan.actions.iter().map(|a| a.path.as_str()).collect();
    paths.sort();
    assert_eq!(paths, ["locked.json", "pd/runtime"], "{}", o.said());
    let moved = c.s.join(format!(".set-aside/{}/locked.json", real.run));
    assert_eq!(std::fs::metadata(moved).unwrap().mode() & 0o777, 0);
    assert!(
        !c.s.join("pd").exists(),
        "the emptied session directory is removed"
    );
}

/// As user 65534 (the real binary through `setpriv`): a document and a thread record it may
/// not read are reported with their path and left alone; the rest of the run goes on.
#[test]
fn c15_permission_denied_files_as_an_ordinary_user() {
    let Some(c) = case_for_nobody("c15") else {
        return;
    };
    write(&c.s, "torn.json", b"{\"torn\":");
    store_with_thread(&c.s, "sx/runtime", "th-sx", Some("gone"), 1);
    give_to_nobody(&c.s);
    // Owned by root, mode 0600: user 65534 may not read them.
    write(&c.s, "secret.json", b"{\"also torn\":");
    std::os::unix::fs::chown(c.s.join("secret.json"), Some(0), Some(0)).unwrap();
    chmod(&c.s.join("secret.json"), 0o600);
    let rec = c.s.join("sx/runtime/threads/th-sx.json");
    std::os::unix::fs::chown(&rec, Some(0), Some(0)).unwrap();
    chmod(&rec, 0o600);
    let before = tree(&c.s);
    let outside = c.outside_state();

    let dry = doctor_bin(&c.s, true, true, None, Duration::from_secs(60));
    assert_eq!(dry.code, Some(0), "{}", dry.stderr);
    let real = doctor_bin(&c.s, false, true, None, Duration::from_secs(60));
    assert_eq!(real.code, Some(0), "{}\n{}", real.stdout, real.stderr);
    for out in [&dry, &real] {
        assert_says(&out.stdout, "secret.json: Permission denied");
        assert_says(
            &out.stdout,
            "sx/runtime/threads/th-sx.json: Permission denied",
        );
    }
    let report: Value = serde_json::from_str(&real.stdout).unwrap();
    let paths: Vec<&str> = report["plan"]["actions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a["path"].as_str().unwrap())
        .collect();
    assert_eq!(paths, ["torn.json"], "only what it could read is planned");
    let after = tree(&c.s);
    assert_nothing_lost(&before, &after);
    assert_eq!(
        after.get(Path::new("secret.json")),
        before.get(Path::new("secret.json"))
    );
    assert_eq!(c.outside_state(), outside);
}

/// As user 65534: a session directory and a threads directory it may not list are reported
/// and nothing in them is touched; a store whose directory it may read but not write is
/// planned, and its move fails cleanly (EACCES), with nothing moved.
#[test]
fn c16_permission_denied_directories_as_an_ordinary_user() {
    let Some(c) = case_for_nobody("c16") else {
        return;
    };
    empty_store(&c.s, "pdir/runtime");
    store_with_thread(&c.s, "q/runtime", "th-q", Some("gone"), 1);
    empty_store(&c.s, "r/runtime");
    give_to_nobody(&c.s);
    for (dir, mode) in [
        ("pdir", 0o700),
        ("q/runtime/threads", 0o700),
        ("r/runtime", 0o755),
    ] {
        std::os::unix::fs::chown(c.s.join(dir), Some(0), Some(0)).unwrap();
        chmod(&c.s.join(dir), mode);
    }
    let before = tree(&c.s);
    let outside = c.outside_state();

    let dry = doctor_bin(&c.s, true, true, None, Duration::from_secs(60));
    assert_eq!(dry.code, Some(0), "{}", dry.stderr);
    assert_says(&dry.stdout, "pdir: Permission denied");
    assert_says(&dry.stdout, "q/runtime/threads: Permission denied");
    let real = doctor_bin(&c.s, false, true, None, Duration::from_secs(60));
    // The one failed action makes the exit code 1 (cli.md); the failure names the store.
    assert_eq!(real.code, Some(1), "{}\n{}", real.stdout, real.stderr);
    let report: Value = serde_json::from_str(&real.stdout).unwrap();
    let actions = report["plan"]["actions"].as_array().unwrap();
    assert_eq!(actions.len(), 1, "{report:#}");
    assert_eq!(actions[0]["path"], "r/runtime");
    assert_eq!(report["outcomes"][0]["outcome"], "failed");
    let why = report["outcomes"][0]["why"].as_str().unwrap();
    assert!(
        why.contains("r/runtime") && why.contains("Permission denied"),
        "{why}"
    );
    let after = tree(&c.s);
    assert_nothing_lost(&before, &after);
    for p in before
        .keys()
        .filter(|p| p.starts_with("r") || p.starts_with("pdir") || p.starts_with("q"))
    {
        assert_eq!(after.get(p), before.get(p), "{}", p.display());
    }
    assert_eq!(c.outside_state(), outside);
}

// ---------------------------------------------------------------------------------------------
// 17-25. Symlinks: loops, and links out of S in place of each kind of item.
// ---------------------------------------------------------------------------------------------

#[test]
fn c17_symlink_loops_inside_a_store_and_at_the_top() {
    let c = Case::new();
    store_with_thread(&c.s, "l/runtime", "th-l", None, 0);
    symlink("loop.json", &c.s.join("l/runtime/threads/loop.json"));
    symlink("loop.json", &c.s.join("l/runtime/turns/loop.json"));
    symlink("runtime-recovered-1", &c.s.join("l/runtime-recovered-1"));
    symlink("ring-b", &c.s.join("ring-a"));
    symlink("ring-a", &c.s.join("ring-b"));
    let o = exercise(&c);
    assert!(o.real().plan.actions.is_empty(), "{:?}", o.real().plan);
    let said = o.said();
    for p in [
        "l/runtime/threads/loop.json",
        "l/runtime-recovered-1",
        "ring-a",
        "ring-b",
    ] {
        assert_says(&said, p);
    }
    assert!(!said.contains("many levels of symbolic links"), "{said}");
}

#[test]
fn c18_symlink_out_of_s_in_place_of_a_session_directory() {
    let c = Case::new();
    symlink(c.outside.join("session"), &c.s.join("away"));
    let o = exercise(&c);
    assert!(o.real().plan.actions.is_empty(), "{:?}", o.real().plan);
    assert_says(&o.said(), "ignored away  (symlink (never followed))");
}

#[test]
fn c19_symlink_out_of_s_in_place_of_a_store() {
    let c = Case::new();
    symlink(c.outside.join("store"), &c.s.join("x/runtime"));
    // The app records the canonical path of the store; S is canonical, `x/runtime` is the link.
    write(
        &c.s,
        "x.json",
        pretty(&bound_document(&c.s, "x", "x/runtime")),
    );
    let o = exercise(&c);
    assert!(o.real().plan.actions.is_empty(), "{:?}", o.real().plan);
    let said = o.said();
    assert_says(&said, "ignored x/runtime  (symlink (never followed))");
    assert_says(
        &said,
        &format!(
            "binding of x.json to {:?} binds nothing",
            data_dir(&c.s, "x/runtime")
        ),
    );
}

#[test]
fn c20_symlink_out_of_s_in_place_of_a_thread_record() {
    let c = Case::new();
    store_with_thread(&c.s, "y/runtime", "th-y", Some("gone"), 0);
    symlink(
        c.outside.join("thread.json"),
        &c.s.join("y/runtime/threads/th-out.json"),
    );
    let o = exercise(&c);
    // The real thread with a dangling binding is unbound; the link is neither read nor
    // rewritten.
    let real = o.real();
    let paths: Vec<&str> = real.plan.actions.iter().map(|a| a.path.as_str()).collect();
    assert_eq!(paths, ["y/runtime/threads/th-y.json"]);
    assert_says(&o.said(), "y/runtime/threads/th-out.json");
}

/// A symlink out of S named `gone.json`, to a torn document (following the link would set the
/// target aside), next to a store whose thread is bound to `gone`. The link is listed as ignored
/// and neither it nor its target is touched.
#[test]
fn c21_symlink_out_of_s_in_place_of_a_document() {
    // bad_input links x.json to a readable document; here the target is torn.
    let c = linked_document();
    let o = exercise(&c);
    assert_says(&o.said(), "ignored gone.json  (symlink (never followed))");
    let real = o.real();
    assert!(real.plan.actions.iter().all(|a| a.path != "gone.json"));
    assert_eq!(
        o.after.get(Path::new("gone.json")),
        o.before.get(Path::new("gone.json"))
    );
}

fn linked_document() -> Case {
    let c = Case::new();
    symlink(c.outside.join("torn.json"), &c.s.join("gone.json"));
    store_with_thread(&c.s, "g/runtime", "th-g", Some("gone"), 1);
    c
}

/// store-format.md: a symlink is never a document. So the thread bound to `gone` names no known
/// session: the dry run plans R4 and R3 for it, and the real run must do what the dry run
/// planned, after which a further run plans nothing.
#[test]
fn c21_a_link_named_like_a_document_is_no_document_and_the_repair_converges() {
    let c = linked_document();
    let o = exercise(&c);
    let real = o.real();
    assert_eq!(real.plan.actions.len(), 2, "{}", o.said());
    for out in &real.outcomes {
        assert_eq!(out.outcome, OutcomeKind::Applied, "{out:?}");
    }
    let again = lib(&c.s, true).unwrap();
    assert!(again.plan.actions.is_empty(), "{:?}", again.plan);
}

/// `turns/` and `items/` of a store are symlinks out of S, to a turn of the store's thread and
/// its items (whose text is `OUTSIDE-SECRET`); a turn file is a symlink out of S too.
#[test]
fn c22_symlinks_out_of_s_in_place_of_turns_items_and_a_turn() {
    let c = Case::new();
    store_with_thread(&c.s, "z/runtime", "th-z", None, 0);
    symlink(c.outside.join("turns"), &c.s.join("z/runtime/turns"));
    symlink(c.outside.join("items"), &c.s.join("z/runtime/items"));
    store_with_thread(&c.s, "z2/runtime", "th-z", None, 0);
    symlink(
        c.outside.join(format!("turns/{}.json", turn_id("th-z", 1))),
        &c.s.join(format!("z2/runtime/turns/{}.json", turn_id("th-z", 1))),
    );
    let o = exercise(&c);
    // The turns and items behind the links are not read: nothing is recovered.
    assert!(o.real().plan.actions.is_empty(), "{:?}", o.real().plan);
    for (p, n) in &o.after {
        if let Node::File(b) = n {
            assert!(
                !String::from_utf8_lossy(b).contains("OUTSIDE-SECRET"),
                "{} holds content read through the link",
                p.display()
            );
        }
    }
}

/// A real run on the rich store with an unusable `.set-aside`: refused before acting, naming
/// it, or run with no action applied (the first action on each path failed naming
/// `.set-aside`; a later one on the same path, R3 after R4's failed unbind, was skipped because
/// the record is not what the plan expected, or failed the same way). S is unchanged apart from
/// the doctor's own lock and receipts.
#[track_caller]
fn assert_set_aside_unusable(o: &Observed) {
    assert_eq!(o.dry().plan.actions.len(), RICH_ACTIONS);
    match &o.real {
        Err(e) => assert_says(e, "S/.set-aside"),
        Ok(real) => {
            let mut seen = std::collections::BTreeSet::new();
            for (a, out) in real.plan.actions.iter().zip(&real.outcomes) {
                let why = out.why.as_deref().unwrap_or_default();
                let first = seen.insert(a.path.clone());
                let ok = match out.outcome {
                    OutcomeKind::Failed => why.contains(".set-aside"),
                    OutcomeKind::Skipped => !first && why.starts_with("changed since planned"),
                    OutcomeKind::Applied => false,
                };
                assert!(ok, "{} {:?}: {why}", a.path, out.outcome);
            }
        }
    }
    for (p, n) in o
        .before
        .iter()
        .filter(|(p, _)| !p.starts_with(".reconcile"))
    {
        assert_eq!(o.after.get(p), Some(n), "{}", p.display());
    }
    assert!(!o.after.contains_key(Path::new("th-orphan.json")));
}

/// The executor must never move an item into a `.set-aside` that leads outside S. Either the run
/// refuses before it acts, naming `.set-aside`, or every action that needs it fails naming it
/// (thread rewrites too: their previous version cannot be kept first). Either way nothing in S
/// changes and the directory outside stays empty.
#[test]
fn c23_set_aside_is_a_symlink_out_of_s() {
    let c = Case::new();
    rich_store(&c.s);
    symlink(c.outside.join("aside"), &c.s.join(".set-aside"));
    let o = exercise(&c);
    assert_set_aside_unusable(&o);
}

#[test]
fn c24_reconcile_dir_is_a_symlink_out_of_s() {
    let c = Case::new();
    write(&c.s, "torn.json", b"{\"torn\":");
    symlink(c.outside.join("reconcile"), &c.s.join(".reconcile"));
    let o = exercise(&c);
    let said = o.said();
    assert_says(&said, "S/.reconcile");
    assert!(std::fs::read_dir(c.outside.join("reconcile"))
        .unwrap()
        .next()
        .is_none());
}

#[test]
fn c25_reconcile_lock_is_a_symlink_out_of_s() {
    let c = Case::new();
    write(&c.s, "torn.json", b"{\"torn\":");
    symlink(c.outside.join("lockfile"), &c.s.join(".reconcile.lock"));
    let o = exercise(&c);
    assert_eq!(o.dry().plan.actions.len(), 1);
    let err = o
        .real
        .as_ref()
        .expect_err("a real run must refuse the lock");
    assert_says(err, ".reconcile.lock");
    assert_eq!(o.after, o.before, "a refused run writes nothing");
}

// ---------------------------------------------------------------------------------------------
// 26-27. Bindings to /etc and ../../..
// ---------------------------------------------------------------------------------------------

fn etc_state() -> (i128, Vec<u8>) {
    let m = std::fs::metadata("/etc").unwrap();
    (
        i128::from(m.mtime()) * 1_000_000_000 + i128::from(m.mtime_nsec()),
        std::fs::read("/etc/passwd").unwrap_or_default(),
    )
}

#[test]
fn c26_binding_to_etc() {
    let c = Case::new();
    write(&c.s, "etc.json", pretty(&document_bound_to("etc", "/etc")));
    write(
        &c.s,
        "passwd.json",
        pretty(&document_bound_to("passwd", "/etc/passwd")),
    );
    let etc = etc_state();
    let o = exercise(&c);
    assert!(o.real().plan.actions.is_empty(), "{:?}", o.real().plan);
    let said = o.said();
    assert_says(&said, "binding of etc.json to \"/etc\" binds nothing");
    assert_says(
        &said,
        "binding of passwd.json to \"/etc/passwd\" binds nothing",
    );
    assert_eq!(etc_state(), etc);
}

#[test]
fn c27_binding_to_parent_directories() {
    let c = Case::new();
    let outside_store = format!("{}/../outside/store", c.s.display());
    let bindings = [
        ("up", "../../.."),
        ("upstore", "../outside/store"),
        ("sneaky", "x/../../outside/store"),
        ("absolute", outside_store.as_str()),
    ];
    for (id, data_dir) in bindings {
        write(
            &c.s,
            &format!("{id}.json"),
            pretty(&document_bound_to(id, data_dir)),
        );
    }
    let o = exercise(&c);
    assert!(o.real().plan.actions.is_empty(), "{:?}", o.real().plan);
    let said = o.said();
    for (id, data_dir) in bindings {
        assert_says(
            &said,
            &format!("binding of {id}.json to {data_dir:?} binds nothing"),
        );
    }
}

// ---------------------------------------------------------------------------------------------
// 28-33. A file where a directory is expected.
// ---------------------------------------------------------------------------------------------

#[test]
fn c28_threads_and_turns_are_files() {
    let c = Case::new();
    empty_store(&c.s, "w/runtime");
    write(&c.s, "w/runtime/threads", b"not a directory");
    store_with_thread(&c.s, "u/runtime", "th-u", None, 0);
    write(&c.s, "u/runtime/turns", b"not a directory");
    let o = exercise(&c);
    // Both stores may hold work the doctor cannot read: kept, untouched.
    assert!(o.real().plan.actions.is_empty(), "{:?}", o.real().plan);
    assert_eq!(o.real().summary.stores_kept_with_work, 2);
}

#[test]
fn c28_c29_unexpected_files_in_a_session_directory_are_named() {
    let c = Case::new();
    empty_store(&c.s, "w/runtime");
    write(&c.s, "w/runtime/threads", b"not a directory");
    write(&c.s, "v/runtime", b"not a directory");
    let o = exercise(&c);
    assert_says(&o.said(), "w/runtime/threads");
    assert_says(&o.said(), "v/runtime");
}

#[test]
fn c29_runtime_is_a_file() {
    let c = Case::new();
    write(&c.s, "v/runtime", b"not a directory");
    write(&c.s, "v/artifacts/log", b"x");
    let o = exercise(&c);
    // Not a store, and the directory is not artifact-only: nothing to do.
    assert!(o.real().plan.actions.is_empty(), "{:?}", o.real().plan);
}

/// `.late-usage` is a file, or a symlink: no process can hold a lease under it (the app needs a
/// real directory there), so there is no live session, at planning and at execution alike. The
/// torn document is planned and set aside, and the next run plans nothing: dry run and real
/// run agree, and the repair converges.
#[test]
fn c30_late_usage_is_a_file_or_a_symlink() {
    for odd in ["file", "symlink"] {
        let c = Case::new();
        match odd {
            "file" => write(&c.s, ".late-usage", b"not a directory"),
            _ => {
                std::fs::create_dir(c.s.join("leases")).unwrap();
                std::fs::write(c.s.join("leases/torn.live"), b"").unwrap();
                symlink("leases", &c.s.join(".late-usage"));
            }
        }
        write(&c.s, "torn.json", b"{\"torn\":");
        let o = exercise(&c);
        let out = outcome_of(o.real(), "torn.json");
        assert_eq!(out.outcome, OutcomeKind::Applied, "{odd}: {out:?}");
        assert!(!o.after.contains_key(Path::new("torn.json")), "{odd}");
        let again = lib(&c.s, true).unwrap();
        assert!(again.plan.actions.is_empty(), "{odd}: {:?}", again.plan);
    }
}

#[test]
fn c31_checkpoints_is_a_file() {
    let c = Case::new();
    write(&c.s, "checkpoints", b"not a directory");
    let o = exercise(&c);
    assert!(o.real().plan.actions.is_empty());
    assert_says(&o.said(), "ignored checkpoints  (unexpected kind of entry)");
}

#[test]
fn c32_set_aside_is_a_file() {
    let c = Case::new();
    rich_store(&c.s);
    write(&c.s, ".set-aside", b"not a directory");
    let o = exercise(&c);
    assert_says(
        &said(&o.dry),
        "ignored .set-aside  (unexpected kind of entry)",
    );
    assert_set_aside_unusable(&o);
}

#[test]
fn c33_reconcile_is_a_file() {
    let c = Case::new();
    write(&c.s, "torn.json", b"{\"torn\":");
    write(&c.s, ".reconcile", b"not a directory");
    let o = exercise(&c);
    assert_says(&o.said(), "S/.reconcile");
    assert_eq!(
        o.after.get(Path::new(".reconcile")),
        Some(&file(b"not a directory"))
    );
}

/// invariants.md: receipts are written for every action applied. When `.reconcile/` cannot be
/// written (a file, or a link out of S), the run refuses before it changes anything, instead
/// of applying its actions unreceipted and then failing on `last.json`.
#[test]
fn c24_c33_an_unusable_reconcile_dir_stops_the_run_before_it_acts() {
    for link in [false, true] {
        let c = Case::new();
        write(&c.s, "torn.json", b"{\"torn\":");
        if link {
            symlink(c.outside.join("reconcile"), &c.s.join(".reconcile"));
        } else {
            write(&c.s, ".reconcile", b"not a directory");
        }
        let o = exercise(&c);
        let err = o.real.as_ref().expect_err("the run must refuse");
        assert_says(err, "S/.reconcile");
        assert!(
            o.after.contains_key(Path::new("torn.json")),
            "torn.json was moved though no receipt could be written (link: {link})"
        );
    }
}

// ---------------------------------------------------------------------------------------------
// 34-38. A directory where a file is expected.
// ---------------------------------------------------------------------------------------------

#[test]
fn c34_owner_json_is_a_directory() {
    let c = Case::new();
    empty_store(&c.s, "d1/runtime");
    std::fs::remove_file(c.s.join("d1/runtime/owner.json")).unwrap();
    write(&c.s, "d1/runtime/owner.json/inside", b"x");
    let o = exercise(&c);
    assert_says(&o.said(), "d1/runtime/owner.json: not a regular file");
    // Still an empty store: set aside whole, the odd directory with it.
    assert_eq!(o.real().plan.actions.len(), 1);
    assert_eq!(o.real().outcomes[0].outcome, OutcomeKind::Applied);
}

#[test]
fn c35_state_json_is_a_directory() {
    let c = Case::new();
    empty_store(&c.s, "d2/runtime");
    std::fs::remove_file(c.s.join("d2/runtime/state.json")).unwrap();
    std::fs::create_dir(c.s.join("d2/runtime/state.json")).unwrap();
    let o = exercise(&c);
    assert_says(&o.said(), "d2/runtime/state.json: not a regular file");
    assert!(
        o.real().plan.actions.is_empty(),
        "its work cannot be judged: kept"
    );
}

#[test]
fn c36_thread_record_is_a_directory() {
    let c = Case::new();
    empty_store(&c.s, "d3/runtime");
    write(&c.s, "d3/runtime/threads/th-d.json/x", b"x");
    let o = exercise(&c);
    assert_says(
        &o.said(),
        "ignored d3/runtime/threads/th-d.json  (not a thread record)",
    );
    assert!(o.real().plan.actions.is_empty());
}

#[test]
fn c37_reconcile_lock_is_a_directory() {
    let c = Case::new();
    write(&c.s, "torn.json", b"{\"torn\":");
    std::fs::create_dir(c.s.join(".reconcile.lock")).unwrap();
    let o = exercise(&c);
    let err = o.real.as_ref().expect_err("the lock cannot be taken");
    assert_says(err, ".reconcile.lock");
    assert_eq!(o.after, o.before);
}

#[test]
fn c38_owner_lock_and_live_lease_are_directories() {
    let c = Case::new();
    empty_store(&c.s, "d4/runtime");
    std::fs::remove_file(c.s.join("d4/runtime/runtime-process.owner.lock")).unwrap();
    std::fs::create_dir(c.s.join("d4/runtime/runtime-process.owner.lock")).unwrap();
    write(&c.s, "torn.json", b"{\"torn\":");
    std::fs::create_dir_all(c.s.join(".late-usage/torn.live")).unwrap();
    let o = exercise(&c);
    // An owner lock that is not a regular file cannot be probed: the store counts as held and
    // is kept, with a message naming the path. A lease that is not a regular file is no lease:
    // the torn document is set aside, at planning and at execution alike.
    assert_says(
        &o.said(),
        "d4/runtime/runtime-process.owner.lock: not a regular file",
    );
    let real = o.real();
    let paths: Vec<&str> = real.plan.actions.iter().map(|a| a.path.as_str()).collect();
    assert_eq!(paths, ["torn.json"], "{}", o.said());
    assert!(real
        .outcomes
        .iter()
        .all(|o| o.outcome == OutcomeKind::Applied));
}

// ---------------------------------------------------------------------------------------------
// 39-41. Fifos and devices where files are expected.
// ---------------------------------------------------------------------------------------------

/// A fifo named `owner.json`, `state.json` or `runtime-process.owner.lock` in a store, or
/// `.late-usage/<id>.live`: opening a fifo for reading blocks until a writer comes, so a doctor
/// that opens one without `O_NONBLOCK` (and without checking the kind first) hangs forever: the
/// scan (store files) or the executor (its live-lease check before acting on `p.json`), the
/// latter while holding `.reconcile.lock`, so every later run exits 75. Run by the binary with
/// a timeout.
#[test]
fn c39_fifos_in_place_of_store_files_and_leases() {
    let mut hung = Vec::new();
    for name in [
        "f/runtime/owner.json",
        "f/runtime/state.json",
        "f/runtime/runtime-process.owner.lock",
        ".late-usage/p.live",
    ] {
        let c = Case::new();
        empty_store(&c.s, "f/runtime");
        write(&c.s, "p.json", b"{\"torn\":");
        let _ = std::fs::remove_file(c.s.join(name));
        mkfifo(&c.s.join(name));
        let out = doctor_bin(&c.s, false, false, None, Duration::from_secs(10));
        if out.timed_out {
            hung.push(name);
            continue;
        }
        assert_eq!(out.code, Some(0), "{}", out.stderr);
        assert_says(&out.stdout, name);
    }
    assert!(hung.is_empty(), "a fifo hung the doctor: {hung:?}");
}

/// Fifos where the doctor checks the kind before opening: a document, a thread record, a turn,
/// an item, a checkpoint. Each is left alone. The orphan thread next to the thread-record fifo
/// is recovered (an unreadable thread record is skipped, as the app's lenient listing does);
/// a store with a fifo among its turns or items is not recovered (one unreadable turn or item
/// aborts the store's recovery, Version 2) and is kept.
#[test]
fn c40_fifos_in_place_of_documents_threads_turns_and_leases() {
    let c = Case::new();
    store_with_thread(&c.s, "p/runtime", "th-p", None, 1);
    store_with_thread(&c.s, "pt/runtime", "th-pt", None, 1);
    store_with_thread(&c.s, "pi/runtime", "th-pi", None, 1);
    let fifo_turn = format!("pt/runtime/turns/{}.json", turn_id("th-pt", 2));
    let fifo_item = "pi/runtime/items/item_th-pi_2_u.json".to_owned();
    for rel in [
        "fifo.json",
        "p/runtime/threads/th-q.json",
        &fifo_turn,
        &fifo_item,
        "checkpoints/p.json",
    ] {
        mkfifo(&c.s.join(rel));
    }
    let start = Instant::now();
    let out = doctor_bin(&c.s, false, false, None, Duration::from_secs(30));
    assert!(!out.timed_out, "the doctor hung on a fifo");
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    assert_says(&out.stdout, "fifo.json");
    assert_says(&out.stdout, "p/runtime/threads/th-q.json");
    assert_says(&out.stdout, &fifo_turn);
    assert_says(&out.stdout, &fifo_item);
    let report: Value = serde_json::from_str(&out.stdout).unwrap();
    assert_eq!(report["summary"]["sessions_recovered"], 1, "{report:#}");
    let doc: Value =
        serde_json::from_slice(&std::fs::read(c.s.join("th-p.json")).unwrap()).unwrap();
    assert_eq!(doc["messages"], json!(turn_messages("th-p", 1)));
    assert!(!c.s.join("th-pt.json").exists() && !c.s.join("th-pi.json").exists());
    println!("fifos: {:?}", start.elapsed());
    let o = exercise(&c);
    assert!(
        o.real().plan.actions.is_empty(),
        "second run: {:?}",
        o.real().plan
    );
}

/// A character device (1:5, like /dev/zero, endless) named like a store file, a thread record,
/// a turn and an item: never read (reading it would never end).
#[test]
fn c41_character_devices_in_place_of_files() {
    if !is_root() {
        println!("SKIPPED c41: mknod needs root");
        return;
    }
    let c = Case::new();
    // `k/runtime`: owner.json is a device, so the store is not recovered (Version 2: no
    // readable owner.json, no binding that validates). `k2/runtime`: a device beside the
    // thread records (skipped, as the app's lenient listing does): its thread is recovered.
    // `k3/runtime` and `k4/runtime`: a device among the turns or the items aborts the store's
    // recovery.
    store_with_thread(&c.s, "k/runtime", "th-k", None, 1);
    store_with_thread(&c.s, "k2/runtime", "th-k2", None, 1);
    store_with_thread(&c.s, "k3/runtime", "th-k3", None, 1);
    store_with_thread(&c.s, "k4/runtime", "th-k4", None, 1);
    std::fs::remove_file(c.s.join("k/runtime/owner.json")).unwrap();
    for rel in [
        "k/runtime/owner.json",
        "k2/runtime/threads/th-zero.json",
        "k3/runtime/turns/turn_th-k3_0.json",
        "k4/runtime/items/item_th-k4_0_u.json",
    ] {
        let ok = Command::new("mknod")
            .arg(c.s.join(rel))
            .args(["c", "1", "5"])
            .status()
            .is_ok_and(|s| s.success());
        if !ok {
            println!("SKIPPED c41: mknod is not permitted here");
            return;
        }
    }
    let out = doctor_bin(&c.s, true, false, None, Duration::from_secs(30));
    assert!(!out.timed_out, "the doctor read a device");
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    assert_says(&out.stdout, "k/runtime/owner.json: not a regular file");
    let o = exercise(&c);
    // Only the thread of `k2/runtime` is recovered from its real turn.
    assert_eq!(o.real().summary.sessions_recovered, 1, "{}", o.said());
    assert!(
        o.after.contains_key(Path::new("th-k2.json")),
        "{}",
        o.said()
    );
    assert_eq!(o.real().summary.stores_kept_with_work, 3, "{}", o.said());
}

// ---------------------------------------------------------------------------------------------
// 42. Hard links to files outside S.
// ---------------------------------------------------------------------------------------------

/// A thread record that is a hard link to a file outside S, and a torn document that is one:
/// R4's rewrite replaces the link atomically (the file outside keeps its bytes), and R1 moves
/// the link (the file outside is untouched).
#[test]
fn c42_hard_links_to_files_outside_s() {
    let c = Case::new();
    store_with_thread(&c.s, "hl/runtime", "th-out", Some("nobody"), 0);
    let rec = c.s.join("hl/runtime/threads/th-out.json");
    std::fs::remove_file(&rec).unwrap();
    std::fs::hard_link(c.outside.join("thread.json"), &rec).unwrap();
    std::fs::hard_link(c.outside.join("torn.json"), c.s.join("linked.json")).unwrap();
    let o = exercise(&c);
    let real = o.real();
    let mut paths: Vec<&str> = real.plan.actions.iter().map(|a| a.path.as_str()).collect();
    paths.sort();
    assert_eq!(paths, ["hl/runtime/threads/th-out.json", "linked.json"]);
    assert!(real
        .outcomes
        .iter()
        .all(|o| o.outcome == OutcomeKind::Applied));
    let now: Value = serde_json::from_slice(&std::fs::read(&rec).unwrap()).unwrap();
    assert!(
        now.get("session_id").is_none(),
        "the record in S was unbound"
    );
}

// ---------------------------------------------------------------------------------------------
// 43-47. Read-only S, ENOSPC, EXDEV.
// ---------------------------------------------------------------------------------------------

/// A read-only S (a tmpfs remounted read-only): a dry run plans as usual; a real run fails
/// before it changes anything, naming the lock file and the reason.
#[test]
fn c43_read_only_s() {
    if !can_mount("c43") {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let mnt = tmp.path().join("ro");
    let Some(_m) = tmpfs(&mnt, "size=8m") else {
        println!("SKIPPED c43: tmpfs mount failed");
        return;
    };
    let c = Case::at(mnt.join("S"));
    rich_store(&c.s);
    assert!(
        mount_cmd(&["-o".as_ref(), "remount,ro".as_ref(), mnt.as_os_str()]),
        "remount read-only"
    );
    let o = exercise(&c);
    assert_eq!(o.dry().plan.actions.len(), RICH_ACTIONS);
    let err = o
        .real
        .as_ref()
        .expect_err("a read-only S cannot be repaired");
    assert_says(err, ".reconcile.lock");
    assert_says(err, "Read-only file system");
    assert_eq!(o.after, o.before);
}

/// ENOSPC (no inode left) in the middle of setting a store aside: the destination directory
/// cannot be created; nothing of the store moves; the receipt of the failure names the store
/// and the reason. With no inode left for `last.json` either, the run then fails, naming it.
#[test]
fn c44_enospc_no_inode_left_while_moving_a_store() {
    if !can_mount("c44") {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let mnt = tmp.path().join("full");
    let Some(_m) = tmpfs(&mnt, "size=16m,nr_inodes=600") else {
        println!("SKIPPED c44: tmpfs mount failed");
        return;
    };
    let c = Case::at(mnt.join("S"));
    empty_store(&c.s, "e/runtime");
    // The doctor's own files exist already, so the run needs an inode for its run directory,
    // one for MANIFEST.jsonl, and then two for the store's destination: leave two.
    write(&c.s, ".reconcile.lock", b"");
    write(&c.s, ".reconcile/receipts.jsonl", b"");
    std::fs::create_dir_all(c.s.join(".set-aside")).unwrap();
    let filler = mnt.join("filler");
    std::fs::create_dir(&filler).unwrap();
    let (free, _, _) = fs_free(&mnt);
    for i in 0..free.saturating_sub(2) {
        std::fs::write(filler.join(i.to_string()), b"").unwrap();
    }
    assert_eq!(fs_free(&mnt).0, 2, "inodes left");

    let o = exercise(&c);
    assert_eq!(o.dry().plan.actions.len(), 1);
    match &o.real {
        Ok(report) => {
            assert_eq!(report.outcomes[0].outcome, OutcomeKind::Failed);
        }
        Err(e) => {
            assert_says(e, "S/.reconcile/");
            assert_says(e, "last.json");
            assert_says(e, "No space left on device");
        }
    }
    let r = receipts(&c.s);
    assert_eq!(r.len(), 1, "{r:?}");
    assert_eq!(r[0]["path"], "e/runtime");
    assert_eq!(r[0]["outcome"], "failed");
    let why = r[0]["why"].as_str().unwrap();
    assert!(why.contains("No space left on device"), "{why}");
    assert!(why.contains("e/runtime"), "{why}");
    for (p, n) in o
        .before
        .iter()
        .filter(|(p, _)| !p.starts_with(".reconcile"))
    {
        assert_eq!(o.after.get(p), Some(n), "{}", p.display());
    }
}

/// ENOSPC (no byte left) in the middle of a recovery: the previous version of the thread record
/// is kept, then the recovered document does not fit. The thread record is not rewritten, no
/// partial document is left, the failure names the document; after the temporary file is
/// removed, receipts and last.json fit again.
#[test]
fn c45_enospc_no_space_left_while_writing_a_recovered_document() {
    if !can_mount("c45") {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let mnt = tmp.path().join("full");
    let Some(_m) = tmpfs(&mnt, "size=4m") else {
        println!("SKIPPED c45: tmpfs mount failed");
        return;
    };
    let c = Case::at(mnt.join("S"));
    store_with_thread(&c.s, "big/runtime", "th-big", None, 1);
    let [_, mut answer] = turn_items("th-big", 1);
    answer["detail"] = json!("z".repeat(400 << 10));
    write(
        &c.s,
        &format!("big/runtime/items/{}.json", answer["id"].as_str().unwrap()),
        pretty(&answer),
    );
    let (_, free_blocks, block) = fs_free(&mnt);
    assert_eq!(block, 4096);
    // Leave 8 pages: enough for the manifest, the previous version, receipts and last.json,
    // not for a 400 KiB document.
    let keep = 8;
    std::fs::write(
        mnt.join("filler"),
        vec![0u8; ((free_blocks - keep) * block) as usize],
    )
    .unwrap();
    let o = exercise(&c);
    let real = o.real();
    let out = outcome_of(real, "big/runtime/threads/th-big.json");
    assert_eq!(out.outcome, OutcomeKind::Failed, "{}", o.said());
    let why = out.why.as_deref().unwrap();
    assert!(
        why.contains("th-big.json") && why.contains("No space left on device"),
        "{why}"
    );
    assert_eq!(
        o.after.get(Path::new("big/runtime/threads/th-big.json")),
        o.before.get(Path::new("big/runtime/threads/th-big.json")),
        "the thread record was rewritten though its document could not be written"
    );
    assert!(!o.after.contains_key(Path::new("th-big.json")));
    assert!(
        !o.after
            .keys()
            .any(|p| p.to_string_lossy().contains("doctor-tmp")),
        "a temporary file was left"
    );
}

/// EXDEV: the store's directory is a mount point of another filesystem, so no entry can be
/// renamed into `.set-aside/` on S's filesystem. The move fails on its first entry, nothing
/// moves, and the failure names the store and the reason.
#[test]
fn c46_exdev_a_store_on_another_filesystem() {
    if !can_mount("c46") {
        return;
    }
    let c = Case::new();
    let store = c.s.join("m/runtime");
    let Some(_m) = tmpfs(&store, "size=1m") else {
        println!("SKIPPED c46: tmpfs mount failed");
        return;
    };
    empty_store(&c.s, "m/runtime");
    let o = exercise(&c);
    let real = o.real();
    let out = outcome_of(real, "m/runtime");
    assert_eq!(out.outcome, OutcomeKind::Failed);
    let why = out.why.as_deref().unwrap();
    assert!(
        why.contains("m/runtime") && why.contains("cross-device"),
        "{why}"
    );
    for (p, n) in &o.before {
        assert_eq!(o.after.get(p), Some(n), "{}", p.display());
    }
}

/// EXDEV the other way: `.set-aside` is another filesystem. A torn document cannot be moved
/// there (failed, named); a thread rewrite still works, because its previous version is copied,
/// not renamed.
#[test]
fn c47_exdev_set_aside_on_another_filesystem() {
    if !can_mount("c47") {
        return;
    }
    let c = Case::new();
    let Some(_m) = tmpfs(&c.s.join(".set-aside"), "size=1m") else {
        println!("SKIPPED c47: tmpfs mount failed");
        return;
    };
    write(&c.s, "torn.json", b"{\"torn\":");
    store_with_thread(&c.s, "lost/runtime", "th-lost", Some("lost"), 0);
    let o = exercise(&c);
    let real = o.real();
    let torn = outcome_of(real, "torn.json");
    assert_eq!(torn.outcome, OutcomeKind::Failed);
    let why = torn.why.as_deref().unwrap();
    assert!(
        why.contains("torn.json") && why.contains("cross-device"),
        "{why}"
    );
    assert_eq!(
        outcome_of(real, "lost/runtime/threads/th-lost.json").outcome,
        OutcomeKind::Applied
    );
    assert!(o.after.contains_key(Path::new("torn.json")));
}

/// A private (0600) thread record stays private: its rewrite, its previous-version copy and the
/// document recovered from it all keep its permission bits (invariants.md), whatever the umask.
#[test]
fn c48_private_records_stay_private() {
    let c = Case::new();
    store_with_thread(&c.s, "pm/runtime", "th-pm", Some("gone"), 1);
    let record = c.s.join("pm/runtime/threads/th-pm.json");
    chmod(&record, 0o600);
    let o = exercise(&c);
    let real = o.real();
    let kinds: Vec<_> = real.plan.actions.iter().map(|a| a.action).collect();
    assert_eq!(
        kinds,
        [
            plan::ActionKind::UnbindThread,
            plan::ActionKind::RecoverThread
        ],
        "{}",
        o.said()
    );
    let mode = |p: &Path| std::fs::metadata(p).unwrap().mode() & 0o777;
    assert_eq!(mode(&record), 0o600, "the rewritten record");
    assert_eq!(
        mode(&c.s.join("th-pm.json")),
        0o600,
        "the recovered document"
    );
    let previous = c.s.join(format!(
        ".set-aside/{}/pm/runtime/threads/th-pm.json",
        real.run
    ));
    assert_eq!(mode(&previous), 0o600, "the previous-version copy");
}

/// A failure after the actions were applied (here `last.json` cannot be written: a directory
/// holding a file is in its place) still prints the report of what was done, with the failure
/// in `errors`, and exits 1; what stands at `last.json` is left as it was.
#[test]
fn c49_a_late_failure_keeps_the_report() {
    let c = Case::new();
    rich_store(&c.s);
    write(&c.s, ".reconcile/last.json/keep", b"theirs\n");
    let out = doctor_bin(&c.s, false, false, None, Duration::from_secs(60));
    assert!(!out.timed_out);
    assert_eq!(out.code, Some(1), "{}", out.stderr);
    let report: Value = serde_json::from_str(&out.stdout)
        .unwrap_or_else(|e| panic!("stdout is the report ({e}): {:?}", out.stdout));
    let outcomes = report["outcomes"].as_array().unwrap();
    assert_eq!(outcomes.len(), RICH_ACTIONS, "{}", out.stdout);
    assert!(outcomes.iter().all(|o| o["outcome"] == "applied"));
    let errors = report["summary"]["errors"].to_string();
    assert!(errors.contains("last.json"), "{errors}");
    assert_eq!(
        std::fs::read(c.s.join(".reconcile/last.json/keep")).unwrap(),
        b"theirs\n"
    );
}

// ---------------------------------------------------------------------------------------------
// 50-52. Races, made deterministic by the pause hook (`DOCTOR_PAUSE_BEFORE`): the doctor stops
// right before the named mutation, the test changes the store, then releases it.
// ---------------------------------------------------------------------------------------------

/// Runs the doctor binary with `args`, pausing before the first mutation described by
/// `pause`; `during` runs inside the window. Returns the exit code, stdout and stderr.
fn paused(args: &[&str], pause: &str, during: impl FnOnce()) -> (Option<i32>, String, String) {
    paused_steps(args, &[pause], vec![Box::new(during)])
}

/// [`paused`] with several windows: one pause before the first mutation matching each of
/// `pauses`, and `during[i]` runs inside the i-th window met.
fn paused_steps<'a>(
    args: &[&'a str],
    pauses: &[&'a str],
    during: Vec<Box<dyn FnOnce() + 'a>>,
) -> (Option<i32>, String, String) {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_doctor"));
    cmd.args(args).env("DOCTOR_NOW", NOW);
    let run = common::run_paused(cmd, pauses.iter().copied().zip(during).collect());
    (run.code, run.stdout, run.stderr)
}

fn outcome_in(report: &Value, path: &str) -> Value {
    let seq = report["plan"]["actions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|a| a["path"] == path)
        .unwrap_or_else(|| panic!("no action on {path}: {report:#}"))["seq"]
        .clone();
    report["outcomes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|o| o["seq"] == seq)
        .cloned()
        .unwrap()
}

/// A document saved at `S/<tid>.json` after R3 checked that the id is free, just before the
/// recovered document is renamed into place: it is never replaced (`RENAME_NOREPLACE`); the
/// recovery is skipped as "document id taken", the thread is left unbound.
#[test]
fn c50_a_document_saved_during_a_recovery_is_never_replaced() {
    let c = Case::new();
    store_with_thread(&c.s, "o/runtime", "th-o", None, 1);
    let record = std::fs::read(c.s.join("o/runtime/threads/th-o.json")).unwrap();
    let s = c.s.to_string_lossy().into_owned();
    let (code, stdout, stderr) = paused(
        &["--repair-sessions", "--json", "--sessions-dir", &s],
        "create in place th-o.json",
        || std::fs::write(c.s.join("th-o.json"), b"theirs\n").unwrap(),
    );
    assert_eq!(code, Some(0), "{stderr}");
    let report: Value = serde_json::from_str(&stdout).unwrap();
    let o = outcome_in(&report, "o/runtime/threads/th-o.json");
    assert_eq!(o["outcome"], "skipped", "{o}");
    assert_eq!(o["why"], "document id taken", "{o}");
    assert_eq!(std::fs::read(c.s.join("th-o.json")).unwrap(), b"theirs\n");
    assert_eq!(
        std::fs::read(c.s.join("o/runtime/threads/th-o.json")).unwrap(),
        record,
        "the thread stays unbound"
    );
}

/// A file created at a restore's original path after the "not occupied" check, just before
/// the rename: it is never replaced; the item is skipped and stays in the set-aside run.
#[test]
fn c51_a_file_created_during_a_restore_is_never_replaced() {
    let c = Case::new();
    write(&c.s, "torn.json", b"{\"torn\":");
    let s = c.s.to_string_lossy().into_owned();
    let repaired = lib(&c.s, false).unwrap();
    let run = repaired.run.clone();
    let (code, stdout, stderr) = paused(
        &[
            "--restore",
            &run,
            "--item",
            "torn.json",
            "--json",
            "--sessions-dir",
            &s,
        ],
        &format!("move .set-aside/{run}/torn.json"),
        || std::fs::write(c.s.join("torn.json"), b"theirs\n").unwrap(),
    );
    assert_eq!(code, Some(0), "{stderr}");
    let report: Value = serde_json::from_str(&stdout).unwrap();
    let o = outcome_in(&report, "torn.json");
    assert_eq!(o["outcome"], "skipped", "{o}");
    assert_says(o["why"].as_str().unwrap(), "occupied");
    assert_eq!(std::fs::read(c.s.join("torn.json")).unwrap(), b"theirs\n");
    assert_eq!(
        std::fs::read(c.s.join(format!(".set-aside/{run}/torn.json"))).unwrap(),
        b"{\"torn\":"
    );
}

/// While R2 moves an empty store entry by entry, the store directory is swapped for a symlink
/// to another store that stays inside S (a bound one). Nothing of the bound store moves: the
/// moves act on directories opened one component at a time without following links.
#[test]
fn c52_a_store_swapped_for_an_inside_symlink_never_redirects_the_move() {
    let c = Case::new();
    empty_store(&c.s, "e/runtime");
    let bound_before = tree(&c.s.join("keep/runtime"));
    let s = c.s.to_string_lossy().into_owned();
    let (_, stdout, stderr) = paused(
        &["--repair-sessions", "--json", "--sessions-dir", &s],
        "move e/runtime/",
        || {
            std::fs::rename(c.s.join("e/runtime"), c.s.join("e/old")).unwrap();
            std::os::unix::fs::symlink("../keep/runtime", c.s.join("e/runtime")).unwrap();
        },
    );
    let report: Value =
        serde_json::from_str(&stdout).unwrap_or_else(|e| panic!("{e}: {stdout:?} {stderr}"));
    let o = outcome_in(&report, "e/runtime");
    assert_ne!(o["outcome"], "applied", "{o}");
    assert_eq!(
        tree(&c.s.join("keep/runtime")),
        bound_before,
        "the bound store the symlink points at is untouched"
    );
    let set_aside = tree(&c.s.join(".set-aside"));
    assert!(
        !set_aside
            .keys()
            .any(|p| p.to_string_lossy().contains("keep")),
        "nothing of the bound store was set aside: {set_aside:?}"
    );
}

/// Two free stores, each with the temporary file of an interrupted doctor write in its
/// threads directory: the case and the two files' paths.
fn two_interrupted_writes() -> (Case, &'static str, &'static str) {
    let c = Case::new();
    store_with_thread(&c.s, "a/runtime", "th-a", None, 0);
    store_with_thread(&c.s, "b/runtime", "th-b", None, 0);
    let temp_a = "a/runtime/threads/.th-a.json.doctor-tmp-4242-1";
    let temp_b = "b/runtime/threads/.th-b.json.doctor-tmp-4242-1";
    write(&c.s, temp_a, "half");
    write(&c.s, temp_b, "half");
    (c, temp_a, temp_b)
}

/// Two temporary files of interrupted doctor writes, in two free stores: the dry run lists
/// both. While the real run removes the first, a host takes the second store's owner lock: the
/// second is left and its skip receipted, never removed under a live host, never silently.
#[test]
fn c53_an_interrupted_write_whose_store_became_live_is_skipped_with_a_receipt() {
    let (c, temp_a, temp_b) = two_interrupted_writes();
    let s = c.s.to_string_lossy().into_owned();
    let mut holder = None;
    let (code, stdout, stderr) = paused(
        &["--repair-sessions", "--json", "--sessions-dir", &s],
        &format!("delete {temp_a}"),
        || {
            holder = Some(common::Holder::spawn(&[c
                .s
                .join("b/runtime/runtime-process.owner.lock")]))
        },
    );
    assert_eq!(code, Some(0), "{stderr}");
    let report: Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(report["interrupted_writes"], json!([temp_a]), "{report:#}");
    assert!(!c.s.join(temp_a).exists());
    assert!(c.s.join(temp_b).exists(), "never removed under a live host");
    let receipts = std::fs::read_to_string(c.s.join(".reconcile/receipts.jsonl")).unwrap();
    let skip = receipts
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .find(|r| r["path"] == temp_b)
        .unwrap_or_else(|| panic!("no receipt for {temp_b}: {receipts}"));
    assert_eq!(skip["outcome"], "skipped", "{skip}");
    assert_says(skip["why"].as_str().unwrap(), "in use");
    drop(holder);
}

/// A good document renamed over a torn one in the instant between R1's check and its move: the
/// move takes the good document. It is verified where it landed, a second manifest line records
/// what was moved, and it is put back at once; the action is skipped as changed since planned.
/// The run still matches its manifest (purge accepts it) and the next run plans R1 no more.
#[test]
fn c54_a_good_document_renamed_in_during_a_set_aside_is_put_back() {
    let c = Case::new();
    write(&c.s, "torn.json", b"{\"torn\":");
    let good = pretty(&stores::document("torn"));
    let s = c.s.to_string_lossy().into_owned();
    let (code, stdout, stderr) = paused(
        &["--repair-sessions", "--json", "--sessions-dir", &s],
        "move torn.json",
        || {
            std::fs::write(c.s.join("incoming.json"), &good).unwrap();
            std::fs::rename(c.s.join("incoming.json"), c.s.join("torn.json")).unwrap();
        },
    );
    assert_eq!(code, Some(0), "{stderr}");
    let report: Value = serde_json::from_str(&stdout).unwrap();
    let o = outcome_in(&report, "torn.json");
    assert_eq!(o["outcome"], "skipped", "{o}");
    assert_says(
        o["why"].as_str().unwrap(),
        "replaced between the check and the move",
    );
    assert_eq!(
        std::fs::read(c.s.join("torn.json")).unwrap(),
        good,
        "put back"
    );
    let run = report["run"].as_str().unwrap();
    let manifest =
        std::fs::read_to_string(c.s.join(format!(".set-aside/{run}/MANIFEST.jsonl"))).unwrap();
    let lines: Vec<Value> = manifest
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 2, "{manifest}");
    assert_eq!(lines[1]["sha256"], common::sha256_hex(&good), "{manifest}");
    assert_says(
        lines[1]["reason"].as_str().unwrap(),
        "records what was moved",
    );
    let purge = purge_dry_run(&c.s);
    assert_eq!(
        purge["skipped"],
        json!([]),
        "the run matches its manifest: {purge:#}"
    );
    let again = lib(&c.s, true).unwrap();
    assert!(
        again.plan.actions.iter().all(|a| a.path != "torn.json"),
        "{:?}",
        again.plan.actions
    );
}

/// The same swap, and then a file created at `torn.json` before the good document could go
/// back: it stays in the run, under a manifest line that records what was moved, so a restore
/// of that item is verified against the right digest (and refused only because the path is
/// occupied).
#[test]
fn c55_a_replaced_item_that_cannot_go_back_is_recorded_as_moved() {
    let c = Case::new();
    write(&c.s, "torn.json", b"{\"torn\":");
    let good = pretty(&stores::document("torn"));
    let s = c.s.to_string_lossy().into_owned();
    let (code, stdout, stderr) = paused_steps(
        &["--repair-sessions", "--json", "--sessions-dir", &s],
        &["move torn.json", "move .set-aside/"],
        vec![
            Box::new(|| {
                std::fs::write(c.s.join("incoming.json"), &good).unwrap();
                std::fs::rename(c.s.join("incoming.json"), c.s.join("torn.json")).unwrap();
            }),
            Box::new(|| std::fs::write(c.s.join("torn.json"), b"theirs\n").unwrap()),
        ],
    );
    assert_eq!(code, Some(0), "{stderr}");
    let report: Value = serde_json::from_str(&stdout).unwrap();
    let o = outcome_in(&report, "torn.json");
    assert_eq!(o["outcome"], "applied", "{o}");
    let run = report["run"].as_str().unwrap().to_owned();
    assert_eq!(std::fs::read(c.s.join("torn.json")).unwrap(), b"theirs\n");
    assert_eq!(
        std::fs::read(c.s.join(format!(".set-aside/{run}/torn.json"))).unwrap(),
        good
    );
    let receipts = std::fs::read_to_string(c.s.join(".reconcile/receipts.jsonl")).unwrap();
    assert_says(&receipts, "could not be put back");
    std::fs::remove_file(c.s.join("torn.json")).unwrap();
    let restore = Command::new(env!("CARGO_BIN_EXE_doctor"))
        .args(["--restore", &run, "--json", "--sessions-dir", &s])
        .env("DOCTOR_NOW", NOW)
        .output()
        .unwrap();
    assert_eq!(restore.status.code(), Some(0));
    assert_eq!(
        std::fs::read(c.s.join("torn.json")).unwrap(),
        good,
        "restored"
    );
}

/// As user 65534: a session's own document that exists but cannot be read may bind its store.
/// The planner keeps the store (R2 skips it, saying why); and when the document appears
/// between planning and applying, the executor's re-check right before the move cannot read it
/// either and skips the move: in doubt, the store stays.
#[test]
fn c56_a_store_whose_document_cannot_be_read_is_kept() {
    let Some(c) = case_for_nobody("c56") else {
        return;
    };
    empty_store(&c.s, "e/runtime");
    give_to_nobody(&c.s);
    let as_nobody = |args: &[&str]| {
        let mut cmd = Command::new("setpriv");
        cmd.args(["--reuid=65534", "--regid=65534", "--clear-groups", "--"])
            .arg(env!("CARGO_BIN_EXE_doctor"))
            .args(args);
        if !args.contains(&"--apply-plan") {
            cmd.arg("--sessions-dir").arg(&c.s);
        }
        let out = within(cmd, Duration::from_secs(60));
        let v: Value =
            serde_json::from_str(&out.stdout).unwrap_or_else(|e| panic!("{e}: {}", bin_said(&out)));
        v
    };
    let plans = c.tmp.path().join("plans");
    std::fs::create_dir(&plans).unwrap();
    give_to_nobody(&plans);
    let plan_file = plans.join("plan.json");
    let planned = as_nobody(&[
        "--repair-sessions",
        "--dry-run",
        "--json",
        "--plan-out",
        plan_file.to_str().unwrap(),
    ]);
    assert_eq!(
        planned["plan"]["actions"][0]["path"], "e/runtime",
        "{planned:#}"
    );
    // The app saves e.json, binding the store, readable by its owner only.
    let doc = c.s.join("e.json");
    std::fs::write(&doc, pretty(&bound_document(&c.s, "e", "e/runtime"))).unwrap();
    chmod(&doc, 0o600);
    let applied = as_nobody(&["--apply-plan", plan_file.to_str().unwrap(), "--json"]);
    let o = outcome_in(&applied, "e/runtime");
    assert_eq!(o["outcome"], "skipped", "{o}");
    assert_says(o["why"].as_str().unwrap(), "cannot read e.json");
    assert!(c.s.join("e/runtime/state.json").exists(), "the store stays");
    let again = as_nobody(&["--repair-sessions", "--dry-run", "--json"]);
    assert_eq!(again["plan"]["actions"], json!([]), "{again:#}");
    let skipped = again["skipped"].as_array().unwrap();
    assert!(
        skipped
            .iter()
            .any(|k| k["path"] == "e/runtime" && k["why"].as_str().unwrap().contains("may bind")),
        "{again:#}"
    );
}

// ---------------------------------------------------------------------------------------------
// 57-63. The doctor's own files as fifos and hard links, odd entries where a document or a lease
// goes, a tampered manifest, and a late failure of `--plan-out`.
// ---------------------------------------------------------------------------------------------

/// Runs the doctor binary with `args` (nothing else), killed after `timeout`.
fn doctor_args(args: &[&OsStr], timeout: Duration) -> BinOut {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_doctor"));
    cmd.args(args);
    within(cmd, timeout)
}

/// A library repair in another thread; the test fails (leaving the thread behind) when it has
/// not returned after `timeout`.
fn lib_within(s: &Path, dry_run: bool, timeout: Duration) -> Result<RepairReport, String> {
    let s = s.to_path_buf();
    let worker = std::thread::spawn(move || lib(&s, dry_run));
    let start = Instant::now();
    while !worker.is_finished() {
        assert!(
            start.elapsed() < timeout,
            "the library repair (dry_run: {dry_run}) did not return within {timeout:?}"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    worker.join().unwrap()
}

/// Everything a binary run said.
fn bin_said(out: &BinOut) -> String {
    format!("stdout:\n{}\nstderr:\n{}", out.stdout, out.stderr)
}

/// A fifo at `S/.reconcile/receipts.jsonl`, and a torn document to set aside. Appending a
/// receipt to a fifo opened without `O_NONBLOCK` blocks until a reader comes: the real run hung
/// after its first action, holding `.reconcile.lock`. Now: the binary ends within the timeout
/// with exit 1, naming the path; nothing is lost and the fifo stays; a library repair returns
/// too and releases the lock (a separate process can take it); a restore, which reads the
/// receipts, never hangs either; once the fifo is gone a run finishes cleanly and converges.
#[test]
fn c57_a_fifo_at_the_receipts_log_never_hangs_a_real_run() {
    let c = Case::new();
    // An earlier run, so a restore has a run to read.
    write(&c.s, "old.json", b"{\"old\":");
    let earlier = lib(&c.s, false).unwrap();
    let receipts_log = c.s.join(".reconcile/receipts.jsonl");
    std::fs::remove_file(&receipts_log).unwrap();
    mkfifo(&receipts_log);
    write(&c.s, "torn.json", b"{\"torn\":");
    let before = tree(&c.s);
    let outside = c.outside_state();

    let out = doctor_bin(&c.s, false, false, None, Duration::from_secs(20));
    assert!(
        !out.timed_out,
        "a fifo at receipts.jsonl hung the real run: {}",
        bin_said(&out)
    );
    let said = bin_said(&out);
    assert_says(&said, &receipts_log.display().to_string());
    // Checked last, so every other expectation is seen first.
    let first = (out.code, said.clone());
    let after = tree(&c.s);
    assert_nothing_lost(&before, &after);
    assert_keep_untouched(&before, &after);
    assert_eq!(
        after.get(Path::new(".reconcile/receipts.jsonl")),
        Some(&Node::Other),
        "the fifo is left where it is"
    );
    assert_eq!(c.outside_state(), outside, "something outside S changed");

    // The library (a host embedding the doctor) returns, and leaves no lock held.
    write(&c.s, "torn2.json", b"{\"torn2\":");
    let before = tree(&c.s);
    let in_process = lib_within(&c.s, false, Duration::from_secs(20));
    let said = match &in_process {
        Ok(report) => report.summary.errors.join("\n"),
        Err(e) => e.clone(),
    };
    assert_says(&said, &receipts_log.display().to_string());
    assert_nothing_lost(&before, &tree(&c.s));
    drop(common::Holder::spawn(&[c.s.join(".reconcile.lock")]));
    let second = doctor_bin(&c.s, false, false, None, Duration::from_secs(20));
    assert!(!second.timed_out, "{}", bin_said(&second));
    assert_ne!(
        second.code,
        Some(75),
        "the lock was left held: {}",
        bin_said(&second)
    );

    // A restore reads the receipts (the documents a run's recoveries wrote): never a hang.
    let s = c.s.as_os_str();
    let restore = doctor_args(
        &[
            "--restore".as_ref(),
            earlier.run.as_ref(),
            "--dry-run".as_ref(),
            "--json".as_ref(),
            "--sessions-dir".as_ref(),
            s,
        ],
        Duration::from_secs(20),
    );
    assert!(
        !restore.timed_out,
        "a fifo at receipts.jsonl hung --restore: {}",
        bin_said(&restore)
    );
    if restore.code != Some(0) {
        assert_says(&bin_said(&restore), &receipts_log.display().to_string());
    }

    // Without the fifo, a run finishes cleanly and the store converges.
    std::fs::remove_file(&receipts_log).unwrap();
    let clean = doctor_bin(&c.s, false, false, None, Duration::from_secs(20));
    assert_eq!(clean.code, Some(0), "{}", bin_said(&clean));
    let again = lib(&c.s, true).unwrap();
    assert!(again.plan.actions.is_empty(), "{:?}", again.plan.actions);
    // An action applied without its receipt is a failed run (invariants.md: every action is
    // receipted), never a success.
    assert_eq!(
        first.0,
        Some(1),
        "receipts that cannot be written fail the run: {}",
        first.1
    );
}

/// A bound store `b/runtime` (its session `b` is healthy) that also holds `th-gone`, a thread
/// bound to the missing session `gone`: R4 unbinds it (and R3, the store being bound, does
/// nothing more). Its `session-unbind-receipts.jsonl` is a fifo.
fn unbind_receipts_fifo() -> (Case, PathBuf, Vec<u8>) {
    let c = Case::new();
    write(
        &c.s,
        "b.json",
        pretty(&bound_document(&c.s, "b", "b/runtime")),
    );
    store_with_thread(&c.s, "b/runtime", "th-b", Some("b"), 1);
    let gone = thread("th-gone", Some("gone"));
    write(&c.s, "b/runtime/threads/th-gone.json", pretty(&gone));
    stores::write_turn(&c.s, "b/runtime", "th-gone", 1);
    let fifo = c.s.join("b/runtime/session-unbind-receipts.jsonl");
    mkfifo(&fifo);
    (c, fifo, pretty(&gone))
}

const GONE_RECORD: &str = "b/runtime/threads/th-gone.json";

/// A fifo at a store's `session-unbind-receipts.jsonl`: R4's receipt in the store hung the
/// real run forever, holding `.reconcile.lock` and the store's owner lock. Now the binary ends
/// within the timeout; the unbind fails naming the fifo (exit 1), centrally receipted; nothing
/// is lost; the thread record is either unchanged or rewritten with its previous version kept
/// (the test prints which); the library returns too and both locks can be taken afterwards.
#[test]
fn c58_a_fifo_at_a_stores_unbind_receipts_never_hangs_a_real_run() {
    let (c, fifo, original) = unbind_receipts_fifo();
    let dry = lib(&c.s, true).unwrap();
    let paths: Vec<&str> = dry.plan.actions.iter().map(|a| a.path.as_str()).collect();
    assert_eq!(paths, [GONE_RECORD], "{}", said(&Ok(dry.clone())));
    let before = tree(&c.s);
    let outside = c.outside_state();

    let out = doctor_bin(&c.s, false, false, None, Duration::from_secs(20));
    assert!(
        !out.timed_out,
        "a fifo at session-unbind-receipts.jsonl hung the real run: {}",
        bin_said(&out)
    );
    let report: Value = serde_json::from_str(&out.stdout)
        .unwrap_or_else(|e| panic!("stdout is the report ({e}): {}", bin_said(&out)));
    let o = outcome_in(&report, GONE_RECORD);
    assert_eq!(o["outcome"], "failed", "{o}");
    assert_says(
        o["why"].as_str().unwrap_or_default(),
        &fifo.display().to_string(),
    );
    assert_eq!(out.code, Some(1), "{}", bin_said(&out));
    let central: Vec<Value> = receipts(&c.s)
        .into_iter()
        .filter(|r| r["path"] == GONE_RECORD)
        .collect();
    assert_eq!(central.len(), 1, "{central:?}");
    assert_eq!(central[0]["outcome"], "failed", "{central:?}");

    let after = tree(&c.s);
    assert_nothing_lost(&before, &after);
    assert_keep_untouched(&before, &after);
    assert_eq!(
        after.get(Path::new("b/runtime/session-unbind-receipts.jsonl")),
        Some(&Node::Other),
        "the fifo is left where it is"
    );
    assert_eq!(c.outside_state(), outside, "something outside S changed");
    // Not half-done: unchanged, or rewritten without its binding and its previous bytes kept.
    let now = std::fs::read(c.s.join(GONE_RECORD)).unwrap();
    if now == original {
        println!("c58: the thread record was left unchanged");
    } else {
        let run = report["run"].as_str().unwrap();
        let rewritten: Value = serde_json::from_slice(&now).unwrap();
        assert!(
            rewritten.get("session_id").is_none()
                && rewritten.get("saved_session_checkpoint").is_none(),
            "the record changed, but not into its unbound form: {rewritten:#}"
        );
        assert_eq!(
            std::fs::read(c.s.join(format!(".set-aside/{run}/{GONE_RECORD}"))).ok(),
            Some(original.clone()),
            "the record was rewritten without its previous version kept"
        );
        let manifest =
            std::fs::read_to_string(c.s.join(format!(".set-aside/{run}/MANIFEST.jsonl"))).unwrap();
        assert!(
            manifest.lines().any(|l| {
                let l: Value = serde_json::from_str(l).unwrap();
                l["original"] == GONE_RECORD && l["kind"] == "previous_version"
            }),
            "{manifest}"
        );
        println!("c58: the thread record was rewritten, its previous version kept in {run}");
    }
    let second = doctor_bin(&c.s, false, false, None, Duration::from_secs(20));
    assert!(!second.timed_out, "{}", bin_said(&second));
    assert_ne!(
        second.code,
        Some(75),
        "the lock was left held: {}",
        bin_said(&second)
    );

    // In process: the library returns and releases `.reconcile.lock` and the owner lock.
    let (c, fifo, _) = unbind_receipts_fifo();
    let report = lib_within(&c.s, false, Duration::from_secs(20)).unwrap();
    let o = outcome_of(&report, GONE_RECORD);
    assert_eq!(o.outcome, OutcomeKind::Failed, "{o:?}");
    assert_says(
        o.why.as_deref().unwrap_or_default(),
        &fifo.display().to_string(),
    );
    drop(common::Holder::spawn(&[
        c.s.join(".reconcile.lock"),
        c.s.join("b/runtime/runtime-process.owner.lock"),
    ]));
}

/// `S/.reconcile/receipts.jsonl` is a hard link to a file outside S: appending to it appended
/// the receipts to that file. A real run that applies actions (the rich store) leaves the file
/// outside byte for byte as it was (and its mtime), names the path, and exits 1; nothing in S
/// is lost.
#[test]
fn c59_a_receipts_log_hard_linked_outside_s_is_never_appended_to() {
    let c = Case::new();
    rich_store(&c.s);
    let theirs = b"{\"theirs\":\"a log of someone else\"}\n";
    write(&c.outside, "receipts.jsonl", theirs);
    let receipts_log = c.s.join(".reconcile/receipts.jsonl");
    std::fs::create_dir_all(receipts_log.parent().unwrap()).unwrap();
    std::fs::hard_link(c.outside.join("receipts.jsonl"), &receipts_log).unwrap();
    let before = tree(&c.s);
    let outside = c.outside_state();

    let out = doctor_bin(&c.s, false, false, None, Duration::from_secs(60));
    assert!(!out.timed_out, "{}", bin_said(&out));
    assert_eq!(
        std::fs::read(c.outside.join("receipts.jsonl")).unwrap(),
        theirs,
        "receipts were appended to the file outside S: {}",
        bin_said(&out)
    );
    assert_eq!(c.outside_state(), outside, "something outside S changed");
    assert_says(&bin_said(&out), &receipts_log.display().to_string());
    let after = tree(&c.s);
    assert_nothing_lost(&before, &after);
    assert_keep_untouched(&before, &after);
    // Checked last, so every other expectation is seen first.
    assert_eq!(
        out.code,
        Some(1),
        "receipts that cannot be written fail the run: {}",
        bin_said(&out)
    );
}

/// A fifo at `S/th-o.json`, where `th-o` is an orphan thread R3 would recover: the id is taken
/// (store-format.md: whatever stands at the name). The dry run planned a recovery the executor
/// then skipped as "document id taken", and every later run planned it again. Now the dry and
/// the real run both plan nothing for it and list it under `skipped` as "document id taken"
/// (same plan, same skips), the fifo is untouched, and a second real run plans the same and
/// applies nothing. Through the binary, with a timeout.
#[test]
fn c60_a_fifo_at_an_orphans_document_name_is_a_taken_id_at_planning_and_execution() {
    let c = Case::new();
    store_with_thread(&c.s, "o/runtime", "th-o", None, 1);
    let fifo = c.s.join("th-o.json");
    mkfifo(&fifo);
    let ino = std::fs::symlink_metadata(&fifo).unwrap().ino();
    let record = "o/runtime/threads/th-o.json";
    let before = tree(&c.s);
    let outside = c.outside_state();

    let run = |dry_run: bool| -> Value {
        let out = doctor_bin(&c.s, dry_run, false, None, Duration::from_secs(20));
        assert!(!out.timed_out, "dry_run {dry_run}: {}", bin_said(&out));
        assert_eq!(out.code, Some(0), "dry_run {dry_run}: {}", bin_said(&out));
        serde_json::from_str(&out.stdout).unwrap()
    };
    let dry = run(true);
    let real = run(false);
    for (which, r) in [("dry", &dry), ("real", &real)] {
        let actions = r["plan"]["actions"].as_array().unwrap();
        assert!(
            actions.iter().all(|a| a["path"] != record),
            "{which} run plans a recovery into the fifo: {r:#}"
        );
        let skipped = r["skipped"].as_array().unwrap();
        assert!(
            skipped.iter().any(|k| k["path"] == record
                && k["rule"] == "R3"
                && k["why"] == "document id taken"),
            "{which} run does not skip {record} as document id taken: {r:#}"
        );
    }
    assert_eq!(dry["plan"]["actions"], real["plan"]["actions"], "{real:#}");
    assert_eq!(dry["skipped"], real["skipped"], "{real:#}");
    let outcomes = real["outcomes"].as_array().unwrap();
    assert!(
        outcomes.iter().all(|o| o["outcome"] == "applied"),
        "{real:#}"
    );

    let meta = std::fs::symlink_metadata(&fifo).unwrap();
    assert!(
        std::os::unix::fs::FileTypeExt::is_fifo(&meta.file_type()) && meta.ino() == ino,
        "the fifo was replaced"
    );
    let after = tree(&c.s);
    assert_nothing_lost(&before, &after);
    assert_keep_untouched(&before, &after);
    assert_eq!(
        after.get(Path::new(record)),
        before.get(Path::new(record)),
        "the thread stays unbound"
    );
    assert_eq!(c.outside_state(), outside, "something outside S changed");

    let second = run(false);
    assert_eq!(
        second["plan"]["actions"], real["plan"]["actions"],
        "{second:#}"
    );
    assert_eq!(second["skipped"], real["skipped"], "{second:#}");
    let outcomes = second["outcomes"].as_array().unwrap();
    assert!(
        outcomes.iter().all(|o| o["outcome"] != "applied"
            && !o["why"]
                .as_str()
                .unwrap_or_default()
                .contains("changed since planned")),
        "the second run: {second:#}"
    );
    assert!(outcomes.is_empty(), "nothing is left to apply: {second:#}");
}

/// A Unix socket bound at `.late-usage/torn.live`, next to the torn document `torn.json`: a
/// lease that is not a regular file is no lease (decisions.md), at planning and at execution.
/// Planning treated it as no lease and the executor skipped the set-aside as "cannot check the
/// live lease". Now the dry run plans the set-aside and the real run applies it.
#[test]
fn c61_a_socket_in_place_of_a_live_lease_is_no_lease_at_planning_and_execution() {
    let c = Case::new();
    write(&c.s, "torn.json", b"{\"torn\":");
    let lease = c.s.join(".late-usage/torn.live");
    std::fs::create_dir_all(lease.parent().unwrap()).unwrap();
    let _listener = std::os::unix::net::UnixListener::bind(&lease).unwrap();
    let o = exercise(&c);
    let paths: Vec<&str> = o
        .dry()
        .plan
        .actions
        .iter()
        .map(|a| a.path.as_str())
        .collect();
    assert_eq!(paths, ["torn.json"], "{}", o.said());
    let real = o.real();
    let out = outcome_of(real, "torn.json");
    assert_eq!(out.outcome, OutcomeKind::Applied, "{out:?}\n{}", o.said());
    assert!(
        !o.said().contains("cannot check the live lease"),
        "{}",
        o.said()
    );
    assert!(!o.after.contains_key(Path::new("torn.json")));
    assert_eq!(
        o.after
            .get(&PathBuf::from(format!(".set-aside/{}/torn.json", real.run))),
        Some(&file(b"{\"torn\":"))
    );
    let meta = std::fs::symlink_metadata(&lease).unwrap();
    assert!(
        std::os::unix::fs::FileTypeExt::is_socket(&meta.file_type()),
        "the socket is left where it is"
    );
    let again = lib(&c.s, true).unwrap();
    assert!(again.plan.actions.is_empty(), "{:?}", again.plan.actions);
}

/// A real set-aside run whose MANIFEST.jsonl has been given lines whose `moved_to` is not under
/// `.set-aside/<that run>/` but names a live item: `keep.json` (as is, and as
/// `.set-aside/<run>/../../keep.json`), `keep/runtime` (with its true digests, so only the
/// place gives them away), and an app line naming `<S>/keep/runtime`. `--restore RUN` (dry and
/// real) refuses each line, naming its `moved_to`, and moves nothing of `keep`: no action reads
/// from a live item, no "original" of those lines is created.
#[test]
fn c62_a_manifest_line_moved_to_a_live_item_is_refused_by_restore() {
    let c = Case::new();
    write(&c.s, "torn.json", b"{\"torn\":");
    let run = lib(&c.s, false).unwrap().run;
    let keep_doc = std::fs::read(c.s.join("keep.json")).unwrap();
    let keep_store = fsroot::Root::open(&c.s)
        .unwrap()
        .tree_digest(Path::new("keep/runtime"))
        .unwrap();
    let abs = c.s.display().to_string();
    let doc_line = |original: &str, moved_to: &str| {
        json!({
            "run": run, "rule": "R1", "original": original, "moved_to": moved_to,
            "reason": "tampered", "kind": "document",
            "sha256": common::sha256_hex(&keep_doc), "bytes": keep_doc.len(), "at": NOW
        })
    };
    let traversal = format!(".set-aside/{run}/../../keep.json");
    let lines = [
        doc_line("stolen.json", "keep.json"),
        doc_line("stolen2.json", &traversal),
        json!({
            "run": run, "rule": "R2", "original": "stolen/runtime", "moved_to": "keep/runtime",
            "reason": "tampered", "kind": "runtime_store",
            "tree_blake3": keep_store.tree_blake3, "bytes": keep_store.bytes, "at": NOW
        }),
        json!({
            "original": format!("{abs}/stolen3/runtime"),
            "moved_to": format!("{abs}/keep/runtime"),
            "reason": "tampered", "at": NOW, "detail": {"kind": "runtime_store"}
        }),
    ];
    let manifest = c.s.join(format!(".set-aside/{run}/MANIFEST.jsonl"));
    let mut text = std::fs::read_to_string(&manifest).unwrap();
    for l in &lines {
        text.push_str(&serde_json::to_string(l).unwrap());
        text.push('\n');
    }
    std::fs::write(&manifest, text).unwrap();
    let keep_before: Tree = tree(&c.s)
        .into_iter()
        .filter(|(p, _)| p.starts_with("keep") || p == Path::new("keep.json"))
        .collect();
    let live = ["keep.json", "keep/runtime"];
    let stolen = ["stolen.json", "stolen2.json", "stolen", "stolen3"];

    for dry_run in [true, false] {
        let mut args: Vec<&OsStr> = vec!["--restore".as_ref(), run.as_ref(), "--json".as_ref()];
        if dry_run {
            args.push("--dry-run".as_ref());
        }
        args.extend(["--sessions-dir".as_ref(), c.s.as_os_str()]);
        let out = doctor_args(&args, Duration::from_secs(30));
        assert!(!out.timed_out, "{}", bin_said(&out));
        let report: Value = serde_json::from_str(&out.stdout)
            .unwrap_or_else(|e| panic!("dry_run {dry_run} ({e}): {}", bin_said(&out)));
        let skipped = report["skipped"].as_array().unwrap();
        for l in &lines {
            let moved_to = l["moved_to"].as_str().unwrap();
            assert!(
                skipped
                    .iter()
                    .any(|k| k["why"].as_str().unwrap_or_default().contains(moved_to)),
                "dry_run {dry_run}: no refusal names {moved_to}: {report:#}"
            );
        }
        for a in report["plan"]["actions"].as_array().unwrap() {
            for field in ["path", "from"] {
                let p = a[field].as_str().unwrap_or_default();
                assert!(
                    !live.iter().chain(&stolen).any(|x| p == *x
                        || p.starts_with(&format!("{x}/"))
                        || p == format!("{abs}/{x}")),
                    "dry_run {dry_run}: an action on {p}: {report:#}"
                );
            }
        }
        let keep_now: Tree = tree(&c.s)
            .into_iter()
            .filter(|(p, _)| p.starts_with("keep") || p == Path::new("keep.json"))
            .collect();
        assert_eq!(
            keep_now, keep_before,
            "dry_run {dry_run}: the live session moved"
        );
        for x in stolen {
            assert!(
                std::fs::symlink_metadata(c.s.join(x)).is_err(),
                "dry_run {dry_run}: {x} was created"
            );
        }
    }
}

/// Real runs on the rich store with `--plan-out` naming a path that cannot be written: inside
/// a directory that does not exist, inside a regular file, and a directory holding a file. The
/// actions are applied whatever happens then, so the report of what was applied is still
/// printed (JSON, and the human form), the failure is in `summary.errors` naming the path, and
/// the run exits 1; whatever stands at the path is left as it was.
#[test]
fn c63_an_unwritable_plan_out_keeps_the_report_of_what_was_applied() {
    let tmp = tempfile::tempdir().unwrap();
    write(tmp.path(), "a-file", b"theirs\n");
    write(tmp.path(), "a-dir/keep", b"theirs\n");
    let targets = [
        tmp.path().join("no-such-dir/plan.json"),
        tmp.path().join("a-file/plan.json"),
        tmp.path().join("a-dir"),
    ];
    // Errors that do not name the --plan-out path, reported together at the end.
    let mut unnamed = Vec::new();
    for target in &targets {
        for json in [true, false] {
            let c = Case::new();
            rich_store(&c.s);
            let mut args: Vec<&OsStr> = vec![
                "--repair-sessions".as_ref(),
                "--plan-out".as_ref(),
                target.as_os_str(),
                "--sessions-dir".as_ref(),
                c.s.as_os_str(),
            ];
            if json {
                args.push("--json".as_ref());
            }
            let out = doctor_args(&args, Duration::from_secs(60));
            let said = bin_said(&out);
            assert!(!out.timed_out, "{said}");
            assert_eq!(out.code, Some(1), "{}: {said}", target.display());
            let path = target.display().to_string();
            if json {
                let report: Value = serde_json::from_str(&out.stdout).unwrap_or_else(|e| {
                    panic!("stdout is the report ({e}), --plan-out {path}: {said}")
                });
                let outcomes = report["outcomes"].as_array().unwrap();
                assert_eq!(outcomes.len(), RICH_ACTIONS, "{said}");
                assert!(outcomes.iter().all(|o| o["outcome"] == "applied"), "{said}");
                let errors = report["summary"]["errors"].as_array().unwrap();
                assert!(!errors.is_empty(), "{said}");
                if !errors
                    .iter()
                    .any(|e| e.as_str().unwrap_or_default().contains(&path))
                {
                    unnamed.push(format!("--json: no error names {path}: {errors:?}"));
                }
            } else {
                assert_says(&out.stdout, "Sessions repaired");
                if !out.stdout.contains(&path) {
                    unnamed.push(format!("human: the output does not name {path}: {said}"));
                }
            }
            assert!(!c.s.join("torn.json").exists(), "the actions were applied");
            assert_eq!(receipts(&c.s).len(), RICH_ACTIONS, "every action receipted");
        }
    }
    assert_eq!(
        std::fs::read(tmp.path().join("a-file")).unwrap(),
        b"theirs\n"
    );
    assert_eq!(
        tree(&tmp.path().join("a-dir")),
        Tree::from([(PathBuf::from("keep"), file(b"theirs\n"))])
    );
    assert!(!tmp.path().join("no-such-dir").exists());
    assert!(
        unnamed.is_empty(),
        "the failure must name the --plan-out path as given:\n{}",
        unnamed.join("\n")
    );
}

// ---------------------------------------------------------------------------------------------
// 64-70. A set-aside whose directory sync fails right after the move, a symlink swapped in for
// a torn document, a directory at a temporary file's name, a restore through a symlinked
// session directory, an unreadable checkpoint, a file at a previous version's path, and a lost
// receipt of `--apply-plan`.
// ---------------------------------------------------------------------------------------------

/// A case with the torn document `torn.json` (R1 sets it aside).
fn torn_case() -> Case {
    let c = Case::new();
    write(&c.s, "torn.json", b"{\"torn\":");
    c
}

/// `--purge-set-aside --older-than 0s --dry-run --json` in 2099: every run is old enough, so
/// only the runs that do not match their manifest are left, under `skipped`.
fn purge_dry_run(s: &Path) -> Value {
    let out = Command::new(env!("CARGO_BIN_EXE_doctor"))
        .args([
            "--purge-set-aside",
            "--older-than",
            "0s",
            "--dry-run",
            "--json",
            "--sessions-dir",
        ])
        .arg(s)
        .env("DOCTOR_NOW", "2099-01-01T00:00:00Z")
        .env_remove("DOCTOR_PAUSE_BEFORE")
        .env_remove("DOCTOR_FAULT_AT")
        .stdin(Stdio::null())
        .output()
        .unwrap();
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "the purge dry run printed no report ({e}): {}\n{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )
    })
}

/// The receipt of the action on `path` in `S/.reconcile/receipts.jsonl`.
fn receipt_of(s: &Path, path: &str) -> Value {
    let all = receipts(s);
    all.iter()
        .find(|r| r["path"] == path)
        .cloned()
        .unwrap_or_else(|| panic!("no receipt for {path}: {all:#?}"))
}

/// A good document renamed over `torn.json` between R1's check and its move, and the
/// directory sync right after the move fails (an injected EIO). The rename happened: the
/// set-aside judges by what is on disk, finds it moved something other than what it checked,
/// and puts the good document back, its receipt naming `put_back_from`. Before, the failed
/// sync failed the action with the good document left in the run. The run is taken back, not
/// partial: a purge skips nothing, even after the app saved `torn.json` again.
#[test]
fn c64_a_set_aside_whose_sync_fails_after_the_move_still_puts_back_a_swapped_document() {
    let trace = common::traced_mutations(&torn_case().s, NOW);
    let at = trace
        .iter()
        .position(|(_, d)| d.starts_with("move torn.json"))
        .unwrap_or_else(|| panic!("no move of torn.json: {trace:#?}"));
    let (n, next) = trace
        .get(at + 1)
        .unwrap_or_else(|| panic!("nothing after the move: {trace:#?}"));
    assert!(
        next.starts_with("sync directory .set-aside/"),
        "the mutation after the move: {next}: {trace:#?}"
    );

    let c = torn_case();
    let good = pretty(&stores::document("torn"));
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_doctor"));
    cmd.args(["--repair-sessions", "--json", "--sessions-dir"])
        .arg(&c.s)
        .env("DOCTOR_NOW", NOW)
        .env("DOCTOR_FAULT_AT", format!("{n}:fail"));
    let run = common::run_paused(
        cmd,
        vec![(
            "move torn.json",
            Box::new(|| {
                std::fs::write(c.s.join("incoming.json"), &good).unwrap();
                std::fs::rename(c.s.join("incoming.json"), c.s.join("torn.json")).unwrap();
            }),
        )],
    );
    let said = format!("stdout:\n{}\nstderr:\n{}", run.stdout, run.stderr);
    assert_says(&run.stderr, &format!("failed mutation {n} (sync directory"));
    assert!(run.code.is_some(), "{said}");
    assert_eq!(
        std::fs::read(c.s.join("torn.json"))
            .ok()
            .map(|b| String::from_utf8_lossy(&b).into_owned()),
        Some(String::from_utf8_lossy(&good).into_owned()),
        "the good document is back at torn.json: {said}"
    );
    let receipt = receipt_of(&c.s, "torn.json");
    assert!(
        receipt["put_back_from"].is_string(),
        "the receipt names what was put back: {receipt:#}"
    );
    let purge = purge_dry_run(&c.s);
    assert_eq!(
        purge["skipped"],
        json!([]),
        "the run counts the item as taken back: {purge:#}"
    );
    // The app saves torn.json again: the run still does not claim it.
    write(&c.s, "torn.json", [&good[..], b"\n"].concat());
    let purge = purge_dry_run(&c.s);
    assert_eq!(
        purge["skipped"],
        json!([]),
        "torn.json changed at its path; the run is still not partial: {purge:#}"
    );
}

/// A symlink (to `keep.json`) renamed over `torn.json` between R1's check and its move: the
/// moved symlink cannot be digested, so it is not what was checked; it goes back to
/// `torn.json`, still a symlink, and the action is skipped saying so. Before, it was left in
/// the run as if it were the torn document.
#[test]
fn c65_a_symlink_renamed_in_during_a_set_aside_is_put_back() {
    let c = torn_case();
    let s = c.s.to_string_lossy().into_owned();
    let keep = std::fs::read(c.s.join("keep.json")).unwrap();
    let (code, stdout, stderr) = paused(
        &["--repair-sessions", "--json", "--sessions-dir", &s],
        "move torn.json",
        || {
            std::os::unix::fs::symlink("keep.json", c.s.join("incoming.json")).unwrap();
            std::fs::rename(c.s.join("incoming.json"), c.s.join("torn.json")).unwrap();
        },
    );
    assert_eq!(code, Some(0), "{stderr}");
    let report: Value = serde_json::from_str(&stdout).unwrap();
    let torn = std::fs::symlink_metadata(c.s.join("torn.json"));
    assert!(
        torn.as_ref().is_ok_and(|m| m.file_type().is_symlink()),
        "the symlink is back at torn.json: {torn:?}: {report:#}"
    );
    assert_eq!(
        std::fs::read_link(c.s.join("torn.json")).unwrap(),
        Path::new("keep.json")
    );
    assert_eq!(std::fs::read(c.s.join("keep.json")).unwrap(), keep);
    let o = outcome_in(&report, "torn.json");
    assert_eq!(o["outcome"], "skipped", "{o}");
    assert_says(o["why"].as_str().unwrap_or_default(), "put back");
    let purge = purge_dry_run(&c.s);
    assert_eq!(purge["skipped"], json!([]), "{purge:#}");
}

/// Two temporary files of interrupted doctor writes (as in c53). While the real run removes
/// the first, the second is replaced by a directory holding a file: the removal takes regular
/// files only, so the directory and its file survive, and its receipt is not "applied".
#[test]
fn c66_a_directory_swapped_in_at_a_temporary_files_name_is_never_deleted() {
    let (c, temp_a, temp_b) = two_interrupted_writes();
    let s = c.s.to_string_lossy().into_owned();
    let (code, stdout, stderr) = paused(
        &["--repair-sessions", "--json", "--sessions-dir", &s],
        &format!("delete {temp_a}"),
        || {
            std::fs::remove_file(c.s.join(temp_b)).unwrap();
            std::fs::create_dir(c.s.join(temp_b)).unwrap();
            std::fs::write(c.s.join(temp_b).join("precious.txt"), b"precious\n").unwrap();
        },
    );
    let said = format!("stdout:\n{stdout}\nstderr:\n{stderr}");
    assert!(code.is_some(), "{said}");
    assert!(
        c.s.join(temp_b).is_dir(),
        "the directory at {temp_b} was deleted: {said}"
    );
    assert_eq!(
        std::fs::read(c.s.join(temp_b).join("precious.txt")).ok(),
        Some(b"precious\n".to_vec()),
        "{said}"
    );
    assert!(!c.s.join(temp_a).exists(), "{said}");
    let receipt = receipt_of(&c.s, temp_b);
    assert_ne!(receipt["outcome"], "applied", "{receipt:#}");
}

/// After a real repair set the empty store `e/runtime` aside, `S/e` is replaced by a symlink
/// to another directory inside S. `--restore RUN` (dry and real) cannot look at `e/runtime`
/// without following the link: it skips that item, saying why, instead of failing the whole
/// restore; both exit 0, plan the same, and nothing lands in the link's target.
#[test]
fn c67_a_restore_through_a_symlinked_session_directory_skips_the_item() {
    let c = Case::new();
    empty_store(&c.s, "e/runtime");
    let repaired = lib(&c.s, false).unwrap();
    assert_eq!(
        outcome_of(&repaired, "e/runtime").outcome,
        OutcomeKind::Applied
    );
    let run = repaired.run.clone();
    let aside = c.s.join(format!(".set-aside/{run}/e/runtime"));
    assert!(aside.is_dir());
    if std::fs::symlink_metadata(c.s.join("e")).is_ok() {
        std::fs::remove_dir_all(c.s.join("e")).unwrap();
    }
    write(&c.s, "elsewhere/note.txt", b"theirs\n");
    symlink("elsewhere", &c.s.join("e"));
    let aside_before = tree(&aside);

    let mut plans = Vec::new();
    for dry_run in [true, false] {
        let mut args: Vec<&OsStr> = vec!["--restore".as_ref(), run.as_ref(), "--json".as_ref()];
        if dry_run {
            args.push("--dry-run".as_ref());
        }
        args.extend(["--sessions-dir".as_ref(), c.s.as_os_str()]);
        let out = doctor_args(&args, Duration::from_secs(30));
        let said = bin_said(&out);
        assert!(!out.timed_out, "{said}");
        assert_eq!(out.code, Some(0), "dry_run {dry_run}: {said}");
        let report: Value = serde_json::from_str(&out.stdout)
            .unwrap_or_else(|e| panic!("dry_run {dry_run} ({e}): {said}"));
        let skipped = report["skipped"].as_array().unwrap();
        assert!(
            skipped.iter().any(|k| k["path"] == "e/runtime"
                && k["why"]
                    .as_str()
                    .is_some_and(|w| w.contains("symlink") || w.contains("kept"))),
            "dry_run {dry_run}: e/runtime is not skipped naming the symlink: {report:#}"
        );
        assert!(
            report["plan"]["actions"]
                .as_array()
                .unwrap()
                .iter()
                .all(|a| a["path"] != "e/runtime"),
            "dry_run {dry_run}: {report:#}"
        );
        plans.push(report["plan"]["actions"].clone());
    }
    assert_eq!(plans[0], plans[1], "the dry run's plan is the real run's");
    assert_eq!(
        tree(&c.s.join("elsewhere")),
        Tree::from([(PathBuf::from("note.txt"), file(b"theirs\n"))]),
        "nothing was restored through the symlink"
    );
    assert_eq!(
        std::fs::read_link(c.s.join("e")).ok(),
        Some(PathBuf::from("elsewhere"))
    );
    assert_eq!(tree(&aside), aside_before, "the store stays in the run");
}

/// As user 65534: an empty store `f/runtime` whose checkpoint `S/checkpoints/f.json` exists but
/// cannot be read (mode 000, owned by root). The checkpoint may bind the store, so R2 keeps it
/// and says why, in the dry run and the real run alike, and a second dry run is the same.
#[test]
fn c68_a_store_whose_checkpoint_cannot_be_read_is_kept() {
    let Some(c) = case_for_nobody("c68") else {
        return;
    };
    empty_store(&c.s, "f/runtime");
    write(
        &c.s,
        "checkpoints/f.json",
        pretty(&bound_document(&c.s, "f", "f/runtime")),
    );
    give_to_nobody(&c.s);
    let checkpoint = c.s.join("checkpoints/f.json");
    std::os::unix::fs::lchown(&checkpoint, Some(0), Some(0)).unwrap();
    chmod(&checkpoint, 0o000);

    let run = |dry_run: bool| -> Value {
        let out = doctor_bin(&c.s, dry_run, true, None, Duration::from_secs(60));
        let said = bin_said(&out);
        assert!(!out.timed_out, "dry_run {dry_run}: {said}");
        serde_json::from_str(&out.stdout)
            .unwrap_or_else(|e| panic!("dry_run {dry_run} ({e}): {said}"))
    };
    let kept = |which: &str, r: &Value| {
        assert!(
            r["plan"]["actions"]
                .as_array()
                .unwrap()
                .iter()
                .all(|a| a["path"] != "f/runtime"),
            "{which} run plans an action on f/runtime: {r:#}"
        );
        assert!(
            r["skipped"]
                .as_array()
                .unwrap()
                .iter()
                .any(|k| k["path"] == "f/runtime"
                    && k["why"]
                        .as_str()
                        .is_some_and(|w| w.contains("cannot be read"))),
            "{which} run does not skip f/runtime as cannot be read: {r:#}"
        );
    };
    let dry = run(true);
    kept("dry", &dry);
    let real = run(false);
    kept("real", &real);
    assert!(c.s.join("f/runtime/state.json").exists(), "the store stays");
    assert_eq!(dry["plan"]["actions"], real["plan"]["actions"], "{real:#}");
    assert_eq!(dry["skipped"], real["skipped"], "{real:#}");
    let again = run(true);
    assert_eq!(
        again["plan"]["actions"], dry["plan"]["actions"],
        "{again:#}"
    );
    assert_eq!(again["skipped"], dry["skipped"], "{again:#}");
}

/// R4 unbinds `th-gone` (bound to the missing session `gone`) in the bound store `b/runtime`,
/// keeping its previous version at `.set-aside/<run>/b/runtime/threads/th-gone.json` first.
/// Something else is written at that path right before the copy is made: the copy never
/// replaces it (before, a rename over it did), and without its previous version kept the
/// record is not rewritten.
#[test]
fn c69_a_previous_version_copy_never_replaces_what_is_at_its_path() {
    let c = Case::new();
    write(
        &c.s,
        "b.json",
        pretty(&bound_document(&c.s, "b", "b/runtime")),
    );
    store_with_thread(&c.s, "b/runtime", "th-gone", Some("gone"), 1);
    let record_rel = "b/runtime/threads/th-gone.json";
    let record = std::fs::read(c.s.join(record_rel)).unwrap();
    let dry = lib(&c.s, true).unwrap();
    assert!(
        dry.plan
            .actions
            .iter()
            .any(|a| a.path == record_rel && a.rule == "R4"),
        "{:?}",
        dry.plan.actions
    );
    let s = c.s.to_string_lossy().into_owned();
    let mut previous = None;
    // The temporary file of the copy is created next to the previous version's path (the
    // rename that follows is the step that must never replace).
    let (code, stdout, stderr) = paused(
        &["--repair-sessions", "--json", "--sessions-dir", &s],
        "create .set-aside/",
        || {
            let runs: Vec<PathBuf> = std::fs::read_dir(c.s.join(".set-aside"))
                .unwrap()
                .map(|e| e.unwrap().path())
                .filter(|p| p.is_dir())
                .collect();
            assert_eq!(runs.len(), 1, "{runs:?}");
            let at = runs[0].join(record_rel);
            std::fs::create_dir_all(at.parent().unwrap()).unwrap();
            std::fs::write(&at, b"OTHER").unwrap();
            previous = Some(at);
        },
    );
    let said = format!("stdout:\n{stdout}\nstderr:\n{stderr}");
    let previous = previous.unwrap();
    assert!(
        stderr.contains(&format!(
            "{}/.th-gone.json.doctor-tmp",
            previous
                .strip_prefix(&c.s)
                .unwrap()
                .parent()
                .unwrap()
                .display()
        )),
        "paused before the copy's temporary file: {said}"
    );
    assert!(code.is_some(), "{said}");
    assert_eq!(
        std::fs::read(&previous)
            .ok()
            .map(|b| String::from_utf8_lossy(&b).into_owned()),
        Some("OTHER".to_owned()),
        "what was at the previous version's path was replaced: {said}"
    );
    assert!(
        std::fs::read(c.s.join(record_rel)).unwrap() == record,
        "the record was rewritten without its previous version kept: {said}"
    );
    let report: Value = serde_json::from_str(&stdout).unwrap_or_else(|e| panic!("{e}: {said}"));
    let o = outcome_in(&report, record_rel);
    assert!(
        o["outcome"] == "failed" || o["outcome"] == "skipped",
        "{o}: {said}"
    );
}

/// `--apply-plan` of a plan a dry run wrote, with a fifo at `S/.reconcile/receipts.jsonl`: the
/// receipts cannot be written, so the run fails (exit 1) with its report printed and the error
/// naming the log. Before, `--apply-plan` exited 0 with every receipt lost.
#[test]
fn c70_apply_plan_with_a_fifo_at_the_receipts_log_fails_the_run() {
    let c = torn_case();
    let plan = c.tmp.path().join("plan.json");
    let dry = doctor_args(
        &[
            "--repair-sessions".as_ref(),
            "--dry-run".as_ref(),
            "--json".as_ref(),
            "--plan-out".as_ref(),
            plan.as_os_str(),
            "--sessions-dir".as_ref(),
            c.s.as_os_str(),
        ],
        Duration::from_secs(30),
    );
    assert_eq!(dry.code, Some(0), "{}", bin_said(&dry));
    let log = c.s.join(".reconcile/receipts.jsonl");
    if std::fs::symlink_metadata(&log).is_ok() {
        std::fs::remove_file(&log).unwrap();
    }
    mkfifo(&log);
    let out = doctor_args(
        &["--apply-plan".as_ref(), plan.as_os_str(), "--json".as_ref()],
        Duration::from_secs(20),
    );
    let said = bin_said(&out);
    assert!(
        !out.timed_out,
        "a fifo at receipts.jsonl hung --apply-plan: {said}"
    );
    let report: Value = serde_json::from_str(&out.stdout)
        .unwrap_or_else(|e| panic!("the report is printed ({e}): {said}"));
    assert_eq!(
        outcome_in(&report, "torn.json")["outcome"],
        "applied",
        "{said}"
    );
    assert_says(&said, "receipts.jsonl");
    assert_eq!(
        tree(&c.s).get(Path::new(".reconcile/receipts.jsonl")),
        Some(&Node::Other),
        "the fifo is left where it is"
    );
    // Checked last, so every other expectation is seen first.
    assert_eq!(out.code, Some(1), "a lost receipt fails the run: {said}");
}
