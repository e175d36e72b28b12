//! A space: its definition, its format and its indexes, kept consistent on every write.

use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicUsize, Ordering};

use super::field_path::{self, FieldPath, Step};
use super::index::{Fault, Index, IndexDef, Part};
use super::memory::{self, Charge, Usage};
use super::multikey;
use super::tuple::{split, Tuple, TupleFields};
use super::value::{Collation, FieldType, Key, ValueType};
use crate::error::{code, BoxError, BoxResult};

/// One field of a space format.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FieldDef {
    /// Field name.
    pub name: String,
    /// Field type.
    pub ty: FieldType,
    /// Whether nil is allowed.
    pub nullable: bool,
    /// Collation for strings.
    pub collation: Collation,
}

/// How a space stores data.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EngineKind {
    /// In memory (and persisted by oncebox's storage).
    Memtx,
    /// Created as `vinyl`: kept as memtx is, its name and index methods kept apart.
    Vinyl,
    /// A view over another system space, filtered by privileges.
    Sysview,
    /// Holds nothing (`_vinyl_deferred_delete`, `_session_settings`).
    Blackhole,
}

impl EngineKind {
    /// Whether the space holds rows of its own (memtx or vinyl).
    #[must_use]
    pub fn stores_rows(self) -> bool {
        matches!(self, Self::Memtx | Self::Vinyl)
    }
}

/// A space definition, as read from `_space`.
#[derive(Debug, Clone, PartialEq)]
pub struct SpaceDef {
    /// Space id.
    pub id: u32,
    /// Owner user id.
    pub owner: u32,
    /// Space name.
    pub name: String,
    /// Storage engine.
    pub engine: EngineKind,
    /// Exact field count required (0: any).
    pub field_count: u32,
    /// Field formats.
    pub format: Vec<FieldDef>,
    /// Whether the space is temporary (not persisted).
    pub temporary: bool,
    /// Whether the space is replica-local (`is_local`, replication group 1).
    pub is_local: bool,
}

/// What a write does when the primary key already exists.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WriteMode {
    /// Fail with ER_TUPLE_FOUND.
    Insert,
    /// Replace the existing tuple.
    Replace,
}

/// `memtx_max_tuple_size`: the largest tuple accepted, header included (2.6 default 1 MiB).
pub static MAX_TUPLE_SIZE: AtomicUsize = AtomicUsize::new(1024 * 1024);
const TUPLE_HEADER_SIZE: usize = 14;
/// Below `limit - 4 * this` no tuple can be too large, so the exact size is not computed.
const MAX_FIELD_MAP_SLOTS: usize = 4096;

/// A space with its indexes.
#[derive(Debug)]
pub struct Space {
    /// The definition.
    pub def: SpaceDef,
    /// Indexes by id; id 0 is the primary key.
    pub indexes: BTreeMap<u32, Index>,
    /// The sequence that fills a primary key field on INSERT and REPLACE (`_space_sequence`).
    pub sequence: Option<super::sequence::SequenceLink>,
    /// What its tuples and index entries take of `memtx_memory`.
    charge: Charge,
}

impl Space {
    /// A space with no indexes.
    #[must_use]
    pub fn new(def: SpaceDef) -> Self {
        Self { def, indexes: BTreeMap::new(), sequence: None, charge: Charge::default() }
    }

    /// A space with no indexes whose tuples count in `usage` against `memtx_memory`,
    /// unless it is `_idempotency` (bounded by its own limits).
    #[must_use]
    pub fn counted(def: SpaceDef, usage: &Usage) -> Self {
        let charge = if def.id == crate::idempotency::SPACE_ID { Charge::default() } else { Charge::counted(usage) };
        Self { def, indexes: BTreeMap::new(), sequence: None, charge }
    }

    /// An empty space with this one's definition, counted as it is (a space rebuilt in place).
    #[must_use]
    pub fn emptied(&self) -> Self {
        Self { def: self.def.clone(), indexes: BTreeMap::new(), sequence: None, charge: self.charge.sibling() }
    }

