//! The `socket` module's transport: TCP connections and listeners driven from Lua.
//!
//! `box.internal.socket_connect(host, port, timeout)` and
//! `box.internal.socket_listen(host, port)` return handles; `lua/socket.lua` is the
//! API Tarantool users call (`tcp_connect`, `tcp_server`, `sock:read`, ...).
//!
//! A connection's reads and writes are each done by an I/O thread of its own, so
//! a fiber waits for them (`submit_*`) while the TX thread serves other requests;
//! where nothing may yield the same jobs are waited for in place (`*_now`). The
//! reader keeps what it read past a request (after a delimiter, or before a
//! timeout) for the next one, as Tarantool's read buffer does. A listener's thread
//! hands each accepted connection to the TX thread, which starts the handler's fiber.

use std::io::{Read, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream, ToSocketAddrs};
use std::os::unix::net::UnixStream;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{mpsc, Arc};
use std::time::{Duration, Instant};

use mlua::{Lua, UserData, UserDataMethods, Value};
use tokio::sync::mpsc::UnboundedSender;

use super::netbox::TxNotify;
use super::stream::{Stream, UNIX_HOST};
use crate::executor::TxMessage;

/// An I/O outcome as Lua sees it: the bytes read (or, for a write, none), or errno and its text.
pub type SocketReply = Result<Vec<u8>, (i32, String)>;

/// Most bytes one read job keeps buffered while looking for a delimiter.
const MAX_READ_BUFFER: usize = 64 * 1024 * 1024;
/// A pause after a failed accept (out of descriptors, say) before the next.
const ACCEPT_RETRY: Duration = Duration::from_millis(10);

const ETIMEDOUT: i32 = 110;
const ENOTCONN: i32 = 107;
const EINVAL: i32 = 22;

static NEXT_TICKET: AtomicU64 = AtomicU64::new(1);

/// A ticket for an outcome delivered as [`TxMessage::Socket`].
pub(crate) fn next_ticket() -> u64 {
    NEXT_TICKET.fetch_add(1, Ordering::Relaxed)
}
static NEXT_LISTENER: AtomicU64 = AtomicU64::new(1);

/// Listening sockets given up by `listener:detach()` and not yet taken over: the
/// descriptors Lua may hand to [`take_detached`], each once.
static DETACHED: std::sync::Mutex<Vec<std::os::fd::OwnedFd>> = std::sync::Mutex::new(Vec::new());

/// The detached listening socket numbered `fd`, now the caller's; none when no
/// detached socket has that number (a descriptor Lua names is never taken on trust).
pub fn take_detached(fd: i32) -> Option<std::os::fd::OwnedFd> {
    use std::os::fd::AsRawFd;
    let mut detached = DETACHED.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    let at = detached.iter().position(|s| s.as_raw_fd() == fd)?;
    Some(detached.swap_remove(at))
}

/// Where a job's outcome goes.
enum ReplyTo {
    /// A caller blocked on this channel.
    Direct(mpsc::Sender<SocketReply>),
    /// The TX thread, as [`TxMessage::Socket`] with this ticket.
    Tx(u64, UnboundedSender<TxMessage>),
}

impl ReplyTo {
    fn send(self, reply: SocketReply) {
        match self {
            Self::Direct(tx) => {
                let _ = tx.send(reply);
            }
            Self::Tx(ticket, notify) => {
                let _ = notify.send(TxMessage::Socket { ticket, reply });
            }
        }
    }
}

/// What a read waits for.
#[derive(Debug, Clone, PartialEq, Eq)]
enum ReadUntil {
    /// Exactly this many bytes (fewer only at end of stream).
    Size(usize),
    /// Up to and including the first of the delimiters to end, or `limit` bytes,
    /// whichever comes first.
    Delimiter(Vec<Vec<u8>>, Option<usize>),
    /// Whatever is there, at least one byte, at most this many (`recv`).
    Any(usize),
}

impl ReadUntil {
    /// How many buffered bytes answer the read, if it is answered.
    fn ready(&self, buf: &[u8]) -> Option<usize> {
        match self {
            Self::Size(n) => (buf.len() >= *n).then_some(*n),
            Self::Any(n) => (!buf.is_empty()).then(|| buf.len().min(*n)),
            Self::Delimiter(delimiters, limit) => {
                let found = delimiters
                    .iter()
                    .filter(|d| !d.is_empty())
                    .filter_map(|d| buf.windows(d.len()).position(|w| w == d.as_slice()).map(|at| at + d.len()))
                    .min();
                match (found, limit) {
                    (Some(end), Some(l)) => Some(end.min(*l)),
                    (Some(end), None) => Some(end),
                    (None, Some(l)) if buf.len() >= *l => Some(*l),
                    (None, _) if buf.len() >= MAX_READ_BUFFER => Some(buf.len()),
                    _ => None,
                }
            }
        }
    }
}

