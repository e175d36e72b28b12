//! The TX thread: the single owner of the engine, like Tarantool's tx thread.
//!
//! Network tasks send it [`TxMessage`]s; it runs requests one at a time in
//! arrival order, so the engine needs no locks. Reads are answered from memory
//! at once. A write is applied in memory and its changes join the current
//! commit group; the group goes to the WAL thread once the message that carried
//! the write (one read of a connection) is handled, and the write's reply is
//! released only when the WAL thread reports the group durable. If the WAL
//! fails, every write not yet durable is undone in memory, answered with
//! ER_WAL_IO, and later writes are refused until restart; reads keep working.

use std::collections::VecDeque;
use std::rc::Rc;

use bytes::Bytes;
use tokio::sync::mpsc::{UnboundedReceiver, UnboundedSender};

use crate::alarm::Alarm;
use crate::engine::access::{user_id, Credentials};
use crate::engine::space::WriteMode;
use crate::engine::stats::OpKind;
use crate::engine::{Change, Engine};
use crate::error::{code, BoxError, BoxResult};
use crate::id_map::IdMap;
use crate::idempotency::fingerprint::Fingerprint;
use crate::idempotency::token::Token;
use crate::idempotency::{self as idem, fingerprint, Mode, NewRecord, Record, Window};
use crate::lua::{
    Called, Caller, DueFiber, FiberKind, HeaderValue, Host, LuaRuntime, Resumed, Shape, Step, TriggerArg,
};
use crate::protocol::frame::FrameError;
use crate::protocol::header::Header;
use crate::protocol::request::{Decoded, Request, Statement};
use crate::protocol::{request_type, response};
use crate::script::ScriptEvent;
use crate::storage::group;
use crate::storage::keys::row_key;
use crate::storage::wal::{OnDurable, WalDone, WalRequest, WalSender};
use crate::storage::RowOp;

/// What a connection's writer receives.
#[derive(Debug)]
pub enum Outgoing {
    /// Reply bytes to write.
    Data(Vec<u8>),
    /// Write what was sent before, then close the connection.
    Close,
}

/// Messages to the TX thread.
#[derive(Debug)]
pub enum TxMessage {
    /// A connection was accepted and greeted with `salt`.
    Connect {
        /// Connection id.
        session_id: u64,
        /// The salt sent in the greeting.
        salt: [u8; 32],
        /// Where replies go.
        out: crate::server::sink::ReplySink,
        /// The client's address as `box.session.peer()` gives it.
        peer: Option<String>,
        /// The connection's socket descriptor (`box.session.fd()`; -1 when unknown).
        fd: i32,
        /// A text console's session: admin from the start, as 2.6's.
        console: bool,
    },
    /// Packets read from one connection in one go, in arrival order.
    Requests {
        /// Connection id.
        session_id: u64,
        /// The packets.
        packets: Vec<Inbound>,
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
    /// The WAL thread finished groups up to a ticket.
    WalDone(WalDone),
    /// A second has passed: evict expired idempotency records, record the service clock.
    Tick,
    /// A fiber's sleep ended (from the alarm thread): resume the fibers that are due.
    Wake,
    /// A `net.box` reply for the fiber waiting on `ticket`.
    Netbox {
        /// The request's ticket.
        ticket: u64,
        /// Its reply, or why there is none.
        reply: crate::lua::netbox::NetReply,
    },
    /// A `box.session.push` message for the `net.box` request with `ticket`, as it comes.
    NetboxPush {
        /// The request's ticket.
        ticket: u64,
        /// The push's body.
        body: Vec<u8>,
    },
    /// A `net.box` connection broke (its peer went away, say) without `close()`.
    NetboxLost {
        /// The connection's id.
        conn: u64,
        /// Why, as 2.6 words it ("Peer closed").
        reason: String,
    },
    /// A `socket` read or write finished for the fiber waiting on `ticket`.
    Socket {
        /// The job's ticket.
        ticket: u64,
        /// What was read (nothing for a write), or errno and its text.
        reply: crate::lua::socket::SocketReply,
    },
    /// A `socket.tcp_server` accepted a connection: its handler's fiber starts.
    SocketAccepted(crate::lua::socket::Accepted),
    /// A line typed on the text console.
    Console {
        /// Connection id.
        session_id: u64,
        /// The Lua line.
        line: String,
    },
    /// A child process may have ended: reap (see [`crate::children`]).
    ChildExited,
    /// Stop: finish in-flight commits, then exit.
    Shutdown,
}

/// One packet read from a connection.
#[derive(Debug)]
#[allow(
    clippy::large_enum_variant,
    reason = "nearly every packet is a Request; boxing it would cost an allocation per request"
)]
pub enum Inbound {
    /// A request with a decoded header.
    Request {
        /// The decoded header.
        header: Header,
        /// The whole packet (header and body).
        packet: Bytes,
        /// The body, read and checked by the network thread.
        decoded: Decoded,
        /// The request's fingerprint, worked out by the network thread when the
        /// packet carries a token (see [`fingerprint::of_packet`]).
        fingerprint: Option<Fingerprint>,
    },
    /// A packet whose header could not be decoded.
    BadHeader {
        /// The sync read before the failure.
        sync: u64,
    },
}

/// Per-connection state owned by the TX thread.
struct Session {
    user_id: u32,
    salt: [u8; 32],
    out: crate::server::sink::ReplySink,
    pending: Vec<u8>,
    /// A text console session: its pushes are text (Lua formats them), sent as is.
    text: bool,
    /// A text console session that typed `\quit`: its further lines are not run,
    /// and it is closed once its replies are out.
    quitting: bool,
}

/// A reply held until its commit is durable.
struct HeldReply {
    session_id: u64,
    sync: u64,
    bytes: Vec<u8>,
}

/// A commit group sent to the WAL thread and not yet reported.
struct InFlight {
    ticket: u64,
    undo: Vec<Change>,
    /// Replies the WAL thread sends once the group is durable, as (session, sync):
    /// answered with ER_WAL_IO here if it is not.
    sent_with_group: Vec<(u64, u64)>,
    /// Replies held for the group after it was sent (a retry joining it): sent
    /// from here when it is reported durable.
    replies: Vec<HeldReply>,
}

/// A CALL/EVAL (or the script) whose fiber yielded: what to do when it ends.
struct PendingFiber {
    session_id: u64,
    sync: u64,
    kind: FiberKind,
}

/// How a script's end is reported (script mode only).
struct ScriptEnd {
    events: UnboundedSender<ScriptEvent>,
    notify: UnboundedSender<TxMessage>,
    /// Whether the first `box.cfg` gave `listen`.
    listening: bool,
}

/// How a tokened write is answered.
enum Tokened<'a> {
    /// No token, or not a write: run as usual.
    Plain,
    /// The first attempt: run the request (parsed already), then store the outcome under this token.
    Own(Token, Fingerprint, Request<'a>),
    /// Answer now with this stored reply body (status 2).
    Replay(Vec<u8>),
    /// Answer with this reply body (status 3) once the group `ticket` is durable.
    Join(u64, Vec<u8>),
}

/// Largest reply buffer kept for reuse.
const MAX_SCRATCH: usize = 64 * 1024;

/// Records evicted per tick at most (eviction runs in small steps).
const EVICTIONS_PER_TICK: usize = 1000;
/// Records evicted with a batch at most while the window is over its count or size limit.
const EVICTIONS_PER_BATCH: usize = 256;
/// Ticks between clock-only commits when nothing else is written.
const CLOCK_TICKS: u64 = 10;

/// Most fiber resumes between two looks at the message channel (fibers that keep
/// yielding never starve the network).
const MAX_RESUMES: usize = 256;

/// The script's main fiber id (`fiber.self():id()` in the script, as in 2.6).
const SCRIPT_FIBER: u64 = 103;

