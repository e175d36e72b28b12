//! MessagePack ↔ Lua values, with Tarantool's rules and a serializer's options
//! ([`super::serializer`]: `msgpack.cfg` or an instance's).
//!
//! Lua → msgpack: integral numbers become integers, other numbers doubles; a
//! table is an array when its keys are positive integers (an empty table too;
//! holes are nils, unless too sparse) or its metatable says
//! `__serialize = 'seq'`, a map otherwise or with
//! `__serialize = 'map'`; a tuple is written as its stored bytes; `box.NULL`
//! (LuaJIT's `void *` NULL cdata, as in 2.6) is nil; a 64-bit integer cdata
//! (`1ULL`) is an integer.
//!
//! msgpack → Lua: an integer of magnitude 10^14 or more is a 64-bit integer cdata,
//! as in 2.6 (a number below); maps get a `__serialize = 'map'` metatable so an empty map
//! stays a map when sent back; nil is `box.NULL` wherever it stands (so an array
//! keeps its positions and a map its keys, and `v == nil` still holds); an
//! extension value (decimal, uuid, ...) is a [`LuaExt`] that is sent back as the
//! same extension value.

use mlua::{Lua, MetaMethod, Table, UserData, UserDataMethods, Value};

use super::plain_decode::{self, Sizing};
use super::serializer::{self, Options};
use super::tuple::LuaTuple;
use crate::engine::value::UUID_EXT;

/// MsgPack extension type of an error (2.6's MP_ERROR): the error stack map.
const MP_ERROR_EXT: i8 = 3;
use crate::protocol::msgpack::{write, Integer, MpType, Reader};

/// The decoder's error for bytes that are no msgpack value (others, such as a
/// refused NaN, are the options' and keep their own text).
pub const INVALID_MSGPACK: &str = "invalid msgpack";

/// Deepest nesting decoded (2.6 has no limit but its stack; this one is named).
pub const MAX_DECODE_DEPTH: usize = 1024;

/// Registry key of `box.NULL`.
pub(crate) const NULL_KEY: &str = "oncebox.null";

/// Where `box.NULL` lives in its Lua state (app data), to recognise it without
/// rendering it.
struct NullAddress(usize);

/// `box.NULL`: as in 2.6, a `void *` NULL cdata, so `box.NULL == nil` holds while
/// it still takes a place in a table. One value per Lua state, made on first use.
pub fn null(lua: &Lua) -> mlua::Result<Value> {
    let v: Value = lua.named_registry_value(NULL_KEY)?;
    if !v.is_nil() {
        return Ok(v);
    }
    // A 64-bit literal makes LuaJIT load its ffi module (on demand, as its lexer
    // does) in a state that was not given it.
    let v: Value = lua.load("local _ = 0ULL\nreturn require('ffi').cast('void *', 0)").set_name("=box.NULL").eval()?;
    lua.set_named_registry_value(NULL_KEY, &v)?;
    lua.set_app_data(NullAddress(v.to_pointer() as usize));
    Ok(v)
}

/// Where this Lua state's `box.NULL` lives (as `lua_topointer` gives it), once made.
pub(crate) fn null_address(lua: &Lua) -> Option<usize> {
    lua.app_data_ref::<NullAddress>().map(|a| a.0)
}

/// How LuaJIT renders a `void *` NULL cdata.
const NULL_TEXT: &str = "cdata<void *>: NULL";

/// Whether a value is this Lua state's `box.NULL` (the same object, found without rendering it).
fn is_box_null(v: &Value) -> bool {
    let Value::Other(_) = v else { return false };
    v.weak_lua()
        .and_then(mlua::WeakLua::try_upgrade)
        .is_some_and(|lua| lua.app_data_ref::<NullAddress>().is_some_and(|a| a.0 == v.to_pointer() as usize))
}

/// Whether a value is a `void *` NULL cdata (`box.NULL`, `msgpack.NULL`, `ffi.cast('void *', 0)`).
pub fn is_null(v: &Value) -> bool {
    is_box_null(v) || matches!(v, Value::Other(_)) && v.to_string().is_ok_and(|s| s == NULL_TEXT)
}

/// A value Lua has no type for, kept as its whole msgpack encoding and written back
/// unchanged: an MP_EXT value (decimal, uuid, ...), or SQL's varbinary (MP_BIN).
#[derive(Debug, Clone)]
pub struct LuaExt(pub Box<[u8]>);

impl LuaExt {
    /// The extension type and payload.
    fn parts(&self) -> (i8, &[u8]) {
        Reader::new(&self.0).read_ext().unwrap_or((0, &[]))
    }
}

/// Registers `box.internal.sql_varbinary` (uuids are `lua/uuid.lua`'s, see [`super::uuid`]).
pub fn register_uuid(lua: &Lua) -> mlua::Result<()> {
    let maxn: mlua::Function = lua.globals().get::<Table>("table")?.get("maxn")?;
    MAXN.with(|cell| {
        let _ = cell.set(maxn);
    });
    let internal = lua.globals().get::<Table>("box")?.get::<Table>("internal")?;
    // `box.internal.sql_varbinary(s)`: `s` to be written as MP_BIN (a varbinary field's value).
    let varbinary = lua.create_function(|lua, s: mlua::LuaString| {
        let mut enc = Vec::with_capacity(s.as_bytes().len() + 5);
        write::bin(&mut enc, &s.as_bytes());
        lua.create_userdata(LuaExt(enc.into()))
    })?;
    internal.set("sql_varbinary", varbinary)
}

