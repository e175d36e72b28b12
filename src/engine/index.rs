//! TREE, HASH, BITSET and RTREE indexes over tuples, memtx-style.
//!
//! A TREE index is an ordered map from key to tuple; a non-unique index
//! appends the primary key to make every entry distinct. A HASH index is
//! unique and answers only full-key lookups and scans, in 2.6's order
//! ([`super::light`], [`super::key_hash`]), except `_idempotency`'s, under a
//! keyed hash (`HashStore`). BITSET ([`super::bitset`]) and RTREE
//! ([`super::rtree`]) indexes answer their own searches.

use std::collections::BTreeMap;
use std::hash::{BuildHasher, Hash, Hasher};
use std::num::NonZeroU64;
use std::ops::Bound;
use std::rc::Rc;
use std::sync::Arc;

use super::bitset::{bits_of, BitsetSearch, BitsetStore};
use super::field_path::{self, FieldPath, Found, Step};
use super::func_index::{self, FuncRef};
use super::hash_slots::HashSlots;
use super::key_hash::key_hash;
use super::light::LightTable;
use super::multikey;
use super::rtree::{RtreeSearch, RtreeStore};
use super::space::SpaceDef;
use super::tuple::{split, Tuple, TupleFields};
use super::value::{Collation, FieldType, Key, KeyPart, ValueType};
use crate::error::{code, BoxError, BoxResult};
use crate::protocol::msgpack::Reader;

/// One part of an index definition.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Part {
    /// 0-based field number.
    pub field_no: u32,
    /// Type values must have.
    pub ty: FieldType,
    /// String comparison rule.
    pub collation: Collation,
    /// Whether nil is allowed.
    pub nullable: bool,
    /// Where inside the field the key is, if not the field itself.
    pub path: Option<Arc<FieldPath>>,
}

impl Part {
    /// A part on a whole field.
    #[must_use]
    pub fn whole(field_no: u32, ty: FieldType, collation: Collation, nullable: bool) -> Self {
        Self { field_no, ty, collation, nullable, path: None }
    }

    /// The part's value in a tuple's fields, or the error 2.6 gives for the tuple
    /// (see [`Fault`]); `Ok(None)` when a nullable part finds nothing.
    ///
    /// # Errors
    /// A value that is not MessagePack.
    pub fn value<'t>(&self, fields: &TupleFields<'t>) -> BoxResult<Result<Option<&'t [u8]>, Fault>> {
        let steps = self.path.as_deref().map_or(&[][..], FieldPath::steps);
        let Some(&raw) = fields.get(self.field_no as usize) else {
            return Ok(if self.nullable { Ok(None) } else { Err(Fault::missing(self.field_no, steps)) });
        };
        let type_of = |v: &[u8]| ValueType::of(v).map_err(|_| BoxError::invalid_msgpack("tuple"));
        let Some(path) = self.path.as_deref() else {
            return Ok(if self.ty.admits(type_of(raw)?, self.nullable) {
                Ok(Some(raw))
            } else {
                Err(Fault::wrong_type(self.field_no, &[], 0, self.ty.name()))
            });
        };
        let container = |depth: usize| if matches!(steps[depth], Step::Key(_)) { "map" } else { "array" };
        Ok(match path.find(raw) {
            Found::Value(v) if self.ty.admits(type_of(v)?, self.nullable) => Ok(Some(v)),
            Found::Value(v) => {
                let at = v.as_ptr() as usize - raw.as_ptr() as usize;
                Err(Fault::wrong_type(self.field_no, steps, at, self.ty.name()))
            }
            Found::Missing if self.nullable => Ok(None),
            Found::Missing => Err(Fault::missing(self.field_no, steps)),
            Found::NotContainer { depth, at } => {
                Err(Fault::wrong_type(self.field_no, &steps[..depth], at, container(depth)))
            }
        })
    }
}

/// What is wrong with a tuple for an index part, as 2.6 reports it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Fault {
    /// A value of the wrong type: in field `field`, starting `at` bytes into it.
    WrongType { field: u32, at: usize, label: String, expected: &'static str },
    /// A required place is missing.
    Missing { label: String },
}

impl Fault {
    pub(super) fn wrong_type(field: u32, steps: &[Step], at: usize, expected: &'static str) -> Self {
        Self::WrongType { field, at, label: field_path::label(field, steps), expected }
    }

    pub(super) fn missing(field: u32, steps: &[Step]) -> Self {
        Self::Missing { label: field_path::label(field, steps) }
    }

    /// The error: ER_FIELD_TYPE or ER_FIELD_MISSING.
    #[must_use]
    pub fn error(&self) -> BoxError {
        match self {
            Self::WrongType { label, expected, .. } => BoxError::field_type(label, expected),
            Self::Missing { label } => {
                BoxError::new(code::FIELD_MISSING, format!("Tuple field {label} required by space format is missing"))
            }
        }
    }
}

/// Index type.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IndexKind {
    /// Ordered: every iterator.
    Tree,
    /// Unordered, unique: EQ, ALL, GT.
    Hash,
    /// Non-unique, over one unsigned or string part: EQ, ALL and the BITS_* searches.
    Bitset,
    /// Non-unique, over one array of coordinates: boxes or points.
    Rtree {
        /// Coordinates per point (1 to 20).
        dimension: u8,
        /// Manhattan distance for NEIGHBOR (else euclidean).
        manhattan: bool,
    },
}

impl IndexKind {
    /// The name 2.6 shows (`index.type`, errors).
    #[must_use]
    pub fn name(self) -> &'static str {
        match self {
            Self::Tree => "TREE",
            Self::Hash => "HASH",
            Self::Bitset => "BITSET",
            Self::Rtree { .. } => "RTREE",
        }
    }
}

/// An index definition, as read from `_index`.
#[derive(Debug, Clone, PartialEq)]
pub struct IndexDef {
    /// Index id within its space (0 is the primary key).
    pub id: u32,
    /// Index name.
    pub name: String,
    /// TREE or HASH.
    pub kind: IndexKind,
    /// Whether keys are unique.
    pub unique: bool,
    /// Key parts (of a functional index: of the key its function returns).
    pub parts: Vec<Part>,
    /// A functional index's function.
    pub func: Option<FuncRef>,
}

impl IndexDef {
    /// The parts that index places in a tuple (none for a functional index,
    /// whose parts are of the key its function returns).
    #[must_use]
    pub fn tuple_parts(&self) -> &[Part] {
        if self.func.is_some() {
            &[]
        } else {
            &self.parts
        }
    }
}

/// Select iterator types (IPROTO_ITERATOR values).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IteratorType {
    /// key == x, ascending.
    Eq,
    /// key == x, descending.
    Req,
    /// Everything.
    All,
    /// key < x, descending.
    Lt,
    /// key <= x, descending.
    Le,
    /// key >= x, ascending.
    Ge,
    /// key > x, ascending.
    Gt,
    /// Bitset iterators (not supported by TREE/HASH).
    BitsAllSet,
    /// Bitset.
    BitsAnySet,
    /// Bitset.
    BitsAllNotSet,
    /// R-tree.
    Overlaps,
    /// R-tree.
    Neighbor,
}

impl IteratorType {
    /// Decodes an IPROTO iterator code.
    pub fn from_code(code: u64) -> BoxResult<Self> {
        Ok(match code {
            0 => Self::Eq,
            1 => Self::Req,
            2 => Self::All,
            3 => Self::Lt,
            4 => Self::Le,
            5 => Self::Ge,
            6 => Self::Gt,
            7 => Self::BitsAllSet,
            8 => Self::BitsAnySet,
            9 => Self::BitsAllNotSet,
            10 => Self::Overlaps,
            11 => Self::Neighbor,
            _ => return Err(BoxError::illegal_params("Invalid iterator type")),
        })
    }
}

enum Storage {
    Tree(BTreeMap<Key, Tuple>),
    /// A TREE over one unsigned field (the commonest primary key), keyed by the
    /// integer itself: an entry is 24 bytes instead of 72 and a comparison is one
    /// instruction, so a lookup reads a third of the memory.
    Ints(BTreeMap<u64, Tuple>),
    /// A HASH index laid out as 2.6 lays it out (scans meet tuples in 2.6's order).
    Light(LightStore),
    /// A HASH index under a keyed hash, for keys clients choose freely
    /// (`_idempotency`'s tokens): see [`HashStore`].
    Hash(HashStore),
    /// A BITSET index.
    Bitset(BitsetStore),
    /// An RTREE index.
    Rtree(RtreeStore),
}

/// A HASH index's entries in 2.6's table layout, under 2.6's key hash.
#[derive(Default)]
struct LightStore {
    table: LightTable<Tuple>,
}

impl LightStore {
    fn get(&self, parts: &[Part], key: &[KeyPart]) -> Option<&Tuple> {
        let at = self.table.find(key_hash(parts, key), |t| holds_key(parts, t, key))?;
        self.table.get(at)
    }

    fn get_mut(&mut self, parts: &[Part], key: &[KeyPart]) -> Option<&mut Tuple> {
        let at = self.table.find(key_hash(parts, key), |t| holds_key(parts, t, key))?;
        self.table.get_mut(at)
    }