/// The TX thread's state.
pub struct Executor {
    /// Boxed, as the window: lending them to Lua swaps pointers.
    engine: Box<Engine>,
    sessions: IdMap<u64, Session>,
    /// Sessions with replies waiting to be flushed.
    dirty: Vec<u64>,
    /// Where commit groups go; `None` in `wal_mode = 'none'`.
    wal: Option<WalSender>,
    /// The group being built: operations, undo log and held replies.
    /// The open group's storage operations, encoded (see [`crate::storage::group`]).
    group_log: Vec<u8>,
    /// Bytes of `group_log` that write or remove `_idempotency` records.
    group_record_bytes: usize,
    group_undo: Vec<Change>,
    group_replies: Vec<HeldReply>,
    in_flight: VecDeque<InFlight>,
    next_ticket: u64,
    /// Set after a WAL failure: writes are refused until restart.
    wal_failed: Option<String>,
    shutting_down: bool,
    /// The idempotency window.
    window: Box<Window>,
    ticks: u64,
    /// The Lua VM for CALL and EVAL.
    lua: LuaRuntime,
    /// `box.info.uuid`, shared with every Lua entry's caller.
    instance_uuid: Rc<str>,
    /// Startup configuration, for `box.cfg` reads.
    cfg: Rc<Vec<(String, String)>>,
    /// Set by a Lua call whose reply must wait for an earlier commit group.
    wait_for: Option<u64>,
    /// Requests to the network side (console listeners); an `Rc`, as every Lua
    /// entry hands it on (the sender's own clone is an atomic increment).
    control: Option<Rc<UnboundedSender<Control>>>,
    /// Reused reply buffer, so answering a request does not allocate.
    scratch: Vec<u8>,
    /// CALL/EVAL fibers that yielded, by fiber id.
    pending: std::collections::HashMap<u64, PendingFiber>,
    /// Console sessions whose line runs in a fiber that yielded, with the lines typed
    /// since (run in order, each after the one before it ends).
    console_waiting: std::collections::HashMap<u64, VecDeque<String>>,
    /// Console sessions that quit, closed after the open commit group's replies.
    closing: Vec<u64>,
    /// Set by `execute` when a CALL/EVAL's fiber yielded instead of ending.
    parked: Option<u64>,
    /// Whether the request `execute` runs is a tokened one (one transaction: no yields).
    atomic: bool,
    /// Fibers are ready to run now: poll messages instead of blocking.
    fibers_ready: bool,
    /// The last batch evicted idempotency records over the limits or the lifetime:
    /// while no message waits, the loop goes on evicting instead of blocking.
    evicting: bool,
    /// Where the alarm thread sends wake-ups (the TX channel), and the thread once started.
    wake_notify: Option<UnboundedSender<TxMessage>>,
    alarm: Option<Alarm>,
    /// Script mode: how the end of the script is reported.
    script: Option<ScriptEnd>,
    /// The process exit status in script mode (1 after a script error).
    exit_code: i32,
    /// `os.exit` was called: stop once the commits are durable, then exit the process.
    exiting: bool,
    /// Whether this executor runs a script (its end, and os.exit, are reported to the main thread).
    script_mode: bool,
    /// The schema version connection readers answer PINGs with (0: they hand them to TX).
    reader_pings: u64,
    /// The session whose read this batch handled, and the read's request count:
    /// its reader is told once the replies are sent.
    read_handled: Option<(u64, usize)>,
    /// The service time records created while handling one message are dated
    /// with: read once per message, not per request (a batch takes well under a
    /// millisecond, the clock's unit).
    message_clock_ms: Option<u64>,
    /// Whether the last read brought one request only: a client waiting for each
    /// reply, whose next request the thread polls for before sleeping
    /// ([`receive_spinning`]). Pipelining clients send several per read, and then a
    /// spinning thread would take a core from the threads feeding it.
    latency_bound: bool,
    /// Bytes of commit groups sent since this thread last gave its free memory
    /// back to the system (see [`Self::release_memory_if_written`]).
    logged_since_release: usize,
}

/// Group bytes after which the TX thread, when it next finds nothing to do, gives
/// the memory it freed back to the system: the replaced tuples and undo lists of
/// a burst of writes would otherwise stay in mimalloc's heap while the server
/// idles (six million replaces in a script, then idle: RSS 192 MB before, 24 MB now).
const RELEASE_AFTER_LOGGED: usize = 16 << 20;

/// Requests from the TX thread to the network side.
#[derive(Debug)]
pub enum Control {
    /// Start a text console on `addr`; reply with the bound address (a Unix
    /// socket's path), which names it to [`Control::ConsoleClose`].
    ConsoleListen {
        /// `host:port` or a Unix socket's path.
        addr: String,
        /// A socket already listening on `addr`, to serve rather than binding one
        /// (a console Lua served before box.cfg).
        adopt: Option<std::os::fd::OwnedFd>,
        /// The outcome.
        reply: std::sync::mpsc::Sender<Result<String, String>>,
    },
    /// Stop accepting on the console bound at `bound` (its sessions go on); reply
    /// whether it was open.
    ConsoleClose {
        /// What [`Control::ConsoleListen`] replied.
        bound: String,
        /// Whether a console was closed.
        reply: std::sync::mpsc::Sender<bool>,
    },
    /// Serve the binary protocol on `addr` instead of the current address (`None`: stop listening).
    Listen {
        /// `host:port` or a unix socket path.
        addr: Option<String>,
        /// Shown in greetings.
        instance_uuid: uuid::Uuid,
        /// The bound address, or why binding failed.
        reply: std::sync::mpsc::Sender<Result<String, String>>,
    },
}

impl Executor {
    /// An executor over `engine`; commits go to `wal` (or nowhere when `None`).
    #[must_use]
    pub fn new(
        engine: Engine,
        wal: Option<WalSender>,
        window: Window,
        lua: LuaRuntime,
        uuid: &uuid::Uuid,
        cfg: Vec<(String, String)>,
    ) -> Self {
        let mut engine = engine;
        engine.set_service_clock(window.clock.clone());
        // The Lua runtime computes functional indexes' keys: they can be built now.
        engine.build_func_indexes();
        Self {
            window: Box::new(window),
            ticks: 0,
            lua,
            instance_uuid: uuid.hyphenated().to_string().into(),
            cfg: Rc::new(cfg),
            wait_for: None,
            control: None,
            scratch: Vec::with_capacity(4096),
            pending: std::collections::HashMap::new(),
            console_waiting: std::collections::HashMap::new(),
            closing: Vec::new(),
            parked: None,
            atomic: false,
            fibers_ready: false,
            evicting: false,
            wake_notify: None,
            alarm: None,
            script: None,
            exit_code: 0,
            exiting: false,
            script_mode: false,
            reader_pings: 0,
            read_handled: None,
            message_clock_ms: None,
            latency_bound: false,
            logged_since_release: 0,
            engine: Box::new(engine),
            sessions: IdMap::default(),
            dirty: Vec::new(),
            wal,
            group_log: Vec::new(),
            group_record_bytes: 0,
            group_undo: Vec::new(),
            group_replies: Vec::new(),
            in_flight: VecDeque::new(),
            next_ticket: 1,
            wal_failed: None,
            shutting_down: false,
        }
    }

    /// Whether Lua opened a listener (a console, or the binary port by `box.cfg{listen}`).
    #[must_use]
    pub fn is_serving(&self) -> bool {
        self.lua.is_serving()
    }

    /// Under `wal_mode = 'none'`: where `box.snapshot()` saves the state.
    #[must_use]
    pub fn with_images(self, images: Option<crate::storage::image::Images>) -> Self {
        if let Some(images) = images {
            self.lua.set_images(images);
        }
        self
    }

    /// Lets Lua ask the network side for console listeners.
    #[must_use]
    pub fn with_control(mut self, control: UnboundedSender<Control>) -> Self {
        self.control = Some(Rc::new(control));
        self
    }

    /// Lets sleeping fibers wake the TX thread through `notify` (its own channel).
    #[must_use]
    pub fn with_wakeups(mut self, notify: UnboundedSender<TxMessage>) -> Self {
        self.lua.set_tx_notify(notify.clone());
        self.wake_notify = Some(notify);
        self
    }

    /// The process exit status in script mode: 1 once the script failed.
    #[must_use]
    pub fn exit_code(&self) -> i32 {
        self.exit_code
    }

    /// Runs the rest of a script (after its first `box.cfg`) as admin, as the main
    /// fiber: until it ends, or until it first yields (then the server runs while it
    /// sleeps). Its end is reported through `events`; with nothing to serve and no
    /// other fiber alive, the server then stops (`notify` gets `Shutdown`).
    pub fn start_script(
        &mut self,
        co: &mlua::Thread,
        name: &str,
        events: UnboundedSender<ScriptEvent>,
        notify: UnboundedSender<TxMessage>,
        listening: bool,
    ) {
        self.script = Some(ScriptEnd { events, notify, listening });
        self.script_mode = true;
        let caller = self.caller(self.creds(user_id::ADMIN), crate::server::SERVER_SESSION_ID);
        let mut host = Host {
            engine: &mut self.engine,
            window: &mut self.window,
            ticket: self.wal.as_ref().map(|_| self.next_ticket),
        };
        let resumed = self.lua.start_script(&mut host, &caller, co, name);
        self.commit_changes();
        match resumed {
            Resumed::Ended(result) => self.script_ended(result),
            Resumed::Waiting => {
                self.pending.insert(
                    SCRIPT_FIBER,
                    PendingFiber { session_id: crate::server::SERVER_SESSION_ID, sync: 0, kind: FiberKind::Script },
                );
            }
        }
        self.end_batch();
    }

    /// The script's main fiber ended: report it, and stop if nothing is left to serve.
    fn script_ended(&mut self, result: BoxResult<Vec<u8>>) {
        let Some(script) = self.script.take() else { return };
        if let Err(e) = &result {
            self.lua.log_script_failure(e);
            self.exit_code = 1;
        }
        let serving = script.listening || self.is_serving();
        if result.is_err() || serving || self.lua.fiber_count() > 0 {
            // As tarantool: a script that listens, or left fibers running, keeps the process up.
            if result.is_ok() {
                self.lua.log_entering_event_loop();
            }
            let _ = script.events.send(ScriptEvent::Done { code: self.exit_code, serving: true });
        } else {
            let _ = script.notify.send(TxMessage::Shutdown);
        }
    }

    /// Puts the engine's pending changes into the open commit group (committed
    /// statements: a fiber's work before it yields, a script's, a trigger's).
    fn commit_changes(&mut self) {
        let changes = self.engine.take_changes();
        self.window.note_committed(&self.engine, &changes);
        self.join_group(changes);
    }

    /// Puts committed changes into the open commit group.
    fn join_group(&mut self, changes: Vec<Change>) {
        if self.wal.is_some() {
            log_changes(&mut self.group_log, &mut self.group_record_bytes, &changes);
            self.group_undo.extend(changes);
        }
    }

