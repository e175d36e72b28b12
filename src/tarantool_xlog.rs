//! Reading Tarantool's own write-ahead logs and snapshots (`.xlog`, `.snap`,
//! and vinyl's files of the same format), for the `xlog` Lua module
//! (`xlog.pairs`, what `tarantoolctl cat` and `play` read them with).
//!
//! A file is a text header (its type, the format version, then `Key: value`
//! lines up to an empty line) followed by transactions. Each transaction is a
//! fixed 19-byte header — a 4-byte marker ([`TX_MARKER`], or [`ZTX_MARKER`]
//! for a zstd-compressed one), then, as msgpack, the data's length, the
//! previous checksum and the data's CRC32-C, padded with a msgpack string —
//! and the data: rows, each a header map and (unless a NOP) a body. An
//! [`EOF_MARKER`] ends a complete file. As Tarantool's reader, a transaction
//! that is damaged (bad checksum, cut short, undecodable) is skipped: reading
//! goes on at the next marker.
//!
//! Parsing only: the caller hands in the file's bytes.

use crate::lua::native::crc32c_update;
use crate::protocol::msgpack::Reader;

/// Marks an uncompressed transaction.
pub const TX_MARKER: u32 = 0xd5ba_0bab;
/// Marks a zstd-compressed transaction.
pub const ZTX_MARKER: u32 = 0xd5ba_0bba;
/// Ends a complete file.
pub const EOF_MARKER: u32 = 0xd510_aded;
/// The size of a transaction's fixed header, marker included.
const FIXHEADER_BYTES: usize = 19;
/// The largest transaction accepted (compressed or not): a length past it is damage.
const MAX_TX_BYTES: usize = 1 << 30;

/// File types Tarantool's reader opens.
const FILE_TYPES: [&str; 6] = ["SNAP", "XLOG", "RUN", "INDEX", "DATA", "VYLOG"];

/// Why a file cannot be read, in Tarantool's words.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum XlogError {
    /// The text header is cut short.
    UnexpectedEof,
    /// Not a type of file the reader knows.
    Unsupported(String),
}

impl std::fmt::Display for XlogError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::UnexpectedEof => f.write_str("Unexpected end of file, run with 'force_recovery = true'"),
            Self::Unsupported(kind) => write!(f, "xlog reader does not support '{kind}' file type"),
        }
    }
}

/// A file's text header.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Meta {
    /// `XLOG`, `SNAP`, ...
    pub file_type: String,
    /// The format version (`0.13`).
    pub version: String,
    /// Where the first transaction starts.
    pub data_offset: usize,
}

/// Reads a file's text header.
///
/// # Errors
/// A header cut short, or a file type Tarantool's reader does not open.
pub fn parse_meta(bytes: &[u8]) -> Result<Meta, XlogError> {
    let mut lines = Vec::new();
    let mut at = 0;
    loop {
        let end = bytes[at..].iter().position(|&b| b == b'\n').ok_or(XlogError::UnexpectedEof)?;
        let line = &bytes[at..at + end];
        at += end + 1;
        // The empty line ends the header (after the type and version lines).
        if line.is_empty() && lines.len() >= 2 {
            break;
        }
        lines.push(line);
    }
    let file_type = String::from_utf8_lossy(lines[0]).into_owned();
    if !FILE_TYPES.contains(&file_type.as_str()) {
        return Err(XlogError::Unsupported(file_type));
    }
    Ok(Meta { file_type, version: String::from_utf8_lossy(lines[1]).into_owned(), data_offset: at })
}

/// A row: its header map and its body, as msgpack.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Row {
    /// The header map.
    pub header: Vec<u8>,
    /// The body (absent for a NOP).
    pub body: Option<Vec<u8>>,
}

/// The transactions of a file after its header, one at a time.
#[derive(Debug)]
pub struct Transactions {
    bytes: Vec<u8>,
    at: usize,
}

impl Transactions {
    /// The transactions of the file `bytes`, whose header is `meta`.
    #[must_use]
    pub fn new(bytes: Vec<u8>, meta: &Meta) -> Self {
        let at = meta.data_offset.min(bytes.len());
        Self { bytes, at }
    }

