//! UPDATE and UPSERT operations.
//!
//! ```text
//! ['=', f, v]  assign (f = len appends)     ['!', f, v]  insert before f
//! ['#', f, n]  delete n fields from f       [':', f, pos, len, str]  splice a string
//! ['+' | '-', f, number]  arithmetic        ['&' | '|' | '^', f, uint]  bitwise
//! ```
//! `f` is a field number (counted from `index_base`; negative counts from the
//! end), a format field name, or a JSON path whose first step names the field
//! (`'[2]'`, `'name.key[3]'`: indexes in paths are always 1-based). A path that goes
//! on inside the field is applied by [`tree`]. Operations are checked (shape and
//! argument types, then the fields they name) before any is applied.

mod tree;

use std::borrow::Cow;
use std::cell::RefCell;

use super::json_path::{Lexer, Token};
use super::space::Space;
use super::tuple::{Tuple, TupleFields};
use crate::decimal::{BinaryOp, Decimal, MP_DECIMAL};
use crate::error::{code, BoxError, BoxResult};
use crate::protocol::msgpack::{write, Integer, MpType, Reader};

/// Where an operation applies.
#[derive(Debug, Clone, PartialEq)]
enum FieldRef<'a> {
    /// 0-based from the start, or negative from the end.
    Number(i64),
    /// A format name or JSON path.
    Name(&'a [u8]),
    /// A number below `index_base` (field 0 with base 1): never found.
    BeforeFirst(i64),
}

/// An arithmetic operand.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Num {
    Int(i128),
    Float(f64),
    Dec(Decimal),
}

