//! Multikey indexes: a part whose path has a `[*]` step (`'tags[*]'`,
//! `'items[*].sku'`) keys a tuple once per element of that array, as 2.6's
//! multikey indexes do. A tuple without the array has no entry; equal keys from
//! one tuple make one entry.

use super::field_path::{find, FieldPath, Found, Step};
use super::index::{key_part, read_key_part, Fault, Part};
use super::tuple::TupleFields;
use super::value::{Key, KeyPart, ValueType};
use crate::error::{BoxError, BoxResult};
use crate::protocol::msgpack::Reader;

/// The steps of a multikey part's path before and after its `[*]`.
#[must_use]
pub fn split(part: &Part) -> Option<(&[Step], &[Step])> {
    part.path.as_deref().and_then(FieldPath::split_at_any)
}

/// Where `inner` starts in `outer`.
fn offset(outer: &[u8], inner: &[u8]) -> usize {
    (inner.as_ptr() as usize).saturating_sub(outer.as_ptr() as usize)
}

fn container(step: &Step) -> &'static str {
    if matches!(step, Step::Key(_)) {
        "map"
    } else {
        "array"
    }
}

/// A tuple's field and the elements of the array in it a multikey part runs over.
struct Run<'t> {
    field: &'t [u8],
    items: Vec<&'t [u8]>,
}

/// The array a multikey part runs over; `Ok(None)` when the tuple does not have it.
fn elements<'t>(part: &Part, fields: &TupleFields<'t>) -> Result<Option<Run<'t>>, Fault> {
    let Some((before, _)) = split(part) else { return Ok(None) };
    let Some(&raw) = fields.get(part.field_no as usize) else { return Ok(None) };
    let array = match find(before, raw) {
        Found::Value(v) => v,
        Found::Missing => return Ok(None),
        Found::NotContainer { depth, at } => {
            return Err(Fault::wrong_type(part.field_no, &before[..depth], at, container(&before[depth])))
        }
    };
    let mut r = Reader::new(array);
    let Ok(n) = r.read_array_len() else {
        return Err(Fault::wrong_type(part.field_no, before, offset(raw, array), "array"));
    };
    let items = (0..n).map_while(|_| r.skip().ok()).collect();
    Ok(Some(Run { field: raw, items }))
}

/// The steps to a place below the `[*]` of `part`'s path (`depth` steps after it).
fn steps_to(part: &Part, depth: usize) -> Vec<Step> {
    let (before, after) = split(part).unwrap_or_default();
    before.iter().chain([&Step::Any]).chain(&after[..depth.min(after.len())]).cloned().collect()
}

/// Checks a tuple against a multikey part: each element's place, as 2.6 does.
///
/// # Errors
/// A value that is not MessagePack.
pub fn check(part: &Part, fields: &TupleFields<'_>) -> BoxResult<Result<(), Fault>> {
    let Run { field: raw, items } = match elements(part, fields) {
        Ok(Some(run)) => run,
        Ok(None) => return Ok(Ok(())),
        Err(fault) => return Ok(Err(fault)),
    };
    let after = split(part).map_or(&[][..], |(_, after)| after);
    for item in items {
        match find(after, item) {
            Found::Value(v) => {
                let ty = ValueType::of(v).map_err(|_| BoxError::invalid_msgpack("tuple"))?;
                if !part.ty.admits(ty, part.nullable) {
                    let steps = steps_to(part, after.len());
                    return Ok(Err(Fault::wrong_type(part.field_no, &steps, offset(raw, v), part.ty.name())));
                }
            }
            Found::Missing if part.nullable => {}
            Found::Missing => return Ok(Err(Fault::missing(part.field_no, &steps_to(part, after.len())))),
            Found::NotContainer { depth, at } => {
                let steps = steps_to(part, depth);
                let at = offset(raw, item) + at;
                return Ok(Err(Fault::wrong_type(part.field_no, &steps, at, container(&after[depth]))));
            }
        }
    }
    Ok(Ok(()))
}

