//! `cargo xtask tidy`: checks of the source tree that the compiler cannot make, also run by
//! plain `cargo test` (`workspace_is_tidy`):
//!
//! - `std::fs` is used only in `crates/fsroot` (any `.rs` under `crates/` or `rules/`, outside
//!   `crates/fsroot/` and outside `tests/` directories). Comments and string literals do not
//!   count; `use std::{fs, ..}` groups do.
//! - every `.rs` file of the workspace (outside `target/`) starts with a `//!` line.

use std::fmt;
use std::path::{Path, PathBuf};

use crate::Failure;

/// One finding, with the file (relative to the workspace root) and line it concerns.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Violation {
    /// Relative to the workspace root, `/`-separated.
    pub path: String,
    /// 1-based line.
    pub line: usize,
    /// What is wrong.
    pub message: String,
}

impl fmt::Display for Violation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}: {}", self.path, self.line, self.message)
    }
}

/// Runs the checks on the workspace at `root` and prints what they find.
pub fn run(root: &Path) -> Result<(), Failure> {
    let found = check_workspace(root);
    for v in &found {
        eprintln!("{v}");
    }
    if found.is_empty() {
        println!("tidy: ok");
        Ok(())
    } else {
        Err(Failure::Failed(format!("tidy: {} problem(s)", found.len())))
    }
}

/// Every violation of the checks under `root`, sorted by path and line.
pub fn check_workspace(root: &Path) -> Vec<Violation> {
    let mut files = Vec::new();
    rust_files(root, root, &mut files);
    files.sort();
    let mut found = Vec::new();
    for file in files {
        let rel = file
            .strip_prefix(root)
            .unwrap_or(&file)
            .to_string_lossy()
            .replace('\\', "/");
        let src = match std::fs::read_to_string(&file) {
            Ok(s) => s,
            Err(e) => {
                found.push(Violation {
                    path: rel,
                    line: 1,
                    message: format!("cannot read: {e}"),
                });
                continue;
            }
        };
        found.extend(check_file(&rel, &src));
    }
    found
}

/// The violations of one file, `rel` being its path relative to the workspace root.
pub fn check_file(rel: &str, src: &str) -> Vec<Violation> {
    let mut found = Vec::new();
    if !starts_with_module_doc(src) {
        found.push(Violation {
            path: rel.to_owned(),
            line: 1,
            message: "does not start with a `//!` line saying what the module owns".into(),
        });
    }
    if fs_is_confined_in(rel) {
        for (line, what) in std_fs_uses(src) {
            found.push(Violation {
                path: rel.to_owned(),
                line,
                message: format!(
                    "`{what}`: std::fs is used only in crates/fsroot; go through the confined root"
                ),
            });
        }
    }
    found
}

/// Whether the `std::fs` rule applies to a file at `rel` (relative to the workspace root).
pub fn fs_is_confined_in(rel: &str) -> bool {
    (rel.starts_with("crates/") || rel.starts_with("rules/"))
        && !rel.starts_with("crates/fsroot/")
        && !rel.contains("/tests/")
}

/// Whether the first line of `src` is a `//!` comment.
pub fn starts_with_module_doc(src: &str) -> bool {
    src.lines().next().is_some_and(|l| l.starts_with("//!"))
}

fn rust_files(root: &Path, dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        let name = entry.file_name();
        let name = name.to_string_lossy();
        let Ok(ft) = entry.file_type() else { continue };
        if ft.is_dir() {
            if name.starts_with('.') || (dir == root && name == "target") {
                continue;
            }
            rust_files(root, &path, out);
        } else if ft.is_file() && name.ends_with(".rs") {
            out.push(path);
        }
    }
}

/// Each use of `std::fs` in `src` as (line, the offending path), ignoring comments and
/// string and character literals: `std::fs`, `::std::fs::read`, `std :: fs`, and `fs` as an
/// item of a `std::{..}` group (`use std::{fs, io}`, `use std::{fs::File}`).
pub fn std_fs_uses(src: &str) -> Vec<(usize, String)> {
    let toks = tokens(src);
    let mut found = Vec::new();
    for k in 0..toks.len() {
        if toks[k].text != "std" || toks.get(k + 1).map(|t| t.text.as_str()) != Some("::") {
            continue;
        }
        match toks.get(k + 2).map(|t| t.text.as_str()) {
            Some("fs") => found.push((toks[k].line, "std::fs".to_owned())),
            Some("{") => {
                let mut depth = 0usize;
                let mut item_start = false;
                for t in &toks[k + 2..] {
                    match t.text.as_str() {
                        "{" => {
                            depth += 1;
                            item_start = depth == 1;
                        }
                        "}" => {
                            depth -= 1;
                            if depth == 0 {
                                break;
                            }
                        }
                        "," if depth == 1 => item_start = true,
                        "fs" if item_start => {
                            found.push((t.line, "use std::{fs ..}".to_owned()));
                            item_start = false;
                        }
                        _ => item_start = false,
                    }
                }
            }
            _ => {}
        }
    }
    found
}

