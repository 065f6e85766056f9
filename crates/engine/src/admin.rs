//! Planning the two commands that act on set-aside runs: `--restore` (put items back, verified
//! against the manifest) and `--purge-set-aside` (delete whole runs older than a duration,
//! verified against their manifests). Both plan through a read-only root into an ordinary
//! [`Plan`], which the executor applies like any other, receipted. And reading the runs for
//! `sessions list`: naming a run ([`resolve_run`]: an id, `latest`, `.set-aside/<run>`), each
//! run's overview ([`list_runs`]) and each item's state ([`list_run`]).

use std::collections::BTreeSet;
use std::path::Path;

use fsroot::{EntryKind, Problem, Root};
use plan::{Action, ActionKind, ItemKind, OutcomeKind, Plan, PlannedAction, Precondition, Skipped};
use store::ids::{RECONCILE_DIR, SET_ASIDE_DIR};
use store::Timestamp;

pub use crate::records::{AnyManifestLine, AppDetail, AppManifestLine};
use crate::records::{AnyReceiptLine, ManifestLine, Receipt};
use store::ids::RunId;

/// The rule code a purge's actions and skipped items carry (`--purge-set-aside` is no rule of a
/// pack, but every action names one).
pub const PURGE_RULE: &str = "purge";
/// The rule name a purge's actions carry.
pub const PURGE_RULE_NAME: &str = "purge-set-aside";

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
    /// Errors met while planning (a directory that could not be listed), each naming its path.
    pub errors: Vec<Problem>,
    /// Restore: the items among `skipped` that were refused (an occupied path, an item that
    /// does not match its manifest line or is missing from the run, a line naming a path
    /// outside S, a line that does not parse): the restore is partial. Items already in place
    /// or already restored are in `skipped` but not here.
    pub items_refused: u64,
    /// Restore: the documents the run's recoveries wrote that were kept (in `skipped`) because
    /// they changed since.
    pub documents_kept: u64,
    /// Purge: the records in `S/.reconcile/purge-pending/` (paths relative to S) with nothing
    /// left to finish (a deletion that finished and was receipted, or a record whose path now
    /// holds another directory); a real run removes them once the plan is applied.
    /// Each with the record as read: a real run removes a record only if it still reads so (a
    /// purge of the run that wrote a record of its own in between keeps that one).
    pub stale_pending: Vec<(String, crate::records::PendingDeletion)>,
}

impl AdminPlan {
    fn push(&mut self, mut action: PlannedAction) {
        action.seq = self.plan.actions.len() as u64 + 1;
        self.plan.actions.push(action);
    }

    /// Plans, at the head of the plan, the set-aside of the temporary files of interrupted
    /// writes: those in `.reconcile/` and those beside the records this plan rewrites.
    fn with_housekeeping(mut self, root: &Root) -> AdminPlan {
        let candidates = self.interrupted_writes(root);
        let temps =
            crate::housekeeping::plan_interrupted_writes(root, &candidates, &mut self.errors);
        crate::housekeeping::prepend(&mut self.plan, temps);
        self
    }

    /// Temporary files of interrupted doctor writes of the records this plan rewrites (a
    /// thread record a restore gives its previous bytes back): `.<name>.doctor-tmp-<pid>-<n>`
    /// next to each.
    fn interrupted_writes(&mut self, root: &Root) -> Vec<String> {
        let mut out = Vec::new();
        let mut by_dir: std::collections::BTreeMap<&str, BTreeSet<&str>> = Default::default();
        for a in &self.plan.actions {
            if matches!(
                a.action,
                Action::Restore {
                    kind: ItemKind::PreviousVersion,
                    ..
                }
            ) {
                let (dir, name) = a.path.rsplit_once('/').unwrap_or(("", &a.path));
                by_dir.entry(dir).or_default().insert(name);
            }
        }
        for (dir, names) in by_dir {
            let entries = match root.list(Path::new(dir)) {
                Ok(entries) => entries,
                Err(e) if e.is_not_found() => continue,
                Err(e) => {
                    self.errors.push(Problem::from(&e));
                    continue;
                }
            };
            for e in entries {
                let Some(name) = e.name.to_str() else {
                    continue;
                };
                let ours = fsroot::temp::target(name).is_some_and(|t| names.contains(t));
                if e.kind == EntryKind::File && ours {
                    out.push(if dir.is_empty() {
                        name.to_owned()
                    } else {
                        format!("{dir}/{name}")
                    });
                }
            }
        }
        out
    }

    /// Leaves `path` alone, saying why; not a refusal (already in place, or a purge's choice).
    fn skip(&mut self, path: &str, rule: &str, why: String) {
        self.skipped.push(Skipped {
            path: path.to_owned(),
            rule: rule.to_owned(),
            why,
        });
    }

    /// Refuses to restore the item at `path`, saying why.
    fn refuse(&mut self, path: &str, rule: &str, why: String) {
        self.items_refused += 1;
        self.skip(path, rule, why);
    }

    /// Keeps a recovered document that changed since its run wrote it, saying why.
    fn keep_document(&mut self, path: &str, rule: &str, why: String) {
        self.documents_kept += 1;
        self.skip(path, rule, why);
    }
}

/// The lines of a record file, as [`read_lines`] reads them.
struct Lines<T> {
    /// The records, in file order.
    parsed: Vec<T>,
    /// A problem for each line that is not a whole record, in file order, naming the file and
    /// the line, and whether the line is torn.
    problems: Vec<(Line, Problem)>,
}

/// What is wrong with a line of a record file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Line {
    /// Not a record: a line edited by hand, a shape nobody knows. It may have named something.
    NotARecord,
    /// Torn: a record cut short (a writer that died mid-line, a write cut short by `ENOSPC` or
    /// `EFBIG`). The doctor writes a manifest line whole before its move, so its torn manifest
    /// line names nothing moved: it is reported and passed over (in a run whose lines are the
    /// app's, whose order the format does not give, it is refused: [`read_manifest`]). A torn
    /// receipt is an action whose receipt was lost: reported, and read as no receipt.
    Torn,
}

impl<T> Lines<T> {
    /// The problems of the lines that are `kind`.
    fn problems(&self, kind: Line) -> Vec<Problem> {
        self.problems
            .iter()
            .filter(|(k, _)| *k == kind)
            .map(|(_, p)| p.clone())
            .collect()
    }
}

/// How many places a line that does not parse is tried at for a record glued after a torn
/// one: a bound on the work a hostile line can cause.
const GLUE_TRIES: usize = 64;

/// The record glued after a torn one in `line` (a torn line that a writer which did not
/// terminate it appended to): the first `{` after which the rest is a whole `T` while what is
/// before it is a record cut short (JSON that ends early).
fn glued<T: serde::de::DeserializeOwned>(line: &[u8]) -> Option<T> {
    line.iter()
        .enumerate()
        .skip(1)
        .filter(|(_, b)| **b == b'{')
        .take(GLUE_TRIES)
        .find_map(|(i, _)| {
            let torn = serde_json::from_slice::<serde_json::Value>(&line[..i])
                .err()
                .is_some_and(|e| e.is_eof());
            torn.then(|| serde_json::from_slice(&line[i..]).ok())
                .flatten()
        })
}

/// The lines of the record file `rel` that parse as `T`, and a problem for each that does not,
/// naming the file and the line: it is reported, never passed over in silence. Lines the app
/// wrote parse as their own shape. A torn line (JSON that ends early) is told apart from one
/// that is not a record; a record glued after a torn line (by an append that did not
/// terminate it) is read, the torn part reported. `None`: there is no such file.
fn read_lines<T: serde::de::DeserializeOwned>(
    root: &Root,
    rel: &str,
    nested_glue: bool,
) -> fsroot::Result<Option<Lines<T>>> {
    let bytes = match root.read_record(Path::new(rel)) {
        Ok(b) => b,
        Err(e) if e.is_not_found() => return Ok(None),
        Err(e) => return Err(e),
    };
    let shown = root.display_path(Path::new(rel));
    let problem = |message: String| Problem::invalid_data(shown.to_string_lossy(), message);
    let mut out = Lines {
        parsed: Vec::new(),
        problems: Vec::new(),
    };
    for (n, line) in bytes.split(|b| *b == b'\n').enumerate() {
        if line.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        let at = format!("line {} of {}", n + 1, shown.display());
        // With `nested_glue`, a record glued after a torn line is looked for also when the
        // whole line reads as JSON cut short: a torn line cut just after a `:` makes the record
        // glued to it a nested value, so the line ends early. Only for records that never
        // nest one of their own shape (manifest lines): in a receipt, whose extra fields may
        // hold any object, a torn line ending with such an object would read as a record
        // never written.
        match serde_json::from_slice(line) {
            Ok(v) => out.parsed.push(v),
            Err(e) => match glued(line).filter(|_| nested_glue || !e.is_eof()) {
                None if e.is_eof() => out.problems.push((
                    Line::Torn,
                    problem(format!(
                        "{at} is a record cut short (a write that did not finish): it names \
                         nothing done, passed over"
                    )),
                )),
                Some(v) => {
                    out.parsed.push(v);
                    out.problems.push((
                        Line::Torn,
                        problem(format!(
                            "{at} begins with a record cut short (a write that did not \
                             finish), passed over; the record glued after it is read"
                        )),
                    ));
                }
                None => out.problems.push((
                    Line::NotARecord,
                    problem(format!("{at} is not a record: {e}")),
                )),
            },
        }
    }
    Ok(Some(out))
}

/// Who wrote a manifest line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Writer {
    /// The doctor: relative paths, rule, kind, digest.
    Doctor,
    /// The app (codewhale-format §9.5): absolute paths and a `detail`.
    App,
}

/// One item of a set-aside run, from its manifest line, with its paths relative to S.
#[derive(Debug, Clone, PartialEq)]
pub struct SetAsideItem {
    /// Where the item was, relative to S.
    pub original: String,
    /// `original` as the manifest line spells it (absolute in an app line).
    pub original_as_written: String,
    /// Where it is now, relative to S (inside the run's directory).
    pub moved_to: String,
    /// The rule that set it aside (for an app line: inferred from its kind).
    pub rule: String,
    /// Why it was set aside.
    pub reason: String,
    /// What it is; `None` for an app line without a `detail`: judged by what is on disk.
    pub kind: Option<ItemKind>,
    /// What the line promises is at `moved_to`; `None` when the line has no digest (an app
    /// line for a store or a directory, or one whose `detail` is null).
    pub promise: Option<Precondition>,
    /// Who wrote the line.
    pub writer: Writer,
}