enum Job {
    Read(ReadUntil, Option<Duration>, ReplyTo),
    Write(Vec<u8>, Option<Duration>, ReplyTo),
}

/// An open TCP connection (`socket.tcp_connect`, or one `tcp_server` accepted).
pub struct Sock {
    reads: Option<mpsc::Sender<Job>>,
    writes: Option<mpsc::Sender<Job>>,
    /// Writes queued to the writer thread and not yet done (a direct write would overtake them).
    queued_writes: Arc<AtomicUsize>,
    stream: Option<Stream>,
    last_error: Option<(i32, String)>,
}

/// The text Tarantool shows for an OS error (strerror), and its errno.
pub(crate) fn os_error(e: &std::io::Error) -> (i32, String) {
    if matches!(e.kind(), std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut) {
        return (ETIMEDOUT, "Connection timed out".into());
    }
    (e.raw_os_error().unwrap_or(EINVAL), super::native::strerror(e))
}

fn timeout_of(secs: Option<f64>) -> Option<Duration> {
    secs.filter(|s| s.is_finite() && *s >= 0.0).map(|s| Duration::from_secs_f64(s.max(0.000_001)))
}

impl Sock {
    fn start(stream: Stream) -> std::io::Result<Self> {
        if let Stream::Tcp(s) = &stream {
            let _ = s.set_nodelay(true);
        }
        let reader = stream.try_clone()?;
        let writer = stream.try_clone()?;
        let (reads, read_jobs) = mpsc::channel::<Job>();
        let (writes, write_jobs) = mpsc::channel::<Job>();
        let queued_writes = Arc::new(AtomicUsize::new(0));
        let done = queued_writes.clone();
        std::thread::Builder::new().name("socket.read".into()).spawn(move || serve_reads(reader, &read_jobs))?;
        std::thread::Builder::new()
            .name("socket.write".into())
            .spawn(move || serve_writes(writer, &write_jobs, &done))?;
        Ok(Self { reads: Some(reads), writes: Some(writes), queued_writes, stream: Some(stream), last_error: None })
    }

    /// Writes what the socket takes now without waiting (as a writable socket's write
    /// in 2.6 does not yield): the bytes written, 0 when it would wait or earlier
    /// writes are still queued.
    fn write_direct(&self, data: &[u8]) -> Result<usize, (i32, String)> {
        let Some(stream) = self.stream.as_ref() else { return Err((ENOTCONN, "Socket is closed".into())) };
        if self.queued_writes.load(Ordering::Acquire) > 0 {
            return Ok(0);
        }
        let flags = rustix::net::SendFlags::DONTWAIT | rustix::net::SendFlags::NOSIGNAL;
        let mut sent = 0;
        while sent < data.len() {
            match rustix::net::send(stream, &data[sent..], flags) {
                Ok(n) => sent += n,
                Err(rustix::io::Errno::AGAIN) => break,
                Err(rustix::io::Errno::INTR) => {}
                Err(e) => return Err(os_error(&e.into())),
            }
        }
        Ok(sent)
    }

    fn queue(&self, job: Job) -> Result<(), (i32, String)> {
        let lane = match job {
            Job::Read(..) => &self.reads,
            Job::Write(..) => {
                self.queued_writes.fetch_add(1, Ordering::AcqRel);
                &self.writes
            }
        };
        let closed = || (ENOTCONN, "Socket is closed".to_owned());
        lane.as_ref().ok_or_else(closed)?.send(job).map_err(|_| closed())
    }

    fn close(&mut self) {
        self.reads = None;
        self.writes = None;
        if let Some(s) = self.stream.take() {
            s.shutdown();
        }
    }
}

impl Drop for Sock {
    fn drop(&mut self) {
        // The I/O threads end when their job channels close; a blocked read ends with the socket.
        self.close();
    }
}

fn serve_reads(mut stream: Stream, jobs: &mpsc::Receiver<Job>) {
    let mut buf = Vec::new();
    let mut eof = false;
    while let Ok(Job::Read(until, timeout, reply)) = jobs.recv() {
        reply.send(read_once(&mut stream, &mut buf, &mut eof, &until, timeout));
    }
}

