//! The first `box.cfg{}`'s wait for its `replication` sources.
//!
//! oncebox does not replicate, but an instance given `replication` starts as
//! 2.6 starts one: it listens, connects to every source (reading a source's
//! greeting counts as connected) and waits up to `replication_connect_timeout`,
//! retrying every `replication_timeout`, while clients get the replies of an
//! instance still loading ([`crate::protocol::loading`]). Then:
//! - a new instance that reached fewer sources than the quorum stops ("failed to
//!   connect to one or more replicas"): 2.6 cannot bootstrap without them;
//! - an instance with data goes on as an orphan, read-only with status `orphan`,
//!   until the sources answer (retried in the background), as 2.6 does;
//! - a source that is another instance is logged as not followed.

use std::io::Read;
use std::net::{TcpStream, ToSocketAddrs};
use std::os::unix::net::UnixStream;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use crate::protocol::greeting::GREETING_SIZE;

/// The `replication` options the wait follows.
#[derive(Debug, Clone)]
pub struct Sources {
    /// The sources' URIs, as given (`[login:password@]host:port`, a port, `unix/:path`).
    pub uris: Vec<String>,
    /// `replication_connect_timeout`.
    pub connect_timeout: Duration,
    /// `replication_timeout`: how often an unreachable source is tried again.
    pub retry: Duration,
    /// `replication_connect_quorum`; all the sources when not given.
    pub quorum: Option<usize>,
}

impl Default for Sources {
    fn default() -> Self {
        Self { uris: Vec::new(), connect_timeout: Duration::from_secs(30), retry: Duration::from_secs(1), quorum: None }
    }
}

impl Sources {
    /// The pause between two tries of a source (never a busy loop).
    fn retry(&self) -> Duration {
        self.retry.max(Duration::from_millis(10))
    }

    /// How many sources must answer.
    #[must_use]
    pub fn needed(&self) -> usize {
        self.quorum.map_or(self.uris.len(), |q| q.min(self.uris.len()))
    }
}

/// Whether the instance is an orphan: read-only until its sources answer.
static ORPHAN: AtomicBool = AtomicBool::new(false);

/// Counts the changes of the sources: a background retry of older ones stops.
static GENERATION: AtomicU64 = AtomicU64::new(0);

/// Set when a stop signal comes while the first `box.cfg{}` waits.
static ABANDONED: AtomicBool = AtomicBool::new(false);

/// Whether the instance is an orphan (`box.info.status`, and writes are refused).
#[must_use]
pub fn is_orphan() -> bool {
    ORPHAN.load(Ordering::Relaxed)
}

/// Makes the instance an orphan or not, for sources set at run time (the Lua
/// side of `box.cfg{replication}` waits for those); any background retry of
/// earlier sources stops.
pub fn set_orphan(on: bool) {
    GENERATION.fetch_add(1, Ordering::SeqCst);
    ORPHAN.store(on, Ordering::SeqCst);
}

/// Ends any wait for the sources (the process is stopping).
pub fn abandon() {
    ABANDONED.store(true, Ordering::SeqCst);
}

/// Whether a stop came during the wait.
#[must_use]
pub fn abandoned() -> bool {
    ABANDONED.load(Ordering::SeqCst)
}

/// What a source's greeting says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Peer {
    /// The server's version ("2.6.0").
    pub version: String,
    /// Its instance uuid.
    pub uuid: uuid::Uuid,
}

/// Reads the version and instance uuid from a greeting's first line.
#[must_use]
pub fn parse_greeting(greeting: &[u8]) -> Option<Peer> {
    let line = std::str::from_utf8(greeting.get(..64)?).ok()?;
    let mut words = line.split_whitespace();
    if words.next()? != "Tarantool" {
        return None;
    }
    let version = words.next()?.to_owned();
    let uuid = words.find_map(|w| uuid::Uuid::parse_str(w).ok())?;
    Some(Peer { version, uuid })
}

/// Where a source listens: a TCP `host:port`, or a Unix socket's path.
#[must_use]
pub fn address(uri: &str) -> String {
    crate::config::normalize_listen(uri)
}

/// Connects to `uri` and reads its greeting, within `timeout`.
fn connect_once(uri: &str, timeout: Duration) -> Result<Peer, String> {
    let timeout = timeout.max(Duration::from_millis(1));
    let address = address(uri);
    let mut greeting = [0u8; GREETING_SIZE];
    if address.contains('/') {
        let mut stream = UnixStream::connect(&address).map_err(|e| e.to_string())?;
        stream.set_read_timeout(Some(timeout)).map_err(|e| e.to_string())?;
        stream.read_exact(&mut greeting).map_err(|e| e.to_string())?;
    } else {
        let resolved = address.to_socket_addrs().map_err(|e| format!("getaddrinfo: {e}"))?.next();
        let resolved = resolved.ok_or_else(|| format!("getaddrinfo: no address for {address}"))?;
        let mut stream = TcpStream::connect_timeout(&resolved, timeout).map_err(|e| e.to_string())?;
        stream.set_read_timeout(Some(timeout)).map_err(|e| e.to_string())?;
        stream.read_exact(&mut greeting).map_err(|e| e.to_string())?;
    }
    parse_greeting(&greeting).ok_or_else(|| format!("{uri} did not send a Tarantool greeting"))
}

/// Sleeps `d`, or less if the wait is abandoned.
fn nap(d: Duration) {
    let until = Instant::now() + d;
    while !abandoned() {
        let left = until.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return;
        }
        std::thread::sleep(left.min(Duration::from_millis(50)));
    }
}

