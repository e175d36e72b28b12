"""Idempotent requests (DESIGN §3) over IPROTO: header key 0x0c, status key 0x0d.

Covers replay, mismatch, token validation, per-user scope, failure releasing the
token, modes, `_idempotency` for admin, every eviction cause, restart and kill -9,
a race of one token over many connections, and the lost-reply test through a
proxy that cuts connections (run with and without tokens, to show the test can fail).
"""
import base64
import hashlib
import os
import signal
import socket
import struct
import subprocess
import threading
import time
import uuid

import msgpack
import pytest

from conftest import ADMIN_PASSWORD, ONCEBOX, start_oncebox, wait_port
from iproto_raw import DELETE, EVAL, INSERT, PING, REPLACE, SELECT, UPDATE, UPSERT, Raw, packet

TOKEN, STATUS = 0x0C, 0x0D
SPACE = 600
EXECUTED, REPLAYED, JOINED = 1, 2, 3


def stored(password):
    return base64.b64encode(hashlib.sha1(hashlib.sha1(password.encode()).digest()).digest()).decode()


def setup_schema(inst):
    c = Raw(inst.host, inst.port)
    assert c.auth("admin", ADMIN_PASSWORD)[0][0] == 0
    rows = [
        (280, [SPACE, 1, "counters", "memtx", 0, {}, [{"name": "id", "type": "unsigned"},
                                                     {"name": "n", "type": "integer"}]]),
        (288, [SPACE, 0, "pk", "tree", {"unique": True}, [[0, "unsigned"]]]),
        (304, [40, 1, "alice", "user", {"chap-sha1": stored("a")}]),
        (304, [41, 1, "bob", "user", {"chap-sha1": stored("b")}]),
    ]
    for uid in (40, 41):
        rows += [(312, [1, uid, "role", 2, 4]), (312, [1, uid, "universe", 0, 24]),
                 (312, [1, uid, "space", SPACE, 3])]
    for space, row in rows:
        h, b, _ = c.request(INSERT, {0x10: space, 0x21: row})
        assert h[0] == 0, b
    for i in range(1, 11):
        assert c.request(INSERT, {0x10: SPACE, 0x21: [i, 0]})[0][0] == 0
    c.close()


def admin(inst):
    c = Raw(inst.host, inst.port)
    assert c.auth("admin", ADMIN_PASSWORD)[0][0] == 0
    return c


def incr(c, key, token=None, by=1):
    extra = {} if token is None else {"_12": token}
    return c.request(UPDATE, {0x10: SPACE, 0x20: [key], 0x21: [["+", 1, by]]}, **extra)


def counter(c, key):
    h, b, _ = c.request(SELECT, {0x10: SPACE, 0x12: 1, 0x20: [key]})
    return b[0x30][0][1]


@pytest.fixture
def ob(request):
    extra = getattr(request, "param", ())
    inst = start_oncebox(*extra)
    setup_schema(inst)
    yield inst
    inst.stop()


def test_replay_returns_the_first_reply_byte_for_byte(ob):
    c = admin(ob)
    h1, b1, raw1 = incr(c, 1, "t-1")
    assert h1[0] == 0 and h1[STATUS] == EXECUTED and b1[0x30] == [[1, 1]]
    h2, b2, raw2 = incr(c, 1, "t-1")
    assert h2[STATUS] == REPLAYED
    # Same body bytes (the header differs only in sync and status).
    assert raw2[5 + 26:] == raw1[5 + 26:]
    assert counter(c, 1) == 1
    # A different connection replays too.
    d = admin(ob)
    assert incr(d, 1, "t-1")[0][STATUS] == REPLAYED
    assert counter(d, 1) == 1


def test_a_retried_insert_keeps_the_key_its_sequence_gave_it(ob):
    """The sequence's step is part of the tokened write: a retry replays the first
    key and does not draw another."""
    c = admin(ob)
    made = "box.schema.space.create('gen'):create_index('pk', {sequence = true}) return box.space.gen.id"
    h, b, _ = c.request(EVAL, {0x27: made, 0x21: []})
    assert h[0] == 0, b
    gen = b[0x30][0]
    first = c.request(INSERT, {0x10: gen, 0x21: [None, "x"]}, _12="seq-1")
    again = c.request(INSERT, {0x10: gen, 0x21: [None, "x"]}, _12="seq-1")
    assert first[0][STATUS] == EXECUTED and again[0][STATUS] == REPLAYED
    assert first[1][0x30] == again[1][0x30] == [[1, "x"]]
    assert c.request(INSERT, {0x10: gen, 0x21: [None, "y"]})[1][0x30] == [[2, "y"]]


