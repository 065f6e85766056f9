//! `cargo xtask fuzz --seed`: writes the seed corpora of `fuzz/corpus/<target>/` (replacing
//! what is there) from fixtures/: the session documents and thread records (with their stores'
//! turns and items) of every fixture store and the demo store, the plan files the real doctor
//! writes for them, the manifest and receipt lines (with the set-aside files) of a real run and
//! of a restore on a copy of each, their bindings, and hand-made samples of the small inputs
//! (/proc items, durations, run ids, temporary-file names). Each file is named by the first 16
//! hex digits of its SHA-256; files larger than [`MAX_SEED`] are left out, so the corpus stays
//! small.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};
use store::Clock;

use crate::Failure;

/// The largest seed kept, in bytes.
const MAX_SEED: usize = 48 * 1024;
/// The instant runs are made at when a fixture names none.
const DEFAULT_NOW: &str = "2026-11-29T12:00:00Z";
/// How `sessions_dir` and every other spelling of a copy's temporary path reads in the seeds.
const SESSIONS_DIR: &str = "/home/user/.codewhale/sessions";
/// The run id a restore's receipts carry in the seeds.
const RESTORE_RUN: &str = "20261129T120000Z-def456";

fn fail(e: impl std::fmt::Display) -> Failure {
    Failure::Failed(e.to_string())
}

/// Seeds, by target.
#[derive(Default)]
struct Seeds(BTreeMap<&'static str, BTreeMap<String, Vec<u8>>>);

impl Seeds {
    fn add(&mut self, target: &'static str, bytes: Vec<u8>) {
        if bytes.len() > MAX_SEED {
            return;
        }
        let name = hex(&Sha256::digest(&bytes))[..16].to_owned();
        self.0.entry(target).or_default().insert(name, bytes);
    }
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

/// Writes the seed corpora.
pub fn run(root: &Path) -> Result<(), Failure> {
    let mut seeds = Seeds::default();
    let mut stores: Vec<(PathBuf, String)> = Vec::new();
    let cases = root.join("fixtures/sessions");
    let mut names: Vec<PathBuf> = std::fs::read_dir(&cases)
        .map_err(fail)?
        .filter_map(|e| Some(e.ok()?.path()))
        .collect();
    names.sort();
    for case in names {
        let now = std::fs::read(case.join("case.json"))
            .ok()
            .and_then(|b| serde_json::from_slice::<serde_json::Value>(&b).ok())
            .and_then(|v| v.get("doctor_now")?.as_str().map(str::to_owned))
            .unwrap_or_else(|| DEFAULT_NOW.to_owned());
        if case.join("store").is_dir() {
            stores.push((case.join("store"), now));
        }
    }
    stores.push((root.join("fixtures/demo"), DEFAULT_NOW.to_owned()));
    for (store, now) in &stores {
        seed_files(&mut seeds, store)?;
        seed_runs(&mut seeds, store, now)?;
    }
    seed_by_hand(&mut seeds);
    let corpus = root.join("fuzz/corpus");
    let mut total = (0usize, 0usize);
    for (target, _) in fuzzing::TARGETS {
        let dir = corpus.join(target);
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).map_err(fail)?;
        let files = seeds.0.get(target).cloned().unwrap_or_default();
        let bytes: usize = files.values().map(Vec::len).sum();
        for (name, b) in &files {
            std::fs::write(dir.join(name), b).map_err(fail)?;
        }
        println!("{target:<16} {:>5} files {:>9} bytes", files.len(), bytes);
        total.0 += files.len();
        total.1 += bytes;
    }
    println!("{:<16} {:>5} files {:>9} bytes", "total", total.0, total.1);
    Ok(())
}

/// The files of `dir` (not following links), relative to it, sorted.
fn walk(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![PathBuf::new()];
    while let Some(rel) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(dir.join(&rel)) else {
            continue;
        };
        for e in entries.flatten() {
            let r = rel.join(e.file_name());
            match e.file_type() {
                Ok(t) if t.is_dir() => stack.push(r),
                Ok(_) => out.push(r),
                Err(_) => {}
            }
        }
    }
    out.sort();
    out
}