    fn put(&mut self, parts: &[Part], key: &[KeyPart], tuple: Tuple) -> Option<Tuple> {
        self.table.put(key_hash(parts, key), |t| holds_key(parts, t, key), tuple)
    }

    fn remove(&mut self, parts: &[Part], key: &[KeyPart]) -> Option<Tuple> {
        self.table.remove(key_hash(parts, key), |t| holds_key(parts, t, key))
    }

    fn remove_exact(&mut self, parts: &[Part], key: &[KeyPart], tuple: &Tuple) -> bool {
        self.table.remove(key_hash(parts, key), |t| Rc::ptr_eq(t, tuple)).is_some()
    }

    /// The entries after the one under `key` (none if it is not there), as 2.6's GT.
    fn after<'a>(&'a self, parts: &[Part], key: &[KeyPart]) -> Box<dyn Iterator<Item = &'a Tuple> + 'a> {
        match self.table.find(key_hash(parts, key), |t| holds_key(parts, t, key)) {
            Some(at) => Box::new(self.table.iter_from(at + 1)),
            None => Box::new(std::iter::empty()),
        }
    }
}

/// A key as an [`Storage::Ints`] tree sees it.
enum IntKey {
    /// No parts: every entry.
    Empty,
    /// nil (a non-exact search key): sorts before every number.
    Nil,
    /// An unsigned integer.
    At(u64),
    /// Anything else: no entry holds it, and validation lets none through; handled
    /// (slowly) for completeness.
    Other,
}

fn int_key(key: &[KeyPart]) -> IntKey {
    match key {
        [] => IntKey::Empty,
        [KeyPart::Nil] => IntKey::Nil,
        [KeyPart::Uint(u)] => IntKey::At(*u),
        _ => IntKey::Other,
    }
}

/// The general form of an [`Storage::Ints`] entry's key.
fn general_key(k: u64) -> Key {
    std::iter::once(KeyPart::Uint(k)).collect()
}

/// A HASH index's entries: each slot holds the key's hash and the tuple, not the key.
///
/// A slot is 24 bytes instead of a `HashMap<Key, Tuple>`'s 72, and growing the
/// table moves slots without hashing anything again (the hash is kept). A key is
/// compared only when the full 64-bit hashes agree, by reading it from the tuple.
/// The hasher is std's keyed SipHash, as before: tokens and keys come from clients.
/// The slots are [`HashSlots`]: where a key's slot is follows from its hash alone,
/// so [`Self::warm`] prefetches it without waiting.
struct HashStore {
    table: HashSlots<Tuple>,
    hasher: std::collections::hash_map::RandomState,
    /// Tells this store's hashes from another's (see [`Prehashed`]).
    id: NonZeroU64,
}

/// A key's hash in one HASH index, worked out by a lookup and reused by the
/// insert that follows it (a tokened write looks its token up, then stores it).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Prehashed {
    /// Non-zero: an `Option<Prehashed>` takes no more room than a `Prehashed`.
    store: NonZeroU64,
    hash: u64,
}

/// Entries ahead whose slots a HASH index build prefetches ([`Index::extend_entries`]).
const BUILD_AHEAD: usize = 8;

impl HashStore {
    fn new() -> Self {
        static NEXT_ID: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);
        let id = NEXT_ID.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        Self {
            table: HashSlots::new(),
            hasher: std::collections::hash_map::RandomState::new(),
            id: NonZeroU64::new(id).unwrap_or(NonZeroU64::MAX),
        }
    }

    /// The hash of `key`: `pre`'s if it was worked out by this store.
    fn hash_reusing(&self, key: &[KeyPart], pre: Option<Prehashed>) -> u64 {
        match pre {
            Some(p) if p.store == self.id => p.hash,
            _ => self.hash(key),
        }
    }

    fn hash(&self, key: &[KeyPart]) -> u64 {
        let mut gather = Gather { inner: self.hasher.build_hasher(), buf: [0; GATHER_BYTES], len: 0 };
        key.hash(&mut gather);
        gather.finish()
    }

    fn get(&self, parts: &[Part], key: &[KeyPart]) -> Option<&Tuple> {
        self.get_hashed(parts, key, self.hash(key))
    }

    fn get_hashed(&self, parts: &[Part], key: &[KeyPart], hash: u64) -> Option<&Tuple> {
        self.table.find(hash, |t| holds_key(parts, t, key))
    }

    fn get_mut(&mut self, parts: &[Part], key: &[KeyPart]) -> Option<&mut Tuple> {
        let hash = self.hash(key);
        self.table.find_mut(hash, |t| holds_key(parts, t, key))
    }

    /// Stores `tuple` under `key` and returns the tuple it replaced, in one probe.
    fn put(&mut self, parts: &[Part], key: &[KeyPart], tuple: Tuple) -> Option<Tuple> {
        self.put_hashed(parts, key, self.hash(key), tuple)
    }

    fn put_hashed(&mut self, parts: &[Part], key: &[KeyPart], hash: u64, tuple: Tuple) -> Option<Tuple> {
        self.table.insert(hash, |t| holds_key(parts, t, key), tuple)
    }

    /// Prefetches the slots a key of hash `hash` is looked up in, without waiting:
    /// the cache lines are on their way when a lookup or removal needs them.
    fn warm(&self, hash: u64) {
        self.table.prefetch(hash);
    }

    /// Removes the slot holding exactly `tuple` under `key`'s hash (`pre`'s if this
    /// store worked it out): no key is read back from a tuple, as the one being
    /// removed is known.
    fn remove_exact(&mut self, key: &[KeyPart], pre: Option<Prehashed>, tuple: &Tuple) -> bool {
        let hash = self.hash_reusing(key, pre);
        self.remove_exact_by_hash(hash, tuple)
    }

    /// Removes the slot holding exactly `tuple` under `hash`.
    fn remove_exact_by_hash(&mut self, hash: u64, tuple: &Tuple) -> bool {
        self.table.remove(hash, |t| Rc::ptr_eq(t, tuple)).is_some()
    }

    fn remove(&mut self, parts: &[Part], key: &[KeyPart]) -> Option<Tuple> {
        let hash = self.hash(key);
        self.table.remove(hash, |t| holds_key(parts, t, key))
    }
}

const GATHER_BYTES: usize = 64;

/// Collects what a key's `Hash` feeds in (a few bytes per field of each part) and
/// hands it to the keyed hasher in one `write`: SipHash costs per call, so a
/// two-part key fed field by field cost about three times as much. SipHash is a
/// stream over the bytes, so where the writes split does not change the hash.
struct Gather<H> {
    inner: H,
    buf: [u8; GATHER_BYTES],
    len: usize,
}

impl<H: Hasher + Clone> Hasher for Gather<H> {
    fn write(&mut self, bytes: &[u8]) {
        if self.len + bytes.len() > GATHER_BYTES {
            self.inner.write(&self.buf[..self.len]);
            self.len = 0;
            if bytes.len() > GATHER_BYTES {
                self.inner.write(bytes);
                return;
            }
        }
        self.buf[self.len..self.len + bytes.len()].copy_from_slice(bytes);
        self.len += bytes.len();
    }

    fn finish(&self) -> u64 {
        let mut inner = self.inner.clone();
        inner.write(&self.buf[..self.len]);
        inner.finish()
    }
}

/// Whether `tuple`'s key under `parts` equals `key`.
fn holds_key(parts: &[Part], tuple: &Tuple, key: &[KeyPart]) -> bool {
    split(tuple).and_then(|f| extract_key(parts, &f)).is_ok_and(|k| k[..] == *key)
}

thread_local! {
    /// Changes to any index's entries made on this thread so far (wrapping). A Lua
    /// `pairs()` iterator reads tuples ahead in chunks and reads this counter
    /// (through its address, see [`entry_changes_address`]) at each step: when it
    /// moved, what was read ahead may be stale, and the iterator reads on from the
    /// last tuple it gave, as 2.6's TREE iterator repositions after a change.
    static ENTRY_CHANGES: std::cell::Cell<u32> = const { std::cell::Cell::new(0) };
}

/// Counts a change to some index's entries (see `ENTRY_CHANGES`).
fn note_entry_change() {
    ENTRY_CHANGES.with(|c| c.set(c.get().wrapping_add(1)));
}

/// Where this thread's count of index entry changes lives, for Lua to read
/// through the FFI as a `uint32_t` (valid while the thread runs).
#[must_use]
pub fn entry_changes_address() -> usize {
    ENTRY_CHANGES.with(|c| c.as_ptr() as usize)
}

/// A live index: definition plus entries.
pub struct Index {
    /// The definition.
    pub def: IndexDef,
    /// Parts that make each entry's key (the definition's, plus the primary key's if not unique).
    cmp_parts: Vec<Part>,
    /// Whether a part runs over an array's elements (an entry per element).
    multikey: bool,
    storage: Storage,
}

impl std::fmt::Debug for Index {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Index").field("def", &self.def).field("len", &self.len()).finish()
    }
}

