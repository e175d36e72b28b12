//! Arbitrary bytes as an IPROTO stream: framing, header, body and engine must not panic.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| oncebox::fuzzing::frame_and_request(data));