impl SetAsideItem {
    /// The size its manifest line records; `None` for an app line that records none (a store
    /// or a directory, or a line whose `detail` is null).
    pub fn bytes(&self) -> Option<u64> {
        self.promise.as_ref().map(|p| match p {
            Precondition::File { bytes, .. } | Precondition::Tree { bytes, .. } => *bytes,
        })
    }
}

/// A manifest line naming a path outside S (or a `moved_to` outside its run): never acted on.
#[derive(Debug, Clone, PartialEq)]
pub struct RefusedLine {
    /// `original` as written.
    pub original: String,
    /// The rule (inferred for an app line).
    pub rule: String,
    /// Why it is refused, naming the path.
    pub why: String,
    /// Who wrote the line.
    pub writer: Writer,
}

/// The manifest of a set-aside run.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Manifest {
    /// Its items, in manifest order.
    pub items: Vec<SetAsideItem>,
    /// Lines that name something outside S, and lines that are not records.
    pub refused: Vec<RefusedLine>,
    /// The torn lines (records cut short), each a problem naming the file and the line: they
    /// name nothing that was moved (a line is written whole before its item moves), so they
    /// are reported and passed over, neither items nor refusals.
    pub torn: Vec<Problem>,
}

impl Manifest {
    /// Whether the app wrote (any line of) this manifest.
    pub fn written_by_app(&self) -> bool {
        self.items.iter().any(|i| i.writer == Writer::App)
            || self.refused.iter().any(|r| r.writer == Writer::App)
    }

    /// How many lines name an item (including refused ones).
    pub fn len(&self) -> usize {
        self.items.len() + self.refused.len()
    }

    /// Whether no line names an item.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// `p` relative to S: an absolute path is normalised lexically and must lie under S as given
/// or under its canonical path; a relative path (the doctor's own lines) is taken relative to
/// S and must not climb out of it; a path that is neither (on Windows `\x`, `C:x`) is outside.
fn relative_to_s(root: &Root, p: &str) -> Result<String, String> {
    let path = Path::new(p);
    let outside = || format!("{p} is outside the sessions directory");
    let parts = refset::lexical(path).ok_or_else(outside)?;
    let given = std::path::absolute(root.anchor()).unwrap_or_else(|_| root.anchor().into());
    let rel = if path.is_absolute() {
        [given.as_path(), root.canonical_anchor()]
            .into_iter()
            .filter_map(refset::lexical)
            .find_map(|a| parts.strip_prefix(a.as_slice()))
            .ok_or_else(outside)?
    } else {
        &parts[..]
    };
    if rel.is_empty() {
        return Err(format!("{p} names the sessions directory itself"));
    }
    Ok(rel.join("/"))
}

/// The rule an item the app set aside is shown under, by the item's kind. The caller knows the
/// pack's registry (`engine::planner_of`); the executor names no rule.
pub type Attribute<'a> = &'a dyn Fn(Option<ItemKind>) -> String;

/// An app line's kind and digest, from its `detail`.
fn app_kind(detail: &Option<AppDetail>) -> (Option<ItemKind>, Option<Precondition>) {
    match detail {
        Some(AppDetail::File { sha256, bytes }) => (
            Some(ItemKind::Document),
            Some(Precondition::File {
                bytes: *bytes,
                sha256: sha256.to_ascii_lowercase(),
            }),
        ),
        Some(AppDetail::Kind { kind }) if kind == "runtime_store" => {
            (Some(ItemKind::RuntimeStore), None)
        }
        Some(AppDetail::Kind { kind }) if kind == "directory" => (Some(ItemKind::Directory), None),
        _ => (None, None),
    }
}

fn item_of(
    root: &Root,
    run: &str,
    line: AnyManifestLine,
    attribute: Attribute<'_>,
) -> Result<SetAsideItem, RefusedLine> {
    let (writer, original, moved_to, rule, reason, kind, promise) = match line {
        AnyManifestLine::Doctor(l) => {
            let promise = promised(&l);
            (
                Writer::Doctor,
                l.original,
                l.moved_to,
                l.rule,
                l.reason,
                Some(l.kind),
                Some(promise),
            )
        }
        AnyManifestLine::App(l) => {
            let (kind, promise) = app_kind(&l.detail);
            (
                Writer::App,
                l.original,
                l.moved_to,
                attribute(kind),
                l.reason,
                kind,
                promise,
            )
        }
    };
    let refuse = |why: String| RefusedLine {
        original: original.clone(),
        rule: rule.clone(),
        why,
        writer,
    };
    let rel_original =
        relative_to_s(root, &original).map_err(|why| refuse(format!("original {why}: refused")))?;
    let rel_moved =
        relative_to_s(root, &moved_to).map_err(|why| refuse(format!("moved_to {why}: refused")))?;
    let run_dir = format!("{SET_ASIDE_DIR}/{run}/");
    if !rel_moved.starts_with(&run_dir) {
        return Err(refuse(format!(
            "moved_to {moved_to} is not inside {SET_ASIDE_DIR}/{run}: refused"
        )));
    }
    let own = |p: &str| {
        [SET_ASIDE_DIR, RECONCILE_DIR]
            .iter()
            .any(|d| p == *d || p.starts_with(&format!("{d}/")))
    };
    // The one item that goes back into the doctor's own directories: a temporary file of an
    // interrupted write in `.reconcile/` that housekeeping set aside (its own line, its kind,
    // a place housekeeping takes such files from).
    let own_temporary = writer == Writer::Doctor
        && kind == Some(ItemKind::TemporaryFile)
        && rel_original.starts_with(&format!("{RECONCILE_DIR}/"))
        && crate::housekeeping::is_temp_place(&rel_original);
    if own(&rel_original) && !own_temporary {
        return Err(refuse(format!(
            "original {original} is inside the doctor's own directories: refused"
        )));
    }
    Ok(SetAsideItem {
        original: rel_original,
        original_as_written: original,
        moved_to: rel_moved,
        rule,
        reason,
        kind,
        promise,
        writer,
    })
}

/// The manifest of run `run`, the doctor's lines and the app's alike, paths relative to S; the
/// app's lines are shown under the rule `attribute` gives.
pub fn read_manifest(
    root: &Root,
    run: &str,
    attribute: Attribute<'_>,
) -> Result<Manifest, AdminError> {
    if !RunId::is_valid(run) {
        return Err(AdminError::NoSuchRun {
            run: run.to_owned(),
            why: "not a run id (YYYYMMDDTHHMMSSZ-xxxxxx)".into(),
        });
    }
    let rel = store::ids::manifest_path(run);
    let read: Lines<AnyManifestLine> =
        read_lines(root, &rel, true)?.ok_or_else(|| AdminError::NoSuchRun {
            run: run.to_owned(),
            why: format!(
                "{} does not exist",
                root.display_path(Path::new(&rel)).display()
            ),
        })?;
    let (bad, torn) = (read.problems(Line::NotARecord), read.problems(Line::Torn));
    let lines = read.parsed;
    let mut manifest = Manifest {
        torn,
        ..Manifest::default()
    };
    let mut at: std::collections::HashMap<String, usize> = std::collections::HashMap::new();
    let mut voided = std::collections::HashSet::new();
    for line in lines {
        // A move that failed and was rolled back: its line is voided, the item is not listed.
        if let AnyManifestLine::Doctor(l) = &line {
            if l.rolled_back {
                voided.insert(l.moved_to.clone());
                continue;
            }
        }
        match item_of(root, run, line, attribute) {
            // A later line for the same `moved_to` corrects an earlier one (a move that moved
            // something other than what was checked records what it moved): the last counts.
            Ok(item) => match at.get(&item.moved_to) {
                Some(&i) => manifest.items[i] = item,
                None => {
                    at.insert(item.moved_to.clone(), manifest.items.len());
                    manifest.items.push(item);
                }
            },
            Err(refused) => manifest.refused.push(refused),
        }
    }
    manifest.items.retain(|i| !voided.contains(&i.moved_to));
    // The app's runs: codewhale-format §9.5 says each move appends a line, not that the line
    // comes first, so a torn line in a run whose lines are the app's may name an item it moved.
    // It is refused, as a line that is not a record (the restore is partial, the purge keeps
    // the run). (The doctor writes each line before its move: its torn lines name nothing.)
    let apps = manifest.items.iter().map(|i| i.writer);
    let apps = apps.chain(manifest.refused.iter().map(|r| r.writer));
    if !manifest.is_empty() && apps.into_iter().all(|w| w == Writer::App) {
        let torn = std::mem::take(&mut manifest.torn);
        manifest
            .refused
            .extend(torn.into_iter().map(|p| RefusedLine {
                original: String::new(),
                rule: crate::housekeeping::CODE.into(),
                why: format!(
                    "{}; the app may write its line after the move, so it may name an item",
                    p.message
                ),
                writer: Writer::App,
            }));
    }
    // A line that does not parse may have named an item: the run is not whole, and says so.
    manifest
        .refused
        .extend(bad.into_iter().map(|p| RefusedLine {
            original: String::new(),
            // No rule is known for a line that names nothing readable: the doctor reports it.
            rule: crate::housekeeping::CODE.into(),
            why: p.message,
            writer: Writer::Doctor,
        }));
    Ok(manifest)
}

/// The doctor's receipts of S; the app's lines are passed over, each line that is neither is
/// reported in `problems`.
fn receipts(root: &Root, problems: &mut Vec<Problem>) -> fsroot::Result<Vec<Receipt>> {
    Ok(match read_lines(root, store::ids::RECEIPTS_PATH, false)? {
        Some(Lines {
            parsed,
            problems: p,
        }) => {
            problems.extend(p.into_iter().map(|(_, p)| p));
            parsed
                .into_iter()
                .filter_map(|l| match l {
                    AnyReceiptLine::Doctor(r) => Some(r),
                    AnyReceiptLine::App(_) => None,
                })
                .collect()
        }
        None => Vec::new(),
    })
}

/// The items taken back out of their run: the `from` of every applied restore, and the
/// `put_back_from` of every set-aside that found it had moved something other than what it
/// checked and put it back at once.
pub fn restored_items(
    root: &Root,
    problems: &mut Vec<Problem>,
) -> fsroot::Result<BTreeSet<String>> {
    Ok(receipts(root, problems)?
        .into_iter()
        .filter_map(|r| {
            let key = match (r.action, r.outcome) {
                (ActionKind::Restore, OutcomeKind::Applied) => "from",
                (ActionKind::SetAside, _) => "put_back_from",
                _ => return None,
            };
            r.extra.get(key).and_then(|v| v.as_str()).map(str::to_owned)
        })
        .collect())
}

/// What a doctor manifest line promises about the item at `moved_to`.
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

/// For an item whose line has no digest: what is at `moved_to` now, its kind (the line's, or
/// by what is on disk) and its digest. `Ok(None)`: nothing is there. `Err`: what is there is
/// not the kind of item the line names.
fn on_disk(root: &Root, item: &SetAsideItem) -> Result<Option<(ItemKind, Precondition)>, String> {
    let path = Path::new(&item.moved_to);
    let stat = match root.stat(path) {
        Ok(Some(s)) => s,
        Ok(None) => return Ok(None),
        Err(e) => return Err(e.to_string()),
    };
    let kind = match (item.kind, stat.kind) {
        (Some(ItemKind::RuntimeStore), EntryKind::Dir) => ItemKind::RuntimeStore,
        (Some(ItemKind::Directory) | None, EntryKind::Dir) => ItemKind::Directory,
        (Some(ItemKind::Document) | None, EntryKind::File) => ItemKind::Document,
        _ => {
            return Err(format!(
                "{} does not match its manifest line (not a {})",
                item.moved_to,
                match item.kind {
                    Some(ItemKind::RuntimeStore) => "runtime store",
                    Some(ItemKind::Directory) => "directory",
                    _ => "file or directory",
                }
            ))
        }
    };
    // A file or a directory, as the match above established: digested by its kind.
    match crate::judge::item_digest(root, &item.moved_to) {
        Ok(Some(pre)) => Ok(Some((kind, pre))),
        Ok(None) => Ok(None),
        Err(e) => Err(e.to_string()),
    }
}

fn action(
    rule: &str,
    rule_name: &str,
    kind: Action,
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
        reason,
        precondition: pre,
    }
}

