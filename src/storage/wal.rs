//! The WAL thread: writes commit groups to the store, in order, and reports back.
//!
//! Whatever commits are queued when the thread wakes are written as one batch
//! and made durable together (group commit), so `fsync` mode pays one sync for
//! many requests. After a failure the thread refuses every later group: a
//! failed write is never retried behind the client's back.

use std::sync::mpsc::{Receiver, Sender};
use std::thread::JoinHandle;

use super::fjall_store::FjallStore;
use super::RowOp;

/// A commit group from the TX thread.
#[derive(Debug)]
pub struct WalRequest {
    /// Increasing id of the group.
    pub ticket: u64,
    /// Everything the group changed.
    pub ops: Vec<RowOp>,
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
    rx: Receiver<WalRequest>,
    done: impl Fn(WalDone) + Send + 'static,
) -> std::io::Result<JoinHandle<()>> {
    std::thread::Builder::new().name("wal".into()).spawn(move || run(&store, &rx, &done))
}

fn run(store: &FjallStore, rx: &Receiver<WalRequest>, done: &dyn Fn(WalDone)) {
    let mut failed: Option<String> = None;
    let mut budget = injected_failure_after();
    let delay = injected_delay();
    while let Ok(first) = rx.recv() {
        let mut ticket = first.ticket;
        let mut ops = first.ops;
        for _ in 1..MAX_GROUPS_PER_BATCH {
            match rx.try_recv() {
                Ok(more) => {
                    ticket = more.ticket;
                    ops.extend(more.ops);
                }
                Err(_) => break,
            }
        }
        if let Some(d) = delay {
            std::thread::sleep(d);
        }
        if failed.is_none() {
            if budget == Some(0) {
                failed = Some("injected I/O error".into());
            } else if let Err(e) = store.write(ops) {
                failed = Some(e.0);
            }
            budget = budget.map(|b| b.saturating_sub(1));
            if let Some(msg) = &failed {
                tracing::error!(error = %msg, "WAL write failed: refusing writes until restart");
            }
        }
        done(WalDone { ticket, result: failed.clone().map_or(Ok(()), Err) });
    }
    // The TX thread is gone: make everything written so far durable, and
    // leave the directory quick to open.
    if failed.is_none() {
        if let Err(e) = store.checkpoint() {
            tracing::error!(error = %e, "final checkpoint failed");
        }
    }
}

/// A handle the TX thread uses to send groups.
pub type WalSender = Sender<WalRequest>;
