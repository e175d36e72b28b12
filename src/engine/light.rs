//! The table of a HASH index as Tarantool 2.6 lays it out, so that a scan of
//! it (`select{}`, `pairs()`, the `GT` iterator) meets the tuples in 2.6's order.
//!
//! 2.6 keeps a HASH index in its "light" table: a linear-hashing table that
//! grows by `GROW_BY` slots at a time and keeps collision chains inside the
//! table. A scan walks the slots in order, so the order depends on where each
//! entry landed; this module places entries by the same rules:
//!
//! - the table starts with `GROW_BY` slots; `cover` is the smallest power of
//!   two not below the slot count, and an entry's home slot is `hash & (cover -
//!   1)`, or, past the end of the table, that slot with its top bit cleared;
//! - an empty slot is on a list of empty slots (newest first); a new entry whose
//!   home is taken goes to the first slot of that list, second in its home's
//!   chain, or, if the home holds an entry of another chain, the newcomer takes
//!   the home and that entry moves to the free slot;
//! - when no slot is free the table grows by `GROW_BY` slots and splits the
//!   chains whose home slots the new ones pair with, by the newly used hash bit;
//! - a removed entry that has a successor in its chain is overwritten by that
//!   successor, whose slot becomes free.

/// Slots added at a time (2.6's `LIGHT_GROW_INCREMENT`).
const GROW_BY: u32 = 8;

/// No slot.
const END: u32 = u32::MAX;

/// One slot: an entry (its hash, the next slot of its chain, its value), or a
/// free slot on the list of free slots.
#[derive(Debug, Clone)]
struct Slot<T> {
    hash: u32,
    /// The next slot of the chain (`END`: last); a free slot points to itself.
    next: u32,
    value: Option<T>,
    /// The neighbours on the list of free slots (free slots only).
    free_prev: u32,
    free_next: u32,
}

impl<T> Slot<T> {
    fn free(at: u32) -> Self {
        Self { hash: 0, next: at, value: None, free_prev: END, free_next: END }
    }
}

/// Entries under 32-bit hashes, laid out as 2.6 lays out a HASH index.
#[derive(Debug, Clone)]
pub struct LightTable<T> {
    slots: Vec<Slot<T>>,
    len: usize,
    cover_mask: u32,
    /// The first free slot (`END`: none).
    first_free: u32,
}

impl<T> Default for LightTable<T> {
    fn default() -> Self {
        Self { slots: Vec::new(), len: 0, cover_mask: 0, first_free: END }
    }
}

#[allow(clippy::cast_possible_truncation, reason = "the table holds fewer than 2^32 slots")]
impl<T: Clone> LightTable<T> {
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

    /// Removes every entry (and the slots).
    pub fn clear(&mut self) {
        *self = Self::default();
    }

    fn size(&self) -> u32 {
        self.slots.len() as u32
    }

    /// The slot an entry with `hash` belongs in.
    fn home(&self, hash: u32) -> u32 {
        let at = hash & self.cover_mask;
        if at >= self.size() {
            at & (self.cover_mask >> 1)
        } else {
            at
        }
    }

    fn is_free(&self, at: u32) -> bool {
        self.slots[at as usize].next == at
    }

    /// Puts a slot at the head of the free list.
    fn push_free(&mut self, at: u32) {
        if self.first_free != END {
            self.slots[self.first_free as usize].free_prev = at;
        }
        self.slots[at as usize] = Slot { hash: 0, next: at, value: None, free_prev: END, free_next: self.first_free };
        self.first_free = at;
    }

    /// Takes the head of the free list.
    fn pop_free(&mut self) -> u32 {
        let at = self.first_free;
        let next = self.slots[at as usize].free_next;
        if next != END {
            self.slots[next as usize].free_prev = END;
        }
        self.first_free = next;
        at
    }

    /// Takes one slot off the free list.
    fn unlink_free(&mut self, at: u32) {
        let (prev, next) = (self.slots[at as usize].free_prev, self.slots[at as usize].free_next);
        if prev == END {
            self.first_free = next;
        } else {
            self.slots[prev as usize].free_next = next;
        }
        if next != END {
            self.slots[next as usize].free_prev = prev;
        }
    }

