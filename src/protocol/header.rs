//! The request header map, decoded as Tarantool 2.6 decodes it.
//!
//! Known keys must carry the type 2.6's key table gives them, or the whole
//! packet is answered "Invalid MsgPack - packet header" with whatever sync was
//! read before the bad key. The body is left as raw bytes.

use super::key;
use super::msgpack::{MpType, Reader};

/// The decoded header of one request.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Header {
    /// Request type; 0 when absent (then "Unknown request type 0").
    pub request_type: u64,
    /// Request id, echoed in the reply.
    pub sync: u64,
    /// Client's schema version; 0 or absent means "don't check".
    pub schema_version: u64,
    /// Raw msgpack bytes of the idempotency token (key 0x0c), if present.
    pub idempotent_token: Option<std::ops::Range<usize>>,
    /// Offset of the body within the packet.
    pub body_offset: usize,
}

/// A header that could not be decoded; reply with this sync and keep the connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HeaderError {
    /// The sync read before the failure, or 0.
    pub sync: u64,
}

/// The msgpack type Tarantool 2.6 requires for a key below `KEY_MAX_2_6`.
fn expected_type(k: u64) -> MpType {
    match k {
        0x04 => MpType::Double,
        0x20 | 0x21 | 0x28 | 0x2b | 0x30 | 0x32 | 0x33 | 0x41 | 0x51 => MpType::Array,
        0x22..=0x25 | 0x27 | 0x31 | 0x40 => MpType::Str,
        0x26 | 0x29 | 0x2a | 0x42 | 0x52 => MpType::Map,
        0x50 => MpType::Bool,
        _ => MpType::Uint,
    }
}

/// Decodes the header at the start of `packet`.
pub fn parse(packet: &[u8]) -> Result<Header, HeaderError> {
    let mut h = Header::default();
    let mut r = Reader::new(packet);
    let fail = |h: &Header| HeaderError { sync: h.sync };
    let n = r.read_map_len().map_err(|_| fail(&h))?;
    for _ in 0..n {
        let k = r.read_uint().map_err(|_| fail(&h))?;
        if k >= key::KEY_MAX_2_6 {
            return Err(fail(&h));
        }
        if k == u64::from(key::IDEMPOTENT_TOKEN) {
            // oncebox's own key: any type is carried to the dispatcher, which judges it.
            let start = r.position();
            r.skip().map_err(|_| fail(&h))?;
            h.idempotent_token = Some(start..r.position());
            continue;
        }
        let ty = r.peek_type().map_err(|_| fail(&h))?;
        if ty != expected_type(k) {
            return Err(fail(&h));
        }
        match u8::try_from(k).unwrap_or(u8::MAX) {
            key::REQUEST_TYPE => h.request_type = r.read_uint().map_err(|_| fail(&h))?,
            key::SYNC => h.sync = r.read_uint().map_err(|_| fail(&h))?,
            key::SCHEMA_VERSION => h.schema_version = r.read_uint().map_err(|_| fail(&h))?,
            _ => {
                r.skip().map_err(|_| fail(&h))?;
            }
        }
    }
    h.body_offset = r.position();
    Ok(h)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_type_sync_and_schema_version_in_any_order() {
        let h = parse(&[0x83, 0x01, 0x07, 0x05, 0x10, 0x00, 0x40, 0x80]).unwrap();
        assert_eq!((h.request_type, h.sync, h.schema_version, h.body_offset), (0x40, 7, 16, 7));
    }

    #[test]
    fn bad_key_type_reports_sync_read_so_far() {
        // {0: 1, 1: 5, 0x16: "a"}
        assert_eq!(parse(&[0x83, 0x00, 0x01, 0x01, 0x05, 0x16, 0xa1, b'a']), Err(HeaderError { sync: 5 }));
        // {0x53: 1} is past 2.6.0's key table.
        assert_eq!(parse(&[0x81, 0x53, 0x01]), Err(HeaderError { sync: 0 }));
        assert_eq!(parse(&[0x91, 0x01]), Err(HeaderError { sync: 0 }));
    }

    #[test]
    fn token_is_kept_raw() {
        let packet = [0x82, 0x00, 0x02, 0x0c, 0xa2, b'i', b'd'];
        let h = parse(&packet).unwrap();
        assert_eq!(h.idempotent_token.map(|r| &packet[r]), Some(&[0xa2, b'i', b'd'][..]));
    }
}