    /// Resumes the fibers that are due, a bounded number, and answers the CALL/EVAL
    /// requests whose fibers ended. Then asks for a wake-up at the next sleeper's time.
    fn run_fibers(&mut self) {
        self.fibers_ready = false;
        if self.lua.fiber_count() == 0 {
            return;
        }
        for _ in 0..MAX_RESUMES {
            let Some(due) = self.lua.next_fiber() else { break };
            self.resume_fiber(due);
        }
        match self.lua.fiber_delay() {
            Some(delay) if delay <= 0.0 => self.fibers_ready = true,
            Some(delay) => self.set_alarm(delay),
            None => {}
        }
    }

    fn set_alarm(&mut self, delay: f64) {
        if self.alarm.is_none() {
            let Some(notify) = self.wake_notify.clone() else { return };
            match Alarm::spawn(notify) {
                Ok(alarm) => self.alarm = Some(alarm),
                Err(e) => {
                    tracing::error!(error = %e, "cannot start the alarm thread; sleeping fibers wake on the next request");
                    return;
                }
            }
        }
        let at = std::time::Instant::now() + std::time::Duration::from_secs_f64(delay.min(86_400.0));
        if let Some(alarm) = self.alarm.as_mut() {
            alarm.set(at);
        }
    }

    fn resume_fiber(&mut self, due: DueFiber) {
        let kind = self.pending.get(&due.fid).map_or(FiberKind::Plain, |p| p.kind);
        let user = due.user_id.unwrap_or(user_id::ADMIN);
        let caller = self.caller(self.creds(user), due.session_id);
        let mut host = Host {
            engine: &mut self.engine,
            window: &mut self.window,
            ticket: self.wal.as_ref().map(|_| self.next_ticket),
        };
        // A joined token's commit group (`_wait`) is older than the open group the reply joins.
        let (resumed, _wait) = self.lua.resume_fiber(&mut host, &caller, due.fid, kind);
        self.commit_changes();
        let sync = self.pending.get(&due.fid).map_or(0, |p| p.sync);
        self.send_pushes(due.session_id, sync);
        let Resumed::Ended(result) = resumed else { return };
        let Some(pending) = self.pending.remove(&due.fid) else { return };
        match pending.kind {
            FiberKind::Script => self.script_ended(result),
            FiberKind::Plain => {}
            FiberKind::Request(Shape::Text) => {
                self.answer_console(pending.session_id, result);
                self.console_next(pending.session_id);
            }
            FiberKind::Request(_) => self.answer_fiber(&pending, result),
        }
    }

    /// Answers a CALL/EVAL whose fiber ended; the reply waits until everything it
    /// wrote is durable (the open group is the newest).
    fn answer_fiber(&mut self, pending: &PendingFiber, result: BoxResult<Vec<u8>>) {
        let sv = self.engine.schema_version();
        let mut bytes = Vec::new();
        match result {
            Ok(body) => response::ok_raw_body(&mut bytes, pending.sync, sv, &body),
            Err(e) => response::error(&mut bytes, pending.sync, sv, &e),
        }
        let reply = HeldReply { session_id: pending.session_id, sync: pending.sync, bytes };
        if self.wal.is_some() {
            self.group_replies.push(reply);
        } else {
            self.deliver(reply);
        }
    }

    /// Gives the sessions the users `box.session.su(user)` set for them.
    fn apply_session_users(&mut self) {
        for (session_id, user) in self.lua.take_session_users() {
            if let Some(s) = self.sessions.get_mut(&session_id) {
                s.user_id = user;
            }
        }
    }

    /// Sends what `box.session.push` queued in a fiber's run, at once, with the sync of its request.
    fn send_pushes(&mut self, session_id: u64, sync: u64) {
        let pushes = self.lua.take_pushes();
        if pushes.is_empty() {
            return;
        }
        let sv = self.engine.schema_version();
        let Some(s) = self.sessions.get_mut(&session_id) else { return };
        for item in &pushes {
            if s.text {
                // The console's text of the value (a msgpack string).
                let mut r = crate::protocol::msgpack::Reader::new(item);
                if let Ok(text) = r.read_str() {
                    s.pending.extend_from_slice(text);
                }
            } else {
                response::chunk(&mut s.pending, sync, sv, item);
            }
        }
        // Out now: the request's reply may leave from the WAL thread once its
        // group is durable, and must not overtake its pushes.
        let data = std::mem::take(&mut s.pending);
        if let Some(buf) = s.out.send(data) {
            if buf.capacity() <= MAX_SCRATCH {
                s.pending = buf;
            }
        }
    }

    /// Runs until shutdown completes or every sender is gone; returns the exit status
    /// (script mode: 1 if the script failed).
    pub fn run(mut self, mut rx: UnboundedReceiver<TxMessage>) -> i32 {
        // Fibers a script left sleeping need their wake-up before the first message.
        self.run_fibers();
        self.end_batch();
        // Stops once shutting down (a signal, the script's end, os.exit) with nothing in flight.
        while !(self.shutting_down && self.in_flight.is_empty()) {
            // Fibers ready to run, or a backlog of records to evict: look for a
            // message, and go on without one.
            let first = if self.fibers_ready || self.evicting {
                match rx.try_recv() {
                    Ok(msg) => Some(msg),
                    Err(tokio::sync::mpsc::error::TryRecvError::Empty) => None,
                    Err(tokio::sync::mpsc::error::TryRecvError::Disconnected) => break,
                }
            } else {
                let received = if self.latency_bound {
                    receive_spinning(&mut rx)
                } else {
                    match rx.try_recv() {
                        Ok(msg) => Some(msg),
                        Err(tokio::sync::mpsc::error::TryRecvError::Disconnected) => None,
                        Err(tokio::sync::mpsc::error::TryRecvError::Empty) => {
                            self.release_memory_if_written();
                            rx.blocking_recv()
                        }
                    }
                };
                match received {
                    Some(msg) => Some(msg),
                    None => break,
                }
            };
            // Each message is a batch of its own: its commit group goes to the WAL and
            // its replies (or those a WAL report released) go out before the next
            // message is looked at. Gathering every queued message first made the
            // threads take turns: the WAL and the client waited while TX worked
            // through the queue (pipelined updates 1.5-1.8 us of idle cores per
            // request against 1.1-1.2 this way; bench/cpu_per_op.py).
            // An iteration of the event loop: fiber.time() and fiber.clock() move on.
            crate::lua::next_loop_tick();
            if let Some(msg) = first {
                self.handle(msg);
            }
            self.run_fibers();
            self.end_batch();
        }
        // Dropping the WAL sender lets the WAL thread sync and exit.
        tracing::info!("TX thread stopped");
        if self.exiting && !self.script_mode {
            // Server mode: nothing else ends the process for os.exit.
            let _ = std::io::Write::flush(&mut std::io::stdout());
            std::process::exit(self.exit_code);
        }
        self.exit_code
    }

    /// Notes an `os.exit` from the Lua just run: writes are refused from now on, and
    /// the loop ends once what was written is durable.
    fn check_exit(&mut self) {
        if let Some(code) = self.lua.take_exit() {
            tracing::info!(code, "os.exit called: finishing in-flight commits");
            self.exit_code = code;
            self.exiting = true;
            self.shutting_down = true;
        }
    }

    /// Nothing to do: after enough writes, the memory this thread freed goes back
    /// to the system before it sleeps ([`RELEASE_AFTER_LOGGED`]).
    fn release_memory_if_written(&mut self) {
        if self.logged_since_release >= RELEASE_AFTER_LOGGED {
            self.logged_since_release = 0;
            crate::allocator::release_free_memory();
        }
    }

    /// Sends the open commit group and flushes replies.
    fn end_batch(&mut self) {
        self.check_exit();
        self.evict_over_limits();
        self.send_group();
        // Before any reply of this batch goes out: a client that saw a trigger set
        // or a schema change has its next PINGs answered accordingly.
        self.publish_reader_pings();
        for id in self.dirty.drain(..) {
            if let Some(s) = self.sessions.get_mut(&id) {
                if !s.pending.is_empty() {
                    let data = std::mem::take(&mut s.pending);
                    if let Some(buf) = s.out.send(data) {
                        // Sent at once: the buffer serves the next batch (kept if not too big).
                        if buf.capacity() <= MAX_SCRATCH {
                            s.pending = buf;
                        }
                    }
                }
            }
        }
        if let Some((id, requests)) = self.read_handled.take() {
            if let Some(s) = self.sessions.get(&id) {
                s.out.read_answered(requests);
            }
        }
    }

    /// The schema version readers may answer PINGs with: none (0) while an
    /// `on_iproto_request` trigger must see every request.
    fn reader_ping_version(&self) -> u64 {
        if self.lua.has_iproto_triggers() {
            0
        } else {
            self.engine.schema_version()
        }
    }

    /// Tells every session's reader how to answer PINGs, when that changed.
    fn publish_reader_pings(&mut self) {
        let version = self.reader_ping_version();
        if version != self.reader_pings {
            self.reader_pings = version;
            for s in self.sessions.values() {
                s.out.allow_reader_pings(version);
            }
        }
    }

