//! Test support: start oncebox on an ephemeral loopback port and talk raw IPROTO to it.
#![allow(clippy::unwrap_used, reason = "tests fail loudly")]
#![allow(dead_code, reason = "each test binary uses a different subset")]

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

/// A fresh, empty directory under the system temp dir, removed on drop.
pub struct TempDir(pub PathBuf);

impl TempDir {
    pub fn new(tag: &str) -> Self {
        static NEXT: AtomicU32 = AtomicU32::new(0);
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        let p = std::env::temp_dir().join(format!("oncebox-test-{tag}-{}-{n}", std::process::id()));
        let _ = std::fs::remove_dir_all(&p);
        std::fs::create_dir_all(&p).unwrap();
        Self(p)
    }

    pub fn path_str(&self) -> &str {
        self.0.to_str().unwrap()
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// A running oncebox process, killed on drop.
pub struct Server {
    child: Child,
    /// `127.0.0.1:port` it listens on.
    pub addr: String,
    /// Its data directory, when the test did not provide one.
    _dir: Option<TempDir>,
}

impl Server {
    /// Starts oncebox on `127.0.0.1:0` with a fresh data directory, plus `args`.
    pub fn start(args: &[&str]) -> Self {
        let dir = TempDir::new("srv");
        let data = format!("{}/data", dir.path_str());
        let mut all = vec!["--data-dir", data.as_str()];
        all.extend_from_slice(args);
        let mut s = Self::start_raw(&all);
        s._dir = Some(dir);
        s
    }

    /// Starts oncebox on `127.0.0.1:0` with exactly `args` (the test picks the data directory).
    pub fn start_raw(args: &[&str]) -> Self {
        Self::start_with(Command::new(env!("CARGO_BIN_EXE_oncebox")), args)
    }

    /// Starts `cmd` (the oncebox binary, perhaps with extra environment) like [`Self::start_raw`].
    pub fn start_with(mut cmd: Command, args: &[&str]) -> Self {
        let mut child = cmd
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
        Self { child, addr, _dir: None }
    }

    /// The process id (for signals).
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Kills the process with SIGKILL and waits for it.
    pub fn kill9(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    /// Sends SIGTERM and waits for the exit status.
    pub fn terminate(&mut self) -> std::process::ExitStatus {
        let _ = Command::new("kill").args(["-TERM", &self.child.id().to_string()]).status();
        self.child.wait().unwrap()
    }

    /// Sends SIGTERM without waiting.
    pub fn signal_term(&self) {
        let _ = Command::new("kill").args(["-TERM", &self.child.id().to_string()]).status();
    }

    /// The exit status, if the process ends within `limit`.
    pub fn wait_within(&mut self, limit: Duration) -> Option<std::process::ExitStatus> {
        let until = std::time::Instant::now() + limit;
        loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                return Some(status);
            }
            if std::time::Instant::now() >= until {
                return None;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
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

    /// Reads one reply whose header may have more keys than Tarantool's fixed three
    /// (an idempotency status): its header as (key, unsigned value) pairs.
    pub fn recv_header(&mut self) -> Vec<(u64, u64)> {
        let mut prefix = [0u8; 5];
        self.stream.read_exact(&mut prefix).expect("reply length");
        let len = u32::from_be_bytes([prefix[1], prefix[2], prefix[3], prefix[4]]) as usize;
        let mut rest = vec![0u8; len];
        self.stream.read_exact(&mut rest).expect("reply");
        let mut r = oncebox::protocol::msgpack::Reader::new(&rest);
        let n = r.read_map_len().expect("header map");
        (0..n).map(|_| (r.read_uint().expect("key"), r.read_uint().expect("value"))).collect()
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
    /// A map with string keys.
    pub fn map_str(pairs: &[(&str, Vec<u8>)]) -> Vec<u8> {
        let mut o = Vec::new();
        oncebox::protocol::msgpack::write::map_len(&mut o, pairs.len() as u32);
        for (k, v) in pairs {
            o.extend_from_slice(&str(k));
            o.extend_from_slice(v);
        }
        o
    }
    /// A request header `{0: type, 1: sync}`.
    pub fn header(ty: u64, sync: u64) -> Vec<u8> {
        map(&[(0, uint(ty)), (1, uint(sync))])
    }
}

impl Conn {
    /// Sends a request with the next sync and waits for its reply.
    pub fn request(&mut self, ty: u64, body: &[u8]) -> Reply {
        static SYNC: AtomicU32 = AtomicU32::new(1);
        let sync = u64::from(SYNC.fetch_add(1, Ordering::Relaxed));
        self.send(&mp::header(ty, sync), body);
        let r = self.recv();
        assert_eq!(r.sync, sync);
        r
    }

    /// chap-sha1 AUTH; returns the reply.
    pub fn auth(&mut self, user: &str, password: &str) -> Reply {
        let salt = oncebox::protocol::greeting::decode_salt(&self.greeting).unwrap();
        let scramble = oncebox::protocol::auth::scramble(&salt, password.as_bytes());
        let mut bin = Vec::new();
        oncebox::protocol::msgpack::write::bin(&mut bin, &scramble);
        self.request(7, &mp::map(&[(0x23, mp::str(user)), (0x21, mp::array(&[mp::str("chap-sha1"), bin]))]))
    }

    /// INSERT (or REPLACE) a tuple given as encoded msgpack.
    pub fn insert(&mut self, space: u32, tuple: Vec<u8>) -> Reply {
        self.request(2, &mp::map(&[(0x10, mp::uint(u64::from(space))), (0x21, tuple)]))
    }

    /// SELECT by key on an index.
    pub fn select(&mut self, space: u32, index: u32, key: Vec<u8>, iterator: u64) -> Reply {
        self.request(
            1,
            &mp::map(&[
                (0x10, mp::uint(u64::from(space))),
                (0x11, mp::uint(u64::from(index))),
                (0x12, mp::uint(u64::from(u32::MAX))),
                (0x14, mp::uint(iterator)),
                (0x20, key),
            ]),
        )
    }
}

impl Reply {
    /// The tuples of an OK reply, each as its list of raw field bytes.
    pub fn tuples(&self) -> Vec<Vec<Vec<u8>>> {
        assert_eq!(self.code, 0, "not an OK reply: {self:?}");
        let mut r = oncebox::protocol::msgpack::Reader::new(&self.body);
        assert_eq!(r.read_map_len().unwrap(), 1);
        assert_eq!(r.read_uint().unwrap(), 0x30);
        let n = r.read_array_len().unwrap();
        (0..n)
            .map(|_| {
                let t = r.skip().unwrap();
                let mut tr = oncebox::protocol::msgpack::Reader::new(t);
                let m = tr.read_array_len().unwrap();
                (0..m).map(|_| tr.skip().unwrap().to_vec()).collect()
            })
            .collect()
    }

    /// The first field of every tuple, read as an unsigned integer.
    pub fn ids(&self) -> Vec<u64> {
        self.tuples().iter().map(|t| oncebox::protocol::msgpack::Reader::new(&t[0]).read_uint().unwrap()).collect()
    }
}

/// Creates space `id` named `name` with a TREE primary key on field 1 (unsigned)
/// and a non-unique TREE index on field 2 (string), as admin over `conn`.
pub fn create_test_space(conn: &mut Conn, id: u32, name: &str) {
    let format = mp::array(&[
        mp::map_str(&[("name", mp::str("id")), ("type", mp::str("unsigned"))]),
        mp::map_str(&[("name", mp::str("tag")), ("type", mp::str("string"))]),
    ]);
    let space = mp::array(&[
        mp::uint(u64::from(id)),
        mp::uint(1),
        mp::str(name),
        mp::str("memtx"),
        mp::uint(0),
        vec![0x80],
        format,
    ]);
    assert_eq!(conn.insert(280, space).code, 0);
    let pk = mp::array(&[
        mp::uint(u64::from(id)),
        mp::uint(0),
        mp::str("pk"),
        mp::str("tree"),
        mp::map_str(&[("unique", vec![0xc3])]),
        mp::array(&[mp::array(&[mp::uint(0), mp::str("unsigned")])]),
    ]);
    assert_eq!(conn.insert(288, pk).code, 0);
    let sk = mp::array(&[
        mp::uint(u64::from(id)),
        mp::uint(1),
        mp::str("by_tag"),
        mp::str("tree"),
        mp::map_str(&[("unique", vec![0xc2])]),
        mp::array(&[mp::array(&[mp::uint(1), mp::str("string")])]),
    ]);
    assert_eq!(conn.insert(288, sk).code, 0);
}
