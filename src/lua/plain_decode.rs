//! msgpack arrays and maps of plain data made into Lua tables with LuaJIT's C
//! API, in one protected call.
//!
//! The general decoder ([`super::convert`]) makes every string and table an mlua
//! value (a registry reference each) and sets each member with a protected call.
//! This walk builds the tables on the Lua stack instead. It gives up, leaving
//! nothing behind, at the first thing it does not make itself (an extension
//! value, an integer that 2.6 gives as a 64-bit cdata, NaN or ±inf the options
//! refuse, NaN as a key, nesting deeper than [`MAX_PLAIN_DEPTH`], bytes that are
//! not msgpack): the general decoder then decodes the whole value, with every
//! rule and error of its own. Where it does decode, it makes what that decoder
//! makes: the same values, tables sized the same way, the same hint metatables.

#![allow(unsafe_code, reason = "LuaJIT's C API over the values the walk pushes; see the SAFETY notes")]

use std::ffi::c_int;

use mlua::{ffi, Lua, Value};

use super::convert::{BIG_INTEGER, MAP_MT_KEY, NULL_KEY, SEQ_MT_KEY};
use super::serializer::Options;
use crate::protocol::msgpack::{Integer, MpType, Reader};

/// Tables nested deeper than this are left to the general decoder (its own
/// limit and error apply there); the walk's recursion stays small.
const MAX_PLAIN_DEPTH: usize = 64;

/// Members a table is sized for at most before its first member is read (as
/// the general decoder: a length field cannot make it allocate without bound).
const MAX_PRESIZE: u32 = 1 << 16;

/// How decoded tables are made. Lua's `pairs()` order depends on it: a map
/// `{1: a, 20: b}` in a table sized for two keys iterates 20 first, in one grown
/// key by key 1 first (1 moves to the array part when the table grows).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Sizing {
    /// Sized for their members first, as 2.6's C decoder (`msgpack.decode`, call
    /// arguments, net.box replies).
    Presized,
    /// Empty at first, as 2.6's msgpackffi decoder.
    Grown,
}

/// Decodes the array or map `r` is at, moving `r` past it; `None` (`r` where it
/// was) when the walk gave up or the next value is not an array or a map.
///
/// # Errors
/// Lua's own (out of memory).
pub fn decode(lua: &Lua, r: &mut Reader<'_>, options: &Options, sizing: Sizing) -> mlua::Result<Option<Value>> {
    if !matches!(r.peek_type(), Ok(MpType::Array | MpType::Map)) {
        return Ok(None);
    }
    let mut finished = None;
    // SAFETY: raw_call::exec runs the closure in a protected call on an empty stack;
    // the walk leaves exactly one value on it when it finishes and nothing when
    // it gives up, and calls no Lua code (raw sets, no metamethods).
    let value: Value = unsafe {
        super::raw_call::exec(lua, (), |state| {
            let mut walk = Walk { state, options, sizing, reader: r.clone() };
            if walk.value(0).is_some() {
                finished = Some(walk.reader);
            } else {
                ffi::lua_settop(state, 0);
            }
        })?
    };
    Ok(finished.map(|end| {
        *r = end;
        value
    }))
}

/// One walk: the stack it pushes on, the options it follows and the bytes it reads.
struct Walk<'a, 'd> {
    state: *mut ffi::lua_State,
    options: &'a Options,
    sizing: Sizing,
    reader: Reader<'d>,
}

impl Walk<'_, '_> {
    /// Pushes the next value, nested `depth` tables deep; `None` to give up
    /// (what it pushed is left for the caller to drop).
    ///
    /// # Safety
    /// `self.state` is a Lua state inside a protected call.
    unsafe fn value(&mut self, depth: usize) -> Option<()> {
        let r = &mut self.reader;
        // SAFETY: as the caller promises; each branch pushes one value.
        unsafe {
            match r.peek_type().ok()? {
                MpType::Nil => {
                    r.read_nil().ok()?;
                    self.push_registry(NULL_KEY)?;
                }
                MpType::Bool => ffi::lua_pushboolean(self.state, c_int::from(r.read_bool().ok()?)),
                MpType::Uint | MpType::Int => {
                    #[allow(clippy::cast_precision_loss, reason = "below BIG_INTEGER: exact")]
                    let n = match r.read_integer().ok()? {
                        Integer::Unsigned(u) if u < BIG_INTEGER => u as f64,
                        Integer::Negative(i) if i > -BIG_INTEGER.cast_signed() => i as f64,
                        _ => return None,
                    };
                    ffi::lua_pushnumber(self.state, n);
                }
                MpType::Float | MpType::Double => {
                    let n = r.read_f64().ok()?;
                    if !n.is_finite() && !self.options.decode_invalid_numbers {
                        return None;
                    }
                    ffi::lua_pushnumber(self.state, n);
                }
                MpType::Str => push_bytes(self.state, r.read_str().ok()?),
                MpType::Bin => push_bytes(self.state, r.read_bin().ok()?),
                MpType::Ext => return None,
                MpType::Array => self.array(depth)?,
                MpType::Map => self.map(depth)?,
            }
        }
        Some(())
    }

