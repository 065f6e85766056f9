//! Fuzz target `temp_name`: libFuzzer's bytes to `fuzzing::temp_name`, which asserts its properties.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| fuzzing::temp_name(data));
