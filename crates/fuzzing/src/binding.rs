//! Target `binding`: a document's `metadata.runtime_store.data_dir` → the store it binds
//! (`refset::resolve_binding`, `refset::binds_store`).
//!
//! The bindings resolve against a small tree made once per process in the temporary directory:
//! S (`s/`, holding the stores `a/runtime` and `b/runtime-recovered-1`, and a link `out` to a
//! store outside S), a link `link` to S (S as given, through a symbolic link), and that outside
//! store, `outside/runtime`. In the input, a leading `@S` stands for S as given, `@C` for its
//! canonical path and `@O` for the directory outside it, so a mutated binding stays near them.

use std::path::{Component, Path, PathBuf};
use std::sync::OnceLock;

/// The stores of S, relative to it.
const STORES: &[&str] = &["a/runtime", "b/runtime-recovered-1"];

struct Tree {
    /// S as given: `<base>/link`, a link to `<base>/s`.
    given: PathBuf,
    /// S's canonical path.
    canonical: PathBuf,
    /// `<base>/outside`, canonical.
    outside: PathBuf,
}

/// The prefix of the tree's directory in the temporary directory, before the process id.
const PREFIX: &str = "doctor-fuzz-binding-";

/// The tree, made on first use in `<temp dir>/doctor-fuzz-binding-<pid>`. A static is never
/// dropped, so the directory outlives the process: the trees of processes that are gone are
/// removed when a new one is made.
fn tree() -> &'static Tree {
    static TREE: OnceLock<Tree> = OnceLock::new();
    TREE.get_or_init(|| {
        let tmp = std::env::temp_dir();
        for e in std::fs::read_dir(&tmp).into_iter().flatten().flatten() {
            let name = e.file_name();
            let pid = name.to_str().and_then(|n| n.strip_prefix(PREFIX));
            if pid.is_some_and(|pid| !Path::new("/proc").join(pid).exists()) {
                let _ = std::fs::remove_dir_all(e.path());
            }
        }
        let base = tmp.join(format!("{PREFIX}{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&base);
        std::fs::create_dir_all(&base).expect("the tree's directory");
        let base = base.canonicalize().expect("canonical temporary directory");
        let s = base.join("s");
        for store in STORES {
            crate::write(&s, &format!("{store}/owner.json"), b"{}");
        }
        crate::write(&base, "outside/runtime/owner.json", b"{}");
        test_support::unix::symlink(&s, base.join("link")).expect("link to S");
        test_support::unix::symlink(base.join("outside"), s.join("out")).expect("link out of S");
        Tree {
            given: base.join("link"),
            canonical: s,
            outside: base.join("outside"),
        }
    })
}

/// Resolves `data` as a binding and asserts:
///
/// * a resolution is a path inside S (relative, no `.`, `..` or empty component) that is the
///   binding's lexical normal form taken relative to one of S's spellings (or, for a relative
///   binding, the binding itself normalised), never anything outside S;
/// * a binding said to bind a store of S names it: lexically, or through links to exactly
///   that store under S's canonical path; and it binds no other store.
pub fn binding(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let t = tree();
    let data_dir = [("@S", &t.given), ("@C", &t.canonical), ("@O", &t.outside)]
        .iter()
        .find_map(|(mark, dir)| {
            text.strip_prefix(mark)
                .map(|rest| format!("{}{rest}", dir.display()))
        })
        .unwrap_or_else(|| text.to_owned());
    if data_dir.contains('\0') {
        return;
    }
    let anchors = [t.given.as_path(), t.canonical.as_path()];
    if let Ok(rel) = refset::resolve_binding(&data_dir, &anchors) {
        assert!(crate::inside_s(&rel), "{data_dir:?} resolves to {rel:?}");
        let p = Path::new(&data_dir);
        let lexical = lexical(p);
        if p.is_absolute() {
            assert!(
                anchors.iter().any(|a| lexical == lexical_join(a, &rel)),
                "{data_dir:?} resolves to {rel:?}, which is not where it leads"
            );
        } else {
            assert_eq!(lexical, lexical_join(Path::new(""), &rel));
        }
    }
    let bound: Vec<&str> = STORES
        .iter()
        .copied()
        .filter(|s| refset::binds_store(&data_dir, &anchors, s))
        .collect();
    assert!(bound.len() <= 1, "{data_dir:?} binds {bound:?}");
    for store in bound {
        let by_name = refset::resolve_binding(&data_dir, &anchors).as_deref() == Ok(store);
        let by_links =
            fsroot::canonical_path(Path::new(&data_dir)) == Some(t.canonical.join(store));
        assert!(
            by_name || by_links,
            "{data_dir:?} binds {store}, which it does not name"
        );
    }
}

/// The normal components of `p`, `..` popping (or kept, at the start of a relative path).
fn lexical(p: &Path) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for c in p.components() {
        match c {
            Component::Normal(n) => out.push(n.to_string_lossy().into_owned()),
            Component::ParentDir if out.last().is_some_and(|l| l != "..") => {
                out.pop();
            }
            Component::ParentDir if !p.is_absolute() => out.push("..".into()),
            _ => {}
        }
    }
    out
}

fn lexical_join(anchor: &Path, rel: &str) -> Vec<String> {
    lexical(&anchor.join(rel))
}
