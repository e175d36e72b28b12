//! Typed request bodies, decoded the way Tarantool 2.6 decodes them.
//!
//! Only the keys a request uses are type-checked; every other key, known or
//! not, is skipped. A used key of the wrong type is "Invalid MsgPack - packet
//! body"; a missing mandatory one is ER_MISSING_REQUEST_FIELD.
//!
//! # Formats
//! ```text
//! SELECT   {0x10 space, [0x11 index], 0x12 limit, [0x13 offset], [0x14 iterator], 0x20 key}
//! INSERT   {0x10 space, 0x21 tuple}                    REPLACE: the same
//! UPDATE   {0x10 space, [0x11 index], 0x20 key, 0x21 ops, [0x15 index_base]}
//! UPSERT   {0x10 space, 0x21 tuple, 0x28 ops, [0x15 index_base]}
//! DELETE   {0x10 space, [0x11 index], 0x20 key}
//! CALL     {0x22 name, [0x21 args]}                     CALL_16: the same
//! EVAL     {0x27 expr, [0x21 args]}
//! AUTH     {0x23 user, 0x21 [method, scramble]}
//! PING     no body, or {}
//! ```

use super::key;
use super::msgpack::{check_value_as_msgpuck, MpType, Reader};
use super::request_type as rt;
use crate::error::{BoxError, BoxResult};

/// SELECT.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Select<'a> {
    /// Target space.
    pub space_id: u32,
    /// Index within the space.
    pub index_id: u32,
    /// Most tuples to return (saturated to u32 like Tarantool).
    pub limit: u32,
    /// Tuples to skip.
    pub offset: u32,
    /// Iterator code (0 EQ .. 8).
    pub iterator: u64,
    /// Key as a msgpack array.
    pub key: &'a [u8],
}

/// INSERT or REPLACE.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Write<'a> {
    /// Target space.
    pub space_id: u32,
    /// The tuple as a msgpack array.
    pub tuple: &'a [u8],
}

/// UPDATE.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Update<'a> {
    /// Target space.
    pub space_id: u32,
    /// Index the key refers to.
    pub index_id: u32,
    /// Key as a msgpack array.
    pub key: &'a [u8],
    /// Operations as a msgpack array of arrays.
    pub ops: &'a [u8],
    /// 0 or 1: how field numbers in ops are counted.
    pub index_base: u32,
}

/// UPSERT.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Upsert<'a> {
    /// Target space.
    pub space_id: u32,
    /// Tuple inserted when no tuple matches.
    pub tuple: &'a [u8],
    /// Operations applied when one does.
    pub ops: &'a [u8],
    /// 0 or 1: how field numbers in ops are counted.
    pub index_base: u32,
}

/// DELETE.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Delete<'a> {
    /// Target space.
    pub space_id: u32,
    /// Index the key refers to.
    pub index_id: u32,
    /// Key as a msgpack array.
    pub key: &'a [u8],
}

/// CALL, CALL_16 or EVAL.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Call<'a> {
    /// Function name, or the Lua expression for EVAL.
    pub name: &'a [u8],
    /// Arguments as a msgpack array.
    pub args: &'a [u8],
}

/// AUTH.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Auth<'a> {
    /// The user to become.
    pub user: &'a [u8],
    /// `[method, scramble]` as a msgpack array.
    pub tuple: &'a [u8],
}