impl UserData for LuaExt {
    fn add_methods<M: UserDataMethods<Self>>(methods: &mut M) {
        methods.add_meta_method(MetaMethod::Eq, |_, this, other: mlua::AnyUserData| {
            Ok(other.borrow::<LuaExt>().is_ok_and(|o| o.0 == this.0))
        });
        methods.add_meta_method(MetaMethod::ToString, |_, this, ()| {
            Ok(match this.parts() {
                // A uuid prints in its canonical form, as Tarantool's does.
                (2, b) if b.len() == 16 => {
                    let h: String = b.iter().map(|x| format!("{x:02x}")).collect();
                    format!("{}-{}-{}-{}-{}", &h[..8], &h[8..12], &h[12..16], &h[16..20], &h[20..])
                }
                (t, _) => format!("extension {t}"),
            })
        });
    }
}

/// Recursion cap whatever `encode_max_depth` says (values nested in values, and
/// `__serialize` results in turn): the native stack is finite.
const MAX_ENCODE_FRAMES: u32 = 4096;

/// `__serialize` hooks followed in a row at most: one that gives back its own
/// object (or another with a hook, on and on) is refused rather than followed
/// until a stack runs out.
const MAX_SERIALIZE_HOPS: u32 = 1000;

/// An MP_ERROR payload as a `box.error` object (with its `prev` chain), built by
/// `box.internal.error_from_stack`; `None` when it is not an error stack.
fn error_of_stack(lua: &Lua, payload: &[u8], depth: usize, options: &Options) -> mlua::Result<Option<Value>> {
    let Ok(stack) = decode_with(lua, &mut Reader::new(payload), depth + 1, options) else { return Ok(None) };
    let build = lua
        .globals()
        .get::<Table>("box")
        .and_then(|b| b.get::<Table>("internal"))
        .and_then(|i| i.get::<Option<mlua::Function>>("error_from_stack"));
    match build {
        Ok(Some(f)) => Ok(Some(f.call::<Value>(stack)?).filter(|v| !v.is_nil())),
        _ => Ok(None),
    }
}

/// Appends the msgpack encoding of a Lua value, with msgpack's own options
/// (`msgpack.cfg`), as 2.6's default encoder writes replies and tuples.
pub fn encode(out: &mut Vec<u8>, v: &Value) -> mlua::Result<()> {
    encode_with(out, v, &serializer::module_options())
}

/// Appends the msgpack encoding of a Lua value with `options` (a serializer instance's).
pub fn encode_with(out: &mut Vec<u8>, v: &Value, options: &Options) -> mlua::Result<()> {
    // Plain data (most of what comes here) is written by a walk of the Lua stack.
    if let Value::Table(t) = v {
        if super::plain_encode::encode_table(out, t, options)? {
            return Ok(());
        }
    }
    Encoder { options, frames: 0, hops: 0 }.value(out, v, 0)
}

/// One encode call: its options and how deep its recursion is.
struct Encoder<'a> {
    options: &'a Options,
    /// Values being encoded, each inside the one before.
    frames: u32,
    /// Of those, the ones a `__serialize` hook gave.
    hops: u32,
}

