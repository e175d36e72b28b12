//! Test support: start oncebox on an ephemeral loopback port and talk raw IPROTO to it.
#![allow(clippy::unwrap_used, reason = "tests fail loudly")]
#![allow(dead_code, reason = "each test binary uses a different subset")]

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

/// A running oncebox process, killed on drop.
pub struct Server {
    child: Child,
    /// `127.0.0.1:port` it listens on.
    pub addr: String,
}

impl Server {
    /// Starts oncebox with `--listen 127.0.0.1:0` plus `args`.
    pub fn start(args: &[&str]) -> Self {
        let mut child = Command::new(env!("CARGO_BIN_EXE_oncebox"))
            .args(["--listen", "127.0.0.1:0", "--log-level", "warn"])
            .args(args)
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("oncebox starts");
        let stdout = child.stdout.take().expect("stdout is piped");
        let mut line = String::new();
        BufReader::new(stdout).read_line(&mut line).expect("oncebox prints its address");
        let addr = line.trim().rsplit(' ').next().expect("address").to_owned();
        Self { child, addr }
    }

    /// A new connection that has read the greeting.
    pub fn connect(&self) -> Conn {
        Conn::open(&self.addr)
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A raw IPROTO connection.
pub struct Conn {
    pub stream: TcpStream,
    pub greeting: Vec<u8>,
}

impl Conn {
    pub fn open(addr: &str) -> Self {
        let mut stream = TcpStream::connect(addr).expect("connect");
        stream.set_read_timeout(Some(Duration::from_secs(10))).expect("timeout");
        let mut greeting = vec![0u8; 128];
        stream.read_exact(&mut greeting).expect("greeting");
        Self { stream, greeting }
    }

    /// Sends raw bytes.
    pub fn send_raw(&mut self, bytes: &[u8]) {
        self.stream.write_all(bytes).expect("send");
    }

    /// Sends `header` and `body` (already encoded maps) with a 5-byte length.
    pub fn send(&mut self, header: &[u8], body: &[u8]) {
        let len = u32::try_from(header.len() + body.len()).expect("small");
        let mut p = vec![0xce];
        p.extend_from_slice(&len.to_be_bytes());
        p.extend_from_slice(header);
        p.extend_from_slice(body);
        self.send_raw(&p);
    }

    /// Reads one reply: (raw bytes including the prefix, header map, body bytes).
    pub fn recv(&mut self) -> Reply {
        let mut prefix = [0u8; 5];
        self.stream.read_exact(&mut prefix).expect("reply length");
        assert_eq!(prefix[0], 0xce, "replies use the 5-byte length");
        let len = u32::from_be_bytes([prefix[1], prefix[2], prefix[3], prefix[4]]) as usize;
        let mut rest = vec![0u8; len];
        self.stream.read_exact(&mut rest).expect("reply");
        let mut raw = prefix.to_vec();
        raw.extend_from_slice(&rest);
        Reply::parse(raw)
    }

    /// Whether the server closed the connection (read returns EOF within the timeout).
    pub fn is_closed(&mut self) -> bool {
        let mut b = [0u8; 1];
        matches!(self.stream.read(&mut b), Ok(0))
    }
}

/// A decoded reply.
#[derive(Debug)]
pub struct Reply {
    pub raw: Vec<u8>,
    pub code: u32,
    pub sync: u64,
    pub schema_version: u32,
    pub body: Vec<u8>,
}

impl Reply {
    fn parse(raw: Vec<u8>) -> Self {
        // Tarantool 2.6's fixed header: 83 00 ce <code> 01 cf <sync> 05 ce <sv>.
        assert_eq!(&raw[5..8], &[0x83, 0x00, 0xce]);
        let code = u32::from_be_bytes(raw[8..12].try_into().unwrap());
        assert_eq!(&raw[12..14], &[0x01, 0xcf]);
        let sync = u64::from_be_bytes(raw[14..22].try_into().unwrap());
        assert_eq!(&raw[22..24], &[0x05, 0xce]);
        let schema_version = u32::from_be_bytes(raw[24..28].try_into().unwrap());
        let body = raw[28..].to_vec();
        Self { raw, code, sync, schema_version, body }
    }

    /// The error message (IPROTO_ERROR_24) of an error reply.
    pub fn error_message(&self) -> String {
        assert!(self.code & 0x8000 != 0, "not an error reply: {self:?}");
        let b = &self.body;
        assert_eq!(b[1], 0x31);
        let (len, start) = match b[2] {
            m @ 0xa0..=0xbf => ((m & 0x1f) as usize, 3),
            0xd9 => (b[3] as usize, 4),
            0xda => (u16::from_be_bytes([b[3], b[4]]) as usize, 5),
            m => panic!("unexpected marker {m:#x}"),
        };
        String::from_utf8(b[start..start + len].to_vec()).expect("utf-8 message")
    }

    /// The error code of an error reply.
    pub fn error_code(&self) -> u32 {
        assert!(self.code & 0x8000 != 0, "not an error reply: {self:?}");
        self.code & 0x7fff
    }
}

/// msgpack helpers for building requests.
pub mod mp {
    pub fn uint(v: u64) -> Vec<u8> {
        let mut o = Vec::new();
        oncebox::protocol::msgpack::write::uint(&mut o, v);
        o
    }
    pub fn str(s: &str) -> Vec<u8> {
        let mut o = Vec::new();
        oncebox::protocol::msgpack::write::str(&mut o, s.as_bytes());
        o
    }
    pub fn array(items: &[Vec<u8>]) -> Vec<u8> {
        let mut o = Vec::new();
        oncebox::protocol::msgpack::write::array_len(&mut o, items.len() as u32);
        for i in items {
            o.extend_from_slice(i);
        }
        o
    }
    /// A map with small integer keys.
    pub fn map(pairs: &[(u8, Vec<u8>)]) -> Vec<u8> {
        let mut o = Vec::new();
        oncebox::protocol::msgpack::write::map_len(&mut o, pairs.len() as u32);
        for (k, v) in pairs {
            o.push(*k);
            o.extend_from_slice(v);
        }
        o
    }
    /// A request header `{0: type, 1: sync}`.
    pub fn header(ty: u64, sync: u64) -> Vec<u8> {
        map(&[(0, uint(ty)), (1, uint(sync))])
    }
}
