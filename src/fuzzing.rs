//! Entry points for the fuzz targets in `fuzz/` (kept here so they build with the crate).
//!
//! Each function takes arbitrary bytes and must never panic, hang or allocate
//! without bound.

use std::cell::RefCell;

use crate::engine::access::user_id;
use crate::engine::space::WriteMode;
use crate::engine::Engine;
use crate::protocol::request::{self, Request};
use crate::protocol::{frame, header};

thread_local! {
    static ENGINE: RefCell<Option<Engine>> = const { RefCell::new(None) };
}

/// The rows of the space the fuzzer writes to: `[512, 1, 'f', 'memtx', 0, {}, [...]]` and three indexes.
const SETUP: &[(u32, &[u8])] = &[
    (280, b"\x97\xcd\x02\x00\x01\xa1f\xa5memtx\x00\x80\x92\x82\xa4name\xa2id\xa4type\xa8unsigned\x83\xa4name\xa1s\xa4type\xa6string\xabis_nullable\xc3"),
    (288, b"\x96\xcd\x02\x00\x00\xa2pk\xa4tree\x81\xa6unique\xc3\x91\x92\x00\xa8unsigned"),
    (288, b"\x96\xcd\x02\x00\x01\xa2sk\xa4tree\x81\xa6unique\xc2\x91\x83\xa5field\x01\xa4type\xa6string\xabis_nullable\xc3"),
    // Any scalar in the third field is a key: numbers, decimals and uuids compared with each other.
    (288, b"\x96\xcd\x02\x00\x02\xa2tk\xa4tree\x81\xa6unique\xc2\x91\x83\xa5field\x02\xa4type\xa6scalar\xabis_nullable\xc3"),
];

fn with_engine(f: impl FnOnce(&mut Engine)) {
    ENGINE.with(|cell| {
        let mut slot = cell.borrow_mut();
        if slot.is_none() {
            let Ok(mut engine) = Engine::bootstrap(&uuid::Uuid::nil()) else { return };
            let admin = engine.credentials(user_id::ADMIN);
            for (space, row) in SETUP {
                if engine.write(&admin, *space, row, WriteMode::Insert).is_err() {
                    return;
                }
            }
            *slot = Some(engine);
        }
        if let Some(engine) = slot.as_mut() {
            f(engine);
        }
    });
}

/// Cuts packets out of `data`, decodes each header and body, and runs data requests
/// against an in-memory engine as admin.
pub fn frame_and_request(data: &[u8]) {
    let mut rest = data;
    while let Ok(Some((prefix, len))) = frame::peek_length(rest, 1 << 20) {
        let Some(packet) = usize::try_from(len).ok().and_then(|l| rest.get(prefix..prefix + l)) else { return };
        rest = rest.get(prefix + packet.len()..).unwrap_or(&[]);
        let Ok(h) = header::parse(packet) else { continue };
        let body = packet.get(h.body_offset..).unwrap_or(&[]);
        let Ok(Some(req)) = request::parse(h.request_type, body) else { continue };
        with_engine(|engine| run(engine, &req));
    }
}

/// Reads `data` as a Tarantool log file, every row of every transaction.
pub fn tarantool_xlog(data: &[u8]) {
    let Ok(meta) = crate::tarantool_xlog::parse_meta(data) else { return };
    let mut transactions = crate::tarantool_xlog::Transactions::new(data.to_vec(), &meta);
    while transactions.next_rows().is_some() {}
}

/// Reads `data` as `json.decode`'s text (its first byte chooses the options).
pub fn json_text(data: &[u8]) {
    let Some((&options, text)) = data.split_first() else { return };
    let max_depth = usize::from(options & 0x7f) * 64;
    let _ = crate::lua::json_decode::decode(text, max_depth, options & 0x80 != 0, &mut Discard);
}

/// A [`crate::lua::json_decode::Sink`] that keeps nothing.
struct Discard;

