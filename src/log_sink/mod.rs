//! Where log lines go: standard error, or the target `box.cfg{log = ...}` names
//! as 2.6 reads it: a file (`name` or `file:name`), a program's standard input
//! (`|command` or `pipe:command`) or syslog (`syslog:` and its options).
//!
//! The server's own lines (tracing) and the `log` module's go the same way, one
//! `write` per line, so lines from threads do not interleave.

pub mod syslog;

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::{Mutex, PoisonError};

/// Where lines go once a target is set; standard error until then.
static SINK: Mutex<Option<Sink>> = Mutex::new(None);

enum Sink {
    File {
        path: PathBuf,
        file: File,
    },
    /// The program's input; the child is kept so that it is not reaped early.
    Pipe {
        stdin: ChildStdin,
        _child: Child,
    },
    Syslog(syslog::Syslog),
}

/// A `log` value's kind, as 2.6's say_parse_logger_type tells it.
#[derive(Debug, PartialEq, Eq)]
pub enum Target<'a> {
    /// A file's path (relative to the current directory, which is `work_dir`).
    File(&'a str),
    /// A shell command whose standard input takes the lines.
    Pipe(&'a str),
    /// Syslog, with its options (`server=`, `identity=`, `facility=`).
    Syslog(&'a str),
}

impl<'a> Target<'a> {
    /// Parses a `log` value; `None` for a value with an unknown prefix.
    #[must_use]
    pub fn parse(value: &'a str) -> Option<Self> {
        if let Some(command) = value.strip_prefix('|').or_else(|| value.strip_prefix("pipe:")) {
            Some(Self::Pipe(command))
        } else if let Some(path) = value.strip_prefix("file:") {
            Some(Self::File(path))
        } else if let Some(options) = value.strip_prefix("syslog:") {
            Some(Self::Syslog(options))
        } else if value.contains(':') {
            None
        } else {
            Some(Self::File(value))
        }
    }
}

impl Target<'_> {
    /// The kind of the `log` value `value` (`"file"`, `"pipe"` or `"syslog"`), as
    /// `box.cfg{}` checks it before it boots.
    ///
    /// # Errors
    /// 2.6's reason for a value it refuses (an unknown prefix, a bad syslog option).
    pub fn check(value: &str) -> Result<&'static str, String> {
        match Target::parse(value) {
            None => Err(NO_PREFIX.to_owned()),
            Some(Target::File(_)) => Ok("file"),
            Some(Target::Pipe(_)) => Ok("pipe"),
            Some(Target::Syslog(options)) => syslog::Options::parse(options).map(|_| "syslog"),
        }
    }
}

/// 2.6's words for a `log` value with an unknown prefix.
const NO_PREFIX: &str = "expecting a file name or a prefix, such as '|', 'pipe:', 'syslog:'";

/// Sends every later line to the target `value` names (an empty value: standard error).
///
/// # Errors
/// 2.6's reason when the target cannot be opened; lines keep going where they went.
pub fn open(value: &str) -> Result<(), String> {
    if value.is_empty() {
        return Ok(());
    }
    let sink = match Target::parse(value) {
        None => return Err(NO_PREFIX.to_owned()),
        Some(Target::File(path)) => Sink::File { path: PathBuf::from(path), file: open_file(Path::new(path))? },
        Some(Target::Pipe(command)) => {
            let mut child = Command::new("/bin/sh")
                .arg("-c")
                .arg(command)
                .stdin(Stdio::piped())
                // Its own process group: a terminal's signals do not stop the logger first.
                .process_group(0)
                .spawn()
                .map_err(|e| format!("can't start logger: {command}: {}", crate::lua::native::strerror(&e)))?;
            let stdin = child.stdin.take().ok_or("can't start logger: no pipe")?;
            eprintln!("started logging into a pipe, SIGHUP log rotation disabled");
            Sink::Pipe { stdin, _child: child }
        }
        Some(Target::Syslog(options)) => {
            let options = syslog::Options::parse(options)?;
            let sink = Sink::Syslog(syslog::Syslog::connect(options).map_err(|e| format!("syslog logger: {e}"))?);
            eprintln!("started logging into a syslog, SIGHUP log rotation disabled");
            sink
        }
    };
    *SINK.lock().unwrap_or_else(PoisonError::into_inner) = Some(sink);
    Ok(())
}

fn open_file(path: &Path) -> Result<File, String> {
    OpenOptions::new()
        .append(true)
        .create(true)
        .open(path)
        .map_err(|e| format!("can't open log file: {}: {}", path.display(), crate::lua::native::strerror(&e)))
}

/// Points standard output and error at the log file, if the log is one (the
/// instance in the background: see [`crate::daemon`]).
pub fn redirect_std_streams() {
    let sink = SINK.lock().unwrap_or_else(PoisonError::into_inner);
    if let Some(Sink::File { file, .. }) = sink.as_ref() {
        let _ = rustix::stdio::dup2_stdout(file);
        let _ = rustix::stdio::dup2_stderr(file);
    }
}

/// `log.rotate()`: a file is opened again (after a rename, a new one begins),
/// syslog is connected again; a pipe stays as it is.
///
/// # Errors
/// When the file cannot be opened again (lines keep going to the old one).
pub fn rotate() -> Result<(), String> {
    let mut sink = SINK.lock().unwrap_or_else(PoisonError::into_inner);
    match sink.as_mut() {
        Some(Sink::File { path, file }) => *file = open_file(path)?,
        Some(Sink::Syslog(syslog)) => syslog.reconnect(),
        Some(Sink::Pipe { .. }) | None => {}
    }
    Ok(())
}

/// Writes `bytes` (whole lines) to the log; a line that cannot be written is
/// dropped, as Tarantool's logger drops it.
pub fn write(bytes: &[u8]) {
    let mut sink = SINK.lock().unwrap_or_else(PoisonError::into_inner);
    match sink.as_mut() {
        Some(Sink::File { file, .. }) => {
            let _ = file.write_all(bytes);
        }
        Some(Sink::Pipe { stdin, .. }) => {
            let _ = stdin.write_all(bytes);
        }
        Some(Sink::Syslog(syslog)) => syslog.send(bytes),
        None => {
            let _ = std::io::stderr().lock().write_all(bytes);
        }
    }
}

/// A writer for the server's own (tracing) lines: each write goes to [`write`].
#[derive(Debug, Clone, Copy, Default)]
pub struct Writer;

impl Write for Writer {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        write(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_log_value_is_a_file_a_pipe_or_syslog_as_2_6_reads_it() {
        assert_eq!(Target::parse("a.log"), Some(Target::File("a.log")));
        assert_eq!(Target::parse("file:b.log"), Some(Target::File("b.log")));
        assert_eq!(Target::parse("/var/log/c.log"), Some(Target::File("/var/log/c.log")));
        assert_eq!(Target::parse("pipe:cat"), Some(Target::Pipe("cat")));
        assert_eq!(Target::parse("| cat"), Some(Target::Pipe(" cat")));
        assert_eq!(Target::parse("syslog:identity=t"), Some(Target::Syslog("identity=t")));
        assert_eq!(Target::parse(":"), None);
        assert_eq!(Target::parse("a:b"), None);
        assert_eq!(Target::check("|cat"), Ok("pipe"));
        assert_eq!(Target::check("syslog:xxx="), Err("bad option 'xxx='".to_owned()));
        assert_eq!(Target::check(":"), Err(NO_PREFIX.to_owned()));
    }
}
