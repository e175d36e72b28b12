//! Byte-level behaviour of the IPROTO server: greeting, framing, replies, bad input.
#![allow(clippy::unwrap_used, reason = "tests fail loudly")]

mod common;

use common::{mp, Server};

/// The greeting is one 128-byte block that connectors accept as Tarantool 2.6.
#[test]
fn greeting_reports_tarantool_2_6_with_uuid_and_salt() {
    let server = Server::start(&[]);
    let c = server.connect();
    let g = &c.greeting;
    assert!(g.starts_with(b"Tarantool 2.6.0 (Binary) "));
    let uuid = std::str::from_utf8(&g[25..61]).unwrap();
    assert!(uuid::Uuid::parse_str(uuid).is_ok(), "{uuid}");
    assert_eq!(g[63], b'\n');
    assert_eq!(g[127], b'\n');
    let salt = oncebox::protocol::greeting::decode_salt(g).unwrap();
    assert_eq!(salt.len(), 32);
    // A fresh salt for every connection.
    let other = server.connect();
    assert_ne!(&other.greeting[64..], &g[64..]);
}

/// PING answers with Tarantool 2.6's exact layout: 5-byte length, 23-byte header, `{}`.
#[test]
fn ping_reply_layout() {
    let server = Server::start(&[]);
    let mut c = server.connect();
    c.send(&mp::map(&[(0, mp::uint(0x40)), (1, mp::uint(77))]), &[]);
    let r = c.recv();
    assert_eq!(r.raw.len(), 29);
    assert_eq!(&r.raw[..5], &[0xce, 0, 0, 0, 0x18]);
    assert_eq!((r.code, r.sync), (0, 77));
    assert_eq!(r.body, vec![0x80]);
    assert!(r.schema_version > 0);
}

/// Every msgpack uint width is accepted as a length prefix.
#[test]
fn accepts_every_length_width() {
    let server = Server::start(&[]);
    let mut c = server.connect();
    let packet = mp::header(0x40, 5);
    let n = packet.len() as u8;
    for prefix in [vec![n], vec![0xcc, n], vec![0xcd, 0, n], vec![0xce, 0, 0, 0, n], vec![0xcf, 0, 0, 0, 0, 0, 0, 0, n]]
    {
        let mut bytes = prefix;
        bytes.extend_from_slice(&packet);
        c.send_raw(&bytes);
        let r = c.recv();
        assert_eq!((r.code, r.sync), (0, 5));
    }
}

/// Pipelined requests are all answered, each with its own sync.
#[test]
fn pipelined_requests_keep_their_sync() {
    let server = Server::start(&[]);
    let mut c = server.connect();
    let mut burst = Vec::new();
    for sync in 1..=200u64 {
        let h = mp::header(0x40, sync);
        burst.push(0xce);
        burst.extend_from_slice(&(h.len() as u32).to_be_bytes());
        burst.extend_from_slice(&h);
    }
    c.send_raw(&burst);
    let mut seen: Vec<u64> = (0..200).map(|_| c.recv().sync).collect();
    seen.sort_unstable();
    assert_eq!(seen, (1..=200).collect::<Vec<_>>());
}

/// A length prefix that is not a uint gets an error with sync 0, then the connection closes.
#[test]
fn bad_length_prefix_errors_and_closes() {
    let server = Server::start(&[]);
    let mut c = server.connect();
    c.send_raw(&[0xa1, b'x']);
    let r = c.recv();
    assert_eq!(r.sync, 0);
    assert_eq!(r.error_code(), 20);
    assert_eq!(r.error_message(), "Invalid MsgPack - packet length");
    assert!(c.is_closed());
    // Other connections are unaffected.
    let mut d = server.connect();
    d.send(&mp::header(0x40, 1), &[]);
    assert_eq!(d.recv().code, 0);
}

/// A length above the packet limit is refused without reading the body.
#[test]
fn oversized_packet_is_refused() {
    let server = Server::start(&["--max-packet-size", "1024"]);
    let mut c = server.connect();
    c.send_raw(&[0xce, 0x7f, 0xff, 0xff, 0xff]);
    let r = c.recv();
    assert_eq!(r.error_code(), 20);
    assert!(r.error_message().contains("max_packet_size"), "{}", r.error_message());
    assert!(c.is_closed());
}