impl Num {
    /// The operand as a decimal (a double through its 15 digits, as 2.6).
    fn to_decimal(self) -> Option<Decimal> {
        match self {
            #[allow(clippy::cast_possible_truncation, reason = "operands are 64-bit integers")]
            Self::Int(i) if i < 0 => Some(Decimal::from_i64(i as i64)),
            #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss, reason = "operands are 64-bit integers")]
            Self::Int(i) => Some(Decimal::from_u64(i as u64)),
            Self::Float(f) => Decimal::from_f64(f),
            Self::Dec(d) => Some(d),
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
enum OpKind<'a> {
    Set(&'a [u8]),
    Insert(&'a [u8]),
    Delete(u64),
    Arith(u8, Num),
    Bit(u8, u64),
    Splice { offset: i64, cut: i64, paste: &'a [u8] },
}

/// One decoded operation.
#[derive(Debug, Clone, PartialEq)]
pub struct Op<'a> {
    field: FieldRef<'a>,
    kind: OpKind<'a>,
}

fn arg_type(op: u8, field: impl std::fmt::Display, expected: &str) -> BoxError {
    BoxError::new(
        code::UPDATE_ARG_TYPE,
        format!(
            "Argument type in operation '{}' on field {field} does not match field type: expected {expected}",
            op as char
        ),
    )
}

fn read_num(r: &mut Reader<'_>) -> Option<Num> {
    match r.peek_type().ok()? {
        MpType::Uint | MpType::Int => Some(match r.read_integer().ok()? {
            Integer::Unsigned(u) => Num::Int(i128::from(u)),
            Integer::Negative(i) => Num::Int(i128::from(i)),
        }),
        MpType::Float | MpType::Double => r.read_f64().ok().map(Num::Float),
        MpType::Ext => match r.read_ext().ok()? {
            (MP_DECIMAL, payload) => Decimal::unpack(payload).map(Num::Dec),
            _ => None,
        },
        _ => None,
    }
}

/// Decodes and checks an operation list.
pub fn parse_ops(ops: &[u8], index_base: u32) -> BoxResult<Vec<Op<'_>>> {
    let bad = |_| BoxError::invalid_msgpack("packet body");
    let mut r = Reader::new(ops);
    let n = r.read_array_len().map_err(bad)?;
    let mut out = Vec::with_capacity(n.min(1024) as usize);
    for op_no in 1..=n {
        let Ok(argc) = r.read_array_len() else {
            r.skip().map_err(bad)?;
            return Err(BoxError::illegal_params("update operation must be an array {op,..}"));
        };
        if argc < 1 {
            return Err(BoxError::illegal_params("update operation must be an array {op,..}, got empty array"));
        }
        let Ok(name) = r.read_str() else {
            return Err(BoxError::illegal_params("update operation name must be a string"));
        };
        let op = match name {
            [c @ (b'=' | b'!' | b'#' | b'+' | b'-' | b'&' | b'|' | b'^' | b':')] => *c,
            _ => {
                return Err(BoxError::new(
                    code::UNKNOWN_UPDATE_OP,
                    format!("Unknown UPDATE operation #{op_no}: \"{}\"", String::from_utf8_lossy(name)),
                ))
            }
        };
        let want = if op == b':' { 5 } else { 3 };
        if argc != want {
            return Err(BoxError::new(
                code::UNKNOWN_UPDATE_OP,
                format!("Unknown UPDATE operation #{op_no}: wrong number of arguments, expected {want}, got {argc}"),
            ));
        }
        let field = match r.peek_type().map_err(bad)? {
            MpType::Uint | MpType::Int => {
                let v = r.read_int().map_err(|_| BoxError::illegal_params("field id must be a number or a string"))?;
                let base = i64::from(index_base);
                match v {
                    v if v < 0 => FieldRef::Number(v),
                    v if v < base => FieldRef::BeforeFirst(v),
                    v => FieldRef::Number(v - base),
                }
            }
            MpType::Str => FieldRef::Name(r.read_str().map_err(bad)?),
            _ => return Err(BoxError::illegal_params("field id must be a number or a string")),
        };
        // Named only in errors: formatted when one is raised.
        let label = || field_label(&field);
        let kind = match op {
            b'=' => OpKind::Set(r.skip().map_err(bad)?),
            b'!' => OpKind::Insert(r.skip().map_err(bad)?),
            b'#' => match r.read_integer() {
                Ok(Integer::Unsigned(0)) => {
                    return Err(BoxError::new(
                        code::UPDATE_FIELD,
                        format!("Field {} UPDATE error: cannot delete 0 fields", label()),
                    ))
                }
                Ok(Integer::Unsigned(c)) => OpKind::Delete(c),
                _ => return Err(arg_type(op, label(), "a positive integer")),
            },
            b'+' | b'-' => {
                let Some(num) = read_num(&mut r) else {
                    return Err(arg_type(op, label(), "a number"));
                };
                OpKind::Arith(op, num)
            }
            b'&' | b'|' | b'^' => match r.read_integer() {
                Ok(Integer::Unsigned(u)) => OpKind::Bit(op, u),
                _ => return Err(arg_type(op, label(), "a positive integer")),
            },
            _ => {
                let offset = r.read_int().map_err(|_| arg_type(op, label(), "an integer"))?;
                let cut = r.read_int().map_err(|_| arg_type(op, label(), "an integer"))?;
                let paste = r.read_str().map_err(|_| arg_type(op, label(), "a string"))?;
                let offset = if offset >= 0 { offset - i64::from(index_base) } else { offset };
                OpKind::Splice { offset, cut, paste }
            }
        };
        out.push(Op { field, kind });
    }
    Ok(out)
}

/// How a field is named in messages before it is resolved.
fn field_label(f: &FieldRef<'_>) -> String {
    match f {
        FieldRef::Number(n) if *n >= 0 => (n + 1).to_string(),
        FieldRef::Number(n) | FieldRef::BeforeFirst(n) => n.to_string(),
        FieldRef::Name(s) => format!("'{}'", String::from_utf8_lossy(s)),
    }
}

/// How 2.6 names the field an operation works on in its errors: a number
/// (1-based, or negative as given), or the string the operation named it by, quoted.
#[derive(Debug, Clone, Copy)]
enum Label<'a> {
    Number(i64),
    Path(&'a [u8]),
}

impl std::fmt::Display for Label<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Number(n) => write!(f, "{n}"),
            Self::Path(p) => write!(f, "'{}'", String::from_utf8_lossy(p)),
        }
    }
}

impl Label<'_> {
    /// "was not found" (a string label quoted once more, as 2.6 does).
    fn not_found(self) -> BoxError {
        match self {
            Self::Number(_) => {
                BoxError::new(code::NO_SUCH_FIELD_NO, format!("Field {self} was not found in the tuple"))
            }
            Self::Path(_) => {
                BoxError::new(code::NO_SUCH_FIELD_NAME, format!("Field '{self}' was not found in the tuple"))
            }
        }
    }
}

