//! Script mode: `oncebox app.lua [args]`, or `tarantool app.lua` through a symlink.
//!
//! The script runs on the TX thread as a Lua coroutine. Its first `box.cfg{...}`
//! yields to this driver, which opens the data directory (`memtx_dir`, else
//! `work_dir`, else the current directory, plus `/oncebox_data`), recovers the
//! engine, asks the main thread to listen on `listen`, and resumes the script
//! with `box` bound to the engine. When the script ends, oncebox keeps serving if
//! `box.cfg` set `listen`, and exits otherwise, as Tarantool does.

use std::path::PathBuf;

use mlua::{Table, Value};
use tokio::sync::mpsc::{UnboundedReceiver, UnboundedSender};

use crate::executor::{Control, Executor, TxMessage};
use crate::idempotency::{Mode, Settings, Window};
use crate::lua::LuaRuntime;
use crate::storage::datadir::DataDir;
use crate::storage::fjall_store::FjallStore;
use crate::storage::WalMode;
use crate::upstreams::Sources;

/// What the script thread tells the main thread.
#[derive(Debug)]
pub enum ScriptEvent {
    /// The script finished; `code` is the exit status if nothing is served.
    Done {
        /// 0 for success, 1 for a script error.
        code: i32,
        /// Whether a listener is open, so the process keeps serving after a successful script.
        serving: bool,
    },
}

/// The options the first `box.cfg` call gave.
#[derive(Debug, Clone, Default)]
struct BootCfg {
    listen: Option<String>,
    dir: PathBuf,
    wal_mode: Option<WalMode>,
    idempotency: Settings,
    identity: crate::storage::recovery::Identity,
    values: Vec<(String, String)>,
    /// `work_dir`: the directory the process moves to first, as 2.6's does
    /// (relative `memtx_dir`, `wal_dir` and `log` paths are then under it).
    work_dir: Option<PathBuf>,
    /// `wal_dir`, which must exist as in 2.6 (the log lives in `memtx_dir`).
    wal_dir: Option<PathBuf>,
    /// `read_only`: such an instance may not bootstrap a new data directory.
    read_only: bool,
    /// `log`: where log lines go (see [`crate::log_sink::Target`]).
    log: Option<String>,
    /// `pid_file`: written (and locked) before the data directory is opened.
    pid_file: Option<PathBuf>,
    /// `background`: the instance runs in the background (see [`crate::daemon`]).
    background: bool,
    /// `memtx_max_tuple_size`: a recovered tuple larger than it stops the start, as in 2.6.
    max_tuple_size: Option<usize>,
    /// `replication` and its timeouts: the sources the first `box.cfg` waits for.
    sources: Sources,
}

/// A size box.cfg checked already (a number of bytes).
#[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss, reason = "box.cfg checked the range")]
fn tuple_size(n: f64) -> usize {
    n.max(0.0) as usize
}

fn read_cfg(opts: &Table) -> Result<BootCfg, String> {
    let mut cfg = BootCfg { dir: PathBuf::from("."), ..BootCfg::default() };
    let text = |v: Value| -> Option<String> {
        match v {
            Value::String(s) => Some(s.to_string_lossy()),
            Value::Integer(i) => Some(i.to_string()),
            Value::Number(n) => Some(n.to_string()),
            Value::Boolean(b) => Some(b.to_string()),
            _ => None,
        }
    };
    for pair in opts.pairs::<String, Value>() {
        let (k, v) = pair.map_err(|e| e.to_string())?;
        if k == "replication" {
            // A URI or a list of them (box.cfg checked them already).
            cfg.sources.uris = match v {
                Value::Table(list) => list.sequence_values::<Value>().filter_map(|u| text(u.ok()?)).collect(),
                other => text(other).into_iter().collect(),
            };
            continue;
        }
        let Some(value) = text(v) else { continue };
        match k.as_str() {
            "listen" => cfg.listen = Some(crate::config::normalize_listen(&value)),
            "work_dir" => cfg.work_dir = Some(PathBuf::from(&value)),
            "wal_dir" => cfg.wal_dir = Some(PathBuf::from(&value)),
            "read_only" => cfg.read_only = value == "true",
            "log" => cfg.log = Some(value.clone()),
            "pid_file" => cfg.pid_file = Some(PathBuf::from(&value)),
            "background" => cfg.background = value == "true",
            "memtx_max_tuple_size" => cfg.max_tuple_size = value.parse::<f64>().ok().map(tuple_size),
            "memtx_dir" => cfg.dir = PathBuf::from(&value),
            "wal_mode" => {
                cfg.wal_mode = Some(WalMode::parse(&value).ok_or_else(|| {
                    format!("Incorrect value for option 'wal_mode': expected none, write or fsync, got '{value}'")
                })?);
            }
            "instance_uuid" | "replicaset_uuid" => {
                let parsed =
                    uuid::Uuid::parse_str(&value).map_err(|_| format!("Incorrect value for option '{k}': {value}"))?;
                if k == "instance_uuid" {
                    cfg.identity.instance = Some(parsed);
                } else {
                    cfg.identity.replicaset = Some(parsed);
                }
            }
            "replication_connect_timeout" | "replication_timeout" => {
                let seconds = value.parse::<f64>().ok().filter(|s| s.is_finite() && *s >= 0.0);
                let d = std::time::Duration::from_secs_f64(seconds.unwrap_or(0.0));
                if k == "replication_timeout" {
                    cfg.sources.retry = d;
                } else {
                    cfg.sources.connect_timeout = d;
                }
            }
            "replication_connect_quorum" => cfg.sources.quorum = value.parse().ok(),
            "idempotency_mode" => {
                cfg.idempotency.mode = Mode::parse(&value).ok_or("Incorrect value for option 'idempotency_mode'")?;
            }
            "idempotency_lifetime" => cfg.idempotency.lifetime_s = value.parse().unwrap_or(cfg.idempotency.lifetime_s),
            "idempotency_max_count" => cfg.idempotency.max_count = value.parse().unwrap_or(cfg.idempotency.max_count),
            "idempotency_max_size" => cfg.idempotency.max_size = value.parse().unwrap_or(cfg.idempotency.max_size),
            "idempotency_max_token_size" => {
                cfg.idempotency.max_token_size = value.parse().unwrap_or(cfg.idempotency.max_token_size);
            }
            _ => {}
        }
        cfg.values.push((k, value));
    }
    Ok(cfg)
}

