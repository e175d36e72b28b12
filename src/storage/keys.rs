//! Storage keys: `[space id: u32 big-endian][primary key, canonically encoded]`.
//!
//! Two primary keys that compare equal in the engine (1 and 1.0, or 'A' and 'a'
//! under `unicode_ci`) encode to the same bytes, so a replace always overwrites
//! the row it replaced in memory.

use crate::engine::value::{canonical_number, CanonicalNumber, KeyPart};

/// The key prefix shared by every row of a space.
#[must_use]
pub fn space_prefix(space_id: u32) -> [u8; 4] {
    space_id.to_be_bytes()
}

/// The storage key of a row.
#[must_use]
pub fn row_key(space_id: u32, pk: &[KeyPart]) -> Vec<u8> {
    let mut out = Vec::with_capacity(4 + pk.len() * 10);
    encode_row_key(&mut out, space_id, pk);
    out
}

/// Appends the storage key of a row to `out`.
pub fn encode_row_key(out: &mut Vec<u8>, space_id: u32, pk: &[KeyPart]) {
    out.extend_from_slice(&space_prefix(space_id));
    for part in pk {
        encode_part(out, part);
    }
}

/// The space id of a storage key.
#[must_use]
pub fn space_of(key: &[u8]) -> Option<u32> {
    Some(u32::from_be_bytes(key.get(..4)?.try_into().ok()?))
}

fn encode_part(out: &mut Vec<u8>, part: &KeyPart) {
    let bytes = |out: &mut Vec<u8>, tag: u8, b: &[u8]| {
        out.push(tag);
        #[allow(clippy::cast_possible_truncation, reason = "key parts are far below 4 GiB")]
        out.extend_from_slice(&(b.len() as u32).to_be_bytes());
        out.extend_from_slice(b);
    };
    match part {
        KeyPart::Nil => out.push(0),
        KeyPart::Bool(b) => out.extend_from_slice(&[1, u8::from(*b)]),
        KeyPart::Uint(u) => integer(out, i128::from(*u)),
        KeyPart::Neg(i) => integer(out, i128::from(*i)),
        KeyPart::Double(d) => double(out, *d),
        KeyPart::Dec(d) => match canonical_number(d) {
            CanonicalNumber::Integer(v) => integer(out, v),
            CanonicalNumber::Double(f) => double(out, f),
            CanonicalNumber::Decimal(text) => bytes(out, 7, text.as_bytes()),
        },
        KeyPart::Str(s) => bytes(out, 4, s),
        KeyPart::Bin(b) => bytes(out, 5, b),
        KeyPart::Ext(t, b) => {
            #[allow(clippy::cast_sign_loss, reason = "the ext type is stored as a raw byte")]
            out.push(*t as u8);
            bytes(out, 6, b);
        }
        KeyPart::Max => out.push(0xff),
    }
}

fn double(out: &mut Vec<u8>, d: f64) {
    #[allow(clippy::cast_possible_truncation, reason = "only integral values in i128 range")]
    if d.fract() == 0.0 && d.abs() < 1.0e19 {
        integer(out, d as i128);
    } else {
        out.push(3);
        out.extend_from_slice(&d.to_bits().to_be_bytes());
    }
}

fn integer(out: &mut Vec<u8>, v: i128) {
    out.push(2);
    out.extend_from_slice(&v.to_be_bytes());
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn equal_keys_encode_alike() {
        assert_eq!(row_key(512, &[KeyPart::Uint(1)]), row_key(512, &[KeyPart::Double(1.0)]));
        assert_ne!(row_key(512, &[KeyPart::Uint(1)]), row_key(513, &[KeyPart::Uint(1)]));
        assert_ne!(row_key(512, &[KeyPart::Uint(1)]), row_key(512, &[KeyPart::Double(1.5)]));
        // Parts are length-delimited: ["ab", "c"] differs from ["a", "bc"].
        let a = row_key(1, &[KeyPart::Str(b"ab"[..].into()), KeyPart::Str(b"c"[..].into())]);
        let b = row_key(1, &[KeyPart::Str(b"a"[..].into()), KeyPart::Str(b"bc"[..].into())]);
        assert_ne!(a, b);
        assert_eq!(space_of(&a), Some(1));
    }

    #[test]
    fn decimal_keys_encode_as_the_numbers_they_equal() {
        let dec = |s: &str| KeyPart::Dec(Box::new(crate::decimal::Decimal::parse(s).unwrap()));
        assert_eq!(row_key(512, &[dec("1.000")]), row_key(512, &[KeyPart::Uint(1)]));
        assert_eq!(row_key(512, &[dec("-3")]), row_key(512, &[KeyPart::Neg(-3)]));
        assert_eq!(row_key(512, &[dec("1.50")]), row_key(512, &[KeyPart::Double(1.5)]));
        assert_eq!(row_key(512, &[dec("0.1")]), row_key(512, &[KeyPart::Double(0.1)]));
        assert_eq!(row_key(512, &[dec("1e20")]), row_key(512, &[KeyPart::Double(1e20)]));
        // Digits a double cannot carry: a form of their own, still equal for equal values.
        let long = "1.2345678901234567890123";
        assert_eq!(row_key(512, &[dec(long)]), row_key(512, &[dec(&format!("{long}000"))]));
        assert_ne!(row_key(512, &[dec(long)]), row_key(512, &[KeyPart::Double(1.234_567_890_123_456_7)]));
    }
}
