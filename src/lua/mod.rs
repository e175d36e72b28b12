//! The embedded LuaJIT runtime (mlua): `box` for CALL and EVAL.
//!
//! The VM lives on the TX thread. The `box` API is Lua (`lua/box.lua`, built into
//! the binary) over one Rust entry point, `box.internal.op`, which exists only
//! while a request runs: it borrows the engine for that request's duration
//! (an mlua scope), so no engine state is shared behind locks.
//!
//! - [`convert`]: msgpack ↔ Lua values, under a [`serializer`]'s options.
//! - [`tuple`]: the `box.tuple` userdata.
//! - [`dispatch`]: the engine operations Lua may call.
//! - [`native`]: pure functions (hashes, clocks, log output) for the Lua modules.

pub mod convert;
pub mod crypto;
#[allow(unsafe_code, reason = "LuaJIT's ffi calls C-ABI functions on decimal_t cdata; see the module")]
pub mod decimal;
pub mod dispatch;
pub mod fio;
pub mod inbox;
pub mod json;
pub mod json_decode;
pub mod key_def;
pub mod key_functions;
pub mod native;
pub mod netbox;
pub mod plain_decode;
pub mod plain_encode;
pub mod plain_json;
pub mod popen;
pub mod raw_call;
pub mod raw_socket;
pub mod serializer;
pub mod socket;
pub mod stream;
pub mod table_shape;
pub mod tuple;
pub mod utf8;
#[allow(unsafe_code, reason = "moves an uuid's 16 bytes in and out of struct tt_uuid cdata; see the module")]
pub mod uuid;
pub mod xlog;

/// The TX event loop's iteration count, which Lua reads through ffi
/// (`box.internal.loop_tick`): fiber.time() and fiber.clock() keep their value
/// within one iteration and one fiber run, as 2.6's event-loop time does.
static LOOP_TICK: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);

/// Starts a new iteration of the TX event loop (for fiber.time()).
pub fn next_loop_tick() {
    LOOP_TICK.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
}

use std::rc::Rc;

use mlua::{FromLua, Function, Lua, MultiValue, ObjectLike, Table, Value};

use crate::engine::access::Credentials;
use crate::engine::Engine;
use crate::error::{code, BoxError, BoxResult, ErrorKind};
use crate::idempotency::Window;
use crate::protocol::key;
use crate::protocol::msgpack::{write, Reader};
use crate::protocol::request::Statement;
use dispatch::{dispatch, Context};
use tuple::LuaTuple;

/// The version scripts see (`_TARANTOOL`, `require('tarantool').version`): the
/// Tarantool release oncebox is compatible with.
const VERSION: &str = "2.6.0-0-oncebox";
const PRELUDE: &str = include_str!("../../lua/box.lua");
/// What a `tarantool` command line runs, as one function: `-l`/`-e` steps, the
/// script, the console.
const COMMAND_LINE: &str = r#"
local before, script, interactive = ...
return function(...)
    -- As 2.6: the console's greeting comes first, on stderr.
    if interactive then
        io.stderr:write('Tarantool ', _TARANTOOL, "\ntype 'help' for interactive help\n")
    end
    for _, step in ipairs(before) do
        if step[1] == 'l' then
            rawset(_G, step[2], require(step[2]))
        else
            local chunk, err = loadstring(step[2], '=(command line)')
            if chunk == nil then error(err, 0) end
            chunk()
        end
    end
    if script ~= nil then script(...) end
    if interactive then require('console').start() end
end
"#;

/// A script's text and names, as the `tarantool` executable reads it.
#[derive(Debug)]
pub struct ScriptText {
    /// `arg[0]`.
    pub arg0: String,
    /// The name error messages give the chunk (`@path`, `=stdin`).
    pub chunk_name: String,
    /// The main fiber's name.
    pub fiber_name: String,
    text: Vec<u8>,
}

impl ScriptText {
    /// A script file's text.
    #[must_use]
    pub fn file(path: &std::path::Path, text: Vec<u8>) -> Self {
        let fiber_name = path.file_name().map_or_else(|| "main".to_owned(), |n| n.to_string_lossy().into_owned());
        Self { arg0: path.display().to_string(), chunk_name: format!("@{}", path.display()), fiber_name, text }
    }

    /// A script read from standard input (`named` `-` on the command line).
    #[must_use]
    pub fn stdin(text: Vec<u8>, named: bool) -> Self {
        let arg0 = if named { "-" } else { "tarantool" };
        Self { arg0: arg0.into(), chunk_name: "=stdin".into(), fiber_name: "main".into(), text }
    }

    /// The text to load: a shebang line is commented out, as the tarantool
    /// executable skips it (line numbers stay).
    fn source(&self) -> Vec<u8> {
        if self.text.starts_with(b"#!") {
            let mut s = b"--".to_vec();
            s.extend_from_slice(&self.text);
            s
        } else {
            self.text.clone()
        }
    }
}
/// 2.6's error codes and descriptions, which the prelude reads as `box.internal.errcodes`.
const ERRCODES: &str = include_str!("../../lua/errcodes.lua");
const CONSOLE: &str = include_str!("../../lua/console.lua");
const CONSOLE_LUA_OUTPUT: &str = include_str!("../../lua/console_lua_output.lua");
const NET_BOX: &str = include_str!("../../lua/net_box.lua");
/// Tarantool's Lua modules, each registered in `package.loaded` by its own file (in load order).
const MODULES: [(&str, &str); 36] = [
    ("=string.lua", include_str!("../../lua/string.lua")),
    ("=table.lua", include_str!("../../lua/table.lua")),
    ("=fiber.lua", include_str!("../../lua/fiber.lua")),
    ("=digest.lua", include_str!("../../lua/digest.lua")),
    ("=builtin/crypto.lua", include_str!("../../lua/crypto.lua")),
    ("=clock.lua", include_str!("../../lua/clock.lua")),
    ("=builtin/log.lua", include_str!("../../lua/log.lua")),
    ("=fun.lua", include_str!("../../lua/fun.lua")),
    ("=builtin/internal.trigger.lua", include_str!("../../lua/trigger.lua")),
    ("=yaml_events.lua", include_str!("../../lua/yaml_events.lua")),
    ("=yaml.lua", include_str!("../../lua/yaml.lua")),
    ("@builtin/tap.lua", include_str!("../../lua/tap.lua")),
    ("=tuple.lua", include_str!("../../lua/tuple.lua")),
    ("=strict.lua", include_str!("../../lua/strict.lua")),
    ("=errno.lua", include_str!("../../lua/errno.lua")),
    ("=fio.lua", include_str!("../../lua/fio.lua")),
    ("=package.lua", include_str!("../../lua/package.lua")),
    ("=builtin/socket.lua", include_str!("../../lua/socket.lua")),
    ("=builtin/socket.lua", include_str!("../../lua/raw_socket.lua")),
    ("=popen.lua", include_str!("../../lua/popen.lua")),
    ("=builtin/pwd.lua", include_str!("../../lua/pwd.lua")),
    ("=builtin/iconv.lua", include_str!("../../lua/iconv.lua")),
    ("=builtin/msgpackffi.lua", include_str!("../../lua/msgpackffi.lua")),
    ("=buffer.lua", include_str!("../../lua/buffer.lua")),
    ("=uri.lua", include_str!("../../lua/uri.lua")),
    ("=builtin/http.client.lua", include_str!("../../lua/http_client.lua")),
    ("=csv.lua", include_str!("../../lua/csv.lua")),
    ("=utf8.lua", include_str!("../../lua/utf8.lua")),
    ("=pickle.lua", include_str!("../../lua/pickle.lua")),
    ("=key_def.lua", include_str!("../../lua/key_def.lua")),
    ("=builtin/box/merger.lua", include_str!("../../lua/merger.lua")),
    ("=builtin/sql.lua", include_str!("../../lua/sql.lua")),
    ("=builtin/help.lua", include_str!("../../lua/help.lua")),
    ("=builtin/internal.argparse.lua", include_str!("../../lua/argparse.lua")),
    ("=builtin/box/xlog.lua", include_str!("../../lua/xlog.lua")),
    ("=builtin/title.lua", include_str!("../../lua/title.lua")),
];

include!(concat!(env!("OUT_DIR"), "/jit_modules.rs"));

/// Loads LuaJIT's `jit.*` modules ([`JIT_MODULES`]) into `package.loaded`, each
/// called with its name as Tarantool 2.6's start does it (`@builtin/jit.p.lua`).
fn load_jit_modules(lua: &Lua) -> mlua::Result<()> {
    let loaded: Table = lua.globals().get::<Table>("package")?.get("loaded")?;
    for (name, source) in JIT_MODULES {
        let module: Value = lua.load(source).set_name(format!("@builtin/{name}.lua")).call(name)?;
        if !module.is_nil() {
            loaded.set(name, module)?;
        }
    }
    Ok(())
}

/// How CALL results are shaped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Shape {
    /// CALL (and EVAL): one array element per returned value.
    Call,
    /// CALL_16: a list of tuples (Tarantool 1.6's shape).
    Call16,
    /// EXECUTE: the statement's result table as an SQL reply body (metadata and
    /// rows, or the row count and autoincremented ids).
    Sql,
    /// A console line: the first result, a string, as its bytes (the YAML reply).
    Text,
}

/// Who a Lua call runs for.
#[derive(Debug, Clone)]
pub struct Caller {
    /// The effective user's rights.
    pub creds: Rc<Credentials>,
    /// The session's own user while a setuid function runs as its owner
    /// (`box.session.uid()` names it, `box.session.euid()` the owner).
    pub session_user: Option<u32>,
    /// The session's id.
    pub session_id: u64,
    /// The sync of the request being served (`box.session.sync()`; 0 outside one).
    pub sync: u64,
    /// The instance uuid.
    pub instance_uuid: Rc<str>,
    /// Startup configuration (`box.cfg` values), as strings.
    pub cfg: Rc<Vec<(String, String)>>,
    /// Where console listen requests go.
    pub control: Option<Rc<tokio::sync::mpsc::UnboundedSender<crate::executor::Control>>>,
}