impl Index {
    /// An empty index; `pk_parts` are the primary key's parts (used by non-unique indexes).
    #[must_use]
    pub fn new(def: IndexDef, pk_parts: &[Part]) -> Self {
        let mut cmp_parts = def.parts.clone();
        // Non-unique indexes, and unique ones that may hold several nils, order
        // equal keys by primary key so every entry is distinct.
        if !def.unique || def.parts.iter().any(|p| p.nullable) {
            cmp_parts.extend(pk_parts.iter().cloned());
        }
        let storage = match def.kind {
            IndexKind::Tree if matches!(&cmp_parts[..], [p] if p.ty == FieldType::Unsigned && !p.nullable) => {
                Storage::Ints(BTreeMap::new())
            }
            IndexKind::Tree => Storage::Tree(BTreeMap::new()),
            IndexKind::Hash => Storage::Light(LightStore::default()),
            IndexKind::Bitset => Storage::Bitset(BitsetStore::default()),
            IndexKind::Rtree { dimension, manhattan } => Storage::Rtree(RtreeStore::new(dimension, manhattan)),
        };
        let multikey = def.func.is_some() || def.parts.iter().any(|p| multikey::split(p).is_some());
        // A new index may take an old one's place (an alter, a truncation).
        note_entry_change();
        Self { def, cmp_parts, multikey, storage }
    }

    /// What 2.6's HASH index does to the tuple under `key` when an INSERT of
    /// another with the same key fails: takes it out and puts it back, which may
    /// move it in the scan order (other indexes: nothing).
    pub fn reinsert_duplicate(&mut self, key: &Key) {
        note_entry_change();
        if let Storage::Light(m) = &mut self.storage {
            let parts = &self.cmp_parts;
            m.table.reinsert(key_hash(parts, key), |t| holds_key(parts, t, key));
        }
    }

    /// [`Self::new`] for an index of space `space_id`: a HASH index of
    /// `_idempotency` (whose keys are tokens clients choose) is under a keyed
    /// hash; other HASH indexes are laid out as 2.6 lays them out.
    #[must_use]
    pub fn for_space(space_id: u32, def: IndexDef, pk_parts: &[Part]) -> Self {
        let keyed = space_id == crate::idempotency::SPACE_ID && def.kind == IndexKind::Hash;
        let mut index = Self::new(def, pk_parts);
        if keyed {
            index.storage = Storage::Hash(HashStore::new());
        }
        index
    }

    /// Whether a tuple may have several entries (a `[*]` in a part's path, or a
    /// function that computes the keys).
    #[must_use]
    pub fn is_multikey(&self) -> bool {
        self.multikey
    }

    /// Whether this is a functional index whose function is not known yet (while
    /// a directory loads): it has no entries until it is built.
    #[must_use]
    pub fn is_pending(&self) -> bool {
        self.def.func.as_ref().is_some_and(|f| f.resolved.is_none())
    }

    /// The entry keys of a validated tuple of `space` in a multikey or functional
    /// index (none, one, or one per element or returned key), sorted, each once.
    ///
    /// # Errors
    /// A functional index's function fails or returns what is not a key.
    pub fn entry_keys(&self, tuple: &Tuple, fields: &TupleFields<'_>, space: &SpaceDef) -> BoxResult<Vec<Key>> {
        let Some(func) = &self.def.func else { return multikey::keys(&self.cmp_parts, fields) };
        let target = func_index::Target { index: &self.def.name, space };
        let Some(resolved) = &func.resolved else { return Err(target.func_error("can't evaluate function")) };
        let pk_parts = &self.cmp_parts[self.def.parts.len()..];
        let mut keys = Vec::new();
        for returned in func_index::keys(resolved, &self.def.parts, tuple, target)? {
            let mut key = Key::with_capacity(self.cmp_parts.len());
            for part in returned {
                key.push(part);
            }
            for part in pk_parts {
                key.push(key_part(part, fields)?);
            }
            keys.push(key);
        }
        keys.sort();
        keys.dedup();
        Ok(keys)
    }

    /// The user-visible key (definition parts only) within an entry key.
    #[must_use]
    pub fn user_part(&self, entry: &Key) -> Key {
        let mut key = Key::with_capacity(self.def.parts.len());
        for part in entry.iter().take(self.def.parts.len()) {
            key.push(part.clone());
        }
        key
    }

    /// Turns an [`Storage::Ints`] tree into a general one (before storing a key it
    /// cannot hold; validation keeps that from happening).
    fn generalize(&mut self) -> &mut BTreeMap<Key, Tuple> {
        if let Storage::Ints(m) = &mut self.storage {
            let general = std::mem::take(m).into_iter().map(|(k, t)| (general_key(k), t)).collect();
            self.storage = Storage::Tree(general);
        }
        match &mut self.storage {
            Storage::Tree(m) => m,
            _ => unreachable!("only a tree is generalized"),
        }
    }

    /// Number of entries.
    #[must_use]
    pub fn len(&self) -> usize {
        match &self.storage {
            Storage::Tree(m) => m.len(),
            Storage::Ints(m) => m.len(),
            Storage::Light(m) => m.table.len(),
            Storage::Hash(m) => m.table.len(),
            Storage::Bitset(m) => m.len(),
            Storage::Rtree(m) => m.len(),
        }
    }

    /// Whether the index is empty.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The entry key of a validated tuple.
    pub fn entry_key(&self, fields: &TupleFields<'_>) -> BoxResult<Key> {
        self.key_of(&self.cmp_parts, fields)
    }

    /// The user-visible key (definition parts only) of a validated tuple.
    pub fn user_key(&self, fields: &TupleFields<'_>) -> BoxResult<Key> {
        self.key_of(&self.def.parts, fields)
    }

    /// A tuple's key for `parts` (this index's own, or the definition's): an
    /// RTREE part is its field's bytes, checked to be a point or a box.
    fn key_of(&self, parts: &[Part], fields: &TupleFields<'_>) -> BoxResult<Key> {
        let IndexKind::Rtree { dimension, .. } = self.def.kind else { return extract_key(parts, fields) };
        let Some((first, rest)) = parts.split_first() else { return Ok(Key::with_capacity(0)) };
        let raw = part_value(first, fields)?.unwrap_or(&[0xc0]);
        let mut key = Key::with_capacity(parts.len());
        key.push(super::rtree::field_key_part(raw, first.field_no, dimension)?);
        for part in rest {
            key.push(key_part(part, fields)?);
        }
        Ok(key)
    }

    /// The tuple stored under a full key of a unique index, if any.
    #[must_use]
    pub fn get(&self, key: &Key) -> Option<&Tuple> {
        match &self.storage {
            Storage::Tree(m) if key.len() < self.cmp_parts.len() => {
                let mut upper = key.clone();
                upper.push(KeyPart::Max);
                m.range(key.clone()..=upper).next().map(|(_, t)| t)
            }
            Storage::Tree(m) => m.get(key),
            Storage::Ints(m) => match int_key(key) {
                IntKey::Empty => m.values().next(),
                IntKey::Nil => None,
                IntKey::At(u) => m.get(&u),
                IntKey::Other => m.iter().find(|(k, _)| general_key(**k) == *key).map(|(_, t)| t),
            },
            Storage::Light(m) => m.get(&self.cmp_parts, key),
            Storage::Hash(m) => m.get(&self.cmp_parts, key),
            Storage::Bitset(m) => m.get(key),
            Storage::Rtree(m) => m.get(key),
        }
    }

    /// The slot holding the tuple under a full key of a unique index, if any.
    pub fn get_mut(&mut self, key: &Key) -> Option<&mut Tuple> {
        note_entry_change();
        let partial = key.len() < self.cmp_parts.len();
        match &mut self.storage {
            Storage::Tree(m) => {
                if partial {
                    let mut upper = key.clone();
                    upper.push(KeyPart::Max);
                    m.range_mut(key.clone()..=upper).next().map(|(_, t)| t)
                } else {
                    m.get_mut(key)
                }
            }
            Storage::Ints(m) => match int_key(key) {
                IntKey::Empty => m.values_mut().next(),
                IntKey::Nil => None,
                IntKey::At(u) => m.get_mut(&u),
                IntKey::Other => m.iter_mut().find(|(k, _)| general_key(**k) == *key).map(|(_, t)| t),
            },
            Storage::Light(m) => m.get_mut(&self.cmp_parts, key),
            Storage::Hash(m) => m.get_mut(&self.cmp_parts, key),
            Storage::Bitset(m) => m.get_mut(key),
            Storage::Rtree(m) => m.get_mut(key),
        }
    }

    /// The tuple that a new tuple with user key `key` would collide with, if any.
    #[must_use]
    pub fn conflict(&self, key: &Key) -> Option<&Tuple> {
        if !self.def.unique || key.iter().any(|k| matches!(k, KeyPart::Nil)) {
            return None;
        }
        self.get(key)
    }

    /// Adds an entry (the caller has checked uniqueness).
    pub fn insert(&mut self, key: Key, tuple: Tuple) {
        self.put(key, tuple);
    }

    /// [`Self::get`] for a full key of a HASH index, also returning the key's hash
    /// for a [`Self::put_prehashed`] of the same key (`None` for other indexes).
    #[must_use]
    pub fn get_prehashing(&self, key: &Key) -> (Option<&Tuple>, Option<Prehashed>) {
        match &self.storage {
            Storage::Hash(m) => {
                let hash = m.hash(key);
                (m.get_hashed(&self.cmp_parts, key, hash), Some(Prehashed { store: m.id, hash }))
            }
            _ => (self.get(key), None),
        }
    }

