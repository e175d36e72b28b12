//! Persistence: where a commit becomes durable before it is acknowledged.
//!
//! - [`datadir`]: the directory layout, format version and lock.
//! - [`fjall_store`]: rows in fjall; commit groups are logged to files and applied
//!   to the `rows` keyspace in the background (a checkpoint).
//! - [`xlog`]: the write-ahead log's files.
//! - [`group`]: the byte form of a commit group.
//! - [`records`]: `_idempotency`'s records, kept in segment files apart from the rows.
//! - [`wal`]: the WAL thread that groups commits (group commit) and syncs per `wal_mode`.
//! - [`keys`]: how a row's storage key is derived from its primary key.
//! - `key_order`: a checkpoint's writes in key order (a radix sort).
//! - [`image`]: `box.snapshot()` under `wal_mode = 'none'`: the whole state at once.
//! - [`background`]: the low CPU priority of checkpoints, flushes and compactions.
//!
//! The executor turns the engine's [`crate::engine::Change`]s into [`RowOp`]s,
//! sends them to the WAL thread, and releases replies only when told the
//! group is durable.

/// The sequence number of the last commit group written to this process's log
/// (`box.info.lsn`): it goes on across restarts, as the log's numbering does.
pub static LAST_LOGGED_GROUP: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

/// The last commit group a checkpoint applied to the rows (`box.info.gc()`'s
/// checkpoint signature).
pub static LAST_CHECKPOINTED_GROUP: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

pub mod background;
pub mod backup;
pub mod datadir;
pub mod fjall_store;
pub mod group;
pub mod image;
mod key_order;
pub mod keys;
pub mod records;
pub mod recovery;
pub mod wal;
pub mod xlog;

/// How durable a commit must be before its reply is sent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WalMode {
    /// Commits are not logged: only `box.snapshot()` writes (see [`image`]).
    None,
    /// Written to the OS before the reply: survives a process crash (kill -9).
    Write,
    /// Synced to the device before the reply: survives power loss.
    Fsync,
}

impl WalMode {
    /// Parses `none`, `write` or `fsync`.
    #[must_use]
    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "none" => Some(Self::None),
            "write" => Some(Self::Write),
            "fsync" => Some(Self::Fsync),
            _ => None,
        }
    }

    /// The name `box.cfg` uses.
    #[must_use]
    pub fn name(self) -> &'static str {
        match self {
            Self::None => "none",
            Self::Write => "write",
            Self::Fsync => "fsync",
        }
    }
}

/// One row-level operation in a commit.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RowOp {
    /// Store `tuple` under `key`.
    Put {
        /// Storage key (see [`keys`]).
        key: Vec<u8>,
        /// The tuple's msgpack bytes, already in the buffer type fjall stores (the
        /// TX thread copies a tuple once; the WAL thread hands it to the batch as is).
        tuple: fjall::Slice,
    },
    /// Remove the row under `key`.
    Delete {
        /// Storage key.
        key: Vec<u8>,
    },
    /// Remove every row of a space.
    Truncate {
        /// The space emptied.
        space_id: u32,
    },
    /// Record the service clock (milliseconds the server has run, over all restarts).
    Clock {
        /// Current service time.
        ms: u64,
    },
    /// No `_idempotency` record left was created before this service time (lets
    /// checkpoints drop segments of records that are all gone; see [`records`]).
    RecordsFloor {
        /// Service time, milliseconds.
        ms: u64,
    },
}
