//! c14-c16, c48, c56, c68, c81. Permissions: mode 000 as root; files and directories an
//! ordinary user (65534, the real binary through `setpriv`) may not read or write; private
//! records that stay private; a document or a checkpoint the doctor cannot read, which may bind
//! a store; a live lease it cannot check.

use super::*;

/// Whether the doctor binary can be run as user 65534: root, `setpriv`, and a binary that user
/// may reach (a build under a private home directory may not be).
fn setpriv_works() -> bool {
    static OK: OnceLock<bool> = OnceLock::new();
    *OK.get_or_init(|| {
        is_root() && Doctor::new().arg("--version").by_nobody().run().code == Some(0)
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

    let dry = repair_bin(&c.s, true)
        .by_nobody()
        .timeout(Duration::from_secs(60))
        .run();
    assert_eq!(dry.code, Some(0), "{}", dry.stderr);
    let real = repair_bin(&c.s, false)
        .by_nobody()
        .timeout(Duration::from_secs(60))
        .run();
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
    assert_nothing_lost(&before, &after, kept());
    assert_eq!(
        after.get(Path::new("secret.json")),
        before.get(Path::new("secret.json"))
    );
    assert_eq!(c.outside_state(), outside);
}

/// As user 65534, with a `.late-usage` it may not enter: a session's live lease cannot be
/// checked, so the real run skips the session's document, saying why, instead of taking the
/// lease for free (the dry run plans it and reports the directory it could not list).
#[test]
fn c81_a_lease_that_cannot_be_checked_keeps_its_session() {
    let Some(c) = case_for_nobody("c81") else {
        return;
    };
    write(&c.s, "torn.json", b"{\"torn\":");
    write(&c.s, ".late-usage/torn.live", b"");
    give_to_nobody(&c.s);
    let late = c.s.join(".late-usage");
    std::os::unix::fs::chown(&late, Some(0), Some(0)).unwrap();
    chmod(&late, 0o700);
    let before = tree(&c.s);

    let dry = repair_bin(&c.s, true)
        .by_nobody()
        .timeout(Duration::from_secs(60))
        .run();
    assert_eq!(dry.code, Some(0), "{}", dry.stderr);
    assert_says(&dry.stdout, ".late-usage: Permission denied");
    let real = repair_bin(&c.s, false)
        .by_nobody()
        .timeout(Duration::from_secs(60))
        .run();
    assert_eq!(real.code, Some(0), "{}\n{}", real.stdout, real.stderr);
    let report: Value = serde_json::from_str(&real.stdout).unwrap();
    let torn = outcome_in(&report, "torn.json");
    assert_eq!(torn["outcome"], "skipped", "{report:#}");
    assert!(
        torn["why"]
            .as_str()
            .unwrap()
            .starts_with("cannot check the live lease"),
        "{torn}"
    );
    assert_eq!(
        tree(&c.s).get(Path::new("torn.json")),
        before.get(Path::new("torn.json"))
    );
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

    let dry = repair_bin(&c.s, true)
        .by_nobody()
        .timeout(Duration::from_secs(60))
        .run();
    assert_eq!(dry.code, Some(0), "{}", dry.stderr);
    assert_says(&dry.stdout, "pdir: Permission denied");
    assert_says(&dry.stdout, "q/runtime/threads: Permission denied");
    let real = repair_bin(&c.s, false)
        .by_nobody()
        .timeout(Duration::from_secs(60))
        .run();
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
    assert_nothing_lost(&before, &after, kept());
    for p in before
        .keys()
        .filter(|p| p.starts_with("r") || p.starts_with("pdir") || p.starts_with("q"))
    {
        assert_eq!(after.get(p), before.get(p), "{}", p.display());
    }
    assert_eq!(c.outside_state(), outside);
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
    let kinds: Vec<_> = real.plan.actions.iter().map(|a| a.action.kind()).collect();
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
        let mut d = Doctor::new().args(args).by_nobody().now(NOW);
        if !args.contains(&"--apply-plan") {
            d = d.sessions_dir(&c.s);
        }
        let out = d.timeout(Duration::from_secs(60)).run();
        let v: Value =
            serde_json::from_str(&out.stdout).unwrap_or_else(|e| panic!("{e}: {}", out.said()));
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
        let out = repair_bin(&c.s, dry_run)
            .by_nobody()
            .timeout(Duration::from_secs(60))
            .run();
        let said = out.said();
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