    /// [`Self::put`], with the hash a lookup of the same key worked out (used only if
    /// it came from this index's current entries: a rebuilt index hashes anew).
    /// Also returns the hash used, for a later [`Self::remove_exact`] of the entry.
    pub fn put_prehashed(
        &mut self,
        key: &Key,
        pre: Option<Prehashed>,
        tuple: Tuple,
    ) -> (Option<Tuple>, Option<Prehashed>) {
        match &mut self.storage {
            // A HASH slot keeps the hash and the tuple, not the key.
            Storage::Hash(m) => {
                note_entry_change();
                let hash = m.hash_reusing(key, pre);
                (m.put_hashed(&self.cmp_parts, key, hash, tuple), Some(Prehashed { store: m.id, hash }))
            }
            _ => (self.put(key.clone(), tuple), None),
        }
    }

    /// `key`'s hash in a HASH index (`None` for other indexes), for [`Self::warm`].
    #[must_use]
    pub fn prehash(&self, key: &Key) -> Option<Prehashed> {
        match &self.storage {
            Storage::Hash(m) => Some(Prehashed { store: m.id, hash: m.hash(key) }),
            _ => None,
        }
    }

    /// Starts reading where the entry `pre` is the hash of is, or would go (a HASH
    /// index only; `pre` from [`Self::prehash`] or [`Self::put_prehashed`]), so that
    /// its lookup or removal soon after does not wait for memory: a million
    /// remembered tokens are far larger than the cache, and several entries warmed
    /// in a row are fetched at once where lookups one by one wait for each in turn.
    pub fn warm(&self, pre: Prehashed) {
        if let Storage::Hash(m) = &self.storage {
            if pre.store == m.id {
                m.warm(pre.hash);
            }
        }
    }

    /// Stores `tuple` under `key` and returns the tuple it replaced.
    pub fn put(&mut self, key: Key, tuple: Tuple) -> Option<Tuple> {
        note_entry_change();
        match &mut self.storage {
            Storage::Tree(m) => m.insert(key, tuple),
            Storage::Ints(m) => match int_key(&key) {
                IntKey::At(u) => m.insert(u, tuple),
                _ => self.generalize().insert(key, tuple),
            },
            Storage::Light(m) => m.put(&self.cmp_parts, &key, tuple),
            Storage::Hash(m) => m.put(&self.cmp_parts, &key, tuple),
            Storage::Bitset(m) => m.put(key, tuple),
            Storage::Rtree(m) => m.put(key, tuple),
        }
    }

    /// Adds many entries at once (recovery): an empty TREE is built from them sorted,
    /// leaf by leaf, so its nodes are full (entries inserted one by one in key order
    /// leave each node about half full) and no entry costs a descent; a HASH makes
    /// room for all of them first. Of entries with equal keys the last one stays, as
    /// inserting them in order would leave it.
    pub fn extend_entries(&mut self, entries: Vec<(Key, Tuple)>) {
        note_entry_change();
        if matches!(self.storage, Storage::Ints(_)) && !entries.iter().all(|(k, _)| matches!(int_key(k), IntKey::At(_)))
        {
            self.generalize();
        }
        match &mut self.storage {
            Storage::Ints(m) => {
                let entries = entries.into_iter().map(|(k, t)| match int_key(&k) {
                    IntKey::At(u) => (u, t),
                    _ => unreachable!("checked above"),
                });
                if m.is_empty() {
                    *m = entries.collect();
                } else {
                    m.extend(entries);
                }
            }
            Storage::Light(m) => {
                // One by one in the order given (the primary key's), as 2.6 builds it.
                for (key, tuple) in entries {
                    m.put(&self.cmp_parts, &key, tuple);
                }
            }
            Storage::Bitset(m) => {
                for (key, tuple) in entries {
                    m.put(key, tuple);
                }
            }
            Storage::Rtree(m) => {
                for (key, tuple) in entries {
                    m.put(key, tuple);
                }
            }
            Storage::Tree(m) if m.is_empty() => *m = entries.into_iter().collect(),
            Storage::Tree(m) => m.extend(entries),
            Storage::Hash(m) => {
                // Hashed first, so that each entry's slot is asked for a few entries
                // before it is filled: a build of a large table misses the cache on
                // every slot, and this way the misses overlap.
                m.table.reserve(entries.len());
                let hashes: Vec<u64> = entries.iter().map(|(key, _)| m.hash(key)).collect();
                for (i, (key, tuple)) in entries.into_iter().enumerate() {
                    if let Some(&ahead) = hashes.get(i + BUILD_AHEAD) {
                        m.warm(ahead);
                    }
                    m.put_hashed(&self.cmp_parts, &key, hashes[i], tuple);
                }
            }
        }
    }

    /// Stores `tuple` under an existing entry's key (a replace that keeps the key).
    pub fn swap_tuple(&mut self, key: &Key, tuple: Tuple) {
        note_entry_change();
        if let (Storage::Ints(m), IntKey::At(u)) = (&mut self.storage, int_key(key)) {
            m.insert(u, tuple);
            return;
        }
        if matches!(self.storage, Storage::Ints(_)) {
            self.generalize();
        }
        match &mut self.storage {
            Storage::Tree(m) => match m.get_mut(key) {
                Some(slot) => *slot = tuple,
                None => {
                    m.insert(key.clone(), tuple);
                }
            },
            Storage::Ints(_) => unreachable!("generalized above"),
            Storage::Light(m) => {
                m.put(&self.cmp_parts, key, tuple);
            }
            Storage::Bitset(m) => {
                m.put(key.clone(), tuple);
            }
            // As 2.6: the replaced entry goes to the end.
            Storage::Rtree(m) => {
                m.put(key.clone(), tuple);
            }
            Storage::Hash(m) => {
                m.put(&self.cmp_parts, key, tuple);
            }
        }
    }

    /// Removes the entry under `key` if it holds exactly `tuple` (the same
    /// allocation); returns whether it did. A HASH index finds it without
    /// comparing keys.
    pub fn remove_exact(&mut self, key: &Key, tuple: &Tuple) -> bool {
        self.remove_exact_prehashed(key, None, tuple)
    }

    /// [`Self::remove_exact`] with the hash [`Self::put_prehashed`] returned for the entry.
    pub fn remove_exact_prehashed(&mut self, key: &Key, pre: Option<Prehashed>, tuple: &Tuple) -> bool {
        note_entry_change();
        match &mut self.storage {
            Storage::Hash(m) => return m.remove_exact(key, pre, tuple),
            Storage::Light(m) => return m.remove_exact(&self.cmp_parts, key, tuple),
            // One descent: the entry is taken out, and put back in the rare case it
            // holds another tuple.
            Storage::Tree(m) if key.len() == self.cmp_parts.len() => {
                return match m.remove_entry(key) {
                    Some((_, held)) if Rc::ptr_eq(&held, tuple) => true,
                    Some((key, held)) => {
                        m.insert(key, held);
                        false
                    }
                    None => false,
                };
            }
            Storage::Ints(m) => {
                if let IntKey::At(u) = int_key(key) {
                    return match m.remove(&u) {
                        Some(held) if Rc::ptr_eq(&held, tuple) => true,
                        Some(held) => {
                            m.insert(u, held);
                            false
                        }
                        None => false,
                    };
                }
            }
            _ => {}
        }
        let holds = self.get(key).is_some_and(|t| Rc::ptr_eq(t, tuple));
        if holds {
            self.remove(key);
        }
        holds
    }

    /// Removes the entry holding exactly `tuple`, found by the hash `pre` alone
    /// (no key is built): `None` when `pre` is not this HASH index's.
    pub fn remove_exact_hashed(&mut self, pre: Prehashed, tuple: &Tuple) -> Option<bool> {
        note_entry_change();
        match &mut self.storage {
            Storage::Hash(m) if m.id == pre.store => Some(m.remove_exact_by_hash(pre.hash, tuple)),
            _ => None,
        }
    }

    /// Removes an entry.
    pub fn remove(&mut self, key: &Key) -> Option<Tuple> {
        note_entry_change();
        match &mut self.storage {
            Storage::Tree(m) => m.remove(key),
            Storage::Ints(m) => match int_key(key) {
                IntKey::At(u) => m.remove(&u),
                IntKey::Empty | IntKey::Nil => None,
                IntKey::Other => {
                    let found = m.keys().find(|k| general_key(**k) == *key).copied()?;
                    m.remove(&found)
                }
            },
            Storage::Light(m) => m.remove(&self.cmp_parts, key),
            Storage::Hash(m) => m.remove(&self.cmp_parts, key),
            Storage::Bitset(m) => m.remove(key),
            Storage::Rtree(m) => m.remove(key),
        }
    }

