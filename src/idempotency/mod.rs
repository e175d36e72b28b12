//! Server-side request deduplication: the idempotency window.
//!
//! # Guarantees
//! - A write carrying a token (header key 0x0c) runs at most once per (user,
//!   token) while its record is remembered: the record and the write's changes
//!   are one commit, so after any crash either both exist or neither does.
//! - A retry with the same request gets the first outcome's reply body byte
//!   for byte (status 2); a retry that arrives while the first attempt is not
//!   yet durable waits for it and gets the same reply (status 3).
//! - A different request under a known token is refused (ER_IDEMPOTENCY_TOKEN_MISMATCH):
//!   the fingerprint is over a canonical form of the request.
//! - A failed request leaves no record: a retry runs it again.
//!
//! # Non-guarantees
//! - A record older than `idempotency_lifetime` (service time), or evicted by
//!   `idempotency_max_count` / `idempotency_max_size`, is forgotten: a retry after
//!   that runs again.
//!
//! Records live in the system space `_idempotency` (id 500), primary key
//! (user id, token), readable and deletable by admin.

pub mod fingerprint;
pub mod token;

use std::collections::VecDeque;
use std::rc::Rc;
use std::time::Instant;

use crate::engine::index::Prehashed;
use crate::engine::tuple::Tuple;
use crate::engine::{Change, Engine};
use crate::error::BoxResult;

use crate::protocol::msgpack::{write, Reader};

/// `_idempotency`'s space id.
pub const SPACE_ID: u32 = 500;

/// Request types that may carry an idempotency token (others accept and ignore it).
#[must_use]
pub fn is_write_type(ty: u64) -> bool {
    use crate::protocol::request_type as t;
    matches!(
        ty,
        t::INSERT | t::REPLACE | t::UPDATE | t::DELETE | t::UPSERT | t::CALL | t::CALL_16 | t::EVAL | t::EXECUTE
    )
}

/// Reply status (header key 0x0d): executed now.
pub const STATUS_EXECUTED: u64 = 1;
/// Reply status: the stored reply of an earlier execution.
pub const STATUS_REPLAYED: u64 = 2;
/// Reply status: joined an attempt that was in flight.
pub const STATUS_JOINED: u64 = 3;

/// Error codes (oncebox's own range).
#[allow(missing_docs, reason = "named after the design's error names")]
pub mod code {
    pub const TOKEN_INVALID: u32 = 4001;
    pub const TOKEN_MISMATCH: u32 = 4002;
    pub const DISABLED: u32 = 4003;
}

/// `idempotency_mode`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// The built-in store deduplicates (default).
    Persistent,
    /// Triggers deduplicate; without one, tokened writes are refused.
    Manual,
    /// Kill switch: tokened writes are refused.
    Off,
}

impl Mode {
    /// Parses a mode name.
    #[must_use]
    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "persistent" => Some(Self::Persistent),
            "manual" => Some(Self::Manual),
            "off" => Some(Self::Off),
            _ => None,
        }
    }
}

/// Window settings (the `idempotency_*` options).
#[derive(Debug, Clone)]
pub struct Settings {
    /// `idempotency_mode`.
    pub mode: Mode,
    /// `idempotency_lifetime`, seconds of service time.
    pub lifetime_s: f64,
    /// `idempotency_max_count`.
    pub max_count: u64,
    /// `idempotency_max_size`, bytes of stored replies and tokens.
    pub max_size: u64,
    /// `idempotency_max_token_size`, bytes.
    pub max_token_size: usize,
}

impl Default for Settings {
    fn default() -> Self {
        Self {
            mode: Mode::Persistent,
            lifetime_s: 3600.0,
            max_count: 1_000_000,
            max_size: 256 * 1024 * 1024,
            max_token_size: token::DEFAULT_MAX_TOKEN_SIZE,
        }
    }
}

/// Counters for `box.stat.idempotency()`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Stats {
    /// Requests executed as the owner of a new token.
    pub executed: u64,
    /// Stored replies returned.
    pub replays: u64,
    /// Retries that joined an in-flight attempt.
    pub joins: u64,
    /// Known tokens sent with a different request.
    pub mismatches: u64,
    /// Tokens refused (invalid, or deduplication disabled).
    pub rejections: u64,
    /// Records forgotten because they outlived `idempotency_lifetime`.
    pub evicted_lifetime: u64,
    /// Records evicted by `idempotency_max_count`.
    pub evicted_count: u64,
    /// Records evicted by `idempotency_max_size`.
    pub evicted_size: u64,
}

/// Time the server has been running, summed over restarts (milliseconds).
#[derive(Debug, Clone)]
pub struct ServiceClock {
    base_ms: u64,
    started: Instant,
}

impl ServiceClock {
    /// A clock resuming from `base_ms`.
    #[must_use]
    pub fn resume(base_ms: u64) -> Self {
        Self { base_ms, started: Instant::now() }
    }

    /// Current service time in milliseconds.
    #[must_use]
    pub fn now_ms(&self) -> u64 {
        self.base_ms + u64::try_from(self.started.elapsed().as_millis()).unwrap_or(u64::MAX)
    }
}

/// One stored outcome, as a tuple of `_idempotency`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Record {
    /// The user the token belongs to.
    pub user_id: u32,
    /// The token's msgpack encoding.
    pub token: Vec<u8>,
    /// Fingerprint of the request that owns the token.
    pub fingerprint: fingerprint::Fingerprint,
    /// Service time of creation, milliseconds.
    pub created_ms: u64,
    /// The reply body sent the first time.
    pub reply: Vec<u8>,
}

