//! `json.decode`'s Lua side: [`super::json_decode`]'s values built as Lua values,
//! as 2.6's lua-cjson builds them (tables grown member by member, `null` as
//! `box.NULL`, large integers as 64-bit cdata, the decoded kind kept in a
//! `__serialize` metatable under `decode_save_metatables`).

#![allow(unsafe_code, reason = "StackSink: LuaJIT's C API over the values it pushes; see the SAFETY notes")]

use std::ffi::c_int;

use mlua::{ffi, Lua, Table, Value};

use super::convert;
use super::json_decode::{self, DecodeError, Integer, Sink};

/// Builds Lua values.
struct LuaSink<'l> {
    lua: &'l Lua,
    null: Value,
    /// The map and array metatables, under `decode_save_metatables`.
    hints: Option<(Table, Table)>,
}

impl Sink for LuaSink<'_> {
    type Value = Value;
    type Table = Table;
    type Error = mlua::Error;

    fn string(&mut self, bytes: &[u8]) -> mlua::Result<Value> {
        Ok(Value::String(self.lua.create_string(bytes)?))
    }
    fn number(&mut self, n: f64) -> mlua::Result<Value> {
        Ok(Value::Number(n))
    }
    fn integer(&mut self, n: Integer) -> mlua::Result<Value> {
        match n {
            #[allow(clippy::cast_precision_loss, reason = "below 10^14: exact")]
            Integer::Small(i) => Ok(Value::Number(i as f64)),
            Integer::Signed64(i) => convert::big_integer(self.lua, true, i.cast_unsigned()),
            Integer::Unsigned64(u) => convert::big_integer(self.lua, false, u),
        }
    }
    fn boolean(&mut self, b: bool) -> mlua::Result<Value> {
        Ok(Value::Boolean(b))
    }
    fn null(&mut self) -> mlua::Result<Value> {
        Ok(self.null.clone())
    }
    fn table(&mut self, array: bool) -> mlua::Result<Table> {
        let t = self.lua.create_table()?;
        if let Some((map_mt, array_mt)) = &self.hints {
            t.set_metatable(Some(if array { array_mt.clone() } else { map_mt.clone() }))?;
        }
        Ok(t)
    }
    fn set_field(&mut self, t: &Table, key: &[u8], v: Value) -> mlua::Result<()> {
        t.raw_set(self.lua.create_string(key)?, v)
    }
    fn set_index(&mut self, t: &Table, index: usize, v: Value) -> mlua::Result<()> {
        t.raw_set(index, v)
    }
    fn finish(&mut self, t: Table) -> Value {
        Value::Table(t)
    }
}

/// Builds Lua values on the Lua stack with LuaJIT's C API, inside one protected
/// call (no registry reference or protected call per value, as [`LuaSink`] pays):
/// each value is pushed, a table stays where it was pushed until it is finished.
/// It gives up ([`GiveUp`]) on a 64-bit integer (a cdata, made by Lua code) and
/// when the stack cannot grow; [`LuaSink`] then decodes the text.
struct StackSink {
    state: *mut ffi::lua_State,
    /// Stack indexes of `box.NULL` and, under `decode_save_metatables`, of the
    /// map and array metatables.
    null: c_int,
    hints: Option<(c_int, c_int)>,
}

/// Why [`StackSink`] stopped.
struct GiveUp;

impl Sink for StackSink {
    type Value = ();
    type Table = c_int;
    type Error = GiveUp;

    fn string(&mut self, bytes: &[u8]) -> Result<(), GiveUp> {
        self.room(1)?;
        // SAFETY: in the protected call, with room for one more value.
        unsafe { ffi::lua_pushlstring(self.state, bytes.as_ptr().cast(), bytes.len()) };
        Ok(())
    }
    fn number(&mut self, n: f64) -> Result<(), GiveUp> {
        self.room(1)?;
        // SAFETY: as in `string`.
        unsafe { ffi::lua_pushnumber(self.state, n) };
        Ok(())
    }
    fn integer(&mut self, n: Integer) -> Result<(), GiveUp> {
        match n {
            #[allow(clippy::cast_precision_loss, reason = "below 10^14: exact")]
            Integer::Small(i) => self.number(i as f64),
            Integer::Signed64(_) | Integer::Unsigned64(_) => Err(GiveUp),
        }
    }
    fn boolean(&mut self, b: bool) -> Result<(), GiveUp> {
        self.room(1)?;
        // SAFETY: as in `string`.
        unsafe { ffi::lua_pushboolean(self.state, c_int::from(b)) };
        Ok(())
    }
    fn null(&mut self) -> Result<(), GiveUp> {
        self.room(1)?;
        // SAFETY: as in `string`; `self.null` is a valid index.
        unsafe { ffi::lua_pushvalue(self.state, self.null) };
        Ok(())
    }
    fn table(&mut self, array: bool) -> Result<c_int, GiveUp> {
        // The table, and a key and a value above it while it is filled.
        self.room(3)?;
        // SAFETY: as in `string`; the hint indexes are valid.
        unsafe {
            ffi::lua_createtable(self.state, 0, 0);
            if let Some((map_mt, array_mt)) = self.hints {
                ffi::lua_pushvalue(self.state, if array { array_mt } else { map_mt });
                ffi::lua_setmetatable(self.state, -2);
            }
            Ok(ffi::lua_gettop(self.state))
        }
    }
    fn set_field(&mut self, t: &c_int, key: &[u8], (): ()) -> Result<(), GiveUp> {
        // SAFETY: the value is on top, the table at `t` below it; the key goes
        // under the value, and both are taken by the raw set (a string key).
        unsafe {
            ffi::lua_pushlstring(self.state, key.as_ptr().cast(), key.len());
            ffi::lua_insert(self.state, -2);
            ffi::lua_rawset(self.state, *t);
        }
        Ok(())
    }
    fn set_index(&mut self, t: &c_int, index: usize, (): ()) -> Result<(), GiveUp> {
        let index = ffi::lua_Integer::try_from(index).map_err(|_| GiveUp)?;
        // SAFETY: the value is on top, the table at `t` below it.
        unsafe { ffi::lua_rawseti(self.state, *t, index) };
        Ok(())
    }
    fn finish(&mut self, _: c_int) {}
}

