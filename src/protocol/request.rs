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
    /// EXECUTE (SQL).
    Execute(Execute<'a>),
    /// PREPARE (SQL): prepares a statement's text, or unprepares a statement id.
    Prepare(Statement<'a>),
}

/// An SQL statement: its text, or the id it was prepared under.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Statement<'a> {
    /// The statement's text.
    Text(&'a [u8]),
    /// A prepared statement's id.
    Id(u64),
}

/// EXECUTE: an SQL statement and its bound values.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Execute<'a> {
    /// The statement.
    pub statement: Statement<'a>,
    /// The values bound to its parameters, as a msgpack array.
    pub binds: &'a [u8],
}

/// Where a value sits in a request body (`start..end`), so the bytes can be found
/// again in the body without reading it.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
struct Span {
    start: u32,
    end: u32,
}

impl Span {
    fn new(start: usize, end: usize) -> Self {
        // Packets are far below 4 GiB (max_packet_size); a bad span reads as empty.
        Self { start: u32::try_from(start).unwrap_or(u32::MAX), end: u32::try_from(end).unwrap_or(0) }
    }

    fn of(self, body: &[u8]) -> &[u8] {
        body.get(self.start as usize..self.end as usize).unwrap_or(&[])
    }
}

/// The integer body keys requests use, as slots of [`Fields`].
#[derive(Debug, Clone, Copy)]
enum Int {
    SpaceId,
    IndexId,
    Limit,
    Offset,
    Iterator,
    IndexBase,
    StmtId,
}

/// How many [`Int`] slots there are (the [`Part`] bits follow theirs).
const INTS: u16 = 7;

/// The array and string body keys requests use, as slots of [`Fields`].
#[derive(Debug, Clone, Copy)]
enum Part {
    Key,
    Tuple,
    FunctionName,
    UserName,
    Expr,
    Ops,
    SqlText,
    SqlBind,
}

/// Raw values of the body keys requests use, kept compact (one travels with every
/// inbound packet from the network thread to TX): a bit per slot says it was present.
#[derive(Debug, Default, Clone)]
struct Fields {
    present: u16,
    ints: [u64; INTS as usize],
    parts: [Span; 8],
}

impl Fields {
    fn set_int(&mut self, slot: Int, v: u64) {
        self.ints[slot as usize] = v;
        self.present |= 1 << slot as u16;
    }

    fn int(&self, slot: Int) -> Option<u64> {
        (self.present & 1 << slot as u16 != 0).then(|| self.ints[slot as usize])
    }

    fn set_part(&mut self, slot: Part, span: Span) {
        self.parts[slot as usize] = span;
        self.present |= 1 << (INTS + slot as u16);
    }

    fn part(&self, slot: Part) -> Option<Span> {
        (self.present & 1 << (INTS + slot as u16) != 0).then(|| self.parts[slot as usize])
    }
}

/// What reading a body found.
#[derive(Debug, Clone)]
enum Body {
    /// The keys the request uses.
    Read(Fields),
    /// A request type oncebox does not serve.
    Unknown,
    /// The body is malformed (boxed: rare, and a `Decoded` travels with every packet).
    Bad(Box<BoxError>),
}

/// A request body read and checked, kept as positions in the body.
///
/// Reading a body (checking every value, finding the keys a request uses) is most
/// of the cost of decoding it; the network thread does it with [`decode`], and the
/// TX thread builds the [`Request`] from the positions with [`Decoded::request`],
/// as Tarantool's network thread decodes requests for its TX thread.
#[derive(Debug, Clone)]
pub struct Decoded {
    request_type: u64,
    body: Body,
}

fn bad_body() -> BoxError {
    BoxError::invalid_msgpack("packet body")
}

