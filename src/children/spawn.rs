//! Starting a child process: fork and execve, with the standard streams and the
//! process attributes `popen.new` asks for.
//!
//! Everything the child needs (the argument and environment arrays, the
//! descriptors it takes over) is built before the fork: between fork and execve
//! the child makes only async-signal-safe system calls, as the child of a
//! multi-threaded process must, and allocates nothing. A failed execve ends the
//! child with its errno as the exit status, as tarantool 2.6's popen does: the
//! caller gets a process either way.

use std::ffi::{c_char, CString};
use std::fs::{File, OpenOptions};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;

/// What a child's standard stream is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stdio {
    /// The parent's.
    Inherit,
    /// `/dev/null`.
    DevNull,
    /// Closed.
    Close,
    /// A pipe whose other end the parent keeps.
    Pipe,
}

/// How to start a child.
#[derive(Debug, Clone)]
pub struct Options {
    /// Standard input, output and error.
    pub stdio: [Stdio; 3],
    /// `NAME=value` entries; `None`: the parent's environment.
    pub env: Option<Vec<CString>>,
    /// Start a new session (and process group).
    pub setsid: bool,
    /// Close every descriptor but the standard streams.
    pub close_fds: bool,
    /// An empty signal mask.
    pub restore_signals: bool,
}

/// A started child: its pid and the parent's ends of its piped streams.
#[derive(Debug)]
pub struct Spawned {
    /// Process id.
    pub pid: i32,
    /// The parent's ends of the pipes, by stream (stdin: the write end).
    pub pipes: [Option<OwnedFd>; 3],
}

/// Why a child could not be started: the step (in 2.6's words) and the OS error.
#[derive(Debug)]
pub struct SpawnError {
    /// What failed, as 2.6's popen says it (`Can't create pipe2`).
    pub what: &'static str,
    /// The OS error.
    pub error: std::io::Error,
}

fn step<T>(what: &'static str, r: std::io::Result<T>) -> Result<T, SpawnError> {
    r.map_err(|error| SpawnError { what, error })
}

/// Starts `program` (a path: no `PATH` search) with `argv`.
///
/// # Errors
/// pipe(2), open(2) or fork(2) failing. A program that cannot be executed is
/// not an error here: the child exits with the errno.
pub fn spawn(program: &CString, argv: &[CString], options: &Options) -> Result<Spawned, SpawnError> {
    let argv_ptrs: Vec<*const c_char> =
        argv.iter().map(|a| a.as_ptr()).chain(std::iter::once(std::ptr::null())).collect();
    let inherited;
    let env = match &options.env {
        Some(env) => env,
        None => {
            inherited = std::env::vars_os()
                .filter_map(|(k, v)| {
                    let mut entry = k.as_bytes().to_vec();
                    entry.push(b'=');
                    entry.extend_from_slice(v.as_bytes());
                    CString::new(entry).ok()
                })
                .collect::<Vec<_>>();
            &inherited
        }
    };
    let envp: Vec<*const c_char> = env.iter().map(|e| e.as_ptr()).chain(std::iter::once(std::ptr::null())).collect();
    // The descriptor each stream becomes in the child, and the parent's ends.
    let mut child_ends: [Option<OwnedFd>; 3] = [None, None, None];
    let mut pipes: [Option<OwnedFd>; 3] = [None, None, None];
    let mut devnull: Option<File> = None;
    for (stream, mode) in options.stdio.iter().enumerate() {
        match mode {
            Stdio::Pipe => {
                let (read, write) = step(PIPE_FAILED, pipe())?;
                let (theirs, ours) = if stream == 0 { (read, write) } else { (write, read) };
                child_ends[stream] = Some(theirs);
                pipes[stream] = Some(ours);
            }
            Stdio::DevNull => {
                if devnull.is_none() {
                    let opened = OpenOptions::new().read(true).write(true).open("/dev/null");
                    devnull = Some(step("Can't open /dev/null", opened)?);
                }
                let null = step("Unable to duplicate /dev/null", devnull.as_ref().map(File::try_clone).transpose())?;
                child_ends[stream] = null.map(OwnedFd::from);
            }
            Stdio::Inherit | Stdio::Close => {}
        }
    }
    let targets: [i32; 3] = std::array::from_fn(|i| child_ends[i].as_ref().map_or(-1, AsRawFd::as_raw_fd));
    let closes: [bool; 3] = std::array::from_fn(|i| options.stdio[i] == Stdio::Close);
    let fd_limit = open_files_limit();
    // Closed (on execve, or when the child exits) once the child runs the program:
    // until then the child is a copy of this process, whose signal handlers would
    // swallow a signal meant for the program. 2.6's vfork waits the same way.
    let (started, started_report) = step(PIPE_FAILED, pipe())?;
    // SAFETY: fork(2) in a multi-threaded process: the child only makes
    // async-signal-safe calls (setsid, dup2, fcntl, close, sigprocmask,
    // close_range, execve, _exit) on values built above, and never
    // returns into Rust code.
    #[allow(unsafe_code, reason = "fork and execve; see the SAFETY note")]
    let pid = unsafe { libc::fork() };
    if pid < 0 {
        return step("vfork() fails", Err(std::io::Error::last_os_error()));
    }
    if pid == 0 {
        #[allow(unsafe_code, reason = "the child between fork and execve; see the SAFETY note above")]
        // SAFETY: as above: async-signal-safe calls only, ending in execve or _exit.
        unsafe {
            in_child(
                program.as_ptr(),
                &argv_ptrs,
                &envp,
                &targets,
                &closes,
                options,
                (fd_limit, started_report.as_raw_fd()),
            );
        }
    }
    drop(started_report);
    let mut started = File::from(started);
    let mut byte = [0u8; 1];
    loop {
        match std::io::Read::read(&mut started, &mut byte) {
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            _ => break,
        }
    }
    Ok(Spawned { pid, pipes })
}

