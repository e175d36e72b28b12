//! Replies while the instance is still loading: its first `box.cfg{}` waits for
//! the `replication` sources before it bootstraps, and listens meanwhile.
//!
//! Tarantool 2.6 answers requests in that state from a schema holding only its
//! core system spaces, no users' rights and schema version 0; these replies are
//! what it answers (recorded from the Debian package):
//! - PING: ok.
//! - SELECT on a core system space: usage of the universe is denied to guest;
//!   on any other space: the space does not exist.
//! - INSERT, REPLACE, UPDATE, UPSERT, DELETE: the instance is read-only (a core
//!   system space), or the space does not exist.
//! - CALL: execute access to the function is denied to guest; EVAL: to the universe.
//! - AUTH: ER_LOADING, "Instance bootstrap hasn't finished yet".
//! - A schema version other than 0 in the header: wrong schema version.
//!
//! SQL, which 2.6 can run on expressions then, gets ER_LOADING here.

use super::request::{Decoded, Request};
use super::response;
use crate::error::{code, BoxError};

/// The spaces 2.6 creates before it bootstraps (`schema_init`): `_vinyl_deferred_delete`,
/// `_schema`, `_collation`, `_space`, `_sequence`, `_sequence_data`, `_index`, `_func`,
/// `_user`, `_priv`, `_cluster`, `_trigger`, `_truncate`, `_space_sequence`,
/// `_fk_constraint`, `_ck_constraint`, `_func_index`.
const CORE_SPACES: [u32; 17] = [257, 272, 276, 280, 284, 285, 288, 296, 304, 312, 320, 328, 330, 340, 356, 364, 372];

/// The error 2.6 gives a request while loading, or `None` when it succeeds (PING).
#[must_use]
pub fn outcome(request_type: u64, schema_version: u64, decoded: &Decoded, body: &[u8]) -> Option<BoxError> {
    if schema_version != 0 {
        return Some(BoxError::wrong_schema_version(0, schema_version));
    }
    let request = match decoded.request(body) {
        Ok(Some(request)) => request,
        Ok(None) => return Some(BoxError::unknown_request_type(request_type)),
        Err(e) => return Some(e),
    };
    let space = |space_id: u32| CORE_SPACES.contains(&space_id).then_some(()).ok_or(space_id);
    match request {
        Request::Ping => None,
        Request::Select(s) => Some(match space(s.space_id) {
            Ok(()) => BoxError::access_denied("Usage", "universe", "", "guest"),
            Err(id) => BoxError::no_such_space(&id.to_string()),
        }),
        Request::Insert(w) | Request::Replace(w) => Some(write_error(space(w.space_id))),
        Request::Update(u) => Some(write_error(space(u.space_id))),
        Request::Upsert(u) => Some(write_error(space(u.space_id))),
        Request::Delete(d) => Some(write_error(space(d.space_id))),
        Request::Call(c) | Request::Call16(c) => {
            Some(BoxError::access_denied("Execute", "function", &String::from_utf8_lossy(c.name), "guest"))
        }
        Request::Eval(_) => Some(BoxError::access_denied("Execute", "universe", "", "guest")),
        Request::Auth(_) | Request::Execute(_) | Request::Prepare(_) => {
            Some(BoxError::new(code::LOADING, "Instance bootstrap hasn't finished yet"))
        }
    }
}

/// A write's error: read-only on a core system space, else no such space.
fn write_error(space: Result<(), u32>) -> BoxError {
    match space {
        Ok(()) => BoxError::new(code::READONLY, "Can't modify data because this instance is in read-only mode."),
        Err(id) => BoxError::no_such_space(&id.to_string()),
    }
}

