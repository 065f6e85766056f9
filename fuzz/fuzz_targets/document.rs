//! Fuzz target `document`: libFuzzer's bytes to `fuzzing::document`, which asserts its properties.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| fuzzing::document(data));
