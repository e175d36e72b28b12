//! Rows kept in fjall, in two databases.
//!
//! The write-ahead log is a series of plain files, `wal/` ([`super::xlog`]):
//! commit groups in the byte form of [`super::group`], each one entry under its
//! sequence number, so either all of a group (data and `_idempotency` together)
//! survives a crash or none of it does.
//!
//! The rows database (`fjall-rows/`) has one keyspace, `rows`, mapping a storage
//! key ([`super::keys`]) to a tuple: the image of every group applied so far,
//! except `_idempotency`'s records, which checkpoints write to segment files in
//! `records/` beside it ([`super::records`]).
//! Applying groups (a checkpoint) happens in the background and once more at
//! open, so recovery reads `rows` alone. A checkpoint writes each row once
//! however often it changed, then records how far it applied the log and
//! deletes the log files it covered.
//!
//! The meta database (`fjall/`, keyspace `meta`) holds the instance uuid, the
//! service clock and the sequence number of the last group applied. Directories
//! up to format 3 kept the log in a keyspace `log` of it (a memtable insert per
//! commit, and flushes and compactions of what checkpoints removed); opening one
//! applies it and drops it ([`FjallStore::open`]). Format 1 kept `rows` there too.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use fjall::config::FilterPolicy;
use fjall::{Database, Keyspace, KeyspaceCreateOptions, PersistMode, Slice};

use super::background;
use super::group::Op;
use super::keys::space_prefix;
use super::records::{is_record_op, Segments};
use super::xlog;
use super::{RowOp, WalMode};

/// A storage failure, with the message given to operators.
#[derive(Debug)]
pub struct StoreError(pub String);

impl std::fmt::Display for StoreError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for StoreError {}

impl From<fjall::Error> for StoreError {
    fn from(e: fjall::Error) -> Self {
        Self(format!("storage: {e}"))
    }
}

/// Tables the rows keyspace gathers in its first level before compacting them into
/// the next (fjall's default is 4). Every checkpoint adds a table, and one of fresh
/// random `_idempotency` keys overlaps all of the next level, so each compaction
/// rewrote it; gathering 12 does that a third as often. Nothing reads `rows` but
/// start-up and truncation, so more first-level tables cost little.
const ROWS_L0_TABLES: u8 = 12;

/// fjall's worker threads per database. With more than one, the first hands each
/// compaction to another by sending it back to the shared queue, and receives it
/// again at once while the others are busy: a spin for as long as a compaction
/// runs (a quarter of the workers' CPU time in `perf`). One worker per database
/// runs flushes and compactions in turn, and two databases still have two.
const WORKER_THREADS: usize = 1;

/// The name fjall gives its worker threads.
const FJALL_WORKER: &str = "fjall:worker";

const META_INSTANCE_UUID: &[u8] = b"instance_uuid";
const META_SERVICE_CLOCK: &[u8] = b"service_clock_ms";
const META_APPLIED_UP_TO: &[u8] = b"applied_up_to";

/// The fjall databases behind oncebox (cheap to clone: the handles are shared).
#[derive(Clone)]
pub struct FjallStore {
    /// The meta database: keyspace `meta`.
    db: Database,
    /// The rows database: keyspace `rows`.
    rows_db: Database,
    rows: Keyspace,
    meta: Keyspace,
    /// The write-ahead log's directory and the writer of its newest file.
    log_dir: PathBuf,
    log: Arc<Mutex<xlog::Writer>>,
    /// One checkpoint at a time applies the log and deletes its files.
    applying: Arc<Mutex<()>>,
    /// `_idempotency`'s records, kept apart from `rows`.
    records: Arc<Segments>,
    durability: Option<PersistMode>,
    /// Every group up to this sequence number is applied (also in `meta`).
    applied_up_to: Arc<AtomicU64>,
    /// Room to reserve for the next checkpoint's operations (from the last one's count).
    checkpoint_ops_hint: Arc<AtomicUsize>,
}

impl std::fmt::Debug for FjallStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FjallStore").field("durability", &self.durability).finish_non_exhaustive()
    }
}

/// Block cache of each fjall database. The engine holds every row in memory, so
/// fjall's tables are read at start (one scan of the rows) and by a truncation:
/// fjall's default, 32 MiB a database, was memory spent on nothing.
const BLOCK_CACHE_BYTES: u64 = 4 * 1024 * 1024;

/// Most operations a checkpoint reserves room for in advance (about 80 MiB of
/// room; a default checkpoint holds a few hundred thousand).
const MAX_CHECKPOINT_OPS_HINT: usize = 2 * 1024 * 1024;

