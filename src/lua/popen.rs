//! `box.internal.popen`: the system calls behind the `popen` module (lua/popen.lua).
//!
//! A child is started and watched by [`crate::children`]; Lua knows it by its
//! pid and its pipes by their descriptors (non-blocking: a read or write that
//! would wait returns `false`, and the Lua module waits with `socket.iowait`).
//! The pipes stay here until `close`. Failures return `nil`, strerror's text
//! and the errno.

use std::cell::RefCell;
use std::collections::HashMap;
use std::ffi::CString;
use std::fs::File;
use std::io::{Read, Write};
use std::os::fd::{AsFd, AsRawFd};

use mlua::{IntoLuaMulti, Lua, LuaString, MultiValue, Table, Value};

use crate::children::{self, spawn, End, Waiting};
use crate::executor::TxMessage;

thread_local! {
    /// The parent's ends of the children's pipes, by descriptor.
    static PIPES: RefCell<HashMap<i32, File>> = RefCell::new(HashMap::new());
}

/// Most bytes one read returns.
const MAX_READ: usize = 1 << 20;

fn failure(lua: &Lua, e: &std::io::Error) -> mlua::Result<MultiValue> {
    (Value::Nil, super::native::strerror(e), e.raw_os_error().unwrap_or(0)).into_lua_multi(lua)
}

fn stdio(mode: &str) -> mlua::Result<spawn::Stdio> {
    Ok(match mode {
        "inherit" => spawn::Stdio::Inherit,
        "devnull" => spawn::Stdio::DevNull,
        "close" => spawn::Stdio::Close,
        "pipe" => spawn::Stdio::Pipe,
        _ => return Err(mlua::Error::runtime(format!("popen: unknown stream mode {mode}"))),
    })
}

fn c_string(s: &LuaString) -> mlua::Result<CString> {
    CString::new(s.as_bytes().to_vec()).map_err(|_| mlua::Error::runtime("popen: a string holds a NUL byte"))
}

/// A child's end as Lua sees it: the state's name and the exit status or signal.
fn end_values(end: End) -> (&'static str, i32) {
    match end {
        End::Exited(code) => ("exited", code),
        End::Signaled(signal) => ("signaled", signal),
    }
}

/// `spawn(program, argv, env, {stdin, stdout, stderr}, {setsid, close_fds,
/// restore_signals})` -> pid, stdin fd, stdout fd, stderr fd (-1 where not piped).
fn spawn_child(
    lua: &Lua,
    (program, argv, env, modes, flags): (LuaString, Vec<LuaString>, Option<Vec<LuaString>>, Vec<String>, Table),
) -> mlua::Result<MultiValue> {
    let program = c_string(&program)?;
    let argv = argv.iter().map(c_string).collect::<mlua::Result<Vec<_>>>()?;
    let env = env.map(|e| e.iter().map(c_string).collect::<mlua::Result<Vec<_>>>()).transpose()?;
    let mut streams = [spawn::Stdio::Inherit; 3];
    for (stream, mode) in streams.iter_mut().zip(&modes) {
        *stream = stdio(mode)?;
    }
    let options = spawn::Options {
        stdio: streams,
        env,
        setsid: flags.get("setsid")?,
        close_fds: flags.get("close_fds")?,
        restore_signals: flags.get("restore_signals")?,
    };
    let spawned = match children::spawn_watched(&program, &argv, &options) {
        Ok(s) => s,
        Err(e) => return (Value::Nil, e.what, e.error.raw_os_error().unwrap_or(0)).into_lua_multi(lua),
    };
    let mut fds = [-1; 3];
    for (fd, pipe) in fds.iter_mut().zip(spawned.pipes) {
        let Some(pipe) = pipe else { continue };
        let file = File::from(pipe);
        if let Err(e) = set_nonblocking(&file) {
            return (Value::Nil, "Can't set O_NONBLOCK", e.raw_os_error().unwrap_or(0)).into_lua_multi(lua);
        }
        *fd = file.as_raw_fd();
        PIPES.with_borrow_mut(|p| p.insert(*fd, file));
    }
    (spawned.pid, fds[0], fds[1], fds[2]).into_lua_multi(lua)
}

