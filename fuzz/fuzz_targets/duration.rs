//! Fuzz target `duration`: libFuzzer's bytes to `fuzzing::duration`, which asserts its properties.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| fuzzing::duration(data));
