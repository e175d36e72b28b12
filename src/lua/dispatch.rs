//! `box.internal.op(name, ...)`: the one door from Lua into the engine.
//!
//! The Lua prelude (`lua/box.lua`) builds `box.space`, `box.schema` and friends on
//! top of these operations. Each returns `true, result` or `false, error` (a table
//! with `code`, `message`, `type` and the access-denied payload), and the prelude
//! raises the error as a `box.error` object.

use std::rc::Rc;

use mlua::{FromLua, Lua, MultiValue, Table, Value};

use super::convert;
use super::tuple::{LuaTuple, TupleFormat};
use crate::engine::access::Credentials;
use crate::engine::space::{Space, WriteMode};
use crate::engine::tuple::Tuple;
use crate::engine::value::Collation;
use crate::engine::Engine;
use crate::error::BoxError;
use crate::idempotency::token::Token;
use crate::idempotency::{self as idem, fingerprint, Mode, NewRecord, Record, Window};
use crate::protocol::request::{Delete, Select, Update, Upsert};

/// What `box.internal.op` works on: the engine and the idempotency window, lent to
/// Lua for the length of one entry (see `LuaRuntime::with_engine`), and whose rights apply.
///
/// The runtime keeps one `Context` for its life and swaps the executor's engine and
/// window into it on entry and back out on exit, so that `op` can be one Lua function
/// made once instead of a scoped callback made per entry.
pub struct Context {
    /// `box.internal`, as the runtime found it at its first request.
    pub internal: Table,
    /// Whether the engine is lent now (outside an entry, `engine` is an empty stand-in).
    pub lent: bool,
    /// The engine (boxed: lending it swaps two pointers, not two large structs).
    pub engine: Box<Engine>,
    /// The idempotency window (boxed, as the engine).
    pub window: Box<Window>,
    /// The effective user's rights.
    pub creds: Rc<Credentials>,
    /// The calling session's id.
    pub session_id: u64,
    /// The instance uuid (`box.info.uuid`).
    pub instance_uuid: Rc<str>,
    /// Startup configuration, for `box.cfg` reads.
    pub cfg: Rc<Vec<(String, String)>>,
    /// Where console listen requests go.
    pub control: Option<Rc<tokio::sync::mpsc::UnboundedSender<crate::executor::Control>>>,
    /// The commit group this request's changes join (`None` without a WAL).
    pub ticket: Option<u64>,
    /// Set when the reply must wait until an earlier group is durable (a joined token).
    pub wait_for: Option<u64>,
    /// The schema version Lua last saw in `box.internal.schema` (see [`publish_schema`]).
    pub schema_seen: u64,
}

impl Context {
    /// A context with nothing lent: an empty engine and window stand in.
    #[must_use]
    pub fn idle(internal: Table) -> Self {
        let engine = Engine::default();
        let window = Window::new(idem::Settings::default(), 0, &engine);
        Self {
            internal,
            lent: false,
            engine: Box::new(engine),
            window: Box::new(window),
            creds: Rc::new(Credentials::default()),
            session_id: crate::server::SERVER_SESSION_ID,
            instance_uuid: Rc::from(""),
            cfg: Rc::new(Vec::new()),
            control: None,
            ticket: None,
            wait_for: None,
            schema_seen: u64::MAX,
        }
    }
}

/// Puts the engine's schema version in `box.internal.schema` when Lua's copy is
/// stale, so that `box.space.<name>` checks its cache without a call into Rust.
/// Called on every Lua entry with the engine bound and after every operation.
pub fn publish_schema(cx: &mut Context) -> mlua::Result<()> {
    let version = cx.engine.schema_version();
    if version != cx.schema_seen {
        #[allow(clippy::cast_precision_loss, reason = "schema versions stay far below 2^53")]
        cx.internal.raw_set("schema", version as f64)?;
        cx.schema_seen = version;
    }
    Ok(())
}

/// Which `box.session.on_<kind>` trigger lists are not empty.
#[derive(Debug, Default)]
pub struct SessionTriggers(pub std::collections::HashSet<String>);

/// Spaces with `on_replace` triggers (IPROTO writes to them run the triggers).
#[derive(Debug, Default)]
pub struct ReplaceTriggers(pub std::collections::HashSet<u32>);

/// The open sessions' peer addresses and sockets, by session id.
#[derive(Debug, Default)]
pub struct Sessions(pub std::collections::HashMap<u64, (Option<String>, i32)>);

/// Spaces with `before_replace` triggers (IPROTO writes to them go through Lua).
#[derive(Debug, Default)]
pub struct BeforeReplaceTriggers(pub std::collections::HashSet<u32>);

/// Values `box.session.push` queued for the current request, msgpack-encoded.
#[derive(Debug, Default)]
pub struct Pushes(pub Vec<Vec<u8>>);

/// Text console sessions that quit (`\quit`) during the current step: the
/// executor closes them once their replies are out.
#[derive(Debug, Default)]
pub struct ConsoleQuits(pub Vec<u64>);

/// `os.exit(status)` was called: the server drains its commits, then exits with `status`.
#[derive(Debug, Clone, Copy)]
pub struct ExitRequest(pub i32);

/// Whether a listener was opened from Lua (a console or `box.cfg{listen}`): the script keeps serving.
#[derive(Debug, Clone, Copy, Default)]
pub struct Serving(pub bool);

/// What Lua tells the executor about every request, shared with the runtime
/// (an `Rc` in the app data): read per request without an app-data lookup.
#[derive(Debug, Default)]
pub struct Signals {
    /// `box.session.push` queued something since the last [`Pushes`] were taken.
    pub pushed: std::cell::Cell<bool>,
    /// Number of `box.ctl.on_iproto_request` triggers.
    pub iproto_triggers: std::cell::Cell<usize>,
    /// `box.snapshot()` was called: the next commit group is synced and checkpointed.
    pub snapshot: std::cell::Cell<bool>,
    /// `box.session.su(user)` changed a session's user since the [`SessionUsers`] were taken.
    pub session_users: std::cell::Cell<bool>,
}