def test_plain_requests_get_no_new_header_keys(ob):
    c = admin(ob)
    h, _, _ = incr(c, 2)
    assert set(h) == {0, 1, 5}
    h, _, _ = c.request(PING, None)
    assert set(h) == {0, 1, 5}


def test_reads_accept_and_ignore_tokens(ob):
    c = admin(ob)
    for tok in ("x", b"", None, [1], -5):
        h, b, _ = c.request(SELECT, {0x10: SPACE, 0x12: 1, 0x20: [3]}, _12=tok)
        assert h[0] == 0 and STATUS not in h, (tok, b)
        h, _, _ = c.request(PING, None, _12=tok)
        assert h[0] == 0 and STATUS not in h


def test_a_retry_sent_after_the_reply_is_replayed_not_joined(ob):
    """The WAL thread sends a group's replies itself once the group is durable; it
    reports the group to the TX thread first, so a retry sent after its reply came
    (here on another connection, the quickest way round) finds the first attempt
    finished: status 2, never 3, every time."""
    first, second = admin(ob), admin(ob)
    for i in range(300):
        token = f"after-reply-{i}"
        assert incr(first, 1, token)[0][STATUS] == EXECUTED
        h, _, _ = incr(second, 1, token)
        assert h[STATUS] == REPLAYED, (i, h)
    assert counter(first, 1) == 300
    first.close()
    second.close()


def test_mismatch_is_refused_and_applies_nothing(ob):
    c = admin(ob)
    assert incr(c, 3, "t-m")[0][STATUS] == EXECUTED
    h, b, _ = incr(c, 3, "t-m", by=5)
    assert h[0] == 0x8000 | 4002, b
    assert "different request" in b[0x31]
    h, b, _ = c.request(DELETE, {0x10: SPACE, 0x20: [3]}, _12="t-m")
    assert h[0] == 0x8000 | 4002
    assert counter(c, 3) == 1


def test_same_request_from_another_encoding_matches(ob):
    c = admin(ob)
    # The same UPDATE, with integers in wider encodings and index_id spelled out.
    body = {0x10: SPACE, 0x20: [4], 0x21: [["+", 1, 1]]}
    assert c.request(UPDATE, body, _12="t-enc")[0][STATUS] == EXECUTED
    header = msgpack.packb({0: UPDATE, 1: 999, 0x0C: "t-enc"})
    wide = (b"\x83" + b"\x10\xcd" + struct.pack(">H", SPACE) + b"\x20\x91\xce" + struct.pack(">I", 4)
            + b"\x21\x91\x93\xa1+\xcc\x01\xcf" + struct.pack(">Q", 1))
    c.send_packet(header + wide)
    h, b, _ = c.recv()
    assert h[0] == 0 and h[STATUS] == REPLAYED, b
    assert counter(c, 4) == 1


def test_invalid_tokens_are_refused(ob):
    c = admin(ob)
    for tok in ("", b"", None, [1], {"a": 1}, -1, 0, 1.5, True, "x" * 257,
                msgpack.ExtType(2, b"short"), msgpack.ExtType(5, b"0123456789abcdef")):
        h, b, _ = c.request(UPDATE, {0x10: SPACE, 0x20: [5], 0x21: [["+", 1, 1]]}, _12=tok)
        assert h[0] == 0x8000 | 4001, (tok, b)
        assert b[0x31].startswith("Invalid idempotency token"), b
    assert counter(c, 5) == 0


def test_token_kinds_and_identity(ob):
    c = admin(ob)
    kinds = ["s", b"s", 7, msgpack.ExtType(2, uuid.uuid4().bytes), "x" * 256]
    for tok in kinds:
        assert incr(c, 6, tok)[0][STATUS] == EXECUTED, tok
    # "1", b"1" and 1 are three different tokens.
    for tok in ("1", b"1", 1):
        assert incr(c, 7, tok)[0][STATUS] == EXECUTED, tok
    assert counter(c, 6) == len(kinds)
    assert counter(c, 7) == 3
    for tok in kinds:
        assert incr(c, 6, tok)[0][STATUS] == REPLAYED


