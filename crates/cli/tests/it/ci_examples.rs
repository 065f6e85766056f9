//! The examples of `docs/ci.md` and `contrib/systemd/`, run. Every `doctor` line of a fenced
//! block of docs/ci.md is read from the page at test time and run as written (with the store
//! for `$SESSIONS_DIR`) on a copy of the demo store: its exit code, what each output format
//! prints (workflow commands only, the markdown report in `$GITHUB_STEP_SUMMARY`, JUnit that
//! parses with a failure per planned action), and the store unchanged. The systemd units are
//! checked by their sections and keys, with the sweep's flags run, and by
//! `systemd-analyze verify` where it is installed.

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

use crate::common::{demo_with_old_artifacts, tree, Doctor};

const NOW: &str = "2026-11-29T12:00:00Z";

/// What docs/ci.md writes for the store; the test puts the store's path in its place.
const PLACEHOLDER: &str = "$SESSIONS_DIR";

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn read(rel: &str) -> String {
    let path = workspace().join(rel);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("read {}: {e}", path.display()))
}

/// A `doctor` line of docs/ci.md.
#[derive(Debug)]
struct Example {
    /// The line as the page writes it.
    line: String,
    /// The words after `doctor`, the placeholder replaced.
    args: Vec<String>,
    /// The file its stdout goes to (`> FILE`), when any.
    redirect: Option<String>,
}

impl Example {
    /// The value of `--output-format`, else `text`.
    fn format(&self) -> &str {
        self.args
            .iter()
            .position(|a| a == "--output-format")
            .map_or("text", |i| self.args[i + 1].as_str())
    }

    fn checks(&self) -> bool {
        self.args.iter().any(|a| a == "--check")
    }
}

/// The lines of the fenced blocks of `page` that run `doctor` (after a YAML `- ` or `run: `, or
/// a prompt `$ `), with `store` for the placeholder. A line the test could not run exactly as
/// a shell would (any quoting, expansion or redirection but `"$SESSIONS_DIR"` and `> FILE`)
/// fails the test, so the page keeps to what is checked here.
fn examples(page: &str, store: &Path) -> Vec<Example> {
    let mut out = Vec::new();
    let mut fenced = false;
    for raw in page.lines() {
        let t = raw.trim();
        if t.starts_with("```") {
            fenced = !fenced;
            continue;
        }
        if !fenced {
            continue;
        }
        let mut line = t;
        for prefix in ["- ", "run: ", "$ "] {
            line = line.strip_prefix(prefix).unwrap_or(line);
        }
        if !line.starts_with("doctor ") {
            continue;
        }
        out.push(parse(line, store));
    }
    out
}

/// The words of one `doctor` line.
fn parse(line: &str, store: &Path) -> Example {
    let store = store.to_str().expect("a UTF-8 temp path");
    assert!(
        !line.contains(['\'', '\\', '`', '|', ';', '&', '<', '*', '?']),
        "{line}: only words, \"{PLACEHOLDER}\" and > FILE are run by this test"
    );
    let words: Vec<String> = line
        .split_whitespace()
        .map(|w| {
            let w = w
                .strip_prefix('"')
                .and_then(|w| w.strip_suffix('"'))
                .unwrap_or(w);
            assert!(!w.contains('"'), "{line}: a quote inside a word");
            let w = w.replace(PLACEHOLDER, store);
            assert!(
                !w.contains('$'),
                "{line}: an expansion other than {PLACEHOLDER}"
            );
            w
        })
        .collect();
    let (args, redirect) = match words.iter().position(|w| w == ">") {
        Some(i) => {
            assert_eq!(i + 2, words.len(), "{line}: > FILE ends the line");
            (words[1..i].to_vec(), Some(words[i + 1].clone()))
        }
        None => (words[1..].to_vec(), None),
    };
    Example {
        line: line.to_owned(),
        args,
        redirect,
    }
}

/// The number of actions a dry run plans on `s`.
fn planned(s: &Path, home: &Path) -> usize {
    let out = Doctor::new()
        .args(["sessions", "repair", "--dry-run", "--json"])
        .sessions_dir(s)
        .now(NOW)
        .env("CODEWHALE_HOME", home)
        .run();
    assert_eq!(out.code, Some(0), "{}", out.said());
    out.json()["plan"]["actions"].as_array().unwrap().len()
}

