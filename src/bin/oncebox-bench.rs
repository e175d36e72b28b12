//! `oncebox-bench`: a load generator for oncebox and real Tarantool, side by side.
//!
//! Opens N connections, keeps D requests in flight on each (closed loop), runs
//! one workload for a fixed time, and prints throughput and latency
//! percentiles. With `--depth 1` the latency figures are per-request round trips.
//!
//! ```text
//! oncebox-bench --addr 127.0.0.1:3301 --user admin --password pw --setup \
//!               --workload replace --connections 4 --depth 64 --seconds 5
//! ```
//! `--setup` creates space `bench` (id 600: id unsigned, counter unsigned,
//! payload string) through `_space`/`_index` inserts, which works on both servers.
//! `--load N` fills it with N tuples first; with `--load-workload W` the N load
//! requests are those of workload W instead (e.g. `replace-token` or `call-dedup`
//! to leave N remembered tokens behind). `--eval CODE` runs Lua on the server
//! (IPROTO EVAL) after setup, e.g. to define the function `call` invokes;
//! `--check CODE` runs Lua after the load, e.g. to check a count. A Lua error in
//! either makes the tool exit non-zero.

use std::time::{Duration, Instant};

use oncebox::protocol::msgpack::{write, Reader};
use oncebox::protocol::{auth, greeting};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

const SPACE: u64 = 600;

#[derive(Debug, Clone)]
struct Options {
    addr: String,
    user: Option<String>,
    password: String,
    connections: usize,
    depth: usize,
    seconds: f64,
    workload: String,
    keys: u64,
    setup: bool,
    load: u64,
    load_workload: Option<String>,
    eval: Vec<String>,
    check: Vec<String>,
    json: bool,
}

fn usage() -> ! {
    eprintln!(
        "usage: oncebox-bench --addr HOST:PORT [--user U --password P] [--setup] [--eval LUA]...\n\
         \x20      [--check LUA]...\n\
         \x20      [--load N [--load-workload W]]\n\
         \x20      [--workload ping|select|insert|replace|update|upsert|call|\n\
         \x20                  replace-token|retry-storm|call-dedup] [--connections 4]\n\
         \x20      [--depth 64] [--seconds 5] [--keys 100000] [--json]"
    );
    std::process::exit(2)
}

fn parse() -> Options {
    let mut o = Options {
        addr: "127.0.0.1:3301".into(),
        user: None,
        password: String::new(),
        connections: 4,
        depth: 64,
        seconds: 5.0,
        workload: "ping".into(),
        keys: 100_000,
        setup: false,
        load: 0,
        load_workload: None,
        eval: Vec::new(),
        check: Vec::new(),
        json: false,
    };
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        let mut val = || args.next().unwrap_or_else(|| usage());
        match a.as_str() {
            "--addr" => o.addr = val(),
            "--user" => o.user = Some(val()),
            "--password" => o.password = val(),
            "--connections" => o.connections = val().parse().unwrap_or_else(|_| usage()),
            "--depth" => o.depth = val().parse().unwrap_or_else(|_| usage()),
            "--seconds" => o.seconds = val().parse().unwrap_or_else(|_| usage()),
            "--workload" => o.workload = val(),
            "--keys" => o.keys = val().parse().unwrap_or_else(|_| usage()),
            "--load" => o.load = val().parse().unwrap_or_else(|_| usage()),
            "--load-workload" => o.load_workload = Some(val()),
            "--eval" => o.eval.push(val()),
            "--check" => o.check.push(val()),
            "--setup" => o.setup = true,
            "--json" => o.json = true,
            _ => usage(),
        }
    }
    o
}

/// One connection: greeting read, optionally authenticated.
struct Client {
    stream: TcpStream,
    buf: Vec<u8>,
}

impl Client {
    async fn connect(o: &Options) -> std::io::Result<Self> {
        // A server still bootstrapping answers ER_LOADING (116): wait for it.
        for _ in 0..200 {
            match Self::connect_once(o).await {
                Err(e) if e.to_string().contains("0x8074") => tokio::time::sleep(Duration::from_millis(50)).await,
                other => return other,
            }
        }
        Self::connect_once(o).await
    }