def test_one_read_of_many_tokened_requests(ob):
    """A batch TX handles together (its token lookups start at once): every kind of
    token, a retry inside the batch, an invalid token and a read with a token, each
    answered as if sent alone and in its own order."""
    c = admin(ob)
    u = msgpack.ExtType(2, uuid.uuid4().bytes)
    bump = {0x10: SPACE, 0x20: [4], 0x21: [["+", 1, 1]]}
    batch = [(UPDATE, bump, "b-1"), (UPDATE, bump, "b-1"), (UPDATE, bump, u), (UPDATE, bump, ""),
             (SELECT, {0x10: SPACE, 0x12: 1, 0x20: [4]}, "b-2"), (UPDATE, bump, 77), (UPDATE, bump, None)]
    batch += [(UPDATE, bump, f"b-many-{i}") for i in range(100)]
    c.sock.sendall(b"".join(packet(rtype, 500 + i, body, **({} if tok is None else {"_12": tok}))
                            for i, (rtype, body, tok) in enumerate(batch)))
    replies = {}
    for _ in batch:
        h, b, _ = c.recv()
        replies[h[1] - 500] = (h, b)
    assert sorted(replies) == list(range(len(batch)))
    assert replies[0][0][STATUS] == EXECUTED
    assert replies[1][0][STATUS] in (JOINED, REPLAYED) and replies[1][1] == replies[0][1]
    assert replies[2][0][STATUS] == EXECUTED
    assert replies[3][0][0] == 0x8000 | 4001
    assert replies[4][0][0] == 0 and STATUS not in replies[4][0]
    assert replies[5][0][STATUS] == EXECUTED
    assert replies[6][0][0] == 0 and STATUS not in replies[6][0]
    assert all(replies[i][0][STATUS] == EXECUTED for i in range(7, len(batch)))
    # b-1 once, the UUID, 77, the plain one and the hundred.
    assert counter(c, 4) == 104
    assert incr(c, 4, "b-1")[0][STATUS] == REPLAYED
    assert incr(c, 4, u)[0][STATUS] == REPLAYED
    assert counter(c, 4) == 104


def test_tokens_are_scoped_per_user(ob):
    a, b = Raw(ob.host, ob.port), Raw(ob.host, ob.port)
    assert a.auth("alice", "a")[0][0] == 0 and b.auth("bob", "b")[0][0] == 0
    assert incr(a, 8, "shared")[0][STATUS] == EXECUTED
    # Bob's identical request under the same token is his own first attempt.
    assert incr(b, 8, "shared")[0][STATUS] == EXECUTED
    assert incr(b, 8, "shared")[0][STATUS] == REPLAYED
    assert counter(a, 8) == 2


def test_failure_releases_the_token(ob):
    c = admin(ob)
    h, b, _ = c.request(INSERT, {0x10: SPACE, 0x21: [9, 0]}, _12="t-fail")
    assert h[0] == 0x8000 | 3, b  # duplicate key: nothing stored
    h, b, _ = c.request(INSERT, {0x10: SPACE, 0x21: [9, 0]}, _12="t-fail")
    assert h[0] == 0x8000 | 3, "the retry ran again"
    assert c.request(DELETE, {0x10: SPACE, 0x20: [9]})[0][0] == 0
    h, b, _ = c.request(INSERT, {0x10: SPACE, 0x21: [9, 0]}, _12="t-fail")
    assert h[STATUS] == EXECUTED


def test_grants_are_checked_on_replay(ob):
    c = admin(ob)
    a = Raw(ob.host, ob.port)
    assert a.auth("alice", "a")[0][0] == 0
    assert incr(a, 10, "t-grant")[0][STATUS] == EXECUTED
    watch = "denied = {} box.session.on_access_denied(function(...) table.insert(denied, table.concat({...}, ' ')) end)"
    assert c.request(EVAL, {0x27: watch, 0x21: []})[0][0] == 0
    # Revoke alice's rights on the space: her replay is refused too, and the
    # on_access_denied triggers hear of it as of any refused request.
    assert c.request(DELETE, {0x10: 312, 0x20: [40, "space", SPACE]})[0][0] == 0
    h, b, _ = incr(a, 10, "t-grant")
    assert h[0] == 0x8000 | 42, b
    h, b, _ = c.request(EVAL, {0x27: "return denied", 0x21: []})
    assert b[0x30] == [["Write space counters"]], b


def test_grants_are_checked_on_first_execution(ob):
    c = admin(ob)
    assert c.request(DELETE, {0x10: 312, 0x20: [40, "space", SPACE]})[0][0] == 0
    a = Raw(ob.host, ob.port)
    assert a.auth("alice", "a")[0][0] == 0
    h, b, _ = incr(a, 7, "t-first")
    assert h[0] == 0x8000 | 42, b
    assert counter(c, 7) == 0
    h, b, _ = c.request(SELECT, {0x10: 500, 0x12: 100, 0x14: 2, 0x20: []})
    assert not [t for t in b[0x30] if t[1] == "t-first"], "a refused request leaves no record"
    # Granted again, the same token runs: the refusal did not keep it.
    assert c.request(INSERT, {0x10: 312, 0x21: [1, 40, "space", SPACE, 3]})[0][0] == 0
    assert incr(a, 7, "t-first")[0][STATUS] == EXECUTED
    assert incr(a, 7, "t-first")[0][STATUS] == REPLAYED
    assert counter(c, 7) == 1


