//! The write-ahead log's files: commit groups appended in order, as they are
//! committed, to plain files in `wal/`.
//!
//! A file is named after the sequence number of its first group
//! (`<seq, 20 digits>.xlog`) and holds 8 bytes of [`MAGIC`], then one entry per
//! group: its length (u32), an XXH3 checksum of the rest (u64), its sequence
//! number (u64), all little-endian, and the group's bytes (see [`super::group`]).
//! The WAL thread moves on to a new file when it starts a checkpoint, so a
//! checkpoint reads whole files back and deletes each once it has applied it.
//!
//! Appending is one `write` per commit batch (and one `fdatasync` in `fsync`
//! mode): no memtable, no flushes or compactions, and in `write` mode a file
//! deleted by a checkpoint before the kernel wrote it back never reaches the
//! device. Recovery reads every file left ([`read_groups`]); a torn entry at the
//! end of the last file (a write cut short by a crash, never acknowledged) is cut
//! off, a damaged one anywhere else stops the start.

use std::fs::{self, File, OpenOptions};
use std::io::{self, Write};
use std::path::{Path, PathBuf};

use xxhash_rust::xxh3::xxh3_64;

/// The directory of the log files, beside the rows database's.
pub const DIR: &str = "wal";

/// The first bytes of a log file.
pub const MAGIC: &[u8; 8] = b"obxlog01";

const SUFFIX: &str = ".xlog";

/// The room a file is given ahead of its data, this many bytes at a time (sparse:
/// no disk is used until written), so that an append in `fsync` mode seldom
/// syncs a new file size as well, as fjall's journal and Tarantool's xlog
/// arrange. A file is cut to its data when the log moves on from it; recovery
/// reads at most this much of zeros past a file's data.
pub const ROOM_STEP_BYTES: u64 = 4 * 1024 * 1024;

/// In `fsync` mode, the room is written with zeros this many bytes at a time
/// ahead of the data: appending into a hole makes the file system allocate the
/// block when the append is synced, and `fdatasync` then also commits the file
/// system's journal (with a 300-byte group, one sync in a dozen), while an
/// append over zeros already on the device syncs its data alone.
pub const ZEROED_STEP_BYTES: u64 = 256 * 1024;

/// Bytes before an entry's body: its length and checksum.
const PREFIX_BYTES: usize = 4 + 8;

/// Bytes an entry adds to its group: length, checksum, sequence number.
const ENTRY_HEADER_BYTES: usize = PREFIX_BYTES + 8;

/// A log file on disk: the sequence number of its first group and its path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LogFile {
    /// The sequence number of the first group it holds (or will hold).
    pub first_seq: u64,
    /// Its path.
    pub path: PathBuf,
}

/// The log files in `dir`, oldest first.
pub fn files(dir: &Path) -> io::Result<Vec<LogFile>> {
    let mut out = Vec::new();
    for entry in fs::read_dir(dir)? {
        let path = entry?.path();
        let Some(seq) = path
            .file_name()
            .and_then(|n| n.to_str())
            .and_then(|n| n.strip_suffix(SUFFIX))
            .and_then(|n| n.parse::<u64>().ok())
        else {
            continue;
        };
        out.push(LogFile { first_seq: seq, path });
    }
    out.sort_by_key(|f| f.first_seq);
    Ok(out)
}

fn file_path(dir: &Path, first_seq: u64) -> PathBuf {
    dir.join(format!("{first_seq:020}{SUFFIX}"))
}

/// Why a log file cannot be read.
#[derive(Debug, PartialEq, Eq)]
pub enum Damage {
    /// The file does not start with [`MAGIC`].
    NotALog,
    /// The entry at this offset is cut short or fails its checksum.
    Entry {
        /// Where the entry starts.
        offset: usize,
    },
    /// The entry at this offset does not follow the sequence number before it.
    OutOfOrder {
        /// Where the entry starts.
        offset: usize,
    },
}

