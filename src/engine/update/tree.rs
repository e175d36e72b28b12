//! Operations whose JSON path reaches inside a field (`'m.a'`, `'[3][2]'`,
//! `'f.list[1].k'`).
//!
//! The field becomes a small tree of what the operations did to it, built the way
//! 2.6 builds it (`xrow_update_{bar,route,array,map}.c`), because the result
//! depends on that shape: where a map's changed keys land, and which pairs of
//! operations are a "double update".
//! - A field the first such operation reaches is a *bar*: one change at the end of
//!   a path, written into the old bytes without decoding the rest.
//! - A second operation on the same field splits the bar where the two paths part:
//!   the common prefix becomes a *route*, and below it an *array* or *map* node
//!   holds both changes.
//! - A map node keeps its changed keys in a list (the newest first) with the
//!   unchanged pairs as tails; it writes the changed keys first, then the tails.
//!
//! Two operations on the same path are a double update; an operation past a
//! place another one replaced finds no such field.

use std::borrow::Cow;

use super::{compute, update_error, Label, OpKind};
use crate::engine::field_path;
use crate::engine::json_path::{Lexer, Token};
use crate::error::{BoxError, BoxResult};
use crate::protocol::msgpack::{write, MpType, Reader};

/// A field (or a value inside one) under update: its bytes before the operations
/// and what they did to it.
#[derive(Debug, Clone)]
pub(super) struct Field<'a> {
    data: &'a [u8],
    kind: Kind<'a>,
}

#[derive(Debug, Clone)]
enum Kind<'a> {
    /// Unchanged.
    Nop,
    /// Replaced by a new value.
    Scalar(Cow<'a, [u8]>),
    /// An array with changes in its elements.
    Array(Vec<Field<'a>>),
    /// A map with changes in its pairs.
    Map(Map<'a>),
    /// One change at the end of a path.
    Bar(Box<Bar<'a>>),
    /// A path every change below shares.
    Route(Box<Route<'a>>),
}

#[derive(Debug, Clone)]
struct Map<'a> {
    /// Pairs after the changes.
    len: u32,
    /// In 2.6's list order: each new item goes first.
    items: Vec<MapItem<'a>>,
}

/// A changed key (or none: a removed one, or the start of the map) and after it
/// pairs no operation touched.
#[derive(Debug, Clone)]
struct MapItem<'a> {
    key: Option<&'a [u8]>,
    field: Field<'a>,
    tail: &'a [u8],
}

#[derive(Debug, Clone)]
enum Change<'a> {
    /// A new element before `point` (an array) or a new key (a map).
    Insert(&'a [u8]),
    /// `point` removed: so many array elements, or a map's pair.
    Delete(u64),
    /// `point` replaced.
    Replace(Cow<'a, [u8]>),
}

#[derive(Debug, Clone)]
struct Bar<'a> {
    change: Change<'a>,
    /// The path from the field to the point, for a later operation to branch on.
    path: &'a [u8],
    /// The array or map that holds the point.
    parent: &'a [u8],
    /// The bytes replaced or deleted; empty where an array element is added.
    point: &'a [u8],
    /// The key a map insert adds.
    new_key: &'a [u8],
}

#[derive(Debug, Clone)]
struct Route<'a> {
    path: &'a [u8],
    next: Field<'a>,
}

/// An operation on its way down a path.
pub(super) struct PathOp<'a, 'k> {
    kind: &'k OpKind<'a>,
    lexer: Lexer<'a>,
    /// The step the operation is at.
    token: Token<'a>,
    /// Whether `token` was used to get where the operation is.
    consumed: bool,
    /// The whole path, as errors name it.
    path: &'a [u8],
}

impl<'a, 'k> PathOp<'a, 'k> {
    /// An operation whose path's first step (`lexer` is past it) chose a tuple field.
    pub(super) fn new(kind: &'k OpKind<'a>, lexer: Lexer<'a>, path: &'a [u8]) -> Self {
        Self { kind, lexer, token: Token::End, consumed: true, path }
    }

    fn label(&self) -> Label<'a> {
        Label::Path(self.path)
    }

    fn no_such_field(&self) -> BoxError {
        self.label().not_found()
    }

    fn error(&self, reason: &str) -> BoxError {
        update_error(self.label(), reason)
    }

    fn bad_json(&self, position: usize) -> BoxError {
        self.error(&format!("invalid JSON in position {position}"))
    }

    fn is_term(&self) -> bool {
        self.lexer.is_eof()
    }

    /// Reads the next step; the end of the path here means there is no such field.
    fn next_step(&mut self) -> BoxResult<()> {
        match self.lexer.next_token() {
            Err(position) => Err(self.bad_json(position)),
            Ok(Token::End) => Err(self.no_such_field()),
            Ok(token) => {
                self.token = token;
                self.consumed = false;
                Ok(())
            }
        }
    }

    fn read(&mut self) -> BoxResult<Token<'a>> {
        self.lexer.next_token().map_err(|position| self.bad_json(position))
    }
}

