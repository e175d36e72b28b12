//! Tarantool-style errors: a code, a type name, a message and an optional payload.
//!
//! Every failure a client can see is a [`BoxError`]. The codes and message texts are
//! Tarantool 2.6's (`src/box/errcode.h`), so connectors that match on them keep working.
//! Encoding to the wire happens in one place, [`crate::protocol::response`].

use std::fmt;
use std::panic::Location;

/// Tarantool error codes used by oncebox (numbers from Tarantool 2.6's `errcode.h`).
#[allow(missing_docs, reason = "the names are Tarantool's ER_* names")]
pub mod code {
    pub const UNKNOWN: u32 = 0;
    pub const ILLEGAL_PARAMS: u32 = 1;
    /// ER_MEMORY_ISSUE: what an `OutOfMemory` error carries over IPROTO.
    pub const MEMORY_ISSUE: u32 = 2;
    pub const TUPLE_FOUND: u32 = 3;
    pub const TUPLE_NOT_FOUND: u32 = 4;
    pub const UNSUPPORTED: u32 = 5;
    /// ER_MEMTX_MAX_TUPLE_SIZE.
    pub const MEMTX_MAX_TUPLE_SIZE: u32 = 110;
    pub const READONLY: u32 = 7;
    pub const CREATE_SPACE: u32 = 9;
    pub const NO_SUCH_GROUP: u32 = 155;
    pub const SPACE_EXISTS: u32 = 10;
    pub const DROP_SPACE: u32 = 11;
    pub const ALTER_SPACE: u32 = 12;
    pub const INDEX_TYPE: u32 = 13;
    pub const MODIFY_INDEX: u32 = 14;
    pub const LAST_DROP: u32 = 15;
    pub const DROP_PRIMARY_KEY: u32 = 17;
    pub const KEY_PART_TYPE: u32 = 18;
    pub const EXACT_MATCH: u32 = 19;
    pub const INVALID_MSGPACK: u32 = 20;
    pub const TUPLE_NOT_ARRAY: u32 = 22;
    pub const FIELD_TYPE: u32 = 23;
    pub const INDEX_PART_TYPE_MISMATCH: u32 = 24;
    pub const UPDATE_SPLICE: u32 = 25;
    pub const UPDATE_ARG_TYPE: u32 = 26;
    pub const FORMAT_MISMATCH_INDEX_PART: u32 = 27;
    pub const UNKNOWN_UPDATE_OP: u32 = 28;
    pub const UPDATE_FIELD: u32 = 29;
    pub const FUNCTION_TX_ACTIVE: u32 = 30;
    pub const KEY_PART_COUNT: u32 = 31;
    pub const PROC_LUA: u32 = 32;
    pub const NO_SUCH_PROC: u32 = 33;
    pub const NO_SUCH_INDEX_ID: u32 = 35;
    pub const NO_SUCH_SPACE: u32 = 36;
    pub const NO_SUCH_FIELD_NO: u32 = 37;
    pub const EXACT_FIELD_COUNT: u32 = 38;
    pub const FIELD_MISSING: u32 = 39;
    pub const WAL_IO: u32 = 40;
    pub const MORE_THAN_ONE_TUPLE: u32 = 41;
    pub const ACCESS_DENIED: u32 = 42;
    pub const CREATE_USER: u32 = 43;
    pub const DROP_USER: u32 = 44;
    pub const NO_SUCH_USER: u32 = 45;
    pub const USER_EXISTS: u32 = 46;
    pub const PASSWORD_MISMATCH: u32 = 47;
    pub const UNKNOWN_REQUEST_TYPE: u32 = 48;
    pub const CREATE_FUNCTION: u32 = 50;
    pub const IDENTIFIER: u32 = 70;
    pub const CREATE_SEQUENCE: u32 = 142;
    pub const NO_SUCH_FUNCTION: u32 = 51;
    pub const FUNCTION_EXISTS: u32 = 52;
    pub const NO_SUCH_ENGINE: u32 = 57;
    pub const CFG: u32 = 59;
    pub const MISSING_REQUEST_FIELD: u32 = 69;
    pub const ITERATOR_TYPE: u32 = 72;
    pub const NO_SUCH_ROLE: u32 = 82;
    pub const INDEX_EXISTS: u32 = 85;
    pub const ROLE_LOOP: u32 = 87;
    pub const GRANT: u32 = 88;
    pub const CANT_UPDATE_PRIMARY_KEY: u32 = 94;
    pub const UPDATE_INTEGER_OVERFLOW: u32 = 95;
    pub const UPDATE_DECIMAL_OVERFLOW: u32 = 194;
    pub const WRONG_INDEX_RECORD: u32 = 106;
    pub const WRONG_INDEX_PARTS: u32 = 107;
    pub const WRONG_INDEX_OPTIONS: u32 = 108;
    pub const CANT_CREATE_COLLATION: u32 = 150;
    pub const WRONG_COLLATION_OPTIONS: u32 = 151;
    pub const DROP_COLLATION: u32 = 173;
    pub const RTREE_RECT: u32 = 101;
    pub const UNSUPPORTED_INDEX_FEATURE: u32 = 112;
    pub const WRONG_SCHEMA_VERSION: u32 = 109;
    /// ER_LOADING: the instance has not finished its bootstrap.
    pub const LOADING: u32 = 116;
    pub const WRONG_SPACE_OPTIONS: u32 = 111;
    pub const VIEW_IS_RO: u32 = 113;
    pub const NO_SUCH_INDEX_NAME: u32 = 148;
    pub const WRONG_SPACE_FORMAT: u32 = 141;
    pub const DROP_SEQUENCE: u32 = 144;
    pub const NO_SUCH_SEQUENCE: u32 = 145;
    pub const SEQUENCE_OVERFLOW: u32 = 147;
    pub const NO_SUCH_COLLATION: u32 = 166;
    pub const NULLABLE_PRIMARY: u32 = 152;
    pub const NO_SUCH_FIELD_NAME: u32 = 201;
    pub const DROP_FUNCTION: u32 = 71;
    pub const MISSING_SNAPSHOT: u32 = 93;
    pub const SYSTEM: u32 = 115;
    pub const BACKUP_IN_PROGRESS: u32 = 129;
    pub const FUNC_INDEX_FUNC: u32 = 198;
    pub const FUNC_INDEX_FORMAT: u32 = 199;
    pub const FUNC_INDEX_PARTS: u32 = 200;
    pub const SEQUENCE_NOT_STARTED: u32 = 212;
}