    /// The first slots: all free, listed in slot order.
    fn start(&mut self) {
        self.slots = (0..GROW_BY)
            .map(|i| Slot {
                free_prev: if i == 0 { END } else { i - 1 },
                free_next: if i + 1 == GROW_BY { END } else { i + 1 },
                ..Slot::free(i)
            })
            .collect();
        self.cover_mask = GROW_BY - 1;
        self.first_free = 0;
    }

    /// Adds [`GROW_BY`] slots, each paired with an old one whose chain (if it is
    /// that slot's own) is split between the two by the hash bit now in use.
    fn grow(&mut self) {
        let first_new = self.size();
        self.slots.extend((0..GROW_BY).map(|i| Slot::free(first_new + i)));
        if self.cover_mask < self.size() - 1 {
            self.cover_mask = (self.cover_mask << 1) | 1;
        }
        let low_mask = self.cover_mask >> 1;
        let bit = (self.cover_mask ^ low_mask).trailing_zeros();
        for i in 0..GROW_BY {
            let (old, new) = ((first_new & low_mask) + i, first_new + i);
            if self.is_free(old) || self.slots[old as usize].hash & low_mask != old {
                self.push_free(new);
                continue;
            }
            self.split_chain(old, new, bit);
        }
    }

    /// Splits the chain at home slot `old` in two: entries with `bit` clear stay
    /// in a chain at `old`, the others go to a chain at `new`; an entry that
    /// heads a chain is copied to the chain's home, and the slot left last is freed.
    fn split_chain(&mut self, old: u32, new: u32, bit: u32) {
        let heads = [old, new];
        let mut tails = [END, END];
        let mut freed = new;
        let mut prev_flag = 0usize;
        let mut prev = END;
        let mut at = old;
        loop {
            let flag = ((self.slots[at as usize].hash >> bit) & 1) as usize;
            if flag != prev_flag {
                tails[prev_flag] = prev;
                if tails[flag] == END {
                    // The first entry of this chain: copied to the chain's home.
                    self.slots[heads[flag] as usize] = self.slots[at as usize].clone();
                    freed = at;
                    at = heads[flag];
                } else {
                    self.slots[tails[flag] as usize].next = at;
                }
                prev_flag = flag;
            }
            prev = at;
            at = self.slots[at as usize].next;
            if at == END {
                break;
            }
        }
        let other = prev_flag ^ 1;
        if tails[other] != END {
            self.slots[tails[other] as usize].next = END;
        }
        self.push_free(freed);
    }

    /// The slot of the entry with `hash` that `eq` accepts.
    pub fn find(&self, hash: u32, mut eq: impl FnMut(&T) -> bool) -> Option<usize> {
        if self.len == 0 {
            return None;
        }
        let mut at = self.home(hash);
        if self.is_free(at) {
            return None;
        }
        while at != END {
            let slot = &self.slots[at as usize];
            if slot.hash == hash && slot.value.as_ref().is_some_and(&mut eq) {
                return Some(at as usize);
            }
            at = slot.next;
        }
        None
    }

    /// The value in a slot [`Self::find`] returned.
    #[must_use]
    pub fn get(&self, at: usize) -> Option<&T> {
        self.slots.get(at).and_then(|s| s.value.as_ref())
    }

    /// The value in a slot, to change in place.
    pub fn get_mut(&mut self, at: usize) -> Option<&mut T> {
        self.slots.get_mut(at).and_then(|s| s.value.as_mut())
    }

    /// Stores `value` under `hash`: in place of the entry `eq` accepts (returned),
    /// or as a new entry.
    pub fn put(&mut self, hash: u32, eq: impl FnMut(&T) -> bool, value: T) -> Option<T> {
        if let Some(at) = self.find(hash, eq) {
            return self.slots[at].value.replace(value);
        }
        self.insert(hash, value);
        None
    }