    /// The next transaction's rows, skipping damaged ones; `None` at the end.
    pub fn next_rows(&mut self) -> Option<Vec<Row>> {
        loop {
            let marker = self.read_marker()?;
            if marker == EOF_MARKER {
                return None;
            }
            if marker != TX_MARKER && marker != ZTX_MARKER {
                // Not at a transaction: look for the next one.
                self.skip_to_marker(self.at + 1)?;
                continue;
            }
            match self.read_tx(marker) {
                Some(rows) => return Some(rows),
                None => self.skip_to_marker(self.at + 1)?,
            }
        }
    }

    fn read_marker(&self) -> Option<u32> {
        let word = self.bytes.get(self.at..self.at + 4)?;
        Some(u32::from_be_bytes(word.try_into().ok()?))
    }

    /// Moves to the first transaction marker at or after `from`.
    fn skip_to_marker(&mut self, from: usize) -> Option<()> {
        let found = (from..self.bytes.len().saturating_sub(3)).find(|&i| {
            let word = u32::from_be_bytes([self.bytes[i], self.bytes[i + 1], self.bytes[i + 2], self.bytes[i + 3]]);
            word == TX_MARKER || word == ZTX_MARKER || word == EOF_MARKER
        });
        match found {
            Some(i) => {
                self.at = i;
                Some(())
            }
            None => {
                self.at = self.bytes.len();
                None
            }
        }
    }

    /// Reads the transaction at the cursor (past its marker); `None` if it is damaged.
    fn read_tx(&mut self, marker: u32) -> Option<Vec<Row>> {
        let fixheader = self.bytes.get(self.at..self.at + FIXHEADER_BYTES)?;
        let mut r = Reader::new(&fixheader[4..]);
        let len = usize::try_from(r.read_uint().ok()?).ok().filter(|&n| n <= MAX_TX_BYTES)?;
        let _previous_crc = r.read_uint().ok()?;
        let crc = r.read_uint().ok()?;
        let start = self.at + FIXHEADER_BYTES;
        let data = self.bytes.get(start..start.checked_add(len)?)?;
        if u64::from(crc32c_update(0, data)) != crc {
            return None;
        }
        let rows = if marker == ZTX_MARKER { rows_of(&decompress(data, MAX_TX_BYTES)?)? } else { rows_of(data)? };
        self.at = start + len;
        Some(rows)
    }
}

/// A zstd frame's content, if it is no larger than `limit` bytes (a frame that
/// says more is damage: it is not inflated past the limit).
fn decompress(data: &[u8], limit: usize) -> Option<Vec<u8>> {
    use std::io::Read;
    let mut source = data;
    let decoder = ruzstd::decoding::StreamingDecoder::new(&mut source).ok()?;
    let mut out = Vec::new();
    decoder.take(limit as u64 + 1).read_to_end(&mut out).ok()?;
    (out.len() <= limit).then_some(out)
}

/// IPROTO_NOP, the one row type with no body.
const NOP: u64 = 12;

