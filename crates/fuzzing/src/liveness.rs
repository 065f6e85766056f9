//! Target `liveness`: what `/proc/<pid>` holds (cwd and fd link targets, cmdline, environ, maps
//! lines) → the process scan (`fsroot::procfs`) and the liveness index
//! (`engine::liveness::ProcessRefs`).
//!
//! Input: parts joined by [`SEP`] (a byte no UTF-8 text holds): the `cwd` link's target, then
//! `cmdline`, `environ` and `maps` as the kernel writes them, then the `fd/` links' targets, one
//! a line. They are laid out as a procfs in a temporary directory under this process's own pid,
//! which the scan requires to find.

use std::path::{Component, Path, PathBuf};

use engine::liveness::ProcessRefs;
use fsroot::procfs::Procfs;

use crate::LIVENESS_SEP as SEP;

/// Scans the fake procfs and indexes it, and asserts:
///
/// * the scan finds exactly this one process, with argv and environ split on NUL, the cwd and fd
///   targets as linked, and the maps paths absolute, sorted, without duplicates, each spelled in
///   the maps text;
/// * the index finds every absolute cwd, fd and map path, and every absolute argv element
///   without a `:`, each at its lexically normal form;
/// * whatever it finds for a query is absolute, lexically normal and at or under the query; it
///   finds nothing for a relative query, and something under `/` exactly when it is not empty.
pub fn liveness(data: &[u8]) {
    let mut parts = data.split(|b| *b == SEP);
    let cwd = parts.next().unwrap_or_default();
    let cmdline = parts.next().unwrap_or_default();
    let environ = parts.next().unwrap_or_default();
    let maps = parts.next().unwrap_or_default();
    let fds: Vec<&[u8]> = parts
        .next()
        .unwrap_or_default()
        .split(|b| *b == b'\n')
        .filter(|t| linkable(t))
        .take(16)
        .collect();

    let tmp = tempfile::tempdir().expect("a temporary directory");
    let pid = std::process::id();
    let dir = tmp.path().join(pid.to_string());
    std::fs::create_dir_all(dir.join("fd")).expect("fd/");
    let link = |target: &[u8], at: &Path| {
        test_support::unix::symlink(test_support::unix::os_string(target), at).expect("a link");
    };
    let cwd = linkable(cwd).then(|| {
        link(cwd, &dir.join("cwd"));
        PathBuf::from(test_support::unix::os_string(cwd))
    });
    std::fs::write(dir.join("cmdline"), cmdline).expect("cmdline");
    std::fs::write(dir.join("environ"), environ).expect("environ");
    std::fs::write(dir.join("maps"), maps).expect("maps");
    for (n, t) in fds.iter().enumerate() {
        link(t, &dir.join("fd").join(n.to_string()));
    }

    let scan = Procfs::open(tmp.path())
        .expect("open the fake procfs")
        .scan()
        .expect("the fake procfs lists this process");
    assert_eq!(scan.processes.len(), 1);
    let p = &scan.processes[0];
    assert_eq!(p.pid, pid);
    assert_eq!(p.cwd, cwd);
    let split = |b: &[u8]| -> Vec<Vec<u8>> {
        b.split(|c| *c == 0)
            .filter(|s| !s.is_empty())
            .map(<[u8]>::to_vec)
            .collect()
    };
    let argv: Vec<Vec<u8>> = p
        .argv
        .iter()
        .map(|a| a.as_encoded_bytes().to_vec())
        .collect();
    assert_eq!(argv, split(cmdline));
    let env: Vec<Vec<u8>> = p
        .environ
        .iter()
        .map(|a| a.as_encoded_bytes().to_vec())
        .collect();
    assert_eq!(env, split(environ));
    let mut got: Vec<&[u8]> = p
        .fds
        .iter()
        .map(|f| f.as_os_str().as_encoded_bytes())
        .collect();
    let mut want = fds.clone();
    got.sort();
    want.sort();
    assert_eq!(got, want, "fd targets");
    assert!(p.maps.windows(2).all(|w| w[0] < w[1]), "maps sorted, once");
    for m in &p.maps {
        let b = m.as_os_str().as_encoded_bytes();
        assert!(b.starts_with(b"/"), "a relative mapped path {m:?}");
        assert!(
            maps.windows(b.len()).any(|w| w == b),
            "{m:?} is not in maps"
        );
    }

    let info = p.clone();
    let refs = ProcessRefs::from_scan(scan);
    assert_eq!(refs.processes, 1);
    let must_find = info
        .cwd
        .iter()
        .chain(&info.fds)
        .chain(&info.maps)
        .map(|p| p.as_os_str().as_encoded_bytes())
        .chain(
            info.argv
                .iter()
                .map(|a| a.as_encoded_bytes())
                .filter(|a| !a.contains(&b':')),
        )
        .filter(|b| b.starts_with(b"/"));
    for path in must_find {
        let q = PathBuf::from(test_support::unix::os_string(path));
        let q = q.as_path();
        let r = refs
            .referencing(q)
            .unwrap_or_else(|| panic!("{q:?} is referenced, yet not found"));
        assert_eq!(r.path, normal(q), "found {q:?} at another path");
    }
    let queries = [
        Path::new("/"),
        Path::new("/tmp"),
        Path::new("/tmp/go-build1"),
    ];
    for q in queries
        .into_iter()
        .chain(info.maps.iter().map(PathBuf::as_path))
    {
        if let Some(r) = refs.referencing(q) {
            assert!(
                r.path.starts_with(normal(q)),
                "{:?} is not under {q:?}",
                r.path
            );
            assert!(
                r.path
                    .components()
                    .all(|c| matches!(c, Component::RootDir | Component::Normal(_))),
                "{:?} is not normal",
                r.path
            );
        }
    }
    assert_eq!(refs.referencing(Path::new("/")).is_some(), !refs.is_empty());
    assert!(refs.referencing(Path::new("relative")).is_none());
}

/// Whether `target` can be a link's target: not empty, no NUL, no newline (the separator of
/// the fd part), shorter than `PATH_MAX`.
fn linkable(target: &[u8]) -> bool {
    !target.is_empty() && target.len() < 4096 && !target.contains(&0) && !target.contains(&b'\n')
}

/// `p` (absolute) with `.` dropped and `..` popped, as the index keeps paths.
fn normal(p: &Path) -> PathBuf {
    let mut out = PathBuf::from("/");
    for c in p.components() {
        match c {
            Component::Normal(n) => out.push(n),
            Component::ParentDir => {
                out.pop();
            }
            _ => {}
        }
    }
    out
}