/// Where `inner` (a part of `outer`) starts in it.
fn start_in(outer: &[u8], inner: &[u8]) -> usize {
    (inner.as_ptr() as usize).wrapping_sub(outer.as_ptr() as usize).min(outer.len())
}

fn bytes_from(data: &[u8], start: usize) -> &[u8] {
    data.get(start..).unwrap_or_default()
}

fn bytes_between(data: &[u8], start: usize, end: usize) -> &[u8] {
    data.get(start..end).unwrap_or_default()
}

/// An array's or map's type, length and header size.
fn header(value: &[u8]) -> Option<(MpType, u32, usize)> {
    let mut r = Reader::new(value);
    let ty = r.peek_type().ok()?;
    let len = match ty {
        MpType::Array => r.read_array_len().ok()?,
        MpType::Map => r.read_map_len().ok()?,
        _ => return None,
    };
    Some((ty, len, r.position()))
}

fn type_of(value: &[u8]) -> Option<MpType> {
    Reader::new(value).peek_type().ok()
}

fn elements(array: &[u8]) -> Option<Vec<&[u8]>> {
    let mut r = Reader::new(array);
    let n = r.read_array_len().ok()?;
    (0..n).map(|_| r.skip().ok()).collect()
}

fn element(array: &[u8], n: u32) -> Option<&[u8]> {
    field_path::array_element(array, n).ok().flatten()
}

/// The pair with a string key `key`: (the pair, the value).
fn pair<'v>(map: &'v [u8], key: &[u8]) -> Option<(&'v [u8], &'v [u8])> {
    field_path::map_pair(map, key).ok().flatten()
}

impl<'a> Field<'a> {
    /// An unchanged value.
    pub(super) fn nop(data: &'a [u8]) -> Self {
        Self { data, kind: Kind::Nop }
    }

    /// Whether no operation changed it.
    pub(super) fn is_nop(&self) -> bool {
        matches!(self.kind, Kind::Nop)
    }

    /// Writes the value the operations made.
    pub(super) fn store(&self, out: &mut Vec<u8>) {
        let data = self.data;
        match &self.kind {
            Kind::Nop => out.extend_from_slice(data),
            Kind::Scalar(value) => out.extend_from_slice(value),
            Kind::Array(items) => {
                #[allow(clippy::cast_possible_truncation, reason = "from a MessagePack array")]
                write::array_len(out, items.len() as u32);
                for item in items {
                    item.store(out);
                }
            }
            Kind::Map(map) => {
                write::map_len(out, map.len);
                for item in &map.items {
                    if let Some(key) = item.key {
                        write::str(out, key);
                        item.field.store(out);
                    }
                }
                for item in &map.items {
                    out.extend_from_slice(item.tail);
                }
            }
            Kind::Route(route) => {
                let start = start_in(data, route.next.data);
                out.extend_from_slice(bytes_between(data, 0, start));
                route.next.store(out);
                out.extend_from_slice(bytes_from(data, start + route.next.data.len()));
            }
            Kind::Bar(bar) => bar.store(data, out),
        }
    }