/// Plans `restore RUN [--item REL|N]...`: first the documents the run's recoveries wrote are
/// set aside (into the restoring run), then every manifest item goes back to its original path,
/// verified against its manifest digest. An occupied original path is refused, by name; the
/// plan counts what it refused (`items_refused`, `documents_kept`).
///
/// Each of `items` is an original path the run names (as relative to S, or as the manifest line
/// spells it), else the number of an item in [`list_run`]'s listing (1-based, [`item_number`]):
/// a path wins over a number, so a session directory named `3` is still restored by its name.
/// Anything else is [`AdminError::NoSuchItem`]. No items: the whole run.
///
/// A run the app wrote (absolute paths, a `detail`) is restored the same way: its paths must
/// lie under S (anything else is refused by name); a document is verified against its
/// `detail.sha256`; a store or directory, which has no digest, must be found where the line
/// says, as the kind it says, and moves back as that kind (a store by the store-move protocol).
pub fn plan_restore(
    root: &Root,
    run: &str,
    items: &[String],
    attribute: Attribute<'_>,
) -> Result<AdminPlan, AdminError> {
    Ok(restore_actions(root, run, items, attribute)?.with_housekeeping(root))
}

fn restore_actions(
    root: &Root,
    run: &str,
    items: &[String],
    attribute: Attribute<'_>,
) -> Result<AdminPlan, AdminError> {
    let manifest = read_manifest(root, run, attribute)?;
    let mut problems = Vec::new();
    // The documents the run's recoveries wrote, each with the rule its receipt names.
    let recovered: Vec<(String, Option<String>, String)> = receipts(root, &mut problems)?
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
            Some((doc, sha, r.rule))
        })
        .collect();
    // Each item is a path the run names, else the number of an item in its listing.
    let mut wanted: BTreeSet<&str> = BTreeSet::new();
    for item in items {
        let known = manifest
            .items
            .iter()
            .any(|l| l.original == *item || l.original_as_written == *item)
            || manifest.refused.iter().any(|l| l.original == *item)
            || recovered.iter().any(|(d, _, _)| d == item);
        let numbered = || item_number(item).and_then(|n| manifest.items.get(n - 1));
        match (known, numbered()) {
            (true, _) => wanted.insert(item),
            (false, Some(line)) => wanted.insert(&line.original),
            (false, None) => {
                return Err(AdminError::NoSuchItem {
                    run: run.to_owned(),
                    item: item.clone(),
                })
            }
        };
    }
    let selected = |p: &str| wanted.is_empty() || wanted.contains(p);
    problems.extend(manifest.torn.iter().cloned());
    let mut out = AdminPlan {
        errors: problems,
        ..AdminPlan::default()
    };
    // The paths this plan empties before it restores anything: the documents the run's
    // recoveries wrote. An item whose original path is one of them goes back there (an R1
    // document the recovery of the same id replaced, say).
    let mut vacated: BTreeSet<&str> = BTreeSet::new();
    for (doc, sha, rule) in &recovered {
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
            // Not what the recovery wrote: the run's own item already back at that path (a
            // restore that ran, or was cut short after putting it back), or a document changed
            // since, which is kept.
            let item_back = manifest.items.iter().any(|l| {
                l.original == *doc
                    && matches!(
                        &l.promise,
                        Some(Precondition::File { sha256, .. }) if *sha256 == d.sha256
                    )
            });
            if item_back {
                out.skip(doc, rule, "already restored".into());
            } else {
                out.keep_document(
                    doc,
                    rule,
                    format!("document changed since run {run} wrote it: kept"),
                );
            }
            continue;
        }
        let a = action(
            rule,
            "restore",
            Action::SetAside {
                kind: ItemKind::Document,
            },
            doc,
            format!("written by the recovery of run {run}, which is being restored"),
            Precondition::File {
                bytes: d.bytes,
                sha256: d.sha256,
            },
        );
        out.push(a);
        vacated.insert(doc);
    }
    for line in &manifest.refused {
        if selected(&line.original) {
            // The path the report names must be relative to S: the run itself.
            out.refuse(
                &format!("{SET_ASIDE_DIR}/{run}"),
                &line.rule,
                line.why.clone(),
            );
        }
    }
    let restored = restored_items(root, &mut Vec::new())?;
    for line in &manifest.items {
        if !(selected(&line.original) || selected(&line.original_as_written)) {
            continue;
        }
        let mut continuing = false;
        let (kind, want) = match &line.promise {
            Some(want) => {
                let want = want.clone();
                // An item whose paths cannot be looked at (a symlink on the way, say) is
                // reported and left; the rest of the run is restored.
                let (now_there, at_original) = match (
                    found(root, &line.moved_to, &want),
                    found(root, &line.original, &want),
                ) {
                    (Ok(a), Ok(b)) => (a, b),
                    (Err(e), _) | (_, Err(e)) => {
                        out.refuse(&line.original, &line.rule, format!("{e}: kept"));
                        continue;
                    }
                };
                if now_there.is_none() && restored.contains(&line.moved_to) {
                    out.skip(&line.original, &line.rule, "already restored".into());
                    continue;
                }
                match now_there {
                    None if at_original.as_ref() == Some(&want) => {
                        out.skip(&line.original, &line.rule, "already in place".into());
                        continue;
                    }
                    None => {
                        out.refuse(
                            &line.original,
                            &line.rule,
                            format!("missing from the set-aside run: {}", line.moved_to),
                        );
                        continue;
                    }
                    // A store restore cut short after its last entry moved, before the emptied
                    // directory in the run went.
                    Some(_) if at_original.as_ref() == Some(&want) => {
                        out.skip(&line.original, &line.rule, "already in place".into());
                        continue;
                    }
                    // A store restore cut short midway: the store is split between its path
                    // and the run, and the two halves together are what the line promises.
                    Some(_)
                        if line.kind == Some(ItemKind::RuntimeStore)
                            && crate::judge::store_restore_cut_short(
                                root,
                                &line.original,
                                &line.moved_to,
                            )
                            .as_ref()
                                == Some(&want) =>
                    {
                        continuing = true;
                    }
                    Some(p) if p != want => {
                        out.refuse(
                            &line.original,
                            &line.rule,
                            format!("{} does not match its manifest line: kept", line.moved_to),
                        );
                        continue;
                    }
                    Some(_) => {}
                }
                (line.kind.unwrap_or(ItemKind::Document), want)
            }
            // No digest (an app line for a store or a directory): it must be where the line
            // says, as the kind it says; the plan's precondition is what is there now.
            None => match on_disk(root, line) {
                // A store restore cut short midway (see above); with no digest to compare, the
                // store-move protocol's trace is the evidence: the lock file, which moves last,
                // is still in the run, none is at the path, and no name is in both.
                Ok(Some((ItemKind::RuntimeStore, _)))
                    if !matches!(root.stat(Path::new(&line.original)), Ok(None)) =>
                {
                    match crate::judge::store_restore_cut_short(
                        root,
                        &line.original,
                        &line.moved_to,
                    ) {
                        Some(merged) => {
                            continuing = true;
                            (ItemKind::RuntimeStore, merged)
                        }
                        None => {
                            out.refuse(
                                &line.original,
                                &line.rule,
                                format!("original path is occupied: {}", line.original),
                            );
                            continue;
                        }
                    }
                }
                Ok(Some(found)) => found,
                Ok(None) if restored.contains(&line.moved_to) => {
                    out.skip(&line.original, &line.rule, "already restored".into());
                    continue;
                }
                Ok(None) => {
                    out.refuse(
                        &line.original,
                        &line.rule,
                        format!("missing from the set-aside run: {}", line.moved_to),
                    );
                    continue;
                }
                Err(why) => {
                    out.refuse(&line.original, &line.rule, format!("{why}: kept"));
                    continue;
                }
            },
        };
        // Anything at the path, or a path that cannot be looked at, is occupied, unless this
        // plan sets it aside first.
        if kind != ItemKind::PreviousVersion
            && !continuing
            && !vacated.contains(line.original.as_str())
            && !matches!(root.stat(Path::new(&line.original)), Ok(None))
        {
            out.refuse(
                &line.original,
                &line.rule,
                format!("original path is occupied: {}", line.original),
            );
            continue;
        }
        if let Some(why) = temporary_file_home_gone(root, kind, &line.original) {
            out.refuse(&line.original, &line.rule, why);
            continue;
        }
        let by = match line.writer {
            Writer::Doctor => format!("run {run}"),
            Writer::App => format!("the app's run {run}"),
        };
        let reason = if line.reason.trim().is_empty() {
            format!("set aside by {by}")
        } else {
            format!("set aside by {by}: {}", line.reason)
        };
        let a = action(
            &line.rule,
            "restore",
            Action::Restore {
                kind,
                from: line.moved_to.clone(),
            },
            &line.original,
            reason,
            want,
        );
        out.push(a);
    }
    Ok(out)
}