/// The error class name Tarantool reports in the error stack (`type`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorKind {
    /// Most server-side errors.
    Client,
    /// A privilege check failed; carries object type, name and access type.
    AccessDenied,
    /// A Lua error raised by user code.
    Luajit,
    /// A user-defined error type (`box.error.new{type = ...}`).
    Custom,
    /// An operating-system error.
    System,
    /// An allocation failed (`memtx_memory` is full): ER_MEMORY_ISSUE, errno ENOMEM.
    OutOfMemory,
}

impl ErrorKind {
    /// The name Tarantool puts in the error stack.
    #[must_use]
    pub fn name(self) -> &'static str {
        match self {
            Self::Client => "ClientError",
            Self::AccessDenied => "AccessDeniedError",
            Self::Luajit => "LuajitError",
            Self::Custom => "CustomError",
            Self::System => "SystemError",
            Self::OutOfMemory => "OutOfMemory",
        }
    }

    /// The `errno` an error of this kind carries (ENOMEM for `OutOfMemory`, else none).
    #[must_use]
    pub fn errno(self) -> u32 {
        match self {
            Self::OutOfMemory => 12,
            _ => 0,
        }
    }
}

/// One Tarantool error as a client sees it.
#[derive(Debug, Clone, PartialEq)]
pub struct BoxError {
    /// The ER_* code.
    pub code: u32,
    /// The error class.
    pub kind: ErrorKind,
    /// The message text.
    pub message: String,
    /// Source file that raised it (a volatile field, like Tarantool's).
    pub file: std::borrow::Cow<'static, str>,
    /// Source line that raised it.
    pub line: u32,
    /// Extra payload (`fields` in the error stack): string key to string value.
    pub fields: Vec<(&'static str, String)>,
    /// The error this one was raised from (`set_prev` in Lua): later stack entries.
    pub prev: Option<Box<BoxError>>,
}

impl fmt::Display for BoxError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for BoxError {}

/// Shorthand for results that fail with a [`BoxError`].
pub type BoxResult<T> = Result<T, BoxError>;

impl BoxError {
    /// A `ClientError` with the given code and message, located at the caller.
    #[track_caller]
    #[must_use]
    pub fn new(code: u32, message: impl Into<String>) -> Self {
        let loc = Location::caller();
        Self {
            code,
            kind: ErrorKind::Client,
            message: message.into(),
            file: std::borrow::Cow::Borrowed(loc.file()),
            line: loc.line(),
            fields: Vec::new(),
            prev: None,
        }
    }

