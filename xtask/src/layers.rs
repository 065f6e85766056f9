//! The workspace's layering, checked over `cargo metadata` by `cargo test`: which package may
//! depend on which (ARCHITECTURE.md, "Code map"). A dependency that points the wrong way fails
//! the test with the package, the dependency and the rule it breaks.

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
    let pack_may_use = ["engine", "plan", "store", "refset", "serde", "serde_json"];
    if dir.starts_with("rules/") && !pack_may_use.contains(&dep) {
        return Some(
            "a rule pack depends only on engine, plan, store and refset (and serde for its \
             summary's JSON)",
        );
    }
    match (package, dep) {
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

#[cfg(test)]
mod tests {
    use super::*;

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
    }
}
