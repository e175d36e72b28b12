//! The WAL thread: writes commit groups to the store, in order, and reports back.
//!
//! Whatever commits are queued when the thread wakes are written as one batch
//! and made durable together (group commit), so `fsync` mode pays one sync for
//! many requests. After a failure the thread refuses every later group: a
//! failed write is never retried behind the client's back.
//!
//! Groups go to the store's log; whenever [`checkpoint_threshold`] more bytes
//! have been logged, the log moves on to a new file and a checkpoint thread
//! applies the groups before it to the rows.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};
use std::thread::JoinHandle;

use super::fjall_store::FjallStore;

/// A commit group from the TX thread.
pub struct WalRequest {
    /// Increasing id of the group.
    pub ticket: u64,
    /// Everything the group changed, encoded (see [`super::group`]).
    pub group: Vec<u8>,
    /// Run by the WAL thread once the group is durable, after its [`WalDone`] is
    /// reported (the replies that waited for it go out without a round trip
    /// through the TX thread); dropped unrun if the group cannot be made durable.
    pub on_durable: Option<OnDurable>,
    /// `box.snapshot()`: sync everything to the device with this group, whatever
    /// the mode, and start a checkpoint.
    pub snapshot: bool,
    /// Bytes of `group` that write or remove `_idempotency` records: a checkpoint
    /// only moves those to their segment, so they count less towards the next one
    /// ([`checkpoint_due`]).
    pub record_bytes: usize,
}

/// What the WAL thread does once a group is durable.
pub type OnDurable = Box<dyn FnOnce() + Send>;

impl std::fmt::Debug for WalRequest {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WalRequest")
            .field("ticket", &self.ticket)
            .field("group", &self.group.len())
            .field("on_durable", &self.on_durable.is_some())
            .field("snapshot", &self.snapshot)
            .field("record_bytes", &self.record_bytes)
            .finish()
    }
}

/// Bytes of logged groups after which the checkpoint thread applies them to the
/// rows, unless `checkpoint_wal_threshold` says otherwise.
pub const CHECKPOINT_AFTER_BYTES: usize = 16 * 1024 * 1024;

/// The current checkpoint threshold (`box.cfg{checkpoint_wal_threshold}`), in bytes.
static CHECKPOINT_THRESHOLD: AtomicUsize = AtomicUsize::new(CHECKPOINT_AFTER_BYTES);

/// Sets the bytes of logged groups after which a checkpoint starts (at least 1).
pub fn set_checkpoint_threshold(bytes: usize) {
    CHECKPOINT_THRESHOLD.store(bytes.max(1), Ordering::Relaxed);
}

/// The bytes of logged groups after which a checkpoint starts.
#[must_use]
pub fn checkpoint_threshold() -> usize {
    CHECKPOINT_THRESHOLD.load(Ordering::Relaxed)
}

/// Times the threshold the whole log (idempotency records included) may hold
/// before a checkpoint starts however few row bytes it holds.
pub const LOG_BYTES_PER_THRESHOLD: usize = 4;

/// Bytes logged since the last checkpoint started: all of them, and those of row
/// changes (everything but `_idempotency` records).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
struct Logged {
    total: usize,
    rows: usize,
}

impl Logged {
    fn add(&mut self, bytes: usize, record_bytes: usize) {
        self.total = self.total.saturating_add(bytes);
        self.rows = self.rows.saturating_add(bytes.saturating_sub(record_bytes));
    }
}

/// Whether a checkpoint is due after `logged` bytes with the threshold `threshold`.
///
/// What a checkpoint costs is writing the rows changed since the last one; the
/// idempotency records it only appends to a segment, and a workload of tokened
/// writes logs about as many bytes of records as of rows. Counted by row bytes,
/// such a workload checkpoints as often as the same writes without tokens (each
/// checkpoint finding the same share of its rows rewritten, not twice as many
/// checkpoints each writing most of the rows again), and the whole log stays
/// within [`LOG_BYTES_PER_THRESHOLD`] thresholds so that a restart replays a
/// bounded log.
fn checkpoint_due(logged: Logged, threshold: usize) -> bool {
    logged.rows >= threshold || logged.total >= LOG_BYTES_PER_THRESHOLD.saturating_mul(threshold)
}

