//! The tokio-util codec adapter: the only tokio-aware file in `protocol`.

use bytes::{Buf, Bytes, BytesMut};
use tokio_util::codec::Decoder;

use super::frame::{peek_length, FrameError};

/// Splits a byte stream into packets (header + body, without the length prefix).
#[derive(Debug, Clone, Copy)]
pub struct PacketCodec {
    max_packet_size: u64,
}

impl PacketCodec {
    /// A codec that refuses packets longer than `max_packet_size` bytes.
    #[must_use]
    pub fn new(max_packet_size: u64) -> Self {
        Self { max_packet_size }
    }
}

/// A framing failure, or the socket's own error.
#[derive(Debug)]
pub enum CodecError {
    /// The stream cannot be framed any more.
    Frame(FrameError),
    /// Reading the socket failed.
    Io(std::io::Error),
}

impl From<std::io::Error> for CodecError {
    fn from(e: std::io::Error) -> Self {
        Self::Io(e)
    }
}

impl Decoder for PacketCodec {
    type Item = Bytes;
    type Error = CodecError;

    fn decode(&mut self, src: &mut BytesMut) -> Result<Option<Bytes>, CodecError> {
        loop {
            let Some((prefix, len)) = peek_length(src, self.max_packet_size).map_err(CodecError::Frame)? else {
                return Ok(None);
            };
            #[allow(clippy::cast_possible_truncation, reason = "len <= max_packet_size, which fits usize")]
            let total = prefix + len as usize;
            if src.len() < total {
                src.reserve(total - src.len());
                return Ok(None);
            }
            src.advance(prefix);
            let packet = src.split_to(total - prefix).freeze();
            // A zero-length packet is ignored, as Tarantool does.
            if !packet.is_empty() {
                return Ok(Some(packet));
            }
        }
    }
}
