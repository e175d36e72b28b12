//! The `net.box` client's transport: one IPROTO connection driven from Lua.
//!
//! `box.internal.netbox_connect(host, port, timeout)` opens a connection and reads
//! the greeting; the returned handle's `request(encode(type, body, token, timeout))`
//! sends one request and waits for its reply. The API Tarantool users call (`connect`,
//! `call`, `eval`, `space.x:select`, ...) is `lua/net_box.lua` on top of this.
//!
//! Each connection has two threads: one writes the requests in the order they
//! are made, the other reads the replies as they come and hands each to whoever
//! waits for its sync, so the requests of many fibers are in flight together (as
//! 2.6 pipelines them). From a fiber a request is `submit`ted and the fiber waits
//! (the TX thread serves other requests meanwhile, including ones this
//! connection sends to the same instance); where nothing may yield (a trigger, a
//! tokened call) `request` blocks until the reply.

use std::collections::HashMap;
use std::io::{Read, Write};
use std::net::{TcpStream, ToSocketAddrs};
use std::os::unix::net::UnixStream;
use std::rc::Rc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use mlua::{Lua, MultiValue, Table, UserData, UserDataMethods, Value};
use tokio::sync::mpsc::UnboundedSender;

use super::convert;
use super::stream::{Stream as Socket, UNIX_HOST};
use crate::executor::TxMessage;
use crate::protocol::msgpack::{write, Reader};
use crate::protocol::{auth, frame, greeting, key};

/// Largest reply accepted from a peer.
const MAX_REPLY_SIZE: u64 = frame::DEFAULT_MAX_PACKET_SIZE;

/// A reply: its code and body bytes, with the bodies of the `box.session.push`
/// messages (IPROTO_CHUNK) that came before it for the same request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reply {
    /// The response code (0, or 0x8000 + an error code).
    pub code: u64,
    /// The body as sent.
    pub body: Vec<u8>,
    /// Each push message's body, in order.
    pub pushes: Vec<Vec<u8>>,
    /// The server's schema version the reply carries (0: none).
    pub schema_version: u64,
}

/// A reply, or why there is none.
pub type NetReply = Result<Reply, String>;

/// Where the TX thread's messages go (set by the executor): lets a fiber wait for a reply.
#[derive(Debug, Clone)]
pub struct TxNotify(pub UnboundedSender<TxMessage>);

/// Tickets that match replies delivered to the TX thread with their waiting fibers.
static NEXT_TICKET: AtomicU64 = AtomicU64::new(1);

/// Where a request's reply goes.
enum ReplyTo {
    /// A caller blocked on this channel.
    Direct(mpsc::Sender<NetReply>),
    /// The TX thread, as [`TxMessage::Netbox`] with this ticket.
    Tx(u64, UnboundedSender<TxMessage>),
}

/// One request for the connection's writing thread.
struct Job {
    packet: Vec<u8>,
    sync: u64,
    reply: ReplyTo,
}

/// A request sent and not yet answered: where its reply goes, and the pushes
/// kept for a caller that takes them with the reply.
struct Waiting {
    reply: ReplyTo,
    pushes: Vec<Vec<u8>>,
}

/// The requests of a connection in flight, by sync, and why it broke, once it
/// has (every later request fails with that).
#[derive(Default)]
struct InFlight {
    waiting: HashMap<u64, Waiting>,
    broken: Option<String>,
    /// Where to report the connection lost (the TX thread, with the
    /// connection's id): taken by the first break not made by `close()`.
    on_lost: Option<(u64, UnboundedSender<TxMessage>)>,
}

type Shared = Arc<Mutex<InFlight>>;

