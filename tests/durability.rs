//! Durable storage: restarts, kill -9 under load, damaged and locked directories, disk errors.
#![allow(clippy::unwrap_used, reason = "tests fail loudly")]

mod common;

use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use common::{create_test_space, mp, Conn, Server, TempDir};

const SPACE: u32 = 600;

fn row(id: u64, tag: &str) -> Vec<u8> {
    mp::array(&[mp::uint(id), mp::str(tag)])
}

fn start(dir: &TempDir, extra: &[&str]) -> Server {
    let data = format!("{}/data", dir.path_str());
    let mut args = vec!["--data-dir", data.as_str(), "--admin-password", "pw"];
    args.extend_from_slice(extra);
    Server::start_raw(&args)
}

fn admin(server: &Server) -> Conn {
    let mut c = server.connect();
    assert_eq!(c.auth("admin", "pw").code, 0);
    c
}

/// Creates a space, a user with a grant, and rows; returns nothing, the state is checked after restart.
fn populate(server: &Server) {
    let mut c = admin(server);
    create_test_space(&mut c, SPACE, "kept");
    for id in 1..=50u64 {
        assert_eq!(c.insert(SPACE, row(id, if id % 2 == 0 { "even" } else { "odd" })).code, 0);
    }
    let hash2 = oncebox::protocol::auth::stored_password(b"secret");
    let user = mp::array(&[
        mp::uint(40),
        mp::uint(1),
        mp::str("dora"),
        mp::str("user"),
        mp::map_str(&[("chap-sha1", mp::str(&hash2))]),
    ]);
    assert_eq!(c.insert(304, user).code, 0);
    for grant in [
        mp::array(&[mp::uint(1), mp::uint(40), mp::str("role"), mp::uint(2), mp::uint(4)]),
        mp::array(&[mp::uint(1), mp::uint(40), mp::str("universe"), mp::uint(0), mp::uint(24)]),
        mp::array(&[mp::uint(1), mp::uint(40), mp::str("space"), mp::uint(u64::from(SPACE)), mp::uint(1)]),
    ] {
        assert_eq!(c.insert(312, grant).code, 0);
    }
    // A sequence (a `_sequence` row and its `_sequence_data` value) must survive.
    let seq = mp::array(&[
        mp::uint(7),
        mp::uint(1),
        mp::str("ids"),
        mp::uint(1),
        mp::uint(1),
        mp::uint(i64::MAX as u64),
        mp::uint(1),
        mp::uint(0),
        vec![0xc2],
    ]);
    assert_eq!(c.insert(284, seq).code, 0);
    assert_eq!(c.insert(285, mp::array(&[mp::uint(7), mp::uint(41)])).code, 0);
    // A delete and an update must survive too.
    let del = mp::map(&[(0x10, mp::uint(u64::from(SPACE))), (0x20, mp::array(&[mp::uint(50)]))]);
    assert_eq!(c.request(5, &del).code, 0);
    let upd = mp::map(&[
        (0x10, mp::uint(u64::from(SPACE))),
        (0x20, mp::array(&[mp::uint(49)])),
        (0x21, mp::array(&[mp::array(&[mp::str("="), mp::uint(1), mp::str("changed")])])),
    ]);
    assert_eq!(c.request(4, &upd).code, 0);
}

fn verify(server: &Server) {
    let mut c = server.connect();
    assert_eq!(c.auth("dora", "secret").code, 0, "the user and its password survived");
    let all = c.select(SPACE, 0, mp::array(&[]), 2);
    assert_eq!(all.ids(), (1..=49).collect::<Vec<_>>());
    // The secondary index agrees with the primary.
    let even = c.select(SPACE, 1, mp::array(&[mp::str("even")]), 0);
    assert_eq!(even.ids(), (2..=48).step_by(2).collect::<Vec<_>>());
    let changed = c.select(SPACE, 1, mp::array(&[mp::str("changed")]), 0);
    assert_eq!(changed.ids(), vec![49]);
    let mut a = admin(server);
    let seq = a.select(284, 0, mp::array(&[mp::uint(7)]), 0);
    assert_eq!(seq.tuples().len(), 1, "the sequence survived");
    assert_eq!(a.select(285, 0, mp::array(&[mp::uint(7)]), 0).tuples()[0][1], mp::uint(41));
    // The grant survived: dora may read but not write.
    assert_eq!(c.insert(SPACE, row(100, "x")).error_code(), 42);
    // The server keeps working after recovery.
    let mut a = admin(server);
    assert_eq!(a.insert(SPACE, row(100, "new")).code, 0);
}

