//! Where the TX thread puts a connection's replies.
//!
//! A reply goes straight to the socket when the socket takes it at once (a
//! non-blocking send on a duplicate of the connection's descriptor) and nothing
//! handed to the connection's writer task is still unwritten; otherwise it is
//! queued for the writer task, which waits until the socket is writable. The
//! direct path spares a wake-up of the network thread per reply batch (an
//! eventfd write and a context switch), which profiles showed to be a quarter of
//! the TX thread's time under pipelined reads.

use std::os::fd::OwnedFd;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use tokio::sync::mpsc::UnboundedSender;

use crate::executor::Outgoing;

/// The TX thread's end of a connection's reply path.
#[derive(Debug)]
pub struct ReplySink {
    out: UnboundedSender<Outgoing>,
    direct: Option<Direct>,
}

#[derive(Debug)]
struct Direct {
    socket: OwnedFd,
    /// Data items queued for the writer task and not yet written (a direct send
    /// must not overtake them).
    queued: Arc<AtomicUsize>,
}

/// The writer task's count of queued items, decremented as it writes them.
#[derive(Debug, Clone, Default)]
pub struct QueuedCount(Arc<AtomicUsize>);

impl QueuedCount {
    /// `n` queued items were written (or dropped with the connection).
    pub fn written(&self, n: usize) {
        self.0.fetch_sub(n, Ordering::AcqRel);
    }
}

impl ReplySink {
    /// Replies that always go through the writer task (the text console).
    #[must_use]
    pub fn queued_only(out: UnboundedSender<Outgoing>) -> Self {
        Self { out, direct: None }
    }

    /// Replies sent on `socket` (a duplicate descriptor of the connection) when it
    /// takes them at once, else through `out`, whose writer reports to `count`.
    #[must_use]
    pub fn direct(out: UnboundedSender<Outgoing>, socket: OwnedFd, count: &QueuedCount) -> Self {
        Self { out, direct: Some(Direct { socket, queued: count.0.clone() }) }
    }

    /// Sends reply bytes, in order with everything sent before; gives the buffer back
    /// (emptied, for reuse) when the socket took all of it at once.
    pub fn send(&self, mut data: Vec<u8>) -> Option<Vec<u8>> {
        let Some(direct) = &self.direct else {
            let _ = self.out.send(Outgoing::Data(data));
            return None;
        };
        let mut sent = 0;
        if direct.queued.load(Ordering::Acquire) == 0 {
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
        if sent == data.len() {
            data.clear();
            return Some(data);
        }
        direct.queued.fetch_add(1, Ordering::AcqRel);
        let rest = if sent == 0 { data } else { data[sent..].to_vec() };
        if self.out.send(Outgoing::Data(rest)).is_err() {
            direct.queued.fetch_sub(1, Ordering::AcqRel);
        }
        None
    }

    /// Writes what was sent before, then closes the connection.
    pub fn close(&self) {
        let _ = self.out.send(Outgoing::Close);
    }
}
