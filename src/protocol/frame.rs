//! Cutting IPROTO packets out of a byte stream.
//!
//! A packet is `<msgpack uint length> <length bytes>`. Incomplete input is
//! `Ok(None)`, never an error, so the caller just reads more.

/// Why a stream can no longer be framed. Either way the connection is closed
/// after an error reply with sync 0, as Tarantool 2.6 does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FrameError {
    /// The length prefix is not a msgpack unsigned integer.
    BadLength,
    /// The length exceeds the configured limit (`max_packet_size`).
    TooLarge {
        /// The length the client announced.
        len: u64,
        /// The limit in force.
        max: u64,
    },
}

/// Default limit on one packet's length, in bytes.
pub const DEFAULT_MAX_PACKET_SIZE: u64 = 64 * 1024 * 1024;

/// Reads the length prefix at the start of `buf`.
///
/// Returns `(prefix bytes, packet length)` or `None` if more bytes are needed.
pub fn peek_length(buf: &[u8], max: u64) -> Result<Option<(usize, u64)>, FrameError> {
    let Some(&marker) = buf.first() else {
        return Ok(None);
    };
    let width = match marker {
        0x00..=0x7f => 0,
        0xcc => 1,
        0xcd => 2,
        0xce => 4,
        0xcf => 8,
        _ => return Err(FrameError::BadLength),
    };
    let len = if width == 0 {
        u64::from(marker)
    } else {
        let Some(bytes) = buf.get(1..=width) else {
            return Ok(None);
        };
        bytes.iter().fold(0u64, |acc, b| (acc << 8) | u64::from(*b))
    };
    if len > max {
        return Err(FrameError::TooLarge { len, max });
    }
    Ok(Some((1 + width, len)))
}

/// Writes the 5-byte length prefix Tarantool always uses in replies.
#[must_use]
pub fn length_prefix(len: u32) -> [u8; 5] {
    let b = len.to_be_bytes();
    [0xce, b[0], b[1], b[2], b[3]]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accepts_every_uint_width() {
        let max = DEFAULT_MAX_PACKET_SIZE;
        assert_eq!(peek_length(&[0x05], max), Ok(Some((1, 5))));
        assert_eq!(peek_length(&[0xcc, 0x05], max), Ok(Some((2, 5))));
        assert_eq!(peek_length(&[0xcd, 0, 5], max), Ok(Some((3, 5))));
        assert_eq!(peek_length(&[0xce, 0, 0, 0, 5], max), Ok(Some((5, 5))));
        assert_eq!(peek_length(&[0xcf, 0, 0, 0, 0, 0, 0, 0, 5], max), Ok(Some((9, 5))));
    }

    #[test]
    fn partial_prefix_needs_more() {
        assert_eq!(peek_length(&[0xce, 0, 0], 100), Ok(None));
        assert_eq!(peek_length(&[], 100), Ok(None));
    }

    #[test]
    fn rejects_non_uint_and_oversized() {
        assert_eq!(peek_length(&[0xa1], 100), Err(FrameError::BadLength));
        assert_eq!(peek_length(&[0xff], 100), Err(FrameError::BadLength));
        assert_eq!(peek_length(&[0xce, 0, 0, 1, 0], 100), Err(FrameError::TooLarge { len: 256, max: 100 }));
    }

    #[test]
    fn reply_prefix_is_always_five_bytes() {
        assert_eq!(length_prefix(0x18), [0xce, 0, 0, 0, 0x18]);
    }
}