/// Schema, users, grants and data survive a clean stop (SIGTERM exits 0) and a restart.
#[test]
fn survives_clean_restart() {
    let dir = TempDir::new("clean");
    let mut s = start(&dir, &[]);
    populate(&s);
    assert!(s.terminate().success(), "SIGTERM exits 0");
    let s = start(&dir, &[]);
    verify(&s);
}

/// A stop whose in-flight commit never finishes (here a WAL write held back for
/// 60 s) gives up at the shutdown deadline and exits 1 instead of hanging; a
/// second SIGTERM ends the wait at once. Either way the directory opens again.
#[test]
fn a_stuck_stop_gives_up() {
    for second_signal in [false, true] {
        let dir = TempDir::new("stuckstop");
        let data = format!("{}/data", dir.path_str());
        let mut s = {
            let mut cmd = Command::new(env!("CARGO_BIN_EXE_oncebox"));
            cmd.env("ONCEBOX_INJECT_WAL_DELAY_MS", "60000");
            // Past any test's patience: only the second signal can end the wait.
            let deadline = if second_signal { "600000" } else { "1000" };
            cmd.env("ONCEBOX_SHUTDOWN_DEADLINE_MS", deadline);
            common::Server::start_with(cmd, &["--data-dir", &data, "--admin-password", "pw"])
        };
        let mut c = admin(&s);
        // A write to `_schema` whose commit waits in the WAL thread.
        c.send(&mp::header(2, 7), &mp::map(&[(0x10, mp::uint(272)), (0x21, mp::array(&[mp::str("stuck")]))]));
        std::thread::sleep(Duration::from_millis(300));
        s.signal_term();
        if second_signal {
            assert!(s.wait_within(Duration::from_millis(500)).is_none(), "the first signal waits for the commit");
            s.signal_term();
        }
        let status = s.wait_within(Duration::from_secs(20)).expect("the stop gives up instead of hanging");
        assert_eq!(status.code(), Some(1), "second signal: {second_signal}");
        // Never acknowledged, so either outcome is allowed; the directory must open.
        let s = start(&dir, &[]);
        let mut c = admin(&s);
        assert_eq!(c.insert(272, mp::array(&[mp::str("after")])).code, 0);
    }
}

/// Settings each crash test runs under: both durable modes, and a checkpoint after
/// every commit (so that groups are applied to the rows while writes go on).
const CRASH_SETTINGS: [&[&str]; 3] =
    [&["--wal-mode", "write"], &["--wal-mode", "fsync"], &["--wal-mode", "write", "--checkpoint-wal-threshold", "1"]];

/// The same after kill -9.
#[test]
fn survives_kill_9() {
    for settings in CRASH_SETTINGS {
        let dir = TempDir::new("kill9");
        let mut s = start(&dir, settings);
        populate(&s);
        s.kill9();
        let s = start(&dir, settings);
        verify(&s);
    }
}

