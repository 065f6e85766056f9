//! `cargo xtask bench [--docs N]`: the dry-run benchmark. Generates a synthetic session store
//! (N documents of ~16 KB with message bodies, one host store per 400 threads bound to them, 1%
//! torn documents), builds the release `doctor`, and compares the wall time of a dry run with
//! the time it takes merely to read every file of the store, both with a warm page cache. Prints
//! the numbers and, when `/usr/bin/time` exists, the dry run's peak resident memory.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use crate::Failure;

fn fail(e: impl std::fmt::Display) -> Failure {
    Failure::Failed(e.to_string())
}

/// Writes the synthetic store into `s` (which must not exist).
fn generate(s: &Path, docs: usize) -> Result<(u64, u64), Failure> {
    std::fs::create_dir_all(s).map_err(fail)?;
    let abs = s.canonicalize().map_err(fail)?;
    let abs = abs.display();
    let body_user = "x".repeat(400);
    let body_assistant = "y".repeat(1200);
    let mut messages = String::new();
    for i in 0..5 {
        if i > 0 {
            messages.push(',');
        }
        messages.push_str(&format!(
            r#"{{"role":"user","content":[{{"type":"text","text":"{body_user}"}}]}},{{"role":"assistant","content":[{{"type":"text","text":"{body_assistant}"}}]}}"#
        ));
    }
    let hosts = docs.div_ceil(400).max(1);
    let (mut files, mut bytes) = (0u64, 0u64);
    let mut write = |p: PathBuf, text: String| -> Result<(), Failure> {
        if let Some(parent) = p.parent() {
            std::fs::create_dir_all(parent).map_err(fail)?;
        }
        files += 1;
        bytes += text.len() as u64;
        std::fs::write(&p, text).map_err(fail)
    };
    for i in 0..docs {
        let id = format!("s{i}");
        let host = format!("h{}", i % hosts);
        if i % 100 == 99 {
            write(
                s.join(format!("{id}.json")),
                format!(r#"{{"schema_version":1,"metadata":{{"id":"{id}""#),
            )?;
            continue;
        }
        write(
            s.join(format!("{id}.json")),
            format!(
                r#"{{"schema_version":1,"metadata":{{"id":"{id}","runtime_store":{{"data_dir":"{abs}/{host}/runtime","execution_scope":"{scope}"}},"title":"t","created_at":"2026-09-01T10:00:00Z","updated_at":"2026-09-01T11:00:00Z","message_count":10,"total_tokens":0,"model":"m","workspace":"/w","mode":"agent"}},"messages":[{messages}],"system_prompt":null}}"#,
                scope = "0".repeat(64)
            ),
        )?;
        write(
            s.join(format!("{host}/runtime/threads/th-{id}.json")),
            format!(
                r#"{{"schema_version":2,"id":"th-{id}","created_at":"2026-09-01T10:00:00Z","updated_at":"2026-09-01T11:00:00Z","model":"m","workspace":"/w","mode":"agent","allow_shell":false,"trust_mode":false,"auto_approve":false,"session_id":"{id}","saved_session_checkpoint":{{"covered_turn_id":null,"messages_sha256":"{sha}","messages_len":10}}}}"#,
                sha = "0".repeat(64)
            ),
        )?;
    }
    Ok((files, bytes))
}

fn read_everything(dir: &Path) -> std::io::Result<u64> {
    let mut total = 0;
    for e in std::fs::read_dir(dir)? {
        let e = e?;
        let ft = e.file_type()?;
        if ft.is_dir() {
            total += read_everything(&e.path())?;
        } else if ft.is_file() {
            total += std::fs::read(e.path())?.len() as u64;
        }
    }
    Ok(total)
}

fn best_of<T>(n: usize, mut f: impl FnMut() -> Result<T, Failure>) -> Result<Duration, Failure> {
    let mut best = Duration::MAX;
    for _ in 0..n {
        let t = Instant::now();
        f()?;
        best = best.min(t.elapsed());
    }
    Ok(best)
}

/// Runs the benchmark.
pub fn run(root: &Path, args: &[String]) -> Result<(), Failure> {
    let docs = match args {
        [] => 20_000,
        [flag, n] if flag == "--docs" => n
            .parse()
            .map_err(|_| Failure::Usage(format!("bad --docs {n}")))?,
        _ => {
            return Err(Failure::Usage(format!(
                "unknown bench arguments: {}",
                args.join(" ")
            )))
        }
    };
    let status = Command::new(env!("CARGO"))
        .args(["build", "--release", "-p", "cli", "--bin", "doctor"])
        .current_dir(root)
        .status()
        .map_err(fail)?;
    if !status.success() {
        return Err(fail("cargo build --release failed"));
    }
    let doctor = root.join("target/release/doctor");
    let tmp = std::env::temp_dir().join(format!("doctor-bench-{}", std::process::id()));
    let s = tmp.join("S");
    let (files, bytes) = generate(&s, docs)?;
    let dry = || -> Result<(), Failure> {
        let out = Command::new(&doctor)
            .args(["--repair-sessions", "--dry-run", "--json", "--sessions-dir"])
            .arg(&s)
            .output()
            .map_err(fail)?;
        if out.status.success() {
            Ok(())
        } else {
            Err(fail(String::from_utf8_lossy(&out.stderr)))
        }
    };
    dry()?; // warm the page cache
    let read_time = best_of(3, || read_everything(&s).map_err(fail))?;
    let dry_time = best_of(3, dry)?;
    let rss = Command::new("/usr/bin/time")
        .arg("-f")
        .arg("%M")
        .arg(&doctor)
        .args(["--repair-sessions", "--dry-run", "--json", "--sessions-dir"])
        .arg(&s)
        .output()
        .ok()
        .and_then(|o| {
            String::from_utf8_lossy(&o.stderr)
                .lines()
                .last()
                .and_then(|l| l.trim().parse::<u64>().ok())
        });
    let _ = std::fs::remove_dir_all(&tmp);
    println!(
        "store: {docs} documents, {files} files, {:.1} MB; cores: {}",
        bytes as f64 / 1e6,
        std::thread::available_parallelism().map_or(1, |n| n.get())
    );
    println!("read every file once: {:.3} s", read_time.as_secs_f64());
    println!(
        "doctor --repair-sessions --dry-run: {:.3} s ({:.2}x the read)",
        dry_time.as_secs_f64(),
        dry_time.as_secs_f64() / read_time.as_secs_f64()
    );
    match rss {
        Some(kb) => println!("dry run peak RSS: {:.1} MB", kb as f64 / 1024.0),
        None => println!("dry run peak RSS: n/a (/usr/bin/time not found)"),
    }
    Ok(())
}