/// The child's side: sets itself up and executes the program (never returns).
///
/// # Safety
/// Only in a child just forked: the pointers are the parent's arrays, which the
/// fork copied.
#[allow(unsafe_code, reason = "raw system calls between fork and execve")]
unsafe fn in_child(
    path: *const c_char,
    argv: &[*const c_char],
    envp: &[*const c_char],
    targets: &[i32; 3],
    closes: &[bool; 3],
    options: &Options,
    (fd_limit, started_report): (i32, i32),
) -> ! {
    // SAFETY (for the whole body): plain system calls on integers and on the
    // NUL-terminated arrays built before the fork.
    unsafe {
        if options.setsid {
            libc::setsid();
        }
        for (stream, &fd) in (0..).zip(targets.iter()) {
            if fd == stream {
                // Already in place: only keep it across execve.
                libc::fcntl(fd, libc::F_SETFD, 0);
            } else if fd >= 0 {
                libc::dup2(fd, stream);
            }
        }
        for (stream, &close) in (0..).zip(closes.iter()) {
            if close {
                libc::close(stream);
            }
        }
        if options.restore_signals {
            // The mask; handlers end at execve by themselves, and ignored
            // signals (SIGPIPE) stay ignored, as under 2.6's popen.
            let mut none: libc::sigset_t = std::mem::zeroed();
            libc::sigemptyset(&mut none);
            libc::sigprocmask(libc::SIG_SETMASK, &none, std::ptr::null_mut());
        }
        if options.close_fds {
            // All but the report of the start, which execve closes.
            // (The report may sit below 3 if the server's own standard streams
            // were closed; those are never closed here.)
            let report = started_report.cast_unsigned();
            let below = report <= 3 || libc::syscall(libc::SYS_close_range, 3u32, report - 1, 0u32) == 0;
            let above = libc::syscall(libc::SYS_close_range, (report + 1).max(3), u32::MAX, 0u32) == 0;
            if !(below && above) {
                // Kernels before 5.9: one by one.
                for fd in (3..fd_limit).filter(|&fd| fd != started_report) {
                    libc::close(fd);
                }
            }
        }
        libc::execve(path, argv.as_ptr(), envp.as_ptr());
        libc::_exit(*libc::__errno_location());
    }
}

/// Sends `signo` (any number: 0 only checks, real-time signals go too) to the
/// process `pid`, or with `group` to its process group.
///
/// # Errors
/// kill(2)'s (ESRCH: no such process, EINVAL: no such signal).
pub fn signal(pid: i32, signo: i32, group: bool) -> std::io::Result<()> {
    if pid <= 0 {
        // Never every process, or the caller's own group.
        return Err(std::io::Error::from_raw_os_error(libc::ESRCH));
    }
    let target = if group { -pid } else { pid };
    // SAFETY: kill(2) takes plain integers and touches no memory.
    #[allow(unsafe_code, reason = "kill(2) with any signal number; rustix names only the standard ones")]
    let sent = unsafe { libc::kill(target, signo) };
    if sent == 0 {
        Ok(())
    } else {
        Err(std::io::Error::last_os_error())
    }
}

const PIPE_FAILED: &str = "Can't create pipe2";

/// A pipe, both ends closed on exec: (read end, write end).
fn pipe() -> std::io::Result<(OwnedFd, OwnedFd)> {
    let mut fds = [0i32; 2];
    // SAFETY: pipe2 writes two descriptors into the array, which then belong to us.
    #[allow(unsafe_code, reason = "pipe2 and adopting its descriptors")]
    unsafe {
        if libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) != 0 {
            return Err(std::io::Error::last_os_error());
        }
        Ok((OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])))
    }
}

/// The highest descriptor number plus one (for closing them all without close_range).
fn open_files_limit() -> i32 {
    let limit = rustix::process::getrlimit(rustix::process::Resource::Nofile);
    limit.current.and_then(|n| i32::try_from(n).ok()).unwrap_or(65_536).min(1 << 20)
}