/// Why a temporary file cannot go back now: it was taken from a store's `threads/`, and that
/// directory is gone (a later run set the store aside). The doctor never creates missing
/// directories in a store (store-format.md, Version 2), and a skeleton at the store's path would
/// stand in the way of the restore of the store itself. `None`: it may go back.
pub fn temporary_file_home_gone(root: &Root, kind: ItemKind, original: &str) -> Option<String> {
    if kind != ItemKind::TemporaryFile {
        return None;
    }
    let store = crate::housekeeping::store_of_temp(original)?;
    let threads = format!("{store}/threads");
    match root.stat(Path::new(&threads)) {
        Ok(Some(s)) if s.kind == EntryKind::Dir => None,
        _ => Some(format!(
            "its directory {threads} is gone (restore first the run that set its store aside): \
             kept"
        )),
    }
}

/// Why a run cannot be purged without `--force`.
enum Unverified {
    /// Its contents do not match its manifest.
    Mismatch(String),
    /// The app wrote it and some items have no digest to check.
    NoDigests(String),
}

/// Whether the contents of run `run` match its manifest, allowing items a restore took back.
/// `Err` says what does not match, or that items of an app-made run cannot be checked. The
/// manifest's torn lines go to `torn`: they name nothing moved, and anything in the run that
/// no whole line accounts for does not match.
fn verify_run(
    root: &Root,
    run: &str,
    restored: &BTreeSet<String>,
    all_runs: &[String],
    torn: &mut Vec<Problem>,
) -> Result<(), Unverified> {
    use Unverified::Mismatch;
    // No manifest: a run killed before its first line; then it must hold nothing at all.
    // Which rule an app line is shown under does not matter to the check.
    let manifest = match read_manifest(root, run, &|_| String::new()) {
        Ok(m) => m,
        Err(AdminError::NoSuchRun { .. }) => Manifest::default(),
        Err(e) => return Err(Mismatch(e.to_string())),
    };
    torn.extend(manifest.torn.iter().cloned());
    if let Some(refused) = manifest.refused.first() {
        return Err(Mismatch(refused.why.clone()));
    }
    let mut listed: BTreeSet<String> = BTreeSet::new();
    let mut without_digest = 0usize;
    for line in &manifest.items {
        listed.insert(line.moved_to.clone());
        if restored.contains(&line.moved_to) {
            continue;
        }
        let Some(want) = &line.promise else {
            match on_disk(root, line) {
                Ok(Some(_)) => without_digest += 1,
                Ok(None) => {
                    return Err(Mismatch(format!(
                        "{} is missing (a partial run)",
                        line.moved_to
                    )))
                }
                Err(why) => return Err(Mismatch(why)),
            }
            continue;
        };
        match found(root, &line.moved_to, want) {
            Ok(Some(p)) if p == *want => {}
            // A store restore cut short before the emptied directory in the run went: the
            // store is whole at its path.
            Ok(Some(Precondition::Tree { bytes: 0, .. }))
                if root
                    .list(Path::new(&line.moved_to))
                    .is_ok_and(|l| l.is_empty())
                    && found(root, &line.original, want).ok().flatten().as_ref() == Some(want) => {}
            Ok(Some(_)) => {
                return Err(Mismatch(format!(
                    "{} does not match its manifest line",
                    line.moved_to
                )))
            }
            // The manifest line is written before the move or copy; a run killed in between
            // left the item where it was, so nothing of it is in the run.
            Ok(None) if found(root, &line.original, want).ok().flatten().as_ref() == Some(want) => {
            }
            // ... or the next run moved it into its own run.
            Ok(None)
                if all_runs.iter().filter(|r| *r != run).any(|other| {
                    let there = format!("{SET_ASIDE_DIR}/{other}/{}", line.original);
                    found(root, &there, want).ok().flatten().as_ref() == Some(want)
                }) => {}
            Ok(None) => {
                return Err(Mismatch(format!(
                    "{} is missing (a partial run)",
                    line.moved_to
                )))
            }
            Err(e) => return Err(Mismatch(e.to_string())),
        }
    }
    // Nothing may be in the run that the manifest does not account for, except temporary
    // files of a copy a kill cut short (the doctor's own, never session data).
    let top = format!("{SET_ASIDE_DIR}/{run}");
    let mut stack = vec![top.clone()];
    while let Some(dir) = stack.pop() {
        let entries = root
            .list(Path::new(&dir))
            .map_err(|e| Mismatch(e.to_string()))?;
        for e in entries {
            let rel = format!("{dir}/{}", e.name.to_string_lossy());
            if e.kind == EntryKind::File && fsroot::temp::is_temp(&e.name.to_string_lossy()) {
                continue;
            }
            // Listed itself, or inside a listed item: one lookup per ancestor, not a walk of
            // the whole manifest per entry.
            let inside_item = std::iter::successors(Some(rel.as_str()), |p| {
                p.rsplit_once('/').map(|(parent, _)| parent)
            })
            .any(|p| listed.contains(p));
            if rel == format!("{top}/{}", store::ids::MANIFEST_FILE) || inside_item {
                continue;
            }
            let below = format!("{rel}/");
            let leads_to_item = listed
                .range(below.clone()..)
                .next()
                .is_some_and(|m| m.starts_with(&below));
            if e.kind == EntryKind::Dir && leads_to_item {
                stack.push(rel);
            } else {
                return Err(Mismatch(format!("{rel} is not in the manifest")));
            }
        }
    }
    if without_digest > 0 {
        let total = manifest.items.len();
        return Err(Unverified::NoDigests(if without_digest == total {
            format!(
                "run {run} was written by the app and has no digests to verify: pass --force to purge it"
            )
        } else {
            format!(
                "run {run} was written by the app and {without_digest} of its {total} items have no digest to verify: pass --force to purge it"
            )
        }));
    }
    Ok(())
}

/// Plans `--purge-set-aside --older-than DUR`: every run whose id time is at least `older_than`
/// seconds before `now`, whose contents match its manifest (or `force`), is deleted whole. A
/// run the app wrote whose stores or directories have no digest cannot be verified: it is
/// purged only with `force`.
pub fn plan_purge(
    root: &Root,
    older_than: i64,
    now: Timestamp,
    force: bool,
) -> Result<AdminPlan, AdminError> {
    Ok(purge_actions(root, older_than, now, force)?.with_housekeeping(root))
}

/// The tree digest in the precondition of a purge action whose run is already gone (a
/// deletion that finished before its receipt was written): all zeros, which no tree digests
/// to (an empty directory has a digest of its own).
pub const NOTHING_LEFT: &str = "0000000000000000000000000000000000000000000000000000000000000000";

/// The purges a record in `S/.reconcile/purge-pending/` says were started and not receipted:
/// a run still there (same device and inode) is deleted again whatever its age or manifest
/// (its deletion was decided and begun); another directory there now is not that run (the
/// record is dropped, named in the errors, and the run is judged as any other); a run gone
/// gets the receipt its deletion never had;
/// a record whose deletion was receipted is left for the real run to drop
/// ([`AdminPlan::stale_pending`]). The runs it plans, by name.
fn finish_pending_purges(root: &Root, out: &mut AdminPlan) -> fsroot::Result<BTreeSet<String>> {
    let mut taken = BTreeSet::new();
    let mut seen = BTreeSet::new();
    let (pending, errors) = crate::records::read_pending(root, store::ids::PURGE_PENDING_DIR);
    out.errors.extend(errors);
    if pending.is_empty() {
        return Ok(taken);
    }
    let receipted: BTreeSet<(String, String)> = receipts(root, &mut Vec::new())?
        .into_iter()
        .filter(|r| r.action == ActionKind::Purge && r.outcome == OutcomeKind::Applied)
        .flat_map(|r| {
            // The run that deleted it, or the one that finished it.
            let finished = r.extra.get("finishes_run").and_then(|v| v.as_str());
            [Some(r.run.clone()), finished.map(str::to_owned)]
                .into_iter()
                .flatten()
                .map(move |run| (run, r.path.clone()))
                .collect::<Vec<_>>()
        })
        .collect();
    for p in pending {
        let Some(run) = p
            .path
            .strip_prefix(&format!("{SET_ASIDE_DIR}/"))
            .filter(|r| RunId::is_valid(r))
        else {
            out.errors.push(Problem::invalid_data(
                crate::records::purge_pending_file("?"),
                format!("a purge record names {}, not a set-aside run", p.path),
            ));
            continue;
        };
        let record = crate::records::purge_pending_file(run);
        // Only the record named by its run is the executor's (a record read from any other
        // name is not ours, and is neither acted on nor lets the run's own record be dropped),
        // and each run's once.
        let own = root
            .read(Path::new(&record))
            .ok()
            .and_then(|b| serde_json::from_slice::<crate::records::PendingDeletion>(&b).ok());
        if own.as_ref() != Some(&p) || !seen.insert(run.to_owned()) {
            continue;
        }
        let there = match root.stat(Path::new(&p.path))? {
            Some(s)
                if s.kind == EntryKind::Dir && s.id == fsroot::FileId::from_parts(p.dev, p.ino) =>
            {
                Some(s)
            }
            // Another directory now (the store copied or restored from a backup, a device
            // renumbered): not the one whose deletion began. The record goes; the run is
            // judged as any other.
            Some(_) => {
                out.errors.push(Problem::invalid_data(
                    root.display_path(Path::new(&record)).to_string_lossy(),
                    format!(
                        "the purge run {} began of {} is not finished: the directory there now is \
                         another one (device or inode), so the record is dropped and the run is \
                         judged as any other",
                        p.run, p.path
                    ),
                ));
                out.stale_pending.push((record, p.clone()));
                continue;
            }
            None => None,
        };
        let pre = match there {
            Some(_) => {
                let d = root.tree_digest(Path::new(&p.path))?;
                Precondition::Tree {
                    bytes: d.bytes,
                    tree_blake3: d.tree_blake3,
                }
            }
            None if receipted.contains(&(p.run.clone(), p.path.clone())) => {
                out.stale_pending.push((record, p.clone()));
                continue;
            }
            None => Precondition::Tree {
                bytes: 0,
                tree_blake3: NOTHING_LEFT.into(),
            },
        };
        let reason = match there {
            Some(_) => format!("finishes the deletion run {} started", p.run),
            None => format!(
                "deleted by run {}, which could not write its receipt: receipted now",
                p.run
            ),
        };
        taken.insert(run.to_owned());
        out.push(action(
            PURGE_RULE,
            PURGE_RULE_NAME,
            Action::Purge,
            &p.path,
            reason,
            pre,
        ));
    }
    Ok(taken)
}

