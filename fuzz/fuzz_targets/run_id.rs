//! Fuzz target `run_id`: libFuzzer's bytes to `fuzzing::run_id`, which asserts its properties.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| fuzzing::run_id(data));