/// `ER_UPDATE_FIELD`: "Field <label> UPDATE error: <reason>".
fn update_error(label: Label<'_>, reason: &str) -> BoxError {
    BoxError::new(code::UPDATE_FIELD, format!("Field {label} UPDATE error: {reason}"))
}

/// A tuple field while operations apply.
struct Slot<'a> {
    bytes: Cow<'a, [u8]>,
    /// Whether an operation changed it (`bytes` then holds a new value, unless
    /// `tree` holds what paths inside it did).
    touched: bool,
    tree: Option<Box<tree::Field<'a>>>,
}

impl<'a> Slot<'a> {
    fn unchanged(bytes: &'a [u8]) -> Self {
        Self { bytes: Cow::Borrowed(bytes), touched: false, tree: None }
    }
}

/// A name no field has (decoding, before any operation applies): quoted once.
fn unknown_name(name: &[u8]) -> BoxError {
    BoxError::new(
        code::NO_SUCH_FIELD_NAME,
        format!("Field '{}' was not found in the tuple", String::from_utf8_lossy(name)),
    )
}

/// The tuple field a string names, and the rest of the path when it goes on inside
/// the field: a format name first, then the path's first step (as 2.6 decodes it).
fn root_of<'a>(name: &'a [u8], space: &Space) -> BoxResult<(usize, Lexer<'a>)> {
    let mut lexer = Lexer::new(name);
    if let Some(p) = space.field_no(name) {
        lexer.skip_bytes(name.len());
        return Ok((p, lexer));
    }
    match lexer.next_token() {
        Err(position) => Err(update_error(Label::Path(name), &format!("invalid JSON in position {position}"))),
        Ok(Token::Num(n)) => Ok((n as usize, lexer)),
        Ok(Token::Str(field)) => match space.field_no(field) {
            Some(p) => Ok((p, lexer)),
            None => Err(unknown_name(name)),
        },
        Ok(_) => Err(unknown_name(name)),
    }
}

/// Checks that every operation's field name or path start is one 2.6 would decode.
pub fn check_names(ops: &[Op<'_>], space: &Space) -> BoxResult<()> {
    for op in ops {
        if let FieldRef::Name(name) = op.field {
            root_of(name, space)?;
        }
    }
    Ok(())
}

/// Where an operation may point past the last field.
#[derive(Clone, Copy)]
enum Reach {
    /// Existing fields only.
    Existing,
    /// A positive number may name the field after the last (`=` appends).
    Append,
    /// Both a positive number and -1 may name the field after the last (`!`).
    Insert,
}

/// Resolves an operation's field to a 0-based position, with the label its errors
/// use and, for a path that goes on inside the field, the rest of it.
fn resolve<'a>(
    f: &FieldRef<'a>,
    len: usize,
    space: &Space,
    reach: Reach,
) -> BoxResult<(usize, Label<'a>, Option<Lexer<'a>>)> {
    let limit = if matches!(reach, Reach::Existing) { len } else { len + 1 };
    let (pos, label, inside) = match f {
        FieldRef::BeforeFirst(n) => return Err(Label::Number(*n).not_found()),
        FieldRef::Number(n) if *n >= 0 => (usize::try_from(*n).ok(), Label::Number(n + 1), None),
        FieldRef::Number(n) => {
            // -1 is the last field, or one past it for inserts.
            let end = if matches!(reach, Reach::Insert) { len + 1 } else { len };
            let back = usize::try_from(n.unsigned_abs()).ok();
            let pos = back.and_then(|b| end.checked_sub(b));
            // Errors name the field by the position found, as 2.6.
            let label = pos.map_or(Label::Number(*n), |p| Label::Number(p as i64 + 1));
            (pos, label, None)
        }
        FieldRef::Name(name) => {
            let (pos, lexer) = root_of(name, space)?;
            let inside = (!lexer.is_eof()).then_some(lexer);
            // Inside a field, the field itself must exist.
            let limit = if inside.is_some() { len } else { limit };
            return match pos < limit {
                true => Ok((pos, Label::Path(name), inside)),
                false => Err(Label::Path(name).not_found()),
            };
        }
    };
    match pos.filter(|p| *p < limit) {
        Some(p) => Ok((p, label, inside)),
        None => Err(label.not_found()),
    }
}

