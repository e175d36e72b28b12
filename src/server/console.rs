//! The text console (`require('console').listen(uri)`): one Lua chunk per line,
//! YAML replies, as Tarantool's admin console.
//!
//! ```text
//! server: "Tarantool 2.6.0 (Lua console)" and "type 'help' for interactive help",
//!         each padded to 63 bytes plus '\n' (128 bytes)
//! client: <lua>\n        server: ---\n- <value>\n...\n
//! ```

use std::os::fd::AsRawFd;

use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncWrite, AsyncWriteExt, BufReader};
use tokio::net::{TcpListener, UnixListener};
use tokio::sync::mpsc::{unbounded_channel, UnboundedReceiver, UnboundedSender};
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use crate::executor::{Outgoing, TxMessage};
use crate::protocol::REPORTED_VERSION;

/// Longest console line accepted, in bytes.
pub const MAX_CONSOLE_LINE: usize = 1024 * 1024;

fn greeting() -> [u8; 128] {
    let mut g = [b' '; 128];
    let line1 = format!("Tarantool {REPORTED_VERSION} (Lua console)");
    let line2 = "type 'help' for interactive help";
    for (d, s) in g.iter_mut().zip(line1.bytes().take(63)) {
        *d = s;
    }
    for (d, s) in g.iter_mut().skip(64).zip(line2.bytes().take(63)) {
        *d = s;
    }
    g[63] = b'\n';
    g[127] = b'\n';
    g
}

/// A console's listening socket: TCP, or a Unix socket (an address with a '/').
pub enum Listener {
    /// `host:port`.
    Tcp(TcpListener),
    /// A socket path.
    Unix(UnixListener),
}

impl Listener {
    /// Binds `addr`; a Unix socket's stale file is replaced.
    ///
    /// # Errors
    /// The bind's.
    pub async fn bind(addr: &str) -> std::io::Result<Self> {
        if is_unix_path(addr) {
            let _ = std::fs::remove_file(addr);
            Ok(Self::Unix(UnixListener::bind(addr)?))
        } else {
            Ok(Self::Tcp(super::listen_tcp(addr).await?))
        }
    }

    /// Serves `socket`, already listening on `addr` (a path: a Unix socket).
    ///
    /// # Errors
    /// Making the socket non-blocking, or registering it with the runtime.
    pub fn adopt(socket: std::os::fd::OwnedFd, addr: &str) -> std::io::Result<Self> {
        if is_unix_path(addr) {
            let listener = std::os::unix::net::UnixListener::from(socket);
            listener.set_nonblocking(true)?;
            Ok(Self::Unix(UnixListener::from_std(listener)?))
        } else {
            let listener = std::net::TcpListener::from(socket);
            listener.set_nonblocking(true)?;
            Ok(Self::Tcp(TcpListener::from_std(listener)?))
        }
    }

    /// The bound `host:port` of a TCP listener.
    #[must_use]
    pub fn bound(&self) -> Option<String> {
        match self {
            Self::Tcp(l) => l.local_addr().ok().map(|a| a.to_string()),
            Self::Unix(_) => None,
        }
    }

    /// The next connection, with the peer's address as `box.session.peer()` gives
    /// it and its descriptor (`box.session.fd()`).
    async fn accept(&self) -> std::io::Result<(Box<dyn Stream>, String, i32)> {
        Ok(match self {
            Self::Tcp(l) => {
                let (socket, peer) = l.accept().await?;
                let fd = socket.as_raw_fd();
                (Box::new(socket), peer.to_string(), fd)
            }
            Self::Unix(l) => {
                let (socket, _) = l.accept().await?;
                let fd = socket.as_raw_fd();
                (Box::new(socket), "unix/:(socket)".to_owned(), fd)
            }
        })
    }
}

/// An accepted console connection, whichever kind of socket.
trait Stream: AsyncRead + AsyncWrite + Send + Unpin {}