#[test]
fn every_doctor_line_of_the_ci_page_runs_as_documented() {
    let (tmp, s) = demo_with_old_artifacts();
    let home = tmp.path().join("codewhale-home");
    std::fs::create_dir(&home).unwrap();
    let summary = tmp.path().join("step-summary.md");
    let page = read("docs/ci.md");
    let all = examples(&page, &s);
    let formats: Vec<&str> = all.iter().map(Example::format).collect();
    for want in ["github", "junit", "markdown", "json-lines"] {
        assert!(formats.contains(&want), "no {want} example: {all:#?}");
    }
    for block in page.split("```yaml").skip(1) {
        let block = block.split("```").next().unwrap();
        assert!(
            block.contains("SESSIONS_DIR: "),
            "a YAML example sets SESSIONS_DIR:\n{block}"
        );
        assert!(
            examples(&format!("```\n{block}```"), &s)
                .iter()
                .any(Example::checks),
            "a YAML example fails its job on pending work (--check):\n{block}"
        );
    }

    let planned = planned(&s, &home);
    assert!(planned > 0, "the demo store has work to do");
    let before = tree(&s);
    for ex in &all {
        let out = Doctor::new()
            .args(&ex.args)
            .now(NOW)
            .env("CODEWHALE_HOME", &home)
            .env("GITHUB_STEP_SUMMARY", &summary)
            .run();
        let want = if ex.checks() { 3 } else { 0 };
        assert_eq!(out.code, Some(want), "{}\n{}", ex.line, out.said());
        let stdout = out.stdout.as_str();
        match ex.format() {
            "github" => {
                for l in stdout.lines() {
                    assert!(
                        ["::warning title=", "::notice title=", "::error title="]
                            .iter()
                            .any(|p| l.starts_with(p)),
                        "{}: not a workflow command: {l}",
                        ex.line
                    );
                }
                let warnings = stdout.lines().filter(|l| l.starts_with("::warning"));
                assert_eq!(warnings.count(), planned, "{stdout}");
                let last = stdout.lines().last().unwrap();
                assert!(last.starts_with("::notice title=doctor::"), "{stdout}");
            }
            "junit" => {
                let xml = roxmltree::Document::parse(stdout)
                    .unwrap_or_else(|e| panic!("{}: not XML ({e}):\n{stdout}", ex.line));
                let failures: Vec<_> = xml
                    .descendants()
                    .filter(|n| n.has_tag_name("failure"))
                    .collect();
                assert_eq!(failures.len(), planned, "{stdout}");
                for f in failures {
                    assert!(f.parent().unwrap().has_tag_name("testcase"), "{stdout}");
                    assert!(!f.attribute("message").unwrap_or("").is_empty());
                }
            }
            "markdown" => {
                assert!(
                    stdout.starts_with("## doctor sessions repair (dry run)\n"),
                    "{stdout}"
                );
                assert!(stdout.contains("| seq | rule | action | path | reason |"));
            }
            "json-lines" => {
                let lines: Vec<Value> = stdout
                    .lines()
                    .map(|l| serde_json::from_str(l).expect("a JSON object per line"))
                    .collect();
                let kinds: Vec<&str> = lines.iter().map(|v| v["type"].as_str().unwrap()).collect();
                assert_eq!(kinds.first(), Some(&"progress"), "{stdout}");
                assert_eq!(kinds.last(), Some(&"summary"), "{stdout}");
                let actions = kinds.iter().filter(|k| **k == "action").count();
                assert_eq!(actions, planned, "{stdout}");
            }
            other => panic!("{}: no check for the format {other}", ex.line),
        }
        if let Some(file) = &ex.redirect {
            let ext = match ex.format() {
                "junit" => ".xml",
                "markdown" => ".md",
                other => panic!("{}: a redirect of {other}", ex.line),
            };
            assert!(file.ends_with(ext), "{}", ex.line);
        }
    }

    // The github runs appended the markdown report to the step summary, once each.
    let github_runs = formats.iter().filter(|f| **f == "github").count();
    let text = std::fs::read_to_string(&summary).expect("the step summary was written");
    assert_eq!(
        text.matches("## doctor sessions repair (dry run)\n")
            .count(),
        github_runs,
        "{text}"
    );
    assert!(
        text.contains("| seq | rule | action | path | reason |"),
        "{text}"
    );
    assert_eq!(tree(&s), before, "a preview changed the store");
}

#[test]
fn the_page_lines_are_read_as_a_shell_reads_them() {
    let ex = parse(
        "doctor sessions repair --dry-run --output-format junit --sessions-dir \"$SESSIONS_DIR\" > doctor.xml",
        Path::new("/tmp/S"),
    );
    assert_eq!(
        ex.args,
        [
            "sessions",
            "repair",
            "--dry-run",
            "--output-format",
            "junit",
            "--sessions-dir",
            "/tmp/S"
        ]
    );
    assert_eq!(ex.redirect.as_deref(), Some("doctor.xml"));
    assert_eq!(ex.format(), "junit");
    let page = "text\n```yaml\n  - run: doctor status --sessions-dir \"$SESSIONS_DIR\"\n      - doctor rule\n```\ndoctor outside\n";
    let found: Vec<String> = examples(page, Path::new("/s"))
        .into_iter()
        .map(|e| e.args.join(" "))
        .collect();
    assert_eq!(found, ["status --sessions-dir /s", "rule"]);
}

