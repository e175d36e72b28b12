//! oncebox: a Tarantool-compatible database server that never applies a retried write twice.
//!
//! # Layout
//! - [`protocol`]: IPROTO bytes to typed requests and back; no I/O.
//! - [`server`]: sockets and connection tasks (tokio).
//! - [`executor`]: the TX thread that owns all mutable state.
//! - [`engine`]: spaces, indexes, catalogue, privileges; deterministic.
//! - [`storage`]: data directory, fjall, the WAL thread, recovery.
//! - [`error`]: Tarantool-style errors.
//! - [`config`]: command-line settings.

pub mod alarm;
#[allow(unsafe_code, reason = "a global allocator is an unsafe trait and calls C; see the module")]
pub mod allocator;
pub mod children;
pub mod config;
pub mod daemon;
pub mod decimal;
pub mod engine;
pub mod error;
pub mod executor;
pub mod id_map;
pub mod idempotency;
pub mod listeners;
pub mod log_sink;
pub mod lua;
pub mod pid_file;
#[allow(unsafe_code, reason = "a prefetch is an intrinsic, unsafe to call though it reads nothing; see the module")]
pub mod prefetch;
pub mod printf;
pub mod protocol;
pub mod script;
pub mod server;
pub mod storage;
pub mod systemd;
pub mod tarantool_xlog;
pub mod upstreams;

#[doc(hidden)]
pub mod fuzzing;

use std::sync::mpsc as std_mpsc;

use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use engine::access::user_id;
use executor::{Executor, TxMessage};
use storage::datadir::DataDir;
use storage::fjall_store::FjallStore;

type BoxedError = Box<dyn std::error::Error + Send + Sync>;

/// The TX thread's stack: Lua runs on it, fibers included (LuaJIT coroutines share
/// the C stack), and the msgpack encoder recurses once per nesting level up to
/// `encode_max_depth`. Reserved, not committed: untouched pages cost nothing.
const TX_STACK_BYTES: usize = 64 << 20;

/// Boots the engine (recovering the data directory), serves until SIGINT or
/// SIGTERM, then finishes in-flight commits and returns.
pub fn run(config: config::Config) -> Result<(), BoxedError> {
    // The directory lock is held until this function returns.
    let dir = DataDir::open(&config.data_dir)?;
    let store = FjallStore::open(&dir.fjall_path(), &dir.rows_path(), config.wal_mode).map_err(|e| {
        format!("data directory {}: its storage cannot be opened (damaged?): {e}", config.data_dir.display())
    })?;
    let (tx, rx) = tokio::sync::mpsc::unbounded_channel::<TxMessage>();
    let (ready_tx, ready_rx) = std_mpsc::channel::<Result<(uuid::Uuid, Option<std::thread::JoinHandle<()>>), String>>();
    let admin_password = config.admin_password.clone();
    let idempotency = config.idempotency.clone();
    let (ctl_tx, ctl_rx) = tokio::sync::mpsc::unbounded_channel::<executor::Control>();
    let startup_cfg = config.box_cfg_values();
    let wal_notify = tx.clone();
    let wake_notify = tx.clone();
    let tx_thread = std::thread::Builder::new().name("tx".into()).stack_size(TX_STACK_BYTES).spawn(move || {
        // The engine holds `Rc`s: it is built on, and never leaves, this thread.
        let booted = boot(&dir, store, admin_password, wal_notify, &storage::recovery::Identity::default());
        match booted {
            Ok(b) => match lua::LuaRuntime::new() {
                Ok(lua) => {
                    let window = idempotency::Window::new(idempotency, b.clock_ms, &b.engine);
                    let _ = ready_tx.send(Ok((b.uuid, b.wal_thread)));
                    Executor::new(b.engine, b.wal, window, lua, &b.uuid, startup_cfg)
                        .with_images(b.images)
                        .with_control(ctl_tx)
                        .with_wakeups(wake_notify)
                        .run(rx);
                }
                Err(e) => {
                    let _ = ready_tx.send(Err(format!("Lua runtime: {e}")));
                }
            },
            Err(e) => {
                let _ = ready_tx.send(Err(e));
            }
        }
        drop(dir);
    })?;
    let (instance_uuid, wal_thread) = ready_rx.recv().map_err(|_| "the TX thread did not start")??;

    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(config.net_threads)
        .thread_name("net")
        .enable_all()
        .build()?;
    let mut signals = StopSignals::listen(&runtime)?;
    let stop = CancellationToken::new();
    let tracker = TaskTracker::new();
    let served: Result<(), BoxedError> = runtime.block_on(async {
        let listener = server::listen_tcp(&config.listen).await?;
        let addr = listener.local_addr()?;
        tracing::info!(%addr, wal_mode = config.wal_mode.name(), "listening");
        // A machine-readable line for scripts that start oncebox on port 0.
        println!("oncebox listening on {addr}");
        let server_config = server::ServerConfig {
            instance_uuid,
            max_packet_size: config.max_packet_size,
            max_connections: config.max_connections,
        };
        let ctx = listeners::NetContext { tx: tx.clone(), stop: stop.clone(), tracker: tracker.clone() };
        listeners::start_tick(&ctx);
        // The command-line listener stays; `box.cfg{listen}` from Lua adds one.
        tokio::spawn(listeners::control_loop(ctl_rx, ctx, None));
        let serve = server::serve(listener, tx.clone(), server_config, stop.clone(), tracker.clone());
        tokio::pin!(serve);
        tokio::select! {
            r = &mut serve => r?,
            () = signals.recv() => tracing::info!("signal received, shutting down"),
        }
        stop.cancel();
        let _ = tx.send(TxMessage::Shutdown);
        drop(tx);
        Ok(())
    });
    served?;
    // The TX thread finishes in-flight commits, then drops the WAL sender; the WAL
    // thread makes a last checkpoint.
    let threads = std::iter::once(tx_thread).chain(wal_thread).collect();
    if let Err(e) = await_threads(&runtime, threads, &mut signals) {
        runtime.shutdown_background();
        return Err(e);
    }
    // Connection writers drain the last replies, then end.
    tracker.close();
    runtime.block_on(async {
        let _ = tokio::time::timeout(std::time::Duration::from_secs(5), tracker.wait()).await;
    });
    runtime.shutdown_background();
    tracing::info!("stopped");
    Ok(())
}

