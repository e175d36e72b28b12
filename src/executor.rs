//! The TX thread: the single owner of the engine, like Tarantool's tx thread.
//!
//! Network tasks send it [`TxMessage`]s; it runs requests one at a time in
//! arrival order, so the engine needs no locks, and sends each connection its
//! replies in batches. Writes hand their changes to the storage seam before the
//! reply is released.

use std::collections::HashMap;
use std::rc::Rc;

use bytes::Bytes;
use tokio::sync::mpsc::{UnboundedReceiver, UnboundedSender};

use crate::engine::access::{user_id, Credentials};
use crate::engine::space::WriteMode;
use crate::engine::Engine;
use crate::error::{BoxError, BoxResult};
use crate::protocol::frame::FrameError;
use crate::protocol::header::Header;
use crate::protocol::request::{self, Request};
use crate::protocol::response;
use crate::storage::Storage;

/// What a connection's writer receives.
#[derive(Debug)]
pub enum Outgoing {
    /// Reply bytes to write.
    Data(Vec<u8>),
    /// Write what was sent before, then close the connection.
    Close,
}

/// Messages from network tasks to the TX thread.
#[derive(Debug)]
pub enum TxMessage {
    /// A connection was accepted and greeted with `salt`.
    Connect {
        /// Connection id.
        session_id: u64,
        /// The salt sent in the greeting.
        salt: [u8; 32],
        /// Where replies go.
        out: UnboundedSender<Outgoing>,
    },
    /// A request with a decoded header.
    Request {
        /// Connection id.
        session_id: u64,
        /// The decoded header.
        header: Header,
        /// The whole packet (header and body).
        packet: Bytes,
    },
    /// A packet whose header could not be decoded.
    BadHeader {
        /// Connection id.
        session_id: u64,
        /// The sync read before the failure.
        sync: u64,
    },
    /// The stream could not be framed; reply and close.
    BadFrame {
        /// Connection id.
        session_id: u64,
        /// What was wrong.
        error: FrameError,
    },
    /// The connection is gone.
    Disconnect {
        /// Connection id.
        session_id: u64,
    },
}

/// Per-connection state owned by the TX thread.
struct Session {
    user_id: u32,
    salt: [u8; 32],
    out: UnboundedSender<Outgoing>,
    pending: Vec<u8>,
}

/// Error code for tokened writes while deduplication is not available.
pub const ER_IDEMPOTENCY_DISABLED: u32 = 4003;

/// The TX thread's state.
pub struct Executor {
    engine: Engine,
    storage: Box<dyn Storage>,
    sessions: HashMap<u64, Session>,
    /// Sessions with replies waiting to be flushed.
    dirty: Vec<u64>,
}

/// Largest number of messages handled before replies are flushed.
const MAX_BATCH: usize = 256;

impl Executor {
    /// An executor over `engine`, persisting through `storage`.
    #[must_use]
    pub fn new(engine: Engine, storage: Box<dyn Storage>) -> Self {
        Self { engine, storage, sessions: HashMap::new(), dirty: Vec::new() }
    }

    /// Runs until every sender is gone.
    pub fn run(mut self, mut rx: UnboundedReceiver<TxMessage>) {
        while let Some(msg) = rx.blocking_recv() {
            self.handle(msg);
            for _ in 1..MAX_BATCH {
                match rx.try_recv() {
                    Ok(msg) => self.handle(msg),
                    Err(_) => break,
                }
            }
            self.flush();
        }
    }

    fn flush(&mut self) {
        for id in self.dirty.drain(..) {
            if let Some(s) = self.sessions.get_mut(&id) {
                if !s.pending.is_empty() {
                    let data = std::mem::take(&mut s.pending);
                    let _ = s.out.send(Outgoing::Data(data));
                }
            }
        }
    }

    fn buffer(&mut self, session_id: u64) -> Option<&mut Vec<u8>> {
        let s = self.sessions.get_mut(&session_id)?;
        if s.pending.is_empty() {
            self.dirty.push(session_id);
        }
        Some(&mut s.pending)
    }

