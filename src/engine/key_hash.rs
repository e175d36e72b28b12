//! The 32-bit hash Tarantool 2.6 gives a HASH index key, which decides where the
//! key lands in the index's table (see [`super::light`]) and so the order a scan
//! meets the tuples in.
//!
//! - A key of one `unsigned` part (not nullable, no path) hashes to its value
//!   when that fits in 32 bits, else to `(v >> 33) ^ v ^ (v << 11)` cut to 32 bits.
//! - Any other key: MurmurHash3 (x86, 32-bit) with seed 13 over its parts one
//!   after another: a string's bytes without the msgpack header, a number that
//!   is an integer as its shortest msgpack integer, anything else as its
//!   msgpack encoding (header included).
//!
//! Strings under a collation other than binary hash here by their sort key
//! (2.6 hashes ICU's), so such keys land where 2.6's would not; equal keys still
//! hash alike.

use super::index::Part;
use super::value::{canonical_number, CanonicalNumber, FieldType, KeyPart};
use crate::protocol::msgpack::write;

/// MurmurHash3's seed in 2.6's tuple hashing.
const SEED: u32 = 13;

/// A key's hash in a HASH index with `parts`.
#[must_use]
pub fn key_hash(parts: &[Part], key: &[KeyPart]) -> u32 {
    if let ([part], [KeyPart::Uint(v)]) = (parts, key) {
        if part.ty == FieldType::Unsigned && !part.nullable && part.path.is_none() {
            return fold_u64(*v);
        }
    }
    thread_local! {
        /// The bytes hashed, kept between calls (a lookup allocates nothing).
        static BYTES: std::cell::RefCell<Vec<u8>> = std::cell::RefCell::new(Vec::with_capacity(64));
    }
    let hash_into = |bytes: &mut Vec<u8>| {
        bytes.clear();
        for part in key {
            feed(bytes, part);
        }
        murmur3_32(bytes, SEED)
    };
    BYTES.with(|cell| match cell.try_borrow_mut() {
        Ok(mut bytes) => hash_into(&mut bytes),
        Err(_) => hash_into(&mut Vec::new()),
    })
}

/// An unsigned key's hash.
#[allow(clippy::cast_possible_truncation, reason = "the hash keeps the low 32 bits, as 2.6's")]
fn fold_u64(v: u64) -> u32 {
    if v <= u64::from(u32::MAX) {
        v as u32
    } else {
        ((v >> 33) ^ v ^ (v << 11)) as u32
    }
}

/// Appends what one key part contributes to the hashed bytes.
fn feed(out: &mut Vec<u8>, part: &KeyPart) {
    match part {
        KeyPart::Str(s) => out.extend_from_slice(s),
        KeyPart::Uint(u) => write::uint(out, *u),
        KeyPart::Neg(i) => write::int(out, *i),
        KeyPart::Double(d) => feed_double(out, *d),
        KeyPart::Dec(d) => match canonical_number(d) {
            CanonicalNumber::Integer(v) => feed_integer(out, v),
            CanonicalNumber::Double(f) => feed_double(out, f),
            CanonicalNumber::Decimal(text) => out.extend_from_slice(text.as_bytes()),
        },
        KeyPart::Nil => out.push(0xc0),
        KeyPart::Bool(b) => out.push(if *b { 0xc3 } else { 0xc2 }),
        KeyPart::Bin(b) => write::bin(out, b),
        KeyPart::Ext(t, payload) => write::ext(out, *t, payload),
        KeyPart::Max => out.push(0xff),
    }
}

/// A double: as the integer it equals, if it is one in msgpack's range.
#[allow(clippy::cast_possible_truncation, reason = "integral values within range")]
fn feed_double(out: &mut Vec<u8>, d: f64) {
    if d.is_finite() && d.fract() == 0.0 && d >= -(2f64.powi(63)) && d < 2f64.powi(64) {
        feed_integer(out, d as i128);
    } else {
        write::f64(out, d);
    }
}

#[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss, reason = "range checked")]
fn feed_integer(out: &mut Vec<u8>, v: i128) {
    if v >= 0 && v <= i128::from(u64::MAX) {
        write::uint(out, v as u64);
    } else if v < 0 && v >= i128::from(i64::MIN) {
        write::int(out, v as i64);
    } else {
        out.extend_from_slice(v.to_string().as_bytes());
    }
}

/// MurmurHash3, x86 32-bit variant.
#[must_use]
pub fn murmur3_32(data: &[u8], seed: u32) -> u32 {
    const C1: u32 = 0xcc9e_2d51;
    const C2: u32 = 0x1b87_3593;
    let mix = |k: u32| k.wrapping_mul(C1).rotate_left(15).wrapping_mul(C2);
    let mut h = seed;
    let mut blocks = data.chunks_exact(4);
    for block in &mut blocks {
        let k = u32::from_le_bytes([block[0], block[1], block[2], block[3]]);
        h ^= mix(k);
        h = h.rotate_left(13).wrapping_mul(5).wrapping_add(0xe654_6b64);
    }
    let tail = blocks.remainder();
    if !tail.is_empty() {
        let k = tail.iter().rev().fold(0u32, |k, b| (k << 8) | u32::from(*b));
        h ^= mix(k);
    }
    #[allow(clippy::cast_possible_truncation, reason = "MurmurHash3 mixes in the length mod 2^32")]
    let len = data.len() as u32;
    h ^= len;
    h ^= h >> 16;
    h = h.wrapping_mul(0x85eb_ca6b);
    h ^= h >> 13;
    h = h.wrapping_mul(0xc2b2_ae35);
    h ^ (h >> 16)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::value::Collation;

    #[test]
    fn murmur3_matches_the_reference_vectors() {
        assert_eq!(murmur3_32(b"", 0), 0);
        assert_eq!(murmur3_32(b"", 1), 0x514e_28b7);
        assert_eq!(murmur3_32(b"test", 0), 0xba6b_d213);
        assert_eq!(murmur3_32(b"Hello, world!", 0x9747_b28c), 0x2488_4cba);
        assert_eq!(murmur3_32(b"The quick brown fox jumps over the lazy dog", 0x9747_b28c), 0x2fa8_26cd);
    }

    #[test]
    fn an_unsigned_key_hashes_to_its_value_and_equal_numbers_alike() {
        let unsigned = [Part::whole(0, FieldType::Unsigned, Collation::Binary, false)];
        assert_eq!(key_hash(&unsigned, &[KeyPart::Uint(7)]), 7);
        assert_eq!(key_hash(&unsigned, &[KeyPart::Uint(1 << 40)]), fold_u64(1 << 40));
        let number = [Part::whole(0, FieldType::Number, Collation::Binary, false)];
        assert_eq!(key_hash(&number, &[KeyPart::Double(3.0)]), key_hash(&number, &[KeyPart::Uint(3)]));
        assert_ne!(key_hash(&number, &[KeyPart::Double(3.5)]), key_hash(&number, &[KeyPart::Uint(3)]));
    }
}
