//! chap-sha1, Tarantool's password check.
//!
//! ```text
//! hash1    = SHA1(password)
//! hash2    = SHA1(hash1)                       stored in _user as base64
//! scramble = hash1 XOR SHA1(salt[..20] || hash2)   sent by the client
//! ```
//! The server recovers `hash1` from the scramble and accepts iff SHA1(hash1) == hash2.

use base64::Engine as _;
use sha1::{Digest, Sha1};

/// Length of a SHA-1 digest and of a scramble.
pub const SCRAMBLE_SIZE: usize = 20;

fn sha1(parts: &[&[u8]]) -> [u8; SCRAMBLE_SIZE] {
    let mut h = Sha1::new();
    for p in parts {
        h.update(p);
    }
    h.finalize().into()
}

/// `SHA1(SHA1(password))`, the value Tarantool stores.
#[must_use]
pub fn hash2(password: &[u8]) -> [u8; SCRAMBLE_SIZE] {
    sha1(&[&sha1(&[password])])
}

/// The `_user` auth map value: base64 of [`hash2`].
#[must_use]
pub fn stored_password(password: &[u8]) -> String {
    base64::engine::general_purpose::STANDARD.encode(hash2(password))
}

/// Decodes a stored `chap-sha1` value back to `hash2`.
#[must_use]
pub fn decode_stored(stored: &[u8]) -> Option<[u8; SCRAMBLE_SIZE]> {
    let raw = base64::engine::general_purpose::STANDARD.decode(stored).ok()?;
    raw.try_into().ok()
}

/// The scramble a client computes for `password` and the greeting `salt`.
#[must_use]
pub fn scramble(salt: &[u8], password: &[u8]) -> [u8; SCRAMBLE_SIZE] {
    let hash1 = sha1(&[password]);
    let salt20 = salt.get(..SCRAMBLE_SIZE).unwrap_or(salt);
    let mask = sha1(&[salt20, &sha1(&[&hash1])]);
    let mut out = [0u8; SCRAMBLE_SIZE];
    for (o, (a, b)) in out.iter_mut().zip(hash1.iter().zip(mask.iter())) {
        *o = a ^ b;
    }
    out
}

/// Whether `scramble` proves knowledge of the password behind `hash2`.
#[must_use]
pub fn check(salt: &[u8], hash2: &[u8; SCRAMBLE_SIZE], scramble: &[u8]) -> bool {
    if scramble.len() != SCRAMBLE_SIZE {
        return false;
    }
    let salt20 = salt.get(..SCRAMBLE_SIZE).unwrap_or(salt);
    let mask = sha1(&[salt20, hash2]);
    let mut hash1 = [0u8; SCRAMBLE_SIZE];
    for (h, (a, b)) in hash1.iter_mut().zip(scramble.iter().zip(mask.iter())) {
        *h = a ^ b;
    }
    sha1(&[&hash1]) == *hash2
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hex(s: &str) -> Vec<u8> {
        (0..s.len()).step_by(2).map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap()).collect()
    }

    /// The vector checked against a live Tarantool 2.6 login (reference/iproto.md §3.2).
    #[test]
    fn matches_tarantool_test_vector() {
        let salt =
            base64::engine::general_purpose::STANDARD.decode("W/ROI8GqyCpVgM5HBdAEbgI1Tt0iayQpV7lIQhcCcpg=").unwrap();
        assert_eq!(hash2(b"secret").to_vec(), hex("14e65567abdb5135d0cfd9a70b3032c179a49ee7"));
        assert_eq!(stored_password(b"secret"), "FOZVZ6vbUTXQz9mnCzAywXmknuc=");
        let s = scramble(&salt, b"secret");
        assert_eq!(s.to_vec(), hex("d8bff70b7239af0621b41b0351113f533beeba94"));
        assert!(check(&salt, &hash2(b"secret"), &s));
        assert!(!check(&salt, &hash2(b"other"), &s));
        assert!(!check(&salt, &hash2(b"secret"), &s[..19]));
    }

    #[test]
    fn guest_empty_password_hash() {
        assert_eq!(stored_password(b""), "vhvewKp0tNyweZQ+cFKAlsyphfg=");
    }
}