    fn send_group(&mut self) {
        // (Without a WAL, `wal_mode = 'none'`, there is nothing to sync.)
        let snapshot = self.lua.take_snapshot_request() && self.wal.is_some();
        if self.group_log.is_empty() && self.group_replies.is_empty() && self.closing.is_empty() && !snapshot {
            return;
        }
        // The next group starts with room for twice this one: one allocation, not a
        // run of regrowths (each a copy of everything gathered so far).
        let sizes =
            ((2 * self.group_log.len() + 64).min(1 << 20), 2 * self.group_undo.len(), 2 * self.group_replies.len());
        let mut ops = std::mem::replace(&mut self.group_log, Vec::with_capacity(sizes.0));
        self.logged_since_release += ops.len();
        group::clock(&mut ops, self.window.clock.now_ms());
        let undo = std::mem::replace(&mut self.group_undo, Vec::with_capacity(sizes.1));
        let replies = std::mem::replace(&mut self.group_replies, Vec::with_capacity(sizes.2));
        let sent_with_group = replies.iter().map(|r| (r.session_id, r.sync)).collect();
        let closing = std::mem::take(&mut self.closing);
        let on_durable = self.replies_by_connection(replies, &closing);
        let ticket = self.next_ticket;
        self.next_ticket += 1;
        let record_bytes = std::mem::take(&mut self.group_record_bytes);
        let request = WalRequest { ticket, group: ops, on_durable, snapshot, record_bytes };
        let sent = self.wal.as_ref().is_some_and(|wal| wal.send(request).is_ok());
        self.in_flight.push_back(InFlight { ticket, undo, sent_with_group, replies: Vec::new() });
        if !sent {
            self.wal_failure(ticket, "the WAL thread is gone".into());
        }
    }

    /// A group's replies gathered into one buffer per connection, and sent by
    /// the WAL thread once the group is durable (a connection gone meanwhile is
    /// skipped): sending them from here would wait for the TX thread to hear
    /// the group is durable and to come round to them. The `closing` sessions'
    /// connections are closed after their replies.
    fn replies_by_connection(&self, replies: Vec<HeldReply>, closing: &[u64]) -> Option<OnDurable> {
        let mut outgoing: Vec<(u64, crate::server::sink::ReplySink, Vec<u8>)> = Vec::new();
        for reply in replies {
            // Usually one connection per group, and its replies in a row.
            match outgoing.iter_mut().rev().find(|(id, ..)| *id == reply.session_id) {
                Some((_, _, bytes)) => bytes.extend_from_slice(&reply.bytes),
                None => {
                    if let Some(session) = self.sessions.get(&reply.session_id) {
                        outgoing.push((reply.session_id, session.out.clone(), reply.bytes));
                    }
                }
            }
        }
        let closed: Vec<_> = closing.iter().filter_map(|id| self.sessions.get(id)).map(|s| s.out.clone()).collect();
        if outgoing.is_empty() && closed.is_empty() {
            return None;
        }
        Some(Box::new(move || {
            for (_, sink, bytes) in outgoing {
                sink.send(bytes);
            }
            for sink in closed {
                sink.close();
            }
        }))
    }

    fn buffer(&mut self, session_id: u64) -> Option<&mut Vec<u8>> {
        let s = self.sessions.get_mut(&session_id)?;
        if s.pending.is_empty() {
            self.dirty.push(session_id);
        }
        Some(&mut s.pending)
    }

    fn deliver(&mut self, reply: HeldReply) {
        if let Some(buf) = self.buffer(reply.session_id) {
            buf.extend_from_slice(&reply.bytes);
        }
    }