    async fn connect_once(o: &Options) -> std::io::Result<Self> {
        let mut stream = TcpStream::connect(&o.addr).await?;
        stream.set_nodelay(true)?;
        let mut g = [0u8; 128];
        stream.read_exact(&mut g).await?;
        let mut c = Self { stream, buf: Vec::with_capacity(1 << 16) };
        if let Some(user) = &o.user {
            let salt = greeting::decode_salt(&g).ok_or_else(|| std::io::Error::other("bad greeting"))?;
            let scramble = auth::scramble(&salt, o.password.as_bytes());
            let mut body = Vec::new();
            write::map_len(&mut body, 2);
            write::uint(&mut body, 0x23);
            write::str(&mut body, user.as_bytes());
            write::uint(&mut body, 0x21);
            write::array_len(&mut body, 2);
            write::str(&mut body, b"chap-sha1");
            write::bin(&mut body, &scramble);
            let code = c.call(7, &body).await?;
            if code != 0 {
                return Err(std::io::Error::other(format!("auth failed with code {code:#x}")));
            }
        }
        Ok(c)
    }

    /// Sends one request and waits for its reply; returns the reply code.
    async fn call(&mut self, ty: u64, body: &[u8]) -> std::io::Result<u64> {
        let mut p = Vec::new();
        frame(&mut p, ty, 1, body);
        self.stream.write_all(&p).await?;
        let (code, _) = self.read_reply().await?;
        Ok(code)
    }

    /// A reply already buffered, if any: (code, sync).
    fn buffered_reply(&mut self) -> Option<(u64, u64)> {
        if self.buf.len() < 5 {
            return None;
        }
        let len = u32::from_be_bytes([self.buf[1], self.buf[2], self.buf[3], self.buf[4]]) as usize;
        if self.buf.len() < 5 + len {
            return None;
        }
        // Fixed 2.6 header: 83 00 ce <code u32> 01 cf <sync u64> ...
        let code = u64::from(u32::from_be_bytes([self.buf[8], self.buf[9], self.buf[10], self.buf[11]]));
        let mut s = [0u8; 8];
        s.copy_from_slice(&self.buf[14..22]);
        self.buf.drain(..5 + len);
        Some((code, u64::from_be_bytes(s)))
    }

    /// Reads one reply: (code, sync).
    async fn read_reply(&mut self) -> std::io::Result<(u64, u64)> {
        loop {
            if let Some(r) = self.buffered_reply() {
                return Ok(r);
            }
            let mut chunk = [0u8; 65536];
            let n = self.stream.read(&mut chunk).await?;
            if n == 0 {
                return Err(std::io::Error::other("connection closed"));
            }
            self.buf.extend_from_slice(&chunk[..n]);
        }
    }
}

/// Appends a framed request `{0: ty, 1: sync}` + body.
fn frame(out: &mut Vec<u8>, ty: u64, sync: u64, body: &[u8]) {
    frame_with_token(out, ty, sync, None, body);
}

/// Appends a framed request, with an idempotency token (header key 0x0c) if given.
fn frame_with_token(out: &mut Vec<u8>, ty: u64, sync: u64, token: Option<u64>, body: &[u8]) {
    let mut h = Vec::with_capacity(24);
    write::map_len(&mut h, if token.is_some() { 3 } else { 2 });
    write::uint(&mut h, 0);
    write::uint(&mut h, ty);
    write::uint(&mut h, 1);
    write::uint(&mut h, sync);
    if let Some(t) = token {
        write::uint(&mut h, 0x0c);
        write::uint(&mut h, t);
    }
    let len = u32::try_from(h.len() + body.len()).unwrap_or(u32::MAX);
    out.push(0xce);
    out.extend_from_slice(&len.to_be_bytes());
    out.extend_from_slice(&h);
    out.extend_from_slice(body);
}

fn tuple(id: u64, counter: u64) -> Vec<u8> {
    let mut t = Vec::new();
    write::array_len(&mut t, 3);
    write::uint(&mut t, id);
    write::uint(&mut t, counter);
    write::str(&mut t, b"payload-payload-payload-payload-");
    t
}

/// An id for operation `n` on connection `conn` that no other operation of this run
/// or of an earlier run uses: the run's start time (milliseconds, modulo 2^24) in the
/// top 24 bits, the connection in the next 8, `n` in the low 32. Insert ids and
/// tokens are made from it, so that a workload run again on the same server (the
/// side-by-side runner's rounds) inserts new rows and sends new tokens.
fn unique_id(conn: usize, n: u64) -> u64 {
    static RUN: std::sync::OnceLock<u64> = std::sync::OnceLock::new();
    let run = *RUN.get_or_init(|| {
        let ms = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_millis());
        u64::try_from(ms % (1 << 24)).unwrap_or(0)
    });
    run << 40 | (conn as u64 % 255 + 1) << 32 | (n & 0xffff_ffff)
}

