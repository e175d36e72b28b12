//! Putting a checkpoint's writes in key byte order, ties in commit order.
//!
//! A checkpoint sorts every write it applies (hundreds of thousands), so the
//! sort works on small entries that refer to the writes by index: the space id,
//! a 16-byte window of the key after the prefix every key of that space in the
//! batch shares, and the length of the rest. Keys of a space share a long prefix
//! (the space id, integer parts' high zero bytes, a user id), so the window
//! settles nearly every comparison.
//!
//! The entries are ordered by a least-significant-digit radix sort over the
//! bytes of (space, window, clamped length) that differ between entries (a few
//! for integer keys), which is stable, so equal keys stay in commit order.
//! Entries whose keys run past the window and agree on all of it are then put in
//! order by comparing the keys themselves.

use std::collections::BTreeMap;

/// Where one write sorts (see the module docs). 32 bytes: a radix pass moves them
/// cheaply.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct SortEntry {
    window: u128,
    space: u32,
    /// Bytes of the key after the shared prefix.
    tail: u32,
    /// Position in commit order.
    pub(crate) index: usize,
}

const WINDOW_BYTES: u32 = 16;

impl SortEntry {
    /// Whether two entries are of the same key, reading the keys (through `key`)
    /// only when they run past the window.
    pub(crate) fn same_key<'k>(&self, other: &Self, key: impl Fn(usize) -> &'k [u8]) -> bool {
        (self.space, self.window, self.tail) == (other.space, other.window, other.tail)
            && (self.tail <= WINDOW_BYTES || key(self.index) == key(other.index))
    }

    /// The tail's length as the radix sort sees it: every length past the window
    /// is one value. Of two keys with equal windows, the shorter (at most the
    /// window) is a prefix of the longer, whose extra bytes are the window's zero
    /// padding, so it sorts first.
    fn clamped_tail(&self) -> u8 {
        #[allow(clippy::cast_possible_truncation, reason = "at most WINDOW_BYTES + 1")]
        let clamped = self.tail.min(WINDOW_BYTES + 1) as u8;
        clamped
    }

    /// Byte `pos` of the radix key: 0..4 the space id, 4..20 the window, 20 the
    /// clamped tail length, most significant first.
    fn digit(&self, pos: usize) -> u8 {
        match pos {
            0..4 => self.space.to_be_bytes()[pos],
            4..20 => self.window.to_be_bytes()[pos - 4],
            _ => self.clamped_tail(),
        }
    }
}

/// The entries of keys `0..len`, in commit order (the order of their indexes).
fn entries<'k>(len: usize, key: &impl Fn(usize) -> &'k [u8]) -> Vec<SortEntry> {
    let space = |key: &[u8]| super::keys::space_of(key).unwrap_or(0);
    // Per space: a key of it and the length of the prefix all its keys share.
    let mut shared: BTreeMap<u32, (&[u8], usize)> = BTreeMap::new();
    for index in 0..len {
        let key = key(index);
        shared
            .entry(space(key))
            .and_modify(|(first, len)| *len = (*len).min(common_prefix(first, key)))
            .or_insert((key, key.len()));
    }
    (0..len)
        .map(|index| {
            let key = key(index);
            let space = space(key);
            let from = shared.get(&space).map_or(0, |(_, len)| *len).min(key.len());
            let mut window = [0u8; WINDOW_BYTES as usize];
            let tail = &key[from..];
            let shown = tail.len().min(window.len());
            window[..shown].copy_from_slice(&tail[..shown]);
            SortEntry {
                window: u128::from_be_bytes(window),
                space,
                tail: u32::try_from(tail.len()).unwrap_or(u32::MAX),
                index,
            }
        })
        .collect()
}

fn common_prefix(a: &[u8], b: &[u8]) -> usize {
    a.iter().zip(b).take_while(|(x, y)| x == y).count()
}

