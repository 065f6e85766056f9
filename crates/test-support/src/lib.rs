//! The processes the doctor's tests start beside it, as binaries of their own package so that
//! the product package ships none of them: `hold-lock` (holds `flock`s, as another process
//! would) and `host-sim` (a host application using the library's locking protocol). Their
//! documentation is at the top of each binary. `cargo test --workspace` builds them, into the
//! same directory as the `doctor` binary, where [`binary`] finds them.

use std::path::PathBuf;

/// The path of test-support binary `name`, beside the binary `beside` (in the doctor's tests,
/// `env!("CARGO_BIN_EXE_doctor")`). Panics with what to run when it was not built.
pub fn binary(beside: &str, name: &str) -> PathBuf {
    let path = std::path::Path::new(beside).with_file_name(name);
    assert!(
        path.is_file(),
        "{} is missing: the test-support binaries are built by `cargo test --workspace` \
         (or `cargo build -p test-support`)",
        path.display()
    );
    path
}
