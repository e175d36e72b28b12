//! Where the TX thread puts a connection's replies, and the WAL thread those that
//! waited for their commit to be durable (it sends them once it is).
//!
//! A reply goes straight to the socket when the socket takes it at once (a
//! non-blocking send on a duplicate of the connection's descriptor) and nothing
//! handed to the connection's writer task is still unwritten; otherwise it is
//! queued for the writer task, which waits until the socket is writable. The
//! direct path spares a wake-up of the network thread per reply batch (an
//! eventfd write and a context switch), which profiles showed to be a quarter of
//! the TX thread's time under pipelined reads.
//!
//! The connection's reader uses the same path for the PINGs it answers itself
//! (see [`ReplySink::ping_schema_version`]); a lock keeps the senders' replies
//! whole and in order. The connection's [`Backlog`] (replies unsent, requests not
//! yet answered) tells the reader when to stop reading ([`ReplySink::room`]).

use std::os::fd::OwnedFd;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use tokio::sync::mpsc::UnboundedSender;
use tokio::sync::Notify;

use crate::executor::Outgoing;

/// Reply bytes a connection may have queued for its client, unsent, before its
/// reader stops taking requests: a client that sends and never reads would
/// otherwise grow the server without bound.
pub const MAX_UNSENT_REPLY_BYTES: usize = 16 << 20;

/// Requests a connection may have waiting in (or being answered by) the TX thread
/// before its reader stops taking more: a client that sends faster than TX serves
/// it, or does not read, has at most about this many requests' replies made for it
/// beyond [`MAX_UNSENT_REPLY_BYTES`] (a read is handed over whole, so one read
/// may pass the limit).
pub const MAX_REQUESTS_IN_TX: usize = 256;

/// A connection's reply path: the TX thread's end, and a clone in the reader for PINGs.
#[derive(Debug, Clone)]
pub struct ReplySink {
    out: UnboundedSender<Outgoing>,
    direct: Option<Arc<Direct>>,
}

#[derive(Debug)]
struct Direct {
    socket: OwnedFd,
    backlog: Arc<Backlog>,
    /// Held across a send: two senders' bytes never interleave, and a send that
    /// queues a remainder has counted it before the other sender looks.
    sending: Mutex<()>,
    /// The schema version the reader answers PINGs with; 0 while PINGs must go
    /// to the TX thread (the session is not open there, or a request trigger is set).
    ping_schema_version: AtomicU64,
}

/// What a connection owes its client and has not sent yet, shared by the TX
/// thread, the connection's reader and its writer task.
#[derive(Debug, Default)]
pub struct Backlog {
    /// Data items queued for the writer task and not yet written (a direct send
    /// must not overtake them).
    queued_items: AtomicUsize,
    /// Their bytes.
    queued_bytes: AtomicUsize,
    /// Requests handed to the TX thread whose replies it has not yet sent (or
    /// held for their commits): a PING read meanwhile goes to TX, behind them.
    requests_in_tx: AtomicUsize,
    /// The writer task ended (the connection is closing): nothing drains any more.
    writer_gone: AtomicBool,
    /// Signalled whenever the backlog shrinks.
    shrank: Notify,
}

impl Backlog {
    /// The writer task wrote `items` queued items of `bytes` bytes in all.
    pub fn written(&self, items: usize, bytes: usize) {
        self.queued_items.fetch_sub(items, Ordering::AcqRel);
        self.queued_bytes.fetch_sub(bytes, Ordering::AcqRel);
        self.shrank.notify_one();
    }

    /// The writer task ended: the reader must not wait for room that never comes.
    pub fn writer_gone(&self) {
        self.writer_gone.store(true, Ordering::Release);
        self.shrank.notify_one();
    }

    fn over_limits(&self) -> bool {
        !self.writer_gone.load(Ordering::Acquire)
            && (self.queued_bytes.load(Ordering::Acquire) > MAX_UNSENT_REPLY_BYTES
                || self.requests_in_tx.load(Ordering::Acquire) > MAX_REQUESTS_IN_TX)
    }
}

impl ReplySink {
    /// Replies that always go through the writer task (the text console).
    #[must_use]
    pub fn queued_only(out: UnboundedSender<Outgoing>) -> Self {
        Self { out, direct: None }
    }