    /// Handles one message.
    pub fn handle(&mut self, msg: TxMessage) {
        self.message_clock_ms = None;
        match msg {
            TxMessage::Connect { session_id, salt, out, peer, fd, console } => {
                self.lua.session_opened(session_id, peer, fd);
                // As 2.6: a console's session is admin's, and its on_auth triggers
                // run right after on_connect (with 'admin', true).
                let user = if console { user_id::ADMIN } else { user_id::GUEST };
                self.sessions.insert(
                    session_id,
                    Session { user_id: user, salt, out, pending: Vec::new(), text: console, quitting: false },
                );
                let admin = [TriggerArg::Str("admin"), TriggerArg::Bool(true)];
                let triggered = self.session_triggers(session_id, user, "connect", &[]).and_then(|()| {
                    if console {
                        self.session_triggers(session_id, user, "auth", &admin)
                    } else {
                        Ok(())
                    }
                });
                if let Err(e) = triggered {
                    // As 2.6: a failing on_connect trigger refuses the connection.
                    tracing::warn!(session_id, error = %e, "on_connect trigger failed; closing the connection");
                    if let Some(s) = self.sessions.remove(&session_id) {
                        s.out.close();
                    }
                } else if let Some(s) = self.sessions.get(&session_id) {
                    s.out.allow_reader_pings(self.reader_ping_version());
                }
            }
            TxMessage::Disconnect { session_id } => {
                self.console_waiting.remove(&session_id);
                self.lua.forget_session(session_id);
                if let Some(s) = self.sessions.remove(&session_id) {
                    if let Err(e) = self.session_triggers(session_id, s.user_id, "disconnect", &[]) {
                        tracing::warn!(session_id, error = %e, "on_disconnect trigger failed");
                    }
                }
            }
            TxMessage::Requests { session_id, packets } => {
                self.read_handled = Some((session_id, packets.len()));
                self.latency_bound = packets.len() == 1;
                self.warm_tokens(session_id, &packets);
                for packet in packets {
                    match packet {
                        Inbound::Request { header, packet, decoded, fingerprint } => {
                            self.request(session_id, &header, &packet, &decoded, fingerprint);
                        }
                        Inbound::BadHeader { sync } => {
                            let sv = self.engine.schema_version();
                            if let Some(buf) = self.buffer(session_id) {
                                response::error(buf, sync, sv, &BoxError::invalid_msgpack("packet header"));
                            }
                        }
                    }
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
                tracing::info!(session_id, error = %err, "closing connection");
                if let Some(buf) = self.buffer(session_id) {
                    response::error(buf, 0, sv, &err);
                }
                self.end_batch();
                if let Some(s) = self.sessions.get(&session_id) {
                    s.out.close();
                }
            }
            TxMessage::WalDone(done) => match done.result {
                Ok(()) => {
                    self.window.durable_up_to(done.ticket);
                    while self.in_flight.front().is_some_and(|f| f.ticket <= done.ticket) {
                        if let Some(f) = self.in_flight.pop_front() {
                            crate::engine::drop_changes(f.undo);
                            for r in f.replies {
                                self.deliver(r);
                            }
                        }
                    }
                }
                Err(msg) => self.wal_failure(done.ticket, msg),
            },
            TxMessage::Tick => self.tick(),
            TxMessage::Netbox { ticket, reply } => self.lua.netbox_deliver(ticket, reply),
            TxMessage::NetboxPush { ticket, body } => self.lua.netbox_push(ticket, &body),
            TxMessage::NetboxLost { conn, reason } => self.lua.netbox_lost(conn, &reason),
            TxMessage::Socket { ticket, reply } => self.lua.socket_deliver(ticket, reply),
            TxMessage::SocketAccepted(conn) => self.lua.socket_accepted(conn),
            TxMessage::Wake => {
                if let Some(alarm) = self.alarm.as_mut() {
                    alarm.fired();
                }
            }
            TxMessage::Console { session_id, line } => {
                let Some(s) = self.sessions.get_mut(&session_id) else { return };
                if s.quitting {
                    return;
                }
                s.text = true;
                self.console_line(session_id, &line);
            }
            TxMessage::ChildExited => crate::children::reap(),
            TxMessage::Shutdown => {
                self.shutdown_triggers();
                tracing::info!("shutting down: finishing in-flight commits");
                self.shutting_down = true;
            }
        }
    }

    /// Undoes every write not yet durable (newest first) and answers each with ER_WAL_IO.
    fn wal_failure(&mut self, ticket: u64, msg: String) {
        tracing::error!(ticket, error = %msg, "commit failed; writes are refused until restart");
        self.wal_failed = Some(msg);
        // The open group has not been sent: it fails too.
        let mut failed: Vec<InFlight> = self.in_flight.drain(..).collect();
        failed.push(InFlight {
            ticket: u64::MAX,
            undo: std::mem::take(&mut self.group_undo),
            sent_with_group: Vec::new(),
            replies: std::mem::take(&mut self.group_replies),
        });
        self.group_log.clear();
        self.group_record_bytes = 0;
        for f in &failed {
            self.window.unstore(&f.undo);
        }
        for f in failed.iter_mut().rev() {
            for change in f.undo.drain(..).rev() {
                self.engine.undo(change);
            }
        }
        self.engine.take_changes();
        self.window.forget_in_flight(&self.engine);
        let sv = self.engine.schema_version();
        for f in failed {
            let held = f.replies.into_iter().map(|r| (r.session_id, r.sync));
            for (session_id, sync) in f.sent_with_group.into_iter().chain(held) {
                let mut bytes = Vec::new();
                response::error(&mut bytes, sync, sv, &BoxError::wal_io());
                self.deliver(HeldReply { session_id, sync, bytes });
            }
        }
    }

    /// A line typed on the text console: run now, or after the session's running line ends.
    fn console_line(&mut self, session_id: u64, line: &str) {
        if let Some(queue) = self.console_waiting.get_mut(&session_id) {
            queue.push_back(line.to_owned());
        } else if self.run_console_line(session_id, line) {
            self.console_waiting.insert(session_id, VecDeque::new());
        }
    }

    /// Runs a console line as admin in a fiber of its own and answers with its YAML
    /// when it ends; returns whether it yielded instead (it is answered later).
    fn run_console_line(&mut self, session_id: u64, line: &str) -> bool {
        self.apply_session_users();
        // Admin's, unless box.session.su changed the session's user.
        let user = self.sessions.get(&session_id).map_or(user_id::ADMIN, |s| s.user_id);
        let caller = self.caller(self.creds(user), session_id);
        let mut host = Host {
            engine: &mut self.engine,
            window: &mut self.window,
            ticket: self.wal.as_ref().map(|_| self.next_ticket),
        };
        let step = self.lua.console_eval(&mut host, &caller, line);
        self.commit_changes();
        // What the line pushed goes out before its reply (or while it waits).
        self.send_pushes(session_id, 0);
        match step {
            Step::Done(result) => {
                self.answer_console(session_id, result);
                false
            }
            Step::Parked(fid) => {
                let kind = FiberKind::Request(Shape::Text);
                self.pending.insert(fid, PendingFiber { session_id, sync: 0, kind });
                true
            }
        }
    }

    /// Runs the lines a console session typed while its last line was running, until one yields.
    fn console_next(&mut self, session_id: u64) {
        let Some(mut queue) = self.console_waiting.remove(&session_id) else { return };
        while let Some(line) = queue.pop_front() {
            if self.run_console_line(session_id, &line) {
                self.console_waiting.insert(session_id, queue);
                return;
            }
        }
    }

    /// Answers a console line with its YAML once everything it wrote is durable.
    fn answer_console(&mut self, session_id: u64, result: BoxResult<Vec<u8>>) {
        let text = match result {
            Ok(bytes) => bytes,
            Err(e) => format!("---\n- error: {}\n...\n", e.message).into_bytes(),
        };
        let reply = HeldReply { session_id, sync: 0, bytes: text };
        if self.wal.is_some() {
            self.group_replies.push(reply);
        } else {
            self.deliver(reply);
        }
        self.quit_consoles();
    }

    /// Closes the console sessions that typed `\quit` (or ran `console.eval('\\q')`)
    /// once the replies they were given are out: their later lines are dropped.
    /// With a WAL, the replies leave from the WAL thread once durable, so the
    /// close goes with the open commit group, after them.
    fn quit_consoles(&mut self) {
        for session_id in self.lua.take_console_quits() {
            self.console_waiting.remove(&session_id);
            let Some(s) = self.sessions.get_mut(&session_id) else { continue };
            s.quitting = true;
            if !s.pending.is_empty() {
                let _ = s.out.send(std::mem::take(&mut s.pending));
            }
            if self.wal.is_some() {
                self.closing.push(session_id);
            } else {
                s.out.close();
            }
        }
    }

    /// Past `idempotency_max_count` or `_max_size`, or while the oldest record has
    /// outlived `idempotency_lifetime`, evicts a small step of the oldest durable
    /// records with every batch, so the window keeps to its limits and its lifetime
    /// however fast tokens come (the per-second tick alone evicts at most
    /// [`EVICTIONS_PER_TICK`] a second). The evictions join the open commit group.
    /// While a step evicts, the loop runs batches without messages too, so a
    /// backlog (a million tokens outliving their lifetime together) goes in steps
    /// between requests rather than a thousand a second.
    fn evict_over_limits(&mut self) {
        self.evicting = false;
        if self.wal_failed.is_some()
            || self.shutting_down
            || !(self.window.over_limits(&self.engine) || self.window.front_outlived())
        {
            return;
        }
        let evicted = self.window.evict_step(&mut self.engine, EVICTIONS_PER_BATCH);
        self.evicting = evicted.count > 0;
        if evicted.count > 0 {
            tracing::debug!(evicted = evicted.count, "idempotency records evicted over the limits");
            // The window counted these itself: no recount (a scan of every record).
            self.log_evictions(evicted);
        }
    }

    /// Logs an eviction step: the deletes the engine recorded, then the records
    /// floor, which logs the other evicted records and lets checkpoints drop the
    /// segments of records all gone.
    fn log_evictions(&mut self, evicted: idem::Evicted) {
        let changes = self.engine.take_changes();
        self.join_group(changes);
        if let (Some(floor), true) = (evicted.floor, self.wal.is_some()) {
            group::records_floor(&mut self.group_log, floor);
        }
    }

    /// Evicts a step of idempotency records and keeps the service clock persisted.
    fn tick(&mut self) {
        self.ticks += 1;
        self.engine.stats.tick(crate::server::NET.totals());
        if self.wal_failed.is_some() || self.shutting_down {
            return;
        }
        if !self.window.is_ordered() {
            // Until the out-of-order record goes, no records floor is logged.
            self.window.check_order();
        }
        let evicted = self.window.evict_step(&mut self.engine, EVICTIONS_PER_TICK);
        if evicted.count > 0 {
            tracing::debug!(evicted = evicted.count, "idempotency records evicted");
        }
        self.log_evictions(evicted);
        if self.wal.is_some() && self.group_log.is_empty() && self.ticks.is_multiple_of(CLOCK_TICKS) {
            // A clock-only commit: the service clock survives an idle crash.
            group::clock(&mut self.group_log, self.window.clock.now_ms());
        }
    }

    /// Decides how a request with an idempotency token is served (DESIGN §3.2).
    #[allow(clippy::too_many_arguments, reason = "one request's parts")]
    fn tokened<'a>(
        &mut self,
        session_id: u64,
        user: u32,
        header: &Header,
        packet: &[u8],
        body: &'a [u8],
        decoded: &Decoded,
        fingerprint: Option<Fingerprint>,
    ) -> BoxResult<Tokened<'a>> {
        let Some(range) = header.idempotent_token.clone() else { return Ok(Tokened::Plain) };
        // PREPARE writes nothing: a token there is refused, not silently ignored.
        if header.request_type == request_type::PREPARE {
            return Err(BoxError::new(code::UNSUPPORTED, "oncebox does not support idempotency tokens on SQL PREPARE"));
        }
        // On SELECT, PING and AUTH the token is accepted and ignored.
        if !idem::is_write_type(header.request_type) {
            return Ok(Tokened::Plain);
        }
        match self.window.settings.mode {
            Mode::Persistent => {}
            Mode::Off => {
                self.window.stats.rejections += 1;
                return Err(BoxError::new(
                    idem::code::DISABLED,
                    "Idempotent requests are disabled (idempotency_mode = 'off')",
                ));
            }
            Mode::Manual if self.lua.has_iproto_triggers() => return Ok(Tokened::Plain),
            Mode::Manual => {
                self.window.stats.rejections += 1;
                return Err(BoxError::new(
                    idem::code::DISABLED,
                    "Idempotent requests are disabled: idempotency_mode is 'manual' and no on_iproto_request trigger is set",
                ));
            }
        }
        let raw = packet.get(range).unwrap_or(&[]);
        let token = Token::parse(raw, self.window.settings.max_token_size).map_err(|e| {
            self.window.stats.rejections += 1;
            BoxError::new(idem::code::TOKEN_INVALID, format!("Invalid idempotency token: {}", e.0))
        })?;
        let Some(req) = decoded.request(body)? else {
            return Err(BoxError::unknown_request_type(header.request_type));
        };
        let fp = fingerprint.unwrap_or_else(|| fingerprint::of(&req));
        if let Request::Execute(x) = &req {
            // SQL's rights depend on the statement: Lua reads it (first attempts and replays alike).
            self.sql_access(session_id, user, x.statement)?;
        }
        let Some(stored) = self.window.remembered(&self.engine, user, &token.encoded) else {
            // A first execution: `execute` checks rights and writability as for any request.
            return Ok(Tokened::Own(token, fp, req));
        };
        // Rights are checked on the replay path too: a token never bypasses a grant.
        let creds = self.creds(user);
        self.engine.check_write_access(&creds, &req)?;
        if !matches!(req, Request::Call(_) | Request::Call16(_) | Request::Eval(_) | Request::Execute(_)) {
            self.check_writable()?;
        }
        let record = Record::from_tuple(&stored).ok_or_else(|| BoxError::invalid_msgpack("_idempotency record"))?;
        if record.fingerprint != fp {
            self.window.stats.mismatches += 1;
            return Err(BoxError::new(
                idem::code::TOKEN_MISMATCH,
                "Idempotency token was already used for a different request",
            ));
        }
        if let Some(ticket) = self.window.in_flight(&stored) {
            self.window.stats.joins += 1;
            return Ok(Tokened::Join(ticket, record.reply));
        }
        self.window.stats.replays += 1;
        Ok(Tokened::Replay(record.reply))
    }

    /// Holds a joined reply until the group `ticket` is durable.
    fn hold(&mut self, ticket: u64, reply: HeldReply) {
        if ticket >= self.next_ticket {
            self.group_replies.push(reply);
        } else if let Some(f) = self.in_flight.iter_mut().find(|f| f.ticket == ticket) {
            f.replies.push(reply);
        } else {
            self.deliver(reply);
        }
    }

    /// Before a read's requests run, starts reading where their tokens' records are
    /// looked up ([`Engine::warm_idempotency_tokens`]); one request alone gains nothing.
    fn warm_tokens(&self, session_id: u64, packets: &[Inbound]) {
        if packets.len() < 2 || self.window.settings.mode != Mode::Persistent {
            return;
        }
        let Some(session) = self.sessions.get(&session_id) else { return };
        let tokens = packets.iter().filter_map(|p| match p {
            Inbound::Request { header, packet, .. } if idem::is_write_type(header.request_type) => {
                packet.get(header.idempotent_token.clone()?)
            }
            _ => None,
        });
        self.engine.warm_idempotency_tokens(session.user_id, tokens);
    }

    fn request(
        &mut self,
        session_id: u64,
        header: &Header,
        packet: &Bytes,
        decoded: &Decoded,
        fingerprint: Option<Fingerprint>,
    ) {
        self.apply_session_users();
        let Some(session) = self.sessions.get(&session_id) else { return };
        let (user, salt) = (session.user_id, session.salt);
        let body = packet.get(header.body_offset..).unwrap_or(&[]);
        let mut reply = std::mem::take(&mut self.scratch);
        reply.clear();
        let sv = self.engine.schema_version();
        let gate = if header.schema_version != 0 && header.schema_version != sv {
            Err(BoxError::wrong_schema_version(sv, header.schema_version))
        } else {
            self.iproto_triggers(session_id, user, header, packet)
                .and_then(|()| self.tokened(session_id, user, header, packet, body, decoded, fingerprint))
        };
        let (owner, parsed) = match gate {
            Ok(Tokened::Plain) => (None, None),
            Ok(Tokened::Own(token, fp, req)) => (Some((token, fp)), Some(req)),
            Ok(Tokened::Replay(stored)) => {
                response::ok_with_status(&mut reply, header.sync, sv, idem::STATUS_REPLAYED, &stored);
                if let Some(buf) = self.buffer(session_id) {
                    buf.extend_from_slice(&reply);
                }
                return;
            }
            Ok(Tokened::Join(ticket, stored)) => {
                response::ok_with_status(&mut reply, header.sync, sv, idem::STATUS_JOINED, &stored);
                self.hold(ticket, HeldReply { session_id, sync: header.sync, bytes: reply });
                return;
            }
            Err(e) => {
                self.engine.stats.bump(OpKind::Error);
                // A replay refused for want of rights is refused as the request itself would be.
                self.access_denied_triggers(session_id, user, &e);
                response::error(&mut reply, header.sync, sv, &e);
                if let Some(buf) = self.buffer(session_id) {
                    buf.extend_from_slice(&reply);
                }
                return;
            }
        };
        let tokened = owner.is_some();
        self.wait_for = None;
        self.atomic = tokened;
        // A tokened request was parsed already, to fingerprint it.
        let req = match parsed {
            Some(req) => Ok(req),
            None => decoded
                .request(body)
                .and_then(|req| req.ok_or_else(|| BoxError::unknown_request_type(header.request_type))),
        };
        let errors_before = self.engine.stats.total(OpKind::Error);
        let mut result = req.and_then(|req| self.execute(session_id, user, &salt, header, req, &mut reply));
        // A CALL's or EVAL's code ran the triggers itself, in the box operation denied.
        let lua_request =
            matches!(header.request_type, request_type::CALL | request_type::CALL_16 | request_type::EVAL);
        if let (Err(e), false) = (&result, lua_request) {
            self.access_denied_triggers(session_id, user, e);
        }
        // A request that failed outside a data operation (no such function, no
        // access...) counts as an error too.
        if result.is_err() && self.engine.stats.total(OpKind::Error) == errors_before {
            self.engine.stats.bump(OpKind::Error);
        }
        if let Some(fid) = self.parked.take() {
            // The CALL/EVAL's fiber yielded: what it did so far is committed, what it
            // pushed goes out now, and its reply comes when the fiber ends.
            let kind = FiberKind::Request(match header.request_type {
                request_type::CALL_16 => Shape::Call16,
                request_type::EXECUTE | request_type::PREPARE => Shape::Sql,
                _ => Shape::Call,
            });
            self.wait_for = None;
            self.pending.insert(fid, PendingFiber { session_id, sync: header.sync, kind });
            self.commit_changes();
            self.send_pushes(session_id, header.sync);
            self.recycle(reply);
            return;
        }
        if let (Ok(()), Some((token, fp))) = (&result, owner) {
            result = self.store_outcome(user, token, fp, &mut reply);
        }
        let sv = self.engine.schema_version();
        let changes = self.engine.take_changes();
        let changes = if result.is_ok() || !tokened {
            // Statements a failed CALL/EVAL completed before the error stay, as in
            // Tarantool (each is committed on its own outside box.begin).
            self.window.note_committed(&self.engine, &changes);
            changes
        } else {
            // A tokened request is one transaction: nothing of it survives a failure.
            let records_undone = changes.iter().any(|c| c.space_id() == idem::SPACE_ID);
            if records_undone {
                self.window.unstore(&changes);
            }
            for change in changes.into_iter().rev() {
                self.engine.undo(change);
            }
            self.engine.take_changes();
            if records_undone {
                // An outcome a box.atomic inside the call stored is gone with it.
                self.window.recount(&self.engine);
            }
            Vec::new()
        };
        let changes = if result.is_err() && !changes.is_empty() && self.wal.is_some() {
            log_changes(&mut self.group_log, &mut self.group_record_bytes, &changes);
            self.group_undo.extend(changes);
            Vec::new()
        } else {
            changes
        };

        let failed = result.is_err();
        if let Err(e) = result {
            tracing::debug!(session_id, code = e.code, error = %e, "request failed");
            reply.clear();
            response::error(&mut reply, header.sync, sv, &e);
        }
        // box.session.push messages go out before the final reply, with its sync; DML
        // pushes too (from on_replace triggers).
        let pushes = self.lua.take_pushes();
        if !pushes.is_empty() {
            let mut framed = Vec::new();
            for item in &pushes {
                response::chunk(&mut framed, header.sync, sv, item);
            }
            framed.extend_from_slice(&reply);
            reply = framed;
        }
        if !failed && !changes.is_empty() && self.wal.is_some() {
            let mut changes = changes;
            log_changes(&mut self.group_log, &mut self.group_record_bytes, &changes);
            self.group_undo.append(&mut changes);
            self.engine.recycle_changes(changes);
            // An exact-size copy: the scratch buffer keeps its capacity for the next request.
            self.group_replies.push(HeldReply { session_id, sync: header.sync, bytes: reply.as_slice().to_vec() });
            self.recycle(reply);
            return;
        }
        // A replayed Lua outcome whose first commit is not durable yet waits for it.
        if !failed {
            if let Some(ticket) = self.wait_for.take() {
                self.hold(ticket, HeldReply { session_id, sync: header.sync, bytes: reply });
                return;
            }
        }
        if let Some(buf) = self.buffer(session_id) {
            buf.extend_from_slice(&reply);
        }
        self.recycle(reply);
    }

    /// Keeps a reply buffer for the next request, unless a large reply made it large.
    fn recycle(&mut self, reply: Vec<u8>) {
        if reply.capacity() <= MAX_SCRATCH {
            self.scratch = reply;
        }
    }

    /// Stores the outcome of a first attempt in the same commit as its changes, and marks the reply executed.
    fn store_outcome(&mut self, user: u32, token: Token, fp: Fingerprint, reply: &mut Vec<u8>) -> BoxResult<()> {
        let record = NewRecord {
            user_id: user,
            token: &token.encoded,
            fingerprint: fp,
            created_ms: *self.message_clock_ms.get_or_insert_with(|| self.window.clock.now_ms()),
            reply: reply.get(response::HEADER_SIZE..).unwrap_or(&[]),
        };
        let ticket = self.wal.is_some().then_some(self.next_ticket);
        self.window.store(&mut self.engine, &record, ticket)?;
        response::add_status(reply, idem::STATUS_EXECUTED);
        Ok(())
    }

    fn caller(&self, creds: Rc<Credentials>, session_id: u64) -> Caller {
        Caller {
            creds,
            session_user: None,
            session_id,
            sync: 0,
            instance_uuid: self.instance_uuid.clone(),
            cfg: self.cfg.clone(),
            control: self.control.clone(),
        }
    }

    /// Runs `box.ctl.on_iproto_request` triggers, if any, with the request's header.
    fn iproto_triggers(&mut self, session_id: u64, user: u32, header: &Header, packet: &[u8]) -> BoxResult<()> {
        if !self.lua.has_iproto_triggers() {
            return Ok(());
        }
        let name = request_type_name(header.request_type);
        #[allow(clippy::cast_precision_loss, reason = "Lua numbers are doubles")]
        let mut fields: Vec<(&str, HeaderValue<'_>)> = vec![
            ("type", HeaderValue::Str(name)),
            ("sync", HeaderValue::Num(header.sync as f64)),
            ("schema_version", HeaderValue::Num(header.schema_version as f64)),
        ];
        if let Some(raw) = header.idempotent_token.clone().and_then(|r| packet.get(r)) {
            fields.push(("idempotent_token", HeaderValue::Raw(raw)));
        }
        let caller = self.caller(self.creds(user), session_id);
        let mut host = Host {
            engine: &mut self.engine,
            window: &mut self.window,
            ticket: self.wal.as_ref().map(|_| self.next_ticket),
        };
        self.lua.run_iproto_triggers(&mut host, &caller, &fields)
    }

    fn creds(&self, user: u32) -> Rc<Credentials> {
        self.engine.credentials(user)
    }

    fn check_writable(&self) -> BoxResult<()> {
        if self.shutting_down {
            return Err(BoxError::new(code::READONLY, "Can't modify data because this instance is shutting down"));
        }
        match &self.wal_failed {
            Some(msg) => Err(BoxError::new(
                code::WAL_IO,
                format!("Failed to write to disk: writes are refused until restart after a storage failure ({msg})"),
            )),
            None => Ok(()),
        }
    }

    /// Runs one request and writes its reply into `out`.
    fn execute(
        &mut self,
        session_id: u64,
        user: u32,
        salt: &[u8],
        header: &Header,
        req: Request<'_>,
        out: &mut Vec<u8>,
    ) -> BoxResult<()> {
        let sv = self.engine.schema_version();
        let creds = self.creds(user);
        let sync = header.sync;
        if matches!(
            req,
            Request::Insert(_) | Request::Replace(_) | Request::Update(_) | Request::Upsert(_) | Request::Delete(_)
        ) {
            self.check_writable()?;
        }
        match &req {
            Request::Auth(_) => self.engine.stats.bump(OpKind::Auth),
            Request::Call(_) | Request::Call16(_) => self.engine.stats.bump(OpKind::Call),
            Request::Eval(_) => self.engine.stats.bump(OpKind::Eval),
            _ => {}
        }
        if on_session_settings(&req) {
            return self.session_settings(session_id, &creds, sync, &req, out);
        }
        match req {
            Request::Ping => response::ok_empty(out, sync, sv),
            Request::Auth(a) => {
                let authenticated = self.engine.authenticate(a.user, a.tuple, salt);
                let name = String::from_utf8_lossy(a.user).into_owned();
                let as_user = *authenticated.as_ref().unwrap_or(&user);
                // 2.6 runs on_auth for known users only.
                if !matches!(&authenticated, Err(e) if e.code == code::NO_SUCH_USER) {
                    let args = [TriggerArg::Str(&name), TriggerArg::Bool(authenticated.is_ok())];
                    self.session_triggers(session_id, as_user, "auth", &args)?;
                }
                let new_user = authenticated?;
                if let Some(s) = self.sessions.get_mut(&session_id) {
                    s.user_id = new_user;
                }
                response::ok_empty(out, sync, sv);
            }
            Request::Select(s) => {
                let mut data = response::DataReply::begin(out, sync, sv);
                self.engine.select_each(&creds, &s, |t| data.push(t))?;
                data.finish();
            }
            Request::Insert(w) | Request::Replace(w) => {
                let mode =
                    if header.request_type == request_type::INSERT { WriteMode::Insert } else { WriteMode::Replace };
                if self.lua.has_before_replace_triggers(w.space_id) {
                    let t = self.before_replaced(&creds, session_id, header, (w.space_id, 0), w.tuple, None)?;
                    self.reply_tuple(out, sync, t.as_ref());
                    return Ok(());
                }
                let mark = self.engine.pending_changes();
                let tuple = self.engine.write(&creds, w.space_id, w.tuple, mode)?;
                self.replace_triggers(&creds, session_id, w.space_id, header.request_type, mark)?;
                self.reply_tuple(out, sync, Some(&tuple));
            }
            Request::Update(u) => {
                if self.lua.has_before_replace_triggers(u.space_id) {
                    let t = self.before_replaced(
                        &creds,
                        session_id,
                        header,
                        (u.space_id, u.index_id),
                        u.key,
                        Some((u.ops, u.index_base)),
                    )?;
                    self.reply_tuple(out, sync, t.as_ref());
                    return Ok(());
                }
                let mark = self.engine.pending_changes();
                let tuple = self.engine.update(&creds, &u)?;
                self.replace_triggers(&creds, session_id, u.space_id, header.request_type, mark)?;
                self.reply_tuple(out, sync, tuple.as_ref());
            }
            Request::Upsert(u) => {
                if self.lua.has_before_replace_triggers(u.space_id) {
                    // An UPSERT's reply holds no tuple, unless a trigger rewrote it.
                    let t = self.before_replaced(
                        &creds,
                        session_id,
                        header,
                        (u.space_id, 0),
                        u.tuple,
                        Some((u.ops, u.index_base)),
                    )?;
                    self.reply_tuple(out, sync, t.as_ref());
                    return Ok(());
                }
                let mark = self.engine.pending_changes();
                self.engine.upsert(&creds, &u)?;
                self.replace_triggers(&creds, session_id, u.space_id, header.request_type, mark)?;
                self.reply_tuple(out, sync, None);
            }
            Request::Delete(d) => {
                if self.lua.has_before_replace_triggers(d.space_id) {
                    let t = self.before_replaced(&creds, session_id, header, (d.space_id, d.index_id), d.key, None)?;
                    self.reply_tuple(out, sync, t.as_ref());
                    return Ok(());
                }
                let mark = self.engine.pending_changes();
                let tuple = self.engine.delete(&creds, &d)?;
                self.replace_triggers(&creds, session_id, d.space_id, header.request_type, mark)?;
                self.reply_tuple(out, sync, tuple.as_ref());
            }
            Request::Call(c) | Request::Call16(c) => {
                let func = self.engine.check_call_access(&creds, c.name).inspect_err(|e| {
                    self.access_denied_triggers(session_id, user, e);
                })?;
                let shape = if header.request_type == request_type::CALL { Shape::Call } else { Shape::Call16 };
                // A setuid function runs with its owner's rights.
                let caller = match func {
                    Some(f) if f.setuid => Caller {
                        session_user: Some(creds.user_id),
                        sync,
                        ..self.caller(self.engine.credentials(f.owner), session_id)
                    },
                    _ => Caller { sync, ..self.caller(creds, session_id) },
                };
                let mut host = Host {
                    engine: &mut self.engine,
                    window: &mut self.window,
                    ticket: self.wal.as_ref().map(|_| self.next_ticket),
                };
                let called = if func.is_some_and(|f| f.persistent) {
                    Called::Persistent(c.name)
                } else {
                    Called::Global(c.name)
                };
                let (step, wait) = self.lua.call(&mut host, &caller, called, c.args, shape, self.atomic);
                self.wait_for = wait;
                self.finish_step(out, sync, step)?;
            }
            Request::Execute(x) => self.sql(session_id, creds, sync, x.statement, x.binds, false, out)?,
            Request::Prepare(statement) => self.sql(session_id, creds, sync, statement, &[0x90], true, out)?,
            Request::Eval(e) => {
                self.engine.check_eval_access(&creds).inspect_err(|e| {
                    self.access_denied_triggers(session_id, user, e);
                })?;
                let caller = Caller { sync, ..self.caller(creds, session_id) };
                let mut host = Host {
                    engine: &mut self.engine,
                    window: &mut self.window,
                    ticket: self.wal.as_ref().map(|_| self.next_ticket),
                };
                let (step, wait) = self.lua.eval(&mut host, &caller, e.name, e.args, self.atomic);
                self.wait_for = wait;
                self.finish_step(out, sync, step)?;
            }
        }
        Ok(())
    }

    /// Whether `user` may run the tokened SQL `statement` (or have it replayed):
    /// the rights it needs on its table, and a statement tokens apply to.
    fn sql_access(&mut self, session_id: u64, user: u32, statement: Statement<'_>) -> BoxResult<()> {
        let caller = self.caller(self.creds(user), session_id);
        let mut host = Host {
            engine: &mut self.engine,
            window: &mut self.window,
            ticket: self.wal.as_ref().map(|_| self.next_ticket),
        };
        self.lua.sql_access(&mut host, &caller, statement)
    }

    /// EXECUTE or PREPARE (`prepare`) of an SQL statement, run by Lua in a fiber of its own.
    #[allow(clippy::too_many_arguments, reason = "one request's parts")]
    fn sql(
        &mut self,
        session_id: u64,
        creds: Rc<Credentials>,
        sync: u64,
        statement: Statement<'_>,
        binds: &[u8],
        prepare: bool,
        out: &mut Vec<u8>,
    ) -> BoxResult<()> {
        let caller = Caller { sync, ..self.caller(creds, session_id) };
        let mut host = Host {
            engine: &mut self.engine,
            window: &mut self.window,
            ticket: self.wal.as_ref().map(|_| self.next_ticket),
        };
        let (step, wait) = self.lua.sql(&mut host, &caller, statement, binds, prepare, self.atomic);
        self.wait_for = wait;
        self.finish_step(out, sync, step)
    }

    /// Writes a CALL/EVAL's reply if it ended; notes its fiber if it yielded.
    /// A request on `_session_settings`, answered by box.lua from the session's
    /// settings (`box.internal.session_settings_request`), after the space's
    /// read or write check.
    #[cold]
    #[inline(never)]
    fn session_settings(
        &mut self,
        session_id: u64,
        creds: &Rc<Credentials>,
        sync: u64,
        req: &Request<'_>,
        out: &mut Vec<u8>,
    ) -> BoxResult<()> {
        let args = session_settings_request(req);
        match req {
            Request::Select(s) => self.engine.select_each(creds, s, |_| {})?,
            _ => self.engine.check_space_write(creds, session_settings_space::SPACE_ID)?,
        }
        let caller = Caller { sync, ..self.caller(Rc::clone(creds), session_id) };
        let mut host = Host {
            engine: &mut self.engine,
            window: &mut self.window,
            ticket: self.wal.as_ref().map(|_| self.next_ticket),
        };
        let called = Called::Global(b"box.internal.session_settings_request");
        let (step, _) = self.lua.call(&mut host, &caller, called, &args, Shape::Call, false);
        self.finish_step(out, sync, step)
    }

    fn finish_step(&mut self, out: &mut Vec<u8>, sync: u64, step: Step) -> BoxResult<()> {
        match step {
            Step::Done(body) => response::ok_raw_body(out, sync, self.engine.schema_version(), &body?),
            Step::Parked(fid) => self.parked = Some(fid),
        }
        Ok(())
    }

    /// Runs `box.session.on_<kind>` triggers for a session, if any are set.
    fn session_triggers(&mut self, session_id: u64, user: u32, kind: &str, args: &[TriggerArg<'_>]) -> BoxResult<()> {
        if !self.lua.has_session_triggers(kind) {
            return Ok(());
        }
        // As 2.6 runs them: as admin, in the session of `user` (box.session.uid()
        // names it, box.session.euid() admin).
        let caller = Caller {
            session_user: Some(user),
            ..self.caller(self.creds(crate::engine::access::user_id::ADMIN), session_id)
        };
        let mut host = Host {
            engine: &mut self.engine,
            window: &mut self.window,
            ticket: self.wal.as_ref().map(|_| self.next_ticket),
        };
        let result = self.lua.run_session_triggers(&mut host, &caller, kind, args);
        // Trigger writes commit like a request's.
        let changes = self.engine.take_changes();
        if self.wal.is_some() {
            log_changes(&mut self.group_log, &mut self.group_record_bytes, &changes);
            self.group_undo.extend(changes);
        }
        result
    }

    /// Runs `box.session.on_access_denied` triggers when `e` is an access-denied
    /// error (with the access, object type and name as arguments), as 2.6 runs them
    /// whenever such an error is made; the triggers' own errors are ignored.
    fn access_denied_triggers(&mut self, session_id: u64, user: u32, e: &BoxError) {
        if e.code != code::ACCESS_DENIED || !self.lua.has_session_triggers("access_denied") {
            return;
        }
        let field = |name: &str| e.fields.iter().find(|(k, _)| *k == name).map(|(_, v)| v.as_str());
        let (Some(access), Some(object_type), Some(object_name)) =
            (field("access_type"), field("object_type"), field("object_name"))
        else {
            return;
        };
        if let Err(err) = self.session_triggers(
            session_id,
            user,
            "access_denied",
            &[TriggerArg::Str(access), TriggerArg::Str(object_type), TriggerArg::Str(object_name)],
        ) {
            tracing::debug!(error = %err, "on_access_denied triggers failed");
        }
    }

    /// Runs the `box.ctl.on_shutdown` triggers, as admin; what they write commits
    /// before the server stops.
    fn shutdown_triggers(&mut self) {
        let caller = self.caller(self.creds(user_id::ADMIN), crate::server::SERVER_SESSION_ID);
        let mut host = Host {
            engine: &mut self.engine,
            window: &mut self.window,
            ticket: self.wal.as_ref().map(|_| self.next_ticket),
        };
        if let Err(e) = self.lua.run_shutdown_triggers(&mut host, &caller) {
            tracing::warn!(error = %e, "on_shutdown triggers failed");
        }
        self.commit_changes();
    }

    /// Runs `space:on_replace` triggers after an IPROTO write (nothing to do, and no
    /// cost beyond a set lookup, for spaces without triggers).
    fn replace_triggers(
        &mut self,
        creds: &Rc<Credentials>,
        session_id: u64,
        space_id: u32,
        request_type: u64,
        mark: usize,
    ) -> BoxResult<()> {
        if !self.lua.has_replace_triggers(space_id) {
            return Ok(());
        }
        let caller = self.caller(creds.clone(), session_id);
        let mut host = Host {
            engine: &mut self.engine,
            window: &mut self.window,
            ticket: self.wal.as_ref().map(|_| self.next_ticket),
        };
        self.lua.run_replace_triggers(&mut host, &caller, space_id, request_type_name(request_type), mark)
    }

    /// Runs an IPROTO write to a space with `space:before_replace` triggers through
    /// Lua, where the triggers may rewrite it (its `on_replace` triggers run there
    /// too); returns the tuple for the reply. `at` is (space id, index id), `a` the
    /// tuple or key, `b` the operations and their index base.
    fn before_replaced(
        &mut self,
        creds: &Rc<Credentials>,
        session_id: u64,
        header: &Header,
        at: (u32, u32),
        a: &[u8],
        b: Option<(&[u8], u32)>,
    ) -> BoxResult<Option<crate::engine::tuple::Tuple>> {
        let caller = self.caller(creds.clone(), session_id);
        let mut host = Host {
            engine: &mut self.engine,
            window: &mut self.window,
            ticket: self.wal.as_ref().map(|_| self.next_ticket),
        };
        let request = request_type_name(header.request_type);
        self.lua.run_before_replaced(&mut host, &caller, at.0, at.1, request, a, b)
    }

    fn reply_tuple(&self, out: &mut Vec<u8>, sync: u64, tuple: Option<&crate::engine::tuple::Tuple>) {
        let sv = self.engine.schema_version();
        response::ok_data(out, sync, sv, tuple.into_iter().map(|t| &t[..]));
    }
}

