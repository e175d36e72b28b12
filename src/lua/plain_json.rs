//! JSON text of plain Lua data, written with LuaJIT's C API in one protected call.
//!
//! `json.encode` is Lua (lua/console.lua's `json_put`, 2.6's lua-cjson rules);
//! most of what it is given is tables of strings, numbers, booleans, `box.NULL`
//! and more such tables, bare or with a `__serialize` hint (what `json.decode`
//! makes). This walk writes those from the Lua stack and gives up, writing
//! nothing, at anything else (a cdata, a userdata, a tuple, a function, a
//! metatable other than a hint, NaN or ±inf, a key that is not a string or an
//! integer, nesting past the options' depth or [`MAX_PLAIN_DEPTH`]): the Lua
//! encoder then writes the whole value, with every rule and error of its own.
//! Where it does write, it writes what that encoder writes, byte for byte.

#![allow(unsafe_code, reason = "LuaJIT's C API over a table pushed for the walk; see the SAFETY notes")]

use std::ffi::c_int;
use std::io::Write as _;

use mlua::{ffi, Table};

use super::convert::null_address;
use super::serializer::Options;
use super::table_shape::{TableShape, MAX_PLAIN_DEPTH};

/// The JSON text of `t` when it is plain data (`None`: the Lua encoder's to write).
/// `precision` is `encode_number_precision` (taken as 14 outside 1 to 14, as 2.6).
///
/// # Errors
/// Lua's own (out of memory).
pub fn encode_table(t: &Table, options: &Options, precision: u32) -> mlua::Result<Option<Vec<u8>>> {
    let Some(lua) = t.weak_lua().try_upgrade() else { return Ok(None) };
    let null = null_address(&lua);
    let precision = if (1..=14).contains(&precision) { precision as usize } else { 14 };
    let mut out = Vec::new();
    let mut written = false;
    // SAFETY: raw_call::exec runs the closure in a protected call with the table alone
    // on its stack (index 1); the walk pops what it pushes and calls no Lua code.
    unsafe {
        super::raw_call::exec::<()>(&lua, t, |state| {
            let walk = Walk { state, shape: TableShape::new(state, options), options, null, precision };
            written = walk.table(&mut out, 1, 0).is_some();
        })?;
    }
    Ok(written.then_some(out))
}

/// One walk: the stack it reads and the options it follows.
struct Walk<'a> {
    state: *mut ffi::lua_State,
    shape: TableShape<'a>,
    options: &'a Options,
    /// Where `box.NULL` is (written as null), if it was made.
    null: Option<usize>,
    /// Significant digits of a fractional number.
    precision: usize,
}