/// Reads until `until` is met, the stream ends or `timeout` passes (what was read stays in `buf`).
fn read_once(
    stream: &mut Stream,
    buf: &mut Vec<u8>,
    eof: &mut bool,
    until: &ReadUntil,
    timeout: Option<Duration>,
) -> SocketReply {
    let deadline = timeout.map(|t| Instant::now() + t);
    let mut chunk = vec![0u8; 16 * 1024];
    loop {
        if let Some(n) = until.ready(buf) {
            return Ok(buf.drain(..n).collect());
        }
        if *eof {
            return Ok(std::mem::take(buf));
        }
        let left = match deadline {
            Some(d) => match d.checked_duration_since(Instant::now()) {
                Some(left) if !left.is_zero() => Some(left),
                _ => return Err((ETIMEDOUT, "Connection timed out".into())),
            },
            None => None,
        };
        stream.set_read_timeout(left).map_err(|e| os_error(&e))?;
        match stream.read(&mut chunk) {
            Ok(0) => *eof = true,
            Ok(n) => buf.extend_from_slice(&chunk[..n]),
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(os_error(&e)),
        }
    }
}

fn serve_writes(mut stream: Stream, jobs: &mpsc::Receiver<Job>, queued: &AtomicUsize) {
    while let Ok(Job::Write(data, timeout, reply)) = jobs.recv() {
        let written = stream
            .set_write_timeout(timeout)
            .and_then(|()| stream.write_all(&data))
            .map(|()| Vec::new())
            .map_err(|e| os_error(&e));
        queued.fetch_sub(1, Ordering::AcqRel);
        reply.send(written);
    }
}

/// The first address `host:port` resolves to.
fn resolve(host: &str, port: u16) -> Result<SocketAddr, (i32, String)> {
    let mut addrs = (host, port).to_socket_addrs().map_err(|e| os_error(&e))?;
    addrs.next().ok_or_else(|| (EINVAL, format!("cannot resolve {host}")))
}

/// `box.internal.socket_connect(host, port, timeout)`: a handle, or `nil, errno,
/// message`. Host "unix/" connects to the Unix socket at path `port`.
fn connect(host: &str, port: &str, timeout: Option<f64>) -> Result<Sock, (i32, String)> {
    let stream = if host == UNIX_HOST {
        Stream::Unix(UnixStream::connect(port).map_err(|e| os_error(&e))?)
    } else {
        let port = port.parse().map_err(|_| (EINVAL, "Invalid argument".to_owned()))?;
        let addr = resolve(host, port)?;
        let stream = match timeout_of(timeout) {
            Some(t) => TcpStream::connect_timeout(&addr, t),
            None => TcpStream::connect(addr),
        }
        .map_err(|e| os_error(&e))?;
        Stream::Tcp(stream)
    };
    Sock::start(stream).map_err(|e| os_error(&e))
}

/// Which end of a connection `sock:peer()` / `sock:name()` asks for.
#[derive(Clone, Copy)]
enum End {
    Peer,
    Local,
}

/// An end of `stream` as the Lua table 2.6 returns: a Unix socket's path stands
/// in the port's place (empty for an unnamed end).
fn end_table(lua: &Lua, stream: &Stream, end: End) -> mlua::Result<Value> {
    match stream {
        Stream::Stdin(_) => Ok(Value::Nil),
        Stream::Tcp(s) => {
            let addr = match end {
                End::Peer => s.peer_addr(),
                End::Local => s.local_addr(),
            };
            addr.ok().map_or(Ok(Value::Nil), |a| Ok(Value::Table(address_table(lua, &a)?)))
        }
        Stream::Unix(s) => {
            let addr = match end {
                End::Peer => s.peer_addr(),
                End::Local => s.local_addr(),
            };
            let Ok(addr) = addr else { return Ok(Value::Nil) };
            let t = lua.create_table()?;
            t.set("host", UNIX_HOST)?;
            t.set("port", addr.as_pathname().map(|p| p.to_string_lossy().into_owned()).unwrap_or_default())?;
            t.set("family", "AF_UNIX")?;
            t.set("type", "SOCK_STREAM")?;
            t.set("protocol", 0)?;
            Ok(Value::Table(t))
        }
    }
}

