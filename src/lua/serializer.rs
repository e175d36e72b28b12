//! A serializer's options, as 2.6's `luaL_serializer`: what `msgpack.cfg{...}`
//! or an instance's `cfg{...}` (`msgpack.new()`) set, read by [`super::convert`].
//!
//! The module's own options are also the default encoder's: replies to CALL and
//! EVAL and tuples made from Lua tables follow `msgpack.cfg`, as in 2.6.

use std::cell::Cell;

use mlua::{Table, UserData, Value};

/// The options msgpack's encoder and decoder act on (2.6's names and defaults).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[allow(clippy::struct_excessive_bools, reason = "one flag per option of 2.6's serializer")]
pub struct Options {
    /// Tables nested deeper than this are an error, or nil with `encode_deep_as_nil`.
    pub encode_max_depth: u32,
    /// A table nested too deep is written as nil rather than refused.
    pub encode_deep_as_nil: bool,
    /// NaN and ±inf may be written.
    pub encode_invalid_numbers: bool,
    /// `__serialize` in a metatable (or a cdata's or userdata's) is honoured.
    pub encode_load_metatables: bool,
    /// A value with no encoding is written as its `tostring`.
    pub encode_use_tostring: bool,
    /// A value with no encoding (or an invalid number) is written as nil.
    pub encode_invalid_as_nil: bool,
    /// An excessively sparse array is written as a map rather than refused.
    pub encode_sparse_convert: bool,
    /// A table whose greatest index is over this many times its key count is sparse (0: never).
    pub encode_sparse_ratio: u32,
    /// ... when that index is also over this.
    pub encode_sparse_safe: u32,
    /// NaN and ±inf may be read.
    pub decode_invalid_numbers: bool,
    /// Decoded arrays and maps get the `seq`/`map` metatables.
    pub decode_save_metatables: bool,
    /// An extension type 2.6 has no Lua value for is an error ("Unsuported MsgPack
    /// extension type", as `msgpack.decode` says it), rather than a value that is
    /// written back as it came. Not a `cfg` option: set where Lua code decodes.
    pub decode_unknown_ext_as_error: bool,
    /// A `box.error` object is written as an MP_ERROR extension (type 3), as 2.6
    /// writes a reply's errors for a session with `error_marshaling_enabled`; else
    /// as its message. Not a `cfg` option.
    pub encode_errors_as_ext: bool,
}

impl Options {
    /// 2.6's defaults.
    pub const DEFAULT: Self = Self {
        encode_max_depth: 128,
        encode_deep_as_nil: false,
        encode_invalid_numbers: true,
        encode_load_metatables: true,
        encode_use_tostring: false,
        encode_invalid_as_nil: false,
        encode_sparse_convert: true,
        encode_sparse_ratio: 2,
        encode_sparse_safe: 10,
        decode_invalid_numbers: true,
        decode_save_metatables: true,
        decode_unknown_ext_as_error: false,
        encode_errors_as_ext: false,
    };

    /// The options a serializer's `cfg` table holds (missing ones at their defaults).
    ///
    /// # Errors
    /// A field of the wrong type.
    pub fn from_cfg(cfg: &Table) -> mlua::Result<Self> {
        let d = Self::DEFAULT;
        let flag = |name: &str, default: bool| -> mlua::Result<bool> {
            Ok(match cfg.raw_get::<Value>(name)? {
                Value::Nil => default,
                Value::Boolean(b) => b,
                // 2.6 takes any other value by its truth.
                _ => true,
            })
        };
        let count = |name: &str, default: u32| -> mlua::Result<u32> {
            Ok(match cfg.raw_get::<Option<f64>>(name)? {
                #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss, reason = "clamped to u32 first")]
                Some(n) => n.clamp(0.0, f64::from(u32::MAX)) as u32,
                None => default,
            })
        };
        Ok(Self {
            encode_max_depth: count("encode_max_depth", d.encode_max_depth)?,
            encode_deep_as_nil: flag("encode_deep_as_nil", d.encode_deep_as_nil)?,
            encode_invalid_numbers: flag("encode_invalid_numbers", d.encode_invalid_numbers)?,
            encode_load_metatables: flag("encode_load_metatables", d.encode_load_metatables)?,
            encode_use_tostring: flag("encode_use_tostring", d.encode_use_tostring)?,
            encode_invalid_as_nil: flag("encode_invalid_as_nil", d.encode_invalid_as_nil)?,
            encode_sparse_convert: flag("encode_sparse_convert", d.encode_sparse_convert)?,
            encode_sparse_ratio: count("encode_sparse_ratio", d.encode_sparse_ratio)?,
            encode_sparse_safe: count("encode_sparse_safe", d.encode_sparse_safe)?,
            decode_invalid_numbers: flag("decode_invalid_numbers", d.decode_invalid_numbers)?,
            decode_save_metatables: flag("decode_save_metatables", d.decode_save_metatables)?,
            encode_errors_as_ext: false,
            decode_unknown_ext_as_error: d.decode_unknown_ext_as_error,
        })
    }
}