/// Documents, thread records with their store's turns and items, and bindings, as the fixture
/// store holds them.
fn seed_files(seeds: &mut Seeds, store: &Path) -> Result<(), Failure> {
    let files = walk(store);
    for rel in &files {
        let r = rel.to_string_lossy();
        let top_doc = rel.components().count() == 1 && r.ends_with(".json");
        let checkpoint = r.starts_with("checkpoints/") && r.ends_with(".json");
        if !(top_doc || checkpoint) {
            continue;
        }
        let Ok(bytes) = std::fs::read(store.join(rel)) else {
            continue;
        };
        if let Some(d) = serde_json::from_slice::<serde_json::Value>(&bytes)
            .ok()
            .and_then(|v| {
                v.pointer("/metadata/runtime_store/data_dir")?
                    .as_str()
                    .map(str::to_owned)
            })
        {
            seeds.add("binding", d.into_bytes());
        }
        seeds.add("id_tokens", bytes.clone());
        seeds.add("document", bytes);
    }
    // Every runtime store: a directory with a `threads/`.
    let mut runtime: Vec<PathBuf> = files
        .iter()
        .filter_map(|f| {
            let parent = f.parent()?;
            (parent.file_name()? == "threads").then(|| parent.parent().map(Path::to_path_buf))?
        })
        .collect();
    runtime.dedup();
    for rt in runtime {
        let read_dir = |sub: &str| -> Vec<Vec<u8>> {
            let mut names: Vec<PathBuf> = std::fs::read_dir(store.join(&rt).join(sub))
                .map(|d| d.flatten().map(|e| e.path()).collect())
                .unwrap_or_default();
            names.sort();
            names.iter().filter_map(|p| std::fs::read(p).ok()).collect()
        };
        let turns = read_dir("turns");
        let items = read_dir("items");
        for thread in read_dir("threads") {
            let mut parts: Vec<Vec<u8>> = vec![thread.clone()];
            parts.extend(turns.iter().map(|t| [b"T".as_slice(), t].concat()));
            parts.extend(items.iter().map(|i| [b"I".as_slice(), i].concat()));
            let refs: Vec<&[u8]> = parts.iter().map(Vec::as_slice).collect();
            seeds.add("thread", fuzzing::frame(&refs, fuzzing::NUL));
            seeds.add("thread", thread);
        }
    }
    Ok(())
}

/// Copies `from` to `to` (files and directories).
fn copy_tree(from: &Path, to: &Path) -> Result<(), Failure> {
    for rel in walk(from) {
        let dst = to.join(&rel);
        std::fs::create_dir_all(dst.parent().expect("a parent")).map_err(fail)?;
        std::fs::copy(from.join(&rel), &dst).map_err(fail)?;
    }
    Ok(())
}

/// The plan file of a dry run, then the manifest, receipts and set-aside files of a real run and
/// of a restore of it, each on a copy of the fixture store at its instant.
fn seed_runs(seeds: &mut Seeds, store: &Path, now: &str) -> Result<(), Failure> {
    let tmp = tempfile::tempdir().map_err(fail)?;
    let s = tmp.path().join("sessions");
    std::fs::create_dir_all(&s).map_err(fail)?;
    copy_tree(store, &s)?;
    let clock = Clock::Fixed(store::Timestamp::parse(now).ok_or_else(|| fail(now))?);
    let mut opts = doctor::RepairOptions::new(&s);
    opts.clock = clock;
    opts.codewhale_home = None;
    opts.cache_dir = None;
    opts.assume_session_store = true;
    opts.allow_mass_set_aside = true;
    opts.dry_run = true;
    let spell = |b: &[u8]| -> Vec<u8> {
        let text = String::from_utf8_lossy(b).into_owned();
        let mut text = text.replace(&s.display().to_string(), SESSIONS_DIR);
        if let Ok(c) = s.canonicalize() {
            text = text.replace(&c.display().to_string(), SESSIONS_DIR);
        }
        text.into_bytes()
    };
    let Ok(dry) = doctor::repair_sessions(&opts) else {
        return Ok(());
    };
    seeds.add("plan_file", spell(&doctor::plan_file_bytes(&dry)));
    if dry.plan.actions.is_empty() {
        return Ok(());
    }
    opts.dry_run = false;
    let Ok(real) = doctor::repair_sessions(&opts) else {
        return Ok(());
    };
    let run = real.run.clone();
    let with_run = |b: &[u8]| -> Vec<u8> {
        String::from_utf8_lossy(&spell(b))
            .replace(&run, fuzzing::ADMIN_RUN)
            .into_bytes()
    };
    seeds.add("restore_purge", admin_seed(&s, &run, &with_run));
    if let Ok(restored) = doctor::restore(&opts, &run, &[]) {
        let restore_run = restored.run.clone();
        let with_runs = |b: &[u8]| -> Vec<u8> {
            String::from_utf8_lossy(&with_run(b))
                .replace(&restore_run, RESTORE_RUN)
                .into_bytes()
        };
        seeds.add("restore_purge", admin_seed(&s, &run, &with_runs));
    }
    Ok(())
}