    /// Removes every entry.
    pub fn clear(&mut self) {
        note_entry_change();
        match &mut self.storage {
            Storage::Tree(m) => m.clear(),
            Storage::Ints(m) => m.clear(),
            Storage::Light(m) => m.table.clear(),
            Storage::Hash(m) => m.table.clear(),
            Storage::Bitset(m) => m.clear(),
            Storage::Rtree(m) => m.clear(),
        }
    }

    /// Every tuple, in index order.
    /// `index:bsize()`: an estimate of the memory this index's own structure
    /// takes (its slots, not the tuples): a B-tree's entries with the room its
    /// nodes leave (a quarter), a hash table's slots and control bytes.
    #[must_use]
    pub fn bsize(&self) -> usize {
        let with_room = |entries: usize, entry: usize| entries * entry * 4 / 3;
        match &self.storage {
            Storage::Tree(m) => with_room(m.len(), std::mem::size_of::<(Key, Tuple)>()),
            Storage::Ints(m) => with_room(m.len(), std::mem::size_of::<(u64, Tuple)>()),
            Storage::Light(m) => m.table.slot_count() * 24,
            Storage::Bitset(m) => m.id_count() * 16 + m.len() * std::mem::size_of::<(Key, u32)>(),
            Storage::Rtree(m) => m.len() * 64,
            Storage::Hash(m) => m.table.slot_count() * std::mem::size_of::<Option<(u64, Tuple)>>(),
        }
    }

    pub fn iter(&self) -> Box<dyn Iterator<Item = &Tuple> + '_> {
        match &self.storage {
            Storage::Tree(m) => Box::new(m.values()),
            Storage::Ints(m) => Box::new(m.values()),
            Storage::Light(m) => Box::new(m.table.iter()),
            Storage::Hash(m) => Box::new(m.table.iter().map(|(_, t)| t)),
            Storage::Bitset(m) => Box::new(m.iter()),
            Storage::Rtree(m) => Box::new(m.iter()),
        }
    }

    /// Decodes a search key (msgpack array) against this index's parts.
    pub fn parse_key(&self, key: &[u8]) -> BoxResult<Key> {
        if let IndexKind::Rtree { dimension, .. } = self.def.kind {
            return super::rtree::parse_key(key, dimension);
        }
        let mut r = Reader::new(key);
        let bad = |_| BoxError::invalid_msgpack("packet body");
        let n = r.read_array_len().map_err(bad)? as usize;
        if n > self.def.parts.len() {
            return Err(BoxError::new(
                code::KEY_PART_COUNT,
                format!("Invalid key part count (expected [0..{}], got {n})", self.def.parts.len()),
            ));
        }
        let mut out = Key::with_capacity(n);
        for (i, part) in self.def.parts.iter().take(n).enumerate() {
            // A nil in a search key matches nullable parts only; 2.6 also lets
            // it through for any part of a non-exact select, comparing as nil.
            match KeyPart::read(&mut r, part.ty, part.collation, true).map_err(bad)? {
                Some(k) => out.push(k),
                None => return Err(BoxError::key_part_type(i, part.ty.name())),
            }
        }
        Ok(out)
    }

    /// Decodes a key that must name exactly one tuple (DELETE, UPDATE, get).
    pub fn parse_exact_key(&self, key: &[u8]) -> BoxResult<Key> {
        let n = Reader::new(key).read_array_len().map_err(|_| BoxError::invalid_msgpack("packet body"))? as usize;
        if self.def.unique && n != self.def.parts.len() {
            return Err(BoxError::new(
                code::EXACT_MATCH,
                format!("Invalid key part count in an exact match (expected {}, got {n})", self.def.parts.len()),
            ));
        }
        let key = self.parse_key(key)?;
        self.check_exact_key(&key)?;
        Ok(key)
    }

    /// Checks that `key` names exactly one tuple.
    pub fn check_exact_key(&self, key: &Key) -> BoxResult<()> {
        if !self.def.unique {
            return Err(BoxError::new(
                code::MORE_THAN_ONE_TUPLE,
                "Get() doesn't support partial keys and non-unique indexes",
            ));
        }
        if key.len() != self.def.parts.len() {
            return Err(BoxError::new(
                code::EXACT_MATCH,
                format!(
                    "Invalid key part count in an exact match (expected {}, got {})",
                    self.def.parts.len(),
                    key.len()
                ),
            ));
        }
        Ok(())
    }

    /// Visits tuples matching `key` under `it`, in iterator order, until `visit` returns false.
    pub fn scan(
        &self,
        it: IteratorType,
        key: &Key,
        space_name: &str,
        visit: impl FnMut(&Tuple) -> bool,
    ) -> BoxResult<()> {
        self.scan_after(it, key, space_name, None, visit)
    }

    /// [`Self::scan`] from after the entry under `after` (an entry key of a tuple
    /// the same scan met before), as 2.6's TREE iterator goes on after a change:
    /// TREE indexes only (others are refused).
    pub fn scan_after(
        &self,
        it: IteratorType,
        key: &Key,
        space_name: &str,
        after: Option<&Key>,
        mut visit: impl FnMut(&Tuple) -> bool,
    ) -> BoxResult<()> {
        if after.is_some() && !matches!(self.storage, Storage::Tree(_) | Storage::Ints(_)) {
            return Err(BoxError::illegal_params("Only a TREE index's scan goes on after an entry"));
        }
        match &self.storage {
            // A full key of a unique index names at most one entry: one descent, no bounds to build.
            Storage::Tree(m)
                if self.def.unique
                    && key.len() == self.cmp_parts.len()
                    && matches!(it, IteratorType::Eq | IteratorType::Req) =>
            {
                if let (Some(t), None) = (m.get(key), after) {
                    visit(t);
                }
            }
            Storage::Tree(m) => self.scan_tree(m, it, key, space_name, after, visit)?,
            Storage::Ints(m) => {
                use std::ops::Bound::{Excluded, Included, Unbounded};
                use IteratorType::{All, Eq, Ge, Gt, Le, Lt, Req};
                // (lower, upper, in reverse); None when nothing can match.
                let range = match (int_key(key), it) {
                    (IntKey::Empty, Eq | All | Ge | Gt) | (IntKey::Nil, All | Ge | Gt) => {
                        Some((Unbounded, Unbounded, false))
                    }
                    (IntKey::Empty, Req | Le | Lt) => Some((Unbounded, Unbounded, true)),
                    (IntKey::Nil, Eq | Req | Le | Lt) => None,
                    (IntKey::At(u), Eq | Req) => {
                        // One entry at most: one descent (a range finds both ends).
                        if let (Some(t), None) = (m.get(&u), after) {
                            visit(t);
                        }
                        None
                    }
                    (IntKey::At(u), All | Ge) => Some((Included(u), Unbounded, false)),
                    (IntKey::At(u), Gt) => Some((Excluded(u), Unbounded, false)),
                    (IntKey::At(u), Le) => Some((Unbounded, Included(u), true)),
                    (IntKey::At(u), Lt) => Some((Unbounded, Excluded(u), true)),
                    (IntKey::Other, _) => {
                        let general: BTreeMap<Key, Tuple> =
                            m.iter().map(|(k, t)| (general_key(*k), t.clone())).collect();
                        self.scan_tree(&general, it, key, space_name, after, visit)?;
                        return Ok(());
                    }
                    _ => return Err(self.unsupported_iterator(space_name)),
                };
                let after = match after.map(|a| int_key(a)) {
                    None => None,
                    Some(IntKey::At(u)) => Some(u),
                    // No entry is under such a key: nothing follows it.
                    Some(_) => return Ok(()),
                };
                if let Some((lo, hi, rev)) = range.and_then(|(lo, hi, rev)| resumed(lo, hi, rev, after.as_ref())) {
                    visit_each(m.range((lo, hi)).map(|(_, t)| t), rev, visit);
                }
            }
            Storage::Rtree(m) => {
                if key.is_empty() && it != IteratorType::All {
                    let dims = match self.def.kind {
                        IndexKind::Rtree { dimension, .. } => usize::from(dimension) * 2,
                        _ => 0,
                    };
                    return Err(BoxError::new(
                        code::KEY_PART_COUNT,
                        format!("Invalid key part count (expected [0..{dims}], got 0)"),
                    ));
                }
                let search = match it {
                    IteratorType::All => RtreeSearch::All,
                    IteratorType::Eq => RtreeSearch::Equals,
                    IteratorType::Gt => RtreeSearch::StrictlyContains,
                    IteratorType::Ge => RtreeSearch::Contains,
                    IteratorType::Lt => RtreeSearch::StrictlyWithin,
                    IteratorType::Le => RtreeSearch::Within,
                    IteratorType::Overlaps => RtreeSearch::Overlaps,
                    IteratorType::Neighbor => RtreeSearch::Neighbor,
                    _ => return Err(self.unsupported_iterator(space_name)),
                };
                visit_each_hashed(Box::new(m.search(search, key).into_iter()), visit);
            }
            Storage::Bitset(m) => {
                if key.len() != self.def.parts.len() && !(key.is_empty() && it == IteratorType::All) {
                    return Err(self.partial_key(key));
                }
                let search = match it {
                    IteratorType::All => None,
                    IteratorType::Eq => Some(BitsetSearch::Equals),
                    IteratorType::BitsAllSet => Some(BitsetSearch::AllSet),
                    IteratorType::BitsAnySet => Some(BitsetSearch::AnySet),
                    IteratorType::BitsAllNotSet => Some(BitsetSearch::AllNotSet),
                    _ => return Err(self.unsupported_iterator(space_name)),
                };
                match (search, key.first()) {
                    (Some(search), Some(part)) => {
                        let bits = bits_of(part);
                        visit_each_hashed(Box::new(m.search(search, &bits)), visit);
                    }
                    _ => visit_each_hashed(Box::new(m.iter()), visit),
                }
            }
            Storage::Light(_) | Storage::Hash(_) => {
                // As 2.6's key check, before the iterator's: a HASH key names every
                // part, except that ALL and (for compatibility) GT may have none.
                let full = key.len() == self.def.parts.len();
                let keyless = key.is_empty() && matches!(it, IteratorType::All | IteratorType::Gt);
                if !full && !keyless {
                    return Err(self.partial_key(key));
                }
                match it {
                    IteratorType::All | IteratorType::Gt if key.is_empty() => visit_each_hashed(self.iter(), visit),
                    IteratorType::Eq => {
                        if let Some(t) = self.get(key) {
                            visit(t);
                        }
                    }
                    // Hash order: everything after the key's own slot.
                    IteratorType::Gt => match &self.storage {
                        Storage::Light(m) => visit_each_hashed(m.after(&self.cmp_parts, key), visit),
                        Storage::Hash(m) => visit_each_hashed(
                            Box::new(m.table.iter_after(m.hash(key), |t| holds_key(&self.cmp_parts, t, key))),
                            visit,
                        ),
                        _ => unreachable!("a HASH index's storage"),
                    },
                    IteratorType::All => visit_each_hashed(self.iter(), visit),
                    _ => return Err(self.unsupported_iterator(space_name)),
                }
            }
        }
        Ok(())
    }

    /// [`Self::scan`] over a general tree.
    fn scan_tree(
        &self,
        m: &BTreeMap<Key, Tuple>,
        it: IteratorType,
        key: &Key,
        space_name: &str,
        after: Option<&Key>,
        visit: impl FnMut(&Tuple) -> bool,
    ) -> BoxResult<()> {
        let upper = || {
            let mut k = key.clone();
            k.push(KeyPart::Max);
            k
        };
        let unsupported = || self.unsupported_iterator(space_name);
        let (lo, hi, rev): (Bound<Key>, Bound<Key>, bool) = if key.is_empty() {
            match it {
                IteratorType::Eq | IteratorType::All | IteratorType::Ge | IteratorType::Gt => {
                    (Bound::Unbounded, Bound::Unbounded, false)
                }
                IteratorType::Req | IteratorType::Le | IteratorType::Lt => (Bound::Unbounded, Bound::Unbounded, true),
                _ => return Err(unsupported()),
            }
        } else {
            match it {
                IteratorType::Eq => (Bound::Included(key.clone()), Bound::Included(upper()), false),
                IteratorType::Req => (Bound::Included(key.clone()), Bound::Included(upper()), true),
                IteratorType::All | IteratorType::Ge => (Bound::Included(key.clone()), Bound::Unbounded, false),
                IteratorType::Gt => (Bound::Excluded(upper()), Bound::Unbounded, false),
                IteratorType::Le => (Bound::Unbounded, Bound::Included(upper()), true),
                IteratorType::Lt => (Bound::Unbounded, Bound::Excluded(key.clone()), true),
                _ => return Err(unsupported()),
            }
        };
        if let Some((lo, hi, rev)) = resumed(lo, hi, rev, after) {
            visit_each(m.range((lo, hi)).map(|(_, t)| t), rev, visit);
        }
        Ok(())
    }

    /// 2.6's error for a search key that does not name every part of an
    /// unordered index.
    fn partial_key(&self, key: &Key) -> BoxError {
        BoxError::new(
            136,
            format!(
                "{} index  does not support selects via a partial key (expected {} parts, got {}). Please Consider changing index type to TREE.",
                self.def.kind.name(),
                self.def.parts.len(),
                key.len()
            ),
        )
    }

    /// Moves the entry of `old` (under `old_key`) to `tuple` under a new key `key`,
    /// in 2.6's order: a BITSET index frees the old entry's id first (the new one
    /// takes it), a HASH index places the new entry before the old one goes.
    pub fn move_entry(&mut self, old_key: &Key, old: &Tuple, key: Key, tuple: Tuple) {
        if matches!(self.storage, Storage::Bitset(_)) {
            self.remove_exact(old_key, old);
            self.insert(key, tuple);
        } else {
            self.insert(key, tuple);
            self.remove_exact(old_key, old);
        }
    }

    fn unsupported_iterator(&self, space_name: &str) -> BoxError {
        let kind = self.def.kind.name();
        BoxError::new(
            112,
            format!(
                "Index '{}' ({kind}) of space '{space_name}' (memtx) does not support requested iterator type",
                self.def.name
            ),
        )
    }
}