/// The set of body keys (all below 128: SQL's are 0x40-0x43) a request reads, as a bit mask.
const fn wanted(keys: &[u8]) -> u128 {
    let mut mask = 0u128;
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
fn read_fields(body: &[u8], wanted: u128) -> BoxResult<Fields> {
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
        let Some(k) = u8::try_from(k).ok().filter(|k| *k < 128 && wanted & (1 << k) != 0) else {
            r.skip().map_err(|_| bad_body())?;
            continue;
        };
        let ty = r.peek_type().map_err(|_| bad_body())?;
        let uint = |r: &mut Reader<'_>| r.read_uint().map_err(|_| bad_body());
        let of = |r: &mut Reader<'_>, want: MpType| {
            if ty != want {
                return Err(bad_body());
            }
            let start = r.position();
            r.skip().map_err(|_| bad_body())?;
            Ok(Span::new(start, r.position()))
        };
        // A string's span is its contents, without the header.
        let str_span = |r: &mut Reader<'_>| {
            let len = r.read_str().map_err(|_| bad_body())?.len();
            Ok::<_, BoxError>(Span::new(r.position() - len, r.position()))
        };
        match k {
            key::SPACE_ID => f.set_int(Int::SpaceId, uint(&mut r)?),
            key::INDEX_ID => f.set_int(Int::IndexId, uint(&mut r)?),
            key::LIMIT => f.set_int(Int::Limit, uint(&mut r)?),
            key::OFFSET => f.set_int(Int::Offset, uint(&mut r)?),
            key::ITERATOR => f.set_int(Int::Iterator, uint(&mut r)?),
            key::INDEX_BASE => f.set_int(Int::IndexBase, uint(&mut r)?),
            key::KEY => f.set_part(Part::Key, of(&mut r, MpType::Array)?),
            key::TUPLE => f.set_part(Part::Tuple, of(&mut r, MpType::Array)?),
            key::OPS => f.set_part(Part::Ops, of(&mut r, MpType::Array)?),
            key::FUNCTION_NAME => f.set_part(Part::FunctionName, str_span(&mut r)?),
            key::USER_NAME => f.set_part(Part::UserName, str_span(&mut r)?),
            key::EXPR => f.set_part(Part::Expr, str_span(&mut r)?),
            key::SQL_TEXT => f.set_part(Part::SqlText, str_span(&mut r)?),
            // As 2.6's sql_bind_list_decode words it.
            key::SQL_BIND => f.set_part(
                Part::SqlBind,
                of(&mut r, MpType::Array).map_err(|_| BoxError::invalid_msgpack("SQL parameter list"))?,
            ),
            key::STMT_ID => f.set_int(Int::StmtId, uint(&mut r)?),
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
    decode(request_type, body).request(body)
}

/// Reads and checks the body of a request of type `request_type` (the costly part
/// of [`parse`]); [`Decoded::request`] gives the request, or the error.
#[must_use]
pub fn decode(request_type: u64, body: &[u8]) -> Decoded {
    let body = match read_body(request_type, body) {
        Ok(Some(fields)) => Body::Read(fields),
        Ok(None) => Body::Unknown,
        Err(e) => Body::Bad(Box::new(e)),
    };
    Decoded { request_type, body }
}

fn read_body(request_type: u64, body: &[u8]) -> BoxResult<Option<Fields>> {
    use key::{
        EXPR, FUNCTION_NAME, INDEX_BASE, INDEX_ID, ITERATOR, KEY, LIMIT, OFFSET, OPS, SPACE_ID, SQL_BIND, SQL_TEXT,
        STMT_ID, TUPLE, USER_NAME,
    };
    let wanted = match request_type {
        rt::PING => {
            if !body.is_empty() {
                check_value_as_msgpuck(body).map_err(|_| bad_body())?;
            }
            return Ok(Some(Fields::default()));
        }
        // 2.6 decodes a NOP's body as DML and fails; without a body NOP is unknown.
        rt::NOP if !body.is_empty() => return Err(bad_body()),
        rt::SELECT => const { wanted(&[SPACE_ID, INDEX_ID, LIMIT, OFFSET, ITERATOR, KEY]) },
        rt::INSERT | rt::REPLACE => const { wanted(&[SPACE_ID, TUPLE]) },
        rt::UPDATE => const { wanted(&[SPACE_ID, INDEX_ID, KEY, TUPLE, INDEX_BASE]) },
        rt::UPSERT => const { wanted(&[SPACE_ID, TUPLE, OPS, INDEX_BASE]) },
        rt::DELETE => const { wanted(&[SPACE_ID, INDEX_ID, KEY]) },
        rt::CALL | rt::CALL_16 => const { wanted(&[FUNCTION_NAME, TUPLE]) },
        rt::EVAL => const { wanted(&[EXPR, TUPLE]) },
        rt::AUTH => const { wanted(&[USER_NAME, TUPLE]) },
        rt::EXECUTE | rt::PREPARE => const { wanted(&[SQL_TEXT, SQL_BIND, STMT_ID]) },
        _ => return Ok(None),
    };
    read_fields(body, wanted).map(Some)
}