/// An open connection to a Tarantool-protocol server (see the module's notes).
pub struct NetConn {
    /// Names the connection in [`TxMessage::NetboxLost`].
    id: u64,
    shared: Shared,
    jobs: Option<mpsc::Sender<Job>>,
    /// A handle on the socket, to shut it down on close.
    closer: Option<Socket>,
    /// Set by `close()`: what fails after that fails with "Connection closed".
    closed: Arc<AtomicBool>,
    sync: u64,
    salt: Vec<u8>,
    greeting: String,
}

/// An I/O failure as 2.6's net.box words it: the server gone is "Peer closed".
fn io_text(e: &std::io::Error) -> String {
    if e.kind() == std::io::ErrorKind::UnexpectedEof {
        return "Peer closed".to_owned();
    }
    super::native::strerror(e)
}

fn timeout_of(secs: Option<f64>) -> Option<Duration> {
    secs.filter(|s| s.is_finite() && *s > 0.0).map(Duration::from_secs_f64)
}

/// Connects to `host:port` (`host` "unix/": to the Unix socket at path `port`),
/// reads the 128-byte greeting and starts the I/O threads. With `notify`, the
/// connection breaking is reported to the TX thread as it happens (2.6's
/// net.box notices a peer gone without a request).
fn connect(host: &str, port: &str, timeout: Option<f64>, notify: Option<TxNotify>) -> Result<NetConn, String> {
    let reason = |e: std::io::Error| super::native::strerror(&e);
    let mut stream = if host == UNIX_HOST {
        Socket::Unix(UnixStream::connect(port).map_err(reason)?)
    } else {
        // A name that does not resolve, or a port that is not a number, is EINVAL
        // to 2.6's net.box.
        let unresolved = || "Invalid argument".to_owned();
        let port: u16 = port.parse().map_err(|_| unresolved())?;
        let addr = (host, port).to_socket_addrs().map_err(|_| unresolved())?.next().ok_or_else(unresolved)?;
        let stream = match timeout_of(timeout) {
            Some(t) => TcpStream::connect_timeout(&addr, t),
            None => TcpStream::connect(addr),
        }
        .map_err(reason)?;
        stream.set_nodelay(true).map_err(reason)?;
        Socket::Tcp(stream)
    };
    stream.set_read_timeout(timeout_of(timeout)).map_err(reason)?;
    let mut raw = [0u8; greeting::GREETING_SIZE];
    stream.read_exact(&mut raw).map_err(reason)?;
    let salt = greeting::decode_salt(&raw).ok_or_else(|| "invalid greeting".to_owned())?;
    let text = String::from_utf8_lossy(&raw[..64]).trim_end().to_owned();
    // Waiting callers keep their own time: the reader waits as long as it takes.
    stream.set_read_timeout(None).map_err(reason)?;
    let closer = stream.try_clone().map_err(reason)?;
    let reader = stream.try_clone().map_err(reason)?;
    let (jobs, rx) = mpsc::channel::<Job>();
    let closed = Arc::new(AtomicBool::new(false));
    let id = NEXT_TICKET.fetch_add(1, Ordering::Relaxed);
    let shared: Shared = Arc::new(Mutex::new(InFlight { on_lost: notify.map(|n| (id, n.0)), ..InFlight::default() }));
    let (writer_shared, writer_closed) = (Arc::clone(&shared), Arc::clone(&closed));
    std::thread::Builder::new()
        .name("net.box".into())
        .spawn(move || write_requests(stream, &rx, &writer_shared, &writer_closed))
        .map_err(reason)?;
    let (reader_shared, reader_closed) = (Arc::clone(&shared), Arc::clone(&closed));
    std::thread::Builder::new()
        .name("net.box.read".into())
        .spawn(move || read_replies(reader, &reader_shared, &reader_closed))
        .map_err(reason)?;
    Ok(NetConn { id, shared, jobs: Some(jobs), closer: Some(closer), closed, sync: 0, salt, greeting: text })
}

