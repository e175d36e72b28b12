//! `box.internal.native`: pure functions the Lua modules (`digest`, `clock`, `log`) call.
//!
//! Unlike `box.internal.op`, these touch no engine state, so they are bound once when
//! the VM is created and work before `box.cfg{}` too (a script may hash a password or
//! read a clock first). Each takes and returns plain Lua values; argument checking and
//! Tarantool's error messages live in the Lua modules.

use std::rc::Rc;

use base64::Engine as _;
use mlua::{IntoLuaMulti, Lua, LuaString, Table, Value};
use sha1::Digest as _;

use super::convert;
use super::serializer;
use super::tuple::{LuaTuple, NamedFormat, TupleFormat};
use crate::engine::space::Space;
use crate::engine::tuple::split;
use crate::engine::update;
use crate::error::{code, BoxResult};
use crate::protocol::msgpack::Reader;

/// An OS error's text as strerror(3) gives it (Rust's own adds " (os error N)").
pub(crate) fn strerror(e: &std::io::Error) -> String {
    let text = e.to_string();
    text.split(" (os error").next().unwrap_or(&text).to_owned()
}

/// Builds the `native` table.
pub fn create(lua: &Lua) -> mlua::Result<Table> {
    let t = lua.create_table()?;
    t.set(
        "hash",
        lua.create_function(|lua, (algo, data): (LuaString, LuaString)| {
            let data = data.as_bytes();
            let out = match &*algo.as_bytes() {
                b"sha1" => sha1::Sha1::digest(&*data).to_vec(),
                b"sha224" => sha2::Sha224::digest(&*data).to_vec(),
                b"sha256" => sha2::Sha256::digest(&*data).to_vec(),
                b"sha384" => sha2::Sha384::digest(&*data).to_vec(),
                b"sha512" => sha2::Sha512::digest(&*data).to_vec(),
                b"md5" => md5::Md5::digest(&*data).to_vec(),
                b"ripemd160" => ripemd::Ripemd160::digest(&*data).to_vec(),
                other => {
                    return Err(mlua::Error::runtime(format!("unknown digest {}", String::from_utf8_lossy(other))))
                }
            };
            lua.create_string(out)
        })?,
    )?;
    t.set(
        "hex",
        lua.create_function(|lua, data: LuaString| {
            let hex: String = data.as_bytes().iter().map(|b| format!("{b:02x}")).collect();
            lua.create_string(hex)
        })?,
    )?;
    t.set(
        "pbkdf2",
        lua.create_function(|lua, (pass, salt, iters, len): (LuaString, LuaString, u32, usize)| {
            let mut out = vec![0u8; len];
            pbkdf2::pbkdf2_hmac::<sha2::Sha256>(&pass.as_bytes(), &salt.as_bytes(), iters.max(1), &mut out);
            lua.create_string(out)
        })?,
    )?;
    t.set(
        "aes256cbc",
        lua.create_function(|lua, (encrypt, data, key, iv): (bool, LuaString, LuaString, LuaString)| match aes256cbc(
            encrypt,
            &data.as_bytes(),
            &key.as_bytes(),
            &iv.as_bytes(),
        ) {
            Ok(out) => Ok((Value::String(lua.create_string(out)?), Value::Nil)),
            Err(msg) => Ok((Value::Nil, Value::String(lua.create_string(msg)?))),
        })?,
    )?;
    t.set(
        "msgpack_encode",
        // The encoding, or nil and why not (lua/box.lua raises it as msgpack.encode's error).
        // `options`: a serializer instance's (`msgpack_options`), nil for msgpack's own.
        lua.create_function(|lua, (v, options): (Value, Value)| {
            let mut out = Vec::new();
            Ok(match convert::encode_with(&mut out, &v, &serializer::options_of(&options)?) {
                Ok(()) => (Value::String(lua.create_string(out)?), Value::Nil),
                Err(mlua::Error::RuntimeError(why)) => (Value::Nil, Value::String(lua.create_string(why)?)),
                Err(e) => return Err(e),
            })
        })?,
    )?;
    t.set(
        "msgpack_decode",
        // The value at 1-based `pos` and the position after it, or nil when the bytes
        // there are not one whole msgpack value (lua/box.lua checks `pos` first).
        // Another error than malformed bytes (a refused NaN, a NaN key) is the third
        // result. As in 2.6, the bytes are checked whole first (msgpuck's mp_check).
        lua.create_function(|lua, (data, pos, options): (LuaString, usize, Value)| {
            let options =
                serializer::Options { decode_unknown_ext_as_error: true, ..serializer::options_of(&options)? };
            let data = data.as_bytes();
            let value = data.get(pos.saturating_sub(1)..).unwrap_or(&[]);
            if crate::protocol::msgpack::value_end_as_msgpuck(value).is_err() {
                return Ok((Value::Nil, None, None));
            }
            let mut r = crate::protocol::msgpack::Reader::new(value);
            Ok(match convert::decode_with(lua, &mut r, 0, &options) {
                Ok(v) => (v, Some(pos + r.position()), None),
                Err(mlua::Error::RuntimeError(why)) if why != convert::INVALID_MSGPACK => (Value::Nil, None, Some(why)),
                Err(_) => (Value::Nil, None, None),
            })
        })?,
    )?;
    t.set(
        "json_plain",
        // json.encode's text of a table of plain data (src/lua/plain_json.rs), or
        // nil for lua/console.lua's encoder to write: `json_plain(t, precision,
        // max_depth, sparse_convert, sparse_ratio, sparse_safe, load_metatables)`,
        // the options as the serializer's cfg holds them.
        lua.create_function(|lua, args: (mlua::Table, f64, f64, Value, f64, f64, Value)| {
            let (t, precision, max_depth, sparse_convert, sparse_ratio, sparse_safe, load_metatables) = args;
            let whole = |n: f64| (n >= 0.0 && n.fract() == 0.0 && n <= f64::from(u32::MAX)).then_some(n);
            #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss, reason = "checked whole, within u32")]
            let (Some(max_depth), Some(ratio), Some(safe)) =
                (whole(max_depth), whole(sparse_ratio), whole(sparse_safe))
            else {
                return Ok(Value::Nil);
            };
            #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss, reason = "checked whole, within u32")]
            let options = serializer::Options {
                encode_max_depth: max_depth as u32,
                encode_sparse_convert: sparse_convert.as_boolean().unwrap_or(!sparse_convert.is_nil()),
                encode_sparse_ratio: ratio as u32,
                encode_sparse_safe: safe as u32,
                encode_load_metatables: load_metatables.as_boolean().unwrap_or(!load_metatables.is_nil()),
                ..serializer::Options::DEFAULT
            };
            #[allow(
                clippy::cast_possible_truncation,
                clippy::cast_sign_loss,
                reason = "1 to 14 are used; others are 14"
            )]
            let precision = if (1.0..=14.0).contains(&precision) { precision as u32 } else { 14 };
            match super::plain_json::encode_table(&t, &options, precision)? {
                Some(text) => Ok(Value::String(lua.create_string(text)?)),
                None => Ok(Value::Nil),
            }
        })?,
    )?;
    t.set(
        "json_decode",
        // The value, or nil and 2.6's message (lua/console.lua raises it as json.decode's).
        lua.create_function({
            let decoder = super::json::Decoder::new(lua)?;
            move |lua, (text, max_depth, invalid_numbers, save_metatables): (LuaString, f64, bool, bool)| {
                #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss, reason = "saturates; negative is 0")]
                let max_depth = max_depth.max(0.0) as usize;
                Ok(
                    match decoder.decode(
                        lua,
                        &text.as_bytes(),
                        super::json::DecodeOptions { max_depth, invalid_numbers, save_metatables },
                    )? {
                        Ok(v) => (v, Value::Nil),
                        Err(why) => (Value::Nil, Value::String(lua.create_string(why)?)),
                    },
                )
            }
        })?,
    )?;
    t.set(
        "format_number",
        // A serialized double as 2.6 writes one (fpconv_g_fmt: printf's `%.Ng`,
        // `encode_number_precision` digits, 14 when that is not 1 to 14).
        lua.create_function(|_, (n, precision): (f64, f64)| {
            let digits = if (1.0..=14.0).contains(&precision) { precision } else { 14.0 };
            #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss, reason = "1 to 14")]
            Ok(crate::printf::format_g(n, digits as usize))
        })?,
    )?;
    t.set("crc32c", lua.create_function(|_, (crc, data): (u32, LuaString)| Ok(crc32c_update(crc, &data.as_bytes())))?)?;
    t.set("murmur", lua.create_function(|_, (data, seed): (LuaString, u32)| Ok(murmur3_32(&data.as_bytes(), seed)))?)?;
    t.set("guava", lua.create_function(|_, (state, buckets): (i64, i32)| Ok(guava(state, buckets)))?)?;
    t.set(
        "urandom",
        lua.create_function(|lua, n: usize| {
            let mut buf = vec![0u8; n];
            getrandom::getrandom(&mut buf).map_err(|e| mlua::Error::runtime(format!("urandom: {e}")))?;
            lua.create_string(buf)
        })?,
    )?;
    t.set(
        "base64_encode",
        lua.create_function(|lua, (data, urlsafe, nopad, nowrap): (LuaString, bool, bool, bool)| {
            lua.create_string(base64_encode(&data.as_bytes(), urlsafe, nopad, nowrap))
        })?,
    )?;
    t.set(
        "base64_decode",
        lua.create_function(|lua, data: LuaString| lua.create_string(base64_decode(&data.as_bytes())))?,
    )?;
    t.set(
        "clock",
        lua.create_function(|_, kind: LuaString| {
            use rustix::time::ClockId;
            let id = match &*kind.as_bytes() {
                b"realtime" => ClockId::Realtime,
                b"monotonic" => ClockId::Monotonic,
                b"process" => ClockId::ProcessCPUTime,
                b"thread" => ClockId::ThreadCPUTime,
                _ => return Err(mlua::Error::runtime("unknown clock")),
            };
            let ts = rustix::time::clock_gettime(id);
            #[allow(clippy::cast_precision_loss, reason = "seconds since 1970 fit a double exactly")]
            Ok((ts.tv_sec as f64, ts.tv_nsec as f64))
        })?,
    )?;
    t.set(
        "log_open",
        // log_open(value): log.cfg{log = value} (a file, pipe or syslog); true, or nil and why.
        lua.create_function(|lua, value: LuaString| match crate::log_sink::open(&value.to_string_lossy()) {
            Ok(()) => true.into_lua_multi(lua),
            Err(why) => (Value::Nil, why).into_lua_multi(lua),
        })?,
    )?;
    t.set(
        "log_target",
        // log_target(value): the kind of a `log` value ('file', 'pipe', 'syslog'),
        // or nil and 2.6's reason to refuse it.
        lua.create_function(|lua, value: LuaString| match crate::log_sink::Target::check(&value.to_string_lossy()) {
            Ok(kind) => kind.into_lua_multi(lua),
            Err(why) => (Value::Nil, why).into_lua_multi(lua),
        })?,
    )?;
    t.set(
        "log_rotate",
        // log_rotate(): log.rotate(); true, or nil and why.
        lua.create_function(|lua, ()| match crate::log_sink::rotate() {
            Ok(()) => true.into_lua_multi(lua),
            Err(why) => (Value::Nil, why).into_lua_multi(lua),
        })?,
    )?;
    t.set(
        "set_error_marshaling",
        // set_error_marshaling(session, on): the session's error_marshaling_enabled.
        lua.create_function(|_, (session, on): (u64, bool)| {
            super::serializer::set_error_marshaling(session, on);
            Ok(())
        })?,
    )?;
    t.set(
        "log_write",
        lua.create_function(|_, line: LuaString| {
            let mut bytes = line.as_bytes().to_vec();
            bytes.push(b'\n');
            crate::log_sink::write(&bytes);
            Ok(())
        })?,
    )?;
    t.set(
        "setenv",
        lua.create_function(|_, (key, value): (LuaString, Option<LuaString>)| {
            let key = key.to_str()?.to_string();
            if key.is_empty() || key.contains(['=', '\0']) {
                return Err(mlua::Error::runtime(format!("invalid environment variable name '{key}'")));
            }
            match value {
                Some(v) => {
                    let v = v.to_str()?.to_string();
                    if v.contains('\0') {
                        return Err(mlua::Error::runtime("an environment variable's value cannot hold a zero byte"));
                    }
                    std::env::set_var(key, v);
                }
                None => std::env::remove_var(key),
            }
            Ok(())
        })?,
    )?;
    // msgpack.cfg's options, for the default encoder and decoder.
    t.set(
        "set_msgpack_options",
        lua.create_function(|_, cfg: Table| {
            serializer::set_module_options(serializer::Options::from_cfg(&cfg)?);
            Ok(())
        })?,
    )?;
    // A serializer instance's options, from its cfg table.
    t.set(
        "msgpack_options",
        lua.create_function(|_, cfg: Table| Ok(serializer::LuaOptions(serializer::Options::from_cfg(&cfg)?)))?,
    )?;
    t.set("is_tuple", lua.create_function(|_, v: mlua::Value| Ok(super::is_tuple(&v)))?)?;
    t.set(
        "tuple_methods",
        lua.create_function(|lua, methods: Table| lua.set_named_registry_value(super::tuple::METHODS, methods))?,
    )?;
    t.set(
        "tuple_new",
        lua.create_function(
            |lua, (v, format, never_sparse): (Value, Option<mlua::UserDataRef<NamedFormat>>, Option<bool>)| {
                let mut options = serializer::module_options();
                if never_sparse == Some(true) {
                    options.encode_sparse_ratio = 0;
                }
                let format = format.map_or_else(|| Rc::new(TupleFormat::default()), |f| f.0.clone());
                tuple_new(lua, &v, format, &options)
            },
        )?,
    )?;
    // tuple_from_msgpack(bytes): a tuple of an encoded array as it is (the order of a
    // map inside kept), as 2.6 makes one of a record's key or tuple; nil for
    // anything else than one whole array.
    t.set(
        "tuple_from_msgpack",
        lua.create_function(|lua, raw: LuaString| {
            let bytes = raw.as_bytes();
            let is_array = Reader::new(&bytes).read_array_len().is_ok();
            let whole = is_array && Reader::new(&bytes).skip().is_ok_and(|v| v.len() == bytes.len());
            if !whole {
                return Ok(Value::Nil);
            }
            Ok(Value::UserData(lua.create_userdata(LuaTuple(bytes.to_vec().into(), Rc::default()))?))
        })?,
    )?;
    t.set(
        "tuple_format",
        lua.create_function(|_, names: Vec<String>| Ok(NamedFormat(Rc::new(TupleFormat { names, shape: None }))))?,
    )?;
    t.set(
        "tuple_update",
        lua.create_function(|lua, (tuple, ops, upsert): (mlua::AnyUserData, Value, bool)| {
            let t = tuple.borrow::<LuaTuple>()?;
            let mut ops_bytes = Vec::new();
            convert::encode(&mut ops_bytes, &ops)?;
            let result = update_tuple(&t.0, &t.1, &ops_bytes, upsert);
            Ok(match result {
                Ok(bytes) => {
                    let format = t.1.clone();
                    (Value::UserData(lua.create_userdata(LuaTuple(bytes.into(), format))?), Value::Nil, Value::Nil)
                }
                Err(e) => {
                    (Value::Nil, Value::Integer(i64::from(e.code)), Value::String(lua.create_string(&e.message)?))
                }
            })
        })?,
    )?;
    t.set("strerror", lua.create_function(|_, n: i32| Ok(strerror(&std::io::Error::from_raw_os_error(n))))?)?;
    t.set("pid", lua.create_function(|_, ()| Ok(rustix::process::getpid().as_raw_nonzero().get()))?)?;
    // Blocks the thread: only a script before box.cfg waits this way, for what
    // other threads report (see `inbox`) or for `seconds` (nil: until something
    // arrives). Returns whether a stop signal came.
    t.set("wait_events", lua.create_function(|lua, seconds: Option<f64>| Ok(super::inbox::wait(lua, seconds)))?)?;
    t.set(
        "fiber_count",
        lua.create_function(|lua, n: usize| {
            lua.set_app_data(FiberCount(n));
            Ok(())
        })?,
    )?;
    super::tuple::add_natives(lua, &t)?;
    Ok(t)
}