    /// A container ready for changes in its elements or pairs.
    fn container(value: &'a [u8]) -> Option<Self> {
        let (ty, len, header_len) = header(value)?;
        let kind = if ty == MpType::Array {
            Kind::Array(elements(value)?.into_iter().map(Field::nop).collect())
        } else {
            let body = bytes_from(value, header_len);
            let items = if len == 0 {
                Vec::new()
            } else {
                vec![MapItem { key: None, field: Field::nop(bytes_between(body, 0, 0)), tail: body }]
            };
            Kind::Map(Map { len, items })
        };
        Some(Self { data: value, kind })
    }

    /// An array with `child` as its element `n` (the other elements unchanged).
    fn array_with_child(array: &'a [u8], child: Field<'a>, n: u32) -> Option<Self> {
        let mut items: Vec<Field<'a>> = elements(array)?.into_iter().map(Field::nop).collect();
        let slot = items.get_mut(n as usize)?;
        slot.kind = child.kind;
        Some(Self { data: array, kind: Kind::Array(items) })
    }

    /// A map with `child` as the value of `key`, the first item of its list.
    fn map_with_child(map: &'a [u8], child: Field<'a>, key: &'a [u8]) -> Option<Self> {
        let (_, len, header_len) = header(map)?;
        let body = bytes_from(map, header_len);
        let (found, value) = pair(map, key)?;
        let before = bytes_between(body, 0, start_in(body, found));
        let after = bytes_from(body, start_in(body, value) + value.len());
        let items = vec![
            MapItem { key: Some(key), field: Field { data: value, kind: child.kind }, tail: after },
            MapItem { key: None, field: Field::nop(bytes_between(body, 0, 0)), tail: before },
        ];
        Some(Self { data: map, kind: Kind::Map(Map { len, items }) })
    }
}

impl Bar<'_> {
    fn store(&self, data: &[u8], out: &mut Vec<u8>) {
        let parent_at = start_in(data, self.parent);
        let point_at = start_in(data, self.point);
        let point_end = point_at + self.point.len();
        let Some((ty, len, header_len)) = header(self.parent) else {
            // A replaced point is all a scalar path needs.
            out.extend_from_slice(bytes_between(data, 0, point_at));
            if let Change::Replace(value) = &self.change {
                out.extend_from_slice(value);
            }
            out.extend_from_slice(bytes_from(data, point_end));
            return;
        };
        let body_at = parent_at + header_len;
        match &self.change {
            Change::Insert(value) => {
                out.extend_from_slice(bytes_between(data, 0, parent_at));
                if ty == MpType::Array {
                    write::array_len(out, len + 1);
                    out.extend_from_slice(bytes_between(data, body_at, point_at));
                    out.extend_from_slice(value);
                    out.extend_from_slice(bytes_from(data, point_at));
                } else {
                    write::map_len(out, len + 1);
                    write::str(out, self.new_key);
                    out.extend_from_slice(value);
                    out.extend_from_slice(bytes_from(data, body_at));
                }
            }
            Change::Delete(count) => {
                out.extend_from_slice(bytes_between(data, 0, parent_at));
                if ty == MpType::Array {
                    #[allow(clippy::cast_possible_truncation, reason = "clipped to the array's length")]
                    write::array_len(out, len - *count as u32);
                } else {
                    write::map_len(out, len - 1);
                }
                out.extend_from_slice(bytes_between(data, body_at, point_at));
                out.extend_from_slice(bytes_from(data, point_end));
            }
            Change::Replace(value) => {
                out.extend_from_slice(bytes_between(data, 0, point_at));
                out.extend_from_slice(value);
                out.extend_from_slice(bytes_from(data, point_end));
            }
        }
    }
}

/// Applies `op` (past its first step) to `field`.
pub(super) fn apply<'a>(field: &mut Field<'a>, op: &mut PathOp<'a, '_>) -> BoxResult<()> {
    match field.kind {
        Kind::Nop => make_bar(field, op),
        // Past a value another operation replaced (2.6.0 crashes here; later
        // versions answer so).
        Kind::Scalar(_) => Err(op.no_such_field()),
        Kind::Array(_) => in_array(field, op),
        Kind::Map(_) => in_map(field, op),
        Kind::Bar(_) | Kind::Route(_) => {
            let next = next_hop(field, op)?;
            apply(next, op)
        }
    }
}