/// What a Lua call may touch: the engine and the idempotency window.
pub struct Host<'a> {
    /// The engine.
    pub engine: &'a mut Box<Engine>,
    /// The idempotency window.
    pub window: &'a mut Box<Window>,
    /// The commit group this request's changes join (`None` without a WAL).
    pub ticket: Option<u64>,
}

/// How far a CALL or EVAL got: its reply body, or the fiber it waits in.
#[derive(Debug)]
pub enum Step {
    /// The call ended with this reply body (or error).
    Done(BoxResult<Vec<u8>>),
    /// The call's fiber yielded (it sleeps or waits); it ends in a later resume.
    Parked(u64),
}

/// A call's progress, and the commit group its reply must wait for (a joined token).
pub type Outcome = (Step, Option<u64>);

/// What a fiber the scheduler resumes is for, and so how its end is reported.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FiberKind {
    /// A CALL or EVAL: its results become a reply body of this shape.
    Request(Shape),
    /// The script's main chunk.
    Script,
    /// A fiber made by `fiber.create`/`fiber.new`: nothing waits for its end.
    Plain,
}

/// What resuming a fiber did.
#[derive(Debug)]
pub enum Resumed {
    /// It yielded again.
    Waiting,
    /// It ended: the reply body for a request, nothing for other fibers.
    Ended(BoxResult<Vec<u8>>),
}

/// A fiber due to run: its id, session and effective user (`None`: none recorded, as for a script's).
#[derive(Debug, Clone, Copy)]
pub struct DueFiber {
    /// The fiber id.
    pub fid: u64,
    /// The session it runs for.
    pub session_id: u64,
    /// Its effective user.
    pub user_id: Option<u32>,
}

/// The Lua VM with `box` loaded.
pub struct LuaRuntime {
    lua: Lua,
    /// Handles on what every request's Lua entry uses, looked up at the first one.
    hot: std::cell::OnceCell<Hot>,
    /// Flags Lua sets for the executor (also in the app data, where Lua sets them).
    signals: std::rc::Rc<dispatch::Signals>,
}

impl Drop for LuaRuntime {
    /// The state is about to close, running the finalizers of what is still alive:
    /// those that call into Rust (fio's and popen's handles) must not, as the
    /// functions they would call are being freed with it. (2.6 never closes its
    /// state: its finalizers do not run at exit either.)
    fn drop(&mut self) {
        if let Err(e) = self.lua.load("box.internal.closing = true").exec() {
            tracing::warn!(error = %e, "cannot mark the Lua state as closing");
        }
    }
}

/// `box.internal` and the functions of it every CALL/EVAL goes through: found once,
/// not by three string-keyed lookups per request.
struct Hot {
    internal: Table,
    /// The key `op`, made once (pushing a Rust `&str` interns it again at every call).
    op_key: mlua::LuaString,
    /// `box.internal.op` while the engine is lent: made once, it works on `bound`.
    op: Function,
    /// What `op` works on; the engine and window are swapped in for each entry.
    bound: Rc<std::cell::RefCell<Context>>,
    fiber_request: Function,
    end_call: Function,
}

/// The executor's engine and window, swapped into the bound [`Context`] for one Lua
/// entry and swapped back when this is dropped (on every path out, errors included).
struct Lend<'a> {
    bound: &'a std::cell::RefCell<Context>,
    engine: &'a mut Box<Engine>,
    window: &'a mut Box<Window>,
}

impl<'a> Lend<'a> {
    /// Swaps `host`'s engine and window into `bound` and sets the caller's fields.
    fn new(bound: &'a std::cell::RefCell<Context>, host: &'a mut Host<'_>, caller: &Caller) -> mlua::Result<Self> {
        let mut cx = bound.try_borrow_mut().map_err(|_| mlua::Error::RecursiveMutCallback)?;
        if cx.lent {
            return Err(mlua::Error::runtime("the engine is lent already"));
        }
        std::mem::swap(&mut cx.engine, host.engine);
        std::mem::swap(&mut cx.window, host.window);
        cx.lent = true;
        cx.creds = caller.creds.clone();
        cx.session_id = caller.session_id;
        cx.instance_uuid = Rc::clone(&caller.instance_uuid);
        cx.cfg = caller.cfg.clone();
        cx.control.clone_from(&caller.control);
        cx.ticket = host.ticket;
        cx.wait_for = None;
        Ok(Self { bound, engine: &mut *host.engine, window: &mut *host.window })
    }
}

impl Drop for Lend<'_> {
    fn drop(&mut self) {
        // Not borrowed here: `op` holds the borrow only while it runs.
        if let Ok(mut cx) = self.bound.try_borrow_mut() {
            std::mem::swap(&mut cx.engine, self.engine);
            std::mem::swap(&mut cx.window, self.window);
            cx.lent = false;
        }
    }
}

impl std::fmt::Debug for LuaRuntime {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LuaRuntime").finish_non_exhaustive()
    }
}

/// Lua around a script's main chunk: a value the script raises is kept (boxed,
/// as it may be nil) in `box.internal.script_error` on its way up (mlua gives only
/// its text).
/// LuaJIT yields across `xpcall`, so `box.cfg{}` and fibers work as before.
const SCRIPT_WRAPPER: &str = r"
local chunk, args = ...
return function()
    return (function(ok, ...)
        if ok then return ... end
        box.internal.script_error = {(...)}
        error((...), 0)
    end)(xpcall(chunk, function(e) return e end, unpack(args, 1, args.n)))
end
";

fn lua_err(e: &mlua::Error) -> BoxError {
    let mut err = BoxError::new(code::PROC_LUA, lua_message(e));
    err.kind = ErrorKind::Luajit;
    err
}

/// The message of a Lua error, without mlua's decorations.
fn lua_message(e: &mlua::Error) -> String {
    match e {
        mlua::Error::SyntaxError { message, .. } | mlua::Error::RuntimeError(message) => message.clone(),
        mlua::Error::CallbackError { cause, .. } => lua_message(cause),
        other => other.to_string(),
    }
}

/// A VM with every standard library LuaJIT has, `debug` and C modules included.
///
/// Scripts are the operator's own, as in Tarantool, where `debug`, `ffi` and
/// `package.loadlib` are all open: the VM is no sandbox. (mlua's safe mode
/// refuses `debug`, which `xpcall(f, debug.traceback)` in every other
/// Tarantool script needs, and C modules from `.rocks`.)
fn open_state() -> Lua {
    #[allow(unsafe_code, reason = "loads `debug` and C modules, which mlua's safe mode refuses; see above")]
    // SAFETY: mlua's unsafe constructor only lifts its sandbox; the scripts run
    // are trusted as Tarantool trusts them (they could already crash the
    // process through `ffi`).
    unsafe {
        Lua::unsafe_new_with(mlua::StdLib::ALL, mlua::LuaOptions::default())
    }
}

/// An argument of a session trigger (`on_auth` gets a name and a flag).
#[derive(Debug, Clone, Copy)]
pub enum TriggerArg<'a> {
    /// A Lua string.
    Str(&'a str),
    /// A Lua boolean.
    Bool(bool),
}

impl LuaRuntime {
    /// A VM with the standard libraries and the `box` prelude.
    pub fn new() -> BoxResult<Self> {
        let lua = open_state();
        let init = || -> mlua::Result<()> {
            let b = lua.create_table()?;
            b.set("NULL", convert::null(&lua)?)?;
            let internal = lua.create_table()?;
            internal.set("errcodes", lua.load(ERRCODES).set_name("=errcodes.lua").eval::<mlua::Table>()?)?;
            b.set("internal", internal)?;
            lua.globals().set("box", b)?;
            lua.globals().set("_TARANTOOL", VERSION)?;
            Ok(())
        };
        init().map_err(|e| lua_err(&e))?;
        register_frame(&lua).map_err(|e| lua_err(&e))?;
        convert::register_uuid(&lua).map_err(|e| lua_err(&e))?;
        uuid::register(&lua).map_err(|e| lua_err(&e))?;
        decimal::register(&lua).map_err(|e| lua_err(&e))?;
        lua.load(PRELUDE).set_name("=box.lua").exec().map_err(|e| lua_err(&e))?;
        lua.load(CONSOLE).set_name("=builtin/box/console.lua").exec().map_err(|e| lua_err(&e))?;
        lua.load(CONSOLE_LUA_OUTPUT).set_name("=console_lua_output.lua").exec().map_err(|e| lua_err(&e))?;
        netbox::register(&lua).map_err(|e| lua_err(&e))?;
        socket::register(&lua).map_err(|e| lua_err(&e))?;
        raw_socket::register(&lua).map_err(|e| lua_err(&e))?;
        lua.load(NET_BOX).set_name("=builtin/box/net_box.lua").exec().map_err(|e| lua_err(&e))?;
        let bind = || -> mlua::Result<()> {
            let internal: Table = lua.globals().get::<Table>("box")?.get("internal")?;
            internal.set("native", native::create(&lua)?)?;
            internal.set("loop_tick", mlua::LightUserData(LOOP_TICK.as_ptr().cast()))?;
            internal.set("fio", fio::create(&lua)?)?;
            internal.set("xlog", xlog::create(&lua)?)?;
            internal.set("popen", popen::create(&lua)?)?;
            internal.set("crypto", crypto::create(&lua)?)?;
            internal.set("utf8", utf8::create(&lua)?)?;
            internal.set("key_def", key_def::create(&lua)?)?;
            let codes: Table = internal.get("op_codes")?;
            for (code, name) in dispatch::OP_CODES.iter().enumerate().skip(1) {
                codes.raw_set(*name, code)?;
            }
            // Decoded arrays and maps carry these metatables; msgpack and json show
            // them (yaml takes them from msgpack), one pair shared as in 2.6.
            let loaded: Table = lua.globals().get::<Table>("package")?.get("loaded")?;
            for module in ["msgpack", "json"] {
                let m: Table = loaded.get(module)?;
                m.set("array_mt", convert::hint_mt(&lua, true)?)?;
                m.set("map_mt", convert::hint_mt(&lua, false)?)?;
            }
            Ok(())
        };
        bind().map_err(|e| lua_err(&e))?;
        for (name, source) in MODULES {
            lua.load(source).set_name(name).exec().map_err(|e| lua_err(&e))?;
        }
        load_jit_modules(&lua).map_err(|e| lua_err(&e))?;
        lua.load("box.internal.install_cdata_aware_type()").exec().map_err(|e| lua_err(&e))?;
        let signals = std::rc::Rc::new(dispatch::Signals::default());
        lua.set_app_data(std::rc::Rc::clone(&signals));
        // Functional indexes of this thread's engine compute their keys here.
        crate::engine::func_index::install(Rc::new(key_functions::LuaKeyFunctions::new(&lua)));
        Ok(Self { lua, hot: std::cell::OnceCell::new(), signals })
    }