/// Listens on `box.cfg.listen`, if given, greeting under `uuid`. The bound
/// address goes into `values` (box.cfg.listen keeps the value given, as in 2.6;
/// box.info.listen has the bound address).
fn listen(
    cfg: &BootCfg,
    uuid: uuid::Uuid,
    control: &UnboundedSender<Control>,
    values: &mut Vec<(String, String)>,
) -> Result<(), String> {
    let Some(addr) = &cfg.listen else { return Ok(()) };
    let (reply_tx, reply_rx) = std::sync::mpsc::channel();
    let listen = Control::Listen { addr: Some(addr.clone()), instance_uuid: uuid, reply: reply_tx };
    control.send(listen).map_err(|_| "the main thread is gone".to_owned())?;
    let bound = reply_rx.recv().map_err(|_| "the main thread is gone".to_owned())??;
    values.push(("listen_bound".into(), bound));
    Ok(())
}

/// How the wait for the replication sources ended.
enum Waited {
    /// The quorum answered.
    Quorum,
    /// `replication_connect_timeout` passed first.
    Short,
    /// A stop signal came.
    Stopped,
}

/// Waits for the replication sources (see [`crate::upstreams`]) on a thread of
/// its own, answering clients as a loading instance meanwhile; the script's
/// fibers and event loop run on (a console it opened answers), as in 2.6.
fn wait_for_sources(lua: &LuaRuntime, sources: &Sources, uuid: uuid::Uuid) -> Result<Waited, String> {
    crate::server::set_loading(true);
    let waiting = {
        let sources = sources.clone();
        std::thread::Builder::new()
            .name("applier".into())
            .spawn(move || crate::upstreams::wait(&sources, uuid))
            .map_err(|e| format!("can't start the replication wait: {e}"))?
    };
    let ran = lua.run_unbound_while(|| !waiting.is_finished(), std::time::Duration::from_millis(50));
    if !matches!(ran, Ok(false)) {
        crate::upstreams::abandon();
    }
    let connected = waiting.join().map_err(|_| "the replication wait failed".to_owned())?;
    crate::server::set_loading(false);
    if ran.map_err(|e| e.message)? || crate::upstreams::abandoned() {
        return Ok(Waited::Stopped);
    }
    Ok(if connected >= sources.needed() { Waited::Quorum } else { Waited::Short })
}

/// Refuses a `memtx_dir` or `wal_dir` that is not a directory, with 2.6's words
/// (2.6 creates neither).
fn check_directories(cfg: &BootCfg) -> Result<(), String> {
    if !cfg.dir.is_dir() {
        return Err(format!("can't initialize storage: error reading directory '{}'", cfg.dir.display()));
    }
    match &cfg.wal_dir {
        Some(wal_dir) if !wal_dir.is_dir() => {
            Err(format!("can't initialize storage: Can't open path: {}", wal_dir.display()))
        }
        _ => Ok(()),
    }
}

