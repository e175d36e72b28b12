//! `box.internal.key_def`: what the `key_def` module (lua/key_def.lua) needs from
//! Rust: key parts checked and compared exactly as an index compares them.
//!
//! A key definition is a userdata holding its parts; the Lua module checks the
//! arguments of `key_def.new` and builds one with [`create`]'s `new`. Tuples come
//! as tuples or Lua tables. Failures come back as (nil, code, message) for the
//! module to raise with 2.6's texts.

use std::cmp::Ordering;

use mlua::{AnyUserData, Lua, Table, UserData, Value};

use super::convert;
use super::tuple::{LuaTuple, TupleFormat};
use crate::engine::field_path::{FieldPath, Found, PathError};
use crate::engine::index::Part;
use crate::engine::tuple::split;
use crate::engine::value::{Collation, FieldType, Key, KeyPart};
use crate::error::{code, BoxError};
use crate::protocol::msgpack::{write, Reader};

/// The parts of one key definition.
struct KeyDef(Vec<Part>);

impl UserData for KeyDef {}

/// A failure as the Lua module raises it: (nil, code, message).
type Failure = (Value, Value, Value);

fn failure(lua: &Lua, e: &BoxError) -> mlua::Result<Failure> {
    Ok((Value::Nil, Value::Integer(i64::from(e.code)), Value::String(lua.create_string(&e.message)?)))
}

/// The msgpack form of a tuple or a Lua table.
fn bytes_of(v: &Value) -> mlua::Result<Vec<u8>> {
    let mut out = Vec::new();
    convert::encode(&mut out, v)?;
    Ok(out)
}

/// ER_KEY_PART_TYPE for part `i` (0-based).
fn part_type_error(i: usize, part: &Part) -> BoxError {
    BoxError::new(
        code::KEY_PART_TYPE,
        format!("Supplied key type of part {i} does not match index part type: expected {}", part.ty.name()),
    )
}

/// The raw field each part takes from `tuple`, checked against the part (a
/// missing field is nil where the part is nullable).
fn key_fields<'t>(parts: &[Part], tuple: &'t [u8]) -> Result<Vec<Option<&'t [u8]>>, BoxError> {
    let fields = split(tuple).map_err(|_| BoxError::new(code::TUPLE_NOT_ARRAY, "Tuple/Key must be MsgPack array"))?;
    let mut out = Vec::with_capacity(parts.len());
    for (i, part) in parts.iter().enumerate() {
        let found = fields.get(part.field_no as usize).copied().and_then(|raw| match &part.path {
            None => Some(raw),
            // A place not there, or under a value that is not a container, is missing.
            Some(path) => match path.find(raw) {
                Found::Value(v) => Some(v),
                Found::Missing | Found::NotContainer { .. } => None,
            },
        });
        let Some(raw) = found else {
            if part.nullable {
                out.push(None);
                continue;
            }
            // As 2.6: the field's number, then the path as given.
            let path = part.path.as_deref().map_or("", FieldPath::text);
            return Err(BoxError::new(
                code::FIELD_MISSING,
                format!("Tuple field [{}]{path} required by space format is missing", part.field_no + 1),
            ));
        };
        check_part(i, part, raw)?;
        out.push(Some(raw));
    }
    Ok(out)
}

/// Checks one value against its part and reads it for comparing.
fn check_part(i: usize, part: &Part, raw: &[u8]) -> Result<KeyPart, BoxError> {
    KeyPart::read(&mut Reader::new(raw), part.ty, part.collation, part.nullable)
        .map_err(|_| BoxError::invalid_msgpack("tuple"))?
        .ok_or_else(|| part_type_error(i, part))
}

