//! The slots of a HASH index: open addressing with linear probing.
//!
//! Each slot holds an entry's 64-bit hash beside its value, in one array, so the
//! slot an entry lives in (or would go to) starts at an address known from the
//! hash alone: [`HashSlots::prefetch`] can ask for that memory without waiting
//! for it. A table of a million remembered tokens is far larger than the cache;
//! lookups, inserts and removals prefetched together for a batch miss it at once
//! instead of one after another. (A table with separate control bytes must read
//! them before it knows which slot to read: two misses, the second waiting for
//! the first.)
//!
//! An entry sits at its home slot (`hash & mask`) or after it, with no empty slot
//! in between; removing one shifts the entries after it back (no tombstones), so
//! a probe ends at the first empty slot. The table doubles before it is more than
//! 5/8 full, which keeps an unsuccessful probe to about four slots.

/// Entries, each under its hash, in slots probed linearly from `hash & mask`.
#[derive(Debug, Clone)]
pub struct HashSlots<T> {
    /// A power of two in length (or empty); `None` is an empty slot.
    slots: Box<[Option<(u64, T)>]>,
    len: usize,
}

impl<T> Default for HashSlots<T> {
    fn default() -> Self {
        Self::new()
    }
}

/// Slots a table starts with when its first entry comes.
const MIN_SLOTS: usize = 8;

impl<T> HashSlots<T> {
    /// An empty table (it allocates on the first insert).
    #[must_use]
    pub fn new() -> Self {
        Self { slots: Box::new([]), len: 0 }
    }

    /// Entries held.
    #[must_use]
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether no entry is held.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Slots allocated.
    #[must_use]
    pub fn slot_count(&self) -> usize {
        self.slots.len()
    }

    fn mask(&self) -> usize {
        self.slots.len().wrapping_sub(1)
    }

    #[allow(clippy::cast_possible_truncation, reason = "the low bits of the hash pick the slot")]
    fn home(&self, hash: u64) -> usize {
        hash as usize & self.mask()
    }

    /// The slot holding the entry with `hash` that `eq` accepts.
    fn position(&self, hash: u64, mut eq: impl FnMut(&T) -> bool) -> Option<usize> {
        if self.slots.is_empty() {
            return None;
        }
        let mask = self.mask();
        let mut i = self.home(hash);
        while let Some((h, value)) = &self.slots[i] {
            if *h == hash && eq(value) {
                return Some(i);
            }
            i = (i + 1) & mask;
        }
        None
    }

    /// The entry with `hash` that `eq` accepts.
    pub fn find(&self, hash: u64, eq: impl FnMut(&T) -> bool) -> Option<&T> {
        let i = self.position(hash, eq)?;
        self.slots[i].as_ref().map(|(_, v)| v)
    }

    /// The entry with `hash` that `eq` accepts, to change in place.
    pub fn find_mut(&mut self, hash: u64, eq: impl FnMut(&T) -> bool) -> Option<&mut T> {
        let i = self.position(hash, eq)?;
        self.slots[i].as_mut().map(|(_, v)| v)
    }

    /// Stores `value` under `hash`, replacing the entry `eq` accepts (returned) if any.
    pub fn insert(&mut self, hash: u64, mut eq: impl FnMut(&T) -> bool, value: T) -> Option<T> {
        self.reserve(1);
        let mask = self.mask();
        let mut i = self.home(hash);
        loop {
            match &mut self.slots[i] {
                Some((h, held)) if *h == hash && eq(held) => return Some(std::mem::replace(held, value)),
                Some(_) => i = (i + 1) & mask,
                empty @ None => {
                    *empty = Some((hash, value));
                    self.len += 1;
                    return None;
                }
            }
        }
    }

    /// Removes and returns the entry with `hash` that `eq` accepts.
    pub fn remove(&mut self, hash: u64, eq: impl FnMut(&T) -> bool) -> Option<T> {
        let hole = self.position(hash, eq)?;
        let removed = self.slots[hole].take().map(|(_, v)| v);
        self.len -= 1;
        self.close_hole(hole);
        removed
    }

    /// Moves back the entries after the emptied slot `hole` that may not stay
    /// behind an empty slot (their home is not between the hole and them).
    fn close_hole(&mut self, mut hole: usize) {
        let mask = self.mask();
        let mut i = (hole + 1) & mask;
        while let Some((h, _)) = &self.slots[i] {
            let home = self.home(*h);
            // Distances walked from home to each slot, around the end of the array.
            let to_hole = hole.wrapping_sub(home) & mask;
            let to_here = i.wrapping_sub(home) & mask;
            if to_hole < to_here {
                self.slots[hole] = self.slots[i].take();
                hole = i;
            }
            i = (i + 1) & mask;
        }
    }

    /// Makes room for `additional` more entries without growing on the way.
    pub fn reserve(&mut self, additional: usize) {
        let needed = self.len.saturating_add(additional);
        if needed * 8 <= self.slots.len() * 5 {
            return;
        }
        let mut count = self.slots.len().max(MIN_SLOTS);
        while needed * 8 > count * 5 {
            count *= 2;
        }
        let old = std::mem::replace(&mut self.slots, std::iter::repeat_with(|| None).take(count).collect());
        let mask = self.mask();
        for (hash, value) in old.into_vec().into_iter().flatten() {
            let mut i = self.home(hash);
            while self.slots[i].is_some() {
                i = (i + 1) & mask;
            }
            self.slots[i] = Some((hash, value));
        }
    }