/// Runs the script on this (TX) thread; serves afterwards if it listened.
pub fn run(
    script: &crate::config::ScriptRun,
    rx: UnboundedReceiver<TxMessage>,
    notify: &UnboundedSender<TxMessage>,
    events: &UnboundedSender<ScriptEvent>,
    control: UnboundedSender<crate::executor::Control>,
) {
    let code = match drive(script, rx, notify, events, control) {
        Ok(code) => code,
        Err(failure) if failure.on_stdout => {
            println!("{}", failure.text);
            failure.status
        }
        Err(failure) => {
            eprintln!("{}", failure.text);
            failure.status
        }
    };
    let _ = events.send(ScriptEvent::Done { code, serving: false });
}

/// Why a script stopped before `box.cfg{}` served: what to print (on stderr, or
/// on stdout as 2.6 prints a script it cannot open), the exit status.
struct Failure {
    text: String,
    status: i32,
    on_stdout: bool,
}

impl From<String> for Failure {
    fn from(text: String) -> Self {
        Self { text, status: 1, on_stdout: false }
    }
}

/// A script's own error before `box.cfg{}`, printed as tarantool 2.6 prints it.
fn fatal(lua: &LuaRuntime, e: &crate::error::BoxError) -> Failure {
    Failure::from(format!("{}\nfatal error, exiting the event loop", lua.script_error_text(e)))
}

/// A script that ended without `box.cfg`: if it left fibers, they run on with no
/// engine, and (as tarantool stays in its event loop) the process waits for a
/// signal. Should one of them call the first `box.cfg{}`, returns the coroutine
/// that boots for it (paused in `box.cfg`) and the options.
fn run_without_box(
    lua: &LuaRuntime,
    events: &UnboundedSender<ScriptEvent>,
) -> Result<Option<(mlua::Thread, mlua::Table)>, Failure> {
    if lua.fiber_count() == 0 {
        return Ok(None);
    }
    let _ = events.send(ScriptEvent::Done { code: 0, serving: true });
    lua.log_entering_event_loop();
    if let Some(boot) = lua.run_unbound_fibers().map_err(|e| e.message)? {
        if let Some(opts) = lua.resume_unbound(&boot).map_err(|e| fatal(lua, &e))? {
            return Ok(Some((boot, opts)));
        }
    }
    lua.stop_unbound();
    Ok(None)
}

/// The script's text and its name (`arg[0]`), as tarantool reads it: a file
/// it cannot open stops the start with 2.6's message, on stdout.
fn script_source(run: &crate::config::ScriptRun) -> Result<Option<crate::lua::ScriptText>, Failure> {
    use crate::config::ScriptSource;
    use std::io::Read;
    match &run.source {
        ScriptSource::File(path) => match std::fs::read(path) {
            Ok(text) => Ok(Some(crate::lua::ScriptText::file(path, text))),
            Err(e) => {
                let (_, text) = crate::lua::socket::os_error(&e);
                let text = format!("Can't open script {}: {text}", path.display());
                Err(Failure { text, status: 2, on_stdout: true })
            }
        },
        ScriptSource::Stdin { named } => {
            let mut text = Vec::new();
            std::io::stdin().read_to_end(&mut text).map_err(|e| format!("can't read the script from stdin: {e}"))?;
            Ok(Some(crate::lua::ScriptText::stdin(text, *named)))
        }
        ScriptSource::Nothing => Ok(None),
    }
}

