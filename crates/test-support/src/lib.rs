//! The processes the doctor's tests start beside it, as binaries of their own package so that
//! the product package ships none of them: `hold-lock` (holds `flock`s, as another process
//! would) and `host-sim` (a host application using the library's locking protocol). Their
//! documentation is at the top of each binary. `cargo test --workspace` builds them, into the
//! same directory as the `doctor` binary, where [`binary`] finds them. The library also holds
//! what those binaries, the doctor's tests and `cargo xtask bench` share: the builder of the
//! records of a session store ([`session`]) and a seeded generator ([`SplitMix64`]).

pub mod session;

use std::path::PathBuf;

/// The path of test-support binary `name`, beside the binary `beside` (in the doctor's tests,
/// `env!("CARGO_BIN_EXE_doctor")`). Panics with what to run when it was not built.
pub fn binary(beside: &str, name: &str) -> PathBuf {
    let path = std::path::Path::new(beside)
        .with_file_name(format!("{name}{}", std::env::consts::EXE_SUFFIX));
    assert!(
        path.is_file(),
        "{} is missing: the test-support binaries are built by `cargo test --workspace` \
         (or `cargo build -p test-support`)",
        path.display()
    );
    path
}

/// splitmix64: a small deterministic generator, so a seed replays the same stream everywhere
/// (the simulated host's choices, the benchmark's stores).
#[derive(Debug, Clone)]
pub struct SplitMix64(pub u64);

impl SplitMix64 {
    /// The next 64 bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// A number below `n` (0 when `n` is 0).
    pub fn below(&mut self, n: u64) -> u64 {
        self.next_u64() % n.max(1)
    }

    /// `len` lowercase hex digits.
    pub fn hex(&mut self, len: usize) -> String {
        use std::fmt::Write as _;
        let mut s = String::with_capacity(len + 16);
        while s.len() < len {
            let _ = write!(s, "{:016x}", self.next_u64());
        }
        s.truncate(len);
        s
    }
}

/// The Unix facilities test tooling needs beyond std's portable API (the product reaches the
/// OS only through `fsroot::sys`): links, and paths spelled in raw bytes.
#[cfg(unix)]
pub mod unix {
    use std::ffi::OsString;
    use std::io;
    use std::os::unix::ffi::OsStringExt;
    use std::path::Path;

    /// A symbolic link at `at` to `target`.
    pub fn symlink(target: impl AsRef<Path>, at: impl AsRef<Path>) -> io::Result<()> {
        std::os::unix::fs::symlink(target, at)
    }

    /// The OS string of these bytes (any bytes but NUL name a path on Unix).
    pub fn os_string(bytes: &[u8]) -> OsString {
        OsString::from_vec(bytes.to_vec())
    }
}
