//! IPROTO, Tarantool's binary protocol, as pure functions over bytes (no I/O).
//!
//! # Packet layout
//! ```text
//! <length: msgpack uint> <header: msgpack map> [<body: msgpack map>]
//! ```
//! The length counts header and body. Any uint width is accepted on input;
//! replies always use the 5-byte `0xce` form, as Tarantool 2.6 does.
//! Before any packet the server sends a 128-byte [`greeting`].
//!
//! - [`frame`]: cutting packets out of a byte stream.
//! - [`header`]: the header map (request type, sync, schema version, token).
//! - [`request`]: typed request bodies.
//! - [`response`]: reply encoding, errors included.
//! - [`greeting`], [`auth`]: connection start and chap-sha1.
//! - [`loading`]: the replies of an instance still waiting to bootstrap.
//! - [`msgpack`]: the bounds-checked MessagePack reader everything uses.

pub mod auth;
pub mod codec;
pub mod frame;
pub mod greeting;
pub mod header;
pub mod loading;
pub mod msgpack;
pub mod request;
pub mod response;

/// Request type codes (header key 0x00).
#[allow(missing_docs, reason = "Tarantool's IPROTO_* names")]
pub mod request_type {
    pub const OK: u64 = 0x00;
    pub const SELECT: u64 = 0x01;
    pub const INSERT: u64 = 0x02;
    pub const REPLACE: u64 = 0x03;
    pub const UPDATE: u64 = 0x04;
    pub const DELETE: u64 = 0x05;
    pub const CALL_16: u64 = 0x06;
    pub const AUTH: u64 = 0x07;
    pub const EVAL: u64 = 0x08;
    pub const UPSERT: u64 = 0x09;
    pub const CALL: u64 = 0x0a;
    pub const EXECUTE: u64 = 0x0b;
    pub const PREPARE: u64 = 0x0d;
    /// No operation (replication); 2.6 answers it as an error over IPROTO.
    pub const NOP: u64 = 0x0c;
    pub const PING: u64 = 0x40;
    pub const CHUNK: u64 = 0x80;
    pub const TYPE_ERROR: u64 = 0x8000;
}

/// Header and body map keys.
#[allow(missing_docs, reason = "Tarantool's IPROTO_* names")]
pub mod key {
    pub const REQUEST_TYPE: u8 = 0x00;
    pub const SYNC: u8 = 0x01;
    pub const TIMESTAMP: u8 = 0x04;
    pub const SCHEMA_VERSION: u8 = 0x05;
    /// oncebox's idempotency token (see `protocol-docs/`).
    pub const IDEMPOTENT_TOKEN: u8 = 0x0c;
    /// oncebox's reply status for tokened requests.
    pub const IDEMPOTENT_STATUS: u8 = 0x0d;
    pub const SPACE_ID: u8 = 0x10;
    pub const INDEX_ID: u8 = 0x11;
    pub const LIMIT: u8 = 0x12;
    pub const OFFSET: u8 = 0x13;
    pub const ITERATOR: u8 = 0x14;
    pub const INDEX_BASE: u8 = 0x15;
    pub const KEY: u8 = 0x20;
    pub const TUPLE: u8 = 0x21;
    pub const FUNCTION_NAME: u8 = 0x22;
    pub const USER_NAME: u8 = 0x23;
    pub const EXPR: u8 = 0x27;
    pub const OPS: u8 = 0x28;
    pub const DATA: u8 = 0x30;
    pub const ERROR_24: u8 = 0x31;
    pub const METADATA: u8 = 0x32;
    pub const BIND_METADATA: u8 = 0x33;
    pub const BIND_COUNT: u8 = 0x34;
    pub const SQL_TEXT: u8 = 0x40;
    pub const SQL_BIND: u8 = 0x41;
    pub const SQL_INFO: u8 = 0x42;
    pub const STMT_ID: u8 = 0x43;
    pub const ERROR: u8 = 0x52;
    /// First key Tarantool 2.6.0 rejects in a header (0x53 TERM came in 2.6.1).
    pub const KEY_MAX_2_6: u64 = 0x53;
}

/// The version reported in the greeting. Below 2.10 so no client sends ID.
pub const REPORTED_VERSION: &str = "2.6.0";