fn drive(
    script: &crate::config::ScriptRun,
    rx: UnboundedReceiver<TxMessage>,
    notify: &UnboundedSender<TxMessage>,
    events: &UnboundedSender<ScriptEvent>,
    control: UnboundedSender<crate::executor::Control>,
) -> Result<i32, Failure> {
    let text = script_source(script)?;
    let fiber_name = text.as_ref().map_or_else(|| "main".to_owned(), |t| t.fiber_name.clone());
    let lua = LuaRuntime::new().map_err(|e| e.message)?;
    // 2.6's event loop runs before box.cfg{}: so do socket, net.box and popen waits.
    lua.set_tx_notify(notify.clone());
    lua.open_inbox(rx, notify.clone());
    let co = lua.load_script(text.as_ref(), script).map_err(|e| fatal(&lua, &e))?;
    let (co, opts) = match lua.resume_unbound(&co).map_err(|e| fatal(&lua, &e))? {
        Some(opts) => (co, opts),
        None => match run_without_box(&lua, events)? {
            Some(booting) => booting,
            None => return Ok(0),
        },
    };
    if lua.unbound_stopped() {
        // A stop signal came while the script ran up to box.cfg{}.
        lua.stop_unbound();
        return Ok(0);
    }
    let cfg = read_cfg(&opts)?;
    // As 2.6: the instance leaves the terminal first; the process that started it exits.
    if cfg.background && !crate::daemon::in_background() {
        if cfg.log.as_deref().is_none_or(str::is_empty) {
            return Err("'background' requires 'log' configuration option to be set".to_owned().into());
        }
        // The new process binds the script's listening sockets again (a console
        // for tarantoolctl): this one lets go of them while it waits for it.
        lua.close_lua_listeners();
        // (The pid file is relative to work_dir, which the new process moves to.)
        let pid_file = cfg.pid_file.as_ref().map(|p| cfg.work_dir.as_ref().map_or_else(|| p.clone(), |w| w.join(p)));
        return Err(crate::daemon::detach(pid_file.as_deref()).into());
    }
    // As 2.6: the process moves to work_dir before anything else.
    if let Some(work_dir) = &cfg.work_dir {
        std::env::set_current_dir(work_dir)
            .map_err(|e| format!("can't chdir to `{}': {}", work_dir.display(), crate::lua::native::strerror(&e)))?;
    }
    check_directories(&cfg)?;
    // As 2.6: a pid file another live instance holds stops the start.
    if let Some(pid_file) = &cfg.pid_file {
        crate::pid_file::acquire(pid_file)?;
    }
    // As 2.6: logging moves to its file first, so that the start is logged there.
    if let Some(target) = cfg.log.as_deref() {
        crate::log_sink::open(target)?;
        crate::daemon::streams_to_log();
    }
    crate::systemd::notify("STATUS=loading");
    let mode = cfg.wal_mode.unwrap_or(WalMode::Write);
    let data_path = cfg.dir.join("oncebox_data");
    if cfg.read_only && !data_path.exists() {
        return Err("can't initialize storage: Trying to bootstrap a local read-only instance as master"
            .to_owned()
            .into());
    }
    let dir = DataDir::open(&data_path).map_err(|e| e.to_string())?;
    let store = FjallStore::open(&dir.fjall_path(), &dir.rows_path(), mode).map_err(|e| e.to_string())?;
    let mut values = cfg.values.clone();
    values.push(("wal_mode".into(), mode.name().into()));
    let mut identity = cfg.identity;
    let waits = !cfg.sources.uris.is_empty();
    // As 2.6: a new instance waits for its replication sources before it bootstraps,
    // listening (as a loading instance) under the uuid it will bootstrap with.
    let waits_first = waits && dir.is_new;
    if waits_first {
        let uuid = *identity.instance.get_or_insert_with(uuid::Uuid::new_v4);
        listen(&cfg, uuid, &control, &mut values)?;
        match wait_for_sources(&lua, &cfg.sources, uuid)? {
            Waited::Quorum => {}
            Waited::Stopped => {
                lua.stop_unbound();
                return Ok(0);
            }
            Waited::Short => {
                const WHY: &str = "Incorrect value for option 'replication': failed to connect to one or more replicas";
                tracing::error!("ER_CFG: {WHY}");
                return Err(format!("can't initialize storage: {WHY}").into());
            }
        }
    }
    let crate::Booted { engine, uuid, wal, wal_thread, clock_ms, images } =
        crate::boot(&dir, store, None, notify.clone(), &identity)
            .map_err(|e| format!("can't initialize storage: {e}"))?;
    if let Some(limit) = cfg.max_tuple_size {
        engine.check_tuple_sizes(limit).map_err(|e| format!("can't initialize storage: {}", e.message))?;
    }
    if !waits_first {
        listen(&cfg, uuid, &control, &mut values)?;
        // An instance with data recovers first, then waits; short of the quorum it
        // goes on as an orphan.
        let waited = if waits { wait_for_sources(&lua, &cfg.sources, uuid)? } else { Waited::Quorum };
        match waited {
            Waited::Quorum => {}
            Waited::Short => crate::upstreams::enter_orphan_mode(cfg.sources.clone(), uuid),
            Waited::Stopped => {
                lua.stop_unbound();
                // The WAL thread ends once its sender is gone.
                drop(wal);
                if let Some(handle) = wal_thread {
                    let _ = handle.join();
                }
                return Ok(0);
            }
        }
    }
    let Some(closed) = lua.close_inbox() else { return Err("the TX channel is gone".to_owned().into()) };
    if closed.stopped {
        // A stop signal came while the engine booted: the executor stops once the
        // script's main chunk yields, as it would have seen the signal itself.
        let _ = notify.send(TxMessage::Shutdown);
    }
    crate::systemd::notify("STATUS=running");
    let window = Window::new(cfg.idempotency.clone(), clock_ms, &engine);
    let mut executor = Executor::new(engine, wal, window, lua, &uuid, values)
        .with_images(images)
        .with_control(control)
        .with_wakeups(notify.clone());
    executor.start_script(&co, &fiber_name, events.clone(), notify.clone(), cfg.listen.is_some());
    // The connections accepted while box.cfg{} waited for the replication sources.
    for message in closed.deferred {
        executor.handle(message);
    }
    let executor_code = executor.run(closed.rx);
    if let Some(handle) = wal_thread {
        let _ = handle.join();
    }
    drop(dir);
    Ok(executor_code)
}