impl<S: AsyncRead + AsyncWrite + Send + Unpin> Stream for S {}

/// When a console stops: accepting (its `close()`, or the server's stop), and its
/// sessions (the server's stop only).
pub struct Stops {
    /// Ends the accept loop; the listening socket closes with it.
    pub accept: CancellationToken,
    /// Ends the sessions.
    pub sessions: CancellationToken,
}

/// Whether a console address is a Unix socket's path (as [`Listener::bind`] tells).
#[must_use]
pub fn is_unix_path(addr: &str) -> bool {
    addr.contains('/')
}

/// Serves console connections until `stops.accept`; each runs until `stops.sessions`.
pub async fn serve(
    listener: Listener,
    tx: UnboundedSender<TxMessage>,
    stops: Stops,
    tracker: TaskTracker,
    first_session_id: u64,
) {
    let mut next = first_session_id;
    loop {
        let accepted = tokio::select! {
            a = listener.accept() => a,
            () = stops.accept.cancelled() => return,
        };
        let Ok((socket, peer, fd)) = accepted else { continue };
        next += 1;
        // Announced from the accept loop, so TX hears of sessions in accept order.
        let (out_tx, out_rx) = unbounded_channel();
        let out = super::sink::ReplySink::queued_only(out_tx);
        let connect = TxMessage::Connect { session_id: next, salt: [0; 32], out, peer: Some(peer), fd, console: true };
        if tx.send(connect).is_err() {
            return;
        }
        let (tx, stop) = (tx.clone(), stops.sessions.clone());
        tracker.spawn(run(socket, next, out_rx, tx, stop));
    }
}

async fn run(
    socket: Box<dyn Stream>,
    session_id: u64,
    mut out_rx: UnboundedReceiver<Outgoing>,
    tx: UnboundedSender<TxMessage>,
    stop: CancellationToken,
) {
    let (rd, mut wr) = tokio::io::split(socket);
    if wr.write_all(&greeting()).await.is_err() {
        let _ = tx.send(TxMessage::Disconnect { session_id });
        return;
    }
    // Closed by the TX thread (`\\quit`) or a failed write: the reader stops too,
    // and with both halves gone the connection closes.
    let closed = CancellationToken::new();
    let writer = {
        let closed = closed.clone();
        tokio::spawn(async move {
            while let Some(item) = out_rx.recv().await {
                match item {
                    Outgoing::Data(d) => {
                        if wr.write_all(&d).await.is_err() {
                            break;
                        }
                    }
                    Outgoing::Close => {
                        let _ = wr.shutdown().await;
                        break;
                    }
                }
            }
            closed.cancel();
        })
    };
    let mut lines = BufReader::new(rd);
    let mut line = Vec::new();
    loop {
        line.clear();
        let read = tokio::select! {
            r = lines.read_until(b'\n', &mut line) => r,
            () = stop.cancelled() => break,
            () = closed.cancelled() => break,
        };
        match read {
            Ok(0) | Err(_) => break,
            Ok(_) if line.len() > MAX_CONSOLE_LINE => break,
            Ok(_) => {
                // 2.6's console reads the line without its newline, so a chunk is
                // named after the line alone ([string "1 +"]).
                let text = String::from_utf8_lossy(line.strip_suffix(b"\n").unwrap_or(&line));
                let text = text.strip_suffix('\r').unwrap_or(&text).to_owned();
                if tx.send(TxMessage::Console { session_id, line: text }).is_err() {
                    break;
                }
            }
        }
    }
    let _ = tx.send(TxMessage::Disconnect { session_id });
    let _ = writer.await;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn greeting_is_two_padded_lines() {
        let g = greeting();
        assert!(g.starts_with(b"Tarantool 2.6.0 (Lua console)"));
        assert_eq!((g[63], g[127]), (b'\n', b'\n'));
        assert!(g[64..].starts_with(b"type 'help' for interactive help"));
    }
}
