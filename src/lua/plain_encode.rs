//! msgpack of plain Lua data, written with LuaJIT's C API in one protected call.
//!
//! Most values the encoder is given (a tuple's fields, a CALL's result, what
//! `msgpack.encode` is called with) are tables holding strings, numbers, booleans
//! and more such tables, without metatables or with a `__serialize` hint (what
//! the decoders make). Walking them through mlua's values costs
//! a registry reference per string and table and a protected call per key; this
//! walk reads the stack instead. It gives up, writing nothing, at the first thing
//! that is not plain data (a metatable other than a `seq` or `map` hint, a cdata
//! other than `box.NULL`, a userdata, a
//! function, NaN or ±inf, a table too deep or too sparse for the options): the
//! general encoder ([`super::convert`]) then writes the whole value, with every
//! rule and error of its own. Where it does write, it writes what that encoder
//! writes, byte for byte.

#![allow(unsafe_code, reason = "LuaJIT's C API over a table pushed for the walk; see the SAFETY notes")]

use std::ffi::c_int;

use mlua::{ffi, Table};

use super::convert::null_address;
use super::serializer::Options;
use super::table_shape::{TableShape, MAX_PLAIN_DEPTH};
use crate::protocol::msgpack::write;

/// Writes `t` to `out` when it is plain data: whether it did (when not, `out` is
/// as it was).
pub fn encode_table(out: &mut Vec<u8>, t: &Table, options: &Options) -> mlua::Result<bool> {
    let Some(lua) = t.weak_lua().try_upgrade() else { return Ok(false) };
    let start = out.len();
    let mut written = false;
    let null = null_address(&lua);
    // SAFETY: raw_call::exec runs the closure in a protected call with the table alone
    // on its stack (index 1); the walk pops what it pushes and calls no Lua code,
    // and lua_next and lua_rawgeti over a table nobody changes meanwhile raise
    // nothing.
    unsafe {
        super::raw_call::exec::<()>(&lua, t, |state| {
            written = Walk { state, options, null }.table(out, 1, 0).is_some();
        })?;
    }
    if !written {
        out.truncate(start);
    }
    Ok(written)
}

/// One walk: the stack it reads and the options it follows.
struct Walk<'a> {
    state: *mut ffi::lua_State,
    options: &'a Options,
    /// Where `box.NULL` is (written as nil), if it was made.
    null: Option<usize>,
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
                ffi::LUA_TNIL => write::nil(out),
                ffi::LUA_TBOOLEAN => write::bool(out, ffi::lua_toboolean(self.state, index) != 0),
                ffi::LUA_TNUMBER => number(out, ffi::lua_tonumber(self.state, index))?,
                ffi::LUA_TSTRING => {
                    let mut len = 0usize;
                    let bytes = ffi::lua_tolstring(self.state, index, &raw mut len);
                    write::str(out, std::slice::from_raw_parts(bytes.cast::<u8>(), len));
                }
                ffi::LUA_TTABLE => self.table(out, index, level)?,
                ffi::LUA_TCDATA if self.null == Some(ffi::lua_topointer(self.state, index) as usize) => write::nil(out),
                _ => return None,
            }
        }
        Some(())
    }

    /// Writes the table at stack index `index` (absolute) as an array or a map,
    /// as [`super::convert`] decides without a hint; `None` to give up.
    ///
    /// # Safety
    /// `index` is a valid absolute index of `self.state` holding a table.
    unsafe fn table(&self, out: &mut Vec<u8>, index: c_int, level: u32) -> Option<()> {
        if level >= MAX_PLAIN_DEPTH || level >= self.options.encode_max_depth {
            return None;
        }
        // SAFETY: as the caller promises; every push is popped before returning.
        unsafe {
            if let Some(len) = TableShape::new(self.state, self.options).of(index)? {
                write::array_len(out, u32::try_from(len).ok()?);
                for i in 1..=len {
                    ffi::lua_rawgeti(self.state, index, ffi::lua_Integer::try_from(i).ok()?);
                    let written = self.value(out, ffi::lua_gettop(self.state), level + 1);
                    ffi::lua_pop(self.state, 1);
                    written?;
                }
                return Some(());
            }
            let mut body = Vec::new();
            let mut count = 0u32;
            ffi::lua_pushnil(self.state);
            while ffi::lua_next(self.state, index) != 0 {
                let top = ffi::lua_gettop(self.state);
                let written =
                    self.value(&mut body, top - 1, level + 1).and_then(|()| self.value(&mut body, top, level + 1));
                if written.is_none() {
                    ffi::lua_pop(self.state, 2);
                    return None;
                }
                ffi::lua_pop(self.state, 1);
                count += 1;
            }
            write::map_len(out, count);
            out.extend_from_slice(&body);
        }
        Some(())
    }
}

/// Writes a Lua number as the general encoder writes the value mlua makes of it:
/// an integer when it is one exactly (not -0), else through `convert::number`;
/// `None` for NaN and ±inf (the options decide those).
fn number(out: &mut Vec<u8>, n: f64) -> Option<()> {
    if !n.is_finite() {
        return None;
    }
    #[allow(clippy::cast_possible_truncation, clippy::cast_precision_loss, reason = "checked by the round trip")]
    let exact = n.fract() == 0.0 && (-9.223_372_036_854_776e18..9.223_372_036_854_776e18).contains(&n) && {
        let i = n as i64;
        (i as f64).to_bits() == n.to_bits()
    };
    if exact {
        #[allow(clippy::cast_possible_truncation, reason = "exact, checked above")]
        write::int(out, n as i64);
    } else {
        super::convert::number(out, n);
    }
    Some(())
}
