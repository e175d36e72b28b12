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

/// How long the first process waits for the one in the background to write its
/// pid file.
const PID_FILE_WAIT: std::time::Duration = std::time::Duration::from_secs(10);

/// Starts this process again in the background and exits 0 (2.6's parent exits
/// as soon as it has forked); returns only when it could not start it.
///
/// With a `pid_file` (its path as the new process will see it), this one exits
/// once that file names the new process (or it has ended, or [`PID_FILE_WAIT`]
/// passed): 2.6's child has written it by the time its parent is gone, while
/// this one runs the script up to `box.cfg{}` first, and a `tarantoolctl
/// status` right after `start` must find it. The caller has closed its
/// listening sockets: the new process binds them again.
pub fn detach(pid_file: Option<&std::path::Path>) -> String {
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
        Ok(mut child) => {
            if let Some(path) = pid_file {
                await_pid_file(path, &mut child);
            }
            // The C streams (Lua's print) are flushed by exit, as 2.6 flushes them before its fork.
            std::process::exit(0)
        }
        Err(e) => format!("can't daemonize: {e}"),
    }
}

/// Waits until `path` holds `child`'s pid, `child` has ended, or [`PID_FILE_WAIT`] passed.
fn await_pid_file(path: &std::path::Path, child: &mut std::process::Child) {
    let pid = child.id().to_string();
    let started = std::time::Instant::now();
    while started.elapsed() < PID_FILE_WAIT {
        if std::fs::read_to_string(path).is_ok_and(|held| held.trim() == pid) {
            return;
        }
        if !matches!(child.try_wait(), Ok(None)) {
            return;
        }
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
}

/// In the background: standard output and error go to the log file, as 2.6's
/// do once it has forked (`print` lands among the log lines).
pub fn streams_to_log() {
    if in_background() {
        crate::log_sink::redirect_std_streams();
    }
}