/// A header that is not a map gets an error with sync 0; the connection stays usable.
#[test]
fn bad_header_keeps_connection() {
    let server = Server::start(&[]);
    let mut c = server.connect();
    c.send(&[0x91, 0x01], &[]);
    let r = c.recv();
    assert_eq!((r.sync, r.error_code()), (0, 20));
    assert_eq!(r.error_message(), "Invalid MsgPack - packet header");
    // A bad key after the sync reports that sync.
    c.send(&[0x83, 0x00, 0x01, 0x01, 0x05, 0x16, 0xa1, b'a'], &[]);
    let r = c.recv();
    assert_eq!((r.sync, r.error_code()), (5, 20));
    c.send(&mp::header(0x40, 9), &[]);
    assert_eq!(c.recv().code, 0);
}

/// Request types 2.6 does not serve get ER_UNKNOWN_REQUEST_TYPE with the request's sync;
/// the message shows the type's low 8 bits, as 2.6 prints it.
#[test]
fn unknown_request_types() {
    let server = Server::start(&[]);
    let mut c = server.connect();
    for ty in [14u64, 73, 74, 0x99, 0x101, 0xffff] {
        c.send(&mp::header(ty, 3), &[0x80]);
        let r = c.recv();
        assert_eq!((r.sync, r.error_code()), (3, 48));
        assert_eq!(r.error_message(), format!("Unknown request type {}", ty & 0xff));
    }
    // No type at all is type 0.
    c.send(&mp::map(&[(1, mp::uint(4))]), &[]);
    assert_eq!(c.recv().error_message(), "Unknown request type 0");
}

/// A malformed or truncated body is ER_INVALID_MSGPACK with the request's sync.
#[test]
fn malformed_bodies() {
    let server = Server::start(&[]);
    let mut c = server.connect();
    for body in [&[0x92, 0x01][..], &[0x81, 0x10][..], &[0xc1][..], &[0x83, 0x10, 0xcd, 0x01][..]] {
        c.send(&mp::header(1, 8), body);
        let r = c.recv();
        assert_eq!((r.sync, r.error_code()), (8, 20), "{body:?}");
    }
    // Deeply nested input costs no stack and is answered.
    let mut deep = vec![0x81, 0x21];
    deep.extend(std::iter::repeat_n(0x91, 200_000));
    deep.push(0x01);
    c.send(&mp::header(2, 9), &deep);
    let r = c.recv();
    assert_eq!(r.sync, 9);
    assert!(r.code & 0x8000 != 0);
}

/// A client that sends half a packet and disconnects does not disturb the server.
#[test]
fn truncated_frame_then_disconnect() {
    let server = Server::start(&[]);
    {
        let mut c = server.connect();
        c.send_raw(&[0xce, 0, 0, 0, 50, 0x82, 0x00]);
    }
    let mut d = server.connect();
    d.send(&mp::header(0x40, 1), &[]);
    assert_eq!(d.recv().code, 0);
}

/// A stale non-zero schema version gets ER_WRONG_SCHEMA_VERSION with 2.6's swapped numbers.
#[test]
fn wrong_schema_version() {
    let server = Server::start(&[]);
    let mut c = server.connect();
    c.send(&mp::map(&[(0, mp::uint(0x40)), (1, mp::uint(2)), (5, mp::uint(100_000))]), &[]);
    let r = c.recv();
    assert_eq!(r.error_code(), 109);
    assert_eq!(r.error_message(), format!("Wrong schema version, current: 100000, in request: {}", r.schema_version));
    // Zero means "don't check".
    c.send(&mp::map(&[(0, mp::uint(0x40)), (1, mp::uint(3)), (5, mp::uint(0))]), &[]);
    assert_eq!(c.recv().code, 0);
}