/// Sessions whose user `box.session.su(user)` (without a function) changed, in
/// order: (session id, user id).
#[derive(Default)]
pub struct SessionUsers(pub Vec<(u64, u32)>);

fn signals(lua: &Lua) -> Option<std::rc::Rc<Signals>> {
    lua.app_data_ref::<std::rc::Rc<Signals>>().map(|s| std::rc::Rc::clone(&s))
}

fn arg<T: mlua::FromLua>(lua: &Lua, args: &[Value], i: usize) -> mlua::Result<T> {
    T::from_lua(args.get(i).cloned().unwrap_or(Value::Nil), lua)
}

fn bytes_of(args: &[Value], i: usize) -> mlua::Result<Vec<u8>> {
    let mut out = Vec::new();
    convert::encode(&mut out, args.get(i).unwrap_or(&Value::Nil))?;
    Ok(out)
}

/// A key argument: a scalar becomes a one-part key, nil an empty key.
fn key_of(args: &[Value], i: usize) -> mlua::Result<Vec<u8>> {
    match args.get(i) {
        None | Some(Value::Nil) => Ok(vec![0x90]),
        // A tuple is a whole key; an extension value (uuid, decimal) is one key part.
        Some(Value::UserData(ud)) if ud.borrow::<convert::LuaExt>().is_err() => bytes_of(args, i),
        Some(Value::Table(_)) => bytes_of(args, i),
        Some(v) => {
            let mut out = vec![0x91];
            convert::encode(&mut out, v)?;
            Ok(out)
        }
    }
}

/// Asks the network side to open a listener and waits for the bound address; a
/// script that opened one keeps serving.
fn open_listener(
    lua: &Lua,
    control: &tokio::sync::mpsc::UnboundedSender<crate::executor::Control>,
    request: impl FnOnce(std::sync::mpsc::Sender<Result<String, String>>) -> crate::executor::Control,
) -> Result<Value, Failure> {
    let gone = || mlua::Error::runtime("the network side is gone");
    let (reply, result) = std::sync::mpsc::channel();
    control.send(request(reply)).map_err(|_| gone())?;
    match result.recv() {
        Ok(Ok(bound)) => {
            lua.set_app_data(Serving(true));
            Ok(Value::String(lua.create_string(bound)?))
        }
        Ok(Err(msg)) => Err(BoxError::new(crate::error::code::CFG, msg).into()),
        Err(_) => Err(gone().into()),
    }
}

/// Adds `key` to `set` or removes it.
fn toggle<K: std::hash::Hash + Eq>(set: &mut std::collections::HashSet<K>, key: K, on: bool) {
    if on {
        set.insert(key);
    } else {
        set.remove(&key);
    }
}

thread_local! {
    /// The tuple format of each space a tuple was read from, made at the schema
    /// version kept beside them: all are dropped when it changes.
    static FORMATS: std::cell::RefCell<(u64, std::collections::HashMap<u32, Rc<TupleFormat>>)> =
        std::cell::RefCell::default();
}

/// A sequence's `_sequence` row by id or name, whatever the user's rights (as
/// 2.6's `box.sequence`, which the system fills); nil when there is none.
fn sequence_row(lua: &Lua, engine: &Engine, which: Option<&Value>) -> Result<Value, Failure> {
    let row = match which {
        Some(Value::Integer(id)) => u32::try_from(*id).ok().and_then(|id| engine.sequence_row(id)),
        #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss, reason = "checked to be a u32 first")]
        Some(Value::Number(id)) if id.fract() == 0.0 && (0.0..=f64::from(u32::MAX)).contains(id) => {
            engine.sequence_row(*id as u32)
        }
        Some(Value::String(name)) => engine.sequence_row_named(&name.as_bytes()),
        _ => None,
    };
    let Some(row) = row.cloned() else { return Ok(Value::Nil) };
    let space = engine.space(crate::engine::catalog::space_id::SEQUENCE)?;
    Ok(tuple_value(lua, row, &format_of(space, engine.schema_version()))?)
}

/// The format tuples of `space` get in Lua (`schema_version`: the engine's now).
fn format_of(space: &Space, schema_version: u64) -> Rc<TupleFormat> {
    FORMATS.with_borrow_mut(|(version, formats)| {
        if *version != schema_version {
            *version = schema_version;
            formats.clear();
        }
        formats.entry(space.def.id).or_insert_with(|| Rc::new(TupleFormat::of(space))).clone()
    })
}

fn tuple_value(lua: &Lua, t: Tuple, format: &Rc<TupleFormat>) -> mlua::Result<Value> {
    Ok(Value::UserData(lua.create_userdata(LuaTuple(t, format.clone()))?))
}

/// The error table handed to the prelude.
pub fn error_table(lua: &Lua, e: &BoxError) -> mlua::Result<Table> {
    let t = lua.create_table()?;
    t.set("code", e.code)?;
    t.set("message", e.message.as_str())?;
    t.set("type", e.kind.name())?;
    if e.kind.errno() != 0 {
        t.set("errno", e.kind.errno())?;
    }
    for (k, v) in &e.fields {
        t.set(*k, v.as_str())?;
    }
    if let Some(prev) = &e.prev {
        t.set("prev", error_table(lua, prev)?)?;
    }
    Ok(t)
}

/// The operations `box.internal.op` also takes by number (its index here, from 1):
/// the ones every `box.space` call makes. A string argument crosses from Lua as a
/// reference mlua makes and frees on each call; a number does not. `box.internal.op_codes`
/// maps the names to the numbers.
pub const OP_CODES: [&str; 14] = [
    "",
    "get",
    "select",
    "insert",
    "replace",
    "update",
    "upsert",
    "delete",
    "len",
    "txn_mark",
    // Those the fiber scheduler makes at every wait and fiber.create.
    "uid",
    "session_id",
    "enter_session",
    "new_session_id",
];