impl Decoded {
    /// The request, its parts borrowed from `body` (the body [`decode`] read), or
    /// the error reading it met; `Ok(None)` for a type oncebox does not serve.
    pub fn request<'a>(&self, body: &'a [u8]) -> BoxResult<Option<Request<'a>>> {
        let f = match &self.body {
            Body::Read(f) => f,
            Body::Unknown => return Ok(None),
            Body::Bad(e) => return Err(BoxError::clone(e)),
        };
        let span = |slot: Part, name: &str| need(f.part(slot), name).map(|s| s.of(body));
        let args = || f.part(Part::Tuple).map_or(EMPTY_ARRAY, |s| s.of(body));
        let space_id = || need(f.int(Int::SpaceId), "space id").map(id32);
        let index_id = || id32(f.int(Int::IndexId).unwrap_or(0));
        let index_base = || id32(f.int(Int::IndexBase).unwrap_or(0));
        let req = match self.request_type {
            rt::PING => Request::Ping,
            rt::SELECT => Request::Select(Select {
                space_id: space_id()?,
                index_id: index_id(),
                limit: id32(need(f.int(Int::Limit), "limit")?),
                offset: id32(f.int(Int::Offset).unwrap_or(0)),
                iterator: f.int(Int::Iterator).unwrap_or(0),
                key: span(Part::Key, "key")?,
            }),
            rt::INSERT | rt::REPLACE => {
                let w = Write { space_id: space_id()?, tuple: span(Part::Tuple, "tuple")? };
                if self.request_type == rt::INSERT {
                    Request::Insert(w)
                } else {
                    Request::Replace(w)
                }
            }
            rt::UPDATE => Request::Update(Update {
                space_id: space_id()?,
                index_id: index_id(),
                key: span(Part::Key, "key")?,
                ops: span(Part::Tuple, "tuple")?,
                index_base: index_base(),
            }),
            rt::UPSERT => Request::Upsert(Upsert {
                space_id: space_id()?,
                tuple: span(Part::Tuple, "tuple")?,
                ops: span(Part::Ops, "operations")?,
                index_base: index_base(),
            }),
            rt::DELETE => {
                Request::Delete(Delete { space_id: space_id()?, index_id: index_id(), key: span(Part::Key, "key")? })
            }
            rt::CALL | rt::CALL_16 => {
                let c = Call { name: span(Part::FunctionName, "function name")?, args: args() };
                if self.request_type == rt::CALL {
                    Request::Call(c)
                } else {
                    Request::Call16(c)
                }
            }
            rt::EVAL => Request::Eval(Call { name: span(Part::Expr, "expression")?, args: args() }),
            rt::AUTH => {
                Request::Auth(Auth { user: span(Part::UserName, "user name")?, tuple: span(Part::Tuple, "tuple")? })
            }
            rt::EXECUTE | rt::PREPARE => {
                let statement = match (f.part(Part::SqlText), f.int(Int::StmtId)) {
                    (Some(text), None) => Statement::Text(text.of(body)),
                    (None, Some(id)) => Statement::Id(id),
                    (Some(_), Some(_)) => {
                        return Err(BoxError::invalid_msgpack(
                            "SQL text and statement id are incompatible options in one request: choose one",
                        ))
                    }
                    (None, None) => return Err(BoxError::missing_request_field("SQL text or stmt id")),
                };
                if self.request_type == rt::PREPARE {
                    Request::Prepare(statement)
                } else {
                    Request::Execute(Execute {
                        statement,
                        binds: f.part(Part::SqlBind).map_or(EMPTY_ARRAY, |s| s.of(body)),
                    })
                }
            }
            _ => return Ok(None),
        };
        Ok(Some(req))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::code;

    #[test]
    fn execute_and_prepare_read_sql_text_or_statement_id_and_binds() {
        // {0x40: "select ?", 0x41: [1]}
        let body = [0x82, 0x40, 0xa8, b's', b'e', b'l', b'e', b'c', b't', b' ', b'?', 0x41, 0x91, 0x01];
        let Some(Request::Execute(x)) = parse(rt::EXECUTE, &body).unwrap() else { panic!() };
        assert_eq!((x.statement, x.binds), (Statement::Text(b"select ?"), &[0x91, 0x01][..]));
        // Without binds, an empty array; a statement id names nothing prepared.
        let Some(Request::Execute(x)) = parse(rt::EXECUTE, &[0x81, 0x40, 0xa1, b'x']).unwrap() else { panic!() };
        assert_eq!(x.binds, &[0x90][..]);
        let Some(Request::Execute(x)) = parse(rt::EXECUTE, &[0x81, 0x43, 0x07]).unwrap() else { panic!() };
        assert_eq!(x.statement, Statement::Id(7));
        // Binds that are not a list: 2.6's words.
        let e = parse(rt::EXECUTE, &[0x82, 0x40, 0xa1, b'x', 0x41, 0x05]).unwrap_err();
        assert_eq!(e.message, "Invalid MsgPack - SQL parameter list");
        assert_eq!(parse(rt::PREPARE, &[0x81, 0x43, 0x07]).unwrap(), Some(Request::Prepare(Statement::Id(7))));
        // Text and id together are refused, as 2.6 refuses them.
        assert_eq!(parse(rt::EXECUTE, &[0x82, 0x43, 0x07, 0x40, 0xa1, b'x']).unwrap_err().code, code::INVALID_MSGPACK);
        assert_eq!(parse(rt::EXECUTE, &[0x80]).unwrap_err().code, code::MISSING_REQUEST_FIELD);
        // SQL text must be a string.
        assert_eq!(parse(rt::EXECUTE, &[0x81, 0x40, 0x05]).unwrap_err().code, code::INVALID_MSGPACK);
    }

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
    fn a_decoded_body_gives_its_parts_and_errors_later() {
        // {0x22: "f.x", 0x21: [1]}: the name is the string's contents.
        let body = [0x82, 0x22, 0xa3, b'f', b'.', b'x', 0x21, 0x91, 0x01];
        let decoded = decode(rt::CALL, &body);
        let want = Request::Call(Call { name: b"f.x", args: &[0x91, 0x01] });
        assert_eq!(decoded.request(&body).unwrap(), Some(want.clone()));
        assert_eq!(decoded.request(&body).unwrap(), Some(want), "a decoded body can be asked again");
        // Without args, CALL gets an empty array.
        let body = [0x81, 0x22, 0xa1, b'f'];
        let Some(Request::Call(c)) = decode(rt::CALL, &body).request(&body).unwrap() else { panic!() };
        assert_eq!(c.args, EMPTY_ARRAY);
        // A bad body's error is kept until the request is asked for.
        let decoded = decode(rt::REPLACE, &[0x81, 0x10]);
        assert_eq!(decoded.request(&[]).unwrap_err().code, code::INVALID_MSGPACK);
        // PING with a truncated body; NOP with a body.
        assert_eq!(decode(rt::PING, &[0x81]).request(&[0x81]).unwrap_err().code, code::INVALID_MSGPACK);
        assert_eq!(decode(rt::NOP, &[0x80]).request(&[0x80]).unwrap_err().code, code::INVALID_MSGPACK);
        assert_eq!(decode(rt::NOP, &[]).request(&[]).unwrap(), None);
    }

    #[test]
    fn unknown_type_is_none() {
        assert_eq!(parse(73, &[]).unwrap(), None);
    }
}
