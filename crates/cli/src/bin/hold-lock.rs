//! `hold-lock FILE...`: test support that plays a host process. It takes an exclusive `flock`
//! on each FILE (creating it if missing), prints `held` on stdout, then holds the locks until
//! its standard input closes or it is killed. `flock` belongs to an open file description, so
//! only a separate process like this one proves that the doctor respects another holder.

use std::io::{Read, Write};

fn main() {
    let files: Vec<std::fs::File> = std::env::args_os()
        .skip(1)
        .map(|p| {
            let f = std::fs::OpenOptions::new()
                .read(true)
                .write(true)
                .create(true)
                .truncate(false)
                .open(&p)
                .unwrap_or_else(|e| panic!("hold-lock: cannot open {}: {e}", p.to_string_lossy()));
            f.lock()
                .unwrap_or_else(|e| panic!("hold-lock: cannot lock {}: {e}", p.to_string_lossy()));
            f
        })
        .collect();
    println!("held");
    let _ = std::io::stdout().flush();
    let mut sink = Vec::new();
    let _ = std::io::stdin().read_to_end(&mut sink);
    drop(files);
}