/// Where a path's point is, once found.
struct Located<'a> {
    parent: &'a [u8],
    point: &'a [u8],
    found: bool,
    /// The last step.
    last: Token<'a>,
    /// The whole pair, when the point is a map's value.
    pair: &'a [u8],
}

/// Follows the rest of `op`'s path in `data`; every step must exist.
fn locate<'a>(data: &'a [u8], op: &mut PathOp<'a, '_>) -> BoxResult<Located<'a>> {
    let mut at = Located { parent: data, point: data, found: true, last: Token::End, pair: data };
    loop {
        let token = op.read()?;
        match token {
            Token::End => return Ok(at),
            Token::Num(n) => {
                at.parent = at.point;
                at.point = element(at.point, n).ok_or_else(|| op.no_such_field())?;
            }
            Token::Str(key) => {
                at.parent = at.point;
                let (pair, value) = pair(at.point, key).ok_or_else(|| op.no_such_field())?;
                at.pair = pair;
                at.point = value;
            }
            Token::Any => return Err(op.bad_json(op.lexer.symbols() - 1)),
        }
        at.last = token;
    }
}

/// As [`locate`], but the last step may name a place to add (`=` and `!`).
fn locate_optional<'a>(data: &'a [u8], op: &mut PathOp<'a, '_>) -> BoxResult<Located<'a>> {
    let mut at = Located { parent: data, point: data, found: true, last: Token::End, pair: data };
    let missing = loop {
        let token = op.read()?;
        let next = match token {
            Token::End => return Ok(at),
            Token::Num(n) => element(at.point, n),
            Token::Str(key) => pair(at.point, key).map(|(_, value)| value),
            Token::Any => return Err(op.bad_json(op.lexer.symbols() - 1)),
        };
        at.parent = at.point;
        at.last = token;
        match next {
            Some(value) => at.point = value,
            None => break token,
        }
    };
    if op.read()? != Token::End {
        return Err(op.no_such_field());
    }
    at.found = false;
    match missing {
        Token::Num(n) => {
            let Some((MpType::Array, len, _)) = header(at.parent) else {
                return Err(op.error("can not access by index a non-array field"));
            };
            if n > len {
                return Err(op.no_such_field());
            }
            // The element after the last.
            at.point = bytes_from(at.parent, at.parent.len());
        }
        _ => {
            if type_of(at.parent) != Some(MpType::Map) {
                return Err(op.error("can not access by key a non-map field"));
            }
            at.point = bytes_from(at.parent, at.parent.len());
        }
    }
    Ok(at)
}

/// The first operation into an unchanged field: a bar.
fn make_bar<'a>(field: &mut Field<'a>, op: &mut PathOp<'a, '_>) -> BoxResult<()> {
    let path = op.lexer.rest();
    let (at, change) = match op.kind {
        OpKind::Insert(value) | OpKind::Set(value) => {
            let at = locate_optional(field.data, op)?;
            let is_map = type_of(at.parent) == Some(MpType::Map);
            let change = match (at.found, op.kind) {
                (true, OpKind::Insert(_)) if is_map => return Err(op.error("the key exists already")),
                (true, OpKind::Set(_)) => Change::Replace(Cow::Borrowed(*value)),
                _ => Change::Insert(value),
            };
            (at, change)
        }
        OpKind::Delete(count) => {
            let mut at = locate(field.data, op)?;
            let (count, end) = match header(at.parent) {
                Some((MpType::Array, len, _)) => {
                    let Token::Num(index) = at.last else { return Err(op.no_such_field()) };
                    let count = (*count).min(u64::from(len - index));
                    // The point grows over the elements deleted after it.
                    let mut r = Reader::new(bytes_from(at.parent, start_in(at.parent, at.point)));
                    for _ in 0..count {
                        r.skip().map_err(|_| op.no_such_field())?;
                    }
                    (count, r.position())
                }
                _ if *count != 1 => return Err(op.error("can delete only 1 field from a map in a row")),
                _ => {
                    // The key goes with its value.
                    at.point = at.pair;
                    (1, at.pair.len())
                }
            };
            at.point = bytes_between(at.parent, start_in(at.parent, at.point), start_in(at.parent, at.point) + end);
            (at, Change::Delete(count))
        }
        kind => {
            let at = locate(field.data, op)?;
            let value = compute(kind, at.point, op.label())?;
            (at, Change::Replace(value))
        }
    };
    let new_key = match at.last {
        Token::Str(key) if !at.found => key,
        _ => bytes_between(at.parent, 0, 0),
    };
    let bar = Bar { change, path, parent: at.parent, point: at.point, new_key };
    field.kind = Kind::Bar(Box::new(bar));
    Ok(())
}