/// Hands a reply (or why there is none) to whoever waits for it.
fn answer(reply: ReplyTo, result: NetReply) {
    match reply {
        ReplyTo::Direct(tx) => {
            let _ = tx.send(result);
        }
        ReplyTo::Tx(ticket, notify) => {
            let _ = notify.send(TxMessage::Netbox { ticket, reply: result });
        }
    }
}

/// The connection broke: every request in flight fails, and so will every later
/// one ("Connection closed" once `close()` shut the socket down, as in 2.6).
/// The first break `close()` did not make is reported to the TX thread.
fn break_connection(shared: &Shared, closed: &AtomicBool, why: String) {
    let by_close = closed.load(Ordering::Acquire);
    let why = if by_close { "Connection closed".to_owned() } else { why };
    let (waiting, on_lost) = {
        let mut state = shared.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        state.broken.get_or_insert(why.clone());
        (std::mem::take(&mut state.waiting), state.on_lost.take())
    };
    for (_, w) in waiting {
        answer(w.reply, Err(why.clone()));
    }
    if let (Some((conn, notify)), false) = (on_lost, by_close) {
        let _ = notify.send(TxMessage::NetboxLost { conn, reason: why });
    }
}

/// The writing thread: notes each request as in flight, then sends it.
fn write_requests(mut stream: Socket, jobs: &mpsc::Receiver<Job>, shared: &Shared, closed: &AtomicBool) {
    while let Ok(job) = jobs.recv() {
        {
            let mut state = shared.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
            if let Some(why) = state.broken.clone() {
                drop(state);
                answer(job.reply, Err(why));
                continue;
            }
            state.waiting.insert(job.sync, Waiting { reply: job.reply, pushes: Vec::new() });
        }
        if let Err(e) = stream.write_all(&job.packet) {
            break_connection(shared, closed, io_text(&e));
        }
    }
}

/// The reading thread: hands each reply to the request with its sync, and each
/// push before it as it comes to a waiting fiber (a blocked caller gets them with
/// the reply). A reply nobody waits for any more (its caller timed out) is dropped.
fn read_replies(mut stream: Socket, shared: &Shared, closed: &AtomicBool) {
    loop {
        let frame = match read_frame(&mut stream) {
            Ok(frame) => frame,
            Err(why) => return break_connection(shared, closed, why),
        };
        let Some((code, sync, schema_version, body)) = split_reply(&frame) else {
            return break_connection(shared, closed, "invalid reply header".to_owned());
        };
        let mut state = shared.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        if code == crate::protocol::request_type::CHUNK {
            match state.waiting.get_mut(&sync) {
                Some(Waiting { reply: ReplyTo::Tx(ticket, notify), .. }) => {
                    let _ = notify.send(TxMessage::NetboxPush { ticket: *ticket, body });
                }
                Some(Waiting { reply: ReplyTo::Direct(_), pushes }) => pushes.push(body),
                None => {}
            }
            continue;
        }
        if let Some(w) = state.waiting.remove(&sync) {
            drop(state);
            answer(w.reply, Ok(Reply { code, body, pushes: w.pushes, schema_version }));
        }
    }
}

/// A reply frame's code, sync, schema version and body.
fn split_reply(frame: &[u8]) -> Option<(u64, u64, u64, Vec<u8>)> {
    let mut r = Reader::new(frame);
    let (mut code, mut sync, mut schema_version) = (0, 0, 0);
    let n = r.read_map_len().ok()?;
    for _ in 0..n {
        match r.read_uint() {
            Ok(0) => code = r.read_uint().unwrap_or(0),
            Ok(1) => sync = r.read_uint().unwrap_or(0),
            Ok(5) => schema_version = r.read_uint().unwrap_or(0),
            _ => {
                r.skip().ok()?;
            }
        }
    }
    Some((code, sync, schema_version, frame.get(r.position()..).unwrap_or(&[]).to_vec()))
}