/// Runs one operation.
///
/// Runs on every Lua call into the engine, so it borrows: the arguments stay in
/// the `MultiValue` mlua built, and the operation's name is read in place.
pub fn dispatch(lua: &Lua, cx: &mut Context, mut args: MultiValue) -> mlua::Result<(bool, Value)> {
    let args: &[Value] = args.make_contiguous();
    let text;
    let name: &str = match args.first() {
        Some(Value::String(name)) => {
            text = name.to_str()?;
            &text
        }
        // The code of one of the common operations (box.lua's `op` sends these).
        Some(Value::Integer(code)) => usize::try_from(*code).ok().and_then(|i| OP_CODES.get(i)).copied().unwrap_or(""),
        _ => return Err(mlua::Error::runtime("box.internal.op: the operation name must be a string")),
    };
    let result = run(lua, cx, name, args);
    publish_schema(cx)?;
    match result {
        Ok(v) => Ok((true, v)),
        Err(Failure::Box(e)) => Ok((false, Value::Table(error_table(lua, &e)?))),
        // A value msgpack cannot encode: box.lua raises it as 2.6's encoder does.
        Err(Failure::Lua(mlua::Error::RuntimeError(why))) if convert::is_encode_failure(&why) => {
            let failure = lua.create_table()?;
            failure.raw_set("message", why)?;
            failure.raw_set("unencodable", true)?;
            Ok((false, Value::Table(failure)))
        }
        Err(Failure::Lua(e)) => Err(e),
    }
}

enum Failure {
    Box(BoxError),
    Lua(mlua::Error),
}

impl From<BoxError> for Failure {
    fn from(e: BoxError) -> Self {
        Self::Box(e)
    }
}

impl From<mlua::Error> for Failure {
    fn from(e: mlua::Error) -> Self {
        Self::Lua(e)
    }
}