/// The node below a bar or route where `op` goes on: the route's end when `op`'s
/// path starts with the route's, else a branch where the paths part.
fn next_hop<'a, 'f>(field: &'f mut Field<'a>, op: &mut PathOp<'a, '_>) -> BoxResult<&'f mut Field<'a>> {
    let follows = matches!(&field.kind, Kind::Route(route) if op.lexer.rest().starts_with(route.path));
    if follows {
        let Kind::Route(route) = &mut field.kind else { return Err(op.no_such_field()) };
        op.lexer.skip_bytes(route.path.len());
        return Ok(&mut route.next);
    }
    branch(field, op)
}

/// Splits a bar or route where `op`'s path leaves it: the common part becomes a
/// route (none if they part at once) to an array or map holding both.
fn branch<'a, 'f>(field: &'f mut Field<'a>, op: &mut PathOp<'a, '_>) -> BoxResult<&'f mut Field<'a>> {
    let old_path = match &field.kind {
        Kind::Bar(bar) => bar.path,
        Kind::Route(route) => route.path,
        _ => return Err(op.no_such_field()),
    };
    let mut old = Lexer::new(old_path);
    let mut parent = field.data;
    let mut last_old = Token::End;
    let (common, old_token, new_token) = loop {
        let common = old.offset();
        // The old path was checked when its bar was made.
        let old_token = old.next_token().unwrap_or(Token::End);
        if old_token != Token::End {
            last_old = old_token;
        }
        let new_token = op.read()?;
        if old_token == Token::End && new_token == Token::End {
            return Err(op.error("double update of the same field"));
        }
        if old_token != new_token {
            break (common, old_token, new_token);
        }
        let next = match new_token {
            Token::Num(n) => element(parent, n),
            Token::Str(key) => pair(parent, key).map(|(_, value)| value),
            _ => None,
        };
        // A place the bar added is not in the old value: the next step ends the
        // bar's path, a double update.
        if let Some(next) = next {
            parent = next;
        }
    };
    match (type_of(parent), new_token) {
        (Some(MpType::Array), Token::Num(_)) | (Some(MpType::Map), Token::Str(_)) => {}
        (Some(MpType::Array), _) => return Err(op.error("can not update array by non-integer index")),
        (Some(MpType::Map), _) => return Err(op.error("can not update map by non-string key")),
        _ => return Err(op.no_such_field()),
    }
    let rest = bytes_from(old_path, old.offset());
    let step = if old_token == Token::End {
        // Below the bar's point, an array or map. 2.6.0 makes the bar's insert or
        // delete again there, by the bar's last step (a key or index of the point's
        // parent, so usually nothing), and crashes for any other bar; later
        // versions refuse both.
        let redone = matches!(&field.kind, Kind::Bar(bar) if !matches!(bar.change, Change::Replace(_)));
        if !redone {
            return Err(op.error("double update of the same field"));
        }
        last_old
    } else {
        old_token
    };
    let data = field.data;
    let child = match std::mem::replace(&mut field.kind, Kind::Nop) {
        Kind::Route(route) if rest.is_empty() => route.next,
        Kind::Route(mut route) => {
            route.path = rest;
            Field { data, kind: Kind::Route(route) }
        }
        Kind::Bar(mut bar) => {
            bar.path = rest;
            Field { data, kind: Kind::Bar(bar) }
        }
        other => Field { data, kind: other },
    };
    op.token = new_token;
    op.consumed = false;
    let hop = with_child(parent, child, step, op)?;
    if common == 0 {
        *field = hop;
        return Ok(field);
    }
    field.kind = Kind::Route(Box::new(Route { path: bytes_between(old_path, 0, common), next: hop }));
    match &mut field.kind {
        Kind::Route(route) => Ok(&mut route.next),
        _ => Err(op.no_such_field()),
    }
}