@pytest.mark.parametrize("ob", [("--idempotency-mode", "off"), ("--idempotency-mode", "manual")], indirect=True)
def test_modes_refuse_tokened_writes(ob):
    c = admin(ob)
    h, b, _ = incr(c, 1, "t")
    assert h[0] == 0x8000 | 4003, b
    assert incr(c, 1)[0][0] == 0, "plain writes still work"
    assert counter(c, 1) == 1


def test_admin_reads_and_deletes_records(ob):
    c = admin(ob)
    assert incr(c, 2, "t-adm")[0][STATUS] == EXECUTED
    h, b, _ = c.request(SELECT, {0x10: 500, 0x12: 100, 0x14: 2, 0x20: []})
    assert h[0] == 0
    recs = [t for t in b[0x30] if t[1] == "t-adm"]
    assert len(recs) == 1 and recs[0][0] == 1  # (user admin, token)
    # Guest may not read it.
    g = Raw(ob.host, ob.port)
    assert g.request(SELECT, {0x10: 500, 0x12: 1, 0x20: []})[0][0] == 0x8000 | 42
    # Forgetting the token makes the next attempt run again.
    assert c.request(DELETE, {0x10: 500, 0x20: [1, "t-adm"]})[0][0] == 0
    assert incr(c, 2, "t-adm")[0][STATUS] == EXECUTED
    assert counter(c, 2) == 2


def records(c):
    h, b, _ = c.request(SELECT, {0x10: 500, 0x12: 1000000, 0x14: 2, 0x20: []})
    return b[0x30]


def increments(c, tokens):
    """One increment of counter 1 per token, each a new one (executed), apart in time."""
    for token in tokens:
        assert incr(c, 1, token)[0][STATUS] == EXECUTED
        time.sleep(0.01)


def records_once_at_most(c, n, timeout=10):
    """The records, once eviction has brought them down to `n` (or the timeout passed)."""
    deadline = time.time() + timeout
    while len(records(c)) > n and time.time() < deadline:
        time.sleep(0.1)
    return records(c)


@pytest.mark.parametrize("ob", [("--idempotency-lifetime", "1")], indirect=True)
def test_lifetime_eviction(ob):
    c = admin(ob)
    increments(c, ["t-life"])
    assert records_once_at_most(c, 0) == []
    assert incr(c, 1, "t-life")[0][STATUS] == EXECUTED, "forgotten: runs again"


@pytest.mark.parametrize("ob", [("--idempotency-max-count", "3")], indirect=True)
def test_count_eviction_removes_oldest(ob):
    c = admin(ob)
    increments(c, [f"t-{i}" for i in range(6)])
    assert sorted(t[1] for t in records_once_at_most(c, 3)) == ["t-3", "t-4", "t-5"]


@pytest.mark.parametrize("ob", [("--idempotency-max-count", "100")], indirect=True)
def test_count_limit_holds_while_tokens_come_faster_than_the_tick_evicts(ob):
    """The once-a-second tick evicts at most 1000 records; past the limit every batch evicts too."""
    c = admin(ob)
    for i in range(3000):
        assert incr(c, 1, f"fast-{i}")[0][STATUS] == EXECUTED
    deadline = time.time() + 0.8
    while len(records(c)) > 100 and time.time() < deadline:
        time.sleep(0.05)
    left = records(c)
    assert len(left) <= 100, f"{len(left)} records remembered, limit 100"
    # The newest stay, and the counter counts every increment once.
    assert "fast-2999" in [t[1] for t in left]
    assert counter(c, 1) == 3000


def pipelined_increments(c, prefix, n):
    """`n` increments of counter 1 sent at once, tokens `prefix`-0.., all executed."""
    c.sock.sendall(b"".join(packet(UPDATE, i + 1, {0x10: SPACE, 0x20: [1], 0x21: [["+", 1, 1]]}, _12=f"{prefix}-{i}")
                            for i in range(n)))
    for _ in range(n):
        assert c.recv()[0][0] == 0
    c.sync = n


@pytest.mark.parametrize("ob", [("--idempotency-lifetime", "1")], indirect=True)
def test_lifetime_holds_while_tokens_come_faster_than_the_tick_evicts(ob):
    """A record older than the lifetime is forgotten before an eviction step reaches
    it, and while the oldest has outlived it every batch evicts too (the tick alone
    evicts at most 1000 records a second)."""
    c = admin(ob)
    n = 4000
    pipelined_increments(c, "old", n)
    time.sleep(1.5)
    # The newest of them has outlived the lifetime though no tick could reach it:
    # its token is free again, so another request under it runs instead of a mismatch.
    h, b, _ = incr(c, 2, f"old-{n - 1}", by=5)
    assert h[0] == 0 and h[STATUS] == EXECUTED, b
    assert counter(c, 2) == 5
    assert incr(c, 2, f"old-{n - 1}", by=5)[0][STATUS] == REPLAYED, "the new record is remembered"
    for i in range(20):
        assert incr(c, 3, f"new-{i}")[0][STATUS] == EXECUTED
    left = sorted(t[1] for t in records(c))
    assert left == sorted([f"old-{n - 1}"] + [f"new-{i}" for i in range(20)]), f"{len(left)} records left"
    assert counter(c, 1) == n


