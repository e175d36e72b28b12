//! One client connection: greeting, then a reader loop and a writer task.

use std::os::fd::AsFd;
use std::sync::Arc;

use bytes::{Bytes, BytesMut};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::{TcpStream, UnixStream};
use tokio::sync::mpsc::{unbounded_channel, UnboundedReceiver, UnboundedSender};
use tokio_util::codec::Decoder;
use tokio_util::sync::CancellationToken;

use super::sink::{Backlog, ReplySink};
use super::{NetCounters, ServerConfig, NET};
use crate::error::BoxError;
use crate::executor::{Inbound, Outgoing, TxMessage};
use crate::idempotency::fingerprint;
use crate::protocol::codec::{CodecError, PacketCodec};
use crate::protocol::{greeting, header, loading, request, request_type, response, REPORTED_VERSION};

/// A connection the TX thread has been told of: its greeting salt and the queue
/// TX's replies come through.
pub(super) struct Announced {
    session_id: u64,
    salt: [u8; greeting::SALT_SIZE],
    out_rx: UnboundedReceiver<Outgoing>,
    backlog: Arc<Backlog>,
    /// The reply path, for the PINGs the reader answers itself and the backlog it checks.
    reply_path: ReplySink,
}

/// Tells the TX thread of a freshly accepted connection; `None` when it cannot be
/// served (no randomness for the salt, TX gone).
///
/// Called by the accept loop itself, before the connection's task is spawned, so
/// TX hears of connections in the order they were accepted (a spawned task may run
/// after tasks spawned later) and before the client can see the greeting (in 2.6
/// the greeting follows on_connect): a request another connection sends after this
/// greeting arrived is queued behind this connect, so on_connect triggers run in
/// the order clients saw their connections open.
/// `peer` is the client's address as `box.session.peer()` gives it.
pub(super) fn announce<S: AsFd>(
    socket: &S,
    peer: String,
    session_id: u64,
    tx: &UnboundedSender<TxMessage>,
) -> Option<Announced> {
    let mut salt = [0u8; greeting::SALT_SIZE];
    if getrandom::getrandom(&mut salt).is_err() {
        tracing::error!("no randomness for the greeting salt");
        return None;
    }
    let (out_tx, out_rx) = unbounded_channel();
    let backlog = Arc::new(Backlog::default());
    let out = match socket.as_fd().try_clone_to_owned() {
        Ok(fd) => ReplySink::direct(out_tx, fd, &backlog),
        Err(_) => ReplySink::queued_only(out_tx),
    };
    let reply_path = out.clone();
    let fd = std::os::fd::AsRawFd::as_raw_fd(&socket.as_fd());
    tx.send(TxMessage::Connect { session_id, salt, out, peer: Some(peer), fd, console: false }).ok()?;
    Some(Announced { session_id, salt, out_rx, backlog, reply_path })
}

/// Serves one announced TCP connection until either side closes it.
pub(super) async fn run(
    socket: TcpStream,
    announced: Announced,
    tx: UnboundedSender<TxMessage>,
    config: &ServerConfig,
    stop: CancellationToken,
) {
    let _ = socket.set_nodelay(true);
    let (rd, wr) = socket.into_split();
    run_halves(rd, wr, announced, tx, config, stop).await;
}

/// Serves one announced unix-socket connection until either side closes it.
pub(super) async fn run_unix(
    socket: UnixStream,
    announced: Announced,
    tx: UnboundedSender<TxMessage>,
    config: &ServerConfig,
    stop: CancellationToken,
) {
    let (rd, wr) = socket.into_split();
    run_halves(rd, wr, announced, tx, config, stop).await;
}