/// A record about to be stored, borrowing its token and reply (from the request
/// and the reply just built: nothing is copied before the tuple is written).
#[derive(Debug, Clone, Copy)]
pub struct NewRecord<'a> {
    /// The user the token belongs to.
    pub user_id: u32,
    /// The token's msgpack encoding.
    pub token: &'a [u8],
    /// Fingerprint of the request that owns the token.
    pub fingerprint: fingerprint::Fingerprint,
    /// Service time of creation, milliseconds.
    pub created_ms: u64,
    /// The reply body sent the first time.
    pub reply: &'a [u8],
}

impl NewRecord<'_> {
    /// Bytes this record counts against `idempotency_max_size`.
    #[must_use]
    pub fn size(&self) -> u64 {
        (self.reply.len() + self.token.len()) as u64
    }

    /// Appends the `_idempotency` tuple: `[user_id, token, fingerprint, created, reply, size]`.
    pub fn encode(&self, out: &mut Vec<u8>) {
        out.reserve(64 + self.reply.len() + self.token.len());
        write::array_len(out, 6);
        write::uint(out, u64::from(self.user_id));
        out.extend_from_slice(self.token);
        write::bin(out, &self.fingerprint);
        write::uint(out, self.created_ms);
        write::bin(out, self.reply);
        write::uint(out, self.size());
    }
}

impl Record {
    /// The record as a [`NewRecord`] borrowing from it.
    #[must_use]
    pub fn as_new(&self) -> NewRecord<'_> {
        NewRecord {
            user_id: self.user_id,
            token: &self.token,
            fingerprint: self.fingerprint,
            created_ms: self.created_ms,
            reply: &self.reply,
        }
    }

    /// Bytes this record counts against `idempotency_max_size`.
    #[must_use]
    pub fn size(&self) -> u64 {
        self.as_new().size()
    }

    /// The `_idempotency` tuple: `[user_id, token, fingerprint, created, reply, size]`.
    #[must_use]
    pub fn to_tuple(&self) -> Vec<u8> {
        let mut t = Vec::new();
        self.as_new().encode(&mut t);
        t
    }

    /// Decodes an `_idempotency` tuple.
    #[must_use]
    pub fn from_tuple(t: &[u8]) -> Option<Self> {
        let mut r = Reader::new(t);
        if r.read_array_len().ok()? < 5 {
            return None;
        }
        let user_id = u32::try_from(r.read_uint().ok()?).ok()?;
        let token = r.skip().ok()?.to_vec();
        // Records written before fingerprints were shortened hold the whole digest.
        let fingerprint = fingerprint::from_digest(r.read_bin().ok()?)?;
        let created_ms = r.read_uint().ok()?;
        let reply = r.read_bin().ok()?.to_vec();
        Some(Self { user_id, token, fingerprint, created_ms, reply })
    }
}

/// The `_space` row of `_idempotency`.
#[must_use]
pub fn space_row() -> Vec<u8> {
    let mut t = Vec::new();
    write::array_len(&mut t, 7);
    write::uint(&mut t, u64::from(SPACE_ID));
    write::uint(&mut t, 1);
    write::str(&mut t, b"_idempotency");
    write::str(&mut t, b"memtx");
    write::uint(&mut t, 0);
    write::map_len(&mut t, 0);
    let fields: [(&[u8], &[u8]); 6] = [
        (b"user_id", b"unsigned"),
        (b"token", b"scalar"),
        (b"fingerprint", b"varbinary"),
        (b"created", b"unsigned"),
        (b"reply", b"varbinary"),
        (b"size", b"unsigned"),
    ];
    write::array_len(&mut t, 6);
    for (name, ty) in fields {
        write::map_len(&mut t, 2);
        write::str(&mut t, b"name");
        write::str(&mut t, name);
        write::str(&mut t, b"type");
        write::str(&mut t, ty);
    }
    t
}

/// The `_index` rows of `_idempotency`: primary HASH (user_id, token). Creation
/// order needs no index: the window keeps its records in that order.
#[must_use]
pub fn index_rows() -> Vec<Vec<u8>> {
    vec![
        // HASH: a lookup or insert among a million random tokens is one probe, where a
        // tree walk misses the cache at every level; nothing needs tokens in order.
        index_row(0, b"primary", b"hash", true, &[(0, b"unsigned"), (1, b"scalar")]),
    ]
}