    /// Works out the charge again from the tuples held (after indexes were built,
    /// rebuilt or dropped outside the write paths).
    pub fn recount(&mut self) {
        let data = self.primary().map_or(0, |pk| pk.iter().map(|t| memory::tuple_bytes(t.len())).sum());
        let entries = self.len() * self.indexes.len();
        self.charge.set(data, entries);
    }

    /// A temporary space with no name, format or indexes: where operations on a
    /// tuple outside any space (`tuple:update`) are checked.
    #[must_use]
    pub fn unnamed() -> Self {
        Self::new(SpaceDef {
            id: 0,
            owner: 1,
            name: String::new(),
            engine: EngineKind::Memtx,
            field_count: 0,
            format: Vec::new(),
            temporary: true,
            is_local: false,
        })
    }

    /// This space's definition and indexes without their entries: what a tuple
    /// made outside the space from one of its tuples is checked against.
    #[must_use]
    pub fn shape(&self) -> Self {
        let pk_parts = self.indexes.get(&0).map(|pk| pk.def.parts.clone()).unwrap_or_default();
        let indexes = self
            .indexes
            .iter()
            .map(|(id, ix)| (*id, Index::for_space(self.def.id, ix.def.clone(), &pk_parts)))
            .collect();
        Self { def: self.def.clone(), indexes, sequence: None, charge: Charge::default() }
    }

    /// [`Self::unnamed`] with these field names (a tuple made by `box.tuple.new`).
    #[must_use]
    pub fn with_field_names(names: &[String]) -> Self {
        let mut space = Self::unnamed();
        space.def.format = names
            .iter()
            .map(|name| FieldDef {
                name: name.clone(),
                ty: FieldType::Any,
                nullable: true,
                collation: Collation::Binary,
            })
            .collect();
        space
    }

    /// The primary key, if created.
    #[must_use]
    pub fn primary(&self) -> Option<&Index> {
        self.indexes.get(&0)
    }

    /// Number of tuples.
    #[must_use]
    pub fn len(&self) -> usize {
        self.primary().map_or(0, Index::len)
    }

    /// Whether the space holds no tuples.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The index with this id, or ER_NO_SUCH_INDEX_ID.
    pub fn index(&self, id: u32) -> BoxResult<&Index> {
        self.indexes.get(&id).ok_or_else(|| BoxError::no_such_index_id(id, &self.def.name))
    }

    /// The primary index or the error Tarantool gives for a space without one.
    pub fn require_primary(&self) -> BoxResult<&Index> {
        self.primary().ok_or_else(|| no_primary(&self.def))
    }

    /// The 0-based number of a format field by name.
    #[must_use]
    pub fn field_no(&self, name: &[u8]) -> Option<usize> {
        self.def.format.iter().position(|f| f.name.as_bytes() == name)
    }

    /// The size 2.6's memtx charges for a tuple: a 14-byte header, 4 bytes per
    /// indexed field past the first (its field map), and the MessagePack data.
    fn charged_size(&self, data_len: usize) -> usize {
        let mut slots: Vec<u32> = self
            .indexes
            .values()
            .flat_map(|i| i.def.tuple_parts().iter().map(|p| p.field_no))
            .filter(|&f| f > 0)
            .collect();
        slots.sort_unstable();
        slots.dedup();
        TUPLE_HEADER_SIZE + 4 * slots.len() + data_len
    }