/// An address as the Lua table Tarantool returns from `sock:peer()` / `sock:name()`.
fn address_table(lua: &Lua, addr: &SocketAddr) -> mlua::Result<mlua::Table> {
    let t = lua.create_table()?;
    t.set("host", addr.ip().to_string())?;
    t.set("port", addr.port())?;
    t.set("family", if addr.is_ipv4() { "AF_INET" } else { "AF_INET6" })?;
    t.set("type", "SOCK_STREAM")?;
    t.set("protocol", "tcp")?;
    Ok(t)
}

/// A read request from Lua: `("size", n)`, `("delimiter", d, limit)` or `("any", n)`.
fn read_until(kind: &str, arg: &Value, limit: Option<usize>) -> mlua::Result<ReadUntil> {
    let size = |v: &Value| match v {
        Value::Integer(i) => usize::try_from(*i).map_err(|_| mlua::Error::runtime("bad read size")),
        #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss, reason = "checked non-negative")]
        Value::Number(n) if *n >= 0.0 => Ok(*n as usize),
        _ => Err(mlua::Error::runtime("bad read size")),
    };
    match kind {
        "size" => Ok(ReadUntil::Size(size(arg)?)),
        "any" => Ok(ReadUntil::Any(size(arg)?.max(1))),
        "delimiter" => {
            let one = |v: &Value| match v {
                Value::String(d) => Ok(d.as_bytes().to_vec()),
                _ => Err(mlua::Error::runtime("bad delimiter")),
            };
            let delimiters = match arg {
                // Any of several, as 2.6's read{delimiter = {"\n\n", "\r\n\r\n"}} takes.
                Value::Table(list) => list.sequence_values::<Value>().map(|v| one(&v?)).collect::<mlua::Result<_>>()?,
                other => vec![one(other)?],
            };
            Ok(ReadUntil::Delimiter(delimiters, limit))
        }
        _ => Err(mlua::Error::runtime("bad read kind")),
    }
}

/// `ok, data` or `nil, errno, message` for Lua.
fn reply_values(lua: &Lua, reply: SocketReply) -> mlua::Result<mlua::MultiValue> {
    Ok(match reply {
        Ok(data) => mlua::MultiValue::from_vec(vec![Value::Boolean(true), Value::String(lua.create_string(&data)?)]),
        Err((errno, text)) => mlua::MultiValue::from_vec(vec![
            Value::Nil,
            Value::Integer(i64::from(errno)),
            Value::String(lua.create_string(&text)?),
        ]),
    })
}

pub(crate) fn tx_notify(lua: &Lua) -> mlua::Result<UnboundedSender<TxMessage>> {
    lua.app_data_ref::<TxNotify>()
        .map(|n| n.0.clone())
        .ok_or_else(|| mlua::Error::runtime("socket: a fiber cannot wait here (call box.cfg first)"))
}

