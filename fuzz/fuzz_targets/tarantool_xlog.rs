//! Arbitrary bytes as a Tarantool .xlog/.snap file: read to the end, never panic.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| oncebox::fuzzing::tarantool_xlog(data));