/// The units of contrib/systemd: `(section, key, value)` of every setting, in order. A line
/// that is neither blank, a comment, a `[Section]` nor `Key=Value` fails the test.
fn settings(name: &str) -> Vec<(String, String, String)> {
    let text = read(&format!("contrib/systemd/{name}"));
    let mut section = String::new();
    let mut out = Vec::new();
    for line in text.lines().map(str::trim) {
        if line.is_empty() || line.starts_with('#') || line.starts_with(';') {
            continue;
        }
        if let Some(s) = line.strip_prefix('[').and_then(|l| l.strip_suffix(']')) {
            section = s.to_owned();
            continue;
        }
        let (k, v) = line
            .split_once('=')
            .unwrap_or_else(|| panic!("{name}: not a setting: {line}"));
        assert!(!section.is_empty(), "{name}: {line} before any section");
        assert!(
            !k.is_empty() && k.chars().all(|c| c.is_ascii_alphanumeric()),
            "{name}: a key: {line}"
        );
        out.push((section.clone(), k.to_owned(), v.to_owned()));
    }
    out
}

fn value<'a>(settings: &'a [(String, String, String)], section: &str, key: &str) -> &'a str {
    settings
        .iter()
        .find(|(s, k, _)| s == section && k == key)
        .map(|(_, _, v)| v.as_str())
        .unwrap_or_else(|| panic!("no {key}= in [{section}]"))
}

const SERVICE: &str = "doctor-build-dirs-sweep.service";
const TIMER: &str = "doctor-build-dirs-sweep.timer";
const INSTALLED_DOCTOR: &str = "/usr/local/bin/doctor";

#[test]
#[cfg_attr(
    windows,
    ignore = "systemd units are Linux's: the timer and its service exist nowhere else"
)]
fn the_systemd_units_have_their_sections_and_keys_and_the_sweeps_flags_exist() {
    let service = settings(SERVICE);
    assert_eq!(value(&service, "Service", "Type"), "oneshot");
    assert!(!value(&service, "Unit", "Description").is_empty());
    let exec = value(&service, "Service", "ExecStart");
    let args = exec
        .strip_prefix(INSTALLED_DOCTOR)
        .unwrap_or_else(|| panic!("ExecStart runs {INSTALLED_DOCTOR}: {exec}"));
    let args: Vec<&str> = args.split_whitespace().collect();
    assert_eq!(args[..2], ["build-dirs", "sweep"], "{exec}");
    // The sweep must see /proc and the temp dir as they are: no namespace sandboxing.
    for (_, k, _) in &service {
        assert!(
            !["ProtectSystem", "ProtectHome", "PrivateTmp", "PrivateUsers"].contains(&k.as_str())
                && !k.starts_with("ProtectProc")
                && !k.starts_with("ProcSubset")
                && !k.starts_with("PrivatePID"),
            "{SERVICE}: {k}= would hide what the sweep must see"
        );
    }

    let timer = settings(TIMER);
    assert_eq!(value(&timer, "Timer", "OnCalendar"), "hourly");
    assert_eq!(value(&timer, "Timer", "Persistent"), "true");
    assert!(!value(&timer, "Timer", "RandomizedDelaySec").is_empty());
    assert_eq!(value(&timer, "Install", "WantedBy"), "timers.target");

    // The unit's command line, as a dry run over an empty root: its flags parse.
    let tmp = tempfile::tempdir().unwrap();
    let out = Doctor::new()
        .args(&args)
        .args(["--dry-run", "--root"])
        .arg(tmp.path())
        .env("XDG_STATE_HOME", tmp.path().join("state"))
        .run();
    assert_eq!(out.code, Some(0), "{exec}: {}", out.said());
}

#[test]
fn systemd_analyze_verifies_the_units_where_it_is_installed() {
    let tmp = tempfile::tempdir().unwrap();
    // The unit names the installed binary; verify checks that ExecStart is executable, so the
    // copy names the binary under test.
    for name in [SERVICE, TIMER] {
        let text = read(&format!("contrib/systemd/{name}"))
            .replace(INSTALLED_DOCTOR, env!("CARGO_BIN_EXE_doctor"));
        std::fs::write(tmp.path().join(name), text).unwrap();
    }
    let runtime = tmp.path().join("runtime");
    std::fs::create_dir(&runtime).unwrap();
    let out = match Command::new("systemd-analyze")
        .args(["verify", "--user", "--man=no", SERVICE, TIMER])
        .current_dir(tmp.path())
        .env("XDG_RUNTIME_DIR", &runtime)
        .output()
    {
        Ok(out) => out,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            eprintln!("systemd-analyze is not installed: the units were checked by their keys");
            return;
        }
        Err(e) => panic!("run systemd-analyze: {e}"),
    };
    let said = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    let about_ours: Vec<&str> = said
        .lines()
        .filter(|l| l.contains("doctor-build-dirs-sweep"))
        .collect();
    assert!(
        about_ours.is_empty(),
        "systemd-analyze verify:\n{}",
        about_ours.join("\n")
    );
    if !out.status.success() {
        // Nothing said about the units: the manager could not start here (no user session).
        eprintln!("systemd-analyze verify could not run here: {said}");
    }
}