fn encode_num(n: Num) -> Vec<u8> {
    let mut out = Vec::with_capacity(9);
    match n {
        Num::Int(i) => {
            if let Ok(u) = u64::try_from(i) {
                write::uint(&mut out, u);
            } else {
                #[allow(clippy::cast_possible_truncation, reason = "range checked by the caller")]
                write::int(&mut out, i as i64);
            }
        }
        // 2.6 stores an arithmetic result as float32 when that loses nothing.
        #[allow(clippy::cast_possible_truncation, reason = "the round trip checks for loss")]
        Num::Float(f) if f64::from(f as f32) == f => write::f32(&mut out, f as f32),
        Num::Float(f) => write::f64(&mut out, f),
        Num::Dec(d) => d.write_ext(&mut out),
    }
    out
}

/// The value an assignment, arithmetic, bitwise or splice operation makes of `old`
/// (the field `label` names in errors).
fn compute<'a>(kind: &OpKind<'a>, old: &[u8], label: Label<'_>) -> BoxResult<Cow<'a, [u8]>> {
    let value = match kind {
        OpKind::Set(v) => return Ok(Cow::Borrowed(v)),
        OpKind::Arith(op, arg) => {
            let mut r = Reader::new(old);
            let Some(cur) = read_num(&mut r) else {
                return Err(arg_type(*op, label, "a number"));
            };
            let result = match (cur, *arg) {
                (Num::Int(a), Num::Int(b)) => {
                    let v = if *op == b'+' { a + b } else { a - b };
                    if v > i128::from(u64::MAX) || v < i128::from(i64::MIN) {
                        return Err(BoxError::new(
                            code::UPDATE_INTEGER_OVERFLOW,
                            format!("Integer overflow when performing '{}' operation on field {label}", *op as char),
                        ));
                    }
                    Num::Int(v)
                }
                // A decimal on either side makes decimal arithmetic, as in 2.6.
                (a, b) if matches!(a, Num::Dec(_)) || matches!(b, Num::Dec(_)) => {
                    let (Some(x), Some(y)) = (a.to_decimal(), b.to_decimal()) else {
                        return Err(arg_type(*op, label, "a number"));
                    };
                    let how = if *op == b'+' { BinaryOp::Add } else { BinaryOp::Sub };
                    let Some(v) = x.binary(how, &y) else {
                        return Err(BoxError::new(
                            code::UPDATE_DECIMAL_OVERFLOW,
                            format!("Decimal overflow when performing operation '{}' on field {label}", *op as char),
                        ));
                    };
                    Num::Dec(v)
                }
                (a, b) => {
                    let f = |n: Num| match n {
                        #[allow(clippy::cast_precision_loss, reason = "mixed arithmetic is floating point")]
                        Num::Int(i) => i as f64,
                        Num::Float(x) => x,
                        Num::Dec(d) => d.to_f64(),
                    };
                    Num::Float(if *op == b'+' { f(a) + f(b) } else { f(a) - f(b) })
                }
            };
            encode_num(result)
        }
        OpKind::Bit(op, arg) => {
            let Ok(Integer::Unsigned(cur)) = Reader::new(old).read_integer() else {
                return Err(arg_type(*op, label, "a positive integer"));
            };
            let v = match op {
                b'&' => cur & arg,
                b'|' => cur | arg,
                _ => cur ^ arg,
            };
            let mut out = Vec::new();
            write::uint(&mut out, v);
            out
        }
        OpKind::Splice { offset, cut, paste } => {
            let Ok(s) = Reader::new(old).read_str() else {
                return Err(arg_type(b':', label, "a string"));
            };
            let len = i64::try_from(s.len()).unwrap_or(i64::MAX);
            let mut offset = *offset;
            if offset < 0 {
                if -offset > len + 1 {
                    return Err(BoxError::new(
                        code::UPDATE_SPLICE,
                        format!("SPLICE error on field {label}: offset is out of bound"),
                    ));
                }
                offset += len + 1;
            } else if offset > len {
                offset = len;
            }
            let rest = len - offset;
            let cut = if *cut < 0 {
                if -cut > rest {
                    0
                } else {
                    cut + rest
                }
            } else {
                (*cut).min(rest)
            };
            #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss, reason = "0 <= offset, cut <= len")]
            let (o, c) = (offset as usize, cut as usize);
            let mut text = Vec::with_capacity(s.len() + paste.len());
            text.extend_from_slice(s.get(..o).unwrap_or(&[]));
            text.extend_from_slice(paste);
            text.extend_from_slice(s.get(o + c..).unwrap_or(&[]));
            let mut out = Vec::with_capacity(text.len() + 5);
            write::str(&mut out, &text);
            out
        }
        OpKind::Insert(v) => return Ok(Cow::Borrowed(v)),
        OpKind::Delete(_) => return Ok(Cow::Borrowed(&[])),
    };
    Ok(Cow::Owned(value))
}