/// The outcome of every group up to and including `ticket`.
#[derive(Debug)]
pub struct WalDone {
    /// Last group covered.
    pub ticket: u64,
    /// `Err` with a message when the groups could not be made durable.
    pub result: Result<(), String>,
}

/// Test-only fault injection: fail every write after this many successful groups.
/// Set with the environment variable `ONCEBOX_INJECT_WAL_FAILURE_AFTER`.
#[must_use]
pub fn injected_failure_after() -> Option<u64> {
    std::env::var("ONCEBOX_INJECT_WAL_FAILURE_AFTER").ok()?.parse().ok()
}

/// Test-only: a delay before each batch write, in milliseconds, so that tests can
/// catch requests while their commit is in flight. `ONCEBOX_INJECT_WAL_DELAY_MS`.
#[must_use]
pub fn injected_delay() -> Option<std::time::Duration> {
    let ms: u64 = std::env::var("ONCEBOX_INJECT_WAL_DELAY_MS").ok()?.parse().ok()?;
    Some(std::time::Duration::from_millis(ms))
}

/// Largest number of groups written as one batch.
const MAX_GROUPS_PER_BATCH: usize = 1024;

/// Starts the WAL thread; `done` is called after each batch (from the WAL thread).
pub fn spawn(
    store: FjallStore,
    mut rx: WalReceiver,
    done: impl Fn(WalDone) + Send + 'static,
) -> std::io::Result<JoinHandle<()>> {
    std::thread::Builder::new().name("wal".into()).spawn(move || run(&store, &mut rx, &done))
}

fn run(store: &FjallStore, rx: &mut WalReceiver, done: &dyn Fn(WalDone)) {
    let mut failed: Option<String> = None;
    let mut budget = injected_failure_after();
    let delay = injected_delay();
    let mut checkpoints = Checkpoints::new(store);
    let mut logged = Logged::default();
    let mut on_durable: Vec<OnDurable> = Vec::new();
    while let Some(first) = rx.blocking_recv() {
        let mut ticket = first.ticket;
        let mut group = first.group;
        let mut snapshot = first.snapshot;
        let mut record_bytes = first.record_bytes;
        on_durable.extend(first.on_durable);
        for _ in 1..MAX_GROUPS_PER_BATCH {
            match rx.try_recv() {
                Ok(more) => {
                    ticket = more.ticket;
                    group.extend_from_slice(&more.group);
                    snapshot |= more.snapshot;
                    record_bytes += more.record_bytes;
                    on_durable.extend(more.on_durable);
                }
                Err(_) => break,
            }
        }
        if let Some(d) = delay {
            std::thread::sleep(d);
        }
        if failed.is_none() {
            failed = checkpoints.failure();
        }
        if failed.is_none() {
            logged.add(group.len(), record_bytes);
            if budget == Some(0) {
                failed = Some("injected I/O error".into());
            } else if let Err(e) = store.append(&group) {
                failed = Some(e.0);
            } else if snapshot {
                // Synced before the replies go out; the checkpoint runs on its own.
                if let Err(e) = store.sync() {
                    failed = Some(e.0);
                } else if checkpoints.request(logged.rows) {
                    logged = Logged::default();
                }
            } else if checkpoint_due(logged, checkpoint_threshold()) && checkpoints.request(logged.rows) {
                logged = Logged::default();
            }
            budget = budget.map(|b| b.saturating_sub(1));
            if let Some(msg) = &failed {
                tracing::error!(error = %msg, "WAL write failed: refusing writes until restart");
            }
        }
        // Reported before the replies go out: a client's next request, sent once it
        // has its reply, reaches the TX thread after the report does.
        done(WalDone { ticket, result: failed.clone().map_or(Ok(()), Err) });
        if failed.is_none() {
            for then in on_durable.drain(..) {
                then();
            }
        } else {
            on_durable.clear();
        }
    }
    // The TX thread is gone: make everything written so far durable, and
    // leave the directory quick to open.
    checkpoints.stop();
    if failed.is_none() {
        if let Err(e) = store.checkpoint() {
            tracing::error!(error = %e, "final checkpoint failed");
        }
    }
}