/// What one file's bytes hold.
#[derive(Debug, PartialEq, Eq)]
pub struct Contents<'a> {
    /// The groups, `(seq, group)`, in order.
    pub groups: Vec<(u64, &'a [u8])>,
    /// Where the last whole entry ends (what follows is the preallocated zeros,
    /// or damage).
    pub end: usize,
    /// The damage that ended the read early, if any.
    pub damage: Option<Damage>,
}

/// Reads the entries of one file's bytes, up to the zeros of its preallocated
/// room or the first damaged entry.
#[must_use]
pub fn read_groups(bytes: &[u8]) -> Contents<'_> {
    let mut groups = Vec::new();
    let Some(mut rest) = bytes.strip_prefix(MAGIC.as_slice()) else {
        // An empty file is a rotation a crash cut short before its magic.
        let damage = (!bytes.is_empty()).then_some(Damage::NotALog);
        return Contents { groups, end: 0, damage };
    };
    let mut last_seq: Option<u64> = None;
    let mut damage = None;
    while !rest.is_empty() {
        let offset = bytes.len() - rest.len();
        let Some((seq, group, after)) = entry(rest) else {
            if !rest.iter().all(|b| *b == 0) {
                damage = Some(Damage::Entry { offset });
            }
            break;
        };
        if last_seq.is_some_and(|last| seq <= last) {
            damage = Some(Damage::OutOfOrder { offset });
            break;
        }
        last_seq = Some(seq);
        groups.push((seq, group));
        rest = after;
    }
    Contents { groups, end: bytes.len() - rest.len(), damage }
}

/// Whether the damaged entry at `offset` is a torn end of `bytes`, a write a crash
/// cut short (never acknowledged), rather than damage with entries after it: the
/// entry runs to or past the end of the data (the file's end, or the zeros of
/// its preallocated room after it).
#[must_use]
pub fn is_torn_tail(bytes: &[u8], offset: usize) -> bool {
    let rest = bytes.get(offset..).unwrap_or_default();
    let Some(prefix) = rest.get(..PREFIX_BYTES) else { return true };
    let len = u32::from_le_bytes([prefix[0], prefix[1], prefix[2], prefix[3]]) as usize;
    let data = rest.iter().rposition(|b| *b != 0).map_or(0, |last| last + 1);
    PREFIX_BYTES.saturating_add(len) >= data
}

/// One entry from the front of `bytes`: its sequence number, group and what follows.
fn entry(bytes: &[u8]) -> Option<(u64, &[u8], &[u8])> {
    let prefix = bytes.get(..PREFIX_BYTES)?;
    let len = u32::from_le_bytes(prefix[0..4].try_into().ok()?) as usize;
    let checksum = u64::from_le_bytes(prefix[4..12].try_into().ok()?);
    let end = PREFIX_BYTES.checked_add(len)?;
    let body = bytes.get(PREFIX_BYTES..end)?;
    if len < 8 || xxh3_64(body) != checksum {
        return None;
    }
    let seq = u64::from_le_bytes(body[..8].try_into().ok()?);
    Some((seq, &body[8..], &bytes[end..]))
}

/// Appends entries to the newest log file.
#[derive(Debug)]
pub struct Writer {
    dir: PathBuf,
    file: File,
    /// The sequence number the current file starts at (its name).
    first_seq: u64,
    /// The sequence number of the last group appended (or before the first).
    last_seq: u64,
    /// Whether every append is synced to the device (`fsync` mode).
    sync: bool,
    /// An entry's header and body, built before one write.
    entry: Vec<u8>,
    /// Bytes in the current file.
    bytes: u64,
    /// The current file's size: its data and the room after it.
    room_end: u64,
    /// In `fsync` mode, where the zeros written ahead of the data end (see
    /// [`ZEROED_STEP_BYTES`]).
    zeroed_end: u64,
}

impl Writer {
    /// Starts a new file in `dir` for the groups after `last_seq`.
    pub fn create(dir: &Path, last_seq: u64, sync: bool) -> io::Result<Self> {
        let file = new_file(dir, last_seq + 1, sync)?;
        Ok(Self {
            dir: dir.to_path_buf(),
            file,
            first_seq: last_seq + 1,
            last_seq,
            sync,
            entry: Vec::new(),
            bytes: MAGIC.len() as u64,
            room_end: ROOM_STEP_BYTES,
            zeroed_end: MAGIC.len() as u64,
        })
    }

