//! Fuzz target `plan_file`: libFuzzer's bytes to `fuzzing::plan_file`, which asserts its properties.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| fuzzing::plan_file(data));