/// Checkpoints: each applies the logged groups in a thread of its own while the
/// WAL thread goes on.
///
/// A checkpoint runs at background priority ([`super::background`]) unless the
/// log has fallen behind: when more than [`CATCH_UP_THRESHOLDS`] thresholds were
/// logged since the previous one started, the next runs at the WAL's own
/// priority, so a busy machine cannot starve checkpoints and grow the log
/// without end. (A thread per checkpoint, because a lowered thread cannot raise
/// itself again without privileges; one starts every few hundred milliseconds
/// at most.)
struct Checkpoints {
    store: FjallStore,
    running: Option<JoinHandle<()>>,
    failed: Arc<OnceLock<String>>,
    /// A thread could not be started at the last request (reported once a streak).
    spawn_failing: bool,
}

/// Thresholds logged between two checkpoints' starts past which the next runs at
/// normal priority.
const CATCH_UP_THRESHOLDS: usize = 4;

/// Whether `logged` bytes since the previous checkpoint started mean checkpoints
/// no longer keep up with a `threshold`.
fn fallen_behind(logged: usize, threshold: usize) -> bool {
    logged >= CATCH_UP_THRESHOLDS.saturating_mul(threshold)
}

impl Checkpoints {
    fn new(store: &FjallStore) -> Self {
        Self { store: store.clone(), running: None, failed: Arc::new(OnceLock::new()), spawn_failing: false }
    }

    /// Moves the log on to a new file and starts applying the groups before it,
    /// `logged` bytes of row changes having been logged since the last start; `false` while the
    /// previous checkpoint still runs (or the new file cannot be made).
    fn request(&mut self, logged: usize) -> bool {
        if self.running.as_ref().is_some_and(|t| !t.is_finished()) {
            return false;
        }
        self.join();
        let seq = match self.store.rotate_log() {
            Ok(seq) => seq,
            Err(e) => {
                // The groups go on into the current file; the next request tries again.
                tracing::error!(error = %e, "cannot start a new log file");
                return false;
            }
        };
        let urgent = fallen_behind(logged, checkpoint_threshold());
        let (store, report) = (self.store.clone(), self.failed.clone());
        let thread = std::thread::Builder::new().name("checkpoint".into()).spawn(move || {
            if !urgent {
                super::background::idle_this_thread();
            }
            let started = std::time::Instant::now();
            match store.apply_log(seq) {
                Ok(groups) => tracing::debug!(groups, urgent, elapsed_ms = started.elapsed().as_millis(), "checkpoint"),
                Err(e) => {
                    // The groups stay in the log (durable); writes stop until restart.
                    tracing::error!(error = %e, "checkpoint failed");
                    let _ = report.set(format!("checkpoint failed: {e}"));
                }
            }
            // The log it read and the rows it sorted go back to the system as the
            // thread ends, not whenever mimalloc next purges.
            crate::allocator::release_free_memory();
        });
        match thread {
            Ok(thread) => {
                self.running = Some(thread);
                self.spawn_failing = false;
                true
            }
            Err(e) => {
                // The groups stay in the log: the next request tries again, and
                // shutdown and the next start apply them in any case.
                if !self.spawn_failing {
                    tracing::error!(error = %e, "cannot start a checkpoint thread");
                }
                self.spawn_failing = true;
                false
            }
        }
    }