/// Checks `tuple` as a tuple format made of `parts` checks it (the merger's
/// sources): ER_FIELD_MISSING or ER_FIELD_TYPE, naming the field by number.
fn check_format(parts: &[Part], tuple: &[u8]) -> Result<(), BoxError> {
    let fields = split(tuple).map_err(|_| BoxError::new(code::TUPLE_NOT_ARRAY, "Tuple/Key must be MsgPack array"))?;
    for part in parts {
        let found = fields.get(part.field_no as usize).copied().and_then(|raw| match &part.path {
            None => Some(raw),
            Some(path) => match path.find(raw) {
                Found::Value(v) => Some(v),
                Found::Missing | Found::NotContainer { .. } => None,
            },
        });
        let field = part.field_no + 1;
        match found {
            None if part.nullable => {}
            None => {
                return Err(BoxError::new(
                    code::FIELD_MISSING,
                    format!("Tuple field {field} required by space format is missing"),
                ))
            }
            Some(raw) => {
                KeyPart::read(&mut Reader::new(raw), part.ty, part.collation, part.nullable)
                    .map_err(|_| BoxError::invalid_msgpack("tuple"))?
                    .ok_or_else(|| BoxError::field_type(&field.to_string(), part.ty.name()))?;
            }
        }
    }
    Ok(())
}

/// The key of `tuple` under `parts`, ready to compare.
fn key_of(parts: &[Part], tuple: &[u8]) -> Result<Key, BoxError> {
    let mut key = Key::with_capacity(parts.len());
    for (i, (part, raw)) in parts.iter().zip(key_fields(parts, tuple)?).enumerate() {
        key.push(match raw {
            Some(raw) => check_part(i, part, raw)?,
            None => KeyPart::Nil,
        });
    }
    Ok(key)
}

/// -1, 0 or 1, as 2.6's comparisons return.
fn sign(o: Ordering) -> i64 {
    match o {
        Ordering::Less => -1,
        Ordering::Equal => 0,
        Ordering::Greater => 1,
    }
}

