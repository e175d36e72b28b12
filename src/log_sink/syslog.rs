//! Logging to syslog as 2.6 does: `syslog:server=...,identity=...,facility=...`
//! (a Unix datagram socket, `/dev/log` by default, or a UDP address), one
//! datagram per line: `<PRI>Mmm dd hh:mm:ss IDENTITY[PID]: main/101/name I> text`.

use std::net::UdpSocket;
use std::os::unix::net::UnixDatagram;

/// 2.6's default syslog port, for a `server=host` without one.
const DEFAULT_PORT: u16 = 514;

/// Syslog facilities by name, in code order (2.6's list; `local7` is the default).
const FACILITIES: [&str; 24] = [
    "kern", "user", "mail", "daemon", "auth", "intern", "lpr", "news", "uucp", "clock", "authpriv", "ftp", "ntp",
    "audit", "alert", "cron", "local0", "local1", "local2", "local3", "local4", "local5", "local6", "local7",
];

/// Where the lines go.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Server {
    /// `/dev/log`, else `/var/run/syslog`.
    Default,
    /// `server=unix:PATH`.
    Unix(String),
    /// `server=HOST[:PORT]`, over UDP.
    Remote(String),
}

/// The options of a `syslog:` log value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Options {
    /// Where the lines go.
    pub server: Server,
    /// The name in each line (`tarantool` by default, as 2.6's).
    pub identity: String,
    /// The facility's code (`local7`, 23, by default).
    pub facility: u8,
}

impl Options {
    /// Parses the options after `syslog:`, with 2.6's reasons for a bad one.
    ///
    /// # Errors
    /// An unknown or repeated option, or an unknown facility.
    pub fn parse(text: &str) -> Result<Self, String> {
        let (mut server, mut identity, mut facility) = (None, None, None);
        for option in text.split(',') {
            if option.is_empty() {
                break;
            }
            let (name, value) = option.split_once('=').ok_or_else(|| format!("bad option '{option}'"))?;
            let slot_taken = match name {
                "server" => server.replace(value).is_some(),
                "identity" => identity.replace(value).is_some(),
                "facility" => {
                    let code = FACILITIES
                        .iter()
                        .position(|f| *f == value)
                        .ok_or_else(|| format!("bad syslog facility option '{value}'"))?;
                    facility.replace(code).is_some()
                }
                _ => return Err(format!("bad option '{option}'")),
            };
            if slot_taken {
                return Err(format!("duplicate option '{name}'"));
            }
        }
        let server = match server {
            None => Server::Default,
            Some(value) => value
                .strip_prefix("unix:")
                .map_or_else(|| Server::Remote(value.to_owned()), |path| Server::Unix(path.to_owned())),
        };
        #[allow(clippy::cast_possible_truncation, reason = "24 facilities")]
        let facility = facility.map_or(23, |code| code as u8);
        Ok(Self { server, identity: identity.unwrap_or("tarantool").to_owned(), facility })
    }
}

enum Socket {
    Unix(UnixDatagram),
    Udp(UdpSocket),
}

/// A connected syslog destination.
pub struct Syslog {
    options: Options,
    socket: Option<Socket>,
}

impl Syslog {
    /// Connects to the options' server.
    ///
    /// # Errors
    /// The reason (strerror's words) when it cannot be reached.
    pub fn connect(options: Options) -> Result<Self, String> {
        let socket = connect(&options.server).map_err(|e| crate::lua::native::strerror(&e))?;
        Ok(Self { options, socket: Some(socket) })
    }

    /// Connects again (syslogd restarted); without a server, lines are dropped
    /// until a later attempt succeeds.
    pub fn reconnect(&mut self) {
        self.socket = connect(&self.options.server).ok();
    }

    /// Sends one log line, as 2.6 does: on a failure it connects again and tries once more.
    pub fn send(&mut self, line: &[u8]) {
        let datagram = datagram(line, &self.options, std::process::id(), &local_time());
        if self.socket.as_ref().is_some_and(|s| send_on(s, &datagram)) {
            return;
        }
        self.reconnect();
        if let Some(socket) = &self.socket {
            send_on(socket, &datagram);
        }
    }
}

fn send_on(socket: &Socket, datagram: &[u8]) -> bool {
    let sent = match socket {
        Socket::Unix(s) => s.send(datagram),
        Socket::Udp(s) => s.send(datagram),
    };
    sent.is_ok_and(|n| n > 0)
}

fn connect(server: &Server) -> std::io::Result<Socket> {
    let unix = |path: &str| -> std::io::Result<Socket> {
        let socket = UnixDatagram::unbound()?;
        socket.connect(path)?;
        socket.set_nonblocking(true)?;
        Ok(Socket::Unix(socket))
    };
    match server {
        Server::Default => unix("/dev/log").or_else(|_| unix("/var/run/syslog")),
        Server::Unix(path) => unix(path),
        Server::Remote(address) => {
            let target = if address.contains(':') { address.clone() } else { format!("{address}:{DEFAULT_PORT}") };
            let socket = UdpSocket::bind("0.0.0.0:0")?;
            socket.connect(target)?;
            socket.set_nonblocking(true)?;
            Ok(Socket::Udp(socket))
        }
    }
}