    /// Handles one message.
    pub fn handle(&mut self, msg: TxMessage) {
        match msg {
            TxMessage::Connect { session_id, salt, out } => {
                self.sessions.insert(session_id, Session { user_id: user_id::GUEST, salt, out, pending: Vec::new() });
            }
            TxMessage::Disconnect { session_id } => {
                self.sessions.remove(&session_id);
            }
            TxMessage::BadHeader { session_id, sync } => {
                let sv = self.engine.schema_version();
                if let Some(buf) = self.buffer(session_id) {
                    response::error(buf, sync, sv, &BoxError::invalid_msgpack("packet header"));
                }
            }
            TxMessage::BadFrame { session_id, error } => {
                let sv = self.engine.schema_version();
                let err = match error {
                    FrameError::BadLength => BoxError::invalid_msgpack("packet length"),
                    FrameError::TooLarge { len, max } => {
                        BoxError::invalid_msgpack(&format!("packet length {len} exceeds max_packet_size {max}"))
                    }
                };
                if let Some(buf) = self.buffer(session_id) {
                    response::error(buf, 0, sv, &err);
                }
                self.flush();
                if let Some(s) = self.sessions.get(&session_id) {
                    let _ = s.out.send(Outgoing::Close);
                }
            }
            TxMessage::Request { session_id, header, packet } => {
                let Some(session) = self.sessions.get(&session_id) else {
                    return;
                };
                let (user, salt) = (session.user_id, session.salt);
                let body = packet.get(header.body_offset..).unwrap_or(&[]);
                let mut reply = Vec::new();
                let result = self.execute(session_id, user, &salt, &header, body, &mut reply);
                let sv = self.engine.schema_version();
                if let Err(e) = result {
                    reply.clear();
                    response::error(&mut reply, header.sync, sv, &e);
                }
                if let Some(buf) = self.buffer(session_id) {
                    buf.extend_from_slice(&reply);
                }
            }
        }
    }

    fn creds(&self, user: u32) -> Rc<Credentials> {
        self.engine.credentials(user)
    }

    /// Runs one request and writes its reply into `out`.
    fn execute(
        &mut self,
        session_id: u64,
        user: u32,
        salt: &[u8],
        header: &Header,
        body: &[u8],
        out: &mut Vec<u8>,
    ) -> BoxResult<()> {
        let sv = self.engine.schema_version();
        if header.schema_version != 0 && header.schema_version != sv {
            return Err(BoxError::wrong_schema_version(sv, header.schema_version));
        }
        let Some(req) = request::parse(header.request_type, body)? else {
            return Err(BoxError::unknown_request_type(header.request_type));
        };
        if header.idempotent_token.is_some() && req.is_write() {
            return Err(BoxError::new(
                ER_IDEMPOTENCY_DISABLED,
                "Idempotent requests are not enabled on this server yet",
            ));
        }
        let creds = self.creds(user);
        let sync = header.sync;
        match req {
            Request::Ping => response::ok_empty(out, sync, sv),
            Request::Auth(a) => {
                let new_user = self.engine.authenticate(a.user, a.tuple, salt)?;
                if let Some(s) = self.sessions.get_mut(&session_id) {
                    s.user_id = new_user;
                }
                response::ok_empty(out, sync, sv);
            }
            Request::Select(s) => {
                let tuples = self.engine.select(&creds, &s)?;
                response::ok_data(out, sync, sv, tuples.iter().map(|t| &t[..]));
            }
            Request::Insert(w) | Request::Replace(w) => {
                let mode = if header.request_type == crate::protocol::request_type::INSERT {
                    WriteMode::Insert
                } else {
                    WriteMode::Replace
                };
                let tuple = self.engine.write(&creds, w.space_id, w.tuple, mode)?;
                self.commit()?;
                self.reply_tuple(out, sync, Some(&tuple));
            }
            Request::Update(u) => {
                let tuple = self.engine.update(&creds, &u)?;
                self.commit()?;
                self.reply_tuple(out, sync, tuple.as_ref());
            }
            Request::Upsert(u) => {
                self.engine.upsert(&creds, &u)?;
                self.commit()?;
                self.reply_tuple(out, sync, None);
            }
            Request::Delete(d) => {
                let tuple = self.engine.delete(&creds, &d)?;
                self.commit()?;
                self.reply_tuple(out, sync, tuple.as_ref());
            }
            Request::Call(c) | Request::Call16(c) => {
                self.engine.check_call_access(&creds, c.name)?;
                return Err(BoxError::new(
                    crate::error::code::NO_SUCH_PROC,
                    format!("Procedure '{}' is not defined", String::from_utf8_lossy(c.name)),
                ));
            }
            Request::Eval(_) => {
                self.engine.check_eval_access(&creds)?;
                return Err(BoxError::new(
                    crate::error::code::UNSUPPORTED,
                    "oncebox does not support EVAL until Lua is embedded",
                ));
            }
        }
        Ok(())
    }

    fn reply_tuple(&self, out: &mut Vec<u8>, sync: u64, tuple: Option<&crate::engine::tuple::Tuple>) {
        let sv = self.engine.schema_version();
        response::ok_data(out, sync, sv, tuple.into_iter().map(|t| &t[..]));
    }

    /// Hands the statement's changes to storage; nothing is acknowledged before this returns.
    fn commit(&mut self) -> BoxResult<()> {
        let changes = self.engine.take_changes();
        if changes.is_empty() {
            return Ok(());
        }
        self.storage.commit(&changes)
    }
}
