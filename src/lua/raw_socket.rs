//! Sockets made by hand (`socket('AF_INET', 'SOCK_DGRAM', 'udp')`, a TCP
//! listener or connection set up call by call), as 2.6's socket objects.
//!
//! Each method is one system call on a non-blocking descriptor (as 2.6 creates
//! them): one that would wait fails with EAGAIN or EINPROGRESS, and
//! lua/socket.lua waits for readiness with `socket.iowait` and keeps the errno
//! and the read buffer. Failures return `nil`, the errno and strerror's text.
//! Hosts are names or addresses resolved for the socket's family; a Unix
//! socket's path stands in the port's place (host `unix/`).

use std::net::{SocketAddr, ToSocketAddrs};
use std::os::fd::{AsFd, AsRawFd, OwnedFd};

use mlua::{IntoLuaMulti, Lua, LuaString, MultiValue, UserData, UserDataMethods, Value};
use rustix::net::{self as net, AddressFamily, RecvFlags, SendFlags, SocketAddrAny, SocketFlags, SocketType};

use super::stream::UNIX_HOST;

/// Most bytes one receive asks for.
const MAX_RECEIVE: usize = 1 << 20;

/// A socket made by `socket(domain, type, protocol)` (closed: `None`).
pub struct RawSocket {
    fd: Option<OwnedFd>,
    family: AddressFamily,
}

fn errno_of(e: &std::io::Error) -> (i32, String) {
    (e.raw_os_error().unwrap_or(libc::EINVAL), super::native::strerror(e))
}

fn failure(lua: &Lua, e: &std::io::Error) -> mlua::Result<MultiValue> {
    let (errno, text) = errno_of(e);
    (Value::Nil, errno, text).into_lua_multi(lua)
}

fn os(e: rustix::io::Errno) -> std::io::Error {
    e.into()
}

fn closed() -> std::io::Error {
    std::io::Error::from_raw_os_error(libc::EBADF)
}

/// A result as Lua gets it: the value, or `nil, errno, text`.
fn outcome<T: mlua::IntoLuaMulti>(lua: &Lua, r: std::io::Result<T>) -> mlua::Result<MultiValue> {
    match r {
        Ok(v) => v.into_lua_multi(lua),
        Err(e) => failure(lua, &e),
    }
}

/// An address of the socket's family for `host` and `port` (a Unix socket's
/// path in `port`).
enum Target {
    Inet(SocketAddr),
    Unix(net::SocketAddrUnix),
}

impl RawSocket {
    fn fd(&self) -> std::io::Result<&OwnedFd> {
        self.fd.as_ref().ok_or_else(closed)
    }

    fn target(&self, host: &str, port: &Value) -> std::io::Result<Target> {
        if self.family == AddressFamily::UNIX {
            let path = match port {
                Value::String(s) => s.to_string_lossy(),
                other => other.to_string().map_err(|_| std::io::Error::from_raw_os_error(libc::EINVAL))?,
            };
            return Ok(Target::Unix(net::SocketAddrUnix::new(path.as_str()).map_err(os)?));
        }
        let port = match port {
            Value::Integer(n) => u16::try_from(*n).ok(),
            #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss, reason = "checked to be a port first")]
            Value::Number(n) if n.fract() == 0.0 && (0.0..=65535.0).contains(n) => Some(*n as u16),
            Value::String(s) => s.to_str().ok().and_then(|s| s.parse().ok()),
            _ => None,
        }
        .ok_or_else(|| std::io::Error::from_raw_os_error(libc::EINVAL))?;
        let want_v6 = self.family == AddressFamily::INET6;
        (host, port)
            .to_socket_addrs()?
            .find(|a| a.is_ipv6() == want_v6)
            .map(Target::Inet)
            .ok_or_else(|| std::io::Error::from_raw_os_error(libc::EAFNOSUPPORT))
    }
}

/// An address as Lua gets it: host, port (a Unix socket: `unix/` and its path).
fn address_values(lua: &Lua, addr: Option<SocketAddrAny>) -> mlua::Result<MultiValue> {
    let Some(addr) = addr else { return Ok(MultiValue::new()) };
    if let Ok(inet) = SocketAddr::try_from(addr.clone()) {
        return (inet.ip().to_string(), inet.port()).into_lua_multi(lua);
    }
    match net::SocketAddrUnix::try_from(addr) {
        Ok(unix) => {
            let path = unix.path_bytes().map(|p| String::from_utf8_lossy(p).into_owned()).unwrap_or_default();
            (UNIX_HOST, path).into_lua_multi(lua)
        }
        Err(_) => Ok(MultiValue::new()),
    }
}