/// Several writers count only acknowledged writes; kill -9 mid-load; after restart
/// every acknowledged write is there and the server keeps working.
#[test]
fn crash_under_load_loses_no_acknowledged_write() {
    for settings in CRASH_SETTINGS {
        let mode = settings.join(" ");
        let dir = TempDir::new("crash");
        let mut s = start(&dir, settings);
        {
            let mut c = admin(&s);
            create_test_space(&mut c, SPACE, "load");
        }
        let acked = Arc::new(Mutex::new(Vec::<u64>::new()));
        let stop = Arc::new(AtomicBool::new(false));
        let mut writers = Vec::new();
        for w in 0..4u64 {
            let addr = s.addr.clone();
            let acked = acked.clone();
            let stop = stop.clone();
            writers.push(std::thread::spawn(move || {
                let mut c = Conn::open(&addr);
                assert_eq!(c.auth("admin", "pw").code, 0);
                let mut id = w * 1_000_000;
                while !stop.load(Ordering::Relaxed) {
                    id += 1;
                    c.send(&mp::header(2, id), &mp::map(&[(0x10, mp::uint(u64::from(SPACE))), (0x21, row(id, "w"))]));
                    // A reply is an acknowledgement; a dead connection ends the writer.
                    match std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| c.recv())) {
                        Ok(r) if r.code == 0 => acked.lock().unwrap().push(id),
                        _ => break,
                    }
                }
            }));
        }
        std::thread::sleep(Duration::from_millis(700));
        s.kill9();
        stop.store(true, Ordering::Relaxed);
        for w in writers {
            let _ = w.join();
        }
        let acked = acked.lock().unwrap().clone();
        assert!(acked.len() > 50, "{mode}: the load ran ({} acks)", acked.len());
        let s = start(&dir, settings);
        let mut c = admin(&s);
        let present: std::collections::HashSet<u64> = c.select(SPACE, 0, mp::array(&[]), 2).ids().into_iter().collect();
        let lost: Vec<&u64> = acked.iter().filter(|id| !present.contains(id)).collect();
        assert!(lost.is_empty(), "{mode}: acknowledged writes lost after kill -9: {lost:?}");
        assert_eq!(c.insert(SPACE, row(5_000_000, "after")).code, 0);
    }
}

/// Tokened inserts under kill -9, with records evicted and checkpointed into
/// segment files all the while: after restart every acknowledged insert is there,
/// and the newest tokens are still remembered (a retry is replayed, not refused as
/// a duplicate).
#[test]
fn crash_under_tokened_load_keeps_the_records_of_acknowledged_writes() {
    const TOKEN: u8 = 0x0c;
    const STATUS: u64 = 0x0d;
    let settings = ["--wal-mode", "write", "--checkpoint-wal-threshold", "16384", "--idempotency-max-count", "2000"];
    let dir = TempDir::new("crash-tokens");
    let mut s = start(&dir, &settings);
    {
        let mut c = admin(&s);
        create_test_space(&mut c, SPACE, "load");
    }
    let insert = |c: &mut Conn, id: u64| {
        let header = mp::map(&[(0, mp::uint(2)), (1, mp::uint(id)), (TOKEN, mp::uint(id))]);
        c.send(&header, &mp::map(&[(0x10, mp::uint(u64::from(SPACE))), (0x21, row(id, "t"))]));
    };
    let last_acked = Arc::new(Mutex::new(Vec::<u64>::new()));
    let mut writers = Vec::new();
    for w in 0..4u64 {
        let addr = s.addr.clone();
        let last_acked = last_acked.clone();
        writers.push(std::thread::spawn(move || {
            let mut c = Conn::open(&addr);
            assert_eq!(c.auth("admin", "pw").code, 0);
            let (mut id, mut acked) = (w * 1_000_000, Vec::new());
            loop {
                id += 1;
                insert(&mut c, id);
                match std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| c.recv_header())) {
                    Ok(h) if h.contains(&(0, 0)) && h.contains(&(STATUS, 1)) => acked.push(id),
                    _ => break,
                }
            }
            last_acked.lock().unwrap().extend(acked);
        }));
    }
    std::thread::sleep(Duration::from_millis(1500));
    s.kill9();
    for w in writers {
        let _ = w.join();
    }
    let acked = last_acked.lock().unwrap().clone();
    assert!(acked.len() > 4000, "the load ran past the count limit ({} acks)", acked.len());
    let s = start(&dir, &settings);
    let mut c = admin(&s);
    let present: std::collections::HashSet<u64> = c.select(SPACE, 0, mp::array(&[]), 2).ids().into_iter().collect();
    let lost: Vec<&u64> = acked.iter().filter(|id| !present.contains(id)).collect();
    assert!(lost.is_empty(), "acknowledged tokened writes lost after kill -9: {lost:?}");
    // Evictions logged by records floors stay evicted: about the limit is back, not
    // every record the load wrote (a few past it may have been in flight).
    let records = c.select(500, 0, mp::array(&[]), 2).tuples().len();
    assert!((1000..=2000 + 64).contains(&records), "{records} records back after kill -9, limit 2000");
    // The last acknowledged insert of each writer is among the newest records.
    for w in 0..4u64 {
        let newest = acked.iter().filter(|id| **id / 1_000_000 == w).max().copied().unwrap();
        insert(&mut c, newest);
        let h = c.recv_header();
        assert!(h.contains(&(0, 0)) && h.contains(&(STATUS, 2)), "token {newest} replayed after kill -9: {h:?}");
    }
    let segments = std::fs::read_dir(dir.0.join("data").join("records")).unwrap().count();
    assert!(segments < 40, "segments of evicted records are dropped ({segments} left)");
}

