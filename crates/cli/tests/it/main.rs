//! The integration tests of `crates/cli` (package `doctor`), in one test binary
//! (`cargo test -p doctor --test it`): one link of the product, not one per file. One module per
//! subject; `common` holds what they share (the one way to run the `doctor` binary, trees of
//! stores, `assert_nothing_lost`), `stores` builds small session stores in the app's shape.
//! `harness` is the one fixture harness, run per pack by `fixtures.rs` (sessions) and
//! `build_dirs.rs` (build-dirs). Snapshots live in `snapshots/`: `<pack>/` (harness.rs), `demo/`
//! (demo.rs).
//!
//! Run one module with `cargo test -p doctor --test it -- hostile_input::`, one test by its name.

// The tests build, damage and inspect stores directly: the boundaries clippy.toml enforces on
// the product (std::fs only through crates/fsroot, the environment only at the edge) do not
// apply here.
#![allow(clippy::disallowed_methods, clippy::disallowed_types)]

mod common;
mod stores;

mod bad_input;
mod build_dirs;
mod ci_examples;
mod cli_v2;
mod demo;
mod fd_leak;
mod fixtures;
mod harness;
mod host_beside_doctor;
mod hostile_input;
mod kill_points;
mod live_holders;
mod progress;
mod properties;
mod purge_records;
mod real_go;
mod restore_purge;
mod run_ids;
mod schemas;
mod sessions_dir;
mod store_moves;
mod torn_logs;