/// The `restore_purge` input of run `run` of S: its manifest and the receipts, spelled by
/// `spell`, and the files of the run and the documents its recoveries wrote (`<path>\n<bytes>`,
/// the path spelled by `spell`).
fn admin_seed(s: &Path, run: &str, spell: &dyn Fn(&[u8]) -> Vec<u8>) -> Vec<u8> {
    let manifest = std::fs::read(s.join(store::ids::manifest_path(run))).unwrap_or_default();
    let receipts = std::fs::read(s.join(store::ids::RECEIPTS_PATH)).unwrap_or_default();
    let mut parts = vec![spell(&manifest), spell(&receipts)];
    let run_dir = Path::new(store::ids::SET_ASIDE_DIR).join(run);
    let mut files: Vec<PathBuf> = walk(&s.join(&run_dir))
        .into_iter()
        .filter(|r| r != Path::new(store::ids::MANIFEST_FILE))
        .map(|r| run_dir.join(r))
        .collect();
    for line in String::from_utf8_lossy(&receipts).lines() {
        let doc = serde_json::from_str::<serde_json::Value>(line)
            .ok()
            .and_then(|v| v.get("document")?.as_str().map(str::to_owned));
        if let Some(doc) = doc {
            files.push(PathBuf::from(doc));
        }
    }
    for rel in files {
        let Ok(bytes) = std::fs::read(s.join(&rel)) else {
            continue;
        };
        // The bytes as they are: the receipts and the manifest hold their digests.
        let head = spell(rel.to_string_lossy().as_bytes());
        parts.push([head.as_slice(), b"\n", &bytes].concat());
    }
    let refs: Vec<&[u8]> = parts.iter().map(Vec::as_slice).collect();
    fuzzing::frame(&refs, fuzzing::NUL)
}

