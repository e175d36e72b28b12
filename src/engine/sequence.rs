//! Sequences: `_sequence` definitions, `_sequence_data` values, and the
//! `_space_sequence` links that fill a primary key field on INSERT and REPLACE.
//!
//! As in 2.6: a sequence's first value is its `start`, each next one `step` further;
//! past `min`/`max` it wraps (`cycle`) or overflows (ER_SEQUENCE_OVERFLOW). A write
//! into a linked space whose sequence field is nil (or is the one missing after
//! the last) gets the next value; an explicit integer there moves the sequence up
//! to it (down, for a negative step), so later values do not collide.

use crate::error::{code, BoxError, BoxResult};
use crate::protocol::msgpack::{write, Integer, Reader};

use super::access::{privilege, user_id, Credentials, ObjectType};
use super::tuple::split;
use super::value::{Key, KeyPart};
use super::{catalog::space_id, space::WriteMode, Engine, Tuple};
use crate::protocol::request::Delete;

/// A space's link to the sequence that fills a field of its primary key.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SequenceLink {
    /// The sequence.
    pub sequence_id: u32,
    /// The field it fills (0-based).
    pub field: u32,
}

/// A `_sequence` row: `[id, owner, name, step, min, max, start, cache, cycle]`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SequenceDef {
    /// Its id.
    pub id: u32,
    /// The user who owns it (has every right on it).
    pub owner: u32,
    /// Its name.
    pub name: String,
    /// The distance between two values (never 0).
    pub step: i64,
    /// The smallest value.
    pub min: i64,
    /// The largest value.
    pub max: i64,
    /// The first value.
    pub start: i64,
    /// Whether it wraps around past `min`/`max` instead of overflowing.
    pub cycle: bool,
}

/// A msgpack integer that fits an i64 (a sequence's values and bounds).
pub fn read_i64(r: &mut Reader<'_>) -> Option<i64> {
    match r.read_integer().ok()? {
        Integer::Unsigned(u) => i64::try_from(u).ok(),
        Integer::Negative(i) => Some(i),
    }
}

impl SequenceDef {
    /// Parses a `_sequence` row.
    #[must_use]
    pub fn parse(t: &[u8]) -> Option<Self> {
        let mut r = Reader::new(t);
        if r.read_array_len().ok()? < 9 {
            return None;
        }
        let id = u32::try_from(r.read_uint().ok()?).ok()?;
        let owner = u32::try_from(r.read_uint().ok()?).ok()?;
        let name = String::from_utf8_lossy(r.read_str().ok()?).into_owned();
        let step = read_i64(&mut r)?;
        let min = read_i64(&mut r)?;
        let max = read_i64(&mut r)?;
        let start = read_i64(&mut r)?;
        r.skip().ok()?;
        let cycle = r.read_bool().ok()?;
        Some(Self { id, owner, name, step, min, max, start, cycle })
    }

    /// The value after `current` (`None`: not started), or `None` on overflow.
    #[must_use]
    pub fn next(&self, current: Option<i64>) -> Option<i64> {
        let Some(current) = current else { return Some(self.start) };
        let next = i128::from(current) + i128::from(self.step);
        if (i128::from(self.min)..=i128::from(self.max)).contains(&next) {
            return i64::try_from(next).ok();
        }
        self.cycle.then_some(if self.step > 0 { self.min } else { self.max })
    }

    /// The value a sequence at `current` moves to when `value` is written
    /// explicitly into its field, if it moves.
    #[must_use]
    pub fn observe(&self, current: Option<i64>, value: i64) -> Option<i64> {
        match current {
            None => Some(value),
            Some(c) if (self.step > 0 && value > c) || (self.step < 0 && value < c) => Some(value),
            Some(_) => None,
        }
    }
}

fn id_key(id: u32) -> Key {
    Key(smallvec::smallvec![KeyPart::Uint(u64::from(id))])
}

/// The msgpack key `[id]`.
fn id_key_bytes(id: u32) -> Vec<u8> {
    let mut key = Vec::with_capacity(6);
    write::array_len(&mut key, 1);
    write::uint(&mut key, u64::from(id));
    key
}

/// `tuple` with field `at` set to `value` (appended when `at` is one past the end).
fn with_field(fields: &[&[u8]], at: usize, value: i64) -> Vec<u8> {
    let mut out = Vec::with_capacity(fields.iter().map(|f| f.len()).sum::<usize>() + 12);
    #[allow(clippy::cast_possible_truncation, reason = "a tuple has far fewer than 2^32 fields")]
    write::array_len(&mut out, fields.len().max(at + 1) as u32);
    for (i, f) in fields.iter().enumerate() {
        if i == at {
            write::int(&mut out, value);
        } else {
            out.extend_from_slice(f);
        }
    }
    if at == fields.len() {
        write::int(&mut out, value);
    }
    out
}

