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

use std::time::Instant;

use crate::protocol::msgpack::{write, Reader};

/// `_idempotency`'s space id.
pub const SPACE_ID: u32 = 500;
/// Index of `_idempotency` ordered by creation time.
pub const CREATED_INDEX: u32 = 1;

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
    pub fingerprint: [u8; 32],
    /// Service time of creation, milliseconds.
    pub created_ms: u64,
    /// The reply body sent the first time.
    pub reply: Vec<u8>,
}

impl Record {
    /// Bytes this record counts against `idempotency_max_size`.
    #[must_use]
    pub fn size(&self) -> u64 {
        (self.reply.len() + self.token.len()) as u64
    }

    /// The `_idempotency` tuple: `[user_id, token, fingerprint, created, reply, size]`.
    #[must_use]
    pub fn to_tuple(&self) -> Vec<u8> {
        let mut t = Vec::with_capacity(64 + self.reply.len() + self.token.len());
        write::array_len(&mut t, 6);
        write::uint(&mut t, u64::from(self.user_id));
        t.extend_from_slice(&self.token);
        write::bin(&mut t, &self.fingerprint);
        write::uint(&mut t, self.created_ms);
        write::bin(&mut t, &self.reply);
        write::uint(&mut t, self.size());
        t
    }

    /// [`Self::size`] of an `_idempotency` tuple, read without decoding the record.
    #[must_use]
    pub fn size_of_tuple(t: &[u8]) -> Option<u64> {
        let mut r = Reader::new(t);
        if r.read_array_len().ok()? < 5 {
            return None;
        }
        r.read_uint().ok()?;
        let token = r.skip().ok()?.len();
        r.skip().ok()?;
        r.read_uint().ok()?;
        let reply = r.read_bin().ok()?.len();
        Some((token + reply) as u64)
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
        let fingerprint = r.read_bin().ok()?.try_into().ok()?;
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

/// The `_index` rows of `_idempotency`: primary HASH (user_id, token), and TREE by creation time.
#[must_use]
pub fn index_rows() -> Vec<Vec<u8>> {
    let index = |iid: u64, name: &[u8], kind: &[u8], unique: bool, parts: &[(u64, &[u8])]| {
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
    };
    vec![
        // HASH: a lookup or insert among a million random tokens is one probe, where a
        // tree walk misses the cache at every level; nothing needs tokens in order.
        index(0, b"primary", b"hash", true, &[(0, b"unsigned"), (1, b"scalar")]),
        index(u64::from(CREATED_INDEX), b"created", b"tree", false, &[(3, b"unsigned")]),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn record_round_trip() {
        let r = Record {
            user_id: 32,
            token: vec![0xa3, b'a', b'b', b'c'],
            fingerprint: [7; 32],
            created_ms: 12_345,
            reply: vec![0x81, 0x30, 0xdd, 0, 0, 0, 0],
        };
        let t = r.to_tuple();
        assert_eq!(Record::from_tuple(&t), Some(r.clone()));
        assert_eq!(r.size(), 11);
        assert_eq!(Record::size_of_tuple(&t), Some(11));
    }
}

/// The live window: settings, counters, clock, and which tokens are not yet durable.
#[derive(Debug)]
pub struct Window {
    /// The `idempotency_*` settings in force.
    pub settings: Settings,
    /// Counters.
    pub stats: Stats,
    /// Service time.
    pub clock: ServiceClock,
    /// (user, token) of records whose commit group is not yet durable, with that group's ticket.
    in_flight: std::collections::HashMap<(u32, Vec<u8>), u64>,
    /// Sum of [`Record::size`] over `_idempotency`.
    total_size: u64,
}

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
    pub fn new(settings: Settings, clock_ms: u64, engine: &crate::engine::Engine) -> Self {
        let newest = engine
            .space(SPACE_ID)
            .ok()
            .and_then(|s| s.indexes.get(&CREATED_INDEX))
            .and_then(|ix| ix.iter().last().cloned())
            .and_then(|t| Record::from_tuple(&t))
            .map_or(0, |r| r.created_ms);
        let mut w = Self {
            settings,
            stats: Stats::default(),
            clock: ServiceClock::resume(clock_ms.max(newest)),
            in_flight: std::collections::HashMap::new(),
            total_size: 0,
        };
        w.recount(engine);
        w
    }

    /// Recomputes the size total from `_idempotency` (after changes made outside the window).
    pub fn recount(&mut self, engine: &crate::engine::Engine) {
        self.total_size = engine
            .space(SPACE_ID)
            .ok()
            .and_then(|s| s.primary())
            .map_or(0, |pk| pk.iter().filter_map(|t| Record::size_of_tuple(t)).sum());
    }

    /// Remembered records: (count, bytes).
    #[must_use]
    pub fn usage(&self, engine: &crate::engine::Engine) -> (u64, u64) {
        (engine.space(SPACE_ID).map_or(0, |s| s.len() as u64), self.total_size)
    }

    /// Whether more records, or more bytes, are remembered than the limits allow.
    #[must_use]
    pub fn over_limits(&self, engine: &crate::engine::Engine) -> bool {
        let (count, size) = self.usage(engine);
        count > self.settings.max_count || size > self.settings.max_size
    }

    /// Age of the oldest remembered record, in seconds of service time.
    #[must_use]
    pub fn oldest_age_s(&self, engine: &crate::engine::Engine) -> f64 {
        let oldest = engine
            .space(SPACE_ID)
            .ok()
            .and_then(|s| s.indexes.get(&CREATED_INDEX))
            .and_then(|ix| ix.iter().next().cloned())
            .and_then(|t| Record::from_tuple(&t));
        #[allow(clippy::cast_precision_loss, reason = "ages in ms fit f64")]
        oldest.map_or(0.0, |r| self.clock.now_ms().saturating_sub(r.created_ms) as f64 / 1000.0)
    }

    /// The commit group a token's record waits in, if it is not yet durable.
    #[must_use]
    pub fn in_flight(&self, user: u32, token: &[u8]) -> Option<u64> {
        self.in_flight.get(&(user, token.to_vec())).copied()
    }

    /// Notes a new record and the group it will be committed in.
    pub fn added(&mut self, record: &Record, ticket: Option<u64>) {
        self.total_size += record.size();
        self.stats.executed += 1;
        if let Some(ticket) = ticket {
            self.in_flight.insert((record.user_id, record.token.clone()), ticket);
        }
    }

    /// Every group up to `ticket` is durable.
    pub fn durable_up_to(&mut self, ticket: u64) {
        self.in_flight.retain(|_, t| *t > ticket);
    }

    /// The WAL failed: nothing is in flight any more (the records were undone).
    pub fn forget_in_flight(&mut self, engine: &crate::engine::Engine) {
        self.in_flight.clear();
        self.recount(engine);
    }

    /// Evicts up to `max` records, oldest first: outlived, then over count, then over size.
    ///
    /// Records whose commit is not yet durable are never evicted.
    pub fn evict_step(&mut self, engine: &mut crate::engine::Engine, max: usize) -> usize {
        let now = self.clock.now_ms();
        #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss, reason = "lifetime in ms fits u64")]
        let lifetime_ms = (self.settings.lifetime_s.max(0.0) * 1000.0) as u64;
        let (mut count, mut size) = self.usage(engine);
        let mut victims = Vec::new();
        if let Some(ix) = engine.space(SPACE_ID).ok().and_then(|s| s.indexes.get(&CREATED_INDEX)) {
            for t in ix.iter() {
                if victims.len() >= max {
                    break;
                }
                let Some(rec) = Record::from_tuple(t) else { continue };
                let cause = if rec.created_ms.saturating_add(lifetime_ms) <= now {
                    Cause::Lifetime
                } else if count > self.settings.max_count {
                    Cause::Count
                } else if size > self.settings.max_size {
                    Cause::Size
                } else {
                    break;
                };
                if self.in_flight.contains_key(&(rec.user_id, rec.token.clone())) {
                    break;
                }
                count = count.saturating_sub(1);
                size = size.saturating_sub(rec.size());
                victims.push((t.clone(), rec.size(), cause));
            }
        }
        let evicted = victims.len();
        for (t, bytes, cause) in victims {
            if let Err(e) = engine.remove_tuple(SPACE_ID, &t) {
                tracing::error!(error = %e, "idempotency eviction failed");
                continue;
            }
            self.total_size = self.total_size.saturating_sub(bytes);
            match cause {
                Cause::Lifetime => self.stats.evicted_lifetime += 1,
                Cause::Count => self.stats.evicted_count += 1,
                Cause::Size => self.stats.evicted_size += 1,
            }
        }
        evicted
    }
}