/// The sources' state during a wait.
struct Attempts<'a> {
    sources: &'a Sources,
    own: uuid::Uuid,
    /// Per source: its peer once it answered; whether its failure was logged.
    peers: Vec<(Option<Peer>, bool)>,
}

impl<'a> Attempts<'a> {
    fn new(sources: &'a Sources, own: uuid::Uuid) -> Self {
        Self { sources, own, peers: vec![(None, false); sources.uris.len()] }
    }

    fn connected(&self) -> usize {
        self.peers.iter().filter(|(p, _)| p.is_some()).count()
    }

    /// Tries every source not yet connected once.
    fn round(&mut self, timeout: Duration) {
        for (uri, (peer, logged)) in self.sources.uris.iter().zip(self.peers.iter_mut()) {
            if peer.is_some() {
                continue;
            }
            match connect_once(uri, timeout) {
                Ok(p) => {
                    tracing::info!("remote master {} at {uri} running Tarantool {}", p.uuid, p.version);
                    if p.uuid != self.own {
                        tracing::warn!(
                            "oncebox does not replicate: instance {} at {uri} is not followed; this instance \
                             runs on its own",
                            p.uuid
                        );
                    }
                    *peer = Some(p);
                }
                Err(e) if !*logged => {
                    *logged = true;
                    tracing::info!("can't connect to master {uri}: {e}");
                    tracing::info!("will retry every {:.2} second", self.sources.retry.as_secs_f64());
                }
                Err(_) => {}
            }
        }
    }
}

/// Connects to the sources until all answer, `replication_connect_timeout`
/// passes or the process stops; returns how many answered.
pub fn wait(sources: &Sources, own: uuid::Uuid) -> usize {
    tracing::info!("connecting to {} replicas", sources.uris.len());
    let deadline = Instant::now() + sources.connect_timeout;
    let mut attempts = Attempts::new(sources, own);
    loop {
        attempts.round(sources.retry().min(sources.connect_timeout));
        let left = deadline.saturating_duration_since(Instant::now());
        if attempts.connected() == sources.uris.len() || left.is_zero() || abandoned() {
            break;
        }
        nap(sources.retry().min(left));
    }
    let connected = attempts.connected();
    if connected == sources.uris.len() {
        tracing::info!("connected to {connected} replicas");
    } else {
        tracing::error!(
            "failed to connect to {} out of {} replicas",
            sources.uris.len() - connected,
            sources.uris.len()
        );
    }
    connected
}

/// Makes the instance an orphan and keeps trying its sources in the background
/// until the quorum answers; then the instance is writable again.
pub fn enter_orphan_mode(sources: Sources, own: uuid::Uuid) {
    tracing::error!("entering orphan mode");
    ORPHAN.store(true, Ordering::SeqCst);
    let generation = GENERATION.load(Ordering::SeqCst);
    let current = move || GENERATION.load(Ordering::SeqCst) == generation && !abandoned();
    let spawned = std::thread::Builder::new().name("applier".into()).spawn(move || {
        let mut attempts = Attempts::new(&sources, own);
        while current() {
            attempts.round(sources.retry());
            if attempts.connected() >= sources.needed() {
                if GENERATION.compare_exchange(generation, generation + 1, Ordering::SeqCst, Ordering::SeqCst).is_ok() {
                    ORPHAN.store(false, Ordering::SeqCst);
                    tracing::error!("leaving orphan mode");
                }
                return;
            }
            nap(sources.retry());
        }
    });
    if let Err(e) = spawned {
        tracing::error!("no thread to retry the replication sources: {e}; the instance stays an orphan");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_a_greeting_line() {
        let uuid = uuid::Uuid::parse_str("d5214287-f350-4a08-b1a3-09b225f3c082").unwrap();
        let g = crate::protocol::greeting::encode("2.6.0", &uuid, &[1; 32]);
        assert_eq!(parse_greeting(&g), Some(Peer { version: "2.6.0".into(), uuid }));
        assert_eq!(parse_greeting(b"SSH-2.0-OpenSSH_9.6"), None);
        let mut not_tarantool = g;
        not_tarantool[..9].copy_from_slice(b"Postgres ");
        assert_eq!(parse_greeting(&not_tarantool), None);
    }

    #[test]
    fn the_quorum_is_all_sources_unless_given() {
        let mut s = Sources { uris: vec!["a:1".into(), "b:2".into()], ..Sources::default() };
        assert_eq!(s.needed(), 2);
        s.quorum = Some(1);
        assert_eq!(s.needed(), 1);
        s.quorum = Some(5);
        assert_eq!(s.needed(), 2);
    }

    #[test]
    fn a_source_nobody_listens_on_is_not_connected() {
        // A port just released: connecting is refused at once.
        let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
        let sources = Sources {
            uris: vec![format!("127.0.0.1:{port}")],
            connect_timeout: Duration::from_millis(300),
            retry: Duration::from_millis(100),
            quorum: None,
        };
        let started = Instant::now();
        assert_eq!(wait(&sources, uuid::Uuid::nil()), 0);
        assert!(started.elapsed() >= Duration::from_millis(300), "waited out the timeout");
    }

    #[test]
    fn a_listening_source_is_connected_by_its_greeting() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let uuid = uuid::Uuid::new_v4();
        let server = std::thread::spawn(move || {
            let (mut s, _) = listener.accept().unwrap();
            std::io::Write::write_all(&mut s, &crate::protocol::greeting::encode("2.6.0", &uuid, &[0; 32])).unwrap();
        });
        let sources = Sources { uris: vec![format!("guest:@127.0.0.1:{port}")], ..Sources::default() };
        assert_eq!(wait(&sources, uuid), 1);
        server.join().unwrap();
    }
}