fn run(lua: &Lua, cx: &mut Context, op: &str, args: &[Value]) -> Result<Value, Failure> {
    if op == "su" {
        // box.session.su: the effective user for the rest of this call; returns the previous one.
        let uid: u32 = arg(lua, args, 1)?;
        let prev = cx.creds.user_id;
        cx.creds = cx.engine.credentials(uid);
        return Ok(Value::Integer(i64::from(prev)));
    }
    if op == "session_su" {
        // box.session.su(user): the session's own user from now on, as 2.6 resets
        // the session's credentials (its later requests and console lines run so).
        let uid: u32 = arg(lua, args, 1)?;
        let mut changed = lua.remove_app_data::<SessionUsers>().unwrap_or_default();
        changed.0.push((cx.session_id, uid));
        lua.set_app_data(changed);
        if let Some(s) = signals(lua) {
            s.session_users.set(true);
        }
        return Ok(Value::Nil);
    }
    if op == "enter_session" {
        // enter_session(id, uid): the session and user the running code acts for,
        // switched (a fiber that fiber.create runs at once has its own).
        cx.session_id = arg(lua, args, 1)?;
        let uid: u32 = arg(lua, args, 2)?;
        cx.creds = cx.engine.credentials(uid);
        return Ok(Value::Nil);
    }
    let creds = cx.creds.clone();
    let engine = &mut cx.engine;
    let u32_arg = |i: usize| -> Result<u32, Failure> { Ok(arg::<Option<u32>>(lua, args, i)?.unwrap_or(0)) };
    Ok(match op {
        "space" => space_info(lua, engine, args.get(1))?,
        // Every space's id, in id order (box.space lists them all).
        "space_ids" => {
            let mut ids: Vec<u32> = engine.spaces().map(|s| s.def.id).collect();
            ids.sort_unstable();
            Value::Table(lua.create_sequence_from(ids)?)
        }
        "stat" => {
            // box.stat(): {KIND = {total = n, rps = n}, ...}
            let stats = &cx.engine.stats;
            let t = lua.create_table()?;
            for (kind, name) in crate::engine::stats::OpKind::ALL {
                t.set(name, counter_table(lua, stats.total(kind), stats.rate(kind), None)?)?;
            }
            Value::Table(t)
        }
        "stat_net" => {
            // box.stat.net(): {SENT = {total, rps}, RECEIVED, CONNECTIONS and
            // REQUESTS = {total, rps, current}}
            let net = &crate::server::NET;
            let load = |c: &std::sync::atomic::AtomicU64| c.load(std::sync::atomic::Ordering::Relaxed);
            let t = lua.create_table()?;
            let entries = [
                ("SENT", load(&net.sent), None),
                ("RECEIVED", load(&net.received), None),
                ("CONNECTIONS", load(&net.connections), Some(load(&net.open))),
                ("REQUESTS", load(&net.requests), Some(load(&net.in_progress))),
            ];
            for (k, (name, total, current)) in entries.into_iter().enumerate() {
                t.set(name, counter_table(lua, total, cx.engine.stats.net_rate(k), current)?)?;
            }
            Value::Table(t)
        }
        "stat_reset" => {
            cx.engine.stats.reset();
            Value::Nil
        }
        "schema_version" => Value::Number(engine.schema_version() as f64),
        "uid" => Value::Integer(i64::from(creds.user_id)),
        "user_name" => Value::String(lua.create_string(engine.user_name(u32_arg(1)?))?),
        // By name, or (a number) by id, as 2.6 resolves users and roles.
        "user" => {
            let found = match args.get(1) {
                Some(Value::Integer(id)) if *id >= 0 => u32::try_from(*id).ok().and_then(|id| engine.user_by_id(id)),
                #[allow(
                    clippy::cast_possible_truncation,
                    clippy::cast_sign_loss,
                    reason = "checked whole and in range"
                )]
                Some(Value::Number(n)) if n.fract() == 0.0 && (0.0..=f64::from(u32::MAX)).contains(n) => {
                    engine.user_by_id(*n as u32)
                }
                // As 2.6's _vuser:get{id} refuses it.
                Some(Value::Number(_) | Value::Integer(_)) => {
                    return Err(Failure::Box(BoxError::key_part_type(0, "unsigned")))
                }
                _ => engine.user_by_name(&arg::<mlua::LuaString>(lua, args, 1)?.as_bytes()),
            };
            match found {
                None => Value::Nil,
                Some(u) => {
                    let t = lua.create_table()?;
                    t.set("id", u.id)?;
                    t.set("name", u.name)?;
                    t.set("type", if u.is_role { "role" } else { "user" })?;
                    Value::Table(t)
                }
            }
        }
        "select" => {
            let key = key_of(args, 3)?;
            let limit = arg::<Option<f64>>(lua, args, 6)?.unwrap_or(f64::from(u32::MAX));
            #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss, reason = "clamped to u32")]
            let req = Select {
                space_id: u32_arg(1)?,
                index_id: u32_arg(2)?,
                iterator: u64::from(u32_arg(4)?),
                offset: u32_arg(5)?,
                limit: limit.clamp(0.0, f64::from(u32::MAX)) as u32,
                key: &key,
            };
            // A 7th argument: go on after that tuple (a `pairs()` reading on).
            let tuples = match args.get(7) {
                None | Some(Value::Nil) => engine.select(&creds, &req)?,
                Some(_) => engine.select_after(&creds, &req, &bytes_of(args, 7)?)?,
            };
            let format = format_of(engine.space(req.space_id)?, engine.schema_version());
            let out = lua.create_table_with_capacity(tuples.len(), 0)?;
            for (i, t) in tuples.into_iter().enumerate() {
                out.raw_set(i + 1, tuple_value(lua, t, &format)?)?;
            }
            Value::Table(out)
        }
        "count" => {
            // index:count(key, iterator): the tuples a select would give, counted
            // as they are met (none is made a Lua value).
            let key = key_of(args, 3)?;
            let req = Select {
                space_id: u32_arg(1)?,
                index_id: u32_arg(2)?,
                iterator: u64::from(u32_arg(4)?),
                offset: 0,
                limit: u32::MAX,
                key: &key,
            };
            let mut n = 0u32;
            engine.select_each(&creds, &req, |_| n += 1)?;
            Value::Integer(i64::from(n))
        }
        "get" => {
            let (space_id, key) = (u32_arg(1)?, key_of(args, 3)?);
            let space = engine.space(space_id)?;
            if !space.def.engine.stores_rows() {
                // Views answer through select.
                let req = Select { space_id, index_id: u32_arg(2)?, iterator: 0, offset: 0, limit: 1, key: &key };
                let format = format_of(space, engine.schema_version());
                match engine.select(&creds, &req)?.into_iter().next() {
                    Some(t) => tuple_value(lua, t, &format)?,
                    None => Value::Nil,
                }
            } else {
                match engine.get(&creds, space_id, u32_arg(2)?, &key)? {
                    Some(t) => tuple_value(lua, t, &format_of(engine.space(space_id)?, engine.schema_version()))?,
                    None => Value::Nil,
                }
            }
        }
        "insert" | "replace" => {
            let space_id = u32_arg(1)?;
            let tuple = bytes_of(args, 2)?;
            let mode = if op == "insert" { WriteMode::Insert } else { WriteMode::Replace };
            let t = engine.write(&creds, space_id, &tuple, mode)?;
            tuple_value(lua, t, &format_of(engine.space(space_id)?, engine.schema_version()))?
        }
        "sequence" => sequence_row(lua, engine, args.get(1))?,
        "sequence_next" => {
            let id = u32_arg(1)?;
            engine.usable_sequence(&creds, id)?;
            convert::int64(lua, engine.sequence_next(id)?)?
        }
        "sequence_current" => convert::int64(lua, engine.sequence_current(&creds, u32_arg(1)?)?)?,
        "sequence_set" => {
            let value = bytes_of(args, 2)?;
            let value = crate::engine::sequence::read_i64(&mut crate::protocol::msgpack::Reader::new(&value))
                .ok_or_else(|| mlua::Error::runtime("expected int64_t as 2 argument"))?;
            engine.sequence_set(&creds, u32_arg(1)?, value)?;
            Value::Nil
        }
        "sequence_reset" => {
            engine.sequence_reset(&creds, u32_arg(1)?)?;
            Value::Nil
        }
        "update" => {
            let (key, ops) = (key_of(args, 3)?, bytes_of(args, 4)?);
            let req = Update { space_id: u32_arg(1)?, index_id: u32_arg(2)?, key: &key, ops: &ops, index_base: 1 };
            match engine.update(&creds, &req)? {
                Some(t) => tuple_value(lua, t, &format_of(engine.space(req.space_id)?, engine.schema_version()))?,
                None => Value::Nil,
            }
        }
        "upsert" => {
            let (tuple, ops) = (bytes_of(args, 2)?, bytes_of(args, 3)?);
            engine.upsert(&creds, &Upsert { space_id: u32_arg(1)?, tuple: &tuple, ops: &ops, index_base: 1 })?;
            Value::Nil
        }
        "delete" => {
            let key = key_of(args, 3)?;
            let req = Delete { space_id: u32_arg(1)?, index_id: u32_arg(2)?, key: &key };
            match engine.delete(&creds, &req)? {
                Some(t) => tuple_value(lua, t, &format_of(engine.space(req.space_id)?, engine.schema_version()))?,
                None => Value::Nil,
            }
        }
        // len(space[, index]): an index's entries (a multikey one may hold several per tuple).
        "len" => {
            let n = match arg::<Option<u32>>(lua, args, 2)? {
                Some(index_id) => engine.index_len(&creds, u32_arg(1)?, index_id)?,
                None => engine.space_len(&creds, u32_arg(1)?)?,
            };
            Value::Integer(i64::try_from(n).unwrap_or(i64::MAX))
        }
        "check_space_write" => {
            engine.check_space_write(&creds, u32_arg(1)?)?;
            Value::Nil
        }
        "memory" => {
            // box.info.memory() / box.slab.info(): tuples (count and bytes) and
            // index structures, over every space.
            let (mut tuples, mut data, mut index) = (0usize, 0usize, 0usize);
            for space in engine.spaces() {
                tuples += space.len();
                data += space.bsize();
                index += space.indexes.values().map(crate::engine::index::Index::bsize).sum::<usize>();
            }
            let t = lua.create_table()?;
            #[allow(clippy::cast_precision_loss, reason = "byte counts stay far below 2^53")]
            {
                t.set("tuples", tuples as f64)?;
                t.set("data", data as f64)?;
                t.set("index", index as f64)?;
                t.set("quota_used", engine.memory_used() as f64)?;
            }
            Value::Table(t)
        }
        "lsn" | "checkpoint_lsn" => {
            let group =
                if op == "lsn" { &crate::storage::LAST_LOGGED_GROUP } else { &crate::storage::LAST_CHECKPOINTED_GROUP };
            #[allow(clippy::cast_precision_loss, reason = "group numbers stay far below 2^53")]
            let lsn = group.load(std::sync::atomic::Ordering::Relaxed) as f64;
            Value::Number(lsn)
        }
        "space_bsize" => Value::Integer(i64::try_from(engine.space(u32_arg(1)?)?.bsize()).unwrap_or(i64::MAX)),
        "index_bsize" => {
            let index = engine.space(u32_arg(1)?)?.index(u32_arg(2)?)?;
            Value::Integer(i64::try_from(index.bsize()).unwrap_or(i64::MAX))
        }
        "max_space_id" => Value::Integer(i64::from(engine.spaces().map(|s| s.def.id).max().unwrap_or(0))),
        "session_id" => Value::Number(cx.session_id as f64),
        "session_exists" | "session_peer" | "session_fd" => {
            let id = match args.get(1) {
                Some(Value::Integer(i)) => u64::try_from(*i).unwrap_or(u64::MAX),
                #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss, reason = "an id given as a number")]
                Some(Value::Number(n)) if *n >= 0.0 => *n as u64,
                Some(Value::Nil) | None => cx.session_id,
                _ => u64::MAX,
            };
            let known = lua.app_data_ref::<Sessions>().and_then(|s| s.0.get(&id).cloned());
            // The script's and a console's own session are known without an address.
            let known = known.or_else(|| (id == cx.session_id).then_some((None, -1)));
            match (op, known) {
                ("session_exists", k) => Value::Boolean(k.is_some()),
                // No such session: the module raises 2.6's error.
                (_, None) => Value::Boolean(false),
                ("session_peer", Some((peer, _))) => match peer {
                    Some(p) => Value::String(lua.create_string(p)?),
                    None => Value::Nil,
                },
                (_, Some((_, fd))) => Value::Integer(i64::from(fd)),
            }
        }
        "instance_uuid" => Value::String(lua.create_string(cx.instance_uuid.as_bytes())?),
        // `_schema`'s cluster row, read as the server: box.info needs no read access (2.6's is C).
        "cluster_row" => {
            let admin = engine.credentials(crate::engine::access::user_id::ADMIN);
            let mut key = Vec::new();
            crate::protocol::msgpack::write::array_len(&mut key, 1);
            crate::protocol::msgpack::write::str(&mut key, b"cluster");
            match engine.get(&admin, 272, 0, &key)? {
                Some(t) => tuple_value(lua, t, &Rc::new(TupleFormat::default()))?,
                None => Value::Nil,
            }
        }
        "chap_sha1" => {
            let pw: mlua::LuaString = arg(lua, args, 1)?;
            Value::String(lua.create_string(crate::protocol::auth::stored_password(&pw.as_bytes()))?)
        }
        "tuple_new" => {
            let bytes = bytes_of(args, 1)?;
            if !matches!(bytes.first(), Some(0x90..=0x9f | 0xdc | 0xdd)) {
                return Err(
                    BoxError::new(crate::error::code::TUPLE_NOT_ARRAY, "Tuple/Key must be MsgPack array").into()
                );
            }
            tuple_value(lua, bytes.into(), &Rc::new(TupleFormat::default()))?
        }
        // A tuple checked against a space's format and indexes, with its field names
        // (`space:frommap()`, as 2.6 makes it with the space's format).
        "space_tuple" => {
            let space = engine.space(u32_arg(1)?)?;
            let bytes = bytes_of(args, 2)?;
            space.validate(&bytes)?;
            tuple_value(lua, bytes.into(), &format_of(space, engine.schema_version()))?
        }
        "is_tuple" => Value::Boolean(super::is_tuple(args.get(1).unwrap_or(&Value::Nil))),
        "idem_lookup" => idem_lookup(lua, cx, args)?,
        "idem_store" => {
            let token = token_arg(cx, args)?;
            let reply = bytes_of(args, 2)?;
            let record = NewRecord {
                user_id: cx.creds.user_id,
                token: &token.encoded,
                fingerprint: fingerprint::lua_api(),
                created_ms: cx.window.clock.now_ms(),
                reply: &reply,
            };
            cx.window.store(&mut cx.engine, &record, cx.ticket)?;
            Value::Nil
        }
        "idem_stat" => idem_stat(lua, cx)?,
        "idem_cfg" => {
            let key: String = arg(lua, args, 1)?;
            idem_cfg(lua, cx, &key, args.get(2).cloned().unwrap_or(Value::Nil))?;
            Value::Nil
        }
        "cfg_initial" => {
            let t = lua.create_table()?;
            for (k, v) in cx.cfg.iter() {
                t.set(k.as_str(), v.as_str())?;
            }
            Value::Table(t)
        }
        "console_listen" => {
            let uri: String = arg(lua, args, 1)?;
            let addr = crate::config::normalize_listen(&uri);
            // A socket a console served from Lua listens on (`listener:detach()`), now ours.
            let adopt = match args.get(2) {
                Some(Value::Integer(fd)) => {
                    let fd = i32::try_from(*fd).ok().and_then(super::socket::take_detached);
                    Some(fd.ok_or_else(|| mlua::Error::runtime("not a detached listening socket"))?)
                }
                _ => None,
            };
            let Some(control) = cx.control.as_ref() else {
                return Err(
                    BoxError::new(crate::error::code::UNSUPPORTED, "console does not support listen here").into()
                );
            };
            open_listener(lua, control, |reply| crate::executor::Control::ConsoleListen { addr, adopt, reply })?
        }
        "console_close" => {
            let bound: String = arg(lua, args, 1)?;
            let Some(control) = cx.control.as_ref() else { return Ok(Value::Boolean(false)) };
            let (reply, closed) = std::sync::mpsc::channel();
            let gone = || mlua::Error::runtime("the network side is gone");
            control.send(crate::executor::Control::ConsoleClose { bound, reply }).map_err(|_| gone())?;
            Value::Boolean(closed.recv().map_err(|_| gone())?)
        }
        "console_quit" => {
            let mut quits = lua.remove_app_data::<ConsoleQuits>().unwrap_or_default();
            quits.0.push(cx.session_id);
            lua.set_app_data(quits);
            Value::Boolean(true)
        }
        "exit" => {
            let status: i32 = arg(lua, args, 1)?;
            lua.set_app_data(ExitRequest(status));
            Value::Boolean(true)
        }
        "backup_start" => {
            let checkpoint = arg::<Option<u64>>(lua, args, 1)?.unwrap_or(0);
            let uuid = uuid::Uuid::parse_str(&cx.instance_uuid).unwrap_or_default();
            let files = crate::storage::backup::start(&cx.engine, &uuid, cx.window.clock.now_ms(), checkpoint)?;
            Value::Table(lua.create_sequence_from(files)?)
        }
        "backup_stop" => {
            crate::storage::backup::stop();
            Value::Nil
        }
        "snapshot" => {
            match lua.app_data_ref::<crate::storage::image::Images>() {
                // `wal_mode = 'none'`: the state is saved now (box.lua has aborted
                // the caller's transaction, whose changes the engine held).
                Some(images) => images
                    .write(&cx.engine, cx.window.clock.now_ms())
                    .map_err(|e| BoxError::new(crate::error::code::SYSTEM, format!("snapshot: {e}")))?,
                None => {
                    if let Some(s) = signals(lua) {
                        s.snapshot.set(true);
                    }
                }
            }
            Value::Boolean(true)
        }
        "session_push" => {
            let mut item = Vec::new();
            convert::encode(&mut item, args.get(1).unwrap_or(&Value::Nil))?;
            let mut pushes = lua.remove_app_data::<Pushes>().unwrap_or_default();
            pushes.0.push(item);
            lua.set_app_data(pushes);
            if let Some(s) = signals(lua) {
                s.pushed.set(true);
            }
            Value::Boolean(true)
        }
        "memtx_memory" => {
            let size: f64 = arg(lua, args, 1)?;
            #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss, reason = "box.cfg checked the range")]
            crate::engine::memory::QUOTA.store(size.max(0.0) as usize, std::sync::atomic::Ordering::Relaxed);
            Value::Nil
        }
        "max_tuple_size" => {
            let size: f64 = arg(lua, args, 1)?;
            if !(1.0..=1e15).contains(&size) {
                return Err(BoxError::new(
                    crate::error::code::CFG,
                    "Incorrect value for option 'memtx_max_tuple_size'",
                )
                .into());
            }
            #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss, reason = "range checked above")]
            crate::engine::space::MAX_TUPLE_SIZE.store(size as usize, std::sync::atomic::Ordering::Relaxed);
            Value::Nil
        }
        "listen" => {
            // box.cfg{listen = ...} after boot: bind the new address, close the old one.
            let addr = match args.get(1) {
                Some(Value::Nil) | None => None,
                Some(Value::Integer(port)) => Some(crate::config::normalize_listen(&port.to_string())),
                Some(v) => Some(crate::config::normalize_listen(&lua.unpack::<String>(v.clone())?)),
            };
            let Some(control) = cx.control.as_ref() else {
                return Err(BoxError::new(crate::error::code::CFG, "listen cannot change in this mode").into());
            };
            let instance_uuid = uuid::Uuid::parse_str(&cx.instance_uuid).unwrap_or_default();
            open_listener(lua, control, |reply| crate::executor::Control::Listen { addr, instance_uuid, reply })?
        }
        "time" => {
            let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default();
            Value::Number(now.as_secs_f64())
        }
        "time64" => {
            let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default();
            Value::Integer(i64::try_from(now.as_micros()).unwrap_or(i64::MAX))
        }
        "uuid" => Value::String(lua.create_string(uuid::Uuid::new_v4().hyphenated().to_string())?),
        "set_read_only" => {
            engine.set_read_only(arg::<bool>(lua, args, 1)?);
            Value::Nil
        }
        "is_read_only" => Value::Boolean(engine.is_read_only()),
        "is_orphan" => Value::Boolean(crate::upstreams::is_orphan()),
        // A background session's id, for a fiber fiber.create or fiber.new makes.
        #[allow(clippy::cast_precision_loss, reason = "session ids stay far below 2^53")]
        "new_session_id" => Value::Number(crate::server::next_session_id() as f64),
        "set_orphan" => {
            crate::upstreams::set_orphan(arg::<bool>(lua, args, 1)?);
            Value::Nil
        }
        // check_call(name): the right to call function `name`, as a CALL checks it.
        "check_call" => {
            let name: mlua::LuaString = arg(lua, args, 1)?;
            engine.check_call_access(&creds, &name.as_bytes())?;
            Value::Nil
        }
        "checkpoint_wal_threshold" => {
            let bytes = arg::<f64>(lua, args, 1)?;
            #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss, reason = "a byte count, clamped")]
            crate::storage::wal::set_checkpoint_threshold(bytes.clamp(1.0, usize::MAX as f64) as usize);
            Value::Nil
        }
        "iproto_triggers" => {
            let count: usize = arg(lua, args, 1)?;
            if let Some(s) = signals(lua) {
                s.iproto_triggers.set(count);
            }
            Value::Nil
        }
        "txn_mark" => Value::Integer(i64::try_from(engine.pending_changes()).unwrap_or(0)),
        // A long run of committed statements let go (box.lua's after_write): without
        // a WAL nothing keeps them, so they go now, as they would at the fiber's
        // next yield. With one they must reach it: false, and Lua yields.
        "commit_pending" => {
            if cx.ticket.is_some() {
                return Ok(Value::Boolean(false));
            }
            let changes = engine.take_changes();
            cx.window.note_committed(engine, &changes);
            engine.recycle_changes(changes);
            Value::Boolean(true)
        }
        // For box.lua's pairs(): where the count of index changes is, read as a uint32_t.
        #[allow(clippy::cast_precision_loss, reason = "user-space addresses are below 2^48")]
        "entry_changes_address" => Value::Number(crate::engine::index::entry_changes_address() as f64),
        "changes_since" => {
            // {{old, new, space_id}, ...}: the rows changed after the mark, oldest
            // first; only those of `space_id` when one is given.
            let mark = arg::<usize>(lua, args, 1)?;
            let only = match args.get(2) {
                None | Some(Value::Nil) => None,
                Some(_) => Some(u32_arg(2)?),
            };
            let rows: Vec<(u32, Option<Tuple>, Option<Tuple>)> = engine
                .changes_since(mark)
                .iter()
                .filter_map(|c| match c {
                    crate::engine::Change::Row { space_id, old, new, .. }
                        if only.is_none_or(|only| only == *space_id) =>
                    {
                        Some((*space_id, old.clone(), new.clone()))
                    }
                    _ => None,
                })
                .collect();
            let out = lua.create_table_with_capacity(rows.len(), 0)?;
            let mut formats: Vec<(u32, Rc<TupleFormat>)> = Vec::new();
            for (i, (space_id, old, new)) in rows.into_iter().enumerate() {
                let format = match formats.iter().find(|(id, _)| *id == space_id) {
                    Some((_, format)) => Rc::clone(format),
                    None => {
                        // A space dropped later in the transaction has no format left.
                        let format = engine.space(space_id).map_or_else(
                            |_| Rc::new(TupleFormat::default()),
                            |s| format_of(s, engine.schema_version()),
                        );
                        formats.push((space_id, Rc::clone(&format)));
                        format
                    }
                };
                let row = lua.create_table()?;
                if let Some(t) = old {
                    row.raw_set(1, tuple_value(lua, t, &format)?)?;
                }
                if let Some(t) = new {
                    row.raw_set(2, tuple_value(lua, t, &format)?)?;
                }
                row.raw_set(3, space_id)?;
                out.raw_set(i + 1, row)?;
            }
            Value::Table(out)
        }
        "set_session_triggers" => {
            let (kind, on): (String, bool) = (arg(lua, args, 1)?, arg(lua, args, 2)?);
            let mut set = lua.remove_app_data::<SessionTriggers>().unwrap_or_default();
            toggle(&mut set.0, kind, on);
            lua.set_app_data(set);
            Value::Nil
        }
        "set_replace_triggers" => {
            let (space_id, on) = (u32_arg(1)?, arg::<bool>(lua, args, 2)?);
            let mut set = lua.remove_app_data::<ReplaceTriggers>().unwrap_or_default();
            toggle(&mut set.0, space_id, on);
            lua.set_app_data(set);
            Value::Nil
        }
        "set_before_replace_triggers" => {
            let (space_id, on) = (u32_arg(1)?, arg::<bool>(lua, args, 2)?);
            let mut set = lua.remove_app_data::<BeforeReplaceTriggers>().unwrap_or_default();
            toggle(&mut set.0, space_id, on);
            lua.set_app_data(set);
            Value::Nil
        }
        "txn_rollback" => {
            engine.rollback_to(arg::<usize>(lua, args, 1)?);
            Value::Nil
        }
        _ => return Err(Failure::Lua(mlua::Error::runtime(format!("unknown box.internal operation '{op}'")))),
    })
}

