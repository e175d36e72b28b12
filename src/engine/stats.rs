//! Request counters for `box.stat()`: a total per kind of operation, and the
//! rate over the last few seconds (from a snapshot the executor takes each
//! second); the same rates for `box.stat.net()`'s traffic totals, which the
//! network side counts.

use std::cell::Cell;
use std::collections::VecDeque;

/// The kinds `box.stat()` reports, in its key order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OpKind {
    /// Reads: select, get, IPROTO SELECT.
    Select,
    /// Inserts.
    Insert,
    /// Replaces.
    Replace,
    /// Updates.
    Update,
    /// Upserts.
    Upsert,
    /// Deletes.
    Delete,
    /// IPROTO CALL (and CALL_16).
    Call,
    /// IPROTO EVAL.
    Eval,
    /// IPROTO AUTH.
    Auth,
    /// SQL EXECUTE (oncebox has no SQL: stays 0).
    Execute,
    /// SQL PREPARE (stays 0).
    Prepare,
    /// Data operations that failed.
    Error,
}

impl OpKind {
    /// Every kind, as `box.stat()` names them.
    pub const ALL: [(Self, &'static str); KINDS] = [
        (Self::Select, "SELECT"),
        (Self::Insert, "INSERT"),
        (Self::Replace, "REPLACE"),
        (Self::Update, "UPDATE"),
        (Self::Upsert, "UPSERT"),
        (Self::Delete, "DELETE"),
        (Self::Call, "CALL"),
        (Self::Eval, "EVAL"),
        (Self::Auth, "AUTH"),
        (Self::Execute, "EXECUTE"),
        (Self::Prepare, "PREPARE"),
        (Self::Error, "ERROR"),
    ];
}

const KINDS: usize = 12;

/// Seconds the rate is averaged over (2.6's too).
pub const RATE_SECONDS: usize = 5;

/// Totals since start (or the last reset), and a snapshot of them a second for rates.
#[derive(Debug, Default)]
pub struct OpStats {
    totals: [Cell<u64>; KINDS],
    /// The totals at each of the last [`RATE_SECONDS`] + 1 ticks, newest last.
    history: VecDeque<[u64; KINDS]>,
    /// The network totals (`NetCounters::totals`) at the same ticks.
    net_history: VecDeque<[u64; NET_TOTALS]>,
}

/// How many network totals have rates: sent, received, connections, requests.
pub const NET_TOTALS: usize = 4;

/// The growth a second over a history of snapshots, newest last.
fn growth_rate<const N: usize>(history: &VecDeque<[u64; N]>, k: usize) -> u64 {
    let (Some(newest), Some(oldest)) = (history.back(), history.front()) else { return 0 };
    newest[k].saturating_sub(oldest[k]) / RATE_SECONDS as u64
}

fn remember<const N: usize>(history: &mut VecDeque<[u64; N]>, now: [u64; N]) {
    history.push_back(now);
    while history.len() > RATE_SECONDS + 1 {
        history.pop_front();
    }
}

impl OpStats {
    /// Counts one operation of `kind`.
    pub fn bump(&self, kind: OpKind) {
        let cell = &self.totals[kind as usize];
        cell.set(cell.get() + 1);
    }

    /// Counts one operation of `kind`, and an error when `result` is one; returns `result`.
    pub fn record<T, E>(&self, kind: OpKind, result: Result<T, E>) -> Result<T, E> {
        self.bump(kind);
        if result.is_err() {
            self.bump(OpKind::Error);
        }
        result
    }

    /// The total of `kind`.
    #[must_use]
    pub fn total(&self, kind: OpKind) -> u64 {
        self.totals[kind as usize].get()
    }

    /// Operations of `kind` a second, over the last [`RATE_SECONDS`] ticks.
    #[must_use]
    pub fn rate(&self, kind: OpKind) -> u64 {
        growth_rate(&self.history, kind as usize)
    }

    /// The rate of network total `k` (see [`NET_TOTALS`]).
    #[must_use]
    pub fn net_rate(&self, k: usize) -> u64 {
        growth_rate(&self.net_history, k)
    }

    /// A second has passed: snapshots the totals, and the network's `net` totals.
    pub fn tick(&mut self, net: [u64; NET_TOTALS]) {
        let now = std::array::from_fn(|k| self.totals[k].get());
        remember(&mut self.history, now);
        remember(&mut self.net_history, net);
    }

    /// `box.stat.reset()`: every total and rate back to 0.
    pub fn reset(&mut self) {
        for cell in &self.totals {
            cell.set(0);
        }
        self.history.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn totals_count_each_operation_and_failures_count_as_errors() {
        let stats = OpStats::default();
        stats.bump(OpKind::Select);
        assert_eq!(stats.record(OpKind::Insert, Err::<(), ()>(())), Err(()));
        assert_eq!(stats.record(OpKind::Insert, Ok::<u8, ()>(1)), Ok(1));
        assert_eq!((stats.total(OpKind::Select), stats.total(OpKind::Insert)), (1, 2));
        assert_eq!(stats.total(OpKind::Error), 1);
    }

    #[test]
    fn the_rate_is_the_growth_over_the_last_five_ticks_a_second() {
        let mut stats = OpStats::default();
        assert_eq!(stats.rate(OpKind::Select), 0);
        for _ in 0..10 {
            for _ in 0..100 {
                stats.bump(OpKind::Select);
            }
            stats.tick([0; NET_TOTALS]);
        }
        assert_eq!(stats.rate(OpKind::Select), 100);
        stats.reset();
        assert_eq!((stats.total(OpKind::Select), stats.rate(OpKind::Select)), (0, 0));
    }
}
