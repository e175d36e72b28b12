//! A blocking client socket, TCP or Unix (Tarantool's `unix/:/path` addresses),
//! for the threads behind `net.box` and `socket`; or the process's standard input,
//! which `console.start()` reads through the same threads.

use std::io::{Read, Write};
use std::net::{Shutdown, TcpStream};
use std::os::fd::{AsFd, BorrowedFd};
use std::os::unix::net::UnixStream;
use std::time::Duration;

/// The host name that stands for a Unix socket, its path in the port's place.
pub const UNIX_HOST: &str = "unix/";

/// A connected stream socket.
#[derive(Debug)]
pub enum Stream {
    /// A TCP connection.
    Tcp(TcpStream),
    /// A Unix-domain stream connection.
    Unix(UnixStream),
    /// A duplicate of the standard input (reads only; no time-outs, no shutdown).
    Stdin(std::fs::File),
}

impl Stream {
    /// A handle on the standard input.
    ///
    /// # Errors
    /// dup(2)'s.
    pub fn stdin() -> std::io::Result<Self> {
        Ok(Self::Stdin(std::fs::File::from(std::io::stdin().as_fd().try_clone_to_owned()?)))
    }

    /// Another handle on the same socket.
    ///
    /// # Errors
    /// dup(2)'s.
    pub fn try_clone(&self) -> std::io::Result<Self> {
        Ok(match self {
            Self::Tcp(s) => Self::Tcp(s.try_clone()?),
            Self::Unix(s) => Self::Unix(s.try_clone()?),
            Self::Stdin(f) => Self::Stdin(f.try_clone()?),
        })
    }

    /// Shuts both directions down (a thread blocked reading it wakes up).
    pub fn shutdown(&self) {
        let _ = match self {
            Self::Tcp(s) => s.shutdown(Shutdown::Both),
            Self::Unix(s) => s.shutdown(Shutdown::Both),
            Self::Stdin(_) => Ok(()),
        };
    }

    /// How long a read may wait (None: for ever).
    ///
    /// # Errors
    /// setsockopt(2)'s.
    pub fn set_read_timeout(&self, timeout: Option<Duration>) -> std::io::Result<()> {
        match self {
            Self::Tcp(s) => s.set_read_timeout(timeout),
            Self::Unix(s) => s.set_read_timeout(timeout),
            Self::Stdin(_) => Ok(()),
        }
    }

    /// How long a write may wait (None: for ever).
    ///
    /// # Errors
    /// setsockopt(2)'s.
    pub fn set_write_timeout(&self, timeout: Option<Duration>) -> std::io::Result<()> {
        match self {
            Self::Tcp(s) => s.set_write_timeout(timeout),
            Self::Unix(s) => s.set_write_timeout(timeout),
            Self::Stdin(_) => Ok(()),
        }
    }
}

impl Read for Stream {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        match self {
            Self::Tcp(s) => s.read(buf),
            Self::Unix(s) => s.read(buf),
            Self::Stdin(f) => f.read(buf),
        }
    }
}

impl Write for Stream {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        match self {
            Self::Tcp(s) => s.write(buf),
            Self::Unix(s) => s.write(buf),
            Self::Stdin(f) => f.write(buf),
        }
    }

    fn flush(&mut self) -> std::io::Result<()> {
        match self {
            Self::Tcp(s) => s.flush(),
            Self::Unix(s) => s.flush(),
            Self::Stdin(f) => f.flush(),
        }
    }
}

impl AsFd for Stream {
    fn as_fd(&self) -> BorrowedFd<'_> {
        match self {
            Self::Tcp(s) => s.as_fd(),
            Self::Unix(s) => s.as_fd(),
            Self::Stdin(f) => f.as_fd(),
        }
    }
}