/// How long the TX thread polls for its next message before it sleeps.
const SPIN_BEFORE_SLEEP: std::time::Duration = std::time::Duration::from_micros(50);

/// The next message, polled for [`SPIN_BEFORE_SLEEP`] before sleeping for it: a
/// request that comes soon after the last reply (a client waiting for each
/// reply) finds the thread awake, not asleep on a halted core it takes tens of
/// microseconds to wake on a VM. `None` when every sender is gone.
fn receive_spinning(rx: &mut UnboundedReceiver<TxMessage>) -> Option<TxMessage> {
    let start = std::time::Instant::now();
    loop {
        match rx.try_recv() {
            Ok(msg) => return Some(msg),
            Err(tokio::sync::mpsc::error::TryRecvError::Disconnected) => return None,
            Err(tokio::sync::mpsc::error::TryRecvError::Empty) if start.elapsed() < SPIN_BEFORE_SLEEP => {
                std::hint::spin_loop();
            }
            Err(tokio::sync::mpsc::error::TryRecvError::Empty) => return rx.blocking_recv(),
        }
    }
}

/// The name `on_iproto_request` triggers see for a request type.
fn request_type_name(ty: u64) -> &'static str {
    match ty {
        request_type::SELECT => "SELECT",
        request_type::INSERT => "INSERT",
        request_type::REPLACE => "REPLACE",
        request_type::UPDATE => "UPDATE",
        request_type::DELETE => "DELETE",
        request_type::CALL_16 => "CALL_16",
        request_type::AUTH => "AUTH",
        request_type::EVAL => "EVAL",
        request_type::UPSERT => "UPSERT",
        request_type::CALL => "CALL",
        request_type::PING => "PING",
        _ => "UNKNOWN",
    }
}