/// The keys of a validated tuple under `parts` (one of them multikey): one per
/// element, equal ones once, in key order.
///
/// # Errors
/// A value of the wrong type (validation keeps that from happening).
pub fn keys(parts: &[Part], fields: &TupleFields<'_>) -> BoxResult<Vec<Key>> {
    let Some(runs) = parts.iter().find(|p| split(p).is_some()) else {
        return Ok(Vec::new());
    };
    let items = match elements(runs, fields) {
        Ok(Some(run)) => run.items,
        Ok(None) => return Ok(Vec::new()),
        Err(fault) => return Err(fault.error()),
    };
    let mut keys = Vec::with_capacity(items.len());
    for item in items {
        let mut key = Key::with_capacity(parts.len());
        for part in parts {
            key.push(match split(part) {
                Some((_, after)) => match find(after, item) {
                    Found::Value(v) => read_key_part(part, v)?,
                    _ => KeyPart::Nil,
                },
                None => key_part(part, fields)?,
            });
        }
        keys.push(key);
    }
    keys.sort_unstable();
    keys.dedup();
    Ok(keys)
}

/// Checks a multikey index definition's parts as 2.6 does: every `[*]` in the
/// same field at the same place. Returns the part number (1-based) of one that
/// is not, with 2.6's reason.
#[must_use]
pub fn incompatible(parts: &[Part]) -> Option<(usize, &'static str)> {
    let mut first: Option<(u32, &[Step])> = None;
    for (i, part) in parts.iter().enumerate() {
        let Some((before, _)) = split(part) else { continue };
        match first {
            None => first = Some((part.field_no, before)),
            Some((field, steps)) if field == part.field_no && steps == before => {}
            Some(_) => return Some((i + 1, "incompatable multikey index path")),
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::engine::tuple::split as split_tuple;
    use crate::engine::value::{Collation, FieldType};

    fn part(path: &str, ty: FieldType) -> Part {
        Part { path: Some(Arc::new(FieldPath::parse(path).unwrap())), ..Part::whole(1, ty, Collation::Binary, false) }
    }

    #[test]
    fn a_tuple_has_a_key_per_distinct_element() {
        // [1, ["a", "b", "a"]]
        let tuple = [0x92, 0x01, 0x93, 0xa1, b'a', 0xa1, b'b', 0xa1, b'a'];
        let fields = split_tuple(&tuple).unwrap();
        let keys = keys(&[part("[*]", FieldType::String)], &fields).unwrap();
        assert_eq!(keys.len(), 2);
        assert!(keys[0] < keys[1]);
        // [1] and [1, []]: no array, no elements: no entries.
        assert!(keys_of_bytes(&[0x91, 0x01]).is_empty());
        assert!(keys_of_bytes(&[0x92, 0x01, 0x90]).is_empty());
    }

    fn keys_of_bytes(tuple: &[u8]) -> Vec<Key> {
        keys(&[part("[*]", FieldType::String)], &split_tuple(tuple).unwrap()).unwrap()
    }

    #[test]
    fn each_element_is_checked_and_named_with_its_placeholder() {
        // [1, ["a", 5]] and [1, [{"n": 1}]]
        let wrong = [0x92, 0x01, 0x92, 0xa1, b'a', 0x05];
        let fault = check(&part("[*]", FieldType::String), &split_tuple(&wrong).unwrap()).unwrap().unwrap_err();
        assert_eq!(
            fault.error().message,
            "Tuple field [2][*] type does not match one required by operation: expected string"
        );
        let missing = [0x92, 0x01, 0x91, 0x81, 0xa1, b'n', 0x01];
        let fault = check(&part("[*].sku", FieldType::Unsigned), &split_tuple(&missing).unwrap()).unwrap().unwrap_err();
        assert_eq!(fault.error().message, "Tuple field [2][*][\"sku\"] required by space format is missing");
    }
}