impl NetConn {
    /// Frames one request with the next sync.
    fn packet(&mut self, ty: u64, body: &[u8], token: Option<&[u8]>) -> (Vec<u8>, u64) {
        self.sync += 1;
        let mut packet = Vec::with_capacity(body.len() + 32);
        write::map_len(&mut packet, if token.is_some() { 3 } else { 2 });
        write::uint(&mut packet, u64::from(key::REQUEST_TYPE));
        write::uint(&mut packet, ty);
        write::uint(&mut packet, u64::from(key::SYNC));
        write::uint(&mut packet, self.sync);
        if let Some(token) = token {
            write::uint(&mut packet, u64::from(key::IDEMPOTENT_TOKEN));
            packet.extend_from_slice(token);
        }
        packet.extend_from_slice(body);
        #[allow(clippy::cast_possible_truncation, reason = "requests are far below 4 GiB")]
        let mut out = frame::length_prefix(packet.len() as u32).to_vec();
        out.extend_from_slice(&packet);
        (out, self.sync)
    }

    /// Hands a request to the I/O thread.
    fn submit(&mut self, args: &RequestArgs, reply: ReplyTo) -> mlua::Result<()> {
        let (packet, sync) = self.packet(args.ty, &args.body, args.token.as_deref());
        let jobs = self.jobs.as_ref().ok_or_else(|| mlua::Error::runtime("Connection closed"))?;
        jobs.send(Job { packet, sync, reply }).map_err(|_| mlua::Error::runtime("Connection closed"))
    }
}

/// `request` and `submit`'s arguments: a request from `encode`, and the form its reply
/// body goes to Lua in ([`BodyForm::of`]).
type RequestCall = (mlua::UserDataRef<RequestArgs>, Value);

/// What Lua gets of a reply's body.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BodyForm {
    /// Decoded into Lua values.
    Decoded,
    /// Its msgpack bytes as a string (`{buffer = ibuf}`).
    Bytes,
    /// Decoded, but each array among the data's (0x30) members a `box.tuple` of its
    /// bytes as sent, as 2.6's net.box makes a select's or call_16's tuples: a map in a
    /// field keeps its order, which decoding into a Lua table would lose.
    Tuples,
}

impl BodyForm {
    /// The form Lua asks for: `true` bytes, `'tuples'` tuples, anything else decoded.
    fn of(v: &Value) -> Self {
        match v {
            Value::Boolean(true) => Self::Bytes,
            Value::String(s) if s.as_bytes().as_ref() == b"tuples" => Self::Tuples,
            _ => Self::Decoded,
        }
    }
}

/// A request encoded for sending (`encode`): type, body and token as msgpack, and
/// how long `request` waits for its reply.
struct RequestArgs {
    ty: u64,
    body: Vec<u8>,
    token: Option<Vec<u8>>,
    timeout: Option<f64>,
}

fn request_args(ty: u64, body: &Value, token: &Value, timeout: Option<f64>) -> mlua::Result<RequestArgs> {
    let mut encoded = Vec::new();
    match body {
        Value::Nil => {}
        // A map of IPROTO keys whatever msgpack.cfg says of sparse arrays ({[0x21]
        // = ..., [0x22] = ...} is one to it under a large encode_sparse_safe): 2.6
        // writes the body in C; the values follow msgpack.cfg, as 2.6's do.
        Value::Table(t) => {
            let pairs = t.pairs::<Value, Value>().collect::<mlua::Result<Vec<_>>>()?;
            let len = u32::try_from(pairs.len()).map_err(|_| mlua::Error::runtime("request body too large"))?;
            crate::protocol::msgpack::write::map_len(&mut encoded, len);
            for (k, v) in &pairs {
                convert::encode(&mut encoded, k)?;
                convert::encode(&mut encoded, v)?;
            }
        }
        other => convert::encode(&mut encoded, other)?,
    }
    let token = match token {
        Value::Nil => None,
        v => {
            let mut t = Vec::new();
            convert::encode(&mut t, v)?;
            Some(t)
        }
    };
    Ok(RequestArgs { ty, body: encoded, token, timeout })
}