/// Serves a connection's halves: greeting, then a reader loop and a writer task.
async fn run_halves<R, W>(
    rd: R,
    mut wr: W,
    announced: Announced,
    tx: UnboundedSender<TxMessage>,
    config: &ServerConfig,
    stop: CancellationToken,
) where
    R: AsyncRead + Unpin + Send,
    W: AsyncWrite + Unpin + Send + 'static,
{
    let Announced { session_id, salt, out_rx, backlog, reply_path } = announced;
    // NOTE: the greeting goes out in one write; node's driver parses only its first chunk.
    let hello = greeting::encode(REPORTED_VERSION, &config.instance_uuid, &salt);
    NetCounters::add(&NET.connections, 1);
    NetCounters::add(&NET.open, 1);
    if wr.write_all(&hello).await.is_err() {
        NetCounters::sub(&NET.open, 1);
        let _ = tx.send(TxMessage::Disconnect { session_id });
        return;
    }
    NetCounters::add(&NET.sent, hello.len());
    let writer = tokio::spawn(write_replies(wr, out_rx, backlog));
    read_requests(rd, session_id, &tx, &reply_path, config, &stop).await;
    // The writer ends once every sender of its queue is gone: this one, then TX's.
    drop(reply_path);
    let _ = tx.send(TxMessage::Disconnect { session_id });
    let _ = writer.await;
    NetCounters::sub(&NET.open, 1);
}

/// Bytes kept free in the read buffer before each read.
const READ_CHUNK: usize = 16 * 1024;

/// A framed packet as the TX thread gets it: header parsed, body read and checked
/// and, for a tokened write, its fingerprint worked out (all off the serial TX thread).
fn inbound(packet: Bytes) -> Inbound {
    match header::parse(&packet) {
        Ok(header) => {
            let body = packet.get(header.body_offset..).unwrap_or(&[]);
            let decoded = request::decode(header.request_type, body);
            let fingerprint = fingerprint::of_packet(&header, body, &decoded);
            Inbound::Request { header, packet, decoded, fingerprint }
        }
        Err(e) => Inbound::BadHeader { sync: e.sync },
    }
}

/// Whether `packet` is a well-formed PING the reader may answer with schema version `version`.
fn is_plain_ping(packet: &Inbound, version: u64) -> bool {
    let Inbound::Request { header, packet, decoded, .. } = packet else { return false };
    header.request_type == request_type::PING
        && (header.schema_version == 0 || header.schema_version == version)
        && decoded.request(packet.get(header.body_offset..).unwrap_or(&[])).is_ok()
}

/// Answers a read's packets here when they are all PINGs the TX thread need not
/// see (see [`ReplySink::ping_schema_version`]); returns whether it did. A read
/// that mixes PINGs with other requests goes to TX whole, so its replies keep
/// their order.
fn answer_pings(packets: &[Inbound], sink: &ReplySink, replies: &mut Vec<u8>) -> bool {
    let Some(version) = sink.ping_schema_version() else { return false };
    if !packets.iter().all(|p| is_plain_ping(p, version)) {
        return false;
    }
    for packet in packets {
        if let Inbound::Request { header, .. } = packet {
            response::ok_empty(replies, header.sync, version);
        }
    }
    if let Some(emptied) = sink.send(std::mem::take(replies)) {
        *replies = emptied;
    }
    true
}

/// Answers a read's packets as an instance still loading does (see
/// [`crate::protocol::loading`]); nothing reaches the TX thread, which is busy
/// waiting for the replication sources.
fn answer_while_loading(packets: &[Inbound], sink: &ReplySink, replies: &mut Vec<u8>) {
    for packet in packets {
        match packet {
            Inbound::Request { header, packet, decoded, .. } => {
                let body = packet.get(header.body_offset..).unwrap_or(&[]);
                loading::reply(replies, header.request_type, header.sync, header.schema_version, decoded, body);
            }
            Inbound::BadHeader { sync } => {
                response::error(replies, *sync, 0, &BoxError::invalid_msgpack("packet header"));
            }
        }
    }
    if let Some(emptied) = sink.send(std::mem::take(replies)) {
        *replies = emptied;
    }
}

