//! Naming and listing set-aside runs: [`resolve_run`] (a run id, `latest`, or the
//! `.set-aside/<run>` path the notice line prints), [`list_runs`] and [`list_run`], and their
//! reports ([`RunsReport`], [`RunReport`]) in JSON and as text. What is read of the store is
//! read by `engine::admin`; this module opens the root and presents it.

use std::fmt::Write as _;

use engine::admin::{ItemState, RunOverview};
use engine::Problem;
use fsroot::Root;
use plan::ItemKind;
use serde::Serialize;

use crate::admin::app_line_rule;
use crate::output::human_bytes;
use crate::repair::{absolute, open_error};
use crate::{Error, RepairOptions};
use sessions::count;

fn open(opts: &RepairOptions) -> Result<Root, Error> {
    Root::open(&opts.sessions_dir).map_err(|e| open_error(&opts.sessions_dir, e))
}

/// The run id `given` names: a run id (as given: what reads the run says whether it exists),
/// `latest` (the newest run directory under `.set-aside/`: by the time in its id, then by the
/// receipts' order), or the path the notice
/// line prints, `.set-aside/<run>` (relative to S, or absolute under S; a trailing `/` is
/// fine). Anything else, and `latest` when there is no run, is [`Error::NoSuchRun`] naming
/// what was given (exit 2).
pub fn resolve_run(opts: &RepairOptions, given: &str) -> Result<String, Error> {
    let root = open(opts)?;
    Ok(engine::admin::resolve_run(&root, given)?)
}

/// `sessions list`: every set-aside run of S, oldest first.
pub fn list_runs(opts: &RepairOptions) -> Result<RunsReport, Error> {
    let root = open(opts)?;
    let listed = engine::admin::list_runs(&root, &app_line_rule)?;
    Ok(RunsReport {
        schema_version: 1,
        sessions_dir: absolute(&opts.sessions_dir),
        runs: listed.runs.into_iter().map(RunEntry::from).collect(),
        errors: listed.errors,
    })
}

/// `sessions list RUN`: the items of run `run` (any form [`resolve_run`] accepts), numbered
/// from 1 in manifest order as `restore --item N` takes them, each with where it is now; then
/// the lines that are refused or do not parse. No such run: [`Error::NoSuchRun`].
pub fn list_run(opts: &RepairOptions, run: &str) -> Result<RunReport, Error> {
    let root = open(opts)?;
    let run = engine::admin::resolve_run(&root, run)?;
    let listed = engine::admin::list_run(&root, &run, &app_line_rule)?;
    let items = listed
        .items
        .into_iter()
        .enumerate()
        .map(|(i, l)| RunItem {
            number: i as u64 + 1,
            rule: l.item.rule.clone(),
            kind: l.item.kind,
            bytes: l.item.bytes(),
            original: l.item.original,
            moved_to: l.item.moved_to,
            state: l.state,
            why: l.why,
        })
        .collect();
    let refused = listed
        .refused
        .into_iter()
        .map(|r| RefusedItem {
            rule: r.rule,
            original: (!r.original.is_empty()).then_some(r.original),
            why: r.why,
        })
        .collect();
    Ok(RunReport {
        schema_version: 1,
        sessions_dir: absolute(&opts.sessions_dir),
        at: engine::admin::run_time(&run).map(|t| t.to_string()),
        run,
        written_by_app: listed.written_by_app,
        items,
        refused,
        errors: listed.errors,
    })
}

/// The JSON document of `sessions list` (`docs/schemas/list-output.schema.json`, its `runs`
/// shape).
#[derive(Debug, Clone, Serialize)]
pub struct RunsReport {
    /// Format version (1).
    pub schema_version: u64,
    /// Absolute S.
    pub sessions_dir: String,
    /// The set-aside runs, oldest first.
    pub runs: Vec<RunEntry>,
    /// What could not be read (a manifest, the receipts, a line of either), each naming its
    /// path; a run whose manifest cannot be read is listed with no items.
    pub errors: Vec<Problem>,
}

