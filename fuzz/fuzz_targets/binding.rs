//! Fuzz target `binding`: libFuzzer's bytes to `fuzzing::binding`, which asserts its properties.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| fuzzing::binding(data));