impl Encoder<'_> {
    /// Appends `v`, a value nested `level` tables deep.
    fn value(&mut self, out: &mut Vec<u8>, v: &Value, level: u32) -> mlua::Result<()> {
        self.frames += 1;
        if self.frames > MAX_ENCODE_FRAMES {
            return Err(too_deep(level));
        }
        let result = self.value_unchecked(out, v, level);
        self.frames -= 1;
        result
    }

    fn value_unchecked(&mut self, out: &mut Vec<u8>, v: &Value, level: u32) -> mlua::Result<()> {
        match v {
            Value::Nil => write::nil(out),
            v if is_box_null(v) => write::nil(out),
            Value::Boolean(b) => write::bool(out, *b),
            Value::Integer(i) => write::int(out, *i),
            Value::Number(n) if !n.is_finite() => self.float(out, false, |out| write::f64(out, *n))?,
            Value::Number(n) => number(out, *n),
            Value::String(s) => write::str(out, &s.as_bytes()),
            Value::Table(t) => self.table(out, t, level)?,
            Value::UserData(ud) if let Ok(t) = ud.borrow::<LuaTuple>() => out.extend_from_slice(&t.0),
            Value::UserData(ud) if let Ok(e) = ud.borrow::<LuaExt>() => out.extend_from_slice(&e.0),
            Value::Other(_) if let Some(d) = decimal_of(v)? => d.write_ext(out),
            Value::Other(_) if let Some(bytes) = uuid_of(v)? => {
                out.extend_from_slice(&[0xd8, UUID_EXT.cast_unsigned()]);
                out.extend_from_slice(&bytes);
            }
            Value::Other(_) => match cdata_value(v) {
                Some(CData::Null) => write::nil(out),
                Some(CData::Double) => {
                    let d = double_of(v)?;
                    self.float(out, d.is_finite(), |out| write::f64(out, d))?;
                }
                Some(CData::Float) => {
                    #[allow(clippy::cast_possible_truncation, reason = "the value of a float cdata: an f32 already")]
                    let f = double_of(v)? as f32;
                    self.float(out, f.is_finite(), |out| write::f32(out, f))?;
                }
                Some(CData::Bool) => write::bool(out, double_of(v)? != 0.0),
                Some(CData::Small) => number(out, double_of(v)?),
                Some(CData::Integer(Integer::Unsigned(u))) => write::uint(out, u),
                Some(CData::Integer(Integer::Negative(i))) => write::int(out, i),
                None => self.unencodable(out, v, level)?,
            },
            Value::LightUserData(p) if p.0.is_null() => write::nil(out),
            other => self.unencodable(out, other, level)?,
        }
        Ok(())
    }

    /// Appends what the `__serialize` hook `hook` gives for `v`, in its place.
    fn hooked(&mut self, out: &mut Vec<u8>, hook: &mlua::Function, v: &Value, level: u32) -> mlua::Result<()> {
        if self.hops >= MAX_SERIALIZE_HOPS {
            return Err(mlua::Error::runtime("too many nested __serialize hooks"));
        }
        let serialized: Value = hook.call(v).map_err(serializer_failed)?;
        self.hops += 1;
        let result = self.value(out, &serialized, level);
        self.hops -= 1;
        result
    }

    /// A float, written by `write`; when it is not `finite` (NaN or ±inf), only
    /// with `encode_invalid_numbers`, nil with `encode_invalid_as_nil`, else
    /// refused (2.6's rules and words).
    fn float(&self, out: &mut Vec<u8>, finite: bool, write: impl FnOnce(&mut Vec<u8>)) -> mlua::Result<()> {
        if finite || self.options.encode_invalid_numbers {
            write(out);
        } else if self.options.encode_invalid_as_nil {
            write::nil(out);
        } else {
            return Err(mlua::Error::runtime("number must not be NaN or Inf"));
        }
        Ok(())
    }

    /// A value msgpack has no encoding for (a function, a coroutine, other userdata
    /// or cdata): what its `__serialize` gives (under `encode_load_metatables`), its
    /// `tostring` (`encode_use_tostring`), nil (`encode_invalid_as_nil`), or an error.
    fn unencodable(&mut self, out: &mut Vec<u8>, v: &Value, level: u32) -> mlua::Result<()> {
        let lua = v.weak_lua().and_then(mlua::WeakLua::try_upgrade).filter(|_| self.options.encode_load_metatables);
        if let Some(lua) = lua {
            match object_serializer(&lua, v)? {
                Value::Nil => {}
                Value::Function(f) => return self.hooked(out, &f, v, level),
                _ => return Err(invalid_serialize()),
            }
        }
        if self.options.encode_use_tostring {
            write::str(out, v.to_string()?.as_bytes());
        } else if self.options.encode_invalid_as_nil {
            write::nil(out);
        } else {
            let type_name = match v {
                Value::Other(_) => "cdata",
                // A box.error object is cdata in 2.6, a fiber object userdata.
                Value::Table(t) if t.metatable().is_some_and(|mt| mt.raw_get("__box_error").unwrap_or(false)) => {
                    "cdata"
                }
                Value::LightUserData(_) | Value::Table(_) => "userdata",
                other => other.type_name(),
            };
            return Err(mlua::Error::runtime(format!("unsupported Lua type '{type_name}'")));
        }
        Ok(())
    }

    fn table(&mut self, out: &mut Vec<u8>, t: &Table, level: u32) -> mlua::Result<()> {
        if let Some(mt) = t.metatable() {
            // A fiber object is userdata in 2.6 (a table here): written as what its
            // __serialize gives, its tostring or nil, as a userdata is.
            if mt.raw_get::<bool>("__fiber").unwrap_or(false) {
                return self.unencodable(out, &Value::Table(t.clone()), level);
            }
            // A box.error object travels as its message, as 2.6 sends error values
            // (or as MP_ERROR, for a session with error_marshaling_enabled).
            if mt.raw_get::<bool>("__box_error").unwrap_or(false) {
                // Without metatables, a cdata of no type msgpack knows, as in 2.6.
                if !self.options.encode_load_metatables && !self.options.encode_errors_as_ext {
                    return self.unencodable(out, &Value::Table(t.clone()), level);
                }
                if self.options.encode_errors_as_ext {
                    if let Some(lua) = t.weak_lua().try_upgrade() {
                        let err = super::error_from_value(&lua, Value::Table(t.clone()));
                        let mut payload = Vec::new();
                        crate::protocol::response::error_stack(&mut payload, &err);
                        write::ext(out, MP_ERROR_EXT, &payload);
                        return Ok(());
                    }
                }
                let message: mlua::LuaString = t.get("message")?;
                write::str(out, &message.as_bytes());
                return Ok(());
            }
        }
        let hinted = match self.options.encode_load_metatables {
            true => match serialize_hint(t)? {
                Hint::None => None,
                Hint::Array => Some(Some(greatest_index(t)?)),
                Hint::Map => Some(None),
                Hint::Function(f) => return self.hooked(out, &f, &Value::Table(t.clone()), level),
            },
            false => None,
        };
        let shape = match hinted {
            Some(shape) => shape,
            None => self.table_shape(t)?,
        };
        if level >= self.options.encode_max_depth {
            if self.options.encode_deep_as_nil {
                write::nil(out);
                return Ok(());
            }
            return Err(too_deep(level));
        }
        if let Some(len) = shape {
            #[allow(clippy::cast_possible_truncation, reason = "Lua tables are far below 4G entries")]
            write::array_len(out, len as u32);
            for i in 1..=len {
                let v: Value = t.raw_get(i)?;
                self.value(out, &v, level + 1)?;
            }
        } else {
            let mut n = 0u32;
            let mut body = Vec::new();
            for pair in t.pairs::<Value, Value>() {
                let (k, v) = pair?;
                self.value(&mut body, &k, level + 1)?;
                self.value(&mut body, &v, level + 1)?;
                n += 1;
            }
            write::map_len(out, n);
            out.extend_from_slice(&body);
        }
        Ok(())
    }

    /// A table's length as an array, or `None` for a map, as 2.6 decides without a
    /// hint: only positive integer keys make an array (holes are nils), unless it
    /// is excessively sparse (greatest index over `encode_sparse_safe` and over
    /// `encode_sparse_ratio` times the key count): then a map, or an error
    /// without `encode_sparse_convert`.
    fn table_shape(&self, t: &Table) -> mlua::Result<Option<usize>> {
        let (mut count, mut max) = (0usize, 0usize);
        for pair in t.pairs::<Value, Value>() {
            let (k, _) = pair?;
            count += 1;
            #[allow(clippy::cast_precision_loss, reason = "integer keys of a Lua table are doubles already")]
            let index = match k {
                Value::Integer(i) => i as f64,
                Value::Number(n) => n,
                _ => return Ok(None),
            };
            let Some(greatest) = array_index(index, count, max) else { return Ok(None) };
            max = greatest;
        }
        if too_sparse(self.options, count, max) {
            if !self.options.encode_sparse_convert {
                return Err(mlua::Error::runtime("excessively sparse array"));
            }
            return Ok(None);
        }
        Ok(Some(max))
    }
}