    /// The sequence number the current file starts at.
    #[must_use]
    pub fn first_seq(&self) -> u64 {
        self.first_seq
    }

    /// The sequence number of the last group appended.
    #[must_use]
    pub fn last_seq(&self) -> u64 {
        self.last_seq
    }

    /// Bytes in the current file.
    #[must_use]
    pub fn file_bytes(&self) -> u64 {
        self.bytes
    }

    /// Appends `group` as the next sequence number, written (and synced in
    /// `fsync` mode) before it returns; returns the sequence number.
    pub fn append(&mut self, group: &[u8]) -> io::Result<u64> {
        let len = u32::try_from(group.len() + 8)
            .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "commit group too large for the log"))?;
        let seq = self.last_seq + 1;
        self.entry.clear();
        self.entry.reserve(ENTRY_HEADER_BYTES + group.len());
        self.entry.extend_from_slice(&len.to_le_bytes());
        self.entry.extend_from_slice(&[0; 8]);
        self.entry.extend_from_slice(&seq.to_le_bytes());
        self.entry.extend_from_slice(group);
        let checksum = xxh3_64(&self.entry[PREFIX_BYTES..]);
        self.entry[4..12].copy_from_slice(&checksum.to_le_bytes());
        let end = self.bytes + self.entry.len() as u64;
        if end > self.room_end {
            let room_end = end.next_multiple_of(ROOM_STEP_BYTES);
            self.file.set_len(room_end)?;
            self.room_end = room_end;
        }
        if self.sync && end > self.zeroed_end {
            self.write_zeros_to(end.next_multiple_of(ZEROED_STEP_BYTES).min(self.room_end))?;
        }
        self.file.write_all(&self.entry)?;
        if self.sync {
            self.file.sync_data()?;
        }
        self.last_seq = seq;
        self.bytes += self.entry.len() as u64;
        // A large batch's buffer is not kept for ever.
        if self.entry.capacity() > 4 << 20 {
            self.entry = Vec::new();
        }
        Ok(seq)
    }

    /// Moves on to a new file for the groups after the last appended; the current
    /// one, cut to its data, is complete. On failure the current file stays in use.
    pub fn rotate(&mut self) -> io::Result<()> {
        let next = new_file(&self.dir, self.last_seq + 1, self.sync)?;
        self.file.set_len(self.bytes)?;
        self.file = next;
        self.first_seq = self.last_seq + 1;
        self.bytes = MAGIC.len() as u64;
        self.room_end = ROOM_STEP_BYTES;
        self.zeroed_end = self.bytes;
        Ok(())
    }

    /// Writes zeros from the end of those written so far to `end` (the file's
    /// write position stays where it is).
    fn write_zeros_to(&mut self, end: u64) -> io::Result<()> {
        use std::os::unix::fs::FileExt;
        static ZEROS: [u8; 64 * 1024] = [0; 64 * 1024];
        while self.zeroed_end < end {
            let n = usize::try_from((end - self.zeroed_end).min(ZEROS.len() as u64)).unwrap_or(ZEROS.len());
            self.file.write_all_at(&ZEROS[..n], self.zeroed_end)?;
            self.zeroed_end += n as u64;
        }
        Ok(())
    }

    /// Syncs the current file to the device.
    pub fn sync(&self) -> io::Result<()> {
        self.file.sync_data()
    }
}

/// Creates the file for the groups from `first_seq`, with its magic; with
/// `sync`, the file and its directory entry are synced.
fn new_file(dir: &Path, first_seq: u64, sync: bool) -> io::Result<File> {
    let path = file_path(dir, first_seq);
    let mut file = OpenOptions::new().create(true).truncate(true).write(true).open(&path)?;
    file.write_all(MAGIC)?;
    file.set_len(ROOM_STEP_BYTES)?;
    if sync {
        file.sync_all()?;
        File::open(dir)?.sync_all()?;
    }
    Ok(file)
}