    /// Replies sent on `socket` (a duplicate descriptor of the connection) when it
    /// takes them at once, else through `out`, whose writer reports to `backlog`.
    #[must_use]
    pub fn direct(out: UnboundedSender<Outgoing>, socket: OwnedFd, backlog: &Arc<Backlog>) -> Self {
        let direct = Direct {
            socket,
            backlog: backlog.clone(),
            sending: Mutex::new(()),
            ping_schema_version: AtomicU64::new(0),
        };
        Self { out, direct: Some(Arc::new(direct)) }
    }

    /// Lets the reader answer PINGs itself with schema version `version` (0: it
    /// must hand them to the TX thread). Set by the TX thread when the session opens,
    /// the schema changes, request triggers come or go, and when it closes the session.
    pub fn allow_reader_pings(&self, version: u64) {
        if let Some(direct) = &self.direct {
            direct.ping_schema_version.store(version, Ordering::Release);
        }
    }

    /// The schema version the reader answers PINGs with, if it may: a PING has no
    /// effect but its reply, so it need not cross to the TX thread when no
    /// `on_iproto_request` trigger must see it and TX owes no reply to an earlier
    /// read (replies to requests that do not wait keep the order they were sent in,
    /// as in Tarantool).
    #[must_use]
    pub fn ping_schema_version(&self) -> Option<u64> {
        let direct = self.direct.as_ref()?;
        if direct.backlog.requests_in_tx.load(Ordering::Acquire) != 0 {
            return None;
        }
        let version = direct.ping_schema_version.load(Ordering::Acquire);
        // A DDL since TX told this version (a fiber changed the schema and pinged
        // before yielding): TX answers, with the new one, as 2.6 would.
        if crate::engine::LATEST_SCHEMA_VERSION.load(Ordering::Acquire) > version {
            return None;
        }
        (version != 0).then_some(version)
    }

    /// The reader hands a read's `requests` to the TX thread.
    pub fn read_to_tx(&self, requests: usize) {
        super::NetCounters::add(&super::NET.in_progress, requests);
        if let Some(direct) = &self.direct {
            direct.backlog.requests_in_tx.fetch_add(requests, Ordering::AcqRel);
        }
    }

    /// The TX thread has sent (or holds for their commits) the replies to one
    /// read's `requests`.
    pub fn read_answered(&self, requests: usize) {
        super::NetCounters::sub(&super::NET.in_progress, requests);
        if let Some(direct) = &self.direct {
            direct.backlog.requests_in_tx.fetch_sub(requests, Ordering::AcqRel);
            direct.backlog.shrank.notify_one();
        }
    }

    /// Waits while the connection owes more than its limits allow
    /// ([`MAX_UNSENT_REPLY_BYTES`], [`MAX_REQUESTS_IN_TX`]); the reader takes no
    /// requests meanwhile, so the client's sends stall in its socket instead.
    pub async fn room(&self) {
        let Some(direct) = &self.direct else { return };
        // A wake-up between the check and the wait leaves a permit: none is lost.
        while direct.backlog.over_limits() {
            direct.backlog.shrank.notified().await;
        }
    }

    /// Sends reply bytes, in order with everything sent before; gives the buffer back
    /// (emptied, for reuse) when the socket took all of it at once.
    pub fn send(&self, mut data: Vec<u8>) -> Option<Vec<u8>> {
        let Some(direct) = &self.direct else {
            let _ = self.out.send(Outgoing::Data(data));
            return None;
        };
        let mut sent = 0;
        let _sending = direct.sending.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        if direct.backlog.queued_items.load(Ordering::Acquire) == 0 {
            let flags = rustix::net::SendFlags::DONTWAIT | rustix::net::SendFlags::NOSIGNAL;
            while sent < data.len() {
                match rustix::net::send(&direct.socket, &data[sent..], flags) {
                    Ok(n) => sent += n,
                    Err(rustix::io::Errno::INTR) => {}
                    // Full, or broken: the writer task waits for room, or meets the error and closes.
                    Err(_) => break,
                }
            }
        }
        super::NetCounters::add(&super::NET.sent, sent);
        if sent == data.len() {
            data.clear();
            return Some(data);
        }
        let rest = if sent == 0 { data } else { data[sent..].to_vec() };
        let bytes = rest.len();
        direct.backlog.queued_items.fetch_add(1, Ordering::AcqRel);
        direct.backlog.queued_bytes.fetch_add(bytes, Ordering::AcqRel);
        if self.out.send(Outgoing::Data(rest)).is_err() {
            direct.backlog.written(1, bytes);
        }
        None
    }

    /// Writes what was sent before, then closes the connection.
    pub fn close(&self) {
        self.allow_reader_pings(0);
        let _ = self.out.send(Outgoing::Close);
    }
}
