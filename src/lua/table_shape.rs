//! A Lua table's shape as msgpack or JSON (an array of some length, or a map),
//! read off the Lua stack for the walks that write plain data
//! ([`super::plain_encode`], [`super::plain_json`]), by the rules the general
//! encoders follow (2.6's `luaL_tofield`): a `__serialize` hint, else the keys.

#![allow(unsafe_code, reason = "LuaJIT's C API over a table on the stack; see the SAFETY notes")]

use std::ffi::c_int;

use mlua::ffi;

use super::convert::{array_index, too_sparse};
use super::serializer::Options;

/// Tables nested deeper than this are left to the general encoders (their own
/// limits and errors apply there); the walks' recursion stays small.
pub const MAX_PLAIN_DEPTH: u32 = 64;

/// Reads tables' shapes on one Lua stack under one set of options.
pub struct TableShape<'a> {
    state: *mut ffi::lua_State,
    options: &'a Options,
}

impl<'a> TableShape<'a> {
    /// Shapes read on `state` under `options`.
    pub fn new(state: *mut ffi::lua_State, options: &'a Options) -> Self {
        Self { state, options }
    }

    /// The shape of the table at stack index `index` (absolute): `Some(Some(n))` an
    /// array of `n`, `Some(None)` a map; `None` to give up (a metatable the walks
    /// leave to the general encoders, a table too sparse for the options, no room
    /// on the stack).
    ///
    /// # Safety
    /// `index` is a valid absolute index of `self.state` holding a table.
    pub unsafe fn of(&self, index: c_int) -> Option<Option<usize>> {
        // SAFETY: as the caller promises; the metatable is popped after its read.
        unsafe {
            if ffi::lua_checkstack(self.state, 4) == 0 {
                return None;
            }
            if ffi::lua_getmetatable(self.state, index) == 0 {
                return self.array_len(index);
            }
            let hint = self.hint();
            ffi::lua_pop(self.state, 1);
            match hint? {
                Hint::None => self.array_len(index),
                Hint::Array => Some(Some(self.greatest_index(index)?)),
                Hint::Map => Some(None),
            }
        }
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
            // (Its fields could come from its own metatable, which Lua's encoders read.)
            if ffi::lua_getmetatable(self.state, -1) != 0 {
                ffi::lua_pop(self.state, 1);
                return None;
            }
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
        // SAFETY: as the caller promises.
        let whole = unsafe {
            self.each_key(index, |key| {
                count += 1;
                match key {
                    #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss, reason = "integral, 1 to 2^32")]
                    Some(k) if k >= 1.0 && k.fract() == 0.0 && k <= f64::from(u32::MAX) => {
                        max = max.max(k as usize);
                        true
                    }
                    Some(k) => !(k > f64::from(u32::MAX) && k.fract() == 0.0),
                    None => true,
                }
            })
        };
        (whole && max <= count.saturating_mul(4).max(64)).then_some(max)
    }

    /// The table's length as an array (`Some(None)`: a map), as the general
    /// encoder's `table_shape` decides it; `None` to give up (too sparse for an
    /// array when the options refuse to make it a map: the general encoder raises).
    ///
    /// # Safety
    /// `index` is a valid absolute index of `self.state` holding a table.
    unsafe fn array_len(&self, index: c_int) -> Option<Option<usize>> {
        let (mut count, mut max) = (0usize, 0usize);
        // SAFETY: as the caller promises.
        let array = unsafe {
            self.each_key(index, |key| {
                count += 1;
                match key.and_then(|k| array_index(k, count, max)) {
                    Some(greatest) => {
                        max = greatest;
                        true
                    }
                    None => false,
                }
            })
        };
        if !array {
            return Some(None);
        }
        if too_sparse(self.options, count, max) {
            return self.options.encode_sparse_convert.then_some(None);
        }
        Some(Some(max))
    }

    /// Hands `visit` each key of the table at `index` (its value if a number,
    /// else `None`) until it says stop (false); whether it saw them all.
    ///
    /// # Safety
    /// `index` is a valid absolute index of `self.state` holding a table.
    unsafe fn each_key(&self, index: c_int, mut visit: impl FnMut(Option<f64>) -> bool) -> bool {
        // SAFETY: as the caller promises; lua_next's pairs are popped as they are
        // read, the key too when the visit stops early.
        unsafe {
            ffi::lua_pushnil(self.state);
            while ffi::lua_next(self.state, index) != 0 {
                ffi::lua_pop(self.state, 1);
                let key =
                    (ffi::lua_type(self.state, -1) == ffi::LUA_TNUMBER).then(|| ffi::lua_tonumber(self.state, -1));
                if !visit(key) {
                    ffi::lua_pop(self.state, 1);
                    return false;
                }
            }
        }
        true
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