/// An `_index` row of `_idempotency`: parts are (field number, type).
fn index_row(iid: u64, name: &[u8], kind: &[u8], unique: bool, parts: &[(u64, &[u8])]) -> Vec<u8> {
    let mut t = Vec::new();
    write::array_len(&mut t, 6);
    write::uint(&mut t, u64::from(SPACE_ID));
    write::uint(&mut t, iid);
    write::str(&mut t, name);
    write::str(&mut t, kind);
    write::map_len(&mut t, 1);
    write::str(&mut t, b"unique");
    write::bool(&mut t, unique);
    #[allow(clippy::cast_possible_truncation, reason = "two parts at most")]
    write::array_len(&mut t, parts.len() as u32);
    for (field, ty) in parts {
        write::array_len(&mut t, 2);
        write::uint(&mut t, *field);
        write::str(&mut t, ty);
    }
    t
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn record_round_trip() {
        let r = Record {
            user_id: 32,
            token: vec![0xa3, b'a', b'b', b'c'],
            fingerprint: [7; fingerprint::FINGERPRINT_BYTES],
            created_ms: 12_345,
            reply: vec![0x81, 0x30, 0xdd, 0, 0, 0, 0],
        };
        let t = r.to_tuple();
        assert_eq!(Record::from_tuple(&t), Some(r.clone()));
        assert_eq!(r.size(), 11);
        assert_eq!(Head::of(&t).map(|h| h.size), Some(11), "what eviction reads without decoding");
    }

    #[test]
    fn a_record_written_with_the_whole_digest_is_read_by_its_first_16_bytes() {
        // What versions before the 16-byte fingerprint stored: all of SHA-256.
        let mut t = Vec::new();
        write::array_len(&mut t, 6);
        write::uint(&mut t, 32);
        write::str(&mut t, b"abc");
        write::bin(&mut t, &[[5u8; 16], [9u8; 16]].concat());
        write::uint(&mut t, 12_345);
        write::bin(&mut t, &[0x80]);
        write::uint(&mut t, 5);
        let r = Record::from_tuple(&t).unwrap();
        assert_eq!(r.fingerprint, [5; fingerprint::FINGERPRINT_BYTES]);
        assert_eq!((r.user_id, r.created_ms, r.reply.as_slice()), (32, 12_345, &[0x80][..]));
        // Written back, it holds the short form.
        assert_eq!(r.to_tuple().len(), t.len() - 16);
        // A digest shorter than a fingerprint is not a record.
        let mut short = Vec::new();
        write::array_len(&mut short, 6);
        write::uint(&mut short, 32);
        write::str(&mut short, b"abc");
        write::bin(&mut short, &[5u8; 8]);
        write::uint(&mut short, 1);
        write::bin(&mut short, &[0x80]);
        write::uint(&mut short, 5);
        assert_eq!(Record::from_tuple(&short), None);
    }

    fn record(token: &str, created_ms: u64) -> Record {
        let mut encoded = Vec::new();
        write::str(&mut encoded, token.as_bytes());
        Record {
            user_id: 1,
            token: encoded,
            fingerprint: [0; fingerprint::FINGERPRINT_BYTES],
            created_ms,
            reply: vec![0x80],
        }
    }

    fn stored(engine: &Engine, token: &str) -> Option<Tuple> {
        engine.idempotency_record(1, &record(token, 0).token)
    }

    #[test]
    fn eviction_takes_the_oldest_durable_records_and_never_one_in_flight() {
        let mut engine = Engine::bootstrap(&uuid::Uuid::nil()).unwrap();
        let settings = Settings { max_count: 1, ..Settings::default() };
        let mut w = Window::new(settings, 0, &engine);
        w.store(&mut engine, &record("a", 1).as_new(), Some(1)).unwrap();
        w.store(&mut engine, &record("b", 2).as_new(), Some(2)).unwrap();
        w.store(&mut engine, &record("c", 3).as_new(), Some(3)).unwrap();
        // Nothing is durable: nothing goes, and every record is in flight in its group.
        assert_eq!(w.evict_step(&mut engine, 10).count, 0);
        assert_eq!(w.in_flight(&stored(&engine, "b").unwrap()), Some(2));
        w.durable_up_to(2);
        assert_eq!(w.in_flight(&stored(&engine, "b").unwrap()), None);
        assert_eq!(w.in_flight(&stored(&engine, "c").unwrap()), Some(3));
        // Over the count limit: the oldest durable ones go, the one in flight stays.
        assert_eq!(w.evict_step(&mut engine, 10).count, 2);
        assert!(stored(&engine, "a").is_none() && stored(&engine, "b").is_none());
        assert!(stored(&engine, "c").is_some());
        assert_eq!(w.stats.evicted_count, 2);
        assert_eq!(w.usage(&engine), (1, record("c", 3).size()));
    }

    #[test]
    fn an_outlived_record_is_forgotten_before_eviction_reaches_it_unless_in_flight() {
        let mut engine = Engine::bootstrap(&uuid::Uuid::nil()).unwrap();
        let settings = Settings { lifetime_s: 10.0, ..Settings::default() };
        // Service time resumes at 20 s: a record created at 5 s has outlived 10 s.
        let mut w = Window::new(settings, 20_000, &engine);
        let token = record("old", 5_000).token;
        w.store(&mut engine, &record("old", 5_000).as_new(), None).unwrap();
        w.store(&mut engine, &record("young", 15_000).as_new(), None).unwrap();
        assert!(w.front_outlived(), "the oldest record calls for an eviction step");
        assert!(w.remembered(&engine, 1, &token).is_none(), "forgotten, though still stored");
        assert!(w.remembered(&engine, 1, &record("young", 0).token).is_some());
        // Its token used again: the new record replaces it and counts it evicted.
        w.store(&mut engine, &record("old", 20_000).as_new(), Some(7)).unwrap();
        assert_eq!(w.stats.evicted_lifetime, 1);
        assert_eq!(w.usage(&engine), (2, record("old", 0).size() + record("young", 0).size()));
        // Outlived but in flight (a lifetime of 0): a retry still finds it, to join it.
        w.settings.lifetime_s = 0.0;
        assert!(w.remembered(&engine, 1, &token).is_some());
        w.durable_up_to(7);
        assert!(w.remembered(&engine, 1, &token).is_none());
        // The stale queue entry of the replaced record is skipped, not evicted twice.
        assert_eq!(w.evict_step(&mut engine, 10).count, 2);
        assert_eq!(w.stats.evicted_lifetime, 3);
        assert!(!w.front_outlived());
    }

    #[test]
    fn evictions_in_order_are_logged_by_the_floor_and_finish_their_millisecond() {
        let mut engine = Engine::bootstrap(&uuid::Uuid::nil()).unwrap();
        let settings = Settings { max_count: 1, ..Settings::default() };
        let mut w = Window::new(settings, 0, &engine);
        for (token, created) in [("a", 1), ("b", 2), ("c", 2), ("d", 3)] {
            w.store(&mut engine, &record(token, created).as_new(), None).unwrap();
        }
        engine.take_changes();
        // Two at most, but 'c' was created in the millisecond of 'b': the step
        // finishes it, and the floor (3) logs all three evictions.
        let evicted = w.evict_step(&mut engine, 2);
        assert_eq!(evicted, Evicted { count: 3, floor: Some(3) });
        assert!(engine.take_changes().is_empty(), "no delete logged");
        assert!(stored(&engine, "c").is_none() && stored(&engine, "d").is_some());
        assert_eq!(w.stats.evicted_count, 3);
        // Nothing evicted: no floor to log.
        assert_eq!(w.evict_step(&mut engine, 10), Evicted { count: 0, floor: None });
    }

    #[test]
    fn an_eviction_the_floor_does_not_cover_is_logged_as_a_delete() {
        let mut engine = Engine::bootstrap(&uuid::Uuid::nil()).unwrap();
        let settings = Settings { max_count: 0, ..Settings::default() };
        let mut w = Window::new(settings, 0, &engine);
        w.store(&mut engine, &record("a", 1).as_new(), None).unwrap();
        w.store(&mut engine, &record("b", 2).as_new(), None).unwrap();
        // Created in the millisecond of 'b', but not yet durable: it stays.
        w.store(&mut engine, &record("c", 2).as_new(), Some(1)).unwrap();
        engine.take_changes();
        assert_eq!(w.evict_step(&mut engine, 10), Evicted { count: 2, floor: Some(2) });
        let logged = engine.take_changes();
        assert_eq!(logged.len(), 1, "'a' is covered by the floor, 'b' is not: {logged:?}");
        assert!(matches!(&logged[0], Change::Row { space_id: SPACE_ID, new: None, old: Some(t), .. }
            if Head::of(t).is_some_and(|h| h.token == record("b", 0).token.as_slice())));
        assert!(stored(&engine, "c").is_some());
    }

    #[test]
    fn a_record_replaced_meanwhile_is_skipped_not_evicted() {
        let mut engine = Engine::bootstrap(&uuid::Uuid::nil()).unwrap();
        let settings = Settings { max_count: 0, ..Settings::default() };
        let mut w = Window::new(settings, 0, &engine);
        w.store(&mut engine, &record("a", 1).as_new(), None).unwrap();
        // Replaced outside the window: the window's entry no longer is the record.
        let admin = engine.credentials(crate::engine::access::user_id::ADMIN);
        let replacement = record("a", 5).to_tuple();
        engine.write(&admin, SPACE_ID, &replacement, crate::engine::space::WriteMode::Replace).unwrap();
        engine.take_changes();
        assert_eq!(w.evict_step(&mut engine, 10).count, 0);
        assert_eq!(stored(&engine, "a").map(|t| t.to_vec()), Some(replacement));
        assert!(engine.take_changes().is_empty(), "nothing logged for a stale entry");
        w.recount(&engine);
        assert_eq!(w.evict_step(&mut engine, 10).count, 1);
        assert!(stored(&engine, "a").is_none());
    }

    #[test]
    fn eviction_keeps_every_index_of_the_space_in_step() {
        let mut engine = Engine::bootstrap(&uuid::Uuid::nil()).unwrap();
        let admin = engine.credentials(crate::engine::access::user_id::ADMIN);
        // An admin's secondary index on the creation time.
        let by_created = index_row(1, b"by_created", b"tree", false, &[(3, b"unsigned")]);
        let index_space = crate::engine::catalog::space_id::INDEX;
        engine.write(&admin, index_space, &by_created, crate::engine::space::WriteMode::Insert).unwrap();
        let settings = Settings { max_count: 1, ..Settings::default() };
        let mut w = Window::new(settings, 0, &engine);
        w.store(&mut engine, &record("a", 1).as_new(), None).unwrap();
        w.store(&mut engine, &record("b", 2).as_new(), None).unwrap();
        assert_eq!(w.evict_step(&mut engine, 10).count, 1);
        assert!(stored(&engine, "a").is_none() && stored(&engine, "b").is_some());
        let space = engine.space(SPACE_ID).unwrap();
        assert_eq!(
            space.indexes.get(&1).map(crate::engine::index::Index::len),
            Some(1),
            "the secondary index lost its entry too"
        );
    }

    #[test]
    fn no_records_floor_while_the_age_queue_is_out_of_order() {
        let mut engine = Engine::bootstrap(&uuid::Uuid::nil()).unwrap();
        let settings = Settings { max_count: 0, ..Settings::default() };
        let mut w = Window::new(settings, 0, &engine);
        assert_eq!(w.records_floor(&engine), Some(u64::MAX), "no record left: any segment may go");
        let admin = engine.credentials(crate::engine::access::user_id::ADMIN);
        engine
            .write(&admin, SPACE_ID, &record("early", 10).to_tuple(), crate::engine::space::WriteMode::Insert)
            .unwrap();
        w.recount(&engine);
        w.store(&mut engine, &record("new", 50).as_new(), Some(1)).unwrap();
        assert_eq!(w.records_floor(&engine), Some(10), "the oldest record's creation");
        // Written outside the window while 'new' is in flight: settled records go
        // first, so a later one now stands before an earlier one.
        engine
            .write(&admin, SPACE_ID, &record("late", 90).to_tuple(), crate::engine::space::WriteMode::Insert)
            .unwrap();
        w.recount(&engine);
        assert!(!w.is_ordered());
        assert_eq!(w.records_floor(&engine), None, "the front is not the oldest: no floor");
        w.durable_up_to(1);
        assert_eq!(w.evict_step(&mut engine, 2).count, 2, "'early' and 'late' go");
        assert_eq!(w.records_floor(&engine), None, "in order again only once checked");
        w.check_order();
        assert_eq!(w.records_floor(&engine), Some(50));
    }

    #[test]
    fn a_record_written_by_hand_may_not_be_created_after_the_clock() {
        let mut engine = Engine::bootstrap(&uuid::Uuid::nil()).unwrap();
        engine.set_service_clock(ServiceClock::resume(1_000_000));
        let admin = engine.credentials(crate::engine::access::user_id::ADMIN);
        let insert = crate::engine::space::WriteMode::Insert;
        let err = engine.write(&admin, SPACE_ID, &record("future", 1 << 40).to_tuple(), insert).unwrap_err();
        assert_eq!(err.code, crate::error::code::ILLEGAL_PARAMS);
        assert!(err.message.contains("after the clock"), "{}", err.message);
        assert!(stored(&engine, "future").is_none(), "refused, not written");
        engine.write(&admin, SPACE_ID, &record("past", 5).to_tuple(), insert).unwrap();
        assert!(stored(&engine, "past").is_some());
    }

    #[test]
    fn a_recount_orders_by_creation_and_keeps_records_in_flight_last() {
        let mut engine = Engine::bootstrap(&uuid::Uuid::nil()).unwrap();
        let settings = Settings { max_count: 0, ..Settings::default() };
        let mut w = Window::new(settings, 0, &engine);
        w.store(&mut engine, &record("new", 50).as_new(), Some(1)).unwrap();
        // Written outside the window: one dated later than the in-flight record, one earlier.
        let admin = engine.credentials(crate::engine::access::user_id::ADMIN);
        for r in [record("late", 90), record("early", 10)] {
            engine.write(&admin, SPACE_ID, &r.to_tuple(), crate::engine::space::WriteMode::Insert).unwrap();
        }
        w.recount(&engine);
        assert_eq!(w.in_flight(&stored(&engine, "new").unwrap()), Some(1), "still found behind 'late'");
        w.durable_up_to(1);
        // Everything is over the limit now: creation order, except the in-flight one went last.
        assert_eq!(w.evict_step(&mut engine, 1).count, 1);
        assert!(stored(&engine, "early").is_none());
        assert_eq!(w.evict_step(&mut engine, 1).count, 1);
        assert!(stored(&engine, "late").is_none());
        assert_eq!(w.evict_step(&mut engine, 1).count, 1);
        assert!(stored(&engine, "new").is_none());
    }
}

