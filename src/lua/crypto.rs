//! `box.internal.crypto`: the functions under Lua's `crypto` module (lua/crypto.lua):
//! HMAC and AES in CBC, CFB, OFB and ECB modes, with the messages Tarantool 2.6 gives
//! (its OpenSSL's texts for a bad decryption). Digests are `box.internal.native.hash`.

use hmac::{Hmac, Mac};
use mlua::{Lua, LuaString, Table, Value};

/// HMAC of `data` under `key` with digest `algo`; `None` for an unknown digest.
#[must_use]
pub fn hmac(algo: &[u8], key: &[u8], data: &[u8]) -> Option<Vec<u8>> {
    fn run<M: Mac + hmac::digest::KeyInit>(key: &[u8], data: &[u8]) -> Vec<u8> {
        // HMAC takes a key of any length: this cannot fail.
        let Ok(mut mac) = <M as hmac::digest::KeyInit>::new_from_slice(key) else { return Vec::new() };
        mac.update(data);
        mac.finalize().into_bytes().to_vec()
    }
    Some(match algo {
        b"md5" => run::<Hmac<md5::Md5>>(key, data),
        b"sha1" => run::<Hmac<sha1::Sha1>>(key, data),
        b"sha224" => run::<Hmac<sha2::Sha224>>(key, data),
        b"sha256" => run::<Hmac<sha2::Sha256>>(key, data),
        b"sha384" => run::<Hmac<sha2::Sha384>>(key, data),
        b"sha512" => run::<Hmac<sha2::Sha512>>(key, data),
        b"ripemd160" => run::<Hmac<ripemd::Ripemd160>>(key, data),
        _ => return None,
    })
}

/// The AES variants, by key length.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Aes {
    K128,
    K192,
    K256,
}

/// Block cipher modes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mode {
    Cbc,
    Cfb,
    Ofb,
    Ecb,
}

/// The key and IV lengths a cipher takes.
fn sizes(algo: Option<Aes>, mode: Mode) -> (usize, usize) {
    let key = match algo {
        None => 0,
        Some(Aes::K128) => 16,
        Some(Aes::K192) => 24,
        Some(Aes::K256) => 32,
    };
    let iv = if algo.is_none() || mode == Mode::Ecb { 0 } else { 16 };
    (key, iv)
}

/// OpenSSL 3's text for a ciphertext that is not a whole number of blocks.
const WRONG_FINAL_BLOCK: &str = "OpenSSL error: error:1C80006B:Provider routines::wrong final block length";
/// OpenSSL 3's text for padding that does not check out.
const BAD_DECRYPT: &str = "OpenSSL error: error:1C800064:Provider routines::bad decrypt";

/// Encrypts or decrypts `data`; the error is 2.6's message.
///
/// # Errors
/// A key or IV of the wrong length, an unknown algorithm or mode, or (decrypting
/// CBC or ECB) a ciphertext whose length or padding is wrong.
pub fn cipher(algo: &str, mode: &str, encrypt: bool, data: &[u8], key: &[u8], iv: &[u8]) -> Result<Vec<u8>, String> {
    let algo = match algo {
        "none" => None,
        "aes128" => Some(Aes::K128),
        "aes192" => Some(Aes::K192),
        "aes256" => Some(Aes::K256),
        other => return Err(format!("Cipher method \"{other}\" is not supported")),
    };
    let mode = match mode {
        "cbc" => Mode::Cbc,
        "cfb" => Mode::Cfb,
        "ofb" => Mode::Ofb,
        "ecb" => Mode::Ecb,
        other => return Err(format!("Cipher mode {other} is not supported")),
    };
    let (key_len, iv_len) = sizes(algo, mode);
    if key.len() != key_len {
        return Err(format!("key size expected {key_len}, got {}", key.len()));
    }
    if iv.len() != iv_len {
        return Err(format!("IV size expected {iv_len}, got {}", iv.len()));
    }
    let Some(aes) = algo else { return Ok(data.to_vec()) };
    match aes {
        Aes::K128 => run::<aes::Aes128>(mode, encrypt, data, key, iv),
        Aes::K192 => run::<aes::Aes192>(mode, encrypt, data, key, iv),
        Aes::K256 => run::<aes::Aes256>(mode, encrypt, data, key, iv),
    }
}