    /// Pushes the array that comes next as a table.
    ///
    /// # Safety
    /// As [`Self::value`].
    unsafe fn array(&mut self, depth: usize) -> Option<()> {
        let n = self.reader.read_array_len().ok()?;
        // SAFETY: as the caller promises; the table stays at `table` while its
        // members are pushed above it and set one by one.
        unsafe {
            self.new_table(depth, n, 0)?;
            let table = ffi::lua_gettop(self.state);
            for i in 1..=n {
                self.value(depth + 1)?;
                ffi::lua_rawseti(self.state, table, ffi::lua_Integer::from(i));
            }
            self.set_hint(SEQ_MT_KEY)
        }
    }

    /// Pushes the map that comes next as a table.
    ///
    /// # Safety
    /// As [`Self::value`].
    unsafe fn map(&mut self, depth: usize) -> Option<()> {
        let n = self.reader.read_map_len().ok()?;
        // SAFETY: as the caller promises; each key and value is pushed above the
        // table and set (raw: NaN is refused first, nil is never a key here, as
        // msgpack's nil is box.NULL).
        unsafe {
            self.new_table(depth, 0, n)?;
            let table = ffi::lua_gettop(self.state);
            for _ in 0..n {
                self.value(depth + 1)?;
                if ffi::lua_type(self.state, -1) == ffi::LUA_TNUMBER && ffi::lua_tonumber(self.state, -1).is_nan() {
                    return None;
                }
                self.value(depth + 1)?;
                ffi::lua_rawset(self.state, table);
            }
            self.set_hint(MAP_MT_KEY)
        }
    }

    /// Pushes an empty table for `narr` array and `nrec` map members, sized as
    /// [`Sizing`] says; `None` when nested too deep or the stack cannot grow.
    ///
    /// # Safety
    /// As [`Self::value`].
    unsafe fn new_table(&self, depth: usize, narr: u32, nrec: u32) -> Option<()> {
        if depth >= MAX_PLAIN_DEPTH {
            return None;
        }
        let size = |n: u32| match self.sizing {
            Sizing::Presized => c_int::try_from(n.min(MAX_PRESIZE)).unwrap_or(0),
            Sizing::Grown => 0,
        };
        // SAFETY: as the caller promises; room for the table, a key and a value.
        unsafe {
            if ffi::lua_checkstack(self.state, 4) == 0 {
                return None;
            }
            ffi::lua_createtable(self.state, size(narr), size(nrec));
        }
        Some(())
    }

    /// Gives the table on top the hint metatable under registry key `key`, when
    /// the options save metatables.
    ///
    /// # Safety
    /// As [`Self::value`], with a table on top.
    unsafe fn set_hint(&self, key: &str) -> Option<()> {
        if self.options.decode_save_metatables {
            // SAFETY: as the caller promises.
            unsafe {
                self.push_registry(key)?;
                ffi::lua_setmetatable(self.state, -2);
            }
        }
        Some(())
    }

    /// Pushes the registry's value under `key`; `None` (nothing pushed) when
    /// there is none yet (the general decoder makes it).
    ///
    /// # Safety
    /// As [`Self::value`].
    unsafe fn push_registry(&self, key: &str) -> Option<()> {
        // SAFETY: as the caller promises.
        unsafe {
            push_bytes(self.state, key.as_bytes());
            ffi::lua_rawget(self.state, ffi::LUA_REGISTRYINDEX);
            if ffi::lua_type(self.state, -1) == ffi::LUA_TNIL {
                ffi::lua_pop(self.state, 1);
                return None;
            }
        }
        Some(())
    }
}

/// Pushes `bytes` as a Lua string.
///
/// # Safety
/// `state` is a Lua state inside a protected call.
unsafe fn push_bytes(state: *mut ffi::lua_State, bytes: &[u8]) {
    // SAFETY: as the caller promises; Lua copies the bytes.
    unsafe {
        ffi::lua_pushlstring(state, bytes.as_ptr().cast(), bytes.len());
    }
}
