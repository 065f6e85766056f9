//! `cargo xtask`: developer tasks (snapshots, docs).
fn main() {}
