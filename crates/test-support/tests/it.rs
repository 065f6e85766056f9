//! The test-support binaries do what the doctor's tests rely on: `hold-lock` holds its locks
//! until its input closes, and `host-sim open-store` owns a store by the library's protocol.
//! (Also what makes `cargo test --workspace` build them.)

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
