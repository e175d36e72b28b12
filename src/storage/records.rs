//! `_idempotency`'s records, kept apart from the rows in segment files.
//!
//! Records are many, short-lived and under random keys: as rows they cost every
//! checkpoint a sorted run of fresh keys that overlaps all the rows' tables, so
//! each compaction rewrote them, and each eviction later a tombstone. Instead,
//! a checkpoint writes the record operations of the groups it applies, in commit
//! order, as one file, `records/<seq>.seg` (`seq`: the last group it covers),
//! synced before those groups leave the log. Recovery replays the segments in
//! order ([`Segments::replay`]).
//!
//! # Evictions: the records floor
//!
//! With its evictions the TX thread logs a floor: no record left was created
//! before that service time ([`super::RowOp::RecordsFloor`]). The floor is how
//! evictions of the oldest records are logged: only an evicted record created
//! in the floor's own millisecond gets a delete of its own, so an eviction
//! costs the log and the segments almost nothing. Segments keep the floors in
//! place, and replay removes each record put before a floor and created before
//! it.
//!
//! # Dropping segments
//!
//! A checkpoint that applies a floor drops the oldest segments, in order, while
//! each was written by an earlier checkpoint and every record it put was
//! created before the floor: at the floor's place in the log those puts were
//! all gone, and a dropped segment's deletes and floors only concern puts of
//! segments dropped with or before it. Emptying `_idempotency` (truncate) drops
//! every earlier segment.
//!
//! A segment file: 8 bytes [`MAGIC`], the newest creation time of a record it
//! puts (u64 little-endian), then its operations in the byte form of
//! [`super::group`].

use std::collections::HashMap;
use std::fs::{self, File};
use std::hash::{BuildHasherDefault, Hasher};
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use xxhash_rust::xxh3::xxh3_64_with_seed;

use super::fjall_store::StoreError;
use super::group::{self, Op};
use super::keys::space_prefix;
use crate::engine::tuple::Tuple;
use crate::idempotency::{created_ms_of, SPACE_ID};

/// The directory of the segments, beside the rows database's (see
/// [`super::datadir`] and [`super::fjall_store::FjallStore::open`]).
pub const DIR: &str = "records";

/// The first bytes of a segment file.
pub const MAGIC: &[u8; 8] = b"obrecs01";

const HEADER_BYTES: usize = 16;

/// The buffer a segment is written through.
const WRITE_BUFFER_BYTES: usize = 256 * 1024;

/// Segment bytes per record, about, to size the replay's map in advance (a put
/// of a small reply takes about 80).
const ROOM_PER_RECORD: usize = 96;
const SUFFIX: &str = "seg";

/// Whether `op` changes `_idempotency` (and so belongs in a segment, not the rows).
#[must_use]
pub fn is_record_op(op: &Op<'_>) -> bool {
    match op {
        Op::Put { key, .. } | Op::Delete { key } => key.starts_with(&space_prefix(SPACE_ID)),
        Op::Truncate { space_id } => *space_id == SPACE_ID,
        Op::Clock { .. } | Op::RecordsFloor { .. } => false,
    }
}

/// One segment on disk.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Segment {
    /// The last commit group it covers (its file name).
    seq: u64,
    /// The newest creation time of a record it puts (`u64::MAX` when unknown).
    newest_ms: u64,
}

/// The segment files of a data directory, oldest first.
#[derive(Debug)]
pub struct Segments {
    dir: PathBuf,
    list: Mutex<Vec<Segment>>,
}

impl Segments {
    /// Opens (creating if needed) the segment directory `dir`; a segment whose
    /// write a crash interrupted (never renamed into place) is removed.
    pub fn open(dir: &Path) -> Result<Self, StoreError> {
        let io = |e: std::io::Error| StoreError(format!("records directory {}: {e}", dir.display()));
        fs::create_dir_all(dir).map_err(io)?;
        let mut list = Vec::new();
        for entry in fs::read_dir(dir).map_err(io)? {
            let path = entry.map_err(io)?.path();
            let Some(name) = path.file_name().and_then(|n| n.to_str()) else { continue };
            if name.ends_with(".tmp") {
                fs::remove_file(&path).map_err(io)?;
                continue;
            }
            let Some(seq) = name.strip_suffix(".seg").and_then(|s| s.parse::<u64>().ok()) else { continue };
            let mut header = [0u8; HEADER_BYTES];
            std::io::Read::read_exact(&mut File::open(&path).map_err(io)?, &mut header).map_err(io)?;
            let newest_ms = parse_header(&header).ok_or_else(|| damaged(&path))?;
            list.push(Segment { seq, newest_ms });
        }
        list.sort_unstable_by_key(|s| s.seq);
        Ok(Self { dir: dir.to_path_buf(), list: Mutex::new(list) })
    }

