//! The `junit` format: JUnit XML with one `<testsuite>` per rule of the view, one failing
//! `<testcase>` per planned action (a passing one for a rule with no action), the run's errors
//! as `<error>` test cases, and the XML escaping that keeps any path or reason well-formed.

use std::fmt::Write as _;

use super::{actions, rule_title, View};

/// The name of the one test case of a rule that planned nothing.
pub const NO_FINDINGS: &str = "no findings";

/// The JUnit XML of a run. Each rule of [`View::rules`] is a `<testsuite name="<CODE> <name>">`;
/// each planned action a `<testcase name="<verb> <path>" classname="<CODE>">` with a
/// `<failure message="<reason>">` whose text is the action's line of the text output (with its
/// outcome in a real run); a rule with no action has one passing test case, [`NO_FINDINGS`].
/// When the run met errors, a last suite `doctor` holds one test case per error, each with an
/// `<error message="...">`.
pub fn junit(v: &dyn View) -> String {
    let all = actions(v);
    let mut suites = String::new();
    let (mut tests, mut failures) = (0, 0);
    for (code, name) in v.rules() {
        let mine: Vec<_> = all.iter().filter(|a| a.action.rule == code).collect();
        let n = mine.len().max(1);
        tests += n;
        failures += mine.len();
        let _ = writeln!(
            suites,
            "  <testsuite name=\"{}\" tests=\"{n}\" failures=\"{}\" errors=\"0\">",
            xml(&rule_title(&code, &name)),
            mine.len()
        );
        if mine.is_empty() {
            let _ = writeln!(
                suites,
                "    <testcase name=\"{NO_FINDINGS}\" classname=\"{}\"/>",
                xml(&code)
            );
        }
        for a in mine {
            let _ = writeln!(
                suites,
                "    <testcase name=\"{} {}\" classname=\"{}\">",
                xml(a.action.action.kind().verb()),
                xml(&a.path()),
                xml(&code)
            );
            let _ = writeln!(
                suites,
                "      <failure message=\"{}\">{}</failure>",
                xml(&a.action.reason),
                xml(&a.text_line())
            );
            suites.push_str("    </testcase>\n");
        }
        suites.push_str("  </testsuite>\n");
    }
    let errors = v.errors();
    if !errors.is_empty() {
        tests += errors.len();
        let _ = writeln!(
            suites,
            "  <testsuite name=\"doctor\" tests=\"{n}\" failures=\"0\" errors=\"{n}\">",
            n = errors.len()
        );
        for e in &errors {
            let _ = writeln!(
                suites,
                "    <testcase name=\"{m}\" classname=\"doctor\">\n      <error message=\"{m}\"/>\n    </testcase>",
                m = xml(e)
            );
        }
        suites.push_str("  </testsuite>\n");
    }
    let mut out = String::from("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
    let _ = writeln!(
        out,
        "<testsuites name=\"doctor {}\" tests=\"{tests}\" failures=\"{failures}\" errors=\"{}\">",
        xml(v.command()),
        errors.len()
    );
    out.push_str(&suites);
    out.push_str("</testsuites>\n");
    out
}

/// `s` as XML 1.0 character data or an attribute value: the five markup characters as entity
/// references; tab, LF and CR as character references (an attribute value keeps them as they
/// are instead of reading them as spaces); every character XML 1.0 forbids (the other C0
/// controls, U+FFFE, U+FFFF) as U+FFFD, since not even a character reference may name one.
fn xml(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            '\t' | '\n' | '\r' => {
                let _ = write!(out, "&#{};", u32::from(c));
            }
            c if c < ' ' || c == '\u{FFFE}' || c == '\u{FFFF}' => out.push('\u{FFFD}'),
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::format::test_reports::{self, ODD};

    /// Parses `xml` and checks that every count attribute says what the elements hold:
    /// `tests` and `failures` and `errors` of each suite, and their sums on `<testsuites>`.
    /// Returns each suite's name with its test cases' names.
    fn parse_and_count(xml: &str) -> Vec<(String, Vec<String>)> {
        let doc = roxmltree::Document::parse(xml).unwrap_or_else(|e| panic!("{e}:\n{xml}"));
        let root = doc.root_element();
        assert_eq!(root.tag_name().name(), "testsuites");
        let count = |n: roxmltree::Node, attr: &str| -> usize {
            n.attribute(attr)
                .unwrap_or_else(|| panic!("no {attr}"))
                .parse()
                .unwrap()
        };
        let (mut tests, mut failures, mut errors) = (0, 0, 0);
        let mut out = Vec::new();
        for suite in root.children().filter(|n| n.is_element()) {
            assert_eq!(suite.tag_name().name(), "testsuite");
            let cases: Vec<_> = suite.children().filter(|n| n.is_element()).collect();
            let with = |tag: &str| {
                cases
                    .iter()
                    .filter(|c| c.children().any(|f| f.has_tag_name(tag)))
                    .count()
            };
            assert!(cases.iter().all(|c| c.has_tag_name("testcase")));
            assert_eq!(count(suite, "tests"), cases.len());
            assert_eq!(count(suite, "failures"), with("failure"));
            assert_eq!(count(suite, "errors"), with("error"));
            tests += cases.len();
            failures += with("failure");
            errors += with("error");
            out.push((
                suite.attribute("name").unwrap().to_owned(),
                cases
                    .iter()
                    .map(|c| c.attribute("name").unwrap().to_owned())
                    .collect(),
            ));
        }
        assert_eq!(count(root, "tests"), tests);
        assert_eq!(count(root, "failures"), failures);
        assert_eq!(count(root, "errors"), errors);
        out
    }

    #[test]
    fn one_suite_per_rule_one_failure_per_action_and_a_pass_for_a_rule_with_none() {
        let xml = junit(&test_reports::repair_dry(2));
        let suites = parse_and_count(&xml);
        assert_eq!(
            suites,
            [
                (
                    "R1 unreadable-document".to_owned(),
                    vec![
                        "set aside doc-1.json".to_owned(),
                        "set aside doc-2.json".to_owned()
                    ]
                ),
                (
                    "R4 dangling-thread-binding".to_owned(),
                    vec![NO_FINDINGS.to_owned()]
                ),
                ("R3 orphan-thread".to_owned(), vec![NO_FINDINGS.to_owned()]),
                (
                    "R2 unbound-empty-store".to_owned(),
                    vec![NO_FINDINGS.to_owned()]
                ),
                (
                    "R5 orphan-artifact-dir".to_owned(),
                    vec![NO_FINDINGS.to_owned()]
                ),
            ]
        );
        assert!(xml.contains(
            "<failure message=\"unreadable document: EOF while parsing\">would set aside doc-1.json  (R1 unreadable-document: unreadable document: EOF while parsing)</failure>"
        ), "{xml}");
        assert!(xml.contains("<testsuites name=\"doctor sessions repair\" tests=\"6\" failures=\"2\" errors=\"0\">"), "{xml}");
    }

    #[test]
    fn a_real_run_counts_its_errors_and_says_each_outcome() {
        let xml = junit(&test_reports::repair_real());
        let suites = parse_and_count(&xml);
        assert_eq!(
            suites.last().unwrap(),
            &(
                "doctor".to_owned(),
                vec!["s/runtime/threads/th-1.json: permission denied".to_owned()]
            )
        );
        assert!(
            xml.contains(
                ">skipped junk.json  (R1 unreadable-document: changed since planned)</failure>"
            ),
            "{xml}"
        );
        assert!(xml.contains(">failed s/runtime/threads/th-1.json  (R4 dangling-thread-binding: permission denied)</failure>"), "{xml}");
        assert!(
            xml.contains("tests=\"7\" failures=\"3\" errors=\"1\">"),
            "{xml}"
        );
    }

    #[test]
    fn odd_text_is_escaped_and_reads_back_as_it_was() {
        assert_eq!(xml("a&b<c>d\"e'f"), "a&amp;b&lt;c&gt;d&quot;e&apos;f");
        assert_eq!(xml("t\tn\nr\r"), "t&#9;n&#10;r&#13;");
        assert_eq!(
            xml("\u{0}\u{1}\u{8}\u{b}\u{c}\u{1f}\u{fffe}\u{ffff}ok"),
            "\u{fffd}".repeat(8) + "ok"
        );
        assert_eq!(xml("é ✓ \u{7f}"), "é ✓ \u{7f}");

        let out = junit(&test_reports::repair_odd());
        let doc = roxmltree::Document::parse(&out).unwrap_or_else(|e| panic!("{e}:\n{out}"));
        let case = doc
            .descendants()
            .find(|n| n.attribute("classname") == Some("R1"))
            .expect("the R1 test case");
        assert_eq!(
            case.attribute("name"),
            Some(format!("set aside {ODD}").as_str())
        );
        let failure = case.first_element_child().unwrap();
        assert_eq!(
            failure.attribute("message"),
            Some("reason % with\r\nnewline, colon: and <&\"'>")
        );
        assert_eq!(
            doc.descendants()
                .find(|n| n.has_tag_name("error"))
                .and_then(|n| n.attribute("message")),
            Some("cannot read | this\nfile \u{fffd} <&>")
        );
        parse_and_count(&out);
    }

    #[test]
    fn extra_codes_get_their_own_suite() {
        let xml = junit(&test_reports::purge_real());
        let suites = parse_and_count(&xml);
        assert_eq!(
            suites,
            [(
                "purge purge-set-aside".to_owned(),
                vec!["purge .set-aside/20261001T000000Z-000001".to_owned()]
            )]
        );
        let sweep = junit(&test_reports::sweep_dry());
        let suites = parse_and_count(&sweep);
        assert_eq!(
            suites,
            [(
                "B1 leaked-go-workdir".to_owned(),
                vec![
                    "reclaim /tmp/roots/a/go-build1".to_owned(),
                    "reclaim /tmp/roots/b/go-link-2".to_owned()
                ]
            )]
        );
    }
}