fn space_info(lua: &Lua, engine: &Engine, which: Option<&Value>) -> mlua::Result<Value> {
    let space = match which {
        Some(Value::Integer(id)) => u32::try_from(*id).ok().and_then(|id| engine.space(id).ok()),
        #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss, reason = "ids are u32")]
        Some(Value::Number(id)) => engine.space(*id as u32).ok(),
        Some(Value::String(name)) => {
            let name = name.as_bytes();
            engine.spaces().find(|s| s.def.name.as_bytes() == &name[..])
        }
        _ => None,
    };
    let Some(space) = space else { return Ok(Value::Nil) };
    let t = lua.create_table()?;
    t.set("id", space.def.id)?;
    t.set("name", space.def.name.as_str())?;
    t.set("owner", space.def.owner)?;
    t.set("field_count", space.def.field_count)?;
    t.set("temporary", space.def.temporary)?;
    t.set("is_local", space.def.is_local)?;
    // memtx when not given.
    match space.def.engine {
        crate::engine::space::EngineKind::Memtx => {}
        crate::engine::space::EngineKind::Vinyl => t.set("engine", "vinyl")?,
        crate::engine::space::EngineKind::Sysview => t.set("engine", "sysview")?,
        crate::engine::space::EngineKind::Blackhole => t.set("engine", "blackhole")?,
    }
    if let Some(link) = space.sequence {
        t.set("sequence_id", link.sequence_id)?;
        t.set("sequence_field", link.field)?;
    }
    let format = lua.create_table()?;
    for (i, f) in space.def.format.iter().enumerate() {
        let ft = lua.create_table()?;
        ft.set("name", f.name.as_str())?;
        ft.set("type", f.ty.name())?;
        if f.nullable {
            ft.set("is_nullable", true)?;
        }
        format.raw_set(i + 1, ft)?;
    }
    t.set("format", format)?;
    let indexes = lua.create_table()?;
    for ix in space.indexes.values() {
        let it = lua.create_table()?;
        it.set("id", ix.def.id)?;
        it.set("name", ix.def.name.as_str())?;
        it.set("type", ix.def.kind.name())?;
        // (2.6 leaves it out for a BITSET or RTREE index.)
        match ix.def.kind {
            crate::engine::index::IndexKind::Bitset => {}
            // (2.6 shows the dimension, not the distance.)
            crate::engine::index::IndexKind::Rtree { dimension, .. } => it.set("dimension", dimension)?,
            _ => it.set("unique", ix.def.unique)?,
        }
        if let Some(func) = &ix.def.func {
            // As 2.6: the function's id, and its name while it exists.
            let ft = lua.create_table()?;
            ft.set("fid", func.id)?;
            if let Some(resolved) = &func.resolved {
                ft.set("name", resolved.name.as_str())?;
            }
            it.set("func", ft)?;
        }
        let parts = lua.create_table()?;
        for (i, p) in ix.def.parts.iter().enumerate() {
            // Set in 2.6's order (luaT_push_key_def), so that the table iterates as there.
            let pt = lua.create_table()?;
            pt.set("type", p.ty.name())?;
            pt.set("fieldno", p.field_no + 1)?;
            if let Some(path) = &p.path {
                pt.set("path", path.text())?;
            }
            pt.set("is_nullable", p.nullable)?;
            // As 2.6 shows a part's collation: by name (binary, the default, unshown).
            match p.collation {
                Collation::Binary => {}
                Collation::Unicode => pt.set("collation", "unicode")?,
                Collation::UnicodeCi => pt.set("collation", "unicode_ci")?,
                Collation::Icu(slot) => pt.set("collation", crate::engine::collations::name_of_slot(slot))?,
            }
            parts.raw_set(i + 1, pt)?;
        }
        it.set("parts", parts)?;
        indexes.raw_set(ix.def.id, it)?;
    }
    t.set("index", indexes)?;
    Ok(Value::Table(t))
}

