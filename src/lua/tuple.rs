//! `box.tuple`: a stored tuple seen from Lua, without copying it into a table.
//!
//! `t[n]` is field n (1-based), `t.name` a field by format name, `t['[4][1]']` or
//! `t['name.sub']` a field by JSON path, `#t` the field count; `t:totable()`, `t:unpack()`, `t:tomap()`, `t:bsize()`. Other methods
//! (`find`, `update`, `pairs`...) are Lua functions in `lua/tuple.lua`, found
//! through the [`METHODS`] registry table when no field has the name. Sent back
//! over IPROTO, a tuple is written as its stored bytes.

use std::rc::Rc;

use mlua::{Lua, MetaMethod, MultiValue, UserData, UserDataMethods, Value};

use super::convert;
use crate::engine::space::Space;
use crate::engine::tuple::{field_at, field_count, split, Tuple};
use crate::protocol::msgpack::Reader;

/// Registry key of the table of tuple methods written in Lua.
pub const METHODS: &str = "oncebox.tuple_methods";

/// A tuple with what it keeps of its space ([`TupleFormat`]).
#[derive(Debug, Clone)]
pub struct LuaTuple(pub Tuple, pub Rc<TupleFormat>);

/// What a tuple read from a space keeps of it, as a 2.6 tuple keeps its format:
/// the field names (`t.name`, `t:tomap()`), and the rules a tuple made from it
/// by `t:update()` must keep.
#[derive(Debug, Default)]
pub struct TupleFormat {
    /// The format's field names, in field order.
    pub names: Vec<String>,
    /// The space's definition and its indexes' parts (no entries), when the
    /// tuple came from a space; `None` for `box.tuple.new`.
    pub shape: Option<Space>,
}

/// A format of field names alone, held by Lua (net.box keeps one per remote space)
/// to give the tuples it makes.
#[derive(Debug, Clone)]
pub struct NamedFormat(pub Rc<TupleFormat>);

impl UserData for NamedFormat {}

impl TupleFormat {
    /// The format of `space`'s tuples.
    #[must_use]
    pub fn of(space: &Space) -> Self {
        Self { names: space.def.format.iter().map(|f| f.name.clone()).collect(), shape: Some(space.shape()) }
    }
}

impl LuaTuple {
    fn field(&self, lua: &Lua, n: usize) -> mlua::Result<Value> {
        let Some(i) = n.checked_sub(1) else { return Ok(Value::Nil) };
        match field_at(&self.0, i).map_err(|e| mlua::Error::runtime(e.message))? {
            Some(raw) => convert::decode_tuple_field(lua, &mut Reader::new(raw)),
            None => Ok(Value::Nil),
        }
    }

    fn all(&self, lua: &Lua) -> mlua::Result<Vec<Value>> {
        let fields = split(&self.0).map_err(|e| mlua::Error::runtime(e.message))?;
        fields.iter().map(|raw| convert::decode_tuple_field(lua, &mut Reader::new(raw))).collect()
    }

    /// Fields `from` to `to` (1-based, inclusive; the whole tuple by default).
    fn range(&self, lua: &Lua, from: Option<usize>, to: Option<usize>) -> mlua::Result<Vec<Value>> {
        let all = self.all(lua)?;
        let from = from.unwrap_or(1).max(1);
        let to = to.unwrap_or(all.len()).min(all.len());
        Ok(all.into_iter().skip(from - 1).take((to + 1).saturating_sub(from)).collect())
    }

    /// A field by JSON path: `[2]`, `[4][1]`, `[5].a`, `name.sub`, `name["sub"]`
    /// (`nil` when the path leads nowhere or to a msgpack nil, as in 2.6).
    fn field_by_path(&self, lua: &Lua, path: &str) -> mlua::Result<Value> {
        let Some(mut steps) = path_steps(path) else { return Ok(Value::Nil) };
        let mut value = match steps.remove(0) {
            PathStep::Index(n) => self.field(lua, n)?,
            PathStep::Key(name) => match self.1.names.iter().position(|f| *f == name) {
                Some(i) => self.field(lua, i + 1)?,
                None => return Ok(Value::Nil),
            },
        };
        for step in steps {
            let Value::Table(t) = value else { return Ok(Value::Nil) };
            value = match step {
                PathStep::Index(n) => t.raw_get(n)?,
                PathStep::Key(k) => t.raw_get(k)?,
            };
        }
        Ok(nil_for_null(value))
    }
}

/// `box.NULL` as plain nil; any other value as it is.
fn nil_for_null(v: Value) -> Value {
    if convert::is_null(&v) {
        Value::Nil
    } else {
        v
    }
}

/// One step of a tuple field's JSON path.
#[derive(Debug, PartialEq)]
enum PathStep {
    /// `[n]`: 1-based.
    Index(usize),
    /// `.name`, `["name"]`, or a leading name.
    Key(String),
}

/// The steps of a JSON path, or `None` when it is not one.
fn path_steps(path: &str) -> Option<Vec<PathStep>> {
    let mut steps = Vec::new();
    let mut rest = path;
    while !rest.is_empty() {
        if let Some(inner) = rest.strip_prefix('[') {
            let end = inner.find(']')?;
            let token = inner[..end].trim();
            let step = if let Some(quoted) = token.strip_prefix('"').and_then(|t| t.strip_suffix('"')) {
                PathStep::Key(quoted.to_owned())
            } else {
                PathStep::Index(token.parse::<usize>().ok().filter(|n| *n >= 1)?)
            };
            steps.push(step);
            rest = &inner[end + 1..];
        } else {
            let name = rest.strip_prefix('.').unwrap_or(rest);
            if name.len() == rest.len() && !steps.is_empty() {
                return None;
            }
            let end = name.find(['.', '[']).unwrap_or(name.len());
            if end == 0 {
                return None;
            }
            steps.push(PathStep::Key(name[..end].to_owned()));
            rest = &name[end..];
        }
    }
    (!steps.is_empty()).then_some(steps)
}