/// `open(domain, type, protocol)` -> a socket, or a failure.
fn open(lua: &Lua, (domain, kind, protocol): (u16, u32, i32)) -> mlua::Result<MultiValue> {
    let family = AddressFamily::from_raw(domain);
    let protocol = u32::try_from(protocol).ok().and_then(std::num::NonZeroU32::new).map(net::Protocol::from_raw);
    let flags = SocketFlags::NONBLOCK | SocketFlags::CLOEXEC;
    match net::socket_with(family, SocketType::from_raw(kind), flags, protocol) {
        Ok(fd) => lua.create_userdata(RawSocket { fd: Some(fd), family })?.into_lua_multi(lua),
        Err(e) => failure(lua, &os(e)),
    }
}

/// A socket option by its 2.6 name: get it (as a number), or set it.
fn option(fd: &OwnedFd, name: &str, value: Option<bool>) -> std::io::Result<i64> {
    let fd = fd.as_fd();
    let flag = |b: bool| i64::from(b);
    let r = match (name, value) {
        ("SO_REUSEADDR", Some(v)) => net::sockopt::set_socket_reuseaddr(fd, v).map(|()| 1),
        ("SO_REUSEADDR", None) => net::sockopt::socket_reuseaddr(fd).map(flag),
        ("SO_REUSEPORT", Some(v)) => net::sockopt::set_socket_reuseport(fd, v).map(|()| 1),
        ("SO_REUSEPORT", None) => net::sockopt::socket_reuseport(fd).map(flag),
        ("SO_KEEPALIVE", Some(v)) => net::sockopt::set_socket_keepalive(fd, v).map(|()| 1),
        ("SO_KEEPALIVE", None) => net::sockopt::socket_keepalive(fd).map(flag),
        ("SO_BROADCAST", Some(v)) => net::sockopt::set_socket_broadcast(fd, v).map(|()| 1),
        ("SO_BROADCAST", None) => net::sockopt::socket_broadcast(fd).map(flag),
        ("TCP_NODELAY", Some(v)) => net::sockopt::set_tcp_nodelay(fd, v).map(|()| 1),
        ("TCP_NODELAY", None) => net::sockopt::tcp_nodelay(fd).map(flag),
        ("SO_ERROR", None) => {
            net::sockopt::socket_error(fd).map(|r| r.err().map_or(0, |e| i64::from(e.raw_os_error())))
        }
        ("SO_TYPE", None) => net::sockopt::socket_type(fd).map(|t| i64::from(t.as_raw())),
        _ => return Err(std::io::Error::from_raw_os_error(libc::ENOPROTOOPT)),
    };
    r.map_err(os)
}