/// Splits a transaction's data into rows; `None` if it does not decode.
fn rows_of(data: &[u8]) -> Option<Vec<Row>> {
    let mut rows = Vec::new();
    let mut r = Reader::new(data);
    while !r.is_empty() {
        let header_start = r.position();
        let mut kind = None;
        let pairs = r.read_map_len().ok()?;
        for _ in 0..pairs {
            let key = r.read_uint().ok();
            if key == Some(0) {
                kind = r.read_uint().ok();
            } else {
                r.skip().ok()?;
            }
        }
        let header = data[header_start..r.position()].to_vec();
        let body = if !r.is_empty() && kind != Some(NOP) { Some(r.skip().ok()?.to_vec()) } else { None };
        rows.push(Row { header, body });
    }
    Some(rows)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::msgpack::write;

    fn tx(marker: u32, data: &[u8]) -> Vec<u8> {
        let mut out = marker.to_be_bytes().to_vec();
        write::uint(&mut out, data.len() as u64);
        write::uint(&mut out, 0);
        out.push(0xce);
        out.extend_from_slice(&crc32c_update(0, data).to_be_bytes());
        let padding = FIXHEADER_BYTES - out.len();
        out.push(0xa0 | u8::try_from(padding - 1).unwrap());
        out.resize(FIXHEADER_BYTES, 0);
        out.extend_from_slice(data);
        out
    }

    fn row(ty: u64, lsn: u64, body: Option<&[u8]>) -> Vec<u8> {
        let mut out = Vec::new();
        write::map_len(&mut out, 2);
        write::uint(&mut out, 0);
        write::uint(&mut out, ty);
        write::uint(&mut out, 3);
        write::uint(&mut out, lsn);
        out.extend_from_slice(body.unwrap_or_default());
        out
    }

    fn file(txs: &[Vec<u8>], eof: bool) -> Vec<u8> {
        let mut out = b"XLOG\n0.13\nVersion: 2.6.0\nVClock: {}\n\n".to_vec();
        for t in txs {
            out.extend_from_slice(t);
        }
        if eof {
            out.extend_from_slice(&EOF_MARKER.to_be_bytes());
        }
        out
    }

    fn all_rows(bytes: &[u8]) -> Vec<Row> {
        let meta = parse_meta(bytes).unwrap();
        let mut txs = Transactions::new(bytes.to_vec(), &meta);
        std::iter::from_fn(|| txs.next_rows()).flatten().collect()
    }

    #[test]
    fn rows_of_each_transaction_in_order_and_a_nop_without_body() {
        let body = [0x81, 0x10, 0xcd, 0x02, 0x00];
        let first = [row(2, 1, Some(&body)), row(12, 2, None), row(3, 3, Some(&body))].concat();
        let bytes = file(&[tx(TX_MARKER, &first), tx(TX_MARKER, &row(5, 4, Some(&body)))], true);
        let rows = all_rows(&bytes);
        assert_eq!(rows.len(), 4);
        assert_eq!((rows[1].body.as_ref(), rows[2].body.as_deref()), (None, Some(&body[..])));
        assert_eq!(rows[3].header, row(5, 4, None));
    }

    #[test]
    fn a_damaged_transaction_is_skipped_and_reading_goes_on() {
        let body = [0x80];
        let mut bad = tx(TX_MARKER, &row(2, 1, Some(&body)));
        let last = bad.len() - 1;
        bad[last] ^= 0x55;
        let bytes = file(&[bad, tx(TX_MARKER, &row(2, 2, Some(&body)))], false);
        let rows = all_rows(&bytes);
        assert_eq!(rows, vec![Row { header: row(2, 2, None), body: Some(vec![0x80]) }]);
        // Cut short: nothing, and no error.
        let whole = file(&[tx(TX_MARKER, &row(2, 1, Some(&body)))], true);
        assert!(all_rows(&whole[..whole.len() - 8]).is_empty());
    }

    #[test]
    fn files_tarantool_wrote_are_read_whole_compressed_transactions_included() {
        // Written by Tarantool 2.6: 311 rows, the last 301 of them one compressed transaction.
        let rows = all_rows(include_bytes!("../fuzz/seeds-xlog/compressed_tx.xlog"));
        assert_eq!(rows.len(), 311);
        let mut r = Reader::new(&rows[310].header);
        assert_eq!(r.read_map_len().map(|n| n >= 4), Ok(true));
        assert_eq!(all_rows(include_bytes!("../fuzz/seeds-xlog/one_row.xlog")).len(), 1);
    }

    #[test]
    fn a_compressed_transaction_is_not_inflated_past_the_limit() {
        let zeros = vec![0u8; 100_000];
        let frame = ruzstd::encoding::compress_to_vec(&zeros[..], ruzstd::encoding::CompressionLevel::Fastest);
        assert!(frame.len() < 1000, "a small frame for much data");
        assert_eq!(decompress(&frame, 100_000).map(|d| d.len()), Some(100_000));
        assert_eq!(decompress(&frame, 99_999), None);
    }

    #[test]
    fn headers_of_other_kinds_are_refused_in_tarantools_words() {
        assert_eq!(
            parse_meta(b"hello\n").unwrap_err().to_string(),
            "Unexpected end of file, run with 'force_recovery = true'"
        );
        assert_eq!(
            parse_meta(b"FOO\n0.13\n\n").unwrap_err().to_string(),
            "xlog reader does not support 'FOO' file type"
        );
        let meta = parse_meta(b"SNAP\n0.13\nInstance: x\n\nrest").unwrap();
        assert_eq!((meta.file_type.as_str(), meta.data_offset), ("SNAP", 23));
    }
}