/// How many Lua fibers are alive (kept by `lua/fiber.lua`): none, and the scheduler costs nothing.
#[derive(Debug, Clone, Copy, Default)]
pub struct FiberCount(pub usize);

/// `box.tuple.new(t)`: a tuple from a Lua array (or a scalar, as a one-field tuple),
/// its fields named by `format` (net.box's tuples take their space's names), encoded
/// with `options`. 2.6 encodes `box.tuple.new(table)` and `space:frommap()` with
/// msgpack's options but `encode_sparse_ratio = 0` (Lua's `tuple_new(t, nil, true)`):
/// a sparse table in any field is an array with nils there, not a map.
/// A value msgpack cannot encode gives no code, and why as the message.
fn tuple_new(
    lua: &Lua,
    v: &Value,
    format: Rc<TupleFormat>,
    options: &serializer::Options,
) -> mlua::Result<(Value, Value, Value)> {
    let mut bytes = Vec::new();
    if let Err(e) = convert::encode_with(&mut bytes, v, options) {
        let mlua::Error::RuntimeError(why) = e else { return Err(e) };
        return Ok((Value::Nil, Value::Nil, Value::String(lua.create_string(why)?)));
    }
    if !matches!(bytes.first(), Some(0x90..=0x9f | 0xdc | 0xdd)) {
        let msg = lua.create_string("Tuple/Key must be MsgPack array")?;
        return Ok((Value::Nil, Value::Integer(i64::from(code::TUPLE_NOT_ARRAY)), Value::String(msg)));
    }
    let t = LuaTuple(bytes.into(), format);
    Ok((Value::UserData(lua.create_userdata(t)?), Value::Nil, Value::Nil))
}

