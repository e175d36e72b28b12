//! `json.decode`'s Lua side: [`super::json_decode`]'s values built as Lua values,
//! as 2.6's lua-cjson builds them (tables grown member by member, `null` as
//! `box.NULL`, large integers as 64-bit cdata, the decoded kind kept in a
//! `__serialize` metatable under `decode_save_metatables`).

use mlua::{Lua, Table, Value};

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
    pub fn decode(
        &self,
        lua: &Lua,
        text: &[u8],
        max_depth: usize,
        invalid_numbers: bool,
        save_metatables: bool,
    ) -> mlua::Result<Result<Value, String>> {
        let hints = save_metatables.then(|| (self.map_mt.clone(), self.array_mt.clone()));
        let mut sink = LuaSink { lua, null: self.null.clone(), hints };
        match json_decode::decode(text, max_depth, invalid_numbers, &mut sink) {
            Ok(v) => Ok(Ok(v)),
            Err(DecodeError::Refused(message)) => Ok(Err(message)),
            Err(DecodeError::Sink(e)) => Err(e),
        }
    }
}
