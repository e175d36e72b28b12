//! The storage seam: where committed changes go before a write is acknowledged.
//!
//! The executor calls [`Storage::commit`] once per statement with every row
//! change it made; an error means nothing may be acknowledged. Durable storage
//! (fjall) plugs in here; [`MemoryStorage`] keeps nothing (`wal_mode = 'none'`).

use crate::engine::Change;
use crate::error::BoxResult;

/// A sink for committed changes.
pub trait Storage: Send {
    /// Makes one transaction's changes durable (as far as the mode promises).
    fn commit(&mut self, changes: &[Change]) -> BoxResult<()>;
}

/// Storage that keeps nothing: data lives only in memory.
#[derive(Debug, Default)]
pub struct MemoryStorage {
    commits: u64,
}

impl MemoryStorage {
    /// Number of commits seen.
    #[must_use]
    pub fn commits(&self) -> u64 {
        self.commits
    }
}

impl Storage for MemoryStorage {
    fn commit(&mut self, _changes: &[Change]) -> BoxResult<()> {
        self.commits += 1;
        Ok(())
    }
}