/// `tuple:update(ops)` / `tuple:upsert(ops)`: the operations applied to a tuple outside
/// any space; one from a space gives a tuple its space's format and indexes accept,
/// as in 2.6 (fields are named by the format in either case).
fn update_tuple(tuple: &[u8], format: &TupleFormat, ops: &[u8], upsert: bool) -> BoxResult<Vec<u8>> {
    let unnamed;
    let space = match &format.shape {
        Some(space) => space,
        None => {
            unnamed = Space::with_field_names(&format.names);
            &unnamed
        }
    };
    let ops = update::parse_ops(ops, 1)?;
    let fields = split(tuple)?;
    let new = if upsert {
        update::apply_skipping_failures(&ops, &fields, space)?
    } else {
        update::apply(&ops, &fields, space)?
    };
    if format.shape.is_some() {
        space.validate_split(&new.tuple, &new.fields())?;
    }
    Ok(new.tuple.to_vec())
}

/// AES-256 in CBC mode with PKCS#7 padding; the error is Tarantool's message.
fn aes256cbc(encrypt: bool, data: &[u8], key: &[u8], iv: &[u8]) -> Result<Vec<u8>, String> {
    use aes::cipher::{block_padding::Pkcs7, BlockDecryptMut, BlockEncryptMut, KeyIvInit};
    if key.len() != 32 {
        return Err(format!("key size expected 32, got {}", key.len()));
    }
    if iv.len() != 16 {
        return Err(format!("iv size expected 16, got {}", iv.len()));
    }
    if encrypt {
        let cipher = cbc::Encryptor::<aes::Aes256>::new_from_slices(key, iv).map_err(|e| e.to_string())?;
        Ok(cipher.encrypt_padded_vec_mut::<Pkcs7>(data))
    } else {
        let cipher = cbc::Decryptor::<aes::Aes256>::new_from_slices(key, iv).map_err(|e| e.to_string())?;
        cipher.decrypt_padded_vec_mut::<Pkcs7>(data).map_err(|_| "OpenSSL error: wrong final block length".to_owned())
    }
}

