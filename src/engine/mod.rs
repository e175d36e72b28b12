//! The in-memory engine: spaces, indexes, the system catalogue and privileges.
//!
//! Deterministic and synchronous: it owns no threads, sockets or files. Every
//! write is recorded as a [`Change`]; the executor hands the changes of a
//! statement to the storage seam as one commit batch.

pub mod access;
pub mod bitset;
pub mod catalog;
pub mod collations;
mod ddl_rights;
pub mod field_path;
pub mod func_index;
pub mod hash_slots;
pub mod identifier;
pub mod index;
pub mod json_path;
pub mod key_hash;
pub mod light;
pub mod memory;
pub mod multikey;
pub mod rtree;
pub mod sequence;
pub mod space;
pub mod stats;
pub mod tuple;
pub mod update;
pub mod value;

use crate::id_map::IdMap;
use std::cell::RefCell;
use std::collections::HashMap;
use std::rc::Rc;

use access::{access_name, privilege, user_id, Credentials, Grant, ObjectType};
use catalog::space_id;
use index::{Index, IteratorType};
use space::{EngineKind, Space, WriteMode};
use tuple::{split, Tuple};
use value::{Key, KeyPart};

use crate::error::{code, BoxError, BoxResult};
use crate::protocol::auth;
use crate::protocol::msgpack::{write, MpType, Reader};
use crate::protocol::request::{Delete, Select, Update, Upsert};

/// One row change, the unit the storage layer persists.
#[derive(Debug, Clone)]
pub enum Change {
    /// One row written, replaced or removed.
    Row {
        /// The space written.
        space_id: u32,
        /// The row's primary key (under the primary index at the time of the change).
        pk: value::Key,
        /// The tuple removed or replaced, if any.
        old: Option<Tuple>,
        /// The tuple written, if any.
        new: Option<Tuple>,
    },
    /// Every row of a space removed (truncate, primary key dropped or rebuilt).
    Truncate {
        /// The space emptied.
        space_id: u32,
        /// What it held, kept to undo the change.
        removed: Vec<Tuple>,
    },
}

impl Change {
    /// The space the change is in.
    #[must_use]
    pub fn space_id(&self) -> u32 {
        match self {
            Self::Row { space_id, .. } | Self::Truncate { space_id, .. } => *space_id,
        }
    }
}

/// Changes prefetched this far ahead of the one [`drop_changes`] drops.
const DROP_AHEAD: usize = 8;

/// Drops `changes` (a durable commit's undo list), asking for each replaced
/// tuple's memory a few changes ahead: a replace moved the old tuple out of its
/// index without touching it, so the last reference to it, here, is usually a
/// cache miss, and the misses of a group overlap this way instead of queueing.
pub fn drop_changes(changes: Vec<Change>) {
    let old_of = |c: &Change| match c {
        Change::Row { old: Some(t), .. } => Some(Rc::as_ptr(t)),
        _ => None,
    };
    for c in changes.iter().take(DROP_AHEAD) {
        if let Some(p) = old_of(c) {
            crate::prefetch::read(p);
        }
    }
    let mut rest = changes.into_iter();
    while let Some(change) = rest.next() {
        if let Some(p) = rest.as_slice().get(DROP_AHEAD - 1).and_then(old_of) {
            crate::prefetch::read(p);
        }
        drop(change);
    }
}

/// The engine: every space, plus caches derived from the catalogue.
///
/// The default engine is empty (no spaces, not even the system ones): a stand-in
/// where an engine must be while the real one is lent out.
#[derive(Default)]
pub struct Engine {
    /// By id; every request looks its space up here, so a hash map, not a tree.
    spaces: IdMap<u32, Space>,
    schema_version: u64,
    creds: RefCell<IdMap<u32, Rc<Credentials>>>,
    changes: Vec<Change>,
    /// Who the current write runs as, for DDL rights; `None` for the system itself.
    acting: Option<Rc<Credentials>>,
    /// `box.cfg{read_only = true}`: every write is refused.
    read_only: bool,
    /// `wal_mode = 'none'`: vinyl spaces refuse DDL and DML, as 2.6's vinyl does
    /// without the WAL it keeps its own log in step with.
    vinyl_frozen: bool,
    /// The last token looked up and not found: the insert that usually follows
    /// reuses its key and hash.
    token_miss: RefCell<Option<TokenMiss>>,
    /// `_func` rows by name as CALL checks them (found or not), dropped whenever
    /// `_func` changes: every CALL looks its function up.
    funcs: RefCell<HashMap<Box<[u8]>, Option<FuncAccess>>>,
    /// The idempotency window's service clock, once there is one: a record written
    /// into `_idempotency` by hand may not be created after it.
    service_clock: Option<crate::idempotency::ServiceClock>,
    /// `box.stat()`'s counters.
    pub stats: stats::OpStats,
    /// What the spaces' tuples and index entries take of `memtx_memory`.
    memory: memory::Usage,
}

/// How many function names [`Engine::check_call_access`] remembers before it starts over.
const MAX_REMEMBERED_FUNCS: usize = 1024;

/// What CALL needs of a `_func` row: whose rights it runs with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FuncAccess {
    /// Function id.
    pub id: u32,
    /// Owner user id.
    pub owner: u32,
    /// Whether it runs with the owner's rights.
    pub setuid: bool,
    /// Whether its body defines it (see [`catalog::FuncRow::persistent`]).
    pub persistent: bool,
}

/// A record [`Engine::put_idempotency_record`] stored.
#[derive(Debug)]
pub struct StoredRecord {
    /// The record's tuple.
    pub tuple: Tuple,
    /// Its key's hash in the primary key, when known.
    pub hashed: Option<index::Prehashed>,
    /// The record it replaced under the same (user, token), if any.
    pub replaced: Option<Tuple>,
}

/// A token [`Engine::idempotency_record`] did not find.
#[derive(Debug)]
struct TokenMiss {
    user: u32,
    token: Vec<u8>,
    key: Key,
    pre: Option<index::Prehashed>,
}

impl std::fmt::Debug for Engine {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Engine")
            .field("spaces", &self.spaces.len())
            .field("schema_version", &self.schema_version)
            .finish()
    }
}

/// The newest schema version a DDL has made, for the network threads: a PING
/// they answer themselves must not carry a version older than a schema change
/// made since the TX thread last told them one (see
/// [`crate::server::sink::ReplySink::ping_schema_version`]).
pub static LATEST_SCHEMA_VERSION: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

fn str_key(s: &[u8]) -> value::Key {
    Key(smallvec::smallvec![KeyPart::Str(s.into())])
}

/// Defines the collation of a `_collation` row beyond the built-in three.
///
/// # Errors
/// The row's options are not a collation ICU can build (checked when `eager`).
pub fn define_collation(tuple: &[u8], eager: bool) -> BoxResult<()> {
    match collations::CollationDef::parse(tuple) {
        Some(def) if def.id > 3 => collations::define(def, eager),
        _ => Ok(()),
    }
}

impl Engine {
    /// An engine holding Tarantool 2.6's bootstrap catalogue.
    pub fn bootstrap(instance_uuid: &uuid::Uuid) -> BoxResult<Self> {
        Self::bootstrap_with(instance_uuid, instance_uuid)
    }

    /// [`Self::bootstrap`] with the replica set's uuid (`_schema`'s cluster row)
    /// given apart (`box.cfg{replicaset_uuid}`).
    pub fn bootstrap_with(instance_uuid: &uuid::Uuid, replicaset_uuid: &uuid::Uuid) -> BoxResult<Self> {
        let mut rows: Vec<(u32, Vec<u8>)> = catalog::bootstrap_rows().collect();
        // oncebox's own system space, `_idempotency`.
        rows.push((space_id::SPACE, crate::idempotency::space_row()));
        rows.extend(crate::idempotency::index_rows().into_iter().map(|r| (space_id::INDEX, r)));
        let space_rows = rows.iter().filter(|(s, _)| *s == space_id::SPACE).map(|(_, t)| t.as_slice());
        let index_rows = rows.iter().filter(|(s, _)| *s == space_id::INDEX).map(|(_, t)| t.as_slice());
        let mut engine = Self::with_schema(space_rows, index_rows)?;
        let uuid = instance_uuid.hyphenated().to_string();
        let mut extra = Vec::new();
        let mut cluster = Vec::new();
        write::array_len(&mut cluster, 2);
        write::str(&mut cluster, b"cluster");
        write::str(&mut cluster, replicaset_uuid.hyphenated().to_string().as_bytes());
        extra.push((space_id::SCHEMA, cluster));
        let mut replica = Vec::new();
        write::array_len(&mut replica, 2);
        write::uint(&mut replica, 1);
        write::str(&mut replica, uuid.as_bytes());
        extra.push((space_id::CLUSTER, replica));
        for (sid, t) in rows.into_iter().chain(extra) {
            engine.load_row(sid, &t)?;
        }
        Ok(engine)
    }