/// A table's greatest index as an array once its `count`-th key, `key`, is read
/// (`max` before it), or `None` when no array has that key (not a positive
/// integer). 2.6 keeps the greatest key in a uint32_t, from the low 32 bits of a
/// key below 2^63 and 0 past it: `{[2^53] = 1}` is an empty array there.
pub(super) fn array_index(key: f64, count: usize, max: usize) -> Option<usize> {
    #[allow(clippy::cast_precision_loss, reason = "a key count is far below 2^53")]
    let in_order = key == count as f64;
    if !in_order && (key < 1.0 || key.floor() != key) {
        return None;
    }
    #[allow(clippy::cast_precision_loss, reason = "below 2^32: exact")]
    if key <= max as f64 {
        return Some(max);
    }
    #[allow(
        clippy::cast_possible_truncation,
        clippy::cast_sign_loss,
        reason = "integral, positive and below 2^63: exact; the low 32 bits kept on purpose"
    )]
    let low_bits = if key < 9.223_372_036_854_776e18 { (key as u64) & 0xffff_ffff } else { 0 };
    Some(usize::try_from(low_bits).unwrap_or(usize::MAX))
}

/// Whether a table of `count` positive integer keys up to `max` is too sparse to
/// be an array under `options` (over `encode_sparse_safe` and over
/// `encode_sparse_ratio` times the count).
pub(super) fn too_sparse(options: &Options, count: usize, max: usize) -> bool {
    let (ratio, safe) = (options.encode_sparse_ratio as usize, options.encode_sparse_safe as usize);
    ratio > 0 && max > count.saturating_mul(ratio) && max > safe
}

/// Whether `message` is one of the encoder's own refusals (a value msgpack cannot
/// hold, or one the options forbid), which callers raise as 2.6's encoder does.
#[must_use]
pub fn is_encode_failure(message: &str) -> bool {
    const REFUSALS: [&str; 6] = [
        "unsupported Lua type '",
        "Too high nest level - ",
        "excessively sparse array",
        "number must not be NaN or Inf",
        "too many nested __serialize hooks",
        "invalid __serialize value",
    ];
    REFUSALS.iter().any(|r| message.starts_with(r))
}

/// 2.6's error for a table nested deeper than `encode_max_depth`.
fn too_deep(level: u32) -> mlua::Error {
    mlua::Error::runtime(format!("Too high nest level - {}", level + 1))
}

/// A `__serialize` function's error as 2.6 reports it: its message, without the traceback.
fn serializer_failed(e: mlua::Error) -> mlua::Error {
    let text = match &e {
        mlua::Error::RuntimeError(message) => message.clone(),
        mlua::Error::CallbackError { cause, .. } => return serializer_failed((**cause).clone()),
        other => other.to_string(),
    };
    let message = text.split("\nstack traceback:").next().unwrap_or_default();
    mlua::Error::runtime(message)
}

fn invalid_serialize() -> mlua::Error {
    mlua::Error::runtime("invalid __serialize value")
}

/// Registry key of the Lua function that reads a cdata's or userdata's `__serialize`.
const OBJECT_SERIALIZER: &str = "oncebox.object_serializer";

/// A cdata's or userdata's `__serialize` (nil when it has none, or is a ctype,
/// whose metatype's `__serialize` is its instances', not its own).
fn object_serializer(lua: &Lua, v: &Value) -> mlua::Result<Value> {
    let read = match lua.named_registry_value::<Option<mlua::Function>>(OBJECT_SERIALIZER)? {
        Some(f) => f,
        None => {
            let f: mlua::Function = lua
                .load(
                    "local function read(v) return v.__serialize end\n\
                     return function(v)\n\
                       if type(v) == 'cdata' then\n\
                         local ok, text = pcall(tostring, v)\n\
                         if not ok or string.sub(text, 1, 6) == 'ctype<' then return nil end\n\
                       end\n\
                       local ok, serializer = pcall(read, v)\n\
                       if ok then return serializer end\n\
                     end",
                )
                .set_name("=object_serializer")
                .eval()?;
            lua.set_named_registry_value(OBJECT_SERIALIZER, &f)?;
            f
        }
    };
    read.call(v)
}