/// The live window: settings, counters, clock, and the records oldest first.
///
/// Records are created in service-time order, so a queue in creation order is
/// their age order: eviction pops its front, the records not yet durable are its
/// tail. An entry whose record was deleted or replaced meanwhile is stale (the
/// primary key holds another tuple, or none) and is skipped.
#[derive(Debug)]
pub struct Window {
    /// The `idempotency_*` settings in force.
    pub settings: Settings,
    /// Counters.
    pub stats: Stats,
    /// Service time.
    pub clock: ServiceClock,
    /// Records oldest first, each with the commit group it was written in.
    ages: VecDeque<Aged>,
    /// Every commit group up to this ticket is durable.
    durable: u64,
    /// Sum of [`Record::size`] over `_idempotency`.
    total_size: u64,
    /// Where a record's tuple is encoded before it is stored (kept: no allocation per record).
    scratch: Vec<u8>,
    /// Whether `ages` is in creation order, so that its front is the oldest record
    /// (false after a record created in the future was written by hand).
    ordered: bool,
    /// The newest creation time in `ages`.
    newest_ms: u64,
    /// [`Self::evict_step`]'s buffer of records evicted unlogged.
    unlogged: Vec<Tuple>,
}

/// A record in the age queue.
#[derive(Debug)]
struct Aged {
    tuple: Tuple,
    /// The commit group the record was written in; 0 when it was durable when
    /// written (tickets start at 1). Not an `Option`: 8 bytes less per record.
    ticket: u64,
    /// Its key's hash in the primary key, when the window stored it: eviction
    /// finds its entry without hashing again, and warms it ahead.
    hashed: Option<Prehashed>,
}

