//! Where and how a report is printed: the output format, colour (`--color`, `NO_COLOR`,
//! `CLICOLOR_FORCE`), `-q`, progress on stderr, and one writer for standard output that ends
//! quietly when its reader has gone (`doctor ... | head -1`).

use std::io::{IsTerminal, Write};
use std::sync::{Arc, Mutex};

use store::progress::{Progress, ProgressSink};

use crate::format::{github, json_lines, junit, markdown, OutputFormat, View};
use crate::{AdminReport, Error, RepairReport};

use super::args::{ColorChoice, Global};

/// How this run prints.
#[derive(Debug, Clone)]
pub(crate) struct Printer {
    format: OutputFormat,
    color: bool,
    quiet: bool,
    progress: bool,
    /// Reports go to stderr (`--plan-out -` took stdout).
    to_stderr: bool,
}

impl Printer {
    /// The printer the global flags ask for.
    pub fn new(format: OutputFormat, global: &Global) -> Printer {
        Printer {
            format,
            color: wants_color(global.color),
            quiet: global.quiet,
            progress: !global.no_progress
                && !global.quiet
                && matches!(format, OutputFormat::Text | OutputFormat::JsonLines)
                && std::io::stderr().is_terminal(),
            to_stderr: false,
        }
    }

    /// The output format.
    pub fn format(&self) -> OutputFormat {
        self.format
    }

    /// This printer, writing its reports to stderr.
    pub fn to_stderr(&self) -> Printer {
        Printer {
            to_stderr: true,
            ..self.clone()
        }
    }

    /// A usage error when the format is neither text nor JSON (a command with no machine form).
    pub fn only_text_or_json(&self, command: &str) -> Result<(), Error> {
        if matches!(self.format, OutputFormat::Text | OutputFormat::Json) {
            Ok(())
        } else {
            Err(Error::BadEnvironment(format!(
                "{command} prints text or json only, not --output-format {}",
                self.format.name()
            )))
        }
    }

    /// Runs `f` with the progress this run shows: on a terminal (text, or json-lines), a bar
    /// on stderr with counts and an estimate (`scanning 12,345/40,000 ...`), a spinner with
    /// `message` until a phase with a count starts, cleared when `f` returns; with json-lines,
    /// `progress` lines on stdout as well; otherwise nothing.
    pub fn progress<T>(&self, message: &'static str, f: impl FnOnce(&ProgressSink) -> T) -> T {
        let lines = (self.format == OutputFormat::JsonLines).then(|| JsonLinesProgress {
            to_stderr: self.to_stderr,
            ..JsonLinesProgress::default()
        });
        let bar = self.progress.then(|| {
            let bar = indicatif::ProgressBar::new_spinner();
            bar.set_message(message);
            bar.enable_steady_tick(std::time::Duration::from_millis(100));
            bar
        });
        let sink = match (&bar, lines) {
            (None, None) => ProgressSink::silent(),
            (bar, lines) => ProgressSink::new(Arc::new(Watch {
                bar: bar.clone(),
                lines,
            })),
        };
        let out = f(&sink);
        if let Some(bar) = bar {
            bar.finish_and_clear();
        }
        out
    }

    /// Says `message` on stderr, as `doctor: <message>`.
    pub fn error(&self, message: &str) {
        let line = if self.color {
            format!("\x1b[1;31mdoctor:\x1b[0m {message}\n")
        } else {
            format!("doctor: {message}\n")
        };
        let _ = std::io::stderr().write_all(line.as_bytes());
    }

    /// Writes `bytes` to standard output as they are.
    pub fn raw(&self, bytes: &[u8]) {
        emit(false, |out| out.write_all(bytes));
    }

    /// Streams `value` as pretty JSON (never built whole in memory: a report of a large store
    /// is large).
    pub fn json(&self, value: &impl serde::Serialize) {
        emit(self.to_stderr, |out| {
            serde_json::to_writer_pretty(&mut *out, value).map_err(std::io::Error::from)?;
            out.write_all(b"\n")
        });
    }

    /// Writes a text report, coloured when colour is on.
    pub fn text(&self, text: &str) {
        let text = if self.color {
            colorize(text)
        } else {
            text.to_owned()
        };
        emit(self.to_stderr, |out| out.write_all(text.as_bytes()));
    }

    /// Prints a report that has a text and a JSON form only.
    pub fn report(&self, json: &impl serde::Serialize, text: &str, quiet_line: Option<&str>) {
        match self.format {
            OutputFormat::Json => self.json(json),
            _ if self.quiet => {
                if let Some(line) = quiet_line {
                    self.text(&format!("{line}\n"));
                }
            }
            _ => self.text(text),
        }
    }