/// The decimal a cdata holds, if it is one.
fn decimal_of(v: &Value) -> mlua::Result<Option<crate::decimal::Decimal>> {
    match v.weak_lua().and_then(mlua::WeakLua::try_upgrade) {
        Some(lua) => super::decimal::read(&lua, v),
        None => Ok(None),
    }
}

/// The uuid a cdata holds (network order), if it is one.
fn uuid_of(v: &Value) -> mlua::Result<Option<[u8; 16]>> {
    match v.weak_lua().and_then(mlua::WeakLua::try_upgrade) {
        Some(lua) => super::uuid::read(&lua, v),
        None => Ok(None),
    }
}

/// The value of a numeric or `bool` cdata, read with Lua's `tonumber`.
fn double_of(v: &Value) -> mlua::Result<f64> {
    match v.weak_lua().and_then(mlua::WeakLua::try_upgrade) {
        Some(lua) => lua.globals().get::<mlua::Function>("tonumber")?.call(v),
        None => Err(mlua::Error::runtime("a cdata outlived its Lua state")),
    }
}

/// A cdata that has a msgpack form.
enum CData {
    /// A `void *` NULL (nil).
    Null,
    /// A `double` (`ffi.cast('double', 2)`), which msgpack writes as a double
    /// even when it is integral, as 2.6 does.
    Double,
    /// A `float`: a msgpack float32, as 2.6 writes it.
    Float,
    /// A `bool` cdata: a msgpack boolean.
    Bool,
    /// An integer narrower than 64 bits (`char`, `short`, `int` and unsigned):
    /// a msgpack integer.
    Small,
    /// A 64-bit integer (`5ULL`, `-5LL`, as `clock.time64()` returns).
    Integer(Integer),
}

/// What a cdata is, from its rendering; `None` for the kinds msgpack has no form for.
fn cdata_value(v: &Value) -> Option<CData> {
    let text = v.to_string().ok()?;
    if text == NULL_TEXT {
        return Some(CData::Null);
    }
    if let Some(kind) = text.strip_prefix("cdata<").and_then(|t| t.split_once(">: ")).map(|(name, _)| name) {
        return match kind {
            "double" => Some(CData::Double),
            "float" => Some(CData::Float),
            "bool" => Some(CData::Bool),
            "char" | "unsigned char" | "short" | "unsigned short" | "int" | "unsigned int" => Some(CData::Small),
            _ => None,
        };
    }
    if let Some(digits) = text.strip_suffix("ULL") {
        return digits.parse().ok().map(|u| CData::Integer(Integer::Unsigned(u)));
    }
    let n: i64 = text.strip_suffix("LL")?.parse().ok()?;
    Some(CData::Integer(u64::try_from(n).map_or(Integer::Negative(n), Integer::Unsigned)))
}

/// Writes a Lua number: an integral one of the 64-bit range as an integer, others
/// as a double.
pub(super) fn number(out: &mut Vec<u8>, n: f64) {
    // Integral values travel as integers, as Tarantool sends them.
    #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss, reason = "range checked first")]
    if n.fract() == 0.0 && (-9.223_372_036_854_776e18..1.844_674_407_370_955_2e19).contains(&n) {
        if n >= 0.0 {
            write::uint(out, n as u64);
        } else {
            write::int(out, n as i64);
        }
    } else {
        write::f64(out, n);
    }
}

/// What a table's metatable says of its serialization (`__serialize`).
enum Hint {
    /// Nothing.
    None,
    /// An array (`seq`, `sequence`, `array`).
    Array,
    /// A map (`map`, `mapping`).
    Map,
    /// A function whose result is written instead.
    Function(mlua::Function),
}

/// A table's `__serialize`; another value than those of [`Hint`] is an error, as in 2.6.
fn serialize_hint(t: &Table) -> mlua::Result<Hint> {
    let Some(mt) = t.metatable() else { return Ok(Hint::None) };
    Ok(match mt.raw_get::<Value>("__serialize")? {
        Value::Nil => Hint::None,
        Value::Function(f) => Hint::Function(f),
        Value::String(s) => match &*s.as_bytes() {
            b"seq" | b"sequence" | b"array" => Hint::Array,
            b"map" | b"mapping" => Hint::Map,
            _ => return Err(invalid_serialize()),
        },
        _ => return Err(invalid_serialize()),
    })
}

thread_local! {
    /// Lua's `table.maxn`, for [`greatest_index`] (set by [`register_uuid`]).
    static MAXN: std::cell::OnceCell<mlua::Function> = const { std::cell::OnceCell::new() };
}

/// A `seq` table's length as 2.6 takes it (luaL_arrlen): its greatest positive
/// integer key, holes counted as nils (`{1, nil, 3}` is three long, where `#`
/// may say one; `{[1] = 1, [20] = 1}` twenty).
fn greatest_index(t: &Table) -> mlua::Result<usize> {
    // LuaJIT's table.maxn (in C: the array part from its end, then the hash
    // part's numeric keys) is the answer unless a fractional key is the greatest.
    let maxn: Option<f64> = MAXN.with(|maxn| maxn.get()?.call::<f64>(t).ok());
    #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss, reason = "checked integral and positive")]
    if let Some(m) = maxn.filter(|m| m.fract() == 0.0 && *m >= 0.0 && *m < 9.0e15) {
        return Ok(m as usize);
    }
    let mut max = 0usize;
    for pair in t.pairs::<Value, Value>() {
        #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss, reason = "checked positive; huge saturates")]
        match pair?.0 {
            Value::Integer(i) if i > 0 => max = max.max(i as usize),
            Value::Number(n) if n >= 1.0 && n.fract() == 0.0 => max = max.max(n as usize),
            _ => {}
        }
    }
    Ok(max)
}