impl UserData for RawSocket {
    fn add_methods<M: UserDataMethods<Self>>(methods: &mut M) {
        methods.add_method("fd", |_, this, ()| Ok(this.fd.as_ref().map(AsRawFd::as_raw_fd)));
        methods.add_method_mut("close", |_, this, ()| Ok(this.fd.take().is_some()));
        methods.add_method("bind", |lua, this, (host, port): (String, Value)| {
            let r = this.fd().and_then(|fd| match this.target(&host, &port)? {
                Target::Inet(a) => net::bind(fd, &a).map_err(os),
                Target::Unix(a) => net::bind(fd, &a).map_err(os),
            });
            outcome(lua, r.map(|()| true))
        });
        methods.add_method("connect", |lua, this, (host, port): (String, Value)| {
            let r = this.fd().and_then(|fd| match this.target(&host, &port)? {
                Target::Inet(a) => net::connect(fd, &a).map_err(os),
                Target::Unix(a) => net::connect(fd, &a).map_err(os),
            });
            outcome(lua, r.map(|()| true))
        });
        methods.add_method("listen", |lua, this, backlog: i32| {
            outcome(lua, this.fd().and_then(|fd| net::listen(fd, backlog).map_err(os)).map(|()| true))
        });
        methods.add_method("accept", |lua, this, ()| {
            let accepted =
                this.fd().and_then(|fd| net::accept_with(fd, SocketFlags::NONBLOCK | SocketFlags::CLOEXEC).map_err(os));
            match accepted {
                Ok(fd) => lua.create_userdata(RawSocket { fd: Some(fd), family: this.family })?.into_lua_multi(lua),
                Err(e) => failure(lua, &e),
            }
        });
        methods.add_method("sendto", |lua, this, (host, port, data): (String, Value, LuaString)| {
            let r = this.fd().and_then(|fd| match this.target(&host, &port)? {
                Target::Inet(a) => net::sendto(fd, &data.as_bytes(), SendFlags::NOSIGNAL, &a).map_err(os),
                Target::Unix(a) => net::sendto(fd, &data.as_bytes(), SendFlags::NOSIGNAL, &a).map_err(os),
            });
            outcome(lua, r)
        });
        methods.add_method("send", |lua, this, data: LuaString| {
            outcome(lua, this.fd().and_then(|fd| net::send(fd, &data.as_bytes(), SendFlags::NOSIGNAL).map_err(os)))
        });
        methods.add_method("recv", |lua, this, size: usize| {
            let mut buf = vec![0; size.clamp(1, MAX_RECEIVE)];
            match this.fd().and_then(|fd| net::recv(fd, &mut buf[..], RecvFlags::empty()).map_err(os)) {
                Ok((n, _)) => lua.create_string(&buf[..n])?.into_lua_multi(lua),
                Err(e) => failure(lua, &e),
            }
        });
        methods.add_method("recvfrom", |lua, this, size: usize| {
            let mut buf = vec![0; size.clamp(1, MAX_RECEIVE)];
            match this.fd().and_then(|fd| net::recvfrom(fd, &mut buf[..], RecvFlags::empty()).map_err(os)) {
                Ok((n, _, from)) => {
                    let mut values = address_values(lua, from)?;
                    values.push_front(Value::String(lua.create_string(&buf[..n])?));
                    Ok(values)
                }
                Err(e) => failure(lua, &e),
            }
        });
        methods.add_method("name", |lua, this, ()| match this.fd().and_then(|fd| net::getsockname(fd).map_err(os)) {
            Ok(addr) => address_values(lua, Some(addr)),
            Err(e) => failure(lua, &e),
        });
        methods.add_method("peer", |lua, this, ()| match this.fd().and_then(|fd| net::getpeername(fd).map_err(os)) {
            Ok(addr) => address_values(lua, addr),
            Err(e) => failure(lua, &e),
        });
        methods.add_method("shutdown", |lua, this, how: u8| {
            let how = match how {
                0 => net::Shutdown::Read,
                1 => net::Shutdown::Write,
                _ => net::Shutdown::Both,
            };
            outcome(lua, this.fd().and_then(|fd| net::shutdown(fd, how).map_err(os)).map(|()| true))
        });
        // option(name[, value]) -> the option's value (a number), or true once set.
        methods.add_method("option", |lua, this, (name, value): (String, Option<bool>)| {
            let r = this.fd().and_then(|fd| option(fd, &name, value));
            match (r, value) {
                (Ok(_), Some(_)) => true.into_lua_multi(lua),
                (r, _) => outcome(lua, r),
            }
        });
        // nonblock([on]) -> whether the descriptor is non-blocking (after setting it).
        methods.add_method("nonblock", |lua, this, on: Option<bool>| {
            let r = this.fd().and_then(|fd| {
                let flags = rustix::fs::fcntl_getfl(fd).map_err(os)?;
                let flags = match on {
                    Some(true) => flags | rustix::fs::OFlags::NONBLOCK,
                    Some(false) => flags - rustix::fs::OFlags::NONBLOCK,
                    None => return Ok(flags.contains(rustix::fs::OFlags::NONBLOCK)),
                };
                rustix::fs::fcntl_setfl(fd, flags).map_err(os)?;
                Ok(flags.contains(rustix::fs::OFlags::NONBLOCK))
            });
            outcome(lua, r)
        });
    }
}

/// `fd_addresses(fd)` -> the peer's host and port, then the socket's own, of a
/// connected socket the server owns (a console session's, by `box.session.fd()`):
/// read only, the descriptor stays the server's. Nothing for what is not a socket.
#[allow(unsafe_code, reason = "a descriptor Lua names by number is read for two calls; see the SAFETY note")]
fn fd_addresses(lua: &Lua, fd: i32) -> mlua::Result<MultiValue> {
    if fd < 0 {
        return Ok(MultiValue::new());
    }
    // SAFETY: the descriptor is only read from by two system calls and not kept;
    // were it closed meanwhile, they fail with EBADF (or read whatever reuses the number).
    let fd = unsafe { std::os::fd::BorrowedFd::borrow_raw(fd) };
    let (Ok(peer), Ok(name)) = (net::getpeername(fd), net::getsockname(fd)) else {
        return Ok(MultiValue::new());
    };
    let mut values = address_values(lua, peer)?;
    if values.len() != 2 {
        return Ok(MultiValue::new());
    }
    values.extend(address_values(lua, Some(name))?);
    Ok(values)
}

/// Registers `box.internal.raw_socket_open` and `box.internal.fd_addresses`.
pub fn register(lua: &Lua) -> mlua::Result<()> {
    let internal: mlua::Table = lua.globals().get::<mlua::Table>("box")?.get("internal")?;
    internal.set("fd_addresses", lua.create_function(fd_addresses)?)?;
    internal.set("raw_socket_open", lua.create_function(open)?)
}