impl FjallStore {
    /// Opens (or creates) the meta database at `log_path`, the rows database at
    /// `rows_path`, and beside it the records' segments in `records/` and the
    /// write-ahead log in `wal/`; moves the rows of a format-1 directory, the
    /// records a format-2 one kept as rows, and the log a format-3 one kept in a
    /// keyspace, over first. Every logged group is applied before it returns.
    pub fn open(log_path: &Path, rows_path: &Path, mode: WalMode) -> Result<Self, StoreError> {
        let workers_before = background::threads();
        let db = Database::builder(log_path).cache_size(BLOCK_CACHE_BYTES).worker_threads(WORKER_THREADS).open()?;
        let rows_db =
            Database::builder(rows_path).cache_size(BLOCK_CACHE_BYTES).worker_threads(WORKER_THREADS).open()?;
        // Flushes and compactions yield to the request path (see `background`).
        background::lower_new_threads(FJALL_WORKER, &workers_before);
        // No bloom filters: nothing looks a single row up (the rows are scanned at
        // start), and every checkpoint's table and every compaction built them for nothing.
        let rows = rows_db.keyspace("rows", || {
            KeyspaceCreateOptions::default().filter_policy(FilterPolicy::disabled()).compaction_strategy(
                std::sync::Arc::new(fjall::compaction::Leveled::default().with_l0_threshold(ROWS_L0_TABLES)),
            )
        })?;
        if db.keyspace_exists("rows") {
            move_rows(&db, &rows_db, &rows)?;
        }
        let beside = rows_path.parent().unwrap_or(Path::new(""));
        let records = Segments::open(&beside.join(super::records::DIR))?;
        move_records(&rows_db, &rows, &records)?;
        let meta = db.keyspace("meta", KeyspaceCreateOptions::default)?;
        let applied = match meta.get(META_APPLIED_UP_TO)? {
            Some(v) => {
                u64::from_be_bytes(v.as_ref().try_into().map_err(|_| StoreError("damaged applied_up_to".into()))?)
            }
            None => 0,
        };
        let log_dir = beside.join(xlog::DIR);
        std::fs::create_dir_all(&log_dir).map_err(|e| io_error("creating", &log_dir, &e))?;
        let last_logged = recover_log_files(&log_dir)?;
        // Groups are numbered on from the last logged, applied or put in a segment:
        // a segment is named after its last group, and segments replay in that order.
        // (Format 3 kept no applied number and numbered from 1 again after a clean
        // stop; its segments may be numbered past both.)
        let numbered = last_logged.max(applied).max(records.newest_seq());
        let durability = match mode {
            WalMode::None => None,
            // Out of the process's buffers into the OS: survives kill -9.
            WalMode::Write => Some(PersistMode::Buffer),
            WalMode::Fsync => Some(PersistMode::SyncData),
        };
        let writer = xlog::Writer::create(&log_dir, numbered, mode == WalMode::Fsync)
            .map_err(|e| io_error("starting a log file in", &log_dir, &e))?;
        let store = Self {
            db,
            rows_db,
            rows,
            meta,
            log_dir,
            log: Arc::new(Mutex::new(writer)),
            applying: Arc::new(Mutex::new(())),
            records: Arc::new(records),
            durability,
            applied_up_to: Arc::new(AtomicU64::new(applied)),
            checkpoint_ops_hint: Arc::new(AtomicUsize::new(0)),
        };
        if store.db.keyspace_exists("log") {
            if last_logged > 0 {
                return Err(StoreError("both a log keyspace and log files: cannot tell their order".into()));
            }
            store.apply_keyspace_log(numbered)?;
            // The new file must follow the old log's groups.
            let applied = store.applied_up_to.load(Ordering::Acquire);
            *store.writer() = xlog::Writer::create(&store.log_dir, applied.max(numbered), mode == WalMode::Fsync)
                .map_err(|e| io_error("starting a log file in", &store.log_dir, &e))?;
        }
        // Groups a crash left in the log are applied before anything reads `rows`.
        store.apply_log(u64::MAX)?;
        super::LAST_LOGGED_GROUP.store(store.writer().last_seq(), Ordering::Relaxed);
        super::LAST_CHECKPOINTED_GROUP.store(store.applied_up_to.load(Ordering::Acquire), Ordering::Relaxed);
        Ok(store)
    }

    /// Whether commits are logged (every mode but `none`).
    #[must_use]
    pub fn logs_commits(&self) -> bool {
        self.durability.is_some()
    }

    fn writer(&self) -> MutexGuard<'_, xlog::Writer> {
        self.log.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Appends an encoded commit group to the log, durable as the mode promises;
    /// returns its sequence number.
    pub fn append(&self, group: &[u8]) -> Result<u64, StoreError> {
        let seq = self.writer().append(group).map_err(|e| StoreError(format!("writing the log: {e}")))?;
        super::LAST_LOGGED_GROUP.store(seq, Ordering::Relaxed);
        Ok(seq)
    }

    /// Starts a new log file for the groups to come (before a checkpoint of the
    /// ones so far); returns the sequence number of the last group in the old one.
    pub fn rotate_log(&self) -> Result<u64, StoreError> {
        let mut writer = self.writer();
        writer.rotate().map_err(|e| StoreError(format!("starting a log file: {e}")))?;
        Ok(writer.last_seq())
    }

    /// Applies every logged group up to `up_to` (in order) to `rows`, file by
    /// file, and deletes each file once every group in it is applied; returns
    /// how many groups were applied.
    ///
    /// The file being appended to is only read when `up_to` reaches into it (at
    /// open and at shutdown, when nothing appends).
    pub fn apply_log(&self, up_to: u64) -> Result<usize, StoreError> {
        let _one_at_a_time = self.applying.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        let files = xlog::files(&self.log_dir).map_err(|e| StoreError(format!("listing the log: {e}")))?;
        // The file being appended to is read up to its data only.
        let (current_first, current_bytes) = {
            let writer = self.writer();
            (writer.first_seq(), writer.file_bytes())
        };
        let mut applied_groups = 0;
        for (at, file) in files.iter().enumerate() {
            if file.first_seq > up_to {
                break;
            }
            let next_first = files.get(at + 1).map(|f| f.first_seq);
            let from = self.applied_up_to.load(Ordering::Acquire).saturating_add(1);
            if next_first.is_none_or(|next| next > from) {
                let limit = (file.first_seq == current_first).then_some(current_bytes);
                let bytes = read_log_file(&file.path, limit)?;
                let read = xlog::read_groups(&bytes);
                if let Some(damage) = read.damage {
                    return Err(StoreError(format!("damaged log file {}: {damage:?}", file.path.display())));
                }
                let groups: Vec<(u64, &[u8])> =
                    read.groups.into_iter().filter(|(seq, _)| (from..=up_to).contains(seq)).collect();
                applied_groups += groups.len();
                self.apply_groups(&groups)?;
            }
            // Every group of a file before the last is applied once the next file's first is reached.
            let applied = self.applied_up_to.load(Ordering::Acquire);
            if next_first.is_some_and(|next| next <= applied.saturating_add(1)) {
                std::fs::remove_file(&file.path)
                    .map_err(|e| StoreError(format!("deleting {}: {e}", file.path.display())))?;
            }
        }
        Ok(applied_groups)
    }