    /// Removes every entry (keeping the slots).
    pub fn clear(&mut self) {
        self.slots.iter_mut().for_each(|s| *s = None);
        self.len = 0;
    }

    /// Every entry with its hash, in slot order.
    pub fn iter(&self) -> impl Iterator<Item = (u64, &T)> + '_ {
        self.slots.iter().flatten().map(|(h, v)| (*h, v))
    }

    /// The entries after the one with `hash` that `eq` accepts, in slot order
    /// (none if there is no such entry).
    pub fn iter_after(&self, hash: u64, eq: impl FnMut(&T) -> bool) -> impl Iterator<Item = &T> + '_ {
        let from = self.position(hash, eq).map_or(self.slots.len(), |i| i + 1);
        self.slots[from..].iter().flatten().map(|(_, v)| v)
    }

    /// Asks for the memory a probe for `hash` starts in (its home slot and the
    /// cache line after), without waiting for it.
    pub fn prefetch(&self, hash: u64) {
        if self.slots.is_empty() {
            return;
        }
        let home = self.home(hash);
        let slot: *const Option<(u64, T)> = &self.slots[home];
        crate::prefetch::read(slot);
        crate::prefetch::read(slot.wrapping_byte_add(64));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    /// A table of `(key, value)` under deliberately colliding hashes.
    fn hash_of(key: u32) -> u64 {
        u64::from(key % 7) | (u64::from(key % 3) << 40)
    }

    #[test]
    fn a_slot_is_the_size_of_a_hash_and_a_tuple() {
        assert_eq!(std::mem::size_of::<Option<(u64, crate::engine::tuple::Tuple)>>(), 24);
    }

    #[test]
    fn agrees_with_a_hashmap_through_inserts_replaces_and_removals() {
        let mut table: HashSlots<(u32, u32)> = HashSlots::new();
        let mut model: HashMap<u32, u32> = HashMap::new();
        // A small LCG: the same sequence every run.
        let mut seed = 12345u64;
        let mut next = || {
            seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            (seed >> 33) as u32
        };
        for step in 0..20_000 {
            let key = next() % 300;
            let value = step;
            if next() % 3 == 0 {
                let got = table.remove(hash_of(key), |(k, _)| *k == key).map(|(_, v)| v);
                assert_eq!(got, model.remove(&key), "remove {key} at step {step}");
            } else {
                let got = table.insert(hash_of(key), |(k, _)| *k == key, (key, value)).map(|(_, v)| v);
                assert_eq!(got, model.insert(key, value), "insert {key} at step {step}");
            }
            assert_eq!(table.len(), model.len());
            if step % 997 == 0 {
                for k in 0..300 {
                    assert_eq!(table.find(hash_of(k), |(x, _)| *x == k).map(|(_, v)| *v), model.get(&k).copied());
                }
                let mut all: Vec<_> = table.iter().map(|(_, (k, v))| (*k, *v)).collect();
                all.sort_unstable();
                let mut want: Vec<_> = model.iter().map(|(k, v)| (*k, *v)).collect();
                want.sort_unstable();
                assert_eq!(all, want);
            }
        }
    }

    #[test]
    fn removal_keeps_entries_that_wrapped_around_the_end_reachable() {
        let mut table: HashSlots<u32> = HashSlots::new();
        table.reserve(4);
        let last = (table.slot_count() - 1) as u64;
        // Four entries homed at the last slot: three of them wrap to the front.
        for k in 0..4 {
            table.insert(last, |v| *v == k, k);
        }
        assert_eq!(table.remove(last, |v| *v == 1), Some(1));
        for k in [0, 2, 3] {
            assert_eq!(table.find(last, |v| *v == k), Some(&k), "entry {k}");
        }
        assert_eq!(table.find(last, |v| *v == 1), None);
    }

    #[test]
    fn grows_before_it_is_more_than_five_eighths_full() {
        let mut table: HashSlots<u32> = HashSlots::new();
        for k in 0..10_000u32 {
            table.insert(u64::from(k).wrapping_mul(0x9E37_79B9_7F4A_7C15), |v| *v == k, k);
            assert!(table.len() * 8 <= table.slot_count() * 5);
        }
        assert_eq!(table.len(), 10_000);
        table.clear();
        assert!(table.is_empty());
        assert_eq!(table.iter().count(), 0);
    }

    #[test]
    fn iteration_after_an_entry_continues_in_slot_order() {
        let mut table: HashSlots<u32> = HashSlots::new();
        for k in 0..20u32 {
            table.insert(u64::from(k) * 3, |v| *v == k, k);
        }
        let order: Vec<u32> = table.iter().map(|(_, v)| *v).collect();
        let after: Vec<u32> = table.iter_after(u64::from(order[4]) * 3, |v| *v == order[4]).copied().collect();
        assert_eq!(after, order[5..]);
        assert_eq!(table.iter_after(7, |v| *v == 99).count(), 0);
    }
}