/// Appends the reply to one request while loading (schema version 0).
pub fn reply(out: &mut Vec<u8>, request_type: u64, sync: u64, schema_version: u64, decoded: &Decoded, body: &[u8]) {
    match outcome(request_type, schema_version, decoded, body) {
        None => response::ok_empty(out, sync, 0),
        Some(e) => response::error(out, sync, 0, &e),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::msgpack::write;
    use crate::protocol::request::decode;
    use crate::protocol::request_type as rt;

    /// A body map of (key, uint) pairs and (key, string) pairs, then an empty-array key 0x20/0x21.
    fn body(uints: &[(u8, u64)], strs: &[(u8, &str)], arrays: &[u8]) -> Vec<u8> {
        let mut b = Vec::new();
        #[allow(clippy::cast_possible_truncation, reason = "a handful of keys")]
        write::map_len(&mut b, (uints.len() + strs.len() + arrays.len()) as u32);
        for (k, v) in uints {
            write::uint(&mut b, u64::from(*k));
            write::uint(&mut b, *v);
        }
        for (k, v) in strs {
            write::uint(&mut b, u64::from(*k));
            write::str(&mut b, v.as_bytes());
        }
        for k in arrays {
            write::uint(&mut b, u64::from(*k));
            write::array_len(&mut b, 0);
        }
        b
    }

    fn error_of(ty: u64, schema_version: u64, b: &[u8]) -> Option<(u32, String)> {
        outcome(ty, schema_version, &decode(ty, b), b).map(|e| (e.code, e.message))
    }

    #[test]
    fn answers_as_2_6_answers_before_its_bootstrap() {
        let select = |space| body(&[(0x10, space), (0x11, 0), (0x12, 2), (0x13, 0), (0x14, 0)], &[], &[0x20]);
        assert_eq!(error_of(rt::PING, 0, &body(&[], &[], &[])), None);
        assert_eq!(error_of(rt::SELECT, 0, &select(281)), Some((36, "Space '281' does not exist".into())));
        assert_eq!(
            error_of(rt::SELECT, 0, &select(280)),
            Some((42, "Usage access to universe '' is denied for user 'guest'".into()))
        );
        let insert = |space| body(&[(0x10, space)], &[], &[0x21]);
        assert_eq!(error_of(rt::INSERT, 0, &insert(512)), Some((36, "Space '512' does not exist".into())));
        assert_eq!(
            error_of(rt::REPLACE, 0, &insert(272)),
            Some((7, "Can't modify data because this instance is in read-only mode.".into()))
        );
        let call = body(&[], &[(0x22, "f")], &[0x21]);
        assert_eq!(
            error_of(rt::CALL, 0, &call),
            Some((42, "Execute access to function 'f' is denied for user 'guest'".into()))
        );
        let eval = body(&[], &[(0x27, "return 1")], &[0x21]);
        assert_eq!(
            error_of(rt::EVAL, 0, &eval),
            Some((42, "Execute access to universe '' is denied for user 'guest'".into()))
        );
        let auth = body(&[], &[(0x23, "t1")], &[0x21]);
        assert_eq!(error_of(rt::AUTH, 0, &auth), Some((116, "Instance bootstrap hasn't finished yet".into())));
        assert_eq!(
            error_of(rt::PING, 77, &body(&[], &[], &[])),
            Some((109, "Wrong schema version, current: 77, in request: 0".into()))
        );
        assert_eq!(
            error_of(rt::SELECT, 0, &body(&[(0x11, 0)], &[], &[0x20])),
            Some((69, "Missing mandatory field 'space id' in request".into()))
        );
        assert_eq!(error_of(73, 0, &body(&[], &[], &[])), Some((48, "Unknown request type 73".into())));
    }

    #[test]
    fn access_denied_carries_the_fields_net_box_rebuilds_the_error_from() {
        let call = body(&[], &[(0x22, "f")], &[0x21]);
        let e = outcome(rt::CALL, 0, &decode(rt::CALL, &call), &call).unwrap();
        assert!(e.fields.iter().any(|(k, v)| *k == "object_type" && v == "function"), "{:?}", e.fields);
        let mut out = Vec::new();
        reply(&mut out, rt::PING, 9, 0, &decode(rt::PING, &[0x80]), &[0x80]);
        let mut ok = Vec::new();
        response::ok_empty(&mut ok, 9, 0);
        assert_eq!(out, ok);
    }
}