    /// The replica set's uuid, as `_schema`'s cluster row keeps it.
    #[must_use]
    pub fn replicaset_uuid(&self) -> Option<String> {
        let pk = self.spaces.get(&space_id::SCHEMA)?.primary()?;
        let tuple = pk.get(&str_key(b"cluster"))?;
        let fields = tuple::split(tuple).ok()?;
        let mut r = crate::protocol::msgpack::Reader::new(fields.get(1)?);
        r.read_str().ok().map(|s| String::from_utf8_lossy(s).into_owned())
    }

    /// Every row the engine holds, as (space id, tuple), system spaces first.
    ///
    /// This is what a new data directory is initialized with.
    pub fn all_rows(&self) -> Vec<Change> {
        let mut out = Vec::new();
        self.for_each_stored_row(|space_id, pk, t| {
            out.push(Change::Row { space_id, pk: pk.clone(), old: None, new: Some(t.clone()) });
        });
        out
    }

    /// Refuses what was loaded if a memtx tuple takes more than `limit` bytes
    /// (`memtx_max_tuple_size` lowered below it: 2.6's recovery stops there).
    pub fn check_tuple_sizes(&self, limit: usize) -> BoxResult<()> {
        for space in self.spaces.values().filter(|s| s.def.engine == EngineKind::Memtx) {
            let Some(pk) = space.primary() else { continue };
            for t in pk.iter() {
                space.check_size_within(t, limit)?;
            }
        }
        Ok(())
    }

    /// Visits every row a data directory keeps (temporary spaces' are not):
    /// (space id, primary key, tuple), space by space, system spaces first.
    pub fn for_each_stored_row(&self, mut f: impl FnMut(u32, &Key, &Tuple)) {
        let mut spaces: Vec<&Space> = self.spaces.values().filter(|s| !s.def.temporary).collect();
        spaces.sort_by_key(|s| s.def.id);
        for space in spaces {
            let Some(pk) = space.primary() else { continue };
            for t in pk.iter() {
                if let Ok(key) = split(t).and_then(|fields| pk.entry_key(&fields)) {
                    f(space.def.id, &key, t);
                }
            }
        }
    }

