//! `memtx_memory`: the memory the spaces' tuples and index entries take, against
//! the quota.
//!
//! Every space but `_idempotency` (bounded by its own `idempotency_max_*`
//! limits) carries a [`Charge`]: the bytes of its tuples, each with a header, and
//! a fixed estimate per index entry. The spaces of one engine add their charges
//! up in one shared [`Usage`]. A write that would grow the usage past the quota
//! fails as 2.6's allocator fails when its arena is full (`OutOfMemory`,
//! ER_MEMORY_ISSUE); a write that does not grow it (a delete, a replace by a
//! tuple no larger, a truncate) always goes through, and so do recovery and the
//! undoing of a failed commit. 2.6 charges slabs of size classes, so where it
//! stops differs with tuple sizes; oncebox counts what the tuples and entries
//! take, which the quota bounds the same way.

use std::cell::Cell;
use std::rc::Rc;
use std::sync::atomic::{AtomicUsize, Ordering};

/// `box.cfg{memtx_memory}`: the quota in bytes (2.6's default, 256 MiB).
pub static QUOTA: AtomicUsize = AtomicUsize::new(256 * 1024 * 1024);

/// Bytes charged per tuple beside its MessagePack data (the allocation's header
/// and the reference count: what `box.slab.info()` counts per item).
pub const TUPLE_HEADER_BYTES: usize = 16;

/// Bytes charged per index entry: an entry with its share of the tree node or
/// hash table around it, about what 1,000,000 tuples under one TREE take.
pub const INDEX_ENTRY_BYTES: usize = 32;

/// The bytes a tuple of `len` bytes of data is charged, its index entries aside.
#[must_use]
pub fn tuple_bytes(len: usize) -> usize {
    len + TUPLE_HEADER_BYTES
}

/// What the counted spaces of one engine take, in bytes.
#[derive(Debug, Clone, Default)]
pub struct Usage(Rc<Cell<usize>>);

impl Usage {
    /// Bytes charged now.
    #[must_use]
    pub fn used(&self) -> usize {
        self.0.get()
    }

    fn shift(&self, from: usize, to: usize) {
        self.0.set((self.0.get() + to).saturating_sub(from));
    }
}

/// One space's share of a [`Usage`]; released when the space is dropped.
#[derive(Debug, Default)]
pub struct Charge {
    /// `None`: a space outside the quota (`_idempotency`, scratch spaces).
    usage: Option<Usage>,
    /// Bytes of the tuples, headers included.
    data: usize,
    /// Index entries (tuples × indexes).
    entries: usize,
}

impl Charge {
    /// A charge counted in `usage`.
    #[must_use]
    pub fn counted(usage: &Usage) -> Self {
        Self { usage: Some(usage.clone()), data: 0, entries: 0 }
    }

    /// Another charge on the same usage (a space rebuilt in place), empty.
    #[must_use]
    pub fn sibling(&self) -> Self {
        Self { usage: self.usage.clone(), data: 0, entries: 0 }
    }

    fn total(&self) -> usize {
        self.data + self.entries * INDEX_ENTRY_BYTES
    }

    /// Sets the charge to `data` bytes of tuples and `entries` index entries.
    pub fn set(&mut self, data: usize, entries: usize) {
        let before = self.total();
        self.data = data;
        self.entries = entries;
        if let Some(usage) = &self.usage {
            usage.shift(before, self.total());
        }
    }

    /// Bytes of the tuples charged, headers included.
    #[must_use]
    pub fn data(&self) -> usize {
        self.data
    }

    /// A tuple of `new_len` bytes came in under `indexes` indexes, replacing one
    /// of `old_len` bytes if any.
    pub fn put(&mut self, old_len: Option<usize>, new_len: usize, indexes: usize) {
        let data = (self.data + tuple_bytes(new_len)).saturating_sub(old_len.map_or(0, tuple_bytes));
        let entries = if old_len.is_some() { self.entries } else { self.entries + indexes };
        self.set(data, entries);
    }

    /// A tuple of `len` bytes left `indexes` indexes.
    pub fn remove(&mut self, len: usize, indexes: usize) {
        self.set(self.data.saturating_sub(tuple_bytes(len)), self.entries.saturating_sub(indexes));
    }

    /// Whether a tuple of `new_len` bytes under `indexes` indexes fits whatever it
    /// replaces (the cheap test every write makes; [`Self::fits`] when it fails).
    #[must_use]
    pub fn surely_fits(&self, new_len: usize, indexes: usize) -> bool {
        self.fits(None, new_len, indexes)
    }

    /// Whether a tuple of `new_len` bytes under `indexes` indexes, replacing one of
    /// `old_len` bytes if any, keeps the usage within the quota or does not grow it.
    #[must_use]
    pub fn fits(&self, old_len: Option<usize>, new_len: usize, indexes: usize) -> bool {
        let Some(usage) = &self.usage else { return true };
        let grows = tuple_bytes(new_len) + if old_len.is_none() { indexes * INDEX_ENTRY_BYTES } else { 0 };
        let shrinks = old_len.map_or(0, tuple_bytes);
        grows <= shrinks || usage.used() + (grows - shrinks) <= QUOTA.load(Ordering::Relaxed)
    }
}

impl Drop for Charge {
    fn drop(&mut self) {
        self.set(0, 0);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn charges_add_up_in_their_usage_and_leave_with_their_space() {
        let usage = Usage::default();
        let mut a = Charge::counted(&usage);
        let mut b = Charge::counted(&usage);
        a.put(None, 100, 2);
        b.put(None, 10, 1);
        assert_eq!(usage.used(), tuple_bytes(100) + tuple_bytes(10) + 3 * INDEX_ENTRY_BYTES);
        a.put(Some(100), 50, 2);
        assert_eq!(a.data(), tuple_bytes(50), "a replace keeps the entries");
        a.remove(50, 2);
        assert_eq!(usage.used(), tuple_bytes(10) + INDEX_ENTRY_BYTES);
        drop(b);
        assert_eq!(usage.used(), 0, "a dropped space gives its bytes back");
        let mut uncounted = Charge::default();
        uncounted.put(None, 1 << 40, 1);
        assert_eq!(usage.used(), 0);
    }

    #[test]
    fn only_growth_past_the_quota_is_refused() {
        let usage = Usage::default();
        let mut c = Charge::counted(&usage);
        let quota = QUOTA.load(Ordering::Relaxed);
        // Fill to just under the quota with one large tuple.
        let big = quota - tuple_bytes(0) - INDEX_ENTRY_BYTES - 10;
        assert!(c.surely_fits(big, 1));
        c.put(None, big, 1);
        assert!(!c.surely_fits(100, 1) && !c.fits(None, 100, 1));
        assert!(c.fits(Some(big), big, 1), "a replace by a tuple no larger");
        assert!(!c.fits(Some(big), big + 11, 1));
        assert!(c.fits(Some(big), big + 10, 1));
        let uncounted = Charge::default();
        assert!(uncounted.surely_fits(1 << 40, 1), "outside the quota");
    }
}
