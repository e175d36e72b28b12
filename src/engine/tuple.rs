//! Tuples: immutable msgpack arrays shared between indexes.

use std::rc::Rc;

use crate::error::{code, BoxError, BoxResult};
use crate::protocol::msgpack::Reader;

/// A stored tuple: the raw msgpack array, shared by every index that holds it.
pub type Tuple = Rc<[u8]>;

/// The raw bytes of each top-level field of a tuple (up to 8 fields without a heap allocation).
pub type TupleFields<'a> = smallvec::SmallVec<[&'a [u8]; 8]>;

/// Splits a tuple (a complete, valid msgpack value) into its fields.
pub fn split(tuple: &[u8]) -> BoxResult<TupleFields<'_>> {
    let mut r = Reader::new(tuple);
    let n = r.read_array_len().map_err(|_| BoxError::new(code::TUPLE_NOT_ARRAY, "Tuple/Key must be MsgPack array"))?;
    let mut fields = TupleFields::with_capacity(n.min(1024) as usize);
    for _ in 0..n {
        fields.push(r.skip().map_err(|_| BoxError::invalid_msgpack("tuple"))?);
    }
    Ok(fields)
}

/// Encodes fields back into a tuple.
#[must_use]
pub fn join(fields: &[&[u8]]) -> Vec<u8> {
    let mut out = Vec::with_capacity(5 + fields.iter().map(|f| f.len()).sum::<usize>());
    #[allow(clippy::cast_possible_truncation, reason = "field counts fit u32")]
    crate::protocol::msgpack::write::array_len(&mut out, fields.len() as u32);
    for f in fields {
        out.extend_from_slice(f);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn split_and_join_round_trip() {
        let t = [0x93, 0x01, 0xa1, b'a', 0x91, 0xc0];
        let f = split(&t).unwrap();
        assert_eq!(f.as_slice(), [&[0x01][..], &[0xa1, b'a'][..], &[0x91, 0xc0][..]]);
        assert_eq!(join(&f), t.to_vec());
        assert_eq!(split(&[0x01]).unwrap_err().code, code::TUPLE_NOT_ARRAY);
    }
}
