//! The workspace's layering, checked over `cargo metadata` by `cargo test`: which package may
//! depend on which (ARCHITECTURE.md, "Code map"). A dependency that points the wrong way fails
//! the test with the package, the dependency and the rule it breaks. Inside `store`, no two
//! modules depend on each other, however indirectly (`module_cycle`).

/// The normal (not dev, not build) dependencies of each workspace package.
#[cfg(test)]
fn dependencies(root: &std::path::Path) -> Vec<(String, String, Vec<String>)> {
    let out = std::process::Command::new(env!("CARGO"))
        .args([
            "metadata",
            "--format-version",
            "1",
            "--no-deps",
            "--offline",
        ])
        .current_dir(root)
        .output()
        .expect("cargo metadata runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let meta: serde_json::Value = serde_json::from_slice(&out.stdout).expect("metadata is JSON");
    meta["packages"]
        .as_array()
        .expect("packages")
        .iter()
        .map(|p| {
            let manifest = p["manifest_path"].as_str().unwrap_or_default();
            let dir = std::path::Path::new(manifest)
                .parent()
                .and_then(|d| d.strip_prefix(root).ok())
                .map(|d| d.to_string_lossy().into_owned())
                .unwrap_or_default();
            let deps = p["dependencies"]
                .as_array()
                .expect("dependencies")
                .iter()
                .filter(|d| d["kind"].is_null())
                .map(|d| d["name"].as_str().unwrap_or_default().to_owned())
                .collect();
            (p["name"].as_str().unwrap_or_default().to_owned(), dir, deps)
        })
        .collect()
}

/// What the layering forbids `package` (at `dir`, relative to the workspace) to depend on
/// `dep` for, or `None` when it is allowed.
#[cfg(test)]
fn forbidden(package: &str, dir: &str, dep: &str) -> Option<&'static str> {
    // A pack owns its summary, which is JSON: serde is data, not I/O.
    let pack_may_use = [
        "kernel",
        "engine",
        "plan",
        "store",
        "refset",
        "serde",
        "serde_json",
    ];
    if dir.starts_with("rules/") && !pack_may_use.contains(&dep) {
        return Some(
            "a rule pack depends only on kernel, engine, plan, store and refset (and serde for \
             its summary's JSON)",
        );
    }
    // The kernel may use plan (the plan value) and fsroot (the confined root it seals through).
    let beside_the_kernel = [
        "store",
        "refset",
        "engine",
        "exec",
        "sessions",
        "build-dirs",
        "test-support",
        "fuzzing",
        "doctor",
        "xtask",
    ];
    match (package, dep) {
        ("kernel", d) if beside_the_kernel.contains(&d) => Some(
            "the kernel knows no pack and no store format: of the workspace it depends on plan \
             and fsroot only",
        ),
        ("engine", "exec") => Some("the engine plans; it never depends on the executor"),
        ("plan", d) if !matches!(d, "serde" | "serde_json") => {
            Some("plan is data: it depends only on serde and serde_json")
        }
        ("fsroot", "store" | "refset" | "engine" | "exec" | "plan") => {
            Some("fsroot is the bottom layer: it knows no store format and no plan")
        }
        (p, "cli" | "doctor") if p != "xtask" => {
            Some("the product's command line is the top layer: nothing depends on it")
        }
        _ => None,
    }
}

/// The top-level modules of the crate whose sources are in `src` and which other top-level
/// modules each names (`crate::<module>`, or an item `lib.rs` re-exports from one), outside
/// comments and outside the test modules that end a file (`#[cfg(test)]` at column 0). Not
/// followed: items reached through a glob re-export (`pub use inventory::*`) and the paths
/// inside a grouped `use crate::{..}`; a cycle made only of such edges is not seen.
#[cfg(test)]
fn module_dependencies(
    src: &std::path::Path,
) -> std::collections::BTreeMap<String, std::collections::BTreeSet<String>> {
    use std::collections::{BTreeMap, BTreeSet};
    fn files(dir: &std::path::Path, out: &mut Vec<std::path::PathBuf>) {
        for e in std::fs::read_dir(dir).expect("the crate's sources list") {
            let p = e.expect("an entry").path();
            if p.is_dir() {
                files(&p, out);
            } else if p.extension().is_some_and(|x| x == "rs") {
                out.push(p);
            }
        }
    }
    let mut all = Vec::new();
    files(src, &mut all);
    let code = |p: &std::path::Path| -> String {
        let text = std::fs::read_to_string(p).expect("a source file reads");
        let text = text.split("\n#[cfg(test)]").next().unwrap_or_default();
        text.lines()
            .filter(|l| !l.trim_start().starts_with("//"))
            .collect::<Vec<_>>()
            .join("\n")
    };
    let module = |p: &std::path::Path| -> String {
        let rel = p.strip_prefix(src).expect("under src");
        let first = rel.components().next().expect("a component");
        let first = first.as_os_str().to_string_lossy();
        first.strip_suffix(".rs").unwrap_or(&first).to_owned()
    };
    let modules: BTreeSet<String> = all
        .iter()
        .map(|p| module(p))
        .filter(|m| m != "lib")
        .collect();
    // Items lib.rs re-exports by name: `pub use module::{a, b};` and `pub use module::a;`.
    let lib = code(&src.join("lib.rs"));
    let mut reexported = BTreeMap::new();
    for stmt in lib.split(';') {
        let Some(rest) = stmt.trim().strip_prefix("pub use ") else {
            continue;
        };
        let Some((m, items)) = rest.split_once("::") else {
            continue;
        };
        for item in items
            .trim_matches(|c| c == '{' || c == '}' || char::is_whitespace(c))
            .split(',')
        {
            reexported.insert(item.trim().to_owned(), m.trim().to_owned());
        }
    }
    let mut deps: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for p in &all {
        let from = module(p);
        if from == "lib" {
            continue;
        }
        let text = code(p);
        let entry = deps.entry(from.clone()).or_default();
        for (at, _) in text.match_indices("crate::") {
            let name: String = text[at + 7..]
                .chars()
                .take_while(|c| c.is_alphanumeric() || *c == '_')
                .collect();
            let to = if modules.contains(&name) {
                Some(name)
            } else {
                reexported.get(&name).cloned()
            };
            if let Some(to) = to.filter(|t| *t != from) {
                entry.insert(to);
            }
        }
    }
    deps
}