/// Guest may read the system views but not write user spaces; a bad password keeps the session.
#[test]
fn auth_errors_and_guest_rights() {
    let server = Server::start(&["--admin-password", "pw"]);
    let mut c = server.connect();
    let salt = oncebox::protocol::greeting::decode_salt(&c.greeting).unwrap();
    let auth = |user: &str, pw: &str| {
        let scramble = oncebox::protocol::auth::scramble(&salt, pw.as_bytes());
        let mut bin = Vec::new();
        oncebox::protocol::msgpack::write::bin(&mut bin, &scramble);
        mp::map(&[(0x23, mp::str(user)), (0x21, mp::array(&[mp::str("chap-sha1"), bin]))])
    };
    c.send(&mp::header(7, 1), &auth("nobody", "x"));
    assert_eq!(c.recv().error_message(), "User 'nobody' is not found");
    c.send(&mp::header(7, 2), &auth("admin", "wrong"));
    assert_eq!(c.recv().error_message(), "Incorrect password supplied for user 'admin'");
    // Guest cannot write _space.
    let row =
        mp::array(&[mp::uint(600), mp::uint(1), mp::str("x"), mp::str("memtx"), mp::uint(0), vec![0x80], vec![0x90]]);
    c.send(&mp::header(2, 3), &mp::map(&[(0x10, mp::uint(280)), (0x21, row.clone())]));
    let r = c.recv();
    assert_eq!(r.error_code(), 42);
    assert_eq!(r.error_message(), "Write access to space '_space' is denied for user 'guest'");
    // Admin with the right password can.
    c.send(&mp::header(7, 4), &auth("admin", "pw"));
    assert_eq!(c.recv().code, 0);
    let before = {
        c.send(&mp::header(0x40, 5), &[]);
        c.recv().schema_version
    };
    c.send(&mp::header(2, 6), &mp::map(&[(0x10, mp::uint(280)), (0x21, row)]));
    let r = c.recv();
    assert_eq!(r.code, 0);
    assert_eq!(r.schema_version, before + 1, "DDL bumps the schema version");
}

/// Replies stay whole and in order when the client reads slowly: the TX thread sends
/// directly while the socket takes replies and queues the rest of a batch to the
/// writer task when it is full (a partial direct send followed by the queued rest).
#[test]
fn pipelined_replies_stay_in_order_when_the_socket_fills() {
    use std::io::{Read, Write};
    let server = Server::start(&["--admin-password", "pw"]);
    let mut c = server.connect();
    assert_eq!(c.auth("admin", "pw").code, 0);
    common::create_test_space(&mut c, 600, "big");
    let big = "x".repeat(200_000);
    assert_eq!(c.insert(600, mp::array(&[mp::uint(1), mp::str(&big)])).code, 0);
    let select = mp::map(&[(0x10, mp::uint(600)), (0x12, mp::uint(1)), (0x20, mp::array(&[mp::uint(1)]))]);
    const N: u64 = 600;
    // Requests trickle in (many small batches on the server) while replies, ~80 MB
    // with small pings between, are read slowly: the socket fills and drains again
    // and again, so direct sends and queued ones alternate.
    let mut tx = c.stream.try_clone().unwrap();
    let sender = std::thread::spawn(move || {
        for sync in 1..=N {
            let (ty, body) = if sync.is_multiple_of(3) { (0x40, vec![0x80]) } else { (1, select.clone()) };
            let header = mp::header(ty, sync);
            let len = u32::try_from(header.len() + body.len()).unwrap();
            let mut p = vec![0xce];
            p.extend_from_slice(&len.to_be_bytes());
            p.extend_from_slice(&header);
            p.extend_from_slice(&body);
            tx.write_all(&p).unwrap();
            if sync.is_multiple_of(8) {
                std::thread::sleep(std::time::Duration::from_micros(300));
            }
        }
    });
    let mut buf = Vec::new();
    let mut chunk = vec![0u8; 128 * 1024];
    let mut next = 1u64;
    while next <= N {
        let n = c.stream.read(&mut chunk).unwrap();
        assert!(n > 0, "the server closed the connection");
        buf.extend_from_slice(&chunk[..n]);
        std::thread::sleep(std::time::Duration::from_millis(1));
        while buf.len() >= 5 {
            let len = u32::from_be_bytes(buf[1..5].try_into().unwrap()) as usize;
            if buf.len() < 5 + len {
                break;
            }
            let reply: Vec<u8> = buf.drain(..5 + len).collect();
            // 83 00 ce <code> 01 cf <sync>: the header layout of every reply.
            let code = u32::from_be_bytes(reply[8..12].try_into().unwrap());
            let sync = u64::from_be_bytes(reply[14..22].try_into().unwrap());
            assert_eq!((code, sync), (0, next), "replies in request order");
            if !next.is_multiple_of(3) {
                assert!(reply.len() > 200_000 && reply.ends_with(b"xxxx"), "sync {next}: the whole tuple");
            }
            next += 1;
        }
    }
    sender.join().unwrap();
}
