//! Malformed input, one table row per case: documents that are not JSON, torn, mis-encoded,
//! mistyped, absurdly large or deep, and entries named like documents that are not regular
//! files (a directory, symlinks, a socket, a non-UTF-8 name). Each row is repaired dry and for
//! real through the library and must not panic; the report must name the path and why; nothing
//! may be lost; and nothing outside S may change, not even what a symlink in S points at.

use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use crate::common::{assert_nothing_lost, mtimes, tree, Kept, Node};
use doctor::RepairReport;
use plan::OutcomeKind;
use serde_json::{json, Value};
use store::{Clock, Timestamp};
use test_support::session::{pretty, text_message, Document};

const NOW: &str = "2026-11-29T12:00:00Z";

/// A readable document with id `id` in the shape the app writes (codewhale-format.md §1: every
/// required metadata field, content blocks), bound to no store, as a JSON value to break.
fn document(id: &str) -> Value {
    Document {
        total_tokens: 1234,
        ..Document::new(
            id,
            "Fix the parser",
            vec![
                text_message("user", "The parser rejects trailing commas."),
                text_message("assistant", "Fixed, with a test for [1, 2,]."),
            ],
        )
    }
    .into_value()
}

/// `document("x")` changed by `f`.
fn document_with(f: impl FnOnce(&mut Value)) -> Vec<u8> {
    let mut v = document("x");
    f(&mut v);
    pretty(&v)
}

/// `document("x")` with its `"schema_version": 1` replaced by raw JSON number text.
fn document_with_version(number: &str) -> Vec<u8> {
    let text = String::from_utf8(pretty(&document("x"))).unwrap();
    let replaced = text.replacen(
        "\"schema_version\": 1",
        &format!("\"schema_version\": {number}"),
        1,
    );
    assert_ne!(text, replaced);
    replaced.into_bytes()
}

/// `haystack` with its only occurrence of `needle` replaced.
fn replace_bytes(haystack: &[u8], needle: &[u8], with: &[u8]) -> Vec<u8> {
    let at = haystack
        .windows(needle.len())
        .position(|w| w == needle)
        .expect("needle occurs");
    [&haystack[..at], with, &haystack[at + needle.len()..]].concat()
}

/// What a row puts at its path in S.
enum Make {
    /// A regular file with these bytes.
    File(Vec<u8>),
    /// A directory holding one file.
    Dir,
    /// A symlink to a regular file outside S.
    SymlinkOutside,
    /// A symlink to itself.
    SymlinkLoop,
    /// A Unix socket.
    Socket,
}

