//! Planning the two commands that act on set-aside runs: `--restore` (put items back, verified
//! against the manifest) and `--purge-set-aside` (delete whole runs older than a duration,
//! verified against their manifests). Both plan through a read-only root into an ordinary
//! [`Plan`], which the executor applies like any other, receipted.

use std::collections::BTreeSet;
use std::path::Path;

use fsroot::{EntryKind, Root};
use plan::{ActionKind, ItemKind, OutcomeKind, Plan, PlannedAction, Precondition, Skipped};
use store::ids::{RECONCILE_DIR, SET_ASIDE_DIR};
use store::Timestamp;

use crate::records::{ManifestLine, Receipt};
use crate::RunId;

/// Why a restore or purge could not be planned.
#[derive(Debug, thiserror::Error)]
pub enum AdminError {
    /// The run id is malformed or has no manifest.
    #[error("no set-aside run {run}: {why}")]
    NoSuchRun {
        /// The run id as given.
        run: String,
        /// What is missing.
        why: String,
    },
    /// `--item` names nothing in the run.
    #[error("set-aside run {run} has no item {item}")]
    NoSuchItem {
        /// The run.
        run: String,
        /// The item as given.
        item: String,
    },
    /// A filesystem error.
    #[error(transparent)]
    Fs(#[from] fsroot::Error),
}

/// A plan of restore or purge actions, with the items left alone and why.
#[derive(Debug, Default)]
pub struct AdminPlan {
    /// The actions.
    pub plan: Plan,
    /// Items not acted on.
    pub skipped: Vec<Skipped>,
}

impl AdminPlan {
    fn push(&mut self, mut action: PlannedAction) {
        action.seq = self.plan.actions.len() as u64 + 1;
        self.plan.actions.push(action);
    }

