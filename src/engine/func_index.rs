//! Functional indexes: an index whose keys a persistent Lua function computes
//! from each tuple (`create_index(name, {func = 'f', parts = {{1, 'string'}}})`),
//! as 2.6's functional indexes do.
//!
//! The function must be a Lua function with a body, deterministic and sandboxed
//! (it cannot touch `box`, so calling it in the middle of a write is safe). It
//! gets the tuple and returns one key (an array whose items the index parts
//! number from 1), or with `opts = {is_multikey = true}` an array of keys. The
//! engine does not run Lua: the TX thread's Lua runtime installs a
//! [`KeyFunctions`] host here, and keys are computed through it.

use std::cell::RefCell;
use std::rc::Rc;

use super::catalog::space_id;
use super::index::{IndexDef, Part};
use super::space::{Space, SpaceDef};
use super::tuple::Tuple;
use super::value::{Key, KeyPart};
use super::Engine;
use crate::error::{code, BoxError, BoxResult};
use crate::protocol::msgpack::{MpType, Reader};

/// `_func_index`'s space id.
pub const SPACE_ID: u32 = 372;

/// A function a functional index calls, as its `_func` row defines it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeyFunction {
    /// Function id.
    pub id: u32,
    /// Function name.
    pub name: String,
    /// The Lua source of the function (`function(tuple) ... end`).
    pub body: String,
    /// `opts.is_multikey`: it returns an array of keys.
    pub multikey: bool,
}

/// A functional index's function: its id (`func` in the index's `_index`
/// options) and, once looked up in `_func`, its definition. Two are equal when
/// their ids are.
#[derive(Debug, Clone)]
pub struct FuncRef {
    /// The function id.
    pub id: u32,
    /// Its definition; `None` until the engine finds it (while a directory is
    /// loaded, before `_func` is).
    pub resolved: Option<Rc<KeyFunction>>,
}

impl PartialEq for FuncRef {
    fn eq(&self, other: &Self) -> bool {
        self.id == other.id
    }
}

/// What calls key functions: the TX thread's Lua runtime.
pub trait KeyFunctions {
    /// Calls `func` with `tuple` (of `space`, whose format names its fields)
    /// and returns everything it returned as one msgpack array.
    ///
    /// # Errors
    /// The function failed; the error is what it raised.
    fn call(&self, func: &KeyFunction, tuple: &Tuple, space: &SpaceDef) -> BoxResult<Vec<u8>>;
}

thread_local! {
    static HOST: RefCell<Option<Rc<dyn KeyFunctions>>> = const { RefCell::new(None) };
}

/// Makes `host` call the key functions of this thread's engine.
pub fn install(host: Rc<dyn KeyFunctions>) {
    HOST.with(|h| *h.borrow_mut() = Some(host));
}

/// Calls `func` through the installed host.
fn call(func: &KeyFunction, tuple: &Tuple, space: &SpaceDef) -> BoxResult<Vec<u8>> {
    let host = HOST.with(|h| h.borrow().clone());
    match host {
        Some(host) => host.call(func, tuple, space),
        None => Err(BoxError::new(code::PROC_LUA, "no Lua runtime to call the function")),
    }
}

/// Where the keys are for: the index and its space, named in errors.
#[derive(Debug, Clone, Copy)]
pub struct Target<'a> {
    /// The index name.
    pub index: &'a str,
    /// The space.
    pub space: &'a SpaceDef,
}

impl Target<'_> {
    fn format_error(&self, why: &str) -> BoxError {
        BoxError::new(
            code::FUNC_INDEX_FORMAT,
            format!(
                "Key format doesn't match one defined in functional index '{}' of space '{}': {why}",
                self.index, self.space.name
            ),
        )
    }

    /// `ER_FUNC_INDEX_FUNC` for this index: its key cannot be built, for `why`.
    #[must_use]
    pub fn func_error(&self, why: &str) -> BoxError {
        BoxError::new(
            code::FUNC_INDEX_FUNC,
            format!(
                "Failed to build a key for functional index '{}' of space '{}': {why}",
                self.index, self.space.name
            ),
        )
    }
}

