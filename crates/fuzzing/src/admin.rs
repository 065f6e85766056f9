//! Target `restore_purge`: a set-aside run's manifest lines and the receipt lines of S, with the
//! files the run holds → restore and purge planning (`engine::admin`).
//!
//! Input: NUL-framed parts ([`crate::frame`]). The first is `.set-aside/<RUN>/MANIFEST.jsonl`,
//! the second `.reconcile/receipts.jsonl`; each further part is a file of S, `<path>\n<bytes>`,
//! or a symbolic link, `@link <path>\n<target>`, made only when `<path>` stays inside S; a
//! `<path>` ending in `.d` with no bytes is a directory. In the two record files, `@S/` stands
//! for S's absolute path (the app writes absolute paths, and S is a new directory per input).

use std::path::Path;

use engine::admin::{plan_purge, plan_restore, AdminPlan};
use fsroot::Root;
use plan::{Action, ActionKind, ItemKind};
use store::Timestamp;

use crate::{inside_s, NUL};

/// The run the manifest belongs to.
pub const RUN: &str = "20260901T100000Z-abc123";
/// The instant purges are planned at: after the run.
const NOW: &str = "2099-01-01T00:00:00Z";
/// At most this many files are made per input, to keep it fast.
const MAX_FILES: usize = 24;

/// Plans a restore of the run (whole, and of the first item a manifest line names) and a purge
/// (verified and forced) over a temporary S holding the input, and asserts of every plan made:
///
/// * every action's path, and the `from` of every restore, stays inside S (relative, no `.`,
///   `..` or empty component), and so does every skipped item's path;
/// * a restore puts back only from inside this run; every purge deletes one run,
///   `.set-aside/<run id>`; neither plans a recovery, a binding or a reclaim;
/// * actions are numbered 1, 2, ... in order.
pub fn restore_purge(data: &[u8]) {
    let mut parts = data.split(|b| *b == NUL);
    let manifest = parts.next().unwrap_or_default();
    let receipts = parts.next().unwrap_or_default();
    let tmp = tempfile::tempdir().expect("a temporary directory");
    let s = tmp.path();
    let at_s = format!("{}/", s.display());
    crate::write(s, &store::ids::manifest_path(RUN), &expand(manifest, &at_s));
    crate::write(s, store::ids::RECEIPTS_PATH, &expand(receipts, &at_s));
    for part in parts.take(MAX_FILES) {
        make(s, part);
    }
    let root = Root::open(s).expect("open the temporary S");
    // The rule an app line is shown under, as the command line names it (`app_line_rule`).
    let attribute = |kind: Option<ItemKind>| {
        let kind = Some(kind.unwrap_or(ItemKind::Document));
        engine::planner_of(sessions::RULES, ActionKind::SetAside, kind)
            .unwrap_or("app")
            .to_owned()
    };
    let run_dir = format!("{}/{RUN}/", store::ids::SET_ASIDE_DIR);
    if let Ok(p) = plan_restore(&root, RUN, &[], &attribute) {
        check(&p, &run_dir);
    }
    let manifest = expand(manifest, &at_s);
    let first = serde_json::from_slice::<serde_json::Value>(
        manifest.split(|b| *b == b'\n').next().unwrap_or_default(),
    )
    .ok()
    .and_then(|v| v.get("original")?.as_str().map(str::to_owned));
    if let Some(item) = first {
        if let Ok(p) = plan_restore(&root, RUN, &[item], &attribute) {
            check(&p, &run_dir);
        }
    }
    let now = Timestamp::parse(NOW).expect("NOW parses");
    for force in [false, true] {
        if let Ok(p) = plan_purge(&root, 0, now, force) {
            check(&p, &run_dir);
            for a in &p.plan.actions {
                if a.action == Action::Purge {
                    let run = a.path.strip_prefix(".set-aside/").unwrap_or_default();
                    assert!(store::ids::RunId::is_valid(run), "a purge of {:?}", a.path);
                }
            }
        }
    }
}

/// `bytes` with every `@S/` replaced by `s` (S's path and a slash).
fn expand(bytes: &[u8], s: &str) -> Vec<u8> {
    let mut out = Vec::with_capacity(bytes.len());
    let mut rest = bytes;
    while let Some(i) = rest.windows(3).position(|w| w == b"@S/") {
        out.extend_from_slice(&rest[..i]);
        out.extend_from_slice(s.as_bytes());
        rest = &rest[i + 3..];
    }
    out.extend_from_slice(rest);
    out
}

/// Makes the file or link one part describes, when its path stays inside S and is not one of
/// the two record files the input already gave.
fn make(s: &Path, part: &[u8]) {
    let (head, body) = match part.iter().position(|b| *b == b'\n') {
        Some(i) => (&part[..i], &part[i + 1..]),
        None => (part, &[][..]),
    };
    let (link, rel) = match head.strip_prefix(b"@link ") {
        Some(rel) => (true, rel),
        None => (false, head),
    };
    let Ok(rel) = std::str::from_utf8(rel) else {
        return;
    };
    if !inside_s(rel) || rel.split('/').count() > 8 {
        return;
    }
    // Each parent is a real directory (made here when missing), never a link: nothing is made
    // through a link, so nothing is made outside S.
    let mut at = s.to_path_buf();
    let names: Vec<&str> = rel.split('/').collect();
    for name in &names[..names.len() - 1] {
        at.push(name);
        match at.symlink_metadata() {
            Ok(m) if m.is_dir() => {}
            Ok(_) => return,
            Err(_) => {
                if std::fs::create_dir(&at).is_err() {
                    return;
                }
            }
        }
    }
    let p = at.join(names[names.len() - 1]);
    if p.symlink_metadata().is_ok() {
        return;
    }
    if link {
        if !body.is_empty() && !body.contains(&NUL) {
            // Links only where the OS makes them as Unix does (never under Wine, whose
            // `remove_dir_all` follows one).
            #[cfg(unix)]
            let _ = test_support::unix::symlink(test_support::unix::os_string(body), &p);
        }
    } else if rel.ends_with(".d") && body.is_empty() {
        let _ = std::fs::create_dir(&p);
    } else {
        let _ = std::fs::write(&p, body);
    }
}

fn check(p: &AdminPlan, run_dir: &str) {
    for (i, a) in p.plan.actions.iter().enumerate() {
        assert_eq!(a.seq, i as u64 + 1, "actions out of order");
        assert!(inside_s(&a.path), "a planned path leaves S: {:?}", a.path);
        if let Action::Restore { from, .. } = &a.action {
            assert!(inside_s(from), "a restore from outside S: {from:?}");
            assert!(
                from.starts_with(run_dir),
                "a restore from outside the run: {from:?}"
            );
        }
        assert!(
            !matches!(
                a.action,
                Action::RecoverThread { .. }
                    | Action::BindThread { .. }
                    | Action::ReclaimDir { .. }
            ),
            "restore or purge planned {:?}",
            a.action
        );
    }
    for k in &p.skipped {
        assert!(inside_s(&k.path), "a skipped path leaves S: {:?}", k.path);
    }
}