/// What [`boot`] made on the TX thread.
pub(crate) struct Booted {
    pub engine: engine::Engine,
    pub uuid: uuid::Uuid,
    /// The WAL thread's channel and the thread (none under `wal_mode = 'none'`).
    pub wal: Option<storage::wal::WalSender>,
    pub wal_thread: Option<std::thread::JoinHandle<()>>,
    /// The service clock recovered, milliseconds.
    pub clock_ms: u64,
    /// Under `wal_mode = 'none'`: where `box.snapshot()` saves the state.
    pub images: Option<storage::image::Images>,
}

/// Builds the engine on the TX thread and starts the WAL thread (under
/// `wal_mode = 'none'`, keeps the store for `box.snapshot()` instead).
pub(crate) fn boot(
    dir: &DataDir,
    store: FjallStore,
    admin_password: Option<String>,
    notify: tokio::sync::mpsc::UnboundedSender<TxMessage>,
    wanted: &storage::recovery::Identity,
) -> Result<Booted, String> {
    storage::backup::set_data_dir(dir.root());
    let (mut engine, uuid) = storage::recovery::open_engine(dir, &store, wanted).map_err(|e| e.to_string())?;
    if let Some(pw) = admin_password {
        engine.set_password(user_id::ADMIN, pw.as_bytes()).map_err(|e| e.to_string())?;
        let changes = engine.take_changes();
        if store.logs_commits() {
            store.write(executor::row_ops(&changes)).map_err(|e| e.to_string())?;
        }
    }
    let clock_ms = store.service_clock().map_err(|e| e.to_string())?;
    if !store.logs_commits() {
        engine.freeze_vinyl();
        let images = Some(storage::image::Images::new(store, &engine));
        return Ok(Booted { engine, uuid, wal: None, wal_thread: None, clock_ms, images });
    }
    let (wal_tx, wal_rx) = storage::wal::channel();
    let handle = storage::wal::spawn(store, wal_rx, move |done| {
        let _ = notify.send(TxMessage::WalDone(done));
    })
    .map_err(|e| e.to_string())?;
    Ok(Booted { engine, uuid, wal: Some(wal_tx), wal_thread: Some(handle), clock_ms, images: None })
}

/// How long a stop waits for in-flight commits and the last checkpoint before it
/// gives up. Whatever was acknowledged is durable in the log already and is
/// applied at the next start; the wait only spares that start the work.
const SHUTDOWN_DEADLINE: std::time::Duration = std::time::Duration::from_secs(60);

/// [`SHUTDOWN_DEADLINE`], or (for tests) `ONCEBOX_SHUTDOWN_DEADLINE_MS`.
fn shutdown_deadline() -> std::time::Duration {
    std::env::var("ONCEBOX_SHUTDOWN_DEADLINE_MS")
        .ok()
        .and_then(|ms| ms.parse().ok())
        .map_or(SHUTDOWN_DEADLINE, std::time::Duration::from_millis)
}

