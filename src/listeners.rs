//! Listeners opened while running: the binary port `box.cfg{listen}` sets (first or
//! later calls), text consoles `require('console').listen` opens, and the one tick
//! task that drives the TX thread's clock.
//!
//! All of these are asked for by the TX thread through [`Control`] messages, or by
//! the script driver, and answered here on the network runtime.

use std::sync::atomic::{AtomicBool, Ordering};

use tokio::net::UnixListener;
use tokio::sync::mpsc::{UnboundedReceiver, UnboundedSender};
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use crate::executor::{Control, TxMessage};
use crate::protocol;
use crate::server;

/// What every listener started here shares: the TX channel, shutdown and task tracking.
#[derive(Clone)]
pub struct NetContext {
    /// Requests to the TX thread.
    pub tx: UnboundedSender<TxMessage>,
    /// Cancelled at shutdown: stops accept loops and connections.
    pub stop: CancellationToken,
    /// Tracks connection tasks so shutdown can drain them.
    pub tracker: TaskTracker,
}

/// An open binary listener; cancelling `token` closes the socket (connections stay).
pub struct BinaryListener {
    /// The bound address (`host:port` or the socket path).
    pub bound: String,
    /// Closes this listener only.
    token: CancellationToken,
    /// The accept loop, which holds the listening socket.
    task: tokio::task::JoinHandle<()>,
}

impl BinaryListener {
    /// Stops accepting and returns once the listening socket is closed (as
    /// 2.6's `box.cfg{listen}` returns: a connect after it is refused).
    pub async fn close(self) {
        self.token.cancel();
        let _ = self.task.await;
    }
}

/// How 2.6 shows a Unix socket's bound address (`box.info.listen`).
const UNIX_BOUND: &str = "unix/:(socket)";

/// Binds `addr` (`host:port`, or a path for a unix socket) and serves the binary protocol on it.
///
/// # Errors
/// A Tarantool-style text when the address cannot be bound.
pub async fn open_binary(ctx: &NetContext, addr: &str, instance_uuid: uuid::Uuid) -> Result<BinaryListener, String> {
    let cfg = server::ServerConfig {
        instance_uuid,
        max_packet_size: protocol::frame::DEFAULT_MAX_PACKET_SIZE,
        max_connections: 10_000,
    };
    let token = CancellationToken::new();
    let own = token.clone();
    let (bound, task) = if addr.contains('/') {
        let _ = std::fs::remove_file(addr);
        let listener = UnixListener::bind(addr).map_err(|e| format!("failed to bind {addr}: {e}"))?;
        let serving = server::serve_unix(listener, ctx.tx.clone(), cfg, ctx.stop.clone(), ctx.tracker.clone());
        let task = tokio::spawn(async move {
            tokio::select! {
                _ = serving => {},
                () = own.cancelled() => {},
            }
        });
        // As 2.6 shows a Unix socket's bound address.
        (UNIX_BOUND.to_owned(), task)
    } else {
        let listener = listen_tcp_again(addr).await.map_err(|e| format!("failed to bind {addr}: {e}"))?;
        let bound = listener.local_addr().map(|a| a.to_string()).unwrap_or_else(|_| addr.to_owned());
        let serving = server::serve(listener, ctx.tx.clone(), cfg, ctx.stop.clone(), ctx.tracker.clone());
        let task = tokio::spawn(async move {
            tokio::select! {
                _ = serving => {},
                () = own.cancelled() => {},
            }
        });
        (bound, task)
    };
    // Into the log only: a script's stdout is its own, as under tarantool
    // (`box.info.listen` tells a script the bound address).
    tracing::info!(addr = %if bound == UNIX_BOUND { addr } else { &bound }, "listening");
    start_tick(ctx);
    Ok(BinaryListener { bound, token, task })
}

/// How long a bind waits for a listener just closed on the same address to let go
/// of it (its task drops the socket a moment after it is cancelled).
const REBIND_PATIENCE: std::time::Duration = std::time::Duration::from_millis(200);

