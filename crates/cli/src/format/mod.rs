//! The output formats of `--output-format` (cli.md, Version 2): `text` (each report's
//! `render_human`), `json` (the report itself), and the machine formats CI systems read,
//! rendered from one [`View`] of a report: `json-lines`, `github`, `markdown` and `junit`.

use plan::{Outcome, Plan};

/// `--output-format`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum OutputFormat {
    /// The human report.
    #[default]
    Text,
    /// One JSON document.
    Json,
    /// One JSON object per line: progress, actions, then the summary.
    JsonLines,
    /// GitHub Actions workflow commands (annotations), and the markdown report appended to
    /// `$GITHUB_STEP_SUMMARY`.
    Github,
    /// A markdown report, fit for a pull-request comment.
    Markdown,
    /// JUnit XML: a test suite per rule, a test case per planned action.
    Junit,
}

impl OutputFormat {
    /// The name `--output-format` takes.
    pub fn name(self) -> &'static str {
        match self {
            OutputFormat::Text => "text",
            OutputFormat::Json => "json",
            OutputFormat::JsonLines => "json-lines",
            OutputFormat::Github => "github",
            OutputFormat::Markdown => "markdown",
            OutputFormat::Junit => "junit",
        }
    }
}

/// An item a run left on purpose (a rule's skip, an item kept), as a machine format shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeptItem {
    /// The path as a reader should see it (joined to its root for the build-dirs pack).
    pub path: String,
    /// The rule code that left it.
    pub rule: String,
    /// Why.
    pub why: String,
}

/// What the machine formats read of a report: one view over the repair, apply, restore, purge
/// and sweep reports alike.
pub trait View {
    /// The command, as `doctor <command>` names it: `sessions repair`, `sessions apply`,
    /// `sessions restore`, `sessions purge`, `build-dirs sweep`.
    fn command(&self) -> &'static str;
    /// The directories the run works on: the sessions directory, or each build root.
    fn targets(&self) -> Vec<String>;
    /// Whether nothing was written.
    fn dry_run(&self) -> bool;
    /// The plan (planned in a dry run, applied in a real run).
    fn plan(&self) -> &Plan;
    /// One outcome per applied action; empty for a dry run.
    fn outcomes(&self) -> &[Outcome];
    /// Items left on purpose or kept.
    fn kept(&self) -> Vec<KeptItem>;
    /// The rules that ran, in order, as `(code, name)`: each one, whether it acted or not.
    fn rules(&self) -> Vec<(String, String)>;
    /// One line that sums the run up: the notice line of a real run (or `nothing changed`), the
    /// counts of a dry run.
    fn summary_line(&self) -> String;
    /// The errors met, each naming its path.
    fn errors(&self) -> Vec<String>;
    /// The report's `summary` object, as its JSON form has it.
    fn summary_json(&self) -> serde_json::Value;
}