fn run_expecting_failure(args: &[&str]) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_oncebox"))
        .args(["--listen", "127.0.0.1:0"])
        .args(args)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .output()
        .unwrap();
    assert!(!out.status.success(), "must not start");
    assert_ne!(out.status.code(), Some(101), "must not panic");
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// A second server on the same directory is refused with a clear message.
#[test]
fn directory_lock() {
    let dir = TempDir::new("lock");
    let _s = start(&dir, &[]);
    let data = format!("{}/data", dir.path_str());
    let err = run_expecting_failure(&["--data-dir", &data]);
    assert!(err.contains("in use by another oncebox process"), "{err}");
}

/// An unknown format version, a foreign directory and damaged files are refused, never started empty.
#[test]
fn unknown_version_foreign_and_damaged_directories() {
    let dir = TempDir::new("version");
    let data = format!("{}/data", dir.path_str());
    std::fs::create_dir_all(&data).unwrap();
    std::fs::write(format!("{data}/FORMAT"), "oncebox-data 999\n").unwrap();
    let err = run_expecting_failure(&["--data-dir", &data]);
    assert!(err.contains("format 'oncebox-data 999' is not supported"), "{err}");

    let foreign = TempDir::new("foreign");
    std::fs::write(foreign.0.join("notes.txt"), "mine").unwrap();
    let err = run_expecting_failure(&["--data-dir", foreign.path_str()]);
    assert!(err.contains("not an oncebox data directory"), "{err}");

    // Damage every file of either fjall database (the log, then the rows) of a real directory.
    for database in ["fjall", "fjall-rows"] {
        let dir = TempDir::new("damaged");
        let mut s = start(&dir, &[]);
        populate(&s);
        assert!(s.terminate().success());
        damage(&dir.0.join("data").join(database));
        let data = format!("{}/data", dir.path_str());
        let err = run_expecting_failure(&["--data-dir", &data]);
        assert!(err.contains("its storage cannot be opened (damaged?)"), "{database}: a clear message: {err}");
    }
}

/// The newest write-ahead log file of a data directory.
fn newest_log_file(dir: &TempDir) -> std::path::PathBuf {
    let wal = dir.0.join("data").join(oncebox::storage::xlog::DIR);
    oncebox::storage::xlog::files(&wal).unwrap().pop().unwrap().path
}

/// After kill -9 the log ends in an entry a crash cut short: it is cut off and
/// everything acknowledged is there. Damage before the last entry (a group after
/// it may have been acknowledged) stops the start with a clear message.
#[test]
fn a_torn_log_end_is_cut_off_and_damage_before_it_is_refused() {
    use oncebox::storage::xlog::{read_groups, MAGIC};
    let dir = TempDir::new("torn-log");
    let mut s = start(&dir, &[]);
    populate(&s);
    s.kill9();
    let file = newest_log_file(&dir);
    let mut bytes = std::fs::read(&file).unwrap();
    let read = read_groups(&bytes);
    assert!(read.damage.is_none() && read.groups.len() > 2, "the groups are in the log, not yet checkpointed");
    // The first 30 bytes of an entry of 100, where the next entry would go.
    let mut torn = 100u32.to_le_bytes().to_vec();
    torn.extend_from_slice(&[0x5a; 26]);
    bytes.splice(read.end..read.end + torn.len(), torn);
    std::fs::write(&file, &bytes).unwrap();
    let mut s = start(&dir, &[]);
    verify(&s);
    let mut c = admin(&s);
    for id in 101..=105u64 {
        assert_eq!(c.insert(SPACE, row(id, "more")).code, 0);
    }
    s.kill9();

    // A byte of the first entry flipped, with entries after it.
    let file = newest_log_file(&dir);
    let mut bytes = std::fs::read(&file).unwrap();
    assert!(read_groups(&bytes).groups.len() > 1);
    bytes[MAGIC.len() + 20] ^= 0xff;
    std::fs::write(&file, &bytes).unwrap();
    let data = format!("{}/data", dir.path_str());
    let err = run_expecting_failure(&["--data-dir", &data, "--admin-password", "pw"]);
    assert!(err.contains("damaged log file"), "a clear message: {err}");
}