/// The array or map `parent` with `child` at `step`. An insert or delete that
/// ended right there changed `parent`'s length, so it cannot move: it is made
/// again on the new node.
fn with_child<'a>(parent: &'a [u8], child: Field<'a>, step: Token<'a>, op: &PathOp<'a, '_>) -> BoxResult<Field<'a>> {
    let again = match &child.kind {
        Kind::Bar(bar) if bar.path.is_empty() => match bar.change {
            Change::Insert(value) => Some(OpKind::Insert(value)),
            Change::Delete(count) => Some(OpKind::Delete(count)),
            Change::Replace(_) => None,
        },
        _ => None,
    };
    if let Some(kind) = again {
        let mut hop = Field::container(parent).ok_or_else(|| op.no_such_field())?;
        let mut redo = PathOp {
            kind: &kind,
            lexer: Lexer::new(bytes_from(op.path, op.path.len())),
            token: step,
            consumed: false,
            path: op.path,
        };
        // It applied before, so it applies again, except where 2.6.0 redoes it by a
        // step from elsewhere (see `branch`): its failure there is ignored, as 2.6.0
        // ignores it.
        let _ = apply(&mut hop, &mut redo);
        return Ok(hop);
    }
    let hop = match step {
        Token::Num(n) => Field::array_with_child(parent, child, n),
        Token::Str(key) => Field::map_with_child(parent, child, key),
        _ => None,
    };
    hop.ok_or_else(|| op.no_such_field())
}

/// An operation at an array node.
fn in_array<'a>(field: &mut Field<'a>, op: &mut PathOp<'a, '_>) -> BoxResult<()> {
    if op.consumed {
        op.next_step()?;
    }
    let Token::Num(n) = op.token else {
        return Err(op.error("can't update an array by a non-numeric index"));
    };
    let Kind::Array(items) = &mut field.kind else { return Err(op.no_such_field()) };
    let n = n as usize;
    let appends = matches!(op.kind, OpKind::Insert(_)) || (matches!(op.kind, OpKind::Set(_)) && n == items.len());
    if op.is_term() {
        match op.kind {
            OpKind::Insert(value) | OpKind::Set(value) if appends => {
                if n > items.len() {
                    return Err(op.no_such_field());
                }
                items.insert(n, Field::nop(value));
                return Ok(());
            }
            OpKind::Delete(count) => {
                if n >= items.len() {
                    return Err(op.no_such_field());
                }
                let end = usize::try_from(*count).unwrap_or(usize::MAX).saturating_add(n).min(items.len());
                items.drain(n..end);
                return Ok(());
            }
            _ => {}
        }
    }
    let Some(item) = items.get_mut(n) else { return Err(op.no_such_field()) };
    if !op.is_term() {
        op.consumed = true;
        return apply(item, op);
    }
    set_scalar(item, op)
}

/// A terminal `=` replaces the value whatever was done to it; the other scalar
/// operations need it unchanged.
fn set_scalar<'a>(item: &mut Field<'a>, op: &PathOp<'a, '_>) -> BoxResult<()> {
    let value = match op.kind {
        OpKind::Set(value) => Cow::Borrowed(*value),
        kind if item.is_nop() => compute(kind, item.data, op.label())?,
        _ => return Err(op.error("double update of the same field")),
    };
    item.kind = Kind::Scalar(value);
    Ok(())
}