impl crate::lua::json_decode::Sink for Discard {
    type Value = ();
    type Table = ();
    type Error = ();
    fn string(&mut self, _: &[u8]) -> Result<(), ()> {
        Ok(())
    }
    fn number(&mut self, _: f64) -> Result<(), ()> {
        Ok(())
    }
    fn integer(&mut self, _: crate::lua::json_decode::Integer) -> Result<(), ()> {
        Ok(())
    }
    fn boolean(&mut self, _: bool) -> Result<(), ()> {
        Ok(())
    }
    fn null(&mut self) -> Result<(), ()> {
        Ok(())
    }
    fn table(&mut self, _: bool) -> Result<(), ()> {
        Ok(())
    }
    fn set_field(&mut self, (): &(), _: &[u8], (): ()) -> Result<(), ()> {
        Ok(())
    }
    fn set_index(&mut self, (): &(), _: usize, (): ()) -> Result<(), ()> {
        Ok(())
    }
    fn finish(&mut self, (): ()) {}
}

fn run(engine: &mut Engine, req: &Request<'_>) {
    let admin = engine.credentials(user_id::ADMIN);
    // Only the fuzzer's own space: DDL on the catalogue is exercised by the tests.
    let ours = |space: u32| space == 512;
    let _ = match req {
        Request::Select(s) => engine.select(&admin, s).map(|_| ()),
        Request::Insert(w) if ours(w.space_id) => {
            engine.write(&admin, w.space_id, w.tuple, WriteMode::Insert).map(|_| ())
        }
        Request::Replace(w) if ours(w.space_id) => {
            engine.write(&admin, w.space_id, w.tuple, WriteMode::Replace).map(|_| ())
        }
        Request::Update(u) if ours(u.space_id) => engine.update(&admin, u).map(|_| ()),
        Request::Upsert(u) if ours(u.space_id) => engine.upsert(&admin, u),
        Request::Delete(d) if ours(d.space_id) => engine.delete(&admin, d).map(|_| ()),
        Request::Auth(a) => engine.authenticate(a.user, a.tuple, &[0; 32]).map(|_| ()),
        _ => Ok(()),
    };
    engine.take_changes();
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The fuzzer's space exists, so engine paths are really exercised.
    #[test]
    fn setup_creates_the_fuzz_space() {
        // INSERT {0x10: 512, 0x21: [1, "a"]} framed with a 1-byte length.
        let body = b"\x82\x10\xcd\x02\x00\x21\x92\x01\xa1a";
        let hdr = b"\x82\x00\x02\x01\x01";
        let mut packet = vec![u8::try_from(hdr.len() + body.len()).unwrap()];
        packet.extend_from_slice(hdr);
        packet.extend_from_slice(body);
        frame_and_request(&packet);
        ENGINE.with(|cell| {
            let slot = cell.borrow();
            let engine = slot.as_ref().expect("engine built");
            assert_eq!(engine.space(512).expect("fuzz space").len(), 1);
            assert_eq!(engine.space(512).expect("fuzz space").indexes.len(), 3);
        });
    }

    /// The decimal seed inserts a decimal and an equal double under the scalar
    /// index, adds a decimal to the first, and selects by a decimal key.
    #[test]
    fn the_decimal_seed_reaches_decimal_arithmetic() {
        frame_and_request(include_bytes!("../fuzz/seeds/decimal.bin"));
        ENGINE.with(|cell| {
            let slot = cell.borrow();
            let space = slot.as_ref().expect("engine built").space(512).expect("fuzz space");
            assert_eq!(space.len(), 2);
            let key: crate::engine::value::Key = std::iter::once(crate::engine::value::KeyPart::Uint(3)).collect();
            let row = space.primary().and_then(|pk| pk.get(&key)).expect("row 3");
            let fields = crate::engine::tuple::split(row).expect("a tuple");
            let third = crate::protocol::msgpack::Reader::new(fields[2]).read_ext().expect("an extension");
            assert_eq!(crate::decimal::Decimal::unpack(third.1).map(|d| d.to_string()), Some("-12.34499".into()));
        });
    }
}