/// Registry key of the metatable decoded arrays get.
pub(crate) const SEQ_MT_KEY: &str = "oncebox.seq_mt";

/// Registry key of the metatable decoded maps get.
pub(crate) const MAP_MT_KEY: &str = "oncebox.map_mt";

/// The metatable given to decoded maps (`__serialize = 'map'`), or arrays (`'seq'`),
/// as 2.6's msgpack decoder does: they keep their kind and print in flow style.
pub fn hint_mt(lua: &Lua, array: bool) -> mlua::Result<Table> {
    let (key, hint) = if array { (SEQ_MT_KEY, "seq") } else { (MAP_MT_KEY, "map") };
    if let Ok(t) = lua.named_registry_value::<Table>(key) {
        return Ok(t);
    }
    let mt = lua.create_table()?;
    mt.raw_set("__serialize", hint)?;
    lua.set_named_registry_value(key, &mt)?;
    Ok(mt)
}

/// The magnitude from which 2.6 gives Lua an integer as a 64-bit cdata (`5ULL`,
/// `-5LL`) rather than a number: a double holds integers exactly only up to
/// 2^53, and LuaJIT prints numbers with 14 significant digits.
pub(crate) const BIG_INTEGER: u64 = 100_000_000_000_000;

/// Registry key of the Lua function that makes a 64-bit integer cdata.
const INT64_MAKER: &str = "oncebox.int64";

/// An integer as LuaJIT's `uint64_t` cdata, or `int64_t` when `negative` (`bits`
/// then hold its two's complement), as 2.6's decoders give large integers.
pub(crate) fn big_integer(lua: &Lua, negative: bool, bits: u64) -> mlua::Result<Value> {
    let make = match lua.named_registry_value::<Option<mlua::Function>>(INT64_MAKER)? {
        Some(f) => f,
        None => {
            let f: mlua::Function = lua
                .load(
                    "local ffi = require('ffi')\n\
                     return function(negative, hi, lo)\n\
                       local v = ffi.cast('uint64_t', hi) * 4294967296ULL + lo\n\
                       if negative then return ffi.cast('int64_t', v) end\n\
                       return v\n\
                     end",
                )
                .set_name("=int64")
                .eval()?;
            lua.set_named_registry_value(INT64_MAKER, &f)?;
            f
        }
    };
    make.call((negative, bits >> 32, bits & 0xffff_ffff))
}

/// A 64-bit signed integer as 2.6 gives one from C (`luaL_pushint64`): a number
/// within ±2^53, an `int64_t` cdata beyond.
pub fn int64(lua: &Lua, v: i64) -> mlua::Result<Value> {
    const EXACT: i64 = 1 << 53;
    #[allow(clippy::cast_precision_loss, reason = "within ±2^53 a double is exact")]
    if (-EXACT..=EXACT).contains(&v) {
        return Ok(Value::Number(v as f64));
    }
    big_integer(lua, true, v.cast_unsigned())
}

/// Decodes one msgpack value into Lua (nil is `box.NULL`), with msgpack's own
/// options (`msgpack.cfg`).
pub fn decode(lua: &Lua, r: &mut Reader<'_>, depth: usize) -> mlua::Result<Value> {
    decode_with(lua, r, depth, &serializer::module_options())
}

/// Decodes one msgpack value into Lua with `options` (a serializer instance's).
pub fn decode_with(lua: &Lua, r: &mut Reader<'_>, depth: usize, options: &Options) -> mlua::Result<Value> {
    if let Some(v) = plain_decode::decode(lua, r, options, Sizing::Presized)? {
        return Ok(v);
    }
    decode_value(lua, r, depth, options, Sizing::Presized)
}

/// Decodes a tuple's field (`t[i]`, `t:totable()`, `t:unpack()`) as 2.6 does, through
/// its Lua decoder (msgpackffi): each table starts empty and grows key by key.
pub fn decode_tuple_field(lua: &Lua, r: &mut Reader<'_>) -> mlua::Result<Value> {
    let options = serializer::module_options();
    if let Some(v) = plain_decode::decode(lua, r, &options, Sizing::Grown)? {
        return Ok(v);
    }
    decode_value(lua, r, 1, &options, Sizing::Grown)
}

