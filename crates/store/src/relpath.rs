//! Paths relative to S as the doctor names items in what it writes (plans, manifests,
//! receipts, `last.json`): components joined with `/` on every OS, so a plan made on one
//! machine reads the same on another (docs/decisions.md, "Issue 22: portable paths"). Where such
//! a path meets an absolute one (a store's canonical path, which the app records and hashes in
//! the OS's own form), [`native`] joins it component by component with the OS's separator.

use std::path::{Path, PathBuf};

/// `base` joined with each `/`-separated component of `rel` (empty components skipped): on
/// Windows `\\?\C:\S` and `a/runtime` give `\\?\C:\S\a\runtime`, as `std::fs::canonicalize`
/// spells that store (in a verbatim path `/` is no separator), and on Unix the same as
/// `base.join(rel)`.
pub fn native(base: &Path, rel: &str) -> PathBuf {
    let mut out = base.to_path_buf();
    for part in rel.split('/').filter(|p| !p.is_empty()) {
        out.push(part);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_relative_path_joins_with_the_separator_of_the_os() {
        let base = Path::new(if cfg!(windows) { r"\\?\C:\S" } else { "/S" });
        let joined = native(base, "a/runtime");
        assert_eq!(joined, base.join("a").join("runtime"));
        assert_eq!(
            joined.components().count(),
            base.components().count() + 2,
            "two components, not one named `a/runtime`"
        );
        let sep = std::path::MAIN_SEPARATOR;
        let text = joined.to_str().unwrap();
        assert!(text.ends_with(&format!("S{sep}a{sep}runtime")), "{text}");
        assert_eq!(native(base, "a//runtime/"), joined);
    }
}