    /// Waits for the checkpoint started last, if any.
    fn join(&mut self) {
        if let Some(t) = self.running.take() {
            let _ = t.join();
        }
    }

    fn failure(&self) -> Option<String> {
        self.failed.get().cloned()
    }

    /// Waits for the running checkpoint, if any.
    fn stop(mut self) {
        self.join();
    }
}

/// A handle the TX thread uses to send groups.
pub type WalSender = tokio::sync::mpsc::UnboundedSender<WalRequest>;

/// The WAL thread's end of the channel.
pub type WalReceiver = tokio::sync::mpsc::UnboundedReceiver<WalRequest>;

/// The channel from the TX thread to the WAL thread.
///
/// tokio's, not `std::sync::mpsc`: std's wakes the parked receiver while holding
/// the lock the receiver takes next to unregister, so a woken WAL thread often
/// blocked again at once on that lock (perf `sched:sched_switch` at depth 1: a
/// fifth of its switches, 1.3-1.6 blocks per commit where one suffices). tokio's
/// blocking receiver is woken after the lock is released.
#[must_use]
pub fn channel() -> (WalSender, WalReceiver) {
    tokio::sync::mpsc::unbounded_channel()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::storage::{RowOp, WalMode};

    #[test]
    fn checkpoints_run_at_normal_priority_only_when_behind() {
        let threshold = CHECKPOINT_AFTER_BYTES;
        assert!(!fallen_behind(threshold, threshold));
        assert!(!fallen_behind(CATCH_UP_THRESHOLDS * threshold - 1, threshold));
        assert!(fallen_behind(CATCH_UP_THRESHOLDS * threshold, threshold));
        assert!(fallen_behind(usize::MAX, usize::MAX), "no overflow");
    }

    #[test]
    fn checkpoints_are_due_by_row_bytes_within_a_bounded_log() {
        let threshold = 1000;
        let mut logged = Logged::default();
        // Records alone: not due until the log holds its bound.
        logged.add(LOG_BYTES_PER_THRESHOLD * threshold - 1, LOG_BYTES_PER_THRESHOLD * threshold - 1);
        assert_eq!(logged, Logged { total: 3999, rows: 0 });
        assert!(!checkpoint_due(logged, threshold));
        logged.add(1, 1);
        assert!(checkpoint_due(logged, threshold), "the whole log is bounded");
        // Half rows, half records: due once the rows reach the threshold.
        let mut logged = Logged::default();
        logged.add(1998, 999);
        assert!(!checkpoint_due(logged, threshold));
        logged.add(2, 1);
        assert!(checkpoint_due(logged, threshold));
        // A group that claims more record bytes than it has counts no negative rows.
        let mut logged = Logged::default();
        logged.add(10, 20);
        assert_eq!(logged, Logged { total: 10, rows: 0 });
    }

    #[test]
    fn a_checkpoint_thread_applies_the_log_at_either_priority() {
        let dir = std::env::temp_dir().join(format!("oncebox-wal-checkpoints-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let store = FjallStore::open(&dir.join("log"), &dir.join("rows"), WalMode::Write).unwrap();
        let mut checkpoints = Checkpoints::new(&store);
        for (n, urgent) in [(1u8, false), (2, true)] {
            store.write(vec![RowOp::Put { key: vec![0, 0, 2, 0, n], tuple: vec![0x91, n].into() }]).unwrap();
            let logged = if urgent { usize::MAX } else { 0 };
            assert!(checkpoints.request(logged));
            checkpoints.join();
            assert_eq!(store.logged_groups(), 0, "the log is applied and emptied");
            assert_eq!(store.log_files(), 1, "the applied file is deleted; its successor stays");
        }
        assert_eq!(checkpoints.failure(), None);
        checkpoints.stop();
        assert_eq!(store.all_rows(), vec![(vec![0, 0, 2, 0, 1], vec![0x91, 1]), (vec![0, 0, 2, 0, 2], vec![0x91, 2])]);
        drop(store);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