    /// 2.6's `OutOfMemory`: `Failed to allocate {bytes} bytes in {allocator} for {object}`.
    #[track_caller]
    #[must_use]
    pub fn out_of_memory(bytes: usize, allocator: &str, object: &str) -> Self {
        let mut e =
            Self::new(code::MEMORY_ISSUE, format!("Failed to allocate {bytes} bytes in {allocator} for {object}"));
        e.kind = ErrorKind::OutOfMemory;
        e
    }

    /// ER_ILLEGAL_PARAMS.
    #[track_caller]
    #[must_use]
    pub fn illegal_params(what: &str) -> Self {
        Self::new(code::ILLEGAL_PARAMS, format!("Illegal parameters, {what}"))
    }

    /// ER_INVALID_MSGPACK.
    #[track_caller]
    #[must_use]
    pub fn invalid_msgpack(what: &str) -> Self {
        Self::new(code::INVALID_MSGPACK, format!("Invalid MsgPack - {what}"))
    }

    /// ER_MISSING_REQUEST_FIELD.
    #[track_caller]
    #[must_use]
    pub fn missing_request_field(what: &str) -> Self {
        Self::new(code::MISSING_REQUEST_FIELD, format!("Missing mandatory field '{what}' in request"))
    }

    /// ER_UNKNOWN_REQUEST_TYPE. 2.6 prints the type's low 8 bits (type 300 is "44").
    #[track_caller]
    #[must_use]
    pub fn unknown_request_type(ty: u64) -> Self {
        Self::new(code::UNKNOWN_REQUEST_TYPE, format!("Unknown request type {}", ty & 0xff))
    }

    /// ER_NO_SUCH_SPACE, named by id or name as Tarantool does.
    #[track_caller]
    #[must_use]
    pub fn no_such_space(name: &str) -> Self {
        Self::new(code::NO_SUCH_SPACE, format!("Space '{name}' does not exist"))
    }

    /// ER_NO_SUCH_INDEX_ID.
    #[track_caller]
    #[must_use]
    pub fn no_such_index_id(index_id: u32, space: &str) -> Self {
        Self::new(code::NO_SUCH_INDEX_ID, format!("No index #{index_id} is defined in space '{space}'"))
    }

    /// ER_ACCESS_DENIED with the payload net.box needs to rebuild the error.
    #[track_caller]
    #[must_use]
    pub fn access_denied(access: &str, object_type: &str, object_name: &str, user: &str) -> Self {
        let mut e = Self::new(
            code::ACCESS_DENIED,
            format!("{access} access to {object_type} '{object_name}' is denied for user '{user}'"),
        );
        e.kind = ErrorKind::AccessDenied;
        e.fields = vec![
            ("object_type", object_type.to_owned()),
            ("object_name", object_name.to_owned()),
            ("access_type", access.to_owned()),
        ];
        e
    }

    /// ER_WRONG_SCHEMA_VERSION, with Tarantool 2.6's swapped numbers.
    #[track_caller]
    #[must_use]
    pub fn wrong_schema_version(current: u64, in_request: u64) -> Self {
        // NOTE: 2.6 passes (request, current) into "current: %d, in request: %u".
        Self::new(
            code::WRONG_SCHEMA_VERSION,
            format!("Wrong schema version, current: {in_request}, in request: {current}"),
        )
    }

    /// ER_FIELD_TYPE; `field` is the 1-based field number or a quoted name.
    #[track_caller]
    #[must_use]
    pub fn field_type(field: &str, expected: &str) -> Self {
        Self::new(
            code::FIELD_TYPE,
            format!("Tuple field {field} type does not match one required by operation: expected {expected}"),
        )
    }

    /// ER_KEY_PART_TYPE.
    #[track_caller]
    #[must_use]
    pub fn key_part_type(part: usize, expected: &str) -> Self {
        Self::new(
            code::KEY_PART_TYPE,
            format!("Supplied key type of part {part} does not match index part type: expected {expected}"),
        )
    }

    /// ER_WAL_IO.
    #[track_caller]
    #[must_use]
    pub fn wal_io() -> Self {
        Self::new(code::WAL_IO, "Failed to write to disk")
    }
}
