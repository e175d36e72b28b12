//! The byte form of a commit group, as the write-ahead log stores it ([`super::xlog`]).
//!
//! A group is a run of operations, each a tag byte and its fields (lengths are
//! u32 little-endian). The TX thread encodes a group straight into one buffer,
//! so a commit costs one copy of each tuple and no allocation per row; the WAL
//! thread stores the buffer as one value.
//!
//! | tag | operation | fields |
//! |---|---|---|
//! | 1 | put | key length, key, tuple length, tuple |
//! | 2 | delete | key length, key |
//! | 3 | truncate | space id (u32) |
//! | 4 | service clock | milliseconds (u64) |
//! | 5 | records floor | milliseconds (u64): no `_idempotency` record left was created earlier |

use super::keys::encode_row_key;
use super::RowOp;
use crate::engine::value::KeyPart;

const PUT: u8 = 1;
const DELETE: u8 = 2;
const TRUNCATE: u8 = 3;
const CLOCK: u8 = 4;
const RECORDS_FLOOR: u8 = 5;

/// Appends one row write (`tuple` under the primary key `pk` of `space_id`).
pub fn put(out: &mut Vec<u8>, space_id: u32, pk: &[KeyPart], tuple: &[u8]) {
    put_keyed(out, space_id, pk, tuple);
}

/// Appends one row write as [`put`] does; returns where its storage key is in `out`.
pub fn put_keyed(out: &mut Vec<u8>, space_id: u32, pk: &[KeyPart], tuple: &[u8]) -> std::ops::Range<usize> {
    out.push(PUT);
    let key_at = key(out, space_id, pk);
    length(out, tuple.len());
    out.extend_from_slice(tuple);
    key_at
}

/// Appends one row removal.
pub fn delete(out: &mut Vec<u8>, space_id: u32, pk: &[KeyPart]) {
    out.push(DELETE);
    key(out, space_id, pk);
}

/// Appends the removal of every row of a space.
pub fn truncate(out: &mut Vec<u8>, space_id: u32) {
    out.push(TRUNCATE);
    out.extend_from_slice(&space_id.to_le_bytes());
}

/// Appends the service clock.
pub fn clock(out: &mut Vec<u8>, ms: u64) {
    out.push(CLOCK);
    out.extend_from_slice(&ms.to_le_bytes());
}

/// Appends the records floor: every `_idempotency` record created before `ms`
/// (service time) is gone (see [`super::records`]).
pub fn records_floor(out: &mut Vec<u8>, ms: u64) {
    out.push(RECORDS_FLOOR);
    out.extend_from_slice(&ms.to_le_bytes());
}

/// Appends an operation given in its decoded form.
pub fn encode(out: &mut Vec<u8>, op: &RowOp) {
    encode_op(out, &op.as_op());
}

/// Appends an operation borrowing its bytes.
pub fn encode_op(out: &mut Vec<u8>, op: &Op<'_>) {
    match *op {
        Op::Put { key, tuple } => {
            out.push(PUT);
            bytes(out, key);
            bytes(out, tuple);
        }
        Op::Delete { key } => {
            out.push(DELETE);
            bytes(out, key);
        }
        Op::Truncate { space_id } => truncate(out, space_id),
        Op::Clock { ms } => clock(out, ms),
        Op::RecordsFloor { ms } => records_floor(out, ms),
    }
}

/// One operation of an encoded group, borrowing its bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Op<'a> {
    /// Store `tuple` under `key`.
    Put {
        /// Storage key.
        key: &'a [u8],
        /// The tuple's msgpack bytes.
        tuple: &'a [u8],
    },
    /// Remove the row under `key`.
    Delete {
        /// Storage key.
        key: &'a [u8],
    },
    /// Remove every row of a space.
    Truncate {
        /// The space emptied.
        space_id: u32,
    },
    /// The service clock, milliseconds.
    Clock {
        /// Milliseconds.
        ms: u64,
    },
    /// No `_idempotency` record left was created before this service time.
    RecordsFloor {
        /// Milliseconds.
        ms: u64,
    },
}

/// Appends the operations of an encoded group to `ops`, in order, without
/// copying; `None` if the bytes are damaged (what was read before stays appended).
pub fn ops_into<'a>(mut data: &'a [u8], ops: &mut Vec<Op<'a>>) -> Option<()> {
    while let Some((&tag, rest)) = data.split_first() {
        data = rest;
        let op = match tag {
            PUT => {
                let key = take_bytes(&mut data)?;
                Op::Put { key, tuple: take_bytes(&mut data)? }
            }
            DELETE => Op::Delete { key: take_bytes(&mut data)? },
            TRUNCATE => Op::Truncate { space_id: u32::from_le_bytes(take(&mut data, 4)?.try_into().ok()?) },
            CLOCK => Op::Clock { ms: u64::from_le_bytes(take(&mut data, 8)?.try_into().ok()?) },
            RECORDS_FLOOR => Op::RecordsFloor { ms: u64::from_le_bytes(take(&mut data, 8)?.try_into().ok()?) },
            _ => return None,
        };
        ops.push(op);
    }
    Some(())
}