    /// Checks a tuple against the size limit, the format and every index, returning its fields.
    pub fn validate<'t>(&self, tuple: &'t [u8]) -> BoxResult<TupleFields<'t>> {
        self.check_size(tuple)?;
        let fields = split(tuple)?;
        self.check_fields(&fields)?;
        Ok(fields)
    }

    /// [`Self::validate`] for a tuple whose fields are known already (an UPDATE
    /// assembled it field by field): nothing is split again.
    /// The fields are borrowed, not passed through: moving a vector of field
    /// slices in and out cost two calls to memcpy per update.
    pub fn validate_split(&self, tuple: &[u8], fields: &TupleFields<'_>) -> BoxResult<()> {
        self.check_size(tuple)?;
        self.check_fields(fields)
    }

    /// [`Self::validate_split`] for the tuple an UPDATE made of a stored one: with
    /// `changed` (the positions of the only fields it changed, ascending), only
    /// those are checked, as the others hold what passed when it was stored
    /// (a new format or index is checked against every stored tuple).
    pub fn validate_update(&self, tuple: &[u8], fields: &TupleFields<'_>, changed: Option<&[u32]>) -> BoxResult<()> {
        let Some(changed) = changed else {
            return self.validate_split(tuple, fields);
        };
        self.check_size(tuple)?;
        for &at in changed {
            let at = at as usize;
            if self.parts_on_field(at).any(|p| p.path.is_some()) {
                // Places inside the field are checked with the whole tuple.
                return self.validate_split(tuple, fields);
            }
            let Some(raw) = fields.get(at) else { continue };
            let ty = ValueType::of(raw).map_err(|_| BoxError::invalid_msgpack("tuple"))?;
            // On one field the format is checked before the parts, the parts in index order.
            let format = self.def.format.get(at).map(|f| (f.ty, f.nullable));
            let mut wanted = format.into_iter().chain(self.parts_on_field(at).map(|p| (p.ty, p.nullable)));
            if let Some((want, _)) = wanted.find(|&(want, nullable)| !want.admits(ty, nullable)) {
                return Err(BoxError::field_type(&(at + 1).to_string(), want.name()));
            }
        }
        Ok(())
    }

    fn check_size(&self, tuple: &[u8]) -> BoxResult<()> {
        self.check_size_within(tuple, MAX_TUPLE_SIZE.load(Ordering::Relaxed))
    }

    /// Refuses a tuple that takes more than `limit` bytes with its header, as
    /// 2.6's allocation does (`memtx_max_tuple_size`).
    pub fn check_size_within(&self, tuple: &[u8], limit: usize) -> BoxResult<()> {
        if tuple.len() + TUPLE_HEADER_SIZE > limit.saturating_sub(4 * MAX_FIELD_MAP_SLOTS) {
            let size = self.charged_size(tuple.len());
            if size > limit {
                return Err(BoxError::new(
                    code::MEMTX_MAX_TUPLE_SIZE,
                    format!(
                        "Failed to allocate {size} bytes for tuple: tuple is too large. \
                         Check 'memtx_max_tuple_size' configuration option."
                    ),
                ));
            }
        }
        Ok(())
    }

    fn check_fields(&self, fields: &TupleFields<'_>) -> BoxResult<()> {
        if self.def.field_count > 0 && fields.len() != self.def.field_count as usize {
            return Err(BoxError::new(
                code::EXACT_FIELD_COUNT,
                format!("Tuple field count {} does not match space field count {}", fields.len(), self.def.field_count),
            ));
        }
        // The first field (in field order) a format entry or an index part rejects;
        // on one field the format is checked before the parts, the parts in index order.
        let mut rejected: Option<(usize, FieldType)> = None;
        let type_of = |i: usize| ValueType::of(fields[i]).map_err(|_| BoxError::invalid_msgpack("tuple"));
        for (i, f) in self.def.format.iter().enumerate().take(fields.len()) {
            let ty = type_of(i)?;
            if !f.ty.admits(ty, f.nullable) {
                rejected = Some((i, f.ty));
                break;
            }
        }
        // A part with a path checks places inside its field: the first wrong one in
        // field order, then in the field's byte order, as 2.6 walks the tuple.
        let mut inside: Option<(usize, usize, Fault)> = None;
        let mut missing_inside: Option<Fault> = None;
        for part in self.indexes.values().flat_map(|ix| ix.def.tuple_parts().iter()) {
            let i = part.field_no as usize;
            if i >= fields.len() {
                // A place inside a field the tuple lacks is missing, unless the
                // format lets the field be absent or the part runs over an array.
                let excused = self.def.format.get(i).is_some_and(|f| f.nullable) || multikey::split(part).is_some();
                if part.path.is_some() && !part.nullable && !excused {
                    if let Err(fault) = part.value(fields)? {
                        missing_inside.get_or_insert(fault);
                    }
                }
                continue;
            }
            if rejected.is_some_and(|(first, _)| first <= i) {
                continue;
            }
            if part.path.is_some() {
                let checked = match multikey::split(part) {
                    Some(_) => multikey::check(part, fields)?.map(|()| None),
                    None => part.value(fields)?,
                };
                match checked {
                    Ok(_) => {}
                    Err(Fault::WrongType { at: 0, expected, .. }) => {
                        let container = if expected == "map" { FieldType::Map } else { FieldType::Array };
                        rejected = Some((i, container));
                    }
                    Err(fault @ Fault::WrongType { at, .. }) => {
                        if inside.as_ref().is_none_or(|(field, first, _)| (i, at) < (*field, *first)) {
                            inside = Some((i, at, fault));
                        }
                    }
                    Err(fault) => {
                        missing_inside.get_or_insert(fault);
                    }
                }
                continue;
            }
            let ty = type_of(i)?;
            if !part.ty.admits(ty, part.nullable) {
                rejected = Some((i, part.ty));
            }
        }
        match (rejected, inside) {
            (Some((i, _)), Some((field, _, fault))) if field < i => return Err(fault.error()),
            (Some((i, ty)), _) => return Err(BoxError::field_type(&(i + 1).to_string(), ty.name())),
            (None, Some((_, _, fault))) => return Err(fault.error()),
            (None, None) => {}
        }
        // As 2.6: the fields present are checked before any missing one is named.
        let required_len = self.required_field_count();
        if fields.len() < required_len {
            let missing = (fields.len()..required_len).find(|&i| self.is_required(i)).unwrap_or(fields.len());
            return Err(BoxError::new(
                code::FIELD_MISSING,
                format!("Tuple field {} required by space format is missing", missing + 1),
            ));
        }
        missing_inside.map_or(Ok(()), |fault| Err(fault.error()))
    }

    fn parts_on_field(&self, field: usize) -> impl Iterator<Item = &Part> {
        self.indexes.values().flat_map(|ix| ix.def.tuple_parts().iter()).filter(move |p| p.field_no as usize == field)
    }

    /// Whether a missing `field` is refused for itself. As in 2.6, only a leaf of the
    /// format's tree is: a field an index reaches inside by a path is required
    /// through those places alone (a nullable one lets the whole field be absent).
    fn is_required(&self, field: usize) -> bool {
        self.is_required_by_format(field) || self.parts_on_field(field).any(|p| !p.nullable && p.path.is_none())
    }

    fn is_required_by_format(&self, field: usize) -> bool {
        self.def.format.get(field).is_some_and(|f| !f.nullable) && !self.has_paths_inside(field)
    }

    fn has_paths_inside(&self, field: usize) -> bool {
        self.parts_on_field(field).any(|p| p.path.is_some())
    }

    fn required_field_count(&self) -> usize {
        let by_format = (0..self.def.format.len()).rposition(|i| self.is_required_by_format(i)).map_or(0, |i| i + 1);
        let by_index = self
            .indexes
            .values()
            .flat_map(|ix| ix.def.tuple_parts().iter())
            .filter(|p| !p.nullable && p.path.is_none())
            .map(|p| p.field_no as usize + 1)
            .max()
            .unwrap_or(0);
        by_format.max(by_index)
    }

    /// Writes `tuple` (validated into `fields`) and returns the tuple it replaced.
    ///
    /// `expected_old` is the tuple an UPDATE started from: it is the only tuple
    /// the write may displace.
    pub fn write(
        &mut self,
        tuple: Tuple,
        fields: &TupleFields<'_>,
        mode: WriteMode,
        expected_old: Option<&Tuple>,
    ) -> BoxResult<Option<Tuple>> {
        self.write_keyed(tuple, fields, mode, expected_old).map(|(old, _)| old)
    }

    /// [`Self::write`], also returning the tuple's primary key (the key its change is recorded under).
    ///
    /// # Errors
    /// Besides the format's and the indexes', `OutOfMemory` when the tuple would
    /// take the tuples' memory past `memtx_memory` ([`super::memory`]).
    pub fn write_keyed(
        &mut self,
        tuple: Tuple,
        fields: &TupleFields<'_>,
        mode: WriteMode,
        expected_old: Option<&Tuple>,
    ) -> BoxResult<(Option<Tuple>, Key)> {
        if !self.charge.surely_fits(tuple.len(), self.indexes.len()) {
            self.check_quota(&tuple, fields)?;
        }
        self.put_keyed(tuple, fields, mode, expected_old)
    }

    /// Puts back a tuple a failed commit displaced (never refused for memory).
    pub fn restore(&mut self, tuple: Tuple, fields: &TupleFields<'_>) -> BoxResult<()> {
        self.put_keyed(tuple, fields, WriteMode::Replace, None).map(drop)
    }

    /// Refuses `tuple` when, with what it replaces, it takes the tuples' memory past the quota.
    fn check_quota(&self, tuple: &Tuple, fields: &TupleFields<'_>) -> BoxResult<()> {
        let pk = self.require_primary()?;
        let old_len = pk.get(&pk.entry_key(fields)?).map(|t| t.len());
        if self.charge.fits(old_len, tuple.len(), self.indexes.len()) {
            return Ok(());
        }
        Err(BoxError::out_of_memory(self.charged_size(tuple.len()), "slab allocator", "memtx_tuple"))
    }

    /// [`Self::write_keyed`] without the quota check.
    fn put_keyed(
        &mut self,
        tuple: Tuple,
        fields: &TupleFields<'_>,
        mode: WriteMode,
        expected_old: Option<&Tuple>,
    ) -> BoxResult<(Option<Tuple>, Key)> {
        let index_count = self.indexes.len();
        let Self { def, indexes, charge, .. } = self;
        let mut ixs = indexes.values_mut();
        let Some(pk) = ixs.next().filter(|ix| ix.def.id == 0) else {
            return Err(no_primary(def));
        };
        let pk_key = pk.entry_key(fields)?;
        // One descent of the primary key: the slot found is the one a replace overwrites.
        // Its tuple is compared by address only and moved out at the end, never
        // cloned: the old tuple's memory (its count) is usually not in the cache,
        // and is touched only when the change holding it is dropped
        // (see `crate::engine::drop_changes`).
        let mut slot = pk.get_mut(&pk_key);
        if let (WriteMode::Insert, Some(_)) = (mode, &slot) {
            pk.reinsert_duplicate(&pk_key);
            return Err(duplicate(def, pk));
        }
        if let Some(expected) = expected_old {
            // Usually the very tuple; else one with the same contents will do.
            let same = slot.as_deref().is_some_and(|o| std::rc::Rc::ptr_eq(o, expected) || o[..] == expected[..]);
            if !same {
                return Err(BoxError::new(
                    code::CANT_UPDATE_PRIMARY_KEY,
                    format!(
                        "Attempt to modify a tuple field which is part of index '{}' in space '{}'",
                        pk.def.name, def.name
                    ),
                ));
            }
        }
        // Every secondary unique index may hold at most the tuple being replaced.
        let mut secondary: smallvec::SmallVec<[(&mut Index, Key); 4]> = smallvec::SmallVec::new();
        // Each multikey or functional index's new keys and the old tuple's, all
        // computed before anything changes (a key function may fail).
        // (The old tuple is split only if such an index needs it.)
        let mut multikey: Vec<(&mut Index, Vec<Key>, Vec<Key>)> = Vec::new();
        let mut old_fields: Option<TupleFields<'_>> = None;
        for ix in ixs {
            if ix.is_multikey() {
                let keys = ix.entry_keys(&tuple, fields, def)?;
                let old_keys = match slot.as_deref() {
                    Some(old) => {
                        let old_fields = match &mut old_fields {
                            Some(split) => split,
                            none => none.insert(split(old)?),
                        };
                        ix.entry_keys(old, old_fields, def)?
                    }
                    None => Vec::new(),
                };
                if ix.def.unique {
                    for entry in &keys {
                        let holder = ix.conflict(&ix.user_part(entry));
                        if holder.is_some_and(|other| !slot.as_deref().is_some_and(|o| std::rc::Rc::ptr_eq(o, other))) {
                            return Err(duplicate(def, ix));
                        }
                    }
                }
                multikey.push((ix, keys, old_keys));
                continue;
            }
            let key = ix.entry_key(fields)?;
            if ix.def.unique {
                // A unique index's entry key is its user key, unless it adds the
                // primary key's parts (nullable parts): then the user key is built.
                let user_key = if key.len() == ix.def.parts.len() { None } else { Some(ix.user_key(fields)?) };
                if let Some(other) = ix.conflict(user_key.as_ref().unwrap_or(&key)) {
                    let is_old = slot.as_deref().is_some_and(|o| std::rc::Rc::ptr_eq(o, other));
                    if !is_old {
                        return Err(duplicate(def, ix));
                    }
                }
            }
            secondary.push((ix, key));
        }
        drop(old_fields);
        let old = match slot.take() {
            Some(slot) => Some(std::mem::replace(slot, tuple.clone())),
            None => {
                pk.insert(pk_key.clone(), tuple.clone());
                None
            }
        };
        charge.put(old.as_ref().map(|o| o.len()), tuple.len(), index_count);
        let primary_key = pk_key;
        if !multikey.is_empty() {
            // The old tuple's entries its new keys do not keep go; the new keys
            // point at the new tuple.
            for (ix, keys, old_keys) in multikey {
                for old_key in old_keys {
                    if keys.binary_search(&old_key).is_err() {
                        ix.remove(&old_key);
                    }
                }
                for key in keys {
                    ix.insert(key, tuple.clone());
                }
            }
        }
        match &old {
            Some(old) if !secondary.is_empty() => {
                // An entry whose key is unchanged keeps its place; only its tuple is swapped.
                let old_fields = split(old)?;
                for (ix, key) in secondary {
                    let old_key = ix.entry_key(&old_fields)?;
                    if old_key == key {
                        ix.swap_tuple(&key, tuple.clone());
                    } else {
                        ix.move_entry(&old_key, old, key, tuple.clone());
                    }
                }
            }
            _ => {
                for (ix, key) in secondary {
                    ix.insert(key, tuple.clone());
                }
            }
        }
        Ok((old, primary_key))
    }

    /// Adds tuples read back from storage, every index in one build
    /// ([`Index::extend_entries`]): keys are computed, nothing is re-checked.
    pub fn load_all(&mut self, tuples: Vec<Tuple>) -> BoxResult<()> {
        let mut entries: Vec<Vec<(Key, Tuple)>> =
            self.indexes.values().map(|_| Vec::with_capacity(tuples.len())).collect();
        for tuple in tuples {
            let fields = split(&tuple)?;
            for (ix, out) in self.indexes.values().zip(entries.iter_mut()) {
                if ix.is_pending() {
                    continue;
                }
                if ix.is_multikey() {
                    out.extend(ix.entry_keys(&tuple, &fields, &self.def)?.into_iter().map(|key| (key, tuple.clone())));
                } else {
                    out.push((ix.entry_key(&fields)?, tuple.clone()));
                }
            }
        }
        for (ix, entries) in self.indexes.values_mut().zip(entries) {
            ix.extend_entries(entries);
        }
        self.recount();
        Ok(())
    }

    /// Adds a tuple read back from storage: keys are computed, nothing is re-checked.
    pub fn load(&mut self, tuple: Tuple) -> BoxResult<()> {
        let fields = split(&tuple)?;
        let replaced = self.primary().and_then(|pk| pk.entry_key(&fields).ok()).and_then(|k| pk_len(self, &k));
        for ix in self.indexes.values_mut() {
            for key in keys_of(ix, &tuple, &fields, &self.def)? {
                ix.insert(key, tuple.clone());
            }
        }
        self.charge.put(replaced, tuple.len(), self.indexes.len());
        Ok(())
    }

    /// Removes a stored tuple from every index.
    pub fn unlink(&mut self, tuple: &Tuple) -> BoxResult<()> {
        let fields = split(tuple)?;
        let mut removed = false;
        for ix in self.indexes.values_mut() {
            for key in keys_of(ix, tuple, &fields, &self.def)? {
                let gone = ix.remove(&key);
                removed |= ix.def.id == 0 && gone.is_some();
            }
        }
        if removed {
            self.charge.remove(tuple.len(), self.indexes.len());
        }
        Ok(())
    }

    /// `space:bsize()`: the bytes of every tuple's data (summed as asked: one pass
    /// over the primary key).
    #[must_use]
    pub fn bsize(&self) -> usize {
        self.primary().map_or(0, |pk| pk.iter().map(|t| t.len()).sum())
    }

    /// Removes every tuple.
    pub fn truncate(&mut self) {
        for ix in self.indexes.values_mut() {
            ix.clear();
        }
        self.charge.set(0, 0);
    }

    fn duplicate(&self, ix: &Index) -> BoxError {
        duplicate(&self.def, ix)
    }

    /// Adds an index and fills it from the primary key.
    pub fn add_index(&mut self, def: IndexDef) -> BoxResult<()> {
        let pk_parts = match (def.id, self.primary()) {
            (0, _) => def.parts.clone(),
            (_, Some(pk)) => pk.def.parts.clone(),
            (_, None) => {
                return Err(BoxError::new(
                    code::ALTER_SPACE,
                    format!("Can't modify space '{}': can not add a secondary key before primary", self.def.name),
                ))
            }
        };
        let mut index = Index::for_space(self.def.id, def, &pk_parts);
        let existing: Vec<Tuple> = self
            .indexes
            .get(&0)
            .filter(|_| index.def.id != 0)
            .map(|pk| pk.iter().cloned().collect())
            .unwrap_or_default();
        for t in existing {
            let fields = split(&t)?;
            for part in index.def.tuple_parts() {
                let checked = match multikey::split(part) {
                    Some(_) => multikey::check(part, &fields)?,
                    None => part.value(&fields)?.map(drop),
                };
                if let Err(fault) = checked {
                    return Err(fault.error());
                }
            }
            if index.is_multikey() {
                let keys = index.entry_keys(&t, &fields, &self.def)?;
                if index.def.unique && keys.iter().any(|k| index.conflict(&index.user_part(k)).is_some()) {
                    return Err(self.duplicate(&index));
                }
                for key in keys {
                    index.insert(key, t.clone());
                }
                continue;
            }
            if index.conflict(&index.user_key(&fields)?).is_some() {
                return Err(self.duplicate(&index));
            }
            let key = index.entry_key(&fields)?;
            drop(fields);
            index.insert(key, t);
        }
        self.indexes.insert(index.def.id, index);
        self.recount();
        Ok(())
    }

    /// Drops index `id` (the primary key only alone, taking every tuple with it).
    pub fn drop_index(&mut self, id: u32) {
        self.indexes.remove(&id);
        self.recount();
    }
}