/// The token of operation `n` on connection `conn`: unique per operation, except that
/// `retry-storm` resends every fourth operation under the previous token.
fn token_for(workload: &str, n: u64, conn: usize) -> Option<u64> {
    let unique = unique_id(conn, n);
    match workload {
        "replace-token" => Some(unique),
        "retry-storm" => Some(if n.is_multiple_of(4) { unique - 1 } else { unique }),
        _ => None,
    }
}

/// The request for one operation of a workload: (type, body).
fn request(workload: &str, n: u64, keys: u64, conn: usize) -> (u64, Vec<u8>) {
    let key = n % keys.max(1);
    let mut b = Vec::new();
    match workload {
        // A retry resends the very request its token was first used with.
        "replace-token" | "retry-storm" => {
            request("replace", if workload == "retry-storm" && n.is_multiple_of(4) { n - 1 } else { n }, keys, conn)
        }
        "call-dedup" => {
            // Tarantool's way today: a Lua function that dedups in a space, in box.atomic.
            write::map_len(&mut b, 2);
            write::uint(&mut b, 0x22);
            write::str(&mut b, b"dedup_replace");
            write::uint(&mut b, 0x21);
            write::array_len(&mut b, 2);
            write::uint(&mut b, unique_id(conn, n));
            b.extend_from_slice(&tuple(key, n));
            (10, b)
        }
        "ping" => (0x40, b),
        "select" => {
            write::map_len(&mut b, 5);
            for (k, v) in [(0x10, SPACE), (0x11, 0), (0x12, 1), (0x14, 0)] {
                write::uint(&mut b, k);
                write::uint(&mut b, v);
            }
            write::uint(&mut b, 0x20);
            write::array_len(&mut b, 1);
            write::uint(&mut b, key);
            (1, b)
        }
        "insert" | "replace" => {
            write::map_len(&mut b, 2);
            write::uint(&mut b, 0x10);
            write::uint(&mut b, SPACE);
            write::uint(&mut b, 0x21);
            // Inserts use fresh ids per connection; replaces cycle over the key range.
            let id = if workload == "insert" { unique_id(conn, n) } else { key };
            b.extend_from_slice(&tuple(id, n));
            (if workload == "insert" { 2 } else { 3 }, b)
        }
        "update" => {
            write::map_len(&mut b, 3);
            write::uint(&mut b, 0x10);
            write::uint(&mut b, SPACE);
            write::uint(&mut b, 0x20);
            write::array_len(&mut b, 1);
            write::uint(&mut b, key);
            write::uint(&mut b, 0x21);
            write::array_len(&mut b, 1);
            write::array_len(&mut b, 3);
            write::str(&mut b, b"+");
            write::uint(&mut b, 1);
            write::uint(&mut b, 1);
            (4, b)
        }
        "upsert" => {
            write::map_len(&mut b, 3);
            write::uint(&mut b, 0x10);
            write::uint(&mut b, SPACE);
            write::uint(&mut b, 0x21);
            b.extend_from_slice(&tuple(key, 0));
            write::uint(&mut b, 0x28);
            write::array_len(&mut b, 1);
            write::array_len(&mut b, 3);
            write::str(&mut b, b"+");
            write::uint(&mut b, 1);
            write::uint(&mut b, 1);
            (9, b)
        }
        "call" => {
            write::map_len(&mut b, 2);
            write::uint(&mut b, 0x22);
            write::str(&mut b, b"bench_fn");
            write::uint(&mut b, 0x21);
            write::array_len(&mut b, 1);
            write::uint(&mut b, key);
            (10, b)
        }
        _ => usage(),
    }
}

async fn setup(o: &Options) -> std::io::Result<()> {
    let mut c = Client::connect(o).await?;
    let mut space = Vec::new();
    write::map_len(&mut space, 2);
    write::uint(&mut space, 0x10);
    write::uint(&mut space, 280);
    write::uint(&mut space, 0x21);
    write::array_len(&mut space, 7);
    write::uint(&mut space, SPACE);
    write::uint(&mut space, 1);
    write::str(&mut space, b"bench");
    write::str(&mut space, b"memtx");
    write::uint(&mut space, 0);
    write::map_len(&mut space, 0);
    write::array_len(&mut space, 0);
    let code = c.call(2, &space).await?;
    let mut index = Vec::new();
    write::map_len(&mut index, 2);
    write::uint(&mut index, 0x10);
    write::uint(&mut index, 288);
    write::uint(&mut index, 0x21);
    write::array_len(&mut index, 6);
    write::uint(&mut index, SPACE);
    write::uint(&mut index, 0);
    write::str(&mut index, b"pk");
    write::str(&mut index, b"tree");
    write::map_len(&mut index, 1);
    write::str(&mut index, b"unique");
    write::bool(&mut index, true);
    write::array_len(&mut index, 1);
    write::array_len(&mut index, 2);
    write::uint(&mut index, 0);
    write::str(&mut index, b"unsigned");
    let code2 = c.call(2, &index).await?;
    // 0x8003 / 0x800a: the space exists already (a rerun); fine.
    for code in [code, code2] {
        if code != 0 && code != 0x8003 && code != 0x800a {
            return Err(std::io::Error::other(format!("setup failed with code {code:#x}")));
        }
    }
    Ok(())
}