impl UserData for Sock {
    fn add_methods<M: UserDataMethods<Self>>(methods: &mut M) {
        // submit_read(kind, arg, limit, timeout) -> ticket: the outcome reaches the TX
        // thread later (box.internal.socket_deliver) while the calling fiber waits.
        methods.add_method(
            "submit_read",
            |lua, this, (kind, arg, limit, timeout): (String, Value, Option<usize>, Option<f64>)| {
                let ticket = NEXT_TICKET.fetch_add(1, Ordering::Relaxed);
                let job = Job::Read(
                    read_until(&kind, &arg, limit)?,
                    timeout_of(timeout),
                    ReplyTo::Tx(ticket, tx_notify(lua)?),
                );
                this.queue(job).map_err(|(_, text)| mlua::Error::runtime(text))?;
                Ok(ticket)
            },
        );
        methods.add_method("submit_write", |lua, this, (data, timeout): (mlua::LuaString, Option<f64>)| {
            let ticket = NEXT_TICKET.fetch_add(1, Ordering::Relaxed);
            let job = Job::Write(data.as_bytes().to_vec(), timeout_of(timeout), ReplyTo::Tx(ticket, tx_notify(lua)?));
            this.queue(job).map_err(|(_, text)| mlua::Error::runtime(text))?;
            Ok(ticket)
        });
        // read_now / write_now: the same jobs, waited for in place (where nothing may yield).
        methods.add_method(
            "read_now",
            |lua, this, (kind, arg, limit, timeout): (String, Value, Option<usize>, Option<f64>)| {
                let (tx, rx) = mpsc::channel();
                let job = Job::Read(read_until(&kind, &arg, limit)?, timeout_of(timeout), ReplyTo::Direct(tx));
                let reply = this.queue(job).and_then(|()| rx.recv().map_err(|_| (ENOTCONN, "Socket is closed".into())));
                reply_values(lua, reply.and_then(|r| r))
            },
        );
        methods.add_method("write_now", |lua, this, (data, timeout): (mlua::LuaString, Option<f64>)| {
            let (tx, rx) = mpsc::channel();
            let job = Job::Write(data.as_bytes().to_vec(), timeout_of(timeout), ReplyTo::Direct(tx));
            let reply = this.queue(job).and_then(|()| rx.recv().map_err(|_| (ENOTCONN, "Socket is closed".into())));
            reply_values(lua, reply.and_then(|r| r))
        });
        // write_direct(data) -> bytes written at once (the rest goes through submit_write).
        methods.add_method("write_direct", |lua, this, data: mlua::LuaString| {
            or_failure(lua, this.write_direct(&data.as_bytes()))
        });
        methods.add_method("peer", |lua, this, ()| {
            this.stream.as_ref().map_or(Ok(Value::Nil), |s| end_table(lua, s, End::Peer))
        });
        methods.add_method("name", |lua, this, ()| {
            this.stream.as_ref().map_or(Ok(Value::Nil), |s| end_table(lua, s, End::Local))
        });
        methods.add_method("fd", |_, this, ()| {
            use std::os::fd::{AsFd, AsRawFd};
            Ok(this.stream.as_ref().map_or(-1, |s| s.as_fd().as_raw_fd()))
        });
        methods.add_method("shutdown", |_, this, how: Option<String>| {
            let how = match how.as_deref() {
                Some("R" | "SHUT_RD" | "r") => Shutdown::Read,
                Some("W" | "SHUT_WR" | "w") => Shutdown::Write,
                _ => Shutdown::Both,
            };
            Ok(this.stream.as_ref().is_some_and(|s| match s {
                Stream::Tcp(s) => s.shutdown(how).is_ok(),
                Stream::Unix(s) => s.shutdown(how).is_ok(),
                Stream::Stdin(_) => false,
            }))
        });
        methods.add_method_mut("set_error", |_, this, (errno, text): (i32, String)| {
            this.last_error = Some((errno, text));
            Ok(())
        });
        methods.add_method("error", |_, this, ()| Ok(this.last_error.as_ref().map(|(_, t)| t.clone())));
        methods.add_method("errno", |_, this, ()| Ok(this.last_error.as_ref().map(|(e, _)| *e)));
        methods.add_method("is_open", |_, this, ()| Ok(this.stream.is_some()));
        methods.add_method_mut("close", |_, this, ()| {
            let was_open = this.stream.is_some();
            this.close();
            Ok(was_open)
        });
    }
}

/// A listening socket (`socket.tcp_server`): its thread hands connections to the TX thread.
pub struct Listener {
    id: u64,
    addr: Bound,
    stop: Arc<AtomicBool>,
    /// Wakes the accepting thread, which polls it beside the socket.
    wake: Arc<std::os::fd::OwnedFd>,
    /// The listening socket (a duplicate of the accepting thread's); none once detached.
    socket: Option<std::os::fd::OwnedFd>,
    thread: Option<std::thread::JoinHandle<()>>,
}

/// Where a listener listens: a TCP address, or a Unix socket's path.
enum Bound {
    Tcp(SocketAddr),
    Unix(String),
}

impl Listener {
    /// Stops the accepting thread; returns whether it ran.
    fn stop_accepting(&mut self) -> bool {
        let was_open = !self.stop.swap(true, Ordering::AcqRel);
        if was_open {
            let _ = rustix::io::write(&*self.wake, &1u64.to_ne_bytes());
            if let Some(thread) = self.thread.take() {
                let _ = thread.join();
            }
        }
        was_open
    }

    fn close(&mut self) -> bool {
        let was_open = self.stop_accepting();
        if was_open && self.socket.take().is_some() {
            if let Bound::Unix(path) = &self.addr {
                // As 2.6's server, which unlinks its socket file when it stops.
                let _ = std::fs::remove_file(path);
            }
        }
        was_open
    }

    /// Stops accepting and gives up the listening socket, still listening: what
    /// is waiting to be accepted stays for its new owner (the console server
    /// that takes over a console served from Lua before box.cfg).
    fn detach(&mut self) -> Option<std::os::fd::OwnedFd> {
        self.stop_accepting();
        self.socket.take()
    }

    fn name(&self, lua: &Lua) -> mlua::Result<mlua::Table> {
        match &self.addr {
            Bound::Tcp(addr) => address_table(lua, addr),
            Bound::Unix(path) => {
                let t = lua.create_table()?;
                t.set("host", UNIX_HOST)?;
                t.set("port", path.as_str())?;
                t.set("family", "AF_UNIX")?;
                t.set("type", "SOCK_STREAM")?;
                t.set("protocol", 0)?;
                Ok(t)
            }
        }
    }
}