/// Records an eviction starts reading before it removes the first of them
/// ([`Engine::warm_idempotency_records`]).
const WARM_AHEAD: usize = 16;

/// Why a record was evicted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Cause {
    Lifetime,
    Count,
    Size,
}

impl Window {
    /// A window with `settings`, its clock resuming at `clock_ms`, sized from `engine`.
    #[must_use]
    pub fn new(settings: Settings, clock_ms: u64, engine: &Engine) -> Self {
        let mut w = Self {
            settings,
            stats: Stats::default(),
            clock: ServiceClock::resume(clock_ms),
            ages: VecDeque::new(),
            durable: 0,
            total_size: 0,
            scratch: Vec::new(),
            ordered: true,
            newest_ms: 0,
            unlogged: Vec::new(),
        };
        w.recount(engine);
        let newest = w.ages.back().and_then(|a| Head::of(&a.tuple)).map_or(0, |h| h.created_ms);
        w.clock = ServiceClock::resume(clock_ms.max(newest));
        w
    }

    /// Rebuilds the size total and the age queue from `_idempotency` (at start, and
    /// after changes made outside the window).
    pub fn recount(&mut self, engine: &Engine) {
        // Records not yet durable keep their place at the tail, in commit order (a
        // join looks for them there); the others are ordered by creation time.
        let durable = self.durable;
        let pending: Vec<Aged> = std::mem::take(&mut self.ages)
            .into_iter()
            .filter(|a| a.ticket > durable && is_current(engine, &a.tuple))
            .collect();
        let pending_at: std::collections::HashSet<*const u8> =
            pending.iter().map(|a| Rc::as_ptr(&a.tuple).cast::<u8>()).collect();
        // One pass over the records (a million of them are a million cache misses).
        let mut settled: Vec<(u64, Tuple)> = Vec::with_capacity(engine.space(SPACE_ID).map_or(0, |s| s.len()));
        let mut total_size = 0;
        for t in records(engine) {
            let Some(head) = Head::of(t) else { continue };
            total_size += head.size;
            if !pending_at.contains(&Rc::as_ptr(t).cast::<u8>()) {
                settled.push((head.created_ms, t.clone()));
            }
        }
        // Records created in the same millisecond may leave in any order.
        settled.sort_unstable_by_key(|(created, _)| *created);
        self.total_size = total_size;
        // Sorted, the settled records are in order: only the pending ones are read again.
        let (settled_count, settled_newest) = (settled.len(), settled.last().map_or(0, |(created, _)| *created));
        self.ages =
            settled.into_iter().map(|(_, tuple)| Aged { tuple, ticket: 0, hashed: None }).chain(pending).collect();
        self.check_order_from(settled_count, settled_newest);
    }