fn purge_actions(
    root: &Root,
    older_than: i64,
    now: Timestamp,
    force: bool,
) -> Result<AdminPlan, AdminError> {
    let mut out = AdminPlan::default();
    let finishing = finish_pending_purges(root, &mut out)?;
    let Some(stat) = root.stat(Path::new(SET_ASIDE_DIR))? else {
        return Ok(out);
    };
    if stat.kind != EntryKind::Dir {
        out.skip(
            SET_ASIDE_DIR,
            PURGE_RULE,
            "not a directory: left alone".into(),
        );
        return Ok(out);
    }
    let restored = restored_items(root, &mut out.errors)?;
    let entries = root.list(Path::new(SET_ASIDE_DIR))?;
    let all_runs: Vec<String> = entries
        .iter()
        .map(|e| e.name.to_string_lossy().into_owned())
        .filter(|n| RunId::is_valid(n))
        .collect();
    for e in entries {
        let name = e.name.to_string_lossy().into_owned();
        let rel = format!("{SET_ASIDE_DIR}/{name}");
        if finishing.contains(&name) {
            continue;
        }
        if e.kind != EntryKind::Dir || !RunId::is_valid(&name) {
            out.skip(&rel, PURGE_RULE, "not a set-aside run: left alone".into());
            continue;
        }
        let Some(at) = run_time(&name) else {
            out.skip(
                &rel,
                PURGE_RULE,
                "run id has no valid time: left alone".into(),
            );
            continue;
        };
        let age = now.0.saturating_sub(at.0);
        if age < older_than {
            continue;
        }
        let reason = match verify_run(root, &name, &restored, &all_runs, &mut out.errors) {
            Ok(()) => format!("set aside {}h ago", age / 3600),
            Err(Unverified::Mismatch(why) | Unverified::NoDigests(why)) if force => {
                format!("set aside {}h ago; forced although {why}", age / 3600)
            }
            Err(Unverified::Mismatch(why)) => {
                out.skip(
                    &rel,
                    PURGE_RULE,
                    format!("does not match its manifest ({why}); use --force to purge it anyway"),
                );
                continue;
            }
            Err(Unverified::NoDigests(why)) => {
                out.skip(&rel, PURGE_RULE, why);
                continue;
            }
        };
        let d = root.tree_digest(Path::new(&rel))?;
        out.push(action(
            PURGE_RULE,
            PURGE_RULE_NAME,
            Action::Purge,
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

// ---- naming and listing set-aside runs ------------------------------------------------------

/// The instant in the id of run `run` (`YYYYMMDDTHHMMSSZ-xxxxxx`); `None` when `run` is not a
/// run id or its time is not one.
pub fn run_time(run: &str) -> Option<Timestamp> {
    if !RunId::is_valid(run) {
        return None;
    }
    Timestamp::parse(&format!(
        "{}-{}-{}T{}:{}:{}Z",
        &run[0..4],
        &run[4..6],
        &run[6..8],
        &run[9..11],
        &run[11..13],
        &run[13..15]
    ))
}

/// The set-aside runs of S: the directories under `.set-aside/` named by a run id, oldest
/// first: by the second in the id, then by where each run's first receipt stands in the
/// receipts log. None when there is no `.set-aside/`.
pub fn run_dirs(root: &Root) -> fsroot::Result<Vec<String>> {
    let entries = match root.list(Path::new(SET_ASIDE_DIR)) {
        Ok(entries) => entries,
        Err(e) if e.is_not_found() => return Ok(Vec::new()),
        Err(e) => return Err(e),
    };
    let mut runs: Vec<String> = entries
        .into_iter()
        .filter(|e| e.kind == EntryKind::Dir)
        .filter_map(|e| e.name.into_string().ok())
        .filter(|n| RunId::is_valid(n))
        .collect();
    in_time_order(root, &mut runs);
    Ok(runs)
}

/// Sorts run ids oldest first: by the second in the id; runs of the same second (whose random
/// suffixes say nothing of their order) by the order their first lines stand in
/// `S/.reconcile/receipts.jsonl`, which one run at a time appends to (under the single-flight
/// lock), a run with no line there (the app's, or one killed before its first receipt) before
/// those with one; the suffix only last. Receipts that cannot be read leave the suffix order.
fn in_time_order(root: &Root, runs: &mut [String]) {
    let mut first_line: std::collections::HashMap<String, usize> = Default::default();
    let seconds: BTreeSet<&str> = runs.iter().map(|r| &r[..16]).collect();
    if seconds.len() < runs.len() {
        for (i, r) in receipts(root, &mut Vec::new())
            .unwrap_or_default()
            .into_iter()
            .enumerate()
        {
            first_line.entry(r.run).or_insert(i);
        }
    }
    runs.sort_by(|a, b| {
        let key = |r: &String| (r[..16].to_owned(), first_line.get(r).copied(), r.clone());
        key(a).cmp(&key(b))
    });
}

/// The run `given` names: a run id (returned as given: what reads the run says what is
/// missing); `latest`, the newest run directory under `.set-aside/` ([`run_dirs`]: by the time
/// in its id, then by the receipts' order); or the path the
/// notice line prints, `.set-aside/<run>`, relative to S or absolute under S, with or without a
/// trailing `/`. Anything else, or `latest` with no run, is [`AdminError::NoSuchRun`] naming
/// what was given.
pub fn resolve_run(root: &Root, given: &str) -> Result<String, AdminError> {
    if RunId::is_valid(given) {
        return Ok(given.to_owned());
    }
    if given == "latest" {
        return run_dirs(root)?.pop().ok_or_else(|| AdminError::NoSuchRun {
            run: given.to_owned(),
            why: format!(
                "{} holds no set-aside run",
                root.display_path(Path::new(SET_ASIDE_DIR)).display()
            ),
        });
    }
    let no_such = |why: String| AdminError::NoSuchRun {
        run: given.to_owned(),
        why,
    };
    let rel = relative_to_s(root, given).map_err(no_such)?;
    match rel.strip_prefix(&format!("{SET_ASIDE_DIR}/")) {
        Some(run) if RunId::is_valid(run) => Ok(run.to_owned()),
        _ => Err(no_such(format!(
            "not a run id (YYYYMMDDTHHMMSSZ-xxxxxx), `latest` or {SET_ASIDE_DIR}/<run>"
        ))),
    }
}

/// The number of an item in a run's listing, as `--item N` gives it: decimal digits only, from
/// 1. `None` for anything else.
pub fn item_number(given: &str) -> Option<usize> {
    if given.is_empty() || !given.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    given.parse().ok().filter(|n| *n >= 1)
}

/// What `sessions list` shows of one set-aside run: read from its manifest and the receipts,
/// never from the items themselves.
#[derive(Debug, Clone, PartialEq)]
pub struct RunOverview {
    /// The run id.
    pub run: String,
    /// The instant in its id.
    pub at: Option<Timestamp>,
    /// The distinct rule codes of its manifest lines, sorted (a line that does not parse names
    /// none).
    pub rules: Vec<String>,
    /// The manifest lines that name an item, refused ones included.
    pub items: u64,
    /// The sum of the sizes its manifest lines record.
    pub bytes: u64,
    /// The items taken back out of the run, per the receipts ([`restored_items`]).
    pub restored: u64,
    /// Whether the app wrote (any line of) its manifest.
    pub written_by_app: bool,
}

/// The overview of run `run`, given the items the receipts say were taken back (`restored`,
/// from [`restored_items`]). A run directory without a manifest (a run killed before its first
/// line) has no items.
pub fn run_overview(
    root: &Root,
    run: &str,
    restored: &BTreeSet<String>,
    attribute: Attribute<'_>,
) -> Result<RunOverview, AdminError> {
    overview_and_torn(root, run, restored, attribute).map(|(o, _)| o)
}

/// [`run_overview`], and the torn lines of the run's manifest.
fn overview_and_torn(
    root: &Root,
    run: &str,
    restored: &BTreeSet<String>,
    attribute: Attribute<'_>,
) -> Result<(RunOverview, Vec<Problem>), AdminError> {
    let manifest = match read_manifest(root, run, attribute) {
        Ok(m) => m,
        Err(AdminError::NoSuchRun { .. }) if RunId::is_valid(run) => Manifest::default(),
        Err(e) => return Err(e),
    };
    let rules: BTreeSet<&str> = manifest
        .items
        .iter()
        .map(|i| i.rule.as_str())
        .chain(manifest.refused.iter().map(|r| r.rule.as_str()))
        .filter(|r| *r != crate::housekeeping::CODE)
        .collect();
    let overview = RunOverview {
        run: run.to_owned(),
        at: run_time(run),
        rules: rules.into_iter().map(str::to_owned).collect(),
        items: manifest.len() as u64,
        bytes: manifest.items.iter().filter_map(SetAsideItem::bytes).sum(),
        restored: manifest
            .items
            .iter()
            .filter(|i| restored.contains(&i.moved_to))
            .count() as u64,
        written_by_app: manifest.written_by_app(),
    };
    Ok((overview, manifest.torn))
}

/// Every set-aside run of S ([`run_dirs`]), each with its overview, and the problems met.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RunsOverview {
    /// The runs, oldest first.
    pub runs: Vec<RunOverview>,
    /// What could not be read (a manifest, the receipts, a line of either), each naming its
    /// path. A run whose manifest cannot be read is listed with no items and its problem here.
    pub errors: Vec<Problem>,
}

/// The overviews of every set-aside run of S.
pub fn list_runs(root: &Root, attribute: Attribute<'_>) -> Result<RunsOverview, AdminError> {
    let mut out = RunsOverview::default();
    let runs = run_dirs(root)?;
    if runs.is_empty() {
        return Ok(out);
    }
    let restored = restored_items(root, &mut out.errors).unwrap_or_else(|e| {
        out.errors.push(Problem::from(&e));
        BTreeSet::new()
    });
    for run in runs {
        match overview_and_torn(root, &run, &restored, attribute) {
            Ok((o, torn)) => {
                out.runs.push(o);
                out.errors.extend(torn);
            }
            Err(e) => {
                out.errors.push(match &e {
                    AdminError::Fs(fs) => Problem::from(fs),
                    _ => Problem::invalid_data(SET_ASIDE_DIR, e.to_string()),
                });
                out.runs.push(RunOverview {
                    at: run_time(&run),
                    run,
                    rules: Vec::new(),
                    items: 0,
                    bytes: 0,
                    restored: 0,
                    written_by_app: false,
                });
            }
        }
    }
    Ok(out)
}

/// Where an item of a set-aside run is now.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ItemState {
    /// In the run, as its manifest line says (its digest, or for a line without one, its kind).
    SetAside,
    /// Taken back out of the run, per the receipts ([`restored_items`]).
    Restored,
    /// Neither.
    Missing,
}

/// One item of a run's listing.
#[derive(Debug, Clone, PartialEq)]
pub struct ListedItem {
    /// The item, from its manifest line.
    pub item: SetAsideItem,
    /// Where it is now.
    pub state: ItemState,
    /// For a missing item: what was found instead.
    pub why: Option<String>,
}

/// What `sessions list RUN` shows of a set-aside run.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RunListing {
    /// The run id.
    pub run: String,
    /// Its items in manifest order (as [`read_manifest`] keeps it, later lines correcting
    /// earlier ones): item N of the listing, as `--item N` names it, is `items[N - 1]`.
    pub items: Vec<ListedItem>,
    /// Its lines that are refused or do not parse, with why.
    pub refused: Vec<RefusedLine>,
    /// Whether the app wrote (any line of) its manifest.
    pub written_by_app: bool,
    /// What could not be read (the receipts, a line of them), each naming its path.
    pub errors: Vec<Problem>,
}

/// The listing of run `run` (a run id): each item of its manifest and where it is now. A run
/// directory without a manifest has no items; no such directory is
/// [`AdminError::NoSuchRun`].
pub fn list_run(
    root: &Root,
    run: &str,
    attribute: Attribute<'_>,
) -> Result<RunListing, AdminError> {
    let manifest = match read_manifest(root, run, attribute) {
        Ok(m) => m,
        Err(AdminError::NoSuchRun { .. })
            if root
                .stat(Path::new(&format!("{SET_ASIDE_DIR}/{run}")))?
                .is_some_and(|s| s.kind == EntryKind::Dir) =>
        {
            Manifest::default()
        }
        Err(AdminError::NoSuchRun { run, .. }) if RunId::is_valid(&run) => {
            let dir = root.display_path(Path::new(&format!("{SET_ASIDE_DIR}/{run}")));
            return Err(AdminError::NoSuchRun {
                why: format!("{} does not exist", dir.display()),
                run,
            });
        }
        Err(e) => return Err(e),
    };
    let mut errors = manifest.torn.clone();
    let restored = restored_items(root, &mut errors).unwrap_or_else(|e| {
        errors.push(Problem::from(&e));
        BTreeSet::new()
    });
    let written_by_app = manifest.written_by_app();
    let items = manifest
        .items
        .into_iter()
        .map(|item| {
            let (state, why) = item_state(root, &item, &restored);
            ListedItem { item, state, why }
        })
        .collect();
    Ok(RunListing {
        run: run.to_owned(),
        items,
        refused: manifest.refused,
        written_by_app,
        errors,
    })
}

/// Where `item` is now: restored per the receipts; else set aside when what is at its
/// `moved_to` is what its line promises (for a line without a digest: there, as the kind it
/// says); else missing, with what was found instead.
fn item_state(
    root: &Root,
    item: &SetAsideItem,
    restored: &BTreeSet<String>,
) -> (ItemState, Option<String>) {
    if restored.contains(&item.moved_to) {
        return (ItemState::Restored, None);
    }
    let missing = |why: String| (ItemState::Missing, Some(why));
    let nothing_there = || {
        let at_original = item.promise.as_ref().is_some_and(|want| {
            found(root, &item.original, want).ok().flatten().as_ref() == Some(want)
        });
        if at_original {
            format!(
                "not in the run: it is at its original path {}",
                item.original
            )
        } else {
            format!("nothing at {}", item.moved_to)
        }
    };
    match &item.promise {
        Some(want) => match found(root, &item.moved_to, want) {
            Ok(Some(p)) if p == *want => (ItemState::SetAside, None),
            Ok(Some(_)) => missing(format!(
                "{} does not match its manifest line",
                item.moved_to
            )),
            Ok(None) => missing(nothing_there()),
            Err(e) => missing(e.to_string()),
        },
        None => match on_disk(root, item) {
            Ok(Some(_)) => (ItemState::SetAside, None),
            Ok(None) => missing(nothing_there()),
            Err(why) => missing(why),
        },
    }
}

#[cfg(test)]
// The tests build their stores with std::fs, outside the root under test.
#[allow(clippy::disallowed_methods, clippy::disallowed_types)]
mod tests {
    use super::*;
    use crate::records::ManifestLine;

    const RUN: &str = "20261129T120000Z-a1b2c3";
    const OLDER: &str = "20261128T120000Z-0f0f0f";

    fn write(dir: &Path, rel: &str, bytes: &[u8]) {
        let path = dir.join(rel);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, bytes).unwrap();
    }

    fn no_rule(_: Option<ItemKind>) -> String {
        "R1".into()
    }

    /// The doctor's manifest line for the file now at `.set-aside/RUN/<original>`.
    fn line(root: &Root, original: &str) -> String {
        let moved_to = format!("{SET_ASIDE_DIR}/{RUN}/{original}");
        let d = root.file_digest(Path::new(&moved_to)).unwrap();
        let l = ManifestLine {
            run: RUN.into(),
            rule: "R1".into(),
            original: original.into(),
            moved_to,
            reason: "unreadable document".into(),
            kind: ItemKind::Document,
            sha256: Some(d.sha256),
            tree_blake3: None,
            bytes: d.bytes,
            at: "2026-11-29T12:00:00Z".into(),
            rolled_back: false,
        };
        serde_json::to_string(&l).unwrap()
    }

    /// A record glued after a torn line cut just after a `:` (the whole line then reads as
    /// JSON that ends early, the record a nested value) is read, its item listed and restored;
    /// the torn part is named.
    #[test]
    fn a_record_glued_after_a_line_torn_after_a_colon_is_read() {
        let tmp = tempfile::tempdir().unwrap();
        let s = tmp.path();
        let run_dir = format!("{SET_ASIDE_DIR}/{RUN}");
        write(s, &format!("{run_dir}/a.json"), b"a");
        let root = Root::open(s).unwrap();
        let whole = line(&root, "a.json");
        let cut = whole.find("\"rule\":").unwrap() + "\"rule\":".len();
        let glued_line = format!("{}{whole}", &whole[..cut]);
        assert!(serde_json::from_str::<serde_json::Value>(&glued_line)
            .unwrap_err()
            .is_eof());
        write(s, &store::ids::manifest_path(RUN), glued_line.as_bytes());

        let m = read_manifest(&root, RUN, &no_rule).unwrap();
        let items: Vec<&str> = m.items.iter().map(|i| i.original.as_str()).collect();
        assert_eq!(items, ["a.json"], "{m:?}");
        assert!(m.refused.is_empty(), "{:?}", m.refused);
        assert_eq!(m.torn.len(), 1);
        assert!(m.torn[0].message.contains("begins with a record cut short"));
        let plan = plan_restore(&root, RUN, &[], &no_rule).unwrap();
        assert_eq!(plan.items_refused, 0, "{:?}", plan.skipped);
        assert_eq!(plan.plan.actions.len(), 1, "{:?}", plan.plan.actions);
    }

    /// A torn receipt whose last whole value is an object of a receipt's shape (its extra
    /// fields may hold any object) is not read as that receipt, which was never written.
    #[test]
    fn a_torn_receipt_ending_with_a_nested_object_is_no_receipt() {
        let tmp = tempfile::tempdir().unwrap();
        let s = tmp.path();
        let nested = serde_json::json!({
            "run": RUN, "seq": 1, "rule": "R1", "action": "restore", "path": "a.json",
            "outcome": "applied", "at": "2026-11-29T13:00:00Z"
        });
        let torn = format!(
            "{{\"run\":\"{OLDER}\",\"seq\":2,\"rule\":\"R1\",\"action\":\"set_aside\",\
             \"path\":\"b.json\",\"outcome\":\"applied\",\"at\":\"2026-11-29T13:00:00Z\",\
             \"detail\":{nested}"
        );
        write(s, store::ids::RECEIPTS_PATH, torn.as_bytes());
        let root = Root::open(s).unwrap();
        let mut problems = Vec::new();
        let read = receipts(&root, &mut problems).unwrap();
        assert!(read.is_empty(), "{read:?}");
        assert_eq!(problems.len(), 1, "{problems:?}");
        assert!(problems[0].message.contains("is a record cut short"));
    }

    /// A run whose lines are the app's, ending with a torn line: the app may write its line
    /// after the move (codewhale-format §9.5 does not say), so the torn line may name an item
    /// in the run. It is refused, and the restore is partial; the whole line's item goes back.
    #[test]
    fn a_torn_line_in_a_run_the_app_wrote_is_refused() {
        let tmp = tempfile::tempdir().unwrap();
        let s = tmp.path();
        let run_dir = format!("{SET_ASIDE_DIR}/{RUN}");
        write(s, &format!("{run_dir}/a.json"), b"a");
        write(s, &format!("{run_dir}/b.json"), b"b");
        let root = Root::open(s).unwrap();
        let canonical = s.canonicalize().unwrap();
        let d = root
            .file_digest(Path::new(&format!("{run_dir}/a.json")))
            .unwrap();
        let whole = serde_json::json!({
            "at": "2026-11-29T12:00:00Z",
            "detail": { "sha256": d.sha256, "bytes": d.bytes },
            "moved_to": canonical.join(&run_dir).join("a.json").to_string_lossy(),
            "original": canonical.join("a.json").to_string_lossy(),
            "reason": "set aside by the app"
        });
        let torn = r#"{"at":"2026-11-29T12:00:00Z","detail":{"sha256":"3e23"#;
        write(
            s,
            &store::ids::manifest_path(RUN),
            format!("{whole}\n{torn}").as_bytes(),
        );

        let m = read_manifest(&root, RUN, &no_rule).unwrap();
        assert!(m.torn.is_empty(), "{:?}", m.torn);
        assert_eq!(m.items.len(), 1);
        assert_eq!(m.refused.len(), 1, "{:?}", m.refused);
        assert!(
            m.refused[0].why.contains("is a record cut short")
                && m.refused[0].why.contains("may name an item"),
            "{:?}",
            m.refused
        );
        let plan = plan_restore(&root, RUN, &[], &no_rule).unwrap();
        assert_eq!(plan.items_refused, 1, "{:?}", plan.skipped);
        assert_eq!(plan.plan.actions.len(), 1, "{:?}", plan.plan.actions);
        assert_eq!(plan.plan.actions[0].path, "a.json");
    }

    /// S with run RUN: `a.json` in the run; `b.json` taken back by a receipted restore; `c.json`
    /// gone; `d.json` changed since; a store the app set aside (no digest); a line naming a
    /// path outside S; a line that is not a record; last, a torn line. Beside it: OLDER, a run
    /// without a manifest, and entries of `.set-aside/` that are not runs. The receipts hold
    /// the doctor's restore (glued after a torn line), a line the app wrote and a line that is
    /// neither.
    fn store() -> (tempfile::TempDir, Root) {
        let tmp = tempfile::tempdir().unwrap();
        let s = tmp.path();
        let run_dir = format!("{SET_ASIDE_DIR}/{RUN}");
        for name in ["a", "b", "c", "d"] {
            write(s, &format!("{run_dir}/{name}.json"), name.as_bytes());
        }
        write(s, &format!("{run_dir}/x/runtime/owner.json"), b"{}");
        std::fs::create_dir_all(s.join(SET_ASIDE_DIR).join(OLDER)).unwrap();
        std::fs::create_dir_all(s.join(SET_ASIDE_DIR).join("notarun")).unwrap();
        write(
            s,
            &format!("{SET_ASIDE_DIR}/20261130T120000Z-abcdef"),
            b"a file",
        );
        let root = Root::open(s).unwrap();
        let canonical = s.canonicalize().unwrap();
        let app = |original: &str, detail: serde_json::Value| {
            serde_json::json!({
                "at": "2026-11-29T12:00:00Z",
                "detail": detail,
                "moved_to": canonical.join(&run_dir).join(original).to_string_lossy(),
                "original": canonical.join(original).to_string_lossy(),
                "reason": "set aside by the app"
            })
            .to_string()
        };
        let outside = serde_json::json!({
            "at": "2026-11-29T12:00:00Z",
            "detail": null,
            "moved_to": canonical.join(&run_dir).join("escape.json").to_string_lossy(),
            "original": "/elsewhere/escape.json",
            "reason": "r"
        })
        .to_string();
        let manifest = [
            line(&root, "a.json"),
            line(&root, "b.json"),
            app("x/runtime", serde_json::json!({ "kind": "runtime_store" })),
            line(&root, "c.json"),
            line(&root, "d.json"),
            outside,
            "{\"run\": 7}".into(),
            "{\"run\": \"cut short".into(),
        ]
        .join("\n");
        write(s, &store::ids::manifest_path(RUN), manifest.as_bytes());
        std::fs::remove_file(s.join(&run_dir).join("b.json")).unwrap();
        write(s, "b.json", b"b");
        std::fs::remove_file(s.join(&run_dir).join("c.json")).unwrap();
        write(s, &format!("{run_dir}/d.json"), b"changed");
        let receipts = [
            // Glued after a torn line by a writer that did not terminate it.
            format!(
                "{{\"run\":\"x\",\"seq\":1,\"ru{}",
                serde_json::json!({
                    "run": "20261129T130000Z-000000", "seq": 1, "rule": "R1", "action": "restore",
                    "path": "b.json", "outcome": "applied", "at": "2026-11-29T13:00:00Z",
                    "from": format!("{run_dir}/b.json")
                })
            ),
            serde_json::json!({
                "action": "store_set_aside", "at": "2026-11-29T12:00:00Z",
                "path": "/s/x/runtime", "moved_to": "/s/.set-aside/x/runtime", "reason": "r"
            })
            .to_string(),
            "not a receipt".into(),
        ];
        write(
            s,
            store::ids::RECEIPTS_PATH,
            format!("{}\n", receipts.join("\n")).as_bytes(),
        );
        (tmp, root)
    }

    fn no_such_run(e: AdminError) -> (String, String) {
        match e {
            AdminError::NoSuchRun { run, why } => (run, why),
            other => panic!("not NoSuchRun: {other:?}"),
        }
    }

    #[test]
    fn a_run_is_named_by_its_id_latest_or_the_path_the_notice_line_prints() {
        let (tmp, root) = store();
        let abs = tmp.path().join(SET_ASIDE_DIR).join(RUN);
        let canonical = tmp
            .path()
            .canonicalize()
            .unwrap()
            .join(SET_ASIDE_DIR)
            .join(RUN);
        for given in [
            RUN.to_owned(),
            "latest".into(),
            format!(".set-aside/{RUN}"),
            format!(".set-aside/{RUN}/"),
            format!("./.set-aside/{RUN}"),
            format!("{}/", abs.display()),
            canonical.display().to_string(),
        ] {
            assert_eq!(resolve_run(&root, &given).unwrap(), RUN, "{given}");
        }
        // An id is taken as given: what reads the run says what is missing.
        assert_eq!(
            resolve_run(&root, "20990101T000000Z-abcdef").unwrap(),
            "20990101T000000Z-abcdef"
        );
        for given in [
            "nope",
            "Latest",
            ".set-aside/notarun",
            ".set-aside",
            "/elsewhere/.set-aside/20261129T120000Z-a1b2c3",
            "../S/.set-aside/20261129T120000Z-a1b2c3",
            "x/.set-aside/20261129T120000Z-a1b2c3",
        ] {
            let (run, why) = no_such_run(resolve_run(&root, given).unwrap_err());
            assert_eq!(run, given);
            assert!(!why.is_empty());
        }

        let empty = tempfile::tempdir().unwrap();
        let root = Root::open(empty.path()).unwrap();
        let (run, why) = no_such_run(resolve_run(&root, "latest").unwrap_err());
        assert_eq!(run, "latest");
        assert!(why.ends_with(".set-aside holds no set-aside run"), "{why}");
    }

    #[test]
    fn run_dirs_are_the_run_directories_oldest_first() {
        let (_tmp, root) = store();
        assert_eq!(run_dirs(&root).unwrap(), [OLDER, RUN]);
        assert_eq!(
            run_time(RUN),
            Timestamp::parse("2026-11-29T12:00:00Z"),
            "the time in the id"
        );
        assert_eq!(run_time("notarun"), None);
    }

    #[test]
    fn an_item_number_is_decimal_digits_from_one() {
        assert_eq!(item_number("1"), Some(1));
        assert_eq!(item_number("012"), Some(12));
        for given in [
            "0",
            "",
            "-1",
            "+1",
            " 1",
            "1a",
            "a.json",
            "99999999999999999999999",
        ] {
            assert_eq!(item_number(given), None, "{given:?}");
        }
    }

    #[test]
    fn a_manifest_is_the_apps_when_any_of_its_lines_is() {
        let item = |writer| SetAsideItem {
            original: "a.json".into(),
            original_as_written: "a.json".into(),
            moved_to: format!(".set-aside/{RUN}/a.json"),
            rule: "R1".into(),
            reason: String::new(),
            kind: Some(ItemKind::Document),
            promise: None,
            writer,
        };
        let refused = |writer| RefusedLine {
            original: "/elsewhere/a.json".into(),
            rule: "R1".into(),
            why: "outside".into(),
            writer,
        };
        let manifest = |items: Vec<SetAsideItem>, refused: Vec<RefusedLine>| Manifest {
            items,
            refused,
            torn: Vec::new(),
        };
        assert!(!manifest(vec![], vec![]).written_by_app());
        assert!(
            !manifest(vec![item(Writer::Doctor)], vec![refused(Writer::Doctor)]).written_by_app()
        );
        assert!(manifest(vec![item(Writer::Doctor), item(Writer::App)], vec![]).written_by_app());
        assert!(manifest(vec![item(Writer::Doctor)], vec![refused(Writer::App)]).written_by_app());
        assert!(manifest(vec![], vec![refused(Writer::App)]).written_by_app());

        assert!(manifest(vec![], vec![]).is_empty());
        for m in [
            manifest(vec![item(Writer::Doctor)], vec![]),
            manifest(vec![], vec![refused(Writer::Doctor)]),
        ] {
            assert!(!m.is_empty());
            assert_eq!(m.len(), 1);
        }
    }

    #[test]
    fn an_app_lines_detail_gives_its_kind_and_digest() {
        let kind = |k: &str| app_kind(&Some(AppDetail::Kind { kind: k.into() }));
        assert_eq!(kind("runtime_store"), (Some(ItemKind::RuntimeStore), None));
        assert_eq!(kind("directory"), (Some(ItemKind::Directory), None));
        assert_eq!(kind("thread"), (None, None));
        assert_eq!(app_kind(&None), (None, None));
        let file = AppDetail::File {
            sha256: "AB01".into(),
            bytes: 2,
        };
        assert_eq!(
            app_kind(&Some(file)),
            (
                Some(ItemKind::Document),
                Some(Precondition::File {
                    bytes: 2,
                    sha256: "ab01".into()
                })
            )
        );
    }

    /// Lines whose original is one of the doctor's own directories, or climbs out of S, are
    /// refused by name; a name that only begins like them is not, and `..` is resolved
    /// lexically (above `/` it stays at `/`).
    #[test]
    fn a_line_naming_the_doctors_own_directories_or_climbing_out_of_s_is_refused() {
        let tmp = tempfile::tempdir().unwrap();
        let s = tmp.path();
        std::fs::create_dir_all(s.join(SET_ASIDE_DIR).join(RUN)).unwrap();
        let root = Root::open(s).unwrap();
        let canonical = s.canonicalize().unwrap();
        // The app's line below climbs above the root first: spelled on S's canonical path,
        // except on Windows, where a verbatim path (`\\?\C:\`) means its `..` literally.
        let beside = if cfg!(windows) { s } else { &canonical };
        let climbing_above_the_root = |p: &Path| {
            let mut parts = p.components();
            let mut out: std::path::PathBuf = parts
                .by_ref()
                .take_while(|c| *c != std::path::Component::RootDir)
                .collect();
            out.push(std::path::Component::RootDir);
            out.extend(["..", ".."]);
            out.extend(parts);
            out
        };
        let doctor_line = |n: usize, original: &str| {
            serde_json::to_string(&ManifestLine {
                run: RUN.into(),
                rule: "R1".into(),
                original: original.into(),
                moved_to: format!("{SET_ASIDE_DIR}/{RUN}/item{n}"),
                reason: "unreadable document".into(),
                kind: ItemKind::Document,
                sha256: Some("0".repeat(64)),
                tree_blake3: None,
                bytes: 1,
                at: "2026-11-29T12:00:00Z".into(),
                rolled_back: false,
            })
            .unwrap()
        };
        let originals = [
            ".reconcile",
            ".reconcile/receipts.jsonl",
            ".set-aside",
            ".set-aside/20261128T120000Z-0f0f0f/a.json",
            "../outside.json",
            "a/../../outside.json",
            ".reconciled.json",
            ".set-aside-notes/a.json",
            "a/../b.json",
        ];
        let mut lines: Vec<String> = originals
            .iter()
            .enumerate()
            .map(|(n, o)| doctor_line(n, o))
            .collect();
        lines.push(
            serde_json::json!({
                "at": "2026-11-29T12:00:00Z",
                "detail": null,
                "moved_to": canonical.join(SET_ASIDE_DIR).join(RUN).join("z.json"),
                "original": climbing_above_the_root(&beside.join("z.json")),
                "reason": "set aside by the app"
            })
            .to_string(),
        );
        write(
            s,
            &store::ids::manifest_path(RUN),
            lines.join("\n").as_bytes(),
        );

        let m = read_manifest(&root, RUN, &no_rule).unwrap();
        let kept: Vec<&str> = m.items.iter().map(|i| i.original.as_str()).collect();
        assert_eq!(
            kept,
            [
                ".reconciled.json",
                ".set-aside-notes/a.json",
                "b.json",
                "z.json"
            ]
        );
        let refused: Vec<(&str, bool)> = m
            .refused
            .iter()
            .map(|r| {
                (
                    r.original.as_str(),
                    r.why.contains("inside the doctor's own directories"),
                )
            })
            .collect();
        assert_eq!(
            refused,
            [
                (".reconcile", true),
                (".reconcile/receipts.jsonl", true),
                (".set-aside", true),
                (".set-aside/20261128T120000Z-0f0f0f/a.json", true),
                ("../outside.json", false),
                ("a/../../outside.json", false),
            ]
        );
        for r in &m.refused[4..] {
            assert!(r.why.contains("is outside the sessions directory"), "{r:?}");
        }
    }

    /// `.set-aside` as a symlink is an error naming it, not a store without runs; a manifest
    /// that cannot be read is a problem naming the manifest.
    /// An absolute path in the OS's own form (`\` on Windows) is named relative to S with `/`,
    /// as every record the doctor writes names it (docs/decisions.md, "Issue 22: portable
    /// paths").
    #[test]
    fn an_absolute_path_under_s_is_named_with_slashes() {
        let tmp = tempfile::tempdir().unwrap();
        let root = Root::open(tmp.path()).unwrap();
        let abs = root
            .canonical_anchor()
            .join(SET_ASIDE_DIR)
            .join(RUN)
            .join("a")
            .join("runtime");
        assert_eq!(
            relative_to_s(&root, abs.to_str().unwrap()),
            Ok(format!("{SET_ASIDE_DIR}/{RUN}/a/runtime"))
        );
    }

    // Makes a symlink (Unix).
    #[cfg(unix)]
    #[test]
    fn what_cannot_be_listed_or_read_is_an_error_not_an_empty_list() {
        let tmp = tempfile::tempdir().unwrap();
        let s = tmp.path().join("S");
        std::fs::create_dir_all(tmp.path().join("real").join(RUN)).unwrap();
        std::fs::create_dir(&s).unwrap();
        std::os::unix::fs::symlink(tmp.path().join("real"), s.join(SET_ASIDE_DIR)).unwrap();
        let root = Root::open(&s).unwrap();
        assert!(run_dirs(&root).unwrap_err().is_symlink());
        assert!(matches!(
            resolve_run(&root, "latest"),
            Err(AdminError::Fs(e)) if e.is_symlink()
        ));

        let empty = tempfile::tempdir().unwrap();
        let root = Root::open(empty.path()).unwrap();
        assert_eq!(
            run_dirs(&root).unwrap(),
            Vec::<String>::new(),
            "no .set-aside"
        );

        let (_tmp, root) = store();
        let manifest = store::ids::manifest_path(OLDER);
        std::fs::create_dir(root.anchor().join(&manifest)).unwrap();
        let all = list_runs(&root, &no_rule).unwrap();
        let older = all.runs.iter().find(|r| r.run == OLDER).unwrap();
        assert_eq!(older.items, 0);
        assert!(
            all.errors.iter().any(|p| p.path.ends_with(&manifest)),
            "{:?}",
            all.errors
        );
    }

    /// A name that is not a run id has no overview or listing; a run without a manifest has no
    /// items.
    #[test]
    fn only_a_run_id_has_an_overview() {
        let (_tmp, root) = store();
        let none = BTreeSet::new();
        assert!(matches!(
            run_overview(&root, "notarun", &none, &no_rule),
            Err(AdminError::NoSuchRun { .. })
        ));
        assert_eq!(
            run_overview(&root, OLDER, &none, &no_rule).unwrap().items,
            0
        );
        // Listing one says which: not a run id, or a run id with no directory.
        let why = |run: &str| match list_run(&root, run, &no_rule) {
            Err(AdminError::NoSuchRun { why, .. }) => why,
            other => panic!("{other:?}"),
        };
        assert!(why("nosuchrun").starts_with("not a run id"));
        assert!(why("20250101T000000Z-abcdef").ends_with("does not exist"));
    }

    #[test]
    fn a_run_lists_each_item_with_where_it_is_now() {
        let (_tmp, root) = store();
        let listed = list_run(&root, RUN, &no_rule).unwrap();
        let rows: Vec<(&str, ItemState)> = listed
            .items
            .iter()
            .map(|l| (l.item.original.as_str(), l.state))
            .collect();
        assert_eq!(
            rows,
            [
                ("a.json", ItemState::SetAside),
                ("b.json", ItemState::Restored),
                ("x/runtime", ItemState::SetAside),
                ("c.json", ItemState::Missing),
                ("d.json", ItemState::Missing),
            ],
            "manifest order"
        );
        let why = |n: usize| listed.items[n].why.as_deref().unwrap();
        assert_eq!(why(3), format!("nothing at .set-aside/{RUN}/c.json"));
        assert_eq!(
            why(4),
            format!(".set-aside/{RUN}/d.json does not match its manifest line")
        );
        assert_eq!(listed.items[0].item.bytes(), Some(1));
        assert_eq!(listed.items[2].item.bytes(), None, "the app records none");
        assert!(listed.written_by_app);
        assert_eq!(listed.refused.len(), 2, "{:?}", listed.refused);
        assert!(listed.refused[0].why.contains("/elsewhere/escape.json"));
        assert!(listed.refused[1].why.contains("is not a record"));
        // The torn line of the manifest, the torn start of the receipt glued after it (the
        // receipt itself is read: b.json is restored), and the receipt line that is neither.
        let errors: Vec<&str> = listed.errors.iter().map(|e| e.message.as_str()).collect();
        assert_eq!(errors.len(), 3, "{errors:#?}");
        assert!(
            errors[0].starts_with("line 8 of ")
                && errors[0].contains("MANIFEST.jsonl is a record cut short"),
            "{errors:#?}"
        );
        assert!(
            errors[1].starts_with("line 1 of ")
                && errors[1].contains("receipts.jsonl begins with a record cut short"),
            "{errors:#?}"
        );
        assert!(errors[2].contains("line 3 of"), "{errors:#?}");

        // A run without a manifest has no items; a run that is not there is no run.
        assert!(list_run(&root, OLDER, &no_rule).unwrap().items.is_empty());
        let (_, why) =
            no_such_run(list_run(&root, "20990101T000000Z-abcdef", &no_rule).unwrap_err());
        assert!(
            why.ends_with("20990101T000000Z-abcdef does not exist"),
            "{why}"
        );
    }

    #[test]
    fn each_run_is_counted_from_its_manifest_and_the_receipts() {
        let (_tmp, root) = store();
        let listed = list_runs(&root, &no_rule).unwrap();
        assert_eq!(listed.runs.len(), 2);
        assert_eq!(
            listed.runs[0],
            RunOverview {
                run: OLDER.into(),
                at: Timestamp::parse("2026-11-28T12:00:00Z"),
                rules: Vec::new(),
                items: 0,
                bytes: 0,
                restored: 0,
                written_by_app: false,
            }
        );
        assert_eq!(
            listed.runs[1],
            RunOverview {
                run: RUN.into(),
                at: Timestamp::parse("2026-11-29T12:00:00Z"),
                rules: vec!["R1".into()],
                items: 7,
                bytes: 4,
                restored: 1,
                written_by_app: true,
            },
            "refused lines count as items; a line that does not parse names no rule; a torn \
             line is no item"
        );
        assert_eq!(listed.errors.len(), 3, "{:?}", listed.errors);
    }

    #[test]
    fn restore_takes_items_by_path_or_by_number_in_the_listing() {
        let (_tmp, root) = store();
        let paths = |items: &[&str]| -> Vec<String> {
            let items: Vec<String> = items.iter().map(|s| (*s).to_owned()).collect();
            let planned = plan_restore(&root, RUN, &items, &no_rule).unwrap();
            planned
                .plan
                .actions
                .iter()
                .map(|a| a.path.clone())
                .collect()
        };
        assert_eq!(paths(&["1"]), ["a.json"]);
        assert_eq!(paths(&["3", "a.json"]), ["a.json", "x/runtime"]);
        for given in ["6", "0", "zz.json"] {
            match plan_restore(&root, RUN, &[given.to_owned()], &no_rule) {
                Err(AdminError::NoSuchItem { run, item }) => {
                    assert_eq!((run.as_str(), item.as_str()), (RUN, given))
                }
                other => panic!("{given}: {other:?}"),
            }
        }
        // The whole run: what cannot go back is refused and counted; what is back is not.
        let all = plan_restore(&root, RUN, &[], &no_rule).unwrap();
        assert_eq!(
            all.items_refused, 4,
            "c, d, the line outside S, the broken line"
        );
        assert_eq!(all.documents_kept, 0);
        assert!(all
            .skipped
            .iter()
            .any(|k| k.path == "b.json" && k.why == "already restored"));
    }
}