    /// The handles of [`Hot`], looked up (and `op` made) the first time.
    fn hot(&self) -> mlua::Result<&Hot> {
        if let Some(hot) = self.hot.get() {
            return Ok(hot);
        }
        let internal: Table = self.lua.globals().get::<Table>("box")?.get("internal")?;
        let bound = Rc::new(std::cell::RefCell::new(Context::idle(internal.clone())));
        let slot = Rc::clone(&bound);
        let op = self.lua.create_function(move |lua, args: MultiValue| {
            // A call from inside an operation (none makes one) would alias the engine.
            let mut cx = slot.try_borrow_mut().map_err(|_| mlua::Error::RecursiveMutCallback)?;
            if !cx.lent {
                return Err(mlua::Error::runtime("box.internal.op called with no engine bound"));
            }
            dispatch(lua, &mut cx, args)
        })?;
        // A request's fiber binds `op` itself (see `start_request`).
        internal.get::<Function>("set_request_op")?.call::<()>(&op)?;
        let hot = Hot {
            fiber_request: internal.get("fiber_request")?,
            end_call: internal.get("end_call")?,
            op_key: self.lua.create_string("op")?,
            op,
            bound,
            internal,
        };
        Ok(self.hot.get_or_init(|| hot))
    }

    /// Runs `f` with `box.internal.op` bound to the host's engine and window, as the
    /// caller: they are swapped into the bound [`Context`] and back out afterwards
    /// (by [`Lend`], on every path), and `op` is set for the entry only.
    ///
    /// A transaction the code leaves open is rolled back, and the call fails
    /// as in Tarantool.
    fn with_engine<T>(
        &self,
        host: &mut Host<'_>,
        caller: &Caller,
        f: impl FnOnce(&Lua) -> mlua::Result<BoxResult<T>>,
    ) -> (mlua::Result<BoxResult<T>>, Option<u64>) {
        self.lent(host, caller, |lua, hot| {
            hot.internal.raw_set(&hot.op_key, &hot.op)?;
            let r = f(lua);
            let in_txn = hot.end_call.call::<bool>(());
            hot.internal.raw_set(&hot.op_key, Value::Nil)?;
            match r {
                Ok(Ok(_)) if in_txn? => Ok(Err(transaction_active())),
                other => other,
            }
        })
    }

    /// Swaps the host's engine and window into the bound [`Context`] as the caller
    /// (back out afterwards, by [`Lend`], on every path) and runs `f`, which binds
    /// `box.internal.op` for its entry: [`Self::with_engine`] does in Rust, a
    /// request's fiber does in Lua (one call into Lua per request, not three).
    fn lent<T>(
        &self,
        host: &mut Host<'_>,
        caller: &Caller,
        f: impl FnOnce(&Lua, &Hot) -> mlua::Result<BoxResult<T>>,
    ) -> (mlua::Result<BoxResult<T>>, Option<u64>) {
        let hot = match self.hot() {
            Ok(hot) => hot,
            Err(e) => return (Err(e), None),
        };
        let lend = match Lend::new(&hot.bound, host, caller) {
            Ok(lend) => lend,
            Err(e) => return (Err(e), None),
        };
        let published = dispatch::publish_schema(&mut hot.bound.borrow_mut());
        if let Err(e) = published {
            return (Err(e), None);
        }
        let result = f(&self.lua, hot);
        if result.is_err() {
            // `op` must not outlive the entry, whatever failed.
            let _ = hot.internal.raw_set(&hot.op_key, Value::Nil);
        }
        let wait_for = hot.bound.try_borrow().ok().and_then(|cx| cx.wait_for);
        drop(lend);
        (result, wait_for)
    }

    /// Loads what a command line runs as the script's coroutine, with `arg` set as
    /// Tarantool sets it: `run`'s `-l`/`-e` steps, the script (`text`, if any),
    /// then the console if `run` asks for it.
    pub fn load_script(&self, text: Option<&ScriptText>, run: &crate::config::ScriptRun) -> BoxResult<mlua::Thread> {
        let setup = || -> mlua::Result<mlua::Thread> {
            let g = self.lua.globals();
            let arg = self.lua.create_table()?;
            arg.raw_set(0, text.map_or("tarantool", |t| t.arg0.as_str()))?;
            // As 2.6: the executable's real path, so a script can start another instance of it.
            let exe = std::env::current_exe().and_then(std::fs::canonicalize);
            arg.raw_set(-1, exe.map_or_else(|_| "tarantool".to_owned(), |p| p.display().to_string()))?;
            for (i, a) in run.args.iter().enumerate() {
                arg.raw_set(i + 1, a.as_str())?;
            }
            g.set("arg", arg)?;
            let internal: Table = g.get::<Table>("box")?.get("internal")?;
            internal.set("script_mode", true)?;
            internal.get::<Function>("hide_until_cfg")?.call::<()>(())?;
            // The script's main fiber is named after the file, as in tarantool.
            let fiber_name = text.map_or("main", |t| t.fiber_name.as_str());
            internal.get::<Table>("main_fiber")?.set("name_", fiber_name)?;
            let script = match text {
                Some(t) => Some(self.lua.load(t.source()).set_name(t.chunk_name.as_str()).into_function()?),
                None => None,
            };
            let before = self.lua.create_table()?;
            for (i, step) in run.before.iter().enumerate() {
                let (kind, value) = match step {
                    crate::config::Before::Require(name) => ("l", name),
                    crate::config::Before::Eval(expr) => ("e", expr),
                };
                before.raw_set(i + 1, self.lua.create_sequence_from([kind, value.as_str()])?)?;
            }
            // A script alone is the main chunk itself (its tracebacks are 2.6's).
            let main: Function = match script {
                Some(script) if run.before.is_empty() && !run.interactive => script,
                script => {
                    self.lua.load(COMMAND_LINE).set_name("=command line").call((before, script, run.interactive))?
                }
            };
            // As 2.6: the main chunk gets the command line's arguments as `...`.
            let args = self.lua.create_sequence_from(run.args.iter().map(String::as_str))?;
            args.raw_set("n", run.args.len())?;
            let wrapped: Function = self.lua.load(SCRIPT_WRAPPER).set_name("=script").call((main, args))?;
            self.lua.create_thread(wrapped)
        };
        setup().map_err(|e| lua_err(&e))
    }

    /// The error a script raised, as Tarantool sees it: the raised value itself
    /// when the script's wrapper kept it (a `box.error` keeps its code), otherwise
    /// `e`'s text as a LuajitError.
    fn script_raised(&self, e: &mlua::Error) -> BoxError {
        let kept = (|| -> mlua::Result<Option<Value>> {
            let internal: Table = self.lua.globals().get::<Table>("box")?.get("internal")?;
            let boxed: Option<Table> = internal.raw_get("script_error")?;
            internal.raw_set("script_error", Value::Nil)?;
            boxed.map(|b| b.raw_get::<Value>(1)).transpose()
        })();
        match kept {
            Ok(Some(v)) => error_from_value(&self.lua, v),
            Ok(None) | Err(_) => lua_err(e),
        }
    }

    /// How tarantool 2.6 names a script's fatal error: `LuajitError: <text>` for a
    /// Lua error, `ER_<NAME>: <message>` for a `box.error` (`ER_UNKNOWN` for codes
    /// it has no name for).
    #[must_use]
    pub fn script_error_text(&self, e: &BoxError) -> String {
        match e.kind {
            ErrorKind::Luajit => format!("LuajitError: {}", e.message),
            // 2.6 leaves its format's %s in (a bug, kept: the oracle's bytes).
            ErrorKind::Custom => format!("Custom type %s: {}", e.message),
            _ => format!("ER_{}: {}", self.error_code_name(e.code), e.message),
        }
    }

    /// The name of a `box.error` code (`NO_SUCH_SPACE`), or `UNKNOWN`.
    fn error_code_name(&self, code: u32) -> String {
        let found = (|| -> mlua::Result<Option<String>> {
            let codes: Table = self.lua.globals().get::<Table>("box")?.get::<Table>("internal")?.get("error_codes")?;
            for pair in codes.pairs::<String, u32>() {
                let (name, c) = pair?;
                if c == code {
                    return Ok(Some(name));
                }
            }
            Ok(None)
        })();
        found.ok().flatten().unwrap_or_else(|| "UNKNOWN".to_owned())
    }

    /// Logs a script's fatal error after `box.cfg{}` as 2.6's logger does: the error
    /// (where it was raised: 2.6's `utils.c:1005` for a Lua error, the `box.error`'s
    /// trace for the others) then `fatal error, exiting the event loop`.
    pub fn log_script_failure(&self, e: &BoxError) {
        let where_ = match e.kind {
            ErrorKind::Luajit => Some("utils.c:1005".to_owned()),
            // Without its directory, as 2.6's logger writes a location.
            _ if e.line != 0 && !e.file.ends_with(".rs") => {
                Some(format!("{}:{}", e.file.rsplit('/').next().unwrap_or(&e.file), e.line))
            }
            _ => None,
        };
        let text = self.script_error_text(e);
        let logged = internal_fn(&self.lua, "log_script_failure").and_then(|f| f.call::<()>((text.clone(), where_)));
        if logged.is_err() {
            eprintln!("{text}\nfatal error, exiting the event loop");
        }
    }

    /// Runs a script until its first `box.cfg{}`: returns the options, or `None` if it ended first.
    pub fn resume_unbound(&self, co: &mlua::Thread) -> BoxResult<Option<Table>> {
        let out: MultiValue = co.resume(()).map_err(|e| self.script_raised(&e))?;
        if co.status() != mlua::thread::ThreadStatus::Resumable {
            return Ok(None);
        }
        let mut it = out.into_iter();
        match (it.next(), it.next()) {
            (Some(Value::String(tag)), Some(Value::Table(opts))) if tag.as_bytes().as_ref() == b"box.cfg" => {
                Ok(Some(opts))
            }
            (Some(Value::String(tag)), None) if tag.as_bytes().as_ref() == b"box.cfg" => {
                Ok(Some(self.lua.create_table().map_err(|e| lua_err(&e))?))
            }
            _ => Ok(None),
        }
    }