fn set_nonblocking(file: &File) -> std::io::Result<()> {
    let flags = rustix::fs::fcntl_getfl(file.as_fd())?;
    rustix::fs::fcntl_setfl(file.as_fd(), flags | rustix::fs::OFlags::NONBLOCK)?;
    Ok(())
}

/// `read(fd, max)` -> up to `max` bytes ready ('' at the end), `false` if none
/// yet, or a failure.
fn read(lua: &Lua, (fd, max): (i32, usize)) -> mlua::Result<MultiValue> {
    let mut buf = vec![0; max.clamp(1, MAX_READ)];
    let r = PIPES.with_borrow_mut(|p| match p.get_mut(&fd) {
        Some(f) => f.read(&mut buf),
        None => Err(std::io::Error::from_raw_os_error(libc::EBADF)),
    });
    match r {
        Ok(n) => lua.create_string(&buf[..n])?.into_lua_multi(lua),
        Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => false.into_lua_multi(lua),
        Err(e) => failure(lua, &e),
    }
}

/// `write(fd, data)` -> bytes written (0 if the pipe is full), or a failure.
fn write(lua: &Lua, (fd, data): (i32, LuaString)) -> mlua::Result<MultiValue> {
    let r = PIPES.with_borrow_mut(|p| match p.get_mut(&fd) {
        Some(f) => f.write(&data.as_bytes()),
        None => Err(std::io::Error::from_raw_os_error(libc::EBADF)),
    });
    match r {
        Ok(n) => n.into_lua_multi(lua),
        Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => 0.into_lua_multi(lua),
        Err(e) => failure(lua, &e),
    }
}

/// `signal(pid, signo, group)` -> true, or a failure.
fn signal(lua: &Lua, (pid, signo, group): (i32, i32, bool)) -> mlua::Result<MultiValue> {
    match children::signal(pid, signo, group) {
        Ok(()) => true.into_lua_multi(lua),
        Err(e) => failure(lua, &e),
    }
}

/// `wait(pid, can_wait)` -> state, status if the child has ended; else, with
/// `can_wait`, a ticket whose outcome (`<state> <status>`) arrives as
/// [`TxMessage::Socket`]; else nothing.
fn wait(lua: &Lua, (pid, can_wait): (i32, bool)) -> mlua::Result<MultiValue> {
    if !can_wait {
        return match children::end_of(pid) {
            Some(end) => end_values(end).into_lua_multi(lua),
            None => Ok(MultiValue::new()),
        };
    }
    let notify = super::socket::tx_notify(lua)?;
    let ticket = super::socket::next_ticket();
    let waiter = Box::new(move |end: End| {
        let (state, status) = end_values(end);
        let reply = Ok(format!("{state} {status}").into_bytes());
        let _ = notify.send(TxMessage::Socket { ticket, reply });
    });
    match children::when_ended(pid, waiter) {
        Waiting::Ended(end) => end_values(end).into_lua_multi(lua),
        Waiting::Registered => (Value::Nil, ticket).into_lua_multi(lua),
        Waiting::Unknown => Ok(MultiValue::new()),
    }
}

/// Builds the `box.internal.popen` table.
pub fn create(lua: &Lua) -> mlua::Result<Table> {
    let t = lua.create_table()?;
    t.set("spawn", lua.create_function(spawn_child)?)?;
    t.set("read", lua.create_function(read)?)?;
    t.set("write", lua.create_function(write)?)?;
    t.set("close", lua.create_function(|_, fd: i32| Ok(PIPES.with_borrow_mut(|p| p.remove(&fd)).is_some()))?)?;
    t.set("signal", lua.create_function(signal)?)?;
    t.set("wait", lua.create_function(wait)?)?;
    t.set(
        "forget",
        lua.create_function(|_, pid: i32| {
            children::forget(pid);
            Ok(())
        })?,
    )?;
    t.set(
        "reap",
        lua.create_function(|_, ()| {
            children::reap();
            Ok(())
        })?,
    )?;
    t.set("exited", mlua::LightUserData(children::EXITED.as_ptr().cast()))?;
    Ok(t)
}