impl<'a> Map<'a> {
    /// The item for `key`, made from the tails when no operation changed it yet.
    fn find(&mut self, key: &'a [u8]) -> Option<usize> {
        if let Some(i) = self.items.iter().position(|item| item.key == Some(key)) {
            return Some(i);
        }
        for i in 0..self.items.len() {
            let tail = self.items[i].tail;
            let mut r = Reader::new(tail);
            while r.position() < tail.len() {
                let start = r.position();
                let is_key = r.peek_type().ok()? == MpType::Str && r.read_str().ok()? == key;
                if !is_key {
                    if start == r.position() {
                        r.skip().ok()?;
                    }
                    r.skip().ok()?;
                    continue;
                }
                let value = r.skip().ok()?;
                let rest = bytes_from(tail, r.position());
                let item = &mut self.items[i];
                if start == 0 && item.key.is_none() {
                    *item = MapItem { key: Some(key), field: Field::nop(value), tail: rest };
                    return Some(i);
                }
                item.tail = bytes_between(tail, 0, start);
                self.items.insert(0, MapItem { key: Some(key), field: Field::nop(value), tail: rest });
                return Some(0);
            }
        }
        None
    }
}

/// An operation at a map node.
fn in_map<'a>(field: &mut Field<'a>, op: &mut PathOp<'a, '_>) -> BoxResult<()> {
    if op.consumed {
        op.next_step()?;
    }
    let Token::Str(key) = op.token else {
        return Err(op.error("can't update a map by not a string key"));
    };
    let Kind::Map(map) = &mut field.kind else { return Err(op.no_such_field()) };
    let found = map.find(key);
    let Some(i) = found else {
        return match op.kind {
            OpKind::Insert(value) | OpKind::Set(value) if op.is_term() => {
                map.len += 1;
                map.items.insert(
                    0,
                    MapItem { key: Some(key), field: Field::nop(value), tail: bytes_from(value, value.len()) },
                );
                Ok(())
            }
            OpKind::Delete(count) if op.is_term() => match count {
                1 => Ok(()),
                _ => Err(op.error("can delete only 1 field from a map in a row")),
            },
            _ => Err(op.no_such_field()),
        };
    };
    if !op.is_term() {
        op.consumed = true;
        return apply(&mut map.items[i].field, op);
    }
    match op.kind {
        OpKind::Insert(_) => Err(op.error("the key exists already")),
        OpKind::Delete(1) => {
            let item = &mut map.items[i];
            item.key = None;
            item.field = Field::nop(bytes_from(item.field.data, item.field.data.len()));
            map.len -= 1;
            Ok(())
        }
        OpKind::Delete(_) => Err(op.error("can delete only 1 field from a map in a row")),
        _ => set_scalar(&mut map.items[i].field, op),
    }
}

#[cfg(test)]
mod tests {
    use super::super::{apply_to_tuple, parse_ops};
    use crate::engine::space::Space;
    use crate::protocol::msgpack::write;

