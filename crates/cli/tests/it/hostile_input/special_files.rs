//! c39-c41, c57, c58, c60, c61, c70. Fifos, devices and sockets where files are expected: store
//! files, leases, documents, thread records, turns and items, and the doctor's own receipt logs
//! (opening a fifo blocks until its other end comes; reading a device may never end). Run by
//! the binary with a timeout where a hang is what the case guards against.

use super::*;

fn mkfifo(at: &Path) {
    std::fs::create_dir_all(at.parent().unwrap()).unwrap();
    let ok = Command::new("mkfifo")
        .arg(at)
        .status()
        .is_ok_and(|s| s.success());
    assert!(ok, "mkfifo {}", at.display());
}

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
        let out = repair_bin(&c.s, false)
            .timeout(Duration::from_secs(10))
            .run();
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
    let out = repair_bin(&c.s, false)
        .timeout(Duration::from_secs(30))
        .run();
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
    let out = repair_bin(&c.s, true)
        .timeout(Duration::from_secs(30))
        .run();
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

    let out = repair_bin(&c.s, false)
        .timeout(Duration::from_secs(20))
        .run();
    assert!(
        !out.timed_out,
        "a fifo at receipts.jsonl hung the real run: {}",
        out.said()
    );
    let said = out.said();
    assert_says(&said, &receipts_log.display().to_string());
    // Checked last, so every other expectation is seen first.
    let first = (out.code, said.clone());
    let after = tree(&c.s);
    assert_nothing_lost(&before, &after, kept());
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
        Ok(report) => report
            .summary
            .errors
            .iter()
            .map(ToString::to_string)
            .collect::<Vec<_>>()
            .join("\n"),
        Err(e) => e.clone(),
    };
    assert_says(&said, &receipts_log.display().to_string());
    assert_nothing_lost(&before, &tree(&c.s), kept());
    drop(common::Holder::spawn(&[c.s.join(".reconcile.lock")]));
    let second = repair_bin(&c.s, false)
        .timeout(Duration::from_secs(20))
        .run();
    assert!(!second.timed_out, "{}", second.said());
    assert_ne!(
        second.code,
        Some(75),
        "the lock was left held: {}",
        second.said()
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
        restore.said()
    );
    if restore.code != Some(0) {
        assert_says(&restore.said(), &receipts_log.display().to_string());
    }

    // Without the fifo, a run finishes cleanly and the store converges.
    std::fs::remove_file(&receipts_log).unwrap();
    let clean = repair_bin(&c.s, false)
        .timeout(Duration::from_secs(20))
        .run();
    assert_eq!(clean.code, Some(0), "{}", clean.said());
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

    let out = repair_bin(&c.s, false)
        .timeout(Duration::from_secs(20))
        .run();
    assert!(
        !out.timed_out,
        "a fifo at session-unbind-receipts.jsonl hung the real run: {}",
        out.said()
    );
    let report: Value = serde_json::from_str(&out.stdout)
        .unwrap_or_else(|e| panic!("stdout is the report ({e}): {}", out.said()));
    let o = outcome_in(&report, GONE_RECORD);
    assert_eq!(o["outcome"], "failed", "{o}");
    assert_says(
        o["why"].as_str().unwrap_or_default(),
        &fifo.display().to_string(),
    );
    assert_eq!(out.code, Some(1), "{}", out.said());
    let central: Vec<Value> = receipts(&c.s)
        .into_iter()
        .filter(|r| r["path"] == GONE_RECORD)
        .collect();
    assert_eq!(central.len(), 1, "{central:?}");
    assert_eq!(central[0]["outcome"], "failed", "{central:?}");

    let after = tree(&c.s);
    assert_nothing_lost(&before, &after, kept());
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
    let second = repair_bin(&c.s, false)
        .timeout(Duration::from_secs(20))
        .run();
    assert!(!second.timed_out, "{}", second.said());
    assert_ne!(
        second.code,
        Some(75),
        "the lock was left held: {}",
        second.said()
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
        let out = repair_bin(&c.s, dry_run)
            .timeout(Duration::from_secs(20))
            .run();
        assert!(!out.timed_out, "dry_run {dry_run}: {}", out.said());
        assert_eq!(out.code, Some(0), "dry_run {dry_run}: {}", out.said());
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
    assert_nothing_lost(&before, &after, kept());
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
    assert_eq!(dry.code, Some(0), "{}", dry.said());
    let log = c.s.join(".reconcile/receipts.jsonl");
    if std::fs::symlink_metadata(&log).is_ok() {
        std::fs::remove_file(&log).unwrap();
    }
    mkfifo(&log);
    let out = doctor_args(
        &["--apply-plan".as_ref(), plan.as_os_str(), "--json".as_ref()],
        Duration::from_secs(20),
    );
    let said = out.said();
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