/// CRC-32C (Castagnoli, reflected polynomial 0x82F63B78) table, built at compile time.
const CRC32C_TABLE: [u32; 256] = {
    let mut table = [0u32; 256];
    let mut i = 0;
    while i < 256 {
        #[allow(clippy::cast_possible_truncation, reason = "i < 256")]
        let mut c = i as u32;
        let mut k = 0;
        while k < 8 {
            c = if c & 1 == 1 { (c >> 1) ^ 0x82F6_3B78 } else { c >> 1 };
            k += 1;
        }
        table[i] = c;
        i += 1;
    }
    table
};

/// Tarantool's `crc32_update`: CRC-32C over `data` from `crc`, without the final inversion.
#[must_use]
pub fn crc32c_update(mut crc: u32, data: &[u8]) -> u32 {
    for b in data {
        crc = CRC32C_TABLE[((crc ^ u32::from(*b)) & 0xFF) as usize] ^ (crc >> 8);
    }
    crc
}

/// MurmurHash3, x86 32-bit variant (Tarantool's `digest.murmur`; HASH indexes hash keys with it too).
pub use crate::engine::key_hash::murmur3_32;

/// Guava's consistent hash: the bucket in `0..buckets` for `state`.
#[must_use]
pub fn guava(mut state: i64, buckets: i32) -> i32 {
    let mut candidate: i32 = 0;
    loop {
        state = state.wrapping_mul(2_862_933_555_777_941_757).wrapping_add(1);
        #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss, reason = "as Guava's int arithmetic")]
        let draw = f64::from(((state as u64) >> 33) as i32 + 1) / 2_147_483_648.0;
        #[allow(clippy::cast_possible_truncation, reason = "saturating, as Java's (int) cast")]
        let next = (f64::from(candidate + 1) / draw) as i32;
        if (0..buckets).contains(&next) {
            candidate = next;
        } else {
            return candidate;
        }
    }
}