fn damage(path: &std::path::Path) {
    for entry in std::fs::read_dir(path).unwrap() {
        let p = entry.unwrap().path();
        if p.is_dir() {
            damage(&p);
        } else if p.file_name().is_some_and(|n| n != "lock") {
            let len = std::fs::metadata(&p).unwrap().len();
            std::fs::write(&p, vec![0xa5u8; usize::try_from(len.max(16)).unwrap()]).unwrap();
        }
    }
}

/// A failed disk write is not acknowledged: the client gets ER_WAL_IO, later writes
/// are refused, reads keep working, and after restart the failed write is absent.
#[test]
fn disk_error_is_never_acknowledged() {
    let dir = TempDir::new("diskerr");
    let data = format!("{}/data", dir.path_str());
    let mut s = {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_oncebox"));
        cmd.env("ONCEBOX_INJECT_WAL_FAILURE_AFTER", "6");
        common::Server::start_with(cmd, &["--data-dir", &data, "--admin-password", "pw"])
    };
    let mut c = admin(&s);
    create_test_space(&mut c, SPACE, "disk"); // 3 commit groups
    assert_eq!(c.insert(SPACE, row(1, "a")).code, 0);
    assert_eq!(c.insert(SPACE, row(2, "b")).code, 0);
    assert_eq!(c.insert(SPACE, row(3, "c")).code, 0);
    let failed = c.insert(SPACE, row(4, "d"));
    assert_eq!(failed.error_code(), 40, "the failed write is answered with ER_WAL_IO");
    assert_eq!(failed.error_message(), "Failed to write to disk");
    // The failed write was undone in memory; reads keep working.
    assert_eq!(c.select(SPACE, 0, mp::array(&[]), 2).ids(), vec![1, 2, 3]);
    let refused = c.insert(SPACE, row(5, "e"));
    assert_eq!(refused.error_code(), 40);
    assert!(refused.error_message().contains("refused until restart"), "{}", refused.error_message());
    s.kill9();
    let s = start(&dir, &[]);
    let mut c = admin(&s);
    assert_eq!(c.select(SPACE, 0, mp::array(&[]), 2).ids(), vec![1, 2, 3]);
    assert_eq!(c.insert(SPACE, row(4, "d")).code, 0, "writes work again after restart");
}