impl StackSink {
    /// Makes room for `n` more values on the stack, or gives up.
    fn room(&self, n: c_int) -> Result<(), GiveUp> {
        // SAFETY: in the protected call.
        if unsafe { ffi::lua_checkstack(self.state, n) } == 0 {
            return Err(GiveUp);
        }
        Ok(())
    }
}

/// `json.decode`'s options (its call's or its serializer's).
#[derive(Debug, Clone, Copy)]
pub struct DecodeOptions {
    /// `decode_max_depth`.
    pub max_depth: usize,
    /// `decode_invalid_numbers`: `nan` and `inf` read as numbers.
    pub invalid_numbers: bool,
    /// `decode_save_metatables`: objects and arrays get the hint metatables.
    pub save_metatables: bool,
}

/// `json.decode`'s reader for one Lua state: what it gives every decoded text,
/// looked up once.
pub struct Decoder {
    null: Value,
    map_mt: Table,
    array_mt: Table,
}

impl Decoder {
    /// The decoder of `lua`'s state.
    pub fn new(lua: &Lua) -> mlua::Result<Self> {
        Ok(Decoder {
            null: convert::null(lua)?,
            map_mt: convert::hint_mt(lua, false)?,
            array_mt: convert::hint_mt(lua, true)?,
        })
    }

    /// Decodes `text` as `json.decode` with these options does, or gives 2.6's
    /// message for why not; the outer error is Lua's own (out of memory).
    pub fn decode(&self, lua: &Lua, text: &[u8], options: DecodeOptions) -> mlua::Result<Result<Value, String>> {
        if let Some(decoded) = self.decode_on_stack(lua, text, options)? {
            return Ok(decoded);
        }
        let hints = options.save_metatables.then(|| (self.map_mt.clone(), self.array_mt.clone()));
        let mut sink = LuaSink { lua, null: self.null.clone(), hints };
        match json_decode::decode(text, options.max_depth, options.invalid_numbers, &mut sink) {
            Ok(v) => Ok(Ok(v)),
            Err(DecodeError::Refused(message)) => Ok(Err(message)),
            Err(DecodeError::Sink(e)) => Err(e),
        }
    }

    /// [`Self::decode`] through a [`StackSink`]; `None` when it gave up.
    fn decode_on_stack(
        &self,
        lua: &Lua,
        text: &[u8],
        options: DecodeOptions,
    ) -> mlua::Result<Option<Result<Value, String>>> {
        let mut outcome = None;
        // SAFETY: raw_call::exec runs the closure in a protected call with box.NULL and
        // the two metatables on its stack (indexes 1 to 3); the sink pushes above
        // them and calls no Lua code. What is left is the value alone, or nothing.
        let value: Value = unsafe {
            super::raw_call::exec(lua, (&self.null, &self.map_mt, &self.array_mt), |state| {
                let mut sink = StackSink { state, null: 1, hints: options.save_metatables.then_some((2, 3)) };
                outcome = match json_decode::decode(text, options.max_depth, options.invalid_numbers, &mut sink) {
                    Ok(()) => {
                        ffi::lua_replace(state, 1);
                        ffi::lua_settop(state, 1);
                        Some(Ok(()))
                    }
                    Err(DecodeError::Refused(message)) => {
                        ffi::lua_settop(state, 0);
                        Some(Err(message))
                    }
                    Err(DecodeError::Sink(GiveUp)) => {
                        ffi::lua_settop(state, 0);
                        None
                    }
                };
            })?
        };
        Ok(outcome.map(|o| o.map(|()| value)))
    }
}