#[derive(Debug)]
struct Token {
    text: String,
    line: usize,
}

/// A rough Rust lexer: identifiers, `::`, and single punctuation characters, with their lines.
/// Whitespace, comments, string literals (plain, byte, raw) and character literals are
/// dropped; lifetimes are kept apart from character literals.
fn tokens(src: &str) -> Vec<Token> {
    let c: Vec<char> = src.chars().collect();
    let mut out = Vec::new();
    let mut line = 1;
    let mut i = 0;
    let count_lines = |from: usize, to: usize| c[from..to].iter().filter(|&&x| x == '\n').count();
    while i < c.len() {
        let ch = c[i];
        if ch == '\n' {
            line += 1;
            i += 1;
        } else if ch.is_whitespace() {
            i += 1;
        } else if ch == '/' && c.get(i + 1) == Some(&'/') {
            while i < c.len() && c[i] != '\n' {
                i += 1;
            }
        } else if ch == '/' && c.get(i + 1) == Some(&'*') {
            let start = i;
            let mut depth = 0;
            while i < c.len() {
                if c[i] == '/' && c.get(i + 1) == Some(&'*') {
                    depth += 1;
                    i += 2;
                } else if c[i] == '*' && c.get(i + 1) == Some(&'/') {
                    depth -= 1;
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    i += 1;
                }
            }
            line += count_lines(start, i);
        } else if ch == '"' {
            let start = i;
            i = skip_quoted(&c, i + 1, '"');
            line += count_lines(start, i);
        } else if ch == '\'' {
            // 'x', '\n', '\u{..}' are characters; 'a (no closing quote) is a lifetime.
            if c.get(i + 1) == Some(&'\\') {
                i = skip_quoted(&c, i + 1, '\'');
            } else if c.get(i + 2) == Some(&'\'') {
                i += 3;
            } else {
                i += 1;
            }
        } else if ch.is_alphanumeric() || ch == '_' {
            let start = i;
            while i < c.len() && (c[i].is_alphanumeric() || c[i] == '_') {
                i += 1;
            }
            let word: String = c[start..i].iter().collect();
            let raw_prefix = matches!(word.as_str(), "r" | "br" | "cr");
            let str_prefix = matches!(word.as_str(), "b" | "c");
            if raw_prefix && matches!(c.get(i), Some('"') | Some('#')) {
                let mut hashes = 0;
                while c.get(i) == Some(&'#') {
                    hashes += 1;
                    i += 1;
                }
                if c.get(i) == Some(&'"') {
                    let from = i;
                    i = skip_raw(&c, i + 1, hashes);
                    line += count_lines(from, i);
                    continue;
                }
                // `r#ident`: a raw identifier.
                let s = i;
                while i < c.len() && (c[i].is_alphanumeric() || c[i] == '_') {
                    i += 1;
                }
                out.push(Token {
                    text: c[s..i].iter().collect(),
                    line,
                });
            } else if str_prefix && c.get(i) == Some(&'"') {
                let from = i;
                i = skip_quoted(&c, i + 1, '"');
                line += count_lines(from, i);
            } else if str_prefix && c.get(i) == Some(&'\'') {
                i = skip_quoted(&c, i + 1, '\'');
            } else {
                out.push(Token { text: word, line });
            }
        } else if ch == ':' && c.get(i + 1) == Some(&':') {
            out.push(Token {
                text: "::".into(),
                line,
            });
            i += 2;
        } else {
            out.push(Token {
                text: ch.to_string(),
                line,
            });
            i += 1;
        }
    }
    out
}

/// The index after the closing `quote` of a literal whose body starts at `i`.
fn skip_quoted(c: &[char], mut i: usize, quote: char) -> usize {
    while i < c.len() {
        match c[i] {
            '\\' => i += 2,
            x if x == quote => return i + 1,
            _ => i += 1,
        }
    }
    i
}