fn token_arg(cx: &mut Context, args: &[Value]) -> Result<Token, Failure> {
    let raw = bytes_of(args, 1)?;
    Token::parse(&raw, cx.window.settings.max_token_size).map_err(|e| {
        cx.window.stats.rejections += 1;
        Failure::Box(BoxError::new(idem::code::TOKEN_INVALID, format!("Invalid idempotency token: {}", e.0)))
    })
}

/// `box.atomic{idempotent_token}` / `box.begin{idempotent_token}`: the stored results, if remembered.
fn idem_lookup(lua: &Lua, cx: &mut Context, args: &[Value]) -> Result<Value, Failure> {
    if cx.window.settings.mode != Mode::Persistent {
        cx.window.stats.rejections += 1;
        return Err(BoxError::new(
            idem::code::DISABLED,
            "Idempotent requests are disabled (idempotency_mode is not 'persistent')",
        )
        .into());
    }
    let token = token_arg(cx, args)?;
    let user = cx.creds.user_id;
    let Some(stored) = cx.window.remembered(&cx.engine, user, &token.encoded) else { return Ok(Value::Nil) };
    let record = Record::from_tuple(&stored).ok_or_else(|| BoxError::invalid_msgpack("_idempotency record"))?;
    if record.fingerprint != fingerprint::lua_api() {
        cx.window.stats.mismatches += 1;
        return Err(BoxError::new(
            idem::code::TOKEN_MISMATCH,
            "Idempotency token was already used for a different request",
        )
        .into());
    }
    if let Some(ticket) = cx.window.in_flight(&stored) {
        // The first attempt is not durable yet: this reply waits for it.
        cx.window.stats.joins += 1;
        cx.wait_for = Some(cx.wait_for.map_or(ticket, |t| t.max(ticket)));
    } else {
        cx.window.stats.replays += 1;
    }
    let mut r = crate::protocol::msgpack::Reader::new(&record.reply);
    Ok(convert::decode(lua, &mut r, 0)?)
}