impl Walk<'_> {
    /// Writes the value at stack index `index` (absolute), nested `level` tables
    /// deep; `None` to give up.
    ///
    /// # Safety
    /// `index` is a valid absolute index of `self.state`.
    unsafe fn value(&self, out: &mut Vec<u8>, index: c_int, level: u32) -> Option<()> {
        // SAFETY: as the caller promises; strings are read only when they are strings.
        unsafe {
            match ffi::lua_type(self.state, index) {
                ffi::LUA_TNIL => out.extend_from_slice(b"null"),
                ffi::LUA_TBOOLEAN => {
                    out.extend_from_slice(if ffi::lua_toboolean(self.state, index) != 0 { b"true" } else { b"false" })
                }
                ffi::LUA_TNUMBER => self.number(out, ffi::lua_tonumber(self.state, index))?,
                ffi::LUA_TSTRING => string(out, self.bytes(index)),
                ffi::LUA_TTABLE => self.table(out, index, level)?,
                ffi::LUA_TCDATA if self.null == Some(ffi::lua_topointer(self.state, index) as usize) => {
                    out.extend_from_slice(b"null");
                }
                _ => return None,
            }
        }
        Some(())
    }

    /// The bytes of the string at stack index `index`.
    ///
    /// # Safety
    /// `index` is a valid index of `self.state` holding a string, which stays
    /// there while the bytes are used.
    unsafe fn bytes(&self, index: c_int) -> &[u8] {
        let mut len = 0usize;
        // SAFETY: as the caller promises.
        unsafe {
            let bytes = ffi::lua_tolstring(self.state, index, &raw mut len);
            std::slice::from_raw_parts(bytes.cast::<u8>(), len)
        }
    }

    /// Writes the table at stack index `index` (absolute) as an array or an
    /// object; `None` to give up.
    ///
    /// # Safety
    /// `index` is a valid absolute index of `self.state` holding a table.
    unsafe fn table(&self, out: &mut Vec<u8>, index: c_int, level: u32) -> Option<()> {
        if level >= MAX_PLAIN_DEPTH || level >= self.options.encode_max_depth {
            return None;
        }
        // SAFETY: as the caller promises; every push is popped before returning.
        unsafe {
            if let Some(len) = self.shape.of(index)? {
                out.push(b'[');
                for i in 1..=len {
                    if i > 1 {
                        out.push(b',');
                    }
                    ffi::lua_rawgeti(self.state, index, ffi::lua_Integer::try_from(i).ok()?);
                    let written = self.value(out, ffi::lua_gettop(self.state), level + 1);
                    ffi::lua_pop(self.state, 1);
                    written?;
                }
                out.push(b']');
                return Some(());
            }
            out.push(b'{');
            let mut first = true;
            ffi::lua_pushnil(self.state);
            while ffi::lua_next(self.state, index) != 0 {
                if !first {
                    out.push(b',');
                }
                first = false;
                let top = ffi::lua_gettop(self.state);
                let written = self.key(out, top - 1).and_then(|()| {
                    out.push(b':');
                    self.value(out, top, level + 1)
                });
                if written.is_none() {
                    ffi::lua_pop(self.state, 2);
                    return None;
                }
                ffi::lua_pop(self.state, 1);
            }
            out.push(b'}');
        }
        Some(())
    }

    /// Writes a key as lua-cjson does: a string, or an integer (of int64_t's or
    /// uint64_t's range) in full, quoted; `None` for anything else (refused).
    ///
    /// # Safety
    /// `index` is a valid index of `self.state`.
    unsafe fn key(&self, out: &mut Vec<u8>, index: c_int) -> Option<()> {
        // SAFETY: as the caller promises; a number is read as one, not converted.
        unsafe {
            match ffi::lua_type(self.state, index) {
                ffi::LUA_TSTRING => string(out, self.bytes(index)),
                ffi::LUA_TNUMBER => {
                    let k = ffi::lua_tonumber(self.state, index);
                    if !is_integral(k) {
                        return None;
                    }
                    out.push(b'"');
                    integer(out, k);
                    out.push(b'"');
                }
                _ => return None,
            }
        }
        Some(())
    }

    /// Writes a number as `json_number` does; `None` for NaN and ±inf (the
    /// options decide those).
    fn number(&self, out: &mut Vec<u8>, n: f64) -> Option<()> {
        if !n.is_finite() {
            return None;
        }
        if is_integral(n) {
            integer(out, n);
        } else {
            out.extend_from_slice(crate::printf::format_g(n, self.precision).as_bytes());
        }
        Some(())
    }
}

/// Whether `n` is written as an integer: integral, from -2^63 up to 2^64.
fn is_integral(n: f64) -> bool {
    n.floor() == n && (-9.223_372_036_854_776e18..1.844_674_407_370_955_2e19).contains(&n)
}

/// Writes an integral number in full (`%.0f`), 0 for -0.
fn integer(out: &mut Vec<u8>, n: f64) {
    // (Through an integer type where one holds it: its text is quicker to make.)
    #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss, reason = "integral and within the type's range")]
    let _ = if n == 0.0 {
        write!(out, "0")
    } else if (-9.223_372_036_854_776e18..9.223_372_036_854_776e18).contains(&n) {
        write!(out, "{}", n as i64)
    } else if (0.0..1.844_674_407_370_955_2e19).contains(&n) {
        write!(out, "{}", n as u64)
    } else {
        write!(out, "{n:.0}")
    };
}

/// Writes `bytes` as a JSON string: `"`, `\`, `/` and control bytes escaped as
/// lua-cjson escapes them (`\n` and the like, else `\u00XX`); other bytes as
/// they are (a Lua string need not be UTF-8; the text keeps it whole).
fn string(out: &mut Vec<u8>, bytes: &[u8]) {
    out.push(b'"');
    for &b in bytes {
        match b {
            b'"' => out.extend_from_slice(b"\\\""),
            b'\\' => out.extend_from_slice(b"\\\\"),
            b'/' => out.extend_from_slice(b"\\/"),
            b'\x08' => out.extend_from_slice(b"\\b"),
            b'\x0c' => out.extend_from_slice(b"\\f"),
            b'\n' => out.extend_from_slice(b"\\n"),
            b'\r' => out.extend_from_slice(b"\\r"),
            b'\t' => out.extend_from_slice(b"\\t"),
            0..=0x1f | 0x7f => {
                let _ = write!(out, "\\u{b:04x}");
            }
            _ => out.push(b),
        }
    }
    out.push(b'"');
}