    /// A MessagePack value with maps in the order given.
    enum V {
        I(u64),
        S(&'static str),
        A(Vec<V>),
        M(Vec<(&'static str, V)>),
    }
    use V::{A, I, M, S};

    fn enc(v: &V, out: &mut Vec<u8>) {
        match v {
            I(n) => write::uint(out, *n),
            S(s) => write::str(out, s.as_bytes()),
            A(items) => {
                write::array_len(out, u32::try_from(items.len()).unwrap());
                items.iter().for_each(|i| enc(i, out));
            }
            M(pairs) => {
                write::map_len(out, u32::try_from(pairs.len()).unwrap());
                for (k, v) in pairs {
                    write::str(out, k.as_bytes());
                    enc(v, out);
                }
            }
        }
    }

    fn bytes(v: &V) -> Vec<u8> {
        let mut out = Vec::new();
        enc(v, &mut out);
        out
    }

    /// `ops` (`[[op, path, arg...], ...]`) applied to `tuple`: the new tuple's bytes
    /// or the error's message.
    fn update(tuple: &V, ops: Vec<Vec<V>>) -> Result<Vec<u8>, String> {
        let ops = bytes(&A(ops.into_iter().map(A).collect()));
        let tuple = bytes(tuple);
        let parsed = parse_ops(&ops, 1).map_err(|e| e.to_string())?;
        let new = apply_to_tuple(&parsed, &tuple, &Space::unnamed()).map_err(|e| e.to_string())?;
        Ok(new.tuple.to_vec())
    }

    fn base() -> V {
        A(vec![
            I(1),
            M(vec![("b", M(vec![("c", I(2)), ("d", A(vec![I(3), I(4), I(5)]))])), ("a", I(1)), ("e", S("xy"))]),
        ])
    }

    #[test]
    fn one_operation_changes_its_place_and_leaves_the_rest_as_it_was() {
        let new = update(&base(), vec![vec![S("="), S("[2].b.d[2]"), I(99)]]).unwrap();
        let want = A(vec![
            I(1),
            M(vec![("b", M(vec![("c", I(2)), ("d", A(vec![I(3), I(99), I(5)]))])), ("a", I(1)), ("e", S("xy"))]),
        ]);
        assert_eq!(new, bytes(&want));
        // A new key goes first, as 2.6 writes it.
        let new = update(&base(), vec![vec![S("="), S("[2].new"), I(9)]]).unwrap();
        let want = A(vec![
            I(1),
            M(vec![
                ("new", I(9)),
                ("b", M(vec![("c", I(2)), ("d", A(vec![I(3), I(4), I(5)]))])),
                ("a", I(1)),
                ("e", S("xy")),
            ]),
        ]);
        assert_eq!(new, bytes(&want));
    }

    #[test]
    fn two_operations_in_one_map_write_the_changed_keys_first() {
        let ops =
            vec![vec![S("="), S("[2].b.d[1]"), I(1)], vec![S("="), S("[2].b.c"), I(2)], vec![S("="), S("[2].a"), I(3)]];
        let want = A(vec![
            I(1),
            M(vec![("a", I(3)), ("b", M(vec![("d", A(vec![I(1), I(4), I(5)])), ("c", I(2))])), ("e", S("xy"))]),
        ]);
        assert_eq!(update(&base(), ops).unwrap(), bytes(&want));
    }

    #[test]
    fn an_insert_made_again_below_a_branch_moves_the_elements_after_it() {
        let t = A(vec![I(1), A(vec![I(10), I(20)])]);
        let ops = vec![vec![S("!"), S("[2][1]"), I(1)], vec![S("!"), S("[2][3]"), I(2)]];
        assert_eq!(update(&t, ops).unwrap(), bytes(&A(vec![I(1), A(vec![I(1), I(10), I(2), I(20)])])));
    }

    #[test]
    fn errors_name_the_path_as_tarantool_does() {
        let t = A(vec![I(1), M(vec![("a", I(1)), ("s", S("x"))]), A(vec![I(1)])]);
        let cases = [
            (
                vec![vec![S("="), S("[2].a"), I(1)], vec![S("="), S("[2].a"), I(2)]],
                "Field '[2].a' UPDATE error: double update of the same field",
            ),
            (vec![vec![S("!"), S("[2].a"), I(1)]], "Field '[2].a' UPDATE error: the key exists already"),
            (
                vec![vec![S("#"), S("[2].a"), I(2)]],
                "Field '[2].a' UPDATE error: can delete only 1 field from a map in a row",
            ),
            (
                vec![vec![S("="), S("[2].s.x"), I(1)]],
                "Field '[2].s.x' UPDATE error: can not access by key a non-map field",
            ),
            (vec![vec![S("="), S("[3][3]"), I(1)]], "Field ''[3][3]'' was not found in the tuple"),
            (vec![vec![S("="), S("[2]..a"), I(1)]], "Field '[2]..a' UPDATE error: invalid JSON in position 5"),
            (
                vec![vec![S("+"), S("[2].s"), I(1)]],
                "Argument type in operation '+' on field '[2].s' does not match field type: expected a number",
            ),
            (
                vec![vec![S("="), S("[2]"), I(0)], vec![S("="), S("[2].a"), I(1)]],
                "Field ''[2].a'' was not found in the tuple",
            ),
        ];
        for (ops, message) in cases {
            assert_eq!(update(&t, ops).unwrap_err(), message);
        }
    }
}
