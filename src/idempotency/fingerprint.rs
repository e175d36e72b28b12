//! Request fingerprints: a hash over a canonical form of the request.
//!
//! The same logical request encoded by different connectors (integer widths,
//! float32 vs float64, map key order, optional keys left at their default)
//! has the same fingerprint; any change of target, key, tuple, operations or
//! arguments changes it.

use sha2::{Digest, Sha256};

use crate::protocol::header::Header;
use crate::protocol::msgpack::{write, Integer, MpType, Reader};
use crate::protocol::request::{Decoded, Request, Statement};

/// A fingerprint: the first 16 bytes of SHA-256 over the canonical form. 128 bits
/// keep accidental matches out of reach while a remembered record (and every
/// logged one) carries 16 bytes less than the whole digest.
pub type Fingerprint = [u8; FINGERPRINT_BYTES];

/// Bytes of a [`Fingerprint`].
pub const FINGERPRINT_BYTES: usize = 16;

/// A fingerprint from a whole SHA-256 digest (or one stored by a version that kept
/// all 32 bytes): its first [`FINGERPRINT_BYTES`].
#[must_use]
pub fn from_digest(digest: &[u8]) -> Option<Fingerprint> {
    digest.get(..FINGERPRINT_BYTES)?.try_into().ok()
}

fn digest(bytes: &[u8]) -> Fingerprint {
    let full: [u8; 32] = Sha256::digest(bytes).into();
    from_digest(&full).unwrap_or_default()
}

/// Nesting beyond this depth is hashed as raw bytes (bounded recursion).
const MAX_CANONICAL_DEPTH: usize = 64;

/// The fingerprint of a write request.
#[must_use]
pub fn of(req: &Request<'_>) -> Fingerprint {
    let mut c = Vec::with_capacity(128);
    match req {
        Request::Insert(w) => part(&mut c, b"insert", &[u(w.space_id)], &[w.tuple]),
        Request::Replace(w) => part(&mut c, b"replace", &[u(w.space_id)], &[w.tuple]),
        Request::Update(x) => {
            part(&mut c, b"update", &[u(x.space_id), u(x.index_id), u(x.index_base)], &[x.key, x.ops]);
        }
        Request::Upsert(x) => part(&mut c, b"upsert", &[u(x.space_id), u(x.index_base)], &[x.tuple, x.ops]),
        Request::Delete(x) => part(&mut c, b"delete", &[u(x.space_id), u(x.index_id)], &[x.key]),
        Request::Call(x) => named(&mut c, b"call", x.name, x.args),
        Request::Call16(x) => named(&mut c, b"call_16", x.name, x.args),
        Request::Eval(x) => named(&mut c, b"eval", x.name, x.args),
        Request::Execute(x) => match x.statement {
            Statement::Text(text) => named(&mut c, b"execute", text, x.binds),
            Statement::Id(id) => named(&mut c, b"execute_prepared", &id.to_be_bytes(), x.binds),
        },
        // PREPARE takes no token (the executor refuses one).
        Request::Prepare(_) => write::str(&mut c, b"prepare"),
        Request::Select(_) | Request::Ping | Request::Auth(_) => write::str(&mut c, b"read"),
    }
    digest(&c)
}

/// The fingerprint of a tokened write packet whose body `body` was decoded into
/// `decoded`, or `None` when the packet has no token, is not a write, or its body
/// does not parse (the TX thread then reports the error). Pure: the network
/// thread works it out, off the TX thread.
#[must_use]
pub fn of_packet(header: &Header, body: &[u8], decoded: &Decoded) -> Option<Fingerprint> {
    header.idempotent_token.as_ref()?;
    if !super::is_write_type(header.request_type) {
        return None;
    }
    let req = decoded.request(body).ok()??;
    Some(of(&req))
}

/// The fingerprint of records stored by the Lua API (`box.atomic`, `box.begin`
/// with `idempotent_token`): a token used there and by an IPROTO request is a mismatch.
#[must_use]
pub fn lua_api() -> Fingerprint {
    digest(b"oncebox lua api")
}

fn u(v: u32) -> u64 {
    u64::from(v)
}

fn part(out: &mut Vec<u8>, kind: &[u8], ids: &[u64], values: &[&[u8]]) {
    write::str(out, kind);
    for id in ids {
        write::uint(out, *id);
    }
    for v in values {
        canonical(out, v, 0);
    }
}

fn named(out: &mut Vec<u8>, kind: &[u8], name: &[u8], args: &[u8]) {
    write::str(out, kind);
    write::str(out, name);
    canonical(out, args, 0);
}