    /// Adds an entry (the caller knows no equal one is there).
    pub fn insert(&mut self, hash: u32, value: T) {
        if self.slots.is_empty() {
            self.start();
        }
        if self.first_free == END {
            self.grow();
        }
        self.len += 1;
        let home = self.home(hash);
        let entry = |next| Slot { hash, next, value: Some(value), free_prev: END, free_next: END };
        if self.is_free(home) {
            self.unlink_free(home);
            self.slots[home as usize] = entry(END);
            return;
        }
        let occupant_home = self.home(self.slots[home as usize].hash);
        let free = self.pop_free();
        if occupant_home == home {
            // Second in its own chain.
            let next = self.slots[home as usize].next;
            self.slots[free as usize] = entry(next);
            self.slots[home as usize].next = free;
        } else {
            // Another chain's entry sits here: it moves to the free slot.
            let mut before = occupant_home;
            while self.slots[before as usize].next != home {
                before = self.slots[before as usize].next;
            }
            self.slots[free as usize] = self.slots[home as usize].clone();
            self.slots[before as usize].next = free;
            self.slots[home as usize] = entry(END);
        }
    }

    /// Removes the entry with `hash` that `eq` accepts, as 2.6 removes a tuple: one
    /// further down a chain is unlinked; a chain's head is overwritten by its
    /// successor, whose slot is freed.
    pub fn remove(&mut self, hash: u32, mut eq: impl FnMut(&T) -> bool) -> Option<T> {
        if self.len == 0 {
            return None;
        }
        let mut at = self.home(hash);
        if self.is_free(at) {
            return None;
        }
        let mut prev = END;
        loop {
            let slot = &self.slots[at as usize];
            if slot.hash == hash && slot.value.as_ref().is_some_and(&mut eq) {
                break;
            }
            prev = at;
            at = slot.next;
            if at == END {
                return None;
            }
        }
        let next = self.slots[at as usize].next;
        let value = self.slots[at as usize].value.take();
        let freed = if prev != END {
            self.slots[prev as usize].next = next;
            at
        } else if next == END {
            at
        } else {
            self.slots[at as usize] = self.slots[next as usize].clone();
            next
        };
        self.push_free(freed);
        self.len -= 1;
        value
    }

    /// Takes the entry with `hash` that `eq` accepts out and inserts it again, as
    /// 2.6 does to the tuple a failed INSERT found (it puts the new tuple in that
    /// tuple's slot, removes the slot, inserts the old tuple anew): the entry may
    /// move, and so may the one after it in its chain.
    pub fn reinsert(&mut self, hash: u32, eq: impl FnMut(&T) -> bool) {
        let Some(at) = self.find(hash, eq) else { return };
        let at = at as u32;
        let (next, value) = (self.slots[at as usize].next, self.slots[at as usize].value.clone());
        // Removal from a slot: a successor moves up into it.
        let freed = if next == END {
            let home = self.home(hash);
            if home != at {
                let mut before = home;
                while self.slots[before as usize].next != at {
                    before = self.slots[before as usize].next;
                }
                self.slots[before as usize].next = END;
            }
            at
        } else {
            self.slots[at as usize] = self.slots[next as usize].clone();
            next
        };
        self.push_free(freed);
        self.len -= 1;
        if let Some(value) = value {
            self.insert(hash, value);
        }
    }

    /// The entries in slot order (2.6's scan order).
    pub fn iter(&self) -> impl Iterator<Item = &T> {
        self.iter_from(0)
    }