/// One set-aside run of [`RunsReport`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct RunEntry {
    /// Run id (the directory name).
    pub run: String,
    /// The time in the id, RFC 3339.
    pub at: Option<String>,
    /// The distinct rule codes of its manifest lines, sorted.
    pub rules: Vec<String>,
    /// The manifest lines that name an item, refused ones included.
    pub items: u64,
    /// The sum of the sizes its manifest lines record (an app line for a store or a directory
    /// records none).
    pub bytes: u64,
    /// The items already taken back out of the run (per the receipts).
    pub restored: u64,
    /// Whether the app wrote (any line of) its manifest.
    pub written_by_app: bool,
}

impl From<RunOverview> for RunEntry {
    fn from(o: RunOverview) -> RunEntry {
        RunEntry {
            at: o.at.map(|t| t.to_string()),
            run: o.run,
            rules: o.rules,
            items: o.items,
            bytes: o.bytes,
            restored: o.restored,
            written_by_app: o.written_by_app,
        }
    }
}

/// The JSON document of `sessions list RUN` (`docs/schemas/list-output.schema.json`, its `run`
/// shape).
#[derive(Debug, Clone, Serialize)]
pub struct RunReport {
    /// Format version (1).
    pub schema_version: u64,
    /// Absolute S.
    pub sessions_dir: String,
    /// Run id.
    pub run: String,
    /// The time in the id, RFC 3339.
    pub at: Option<String>,
    /// Whether the app wrote (any line of) its manifest.
    pub written_by_app: bool,
    /// Its items, numbered from 1 in manifest order.
    pub items: Vec<RunItem>,
    /// Its lines that are refused (a path outside S) or do not parse: never restored.
    pub refused: Vec<RefusedItem>,
    /// What could not be read (the receipts, a line of them), each naming its path.
    pub errors: Vec<Problem>,
}

/// One item of [`RunReport`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct RunItem {
    /// Its number: `restore --item N` restores it.
    pub number: u64,
    /// The rule that set it aside (for an app line: the rule that sets aside its kind).
    pub rule: String,
    /// What it is; `None` for an app line that does not say.
    pub kind: Option<ItemKind>,
    /// Where it was, relative to S.
    pub original: String,
    /// Where it is in the run, relative to S.
    pub moved_to: String,
    /// The size its manifest line records; `None` when it records none.
    pub bytes: Option<u64>,
    /// `set_aside`, `restored` or `missing`.
    pub state: ItemState,
    /// For a missing item: what was found instead.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub why: Option<String>,
}

/// A refused or unparseable manifest line of [`RunReport`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct RefusedItem {
    /// The rule of the line (`doctor` for a line that does not parse).
    pub rule: String,
    /// Its `original` as written; `None` for a line that does not parse.
    pub original: Option<String>,
    /// Why it is refused, naming the path or the line.
    pub why: String,
}

/// `set aside`, `restored`, `missing`.
fn state_words(state: ItemState) -> &'static str {
    match state {
        ItemState::SetAside => "set aside",
        ItemState::Restored => "restored",
        ItemState::Missing => "missing",
    }
}

fn kind_words(kind: Option<ItemKind>) -> &'static str {
    match kind {
        Some(ItemKind::Document) => "document",
        Some(ItemKind::RuntimeStore) => "runtime store",
        Some(ItemKind::Directory) => "directory",
        Some(ItemKind::PreviousVersion) => "previous version",
        Some(ItemKind::TemporaryFile) => "temporary file",
        None => "-",
    }
}

/// `9 items, 1 restored, 12.3 KiB`.
fn run_counts(items: u64, restored: u64, bytes: u64) -> String {
    let mut s = count(items, "item", "items");
    if restored > 0 {
        let _ = write!(s, ", {restored} restored");
    }
    let _ = write!(s, ", {}", human_bytes(bytes));
    s
}