/// `_session_settings`, the service space of a session's settings.
mod session_settings_space {
    /// Its space id.
    pub const SPACE_ID: u32 = 380;
}

/// Whether `req` reads or writes `_session_settings`.
#[inline]
fn on_session_settings(req: &Request<'_>) -> bool {
    let space_id = match req {
        Request::Select(s) => s.space_id,
        Request::Update(u) => u.space_id,
        Request::Insert(w) | Request::Replace(w) => w.space_id,
        Request::Upsert(u) => u.space_id,
        Request::Delete(d) => d.space_id,
        _ => return false,
    };
    space_id == session_settings_space::SPACE_ID
}

/// The arguments for `box.internal.session_settings_request` for a request on
/// `_session_settings` ([`on_session_settings`]): `[kind, key, ...]` as msgpack.
fn session_settings_request(req: &Request<'_>) -> Vec<u8> {
    use crate::protocol::msgpack::write;
    let mut args = Vec::new();
    match req {
        Request::Select(s) => {
            write::array_len(&mut args, 5);
            write::str(&mut args, b"select");
            args.extend_from_slice(s.key);
            write::uint(&mut args, s.iterator);
            write::uint(&mut args, u64::from(s.offset));
            write::uint(&mut args, u64::from(s.limit));
        }
        Request::Update(u) => {
            write::array_len(&mut args, 4);
            write::str(&mut args, b"update");
            args.extend_from_slice(u.key);
            args.extend_from_slice(u.ops);
            write::uint(&mut args, u64::from(u.index_base));
        }
        Request::Upsert(_) => {
            write::array_len(&mut args, 1);
            write::str(&mut args, b"upsert");
        }
        Request::Delete(_) => {
            write::array_len(&mut args, 1);
            write::str(&mut args, b"delete");
        }
        _ => {
            write::array_len(&mut args, 1);
            write::str(&mut args, b"replace");
        }
    }
    args
}

