//! The server's child processes: started for `popen`, and reaped, all of them,
//! as tarantool's event loop reaps every child on SIGCHLD (so a process started
//! with `ffi.C.fork()` stops answering `kill(pid, 0)` once it exits, as luatest's
//! `Process:is_alive()` expects).
//!
//! A task of the network runtime ([`watch`]) notes each SIGCHLD ([`EXITED`]) and
//! tells the TX thread, which reaps at its next scheduling point (a message
//! taken, a fiber switch): as in 2.6, Lua code that does not yield (`os.execute`,
//! an `io.popen` file read and closed) waits for its own child undisturbed. A
//! child started by [`spawn_watched`] is watched: its end is kept for its
//! `popen` handle and handed to whoever waits for it.

pub mod spawn;

pub use spawn::signal;

use std::collections::HashMap;
use std::ffi::CString;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Mutex, MutexGuard};

use tokio::sync::mpsc::UnboundedSender;

use crate::executor::TxMessage;

/// 1 when a child may have ended since the last reaping (Lua's scheduler reads
/// it through ffi, `box.internal.children_exited`).
pub static EXITED: AtomicU32 = AtomicU32::new(0);

/// How a child ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum End {
    /// It exited with this status.
    Exited(i32),
    /// A signal killed it.
    Signaled(i32),
}

/// Called once with a watched child's end.
pub type EndWaiter = Box<dyn FnOnce(End) + Send>;

#[derive(Default)]
struct Watch {
    end: Option<End>,
    waiters: Vec<EndWaiter>,
}

#[derive(Default)]
struct Registry {
    watched: HashMap<i32, Watch>,
}

static REGISTRY: Mutex<Option<Registry>> = Mutex::new(None);

fn registry() -> MutexGuard<'static, Option<Registry>> {
    REGISTRY.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

fn with_registry<R>(f: impl FnOnce(&mut Registry) -> R) -> R {
    f(registry().get_or_insert_with(Registry::default))
}

/// Reaps every child that ended, keeping the ends of watched ones.
fn reap_into(r: &mut Registry) {
    while let Ok(Some((pid, status))) = rustix::process::wait(rustix::process::WaitOptions::NOHANG) {
        let end = match (status.exit_status(), status.terminating_signal()) {
            (Some(code), _) => End::Exited(code),
            (None, Some(signal)) => End::Signaled(signal),
            (None, None) => continue,
        };
        if let Some(watch) = r.watched.get_mut(&pid.as_raw_nonzero().get()) {
            watch.end = Some(end);
            for waiter in watch.waiters.drain(..) {
                waiter(end);
            }
        }
    }
}

/// Reaps the children that ended (on the TX thread: see the module).
pub fn reap() {
    EXITED.store(0, Ordering::Relaxed);
    with_registry(reap_into);
}

/// Notes every SIGCHLD for the TX thread (`tx`), for the life of the runtime it runs on.
pub async fn watch(tx: UnboundedSender<TxMessage>) {
    let Ok(mut signals) = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::child()) else {
        tracing::warn!("cannot watch SIGCHLD: exited children stay zombies");
        return;
    };
    loop {
        // Children may have ended before the handler was in place.
        EXITED.store(1, Ordering::Relaxed);
        if tx.send(TxMessage::ChildExited).is_err() || signals.recv().await.is_none() {
            return;
        }
    }
}

/// Starts a child (see [`spawn::spawn`]) and watches it (under the registry's
/// lock: reaping cannot take it before it is watched).
///
/// # Errors
/// [`spawn::spawn`]'s.
pub fn spawn_watched(
    program: &CString,
    argv: &[CString],
    options: &spawn::Options,
) -> Result<spawn::Spawned, spawn::SpawnError> {
    with_registry(|r| {
        let spawned = spawn::spawn(program, argv, options)?;
        r.watched.insert(spawned.pid, Watch::default());
        Ok(spawned)
    })
}

/// How a watched child ended, if it has been reaped.
#[must_use]
pub fn end_of(pid: i32) -> Option<End> {
    with_registry(|r| r.watched.get(&pid).and_then(|w| w.end))
}

/// What [`when_ended`] found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Waiting {
    /// The child runs: the waiter is called when it ends.
    Registered,
    /// The child had ended already (the waiter is dropped).
    Ended(End),
    /// No such watched child.
    Unknown,
}

/// Calls `waiter` when the watched child `pid` ends, unless it has already.
pub fn when_ended(pid: i32, waiter: EndWaiter) -> Waiting {
    with_registry(|r| match r.watched.get_mut(&pid) {
        None => Waiting::Unknown,
        Some(Watch { end: Some(end), .. }) => Waiting::Ended(*end),
        Some(watch) => {
            watch.waiters.push(waiter);
            Waiting::Registered
        }
    })
}

/// Stops watching `pid` (its handle is closed); reaping takes it as any other child.
pub fn forget(pid: i32) {
    with_registry(|r| r.watched.remove(&pid));
}

#[cfg(test)]
mod tests {
    use super::*;

    fn c(s: &str) -> CString {
        CString::new(s).unwrap_or_default()
    }

    fn options(stdout: spawn::Stdio) -> spawn::Options {
        spawn::Options {
            stdio: [spawn::Stdio::Inherit, stdout, spawn::Stdio::Inherit],
            env: Some(vec![c("GREETING=hello")]),
            setsid: false,
            close_fds: true,
            restore_signals: true,
        }
    }

    /// Waits for a watched child's end, reaping as the TX thread would.
    fn end(pid: i32) -> End {
        for _ in 0..500 {
            reap();
            if let Some(end) = end_of(pid) {
                return end;
            }
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        panic!("child {pid} never ended");
    }

    #[test]
    fn children_run_with_their_pipes_and_environment_and_end_with_a_status() {
        use std::io::Read;
        let argv = [c("sh"), c("-c"), c("echo $GREETING; exit 3")];
        let spawned = spawn_watched(&c("/bin/sh"), &argv, &options(spawn::Stdio::Pipe)).expect("spawn");
        let mut out = String::new();
        let pipe = spawned.pipes[1].as_ref().map(|fd| fd.try_clone().expect("dup"));
        std::fs::File::from(pipe.expect("stdout is piped")).read_to_string(&mut out).expect("read");
        assert_eq!(out, "hello\n");
        assert!(spawned.pipes[0].is_none() && spawned.pipes[2].is_none());
        assert_eq!(end(spawned.pid), End::Exited(3));

        // A program that cannot run: the child exits with execve's errno (ENOENT).
        let missing = spawn_watched(&c("/nonexistent"), &[c("x")], &options(spawn::Stdio::DevNull)).expect("spawn");
        assert_eq!(end(missing.pid), End::Exited(2));

        // A signal sent as soon as spawn returns reaches the program.
        let sleeper = spawn_watched(&c("/bin/sleep"), &[c("sleep"), c("30")], &options(spawn::Stdio::Inherit));
        let sleeper = sleeper.expect("spawn");
        signal(sleeper.pid, 15, false).expect("kill");
        assert_eq!(end(sleeper.pid), End::Signaled(15));
        forget(sleeper.pid);
        assert_eq!(end_of(sleeper.pid), None, "forgotten");
        assert!(signal(0, 0, false).is_err(), "never every process");
    }
}