    /// Works out whether the age queue is in creation order (a pass over it).
    pub fn check_order(&mut self) {
        self.check_order_from(0, 0);
    }

    /// [`Self::check_order`], given that the first `start` records are in order
    /// and the newest of them was created at `newest`.
    fn check_order_from(&mut self, start: usize, mut newest: u64) {
        self.ordered = true;
        for created in self.ages.iter().skip(start).map(|a| Head::of(&a.tuple).map_or(u64::MAX, |h| h.created_ms)) {
            self.ordered &= created >= newest;
            newest = newest.max(created);
        }
        self.newest_ms = newest;
    }

    /// Whether the age queue is known to be in creation order.
    #[must_use]
    pub fn is_ordered(&self) -> bool {
        self.ordered
    }

    /// A service time no remembered record was created before (the oldest
    /// record's), when the window can tell it cheaply: storage drops the
    /// segments of records older than that ([`crate::storage::records`]).
    #[must_use]
    pub fn records_floor(&self, engine: &Engine) -> Option<u64> {
        if !self.ordered || self.ages.len() < engine.space(SPACE_ID).map_or(0, |s| s.len()) {
            return None;
        }
        self.front_created()
    }

    /// The creation time of the age queue's front (`u64::MAX` when it is empty).
    fn front_created(&self) -> Option<u64> {
        match self.ages.front() {
            None => Some(u64::MAX),
            // The front may be stale (deleted since): it is older still, so a safe floor.
            Some(oldest) => Head::of(&oldest.tuple).map(|h| h.created_ms),
        }
    }

    /// Remembered records: (count, bytes).
    #[must_use]
    pub fn usage(&self, engine: &Engine) -> (u64, u64) {
        (engine.space(SPACE_ID).map_or(0, |s| s.len() as u64), self.total_size)
    }

    /// Whether more records, or more bytes, are remembered than the limits allow.
    #[must_use]
    pub fn over_limits(&self, engine: &Engine) -> bool {
        let (count, size) = self.usage(engine);
        count > self.settings.max_count || size > self.settings.max_size
    }

    /// Age of the oldest remembered record, in seconds of service time.
    #[must_use]
    pub fn oldest_age_s(&self, engine: &Engine) -> f64 {
        let oldest = self.ages.iter().find(|a| is_current(engine, &a.tuple)).and_then(|a| Head::of(&a.tuple));
        #[allow(clippy::cast_precision_loss, reason = "ages in ms fit f64")]
        oldest.map_or(0.0, |h| self.clock.now_ms().saturating_sub(h.created_ms) as f64 / 1000.0)
    }

