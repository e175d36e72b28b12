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

/// Where one write sorts (see the module docs). 32 bytes: a radix pass moves them
/// cheaply.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct SortEntry {
    /// The radix key: the space id (big-endian), the window, and the length of the
    /// key after the shared prefix clamped to `WINDOW_BYTES + 1`.
    radix: [u8; RADIX_ROOM],
    /// Position in commit order.
    pub(crate) index: usize,
}

const WINDOW_BYTES: usize = 16;

/// Bytes of a radix key: 4 of space id, the window, 1 of clamped tail length.
const RADIX_BYTES: usize = 4 + WINDOW_BYTES + 1;

/// Room for a radix key, padded with zeros to whole 8-byte words.
const RADIX_ROOM: usize = RADIX_BYTES.next_multiple_of(8);

impl SortEntry {
    /// Whether the key runs past the window (its order among keys with the same
    /// radix key needs the keys themselves).
    fn runs_past_window(&self) -> bool {
        usize::from(self.radix[RADIX_BYTES - 1]) > WINDOW_BYTES
    }

    /// Whether two entries are of the same key, reading the keys (through `key`)
    /// only when they run past the window.
    pub(crate) fn same_key<'k>(&self, other: &Self, key: impl Fn(usize) -> &'k [u8]) -> bool {
        self.radix == other.radix && (!self.runs_past_window() || key(self.index) == key(other.index))
    }
}

/// The prefix every key of one space shares, found so far.
struct SharedPrefix<'k> {
    space: u32,
    /// A key of the space: the prefix is `first[..len]`.
    first: &'k [u8],
    len: usize,
}

/// The shared prefixes of the spaces met, with the last one used remembered
/// (a checkpoint's keys mostly come in runs of one space).
#[derive(Default)]
struct SharedPrefixes<'k> {
    spaces: Vec<SharedPrefix<'k>>,
    last: usize,
}

impl<'k> SharedPrefixes<'k> {
    /// The entry of `space`, made from `key` if the space is new.
    fn of(&mut self, space: u32, key: &'k [u8]) -> &mut SharedPrefix<'k> {
        if self.spaces.get(self.last).is_none_or(|s| s.space != space) {
            self.last = match self.spaces.iter().position(|s| s.space == space) {
                Some(at) => at,
                None => {
                    self.spaces.push(SharedPrefix { space, first: key, len: key.len() });
                    self.spaces.len() - 1
                }
            };
        }
        &mut self.spaces[self.last]
    }
}

/// The entries of keys `0..len`, in commit order (the order of their indexes).
fn entries<'k>(len: usize, key: &impl Fn(usize) -> &'k [u8]) -> Vec<SortEntry> {
    let space = |key: &[u8]| super::keys::space_of(key).unwrap_or(0);
    let mut shared = SharedPrefixes::default();
    for index in 0..len {
        let key = key(index);
        let prefix = shared.of(space(key), key);
        // Nearly always true at once (one comparison of a few words).
        if !key.starts_with(&prefix.first[..prefix.len]) {
            prefix.len = common_prefix(&prefix.first[..prefix.len], key);
        }
    }
    (0..len)
        .map(|index| {
            let key = key(index);
            let space = space(key);
            let from = shared.of(space, key).len.min(key.len());
            let tail = &key[from..];
            let mut radix = [0u8; RADIX_ROOM];
            radix[..4].copy_from_slice(&space.to_be_bytes());
            let shown = tail.len().min(WINDOW_BYTES);
            radix[4..4 + shown].copy_from_slice(&tail[..shown]);
            #[allow(clippy::cast_possible_truncation, reason = "at most WINDOW_BYTES + 1")]
            let clamped = tail.len().min(WINDOW_BYTES + 1) as u8;
            radix[RADIX_BYTES - 1] = clamped;
            SortEntry { radix, index }
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
    if !order.iter().any(SortEntry::runs_past_window) {
        return order;
    }
    // Runs that agree on every radix byte and run past the window: by the keys.
    let mut start = 0;
    while start < order.len() {
        let first = order[start];
        let mut end = start + 1;
        while end < order.len() && order[end].radix == first.radix {
            end += 1;
        }
        if end - start > 1 && first.runs_past_window() {
            order[start..end].sort_by(|a, b| key(a.index).cmp(key(b.index)));
        }
        start = end;
    }
    order
}

/// Stable LSD radix sort by the radix key's bytes, skipping the bytes every entry
/// has in common; one read counts the buckets of every pass.
fn radix_sort(order: &mut Vec<SortEntry>) {
    let Some(first) = order.first().copied() else { return };
    // Which bytes differ from the first entry's, eight at a time.
    let words = |radix: &[u8; RADIX_ROOM]| -> [u64; RADIX_ROOM / 8] {
        std::array::from_fn(|w| u64::from_ne_bytes(radix[w * 8..w * 8 + 8].try_into().unwrap_or_default()))
    };
    let first_words = words(&first.radix);
    let mut diff_words = [0u64; RADIX_ROOM / 8];
    for e in order.iter() {
        for (d, (a, b)) in diff_words.iter_mut().zip(words(&e.radix).iter().zip(&first_words)) {
            *d |= a ^ b;
        }
    }
    let diff: Vec<u8> = diff_words.iter().flat_map(|w| w.to_ne_bytes()).collect();
    // Least significant first.
    let passes: Vec<usize> = (0..RADIX_BYTES).rev().filter(|&pos| diff[pos] != 0).collect();
    if passes.is_empty() {
        return;
    }
    let mut counts = vec![[0usize; 256]; passes.len()];
    for e in order.iter() {
        for (count, &pos) in counts.iter_mut().zip(&passes) {
            count[usize::from(e.radix[pos])] += 1;
        }
    }
    let mut spare = order.clone();
    for (starts, &pos) in counts.iter_mut().zip(&passes) {
        let mut at = 0;
        for slot in starts.iter_mut() {
            let count = *slot;
            *slot = at;
            at += count;
        }
        for e in order.iter() {
            let digit = usize::from(e.radix[pos]);
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
    fn random_tokens_beside_integer_keys_sort_by_key_with_ties_in_commit_order() {
        let mut next = xorshift(11);
        let mut keys: Vec<Vec<u8>> = Vec::new();
        for i in 0..20_000u64 {
            let key = if next().is_multiple_of(8) && i > 0 {
                // A repeat of an earlier key (a replace, a record evicted).
                keys[(next() % i) as usize].clone()
            } else if next().is_multiple_of(2) {
                // `_idempotency`: the space, a user id, a random 16-byte token.
                let mut key = 500u32.to_be_bytes().to_vec();
                key.extend_from_slice(&[0x01, 0, 0, 0, 1, 0x04, 0, 0, 0, 16]);
                key.extend_from_slice(&next().to_be_bytes());
                key.extend_from_slice(&next().to_be_bytes());
                key
            } else {
                let mut key = 600u32.to_be_bytes().to_vec();
                key.push(0x01);
                key.extend_from_slice(&(next() % 100_000).to_be_bytes());
                key
            };
            keys.push(key);
        }
        let got: Vec<usize> = sorted(keys.len(), |i| &keys[i]).iter().map(|e| e.index).collect();
        assert_eq!(got, by_key(&keys));
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
