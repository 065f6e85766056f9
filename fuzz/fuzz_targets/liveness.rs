//! Fuzz target `liveness`: libFuzzer's bytes to `fuzzing::liveness`, which asserts its properties.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| fuzzing::liveness(data));