/// A decoded request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Request<'a> {
    /// PING.
    Ping,
    /// SELECT.
    Select(Select<'a>),
    /// INSERT.
    Insert(Write<'a>),
    /// REPLACE.
    Replace(Write<'a>),
    /// UPDATE.
    Update(Update<'a>),
    /// UPSERT.
    Upsert(Upsert<'a>),
    /// DELETE.
    Delete(Delete<'a>),
    /// CALL (new result shape).
    Call(Call<'a>),
    /// CALL_16 (1.6 result shape).
    Call16(Call<'a>),
    /// EVAL.
    Eval(Call<'a>),
    /// AUTH.
    Auth(Auth<'a>),
}

/// Raw values of the body keys requests use.
#[derive(Default)]
struct Fields<'a> {
    space_id: Option<u64>,
    index_id: Option<u64>,
    limit: Option<u64>,
    offset: Option<u64>,
    iterator: Option<u64>,
    index_base: Option<u64>,
    key: Option<&'a [u8]>,
    tuple: Option<&'a [u8]>,
    function_name: Option<&'a [u8]>,
    user_name: Option<&'a [u8]>,
    expr: Option<&'a [u8]>,
    ops: Option<&'a [u8]>,
}

fn bad_body() -> BoxError {
    BoxError::invalid_msgpack("packet body")
}

/// The set of body keys (all below 64) a request reads, as a bit mask.
const fn wanted(keys: &[u8]) -> u64 {
    let mut mask = 0u64;
    let mut i = 0;
    while i < keys.len() {
        mask |= 1 << keys[i];
        i += 1;
    }
    mask
}

/// Reads the body keys in the `wanted` mask, type-checking only those.
///
/// One pass over the body: every value, read or skipped, is validated on the way
/// (skipping checks a value's whole structure), and bytes after the map are an
/// error, so the body is checked as a whole as it is read.
fn read_fields<'a>(body: &'a [u8], wanted: u64) -> BoxResult<Fields<'a>> {
    let mut f = Fields::default();
    if body.is_empty() {
        return Ok(f);
    }
    let mut r = Reader::new(body);
    let n = r.read_map_len().map_err(|_| bad_body())?;
    for _ in 0..n {
        let Ok(k) = r.read_uint() else {
            // Non-integer keys are skipped with their values.
            r.skip().map_err(|_| bad_body())?;
            r.skip().map_err(|_| bad_body())?;
            continue;
        };
        let Some(k) = u8::try_from(k).ok().filter(|k| *k < 64 && wanted & (1 << k) != 0) else {
            r.skip().map_err(|_| bad_body())?;
            continue;
        };
        let ty = r.peek_type().map_err(|_| bad_body())?;
        let uint = |r: &mut Reader<'a>| r.read_uint().map_err(|_| bad_body());
        let of = |r: &mut Reader<'a>, want: MpType| {
            if ty == want {
                r.skip().map_err(|_| bad_body())
            } else {
                Err(bad_body())
            }
        };
        match k {
            key::SPACE_ID => f.space_id = Some(uint(&mut r)?),
            key::INDEX_ID => f.index_id = Some(uint(&mut r)?),
            key::LIMIT => f.limit = Some(uint(&mut r)?),
            key::OFFSET => f.offset = Some(uint(&mut r)?),
            key::ITERATOR => f.iterator = Some(uint(&mut r)?),
            key::INDEX_BASE => f.index_base = Some(uint(&mut r)?),
            key::KEY => f.key = Some(of(&mut r, MpType::Array)?),
            key::TUPLE => f.tuple = Some(of(&mut r, MpType::Array)?),
            key::OPS => f.ops = Some(of(&mut r, MpType::Array)?),
            key::FUNCTION_NAME => f.function_name = Some(r.read_str().map_err(|_| bad_body())?),
            key::USER_NAME => f.user_name = Some(r.read_str().map_err(|_| bad_body())?),
            key::EXPR => f.expr = Some(r.read_str().map_err(|_| bad_body())?),
            _ => {
                r.skip().map_err(|_| bad_body())?;
            }
        }
    }
    if r.position() != body.len() {
        return Err(bad_body());
    }
    Ok(f)
}

fn need<T>(v: Option<T>, name: &str) -> BoxResult<T> {
    v.ok_or_else(|| BoxError::missing_request_field(name))
}

fn id32(v: u64) -> u32 {
    u32::try_from(v).unwrap_or(u32::MAX)
}

/// An empty array, the default for CALL/EVAL arguments.
const EMPTY_ARRAY: &[u8] = &[0x90];

/// Decodes the body of a request of type `request_type`.
///
/// Returns `Ok(None)` for a type oncebox does not serve (the caller answers
/// ER_UNKNOWN_REQUEST_TYPE).
pub fn parse(request_type: u64, body: &[u8]) -> BoxResult<Option<Request<'_>>> {
    use key::{
        EXPR, FUNCTION_NAME, INDEX_BASE, INDEX_ID, ITERATOR, KEY, LIMIT, OFFSET, OPS, SPACE_ID, TUPLE, USER_NAME,
    };
    let req = match request_type {
        rt::PING => {
            if !body.is_empty() {
                check_value_as_msgpuck(body).map_err(|_| bad_body())?;
            }
            Request::Ping
        }
        // 2.6 decodes a NOP's body as DML and fails; without a body NOP is unknown.
        rt::NOP if !body.is_empty() => return Err(bad_body()),
        rt::SELECT => {
            let f = read_fields(body, const { wanted(&[SPACE_ID, INDEX_ID, LIMIT, OFFSET, ITERATOR, KEY]) })?;
            Request::Select(Select {
                space_id: id32(need(f.space_id, "space id")?),
                index_id: id32(f.index_id.unwrap_or(0)),
                limit: id32(need(f.limit, "limit")?),
                offset: id32(f.offset.unwrap_or(0)),
                iterator: f.iterator.unwrap_or(0),
                key: need(f.key, "key")?,
            })
        }
        rt::INSERT | rt::REPLACE => {
            let f = read_fields(body, const { wanted(&[SPACE_ID, TUPLE]) })?;
            let w = Write { space_id: id32(need(f.space_id, "space id")?), tuple: need(f.tuple, "tuple")? };
            if request_type == rt::INSERT {
                Request::Insert(w)
            } else {
                Request::Replace(w)
            }
        }
        rt::UPDATE => {
            let f = read_fields(body, const { wanted(&[SPACE_ID, INDEX_ID, KEY, TUPLE, INDEX_BASE]) })?;
            Request::Update(Update {
                space_id: id32(need(f.space_id, "space id")?),
                index_id: id32(f.index_id.unwrap_or(0)),
                key: need(f.key, "key")?,
                ops: need(f.tuple, "tuple")?,
                index_base: id32(f.index_base.unwrap_or(0)),
            })
        }
        rt::UPSERT => {
            let f = read_fields(body, const { wanted(&[SPACE_ID, TUPLE, OPS, INDEX_BASE]) })?;
            Request::Upsert(Upsert {
                space_id: id32(need(f.space_id, "space id")?),
                tuple: need(f.tuple, "tuple")?,
                ops: need(f.ops, "operations")?,
                index_base: id32(f.index_base.unwrap_or(0)),
            })
        }
        rt::DELETE => {
            let f = read_fields(body, const { wanted(&[SPACE_ID, INDEX_ID, KEY]) })?;
            Request::Delete(Delete {
                space_id: id32(need(f.space_id, "space id")?),
                index_id: id32(f.index_id.unwrap_or(0)),
                key: need(f.key, "key")?,
            })
        }
        rt::CALL | rt::CALL_16 => {
            let f = read_fields(body, const { wanted(&[FUNCTION_NAME, TUPLE]) })?;
            let c = Call { name: need(f.function_name, "function name")?, args: f.tuple.unwrap_or(EMPTY_ARRAY) };
            if request_type == rt::CALL {
                Request::Call(c)
            } else {
                Request::Call16(c)
            }
        }
        rt::EVAL => {
            let f = read_fields(body, const { wanted(&[EXPR, TUPLE]) })?;
            Request::Eval(Call { name: need(f.expr, "expression")?, args: f.tuple.unwrap_or(EMPTY_ARRAY) })
        }
        rt::AUTH => {
            let f = read_fields(body, const { wanted(&[USER_NAME, TUPLE]) })?;
            Request::Auth(Auth { user: need(f.user_name, "user name")?, tuple: need(f.tuple, "tuple")? })
        }
        _ => return Ok(None),
    };
    Ok(Some(req))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::code;

    #[test]
    fn select_defaults_and_saturation() {
        // {0x10: 512, 0x12: u64::MAX, 0x20: []}
        let body =
            [0x83, 0x10, 0xcd, 0x02, 0x00, 0x12, 0xcf, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x20, 0x90];
        let Some(Request::Select(s)) = parse(rt::SELECT, &body).unwrap() else { panic!() };
        assert_eq!((s.space_id, s.index_id, s.limit, s.offset, s.iterator), (512, 0, u32::MAX, 0, 0));
    }

    #[test]
    fn unused_keys_are_not_type_checked() {
        // {0x10: 1, 0x12: 1, 0x20: [], 0x22: 5, "zz": 1}
        let body = [0x85, 0x10, 0x01, 0x12, 0x01, 0x20, 0x90, 0x22, 0x05, 0xa2, b'z', b'z', 0x01];
        assert!(parse(rt::SELECT, &body).unwrap().is_some());
    }

    #[test]
    fn wrong_type_and_missing_fields() {
        let body = [0x83, 0x10, 0x01, 0x12, 0x01, 0x20, 0x05];
        assert_eq!(parse(rt::SELECT, &body).unwrap_err().code, code::INVALID_MSGPACK);
        let body = [0x82, 0x10, 0x01, 0x20, 0x90];
        let e = parse(rt::SELECT, &body).unwrap_err();
        assert_eq!(e.message, "Missing mandatory field 'limit' in request");
        assert_eq!(parse(rt::SELECT, &[0x92, 0x01, 0x02]).unwrap_err().code, code::INVALID_MSGPACK);
    }

    #[test]
    fn unknown_type_is_none() {
        assert_eq!(parse(73, &[]).unwrap(), None);
    }
}