/// [`server::listen_tcp`], trying again for a moment while the address is in use:
/// `box.cfg{listen = ''}` then `box.cfg{listen = addr}` rebinds the address the
/// closed listener still held.
async fn listen_tcp_again(addr: &str) -> std::io::Result<tokio::net::TcpListener> {
    let deadline = tokio::time::Instant::now() + REBIND_PATIENCE;
    loop {
        match server::listen_tcp(addr).await {
            Err(e) if e.kind() == std::io::ErrorKind::AddrInUse && tokio::time::Instant::now() < deadline => {
                tokio::time::sleep(std::time::Duration::from_millis(5)).await;
            }
            other => return other,
        }
    }
}

/// Serves the TX thread's [`Control`] requests until the channel closes.
pub async fn control_loop(mut rx: UnboundedReceiver<Control>, ctx: NetContext, mut binary: Option<BinaryListener>) {
    // Exited children are reaped as tarantool's event loop reaps them.
    tokio::spawn(crate::children::watch(ctx.tx.clone()));
    let mut consoles = 0u64;
    // Each open console's accept loop, by its bound address or socket path: what
    // stops it and the task, which holds the listening socket.
    let mut accepting: std::collections::HashMap<String, (CancellationToken, tokio::task::JoinHandle<()>)> =
        std::collections::HashMap::new();
    while let Some(req) = rx.recv().await {
        match req {
            Control::ConsoleListen { addr, adopt, reply } => match match adopt {
                Some(socket) => server::console::Listener::adopt(socket, &addr),
                None => server::console::Listener::bind(&addr).await,
            } {
                Ok(listener) => {
                    let bound = listener.bound().unwrap_or_else(|| addr.clone());
                    tracing::info!(%addr, %bound, "console listening");
                    consoles += 1;
                    // Console sessions get ids far from binary ones.
                    let base = (1u64 << 48) * consoles;
                    let accept = ctx.stop.child_token();
                    let task = ctx.tracker.spawn(server::console::serve(
                        listener,
                        ctx.tx.clone(),
                        server::console::Stops { accept: accept.clone(), sessions: ctx.stop.clone() },
                        ctx.tracker.clone(),
                        base,
                    ));
                    if let Some((replaced, _)) = accepting.insert(bound.clone(), (accept, task)) {
                        replaced.cancel();
                    }
                    let _ = reply.send(Ok(bound));
                }
                Err(e) => {
                    let _ = reply.send(Err(format!("failed to bind {addr}: {e}")));
                }
            },
            Control::ConsoleClose { bound, reply } => {
                let open = accepting.remove(&bound);
                if let Some((accept, task)) = open {
                    accept.cancel();
                    // Closed once the task has ended: it drops the listening socket.
                    let _ = task.await;
                    // A Unix socket's file goes with it, as 2.6's server:close() removes it.
                    if server::console::is_unix_path(&bound) {
                        let _ = std::fs::remove_file(&bound);
                    }
                    let _ = reply.send(true);
                } else {
                    let _ = reply.send(false);
                }
            }
            Control::Listen { addr, instance_uuid, reply } => {
                // As 2.6: the new address is bound first; the old socket closes once it is.
                let outcome = match addr {
                    None => {
                        if let Some(old) = binary.take() {
                            old.close().await;
                        }
                        Ok(String::new())
                    }
                    Some(addr) => match open_binary(&ctx, &addr, instance_uuid).await {
                        Ok(new) => {
                            let bound = new.bound.clone();
                            if let Some(old) = binary.replace(new) {
                                old.close().await;
                            }
                            Ok(bound)
                        }
                        Err(e) => Err(e),
                    },
                };
                let _ = reply.send(outcome);
            }
        }
    }
}

/// Whether the tick task runs already (one per process).
static TICKING: AtomicBool = AtomicBool::new(false);

/// Starts the tick task once: a tick a second drives eviction steps and service-clock commits.
pub fn start_tick(ctx: &NetContext) {
    if TICKING.swap(true, Ordering::SeqCst) {
        return;
    }
    let (tx, stop) = (ctx.tx.clone(), ctx.stop.clone());
    tokio::spawn(async move {
        let mut every = tokio::time::interval(std::time::Duration::from_secs(1));
        loop {
            tokio::select! {
                _ = every.tick() => if tx.send(TxMessage::Tick).is_err() { return },
                () = stop.cancelled() => return,
            }
        }
    });
}