/// Appends the canonical encoding of the msgpack value `v`.
fn canonical(out: &mut Vec<u8>, v: &[u8], depth: usize) {
    if depth > MAX_CANONICAL_DEPTH {
        out.extend_from_slice(v);
        return;
    }
    let mut r = Reader::new(v);
    let Ok(ty) = r.peek_type() else {
        out.extend_from_slice(v);
        return;
    };
    let raw = |out: &mut Vec<u8>| out.extend_from_slice(v);
    match ty {
        MpType::Uint | MpType::Int => match r.read_integer() {
            Ok(Integer::Unsigned(x)) => write::uint(out, x),
            Ok(Integer::Negative(x)) => write::int(out, x),
            Err(_) => raw(out),
        },
        MpType::Float | MpType::Double => match r.read_f64() {
            Ok(x) => write::f64(out, x),
            Err(_) => raw(out),
        },
        MpType::Str => match r.read_str() {
            Ok(s) => write::str(out, s),
            Err(_) => raw(out),
        },
        MpType::Bin => match r.read_bin() {
            Ok(b) => write::bin(out, b),
            Err(_) => raw(out),
        },
        MpType::Array => {
            let Ok(n) = r.read_array_len() else { return raw(out) };
            write::array_len(out, n);
            for _ in 0..n {
                match r.skip() {
                    Ok(item) => canonical(out, item, depth + 1),
                    Err(_) => return,
                }
            }
        }
        MpType::Map => {
            let Ok(n) = r.read_map_len() else { return raw(out) };
            let mut pairs: Vec<(Vec<u8>, Vec<u8>)> = Vec::with_capacity(n.min(1024) as usize);
            for _ in 0..n {
                let (Ok(k), Ok(val)) = (r.skip(), r.skip()) else { return };
                let mut ck = Vec::new();
                canonical(&mut ck, k, depth + 1);
                let mut cv = Vec::new();
                canonical(&mut cv, val, depth + 1);
                pairs.push((ck, cv));
            }
            pairs.sort();
            write::map_len(out, n);
            for (k, val) in pairs {
                out.extend_from_slice(&k);
                out.extend_from_slice(&val);
            }
        }
        MpType::Nil | MpType::Bool | MpType::Ext => raw(out),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::request::Write;

    fn insert(tuple: &[u8]) -> Fingerprint {
        of(&Request::Insert(Write { space_id: 512, tuple }))
    }

    #[test]
    fn encodings_of_the_same_request_match() {
        // [1, {"a": 1, "b": 2.5}] with different integer widths, key order, float widths.
        let a = [0x92, 0x01, 0x82, 0xa1, b'a', 0x01, 0xa1, b'b', 0xcb, 0x40, 0x04, 0, 0, 0, 0, 0, 0];
        let b = [0x92, 0xcd, 0x00, 0x01, 0x82, 0xa1, b'b', 0xca, 0x40, 0x20, 0, 0, 0xa1, b'a', 0xcc, 0x01];
        assert_eq!(insert(&a), insert(&b));
    }

    #[test]
    fn different_requests_differ() {
        assert_ne!(insert(&[0x91, 0x01]), insert(&[0x91, 0x02]));
        assert_ne!(insert(&[0x91, 0xa1, b'1']), insert(&[0x91, 0xc4, 1, b'1']));
        let r = of(&Request::Replace(Write { space_id: 512, tuple: &[0x91, 0x01] }));
        assert_ne!(insert(&[0x91, 0x01]), r);
        let other_space = of(&Request::Insert(Write { space_id: 513, tuple: &[0x91, 0x01] }));
        assert_ne!(insert(&[0x91, 0x01]), other_space);
    }

    /// A packet: header {0x00: type, 0x01: sync 7, [0x0c: "t1"]}, body {0x10: 512, 0x21: tuple}.
    fn packet(request_type: u8, token: bool, tuple: &[u8]) -> (Header, Vec<u8>) {
        let mut p = vec![if token { 0x83 } else { 0x82 }, 0x00, request_type, 0x01, 0x07];
        if token {
            p.extend_from_slice(&[0x0c, 0xa2, b't', b'1']);
        }
        p.extend_from_slice(&[0x82, 0x10, 0xcd, 0x02, 0x00, 0x21]);
        p.extend_from_slice(tuple);
        let header = crate::protocol::header::parse(&p).expect("a valid header");
        (header, p)
    }

    #[test]
    fn a_packet_fingerprint_is_the_parsed_requests_and_only_for_tokened_writes() {
        let tuple = [0x91, 0x01];
        let fingerprint = |header: &Header, p: &[u8]| {
            let body = &p[header.body_offset..];
            of_packet(header, body, &crate::protocol::request::decode(header.request_type, body))
        };
        let (header, p) = packet(0x03, true, &tuple);
        let replace = of(&Request::Replace(Write { space_id: 512, tuple: &tuple }));
        assert_eq!(fingerprint(&header, &p), Some(replace));
        let (plain, p) = packet(0x03, false, &tuple);
        assert_eq!(fingerprint(&plain, &p), None, "no token: nothing to work out");
        let (select, p) = packet(0x01, true, &tuple);
        assert_eq!(fingerprint(&select, &p), None, "a read ignores its token");
        let (broken, p) = packet(0x03, true, &[0x92, 0x01]);
        let p = &p[..p.len() - 1];
        assert_eq!(fingerprint(&broken, p), None, "a body that does not parse is left to the TX thread");
    }
}