    /// Makes the script's coroutine (paused in its first `box.cfg`) the main fiber
    /// and runs it with `box` bound to the engine (as admin) until it yields or ends.
    pub fn start_script(&self, host: &mut Host<'_>, caller: &Caller, co: &mlua::Thread, name: &str) -> Resumed {
        let adopted = (|| -> mlua::Result<u64> {
            let internal: Table = self.lua.globals().get::<Table>("box")?.get("internal")?;
            internal.set("booted", true)?;
            internal.get::<Function>("fiber_adopt")?.call((co.clone(), name))
        })();
        match adopted {
            Ok(fid) => self.resume_fiber(host, caller, fid, FiberKind::Script).0,
            Err(e) => Resumed::Ended(Err(lua_err(&e))),
        }
    }

    /// The status `os.exit` asked to exit with, if it was called.
    pub fn take_exit(&self) -> Option<i32> {
        self.lua.remove_app_data::<dispatch::ExitRequest>().map(|e| e.0)
    }

    /// Lets `net.box` requests from fibers wait for their replies on the TX thread's channel.
    pub fn set_tx_notify(&self, notify: tokio::sync::mpsc::UnboundedSender<crate::executor::TxMessage>) {
        self.lua.set_app_data(netbox::TxNotify(notify));
    }

    /// Hands a `net.box` reply to the fiber waiting on `ticket` (it runs at the next scheduling point).
    pub fn netbox_deliver(&self, ticket: u64, reply: netbox::NetReply) {
        deliver_netbox(&self.lua, ticket, reply);
    }

    /// Hands a push message to the `net.box` request waiting on `ticket`.
    pub fn netbox_push(&self, ticket: u64, body: &[u8]) {
        deliver_netbox_push(&self.lua, ticket, body);
    }

    /// Tells `net.box` that connection `conn` broke.
    pub fn netbox_lost(&self, conn: u64, reason: &str) {
        deliver_netbox_lost(&self.lua, conn, reason);
    }

    /// Hands a socket read or write outcome to the fiber waiting on `ticket`.
    pub fn socket_deliver(&self, ticket: u64, reply: socket::SocketReply) {
        deliver_socket(&self.lua, ticket, reply);
    }

    /// Starts the handler fiber of the `socket.tcp_server` that accepted `conn`.
    pub fn socket_accepted(&self, conn: socket::Accepted) {
        start_accepted(&self.lua, conn);
    }

    /// How many fibers are alive.
    #[must_use]
    pub fn fiber_count(&self) -> usize {
        self.lua.app_data_ref::<native::FiberCount>().map_or(0, |c| c.0)
    }

    /// The next fiber due to run now, if any (expired sleepers first join the ready queue).
    #[must_use]
    pub fn next_fiber(&self) -> Option<DueFiber> {
        if self.fiber_count() == 0 {
            return None;
        }
        let next = || -> mlua::Result<Option<DueFiber>> {
            let f: Function = internal_fn(&self.lua, "fiber_next")?;
            let (fid, session_id, user_id): (Option<u64>, Option<u64>, Option<u32>) = f.call(())?;
            Ok(fid.map(|fid| DueFiber { fid, session_id: session_id.unwrap_or(0), user_id }))
        };
        next().unwrap_or_else(|e| {
            tracing::error!(error = %e, "fiber scheduler");
            None
        })
    }

    /// Seconds until a fiber is due (0: one is ready now; `None`: none waits on a time).
    #[must_use]
    pub fn fiber_delay(&self) -> Option<f64> {
        if self.fiber_count() == 0 {
            return None;
        }
        let delay = || -> mlua::Result<Option<f64>> {
            let f: Function = internal_fn(&self.lua, "fiber_delay")?;
            f.call(())
        };
        delay().ok().flatten()
    }

    /// Resumes fiber `fid` with `box` bound to the engine as `caller`, until it yields or ends.
    pub fn resume_fiber(
        &self,
        host: &mut Host<'_>,
        caller: &Caller,
        fid: u64,
        kind: FiberKind,
    ) -> (Resumed, Option<u64>) {
        let (outcome, wait) = self.with_engine(host, caller, |lua| {
            let resume: Function = internal_fn(lua, "fiber_resume")?;
            let out: Vec<Value> = resume.call::<MultiValue>(fid)?.into_iter().collect();
            Ok(Ok(encode_fiber_end(lua, out, kind, caller.session_id)))
        });
        let resumed = match outcome {
            Ok(Ok(r)) => r,
            Ok(Err(e)) => Resumed::Ended(Err(e)),
            Err(e) => Resumed::Ended(Err(lua_err(&e))),
        };
        (resumed, wait)
    }

    /// Runs the fibers of a script whose main chunk ended without `box.cfg` (no
    /// engine bound), delivering what other threads report, until a stop signal;
    /// then (as tarantool stays in its event loop) waits for one if the fibers all
    /// ended. A fiber may call the first `box.cfg{}` meanwhile, as in 2.6: then it
    /// returns the coroutine that boots for it, to be run as the script's.
    pub fn run_unbound_fibers(&self) -> BoxResult<Option<mlua::Thread>> {
        let run = || -> mlua::Result<Option<mlua::Thread>> {
            let internal: Table = self.lua.globals().get::<Table>("box")?.get("internal")?;
            internal.set("main_ended", true)?;
            let f: Function = internal.get("fiber_run_unbound")?;
            while !inbox::Inbox::stopped(&self.lua) {
                let delay: Option<f64> = if self.fiber_count() > 0 { f.call(())? } else { None };
                if !internal.get::<Value>("pending_boot")?.is_nil() {
                    let boot: Function = internal.get("boot_pending")?;
                    return Ok(Some(self.lua.create_thread(boot)?));
                }
                inbox::wait(&self.lua, delay);
            }
            Ok(None)
        };
        run().map_err(|e| lua_err(&e))
    }

    /// Holds the TX channel for a script running before `box.cfg{}` (see [`inbox`]).
    pub fn open_inbox(
        &self,
        rx: tokio::sync::mpsc::UnboundedReceiver<crate::executor::TxMessage>,
        notify: tokio::sync::mpsc::UnboundedSender<crate::executor::TxMessage>,
    ) {
        inbox::Inbox::open(&self.lua, rx, notify);
    }

    /// Takes the TX channel back at `box.cfg{}` (see [`inbox::Closed`]).
    #[must_use]
    pub fn close_inbox(&self) -> Option<inbox::Closed> {
        inbox::Inbox::close(&self.lua)
    }

    /// Whether a stop signal came while the script ran unbound.
    #[must_use]
    pub fn unbound_stopped(&self) -> bool {
        inbox::Inbox::stopped(&self.lua)
    }

    /// Runs the script's fibers and event loop (unbound, the main chunk paused in
    /// its first `box.cfg{}`) while `busy()` holds, looking again at least every
    /// `poll`; returns whether a stop signal came.
    pub fn run_unbound_while(&self, busy: impl Fn() -> bool, poll: std::time::Duration) -> BoxResult<bool> {
        let run = || -> mlua::Result<()> {
            let f: Function = internal_fn(&self.lua, "fiber_run_unbound")?;
            while busy() && !inbox::Inbox::stopped(&self.lua) {
                let delay: Option<f64> = if self.fiber_count() > 0 { f.call(())? } else { None };
                inbox::wait(&self.lua, Some(delay.map_or(poll.as_secs_f64(), |d| d.min(poll.as_secs_f64()))));
            }
            Ok(())
        };
        run().map_err(|e| lua_err(&e))?;
        Ok(self.unbound_stopped())
    }

    /// The script ended and the process stays up: logs it as 2.6 does, and tells
    /// systemd the service is ready.
    pub fn log_entering_event_loop(&self) {
        crate::systemd::notify("READY=1");
        if let Err(e) = internal_fn(&self.lua, "log_entering_event_loop").and_then(|f| f.call::<()>(())) {
            tracing::warn!(error = %e, "log");
        }
    }

    /// A stop before `box.cfg{}`: runs the `box.ctl.on_shutdown` triggers (errors
    /// are logged) and flushes Lua's standard streams, as 2.6 does on SIGTERM.
    pub fn stop_unbound(&self) {
        let stop = || -> mlua::Result<()> {
            let run: Function = internal_fn(&self.lua, "run_shutdown_triggers")?;
            run.call::<()>(())?;
            self.lua.load("io.stdout:flush() io.stderr:flush()").exec()
        };
        if let Err(e) = stop() {
            tracing::warn!(error = %e, "on_shutdown triggers");
        }
    }

    /// Starts one text console line (`box.internal.console_line`: the session's
    /// delimiter, then `require('console').eval`) in a fiber of its own: its reply
    /// text (empty while a statement is gathered over lines), or the fiber it
    /// waits in ([`Shape::Text`] when it ends).
    pub fn console_eval(&self, host: &mut Host<'_>, caller: &Caller, line: &str) -> Step {
        let (outcome, _) = self.lent(host, caller, |lua, hot| {
            let eval: Function = internal_fn(lua, "console_line")?;
            let args = |all: &mut MultiValue| {
                all.push_back(Value::String(lua.create_string(line)?));
                Ok(())
            };
            start_request(lua, hot, caller, false, Callee::Value(Value::Function(eval)), args, Shape::Text)
        });
        step_of(outcome)
    }

    /// Drops what Lua kept for a session that disconnected (its `box.session.storage`).
    /// Notes a new session's peer address and socket for `box.session.peer/fd/exists`.
    pub fn session_opened(&self, session_id: u64, peer: Option<String>, fd: i32) {
        let mut known = self.lua.remove_app_data::<dispatch::Sessions>().unwrap_or_default();
        known.0.insert(session_id, (peer, fd));
        self.lua.set_app_data(known);
    }