impl UserData for RequestArgs {}

thread_local! {
    /// Tickets whose reply body goes to Lua in another form than decoded.
    static BODY_FORMS: std::cell::RefCell<std::collections::HashMap<u64, BodyForm>> = std::cell::RefCell::default();
}

/// The form the reply to `ticket` was asked for in (forgets the ticket).
pub fn take_body_form(ticket: u64) -> BodyForm {
    BODY_FORMS.with(|forms| forms.borrow_mut().remove(&ticket)).unwrap_or(BodyForm::Decoded)
}

/// A reply as the Lua values `code, body, pushes, schema version` (the body in `form`;
/// an empty body is nil; the pushes a list of their decoded bodies).
pub fn reply_values(lua: &Lua, reply: &Reply, form: BodyForm) -> mlua::Result<MultiValue> {
    let decode = |bytes: &[u8]| -> mlua::Result<Value> {
        if bytes.is_empty() {
            return Ok(Value::Nil);
        }
        convert::decode(lua, &mut Reader::new(bytes), 0)
    };
    let pushes = lua.create_table()?;
    for (i, push) in reply.pushes.iter().enumerate() {
        pushes.raw_set(i + 1, decode(push)?)?;
    }
    #[allow(clippy::cast_precision_loss, reason = "reply codes are small")]
    let body = match form {
        BodyForm::Bytes => Value::String(lua.create_string(&reply.body)?),
        BodyForm::Decoded => decode(&reply.body)?,
        BodyForm::Tuples => match data_members(&reply.body) {
            // The other keys decoded, the data's rows not: tuples of their bytes.
            Some(rows) => {
                let body = decode(&without_data(&reply.body))?;
                if let Value::Table(t) = &body {
                    t.raw_set(key::DATA, data_tuples(lua, &rows)?)?;
                }
                body
            }
            None => decode(&reply.body)?,
        },
    };
    #[allow(clippy::cast_precision_loss, reason = "schema versions stay far below 2^53")]
    let schema_version = Value::Number(reply.schema_version as f64);
    Ok(MultiValue::from_vec(vec![Value::Number(reply.code as f64), body, Value::Table(pushes), schema_version]))
}

/// The members of a reply body's data (0x30) when it is an array, as bytes.
fn data_members(body: &[u8]) -> Option<Vec<&[u8]>> {
    let mut r = Reader::new(body);
    for _ in 0..r.read_map_len().ok()? {
        let k = r.read_uint().ok()?;
        if k != u64::from(key::DATA) {
            r.skip().ok()?;
            continue;
        }
        let n = r.read_array_len().ok()?;
        return (0..n).map(|_| r.skip()).collect::<Result<Vec<_>, _>>().ok();
    }
    None
}

/// A reply body (a map) with its data (0x30) left out, so that decoding it does not
/// decode the rows; the body as it is when it is not a well-formed map.
fn without_data(body: &[u8]) -> Vec<u8> {
    let kept = (|| {
        let mut r = Reader::new(body);
        let n = r.read_map_len().ok()?;
        let mut pairs = Vec::with_capacity(n as usize);
        for _ in 0..n {
            let before = r.position();
            let k = r.read_uint().ok()?;
            r.skip().ok()?;
            if k != u64::from(key::DATA) {
                pairs.push(&body[before..r.position()]);
            }
        }
        let mut out = Vec::with_capacity(body.len());
        write::map_len(&mut out, u32::try_from(pairs.len()).ok()?);
        pairs.iter().for_each(|p| out.extend_from_slice(p));
        Some(out)
    })();
    kept.unwrap_or_else(|| body.to_vec())
}

