//! The test-support binaries do what the doctor's tests rely on: `hold-lock` holds its locks
//! until its input closes, and `host-sim open-store` owns a store by the library's protocol; and
//! the session builder's two renderings agree. (Also what makes `cargo test --workspace` build
//! the binaries.)

use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Command, Stdio};

use fsroot::{LockProbe, Root};

/// Starts `bin` with `args` and returns it with its first line of output.
fn start(bin: &str, args: &[&Path]) -> (std::process::Child, String) {
    let mut child = Command::new(bin)
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(child.stdout.as_mut().unwrap())
        .read_line(&mut line)
        .unwrap();
    (child, line)
}

#[test]
fn hold_lock_holds_until_its_input_closes() {
    let tmp = tempfile::tempdir().unwrap();
    let file = tmp.path().join("x.lock");
    let (mut child, line) = start(env!("CARGO_BIN_EXE_hold-lock"), &[&file]);
    assert_eq!(line.trim(), "held");
    let root = Root::open(tmp.path()).unwrap();
    assert_eq!(root.probe_lock("x.lock".as_ref()).unwrap(), LockProbe::Held);
    drop(child.stdin.take());
    assert!(child.wait().unwrap().success());
    assert_eq!(root.probe_lock("x.lock".as_ref()).unwrap(), LockProbe::Free);
}

#[test]
fn host_sim_owns_a_store_by_the_protocol() {
    let tmp = tempfile::tempdir().unwrap();
    let (mut child, line) = start(
        env!("CARGO_BIN_EXE_host-sim"),
        &[Path::new("open-store"), tmp.path(), Path::new("s1/runtime")],
    );
    assert!(line.starts_with("owned attempts="), "{line}");
    let root = Root::open(tmp.path()).unwrap();
    assert_eq!(
        root.probe_lock("s1/runtime/runtime-process.owner.lock".as_ref())
            .unwrap(),
        LockProbe::Held
    );
    child.stdin.take().unwrap().write_all(b"").unwrap();
    assert!(child.wait().unwrap().success());
}

#[test]
fn splitmix64_gives_its_reference_stream() {
    use test_support::SplitMix64;
    // The first outputs of splitmix64 seeded with 0 (Vigna's reference implementation).
    let mut r = SplitMix64(0);
    assert_eq!(r.next_u64(), 0xe220_a839_7b1d_cdaf);
    assert_eq!(r.next_u64(), 0x6e78_9e6a_a1b9_65f4);
    assert!(SplitMix64(7).below(10) < 10);
    assert_eq!(SplitMix64(7).below(0), 0);
    assert_eq!(SplitMix64(1).hex(40).len(), 40);
}

/// A record written straight to text is the compact JSON of the same record as a value.
#[test]
fn a_record_written_verbatim_is_its_compact_json() {
    use serde_json::json;
    use test_support::session::{
        binding, text_message, write_verbatim, Checkpoint, Document, Item, Thread, Turn,
    };
    let make = || Document {
        runtime_store: Some(binding("/s/x/runtime", "scope")),
        total_tokens: 7,
        journal: Some(json!({ "entries": [], "leaf_id": null })),
        system_prompt: false,
        ..Document::new(
            "x",
            "Session x",
            vec![
                text_message("user", "hello"),
                // What must be escaped is: a quote, a backslash, a control character.
                text_message("user", "a \"C:\\path\"\n\tend\u{1}"),
                json!({ "role": "assistant" }),
            ],
        )
    };
    let mut text = String::new();
    make().write_verbatim(&mut text);
    let value = make().into_value();
    assert_eq!(text, serde_json::to_string(&value).unwrap());
    let mut again = String::new();
    write_verbatim(&value, &mut again);
    assert_eq!(again, text);
    assert_eq!(value["metadata"]["message_count"], json!(3));
    assert_eq!(value["metadata"]["cost"]["session_cost_usd"], json!(0.0));

    let thread = || Thread {
        id: "th",
        created_at: "t0",
        updated_at: "t1",
        latest_turn_id: Some(json!(null)),
        title: "Thread th",
        session: Some(Checkpoint {
            session_id: json!("x"),
            covered_turn_id: json!("turn_1"),
            messages_sha256: "00",
            messages_len: 2,
        }),
    };
    let turn = || Turn {
        id: "turn_1",
        thread_id: "th",
        input_summary: "q",
        created_at: "t0",
        started_at: "t0",
        ended_at: "t1",
        input_tokens: 10,
        output_tokens: 20,
        item_ids: vec!["i1".into()],
    };
    let item = || Item {
        id: "i1",
        turn_id: "turn_1",
        kind: "user_message",
        summary: "q",
        detail: "q",
        started_at: "t0",
        ended_at: "t1",
    };
    let mut text = [String::new(), String::new(), String::new()];
    thread().write_verbatim(&mut text[0]);
    turn().write_verbatim(&mut text[1]);
    item().write_verbatim(&mut text[2]);
    let values = [
        thread().into_value(),
        turn().into_value(),
        item().into_value(),
    ];
    for (text, value) in text.iter().zip(&values) {
        assert_eq!(text, &serde_json::to_string(value).unwrap());
    }
}
