//! `box.cfg{background = true}`: the instance leaves its terminal, as 2.6's does.
//!
//! 2.6 forks at its first `box.cfg{}`: the parent exits 0 at once, the child
//! starts a session of its own with its standard streams on `/dev/null` and goes
//! on. oncebox has threads by then, and a fork keeps only the one that calls it,
//! so it starts itself again instead: the same executable and arguments, marked
//! by [`MARK`] in the environment, with its streams on `/dev/null`; the first
//! process exits 0 at once. The second takes the mark away at its start, begins
//! a session of its own, and runs the script again from its beginning (its output
//! before `box.cfg{}` goes nowhere, where 2.6's child never ran that part). Once
//! the log file is open, its standard output and error go there, as 2.6's do.

use std::os::unix::process::CommandExt;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};

/// The environment variable that marks the process started in the background.
pub const MARK: &str = "ONCEBOX_BACKGROUND_CHILD";

/// Whether this process is the one started in the background.
static IN_BACKGROUND: AtomicBool = AtomicBool::new(false);

/// At the start of `main`, before any thread: takes [`MARK`] out of the
/// environment (scripts see 2.6's environment) and, if it was there, begins a
/// session of its own, away from the terminal.
pub fn adopt_mark() {
    if std::env::var_os(MARK).is_some() {
        std::env::remove_var(MARK);
        let _ = rustix::process::setsid();
        IN_BACKGROUND.store(true, Ordering::SeqCst);
    }
}

/// Whether this process is the instance running in the background.
#[must_use]
pub fn in_background() -> bool {
    IN_BACKGROUND.load(Ordering::SeqCst)
}

/// Starts this process again in the background and exits 0 (2.6's parent exits
/// as soon as it has forked); returns only when it could not start it.
pub fn detach() -> String {
    let exe = match std::env::current_exe() {
        Ok(exe) => exe,
        Err(e) => return format!("can't daemonize: {e}"),
    };
    let mut args = std::env::args_os();
    let mut command = Command::new(exe);
    // The name it was run by (a `tarantool` symlink stays `tarantool`).
    if let Some(name) = args.next() {
        command.arg0(name);
    }
    let started =
        command.args(args).env(MARK, "1").stdin(Stdio::null()).stdout(Stdio::null()).stderr(Stdio::null()).spawn();
    match started {
        // The C streams (Lua's print) are flushed by exit, as 2.6 flushes them before its fork.
        Ok(_) => std::process::exit(0),
        Err(e) => format!("can't daemonize: {e}"),
    }
}

/// In the background: standard output and error go to the log file, as 2.6's
/// do once it has forked (`print` lands among the log lines).
pub fn streams_to_log() {
    if in_background() {
        crate::log_sink::redirect_std_streams();
    }
}
