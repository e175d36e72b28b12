//! `wal_mode = 'none'`: no commit is logged, and `box.snapshot()` saves the whole
//! state, which the next start loads (as 2.6 loads its last `.snap` file).
//!
//! The data directory is the one the other modes use. An image is one commit
//! group: every row the server holds now is put (`_idempotency`'s records, after
//! emptying it, and the service clock with them; temporary spaces left out), and
//! every stored row it no longer holds is deleted. The group is logged and
//! synced, then applied, so a crash part way leaves the previous image or, at
//! the next start, this one, never a mix.

use std::cell::RefCell;
use std::collections::{BTreeSet, HashSet};
use std::ops::Range;

use super::fjall_store::{FjallStore, StoreError};
use super::group::{encode_op, put_keyed, Op};
use crate::engine::Engine;

/// The store an image is written to, and the spaces it holds rows of.
#[derive(Debug)]
pub struct Images {
    store: FjallStore,
    /// Ids of the spaces whose rows the store may hold: those of the last image
    /// (or of the start). A space dropped since has its rows deleted by the next.
    stored_spaces: RefCell<BTreeSet<u32>>,
}

impl Images {
    /// Images of `engine`'s state to `store`, which holds what `engine` was loaded from.
    #[must_use]
    pub fn new(store: FjallStore, engine: &Engine) -> Self {
        Self { store, stored_spaces: RefCell::new(persistent_spaces(engine)) }
    }

    /// Writes everything `engine` holds as the directory's new state, the service
    /// clock at `clock_ms`: synced and applied before it returns.
    ///
    /// # Errors
    /// When the store cannot be written (the previous image stays).
    pub fn write(&self, engine: &Engine, clock_ms: u64) -> Result<(), StoreError> {
        let now = persistent_spaces(engine);
        let mut group = Vec::new();
        encode_op(&mut group, &Op::Truncate { space_id: crate::idempotency::SPACE_ID });
        // Each put's storage key, as its place in `group`.
        let mut keys: Vec<Range<usize>> = Vec::new();
        engine.for_each_stored_row(|space_id, pk, tuple| keys.push(put_keyed(&mut group, space_id, pk, tuple)));
        let deletes = self.stale_keys(&now, &group, &keys)?;
        drop(keys);
        for key in &deletes {
            encode_op(&mut group, &Op::Delete { key });
        }
        encode_op(&mut group, &Op::Clock { ms: clock_ms });
        self.store.append(&group)?;
        drop(group);
        // Synced before it is applied: applying writes the records' segment and
        // the rows' table apart, and only a durable log puts them together again.
        self.store.sync()?;
        // A file of its own, deleted once applied (a log file is deleted only when
        // a later one exists): the log does not keep every image.
        self.store.rotate_log()?;
        self.store.checkpoint()?;
        *self.stored_spaces.borrow_mut() = now;
        Ok(())
    }

    /// The stored keys of rows the engine no longer holds (of every space the
    /// store may hold rows of but `_idempotency`, which the image empties).
    fn stale_keys(&self, now: &BTreeSet<u32>, group: &[u8], keys: &[Range<usize>]) -> Result<Vec<Vec<u8>>, StoreError> {
        let kept: HashSet<&[u8]> = keys.iter().map(|at| &group[at.clone()]).collect();
        let mut stale = Vec::new();
        let spaces = self.stored_spaces.borrow();
        for &space_id in spaces.union(now).filter(|&&id| id != crate::idempotency::SPACE_ID) {
            self.store.for_each_key_in_space(space_id, |key| {
                if !kept.contains(key) {
                    stale.push(key.to_vec());
                }
                Ok(())
            })?;
        }
        Ok(stale)
    }
}

/// Ids of `engine`'s spaces whose rows are stored (all but the temporary ones).
fn persistent_spaces(engine: &Engine) -> BTreeSet<u32> {
    engine.spaces().filter(|s| !s.def.temporary).map(|s| s.def.id).collect()
}