/// Now in local time as syslog's header gives it (`Dec  6 08:40:00`).
#[allow(unsafe_code, reason = "localtime_r and strftime give the local time as 2.6 does; see the SAFETY note")]
fn local_time() -> String {
    let now = now_secs();
    // SAFETY: `tm` is plain data that localtime_r fills; the buffer outlives strftime,
    // which writes at most its length and returns how much it wrote.
    unsafe {
        let mut tm: libc::tm = std::mem::zeroed();
        if libc::localtime_r(&now, &mut tm).is_null() {
            return String::new();
        }
        let mut buf = [0u8; 32];
        let n = libc::strftime(buf.as_mut_ptr().cast(), buf.len(), c"%h %e %T".as_ptr(), &tm);
        String::from_utf8_lossy(&buf[..n]).into_owned()
    }
}

fn now_secs() -> libc::time_t {
    let secs = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_secs());
    libc::time_t::try_from(secs).unwrap_or(0)
}

/// The datagram for one log line. A line in 2.6's plain form
/// (`date time [pid] main/101/name I> text`) keeps what follows its pid, and its
/// level letter gives the priority; any other line (the server's own) is sent whole.
#[must_use]
pub fn datagram(line: &[u8], options: &Options, pid: u32, time: &str) -> Vec<u8> {
    let (tail, priority) = match plain_tail(line) {
        Some(tail) => (tail.to_vec(), priority_of_letter(tail)),
        None => {
            let mut tail = b" ".to_vec();
            tail.extend_from_slice(line);
            (tail, priority_of_words(line))
        }
    };
    let mut out =
        format!("<{}>{time} {}[{pid}]:", u32::from(options.facility) * 8 + priority, options.identity).into_bytes();
    out.extend_from_slice(&tail);
    out
}

/// What follows `[pid]` in a 2.6 plain line.
fn plain_tail(line: &[u8]) -> Option<&[u8]> {
    if !line.first().is_some_and(u8::is_ascii_digit) {
        return None;
    }
    let open = line.iter().take(32).position(|&b| b == b'[')?;
    let close = open + line[open..].iter().position(|&b| b == b']')?;
    let pid = &line[open + 1..close];
    (!pid.is_empty() && pid.iter().all(u8::is_ascii_digit)).then(|| &line[close + 1..])
}

/// Syslog's priority for a plain line's level letter (`I>`), as 2.6 maps its levels.
fn priority_of_letter(tail: &[u8]) -> u32 {
    let letter = tail.windows(2).position(|w| w == b"> ").and_then(|i| i.checked_sub(1)).map(|i| tail[i]);
    match letter {
        Some(b'W') => 4,
        Some(b'I' | b'V') => 6,
        Some(b'D') => 7,
        _ => 3,
    }
}

/// Syslog's priority for one of the server's own lines, by its level word.
fn priority_of_words(line: &[u8]) -> u32 {
    let has = |word: &[u8]| line.windows(word.len()).any(|w| w == word);
    if has(b" ERROR ") {
        3
    } else if has(b" WARN ") {
        4
    } else if has(b" DEBUG ") || has(b" TRACE ") {
        7
    } else {
        6
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn options_are_read_with_2_6_defaults_and_reasons() {
        let o = Options::parse("").unwrap();
        assert_eq!((o.server, o.identity.as_str(), o.facility), (Server::Default, "tarantool", 23));
        let o = Options::parse("server=unix:/tmp/s,identity=app,facility=user").unwrap();
        assert_eq!((o.server, o.identity.as_str(), o.facility), (Server::Unix("/tmp/s".into()), "app", 1));
        assert_eq!(Options::parse("server=10.0.0.1:600").unwrap().server, Server::Remote("10.0.0.1:600".into()));
        assert_eq!(Options::parse("xxx=").unwrap_err(), "bad option 'xxx='");
        assert_eq!(Options::parse("identity").unwrap_err(), "bad option 'identity'");
        assert_eq!(Options::parse("identity=a,identity=b").unwrap_err(), "duplicate option 'identity'");
        assert_eq!(Options::parse("facility=bad").unwrap_err(), "bad syslog facility option 'bad'");
    }

    #[test]
    fn a_plain_line_becomes_a_datagram_with_its_level_as_priority() {
        let o = Options::parse("identity=app").unwrap();
        let line = b"2026-12-06 08:40:00.123 [42] main/103/init.lua W> careful\n";
        assert_eq!(
            datagram(line, &o, 42, "Dec  6 08:40:00"),
            b"<188>Dec  6 08:40:00 app[42]: main/103/init.lua W> careful\n".to_vec()
        );
        let info = b"2026-12-06 08:40:00.123 [42] main/103/init.lua I> hello\n";
        assert!(datagram(info, &o, 42, "T").starts_with(b"<190>T app[42]: main/103/init.lua I> hello"));
        // The server's own line is sent whole, at its level's priority.
        let own = b"2026-12-06T08:40:00.1Z ERROR oncebox: failed\n";
        let d = datagram(own, &o, 7, "T");
        assert!(d.starts_with(b"<187>T app[7]: 2026-12-06T08:40:00.1Z ERROR"), "{}", String::from_utf8_lossy(&d));
    }
}