/// Runs each Lua chunk (IPROTO EVAL, no arguments); a Lua error fails.
async fn eval(o: &Options, chunks: &[String]) -> std::io::Result<()> {
    let mut c = Client::connect(o).await?;
    for code in chunks {
        let mut b = Vec::new();
        write::map_len(&mut b, 2);
        write::uint(&mut b, 0x27);
        write::str(&mut b, code.as_bytes());
        write::uint(&mut b, 0x21);
        write::array_len(&mut b, 0);
        let mut p = Vec::new();
        frame(&mut p, 8, 1, &b);
        c.stream.write_all(&p).await?;
        // The reply is read whole here (not through `read_reply`) for its error message.
        loop {
            if c.buf.len() >= 5 {
                let len = u32::from_be_bytes([c.buf[1], c.buf[2], c.buf[3], c.buf[4]]) as usize;
                if c.buf.len() >= 5 + len {
                    break;
                }
            }
            let mut chunk = [0u8; 65536];
            let n = c.stream.read(&mut chunk).await?;
            if n == 0 {
                return Err(std::io::Error::other("connection closed"));
            }
            c.buf.extend_from_slice(&chunk[..n]);
        }
        let packet: Vec<u8> = c.buf.clone();
        let Some((rc, _)) = c.buffered_reply() else { return Err(std::io::Error::other("short reply")) };
        if rc != 0 {
            let message = error_message(&packet[5..]).unwrap_or_default();
            return Err(std::io::Error::other(format!("{code}: error {rc:#x}: {message}")));
        }
    }
    Ok(())
}

/// The error message (IPROTO_ERROR_24, key 0x31) of a reply: header map, then body map.
fn error_message(packet: &[u8]) -> Option<String> {
    let mut r = Reader::new(packet);
    r.skip().ok()?;
    for _ in 0..r.read_map_len().ok()? {
        if r.read_uint().ok()? == 0x31 {
            return Some(String::from_utf8_lossy(r.read_str().ok()?).into_owned());
        }
        r.skip().ok()?;
    }
    None
}

/// Fills the space with `n` tuples using `replace` (or `n` requests of
/// `--load-workload`), pipelined.
async fn load(o: &Options, n: u64) -> std::io::Result<()> {
    let per = n.div_ceil(o.connections as u64);
    let mut tasks = Vec::new();
    for conn in 0..o.connections {
        let o = o.clone();
        tasks.push(tokio::spawn(async move {
            let mut c = Client::connect(&o).await?;
            let start = conn as u64 * per;
            let end = (start + per).min(n);
            let mut next = start;
            let mut outstanding = 0usize;
            while next < end || outstanding > 0 {
                let mut out = Vec::new();
                while next < end && outstanding < 256 {
                    if let Some(wl) = &o.load_workload {
                        // Operation numbers start at 1, as in `drive` (a retry refers to n - 1).
                        let (ty, body) = request(wl, next + 1, o.keys, conn);
                        frame_with_token(&mut out, ty, next, token_for(wl, next + 1, conn), &body);
                    } else {
                        let mut b = Vec::new();
                        write::map_len(&mut b, 2);
                        write::uint(&mut b, 0x10);
                        write::uint(&mut b, SPACE);
                        write::uint(&mut b, 0x21);
                        b.extend_from_slice(&tuple(next, 0));
                        frame(&mut out, 3, next, &b);
                    }
                    next += 1;
                    outstanding += 1;
                }
                c.stream.write_all(&out).await?;
                let (code, _) = c.read_reply().await?;
                if code != 0 {
                    return Err(std::io::Error::other(format!("load failed with code {code:#x}")));
                }
                outstanding -= 1;
            }
            Ok::<(), std::io::Error>(())
        }));
    }
    for t in tasks {
        t.await.map_err(std::io::Error::other)??;
    }
    Ok(())
}

struct ConnResult {
    ops: u64,
    errors: u64,
    latencies_us: Vec<u32>,
}