/// The keys `func` gives `tuple`, each read against `parts` (the index
/// definition's, which number the key's items), as 2.6's `key_list` checks them.
///
/// # Errors
/// `ER_FUNC_INDEX_FUNC` when the function fails (its error as the previous one),
/// `ER_FUNC_INDEX_FORMAT` when what it returns is not a key, or keys, of `parts`.
pub fn keys(func: &KeyFunction, parts: &[Part], tuple: &Tuple, target: Target<'_>) -> BoxResult<Vec<Vec<KeyPart>>> {
    let returned = call(func, tuple, target.space).map_err(|e| {
        let mut top = target.func_error("can't evaluate function");
        top.prev = Some(Box::new(e));
        top
    })?;
    let bad = |_| BoxError::invalid_msgpack("functional index key");
    let mut r = Reader::new(&returned);
    if r.read_array_len().map_err(bad)? != 1 {
        return Err(target.format_error("to many values were returned"));
    }
    let count = if func.multikey {
        if r.peek_type().map_err(bad)? != MpType::Array {
            return Err(target.format_error("a multikey function mustn't return a scalar"));
        }
        r.read_array_len().map_err(bad)?
    } else {
        1
    };
    let mut out = Vec::with_capacity(count as usize);
    for _ in 0..count {
        out.push(read_key(&mut r, parts, target)?);
    }
    Ok(out)
}

/// One returned key: an array of exactly `parts.len()` items of the parts' types.
fn read_key(r: &mut Reader<'_>, parts: &[Part], target: Target<'_>) -> BoxResult<Vec<KeyPart>> {
    let bad = |_| BoxError::invalid_msgpack("functional index key");
    if r.peek_type().map_err(bad)? != MpType::Array {
        return Err(target.format_error("supplied key type is invalid: expected array"));
    }
    let n = r.read_array_len().map_err(bad)? as usize;
    if n != parts.len() {
        return Err(target
            .format_error(&format!("Invalid key part count in an exact match (expected {}, got {n})", parts.len())));
    }
    let mut key = Vec::with_capacity(n);
    for (i, part) in parts.iter().enumerate() {
        match KeyPart::read(r, part.ty, part.collation, part.nullable).map_err(bad)? {
            Some(k) => key.push(k),
            None => {
                let mut top = target.format_error("key does not follow functional index definition");
                top.prev = Some(Box::new(BoxError::key_part_type(i, part.ty.name())));
                return Err(top);
            }
        }
    }
    Ok(key)
}

/// 2.6's checks of a functional index's parts: no JSON paths, and numbered
/// 1, 2, ... in order (they name the returned key's items).
///
/// # Errors
/// `ER_UNSUPPORTED` for a path, `ER_FUNC_INDEX_PARTS` for the numbering.
pub fn check_parts(parts: &[Part]) -> BoxResult<()> {
    if parts.iter().any(|p| p.path.is_some()) {
        return Err(BoxError::new(code::UNSUPPORTED, "Functional index does not support json paths"));
    }
    if parts.iter().enumerate().any(|(i, p)| p.field_no as usize != i) {
        return Err(BoxError::new(
            code::FUNC_INDEX_PARTS,
            "Wrong functional index definition: key part numbers must be sequential and first part number must be 1",
        ));
    }
    Ok(())
}

/// The error for a function a functional index cannot use.
#[must_use]
pub fn unsuitable() -> BoxError {
    BoxError::new(
        code::WRONG_INDEX_OPTIONS,
        "Wrong index options (field 0): referenced function doesn't satisfy functional index function constraints",
    )
}