/// Appends the storage operations of `changes` to an encoded group, adding the
/// bytes of those on `_idempotency` to `record_bytes`.
fn log_changes(out: &mut Vec<u8>, record_bytes: &mut usize, changes: &[Change]) {
    for change in changes {
        let start = out.len();
        match change {
            Change::Row { space_id, pk, new: Some(t), .. } => group::put(out, *space_id, pk, t),
            Change::Row { space_id, pk, new: None, .. } => group::delete(out, *space_id, pk),
            Change::Truncate { space_id, .. } => group::truncate(out, *space_id),
        }
        if change.space_id() == idem::SPACE_ID {
            *record_bytes += out.len() - start;
        }
    }
}

/// The storage operation for one engine change.
fn row_op(change: &Change) -> RowOp {
    match change {
        Change::Row { space_id, pk, new: Some(t), .. } => {
            RowOp::Put { key: row_key(*space_id, pk), tuple: t[..].into() }
        }
        Change::Row { space_id, pk, new: None, .. } => RowOp::Delete { key: row_key(*space_id, pk) },
        Change::Truncate { space_id, .. } => RowOp::Truncate { space_id: *space_id },
    }
}

/// Converts every change to storage operations (used to initialize a data directory).
#[must_use]
pub fn row_ops(changes: &[Change]) -> Vec<RowOp> {
    changes.iter().map(row_op).collect()
}
