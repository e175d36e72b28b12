//! The Lua side of functional indexes: calls an index's persistent function
//! with a tuple, for the engine ([`crate::engine::func_index`]).
//!
//! The function is compiled from its `_func` body in 2.6's sandbox by
//! `box.internal.func_index_function` (once per body) and called under `pcall`;
//! what it returns is encoded with msgpack's default options, as 2.6 encodes a
//! Lua function's results.

use std::rc::Rc;

use mlua::{Function, MultiValue, Value};

use super::tuple::{LuaTuple, TupleFormat};
use super::{convert, error_from_value, lua_err, serializer};
use crate::engine::func_index::{KeyFunction, KeyFunctions};
use crate::engine::space::SpaceDef;
use crate::engine::tuple::Tuple;
use crate::error::BoxResult;
use crate::protocol::msgpack::write;

/// Calls key functions in the TX thread's Lua state (held weakly: the
/// runtime owns it).
pub struct LuaKeyFunctions {
    lua: mlua::WeakLua,
}

impl LuaKeyFunctions {
    /// A host for `lua`'s functions.
    #[must_use]
    pub fn new(lua: &mlua::Lua) -> Self {
        Self { lua: lua.weak() }
    }

    fn call_in(
        lua: &mlua::Lua,
        func: &KeyFunction,
        tuple: &Tuple,
        space: &SpaceDef,
    ) -> mlua::Result<BoxResult<Vec<u8>>> {
        let internal: mlua::Table = lua.globals().get::<mlua::Table>("box")?.get("internal")?;
        let compile: Function = internal.get("func_index_function")?;
        let compiled = compile.call::<MultiValue>((func.id, func.name.as_str(), func.body.as_str()))?;
        let mut compiled = compiled.into_iter();
        let f = match (compiled.next(), compiled.next()) {
            (Some(f @ Value::Function(_)), _) => f,
            (_, err) => return Ok(Err(error_from_value(lua, err.unwrap_or(Value::Nil)))),
        };
        let names = space.format.iter().map(|f| f.name.clone()).collect();
        let format = Rc::new(TupleFormat { names, shape: None });
        let arg = Value::UserData(lua.create_userdata(LuaTuple(tuple.clone(), format))?);
        let results = match super::protected_call(lua, &f, vec![arg])? {
            Ok(results) => results,
            Err(e) => return Ok(Err(e)),
        };
        let options = serializer::module_options();
        let mut out = Vec::with_capacity(16);
        #[allow(clippy::cast_possible_truncation, reason = "a Lua function returns far fewer than 2^32 values")]
        write::array_len(&mut out, results.len() as u32);
        for v in &results {
            if let Err(e) = convert::encode_with(&mut out, v, &options) {
                return Ok(Err(lua_err(&e)));
            }
        }
        Ok(Ok(out))
    }
}

impl KeyFunctions for LuaKeyFunctions {
    fn call(&self, func: &KeyFunction, tuple: &Tuple, space: &SpaceDef) -> BoxResult<Vec<u8>> {
        let Some(lua) = self.lua.try_upgrade() else {
            return Err(crate::error::BoxError::new(crate::error::code::PROC_LUA, "the Lua state is closed"));
        };
        Self::call_in(&lua, func, tuple, space).unwrap_or_else(|e| Err(lua_err(&e)))
    }
}