/// Reads the function of `_func` row `tuple` as a key function: a Lua
/// function with a body, deterministic and sandboxed.
///
/// # Errors
/// [`unsuitable`] otherwise.
pub fn from_func_row(tuple: &[u8]) -> BoxResult<KeyFunction> {
    let f = super::tuple::split(tuple)?;
    let text = |i: usize| f.get(i).and_then(|v| Reader::new(v).read_str().ok());
    let flag = |i: usize| f.get(i).and_then(|v| Reader::new(v).read_bool().ok()).unwrap_or(false);
    let id = f.first().and_then(|v| Reader::new(v).read_uint().ok()).unwrap_or(0);
    let lua = text(4).is_some_and(|l| l.eq_ignore_ascii_case(b"LUA"));
    let body = text(5).unwrap_or_default();
    if !lua || body.is_empty() || !flag(11) || !flag(12) {
        return Err(unsuitable());
    }
    let multikey = f
        .get(15)
        .and_then(|opts| super::catalog::map_get(opts, b"is_multikey"))
        .and_then(|v| Reader::new(v).read_bool().ok())
        .unwrap_or(false);
    Ok(KeyFunction {
        id: u32::try_from(id).unwrap_or(u32::MAX),
        name: String::from_utf8_lossy(text(2).unwrap_or_default()).into_owned(),
        body: String::from_utf8_lossy(body).into_owned(),
        multikey,
    })
}

impl Engine {
    /// The `_func` row with id `fid`.
    fn func_row(&self, fid: u32) -> Option<&Tuple> {
        let pk = self.spaces.get(&space_id::FUNC)?.primary()?;
        pk.get(&Key::from_iter([KeyPart::Uint(u64::from(fid))]))
    }

    /// Looks up a functional index's function in `_func`: it must be there, and suit.
    ///
    /// # Errors
    /// `ER_NO_SUCH_FUNCTION`, or [`unsuitable`].
    pub(super) fn resolve_key_function(&self, def: &mut IndexDef) -> BoxResult<()> {
        let Some(func) = &mut def.func else { return Ok(()) };
        let row = self.func_row(func.id).ok_or_else(|| no_such_function(func.id))?;
        func.resolved = Some(Rc::new(from_func_row(row)?));
        Ok(())
    }

    /// 2.6's checks of a `_func_index` row, which names an index's function
    /// again: the index and the function exist, the function suits and is the
    /// index's; a row cannot change.
    pub(super) fn check_func_index_row(&self, old: Option<&Tuple>, new: Option<&Tuple>) -> BoxResult<()> {
        let new = match (old, new) {
            (None, Some(new)) => new,
            (Some(_), Some(_)) => {
                return Err(BoxError::new(code::UNSUPPORTED, "functional index does not support alter"))
            }
            _ => return Ok(()),
        };
        let f = super::tuple::split(new)?;
        let uint = |i: usize, name: &str| {
            f.get(i)
                .and_then(|v| Reader::new(v).read_uint().ok())
                .and_then(|n| u32::try_from(n).ok())
                .ok_or_else(|| BoxError::field_type(&format!("{} ({name})", i + 1), "unsigned"))
        };
        let (sid, iid, fid) = (uint(0, "space_id")?, uint(1, "index_id")?, uint(2, "func_id")?);
        let index = self.space(sid)?.index(iid)?;
        let row = self.func_row(fid).ok_or_else(|| no_such_function(fid))?;
        from_func_row(row)?;
        if index.def.func.as_ref().map(|f| f.id) != Some(fid) {
            return Err(BoxError::new(
                code::WRONG_INDEX_OPTIONS,
                "Wrong index options (field 0): Function ids defined in _index and _func_index don't match",
            ));
        }
        Ok(())
    }

    /// Refuses to drop a function a functional index uses (it has a `_func_index` row).
    pub(super) fn check_func_drop(&self, old: &Tuple) -> BoxResult<()> {
        let Some(fid) = super::catalog::first_uint(old) else { return Ok(()) };
        let uses = |t: &Tuple| {
            super::tuple::split(t).ok().and_then(|f| f.get(2).and_then(|v| Reader::new(v).read_uint().ok()))
                == Some(u64::from(fid))
        };
        let used = self.spaces.get(&SPACE_ID).and_then(Space::primary).is_some_and(|pk| pk.iter().any(uses));
        if used {
            // 2.6 names the function by its owner's id there.
            let owner = super::catalog::parse_func(old).map_or(fid, |f| f.owner);
            return Err(BoxError::new(
                code::DROP_FUNCTION,
                format!("Can't drop function {owner}: function has references"),
            ));
        }
        Ok(())
    }