    /// An engine with the spaces and indexes that `_space` and `_index` rows describe, and no data.
    pub fn with_schema<'a>(
        space_rows: impl Iterator<Item = &'a [u8]>,
        index_rows: impl Iterator<Item = &'a [u8]>,
    ) -> BoxResult<Self> {
        let mut spaces = IdMap::default();
        let memory = memory::Usage::default();
        for t in space_rows {
            let def = catalog::parse_space(t)?;
            spaces.insert(def.id, Space::counted(def, &memory));
        }
        let mut index_rows: Vec<&[u8]> = index_rows.collect();
        index_rows.sort_by_key(|t| catalog::index_ids(t));
        for t in index_rows {
            let (sid, _) = catalog::index_ids(t).ok_or_else(|| BoxError::invalid_msgpack("_index row"))?;
            let space = spaces.get_mut(&sid).ok_or_else(|| BoxError::no_such_space(&sid.to_string()))?;
            let def = catalog::parse_index(t, &space.def)?;
            space.add_index(def)?;
        }
        Ok(Self {
            spaces,
            schema_version: 1,
            creds: RefCell::new(IdMap::default()),
            changes: Vec::new(),
            acting: None,
            read_only: false,
            vinyl_frozen: false,
            token_miss: RefCell::new(None),
            funcs: RefCell::default(),
            service_clock: None,
            stats: stats::OpStats::default(),
            memory,
        })
    }

    /// Stores a row without catalogue side effects (bootstrap and recovery).
    ///
    /// The row was checked when it was first written, so only its keys are
    /// computed here.
    pub fn load_row(&mut self, space_id: u32, tuple: &[u8]) -> BoxResult<()> {
        self.space_mut(space_id)?.load(tuple.into())?;
        if space_id == space_id::COLLATION {
            define_collation(tuple, false)?;
        }
        if space_id == space_id::SPACE_SEQUENCE {
            self.relink_sequences();
        }
        Ok(())
    }

    /// Adds a space's stored tuples in one build of each index (recovery).
    pub fn load_rows(&mut self, space_id: u32, tuples: Vec<Tuple>) -> BoxResult<()> {
        if space_id == space_id::COLLATION {
            for t in &tuples {
                define_collation(t, false)?;
            }
        }
        self.space_mut(space_id)?.load_all(tuples)?;
        if space_id == space_id::SPACE_SEQUENCE {
            self.relink_sequences();
        }
        Ok(())
    }

    /// Sets a user's password, as `box.schema.user.passwd` does (a `_user` replace).
    pub fn set_password(&mut self, user: u32, password: &[u8]) -> BoxResult<()> {
        let name = self.user_name(user);
        let row = self
            .user_by_name(name.as_bytes())
            .ok_or_else(|| BoxError::new(code::NO_SUCH_USER, format!("User '{name}' is not found")))?;
        let mut t = Vec::new();
        write::array_len(&mut t, 5);
        write::uint(&mut t, u64::from(row.id));
        write::uint(&mut t, u64::from(row.owner));
        write::str(&mut t, row.name.as_bytes());
        write::str(&mut t, if row.is_role { b"role" } else { b"user" });
        write::map_len(&mut t, 1);
        write::str(&mut t, b"chap-sha1");
        write::str(&mut t, auth::stored_password(password).as_bytes());
        let admin = self.credentials(user_id::ADMIN);
        self.write(&admin, space_id::USER, &t, WriteMode::Replace)?;
        Ok(())
    }

    /// Creates `_idempotency` in a directory made before it existed, and drops the
    /// `created` index (id 1) that directories made before the window kept creation
    /// order itself still have; true if anything changed.
    pub fn ensure_idempotency_space(&mut self) -> BoxResult<bool> {
        let admin = self.credentials(user_id::ADMIN);
        if let Some(space) = self.spaces.get(&crate::idempotency::SPACE_ID) {
            let legacy = space.indexes.get(&1).is_some_and(|ix| ix.def.name == "created");
            if legacy {
                let mut key = Vec::new();
                write::array_len(&mut key, 2);
                write::uint(&mut key, u64::from(crate::idempotency::SPACE_ID));
                write::uint(&mut key, 1);
                self.delete(&admin, &Delete { space_id: space_id::INDEX, index_id: 0, key: &key })?;
            }
            return Ok(legacy);
        }
        self.write(&admin, space_id::SPACE, &crate::idempotency::space_row(), WriteMode::Insert)?;
        for row in crate::idempotency::index_rows() {
            self.write(&admin, space_id::INDEX, &row, WriteMode::Insert)?;
        }
        Ok(true)
    }

    /// The stored outcome for (user, token), if remembered.
    #[must_use]
    pub fn idempotency_record(&self, user: u32, token: &[u8]) -> Option<Tuple> {
        let pk = self.spaces.get(&crate::idempotency::SPACE_ID)?.primary()?;
        let key = idempotency_key(user, token)?;
        let (found, pre) = pk.get_prehashing(&key);
        if found.is_none() {
            *self.token_miss.borrow_mut() = Some(TokenMiss { user, token: token.to_vec(), key, pre });
        }
        found.cloned()
    }

    /// Stores an outcome record (as the system, whatever the session's rights) and
    /// returns it, with its key's hash in the primary key when that is known (for
    /// [`Self::warm_idempotency_records`] and [`Self::evict_idempotency_record`]),
    /// and the record it replaced (one that outlived its lifetime), if any.
    /// The window built the tuple, so it goes straight into the primary key
    /// without a client write's checks; if an admin gave `_idempotency` more
    /// indexes, the general write path keeps them all in step.
    pub fn put_idempotency_record(&mut self, user: u32, token: &[u8], tuple: &[u8]) -> BoxResult<StoredRecord> {
        let space_id = crate::idempotency::SPACE_ID;
        // The lookup that found no record for this token worked out its key and hash.
        let miss = self.token_miss.get_mut().take().filter(|m| m.user == user && m.token == token);
        let (key, pre) = match miss {
            Some(m) => (m.key, m.pre),
            None => (record_key(user, token)?, None),
        };
        let Some(pk) = self.sole_idempotency_pk()? else {
            let replaced = self.idempotency_record(user, token);
            let admin = self.credentials(user_id::ADMIN);
            let tuple = self.write(&admin, space_id, tuple, WriteMode::Replace)?;
            return Ok(StoredRecord { tuple, hashed: None, replaced });
        };
        let tuple: Tuple = tuple.into();
        let (old, hashed) = pk.put_prehashed(&key, pre, tuple.clone());
        self.acting = None;
        self.changes.push(Change::Row { space_id, pk: key, old: old.clone(), new: Some(tuple.clone()) });
        Ok(StoredRecord { tuple, hashed, replaced: old })
    }

    /// Starts reading where the records of (`user`, each of `tokens`) are looked up
    /// (a token as sent, a msgpack value): a batch's lookups among a million
    /// remembered tokens then miss the cache together, not one by one.
    pub fn warm_idempotency_tokens<'t>(&self, user: u32, tokens: impl Iterator<Item = &'t [u8]>) {
        let Some(pk) = self.spaces.get(&crate::idempotency::SPACE_ID).and_then(Space::primary) else {
            return;
        };
        // Hashing first: warming back to back leaves room for the misses to overlap.
        let hashes: smallvec::SmallVec<[index::Prehashed; 64]> =
            tokens.filter_map(|t| pk.prehash(&idempotency_key(user, t)?)).collect();
        for pre in hashes {
            pk.warm(pre);
        }
    }

    /// Starts reading the records about to be evicted and their primary key
    /// entries, all at once: each is a cache miss, and the removals that follow
    /// would otherwise wait for them one by one.
    pub fn warm_idempotency_records<'t>(&self, records: impl Iterator<Item = (&'t Tuple, Option<index::Prehashed>)>) {
        let Some(pk) = self.spaces.get(&crate::idempotency::SPACE_ID).and_then(Space::primary) else {
            return;
        };
        for (tuple, hashed) in records {
            crate::prefetch::read(Rc::as_ptr(tuple));
            if let Some(pre) = hashed {
                pk.warm(pre);
            }
        }
    }

    /// Evicts the outcome record `tuple` stored under (`user`, `token`), recorded
    /// like any delete unless `logged` is false (the window logs a records floor
    /// instead, or [`Self::log_evicted_record`] later); returns `false`, changing
    /// nothing, when the key holds another tuple or none (the record was deleted
    /// or replaced meanwhile).
    ///
    /// With only its primary key (the usual case) the record is found by its key's
    /// hash and its identity: no key is read back from the tuple. With more
    /// indexes, the general path records the delete whatever `logged` says.
    pub fn evict_idempotency_record(
        &mut self,
        user: u32,
        token: &[u8],
        tuple: &Tuple,
        hashed: Option<index::Prehashed>,
        logged: bool,
    ) -> BoxResult<bool> {
        let space_id = crate::idempotency::SPACE_ID;
        if let (false, Some(pre)) = (logged, hashed) {
            // Unlogged, with the entry's hash: no key to build.
            if let Some(removed) = self.sole_idempotency_pk()?.and_then(|pk| pk.remove_exact_hashed(pre, tuple)) {
                return Ok(removed);
            }
        }
        let key = record_key(user, token)?;
        let Some(pk) = self.sole_idempotency_pk()? else {
            let current =
                self.space(space_id)?.primary().and_then(|pk| pk.get(&key)).is_some_and(|t| Rc::ptr_eq(t, tuple));
            if current {
                self.remove_tuple(space_id, tuple)?;
            }
            return Ok(current);
        };
        if !pk.remove_exact_prehashed(&key, hashed, tuple) {
            return Ok(false);
        }
        if logged {
            self.acting = None;
            self.changes.push(Change::Row { space_id, pk: key, old: Some(tuple.clone()), new: None });
        }
        Ok(true)
    }

    /// Records the delete of a record evicted unlogged by
    /// [`Self::evict_idempotency_record`], which the records floor does not cover.
    pub fn log_evicted_record(&mut self, user: u32, token: &[u8], tuple: &Tuple) {
        // The key was made from these fields when the record was evicted.
        let Some(key) = idempotency_key(user, token) else { return };
        self.acting = None;
        let space_id = crate::idempotency::SPACE_ID;
        self.changes.push(Change::Row { space_id, pk: key, old: Some(tuple.clone()), new: None });
    }

    /// `_idempotency`'s primary key, for the record fast paths, when it is the
    /// space's only index and the space is logged (the usual case); `None` sends
    /// them down the general write path, which keeps every index in step.
    fn sole_idempotency_pk(&mut self) -> BoxResult<Option<&mut Index>> {
        let space = self.space_mut(crate::idempotency::SPACE_ID)?;
        if space.indexes.len() != 1 || space.def.temporary {
            return Ok(None);
        }
        space.indexes.get_mut(&0).map(Some).ok_or_else(|| BoxError::no_such_index_id(0, "_idempotency"))
    }

    /// Removes a stored tuple (eviction); recorded like any delete.
    fn remove_tuple(&mut self, space_id: u32, tuple: &Tuple) -> BoxResult<()> {
        self.acting = None;
        self.space_mut(space_id)?.unlink(tuple)?;
        self.after_write(space_id, Some(tuple.clone()), None)
    }

    /// Checks the rights a write request needs, without running it (the replay path).
    pub fn check_write_access(
        &self,
        creds: &Credentials,
        req: &crate::protocol::request::Request<'_>,
    ) -> BoxResult<()> {
        use crate::protocol::request::Request;
        let space = match req {
            Request::Insert(w) | Request::Replace(w) => w.space_id,
            Request::Update(u) => u.space_id,
            Request::Upsert(u) => u.space_id,
            Request::Delete(d) => d.space_id,
            Request::Call(c) | Request::Call16(c) => return self.check_call_access(creds, c.name).map(|_| ()),
            Request::Eval(_) => return self.check_eval_access(creds),
            Request::Select(_) | Request::Ping | Request::Auth(_) | Request::Execute(_) | Request::Prepare(_) => {
                return Ok(())
            }
        };
        self.writable_space(creds, space).map(|_| ())
    }

    /// The current schema version (bumped by DDL only).
    #[must_use]
    pub fn schema_version(&self) -> u64 {
        self.schema_version
    }

    /// Number of changes recorded and not yet taken (a transaction's savepoint).
    #[must_use]
    pub fn pending_changes(&self) -> usize {
        self.changes.len()
    }

    /// Undoes, newest first, every change recorded after `mark` (`box.rollback`).
    pub fn rollback_to(&mut self, mark: usize) {
        while self.changes.len() > mark {
            let Some(change) = self.changes.pop() else { break };
            let kept = std::mem::take(&mut self.changes);
            self.undo(change);
            self.changes = kept;
        }
    }

    /// The changes recorded after `mark` (for `on_replace` triggers), oldest first.
    #[must_use]
    pub fn changes_since(&self, mark: usize) -> &[Change] {
        self.changes.get(mark..).unwrap_or(&[])
    }

    /// Takes the changes recorded since the last call.
    pub fn take_changes(&mut self) -> Vec<Change> {
        std::mem::take(&mut self.changes)
    }

    /// Gives back a vector [`Self::take_changes`] returned, emptied, so that the
    /// next request records its changes without allocating one.
    pub fn recycle_changes(&mut self, mut spent: Vec<Change>) {
        if self.changes.capacity() == 0 {
            spent.clear();
            self.changes = spent;
        }
    }

    /// The space with this id, or ER_NO_SUCH_SPACE.
    pub fn space(&self, id: u32) -> BoxResult<&Space> {
        self.spaces.get(&id).ok_or_else(|| BoxError::no_such_space(&id.to_string()))
    }

    fn space_mut(&mut self, id: u32) -> BoxResult<&mut Space> {
        self.spaces.get_mut(&id).ok_or_else(|| BoxError::no_such_space(&id.to_string()))
    }

    /// Every space, in no particular order.
    pub fn spaces(&self) -> impl Iterator<Item = &Space> {
        self.spaces.values()
    }

    /// Bytes the spaces' tuples and index entries take of `memtx_memory` ([`memory`]).
    #[must_use]
    pub fn memory_used(&self) -> usize {
        self.memory.used()
    }

    // ----- users and privileges -------------------------------------------------

    /// The effective rights of a user (cached until `_user` or `_priv` changes).
    pub fn credentials(&self, user: u32) -> Rc<Credentials> {
        if let Some(c) = self.creds.borrow().get(&user) {
            return c.clone();
        }
        let grants: Vec<Grant> = self.grants().collect();
        let mut c = Credentials::compute(user, &grants);
        if user == user_id::ADMIN {
            c.universe = privilege::ALL;
        }
        let c = Rc::new(c);
        self.creds.borrow_mut().insert(user, c.clone());
        c
    }

    /// A user row by name.
    #[must_use]
    pub fn user_by_name(&self, name: &[u8]) -> Option<catalog::UserRow> {
        let index = self.spaces.get(&space_id::USER)?.indexes.get(&2)?;
        index.get(&str_key(name)).and_then(|t| catalog::parse_user(t).ok())
    }

    /// Refuses a grant of a role that would make the roles' graph a loop (2.6's
    /// role_check): the role may not be the grantee, nor anyone the grantee is
    /// granted to, directly or through other roles.
    fn check_role_loop(&self, grant: &Grant) -> BoxResult<()> {
        let (ObjectType::Role, Some(role)) = (grant.object_type, grant.object_id) else { return Ok(()) };
        let role_grants: Vec<Grant> =
            self.grants().filter(|g| g.object_type == ObjectType::Role && g.privilege != 0).collect();
        // Everyone the grantee is granted to, layer by layer.
        let mut reached = vec![grant.grantee];
        let mut next = 0;
        while let Some(&user) = reached.get(next) {
            next += 1;
            for g in role_grants.iter().filter(|g| g.object_id == Some(user)) {
                if !reached.contains(&g.grantee) {
                    reached.push(g.grantee);
                }
            }
        }
        if reached.contains(&role) {
            return Err(BoxError::new(
                code::ROLE_LOOP,
                format!(
                    "Granting role '{}' to role '{}' would create a loop",
                    self.user_name(role),
                    self.user_name(grant.grantee)
                ),
            ));
        }
        Ok(())
    }

    /// A `_user` row by id.
    #[must_use]
    pub fn user_by_id(&self, id: u32) -> Option<catalog::UserRow> {
        self.row_by_id(space_id::USER, id).and_then(|t| catalog::parse_user(t).ok())
    }

    /// The row of a system space whose primary key is `[id]` (`_user`, `_space`...).
    fn row_by_id(&self, space: u32, id: u32) -> Option<&Tuple> {
        self.spaces.get(&space)?.primary()?.get(&Key(smallvec::smallvec![KeyPart::Uint(u64::from(id))]))
    }

    /// Every grant `_priv` holds.
    fn grants(&self) -> impl Iterator<Item = Grant> + '_ {
        self.spaces
            .get(&space_id::PRIV)
            .and_then(Space::primary)
            .into_iter()
            .flat_map(|pk| pk.iter().filter_map(|t| access::parse_grant(t)))
    }

    /// A user's name by id (for messages).
    #[must_use]
    pub fn user_name(&self, id: u32) -> String {
        self.user_by_id(id).map_or_else(|| id.to_string(), |u| u.name)
    }

    /// A `_func` row by name.
    #[must_use]
    pub fn func_by_name(&self, name: &[u8]) -> Option<catalog::FuncRow> {
        let index = self.spaces.get(&space_id::FUNC)?.indexes.get(&2)?;
        index.get(&str_key(name)).and_then(|t| catalog::parse_func(t).ok())
    }

    /// What CALL needs of the `_func` row named `name`, remembered until `_func` changes.
    fn func_access(&self, name: &[u8]) -> Option<FuncAccess> {
        if let Some(found) = self.funcs.borrow().get(name) {
            return *found;
        }
        let found = self.func_by_name(name).map(|f| FuncAccess {
            id: f.id,
            owner: f.owner,
            setuid: f.setuid,
            persistent: f.persistent,
        });
        let mut funcs = self.funcs.borrow_mut();
        // Names of functions that do not exist are remembered too: bounded.
        if funcs.len() >= MAX_REMEMBERED_FUNCS {
            funcs.clear();
        }
        funcs.insert(name.into(), found);
        found
    }

    /// Checks an AUTH request and returns the user id the session becomes.
    pub fn authenticate(&self, user: &[u8], tuple: &[u8], salt: &[u8]) -> BoxResult<u32> {
        let name = String::from_utf8_lossy(user);
        let row = self
            .user_by_name(user)
            .filter(|u| !u.is_role)
            .ok_or_else(|| BoxError::new(code::NO_SUCH_USER, format!("User '{name}' is not found")))?;
        let items = split(tuple).map_err(|_| BoxError::invalid_msgpack("authentication request body"))?;
        if row.id == user_id::GUEST && items.is_empty() {
            return Ok(user_id::GUEST);
        }
        let scramble = items.get(1).ok_or_else(|| BoxError::invalid_msgpack("authentication request body"))?;
        let scramble = Reader::new(scramble)
            .read_str_or_bin()
            .map_err(|_| BoxError::invalid_msgpack("authentication scramble"))?;
        if scramble.len() != auth::SCRAMBLE_SIZE {
            return Err(BoxError::invalid_msgpack("invalid scramble size"));
        }
        let stored = row.chap_sha1.as_deref().and_then(auth::decode_stored);
        let ok = stored.is_some_and(|hash2| auth::check(salt, &hash2, scramble));
        if !ok {
            return Err(BoxError::new(
                code::PASSWORD_MISMATCH,
                format!("Incorrect password supplied for user '{name}'"),
            ));
        }
        let creds = self.credentials(row.id);
        if creds.universe & privilege::SESSION == 0 {
            return Err(BoxError::access_denied("Session", "universe", "", &name));
        }
        Ok(row.id)
    }

    fn check_usage(&self, creds: &Credentials) -> BoxResult<()> {
        if creds.universe & privilege::USAGE == 0 {
            let name = self.user_name(creds.user_id);
            // A session whose user was dropped: 2.6 reports the user missing, by id.
            if name == creds.user_id.to_string() {
                return Err(BoxError::new(code::NO_SUCH_USER, format!("User '{name}' is not found")));
            }
            return Err(BoxError::access_denied("Usage", "universe", "", &name));
        }
        Ok(())
    }

    fn check_space_access(&self, creds: &Credentials, space: &Space, want: u32) -> BoxResult<()> {
        self.check_usage(creds)?;
        if !creds.has(ObjectType::Space, space.def.id, Some(space.def.owner), want) {
            return Err(BoxError::access_denied(
                access_name(want),
                "space",
                &space.def.name,
                &self.user_name(creds.user_id),
            ));
        }
        Ok(())
    }

    /// The number of tuples in a space, for a user with the right to read it
    /// (`space:len()`, `count()`, as 2.6 checks them).
    pub fn space_len(&self, creds: &Credentials, space_id: u32) -> BoxResult<usize> {
        let space = self.space(space_id)?;
        self.check_space_access(creds, space, privilege::READ)?;
        Ok(space.len())
    }

    /// The number of entries of an index (of tuples, but for a multikey index).
    pub fn index_len(&self, creds: &Credentials, space_id: u32, index_id: u32) -> BoxResult<usize> {
        let space = self.space(space_id)?;
        self.check_space_access(creds, space, privilege::READ)?;
        Ok(space.index(index_id)?.len())
    }

    /// Checks the right to write a space (`space:truncate()` needs no more, as in 2.6).
    pub fn check_space_write(&self, creds: &Credentials, space_id: u32) -> BoxResult<()> {
        self.check_space_access(creds, self.space(space_id)?, privilege::WRITE)
    }

    /// Checks the right to call `name` (a `_func` entry or, failing that, any global);
    /// returns the `_func` entry, if there is one.
    pub fn check_call_access(&self, creds: &Credentials, name: &[u8]) -> BoxResult<Option<FuncAccess>> {
        self.check_usage(creds)?;
        let func = self.func_access(name);
        let allowed = match &func {
            Some(f) => creds.has(ObjectType::Function, f.id, Some(f.owner), privilege::EXECUTE),
            None => creds.universe & privilege::EXECUTE != 0,
        };
        if !allowed {
            return Err(BoxError::access_denied(
                "Execute",
                "function",
                &String::from_utf8_lossy(name),
                &self.user_name(creds.user_id),
            ));
        }
        Ok(func)
    }

    /// Checks the right to EVAL (execute on universe).
    pub fn check_eval_access(&self, creds: &Credentials) -> BoxResult<()> {
        self.check_usage(creds)?;
        if creds.universe & privilege::EXECUTE == 0 {
            return Err(BoxError::access_denied("Execute", "universe", "", &self.user_name(creds.user_id)));
        }
        Ok(())
    }

    // ----- reads ------------------------------------------------------------------

    /// SELECT: the matching tuples, after offset and limit.
    pub fn select(&self, creds: &Credentials, req: &Select<'_>) -> BoxResult<Vec<Tuple>> {
        let mut out = Vec::new();
        self.select_each(creds, req, |t| out.push(t.clone()))?;
        Ok(out)
    }

    /// SELECT, handing each tuple to `emit` in order instead of collecting them.
    pub fn select_each(&self, creds: &Credentials, req: &Select<'_>, emit: impl FnMut(&Tuple)) -> BoxResult<()> {
        self.stats.record(stats::OpKind::Select, self.scan_select(creds, req, None, emit))
    }

    /// SELECT of what comes after tuple `after` (msgpack, one the same select
    /// gave) in a TREE index's order: how a Lua `pairs()` reads on in chunks.
    ///
    /// # Errors
    /// As [`Self::select`]; the index is not a TREE, or is multikey.
    pub fn select_after(&self, creds: &Credentials, req: &Select<'_>, after: &[u8]) -> BoxResult<Vec<Tuple>> {
        let mut out = Vec::new();
        let found = self.scan_select(creds, req, Some(after), |t| out.push(t.clone()));
        self.stats.record(stats::OpKind::Select, found)?;
        Ok(out)
    }

    fn scan_select(
        &self,
        creds: &Credentials,
        req: &Select<'_>,
        after: Option<&[u8]>,
        mut emit: impl FnMut(&Tuple),
    ) -> BoxResult<()> {
        let space = self.space(req.space_id)?;
        self.check_space_access(creds, space, privilege::READ)?;
        let it = IteratorType::from_code(req.iterator)?;
        let source = match space.def.engine {
            EngineKind::Sysview => {
                let src = catalog::view_source(space.def.id).ok_or_else(|| BoxError::no_such_space(&space.def.name))?;
                self.space(src)?
            }
            EngineKind::Blackhole => {
                space.index(req.index_id)?;
                return Ok(());
            }
            EngineKind::Memtx | EngineKind::Vinyl => space,
        };
        let index = space.index(req.index_id)?;
        let source_index = source.index(req.index_id)?;
        let key = index.parse_key(req.key)?;
        let after = match after {
            Some(_) if source_index.is_multikey() => {
                return Err(BoxError::illegal_params("A multikey index's scan does not go on after a tuple"))
            }
            Some(raw) => Some(source_index.entry_key(&tuple::split(raw)?)?),
            None => None,
        };
        let mut skip = req.offset;
        let limit = req.limit as usize;
        if limit == 0 {
            return Ok(());
        }
        let mut emitted = 0;
        let view = (space.def.engine == EngineKind::Sysview).then_some((space.def.id, source));
        source_index.scan_after(it, &key, &space.def.name, after.as_ref(), |t| {
            if let Some((view_id, src)) = view {
                if !self.view_shows(creds, view_id, src, t) {
                    return true;
                }
            }
            if skip > 0 {
                skip -= 1;
                return true;
            }
            emit(t);
            emitted += 1;
            emitted < limit
        })
    }

    /// `index:get(key)`: the one tuple a full unique key names.
    pub fn get(&self, creds: &Credentials, space_id: u32, index_id: u32, key: &[u8]) -> BoxResult<Option<Tuple>> {
        self.stats.record(stats::OpKind::Select, self.get_uncounted(creds, space_id, index_id, key))
    }

    fn get_uncounted(&self, creds: &Credentials, space_id: u32, index_id: u32, key: &[u8]) -> BoxResult<Option<Tuple>> {
        let space = self.space(space_id)?;
        self.check_space_access(creds, space, privilege::READ)?;
        let index = space.index(index_id)?;
        let key = index.parse_exact_key(key)?;
        Ok(index.get(&key).cloned())
    }

    /// Whether a system view shows `tuple` of its source space to this user, by
    /// 2.6's sysview filters: read, write, drop or alter (execute too, for
    /// functions and sequences) on the universe or on the object's whole type,
    /// read on the source space, or the object's own: its owner, rights on it, a
    /// grant one gave or holds, oneself and public among users.
    fn view_shows(&self, creds: &Credentials, view: u32, source: &Space, tuple: &Tuple) -> bool {
        const WRDA: u32 = privilege::WRITE | privilege::READ | privilege::DROP | privilege::ALTER;
        let wide = match view {
            space_id::VFUNC | space_id::VSEQUENCE => WRDA | privilege::EXECUTE,
            _ => WRDA,
        };
        if view == space_id::VCOLLATION || creds.universe & wide != 0 {
            return true;
        }
        let entity = match view {
            space_id::VSPACE | space_id::VINDEX => creds.entity(ObjectType::Space),
            space_id::VFUNC => creds.entity(ObjectType::Function),
            space_id::VSEQUENCE => creds.entity(ObjectType::Sequence),
            _ => 0,
        };
        if entity & wide != 0 || creds.object(ObjectType::Space, source.def.id) & privilege::READ != 0 {
            return true;
        }
        let Ok(fields) = split(tuple) else {
            return false;
        };
        let uint = |i: usize| {
            fields.get(i).and_then(|f| Reader::new(f).read_uint().ok()).map(|v| u32::try_from(v).unwrap_or(u32::MAX))
        };
        let uid = creds.user_id;
        match view {
            space_id::VSPACE | space_id::VINDEX => {
                let Some(sid) = uint(0) else { return false };
                self.spaces
                    .get(&sid)
                    .is_some_and(|s| s.def.owner == uid || creds.object(ObjectType::Space, sid) & wide != 0)
            }
            space_id::VUSER => uint(0) == Some(uid) || uint(1) == Some(uid) || uint(0) == Some(user_id::PUBLIC),
            space_id::VPRIV => uint(0) == Some(uid) || uint(1) == Some(uid),
            space_id::VFUNC => {
                uint(1) == Some(uid) || uint(0).is_some_and(|id| creds.object(ObjectType::Function, id) & wide != 0)
            }
            space_id::VSEQUENCE => {
                uint(1) == Some(uid) || uint(0).is_some_and(|id| creds.object(ObjectType::Sequence, id) & wide != 0)
            }
            _ => true,
        }
    }

    // ----- writes -----------------------------------------------------------------

    /// Runs the next writes as `creds` (DDL rights are checked against them).
    fn act_as(&mut self, creds: &Credentials) {
        // The cached `Rc` of the same user: no copy on the write path.
        self.acting = (creds.user_id != user_id::ADMIN).then(|| self.credentials(creds.user_id));
    }

    /// Checks a DDL right: universal grants and grants on the space count; owners
    /// may alter and drop what they own.
    fn check_ddl(&self, want: u32, space: u32, name: &str, owner: u32) -> BoxResult<()> {
        let Some(c) = self.acting.as_ref() else { return Ok(()) };
        if c.universe & want == want || (want != privilege::CREATE && owner == c.user_id) {
            return Ok(());
        }
        if c.on(ObjectType::Space, space) & want == want {
            return Ok(());
        }
        Err(BoxError::access_denied(access_name(want), "space", name, &self.user_name(c.user_id)))
    }

    fn check_func_create(&self, name: &str) -> BoxResult<()> {
        let Some(c) = self.acting.as_ref() else { return Ok(()) };
        let on_functions = c.universe | c.on(ObjectType::Function, u32::MAX);
        if on_functions & privilege::CREATE == privilege::CREATE {
            return Ok(());
        }
        Err(BoxError::access_denied("Create", "function", name, &self.user_name(c.user_id)))
    }

    /// Sets or clears read-only mode (`box.cfg{read_only = ...}`).
    pub fn set_read_only(&mut self, on: bool) {
        self.read_only = on;
    }

    /// Under `wal_mode = 'none'`: vinyl spaces refuse DDL and DML from now on.
    pub fn freeze_vinyl(&mut self) {
        self.vinyl_frozen = true;
    }

    /// 2.6's refusal of a vinyl change without a WAL (`what`: DDL or DML), if
    /// `space_id` is a vinyl space and there is none.
    fn check_vinyl_change(&self, space_id: u32, what: &str) -> BoxResult<()> {
        if self.vinyl_frozen && self.spaces.get(&space_id).is_some_and(|s| s.def.engine == EngineKind::Vinyl) {
            return Err(BoxError::new(
                code::UNSUPPORTED,
                format!("Vinyl does not support {what} if wal_mode = 'none'"),
            ));
        }
        Ok(())
    }

    /// Whether the instance is read-only (`box.info.ro`): by `box.cfg{read_only}`,
    /// or as an orphan waiting for its replication sources.
    #[must_use]
    pub fn is_read_only(&self) -> bool {
        self.read_only || crate::upstreams::is_orphan()
    }

    fn writable_space(&self, creds: &Credentials, space_id: u32) -> BoxResult<&Space> {
        let space = self.space(space_id)?;
        if self.is_read_only() && !space.def.temporary {
            return Err(BoxError::new(code::READONLY, "Can't modify data because this instance is in read-only mode."));
        }
        self.check_space_access(creds, space, privilege::WRITE)?;
        if space.def.engine == EngineKind::Sysview {
            return Err(BoxError::new(code::VIEW_IS_RO, format!("View '{}' is read-only", space.def.name)));
        }
        self.check_vinyl_change(space_id, "DML")?;
        Ok(space)
    }

    /// INSERT or REPLACE; returns the stored tuple.
    pub fn write(&mut self, creds: &Credentials, space_id: u32, tuple: &[u8], mode: WriteMode) -> BoxResult<Tuple> {
        let kind = match mode {
            WriteMode::Insert => stats::OpKind::Insert,
            WriteMode::Replace => stats::OpKind::Replace,
        };
        let result = self.write_uncounted(creds, space_id, tuple, mode);
        self.stats.record(kind, result)
    }

    fn write_uncounted(
        &mut self,
        creds: &Credentials,
        space_id: u32,
        tuple: &[u8],
        mode: WriteMode,
    ) -> BoxResult<Tuple> {
        self.act_as(creds);
        let space = self.writable_space(creds, space_id)?;
        if space.def.engine == EngineKind::Blackhole {
            return Ok(tuple.into());
        }
        // A space with a sequence gets its field filled (and the sequence moved) first.
        let filled;
        let (space, tuple) = match space.sequence {
            None => (space, tuple),
            Some(link) => {
                filled = self.apply_sequence(link, tuple)?;
                self.act_as(creds);
                (self.space(space_id)?, filled.as_deref().unwrap_or(tuple))
            }
        };
        let tuple: Tuple = tuple.into();
        let fields = space.validate(&tuple)?;
        let space = self.space_mut(space_id)?;
        let (old, key) = space.write_keyed(tuple.clone(), &fields, mode, None)?;
        drop(fields);
        self.after_write_keyed(space_id, old, Some(tuple.clone()), key)?;
        Ok(tuple)
    }

    /// UPDATE; returns the new tuple, or `None` when the key matches nothing.
    pub fn update(&mut self, creds: &Credentials, req: &Update<'_>) -> BoxResult<Option<Tuple>> {
        let result = self.update_uncounted(creds, req);
        self.stats.record(stats::OpKind::Update, result)
    }

    fn update_uncounted(&mut self, creds: &Credentials, req: &Update<'_>) -> BoxResult<Option<Tuple>> {
        self.act_as(creds);
        let space = self.writable_space(creds, req.space_id)?;
        let index = space.index(req.index_id)?;
        let key = index.parse_exact_key(req.key)?;
        // As 2.6: the operations are read only when the key names a tuple, so
        // an UPDATE of a missing key succeeds whatever they hold.
        let Some(old) = index.get(&key).cloned() else {
            return Ok(None);
        };
        let ops = update::parse_ops(req.ops, req.index_base)?;
        let assembled = update::apply_to_tuple(&ops, &old, space)?;
        let new = assembled.tuple.clone();
        let fields = assembled.fields();
        space.validate_update(&new, &fields, assembled.changed_fields())?;
        let space = self.space_mut(req.space_id)?;
        let (replaced, key) = space.write_keyed(new.clone(), &fields, WriteMode::Replace, Some(&old))?;
        drop(fields);
        self.after_write_keyed(req.space_id, replaced, Some(new.clone()), key)?;
        Ok(Some(new))
    }

    /// UPSERT: inserts the tuple, or applies the operations to the existing one.
    ///
    /// As in Tarantool, an operation that fails on the existing tuple is logged
    /// and skipped rather than reported.
    pub fn upsert(&mut self, creds: &Credentials, req: &Upsert<'_>) -> BoxResult<()> {
        let result = self.upsert_uncounted(creds, req);
        self.stats.record(stats::OpKind::Upsert, result)
    }

    fn upsert_uncounted(&mut self, creds: &Credentials, req: &Upsert<'_>) -> BoxResult<()> {
        self.act_as(creds);
        let space = self.writable_space(creds, req.space_id)?;
        let ops = update::parse_ops(req.ops, req.index_base)?;
        // As 2.6: the operations name fields that exist even when none applies.
        update::check_names(&ops, space)?;
        let tuple: Tuple = req.tuple.into();
        let fields = space.validate(&tuple)?;
        let pk = space.require_primary()?;
        let Some(old) = pk.get(&pk.entry_key(&fields)?).cloned() else {
            // Nothing to update: the tuple goes in as it is, checked once.
            let space = self.space_mut(req.space_id)?;
            let (replaced, key) = space.write_keyed(tuple.clone(), &fields, WriteMode::Replace, None)?;
            drop(fields);
            return self.after_write_keyed(req.space_id, replaced, Some(tuple), key);
        };
        drop(fields);
        let old_fields = split(&old)?;
        let assembled = update::apply_skipping_failures(&ops, &old_fields, space)?;
        drop(old_fields);
        let new = assembled.tuple.clone();
        let fields = assembled.fields();
        space.validate_split(&new, &fields)?;
        let space = self.space_mut(req.space_id)?;
        let written = space.write_keyed(new.clone(), &fields, WriteMode::Replace, Some(&old));
        drop(fields);
        match written {
            Ok((replaced, key)) => self.after_write_keyed(req.space_id, replaced, Some(new), key),
            // An UPSERT that would change the primary key leaves the tuple as it was.
            Err(e) if e.code == code::CANT_UPDATE_PRIMARY_KEY => {
                tracing::warn!(error = %e, "UPSERT operation failed");
                Ok(())
            }
            Err(e) => Err(e),
        }
    }

    /// DELETE; returns the removed tuple.
    pub fn delete(&mut self, creds: &Credentials, req: &Delete<'_>) -> BoxResult<Option<Tuple>> {
        let result = self.delete_uncounted(creds, req);
        self.stats.record(stats::OpKind::Delete, result)
    }

    fn delete_uncounted(&mut self, creds: &Credentials, req: &Delete<'_>) -> BoxResult<Option<Tuple>> {
        self.act_as(creds);
        let space = self.writable_space(creds, req.space_id)?;
        let index = space.index(req.index_id)?;
        let key = index.parse_exact_key(req.key)?;
        let Some(old) = index.get(&key).cloned() else {
            return Ok(None);
        };
        let space = self.space_mut(req.space_id)?;
        space.unlink(&old)?;
        self.after_write(req.space_id, Some(old.clone()), None)?;
        Ok(Some(old))
    }

    /// Runs catalogue side effects of a write, undoing the write if they fail, and records it.
    fn after_write(&mut self, space_id: u32, old: Option<Tuple>, new: Option<Tuple>) -> BoxResult<()> {
        if space_id < space_id::USER_MIN {
            // Rights first (a live change only: undo and recovery do not come here).
            let checked = self.check_ddl_rights(space_id, old.as_ref(), new.as_ref());
            if let Err(e) = checked.and_then(|()| self.apply_ddl(space_id, old.as_ref(), new.as_ref())) {
                self.undo_row(space_id, old.as_ref(), new.as_ref())?;
                return Err(e);
            }
        }
        self.record(space_id, old, new);
        Ok(())
    }

    /// [`Self::after_write`] for a write that computed the row's primary key already.
    fn after_write_keyed(
        &mut self,
        space_id: u32,
        old: Option<Tuple>,
        new: Option<Tuple>,
        key: value::Key,
    ) -> BoxResult<()> {
        // A catalogue change may rebuild a primary key: its row is keyed afresh.
        if space_id < space_id::USER_MIN && space_id != crate::idempotency::SPACE_ID {
            return self.after_write(space_id, old, new);
        }
        if space_id == crate::idempotency::SPACE_ID {
            if let Err(e) = self.check_record_time(new.as_ref()) {
                self.undo_row(space_id, old.as_ref(), new.as_ref())?;
                return Err(e);
            }
        }
        if self.spaces.get(&space_id).is_some_and(|s| !s.def.temporary) {
            self.changes.push(Change::Row { space_id, pk: key, old, new });
        }
        Ok(())
    }

    /// Records a row change for storage (temporary spaces are not persisted).
    fn record(&mut self, space_id: u32, old: Option<Tuple>, new: Option<Tuple>) {
        let Some(space) = self.spaces.get(&space_id).filter(|s| !s.def.temporary) else { return };
        let Some(pk) = space.primary() else { return };
        let Some(row) = new.as_ref().or(old.as_ref()) else { return };
        match split(row).and_then(|f| pk.entry_key(&f)) {
            Ok(key) => self.changes.push(Change::Row { space_id, pk: key, old, new }),
            Err(e) => tracing::error!(space_id, error = %e, "cannot key a changed row"),
        }
    }

    /// Records that a space lost all its rows, then (after a primary key
    /// rebuild) every row it holds again under the new key.
    fn record_reset(&mut self, space_id: u32, removed: Vec<Tuple>) {
        if self.spaces.get(&space_id).is_none_or(|s| s.def.temporary) {
            return;
        }
        self.changes.push(Change::Truncate { space_id, removed });
        let rows: Vec<Tuple> = self
            .spaces
            .get(&space_id)
            .and_then(Space::primary)
            .map(|pk| pk.iter().cloned().collect())
            .unwrap_or_default();
        for t in rows {
            self.record(space_id, None, Some(t));
        }
    }

    /// Reverts one change made in memory whose commit failed (newest first).
    ///
    /// Best effort for DDL: the catalogue effect is reverted by applying the
    /// inverse row change; failures are logged.
    pub fn undo(&mut self, change: Change) {
        self.acting = None;
        match change {
            Change::Row { space_id, old, new, .. } => {
                if let Err(e) = self.undo_row(space_id, old.as_ref(), new.as_ref()) {
                    tracing::error!(space_id, error = %e, "undo failed");
                }
                if space_id < space_id::USER_MIN {
                    if let Err(e) = self.apply_ddl(space_id, new.as_ref(), old.as_ref()) {
                        tracing::error!(space_id, error = %e, "undo of a schema change failed");
                    }
                    self.changes.clear();
                }
            }
            Change::Truncate { space_id, removed } => {
                if space_id == space_id::FUNC {
                    self.funcs.borrow_mut().clear();
                }
                let Ok(space) = self.space_mut(space_id) else { return };
                space.truncate();
                for t in removed {
                    let result = split(&t).and_then(|f| space.restore(t.clone(), &f));
                    if let Err(e) = result {
                        tracing::error!(space_id, error = %e, "undo of a truncate failed");
                    }
                }
            }
        }
    }

    fn undo_row(&mut self, space_id: u32, old: Option<&Tuple>, new: Option<&Tuple>) -> BoxResult<()> {
        let space = self.space_mut(space_id)?;
        if let Some(new) = new {
            space.unlink(new)?;
        }
        if let Some(old) = old {
            let fields = split(old)?;
            space.restore(old.clone(), &fields)?;
        }
        Ok(())
    }

    /// Applies the meaning of a system-space row change (create a space, an index, …).
    fn apply_ddl(&mut self, sid: u32, old: Option<&Tuple>, new: Option<&Tuple>) -> BoxResult<()> {
        // A vinyl space may be created without a WAL; any later change of it is refused.
        let altered = match sid {
            space_id::SPACE | space_id::TRUNCATE => old.and_then(|t| catalog::first_uint(t)),
            space_id::INDEX => new.or(old).and_then(|t| catalog::index_ids(t)).map(|(space, _)| space),
            _ => None,
        };
        if let Some(space) = altered {
            self.check_vinyl_change(space, "DDL")?;
        }
        match sid {
            space_id::SPACE => self.ddl_space(old, new)?,
            space_id::INDEX => self.ddl_index(old, new)?,
            space_id::TRUNCATE => {
                // As in Tarantool, a new row only registers the space; replacing it truncates.
                if let (Some(_), Some(id)) = (old, new.and_then(|t| catalog::first_uint(t))) {
                    let space = self.space_mut(id)?;
                    let removed: Vec<Tuple> =
                        space.primary().map(|pk| pk.iter().cloned().collect()).unwrap_or_default();
                    space.truncate();
                    self.record_reset(id, removed);
                    if id == space_id::FUNC {
                        self.funcs.borrow_mut().clear();
                    }
                }
                // 2.6 keeps the schema version across truncation.
                return Ok(());
            }
            space_id::USER | space_id::PRIV => {
                if let Some(t) = new.filter(|_| sid == space_id::USER) {
                    catalog::check_object_name(sid, t)?;
                }
                self.creds.borrow_mut().clear();
                return Ok(());
            }
            space_id::FUNC => {
                if let Some(t) = new {
                    catalog::check_object_name(sid, t)?;
                }
                if let (Some(old), None) = (old, new) {
                    self.check_func_drop(old)?;
                }
                if let (Some(old), Some(new)) = (old, new) {
                    // As in 2.6, a function's definition cannot change in place
                    // (rewriting the same definition is allowed; its times may differ).
                    if catalog::func_definition(old)? != catalog::func_definition(new)? {
                        return Err(BoxError::new(code::UNSUPPORTED, "function does not support alter"));
                    }
                }
                if let Some(t) = new {
                    let f = catalog::parse_func(t)?;
                    // Creating a function needs the create right on functions (2.6: on
                    // the universe or on the function entity); owners alter and drop theirs.
                    if old.is_none() {
                        self.check_func_create(&f.name)?;
                    }
                }
                self.creds.borrow_mut().clear();
                self.funcs.borrow_mut().clear();
                // Functions are not schema in 2.6's sense: no version bump.
                return Ok(());
            }
            space_id::SEQUENCE => {
                if let Some(t) = new {
                    catalog::check_object_name(sid, t)?;
                }
                if let (Some(old), None) = (old, new) {
                    self.check_sequence_drop(old)?;
                }
            }
            space_id::SPACE_SEQUENCE => self.relink_sequences(),
            space_id::COLLATION => match (old, new) {
                (None, Some(new)) => define_collation(new, true)?,
                (Some(old), None) => {
                    let Some(def) = collations::CollationDef::parse(old) else { return Ok(()) };
                    // As 2.6: "none" stays (an index using another keeps its order).
                    if def.id == 0 {
                        return Err(BoxError::new(
                            code::DROP_COLLATION,
                            "Can't drop collation none : system collation",
                        ));
                    }
                    // Unlike 2.6, not while an index or a format uses it: its id is
                    // all the stored definition keeps, and a restart could not read it.
                    let used = collations::slot_of_id(def.id).map(value::Collation::Icu).is_some_and(|c| {
                        self.spaces.values().any(|s| {
                            s.def.format.iter().any(|f| f.collation == c)
                                || s.indexes.values().any(|ix| ix.def.parts.iter().any(|p| p.collation == c))
                        })
                    });
                    if used {
                        return Err(BoxError::new(
                            code::DROP_COLLATION,
                            format!(
                                "Can't drop collation {} : collation is referenced",
                                String::from_utf8_lossy(&def.name)
                            ),
                        ));
                    }
                    collations::forget(def.id, &def.name);
                }
                (Some(_), Some(_)) => {
                    return Err(BoxError::new(code::UNSUPPORTED, "collation does not support alter"));
                }
                (None, None) => {}
            },
            func_index::SPACE_ID => self.check_func_index_row(old, new)?,
            crate::idempotency::SPACE_ID => return self.check_record_time(new),
            _ => return Ok(()),
        }
        self.schema_version += 1;
        LATEST_SCHEMA_VERSION.fetch_max(self.schema_version, std::sync::atomic::Ordering::Release);
        Ok(())
    }

    /// Sets the service clock the idempotency window runs on.
    pub fn set_service_clock(&mut self, clock: crate::idempotency::ServiceClock) {
        self.service_clock = Some(clock);
    }

    /// A record written into `_idempotency` (not by the window, which stamps its
    /// records with the clock itself) may not be created in the future: the clock
    /// resumes at the newest record's time after a restart, so such a record would
    /// age every other one at once and lifetime eviction would take them.
    fn check_record_time(&self, new: Option<&Tuple>) -> BoxResult<()> {
        let (Some(clock), Some(created)) =
            (&self.service_clock, new.and_then(|t| crate::idempotency::created_ms_of(t)))
        else {
            return Ok(());
        };
        let now = clock.now_ms();
        if created > now {
            return Err(BoxError::illegal_params(&format!(
                "_idempotency record created at {created} ms of service time, after the clock's {now}"
            )));
        }
        Ok(())
    }

    fn ddl_space(&mut self, old: Option<&Tuple>, new: Option<&Tuple>) -> BoxResult<()> {
        match (old, new) {
            (None, Some(new)) => {
                let def = catalog::parse_space(new)?;
                self.check_ddl(privilege::CREATE, def.id, &def.name, def.owner)?;
                if self.spaces.contains_key(&def.id) {
                    return Err(BoxError::new(code::SPACE_EXISTS, format!("Space '{}' already exists", def.name)));
                }
                self.spaces.insert(def.id, Space::counted(def, &self.memory));
            }
            (Some(_), Some(new)) => {
                let def = catalog::parse_space(new).map_err(catalog::as_alter_error)?;
                let current = self.space(def.id)?;
                // Tarantool names the space by its new name here.
                self.check_ddl(privilege::ALTER, def.id, &def.name, current.def.owner)?;
                let space = self.space_mut(def.id)?;
                if space.def.engine != def.engine {
                    return Err(BoxError::new(
                        code::ALTER_SPACE,
                        format!("Can't modify space '{}': can not change space engine", space.def.name),
                    ));
                }
                let previous = std::mem::replace(&mut space.def, def);
                // A new format must agree with the indexes' types, and hold every stored tuple.
                let last_index = space.indexes.values().last().map(|ix| ix.def.clone());
                if let Some(Err(e)) = last_index.map(|d| space.check_part_types(&d)) {
                    space.def = previous;
                    return Err(e);
                }
                let tuples: Vec<Tuple> = space.primary().map(|pk| pk.iter().cloned().collect()).unwrap_or_default();
                if let Some(e) = tuples.iter().find_map(|t| space.validate(t).err()) {
                    space.def = previous;
                    return Err(e);
                }
            }
            (Some(old), None) => {
                let id = catalog::first_uint(old).ok_or_else(|| BoxError::invalid_msgpack("tuple"))?;
                let space = self.space(id)?;
                self.check_ddl(privilege::DROP, id, &space.def.name, space.def.owner)?;
                if !space.indexes.is_empty() {
                    return Err(BoxError::new(
                        code::DROP_SPACE,
                        format!("Can't drop space '{}': the space has indexes", space.def.name),
                    ));
                }
                let drop_err = |why: &str| {
                    BoxError::new(
                        code::DROP_SPACE,
                        format!("Can't drop space '{}': the space has {why}", space.def.name),
                    )
                };
                if self.has_grants_on(ObjectType::Space, id) {
                    return Err(drop_err("grants"));
                }
                let key = Key(smallvec::smallvec![KeyPart::Uint(u64::from(id))]);
                let has_row =
                    |sid: u32| self.spaces.get(&sid).and_then(Space::primary).is_some_and(|pk| pk.get(&key).is_some());
                if has_row(space_id::TRUNCATE) {
                    return Err(drop_err("truncate record"));
                }
                if has_row(space_id::SPACE_SEQUENCE) {
                    return Err(drop_err("sequence"));
                }
                if id < space_id::USER_MIN {
                    return Err(BoxError::new(
                        code::DROP_SPACE,
                        format!("Can't drop space '{}': the space is a system space", space.def.name),
                    ));
                }
                self.spaces.remove(&id);
            }
            (None, None) => {}
        }
        Ok(())
    }

    fn ddl_index(&mut self, old: Option<&Tuple>, new: Option<&Tuple>) -> BoxResult<()> {
        let row = new.or(old).ok_or_else(|| BoxError::invalid_msgpack("tuple"))?;
        let (sid, iid) = catalog::index_ids(row).ok_or_else(|| BoxError::invalid_msgpack("tuple"))?;
        let want = match (old, new) {
            (None, _) => privilege::CREATE,
            (_, None) => privilege::DROP,
            _ => privilege::ALTER,
        };
        let target = self.space(sid)?;
        self.check_ddl(want, sid, &target.def.name, target.def.owner)?;
        let def = match new {
            Some(new) => {
                let mut def = catalog::parse_index(new, &target.def)?;
                self.resolve_key_function(&mut def)?;
                Some(def)
            }
            None => None,
        };
        let space = self.space_mut(sid)?;
        match (old, def) {
            (None, Some(def)) => {
                space.check_part_types(&def)?;
                space.add_index(def)?;
            }
            (Some(_), None) => {
                if iid == 0 && space.indexes.len() > 1 {
                    return Err(BoxError::new(
                        code::DROP_PRIMARY_KEY,
                        format!("Can't drop primary key in space '{}' while secondary keys exist", space.def.name),
                    ));
                }
                let removed: Vec<Tuple> = if iid == 0 {
                    space.primary().map(|pk| pk.iter().cloned().collect()).unwrap_or_default()
                } else {
                    Vec::new()
                };
                space.drop_index(iid);
                if iid == 0 {
                    self.record_reset(sid, removed);
                }
            }
            (Some(_), Some(def)) => {
                space.check_part_types(&def)?;
                let removed: Vec<Tuple> = space.primary().map(|pk| pk.iter().cloned().collect()).unwrap_or_default();
                rebuild_with(space, def)?;
                if iid == 0 {
                    // Storage keys derive from the primary key: rewrite the space.
                    self.record_reset(sid, removed);
                }
            }
            (None, None) => {}
        }
        Ok(())
    }
}

