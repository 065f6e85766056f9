//! The integration tests of `crates/cli` (package `doctor`), in one test binary
//! (`cargo test -p doctor --test it`): one link of the product, not one per file. One module per
//! subject; `common` holds what they share (the one way to run the `doctor` binary, trees of
//! stores, `assert_nothing_lost`), `stores` builds small session stores in the app's shape.
//! `harness` is the one fixture harness, run per pack by `fixtures.rs` (sessions) and
//! `build_dirs.rs` (build-dirs). Snapshots live in `snapshots/`: `<pack>/` (harness.rs), `demo/`
//! (demo.rs).
//!
//! Run one module with `cargo test -p doctor --test it -- hostile_input::`, one test by its name.
//!
//! The modules that need Unix or Linux facilities are cfg-gated below, each saying why; on
//! Windows (under Wine here, natively in `.github/workflows/ci.yml`) the others run, with
//! `windows.rs` beside them.

// The tests build, damage and inspect stores directly: the boundaries clippy.toml enforces on
// the product (std::fs only through crates/fsroot, the environment only at the edge) do not
// apply here.
#![allow(clippy::disallowed_methods, clippy::disallowed_types)]

mod common;
mod stores;

mod ci_examples;
mod cli_v2;
mod demo;
mod fixtures;
mod harness;
mod host_beside_doctor;
mod kill_points;
mod live_holders;
mod restore_purge;
mod run_ids;
mod schemas;
mod sessions_dir;
mod torn_logs;

// Unix only: rows of symlinks and sockets.
#[cfg(unix)]
mod bad_input;
// Unix only: every case holds symlinks (S reached through one, links inside S and out of it).
#[cfg(unix)]
mod properties;

// Linux only: B1 reads liveness from /proc (elsewhere it reclaims nothing), and the cases mount
// in namespaces (`unshare -m`) and switch uids (`setpriv`).
#[cfg(target_os = "linux")]
mod build_dirs;
// Linux only: open descriptors counted in /proc/self/fd, `chattr +i`, fifos.
#[cfg(target_os = "linux")]
mod fd_leak;
// Linux only: `setpriv`, tmpfs mounts, /proc, fifos, devices, sockets, symlinks.
#[cfg(target_os = "linux")]
mod hostile_input;
// Linux only: a pseudo-terminal through util-linux `script`.
#[cfg(target_os = "linux")]
mod progress;
// Linux only: `chattr +i` on the doctor's own records.
#[cfg(target_os = "linux")]
mod purge_records;
// Linux only: real Go builds whose liveness B1 reads from /proc.
#[cfg(target_os = "linux")]
mod real_go;
// Linux only: `strace` fault injection at a real `renameat2`.
#[cfg(target_os = "linux")]
mod store_moves;

// Windows only: links inside S, files the doctor did not create, locks a second process holds
// on the app's byte range, kill points, and temporary stores that must be removable.
#[cfg(windows)]
mod windows;