/// A connection a listener accepted, on its way to the handler's fiber.
#[derive(Debug)]
pub struct Accepted {
    /// The listener's id.
    pub listener: u64,
    /// The connection.
    pub stream: Stream,
}

/// A listening socket the accepting thread can poll and accept on without blocking.
trait Acceptor: std::os::fd::AsFd + Send + 'static {
    fn accept_stream(&self) -> std::io::Result<Stream>;
}

impl Acceptor for TcpListener {
    fn accept_stream(&self) -> std::io::Result<Stream> {
        self.accept().map(|(s, _)| Stream::Tcp(s))
    }
}

impl Acceptor for std::os::unix::net::UnixListener {
    fn accept_stream(&self) -> std::io::Result<Stream> {
        self.accept().map(|(s, _)| Stream::Unix(s))
    }
}

/// Accepts on `listener` until `stop` is set (and `wake` written): each connection
/// goes to the TX thread.
fn accept_loop(
    listener: impl Acceptor,
    wake: &std::os::fd::OwnedFd,
    stop: &AtomicBool,
    notify: &UnboundedSender<TxMessage>,
    id: u64,
) {
    use rustix::event::{poll, PollFd, PollFlags};
    loop {
        let mut fds = [PollFd::new(&listener, PollFlags::IN), PollFd::new(wake, PollFlags::IN)];
        if poll(&mut fds, None).is_err() {
            std::thread::sleep(ACCEPT_RETRY);
        }
        if stop.load(Ordering::Acquire) {
            return;
        }
        match listener.accept_stream() {
            Ok(stream) => {
                if notify.send(TxMessage::SocketAccepted(Accepted { listener: id, stream })).is_err() {
                    return;
                }
            }
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {}
            Err(_) => std::thread::sleep(ACCEPT_RETRY),
        }
    }
}

/// `box.internal.socket_listen(host, port)`: host "unix/" listens on the Unix
/// socket at path `port` (a stale socket file there is replaced, as 2.6 does).
fn listen(lua: &Lua, host: &str, port: &str) -> Result<Listener, (i32, String)> {
    let notify = tx_notify(lua).map_err(|e| (EINVAL, e.to_string()))?;
    let id = NEXT_LISTENER.fetch_add(1, Ordering::Relaxed);
    let stop = Arc::new(AtomicBool::new(false));
    let wake =
        Arc::new(rustix::event::eventfd(0, rustix::event::EventfdFlags::CLOEXEC).map_err(|e| os_error(&e.into()))?);
    let (addr, socket, thread) = if host == UNIX_HOST {
        if std::os::unix::net::UnixStream::connect(port).is_err() {
            let _ = std::fs::remove_file(port);
        }
        let listener = std::os::unix::net::UnixListener::bind(port).map_err(|e| os_error(&e))?;
        listener.set_nonblocking(true).map_err(|e| os_error(&e))?;
        let socket = std::os::fd::OwnedFd::from(listener.try_clone().map_err(|e| os_error(&e))?);
        (Bound::Unix(port.to_owned()), socket, spawn_accept_loop(listener, &wake, &stop, notify, id)?)
    } else {
        let port = port.parse::<u16>().map_err(|_| (EINVAL, "Invalid argument".to_owned()))?;
        let listener = TcpListener::bind(resolve(host, port)?).map_err(|e| os_error(&e))?;
        listener.set_nonblocking(true).map_err(|e| os_error(&e))?;
        let addr = listener.local_addr().map_err(|e| os_error(&e))?;
        let socket = std::os::fd::OwnedFd::from(listener.try_clone().map_err(|e| os_error(&e))?);
        (Bound::Tcp(addr), socket, spawn_accept_loop(listener, &wake, &stop, notify, id)?)
    };
    Ok(Listener { id, addr, stop, wake, socket: Some(socket), thread: Some(thread) })
}

fn spawn_accept_loop(
    listener: impl Acceptor,
    wake: &Arc<std::os::fd::OwnedFd>,
    stop: &Arc<AtomicBool>,
    notify: UnboundedSender<TxMessage>,
    id: u64,
) -> Result<std::thread::JoinHandle<()>, (i32, String)> {
    let (wake, stop) = (wake.clone(), stop.clone());
    std::thread::Builder::new()
        .name("socket.accept".into())
        .spawn(move || accept_loop(listener, &wake, &stop, &notify, id))
        .map_err(|e| os_error(&e))
}