fn decode_value(lua: &Lua, r: &mut Reader<'_>, depth: usize, options: &Options, tables: Sizing) -> mlua::Result<Value> {
    let bad = |_| mlua::Error::runtime(INVALID_MSGPACK);
    if depth > MAX_DECODE_DEPTH {
        return Err(mlua::Error::runtime("too many nested values to decode"));
    }
    let Ok(kind) = r.peek_type() else {
        // The marker msgpack leaves unused, which msgpuck's check lets through as
        // a value: 2.6's decoder takes it for an extension of type 0.
        if r.rest().first() == Some(&0xc1) && options.decode_unknown_ext_as_error {
            return Err(mlua::Error::runtime("Unsuported MsgPack extension type: 0"));
        }
        return Err(mlua::Error::runtime(INVALID_MSGPACK));
    };
    Ok(match kind {
        MpType::Nil => {
            r.read_nil().map_err(bad)?;
            null(lua)?
        }
        MpType::Bool => Value::Boolean(r.read_bool().map_err(bad)?),
        MpType::Uint | MpType::Int => match r.read_integer().map_err(bad)? {
            Integer::Unsigned(u) if u >= BIG_INTEGER => big_integer(lua, false, u)?,
            #[allow(clippy::cast_possible_wrap, reason = "below BIG_INTEGER")]
            Integer::Unsigned(u) => Value::Integer(u as i64),
            Integer::Negative(i) if i <= -BIG_INTEGER.cast_signed() => big_integer(lua, true, i.cast_unsigned())?,
            Integer::Negative(i) => Value::Integer(i),
        },
        MpType::Float | MpType::Double => match r.read_f64().map_err(bad)? {
            n if !n.is_finite() && !options.decode_invalid_numbers => {
                return Err(mlua::Error::runtime("number must not be NaN or Inf"));
            }
            n => Value::Number(n),
        },
        MpType::Str => Value::String(lua.create_string(r.read_str().map_err(bad)?)?),
        MpType::Bin => Value::String(lua.create_string(r.read_bin().map_err(bad)?)?),
        MpType::Ext => {
            let raw = r.skip().map_err(bad)?;
            match Reader::new(raw).read_ext() {
                Ok((crate::decimal::MP_DECIMAL, payload)) if let Some(d) = crate::decimal::Decimal::unpack(payload) => {
                    super::decimal::push(lua, &d)?
                }
                Ok((UUID_EXT, payload)) if let Ok(bytes) = <&[u8; 16]>::try_from(payload) => {
                    super::uuid::push(lua, bytes)?
                }
                Ok((MP_ERROR_EXT, payload)) if let Some(e) = error_of_stack(lua, payload, depth, options)? => e,
                // Decimal, uuid and error are the types 2.6 knows: a decimal or a uuid
                // that is not one is malformed, another type unknown (2.6's words, its
                // spelling and its unsigned type number kept).
                Ok((ext, _)) if options.decode_unknown_ext_as_error => {
                    if ext == crate::decimal::MP_DECIMAL || ext == UUID_EXT {
                        return Err(mlua::Error::runtime(INVALID_MSGPACK));
                    }
                    if ext != MP_ERROR_EXT {
                        let number = i32::from(ext).cast_unsigned();
                        return Err(mlua::Error::runtime(format!("Unsuported MsgPack extension type: {number}")));
                    }
                    Value::UserData(lua.create_userdata(LuaExt(raw.into()))?)
                }
                _ => Value::UserData(lua.create_userdata(LuaExt(raw.into()))?),
            }
        }
        MpType::Array => {
            let n = r.read_array_len().map_err(bad)?;
            let t = match tables {
                Sizing::Presized => lua.create_table_with_capacity(n.min(1 << 16) as usize, 0)?,
                Sizing::Grown => lua.create_table()?,
            };
            for i in 1..=n {
                t.raw_set(i, decode_value(lua, r, depth + 1, options, tables)?)?;
            }
            if options.decode_save_metatables {
                t.set_metatable(Some(hint_mt(lua, true)?))?;
            }
            Value::Table(t)
        }
        MpType::Map => {
            let n = r.read_map_len().map_err(bad)?;
            let t = match tables {
                Sizing::Presized => lua.create_table_with_capacity(0, n.min(1 << 16) as usize)?,
                Sizing::Grown => lua.create_table()?,
            };
            for _ in 0..n {
                let k = decode_value(lua, r, depth + 1, options, tables)?;
                let v = decode_value(lua, r, depth + 1, options, tables)?;
                if matches!(k, Value::Number(n) if n.is_nan()) {
                    return Err(mlua::Error::runtime("table index is NaN"));
                }
                if !matches!(k, Value::Nil) {
                    t.raw_set(k, v)?;
                }
            }
            if options.decode_save_metatables {
                t.set_metatable(Some(hint_mt(lua, false)?))?;
            }
            Value::Table(t)
        }
    })
}

