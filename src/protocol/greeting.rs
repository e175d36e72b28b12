//! The 128-byte greeting a server sends first.
//!
//! ```text
//! 0..63    "Tarantool 2.6.0 (Binary) <uuid>" padded with spaces, byte 63 = '\n'
//! 64..127  base64(32-byte salt), padded with spaces, byte 127 = '\n'
//! ```

use base64::Engine as _;

/// Length of the greeting.
pub const GREETING_SIZE: usize = 128;
/// Length of the random salt sent in the greeting.
pub const SALT_SIZE: usize = 32;

/// Builds the greeting for one connection.
#[must_use]
pub fn encode(version: &str, instance_uuid: &uuid::Uuid, salt: &[u8; SALT_SIZE]) -> [u8; GREETING_SIZE] {
    let mut out = [b' '; GREETING_SIZE];
    let line1 = format!("Tarantool {version} (Binary) {}", instance_uuid.hyphenated());
    let line2 = base64::engine::general_purpose::STANDARD.encode(salt);
    for (dst, src) in out.iter_mut().zip(line1.bytes().take(63)) {
        *dst = src;
    }
    for (dst, src) in out.iter_mut().skip(64).zip(line2.bytes().take(63)) {
        *dst = src;
    }
    out[63] = b'\n';
    out[127] = b'\n';
    out
}

/// Extracts the decoded salt from a greeting (used by clients and tests).
#[must_use]
pub fn decode_salt(greeting: &[u8]) -> Option<Vec<u8>> {
    let line = greeting.get(64..128)?;
    let text = std::str::from_utf8(line).ok()?.trim();
    base64::engine::general_purpose::STANDARD.decode(text).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn layout_matches_tarantool() {
        let uuid = uuid::Uuid::parse_str("f42c23c2-6946-412c-9b35-4a8d03015db3").unwrap();
        let salt = [7u8; SALT_SIZE];
        let g = encode("2.6.0", &uuid, &salt);
        assert_eq!(&g[..62], b"Tarantool 2.6.0 (Binary) f42c23c2-6946-412c-9b35-4a8d03015db3 ");
        assert_eq!(g[63], b'\n');
        assert_eq!(g[127], b'\n');
        assert_eq!(decode_salt(&g).unwrap(), salt.to_vec());
        assert_eq!(g[64 + 44], b' ');
    }
}