    /// Applies the groups of a format-3 directory's log keyspace, in order and
    /// numbered after `numbered`, then drops it.
    fn apply_keyspace_log(&self, numbered: u64) -> Result<(), StoreError> {
        let log = self.db.keyspace("log", KeyspaceCreateOptions::default)?;
        let mut logged: Vec<Slice> = Vec::new();
        for item in log.iter() {
            logged.push(item.into_inner()?.1);
        }
        let groups: Vec<(u64, &[u8])> = (numbered + 1..).zip(logged.iter().map(AsRef::as_ref)).collect();
        let count = groups.len();
        self.apply_groups(&groups)?;
        drop(logged);
        self.db.delete_keyspace(log)?;
        self.db.persist(PersistMode::SyncAll)?;
        tracing::info!(groups = count, "applied the log keyspace and moved the log to files");
        Ok(())
    }

    /// Applies `groups` (in order, each after the last applied) to `rows` as one
    /// table, their records to a segment, and records them as applied.
    ///
    /// The rows' final values are ingested as one new table (fjall bulk ingestion:
    /// no journal, no memtable, synced), and the groups count as applied only after
    /// it is registered. A crash in between leaves the groups to be applied again:
    /// each operation sets a row's final value (or removes it), so applying a group
    /// twice, in order, is the same as once.
    fn apply_groups(&self, groups: &[(u64, &[u8])]) -> Result<(), StoreError> {
        let (Some(&(first_applied, _)), Some(&(last_applied, _))) = (groups.first(), groups.last()) else {
            return Ok(());
        };
        // The operations borrow the logged groups: nothing is copied until ingestion.
        // Room for as many as the last checkpoint had, and a little more: the vector
        // is not regrown (and copied) a dozen times on the way.
        let mut ops = Vec::with_capacity(self.checkpoint_ops_hint.load(Ordering::Relaxed));
        for &(seq, group) in groups {
            super::group::ops_into(group, &mut ops).ok_or_else(|| StoreError(format!("damaged commit group {seq}")))?;
        }
        // (Capped: one catch-up after a long outage must not size every later one.)
        let hint = (ops.len() + ops.len() / 8).min(MAX_CHECKPOINT_OPS_HINT);
        self.checkpoint_ops_hint.store(hint, Ordering::Relaxed);
        let clock = ops.iter().rev().find_map(|op| match op {
            Op::Clock { ms } => Some(*ms),
            _ => None,
        });
        // `_idempotency`'s operations go to a segment of their own, synced before the
        // groups count as applied.
        let mut record_ops = Vec::new();
        let mut records_floor = None;
        ops.retain(|op| match op {
            Op::RecordsFloor { ms } => {
                // Evictions are logged by the floor: replay applies it in place.
                records_floor = Some(*ms);
                record_ops.push(*op);
                false
            }
            op if is_record_op(op) => {
                record_ops.push(*op);
                false
            }
            _ => true,
        });
        let records_emptied = record_ops.iter().any(|op| matches!(op, Op::Truncate { .. }));
        if !record_ops.is_empty() {
            self.records.write(last_applied, &record_ops)?;
        }
        let truncated;
        let resolved: Vec<(&[u8], Option<&[u8]>)> = if ops.iter().any(|op| matches!(op, Op::Truncate { .. })) {
            // Rare (a space emptied since the last checkpoint): the owned path.
            truncated = self.resolve_truncating(ops.into_iter().map(Op::to_row_op).collect())?;
            truncated.iter().map(|(k, v)| (k.as_slice(), v.as_deref())).collect()
        } else {
            last_writes(ops)
        };
        if !resolved.is_empty() {
            // Resolved rows are sorted and unique: they go straight into a new table,
            // not through the journal (the log holds them durably) and a memtable.
            let mut ingestion = self.rows.start_ingestion()?;
            for (key, value) in resolved {
                match value {
                    Some(v) => ingestion.write(key, v)?,
                    None => ingestion.write_tombstone(key)?,
                }
            }
            ingestion.finish()?;
        }
        // At least out of the process: the log files this covers are deleted next.
        let mut batch = self.db.batch().durability(self.durability.or(Some(PersistMode::Buffer)));
        if let Some(ms) = clock {
            batch.insert(&self.meta, META_SERVICE_CLOCK, ms.to_be_bytes().to_vec());
        }
        batch.insert(&self.meta, META_APPLIED_UP_TO, last_applied.to_be_bytes().to_vec());
        batch.commit()?;
        self.applied_up_to.fetch_max(last_applied, Ordering::AcqRel);
        super::LAST_CHECKPOINTED_GROUP.fetch_max(last_applied, Ordering::Relaxed);
        self.records.drop_dead(first_applied, records_floor, records_emptied)?;
        Ok(())
    }