/// Builds the `key_def` table of native functions.
pub fn create(lua: &Lua) -> mlua::Result<Table> {
    let t = lua.create_table()?;
    // path_error(path): why a part may not have the path (2.6's words), or nil.
    t.set(
        "path_error",
        lua.create_function(|_, path: mlua::LuaString| {
            Ok(match std::str::from_utf8(&path.as_bytes()).map(FieldPath::parse) {
                Ok(Ok(p)) if p.split_at_any().is_none() => None,
                Ok(Ok(_) | Err(PathError::TwoPlaceholders)) => Some("multikey path is unsupported"),
                _ => Some("invalid path"),
            })
        })?,
    )?;
    // new({{field_no (0-based), type, is_nullable, collation, path}, ...}): names and
    // paths checked by the module.
    t.set(
        "new",
        lua.create_function(|lua, parts: Vec<Table>| {
            let mut out = Vec::with_capacity(parts.len());
            for part in parts {
                let (field_no, ty, nullable, collation): (u32, mlua::LuaString, bool, Option<mlua::LuaString>) =
                    (part.get(1)?, part.get(2)?, part.get(3)?, part.get(4)?);
                let path = match part.get::<Option<mlua::LuaString>>(5)? {
                    None => None,
                    Some(p) => Some(std::sync::Arc::new(
                        std::str::from_utf8(&p.as_bytes())
                            .ok()
                            .and_then(|p| FieldPath::parse(p).ok())
                            .ok_or_else(|| mlua::Error::runtime("invalid path"))?,
                    )),
                };
                let ty = FieldType::parse(&ty.as_bytes()).ok_or_else(|| mlua::Error::runtime("unknown field type"))?;
                let collation = match collation {
                    Some(name) => Collation::from_name(&name.as_bytes())
                        .ok_or_else(|| mlua::Error::runtime("unknown collation"))?,
                    None => Collation::Binary,
                };
                out.push(Part { path, ..Part::whole(field_no, ty, collation, nullable) });
            }
            lua.create_userdata(KeyDef(out))
        })?,
    )?;
    t.set(
        "extract_key",
        lua.create_function(|lua, (kd, tuple): (AnyUserData, Value)| {
            let kd = kd.borrow::<KeyDef>()?;
            let bytes = bytes_of(&tuple)?;
            let fields = match key_fields(&kd.0, &bytes) {
                Ok(fields) => fields,
                Err(e) => return failure(lua, &e),
            };
            let mut key = Vec::with_capacity(bytes.len());
            write::array_len(&mut key, u32::try_from(fields.len()).unwrap_or(u32::MAX));
            for field in fields {
                match field {
                    Some(raw) => key.extend_from_slice(raw),
                    None => write::nil(&mut key),
                }
            }
            let tuple = LuaTuple(key.into(), std::rc::Rc::new(TupleFormat::default()));
            Ok((Value::UserData(lua.create_userdata(tuple)?), Value::Nil, Value::Nil))
        })?,
    )?;
    t.set(
        "compare",
        lua.create_function(|lua, (kd, a, b): (AnyUserData, Value, Value)| {
            let kd = kd.borrow::<KeyDef>()?;
            let (a, b) = (bytes_of(&a)?, bytes_of(&b)?);
            let keys = key_of(&kd.0, &a).and_then(|a| Ok((a, key_of(&kd.0, &b)?)));
            match keys {
                Ok((a, b)) => Ok((Value::Integer(sign(a.cmp(&b))), Value::Nil, Value::Nil)),
                Err(e) => failure(lua, &e),
            }
        })?,
    )?;
    // compare_with_key(tuple, key): over the key's parts only (a shorter key is a prefix).
    t.set(
        "compare_with_key",
        lua.create_function(|lua, (kd, tuple, key): (AnyUserData, Value, Value)| {
            let kd = kd.borrow::<KeyDef>()?;
            let (tuple, key_bytes) = (bytes_of(&tuple)?, bytes_of(&key)?);
            let outcome = key_of(&kd.0, &tuple).and_then(|tuple_key| {
                let given = split(&key_bytes)
                    .map_err(|_| BoxError::new(code::TUPLE_NOT_ARRAY, "Tuple/Key must be MsgPack array"))?;
                if given.len() > kd.0.len() {
                    return Err(BoxError::new(
                        code::KEY_PART_COUNT,
                        format!("Invalid key part count (expected [0..{}], got {})", kd.0.len(), given.len()),
                    ));
                }
                let mut order = Ordering::Equal;
                for (i, (part, mine)) in kd.0.iter().zip(tuple_key.0.iter()).enumerate().take(given.len()) {
                    let theirs = check_part(i, part, given.get(i).copied().unwrap_or(&[0xc0]))?;
                    order = mine.cmp(&theirs);
                    if order != Ordering::Equal {
                        break;
                    }
                }
                Ok(order)
            });
            match outcome {
                Ok(order) => Ok((Value::Integer(sign(order)), Value::Nil, Value::Nil)),
                Err(e) => failure(lua, &e),
            }
        })?,
    )?;
    // tuple(kd, value): a tuple or table as a tuple checked against the parts'
    // field types, as a tuple format with these parts checks it.
    t.set(
        "tuple",
        lua.create_function(|lua, (kd, value): (AnyUserData, Value)| {
            let kd = kd.borrow::<KeyDef>()?;
            if let Value::UserData(ud) = &value {
                if let Ok(tuple) = ud.borrow::<LuaTuple>() {
                    return match check_format(&kd.0, &tuple.0) {
                        Ok(()) => Ok((value.clone(), Value::Nil, Value::Nil)),
                        Err(e) => failure(lua, &e),
                    };
                }
            }
            let bytes = bytes_of(&value)?;
            match check_format(&kd.0, &bytes) {
                Ok(()) => {
                    let tuple = LuaTuple(bytes.into(), std::rc::Rc::new(TupleFormat::default()));
                    Ok((Value::UserData(lua.create_userdata(tuple)?), Value::Nil, Value::Nil))
                }
                Err(e) => failure(lua, &e),
            }
        })?,
    )?;
    Ok(t)
}