    pub fn forget_session(&self, session_id: u64) {
        if let Some(mut known) = self.lua.app_data_mut::<dispatch::Sessions>() {
            known.0.remove(&session_id);
        }
        let forget = || -> mlua::Result<()> {
            let f: Function = internal_fn(&self.lua, "forget_session")?;
            #[allow(clippy::cast_precision_loss, reason = "session ids stay far below 2^53")]
            f.call::<()>(session_id as f64)
        };
        if let Err(e) = forget() {
            tracing::warn!(session_id, error = %e, "cannot drop the session's storage");
        }
    }

    /// Whether `space:on_replace` triggers are set on this space.
    #[must_use]
    pub fn has_replace_triggers(&self, space_id: u32) -> bool {
        self.lua.app_data_ref::<dispatch::ReplaceTriggers>().is_some_and(|t| t.0.contains(&space_id))
    }

    /// Whether `space:before_replace` triggers are set on this space.
    #[must_use]
    pub fn has_before_replace_triggers(&self, space_id: u32) -> bool {
        self.lua.app_data_ref::<dispatch::BeforeReplaceTriggers>().is_some_and(|t| t.0.contains(&space_id))
    }

    /// Runs an IPROTO write to a space with `before_replace` triggers through Lua
    /// (`box.internal.iproto_before_replaced`): the triggers see the row's old and
    /// new tuples and may rewrite the request. `request` is INSERT, REPLACE, UPDATE,
    /// UPSERT or DELETE; `a` the tuple or key, `b` the operations and the number
    /// their fields count from (msgpack each).
    /// Returns the tuple the request as rewritten returns, if any.
    #[allow(clippy::too_many_arguments, reason = "the fields of a write request")]
    pub fn run_before_replaced(
        &self,
        host: &mut Host<'_>,
        caller: &Caller,
        space_id: u32,
        index_id: u32,
        request: &str,
        a: &[u8],
        b: Option<(&[u8], u32)>,
    ) -> BoxResult<Option<crate::engine::tuple::Tuple>> {
        let (outcome, _) = self.with_engine(host, caller, |lua| {
            let run: Value = internal_fn(lua, "iproto_before_replaced").map(Value::Function)?;
            let decode = |bytes: &[u8]| convert::decode(lua, &mut Reader::new(bytes), 0);
            let args = vec![
                Value::Integer(i64::from(space_id)),
                Value::Integer(i64::from(index_id)),
                Value::String(lua.create_string(request)?),
                decode(a)?,
                b.map(|(ops, _)| decode(ops)).transpose()?.unwrap_or(Value::Nil),
                Value::Integer(i64::from(b.map_or(0, |(_, base)| base))),
            ];
            Ok(protected_call(lua, &run, args)?.map(|values| match values.into_iter().next() {
                Some(Value::UserData(ud)) => ud.borrow::<LuaTuple>().ok().map(|t| t.0.clone()),
                _ => None,
            }))
        });
        outcome.map_err(|e| lua_err(&e)).and_then(|r| r)
    }

    /// Runs the space's `on_replace` triggers for the rows an IPROTO statement changed
    /// after `mark`; a trigger error undoes the statement (and what the triggers did).
    pub fn run_replace_triggers(
        &self,
        host: &mut Host<'_>,
        caller: &Caller,
        space_id: u32,
        request: &str,
        mark: usize,
    ) -> BoxResult<()> {
        let (outcome, _) = self.with_engine(host, caller, |lua| {
            let internal: Table = lua.globals().get::<Table>("box")?.get("internal")?;
            let run: Value = internal.get("run_replace_triggers")?;
            let args = vec![
                Value::Integer(i64::from(space_id)),
                Value::String(lua.create_string(request)?),
                Value::Integer(i64::try_from(mark).unwrap_or(0)),
            ];
            protected_call(lua, &run, args).map(|r| r.map(|_| ()))
        });
        outcome.map_err(|e| lua_err(&e)).and_then(|r| r).map(|_| ())
    }

    /// Takes the values `box.session.push` queued during the last call (msgpack each).
    pub fn take_pushes(&self) -> Vec<Vec<u8>> {
        if !self.signals.pushed.replace(false) {
            return Vec::new();
        }
        self.lua.remove_app_data::<dispatch::Pushes>().map(|p| p.0).unwrap_or_default()
    }

    /// The sessions whose user `box.session.su(user)` changed since the last
    /// time this was asked: (session id, user id), in order.
    pub fn take_session_users(&self) -> Vec<(u64, u32)> {
        if !self.signals.session_users.replace(false) {
            return Vec::new();
        }
        self.lua.remove_app_data::<dispatch::SessionUsers>().map(|c| c.0).unwrap_or_default()
    }

    /// The text console sessions that quit (`\quit`) since the last time this was asked.
    pub fn take_console_quits(&self) -> Vec<u64> {
        self.lua.remove_app_data::<dispatch::ConsoleQuits>().map(|q| q.0).unwrap_or_default()
    }

    /// Closes every listening socket Lua opened (`socket.tcp_server`, a console
    /// before `box.cfg{}`): before the process hands over to one in the background.
    pub fn close_lua_listeners(&self) {
        if let Err(e) = internal_fn(&self.lua, "socket_close_listeners").and_then(|f| f.call::<()>(())) {
            tracing::warn!(error = %e, "closing the listening sockets");
        }
    }

    /// Whether `box.snapshot()` was called since the last time this was asked.
    pub fn take_snapshot_request(&self) -> bool {
        self.signals.snapshot.replace(false)
    }

    /// Under `wal_mode = 'none'`: where `box.snapshot()` saves the state.
    pub fn set_images(&self, images: crate::storage::image::Images) {
        self.lua.set_app_data(images);
    }

    /// Whether Lua opened a listener: a text console or the binary port (`box.cfg{listen}`).
    #[must_use]
    pub fn is_serving(&self) -> bool {
        self.lua.app_data_ref::<dispatch::Serving>().is_some_and(|c| c.0)
    }

    /// Whether any `box.ctl.on_iproto_request` trigger is set (none: no cost per request).
    #[must_use]
    pub fn has_iproto_triggers(&self) -> bool {
        self.signals.iproto_triggers.get() > 0
    }

    /// Whether `box.session.on_<kind>` triggers are set (`connect`, `disconnect`, `auth`).
    #[must_use]
    pub fn has_session_triggers(&self, kind: &str) -> bool {
        self.lua.app_data_ref::<dispatch::SessionTriggers>().is_some_and(|t| t.0.contains(kind))
    }