    /// The instance uuid recorded at creation.
    pub fn instance_uuid(&self) -> Result<Option<uuid::Uuid>, StoreError> {
        let Some(v) = self.meta.get(META_INSTANCE_UUID)? else { return Ok(None) };
        uuid::Uuid::from_slice(&v).map(Some).map_err(|e| StoreError(format!("damaged instance uuid: {e}")))
    }

    /// The last recorded service clock, milliseconds.
    pub fn service_clock(&self) -> Result<u64, StoreError> {
        let Some(v) = self.meta.get(META_SERVICE_CLOCK)? else { return Ok(0) };
        let bytes: [u8; 8] = v.as_ref().try_into().map_err(|_| StoreError("damaged service clock".into()))?;
        Ok(u64::from_be_bytes(bytes))
    }

    /// The records the segments hold (tuples of `_idempotency`), in no order.
    pub fn records(&self) -> Result<Vec<crate::engine::tuple::Tuple>, StoreError> {
        self.records.replay()
    }

    /// How many records segments there are.
    #[cfg(test)]
    pub(crate) fn record_segments(&self) -> usize {
        self.records.count()
    }

    /// Visits every row of one space in key order.
    pub fn for_each_in_space(
        &self,
        space_id: u32,
        mut f: impl FnMut(&[u8]) -> Result<(), StoreError>,
    ) -> Result<(), StoreError> {
        for item in self.rows.prefix(space_prefix(space_id)) {
            let (_, v) = item.into_inner()?;
            f(&v)?;
        }
        Ok(())
    }

    /// Visits the storage key of every row of one space, in key order.
    pub fn for_each_key_in_space(
        &self,
        space_id: u32,
        mut f: impl FnMut(&[u8]) -> Result<(), StoreError>,
    ) -> Result<(), StoreError> {
        for item in self.rows.prefix(space_prefix(space_id)) {
            f(&item.key()?)?;
        }
        Ok(())
    }

    /// How many groups the log holds that are not applied yet.
    #[cfg(test)]
    pub(crate) fn logged_groups(&self) -> usize {
        let applied = self.applied_up_to.load(Ordering::Acquire);
        xlog::files(&self.log_dir)
            .expect("log listable")
            .iter()
            .map(|f| {
                let bytes = std::fs::read(&f.path).expect("log readable");
                xlog::read_groups(&bytes).groups.iter().filter(|(seq, _)| *seq > applied).count()
            })
            .sum()
    }

    /// How many log files there are.
    #[cfg(test)]
    pub(crate) fn log_files(&self) -> usize {
        xlog::files(&self.log_dir).expect("log listable").len()
    }

    /// Every row, (storage key, tuple), in key order.
    #[cfg(test)]
    pub(crate) fn all_rows(&self) -> Vec<(Vec<u8>, Vec<u8>)> {
        let mut rows = Vec::new();
        self.for_each_row(|k, v| {
            rows.push((k.to_vec(), v.to_vec()));
            Ok(())
        })
        .expect("rows readable");
        rows
    }

    /// Visits every row: (storage key, tuple).
    pub fn for_each_row(&self, mut f: impl FnMut(&[u8], &[u8]) -> Result<(), StoreError>) -> Result<(), StoreError> {
        for item in self.rows.iter() {
            let (k, v) = item.into_inner()?;
            f(&k, &v)?;
        }
        Ok(())
    }

    /// Writes the first commit of a new directory: every bootstrap row as one
    /// synced group of the log, then the uuid, then applies the group to the rows.
    /// (A crash before the uuid is written leaves a directory that starts afresh.)
    pub fn initialize(&self, instance_uuid: &uuid::Uuid, ops: Vec<RowOp>) -> Result<(), StoreError> {
        self.append(&encode_group(&ops))?;
        self.writer().sync().map_err(|e| StoreError(format!("syncing the log: {e}")))?;
        let mut batch = self.db.batch().durability(Some(PersistMode::SyncAll));
        batch.insert(&self.meta, META_INSTANCE_UUID, instance_uuid.as_bytes().to_vec());
        batch.commit()?;
        self.apply_log(u64::MAX)?;
        Ok(())
    }

    /// Logs a commit group (outside the WAL thread: before it starts), durable as the mode promises.
    pub fn write(&self, ops: Vec<RowOp>) -> Result<(), StoreError> {
        if ops.is_empty() {
            return Ok(());
        }
        self.append(&encode_group(&ops)).map(|_| ())
    }

    /// Syncs everything written so far to the device.
    pub fn sync(&self) -> Result<(), StoreError> {
        self.writer().sync().map_err(|e| StoreError(format!("syncing the log: {e}")))?;
        self.db.persist(PersistMode::SyncAll)?;
        self.rows_db.persist(PersistMode::SyncAll)?;
        Ok(())
    }

    /// Clean shutdown: applies the log, then flushes memtables to tables so the
    /// next start need not replay fjall's journals.
    pub fn checkpoint(&self) -> Result<(), StoreError> {
        self.apply_log(u64::MAX)?;
        self.sync()?;
        self.rows.rotate_memtable_and_wait()?;
        self.meta.rotate_memtable_and_wait()?;
        self.sync()
    }