impl UserData for Listener {
    fn add_methods<M: UserDataMethods<Self>>(methods: &mut M) {
        methods.add_method("id", |_, this, ()| Ok(this.id));
        methods.add_method("name", |lua, this, ()| this.name(lua));
        methods.add_method_mut("close", |_, this, ()| Ok(this.close()));
        // detach() -> the listening socket's descriptor number, kept for `take_detached`.
        methods.add_method_mut("detach", |_, this, ()| {
            Ok(this.detach().map(|socket| {
                use std::os::fd::AsRawFd;
                let fd = socket.as_raw_fd();
                DETACHED.lock().unwrap_or_else(std::sync::PoisonError::into_inner).push(socket);
                fd
            }))
        });
    }
}

impl Drop for Listener {
    fn drop(&mut self) {
        self.close();
    }
}

/// Wraps an accepted connection for Lua, with its peer's address.
pub fn accepted(lua: &Lua, conn: Accepted) -> mlua::Result<(mlua::AnyUserData, Value)> {
    let from = match &conn.stream {
        Stream::Tcp(s) => match s.peer_addr() {
            Ok(addr) => Value::Table(address_table(lua, &addr)?),
            Err(_) => Value::Nil,
        },
        // A Unix socket's client has no address, as 2.6 shows it.
        _ => {
            let t = lua.create_table()?;
            t.set("host", UNIX_HOST)?;
            t.set("port", "")?;
            t.set("family", "AF_UNIX")?;
            Value::Table(t)
        }
    };
    let sock = Sock::start(conn.stream).map_err(|e| mlua::Error::runtime(e.to_string()))?;
    Ok((lua.create_userdata(sock)?, from))
}

/// `box.internal.socket_getaddrinfo(host, port)`: every address, as tables.
fn getaddrinfo(lua: &Lua, host: &str, port: u16) -> mlua::Result<mlua::MultiValue> {
    match (host, port).to_socket_addrs() {
        Ok(addrs) => {
            let list = lua.create_table()?;
            for (i, addr) in addrs.enumerate() {
                list.set(i + 1, address_table(lua, &addr)?)?;
            }
            Ok(mlua::MultiValue::from_vec(vec![Value::Table(list)]))
        }
        Err(e) => {
            let (errno, text) = os_error(&e);
            Ok(mlua::MultiValue::from_vec(vec![
                Value::Nil,
                Value::Integer(i64::from(errno)),
                Value::String(lua.create_string(&text)?),
            ]))
        }
    }
}

/// `value` or `nil, errno, message`.
fn or_failure<T: mlua::IntoLua>(lua: &Lua, r: Result<T, (i32, String)>) -> mlua::Result<mlua::MultiValue> {
    Ok(match r {
        Ok(v) => mlua::MultiValue::from_vec(vec![v.into_lua(lua)?]),
        Err((errno, text)) => mlua::MultiValue::from_vec(vec![
            Value::Nil,
            Value::Integer(i64::from(errno)),
            Value::String(lua.create_string(&text)?),
        ]),
    })
}

/// Waits up to `timeout` (forever: none) for `fd` to be ready for `events` (1:
/// reading, 2: writing, 3: either); returns the events ready (0 on time-out).
#[allow(unsafe_code, reason = "poll borrows a descriptor Lua names by number; see the SAFETY note")]
pub(super) fn poll_fd(fd: i32, events: u8, timeout: Option<f64>) -> Result<u8, (i32, String)> {
    use rustix::event::{poll, PollFd, PollFlags, Timespec};
    let mut flags = PollFlags::empty();
    if events & 1 != 0 {
        flags |= PollFlags::IN;
    }
    if events & 2 != 0 {
        flags |= PollFlags::OUT;
    }
    // SAFETY: the descriptor is the caller's; poll only reads its state, and one
    // closed meanwhile is reported as POLLNVAL, not misused.
    let borrowed = unsafe { std::os::fd::BorrowedFd::borrow_raw(fd) };
    let mut fds = [PollFd::from_borrowed_fd(borrowed, flags)];
    // No timeout: wait for ever; zero or less: do not wait at all.
    let limit = timeout.filter(|t| !t.is_nan()).map(|t| {
        let d = Duration::try_from_secs_f64(t.max(0.0)).unwrap_or(Duration::MAX);
        Timespec { tv_sec: i64::try_from(d.as_secs()).unwrap_or(i64::MAX), tv_nsec: i64::from(d.subsec_nanos()) }
    });
    poll(&mut fds, limit.as_ref()).map_err(|e| os_error(&e.into()))?;
    let ready = fds[0].revents();
    let mut out = 0;
    if ready.intersects(PollFlags::IN | PollFlags::HUP | PollFlags::ERR) && events & 1 != 0 {
        out |= 1;
    }
    if ready.intersects(PollFlags::OUT | PollFlags::ERR) && events & 2 != 0 {
        out |= 2;
    }
    Ok(out)
}

