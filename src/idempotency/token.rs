//! The idempotency token carried in header key 0x0c.
//!
//! Accepted values: a non-empty string, non-empty binary, a positive integer,
//! or a UUID (msgpack ext type 2, 16 bytes). Identity is (type class, bytes),
//! so the string "1" and the integer 1 are different tokens.

use crate::protocol::msgpack::{Integer, MpType, Reader};

/// Default for `idempotency_max_token_size`, in bytes.
pub const DEFAULT_MAX_TOKEN_SIZE: usize = 256;

/// A validated token, kept as its msgpack encoding (which is also how it is stored).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Token {
    /// The token's msgpack bytes, re-encoded canonically (shortest integer form).
    pub encoded: Vec<u8>,
}

/// Why a token is refused (the text after "Invalid idempotency token: ").
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TokenError(pub String);

impl Token {
    /// Validates the raw msgpack value of header key 0x0c.
    pub fn parse(raw: &[u8], max_size: usize) -> Result<Self, TokenError> {
        let kinds = "it must be a non-empty string, binary, positive integer or UUID";
        let mut r = Reader::new(raw);
        let ty = r.peek_type().map_err(|_| TokenError(kinds.into()))?;
        let mut encoded = Vec::with_capacity(raw.len());
        let size = match ty {
            MpType::Str => {
                let s = r.read_str().map_err(|_| TokenError(kinds.into()))?;
                crate::protocol::msgpack::write::str(&mut encoded, s);
                s.len()
            }
            MpType::Bin => {
                let b = r.read_bin().map_err(|_| TokenError(kinds.into()))?;
                crate::protocol::msgpack::write::bin(&mut encoded, b);
                b.len()
            }
            MpType::Uint => match r.read_integer() {
                Ok(Integer::Unsigned(v)) if v > 0 => {
                    crate::protocol::msgpack::write::uint(&mut encoded, v);
                    8
                }
                _ => return Err(TokenError(kinds.into())),
            },
            MpType::Ext => match r.read_ext() {
                Ok((2, payload)) if payload.len() == 16 => {
                    encoded.extend_from_slice(&[0xd8, 0x02]);
                    encoded.extend_from_slice(payload);
                    16
                }
                _ => return Err(TokenError(kinds.into())),
            },
            _ => return Err(TokenError(kinds.into())),
        };
        if size == 0 {
            return Err(TokenError(kinds.into()));
        }
        if size > max_size {
            return Err(TokenError(format!("it is {size} bytes, longer than idempotency_max_token_size ({max_size})")));
        }
        Ok(Self { encoded })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accepted_kinds() {
        assert!(Token::parse(&[0xa2, b'i', b'd'], 256).is_ok());
        assert!(Token::parse(&[0xc4, 1, 7], 256).is_ok());
        assert!(Token::parse(&[0x07], 256).is_ok());
        let mut uuid = vec![0xd8, 0x02];
        uuid.extend_from_slice(&[9; 16]);
        assert!(Token::parse(&uuid, 256).is_ok());
        // Integers are canonical: 7 as cc 07 is the same token as 07.
        assert_eq!(Token::parse(&[0xcc, 7], 256), Token::parse(&[0x07], 256));
    }

    #[test]
    fn refused_kinds_and_sizes() {
        for raw in [&[0xa0][..], &[0xc4, 0], &[0x00], &[0xff], &[0xc0], &[0x91, 0x01], &[0xc3], &[0xd4, 0x01, 0x00]] {
            assert!(Token::parse(raw, 256).is_err(), "{raw:?}");
        }
        let mut long = vec![0xd9, 10];
        long.extend_from_slice(&[b'x'; 10]);
        assert!(Token::parse(&long, 9).unwrap_err().0.contains("longer than idempotency_max_token_size"));
        assert!(Token::parse(&long, 10).is_ok());
    }

    #[test]
    fn string_and_integer_are_distinct() {
        assert_ne!(Token::parse(&[0xa1, b'1'], 256), Token::parse(&[0x01], 256));
        assert_ne!(Token::parse(&[0xa1, b'1'], 256), Token::parse(&[0xc4, 1, b'1'], 256));
    }
}