/// Replaces one index definition and rebuilds every index from the stored tuples.
fn rebuild_with(space: &mut Space, def: index::IndexDef) -> BoxResult<()> {
    let tuples: Vec<Tuple> = space.primary().map(|pk| pk.iter().cloned().collect()).unwrap_or_default();
    let mut defs: Vec<index::IndexDef> = space.indexes.values().map(|ix| ix.def.clone()).collect();
    if let Some(slot) = defs.iter_mut().find(|d| d.id == def.id) {
        *slot = def;
    }
    let mut rebuilt = space.emptied();
    let pk_def = defs.iter().find(|d| d.id == 0).cloned();
    if let Some(pk_def) = pk_def {
        let mut pk = Index::for_space(space.def.id, pk_def.clone(), &pk_def.parts);
        for t in &tuples {
            let fields = rebuilt_fields(t)?;
            let key = pk.entry_key(&fields)?;
            if pk.get(&key).is_some() {
                return Err(BoxError::new(
                    code::TUPLE_FOUND,
                    format!("Duplicate key exists in unique index '{}' in space '{}'", pk_def.name, space.def.name),
                ));
            }
            pk.insert(key, t.clone());
        }
        rebuilt.indexes.insert(0, pk);
        rebuilt.recount();
    }
    for d in defs.into_iter().filter(|d| d.id != 0) {
        rebuilt.add_index(d)?;
    }
    *space = rebuilt;
    Ok(())
}