/// Rows of cells as aligned columns, two spaces apart; the last column is not padded.
fn table(rows: &[Vec<String>]) -> String {
    let columns = rows.iter().map(Vec::len).max().unwrap_or(0);
    let widths: Vec<usize> = (0..columns)
        .map(|c| {
            rows.iter()
                .filter_map(|r| r.get(c))
                .map(|cell| cell.chars().count())
                .max()
                .unwrap_or(0)
        })
        .collect();
    let mut s = String::new();
    for row in rows {
        let mut line = String::new();
        for (c, cell) in row.iter().enumerate() {
            if c + 1 == row.len() {
                line.push_str(cell);
            } else {
                let _ = write!(line, "{cell:<w$}  ", w = widths[c]);
            }
        }
        let _ = writeln!(s, "{}", line.trim_end());
    }
    s
}

impl RunsReport {
    /// The human form: the sessions directory, one row per run (id, time, rules, items, size),
    /// the number of runs, then the errors.
    pub fn render_human(&self) -> String {
        let mut s = String::new();
        let _ = writeln!(s, "sessions directory: {}", self.sessions_dir);
        if !self.runs.is_empty() {
            let mut rows = vec![["RUN", "TIME", "RULES", "ITEMS", ""]
                .map(str::to_owned)
                .to_vec()];
            for r in &self.runs {
                rows.push(vec![
                    r.run.clone(),
                    r.at.clone().unwrap_or_else(|| "-".into()),
                    if r.rules.is_empty() {
                        "-".into()
                    } else {
                        r.rules.join(",")
                    },
                    run_counts(r.items, r.restored, r.bytes),
                    if r.written_by_app {
                        "written by the app".into()
                    } else {
                        String::new()
                    },
                ]);
            }
            s.push_str(&table(&rows));
        }
        let _ = writeln!(
            s,
            "{}",
            match self.runs.len() {
                0 => "no set-aside runs".to_owned(),
                n => count(n as u64, "set-aside run", "set-aside runs"),
            }
        );
        for e in &self.errors {
            let _ = writeln!(s, "error: {e}");
        }
        s
    }
}