    /// Prints `view` in a machine format other than JSON (json-lines, github, markdown,
    /// junit); `false` for text and JSON, which each report prints itself. With github, the
    /// markdown report is appended to `$GITHUB_STEP_SUMMARY` when it names a file.
    fn machine(&self, view: &dyn View) -> bool {
        let text = match self.format {
            OutputFormat::Text | OutputFormat::Json => return false,
            OutputFormat::JsonLines => {
                let mut text = String::new();
                for line in json_lines::action_lines(view)
                    .into_iter()
                    .chain([json_lines::summary_line(view)])
                {
                    text.push_str(&line.to_string());
                    text.push('\n');
                }
                text
            }
            OutputFormat::Github => {
                if let Some(path) = step_summary() {
                    if let Err(e) = github::append_step_summary(&path, &markdown::markdown(view)) {
                        self.error(&format!("cannot write the step summary: {e}"));
                    }
                }
                github::github(view)
            }
            OutputFormat::Markdown => markdown::markdown(view),
            OutputFormat::Junit => junit::junit(view),
        };
        emit(self.to_stderr, |out| out.write_all(text.as_bytes()));
        true
    }

    /// Prints a repair or apply report in the chosen format. A real run names the directory it
    /// changed on its first line.
    pub fn repair(&self, report: &RepairReport) {
        if self.machine(report) {
            return;
        }
        let mut text = String::new();
        if !report.dry_run {
            text.push_str(&format!("sessions directory: {}\n", report.sessions_dir));
        }
        text.push_str(&report.render_human());
        let quiet = quiet_lines(
            report.summary.errors.iter().map(ToString::to_string),
            (!report.dry_run)
                .then(|| sessions::notice_line(&report.summary))
                .flatten(),
        );
        self.report(report, &text, quiet.as_deref());
    }

    /// Prints a restore or purge report in the chosen format. A real restore names the
    /// directory it changed on its first line.
    pub fn admin(&self, report: &AdminReport) {
        if self.machine(report) {
            return;
        }
        let mut text = String::new();
        if !report.dry_run && report.command == crate::AdminCommand::Restore {
            text.push_str(&format!("sessions directory: {}\n", report.sessions_dir));
        }
        text.push_str(&report.render_human());
        let quiet = quiet_lines(report.summary.errors.iter().map(ToString::to_string), None);
        self.report(report, &text, quiet.as_deref());
    }

    /// Prints a sweep report in the chosen format.
    pub fn sweep(&self, report: &crate::sweep::SweepReport) {
        if self.machine(report) {
            return;
        }
        // The notice line of a real sweep that reclaimed something.
        let notice = (!report.dry_run).then(|| report.closing_line()).flatten();
        let quiet = quiet_lines(
            report.summary.errors.iter().map(ToString::to_string),
            notice,
        );
        self.report(report, &report.render_human(), quiet.as_deref());
    }

    /// `doctor rule [CODE]`: the table of every rule, or one rule's page. Returns the exit code.
    pub fn rule(&self, code: Option<&str>) -> u8 {
        let rules = crate::rules::all();
        match code {
            None => {
                if self.format == OutputFormat::Json {
                    self.json(&rules);
                } else {
                    self.text(&crate::rules::table(&rules));
                }
                0
            }
            Some(code) => match rules.iter().find(|r| r.code.eq_ignore_ascii_case(code)) {
                Some(r) if self.format == OutputFormat::Json => {
                    self.json(r);
                    0
                }
                Some(r) => {
                    self.text(&r.page());
                    0
                }
                None => {
                    self.error(&format!("no rule {code}"));
                    2
                }
            },
        }
    }
}

/// What watches a run: the bar on stderr and the `progress` lines of json-lines.
struct Watch {
    bar: Option<indicatif::ProgressBar>,
    lines: Option<JsonLinesProgress>,
}

impl Progress for Watch {
    fn start(&self, phase: &'static str, total: u64) {
        if let Some(bar) = &self.bar {
            bar.set_style(
                indicatif::ProgressStyle::with_template(
                    "{msg} {human_pos}/{human_len} [{bar:30}] {eta} left",
                )
                .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar())
                .progress_chars("=> "),
            );
            bar.set_message(phase);
            bar.set_length(total);
            bar.set_position(0);
        }
        if let Some(lines) = &self.lines {
            lines.start(phase, total);
        }
    }

    fn advance(&self, n: u64) {
        if let Some(bar) = &self.bar {
            bar.inc(n);
        }
        if let Some(lines) = &self.lines {
            lines.advance(n);
        }
    }
}

/// The `progress` lines of json-lines: one when a phase starts, then one per hundredth of it
/// and one at its end, each flushed, so a CI log or a host sees the run move.
#[derive(Default)]
struct JsonLinesProgress {
    /// The phase, its total, what is done, and what the last line said.
    state: Mutex<(&'static str, u64, u64, u64)>,
    /// The lines go to stderr (`--plan-out -` took stdout).
    to_stderr: bool,
}

impl JsonLinesProgress {
    fn start(&self, phase: &'static str, total: u64) {
        let mut s = self.state.lock().unwrap_or_else(|e| e.into_inner());
        *s = (phase, total, 0, 0);
        progress_line(self.to_stderr, phase, 0, total);
    }

