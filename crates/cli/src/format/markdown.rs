//! The `markdown` format, fit for a pull-request comment and `$GITHUB_STEP_SUMMARY`: a heading,
//! the counts per rule, the actions (the first [`INLINE_ACTIONS`] inline, the rest folded in a
//! `<details>` block), the kept items, the errors and the summary line; and the escaping that
//! keeps any path or reason inside its table cell.

use std::fmt::Write as _;

use plan::OutcomeKind;

use super::{actions, ActionView, View};

/// How many actions the table shows before the rest are folded into a `<details>` block.
pub const INLINE_ACTIONS: usize = 100;

/// The markdown report of a run. The same view gives the same bytes.
pub fn markdown(v: &dyn View) -> String {
    let dry_run = v.dry_run();
    let mut out = String::new();
    let _ = writeln!(
        out,
        "## doctor {} ({})\n",
        v.command(),
        if dry_run { "dry run" } else { "real run" }
    );
    let targets = v.targets();
    let label = match (v.command().starts_with("build-dirs"), targets.len()) {
        (false, _) => "Sessions directory",
        (true, 1) => "Root",
        (true, _) => "Roots",
    };
    let shown: Vec<String> = targets.iter().map(|t| text(t)).collect();
    let _ = writeln!(out, "{label}: {}", shown.join(", "));
    if dry_run {
        out.push_str("\nNothing was written.\n");
    }

    let all = actions(v);
    let kept = v.kept();
    out.push_str("\n### Rules\n\n");
    if dry_run {
        out.push_str("| rule | name | planned | kept |\n|---|---|---:|---:|\n");
    } else {
        out.push_str("| rule | name | planned | applied | kept |\n|---|---|---:|---:|---:|\n");
    }
    for (code, name) in v.rules() {
        let planned = all.iter().filter(|a| a.action.rule == code).count();
        let kept_n = kept.iter().filter(|k| k.rule == code).count();
        let _ = write!(out, "| {} | {} | {planned} |", text(&code), text(&name));
        if !dry_run {
            let applied = all
                .iter()
                .filter(|a| {
                    a.action.rule == code
                        && a.outcome.is_some_and(|o| o.outcome == OutcomeKind::Applied)
                })
                .count();
            let _ = write!(out, " {applied} |");
        }
        let _ = writeln!(out, " {kept_n} |");
    }

    out.push_str("\n### Actions\n\n");
    if all.is_empty() {
        out.push_str(if dry_run {
            "No action planned.\n"
        } else {
            "No action.\n"
        });
    } else {
        let (inline, folded) = all.split_at(all.len().min(INLINE_ACTIONS));
        action_table(&mut out, inline, dry_run);
        if !folded.is_empty() {
            let _ = writeln!(
                out,
                "\n<details>\n<summary>{} more action{}</summary>\n",
                folded.len(),
                if folded.len() == 1 { "" } else { "s" }
            );
            action_table(&mut out, folded, dry_run);
            out.push_str("\n</details>\n");
        }
    }

    if !kept.is_empty() {
        out.push_str("\n### Kept\n\n");
        for k in &kept {
            let _ = writeln!(
                out,
                "- {} ({}): {}",
                text(&k.path),
                text(&k.rule),
                text(&k.why)
            );
        }
    }
    let errors = v.errors();
    if !errors.is_empty() {
        out.push_str("\n### Errors\n\n");
        for e in &errors {
            let _ = writeln!(out, "- {}", text(e));
        }
    }
    let _ = writeln!(out, "\n**{}**", text(&v.summary_line()));
    out
}