fn rebuilt_fields(t: &Tuple) -> BoxResult<tuple::TupleFields<'_>> {
    split(t)
}

/// `_idempotency`'s primary key of (user, token); `token` is the token's msgpack encoding.
/// [`idempotency_key`], or the error for a token that is not a valid key.
fn record_key(user: u32, token: &[u8]) -> BoxResult<Key> {
    idempotency_key(user, token).ok_or_else(|| BoxError::invalid_msgpack("idempotency token"))
}

fn idempotency_key(user: u32, token: &[u8]) -> Option<Key> {
    let mut r = Reader::new(token);
    let token_key = KeyPart::read(&mut r, value::FieldType::Scalar, value::Collation::Binary, false).ok()??;
    Some(Key(smallvec::smallvec![KeyPart::Uint(u64::from(user)), token_key]))
}

/// Whether a msgpack value is of the given type (helper for callers decoding args).
#[must_use]
pub fn is_type(value: &[u8], ty: MpType) -> bool {
    Reader::new(value).peek_type() == Ok(ty)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn guest_has_tarantool_default_rights() {
        let engine = Engine::bootstrap(&uuid::Uuid::nil()).unwrap();
        let guest = engine.credentials(user_id::GUEST);
        assert_eq!(guest.universe, privilege::SESSION | privilege::USAGE);
        assert!(guest.has(ObjectType::Space, space_id::VSPACE, None, privilege::READ));
        assert!(!guest.has(ObjectType::Space, space_id::SPACE, None, privilege::READ));
    }

    #[test]
    fn a_recycled_change_vector_is_reused_empty() {
        let mut engine = Engine::bootstrap(&uuid::Uuid::nil()).unwrap();
        let mut spent = Vec::with_capacity(8);
        spent.push(Change::Truncate { space_id: 512, removed: Vec::new() });
        engine.recycle_changes(spent);
        assert!(engine.changes.is_empty() && engine.changes.capacity() >= 8);
        // A vector with changes pending is never swapped out.
        engine.changes.push(Change::Truncate { space_id: 512, removed: Vec::new() });
        engine.recycle_changes(Vec::with_capacity(64));
        assert_eq!(engine.pending_changes(), 1);
    }

    #[test]
    fn the_legacy_created_index_of_idempotency_is_dropped() {
        let mut engine = Engine::bootstrap(&uuid::Uuid::nil()).unwrap();
        assert!(!engine.ensure_idempotency_space().unwrap(), "a new directory needs nothing");
        // What directories made before the window kept creation order have.
        let mut row = Vec::new();
        write::array_len(&mut row, 6);
        write::uint(&mut row, u64::from(crate::idempotency::SPACE_ID));
        write::uint(&mut row, 1);
        write::str(&mut row, b"created");
        write::str(&mut row, b"tree");
        write::map_len(&mut row, 1);
        write::str(&mut row, b"unique");
        write::bool(&mut row, false);
        write::array_len(&mut row, 1);
        write::array_len(&mut row, 2);
        write::uint(&mut row, 3);
        write::str(&mut row, b"unsigned");
        let admin = engine.credentials(user_id::ADMIN);
        engine.write(&admin, space_id::INDEX, &row, WriteMode::Insert).unwrap();
        engine.take_changes();
        assert!(engine.ensure_idempotency_space().unwrap());
        let space = engine.space(crate::idempotency::SPACE_ID).unwrap();
        assert_eq!(space.indexes.len(), 1);
        assert!(engine
            .take_changes()
            .iter()
            .any(|c| matches!(c, Change::Row { space_id: s, new: None, .. } if *s == space_id::INDEX)));
    }
}