/// A Lua list of `rows`: each array a tuple of its bytes, anything else decoded.
fn data_tuples(lua: &Lua, rows: &[&[u8]]) -> mlua::Result<Table> {
    let list = lua.create_table_with_capacity(rows.len(), 0)?;
    for (i, row) in rows.iter().enumerate() {
        let v = if matches!(row.first(), Some(0x90..=0x9f | 0xdc | 0xdd)) {
            let tuple = super::tuple::LuaTuple(row.to_vec().into(), Rc::default());
            Value::UserData(lua.create_userdata(tuple)?)
        } else {
            convert::decode(lua, &mut Reader::new(row), 0)?
        };
        list.raw_set(i + 1, v)?;
    }
    Ok(list)
}

/// Reads one reply frame; or why the connection cannot go on.
fn read_frame(stream: &mut impl Read) -> Result<Vec<u8>, String> {
    let mut head = vec![0u8; 1];
    stream.read_exact(&mut head).map_err(|e| io_text(&e))?;
    let width = match head[0] {
        0x00..=0x7f => 0,
        0xcc => 1,
        0xcd => 2,
        0xce => 4,
        0xcf => 8,
        _ => return Err("invalid reply length".to_owned()),
    };
    let mut rest = vec![0u8; width];
    stream.read_exact(&mut rest).map_err(|e| io_text(&e))?;
    head.extend_from_slice(&rest);
    let (_, len) = frame::peek_length(&head, MAX_REPLY_SIZE)
        .map_err(|_| "reply too large".to_owned())?
        .ok_or_else(|| "invalid reply length".to_owned())?;
    let mut payload = vec![0u8; usize::try_from(len).map_err(|_| "reply too large".to_owned())?];
    stream.read_exact(&mut payload).map_err(|e| io_text(&e))?;
    Ok(payload)
}

impl UserData for NetConn {
    fn add_methods<M: UserDataMethods<Self>>(methods: &mut M) {
        // encode(type, body, token, timeout) -> the request to send, or nil and why
        // msgpack could not encode it (net.box raises that as 2.6 does).
        methods.add_method("encode", |lua, _, (ty, body, token, timeout): (u64, Value, Value, Option<f64>)| {
            match request_args(ty, &body, &token, timeout) {
                Ok(args) => Ok((Value::UserData(lua.create_userdata(args)?), Value::Nil)),
                Err(mlua::Error::RuntimeError(why)) => Ok((Value::Nil, Value::String(lua.create_string(why)?))),
                Err(e) => Err(e),
            }
        });
        // request(encoded[, form]) -> code, body, pushes (Lua tables; the body in the
        // form `BodyForm::of(form)` says): blocks until the reply.
        methods.add_method_mut("request", |lua, this, (args, form): RequestCall| {
            let (tx, rx) = mpsc::channel();
            this.submit(&args, ReplyTo::Direct(tx))?;
            let outcome = match timeout_of(args.timeout) {
                Some(t) => rx.recv_timeout(t).map_err(|e| matches!(e, mpsc::RecvTimeoutError::Timeout)),
                None => rx.recv().map_err(|_| false),
            };
            match outcome {
                Ok(Ok(reply)) => reply_values(lua, &reply, BodyForm::of(&form)),
                Ok(Err(e)) => Err(mlua::Error::runtime(e)),
                // Timed out: nothing (the caller raises TIMEOUT); the late reply is dropped.
                Err(true) => Ok(MultiValue::new()),
                Err(false) => Err(mlua::Error::runtime("Connection closed")),
            }
        });
        // submit(encoded[, form]) -> ticket: the reply reaches the TX thread later
        // (box.internal.netbox_deliver), while the calling fiber waits.
        methods.add_method_mut("submit", |lua, this, (args, form): RequestCall| {
            let notify = lua
                .app_data_ref::<TxNotify>()
                .map(|n| n.0.clone())
                .ok_or_else(|| mlua::Error::runtime("net.box cannot wait here"))?;
            let ticket = NEXT_TICKET.fetch_add(1, Ordering::Relaxed);
            // The waiting fiber keeps the time; a late reply finds nobody and is dropped.
            this.submit(&args, ReplyTo::Tx(ticket, notify))?;
            let form = BodyForm::of(&form);
            if form != BodyForm::Decoded {
                BODY_FORMS.with(|forms| forms.borrow_mut().insert(ticket, form));
            }
            Ok(ticket)
        });
        methods.add_method("scramble", |lua, this, password: mlua::LuaString| {
            lua.create_string(auth::scramble(&this.salt, &password.as_bytes()))
        });
        methods.add_method("greeting", |_, this, ()| Ok(this.greeting.clone()));
        methods.add_method("is_connected", |_, this, ()| Ok(this.jobs.is_some()));
        methods.add_method("id", |_, this, ()| Ok(this.id));
        // broken() -> why the connection broke, or nil while it works.
        methods.add_method("broken", |_, this, ()| {
            Ok(this.shared.lock().unwrap_or_else(std::sync::PoisonError::into_inner).broken.clone())
        });
        methods.add_method_mut("close", |_, this, ()| {
            this.jobs = None;
            this.closed.store(true, Ordering::Release);
            if let Some(s) = this.closer.take() {
                s.shutdown();
            }
            Ok(())
        });
    }
}