/// A scan's range `lo..hi` (walked in reverse when `rev`) narrowed to what comes
/// after `after` in the walk's direction; `None` when nothing does.
fn resumed<K: Ord + Clone>(
    lo: Bound<K>,
    hi: Bound<K>,
    rev: bool,
    after: Option<&K>,
) -> Option<(Bound<K>, Bound<K>, bool)> {
    let Some(a) = after else { return Some((lo, hi, rev)) };
    // Whether bound `b` lets a key beyond `a` through, on the side the walk goes to
    // (`b` an upper bound when `upper`).
    let passes = |b: &Bound<K>, upper: bool| match b {
        Bound::Unbounded => true,
        Bound::Included(f) => {
            if upper {
                a <= f
            } else {
                f <= a
            }
        }
        Bound::Excluded(f) => {
            if upper {
                a < f
            } else {
                f < a
            }
        }
    };
    // The near bound stays when it is tighter than `a` (it is not, for a key the
    // same scan met); the far one must leave room past `a`, as BTreeMap::range
    // refuses ends that cross.
    let (near, far) = if rev { (&hi, &lo) } else { (&lo, &hi) };
    if !passes(far, !rev) {
        return None;
    }
    let near = if passes(near, rev) { Bound::Excluded(a.clone()) } else { near.clone() };
    Some(if rev { (lo, near, rev) } else { (near, hi, rev) })
}

/// Visits a HASH index's `tuples` in its order until `visit` returns false.
fn visit_each_hashed<'a>(tuples: Box<dyn Iterator<Item = &'a Tuple> + 'a>, mut visit: impl FnMut(&Tuple) -> bool) {
    for t in tuples {
        if !visit(t) {
            break;
        }
    }
}

/// Visits `tuples` in order (or in reverse) until `visit` returns false.
fn visit_each<'a>(
    tuples: impl DoubleEndedIterator<Item = &'a Tuple>,
    reverse: bool,
    mut visit: impl FnMut(&Tuple) -> bool,
) {
    if reverse {
        tuples.rev().take_while(|t| visit(t)).for_each(drop);
    } else {
        tuples.take_while(|t| visit(t)).for_each(drop);
    }
}

/// Builds the key of a validated tuple for `parts` (none of them multikey).
pub fn extract_key(parts: &[Part], fields: &TupleFields<'_>) -> BoxResult<Key> {
    let mut key = Key::with_capacity(parts.len());
    for part in parts {
        key.push(key_part(part, fields)?);
    }
    Ok(key)
}

/// One part's piece of a validated tuple's key (nil where it finds nothing).
pub(super) fn key_part(part: &Part, fields: &TupleFields<'_>) -> BoxResult<KeyPart> {
    match part_value(part, fields)? {
        Some(raw) => read_key_part(part, raw),
        None => Ok(KeyPart::Nil),
    }
}

/// The bytes `part` indexes in a validated tuple (its field, or the place its
/// path names), or `None` where the tuple has nothing there.
fn part_value<'a>(part: &Part, fields: &TupleFields<'a>) -> BoxResult<Option<&'a [u8]>> {
    match (&part.path, fields.get(part.field_no as usize)) {
        (None, Some(raw)) => Ok(Some(*raw)),
        (_, None) => Ok(None),
        (Some(_), Some(_)) => match part.value(fields)? {
            Ok(found) => Ok(found),
            Err(fault) => Err(fault.error()),
        },
    }
}

