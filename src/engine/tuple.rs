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

/// Field `index` (0-based) of a tuple, `None` past its end; only the fields
/// before it are read (as [`split`] reads them all, with its errors).
pub fn field_at(tuple: &[u8], index: usize) -> BoxResult<Option<&[u8]>> {
    let mut r = Reader::new(tuple);
    let n = r.read_array_len().map_err(|_| BoxError::new(code::TUPLE_NOT_ARRAY, "Tuple/Key must be MsgPack array"))?;
    if index >= n as usize {
        return Ok(None);
    }
    for _ in 0..index {
        r.skip().map_err(|_| BoxError::invalid_msgpack("tuple"))?;
    }
    r.skip().map(Some).map_err(|_| BoxError::invalid_msgpack("tuple"))
}

/// The number of fields of a tuple (its array's length, read from its head).
pub fn field_count(tuple: &[u8]) -> BoxResult<usize> {
    Reader::new(tuple)
        .read_array_len()
        .map(|n| n as usize)
        .map_err(|_| BoxError::new(code::TUPLE_NOT_ARRAY, "Tuple/Key must be MsgPack array"))
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
    fn a_field_is_found_without_splitting_the_rest() {
        let t = [0x93, 0x01, 0xa1, b'a', 0x91, 0xc0];
        assert_eq!(field_at(&t, 0).unwrap(), Some(&[0x01][..]));
        assert_eq!(field_at(&t, 2).unwrap(), Some(&[0x91, 0xc0][..]));
        assert_eq!(field_at(&t, 3).unwrap(), None);
        assert_eq!(field_count(&t).unwrap(), 3);
        // A field before the one asked for is malformed: split's error.
        assert!(field_at(&[0x92, 0xc1, 0x01], 1).is_err());
        assert!(field_at(&[0x01], 0).is_err());
    }

    #[test]
    fn split_and_join_round_trip() {
        let t = [0x93, 0x01, 0xa1, b'a', 0x91, 0xc0];
        let f = split(&t).unwrap();
        assert_eq!(f.as_slice(), [&[0x01][..], &[0xa1, b'a'][..], &[0x91, 0xc0][..]]);
        assert_eq!(join(&f), t.to_vec());
        assert_eq!(split(&[0x01]).unwrap_err().code, code::TUPLE_NOT_ARRAY);
    }
}