/// Decodes a msgpack array of arguments into Lua values, onto the end of `out`.
pub fn decode_args_into(lua: &Lua, args: &[u8], out: &mut impl Extend<Value>) -> mlua::Result<()> {
    let mut r = Reader::new(args);
    let n = r.read_array_len().map_err(|_| mlua::Error::runtime("arguments must be an array"))?;
    for _ in 0..n {
        out.extend(std::iter::once(decode(lua, &mut r, 1)?));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn extension_values_go_back_unchanged() {
        // With ffi and the decimal module, as the runtime opens its states.
        let lua = super::super::open_state();
        super::super::decimal::register(&lua).unwrap();
        lua.load("box = {internal = {}}").exec().unwrap();
        super::super::uuid::register(&lua).unwrap();
        // decimal -12.345, a uuid, and an ext8 of an unknown type.
        let decimal: &[u8] = &[0xd6, 0x01, 0x03, 0x12, 0x34, 0x5d];
        let mut uuid = vec![0xd8, 0x02];
        uuid.extend_from_slice(&[
            0xf4, 0x7a, 0xc1, 0x0b, 0x58, 0xcc, 0x43, 0x72, 0xa5, 0x67, 0x0e, 0x02, 0xb2, 0xc3, 0xd4, 0x79,
        ]);
        let other: &[u8] = &[0xc7, 0x03, 0x7f, 1, 2, 3];
        for raw in [decimal, &uuid, other] {
            let v = decode(&lua, &mut Reader::new(raw), 0).unwrap();
            let mut out = Vec::new();
            encode(&mut out, &v).unwrap();
            assert_eq!(out, raw);
        }
        // A uuid is a struct tt_uuid cdata, as in 2.6.
        let v = decode(&lua, &mut Reader::new(&uuid), 0).unwrap();
        assert!(matches!(v, Value::Other(_)), "{v:?}");
        assert_eq!(v.to_string().unwrap(), "f47ac10b-58cc-4372-a567-0e02b2c3d479");
        // A decimal is a decimal_t cdata, as in 2.6.
        let v = decode(&lua, &mut Reader::new(decimal), 0).unwrap();
        assert!(matches!(v, Value::Other(_)), "{v:?}");
        assert_eq!(v.to_string().unwrap(), "-12.345");
    }

    #[test]
    fn nil_decodes_to_box_null_and_encodes_back() {
        let lua = Lua::new();
        let v = decode(&lua, &mut Reader::new(&[0x92, 0xc0, 0x01]), 0).unwrap();
        let Value::Table(t) = &v else { panic!("not a table: {v:?}") };
        let first: Value = t.raw_get(1).unwrap();
        assert!(is_null(&first));
        assert_eq!(first.to_string().unwrap(), NULL_TEXT);
        assert!(!is_null(&Value::Nil) && !is_null(&Value::Integer(0)));
        let mut out = Vec::new();
        encode(&mut out, &v).unwrap();
        assert_eq!(out, [0x92, 0xc0, 0x01]);
        // Another NULL pointer of the same ctype is nil too; a non-NULL one has no msgpack form.
        let other: Value = lua.load("return require('ffi').cast('void *', 0)").eval().unwrap();
        assert!(is_null(&other));
        let pointer: Value = lua.load("return require('ffi').cast('void *', 1)").eval().unwrap();
        assert!(encode(&mut Vec::new(), &pointer).is_err());
    }

    fn encoded_with(lua: &Lua, code: &str, options: &Options) -> Result<Vec<u8>, String> {
        let v: Value = lua.load(code).eval().unwrap();
        let mut out = Vec::new();
        encode_with(&mut out, &v, options).map(|()| out).map_err(|e| e.to_string())
    }

    #[test]
    fn the_options_decide_what_becomes_of_values_with_no_plain_encoding() {
        let lua = super::super::open_state();
        let defaults = Options::DEFAULT;
        assert_eq!(encoded_with(&lua, "return 0/0", &defaults).unwrap()[0], 0xcb, "a double NaN");
        let strict = Options { encode_invalid_numbers: false, ..defaults };
        assert!(encoded_with(&lua, "return 1/0", &strict).unwrap_err().contains("must not be NaN or Inf"));
        let as_nil = Options { encode_invalid_as_nil: true, ..strict };
        assert_eq!(encoded_with(&lua, "return {1/0, print}", &as_nil).unwrap(), [0x92, 0xc0, 0xc0]);
        assert!(encoded_with(&lua, "return print", &defaults).unwrap_err().contains("unsupported Lua type 'function'"));
        let hooked = "return setmetatable({1, 2}, {__serialize = function(t) return #t end})";
        assert_eq!(encoded_with(&lua, hooked, &defaults).unwrap(), [0x02]);
        let ignoring = Options { encode_load_metatables: false, ..defaults };
        assert_eq!(encoded_with(&lua, hooked, &ignoring).unwrap(), [0x92, 0x01, 0x02]);
        let bad_hook = "return setmetatable({}, {__serialize = 'neither'})";
        assert!(encoded_with(&lua, bad_hook, &defaults).unwrap_err().contains("invalid __serialize value"));
    }

    #[test]
    fn depth_and_sparseness_follow_the_options() {
        let lua = super::super::open_state();
        let shallow = Options { encode_max_depth: 2, ..Options::DEFAULT };
        assert_eq!(encoded_with(&lua, "return {{1}}", &shallow).unwrap(), [0x91, 0x91, 0x01]);
        assert!(encoded_with(&lua, "return {{{1}}}", &shallow).unwrap_err().contains("Too high nest level - 3"));
        let deep_as_nil = Options { encode_deep_as_nil: true, ..shallow };
        assert_eq!(encoded_with(&lua, "return {{{1}}}", &deep_as_nil).unwrap(), [0x91, 0x91, 0xc0]);
        let sparse = "return {[1] = 1, [20] = 2}";
        assert_eq!(encoded_with(&lua, sparse, &Options::DEFAULT).unwrap()[0], 0x82, "a map");
        let refusing = Options { encode_sparse_convert: false, ..Options::DEFAULT };
        assert!(encoded_with(&lua, sparse, &refusing).unwrap_err().contains("excessively sparse array"));
        let never_sparse = Options { encode_sparse_ratio: 0, ..Options::DEFAULT };
        assert_eq!(encoded_with(&lua, sparse, &never_sparse).unwrap()[..3], [0xdc, 0x00, 0x14], "an array of 20");
    }

    #[test]
    fn decoding_follows_the_options() {
        let lua = Lua::new();
        let nan = [0xcb, 0x7f, 0xf8, 0, 0, 0, 0, 0, 0];
        assert!(decode_with(&lua, &mut Reader::new(&nan), 0, &Options::DEFAULT).is_ok());
        let strict = Options { decode_invalid_numbers: false, ..Options::DEFAULT };
        assert!(decode_with(&lua, &mut Reader::new(&nan), 0, &strict).is_err());
        let bare = Options { decode_save_metatables: false, ..Options::DEFAULT };
        let Value::Table(t) = decode_with(&lua, &mut Reader::new(&[0x91, 0x01]), 0, &bare).unwrap() else {
            panic!("not a table")
        };
        assert!(t.metatable().is_none());
    }
}