/// The operations of an encoded group, in order, as owned values; `None` if the
/// bytes are damaged.
#[must_use]
pub fn decode(data: &[u8]) -> Option<Vec<RowOp>> {
    let mut ops = Vec::new();
    ops_into(data, &mut ops)?;
    Some(ops.into_iter().map(Op::to_row_op).collect())
}

impl Op<'_> {
    /// The operation with its bytes copied.
    #[must_use]
    pub fn to_row_op(self) -> RowOp {
        match self {
            Op::Put { key, tuple } => RowOp::Put { key: key.to_vec(), tuple: tuple.into() },
            Op::Delete { key } => RowOp::Delete { key: key.to_vec() },
            Op::Truncate { space_id } => RowOp::Truncate { space_id },
            Op::Clock { ms } => RowOp::Clock { ms },
            Op::RecordsFloor { ms } => RowOp::RecordsFloor { ms },
        }
    }
}

impl RowOp {
    /// The operation borrowing its bytes.
    #[must_use]
    pub fn as_op(&self) -> Op<'_> {
        match self {
            RowOp::Put { key, tuple } => Op::Put { key, tuple },
            RowOp::Delete { key } => Op::Delete { key },
            RowOp::Truncate { space_id } => Op::Truncate { space_id: *space_id },
            RowOp::Clock { ms } => Op::Clock { ms: *ms },
            RowOp::RecordsFloor { ms } => Op::RecordsFloor { ms: *ms },
        }
    }
}

/// Writes a storage key with its length in front, without building it apart first.
/// Appends a key's length and bytes; returns where its bytes are.
fn key(out: &mut Vec<u8>, space_id: u32, pk: &[KeyPart]) -> std::ops::Range<usize> {
    let at = out.len();
    out.extend_from_slice(&[0; 4]);
    encode_row_key(out, space_id, pk);
    let len = out.len() - at - 4;
    #[allow(clippy::cast_possible_truncation, reason = "keys are far below 4 GiB")]
    out[at..at + 4].copy_from_slice(&(len as u32).to_le_bytes());
    at + 4..out.len()
}

fn length(out: &mut Vec<u8>, len: usize) {
    #[allow(clippy::cast_possible_truncation, reason = "tuples are far below 4 GiB (memtx_max_tuple_size)")]
    out.extend_from_slice(&(len as u32).to_le_bytes());
}

fn bytes(out: &mut Vec<u8>, b: &[u8]) {
    length(out, b.len());
    out.extend_from_slice(b);
}

fn take<'a>(data: &mut &'a [u8], n: usize) -> Option<&'a [u8]> {
    if data.len() < n {
        return None;
    }
    let (head, rest) = data.split_at(n);
    *data = rest;
    Some(head)
}

fn take_bytes<'a>(data: &mut &'a [u8]) -> Option<&'a [u8]> {
    let len = u32::from_le_bytes(take(data, 4)?.try_into().ok()?) as usize;
    take(data, len)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::storage::keys::row_key;

    #[test]
    fn groups_round_trip() {
        let pk = [KeyPart::Uint(7), KeyPart::Str(b"ab"[..].into())];
        let mut buf = Vec::new();
        put(&mut buf, 512, &pk, b"\x92\x07\xa2ab");
        delete(&mut buf, 513, &pk);
        truncate(&mut buf, 514);
        clock(&mut buf, 12345);
        records_floor(&mut buf, 777);
        encode(&mut buf, &RowOp::Put { key: vec![1, 2], tuple: b"\x90"[..].into() });
        let ops = decode(&buf).unwrap();
        assert_eq!(
            ops,
            vec![
                RowOp::Put { key: row_key(512, &pk), tuple: b"\x92\x07\xa2ab"[..].into() },
                RowOp::Delete { key: row_key(513, &pk) },
                RowOp::Truncate { space_id: 514 },
                RowOp::Clock { ms: 12345 },
                RowOp::RecordsFloor { ms: 777 },
                RowOp::Put { key: vec![1, 2], tuple: b"\x90"[..].into() },
            ]
        );
    }

    #[test]
    fn damaged_groups_are_refused() {
        let mut buf = Vec::new();
        put(&mut buf, 512, &[KeyPart::Uint(1)], b"\x91\x01");
        for cut in 1..buf.len() {
            assert!(decode(&buf[..cut]).is_none(), "cut at {cut}");
        }
        assert!(decode(&[9]).is_none());
        assert_eq!(decode(&[]), Some(vec![]));
    }
}