/// Cuts a file to its first `len` bytes (a torn tail), synced.
pub fn truncate(path: &Path, len: usize) -> io::Result<()> {
    let file = OpenOptions::new().write(true).open(path)?;
    file.set_len(len as u64)?;
    file.sync_all()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn temp_dir(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("oncebox-xlog-{name}-{}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        fs::create_dir_all(&dir).unwrap();
        dir
    }

    #[test]
    fn appended_groups_read_back_in_order_across_files() {
        let dir = temp_dir("order");
        let mut w = Writer::create(&dir, 4, false).unwrap();
        assert_eq!(w.append(b"five").unwrap(), 5);
        assert_eq!(w.append(b"").unwrap(), 6);
        w.rotate().unwrap();
        assert_eq!(w.append(b"seven").unwrap(), 7);
        let found = files(&dir).unwrap();
        assert_eq!(found.iter().map(|f| f.first_seq).collect::<Vec<_>>(), [5, 7]);
        let first = fs::read(&found[0].path).unwrap();
        let read = read_groups(&first);
        assert_eq!((read.groups, read.damage), (vec![(5, &b"five"[..]), (6, &b""[..])], None));
        assert_eq!(read.end, first.len(), "a file the log moved on from is cut to its data");
        let second = fs::read(&found[1].path).unwrap();
        assert_eq!(second.len() as u64, ROOM_STEP_BYTES, "the current file has its room");
        let read = read_groups(&second);
        assert_eq!((read.groups, read.damage), (vec![(7, &b"seven"[..])], None));
        assert_eq!(read.end, MAGIC.len() + ENTRY_HEADER_BYTES + 5);
        fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn in_fsync_mode_appends_land_on_zeros_already_written() {
        use std::os::unix::fs::MetadataExt;
        let dir = temp_dir("zeros");
        let mut w = Writer::create(&dir, 0, true).unwrap();
        w.append(b"first").unwrap();
        let path = files(&dir).unwrap()[0].path.clone();
        // Blocks of 512 bytes on the device: the first step is written, not a hole.
        let on_device = |p: &Path| fs::metadata(p).unwrap().blocks() * 512;
        assert!(on_device(&path) >= ZEROED_STEP_BYTES, "{} bytes on the device", on_device(&path));
        assert!(on_device(&path) < ROOM_STEP_BYTES, "zeros come a step at a time");
        let big = vec![7u8; ZEROED_STEP_BYTES as usize];
        w.append(&big).unwrap();
        assert!(on_device(&path) >= 2 * ZEROED_STEP_BYTES);
        let bytes = fs::read(&path).unwrap();
        let read = read_groups(&bytes);
        assert_eq!((read.groups, read.damage), (vec![(1, &b"first"[..]), (2, &big[..])], None));
        // Without fsync the room stays a hole: nothing would sync the zeros.
        let mut w = Writer::create(&dir, 2, false).unwrap();
        w.append(b"third").unwrap();
        assert!(on_device(&files(&dir).unwrap()[1].path) < ZEROED_STEP_BYTES);
        fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_file_grows_its_room_a_step_at_a_time() {
        let dir = temp_dir("room");
        let mut w = Writer::create(&dir, 0, false).unwrap();
        let big = vec![7u8; ROOM_STEP_BYTES as usize + 10];
        w.append(b"small").unwrap();
        w.append(&big).unwrap();
        let path = &files(&dir).unwrap()[0].path;
        assert_eq!(fs::metadata(path).unwrap().len(), 2 * ROOM_STEP_BYTES);
        let bytes = fs::read(path).unwrap();
        let read = read_groups(&bytes);
        assert_eq!(read.damage, None);
        assert_eq!(read.groups, vec![(1, &b"small"[..]), (2, &big[..])]);
        w.rotate().unwrap();
        assert_eq!(fs::metadata(path).unwrap().len(), data_end(&bytes));
        fs::remove_dir_all(&dir).unwrap();
    }

    /// Where the data of a file's bytes ends.
    fn data_end(bytes: &[u8]) -> u64 {
        read_groups(bytes).end as u64
    }

    #[test]
    fn a_torn_or_damaged_entry_ends_the_read_where_it_starts() {
        let dir = temp_dir("torn");
        let mut w = Writer::create(&dir, 0, false).unwrap();
        w.append(b"one").unwrap();
        w.append(b"two").unwrap();
        let path = &files(&dir).unwrap()[0].path;
        let mut bytes = fs::read(path).unwrap();
        bytes.truncate(read_groups(&bytes).end);
        let second = MAGIC.len() + ENTRY_HEADER_BYTES + 3;
        for cut in second..bytes.len() {
            let read = read_groups(&bytes[..cut]);
            assert_eq!(read.groups, vec![(1, &b"one"[..])]);
            assert_eq!(read.damage, (cut > second).then_some(Damage::Entry { offset: second }));
            assert_eq!(read.end, second);
            let mut in_room = bytes[..cut].to_vec();
            in_room.resize(bytes.len() + 100, 0);
            let read = read_groups(&in_room);
            assert_eq!(read.damage, (cut > second).then_some(Damage::Entry { offset: second }));
            if cut > second {
                assert!(is_torn_tail(&in_room, second), "cut short in its room: torn");
            }
        }
        let mut flipped = bytes.clone();
        *flipped.last_mut().unwrap() ^= 1;
        assert_eq!(read_groups(&flipped).damage, Some(Damage::Entry { offset: second }));
        assert!(is_torn_tail(&bytes[..bytes.len() - 1], second));
        assert!(is_torn_tail(&flipped, second), "the last entry, whole but wrong: torn");
        let mut zeros = bytes[..second].to_vec();
        zeros.resize(second + 64, 0);
        assert_eq!(read_groups(&zeros).damage, None, "the room after the last entry");
        let mut first_flipped = bytes.clone();
        first_flipped[MAGIC.len() + PREFIX_BYTES] ^= 1;
        assert_eq!(read_groups(&first_flipped).damage, Some(Damage::Entry { offset: MAGIC.len() }));
        assert!(!is_torn_tail(&first_flipped, MAGIC.len()), "an entry follows: damage, not a torn end");
        assert_eq!(read_groups(b"not a log").damage, Some(Damage::NotALog));
        assert_eq!(read_groups(b""), Contents { groups: vec![], end: 0, damage: None });
        fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn damaged_bytes_never_panic_and_whole_entries_before_the_damage_read_back() {
        let dir = temp_dir("mutations");
        let mut w = Writer::create(&dir, 0, false).unwrap();
        for n in 0..20u8 {
            w.append(&vec![n; usize::from(n) * 7]).unwrap();
        }
        let mut clean = fs::read(&files(&dir).unwrap()[0].path).unwrap();
        clean.truncate(read_groups(&clean).end);
        let mut state = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = move || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        };
        for _ in 0..2000 {
            let mut bytes = clean.clone();
            let at = usize::try_from(next() % bytes.len() as u64).unwrap();
            match next() % 3 {
                0 => bytes[at] ^= u8::try_from(next() % 255 + 1).unwrap(),
                1 => bytes.truncate(at),
                _ => bytes.splice(at..at, [0xff; 9]).for_each(drop),
            }
            let read = read_groups(&bytes);
            // Every group read is one of those written, in order, from the first.
            for (i, (seq, group)) in read.groups.iter().enumerate() {
                let n = u8::try_from(i).unwrap();
                assert_eq!((*seq, *group), (u64::from(n) + 1, &vec![n; usize::from(n) * 7][..]));
            }
            let _ = is_torn_tail(&bytes, read.end);
        }
        fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn sequence_numbers_must_increase() {
        let dir = temp_dir("seq");
        let mut w = Writer::create(&dir, 0, false).unwrap();
        w.append(b"a").unwrap();
        let mut one = fs::read(&files(&dir).unwrap()[0].path).unwrap();
        one.truncate(read_groups(&one).end);
        let mut twice = one.clone();
        twice.extend_from_slice(&one[MAGIC.len()..]);
        assert_eq!(read_groups(&twice).damage, Some(Damage::OutOfOrder { offset: one.len() }));
        fs::remove_dir_all(&dir).unwrap();
    }
}