/// Reads packets until the peer closes, the stream cannot be framed or `stop`.
///
/// Every packet one read completes goes to the TX thread in one message, so a
/// pipelining client costs one channel send (and one wake-up) per read, not per
/// request; a read of nothing but PINGs is answered here.
async fn read_requests<R: AsyncRead + Unpin>(
    mut rd: R,
    session_id: u64,
    tx: &UnboundedSender<TxMessage>,
    reply_path: &ReplySink,
    config: &ServerConfig,
    stop: &CancellationToken,
) {
    let mut ping_replies = Vec::new();
    let mut codec = PacketCodec::new(config.max_packet_size);
    let mut buf = BytesMut::with_capacity(READ_CHUNK);
    // Room for as many packets as the last read brought: a pipelining client's
    // batch is built without regrowing (and copying) the vector.
    let mut batch_hint = 8;
    loop {
        let mut packets = Vec::new();
        let framing = loop {
            match codec.decode(&mut buf) {
                Ok(Some(packet)) => {
                    if packets.capacity() == 0 {
                        packets.reserve_exact(batch_hint);
                    }
                    packets.push(inbound(packet));
                }
                Ok(None) => break None,
                Err(CodecError::Frame(error)) => break Some(error),
                Err(CodecError::Io(_)) => return,
            }
        };
        NetCounters::add(&NET.requests, packets.len());
        if !packets.is_empty() && super::is_loading() {
            answer_while_loading(&packets, reply_path, &mut ping_replies);
        } else if !packets.is_empty() && !answer_pings(&packets, reply_path, &mut ping_replies) {
            batch_hint = packets.len().clamp(8, 1024);
            reply_path.read_to_tx(packets.len());
            if tx.send(TxMessage::Requests { session_id, packets }).is_err() {
                return;
            }
        }
        if let Some(error) = framing {
            let _ = tx.send(TxMessage::BadFrame { session_id, error });
            return;
        }
        // A client that does not read its replies, or sends faster than TX serves
        // it, is not read from until the connection's backlog is back under its limits.
        tokio::select! {
            () = reply_path.room() => {}
            () = stop.cancelled() => return,
        }
        if buf.capacity() - buf.len() < READ_CHUNK / 4 {
            buf.reserve(READ_CHUNK);
        }
        // On shutdown, stop reading; replies already owed are still written.
        let read = tokio::select! {
            r = rd.read_buf(&mut buf) => r,
            () = stop.cancelled() => return,
        };
        match read {
            Ok(0) | Err(_) => return,
            Ok(n) => NetCounters::add(&NET.received, n),
        }
    }
}

/// Marks the backlog's writer gone however the writer task ends.
struct WriterGone(Arc<Backlog>);

impl Drop for WriterGone {
    fn drop(&mut self) {
        self.0.writer_gone();
    }
}

async fn write_replies<W: AsyncWrite + Unpin>(mut wr: W, mut rx: UnboundedReceiver<Outgoing>, backlog: Arc<Backlog>) {
    let backlog = WriterGone(backlog);
    let mut buf = Vec::new();
    while let Some(first) = rx.recv().await {
        let mut close = false;
        let mut next = Some(first);
        let (mut items, mut bytes) = (0, 0);
        // Coalesce whatever is queued into one write.
        while let Some(item) = next {
            match item {
                Outgoing::Data(d) => {
                    items += 1;
                    bytes += d.len();
                    if buf.is_empty() {
                        buf = d;
                    } else {
                        buf.extend_from_slice(&d);
                    }
                }
                Outgoing::Close => {
                    close = true;
                    break;
                }
            }
            next = rx.try_recv().ok();
        }
        if !buf.is_empty() && wr.write_all(&buf).await.is_err() {
            return;
        }
        NetCounters::add(&NET.sent, buf.len());
        // Only now may the TX thread send directly again: nothing of it is unwritten.
        backlog.0.written(items, bytes);
        buf.clear();
        if close {
            let _ = wr.shutdown().await;
            return;
        }
    }
}