/// `wal_mode = none` logs no commit: what `box.snapshot()` saved is back after
/// a restart (a kill -9 included), tokens with it, and nothing written after it.
#[test]
fn wal_mode_none_keeps_what_box_snapshot_saved() {
    const TOKEN: u8 = 0x0c;
    const STATUS: u64 = 0x0d;
    let dir = TempDir::new("none");
    let none = ["--wal-mode", "none"];
    let tokened_insert = |c: &mut Conn, id: u64| {
        let header = mp::map(&[(0, mp::uint(2)), (1, mp::uint(id)), (TOKEN, mp::str(&format!("t{id}")))]);
        c.send(&header, &mp::map(&[(0x10, mp::uint(u64::from(SPACE))), (0x21, row(id, "t"))]));
        c.recv_header()
    };
    let snapshot = |c: &mut Conn| {
        let r = c.request(8, &mp::map(&[(0x27, mp::str("return box.snapshot()")), (0x21, mp::array(&[]))]));
        assert_eq!(r.code, 0, "{r:?}");
    };
    let mut s = start(&dir, &none);
    {
        let mut c = admin(&s);
        create_test_space(&mut c, SPACE, "mem");
        assert_eq!(c.insert(SPACE, row(1, "a")).code, 0);
        assert!(tokened_insert(&mut c, 2).contains(&(STATUS, 1)));
        snapshot(&mut c);
        assert_eq!(c.insert(SPACE, row(3, "after the snapshot")).code, 0);
    }
    s.kill9();
    let mut s = start(&dir, &none);
    {
        let mut c = admin(&s);
        assert_eq!(
            c.select(SPACE, 0, mp::array(&[]), 2).ids(),
            vec![1, 2],
            "the snapshot's rows, no later (unlogged) ones"
        );
        let h = tokened_insert(&mut c, 2);
        assert!(h.contains(&(0, 0)) && h.contains(&(STATUS, 2)), "the token is remembered: {h:?}");
        assert_eq!(c.insert(SPACE, row(4, "d")).code, 0);
        snapshot(&mut c);
    }
    s.terminate();
    // The same directory under a WAL: the last snapshot is its state.
    let s = start(&dir, &[]);
    let mut c = admin(&s);
    assert_eq!(c.select(SPACE, 0, mp::array(&[]), 2).ids(), vec![1, 2, 4]);
}

/// Multi-statement Lua transactions under kill -9: after restart no transaction is
/// half applied (every transfer moves money between two rows; the total stays 0).
#[test]
fn crash_never_half_applies_a_transaction() {
    for mode in ["write", "fsync"] {
        let dir = TempDir::new("txn");
        let mut s = start(&dir, &["--wal-mode", mode]);
        {
            let mut c = admin(&s);
            let setup = "local s = box.schema.space.create('acc') s:create_index('pk') \
                         for i = 1, 10 do s:insert{i, 0} end \
                         function transfer(a, b, n) box.begin() \
                           box.space.acc:update(a, {{'-', 2, n}}) box.space.acc:update(b, {{'+', 2, n}}) \
                           box.commit() end";
            let r = c.request(8, &mp::map(&[(0x27, mp::str(setup)), (0x21, mp::array(&[]))]));
            assert_eq!(r.code, 0, "{r:?}");
        }
        let stop = Arc::new(AtomicBool::new(false));
        let mut clients = Vec::new();
        for w in 0..4u64 {
            let addr = s.addr.clone();
            let stop = stop.clone();
            clients.push(std::thread::spawn(move || {
                let mut c = Conn::open(&addr);
                assert_eq!(c.auth("admin", "pw").code, 0);
                let mut i = w;
                while !stop.load(Ordering::Relaxed) {
                    i += 1;
                    let (a, b) = (1 + i % 10, 1 + (i * 7 + 3) % 10);
                    let args = mp::array(&[mp::uint(a), mp::uint(b), mp::uint(1 + i % 5)]);
                    c.send(&mp::header(10, i), &mp::map(&[(0x22, mp::str("transfer")), (0x21, args)]));
                    if std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| c.recv())).is_err() {
                        break;
                    }
                }
            }));
        }
        std::thread::sleep(Duration::from_millis(600));
        s.kill9();
        stop.store(true, Ordering::Relaxed);
        for t in clients {
            let _ = t.join();
        }
        let s = start(&dir, &["--wal-mode", mode]);
        let mut c = admin(&s);
        let total = c.request(
            8,
            &mp::map(&[
                (
                    0x27,
                    mp::str(
                        "local t, moved = 0, 0 for _, r in box.space.acc:pairs() do t = t + r[2] \
                     moved = moved + math.abs(r[2]) end return t, box.space.acc:count(), moved > 0",
                    ),
                ),
                (0x21, mp::array(&[])),
            ]),
        );
        assert_eq!(total.code, 0);
        let body = total.body;
        // {0x30: [0, 10, true]}: totals balance, and transfers did happen.
        assert_eq!(&body[body.len() - 3..], &[0x00, 0x0a, 0xc3], "{mode}: a transfer was half applied: {body:?}");
    }
}
