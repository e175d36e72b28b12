//! Hash maps keyed by small integer ids (sessions, users, spaces).
//!
//! Ids are assigned by the server or the schema, not by clients, so the keyed
//! SipHash of `std` buys nothing there; a multiplicative hash is a few cycles.

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

/// A `HashMap` for integer ids.
pub type IdMap<K, V> = HashMap<K, V, BuildHasherDefault<IdHasher>>;

/// Fibonacci hashing of one integer; other input is folded in byte by byte.
#[derive(Debug, Default, Clone, Copy)]
pub struct IdHasher(u64);

impl Hasher for IdHasher {
    fn finish(&self) -> u64 {
        self.0.wrapping_mul(0x9E37_79B9_7F4A_7C15)
    }

    fn write(&mut self, bytes: &[u8]) {
        for b in bytes {
            self.0 = (self.0.rotate_left(8)) ^ u64::from(*b);
        }
    }

    fn write_u32(&mut self, n: u32) {
        self.write_u64(u64::from(n));
    }

    fn write_u64(&mut self, n: u64) {
        self.0 = self.0.rotate_left(32) ^ n;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn distinct_ids_stay_distinct_keys() {
        let mut m: IdMap<u64, u64> = IdMap::default();
        for i in 0..10_000 {
            m.insert(i, i * 2);
        }
        assert_eq!(m.len(), 10_000);
        assert!((0..10_000).all(|i| m.get(&i) == Some(&(i * 2))));
        assert_eq!(m.get(&10_000), None);
    }
}