impl Space {
    /// Checks the types an index gives each place it keys (a field, or a place on a
    /// path, whose steps make the places before it maps or arrays) against the
    /// space format and the other indexes, as 2.6 builds a space's tuple format:
    /// a type may narrow another (`integer` then `unsigned`), not contradict it.
    ///
    /// # Errors
    /// `ER_FORMAT_MISMATCH_INDEX_PART` against the format, or
    /// `ER_INDEX_PART_TYPE_MISMATCH` against another index.
    pub fn check_part_types(&self, added: &IndexDef) -> BoxResult<()> {
        // Each place: (its type so far, whether an index part set it).
        let mut places: HashMap<(u32, Vec<Step>), (FieldType, bool)> = HashMap::new();
        for (i, f) in self.def.format.iter().enumerate() {
            #[allow(clippy::cast_possible_truncation, reason = "field numbers fit u32")]
            places.insert((i as u32, Vec::new()), (f.ty, false));
        }
        let mut defs: Vec<&IndexDef> =
            self.indexes.values().map(|ix| &ix.def).filter(|d| d.id != added.id).chain([added]).collect();
        defs.sort_by_key(|d| d.id);
        let mismatch = |field: u32, steps: &[Step], had: FieldType, wants: FieldType| {
            BoxError::new(
                code::INDEX_PART_TYPE_MISMATCH,
                format!(
                    "Field {} has type '{}' in one index, but type '{}' in another",
                    field_path::label(field, steps),
                    had.name(),
                    wants.name()
                ),
            )
        };
        for part in defs.iter().flat_map(|d| d.tuple_parts().iter()) {
            let steps = part.path.as_deref().map_or(&[][..], FieldPath::steps);
            for depth in 0..steps.len() {
                let wants = if matches!(steps[depth], Step::Key(_)) { FieldType::Map } else { FieldType::Array };
                let place = places.entry((part.field_no, steps[..depth].to_vec())).or_insert((FieldType::Any, false));
                if place.0 == FieldType::Any {
                    place.0 = wants;
                } else if place.0 != wants {
                    return Err(mismatch(part.field_no, &steps[..depth], place.0, wants));
                }
                place.1 = true;
            }
            let place = places.entry((part.field_no, steps.to_vec())).or_insert((FieldType::Any, false));
            if place.0.contains(part.ty) {
                place.0 = part.ty;
            } else if !part.ty.contains(place.0) {
                if place.1 {
                    return Err(mismatch(part.field_no, steps, place.0, part.ty));
                }
                return Err(BoxError::new(
                    code::FORMAT_MISMATCH_INDEX_PART,
                    format!(
                        "Field {} has type '{}' in space format, but type '{}' in index definition",
                        field_path::label(part.field_no, steps),
                        place.0.name(),
                        part.ty.name()
                    ),
                ));
            }
            place.1 = true;
        }
        Ok(())
    }
}