/// The index after the `"` followed by `hashes` `#` that closes a raw string.
fn skip_raw(c: &[char], mut i: usize, hashes: usize) -> usize {
    while i < c.len() {
        if c[i] == '"' && (1..=hashes).all(|k| c.get(i + k) == Some(&'#')) {
            return i + 1 + hashes;
        }
        i += 1;
    }
    i
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lines_of(src: &str) -> Vec<usize> {
        std_fs_uses(src).into_iter().map(|(l, _)| l).collect()
    }

    #[test]
    fn finds_every_spelling_of_std_fs() {
        for src in [
            "use std::fs;",
            "fn f() { let _ = std::fs::read(\"x\"); }",
            "let _ = ::std::fs::metadata(p);",
            "use std :: fs :: File;",
            "use std::fs::{self, File};",
            "use std::{fs, io};",
            "use std::{io, fs::File};",
            "use std::{io::{self, Read}, fs::{self}};",
            "fn f<'a>(x: &'a str) { std::fs::read(x); }",
            "let q = '\"'; std::fs::read(p);",
            "let s = r#\"a \" b\"#; std::fs::read(p);",
            "let b = b'x'; let s = b\"y\"; std::fs::read(p);",
        ] {
            assert_eq!(lines_of(src).len(), 1, "{src}");
        }
    }

    #[test]
    fn ignores_comments_strings_and_other_crates() {
        for src in [
            "// std::fs::read\n",
            "//! owns std::fs\n",
            "/* use std::fs; /* nested */ std::fs */",
            "let s = \"std::fs::read\";",
            "let s = \"a \\\" std::fs\";",
            "let s = r#\"use std::fs;\"#;",
            "let s = br\"std::fs\";",
            "use std::os::unix::fs::MetadataExt;",
            "use cap_std::fs::Dir;",
            "use std::{io::{self, Read}, os::unix::fs::PermissionsExt};",
            "use std::io; let fs = 1; fsroot::read(fs);",
        ] {
            assert_eq!(lines_of(src), Vec::<usize>::new(), "{src}");
        }
    }

    #[test]
    fn reports_the_line() {
        let src = "//! x\n/* two\nlines */\nlet s = \"a\nb\";\nuse std::{\n    io,\n    fs,\n};\n";
        assert_eq!(lines_of(src), [8]);
    }

    #[test]
    fn module_doc_must_be_the_first_line() {
        assert!(starts_with_module_doc("//! Owns the thing.\nfn f() {}\n"));
        assert!(!starts_with_module_doc("// Owns the thing.\n"));
        assert!(!starts_with_module_doc("\n//! late\n"));
        assert!(!starts_with_module_doc("#![allow(x)]\n//! late\n"));
        assert!(!starts_with_module_doc(""));
    }

    #[test]
    fn the_fs_rule_covers_product_code_only() {
        assert!(fs_is_confined_in("crates/store/src/scan.rs"));
        assert!(fs_is_confined_in(
            "rules/sessions/src/r1_unreadable_document.rs"
        ));
        assert!(!fs_is_confined_in("crates/fsroot/src/lib.rs"));
        assert!(!fs_is_confined_in("crates/cli/tests/schemas.rs"));
        assert!(!fs_is_confined_in("rules/sessions/tests/fixtures.rs"));
        assert!(!fs_is_confined_in("xtask/src/tidy.rs"));
    }

    #[test]
    fn a_violating_file_fails_the_check() {
        let found = check_file("crates/store/src/bad.rs", "use std::fs;\n");
        assert_eq!(found.len(), 2, "{found:?}");
        assert_eq!(found[0].line, 1);
        assert!(found[0].message.contains("//!"));
        assert!(found[1].message.contains("std::fs"));
        assert_eq!(
            found[1].to_string(),
            "crates/store/src/bad.rs:1: `std::fs`: std::fs is used only in crates/fsroot; go \
             through the confined root"
        );
        assert!(check_file("crates/fsroot/src/lib.rs", "//! root\nuse std::fs;\n").is_empty());
    }

    #[test]
    fn the_walk_finds_violations_in_a_tree() {
        let root = std::env::temp_dir().join(format!("xtask-tidy-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        for (rel, text) in [
            ("crates/a/src/lib.rs", "//! a\nuse std::{fs, io};\n"),
            ("crates/a/tests/t.rs", "//! t\nuse std::fs;\n"),
            ("crates/fsroot/src/lib.rs", "//! root\nuse std::fs;\n"),
            ("rules/p/src/r.rs", "fn main() {}\n"),
            ("target/debug/build/x.rs", "no doc\n"),
        ] {
            let p = root.join(rel);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(p, text).unwrap();
        }
        let found: Vec<String> = check_workspace(&root)
            .iter()
            .map(|v| format!("{}:{}", v.path, v.line))
            .collect();
        let _ = std::fs::remove_dir_all(&root);
        assert_eq!(found, ["crates/a/src/lib.rs:2", "rules/p/src/r.rs:1"]);
    }

    /// The real check, run by plain `cargo test`.
    #[test]
    fn workspace_is_tidy() {
        let found = check_workspace(&crate::workspace_root());
        let report: Vec<String> = found.iter().map(ToString::to_string).collect();
        assert!(report.is_empty(), "tidy:\n{}", report.join("\n"));
    }
}