@pytest.mark.parametrize("ob", [("--idempotency-lifetime", "1", "--wal-mode", "none")], indirect=True)
def test_a_backlog_of_outlived_records_goes_while_the_server_is_idle(ob):
    """Tokens that outlive their lifetime together leave no backlog behind: with no
    request coming, eviction goes on in steps. (With a WAL, each step's commit woke
    the TX thread for the next; without one (`wal_mode = 'none'`) eviction went a
    thousand records a second, at the tick, and 20,000 took 20 s.)"""
    c = admin(ob)
    n = 20000
    pipelined_increments(c, "idle", n)
    # Nothing is sent while they outlive the lifetime (1 s) and are evicted.
    time.sleep(3)
    h, b, _ = c.request(EVAL, {0x27: "return box.space._idempotency:len()", 0x21: []})
    assert b[0x30] == [0], f"{b[0x30]} of {n} outlived records left after 2 s idle"
    assert counter(c, 1) == n


@pytest.mark.parametrize("ob", [("--idempotency-max-size", "40")], indirect=True)
def test_size_eviction(ob):
    c = admin(ob)
    increments(c, [f"s-{i}" for i in range(6)])
    left = records_once_at_most(c, 4)
    assert 0 < len(left) < 6
    assert sum(len(t[4]) + len(t[1]) for t in left) <= 40
    assert "s-5" in [t[1] for t in left], "the newest stays"


