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

use super::convert::{array_index, null_address, too_sparse};
use super::serializer::Options;
use crate::protocol::msgpack::write;

/// Tables nested deeper than this are left to the general encoder (its own
/// limits and errors apply there); the walk's recursion stays small.
const MAX_PLAIN_DEPTH: u32 = 64;

/// Writes `t` to `out` when it is plain data: whether it did (when not, `out` is
/// as it was).
pub fn encode_table(out: &mut Vec<u8>, t: &Table, options: &Options) -> mlua::Result<bool> {
    let Some(lua) = t.weak_lua().try_upgrade() else { return Ok(false) };
    let start = out.len();
    let mut written = false;
    let null = null_address(&lua);
    // SAFETY: exec_raw runs the closure in a protected call with the table alone
    // on its stack (index 1); the walk pops what it pushes and calls no Lua code,
    // and lua_next and lua_rawgeti over a table nobody changes meanwhile raise
    // nothing.
    unsafe {
        lua.exec_raw::<()>(t, |state| {
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
            if ffi::lua_checkstack(self.state, 4) == 0 {
                return None;
            }
            let shape = if ffi::lua_getmetatable(self.state, index) != 0 {
                let hint = self.hint();
                ffi::lua_pop(self.state, 1);
                match hint? {
                    Hint::None => self.array_len(index)?,
                    Hint::Array => Some(self.greatest_index(index)?),
                    Hint::Map => None,
                }
            } else {
                self.array_len(index)?
            };
            if let Some(len) = shape {
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

    /// What the metatable on top of the stack says of its table's shape, as the
    /// general encoder reads it: `None` to give up (a fiber's or an error's, a
    /// `__serialize` function or a value the encoder refuses).
    ///
    /// # Safety
    /// The top of `self.state`'s stack is a table.
    unsafe fn hint(&self) -> Option<Hint> {
        // SAFETY: as the caller promises; each field read is popped.
        unsafe {
            for marker in ["__fiber", "__box_error"] {
                self.raw_field(marker);
                let marked = ffi::lua_toboolean(self.state, -1) != 0;
                ffi::lua_pop(self.state, 1);
                if marked {
                    return None;
                }
            }
            if !self.options.encode_load_metatables {
                return Some(Hint::None);
            }
            self.raw_field("__serialize");
            let hint = match ffi::lua_type(self.state, -1) {
                ffi::LUA_TNIL => Some(Hint::None),
                ffi::LUA_TSTRING => {
                    let mut len = 0usize;
                    let bytes = ffi::lua_tolstring(self.state, -1, &raw mut len);
                    match std::slice::from_raw_parts(bytes.cast::<u8>(), len) {
                        b"seq" | b"sequence" | b"array" => Some(Hint::Array),
                        b"map" | b"mapping" => Some(Hint::Map),
                        _ => None,
                    }
                }
                _ => None,
            };
            ffi::lua_pop(self.state, 1);
            hint
        }
    }

    /// Pushes field `name` of the table on top, read raw (no metamethod runs).
    ///
    /// # Safety
    /// The top of `self.state`'s stack is a table, with room for two more values.
    unsafe fn raw_field(&self, name: &str) {
        // SAFETY: as the caller promises.
        unsafe {
            ffi::lua_pushlstring(self.state, name.as_ptr().cast(), name.len());
            ffi::lua_rawget(self.state, -2);
        }
    }

    /// A `seq`-hinted table's length as the general encoder takes it: its
    /// greatest positive integer key (holes are nils); `None` to give up when
    /// that is far more than the keys it has (the general encoder writes it).
    ///
    /// # Safety
    /// `index` is a valid absolute index of `self.state` holding a table.
    unsafe fn greatest_index(&self, index: c_int) -> Option<usize> {
        let (mut count, mut max) = (0usize, 0usize);
        // SAFETY: as the caller promises; lua_next's pairs are popped as they are read.
        unsafe {
            ffi::lua_pushnil(self.state);
            while ffi::lua_next(self.state, index) != 0 {
                ffi::lua_pop(self.state, 1);
                count += 1;
                if ffi::lua_type(self.state, -1) == ffi::LUA_TNUMBER {
                    let k = ffi::lua_tonumber(self.state, -1);
                    #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss, reason = "integral, 1 to 2^32")]
                    if k >= 1.0 && k.fract() == 0.0 && k <= f64::from(u32::MAX) {
                        max = max.max(k as usize);
                    } else if k > f64::from(u32::MAX) && k.fract() == 0.0 {
                        ffi::lua_pop(self.state, 1);
                        return None;
                    }
                }
            }
        }
        (max <= count.saturating_mul(4).max(64)).then_some(max)
    }

    /// The table's length as an array (`Some(None)`: a map), as the general
    /// encoder's `table_shape` decides it; `None` to give up (too sparse for an
    /// array when the options refuse to make it a map: the general encoder raises).
    ///
    /// # Safety
    /// `index` is a valid absolute index of `self.state` holding a table.
    unsafe fn array_len(&self, index: c_int) -> Option<Option<usize>> {
        let (mut count, mut max) = (0usize, 0usize);
        // SAFETY: as the caller promises; lua_next's pairs are popped as they are
        // read, the key too when the walk stops early.
        unsafe {
            ffi::lua_pushnil(self.state);
            while ffi::lua_next(self.state, index) != 0 {
                ffi::lua_pop(self.state, 1);
                count += 1;
                let key =
                    (ffi::lua_type(self.state, -1) == ffi::LUA_TNUMBER).then(|| ffi::lua_tonumber(self.state, -1));
                let Some(greatest) = key.and_then(|k| array_index(k, count, max)) else {
                    ffi::lua_pop(self.state, 1);
                    return Some(None);
                };
                max = greatest;
            }
        }
        if too_sparse(self.options, count, max) {
            return self.options.encode_sparse_convert.then_some(None);
        }
        Some(Some(max))
    }
}

/// A table's shape as its metatable's `__serialize` names it.
enum Hint {
    /// No hint: decided by its keys.
    None,
    /// `seq`, `sequence` or `array`.
    Array,
    /// `map` or `mapping`.
    Map,
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
