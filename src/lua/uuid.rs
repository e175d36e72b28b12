//! The `uuid` module: `lua/uuid.lua` (uuids as 2.6's `struct tt_uuid` cdata),
//! random and parsed uuids for it, and the conversions msgpack needs between
//! such a cdata and an uuid's 16 bytes (MP_EXT type 2, network byte order).

use mlua::{Function, Lua, Table, Value};

/// The registry key of the Lua helpers (`new`, `is`).
const HELPERS: &str = "oncebox.uuid_helpers";

/// Loads `lua/uuid.lua` as `package.loaded.uuid` and keeps its helpers.
pub fn register(lua: &Lua) -> mlua::Result<()> {
    // make('new') -> random v4 bytes; make('fromstr', s) -> the bytes s spells, or nil.
    let make = lua.create_function(|lua, (kind, arg): (String, Option<mlua::LuaString>)| {
        let bytes = match (kind.as_str(), arg) {
            ("new", _) => Some(*uuid::Uuid::new_v4().as_bytes()),
            ("fromstr", Some(s)) => uuid::Uuid::parse_str(&s.to_string_lossy()).ok().map(|u| *u.as_bytes()),
            _ => None,
        };
        bytes.map(|b| lua.create_string(b)).transpose()
    })?;
    let (module, helpers): (Table, Table) =
        lua.load(include_str!("../../lua/uuid.lua")).set_name("=uuid.lua").call(make)?;
    lua.globals().get::<Table>("package")?.get::<Table>("loaded")?.set("uuid", module)?;
    let internal = lua.globals().get::<Table>("box")?.get::<Table>("internal")?;
    internal.set("is_uuid", helpers.get::<Function>("is")?)?;
    lua.set_named_registry_value(HELPERS, helpers)
}

fn helper(lua: &Lua, name: &str) -> mlua::Result<Function> {
    lua.named_registry_value::<Table>(HELPERS)?.get(name)
}

/// Network byte order and 2.6's in-memory order differ in the first three fields.
fn swap_fields(b: &mut [u8; 16]) {
    b[..4].reverse();
    b[4..6].reverse();
    b[6..8].reverse();
}

/// A new `struct tt_uuid` cdata holding the uuid `bytes` (network order).
pub fn push(lua: &Lua, bytes: &[u8; 16]) -> mlua::Result<Value> {
    let v: Value = helper(lua, "new")?.call(())?;
    let at = v.to_pointer().cast::<[u8; 16]>().cast_mut();
    if at.is_null() {
        return Err(mlua::Error::runtime("struct tt_uuid cdata has no payload"));
    }
    let mut host = *bytes;
    swap_fields(&mut host);
    // SAFETY: `at` is the payload of a live `struct tt_uuid` cdata just made by
    // ffi.new: 16 bytes, byte-aligned, not shared with anything yet.
    unsafe { at.write_unaligned(host) };
    Ok(v)
}

/// The uuid a Lua value holds (network order), when it is a `struct tt_uuid` cdata.
pub fn read(lua: &Lua, v: &Value) -> mlua::Result<Option<[u8; 16]>> {
    if !matches!(v, Value::Other(_)) || !helper(lua, "is")?.call::<bool>(v)? {
        return Ok(None);
    }
    let at = v.to_pointer().cast::<[u8; 16]>();
    if at.is_null() {
        return Ok(None);
    }
    // SAFETY: `v` is a live `struct tt_uuid` cdata (checked above), whose payload
    // is 16 bytes at `at`.
    let mut bytes = unsafe { at.read_unaligned() };
    swap_fields(&mut bytes);
    Ok(Some(bytes))
}