/// What the report must say about the row's path.
enum Expect {
    /// Planned as an R1 `set_aside` with an `unreadable document:` reason, then set aside.
    Unreadable,
    /// Listed under `ignored` (the human line carries this why) and left untouched.
    Ignored(&'static str),
}

struct Row {
    name: &'static str,
    /// The entry's file name in S (bytes: some are not UTF-8).
    file: &'static [u8],
    make: Make,
    expect: Expect,
}

fn rows() -> Vec<Row> {
    use Expect::*;
    use Make::*;
    let valid = pretty(&document("x"));
    let row = |name, make| Row {
        name,
        file: b"x.json",
        make,
        expect: Unreadable,
    };
    vec![
        row("not json", File(b"this is not json\n".to_vec())),
        row(
            "truncated in the middle",
            File(valid[..valid.len() / 2].to_vec()),
        ),
        row(
            "truncated after an intact metadata prefix",
            File({
                let text = String::from_utf8(valid.clone()).unwrap();
                let cut = text.find("\"content\"").unwrap() + 14;
                text.as_bytes()[..cut].to_vec()
            }),
        ),
        row(
            "UTF-8 byte order mark",
            File([&b"\xef\xbb\xbf"[..], &valid].concat()),
        ),
        row(
            "non-UTF-8 bytes in a string",
            File(replace_bytes(
                &valid,
                b"Fix the parser",
                b"Caf\xe9 cr\xe8me",
            )),
        ),
        row(
            "UTF-16 with a byte order mark",
            File(
                [0xff, 0xfe]
                    .into_iter()
                    .chain(
                        String::from_utf8(valid.clone())
                            .unwrap()
                            .encode_utf16()
                            .flat_map(u16::to_le_bytes),
                    )
                    .collect(),
            ),
        ),
        row(
            "wrong type: title is a number",
            File(document_with(|d| d["metadata"]["title"] = json!(5))),
        ),
        row(
            "wrong type: messages is a string",
            File(document_with(|d| d["messages"] = json!("hello"))),
        ),
        row(
            "wrong type: schema_version is a string",
            File(document_with(|d| d["schema_version"] = json!("1"))),
        ),
        row(
            "created_at is not RFC 3339",
            File(document_with(|d| {
                d["metadata"]["created_at"] = json!("2026-09-01 10:00")
            })),
        ),
        row(
            "missing field: metadata.created_at",
            File(document_with(|d| {
                d["metadata"].as_object_mut().unwrap().remove("created_at");
            })),
        ),
        row(
            "missing field: messages",
            File(document_with(|d| {
                d.as_object_mut().unwrap().remove("messages");
            })),
        ),
        row(
            "missing field: content of a message",
            File(document_with(|d| {
                d["messages"][1].as_object_mut().unwrap().remove("content");
            })),
        ),
        row(
            "content given as a string",
            File(document_with(|d| {
                d["messages"][0]["content"] = json!("The parser rejects trailing commas.")
            })),
        ),
        row(
            "a content block without a type",
            File(document_with(|d| {
                d["messages"][0]["content"][0]
                    .as_object_mut()
                    .unwrap()
                    .remove("type");
            })),
        ),
        row(
            "wrong type: a text block's text is a number",
            File(document_with(|d| {
                d["messages"][1]["content"][0]["text"] = json!(7)
            })),
        ),
        row(
            "missing field: metadata.model",
            File(document_with(|d| {
                d["metadata"].as_object_mut().unwrap().remove("model");
            })),
        ),
        row(
            "missing field: metadata.workspace",
            File(document_with(|d| {
                d["metadata"].as_object_mut().unwrap().remove("workspace");
            })),
        ),
        row(
            "missing field: metadata.runtime_store.execution_scope",
            File(document_with(|d| {
                d["metadata"]["runtime_store"] = json!({ "data_dir": "/nowhere/runtime" })
            })),
        ),
        row(
            "a journal whose leaf_id names no entry",
            File(document_with(|d| {
                d["journal"] = json!({
                    "entries": [{
                        "id": "e1",
                        "kind": "user",
                        "text": "The parser rejects trailing commas.",
                        "created_at": "2026-09-01T10:00:00Z"
                    }],
                    "leaf_id": "e9",
                    "schema_version": 1
                })
            })),
        ),
        row(
            "metadata.id differs from the file name",
            File(pretty(&document("someone-else"))),
        ),
        row(
            "huge number: schema_version 1e400",
            File(document_with_version("1e400")),
        ),
        row(
            "huge number: a 400-digit schema_version",
            File(document_with_version(&format!("1{}", "0".repeat(399)))),
        ),
        row("negative schema_version", File(document_with_version("-1"))),
        row("100000 nested arrays, unclosed", File(vec![b'['; 100_000])),
        row(
            "100000 nested arrays, closed",
            File([vec![b'['; 100_000], vec![b']'; 100_000]].concat()),
        ),
        row(
            "messages nested 10000 deep inside a valid document",
            File({
                let text = String::from_utf8(pretty(&document("x"))).unwrap();
                let deep = format!("{}{}", "[".repeat(10_000), "]".repeat(10_000));
                let start = text.find("\"messages\": [").unwrap() + "\"messages\": [".len();
                format!("{}{deep},{}", &text[..start], &text[start..]).into_bytes()
            }),
        ),
        row("empty file", File(Vec::new())),
        row("whitespace only", File(b" \n\t\r\n".to_vec())),
        row("4096 NUL bytes", File(vec![0; 4096])),
        row("JSON null", File(b"null".to_vec())),
        row("a JSON array", File(b"[]".to_vec())),
        row(
            "a second document appended",
            File([valid.clone(), valid.clone()].concat()),
        ),
        row(
            "8 MiB, truncated at the end",
            File(
                String::from_utf8(document_with(|d| {
                    d["messages"][0]["content"][0]["text"] = json!("x".repeat(8 << 20))
                }))
                .unwrap()
                .trim_end()
                .trim_end_matches('}')
                .as_bytes()
                .to_vec(),
            ),
        ),
        Row {
            name: "a directory named x.json",
            file: b"x.json",
            make: Dir,
            expect: Ignored("directory name is not a valid session id"),
        },
        Row {
            name: "a symlink named x.json to a file outside S",
            file: b"x.json",
            make: SymlinkOutside,
            expect: Ignored("symlink (never followed)"),
        },
        Row {
            name: "a symlink loop named x.json",
            file: b"x.json",
            make: SymlinkLoop,
            expect: Ignored("symlink (never followed)"),
        },
        Row {
            name: "a socket named x.json",
            file: b"x.json",
            make: Socket,
            expect: Ignored("not a regular file or directory"),
        },
        Row {
            name: "a file name that is not UTF-8",
            file: b"\xff\xfe.json",
            make: File(valid.clone()),
            expect: Ignored("name is not UTF-8"),
        },
        Row {
            name: "a file name that is not an id",
            file: b"x y.json",
            make: File(b"not json".to_vec()),
            expect: Ignored("file name is not a valid session id"),
        },
    ]
}

/// A store with one readable document next to the row's entry, and a directory outside it.
struct Setup {
    _tmp: tempfile::TempDir,
    s: PathBuf,
    outside: PathBuf,
}

fn set_up(row: &Row) -> Setup {
    let tmp = tempfile::tempdir().unwrap();
    let s = tmp.path().join("S");
    let outside = tmp.path().join("outside");
    std::fs::create_dir(&s).unwrap();
    std::fs::create_dir(&outside).unwrap();
    let target = outside.join("target.json");
    std::fs::write(&target, pretty(&document("x"))).unwrap();
    let past = SystemTime::UNIX_EPOCH + Duration::from_secs(1_700_000_000);
    std::fs::File::options()
        .write(true)
        .open(&target)
        .and_then(|f| f.set_modified(past))
        .unwrap();
    std::fs::write(s.join("keep.json"), pretty(&document("keep"))).unwrap();

    let at = s.join(OsStr::from_bytes(row.file));
    match &row.make {
        Make::File(bytes) => std::fs::write(&at, bytes).unwrap(),
        Make::Dir => {
            std::fs::create_dir(&at).unwrap();
            std::fs::write(at.join("inside.json"), pretty(&document("inside"))).unwrap();
        }
        Make::SymlinkOutside => std::os::unix::fs::symlink(&target, &at).unwrap(),
        Make::SymlinkLoop => std::os::unix::fs::symlink(&at, &at).unwrap(),
        Make::Socket => drop(std::os::unix::net::UnixListener::bind(&at).unwrap()),
    }
    Setup {
        _tmp: tmp,
        s,
        outside,
    }
}

fn repair(s: &Path, dry_run: bool) -> RepairReport {
    let mut opts = crate::common::repair_options(s);
    opts.dry_run = dry_run;
    opts.clock = Clock::Fixed(Timestamp::parse(NOW).unwrap());
    match catch_unwind(AssertUnwindSafe(|| doctor::repair_sessions(&opts))) {
        Ok(Ok(report)) => report,
        Ok(Err(e)) => panic!("repair (dry_run: {dry_run}) failed: {e}"),
        Err(_) => panic!("repair (dry_run: {dry_run}) panicked"),
    }
}

fn check_row(row: &Row) {
    let Setup { _tmp, s, outside } = set_up(row);
    let path = String::from_utf8_lossy(row.file).into_owned();
    let before = tree(&s);
    let outside_before = (tree(&outside), mtimes(&outside));

    let dry = repair(&s, true);
    assert_eq!(tree(&s), before, "the dry run changed S");
    let json = serde_json::to_value(&dry).unwrap();
    let human = dry.render_human();
    match row.expect {
        Expect::Unreadable => {
            let actions = json["plan"]["actions"].as_array().unwrap();
            let action = actions
                .iter()
                .find(|a| a["path"] == path.as_str())
                .unwrap_or_else(|| panic!("no action for {path}: {json:#}"));
            assert_eq!(action["rule"], "R1");
            assert_eq!(action["action"], "set_aside");
            let reason = action["reason"].as_str().unwrap();
            let why = reason
                .strip_prefix("unreadable document: ")
                .unwrap_or_else(|| panic!("reason {reason:?}"));
            assert!(!why.trim().is_empty(), "empty reason");
            assert!(
                human.contains(&format!(
                    "would set aside {path}  (R1 unreadable-document: {reason})"
                )),
                "{human}"
            );
            assert_eq!(actions.len(), 1, "only {path} is planned: {json:#}");
        }
        Expect::Ignored(why) => {
            let ignored = json["ignored"].as_array().unwrap();
            assert!(
                ignored.iter().any(|p| p == path.as_str()),
                "{path} is not listed as ignored: {json:#}"
            );
            assert!(
                human.contains(&format!("ignored {path}  ({why})")),
                "{human}"
            );
            assert!(dry.plan.actions.is_empty(), "{json:#}");
        }
    }

    let real = repair(&s, false);
    assert_eq!(real.plan.actions, dry.plan.actions, "dry run != real run");
    for o in &real.outcomes {
        assert_eq!(o.outcome, OutcomeKind::Applied, "{o:?}");
    }
    let after = tree(&s);
    assert_nothing_lost(&before, &after, Kept::in_run(&real.run).empty_dirs_may_go());
    let entry = PathBuf::from(OsStr::from_bytes(row.file));
    let mirrored = Path::new(".set-aside").join(&real.run).join(&entry);
    match row.expect {
        Expect::Unreadable => {
            assert!(!after.contains_key(&entry), "{path} is still in place");
            assert_eq!(
                after.get(&mirrored),
                before.get(&entry),
                "{path} not set aside"
            );
        }
        Expect::Ignored(_) => {
            assert_eq!(after.get(&entry), before.get(&entry), "{path} was touched");
            assert!(!after.contains_key(&mirrored), "{path} was set aside");
        }
    }
    assert!(
        matches!(after.get(Path::new("keep.json")), Some(Node::File(_)))
            && after.get(Path::new("keep.json")) == before.get(Path::new("keep.json")),
        "the readable document was touched"
    );
    assert_eq!(
        (tree(&outside), mtimes(&outside)),
        outside_before,
        "something outside S changed"
    );

    let second = repair(&s, true);
    assert!(second.plan.actions.is_empty(), "{:?}", second.plan.actions);
}

#[test]
fn every_bad_input_is_reported_and_nothing_is_lost() {
    let rows = rows();
    assert!(rows.len() >= 12);
    let mut failed = Vec::new();
    for row in &rows {
        if let Err(e) = catch_unwind(AssertUnwindSafe(|| check_row(row))) {
            let msg = e
                .downcast_ref::<String>()
                .cloned()
                .or_else(|| e.downcast_ref::<&str>().map(|s| s.to_string()))
                .unwrap_or_default();
            failed.push(format!("{}: {msg}", row.name));
        }
    }
    assert!(failed.is_empty(), "rows failed:\n{}", failed.join("\n"));
}

/// store-format.md: a document whose `schema_version` is greater than 1 is of a newer schema,
/// counted in `documents_newer_schema`. These versions are integers in JSON Schema's sense but
/// not `u64`s in serde_json's, and are judged readable documents of version 1 instead.
#[test]
fn float_and_oversized_schema_versions_are_newer() {
    for version in [
        "2.0",
        "18446744073709551616",
        "100000000000000000000000000000",
    ] {
        let tmp = tempfile::tempdir().unwrap();
        std::fs::write(tmp.path().join("x.json"), document_with_version(version)).unwrap();
        let report = repair(tmp.path(), true);
        assert!(
            report.plan.actions.is_empty(),
            "{version}: {:?}",
            report.plan
        );
        assert_eq!(
            report.summary.documents_newer_schema, 1,
            "schema_version {version} is newer than 1"
        );
    }
}

/// cli.md, Version 2: a closed stdout (`doctor … | head -1`) ends the run quietly: no panic, no
/// backtrace, the run's own exit code.
#[test]
fn a_closed_stdout_ends_the_run_quietly() {
    let demo = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/demo");
    for json in [false, true] {
        let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_doctor"));
        cmd.args(["--repair-sessions", "--dry-run", "--sessions-dir"])
            .arg(&demo)
            .env("RUST_BACKTRACE", "1")
            .env("XDG_CACHE_HOME", crate::common::test_cache_home())
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped());
        if json {
            cmd.arg("--json");
        }
        let mut child = cmd.spawn().unwrap();
        // The reader goes away before the report is written.
        drop(child.stdout.take());
        let out = child.wait_with_output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(0), "json: {json}: {stderr}");
        assert!(
            !stderr.contains("panicked") && !stderr.contains("Broken pipe"),
            "json: {json}: {stderr}"
        );
    }
}