impl Default for Options {
    fn default() -> Self {
        Self::DEFAULT
    }
}

thread_local! {
    /// `msgpack.cfg`: the default encoder's options (per Lua thread; there is one).
    static MODULE_OPTIONS: Cell<Options> = const { Cell::new(Options::DEFAULT) };
}

thread_local! {
    /// Sessions whose replies carry errors as MP_ERROR (`error_marshaling_enabled`).
    static MARSHALING_SESSIONS: std::cell::RefCell<std::collections::HashSet<u64>> =
        std::cell::RefCell::new(std::collections::HashSet::new());
}

/// Sets session `session`'s `error_marshaling_enabled`.
pub fn set_error_marshaling(session: u64, on: bool) {
    MARSHALING_SESSIONS.with(|s| {
        let mut sessions = s.borrow_mut();
        if on {
            sessions.insert(session);
        } else {
            sessions.remove(&session);
        }
    });
}

/// The options a reply to session `session` is written with: the module's, and
/// errors as MP_ERROR when the session asked for them.
#[must_use]
pub fn reply_options(session: u64) -> Options {
    let marshal = MARSHALING_SESSIONS.with(|s| {
        let sessions = s.borrow();
        !sessions.is_empty() && sessions.contains(&session)
    });
    Options { encode_errors_as_ext: marshal, ..module_options() }
}

/// The msgpack module's options (`msgpack.cfg`).
#[must_use]
pub fn module_options() -> Options {
    MODULE_OPTIONS.with(Cell::get)
}

/// Sets the msgpack module's options.
pub fn set_module_options(options: Options) {
    MODULE_OPTIONS.with(|o| o.set(options));
}

/// A serializer instance's options, held by its encode and decode functions.
#[derive(Debug, Clone, Copy)]
pub struct LuaOptions(pub Options);

impl UserData for LuaOptions {}

/// The options an encode or decode call uses: an instance's, or the module's (`nil`).
///
/// # Errors
/// `v` is neither.
pub fn options_of(v: &Value) -> mlua::Result<Options> {
    match v {
        Value::Nil => Ok(module_options()),
        Value::UserData(ud) => Ok(ud.borrow::<LuaOptions>()?.0),
        other => Err(mlua::Error::runtime(format!("serializer options expected, got {}", other.type_name()))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cfg_table_gives_its_options_and_defaults_for_the_rest() {
        let lua = mlua::Lua::new();
        let cfg = lua.create_table().unwrap();
        assert_eq!(Options::from_cfg(&cfg).unwrap(), Options::DEFAULT);
        cfg.raw_set("encode_max_depth", 5).unwrap();
        cfg.raw_set("encode_invalid_numbers", false).unwrap();
        cfg.raw_set("encode_sparse_ratio", -3).unwrap();
        let o = Options::from_cfg(&cfg).unwrap();
        assert_eq!((o.encode_max_depth, o.encode_invalid_numbers, o.encode_sparse_ratio), (5, false, 0));
        assert!(o.encode_load_metatables, "untouched options keep their defaults");
    }

    #[test]
    fn the_module_options_are_what_was_set_last() {
        let changed = Options { encode_use_tostring: true, ..Options::DEFAULT };
        set_module_options(changed);
        assert_eq!(module_options(), changed);
        assert_eq!(options_of(&Value::Nil).unwrap(), changed);
        set_module_options(Options::DEFAULT);
    }
}