    /// The commit group `record` (a tuple of `_idempotency`) waits in, if it is not yet durable.
    #[must_use]
    pub fn in_flight(&self, record: &Tuple) -> Option<u64> {
        self.ages
            .iter()
            .rev()
            .map_while(|a| (a.ticket > self.durable).then_some((a, a.ticket)))
            .find(|(a, _)| Rc::ptr_eq(&a.tuple, record))
            .map(|(_, t)| t)
    }

    /// `idempotency_lifetime` in milliseconds of service time.
    fn lifetime_ms(&self) -> u64 {
        #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss, reason = "lifetime in ms fits u64")]
        let ms = (self.settings.lifetime_s.max(0.0) * 1000.0) as u64;
        ms
    }

    /// Whether a record created at `created_ms` has outlived `idempotency_lifetime` now.
    fn outlived(&self, created_ms: u64) -> bool {
        created_ms.saturating_add(self.lifetime_ms()) <= self.clock.now_ms()
    }

    /// The record remembered for (`user`, `token`), if any: one older than
    /// `idempotency_lifetime` is forgotten whether or not an eviction step has
    /// reached it yet (a retry runs again; its new record replaces the old one),
    /// unless its commit is not yet durable (a retry then joins it).
    #[must_use]
    pub fn remembered(&self, engine: &Engine, user: u32, token: &[u8]) -> Option<Tuple> {
        let record = engine.idempotency_record(user, token)?;
        let outlived = Head::of(&record).is_some_and(|h| self.outlived(h.created_ms));
        if outlived && self.in_flight(&record).is_none() {
            return None;
        }
        Some(record)
    }

    /// Whether the age queue's front has outlived `idempotency_lifetime` (or is not
    /// a record): an eviction step has work to do. Looks at one record.
    #[must_use]
    pub fn front_outlived(&self) -> bool {
        self.ages.front().is_some_and(|a| Head::of(&a.tuple).is_none_or(|h| self.outlived(h.created_ms)))
    }

    /// Whether `tuple` is a record the window stored (newest first: the records of
    /// the request being committed are found at once).
    #[must_use]
    pub fn knows(&self, tuple: &Tuple) -> bool {
        self.ages.iter().rev().any(|a| Rc::ptr_eq(&a.tuple, tuple))
    }

    /// Stores `record` in `engine` and notes it, with the commit group it will be durable in.
    pub fn store(&mut self, engine: &mut Engine, record: &NewRecord<'_>, ticket: Option<u64>) -> BoxResult<()> {
        self.scratch.clear();
        record.encode(&mut self.scratch);
        let stored = engine.put_idempotency_record(record.user_id, record.token, &self.scratch)?;
        let (tuple, hashed) = (stored.tuple, stored.hashed);
        if let Some(head) = stored.replaced.as_deref().and_then(Head::of) {
            // The record gave way to the new one (an outlived one, see
            // [`Self::remembered`]): its entry in the age queue is now stale and is
            // skipped when reached.
            self.total_size = self.total_size.saturating_sub(head.size);
            if self.outlived(head.created_ms) {
                self.stats.evicted_lifetime += 1;
            }
        }
        self.total_size += record.size();
        self.stats.executed += 1;
        self.ordered &= record.created_ms >= self.newest_ms;
        self.newest_ms = self.newest_ms.max(record.created_ms);
        self.ages.push_back(Aged { tuple, ticket: ticket.unwrap_or(0), hashed });
        Ok(())
    }

    /// Committed `changes` seen: writes to `_idempotency` made outside the window
    /// (an admin deleting or adding a record) change its size total and age queue,
    /// so it is recounted then.
    pub fn note_committed(&mut self, engine: &Engine, changes: &[Change]) {
        let external = changes.iter().any(|c| match c {
            Change::Row { space_id, old, new, .. } => {
                *space_id == SPACE_ID && (old.is_some() || new.as_ref().is_some_and(|t| !self.knows(t)))
            }
            Change::Truncate { space_id, .. } => *space_id == SPACE_ID,
        });
        if external {
            self.recount(engine);
        }
    }

    /// `changes` are about to be undone (their request or its commit failed): the
    /// records this window stored among them no longer count as executed.
    pub fn unstore(&mut self, changes: &[Change]) {
        let undone = changes
            .iter()
            .filter(|c| matches!(c, Change::Row { space_id: SPACE_ID, new: Some(t), .. } if self.knows(t)))
            .count();
        self.stats.executed = self.stats.executed.saturating_sub(undone as u64);
    }

    /// Every group up to `ticket` is durable.
    pub fn durable_up_to(&mut self, ticket: u64) {
        self.durable = self.durable.max(ticket);
    }

    /// The WAL failed: the records not yet durable were undone.
    pub fn forget_in_flight(&mut self, engine: &Engine) {
        while self.ages.back().is_some_and(|a| a.ticket > self.durable) {
            self.ages.pop_back();
        }
        self.recount(engine);
    }