    /// The final state of every key touched by operations that empty a space (every
    /// stored key of it is deleted), in key order.
    fn resolve_truncating(&self, ops: Vec<RowOp>) -> Result<BTreeMap<Vec<u8>, Option<Slice>>, StoreError> {
        let mut out: BTreeMap<Vec<u8>, Option<Slice>> = BTreeMap::new();
        for op in ops {
            match op {
                RowOp::Put { key, tuple } => {
                    out.insert(key, Some(tuple));
                }
                RowOp::Delete { key } => {
                    out.insert(key, None);
                }
                RowOp::Clock { .. } | RowOp::RecordsFloor { .. } => {}
                RowOp::Truncate { space_id } => {
                    let prefix = space_prefix(space_id);
                    for item in self.rows.prefix(prefix) {
                        let (k, _) = item.into_inner()?;
                        out.insert(k.to_vec(), None);
                    }
                    for (_, v) in out.range_mut(prefix.to_vec()..).take_while(|(k, _)| k.starts_with(&prefix)) {
                        *v = None;
                    }
                }
            }
        }
        Ok(out)
    }
}

/// The last write of each key (`None`: deleted), in key order; other operations are skipped.
///
/// One fjall batch or table holds a key once only. The writes are sorted by
/// key, ties by commit order, so the last of each run of equal keys wins.
/// (Sorting, not hashing: the keys are the clients' own, so no hash can be flooded.)
fn last_writes(ops: Vec<Op<'_>>) -> Vec<(&[u8], Option<&[u8]>)> {
    let writes: Vec<(&[u8], Option<&[u8]>)> = ops
        .into_iter()
        .filter_map(|op| match op {
            Op::Put { key, tuple } => Some((key, Some(tuple))),
            Op::Delete { key } => Some((key, None)),
            Op::Truncate { .. } | Op::Clock { .. } | Op::RecordsFloor { .. } => None,
        })
        .collect();
    let order = super::key_order::sorted(writes.len(), |i| writes[i].0);
    let mut out: Vec<(&[u8], Option<&[u8]>)> = Vec::with_capacity(order.len());
    for (at, entry) in order.iter().enumerate() {
        let write = writes[entry.index];
        match out.last_mut() {
            Some(kept) if order[at - 1].same_key(entry, |i| writes[i].0) => kept.1 = write.1,
            _ => out.push(write),
        }
    }
    out
}

/// The byte form of a group given as operations.
fn encode_group(ops: &[RowOp]) -> Vec<u8> {
    let mut group = Vec::new();
    for op in ops {
        super::group::encode(&mut group, op);
    }
    group
}

/// Moves the `rows` keyspace of a format-1 log database into the rows database.
///
/// The copy is synced before the old keyspace is dropped: a crash in between
/// copies it again (the same rows, so the same result), never loses it.
fn move_rows(db: &Database, rows_db: &Database, rows: &Keyspace) -> Result<(), StoreError> {
    let started = std::time::Instant::now();
    let old = db.keyspace("rows", KeyspaceCreateOptions::default)?;
    let mut copied = 0u64;
    let mut ingestion = rows.start_ingestion()?;
    for item in old.iter() {
        let (k, v) = item.into_inner()?;
        ingestion.write(k, v)?;
        copied += 1;
    }
    ingestion.finish()?;
    rows_db.persist(PersistMode::SyncAll)?;
    db.delete_keyspace(old)?;
    db.persist(PersistMode::SyncAll)?;
    tracing::info!(rows = copied, elapsed_ms = started.elapsed().as_millis(), "moved rows to their own database");
    Ok(())
}

/// Moves the `_idempotency` records a format-2 directory kept as rows into a
/// segment (the oldest, 0), then removes them from the rows.
///
/// The segment is synced before the rows are removed: a crash in between writes
/// it again (the same records), never loses them.
fn move_records(rows_db: &Database, rows: &Keyspace, records: &Segments) -> Result<(), StoreError> {
    let started = std::time::Instant::now();
    let mut kept: Vec<(Slice, Slice)> = Vec::new();
    for item in rows.prefix(space_prefix(crate::idempotency::SPACE_ID)) {
        kept.push(item.into_inner()?);
    }
    if kept.is_empty() {
        return Ok(());
    }
    let ops: Vec<Op<'_>> = kept.iter().map(|(k, v)| Op::Put { key: k, tuple: v }).collect();
    records.write(0, &ops)?;
    let mut ingestion = rows.start_ingestion()?;
    for (k, _) in &kept {
        ingestion.write_tombstone(k.as_ref())?;
    }
    ingestion.finish()?;
    rows_db.persist(PersistMode::SyncAll)?;
    tracing::info!(
        records = kept.len(),
        elapsed_ms = started.elapsed().as_millis(),
        "moved idempotency records to their own segments"
    );
    Ok(())
}

/// An I/O failure on `path`, for operators.
fn io_error(what: &str, path: &Path, e: &std::io::Error) -> StoreError {
    StoreError(format!("{what} {}: {e}", path.display()))
}

/// Reads every log file in `dir`, cuts a torn entry off the end of the last
/// one ([`xlog::is_torn_tail`]), and returns the sequence number of the last group logged (0: none).
/// A damaged entry anywhere else stops the start: groups after it may have
/// been acknowledged.
fn recover_log_files(dir: &Path) -> Result<u64, StoreError> {
    let files = xlog::files(dir).map_err(|e| StoreError(format!("listing the log {}: {e}", dir.display())))?;
    let mut last_seq = 0;
    for (at, file) in files.iter().enumerate() {
        let bytes =
            std::fs::read(&file.path).map_err(|e| StoreError(format!("reading {}: {e}", file.path.display())))?;
        let xlog::Contents { groups, end, damage } = xlog::read_groups(&bytes);
        if let Some(&(first, _)) = groups.first() {
            if first != file.first_seq || first <= last_seq {
                return Err(StoreError(format!("log file {} starts with group {first}", file.path.display())));
            }
        }
        if let Some(&(last, _)) = groups.last() {
            last_seq = last;
        }
        match damage {
            // The zeros of a file's unused room go (the file is applied whole later).
            None if end < bytes.len() => xlog::truncate(&file.path, end)
                .map_err(|e| StoreError(format!("truncating {}: {e}", file.path.display())))?,
            None => {}
            Some(xlog::Damage::Entry { offset }) if at + 1 == files.len() && xlog::is_torn_tail(&bytes, offset) => {
                tracing::warn!(
                    file = %file.path.display(),
                    offset,
                    bytes = bytes.len() - offset,
                    "cutting off a torn entry at the end of the log (a write a crash cut short, never acknowledged)"
                );
                xlog::truncate(&file.path, offset)
                    .map_err(|e| StoreError(format!("truncating {}: {e}", file.path.display())))?;
            }
            Some(damage) => {
                return Err(StoreError(format!("damaged log file {}: {damage:?}", file.path.display())));
            }
        }
    }
    Ok(last_seq)
}