/// Samples of the inputs no fixture holds.
fn seed_by_hand(seeds: &mut Seeds) {
    let sep = fuzzing::LIVENESS_SEP;
    let own_maps = std::fs::read("/proc/self/maps").unwrap_or_default();
    let own_maps: Vec<u8> = own_maps
        .split(|b| *b == b'\n')
        .take(40)
        .flat_map(|l| l.iter().copied().chain([b'\n']))
        .collect();
    let proc_samples: [[&[u8]; 5]; 6] = [
        [
            b"/work/proj",
            b"go\0build\0-o\0/tmp/go-build123/b001/exe/a.out\0./...\0",
            b"GOCACHE=/root/.cache/go-build\0GOTMPDIR=/tmp\0PATH=/usr/local/bin:/usr/bin:/bin\0HOME=/root\0",
            &own_maps,
            b"/dev/null\npipe:[1234]\n/tmp/go-build123/b001/_pkg_.a\nsocket:[99]\nanon_inode:[eventfd]",
        ],
        [
            b"/tmp/go-build987/b001",
            b"/usr/lib/go/pkg/tool/linux_amd64/compile\0-o\0$WORK/b001/_pkg_.a\0-trimpath\0$WORK/b001=>\0-p\0main\0-L/tmp/go-build987/b002\0-importcfg=/tmp/go-build987/b001/importcfg\0",
            b"PWD=/tmp/go-build987/b001\0GOPATH=/root/go:/opt/go\0",
            b"55d0-55d2 r--p 00000000 fd:01 123  /usr/bin/sleep\n7f00-7f01 r-xp 00000000 fd:01 456                        /tmp/go build1/x y (deleted)\n7f02-7f03 rw-p 00000000 00:00 0 \n7ffd-7ffe rw-p 00000000 00:00 0                          [stack]\n",
            b"/tmp/go-build987/b001/./x/../out.o\n/",
        ],
        [b"relative/cwd", b"sh\0-c\0cd .. && ls\0", b"NOEQUALS\0=/x\0", b"", b"relative/target"],
        [b"/", b"", b"", b"", b""],
        [b"", b"\0\0\0", b"A=\0B=::\0", b"garbage line\n", b"\n\n"],
        [
            b"/home/user/work",
            b"go\0test\0./pkg/...\0",
            b"TMPDIR=../tmp\0GOFLAGS=-mod=mod\0",
            b"00400000-00452000 r-xp 00000000 08:02 173521      /usr/bin/dbus-daemon\n",
            b"/home/user/work/go.mod",
        ],
    ];
    for p in &proc_samples {
        seeds.add("liveness", fuzzing::frame(p, sep));
    }
    for b in [
        "@S/a/runtime",
        "@C/a/runtime",
        "@S/b/runtime-recovered-1",
        "@C/out/runtime",
        "@O/runtime",
        "@S/out/../a/runtime",
        "@C/./a//runtime/",
        "@C/a/runtime/..",
        "@S/../s/a/runtime",
        "@S",
        "a/runtime",
        "../a/runtime",
        "a/../../s/a/runtime",
        "/",
        "",
        "/home/user/.codewhale/sessions/a/runtime",
    ] {
        seeds.add("binding", b.as_bytes().to_vec());
    }
    for d in [
        "90s",
        "30m",
        "24h",
        "14d",
        "1h30m",
        "2w",
        "36h",
        "1day",
        "1.5h",
        "0s",
        "10",
        "-5m",
        "soon",
        "99999999999999999999d",
        " 7d ",
        "1y",
        "1month",
        "1h 30m 10s",
        "5 minutes",
    ] {
        seeds.add("duration", d.as_bytes().to_vec());
    }
    for t in [
        "20260901T100000Z-abc123",
        "20261301T100000Z-abc123",
        "2026-09-01T10:00:00Z",
        "2026-11-29T13:34:56.250+01:00",
        "0000-01-01T00:00:00Z",
        "9999-12-31T23:59:60Z",
        "2026-02-31 00:00:00z",
        "2026-09-01T10:00:00.Z",
        "2026-09-01T10:00:00-23:59",
    ] {
        seeds.add("run_id", t.as_bytes().to_vec());
    }
    for n in [
        ".a.json.doctor-tmp-42-0",
        ".last.json.doctor-tmp-1-17",
        ".receipts.jsonl.doctor-tmp-123-4",
        "a.json.doctor-tmp-1-2",
        "..doctor-tmp-1-2",
        ".a.json.doctor-tmp-1",
        ".a.json.doctor-tmp-x-1",
        ".a.doctor-tmp-1-2.doctor-tmp-3-4",
        "th-alpha.json",
    ] {
        seeds.add("temp_name", n.as_bytes().to_vec());
        seeds.add("id_tokens", n.as_bytes().to_vec());
    }
    // App-written manifest lines (absolute paths under S, `@S/`, with a `detail`), over a run
    // holding what they name.
    let doc = br#"{"schema_version":1,"metadata":{"id":"gone"},"messages":[]}"#;
    let sha = hex(&Sha256::digest(doc));
    let run = fuzzing::ADMIN_RUN;
    let app = format!(
        concat!(
            r#"{{"original":"@S/gone.json","moved_to":"@S/.set-aside/{run}/gone.json","reason":"unreadable","at":"2026-09-01T10:00:00Z","detail":{{"sha256":"{sha}","bytes":{len}}}}}"#,
            "\n",
            r#"{{"original":"@S/d1/runtime","moved_to":"@S/.set-aside/{run}/d1/runtime","reason":"empty","detail":{{"kind":"runtime_store"}}}}"#,
            "\n",
            r#"{{"original":"@S/art","moved_to":"@S/.set-aside/{run}/art","detail":{{"kind":"directory"}}}}"#,
            "\n",
            r#"{{"original":"/etc/passwd","moved_to":"@S/.set-aside/{run}/passwd","detail":null}}"#,
            "\n"
        ),
        run = run,
        sha = sha,
        len = doc.len()
    );
    let files = [
        [
            format!(".set-aside/{run}/gone.json\n").as_bytes(),
            doc.as_slice(),
        ]
        .concat(),
        format!(".set-aside/{run}/d1/runtime/owner.json\n{{}}").into_bytes(),
        format!(".set-aside/{run}/d1/runtime/runtime-process.owner.lock\n").into_bytes(),
        format!(".set-aside/{run}/art/artifacts/build.log\nlog").into_bytes(),
        format!("@link .set-aside/{run}/passwd\n/etc/passwd").into_bytes(),
    ];
    let mut parts: Vec<&[u8]> = vec![app.as_bytes(), b""];
    parts.extend(files.iter().map(Vec::as_slice));
    seeds.add("restore_purge", fuzzing::frame(&parts, fuzzing::NUL));
}