    /// Runs `box.session.on_<kind>` triggers in the session's context with `args`.
    pub fn run_session_triggers(
        &self,
        host: &mut Host<'_>,
        caller: &Caller,
        kind: &str,
        args: &[TriggerArg<'_>],
    ) -> BoxResult<()> {
        let (outcome, _) = self.with_engine(host, caller, |lua| {
            let run: Function = internal_fn(lua, "run_session_triggers_as")?;
            let uid = caller.session_user.map_or(Value::Nil, |u| Value::Integer(i64::from(u)));
            let mut values = vec![uid, Value::String(lua.create_string(kind)?)];
            for a in args {
                values.push(match *a {
                    TriggerArg::Bool(b) => Value::Boolean(b),
                    TriggerArg::Str(s) => Value::String(lua.create_string(s)?),
                });
            }
            protected_call(lua, &Value::Function(run), values).map(|r| r.map(|_| ()))
        });
        outcome.map_err(|e| lua_err(&e))?.map(|_| ())
    }

    /// Runs the `box.ctl.on_shutdown` triggers (once: the list is emptied); their
    /// errors are logged, not returned.
    pub fn run_shutdown_triggers(&self, host: &mut Host<'_>, caller: &Caller) -> BoxResult<()> {
        let (outcome, _) = self.with_engine(host, caller, |lua| {
            let run: Function = internal_fn(lua, "run_shutdown_triggers")?;
            protected_call(lua, &Value::Function(run), Vec::new()).map(|r| r.map(|_| ()))
        });
        outcome.map_err(|e| lua_err(&e))?.map(|_| ())
    }

    /// Runs the `on_iproto_request` triggers with a request's header; an error rejects the request.
    pub fn run_iproto_triggers(
        &self,
        host: &mut Host<'_>,
        caller: &Caller,
        header: &[(&str, HeaderValue<'_>)],
    ) -> BoxResult<()> {
        let (outcome, _) = self.with_engine(host, caller, |lua| {
            let t = lua.create_table()?;
            for (k, v) in header {
                match v {
                    HeaderValue::Str(s) => t.set(*k, *s)?,
                    HeaderValue::Num(n) => t.set(*k, *n)?,
                    HeaderValue::Raw(bytes) => {
                        let mut r = Reader::new(bytes);
                        t.set(*k, convert::decode(lua, &mut r, 0)?)?;
                    }
                }
            }
            let run: Function = internal_fn(lua, "run_iproto_triggers")?;
            protected_call(lua, &Value::Function(run), vec![Value::Table(t)]).map(|r| r.map(|_| ()))
        });
        outcome.map_err(|e| lua_err(&e))?.map(|_| ())
    }

    /// CALL: runs the function `callee` names in a fiber of its own; its reply body
    /// is `{0x30: [...]}`. `atomic` (a tokened call, one transaction) makes a yield
    /// fail the call with error 154.
    pub fn call(
        &self,
        host: &mut Host<'_>,
        caller: &Caller,
        callee: Called<'_>,
        args: &[u8],
        shape: Shape,
        atomic: bool,
    ) -> Outcome {
        let (name, persistent) = match callee {
            Called::Global(name) => (String::from_utf8_lossy(name), false),
            Called::Persistent(name) => (String::from_utf8_lossy(name), true),
        };
        let (outcome, wait) = self.lent(host, caller, |lua, hot| {
            if persistent {
                // Compiled from its body in `_func` (box.lua keeps it until the body changes).
                hot.internal.raw_set(&hot.op_key, &hot.op)?;
                let compile: Function = internal_fn(lua, "persistent_function")?;
                let compiled =
                    protected_call(lua, &Value::Function(compile), vec![Value::String(lua.create_string(&*name)?)]);
                hot.internal.raw_set(&hot.op_key, Value::Nil)?;
                let func = match compiled? {
                    Ok(out) => out.into_iter().next().unwrap_or(Value::Nil),
                    Err(e) => return Ok(Err(e)),
                };
                if func.is_nil() {
                    return Ok(Err(no_such_procedure(&name)));
                }
                let values = |all: &mut MultiValue| convert::decode_args_into(lua, args, &mut **all);
                return start_request(lua, hot, caller, atomic, Callee::Value(func), values, shape);
            }
            if !name.contains(['.', ':']) {
                // A global's name: the fiber looks it up, as the global it names now.
                let values = |all: &mut MultiValue| convert::decode_args_into(lua, args, &mut **all);
                return start_request(lua, hot, caller, atomic, Callee::Global(&name), values, shape);
            }
            // A path is walked here, with `op` bound: an `__index` on the way may use box.
            hot.internal.raw_set(&hot.op_key, &hot.op)?;
            let found = resolve(lua, &name);
            hot.internal.raw_set(&hot.op_key, Value::Nil)?;
            let Some((func, receiver)) = found? else {
                return Ok(Err(no_such_procedure(&name)));
            };
            let values = |all: &mut MultiValue| {
                all.extend(receiver);
                convert::decode_args_into(lua, args, &mut **all)
            };
            start_request(lua, hot, caller, atomic, Callee::Value(func), values, shape)
        });
        (step_of(outcome), wait)
    }

    /// EVAL: runs `expr` as a chunk named `eval` with `...` bound to the arguments, in a fiber of its own.
    pub fn eval(&self, host: &mut Host<'_>, caller: &Caller, expr: &[u8], args: &[u8], atomic: bool) -> Outcome {
        let (outcome, wait) = self.lent(host, caller, |lua, hot| {
            let func = match lua.load(expr).set_name("=eval").into_function() {
                Ok(f) => f,
                Err(e) => return Ok(Err(lua_err(&e))),
            };
            let values = |all: &mut MultiValue| convert::decode_args_into(lua, args, &mut **all);
            start_request(lua, hot, caller, atomic, Callee::Value(Value::Function(func)), values, Shape::Call)
        });
        (step_of(outcome), wait)
    }
}

impl LuaRuntime {
    /// EXECUTE (`prepare` false) or PREPARE of `statement` in a fiber of its own,
    /// through `box.internal.sql_execute`, `sql_prepare` or `sql_unprepare`
    /// (`lua/sql.lua`); `binds` is EXECUTE's msgpack array.
    pub fn sql(
        &self,
        host: &mut Host<'_>,
        caller: &Caller,
        statement: Statement<'_>,
        binds: &[u8],
        prepare: bool,
        atomic: bool,
    ) -> Outcome {
        let (outcome, wait) = self.lent(host, caller, |lua, hot| {
            let name = match (prepare, statement) {
                (false, _) => "sql_execute",
                (true, Statement::Text(_)) => "sql_prepare",
                (true, Statement::Id(_)) => "sql_unprepare",
            };
            let func = internal_fn(lua, name)?;
            let values = |all: &mut MultiValue| {
                all.push_back(match statement {
                    Statement::Text(text) => Value::String(lua.create_string(text)?),
                    #[allow(clippy::cast_precision_loss, reason = "statement ids are 32-bit hashes")]
                    Statement::Id(id) => Value::Number(id as f64),
                });
                convert::decode_args_into(lua, &[&[0x91][..], binds].concat(), &mut **all)
            };
            start_request(lua, hot, caller, atomic, Callee::Value(Value::Function(func)), values, Shape::Sql)
        });
        (step_of(outcome), wait)
    }
}

impl LuaRuntime {
    /// Whether the caller may run the tokened SQL `statement`, or have its stored
    /// reply replayed (`box.internal.sql_access`): the rights on its table, and a
    /// statement idempotency tokens apply to.
    pub fn sql_access(&self, host: &mut Host<'_>, caller: &Caller, statement: Statement<'_>) -> BoxResult<()> {
        let (result, _) = self.lent(host, caller, |lua, hot| {
            hot.internal.raw_set(&hot.op_key, &hot.op)?;
            let arg = match statement {
                Statement::Text(text) => Value::String(lua.create_string(text)?),
                #[allow(clippy::cast_precision_loss, reason = "statement ids are 32-bit hashes")]
                Statement::Id(id) => Value::Number(id as f64),
            };
            let out = internal_fn(lua, "sql_access")?.call::<(bool, Value)>(arg);
            hot.internal.raw_set(&hot.op_key, Value::Nil)?;
            let (ok, err) = out?;
            Ok(if ok { Ok(()) } else { Err(error_from_value(lua, err)) })
        });
        result.unwrap_or_else(|e| Err(lua_err(&e)))
    }
}

/// The functions of `box.internal` found so far, by name. The built-in Lua files
/// define each once, so the fiber scheduler (several per resume) and the other
/// hot callers do not look them up through two tables and an interned name again.
#[derive(Default)]
struct InternalFns(std::cell::RefCell<Vec<(&'static str, Function)>>);

/// The Lua function `box.internal.<name>` (defined by the built-in Lua files).
fn internal_fn(lua: &Lua, name: &'static str) -> mlua::Result<Function> {
    if let Some(known) = lua.app_data_ref::<InternalFns>() {
        if let Some((_, f)) = known.0.borrow().iter().find(|(n, _)| *n == name) {
            return Ok(f.clone());
        }
    }
    let f: Function = lua.globals().get::<Table>("box")?.get::<Table>("internal")?.get(name)?;
    if lua.app_data_ref::<InternalFns>().is_none() {
        lua.set_app_data(InternalFns::default());
    }
    if let Some(known) = lua.app_data_ref::<InternalFns>() {
        known.0.borrow_mut().push((name, f.clone()));
    }
    Ok(f)
}

fn step_of(outcome: mlua::Result<BoxResult<Step>>) -> Step {
    match outcome {
        Ok(Ok(step)) => step,
        Ok(Err(e)) => Step::Done(Err(e)),
        Err(e) => Step::Done(Err(lua_err(&e))),
    }
}

/// The function a CALL names.
#[derive(Debug, Clone, Copy)]
pub enum Called<'a> {
    /// A Lua global, or a path to a value (`a.b.c`, or `a.b:c` to pass `a.b` as self).
    Global(&'a [u8]),
    /// A persistent function of `_func`, defined by its body.
    Persistent(&'a [u8]),
}

/// What a request's fiber runs.
enum Callee<'a> {
    /// A function (or anything callable).
    Value(Value),
    /// The global of this name, looked up by the fiber.
    Global(&'a str),
}

/// Starts a request's fiber (`box.internal.fiber_request`) and runs it until it yields
/// or ends; the fiber binds `box.internal.op` while it runs and runs the end-of-call
/// checks ([`LuaRuntime::with_engine`]'s) before it returns.
/// `args` appends the function's arguments to the call's values (no vector of their own).
fn start_request(
    lua: &Lua,
    hot: &Hot,
    caller: &Caller,
    atomic: bool,
    callee: Callee<'_>,
    args: impl FnOnce(&mut MultiValue) -> mlua::Result<()>,
    shape: Shape,
) -> mlua::Result<BoxResult<Step>> {
    let mut all = MultiValue::with_capacity(8);
    #[allow(clippy::cast_precision_loss, reason = "session ids stay far below 2^53")]
    all.push_back(Value::Number(caller.session_id as f64));
    all.push_back(Value::Integer(i64::from(caller.creds.user_id)));
    all.push_back(caller.session_user.map_or(Value::Boolean(false), |u| Value::Integer(i64::from(u))));
    all.push_back(Value::Boolean(atomic));
    #[allow(clippy::cast_precision_loss, reason = "a sync shown to Lua as a number, as 2.6 does")]
    all.push_back(Value::Number(caller.sync as f64));
    let name = match callee {
        Callee::Value(func) => {
            all.push_back(func);
            None
        }
        Callee::Global(name) => {
            all.push_back(Value::String(lua.create_string(name)?));
            Some(name)
        }
    };
    args(&mut all)?;
    let mut out = hot.fiber_request.call::<MultiValue>(all)?;
    let out: &[Value] = out.make_contiguous();
    // `done, in_txn, ...`, or nil when the global is not there.
    let (Some(Value::Boolean(done)), Some(in_txn)) = (out.first(), out.get(1)) else {
        return Ok(Err(no_such_procedure(name.unwrap_or_default())));
    };
    if matches!(in_txn, Value::Boolean(true)) {
        return Ok(Err(transaction_active()));
    }
    if *done {
        return Ok(Ok(Step::Done(request_end(lua, &out[2..], shape, caller.session_id))));
    }
    Ok(Ok(Step::Parked(u64::from_lua(out.get(2).cloned().unwrap_or(Value::Nil), lua)?)))
}

fn no_such_procedure(name: &str) -> BoxError {
    BoxError::new(code::NO_SUCH_PROC, format!("Procedure '{name}' is not defined"))
}

fn transaction_active() -> BoxError {
    BoxError::new(code::FUNCTION_TX_ACTIVE, "Transaction is active at return from function")
}

/// A request fiber's end, `ok, results...`, as a reply body (or the error it raised).
/// (`session`'s settings say how errors among the results are written.)
fn request_end(lua: &Lua, out: &[Value], shape: Shape, session: u64) -> BoxResult<Vec<u8>> {
    match out.first() {
        Some(Value::Boolean(true)) => encode_results(&out[1..], shape, &serializer::reply_options(session)),
        _ => Err(error_from_value(lua, out.get(1).cloned().unwrap_or(Value::Nil))),
    }
}

/// What `box.internal.fiber_resume` returned, for a fiber of `kind`.
fn encode_fiber_end(lua: &Lua, out: Vec<Value>, kind: FiberKind, session: u64) -> Resumed {
    if !matches!(out.first(), Some(Value::Boolean(true))) {
        return Resumed::Waiting;
    }
    Resumed::Ended(match kind {
        FiberKind::Request(shape) => request_end(lua, &out[1..], shape, session),
        FiberKind::Script => match out.get(1) {
            Some(Value::Boolean(true)) => Ok(Vec::new()),
            _ => Err(error_from_value(lua, out.get(2).cloned().unwrap_or(Value::Nil))),
        },
        FiberKind::Plain => Ok(Vec::new()),
    })
}

/// A header field handed to `on_iproto_request` triggers.
#[derive(Debug, Clone)]
pub enum HeaderValue<'a> {
    /// A string (the request type's name).
    Str(&'a str),
    /// A number.
    Num(f64),
    /// A raw msgpack value (the token).
    Raw(&'a [u8]),
}

/// `box.internal.frame(level)`: the source and current line of a Lua stack frame
/// (level 1 is the caller), for the file/line 2.6 records in errors created in Lua.
fn register_frame(lua: &Lua) -> mlua::Result<()> {
    let frame = lua.create_function(|lua, level: usize| {
        Ok(lua
            .inspect_stack(level, |d| {
                let source = d.source().source.map(|s| s.into_owned());
                (source, d.current_line())
            })
            .unwrap_or((None, None)))
    })?;
    let internal = lua.globals().get::<Table>("box")?.get::<Table>("internal")?;
    internal.set("frame", frame)
}

/// Finds the function a CALL names.
fn resolve(lua: &Lua, name: &str) -> mlua::Result<Option<(Value, Option<Value>)>> {
    let (path, method) = match name.rsplit_once(':') {
        Some((path, method)) => (path, Some(method)),
        None => (name, None),
    };
    let mut current = Value::Table(lua.globals());
    for part in path.split('.') {
        current = match current {
            Value::Table(t) => t.get::<Value>(part)?,
            Value::UserData(ud) => ud.get::<Value>(part).unwrap_or(Value::Nil),
            _ => return Ok(None),
        };
    }
    let (func, receiver) = match method {
        Some(m) => {
            let f = match &current {
                Value::Table(t) => t.get::<Value>(m)?,
                Value::UserData(ud) => ud.get::<Value>(m).unwrap_or(Value::Nil),
                _ => return Ok(None),
            };
            (f, Some(current))
        }
        None => (current, None),
    };
    // Anything found is called; a value that is not callable fails as in 2.6
    // ("attempt to call a table value").
    Ok((!func.is_nil()).then_some((func, receiver)))
}

/// Calls under `pcall`: a Lua error becomes the Tarantool error it carries.
fn protected_call(lua: &Lua, func: &Value, args: Vec<Value>) -> mlua::Result<BoxResult<Vec<Value>>> {
    let pcall: Function = lua.globals().get("pcall")?;
    let mut all = vec![func.clone()];
    all.extend(args);
    let out: Vec<Value> = pcall.call::<MultiValue>(MultiValue::from_vec(all))?.into_iter().collect();
    let mut it = out.into_iter();
    match it.next() {
        Some(Value::Boolean(true)) => Ok(Ok(it.collect())),
        _ => Ok(Err(error_from_value(lua, it.next().unwrap_or(Value::Nil)))),
    }
}

/// Whether `t` is a `box.error` object (its metatable carries the prelude's marker).
fn is_box_error(t: &Table) -> bool {
    t.metatable().is_some_and(|mt| mt.raw_get::<bool>("__box_error").unwrap_or(false))
}

/// A raised Lua value as a Tarantool error: `box.error` objects keep their code and
/// their `prev` chain; anything else is a LuajitError with the value's text.
pub(crate) fn error_from_value(lua: &Lua, v: Value) -> BoxError {
    error_from_value_depth(lua, v, 0)
}

fn error_from_value_depth(lua: &Lua, v: Value, depth: usize) -> BoxError {
    if let Value::Table(t) = &v {
        if let (true, Ok(Some(code))) = (is_box_error(t), t.get::<Option<u32>>("code")) {
            let message: String = t.get::<Option<String>>("message").ok().flatten().unwrap_or_default();
            let mut e = BoxError::new(code, message);
            // A custom error's type is its own name; its base type tells the kind.
            let ty: Option<String> =
                t.get::<Option<String>>("base_type").ok().flatten().or_else(|| t.get("type").ok().flatten());
            e.kind = match ty.as_deref() {
                Some("AccessDeniedError") => ErrorKind::AccessDenied,
                Some("CustomError") => ErrorKind::Custom,
                Some("LuajitError") => ErrorKind::Luajit,
                Some("SystemError") => ErrorKind::System,
                Some("OutOfMemory") => ErrorKind::OutOfMemory,
                _ => ErrorKind::Client,
            };
            for k in ["object_type", "object_name", "access_type", "custom_type"] {
                if let Ok(Some(v)) = t.get::<Option<String>>(k) {
                    e.fields.push((k, v));
                }
            }
            // Where Lua created the error (box.error.new records it, as 2.6's trace).
            if let Ok(Value::Table(trace)) = t.get::<Value>("trace") {
                if let Ok(Value::Table(frame)) = trace.raw_get::<Value>(1) {
                    if let (Ok(file), Ok(line)) = (frame.get::<String>("file"), frame.get::<u32>("line")) {
                        e.file = std::borrow::Cow::Owned(file);
                        e.line = line;
                    }
                }
            }
            if let Ok(prev @ Value::Table(_)) = t.raw_get::<Value>("prev") {
                if depth < MAX_ERROR_CHAIN {
                    e.prev = Some(Box::new(error_from_value_depth(lua, prev, depth + 1)));
                }
            }
            return e;
        }
    }
    let message = match &v {
        Value::String(s) => s.to_string_lossy(),
        Value::Error(e) => lua_message(e),
        Value::Nil => "nil".into(),
        // Tables and other values raise as their tostring() ("table: 0x..."), as in 2.6.
        other => lua
            .globals()
            .get::<Function>("tostring")
            .and_then(|f| f.call::<mlua::LuaString>(other.clone()))
            .map_or_else(|_| other.type_name().into(), |s| s.to_string_lossy()),
    };
    let mut e = BoxError::new(code::PROC_LUA, message);
    e.kind = ErrorKind::Luajit;
    e
}

/// The longest `prev` chain carried into a reply.
const MAX_ERROR_CHAIN: usize = 64;

/// An SQL result table as 2.6's EXECUTE reply body: `{0x32: metadata, 0x30: rows}`
/// for a query, `{0x42: {0: row_count[, 1: autoincrement_ids]}}` otherwise. A
/// `double` column's integral values go as doubles, as 2.6 sends them.
fn sql_body(result: Option<&Value>) -> mlua::Result<Vec<u8>> {
    let Some(Value::Table(t)) = result else { return Err(mlua::Error::runtime("SQL returned no result")) };
    if let Some(id) = t.raw_get::<Option<u64>>("stmt_id")? {
        return prepared_body(t, id);
    }
    if t.raw_get::<bool>("unprepared")? {
        return Ok(vec![0x80]);
    }
    let mut body = Vec::new();
    if let Value::Table(metadata) = t.raw_get::<Value>("metadata")? {
        let rows: Table = t.raw_get("rows")?;
        let columns: Vec<mlua::LuaString> = metadata
            .sequence_values::<Table>()
            .map(|c| c.and_then(|c| c.raw_get("type")))
            .collect::<mlua::Result<_>>()?;
        body.extend_from_slice(&[0x82, key::METADATA]);
        name_type_pairs(&mut body, &metadata)?;
        body.push(key::DATA);
        write::array_len(&mut body, rows.raw_len() as u32);
        for row in rows.sequence_values::<Table>() {
            let row = row?;
            write::array_len(&mut body, columns.len() as u32);
            for (i, ty) in columns.iter().enumerate() {
                let v: Value = row.raw_get(i + 1)?;
                match v {
                    Value::Number(n) if &*ty.as_bytes() == b"double" => write::f64(&mut body, n),
                    #[allow(clippy::cast_precision_loss, reason = "Lua's integers are doubles to begin with")]
                    Value::Integer(n) if &*ty.as_bytes() == b"double" => write::f64(&mut body, n as f64),
                    Value::String(b) if &*ty.as_bytes() == b"varbinary" => write::bin(&mut body, &b.as_bytes()),
                    v => convert::encode(&mut body, &v)?,
                }
            }
        }
        return Ok(body);
    }
    let count: u64 = t.raw_get("row_count")?;
    let ids: Option<Table> = t.raw_get("autoincrement_ids")?;
    body.extend_from_slice(&[0x81, key::SQL_INFO]);
    body.push(if ids.is_some() { 0x82 } else { 0x81 });
    body.push(0x00);
    write::uint(&mut body, count);
    if let Some(ids) = ids {
        body.push(0x01);
        write::array_len(&mut body, ids.raw_len() as u32);
        for id in ids.sequence_values::<Value>() {
            convert::encode(&mut body, &id?)?;
        }
    }
    Ok(body)
}

/// A PREPARE reply body as 2.6's: `{0x43: id, 0x34: bind count, 0x33: [{0: name,
/// 1: type}...][, 0x32: result columns]}`.
fn prepared_body(t: &Table, id: u64) -> mlua::Result<Vec<u8>> {
    let params: Table = t.raw_get("params")?;
    let metadata: Option<Table> = t.raw_get("metadata")?;
    let mut body = vec![if metadata.is_some() { 0x84 } else { 0x83 }, key::STMT_ID];
    write::uint(&mut body, id);
    body.push(key::BIND_COUNT);
    write::uint(&mut body, params.raw_len() as u64);
    body.push(key::BIND_METADATA);
    name_type_pairs(&mut body, &params)?;
    if let Some(metadata) = metadata {
        body.push(key::METADATA);
        name_type_pairs(&mut body, &metadata)?;
    }
    Ok(body)
}

/// An array of `{name =, type =}` tables as `[{0: name, 1: type}...]`.
fn name_type_pairs(body: &mut Vec<u8>, list: &Table) -> mlua::Result<()> {
    #[allow(clippy::cast_possible_truncation, reason = "lists of columns and parameters are short")]
    write::array_len(body, list.raw_len() as u32);
    for entry in list.sequence_values::<Table>() {
        let entry = entry?;
        // With sql_full_metadata: the collation (0x02), nullability (0x03), a sequence
        // filling the column (0x04) and the expression as written (0x05), in 2.6's order.
        let collation: Option<mlua::LuaString> = entry.raw_get("collation")?;
        let nullable: Option<bool> = entry.raw_get("is_nullable")?;
        let autoincrement: Option<bool> = entry.raw_get("is_autoincrement")?;
        let span: Option<mlua::LuaString> = entry.raw_get("span")?;
        let extra = [collation.is_some(), nullable.is_some(), autoincrement.is_some(), span.is_some()];
        #[allow(clippy::cast_possible_truncation, reason = "at most six keys")]
        write::map_len(body, 2 + extra.iter().filter(|present| **present).count() as u32);
        body.push(0x00);
        write::str(body, &entry.raw_get::<mlua::LuaString>("name")?.as_bytes());
        body.push(0x01);
        write::str(body, &entry.raw_get::<mlua::LuaString>("type")?.as_bytes());
        if let Some(c) = collation {
            body.push(0x02);
            write::str(body, &c.as_bytes());
        }
        if let Some(n) = nullable {
            body.extend_from_slice(&[0x03, if n { 0xc3 } else { 0xc2 }]);
        }
        if let Some(a) = autoincrement {
            body.extend_from_slice(&[0x04, if a { 0xc3 } else { 0xc2 }]);
        }
        if let Some(text) = span {
            body.push(0x05);
            write::str(body, &text.as_bytes());
        }
    }
    Ok(())
}

/// Encodes returned values as a reply body `{0x30: [...]}`.
fn encode_results(values: &[Value], shape: Shape, options: &serializer::Options) -> BoxResult<Vec<u8>> {
    let enc = |out: &mut Vec<u8>, v: &Value| {
        convert::encode_with(out, v, options).map_err(|e| BoxError::new(code::PROC_LUA, lua_message(&e)))
    };
    if let Shape::Sql = shape {
        return sql_body(values.first()).map_err(|e| BoxError::new(code::PROC_LUA, lua_message(&e)));
    }
    if let Shape::Text = shape {
        return match values.first() {
            Some(Value::String(s)) => Ok(s.as_bytes().to_vec()),
            _ => Err(BoxError::new(code::PROC_LUA, "console.eval returned no text")),
        };
    }
    // {IPROTO_DATA: [items]}, the items encoded in place after an array32 header
    // whose count is filled in at the end (as Tarantool, always 32 bits wide).
    let mut body = vec![0x81, key::DATA];
    let header = body.len();
    write::array32_len(&mut body, 0);
    let mut count: u32 = 0;
    if matches!(shape, Shape::Call16) {
        // 1.6 shape: a list of tuples, each value encoded once and read as bytes.
        let mut tuple = |body: &mut Vec<u8>, bytes: &[u8]| {
            call16_tuple(body, bytes);
            count += 1;
        };
        let mut one = Vec::new();
        match values {
            [single] => {
                enc(&mut one, single)?;
                match call16_members(&one) {
                    Some(members) => members.iter().for_each(|m| tuple(&mut body, m)),
                    None => tuple(&mut body, &one),
                }
            }
            _ => {
                for v in values {
                    one.clear();
                    enc(&mut one, v)?;
                    tuple(&mut body, &one);
                }
            }
        }
    } else {
        for v in values {
            enc(&mut body, v)?;
            count += 1;
        }
    }
    body[header + 1..header + 5].copy_from_slice(&count.to_be_bytes());
    Ok(body)
}

/// Whether an encoded value is an array (a tuple encodes as one).
fn is_encoded_array(bytes: &[u8]) -> bool {
    matches!(bytes.first(), Some(0x90..=0x9f | 0xdc | 0xdd))
}

/// Appends one CALL_16 tuple: an encoded array as it is, anything else (a
/// scalar, a map) as a tuple of one field, as 2.6's luamp_encode_call_16.
fn call16_tuple(body: &mut Vec<u8>, bytes: &[u8]) {
    if !is_encoded_array(bytes) {
        body.push(0x91);
    }
    body.extend_from_slice(bytes);
}

/// A lone returned value's CALL_16 tuples when it is an array whose first
/// member is an array or a tuple (then each member is one, as in 2.6); `None`
/// when the value is one tuple itself.
fn call16_members(bytes: &[u8]) -> Option<Vec<&[u8]>> {
    if !is_encoded_array(bytes) {
        return None;
    }
    let mut r = Reader::new(bytes);
    let len = r.read_array_len().ok()?;
    let members = (0..len).map(|_| r.skip()).collect::<Result<Vec<_>, _>>().ok()?;
    members.first().is_some_and(|first| is_encoded_array(first)).then_some(members)
}

/// Whether a value is a `box.tuple`.
#[must_use]
pub fn is_tuple(v: &Value) -> bool {
    matches!(v, Value::UserData(ud) if ud.borrow::<LuaTuple>().is_ok())
}

/// Hands a `net.box` reply to the fiber waiting on `ticket` (it runs at the next scheduling point).
pub(crate) fn deliver_netbox(lua: &Lua, ticket: u64, reply: netbox::NetReply) {
    let deliver = || -> mlua::Result<()> {
        let f: Function = internal_fn(lua, "netbox_deliver")?;
        #[allow(clippy::cast_precision_loss, reason = "tickets stay far below 2^53")]
        let mut args = vec![Value::Number(ticket as f64)];
        let form = netbox::take_body_form(ticket);
        match reply {
            Ok(reply) => {
                args.push(Value::Boolean(true));
                args.extend(netbox::reply_values(lua, &reply, form)?);
            }
            Err(message) => {
                args.push(Value::Boolean(false));
                args.push(Value::String(lua.create_string(message)?));
            }
        }
        f.call::<()>(MultiValue::from_vec(args))
    };
    if let Err(e) = deliver() {
        tracing::warn!(error = %e, "net.box reply could not be delivered");
    }
}

/// Hands a push message to the `net.box` request waiting on `ticket`.
pub(crate) fn deliver_netbox_push(lua: &Lua, ticket: u64, body: &[u8]) {
    let deliver = || -> mlua::Result<()> {
        let f: Function = internal_fn(lua, "netbox_push")?;
        let value = if body.is_empty() { Value::Nil } else { convert::decode(lua, &mut Reader::new(body), 0)? };
        #[allow(clippy::cast_precision_loss, reason = "tickets stay far below 2^53")]
        f.call::<()>((Value::Number(ticket as f64), value))
    };
    if let Err(e) = deliver() {
        tracing::warn!(error = %e, "net.box push could not be delivered");
    }
}

/// Tells `net.box` that connection `conn` broke (its state changes, its
/// on_disconnect triggers run, it reconnects if asked to).
pub(crate) fn deliver_netbox_lost(lua: &Lua, conn: u64, reason: &str) {
    let deliver = || -> mlua::Result<()> {
        let f: Function = internal_fn(lua, "netbox_lost")?;
        #[allow(clippy::cast_precision_loss, reason = "connection ids stay far below 2^53")]
        f.call::<()>((Value::Number(conn as f64), reason))
    };
    if let Err(e) = deliver() {
        tracing::warn!(error = %e, "a broken net.box connection could not be reported");
    }
}

/// Hands a socket read or write outcome to the fiber waiting on `ticket`.
pub(crate) fn deliver_socket(lua: &Lua, ticket: u64, reply: socket::SocketReply) {
    let deliver = || -> mlua::Result<()> {
        let f: Function = internal_fn(lua, "socket_deliver")?;
        #[allow(clippy::cast_precision_loss, reason = "tickets stay far below 2^53")]
        let ticket = Value::Number(ticket as f64);
        match reply {
            Ok(data) => f.call::<()>((ticket, true, lua.create_string(&data)?)),
            Err((errno, text)) => f.call::<()>((ticket, false, errno, text)),
        }
    };
    if let Err(e) = deliver() {
        tracing::warn!(error = %e, "socket outcome could not be delivered");
    }
}

/// Starts the handler fiber of the `socket.tcp_server` that accepted `conn`.
pub(crate) fn start_accepted(lua: &Lua, conn: socket::Accepted) {
    let start = || -> mlua::Result<()> {
        let listener = conn.listener;
        let (sock, from) = socket::accepted(lua, conn)?;
        let f: Function = internal_fn(lua, "socket_accepted")?;
        f.call::<()>((listener, sock, from))
    };
    if let Err(e) = start() {
        tracing::warn!(error = %e, "an accepted socket could not be handed to its handler");
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::access::user_id;
    use crate::idempotency::Settings;

    #[test]
    fn the_engine_is_lent_for_one_entry_and_op_is_unbound_after_it() {
        let rt = LuaRuntime::new().expect("a runtime");
        let mut engine = Box::new(Engine::bootstrap(&::uuid::Uuid::nil()).expect("an engine"));
        let mut window = Box::new(Window::new(Settings::default(), 0, &engine));
        let caller = Caller {
            session_user: None,
            creds: engine.credentials(user_id::ADMIN),
            session_id: 1,
            sync: 0,
            instance_uuid: Rc::from(""),
            cfg: Rc::new(Vec::new()),
            control: None,
        };
        let run = |engine: &mut Box<Engine>, window: &mut Box<Window>, code: &[u8]| {
            let mut host = Host { engine, window, ticket: None };
            match rt.eval(&mut host, &caller, code, &[0x90], false).0 {
                Step::Done(r) => r,
                Step::Parked(fid) => panic!("parked in fiber {fid}"),
            }
        };
        // The reply body {IPROTO_DATA: [true]}.
        let true_reply = [0x81, 0x30, 0xdd, 0, 0, 0, 1, 0xc3];
        let keep = b"saved_op = box.internal.op; return box.space._space:get{280} ~= nil";
        assert_eq!(run(&mut engine, &mut window, keep).expect("the eval"), true_reply);
        assert!(engine.space(280).is_ok(), "the real engine is back");
        assert!(rt.lua.load("return box.internal.op == nil").eval::<bool>().expect("a bool"));
        let (ok, err): (bool, String) = rt
            .lua
            .load("local ok, e = pcall(saved_op, 'schema_version'); return ok, tostring(e)")
            .eval()
            .expect("pcall");
        assert!(!ok && err.contains("no engine bound"), "a kept op refuses outside an entry: {err}");
        // An entry that fails gives the engine back too, and the next one sees it.
        assert!(run(&mut engine, &mut window, b"error('boom')").is_err());
        assert!(engine.space(280).is_ok());
        let again = b"return box.space._space:get{280} ~= nil";
        assert_eq!(run(&mut engine, &mut window, again).expect("the eval"), true_reply);
    }
}