fn run<C>(mode: Mode, encrypt: bool, data: &[u8], key: &[u8], iv: &[u8]) -> Result<Vec<u8>, String>
where
    C: aes::cipher::BlockCipher
        + aes::cipher::BlockEncrypt
        + aes::cipher::BlockDecrypt
        + aes::cipher::KeyInit
        + aes::cipher::BlockSizeUser<BlockSize = aes::cipher::consts::U16>,
{
    use aes::cipher::block_padding::Pkcs7;
    use aes::cipher::{AsyncStreamCipher, BlockDecryptMut, BlockEncryptMut, KeyInit, KeyIvInit, StreamCipher};
    let bad = |_| "invalid key or IV".to_owned();
    let padding_error = |_| if data.len().is_multiple_of(16) { BAD_DECRYPT } else { WRONG_FINAL_BLOCK }.to_owned();
    let mut out = data.to_vec();
    match (mode, encrypt) {
        (Mode::Cbc, true) => {
            Ok(cbc::Encryptor::<C>::new_from_slices(key, iv).map_err(bad)?.encrypt_padded_vec_mut::<Pkcs7>(data))
        }
        (Mode::Cbc, false) => cbc::Decryptor::<C>::new_from_slices(key, iv)
            .map_err(bad)?
            .decrypt_padded_vec_mut::<Pkcs7>(data)
            .map_err(padding_error),
        (Mode::Ecb, true) => {
            Ok(ecb::Encryptor::<C>::new_from_slice(key).map_err(bad)?.encrypt_padded_vec_mut::<Pkcs7>(data))
        }
        (Mode::Ecb, false) => ecb::Decryptor::<C>::new_from_slice(key)
            .map_err(bad)?
            .decrypt_padded_vec_mut::<Pkcs7>(data)
            .map_err(padding_error),
        (Mode::Cfb, true) => {
            cfb_mode::Encryptor::<C>::new_from_slices(key, iv).map_err(bad)?.encrypt(&mut out);
            Ok(out)
        }
        (Mode::Cfb, false) => {
            cfb_mode::Decryptor::<C>::new_from_slices(key, iv).map_err(bad)?.decrypt(&mut out);
            Ok(out)
        }
        (Mode::Ofb, _) => {
            ofb::Ofb::<C>::new_from_slices(key, iv).map_err(bad)?.apply_keystream(&mut out);
            Ok(out)
        }
    }
}

/// Builds the `box.internal.crypto` table: `hmac(algo, key, data)` and
/// `cipher(algo, mode, encrypt, data, key, iv)`, each returning the result or nil
/// and the message.
pub fn create(lua: &Lua) -> mlua::Result<Table> {
    let t = lua.create_table()?;
    t.set(
        "hmac",
        lua.create_function(|lua, (algo, key, data): (LuaString, LuaString, LuaString)| {
            match hmac(&algo.as_bytes(), &key.as_bytes(), &data.as_bytes()) {
                Some(out) => Ok(Value::String(lua.create_string(out)?)),
                None => Ok(Value::Nil),
            }
        })?,
    )?;
    t.set(
        "cipher",
        lua.create_function(
            |lua, (algo, mode, encrypt, data, key, iv): (String, String, bool, LuaString, LuaString, LuaString)| {
                match cipher(&algo, &mode, encrypt, &data.as_bytes(), &key.as_bytes(), &iv.as_bytes()) {
                    Ok(out) => Ok((Value::String(lua.create_string(out)?), Value::Nil)),
                    Err(msg) => Ok((Value::Nil, Value::String(lua.create_string(msg)?))),
                }
            },
        )?,
    )?;
    Ok(t)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn b64(v: &[u8]) -> String {
        use base64::Engine as _;
        base64::engine::general_purpose::STANDARD.encode(v)
    }

    #[test]
    fn results_are_2_6s() {
        // Figures from Tarantool 2.6's crypto module.
        assert_eq!(b64(&hmac(b"sha256", b"key", b"abc").unwrap()), "nBluMtwBdfhvSxy4konWYZ3mvuaZ5MN45oMJ7Zehpqs=");
        assert_eq!(b64(&hmac(b"ripemd160", b"k", b"abc").unwrap()), "dgu6LeLNIeWiYinwCD6eaN608uo=");
        let (key, iv) = (b"0123456789abcdef", b"fedcba9876543210");
        let enc = cipher("aes128", "cbc", true, b"hello world", key, iv).unwrap();
        assert_eq!(b64(&enc), "EjCqBOVHpEbXXDjOe20Q1g==");
        assert_eq!(cipher("aes128", "cbc", false, &enc, key, iv).unwrap(), b"hello world");
        let text = b"0123456789abcdef0";
        assert_eq!(b64(&cipher("aes128", "cfb", true, text, key, iv).unwrap()), "O3rkQsJFST6AAaK0qXgPW0I=");
        assert_eq!(b64(&cipher("aes128", "ofb", true, text, key, iv).unwrap()), "O3rkQsJFST6AAaK0qXgPW3g=");
        let key24 = [b'k'; 24];
        assert_eq!(b64(&cipher("aes192", "cfb", true, b"hello", &key24, iv).unwrap()), "Mie2j7c=");
        assert_eq!(b64(&cipher("aes256", "cbc", true, b"", &[b'k'; 32], iv).unwrap()), "CVPVcO2A9qUkX4V7Oumz5w==");
        assert_eq!(cipher("none", "cbc", true, b"hello", b"", b"").unwrap(), b"hello");
    }

    #[test]
    fn errors_are_2_6s() {
        let (key, iv) = (b"0123456789abcdef", b"fedcba9876543210");
        assert_eq!(cipher("aes128", "cbc", true, b"x", b"short", iv).unwrap_err(), "key size expected 16, got 5");
        assert_eq!(cipher("aes128", "cbc", true, b"x", key, b"shortiv").unwrap_err(), "IV size expected 16, got 7");
        assert_eq!(cipher("aes128", "ecb", true, b"x", key, iv).unwrap_err(), "IV size expected 0, got 16");
        assert_eq!(cipher("aes128", "cbc", false, b"garbage", key, iv).unwrap_err(), WRONG_FINAL_BLOCK);
        assert_eq!(cipher("aes128", "cbc", false, &[b'a'; 16], key, iv).unwrap_err(), BAD_DECRYPT);
        assert_eq!(cipher("none", "cbc", true, b"x", key, iv).unwrap_err(), "key size expected 0, got 16");
        assert!(hmac(b"nosuch", b"k", b"m").is_none());
    }
}
