//! Arbitrary bytes as json.decode's text: read or refused, never a panic.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| oncebox::fuzzing::json_text(data));