impl Engine {
    /// The definition of sequence `id`.
    pub fn sequence_def(&self, id: u32) -> BoxResult<SequenceDef> {
        self.sequence_row(id)
            .and_then(|t| SequenceDef::parse(t))
            .ok_or_else(|| BoxError::new(code::NO_SUCH_SEQUENCE, format!("Sequence '{id}' does not exist")))
    }

    /// The `_sequence` row of sequence `id`.
    #[must_use]
    pub fn sequence_row(&self, id: u32) -> Option<&Tuple> {
        self.spaces.get(&space_id::SEQUENCE)?.primary()?.get(&id_key(id))
    }

    /// The `_sequence` row of the sequence named `name`.
    #[must_use]
    pub fn sequence_row_named(&self, name: &[u8]) -> Option<&Tuple> {
        let pk = self.spaces.get(&space_id::SEQUENCE)?.primary()?;
        pk.iter().find(|t| SequenceDef::parse(t).is_some_and(|d| d.name.as_bytes() == name))
    }

    /// The last value sequence `id` gave, or `None` when it is not started.
    #[must_use]
    pub fn sequence_value(&self, id: u32) -> Option<i64> {
        let pk = self.spaces.get(&space_id::SEQUENCE_DATA)?.primary()?;
        let t = pk.get(&id_key(id))?;
        let mut r = Reader::new(t);
        r.read_array_len().ok()?;
        r.skip().ok()?;
        read_i64(&mut r)
    }

    fn set_sequence_value(&mut self, id: u32, value: i64) -> BoxResult<()> {
        let mut row = Vec::with_capacity(16);
        write::array_len(&mut row, 2);
        write::uint(&mut row, u64::from(id));
        write::int(&mut row, value);
        let admin = self.credentials(user_id::ADMIN);
        self.write(&admin, space_id::SEQUENCE_DATA, &row, WriteMode::Replace).map(|_| ())
    }

    /// The definition of sequence `id`, if `creds` may use it: `next`, `set`,
    /// `reset` and `current` all need write access to it (as in 2.6), which its
    /// owner has. A write into a space filled by the sequence needs none.
    pub fn usable_sequence(&self, creds: &Credentials, id: u32) -> BoxResult<SequenceDef> {
        let def = self.sequence_def(id)?;
        self.check_usage(creds)?;
        if !creds.has(ObjectType::Sequence, id, Some(def.owner), privilege::WRITE) {
            return Err(BoxError::access_denied("Write", "sequence", &def.name, &self.user_name(creds.user_id)));
        }
        Ok(def)
    }

    /// `sequence:set(value)`: as if the sequence had just given `value`.
    pub fn sequence_set(&mut self, creds: &Credentials, id: u32, value: i64) -> BoxResult<()> {
        self.usable_sequence(creds, id)?;
        self.set_sequence_value(id, value)
    }

    /// `sequence:reset()`: back to not started.
    pub fn sequence_reset(&mut self, creds: &Credentials, id: u32) -> BoxResult<()> {
        self.usable_sequence(creds, id)?;
        if self.sequence_value(id).is_none() {
            return Ok(());
        }
        let admin = self.credentials(user_id::ADMIN);
        self.delete(&admin, &Delete { space_id: space_id::SEQUENCE_DATA, index_id: 0, key: &id_key_bytes(id) })
            .map(|_| ())
    }

    /// `sequence:current()`: the last value given (ER_SEQUENCE_NOT_STARTED before any).
    pub fn sequence_current(&self, creds: &Credentials, id: u32) -> BoxResult<i64> {
        let def = self.usable_sequence(creds, id)?;
        self.sequence_value(id)
            .ok_or_else(|| BoxError::new(code::SEQUENCE_NOT_STARTED, format!("Sequence '{}' is not started", def.name)))
    }

    /// `sequence:next()`: the next value of sequence `id`, stored in `_sequence_data`
    /// as part of the current transaction.
    pub fn sequence_next(&mut self, id: u32) -> BoxResult<i64> {
        let def = self.sequence_def(id)?;
        let value = def
            .next(self.sequence_value(id))
            .ok_or_else(|| BoxError::new(code::SEQUENCE_OVERFLOW, format!("Sequence '{}' has overflowed", def.name)))?;
        self.set_sequence_value(id, value)?;
        Ok(value)
    }