/// A tuple's fields while operations apply (up to 8 without an allocation).
type Slots<'a> = smallvec::SmallVec<[Slot<'a>; 8]>;

fn slots_of<'a>(fields: &[&'a [u8]]) -> Slots<'a> {
    fields.iter().map(|f| Slot::unchanged(f)).collect()
}

/// Fills `slots` with a tuple's fields, read from it directly (no field list first).
fn fill_slots<'a>(tuple: &'a [u8], slots: &mut Slots<'a>) -> BoxResult<()> {
    let mut r = Reader::new(tuple);
    let n = r.read_array_len().map_err(|_| BoxError::new(code::TUPLE_NOT_ARRAY, "Tuple/Key must be MsgPack array"))?;
    slots.reserve(n.min(1024) as usize);
    for _ in 0..n {
        let bytes = r.skip().map_err(|_| BoxError::invalid_msgpack("tuple"))?;
        slots.push(Slot::unchanged(bytes));
    }
    Ok(())
}

thread_local! {
    /// Where a new tuple is assembled before it is copied into an allocation of its
    /// own, so that an update allocates once for the tuple and not also for a vector.
    static ASSEMBLY: RefCell<Vec<u8>> = const { RefCell::new(Vec::new()) };
}

/// The largest assembly buffer kept between updates.
const MAX_KEPT_ASSEMBLY: usize = 64 * 1024;

/// A tuple an update assembled, with where each field ends: its fields are known
/// without splitting it again.
pub struct Assembled {
    /// The new tuple (not yet validated).
    pub tuple: Tuple,
    /// Where the first field starts (after the array header).
    first: u32,
    /// Where each field ends.
    ends: smallvec::SmallVec<[u32; 8]>,
    /// The positions of the fields operations changed, ascending; `None` when a
    /// field was inserted, deleted or appended (every field may have moved).
    changed: Option<smallvec::SmallVec<[u32; 4]>>,
}

impl Assembled {
    /// The new tuple's fields.
    #[must_use]
    pub fn fields(&self) -> TupleFields<'_> {
        let mut fields = TupleFields::new();
        let mut start = self.first as usize;
        for &end in &self.ends {
            fields.push(self.tuple.get(start..end as usize).unwrap_or_default());
            start = end as usize;
        }
        fields
    }

    /// The positions of the fields the operations changed, ascending, when no
    /// field moved: the others are the old tuple's, as they were.
    #[must_use]
    pub fn changed_fields(&self) -> Option<&[u32]> {
        self.changed.as_deref()
    }
}