    /// Writes `ops` (record operations, in commit order) as the segment of the
    /// groups up to `seq`, durably: written, synced and renamed into place.
    pub fn write(&self, seq: u64, ops: &[Op<'_>]) -> Result<(), StoreError> {
        let newest_ms = ops
            .iter()
            .filter_map(|op| match op {
                Op::Put { tuple, .. } => Some(created_ms_of(tuple).unwrap_or(u64::MAX)),
                _ => None,
            })
            .max()
            .unwrap_or(0);
        let path = self.path(seq);
        let tmp = path.with_extension("seg.tmp");
        let io = |e: std::io::Error| StoreError(format!("writing records segment {}: {e}", path.display()));
        // Streamed through a small buffer: a segment of megabytes built in memory first
        // cost the checkpoint more in fresh pages (faults, zeroing) than in copying.
        let mut out = BufWriter::with_capacity(WRITE_BUFFER_BYTES, File::create(&tmp).map_err(io)?);
        out.write_all(MAGIC).map_err(io)?;
        out.write_all(&newest_ms.to_le_bytes()).map_err(io)?;
        let mut encoded = Vec::with_capacity(256);
        for op in ops {
            encoded.clear();
            group::encode_op(&mut encoded, op);
            out.write_all(&encoded).map_err(io)?;
        }
        let file = out.into_inner().map_err(|e| io(e.into_error()))?;
        file.sync_data().map_err(io)?;
        fs::rename(&tmp, &path).map_err(io)?;
        File::open(&self.dir).and_then(|d| d.sync_all()).map_err(io)?;
        let mut list = self.list.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        list.retain(|s| s.seq != seq);
        let at = list.partition_point(|s| s.seq < seq);
        list.insert(at, Segment { seq, newest_ms });
        Ok(())
    }

    /// After a checkpoint of the groups from `from` on: drops the oldest segments
    /// written before it whose records were all created before `floor`, or every
    /// one written before it when `_idempotency` was emptied. Returns how many.
    pub fn drop_dead(&self, from: u64, floor: Option<u64>, emptied: bool) -> Result<usize, StoreError> {
        let mut list = self.list.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        let dead =
            list.iter().take_while(|s| s.seq < from && (emptied || floor.is_some_and(|f| s.newest_ms < f))).count();
        if dead == 0 {
            return Ok(0);
        }
        // Oldest first, so that a crash part way leaves a prefix dropped.
        for segment in list.drain(..dead) {
            let path = self.path(segment.seq);
            match fs::remove_file(&path) {
                Ok(()) => {}
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(e) => return Err(StoreError(format!("removing records segment {}: {e}", path.display()))),
            }
        }
        File::open(&self.dir)
            .and_then(|d| d.sync_all())
            .map_err(|e| StoreError(format!("records directory {}: {e}", self.dir.display())))?;
        Ok(dead)
    }

    /// Replays every segment in order: the records they leave (tuples of `_idempotency`), in no order.
    ///
    /// A records floor removes every record put before it and created before the
    /// floor: evictions are logged by it alone. Floors are applied at the end, each
    /// record against the highest floor logged after its put.
    pub fn replay(&self) -> Result<Vec<Tuple>, StoreError> {
        let list = self.list.lock().unwrap_or_else(std::sync::PoisonError::into_inner).clone();
        let mut files = Vec::with_capacity(list.len());
        for segment in &list {
            let path = self.path(segment.seq);
            let bytes =
                fs::read(&path).map_err(|e| StoreError(format!("reading records segment {}: {e}", path.display())))?;
            files.push((path, bytes));
        }
        // Keys are borrowed from the files, and each tuple is made once, as the engine keeps it.
        let room = files.iter().map(|(_, b)| b.len()).sum::<usize>() / ROOM_PER_RECORD;
        // Each record with the number of floors logged before its put.
        let mut records: HashMap<&[u8], (Tuple, usize), BuildHasherDefault<KeyHasher>> =
            HashMap::with_capacity_and_hasher(room, BuildHasherDefault::default());
        let mut floors: Vec<u64> = Vec::new();
        for (path, bytes) in &files {
            let mut ops = Vec::new();
            let body = bytes.get(HEADER_BYTES..).filter(|_| parse_header(bytes).is_some());
            body.and_then(|b| group::ops_into(b, &mut ops)).ok_or_else(|| damaged(path))?;
            for op in ops {
                match op {
                    Op::Put { key, tuple } => {
                        records.insert(key, (tuple.into(), floors.len()));
                    }
                    Op::Delete { key } => {
                        records.remove(key);
                    }
                    Op::Truncate { .. } => records.clear(),
                    Op::RecordsFloor { ms } => floors.push(ms),
                    Op::Clock { .. } => {}
                }
            }
        }
        // after[i]: the highest floor logged after the i-th (0 if none).
        let mut after = vec![0u64; floors.len() + 1];
        for i in (0..floors.len()).rev() {
            after[i] = after[i + 1].max(floors[i]);
        }
        Ok(records
            .into_values()
            .filter(|(tuple, seen)| after[*seen] == 0 || created_ms_of(tuple).is_none_or(|c| c >= after[*seen]))
            .map(|(tuple, _)| tuple)
            .collect())
    }

    /// The newest segment's commit group (0 without segments): commit groups to come
    /// must be numbered after it, so that their segments replay after it.
    pub fn newest_seq(&self) -> u64 {
        self.list.lock().unwrap_or_else(std::sync::PoisonError::into_inner).last().map_or(0, |s| s.seq)
    }

    /// How many segments there are.
    #[cfg(test)]
    pub(crate) fn count(&self) -> usize {
        self.list.lock().unwrap_or_else(std::sync::PoisonError::into_inner).len()
    }

    fn path(&self, seq: u64) -> PathBuf {
        self.dir.join(format!("{seq:020}.{SUFFIX}"))
    }
}

/// The replay's hasher of record keys: XXH3 over the key's bytes (std's SipHash
/// was a fifth of a restart with a million records; the keys come from the
/// server's own files, so there is no one to flood the map).
#[derive(Default)]
struct KeyHasher(u64);

impl Hasher for KeyHasher {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        self.0 = xxh3_64_with_seed(bytes, self.0);
    }

