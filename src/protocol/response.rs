//! Reply encoding, byte-compatible with Tarantool 2.6.
//!
//! ```text
//! ce <u32 len>
//! 83 00 ce <u32 code> 01 cf <u64 sync> 05 ce <u32 schema_version>     (23 bytes)
//! <body map>
//! ```
//! Errors set code `0x8000 | errcode` and carry `{0x31: message, 0x52: {0: [entry]}}`,
//! each stack entry written in 2.6's key order 0, 2, 1, 3, 4, 5, [6].

use super::frame::length_prefix;
use super::key;
use super::msgpack::write;
use super::request_type;
use crate::error::BoxError;

/// Size of the length prefix plus the fixed-width header.
pub const HEADER_SIZE: usize = 5 + 23;

/// Starts a reply in `out`: reserves the length, writes the header. Finish with [`finish`].
pub fn begin(out: &mut Vec<u8>, code: u64, sync: u64, schema_version: u64) -> usize {
    let start = out.len();
    out.extend_from_slice(&[0xce, 0, 0, 0, 0]);
    out.extend_from_slice(&[0x83, key::REQUEST_TYPE, 0xce]);
    #[allow(clippy::cast_possible_truncation, reason = "codes are 16-bit; 2.6 writes u32")]
    out.extend_from_slice(&(code as u32).to_be_bytes());
    out.extend_from_slice(&[key::SYNC, 0xcf]);
    out.extend_from_slice(&sync.to_be_bytes());
    out.extend_from_slice(&[key::SCHEMA_VERSION, 0xce]);
    #[allow(clippy::cast_possible_truncation, reason = "2.6 writes the schema version as u32")]
    out.extend_from_slice(&(schema_version as u32).to_be_bytes());
    start
}

/// Patches the length prefix of the reply that [`begin`] started at `start`.
pub fn finish(out: &mut [u8], start: usize) {
    #[allow(clippy::cast_possible_truncation, reason = "replies are far below 4 GiB")]
    let len = (out.len() - start - 5) as u32;
    if let Some(prefix) = out.get_mut(start..start + 5) {
        prefix.copy_from_slice(&length_prefix(len));
    }
}

/// An OK reply with an empty body `{}` (PING, AUTH).
pub fn ok_empty(out: &mut Vec<u8>, sync: u64, schema_version: u64) {
    let start = begin(out, request_type::OK, sync, schema_version);
    out.push(0x80);
    finish(out, start);
}

/// An OK reply `{0x30: [items...]}` whose items are already-encoded msgpack values.
pub fn ok_data<'a>(out: &mut Vec<u8>, sync: u64, schema_version: u64, items: impl ExactSizeIterator<Item = &'a [u8]>) {
    let start = begin(out, request_type::OK, sync, schema_version);
    out.extend_from_slice(&[0x81, key::DATA]);
    #[allow(clippy::cast_possible_truncation, reason = "item counts fit u32")]
    write::array32_len(out, items.len() as u32);
    for item in items {
        out.extend_from_slice(item);
    }
    finish(out, start);
}

/// An OK reply `{0x30: [items...]}` written item by item, when the count is known only at the end.
#[derive(Debug)]
pub struct DataReply<'a> {
    out: &'a mut Vec<u8>,
    start: usize,
    count_at: usize,
    count: u32,
}

impl<'a> DataReply<'a> {
    /// Writes the header and an array32 length to be filled in by [`DataReply::finish`].
    pub fn begin(out: &'a mut Vec<u8>, sync: u64, schema_version: u64) -> Self {
        let start = begin(out, request_type::OK, sync, schema_version);
        out.extend_from_slice(&[0x81, key::DATA]);
        let count_at = out.len();
        write::array32_len(out, 0);
        Self { out, start, count_at, count: 0 }
    }

    /// Appends one already-encoded msgpack value.
    pub fn push(&mut self, item: &[u8]) {
        self.out.extend_from_slice(item);
        self.count = self.count.saturating_add(1);
    }

    /// Fills in the item count and the packet length.
    pub fn finish(self) {
        // array32: 0xdd, then the count big-endian.
        if let Some(slot) = self.out.get_mut(self.count_at + 1..self.count_at + 5) {
            slot.copy_from_slice(&self.count.to_be_bytes());
        }
        finish(self.out, self.start);
    }
}

/// An IPROTO_CHUNK message (`box.session.push`): `{0x30: [item]}` with the request's sync.
pub fn chunk(out: &mut Vec<u8>, sync: u64, schema_version: u64, item: &[u8]) {
    let start = begin(out, request_type::CHUNK, sync, schema_version);
    out.extend_from_slice(&[0x81, key::DATA, 0x91]);
    out.extend_from_slice(item);
    finish(out, start);
}

/// An OK reply whose body is given as raw msgpack bytes.
pub fn ok_raw_body(out: &mut Vec<u8>, sync: u64, schema_version: u64, body: &[u8]) {
    let start = begin(out, request_type::OK, sync, schema_version);
    out.extend_from_slice(body);
    finish(out, start);
}

/// An OK reply with a raw body and oncebox's idempotency status (header key 0x0d).
///
/// The header is Tarantool's fixed layout with one more key: `84 ... 0d <status>`.
pub fn ok_with_status(out: &mut Vec<u8>, sync: u64, schema_version: u64, status: u64, body: &[u8]) {
    let start = begin(out, request_type::OK, sync, schema_version);
    if let Some(map) = out.get_mut(start + 5) {
        *map = 0x84;
    }
    out.push(key::IDEMPOTENT_STATUS);
    write::uint(out, status);
    out.extend_from_slice(body);
    finish(out, start);
}