fn join_slots(slots: &[Slot<'_>], reshaped: bool) -> Assembled {
    ASSEMBLY.with_borrow_mut(|out| {
        out.clear();
        #[allow(clippy::cast_possible_truncation, reason = "field counts fit u32")]
        write::array_len(out, slots.len() as u32);
        #[allow(clippy::cast_possible_truncation, reason = "a tuple is far below 4 GiB")]
        let first = out.len() as u32;
        let mut ends = smallvec::SmallVec::new();
        for slot in slots {
            match &slot.tree {
                Some(tree) => tree.store(out),
                None => out.extend_from_slice(&slot.bytes),
            }
            #[allow(clippy::cast_possible_truncation, reason = "a tuple is far below 4 GiB")]
            ends.push(out.len() as u32);
        }
        let tuple = Tuple::from(out.as_slice());
        if out.capacity() > MAX_KEPT_ASSEMBLY {
            *out = Vec::new();
        }
        #[allow(clippy::cast_possible_truncation, reason = "field counts fit u32")]
        let changed =
            (!reshaped).then(|| slots.iter().enumerate().filter(|(_, s)| s.touched).map(|(i, _)| i as u32).collect());
        Assembled { tuple, first, ends, changed }
    })
}

/// Applies `ops` to a tuple's fields and returns the new tuple (not yet validated).
pub fn apply<'a>(ops: &[Op<'a>], fields: &[&'a [u8]], space: &Space) -> BoxResult<Assembled> {
    let mut slots = slots_of(fields);
    let reshaped = apply_all(ops, &mut slots, space)?;
    Ok(join_slots(&slots, reshaped))
}

/// [`apply`] to a tuple given whole (a stored one: a valid MessagePack array).
pub fn apply_to_tuple<'a>(ops: &[Op<'a>], tuple: &'a [u8], space: &Space) -> BoxResult<Assembled> {
    // Filled in place: a slot vector is a few hundred bytes to move.
    let mut slots = Slots::new();
    fill_slots(tuple, &mut slots)?;
    let reshaped = apply_all(ops, &mut slots, space)?;
    Ok(join_slots(&slots, reshaped))
}

/// Applies every operation in turn; returns whether fields moved.
fn apply_all<'a>(ops: &[Op<'a>], slots: &mut Slots<'a>, space: &Space) -> BoxResult<bool> {
    check_names(ops, space)?;
    let mut reshaped = false;
    for op in ops {
        reshaped |= apply_op(slots, op, space)?;
    }
    Ok(reshaped)
}

/// UPSERT's rule: an operation that fails is logged and skipped; the others still
/// apply. A field name no field has fails the whole request, as in 2.6.
///
/// # Errors
/// The first operation naming a field that does not exist.
pub fn apply_skipping_failures<'a>(ops: &[Op<'a>], fields: &[&'a [u8]], space: &Space) -> BoxResult<Assembled> {
    check_names(ops, space)?;
    let mut slots = slots_of(fields);
    let mut reshaped = false;
    for op in ops {
        // A failed operation leaves the fields as they were (see `apply_op`).
        match apply_op(&mut slots, op, space) {
            Ok(moved) => reshaped |= moved,
            Err(e) => tracing::warn!(space = %space.def.name, error = %e, "UPSERT operation failed"),
        }
    }
    Ok(join_slots(&slots, reshaped))
}

/// Applies one operation. One that fails on a whole field changes nothing (every
/// check comes before the change, and a field's mark as updated is taken back);
/// one inside a field leaves what 2.6 leaves, so UPSERT can skip it alike.
/// Returns whether fields moved (one was inserted, deleted or appended).
fn apply_op<'a>(slots: &mut Slots<'a>, op: &Op<'a>, space: &Space) -> BoxResult<bool> {
    let reach = match op.kind {
        OpKind::Insert(_) => Reach::Insert,
        OpKind::Set(_) => Reach::Append,
        _ => Reach::Existing,
    };
    let (pos, label, inside) = resolve(&op.field, slots.len(), space, reach)?;
    if let (Some(lexer), Some(slot), FieldRef::Name(path)) = (inside, slots.get_mut(pos), &op.field) {
        apply_inside(slot, &op.kind, lexer, path)?;
        return Ok(false);
    }
    match &op.kind {
        OpKind::Insert(v) => {
            slots.insert(pos, Slot::unchanged(v));
            return Ok(true);
        }
        OpKind::Delete(count) => {
            let end = usize::try_from(*count).unwrap_or(usize::MAX).saturating_add(pos).min(slots.len());
            slots.drain(pos..end);
            return Ok(true);
        }
        OpKind::Set(v) if pos == slots.len() => {
            // Appended as a value no operation changed (a later one may change it).
            slots.push(Slot::unchanged(v));
            return Ok(true);
        }
        kind => {
            // As 2.6: '=' may replace a field an earlier operation updated; the
            // others may not work on such a field ("double update").
            let set = matches!(kind, OpKind::Set(_));
            touch(slots, pos, !set, label)?;
            if let Some(slot) = slots.get_mut(pos) {
                // Only '=' may find the field marked, and '=' cannot fail: a failed
                // operation leaves it unmarked, as it found it.
                match compute(kind, &slot.bytes, label) {
                    Ok(value) => {
                        slot.bytes = value;
                        slot.tree = None;
                    }
                    Err(e) => {
                        slot.touched = false;
                        return Err(e);
                    }
                }
            }
        }
    }
    Ok(false)
}

