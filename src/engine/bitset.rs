//! A BITSET index's entries, as Tarantool 2.6's memtx keeps them.
//!
//! Each entry gets a small number, its id: a freed id is the next one given
//! (the last freed first), else the next unused one. A scan meets the entries in
//! id order, so a replaced tuple keeps its place and a new one fills the latest
//! hole. An entry's bits are its key: an unsigned value's 8 bytes (least
//! significant first), a string's bytes. The searches compare bits:
//!
//! - `EQ`: every bit of the search key's length equal (bits past it not looked at);
//! - `BITS_ALL_SET`: every bit set in the search key set (none set: nothing);
//! - `BITS_ANY_SET`: some bit set in the search key set (none set: nothing);
//! - `BITS_ALL_NOT_SET`: no bit set in the search key set (none set: everything).

use std::collections::HashMap;

use super::tuple::Tuple;
use super::value::{Key, KeyPart};

/// What a BITSET search asks of an entry's bits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BitsetSearch {
    /// Equal over the search key's length.
    Equals,
    /// Every set bit of the search key set.
    AllSet,
    /// Some set bit of the search key set.
    AnySet,
    /// No set bit of the search key set.
    AllNotSet,
}

/// The bits of a key part (an unsigned integer or a string; anything else has none).
#[must_use]
pub fn bits_of(part: &KeyPart) -> Vec<u8> {
    match part {
        KeyPart::Uint(u) => u.to_le_bytes().to_vec(),
        KeyPart::Str(s) => s.to_vec(),
        _ => Vec::new(),
    }
}

fn bit(bytes: &[u8], at: usize) -> bool {
    bytes.get(at / 8).is_some_and(|b| b & (1 << (at % 8)) != 0)
}

impl BitsetSearch {
    /// Whether an entry with `bits` matches the search key `key`.
    #[must_use]
    pub fn matches(self, bits: &[u8], key: &[u8]) -> bool {
        let set_in_key = || (0..key.len() * 8).filter(|&i| bit(key, i));
        match self {
            Self::Equals => (0..key.len() * 8).all(|i| bit(bits, i) == bit(key, i)),
            Self::AllSet => {
                let mut set = set_in_key().peekable();
                set.peek().is_some() && set.all(|i| bit(bits, i))
            }
            Self::AnySet => set_in_key().any(|i| bit(bits, i)),
            Self::AllNotSet => set_in_key().all(|i| !bit(bits, i)),
        }
    }
}

/// The entries of a BITSET index by id, and each entry key's id.
#[derive(Debug, Default)]
pub struct BitsetStore {
    by_id: Vec<Option<(Tuple, Vec<u8>)>>,
    /// Freed ids, the last freed at the end (given out first).
    spare: Vec<u32>,
    ids: HashMap<Key, u32>,
}

impl BitsetStore {
    /// Entries held.
    #[must_use]
    pub fn len(&self) -> usize {
        self.ids.len()
    }

    /// Whether no entry is held.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.ids.is_empty()
    }

    /// Ids allocated (for a memory estimate).
    #[must_use]
    pub fn id_count(&self) -> usize {
        self.by_id.len()
    }

    /// Removes every entry.
    pub fn clear(&mut self) {
        *self = Self::default();
    }

    /// The tuple under an entry key.
    #[must_use]
    pub fn get(&self, key: &Key) -> Option<&Tuple> {
        let id = *self.ids.get(key)?;
        self.by_id.get(id as usize)?.as_ref().map(|(t, _)| t)
    }

    /// The tuple under an entry key, to change in place.
    pub fn get_mut(&mut self, key: &Key) -> Option<&mut Tuple> {
        let id = *self.ids.get(key)?;
        self.by_id.get_mut(id as usize)?.as_mut().map(|(t, _)| t)
    }

    /// Stores `tuple` under `key` (its first part gives the bits): in place of the
    /// entry with that key (returned), else under the next id.
    pub fn put(&mut self, key: Key, tuple: Tuple) -> Option<Tuple> {
        if let Some(slot) = self.get_mut(&key) {
            return Some(std::mem::replace(slot, tuple));
        }
        let bits = key.first().map(bits_of).unwrap_or_default();
        let id = match self.spare.pop() {
            Some(id) => {
                self.by_id[id as usize] = Some((tuple, bits));
                id
            }
            None => {
                self.by_id.push(Some((tuple, bits)));
                #[allow(clippy::cast_possible_truncation, reason = "fewer than 2^32 entries")]
                let id = (self.by_id.len() - 1) as u32;
                id
            }
        };
        self.ids.insert(key, id);
        None
    }

    /// Removes the entry under `key`; its id is the next one given out.
    pub fn remove(&mut self, key: &Key) -> Option<Tuple> {
        let id = self.ids.remove(key)?;
        self.spare.push(id);
        self.by_id.get_mut(id as usize)?.take().map(|(t, _)| t)
    }

    /// The entries in id order.
    pub fn iter(&self) -> impl Iterator<Item = &Tuple> {
        self.by_id.iter().filter_map(|e| e.as_ref().map(|(t, _)| t))
    }

    /// The entries in id order that match `search` for the search key's bits.
    pub fn search<'a>(&'a self, search: BitsetSearch, key: &'a [u8]) -> impl Iterator<Item = &'a Tuple> + 'a {
        self.by_id.iter().filter_map(move |e| match e {
            Some((t, bits)) if search.matches(bits, key) => Some(t),
            _ => None,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(v: u64, pk: u64) -> Key {
        [KeyPart::Uint(v), KeyPart::Uint(pk)].into_iter().collect()
    }

    #[test]
    fn a_freed_id_is_given_out_next_and_scans_go_in_id_order() {
        let mut s = BitsetStore::default();
        for pk in 1..=5 {
            s.put(key(pk % 3, pk), Tuple::from(&[0x91, pk as u8][..]));
        }
        s.remove(&key(2, 2));
        s.remove(&key(1, 4));
        s.put(key(0, 9), Tuple::from(&[0x91, 9][..]));
        let order: Vec<u8> = s.iter().map(|t| t[1]).collect();
        assert_eq!(order, [1, 3, 9, 5], "9 took 4's id, the last freed");
        let ones: Vec<u8> = s.search(BitsetSearch::AllSet, &1u64.to_le_bytes()).map(|t| t[1]).collect();
        assert_eq!(ones, [1]);
    }

    #[test]
    fn searches_compare_bits_as_2_6() {
        let (five, zero) = (5u64.to_le_bytes(), 0u64.to_le_bytes());
        assert!(BitsetSearch::Equals.matches(&five, &five));
        assert!(!BitsetSearch::Equals.matches(&7u64.to_le_bytes(), &five));
        assert!(BitsetSearch::AllSet.matches(&7u64.to_le_bytes(), &five));
        assert!(!BitsetSearch::AllSet.matches(&7u64.to_le_bytes(), &zero), "an empty key matches nothing");
        assert!(BitsetSearch::AnySet.matches(&4u64.to_le_bytes(), &five));
        assert!(!BitsetSearch::AnySet.matches(&2u64.to_le_bytes(), &five));
        assert!(BitsetSearch::AllNotSet.matches(&2u64.to_le_bytes(), &five));
        assert!(BitsetSearch::AllNotSet.matches(&7u64.to_le_bytes(), &zero), "an empty key matches everything");
        // Strings: bits past the search key are not looked at.
        assert!(BitsetSearch::Equals.matches(b"abc", b"ab"));
    }
}
