//! The integration tests of `fsroot`, in one test binary (`cargo test -p fsroot --test it`),
//! one module per subject.

// The tests build and inspect trees with std::fs directly: the boundary clippy.toml enforces on
// the product (std::fs only through this crate's root) does not apply here.
#![allow(clippy::disallowed_methods, clippy::disallowed_types)]

mod locks;
mod root;
mod windows;