/// A table of `actions`: seq, rule, action, path, reason, and the outcome in a real run.
fn action_table(out: &mut String, actions: &[ActionView<'_>], dry_run: bool) {
    if dry_run {
        out.push_str("| seq | rule | action | path | reason |\n|---:|---|---|---|---|\n");
    } else {
        out.push_str(
            "| seq | rule | action | path | reason | outcome |\n|---:|---|---|---|---|---|\n",
        );
    }
    for a in actions {
        let pa = a.action;
        let _ = write!(
            out,
            "| {} | {} | {} | {} | {} |",
            pa.seq,
            text(&pa.rule),
            pa.action.kind().verb(),
            text(&a.path()),
            text(&pa.reason)
        );
        if let Some(outcome) = a.outcome_text() {
            let _ = write!(out, " {} |", text(&outcome));
        } else if !dry_run {
            out.push_str(" |");
        }
        out.push('\n');
    }
}

/// `s` as markdown text that renders as itself on one line, also inside a table cell: every
/// ASCII punctuation character that could start markup (emphasis, code, links, HTML, entities,
/// strikethrough) or end a cell (`|`) is backslash-escaped, and each line break (CRLF, CR or
/// LF) becomes `<br>`.
fn text(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut chars = s.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\r' => {
                if chars.peek() == Some(&'\n') {
                    chars.next();
                }
                out.push_str("<br>");
            }
            '\n' => out.push_str("<br>"),
            '\\' | '`' | '*' | '_' | '[' | ']' | '<' | '>' | '|' | '~' | '&' => {
                out.push('\\');
                out.push(c);
            }
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::format::test_reports;

    #[test]
    fn cells_escape_pipes_newlines_and_markup() {
        assert_eq!(text("a|b"), "a\\|b");
        assert_eq!(text("a\nb\r\nc\rd"), "a<br>b<br>c<br>d");
        assert_eq!(text("<b>&amp;"), "\\<b\\>\\&amp;");
        assert_eq!(
            text("*x* _y_ `z` [l](u) ~s~ \\"),
            "\\*x\\* \\_y\\_ \\`z\\` \\[l\\](u) \\~s\\~ \\\\"
        );
        assert_eq!(text("plain doc-1.json"), "plain doc-1.json");
    }

    #[test]
    fn a_dry_run_reads_as_a_report() {
        let md = markdown(&test_reports::repair_dry(2));
        assert_eq!(
            md,
            "## doctor sessions repair (dry run)

Sessions directory: /tmp/S

Nothing was written.

### Rules

| rule | name | planned | kept |
|---|---|---:|---:|
| R1 | unreadable-document | 2 | 0 |
| R4 | dangling-thread-binding | 0 | 0 |
| R3 | orphan-thread | 0 | 1 |
| R2 | unbound-empty-store | 0 | 0 |
| R5 | orphan-artifact-dir | 0 | 0 |

### Actions

| seq | rule | action | path | reason |
|---:|---|---|---|---|
| 1 | R1 | set aside | doc-1.json | unreadable document: EOF while parsing |
| 2 | R1 | set aside | doc-2.json | unreadable document: EOF while parsing |

### Kept

- taken/runtime/threads/th-taken.json (R3): document id taken

**2 actions planned; nothing was written**
"
        );
    }

    #[test]
    fn a_real_run_shows_each_outcome_and_the_errors() {
        let md = markdown(&test_reports::repair_real());
        assert!(
            md.starts_with("## doctor sessions repair (real run)\n"),
            "{md}"
        );
        assert!(
            md.contains("| rule | name | planned | applied | kept |\n"),
            "{md}"
        );
        assert!(
            md.contains("| R1 | unreadable-document | 2 | 1 | 0 |\n"),
            "{md}"
        );
        assert!(
            md.contains("| R4 | dangling-thread-binding | 1 | 0 | 0 |\n"),
            "{md}"
        );
        assert!(md.contains("| 1 | R1 | set aside | torn.json | unreadable document: EOF while parsing | applied |\n"), "{md}");
        assert!(md.contains("| 2 | R1 | set aside | junk.json | unreadable document: EOF while parsing | skipped: changed since planned |\n"), "{md}");
        assert!(md.contains("| 3 | R4 | unbind | s/runtime/threads/th-1.json | bound to a missing document | failed: permission denied |\n"), "{md}");
        assert!(
            md.contains("### Errors\n\n- s/runtime/threads/th-1.json: permission denied\n"),
            "{md}"
        );
        assert!(md.ends_with("\n**Sessions repaired: 1 unused item set aside → .set-aside/20261129T120000Z-a1b2c3**\n"), "{md}");
        assert!(!md.contains("Nothing was written"), "{md}");
    }

    #[test]
    fn actions_past_the_hundredth_are_folded() {
        let md = markdown(&test_reports::repair_dry(130));
        let (inline, folded) = md.split_once("<details>").expect("a <details> block");
        assert!(
            inline.contains("| 100 | R1 | set aside | doc-100.json |"),
            "{md}"
        );
        assert!(!inline.contains("doc-101.json"), "{md}");
        assert!(
            folded.starts_with(
                "\n<summary>30 more actions</summary>\n\n| seq | rule | action | path | reason |\n"
            ),
            "{folded}"
        );
        assert!(
            folded.contains("| 101 | R1 | set aside | doc-101.json |"),
            "{md}"
        );
        assert!(
            folded.contains("| 130 | R1 | set aside | doc-130.json |"),
            "{md}"
        );
        assert!(folded.contains("\n</details>\n"), "{md}");
        // Every action appears once, in plan order.
        let rows: Vec<usize> = md
            .lines()
            .filter_map(|l| l.strip_prefix("| ")?.split(" |").next()?.parse().ok())
            .collect();
        assert_eq!(rows, (1..=130).collect::<Vec<_>>());
        // At the bound itself, nothing is folded.
        assert!(!markdown(&test_reports::repair_dry(100)).contains("<details>"));
    }

    #[test]
    fn odd_paths_stay_in_their_cell() {
        let md = markdown(&test_reports::repair_odd());
        let row = md
            .lines()
            .find(|l| l.starts_with("| 1 |"))
            .expect("the action's row");
        assert_eq!(
            row,
            "| 1 | R1 | set aside | odd%:,<br>\\<\\&\"'.json | reason % with<br>newline, colon: and \\<\\&\"'\\> |"
        );
        // Five cells: the only `|` left unescaped are the table's own.
        assert_eq!(row.replace("\\|", "").matches('|').count(), 6);
        assert!(md.contains("Sessions directory: /tmp/S\\|x\n"), "{md}");
        assert!(
            md.contains("- cannot read \\| this<br>file \u{1} \\<\\&\\>\n"),
            "{md}"
        );
    }

    #[test]
    fn a_sweep_names_its_roots() {
        let md = markdown(&test_reports::sweep_dry());
        assert!(
            md.starts_with(
                "## doctor build-dirs sweep (dry run)\n\nRoots: /tmp/roots/a, /tmp/roots/b/\n"
            ),
            "{md}"
        );
        assert!(
            md.contains(
                "| 2 | B1 | reclaim | /tmp/roots/b/go-link-2 | no process uses it; idle for 2h |\n"
            ),
            "{md}"
        );
        assert!(md.contains("| B1 | leaked-go-workdir | 2 | 1 |\n"), "{md}");
    }
}
