//! `hold-dir`: test support that plays a live build. It reads two absolute paths from its
//! standard input, one per line (never from its arguments, so its command line names neither):
//! a directory to make its working directory, and a file to open and hold, on Windows without
//! `FILE_SHARE_DELETE` (as Go opens its files, so the file cannot be deleted while held). It
//! prints `held` on stdout, then holds both until its standard input closes or it is killed.

// Test support: it opens the file itself, with a share mode the confined root never uses
// (clippy.toml keeps product code on fsroot).
#![allow(clippy::disallowed_types)]

use std::io::{BufRead, Read, Write};

fn main() {
    let mut stdin = std::io::stdin().lock();
    let mut line = |what: &str| {
        let mut l = String::new();
        stdin.read_line(&mut l).expect("hold-dir: read stdin");
        let l = l.trim_end_matches(['\r', '\n']).to_owned();
        assert!(!l.is_empty(), "hold-dir: no {what} on stdin");
        l
    };
    let cwd = line("directory");
    let file = line("file");
    std::env::set_current_dir(&cwd).unwrap_or_else(|e| panic!("hold-dir: cd {cwd}: {e}"));
    let mut opts = std::fs::OpenOptions::new();
    opts.read(true);
    #[cfg(windows)]
    {
        use std::os::windows::fs::OpenOptionsExt;
        // FILE_SHARE_READ | FILE_SHARE_WRITE: no FILE_SHARE_DELETE.
        opts.share_mode(0x1 | 0x2);
    }
    let held = opts
        .open(&file)
        .unwrap_or_else(|e| panic!("hold-dir: open {file}: {e}"));
    println!("held");
    let _ = std::io::stdout().flush();
    let mut sink = Vec::new();
    let _ = stdin.read_to_end(&mut sink);
    drop(held);
}
