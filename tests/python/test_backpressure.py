"""A client that pipelines requests and does not read its replies: the server stops
reading from it once the connection owes 16 MiB of unsent replies
(MAX_UNSENT_REPLY_BYTES) and 256 requests are in TX (MAX_REQUESTS_IN_TX), so its
memory stays bounded, and every request it took is still answered, in order, once
the client reads."""
import socket
import threading
import time

import msgpack
import pytest

from conftest import ADMIN_PASSWORD
from iproto_raw import EVAL, SELECT, Raw, packet

TUPLE_BYTES = 2000


def rss_mib(inst):
    with open(f"/proc/{inst.proc.pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    raise AssertionError("no VmRSS")


def test_a_client_that_does_not_read_cannot_grow_the_server(oncebox):
    c = Raw(oncebox.host, oncebox.port)
    assert c.auth("admin", ADMIN_PASSWORD)[0][0] == 0
    h, b, _ = c.request(EVAL, {0x27: f"box.schema.space.create('t'):create_index('pk') "
                                     f"box.space.t:insert{{1, string.rep('x', {TUPLE_BYTES})}}", 0x21: []})
    assert h[0] == 0, b
    before = rss_mib(oncebox)
    packets = b"".join(packet(SELECT, 1000 + i, {0x10: 512, 0x20: [1], 0x12: 1}) for i in range(1000))
    one = len(packets) // 1000
    c.sock.setblocking(False)
    sent, started = 0, time.time()
    while time.time() - started < 3:
        try:
            sent += c.sock.send(packets[sent % len(packets):])
        except BlockingIOError:
            time.sleep(0.005)
    grown = rss_mib(oncebox) - before
    # Unbounded, this grew by about 2 KB per request taken (1.9 GiB in 3 s here).
    assert grown < 120, f"server grew by {grown:.0f} MiB for {sent // one} requests sent"
    # Finish the last partial packet (while reading: the server takes no more until
    # the client reads), then read every reply: nothing taken is lost.
    c.sock.setblocking(True)
    c.sock.settimeout(30)
    rest = sent % len(packets)
    finish = threading.Thread(target=c.sock.sendall, args=(packets[rest:rest + (one - rest % one) % one],))
    finish.start()
    expected = (sent + one - 1) // one
    buf, got, want_sync = b"", 0, 1000
    while got < expected:
        chunk = c.sock.recv(1 << 20)
        assert chunk, "the server closed the connection"
        buf += chunk
        at = 0
        while len(buf) - at >= 5 and len(buf) - at >= 5 + int.from_bytes(buf[at + 1:at + 5], "big"):
            n = int.from_bytes(buf[at + 1:at + 5], "big")
            header = msgpack.Unpacker(raw=False, strict_map_key=False)
            header.feed(buf[at + 5:at + 5 + 32])
            h = next(header)
            assert h[0] == 0 and h[1] == want_sync, h
            want_sync = 1000 + (want_sync - 1000 + 1) % 1000
            got += 1
            at += 5 + n
        buf = buf[at:]
    finish.join()
    c.sock.settimeout(0.5)
    with pytest.raises(socket.timeout):
        c.sock.recv(1)