/// Adds the idempotency status to a reply that [`begin`] started at the start of
/// `out` and [`finish`]ed: the same reply as [`ok_with_status`] writes, made by
/// moving the body over rather than copying it out and back.
pub fn add_status(out: &mut Vec<u8>, status: u64) {
    if out.len() < HEADER_SIZE {
        return;
    }
    // Appended after the body, then turned round to stand before it.
    let body_end = out.len();
    out.push(key::IDEMPOTENT_STATUS);
    write::uint(out, status);
    let entry_len = out.len() - body_end;
    out[HEADER_SIZE..].rotate_right(entry_len);
    out[5] = 0x84;
    finish(out, 0);
}

/// Appends the error stack map `{0: [entry]}` (also the MP_ERROR ext payload).
pub fn error_stack(out: &mut Vec<u8>, err: &BoxError) {
    out.extend_from_slice(&[0x81, 0x00]);
    let chain: Vec<&BoxError> = std::iter::successors(Some(err), |e| e.prev.as_deref()).collect();
    #[allow(clippy::cast_possible_truncation, reason = "chains are capped far below u32::MAX")]
    write::array_len(out, chain.len() as u32);
    for e in chain {
        stack_entry(out, e);
    }
}

/// One entry of the error stack: `{type, line, file, message, errno, code[, fields]}`.
fn stack_entry(out: &mut Vec<u8>, err: &BoxError) {
    let n = if err.fields.is_empty() { 6 } else { 7 };
    write::map_len(out, n);
    write::uint(out, 0);
    write::str(out, err.kind.name().as_bytes());
    write::uint(out, 2);
    write::uint(out, u64::from(err.line));
    write::uint(out, 1);
    write::str(out, err.file.as_bytes());
    write::uint(out, 3);
    write::str(out, err.message.as_bytes());
    write::uint(out, 4);
    write::uint(out, u64::from(err.kind.errno()));
    write::uint(out, 5);
    write::uint(out, u64::from(err.code));
    if !err.fields.is_empty() {
        write::uint(out, 6);
        #[allow(clippy::cast_possible_truncation, reason = "a handful of fields")]
        write::map_len(out, err.fields.len() as u32);
        for (k, v) in &err.fields {
            write::str(out, k.as_bytes());
            write::str(out, v.as_bytes());
        }
    }
}

/// An error reply.
pub fn error(out: &mut Vec<u8>, sync: u64, schema_version: u64, err: &BoxError) {
    let start = begin(out, request_type::TYPE_ERROR | u64::from(err.code), sync, schema_version);
    out.extend_from_slice(&[0x82, key::ERROR_24]);
    write::str(out, err.message.as_bytes());
    out.push(key::ERROR);
    error_stack(out, err);
    finish(out, start);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn data_reply_written_item_by_item_equals_ok_data() {
        let items: [&[u8]; 3] = [&[0x91, 0x01], &[0x92, 0x02, 0xa1, b'x'], &[0x90]];
        let mut whole = Vec::new();
        ok_data(&mut whole, 7, 80, items.iter().copied());
        let mut streamed = vec![0xff];
        let mut data = DataReply::begin(&mut streamed, 7, 80);
        for item in items {
            data.push(item);
        }
        data.finish();
        assert_eq!(&streamed[1..], &whole[..]);
        let mut empty = Vec::new();
        DataReply::begin(&mut empty, 7, 80).finish();
        let mut expected = Vec::new();
        ok_data(&mut expected, 7, 80, std::iter::empty());
        assert_eq!(empty, expected);
    }

    /// The PING reply captured from Tarantool 2.6 (sync 1, schema version 0x53).
    #[test]
    fn ping_reply_bytes_match_tarantool() {
        let mut out = Vec::new();
        ok_empty(&mut out, 1, 0x53);
        let expected = [
            0xce, 0, 0, 0, 0x18, 0x83, 0x00, 0xce, 0, 0, 0, 0, 0x01, 0xcf, 0, 0, 0, 0, 0, 0, 0, 1, 0x05, 0xce, 0, 0, 0,
            0x53, 0x80,
        ];
        assert_eq!(out, expected);
    }

    #[test]
    fn status_reply_adds_key_0x0d() {
        let mut out = Vec::new();
        ok_with_status(&mut out, 1, 2, 3, &[0x80]);
        assert_eq!(out[5], 0x84);
        assert_eq!(&out[HEADER_SIZE..], &[0x0d, 0x03, 0x80]);
        assert_eq!(out.len() - 5, u32::from_be_bytes([out[1], out[2], out[3], out[4]]) as usize);
    }

    #[test]
    fn a_status_added_afterwards_makes_the_same_reply() {
        let body = [0x81, key::DATA, 0x91, 0x92, 0x01, 0xa1, b'x'];
        let mut direct = Vec::new();
        ok_with_status(&mut direct, 9, 3, 2, &body);
        let mut later = Vec::new();
        let start = begin(&mut later, request_type::OK, 9, 3);
        later.extend_from_slice(&body);
        finish(&mut later, start);
        add_status(&mut later, 2);
        assert_eq!(later, direct);
    }

    #[test]
    fn error_reply_has_code_message_and_stack() {
        let mut out = Vec::new();
        let e = BoxError::no_such_space("9999");
        error(&mut out, 7, 1, &e);
        assert_eq!(&out[8..12], &[0, 0, 0x80, 36]);
        let body = &out[HEADER_SIZE..];
        assert_eq!(body[0], 0x82);
        assert_eq!(body[1], 0x31);
    }
}
