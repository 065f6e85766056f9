//! `cargo xtask docs [--check]`: writes `docs/rules/<code>.md` from each rule's own `doc()`, for
//! every rule of every pack's registry, and in check mode fails when a page is stale or a page
//! has no rule. Plain `cargo test` runs the check, and the registry test below: codes are
//! unique, and every rule has a page, a positive fixture and an `ok_` fixture.

use std::path::{Path, PathBuf};

use crate::Failure;

pub use doctor::rules::RuleInfo as RulePage;

/// Every rule page, in registry order (the sessions pack, then the build-dirs pack), as the
/// product shows them (`doctor rule CODE`).
pub fn all_pages() -> Vec<RulePage> {
    doctor::rules::all()
}

fn pages_dir(root: &Path) -> PathBuf {
    root.join("docs/rules")
}

/// The pages in `docs/rules` that no rule of any registry writes.
fn orphan_pages(root: &Path, pages: &[RulePage]) -> Vec<String> {
    let Ok(entries) = std::fs::read_dir(pages_dir(root)) else {
        return Vec::new();
    };
    let mut out: Vec<String> = entries
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".md"))
        .filter(|n| !pages.iter().any(|p| format!("{}.md", p.code) == *n))
        .collect();
    out.sort();
    out
}

/// Writes the pages, or with `check` reports the stale ones and pages without a rule.
pub fn run(root: &Path, check: bool) -> Result<(), Failure> {
    let pages = all_pages();
    let mut stale = Vec::new();
    for page in &pages {
        let target = pages_dir(root).join(format!("{}.md", page.code));
        let current = std::fs::read_to_string(&target).unwrap_or_default();
        if current == page.markdown {
            continue;
        }
        if check {
            stale.push(target.display().to_string());
        } else {
            std::fs::create_dir_all(pages_dir(root))
                .and_then(|()| std::fs::write(&target, &page.markdown))
                .map_err(|e| Failure::Failed(format!("cannot write {}: {e}", target.display())))?;
            println!("wrote {}", target.display());
        }
    }
    let orphans = orphan_pages(root, &pages);
    if !stale.is_empty() {
        return Err(Failure::Failed(format!(
            "rule docs are stale (run `cargo xtask docs`): {}",
            stale.join(", ")
        )));
    }
    if !orphans.is_empty() {
        return Err(Failure::Failed(format!(
            "docs/rules has pages of no rule (delete them): {}",
            orphans.join(", ")
        )));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rule_docs_are_fresh_and_every_page_has_a_rule() {
        if let Err(Failure::Failed(msg)) = run(&crate::workspace_root(), true) {
            panic!("{msg}");
        }
    }

    /// The fixture directories of a pack whose names start with `prefix`.
    fn fixtures(root: &Path, pack: &str, prefix: &str) -> Vec<String> {
        let Ok(entries) = std::fs::read_dir(root.join("fixtures").join(pack)) else {
            return Vec::new();
        };
        entries
            .flatten()
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .filter(|n| n.starts_with(prefix))
            .collect()
    }

    #[test]
    fn every_rule_has_a_unique_code_a_page_and_fixtures_both_ways() {
        let root = crate::workspace_root();
        let pages = all_pages();
        assert!(pages.len() >= 6, "{} rules", pages.len());
        let mut problems = Vec::new();
        for (i, page) in pages.iter().enumerate() {
            if pages[..i].iter().any(|p| p.code == page.code) {
                problems.push(format!("{} is the code of two rules", page.code));
            }
            if !pages_dir(&root).join(format!("{}.md", page.code)).is_file() {
                problems.push(format!("{} has no page", page.code));
            }
            let lower = page.code.to_ascii_lowercase();
            if fixtures(&root, page.pack, &format!("{lower}_")).is_empty() {
                problems.push(format!(
                    "{} has no positive fixture fixtures/{}/{lower}_*",
                    page.code, page.pack
                ));
            }
            if fixtures(&root, page.pack, &format!("ok_{lower}_")).is_empty() {
                problems.push(format!(
                    "{} has no negative fixture fixtures/{}/ok_{lower}_*",
                    page.code, page.pack
                ));
            }
            for section in ["## What it finds", "## What it does"] {
                if !page.markdown.contains(section) {
                    problems.push(format!("the doc of {} has no {section:?}", page.code));
                }
            }
        }
        assert!(problems.is_empty(), "{}", problems.join("\n"));
    }

    #[test]
    fn a_page_is_the_rules_own_doc_under_a_title() {
        let page = doctor::rules::info(sessions::RULES[0]);
        assert_eq!((page.code.as_str(), page.pack), ("R1", "sessions"));
        assert!(page.markdown.starts_with("# R1 `unreadable-document`\n"));
        assert!(page.markdown.ends_with(sessions::RULES[0].doc()));
    }
}
