//! Fuzz target `id_tokens`: libFuzzer's bytes to `fuzzing::id_tokens`, which asserts its properties.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| fuzzing::id_tokens(data));