/// `totable`, `unpack`, `tomap` and `bsize` of a tuple, for lua/tuple.lua's
/// methods (which check the arguments as 2.6 does): `tuple_totable(t, from, to)`,
/// `tuple_unpack(t, from, to)`, `tuple_tomap(t, names_only)`, `tuple_bsize(t)`.
/// (As methods of the userdata they would be looked up before every field, by
/// mlua, and before a field of the same name, unlike 2.6.)
pub fn add_natives(lua: &Lua, native: &mlua::Table) -> mlua::Result<()> {
    type Range = (mlua::AnyUserData, Option<usize>, Option<usize>);
    native.set("tuple_bsize", lua.create_function(|_, t: mlua::AnyUserData| Ok(t.borrow::<LuaTuple>()?.0.len()))?)?;
    native.set(
        "tuple_totable",
        lua.create_function(|lua, (t, from, to): Range| {
            let this = t.borrow::<LuaTuple>()?;
            // As 2.6: with the msgpack array metatable, so YAML writes it in flow style.
            let table = lua.create_sequence_from(this.range(lua, from, to)?)?;
            table.set_metatable(Some(super::convert::hint_mt(lua, true)?))?;
            Ok(table)
        })?,
    )?;
    native.set(
        "tuple_unpack",
        lua.create_function(|lua, (t, from, to): Range| {
            Ok(MultiValue::from_iter(t.borrow::<LuaTuple>()?.range(lua, from, to)?))
        })?,
    )?;
    native.set(
        "tuple_tomap",
        lua.create_function(|lua, (t, names_only): (mlua::AnyUserData, bool)| {
            let this = t.borrow::<LuaTuple>()?;
            let map = lua.create_table()?;
            for (i, v) in this.all(lua)?.into_iter().enumerate() {
                match this.1.names.get(i) {
                    Some(name) => {
                        if !names_only {
                            map.raw_set(i + 1, v.clone())?;
                        }
                        map.raw_set(name.as_str(), v)?;
                    }
                    // As 2.6: with names_only, an unnamed field is left out.
                    None if !names_only => map.raw_set(i + 1, v)?,
                    None => {}
                }
            }
            Ok(map)
        })?,
    )
}

impl UserData for LuaTuple {
    fn add_methods<M: UserDataMethods<Self>>(methods: &mut M) {
        methods.add_meta_method(MetaMethod::Len, |_, this, ()| Ok(field_count(&this.0).unwrap_or(0)));
        methods.add_meta_method(MetaMethod::Index, |lua, this, key: Value| match key {
            Value::Integer(i) => this.field(lua, usize::try_from(i).unwrap_or(0)),
            #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss, reason = "field numbers are small")]
            Value::Number(n) if n.fract() == 0.0 && n >= 1.0 => this.field(lua, n as usize),
            Value::String(s) => {
                let name = s.to_str()?.to_owned();
                if let Some(i) = this.1.names.iter().position(|f| *f == name) {
                    // By name, a nil field is plain nil (by number it is box.NULL), as in 2.6.
                    return this.field(lua, i + 1).map(nil_for_null);
                }
                if let Some(t) = lua.named_registry_value::<Option<mlua::Table>>(METHODS)? {
                    let method: Value = t.raw_get(name.as_str())?;
                    if !method.is_nil() {
                        return Ok(method);
                    }
                }
                this.field_by_path(lua, &name)
            }
            _ => Ok(Value::Nil),
        });
        // As 2.6's cdata tuples: equal when they are the same stored tuple, not when
        // their fields are equal.
        methods.add_meta_method(MetaMethod::Eq, |_, this, other: mlua::AnyUserData| {
            Ok(other.borrow::<LuaTuple>().is_ok_and(|o| Rc::ptr_eq(&o.0, &this.0)))
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
                    v if convert::is_null(v) => "null".into(),
                    other => other.to_string().unwrap_or_default(),
                })
                .collect();
            Ok(format!("[{}]", parts.join(", ")))
        });
    }
}

#[cfg(test)]
mod tests {
    use super::{path_steps, PathStep};

    #[test]
    fn json_paths_split_into_steps() {
        let key = |s: &str| PathStep::Key(s.to_owned());
        assert_eq!(path_steps("[2]"), Some(vec![PathStep::Index(2)]));
        assert_eq!(path_steps("[4][1]"), Some(vec![PathStep::Index(4), PathStep::Index(1)]));
        assert_eq!(path_steps("[5].a"), Some(vec![PathStep::Index(5), key("a")]));
        assert_eq!(path_steps("x.y[2]"), Some(vec![key("x"), key("y"), PathStep::Index(2)]));
        assert_eq!(path_steps("[5][\"a b\"]"), Some(vec![PathStep::Index(5), key("a b")]));
        for bad in ["", "[0]", "[x]", "[2", "a..b", ".", "[1]x"] {
            assert_eq!(path_steps(bad), None, "{bad}");
        }
    }
}