    /// Fills `tuple`'s sequence field for a write into a linked space: the tuple to
    /// write instead, or `None` to write it as it is.
    pub(super) fn apply_sequence(&mut self, link: SequenceLink, tuple: &[u8]) -> BoxResult<Option<Vec<u8>>> {
        let fields = split(tuple)?;
        let at = link.field as usize;
        // Nil, or the field just past the last: the sequence gives the value.
        let missing = fields.get(at).map_or(at == fields.len(), |raw| *raw == [0xc0]);
        if missing {
            let value = self.sequence_next(link.sequence_id)?;
            return Ok(Some(with_field(&fields, at, value)));
        }
        if let Some(value) = fields.get(at).and_then(|raw| read_i64(&mut Reader::new(raw))) {
            let def = self.sequence_def(link.sequence_id)?;
            if let Some(moved) = def.observe(self.sequence_value(link.sequence_id), value) {
                self.set_sequence_value(link.sequence_id, moved)?;
            }
        }
        Ok(None)
    }

    /// Sets every space's sequence link from `_space_sequence` (after it changes, and at load).
    pub(super) fn relink_sequences(&mut self) {
        let links: Vec<(u32, SequenceLink)> = self
            .spaces
            .get(&space_id::SPACE_SEQUENCE)
            .and_then(|s| s.primary())
            .map(|pk| pk.iter().filter_map(|t| parse_link(t)).collect())
            .unwrap_or_default();
        for space in self.spaces.values_mut() {
            space.sequence = None;
        }
        for (space, link) in links {
            if let Some(s) = self.spaces.get_mut(&space) {
                s.sequence = Some(link);
            }
        }
    }

    /// Refuses to drop a sequence a space still uses.
    pub(super) fn check_sequence_drop(&self, old: &Tuple) -> BoxResult<()> {
        let Some(def) = SequenceDef::parse(old) else { return Ok(()) };
        if self.spaces.values().any(|s| s.sequence.is_some_and(|l| l.sequence_id == def.id)) {
            return Err(BoxError::new(
                code::DROP_SEQUENCE,
                format!("Can't drop sequence '{}': the sequence is in use", def.name),
            ));
        }
        Ok(())
    }
}

/// A `_space_sequence` row: `[space_id, sequence_id, is_generated, field, path]`.
fn parse_link(t: &[u8]) -> Option<(u32, SequenceLink)> {
    let mut r = Reader::new(t);
    let n = r.read_array_len().ok()?;
    let space = u32::try_from(r.read_uint().ok()?).ok()?;
    let sequence_id = u32::try_from(r.read_uint().ok()?).ok()?;
    let field = if n >= 4 {
        r.skip().ok()?;
        u32::try_from(r.read_uint().ok()?).ok()?
    } else {
        0
    };
    Some((space, SequenceLink { sequence_id, field }))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn def(step: i64, min: i64, max: i64, start: i64, cycle: bool) -> SequenceDef {
        SequenceDef { id: 1, owner: 1, name: "s".into(), step, min, max, start, cycle }
    }

    #[test]
    fn values_start_step_wrap_and_overflow() {
        let up = def(2, 1, 7, 5, true);
        assert_eq!(up.next(None), Some(5));
        assert_eq!(up.next(Some(5)), Some(7));
        assert_eq!(up.next(Some(7)), Some(1));
        let capped = def(1, 1, 2, 1, false);
        assert_eq!(capped.next(Some(2)), None);
        let down = def(-1, -2, 0, 0, false);
        assert_eq!(down.next(Some(-2)), None);
        assert_eq!(def(1, 1, i64::MAX, 1, false).next(Some(i64::MAX)), None);
    }

    #[test]
    fn explicit_values_move_the_sequence_one_way() {
        let up = def(1, 1, 100, 1, false);
        assert_eq!(up.observe(None, 0), Some(0));
        assert_eq!(up.observe(Some(12), 5), None);
        assert_eq!(up.observe(Some(12), 20), Some(20));
        assert_eq!(def(-1, -9, 0, 0, false).observe(Some(-3), -5), Some(-5));
    }

    #[test]
    fn the_field_is_set_or_appended() {
        let fields: [&[u8]; 2] = [&[0xc0], &[0xa1, b'a']];
        assert_eq!(with_field(&fields, 0, 7), [0x92, 0x07, 0xa1, b'a']);
        assert_eq!(with_field(&fields[..0], 0, 1), [0x91, 0x01]);
    }
}
