//! The network side: accepting connections and moving packets to and from the TX thread.
//!
//! Each connection has a reader task (frames, header decode) and a writer task
//! (replies, in the order the TX thread produced them). Nothing here knows about
//! spaces or users.

mod connection;
pub mod console;
pub mod sink;

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;

use tokio::net::{TcpListener, TcpSocket, UnixListener};
use tokio::sync::mpsc::UnboundedSender;
use tokio::sync::Semaphore;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use crate::executor::TxMessage;

/// Limits and identity shared by every connection.
#[derive(Debug, Clone)]
pub struct ServerConfig {
    /// The instance uuid shown in the greeting.
    pub instance_uuid: uuid::Uuid,
    /// Largest accepted packet, in bytes.
    pub max_packet_size: u64,
    /// Most connections served at once; further ones wait in the accept queue.
    pub max_connections: usize,
}

/// Pending connections the kernel queues before they are accepted. Linux caps it at
/// `net.core.somaxconn`, which is what Tarantool asks for; tokio's `bind` queued
/// only 128 here, so a burst of connects timed out.
const LISTEN_BACKLOG: u32 = 65_535;

/// A TCP listener on `addr` (host:port; the first address it resolves to) with a
/// full-size accept queue.
pub async fn listen_tcp(addr: &str) -> std::io::Result<TcpListener> {
    let mut last = None;
    for resolved in tokio::net::lookup_host(addr).await? {
        let socket = if resolved.is_ipv4() { TcpSocket::new_v4()? } else { TcpSocket::new_v6()? };
        socket.set_reuseaddr(true)?;
        match socket.bind(resolved) {
            Ok(()) => return socket.listen(LISTEN_BACKLOG),
            Err(e) => last = Some(e),
        }
    }
    Err(last.unwrap_or_else(|| std::io::Error::new(std::io::ErrorKind::InvalidInput, "no address to listen on")))
}

/// The server's own session: the script's main fiber, its triggers (2.6 gives the
/// script's session the first id, 1).
pub const SERVER_SESSION_ID: u64 = 1;

/// Binary-protocol session ids, unique across every listener the process opens
/// (the server's own taken first).
static NEXT_SESSION_ID: AtomicU64 = AtomicU64::new(SERVER_SESSION_ID + 1);

/// Whether the instance is still loading (its first `box.cfg{}` waits for the
/// `replication` sources): requests are answered where they are read, as 2.6
/// answers them before its bootstrap ([`crate::protocol::loading`]).
static LOADING: AtomicBool = AtomicBool::new(false);

/// Starts or ends the loading state.
pub fn set_loading(on: bool) {
    LOADING.store(on, Ordering::SeqCst);
}

/// Whether requests are answered as an instance still loading answers them.
pub(crate) fn is_loading() -> bool {
    LOADING.load(Ordering::Relaxed)
}

/// A new session id, from the counter connections take theirs from (as 2.6's
/// background sessions share it with its IPROTO ones).
pub(crate) fn next_session_id() -> u64 {
    NEXT_SESSION_ID.fetch_add(1, Ordering::Relaxed)
}

/// Accepts connections until `stop` is cancelled; every connection task is tracked by `tracker`.
pub async fn serve(
    listener: TcpListener,
    tx: UnboundedSender<TxMessage>,
    config: ServerConfig,
    stop: CancellationToken,
    tracker: TaskTracker,
) -> std::io::Result<()> {
    let config = Arc::new(config);
    let limit = Arc::new(Semaphore::new(config.max_connections));
    loop {
        let permit = tokio::select! {
            p = limit.clone().acquire_owned() => p.map_err(std::io::Error::other)?,
            () = stop.cancelled() => return Ok(()),
        };
        let accepted = tokio::select! {
            a = listener.accept() => a,
            () = stop.cancelled() => return Ok(()),
        };
        let (socket, peer) = match accepted {
            Ok(pair) => pair,
            Err(e) => {
                tracing::warn!(error = %e, "accept failed");
                tokio::time::sleep(std::time::Duration::from_millis(10)).await;
                continue;
            }
        };
        let session_id = next_session_id();
        tracing::info!(%peer, session_id, "connection accepted");
        let Some(announced) = connection::announce(&socket, peer.to_string(), session_id, &tx) else { continue };
        let tx = tx.clone();
        let config = config.clone();
        let stop = stop.clone();
        tracker.spawn(async move {
            connection::run(socket, announced, tx, &config, stop).await;
            tracing::info!(%peer, session_id, "connection closed");
            drop(permit);
        });
    }
}

/// Accepts connections on a unix socket (`listen = '/path/to.sock'`) until `stop`.
pub async fn serve_unix(
    listener: UnixListener,
    tx: UnboundedSender<TxMessage>,
    config: ServerConfig,
    stop: CancellationToken,
    tracker: TaskTracker,
) -> std::io::Result<()> {
    let config = Arc::new(config);
    loop {
        let accepted = tokio::select! {
            a = listener.accept() => a,
            () = stop.cancelled() => return Ok(()),
        };
        let Ok((socket, _)) = accepted else { continue };
        let session_id = next_session_id();
        // As 2.6 names a peer on a unix socket.
        let peer = "unix/:(socket)".to_owned();
        let Some(announced) = connection::announce(&socket, peer, session_id, &tx) else { continue };
        let (tx, config, stop) = (tx.clone(), config.clone(), stop.clone());
        tracker.spawn(async move { connection::run_unix(socket, announced, tx, &config, stop).await });
    }
}

/// IPROTO traffic counters for `box.stat.net()`, shared by every binary connection.
#[derive(Debug)]
pub struct NetCounters {
    /// Bytes written to clients (greetings and replies).
    pub sent: AtomicU64,
    /// Bytes read from clients.
    pub received: AtomicU64,
    /// Connections accepted.
    pub connections: AtomicU64,
    /// Connections open now.
    pub open: AtomicU64,
    /// Requests read.
    pub requests: AtomicU64,
    /// Requests with the TX thread now (read, not yet answered).
    pub in_progress: AtomicU64,
}

impl NetCounters {
    const fn new() -> Self {
        Self {
            sent: AtomicU64::new(0),
            received: AtomicU64::new(0),
            connections: AtomicU64::new(0),
            open: AtomicU64::new(0),
            requests: AtomicU64::new(0),
            in_progress: AtomicU64::new(0),
        }
    }

    /// Adds `n` to `counter`.
    pub fn add(counter: &AtomicU64, n: usize) {
        counter.fetch_add(n as u64, Ordering::Relaxed);
    }

    /// Takes `n` from `counter` (never below zero).
    pub fn sub(counter: &AtomicU64, n: usize) {
        let _ = counter.fetch_update(Ordering::Relaxed, Ordering::Relaxed, |v| Some(v.saturating_sub(n as u64)));
    }

    /// The cumulative counters, for rates: sent, received, connections, requests.
    #[must_use]
    pub fn totals(&self) -> [u64; 4] {
        [&self.sent, &self.received, &self.connections, &self.requests].map(|c| c.load(Ordering::Relaxed))
    }
}

/// This process's IPROTO traffic.
pub static NET: NetCounters = NetCounters::new();