/// Waits for `threads` to end: an error when they have not within the shutdown
/// deadline, or when a second SIGINT or SIGTERM comes first (a stop that hangs,
/// say on a disk gone bad, never needs kill -9).
fn await_threads(
    runtime: &tokio::runtime::Runtime,
    threads: Vec<std::thread::JoinHandle<()>>,
    signals: &mut StopSignals,
) -> Result<(), BoxedError> {
    let deadline = shutdown_deadline();
    let waited = runtime.block_on(async {
        let ended = async {
            while !threads.iter().all(std::thread::JoinHandle::is_finished) {
                tokio::time::sleep(std::time::Duration::from_millis(10)).await;
            }
        };
        tokio::select! {
            () = ended => Ok(()),
            () = tokio::time::sleep(deadline) => Err(format!(
                "the stop did not finish within {} ms (a commit or the last checkpoint is stuck)",
                deadline.as_millis()
            )),
            () = signals.recv() => Err("second stop signal: not waiting for in-flight commits".to_string()),
        }
    });
    match waited {
        Ok(()) => {
            for t in threads {
                let _ = t.join();
            }
            Ok(())
        }
        Err(why) => {
            let e = format!("{why}; exiting: acknowledged writes are in the log and are applied at the next start");
            tracing::error!("{e}");
            Err(e.into())
        }
    }
}

/// SIGINT and SIGTERM, listened for from the moment this is made: one that comes
/// while nothing awaits it (the loop busy with another event) is kept for the
/// next [`Self::recv`], not lost.
struct StopSignals {
    interrupt: tokio::signal::unix::Signal,
    terminate: tokio::signal::unix::Signal,
}

impl StopSignals {
    /// Starts listening (in `runtime`'s signal driver).
    fn listen(runtime: &tokio::runtime::Runtime) -> std::io::Result<Self> {
        use tokio::signal::unix::{signal, SignalKind};
        let _in_runtime = runtime.enter();
        Ok(Self { interrupt: signal(SignalKind::interrupt())?, terminate: signal(SignalKind::terminate())? })
    }

    /// Resolves on the next SIGINT or SIGTERM (or one that came since the last).
    async fn recv(&mut self) {
        tokio::select! {
            _ = self.interrupt.recv() => {}
            _ = self.terminate.recv() => {}
        }
    }
}

/// Script mode: runs `script` (see [`script`]); serves while the script's `box.cfg`
/// listens, until SIGINT or SIGTERM. Returns the process exit status.
pub fn run_script(run: config::ScriptRun) -> Result<i32, BoxedError> {
    let (tx, rx) = tokio::sync::mpsc::unbounded_channel::<TxMessage>();
    let (ev_tx, mut ev_rx) = tokio::sync::mpsc::unbounded_channel::<script::ScriptEvent>();
    let notify = tx.clone();
    let (ctl_tx, ctl_rx) = tokio::sync::mpsc::unbounded_channel::<executor::Control>();
    let runtime =
        tokio::runtime::Builder::new_multi_thread().worker_threads(1).thread_name("net").enable_all().build()?;
    // Before the script runs: a stop signal at any point of it is seen.
    let mut signals = StopSignals::listen(&runtime)?;
    let tx_thread = std::thread::Builder::new()
        .name("tx".into())
        .stack_size(TX_STACK_BYTES)
        .spawn(move || script::run(&run, rx, &notify, &ev_tx, ctl_tx))?;
    let stop = CancellationToken::new();
    let tracker = TaskTracker::new();
    let code = runtime.block_on(async {
        let ctx = listeners::NetContext { tx: tx.clone(), stop: stop.clone(), tracker: tracker.clone() };
        tokio::spawn(listeners::control_loop(ctl_rx, ctx, None));
        loop {
            tokio::select! {
                ev = ev_rx.recv() => match ev {
                    // A failed script stops the process even if a listener is open.
                    Some(script::ScriptEvent::Done { code, serving }) if code != 0 || !serving => return code,
                    Some(script::ScriptEvent::Done { .. }) => {}
                    None => return 0,
                },
                () = signals.recv() => {
                    tracing::info!("signal received, shutting down");
                    // The first box.cfg{} may be waiting for its replication sources.
                    upstreams::abandon();
                    return 0;
                }
            }
        }
    });
    stop.cancel();
    let _ = tx.send(TxMessage::Shutdown);
    drop(tx);
    if let Err(e) = await_threads(&runtime, vec![tx_thread], &mut signals) {
        runtime.shutdown_background();
        return Err(e);
    }
    tracker.close();
    runtime.block_on(async {
        let _ = tokio::time::timeout(std::time::Duration::from_secs(5), tracker.wait()).await;
    });
    runtime.shutdown_background();
    Ok(code)
}