    /// The entries in slots from `start` on.
    pub fn iter_from(&self, start: usize) -> impl Iterator<Item = &T> {
        self.slots
            .iter()
            .enumerate()
            .skip(start)
            .filter(|(i, s)| s.next as usize != *i)
            .filter_map(|(_, s)| s.value.as_ref())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn order(t: &LightTable<u32>) -> Vec<u32> {
        t.iter().copied().collect()
    }

    #[test]
    fn small_integers_land_in_their_own_slots() {
        let mut t = LightTable::default();
        for k in [3, 1, 2] {
            t.insert(k, k);
        }
        assert_eq!(order(&t), [1, 2, 3]);
        assert_eq!(t.find(2, |v| *v == 2).and_then(|at| t.get(at)), Some(&2));
        assert_eq!(t.find(9, |v| *v == 9), None);
    }

    #[test]
    fn a_collision_takes_the_first_free_slot_and_a_squatter_moves_out() {
        let mut t = LightTable::default();
        // 8 and 0 share home slot 0: 8 goes to the first free slot (1).
        t.insert(0, 0);
        t.insert(8, 8);
        assert_eq!(order(&t), [0, 8]);
        // 1's home is taken by 8 (of slot 0's chain): 8 moves to the next free slot (2).
        t.insert(1, 1);
        assert_eq!(order(&t), [0, 1, 8]);
        for k in [0, 8, 1] {
            assert!(t.find(k, |v| *v == k).is_some(), "{k}");
        }
    }

    /// Random puts, removals and re-insertions (as a failed INSERT does) under
    /// hashes that collide a lot, checked against a map after every step: every
    /// entry findable, nothing else, the scan meeting each once.
    #[test]
    fn random_operations_keep_the_table_equal_to_a_map() {
        let mut t = LightTable::default();
        let mut model = std::collections::HashMap::new();
        let mut seed: u64 = 0x2545_f491_4f6c_dd1d;
        let mut next = |n: u64| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed % n
        };
        // Few distinct hashes for many keys: long chains, splits of full chains.
        let hash_of = |k: u32| k.wrapping_mul(2_654_435_761) % 97;
        for step in 0..20_000 {
            let k = u32::try_from(next(400)).unwrap();
            match next(10) {
                0..=4 => {
                    assert_eq!(
                        t.put(hash_of(k), |v: &(u32, u32)| v.0 == k, (k, step)).map(|v| v.0),
                        model.insert(k, step).map(|_| k)
                    );
                }
                5..=7 => {
                    assert_eq!(
                        t.remove(hash_of(k), |v: &(u32, u32)| v.0 == k).map(|v| v.0),
                        model.remove(&k).map(|_| k)
                    );
                }
                _ => t.reinsert(hash_of(k), |v: &(u32, u32)| v.0 == k),
            }
            assert_eq!(t.len(), model.len(), "step {step}");
            if step % 97 == 0 {
                for (&k, &v) in &model {
                    let at = t.find(hash_of(k), |e| e.0 == k).unwrap_or_else(|| panic!("{k} lost at step {step}"));
                    assert_eq!(t.get(at), Some(&(k, v)));
                }
                let mut scanned: Vec<u32> = t.iter().map(|e| e.0).collect();
                scanned.sort_unstable();
                let mut keys: Vec<u32> = model.keys().copied().collect();
                keys.sort_unstable();
                assert_eq!(scanned, keys, "step {step}");
            }
        }
    }

    #[test]
    fn growing_keeps_every_entry_findable_and_removal_moves_the_successor_up() {
        let mut t = LightTable::default();
        let keys: Vec<u32> = (0..200).map(|i| i * 7 + (i % 3) * 1000).collect();
        for &k in &keys {
            t.insert(k.wrapping_mul(2_654_435_761), k);
        }
        assert_eq!(t.len(), keys.len());
        for &k in &keys {
            assert!(t.find(k.wrapping_mul(2_654_435_761), |v| *v == k).is_some(), "{k}");
        }
        for &k in keys.iter().step_by(2) {
            assert_eq!(t.remove(k.wrapping_mul(2_654_435_761), |v| *v == k), Some(k));
        }
        for (i, &k) in keys.iter().enumerate() {
            assert_eq!(t.find(k.wrapping_mul(2_654_435_761), |v| *v == k).is_some(), i % 2 == 1, "{k}");
        }
        let mut left = order(&t);
        left.sort_unstable();
        let mut expected: Vec<u32> = keys.iter().skip(1).step_by(2).copied().collect();
        expected.sort_unstable();
        assert_eq!(left, expected);
    }
}