impl RunReport {
    /// The human form: the sessions directory, the run with its counts, one numbered row per
    /// item (rule, kind, state, size, original path; for a missing item, what was found), the
    /// refused lines with why, then the errors.
    pub fn render_human(&self) -> String {
        let mut s = String::new();
        let _ = writeln!(s, "sessions directory: {}", self.sessions_dir);
        let restored = self
            .items
            .iter()
            .filter(|i| i.state == ItemState::Restored)
            .count() as u64;
        let bytes = self.items.iter().filter_map(|i| i.bytes).sum();
        let total = (self.items.len() + self.refused.len()) as u64;
        let _ = writeln!(
            s,
            "set-aside run {}{}: {}{}",
            self.run,
            self.at
                .as_ref()
                .map(|at| format!(" ({at})"))
                .unwrap_or_default(),
            run_counts(total, restored, bytes),
            if self.written_by_app {
                "; written by the app"
            } else {
                ""
            }
        );
        if !self.items.is_empty() {
            let mut rows = vec![["#", "RULE", "KIND", "STATE", "SIZE", "PATH"]
                .map(str::to_owned)
                .to_vec()];
            for i in &self.items {
                let mut path = i.original.clone();
                if let Some(why) = &i.why {
                    let _ = write!(path, "  ({why})");
                }
                rows.push(vec![
                    i.number.to_string(),
                    i.rule.clone(),
                    kind_words(i.kind).into(),
                    state_words(i.state).into(),
                    i.bytes.map_or_else(|| "-".into(), human_bytes),
                    path,
                ]);
            }
            s.push_str(&table(&rows));
        }
        for r in &self.refused {
            let _ = writeln!(s, "refused line ({}): {}", r.rule, r.why);
        }
        for e in &self.errors {
            let _ = writeln!(s, "error: {e}");
        }
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn item(number: u64, state: ItemState, why: Option<&str>) -> RunItem {
        RunItem {
            number,
            rule: "R1".into(),
            kind: Some(ItemKind::Document),
            original: format!("doc{number}.json"),
            moved_to: format!(".set-aside/20261129T120000Z-a1b2c3/doc{number}.json"),
            bytes: Some(1536),
            state,
            why: why.map(str::to_owned),
        }
    }

    #[test]
    fn a_table_aligns_its_columns_and_leaves_the_last_unpadded() {
        let rows = vec![
            vec!["#".to_owned(), "RULE".into(), "PATH".into()],
            vec!["10".to_owned(), "R1".into(), "a.json".into()],
        ];
        assert_eq!(table(&rows), "#   RULE  PATH\n10  R1    a.json\n");
        assert_eq!(table(&[]), "");
    }

    #[test]
    fn counts_have_correct_plurals_and_human_sizes() {
        assert_eq!(run_counts(1, 0, 0), "1 item, 0 B");
        assert_eq!(run_counts(2, 1, 1536), "2 items, 1 restored, 1.5 KiB");
        assert_eq!(run_counts(0, 0, 5 * 1024 * 1024), "0 items, 5.0 MiB");
    }

    #[test]
    fn the_list_of_runs_reads_as_a_table() {
        let mut report = RunsReport {
            schema_version: 1,
            sessions_dir: "/s".into(),
            runs: vec![
                RunEntry {
                    run: "20261129T120000Z-a1b2c3".into(),
                    at: Some("2026-11-29T12:00:00Z".into()),
                    rules: vec!["R1".into(), "R2".into()],
                    items: 6,
                    bytes: 1536,
                    restored: 5,
                    written_by_app: false,
                },
                RunEntry {
                    run: "20261130T120000Z-d4e5f6".into(),
                    at: Some("2026-11-30T12:00:00Z".into()),
                    rules: vec!["R1".into()],
                    items: 1,
                    bytes: 10,
                    restored: 0,
                    written_by_app: true,
                },
            ],
            errors: Vec::new(),
        };
        assert_eq!(
            report.render_human(),
            "sessions directory: /s\n\
             RUN                      TIME                  RULES  ITEMS\n\
             20261129T120000Z-a1b2c3  2026-11-29T12:00:00Z  R1,R2  6 items, 5 restored, 1.5 KiB\n\
             20261130T120000Z-d4e5f6  2026-11-30T12:00:00Z  R1     1 item, 10 B                  written by the app\n\
             2 set-aside runs\n"
        );
        report.runs.clear();
        assert_eq!(
            report.render_human(),
            "sessions directory: /s\nno set-aside runs\n"
        );
        report.runs.push(RunEntry {
            run: "20261129T120000Z-a1b2c3".into(),
            at: None,
            rules: Vec::new(),
            items: 0,
            bytes: 0,
            restored: 0,
            written_by_app: false,
        });
        assert!(report.render_human().ends_with("\n1 set-aside run\n"));
    }

    #[test]
    fn a_run_lists_its_items_numbered_with_their_state() {
        let report = RunReport {
            schema_version: 1,
            sessions_dir: "/s".into(),
            run: "20261129T120000Z-a1b2c3".into(),
            at: Some("2026-11-29T12:00:00Z".into()),
            written_by_app: false,
            items: vec![
                item(1, ItemState::SetAside, None),
                item(2, ItemState::Restored, None),
                item(3, ItemState::Missing, Some("nothing at x")),
            ],
            refused: vec![RefusedItem {
                rule: "doctor".into(),
                original: None,
                why: "line 4 of M is not a record".into(),
            }],
            errors: Vec::new(),
        };
        assert_eq!(
            report.render_human(),
            "sessions directory: /s\n\
             set-aside run 20261129T120000Z-a1b2c3 (2026-11-29T12:00:00Z): 4 items, 1 restored, 4.5 KiB\n\
             #  RULE  KIND      STATE      SIZE     PATH\n\
             1  R1    document  set aside  1.5 KiB  doc1.json\n\
             2  R1    document  restored   1.5 KiB  doc2.json\n\
             3  R1    document  missing    1.5 KiB  doc3.json  (nothing at x)\n\
             refused line (doctor): line 4 of M is not a record\n"
        );
        let json = serde_json::to_value(&report).unwrap();
        assert_eq!(json["items"][0]["state"], "set_aside");
        assert!(json["items"][0].get("why").is_none());
        assert_eq!(json["items"][2]["why"], "nothing at x");
        assert_eq!(json["refused"][0]["original"], serde_json::Value::Null);
    }
}