/// A value read as `part`'s piece of a key.
pub(super) fn read_key_part(part: &Part, raw: &[u8]) -> BoxResult<KeyPart> {
    KeyPart::read(&mut Reader::new(raw), part.ty, part.collation, part.nullable)
        .map_err(|_| BoxError::invalid_msgpack("tuple"))?
        .ok_or_else(|| BoxError::field_type(&(part.field_no + 1).to_string(), part.ty.name()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::tuple::split;

    fn hash_index() -> Index {
        let part = Part::whole(0, FieldType::Scalar, Collation::Binary, false);
        let def =
            IndexDef { id: 0, name: "pk".into(), kind: IndexKind::Hash, unique: true, parts: vec![part], func: None };
        let parts = def.parts.clone();
        Index::new(def, &parts)
    }

    /// A HASH index under the keyed hash (as `_idempotency`'s).
    fn keyed_hash_index() -> Index {
        let ix = hash_index();
        let parts = ix.def.parts.clone();
        Index::for_space(crate::idempotency::SPACE_ID, ix.def, &parts)
    }

    fn tree_index(ty: FieldType) -> Index {
        let part = Part::whole(0, ty, Collation::Binary, false);
        let def =
            IndexDef { id: 1, name: "sk".into(), kind: IndexKind::Tree, unique: true, parts: vec![part], func: None };
        let parts = def.parts.clone();
        Index::new(def, &parts)
    }

    #[test]
    fn remove_exact_takes_only_the_very_tuple_from_a_tree() {
        // A string key (a general TREE) and an unsigned one (keyed by the integer).
        for (ty, field) in [(FieldType::String, &[0xa1, b'k'][..]), (FieldType::Unsigned, &[0x07][..])] {
            let mut ix = tree_index(ty);
            let held = tuple(&[&[0x92][..], field, &[0x01]].concat());
            let same_key = tuple(&[&[0x92][..], field, &[0x02]].concat());
            let key = ix.entry_key(&split(&held).unwrap()).unwrap();
            ix.insert(key.clone(), held.clone());
            assert!(!ix.remove_exact(&key, &same_key), "{ty:?}: another tuple under the key");
            assert!(ix.get(&key).is_some_and(|t| Rc::ptr_eq(t, &held)), "{ty:?}: the entry is put back");
            assert_eq!(ix.len(), 1);
            assert!(ix.remove_exact(&key, &held), "{ty:?}");
            assert!(ix.get(&key).is_none() && ix.is_empty(), "{ty:?}");
            assert!(!ix.remove_exact(&key, &held), "{ty:?}: nothing left");
        }
    }

    #[test]
    fn only_idempotency_hash_indexes_are_keyed() {
        assert!(matches!(hash_index().storage, Storage::Light(_)));
        assert!(matches!(keyed_hash_index().storage, Storage::Hash(_)));
        let ix = hash_index();
        let parts = ix.def.parts.clone();
        assert!(matches!(Index::for_space(600, ix.def, &parts).storage, Storage::Light(_)));
    }

    #[test]
    fn a_failed_insert_moves_the_tuple_it_found_as_in_2_6() {
        // Keys 0, 8 and 16 share home slot 0: 8 and 16 go to the first free slots.
        let mut ix = hash_index();
        for k in [0u8, 8, 16] {
            let t = tuple(&[0x91, k]);
            let key = ix.entry_key(&split(&t).unwrap()).unwrap();
            ix.insert(key, t);
        }
        let firsts = |ix: &Index| ix.iter().map(|t| t[1]).collect::<Vec<_>>();
        let before = firsts(&ix);
        let key: Key = std::iter::once(KeyPart::Uint(0)).collect();
        ix.reinsert_duplicate(&key);
        assert_eq!(ix.len(), 3);
        assert!(ix.get(&key).is_some());
        assert_ne!(firsts(&ix), before, "0's successor took its slot, 0 went to a free one");
    }

    fn tuple(bytes: &[u8]) -> Tuple {
        bytes.into()
    }

    #[test]
    fn a_gathered_key_hashes_as_the_key_does() {
        let store = HashStore::new();
        let long = KeyPart::Str(vec![b'x'; 100].into_boxed_slice());
        for key in [
            vec![KeyPart::Uint(7)],
            vec![KeyPart::Uint(1), KeyPart::Str(b"a token of sixteen"[..].into())],
            vec![KeyPart::Neg(-1), long.clone(), KeyPart::Double(0.5), long],
        ] {
            assert_eq!(store.hash(&key), store.hasher.hash_one(&key[..]));
        }
    }

    #[test]
    fn an_exact_removal_takes_only_the_same_tuple() {
        for mut ix in [hash_index(), Index::new(IndexDef { kind: IndexKind::Tree, ..hash_index().def }, &[])] {
            let stored = tuple(&[0x92, 0x01, 0xa1, b'a']);
            let key = ix.entry_key(&split(&stored).unwrap()).unwrap();
            ix.insert(key.clone(), stored.clone());
            // Equal bytes, another allocation: a record replaced meanwhile stays.
            assert!(!ix.remove_exact(&key, &tuple(&[0x92, 0x01, 0xa1, b'a'])));
            assert_eq!(ix.len(), 1);
            assert!(ix.remove_exact(&key, &stored));
            assert_eq!(ix.len(), 0);
            assert!(!ix.remove_exact(&key, &stored), "gone already");
        }
    }

    #[test]
    fn hash_slots_find_replace_and_remove_by_key() {
        let mut ix = hash_index();
        // [1, 'a'], [2, 'b'], ['k', 'c']
        for t in [&[0x92, 0x01, 0xa1, b'a'][..], &[0x92, 0x02, 0xa1, b'b'], &[0x92, 0xa1, b'k', 0xa1, b'c']] {
            let t = tuple(t);
            let key = ix.entry_key(&split(&t).unwrap()).unwrap();
            ix.insert(key, t);
        }
        assert_eq!(ix.len(), 3);
        // 1.0 names the same entry as 1.
        let one = ix.parse_key(&[0x91, 0xcb, 0x3f, 0xf0, 0, 0, 0, 0, 0, 0]).unwrap();
        assert_eq!(ix.get(&one).map(|t| t.to_vec()), Some(vec![0x92, 0x01, 0xa1, b'a']));
        ix.swap_tuple(&one, tuple(&[0x92, 0x01, 0xa1, b'z']));
        assert_eq!(ix.len(), 3);
        assert_eq!(ix.get(&one).map(|t| t.to_vec()), Some(vec![0x92, 0x01, 0xa1, b'z']));
        let k = ix.parse_key(&[0x91, 0xa1, b'k']).unwrap();
        assert!(ix.get(&k).is_some());
        let mut after = 0;
        ix.scan(IteratorType::Gt, &k, "s", |_| {
            after += 1;
            true
        })
        .unwrap();
        assert!(after < 3);
        assert!(ix.remove(&k).is_some());
        assert!(ix.get(&k).is_none() && ix.remove(&k).is_none());
        assert_eq!(ix.iter().count(), 2);
        ix.clear();
        assert!(ix.is_empty());
    }

    #[test]
    fn a_scan_goes_on_after_each_entry_it_met() {
        use crate::protocol::msgpack::write;
        let part = |field, ty| Part::whole(field, ty, Collation::Binary, false);
        let def =
            |unique, parts| IndexDef { id: 0, name: "i".into(), kind: IndexKind::Tree, unique, parts, func: None };
        let pk = [part(0, FieldType::Unsigned)];
        // The primary key's own (integers), a scalar one, and a non-unique one on field 2.
        let mut indexes = [
            Index::new(def(true, pk.to_vec()), &pk),
            Index::new(def(true, vec![part(0, FieldType::Scalar)]), &pk),
            Index::new(def(false, vec![part(1, FieldType::Unsigned)]), &pk),
        ];
        for k in [1u64, 2, 4, 5, 8, 9, 13] {
            let mut t = Vec::new();
            write::array_len(&mut t, 2);
            write::uint(&mut t, k);
            write::uint(&mut t, k % 3);
            let t = tuple(&t);
            for index in &mut indexes {
                let key = index.entry_key(&split(&t).unwrap()).unwrap();
                index.put(key, t.clone());
            }
        }
        let key_of = |index: &Index, keys: &[u64]| {
            let mut b = Vec::new();
            write::array_len(&mut b, keys.len() as u32);
            for k in keys {
                write::uint(&mut b, *k);
            }
            index.parse_key(&b).unwrap()
        };
        for index in &indexes {
            for probe in [&[][..], &[0], &[1], &[2], &[5], &[6], &[13], &[20]] {
                let key = key_of(index, probe);
                for it in 0..7 {
                    let it = IteratorType::from_code(it).unwrap();
                    let mut met = Vec::new();
                    index
                        .scan(it, &key, "s", |t| {
                            met.push(t.clone());
                            true
                        })
                        .unwrap();
                    // After each entry met: the rest, in order; after a key between
                    // entries (one deleted meanwhile): what follows it.
                    for (i, t) in met.iter().enumerate() {
                        let after = index.entry_key(&split(t).unwrap()).unwrap();
                        let mut rest = Vec::new();
                        index
                            .scan_after(it, &key, "s", Some(&after), |t| {
                                rest.push(t.clone());
                                true
                            })
                            .unwrap();
                        assert_eq!(rest, met[i + 1..], "{probe:?} {it:?} after {i}");
                    }
                }
            }
        }
        // A primary key scan from after 3 (no entry) meets 4 first; GE from 5 after 13: nothing.
        let ints = &indexes[0];
        let mut rest = Vec::new();
        ints.scan_after(IteratorType::Ge, &key_of(ints, &[]), "s", Some(&key_of(ints, &[3])), |t| {
            rest.push(t.clone());
            false
        })
        .unwrap();
        assert_eq!(split(&rest[0]).unwrap().first().copied(), Some(&[4u8][..]));
        let mut none = 0;
        ints.scan_after(IteratorType::Le, &key_of(ints, &[5]), "s", Some(&key_of(ints, &[9])), |_| {
            none += 1;
            true
        })
        .unwrap();
        assert_eq!(none, 4, "LE 5 from after 9 (beyond its start) still starts at 5: 5, 4, 2, 1");
        // Only a TREE goes on after an entry.
        let empty = Key::with_capacity(0);
        assert!(hash_index().scan_after(IteratorType::All, &empty, "s", Some(&empty), |_| true).is_err());
    }

    #[test]
    fn an_unsigned_tree_answers_as_a_general_tree_does() {
        use crate::protocol::msgpack::write;
        let part = |ty| Part::whole(0, ty, Collation::Binary, false);
        let def = |ty| IndexDef {
            id: 0,
            name: "pk".into(),
            kind: IndexKind::Tree,
            unique: true,
            parts: vec![part(ty)],
            func: None,
        };
        let mut ints = Index::new(def(FieldType::Unsigned), &[part(FieldType::Unsigned)]);
        let mut general = Index::new(def(FieldType::Scalar), &[part(FieldType::Scalar)]);
        assert!(matches!(ints.storage, Storage::Ints(_)) && matches!(general.storage, Storage::Tree(_)));
        let row = |k: u64, v: u8| {
            let mut t = Vec::new();
            write::array_len(&mut t, 2);
            write::uint(&mut t, k);
            write::uint(&mut t, u64::from(v));
            tuple(&t)
        };
        let both = |ints: &mut Index, general: &mut Index, k: u64, v: u8| {
            let t = row(k, v);
            let key = ints.entry_key(&split(&t).unwrap()).unwrap();
            assert_eq!(ints.put(key.clone(), t.clone()).map(|t| t.to_vec()), general.put(key, t).map(|t| t.to_vec()));
        };
        let keys = [0, 1, 2, 5, 7, 8, 100, u64::MAX - 1, u64::MAX];
        for (i, k) in keys.iter().enumerate().rev() {
            both(&mut ints, &mut general, *k, i as u8);
        }
        both(&mut ints, &mut general, 5, 99);
        let key_of = |bytes: &[u8]| general.parse_key(bytes).unwrap();
        let mut probes = vec![key_of(&[0x90]), key_of(&[0x91, 0xc0])];
        for k in [0, 3, 5, 8, 9, u64::MAX] {
            let mut b = Vec::new();
            write::array_len(&mut b, 1);
            write::uint(&mut b, k);
            probes.push(key_of(&b));
        }
        for key in &probes {
            for it in 0..12 {
                let it = IteratorType::from_code(it).unwrap();
                let mut a = Vec::new();
                let ra = ints.scan(it, key, "s", |t| {
                    a.push(t.to_vec());
                    a.len() < 4
                });
                let mut b = Vec::new();
                let rb = general.scan(it, key, "s", |t| {
                    b.push(t.to_vec());
                    b.len() < 4
                });
                assert_eq!(ra.is_ok(), rb.is_ok(), "{key:?} {it:?}");
                assert_eq!(a, b, "{key:?} {it:?}");
            }
            assert_eq!(ints.get(key).map(|t| t.to_vec()), general.get(key).map(|t| t.to_vec()), "{key:?}");
        }
        for k in [5, 6, u64::MAX] {
            let key = general_key(k);
            assert_eq!(ints.remove(&key).map(|t| t.to_vec()), general.remove(&key).map(|t| t.to_vec()));
        }
        assert_eq!(contents(&ints), contents(&general));
        // A key it cannot hold (validation stops them first) turns it into a general tree.
        let odd: Key = std::iter::once(KeyPart::Double(2.5)).collect();
        ints.put(odd.clone(), row(3, 3));
        general.put(odd, row(3, 3));
        assert!(matches!(ints.storage, Storage::Tree(_)));
        assert_eq!(contents(&ints), contents(&general));
    }

    #[test]
    fn a_hash_reused_from_a_lookup_finds_the_same_slot_and_a_stale_one_is_not_used() {
        let mut ix = keyed_hash_index();
        let t = tuple(&[0x92, 0xa1, b'k', 0x01]);
        let key = ix.entry_key(&split(&t).unwrap()).unwrap();
        let (found, pre) = ix.get_prehashing(&key);
        assert!(found.is_none() && pre.is_some());
        assert!(ix.put_prehashed(&key, pre, t.clone()).0.is_none());
        assert_eq!(ix.get(&key).map(|t| t.to_vec()), Some(t.to_vec()));
        // A hash another index (another hasher) worked out is not taken for this one's.
        let mut other = keyed_hash_index();
        let t2 = tuple(&[0x92, 0xa1, b'k', 0x02]);
        assert!(other.put_prehashed(&key, pre, t2.clone()).0.is_none());
        assert_eq!(other.get(&key).map(|t| t.to_vec()), Some(t2.to_vec()));
        let (found, _) = other.get_prehashing(&key);
        assert_eq!(found.map(|t| t.to_vec()), Some(t2.to_vec()));
    }

    #[test]
    fn an_entry_is_removed_by_the_hash_its_put_returned_and_a_foreign_one_is_ignored() {
        let mut ix = keyed_hash_index();
        let mut other = keyed_hash_index();
        let t = tuple(&[0x92, 0xa1, b'k', 0x01]);
        let key = ix.entry_key(&split(&t).unwrap()).unwrap();
        let (_, mine) = ix.put_prehashed(&key, None, t.clone());
        let (_, foreign) = other.put_prehashed(&key, None, t.clone());
        let (mine, foreign) = (mine.unwrap(), foreign.unwrap());
        // Warming is a hint: any hash, ours or not, changes nothing.
        ix.warm(mine);
        ix.warm(foreign);
        assert_eq!(ix.len(), 1);
        // Another index's hash is worked out afresh; ours is used as it is.
        assert!(ix.remove_exact_prehashed(&key, Some(foreign), &t));
        assert!(other.remove_exact_prehashed(&key, Some(foreign), &t));
        assert!(ix.is_empty() && other.is_empty());
        let (_, mine) = ix.put_prehashed(&key, None, t.clone());
        assert!(!ix.remove_exact_prehashed(&key, mine, &tuple(&[0x92, 0xa1, b'k', 0x01])), "another allocation");
        assert!(ix.remove_exact_prehashed(&key, mine, &t));
    }

    /// `[k, v]` for a small unsigned k and a one-letter string v.
    fn pair(k: u8, v: u8) -> Tuple {
        tuple(&[0x92, k, 0xa1, v])
    }

    fn entries(ix: &Index, tuples: &[Tuple]) -> Vec<(Key, Tuple)> {
        tuples.iter().map(|t| (ix.entry_key(&split(t).unwrap()).unwrap(), t.clone())).collect()
    }

    fn contents(ix: &Index) -> Vec<Vec<u8>> {
        ix.iter().map(|t| t.to_vec()).collect()
    }

    #[test]
    fn entries_added_at_once_are_kept_as_if_inserted_one_by_one() {
        // Out of key order, key 3 twice (the later tuple stays), a non-unique
        // TREE (ordered by value, then by the primary key) and a HASH.
        let tuples: Vec<Tuple> =
            [(5, b'b'), (1, b'c'), (3, b'a'), (9, b'a'), (3, b'z'), (2, b'b')].map(|(k, v)| pair(k, v)).into();
        let part = |field_no, ty| Part::whole(field_no, ty, Collation::Binary, false);
        let pk = vec![part(0, FieldType::Unsigned)];
        let by_value = IndexDef {
            id: 1,
            name: "value".into(),
            kind: IndexKind::Tree,
            unique: false,
            parts: vec![part(1, FieldType::String)],
            func: None,
        };
        let primary =
            IndexDef { id: 0, name: "pk".into(), kind: IndexKind::Tree, unique: true, parts: pk.clone(), func: None };
        for def in [primary, by_value, IndexDef { kind: IndexKind::Hash, ..hash_index().def }] {
            let mut one_by_one = Index::new(def.clone(), &pk);
            for (key, t) in entries(&one_by_one, &tuples) {
                one_by_one.insert(key, t);
            }
            let mut at_once = Index::new(def.clone(), &pk);
            at_once.extend_entries(entries(&at_once, &tuples));
            assert_eq!(at_once.len(), one_by_one.len(), "{}", def.name);
            if def.kind == IndexKind::Tree {
                assert_eq!(contents(&at_once), contents(&one_by_one), "{}", def.name);
            }
            for (key, t) in entries(&one_by_one, &tuples) {
                assert_eq!(at_once.get(&key).map(|t| t.to_vec()), one_by_one.get(&key).map(|t| t.to_vec()));
                assert!(at_once.get(&key).is_some_and(|found| def.id != 1 || found.as_ref() == t.as_ref()));
            }
            // A second batch joins the entries already there.
            let more = [pair(4, b'q'), pair(1, b'y')];
            for (key, t) in entries(&one_by_one, &more) {
                one_by_one.insert(key, t);
            }
            at_once.extend_entries(entries(&at_once, &more));
            assert_eq!(at_once.len(), one_by_one.len(), "{}", def.name);
            if def.kind == IndexKind::Tree {
                assert_eq!(contents(&at_once), contents(&one_by_one), "{}", def.name);
            }
        }
    }
}