/// Entries for keys `0..len` (`key` gives each) in the keys' byte order, equal
/// keys in the order of their indexes (commit order).
pub(crate) fn sorted<'k>(len: usize, key: impl Fn(usize) -> &'k [u8]) -> Vec<SortEntry> {
    let mut order = entries(len, &key);
    radix_sort(&mut order);
    // Runs that agree on every radix byte and run past the window: by the keys.
    let mut start = 0;
    while start < order.len() {
        let first = order[start];
        let mut end = start + 1;
        while end < order.len() && radix_key(&order[end]) == radix_key(&first) {
            end += 1;
        }
        if end - start > 1 && first.tail > WINDOW_BYTES {
            order[start..end].sort_by(|a, b| key(a.index).cmp(key(b.index)));
        }
        start = end;
    }
    order
}

fn radix_key(e: &SortEntry) -> (u32, u128, u8) {
    (e.space, e.window, e.clamped_tail())
}

/// Stable LSD radix sort by [`SortEntry::digit`], skipping the bytes every entry
/// has in common.
fn radix_sort(order: &mut Vec<SortEntry>) {
    let Some(first) = order.first().copied() else { return };
    let (mut space_diff, mut window_diff, mut tail_differs) = (0u32, 0u128, false);
    for e in order.iter() {
        space_diff |= e.space ^ first.space;
        window_diff |= e.window ^ first.window;
        tail_differs |= e.clamped_tail() != first.clamped_tail();
    }
    let (space_diff, window_diff) = (space_diff.to_be_bytes(), window_diff.to_be_bytes());
    let differs = |pos: usize| match pos {
        0..4 => space_diff[pos] != 0,
        4..20 => window_diff[pos - 4] != 0,
        _ => tail_differs,
    };
    let mut spare = order.clone();
    for pos in (0..21).rev().filter(|&pos| differs(pos)) {
        let mut starts = [0usize; 256];
        for e in order.iter() {
            starts[usize::from(e.digit(pos))] += 1;
        }
        let mut at = 0;
        for slot in &mut starts {
            let count = *slot;
            *slot = at;
            at += count;
        }
        for e in order.iter() {
            let digit = usize::from(e.digit(pos));
            spare[starts[digit]] = *e;
            starts[digit] += 1;
        }
        std::mem::swap(order, &mut spare);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The order a plain stable sort by key gives.
    fn by_key(keys: &[Vec<u8>]) -> Vec<usize> {
        let mut indexes: Vec<usize> = (0..keys.len()).collect();
        indexes.sort_by(|&a, &b| keys[a].cmp(&keys[b]));
        indexes
    }

    fn xorshift(mut seed: u64) -> impl FnMut() -> u64 {
        move || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed
        }
    }

    #[test]
    fn radix_order_is_byte_order_with_ties_in_commit_order() {
        for seed in [1, 42, 0xdead_beef, u64::MAX / 3] {
            let mut next = xorshift(seed);
            for n in [0, 1, 2, 5, 63, 64, 5000] {
                // Several spaces, long shared prefixes, lengths either side of the
                // window, few distinct bytes (many ties and shared windows).
                let keys: Vec<Vec<u8>> = (0..n)
                    .map(|_| {
                        let mut key = [500u32, 512, 70_000][(next() % 3) as usize].to_be_bytes().to_vec();
                        key.extend_from_slice(&[7; 9]);
                        key.extend((0..next() % 30).map(|_| [0u8, 1, 0xff][(next() % 3) as usize]));
                        key
                    })
                    .collect();
                let got: Vec<usize> = sorted(keys.len(), |i| &keys[i]).iter().map(|e| e.index).collect();
                assert_eq!(got, by_key(&keys), "seed {seed}, {n} keys");
            }
        }
    }

    #[test]
    fn integer_keys_of_one_space_sort_on_their_low_bytes() {
        let mut next = xorshift(7);
        let keys: Vec<Vec<u8>> = (0..10_000)
            .map(|_| {
                let mut key = 512u32.to_be_bytes().to_vec();
                key.push(0x01);
                key.extend_from_slice(&(next() % 100_000).to_be_bytes());
                key
            })
            .collect();
        let got: Vec<usize> = sorted(keys.len(), |i| &keys[i]).iter().map(|e| e.index).collect();
        assert_eq!(got, by_key(&keys));
    }
}