/// Base64 as Tarantool writes it: a line break after every 72 characters of whole
/// 3-byte groups unless `nowrap`; `urlsafe` uses `-_` and never pads.
#[must_use]
pub fn base64_encode(data: &[u8], urlsafe: bool, nopad: bool, nowrap: bool) -> Vec<u8> {
    use base64::engine::general_purpose::{STANDARD, STANDARD_NO_PAD, URL_SAFE_NO_PAD};
    let engine = match (urlsafe, nopad) {
        (true, _) => &URL_SAFE_NO_PAD,
        (false, true) => &STANDARD_NO_PAD,
        (false, false) => &STANDARD,
    };
    if nowrap || urlsafe {
        return engine.encode(data).into_bytes();
    }
    let mut out = Vec::with_capacity(data.len() * 4 / 3 + data.len() / 54 + 4);
    let mut chunks = data.chunks_exact(54);
    for c in chunks.by_ref() {
        out.extend_from_slice(engine.encode(c).as_bytes());
        out.push(b'\n');
    }
    out.extend_from_slice(engine.encode(chunks.remainder()).as_bytes());
    out
}

/// Base64 decoding as Tarantool does it: both alphabets, other characters (`=` too) skipped.
#[must_use]
pub fn base64_decode(text: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(text.len() * 3 / 4);
    let (mut acc, mut bits) = (0u32, 0u32);
    for c in text {
        let v = match c {
            b'A'..=b'Z' => c - b'A',
            b'a'..=b'z' => c - b'a' + 26,
            b'0'..=b'9' => c - b'0' + 52,
            b'+' | b'-' => 62,
            b'/' | b'_' => 63,
            _ => continue,
        };
        acc = (acc << 6) | u32::from(v);
        bits += 6;
        if bits >= 8 {
            bits -= 8;
            #[allow(clippy::cast_possible_truncation, reason = "one byte taken")]
            out.push((acc >> bits) as u8);
            acc &= (1 << bits) - 1;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn crc32c_matches_tarantool() {
        // Values from Tarantool 2.6: digest.crc32('abc'), digest.crc32_update(0, 'abc').
        assert_eq!(crc32c_update(u32::MAX, b"abc"), 3_384_066_120);
        assert_eq!(crc32c_update(0, b"abc"), 1_445_960_909);
    }

    #[test]
    fn murmur_and_guava_match_tarantool() {
        assert_eq!(murmur3_32(b"abc", 13), 3_408_160_902);
        assert_eq!(murmur3_32(b"abc", 5), 3_497_614_365);
        assert_eq!(guava(1234, 10), 3);
        assert_eq!(guava(100, 7), 4);
        assert_eq!(guava(123_456_789, 1000), 294);
    }

    #[test]
    fn base64_wraps_whole_lines() {
        let s = base64_encode(&[b'y'; 54], false, false, false);
        assert_eq!(s.len(), 73);
        assert_eq!(s[72], b'\n');
        assert_eq!(base64_decode(b"YW\nI="), b"ab");
        assert_eq!(base64_decode(b"_-8"), [0xff, 0xef]);
    }
}
