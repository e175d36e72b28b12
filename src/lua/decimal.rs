//! Lua's `decimal` module underneath: a decimal is LuaJIT's `decimal_t` cdata, as
//! in 2.6 (so `d < 1`, `d == 1.5` and `1 + d` work through its ffi metatype, which
//! a userdata could not give), and its bytes are a [`Decimal`]. `lua/decimal.lua`
//! defines the type and calls the C-ABI functions here through ffi function
//! pointers; [`push`] and [`read`] move decimals between msgpack and Lua.
//!
//! Unsafe: each function dereferences the `decimal_t` pointers LuaJIT passes.
//! Only `lua/decimal.lua` calls them, always with `decimal_t` cdata (checked
//! there with `ffi.istype`) and Lua strings with their lengths; [`push`] and
//! [`read`] write and read a cdata they made or checked to be a `decimal_t`.

use std::ffi::c_void;

use mlua::{Function, LightUserData, Lua, Table, Value};

use crate::decimal::{BinaryOp, Decimal, RoundMode, UnaryOp};

/// Registry key of `{new = fn() -> decimal_t, is = fn(v) -> bool}` from `lua/decimal.lua`.
const HELPERS: &str = "oncebox.decimal";

/// Bytes the text buffer `lua/decimal.lua` passes to [`to_string`] holds.
const TEXT_BUFFER: usize = 128;

fn store(res: *mut Decimal, d: Option<Decimal>) -> bool {
    match d {
        Some(d) => {
            // SAFETY: `res` is a decimal_t cdata (see the module).
            unsafe { res.write(d) };
            true
        }
        None => false,
    }
}

fn load<'a>(d: *const Decimal) -> &'a Decimal {
    // SAFETY: `d` is a decimal_t cdata kept alive by the Lua call (see the module).
    unsafe { &*d }
}

extern "C" fn from_string(res: *mut Decimal, text: *const u8, len: usize) -> bool {
    // SAFETY: a Lua string and its length.
    let bytes = unsafe { std::slice::from_raw_parts(text, len) };
    store(res, std::str::from_utf8(bytes).ok().and_then(Decimal::parse))
}

extern "C" fn from_double(res: *mut Decimal, v: f64) -> bool {
    store(res, Decimal::from_f64(v))
}

extern "C" fn from_int64(res: *mut Decimal, v: i64) {
    store(res, Some(Decimal::from_i64(v)));
}

extern "C" fn from_uint64(res: *mut Decimal, v: u64) {
    store(res, Some(Decimal::from_u64(v)));
}

/// Writes the decimal's text into `buf` (of [`TEXT_BUFFER`] bytes), returning its length.
extern "C" fn to_string(d: *const Decimal, buf: *mut u8) -> usize {
    let text = load(d).to_string();
    let len = text.len().min(TEXT_BUFFER);
    // SAFETY: `buf` is a char[TEXT_BUFFER] cdata; at most that many bytes are written.
    unsafe { std::ptr::copy_nonoverlapping(text.as_ptr(), buf, len) };
    len
}

extern "C" fn binary(op: i32, res: *mut Decimal, a: *const Decimal, b: *const Decimal) -> bool {
    let op = match op {
        0 => BinaryOp::Add,
        1 => BinaryOp::Sub,
        2 => BinaryOp::Mul,
        3 => BinaryOp::Div,
        4 => BinaryOp::Rem,
        _ => BinaryOp::Pow,
    };
    store(res, load(a).binary(op, load(b)))
}

extern "C" fn unary(op: i32, res: *mut Decimal, a: *const Decimal) -> bool {
    let op = match op {
        0 => UnaryOp::Ln,
        1 => UnaryOp::Log10,
        2 => UnaryOp::Exp,
        3 => UnaryOp::Sqrt,
        4 => UnaryOp::Abs,
        _ => UnaryOp::Minus,
    };
    store(res, load(a).unary(op))
}

extern "C" fn compare(a: *const Decimal, b: *const Decimal) -> i32 {
    load(a).compare(load(b)) as i32
}

/// `which`: 0 precision, 1 scale.
extern "C" fn measure(which: i32, a: *const Decimal) -> i32 {
    let d = load(a);
    if which == 0 {
        d.precision()
    } else {
        d.scale()
    }
}

/// `op`: 0 round, 1 trim, 2 rescale (`scale` unused by trim).
extern "C" fn adjust(op: i32, res: *mut Decimal, a: *const Decimal, scale: i32) {
    let d = load(a);
    let adjusted = match op {
        0 => d.round_to(scale, RoundMode::HalfUp),
        1 => d.trim(),
        _ => d.rescale(scale),
    };
    store(res, Some(adjusted));
}

/// The C functions, as light userdata `lua/decimal.lua` casts to function pointers.
fn functions(lua: &Lua) -> mlua::Result<Table> {
    let t = lua.create_table()?;
    let entries: [(&str, *mut c_void); 10] = [
        ("from_string", from_string as *mut c_void),
        ("from_double", from_double as *mut c_void),
        ("from_int64", from_int64 as *mut c_void),
        ("from_uint64", from_uint64 as *mut c_void),
        ("to_string", to_string as *mut c_void),
        ("binary", binary as *mut c_void),
        ("unary", unary as *mut c_void),
        ("compare", compare as *mut c_void),
        ("measure", measure as *mut c_void),
        ("adjust", adjust as *mut c_void),
    ];
    for (name, f) in entries {
        t.raw_set(name, LightUserData(f))?;
    }
    t.raw_set("text_buffer", TEXT_BUFFER)?;
    Ok(t)
}

/// Loads `lua/decimal.lua` as `package.loaded.decimal` and keeps its helpers for
/// [`push`] and [`read`].
pub fn register(lua: &Lua) -> mlua::Result<()> {
    let (module, helpers): (Table, Table) =
        lua.load(include_str!("../../lua/decimal.lua")).set_name("=decimal.lua").call(functions(lua)?)?;
    lua.globals().get::<Table>("package")?.get::<Table>("loaded")?.set("decimal", module)?;
    lua.set_named_registry_value(HELPERS, helpers)
}

fn helper(lua: &Lua, name: &str) -> mlua::Result<Function> {
    lua.named_registry_value::<Table>(HELPERS)?.get(name)
}

/// A new `decimal_t` cdata holding `d`.
pub fn push(lua: &Lua, d: &Decimal) -> mlua::Result<Value> {
    let v: Value = helper(lua, "new")?.call(())?;
    let at = v.to_pointer().cast::<Decimal>().cast_mut();
    if at.is_null() {
        return Err(mlua::Error::runtime("decimal_t cdata has no payload"));
    }
    store(at, Some(*d));
    Ok(v)
}

/// The decimal a Lua value holds, when it is a `decimal_t` cdata.
pub fn read(lua: &Lua, v: &Value) -> mlua::Result<Option<Decimal>> {
    if !matches!(v, Value::Other(_)) || !helper(lua, "is")?.call::<bool>(v)? {
        return Ok(None);
    }
    let at = v.to_pointer().cast::<Decimal>();
    Ok((!at.is_null()).then(|| *load(at)))
}