fn idem_stat(lua: &Lua, cx: &mut Context) -> Result<Value, Failure> {
    let (count, bytes) = cx.window.usage(&cx.engine);
    let st = &cx.window.stats;
    let t = lua.create_table()?;
    t.set("remembered", count)?;
    t.set("bytes", bytes)?;
    t.set("oldest_age", cx.window.oldest_age_s(&cx.engine))?;
    t.set("executed", st.executed)?;
    t.set("replays", st.replays)?;
    t.set("joins", st.joins)?;
    t.set("mismatches", st.mismatches)?;
    t.set("rejections", st.rejections)?;
    let ev = lua.create_table()?;
    ev.set("lifetime", st.evicted_lifetime)?;
    ev.set("count", st.evicted_count)?;
    ev.set("size", st.evicted_size)?;
    t.set("evicted", ev)?;
    Ok(Value::Table(t))
}

fn idem_cfg(lua: &Lua, cx: &mut Context, key: &str, v: Value) -> Result<(), Failure> {
    let bad = |what: &str| {
        Failure::Box(BoxError::new(crate::error::code::CFG, format!("Incorrect value for option '{key}': {what}")))
    };
    let number = || -> Result<f64, Failure> {
        f64::from_lua(v.clone(), lua).ok().filter(|n| *n >= 0.0).ok_or_else(|| bad("should be a non-negative number"))
    };
    let s = &mut cx.window.settings;
    #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss, reason = "checked non-negative")]
    match key {
        "idempotency_mode" => {
            let name =
                String::from_lua(v.clone(), lua).map_err(|_| bad("should be one of 'persistent', 'manual', 'off'"))?;
            s.mode = Mode::parse(&name).ok_or_else(|| bad("should be one of 'persistent', 'manual', 'off'"))?;
        }
        "idempotency_lifetime" => s.lifetime_s = number()?,
        "idempotency_max_count" => s.max_count = number()? as u64,
        "idempotency_max_size" => s.max_size = number()? as u64,
        "idempotency_max_token_size" => s.max_token_size = (number()? as usize).max(1),
        _ => return Err(bad("unexpected option")),
    }
    Ok(())
}

/// One `box.stat()` / `box.stat.net()` entry: `{total, rps}`, and `current` when given.
fn counter_table(lua: &Lua, total: u64, rps: u64, current: Option<u64>) -> mlua::Result<Table> {
    // Set in 2.6's order (fill_stat_item), so that it iterates as there.
    let entry = lua.create_table()?;
    #[allow(clippy::cast_precision_loss, reason = "counters stay far below 2^53")]
    {
        entry.set("rps", rps as f64)?;
        entry.set("total", total as f64)?;
        if let Some(current) = current {
            entry.set("current", current as f64)?;
        }
    }
    Ok(entry)
}