/// Applies an operation whose path goes on inside the field `slot` holds.
fn apply_inside<'a>(slot: &mut Slot<'a>, kind: &OpKind<'a>, lexer: Lexer<'a>, path: &'a [u8]) -> BoxResult<()> {
    let mut field = match (slot.tree.take(), &slot.bytes) {
        (Some(tree), _) => *tree,
        (None, Cow::Borrowed(bytes)) if !slot.touched => tree::Field::nop(bytes),
        // Inside a value another operation replaced (2.6.0 crashes here; later
        // versions answer so).
        _ => return Err(Label::Path(path).not_found()),
    };
    let result = tree::apply(&mut field, &mut tree::PathOp::new(kind, lexer, path));
    if !field.is_nop() {
        slot.tree = Some(Box::new(field));
        slot.touched = true;
    }
    result
}

/// Marks the field at `pos` as updated; `exclusive`: refuse one updated already.
fn touch(slots: &mut [Slot<'_>], pos: usize, exclusive: bool, label: Label<'_>) -> BoxResult<()> {
    if let Some(slot) = slots.get_mut(pos) {
        if slot.touched && exclusive {
            return Err(update_error(label, "double update of the same field"));
        }
        slot.touched = true;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::tuple::split;

    fn space() -> Space {
        Space::unnamed()
    }

    /// `[[op, field, arg], ...]` with 1-based field numbers.
    fn ops(list: &[(&str, u64, &[u8])]) -> Vec<u8> {
        let mut out = Vec::new();
        write::array_len(&mut out, u32::try_from(list.len()).unwrap());
        for (op, field, arg) in list {
            write::array_len(&mut out, 3);
            write::str(&mut out, op.as_bytes());
            write::uint(&mut out, *field);
            out.extend_from_slice(arg);
        }
        out
    }

    #[test]
    fn set_insert_and_arithmetic_build_the_new_tuple() {
        let old = [0x93, 0x01, 0x05, 0xa1, b'a'];
        let ops = ops(&[("+", 2, &[0x03]), ("=", 3, &[0xa2, b'b', b'c']), ("!", 4, &[0xc0])]);
        let ops = parse_ops(&ops, 1).unwrap();
        let new = apply(&ops, &split(&old).unwrap(), &space()).unwrap();
        assert_eq!(&new.tuple[..], &[0x94, 0x01, 0x08, 0xa2, b'b', b'c', 0xc0]);
        assert_eq!(new.fields(), split(&new.tuple).unwrap(), "the fields as assembled are the tuple's");
    }

    #[test]
    fn a_large_tuple_leaves_the_assembly_buffer_usable() {
        let space = space();
        let mut big = vec![0x92, 0x01, 0xdb];
        big.extend_from_slice(&100_000u32.to_be_bytes());
        big.extend(std::iter::repeat_n(b'x', 100_000));
        let bump = ops(&[("+", 1, &[0x01])]);
        let bump = parse_ops(&bump, 1).unwrap();
        let new = apply(&bump, &split(&big).unwrap(), &space).unwrap();
        assert_eq!(new.fields(), split(&new.tuple).unwrap());
        let new = new.tuple;
        assert_eq!(new.len(), big.len());
        assert_eq!((new[1], &new[2..]), (0x02, &big[2..]));
        assert!(ASSEMBLY.with_borrow(Vec::capacity) <= MAX_KEPT_ASSEMBLY, "a large buffer is not kept");
        let small = [0x91, 0x07];
        assert_eq!(&apply(&bump, &split(&small).unwrap(), &space).unwrap().tuple[..], &[0x91, 0x08]);
        let skipped = apply_skipping_failures(&bump, &split(&[0x91, 0xa1, b'z']).unwrap(), &space).unwrap().tuple;
        assert_eq!(&skipped[..], &[0x91, 0xa1, b'z'], "a failed operation leaves the field as it was");
    }

    #[test]
    fn the_changed_fields_are_listed_unless_a_field_moved() {
        let old = [0x94, 0x01, 0x05, 0xa1, b'a', 0x07];
        let changed = |list: &[(&str, u64, &[u8])]| {
            let encoded = ops(list);
            let parsed = parse_ops(&encoded, 1).unwrap();
            let new = apply_to_tuple(&parsed, &old, &space()).unwrap();
            assert_eq!(new.fields(), split(&new.tuple).unwrap());
            new.changed_fields().map(<[u32]>::to_vec)
        };
        assert_eq!(changed(&[("+", 4, &[0x01]), ("=", 2, &[0x02])]), Some(vec![1, 3]));
        let failing = ops(&[("+", 3, &[0x01]), ("=", 2, &[0x02])]);
        let skipped =
            apply_skipping_failures(&parse_ops(&failing, 1).unwrap(), &split(&old).unwrap(), &space()).unwrap();
        assert_eq!(skipped.changed_fields(), Some(&[1][..]), "a skipped operation changed nothing");
        assert_eq!(changed(&[("=", 5, &[0x02])]), None, "appended");
        assert_eq!(changed(&[("!", 2, &[0x02])]), None, "inserted");
        assert_eq!(changed(&[("=", 2, &[0x02]), ("#", 4, &[0x01])]), None, "deleted");
    }

    #[test]
    fn only_set_may_update_a_field_again() {
        let old = [0x93, 0x01, 0x0a, 0xa3, b'a', b'b', b'c'];
        let run = |list: &[(&str, u64, &[u8])]| {
            let encoded = ops(list);
            let parsed = parse_ops(&encoded, 1).unwrap();
            apply(&parsed, &split(&old).unwrap(), &space()).map(|a| a.tuple.to_vec()).map_err(|e| e.code)
        };
        // Tarantool 2.6 (its own answers for each pair, `box.space.t:update`).
        assert_eq!(run(&[("=", 2, &[0x07]), ("=", 2, &[0x08])]), Ok(vec![0x93, 0x01, 0x08, 0xa3, b'a', b'b', b'c']));
        assert_eq!(run(&[("+", 2, &[0x01]), ("=", 2, &[0x08])]), Ok(vec![0x93, 0x01, 0x08, 0xa3, b'a', b'b', b'c']));
        assert_eq!(run(&[("=", 2, &[0x07]), ("+", 2, &[0x05])]), Err(code::UPDATE_FIELD));
        assert_eq!(run(&[("+", 2, &[0x01]), ("+", 2, &[0x05])]), Err(code::UPDATE_FIELD));
        assert_eq!(run(&[("|", 2, &[0x01]), ("&", 2, &[0x03])]), Err(code::UPDATE_FIELD));
        assert_eq!(run(&[("=", 2, &[0x07]), ("#", 2, &[0x01])]), Ok(vec![0x92, 0x01, 0xa3, b'a', b'b', b'c']));
    }

    #[test]
    fn upsert_skips_a_failed_operation_and_the_next_may_update_the_same_field() {
        let old = [0x93, 0x01, 0xa1, b'a', 0x05];
        let ops_ok =
            ops(&[("+", 2, &[0x01]), ("=", 2, &[0xa1, b'b']), ("#", 9, &[0x01]), ("!", 9, &[0xc0]), ("-", 3, &[0x02])]);
        let parsed = parse_ops(&ops_ok, 1).unwrap();
        let new = apply_skipping_failures(&parsed, &split(&old).unwrap(), &space()).unwrap();
        // '+' on a string and the out-of-range '#' and '!' are skipped; '=' and '-' apply.
        assert_eq!(&new.tuple[..], &[0x93, 0x01, 0xa1, b'b', 0x03]);
        assert_eq!(new.fields(), split(&new.tuple).unwrap());
        // UPDATE refuses the same list at its first failure.
        assert!(apply(&parsed, &split(&old).unwrap(), &space()).is_err());
    }
}
