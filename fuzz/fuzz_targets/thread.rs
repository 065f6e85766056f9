//! Fuzz target `thread`: libFuzzer's bytes to `fuzzing::thread`, which asserts its properties.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| fuzzing::thread(data));
