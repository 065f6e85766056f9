//! `hold-lock FILE...`: test support that plays a host process. It takes an exclusive `flock`
//! on each FILE (creating it if missing) through the confined root of the file's directory,
//! prints `held` on stdout, then holds the locks until its standard input closes or it is
//! killed. `flock` belongs to an open file description, so only a separate process like this
//! one proves that the doctor respects another holder.

use std::io::{Read, Write};
use std::path::Path;

use fsroot::{TryLock, WritableRoot};

fn main() {
    let mut held = Vec::new();
    for arg in std::env::args_os().skip(1) {
        let path = Path::new(&arg);
        let parent = path
            .parent()
            .filter(|p| !p.as_os_str().is_empty())
            .unwrap_or(Path::new("."));
        let name = Path::new(path.file_name().expect("hold-lock: FILE needs a file name"));
        let root = WritableRoot::open(parent).unwrap_or_else(|e| panic!("hold-lock: {e}"));
        match root.try_lock(name, true, 0o644) {
            Ok(TryLock::Acquired(guard)) => held.push(guard),
            Ok(_) => panic!("hold-lock: {} is already held", path.display()),
            Err(e) => panic!("hold-lock: {e}"),
        }
    }
    println!("held");
    let _ = std::io::stdout().flush();
    let mut sink = Vec::new();
    let _ = std::io::stdin().read_to_end(&mut sink);
    drop(held);
}
