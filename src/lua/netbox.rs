//! The `net.box` client's transport: one IPROTO connection driven from Lua.
//!
//! `box.internal.netbox_connect(host, port, timeout)` opens a connection and reads
//! the greeting; the returned handle's `request(type, body, token, timeout)` sends
//! one request and waits for its reply. The API Tarantool users call (`connect`,
//! `call`, `eval`, `space.x:select`, ...) is `lua/net_box.lua` on top of this.
//!
//! The calls block the thread that makes them (there are no fibers to yield to
//! yet), so a connection back to the same instance is refused rather than left
//! to deadlock.

use std::io::{Read, Write};
use std::net::{TcpStream, ToSocketAddrs};
use std::time::Duration;

use mlua::{Lua, MultiValue, UserData, UserDataMethods, Value};

use super::convert;
use crate::protocol::msgpack::{write, Reader};
use crate::protocol::{auth, frame, greeting, key};

/// Largest reply accepted from a peer.
const MAX_REPLY_SIZE: u64 = frame::DEFAULT_MAX_PACKET_SIZE;

/// An open connection to a Tarantool-protocol server.
pub struct NetConn {
    stream: Option<TcpStream>,
    sync: u64,
    salt: Vec<u8>,
    greeting: String,
}

fn io_err(e: &std::io::Error) -> mlua::Error {
    mlua::Error::runtime(e.to_string())
}

fn timeout_of(secs: Option<f64>) -> Option<Duration> {
    secs.filter(|s| s.is_finite() && *s > 0.0).map(Duration::from_secs_f64)
}

/// Connects to `host:port` and reads the 128-byte greeting.
fn connect(host: &str, port: u16, timeout: Option<f64>) -> mlua::Result<NetConn> {
    let addr = (host, port)
        .to_socket_addrs()
        .map_err(|e| io_err(&e))?
        .next()
        .ok_or_else(|| mlua::Error::runtime(format!("cannot resolve {host}")))?;
    let stream = match timeout_of(timeout) {
        Some(t) => TcpStream::connect_timeout(&addr, t),
        None => TcpStream::connect(addr),
    }
    .map_err(|e| io_err(&e))?;
    stream.set_nodelay(true).map_err(|e| io_err(&e))?;
    stream.set_read_timeout(timeout_of(timeout)).map_err(|e| io_err(&e))?;
    let mut raw = [0u8; greeting::GREETING_SIZE];
    (&stream).read_exact(&mut raw).map_err(|e| io_err(&e))?;
    let salt = greeting::decode_salt(&raw).ok_or_else(|| mlua::Error::runtime("invalid greeting"))?;
    let text = String::from_utf8_lossy(&raw[..64]).trim_end().to_owned();
    Ok(NetConn { stream: Some(stream), sync: 0, salt, greeting: text })
}

impl NetConn {
    /// Sends one request and reads its reply: (code, body bytes).
    fn round_trip(
        &mut self,
        ty: u64,
        body: &[u8],
        token: Option<&[u8]>,
        timeout: Option<f64>,
    ) -> mlua::Result<(u64, Vec<u8>)> {
        let stream = self.stream.as_mut().ok_or_else(|| mlua::Error::runtime("Connection closed"))?;
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
        stream.set_read_timeout(timeout_of(timeout)).map_err(|e| io_err(&e))?;
        stream.write_all(&out).map_err(|e| io_err(&e))?;
        loop {
            let reply = read_frame(stream)?;
            let mut r = Reader::new(&reply);
            let (mut code, mut sync) = (0, 0);
            let n = r.read_map_len().map_err(|_| mlua::Error::runtime("invalid reply header"))?;
            for _ in 0..n {
                match r.read_uint() {
                    Ok(0) => code = r.read_uint().unwrap_or(0),
                    Ok(1) => sync = r.read_uint().unwrap_or(0),
                    _ => {
                        r.skip().map_err(|_| mlua::Error::runtime("invalid reply header"))?;
                    }
                }
            }
            // Pushes (IPROTO_CHUNK) before the reply are not delivered to the caller.
            if sync == self.sync && code != crate::protocol::request_type::CHUNK {
                let body = reply.get(r.position()..).unwrap_or(&[]).to_vec();
                return Ok((code, body));
            }
        }
    }
}

fn read_frame(stream: &mut TcpStream) -> mlua::Result<Vec<u8>> {
    let mut head = vec![0u8; 1];
    stream.read_exact(&mut head).map_err(|e| io_err(&e))?;
    let width = match head[0] {
        0x00..=0x7f => 0,
        0xcc => 1,
        0xcd => 2,
        0xce => 4,
        0xcf => 8,
        _ => return Err(mlua::Error::runtime("invalid reply length")),
    };
    let mut rest = vec![0u8; width];
    stream.read_exact(&mut rest).map_err(|e| io_err(&e))?;
    head.extend_from_slice(&rest);
    let (_, len) = frame::peek_length(&head, MAX_REPLY_SIZE)
        .map_err(|_| mlua::Error::runtime("reply too large"))?
        .ok_or_else(|| mlua::Error::runtime("invalid reply length"))?;
    let mut payload = vec![0u8; usize::try_from(len).map_err(|_| mlua::Error::runtime("reply too large"))?];
    stream.read_exact(&mut payload).map_err(|e| io_err(&e))?;
    Ok(payload)
}

impl UserData for NetConn {
    fn add_methods<M: UserDataMethods<Self>>(methods: &mut M) {
        // request(type, body, token, timeout) -> code, body (a Lua table)
        methods.add_method_mut("request", |lua, this, (ty, body, token, timeout): (u64, Value, Value, Option<f64>)| {
            let mut encoded = Vec::new();
            if !body.is_nil() {
                convert::encode(&mut encoded, &body, 0)?;
            }
            let token_bytes = match &token {
                Value::Nil => None,
                v => {
                    let mut t = Vec::new();
                    convert::encode(&mut t, v, 0)?;
                    Some(t)
                }
            };
            let (code, reply) = match this.round_trip(ty, &encoded, token_bytes.as_deref(), timeout) {
                Ok(r) => r,
                Err(e) => {
                    // A broken transport closes the connection.
                    this.stream = None;
                    return Err(e);
                }
            };
            let body =
                if reply.is_empty() { Value::Nil } else { convert::decode(lua, &mut Reader::new(&reply), 0, false)? };
            Ok(MultiValue::from_vec(vec![Value::Number(code as f64), body]))
        });
        methods.add_method("scramble", |lua, this, password: mlua::LuaString| {
            lua.create_string(auth::scramble(&this.salt, &password.as_bytes()))
        });
        methods.add_method("greeting", |_, this, ()| Ok(this.greeting.clone()));
        methods.add_method("is_connected", |_, this, ()| Ok(this.stream.is_some()));
        methods.add_method_mut("close", |_, this, ()| {
            if let Some(s) = this.stream.take() {
                let _ = s.shutdown(std::net::Shutdown::Both);
            }
            Ok(())
        });
    }
}

/// Registers `box.internal.netbox_connect(host, port, timeout)`.
pub fn register(lua: &Lua) -> mlua::Result<()> {
    let f =
        lua.create_function(|_, (host, port, timeout): (String, u16, Option<f64>)| connect(&host, port, timeout))?;
    let internal: mlua::Table = lua.globals().get::<mlua::Table>("box")?.get("internal")?;
    internal.set("netbox_connect", f)
}
