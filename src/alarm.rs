//! Wake-ups for the TX thread at a set time (a fiber's sleep ending).
//!
//! The TX thread blocks on its message channel; when a fiber sleeps, the thread
//! asks this helper thread to send it [`TxMessage::Wake`] at the earliest
//! deadline. The helper is started only when a fiber first sleeps.

use std::sync::mpsc::{self, RecvTimeoutError};
use std::time::Instant;

use tokio::sync::mpsc::UnboundedSender;

use crate::executor::TxMessage;

/// The TX thread's handle on its alarm thread.
#[derive(Debug)]
pub struct Alarm {
    deadlines: mpsc::Sender<Instant>,
    /// The earliest deadline asked for and not yet reported.
    armed: Option<Instant>,
}

impl Alarm {
    /// Starts the alarm thread; it sends [`TxMessage::Wake`] to `notify` at each deadline.
    pub fn spawn(notify: UnboundedSender<TxMessage>) -> std::io::Result<Self> {
        let (deadlines, rx) = mpsc::channel::<Instant>();
        std::thread::Builder::new().name("alarm".into()).spawn(move || ring(&rx, &notify))?;
        Ok(Self { deadlines, armed: None })
    }

    /// Asks for a wake-up at `at` (an earlier one already asked for covers it).
    pub fn set(&mut self, at: Instant) {
        if self.armed.is_some_and(|armed| armed <= at) {
            return;
        }
        self.armed = Some(at);
        let _ = self.deadlines.send(at);
    }

    /// A wake-up arrived: the next deadline must be asked for again.
    pub fn fired(&mut self) {
        self.armed = None;
    }
}

/// The alarm thread: waits for the earliest deadline, sends a wake-up, repeats
/// until the TX thread is gone.
fn ring(rx: &mpsc::Receiver<Instant>, notify: &UnboundedSender<TxMessage>) {
    let mut next: Option<Instant> = None;
    loop {
        let got = match next {
            None => rx.recv().map_err(|_| RecvTimeoutError::Disconnected),
            Some(at) => rx.recv_timeout(at.saturating_duration_since(Instant::now())),
        };
        match got {
            Ok(at) => next = Some(next.map_or(at, |n| n.min(at))),
            Err(RecvTimeoutError::Timeout) => {
                next = None;
                if notify.send(TxMessage::Wake).is_err() {
                    return;
                }
            }
            Err(RecvTimeoutError::Disconnected) => return,
        }
    }
}