impl Drop for NetConn {
    fn drop(&mut self) {
        // The I/O thread ends when its job channel closes; a blocked read ends with the socket.
        if let Some(s) = self.closer.take() {
            s.shutdown();
        }
    }
}

/// Registers `box.internal.netbox_connect(host, port, timeout)`: a handle, or nil
/// and why the connection failed (as 2.6 words it: "Connection refused").
pub fn register(lua: &Lua) -> mlua::Result<()> {
    let f = lua.create_function(|lua, (host, port, timeout): (String, String, Option<f64>)| {
        let notify = lua.app_data_ref::<TxNotify>().map(|n| n.clone());
        Ok(match connect(&host, &port, timeout, notify) {
            Ok(conn) => (Some(conn), None),
            Err(reason) => (None, Some(reason)),
        })
    })?;
    let internal: mlua::Table = lua.globals().get::<mlua::Table>("box")?.get("internal")?;
    internal.set("netbox_connect", f)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `{0x00: 5, 0x30: [[1, {20: 1, 1: 1}], 7], 0x31: 9}`, the data's map in that order.
    fn body() -> Vec<u8> {
        let mut b = vec![0x83, 0x00, 0x05, key::DATA, 0x92];
        b.extend_from_slice(&[0x92, 0x01, 0x82, 0x14, 0x01, 0x01, 0x01]);
        b.extend_from_slice(&[0x07, 0x31, 0x09]);
        b
    }

    #[test]
    fn data_rows_are_found_as_bytes_and_left_out_of_the_rest() {
        let b = body();
        let rows = data_members(&b).expect("a data array");
        assert_eq!(rows, vec![&[0x92, 0x01, 0x82, 0x14, 0x01, 0x01, 0x01][..], &[0x07][..]]);
        assert_eq!(without_data(&b), vec![0x82, 0x00, 0x05, 0x31, 0x09]);
        // Not a map: nothing found, nothing removed.
        assert_eq!(data_members(&[0x91, 0x01]), None);
        assert_eq!(without_data(&[0x91, 0x01]), vec![0x91, 0x01]);
    }

    #[test]
    fn rows_become_tuples_of_their_bytes() {
        let lua = Lua::new();
        let b = body();
        let list = data_tuples(&lua, &data_members(&b).expect("a data array")).expect("a list");
        let first: mlua::AnyUserData = list.get(1).expect("a tuple");
        assert_eq!(&*first.borrow::<super::super::tuple::LuaTuple>().expect("a tuple").0, &b[5..12]);
        assert_eq!(list.get::<i64>(2).expect("a number"), 7);
    }
}