    /// Builds the functional indexes a directory's load left pending (their
    /// functions are in `_func`, loaded after `_index`), once keys can be computed.
    pub fn build_func_indexes(&mut self) {
        let pending: Vec<(u32, IndexDef)> = self
            .spaces
            .values()
            .flat_map(|s| s.indexes.values().filter(|ix| ix.is_pending()).map(|ix| (s.def.id, ix.def.clone())))
            .collect();
        for (sid, mut def) in pending {
            let (iid, name) = (def.id, def.name.clone());
            if let Err(e) = self.resolve_key_function(&mut def) {
                tracing::error!(space_id = sid, index = %name, error = %e, "functional index left unbuilt");
                continue;
            }
            let Ok(space) = self.space_mut(sid) else { continue };
            let Some(unbuilt) = space.indexes.remove(&iid) else { continue };
            if let Err(e) = space.add_index(def) {
                tracing::error!(space_id = sid, index = %name, error = %e, "functional index left unbuilt");
                space.indexes.insert(iid, unbuilt);
            }
        }
    }
}

fn no_such_function(fid: u32) -> BoxError {
    BoxError::new(code::NO_SUCH_FUNCTION, format!("Function '{fid}' does not exist"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::value::{Collation, FieldType};

    struct Returns(Vec<u8>);

    impl KeyFunctions for Returns {
        fn call(&self, _: &KeyFunction, _: &Tuple, _: &SpaceDef) -> BoxResult<Vec<u8>> {
            Ok(self.0.clone())
        }
    }

    fn func(multikey: bool) -> KeyFunction {
        KeyFunction { id: 1, name: "f".into(), body: "function(t) end".into(), multikey }
    }

    fn run(multikey: bool, returned: &[u8]) -> BoxResult<Vec<Vec<KeyPart>>> {
        install(Rc::new(Returns(returned.to_vec())));
        let parts = [Part::whole(0, FieldType::Unsigned, Collation::Binary, false)];
        let tuple: Tuple = Rc::from(&[0x91, 0x01][..]);
        let mut space = crate::engine::space::Space::unnamed().def;
        space.name = "s".into();
        keys(&func(multikey), &parts, &tuple, Target { index: "i", space: &space })
    }

    #[test]
    fn returned_keys_are_read_against_the_parts() {
        assert_eq!(run(false, &[0x91, 0x91, 0x07]).unwrap(), vec![vec![KeyPart::Uint(7)]]);
        assert_eq!(run(true, &[0x91, 0x92, 0x91, 0x01, 0x91, 0x02]).unwrap().len(), 2);
        assert_eq!(run(true, &[0x91, 0x90]).unwrap().len(), 0);
    }

    #[test]
    fn what_is_not_a_key_gets_2_6s_errors() {
        let msg = |m, r: &[u8]| run(m, r).unwrap_err().message;
        assert!(msg(false, &[0x92, 0x91, 0x01, 0x91, 0x02]).ends_with("to many values were returned"));
        assert!(msg(false, &[0x91, 0xa1, b'x']).ends_with("supplied key type is invalid: expected array"));
        assert!(msg(true, &[0x91, 0x01]).ends_with("a multikey function mustn't return a scalar"));
        assert!(msg(false, &[0x91, 0x90]).ends_with("(expected 1, got 0)"));
        let e = run(false, &[0x91, 0x91, 0xa1, b'x']).unwrap_err();
        assert_eq!(e.code, code::FUNC_INDEX_FORMAT);
        assert_eq!(e.prev.unwrap().code, code::KEY_PART_TYPE);
    }

    #[test]
    fn parts_must_number_the_key_from_one() {
        let part = |n| Part::whole(n, FieldType::Unsigned, Collation::Binary, false);
        assert!(check_parts(&[part(0), part(1)]).is_ok());
        assert_eq!(check_parts(&[part(1)]).unwrap_err().code, code::FUNC_INDEX_PARTS);
        assert_eq!(check_parts(&[part(0), part(2)]).unwrap_err().code, code::FUNC_INDEX_PARTS);
    }
}