/// A cycle among `deps` (a module depending on itself through others), as the modules met in
/// order with the first repeated at the end, or `None`.
#[cfg(test)]
fn module_cycle(
    deps: &std::collections::BTreeMap<String, std::collections::BTreeSet<String>>,
) -> Option<Vec<String>> {
    fn visit(
        m: &str,
        deps: &std::collections::BTreeMap<String, std::collections::BTreeSet<String>>,
        path: &mut Vec<String>,
        done: &mut std::collections::BTreeSet<String>,
    ) -> Option<Vec<String>> {
        if let Some(i) = path.iter().position(|p| p == m) {
            let mut cycle = path[i..].to_vec();
            cycle.push(m.to_owned());
            return Some(cycle);
        }
        if done.contains(m) {
            return None;
        }
        path.push(m.to_owned());
        for d in deps.get(m).into_iter().flatten() {
            if let Some(c) = visit(d, deps, path, done) {
                return Some(c);
            }
        }
        path.pop();
        done.insert(m.to_owned());
        None
    }
    let mut done = std::collections::BTreeSet::new();
    deps.keys()
        .find_map(|m| visit(m, deps, &mut Vec::new(), &mut done))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_modules_of_store_form_no_cycle() {
        let deps = module_dependencies(&crate::workspace_root().join("crates/store/src"));
        // The modules are found, and what they name: the scan uses the cache and the judges.
        assert!(
            deps["scan"].contains("cache") && deps["scan"].contains("judge"),
            "{deps:?}"
        );
        assert!(
            deps["recognize"].contains("judge"),
            "a re-exported item counts: {deps:?}"
        );
        assert_eq!(module_cycle(&deps), None, "{deps:?}");
    }

    #[test]
    fn a_module_cycle_is_found_however_long() {
        let deps = |edges: &[(&str, &str)]| {
            let mut m =
                std::collections::BTreeMap::<String, std::collections::BTreeSet<String>>::new();
            for (a, b) in edges {
                m.entry((*a).into()).or_default().insert((*b).into());
                m.entry((*b).into()).or_default();
            }
            m
        };
        assert_eq!(
            module_cycle(&deps(&[("a", "b"), ("b", "c"), ("a", "c")])),
            None
        );
        assert_eq!(
            module_cycle(&deps(&[("a", "b"), ("b", "c"), ("c", "a")])),
            Some(vec!["a".into(), "b".into(), "c".into(), "a".into()])
        );
        assert_eq!(
            module_cycle(&deps(&[
                ("x", "scan"),
                ("scan", "fastdoc"),
                ("fastdoc", "scan")
            ])),
            Some(vec!["fastdoc".into(), "scan".into(), "fastdoc".into()])
        );
    }

    #[test]
    fn crate_dependencies_point_one_way() {
        let packages = dependencies(&crate::workspace_root());
        assert!(packages.len() >= 9, "{} packages", packages.len());
        let mut wrong = Vec::new();
        for (name, dir, deps) in &packages {
            for dep in deps {
                if let Some(rule) = forbidden(name, dir, dep) {
                    wrong.push(format!("{name} ({dir}) depends on {dep}: {rule}"));
                }
            }
        }
        assert!(wrong.is_empty(), "{}", wrong.join("\n"));
    }

    #[test]
    fn the_layering_refuses_each_wrong_direction() {
        assert!(forbidden("sessions", "rules/sessions", "fsroot").is_some());
        assert!(forbidden("sessions", "rules/sessions", "exec").is_some());
        assert!(forbidden("sessions", "rules/sessions", "store").is_none());
        assert!(forbidden("sessions", "rules/sessions", "serde").is_none());
        assert!(forbidden("sessions", "rules/sessions", "rayon").is_some());
        assert!(forbidden("engine", "crates/engine", "exec").is_some());
        assert!(forbidden("plan", "crates/plan", "store").is_some());
        assert!(forbidden("plan", "crates/plan", "serde_json").is_none());
        assert!(forbidden("fsroot", "crates/fsroot", "store").is_some());
        assert!(forbidden("exec", "crates/exec", "cli").is_some());
        assert!(forbidden("kernel", "crates/kernel", "store").is_some());
        assert!(forbidden("kernel", "crates/kernel", "sessions").is_some());
        assert!(forbidden("kernel", "crates/kernel", "engine").is_some());
        assert!(forbidden("kernel", "crates/kernel", "plan").is_none());
        assert!(forbidden("kernel", "crates/kernel", "chrono").is_none());
        assert!(forbidden("build-dirs", "rules/build-dirs", "kernel").is_none());
    }
}
