//! Fuzz target `restore_purge`: libFuzzer's bytes to `fuzzing::restore_purge`, which asserts its properties.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| fuzzing::restore_purge(data));