/// A log file's bytes; `limit`: how many (the current file's data, not its room).
fn read_log_file(path: &Path, limit: Option<u64>) -> Result<Vec<u8>, StoreError> {
    use std::io::Read;
    let read = |file: std::fs::File| -> std::io::Result<Vec<u8>> {
        let len = file.metadata()?.len().min(limit.unwrap_or(u64::MAX));
        // Sized once: a growing vector would be copied (and its fresh pages
        // faulted in) a dozen times over for a 16 MiB file.
        let mut bytes = Vec::with_capacity(usize::try_from(len).unwrap_or(0));
        file.take(len).read_to_end(&mut bytes)?;
        Ok(bytes)
    };
    std::fs::File::open(path).and_then(read).map_err(|e| io_error("reading", path, &e))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn last_writes_equal_a_map_of_the_last_write_per_key_in_byte_order() {
        for seed in [0x9e37_79b9_7f4a_7c15_u64, 1, 0xdead_beef, 42, u64::MAX / 3] {
            last_writes_of_random_keys(seed);
        }
    }

    fn last_writes_of_random_keys(mut seed: u64) {
        // Keys of a few spaces, sharing long prefixes, of varied lengths, often repeated.
        let mut next = move || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed
        };
        let mut keys = Vec::new();
        for _ in 0..3000 {
            let mut key = [500u32, 512, 513][(next() % 3) as usize].to_be_bytes().to_vec();
            key.extend_from_slice(&[0; 15]);
            key.extend((0..next() % 24).map(|_| [0u8, 1, 0xff][(next() % 3) as usize]));
            keys.push(key);
        }
        let values: Vec<Vec<u8>> = (0..keys.len()).map(|i| i.to_le_bytes().to_vec()).collect();
        let mut ops = Vec::new();
        let mut expected = BTreeMap::new();
        for (i, value) in values.iter().enumerate() {
            let key = &keys[if next() % 2 == 0 { i } else { (next() as usize) % (i + 1) }];
            if next() % 5 == 0 {
                ops.push(Op::Delete { key });
                expected.insert(key.as_slice(), None);
            } else {
                ops.push(Op::Put { key, tuple: value });
                expected.insert(key.as_slice(), Some(value.as_slice()));
            }
        }
        let got = last_writes(ops);
        assert_eq!(got, expected.into_iter().collect::<Vec<_>>());
    }

    #[test]
    fn groups_are_resolved_and_survive_reopen() {
        let dir = std::env::temp_dir().join(format!("oncebox-fjall-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let key = |s: u32, k: u8| {
            let mut v = s.to_be_bytes().to_vec();
            v.push(k);
            v
        };
        {
            let store = FjallStore::open(&dir.join("log"), &dir.join("rows"), WalMode::Write).unwrap();
            store
                .write(vec![
                    RowOp::Put { key: key(512, 1), tuple: vec![1].into() },
                    RowOp::Put { key: key(512, 2), tuple: vec![2].into() },
                    RowOp::Put { key: key(513, 1), tuple: vec![3].into() },
                ])
                .unwrap();
            store
                .write(vec![
                    RowOp::Truncate { space_id: 512 },
                    RowOp::Put { key: key(512, 3), tuple: vec![4].into() },
                    RowOp::Delete { key: key(513, 1) },
                    RowOp::Put { key: key(513, 2), tuple: vec![5].into() },
                    RowOp::Put { key: key(513, 2), tuple: vec![6].into() },
                ])
                .unwrap();
        }
        let store = FjallStore::open(&dir.join("log"), &dir.join("rows"), WalMode::Write).unwrap();
        assert_eq!(store.all_rows(), vec![(key(512, 3), vec![4]), (key(513, 2), vec![6])]);
        drop(store);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn the_rows_of_a_format_1_directory_move_to_their_own_database() {
        let dir = std::env::temp_dir().join(format!("oncebox-fjall-move-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let (log, rows) = (dir.join("log"), dir.join("rows"));
        let row = |k: u8| (vec![0, 0, 2, 0, k], vec![0x91, k]);
        {
            // Format 1: `rows` beside `log` and `meta`, with a group left in the log.
            let db = Database::builder(&log).open().unwrap();
            let old = db.keyspace("rows", KeyspaceCreateOptions::default).unwrap();
            for k in 1..=3 {
                let (key, tuple) = row(k);
                old.insert(key, tuple).unwrap();
            }
            let log_ks = db.keyspace("log", KeyspaceCreateOptions::default).unwrap();
            let (key, _) = row(2);
            log_ks.insert(1u64.to_be_bytes(), encoded(&[RowOp::Delete { key }])).unwrap();
            db.persist(PersistMode::SyncAll).unwrap();
        }
        let store = FjallStore::open(&log, &rows, WalMode::Write).unwrap();
        let moved: Vec<_> = [1, 3].map(row).to_vec();
        assert_eq!(store.all_rows(), moved, "moved, then the logged delete applied");
        assert!(!store.db.keyspace_exists("rows"));
        drop(store);
        let store = FjallStore::open(&log, &rows, WalMode::Write).unwrap();
        assert_eq!(store.all_rows(), moved, "and still there after a reopen");
        drop(store);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    fn encoded(ops: &[RowOp]) -> Vec<u8> {
        let mut buf = Vec::new();
        for op in ops {
            crate::storage::group::encode(&mut buf, op);
        }
        buf
    }

    #[test]
    fn logged_groups_reach_the_rows_by_checkpoint_or_at_open() {
        let dir = std::env::temp_dir().join(format!("oncebox-fjall-log-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let key = |k: u8| vec![0, 0, 2, 0, k];
        let put = |k: u8, v: u8| RowOp::Put { key: key(k), tuple: vec![v].into() };
        {
            let store = FjallStore::open(&dir.join("log"), &dir.join("rows"), WalMode::Write).unwrap();
            assert_eq!(store.append(&encoded(&[put(1, 10), put(2, 20), RowOp::Clock { ms: 5 }])).unwrap(), 1);
            assert_eq!(store.append(&encoded(&[put(1, 11), RowOp::Delete { key: key(2) }])).unwrap(), 2);
            let truncating = encoded(&[RowOp::Truncate { space_id: 512 }, put(3, 30), RowOp::Clock { ms: 9 }]);
            assert_eq!(store.append(&truncating).unwrap(), 3);
            // A checkpoint up to group 2: group 3 stays in the log.
            assert_eq!(store.apply_log(2).unwrap(), 2);
            assert_eq!(store.all_rows(), vec![(key(1), vec![11])]);
            assert_eq!(store.service_clock().unwrap(), 5);
            assert_eq!(store.logged_groups(), 1);
            assert_eq!(store.append(&encoded(&[put(1, 11)])).unwrap(), 4);
            assert_eq!(store.apply_log(4).unwrap(), 2);
            assert_eq!(store.apply_log(4).unwrap(), 0, "nothing is applied twice");
            assert_eq!(store.append(&encoded(&[put(4, 40)])).unwrap(), 5);
            // Dropped without a checkpoint, as after kill -9.
        }
        let store = FjallStore::open(&dir.join("log"), &dir.join("rows"), WalMode::Write).unwrap();
        assert_eq!(store.all_rows(), vec![(key(1), vec![11]), (key(3), vec![30]), (key(4), vec![40])]);
        assert_eq!(store.service_clock().unwrap(), 9);
        assert_eq!(store.log_files(), 1, "the applied files are deleted");
        assert_eq!(store.append(b"\x09").unwrap(), 6, "the groups applied at open keep their numbers");
        assert!(store.apply_log(6).is_err(), "a damaged group is reported, not skipped");
        drop(store);
        assert!(FjallStore::open(&dir.join("log"), &dir.join("rows"), WalMode::Write).is_err());
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_torn_last_entry_is_cut_off_and_damage_before_it_stops_the_start() {
        let dir = std::env::temp_dir().join(format!("oncebox-fjall-torn-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let open = || FjallStore::open(&dir.join("log"), &dir.join("rows"), WalMode::Write);
        let put = |k: u8| RowOp::Put { key: vec![0, 0, 2, 0, k], tuple: vec![0x91, k].into() };
        let last_file = || xlog::files(&dir.join(xlog::DIR)).unwrap().pop().unwrap().path;
        {
            let store = open().unwrap();
            store.write(vec![put(1)]).unwrap();
            store.write(vec![put(2)]).unwrap();
        }
        // A third entry cut short by a crash, in the file's room: the first half of
        // one like the second.
        let file = last_file();
        let mut bytes = std::fs::read(&file).unwrap();
        let end = xlog::read_groups(&bytes).end;
        let entry_len = (end - xlog::MAGIC.len()) / 2;
        let torn = bytes[end - entry_len..end - entry_len / 2].to_vec();
        bytes[end..end + torn.len()].copy_from_slice(&torn);
        std::fs::write(&file, &bytes).unwrap();
        {
            let store = open().unwrap();
            assert_eq!(store.all_rows().len(), 2, "both whole groups applied");
            assert_eq!(std::fs::read(&file).ok().map(|b| b.len()), None, "the applied file is gone");
            store.write(vec![put(3)]).unwrap();
        }
        // Damage in the middle of the last file: the group after it may have been
        // acknowledged, so the start stops.
        {
            let store = open().unwrap();
            store.write(vec![put(4)]).unwrap();
            store.write(vec![put(5)]).unwrap();
        }
        let file = last_file();
        let mut bytes = std::fs::read(&file).unwrap();
        bytes[xlog::MAGIC.len() + 13] ^= 0xff;
        std::fs::write(&file, &bytes).unwrap();
        let err = open().unwrap_err();
        assert!(err.0.contains("damaged log file"), "{err}");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// A record tuple (`[user, token, fingerprint, created, reply, size]`) and its key.
    fn record(token: u8, created_ms: u64) -> (Vec<u8>, Vec<u8>) {
        use crate::engine::value::KeyPart;
        let key =
            super::super::keys::row_key(crate::idempotency::SPACE_ID, &[KeyPart::Uint(1), KeyPart::Uint(token.into())]);
        let mut tuple = Vec::new();
        crate::idempotency::NewRecord { user_id: 1, token: &[token], fingerprint: [0; 16], created_ms, reply: b"\x80" }
            .encode(&mut tuple);
        (key, tuple)
    }

    fn record_put(token: u8, created_ms: u64) -> RowOp {
        let (key, tuple) = record(token, created_ms);
        RowOp::Put { key, tuple: tuple.into() }
    }

    fn stored_records(store: &FjallStore) -> Vec<(Vec<u8>, Vec<u8>)> {
        let tuples: Vec<Vec<u8>> = store.records().unwrap().iter().map(|t| t.to_vec()).collect();
        // Paired with their keys, to compare with `record`.
        let mut v: Vec<_> = tuples
            .into_iter()
            .map(|t| {
                let token = t[2];
                (record(token, crate::idempotency::created_ms_of(&t).unwrap()).0, t)
            })
            .collect();
        v.sort();
        v
    }

    #[test]
    fn records_go_to_segments_and_leave_them_below_the_floor() {
        let dir = std::env::temp_dir().join(format!("oncebox-fjall-records-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let row = RowOp::Put { key: vec![0, 0, 2, 0, 1], tuple: vec![0x91, 1].into() };
        let open = || FjallStore::open(&dir.join("log"), &dir.join("rows"), WalMode::Write).unwrap();
        {
            let store = open();
            store.append(&encoded(&[row.clone(), record_put(1, 10), record_put(2, 20)])).unwrap();
            store.apply_log(1).unwrap();
            store.append(&encoded(&[record_put(3, 30)])).unwrap();
            store.apply_log(2).unwrap();
            assert_eq!(store.all_rows(), vec![(vec![0, 0, 2, 0, 1], vec![0x91, 1])], "no record among the rows");
            assert_eq!(store.record_segments(), 2);
            assert_eq!(stored_records(&store), vec![record(1, 10), record(2, 20), record(3, 30)]);
            // Evictions of 1 and 2, with the floor they leave (30): the first segment goes.
            let (k1, k2) = (record(1, 10).0, record(2, 20).0);
            store
                .append(&encoded(&[
                    RowOp::Delete { key: k1 },
                    RowOp::Delete { key: k2 },
                    RowOp::RecordsFloor { ms: 30 },
                ]))
                .unwrap();
            store.apply_log(3).unwrap();
            assert_eq!(store.record_segments(), 2, "segment 1 dropped, segment 3 (the deletes) written");
            assert_eq!(stored_records(&store), vec![record(3, 30)]);
            // Dropped without a checkpoint, as after kill -9: the log is applied at open.
            store
                .append(&encoded(&[
                    record_put(4, 40),
                    RowOp::Truncate { space_id: crate::idempotency::SPACE_ID },
                    record_put(5, 50),
                ]))
                .unwrap();
        }
        let store = open();
        assert_eq!(stored_records(&store), vec![record(5, 50)], "the truncate cleared what came before");
        assert_eq!(store.record_segments(), 1, "and every earlier segment is gone");
        drop(store);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn groups_are_numbered_on_after_a_clean_stop_and_after_every_segment() {
        let dir = std::env::temp_dir().join(format!("oncebox-fjall-numbering-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let open = || FjallStore::open(&dir.join("log"), &dir.join("rows"), WalMode::Write).unwrap();
        {
            let store = open();
            assert_eq!(store.append(&encoded(&[record_put(1, 10), record_put(2, 20)])).unwrap(), 1);
            store.checkpoint().unwrap();
        }
        {
            // After a clean stop the log is empty: the next group is still 2, so the
            // segment of its delete replays after the one of the put.
            let store = open();
            assert_eq!(store.append(&encoded(&[RowOp::Delete { key: record(1, 10).0 }])).unwrap(), 2);
            store.checkpoint().unwrap();
        }
        {
            let store = open();
            assert_eq!(stored_records(&store), vec![record(2, 20)], "the delete stays applied");
        }
        // A segment numbered past everything else (as a format-3 directory, which
        // numbered from 1 again after each clean stop, can have): numbering goes on after it.
        let records_dir = dir.join(super::super::records::DIR);
        let newest = std::fs::read_dir(&records_dir).unwrap().map(|e| e.unwrap().path()).max().unwrap();
        std::fs::rename(&newest, records_dir.join(format!("{:020}.seg", 5000))).unwrap();
        let store = open();
        assert_eq!(store.append(&encoded(&[record_put(3, 30)])).unwrap(), 5001);
        drop(store);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn the_records_a_format_2_directory_kept_as_rows_move_to_a_segment() {
        let dir = std::env::temp_dir().join(format!("oncebox-fjall-move-records-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let (log, rows) = (dir.join("log"), dir.join("rows"));
        {
            // Format 2: records are rows like any other.
            let db = Database::builder(&rows).open().unwrap();
            let ks = db.keyspace("rows", KeyspaceCreateOptions::default).unwrap();
            ks.insert(vec![0, 0, 2, 0, 1], vec![0x91, 1]).unwrap();
            for (token, created) in [(1, 10), (2, 20)] {
                let (key, tuple) = record(token, created);
                ks.insert(key, tuple).unwrap();
            }
            db.persist(PersistMode::SyncAll).unwrap();
        }
        for _ in 0..2 {
            let store = FjallStore::open(&log, &rows, WalMode::Write).unwrap();
            assert_eq!(store.all_rows(), vec![(vec![0, 0, 2, 0, 1], vec![0x91, 1])]);
            assert_eq!(stored_records(&store), vec![record(1, 10), record(2, 20)]);
            assert_eq!(store.record_segments(), 1);
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
