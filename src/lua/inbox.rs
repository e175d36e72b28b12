//! A script's event loop before `box.cfg{}`.
//!
//! Until the first `box.cfg{}` there is no executor, yet 2.6's event loop
//! already runs: a `socket.tcp_server` accepts, fibers read sockets and wait for
//! `net.box` replies, children are reaped. While the script runs unbound, the TX
//! thread's message channel is held here, and the fiber scheduler waits on it
//! (instead of sleeping) whenever no fiber is ready: each outcome another thread
//! reports is handed to the fiber waiting for it, as the executor does later.
//! `box.cfg{}` takes the channel back for the executor ([`Inbox::close`]).

use std::cell::{Cell, RefCell};
use std::time::{Duration, Instant};

use mlua::Lua;
use tokio::sync::mpsc::error::TryRecvError;
use tokio::sync::mpsc::{UnboundedReceiver, UnboundedSender};

use crate::alarm::Alarm;
use crate::executor::TxMessage;

/// The TX channel while the script runs unbound (Lua app data).
pub struct Inbox {
    rx: RefCell<Option<UnboundedReceiver<TxMessage>>>,
    notify: UnboundedSender<TxMessage>,
    /// Started when a wait first has a deadline.
    alarm: RefCell<Option<Alarm>>,
    /// A stop signal (SIGINT, SIGTERM) arrived.
    stopped: Cell<bool>,
    /// Messages for the executor, kept until it runs: the connections a listener
    /// accepted while the first `box.cfg{}` waited for its replication sources.
    deferred: RefCell<Vec<TxMessage>>,
}

/// What [`Inbox::close`] hands the executor.
pub struct Closed {
    /// The TX channel.
    pub rx: UnboundedReceiver<TxMessage>,
    /// Whether a stop signal was received meanwhile.
    pub stopped: bool,
    /// Messages for the executor that came before it ran, in order.
    pub deferred: Vec<TxMessage>,
}

/// How long one wait may block when no alarm thread can be started.
const WAIT_WITHOUT_ALARM: Duration = Duration::from_millis(10);

impl Inbox {
    /// Holds `rx` for the unbound script; `notify` is its sending side (for the alarm).
    pub fn open(lua: &Lua, rx: UnboundedReceiver<TxMessage>, notify: UnboundedSender<TxMessage>) {
        lua.set_app_data(Self {
            rx: RefCell::new(Some(rx)),
            notify,
            alarm: RefCell::new(None),
            stopped: Cell::new(false),
            deferred: RefCell::new(Vec::new()),
        });
    }

    /// Takes the channel back (for the executor): `None` if no inbox is open.
    pub fn close(lua: &Lua) -> Option<Closed> {
        let inbox = lua.remove_app_data::<Self>()?;
        let stopped = inbox.stopped.get();
        let deferred = inbox.deferred.into_inner();
        inbox.rx.into_inner().map(|rx| Closed { rx, stopped, deferred })
    }

    /// Whether a stop signal was received (false when no inbox is open).
    pub fn stopped(lua: &Lua) -> bool {
        lua.app_data_ref::<Self>().is_some_and(|i| i.stopped.get())
    }
}

/// Waits up to `pause` seconds (`None`: until something arrives) for messages and
/// delivers every one that arrived; returns at once after delivering if some
/// were already queued. Without an inbox, just sleeps `pause`. Returns whether a
/// stop signal has been received.
pub fn wait(lua: &Lua, pause: Option<f64>) -> bool {
    let first = {
        let Some(inbox) = lua.app_data_ref::<Inbox>() else {
            let p = pause.unwrap_or(WAIT_WITHOUT_ALARM.as_secs_f64());
            if p.is_finite() && p > 0.0 {
                std::thread::sleep(Duration::from_secs_f64(p.min(3600.0)));
            }
            return false;
        };
        if inbox.stopped.get() {
            return true;
        }
        let mut rx_slot = inbox.rx.borrow_mut();
        let Some(rx) = rx_slot.as_mut() else { return false };
        match rx.try_recv() {
            Ok(message) => Some(message),
            Err(TryRecvError::Disconnected) => return true,
            Err(TryRecvError::Empty) => match pause {
                Some(p) if p.is_nan() || p <= 0.0 => None,
                _ => block(&inbox, rx, pause),
            },
        }
    };
    let waited = pause.is_none_or(|p| p > 0.0);
    if first.is_none() && !waited {
        // Nothing came and nothing was waited for: the same turn of the loop.
        return false;
    }
    // A new turn of the event loop: fiber.time() and fiber.clock() move on.
    super::next_loop_tick();
    // Deliver outside the borrow: a delivery runs Lua, which may wait again.
    let mut next = first;
    while let Some(message) = next {
        deliver(lua, message);
        next = lua.app_data_ref::<Inbox>().and_then(|inbox| inbox.rx.borrow_mut().as_mut()?.try_recv().ok());
    }
    Inbox::stopped(lua)
}

/// Blocks on the channel until a message arrives or `pause` ends (the alarm
/// thread sends a wake-up then).
fn block(inbox: &Inbox, rx: &mut UnboundedReceiver<TxMessage>, pause: Option<f64>) -> Option<TxMessage> {
    if let Some(p) = pause {
        let at = Instant::now() + Duration::from_secs_f64(p.min(3600.0));
        let mut alarm = inbox.alarm.borrow_mut();
        if alarm.is_none() {
            *alarm = Alarm::spawn(inbox.notify.clone()).ok();
        }
        match alarm.as_mut() {
            Some(alarm) => alarm.set(at),
            None => {
                std::thread::sleep(WAIT_WITHOUT_ALARM.min(at.saturating_duration_since(Instant::now())));
                return rx.try_recv().ok();
            }
        }
    }
    match rx.blocking_recv() {
        Some(message) => Some(message),
        None => {
            inbox.stopped.set(true);
            None
        }
    }
}

/// Hands one message to the Lua side, as the executor would after `box.cfg{}`.
fn deliver(lua: &Lua, message: TxMessage) {
    match message {
        TxMessage::Netbox { ticket, reply } => super::deliver_netbox(lua, ticket, reply),
        TxMessage::NetboxPush { ticket, body } => super::deliver_netbox_push(lua, ticket, &body),
        TxMessage::NetboxLost { conn, reason } => super::deliver_netbox_lost(lua, conn, &reason),
        TxMessage::Socket { ticket, reply } => super::deliver_socket(lua, ticket, reply),
        TxMessage::SocketAccepted(conn) => super::start_accepted(lua, conn),
        TxMessage::ChildExited => crate::children::reap(),
        TxMessage::Wake => {
            if let Some(inbox) = lua.app_data_ref::<Inbox>() {
                if let Some(alarm) = inbox.alarm.borrow_mut().as_mut() {
                    alarm.fired();
                }
            }
        }
        TxMessage::Shutdown => {
            if let Some(inbox) = lua.app_data_ref::<Inbox>() {
                inbox.stopped.set(true);
            }
        }
        // A listener opened while box.cfg{} waits for the replication sources: its
        // connections are the executor's (their requests are answered where read).
        message @ (TxMessage::Connect { .. }
        | TxMessage::Disconnect { .. }
        | TxMessage::Requests { .. }
        | TxMessage::BadFrame { .. }) => {
            if let Some(inbox) = lua.app_data_ref::<Inbox>() {
                inbox.deferred.borrow_mut().push(message);
            }
        }
        // Nothing else is served or logged before box.cfg{}: these cannot come yet.
        _ => tracing::warn!("a message for the executor arrived before box.cfg{{}} and was dropped"),
    }
}