    /// Evicts up to `max` records, oldest first: outlived, then over count, then over size.
    ///
    /// Records whose commit is not yet durable are never evicted. While the age
    /// queue holds every record in creation order, an evicted record is logged
    /// through the returned floor rather than a delete of its own: every record
    /// created before the floor is gone ([`crate::storage::records`]). Such a step
    /// finishes the millisecond its last eviction was created in, past `max` and
    /// the limits (at most the records of one millisecond more), so that the floor
    /// covers it; an eviction it does not cover is logged as a delete.
    pub fn evict_step(&mut self, engine: &mut Engine, max: usize) -> Evicted {
        let now = self.clock.now_ms();
        let lifetime_ms = self.lifetime_ms();
        let (mut count, _) = self.usage(engine);
        let by_floor = self.records_floor(engine).is_some();
        // Records of the last millisecond evicted without a delete of their own,
        // until the floor is known (the window's buffer: no allocation per step).
        let mut unlogged = std::mem::take(&mut self.unlogged);
        let mut evicted = 0;
        // The creation time and cause of the last record evicted.
        let mut last: Option<(u64, Cause)> = None;
        // Front records read ahead and not yet taken.
        let mut warmed = 0;
        loop {
            if warmed == 0 {
                warmed = WARM_AHEAD.min(max.saturating_sub(evicted).max(1)).min(self.ages.len());
                engine.warm_idempotency_records(self.ages.iter().take(warmed).map(|a| (&a.tuple, a.hashed)));
            }
            let Some((tuple, ticket, hashed)) = self.ages.front().map(|a| (a.tuple.clone(), a.ticket, a.hashed)) else {
                break;
            };
            let Some(head) = Head::of(&tuple) else {
                warmed = warmed.saturating_sub(1);
                self.ages.pop_front();
                continue;
            };
            // Logged by the floor, a step finishes the millisecond it evicted in, past
            // `max` and the limits: what the floor leaves out needs deletes of its own.
            let same_ms = last.filter(|(ms, _)| by_floor && *ms == head.created_ms).map(|(_, cause)| cause);
            if evicted >= max && same_ms.is_none() {
                break;
            }
            warmed = warmed.saturating_sub(1);
            let cause = if head.created_ms.saturating_add(lifetime_ms) <= now {
                Cause::Lifetime
            } else if count > self.settings.max_count {
                Cause::Count
            } else if self.total_size > self.settings.max_size {
                Cause::Size
            } else if let Some(cause) = same_ms {
                cause
            } else {
                break;
            };
            if ticket > self.durable {
                break;
            }
            match engine.evict_idempotency_record(head.user_id, head.token, &tuple, hashed, !by_floor) {
                Ok(true) => {}
                // Deleted or replaced meanwhile: not a record any more.
                Ok(false) => {
                    self.ages.pop_front();
                    continue;
                }
                Err(e) => {
                    tracing::error!(error = %e, "idempotency eviction failed");
                    break;
                }
            }
            self.ages.pop_front();
            count = count.saturating_sub(1);
            self.total_size = self.total_size.saturating_sub(head.size);
            let created_ms = head.created_ms;
            if by_floor {
                if last.is_some_and(|(ms, _)| ms != created_ms) {
                    unlogged.clear();
                }
                unlogged.push(tuple);
            }
            last = Some((created_ms, cause));
            evicted += 1;
            match cause {
                Cause::Lifetime => self.stats.evicted_lifetime += 1,
                Cause::Count => self.stats.evicted_count += 1,
                Cause::Size => self.stats.evicted_size += 1,
            }
        }
        // The queue stays ordered, and holds every record, while its front is popped:
        // the new front is the floor. Those of its own millisecond (or all, without
        // one) are logged as deletes.
        let floor = self.front_created().filter(|_| by_floor && evicted > 0);
        if last.is_some_and(|(ms, _)| floor.is_none_or(|f| ms >= f)) {
            for tuple in &unlogged {
                if let Some(head) = Head::of(tuple) {
                    engine.log_evicted_record(head.user_id, head.token, tuple);
                }
            }
        }
        unlogged.clear();
        self.unlogged = unlogged;
        Evicted { count: evicted, floor }
    }
}

/// What an eviction step did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Evicted {
    /// Records evicted.
    pub count: usize,
    /// The records floor the evictions must be logged with (in the same commit
    /// group, after them): some evicted records were logged by it alone.
    pub floor: Option<u64>,
}

/// The fields of a stored record eviction needs, read without copying.
struct Head<'a> {
    user_id: u32,
    token: &'a [u8],
    created_ms: u64,
    size: u64,
}

impl<'a> Head<'a> {
    fn of(t: &'a [u8]) -> Option<Self> {
        let mut r = Reader::new(t);
        if r.read_array_len().ok()? < 5 {
            return None;
        }
        let user_id = u32::try_from(r.read_uint().ok()?).ok()?;
        let token = r.skip().ok()?;
        r.skip().ok()?;
        let created_ms = r.read_uint().ok()?;
        let reply = r.read_bin().ok()?.len();
        Some(Self { user_id, token, created_ms, size: (token.len() + reply) as u64 })
    }
}

/// The creation time (service ms) of an `_idempotency` tuple, if it has the record layout.
#[must_use]
pub fn created_ms_of(tuple: &[u8]) -> Option<u64> {
    Head::of(tuple).map(|h| h.created_ms)
}

/// Every tuple of `_idempotency`.
fn records(engine: &Engine) -> impl Iterator<Item = &Tuple> {
    engine.space(SPACE_ID).ok().and_then(|s| s.primary()).into_iter().flat_map(|pk| pk.iter())
}

/// Whether `tuple` is still the record its (user, token) maps to.
fn is_current(engine: &Engine, tuple: &Tuple) -> bool {
    Head::of(tuple).and_then(|h| engine.idempotency_record(h.user_id, h.token)).is_some_and(|t| Rc::ptr_eq(&t, tuple))
}