async fn drive(o: Options, conn: usize, deadline: Instant) -> std::io::Result<ConnResult> {
    let mut c = Client::connect(&o).await?;
    let mut sent_at = std::collections::HashMap::with_capacity(o.depth * 2);
    let mut n: u64 = conn as u64 * 7919;
    let mut sync: u64 = 0;
    let mut res = ConnResult { ops: 0, errors: 0, latencies_us: Vec::new() };
    let mut out = Vec::new();
    let send =
        |out: &mut Vec<u8>, sync: &mut u64, n: &mut u64, sent_at: &mut std::collections::HashMap<u64, Instant>| {
            *sync += 1;
            *n += 1;
            let (ty, body) = request(&o.workload, *n, o.keys, conn);
            frame_with_token(out, ty, *sync, token_for(&o.workload, *n, conn), &body);
            sent_at.insert(*sync, Instant::now());
        };
    for _ in 0..o.depth {
        send(&mut out, &mut sync, &mut n, &mut sent_at);
    }
    c.stream.write_all(&out).await?;
    while Instant::now() < deadline {
        let first = c.read_reply().await?;
        out.clear();
        // Every reply already buffered is answered with one write.
        let mut next = Some(first);
        while let Some((code, rsync)) = next {
            if let Some(t) = sent_at.remove(&rsync) {
                res.latencies_us.push(u32::try_from(t.elapsed().as_micros()).unwrap_or(u32::MAX));
            }
            res.ops += 1;
            if code != 0 {
                res.errors += 1;
            }
            send(&mut out, &mut sync, &mut n, &mut sent_at);
            next = c.buffered_reply();
        }
        c.stream.write_all(&out).await?;
    }
    Ok(res)
}

fn percentile(sorted: &[u32], p: f64) -> u32 {
    if sorted.is_empty() {
        return 0;
    }
    #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss, clippy::cast_precision_loss)]
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[i.min(sorted.len() - 1)]
}

fn main() {
    let o = parse();
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().expect("runtime");
    rt.block_on(async move {
        if o.setup {
            if let Err(e) = setup(&o).await {
                eprintln!("oncebox-bench: setup: {e}");
                std::process::exit(1);
            }
        }
        if !o.eval.is_empty() {
            if let Err(e) = eval(&o, &o.eval).await {
                eprintln!("oncebox-bench: eval: {e}");
                std::process::exit(1);
            }
        }
        if o.load > 0 {
            let t = Instant::now();
            if let Err(e) = load(&o, o.load).await {
                eprintln!("oncebox-bench: load: {e}");
                std::process::exit(1);
            }
            eprintln!(
                "loaded {} {} in {:.2}s",
                o.load,
                if o.load_workload.is_some() { "requests" } else { "tuples" },
                t.elapsed().as_secs_f64()
            );
        }
        if !o.check.is_empty() {
            if let Err(e) = eval(&o, &o.check).await {
                eprintln!("oncebox-bench: check: {e}");
                std::process::exit(1);
            }
        }
        if o.seconds <= 0.0 {
            return;
        }
        let started = Instant::now();
        let deadline = started + Duration::from_secs_f64(o.seconds);
        let tasks: Vec<_> = (0..o.connections).map(|c| tokio::spawn(drive(o.clone(), c, deadline))).collect();
        let mut ops = 0;
        let mut errors = 0;
        let mut lat = Vec::new();
        for t in tasks {
            match t.await {
                Ok(Ok(r)) => {
                    ops += r.ops;
                    errors += r.errors;
                    lat.extend(r.latencies_us);
                }
                Ok(Err(e)) => {
                    eprintln!("oncebox-bench: connection failed: {e}");
                    std::process::exit(1);
                }
                Err(e) => {
                    eprintln!("oncebox-bench: {e}");
                    std::process::exit(1);
                }
            }
        }
        let secs = started.elapsed().as_secs_f64();
        lat.sort_unstable();
        #[allow(clippy::cast_precision_loss)]
        let rate = ops as f64 / secs;
        let (p50, p99, p999) = (percentile(&lat, 0.5), percentile(&lat, 0.99), percentile(&lat, 0.999));
        if o.json {
            println!(
                "{{\"workload\":\"{}\",\"ops\":{ops},\"errors\":{errors},\"seconds\":{secs:.3},\"ops_per_sec\":{rate:.0},\"p50_us\":{p50},\"p99_us\":{p99},\"p999_us\":{p999}}}",
                o.workload
            );
        } else {
            println!(
                "{:<8} {:>10.0} ops/s  errors {errors}  p50 {p50} us  p99 {p99} us  p999 {p999} us  ({} conns x {} deep, {secs:.1}s)",
                o.workload, rate, o.connections, o.depth
            );
        }
        if errors > 0 && !o.json {
            eprintln!("warning: {errors} requests failed");
        }
    });
}