def restart(ob, *extra, sig=signal.SIGKILL):
    """Stops the server (SIGKILL unless told: SIGTERM is a clean stop, with a final
    checkpoint) and starts it again on the same data and port."""
    ob.proc.send_signal(sig)
    ob.proc.wait()
    data = os.path.join(ob.workdir, "data")
    ob.proc = subprocess.Popen([ONCEBOX, "--listen", f"127.0.0.1:{ob.port}", "--data-dir", data,
                                "--log-level", "warn", *extra],
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    wait_port(ob.port, ob.proc)


@pytest.mark.parametrize("ob", [("--idempotency-max-count", "3")], indirect=True)
def test_eviction_keeps_age_order_across_restart_and_for_records_an_admin_added(ob):
    c = admin(ob)
    increments(c, ["r-0", "r-1"])
    restart(ob, "--idempotency-max-count", "3")
    c = admin(ob)
    # A record put in by hand, created at service time 0: older than any other.
    by_hand = [1, "by-hand", b"\0" * 32, 0, b"\x80", 7]
    assert c.request(INSERT, {0x10: 500, 0x21: by_hand})[0][0] == 0
    assert len(records(c)) == 3
    increments(c, ["r-2", "r-3"])
    assert sorted(t[1] for t in records_once_at_most(c, 3)) == ["r-1", "r-2", "r-3"]
    # What is left is still replayed, what went runs again.
    assert incr(c, 1, "r-3")[0][STATUS] == REPLAYED
    assert incr(c, 1, "r-0")[0][STATUS] == EXECUTED


@pytest.mark.parametrize("ob", [("--idempotency-max-count", "3")], indirect=True)
def test_evictions_stay_evicted_after_kill9(ob):
    """Evictions of the oldest records are logged by a records floor, not a delete
    each: replayed after a kill -9, the floor removes them again."""
    c = admin(ob)
    increments(c, [f"k-{i}" for i in range(8)])
    assert sorted(t[1] for t in records_once_at_most(c, 3)) == ["k-5", "k-6", "k-7"]
    # Restarted with room for all eight: what is back is what recovery left, not
    # what eviction trims again.
    restart(ob, "--idempotency-max-count", "100")
    c = admin(ob)
    assert sorted(t[1] for t in records(c)) == ["k-5", "k-6", "k-7"]
    assert incr(c, 1, "k-7")[0][STATUS] == REPLAYED
    assert incr(c, 1, "k-1")[0][STATUS] == EXECUTED, "an evicted token runs again"


@pytest.mark.parametrize("ob", [("--checkpoint-wal-threshold", "65536")], indirect=True)
def test_kill9_cycles_under_pipelined_shared_tokens_apply_each_write_once(ob):
    """Two pairs of connections send the same tokened writes (an UPDATE, and every
    fourth an EVAL of two updates), 16 pipelined, while the server is killed with
    SIGKILL and restarted, sometimes killed again during its recovery, with
    checkpoints between. Before each kill the clients drop their connections
    without reading the replies left (lost replies), and after it resend every
    unanswered write with its token. After each restart every answered write is
    there; at the end each counter holds every write exactly once."""
    import random

    seed = time.time_ns()
    rng = random.Random(seed)
    depth, extra = 16, ("--checkpoint-wal-threshold", "65536")
    progress, failures, unanswered = [0] * 4, [], []
    up, stop = threading.Event(), threading.Event()
    up.set()

    def batch(pair, start):
        out = b""
        for j in range(start, start + depth):
            if j % 4 == 3:
                body = {0x27: "local a = ... box.space.counters:update(a, {{'+', 2, 1}}) "
                              "box.space.counters:update(a + 1, {{'+', 2, 1}})", 0x21: [5 + 2 * pair]}
                out += packet(EVAL, j + 1, body, _12=f"e-{pair}-{j}")
            else:
                out += packet(UPDATE, j + 1, {0x10: SPACE, 0x20: [1 + pair], 0x21: [["+", 1, 1]]}, _12=f"u-{pair}-{j}")
        return out

    def client(t):
        i = 0
        while not stop.is_set():
            up.wait()
            try:
                c = admin(ob)
                c.sock.settimeout(10)
                while not stop.is_set():
                    c.sock.sendall(batch(t // 2, i))
                    for j in range(i, i + depth):
                        if not up.is_set():
                            raise EOFError("a kill is coming: the replies left are lost")
                        h, b, _ = c.recv()
                        if h[0] != 0:
                            failures.append(b)
                            return
                        i = progress[t] = j + 1
            except (EOFError, OSError, AssertionError):
                time.sleep(0.01)

    def expected(done):
        """(the UPDATE counter, each EVAL counter) after writes 0..done."""
        evals = sum(1 for j in range(done) if j % 4 == 3)
        return done - evals, evals

    def values():
        c = admin(ob)
        rows = {r[0]: r[1] for r in c.request(SELECT, {0x10: SPACE, 0x12: 100, 0x20: []})[1][0x30]}
        c.close()
        return rows

    threads = [threading.Thread(target=client, args=(t,), daemon=True) for t in range(4)]
    for th in threads:
        th.start()
    try:
        for cycle in range(5):
            time.sleep(rng.uniform(0.2, 0.6))
            up.clear()
            time.sleep(0.05)
            ob.proc.kill()
            ob.proc.wait()
            answered = list(progress)
            if rng.random() < 0.5:
                early = subprocess.Popen([ONCEBOX, "--listen", f"127.0.0.1:{ob.port}", "--data-dir",
                                          os.path.join(ob.workdir, "data"), "--log-level", "warn", *extra],
                                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
                time.sleep(rng.uniform(0, 0.1))
                early.kill()
                early.wait()
            restart(ob, *extra, sig=signal.SIGKILL)
            rows = values()
            for pair in (0, 1):
                low = expected(max(answered[2 * pair:2 * pair + 2]))
                got = (rows[1 + pair], rows[5 + 2 * pair])
                assert low[0] <= got[0] <= low[0] + depth and low[1] <= got[1] <= low[1] + depth, \
                    f"seed {seed} cycle {cycle} pair {pair}: answered {low}, stored {got}"
                assert rows[5 + 2 * pair] == rows[6 + 2 * pair], "an EVAL is one transaction"
                unanswered.append(got[0] - low[0] + got[1] - low[1])
            up.set()
        time.sleep(0.3)
    finally:
        stop.set()
        up.set()
        for th in threads:
            th.join(timeout=30)
    assert not failures, failures[:3]
    rows = values()
    for pair in (0, 1):
        done = max(progress[2 * pair:2 * pair + 2])
        assert (rows[1 + pair], rows[5 + 2 * pair], rows[6 + 2 * pair]) == (*expected(done), expected(done)[1]), \
            f"seed {seed}: writes 0..{done} of pair {pair} each applied once"
    assert sum(unanswered) > 0, "some writes were applied and their replies lost"


def test_a_record_deleted_after_a_clean_restart_stays_deleted_after_the_next(ob):
    """Commit groups are numbered on across clean stops (the log is empty then), so
    the records segment a later run writes replays after an earlier run's."""
    c = admin(ob)
    increments(c, [f"c-{i}" for i in range(5)])
    restart(ob, sig=signal.SIGTERM)
    c = admin(ob)
    user, token = next((t[0], t[1]) for t in records(c) if t[1] == "c-1")
    assert c.request(DELETE, {0x10: 500, 0x20: [user, token]})[0][0] == 0
    restart(ob, sig=signal.SIGTERM)
    c = admin(ob)
    assert sorted(t[1] for t in records(c)) == ["c-0", "c-2", "c-3", "c-4"]
    assert incr(c, 1, "c-1")[0][STATUS] == EXECUTED, "a deleted token runs again"
    assert incr(c, 1, "c-2")[0][STATUS] == REPLAYED


SEGMENTS_ARGS = ("--idempotency-max-count", "100", "--checkpoint-wal-threshold", "4096")


def segments(ob):
    return sorted(f for f in os.listdir(os.path.join(ob.workdir, "data", "records")) if f.endswith(".seg"))


def settled_segments(ob, at_most, timeout=10):
    """The segment files, once checkpoints have written one and brought them down to
    `at_most` (checkpoints run at the lowest CPU priority: on a loaded machine the
    first may come late)."""
    deadline = time.time() + timeout
    while not 0 < len(segments(ob)) <= at_most and time.time() < deadline:
        time.sleep(0.1)
    return segments(ob)


@pytest.mark.parametrize("ob", [SEGMENTS_ARGS], indirect=True)
def test_segments_of_evicted_records_are_dropped_and_the_rest_survive_kill9(ob):
    """Records are checkpointed to segment files; eviction lets checkpoints drop the old ones."""
    c = admin(ob)
    for i in range(3000):
        assert incr(c, 1, f"seg-{i}")[0][STATUS] == EXECUTED
    left = records_once_at_most(c, 100)
    assert len(left) <= 100
    # About a hundred checkpoints wrote a segment each; those of evicted records went.
    assert 0 < len(settled_segments(ob, 10)) <= 10, segments(ob)
    restart(ob, *SEGMENTS_ARGS)
    c = admin(ob)
    assert sorted(records(c)) == sorted(left), "the records left are exactly those after a kill -9"
    assert incr(c, 1, "seg-2999")[0][STATUS] == REPLAYED
    assert incr(c, 1, "seg-0")[0][STATUS] == EXECUTED, "an evicted token runs again"
    assert counter(c, 1) == 3001


def test_a_record_created_in_the_future_is_refused(ob):
    """The service clock resumes at the newest record after a restart: a hand-made
    record dated ahead would age every other one at once. It is refused."""
    c = admin(ob)
    assert incr(c, 1, "now")[0][STATUS] == EXECUTED
    now = records(c)[0][3]
    future = [1, "future", b"\0" * 16, now + 3_600_000, b"\x80", 7]
    h, b, _ = c.request(INSERT, {0x10: 500, 0x21: future})
    assert h[0] == 0x8000 | 1, b
    assert "after the clock" in b[0x31]
    assert [t[1] for t in records(c)] == ["now"], "nothing written"
    past = [1, "past", b"\0" * 16, now, b"\x80", 7]
    assert c.request(REPLACE, {0x10: 500, 0x21: past})[0][0] == 0
    restart(ob)
    c = admin(ob)
    assert incr(c, 1, "now")[0][STATUS] == REPLAYED, "still remembered after the restart"


def test_kill9_then_retry_is_replayed(ob):
    c = admin(ob)
    assert incr(c, 1, "t-crash")[0][STATUS] == EXECUTED
    restart(ob)
    c = admin(ob)
    h, _, _ = incr(c, 1, "t-crash")
    assert h[STATUS] == REPLAYED
    assert counter(c, 1) == 1


def test_race_of_one_token_over_many_connections():
    # Commits take 300 ms here, so every retry arrives while the first attempt is in flight.
    ob = start_oncebox(env=dict(os.environ, ONCEBOX_INJECT_WAL_DELAY_MS="300"))
    try:
        setup_schema(ob)
        race(ob)
    finally:
        ob.stop()


def test_a_write_the_disk_refused_is_not_counted_as_executed():
    ob = start_oncebox(env=dict(os.environ, ONCEBOX_INJECT_WAL_FAILURE_AFTER="24"))
    try:
        setup_schema(ob)
        c = admin(ob)
        executed = 0
        for key in range(1, 11):
            h, b, _ = incr(c, key, f"t-disk-{key}")
            if h[0] != 0:
                assert h[0] == 0x8000 | 40, b  # ER_WAL_IO
                break
            assert h[STATUS] == EXECUTED
            executed += 1
        else:
            pytest.fail("the injected disk failure never came")
        h, b, _ = c.request(8, {0x27: "return box.stat.idempotency().executed", 0x21: []})
        assert b[0x30] == [executed]
    finally:
        ob.stop()


def race(ob):
    conns = [admin(ob) for _ in range(20)]
    barrier = threading.Barrier(len(conns))
    results = []
    lock = threading.Lock()

    def worker(c, n):
        barrier.wait()
        out = b""
        for i in range(n):
            payload = msgpack.packb({0: UPDATE, 1: 1000 + i, 0x0C: "race"}) + \
                msgpack.packb({0x10: SPACE, 0x20: [1], 0x21: [["+", 1, 1]]})
            out += b"\xce" + struct.pack(">I", len(payload)) + payload
        c.sock.sendall(out)
        got = [c.recv() for _ in range(n)]
        with lock:
            results.extend(got)

    threads = [threading.Thread(target=worker, args=(c, 5)) for c in conns]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(results) == 100
    statuses = [h.get(STATUS) for h, _, _ in results]
    assert statuses.count(EXECUTED) == 1, statuses
    assert statuses.count(JOINED) == 99, statuses
    bodies = {raw[5 + 26:] for _, _, raw in results}
    assert len(bodies) == 1, "every sender got the same reply"
    assert counter(conns[0], 1) == 1


class CuttingProxy:
    """Forwards one request per connection; cuts some before the request and some after the reply."""

    def __init__(self, target_port):
        self.target = target_port
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(64)
        self.port = self.sock.getsockname()[1]
        self.count = 0
        self.cut_before = 0
        self.cut_after = 0
        self.stopped = False
        threading.Thread(target=self.serve, daemon=True).start()

    def serve(self):
        while not self.stopped:
            try:
                client, _ = self.sock.accept()
            except OSError:
                return
            self.count += 1
            threading.Thread(target=self.relay, args=(client, self.count), daemon=True).start()

    @staticmethod
    def read_exact(s, n):
        data = b""
        while len(data) < n:
            chunk = s.recv(n - len(data))
            if not chunk:
                raise EOFError
            data += chunk
        return data

    def relay(self, client, n):
        try:
            server = socket.create_connection(("127.0.0.1", self.target))
            client.sendall(self.read_exact(server, 128))
            for _ in range(2):  # AUTH, then the request under test
                prefix = self.read_exact(client, 5)
                packet = prefix + self.read_exact(client, struct.unpack(">I", prefix[1:])[0])
                last = _ == 1
                if last and n % 5 == 1:
                    self.cut_before += 1
                    return  # the request never reaches the server
                server.sendall(packet)
                rp = self.read_exact(server, 5)
                reply = rp + self.read_exact(server, struct.unpack(">I", rp[1:])[0])
                if last and n % 3 == 2:
                    self.cut_after += 1
                    return  # the server answered; the reply is lost
                client.sendall(reply)
        except (EOFError, OSError):
            pass
        finally:
            client.close()
            try:
                server.close()
            except (NameError, UnboundLocalError, OSError):
                pass

    def stop(self):
        self.stopped = True
        self.sock.close()


def run_increments(proxy_port, key, n, with_tokens):
    for i in range(n):
        token = f"inc-{key}-{i}" if with_tokens else None
        while True:
            try:
                c = Raw("127.0.0.1", proxy_port)
                c.auth("admin", ADMIN_PASSWORD)
                h, _, _ = incr(c, key, token)
                c.close()
                assert h[0] == 0
                break
            except (EOFError, OSError):
                continue  # timed out / cut: retry with the same token


def test_lost_replies_never_apply_an_increment_twice(ob):
    proxy = CuttingProxy(ob.port)
    try:
        run_increments(proxy.port, 1, 60, with_tokens=True)
        assert proxy.cut_before > 0 and proxy.cut_after > 0
        c = admin(ob)
        assert counter(c, 1) == 60, "with tokens: exactly once"
        # The same run without tokens applies some increments twice: the test can fail.
        run_increments(proxy.port, 2, 60, with_tokens=False)
        assert counter(c, 2) > 60, "without tokens, lost replies cause duplicates"
    finally:
        proxy.stop()


def test_python_connector_with_the_guide_helper(ob):
    """The user guide's helper for tarantool-python: a retried update is applied once."""
    import tarantool

    import idempotent_client as idem

    conn = tarantool.connect(ob.host, ob.port, user="admin", password=ADMIN_PASSWORD)
    first = idem.update(conn, "counters", 4, [("+", 1, 10)], token="payment-42")
    again = idem.update(conn, "counters", 4, [("+", 1, 10)], token="payment-42")
    assert first.data == again.data == [[4, 10]]
    assert conn.select("counters", 4).data == [[4, 10]]
    with pytest.raises(tarantool.error.DatabaseError) as e:
        idem.update(conn, "counters", 4, [("+", 1, 99)], token="payment-42")
    assert e.value.code == 4002
    conn.close()