/// Registers `box.internal.socket_connect`, `socket_listen`, `socket_getaddrinfo` and
/// `socket_iowait`.
pub fn register(lua: &Lua) -> mlua::Result<()> {
    let internal: mlua::Table = lua.globals().get::<mlua::Table>("box")?.get("internal")?;
    // socket_iowait(fd, events, timeout, wait_here) -> a ticket (the outcome, one
    // byte of ready events, reaches the fiber later), or with wait_here the events.
    internal.set(
        "socket_iowait",
        lua.create_function(|lua, (fd, events, timeout, here): (i32, u8, Option<f64>, bool)| {
            if here {
                return or_failure(lua, poll_fd(fd, events, timeout));
            }
            let notify = tx_notify(lua)?;
            let ticket = NEXT_TICKET.fetch_add(1, Ordering::Relaxed);
            std::thread::Builder::new()
                .name("iowait".into())
                .spawn(move || {
                    let reply = poll_fd(fd, events, timeout).map(|ready| vec![ready]);
                    let _ = notify.send(TxMessage::Socket { ticket, reply });
                })
                .map_err(|e| mlua::Error::runtime(e.to_string()))?;
            or_failure(lua, Ok::<u64, (i32, String)>(ticket))
        })?,
    )?;
    internal.set(
        "socket_connect",
        lua.create_function(|lua, (host, port, timeout): (String, String, Option<f64>)| {
            or_failure(lua, connect(&host, &port, timeout))
        })?,
    )?;
    internal.set(
        "socket_listen",
        lua.create_function(|lua, (host, port): (String, String)| {
            let listener = listen(lua, &host, &port);
            or_failure(lua, listener)
        })?,
    )?;
    internal.set(
        "socket_stdin",
        lua.create_function(|lua, ()| {
            or_failure(lua, Stream::stdin().and_then(Sock::start).map_err(|e| os_error(&e)))
        })?,
    )?;
    internal.set(
        "socket_getaddrinfo",
        lua.create_function(|lua, (host, port): (String, u16)| getaddrinfo(lua, &host, port))?,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_are_answered_from_the_buffer() {
        assert_eq!(ReadUntil::Size(3).ready(b"ab"), None);
        assert_eq!(ReadUntil::Size(3).ready(b"abcd"), Some(3));
        assert_eq!(ReadUntil::Any(10).ready(b"abc"), Some(3));
        assert_eq!(ReadUntil::Any(2).ready(b"abc"), Some(2));
        assert_eq!(ReadUntil::Any(2).ready(b""), None);
        let line = ReadUntil::Delimiter(vec![b"\n".to_vec()], None);
        assert_eq!(line.ready(b"ab\ncd\n"), Some(3));
        assert_eq!(line.ready(b"abc"), None);
        let limited = ReadUntil::Delimiter(vec![b"\r\n".to_vec()], Some(4));
        assert_eq!(limited.ready(b"ab\r\n"), Some(4));
        assert_eq!(limited.ready(b"a\r\nb"), Some(3));
        assert_eq!(limited.ready(b"abcdef"), Some(4));
        assert_eq!(limited.ready(b"abc"), None);
        let either = ReadUntil::Delimiter(vec![b"\n\n".to_vec(), b"\r\n\r\n".to_vec()], None);
        assert_eq!(either.ready(b"GET / HTTP/1.0\r\n\r\nnext\n\n"), Some(18));
        assert_eq!(either.ready(b"a\n\nb\r\n\r\n"), Some(3));
        assert_eq!(either.ready(b"a\r\n"), None);
    }

    #[test]
    fn os_errors_read_as_strerror() {
        let refused = std::io::Error::from_raw_os_error(111);
        assert_eq!(os_error(&refused), (111, "Connection refused".to_owned()));
        let timeout = std::io::Error::from(std::io::ErrorKind::WouldBlock);
        assert_eq!(os_error(&timeout).0, ETIMEDOUT);
    }
}