    fn skip(&mut self, path: &str, rule: &str, why: String) {
        self.skipped.push(Skipped {
            path: path.to_owned(),
            rule: rule.to_owned(),
            why,
        });
    }
}

fn read_lines<T: serde::de::DeserializeOwned>(
    root: &Root,
    rel: &str,
) -> fsroot::Result<Option<Vec<T>>> {
    let bytes = match root.read(Path::new(rel)) {
        Ok(b) => b,
        Err(e) if e.is_not_found() => return Ok(None),
        Err(e) => return Err(e),
    };
    // A line that does not parse (a write cut short) is skipped: it cannot name an item.
    Ok(Some(
        bytes
            .split(|b| *b == b'\n')
            .filter(|l| !l.is_empty())
            .filter_map(|l| serde_json::from_slice(l).ok())
            .collect(),
    ))
}

/// The manifest of run `run`.
pub fn read_manifest(root: &Root, run: &str) -> Result<Vec<ManifestLine>, AdminError> {
    if !RunId::is_valid(run) {
        return Err(AdminError::NoSuchRun {
            run: run.to_owned(),
            why: "not a run id (YYYYMMDDTHHMMSSZ-xxxxxx)".into(),
        });
    }
    let rel = format!("{SET_ASIDE_DIR}/{run}/MANIFEST.jsonl");
    read_lines(root, &rel)?.ok_or_else(|| AdminError::NoSuchRun {
        run: run.to_owned(),
        why: format!(
            "{} does not exist",
            root.display_path(Path::new(&rel)).display()
        ),
    })
}

fn receipts(root: &Root) -> fsroot::Result<Vec<Receipt>> {
    Ok(read_lines(root, &format!("{RECONCILE_DIR}/receipts.jsonl"))?.unwrap_or_default())
}

/// What a manifest line promises about the item at `moved_to`.
fn promised(line: &ManifestLine) -> Precondition {
    match (&line.sha256, &line.tree_blake3) {
        (Some(sha256), _) => Precondition::File {
            bytes: line.bytes,
            sha256: sha256.clone(),
        },
        (None, Some(tree)) => Precondition::Tree {
            bytes: line.bytes,
            tree_blake3: tree.clone(),
        },
        (None, None) => Precondition::File {
            bytes: line.bytes,
            sha256: String::new(),
        },
    }
}

/// The digest of what is at `rel` now, in the form of `like`; `None` when nothing is there.
fn found(root: &Root, rel: &str, like: &Precondition) -> fsroot::Result<Option<Precondition>> {
    let path = Path::new(rel);
    let Some(stat) = root.stat(path)? else {
        return Ok(None);
    };
    Ok(Some(match like {
        Precondition::File { .. } if stat.kind == EntryKind::File => {
            let d = root.file_digest(path)?;
            Precondition::File {
                bytes: d.bytes,
                sha256: d.sha256,
            }
        }
        Precondition::Tree { .. } if stat.kind == EntryKind::Dir => {
            let d = root.tree_digest(path)?;
            Precondition::Tree {
                bytes: d.bytes,
                tree_blake3: d.tree_blake3,
            }
        }
        _ => Precondition::File {
            bytes: stat.len,
            sha256: "not the kind of item the manifest lists".into(),
        },
    }))
}

fn action(
    rule: &str,
    rule_name: &str,
    kind: ActionKind,
    path: &str,
    reason: String,
    pre: Precondition,
) -> PlannedAction {
    PlannedAction {
        seq: 0,
        rule: rule.to_owned(),
        rule_name: rule_name.to_owned(),
        action: kind,
        path: path.to_owned(),
        kind: None,
        document: None,
        from: None,
        root: None,
        reason,
        precondition: pre,
    }
}

/// Plans `--restore RUN [--item REL]...`: first the documents the run's recoveries wrote are
/// set aside (into the restoring run), then every manifest item goes back to its original path,
/// verified against its manifest digest. An occupied original path is refused, by name.
pub fn plan_restore(root: &Root, run: &str, items: &[String]) -> Result<AdminPlan, AdminError> {
    let manifest = read_manifest(root, run)?;
    let wanted: BTreeSet<&str> = items.iter().map(String::as_str).collect();
    let recovered: Vec<(String, Option<String>)> = receipts(root)?
        .into_iter()
        .filter(|r| {
            r.run == run
                && r.action == ActionKind::RecoverThread
                && r.outcome == OutcomeKind::Applied
        })
        .filter_map(|r| {
            let doc = r.extra.get("document")?.as_str()?.to_owned();
            let sha = r
                .extra
                .get("document_sha256")
                .and_then(|v| v.as_str())
                .map(str::to_owned);
            Some((doc, sha))
        })
        .collect();
    for item in &wanted {
        let known = manifest.iter().any(|l| l.original == *item)
            || recovered.iter().any(|(d, _)| d == item);
        if !known {
            return Err(AdminError::NoSuchItem {
                run: run.to_owned(),
                item: (*item).to_owned(),
            });
        }
    }
    let selected = |p: &str| wanted.is_empty() || wanted.contains(p);
    let mut out = AdminPlan::default();
    for (doc, sha) in &recovered {
        if !selected(doc) {
            continue;
        }
        let Some(stat) = root.stat(Path::new(doc))? else {
            continue;
        };
        if stat.kind != EntryKind::File {
            continue;
        }
        let d = root.file_digest(Path::new(doc))?;
        if sha.as_deref().is_some_and(|s| s != d.sha256) {
            out.skip(
                doc,
                "R3",
                format!("document changed since run {run} wrote it: kept"),
            );
            continue;
        }
        let mut a = action(
            "R3",
            "restore",
            ActionKind::SetAside,
            doc,
            format!("written by the recovery of run {run}, which is being restored"),
            Precondition::File {
                bytes: d.bytes,
                sha256: d.sha256,
            },
        );
        a.kind = Some(ItemKind::Document);
        out.push(a);
    }
    for line in &manifest {
        if !selected(&line.original) {
            continue;
        }
        let want = promised(line);
        let now_there = found(root, &line.moved_to, &want)?;
        let at_original = found(root, &line.original, &want)?;
        match now_there {
            None if at_original.as_ref() == Some(&want) => {
                out.skip(&line.original, &line.rule, "already in place".into());
                continue;
            }
            None => {
                out.skip(
                    &line.original,
                    &line.rule,
                    format!("missing from the set-aside run: {}", line.moved_to),
                );
                continue;
            }
            Some(p) if p != want => {
                out.skip(
                    &line.original,
                    &line.rule,
                    format!("{} does not match its manifest line: kept", line.moved_to),
                );
                continue;
            }
            Some(_) => {}
        }
        if line.kind == ItemKind::PreviousVersion {
            if at_original.as_ref() == Some(&want) {
                out.skip(&line.original, &line.rule, "already in place".into());
                continue;
            }
        } else if root.stat(Path::new(&line.original))?.is_some() {
            out.skip(
                &line.original,
                &line.rule,
                format!("original path is occupied: {}", line.original),
            );
            continue;
        }
        let mut a = action(
            &line.rule,
            "restore",
            ActionKind::Restore,
            &line.original,
            format!("set aside by run {run}: {}", line.reason),
            want,
        );
        a.kind = Some(line.kind);
        a.from = Some(line.moved_to.clone());
        out.push(a);
    }
    Ok(out)
}

/// Whether the contents of run `run` match its manifest, allowing items a restore took back.
/// `Err` says what does not match.
fn verify_run(
    root: &Root,
    run: &str,
    restored: &BTreeSet<String>,
    all_runs: &[String],
) -> Result<(), String> {
    // No manifest: a run killed before its first line; then it must hold nothing at all.
    let manifest = match read_manifest(root, run) {
        Ok(m) => m,
        Err(AdminError::NoSuchRun { .. }) => Vec::new(),
        Err(e) => return Err(e.to_string()),
    };
    let mut listed: BTreeSet<String> = BTreeSet::new();
    for line in &manifest {
        listed.insert(line.moved_to.clone());
        if restored.contains(&line.moved_to) {
            continue;
        }
        let want = promised(line);
        match found(root, &line.moved_to, &want) {
            Ok(Some(p)) if p == want => {}
            Ok(Some(_)) => {
                return Err(format!(
                    "{} does not match its manifest line",
                    line.moved_to
                ))
            }
            // The manifest line is written before the move or copy; a run killed in between
            // left the item where it was, so nothing of it is in the run.
            Ok(None) if found(root, &line.original, &want).ok().flatten() == Some(want.clone()) => {
            }
            // ... or the next run moved it into its own run.
            Ok(None)
                if all_runs.iter().filter(|r| *r != run).any(|other| {
                    let there = format!("{SET_ASIDE_DIR}/{other}/{}", line.original);
                    found(root, &there, &want).ok().flatten() == Some(want.clone())
                }) => {}
            Ok(None) => return Err(format!("{} is missing (a partial run)", line.moved_to)),
            Err(e) => return Err(e.to_string()),
        }
    }
    // Nothing may be in the run that the manifest does not account for, except temporary
    // files of a copy a kill cut short (the doctor's own, never session data).
    let top = format!("{SET_ASIDE_DIR}/{run}");
    let mut stack = vec![top.clone()];
    while let Some(dir) = stack.pop() {
        let entries = root.list(Path::new(&dir)).map_err(|e| e.to_string())?;
        for e in entries {
            let rel = format!("{dir}/{}", e.name.to_string_lossy());
            if e.kind == EntryKind::File && store::ids::is_doctor_temp(&e.name.to_string_lossy()) {
                continue;
            }
            if rel == format!("{top}/MANIFEST.jsonl")
                || listed
                    .iter()
                    .any(|m| rel == *m || rel.starts_with(&format!("{m}/")))
            {
                continue;
            }
            let leads_to_item = listed.iter().any(|m| m.starts_with(&format!("{rel}/")));
            if e.kind == EntryKind::Dir && leads_to_item {
                stack.push(rel);
            } else {
                return Err(format!("{rel} is not in the manifest"));
            }
        }
    }
    Ok(())
}

/// Plans `--purge-set-aside --older-than DUR`: every run whose id time is at least `older_than`
/// seconds before `now`, whose contents match its manifest (or `force`), is deleted whole.
pub fn plan_purge(
    root: &Root,
    older_than: i64,
    now: Timestamp,
    force: bool,
) -> Result<AdminPlan, AdminError> {
    let mut out = AdminPlan::default();
    let Some(stat) = root.stat(Path::new(SET_ASIDE_DIR))? else {
        return Ok(out);
    };
    if stat.kind != EntryKind::Dir {
        out.skip(SET_ASIDE_DIR, "purge", "not a directory: left alone".into());
        return Ok(out);
    }
    let restored: BTreeSet<String> = receipts(root)?
        .into_iter()
        .filter(|r| r.action == ActionKind::Restore && r.outcome == OutcomeKind::Applied)
        .filter_map(|r| {
            r.extra
                .get("from")
                .and_then(|v| v.as_str())
                .map(str::to_owned)
        })
        .collect();
    let entries = root.list(Path::new(SET_ASIDE_DIR))?;
    let all_runs: Vec<String> = entries
        .iter()
        .map(|e| e.name.to_string_lossy().into_owned())
        .filter(|n| RunId::is_valid(n))
        .collect();
    for e in entries {
        let name = e.name.to_string_lossy().into_owned();
        let rel = format!("{SET_ASIDE_DIR}/{name}");
        if e.kind != EntryKind::Dir || !RunId::is_valid(&name) {
            out.skip(&rel, "purge", "not a set-aside run: left alone".into());
            continue;
        }
        let Some(at) = Timestamp::parse(&format!(
            "{}-{}-{}T{}:{}:{}Z",
            &name[0..4],
            &name[4..6],
            &name[6..8],
            &name[9..11],
            &name[11..13],
            &name[13..15]
        )) else {
            out.skip(&rel, "purge", "run id has no valid time: left alone".into());
            continue;
        };
        let age = now.0.saturating_sub(at.0);
        if age < older_than {
            continue;
        }
        let reason = match verify_run(root, &name, &restored, &all_runs) {
            Ok(()) => format!("set aside {}h ago", age / 3600),
            Err(why) if force => format!("set aside {}h ago; forced although {why}", age / 3600),
            Err(why) => {
                out.skip(
                    &rel,
                    "purge",
                    format!("does not match its manifest ({why}); use --force to purge it anyway"),
                );
                continue;
            }
        };
        let d = root.tree_digest(Path::new(&rel))?;
        out.push(action(
            "purge",
            "purge-set-aside",
            ActionKind::Purge,
            &rel,
            reason,
            Precondition::Tree {
                bytes: d.bytes,
                tree_blake3: d.tree_blake3,
            },
        ));
    }
    Ok(out)
}