/// Logs never kill a run: with `-v`, `-vv` or `-vvv` and stderr a pipe whose reader was gone
/// before the run began, a log that cannot be written is dropped and the run ends with its own
/// exit code (not 101, a panic), and a real run still applies its actions. The trace of the
/// fault hooks (`DOCTOR_FAULT_TRACE=1`, a line per mutation) is dropped the same way.
#[test]
fn a_closed_stderr_drops_the_logs_and_the_run_goes_on() {
    for verbose in ["-v", "-vv", "-vvv"] {
        let (_tmp, s) = crate::common::demo_with_old_artifacts();
        // The read end is closed before the child starts: every write to stderr fails (EPIPE).
        let (reader, writer) = std::io::pipe().unwrap();
        drop(reader);
        let mut cmd = crate::common::Doctor::new()
            .args([verbose, "sessions", "repair", "--json", "--sessions-dir"])
            .arg(&s)
            .now(NOW)
            .env("RUST_BACKTRACE", "1")
            .env("DOCTOR_FAULT_TRACE", "1")
            .command();
        let out = cmd
            .stdout(std::process::Stdio::piped())
            .stderr(writer)
            .output()
            .unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert_eq!(out.status.code(), Some(0), "{verbose}: {stdout}");
        let report: Value = serde_json::from_str(&stdout).expect("the report is whole");
        let outcomes = report["outcomes"].as_array().unwrap();
        assert!(!outcomes.is_empty(), "{verbose}: {stdout}");
        assert!(
            outcomes.iter().all(|o| o["outcome"] == "applied"),
            "{verbose}: the run applied its actions: {stdout}"
        );
        assert!(!s.join("zeta").exists(), "{verbose}: zeta was set aside");
    }
}