/// A stored tuple's entry keys in an index: one, or for a multikey index one per element.
/// The length of the tuple `space`'s primary key holds under `key`, if any.
fn pk_len(space: &Space, key: &Key) -> Option<usize> {
    space.primary().and_then(|pk| pk.get(key)).map(|t| t.len())
}

fn keys_of(
    ix: &Index,
    tuple: &Tuple,
    fields: &TupleFields<'_>,
    space: &SpaceDef,
) -> BoxResult<smallvec::SmallVec<[Key; 1]>> {
    if ix.is_pending() {
        return Ok(smallvec::SmallVec::new());
    }
    if ix.is_multikey() {
        return Ok(ix.entry_keys(tuple, fields, space)?.into_iter().collect());
    }
    Ok(smallvec::smallvec![ix.entry_key(fields)?])
}

/// ER_TUPLE_FOUND for a unique index of a space.
fn duplicate(def: &SpaceDef, ix: &Index) -> BoxError {
    BoxError::new(
        code::TUPLE_FOUND,
        format!("Duplicate key exists in unique index '{}' in space '{}'", ix.def.name, def.name),
    )
}

/// The error Tarantool gives for a write to a space without a primary key.
fn no_primary(def: &SpaceDef) -> BoxError {
    BoxError::new(code::NO_SUCH_INDEX_ID, format!("No index #0 is defined in space '{}'", def.name))
}