    fn write_usize(&mut self, n: usize) {
        self.0 ^= n as u64;
    }
}

/// The newest creation time a segment header gives, if it is one.
fn parse_header(bytes: &[u8]) -> Option<u64> {
    let header = bytes.get(..HEADER_BYTES)?;
    if &header[..8] != MAGIC {
        return None;
    }
    Some(u64::from_le_bytes(header[8..].try_into().ok()?))
}

fn damaged(path: &Path) -> StoreError {
    StoreError(format!("damaged records segment {}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::value::KeyPart;
    use crate::idempotency::{NewRecord, SPACE_ID};
    use crate::storage::keys::row_key;

    fn dir(name: &str) -> PathBuf {
        let p = std::env::temp_dir().join(format!("oncebox-records-{name}-{}", std::process::id()));
        let _ = fs::remove_dir_all(&p);
        p
    }

    fn key(token: u64) -> Vec<u8> {
        row_key(SPACE_ID, &[KeyPart::Uint(1), KeyPart::Uint(token)])
    }

    fn record(token: u64, created_ms: u64) -> Vec<u8> {
        let mut token_mp = Vec::new();
        crate::protocol::msgpack::write::uint(&mut token_mp, token);
        let mut t = Vec::new();
        NewRecord { user_id: 1, token: &token_mp, fingerprint: [0; 16], created_ms, reply: b"\x80" }.encode(&mut t);
        t
    }

    fn replayed(segments: &Segments) -> Vec<Vec<u8>> {
        let mut v: Vec<_> = segments.replay().unwrap().into_iter().map(|t| t.to_vec()).collect();
        v.sort();
        v
    }

    #[test]
    fn record_operations_are_told_from_row_operations() {
        assert!(is_record_op(&Op::Put { key: &key(1), tuple: b"\x90" }));
        assert!(is_record_op(&Op::Delete { key: &key(1) }));
        assert!(is_record_op(&Op::Truncate { space_id: SPACE_ID }));
        assert!(!is_record_op(&Op::Put { key: &row_key(512, &[KeyPart::Uint(1)]), tuple: b"\x90" }));
        assert!(!is_record_op(&Op::Truncate { space_id: 512 }));
        assert!(!is_record_op(&Op::RecordsFloor { ms: 1 }));
    }

    #[test]
    fn segments_replay_in_order_and_survive_reopen() {
        let d = dir("replay");
        let segments = Segments::open(&d).unwrap();
        let (r1, r2, r3) = (record(1, 10), record(2, 20), record(3, 30));
        segments.write(5, &[Op::Put { key: &key(1), tuple: &r1 }, Op::Put { key: &key(2), tuple: &r2 }]).unwrap();
        segments.write(9, &[Op::Delete { key: &key(1) }, Op::Put { key: &key(3), tuple: &r3 }]).unwrap();
        fs::write(d.join("00000000000000000012.seg.tmp"), b"half written").unwrap();
        drop(segments);
        let segments = Segments::open(&d).unwrap();
        assert_eq!(segments.count(), 2);
        assert!(!d.join("00000000000000000012.seg.tmp").exists(), "an unfinished write is removed");
        assert_eq!(replayed(&segments), vec![r2.clone(), r3.clone()]);
        // A truncate clears what came before it, in the same segment or earlier ones.
        segments.write(11, &[Op::Truncate { space_id: SPACE_ID }, Op::Put { key: &key(1), tuple: &r1 }]).unwrap();
        assert_eq!(replayed(&segments), vec![r1]);
        fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn a_floor_removes_the_records_put_before_it_and_created_before_it() {
        let d = dir("floor");
        let segments = Segments::open(&d).unwrap();
        let (a, b, c, e) = (record(1, 10), record(2, 20), record(3, 5), record(4, 40));
        let floor = |ms| Op::RecordsFloor { ms };
        segments.write(1, &[Op::Put { key: &key(1), tuple: &a }, Op::Put { key: &key(2), tuple: &b }]).unwrap();
        // 'a' (10) is below the floor; 'b' (20) is not.
        segments.write(2, &[floor(15)]).unwrap();
        assert_eq!(replayed(&segments), vec![b.clone()]);
        // A record put after a floor is not removed by it, however old (an admin's).
        segments
            .write(3, &[floor(12), Op::Put { key: &key(3), tuple: &c }, Op::Put { key: &key(4), tuple: &e }])
            .unwrap();
        assert_eq!(replayed(&segments), vec![b.clone(), c.clone(), e.clone()]);
        // A later, higher floor reaches every record put before it.
        segments.write(4, &[floor(25)]).unwrap();
        assert_eq!(replayed(&segments), vec![e.clone()]);
        drop(segments);
        assert_eq!(replayed(&Segments::open(&d).unwrap()), vec![e], "the same after reopening");
        fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn only_an_old_prefix_below_the_floor_is_dropped() {
        let d = dir("drop");
        let segments = Segments::open(&d).unwrap();
        let (a, b, c) = (record(1, 10), record(2, 50), record(3, 20));
        segments.write(1, &[Op::Put { key: &key(1), tuple: &a }]).unwrap();
        segments.write(2, &[Op::Put { key: &key(2), tuple: &b }]).unwrap();
        segments.write(3, &[Op::Put { key: &key(3), tuple: &c }]).unwrap();
        assert_eq!(segments.drop_dead(4, None, false).unwrap(), 0, "no floor, nothing dropped");
        // Segment 3's records are below the floor too, but segment 2's are not: a
        // later segment never goes before an earlier one (its deletes may matter).
        assert_eq!(segments.drop_dead(4, Some(30), false).unwrap(), 1);
        assert_eq!(segments.count(), 2);
        // Segments the checkpoint itself wrote (from its first group on) stay.
        assert_eq!(segments.drop_dead(3, Some(100), false).unwrap(), 1);
        assert_eq!(replayed(&segments), vec![c]);
        assert_eq!(segments.drop_dead(4, None, true).unwrap(), 1, "emptied: every earlier segment goes");
        assert_eq!(segments.count(), 0);
        assert_eq!(fs::read_dir(&d).unwrap().count(), 0);
        fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn a_damaged_segment_is_reported_not_skipped() {
        let d = dir("damaged");
        let segments = Segments::open(&d).unwrap();
        let r = record(1, 10);
        segments.write(1, &[Op::Put { key: &key(1), tuple: &r }]).unwrap();
        let path = segments.path(1);
        let bytes = fs::read(&path).unwrap();
        fs::write(&path, &bytes[..bytes.len() - 3]).unwrap();
        assert!(segments.replay().unwrap_err().0.contains("damaged records segment"));
        fs::write(&path, b"not a segment at all").unwrap();
        assert!(Segments::open(&d).is_err());
        fs::remove_dir_all(&d).unwrap();
    }
}
