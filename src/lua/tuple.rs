//! `box.tuple`: a stored tuple seen from Lua, without copying it into a table.
//!
//! `t[n]` is field n (1-based), `t.name` a field by format name, `#t` the field
//! count; `t:totable()`, `t:unpack()`, `t:tomap()`, `t:bsize()`. Other methods
//! (`find`, `update`, `pairs`...) are Lua functions in `lua/tuple.lua`, found
//! through the [`METHODS`] registry table when no field has the name. Sent back
//! over IPROTO, a tuple is written as its stored bytes.

use std::rc::Rc;

use mlua::{Lua, MetaMethod, MultiValue, UserData, UserDataMethods, Value};

use super::convert;
use crate::engine::tuple::{split, Tuple};
use crate::protocol::msgpack::Reader;

/// Registry key of the table of tuple methods written in Lua.
pub const METHODS: &str = "oncebox.tuple_methods";

/// A tuple with the field names of its space's format.
#[derive(Debug, Clone)]
pub struct LuaTuple(pub Tuple, pub Rc<Vec<String>>);

impl LuaTuple {
    fn field(&self, lua: &Lua, n: usize) -> mlua::Result<Value> {
        let fields = split(&self.0).map_err(|e| mlua::Error::runtime(e.message))?;
        match n.checked_sub(1).and_then(|i| fields.get(i)) {
            Some(raw) => convert::decode(lua, &mut Reader::new(raw), 1, false),
            None => Ok(Value::Nil),
        }
    }

    fn all(&self, lua: &Lua) -> mlua::Result<Vec<Value>> {
        let fields = split(&self.0).map_err(|e| mlua::Error::runtime(e.message))?;
        fields.iter().map(|raw| convert::decode(lua, &mut Reader::new(raw), 1, true)).collect()
    }
}

impl UserData for LuaTuple {
    fn add_methods<M: UserDataMethods<Self>>(methods: &mut M) {
        methods.add_method("totable", |lua, this, ()| lua.create_sequence_from(this.all(lua)?));
        methods.add_method("unpack", |lua, this, (from, to): (Option<usize>, Option<usize>)| {
            let all = this.all(lua)?;
            let from = from.unwrap_or(1).max(1);
            let to = to.unwrap_or(all.len()).min(all.len());
            Ok(MultiValue::from_iter(all.into_iter().skip(from - 1).take((to + 1).saturating_sub(from))))
        });
        methods.add_method("tomap", |lua, this, opts: Option<mlua::Table>| {
            let names_only = opts.and_then(|o| o.get::<bool>("names_only").ok()).unwrap_or(false);
            let t = lua.create_table()?;
            for (i, v) in this.all(lua)?.into_iter().enumerate() {
                if !names_only || this.1.get(i).is_none() {
                    t.raw_set(i + 1, v.clone())?;
                }
                if let Some(name) = this.1.get(i) {
                    t.raw_set(name.as_str(), v)?;
                }
            }
            Ok(t)
        });
        methods.add_method("len", |_, this, ()| Ok(split(&this.0).map(|f| f.len()).unwrap_or(0)));
        methods.add_method("bsize", |_, this, ()| Ok(this.0.len()));
        methods.add_meta_method(MetaMethod::Len, |_, this, ()| Ok(split(&this.0).map(|f| f.len()).unwrap_or(0)));
        methods.add_meta_method(MetaMethod::Index, |lua, this, key: Value| match key {
            Value::Integer(i) => this.field(lua, usize::try_from(i).unwrap_or(0)),
            #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss, reason = "field numbers are small")]
            Value::Number(n) if n.fract() == 0.0 && n >= 1.0 => this.field(lua, n as usize),
            Value::String(s) => {
                let name = s.to_str()?.to_owned();
                match this.1.iter().position(|f| *f == name) {
                    Some(i) => this.field(lua, i + 1),
                    None => match lua.named_registry_value::<Option<mlua::Table>>(METHODS)? {
                        Some(t) => t.raw_get(name.as_str()),
                        None => Ok(Value::Nil),
                    },
                }
            }
            _ => Ok(Value::Nil),
        });
        methods.add_meta_method(MetaMethod::Eq, |_, this, other: mlua::AnyUserData| {
            Ok(other.borrow::<LuaTuple>().is_ok_and(|o| o.0[..] == this.0[..]))
        });
        methods.add_meta_method(MetaMethod::ToString, |lua, this, ()| {
            // Lua's rendering (lua/tuple.lua: YAML flow style, as Tarantool), when loaded.
            if let Some(methods) = lua.named_registry_value::<Option<mlua::Table>>(METHODS)? {
                if let Some(f) = methods.raw_get::<Option<mlua::Function>>("__tostring")? {
                    return f.call::<String>(LuaTuple(this.0.clone(), this.1.clone()));
                }
            }
            let parts: Vec<String> = this
                .all(lua)?
                .iter()
                .map(|v| match v {
                    Value::String(s) => format!("'{}'", s.to_string_lossy()),
                    Value::Nil => "null".into(),
                    Value::LightUserData(p) if p.0.is_null() => "null".into(),
                    other => other.to_string().unwrap_or_default(),
                })
                .collect();
            Ok(format!("[{}]", parts.join(", ")))
        });
    }
}
