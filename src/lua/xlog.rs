//! `box.internal.xlog.open(path)`: a cursor over the rows of a Tarantool log
//! file ([`crate::tarantool_xlog`]), which lua/xlog.lua turns into 2.6's
//! `xlog.pairs` records.

use std::collections::VecDeque;

use mlua::{IntoLuaMulti, Lua, MultiValue, Table, UserData, UserDataMethods, Value};

use crate::protocol::msgpack::Reader;
use crate::tarantool_xlog::{parse_meta, Row, Transactions};

/// An open file being read, a transaction at a time.
struct XlogCursor {
    transactions: Transactions,
    /// Rows of the transaction read last, not yet handed out.
    rows: VecDeque<Row>,
}

impl UserData for XlogCursor {
    fn add_methods<M: UserDataMethods<Self>>(methods: &mut M) {
        // The next row: its header map as msgpack, and its body (nil for a NOP) as a
        // list {key, value msgpack, ...} in the map's order (empty if not a map of
        // integer keys); nothing at the end.
        methods.add_method_mut("next", |lua, this, ()| {
            while this.rows.is_empty() {
                match this.transactions.next_rows() {
                    Some(rows) => this.rows.extend(rows),
                    None => return Ok(MultiValue::new()),
                }
            }
            let Some(row) = this.rows.pop_front() else { return Ok(MultiValue::new()) };
            let body = match row.body {
                Some(b) => Value::Table(body_pairs(lua, &b)?),
                None => Value::Nil,
            };
            Ok(MultiValue::from_vec(vec![Value::String(lua.create_string(row.header)?), body]))
        });
    }
}

/// A body map as {key, value msgpack, ...}, in order; empty if it is not a map
/// with integer keys.
fn body_pairs(lua: &Lua, body: &[u8]) -> mlua::Result<Table> {
    let pairs = lua.create_table()?;
    let mut r = Reader::new(body);
    let Ok(n) = r.read_map_len() else { return Ok(pairs) };
    for _ in 0..n {
        let (Ok(key), Ok(value)) = (r.read_uint(), r.skip()) else { return lua.create_table() };
        pairs.raw_push(key)?;
        pairs.raw_push(lua.create_string(value)?)?;
    }
    Ok(pairs)
}

/// The `xlog` natives.
pub fn create(lua: &Lua) -> mlua::Result<Table> {
    let t = lua.create_table()?;
    t.set(
        "open",
        // The cursor, or nil and why not.
        lua.create_function(|lua, path: String| {
            let Ok(bytes) = std::fs::read(&path) else {
                return (Value::Nil, format!("failed to open '{path}' file")).into_lua_multi(lua);
            };
            match parse_meta(&bytes) {
                Ok(meta) => {
                    let cursor = XlogCursor { transactions: Transactions::new(bytes, &meta), rows: VecDeque::new() };
                    lua.create_userdata(cursor)?.into_lua_multi(lua)
                }
                Err(e) => (Value::Nil, e.to_string()).into_lua_multi(lua),
            }
        })?,
    )?;
    Ok(t)
}