    fn advance(&self, n: u64) {
        let mut s = self.state.lock().unwrap_or_else(|e| e.into_inner());
        s.2 += n;
        let (phase, total, done, said) = *s;
        let step = (total / 100).max(1);
        if done == total || done >= said + step {
            s.3 = done;
            progress_line(self.to_stderr, phase, done, total);
        }
    }
}

/// Writes one `progress` line of json-lines to stdout (or stderr) and flushes it.
fn progress_line(to_stderr: bool, phase: &str, done: u64, total: u64) {
    let line = json_lines::progress_line(phase, done, Some(total));
    emit(to_stderr, |out| writeln!(out, "{line}"));
}

/// `$GITHUB_STEP_SUMMARY`, when it names a file.
// The edge: the environment is read here (clippy.toml).
#[allow(clippy::disallowed_methods)]
fn step_summary() -> Option<std::path::PathBuf> {
    std::env::var_os("GITHUB_STEP_SUMMARY")
        .filter(|v| !v.is_empty())
        .map(std::path::PathBuf::from)
}

/// `-q`'s output: the errors, then the notice line of a real run.
fn quiet_lines(errors: impl Iterator<Item = String>, notice: Option<String>) -> Option<String> {
    let mut lines: Vec<String> = errors.map(|e| format!("error: {e}")).collect();
    lines.extend(notice);
    (!lines.is_empty()).then(|| lines.join("\n"))
}

/// Whether the text output is coloured: `--color always|never`, else (`auto`) only on a
/// terminal, never when `NO_COLOR` is set, always when `CLICOLOR_FORCE` is.
// The edge: the environment is read here (clippy.toml).
#[allow(clippy::disallowed_methods)]
fn wants_color(choice: ColorChoice) -> bool {
    let set = |name: &str| std::env::var_os(name).is_some_and(|v| !v.is_empty() && v != "0");
    match choice {
        ColorChoice::Always => true,
        ColorChoice::Never => false,
        ColorChoice::Auto if set("NO_COLOR") => false,
        ColorChoice::Auto if set("CLICOLOR_FORCE") => true,
        ColorChoice::Auto => std::io::stdout().is_terminal(),
    }
}

/// The text report with its line kinds coloured: planned and applied actions, skips and
/// failures, errors, and the notice line.
fn colorize(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + text.len() / 8);
    for line in text.split_inclusive('\n') {
        let style = if line.starts_with("error:") || line.starts_with("failed ") {
            "1;31"
        } else if line.starts_with("would ") {
            "33"
        } else if line.starts_with("skipped ") || line.starts_with("ignored ") {
            "2"
        } else if line.starts_with("Sessions repaired:")
            || line.starts_with("Build dirs reclaimed:")
        {
            "1;32"
        } else {
            ""
        };
        if style.is_empty() {
            out.push_str(line);
        } else {
            let (body, nl) = line.strip_suffix('\n').map_or((line, ""), |b| (b, "\n"));
            out.push_str(&format!("\x1b[{style}m{body}\x1b[0m{nl}"));
        }
    }
    out
}

/// Writes through `write` to standard output (or stderr). A reader that went away ends the
/// output quietly (cli.md: no panic, no backtrace); any other failure to write is said on
/// stderr, where a failure is ignored (there is nowhere left to say it).
fn emit(to_stderr: bool, write: impl FnOnce(&mut dyn Write) -> std::io::Result<()>) {
    let result = if to_stderr {
        let mut err = std::io::stderr().lock();
        write(&mut err).and_then(|()| err.flush())
    } else {
        let mut out = std::io::BufWriter::new(std::io::stdout().lock());
        write(&mut out).and_then(|()| out.flush())
    };
    if let Err(e) = result {
        if e.kind() != std::io::ErrorKind::BrokenPipe {
            let _ = writeln!(std::io::stderr(), "doctor: cannot write the report: {e}");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn colour_marks_each_kind_of_line_and_keeps_the_text() {
        let text = "would set aside a.json  (R1 x: y)\nskipped b  (R3: z)\nerror: e\nplain\n";
        let coloured = colorize(text);
        assert!(coloured.contains("\x1b[33mwould set aside a.json  (R1 x: y)\x1b[0m\n"));
        assert!(coloured.contains("\x1b[1;31merror: e\x1b[0m\n"));
        assert!(coloured.ends_with("plain\n"));
        let stripped = coloured
            .replace("\x1b[33m", "")
            .replace("\x1b[2m", "")
            .replace("\x1b[1;31m", "")
            .replace("\x1b[0m", "");
        assert_eq!(stripped, text);
    }
}
